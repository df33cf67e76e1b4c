"""The one-row guard (issue 48; join_graph.c, "The one-row guard";
eddy.one_row_guard): PostgreSQL's index nested loop whose outer side rests
on a one-row estimate that the statistics clamped (its filters leave less
than a row of a relation of 1,000 or more, no unique key pinning it)
becomes a hash join where that is the choice of least regret.  Statistics
taken before the data changed make such an estimate: here a segment value
added after ANALYZE.  Checked on the plan's modules and the planner's
DEBUG1 message, never on time; every answer is PostgreSQL's."""

from __future__ import annotations

import psycopg
import pytest

from eddytools.db import (
    eddy_nodes,
    eddy_reasons,
    explain_json,
    multiset,
    set_gucs,
    vanilla_multiset,
)

STALE = """SELECT count(*), sum(f.v) FROM gf f JOIN gc c ON c.id = f.cust
           WHERE c.seg = 10"""
# the same filter with a key lookup: a unique key pins the row
PINNED = """SELECT count(*), sum(f.v) FROM gf f JOIN gc c ON c.id = f.cust
            WHERE c.code = 4 AND c.seg = 10"""
# one row of many distinct names: the statistics' own estimate
DISTINCT = """SELECT count(*), sum(f.v) FROM gf f JOIN gc c ON c.id = f.cust
              WHERE c.name = 'n4'"""
# a small relation's clamped row
SMALL = """SELECT count(*), sum(f.v) FROM gf f JOIN gsmall s ON s.id = f.cust
           WHERE s.seg = 10"""


@pytest.fixture
def gd(eddy_conn):
    conn = eddy_conn
    conn.execute("""
        CREATE TABLE gf AS SELECT g AS id, (g * 7919) % 20000 AS cust, g % 10 AS v
            FROM generate_series(1, 200000) g;
        CREATE INDEX ON gf (cust);
        CREATE TABLE gc (id int PRIMARY KEY, seg int, name text, code int UNIQUE)
            WITH (autovacuum_enabled = false);
        INSERT INTO gc SELECT g, g % 10, 'n' || g, g FROM generate_series(0, 19999) g;
        CREATE TABLE gsmall (id int, seg int) WITH (autovacuum_enabled = false);
        INSERT INTO gsmall SELECT g, g % 10 FROM generate_series(0, 299) g;
        ANALYZE gf, gc, gsmall;
        UPDATE gc SET seg = 10 WHERE id % 2 = 0;
        UPDATE gsmall SET seg = 10 WHERE id % 2 = 0;
    """)
    set_gucs(conn, pg__max_parallel_workers_per_gather=0)
    return conn


def eddy_of(conn: psycopg.Connection, query: str) -> dict:
    (eddy,) = eddy_nodes(explain_json(conn, query))
    return eddy


def modules(conn: psycopg.Connection, query: str) -> list[tuple[str, str]]:
    return [(op["Operator Type"], op.get("Relation Name", ""))
            for op in eddy_of(conn, query)["Operators"]]


def vanilla_nestloop_into_gf(conn: psycopg.Connection, query: str) -> bool:
    set_gucs(conn, enabled=False)
    try:
        text = "\n".join(r[0] for r in conn.execute(f"EXPLAIN {query}").fetchall())
    finally:
        set_gucs(conn, enabled=True)
    return "Nested Loop" in text and "on gf" in text and "Seq Scan on gf" not in text


def test_a_clamped_estimate_makes_a_hash_join(gd):
    """PostgreSQL estimates one row of gc (10,000 rows have the new segment)
    and probes gf's index per row; the eddy joins them by hashing instead,
    says why at DEBUG1, and answers as PostgreSQL does."""
    assert vanilla_nestloop_into_gf(gd, STALE)
    want = vanilla_multiset(gd, STALE)
    set_gucs(gd, one_row_guard=False)
    assert ("Index Join", "gf") in modules(gd, STALE)
    assert "One-Row Guard" not in eddy_of(gd, STALE)
    assert multiset(gd.execute(STALE).fetchall()) == want
    set_gucs(gd, one_row_guard=True)
    mods = modules(gd, STALE)
    assert ("Index Join", "gf") not in mods and ("Hash Join", "") in mods, mods
    assert eddy_of(gd, STALE)["One-Row Guard"].startswith("f scanned")
    reasons = eddy_reasons(gd, STALE)
    assert any("one_row_guard" in r and '"gc"' in r for r in reasons), reasons
    assert multiset(gd.execute(STALE).fetchall()) == want


@pytest.mark.parametrize("query", [PINNED, DISTINCT, SMALL], ids=["pinned", "distinct", "small"])
def test_trusted_one_row_estimates_keep_the_index_join(gd, query):
    """A key lookup's row, one of many distinct values, and a relation of
    300 rows: PostgreSQL's index nested loop stays an index join."""
    assert vanilla_nestloop_into_gf(gd, query)
    want = vanilla_multiset(gd, query)
    assert ("Index Join", "gf") in modules(gd, query)
    assert "One-Row Guard" not in eddy_of(gd, query)
    assert not any("one_row_guard" in r for r in eddy_reasons(gd, query))
    assert multiset(gd.execute(query).fetchall()) == want


@pytest.mark.parametrize("extra", [{}, {"join_method": "hybrid"}, {"random_start": 3},
                                   {"state_mode": "stems"}])
def test_answers_under_other_settings(gd, extra):
    """The guarded plan under other settings: PostgreSQL's answers."""
    want = vanilla_multiset(gd, STALE)
    set_gucs(gd, **extra)
    assert multiset(gd.execute(STALE).fetchall()) == want, extra


def test_a_right_estimate_of_nothing_reads_nothing_more(gd):
    """Where the statistics are right and no row has the value, gc is read
    first and returns nothing, and the eddy stops before scanning gf (the
    guard's bet costs nothing there; where one row has it, the scan is its
    price)."""
    query = STALE.replace("c.seg = 10", "c.seg = 11")
    assert ("Hash Join", "") in modules(gd, query)
    (eddy,) = eddy_nodes(explain_json(gd, query, analyze=True))
    (scan,) = [p for p in eddy["Plans"] if p.get("Relation Name") == "gf"]
    assert scan["Actual Rows"] <= 1, eddy       # at most a tuple read ahead
    assert multiset(gd.execute(query).fetchall()) == vanilla_multiset(gd, query)
