"""`shoal.sim.report`: the CSV, JSON and HTML files, the compare table, and determinism."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import fields, replace
from pathlib import Path

import pytest
from report_cases import empty, instant_job, nothing_finished, three_jobs
from rich.console import Console

from shoal.sim.metrics import Summary, summarize
from shoal.sim.report import (
    compare_table,
    fmt_seconds,
    profile_slug,
    write_html_report,
    write_jobs_csv,
    write_outputs,
    write_summary_json,
)
from shoal.sim.result import JobRecord

HEADER = ("name,queue,gpus,duration,submit,first_start,end,jct,queueing_delay,preemptions,"
          "gpu_seconds_used,gpu_seconds_lost,user,stretch,rho\n")


# --- CSV ---------------------------------------------------------------------------------------

def test_jobs_csv_exact_text(tmp_path: Path) -> None:
    path = write_jobs_csv(three_jobs(), tmp_path / "jobs.csv")
    assert path.read_bytes().decode() == HEADER + (
        # ρ = JCT ÷ JCT on a 1/N share: a 10/13, b 27/20, c 6/7.5 (test_report_metrics)
        "a,q1,2,10.000,0.000,0.000,10.000,10.000,0.000,0,20.000,0.000,,1.000,0.769\n"
        "b,q1,2,20.000,0.000,0.000,27.000,27.000,0.000,1,44.000,4.000,,1.350,1.350\n"
        "c,q2,2,5.000,1.000,2.000,7.000,6.000,1.000,0,10.000,0.000,,1.200,0.800\n"
    )


def test_jobs_csv_unstarted_and_unfinished_are_empty_cells(tmp_path: Path) -> None:
    path = write_jobs_csv(nothing_finished(), tmp_path / "jobs.csv")
    assert path.read_text() == HEADER + (
        "long,q1,4,1000.000,0.000,5.000,,,5.000,0,20.000,0.000,,,\n"
        "never,q1,4,50.000,1.000,,,,,0,0.000,0.000,,,\n"
    )


def test_jobs_csv_quotes_awkward_names_and_drops_negative_zero(tmp_path: Path) -> None:
    r = replace(three_jobs(), jobs=(JobRecord('x,"y"', "q", 1, 1.0, -0.0, -0.0001, 1.0,
                                              user="a,b"),))
    text = write_jobs_csv(r, tmp_path / "jobs.csv").read_text()
    assert text == HEADER + ('"x,""y""",q,1,1.000,0.000,0.000,1.000,1.000,0.000,0,0.000,0.000,'
                             '"a,b",1.000,1.000\n')


def test_jobs_csv_of_no_jobs_is_the_header(tmp_path: Path) -> None:
    assert write_jobs_csv(empty(), tmp_path / "jobs.csv").read_text() == HEADER


# --- JSON --------------------------------------------------------------------------------------

def test_summary_json_keys_and_format(tmp_path: Path) -> None:
    summary = summarize(three_jobs())
    path = write_summary_json(summary, tmp_path / "summary.json")
    text = path.read_text()
    assert text.endswith("}\n")
    doc = json.loads(text)
    assert set(doc) == {f.name for f in fields(Summary)}
    assert list(doc) == sorted(doc)
    assert doc == summary.to_dict()
    assert set(doc["per_queue"]["q1"]) == {"gpu_seconds", "share", "demand_gpu_seconds",
                                           "service_ratio", "mean_jct_s", "min_gpus",
                                           "borrowed_gpu_seconds", "borrowed_share",
                                           "min_utilization", "stretch",
                                           "mean_queueing_delay_s"}
    assert len(doc["utilization_series"]) == 200
    assert text == json.dumps(doc, indent=2, sort_keys=True) + "\n"


@pytest.mark.parametrize("case", [nothing_finished, instant_job, empty])
def test_summary_json_of_edge_cases_is_valid(tmp_path: Path, case: object) -> None:
    assert callable(case)
    text = write_summary_json(summarize(case()), tmp_path / "s.json").read_text()
    assert "NaN" not in text and "Infinity" not in text
    json.loads(text)


# --- HTML --------------------------------------------------------------------------------------

def test_html_report_has_the_profiles_table_and_plots(tmp_path: Path) -> None:
    results = [three_jobs("fifo"), three_jobs("drf", (("q1", 2), ("q2", 1)))]
    text = write_html_report(results, tmp_path / "report.html").read_text()
    assert text.startswith("<!DOCTYPE html>")
    # utilisation, queue length, JCT CDF, per-queue shares, per-queue stretch
    assert text.count("<svg") == 5
    for heading in ("GPU utilisation over time", "Queue length over time", "JCT distribution",
                    "Per-queue shares", "Per-queue stretch", "Summary"):
        assert heading in text
    assert "<th>fifo</th><th>drf</th>" in text  # one column per profile, in order
    assert "14.3 s" in text and "68.5 %" in text
    # Jain over VC stretch 5329/5330, max ρ 27/20, one job in three with ρ > 1
    assert "<th>Jain&#x27;s index, VC stretch</th>" in text and "1.000" in text
    assert "1.350" in text and "33.3 %" in text
    assert "stretch (mean JCT ÷ mean duration)" in text  # the stretch figure's axis
    assert "<th>stretch</th>" in text and "1.233" in text  # q1's stretch, per-queue table
    # self-contained: nothing loaded from elsewhere
    assert "<script" not in text and "<img" not in text and "<link" not in text
    assert "<?xml" not in text


