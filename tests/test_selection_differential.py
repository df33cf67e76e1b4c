"""Differential tests of the selection eddy: generated single-table queries
return the same multiset of rows with eddy.enabled on and off."""

from __future__ import annotations

import random

import pytest

from eddytools.db import (
    eddy_nodes,
    explain_json,
    multiset,
    parallel_settings,
    plan_nodes,
    set_gucs,
)
from eddytools.querygen import SelectionQueryGenerator, wisconsin_like_ddl
from eddytools.sqlast import parse

QUERIES_PER_CHUNK = 40
CHUNKS = 8
POLICIES = ["rank", "lottery", "fixed", "random", "cumulative"]
INDEX_SCANS = {"Index Scan", "Index Only Scan", "Bitmap Heap Scan"}


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_generated_selection_queries_match_vanilla(eddy_conn, chunk):
    """Every generated query (2-6 predicates of varied shape over a NULL-heavy,
    text-bearing Wisconsin-like table) returns exactly PostgreSQL's multiset of
    rows under a random policy and reoptimization frequency, and its plan has
    an Eddy whenever every predicate is a selection operator (unless an index
    scan that enforces all but one of them is cheaper), a partial eddy under
    a Gather when parallel plans are forced (a third of the queries).  Odd
    chunks run on a table with a dropped column."""
    conn = eddy_conn
    conn.execute(wisconsin_like_ddl("wisc", 20000))
    if chunk % 2:
        # a dropped column: the source cannot return its physical tuple
        conn.execute("ALTER TABLE wisc ADD COLUMN junk int; ALTER TABLE wisc DROP COLUMN junk")
    gen = SelectionQueryGenerator(seed=7100 + chunk)
    rng = random.Random(chunk)
    eddies_seen = 0
    for i in range(QUERIES_PER_CHUNK):
        q = gen.query()
        parse(q.sql)  # the generator only emits valid postgres SQL
        all_routed = rng.random() < 0.75
        set_gucs(conn, enabled="on",
                 selection_min_cost=0 if all_routed else 0.01,
                 routing_policy=rng.choice(POLICIES),
                 reopt_frequency=rng.choice([1, 2, 10, 100, 1000]),
                 lottery_window=rng.choice([0, 0, 50]),
                 **parallel_settings(f"{chunk}:{i}"))
        plan = explain_json(conn, q.sql)
        if all_routed and not eddy_nodes(plan):
            # only an index that enforces all but one predicate may win
            assert any(n["Node Type"] in INDEX_SCANS for n in plan_nodes(plan)), \
                f"no Eddy in the plan of: {q.sql}"
        if eddy_nodes(plan):
            eddies_seen += 1
        got = multiset(conn.execute(q.sql).fetchall())
        set_gucs(conn, enabled="off")
        want = multiset(conn.execute(q.sql).fetchall())
        assert got == want, f"eddy changed the result of: {q.sql}"
    assert eddies_seen >= QUERIES_PER_CHUNK // 2


def test_generator_is_reproducible():
    """The same seed gives the same queries; another seed gives others."""
    a = [SelectionQueryGenerator(seed=5).query().sql for _ in range(1)]
    g1, g2, g3 = (SelectionQueryGenerator(seed=s) for s in (5, 5, 6))
    first = [g1.query().sql for _ in range(20)]
    assert first == [g2.query().sql for _ in range(20)]
    assert first != [g3.query().sql for _ in range(20)]
    assert a[0] == first[0]
