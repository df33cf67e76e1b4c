"""Selections over one scanned source of a join eddy (its local chain):
where the routing sends a source's fresh tuples to them first, they run
before the eddy makes anything of the tuple, inside the source's scan when
it is a plain scan (exec.c, "The local chain in the source's scan"), else
in the eddy as the tuple is read.  Checked here from EXPLAIN ANALYZE's
counters and against PostgreSQL's results, under every routing policy and
source schedule.

``fact`` (20,000 rows, ``v`` a permutation of 0..19,999) joins ``dim``
(500 rows, read first and stored) on ``k``; ``fact.v < 2000`` keeps one row
in ten of ``fact`` and ``dim.tag <> 'x'`` drops ``dim``'s 25 'x' rows.
``eddy.selection_min_cost = 0`` routes both.  The fixed policy sends every
tuple to its selections first, so the counts are exact.  Last, the same
selections over a relation an index join reaches, run as each heap tuple is
fetched (mod_indexjoin.c, "Fetch chains").
"""

from __future__ import annotations

import pytest

from eddytools.db import (
    explain_eddy,
    multiset,
    plan_nodes,
    routing_history,
    set_gucs,
    vanilla_multiset,
)

FACT = 20000
DIM = 500
QUERY = """SELECT fact.id, fact.v, dim.tag FROM fact JOIN dim ON fact.k = dim.k
           WHERE fact.v < 2000 AND dim.tag <> 'x'"""
KEPT_FACT = FACT // 10
KEPT_DIM = DIM - DIM // 20
RESULT = KEPT_FACT // 2


@pytest.fixture
def star(eddy_conn):
    conn = eddy_conn
    conn.execute(f"""
        CREATE TABLE fact (id int, k int, v int, pad text);
        CREATE TABLE dim (k int, tag text);
        INSERT INTO fact SELECT g, g % {DIM}, (g * 7919) % {FACT}, repeat('p', 20)
            FROM generate_series(0, {FACT - 1}) g;
        INSERT INTO dim SELECT g, CASE WHEN g % 20 = 3 THEN 'x' ELSE 't' || g END
            FROM generate_series(0, {DIM - 1}) g;
        ANALYZE fact; ANALYZE dim;
    """)
    set_gucs(conn, selection_min_cost=0, join_method="hash", reopt_frequency=100)
    return conn


def operators(eddy: dict) -> dict[str, dict]:
    """The eddy's selections, by the relation they read."""
    found = {}
    for op in eddy["Operators"]:
        if op["Operator Type"] == "Selection":
            found["fact" if "fact." in op["Predicate"] else "dim"] = op
    assert "fact" in found, eddy["Operators"]
    return found


def removed_by_scans(eddy: dict) -> int:
    """Rows the eddy's scans removed by their own Filter."""
    return sum(n.get("Rows Removed by Filter", 0) for n in plan_nodes(eddy)
               if n.get("Relation Name") in ("fact", "dim"))


def scan_of(eddy: dict, relation: str) -> dict:
    scans = [n for n in plan_nodes(eddy) if n.get("Relation Name") == relation]
    assert len(scans) == 1, scans
    return scans[0]


def expected_result(conn):
    rows = vanilla_multiset(conn, QUERY)
    assert 0 < sum(rows.values()) < KEPT_FACT
    return rows


def test_dropped_in_the_scan_counted_on_the_eddy(star):
    """The selections go first: the scans return only what passes them,
    and what they drop is counted by the selections, not as the scans'
    Rows Removed by Filter."""
    expected = expected_result(star)
    eddy = explain_eddy(star, QUERY, routing_policy="fixed")
    sel = operators(eddy)
    fact_scan, dim_scan = scan_of(eddy, "fact"), scan_of(eddy, "dim")
    for rel, rows, kept in (("fact", FACT, KEPT_FACT), ("dim", DIM, KEPT_DIM)):
        assert sel[rel]["Tuples First"] == sel[rel]["Tuples In"] == rows
        assert sel[rel]["Tuples Out"] == kept
    # the scans return what passed (but the row of each read ahead before
    # anything is routed; fact, read last, may return only what matches, where
    # the probe into dim runs in its scan too), and remove nothing by their
    # own filter
    results = sum(expected.values())
    assert results <= fact_scan["Actual Rows"] <= KEPT_FACT + 1
    assert KEPT_DIM <= dim_scan["Actual Rows"] <= KEPT_DIM + 1
    assert removed_by_scans(eddy) == 0
    # every tuple read was routed once, and each result made once
    assert eddy["Tuples Routed"] >= FACT + DIM
    assert eddy["Actual Rows"] == sum(expected.values())
    assert multiset(star.execute(QUERY).fetchall()) == expected


