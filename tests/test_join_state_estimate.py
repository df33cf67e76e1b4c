"""The planner's estimate of a join eddy's state (plan_join.c,
estimated_join_state), which says whether the eddy is expected to fit in
eddy.max_memory (past it the eddy spills), read from EXPLAIN: "Estimated Join State" (VERBOSE), the
STAIRs' counters and "Peak Memory" (ANALYZE), and the planner's DEBUG1
reason when it declines.

The estimate counts what the executor stores under the schedule it will
use: in build order (the default) nothing a side stores once the other
side's sources are all read, so the relation read last is never counted;
with the proportional schedule, or state migration, everything is.

A path ``d - m - f``: d (500 rows, a primary key) and m (20,000) are small,
f (200,000) is the relation of the largest rows x hash joins, read last."""

from __future__ import annotations

import pytest

from eddytools.db import eddy_nodes, eddy_reasons, explain_json, set_gucs

# The arenas' first blocks, which the estimate leaves out: an eddy that
# stores almost nothing reports about 176 kB
ARENA_KB = 256
QUERY = "SELECT count(*) FROM d JOIN m ON m.did = d.id JOIN f ON f.mid = m.id"
F_ROWS = 200000


@pytest.fixture
def path(eddy_conn):
    conn = eddy_conn
    conn.execute(f"""
        CREATE TABLE d (id int PRIMARY KEY, v int);
        INSERT INTO d SELECT g, g FROM generate_series(0, 499) g;
        CREATE TABLE m AS SELECT g AS id, g % 500 AS did, g AS v
                          FROM generate_series(0, 19999) g;
        CREATE TABLE f AS SELECT g AS id, g % 20000 AS mid, md5(g::text) AS s
                          FROM generate_series(1, {F_ROWS}) g;
        ANALYZE d; ANALYZE m; ANALYZE f;""")
    set_gucs(conn, join_method="hash")
    conn.execute("SET enable_nestloop = off")
    conn.execute("SET enable_mergejoin = off")
    return conn


def estimate_kb(conn, query: str = QUERY) -> int:
    (eddy,) = eddy_nodes(explain_json(conn, query, verbose=True))
    return eddy["Estimated Join State"]


def analyzed(conn, query: str = QUERY) -> dict:
    (eddy,) = eddy_nodes(explain_json(conn, query, analyze=True, verbose=True))
    return eddy


def stairs(eddy: dict) -> dict[str, dict]:
    """Per STAIR (by its key column, e.g. 'f.mid'): its counters."""
    return {st["STAIR"]: st for op in eddy["Operators"] for st in op.get("STAIRs", [])}


def test_build_order_does_not_count_the_relation_read_last(path):
    """In build order f is read last: its STAIR stores nothing at run time
    (Inserted 0), and the estimate does not count it (the same with 10x
    fewer f rows); the proportional schedule stores f and counts it, 10x
    more.  Either way the estimate is not below the peak memory."""
    conn = path
    build = estimate_kb(conn)
    eddy = analyzed(conn)
    st = stairs(eddy)
    assert st["f.mid"]["Inserted"] == 0, st
    assert st["f.mid"]["Skipped"] == F_ROWS, st
    assert eddy["Peak Memory"] <= build + ARENA_KB, (eddy["Peak Memory"], build)

    set_gucs(conn, source_schedule="proportional")
    proportional = estimate_kb(conn)
    eddy = analyzed(conn)
    assert stairs(eddy)["f.mid"]["Inserted"] > 0
    assert eddy["Peak Memory"] <= proportional + ARENA_KB, (eddy["Peak Memory"], proportional)
    # f's 200,000 rows of about 80 bytes and their entries: over 20 MB
    assert proportional - build > 20 * 1024, (build, proportional)
    assert proportional > 5 * build, (build, proportional)


def test_fits_in_build_order_declined_when_interleaved(path):
    """With eddy.max_memory between the two estimates, the build-order eddy
    is planned and runs within it without spilling, while under the
    proportional schedule or with state migration, where the tables it
    stores for certain (m and f, scanned) exceed the limit, the block keeps
    PostgreSQL's plan (a spilled eddy is slower than its batched hash join)
    and says why."""
    conn = path
    build = estimate_kb(conn)
    set_gucs(conn, source_schedule="proportional")
    proportional = estimate_kb(conn)
    limit = (build + proportional) // 2
    set_gucs(conn, max_memory=f"{limit}kB")

    assert not eddy_nodes(explain_json(conn, QUERY))
    assert any("stored for certain" in r for r in eddy_reasons(conn, QUERY))

    set_gucs(conn, source_schedule="build")
    eddy = analyzed(conn)
    assert eddy["Peak Memory"] <= limit
    assert "Batches Joined" not in eddy, eddy
    assert eddy["Actual Rows"] == F_ROWS

    for policy in ("greedy", "guarded"):
        set_gucs(conn, migration=policy)
        assert not eddy_nodes(explain_json(conn, QUERY)), policy
    set_gucs(conn, migration="off")


