"""Eddies and parallel query (extension/src/planner.c, parallel_plan_cheaper).

Eddies run serially.  Where PostgreSQL would run a join block in parallel (a
Gather over the block's cheapest partial path costs less than its cheapest
serial path), the block keeps PostgreSQL's plan and the planner says why at
DEBUG1; where it would not, the block gets its eddy.  The serial eddy's rows
are those of PostgreSQL's parallel plan (forced by zero parallel costs).
"""

from __future__ import annotations

import pytest

from eddytools.db import eddy_nodes, eddy_reasons, explain_json, multiset, plan_nodes, set_gucs

SCHEMA = """
CREATE TABLE pa AS SELECT g AS id, g % 5000 AS k, md5(g::text) AS s
    FROM generate_series(1, 200000) g;
CREATE TABLE pb AS SELECT g AS id, g % 5000 AS k, g % 10 AS j FROM generate_series(1, 100000) g;
CREATE TABLE pc AS SELECT g AS j, 'c' || g AS name FROM generate_series(0, 9) g;
ANALYZE pa, pb, pc;
"""

QUERIES = [
    "SELECT count(*), sum(pa.id), max(pc.name) FROM pa JOIN pb ON pa.k = pb.k "
    "JOIN pc ON pc.j = pb.j WHERE pa.id % 7 <> 0",
    "SELECT pa.id, pb.id FROM pa JOIN pb ON pa.k = pb.k WHERE pa.id < 3000 AND pb.j = 3",
    "SELECT pc.name, count(*) FROM pa JOIN pb ON pa.k = pb.k JOIN pc ON pc.j = pb.j "
    "WHERE pa.s LIKE 'a%' GROUP BY pc.name",
]

FORCED = {"max_parallel_workers_per_gather": "2", "parallel_setup_cost": "0",
          "parallel_tuple_cost": "0", "min_parallel_table_scan_size": "0"}


@pytest.fixture
def par(eddy_conn):
    eddy_conn.execute(SCHEMA)
    set_gucs(eddy_conn, max_memory="1GB", join_method="hash")
    return eddy_conn


def _set(conn, settings: dict) -> None:
    for name, value in settings.items():
        conn.execute("SELECT set_config(%s, %s, false)", (name, value))


def test_parallel_plan_is_kept_and_serial_gets_the_eddy(par):
    """With parallel plans forced the join blocks keep PostgreSQL's parallel
    plan (a Gather, no eddy, the DEBUG1 reason); with parallel query off the
    same blocks get eddies."""
    _set(par, FORCED)
    for q in QUERIES:
        plan = explain_json(par, q)
        assert not eddy_nodes(plan), q
        assert any(n["Node Type"] in ("Gather", "Gather Merge") for n in plan_nodes(plan)), q
        assert any("PostgreSQL's plan for it is parallel" in r for r in eddy_reasons(par, q)), q
    _set(par, {"max_parallel_workers_per_gather": "0"})
    for q in QUERIES:
        assert eddy_nodes(explain_json(par, q)), q


def test_serial_eddy_rows_equal_the_parallel_plans(par):
    """The serial eddy (parallel query off: each plan has one; every policy,
    a forced spill and forced migrations) returns the rows of PostgreSQL's
    parallel plan (parallel plans forced, eddies on, so the planner keeps
    PostgreSQL's)."""
    for q in QUERIES:
        _set(par, FORCED)
        plan = explain_json(par, q)
        assert not eddy_nodes(plan), q
        want = multiset(par.execute(q).fetchall())
        assert sum(want.values()) > 0
        _set(par, {"max_parallel_workers_per_gather": "0"})
        for policy in ("rank", "lottery", "cumulative"):
            set_gucs(par, routing_policy=policy, debug_spill_after="50",
                     migration="greedy", debug_migrate_every="3")
            assert eddy_nodes(explain_json(par, q)), (q, policy)
            assert multiset(par.execute(q).fetchall()) == want, (q, policy)