def test_a_scan_filter_runs_before_the_local_chain(star):
    """A cheap predicate stays in the scan's Filter and runs first (a
    routed one cannot see what it removed); the scan counts only what its
    Filter removed."""
    query = """SELECT fact.id, fact.v, dim.tag FROM fact JOIN dim ON fact.k = dim.k
               WHERE fact.v + 0 < 2000 AND fact.id >= 1000 AND dim.tag <> 'x'"""
    expected = vanilla_multiset(star, query)
    set_gucs(star, selection_min_cost=0.005)  # fact.id >= 1000 is cheaper
    eddy = explain_eddy(star, query, routing_policy="fixed")
    fact_scan = scan_of(eddy, "fact")
    assert "fact.id >= 1000" in fact_scan["Filter"]
    assert fact_scan["Rows Removed by Filter"] == 1000
    sel = operators(eddy)
    assert sel["fact"]["Tuples In"] == FACT - 1000
    kept = sum(1 for g in range(1000, FACT) if (g * 7919) % FACT < 2000)
    assert sel["fact"]["Tuples Out"] == kept
    results = sum(expected.values())
    assert results <= fact_scan["Actual Rows"] <= kept + 1
    assert multiset(star.execute(query).fetchall()) == expected


def test_nulls_in_the_scan_filter_and_the_chain(star):
    """The scan's one-clause filter and the chain's column-against-constant
    predicates run by the selection fast path on the columns deformed
    first: a NULL fails them as it fails PostgreSQL's qual, and the counts
    follow."""
    star.execute("UPDATE fact SET id = NULL WHERE id % 7 = 0")
    star.execute("UPDATE fact SET v = NULL WHERE k % 11 = 0")
    star.execute("ANALYZE fact")
    rows = star.execute("SELECT id, v FROM fact").fetchall()
    ids_pass = [v for i, v in rows if i is not None and i >= 1000]
    both_pass = sum(1 for v in ids_pass if v is not None and v < 2000)
    assert 0 < both_pass < len(ids_pass) < FACT

    # fact.id >= 1000 stays in the scan (cheaper than the setting), alone
    query = """SELECT fact.id, fact.v, dim.tag FROM fact JOIN dim ON fact.k = dim.k
               WHERE fact.v + 0 < 2000 AND fact.id >= 1000 AND dim.tag <> 'x'"""
    expected = vanilla_multiset(star, query)
    set_gucs(star, selection_min_cost=0.005)
    eddy = explain_eddy(star, query, routing_policy="fixed")
    assert scan_of(eddy, "fact")["Filter"] == "(fact.id >= 1000)"
    sel = operators(eddy)["fact"]
    assert (sel["Tuples In"], sel["Tuples Out"]) == (len(ids_pass), both_pass)
    assert multiset(star.execute(query).fetchall()) == expected

    # both routed, a chain of two fast paths
    query = """SELECT fact.id, fact.v, dim.tag FROM fact JOIN dim ON fact.k = dim.k
               WHERE fact.v < 2000 AND fact.id >= 1000 AND dim.tag <> 'x'"""
    expected = vanilla_multiset(star, query)
    set_gucs(star, selection_min_cost=0)
    eddy = explain_eddy(star, query, routing_policy="fixed")
    fact_sels = [op for op in eddy["Operators"]
                 if op["Operator Type"] == "Selection" and "fact." in op["Predicate"]]
    assert len(fact_sels) == 2
    assert sorted(op["Tuples In"] for op in fact_sels)[1] == FACT   # the first sees all
    assert sum(op["Tuples Out"] for op in fact_sels) - \
        sorted(op["Tuples In"] for op in fact_sels)[0] == both_pass
    assert removed_by_scans(eddy) == 0
    assert multiset(star.execute(query).fetchall()) == expected