def test_over_the_limit_on_an_estimate_that_may_run_high_spills_if_need_be(path):
    """A source whose row estimate is not a table's statistics (here a
    function declared ROWS 150000 that returns 300 rows) is stored by the
    estimate but not for certain: past the limit on its account the block
    is still an eddy, the planner says it spills what outgrows the limit,
    and at run time it fits and returns PostgreSQL's count.  Returning
    150,000 rows, it spills and returns PostgreSQL's count."""
    conn = path
    conn.execute("CREATE FUNCTION some_rows(n int) RETURNS SETOF int LANGUAGE plpgsql ROWS 150000 "
                 "AS $$ BEGIN RETURN QUERY SELECT generate_series(1, n); END $$")
    q = ("SELECT count(*) FROM some_rows({n}) x JOIN m ON m.id = x % 20000 "
         "JOIN f ON f.mid = m.id")
    est = estimate_kb(conn, q.format(n=300))
    set_gucs(conn, max_memory=f"{est // 3}kB")
    reasons = eddy_reasons(conn, q.format(n=300))
    assert any("spills what outgrows the limit" in r for r in reasons), reasons
    for n in (300, 150000):
        set_gucs(conn, enabled="off")
        want = conn.execute(q.format(n=n)).fetchall()
        set_gucs(conn, enabled="on")
        (eddy,) = eddy_nodes(explain_json(conn, q.format(n=n), analyze=True))
        assert conn.execute(q.format(n=n)).fetchall() == want
        if n == 300:
            assert "Batches Joined" not in eddy, eddy
            assert eddy["Peak Memory"] <= est // 3, (eddy["Peak Memory"], est)
        else:
            assert eddy["Batches Joined"] >= 2, eddy


def test_routable_restriction_counts_rows_before_it(path):
    """A restriction the eddy routes (every one, with selection_min_cost 0)
    may run after the join, so the join may store the rows it would have
    removed: the estimate counts m's rows before it, as EXPLAIN ANALYZE's
    counters show can happen."""
    conn = path
    q = QUERY + " WHERE m.v % 10 = 0"
    kept = estimate_kb(conn, q)
    set_gucs(conn, selection_min_cost=0)
    routed = estimate_kb(conn, q)
    assert routed > kept, (kept, routed)
    eddy = analyzed(conn, q)
    assert eddy["Peak Memory"] <= routed + ARENA_KB, (eddy["Peak Memory"], routed)


def test_star_centre_read_last_is_not_counted(eddy_conn):
    """A star over primary keys: the centre is read last and its tuples find
    their matches at once, so only the points are counted; the estimate is
    the same however large the centre."""
    conn = eddy_conn
    conn.execute("""
        CREATE TABLE p1 (id int PRIMARY KEY, v int);
        CREATE TABLE p2 (id int PRIMARY KEY, v int);
        INSERT INTO p1 SELECT g, g FROM generate_series(0, 999) g;
        INSERT INTO p2 SELECT g, g FROM generate_series(0, 999) g;
        CREATE TABLE c_small AS SELECT g AS id, g % 1000 AS a, g % 997 AS b
                                FROM generate_series(1, 10000) g;
        CREATE TABLE c_big AS SELECT g AS id, g % 1000 AS a, g % 997 AS b
                              FROM generate_series(1, 300000) g;
        ANALYZE p1; ANALYZE p2; ANALYZE c_small; ANALYZE c_big;""")
    set_gucs(conn, join_method="hash")
    conn.execute("SET enable_nestloop = off")
    conn.execute("SET enable_mergejoin = off")
    star = "SELECT count(*) FROM {c} c JOIN p1 ON p1.id = c.a JOIN p2 ON p2.id = c.b"
    small = estimate_kb(conn, star.format(c="c_small"))
    big = estimate_kb(conn, star.format(c="c_big"))
    assert small == big, (small, big)
    eddy = analyzed(conn, star.format(c="c_big"))
    st = stairs(eddy)
    assert st["c.a"]["Inserted"] == 0 and st["c.b"]["Inserted"] == 0, st
    assert eddy["Peak Memory"] <= big + ARENA_KB, (eddy["Peak Memory"], big)


