"""The overhead benchmark CLI (python -m eddytools.bench) end to end: real
server, real Spark loader, results files, plots and the answer check."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from eddytools import bench

EXPECTED = {
    "selections": {"queries": {"No-Delay", "Delay-0", "Delay-10", "Delay-100"},
                   "configs": {"vanilla", "eddy@1", "eddy@100"}},
    "shj": {"queries": {f"Select-{k}-{n}" for k in ("All", "Count") for n in (3, 4, 5)},
            "configs": {"vanilla", "shj", "eddy@1", "eddy@100"}},
    "index": {"queries": {f"{n}-{x}" for n in (3, 4, 5) for x in (10, 1000)},
              "configs": {"vanilla", "eddy@1", "eddy@100"}},
}


def test_quick_run_writes_well_formed_results(pg_dsn, tmp_path, capsys):
    """--quick loads small tenk/hundredk tables with the Spark loader, runs every
    experiment under every configuration and writes measurements.csv,
    summary.csv, results.json and one non-empty PNG per experiment: every
    (experiment, query, configuration) is measured, times are positive, vanilla
    normalizes to 1, every answer agrees, and the terminal gets the summary."""
    out = tmp_path / "bench"
    assert bench.main(["--dsn", pg_dsn, "--quick", "--out", str(out), "--no-progress"]) == 0

    doc = json.loads((out / "results.json").read_text())
    assert doc["errors"] == []
    assert doc["settings"]["quick"] is True
    runs = doc["runs"]
    for experiment, want in EXPECTED.items():
        got = {(r["query"], r["config"]) for r in runs if r["experiment"] == experiment}
        assert got == {(q, c) for q in want["queries"] for c in want["configs"]}, experiment
    assert all(r["seconds"] > 0 for r in runs)
    assert {r["rep"] for r in runs} == {0, 1}
    for experiment, want in EXPECTED.items():
        for q in want["queries"]:
            answers = {(r["rows"], r["digest"]) for r in runs
                       if r["experiment"] == experiment and r["query"] == q}
            assert len(answers) == 1, (experiment, q, answers)
    counts = {r["query"]: r["rows"] for r in runs if r["experiment"] == "selections"}
    assert set(counts.values()) == {1}          # count(*): one row

    summary = doc["summary"]
    assert len(summary) == sum(len(w["queries"]) * len(w["configs"]) for w in EXPECTED.values())
    for row in summary:
        assert row["n"] == 2
        assert 0 < row["min_ms"] <= row["median_ms"] <= row["max_ms"]
        assert row["normalized"] > 0
        if row["config"] == "vanilla":
            assert row["normalized"] == pytest.approx(1.0)

    with open(out / "measurements.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(runs)
    assert all(float(r["seconds"]) > 0 for r in rows)
    with open(out / "summary.csv") as f:
        assert len(list(csv.DictReader(f))) == len(summary)

    for experiment in EXPECTED:
        png = out / f"{experiment}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert png.stat().st_size > 10_000

    printed = capsys.readouterr().out
    for experiment in EXPECTED:
        assert f"{experiment}: median ms" in printed
    assert "Select-Count-5" in printed and "5-1000" in printed


def test_answer_check_catches_a_wrong_configuration(pg_dsn, tmp_path, capsys):
    """A configuration that runs a different query (the hidden
    --inject-wrong-config adds one) is reported as an answer mismatch: exit
    status 3, an error per query in results.json and on stderr, and none of
    its runs among the measurements."""
    out = tmp_path / "wrong"
    status = bench.main(["--dsn", pg_dsn, "--quick", "--out", str(out), "--no-progress",
                         "--no-plots", "-e", "selections,index", "--freqs", "100",
                         "--reps", "1", "--inject-wrong-config"])
    assert status == 3
    doc = json.loads((out / "results.json").read_text())
    assert len(doc["errors"]) == 4 + 6
    assert all(e.startswith("answer mismatch:") and "under wrong" in e for e in doc["errors"])
    assert doc["runs"] and not any(r["config"] == bench.WRONG for r in doc["runs"])
    assert "answer mismatch: selections No-Delay under wrong" in capsys.readouterr().err


def test_wrong_query_differs():
    """The injected configuration's query keeps the original and adds a predicate
    on the first table."""
    q = bench.wrong_query("SELECT count(*) FROM tenk1, tenk2 WHERE tenk1.unique2 = tenk2.unique2")
    assert "tenk1.unique2 % 2 = 1" in q and "tenk1.unique2 = tenk2.unique2" in q


def test_help_and_bad_arguments(capsys):
    """--help documents the options; an unknown experiment is a usage error."""
    with pytest.raises(SystemExit) as e:
        bench.main(["--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    for option in ("--experiments", "--freqs", "--policy", "--reps", "--out", "--quick",
                   "--dsn", "--master"):
        assert option in text
    with pytest.raises(SystemExit) as e:
        bench.main(["-e", "selections,nope"])
    assert e.value.code == 2


def test_default_output_is_untracked():
    """Without --out the results go to bench-results/ (in .gitignore), not to
    the committed docs/bench/: a benchmark run leaves the checkout clean."""
    assert str(bench.build_parser().parse_args([]).out) == "bench-results"
    gitignore = (Path(__file__).resolve().parent.parent / ".gitignore").read_text()
    assert "bench-results/" in gitignore.split()


def show(conn, name: str) -> str:
    return conn.execute(f"SHOW {name}").fetchone()[0]


def test_configurations_do_not_leak_settings(eddy_conn):
    """Each configuration starts from RESET ALL: the selection experiment's
    eddy.selection_min_cost = 0 must not reach a join experiment, where it
    would turn the scan filter into a routed selection; the session settings
    of the benchmark are applied every time."""
    sel = bench.experiment_queries(["selections"])[0]
    idx = bench.experiment_queries(["index"])[0]
    bench.configure(eddy_conn, "eddy@1", sel, "lottery", "public")
    assert show(eddy_conn, "eddy.selection_min_cost") == "0"
    assert show(eddy_conn, "eddy.routing_policy") == "lottery"
    bench.configure(eddy_conn, "eddy@100", idx, "rank", "public")
    assert show(eddy_conn, "eddy.selection_min_cost") == "0.01"
    assert show(eddy_conn, "eddy.join_method") == "index"
    assert show(eddy_conn, "eddy.reopt_frequency") == "100"
    assert show(eddy_conn, "enable_hashjoin") == "off"
    bench.configure(eddy_conn, "vanilla", sel, "rank", "public")
    assert show(eddy_conn, "eddy.enabled") == "off"
    assert show(eddy_conn, "enable_hashjoin") == "on"
    assert show(eddy_conn, "jit") == "off"
    assert show(eddy_conn, "work_mem") == "64MB"
    assert show(eddy_conn, "max_parallel_workers_per_gather") == "0"


def test_migration_configurations(eddy_conn):
    """--migration off,guarded adds an eddy@F+guarded configuration per
    frequency to the join experiments (a selection eddy has no state to
    move), which sets eddy.migration; eddy@F runs with migration off even
    after a guarded configuration in the same session."""
    args = bench.build_parser().parse_args(["--freqs", "1,100", "--migration", "off,guarded"])
    assert bench.configs_for("shj", args) == ["vanilla", "shj", "eddy@1", "eddy@1+guarded",
                                              "eddy@100", "eddy@100+guarded"]
    assert bench.configs_for("selections", args) == ["vanilla", "eddy@1", "eddy@100"]
    assert sorted(["eddy@100+guarded", "eddy@1", "vanilla", "eddy@100", "shj"],
                  key=bench.config_rank) == ["vanilla", "shj", "eddy@1", "eddy@100",
                                             "eddy@100+guarded"]
    join = bench.experiment_queries(["shj"])[0]
    bench.configure(eddy_conn, "eddy@100+guarded", join, "rank", "public")
    assert show(eddy_conn, "eddy.migration") == "guarded"
    assert show(eddy_conn, "eddy.reopt_frequency") == "100"
    bench.configure(eddy_conn, "eddy@1", join, "rank", "public")
    assert show(eddy_conn, "eddy.migration") == "off"
    assert show(eddy_conn, "eddy.reopt_frequency") == "1"
    with pytest.raises(SystemExit):
        bench.build_parser().parse_args(["--migration", "sometimes"])
