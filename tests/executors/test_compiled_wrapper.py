"""The compiled task wrapper (`shoal.executors.native`, `wrapper.c`): the launcher spawns
it where this machine can build it, it records what the Python wrapper records, field for
field, and the launcher forks the Python wrapper where it cannot be built.

The executor contract and isolation tests run on both wrappers (`local` and
`local-python`); these check what only the choice between them says."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import psutil
import pytest
from executor_support import PY, spec, wait_exit, wait_until

from shoal.executors import native
from shoal.executors.local import LocalExecutor
from shoal.executors.task import TaskLaunch
from shoal.executors.wrapper import LOG_START_FILE, PID_FILE, STATUS_FILE

DEADLINE = 30.0
COMPILER = any(shutil.which(name) for name in native.COMPILERS)
needs_compiler = pytest.mark.skipif(not COMPILER, reason="no C compiler on this machine: "
                                    "test_a_failed_build_forks_the_python_wrapper covers it")


def _launch(tmp_path: Path, name: str, launch: TaskLaunch, *, compiled: bool
            ) -> tuple[dict[str, object], str, str, dict[str, object]]:
    """Run `launch` to its end on a fresh executor; its status record (without the
    time), stdout, stderr and log-start record."""
    executor = LocalExecutor(tmp_path / name, base_env={"PATH": "/usr/bin:/bin"},
                             compiled=compiled)
    try:
        task = executor.launch(launch)
        wait_exit(executor, task, DEADLINE)
        status = json.loads(task.status_path.read_text())
        assert isinstance(status.pop("finished_at"), float)
        log_start = json.loads((task.status_path.parent / LOG_START_FILE).read_text())
        return (status, task.stdout_path.read_text(), task.stderr_path.read_text(),
                log_start)
    finally:
        executor.close()


CASES = {
    "exit code": (PY, "-c", "import sys; print('out'); print('err', file=sys.stderr); "
                            "sys.exit(3)"),
    "signal": (PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"),
    "environment": (PY, "-c", "import os; print(sorted(k for k in os.environ "
                              "if k.startswith('SHOAL_') or k == 'PATH'))"),
    "found on the task's PATH": ("env",),
    "not found": ("no-such-command-anywhere",),
    "not executable": ("/etc/hostname",),
    "broken pipe": ("sh", "-c", "yes | head -c 1 >/dev/null; echo ${PIPESTATUS:-ok}"),
}


@needs_compiler
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_compiled_wrapper_records_what_the_python_one_does(tmp_path: Path,
                                                               case: str) -> None:
    launch = TaskLaunch(job="same", group="g", index=0, gpus=(), attempt=0,
                        command=CASES[case], world_size=1, rank=0,
                        master_addr="127.0.0.1", master_port=29500)
    compiled = _launch(tmp_path, "compiled", launch, compiled=True)
    forked = _launch(tmp_path, "forked", launch, compiled=False)
    if case == "found on the task's PATH":  # `env` prints the environment: its paths differ
        assert compiled[1].count("\n") == forked[1].count("\n") > 0
        compiled, forked = compiled[:1], forked[:1]
    assert compiled == forked


@needs_compiler
def test_a_missing_working_directory_is_recorded_as_the_python_wrapper_does(
        tmp_path: Path) -> None:
    launch = spec("pass", job="nowhere", working_dir=str(tmp_path / "missing"))
    statuses = []
    for compiled in (True, False):
        executor = LocalExecutor(tmp_path / f"shoal-{compiled}", compiled=compiled)
        try:
            task = executor.launch(launch)
            status = wait_exit(executor, task, DEADLINE)
            statuses.append((status.phase, status.exit_code, status.detail))
        finally:
            executor.close()
    assert statuses[0] == statuses[1]
    assert statuses[0][1] == 127


@needs_compiler
def test_the_launcher_spawns_the_compiled_wrapper(executor: LocalExecutor,
                                                  tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    task = executor.launch(spec(f"import pathlib, time\nwhile not pathlib.Path("
                                f"{str(gate)!r}).exists(): time.sleep(0.02)", job="spawned"))
    launcher = executor.launcher
    try:
        assert launcher is not None and launcher.native is not None
        wrapper = psutil.Process(task.pid)
        assert wrapper.exe() == str(launcher.native)
        assert wrapper.ppid() == launcher.pid
        # Its own session, and none of the task's environment (it may run as root).
        assert os.getsid(task.pid) == task.pid
        assert wrapper.environ() == {}
        pid_file = task.status_path.parent / PID_FILE  # the wrapper's first write
        wait_until(pid_file.exists, DEADLINE)
        record = json.loads(pid_file.read_text())
        assert (record["pid"], record["start_time"]) == (task.pid, task.pid_start_time)
        assert record["start_time"] == wrapper.create_time()
        # The binary is the server's only.
        assert launcher.native.parent.stat().st_mode & 0o077 == 0
    finally:
        gate.touch()
    assert wait_exit(executor, task, DEADLINE).exit_code == 0
    assert (task.status_path.parent / STATUS_FILE).exists()


def test_a_failed_build_forks_the_python_wrapper(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A "compiler" that fails: the wrapper is not built, and launches go on as before.
    monkeypatch.setattr(native, "COMPILERS", ("false",))
    monkeypatch.setattr(native, "_built", {})
    assert native.compiled_wrapper() is None
    executor = LocalExecutor(tmp_path / "shoal")
    try:
        task = executor.launch(spec("import sys; sys.exit(5)", job="fallback"))
        launcher = executor.launcher
        assert launcher is not None and launcher.native is None
        assert wait_exit(executor, task, DEADLINE).exit_code == 5
        wait_until(lambda: not psutil.pid_exists(task.pid), DEADLINE)
    finally:
        executor.close()


def test_shoal_wrapper_python_asks_for_the_python_wrapper(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(native.CHOICE_ENV, "python")
    assert native.compiled_wrapper() is None


@needs_compiler
def test_a_built_wrapper_that_does_not_run_here_is_not_used(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # As on a temporary directory mounted noexec: built, tried, and left unused.
    monkeypatch.setattr(native, "USAGE_EXIT", 99)
    monkeypatch.setattr(native, "_built", {})
    assert native.compiled_wrapper() is None


@needs_compiler
def test_a_wrapper_binary_gone_from_under_the_launcher_falls_back_to_python(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built = native.compiled_wrapper()
    assert built is not None
    copy = tmp_path / "bin" / "wrapper"
    copy.parent.mkdir()
    shutil.copy2(built, copy)
    monkeypatch.setattr("shoal.executors.launcher.compiled_wrapper", lambda: copy)
    executor = LocalExecutor(tmp_path / "shoal")
    gate = tmp_path / "gate"
    wait = (f"import pathlib, time\nwhile not pathlib.Path({str(gate)!r}).exists(): "
            f"time.sleep(0.02)")
    try:
        first = executor.launch(spec(wait, job="spawned"))
        assert psutil.Process(first.pid).exe() == str(copy)
        copy.unlink()
        second = executor.launch(spec(wait, job="forked"))
        launcher = executor.launcher
        assert launcher is not None and launcher.starts == 1
        assert psutil.Process(second.pid).exe() == psutil.Process(launcher.pid).exe()
        gate.touch()
        assert [wait_exit(executor, t, DEADLINE).exit_code for t in (first, second)] == [0, 0]
    finally:
        gate.touch()
        executor.close()


@needs_compiler
def test_the_wrapper_is_built_when_the_executor_is_made_not_at_its_first_launch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built: dict[str, Path | None] = {}
    monkeypatch.setattr(native, "_built", built)
    executor = LocalExecutor(tmp_path / "shoal")
    try:
        wait_until(lambda: bool(built) and None not in built.values(), DEADLINE)
        assert executor.launcher is not None and executor.launcher.pid is None
    finally:
        executor.close()


@needs_compiler
def test_a_build_removes_the_directories_of_builders_that_died(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import tempfile

    dead = subprocess.Popen(["true"])  # its pid names a process that is gone
    dead.wait()
    orphan = Path(tempfile.mkdtemp(prefix=f"{native.PREFIX}{dead.pid}-"))
    alive = Path(tempfile.mkdtemp(prefix=f"{native.PREFIX}{os.getpid()}-"))
    try:
        monkeypatch.setattr(native, "_built", {})
        assert native.compiled_wrapper() is not None
        assert not orphan.exists()
        assert alive.exists()  # this process lives: its directory stays
    finally:
        shutil.rmtree(orphan, ignore_errors=True)
        shutil.rmtree(alive, ignore_errors=True)


def _interpreted(binary: Path) -> bool:
    """Whether an ELF64 file names a dynamic loader (a PT_INTERP program header)."""
    import struct

    data = binary.read_bytes()
    phoff, = struct.unpack_from("<Q", data, 0x20)
    size, count = struct.unpack_from("<HH", data, 0x36)
    return any(struct.unpack_from("<I", data, phoff + i * size)[0] == 3  # PT_INTERP
               for i in range(count))


@needs_compiler
def test_the_wrapper_is_linked_statically_where_the_c_library_archive_is(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    compiler = next(found for name in native.COMPILERS if (found := shutil.which(name)))
    source = tmp_path / "empty.c"
    source.write_text("int main(void) { return 0; }\n")
    static_links = subprocess.run(
        [compiler, *native.STATIC, "-o", str(tmp_path / "empty"), str(source)],
        capture_output=True, check=False).returncode == 0
    monkeypatch.setattr(native, "_built", {})
    built = native.compiled_wrapper()
    assert built is not None and _interpreted(built) is not static_links


@needs_compiler
def test_a_wrapper_that_cannot_link_statically_is_linked_as_the_machine_links(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # As on a machine without libc.a: the static build fails, the default one is used.
    monkeypatch.setattr(native, "STATIC", ("-Wl,--no-such-option",))
    monkeypatch.setattr(native, "_built", {})
    built = native.compiled_wrapper()
    assert built is not None and _interpreted(built)
    executor = LocalExecutor(tmp_path / "shoal")
    try:
        task = executor.launch(spec("import sys; sys.exit(3)", job="dynamic"))
        assert wait_exit(executor, task, DEADLINE).exit_code == 3
        launcher = executor.launcher
        assert launcher is not None and launcher.native == built
    finally:
        executor.close()