def test_estimate_too_low_spills(path):
    """The estimate follows the planner's rows: a relation the planner
    underestimates can still outgrow the limit; the eddy then spills
    (spill.c) and returns PostgreSQL's count."""
    conn = path
    conn.execute("CREATE FUNCTION many(n int) RETURNS SETOF int LANGUAGE plpgsql ROWS 10 "
                 "AS $$ BEGIN RETURN QUERY SELECT generate_series(1, n); END $$")
    q = "SELECT count(*) FROM many(200000) x JOIN m ON m.id = x JOIN f ON f.mid = m.id"
    limit = estimate_kb(conn, q) + 1024
    set_gucs(conn, enabled="off")
    want = conn.execute(q).fetchall()
    set_gucs(conn, enabled="on", max_memory=f"{limit}kB")
    assert eddy_nodes(explain_json(conn, q))
    assert conn.execute(q).fetchall() == want
    (eddy,) = eddy_nodes(explain_json(conn, q, analyze=True))
    assert eddy["Batches Joined"] >= 2, eddy


def test_relation_reached_from_the_last_source_is_not_counted(path):
    """x is reached by an index join from f, read last (two hash joins), and
    hash-joined to y, read after m but before f: every row spanning x holds
    a row of f, so it is made after y is read whole, and x's side of that
    join stores nothing (TPC-H Q9's lineitem, reached from partsupp).  The
    estimate does not count x (the same for 2,000 rows of x as for 400,000),
    and the peak stays under it."""
    conn = path
    conn.execute("""
        CREATE TABLE z AS SELECT g AS id FROM generate_series(0, 99) g;
        CREATE TABLE y AS SELECT g AS id, g AS v FROM generate_series(0, 299999) g;
        CREATE TABLE x_small AS SELECT g AS id, g AS fid, g AS yid
                                FROM generate_series(1, 2000) g;
        CREATE TABLE x_big AS SELECT g AS id, g % 200000 + 1 AS fid, g % 300000 AS yid
                              FROM generate_series(1, 400000) g;
        CREATE INDEX ON x_small (fid);
        CREATE INDEX ON x_big (fid);
        ANALYZE y; ANALYZE z; ANALYZE x_small; ANALYZE x_big;""")
    set_gucs(conn, join_method="index", max_memory="1GB")
    q = ("SELECT count(*) FROM d JOIN m ON m.did = d.id JOIN f ON f.mid = m.id "
         "JOIN z ON z.id = f.id % 100 JOIN {x} x ON x.fid = f.id JOIN y ON y.id = x.yid")
    small = estimate_kb(conn, q.format(x="x_small"))
    big = estimate_kb(conn, q.format(x="x_big"))
    assert small == big, (small, big)
    eddy = analyzed(conn, q.format(x="x_big"))
    st = stairs(eddy)
    # y is read before f (it stores), after m (whose index join into d ran)
    assert st["y.id"]["Inserted"] == 300000 and st["m.id"]["Inserted"] == 20000, st
    assert st["x.yid"]["Inserted"] == 0 and st["x.yid"]["Skipped"] == 400000, st
    assert eddy["Peak Memory"] <= big + ARENA_KB, (eddy["Peak Memory"], big)
    set_gucs(conn, enabled="off")
    want = conn.execute(q.format(x="x_big")).fetchall()
    set_gucs(conn, enabled="on")
    assert conn.execute(q.format(x="x_big")).fetchall() == want


