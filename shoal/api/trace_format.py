"""The formats of job traces `shoal sim` replays (`shoal.sim.inputs` reads them): a value of
the command line (`shoal sim --format`) as much as of the simulator, so it lives here, light,
where both import it."""

from __future__ import annotations

from enum import StrEnum


class TraceFormat(StrEnum):
    AUTO = "auto"
    PHILLY = "philly"
    ITP = "itp"
    ALIBABA = "alibaba"
    NATIVE = "native"
    POLLUX = "pollux"
