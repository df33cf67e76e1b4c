"""Adaptivity of join eddies, and the meaning of the counters, read from
EXPLAIN ANALYZE (never from wall time).

``s`` is the probing source of a three-way join ``r JOIN s JOIN t`` (``r``
and ``t`` have primary keys on the join columns, so the eddy reads them
first and ``s``, the centre, last).  In the first half of ``s`` no row finds
a partner in ``r`` and every row finds one in ``t``; in the second half it is
the reverse.  A tuple of ``s`` that goes first to the join that eliminates it
costs one probe; one that goes to the other join first costs two.  An
adaptive eddy sends most tuples of each half first to the join that
eliminates them; the fixed policy never changes its order.
"""

from __future__ import annotations

import pytest

from eddytools.db import (
    eddy_nodes,
    explain_eddy,
    explain_json,
    multiset,
    routing_history,
    set_gucs,
    sql_value,
    vanilla_multiset,
)

DIM = 1000  # rows of r and of t
ROWS = 40000  # rows of s
HALF = ROWS // 2
QUERY = "SELECT count(*) FROM r JOIN s ON s.rid = r.id JOIN t ON s.tid = t.id"


@pytest.fixture
def flip_join(eddy_conn):
    conn = eddy_conn
    conn.execute(f"""
        CREATE TABLE r (id int PRIMARY KEY, v int);
        CREATE TABLE t (id int PRIMARY KEY, v int);
        INSERT INTO r SELECT g, g FROM generate_series(0, {DIM - 1}) g;
        INSERT INTO t SELECT g, g FROM generate_series(0, {DIM - 1}) g;
        CREATE TABLE s AS
        SELECT g AS id,
               CASE WHEN g < {HALF} THEN {DIM} + g % 7 ELSE g % {DIM} END AS rid,
               CASE WHEN g < {HALF} THEN g % {DIM} ELSE {DIM} + g % 7 END AS tid
        FROM generate_series(0, {ROWS - 1}) g ORDER BY g;
        ANALYZE r; ANALYZE s; ANALYZE t;
    """)
    set_gucs(conn, reopt_frequency=100, join_method="hash")
    return conn


def join_modules(eddy: dict) -> dict[str, int]:
    """Module number of the join with r and of the join with t."""
    numbers = {}
    for op in eddy["Operators"]:
        if op["Operator Type"] != "Hash Join":
            continue
        cond = op["Join Condition"]
        numbers["r" if "r.id" in cond else "t"] = int(op["Operator Number"])
    assert set(numbers) == {"r", "t"}, eddy["Operators"]
    return numbers


def s_first_choices(eddy: dict) -> tuple[dict, dict]:
    """From s's routing history (runs of 'module x tuples' over its tuples
    in the order read), the first choices of each half of s."""
    runs = routing_history(eddy)["s"]
    assert sum(n for _, n in runs) == ROWS
    halves: tuple[dict, dict] = ({}, {})
    position = 0
    for module, tuples in runs:
        lo, hi = position, position + tuples
        first = max(0, min(hi, HALF) - max(lo, 0))
        second = max(0, hi - max(lo, HALF))
        halves[0][module] = halves[0].get(module, 0) + first
        halves[1][module] = halves[1].get(module, 0) + second
        position = hi
    return halves


def run(conn, **settings) -> dict:
    set_gucs(conn, **settings)
    plan = explain_json(conn, QUERY, analyze=True, verbose=True)
    assert plan["Plans"][0]["Actual Rows"] == 0  # no s row matches both
    (eddy,) = eddy_nodes(plan)
    return eddy


@pytest.mark.parametrize("policy,window", [("rank", 0), ("lottery", 1000), ("cumulative", 0)])
def test_join_routing_follows_the_data(flip_join, policy, window):
    """Under rank, the windowed lottery and cumulative routing, most tuples of each half of s go
    first to the join that eliminates them, so there are far fewer probes
    than under a fixed order."""
    eddy = run(flip_join, routing_policy=policy, lottery_window=window)
    mod = join_modules(eddy)
    first, second = s_first_choices(eddy)
    assert first.get(mod["r"], 0) > 0.8 * HALF, (first, second)
    assert second.get(mod["t"], 0) > 0.8 * HALF, (first, second)
    # probes: one per s tuple, plus one for each that passed the first join
    work = sum(op["Tuples In"] for op in eddy["Operators"])
    assert work < 2 * DIM + 1.2 * ROWS, work