def test_serial_eddy_likely_to_spill_keeps_postgresqls_plan(eddy_conn):
    """sl is reached by an index join from sr, whose restriction keeps 8% of
    it: the upper estimate counts all of sl's rows, the likely one
    PostgreSQL's estimate of sr ⋈ sl (and of that join with what a tuple
    may meet before, here nothing smaller).  With no parallel worker, a
    limit between the two keeps the eddy (it fits when run); a limit below
    the likely state keeps PostgreSQL's plan and says why, and the eddy
    planned anyway (under a larger limit) does spill there (TPC-H Q7 and
    Q9 under PostgreSQL's defaults with no parallel worker)."""
    conn = eddy_conn
    conn.execute("""
        CREATE TABLE sr (id int PRIMARY KEY, g int);
        INSERT INTO sr SELECT i, i % 25 FROM generate_series(1, 400) i;
        CREATE TABLE sl (id int, rid int, k int, v int, pad text);
        INSERT INTO sl SELECT i, 1 + i % 400, 1 + (i * 7919) % 30000, i % 100, md5(i::text)
            FROM generate_series(1, 120000) i;
        CREATE INDEX ON sl (rid);
        CREATE TABLE sc (id int, g int);
        INSERT INTO sc SELECT i, i % 25 FROM generate_series(1, 30000) i;
        ANALYZE sr, sl, sc;""")
    set_gucs(conn, join_method="index", pg__max_parallel_workers_per_gather=0)
    q = ("SELECT count(*), max(sl.pad) FROM sr, sl, sc "
         "WHERE sr.id = sl.rid AND sl.k = sc.id AND sr.g < 2")
    set_gucs(conn, max_memory="1GB")
    upper = estimate_kb(conn, q)
    full = analyzed(conn, q)
    assert "Batches Joined" not in full, full
    peak = full["Peak Memory"]
    set_gucs(conn, enabled="off")
    want = conn.execute(q).fetchall()
    set_gucs(conn, enabled="on")

    # between the likely state and the upper estimate: an eddy, unspilled
    limit = max(upper // 3, 4 * peak)
    assert limit < upper, (limit, upper, peak)
    set_gucs(conn, max_memory=f"{limit}kB")
    reasons = eddy_reasons(conn, q)
    assert any("spills what outgrows the limit" in r for r in reasons), reasons
    eddy = analyzed(conn, q)
    assert "Batches Joined" not in eddy, eddy
    assert conn.execute(q).fetchall() == want

    # below the likely state: PostgreSQL's plan, and the reason
    small = max(peak // 4, 64)
    set_gucs(conn, max_memory=f"{small}kB")
    assert not eddy_nodes(explain_json(conn, q))
    reasons = eddy_reasons(conn, q)
    assert any("would likely spill" in r for r in reasons), reasons
    assert conn.execute(q).fetchall() == want

    # ... where the eddy, planned under a larger limit, spills
    set_gucs(conn, max_memory="1GB")
    conn.execute(f"PREPARE lq AS {q}")
    assert eddy_nodes(explain_json(conn, "EXECUTE lq"))  # planned here, kept
    set_gucs(conn, max_memory=f"{small}kB")
    (eddy,) = eddy_nodes(explain_json(conn, "EXECUTE lq", analyze=True))
    assert eddy["Batches Joined"] >= 2, eddy
    assert conn.execute("EXECUTE lq").fetchall() == want


def test_stair_sized_for_the_rows_it_likely_holds(eddy_conn):
    """A STAIR sizes its slot array when it first stores, from the planner's
    estimate of the entries it will hold.  For a relation an index join
    reaches, that is the likely state (PostgreSQL's estimate of the join it
    is reached through), not the relation's rows: under a large
    eddy.max_memory, pl's STAIR, which holds the 1% of pl's 400,000 rows
    that pr's restriction reaches, was sized for all of them (a 6 MB slot
    array; TPC-H Q7's lineitem: 48 MB for 145,703 entries).  Where the
    estimate is low (an expression PostgreSQL estimates at 0.5% of pr, and
    half of pr passes it) the STAIR grows, and the answer stays
    PostgreSQL's."""
    conn = eddy_conn
    conn.execute("""
        CREATE TABLE pr (id int PRIMARY KEY, g int);
        INSERT INTO pr SELECT i, i % 100 FROM generate_series(1, 2000) i;
        CREATE TABLE pl (id int, rid int, k int);
        INSERT INTO pl SELECT i, 1 + i % 2000, 1 + (i::bigint * 7919) % 300000
            FROM generate_series(1, 400000) i;
        CREATE INDEX ON pl (rid);
        CREATE TABLE pc (id int, v int);
        INSERT INTO pc SELECT i, i % 7 FROM generate_series(1, 300000) i;
        ANALYZE pr, pl, pc;""")
    set_gucs(conn, join_method="index", max_memory="1GB",
             pg__max_parallel_workers_per_gather=0)
    q = ("SELECT count(*), sum(pc.v) FROM pr, pl, pc "
         "WHERE pr.id = pl.rid AND pl.k = pc.id AND {}")
    for cond, stored in (("pr.g < 1", 4000), ("(pr.g * 2) % 4 = 0", 200000)):
        set_gucs(conn, enabled="off")
        want = conn.execute(q.format(cond)).fetchall()
        set_gucs(conn, enabled="on")
        eddy = analyzed(conn, q.format(cond))
        st = stairs(eddy)
        assert st["pl.k"]["Inserted"] == stored, st
        assert conn.execute(q.format(cond)).fetchall() == want
        if stored == 4000:
            # 4,000 entries and their rows: well under the 6 MB slot array
            # that 400,000 entries would have had
            assert eddy["Peak Memory"] < 2048, eddy["Peak Memory"]
