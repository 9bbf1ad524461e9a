"""Benchmark: what job watches (`GET /api/v1/jobs?watch=true`) cost a real `shoal up`, with
none, one and many watchers open, in the same run.

One `shoal up` (local engine, SQLite; `local_server`) whose node a blocker job fills, so the
jobs submitted change only in the store: each round submits `--changes` jobs that wait
(stored, considered by every cycle, never started) and cancels each — at least two changes
per job — while W watchers follow the list, for W in 0, 1 and `--watchers`. A watcher is a
thread reading its stream with `http.client`; a round ends when every watcher has seen the
last job Cancelled. Per round: `server_cpu_s` (the `shoal up` process's CPU, user + system,
from the first submission to the last watcher's last event), `wall_s`, `events` (received,
all watchers together) and `server_cpu_ms_per_change`. The ratios that count, same run:
`many_vs_one_cpu` (many watchers' server CPU ÷ one watcher's: one shared reader renders each
change once, so it grows with the events sent, not with reads of the store) and
`one_vs_none_cpu`. Prints one JSON object.

    uv run python bench/watch.py [--changes 200] [--watchers 100] [--rounds 1]
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from local_server import CLUSTER, local_server, server_process

BLOCKER = """\
apiVersion: shoal/v1
kind: Job
metadata: {name: blocker}
spec:
  taskGroups:
    - name: main
      replicas: 1
      resources: {cpu: 8, memory: 1Gi}
      command: ["sleep", "3600"]
"""


def waiting_job(name: str) -> str:
    return BLOCKER.replace("blocker", name).replace('"sleep", "3600"', '"true"')


@dataclass
class Watcher:
    """One watch read on its own thread; `done` once it saw `last` Cancelled."""

    url: str
    token: str
    last: str
    events: int = 0
    listed: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        host, port = self.url.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=300)
        connection.request("GET", "/api/v1/jobs?watch=true",
                           headers={"Authorization": f"Bearer {self.token}"})
        response = connection.getresponse()
        marker = f'"name":"{self.last}"'.encode()
        try:
            while not self.done.is_set():
                line = response.readline()
                if not line:
                    return
                if line.startswith(b"event: "):
                    self.events += 1
                elif line.startswith(b"data: "):
                    if b'"name":"blocker"' in line:
                        self.listed.set()
                    if marker in line and b'"state":"Cancelled"' in line:
                        self.done.set()
        finally:
            connection.close()


def one_round(client: httpx.Client, url: str, token: str, data: Path, watchers: int,
              changes: int, prefix: str) -> dict[str, float]:
    last = f"{prefix}-{changes - 1}"
    readers = [Watcher(url, token, last) for _ in range(watchers)]
    for reader in readers:
        reader.start()
    for reader in readers:
        if not reader.listed.wait(120):
            raise SystemExit("a watcher got no listing in 120 s")
    server = server_process(data)
    cpu0, wall0 = sum(server.cpu_times()[:2]), time.perf_counter()
    for i in range(changes):
        name = f"{prefix}-{i}"
        client.post("/api/v1/jobs", content=waiting_job(name),
                    headers={"Content-Type": "application/yaml"}).raise_for_status()
        client.post(f"/api/v1/jobs/{name}/cancel").raise_for_status()
    if watchers == 0:  # nothing to wait for: the last cancel has been answered
        client.get(f"/api/v1/jobs/{last}").raise_for_status()
    for reader in readers:
        if not reader.done.wait(300):
            raise SystemExit(f"a watcher did not see {last} cancelled in 300 s")
    wall = time.perf_counter() - wall0
    cpu = sum(server.cpu_times()[:2]) - cpu0
    return {"watchers": watchers, "server_cpu_s": round(cpu, 3), "wall_s": round(wall, 3),
            "events": sum(r.events for r in readers),
            "server_cpu_ms_per_change": round(1000 * cpu / (2 * changes), 3)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=200, help="jobs submitted and "
                        "cancelled per round")
    parser.add_argument("--watchers", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args(argv)
    rounds: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "cluster.yaml").write_text(CLUSTER)
        with local_server(work, "--cluster", str(work / "cluster.yaml"), "--interval", "0.5",
                          "--max-follows-per-user", str(args.watchers + 1)) as client:
            client.post("/api/v1/jobs", content=BLOCKER,
                        headers={"Content-Type": "application/yaml"}).raise_for_status()
            token = (work / "data" / "admin.token").read_text().strip()
            url = str(client.base_url).rstrip("/")
            for r in range(args.rounds):  # interleaved: the machine's noise falls alike
                for watchers in (0, 1, args.watchers):
                    rounds.append(one_round(client, url, token, work / "data", watchers,
                                            args.changes, f"r{r}-w{watchers}"))
    def cpu(watchers: int) -> float:
        return sum(r["server_cpu_s"] for r in rounds if r["watchers"] == watchers)

    print(json.dumps({
        "benchmark": "watch", "changes": args.changes, "watchers": args.watchers,
        "rounds": rounds,
        "one_vs_none_cpu": round(cpu(1) / cpu(0), 3) if cpu(0) else None,
        "many_vs_one_cpu": round(cpu(args.watchers) / cpu(1), 3) if cpu(1) else None,
    }, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
