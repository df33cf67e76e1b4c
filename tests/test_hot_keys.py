"""Hot keys (issue 48; mod_indexjoin.c, "Hot keys"; eddy.hot_keys).

An index join reads the most common values of its indexed relation's key
column from the statistics when it starts, and keeps those that match at
least 1,000 rows and ten times the average key's share.  A tuple whose
probe would be of one of them goes first to the eligible module expected
to pass the fewest of it, if that is under one per tuple (a selection, a
join that filters), and to the index join once none is left: the hot
probe is made only for a tuple that survived its filters.  Read from
EXPLAIN ANALYZE's counters, never from time; every answer is PostgreSQL's
(also under the random differential tests and the fuzzer, which draw the
setting).

The data: 40,000 facts, half of them on key 0 of a 2,000-row dimension,
the rest ten to a key; the dimension's category 0 (that of its row 0) is
in department 0, which the queries' filter on the category drops.  The
dimension is read first in its physical order, so its row 0 comes first,
and the random plans of eddy.random_start send it to the index join into
the facts or to the category join as their seed says.
"""

from __future__ import annotations

import pytest

from eddytools.db import eddy_nodes, explain_json, multiset, set_gucs, vanilla_multiset

FACTS = 40000
HOT = FACTS // 2
DIM = 2000

SCHEMA = f"""
CREATE TABLE hkf AS
    SELECT g AS id, CASE WHEN g % 2 = 0 THEN 0 ELSE 1 + (g / 2) % {DIM - 1} END AS k,
           g % 7 AS v
    FROM generate_series(1, {FACTS}) g;
CREATE INDEX hkf_k ON hkf (k);
CREATE TABLE hkd AS SELECT g AS id, g % 20 AS cat FROM generate_series(0, {DIM - 1}) g;
CREATE TABLE hkc AS SELECT g AS id, g % 4 AS dept FROM generate_series(0, 19) g;
ANALYZE hkf, hkd, hkc;
"""

# the hot dimension row (category 0, department 0) is dropped by the filter
DROPPED = """SELECT count(*), sum(f.v) FROM hkd d JOIN hkf f ON f.k = d.id
             JOIN hkc c ON c.id = d.cat WHERE c.dept = 1"""
# ... and passes it: its 20,000 matches are in the answer
KEPT = """SELECT count(*), sum(f.v) FROM hkd d JOIN hkf f ON f.k = d.id
          JOIN hkc c ON c.id = d.cat WHERE c.dept = 0"""
SEEDS = range(1, 9)


@pytest.fixture
def hk(eddy_conn):
    eddy_conn.execute(SCHEMA)
    set_gucs(eddy_conn, join_method="index", reopt_frequency=100,
             pg__max_parallel_workers_per_gather=0)
    return eddy_conn


def the_index_join(conn, query: str, analyze: bool = True) -> dict:
    (eddy,) = eddy_nodes(explain_json(conn, query, analyze=analyze))
    (op,) = [op for op in eddy["Operators"] if op["Operator Type"] == "Index Join"]
    return op


def test_the_setting(eddy_conn):
    assert eddy_conn.execute("SHOW eddy.hot_keys").fetchone() == ("on",)
    set_gucs(eddy_conn, hot_keys="off")


def test_hot_keys_come_from_the_statistics(hk):
    """Key 0 alone is hot (half the facts; the others have 10 rows each);
    EXPLAIN shows it without ANALYZE; off, under row-level security, or
    without statistics, none."""
    op = the_index_join(hk, DROPPED, analyze=False)
    assert op["Hot Keys"] == 1, op
    assert op["Hot Key Matches"] >= 1000, op
    set_gucs(hk, hot_keys="off")
    assert "Hot Keys" not in the_index_join(hk, DROPPED, analyze=False)
    set_gucs(hk, hot_keys="on")
    # row-level security: the statistics may describe rows the user cannot see
    hk.execute("ALTER TABLE hkf ENABLE ROW LEVEL SECURITY")
    assert "Hot Keys" not in the_index_join(hk, DROPPED, analyze=False)
    hk.execute("ALTER TABLE hkf DISABLE ROW LEVEL SECURITY")
    assert the_index_join(hk, DROPPED, analyze=False)["Hot Keys"] == 1
    hk.execute("DELETE FROM pg_statistic WHERE starelid = 'hkf'::regclass")
    assert "Hot Keys" not in the_index_join(hk, DROPPED, analyze=False)


