"""An index join's lookup cache (issue 48; mod_indexjoin.c, "The lookup
cache"; eddy.index_cache).

Where a probe's keys repeat an earlier probe's, the index join answers from
the matches it kept rather than the index, as PostgreSQL's Memoize does
over an inner index scan; the selections over the index-joined relation
alone run at fetch while it keeps them, and their results are kept with
each match, so that a hit runs none of them.  Under `auto` the cache is on
where the planner expects at least half the probes to repeat a key, and
goes off when its first 4096 lookups hit less than a tenth of the time; it
holds at most work_mem x hash_mem_multiplier, then adds no key.  Where the
planner said no and the probes then outnumber its rows by far, auto starts
it late, unless the probing relation is unique on the key.  A join
whose key types differ, or with a volatile selection over the relation,
keeps nothing.  Read from EXPLAIN ANALYZE's counters, never from time;
every answer is PostgreSQL's (also under the random differential tests and
the fuzzer, which draw the setting).
"""

from __future__ import annotations

import pytest

from eddytools.db import eddy_nodes, explain_json, multiset, set_gucs, vanilla_multiset

FACT_ROWS = 30000
DIM_ROWS = 500

SCHEMA = f"""
CREATE TABLE icd AS SELECT g AS id, g % 10 AS cat, 'd' || g AS name, g::int8 AS id8
    FROM generate_series(1, {DIM_ROWS}) g;
ALTER TABLE icd ADD PRIMARY KEY (id);
CREATE UNIQUE INDEX icd_id8 ON icd (id8);
CREATE TABLE icf AS
    SELECT g AS id,
           CASE WHEN g % 97 = 0 THEN NULL ELSE (g * 7) % {DIM_ROWS} + 1 END AS did,
           g AS uid, g % 13 AS v
    FROM generate_series(1, {FACT_ROWS}) g;
CREATE TABLE icu AS SELECT g AS id, g % 7 AS w FROM generate_series(1, {FACT_ROWS}) g;
ALTER TABLE icu ADD PRIMARY KEY (id);
CREATE TABLE ico AS SELECT g AS id, g % 10 AS lim FROM generate_series(1, 5) g;
CREATE FUNCTION ic_opaque(int) RETURNS bool LANGUAGE plpgsql IMMUTABLE
    AS 'BEGIN RETURN $1 % 3 <> 0; END';
ANALYZE icd, icf, icu, ico;
"""

# the fact table's foreign key probes the dimension: 500 keys, 30,000 probes
STAR = "SELECT count(*), sum(icf.v), max(icd.name) FROM icf JOIN icd ON icd.id = icf.did"
# ... with selections over the dimension alone, one opaque to the planner
FILTERED = ("SELECT icd.cat, count(*) FROM icf JOIN icd ON icd.id = icf.did "
            "WHERE ic_opaque(icd.id) AND icd.cat <> 4 GROUP BY icd.cat")
# a key that never repeats
DISTINCT = "SELECT count(*), sum(icu.w) FROM icf JOIN icu ON icu.id = icf.uid WHERE icf.v < 12"
# int4 probes an int8 key
CROSS_TYPE = "SELECT count(*) FROM icf JOIN icd ON icd.id8 = icf.did"
# a volatile selection over the dimension
VOLATILE = ("SELECT count(*) >= 0 FROM icf JOIN icd ON icd.id = icf.did "
            "WHERE icd.cat + random() * 0 < 5")
# the eddy rescanned with a parameter that its fetch chain reads
CORRELATED = ("SELECT ico.id, (SELECT count(*) FROM icf JOIN icd ON icd.id = icf.did "
              "WHERE icd.cat < ico.lim) FROM ico")


@pytest.fixture
def ic(eddy_conn):
    eddy_conn.execute(SCHEMA)
    set_gucs(eddy_conn, join_method="index", pg__max_parallel_workers_per_gather=0)
    return eddy_conn


def index_joins(conn, query: str) -> list[dict]:
    eddies = eddy_nodes(explain_json(conn, query, analyze=True))
    return [op for e in eddies for op in e["Operators"]
            if op["Operator Type"] == "Index Join"]


def the_join(conn, query: str) -> dict:
    (op,) = index_joins(conn, query)
    return op