@pytest.mark.parametrize("policy", ["rank", "fixed", "lottery"])
def test_the_routing_history_counts_every_first_choice(star, policy):
    """The history's runs (the open one included) add up to the tuples the
    operators count as their first choices: a run extends as the router
    notes each first choice, and closes into its target's count."""
    eddy = explain_eddy(star, QUERY, routing_policy=policy)
    lanes = routing_history(eddy)
    assert lanes and all(lanes.values()), eddy["Routing History"]
    by_module: dict[int, int] = {}
    for runs in lanes.values():
        for module, tuples in runs:
            by_module[module] = by_module.get(module, 0) + tuples
    firsts = {op["Operator Number"]: op["Tuples First"] for op in eddy["Operators"]
              if op["Tuples First"] > 0}
    assert by_module == firsts
    assert sum(firsts.values()) >= DIM


@pytest.mark.parametrize("policy", ["rank", "fixed", "random", "lottery", "cumulative"])
@pytest.mark.parametrize("schedule", ["build", "proportional"])
def test_results_and_counters_under_every_policy_and_schedule(star, policy, schedule):
    """Whatever goes first, the selections see every tuple that reaches
    them exactly once, and the result is PostgreSQL's."""
    expected = expected_result(star)
    set_gucs(star, source_schedule=schedule)
    eddy = explain_eddy(star, QUERY, routing_policy=policy)
    sel = operators(eddy)
    assert set(sel) == {"fact", "dim"}
    # a selection sees a row at most once: read, or inside a join's result
    assert sel["fact"]["Tuples In"] <= FACT
    assert sel["dim"]["Tuples In"] <= FACT  # once per result, after the join
    assert sel["fact"]["Tuples Out"] <= KEPT_FACT
    # every drop is the eddy's, none its scans'
    assert removed_by_scans(eddy) == 0
    assert eddy["Actual Rows"] == sum(expected.values())
    if schedule == "proportional":
        assert eddy["Tuples Read"] == f"fact {FACT}, dim {DIM}" or \
            eddy["Tuples Read"] == f"dim {DIM}, fact {FACT}"
    assert multiset(star.execute(QUERY).fetchall()) == expected


def test_a_subplan_keeps_the_chain_in_the_eddy(star):
    """A local selection with a subplan cannot run in the scan: the eddy
    evaluates the chain as it reads the tuple, with the same counts."""
    query = """SELECT fact.id, dim.tag FROM fact JOIN dim ON fact.k = dim.k
               WHERE fact.v < (SELECT 2000 WHERE fact.k >= 0) AND dim.tag <> 'x'"""
    expected = vanilla_multiset(star, query)
    eddy = explain_eddy(star, query, routing_policy="fixed")
    fact_scan = scan_of(eddy, "fact")
    assert fact_scan["Actual Rows"] == FACT  # the scan returns every row
    sel = operators(eddy)
    assert sel["fact"]["Tuples In"] == FACT
    assert sel["fact"]["Tuples Out"] == KEPT_FACT
    assert removed_by_scans(eddy) == 0
    assert multiset(star.execute(query).fetchall()) == expected


@pytest.mark.parametrize("key", ["fact.k", "fact.k + 0", "(fact.k * 3) / 3"])
def test_a_probe_that_misses_is_dropped_in_the_scan(star, key):
    """fact is read last: its tuples only probe dim's STAIR, and are never
    stored.  Where most of them miss (dim.tag = 'x' keeps 25 keys of 500),
    the probe runs in fact's scan, which returns the 1,000 that match (and
    the row read ahead before dim was complete); the join's counters are
    those of probing every fact row once.  A key computed from fact's
    columns alone is computed there, on the scan's tuple (the join computes
    it again for the rows that match)."""
    query = f"""SELECT fact.id, dim.tag FROM fact JOIN dim ON {key} = dim.k
                WHERE dim.tag = 'x'"""
    expected = vanilla_multiset(star, query)
    assert sum(expected.values()) == FACT // 20
    eddy = explain_eddy(star, query, routing_policy="rank")
    join = next(op for op in eddy["Operators"] if op["Operator Type"] == "Hash Join")
    stairs = {st["STAIR"]: st for st in join["STAIRs"]}
    assert FACT // 20 <= scan_of(eddy, "fact")["Actual Rows"] <= FACT // 20 + 1
    assert join["Tuples First"] == FACT
    assert join["Tuples Out"] == FACT // 20
    assert eddy["Actual Rows"] == FACT // 20
    assert removed_by_scans(eddy) == 0
    assert stairs["dim.k"]["Probed"] == FACT
    assert stairs["dim.k"]["Matched"] == FACT // 20
    (fact_stair,) = [st for name, st in stairs.items() if name != "dim.k"]
    assert fact_stair["Skipped"] == FACT  # no fact row is stored
    assert multiset(star.execute(query).fetchall()) == expected


