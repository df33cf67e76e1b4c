"""A join eddy's pseudoconstant clauses (outer parameters and constants
only) are its One-Time Filter: checked once per scan before any source is
read, as PostgreSQL's gating Result does (plan_join.c, add_block_selections).
As a selection, such a clause let the eddy read every source once per
outer row of a correlated subquery: the fuzzer's seed 1127 found a query
that ran past its 60 s statement timeout that way, where PostgreSQL's plan
took under a second.
"""

from __future__ import annotations

from eddytools.db import (
    eddy_nodes,
    explain_json,
    multiset,
    plan_nodes,
    set_gucs,
    vanilla_multiset,
)

SCHEMA = """
CREATE TABLE ota AS
    SELECT g AS id, g % 500 AS k, g % 13 AS z FROM generate_series(1, 6000) g;
CREATE TABLE otb AS
    SELECT g AS id, (g * 7) % 500 AS k, g % 17 AS v FROM generate_series(1, 4000) g;
CREATE TABLE otd AS SELECT g AS z FROM generate_series(0, 12) g;
"""

CORRELATED = ("SELECT otd.z, (SELECT count(*) FROM ota JOIN otb ON ota.k = otb.k "
              "WHERE ota.z = otd.z AND otd.z < 3) FROM otd")


def _setup(conn):
    conn.execute(SCHEMA)
    conn.execute("VACUUM ANALYZE ota, otb, otd")
    conn.execute("SET max_parallel_workers_per_gather = 0")


def _scan_loops(plan: dict, relation: str) -> list[int]:
    return [n.get("Actual Loops", 0) for n in plan_nodes(plan)
            if n.get("Relation Name") == relation]


def test_correlated_subquery_reads_nothing_when_the_filter_fails(eddy_conn):
    _setup(eddy_conn)
    want = vanilla_multiset(eddy_conn, CORRELATED)
    plan = explain_json(eddy_conn, CORRELATED, analyze=True)
    (eddy,) = eddy_nodes(plan)
    assert eddy["One-Time Filter"] == "(otd.z < 3)"
    assert not any("otd" in str(v) for k, v in eddy.items() if k.startswith("Selection"))
    # rescanned for each of the 13 rows of otd; its sources read for 3
    assert eddy["Actual Loops"] == 13
    assert _scan_loops(plan, "ota") == [3]
    assert _scan_loops(plan, "otb") == [3]
    assert multiset(eddy_conn.execute(CORRELATED).fetchall()) == want
    # the same under a forced spill and forced migrations
    set_gucs(eddy_conn, debug_spill_after="40", migration="guarded", debug_migrate_every="1")
    assert multiset(eddy_conn.execute(CORRELATED).fetchall()) == want


def test_parameter_of_a_generic_plan(eddy_conn):
    _setup(eddy_conn)
    eddy_conn.execute("SET plan_cache_mode = force_generic_plan")
    eddy_conn.execute("PREPARE p(int) AS SELECT ota.id, otb.v FROM ota JOIN otb "
                      "ON ota.k = otb.k WHERE $1 > 0 AND otb.v < 5")
    plan = explain_json(eddy_conn, "EXECUTE p(0)", analyze=True)
    (eddy,) = eddy_nodes(plan)
    assert eddy["One-Time Filter"] == "($1 > 0)"
    assert eddy["Actual Rows"] == 0
    assert _scan_loops(plan, "ota") == [0]
    assert _scan_loops(plan, "otb") == [0]
    for arg in (0, 1):
        got = multiset(eddy_conn.execute(f"EXECUTE p({arg})").fetchall())
        set_gucs(eddy_conn, enabled="off")
        want = multiset(eddy_conn.execute(
            f"SELECT ota.id, otb.v FROM ota JOIN otb ON ota.k = otb.k "
            f"WHERE {arg} > 0 AND otb.v < 5").fetchall())
        set_gucs(eddy_conn, enabled="on")
        assert got == want
        assert (len(want) > 0) == (arg > 0)
