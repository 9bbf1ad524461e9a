"""A parameter server of the TrainingJob: holds its slice of the model's weights (index i
belongs to pserver i mod P), answers `pull` with them and applies each `push`ed gradient
(plain SGD). Runs until Shoal stops it (SIGTERM) once the trainers have finished."""

from __future__ import annotations

import os
import signal
import sys
import threading

from wire import log, serve

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

    server = serve(handle)

    def stop(signum: int, _frame: object) -> None:
        log(f"stopped by signal {signum} after {pushes[0]} pushes; weights {weights}")
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    log(f"holding weights {sorted(weights)} on port {os.environ['SHOAL_TASK_PORT']}")
    server.serve_forever()


if __name__ == "__main__":
    main()
