"""The compiled task wrapper (`wrapper.c`): built with this machine's C compiler once per
server process, for the local executor's launcher to spawn per task instead of forking its
Python interpreter.

The wrapper's guarantees are stated in `wrapper.py`; `wrapper.c` keeps them field for field
(its header says how), and the executor's tests run on whichever of the two the machine
gives (`SHOAL_WRAPPER=python` asks for the Python one). Where no C compiler is found, or it
fails, the launcher forks the Python wrapper as before: the compiled one is an economy
(~8 ms of CPU per task on a loaded 2-core machine, against ~3), never a requirement.

The binary lives in a private directory of this process (0700, removed at exit; a build
finds and removes those of its user's processes that died without their exit handlers,
`shoal-wrapper-PID-…`): it runs as the server's user, so nothing another user can write may
stand in for it. Wrappers already running keep their image when it is removed.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

log = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("wrapper.c")
#: Set to "python" to have launchers fork the Python wrapper even where a compiler is.
CHOICE_ENV = "SHOAL_WRAPPER"
#: The build directories' names: PREFIX, the building process's pid, a random part.
PREFIX = "shoal-wrapper-"
COMPILERS = ("cc", "gcc", "clang")
#: How the wrapper is linked first: statically (`libc.a`), falling back to the default.
STATIC = ("-static",)
#: How long a compiler may take (a loaded machine builds the ~500 lines in about a second).
COMPILE_TIMEOUT = 120.0
#: What the wrapper exits with when its arguments are not a task's.
USAGE_EXIT = 2

_lock = threading.Lock()
_built: dict[str, Path | None] = {}


def compiled_wrapper() -> Path | None:
    """The compiled wrapper's path, built on the first call of this process; None where
    it cannot be (no compiler, a failed build) or `SHOAL_WRAPPER=python` says not to."""
    if os.environ.get(CHOICE_ENV, "").strip().lower() == "python":
        return None
    source = SOURCE.read_bytes()
    digest = hashlib.sha256(source).hexdigest()[:16]
    with _lock:
        if digest not in _built:
            _built[digest] = _build(digest)
        return _built[digest]


def build_soon() -> None:
    """Start building the compiled wrapper on a thread of its own, unless it is built (or
    known not to build): an executor calls this when it is made, so that its first launch
    does not wait for a compiler (~1 s on a loaded machine)."""
    if os.environ.get(CHOICE_ENV, "").strip().lower() == "python" or _built:
        return
    threading.Thread(target=compiled_wrapper, name="shoal-wrapper-build", daemon=True).start()


def _build(digest: str) -> Path | None:
    compiler = next((found for name in COMPILERS if (found := shutil.which(name))), None)
    if compiler is None:
        log.info("no C compiler found: tasks' wrappers are forked Python (slower launches)")
        return None
    _remove_orphans()
    directory = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    target = directory / f"wrapper-{digest}"
    failed = ""
    # Linked statically where the C library's archive is installed: no dynamic loader runs
    # per task (~0.55 ms of CPU per exec here against ~0.3); else as the machine links.
    for linking in (STATIC, ()):
        target.unlink(missing_ok=True)
        try:
            built = subprocess.run(
                [compiler, "-O2", "-std=gnu11", *linking, "-o", str(target), str(SOURCE)],
                capture_output=True, text=True, timeout=COMPILE_TIMEOUT, check=False,
                stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            log.warning("cannot build the compiled task wrapper (%s): tasks' wrappers are "
                        "forked Python", exc)
            return None
        if built.returncode == 0 and os.access(target, os.X_OK) and _runs(target):
            return target
        failed = (f"{compiler} exited {built.returncode}: {built.stderr.strip()[-500:]}"
                  if built.returncode != 0 else "it does not run here")
    log.warning("cannot build the compiled task wrapper (%s): tasks' wrappers are forked "
                "Python", failed)
    return None


def _remove_orphans() -> None:
    """Remove the build directories of this user's processes that are gone (a server
    killed by SIGKILL runs no exit handler): each is named after its process's pid."""
    for directory in Path(tempfile.gettempdir()).glob(f"{PREFIX}*-*"):
        pid = directory.name.removeprefix(PREFIX).split("-", 1)[0]
        try:
            if not pid.isdigit() or directory.stat().st_uid != os.getuid():
                continue
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(directory, ignore_errors=True)
        except OSError:  # alive as another user, or unreadable: not ours to judge
            continue


def _runs(target: Path) -> bool:
    """Whether the built wrapper runs here (a temporary directory mounted noexec would
    build it and refuse to run it): without arguments it says how to use it, exit 2."""
    try:
        tried = subprocess.run([str(target)], capture_output=True, timeout=COMPILE_TIMEOUT,
                               check=False, stdin=subprocess.DEVNULL, env={})
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("the compiled task wrapper does not run here (%s): tasks' wrappers "
                    "are forked Python", exc)
        return False
    if tried.returncode != USAGE_EXIT:
        log.warning("the compiled task wrapper does not run here (exit %d): tasks' "
                    "wrappers are forked Python", tried.returncode)
        return False
    return True
