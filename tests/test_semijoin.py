"""Semi and anti joins in join eddies (plan_join.c, "Semi and anti joins";
mod_indexjoin.c).

EXISTS, IN and NOT EXISTS whose subquery is one relation that PostgreSQL
reaches by an index nested loop become index semi and anti join modules of
the eddy: each tuple spanning the outer relation probes the index and passes
on once if a match passes the join's other clauses (semi), or if none does
(anti).  Results are PostgreSQL's under every routing policy, schedule,
forced spill, forced migration, state mode and parallel plans, with
duplicate and NULL keys, clauses over the outer relation alone in an anti
join (they belong to the join, not to the outer relation), non-key join
clauses, deleted rows the index still points to, cursors and rescans.
Blocks the module cannot make keep PostgreSQL's plan and say why.
"""

from __future__ import annotations

import time

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
CREATE TABLE so AS
    SELECT g AS id, CASE WHEN g % 97 = 0 THEN NULL ELSE g % 3000 END AS k,
           g % 13 AS z, (g % 3000)::bigint AS kb, 'k' || (g % 900) AS t
    FROM generate_series(1, 20000) g;
CREATE TABLE si AS
    SELECT g AS id, CASE WHEN g % 53 = 0 THEN NULL ELSE (g * 7) % 2000 END AS k,
           g % 11 AS v, g % 13 AS z, 'k' || (g % 700) AS t
    FROM generate_series(1, 6000) g;
