"""Scenario tests written as readable YAML tables.

Every `cases/*.yaml` file is one test (its id is the file stem). A case is one YAML mapping:

    description: what the case shows, in one sentence
    profile: default              # optional built-in profile name, or
    profileSpec: {...}            # an inline SchedulerProfile spec (not both)
    cycles: 10                    # optional: most cycles to run
    documents: |                  # the shoal/v1 documents, exactly what `shoal schedule` reads
      ...
    expect:
      binds: {job/group/0: "node"}        # exact: every bind of every cycle, task -> node,
                                          # optionally "node gpus=0,1"
      binds_count: {job: 4}               # tasks bound per listed job
      no_binds: [job]                     # jobs that must get nothing
      evictions: [job/group/0]            # exact: every eviction, task ids
      resizes: {job: [2, 4]}              # exact: every elastic job's sizes, in order
      pending:                            # exact: the jobs still waiting at the end
        job: {kind: Gang, contains: [...], resource: gpu, queue: vc, predicate: p}
      running: [job]                      # exact: the jobs in state Running at the end
      converged: true                     # the last cycle changed nothing
      cycles_run: 1                       # how many cycles ran, the last one included

The harness goes through the real loader (`shoal.spec.load_text`) and the real runner
(`shoal.scenario.run_scenario`); nothing is mocked. Each case also runs twice, and both runs
must give the same result (the core is a pure function of its input). A few cases are also
run through the CLI (`shoal schedule -o json`), whose JSON must match the in-process result.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from shoal.api.lifecycle import JobState
from shoal.cli.main import app
from shoal.scenario import ScenarioResult, run_scenario
from shoal.scheduler.profile import Profile
from shoal.spec import load_text

CASES_DIR = Path(__file__).parent / "cases"
CASE_FILES = sorted(CASES_DIR.glob("*.yaml"))

CASE_KEYS = {"description", "profile", "profileSpec", "cycles", "documents", "expect"}
EXPECT_KEYS = {"binds", "binds_count", "no_binds", "evictions", "resizes", "pending",
               "running", "converged", "cycles_run"}
PENDING_KEYS = {"kind", "contains", "resource", "queue", "predicate"}

#: Cases also run through the CLI; their JSON must equal the in-process result.
#: gang-all-or-nothing uses the default profile, strict-fifo-backfill passes `--profile`, and
#: placement-spread-profile-document takes its profile from a document in the file.
CLI_CASES = ("gang-all-or-nothing", "strict-fifo-backfill", "placement-spread-profile-document")

MISSING = "(none)"


# ---- reading a case ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    name: str
    description: str
    documents: str
    expect: Mapping[str, Any]
    profile: str | None = None
    profile_spec: Mapping[str, Any] | None = None
    cycles: int = 10

    def load_profile(self) -> Profile | None:
        if self.profile_spec is not None:
            return Profile.from_dict(self.profile_spec, f"{self.name}.profileSpec")
        if self.profile is not None:
            return Profile.load(self.profile)
        return None

    def run(self) -> ScenarioResult:
        bundle = load_text(self.documents, source=f"{self.name}.yaml")
        return run_scenario(bundle, self.load_profile(), self.cycles)


class _CaseLoader(yaml.SafeLoader):
    """Refuses a repeated key: in `expect.binds` it would silently drop an expectation."""


def _no_duplicates(loader: _CaseLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    keys = [loader.construct_object(k, deep=True) for k, _ in node.value]
    repeated = sorted({str(k) for k in keys if keys.count(k) > 1})
    if repeated:
        raise yaml.constructor.ConstructorError(
            None, None, f"repeated keys {repeated}", node.start_mark)
    return loader.construct_mapping(node, deep=True)


_CaseLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)


def read_case(path: Path) -> Case:
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=_CaseLoader)
    where = path.name
    assert isinstance(data, dict), f"{where}: a case is one YAML mapping"
    unknown = set(data) - CASE_KEYS
    assert not unknown, f"{where}: unknown keys {sorted(unknown)}; known: {sorted(CASE_KEYS)}"
    for key in ("description", "documents", "expect"):
        assert key in data, f"{where}: {key!r} is required"
    assert not ("profile" in data and "profileSpec" in data), \
        f"{where}: give either 'profile' or 'profileSpec', not both"
    expect = data["expect"]
    assert isinstance(expect, dict) and expect, f"{where}: 'expect' must be a non-empty mapping"
    unknown = set(expect) - EXPECT_KEYS
    assert not unknown, \
        f"{where}: unknown expect keys {sorted(unknown)}; known: {sorted(EXPECT_KEYS)}"
    for job, want in (expect.get("pending") or {}).items():
        if isinstance(want, dict):
            bad = set(want) - PENDING_KEYS
            assert not bad, f"{where}: expect.pending.{job}: unknown keys {sorted(bad)}"
    return Case(name=path.stem, description=str(data["description"]).strip(),
                documents=data["documents"], expect=expect, profile=data.get("profile"),
                profile_spec=data.get("profileSpec"), cycles=int(data.get("cycles", 10)))


# ---- comparing ----------------------------------------------------------------------------

def _table(title: str, rows: list[tuple[str, str, str]]) -> str:
    """An expected-vs-actual table; rows that differ are marked with `<--`."""
    header = ("", "expected", "actual")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(3)]
    lines = [f"{title}:"]
    for i, row in enumerate([header, *rows]):
        mark = "  <--" if i and row[1] != row[2] else ""
        lines.append("    " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True))
                     .rstrip() + mark)
    return "\n".join(lines)


def _set_table(title: str, expected: set[str], actual: set[str]) -> str:
    rows = [(x, "yes" if x in expected else "no", "yes" if x in actual else "no")
            for x in sorted(expected | actual)]
    return _table(title, rows)


@dataclass(frozen=True)
class Where:
    """A bind's place as a case writes it: `node [gpus=0,1] [vnode=vc/0]`. `gpus` and
    `vnode`, when not written, are not compared."""

    node: str
    gpus: tuple[int, ...] | None = None
    vnode: str | None = None

    def text(self, like: Where | None = None) -> str:
        """As a case would write it, with only the parts `like` writes."""
        like = like or self
        out = self.node
        if like.gpus is not None:
            out += f" gpus={','.join(str(g) for g in self.gpus or ())}"
        if like.vnode is not None:
            out += f" vnode={self.vnode or '-'}"
        return out


def _parse_bind(text: str) -> Where:
    parts = str(text).split()
    values: dict[str, str] = {}
    for part in parts[1:]:
        key, _, value = part.partition("=")
        assert key in ("gpus", "vnode"), \
            f"bind {text!r}: expected 'node', then optionally gpus=0,1 and vnode=vc/0"
        values[key] = value
    gpus = None if "gpus" not in values else \
        tuple(int(g) for g in values["gpus"].split(",") if g)
    return Where(parts[0], gpus, values.get("vnode"))


def compare(case: Case, result: ScenarioResult) -> list[str]:
    """Every way `result` differs from the case's expectations, as readable tables."""
    expect = case.expect
    problems: list[str] = []
    binds = result.binds
    bound = Counter(str(b.task) for b in binds)
    twice = sorted(t for t, n in bound.items() if n > 1 and not expect.get("evictions"))
    if twice:
        problems.append(f"tasks bound more than once: {', '.join(twice)}")
    actual_binds = {str(b.task): Where(b.node, b.gpus, b.virtual_node or "-") for b in binds}

    if "binds" in expect:
        wanted = {str(task): _parse_bind(where) for task, where in (expect["binds"] or {}).items()}
        rows = []
        for task in sorted(set(wanted) | set(actual_binds)):
            want = wanted.get(task)
            have = actual_binds.get(task)
            want_text = MISSING if want is None else want.text()
            have_text = MISSING if have is None else have.text(want or Where(""))
            rows.append((task, want_text, have_text))
        if any(r[1] != r[2] for r in rows):
            problems.append(_table("binds (task -> node)", rows))

    per_job = Counter(b.task.job for b in binds)
    if "binds_count" in expect:
        rows = [(job, str(n), str(per_job.get(job, 0)))
                for job, n in sorted(expect["binds_count"].items())]
        if any(r[1] != r[2] for r in rows):
            problems.append(_table("tasks bound per job", rows))

    if "no_binds" in expect:
        rows = [(job, "0", str(per_job.get(job, 0))) for job in sorted(expect["no_binds"])]
        if any(r[1] != r[2] for r in rows):
            problems.append(_table("jobs that must get no binds", rows))

    if "evictions" in expect:
        wanted_ev = {str(t) for t in expect["evictions"] or []}
        actual_ev = {str(e.task) for e in result.evictions}
        if wanted_ev != actual_ev:
            problems.append(_set_table("evictions", wanted_ev, actual_ev))

    if "resizes" in expect:
        wanted_sizes = {job: list(sizes) for job, sizes in (expect["resizes"] or {}).items()}
        actual_sizes: dict[str, list[int]] = {}
        for cycle in result.cycles:
            for resize in cycle.resizes:
                actual_sizes.setdefault(resize.job, []).append(resize.replicas)
        if wanted_sizes != actual_sizes:
            problems.append(f"resizes: expected {wanted_sizes}, got {actual_sizes}")

    if "pending" in expect:
        problems.extend(_compare_pending(expect["pending"] or {}, result))

    if "running" in expect:
        wanted_run = set(expect["running"] or [])
        actual_run = {j.name for j in result.jobs if j.state is JobState.RUNNING}
        if wanted_run != actual_run:
            problems.append(_set_table("jobs Running at the end", wanted_run, actual_run))

    if "converged" in expect and bool(expect["converged"]) != result.converged:
        problems.append(f"converged: expected {expect['converged']}, got {result.converged} "
                        f"after {len(result.cycles)} cycles")
    if "cycles_run" in expect and int(expect["cycles_run"]) != len(result.cycles):
        problems.append(f"cycles run: expected {expect['cycles_run']}, got {len(result.cycles)}")
    return problems