def selection(conn, query: str, text: str) -> dict:
    eddies = eddy_nodes(explain_json(conn, query, analyze=True))
    (op,) = [op for e in eddies for op in e["Operators"]
             if op["Operator Type"] == "Selection" and text in op["Predicate"]]
    return op


def test_the_setting(eddy_conn):
    assert eddy_conn.execute("SHOW eddy.index_cache").fetchone() == ("auto",)
    for v in ("on", "off", "auto"):
        set_gucs(eddy_conn, index_cache=v)


def test_repeated_keys_are_answered_from_the_cache(ic):
    """One miss per distinct key probed, every other probe a hit; the
    answer is PostgreSQL's, with the cache on, off and auto."""
    distinct = ic.execute("SELECT count(DISTINCT did) FROM icf").fetchone()[0]
    keyed = ic.execute("SELECT count(did) FROM icf").fetchone()[0]
    expected = vanilla_multiset(ic, STAR)
    for setting in ("auto", "on"):
        set_gucs(ic, index_cache=setting)
        op = the_join(ic, STAR)
        assert op["Index Cache Misses"] == distinct, op
        assert op["Index Cache Hits"] == keyed - distinct, op
        assert op["Index Cache Memory"] > 0 and op["Index Cache Off After Lookups"] == 0
        assert multiset(ic.execute(STAR).fetchall()) == expected
    set_gucs(ic, index_cache="off")
    assert "Index Cache Hits" not in the_join(ic, STAR)
    assert multiset(ic.execute(STAR).fetchall()) == expected


def test_selections_over_the_relation_are_kept_with_its_rows(ic):
    """The dimension's selections run at fetch, and a hit reads their
    results: the opaque one is evaluated once per distinct key and answered
    from the cache for every hit; the answer is PostgreSQL's."""
    set_gucs(ic, index_cache="on", selection_min_cost=0)
    op = the_join(ic, FILTERED)
    misses, hits = op["Index Cache Misses"], op["Index Cache Hits"]
    assert misses <= DIM_ROWS and hits > 10 * misses, op
    # every hit's row has its first selection's result kept (the second's
    # too, where the first passed it)
    assert op["Index Cache Results Reused"] >= hits, op
    # the selection counts each tuple it decided, by the cache or not: far
    # more than the matches fetched (at most one a miss)
    sel = selection(ic, FILTERED, "ic_opaque")
    assert sel["Tuples In"] > 10 * misses, sel
    assert multiset(ic.execute(FILTERED).fetchall()) == vanilla_multiset(ic, FILTERED)
    set_gucs(ic, index_cache="off")
    assert "Index Cache Results Reused" not in the_join(ic, FILTERED)
    assert multiset(ic.execute(FILTERED).fetchall()) == vanilla_multiset(ic, FILTERED)


def test_auto_keeps_nothing_where_keys_do_not_repeat(ic):
    """The planner knows icf.uid is distinct: auto keeps no cache; on keeps
    one, which misses on every probe."""
    probes = ic.execute("SELECT count(*) FROM icf WHERE v < 12").fetchone()[0]
    assert "Index Cache Hits" not in the_join(ic, DISTINCT)
    set_gucs(ic, index_cache="on")
    op = the_join(ic, DISTINCT)
    assert op["Index Cache Hits"] == 0 and op["Index Cache Misses"] == probes, op
    assert multiset(ic.execute(DISTINCT).fetchall()) == vanilla_multiset(ic, DISTINCT)


def test_auto_goes_off_when_the_planner_was_wrong(ic):
    """Statistics that say icf.uid repeats (ANALYZEd when it did), then
    every key made distinct: auto starts the cache, and it goes off after
    its first 4096 lookups hit nothing; the answer is PostgreSQL's."""
    ic.execute("ALTER TABLE icf SET (autovacuum_enabled = off)")
    ic.execute("UPDATE icf SET uid = id % 50 + 1")
    ic.execute("ANALYZE icf")
    ic.execute("UPDATE icf SET uid = id")
    op = the_join(ic, DISTINCT)
    assert op["Index Cache Off After Lookups"] == 4096, op
    assert op["Index Cache Hits"] == 0, op
    assert multiset(ic.execute(DISTINCT).fetchall()) == vanilla_multiset(ic, DISTINCT)


# the planner's statistics say no sale has v = 50; then most have
STALE = ("SELECT count(*), sum(icf.v), max(icd.name) FROM icf JOIN icd ON icd.id = icf.did "
         "WHERE icf.v = 50")
