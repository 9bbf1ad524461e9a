"""Five small ITP files for the multi-cluster what-if's tests: the example sample of
cluster01 dealt in turn over cluster01..05.csv (so the tests do not need ../shared)."""

from __future__ import annotations

from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "traces" / "itp-cluster01-sample.csv"


def write_itp_members(folder: Path) -> Path:
    header, *rows = SAMPLE.read_text(encoding="utf-8").splitlines()
    for k in range(5):
        mine = rows[k::5]
        (folder / f"cluster0{k + 1}.csv").write_text("\n".join([header, *mine]) + "\n",
                                                     encoding="utf-8")
    return folder
