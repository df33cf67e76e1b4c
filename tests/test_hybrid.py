"""The hybrid index/hash join (eddy.join_method = hybrid, extension/src/mod_hybrid.c):
a leaf relation t with an index on the join keys is reached by its scan and by
its index at once, both building one SteM; an R-side probe goes to the index or
is stored (hash) per tuple, and an index lookup marks its key complete, so later
probes of the key are answered from the SteM (the index cache, SteMs paper
section 3.3) and t's scanned copies of rows it fetched are dropped as
duplicates (section 3.2).  Every result is compared with PostgreSQL's own
(eddy.enabled = off); the counters come from EXPLAIN ANALYZE's structured
output, never from time.
"""

from __future__ import annotations

import psycopg
import pytest

from eddytools.db import (
    EXECUTOR_DEFAULTS,
    EXECUTOR_VARIANTS,
    PARALLEL_FORCED,
    eddy_nodes,
    explain_json,
    multiset,
    set_core_gucs,
    set_gucs,
    vanilla_multiset,
)

SCHEMA = """
CREATE TABLE hr (id int, a int, b text);
INSERT INTO hr SELECT g, CASE WHEN g % 97 = 0 THEN NULL ELSE g % 250 END, 'b' || (g % 7)
  FROM generate_series(1, 1000) g;
CREATE TABLE ht (x int, pay text, flag int);
INSERT INTO ht SELECT g % 400, 'p' || g, g % 5 FROM generate_series(1, 3000) g;
INSERT INTO ht SELECT NULL, 'null' || g, 1 FROM generate_series(1, 20) g;
CREATE INDEX ht_x ON ht (x);
CREATE TABLE hu (id int, rid int, w int);
INSERT INTO hu SELECT g, g % 1000 + 1, g % 13 FROM generate_series(1, 1500) g;
CREATE TABLE hk (k text, v int);
INSERT INTO hk SELECT 'b' || (g % 9), g FROM generate_series(1, 300) g;
CREATE INDEX hk_k ON hk USING hash (k);
CREATE TABLE h8 (x8 int8, v int);
INSERT INTO h8 SELECT g % 300, g FROM generate_series(1, 900) g;
CREATE INDEX h8_x ON h8 (x8);
ANALYZE hr; ANALYZE ht; ANALYZE hu; ANALYZE hk; ANALYZE h8;
"""

# R: 1,000 rows over 250 distinct non-NULL keys (hr.a); T (ht) has duplicates
# of every key and NULL keys.
R_KEYS = 250
QUERIES = {
    "two": "SELECT hr.id, ht.pay FROM hr JOIN ht ON hr.a = ht.x",
    "t_selected": "SELECT hr.id, ht.pay FROM hr JOIN ht ON hr.a = ht.x "
                  "WHERE ht.flag <> 2 AND hr.id % 3 <> 0",
    "three": "SELECT hu.w, hr.b, ht.pay FROM hu JOIN hr ON hr.id = hu.rid "
             "JOIN ht ON ht.x = hr.a WHERE hu.w < 9",
    "text_hash_index": "SELECT hr.id, hk.v FROM hr JOIN hk ON hk.k = hr.b WHERE hr.id < 200",
}
ROUTES = ("auto", "index", "hash", "random")


@pytest.fixture
def hdb(eddy_conn):
    eddy_conn.execute(SCHEMA)
    set_gucs(eddy_conn, join_method="hybrid")
    return eddy_conn


def hybrid_modules(conn: psycopg.Connection, query: str) -> list[dict]:
    plan = explain_json(conn, query, analyze=True)
    eddies = eddy_nodes(plan)
    assert len(eddies) == 1
    return [op for op in eddies[0].get("Operators", [])
            if op.get("Operator Type") == "Hybrid Join"]


def test_planner_offers_hybrid_joins(hdb):
    for name, query in QUERIES.items():
        hybrids = hybrid_modules(hdb, query)
        assert hybrids, f"{name}: no hybrid join"
    # the two ends of the three-way join's t edge: t is the leaf
    (h,) = hybrid_modules(hdb, QUERIES["three"])
    assert h["Relation Name"] == "ht" and h["Access"] == "scan and index"
    set_gucs(hdb, join_method="auto")
    assert not hybrid_modules(hdb, QUERIES["two"])


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("variant", range(len(EXECUTOR_VARIANTS)))
def test_results_equal_vanilla(hdb, route, variant):
    settings = dict(EXECUTOR_DEFAULTS) | EXECUTOR_VARIANTS[variant]
    for schedule in ("build", "proportional"):
        set_gucs(hdb, hybrid_route=route, **(settings | {"source_schedule": schedule}))
        for name, query in QUERIES.items():
            got = multiset(hdb.execute(query).fetchall())
            assert got == vanilla_multiset(hdb, query), (name, route, settings, schedule)


