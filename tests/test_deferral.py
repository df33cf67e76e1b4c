"""Deferral under the build schedule (issue 48; schedule.c, "Deferral"):
a source being read whose rest is expected to be several times what the
last scanned source left after it holds is read last instead, so that
the small ones are stored and the rest of it streams.  The rest of a
sequential scan is what the share of its heap read so far says (four
times the last); of another source, as many again as it returned (twice
the last).  Read from
EXPLAIN ANALYZE's counters, never from time: "Sources Deferred", the
tuples read, what each STAIR stored.  The reading orders come from
eddy.random_start (EXPLAIN's "Random Start" names the order drawn).
Every answer is PostgreSQL's."""

from __future__ import annotations

import psycopg
import pytest

from eddytools.db import eddy_nodes, explain_json, multiset, set_gucs, vanilla_multiset

FACT = 20000
CHECK = 1024            # EDDY_DEFER_CHECK
FACTOR = 2              # EDDY_DEFER_FACTOR (a source with no heap to measure)
STAR = """SELECT count(*), sum(f.v) FROM dff f
          JOIN dfd1 d1 ON d1.id = f.d1 JOIN dfd2 d2 ON d2.id = f.d2
          JOIN dfd3 d3 ON d3.id = f.d3
          WHERE d1.x < 30 AND d2.x < 80"""
# the same eddy rescanned with a parameter
RESCANNED = """SELECT k.lim, (SELECT count(*) FROM dff f
          JOIN dfd1 d1 ON d1.id = f.d1 JOIN dfd2 d2 ON d2.id = f.d2
          WHERE d1.x < k.lim) FROM (VALUES (10), (50), (90)) k(lim)"""


@pytest.fixture
def df(eddy_conn):
    conn = eddy_conn
    conn.execute(f"""
        CREATE TABLE dff AS
            SELECT g AS id, g % 500 AS d1, (g * 7) % 300 AS d2, (g * 11) % 200 AS d3,
                   g % 10 AS v
            FROM generate_series(1, {FACT}) g;
        CREATE TABLE dfd1 AS SELECT g AS id, g % 100 AS x FROM generate_series(0, 499) g;
        CREATE TABLE dfd2 AS SELECT g AS id, g % 100 AS x FROM generate_series(0, 299) g;
        CREATE TABLE dfd3 AS SELECT g AS id, g % 100 AS x FROM generate_series(0, 199) g;
        ANALYZE dff, dfd1, dfd2, dfd3;
    """)
    set_gucs(conn, selection_min_cost=0, join_method="hash",
             pg__max_parallel_workers_per_gather=0)
    return conn


def eddy_of(conn: psycopg.Connection, query: str) -> dict:
    (eddy,) = eddy_nodes(explain_json(conn, query, analyze=True))
    return eddy


def reading(eddy: dict) -> list[str]:
    return eddy["Random Start"].split("reading ")[1].split()


def stored(eddy: dict, prefix: str) -> int:
    """The most any STAIR keyed on one relation's columns stored (each of
    its entries holds one row of the relation)."""
    return max([s["Inserted"] for op in eddy["Operators"] for s in op.get("STAIRs", [])
                if s["STAIR"].startswith(prefix)], default=0)


def seeds_reading(conn: psycopg.Connection, first: bool) -> list[int]:
    """Seeds whose drawn order reads the fact table first (or last)."""
    found = []
    for seed in range(1, 40):
        set_gucs(conn, random_start=seed)
        (eddy,) = eddy_nodes(explain_json(conn, STAR))
        order = reading(eddy)
        if (order[0] == "f") if first else (order[-1] == "f"):
            found.append(seed)
    assert found, "no seed draws that order"
    return found


def test_a_fact_table_read_first_is_read_last(df):
    """Read first, the fact table's heap says at the first check that the
    rest of it is some 19,000 rows, far more than four times the last
    dimension's few hundred: it is deferred there, the dimensions are
    read, and the rest of it streams unstored; it is still read whole, and
    the answer is PostgreSQL's."""
    want = vanilla_multiset(df, STAR)
    bound = CHECK
    for seed in seeds_reading(df, first=True)[:3]:
        set_gucs(df, random_start=seed)
        eddy = eddy_of(df, STAR)
        assert reading(eddy)[0] == "f"
        assert eddy["Sources Deferred"] == f"f after {bound} tuples", eddy
        assert f"f {FACT}" in eddy["Tuples Read"], eddy
        # only what it returned before the deferral waits in its STAIRs
        assert 0 < stored(eddy, "f.") <= bound, eddy
        assert multiset(df.execute(STAR).fetchall()) == want, seed


def test_a_source_likely_deferred_does_not_presize_for_all_of_it(df):
    """A STAIR is sized at its first insertion for the rows the planner
    expects it to hold; read first, the fact table would have its three
    STAIRs sized for its 20,000 rows (some 390 kB of slots each) and hold
    the 1,024 it returns before the deferral.  The planner's rows say it
    is likely deferred, so they are sized for a check's worth: the peak
    stays within 600 kB of the planner's order, where it streams."""
    base = eddy_of(df, STAR)["Peak Memory"]
    for seed in seeds_reading(df, first=True)[:2]:
        set_gucs(df, random_start=seed)
        eddy = eddy_of(df, STAR)
        assert eddy["Sources Deferred"] == f"f after {CHECK} tuples", eddy
        assert eddy["Peak Memory"] <= base + 600, (base, eddy["Peak Memory"])