def test_fixed_join_routing_never_changes(flip_join):
    """Under fixed, every tuple of s goes first to the same join, in both
    halves, and the routing is never recomputed."""
    eddy = run(flip_join, routing_policy="fixed")
    first, second = s_first_choices(eddy)
    assert eddy["Recomputations"] == 0
    (only,) = [m for m, n in first.items() if n > 0]
    assert first[only] == HALF and second.get(only) == HALF == sum(second.values())
    work = sum(op["Tuples In"] for op in eddy["Operators"])
    assert work == 2 * DIM + ROWS + HALF  # one half passes its first join


def test_lottery_window_changes_join_routing(flip_join):
    """The lottery window applies to join eddies: without it the lottery
    keeps the first half's tickets and adapts later in the second half."""
    adapted = {}
    for window in (0, 1000):
        eddy = run(flip_join, routing_policy="lottery", lottery_window=window)
        assert eddy.get("Lottery Window", 0) == window
        adapted[window] = s_first_choices(eddy)[1].get(join_modules(eddy)["t"], 0)
    assert adapted[1000] > adapted[0], adapted


def source_rows(node: dict) -> int:
    """Rows the eddy read from its sources: its children's actual rows, or,
    where their scans dropped some for it (a local chain, exec.c), what its
    Tuples Read says."""
    if "Tuples Read" in node:
        counts = [int(part.rsplit(" ", 1)[1]) for part in node["Tuples Read"].split(", ")]
        assert sum(counts) >= sum(child["Actual Rows"] for child in node.get("Plans", []))
        return sum(counts)
    return sum(child["Actual Rows"] for child in node.get("Plans", []))


@pytest.mark.parametrize("policy", ["rank", "lottery", "fixed", "random", "cumulative"])
def test_counters_mean_the_same_in_selection_and_join_eddies(flip_join, policy):
    """A tuple is routed once when it enters the eddy, read from a source or
    made by a join; every source tuple has exactly one first choice; a
    selection's Out is the tuples it passed, a join's the results it made."""
    conn = flip_join
    set_gucs(conn, routing_policy=policy, selection_min_cost=0, reopt_frequency=10)

    # selection eddy: one source, filters only
    plan = explain_json(conn, "SELECT count(*) FROM s WHERE rid < 500 AND tid < 900",
                        analyze=True)
    (sel,) = eddy_nodes(plan)
    assert sel["Tuples Routed"] == ROWS == source_rows(sel)
    assert sum(op["Tuples First"] for op in sel["Operators"]) == ROWS
    assert all(op["Tuples Out"] <= op["Tuples In"] for op in sel["Operators"])
    assert sel["Recomputations"] >= ROWS // 10 - 1 or policy == "fixed"

    # join eddy with a selection
    query = ("SELECT count(*) FROM r JOIN s ON s.rid = r.id JOIN t ON s.tid = t.id "
             "WHERE r.v + t.v < 10000")
    query = query.replace("JOIN t ON s.tid = t.id",
                          "JOIN t ON s.tid + 0 >= t.id - 1 AND s.tid = t.id")
    plan = explain_json(conn, query, analyze=True)
    (join,) = eddy_nodes(plan)
    read = source_rows(join)
    results = sum(op["Tuples Out"] for op in join["Operators"]
                  if op["Operator Type"] != "Selection")
    assert join["Tuples Routed"] == read + results
    assert sum(op["Tuples First"] for op in join["Operators"]) == read
    for op in join["Operators"]:
        if op["Operator Type"] == "Selection":
            assert op["Tuples Out"] <= op["Tuples In"]
    answer = sql_value(conn, query)
    set_gucs(conn, enabled=False)
    assert sql_value(conn, query) == answer


# --------------------------------------------------------------------------- index joins
#
# An index join's matches are every row of its relation with the probe's
# keys; the selections over that relation alone run on each heap tuple as
# it is fetched (its fetch chain) and count what they drop themselves.  For
# the routing, the join and its chain are one filter: rank scores the join
# by the matches that survive the chain, and its prior is the relation's
# tuples times the join's selectivity, times the chain's selections'
# (mod_indexjoin.c).  Without a chain, a prior counted from the relation's
# rows after its selections would count them twice: the join would look
# selective, and be tried again and again ahead of better modules whenever
# its decayed observations weigh less than the prior (TPC-H Q21, orders'
# primary key behind o_orderstatus = 'F').  Without the credit, a join
# whose chain drops most matches ties with one that drops none, and may go
# after it (TPC-H Q8, orders behind the o_orderdate range).

INDEXED_ROWS = 4000


