"""Runs `shoal ARGS…` in a fresh interpreter, as the console script does, and reads back
every module it loaded: how the CLI tests check that a client verb stays light."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

#: What a client command must not load: the server (FastAPI, uvicorn), the store
#: (SQLAlchemy, Alembic), the control plane and its executors, the scheduler, the simulator,
#: the spec's validation and the scenario runner; nor pydantic, through which typer would
#: coerce every parameter (`shoal.cli.coercion` converts the values a command line holds).
HEAVY = ("sqlalchemy", "alembic", "fastapi", "uvicorn", "starlette", "psutil", "pydantic",
         "pydantic_core", "shoal.server", "shoal.store", "shoal.control", "shoal.executors",
         "shoal.scheduler", "shoal.sim", "shoal.spec", "shoal.core", "shoal.scenario")

#: Runs `shoal ARGS…` as the console script does, and at exit (after typer's SystemExit)
#: writes the names of every module loaded to the file named first.
RUNNER = """\
import atexit, json, sys
report = sys.argv.pop(1)
atexit.register(lambda: open(report, "w").write(json.dumps(sorted(sys.modules))))
sys.argv[0] = "shoal"
from shoal.cli.main import main
main()
"""


def heavy_in(modules: list[str], heavy: Sequence[str] = HEAVY) -> list[str]:
    """The modules of `modules` that are, or are inside, one of `heavy`."""
    return [m for m in modules if any(m == h or m.startswith(h + ".") for h in heavy)]


def run_shoal(tmp_path: Path, *args: str, server: str | None = None, token: str | None = None,
              ok: bool = True) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """`shoal ARGS…` in `tmp_path` (against `server` with `token` where given): what it
    printed, and the modules it loaded. It must exit 0 if `ok`, and not otherwise."""
    report = tmp_path / "modules.json"
    report.unlink(missing_ok=True)
    env = {**os.environ, "SHOAL_CONFIG": str(tmp_path / "no-config.yaml")}
    if server is not None:
        env["SHOAL_SERVER"] = server
    if token is not None:
        env["SHOAL_TOKEN"] = token
    done = subprocess.run([sys.executable, "-c", RUNNER, str(report), *args], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          check=False)
    assert (done.returncode == 0) == ok, (done.stdout, done.stderr)
    return done, json.loads(report.read_text())
