"""Seeded generators of test queries, built as sqlglot trees (dialect postgres).

``SelectionQueryGenerator`` makes single-table queries with 2-6 conjunctive
predicates of varied shape (comparisons, OR, NOT, IS NULL, LIKE, BETWEEN, IN,
functions, volatile calls) over the Wisconsin-like table that
``wisconsin_like_ddl`` creates.  Every conjunct reads a different column (or
none, for a volatile call), so PostgreSQL keeps them all as separate
restriction clauses and an eddy is expected whenever there are two or more.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from sqlglot import exp

from eddytools.sqlast import DIALECT
from spark_loader import wisconsin


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # "int", "text" or "float"
    low: int = 0
    high: int = 0
    nullable: bool = False


# The table ``wisconsin_like_ddl`` creates: DeWitt's columns plus NULL-heavy,
# text and float columns.
WISCONSIN_COLUMNS: tuple[Column, ...] = (
    Column("unique1", "int", 0, 19999),
    Column("unique2", "int", 0, 19999),
    Column("two", "int", 0, 1),
    Column("four", "int", 0, 3),
    Column("ten", "int", 0, 9),
    Column("twenty", "int", 0, 19),
    Column("hundred", "int", 0, 99),
    Column("onepercent_n", "int", 0, 99, nullable=True),
    Column("tenpercent_n", "int", 0, 9, nullable=True),
    Column("evenonepercent", "int", 0, 198),
    Column("stringu1", "text"),
    Column("string4", "text"),
    Column("note_n", "text", nullable=True),
    Column("ratio", "float", 0, 1, nullable=True),
)


def wisconsin_like_ddl(table: str, rows: int) -> str:
    """SQL creating a deterministic Wisconsin-like table of ``rows`` rows:
    ``spark_loader.wisconsin``'s formulas, the attributes derived from the
    row number (unique2), plus NULL-heavy, text and float columns."""
    items = [
        f"{wisconsin.multiplicative_permutation_sql('g', rows)} AS unique1",
        "g AS unique2",
        *wisconsin.attributes_sql("g", ("two", "four", "ten", "twenty", "hundred")),
        "CASE WHEN g % 2 = 0 THEN NULL ELSE (g * 31) % 100 END AS onepercent_n",
        "CASE WHEN g % 3 = 0 THEN NULL ELSE (g * 17) % 10 END AS tenpercent_n",
        *wisconsin.attributes_sql("g", ("evenonepercent",)),
        f"{wisconsin.compact_string_sql('g', 4, 97)} AS stringu1",
        f"{wisconsin.string4_sql('g', 4)} AS string4",
        "CASE WHEN g % 4 = 1 THEN NULL ELSE 'n' || (g % 13)::text END AS note_n",
        """CASE WHEN g % 5 = 0 THEN NULL
            WHEN g % 97 = 0 THEN 'NaN'::float8
            WHEN g % 89 = 0 THEN '-0'::float8
            ELSE ((g * 13) % 1000) / 1000.0 END AS ratio""",
    ]
    select = ",\n       ".join(items)
    return f"""