@pytest.fixture
def index_joins(eddy_conn):
    """a (scanned) reaches b and d by their primary keys; b.v = 0 keeps a
    tenth of b; c has a match for 70% of a's k (an index semi join),
    spread evenly over a's rows."""
    conn = eddy_conn
    conn.execute(f"""
        CREATE TABLE a (id int, k int);
        CREATE TABLE b (id int PRIMARY KEY, v int);
        CREATE TABLE c (k int, w int);
        CREATE TABLE d (id int PRIMARY KEY, w int);
        INSERT INTO a SELECT g, g * 919 % 1000 FROM generate_series(0, {INDEXED_ROWS - 1}) g;
        INSERT INTO b SELECT g, g % 10 FROM generate_series(0, {INDEXED_ROWS - 1}) g;
        INSERT INTO c SELECT g % 700, g FROM generate_series(0, 6999) g;
        INSERT INTO d SELECT g, g FROM generate_series(0, {INDEXED_ROWS - 1}) g;
        CREATE INDEX c_k ON c (k);
        ANALYZE a; ANALYZE b; ANALYZE c; ANALYZE d;
    """)
    return conn


def by_relation(eddy: dict) -> dict[str, dict]:
    """The eddy's index joins, by the relation they reach."""
    return {op["Relation Name"]: op for op in eddy["Operators"]
            if op["Operator Type"].startswith("Index")}


def test_without_a_chain_an_index_join_s_prior_is_its_fan_out(index_joins):
    """b.v < (a subplan) cannot run on the heap tuple, so the join with b
    has no chain: it passes every probe on (one match each), and its
    prior fan-out is 1.  The semi join drops 30%: with the routing never
    recomputed (the priors alone decide), rank sends every a tuple to the
    semi join first, and the join with b sees only what it passed.  With
    b's rows after its selection (a third, the planner's guess for the
    subplan), every a tuple would go to b first.  The rank policy's
    lookahead (eddy.rank_lookahead) scores the path through b to that
    selection as one filter, which is what this test must not see: it
    reads the join's own prior, so the lookahead is off."""
    query = """SELECT count(*) FROM a JOIN b ON b.id = a.id
               WHERE b.v < (SELECT 1 WHERE b.id >= 0)
                 AND EXISTS (SELECT 1 FROM c WHERE c.k = a.k)"""
    # a.id % 10 = 0 for b.v < 1, and a.k = a.id * 919 % 1000 < 700 for c
    vanilla = vanilla_multiset(index_joins, query)
    assert vanilla == multiset([(INDEXED_ROWS // 10 * 7 // 10,)])
    eddy = explain_eddy(index_joins, query, routing_policy="rank", join_method="index",
                        reopt_frequency=1000000000, rank_lookahead="off")
    assert eddy["Recomputations"] == 0
    joins = by_relation(eddy)
    b, semi = joins["b"], joins["c"]
    assert semi["Operator Type"] == "Index Semi Join" and "Dropped at Fetch" not in b
    assert semi["Tuples In"] == semi["Tuples First"] == INDEXED_ROWS
    assert semi["Tuples Out"] == INDEXED_ROWS * 7 // 10
    assert b["Tuples In"] == semi["Tuples Out"] == b["Tuples Out"]
    assert multiset(index_joins.execute(query).fetchall()) == vanilla


@pytest.mark.parametrize("reopt", [1000000000, 100])
def test_an_index_join_is_credited_with_what_its_chain_drops(index_joins, reopt):
    """The joins with b and with d both match once per probe; b.v = 0 drops
    90% of b's matches at fetch.  From the priors alone and with the
    routing recomputed every 100 tuples, every a tuple goes to b first,
    and d sees only the tenth that b's chain passed."""
    query = """SELECT count(*) FROM a JOIN d ON d.id = a.id JOIN b ON b.id = a.id
               WHERE b.v = 0"""
    vanilla = vanilla_multiset(index_joins, query)
    assert vanilla == multiset([(INDEXED_ROWS // 10,)])
    eddy = explain_eddy(index_joins, query, routing_policy="rank", join_method="index",
                        reopt_frequency=reopt)
    joins = by_relation(eddy)
    b, d = joins["b"], joins["d"]
    assert b["Tuples In"] == b["Tuples First"] == INDEXED_ROWS
    assert b["Dropped at Fetch"] == INDEXED_ROWS - INDEXED_ROWS // 10
    assert d["Tuples In"] == INDEXED_ROWS // 10
    assert eddy["Actual Rows"] == INDEXED_ROWS // 10
    assert multiset(index_joins.execute(query).fetchall()) == vanilla