@pytest.mark.parametrize("route", ROUTES)
def test_results_equal_vanilla_cache_off(hdb, route):
    """With the cache off every lookup is an index join's, whatever the scan
    of t has built or will build: results still equal vanilla."""
    for schedule in ("build", "proportional"):
        set_gucs(hdb, hybrid_route=route, hybrid_cache="off", source_schedule=schedule)
        for name, query in QUERIES.items():
            got = multiset(hdb.execute(query).fetchall())
            assert got == vanilla_multiset(hdb, query), (name, route, schedule)


def test_routes_are_taken(hdb):
    """random sends misses both ways, so stored R tuples meet rows the index
    builds later (the frame's first phase): results still equal vanilla."""
    set_gucs(hdb, hybrid_route="random", source_schedule="proportional", hybrid_cache="on")
    (h,) = hybrid_modules(hdb, QUERIES["two"])
    assert h["Probes by Index"] > 0 and h["Probes by Hash"] > 0
    assert h["Index Rows Present"] + h["Index Rows Built"] == h["Index Fetches"]


def test_index_cache_figure7(hdb):
    """R reaches T's index once per distinct key; the rest comes from the cache.
    With R read before T (T held back), every R tuple is answered by index or
    cache; the index route commits at once (nothing waits in the STAIR), so
    T's scan is ended early, having read no more than its first row."""
    set_gucs(hdb, hybrid_route="index", source_schedule="build", source_delays="ht=150")
    (h,) = hybrid_modules(hdb, QUERIES["two"])
    assert h["Probes after Scan"] == 0
    assert h["Probes by Index"] == R_KEYS
    assert h["Probes from Cache"] == 1000 - 10 - R_KEYS  # 10 NULL keys
    assert h["Probes by Hash"] == 0
    assert h["Scan Ended Early After Rows Read"] <= 1
    assert h["Index Rows Present"] == 0
    assert got_equal(hdb, QUERIES["two"])


def test_cache_off_where_keys_do_not_repeat(hdb):
    """An outer side whose keys are all distinct (the planner knows): the
    first 64 lookups hit nothing, so the cache goes off at its first
    judgement, and every later lookup builds nothing.  With the cache kept
    (on) every fetched row is built.  Results equal vanilla both ways."""
    hdb.execute("""
        CREATE TABLE hdr (id int, a int);
        INSERT INTO hdr SELECT g, (g * 7) % 3001 FROM generate_series(1, 2000) g;
        CREATE TABLE hdt (x int, pay text);
        INSERT INTO hdt SELECT g % 3000, 'p' || g FROM generate_series(1, 6000) g;
        CREATE INDEX hdt_x ON hdt (x);
        ANALYZE hdr; ANALYZE hdt;
    """)
    query = "SELECT hdr.id, hdt.pay FROM hdr JOIN hdt ON hdt.x = hdr.a"
    set_gucs(hdb, hybrid_route="index", source_schedule="build")
    (h,) = hybrid_modules(hdb, query)
    assert h["Probes by Index"] == 2000 and h["Probes from Cache"] == 0
    assert h["Index Cache Off After Lookups"] == 64
    assert h["Uncached Lookups"] == 2000 - 64
    assert 0 < h["Index Rows Built"] <= 2 * 64 < h["Index Fetches"]
    assert got_equal(hdb, query)
    set_gucs(hdb, hybrid_cache="on")
    (h,) = hybrid_modules(hdb, query)
    assert "Index Cache Off After Lookups" not in h and h["Uncached Lookups"] == 0
    assert h["Index Rows Built"] == h["Index Fetches"]
    assert got_equal(hdb, query)