CREATE TABLE {table} AS
SELECT {select}
FROM generate_series(0, {rows - 1}) g;
ALTER TABLE {table} ADD PRIMARY KEY (unique2);
ANALYZE {table};
"""


@dataclass
class GeneratedQuery:
    sql: str
    conjuncts: int


class SelectionQueryGenerator:
    """Single-table queries with 2-6 predicates, reproducible from a seed."""

    def __init__(self, seed: int, table: str = "wisc",
                 columns: tuple[Column, ...] = WISCONSIN_COLUMNS) -> None:
        self.rng = random.Random(seed)
        self.table = table
        self.columns = columns

    # -- leaves ---------------------------------------------------------
    def _col(self, c: Column) -> exp.Column:
        return exp.column(c.name)

    def _int_value(self, c: Column) -> exp.Expr:
        span = c.high - c.low
        return exp.Literal.number(self.rng.randint(c.low - 1, c.high + max(1, span // 10)))

    def _comparison(self, c: Column) -> exp.Expr:
        ops = [exp.LT, exp.LTE, exp.GT, exp.GTE, exp.EQ, exp.NEQ]
        op = self.rng.choice(ops)
        if c.kind == "int":
            return op(this=self._col(c), expression=self._int_value(c))
        if c.kind == "float":
            return op(this=self._col(c),
                      expression=exp.Literal.number(round(self.rng.random(), 2)))
        return op(this=self._col(c), expression=exp.Literal.string(
            self.rng.choice(["AAAA", "HHHH", "M", "n5", "Qxxxx", "n12", ""])))

    def _predicate(self, c: Column) -> exp.Expr:
        r = self.rng.random()
        col = self._col(c)
        if r < 0.30:
            return self._comparison(c)
        if r < 0.40:
            return exp.Paren(this=exp.Or(this=exp.Paren(this=self._comparison(c)),
                                         expression=exp.Paren(this=self._comparison(c))))
        if r < 0.48:
            return exp.Not(this=exp.Paren(this=self._comparison(c)))
        if r < 0.56:
            null = exp.Is(this=col, expression=exp.Null())
            return null if self.rng.random() < 0.5 else exp.Not(this=null)
        if r < 0.66 and c.kind == "text":
            pattern = self.rng.choice(["A%", "%x%", "_B%", "n1%", "%4", "HHHH", "%"])
            like = (exp.Like if self.rng.random() < 0.7 else exp.ILike)(
                this=col, expression=exp.Literal.string(pattern))
            return like if self.rng.random() < 0.7 else exp.Not(this=like)
        if r < 0.74 and c.kind == "int":
            lo = self.rng.randint(c.low, c.high)
            hi = lo + self.rng.randint(0, max(1, (c.high - c.low) // 3))
            return exp.Between(this=col, low=exp.Literal.number(lo),
                               high=exp.Literal.number(hi))
        if r < 0.80 and c.kind == "int":
            values = [self._int_value(c) for _ in range(self.rng.randint(1, 4))]
            return exp.In(this=col, expressions=values)
        if r < 0.92:
            return self._function_predicate(c)
        return self._comparison(c)

    def _function_predicate(self, c: Column) -> exp.Expr:
        f: exp.Expr
        col = self._col(c)
        if c.kind == "int":
            choice = self.rng.randrange(4)
            if choice == 0:
                f = exp.Anonymous(this="abs", expressions=[
                    exp.Sub(this=col, expression=exp.Literal.number(c.high // 2))])
                return exp.LT(this=f, expression=self._int_value(c))
            if choice == 1:
                f = exp.Anonymous(this="mod", expressions=[col, exp.Literal.number(3)])
                return exp.EQ(this=f, expression=exp.Literal.number(self.rng.randint(0, 2)))
            if choice == 2:
                f = exp.Coalesce(this=col, expressions=[exp.Literal.number(-1)])
                return exp.GT(this=f, expression=self._int_value(c))
            # expensive: delay() with no wait
            f = exp.Anonymous(this="delay", expressions=[col, exp.Literal.number(0)])
            return exp.GTE(this=f, expression=self._int_value(c))
        if c.kind == "text":
            choice = self.rng.randrange(3)
            if choice == 0:
                f = exp.Anonymous(this="length", expressions=[col])
                return exp.GT(this=f, expression=exp.Literal.number(self.rng.randint(2, 7)))
            if choice == 1:
                f = exp.Anonymous(this="lower", expressions=[col])
                return exp.GTE(this=f, expression=exp.Literal.string(
                    self.rng.choice(["a", "m", "n3", "z"])))
            f = exp.Anonymous(this="upper", expressions=[col])
            return exp.Like(this=f, expression=exp.Literal.string("%X%"))
        f = exp.Anonymous(this="round", expressions=[
            exp.Cast(this=col, to=exp.DataType.build("numeric")), exp.Literal.number(1)])
        return exp.GTE(this=f, expression=exp.Literal.number(round(self.rng.random(), 1)))

    def _volatile(self) -> exp.Expr:
        if self.rng.random() < 0.5:
            return exp.GTE(this=exp.Anonymous(this="random", expressions=[]),
                           expression=exp.Literal.number(0))
        return exp.LT(this=exp.Anonymous(this="random", expressions=[]),
                      expression=exp.Literal.number(2))

    # -- queries --------------------------------------------------------
    def query(self) -> GeneratedQuery:
        n = self.rng.randint(2, 6)
        cols = self.rng.sample(list(self.columns), n)
        conjuncts: list[exp.Expr] = []
        for c in cols:
            if self.rng.random() < 0.06:
                conjuncts.append(self._volatile())
            else:
                conjuncts.append(self._predicate(c))
        where = conjuncts[0]
        for p in conjuncts[1:]:
            where = exp.And(this=where, expression=p)

        shape = self.rng.random()
        select = exp.select().from_(self.table).where(where)
        if shape < 0.3:
            select = select.select(exp.Count(this=exp.Star()))
        elif shape < 0.45:
            select = select.select(
                exp.column("four"),
                exp.Count(this=exp.Star()),
                exp.Sum(this=exp.column("unique1"))).group_by(exp.column("four"))
        else:
            outs = self.rng.sample([c.name for c in self.columns], self.rng.randint(1, 4))
            select = select.select(*[exp.column(o) for o in outs])
            if self.rng.random() < 0.2:
                select = select.order_by(exp.column("unique2")).limit(
                    self.rng.randint(1, 50))
                select = select.select(exp.column("unique2"))
        return GeneratedQuery(sql=select.sql(dialect=DIALECT), conjuncts=n)

