"""The static symmetric hash join's schedule (shj.c): eddy.source_delays,
eddy.source_rates and eddy.source_schedule = proportional apply to its
base-relation inputs as they do to an eddy's sources, read from EXPLAIN
ANALYZE and from results.

A delayed input is not read before its delay has passed while the other
input has tuples; a join whose input is another static SHJ polls it and
reads its other input while nothing under that child is ready; when no
input is ready the join sleeps on its latch, so cancel and
statement_timeout end the wait promptly."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

from eddytools.db import explain_json, multiset, plan_nodes, set_gucs
from eddytools.joingen import wisconsin_join_ddl, wisconsin_join_query

SHJ = "Symmetric Hash Join"
A_ROWS = 20000
B_ROWS = 5000
C_ROWS = 1000


def shj_nodes(plan: dict) -> list[dict]:
    return [n for n in plan_nodes(plan) if n.get("Custom Plan Provider") == SHJ]


def pg_set(conn: psycopg.Connection, **settings) -> None:
    """SET PostgreSQL's own settings (set_gucs prefixes names with eddy.)."""
    for name, value in settings.items():
        conn.execute("SELECT set_config(%s, %s, false)", (name, str(value)))


def static_shj(conn: psycopg.Connection, **settings) -> None:
    """Eddies off, static SHJs on, hash joins only, the join order as
    written; ``settings`` are eddy.* names without the prefix."""
    pg_set(conn, join_collapse_limit=1, enable_nestloop="off", enable_mergejoin="off")
    set_gucs(conn, enabled="off", static_shj="on", **settings)


@pytest.fixture
def abc(eddy_conn):
    """a (20,000 rows) - b (5,000) - c (1,000): a.id = b.id, b.k = c.id."""
    eddy_conn.execute(f"""
        CREATE TABLE a AS SELECT g AS id, g % 100 AS k FROM generate_series(1, {A_ROWS}) g;
        CREATE TABLE b AS SELECT g AS id, g % 100 AS k FROM generate_series(1, {B_ROWS}) g;
        CREATE TABLE c AS SELECT g AS id FROM generate_series(1, {C_ROWS}) g;
        CREATE TABLE e (id int);
        ANALYZE a; ANALYZE b; ANALYZE c; ANALYZE e;
    """)
    return eddy_conn


def analyze(conn: psycopg.Connection, query: str) -> tuple[dict, list[dict]]:
    plan = explain_json(conn, query, analyze=True)
    return plan, shj_nodes(plan)


def first_read_ms(node: dict, alias: str) -> float:
    (item,) = [i for i in node["First Read"].split(", ") if i.startswith(f"{alias} ")]
    assert " after " in item, item
    return float(item.split(" after ")[1].removesuffix(" ms"))


def tuples_read(node: dict) -> dict[str, int]:
    return {name: int(n) for name, n in
            (item.split(" ") for item in node["Tuples Read"].split(", "))}


def test_without_settings_nothing_is_shown_or_paced(abc):
    static_shj(abc)
    _, (node,) = analyze(abc, "SELECT count(*) FROM a JOIN b ON a.id = b.id")
    assert "Source Schedule" not in node and "Tuples Read" not in node
    # alternate reads, inner (b, the smaller) first: b is stored until it ends
    assert node["Inner"]["Inserted"] == B_ROWS


def test_a_delayed_input_is_read_after_its_delay(abc):
    """b held back 300 ms: the join reads all of a meanwhile (a's 20,000
    rows take a few ms), so every a row is stored and no b row is; then it
    sleeps on its latch until b is due, and EXPLAIN ANALYZE shows when b was
    first read."""
    static_shj(abc, source_delays="b=300")
    t0 = time.monotonic()
    _, (node,) = analyze(abc, "SELECT count(*) FROM a JOIN b ON a.id = b.id")
    elapsed = time.monotonic() - t0
    assert node["Source Schedule"] == "alternate (b delay 300 ms)"
    assert tuples_read(node) == {"a": A_ROWS, "b": B_ROWS}
    assert first_read_ms(node, "b") >= 300
    assert node["Outer"]["Inserted"] == A_ROWS
    assert node["Inner"]["Inserted"] == 0   # a had ended: nothing to probe b
    assert node["Actual Rows"] == B_ROWS
    assert node["Latch Waits"] >= 1 and node["Waited"] > 100
    assert elapsed >= 0.3


