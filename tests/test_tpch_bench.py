"""The TPC-H eddy-on-against-off harness (python -m eddytools.tpch_bench) end to
end on tiny data: real server, real tpchgen-cli load into a database of its
own (reused by the next run), every configuration, results files, the plot,
and the result check.  Assertions are on counters and fields, not timings."""

from __future__ import annotations

import csv
import json
import statistics
from collections.abc import Iterator

import psycopg
import pytest

from eddytools import tpch_bench as tb
from eddytools.db import connect
from eddytools.tpch import QUERIES

DBNAME = "tpch_bench_test"
QUERY_NUMBERS = (1, 3, 5, 13)           # no eddy (one table), eddies, no eddy (outer join)
TINY = ["--scale", "0.01", "--rounds", "1", "--queries", ",".join(map(str, QUERY_NUMBERS)),
        "--dbname", DBNAME, "--no-progress", "--min-seconds", "0"]


@pytest.fixture(scope="module")
def server_dsn(postgresql_proc) -> Iterator[str]:
    """The session server's maintenance database; the harness's TPC-H
    database is dropped after the module."""
    proc = postgresql_proc
    dsn = psycopg.conninfo.make_conninfo(host=proc.host, port=proc.port, user=proc.user,
                                         password=proc.password, dbname="postgres")
    yield dsn
    with connect(dsn) as c:
        c.execute(f"DROP DATABASE IF EXISTS {DBNAME} WITH (FORCE)")


def test_tiny_run_writes_well_formed_results(server_dsn, tmp_path, capsys):
    """At SF 0.01, one round, four queries: every (configuration, query, mode)
    ran once, in a fresh backend whose memory was read; every result agreed;
    the plans' Eddy nodes and the planner's reasons are recorded; the totals
    count them; the files are written and the plot is a PNG."""
    out = tmp_path / "tpch"
    assert tb.main(["--dsn", server_dsn, "--out", str(out), *TINY]) == 0
    files = out / "sf0.01"
    doc = json.loads((files / "results.json").read_text())
    assert doc["errors"] == []
    assert doc["load"]["counts"]["region"] == 5 and doc["load"]["counts"]["lineitem"] > 50_000
    assert doc["settings"]["scale"] == 0.01 and doc["settings"]["rounds"] == 1
    assert set(doc["configs"]) == set(tb.DEFAULT_CONFIGS)
    assert doc["configs"]["default"]["work_mem"] == "4MB"
    assert doc["environment"]["eddy_settings"]["eddy.enabled"] == "on"

    names = [QUERIES[n].name for n in QUERY_NUMBERS]
    runs = doc["runs"]
    assert len(runs) == len(tb.DEFAULT_CONFIGS) * len(names) * len(tb.MODES)
    assert {(r["config"], r["query"], r["mode"]) for r in runs} == {
        (c, q, m) for c in tb.DEFAULT_CONFIGS for q in names for m in tb.MODES}
    for r in runs:
        assert r["error"] is None and r["round"] == 0
        assert r["seconds"] > 0
        # a local server: the fresh backend's memory is read before and after
        assert 0 < r["baseline_kb"] <= r["vmhwm_kb"], r
        assert r["anon_peak_kb"] >= r["anon_baseline_kb"] > 0, r
    rows: dict[tuple[str, str], set[int]] = {(r["config"], r["query"]): set() for r in runs}
    for r in runs:
        rows[(r["config"], r["query"])].add(r["rows"])
    assert all(len(v) == 1 for v in rows.values()), rows   # on, off and aa agree

    plans = {(p["config"], p["query"]): p for p in doc["plans"]}
    assert len(plans) == len(tb.DEFAULT_CONFIGS) * len(names)
    for c in tb.DEFAULT_CONFIGS:
        assert plans[(c, "q01")]["eddy_nodes"] == 0
        assert any("fewer than two selection operators" in m for m in plans[(c, "q01")]["reasons"])
        assert plans[(c, "q03")]["eddy_nodes"] >= 1 and "Eddy" in plans[(c, "q03")]["text_on"]
        assert "Eddy" not in plans[(c, "q03")]["text_off"]
        assert plans[(c, "q05")]["eddy_nodes"] >= 1
        assert plans[(c, "q13")]["eddy_nodes"] == 0
        assert any("outer joins" in m for m in plans[(c, "q13")]["reasons"])
    assert plans[("wm64-serial", "q03")]["parallel_off"] is False

    summary = doc["summary"]
    assert len(summary) == len(tb.DEFAULT_CONFIGS) * len(names)
    for s in summary:
        assert s["n"] == 1 and s["ratio"] > 0 and s["aa_ratio"] > 0 and s["errors"] == ""
        # one repeat: the paired ratios are that repeat's, the medians' too
        assert s["paired_ratio"] == pytest.approx(s["ratio"])
        assert s["paired_aa_ratio"] == pytest.approx(s["aa_ratio"])
        assert s["eddy"] == (s["query"] in ("q03", "q05"))
        assert (s["reasons"] == "") == s["eddy"]
    totals = {t["config"]: t for t in doc["totals"]}
    assert set(totals) == set(tb.DEFAULT_CONFIGS)
    for t in totals.values():
        assert t["queries"] == 4 and t["eddy_plans"] == 2 and t["errors"] == 0
        assert t["worst_query"] in names and t["total_ratio"] > 0
        assert t["aa_min"] <= t["aa_max"]
        assert t["paired_aa_min"] <= t["paired_aa_max"] and t["worst_paired_query"] in names
        assert t["over_1_10_paired_eddy"] <= t["over_1_10_paired"] <= t["queries"]
        assert len(t["peak_top"]) == 3

    with open(files / "measurements.csv") as f:
        assert len(list(csv.DictReader(f))) == len(runs)
    with open(files / "summary.csv") as f:
        assert [r["query"] for r in csv.DictReader(f)][:4] == names
    readme = (files / "README.md").read_text()
    assert "TPC-H SF 0.01" in readme and "| default | q03 | yes |" in readme
    png = files / "ratio.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    printed = capsys.readouterr().out
    assert "default: eddy in 2 of 4 plans" in printed and "wm64-parallel" in printed


