"""The fuzzer's runner: runs a query with the eddy off and on (``Differ``) in
one database and compares the outcomes.

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
  relation once a join below it came out empty; or when PostgreSQL raises it
  joining just the relations of the predicate that raised it, under the
  conjuncts over them (``clause_probes``): a plan that joins those first
  raises it, and which of two rows' errors a query raises is the plan's;
  or when PostgreSQL raises it joining two relations of such a predicate in
  a nested loop, either one outside (``nested_loop_probes``);
  or when PostgreSQL raises it scanning one base relation under the Filter
  its full-scan plan gives that relation (``Differ.scan_probes``: the
  relations of a view too, which ``relation_probes`` cannot see);
- both raise data errors (SQLSTATE class 22) with different codes, and
  PostgreSQL raises the eddy's once the conjuncts that raise PostgreSQL's
  own error by themselves are left out of a relation or clause probe
  (``Differ.unraising_probes``): *plan-dependent*.  The query's rows raise
  both errors, and which one a plan meets first is the order in which it
  reads rows and evaluates conjuncts, which SQL leaves open (found by the
  fuzzer, schema seed 4244014: ``u1.b / (u2.a - u3.a) < 27 AND SQRT(u1.a) <
  4``; PostgreSQL's scan of u1 meets a negative a first, the eddy, reading
  its sources interleaved, joins a u1 row whose a is positive with a u2
  and a u3 whose a are equal first).  Only conjuncts that raise are left
  out, never a guard that does not, so a predicate run before its guard is
  still caught;
- the eddy runs past the statement timeout and PostgreSQL does not: a
  failure, unless PostgreSQL, run again under the same core settings as the
  eddy (parallel costs, work_mem: a setting carries over from one
  comparison to the next, so the first vanilla run may have had others),
  takes a third of the timeout or more: *slow* (counted, with examples).
  Such a query is slow in both (found by the fuzzer, schema seed 4242006:
  with parallel_setup_cost = 0 both plans rescan a Gather 1,731 times, 90 s
  either way, and the first vanilla run had the default costs);
- a lost connection: a backend crash (assertion failure or signal).
"""

from __future__ import annotations

import contextlib
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import psycopg
import sqlglot
from sqlglot import exp

from eddytools.db import (
    connect,
    eddy_nodes,
    ensure_eddy,
    explain_json,
    hot_keys_settings,
    hybrid_settings,
    lookahead_settings,
    migration_settings,
    multiset,
    parallel_settings,
    random_start_settings,
    set_gucs,
    spill_settings,
    state_settings,
)
from eddytools.joingen import JoinSchema
from eddytools.sqlast import DIALECT, FROM_KEY, aliases_in, and_, conjuncts, parse

POLICIES = ("rank", "lottery", "fixed", "random", "cumulative")
REOPT_FREQUENCIES = (1, 10, 100, 1000, 100000)
JOIN_METHODS = ("auto", "hash", "index")
STATEMENT_TIMEOUT_S = 150.0


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
        if conn.broken or (isinstance(e, psycopg.OperationalError) and conn.closed):
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


def timed_out(o: tuple) -> bool:
    """Was the outcome the statement timeout (57014, not a user's cancel)?"""
    return o[0] == "error" and o[1] == "57014" and "statement timeout" in o[2]


def show(o: tuple) -> str:
    if o[0] == "error":
        return f"ERROR {o[1]}: {o[2]}"
    return f"{len(o[1])} rows, first {o[1][:3]}"


