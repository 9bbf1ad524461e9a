"""An elastic data-parallel training script for torchrun (seed 001's example, on CPU/gloo).

Run by `examples/elastic/torchrun.yaml`: every Shoal task is one torchrun agent, and
torchrun's c10d rendezvous forms the world from the agents alive. When Shoal grows the job,
a new agent joins and every agent restarts its worker into a larger world; when Shoal shrinks
it, the stopped agents leave and the others restart into a smaller one. Each start resumes
from the last checkpoint, so training goes on across every change and does exactly
`STEPS` optimizer steps in all.

It fits `y = x · w` for a known `w` by SGD on synthetic batches; each worker draws its own
batches and the gradients are averaged over the world. It records every step (the world
size it ran in, the loss) in `progress.jsonl` beside the checkpoint, and at the end checks
that it learned `w`.

Environment: CHECKPOINT_DIR (where the checkpoint and progress go; every task must see the
same directory: one machine's disk under the local executor, a shared file system across
machines), STEPS (default 600), STEP_SECONDS (a pause per step that stands for real work,
default 0.05), PAUSE_FILE (optional: while that file exists, every worker waits before its
next step — an operator holds the training without losing its place; the end-to-end test
holds it so that it does not run out of steps while Shoal resizes it).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

DIMENSION = 8
TRUE_W = torch.arange(1, DIMENSION + 1, dtype=torch.float32)


def main() -> int:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    directory = Path(os.environ.get("CHECKPOINT_DIR", "/tmp/shoal-elastic-example"))
    directory.mkdir(parents=True, exist_ok=True)
    checkpoint = directory / "checkpoint.pt"
    steps = int(os.environ.get("STEPS", "600"))
    pause = float(os.environ.get("STEP_SECONDS", "0.05"))
    hold = os.environ.get("PAUSE_FILE")

    torch.manual_seed(0)
    model = torch.nn.Linear(DIMENSION, 1, bias=False)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02)
    step = 0
    if checkpoint.exists():
        state = torch.load(checkpoint)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        step = state["step"]
    for parameter in model.parameters():  # everyone starts from rank 0's copy
        dist.broadcast(parameter.data, 0)
    batches = torch.Generator().manual_seed(1000 * world + rank + step)
    print(f"rank {rank} of {world}: resuming at step {step}", flush=True)

    while step < steps:
        while hold and os.path.exists(hold):
            time.sleep(0.1)
        x = torch.randn(32, DIMENSION, generator=batches)
        loss = ((model(x).squeeze(1) - x @ TRUE_W) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        for parameter in model.parameters():
            assert parameter.grad is not None
            dist.all_reduce(parameter.grad)
            parameter.grad /= world
        optimizer.step()
        step += 1
        if rank == 0:
            temporary = checkpoint.with_suffix(".tmp")
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                        "step": step}, temporary)
            os.replace(temporary, checkpoint)
            with open(directory / "progress.jsonl", "a") as progress:
                progress.write(json.dumps({"step": step, "world": world,
                                           "loss": loss.item()}) + "\n")
        time.sleep(pause)

    error = (model.weight.detach().squeeze(0) - TRUE_W).abs().max().item()
    dist.destroy_process_group()
    print(f"rank {rank}: done, largest weight error {error:.2e}", flush=True)
    return 0 if error < 1e-3 else 1


if __name__ == "__main__":
    sys.exit(main())
