"""eddytools.joinorder, the join-order cost model of Figure 8: join sizes
by the estimates, the tuples a plan handles, the best left-deep and the best
bushy plan (no server needed)."""

from __future__ import annotations

import pytest

from eddytools import experiments as ex
from eddytools import joinorder as jo


def test_figure8_plan_excess():
    """The SHJ plan's estimated excess over the best plan: 1 for the best
    order, the ratio of the tuples the two plans handle otherwise, never
    below 1 for the drawn setups."""
    rows = {"a": 1000, "b": 10_000, "c": 1000}
    ab = jo.make_edge("a", "b", rows, 10.0)      # |a JOIN b| = 100,000
    bc = jo.make_edge("b", "c", rows, 0.01)      # |b JOIN c| = 100
    setup = ex.Setup(0, "path3", {"a": "x", "b": "y", "c": "z"}, rows,
                     {"a": 100, "b": 100, "c": 100}, [ab, bc], ["a", "b", "c"], {}, {}, 0.0)
    sources = 12_000
    abc = jo.subset_size(setup, ["a", "b", "c"])
    assert jo.subset_size(setup, ["a", "b"]) == pytest.approx(100_000, rel=0.01)
    assert jo.subset_size(setup, ["b", "c"]) == pytest.approx(100, rel=0.01)
    worst = sources + 100_000 + abc
    assert jo.plan_tuples(setup, ["a", "b", "c"]) == pytest.approx(worst, rel=0.01)
    best = sources + jo.subset_size(setup, ["b", "c"]) + abc
    assert jo.plan_excess(setup) == pytest.approx(worst / best, rel=0.01)
    setup.order = ["c", "b", "a"]
    assert jo.plan_excess(setup) == pytest.approx(1.0)
    # three relations: every plan is left-deep, so the best is the same
    assert jo.best_plan_tuples(setup) == pytest.approx(best, rel=1e-9)
    assert jo.plan_excess_any(setup) == pytest.approx(1.0)
    for i in range(20):
        s = ex.make_setup(i, 7, ex.syn_tables(1.0), ex.SYN_CAP)
        d = s.describe()
        assert d["shj_plan_excess_any"] >= d["shj_plan_excess"] >= 1.0


def test_figure8_best_plan_may_be_bushy():
    """A path a - b - c - d whose two end joins are selective and whose
    middle one is not: the best plan joins a with b and c with d and then
    the two (10 + 10 tuples in between), which no left-deep order does (a
    left-deep order must take the middle join second: 10 + 100)."""
    rows = {"a": 1000, "b": 1000, "c": 1000, "d": 1000}
    edges = [jo.make_edge("a", "b", rows, 0.01), jo.make_edge("b", "c", rows, 10.0),
             jo.make_edge("c", "d", rows, 0.01)]
    setup = ex.Setup(0, "path4", {a: a for a in rows}, rows, dict.fromkeys(rows, 100),
                     edges, ["a", "b", "c", "d"], {}, {}, 0.0)
    assert [jo.edge_size(e, rows) for e in edges] == [10, 10_000, 10]
    assert jo.subset_size(setup, ["a", "b", "c", "d"]) == pytest.approx(1.0)
    assert jo.plan_tuples(setup, setup.order) == pytest.approx(4000 + 10 + 100 + 1)
    assert jo.plan_excess(setup) == pytest.approx(1.0)          # the best left-deep order
    assert jo.best_plan_tuples(setup) == pytest.approx(4000 + 10 + 10 + 1)
    assert jo.plan_excess_any(setup) == pytest.approx(4111 / 4021)


def test_connected_subsets_of_a_tree():
    """A subset of a tree-shaped join graph is connected iff it holds one
    edge fewer than relations: on the path a - b - c, {a, b} and {a, b, c}
    are, {a, c} is not; the largest intermediate result is taken over the
    connected subsets only (a cross product of a and c is never counted)."""
    rows = {"a": 1000, "b": 1000, "c": 1000}
    edges = [jo.make_edge("a", "b", rows, 2.0), jo.make_edge("b", "c", rows, 3.0)]
    assert jo.connected(("a", "b"), edges) and jo.connected(("a", "b", "c"), edges)
    assert not jo.connected(("a", "c"), edges)
    selections = dict.fromkeys(rows, 100)
    assert jo.join_size(["a", "c"], edges, rows, selections) == pytest.approx(1e6)
    assert jo.largest_intermediate(list(rows), edges, rows, selections) == pytest.approx(
        max(jo.join_size(s, edges, rows, selections)
            for s in (["a", "b"], ["b", "c"], ["a", "b", "c"])))
    assert jo.largest_intermediate(list(rows), edges, rows, selections) < 1e6