def test_a_hot_probe_waits_for_the_filter_that_drops_it(hk):
    """Under every random start, the hot dimension row goes to the category
    join before the index join, which drops it: the index join never
    fetches its 20,000 matches.  With eddy.hot_keys off, some seed's random
    plan does (the setting matters here).  The answer is PostgreSQL's."""
    expected = vanilla_multiset(hk, DROPPED)
    deferred = 0
    for seed in SEEDS:
        set_gucs(hk, random_start=seed)
        op = the_index_join(hk, DROPPED)
        assert op["Tuples Out"] < HOT, (seed, op)
        deferred += op["Hot Probes Deferred"]
        assert multiset(hk.execute(DROPPED).fetchall()) == expected, seed
    assert deferred >= 1
    set_gucs(hk, hot_keys="off")
    fetched = []
    for seed in SEEDS:
        set_gucs(hk, random_start=seed)
        fetched.append(the_index_join(hk, DROPPED)["Tuples Out"])
        assert multiset(hk.execute(DROPPED).fetchall()) == expected, seed
    assert max(fetched) >= HOT, fetched


def test_a_hot_probe_that_passes_its_filters_is_made(hk):
    """The hot row passes the filter: its probe is made after it, and the
    answer holds its 20,000 matches, under every start and with the
    setting off."""
    expected = vanilla_multiset(hk, KEPT)
    set_gucs(hk, enabled="off")
    count = hk.execute(KEPT).fetchone()[0]
    set_gucs(hk, enabled="on")
    assert count >= HOT, count
    for seed in (0, *SEEDS):
        set_gucs(hk, random_start=seed)
        op = the_index_join(hk, KEPT)
        assert op["Tuples Out"] >= HOT, (seed, op)
        assert multiset(hk.execute(KEPT).fetchall()) == expected, seed


def test_fixed_and_random_policies_keep_their_plans(hk):
    """The fixed policy's plan (and the random policy's) is a baseline:
    no probe is deferred under them."""
    expected = vanilla_multiset(hk, DROPPED)
    for policy in ("fixed", "random"):
        set_gucs(hk, routing_policy=policy)
        for seed in (0, 1, 2):
            set_gucs(hk, random_start=seed)
            op = the_index_join(hk, DROPPED)
            assert op["Hot Probes Deferred"] == 0, (policy, seed, op)
            assert multiset(hk.execute(DROPPED).fetchall()) == expected


FOUR = """SELECT count(*), sum(f.v), sum(g.x) FROM hkd d JOIN hkf f ON f.k = d.id
          JOIN hkc c ON c.id = d.cat JOIN hkg g ON g.id = f.v
          WHERE c.dept = 1 AND g.x < 3"""
SELECTED = """SELECT c.dept, count(*) FROM hkd d JOIN hkf f ON f.k = d.id
              JOIN hkc c ON c.id = d.cat WHERE d.id % 3 = 0 AND c.dept <> 2
              GROUP BY c.dept"""


def test_every_answer_is_postgresqls_under_the_services(hk):
    """Hot probes deferred under every policy that defers them, from the
    planner's start and a random one, with state migration (forced at every
    point of stasis), SteM mode and spilling: every answer is PostgreSQL's,
    and some runs defer."""
    hk.execute("CREATE TABLE hkg AS SELECT g AS id, g % 5 AS x FROM generate_series(0, 6) g;"
               "ANALYZE hkg")
    queries = (DROPPED, KEPT, FOUR, SELECTED)
    expected = {q: vanilla_multiset(hk, q) for q in queries}
    deferred = 0
    for policy in ("rank", "cumulative", "lottery"):
        for seed in (0, 3):
            for migration, every in (("off", 0), ("guarded", 0), ("greedy", 1)):
                for mode in ("stairs", "stems"):
                    for spill in (0, 500):
                        set_gucs(hk, routing_policy=policy, random_start=seed,
                                 migration=migration, debug_migrate_every=every,
                                 state_mode=mode, debug_spill_after=spill)
                        for q in queries:
                            got = multiset(hk.execute(q).fetchall())
                            assert got == expected[q], (policy, seed, migration, mode, spill, q)
                        deferred += the_index_join(hk, DROPPED).get("Hot Probes Deferred", 0)
    assert deferred > 0
