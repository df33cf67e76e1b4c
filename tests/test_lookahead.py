"""The rank policy's lookahead (eddy.rank_lookahead, issue 48; routing.c,
"Lookahead").

Ranks order independent filters.  In a join eddy a selection over two
relations is reachable only through the joins that bring them, and those
joins may filter nothing (fan-out 1, rank 0): scored alone they lose to any
eligible module that filters at all.  Here a fact table's tuples can go to
``r`` (fan-out 0.8) or to the joins with ``a`` and ``b`` (fan-out 1 each),
behind which the selection ``a.k = b.k`` passes 1%.  Without the lookahead
every fact tuple goes to ``r`` first; with it the path through ``a`` and
``b`` to the selection is scored as one filter, and ``r`` sees only what the
selection passes.  Read from EXPLAIN ANALYZE's counters, never from time;
every answer is PostgreSQL's.
"""

from __future__ import annotations

import pytest

from eddytools.db import (
    PARALLEL_FORCED,
    eddy_nodes,
    explain_json,
    multiset,
    set_gucs,
    vanilla_multiset,
)

FACT = 40000

SCHEMA = f"""
CREATE TABLE la_a (id int PRIMARY KEY, k int);
INSERT INTO la_a SELECT g, g % 100 FROM generate_series(1, 300) g;
CREATE TABLE la_b (id int PRIMARY KEY, k int);
INSERT INTO la_b SELECT g, (g * 7) % 100 FROM generate_series(1, 200) g;
CREATE TABLE la_f (id int, a_id int, b_id int, v int);
INSERT INTO la_f SELECT g, 1 + (g * 7919) % 300, 1 + (g::int8 * 104729) % 200, g % 13
    FROM generate_series(1, {FACT}) g;
CREATE TABLE la_r (f_id int, w int);
INSERT INTO la_r SELECT g, g % 3 FROM generate_series(1, {FACT}) g WHERE g % 5 <> 0;
CREATE INDEX la_r_f_id ON la_r (f_id);
ANALYZE la_a, la_b, la_f, la_r;
"""

QUERY = """
SELECT count(*), sum(f.v), sum(r.w)
FROM la_f f JOIN la_a a ON a.id = f.a_id JOIN la_b b ON b.id = f.b_id
    JOIN la_r r ON r.f_id = f.id
WHERE a.k = b.k"""


@pytest.fixture
def la(eddy_conn):
    eddy_conn.execute(SCHEMA)
    set_gucs(eddy_conn, routing_policy="rank", source_schedule="build",
             pg__max_parallel_workers_per_gather=0)
    return eddy_conn


def the_eddy(conn) -> dict:
    (eddy,) = eddy_nodes(explain_json(conn, QUERY, analyze=True, verbose=True))
    return eddy


def r_probes(eddy: dict) -> int:
    """Fact tuples that visited r: an index join's tuples in, or the probes
    of r's STAIR by the fact side of a hash join."""
    for op in eddy["Operators"]:
        if "r.f_id" not in op.get("Join Condition", ""):
            continue
        if op["Operator Type"].startswith("Index"):
            return op["Tuples In"]
        stairs = {st["STAIR"]: st for st in op.get("STAIRs", [])}
        return stairs["r.f_id"]["Probed"]
    raise AssertionError(eddy["Operators"])


def the_selection(eddy: dict) -> dict:
    (sel,) = [op for op in eddy["Operators"] if op["Operator Type"] == "Selection"]
    return sel


@pytest.mark.parametrize("method", ["index", "hash"])
def test_the_path_to_a_selective_filter_goes_first(la, method):
    set_gucs(la, join_method=method, rank_lookahead="on")
    eddy = the_eddy(la)
    sel = the_selection(eddy)
    assert sel["Tuples Out"] < sel["Tuples In"] / 20, sel
    # the fact tuples reach the selection first; r sees what it passes
    # (and the tuples routed before the first observations, a few hundred)
    assert sel["Tuples In"] > 0.9 * FACT, sel
    assert r_probes(eddy) < 0.1 * FACT, eddy["Operators"]
    assert eddy["Lookahead Choices"] > 0
    assert multiset(la.execute(QUERY).fetchall()) == vanilla_multiset(la, QUERY)


@pytest.mark.parametrize("method", ["index", "hash"])
def test_without_it_the_filter_that_is_eligible_goes_first(la, method):
    set_gucs(la, join_method=method, rank_lookahead="off")
    eddy = the_eddy(la)
    assert r_probes(eddy) > 0.9 * FACT, eddy["Operators"]
    assert the_selection(eddy)["Tuples In"] < 0.9 * FACT
    assert "Lookahead Choices" not in eddy
    assert multiset(la.execute(QUERY).fetchall()) == vanilla_multiset(la, QUERY)


@pytest.mark.parametrize("policy", ["lottery", "cumulative", "fixed"])
def test_other_policies_do_not_look_ahead(la, policy):
    set_gucs(la, routing_policy=policy, rank_lookahead="on")
    eddy = the_eddy(la)
    assert "Lookahead Choices" not in eddy
    assert multiset(la.execute(QUERY).fetchall()) == vanilla_multiset(la, QUERY)


def test_parallel_workers_look_ahead(la):
    """A parallel eddy's workers route with their own routers: each one's
    lookahead decisions are in its EXPLAIN ANALYZE counters.  (Index joins:
    only the fact table is read, in shares; a Parallel Hash over r would
    keep PostgreSQL's plan.)"""
    set_gucs(la, join_method="index", rank_lookahead="on",
             pg__parallel_leader_participation="off",
             **{f"pg__{k}": v for k, v in PARALLEL_FORCED.items()})
    eddy = the_eddy(la)
    workers = [w for w in eddy.get("Eddy Workers", []) if "Tuples Read" in w]
    assert workers, eddy
    assert sum(w["Lookahead Choices"] for w in workers) > 0, workers
    assert multiset(la.execute(QUERY).fetchall()) == vanilla_multiset(la, QUERY)
