"""Index-only index joins (issue 48; mod_indexjoin.c, "Index-only index
joins"; plan_build.c, index_join_index_only).

Where every column the block needs of an index-joined relation is one its
index returns, and enable_indexonlyscan is on, the index join reads the
index alone, as PostgreSQL's index-only scan does: a match on a page the
visibility map says is all visible needs no heap fetch, one on another page
is fetched only to learn whether it is visible.  EXPLAIN names it (text:
"Index Only Join"; structured formats: "Index Only": true) and EXPLAIN
ANALYZE counts its "Heap Fetches".  A block that needs a column the index
does not hold, an index that returns nothing (hash) and enable_indexonlyscan
= off keep the heap path.  Rows are PostgreSQL's under every setting, after
updates and deletes, with rows deleted by the query's own transaction or by
one still open, on rescans and in parallel plans.
"""

from __future__ import annotations

import time

import psycopg
import pytest

from eddytools.db import (
    EXECUTOR_DEFAULTS,
    EXECUTOR_VARIANTS,
    PARALLEL_FORCED,
    PARALLEL_SERVER,
    eddy_nodes,
    explain_json,
    multiset,
    set_core_gucs,
    set_gucs,
    sql_value,
    vanilla_multiset,
)

SCHEMA = """
CREATE TABLE iod AS SELECT g AS id, g % 20 AS cat, 'd' || g AS name
    FROM generate_series(1, 2000) g;
CREATE TABLE iof AS
    SELECT g AS id, CASE WHEN g % 101 = 0 THEN NULL ELSE (g * 7) % 2000 + 1 END AS did,
           g % 13 AS v, repeat('x', 30) || g AS pad
    FROM generate_series(1, 60000) g;
CREATE INDEX iof_did ON iof (did);
CREATE TABLE ioc AS
    SELECT g AS id, (g * 3) % 2000 + 1 AS did, g % 13 AS v, 'c' || (g % 17) AS t,
           repeat('y', 30) AS pad
    FROM generate_series(1, 40000) g;
CREATE INDEX ioc_cov ON ioc (did) INCLUDE (v, t);
CREATE TABLE ioh AS SELECT g AS id, g % 2000 + 1 AS did FROM generate_series(1, 20000) g;
CREATE INDEX ioh_hash ON ioh USING hash (did);
"""

# count(*) of the fact table joined through its foreign key to a filtered
# dimension: only the key is needed of iof
STAR = "SELECT count(*) FROM iof JOIN iod ON iof.did = iod.id WHERE iod.cat = 7"
# ... and columns of the covering index's INCLUDE, in a selection and above
COVERED = ("SELECT iod.name, ioc.v, ioc.t FROM ioc JOIN iod ON ioc.did = iod.id "
           "WHERE iod.cat = 3 AND ioc.v > 4 AND ioc.t <> 'c5'")
# a column no index holds
UNCOVERED = "SELECT count(*), sum(iof.v) FROM iof JOIN iod ON iof.did = iod.id WHERE iod.cat = 7"
UNCOVERED_SELECTION = ("SELECT count(*) FROM iof JOIN iod ON iof.did = iod.id "
                       "WHERE iod.cat = 7 AND iof.pad LIKE '%5'")
HASHED = "SELECT count(*) FROM ioh JOIN iod ON ioh.did = iod.id WHERE iod.cat = 7"
# semi and anti joins whose inner qual reads covered columns
SEMI = ("SELECT iod.id FROM iod WHERE EXISTS "
        "(SELECT 1 FROM ioc WHERE ioc.did = iod.id AND ioc.v = 5 AND ioc.t = 'c3')")
ANTI = ("SELECT iod.id, iod.cat FROM iod WHERE NOT EXISTS "
        "(SELECT 1 FROM ioc WHERE ioc.did = iod.id AND ioc.v > 2 AND iod.cat > 3)")
# two index-only joins in one block, and a hash join
THREE = ("SELECT iod.cat, count(*), sum(ioc.v) FROM iof JOIN iod ON iof.did = iod.id "
         "JOIN ioc ON ioc.did = iod.id WHERE iod.cat < 2 AND ioc.v < 3 GROUP BY iod.cat")

QUERIES = [STAR, COVERED, UNCOVERED, UNCOVERED_SELECTION, HASHED, SEMI, ANTI, THREE]


@pytest.fixture
def ioj(eddy_conn):
    eddy_conn.execute(SCHEMA)
    eddy_conn.execute("ANALYZE iod, iof, ioc, ioh")
    set_gucs(eddy_conn, join_method="index")
    return eddy_conn


