"""The Eddies paper's experiments (python -m eddytools.eddies_paper, Figures 4
to 13) on small data: the CLI end to end (every configuration returns
PostgreSQL's answer, the files and goals are written), and the routing
counters the paper's figures are about, never times: the share of tuples
routed in the optimal order (Figures 6 and 9), the switch after a cost
change (Figures 10 and 11, per period of the scan) and the routing with a
delayed source (Figures 12 and 13).  Also delay_phased(), the cost that
changes while a query runs."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import psycopg
import pytest

from eddytools import eddies_paper as ep
from eddytools import harness
from eddytools.db import explain_json, plan_nodes

SMALL = ["--quick", "--scale", "0.1", "--no-progress"]


def routing(doc: dict, figure: str, case: str, config: str) -> dict:
    rows = [r for r in doc["routing"]
            if (r["figure"], r["case"], r["config"]) == (figure, case, config)]
    assert len(rows) == 1, (figure, case, config, rows)
    return rows[0]


def test_quick_run_selections_joins_and_delay(pg_dsn, tmp_path):
    """--quick over Figures 4-9 and 12-13 at a tenth of the paper's sizes:
    every configuration of every case measured, with PostgreSQL's answer;
    vanilla kept each static order; the routing shares are those of a
    working eddy: rank sends at least 80% of the tuples to the selection it
    should run first (costs 1 against 5 units; selectivities 10% or 90%
    against 50%: Figure 6), the paper's lottery a majority, the naive
    (random) eddy about half; S's tuples go to the R-S join first once
    learnt (Figure 9: rank, with the index join and with two hash joins),
    and do so with R delayed (Figure 13)."""
    out = tmp_path / "eddies"
    argv = ["--dsn", pg_dsn, "--out", str(out), *SMALL,
            "--figures", "e4,e5,e6,e7,e8,e9,e12,e13"]
    status = ep.main(argv)
    doc = json.loads((out / "results.json").read_text())
    assert doc["errors"] == [], doc["errors"]
    assert status == 0

    runs = doc["runs"]
    cases = {(r["figure"], r["case"]) for r in runs}
    assert cases == {("e4", "c1=1"), ("e4", "c1=9"), ("e5", "s1=10%"), ("e5", "s1=90%"),
                     ("e7", "hash+index,cost=10"), ("e8", "rs=20%"), ("e8", "rs=180%"),
                     ("e12", "rs=20%,r delayed 30 ms")}
    eddies = {"rank", "lottery", "lottery-window", "random"}
    want = {"e4": {"base", "static-21"} | eddies, "e5": {"base", "static-21"} | eddies,
            "e7": {"base", "static-rs-t", "static-st-r"} | eddies,
            "e8": {"base", "shj-rs-t", "shj-st-r"} | eddies,
            "e12": {"base", "shj-rs-t", "shj-st-r", "rank", "lottery-window", "migration",
                    "migration-greedy"}}
    for figure, case in cases:
        measured = {r["config"] for r in runs if (r["figure"], r["case"]) == (figure, case)}
        assert measured == want[figure], (figure, case)
        answers = {(r["rows"], r["digest"]) for r in runs
                   if (r["figure"], r["case"]) == (figure, case)}
        assert len(answers) == 1, (figure, case, answers)
        assert all(r["rows"] > 0 for r in runs if (r["figure"], r["case"]) == (figure, case))
    # the eddies' counters: one EXPLAIN ANALYZE per eddy and case
    assert len(doc["counters"]) == len(doc["routing"]) == 4 * 4 + 4 * 3 + 4

    # Figure 6: rank routes >= 80% to the selection that should go first
    assert routing(doc, "e4", "c1=1", "rank")["s1_first"] >= 0.8
    assert routing(doc, "e4", "c1=9", "rank")["s1_first"] <= 0.2
    assert routing(doc, "e5", "s1=10%", "rank")["s1_first"] >= 0.8
    assert routing(doc, "e5", "s1=90%", "rank")["s1_first"] <= 0.2
    for figure, case in (("e4", "c1=1"), ("e4", "c1=9"), ("e5", "s1=10%"), ("e5", "s1=90%")):
        assert routing(doc, figure, case, "rank")["optimal_share"] >= 0.8
        if case != "c1=9":
            # a cost ratio of 1.8 (9 against 5 units) leaves the lottery at
            # 60-70% in the committed run: asserted where the gap is wider
            assert routing(doc, figure, case, "lottery")["optimal_share"] > 0.5
            assert routing(doc, figure, case, "lottery-window")["optimal_share"] > 0.5
        assert 0.3 <= routing(doc, figure, case, "random")["s1_first"] <= 0.7
        # the delay work (Tuples In times the predicates' costs): rank's is
        # near the better static order's, random's between the two orders'
        assert routing(doc, figure, case, "rank")["work_vs_best_static"] <= 1.15
        rnd = routing(doc, figure, case, "random")
        assert min(rnd["work_static_12"], rnd["work_static_21"]) <= rnd["work_units"] \
            <= max(rnd["work_static_12"], rnd["work_static_21"])
    # Figure 9: S's tuples first to R-S once learnt
    assert routing(doc, "e7", "hash+index,cost=10", "rank")["optimal_share_learned"] >= 0.8
    for case in ("rs=20%", "rs=180%"):
        # rank, the default policy (issue 47's "the eddy").  The lottery is
        # not asserted: once each target times its own visits (routing.c,
        # Costs) it measures S-T's visit as the cheaper (0.27 against 0.36
        # us) and weighs its tickets by that, 51-59% to R-S at the paper's
        # size; its 82-92% before rested on S-T's cost over-estimated 6x
        # from a few samples
        assert routing(doc, "e8", case, "rank")["optimal_share_learned"] >= 0.8
        assert routing(doc, "e8", case, "random")["optimal_share"] < 0.7
    # Figure 13: with R delayed, S's tuples still go to R-S first
    delayed = routing(doc, "e12", "rs=20%,r delayed 30 ms", "rank")
    assert delayed["optimal_share_learned"] >= 0.8
    assert sum(n for _, n in delayed["s_runs"]) == delayed["s_tuples"] == 8000

    # goals, files, the record of the build and the command
    assert {g["figure"] for g in doc["goals"]} >= {"e4", "e5", "e7", "e8", "e9", "e12"}
    assert all(g["status"] in ("pass", "fail", "n/a") for g in doc["goals"])
    assert harness.record_problems(doc) == []
    assert doc["settings"]["command"] == "python -m eddytools.eddies_paper " + shlex.join(
        a for a in argv if a not in ("--dsn", pg_dsn))
    for name in ("measurements.csv", "summary.csv", "counters.csv", "routing.csv",
                 "eddies_fig4-6.png", "eddies_fig7-9.png", "eddies_fig12-13.png"):
        assert (out / name).stat().st_size > 0, name


def phased_counters(conn: psycopg.Connection, figure: str, config: str) -> dict:
    """The routing row of ``config`` in Figure 10 or 11 (paper's sizes)."""
    args = ep.build_parser().parse_args(["--figures", figure])
    ep.resolve(args)
    ep.load_data(conn, args.scale, [figure], lambda _: None)
    case = ep.figure10_case(args) if figure == "e10" else ep.figure11_case(args)
    cfg = next(c for c in case.configs if c.name == config)
    result = ep.Result(settings={})
    result.counters = [{"figure": case.figure, "case": case.case, "config": cfg.name,
                        **ep.routing_counters(conn, cfg)}]
    ep.routing_rows(result, case)
    return result.routing[0]


def test_changing_cost_switches_the_order(eddy_conn):
    """Figure 10 at the paper's size (30,000 rows, two index joins matching
    1%, their costs swapping at row 15,000): the windowed lottery sends most
    of the first half to the join cheap then (J1) and most of the second to
    the other (J2), counted per half from the routing history."""
    row = phased_counters(eddy_conn, "e10", "lottery-window")
    j1, j2 = row["j1_first_per_period"], row["j2_first_per_period"]
    assert [a + b for a, b in zip(j1, j2, strict=True)] == [15_000, 15_000]
    assert j1[0] >= 0.7 * 15_000          # J1 cheap: first
    assert j2[1] >= 0.5 * 15_000          # J2 cheap: first after the switch
    assert row["cheap_first_per_period"][0] >= 0.7


def test_alternating_costs_are_counted_per_period(eddy_conn):
    """Figure 11 (4,000 rows, costs toggled every 1,000): the routing history
    gives every row's first choice, 1,000 per period."""
    row = phased_counters(eddy_conn, "e11", "lottery-window")
    totals = [a + b for a, b in zip(row["j1_first_per_period"], row["j2_first_per_period"],
                                    strict=True)]
    assert totals == [1000] * 4
    assert not row["history_truncated"]


def test_alternating_costs_followed_in_every_period(eddy_conn):
    """Issue 47's goal for Figure 11: at least 70% of each period first to
    the join cheap in that period.  It rests on each target timing some of
    its own visits (routing.c, Costs: a join that gets one probe in ten
    while the other goes first is still timed a few times an epoch) and on
    the windowed lottery's costs being of the current window (measured
    before both: 82%, 37%, 21%, 0%; after: 100%, 72%, 93%, 86%)."""
    row = phased_counters(eddy_conn, "e11", "lottery-window")
    assert all(s >= 0.7 for s in row["cheap_first_per_period"])


def test_split_by_period():
    """per_period and share over a routing history's runs."""
    runs = [(1, 150), (2, 100), (1, 50)]
    assert ep.per_period(runs, 100) == [{1: 100}, {1: 50, 2: 50}, {2: 50, 1: 50}]
    assert ep.share(runs, 1) == pytest.approx(200 / 300)
    assert ep.share(runs, 1, skip=150) == pytest.approx(50 / 150)
    assert ep.share(runs, None) is None
    assert ep.optimal_selection(1, 50, 5, 50) == "s1"
    assert ep.optimal_selection(5, 90, 5, 50) == "s2"
    assert ep.optimal_selection(5, 50, 5, 50) is None


def test_delay_phased_is_an_index_join_probe(eddy_conn):
    """delay_phased on the outer side of a join key: the eddy makes it an
    index join (STABLE allows it) and returns PostgreSQL's rows."""
    conn = eddy_conn
    conn.execute("CREATE TABLE dq AS SELECT i AS id, i % 40 AS k FROM generate_series(0, 199) i")
    conn.execute("CREATE TABLE dt AS SELECT i AS k FROM generate_series(0, 19) i")
    conn.execute("CREATE UNIQUE INDEX ON dt (k)")
    conn.execute("ANALYZE dq; ANALYZE dt")
    query = ("SELECT dq.id, dt.k FROM dq, dt WHERE dt.k = delay_phased(dq.k, dq.id, 0, 1, 50) "
             "ORDER BY dq.id")
    conn.execute("SET eddy.join_method = index")
    plan = explain_json(conn, query)
    ops = [op for n in plan_nodes(plan) if n.get("Custom Plan Provider") == "Eddy"
           for op in n.get("Operators", [])]
    assert [op["Operator Type"] for op in ops] == ["Index Join"]
    assert "delay_phased" in ops[0]["Join Condition"]
    got = conn.execute(query).fetchall()
    conn.execute("SET eddy.enabled = off")
    assert got == conn.execute(query).fetchall()
    assert len(got) == 100


@pytest.mark.parametrize("args", ["0, -1, 0, 10", "0, 0, -1, 10", "0, 0, 0, 0", "-1, 0, 0, 10"])
def test_delay_phased_rejects_bad_arguments(eddy_conn, args):
    """Negative delays or positions and periods below 1: SQLSTATE 22023."""
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        eddy_conn.execute(f"SELECT delay_phased(1, {args})")


def test_usage_errors(tmp_path):
    """Bad options: exit status 2 before touching a server."""
    assert ep.main(["--rounds", "0", "--out", str(tmp_path)]) == 2
    assert ep.main(["--costs", "0", "--out", str(tmp_path)]) == 2
    with pytest.raises(SystemExit):
        ep.main(["--figures", "e3"])


def test_figures_name_their_experiments():
    """e6, e9, e13 are counters of e4-e5, e7-e8, e12."""
    assert ep.experiments_of(["e6"]) == ["e4", "e5"]
    assert ep.experiments_of(["e9", "e13"]) == ["e7", "e8", "e12"]
    assert ep.experiments_of(list(ep.FIGURES)) == list(ep.EXPERIMENTS)


def test_default_folder_is_untracked():
    assert Path("experiments-results/eddies") == ep.DEFAULT_OUT


def test_experiments_command_runs_the_eddies_figures(monkeypatch, tmp_path):
    """make experiments' command (eddytools.experiments) takes e4 .. e13 and
    hands them to eddies_paper with OUT/eddies, running no STAIRs figure
    when none is asked for."""
    from eddytools import experiments as ex

    assert ex.EDDIES_FIGURES == ep.FIGURES
    calls: list[list[str]] = []

    def fake_main(argv: list[str]) -> int:
        calls.append(argv)
        return 0

    monkeypatch.setattr(ep, "main", fake_main)
    assert ex.main(["--dsn", "x", "--out", str(tmp_path), "--quick",
                    "--figures", "e12,e4"]) == 0
    assert calls == [["--dsn", "x", "--out", str(tmp_path / "eddies"), "--figures",
                      "e4,e12", "--quick"]]
    assert not (tmp_path / "results.json").exists()
