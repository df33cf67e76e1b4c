"""Source scheduling of join eddies (eddy.source_schedule, eddy.source_rates,
eddy.source_delays), read from EXPLAIN ANALYZE counters and results.

Three relations joined along a path, ``r - s - t``; ``r`` and ``t`` have
primary keys on their join columns, so in build order the eddy reads them
first and ``s``, the centre, last."""

from __future__ import annotations

import time

import psycopg
import pytest

from eddytools.db import eddy_nodes, explain_json, multiset, set_gucs, sql_value
from eddytools.joingen import wisconsin_join_ddl, wisconsin_join_query

DIM = 500
ROWS = 20000
QUERY = "SELECT count(*) FROM r JOIN s ON s.rid = r.id JOIN t ON s.tid = t.id"
POLICIES = ("rank", "lottery", "fixed", "random", "cumulative")


@pytest.fixture
def path3(eddy_conn):
    conn = eddy_conn
    conn.execute(f"""
        CREATE TABLE r (id int PRIMARY KEY, v int);
        CREATE TABLE t (id int PRIMARY KEY, v int);
        INSERT INTO r SELECT g, g FROM generate_series(0, {DIM - 1}) g;
        INSERT INTO t SELECT g, g FROM generate_series(0, {DIM - 1}) g;
        CREATE TABLE s AS SELECT g AS id, g % {2 * DIM} AS rid, g % {DIM} AS tid
        FROM generate_series(0, {ROWS - 1}) g;
        ANALYZE r; ANALYZE s; ANALYZE t;
    """)
    set_gucs(conn, join_method="hash", routing_policy="fixed")
    return conn


def history(eddy: dict) -> list[tuple[int, int]]:
    """Runs of 'module x tuples' (a history past 1,000 runs ends in '...')."""
    return [(int(m), int(n)) for m, n in
            (run.split(" x ") for run in eddy["Routing History"].split(", ")
             if run != "...")]


def join_number(eddy: dict, alias: str) -> int:
    (number,) = [op["Operator Number"] for op in eddy["Operators"]
                 if f"{alias}.id" in op.get("Join Condition", "")]
    return number


def tuples_read(eddy: dict) -> dict[str, int]:
    return {name: int(n) for name, n in
            (item.split(" ") for item in eddy["Tuples Read"].split(", "))}


def analyze(conn, **settings) -> tuple[dict, dict]:
    set_gucs(conn, **settings)
    plan = explain_json(conn, QUERY, analyze=True, verbose=True)
    (eddy,) = eddy_nodes(plan)
    return plan, eddy


def test_build_order_reads_one_source_after_another(path3):
    """The default reads r and t, then s: three runs of first choices, and
    the settings' listing is absent from EXPLAIN."""
    plan, eddy = analyze(path3)
    assert "Source Schedule" not in eddy
    runs = history(eddy)
    assert len(runs) <= 3 and runs[-1][1] >= ROWS  # s last (its run may merge with r's or t's)
    assert sum(n for _, n in runs) == 2 * DIM + ROWS
    assert plan["Plans"][0]["Actual Rows"] == ROWS // 2  # s rows with rid < DIM


def test_proportional_schedule_interleaves_and_ends_together(path3):
    """Under the proportional schedule every source is read in full,
    interleaved at rates proportional to the planner's rows: the first
    choices alternate between the joins many times, and the answer is
    vanilla's."""
    _, eddy = analyze(path3, source_schedule="proportional")
    assert eddy["Source Schedule"] == "proportional"
    assert tuples_read(eddy) == {"r": DIM, "s": ROWS, "t": DIM}
    runs = history(eddy)
    assert len(runs) > 50, runs[:10]
    # both joins take first choices from the start: r and t are not read first
    assert len({m for m, _ in runs[:20]}) == 2, runs[:20]
    answer = sql_value(path3, QUERY)
    set_gucs(path3, enabled="off")
    assert sql_value(path3, QUERY) == answer


