"""The STAIRs experiments CLI (python -m eddytools.experiments) end to end on
tiny data: real server, real Spark loader, every figure, results files,
plots, the answer check against Base and the plan checks."""

from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path

import pytest

from eddytools import experiments as ex
from eddytools import joinorder as jo

# the STAIRs figures only (the Eddies paper's, e4 .. e13, run by default too,
# are tests/test_eddies_paper.py's)
TINY = ["--quick", "--rst-rows", "2000", "--sf", "0.01", "--syn-scale", "0.02",
        "--setups", "3", "--rounds", "2", "--setup-rounds", "1", "--no-progress",
        "--figures", "9,7,8"]


def test_quick_run_on_tiny_data(pg_dsn, tmp_path, capsys):
    """--quick on tiny tables loads rst, TPC-H and the scaled synthetic20 with
    the Spark loader, runs Figures 9, 7 and 8 and writes every output file:
    each measured configuration returned Base's answer in every round (same
    row count and digest as Base in the same case), the A/A configuration
    is there, unavailable settings are listed rather than fatal, the goals
    are computed and the plots are PNGs."""
    out = tmp_path / "exp"
    status = ex.main(["--dsn", pg_dsn, "--out", str(out), *TINY])
    doc = json.loads((out / "results.json").read_text())
    assert doc["errors"] == [], doc["errors"]
    assert status == 0

    runs = doc["runs"]
    cases = {(r["figure"], r["case"]) for r in runs}
    assert ("9", "rows=2000") in cases and ("7i", "sf=0.01") in cases
    assert {c for f, c in cases if f == "8"} == {"setup=0", "setup=1", "setup=2"}
    unavailable = {(u["figure"], u["config"]) for u in doc["unavailable"]}
    for figure, case in cases:
        measured = {r["config"] for r in runs if (r["figure"], r["case"]) == (figure, case)}
        if figure == "9":
            want = {"base", "base-aa", "shj-rs-t", "shj-st-r", "eddy", "eddyjoins", "stairs",
                    "stairs-greedy", "stems"}
        elif figure == "7i":
            want = {"base", "base-aa", "shj-co-l", "shj-ol-c", "eddyjoins", "stairs",
                    "stairs-greedy", "stems", "right"}
        elif figure == "7ii":
            want = {"eddyjoins", "stairs"}
        else:
            want = {"base", "eddy", "shj", "eddyjoins", "stairs", "stems"}  # greedy: --long
        want = {c for c in want if (figure, c) not in unavailable}
        assert measured == want, (figure, case, measured ^ want)
        # verified against Base: one answer per case, the one Base returned
        answers = {(r["rows"], r["digest"]) for r in runs
                   if (r["figure"], r["case"]) == (figure, case)}
        assert len(answers) == 1, (figure, case, answers)
        if figure != "7ii":
            base = {(r["rows"], r["digest"]) for r in runs
                    if (r["figure"], r["case"], r["config"]) == (figure, case, "base")}
            assert base == answers
        rounds = {r["round"] for r in runs if (r["figure"], r["case"]) == (figure, case)}
        assert rounds == ({0} if figure in ("8", "7ii") else {0, 1})  # --quick: 1 round
    assert all(r["seconds"] > 0 for r in runs)
    assert {r["rows"] for r in runs if r["figure"] == "8"} == {1}     # count + digest row
    # the eddies' counters, and unavailable configurations give reasons
    assert {c["config"] for c in doc["counters"] if c["figure"] == "9"} >= {"stairs", "eddy"}
    assert all(c.get("tuples_routed", 0) > 0 for c in doc["counters"])
    assert all(u["reason"].startswith("SET eddy.") for u in doc["unavailable"])

    aa = [s for s in doc["summary"] if s["config"] == "base-aa"]
    assert aa and all(s["aa_ratio_min"] <= s["aa_ratio_median"] <= s["aa_ratio_max"]
                      for s in aa)
    bases = [s for s in doc["summary"] if s["config"] == "base"]
    assert all(s["vs_base"] == pytest.approx(1.0) for s in bases)

    figures = {g["figure"] for g in doc["goals"]}
    assert figures == {"9", "7", "8"}
    assert all(g["status"] in ("pass", "fail", "n/a") for g in doc["goals"])
    assert len(doc["setups"]) == 3
    assert {s["shape"] for s in doc["setups"]} <= {"path4", "path5", "star4", "star5"}

    with open(out / "measurements.csv") as f:
        assert len(list(csv.DictReader(f))) == len(runs)
    with open(out / "fig7iii_output.csv") as f:
        points = list(csv.DictReader(f))
    assert {p["config"] for p in points} >= {"base", "stairs", "right"}
    for name in ("summary.csv", "counters.csv", "fig8_setups.csv"):
        assert (out / name).stat().st_size > 0
    for png in ("fig9.png", "fig7.png", "fig8.png"):
        data = (out / png).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, png

    printed = capsys.readouterr().out
    assert "figure 9 rows=2000" in printed and "goals:" in printed
    assert "figure 8: 3 setups" in printed

    # Figure 8 again, with 2 setups, into the same folder: Figures 9 and 7
    # are kept as they were (runs, counters, goals), Figure 8 is replaced
    status = ex.main(["--dsn", pg_dsn, "--out", str(out), *TINY, "--figures", "8",
                      "--setups", "2", "--no-load", "--keep-other-figures",
                      "--skip-configs", "stems"])
    again = json.loads((out / "results.json").read_text())
    assert status == 0 and again["errors"] == [], again["errors"]
    def rows(d: dict, key: str, keep: bool) -> list:
        return [r for r in d[key] if (r["figure"] != "8") == keep]
    for key in ("runs", "counters", "goals"):
        assert rows(again, key, True) == rows(doc, key, True), key
    assert {r["case"] for r in rows(again, "runs", False)} == {"setup=0", "setup=1"}
    # greedy only under --long; stems skipped by name, and listed so
    assert not {"stairs-greedy", "stems"} & {r["config"] for r in rows(again, "runs", False)}
    assert {"figure": "8", "config": "stems",
            "reason": "skipped (--skip-configs)"} in again["unavailable"]
    assert len(again["setups"]) == 2 and again["output_times"] == doc["output_times"]
    assert again["settings"]["kept_figures"]["figures"] == ["7", "9"]
    assert {g["figure"] for g in again["goals"]} == {"9", "7", "8"}