def settings_for(rng: random.Random, per_query: int) -> list[dict]:
    """``per_query`` settings, covering every routing policy once per 5;
    the reoptimization frequency, join method, lottery window,
    selection_min_cost, source schedule, state migration, state mode, a
    forced spill, the parallel exchange, a random start and (in place of
    join method auto, a third of the time) hybrid joins drawn for each."""
    out = []
    for k in range(per_query):
        out.append({"routing_policy": POLICIES[k % len(POLICIES)],
                    "reopt_frequency": rng.choice(REOPT_FREQUENCIES),
                    "join_method": rng.choice(JOIN_METHODS),
                    "lottery_window": rng.choice([0, 0, 0, 50]),
                    "selection_min_cost": rng.choice([0, 0.01]),
                    "source_schedule": rng.choice(["build", "build", "proportional"])})
        out[-1] |= migration_settings(f"{k}:{out[-1]}")
        out[-1] |= state_settings(f"{k}:{out[-1]}")
        out[-1] |= spill_settings(f"{k}:{out[-1]}")
        out[-1] |= parallel_settings(f"{k}:{out[-1]}")
        out[-1] |= random_start_settings(f"{k}:{out[-1]}")
        out[-1] |= hybrid_settings(f"{k}:{out[-1]}", str(out[-1]["join_method"]))
        out[-1] |= lookahead_settings(f"{k}:{out[-1]}")
        out[-1] |= hot_keys_settings(f"{k}:{out[-1]}")
    return out


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
    slow: int = 0  # eddy ran past the timeout; PostgreSQL took a third of it or more
    slow_examples: list[str] = field(default_factory=list)
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
                f"with full scans); {self.slow} slow (eddy timed out, vanilla took a third "
                f"of the timeout or more under the same settings); "
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
        self.timeout_s = STATEMENT_TIMEOUT_S
        self.conn = self._connect()
        self.schema_seed: int | None = None

    def _connect(self, timeout: float = 120) -> psycopg.Connection:
        deadline = time.monotonic() + timeout
        while True:
            try:
                conn = connect(self.dsn)
                ensure_eddy(conn)
                conn.execute("SET search_path = fz, public")
                conn.execute(f"SET statement_timeout = '{round(self.timeout_s * 1000)}ms'")
                return conn
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def reconnect(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.close()
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
        if verdict == "eddy-error" and timed_out(got):
            try:
                seconds, alt = self.vanilla_timed(query, settings)
            except BackendCrash as e:
                self.reconnect()
                return "crash", f"vanilla under the same core settings: {e}", has
            detail += (f"\nvanilla under the same core settings: {show(alt)} "
                       f"in {seconds:.1f} s")
            if timed_out(alt) or seconds >= self.timeout_s / 3:
                return "slow", detail, has
            return verdict, detail, has
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
                for probe in (relation_probes(query) + clause_probes(query)
                              + nested_loop_probes(query) + self.scan_probes(query)):
                    o = self.vanilla(probe)
                    if o[0] == "error" and o[1] == got[1]:
                        verdict = "plan-dependent"
                        detail += f"\nvanilla raises it joining fewer relations: {probe}"
                        break
        if (verdict == "error-code" and got[1].startswith("22")
                and want[1].startswith("22")):
            for probe in self.unraising_probes(query, want[1]):
                o = self.vanilla(probe)
                if o[0] == "error" and o[1] == got[1]:
                    verdict = "plan-dependent"
                    detail += ("\nvanilla raises it without the conjuncts that raise "
                               f"its own error: {probe}")
                    break
        return verdict, detail, has

    def unraising_probes(self, query: str, code: str) -> list[str]:
        """The relation and clause probes (conjunct_groups) with every
        conjunct left out that raises ``code`` by itself, counted over just
        its own relations (one or two of them; a conjunct over more, or
        over none, is kept): what PostgreSQL evaluates on the rows that do not raise its
        own error.  Conjuncts that raise nothing stay, guards included.  A
        probe is given only where something was left out and something
        remains."""
        probes: list[str] = []
        raises: dict[str, bool] = {}
        for tables, names, with_it in conjunct_groups(query):
            keep = []
            for d in with_it:
                over = aliases_in(d)
                solo = count_probe(tables, over, [d])
                if solo not in raises:
                    o = self.vanilla(solo) if 0 < len(over) <= 2 else ("rows", [])
                    raises[solo] = o[0] == "error" and o[1] == code
                if not raises[solo]:
                    keep.append(d)
            if keep and len(keep) < len(with_it):
                probe = count_probe(tables, names, keep)
                if probe not in probes:
                    probes.append(probe)
        return probes

    def vanilla_timed(self, query: str, settings: dict) -> tuple[float, tuple]:
        """(seconds, outcome) of PostgreSQL's plan under the core settings
        (``pg__``) of ``settings``, as the eddy ran."""
        set_gucs(self.conn, enabled="off",
                 **{k: v for k, v in settings.items() if k.startswith("pg__")})
        t0 = time.monotonic()
        got = outcome(self.conn, query)
        return time.monotonic() - t0, got

    FULL_SCANS = ("enable_nestloop", "enable_indexscan", "enable_bitmapscan",
                  "enable_indexonlyscan")

    def scan_probes(self, query: str) -> list[str]:
        """For every base relation PostgreSQL's full-scan plan scans with a
        Filter: a count of the relation under that Filter, as EXPLAIN prints
        it -- what PostgreSQL evaluates when it scans that relation by
        itself, as an eddy's source scan does.  relation_probes sees the
        relations the query names; this one sees the relations of a view
        too (``FROM v12 AS t2``, whose ``t2.a`` is ``r1.a``), and the quals
        PostgreSQL derived.  A Filter that reads a parameter or a subplan's
        result is left out."""
        set_gucs(self.conn, enabled="off")
        for g in self.FULL_SCANS:
            self.conn.execute(f"SET {g} = off")
        try:
            plan = explain_json(self.conn, query, verbose=True)
        except psycopg.Error:
            if self.conn.broken:
                raise
            return []
        finally:
            if not self.conn.broken:
                for g in self.FULL_SCANS:
                    self.conn.execute(f"RESET {g}")
        return scan_probes_of(plan)

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


def _inner_blocks(query: str) -> list[tuple[list[exp.Expression], list[exp.Expr]]]:
    """(relations, conjuncts of WHERE and inner ON) of every block of
    ``query`` that no outer join touches."""
    try:
        tree = parse(query)
    except sqlglot.errors.ParseError:
        return []
    blocks = []
    for s in tree.find_all(exp.Select):
        from_ = s.args.get(FROM_KEY)
        joins = s.args.get("joins") or []
        if from_ is None or any(j.side or j.kind for j in joins):
            continue
        conj = conjuncts(s.args["where"].this) if s.args.get("where") else []
        for j in joins:
            conj += conjuncts(j.args.get("on"))
        blocks.append(([from_.this] + [j.this for j in joins], conj))
    return blocks


def _join_conjuncts(query: str) -> list[tuple[dict[str, exp.Table], set[str],
                                              list[exp.Expr]]]:
    """For every conjunct without a subquery that names two or more base
    relations of a block of ``query`` made of base relations only: the
    block's relations by alias, the conjunct's aliases, and the block's
    conjuncts over those relations or fewer (the conjunct among them)."""
    found = []
    for relations, conj in _inner_blocks(query):
        tables = {t.alias_or_name: t for t in relations if isinstance(t, exp.Table)}
        if len(tables) != len(relations):
            continue  # a derived table or function in the block
        conj = [c for c in conj if not c.find(exp.Subquery, exp.Select)]
        for c in conj:
            names = aliases_in(c)
            if len(names) >= 2 and names <= tables.keys():
                found.append((tables, names, [d for d in conj if aliases_in(d) <= names]))
    return found


def count_probe(tables: dict[str, exp.Table], names: set[str],
                conj: list[exp.Expr]) -> str:
    """A count over the relations ``names`` of ``tables`` under ``conj``."""
    froms = ", ".join(tables[a].sql(dialect=DIALECT) for a in sorted(names))
    return (f"SELECT COUNT(*) FROM {froms} WHERE "
            + and_([d.copy() for d in conj]).sql(dialect=DIALECT))


def conjunct_groups(query: str) -> list[tuple[dict[str, exp.Table], set[str],
                                              list[exp.Expr]]]:
    """What relation_probes and clause_probes count, as (the block's base
    relations by alias, the relations counted, the conjuncts over them):
    every base relation under its own restrictions, and every conjunct over
    two or more relations with its guards (_join_conjuncts)."""
    return _relation_groups(query) + _join_conjuncts(query)


def _relation_groups(query: str) -> list[tuple[dict[str, exp.Table], set[str],
                                               list[exp.Expr]]]:
    """For every base relation of every block of ``query`` with
    restrictions of its own (the conjuncts without a subquery that name only
    it): the block's base relations by alias, the relation, and those
    conjuncts."""
    groups = []
    for relations, conj in _inner_blocks(query):
        tables = {t.alias_or_name: t for t in relations if isinstance(t, exp.Table)}
        for alias in tables:
            own = [c for c in conj if aliases_in(c) == {alias}
                   and not c.find(exp.Subquery, exp.Select)]
            if own:
                groups.append((tables, {alias}, own))
    return groups


def clause_probes(query: str) -> list[str]:
    """For every conjunct of WHERE or inner ON that names two or more base
    relations of its block: a count over just those relations, under that
    conjunct, the other conjuncts over the same relations or fewer of them,
    and each relation's own restrictions -- what PostgreSQL evaluates when it
    joins those relations first, one of the plans it may choose (the
    relations of an inner-join block commute).  Its guards come with it, in
    PostgreSQL's own order, so a predicate run before its guard is still
    caught."""
    probes: list[str] = []
    for tables, names, with_it in _join_conjuncts(query):
        probe = count_probe(tables, names, with_it)
        if probe not in probes:
            probes.append(probe)
    return probes


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def nested_loop_probes(query: str) -> list[str]:
    """For every conjunct of WHERE or inner ON that names exactly two base
    relations of its block, in both orders: the probe of clause_probes as a
    nested loop, the outer relation scanned under its own restrictions and,
    for each of its rows that passes them, the inner one scanned under its
    own restrictions and then the conjuncts over both (LATERAL subqueries
    with OFFSET 0, which PostgreSQL neither pulls up nor reorders, so the
    guards stay first on both sides) -- one of the plans PostgreSQL may
    choose for joining the two first.  clause_probes leaves the plan to
    PostgreSQL, which may build a hash table on either relation, read it to
    its end and raise another row's error first: which of two rows' errors
    a join raises depends on which relation drives it."""
    probes: list[str] = []
    for tables, names, with_it in _join_conjuncts(query):
        if len(names) != 2:
            continue
        for outer in sorted(names):
            (inner,) = names - {outer}
            own = [d for d in with_it if aliases_in(d) <= {outer}]
            inner_own = [d for d in with_it if aliases_in(d) <= {inner}]
            rest = [d for d in with_it if len(aliases_in(d)) == 2]
            inner_sql = tables[inner].sql(dialect=DIALECT)
            if inner_own:
                # its own restrictions first, as on a nested loop's inner scan
                inner_sql = (f"(SELECT * FROM {inner_sql} WHERE "
                             f"{and_([d.copy() for d in inner_own]).sql(dialect=DIALECT)} "
                             f"OFFSET 0) AS {inner}")
            probe = (f"SELECT COUNT(*) FROM {tables[outer].sql(dialect=DIALECT)} "
                     f"CROSS JOIN LATERAL (SELECT 1 FROM {inner_sql} "
                     f"WHERE {and_([d.copy() for d in rest]).sql(dialect=DIALECT)} "
                     "OFFSET 0) AS eddy_probe")
            if own:
                probe += f" WHERE {and_([d.copy() for d in own]).sql(dialect=DIALECT)}"
            if probe not in probes:
                probes.append(probe)
    return probes


def scan_probes_of(plan: dict) -> list[str]:
    """The probes of Differ.scan_probes, from a plan of EXPLAIN (VERBOSE,
    FORMAT JSON)."""
    probes: list[str] = []
    nodes = [plan]
    while nodes:
        node = nodes.pop()
        nodes.extend(node.get("Plans", []))
        qual = node.get("Filter")
        if (node.get("Node Type") != "Seq Scan" or qual is None
                or "$" in qual or "SubPlan" in qual or "InitPlan" in qual):
            continue
        rel = f'{quote_ident(node["Schema"])}.{quote_ident(node["Relation Name"])}'
        probe = f"SELECT COUNT(*) FROM {rel} AS {quote_ident(node['Alias'])} WHERE {qual}"
        if probe not in probes:
            probes.append(probe)
    return probes


def relation_probes(query: str) -> list[str]:
    """For every base relation of every block of ``query``: a count of the
    relation under its own restrictions (the conjuncts of WHERE and inner ON
    that name only it) -- what PostgreSQL evaluates when it scans that
    relation by itself, as an eddy's source scan does."""
    return [count_probe(tables, names, own)
            for tables, names, own in _relation_groups(query)]