# ... and icu's rows, unique on id, probe icf's index on uid
STALE_UNIQUE = "SELECT count(*), sum(icf.v) FROM icu JOIN icf ON icf.uid = icu.id WHERE icu.w = 50"
LATE_MIN = 1000  # MEMO_LATE_MIN


def test_auto_starts_late_when_the_probes_outnumber_the_estimate(ic):
    """Statistics gone stale put about one row of icf after its filter, so
    the planner expects no key to repeat and auto keeps no cache; the
    probes come by the ten thousand, 500 keys among them: the cache starts
    at probe 1000 (MEMO_LATE_MIN, over 4x the planner's rows) and answers
    every later probe of a key it has.  The answer is PostgreSQL's."""
    ic.execute("ALTER TABLE icf SET (autovacuum_enabled = off)")
    ic.execute("ANALYZE icf")
    ic.execute("UPDATE icf SET v = 50 WHERE id % 10 <> 0")
    plan = ic.execute("EXPLAIN (FORMAT JSON) SELECT * FROM icf WHERE v = 50").fetchone()[0]
    assert plan[0]["Plan"]["Plan Rows"] * 4 < LATE_MIN  # the estimate is stale
    probes, distinct = ic.execute(
        "SELECT count(did), count(DISTINCT did) FROM icf WHERE v = 50").fetchone()
    op = the_join(ic, STALE)
    assert op["Index Cache On After Probes"] == LATE_MIN, op
    # every probe from the 1000th is looked up in the cache
    assert op["Index Cache Hits"] + op["Index Cache Misses"] == probes - LATE_MIN + 1, op
    assert op["Index Cache Misses"] <= distinct and op["Index Cache Off After Lookups"] == 0, op
    assert multiset(ic.execute(STALE).fetchall()) == vanilla_multiset(ic, STALE)
    # off means off
    set_gucs(ic, index_cache="off")
    assert "Index Cache Hits" not in the_join(ic, STALE)


def test_no_late_start_where_the_probing_relation_is_unique_on_the_key(ic):
    """icu's rows carry each id once (its primary key says so, whatever
    the statistics): however many probe, no key repeats, and auto starts
    no cache; the answer is PostgreSQL's."""
    ic.execute("CREATE INDEX icf_uid ON icf (uid)")
    ic.execute("ALTER TABLE icu SET (autovacuum_enabled = off)")
    ic.execute("ANALYZE icu, icf")
    ic.execute("UPDATE icu SET w = 50")
    op = the_join(ic, STALE_UNIQUE)
    assert op["Tuples In"] == FACT_ROWS, op
    assert "Index Cache Hits" not in op, op
    assert multiset(ic.execute(STALE_UNIQUE).fetchall()) == vanilla_multiset(ic, STALE_UNIQUE)


def test_a_full_cache_adds_no_key(ic):
    """At work_mem x hash_mem_multiplier it stops adding keys, and keeps
    answering those it has: fewer hits than keys repeated, the same
    answer."""
    set_gucs(ic, index_cache="on", pg__work_mem="64kB", pg__hash_mem_multiplier="1")
    op = the_join(ic, STAR)
    assert op["Index Cache Full After Lookups"] > 0, op
    assert op["Index Cache Memory"] >= 64, op
    assert multiset(ic.execute(STAR).fetchall()) == vanilla_multiset(ic, STAR)


@pytest.mark.parametrize("query", [CROSS_TYPE, VOLATILE])
def test_no_cache_across_types_or_over_a_volatile_selection(ic, query):
    """A key of another type (the cache compares probe keys with the join's
    operator) and a volatile selection (whose results cannot be kept):
    nothing is kept, even with the cache on."""
    set_gucs(ic, index_cache="on", selection_min_cost=0)
    for op in index_joins(ic, query):
        assert "Index Cache Hits" not in op, op
    assert multiset(ic.execute(query).fetchall()) == vanilla_multiset(ic, query)


def test_a_rescan_drops_the_cache(ic):
    """Each rescan with a new parameter, which the fetch chain reads, starts
    an empty cache: the answers are PostgreSQL's for every outer row."""
    set_gucs(ic, index_cache="on", selection_min_cost=0)
    assert eddy_nodes(explain_json(ic, CORRELATED))
    assert multiset(ic.execute(CORRELATED).fetchall()) == vanilla_multiset(ic, CORRELATED)