CREATE TABLE sd AS SELECT g AS z, 'd' || g AS name FROM generate_series(0, 12) g;
CREATE INDEX ON si (k);
CREATE INDEX ON si (t);
CREATE INDEX ON so (k);
"""

QUERIES = [
    # EXISTS, plain and with a restriction on the inner relation
    "SELECT so.id, so.z FROM so WHERE EXISTS (SELECT 1 FROM si WHERE si.k = so.k)",
    "SELECT so.id FROM so WHERE so.z < 9 AND EXISTS "
    "(SELECT 1 FROM si WHERE si.k = so.k AND si.v > 6)",
    # a non-key join clause
    "SELECT so.id FROM so WHERE EXISTS (SELECT 1 FROM si WHERE si.k = so.k AND si.z <> so.z)",
    # NOT EXISTS, with NULL keys on both sides
    "SELECT so.id, so.k FROM so WHERE NOT EXISTS (SELECT 1 FROM si WHERE si.k = so.k)",
    "SELECT count(*), sum(so.id) FROM so WHERE NOT EXISTS "
    "(SELECT 1 FROM si WHERE si.k = so.k AND si.v = 3)",
    # an anti join's clause over the outer relation alone belongs to the join
    "SELECT so.id FROM so WHERE NOT EXISTS "
    "(SELECT 1 FROM si WHERE si.k = so.k AND so.z > 5 AND si.z <> so.z)",
    # IN (a semi join, maybe unique-ified by PostgreSQL)
    "SELECT so.id FROM so WHERE so.k IN (SELECT si.k FROM si WHERE si.v < 2)",
    # cross-type and text keys
    "SELECT so.id FROM so WHERE EXISTS (SELECT 1 FROM si WHERE si.k = so.kb)",
    "SELECT so.id FROM so WHERE NOT EXISTS (SELECT 1 FROM si WHERE si.t = so.t)",
    # with an inner join, a semi and an anti join in one block
    "SELECT so.id, sd.name FROM so JOIN sd ON sd.z = so.z "
    "WHERE EXISTS (SELECT 1 FROM si WHERE si.k = so.k AND si.v > 4) "
    "AND NOT EXISTS (SELECT 1 FROM si i2 WHERE i2.t = so.t AND i2.z = 3)",
]

@pytest.fixture
def semi(eddy_conn):
    eddy_conn.execute(SCHEMA)
    eddy_conn.execute("VACUUM ANALYZE so, si, sd")
    return eddy_conn


def _modules(plan: dict) -> list[str]:
    return [op.get("Operator Type", "") for e in eddy_nodes(plan)
            for op in e.get("Operators", [])]


@pytest.mark.parametrize("method", ["auto", "index"])
def test_semi_and_anti_joins_return_vanillas_rows(semi, method):
    """Every query gets an eddy with index semi or anti join modules (under
    join_method = index always; under auto where PostgreSQL's plan makes
    them index nested loops), and returns PostgreSQL's rows under every
    setting."""
    set_gucs(semi, join_method=method)
    if method == "auto":
        # PostgreSQL hashes these small relations: make it choose index
        # nested loops, which the eddy then follows
        set_core_gucs(semi, {"enable_hashjoin": "off", "enable_mergejoin": "off"})
    with_eddy = 0
    for q in QUERIES:
        want = vanilla_multiset(semi, q)
        assert sum(want.values()) > 0, q
        plan = explain_json(semi, q)
        kinds = _modules(plan)
        if method == "index":
            assert any(k in ("Index Semi Join", "Index Anti Join") for k in kinds), \
                (q, kinds, eddy_reasons(semi, q))
        if any(k in ("Index Semi Join", "Index Anti Join") for k in kinds):
            with_eddy += 1
        for extra in EXECUTOR_VARIANTS:
            set_gucs(semi, **EXECUTOR_DEFAULTS)
            set_gucs(semi, **extra)
            assert multiset(semi.execute(q).fetchall()) == want, (q, extra)
        set_gucs(semi, **EXECUTOR_DEFAULTS)
    assert with_eddy >= (len(QUERIES) if method == "index" else 3), with_eddy


def test_under_parallel_plans(semi):
    """With parallel plans forced the semi and anti joins run in a partial
    eddy's processes (each its own index scans) with PostgreSQL's rows."""
    set_gucs(semi, join_method="index")
    set_core_gucs(semi, PARALLEL_FORCED)
    parallel = 0
    for q in QUERIES:
        want = vanilla_multiset(semi, q)
        plan = explain_json(semi, q)
        parallel += any(e.get("Parallel Aware") for e in eddy_nodes(plan))
        assert multiset(semi.execute(q).fetchall()) == want, q
    set_core_gucs(semi, PARALLEL_SERVER)
    assert parallel >= 1


def test_a_second_equality_of_the_same_class_is_implied(semi):
    """PostgreSQL's plan may test two equalities of one equivalence class
    into the semi join's relation, each against another member: here a Join
    Filter sb.k = ss.k above an index condition ss.k = sa.k (TPC-H Q21 in
    parallel plans: orders.o_orderkey = l2.l_orderkey and l2.l_orderkey =
    l1.l_orderkey).  The eddy drops the one implied by the block's inner
    join (sb.k = sa.k) and makes the semi join from sa, the relation its
    other clause reads, and returns PostgreSQL's rows, under a forced spill
    and with a duplicate-heavy sb too."""
    semi.execute("CREATE TABLE sa AS SELECT g AS id, g % 20000 AS k, g % 7 AS v "
                 "FROM generate_series(1, 200000) g")
    semi.execute("CREATE TABLE sb AS SELECT g AS k, g % 500 AS f FROM generate_series(0, 19999) g")
    semi.execute("CREATE TABLE ss AS SELECT (g * 2) % 20000 AS k, g % 11 AS v "
                 "FROM generate_series(1, 300000) g")
    semi.execute("CREATE INDEX ON ss (k)")
    semi.execute("CREATE INDEX ON sa (k)")
    semi.execute("VACUUM ANALYZE sa, sb, ss")
    q = ("SELECT sa.id, sb.f FROM sb, sa WHERE sb.k = sa.k AND sb.f IN (1, 2) AND EXISTS "
         "(SELECT 1 FROM ss WHERE ss.k = sa.k AND ss.v <> sa.v AND ss.v > 1)")
    set_core_gucs(semi, PARALLEL_FORCED)
    want = vanilla_multiset(semi, q)
    assert 0 < sum(want.values()) < 800
    set_gucs(semi, enabled="off")
    filters = [n.get("Join Filter", "") for n in plan_nodes(explain_json(semi, q))
               if n["Node Type"] == "Nested Loop"]
    assert "(sb.k = ss.k)" in filters, filters
    set_gucs(semi, enabled="on")
    plan = explain_json(semi, q)
    assert eddy_nodes(plan), eddy_reasons(semi, q)
    assert any("Semi" in m for m in _modules(plan)), _modules(plan)
    assert multiset(semi.execute(q).fetchall()) == want
    set_gucs(semi, debug_spill_after="30")
    assert multiset(semi.execute(q).fetchall()) == want
    set_gucs(semi, debug_spill_after="0")
    set_core_gucs(semi, PARALLEL_SERVER)


def test_explain_names_the_joins_and_counts_heap_fetches(semi):
    """EXPLAIN shows the modules (with the clauses each evaluates on a
    match); a semi or anti join without such clauses finds its matches as an
    index-only scan does: no heap fetch on an all-visible table, and after a
    DELETE (the index still points to the dead rows) heap fetches, the dead
    rows not counting as matches."""
    set_gucs(semi, join_method="index")
    q = "SELECT so.id FROM so WHERE NOT EXISTS (SELECT 1 FROM si WHERE si.k = so.k)"
    text = "\n".join(r[0] for r in semi.execute(f"EXPLAIN (COSTS OFF) {q}").fetchall())
    # it reads nothing of si but the key: index-only (test_index_only_join.py)
    assert "Index Only Anti Join" in text and "using si_k_idx on si" in text, text
    q2 = "SELECT so.id FROM so WHERE EXISTS (SELECT 1 FROM si WHERE si.k = so.k AND si.v > 6)"
    text = "\n".join(r[0] for r in semi.execute(f"EXPLAIN (COSTS OFF) {q2}").fetchall())
    assert "Index Semi Join" in text and "where (si.v > 6)" in text, text

    def fetches(query: str) -> int:
        plan = explain_json(semi, query, analyze=True)
        ops = [op for e in eddy_nodes(plan) for op in e["Operators"]
               if op.get("Operator Type") == "Index Anti Join"]
        assert len(ops) == 1, ops
        return ops[0]["Heap Fetches"]

    # a VACUUM marks every page all visible once no snapshot is older
    for _ in range(50):
        semi.execute("VACUUM si")
        if semi.execute("SELECT relallvisible = relpages FROM pg_class "
                        "WHERE relname = 'si'").fetchone()[0]:
            break
        time.sleep(0.2)
    else:
        raise AssertionError("VACUUM did not make si all visible")
    assert fetches(q) == 0
    semi.execute("DELETE FROM si WHERE id % 3 = 0")
    assert fetches(q) > 0
    assert multiset(semi.execute(q).fetchall()) == vanilla_multiset(semi, q)
    assert multiset(semi.execute(q2).fetchall()) == vanilla_multiset(semi, q2)


def test_cursor_and_rescan(semi):
    """A cursor fetched in pieces and a correlated subquery whose eddy is
    rescanned per outer row return PostgreSQL's rows."""
    set_gucs(semi, join_method="index")
    q = QUERIES[9]
    want = vanilla_multiset(semi, q)
    got = []
    with semi.transaction():
        semi.execute(f"DECLARE c NO SCROLL CURSOR FOR {q}")
        while True:
            rows = semi.execute("FETCH 77 FROM c").fetchall()
            if not rows:
                break
            got += rows
    assert multiset(got) == want
    rq = ("SELECT sd.z, (SELECT count(*) FROM so WHERE so.z = sd.z AND NOT EXISTS "
          "(SELECT 1 FROM si WHERE si.k = so.k)) FROM sd")
    assert multiset(semi.execute(rq).fetchall()) == vanilla_multiset(semi, rq)


def test_unsupported_shapes_keep_postgresqls_plan(semi):
    """A semi join whose subquery joins two relations, a left join, and a
    left join made an anti join by "IS NULL" above it keep PostgreSQL's
    plan for the block, say why, and return its rows."""
    set_gucs(semi, join_method="index")
    cases = {
        "SELECT so.id FROM so WHERE EXISTS (SELECT 1 FROM si JOIN sd ON sd.z = si.z "
        "WHERE si.k = so.k AND sd.name = 'd3')": "more than one relation",
        "SELECT so.id, si.id FROM so LEFT JOIN si ON si.k = so.k WHERE so.z = 1":
            "outer joins",
        "SELECT so.id FROM so LEFT JOIN si ON si.k = so.k WHERE si.id IS NULL":
            "anti join",
    }
    for q, why in cases.items():
        want = vanilla_multiset(semi, q)
        plan = explain_json(semi, q)
        reasons = eddy_reasons(semi, q)
        assert not any(k in ("Index Semi Join", "Index Anti Join") for k in _modules(plan)) \
            or not eddy_nodes(plan), q
        assert any(why in r for r in reasons), (q, reasons)
        assert multiset(semi.execute(q).fetchall()) == want, q