def test_a_parent_reads_its_other_input_while_its_child_waits(abc):
    """(a JOIN b) JOIN c with b held back: the lower join, polled by the
    upper one, reads a and then has nothing ready, so the upper join reads
    all of c meanwhile (c stored whole, nothing of the lower join's output
    stored), and only the upper join sleeps."""
    static_shj(abc, source_delays="b=300")
    _, (top, low) = analyze(
        abc, "SELECT count(*) FROM (a JOIN b ON a.id = b.id) JOIN c ON c.id = b.k")
    assert "(b delay 300 ms)" in low["Source Schedule"]
    assert first_read_ms(low, "b") >= 300
    assert top["Inner"]["Inserted"] == C_ROWS
    assert top["Outer"]["Inserted"] == 0
    assert top["Latch Waits"] >= 1
    assert "Latch Waits" not in low       # the polled join never sleeps
    assert top["Actual Rows"] == B_ROWS - B_ROWS // 100   # b.k = 0 matches no c


def test_delays_of_a_tree_count_from_its_first_read(abc):
    """c (upper join) due at 100 ms, b (lower join) at 300 ms: both first
    reads come after their own delay, counted from the same start."""
    static_shj(abc, source_delays="b=300, c=100")
    _, (top, low) = analyze(
        abc, "SELECT count(*) FROM (a JOIN b ON a.id = b.id) JOIN c ON c.id = b.k")
    assert 100 <= first_read_ms(top, "c") < 300
    assert first_read_ms(low, "b") >= 300


def test_an_empty_input_ends_the_join_without_waiting(abc):
    """An empty input ends the join at once: a delayed other input (60 s)
    is never waited for."""
    static_shj(abc, source_delays="a=60000")
    t0 = time.monotonic()
    assert abc.execute("SELECT count(*) FROM a JOIN e ON a.id = e.id").fetchone() == (0,)
    assert time.monotonic() - t0 < 5


def test_rescans_wait_again(abc):
    """A static SHJ under a SubPlan is rescanned per outer row: each loop
    starts its delay again (the join sleeps in every loop)."""
    query = ("SELECT o, (SELECT count(*) FROM b JOIN c ON c.id = b.k WHERE b.id % 3 = o) "
             "FROM generate_series(0, 2) o")
    set_gucs(abc, enabled="off")
    want = multiset(abc.execute(query).fetchall())
    static_shj(abc, source_delays="c=40, b=40")
    assert multiset(abc.execute(query).fetchall()) == want
    _, (node,) = analyze(abc, query)
    assert node["Actual Loops"] == 3
    assert node["Latch Waits"] >= 3
    assert node["Waited"] >= 3 * 40 * 0.8
    assert first_read_ms(node, "c") >= 40


def test_proportional_schedule_and_rates(abc):
    """Under the proportional schedule the two inputs end together: a (4x
    b's rows) and b are read 4:1, so both keep being stored to the end;
    with a rate of 10^6 on b, b's share stays below a's first one: b is read
    first and whole, and no a row is stored."""
    query = "SELECT count(*) FROM a JOIN b ON a.id = b.id"
    static_shj(abc, source_schedule="proportional")
    _, (node,) = analyze(abc, query)
    assert node["Source Schedule"] == "proportional"
    assert node["Inner"]["Inserted"] > 0.9 * B_ROWS
    assert node["Outer"]["Inserted"] > 0.9 * A_ROWS
    set_gucs(abc, source_rates="b=1000000")
    _, (node,) = analyze(abc, query)
    assert node["Source Schedule"] == "proportional (b rate 1e+06)"
    assert node["Inner"]["Inserted"] == B_ROWS
    assert node["Outer"]["Inserted"] == 0
    assert node["Actual Rows"] == B_ROWS


