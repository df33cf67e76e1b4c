"""Storing has a price only where the tuple is stored (issue 48): a join
direction that only probes keeps no filter of its relation ahead of it.

eddy.filter_before_store makes a base tuple pass its own relation's
selections before a join that keeps state takes it, so that no STAIR stores
a row its filters would drop.  A relation read last is never stored: once
every other source is exhausted, its direction of the join only probes, and
the constraint then only forces the selections first whatever they filter.
TPC-H Q16 at 64MB of work_mem (1.12x PostgreSQL's time): every partsupp row
went first to ``NOT (hashed SubPlan)``, which passes all of them, and then
to the join with part, which drops 86%.  With the constraint dropped where
the direction only probes, the rank policy sends the rows to the join first,
and the selection sees only what the join passes.  Counters from EXPLAIN
ANALYZE; answers against PostgreSQL's, under every policy, across rescans,
under migration, spilling and SteM mode.
"""

from __future__ import annotations

import pytest

from eddytools.db import (
    eddy_nodes,
    explain_json,
    multiset,
    set_gucs,
    sql_value,
    vanilla_multiset,
)

PART = 20000
PARTSUPP = 80000
SIZES = "(3, 17, 31)"        # 3 of 50 sizes: about 6% of part
QUERY = f"""
SELECT ps.ps_partkey, ps.ps_suppkey, p.p_size
FROM partsupp ps JOIN part p ON ps.ps_partkey = p.p_partkey
WHERE p.p_size IN {SIZES}
  AND ps.ps_suppkey NOT IN (SELECT s_suppkey FROM supplier WHERE s_complaint)"""


@pytest.fixture
def q16(eddy_conn):
    conn = eddy_conn
    conn.execute(f"""
        CREATE TABLE part (p_partkey int PRIMARY KEY, p_size int, pad text);
        INSERT INTO part SELECT g, 1 + (g * 7) % 50, repeat('p', 30)
        FROM generate_series(1, {PART}) g;
        CREATE TABLE supplier (s_suppkey int PRIMARY KEY, s_complaint bool);
        INSERT INTO supplier SELECT g, g % 250 = 0 FROM generate_series(1, 1000) g;
        CREATE TABLE partsupp (ps_partkey int, ps_suppkey int, pad text);
        INSERT INTO partsupp SELECT 1 + g % {PART}, 1 + (g * 13) % 1000, repeat('s', 10)
        FROM generate_series(1, {PARTSUPP}) g;
        ANALYZE part; ANALYZE supplier; ANALYZE partsupp;
    """)
    # both predicates routed (by default the size list is cheap enough to
    # stay in part's scan), partsupp read last (the build schedule)
    set_gucs(conn, join_method="hash", selection_min_cost=0, source_schedule="build",
             pg__max_parallel_workers_per_gather=0)
    return conn


def operators(conn) -> tuple[dict, dict, dict]:
    """(the selection over partsupp, the size selection, the join) of the one
    eddy, from EXPLAIN (ANALYZE, VERBOSE)."""
    (eddy,) = eddy_nodes(explain_json(conn, QUERY, analyze=True, verbose=True))
    ops = eddy["Operators"]
    subplan = [op for op in ops if op.get("Operator Type") == "Selection"
               and "SubPlan" in op["Predicate"]]
    size = [op for op in ops if op.get("Operator Type") == "Selection"
            and "p_size" in op["Predicate"]]
    joins = [op for op in ops if op.get("Operator Type") != "Selection"]
    assert len(subplan) == 1 and len(size) == 1 and len(joins) == 1, ops
    return subplan[0], size[0], joins[0]


