"""Fixtures shared by the test suites: a migrated `Store` on SQLite and on a real PostgreSQL
server (the store and the REST API tests run on both), and a repository over it.

The PostgreSQL server is started once per session in a temporary directory (`initdb` +
`pg_ctl`, listening only on a Unix socket) and every test gets a fresh database. The
migrations run once per session and backend, into a template that every test's store is a
copy of (`store_templates`): the same migrated schema, without a migration per test. The
copies are made a few tests ahead and dropped after their test by a thread of their own
(`FreshDatabases`): a copy is a tenth of a second of the server's work or more (a third on
a loaded machine), four hundred tests' worth, which the server then does beside the tests,
not in their way. When run as root, the server runs as the `postgres` user (initdb refuses
root). Without the PostgreSQL binaries the postgresql tests fail: CI installs them
(`.ci/run`).
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import queue
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from fake_clock import Clock
from store_templates import migrate_template, migrated_sqlite

from shoal.store import Repository, Store, open_store

#: How the suite is spread over the cores (pytest-xdist): groups, order, worker count.
pytest_plugins = ["suite_schedule"]


@dataclass(frozen=True)
class PostgresServer:
    socket_dir: str
    port: int

    def url(self, database: str) -> str:
        return f"postgresql+psycopg://shoal@/{database}?host={self.socket_dir}&port={self.port}"

    def admin(self) -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(host=self.socket_dir, port=self.port, user="shoal",
                               dbname="postgres", autocommit=True)


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
                        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit()
                        else 0)
    return candidates[-1] if candidates else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _as_user() -> tuple[list[str], pwd.struct_passwd | None]:
    """The command prefix that drops root (initdb and postgres refuse to run as root)."""
    if os.geteuid() != 0:
        return [], None
    for name in ("postgres", "nobody"):
        try:
            account = pwd.getpwnam(name)
        except KeyError:
            continue
        runuser = shutil.which("runuser")
        if runuser:
            return [runuser, "-u", name, "--"], account
        setpriv = shutil.which("setpriv")
        if setpriv:
            return [setpriv, f"--reuid={account.pw_uid}", f"--regid={account.pw_gid}",
                    "--clear-groups"], account
    pytest.fail("running as root and found no unprivileged user (postgres, nobody) or no "
                "runuser/setpriv to start PostgreSQL as")


#: The umask the test run started with. An in-process `shoal up` (CliRunner) sets the
#: server's own (0o077) for the rest of the process; later tests must not inherit it.
_UMASK = os.umask(0)
os.umask(_UMASK)


@pytest.fixture(autouse=True)
def _process_umask() -> Iterator[None]:
    os.umask(_UMASK)
    yield
    os.umask(_UMASK)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if initdb is None or pg_ctl is None:
        pytest.fail("PostgreSQL is not installed: no initdb/pg_ctl on PATH or under "
                    "/usr/lib/postgresql/*/bin. Install Debian's `postgresql` package "
                    "(.ci/run does) to run the store tests against PostgreSQL.")
    prefix, account = _as_user()
    # Not under pytest's tmp_path: its parents are private to root.
    root = Path(tempfile.mkdtemp(prefix="shoal-pg-"))
    data = root / "data"
    if account is not None:
        os.chown(root, account.pw_uid, account.pw_gid)
    port = _free_port()

    def run(*args: str) -> None:
        result = subprocess.run([*prefix, *args], capture_output=True, text=True, check=False)
        if result.returncode != 0:
            log = root / "log"
            tail = log.read_text()[-3000:] if log.exists() else ""
            pytest.fail(f"{' '.join(args)} failed ({result.returncode}):\n{result.stdout}\n"
                        f"{result.stderr}\n{tail}")

    run(initdb, "-D", str(data), "-U", "shoal", "--auth=trust", "-E", "UTF8",
        "--no-instructions")
    run(pg_ctl, "-D", str(data), "-o",
        f"-k {root} -p {port} -c listen_addresses='' -c fsync=off", "-l", str(root / "log"),
        "start", "-w")
    try:
        yield PostgresServer(str(root), port)
    finally:
        subprocess.run([*prefix, pg_ctl, "-D", str(data), "stop", "-m", "fast", "-w"],
                       capture_output=True, check=False)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An SQLite database migrated to head by `Store.migrate()` once per session; each test's
    store is a copy of it (`store_templates.migrated_sqlite`)."""
    path = tmp_path_factory.mktemp("template") / "shoal.db"
    migrate_template(f"sqlite:///{path}")
    return path


