"""The fuzzer's minimiser: reduces a failing query over its sqlglot tree to a
smaller one that still fails (``minimise``, against any predicate), and a
failure found by the runner to a regression file that tests/test_fuzz.py
replays (``minimise_failure``, ``save_regression``).

Every candidate keeps LIMIT honest (``sqlast.honest``): a LIMIT or OFFSET is
kept only with an ORDER BY over every output column.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from sqlglot import exp

from eddytools.fuzz.runner import Differ, Failure
from eddytools.sqlast import (
    DIALECT,
    FROM_KEY,
    aliases_in,
    and_,
    conjuncts,
    honest,
    is_ordered,
    parse,
    table_alias,
)


def candidates(sql_text: str) -> list[str]:
    """Smaller variants of a query, largest reductions first: a sub-block on
    its own, clauses dropped, explicit joins as a comma list, a relation
    dropped with everything that names it, WHERE and ON conjuncts and output
    columns dropped, predicates simplified."""
    tree = parse(sql_text)
    out: list[str] = []

    def emit(t: exp.Expr) -> None:
        if honest(t):
            out.append(t.sql(dialect=DIALECT))

    # 1. a sub-block on its own (the branch of a set operation, a derived
    #    table, a CTE, an IN subquery)
    for node in tree.find_all(exp.Select, exp.Union):
        if node is not tree:
            emit(node.copy())
    selects = list(tree.find_all(exp.Select))
    for si, _ in enumerate(selects):
        def fresh(si: int = si) -> tuple[exp.Expr, exp.Select]:
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
                    ons += conjuncts(j.args["on"])
                    j.set("on", None)
            ons += conjuncts(s2.args["where"].this) if s2.args.get("where") else []
            s2.set("where", exp.Where(this=and_(ons)) if ons else None)
            emit(t)
        # 4. drop a relation with every predicate and output that names it
        from_ = s.args.get(FROM_KEY)
        if from_ is not None and joins:
            names = [table_alias(from_.this)] + [table_alias(j.this) for j in joins]
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
                        kept = [c for c in conjuncts(j.args["on"]) if name not in aliases_in(c)]
                        j.set("on", and_(kept) if kept else exp.true())
                if s2.args.get("where"):
                    kept = [c for c in conjuncts(s2.args["where"].this)
                            if name not in aliases_in(c)]
                    s2.set("where", exp.Where(this=and_(kept)) if kept else None)
                items = [e for e in s2.expressions if name not in aliases_in(e)]
                if len(items) != len(s2.expressions):
                    if s2.args.get("group") or s2.args.get("order"):
                        ok = False
                    items = items or [exp.alias_(exp.Count(this=exp.Star()), "c0")]
                    s2.set("expressions", items)
                if s2.args.get("having") and name in aliases_in(s2.args["having"]):
                    s2.set("having", None)
                if ok:
                    emit(t)
        # 5. drop WHERE conjuncts: halves, then one at a time
        where = conjuncts(s.args["where"].this) if s.args.get("where") else []
        chunks = []
        if len(where) > 3:
            h = len(where) // 2
            chunks += [range(0, h), range(h, len(where))]
        chunks += [range(k, k + 1) for k in range(len(where))]
        for ch in chunks:
            t, s2 = fresh()
            kept = [c for k, c in enumerate(conjuncts(s2.args["where"].this)) if k not in ch]
            s2.set("where", exp.Where(this=and_(kept)) if kept else None)
            emit(t)
        # 6. drop ON conjuncts
        for ji, j in enumerate(joins):
            on = conjuncts(j.args.get("on")) if j.args.get("on") else []
            for k in range(len(on)):
                if len(on) == 1 and isinstance(on[0], exp.Boolean):
                    continue
                t, s2 = fresh()
                j2 = s2.args["joins"][ji]
                kept = [c for m, c in enumerate(conjuncts(j2.args["on"])) if m != k]
                j2.set("on", and_(kept) if kept else exp.true())
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
                target = list(t.find_all(kind))[k]
                if target.args.get(arm) is not None:
                    target.replace(target.args[arm])
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
        for cand in candidates(current):
            if tests >= max_tests:
                break
            tests += 1
            try:
                fails = still_fails(cand)
            except Exception as e:
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
    _verdict, detail, _ = differ.check(reduced, fail.settings, is_ordered(reduced))
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
