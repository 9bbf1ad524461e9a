"""A parameter server of the TrainingJob: holds its slice of the model's weights (index i
belongs to pserver i mod P), answers `pull` with them and applies each `push`ed gradient
(plain SGD). Runs until Shoal stops it (SIGTERM) once the trainers have finished."""

from __future__ import annotations

import os
import threading

from wire import serve_until_stopped

LEARNING_RATE = float(os.environ.get("LEARNING_RATE", "0.2"))


def main() -> None:
    index = int(os.environ["SHOAL_TASK_INDEX"])
    count = int(os.environ["PSERVERS"])
    dimension = int(os.environ.get("DIMENSION", "8"))
    weights = {i: 0.0 for i in range(dimension) if i % count == index}
    lock, pushes = threading.Lock(), [0]

    def handle(request: dict[str, object]) -> dict[str, object]:
        with lock:
            if request["op"] == "push":
                grads = request["grads"]
                assert isinstance(grads, dict)
                for key, grad in grads.items():
                    weights[int(key)] -= LEARNING_RATE * float(grad)
                pushes[0] += 1
            return {"weights": {str(i): w for i, w in weights.items()}}

    serve_until_stopped(handle, f"holding weights {sorted(weights)}",
                        lambda: f"{pushes[0]} pushes; weights {weights}")

if __name__ == "__main__":
    main()
