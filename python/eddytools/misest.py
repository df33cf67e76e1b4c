"""The misestimation workload (issue 48): SELECT queries of 3-10 relations over
the snowflake schema of spark_loader.misest, each built to make PostgreSQL's
planner misjudge a cardinality in one (or more) of six ways, generated from a
seed.

    python -m eddytools.misest                 # print the 36 queries of seed 0
    python -m eddytools.misest --seed 7 --count 40

The kinds (docs/robustness/README.md says why each one misleads the planner):

  correlated  predicates on columns that agree (a city and its state, a
              = b, age and income band, brand and category, month and
              quarter), or a join on two keys that agree (a return's sale
              and the sale's customer): the planner multiplies
              selectivities as if the columns were independent
  skew        Zipf-skewed foreign keys filtered to their hot values through
              a dimension (promotion 0, the hottest customers): the planner
              spreads the fact rows evenly over the keys
  opaque      predicates through PL/pgSQL functions (FUNCTIONS): the planner
              cannot see through them and uses its default selectivities
  expression  joins on expressions (``p.brand_id / 10``, ``c.city_id %
              50``): no statistics for the expression, a default of 200
              distinct values
  many        star and snowflake joins of 7-10 relations: errors compound
              over many joins
  stale       the runner's copies ms_sales_st and ms_customer_st, analyzed
              and then changed (STALE_SQL): the statistics describe data
              that is no longer there

Every query is an aggregate (count and a sum), so its answer is one row.
The generator is a pure function of (seed, count): generate(0) is the list
committed in docs/robustness/queries.sql.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from spark_loader import misest as data

TABLES_LOADED = data.TABLES          # the tables the Spark loader makes

KINDS = ("correlated", "skew", "opaque", "expression", "many", "stale")
DEFAULT_COUNT = 36

# PL/pgSQL functions the planner cannot see through (they are never
# inlined, and have no support function): IMMUTABLE, as they read their
# arguments only.  Their true selectivities on uniform integers are given
# beside them; the planner takes 1/3 for "f(x) < c" and for a boolean
# function (function_selectivity's default).
FUNCTIONS_SQL = """
CREATE OR REPLACE FUNCTION ms_pct(x integer) RETURNS integer
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ BEGIN RETURN (x * 37 + 11) % 100; END $$;
CREATE OR REPLACE FUNCTION ms_rare(x integer) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ BEGIN RETURN x % 500 = 7; END $$;
CREATE OR REPLACE FUNCTION ms_common(x integer) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ BEGIN RETURN x % 10 <> 3; END $$;
"""
FUNCTIONS = ("ms_pct", "ms_rare", "ms_common")

# The stale copies: created, ANALYZEd, then changed, with autovacuum off
# so that nothing re-analyzes them before the queries run.  A VACUUM (not
# ANALYZE) at the end removes the dead rows and refreshes the row counts
# in pg_class, as autovacuum's vacuum would; the column statistics
# (pg_statistic) stay those of the data before the change:
#  - ms_sales_st: half the sales (even sale_id) move to dates 2000..2999,
#    where ANALYZE saw none: "date_id >= 2000" is estimated at about one
#    row and returns half the table
#  - ms_customer_st: 70% of the customers move to segment 10, a value
#    ANALYZE did not see (segments were 0..9): "segment = 10" is estimated
#    at about one row
STALE_TABLES = ("ms_sales_st", "ms_customer_st")
STALE_SQL = (
    "DROP TABLE IF EXISTS ms_sales_st, ms_customer_st",
    "CREATE TABLE ms_sales_st WITH (autovacuum_enabled = false) AS SELECT * FROM ms_sales",
    "CREATE TABLE ms_customer_st WITH (autovacuum_enabled = false) "
    "AS SELECT * FROM ms_customer",
    "ALTER TABLE ms_sales_st ADD PRIMARY KEY (sale_id)",
    "ALTER TABLE ms_customer_st ADD PRIMARY KEY (cust_id)",
    "CREATE INDEX ON ms_sales_st (cust_id)",
    "ANALYZE ms_sales_st",
    "ANALYZE ms_customer_st",
    "UPDATE ms_sales_st SET date_id = 2000 + date_id % 1000 WHERE sale_id % 2 = 0",
    "UPDATE ms_customer_st SET segment = 10 WHERE cust_id % 10 < 7",
    "VACUUM ms_sales_st",
    "VACUUM ms_customer_st",
)


SELECT_LIST = "SELECT count(*) AS n, sum(s.qty) AS qty"


@dataclass(frozen=True)
class Edge:
    """A join clause of a query: the relation it joined, its tables'
    aliases (that one first, then those the clause needs) and its text."""
    aliases: tuple[str, ...]
    on: str


@dataclass(frozen=True)
class Query:
    """One query of the workload: its name (m01 ..), the kinds it
    exercises (the first is the one it was built for), its relations and
    its SQL; and for forced join orders, its tables by alias, its join
    clauses and its WHERE conjuncts."""
    name: str
    kinds: tuple[str, ...]
    relations: int
    sql: str
    tables: tuple[tuple[str, str], ...] = ()
    edges: tuple[Edge, ...] = ()
    where: tuple[str, ...] = ()

    def forced_sql(self, order: tuple[str, ...]) -> str:
        """The query with its relations joined in ``order`` (explicit JOINs
        left to right, each ON the clauses that the relation completes):
        under join_collapse_limit = 1, PostgreSQL joins them in that order."""
        tables = dict(self.tables)
        done = {order[0]}
        lines = [SELECT_LIST, f"FROM {tables[order[0]]} {order[0]}"]
        for alias in order[1:]:
            done.add(alias)
            ons = [e.on for e in self.edges
                   if alias in e.aliases and set(e.aliases) <= done]
            if not ons:
                raise ValueError(f"{self.name}: {alias} joins nothing of {sorted(done)}")
            lines.append(f"  JOIN {tables[alias]} {alias} ON " + " AND ".join(ons))
        if self.where:
            lines.append("WHERE " + "\n  AND ".join(self.where))
        return "\n".join(lines)

    def random_orders(self, n: int, seed: int = 0) -> list[tuple[str, ...]]:
        """``n`` join orders drawn from ``seed``, each starting from a random
        relation and adding at random one that a join clause connects to
        those before it (no cross products), distinct where the query has
        that many."""
        rng = random.Random(f"orders/{self.name}/{seed}")
        aliases = [a for a, _ in self.tables]
        out: list[tuple[str, ...]] = []
        for _ in range(50 * n):
            order = [rng.choice(aliases)]
            while len(order) < len(aliases):
                have = set(order)
                nxt = sorted({a for e in self.edges for a in e.aliases
                              if a not in have and set(e.aliases) - {a} <= have})
                order.append(rng.choice(nxt))
            if tuple(order) not in out:
                out.append(tuple(order))
            if len(out) == n:
                break
        return out


# ----------------------------------------------------------------------- the joins

@dataclass(frozen=True)
class Join:
    """A relation the FROM clause may join: its table, the ON clause, and
    the aliases the clause needs."""
    table: str
    on: str
    needs: tuple[str, ...] = ()


JOINS: dict[str, Join] = {
    "c": Join("ms_customer", "c.cust_id = s.cust_id", ("s",)),
    "p": Join("ms_product", "p.prod_id = s.prod_id", ("s",)),
    "cat": Join("ms_category", "cat.category_id = p.category_id", ("p",)),
    "dp": Join("ms_dept", "dp.dept_id = cat.dept_id", ("cat",)),
    "d": Join("ms_date", "d.date_id = s.date_id", ("s",)),
    "st": Join("ms_store", "st.store_id = s.store_id", ("s",)),
    "ci": Join("ms_city", "ci.city_id = c.city_id", ("c",)),
    "sta": Join("ms_state", "sta.state_id = ci.state_id", ("ci",)),
    "pr": Join("ms_promo", "pr.promo_id = s.promo_id", ("s",)),
    "sh": Join("ms_ship", "sh.ship_id = s.ship_id", ("s",)),
    "r": Join("ms_returns", "r.sale_id = s.sale_id", ("s",)),
    "rs": Join("ms_reason", "rs.reason_id = r.reason_id", ("r",)),
}
# mild predicates on dimensions, to give the extra relations something to do
MILD: dict[str, list[str]] = {
    "c": ["c.age < {n}"],
    "p": ["p.weight <= {n}"],
    "cat": ["cat.dept_id <> {k}"],
    "dp": ["dp.kind <> {k}"],
    "d": ["d.dow < 6", "d.holiday = 0"],
    "st": ["st.size > {k}"],
    "ci": ["ci.population > {p}"],
    "sta": ["sta.region <> {k}"],
    "pr": ["pr.kind <> {k}"],
    "sh": ["sh.speed < 4"],
    "r": ["r.amount > {k}"],
    "rs": ["rs.grp <> {k}"],
}


@dataclass
class Builder:
    """A query under construction: relations joined (alias to ON clause),
    predicates, kinds."""
    rng: random.Random
    sales: str = "ms_sales"
    customers: str = "ms_customer"
    joins: dict[str, str] = field(default_factory=dict)
    needs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    where: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)

    def need(self, alias: str, on: str | None = None, needs: tuple[str, ...] = ()) -> None:
        """Join ``alias`` (and what its ON clause needs, first), with
        ``on`` in place of its usual clause if given (``needs``: the
        aliases that one needs); a relation already joined keeps its
        clause."""
        if alias == "s" or alias in self.joins:
            return
        j = JOINS[alias]
        for a in (needs if on is not None else j.needs):
            self.need(a)
        self.joins[alias] = on or j.on
        self.needs[alias] = needs if on is not None else j.needs

    def kind(self, k: str) -> None:
        if k not in self.kinds:
            self.kinds.append(k)

    def table(self, alias: str) -> str:
        t = JOINS[alias].table
        return self.customers if t == "ms_customer" else t

    def sql(self) -> str:
        lines = [SELECT_LIST, f"FROM {self.sales} s"]
        lines += [f"  JOIN {self.table(a)} {a} ON {on}" for a, on in self.joins.items()]
        if self.where:
            lines.append("WHERE " + "\n  AND ".join(self.where))
        return "\n".join(lines)


# ----------------------------------------------------------------------- the features

def correlated(b: Builder) -> None:
    r = b.rng
    choice = r.randrange(6)
    if choice == 0:
        city = r.choice((0, 1919, 1838))   # the hottest cities
        b.need("c")
        b.where += [f"c.city_id = {city}", f"c.state_id = {city % 50}"]
    elif choice == 1:
        v = r.randrange(100)
        b.where += [f"s.a = {v}", f"s.b = {v}"]
    elif choice == 2:
        band = r.randrange(2, 8)
        b.need("c")
        b.where += [f"c.age BETWEEN {band * 10} AND {band * 10 + 9}",
                    f"c.income_band = {band}", "c.a = c.b"]
    elif choice == 3:
        cat = r.randrange(200)
        b.need("p")
        b.where += [f"p.brand_id BETWEEN {cat * 10} AND {cat * 10 + 9}",
                    f"p.category_id = {cat}"]
    elif choice == 4:
        q = r.randrange(1, 5)
        b.need("d")
        months = ", ".join(str(m) for m in range(3 * q - 2, 3 * q + 1))
        b.where += [f"d.month IN ({months})", f"d.quarter = {q}"]
    else:
        b.need("r", "r.sale_id = s.sale_id AND r.cust_id = s.cust_id AND r.prod_id = s.prod_id")
    b.kind("correlated")


def skew(b: Builder) -> None:
    r = b.rng
    choice = r.randrange(4)
    if choice == 0:
        b.need("pr")
        b.where.append("pr.pct = 0")            # promotion 0: the hottest key
    elif choice == 1:
        b.need("c")
        b.where.append("c.cust_id % 7919 = 0")  # the 8 hottest customers
    elif choice == 2:
        b.need("p")
        b.where.append("p.prod_id % 7919 = 0")  # the 3 hottest products
    else:
        b.need("rs")
        b.where.append("rs.reason_id IN (0, 39, 38)")   # the 3 hottest reasons
    b.kind("skew")


def opaque(b: Builder) -> None:
    r = b.rng
    choice = r.randrange(5)
    if choice == 0:
        b.where.append(f"ms_pct(s.code) < {r.choice((1, 2, 5))}")
    elif choice == 1:
        b.need("c")
        b.where.append("ms_rare(c.cust_id)")
    elif choice == 2:
        b.need("p")
        b.where += ["ms_common(p.prod_id)", f"ms_pct(p.prod_id) < {r.choice((2, 4))}"]
    elif choice == 3:
        b.need("d")
        b.where.append(f"ms_pct(d.date_id) >= {r.choice((90, 95))}")
    else:
        b.where += ["ms_rare(s.code)", "ms_common(s.store_id)"]
    b.kind("opaque")


def expression(b: Builder) -> None:
    r = b.rng
    choice = r.randrange(5)
    if choice == 0:
        b.need("cat", "cat.category_id = p.brand_id / 10", ("p",))
        b.where.append(f"cat.dept_id = {r.randrange(20)}")
    elif choice == 1:
        b.need("sta", "sta.state_id = c.city_id % 50", ("c",))
        b.where.append(f"sta.region = {r.randrange(5)}")
    elif choice == 2:
        b.need("sta", "sta.state_id = st.city_id % 50", ("st",))
        b.need("c")
        b.where.append("c.state_id = st.city_id % 50")   # customers of the store's state
    elif choice == 3:
        b.need("dp", "dp.dept_id = cat.category_id % 20", ("cat",))
        b.where.append(f"dp.kind = {r.randrange(4)}")
    else:
        b.need("rs", "rs.reason_id = r.reason_id + 0", ("r",))
        b.need("d", "d.date_id = r.date_id - r.ret_id % 60", ("r",))
        b.where.append(f"rs.grp = {r.randrange(8)}")
    b.kind("expression")


def many(b: Builder) -> None:
    # a star and a snowflake of 7-10 relations in all; filled in by generate
    b.kind("many")


def stale(b: Builder) -> None:
    r = b.rng
    choice = r.randrange(3)
    if choice in (0, 2):
        b.sales = "ms_sales_st"
        b.where.append(f"s.date_id >= {r.choice((2000, 2200, 2500))}")
    if choice in (1, 2):
        b.customers = "ms_customer_st"
        b.need("c")
        b.where.append("c.segment = 10")
    b.kind("stale")


FEATURES: dict[str, Callable[[Builder], None]] = {
    "correlated": correlated, "skew": skew, "opaque": opaque, "expression": expression,
    "many": many, "stale": stale,
}


def mild(b: Builder, alias: str) -> None:
    r = b.rng
    text = r.choice(MILD[alias])
    b.where.append(text.format(n=r.choice((40, 60, 80)), k=r.randrange(4),
                               p=r.choice((10_000, 100_000, 500_000))))


def generate(seed: int = 0, count: int = DEFAULT_COUNT) -> list[Query]:
    """``count`` queries from ``seed``: query i is built for kind i mod 6,
    may get a second kind (two in five), and joins extra dimensions up to
    3-6 relations (7-10 for ``many``)."""
    out = []
    aliases = list(JOINS)
    for i in range(count):
        rng = random.Random(f"misest/{seed}/{i}")
        b = Builder(rng)
        primary = KINDS[i % len(KINDS)]
        FEATURES[primary](b)
        if rng.random() < 0.4:
            FEATURES[rng.choice([k for k in KINDS if k not in (primary, "many")])](b)
        target = rng.randint(7, 10) if primary == "many" else rng.randint(3, 6)
        while 1 + len(b.joins) < target:
            alias = rng.choice(aliases)
            if alias in b.joins:
                continue
            before = len(b.joins)
            b.need(alias)
            if 1 + len(b.joins) > 10:          # a chain overshot: take it back
                for a in list(b.joins)[before:]:
                    del b.joins[a], b.needs[a]
                continue
            if rng.random() < 0.5:
                mild(b, alias)
        if 1 + len(b.joins) >= 7:
            b.kind("many")
        out.append(Query(
            f"m{i + 1:02d}", tuple(b.kinds), 1 + len(b.joins), b.sql(),
            tables=(("s", b.sales), *((a, b.table(a)) for a in b.joins)),
            edges=tuple(Edge((a, *b.needs[a]), on) for a, on in b.joins.items()),
            where=tuple(b.where)))
    return out


def listing(queries: list[Query]) -> str:
    """The queries as an SQL file, each preceded by a comment with its name,
    kinds and relation count."""
    return "".join(f"-- {q.name}: {', '.join(q.kinds)}; {q.relations} relations\n{q.sql};\n\n"
                   for q in queries)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eddytools.misest",
                                 description="print the misestimation workload's queries")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=DEFAULT_COUNT)
    args = ap.parse_args(argv)
    sys.stdout.write(listing(generate(args.seed, args.count)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
