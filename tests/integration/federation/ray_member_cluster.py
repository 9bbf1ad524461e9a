"""A real Ray member cluster for the `ray` adapter's tests: a head started by `ray start
--head --block` with its dashboard (the Jobs API), every port its own and a temp dir of its
own, so it collides neither with tests/ray_support.py's clusters nor with another head; it is
stopped by its own process id (`ray stop` would stop every Ray on the machine).

The head declares one fake GPU, so a copy asking for a GPU waits while another holds it.
Ray 2.60 guards its dashboard with a token (`RAY_AUTH_MODE=token`): the head gets one of its
own (`RAY_AUTH_TOKEN`), never the machine's `~/.ray/auth_token`, and the adapter sends it
as a bearer token.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

#: How long the head may take to serve jobs (a safety net; ~7 s on an idle machine).
READY_TIMEOUT_S = 120.0
START_ATTEMPTS = 3
PORT_FLAGS = ("--port", "--dashboard-port", "--dashboard-agent-listen-port",
              "--dashboard-agent-grpc-port", "--runtime-env-agent-port", "--node-manager-port",
              "--object-manager-port", "--metrics-export-port", "--ray-client-server-port")


@dataclass(frozen=True)
class RayMemberCluster:
    uri: str
    temp_dir: Path
    token: str = field(repr=False)


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()


def free_port() -> int:
    return _free_ports(1)[0]


@contextmanager
def ray_member_cluster() -> Iterator[RayMemberCluster]:
    # Short: Ray's Unix socket paths live under it and must stay under 108 bytes.
    temp_dir = Path(tempfile.mkdtemp(prefix="rmc-", dir="/tmp"))
    token = secrets.token_hex(16)
    head: subprocess.Popen[bytes] | None = None
    try:
        serving = False
        for _attempt in range(START_ATTEMPTS):
            head, uri = _start_head(temp_dir, token)
            serving = _wait_serving(uri, token, head)
            # Start again only a head that exited; one that hangs would hang again.
            if serving or head.poll() is None:
                break
        if not serving:
            raise AssertionError("the Ray head did not serve its Jobs API: "
                                 f"{(temp_dir / 'head.err').read_text()[-1500:]}")
        yield RayMemberCluster(uri, temp_dir, token)
    finally:
        if head is not None:
            _stop(head)
        shutil.rmtree(temp_dir, ignore_errors=True)


def _start_head(temp_dir: Path, token: str) -> tuple[subprocess.Popen[bytes], str]:
    ray = Path(sys.executable).with_name("ray")
    ports = dict(zip(PORT_FLAGS, _free_ports(len(PORT_FLAGS)), strict=True))
    args = [str(ray), "start", "--head", "--block", "--disable-usage-stats",
            "--include-dashboard=true", "--dashboard-host=127.0.0.1", "--num-cpus=2",
            "--num-gpus=1", f"--temp-dir={temp_dir}",
            *(f"{flag}={port}" for flag, port in ports.items())]
    env = {**os.environ, "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0", "RAY_AUTH_MODE": "token",
           "RAY_AUTH_TOKEN": token, "PATH": f"{ray.parent}:{os.environ.get('PATH', '')}"}
    head = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL,
                            stderr=(temp_dir / "head.err").open("wb"), start_new_session=True)
    return head, f"http://127.0.0.1:{ports['--dashboard-port']}"


def _stop(head: subprocess.Popen[bytes]) -> None:
    """`--block` stops the head's processes when it is told to; its group is its own."""
    if head.poll() is None:
        head.send_signal(signal.SIGTERM)
    try:
        head.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(head.pid, signal.SIGKILL)
        head.wait()


def _wait_serving(uri: str, token: str, head: subprocess.Popen[bytes]) -> bool:
    """Whether the head serves its Jobs API; False when it exited first (a port another
    process took between choosing it and binding it), so the caller starts it again."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    with httpx.Client(base_url=uri, timeout=10,
                      headers={"Authorization": f"Bearer {token}"}) as client:
        while time.monotonic() < deadline and head.poll() is None:
            try:
                if client.get("/api/jobs/").status_code == 200:
                    return True
            except httpx.TransportError:
                pass
            time.sleep(0.2)
    return False