def test_rerun_reuses_the_database_and_a_difference_fails(server_dsn, tmp_path, monkeypatch,
                                                          capsys):
    """The second run at the same scale reuses the loaded database; a run
    under the eddy whose result differs (a row dropped here) makes the exit
    status 3, with the difference named in results.json (once) and on
    stderr.  A query faster than --min-seconds runs its three modes again
    within the round, in the next order, --max-repeats times at most."""
    real = tb.timed_run

    def drop_a_row(dsn, config, q, mode, rnd, preload, timeout_s):
        run, rows = real(dsn, config, q, mode, rnd, preload, timeout_s)
        if mode == "on" and rows:
            rows = rows[:-1]
        return run, rows

    monkeypatch.setattr(tb, "timed_run", drop_a_row)
    out = tmp_path / "tpch"
    args = [*TINY[:4], "--queries", "3", "--configs", "wm64-serial", "--dbname", DBNAME,
            "--no-progress", "--no-plots", "--min-seconds", "1000", "--max-repeats", "2"]
    assert tb.main(["--dsn", server_dsn, "--out", str(out), *args]) == 3
    doc = json.loads((out / "sf0.01" / "results.json").read_text())
    assert doc["load"]["reused"] is True
    assert [r["mode"] for r in doc["runs"]] == [*tb.round_order(0), *tb.round_order(1)]
    assert all(r["round"] == 0 for r in doc["runs"])
    assert [s["n"] for s in doc["summary"]] == [2]
    assert len(doc["errors"]) == 1
    assert "RESULT DIFFERS: q03 under wm64-serial, eddy on" in doc["errors"][0]
    assert "RESULT DIFFERS" in capsys.readouterr().err
    assert not (out / "sf0.01" / "ratio.png").exists()