@pytest.fixture(scope="session")
def postgres_template(postgres_server: PostgresServer) -> str:
    """A PostgreSQL database migrated to head by `Store.migrate()` once per session; each
    test's database is created from it (`CREATE DATABASE ... TEMPLATE`: no connection to it
    stays open, as PostgreSQL copies a template only while nobody is connected to it)."""
    database = f"shoal_template_{os.getpid()}"
    with postgres_server.admin() as conn:
        conn.execute(f'CREATE DATABASE "{database}"')
    migrate_template(postgres_server.url(database))
    return database


class FreshDatabases:
    """Copies of the migrated template, each a test's own database, made `AHEAD` tests ahead
    by a thread of this class's own, which also drops each copy once its test has closed
    it. The thread alone copies the template, one copy at a time (PostgreSQL refuses a copy
    while anyone else is connected to it), over one connection to `postgres`."""

    AHEAD = 2
    CREATE = ""

    def __init__(self, server: PostgresServer, template: str) -> None:
        self._server, self._template = server, template
        self._names = itertools.count()
        self._ready: queue.Queue[str | BaseException] = queue.Queue()
        self._work: queue.Queue[str | None] = queue.Queue()
        """Names to drop; `CREATE` for one more copy; None to stop."""
        self._failed: BaseException | None = None
        self._thread = threading.Thread(target=self._serve, name="fresh-databases",
                                        daemon=True)
        self._thread.start()
        for _ in range(self.AHEAD):
            self._work.put(self.CREATE)

    def take(self) -> str:
        """A fresh copy, waited for if none is ready yet; another is made in its place."""
        if self._failed is not None:
            raise self._failed
        ready = self._ready.get(timeout=300)  # a safety net: a copy takes well under 1 s
        self._work.put(self.CREATE)
        if isinstance(ready, BaseException):
            raise ready
        return ready

    def drop(self, database: str) -> None:
        """`database`'s test is over (its connections closed): drop it."""
        self._work.put(database)

    def close(self) -> None:
        self._work.put(None)
        self._thread.join(timeout=300)

    def _serve(self) -> None:
        try:
            with self._server.admin() as conn:
                while (item := self._work.get()) is not None:
                    if item == self.CREATE:
                        try:
                            name = f"shoal_test_{os.getpid()}_{next(self._names)}"
                            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{self._template}"')
                            self._ready.put(name)
                        except Exception as exc:  # the test that takes it fails with it
                            self._ready.put(exc)
                    else:
                        conn.execute(f'DROP DATABASE IF EXISTS "{item}" WITH (FORCE)')
        except BaseException as exc:  # every later take fails with it, none waits
            self._failed = exc
            self._ready.put(exc)


@pytest.fixture(scope="session")
def fresh_databases(postgres_server: PostgresServer,
                    postgres_template: str) -> Iterator[FreshDatabases]:
    databases = FreshDatabases(postgres_server, postgres_template)
    try:
        yield databases
    finally:
        databases.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A migrated, empty store on each backend: a copy of the session's migrated template."""
    if request.param == "sqlite":
        opened = migrated_sqlite(request.getfixturevalue("sqlite_template"),
                                 tmp_path / "shoal.db")
        yield opened
        opened.close()
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    databases: FreshDatabases = request.getfixturevalue("fresh_databases")
    database = databases.take()
    opened = open_store(server.url(database))
    try:
        yield opened
    finally:
        opened.close()
        databases.drop(database)


@pytest.fixture
def repo(store: Store) -> Repository:
    return Repository(store, clock=Clock())