def test_duplicates_not_built(hdb):
    """Every row the index built is later read by T's scan (T held back):
    its copy is not built again, and probes the R tuples stored on the hash
    route (random: both routes)."""
    set_gucs(hdb, hybrid_route="random", source_schedule="build", source_delays="ht=150",
             hybrid_cache="on")
    (h,) = hybrid_modules(hdb, QUERIES["two"])
    assert h["Duplicates Dropped"] == h["Index Rows Built"] > 0
    assert h["Index Rows Present"] == 0
    assert h["STAIR Inserted"] > 0
    assert "Scan Ended Early After Rows Read" not in h
    assert got_equal(hdb, QUERIES["two"])


def test_scan_ended_early_by_cost(hdb):
    """A small R against a large indexed T: the observed lookups cost less
    than the rest of T's scan, so the module commits to the index and ends
    the scan (the margin is over 100x: 200 lookups against 300,000 rows)."""
    hdb.execute("CREATE TABLE hbig (x int, pay text); "
                "INSERT INTO hbig SELECT g, 'p' || g FROM generate_series(1, 300000) g; "
                "CREATE INDEX hbig_x ON hbig (x); ANALYZE hbig")
    query = "SELECT hr.id, hbig.pay FROM hr JOIN hbig ON hbig.x = hr.id * 7 WHERE hr.id <= 200"
    # PostgreSQL's plan would be an index nested loop (kept as an index join)
    set_gucs(hdb, hybrid_route="auto", pg__enable_nestloop="off")
    (h,) = hybrid_modules(hdb, query)
    assert h["Access"] == "scan and index"
    assert h["Scan Ended Early After Rows Read"] < 300000 // 2
    assert h["Probes by Hash"] == 0
    assert got_equal(hdb, query)


def test_commit_revoked_when_r_outgrows_its_estimate(hdb):
    """The planner expects about 50 R rows (two predicates it takes for
    independent agree on 1 row in 100, not 1 in 10,000), 5,000 come.  The
    module commits to the index after its learning lookups, T unread (the
    build schedule reads R first), and weighs the commit again as R grows:
    with each lookup slowed to 50 us, looking up every R tuple costs more
    than T's scan, so the commit is revoked, the rest of R waits in the
    STAIR and T's scan runs to its end.  With R as small as estimated the
    commit stands and the scan is cut before its first row."""
    hdb.execute("""
        CREATE TABLE hmis (id int, c1 int, c2 int);
        INSERT INTO hmis SELECT g, g % 100, g % 100 FROM generate_series(1, 500000) g;
        CREATE TABLE hmt (x int, pay text);
        INSERT INTO hmt SELECT g, 'p' || g FROM generate_series(1, 100000) g;
        CREATE INDEX hmt_x ON hmt (x);
        ANALYZE hmis; ANALYZE hmt;
    """)
    query = ("SELECT hmis.id, hmt.pay FROM hmis JOIN hmt ON hmt.x = hmis.id % 100000 "
             "WHERE hmis.c1 = 7 AND hmis.c2 = 7")
    set_gucs(hdb, hybrid_route="auto", source_schedule="build", debug_index_delay=50,
             pg__enable_nestloop="off")
    (h,) = hybrid_modules(hdb, query)
    assert h["Access"] == "scan and index"
    assert h["Index Route Committed After Tuples"] >= 3, h
    revoked = h.get("Index Route Revoked After Tuples", 0)
    assert revoked > h["Index Route Committed After Tuples"], h
    assert h["Probes by Index"] < 5000 and h["Probes by Hash"] > 0, h
    assert h["Probes by Index"] + h["Probes by Hash"] + h["Probes from Cache"] == 5000, h
    assert "Scan Ended Early After Rows Read" not in h, h
    assert got_equal(hdb, query)

    small = query + " AND hmis.id <= 3000"      # 30 rows: the commit stands
    (h,) = hybrid_modules(hdb, small)
    assert h["Index Route Committed After Tuples"] >= 3, h
    assert "Index Route Revoked After Tuples" not in h, h
    assert h["Scan Ended Early After Rows Read"] == 0, h
    assert got_equal(hdb, small)


def test_no_lookup_after_scan(hdb):
    """T's scan read first: its SteM is complete, no R tuple goes to the index."""
    set_gucs(hdb, hybrid_route="index", source_schedule="build", source_delays="hr=150")
    (h,) = hybrid_modules(hdb, QUERIES["two"])
    assert h["Probes by Index"] == 0 and h["Index Fetches"] == 0
    assert h["Probes after Scan"] == 1000 - 10
    assert h["SteM Complete After Rows Read"] == 3020
    assert got_equal(hdb, QUERIES["two"])