def test_the_relation_read_last_meets_the_join_first(q16):
    passing_parts = sql_value(q16, f"SELECT count(*) FROM part WHERE p_size IN {SIZES}")
    matches = sql_value(q16, f"""SELECT count(*) FROM partsupp ps JOIN part p
                                 ON ps.ps_partkey = p.p_partkey WHERE p.p_size IN {SIZES}""")
    assert 0 < matches < PARTSUPP / 10
    set_gucs(q16, filter_before_store="on", routing_policy="rank")
    subplan, size, join = operators(q16)
    # the selection that passes (nearly) everything sees the join's output,
    # not every partsupp row: a few hundred rows of exploration at most
    assert subplan["Tuples In"] <= matches + PARTSUPP // 20, (subplan, join)
    assert join["Tuples In"] >= PARTSUPP + passing_parts - PARTSUPP // 20, join
    # part, which is stored, still passes its selection before the join
    (stair,) = [st for st in join["STAIRs"] if st["STAIR"] == "p.p_partkey"]
    assert stair["Inserted"] == passing_parts, stair
    assert size["Tuples In"] == PART, size
    assert multiset(q16.execute(QUERY).fetchall()) == vanilla_multiset(q16, QUERY)


def test_without_the_setting_nothing_changes_for_the_last_relation(q16):
    """The same routing of partsupp with the setting off: the constraint no
    longer costs anything where nothing is stored."""
    matches = sql_value(q16, f"""SELECT count(*) FROM partsupp ps JOIN part p
                                 ON ps.ps_partkey = p.p_partkey WHERE p.p_size IN {SIZES}""")
    set_gucs(q16, filter_before_store="off", routing_policy="rank")
    subplan, _, _ = operators(q16)
    assert subplan["Tuples In"] <= matches + PARTSUPP // 20, subplan


@pytest.mark.parametrize("policy", ["rank", "lottery", "cumulative", "random", "fixed"])
@pytest.mark.parametrize("schedule", ["build", "proportional"])
def test_answers_under_every_policy(q16, policy, schedule):
    """Where part is still being read (the proportional schedule) the
    constraint holds for partsupp until part is exhausted, then drops; the
    part STAIR stores only rows of the listed sizes either way."""
    passing_parts = sql_value(q16, f"SELECT count(*) FROM part WHERE p_size IN {SIZES}")
    set_gucs(q16, filter_before_store="on", routing_policy=policy, source_schedule=schedule,
             reopt_frequency=10)
    _, _, join = operators(q16)
    (stair,) = [st for st in join["STAIRs"] if st["STAIR"] == "p.p_partkey"]
    assert stair["Inserted"] == passing_parts, stair
    assert multiset(q16.execute(QUERY).fetchall()) == vanilla_multiset(q16, QUERY)


def test_answers_across_rescans(q16):
    """A correlated subquery rescans the eddy once per outer row: at the end
    of each scan some direction only probes and drops its filters, and the
    rescan puts them back (exec.c, EddyStorePrereqsUpdate).  Answers equal
    PostgreSQL's on every scan, under every schedule and under random
    routing.  (Only the answers: which relation a rescanned eddy stores
    varies from scan to scan here, so no counter pins the constraint.)"""
    query = """
        SELECT o.k, (SELECT count(*) FROM partsupp ps JOIN part p ON ps.ps_partkey = p.p_partkey
                     WHERE p.p_size = o.k AND ps.ps_suppkey % 2 = 0)
        FROM (VALUES (3), (17), (31), (50)) o(k)"""
    (eddy,) = eddy_nodes(explain_json(q16, query, analyze=True))
    assert eddy["Actual Loops"] == 4, eddy["Actual Loops"]
    for policy in ("rank", "random"):
        for schedule in ("build", "proportional"):
            set_gucs(q16, filter_before_store="on", source_schedule=schedule,
                     routing_policy=policy, reopt_frequency=1)
            assert multiset(q16.execute(query).fetchall()) == vanilla_multiset(q16, query)


@pytest.mark.parametrize("settings", [
    {"migration": "greedy", "debug_migrate_every": 3, "routing_policy": "cumulative",
     "source_schedule": "proportional"},
    {"debug_spill_after": 40},
    {"state_mode": "stems", "source_schedule": "proportional"},
    {"random_start": 7},
])
def test_answers_under_migration_spilling_stems_and_random_starts(q16, settings):
    set_gucs(q16, filter_before_store="on", **settings)
    assert multiset(q16.execute(QUERY).fetchall()) == vanilla_multiset(q16, QUERY)