def _measurer(conn, result):
    return ex.Measurer(conn, result, ex.Availability(conn), lambda _: None)


def test_wrong_answer_and_wrong_plan_are_errors(eddy_conn):
    """A configuration whose answer differs from Base's is an error and none
    of its runs is kept; a static SHJ whose plan is not the intended join
    order is refused before it runs; an unknown setting makes the
    configuration unavailable, not an error."""
    conn = eddy_conn
    conn.execute("CREATE TABLE a AS SELECT g AS id, g % 7 AS k FROM generate_series(1, 300) g")
    conn.execute("CREATE TABLE b AS SELECT g AS id, g % 5 AS k FROM generate_series(1, 200) g")
    conn.execute("CREATE TABLE c AS SELECT g AS id FROM generate_series(1, 100) g")
    conn.execute("ANALYZE a, b, c")
    query = "SELECT a.id, b.id, c.id FROM a JOIN b ON a.k = b.k JOIN c ON c.id = b.id"
    wrong = query + " WHERE a.id % 2 = 0"
    forced = ("SELECT a.id, b.id, c.id FROM (a JOIN b ON a.k = b.k) "
              "JOIN c ON c.id = b.id")
    case = ex.Case("t", "x", ["a", "b", "c"], [
        ex.Config("base", "base", ex.BASE_GUCS, query),
        ex.Config("shj-ab-c", "shj", ex.SHJ_GUCS, forced, [["a", "b"], ["a", "b", "c"]]),
        ex.Config("shj-bc-a", "shj", ex.SHJ_GUCS, forced, [["b", "c"], ["a", "b", "c"]]),
        ex.Config("stairs", "eddy", ex.eddy_gucs("rank", **{"eddy.migration": "guarded"}),
                  query),
        ex.Config("wrong", "eddy", ex.eddy_gucs("rank"), wrong),
        ex.Config("nope", "eddy", ex.eddy_gucs("rank", **{"eddy.no_such_setting": "1"}), query),
    ])
    result = ex.Result(settings={})
    ref = _measurer(conn, result).measure(case, rounds=2)
    assert ref is not None and ref[0] > 0
    assert {r.config for r in result.runs} == {"base", "shj-ab-c", "stairs"}
    assert len(result.errors) == 2, result.errors
    assert any(e.startswith("wrong plan: figure t x shj-bc-a: static SHJ join order")
               for e in result.errors)
    assert any(e.startswith("answer mismatch: figure t x under wrong") for e in result.errors)
    assert [u["config"] for u in result.unavailable] == ["nope"]
    assert {c["config"] for c in result.counters} == {"stairs"}
    # a scan that stopped early must not make the next one start mid-table
    ex.configure(conn, {})
    assert conn.execute("SHOW synchronize_seqscans").fetchone()[0] == "off"


