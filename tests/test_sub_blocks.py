"""Eddies over the inner-join sub-blocks of a block with outer joins, or
with semi or anti joins of more than one relation (planner.c, "Sub-blocks").

Such a block is not an eddy as a whole, but the inner joins PostgreSQL's
plan makes below its special joins are: each maximal one of two relations
or more that is its join relation's cheapest path, unparameterized,
unsorted, outside any Gather and not on the inner side of a nested loop
becomes an eddy, and PostgreSQL's joins stay above it.  The rows are
PostgreSQL's under every routing policy, schedule, forced spill, forced
migration, state mode and parallel plan, with NULL and duplicate keys, an
ORDER BY, join methods forced, and rescans.
"""

from __future__ import annotations

import pytest

from eddytools.db import (
    EXECUTOR_DEFAULTS,
    EXECUTOR_VARIANTS,
    PARALLEL_FORCED,
    PARALLEL_SERVER,
    eddy_nodes,
    eddy_reasons,
    explain_json,
    multiset,
    plan_nodes,
    set_core_gucs,
    set_gucs,
    vanilla_multiset,
)

SCHEMA = """
CREATE TABLE ta AS
    SELECT g AS id, CASE WHEN g % 89 = 0 THEN NULL ELSE g % 2000 END AS k,
           g % 13 AS z, 'a' || (g % 300) AS t
    FROM generate_series(1, 12000) g;
CREATE TABLE tb AS
    SELECT g AS id, CASE WHEN g % 61 = 0 THEN NULL ELSE (g * 7) % 2500 END AS k,
           g % 400 AS j, g % 17 AS v
    FROM generate_series(1, 8000) g;
CREATE TABLE tc AS
    SELECT g AS k, g % 100 AS w, 'c' || g AS name FROM generate_series(0, 499) g;
CREATE TABLE td AS SELECT g AS z, 'd' || g AS name FROM generate_series(0, 12) g;
CREATE INDEX ON tb (k);
CREATE INDEX ON tc (k);
"""

# (query, whether an eddy is expected under the defaults)
QUERIES = [
    # an inner join whose relation is left-joined first: PostgreSQL's plan
    # makes the left join below the inner one, so there is no sub-block
    ("SELECT ta.id, tb.v, tc.name FROM ta JOIN tb ON ta.k = tb.k "
     "LEFT JOIN tc ON tc.k = tb.j", False),
    # a left join whose nullable side is an inner join
    ("SELECT td.name, ta.id, tb.v FROM td LEFT JOIN "
     "(ta JOIN tb ON ta.k = tb.k AND tb.v < 5) ON ta.z = td.z", True),
    # IN over a join of two relations (TPC-H Q20)
    ("SELECT ta.id, ta.t FROM ta JOIN td ON td.z = ta.z "
     "WHERE ta.k IN (SELECT tb.k FROM tb JOIN tc ON tc.k = tb.j WHERE tc.w < 40)", True),
    # NOT EXISTS over a join of two relations
    ("SELECT ta.id FROM ta WHERE NOT EXISTS "
     "(SELECT 1 FROM tb JOIN tc ON tc.k = tb.j WHERE tb.k = ta.k AND tc.w > 20)", True),
    # a full join of two inner joins, NULL keys on both sides
    ("SELECT ta.id, td.name, tb.id, tc.w FROM (ta JOIN td ON ta.z = td.z) "
     "FULL JOIN (tb JOIN tc ON tb.j = tc.k) ON ta.k = tb.k", True),
    # an aggregate over the outer join (TPC-H Q13's shape, with a join inside)
    ("SELECT n, count(*) FROM (SELECT ta.id, count(tb.id) AS n FROM ta JOIN td ON td.z = ta.z "
     "LEFT JOIN tb ON tb.k = ta.k AND tb.v <> 3 GROUP BY ta.id) s GROUP BY n", True),
]

ORDERED = ("SELECT td.name, ta.id, tb.id FROM td LEFT JOIN "
           "(ta JOIN tb ON ta.k = tb.k AND tb.v < 5) ON ta.z = td.z "
           "ORDER BY td.name, ta.id, tb.id LIMIT 500")

