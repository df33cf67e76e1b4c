"""The fuzzer's query generator: seeded select-project-join queries of up to 8
relations over a ``JoinSchema`` (chain, star, tree, cycle, clique and
self-join graphs), with aggregates and HAVING, DISTINCT, ORDER BY ... LIMIT
over every output column, and subqueries, CTEs, set operations, outer joins
and window functions around the blocks; built as sqlglot trees.

The same generator seed and schema always give the same queries, byte for
byte (the regression files and tests/test_fuzz.py rely on it).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from eddytools.joingen import PARTITIONED, TABLES, JoinGeneratorBase, JoinSchema
from eddytools.sqlast import DIALECT, and_, col, num, paren, parse

MAX_RELATIONS = 8


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


class FuzzQueryGenerator(JoinGeneratorBase):
    """Random queries over a ``JoinSchema``, reproducible from ``seed``.  It
    reuses ``JoinGeneratorBase``'s join keys, non-equi predicates,
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
            base = self.rng.choice([*TABLES, PARTITIONED])
            return [base if self.rng.random() < 0.8 else self.rng.choice(TABLES)
                    for _ in range(n)]
        return self._relations(n)

    # -- predicates --------------------------------------------------------
    def _restriction_more(self, alias: str) -> exp.Expr:
        """Restrictions beyond ``JoinGeneratorBase._restriction``: ranges, IN
        lists of text, NOT IN, expressions, IS DISTINCT FROM, float
        specials, and a few that may raise."""
        rng = self.rng

        def own(c: str) -> exp.Column:
            return col(alias, c)

        choice = rng.randrange(12)
        if choice in (9, 10) and rng.random() < 0.6:
            choice = 11
        if choice == 0:
            lo = rng.randint(0, 800)
            return paren(exp.And(this=exp.GTE(this=own("b"), expression=num(lo)),
                                  expression=exp.LT(this=own("b"),
                                                    expression=num(lo + rng.randint(1, 400)))))
        if choice == 1:
            texts = [exp.Literal.string(rng.choice(["k1", "k2", "k3", "k10", "", "k7", "k20"]))
                     for _ in range(rng.randint(1, 5))]
            return exp.In(this=own("kt"), expressions=texts)
        if choice == 2:
            vals: list[exp.Expr] = [num(rng.randint(-50, 50))
                                    for _ in range(rng.randint(1, 4))]
            if rng.random() < 0.2:
                vals.append(exp.Null())
            return exp.Not(this=exp.In(this=own("a"), expressions=vals))
        if choice == 3:
            e = exp.Mod(this=paren(exp.Add(this=exp.Mul(this=own("a"), expression=num(2)),
                                            expression=own("b"))),
                        expression=num(rng.randint(2, 7)))
            return exp.EQ(this=e, expression=num(rng.randint(0, 1)))
        if choice == 4:
            return exp.GT(this=exp.Coalesce(this=own("a"), expressions=[own("sk")]),
                          expression=num(rng.randint(-10, 60)))
        if choice == 5:
            case = exp.Case(ifs=[exp.If(this=exp.GT(this=own("a"), expression=num(0)),
                                        true=own("b"))],
                            default=exp.Neg(this=own("b")))
            return exp.GT(this=case, expression=num(rng.randint(-500, 500)))
        if choice == 6:
            other = rng.choice(["k4", "k8", "sk"])
            return exp.NullSafeNEQ(this=own("k4"), expression=own(other)) \
                if rng.random() < 0.5 else \
                exp.NullSafeEQ(this=own("k4"), expression=num(rng.randint(0, 50)))
        if choice == 7:
            v = rng.choice(["'NaN'", "'-0'", "'Infinity'", "0", "10.5"])
            op = rng.choice([exp.EQ, exp.GT, exp.LT, exp.GTE])
            return op(this=own("kf"), expression=exp.cast(parse(v),
                                                          "float8"))
        if choice == 8:
            return exp.GT(this=exp.Mul(this=own("kn"), expression=num(2)),
                          expression=num(rng.choice(["10", "20.5", "33"])))
        if choice == 9:
            # may raise: division by zero (a is 0 in about 1% of the rows)
            self.features.append("raise")
            return exp.GT(this=exp.Div(this=own("b"), expression=own("a"), typed=True),
                          expression=num(rng.randint(1, 20)))
        if choice == 10:
            # may raise: the square root of a negative number
            self.features.append("raise")
            return exp.LT(this=exp.Sqrt(this=own("a")), expression=num(rng.randint(1, 7)))
        return exp.Is(this=own(rng.choice(["k4", "kn", "kt", "kf", "f"])), expression=exp.Null())

    def _multi(self, aliases: list[str]) -> exp.Expr:
        """A predicate over three or more relations (or a non-equi one over two)."""
        rng = self.rng
        k = min(len(aliases), rng.choice([2, 3, 3, 4]))
        xs = rng.sample(aliases, k)
        choice = rng.randrange(8)
        if choice in (5, 6) and rng.random() < 0.6:
            choice = 7
        if choice == 0:
            total: exp.Expr = col(xs[0], "a")
            for x in xs[1:]:
                total = exp.Add(this=total, expression=col(x, "a"))
            return exp.GT(this=total, expression=num(rng.randint(-30, 30)))
        if choice == 1 and k >= 3:
            return exp.Between(this=col(xs[0], "b"), low=col(xs[1], "b"), high=col(xs[2], "b"))
        if choice == 2:
            return paren(exp.Or(this=exp.LT(this=col(xs[0], "a"), expression=col(xs[1], "a")),
                                 expression=exp.Is(this=col(xs[-1], "s"), expression=exp.Null())))
        if choice == 3 and k >= 3:
            # a hashable equality whose one side spans two relations
            return exp.EQ(this=exp.Coalesce(this=col(xs[0], "k4"), expressions=[col(xs[1], "k8")]),
                          expression=col(xs[2], "k4"))
        if choice == 4 and k >= 3:
            return exp.EQ(this=exp.Add(this=col(xs[0], "k4"), expression=col(xs[1], "sk")),
                          expression=col(xs[2], "k8"))
        if choice == 5:
            # may raise: integer overflow (b <= 1000)
            self.features.append("raise")
            return exp.GT(this=exp.Mul(this=exp.Mul(this=col(xs[0], "b"),
                                                    expression=col(xs[1], "b")),
                                       expression=num(rng.choice([10, 3000]))),
                          expression=num(0))
        if choice == 6 and k >= 3:
            # may raise: division by zero
            self.features.append("raise")
            return exp.LT(this=exp.Div(this=col(xs[0], "b"), typed=True,
                                       expression=paren(exp.Sub(this=col(xs[1], "a"),
                                                                 expression=col(xs[2], "a")))),
                          expression=num(rng.randint(5, 100)))
        return exp.NEQ(this=exp.DPipe(this=col(xs[0], "kt"), expression=col(xs[1], "s")),
                       expression=exp.Literal.string("k1beta1"))

    # -- a join block ------------------------------------------------------
    def _block(self, n: int, prefix: str) -> _Block:
        rng = self.rng
        shape, tree_pairs, extra_pairs = self._shape(n)
        rels = self._relations_for(n, shape)
        aliases = [f"{prefix}{k + 1}" for k in range(n)]
        tree = self._tree(n, rels, aliases, tree_pairs, (0.02, 0.05, 0.13))

        extra: list[exp.Expr] = []
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
            extra += [exp.EQ(this=col(aliases[i], "k4"), expression=col(aliases[j], "k4")),
                      exp.EQ(this=col(aliases[j], "k4"), expression=col(aliases[k], "k8"))]
            if rng.random() < 0.5:
                extra.append(exp.EQ(this=col(aliases[k], "k8"), expression=num(rng.randint(0, 30))))
        restrictions: list[exp.Expr] = []
        for k in range(n):
            for _ in range(rng.choice([0, 0, 0, 1, 1, 2])):
                restrictions.append(self._restriction(aliases[k]) if rng.random() < 0.6
                                    else self._restriction_more(aliases[k]))

        def table(k: int) -> exp.Table:
            return exp.Table(this=exp.to_identifier(rels[k]),
                             alias=exp.TableAlias(this=exp.to_identifier(aliases[k])))

        select = exp.select().from_(table(0))
        where: list[exp.Expr] = []
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
            select = select.where(and_(where), copy=False)
        return _Block(select, aliases, rels, shape)

    # -- outputs -----------------------------------------------------------
    def _out(self, aliases: list[str], kind: str) -> exp.Expr:
        """An output expression: kind "int" (int values), "safe" (int or text:
        display determined by equality) or "any"."""
        rng = self.rng
        x, y = rng.choice(aliases), rng.choice(aliases)
        if kind == "int":
            return rng.choice([
                lambda: col(x, rng.choice(INT_OUT_COLS)),
                lambda: exp.Add(this=col(x, "a"), expression=col(y, "b")),
                lambda: exp.Coalesce(this=col(x, "k4"), expressions=[col(y, "k8")]),
                lambda: exp.Anonymous(this="length", expressions=[col(x, "kt")]),
            ])()
        if kind == "safe" or rng.random() < 0.6:
            return rng.choice([
                lambda: self._out(aliases, "int"),
                lambda: col(x, rng.choice(SAFE_OUT_COLS)),
                lambda: exp.DPipe(this=col(x, "kt"), expression=col(y, "s")),
                lambda: exp.Upper(this=col(x, "s")),
            ])()
        return rng.choice([
            lambda: col(x, rng.choice(["kn", "kf", "f"])),
            lambda: exp.Mul(this=col(x, "kn"), expression=num(2)),
            lambda: exp.Mul(this=col(x, "f"), expression=num(0.5)),
        ])()

    def _aggs(self, aliases: list[str]) -> list[exp.Expr]:
        rng = self.rng
        x, y = rng.choice(aliases), rng.choice(aliases)
        pool = [exp.Count(this=exp.Star()), exp.Sum(this=col(x, "b")),
                exp.Sum(this=col(y, "kn")), exp.Max(this=col(x, "kt")),
                exp.Min(this=col(y, "a")), exp.Count(this=col(x, "k4")),
                exp.Count(this=exp.Distinct(expressions=[col(y, "sk")])),
                exp.Max(this=exp.Add(this=col(x, "b"), expression=col(y, "a")))]
        return rng.sample(pool, rng.randint(1, 3))

    @staticmethod
    def _alias_all(outs: list[exp.Expr]) -> list[exp.Expr]:
        return [exp.alias_(o, f"c{k}") for k, o in enumerate(outs)]

    def _top(self, block: _Block, kind_hint: str | None = None) -> tuple[exp.Select, bool]:
        """A SELECT list (and GROUP BY/HAVING, DISTINCT, ORDER BY/LIMIT) on a
        block; returns (select, ordered by every output)."""
        rng = self.rng
        s, aliases = block.select, block.aliases
        r = rng.random()
        if kind_hint == "int":  # a set-operation branch or an IN subquery
            outs = [self._out(aliases, "int") for _ in range(int(kind_hint == "int"))]
            return s.select(*self._alias_all(outs), copy=False), False
        if r < 0.18:
            self.features.append("count")
            aggs = self._aggs(aliases) if rng.random() < 0.4 else []
            return s.select(*self._alias_all([exp.Count(this=exp.Star()), *aggs]),
                            copy=False), False
        if r < 0.42:
            self.features.append("group")
            keys = [self._out(aliases, "safe") for _ in range(rng.randint(1, 2))]
            aggs = self._aggs(aliases)
            s = s.select(*self._alias_all(keys + aggs), copy=False)
            s = s.group_by(*[num(k + 1) for k in range(len(keys))], copy=False)
            if rng.random() < 0.5:
                self.features.append("having")
                having = rng.choice([
                    lambda: exp.GT(this=exp.Count(this=exp.Star()),
                                   expression=num(rng.randint(1, 4))),
                    lambda: exp.GT(this=exp.Sum(this=col(rng.choice(aliases), "b")),
                                   expression=num(rng.randint(100, 3000))),
                    lambda: exp.Is(this=exp.Min(this=col(rng.choice(aliases), "a")),
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
            return s.select(*self._alias_all(outs), copy=False).distinct(), False
        if r < 0.66:
            self.features.append("limit")
            outs = [self._out(aliases, "safe") for _ in range(rng.randint(1, 4))]
            return self._order_limit(s.select(*self._alias_all(outs), copy=False), len(outs)), True
        outs = [self._out(aliases, "any") for _ in range(rng.randint(1, 5))]
        return s.select(*self._alias_all(outs), copy=False), False

    def _order_limit(self, s: exp.Select, width: int) -> exp.Select:
        rng = self.rng
        s = s.order_by(*[exp.Ordered(this=num(k + 1), desc=rng.random() < 0.3,
                                     nulls_first=rng.random() < 0.5) for k in range(width)],
                       copy=False)
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
            top: exp.Expr = cls(this=left, expression=right,
                                      distinct=not op.endswith("ALL"))
        elif r < 0.12:
            # an IN subquery over a join block
            self.features.append("in-subquery")
            inner, _ = self._top(self._block(rng.choice([2, 3]), "u"), "int")
            s = block.select.where(exp.In(this=col(rng.choice(block.aliases), rng.choice(
                ["k4", "k8", "a"])), query=exp.Subquery(this=inner)))
            top, ordered = self._top(_Block(s, block.aliases, block.rels, block.shape))
        elif r < 0.17:
            # a correlated scalar subquery over a join block, rescanned per key
            self.features.append("correlated")
            inner_block = self._block(rng.choice([2, 3]), "u")
            corr = exp.EQ(this=col(inner_block.aliases[0], "k4"), expression=col("d", "c0"))
            inner = inner_block.select.where(corr, copy=False).select(exp.Count(this=exp.Star()))
            drive = exp.select(exp.alias_(col("x", "k4"), "c0")).distinct().from_(
                exp.Table(this=exp.to_identifier(rng.choice(TABLES)),
                          alias=exp.TableAlias(this=exp.to_identifier("x")))).where(
                exp.LT(this=col("x", "k4"), expression=num(rng.randint(5, 30))))
            top = exp.select(col("d", "c0"), exp.alias_(exp.Subquery(this=inner), "c1")).from_(
                exp.Subquery(this=drive, alias=exp.TableAlias(this=exp.to_identifier("d"))))
        elif r < 0.25:
            # a derived table or CTE around the block, filtered and aggregated
            wrap = rng.choice(["derived", "cte", "cte-materialized"])
            self.features.append(wrap)
            outs = [self._out(block.aliases, "safe") for _ in range(rng.randint(1, 3))]
            inner = block.select.select(*self._alias_all(outs))
            outer_filter = exp.Not(this=exp.Is(this=col("d", "c0"), expression=exp.Null()))
            outer_sel = [col("d", "c0"), exp.alias_(exp.Count(this=exp.Star()), "n")]
            if wrap == "derived":
                top = exp.select(*outer_sel).from_(exp.Subquery(
                    this=inner, alias=exp.TableAlias(this=exp.to_identifier("d")))).where(
                    outer_filter, copy=False).group_by(num(1), copy=False)
            else:
                cte = exp.CTE(this=inner, alias=exp.TableAlias(this=exp.to_identifier("d")),
                              materialized=True if wrap == "cte-materialized" else None)
                top = exp.select(*outer_sel).from_(
                    exp.Table(this=exp.to_identifier("d"))).where(
                    outer_filter, copy=False).group_by(num(1), copy=False)
                top.set("with", exp.With(expressions=[cte]))
        elif r < 0.29:
            # the block in a derived table on the inner side of a LEFT JOIN
            # (the block keeps its eddy; the outer join is PostgreSQL's)
            self.features.append("left-join")
            outs = [self._out(block.aliases, "int")] + [
                self._out(block.aliases, "safe") for _ in range(rng.randint(0, 2))]
            inner = block.select.select(*self._alias_all(outs), copy=False)
            z = exp.Table(this=exp.to_identifier(rng.choice(TABLES)),
                          alias=exp.TableAlias(this=exp.to_identifier("z")))
            sub = exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier("d")))
            on = exp.EQ(this=col("d", "c0"), expression=col("z", rng.choice(["id", "k4"])))
            top = exp.select(*[col("d", f"c{k}") for k in range(len(outs))],
                             exp.alias_(col("z", "b"), "zb")).from_(z)
            top = top.join(sub, on=on, join_type="left", copy=False) if rng.random() < 0.5 \
                else exp.select(*[col("d", f"c{k}") for k in range(len(outs))],
                                exp.alias_(col("z", "b"), "zb")).from_(sub).join(
                    z, on=on, join_type="left", copy=False)
        elif r < 0.32:
            # a correlated [NOT] EXISTS over a join block
            negated = rng.random() < 0.5
            self.features.append("not-exists" if negated else "exists")
            inner_block = self._block(rng.choice([2, 3]), "v")
            corr = exp.EQ(this=col(inner_block.aliases[0], rng.choice(["k4", "id"])),
                          expression=col(rng.choice(block.aliases), rng.choice(["k4", "k8"])))
            inner = inner_block.select.where(corr, copy=False).select(num(1), copy=False)
            cond: exp.Expr = exp.Exists(this=inner)
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
            top = block.select.select(*self._alias_all([*outs, part, rank]), copy=False)
        else:
            top, ordered = self._top(block)
        return FuzzQuery(sql=top.sql(dialect=DIALECT), seed=self.seed, number=self.count,
                         relations=n, shape=block.shape, features=sorted(set(self.features)),
                         ordered=ordered)