def test_a_fact_table_read_last_is_not_deferred(df):
    """Read last, there is nothing to read after it: no deferral, nothing of
    it stored."""
    want = vanilla_multiset(df, STAR)
    for seed in seeds_reading(df, first=False)[:2]:
        set_gucs(df, random_start=seed)
        eddy = eddy_of(df, STAR)
        assert "Sources Deferred" not in eddy, eddy
        assert stored(eddy, "f.") == 0, eddy
        assert multiset(df.execute(STAR).fetchall()) == want, seed


def test_the_planner_s_order_is_not_deferred(df):
    """The build order PostgreSQL's plan gives reads the dimensions first."""
    eddy = eddy_of(df, STAR)
    assert "Sources Deferred" not in eddy, eddy


@pytest.mark.parametrize("extra", [{}, {"debug_spill_after": 3000},
                                   {"migration": "guarded", "debug_migrate_every": 3},
                                   {"state_mode": "stems"}])
def test_answers_with_a_deferral_under_other_settings(df, extra):
    """A deferral with a forced spill after it, forced migrations, SteM
    mode, and an eddy rescanned with a parameter (the plan's order again at
    each rescan): the answers are PostgreSQL's."""
    want = vanilla_multiset(df, STAR)
    want_rescanned = vanilla_multiset(df, RESCANNED)
    set_gucs(df, **extra)
    for seed in seeds_reading(df, first=True)[:2]:
        set_gucs(df, random_start=seed)
        assert multiset(df.execute(STAR).fetchall()) == want, (extra, seed)
        assert multiset(df.execute(RESCANNED).fetchall()) == want_rescanned, (extra, seed)


# a source with no heap to measure: a PL/pgSQL function PostgreSQL takes for
# 10 rows, returning FN_ROWS; two tables of SIDE rows after it
FN_ROWS = 20000
SIDE = 3000
FN = """SELECT count(*), sum(f.v) FROM dfn() f
        JOIN dfa a ON a.id = f.a JOIN dfb b ON b.id = f.b"""


def test_a_source_without_a_heap_is_deferred_at_twice_the_last(df):
    """Read first, the function's rest is taken to be as many again as it
    returned; it is deferred at the first check where that reaches twice
    the last table's rows (its 3,000: the table between is stored either
    way), not twice both tables' 6,000.  Only what it returned before
    waits in its STAIRs; the answer is PostgreSQL's."""
    df.execute(f"""
        CREATE FUNCTION dfn() RETURNS TABLE (a int, b int, v int)
            LANGUAGE plpgsql ROWS 10 AS $$
            BEGIN
                RETURN QUERY SELECT g % {SIDE}, (g * 7) % {SIDE}, g % 10
                    FROM generate_series(1, {FN_ROWS}) g;
            END $$;
        CREATE TABLE dfa AS SELECT g AS id FROM generate_series(0, {SIDE - 1}) g;
        CREATE TABLE dfb AS SELECT g AS id FROM generate_series(0, {SIDE - 1}) g;
        ANALYZE dfa, dfb;
    """)
    want = vanilla_multiset(df, FN)
    bound = -(-FACTOR * SIDE // CHECK) * CHECK       # the first check past 2x
    seen = 0
    for seed in range(1, 40):
        set_gucs(df, random_start=seed)
        eddy = eddy_of(df, FN)
        if reading(eddy)[0] != "f":
            continue
        seen += 1
        assert eddy["Sources Deferred"] == f"f after {bound} tuples", eddy
        assert f"f {FN_ROWS}" in eddy["Tuples Read"], eddy
        assert 0 < stored(eddy, "f.") <= bound, eddy
        assert multiset(df.execute(FN).fetchall()) == want, seed
        if seen == 2:
            break
    assert seen, "no seed reads f first"


# m34's shape: the source left after c reaches the fact table through an
# index join, so reading c first stores less than what p's rows would fetch
FETCHED = """SELECT count(*), sum(f.v) FROM dxf f
             JOIN dxp p ON p.id = f.p JOIN dxc c ON c.id = f.c"""


def test_rows_fetched_through_index_joins_count(eddy_conn):
    """Read first, c (6,000 rows) is three times the 2,000 rows of p, the
    source left; but p's rows fetch ten fact rows each through an index,
    and those would be stored waiting for the rest of c.  So c is not
    deferred; the answer is PostgreSQL's."""
    conn = eddy_conn
    conn.execute("""
        CREATE TABLE dxf AS SELECT g AS id, g % 2000 AS p, g % 6000 AS c, g % 10 AS v
            FROM generate_series(1, 20000) g;
        CREATE INDEX ON dxf (p);
        CREATE TABLE dxp AS SELECT g AS id FROM generate_series(0, 1999) g;
        CREATE TABLE dxc AS SELECT g AS id, g % 100 AS x FROM generate_series(0, 5999) g;
        ANALYZE dxf, dxp, dxc;
    """)
    set_gucs(conn, join_method="index", pg__max_parallel_workers_per_gather=0)
    want = vanilla_multiset(conn, FETCHED)
    seen = 0
    for seed in range(1, 40):
        set_gucs(conn, random_start=seed)
        eddy = eddy_of(conn, FETCHED)
        ops = [op for op in eddy["Operators"]
               if op["Operator Type"] == "Index Join" and op["Relation Name"] == "dxf"]
        if reading(eddy)[0] != "c":
            continue
        seen += 1
        assert ops, eddy                          # p reaches f through its index
        assert "Sources Deferred" not in eddy, eddy
        assert multiset(conn.execute(FETCHED).fetchall()) == want, seed
        if seen == 2:
            break
    assert seen, "no seed reads c first"