def all_visible(conn: psycopg.Connection, *tables: str) -> None:
    """VACUUM until every page of the tables is all visible (no snapshot
    older than their rows may be left)."""
    for table in tables:
        for _ in range(50):
            conn.execute(f"VACUUM {table}")
            if sql_value(conn, "SELECT relallvisible = relpages FROM pg_class "
                         "WHERE relname = %s", (table,)):
                break
            time.sleep(0.2)
        else:
            raise AssertionError(f"VACUUM did not make {table} all visible")


def index_joins(conn: psycopg.Connection, query: str, analyze: bool = False) -> list[dict]:
    plan = explain_json(conn, query, analyze=analyze)
    return [op for e in eddy_nodes(plan) for op in e["Operators"]
            if op["Operator Type"] in ("Index Join", "Index Semi Join", "Index Anti Join")]


def heap_fetches(conn: psycopg.Connection, query: str) -> int:
    (join,) = index_joins(conn, query, analyze=True)
    assert join["Index Only"] is True, join
    return join["Heap Fetches"]


def test_marked_where_the_index_holds_every_column(ioj):
    """Index-only where the block needs only what the index returns (the
    key; or the covering index's INCLUDE columns, read by a selection, above
    the block, or in a semi or anti join's inner qual); the heap path for a
    column no index holds (above the block or in a selection), for a hash
    index (it returns nothing), and with enable_indexonlyscan off."""
    expect = {STAR: [True], COVERED: [True], UNCOVERED: [False],
              UNCOVERED_SELECTION: [False], HASHED: [False], SEMI: [True],
              ANTI: [True], THREE: [True, True]}
    for q, flags in expect.items():
        joins = index_joins(ioj, q)
        assert [j["Index Only"] for j in joins] == flags, (q, joins)
    text = "\n".join(r[0] for r in ioj.execute(f"EXPLAIN (COSTS OFF) {STAR}").fetchall())
    assert "Index Only Join 1: " in text and "using iof_did on iof" in text, text
    text = "\n".join(r[0] for r in ioj.execute(f"EXPLAIN (COSTS OFF) {UNCOVERED}").fetchall())
    assert "Index Join 1: " in text and "Index Only" not in text, text
    text = "\n".join(r[0] for r in ioj.execute(f"EXPLAIN (COSTS OFF) {SEMI}").fetchall())
    assert "Index Only Semi Join 1:" in text and "using ioc_cov on ioc" in text, text
    set_core_gucs(ioj, {"enable_indexonlyscan": "off"})
    for q in (STAR, COVERED, SEMI):
        assert not any(j["Index Only"] for j in index_joins(ioj, q)), q
    # the heap path fetches no fewer and has no Heap Fetches counter
    (join,) = index_joins(ioj, STAR, analyze=True)
    assert "Heap Fetches" not in join
    assert multiset(ioj.execute(STAR).fetchall()) == vanilla_multiset(ioj, STAR)
    set_core_gucs(ioj, {"enable_indexonlyscan": "on"})


