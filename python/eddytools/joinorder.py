"""The join-order cost model of the STAIRs experiments' Figure 8: how much
work a plan does by the estimates, and how far a random plan is from the
best one.

A query is a join graph: relations (aliases) with their rows and the
percentage of rows their selections keep, and edges, each an equi-join of
two relations whose keys give a drawn fan-out (Edge, make_edge).  The join
graphs Figure 8 draws are trees (paths and stars), so a set of relations is
connected iff it holds one edge fewer than relations (connected).

  join_size            the estimated result of joining a connected set of
                       relations: the product of their (selected) rows and
                       of each edge's selectivity inside the set
  largest_intermediate the largest join_size over the connected subsets (the
                       size cap a random setup must stay under)
  plan_tuples          the tuples a left-deep plan handles: every base
                       relation's rows after its selection, every
                       intermediate result and the query's result
  plan_excess          the random plan's tuples over the best left-deep
                       plan's without cross products (every permutation)
  best_plan_tuples     the least tuples of any plan without cross products,
                       bushy ones included: a dynamic program over the
                       connected subsets, each split into two connected
                       halves (an eddy with STAIRs can run a bushy plan, a
                       STAIR holding a composite of either side)
  plan_excess_any      the random plan's tuples over best_plan_tuples: at 1
                       the random plan is the best there is, and an eddy can
                       only tie its work

Everything here is arithmetic on estimates; nothing runs a query.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass
class Edge:
    a: str                  # alias of the smaller table
    b: str
    fanout: float           # |a JOIN b| / max(|a|, |b|)
    modulus: int
    shift: int

    def clause(self) -> str:
        right = f"{self.b}.unique1 % {self.modulus}" + (f" + {self.shift}" if self.shift else "")
        return f"{self.a}.unique1 % {self.modulus} = {right}"


class JoinGraph(Protocol):
    """What the cost model reads of a query (experiments.Setup has it):
    alias -> rows, alias -> percentage kept, the edges, and the random
    plan's join order."""
    rows: dict[str, int]
    selections: dict[str, int]
    edges: list[Edge]
    order: list[str]


def make_edge(a: str, b: str, rows: dict[str, int], fanout: float) -> Edge:
    """Join keys with |a JOIN b| = fanout * max(|a|, |b|): both sides
    ``unique1 % K`` (unique1 is a permutation of 0..n-1), the larger side
    shifted by S.  fanout >= 1: K = small/fanout, S = 0; fanout < 1: K =
    small, S = (1 - fanout) * small, so a fraction fanout of the keys overlap."""
    if rows[a] > rows[b]:
        a, b = b, a
    small = rows[a]
    if fanout >= 1:
        return Edge(a, b, fanout, max(1, round(small / fanout)), 0)
    return Edge(a, b, fanout, small, round((1 - fanout) * small))


def edge_size(e: Edge, rows: dict[str, int]) -> float:
    """|a JOIN b| of an edge (expected, over the whole tables)."""
    na, nb = rows[e.a], rows[e.b]
    k = e.modulus
    per_a = na / k if k <= na else 1.0
    per_b = nb / k if k <= nb else 1.0
    values_a = min(k, na)
    overlap = max(0, min(values_a, e.shift + min(k, nb)) - e.shift)
    return overlap * per_a * per_b


def join_size(subset: Sequence[str], edges: list[Edge], rows: dict[str, int],
              selections: dict[str, int]) -> float:
    """The estimated result of joining a connected subset of relations (one
    relation: its rows after its selection)."""
    size = math.prod(rows[a] * selections[a] / 100 for a in subset)
    for e in edges:
        if e.a in subset and e.b in subset:
            size *= edge_size(e, rows) / (rows[e.a] * rows[e.b])
    return size


def largest_intermediate(aliases: list[str], edges: list[Edge], rows: dict[str, int],
                         selections: dict[str, int]) -> float:
    """The largest estimated result over the connected subsets of relations."""
    best = 0.0
    for n in range(2, len(aliases) + 1):
        for subset in itertools.combinations(aliases, n):
            if connected(subset, edges):
                best = max(best, join_size(subset, edges, rows, selections))
    return best


def connected(subset: Sequence[str], edges: list[Edge]) -> bool:
    """Are the relations of ``subset`` connected by the query's edges?  The
    join graphs are trees (paths and stars), so a subset is connected iff it
    holds one edge fewer than relations."""
    return sum(e.a in subset and e.b in subset for e in edges) == len(subset) - 1


def subset_size(graph: JoinGraph, subset: list[str]) -> float:
    """join_size of a subset of a join graph's relations."""
    return join_size(subset, graph.edges, graph.rows, graph.selections)


def plan_tuples(graph: JoinGraph, order: list[str]) -> float:
    """The tuples a left-deep plan handles by the estimates: every base
    relation's rows after its selection, every intermediate result and the
    query's result."""
    return (sum(subset_size(graph, [a]) for a in order) +
            sum(subset_size(graph, order[:k]) for k in range(2, len(order) + 1)))


def plan_excess(graph: JoinGraph) -> float:
    """The SHJ's random plan's tuples (plan_tuples) over those of the best
    left-deep plan without cross products: how much a router that found the
    best plan could save, by the estimates.  Near 1, the random plan is
    already about as good as any, and an eddy can only tie it."""
    def no_cross_product(order: tuple[str, ...]) -> bool:
        return all(any({e.a, e.b} == {order[k], x} for e in graph.edges for x in order[:k])
                   for k in range(1, len(order)))
    best = min(plan_tuples(graph, list(o))
               for o in itertools.permutations(graph.rows) if no_cross_product(o))
    return plan_tuples(graph, graph.order) / best if best > 0 else 1.0


def best_plan_tuples(graph: JoinGraph) -> float:
    """The tuples the best plan handles by the estimates (plan_tuples), over
    every plan without cross products, bushy ones included (an eddy with
    STAIRs can run a bushy plan: a join's STAIR may hold a composite of
    either side): the least over the splits of a connected set into two
    connected halves of the halves' tuples, plus the set's result."""
    aliases = sorted(graph.rows)

    @functools.cache
    def best(subset: tuple[str, ...]) -> float:
        size = subset_size(graph, list(subset))
        if len(subset) == 1:
            return size
        parts = []
        for k in range(1, len(subset)):
            for left in itertools.combinations(subset, k):
                right = tuple(a for a in subset if a not in left)
                if (subset[0] in left and connected(left, graph.edges)
                        and connected(right, graph.edges)):
                    parts.append(best(left) + best(right))
        return size + min(parts)

    return best(tuple(aliases))


def plan_excess_any(graph: JoinGraph) -> float:
    """plan_excess over the best of all plans, bushy ones included
    (best_plan_tuples).  At 1, the random plan is the best plan there is,
    by the estimates: an eddy can do no less work than the SHJ's tree, only
    the same work at its own cost per tuple."""
    best = best_plan_tuples(graph)
    return plan_tuples(graph, graph.order) / best if best > 0 else 1.0