def test_html_report_ids_are_unique_across_the_figures(tmp_path: Path) -> None:
    text = write_html_report([three_jobs("fifo"), three_jobs("drf")],
                             tmp_path / "r.html").read_text()
    ids = re.findall(r'\bid="([^"]+)"', text)
    assert ids and len(ids) == len(set(ids))
    refs = re.findall(r'url\(#([^)]+)\)|href="#([^"]+)"', text)
    assert refs
    for ref in refs:
        assert "".join(ref) in ids


def test_html_report_escapes_profile_names(tmp_path: Path) -> None:
    text = write_html_report([three_jobs("<b>&")], tmp_path / "r.html").read_text()
    assert "&lt;b&gt;&amp;" in text
    assert "<b>&" not in text


def test_html_report_survives_edge_cases(tmp_path: Path) -> None:
    results = [nothing_finished(), instant_job(), empty()]
    text = write_html_report(results, tmp_path / "r.html").read_text()
    assert text.count("<svg") == 5
    assert "no finished jobs with a positive JCT" in text
    for name in ("stuck", "instant", "empty"):
        assert f"<th>{name}</th>" in text


def test_html_report_is_byte_identical_twice(tmp_path: Path) -> None:
    results = [three_jobs("fifo"), nothing_finished()]
    first = write_html_report(results, tmp_path / "1.html").read_bytes()
    second = write_html_report(results, tmp_path / "2.html").read_bytes()
    assert first == second


@pytest.mark.slow
def test_html_report_svg_ids_do_not_depend_on_the_process(tmp_path: Path) -> None:
    """Two fresh interpreters with different hash seeds write the same bytes."""
    script = (
        "import sys; sys.path.insert(0, sys.argv[2]);"
        "from report_cases import three_jobs, nothing_finished;"
        "from shoal.sim.report import write_html_report;"
        "write_html_report([three_jobs(), nothing_finished()], sys.argv[1])"
    )
    here = str(Path(__file__).parent)
    outputs = []
    for seed in ("1", "2"):
        out = tmp_path / f"{seed}.html"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run([sys.executable, "-c", script, str(out), here], check=True, env=env)
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    assert re.search(rb'id="[a-z-]+-[a-z]+[0-9a-f]{10}"', outputs[0])  # salted ids


# --- all files ---------------------------------------------------------------------------------

def test_write_outputs_names_and_determinism(tmp_path: Path) -> None:
    results = [three_jobs("fifo"), three_jobs("gang/drf")]
    paths = write_outputs(results, tmp_path / "a" / "out")
    assert [p.name for p in paths] == ["jobs-fifo.csv", "summary-fifo.json",
                                       "jobs-gang_drf.csv", "summary-gang_drf.json",
                                       "report.html"]
    again = write_outputs(results, tmp_path / "b")
    for p, q in zip(paths, again, strict=True):
        assert p.read_bytes() == q.read_bytes(), p.name
    assert json.loads(paths[1].read_text())["profile"] == "fifo"


def test_write_outputs_rejects_colliding_profiles(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="collide"):
        write_outputs([three_jobs("a/b"), three_jobs("a_b")], tmp_path)


def test_profile_slug() -> None:
    assert profile_slug("fifo") == "fifo"
    assert profile_slug("gang drf/v2") == "gang_drf_v2"
    assert profile_slug("..") == "_"


# --- compare table -----------------------------------------------------------------------------

def render(table: object) -> str:
    console = Console(record=True, width=200, color_system=None)
    console.print(table)
    return console.export_text()


def test_compare_table_side_by_side() -> None:
    summaries = [summarize(three_jobs("fifo")),
                 summarize(three_jobs("drf", (("q1", 2), ("q2", 1)))),
                 summarize(nothing_finished())]
    text = render(compare_table(summaries))
    header = next(line for line in text.splitlines() if "metric" in line)
    assert header.index("fifo") < header.index("drf") < header.index("stuck")
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
            for line in text.splitlines() if line.count("│") == 5}
    assert rows["mean JCT"] == ["14.3 s", "14.3 s", "-"]
    assert rows["p95 JCT"] == ["25.3 s", "25.3 s", "-"]
    assert rows["GPU utilisation"] == ["68.5 %", "68.5 %", "-"]
    assert rows["jobs finished"] == ["3 / 3", "3 / 3", "0 / 2"]
    assert rows["lost GPU-hours"] == ["0.00 GPU-h", "0.00 GPU-h", "0.00 GPU-h"]
    # unweighted: drf's weights do not change the stretch-based figures
    assert rows["Jain's index, VC stretch"] == ["1.000", "1.000", "-"]
    assert rows["Jain's index, user stretch"] == ["-", "-", "-"]
    assert rows["worst VC mean queueing delay"] == ["1.0 s", "1.0 s", "5.0 s"]
    assert rows["max finish-time fairness ρ"] == ["1.350", "1.350", "-"]
    assert rows["jobs with ρ > 1"] == ["33.3 %", "33.3 %", "-"]
    assert rows["lower bound (mean JCT, no queueing)"] == ["11.7 s", "11.7 s", "525.0 s"]
    assert rows["preemptions"] == ["1", "1", "0"]


def test_fmt_seconds_adds_hours_from_an_hour() -> None:
    assert fmt_seconds(None) == "-"
    assert fmt_seconds(59.94) == "59.9 s"
    assert fmt_seconds(5400) == "5,400.0 s (1.50 h)"