def test_figure8_setups_are_seeded_and_bounded():
    """Setups depend only on the seed and their number; their join keys give
    the drawn fan-outs, and no connected part of a query is estimated above
    the cap."""
    tables = ex.syn_tables(1.0)
    a = [ex.make_setup(i, 7, tables, ex.SYN_CAP) for i in range(30)]
    b = [ex.make_setup(i, 7, tables, ex.SYN_CAP) for i in range(30)]
    assert [s.describe() for s in a] == [s.describe() for s in b]
    assert a[0].describe() != ex.make_setup(0, 8, tables, ex.SYN_CAP).describe()
    for s in a:
        assert s.estimate <= ex.SYN_CAP
        assert sorted(s.order) == sorted(s.tables)
        assert len(s.join_sets()) == len(s.tables) - 1
        for e in s.edges:
            size = jo.edge_size(e, s.rows)
            assert size == pytest.approx(e.fanout * max(s.rows[e.a], s.rows[e.b]),
                                         rel=0.05, abs=2 * max(s.rows[e.a], s.rows[e.b]) / 1000)


def test_help_and_defaults(capsys):
    """--help documents the options; by default the results go to the
    untracked experiments-results/."""
    with pytest.raises(SystemExit) as e:
        ex.main(["--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    for option in ("--quick", "--figures", "--seed", "--rounds", "--long", "--dsn", "--out",
                   "--policy", "--setups"):
        assert option in text
    with pytest.raises(SystemExit) as e:
        ex.main(["--figures", "9,6"])
    assert e.value.code == 2
    args = ex.build_parser().parse_args(["--long"])
    ex.resolve(args)
    assert args.setups == ex.LONG_SETUPS and args.rst_rows == [50_000, 500_000]
    assert str(args.out) == "experiments-results"
    gitignore = (Path(__file__).resolve().parent.parent / ".gitignore").read_text()
    assert "experiments-results/" in gitignore.split()


def test_figure8_ratios_pair_the_rounds():
    """Figure 8's ratios divide the two configurations' times of one round
    and take the median over the rounds: a machine that slows down by 1.7x
    between rounds, as these do, leaves a setup whose STAIRs and EddyJoins
    do the same work at 1.0, where the ratio of the medians over the rounds
    puts STAIRs 1.69x slower and fails the 1.5x goal on noise alone."""
    result = ex.Result(settings={})
    result.setups = [{"setup": 0, "delays_ms": {}, "shj_plan_excess": 1.0,
                      "shj_plan_excess_any": 1.0},
                     {"setup": 1, "delays_ms": {}, "shj_plan_excess": 3.0,
                      "shj_plan_excess_any": 3.0}]
    times = {  # round -> config -> seconds; the machine 1.7x slower from round 1 on
        "setup=0": {0: {"eddyjoins": 0.075, "stairs": 0.076, "shj": 0.070},
                    1: {"eddyjoins": 0.074, "stairs": 0.127, "shj": 0.120},
                    2: {"eddyjoins": 0.125, "stairs": 0.128, "shj": 0.113}},
        "setup=1": {0: {"eddyjoins": 0.20, "stairs": 0.10, "shj": 0.30},
                    1: {"eddyjoins": 0.34, "stairs": 0.17, "shj": 0.51},
                    2: {"eddyjoins": 0.34, "stairs": 0.17, "shj": 0.51}},
    }
    for case, rounds in times.items():
        for k, configs in rounds.items():
            for config, seconds in configs.items():
                result.runs.append(ex.Run("8", case, config, k, seconds, 1, "d"))
    ex.summarize(result)
    paired = dict(ex.figure8_pairs(result, "eddyjoins"))
    by_medians = dict(ex.figure8_median_pairs(result, "eddyjoins"))
    assert paired["setup=0"] == pytest.approx(0.125 / 0.128)
    assert by_medians["setup=0"] == pytest.approx(0.075 / 0.127)
    assert paired["setup=1"] == pytest.approx(2.0) == by_medians["setup=1"]
    assert dict(ex.figure8_pairs(result, "shj"))["setup=0"] == pytest.approx(0.070 / 0.076)
    # a round where one of the two failed counts for neither
    result.runs = [r for r in result.runs if not (r.round == 2 and r.config == "stairs")]
    assert dict(ex.figure8_pairs(result, "eddyjoins"))["setup=0"] == pytest.approx(
        statistics.median([0.075 / 0.076, 0.074 / 0.127]))

    args = ex.build_parser().parse_args(["--figures", "8"])
    ex.resolve(args)
    ex.compute_goals(result, args)
    goals = {g.goal: g for g in result.goals}
    worst = goals["STAIRs never slower than EddyJoins by > 1.5x"]
    assert worst.status == "pass" and "by the medians over the rounds: 1.69x" in worst.value
    # setup 0, whose random plan is the best there is, is the one the SHJ wins
    shj = goals["STAIRs faster than SHJ in >= 90% of setups"]
    assert shj.status == "fail" and shj.value.startswith("1/2 ")
    assert ("the random plan the best of all plans (bushy included) in 1: "
            "STAIRs faster in 0 of them") in shj.value
    # restated (issue 48): only setup 1 has something to repair, and STAIRs win it
    repaired = goals["STAIRs faster than SHJ in >= 95% of setups with SHJ plan >= 1.1x best"]
    assert repaired.status == "pass" and repaired.value.startswith("1/1 ")
    assert goals["eddy (defaults) never over 1.5x Base in any setup"].status == "n/a"


def test_figure8_eddy_defaults_against_base():
    """The eddy with its defaults against PostgreSQL's plan in Figure 8, per
    setup paired by round: a setup at 1.6x fails the 1.5x goal even though
    a machine step makes its ratio of medians look fine."""
    result = ex.Result(settings={})
    result.setups = [{"setup": 0, "delays_ms": {}, "shj_plan_excess": 1.0,
                      "shj_plan_excess_any": 1.0},
                     {"setup": 1, "delays_ms": {}, "shj_plan_excess": 1.5,
                      "shj_plan_excess_any": 1.5}]
    times = {
        "setup=0": {0: {"base": 0.10, "eddy": 0.11, "stairs": 0.12, "shj": 0.2},
                    1: {"base": 0.17, "eddy": 0.18, "stairs": 0.20, "shj": 0.3}},
        "setup=1": {0: {"base": 0.10, "eddy": 0.16, "stairs": 0.12, "shj": 0.1},
                    1: {"base": 0.30, "eddy": 0.48, "stairs": 0.36, "shj": 0.3}},
    }
    for case, rounds in times.items():
        for k, configs in rounds.items():
            for config, seconds in configs.items():
                result.runs.append(ex.Run("8", case, config, k, seconds, 1, "d"))
    ex.summarize(result)
    assert dict(ex.figure8_base_pairs(result, "eddy"))["setup=1"] == pytest.approx(1.6)
    args = ex.build_parser().parse_args(["--figures", "8"])
    ex.resolve(args)
    ex.compute_goals(result, args)
    goals = {g.goal: g for g in result.goals}
    eddy = goals["eddy (defaults) never over 1.5x Base in any setup"]
    assert eddy.status == "fail" and eddy.value.startswith("worst 1.60x (setup=1)"), eddy.value
    assert "over 1.5x in 1/2" in eddy.value and "STAIRs / Base" in eddy.value
    # setup 1 (1.5x the best plan's tuples) has something to repair; the SHJ wins it
    repaired = goals["STAIRs faster than SHJ in >= 95% of setups with SHJ plan >= 1.1x best"]
    assert repaired.status == "fail" and repaired.value.startswith("0/1 ")
