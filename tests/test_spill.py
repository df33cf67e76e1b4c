"""Spilling (extension/src/spill.c): a join eddy whose state outgrows
eddy.max_memory finishes in batches read from temporary files, with
PostgreSQL's results, instead of failing.

The planner keeps PostgreSQL's plan for a block whose estimated state is
over the limit, so each query here is planned with a large limit (PREPARE,
then EXECUTE once) and executed with a small one: the eddy starts with the
plan and meets more state than it may hold, as when the planner's estimate
is low.  What happened is read from EXPLAIN ANALYZE counters; temporary
files are counted with pg_ls_tmpdir().
"""

from __future__ import annotations

import time

import psycopg
import pytest

from eddytools.db import eddy_nodes, explain_json, multiset, set_gucs
from eddytools.testschemas import PATH_QUERIES, PATH_TABLES

SCHEMA = PATH_TABLES + """CREATE TABLE su AS SELECT * FROM s;
CREATE UNIQUE INDEX ON su (id);
ANALYZE r; ANALYZE s; ANALYZE t; ANALYZE u; ANALYZE w; ANALYZE dup; ANALYZE su;
ALTER TABLE r SET (autovacuum_enabled = off); ALTER TABLE s SET (autovacuum_enabled = off);
ALTER TABLE t SET (autovacuum_enabled = off); ALTER TABLE u SET (autovacuum_enabled = off);
ALTER TABLE w SET (autovacuum_enabled = off); ALTER TABLE dup SET (autovacuum_enabled = off);
ALTER TABLE su SET (autovacuum_enabled = off);
"""

QUERIES = {k: PATH_QUERIES[k] for k in (
    "path3", "path5", "star", "unique", "cross_type", "text_keys", "duplicates", "multi_selection")}


def tmp_files(conn) -> int:
    return conn.execute("SELECT count(*) FROM pg_ls_tmpdir()").fetchone()[0]


def prepare_with_eddy(conn, query: str, **gucs) -> None:
    """PREPARE ``query`` as spq, planned with room for its state (an eddy)."""
    set_gucs(conn, max_memory="1GB", **gucs)
    conn.execute("DEALLOCATE ALL")
    conn.execute(f"PREPARE spq AS {query}")
    assert eddy_nodes(explain_json(conn, "EXECUTE spq")), query


def spilled(conn, query: str, memory: str, **gucs):
    """``query``'s rows and its eddy's EXPLAIN ANALYZE, run with
    eddy.max_memory = memory under a plan made with a large one.  A cache
    invalidation (autovacuum's ANALYZE, say) replans the statement under
    the small limit, without an eddy: then it is prepared again."""
    for _ in range(3):
        prepare_with_eddy(conn, query, **gucs)
        set_gucs(conn, max_memory=memory)
        rows = conn.execute("EXECUTE spq").fetchall()
        eddies = eddy_nodes(explain_json(conn, "EXECUTE spq", analyze=True))
        if eddies:
            return rows, eddies[0]
    raise AssertionError(f"replanned without an eddy three times: {query}")


@pytest.fixture
def sp(eddy_conn):
    eddy_conn.execute(SCHEMA)
    set_gucs(eddy_conn, selection_min_cost="0", join_method="hash")
    return eddy_conn


def vanilla(conn, query: str):
    set_gucs(conn, enabled="off")
    try:
        return multiset(conn.execute(query).fetchall())
    finally:
        set_gucs(conn, enabled="on")


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_spilled_results_are_postgresqls(sp, name):
    """Every query, under every routing policy, each source schedule, and
    with state migration forced at random points of stasis before the spill:
    PostgreSQL's rows, with the eddy spilled (a 64 kB limit), and no
    temporary file left."""
    query = QUERIES[name]
    want = vanilla(sp, query)
    assert sum(want.values()) > 0
    runs = 0
    for policy in ("rank", "random", "lottery", "cumulative"):
        for schedule, migration, every in (("build", "off", 0),
                                           ("proportional", "guarded", 0),
                                           ("proportional", "greedy", 2)):
            rows, eddy = spilled(sp, query, "64kB", routing_policy=policy,
                                 source_schedule=schedule, migration=migration,
                                 debug_migrate_every=every, reopt_frequency=10)
            assert multiset(rows) == want, (name, policy, schedule, migration)
            if "Spill Batches" in eddy:
                runs += 1
                assert eddy["Batches Joined"] >= 1
                assert eddy["Rows Spilled"] > 0
    # the state of every query outgrows 64 kB under some setting
    assert runs > 0, name
    assert tmp_files(sp) == 0


