"""Randomized differential testing of eddies: a seeded generator of
select-project-join queries of up to 8 relations with aggregates, ORDER BY /
LIMIT, subqueries, CTEs and set operations around the blocks; a runner that
compares every query with the eddy on and off under every routing policy and
a range of reoptimization frequencies and join methods; a minimiser that
reduces a failing query over its sqlglot tree; regression files that pytest
replays.

Everything is reproducible from seeds: the data from the schema seed (the
``JoinSchema`` of ``joingen``), the queries from the generator seed.

Command line (``make fuzz`` wraps it)::

    python -m eddytools.fuzz --dsn "host=... dbname=..." --queries 5000 --seed 1 \
        [--schema-every 250] [--settings 8] [--save tests/regressions]

Comparison rules (``compare``):

- both return rows: equal multisets; when the top query has an ORDER BY over
  every output column (the generator writes one before every LIMIT/OFFSET)
  equal sequences;
- both raise: the same SQLSTATE, or an error PostgreSQL raises too with
  another plan (below: the eddy read another relation first);
- the eddy raises and PostgreSQL does not, or the rows differ: a failure;
- PostgreSQL raises and the eddy returns rows: *tolerated* (counted): an eddy
  runs a predicate that may raise after every other predicate on a tuple, so
  it can evaluate it on fewer rows than PostgreSQL's plan (SQL leaves the
  order of evaluation open);
- the eddy raises and PostgreSQL does not, but PostgreSQL raises the same
  error with a plan that reads every relation in full (no nested loops, no
  index scans): *plan-dependent* (counted, with examples).  An eddy reads
  its sources in full where PostgreSQL may reach a relation only through a
  parameterized index scan, or not at all after an empty join (e.g.
  ``t1.b / t1.a > 5`` on the inner side of an index nested loop, under
  ``eddy.join_method = hash``).  A predicate run before its guard is still
  caught: PostgreSQL's full-scan plan keeps the guard first and does not
  raise.  Likewise when PostgreSQL raises the error on a single relation of
  the block under that relation's own restrictions (``relation_probes``):
  the eddy reads every source, where PostgreSQL's plan may never read a
  relation once a join below it came out empty;
- a lost connection: a backend crash (assertion failure or signal).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import sqlglot
from sqlglot import exp

from eddytools.db import connect, eddy_nodes, explain_json, multiset, set_gucs
from eddytools.joingen import (
    PARTITIONED,
    TABLES,
    JoinQueryGenerator,
    JoinSchema,
    _and,
    _col,
    _num,
    _paren,
)

DIALECT = "postgres"
POLICIES = ("rank", "lottery", "fixed", "random")
REOPT_FREQUENCIES = (1, 10, 100, 1000, 100000)
JOIN_METHODS = ("auto", "hash", "index")
MAX_RELATIONS = 8
# the FROM clause's key in a sqlglot Select (renamed in sqlglot 28)
FROM_KEY = "from_" if "from_" in exp.Select.arg_types else "from"


# ---------------------------------------------------------------------------
# The generator
# ---------------------------------------------------------------------------

@dataclass
class FuzzQuery:
    sql: str
    seed: int
    number: int
    relations: int  # base relations in the main block
    shape: str
    features: list[str]
    ordered: bool  # the top query orders by every output column

    def describe(self) -> str:
        return (f"FuzzQueryGenerator(seed={self.seed}) query #{self.number} ({self.shape}, "
                f"{self.relations} relations, {', '.join(self.features) or 'plain'}):\n{self.sql}")


@dataclass
class _Block:
    select: exp.Select  # FROM and WHERE, no SELECT list yet
    aliases: list[str]
    rels: list[str]
    shape: str


SAFE_OUT_COLS = ("id", "k4", "k8", "sk", "kt", "a", "b", "s")
INT_OUT_COLS = ("id", "k4", "k8", "sk", "a", "b")


class FuzzQueryGenerator(JoinQueryGenerator):
    """Random queries over a ``JoinSchema``, reproducible from ``seed``.  It
    reuses ``JoinQueryGenerator``'s join keys, non-equi predicates,
    restrictions and size bound, and adds blocks of up to 8 relations, more
    join graphs and predicate shapes, aggregates with HAVING, and subqueries,
    CTEs and set operations around the blocks."""

    SHAPES = ("chain", "star", "cycle", "clique", "tree", "self")

    def __init__(self, seed: int, schema: JoinSchema) -> None:
        super().__init__(seed, schema)
        self.features: list[str] = []

    # -- the join graph ----------------------------------------------------
    def _shape(self, n: int) -> tuple[str, list[tuple[int, int]], list[tuple[int, int]]]:
        rng = self.rng
        shapes = ["chain", "star", "tree", "self"] + (["cycle", "clique"] * 2 if n >= 3 else [])
        shape = rng.choice(shapes)
        if shape == "star":
            tree = [(0, k) for k in range(1, n)]
        elif shape == "tree":
            tree = [(rng.randrange(k), k) for k in range(1, n)]
        else:
            tree = [(k, k + 1) for k in range(n - 1)]
        extra: list[tuple[int, int]] = []
        if shape == "cycle":
            extra = [(0, n - 1)]
        elif shape == "clique":
            others = [(i, j) for i in range(n) for j in range(i + 2, n)]
            if n <= 5 and rng.random() < 0.5:
                extra = others  # a full clique
            else:
                extra = rng.sample(others, min(len(others), rng.randint(1, 6)))
        return shape, tree, extra

    def _relations_for(self, n: int, shape: str) -> list[str]:
        if shape == "self":
            base = self.rng.choice(list(TABLES) + [PARTITIONED])
            return [base if self.rng.random() < 0.8 else self.rng.choice(TABLES)
                    for _ in range(n)]
        return self._relations(n)

    # -- predicates --------------------------------------------------------
    def _restriction_more(self, alias: str) -> exp.Expression:
        """Restrictions beyond ``JoinQueryGenerator._restriction``: ranges, IN
        lists of text, NOT IN, expressions, IS DISTINCT FROM, float
        specials, and a few that may raise."""
        rng = self.rng
        col = lambda c: _col(alias, c)  # noqa: E731
        choice = rng.randrange(12)
        if choice in (9, 10) and rng.random() < 0.6:
            choice = 11
        if choice == 0:
            lo = rng.randint(0, 800)
            return _paren(exp.And(this=exp.GTE(this=col("b"), expression=_num(lo)),
                                  expression=exp.LT(this=col("b"),
                                                    expression=_num(lo + rng.randint(1, 400)))))
        if choice == 1:
            vals = [exp.Literal.string(rng.choice(["k1", "k2", "k3", "k10", "", "k7", "k20"]))
                    for _ in range(rng.randint(1, 5))]
            return exp.In(this=col("kt"), expressions=vals)
        if choice == 2:
            vals: list[exp.Expression] = [_num(rng.randint(-50, 50))
                                          for _ in range(rng.randint(1, 4))]
            if rng.random() < 0.2:
                vals.append(exp.Null())
            return exp.Not(this=exp.In(this=col("a"), expressions=vals))
        if choice == 3:
            e = exp.Mod(this=_paren(exp.Add(this=exp.Mul(this=col("a"), expression=_num(2)),
                                            expression=col("b"))),
                        expression=_num(rng.randint(2, 7)))
            return exp.EQ(this=e, expression=_num(rng.randint(0, 1)))
        if choice == 4:
            return exp.GT(this=exp.Coalesce(this=col("a"), expressions=[col("sk")]),
                          expression=_num(rng.randint(-10, 60)))
        if choice == 5:
            case = exp.Case(ifs=[exp.If(this=exp.GT(this=col("a"), expression=_num(0)),
                                        true=col("b"))],
                            default=exp.Neg(this=col("b")))
            return exp.GT(this=case, expression=_num(rng.randint(-500, 500)))
        if choice == 6:
            other = rng.choice(["k4", "k8", "sk"])
            return exp.NullSafeNEQ(this=col("k4"), expression=col(other)) \
                if rng.random() < 0.5 else \
                exp.NullSafeEQ(this=col("k4"), expression=_num(rng.randint(0, 50)))
        if choice == 7:
            v = rng.choice(["'NaN'", "'-0'", "'Infinity'", "0", "10.5"])
            op = rng.choice([exp.EQ, exp.GT, exp.LT, exp.GTE])
            return op(this=col("kf"), expression=exp.cast(sqlglot.parse_one(v, read=DIALECT),
                                                          "float8"))
        if choice == 8:
            return exp.GT(this=exp.Mul(this=col("kn"), expression=_num(2)),
                          expression=_num(rng.choice(["10", "20.5", "33"])))
        if choice == 9:
            # may raise: division by zero (a is 0 in about 1% of the rows)
            self.features.append("raise")
            return exp.GT(this=exp.Div(this=col("b"), expression=col("a"), typed=True),
                          expression=_num(rng.randint(1, 20)))
        if choice == 10:
            # may raise: the square root of a negative number
            self.features.append("raise")
            return exp.LT(this=exp.Sqrt(this=col("a")), expression=_num(rng.randint(1, 7)))
        return exp.Is(this=col(rng.choice(["k4", "kn", "kt", "kf", "f"])), expression=exp.Null())

    def _multi(self, aliases: list[str]) -> exp.Expression:
        """A predicate over three or more relations (or a non-equi one over two)."""
        rng = self.rng
        k = min(len(aliases), rng.choice([2, 3, 3, 4]))
        xs = rng.sample(aliases, k)
        choice = rng.randrange(8)
        if choice in (5, 6) and rng.random() < 0.6:
            choice = 7
        if choice == 0:
            total: exp.Expression = _col(xs[0], "a")
            for x in xs[1:]:
                total = exp.Add(this=total, expression=_col(x, "a"))
            return exp.GT(this=total, expression=_num(rng.randint(-30, 30)))
        if choice == 1 and k >= 3:
            return exp.Between(this=_col(xs[0], "b"), low=_col(xs[1], "b"), high=_col(xs[2], "b"))
        if choice == 2:
            return _paren(exp.Or(this=exp.LT(this=_col(xs[0], "a"), expression=_col(xs[1], "a")),
                                 expression=exp.Is(this=_col(xs[-1], "s"), expression=exp.Null())))
        if choice == 3 and k >= 3:
            # a hashable equality whose one side spans two relations
            return exp.EQ(this=exp.Coalesce(this=_col(xs[0], "k4"), expressions=[_col(xs[1], "k8")]),
                          expression=_col(xs[2], "k4"))
        if choice == 4 and k >= 3:
            return exp.EQ(this=exp.Add(this=_col(xs[0], "k4"), expression=_col(xs[1], "sk")),
                          expression=_col(xs[2], "k8"))
        if choice == 5:
            # may raise: integer overflow (b <= 1000)
            self.features.append("raise")
            return exp.GT(this=exp.Mul(this=exp.Mul(this=_col(xs[0], "b"),
                                                    expression=_col(xs[1], "b")),
                                       expression=_num(rng.choice([10, 3000]))),
                          expression=_num(0))
        if choice == 6 and k >= 3:
            # may raise: division by zero
            self.features.append("raise")
            return exp.LT(this=exp.Div(this=_col(xs[0], "b"), typed=True,
                                       expression=_paren(exp.Sub(this=_col(xs[1], "a"),
                                                                 expression=_col(xs[2], "a")))),
                          expression=_num(rng.randint(5, 100)))
        return exp.NEQ(this=exp.DPipe(this=_col(xs[0], "kt"), expression=_col(xs[1], "s")),
                       expression=exp.Literal.string("k1beta1"))

    # -- a join block ------------------------------------------------------
    def _block(self, n: int, prefix: str) -> _Block:
        rng = self.rng
        shape, tree_pairs, extra_pairs = self._shape(n)
        rels = self._relations_for(n, shape)
        aliases = [f"{prefix}{k + 1}" for k in range(n)]
        tree = self._tree(n, rels, aliases, tree_pairs, (0.02, 0.05, 0.13))

        extra: list[exp.Expression] = []
        for i, j in extra_pairs:
            r = rng.random()
            if r < 0.5:
                extra.append(self._equi(aliases[i], rels[i], aliases[j], rels[j])[0])
            else:
                extra.append(self._theta(aliases[i], aliases[j]))
        if n >= 2:
            for _ in range(rng.choice([0, 0, 1, 1, 2])):
                extra.append(self._multi(aliases))
        if n >= 3 and rng.random() < 0.1:
            # an equivalence class over three relations and a constant
            i, j, k = rng.sample(range(n), 3)
            extra += [exp.EQ(this=_col(aliases[i], "k4"), expression=_col(aliases[j], "k4")),
                      exp.EQ(this=_col(aliases[j], "k4"), expression=_col(aliases[k], "k8"))]
            if rng.random() < 0.5:
                extra.append(exp.EQ(this=_col(aliases[k], "k8"), expression=_num(rng.randint(0, 30))))
        restrictions: list[exp.Expression] = []
        for k in range(n):
            for _ in range(rng.choice([0, 0, 0, 1, 1, 2])):
                restrictions.append(self._restriction(aliases[k]) if rng.random() < 0.6
                                    else self._restriction_more(aliases[k]))

        def table(k: int) -> exp.Table:
            return exp.Table(this=exp.to_identifier(rels[k]),
                             alias=exp.TableAlias(this=exp.to_identifier(aliases[k])))

        select = exp.select().from_(table(0))
        where: list[exp.Expression] = []
        if rng.random() < 0.5:
            by_child = {max(e.i, e.j): e for e in tree}
            for k in range(1, n):
                e = by_child[k]
                select = select.join(table(k), on=e.pred if e.pred is not None else exp.true(),
                                     copy=False)
        else:
            for k in range(1, n):
                select = select.join(table(k), copy=False)
            where += [e.pred for e in tree if e.pred is not None]
        where += extra + restrictions
        rng.shuffle(where)
        if where:
            select = select.where(_and(where), copy=False)
        return _Block(select, aliases, rels, shape)

    # -- outputs -----------------------------------------------------------
    def _out(self, aliases: list[str], kind: str) -> exp.Expression:
        """An output expression: kind "int" (int values), "safe" (int or text:
        display determined by equality) or "any"."""
        rng = self.rng
        x, y = rng.choice(aliases), rng.choice(aliases)
        if kind == "int":
            return rng.choice([
                lambda: _col(x, rng.choice(INT_OUT_COLS)),
                lambda: exp.Add(this=_col(x, "a"), expression=_col(y, "b")),
                lambda: exp.Coalesce(this=_col(x, "k4"), expressions=[_col(y, "k8")]),
                lambda: exp.Anonymous(this="length", expressions=[_col(x, "kt")]),
            ])()
        if kind == "safe" or rng.random() < 0.6:
            return rng.choice([
                lambda: self._out(aliases, "int"),
                lambda: _col(x, rng.choice(SAFE_OUT_COLS)),
                lambda: exp.DPipe(this=_col(x, "kt"), expression=_col(y, "s")),
                lambda: exp.Upper(this=_col(x, "s")),
            ])()
        return rng.choice([
            lambda: _col(x, rng.choice(["kn", "kf", "f"])),
            lambda: exp.Mul(this=_col(x, "kn"), expression=_num(2)),
            lambda: exp.Mul(this=_col(x, "f"), expression=_num(0.5)),
        ])()

    def _aggs(self, aliases: list[str]) -> list[exp.Expression]:
        rng = self.rng
        x, y = rng.choice(aliases), rng.choice(aliases)
        pool = [exp.Count(this=exp.Star()), exp.Sum(this=_col(x, "b")),
                exp.Sum(this=_col(y, "kn")), exp.Max(this=_col(x, "kt")),
                exp.Min(this=_col(y, "a")), exp.Count(this=_col(x, "k4")),
                exp.Count(this=exp.Distinct(expressions=[_col(y, "sk")])),
                exp.Max(this=exp.Add(this=_col(x, "b"), expression=_col(y, "a")))]
        return rng.sample(pool, rng.randint(1, 3))

    @staticmethod
    def _alias_all(outs: list[exp.Expression]) -> list[exp.Expression]:
        return [exp.alias_(o, f"c{k}") for k, o in enumerate(outs)]

    def _top(self, block: _Block, kind_hint: str | None = None) -> tuple[exp.Select, bool]:
        """A SELECT list (and GROUP BY/HAVING, DISTINCT, ORDER BY/LIMIT) on a
        block; returns (select, ordered by every output)."""
        rng = self.rng
        s, aliases = block.select, block.aliases
        r = rng.random()
        if kind_hint == "int":  # a set-operation branch or an IN subquery
            outs = [self._out(aliases, "int") for _ in range(int(kind_hint == "int"))]
            return s.select(copy=False, *self._alias_all(outs)), False
        if r < 0.18:
            self.features.append("count")
            return s.select(copy=False, *self._alias_all([exp.Count(this=exp.Star())]
                                             + (self._aggs(aliases) if rng.random() < 0.4
                                                else []))), False
        if r < 0.42:
            self.features.append("group")
            keys = [self._out(aliases, "safe") for _ in range(rng.randint(1, 2))]
            aggs = self._aggs(aliases)
            s = s.select(copy=False, *self._alias_all(keys + aggs))
            s = s.group_by(copy=False, *[_num(k + 1) for k in range(len(keys))])
            if rng.random() < 0.5:
                self.features.append("having")
                having = rng.choice([
                    lambda: exp.GT(this=exp.Count(this=exp.Star()), expression=_num(rng.randint(1, 4))),
                    lambda: exp.GT(this=exp.Sum(this=_col(rng.choice(aliases), "b")),
                                   expression=_num(rng.randint(100, 3000))),
                    lambda: exp.Is(this=exp.Min(this=_col(rng.choice(aliases), "a")),
                                   expression=exp.Null()),
                ])()
                s = s.having(having, copy=False)
            if rng.random() < 0.3:
                self.features.append("limit")
                s = self._order_limit(s, len(keys) + len(aggs))
                return s, True
            return s, False
        if r < 0.50:
            self.features.append("distinct")
            outs = [self._out(aliases, "safe") for _ in range(rng.randint(1, 3))]
            return s.select(copy=False, *self._alias_all(outs)).distinct(), False
        if r < 0.66:
            self.features.append("limit")
            outs = [self._out(aliases, "safe") for _ in range(rng.randint(1, 4))]
            return self._order_limit(s.select(copy=False, *self._alias_all(outs)), len(outs)), True
        outs = [self._out(aliases, "any") for _ in range(rng.randint(1, 5))]
        return s.select(copy=False, *self._alias_all(outs)), False

    def _order_limit(self, s: exp.Select, width: int) -> exp.Select:
        rng = self.rng
        s = s.order_by(copy=False, *[exp.Ordered(this=_num(k + 1), desc=rng.random() < 0.3,
                                     nulls_first=rng.random() < 0.5) for k in range(width)])
        s = s.limit(rng.randint(1, 40), copy=False)
        if rng.random() < 0.3:
            s = s.offset(rng.randint(1, 10), copy=False)
        return s

    # -- the query ---------------------------------------------------------
    def query(self) -> FuzzQuery:
        rng = self.rng
        self.count += 1
        self.features = []
        n = rng.choice([2, 2, 3, 3, 4, 4, 5, 5, 6, 7, 8])
        block = self._block(n, "t")
        r = rng.random()
        ordered = False
        if r < 0.06:
            # a set operation of two blocks
            self.features.append("setop")
            left, _ = self._top(block, "int")
            other = self._block(rng.choice([2, 3, 4]), "u")
            right, _ = self._top(other, "int")
            op = rng.choice(["UNION", "UNION ALL", "INTERSECT", "EXCEPT ALL"])
            cls = {"UNION": exp.Union, "UNION ALL": exp.Union, "INTERSECT": exp.Intersect,
                   "EXCEPT ALL": exp.Except}[op]
            top: exp.Expression = cls(this=left, expression=right,
                                      distinct=not op.endswith("ALL"))
        elif r < 0.12:
            # an IN subquery over a join block
            self.features.append("in-subquery")
            inner, _ = self._top(self._block(rng.choice([2, 3]), "u"), "int")
            s = block.select.where(exp.In(this=_col(rng.choice(block.aliases), rng.choice(
                ["k4", "k8", "a"])), query=exp.Subquery(this=inner)))
            top, ordered = self._top(_Block(s, block.aliases, block.rels, block.shape))
        elif r < 0.17:
            # a correlated scalar subquery over a join block, rescanned per key
            self.features.append("correlated")
            inner_block = self._block(rng.choice([2, 3]), "u")
            corr = exp.EQ(this=_col(inner_block.aliases[0], "k4"), expression=_col("d", "c0"))
            inner = inner_block.select.where(corr, copy=False).select(exp.Count(this=exp.Star()))
            drive = exp.select(exp.alias_(_col("x", "k4"), "c0")).distinct().from_(
                exp.Table(this=exp.to_identifier(rng.choice(TABLES)),
                          alias=exp.TableAlias(this=exp.to_identifier("x")))).where(
                exp.LT(this=_col("x", "k4"), expression=_num(rng.randint(5, 30))))
            top = exp.select(_col("d", "c0"), exp.alias_(exp.Subquery(this=inner), "c1")).from_(
                exp.Subquery(this=drive, alias=exp.TableAlias(this=exp.to_identifier("d"))))
        elif r < 0.25:
            # a derived table or CTE around the block, filtered and aggregated
            wrap = rng.choice(["derived", "cte", "cte-materialized"])
            self.features.append(wrap)
            outs = [self._out(block.aliases, "safe") for _ in range(rng.randint(1, 3))]
            inner = block.select.select(*self._alias_all(outs))
            outer_filter = exp.Not(this=exp.Is(this=_col("d", "c0"), expression=exp.Null()))
            outer_sel = [_col("d", "c0"), exp.alias_(exp.Count(this=exp.Star()), "n")]
            if wrap == "derived":
                top = exp.select(*outer_sel).from_(exp.Subquery(
                    this=inner, alias=exp.TableAlias(this=exp.to_identifier("d")))).where(
                    outer_filter, copy=False).group_by(_num(1), copy=False)
            else:
                cte = exp.CTE(this=inner, alias=exp.TableAlias(this=exp.to_identifier("d")),
                              materialized=True if wrap == "cte-materialized" else None)
                top = exp.select(*outer_sel).from_(
                    exp.Table(this=exp.to_identifier("d"))).where(
                    outer_filter, copy=False).group_by(_num(1), copy=False)
                top.set("with", exp.With(expressions=[cte]))
        elif r < 0.29:
            # the block in a derived table on the inner side of a LEFT JOIN
            # (the block keeps its eddy; the outer join is PostgreSQL's)
            self.features.append("left-join")
            outs = [self._out(block.aliases, "int")] + [
                self._out(block.aliases, "safe") for _ in range(rng.randint(0, 2))]
            inner = block.select.select(copy=False, *self._alias_all(outs))
            z = exp.Table(this=exp.to_identifier(rng.choice(TABLES)),
                          alias=exp.TableAlias(this=exp.to_identifier("z")))
            sub = exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier("d")))
            on = exp.EQ(this=_col("d", "c0"), expression=_col("z", rng.choice(["id", "k4"])))
            top = exp.select(*[_col("d", f"c{k}") for k in range(len(outs))],
                             exp.alias_(_col("z", "b"), "zb")).from_(z)
            top = top.join(sub, on=on, join_type="left", copy=False) if rng.random() < 0.5 \
                else exp.select(*[_col("d", f"c{k}") for k in range(len(outs))],
                                exp.alias_(_col("z", "b"), "zb")).from_(sub).join(
                    z, on=on, join_type="left", copy=False)
        elif r < 0.32:
            # a correlated [NOT] EXISTS over a join block
            negated = rng.random() < 0.5
            self.features.append("not-exists" if negated else "exists")
            inner_block = self._block(rng.choice([2, 3]), "v")
            corr = exp.EQ(this=_col(inner_block.aliases[0], rng.choice(["k4", "id"])),
                          expression=_col(rng.choice(block.aliases), rng.choice(["k4", "k8"])))
            inner = inner_block.select.where(corr, copy=False).select(_num(1), copy=False)
            cond: exp.Expression = exp.Exists(this=inner)
            if negated:
                cond = exp.Not(this=cond)
            s = block.select.where(cond, copy=False)
            top, ordered = self._top(_Block(s, block.aliases, block.rels, block.shape))
        elif r < 0.35:
            # window functions over the block's rows (determined by the rows)
            self.features.append("window")
            outs = [self._out(block.aliases, "safe") for _ in range(rng.randint(1, 3))]
            part = exp.Window(this=exp.Count(this=exp.Star()), partition_by=[outs[0].copy()])
            rank = exp.Window(this=exp.RowNumber(), order=exp.Order(expressions=[
                exp.Ordered(this=o.copy(), nulls_first=False) for o in outs]))
            top = block.select.select(copy=False, *self._alias_all(outs + [part, rank]))
        else:
            top, ordered = self._top(block)
        return FuzzQuery(sql=top.sql(dialect=DIALECT), seed=self.seed, number=self.count,
                         relations=n, shape=block.shape, features=sorted(set(self.features)),
                         ordered=ordered)


# ---------------------------------------------------------------------------
# Running and comparing
# ---------------------------------------------------------------------------

class BackendCrash(Exception):
    """The connection was lost while a statement ran."""


def _canon_value(v: Any) -> Any:
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    return repr(v) if isinstance(v, (float, Decimal)) else v


def outcome(conn: psycopg.Connection, query: str) -> tuple:
    """("rows", rows) or ("error", SQLSTATE, message); a lost connection
    raises BackendCrash."""
    try:
        cur = conn.execute(query)
        return ("rows", cur.fetchall() if cur.description is not None else [])
    except psycopg.Error as e:
        if conn.broken or isinstance(e, psycopg.OperationalError) and conn.closed:
            raise BackendCrash(str(e)) from e
        return ("error", e.sqlstate, str(e).splitlines()[0])


def compare(got: tuple, want: tuple, ordered: bool) -> str:
    """"ok", "tolerated" or the kind of failure: "eddy-error", "rows",
    "error-code"."""
    if want[0] == "error":
        if got[0] == "rows":
            return "tolerated"
        return "ok" if got[1] == want[1] else "error-code"
    if got[0] == "error":
        return "eddy-error"
    if ordered:
        same = [tuple(map(_canon_value, r)) for r in got[1]] == \
               [tuple(map(_canon_value, r)) for r in want[1]]
    else:
        same = multiset(got[1]) == multiset(want[1])
    return "ok" if same else "rows"


def show(o: tuple) -> str:
    if o[0] == "error":
        return f"ERROR {o[1]}: {o[2]}"
    return f"{len(o[1])} rows, first {o[1][:3]}"


def settings_for(rng: random.Random, per_query: int) -> list[dict]:
    """``per_query`` settings, covering every routing policy once per 4;
    the reoptimization frequency, join method, lottery window and
    selection_min_cost drawn for each."""
    out = []
    for k in range(per_query):
        out.append({"routing_policy": POLICIES[k % len(POLICIES)],
                    "reopt_frequency": rng.choice(REOPT_FREQUENCIES),
                    "join_method": rng.choice(JOIN_METHODS),
                    "lottery_window": rng.choice([0, 0, 0, 50]),
                    "selection_min_cost": rng.choice([0, 0.01])})
    return out


def is_ordered(query: str) -> bool:
    """The top query orders by every output column (by position)."""
    tree = sqlglot.parse_one(query, read=DIALECT)
    if not isinstance(tree, exp.Select) or not tree.args.get("order"):
        return False
    keys = {o.this.name for o in tree.args["order"].expressions
            if isinstance(o.this, exp.Literal)}
    return keys == {str(k + 1) for k in range(len(tree.expressions))}


@dataclass
class Failure:
    kind: str  # "crash", "eddy-error", "rows", "error-code"
    query: str
    settings: dict
    ordered: bool
    detail: str
    schema_seed: int
    origin: str = ""

    def describe(self) -> str:
        return (f"[{self.kind}] schema seed {self.schema_seed}, {self.origin}\n"
                f"settings: {self.settings}\n{self.query}\n{self.detail}")


@dataclass
class Stats:
    queries: int = 0
    comparisons: int = 0
    with_eddy: int = 0  # queries with an Eddy under at least one setting
    plans_with_eddy: int = 0  # (query, setting) pairs with an Eddy
    tolerated: int = 0
    plan_dependent: int = 0  # eddy raised; PostgreSQL raised too with full scans
    plan_dependent_examples: list[str] = field(default_factory=list)
    vanilla_errors: int = 0
    failures: list[Failure] = field(default_factory=list)
    by_relations: dict[int, int] = field(default_factory=dict)
    by_shape: dict[str, int] = field(default_factory=dict)
    by_feature: dict[str, int] = field(default_factory=dict)
    settings_seen: set = field(default_factory=set)

    def summary(self) -> str:
        share = self.with_eddy / self.queries if self.queries else 0
        pshare = self.plans_with_eddy / self.comparisons if self.comparisons else 0
        return (f"{self.queries} queries, {self.comparisons} query x setting comparisons, "
                f"Eddy in {self.with_eddy} queries ({share:.1%}) and {self.plans_with_eddy} "
                f"plans ({pshare:.1%}); {self.vanilla_errors} queries raise in vanilla, "
                f"{self.tolerated} tolerated (vanilla raised, eddy returned rows), "
                f"{self.plan_dependent} plan-dependent (eddy raised, as vanilla does "
                f"with full scans); "
                f"{len(self.failures)} failures\n"
                f"relations: {dict(sorted(self.by_relations.items()))}\n"
                f"shapes: {dict(sorted(self.by_shape.items()))}\n"
                f"features: {dict(sorted(self.by_feature.items()))}\n"
                f"distinct (policy, reopt, method) settings: {len(self.settings_seen)}")


class Differ:
    """Runs queries with the eddy on and off in one database (schema ``fz``,
    the extension's functions in ``public``); reconnects after a crash."""

    def __init__(self, dsn: str, log: Callable[[str], None] = lambda s: None) -> None:
        self.dsn = dsn
        self.log = log
        self.conn = self._connect()
        self.schema_seed: int | None = None

    def _connect(self, timeout: float = 120) -> psycopg.Connection:
        deadline = time.monotonic() + timeout
        while True:
            try:
                conn = connect(self.dsn)
                conn.execute("CREATE EXTENSION IF NOT EXISTS eddy")
                conn.execute("SET search_path = fz, public")
                conn.execute("SET statement_timeout = '60s'")
                return conn
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def reconnect(self) -> None:
        try:
            self.conn.close()
        except Exception:  # noqa: BLE001
            pass
        self.conn = self._connect()

    def load_schema(self, seed: int) -> JoinSchema:
        schema = JoinSchema(seed)
        if self.schema_seed != seed:
            self.conn.execute("DROP SCHEMA IF EXISTS fz CASCADE")
            self.conn.execute("CREATE SCHEMA fz")
            schema.setup(self.conn)
            self.schema_seed = seed
        return schema

    def vanilla(self, query: str) -> tuple:
        set_gucs(self.conn, enabled="off")
        return outcome(self.conn, query)

    def eddy(self, query: str, settings: dict) -> tuple[tuple, bool]:
        """(outcome, has an Eddy) under ``settings``."""
        set_gucs(self.conn, enabled="on", **settings)
        try:
            has = bool(eddy_nodes(explain_json(self.conn, query)))
        except psycopg.Error as e:
            if self.conn.broken:
                raise BackendCrash(str(e)) from e
            has = False
        return outcome(self.conn, query), has

    def check(self, query: str, settings: dict, ordered: bool,
              want: tuple | None = None) -> tuple[str, str, bool]:
        """(verdict, detail, has Eddy) of one query under one setting."""
        try:
            if want is None:
                want = self.vanilla(query)
            got, has = self.eddy(query, settings)
        except BackendCrash as e:
            self.reconnect()
            return "crash", str(e), True
        verdict = compare(got, want, ordered)
        detail = f"eddy: {show(got)}\nvanilla: {show(want)}"
        if verdict in ("eddy-error", "error-code"):
            try:
                alt = self.vanilla_full_scans(query)
            except BackendCrash as e:
                self.reconnect()
                return "crash", f"vanilla with full scans: {e}", has
            detail += f"\nvanilla with full scans: {show(alt)}"
            if alt[0] == "error" and alt[1] == got[1]:
                verdict = "plan-dependent"
            else:
                for probe in relation_probes(query):
                    o = self.vanilla(probe)
                    if o[0] == "error" and o[1] == got[1]:
                        verdict = "plan-dependent"
                        detail += f"\nvanilla raises it on one relation: {probe}"
                        break
        return verdict, detail, has

    FULL_SCANS = ("enable_nestloop", "enable_indexscan", "enable_bitmapscan",
                  "enable_indexonlyscan")

    def vanilla_full_scans(self, query: str) -> tuple:
        """PostgreSQL's outcome with a plan that reads every relation in full
        (no nested loops, no index scans), as an eddy reads its sources."""
        set_gucs(self.conn, enabled="off")
        for g in self.FULL_SCANS:
            self.conn.execute(f"SET {g} = off")
        try:
            return outcome(self.conn, query)
        finally:
            if not self.conn.broken:
                for g in self.FULL_SCANS:
                    self.conn.execute(f"RESET {g}")


def relation_probes(query: str) -> list[str]:
    """For every base relation of every block of ``query``: a count of the
    relation under its own restrictions (the conjuncts of WHERE and inner ON
    that name only it) -- what PostgreSQL evaluates when it scans that
    relation by itself, as an eddy's source scan does."""
    try:
        tree = sqlglot.parse_one(query, read=DIALECT)
    except sqlglot.errors.ParseError:
        return []
    probes = []
    for s in tree.find_all(exp.Select):
        from_ = s.args.get(FROM_KEY)
        joins = s.args.get("joins") or []
        if from_ is None or any(j.side or j.kind for j in joins):
            continue
        tables = [from_.this] + [j.this for j in joins]
        conj = _conjuncts(s.args["where"].this) if s.args.get("where") else []
        for j in joins:
            conj += _conjuncts(j.args.get("on"))
        for t in tables:
            if not isinstance(t, exp.Table):
                continue
            alias = t.alias_or_name
            own = [c for c in conj if _aliases_in(c) == {alias}
                   and not c.find(exp.Subquery, exp.Select)]
            if own:
                probes.append(exp.select(exp.Count(this=exp.Star())).from_(t.copy()).where(
                    _and([c.copy() for c in own])).sql(dialect=DIALECT))
    return probes


def run(dsn: str, *, queries: int, seed: int, schema_every: int = 250,
        settings_per_query: int = 4, log: Callable[[str], None] = print,
        minimise_into: Path | None = None, max_failures: int = 20,
        deadline: float | None = None) -> Stats:
    """Generate and compare ``queries`` queries; a new schema (seed
    ``seed * 1000 + k``) every ``schema_every`` queries."""
    stats = Stats()
    differ = Differ(dsn, log)
    rng = random.Random(seed)
    gen: FuzzQueryGenerator | None = None
    saved = 0
    for i in range(queries):
        if deadline is not None and time.monotonic() > deadline:
            log(f"deadline reached after {i} queries")
            break
        if i % schema_every == 0:
            schema_seed = seed * 1000 + i // schema_every
            schema = differ.load_schema(schema_seed)
            gen = FuzzQueryGenerator(seed * 1000 + i // schema_every, schema)
        assert gen is not None
        q = gen.query()
        stats.queries += 1
        stats.by_relations[q.relations] = stats.by_relations.get(q.relations, 0) + 1
        stats.by_shape[q.shape] = stats.by_shape.get(q.shape, 0) + 1
        for f in q.features:
            stats.by_feature[f] = stats.by_feature.get(f, 0) + 1
        try:
            want = differ.vanilla(q.sql)
        except BackendCrash as e:
            differ.reconnect()
            stats.failures.append(Failure("vanilla-crash", q.sql, {}, q.ordered, str(e),
                                          differ.schema_seed or 0, f"gen seed {gen.seed} #{q.number}"))
            continue
        if want[0] == "error":
            stats.vanilla_errors += 1
        any_eddy = False
        for s in settings_for(rng, settings_per_query):
            verdict, detail, has = differ.check(q.sql, s, q.ordered, want)
            stats.comparisons += 1
            stats.plans_with_eddy += has
            stats.settings_seen.add((s["routing_policy"], s["reopt_frequency"], s["join_method"]))
            any_eddy |= has
            if verdict == "tolerated":
                stats.tolerated += 1
            elif verdict == "plan-dependent":
                stats.plan_dependent += 1
                if len(stats.plan_dependent_examples) < 3:
                    stats.plan_dependent_examples.append(
                        f"gen seed {gen.seed} #{q.number} {s}\n{q.sql}\n{detail}")
            elif verdict != "ok":
                fail = Failure(verdict, q.sql, s, q.ordered, detail, differ.schema_seed or 0,
                               f"gen seed {gen.seed} #{q.number}")
                stats.failures.append(fail)
                log(f"FAILURE {fail.describe()}")
                if minimise_into is not None and saved < 5:
                    reduced = minimise_failure(differ, fail, log=log)
                    path = save_regression(minimise_into, reduced)
                    saved += 1
                    log(f"minimised to:\n{reduced.query}\nsaved as {path}")
                break  # one failure per query is enough
        stats.with_eddy += any_eddy
        if len(stats.failures) >= max_failures:
            log("too many failures; stopping")
            break
        if (i + 1) % 100 == 0:
            log(f"{i + 1} queries, {stats.comparisons} comparisons, "
                f"{len(stats.failures)} failures, eddy share "
                f"{stats.with_eddy / stats.queries:.1%}")
    differ.conn.close()
    return stats


# ---------------------------------------------------------------------------
# Minimisation over the sqlglot tree
# ---------------------------------------------------------------------------

def _conjuncts(e: exp.Expression | None) -> list[exp.Expression]:
    if e is None:
        return []
    if isinstance(e, exp.And):
        return _conjuncts(e.this) + _conjuncts(e.expression)
    if isinstance(e, exp.Paren) and isinstance(e.this, exp.And):
        return _conjuncts(e.this)
    return [e]


def _aliases_in(e: exp.Expression) -> set[str]:
    return {c.table for c in e.find_all(exp.Column) if c.table}


def _table_alias(t: exp.Expression) -> str:
    return t.alias_or_name


def _honest(tree: exp.Expression) -> bool:
    """Every LIMIT/OFFSET comes with an ORDER BY over every output column, so
    that the rows it keeps are determined."""
    for s in tree.find_all(exp.Select):
        if s.args.get("limit") or s.args.get("offset"):
            order = s.args.get("order")
            if not order:
                return False
            keys = {o.this.name for o in order.expressions if isinstance(o.this, exp.Literal)}
            if keys != {str(k + 1) for k in range(len(s.expressions))}:
                return False
    return True


def _candidates(sql_text: str) -> list[str]:
    """Smaller variants of a query, largest reductions first."""
    tree = sqlglot.parse_one(sql_text, read=DIALECT)
    out: list[str] = []

    def emit(t: exp.Expression) -> None:
        if _honest(t):
            out.append(t.sql(dialect=DIALECT))

    # 1. a sub-block on its own (the branch of a set operation, a derived
    #    table, a CTE, an IN subquery)
    for node in tree.find_all(exp.Select, exp.Union):
        if node is not tree:
            emit(node.copy())
    selects = list(tree.find_all(exp.Select))
    for si, _ in enumerate(selects):
        def fresh() -> tuple[exp.Expression, exp.Select]:
            t = tree.copy()
            return t, list(t.find_all(exp.Select))[si]

        t, s = fresh()
        # 2. clauses
        for clause in ("with", "having", "distinct"):
            if s.args.get(clause):
                t, s2 = fresh()
                s2.set(clause, None)
                emit(t)
        if s.args.get("limit") or s.args.get("offset"):
            t, s2 = fresh()
            s2.set("limit", None)
            s2.set("offset", None)
            emit(t)
            if s.args.get("order"):
                t, s2 = fresh()
                for c in ("limit", "offset", "order"):
                    s2.set(c, None)
                emit(t)
        elif s.args.get("order"):
            t, s2 = fresh()
            s2.set("order", None)
            emit(t)
        if s.args.get("group"):
            t, s2 = fresh()
            s2.set("group", None)
            s2.set("having", None)
            s2.set("expressions", [exp.alias_(exp.Count(this=exp.Star()), "c0")])
            s2.set("order", None)
            s2.set("limit", None)
            s2.set("offset", None)
            emit(t)
        # 3. explicit joins to a comma list (inner joins only)
        joins = s.args.get("joins") or []
        if any(j.args.get("on") for j in joins) and not any(j.side for j in joins):
            t, s2 = fresh()
            ons = []
            for j in s2.args["joins"]:
                if j.args.get("on"):
                    ons += _conjuncts(j.args["on"])
                    j.set("on", None)
            ons += _conjuncts(s2.args["where"].this) if s2.args.get("where") else []
            s2.set("where", exp.Where(this=_and(ons)) if ons else None)
            emit(t)
        # 4. drop a relation with every predicate and output that names it
        from_ = s.args.get(FROM_KEY)
        if from_ is not None and joins:
            names = [_table_alias(from_.this)] + [_table_alias(j.this) for j in joins]
            for k, name in enumerate(names):
                if k == 0 and joins[0].args.get("on"):
                    continue
                t, s2 = fresh()
                if k == 0:
                    first = s2.args["joins"].pop(0)
                    s2.set(FROM_KEY, exp.From(this=first.this))
                else:
                    s2.args["joins"].pop(k - 1)
                ok = True
                for j in s2.args.get("joins") or []:
                    if j.args.get("on") is not None:
                        kept = [c for c in _conjuncts(j.args["on"]) if name not in _aliases_in(c)]
                        j.set("on", _and(kept) if kept else exp.true())
                if s2.args.get("where"):
                    kept = [c for c in _conjuncts(s2.args["where"].this)
                            if name not in _aliases_in(c)]
                    s2.set("where", exp.Where(this=_and(kept)) if kept else None)
                items = [e for e in s2.expressions if name not in _aliases_in(e)]
                if len(items) != len(s2.expressions):
                    if s2.args.get("group") or s2.args.get("order"):
                        ok = False
                    items = items or [exp.alias_(exp.Count(this=exp.Star()), "c0")]
                    s2.set("expressions", items)
                if s2.args.get("having") and name in _aliases_in(s2.args["having"]):
                    s2.set("having", None)
                if ok:
                    emit(t)
        # 5. drop WHERE conjuncts: halves, then one at a time
        where = _conjuncts(s.args["where"].this) if s.args.get("where") else []
        chunks = []
        if len(where) > 3:
            h = len(where) // 2
            chunks += [range(0, h), range(h, len(where))]
        chunks += [range(k, k + 1) for k in range(len(where))]
        for ch in chunks:
            t, s2 = fresh()
            kept = [c for k, c in enumerate(_conjuncts(s2.args["where"].this)) if k not in ch]
            s2.set("where", exp.Where(this=_and(kept)) if kept else None)
            emit(t)
        # 6. drop ON conjuncts
        for ji, j in enumerate(joins):
            on = _conjuncts(j.args.get("on")) if j.args.get("on") else []
            for k in range(len(on)):
                if len(on) == 1 and isinstance(on[0], exp.Boolean):
                    continue
                t, s2 = fresh()
                j2 = s2.args["joins"][ji]
                kept = [c for m, c in enumerate(_conjuncts(j2.args["on"])) if m != k]
                j2.set("on", _and(kept) if kept else exp.true())
                emit(t)
        # 7. drop output columns (not under GROUP BY or ORDER BY positions)
        if len(s.expressions) > 1 and not s.args.get("group") and not s.args.get("order"):
            for k in range(len(s.expressions)):
                t, s2 = fresh()
                s2.set("expressions", [e for m, e in enumerate(s2.expressions) if m != k])
                emit(t)
    # 8. simplify predicates: an OR to one arm, NOT x to x, a BETWEEN to a comparison
    for kind in (exp.Or, exp.Not):
        for k, _ in enumerate(list(tree.find_all(kind))):
            for arm in ("this", "expression"):
                t = tree.copy()
                node = list(t.find_all(kind))[k]
                if node.args.get(arm) is not None:
                    node.replace(node.args[arm])
                    emit(t)
    seen: set[str] = set()
    uniq = []
    for c in out:
        if c not in seen and c != sql_text:
            seen.add(c)
            uniq.append(c)
    return uniq


def minimise(sql_text: str, still_fails: Callable[[str], bool], *,
             max_tests: int = 400, log: Callable[[str], None] = lambda s: None) -> str:
    """Greedy reduction: take the first smaller variant that still fails,
    until no variant does (or ``max_tests`` tests ran)."""
    current = sql_text
    tests = 0
    progress = True
    while progress and tests < max_tests:
        progress = False
        for cand in _candidates(current):
            if tests >= max_tests:
                break
            tests += 1
            try:
                fails = still_fails(cand)
            except Exception as e:  # noqa: BLE001
                log(f"minimiser: candidate raised {e!r}")
                fails = False
            if fails:
                current = cand
                progress = True
                break
    return current


def minimise_failure(differ: Differ, fail: Failure, *,
                     log: Callable[[str], None] = lambda s: None) -> Failure:
    """A failure reduced to a smaller query that fails the same way under the
    same settings (confirmed three times)."""
    kinds = {fail.kind}

    def still_fails(q: str) -> bool:
        ordered = is_ordered(q)
        verdict, _, _ = differ.check(q, fail.settings, ordered)
        return verdict in kinds

    reduced = minimise(fail.query, still_fails, log=log)
    for _ in range(2):
        if not still_fails(reduced):
            log("minimised query does not fail every time; keeping the original")
            reduced = fail.query
            break
    verdict, detail, _ = differ.check(reduced, fail.settings, is_ordered(reduced))
    return Failure(fail.kind, reduced, fail.settings, is_ordered(reduced), detail,
                   fail.schema_seed, fail.origin + "; minimised")


def save_regression(directory: Path, fail: Failure) -> Path:
    """Write a regression file replayed by tests/test_fuzz.py."""
    directory.mkdir(parents=True, exist_ok=True)
    k = 1
    while (directory / f"fuzz-{k:03d}.json").exists():
        k += 1
    path = directory / f"fuzz-{k:03d}.json"
    doc = {"schema_seed": fail.schema_seed, "query": fail.query, "settings": fail.settings,
           "ordered": fail.ordered, "kind": fail.kind, "origin": fail.origin,
           "observed": fail.detail}
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return path


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dsn", required=True)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--schema-every", type=int, default=250,
                    help="queries per schema (data seed seed*1000+k)")
    ap.add_argument("--settings", type=int, default=8,
                    help="settings per query (every policy once per 4)")
    ap.add_argument("--minutes", type=float, default=0, help="stop after this long (0: never)")
    ap.add_argument("--save", type=Path, default=None,
                    help="minimise failures and save regression files here")
    ap.add_argument("--report", type=Path, default=None, help="write the summary as JSON here")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    deadline = t0 + args.minutes * 60 if args.minutes else None

    def log(s: str) -> None:
        print(f"[{time.monotonic() - t0:7.1f}s] {s}", flush=True)

    stats = run(args.dsn, queries=args.queries, seed=args.seed, schema_every=args.schema_every,
                settings_per_query=args.settings, log=log, minimise_into=args.save,
                max_failures=50, deadline=deadline)
    log(stats.summary())
    for f in stats.failures:
        print("\n" + f.describe())
    for example in stats.plan_dependent_examples:
        print("\nplan-dependent (not a failure):\n" + example)
    if args.report:
        doc = asdict(stats)
        doc["settings_seen"] = sorted(map(list, stats.settings_seen))
        doc["seconds"] = round(time.monotonic() - t0, 1)
        args.report.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    return 1 if stats.failures else 0


if __name__ == "__main__":
    sys.exit(main())