def test_source_rates_change_the_interleaving(path3):
    """A rate of 10 on s makes the schedule read s ten times faster than its
    size asks for: more of s's tuples arrive before their partners in r and
    t, so the STAIRs store more of them."""
    def inserted(eddy: dict) -> int:
        return sum(op.get("Inserted", 0) for op in eddy["Operators"])

    _, even = analyze(path3, source_schedule="proportional")
    _, fast_s = analyze(path3, source_schedule="proportional", source_rates="s=10")
    assert fast_s["Source Schedule"] == "proportional (s rate 10)"
    assert tuples_read(fast_s) == tuples_read(even) == {"r": DIM, "s": ROWS, "t": DIM}
    assert inserted(fast_s) > inserted(even) + ROWS // 10, (inserted(fast_s), inserted(even))


def test_a_delayed_source_does_not_block_the_others(path3):
    """With r held back for 300 ms, the eddy reads t and s first (its first
    choices start with t's join, not r's), and the answer is unchanged."""
    plan, eddy = analyze(path3, source_delays="r=300")
    assert eddy["Source Schedule"] == "build (r delay 300 ms)"
    runs = history(eddy)
    assert runs[0][0] == join_number(eddy, "t")
    assert runs[-1][0] == join_number(eddy, "r")
    assert runs[-1][1] >= DIM
    assert tuples_read(eddy) == {"r": DIM, "s": ROWS, "t": DIM}
    assert plan["Plans"][0]["Actual Rows"] == ROWS // 2  # s rows with rid < DIM


def test_waiting_for_delayed_sources_honours_the_timeout(path3):
    """When every source is held back the eddy sleeps on its latch; a
    statement_timeout ends the wait with PostgreSQL's error, promptly."""
    set_gucs(path3, source_delays="r=60000, s=60000, t=60000")
    path3.execute("SET statement_timeout = '200ms'")
    start = time.monotonic()
    with pytest.raises(psycopg.errors.QueryCanceled):
        path3.execute(QUERY)
    assert time.monotonic() - start < 5
    path3.execute("RESET statement_timeout")


@pytest.mark.parametrize("value,detail", [
    ("s", 'is not of the form name=value'),
    ("s=0", "between 1e-06 and 1e+06"),
    ("=2", "a relation name is missing"),
    ("s=two", "must be a number"),
])
def test_bad_rates_are_refused(path3, value, detail):
    """SET refuses a malformed list with the reason in its detail."""
    with pytest.raises(psycopg.errors.InvalidParameterValue) as e:
        path3.execute(f"SET eddy.source_rates = '{value}'")
    assert detail in (e.value.diag.message_detail or "")


def test_bad_delays_are_refused(path3):
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        path3.execute("SET eddy.source_delays = 'r=-1'")


@pytest.mark.parametrize("shape", ["star", "path", "cycle"])
def test_interleaved_joins_match_vanilla(eddy_conn, shape):
    """Wisconsin joins of 2..6 tables return PostgreSQL's rows under the
    proportional schedule, with rates and a delay, under every policy."""
    conn = eddy_conn
    for k in range(1, 7):
        conn.execute(wisconsin_join_ddl(k))
    failures = []
    for n in range(2, 7):
        for variant in ("count", "project", "filtered"):
            q = wisconsin_join_query(shape, n, variant)
            set_gucs(conn, enabled="off")
            want = multiset(conn.execute(q).fetchall())
            for policy in POLICIES:
                set_gucs(conn, enabled="on", routing_policy=policy, reopt_frequency=10,
                         source_schedule="proportional", source_rates="t2=5, t3=0.2",
                         source_delays="t1=20")
                assert eddy_nodes(explain_json(conn, q)), q
                got = multiset(conn.execute(q).fetchall())
                if got != want:
                    failures.append(f"{policy}: {q}")
    assert not failures, failures