# --------------------------------------------------------------------------- fetch chains
#
# dim (500 rows) reaches fact through an index on fact.k (join_method =
# index): every dim row that passes its selection fetches its 40 fact rows,
# and the selections over fact alone run on each heap tuple as it is
# fetched, before the eddy makes anything of it (mod_indexjoin.c, "Fetch
# chains").  A selection with a subplan cannot be rewritten over the heap
# tuple: that query is the same join without the fetch chain.

def index_join_of(eddy: dict) -> dict:
    joins = [op for op in eddy["Operators"] if op["Operator Type"] == "Index Join"]
    assert len(joins) == 1, eddy["Operators"]
    return joins[0]


def fetched_and_kept() -> tuple[int, int]:
    """fact rows whose dim row passes, and those of them with v < 2000."""
    kept_dims = {g for g in range(DIM) if g % 20 != 3}
    fetched = [g for g in range(FACT) if g % DIM in kept_dims]
    return len(fetched), sum(1 for g in fetched if (g * 7919) % FACT < 2000)


def test_an_index_join_drops_at_fetch_what_its_relation_s_selections_drop(star):
    """Counted as the main loop would count it: the join made every match,
    the selection saw each once, every match was a routed tuple; only
    where the drop happened differs from the same join without the chain."""
    star.execute("CREATE INDEX fact_k ON fact (k)")
    with_chain = QUERY
    without = """SELECT fact.id, fact.v, dim.tag FROM fact JOIN dim ON fact.k = dim.k
                 WHERE fact.v < (SELECT 2000 WHERE fact.k >= 0) AND dim.tag <> 'x'"""
    expected = expected_result(star)
    assert vanilla_multiset(star, without) == expected
    fetched, kept = fetched_and_kept()
    assert sum(expected.values()) == kept
    runs = {}
    for name, query in (("chain", with_chain), ("none", without)):
        eddy = explain_eddy(star, query, routing_policy="fixed", join_method="index")
        join = index_join_of(eddy)
        sel = operators(eddy)["fact"]
        assert join["Tuples Out"] == fetched
        assert sel["Tuples In"] == fetched and sel["Tuples First"] == 0
        assert sel["Tuples Out"] == kept
        assert eddy["Actual Rows"] == kept
        runs[name] = (eddy, join)
        assert multiset(star.execute(query).fetchall()) == expected
    assert runs["chain"][1]["Dropped at Fetch"] == fetched - kept
    assert "Dropped at Fetch" not in runs["none"][1]
    assert runs["chain"][0]["Tuples Routed"] == runs["none"][0]["Tuples Routed"]
    assert runs["chain"][0]["Recomputations"] == runs["none"][0]["Recomputations"]


@pytest.mark.parametrize("policy", ["rank", "fixed", "random", "lottery", "cumulative"])
@pytest.mark.parametrize("migrate", [0, 1])
def test_fetch_chains_under_every_policy_and_forced_migration(star, policy, migrate):
    """With a hash join beside the index join, state migration's replay
    fetches again (without the chain, counting nothing) and forced
    migrations check the state's invariants: PostgreSQL's answer always, a
    division that would fail on the rows the l.v selection drops never
    raised, and a fetch chain wherever the routing sends fact's matches
    to its selections first."""
    star.execute("""
        CREATE INDEX fact_k ON fact (k);
        CREATE TABLE dim2 (k int, w int);
        INSERT INTO dim2 SELECT g, g * 7 FROM generate_series(0, 49) g;
        ANALYZE dim2;
    """)
    query = """SELECT fact.id, dim.tag, dim2.w FROM dim
               JOIN fact ON fact.k = dim.k JOIN dim2 ON dim2.k = fact.id % 50
               WHERE fact.v < 2000 AND 1000 / (fact.v - 2500) < 0
                 AND dim.tag <> 'x' AND dim2.w % 3 <> 0"""
    expected = vanilla_multiset(star, query)
    assert sum(expected.values()) > 0
    set_gucs(star, debug_migrate_every=migrate, migration="guarded" if migrate else "off")
    eddy = explain_eddy(star, query, routing_policy=policy, join_method="index")
    join = index_join_of(eddy)
    assert eddy["Actual Rows"] == sum(expected.values())
    if policy == "fixed":
        assert join["Dropped at Fetch"] > 0
    if migrate:
        assert eddy["Migrations"] > 0
    assert multiset(star.execute(query).fetchall()) == expected
