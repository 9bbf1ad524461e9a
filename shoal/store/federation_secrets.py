"""Sealing a multi-cluster job's secrets at rest (issue 19): its per-member tokens are
needed after a restart to cancel its copies, so they are kept — encrypted with Fernet
(AES-128-CBC + HMAC-SHA256, from `cryptography`) under a key that lives in a 0600 file in
the server's data directory, created on first use, never in the store. A stolen database
file alone gives no token; the data directory is the server's own (0700).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken

KEY_FILE = "mc-secrets.key"


class SealError(Exception):
    """Sealed secrets could not be opened (another key, or damaged); says nothing of them."""


class SecretBox:
    """Seals and opens a job's secrets (name → value pairs) with one key."""

    def __init__(self, key: bytes) -> None:
        self._fernet = Fernet(key)

    def __repr__(self) -> str:
        return "SecretBox(<key hidden>)"

    def seal(self, secrets: tuple[tuple[str, str], ...]) -> str:
        plain = json.dumps([list(pair) for pair in secrets]).encode()
        return self._fernet.encrypt(plain).decode("ascii")

    def open(self, sealed: str) -> tuple[tuple[str, str], ...]:
        try:
            pairs = json.loads(self._fernet.decrypt(sealed.encode("ascii")))
        except (InvalidToken, ValueError):
            raise SealError("the job's sealed secrets cannot be opened with this server's "
                            "key (was the key file replaced?)") from None
        return tuple((str(k), str(v)) for k, v in pairs)


def key_box(data_dir: Path) -> SecretBox:
    """The box of the key in `data_dir`, the key file created (0600) on first use."""
    path = data_dir / KEY_FILE
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        path.chmod(0o600)
        return SecretBox(path.read_bytes().strip())
    key = Fernet.generate_key()
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(key + b"\n")
    return SecretBox(key)