# the executor's variants, and the eddy's hash joins for every join
VARIANTS = [*EXECUTOR_VARIANTS, {"join_method": "hash", "reopt_frequency": "1"}]
DEFAULTS = {**EXECUTOR_DEFAULTS, "join_method": "auto"}

CORE = {"enable_hashjoin": "on", "enable_mergejoin": "on", "enable_nestloop": "on",
        "enable_material": "on"}


@pytest.fixture
def sub(eddy_conn):
    eddy_conn.execute(SCHEMA)
    eddy_conn.execute("VACUUM ANALYZE ta, tb, tc, td")
    return eddy_conn


def _vanilla_ordered(conn, q: str) -> list[tuple]:
    set_gucs(conn, enabled="off")
    rows = conn.execute(q).fetchall()
    set_gucs(conn, enabled="on")
    return rows


def _special_join_above_eddy(plan: dict) -> bool:
    """Is some Eddy node below a join PostgreSQL makes (not at the top)?"""
    def walk(node: dict, under_join: bool) -> bool:
        if node.get("Custom Plan Provider") == "Eddy" and under_join:
            return True
        join = node.get("Node Type") in ("Hash Join", "Merge Join", "Nested Loop")
        return any(walk(child, under_join or join) for child in node.get("Plans", []))
    return walk(plan, False)


def test_sub_blocks_are_eddies_with_vanillas_rows(sub):
    """The queries expected to get one have an eddy below PostgreSQL's
    special join, the reason at DEBUG1; every query returns PostgreSQL's
    rows under every setting."""
    for q, expected in QUERIES:
        want = vanilla_multiset(sub, q)
        assert sum(want.values()) > 0, q
        plan = explain_json(sub, q)
        if expected:
            assert eddy_nodes(plan), (q, eddy_reasons(sub, q))
            assert _special_join_above_eddy(plan), q
            assert any("sub-block" in r for r in eddy_reasons(sub, q)), eddy_reasons(sub, q)
        for extra in VARIANTS:
            set_gucs(sub, **DEFAULTS)
            set_gucs(sub, **extra)
            assert multiset(sub.execute(q).fetchall()) == want, (q, extra)
        set_gucs(sub, **DEFAULTS)


@pytest.mark.parametrize("core", [
    {"enable_hashjoin": "off"},
    {"enable_hashjoin": "off", "enable_mergejoin": "off"},
    {"enable_hashjoin": "off", "enable_mergejoin": "off", "enable_material": "off"},
])
def test_under_other_join_methods(sub, core):
    """With PostgreSQL's merge joins and nested loops above the sub-blocks
    (which a merge join may need sorted, and a nested loop rescans), the
    rows are PostgreSQL's: a sorted or rescanned sub-block stays
    PostgreSQL's."""
    set_core_gucs(sub, core)
    for q, _ in QUERIES:
        assert multiset(sub.execute(q).fetchall()) == vanilla_multiset(sub, q), (q, core)
    assert sub.execute(ORDERED).fetchall() == _vanilla_ordered(sub, ORDERED)
    set_core_gucs(sub, CORE)