def test_heap_fetches_follow_the_visibility_map(ioj):
    """A freshly VACUUMed relation: no heap fetch.  After an UPDATE of some
    rows (their pages no longer all visible): heap fetches, and the rows are
    still PostgreSQL's (the updated rows' new versions, not the old)."""
    all_visible(ioj, "iof", "ioc")
    assert heap_fetches(ioj, STAR) == 0
    assert heap_fetches(ioj, COVERED) == 0
    text = "\n".join(r[0] for r in ioj.execute(
        f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) {STAR}").fetchall())
    assert "Heap Fetches: 0" in text, text
    want_star = vanilla_multiset(ioj, STAR)
    assert multiset(ioj.execute(STAR).fetchall()) == want_star
    ioj.execute("UPDATE iof SET did = 1 WHERE id % 40 = 0 OR did % 20 = 7 AND id % 3 = 0")
    ioj.execute("UPDATE ioc SET v = v + 1, t = 'c99' "
                "WHERE id % 30 = 0 OR did % 20 = 3 AND id % 4 = 0")
    assert heap_fetches(ioj, STAR) > 0
    assert heap_fetches(ioj, COVERED) > 0
    for q in QUERIES:
        assert multiset(ioj.execute(q).fetchall()) == vanilla_multiset(ioj, q), q
    assert multiset(ioj.execute(STAR).fetchall()) != want_star  # the UPDATE mattered
    all_visible(ioj, "iof", "ioc")
    assert heap_fetches(ioj, STAR) == 0
    for q in QUERIES:
        assert multiset(ioj.execute(q).fetchall()) == vanilla_multiset(ioj, q), q


def test_deleted_rows_are_not_returned(ioj, pg_dsn):
    """Rows deleted after the VACUUM (the index still points to them, their
    pages no longer all visible) are not matches; rows deleted by the
    query's own transaction are not either, and rows another transaction
    has deleted but not committed still are."""
    all_visible(ioj, "iof", "ioc")
    before = {q: vanilla_multiset(ioj, q) for q in QUERIES}
    ioj.execute("DELETE FROM iof WHERE id % 7 = 0 OR did % 20 = 7 AND id % 5 = 0")
    ioj.execute("DELETE FROM ioc WHERE id % 5 = 0 OR did % 20 = 3 AND id % 3 = 0")
    assert heap_fetches(ioj, STAR) > 0
    for q in QUERIES:
        want = vanilla_multiset(ioj, q)
        if q in (STAR, COVERED):
            assert want != before[q], q
        assert multiset(ioj.execute(q).fetchall()) == want, q
    all_visible(ioj, "iof", "ioc")

    # deleted in the query's own transaction
    with ioj.transaction():
        ioj.execute("DELETE FROM iof WHERE did % 3 = 0")
        assert heap_fetches(ioj, STAR) > 0
        inside = ioj.execute(STAR).fetchone()
        assert multiset([inside]) == vanilla_multiset(ioj, STAR)
        raise psycopg.Rollback()
    committed = ioj.execute(STAR).fetchone()
    assert inside != committed

    # deleted by another transaction, still open: visible to this one
    all_visible(ioj, "iof")
    with psycopg.connect(pg_dsn) as other:
        other.execute("DELETE FROM iof WHERE did % 20 = 7 AND id % 2 = 0")
        assert ioj.execute(STAR).fetchone() == committed
        assert heap_fetches(ioj, STAR) > 0
        other.commit()
    after = ioj.execute(STAR).fetchone()
    assert after != committed
    assert multiset([after]) == vanilla_multiset(ioj, STAR)


def test_rows_are_vanillas_under_every_setting(ioj):
    """Every query under every executor variant (routing policies, forced
    migration, a forced spill, SteMs, routing recomputed per tuple), a small
    work_mem, and join_method auto, on all-visible relations and after
    updates, returns PostgreSQL's rows."""
    all_visible(ioj, "iof", "ioc", "ioh")
    for phase in ("visible", "updated"):
        if phase == "updated":
            ioj.execute("UPDATE iof SET v = v + 1 WHERE id % 9 = 0")
            ioj.execute("DELETE FROM ioc WHERE id % 11 = 0")
        for q in QUERIES:
            want = vanilla_multiset(ioj, q)
            assert sum(want.values()) > 0, q
            for extra in [*EXECUTOR_VARIANTS, {"routing_policy": "fixed"},
                          {"pg__work_mem": "64kB", "debug_spill_after": "20"}]:
                set_gucs(ioj, **EXECUTOR_DEFAULTS)
                set_gucs(ioj, **extra)
                assert multiset(ioj.execute(q).fetchall()) == want, (phase, q, extra)
            set_gucs(ioj, **EXECUTOR_DEFAULTS, pg__work_mem="4MB")
    set_gucs(ioj, join_method="auto")
    set_core_gucs(ioj, {"enable_hashjoin": "off", "enable_mergejoin": "off"})
    for q in QUERIES:
        assert multiset(ioj.execute(q).fetchall()) == vanilla_multiset(ioj, q), q


def test_rescans_cursors_and_parallel_plans(ioj):
    """A correlated subquery whose eddy (an index-only join) runs once per
    outer row, a cursor read in pieces, and parallel plans forced (each
    process its own index scans) return PostgreSQL's rows."""
    all_visible(ioj, "iof", "ioc")
    ioj.execute("DELETE FROM iof WHERE id % 13 = 0")
    rq = ("SELECT d.id, (SELECT count(*) FROM iof JOIN iod ON iof.did = iod.id "
          "WHERE iod.cat = d.cat) FROM iod d WHERE d.id <= 40")
    assert multiset(ioj.execute(rq).fetchall()) == vanilla_multiset(ioj, rq)
    want = vanilla_multiset(ioj, COVERED)
    got = []
    with ioj.transaction():
        ioj.execute(f"DECLARE c NO SCROLL CURSOR FOR {COVERED}")
        while True:
            rows = ioj.execute("FETCH 37 FROM c").fetchall()
            if not rows:
                break
            got += rows
    assert multiset(got) == want
    set_core_gucs(ioj, PARALLEL_FORCED)
    for q in QUERIES:
        assert multiset(ioj.execute(q).fetchall()) == vanilla_multiset(ioj, q), q
    set_core_gucs(ioj, PARALLEL_SERVER)
