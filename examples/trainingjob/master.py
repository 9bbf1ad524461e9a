"""The TrainingJob's master: hands out data shards to trainers, round robin, so that no two
trainers train on the same shard at once. Runs until Shoal stops it (SIGTERM) once the
trainers have finished; it never ends on its own (the job's `TaskCompleted: CompleteJob`
policy on the trainer group ends the job)."""

from __future__ import annotations

import os
import threading

from wire import serve_until_stopped

SHARDS = int(os.environ.get("SHARDS", "16"))


def main() -> None:
    lock, handed = threading.Lock(), [0]

    def handle(request: dict[str, object]) -> dict[str, object]:
        with lock:
            shard = handed[0] % SHARDS
            handed[0] += 1
        return {"shard": shard}

    serve_until_stopped(handle, f"serving {SHARDS} shards",
                        lambda: f"handing out {handed[0]} shards")

if __name__ == "__main__":
    main()
