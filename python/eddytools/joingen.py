"""Seeded generators of join queries for differential tests of join eddies,
built as sqlglot trees (dialect postgres), in the style of ``querygen``.

Two parts:

``JoinSchema`` / ``JoinQueryGenerator``
    Random select-project-join queries over a schema made for finding bugs:
    six tables ``r1``..``r6`` of a few hundred rows with the same columns
    (join keys of type int4, int8, numeric with mixed scales, text and float8
    with -0, NaN and infinities; NULLs, duplicates, one column where 30% of
    the rows share a key), a view over a join (``v12``), and a partitioned
    table (``rp``).  Queries join 2-6 relations (self-joins included) along a
    chain, star, cycle or clique, with cross-type and expression equi-joins,
    non-equi join predicates, restrictions of varied shape (comparisons,
    IS NULL, LIKE, OR, NOT, expensive calls), and SELECT lists of columns,
    expressions, count(*), GROUP BY, DISTINCT, or ORDER BY ... LIMIT with a
    total order.  A few use LEFT JOIN (where PostgreSQL keeps its own plan).
    The generator knows the data (the schema generates them in Python), so it
    bounds each query's join size (the product of the key frequencies along
    a spanning tree) and keeps every query small enough to run in
    milliseconds.

``wisconsin_join_ddl`` / ``wisconsin_join_query``
    DeWitt's Wisconsin columns over tables ``t1``..``t6``, joined as a star
    (t1.unique2 = tk.unique2), a path (tk.unique1 = tk+1.unique2) or a cycle
    (the path closed by tn.hundred = t1.hundred).

Everything is reproducible from the seeds; a failing query is reported with
its seed and number.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import psycopg
from psycopg import sql
from sqlglot import exp

from eddytools.sqlast import DIALECT, and_, col, num, paren
from spark_loader import wisconsin

# ---------------------------------------------------------------------------
# The random schema
# ---------------------------------------------------------------------------

# Every relation of the schema has these columns.  kind: the class of values,
# for choosing comparable join keys and for knowing which outputs have a
# display that equality does not determine (numeric 1.5 = 1.50, float
# -0 = 0), which must not be GROUP BY keys or be cut by a LIMIT.
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("id", "int4", "int"),        # unique
    ("k4", "int4", "int"),        # ~3 duplicates per value, 5% NULL
    ("k8", "int8", "int"),        # same domain as k4 (cross-type joins)
    ("sk", "int4", "int"),        # skewed: 30% of rows hold 7
    ("kn", "numeric", "numeric"),  # multiples of 0.5 written with 0-4 decimals
    ("kt", "text", "text"),       # 'k<n>' and '', 5% NULL
    ("kf", "float8", "float"),    # multiples of 0.5, -0, 0, NaN, +-Infinity
    ("a", "int4", "int"),         # -50..50, 5% NULL
    ("b", "int4", "int"),         # 0..1000
    ("s", "text", "text"),        # words with numbers, 10% NULL
    ("f", "float8", "float"),     # 0..100, 5% NULL
)
COLUMN_KIND = {name: kind for name, _, kind in COLUMNS}
SAFE_KINDS = ("int", "text")  # equal values display equally
WORDS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta")
TABLES = ("r1", "r2", "r3", "r4", "r5", "r6")
VIEW = "v12"
PARTITIONED = "rp"
# extra indexes, for index joins (every table has its primary key on id);
# the two-column ones serve composite join keys given in either order
INDEXES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("r1", ("k4",)), ("r2", ("kt",)), ("r3", ("k4",)), ("r3", ("kn",)), ("r4", ("kt",)),
    ("r4", ("kf",)), ("r5", ("k4",)), ("r6", ("k8",)), ("rp", ("k4",)),
    ("r5", ("k8", "k4")), ("r2", ("k4", "kt")), ("r6", ("kt", "k8")))
COMPOSITE_KEYS = (("k4", "k8"), ("k4", "kt"), ("kt", "k8"))


def _norm(value: Any) -> Any:
    """A value under SQL equality: 1.5 = 1.50, -0 = 0, NaN = NaN."""
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        return value + 0.0
    if isinstance(value, Decimal):
        return value.normalize() if value else Decimal(0)
    return value


@dataclass
class Relation:
    name: str
    kind: str  # "table", "view" or "partitioned"
    rows: list[tuple]
    maxfreq: dict[str, int] = field(default_factory=dict)

    def measure(self) -> None:
        for i, (name, _, _) in enumerate(COLUMNS):
            counts = Counter(_norm(r[i]) for r in self.rows if r[i] is not None)
            self.maxfreq[name] = max(counts.values(), default=1)


class JoinSchema:
    """The tables, view and partitioned table of the random generator, with
    their data generated here from ``seed``."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        rng = random.Random(seed)
        self.relations: dict[str, Relation] = {}
        for name in TABLES:
            self.relations[name] = Relation(name, "table", self._rows(rng, rng.randint(150, 450)))
        self.relations[PARTITIONED] = Relation(PARTITIONED, "partitioned",
                                               self._rows(rng, rng.randint(200, 400)))
        self.relations[VIEW] = Relation(VIEW, "view", self._view_rows())
        for rel in self.relations.values():
            rel.measure()

    @staticmethod
    def _rows(rng: random.Random, n: int) -> list[tuple]:
        ids = list(range(1, n + 1))
        rng.shuffle(ids)
        rows = []
        for id_ in ids:
            def maybe(p: float, value: Any) -> Any:
                return None if rng.random() < p else value
            k4 = maybe(0.05, rng.randint(0, n // 3))
            k8 = maybe(0.05, rng.randint(0, n // 3))
            sk = maybe(0.03, 7 if rng.random() < 0.3 else rng.randint(0, n))
            half = Decimal(rng.randint(0, n // 4)) / 2
            scale = rng.randint(1 if half % 1 else 0, 4)
            kn = maybe(0.05, half.quantize(Decimal(1).scaleb(-scale)))
            r = rng.random()
            kt = None if r < 0.05 else "" if r < 0.07 else f"k{rng.randint(0, n // 3)}"
            r = rng.random()
            if r < 0.05:
                kf = None
            elif r < 0.10:
                kf = rng.choice([-0.0, 0.0, math.nan, math.inf, -math.inf])
            else:
                kf = rng.randint(0, n // 5) * 0.5
            a = maybe(0.05, rng.randint(-50, 50))
            b = rng.randint(0, 1000)
            s = maybe(0.10, f"{rng.choice(WORDS)}{rng.randint(0, 99)}")
            f = maybe(0.05, round(rng.random() * 100, 3))
            rows.append((id_, k4, k8, sk, kn, kt, kf, a, b, s, f))
        return rows

    # v12 joins r1.k4 = r2.id; its columns alternate between the two tables
    VIEW_SOURCES = (("r1", "id"), ("r2", "k4"), ("r1", "k8"), ("r2", "sk"), ("r1", "kn"),
                    ("r2", "kt"), ("r1", "kf"), ("r1", "a"), ("r2", "b"), ("r2", "s"),
                    ("r1", "f"))

    def _view_rows(self) -> list[tuple]:
        idx = {c: i for i, (c, _, _) in enumerate(COLUMNS)}
        r2_by_id = {row[idx["id"]]: row for row in self.relations["r2"].rows}
        out = []
        for row1 in self.relations["r1"].rows:
            row2 = r2_by_id.get(row1[idx["k4"]])
            if row2 is None:
                continue
            src = {"r1": row1, "r2": row2}
            out.append(tuple(src[t][idx[c]] for t, c in self.VIEW_SOURCES))
        return out

    def names(self) -> list[str]:
        return list(self.relations)

    def setup(self, conn: psycopg.Connection) -> None:
        """Create and fill every relation of the schema in ``conn``'s database."""
        coldefs = sql.SQL(", ").join(
            sql.SQL("{} {}").format(sql.Identifier(c), sql.SQL(t)) for c, t, _ in COLUMNS)
        for name in TABLES:
            conn.execute(sql.SQL("CREATE TABLE {} ({}, PRIMARY KEY (id))").format(
                sql.Identifier(name), coldefs))
        conn.execute(sql.SQL("CREATE TABLE {} ({}) PARTITION BY RANGE (id)").format(
            sql.Identifier(PARTITIONED), coldefs))
        n = len(self.relations[PARTITIONED].rows)
        conn.execute(f"CREATE TABLE rp_1 PARTITION OF rp FOR VALUES FROM (MINVALUE) TO ({n // 3})")
        conn.execute(f"CREATE TABLE rp_2 PARTITION OF rp "
                     f"FOR VALUES FROM ({n // 3}) TO ({2 * n // 3})")
        conn.execute("CREATE TABLE rp_3 PARTITION OF rp DEFAULT")
        for name, rel in self.relations.items():
            if rel.kind == "view":
                continue
            copy_sql = sql.SQL("COPY {} FROM STDIN").format(sql.Identifier(name))
            with conn.cursor() as cur, cur.copy(copy_sql) as cp:
                for row in rel.rows:
                    cp.write_row(row)
        for table, cols in INDEXES:
            conn.execute(sql.SQL("CREATE INDEX ON {} ({})").format(
                sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, cols))))
        conn.execute(sql.SQL("CREATE VIEW {} AS SELECT {} FROM r1 JOIN r2 ON r1.k4 = r2.id").format(
            sql.Identifier(VIEW),
            sql.SQL(", ").join(sql.SQL("{}.{} AS {}").format(
                sql.Identifier(t), sql.Identifier(c), sql.Identifier(out))
                for (t, c), (out, _, _) in zip(self.VIEW_SOURCES, COLUMNS, strict=True))))
        conn.execute("ANALYZE")


# ---------------------------------------------------------------------------
# The random query generator
# ---------------------------------------------------------------------------

@dataclass
class GeneratedJoinQuery:
    sql: str
    seed: int
    number: int
    relations: list[str]
    shape: str
    outer_join: bool
    ordered: bool  # ORDER BY over every output column: compare as sequences
    bound: int  # upper bound of the join's size before restrictions
    param_values: list[int] = field(default_factory=list)  # $1 values, if parameterized
    scroll: bool = False  # run through a scroll cursor, fetched backwards too

    def describe(self) -> str:
        return (f"JoinQueryGenerator(seed={self.seed}) query #{self.number} "
                f"({self.shape}, {len(self.relations)} relations {self.relations}):\n{self.sql}")


@dataclass
class _Edge:
    i: int
    j: int
    pred: exp.Expr | None  # None: a cross product
    factor_i: int  # join fan-out when i is the child (key frequency), for the bound
    factor_j: int


class JoinGeneratorBase:
    """What the random join generators share (``JoinQueryGenerator`` here and
    the fuzzer's ``FuzzQueryGenerator``): relations and join graphs, join
    keys, non-equi predicates, restrictions, outputs and the size bound,
    drawn from one ``random.Random(seed)``.  Subclasses add ``query()``."""

    BUDGET = 20_000  # largest bound on a query's join size before restrictions

    def __init__(self, seed: int, schema: JoinSchema) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.schema = schema
        self.count = 0

    # -- relations and the join graph ------------------------------------
    def _relations(self, n: int) -> list[str]:
        pool = [*TABLES, VIEW, PARTITIONED]
        weights = [1.0] * len(TABLES) + [0.5, 0.7]
        names: list[str] = []
        for _ in range(n):
            if names and self.rng.random() < 0.12:
                names.append(self.rng.choice(names))  # a self-join
            else:
                names.append(self.rng.choices(pool, weights)[0])
        return names

    def _graph(self, n: int) -> tuple[str, list[tuple[int, int]], list[tuple[int, int]]]:
        """Shape, spanning-tree edges (parent before child in FROM order),
        extra edges."""
        shapes = ["chain", "star"] + (["cycle", "clique"] if n >= 3 else [])
        shape = self.rng.choice(shapes)
        if shape == "star":
            tree = [(0, k) for k in range(1, n)]
        else:
            tree = [(k, k + 1) for k in range(n - 1)]
        extra: list[tuple[int, int]] = []
        if shape == "cycle":
            extra = [(0, n - 1)]
        elif shape == "clique":
            others = [(i, j) for i in range(n) for j in range(i + 2, n)]
            extra = self.rng.sample(others, min(len(others), self.rng.randint(1, 4)))
        return shape, tree, extra

    def _freq(self, rel: str, col: str) -> int:
        return self.schema.relations[rel].maxfreq[col]

    def _equi(self, ai: str, ri: str, aj: str, rj: str) -> tuple[exp.Expr, int, int]:
        """An equi-join predicate between aliases ai and aj, with the key
        frequency of each side."""
        left: exp.Expr
        r = self.rng.random()
        if r < 0.40:
            ci, cj = self.rng.choice(["id", "k4", "k8", "sk"]), \
                self.rng.choice(["id", "k4", "k8", "sk"])
            left, right = col(ai, ci), col(aj, cj)
        elif r < 0.52:
            ci = cj = "kn"
            left, right = col(ai, ci), col(aj, cj)
        elif r < 0.66:
            ci = cj = "kt"
            left, right = col(ai, ci), col(aj, cj)
        elif r < 0.76:
            ci = cj = "kf"
            left, right = col(ai, ci), col(aj, cj)
        elif r < 0.84:
            # int4/int8 = numeric: PostgreSQL casts the integer to numeric
            ci, cj = self.rng.choice(["k4", "k8"]), "kn"
            left, right = col(ai, ci), col(aj, cj)
        elif r < 0.90:
            # int8 = float8: the integer is cast to float8
            ci, cj = "k8", "kf"
            left, right = col(ai, ci), col(aj, cj)
        else:
            # an expression on one side
            choice = self.rng.randrange(3)
            if choice == 0:
                ci, cj = "k4", "k8"
                left = exp.Add(this=col(ai, ci), expression=num(1))
                right = col(aj, cj)
            elif choice == 1:
                ci = cj = "kt"
                left = exp.Anonymous(this="lower", expressions=[col(ai, ci)])
                right = col(aj, cj)
            else:
                ci = cj = "kn"
                left = exp.Mul(this=col(ai, ci), expression=num(2))
                right = col(aj, cj)
        if self.rng.random() < 0.5:
            left, right = right, left
        return exp.EQ(this=left, expression=right), self._freq(ri, ci), self._freq(rj, cj)

    def _theta(self, ai: str, aj: str) -> exp.Expr:
        """A join predicate that is not a hashable equality."""
        x, y = (ai, aj) if self.rng.random() < 0.5 else (aj, ai)
        choice = self.rng.randrange(8)
        if choice == 0:
            return exp.LT(this=col(x, "a"), expression=col(y, "b"))
        if choice == 1:
            return exp.NEQ(this=col(x, "b"), expression=col(y, "b"))
        if choice == 2:
            return exp.GT(this=exp.Add(this=col(x, "a"), expression=col(y, "a")),
                          expression=num(0))
        if choice == 3:
            return exp.LT(this=col(x, "kt"), expression=col(y, "kt"))
        if choice == 4:
            return exp.LTE(this=col(x, "f"), expression=col(y, "f"))
        if choice == 5:
            return paren(exp.Or(this=exp.LT(this=col(x, "a"), expression=col(y, "a")),
                                 expression=exp.Is(this=col(x, "s"), expression=exp.Null())))
        if choice == 6:
            return exp.Not(this=paren(exp.GT(this=col(x, "b"), expression=col(y, "b"))))
        return exp.GTE(this=exp.Anonymous(this="delay", expressions=[col(x, "b"), num(0)]),
                       expression=col(y, "a"))

    def _bound(self, n: int, rels: list[str], tree: list[_Edge]) -> int:
        """Largest possible join size: min over roots of |root| x the key
        frequencies of the children along the tree."""
        adj: dict[int, list[tuple[int, int]]] = {k: [] for k in range(n)}
        for e in tree:
            adj[e.i].append((e.j, e.factor_j))
            adj[e.j].append((e.i, e.factor_i))
        best = None
        for root in range(n):
            size = len(self.schema.relations[rels[root]].rows)
            seen, stack = {root}, [root]
            while stack:
                k = stack.pop()
                for child, factor in adj[k]:
                    if child not in seen:
                        seen.add(child)
                        size *= max(1, factor)
                        stack.append(child)
            best = size if best is None else min(best, size)
        return best or 0

    # -- restrictions ----------------------------------------------------
    def _restriction(self, alias: str) -> exp.Expr:
        rng = self.rng
        r = rng.random()
        c = rng.choice(["a", "b", "k4", "k8", "sk", "s", "kt", "f", "kn", "kf"])
        column = col(alias, c)
        kind = COLUMN_KIND[c]
        if r < 0.30:
            return self._comparison(column, kind)
        if r < 0.40:
            return paren(exp.Or(this=self._comparison(column, kind),
                                 expression=self._comparison(col(alias, "b"), "int")))
        if r < 0.46:
            return exp.Not(this=paren(self._comparison(column, kind)))
        if r < 0.56:
            null = exp.Is(this=column, expression=exp.Null())
            return null if rng.random() < 0.4 else exp.Not(this=null)
        if r < 0.66:
            pattern = rng.choice(["a%", "%ta%", "_e%", "%1", "k1%", "%", "beta_"])
            like = exp.Like(this=col(alias, rng.choice(["s", "kt"])),
                            expression=exp.Literal.string(pattern))
            return like if rng.random() < 0.7 else exp.Not(this=like)
        if r < 0.76:
            f = exp.Anonymous(this="delay", expressions=[col(alias, "b"), num(0)])
            return exp.GTE(this=f, expression=num(rng.randint(0, 900)))
        if r < 0.84:
            f = exp.Anonymous(this="length", expressions=[col(alias, "s")])
            return exp.GT(this=f, expression=num(rng.randint(3, 7)))
        if r < 0.90:
            return exp.Between(this=col(alias, "b"), low=num(rng.randint(0, 500)),
                               high=num(rng.randint(500, 1000)))
        return exp.In(this=col(alias, "a"),
                      expressions=[num(rng.randint(-50, 50)) for _ in range(rng.randint(1, 8))])

    def _comparison(self, col: exp.Expr, kind: str) -> exp.Expr:
        op = self.rng.choice([exp.LT, exp.LTE, exp.GT, exp.GTE, exp.EQ, exp.NEQ])
        if kind == "int":
            value: exp.Expr = num(self.rng.randint(-20, 400))
        elif kind == "text":
            value = exp.Literal.string(self.rng.choice(["k1", "k50", "", "gamma", "m", "beta5"]))
        elif kind == "numeric":
            value = num(self.rng.choice(["0.5", "10", "12.50", "30.25"]))
        else:
            value = num(self.rng.choice([0, 1.5, 10, 50.5]))
        return op(this=col, expression=value)

    # -- outputs ---------------------------------------------------------
    def _output(self, aliases: list[str], safe: bool) -> exp.Expr:
        """A SELECT-list expression; with ``safe``, only ones whose display
        equality determines (int and text)."""
        rng = self.rng
        x, y = rng.choice(aliases), rng.choice(aliases)
        options = [
            lambda: col(x, rng.choice(["id", "k4", "k8", "sk", "kt", "a", "b", "s"])),
            lambda: exp.Add(this=col(x, "a"), expression=col(y, "b")),
            lambda: exp.DPipe(this=col(x, "kt"), expression=col(y, "s")),
            lambda: exp.Upper(this=col(x, "s")),
            lambda: exp.Coalesce(this=col(x, "k4"), expressions=[col(y, "k8")]),
            lambda: exp.Anonymous(this="length", expressions=[col(x, "kt")]),
        ]
        if not safe:
            options += [
                lambda: col(x, rng.choice(["kn", "kf", "f"])),
                lambda: exp.Mul(this=col(x, "kn"), expression=num(2)),
                lambda: exp.Mul(this=col(x, "f"), expression=num(0.5)),
            ]
        return rng.choice(options)()

    # -- the query -------------------------------------------------------
    def _tree(self, n: int, rels: list[str], aliases: list[str],
              tree_pairs: list[tuple[int, int]],
              odds: tuple[float, float, float]) -> list[_Edge]:
        """The join predicates of the spanning tree's edges: a cross product, a
        non-equi join or a composite key with the cumulative odds given, else
        an equi-join.  Drawn again (up to ten times) while the result could
        exceed BUDGET rows; still too large, edges become joins on the unique
        ids, one by one."""
        rng = self.rng
        cross, theta, composite = odds

        def size(k: int) -> int:
            return len(self.schema.relations[rels[k]].rows)

        def make_tree() -> list[_Edge]:
            edges = []
            for i, j in tree_pairs:
                r = rng.random()
                if r < cross:
                    edges.append(_Edge(i, j, None, size(i), size(j)))
                elif r < theta:
                    edges.append(_Edge(i, j, self._theta(aliases[i], aliases[j]),
                                       size(i), size(j)))
                elif r < composite:
                    # a composite key, its columns in either order
                    cols = list(rng.choice(COMPOSITE_KEYS))
                    rng.shuffle(cols)
                    pred = and_([exp.EQ(this=col(aliases[i], c), expression=col(aliases[j], c))
                                 for c in cols])
                    edges.append(_Edge(i, j, pred,
                                       min(self._freq(rels[i], c) for c in cols),
                                       min(self._freq(rels[j], c) for c in cols)))
                else:
                    pred, fi, fj = self._equi(aliases[i], rels[i], aliases[j], rels[j])
                    edges.append(_Edge(i, j, pred, fi, fj))
            return edges

        tree = make_tree()
        for _ in range(10):
            if self._bound(n, rels, tree) <= self.BUDGET:
                break
            tree = make_tree()
        order = list(range(len(tree)))
        rng.shuffle(order)
        for k in order:
            if self._bound(n, rels, tree) <= self.BUDGET:
                break
            e = tree[k]
            tree[k] = _Edge(e.i, e.j, exp.EQ(this=col(aliases[e.i], "id"),
                                             expression=col(aliases[e.j], "id")), 1, 1)
        return tree


class JoinQueryGenerator(JoinGeneratorBase):
    """Random select-project-join queries over a ``JoinSchema``, reproducible
    from ``seed``."""

    def query(self) -> GeneratedJoinQuery:
        rng = self.rng
        self.count += 1
        n = rng.choice([2, 2, 3, 3, 4, 4, 5, 6])
        rels = self._relations(n)
        aliases = [f"t{k + 1}" for k in range(n)]
        shape, tree_pairs, extra_pairs = self._graph(n)

        tree = self._tree(n, rels, aliases, tree_pairs, (0.03, 0.06, 0.16))
        bound = self._bound(n, rels, tree)

        extra: list[exp.Expr] = []
        for i, j in extra_pairs:
            if rng.random() < 0.5:
                extra.append(self._equi(aliases[i], rels[i], aliases[j], rels[j])[0])
            else:
                extra.append(self._theta(aliases[i], aliases[j]))
        restrictions: dict[int, list[exp.Expr]] = {k: [] for k in range(n)}
        for k in range(n):
            if rng.random() < 0.5:
                restrictions[k].append(self._restriction(aliases[k]))
                if rng.random() < 0.3:
                    restrictions[k].append(self._restriction(aliases[k]))
        if n >= 2 and rng.random() < 0.06:
            # a predicate that raises an error unless its guard ran first
            # (PostgreSQL runs the restriction on the scan, before any join)
            i, j = rng.sample(range(n), 2)
            restrictions[i].append(exp.NEQ(this=col(aliases[i], "a"), expression=num(0)))
            extra.append(exp.GT(this=exp.Div(this=col(aliases[j], "b"),
                                             expression=col(aliases[i], "a"), typed=True),
                                expression=num(3)))
        param_values: list[int] = []
        if rng.random() < 0.08:
            k = rng.randrange(n)
            restrictions[k].append(exp.LT(this=col(aliases[k], "b"),
                                          expression=exp.Parameter(this=num(1))))
            param_values = [rng.randint(0, 1000) for _ in range(3)] + [0, 1000]

        # FROM: explicit JOIN ... ON in tree order, or a comma list
        outer = n >= 2 and rng.random() < 0.08
        explicit = outer or rng.random() < 0.5
        outer_child = rng.randrange(1, n) if outer else -1

        def table(k: int) -> exp.Table:
            return exp.Table(this=exp.to_identifier(rels[k]),
                             alias=exp.TableAlias(this=exp.to_identifier(aliases[k])))

        select = exp.select().from_(table(0))
        where: list[exp.Expr] = []
        if explicit:
            # tree edges connect each relation k >= 1 to an earlier one
            by_child = {max(e.i, e.j): e for e in tree}
            for k in range(1, n):
                e = by_child[k]
                on: list[exp.Expr] = [e.pred] if e.pred is not None else [exp.true()]
                if k == outer_child:
                    on += restrictions.pop(k)
                    select = select.join(table(k), on=and_(on), join_type="left")
                else:
                    select = select.join(table(k), on=and_(on))
            if outer:
                # other predicates on the nullable side would make the join inner
                extra = [p for p in extra
                         if aliases[outer_child] not in {c.table for c in p.find_all(exp.Column)}]
        else:
            for k in range(1, n):
                select = select.join(table(k))
            where += [e.pred for e in tree if e.pred is not None]
        where += extra
        for preds in restrictions.values():
            where += preds
        rng.shuffle(where)
        if where:
            select = select.where(and_(where))

        # SELECT list
        r = rng.random()
        ordered = False
        scroll = False
        if r < 0.28:
            select = select.select(exp.Count(this=exp.Star()))
        elif r < 0.43:
            keys = [self._output(aliases, safe=True) for _ in range(rng.randint(1, 2))]
            x, y = rng.choice(aliases), rng.choice(aliases)
            aggs = [exp.Count(this=exp.Star()), exp.Sum(this=col(x, "b")),
                    exp.Sum(this=col(y, "kn")), exp.Max(this=col(x, "kt")),
                    exp.Min(this=col(y, "a"))]
            select = select.select(*keys, *rng.sample(aggs, rng.randint(1, 3)))
            select = select.group_by(*[num(k + 1) for k in range(len(keys))])
        elif r < 0.48:
            outs = [self._output(aliases, safe=True) for _ in range(rng.randint(1, 3))]
            select = select.select(*outs).distinct()
        elif r < 0.63:
            outs = [self._output(aliases, safe=True) for _ in range(rng.randint(1, 4))]
            select = select.select(*outs)
            select = select.order_by(*[
                exp.Ordered(this=num(k + 1), desc=rng.random() < 0.3,
                            nulls_first=rng.random() < 0.5)
                for k in range(len(outs))])
            select = select.limit(rng.randint(1, 40))
            if rng.random() < 0.3:
                select = select.offset(rng.randint(1, 10))
            ordered = True
        else:
            outs = [self._output(aliases, safe=False) for _ in range(rng.randint(1, 5))]
            select = select.select(*outs)
            scroll = not param_values and rng.random() < 0.12
        return GeneratedJoinQuery(
            sql=select.sql(dialect=DIALECT), seed=self.seed, number=self.count,
            relations=rels, shape=shape, outer_join=outer, ordered=ordered, bound=bound,
            param_values=param_values, scroll=scroll)


# ---------------------------------------------------------------------------
# Wisconsin star, path and cycle joins
# ---------------------------------------------------------------------------

WISCONSIN_ROWS = (3000, 2800, 2600, 2400, 2200, 2000)
_WISCONSIN_PRIMES = (7919, 7907, 7901, 7883, 7879, 7877)


def wisconsin_join_ddl(k: int) -> str:
    """SQL creating Wisconsin-like table t<k> (1-6): unique1 a permutation of
    0..rows-1 with a few NULLs, unique2 the row number with a few duplicates,
    two/four/ten/hundred (of the row number), a short string; an index on
    unique2.  The formulas are ``spark_loader.wisconsin``'s."""
    rows = WISCONSIN_ROWS[k - 1]
    unique1 = wisconsin.multiplicative_permutation_sql("g", rows, _WISCONSIN_PRIMES[k - 1])
    items = [
        f"CASE WHEN g % 97 = {k} THEN NULL ELSE {unique1} END AS unique1",
        f"CASE WHEN g % 101 = {k + 3} THEN g - 1 ELSE g END AS unique2",
        *wisconsin.attributes_sql("g", ("two", "four", "ten", "hundred")),
        f"{wisconsin.compact_string_sql('g', 2, 53)} AS stringu1",
    ]
    select = ",\n       ".join(items)
    return f"""
CREATE TABLE t{k} AS
SELECT {select}
FROM generate_series(0, {rows - 1}) g;
CREATE INDEX ON t{k} (unique2);
ANALYZE t{k};
"""


def wisconsin_join_query(shape: str, n: int, variant: str) -> str:
    """A ``shape`` join ("star", "path" or "cycle") of t1..t<n>; ``variant``:
    "count" (count(*)), "project" (columns of every table and an
    expression), or "filtered" (count(*) with restrictions, a two-relation
    predicate and an expensive call)."""
    aliases = [f"t{k}" for k in range(1, n + 1)]
    preds: list[exp.Expr] = []
    if shape == "star":
        preds = [exp.EQ(this=col("t1", "unique2"), expression=col(a, "unique2"))
                 for a in aliases[1:]]
    else:
        preds = [exp.EQ(this=col(aliases[k], "unique1"),
                        expression=col(aliases[k + 1], "unique2")) for k in range(n - 1)]
        if shape == "cycle":
            preds.append(exp.EQ(this=col(aliases[-1], "hundred"),
                                expression=col("t1", "hundred")))
    if variant == "filtered":
        preds += [
            exp.LT(this=col("t1", "ten"), expression=num(7)),
            exp.NEQ(this=col(aliases[-1], "four"), expression=num(1)),
            paren(exp.Or(this=exp.GT(this=col("t2", "hundred"), expression=num(20)),
                          expression=exp.EQ(this=col("t2", "two"), expression=num(0)))),
            exp.GTE(this=exp.Anonymous(this="delay", expressions=[col("t2", "ten"), num(0)]),
                    expression=num(1)),
            exp.LTE(this=col("t1", "two"), expression=col(aliases[-1], "two")),
        ]
    select = exp.select().from_(exp.Table(this=exp.to_identifier("t1")))
    for a in aliases[1:]:
        select = select.join(exp.Table(this=exp.to_identifier(a)))
    select = select.where(and_(preds))
    if variant == "project":
        select = select.select(
            *[col(a, "unique2") for a in aliases],
            col("t1", "stringu1"),
            exp.Add(this=col(aliases[-1], "unique1"), expression=col("t1", "ten")))
    else:
        select = select.select(exp.Count(this=exp.Star()))
    return select.sql(dialect=DIALECT)