def test_confirm_measures_the_suspects_again(server_dsn, tmp_path, monkeypatch):
    """--confirm N: after the rounds, every (configuration, query) whose
    paired ratio is over --confirm-over runs N more rounds, numbered on from
    --rounds, with the result check; the summary is over all runs, and the
    first pass's figures are kept.  Here the runs really run, but their
    times are replaced (eddy on 3x off for q03, equal for q05): q03 is a
    suspect, q05 is not, and a result that differs in a confirmation round
    is still caught."""
    real = tb.timed_run
    calls = {"confirm_on": 0}

    def slow_q03(dsn, config, q, mode, rnd, preload, timeout_s):
        run, rows = real(dsn, config, q, mode, rnd, preload, timeout_s)
        assert run.seconds is not None
        run.seconds = 0.3 if (q.name, mode) == ("q03", "on") else 0.1
        if (q.name, mode) == ("q03", "on") and rnd >= 1:
            calls["confirm_on"] += 1
            rows = rows[:-1] if rows else rows   # a difference in the new rounds
        return run, rows

    monkeypatch.setattr(tb, "timed_run", slow_q03)
    out = tmp_path / "tpch"
    args = [*TINY[:4], "--queries", "3,5", "--configs", "wm64-serial", "--dbname", DBNAME,
            "--no-progress", "--no-plots", "--min-seconds", "0", "--confirm", "2"]
    assert tb.main(["--dsn", server_dsn, "--out", str(out), *args]) == 3
    doc = json.loads((out / "sf0.01" / "results.json").read_text())
    assert doc["settings"]["confirm"] == 2 and doc["settings"]["confirm_over"] == 1.10
    rounds = {(r["query"], r["round"]) for r in doc["runs"]}
    assert rounds == {("q03", 0), ("q05", 0), ("q03", 1), ("q03", 2)}
    assert calls["confirm_on"] == 2
    assert len([r for r in doc["runs"] if r["query"] == "q03"]) == 3 * len(tb.MODES)
    summary = {s["query"]: s for s in doc["summary"]}
    assert summary["q03"]["n"] == 3 and summary["q05"]["n"] == 1
    [c] = doc["confirmed"]
    assert c["config"] == "wm64-serial" and c["query"] == "q03" and c["rounds_added"] == 2
    assert c["first_n"] == 1 and c["n"] == 3
    assert c["first_paired_ratio"] == pytest.approx(3.0) == c["paired_ratio"]
    assert c["paired_ratio"] == pytest.approx(summary["q03"]["paired_ratio"])
    assert any("RESULT DIFFERS: q03 under wm64-serial, eddy on" in e and "round 1" in e
               for e in doc["errors"])
    readme = (out / "sf0.01" / "README.md").read_text()
    assert "Confirmation (`--confirm 2`)" in readme and "| wm64-serial | q03 | 1 |" in readme


def test_paired_ratios_pair_the_runs_of_one_repeat():
    """A paired ratio divides the k-th run of a mode by the k-th eddy-off run
    (they ran back to back); a failed run drops its pair.  The machine slowing
    down by 2x between repeats moves the ratio of medians, not the paired
    ratio."""
    def run(mode: str, seconds: float | None) -> tb.Run:
        return tb.Run("default", "q03", mode, 0, seconds, 1, None, None, None, None, None)
    on = [run("on", x) for x in (1.1, 2.2, 2.2, None)]
    off = [run("off", x) for x in (1.0, 2.0, 2.0, 2.0)]
    assert tb.paired_ratios(on, off) == pytest.approx([1.1, 1.1, 1.1])
    on = [run("on", x) for x in (1.1, 1.1, 2.2)]
    off = [run("off", x) for x in (1.0, 2.0, 2.0)]
    # the ratio of the medians would be 1.1 / 2.0
    assert statistics.median(tb.paired_ratios(on, off)) == pytest.approx(1.1)


def test_compare_orders_and_multisets():
    """Total ORDER BY: the sequence counts; otherwise the ORDER BY keys' sequence
    and the multiset; numeric scale counts in both."""
    from decimal import Decimal
    total, partial = QUERIES[1], QUERIES[3]          # Q1 total, Q3 sorts on (1, 2)
    a = [("x", 1, Decimal("1.5")), ("y", 2, Decimal("2.0"))]
    assert tb.compare(total, a, list(a)) is None
    assert tb.compare(total, a[::-1], a) is not None
    assert tb.compare(total, [("x", 1, Decimal("1.50")), a[1]], a) is not None
    assert tb.compare(total, a[:1], a) == "1 rows against 2"
    tie = [("p", 5, 1), ("q", 5, 1)]
    assert tb.compare(partial, tie[::-1], tie) is None
    assert tb.compare(partial, [("p", 5, 1), ("r", 5, 1)], tie) is not None
    assert tb.compare(partial, [("p", 6, 1), ("q", 5, 1)], [("q", 5, 1), ("p", 6, 1)]) \
        == "ORDER BY keys in another sequence"


def test_help_and_arguments(capsys):
    with pytest.raises(SystemExit):
        tb.main(["--help"])
    text = capsys.readouterr().out
    for option in ("--quick", "--scale", "--dsn", "--configs", "--rounds", "--queries",
                   "--out", "--reload"):
        assert option in text
    with pytest.raises(SystemExit):
        tb.main(["--configs", "default,bogus"])
    assert tb.main(["--queries", "23"]) == 2
    assert tb.main(["--confirm", "-1"]) == 2
    assert tb.dbname_for(1) == "tpch_sf1" and tb.dbname_for(0.1) == "tpch_sf0_1"
