"""A trainer of the TrainingJob: fits y = x · w (w = 1, 2, ..., DIMENSION) by SGD. Each step
it asks the master for a shard, pulls the weights from every parameter server, computes the
gradient of the squared error on that shard's batch and pushes each server its slice. It
finds the master and the servers in SHOAL_MASTER_HOSTS and SHOAL_PSERVER_HOSTS (Shoal's
per-role endpoints), and after STEPS steps it ends with exit code 0: once every trainer
has, Shoal ends the job SUCCEEDED and stops the master and the servers.

Trainers are elastic (Shoal may start more while the job runs): how many train now is in
the membership file (SHOAL_MEMBERSHIP_FILE), which a trainer reads each step, as a data
loader resharding would; a trainer starts once it lists MIN_TRAINERS of them. RESULT_DIR
(optional): where each trainer writes what it did as JSON (`trainer-<index>.json`)."""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

from wire import Peer, endpoints, log

STEPS = max(1, int(os.environ.get("STEPS", "40")))
MIN_TRAINERS = max(1, int(os.environ.get("MIN_TRAINERS", "1")))
#: How long a trainer waits for the others of its minimum before it gives up (exit 1).
RENDEZVOUS_TIMEOUT = float(os.environ.get("RENDEZVOUS_TIMEOUT", "600"))
DIMENSION = int(os.environ.get("DIMENSION", "8"))
BATCH = 16


def trainers_now() -> int:
    path = os.environ.get("SHOAL_MEMBERSHIP_FILE")
    if not path or not Path(path).exists():
        return 0
    document = json.loads(Path(path).read_text())
    return len(document["endpoints"].get(os.environ["SHOAL_TASK_GROUP"], []))


def rendezvous() -> None:
    """Wait until the membership file lists MIN_TRAINERS trainers, as torchrun's rendezvous
    waits for its minimum: Shoal starts the minimum together (a gang), but the file that
    tells them so may come a little after the processes."""
    deadline = time.monotonic() + RENDEZVOUS_TIMEOUT
    while trainers_now() < MIN_TRAINERS:
        if time.monotonic() > deadline:
            raise SystemExit(f"rendezvous: fewer than {MIN_TRAINERS} trainers after "
                             f"{RENDEZVOUS_TIMEOUT:g} s")
        time.sleep(0.05)


def main() -> None:
    rendezvous()
    (master_at,) = endpoints("master")
    servers = endpoints("pserver")
    log(f"master {master_at}, pservers {servers}")
    master, peers = Peer(*master_at), [Peer(*at) for at in servers]
    loss, first, sizes = 0.0, None, list[int]()
    for _ in range(STEPS):
        shard = master.ask({"op": "shard"})["shard"]
        weights: dict[int, float] = {}
        for peer in peers:
            weights.update({int(k): v for k, v in peer.ask({"op": "pull"})["weights"].items()})
        rng = random.Random(shard)
        grads = [0.0] * DIMENSION
        loss = 0.0
        for _ in range(BATCH):
            x = [rng.uniform(-1, 1) for _ in range(DIMENSION)]
            error = sum(x[i] * weights[i] for i in range(DIMENSION)) - \
                sum(x[i] * (i + 1) for i in range(DIMENSION))
            loss += error * error / BATCH
            for i in range(DIMENSION):
                grads[i] += 2 * error * x[i] / BATCH
        for p, peer in enumerate(peers):
            peer.ask({"op": "push", "grads": {str(i): g for i, g in enumerate(grads)
                                              if i % len(peers) == p}})
        first = loss if first is None else first
        now = trainers_now()
        if not sizes or sizes[-1] != now:
            sizes.append(now)
    log(f"done: {STEPS} steps, loss {first:.4f} -> {loss:.6f}, trainers seen {sizes}")
    out = os.environ.get("RESULT_DIR")
    if out:
        result = {"steps": STEPS, "firstLoss": first, "loss": loss,
                  "pservers": [f"{h}:{p}" for h, p in servers],
                  "master": f"{master_at[0]}:{master_at[1]}", "trainersSeen": sizes,
                  "endpoint": os.environ["SHOAL_TASK_ENDPOINT"]}
        path = Path(out) / f"trainer-{os.environ['SHOAL_TASK_INDEX']}.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(result))
        tmp.replace(path)  # the whole result or none, for whoever waits on it


if __name__ == "__main__":
    main()