def _state_tables(conn, rows: int, keys: str, width: int) -> None:
    """Two tables of ``rows`` rows joined on k: uniform keys (2 rows of each
    table per key), skewed ones (half of each table on one key), or text
    keys; a third, small, on j.  Rows carry ``width`` bytes of padding."""
    key = {"uniform": "g / 2",
           "skewed": "CASE WHEN g % 2 = 0 THEN 0 ELSE g END",
           "text": "'key-' || (g / 2)"}[keys]
    conn.execute(f"""
        DROP TABLE IF EXISTS ba, bb, bc;
        CREATE TABLE ba AS SELECT g AS id, {key} AS k, repeat('a', {width}) AS pad
            FROM generate_series(1, {rows}) g;
        CREATE TABLE bb AS SELECT g AS id, {key} AS k, g % 10 AS j, repeat('b', {width}) AS pad
            FROM generate_series(1, {rows}) g;
        CREATE TABLE bc AS SELECT g AS j, 'c' || g AS name FROM generate_series(0, 9) g;
        ANALYZE ba, bb, bc;
        ALTER TABLE ba SET (autovacuum_enabled = off);
        ALTER TABLE bb SET (autovacuum_enabled = off);
        ALTER TABLE bc SET (autovacuum_enabled = off);""")


@pytest.mark.parametrize("keys", ["uniform", "skewed", "text"])
def test_state_10x_and_100x_the_limit(sp, keys):
    """A three-way join whose state is about 10x and 100x eddy.max_memory
    (wide rows; uniform, skewed and text keys) completes with PostgreSQL's
    rows, in batches, under two routing policies and with state migration;
    no temporary file is left.  Skewed keys put half of both tables in one
    batch, which cannot be split and goes on over the limit (counted)."""
    _state_tables(sp, 6000 if keys == "skewed" else 20000, keys, 200)
    query = ("SELECT count(*), sum(ba.id), sum(bb.id), max(ba.pad || bb.pad), "
             "sum(length(bc.name)) FROM ba JOIN bb ON ba.k = bb.k JOIN bc ON bc.j = bb.j "
             "WHERE ba.id % 5 <> 0")
    want = vanilla(sp, query)
    prepare_with_eddy(sp, query)
    set_gucs(sp, max_memory="1GB")
    (full,) = eddy_nodes(explain_json(sp, "EXECUTE spq", analyze=True))
    assert "Spill Batches" not in full
    peak_kb = full["Peak Memory"]
    assert peak_kb > 1000, peak_kb
    for factor in (10, 100):
        for policy, migration in (("rank", "off"), ("cumulative", "guarded")):
            limit = max(peak_kb // factor, 16)
            rows, eddy = spilled(sp, query, f"{limit}kB", routing_policy=policy,
                                 migration=migration)
            assert multiset(rows) == want, (keys, factor, policy)
            assert "Spill Batches" in eddy, eddy
            assert eddy["Batches Joined"] >= 2
            assert eddy["Bytes Spilled"] > 0
            if keys != "skewed" and factor == 10:
                # batches sized to fit: the peak stays near the limit
                assert eddy["Peak Memory"] < 0.5 * peak_kb, (eddy["Peak Memory"], peak_kb)
            assert tmp_files(sp) == 0


def test_spill_files_go_on_error_cancel_and_rescan(sp, pg_dsn):
    """Temporary files are removed when a spilled eddy ends in an error (a
    routed predicate divides by zero in the batches), when it is cancelled
    (statement_timeout), when a cursor over it is closed half read, and
    across rescans (a correlated subquery); the session goes on."""
    _state_tables(sp, 20000, "uniform", 100)
    sp.execute("CREATE FUNCTION slow(x int) RETURNS int LANGUAGE plpgsql AS "
               "$$ BEGIN PERFORM pg_sleep(0.0005); RETURN x; END $$")
    # the error: bb.id = 19999 is read after the spill
    prepare_with_eddy(sp, "SELECT count(*) FROM ba JOIN bb ON ba.k = bb.k "
                          "WHERE 10 / (bb.id - 19999) > -100")
    set_gucs(sp, max_memory="256kB")
    with pytest.raises(psycopg.errors.DivisionByZero):
        sp.execute("EXECUTE spq").fetchall()
    assert tmp_files(sp) == 0

    # the cancel, while batches are joined slowly
    prepare_with_eddy(sp, "SELECT count(*) FROM ba JOIN bb ON ba.k = bb.k "
                          "WHERE slow(bb.id) >= 0")
    set_gucs(sp, max_memory="256kB")
    sp.execute("SET statement_timeout = '2s'")
    start = time.monotonic()
    with pytest.raises(psycopg.errors.QueryCanceled):
        sp.execute("EXECUTE spq").fetchall()
    assert time.monotonic() - start < 10
    sp.execute("RESET statement_timeout")
    assert tmp_files(sp) == 0

    # a cursor closed half read (the planner expects 10 rows of many())
    sp.execute("CREATE FUNCTION many(n int) RETURNS SETOF int LANGUAGE plpgsql ROWS 10 "
               "AS $$ BEGIN RETURN QUERY SELECT generate_series(1, n); END $$")
    set_gucs(sp, max_memory="256kB")
    cursor = "SELECT a, b FROM many(20000) a JOIN many(20000) b ON a / 2 = b / 2"
    assert eddy_nodes(explain_json(sp, cursor))
    sp.execute("BEGIN")
    sp.execute(f"DECLARE c NO SCROLL CURSOR FOR {cursor}")
    assert len(sp.execute("FETCH 30000 FROM c").fetchall()) == 30000
    assert tmp_files(sp) > 0
    sp.execute("CLOSE c")
    sp.execute("COMMIT")
    assert tmp_files(sp) == 0

    # rescans: each outer row's eddy spills; PostgreSQL's counts
    query = ("SELECT bc.j, (SELECT count(*) FROM ba JOIN bb ON ba.k = bb.k "
             "WHERE bb.j = bc.j AND ba.id > bc.j) FROM bc")
    want = vanilla(sp, query)
    rows, eddy = spilled(sp, query, "128kB")
    assert multiset(rows) == want
    assert eddy["Actual Loops"] == 10
    assert eddy["Batches Joined"] >= 10, eddy
    assert tmp_files(sp) == 0
    assert sp.execute("SELECT 1").fetchone() == (1,)


def test_explain_shows_the_spill(sp):
    """EXPLAIN ANALYZE of a spilled eddy shows the batches, the join they
    were made on, the rows and bytes written and the peak memory; VERBOSE
    adds when it spilled and the rows taken from the state.  An eddy that
    does not spill shows none of it."""
    _state_tables(sp, 20000, "uniform", 50)
    query = "SELECT count(*) FROM ba JOIN bb ON ba.k = bb.k JOIN bc ON bc.j = bb.j"
    prepare_with_eddy(sp, query)
    plan = sp.execute("EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF) EXECUTE spq").fetchall()
    assert not any("Spill" in r[0] for r in plan)
    set_gucs(sp, max_memory="512kB")
    text = "\n".join(r[0] for r in sp.execute(
        "EXPLAIN (ANALYZE, VERBOSE, TIMING OFF, COSTS OFF) EXECUTE spq").fetchall())
    assert "Spill Batches: " in text and ", on Hash Join " in text, text
    for label in ("Batches Joined: ", "Rows Spilled: ", "Bytes Spilled: ",
                  "Spilled At: ", "Rows Spilled From State: ", "Peak Memory: "):
        assert label in text, (label, text)


def test_spill_splits_the_state_it_holds(sp):
    """The partitioning splits the state the eddy holds, not the largest
    join it could hash on.  Here the state is ``sl``'s rows, reached by an
    index join from ``sr`` and stored to meet ``sc``; ``sc`` joins ``sn``,
    whose two rows the query keeps, on two keys.  Hashing on that join (the
    choice before, as on TPC-H Q7 under PostgreSQL's defaults with no
    parallel worker) put the whole state into each of the two batches with
    rows, both over the limit, and read ``sr``'s index join again in each.
    Dealing ``sr`` out splits it: every batch fits."""
    sp.execute("""
        DROP TABLE IF EXISTS sr, sl, sc, sn;
        CREATE TABLE sr (id int PRIMARY KEY, g int, pad text);
        INSERT INTO sr SELECT i, i % 25, repeat('x', 40) FROM generate_series(1, 400) i;
        CREATE TABLE sl (id int, rid int, k int, v int);
        INSERT INTO sl SELECT i, 1 + i % 400, 1 + (i * 7919) % 30000, i % 100
            FROM generate_series(1, 120000) i;
        CREATE INDEX ON sl (rid);
        CREATE TABLE sc (id int, g int);
        INSERT INTO sc SELECT i, i % 25 FROM generate_series(1, 30000) i;
        CREATE TABLE sn (g int, name text);
        INSERT INTO sn SELECT i, 'n' || i FROM generate_series(0, 24) i;
        ANALYZE sr, sl, sc, sn;
        ALTER TABLE sr SET (autovacuum_enabled = off);
        ALTER TABLE sl SET (autovacuum_enabled = off);
        ALTER TABLE sc SET (autovacuum_enabled = off);
        ALTER TABLE sn SET (autovacuum_enabled = off);""")
    query = ("SELECT count(*), sum(sl.v), sum(sc.id) FROM sr, sl, sc, sn "
             "WHERE sr.id = sl.rid AND sl.k = sc.id AND sc.g = sn.g "
             "AND sn.name IN ('n1', 'n2') AND sr.g < 20")
    want = vanilla(sp, query)
    prepare_with_eddy(sp, query, join_method="index", pg__max_parallel_workers_per_gather=0)
    set_gucs(sp, max_memory="1GB")
    (full,) = eddy_nodes(explain_json(sp, "EXECUTE spq", analyze=True))
    assert "Spill Batches" not in full
    assert "sl_rid_idx" in str(full), full  # sl is reached by an index join
    peak_kb = full["Peak Memory"]
    assert peak_kb > 4000, peak_kb
    rows, eddy = spilled(sp, query, f"{peak_kb // 4}kB", join_method="index",
                         pg__max_parallel_workers_per_gather=0)
    assert multiset(rows) == want
    assert eddy["Spill Batches"].endswith("dealing out sr"), eddy["Spill Batches"]
    assert eddy["Batches Joined"] >= 4, eddy
    assert eddy.get("Batches Over Memory", 0) == 0, eddy
    assert tmp_files(sp) == 0