def test_selections_before_build(hdb):
    """T's own selection runs on each fetched row: the ones it drops are never
    built (nor cached), and the scanned copies of the rest are duplicates."""
    set_gucs(hdb, hybrid_route="random", source_delays="ht=150", hybrid_cache="on")
    query = "SELECT hr.id, ht.pay FROM hr JOIN ht ON hr.a = ht.x WHERE ht.flag <> 2"
    (h,) = hybrid_modules(hdb, query)
    assert h["Index Rows Filtered"] > 0
    assert h["Index Rows Built"] + h["Index Rows Filtered"] == h["Index Fetches"]
    assert h["Duplicates Dropped"] == h["Index Rows Built"]
    assert got_equal(hdb, query)


def test_scanned_copy_paired(hdb):
    """T read first in part, then R looks its keys up: the rows fetched that
    the scan had built already are paired with them, not built again."""
    set_gucs(hdb, hybrid_route="index", source_schedule="proportional",
             source_rates="ht=20", hybrid_cache="on")
    (h,) = hybrid_modules(hdb, QUERIES["two"])
    assert h["Index Rows Present"] > 0
    assert got_equal(hdb, QUERIES["two"])


def got_equal(conn: psycopg.Connection, query: str) -> bool:
    return multiset(conn.execute(query).fetchall()) == vanilla_multiset(conn, query)


def test_visibility_updates_deletes(hdb):
    hdb.execute("DELETE FROM ht WHERE x % 7 = 3")
    hdb.execute("UPDATE ht SET pay = pay || 'u', x = x + 1 WHERE flag = 4")
    for route in ROUTES:
        set_gucs(hdb, hybrid_route=route, source_schedule="proportional")
        for query in QUERIES.values():
            assert got_equal(hdb, query), route
    # the transaction's own changes, seen by the index fetches and the scan
    hdb.execute("BEGIN")
    try:
        hdb.execute("UPDATE ht SET x = 7 WHERE x = 8")
        hdb.execute("INSERT INTO ht SELECT 5, 'new' || g, 0 FROM generate_series(1, 9) g")
        set_gucs(hdb, hybrid_route="index")
        assert got_equal(hdb, QUERIES["two"])
    finally:
        hdb.execute("ROLLBACK")


def test_rescans_cursors_prepared(hdb):
    set_gucs(hdb, hybrid_route="random")
    lateral = ("SELECT v.k, s.n FROM (VALUES (0), (1), (2), (3)) v(k), LATERAL ("
               "SELECT count(*) AS n FROM hr JOIN ht ON hr.a = ht.x "
               "WHERE hr.id % 4 = v.k OFFSET 0) s")
    assert got_equal(hdb, lateral)
    with hdb.transaction():
        cur = hdb.cursor(name="hc")
        cur.execute(QUERIES["two"])
        rows = cur.fetchmany(100) + cur.fetchall()
    assert multiset(rows) == vanilla_multiset(hdb, QUERIES["two"])
    hdb.execute("SET plan_cache_mode = force_generic_plan")
    hdb.execute("PREPARE hp(int) AS SELECT hr.id, ht.pay FROM hr JOIN ht ON hr.a = ht.x "
                "WHERE hr.id > $1")
    for route in ROUTES:
        set_gucs(hdb, hybrid_route=route)
        for p in (0, 500):
            got = multiset(hdb.execute(f"EXECUTE hp({p})").fetchall())
            want = vanilla_multiset(hdb, f"SELECT hr.id, ht.pay FROM hr JOIN ht ON hr.a = ht.x "
                                         f"WHERE hr.id > {p}")
            assert got == want, route


def test_index_join_with_cache(hdb):
    """PostgreSQL's index nested loop into t stays an index join, with the
    cache: one lookup per distinct key.  hr's keys cycle, so the first 250
    lookups hit nothing; eddy.hybrid_cache = auto keeps the cache on the
    planner's share of repeated keys (3 in 4)."""
    hdb.execute("SET enable_hashjoin = off; SET enable_mergejoin = off")
    (h,) = hybrid_modules(hdb, QUERIES["two"])
    assert "Index Cache Off After Lookups" not in h
    assert h["Access"] == "index"
    assert h["Probes by Index"] == R_KEYS
    assert h["Probes from Cache"] == 1000 - 10 - R_KEYS
    assert h["Duplicates Dropped"] == 0
    assert got_equal(hdb, QUERIES["two"])


