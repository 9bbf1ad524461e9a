"""The garbage collector during a replay (issue 18): what a replay keeps alive for its
whole run is not walked again by every full collection.

A replay's heap grows for its whole run — the trace's jobs, the model's change log, every
run's intervals — and CPython starts a full collection each time the objects that survived
one grow by a quarter, walking all of them again: on the full Philly trace under `las` the
collector took ~10.6 of ~89 CPU-s, ~7.4 of it in ~22 full collections. While a replay runs,
each full collection ends by freezing what survived it (`gc.freeze`), so the next one
walks only what was made since. Reference counting still frees everything as before; only
cycles among objects that were alive at a full collection wait until the replay ends,
when everything is unfrozen (a few MB on the whole trace). Nothing here changes what a
replay decides.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def _freeze_after_full(phase: str, info: dict[str, Any]) -> None:
    if phase == "stop" and info.get("generation") == 2:
        gc.freeze()


@contextmanager
def long_lived_heap() -> Iterator[None]:
    """Within it, full collections freeze their survivors; on leaving, everything frozen is
    unfrozen. Nested uses, and a process that froze objects itself, are left alone."""
    if _freeze_after_full in gc.callbacks or gc.get_freeze_count():
        yield
        return
    gc.callbacks.append(_freeze_after_full)
    try:
        yield
    finally:
        gc.callbacks.remove(_freeze_after_full)
        gc.unfreeze()
