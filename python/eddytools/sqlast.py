"""sqlglot helpers shared by the query generators, the fuzzer's minimiser, the
benchmark and the tests: building expressions, taking them apart, and
checking properties of generated queries.

Everything is in the postgres dialect (``DIALECT``): parse with :func:`parse`
and print with ``tree.sql(dialect=DIALECT)``.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

DIALECT = "postgres"

# the FROM clause's key in a sqlglot Select (renamed in sqlglot 28)
FROM_KEY = "from_" if "from_" in exp.Select.arg_types else "from"


def parse(query: str) -> exp.Expr:
    """Parse one statement in the postgres dialect (used to check generated SQL)."""
    return sqlglot.parse_one(query, read=DIALECT)


# ---------------------------------------------------------------------------
# Building
# ---------------------------------------------------------------------------

def col(alias: str, name: str) -> exp.Column:
    """The column ``alias.name``."""
    return exp.column(name, table=alias)


def num(value: float | str) -> exp.Expr:
    """A numeric literal."""
    return exp.Literal.number(value)


def and_(preds: list[exp.Expr]) -> exp.Expr:
    """The conjunction of ``preds`` (at least one), left-deep, without parentheses."""
    out = preds[0]
    for p in preds[1:]:
        out = exp.And(this=out, expression=p)
    return out


def paren(e: exp.Expr) -> exp.Expr:
    """``e`` in parentheses."""
    return exp.Paren(this=e)


# ---------------------------------------------------------------------------
# Taking apart
# ---------------------------------------------------------------------------

def conjuncts(e: exp.Expr | None) -> list[exp.Expr]:
    """The conjuncts of ``e`` (an AND tree, possibly parenthesized); none for None."""
    if e is None:
        return []
    if isinstance(e, exp.And):
        return conjuncts(e.this) + conjuncts(e.expression)
    if isinstance(e, exp.Paren) and isinstance(e.this, exp.And):
        return conjuncts(e.this)
    return [e]


def aliases_in(e: exp.Expr) -> set[str]:
    """The table aliases (qualifiers) of the columns ``e`` reads."""
    return {c.table for c in e.find_all(exp.Column) if c.table}


def table_alias(t: exp.Expr) -> str:
    """The name a FROM item is referred to by: its alias, else its name."""
    return t.alias_or_name


# ---------------------------------------------------------------------------
# Properties of generated queries
# ---------------------------------------------------------------------------

def orders_by_every_output(select: exp.Select) -> bool:
    """``select`` has an ORDER BY whose positional keys are exactly its
    output columns (1..n), so the order of its rows is determined by them."""
    order = select.args.get("order")
    if not order:
        return False
    keys = {o.this.name for o in order.expressions if isinstance(o.this, exp.Literal)}
    return keys == {str(k + 1) for k in range(len(select.expressions))}


def is_ordered(query: str) -> bool:
    """The top query of ``query`` orders by every output column (by position),
    so its rows compare as a sequence rather than as a multiset."""
    tree = parse(query)
    return isinstance(tree, exp.Select) and orders_by_every_output(tree)


def honest(tree: exp.Expr) -> bool:
    """Every LIMIT/OFFSET in ``tree`` comes with an ORDER BY over every output
    column, so that the rows it keeps are determined."""
    for s in tree.find_all(exp.Select):
        if (s.args.get("limit") or s.args.get("offset")) and not orders_by_every_output(s):
            return False
    return True