def _compare_pending(wanted: Mapping[str, Any], result: ScenarioResult) -> list[str]:
    actual = {p.job: p.reason for p in result.pending}
    rows: list[tuple[str, str, str]] = []
    for job in sorted(set(wanted) | set(actual)):
        want = wanted.get(job, MISSING)
        if want is None:
            want = {}  # `job:` alone: pending, for any reason
        elif isinstance(want, str) and want != MISSING:
            want = {"kind": want}  # `job: Gang`: shorthand for the kind
        have = actual.get(job)
        if want == MISSING or have is None:
            want_text = MISSING if want == MISSING else f"{want.get('kind', '?')}"
            have_text = MISSING if have is None else have.kind.value
            rows.append((job, want_text, have_text))
            continue
        if "kind" in want:
            rows.append((f"{job}.kind", str(want["kind"]), have.kind.value))
        for key in ("resource", "queue", "predicate"):
            if key in want:
                rows.append((f"{job}.{key}", str(want[key]), str(getattr(have, key))))
        for text in want.get("contains") or []:
            found = str(text) in have.message
            rows.append((f"{job}.message contains {text!r}", "yes", "yes" if found else "no"))
    if all(r[1] == r[2] for r in rows):
        return []
    messages = "\n".join(f"    {p.job}: [{p.reason.kind.value}] {p.reason.message}"
                         for p in result.pending)
    return [_table("pending jobs", rows) + "\n  actual pending messages:\n"
            + (messages or "    (none)")]