def test_a_join_input_is_paced_by_the_base_relations_under_it(abc):
    """Under the proportional schedule a tree of static SHJs reads its base
    relations at their rates, as an eddy reads its sources: the join input
    (a JOIN b) is not read ahead to its end before c is read, so both sides
    of the top join find matches stored by the other.  With c at rate 0.01
    its share passes a's and b's at its first row: c is read after them,
    and its rows find (nearly) every result.  The answers are PostgreSQL's."""
    query = "SELECT count(*) FROM a JOIN b ON a.id = b.id JOIN c ON b.k = c.id"
    abc.execute("SET join_collapse_limit = 1")
    set_gucs(abc, static_shj="off")
    answer = abc.execute(query).fetchone()[0]
    static_shj(abc, source_schedule="proportional")

    def top_join() -> tuple[dict, str, str]:
        _, nodes = analyze(abc, query)
        top = next(n for n in nodes if "c" in tuples_read(n))
        c_side = "Outer" if top["Plans"][0].get("Relation Name") == "c" else "Inner"
        return top, c_side, "Inner" if c_side == "Outer" else "Outer"

    top, c_side, ab_side = top_join()
    assert tuples_read(top)["c"] == C_ROWS
    assert top[c_side]["Matched"] > 0 and top[ab_side]["Matched"] > 0, top
    assert top["Actual Rows"] == answer
    set_gucs(abc, source_rates="c=0.01")
    top, c_side, ab_side = top_join()
    assert top[c_side]["Matched"] >= 0.9 * answer, top
    assert abc.execute(query).fetchone()[0] == answer


def test_statement_timeout_shorter_than_the_delay_cancels_promptly(abc):
    """Both inputs held back 60 s: the join sleeps on its latch, and a
    200 ms statement_timeout ends the wait with PostgreSQL's error."""
    static_shj(abc, source_delays="a=60000, b=60000")
    abc.execute("SET statement_timeout = '200ms'")
    t0 = time.monotonic()
    with pytest.raises(psycopg.errors.QueryCanceled):
        abc.execute("SELECT count(*) FROM a JOIN b ON a.id = b.id")
    assert time.monotonic() - t0 < 3
    abc.execute("RESET statement_timeout")
    # the session is usable afterwards
    static_shj(abc, source_delays="")
    assert abc.execute("SELECT count(*) FROM a JOIN b ON a.id = b.id").fetchone() == (B_ROWS,)


def test_cancel_ends_the_wait(abc):
    """A cancel request (pg_cancel_backend's signal) ends the latch wait."""
    static_shj(abc, source_delays="a=60000, b=60000")
    timer = threading.Timer(0.3, abc.cancel)
    t0 = time.monotonic()
    timer.start()
    try:
        with pytest.raises(psycopg.errors.QueryCanceled):
            abc.execute("SELECT count(*) FROM a JOIN b ON a.id = b.id")
    finally:
        timer.cancel()
    assert time.monotonic() - t0 < 3


@pytest.mark.parametrize("shape", ["star", "path", "cycle"])
def test_delayed_and_paced_joins_match_vanilla(eddy_conn, shape):
    """Wisconsin joins of 2..6 tables under static SHJs in PostgreSQL's join
    order return PostgreSQL's rows with delays (a few ms) on some inputs,
    alternately and under the proportional schedule with rates."""
    conn = eddy_conn
    for k in range(1, 7):
        conn.execute(wisconsin_join_ddl(k))
    pg_set(conn, enable_nestloop="off", enable_mergejoin="off")
    failures = []
    for n in range(2, 7):
        for variant in ("count", "project", "filtered"):
            q = wisconsin_join_query(shape, n, variant)
            set_gucs(conn, enabled="off", static_shj="off")
            want = multiset(conn.execute(q).fetchall())
            for schedule in ("build", "proportional"):
                set_gucs(conn, static_shj="on", source_schedule=schedule,
                         source_rates="t2=5, t3=0.2", source_delays="t1=3, t4=5, t5=2")
                shjs = shj_nodes(explain_json(conn, q))
                assert shjs, q
                got = multiset(conn.execute(q).fetchall())
                if got != want:
                    failures.append(f"{schedule}: {q}")
    assert not failures, failures