def test_not_offered_cross_type(hdb):
    """Keys of two types: the cache would be probed with either end's; the
    planner says why at DEBUG1 and makes a hash join."""
    notices: list[str] = []
    hdb.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
    hdb.execute("SET client_min_messages = debug1")
    try:
        query = "SELECT hr.id, h8.v FROM hr JOIN h8 ON h8.x8 = hr.a"
        assert not hybrid_modules(hdb, query)
        assert any("no hybrid join" in n and "two types" in n for n in notices), notices
        assert got_equal(hdb, query)
    finally:
        hdb.execute("RESET client_min_messages")


def test_state_services_refused(hdb):
    """Migration and spilling would rebuild STAIRs without the cache's rows:
    refused, and the results stay right with them asked for."""
    set_gucs(hdb, hybrid_route="random", migration="greedy", debug_migrate_every="3",
             debug_spill_after="40")
    assert got_equal(hdb, QUERIES["three"])
    set_gucs(hdb, state_mode="stems")
    plan = explain_json(hdb, QUERIES["two"], analyze=True)
    (eddy,) = eddy_nodes(plan)
    assert "has no SteM mode" in str(eddy)
    assert got_equal(hdb, QUERIES["two"])


def test_state_services_refusal_said_at_planning(hdb):
    """With eddy.migration on, the planner still offers the hybrid join and
    says at DEBUG1 that its eddy will neither migrate nor spill; EXPLAIN
    ANALYZE says why nothing moved."""
    notices: list[str] = []
    hdb.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
    set_gucs(hdb, migration="guarded")
    hdb.execute("SET client_min_messages = debug1")
    try:
        assert hybrid_modules(hdb, QUERIES["two"])
        said = [n for n in notices if n.startswith("eddy: hybrid join between")]
        assert said and all("does not migrate state" in n and "does not spill" in n
                            for n in said), notices
        notices.clear()
        hdb.execute("SET eddy.migration = off")
        hybrid_modules(hdb, QUERIES["two"])
        said = [n for n in notices if n.startswith("eddy: hybrid join between")]
        assert said and not any("migrate" in n for n in said), notices
    finally:
        hdb.execute("RESET client_min_messages")
    set_gucs(hdb, migration="guarded")
    (eddy,) = eddy_nodes(explain_json(hdb, QUERIES["two"], analyze=True))
    assert "caches index lookups" in str(eddy.get("State Migration")), eddy


def test_join_method_values(hdb):
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        hdb.execute("SET eddy.join_method = 'hybird'")
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        hdb.execute("SET eddy.hybrid_route = 'sometimes'")


def test_explain_text(hdb):
    set_gucs(hdb, hybrid_route="index", source_delays="ht=150")
    rows = hdb.execute("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "
                       + QUERIES["two"]).fetchall()
    text = "\n".join(r[0] for r in rows)
    assert "Hybrid Join 1: (hr.a = ht.x), ht by scan and index" in text
    assert f"Probes: Index: {R_KEYS}  Hash: 0  Cache: {1000 - 10 - R_KEYS}  After Scan: 0" in text
    assert "Scan Ended Early: after" in text and "ht 0 (cut)" in text


def test_not_offered_volatile(hdb):
    notices: list[str] = []
    hdb.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
    hdb.execute("SET client_min_messages = debug1")
    try:
        query = ("SELECT hr.id, ht.pay FROM hr JOIN ht ON hr.a = ht.x "
                 "WHERE ht.flag < 10 * random() + 5")
        assert not hybrid_modules(hdb, query)
        assert any("no hybrid join" in n and "volatile" in n for n in notices), notices
    finally:
        hdb.execute("RESET client_min_messages")


@pytest.mark.parametrize("exchange", ("auto", "always", "off"))
def test_parallel_plans(hdb, exchange):
    """Parallel plans forced: a partial scan of T or an exchanged state turns
    the index route off (the index would return every participant's rows);
    the results stay PostgreSQL's."""
    set_core_gucs(hdb, PARALLEL_FORCED)
    set_gucs(hdb, parallel_exchange=exchange, hybrid_route="random")
    for name, query in QUERIES.items():
        assert got_equal(hdb, query), (name, exchange)
