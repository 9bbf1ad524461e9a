"""Where the CLI's server URL and token come from, and the config file `shoal login` writes.

In order: the flags `--server/-s` and `--token`; the environment (`SHOAL_SERVER`,
`SHOAL_TOKEN`); the config file (`$SHOAL_CONFIG`, else `$XDG_CONFIG_HOME/shoal/config.yaml`,
else `~/.config/shoal/config.yaml`); and last, for the token only, `./.shoal/admin.token`,
the file `shoal up` writes in its default data directory, so that on the machine where it
runs no login is needed. The server defaults to `shoal up`'s own, http://127.0.0.1:8765.

How long to wait for the server's answer to one request: `SHOAL_TIMEOUT` (seconds), else the
config file's `timeout`, else `DEFAULT_TIMEOUT`; a server that does not answer in time is
reported as timed out, with the timeout, not as unreachable.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from urllib.parse import urlsplit

#: Seconds to wait for one answer of the server (`ShoalClient`'s default), and the most a
#: user may ask for (a `logs --follow` waits for output without this limit).
DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 3600.0

#: The token `shoal up` writes with its default `--data-dir`, relative to where it ran.
LOCAL_ADMIN_TOKEN = Path(".shoal") / "admin.token"
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


class ConfigError(Exception):
    """The config file or a token file cannot be used; the message says why."""


class Source(StrEnum):
    FLAG = "flag"
    ENV = "environment"
    CONFIG = "config file"
    LOCAL = "local admin token"
    DEFAULT = "default"
    NONE = "none"


@dataclass(frozen=True)
class Settings:
    server: str
    token: str | None
    server_from: Source
    token_from: Source
    timeout: float = DEFAULT_TIMEOUT


@dataclass(frozen=True)
class ConfigFile:
    server: str | None = None
    token: str | None = None
    timeout: float | None = None


def config_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get("SHOAL_CONFIG"):
        return Path(env["SHOAL_CONFIG"])
    base = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else (
        Path.home() / ".config")
    return base / "shoal" / "config.yaml"


def read_config(path: Path) -> ConfigFile:
    if not path.exists():
        return ConfigFile()
    import yaml  # only when there is a file: loading it costs every command's start

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read the config file {path}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"the config file {path} is not a mapping of server and token")
    server, token, timeout = data.get("server"), data.get("token"), data.get("timeout")
    return ConfigFile(None if server is None else str(server),
                      None if token is None else str(token),
                      None if timeout is None else _timeout(timeout, f"the config file {path}"))


def write_config(path: Path, config: ConfigFile) -> None:
    """Write the file readable by its owner only: it holds a bearer token."""
    import yaml

    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    data: dict[str, str | float | None] = {"server": config.server, "token": config.token}
    if config.timeout is not None:
        data["timeout"] = config.timeout
    text = yaml.safe_dump(data, sort_keys=False)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    # O_CREAT's mode applies only to a new file: tighten one that existed before.
    os.fchmod(descriptor, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)


def read_token_file(path: Path) -> str:
    try:
        token = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(f"cannot read the token file {path}: {exc.strerror or exc}") from None
    if not token:
        raise ConfigError(f"the token file {path} is empty")
    return token


def resolve(server: str | None = None, token: str | None = None,
            env: Mapping[str, str] | None = None, cwd: Path | None = None) -> Settings:
    """The server and token to use, from flags, environment, config file and local token."""
    from shoal.client.client import DEFAULT_SERVER  # loads httpx: only when a verb runs

    env = os.environ if env is None else env
    config = read_config(config_path(env))
    url, url_from = _first((server, Source.FLAG), (env.get("SHOAL_SERVER"), Source.ENV),
                           (config.server, Source.CONFIG), (DEFAULT_SERVER, Source.DEFAULT))
    url = _checked_url((url or DEFAULT_SERVER).rstrip("/"), url_from)
    # A token belongs to its server: the config file's goes only to the server it was saved
    # for, and the local admin token only to this machine.
    config_token = config.token if _same(config.server or DEFAULT_SERVER, url) else None
    local = (cwd or Path.cwd()) / LOCAL_ADMIN_TOKEN
    local_token = _local_token(local) if _is_loopback(url) else None
    key, key_from = _first((token, Source.FLAG), (env.get("SHOAL_TOKEN"), Source.ENV),
                           (config_token, Source.CONFIG), (local_token, Source.LOCAL))
    timeout = (_timeout(env["SHOAL_TIMEOUT"], "SHOAL_TIMEOUT") if env.get("SHOAL_TIMEOUT")
               else config.timeout or DEFAULT_TIMEOUT)
    return Settings(url, key, url_from, key_from, timeout)


def _timeout(value: object, source: str) -> float:
    try:
        seconds = float(str(value))
    except ValueError:
        seconds = math.nan
    if not 0 < seconds <= MAX_TIMEOUT:  # NaN fails too
        raise ConfigError(f"invalid timeout {value!r} (from {source}): expected seconds, "
                          f"more than 0 and at most {MAX_TIMEOUT:g}")
    return seconds


def _first(*candidates: tuple[str | None, Source]) -> tuple[str | None, Source]:
    for value, source in candidates:
        if value:
            return value, source
    return None, Source.NONE


def _same(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


def _checked_url(url: str, source: Source) -> str:
    try:
        parts = urlsplit(url)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname)
        _ = parts.port  # a port that is not a number raises here
    except ValueError:
        valid = False
    if not valid or " " in url:
        raise ConfigError(f"invalid server URL {url!r} (from the {source}): expected "
                          "http://HOST:PORT or https://HOST:PORT")
    return url


def _is_loopback(url: str) -> bool:
    return (urlsplit(url).hostname or "") in LOOPBACK


def _local_token(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None