def test_no_eddy_on_the_inner_side_of_a_nested_loop(sub):
    """A nested loop rescans its inner side for every outer row: a sub-block
    there stays PostgreSQL's (the eddy would rebuild its state each time),
    unless a Material reads it once."""
    set_core_gucs(sub, {"enable_hashjoin": "off", "enable_mergejoin": "off",
                        "enable_material": "off"})
    q = ("SELECT td.name, ta.id, tb.v FROM td LEFT JOIN "
         "(ta JOIN tb ON ta.k = tb.k AND tb.v < 5) ON ta.z = td.z")
    plan = explain_json(sub, q)
    set_core_gucs(sub, CORE)

    def walk(node: dict, inner_of_nestloop: bool) -> None:
        if node.get("Custom Plan Provider") == "Eddy":
            assert not inner_of_nestloop, plan
        children = node.get("Plans", [])
        for child in children:
            walk(child, inner_of_nestloop or (node.get("Node Type") == "Nested Loop"
                                              and child.get("Parent Relationship") == "Inner"))
    walk(plan, False)
    # the join of ta and tb is there, rescanned as the inner side
    assert any(n.get("Node Type") == "Nested Loop" and n.get("Parent Relationship") == "Inner"
               for n in plan_nodes(plan)), plan
    assert multiset(sub.execute(q).fetchall()) == vanilla_multiset(sub, q)

    # with a Material over it, read once: an eddy
    set_core_gucs(sub, {"enable_hashjoin": "off", "enable_mergejoin": "off"})
    plan = explain_json(sub, q)
    materials = [n for n in plan_nodes(plan) if n.get("Node Type") == "Materialize"]
    assert any(eddy_nodes(m) for m in materials), plan
    assert multiset(sub.execute(q).fetchall()) == vanilla_multiset(sub, q)
    set_core_gucs(sub, CORE)


def test_order_by_and_limit(sub):
    """An ORDER BY and LIMIT above a left join over a sub-block: the same
    rows in the same order."""
    assert sub.execute(ORDERED).fetchall() == _vanilla_ordered(sub, ORDERED)
    plan = explain_json(sub, ORDERED)
    assert eddy_nodes(plan), eddy_reasons(sub, ORDERED)


def test_rescanned_in_a_correlated_subquery(sub):
    """A sub-block inside a correlated subquery is rescanned with it, for
    every outer row: PostgreSQL's rows each time."""
    q = ("SELECT td.z, (SELECT count(*) FROM ta JOIN tb ON ta.k = tb.k "
         "LEFT JOIN tc ON tc.k = tb.j WHERE ta.z = td.z AND tc.w IS NULL) FROM td")
    want = vanilla_multiset(sub, q)
    assert multiset(sub.execute(q).fetchall()) == want
    set_gucs(sub, debug_spill_after="40")
    assert multiset(sub.execute(q).fetchall()) == want
    set_gucs(sub, debug_spill_after="0")


def test_under_parallel_plans(sub):
    """With parallel plans forced: no eddy inside a Gather's partial plan
    is a sub-block's (PostgreSQL's parallel joins stay), and the rows are
    PostgreSQL's."""
    set_core_gucs(sub, PARALLEL_FORCED)
    gathers = 0
    try:
        for q, _ in QUERIES:
            want = vanilla_multiset(sub, q)
            plan = explain_json(sub, q)
            for gather in plan_nodes(plan):
                if gather.get("Node Type") in ("Gather", "Gather Merge"):
                    gathers += 1
                    # an eddy under a Gather is a partial one, never a sub-block's
                    assert all(e.get("Parallel Aware") for e in eddy_nodes(gather)), plan
            assert multiset(sub.execute(q).fetchall()) == want, q
    finally:
        set_core_gucs(sub, PARALLEL_SERVER)
    assert gathers > 0


def test_cursor_backwards_and_rewind(sub):
    """A scrollable cursor over a query with a sub-block eddy: fetched
    forwards, backwards and again from the start, PostgreSQL's rows."""
    q, _ = QUERIES[1]
    want = vanilla_multiset(sub, q)
    assert eddy_nodes(explain_json(sub, q))
    sub.execute("BEGIN")
    try:
        sub.execute(f"DECLARE c SCROLL CURSOR FOR {q}")
        forward = sub.execute("FETCH ALL FROM c").fetchall()
        backward = sub.execute("FETCH BACKWARD ALL FROM c").fetchall()
        again = sub.execute("FETCH ALL FROM c").fetchall()
    finally:
        sub.execute("COMMIT")
    assert multiset(forward) == want
    assert backward == forward[::-1]
    assert again == forward


def test_off_switch_keeps_vanillas_plan(sub):
    """eddy.enabled = off: no eddy anywhere, sub-blocks included."""
    q, _ = QUERIES[1]
    assert eddy_nodes(explain_json(sub, q))
    set_gucs(sub, enabled="off")
    assert not eddy_nodes(explain_json(sub, q))
    set_gucs(sub, enabled="on")