def describe(result: ScenarioResult) -> str:
    """What actually happened, cycle by cycle, for failure messages."""
    lines = [f"actual outcome (profile {result.profile}, {len(result.cycles)} cycles, "
             f"converged={result.converged}):"]
    for cycle in result.cycles:
        for b in cycle.binds:
            gpus = ",".join(str(g) for g in b.gpus)
            lines.append(f"    cycle {cycle.cycle}: bind {b.task} -> {b.node}"
                         + (f" gpus={gpus}" if gpus else ""))
        for e in cycle.evictions:
            lines.append(f"    cycle {cycle.cycle}: evict {e.task} from {e.node}: {e.reason}")
    for p in result.pending:
        lines.append(f"    pending {p.job}: [{p.reason.kind.value}] {p.reason.message}")
    for job in result.jobs:
        lines.append(f"    job {job.name}: {job.state.value}")
    return "\n".join(lines)


# ---- the tests ------------------------------------------------------------------------------

def test_cases_exist() -> None:
    assert CASE_FILES, f"no scenario cases in {CASES_DIR}"


@pytest.mark.parametrize("path", CASE_FILES, ids=[p.stem for p in CASE_FILES])
def test_scenario(path: Path) -> None:
    case = read_case(path)
    result = case.run()
    problems = compare(case, result)
    first, again = result.to_dict(), case.run().to_dict()
    if first != again:
        problems.append(_determinism_diff(first, again))
    if problems:
        pytest.fail(f"{case.name}: {case.description}\n\n" + "\n\n".join(problems)
                    + "\n\n" + describe(result), pytrace=False)


def _determinism_diff(first: Mapping[str, Any], again: Mapping[str, Any]) -> str:
    lines = ["two runs of the same input gave different results (the core must be pure):"]
    for key in sorted(set(first) | set(again)):
        if first.get(key) != again.get(key):
            lines.append(f"    {key}:\n      run 1: {json.dumps(first.get(key))[:400]}"
                         f"\n      run 2: {json.dumps(again.get(key))[:400]}")
    return "\n".join(lines)


@pytest.mark.parametrize("name", CLI_CASES)
def test_cli_json_matches_in_process(name: str, tmp_path: Path) -> None:
    case = read_case(CASES_DIR / f"{name}.yaml")
    assert case.profile_spec is None, "CLI cases use a built-in or in-file profile"
    spec_file = tmp_path / f"{name}.yaml"
    spec_file.write_text(case.documents, encoding="utf-8")
    args = ["schedule", str(spec_file), "-o", "json", "--cycles", str(case.cycles)]
    if case.profile is not None:
        args += ["--profile", case.profile]
    outcome = CliRunner().invoke(app, args)
    assert outcome.exit_code == 0, f"shoal {' '.join(args)} failed:\n{outcome.output}"
    assert json.loads(outcome.stdout) == case.run().to_dict()
