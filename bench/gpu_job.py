"""Run the example jobs through a real `shoal up` on this machine and report what happened.

Meant for a machine with an NVIDIA GPU and PyTorch (not for CI, which has neither): it starts
`shoal up` with its default node inventory (this machine, GPUs found by `nvidia-smi`), submits
`examples/jobs/gpu-train.yaml` and `examples/jobs/gloo-gang.yaml`, waits for them to end, and
prints one JSON object: the node as Shoal saw it, and per job its end state, each task's
GPUs and exit, the event history and the task logs.

    python bench/gpu_job.py [--timeout 300]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))  # as a script or via runpy
from local_server import local_server

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "jobs"
JOBS = ("gpu-train", "gloo-gang")
TERMINAL = {"Succeeded", "Failed", "Cancelled"}


def wait(client: httpx.Client, name: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job: dict[str, Any] = client.get(f"/api/v1/jobs/{name}").json()
        if job["status"]["state"] in TERMINAL:
            return job
        time.sleep(0.5)
    raise SystemExit(f"job {name} did not end within {timeout} s")


def report(client: httpx.Client, job: dict[str, Any]) -> dict[str, Any]:
    name = job["metadata"]["name"]
    tasks = client.get(f"/api/v1/jobs/{name}/tasks", params={"limit": 1000}).json()["items"]
    logs = {}
    for task in tasks:
        label = f"{task['group']}-{task['index']}"
        for stream in ("stdout", "stderr"):
            text = client.get(f"/api/v1/jobs/{name}/logs",
                              params={"task": label, "stream": stream}).text
            if text:
                logs[f"{label}.{stream}"] = text[-2000:]
    events = job["status"]["events"]
    return {"state": job["status"]["state"],
            "tasks": [{k: t.get(k) for k in ("group", "index", "state", "node", "gpus",
                                              "exitCode")} for t in tasks],
            "seconds_submit_to_end": round(events[-1]["time"] - events[0]["time"], 2),
            "events": [f"{e['kind']} {e.get('task') or ''} {e.get('target') or ''}: {e['cause']}"
                       for e in events],
            "logs": logs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="shoal-gpu-", ignore_cleanup_errors=True) as tmp, \
            local_server(Path(tmp), "--interval", "1", "--grace-period", "5",
                         # The examples' `python` (with torch) is the server's own.
                         "--insecure-same-user") as client:
        out: dict[str, Any] = {"nodes": client.get("/api/v1/nodes").json()}
        for name in JOBS:
            answer = client.post("/api/v1/jobs", content=(EXAMPLES / f"{name}.yaml").read_text(),
                                 headers={"Content-Type": "application/yaml"})
            if answer.status_code != 201:
                out[name] = {"refused": answer.status_code, "body": answer.json()}
        for name in JOBS:
            if name not in out:
                out[name] = report(client, wait(client, name, args.timeout))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
