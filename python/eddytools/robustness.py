"""The misestimation workload (issue 48): vanilla PostgreSQL against the eddy
with its defaults, at PostgreSQL's default settings, per query and as a
geometric mean, with paired bootstrap 95% confidence intervals and an A/A
twin.

    python -m eddytools.robustness --dsn "host=... dbname=postgres"
    python -m eddytools.robustness --dsn "host=... dbname=postgres" --quick

Data: the misest data set of the Spark loader (spark_loader.misest: a
13-table snowflake at --scale, seeded by --data-seed) loaded into a
database of its own on the server of --dsn (misest_s<scale>, kept for the
next run; the loader skips tables it already loaded with the same
parameters).  Then, every run: the workload's PL/pgSQL functions and the
stale copies ms_sales_st and ms_customer_st (eddytools.misest.STALE_SQL:
copied, ANALYZEd, changed, VACUUMed, autovacuum off), so the stale
statistics are the same in every run.

Queries: eddytools.misest.generate(--query-seed, --count) (36 of seed 0,
docs/robustness/queries.sql), each tagged with the kinds of misestimation
it exercises; --queries picks some by name.

Settings (every session): PostgreSQL's defaults with jit = --jit (off by
default), work_mem =
4MB and max_parallel_workers_per_gather = --workers (0 by default: the
shared 2-core machine has no core to give a worker; the results record
it); eddy.* at the extension's defaults, eddy.enabled on or off.

Method: per query, the plan with the eddy on and off (EXPLAIN; the number
of Eddy nodes, and the planner's DEBUG1 messages where it declined), one
untimed eddy-off run (warms shared_buffers; --no-warmup skips it); then in
every round each query runs three times, each run in a fresh connection:
eddy on, eddy off, and eddy off again (the A/A twin), in the order on, off,
aa, then off, aa, on, then aa, on, off (rotated by round).  A run's time is
the client's wall-clock time of execute + fetch.  A run that exceeds
--statement-timeout is a timeout, recorded (not an error of the eddy); a
mode that timed out is not run again in later rounds (recorded as a
timeout).  Every run's answer is checked against the first eddy-off
answer (row count and an order-independent digest, eddytools.db.
rows_digest): a difference, or an error the other mode did not have, is
an error (stderr, results.json) and makes the exit status 3.

Statistics (eddytools.harness): per query, the paired ratio on / off of
each round, its median and a bootstrap 95% interval over the rounds
(paired_bootstrap_ci), and the same for aa / off (A/A); over the queries
that finished in every round in both modes, the geometric mean of the
paired ratios per round, its median and bootstrap interval
(geomean_bootstrap_ci), for all of them and for those with an Eddy in the
plan; the A/A geometric mean beside it.  Run to run (issue 48's goal: the
eddy's slowest of 10 runs within 1.3x of its fastest): per query, the
slowest of the eddy's runs over its fastest, one run a round, and the
same for PostgreSQL's plan over its off and A/A runs (summary.csv's
on_run_spread, off_run_spread; summary.md with more than one round).
`--rounds 10` measures the goal.

Random initial plans (--random-starts N, default 5; none under --quick
unless given): in every round each query also runs N times with the eddy
started from a random plan (eddy.random_start = 1..N: a random build order
and random first routing decisions, then the eddy adapts) and N times
with eddies off, forced to one of N random join orders of the query
(eddytools.misest.Query.random_orders: connected, no cross products;
explicit JOINs under join_collapse_limit = 1; PostgreSQL still chooses the
join methods).  Per query, the median over the rounds of each start and
each order, and their worst/best: the eddy's against PostgreSQL's
(spread.csv, summary.md).  These runs have a statement timeout of their
own (--spread-timeout: a forced order may take far longer than any plan
the planner would choose); a timeout counts as that timeout, so the
spread it gives is a lower bound.

Output in --out: measurements.csv (every run), summary.csv (per query),
spread.csv (per query, the random starts' and forced orders' spreads),
results.json (settings, environment, load, plans with the planner's
reasons, runs, summary, totals, errors), summary.md (the README-ready
tables, also printed at the end) and ratio.png (per query, the paired
ratio with its interval, A/A as dots).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from eddytools import harness, misest
from eddytools.db import apply_settings, connect, ensure_eddy, rows_digest, sql_value
from eddytools.harness import Interval, Table, median_or_none

PROG = "eddytools.robustness"
MODES = ("on", "off", "aa")          # aa: eddy off again, the A/A twin of off
EDDY_ENABLED = {"on": "on", "off": "off", "aa": "off"}
# --random-starts N adds the modes start1..startN (the eddy, eddy.random_start
# = k) and order1..orderN (PostgreSQL, forced to the query's k-th random join
# order: explicit JOINs, join_collapse_limit = 1)
START, ORDER = "start", "order"
QUICK_SCALE = 0.02
QUICK_QUERIES = 6                    # m01..m06: one of each kind
TIMEOUT_STATE = "57014"              # query_canceled (statement_timeout)


@dataclass
class Run:
    """One timed run, a row of measurements.csv."""
    query: str
    mode: str
    round: int
    seconds: float | None
    rows: int | None
    digest: str | None
    timeout: bool = False
    skipped: bool = False            # a timeout in an earlier round: not run again
    error: str | None = None

    def label(self) -> str:
        """The run's mode as the error messages name it."""
        return self.mode


@dataclass
class Plan:
    query: str
    eddy_nodes: int
    reasons: list[str]               # the planner's DEBUG1 messages about eddies
    text_on: str
    text_off: str


@dataclass
class SummaryRow:
    """One query's line of summary.csv."""
    query: str
    kinds: str
    relations: int
    eddy_nodes: int
    on_ms: float | None
    off_ms: float | None
    aa_ms: float | None
    ratio: float | None              # median of the paired ratios on / off
    ratio_low: float | None          # its bootstrap 95% interval
    ratio_high: float | None
    aa_ratio: float | None           # the same for aa / off
    aa_low: float | None
    aa_high: float | None
    rounds: int                      # rounds with both on and off
    timeouts_on: int
    timeouts_off: int
    on_run_spread: float | None      # run to run: the eddy's slowest run / its fastest
    off_run_spread: float | None     # the same for PostgreSQL's plan (off and aa)
    rows: int | None
    digest: str | None
    reasons: str
    errors: str


@dataclass
class Totals:
    """The geometric means over a set of queries, with intervals."""
    over: str                        # "all", "eddy" (queries with an Eddy node) or a kind
    queries: int                     # queries in the geometric mean
    left_out: list[str]              # queries without on and off in every round
    geomean: float | None
    low: float | None
    high: float | None
    aa_geomean: float | None
    aa_low: float | None
    aa_high: float | None
    rounds: int
    above_1_1: list[str]             # queries whose interval's lower end is above 1.1
    below_1: list[str]               # queries whose interval's upper end is below 1.0


@dataclass
class SpreadRow:
    """One query's line of spread.csv: over its random starts (the eddy)
    and its forced join orders (PostgreSQL), the fastest and slowest of
    the per-start (per-order) medians over the rounds, and worst / best.
    A timeout counts as the statement timeout, and makes the row's
    worst a lower bound."""
    query: str
    kinds: str
    relations: int
    starts: int
    eddy_best_ms: float | None
    eddy_worst_ms: float | None
    eddy_spread: float | None
    eddy_timeouts: int
    orders: int
    pg_best_ms: float | None
    pg_worst_ms: float | None
    pg_spread: float | None
    pg_timeouts: int
    on_ms: float | None              # the eddy from the planner's start, beside
    off_ms: float | None             # PostgreSQL's own plan


@dataclass
class Result(harness.Result[Run]):
    load: dict = field(default_factory=dict)
    queries: list[dict] = field(default_factory=list)
    plans: list[Plan] = field(default_factory=list)
    totals: list[Totals] = field(default_factory=list)
    orders: dict[str, list[str]] = field(default_factory=dict)
    spread: list[SpreadRow] = field(default_factory=list)

    def document(self) -> dict[str, Any]:
        return {"settings": self.settings, "environment": self.environment,
                "load": self.load, "queries": self.queries, "plans": self.plans,
                "summary": self.summary, "totals": self.totals, "orders": self.orders,
                "spread": self.spread, "runs": self.runs, "errors": self.errors}


# --------------------------------------------------------------------------- data

def dbname_for(scale: float, seed: int) -> str:
    return "misest_s" + f"{scale:g}".replace(".", "_") + (f"_seed{seed}" if seed else "")


def with_dbname(dsn: str, dbname: str) -> str:
    params = psycopg.conninfo.conninfo_to_dict(dsn)
    params["dbname"] = dbname
    return psycopg.conninfo.make_conninfo(**params)   # type: ignore[arg-type]


def prepare_data(dsn: str, dbname: str, args: argparse.Namespace) -> dict:
    """The database (created if missing), the tables (the Spark loader; it
    skips what is loaded already), the functions and the stale copies.
    Returns the load's record: row counts and the stale step's seconds."""
    with connect(dsn) as maint:
        if not sql_value(maint, "SELECT count(*) FROM pg_database WHERE datname = %s",
                         (dbname,)):
            maint.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
    db_dsn = with_dbname(dsn, dbname)
    t0 = time.monotonic()
    argv = ["misest", "--scale", f"{args.scale:g}", "--seed", str(args.data_seed)]
    harness.run_loader(db_dsn, [(argv, list(misest.TABLES_LOADED))], args.master,
                       args.no_progress, app_name="eddy robustness loader")
    load_seconds = time.monotonic() - t0
    t0 = time.monotonic()
    with connect(db_dsn) as conn:
        ensure_eddy(conn)
        conn.execute(misest.FUNCTIONS_SQL)
        for stmt in misest.STALE_SQL:
            conn.execute(stmt)
        counts = {t: sql_value(conn, sql.SQL("SELECT count(*) FROM {}").format(
            sql.Identifier(t))) for t in (*misest.TABLES_LOADED, *misest.STALE_TABLES)}
    return {"dbname": dbname, "scale": args.scale, "data_seed": args.data_seed,
            "counts": counts, "load_seconds": round(load_seconds, 1),
            "stale_seconds": round(time.monotonic() - t0, 1)}


# --------------------------------------------------------------------------- measuring

def session_settings(args: argparse.Namespace) -> dict[str, str]:
    return {"jit": args.jit, "work_mem": "4MB",
            "max_parallel_workers_per_gather": str(args.workers)}


def eddy_enabled(mode: str) -> str:
    if mode.startswith(START):
        return "on"
    if mode.startswith(ORDER):
        return "off"
    return EDDY_ENABLED[mode]


def mode_settings(mode: str) -> dict[str, str]:
    """eddy.enabled, and a random start's seed or a forced order's limit."""
    settings = {"eddy.enabled": eddy_enabled(mode)}
    if mode.startswith(START):
        settings["eddy.random_start"] = mode[len(START):]
    elif mode.startswith(ORDER):
        settings["join_collapse_limit"] = "1"
    return settings


def spread_modes(n: int) -> tuple[str, ...]:
    return (*(f"{START}{k}" for k in range(1, n + 1)),
            *(f"{ORDER}{k}" for k in range(1, n + 1)))


def query_sql(q: misest.Query, mode: str, orders: dict[str, list[tuple[str, ...]]]) -> str:
    """The SQL a mode runs: the query's, or the forced order's."""
    if mode.startswith(ORDER):
        return q.forced_sql(orders[q.name][int(mode[len(ORDER):]) - 1])
    return q.sql


def session(dsn: str, args: argparse.Namespace, mode: str, preload: bool,
            timeout: bool = True) -> psycopg.Connection:
    """A fresh connection with the run's settings (and statement_timeout)."""
    conn = connect(dsn)
    if not preload:
        conn.execute("LOAD 'eddy'")
    settings = {**session_settings(args), **mode_settings(mode)}
    limit = args.statement_timeout if mode in MODES else args.spread_timeout
    if timeout and limit > 0:
        settings["statement_timeout"] = str(int(limit * 1000))
    apply_settings(conn, settings)
    return conn


def explain(dsn: str, args: argparse.Namespace, q: misest.Query, preload: bool) -> Plan:
    texts = {}
    reasons: list[str] = []
    for mode in ("on", "off"):
        with session(dsn, args, mode, preload, timeout=False) as conn:
            text, why = harness.explain_with_reasons(conn, q.sql, reasons=mode == "on")
            texts[mode] = text
            reasons += why
    return Plan(q.name, texts["on"].count("(Eddy)"), reasons, texts["on"], texts["off"])


def timed_run(dsn: str, args: argparse.Namespace, q: misest.Query, mode: str, rnd: int,
              preload: bool, text: str | None = None) -> Run:
    conn = session(dsn, args, mode, preload)
    try:
        t0 = time.perf_counter()
        try:
            rows = conn.execute(text or q.sql).fetchall()
        except psycopg.Error as e:
            if getattr(e, "sqlstate", None) == TIMEOUT_STATE:
                return Run(q.name, mode, rnd, None, None, None, timeout=True)
            msg = harness.first_line(e)
            if conn.broken:
                msg = f"connection lost (backend crash?): {msg}"
            return Run(q.name, mode, rnd, None, None, None,
                       error=f"{getattr(e, 'sqlstate', None) or ''} {msg}".strip())
        seconds = time.perf_counter() - t0
        return Run(q.name, mode, rnd, seconds, len(rows), rows_digest(rows))
    finally:
        conn.close()


def round_order(rnd: int) -> tuple[str, ...]:
    """on, off, aa; off, aa, on; aa, on, off; ...: each mode first in one
    round of three."""
    return tuple(harness.rotated(MODES, rnd))


def measure(dsn: str, args: argparse.Namespace, queries: list[misest.Query],
            result: Result, preload: bool) -> None:
    for q in queries:
        result.plans.append(explain(dsn, args, q, preload))
    orders = {q.name: q.random_orders(args.random_starts, args.query_seed) for q in queries}
    result.orders = {name: [" ".join(o) for o in os] for name, os in orders.items()}
    if not args.no_warmup:
        for q in queries:
            timed_run(dsn, args, q, "off", -1, preload)
    timed_out: set[tuple[str, str]] = set()
    for rnd in range(args.rounds):
        for i, q in enumerate(queries):
            spread = [m for m in spread_modes(args.random_starts)
                      if not m.startswith(ORDER) or int(m[len(ORDER):]) <= len(orders[q.name])]
            for mode in (*round_order(rnd + i), *harness.rotated(spread, rnd + i)):
                if (q.name, mode) in timed_out:
                    result.runs.append(Run(q.name, mode, rnd, None, None, None,
                                           timeout=True, skipped=True))
                    continue
                run = timed_run(dsn, args, q, mode, rnd, preload, query_sql(q, mode, orders))
                if run.timeout:
                    timed_out.add((q.name, mode))
                result.runs.append(run)
                if not args.no_progress:
                    took = "timeout" if run.timeout else (
                        f"{run.seconds:.3f} s" if run.seconds is not None else run.error)
                    print(f"robustness: round {rnd + 1}/{args.rounds} {q.name} {mode}: {took}",
                          file=sys.stderr)
    check_answers(result)


def check_answers(result: harness.Result) -> None:
    """Every run's answer against the query's first eddy-off answer; an
    error in one mode that the other did not have.  (The runs may be of a
    subclass of Run: eddytools.ab_builds's.)"""
    runs: list[Run] = result.runs
    reference: dict[str, Run] = {}
    for r in runs:
        if r.mode == "off" and r.digest is not None:
            reference.setdefault(r.query, r)
    for r in runs:
        if r.error is not None:
            result.errors.append(f"{r.query} eddy {eddy_enabled(r.mode)} ({r.label()}) round "
                                 f"{r.round}: {r.error}")
            continue
        ref = reference.get(r.query)
        if r.digest is None or ref is None:
            continue
        if (r.rows, r.digest) != (ref.rows, ref.digest):
            result.errors.append(
                f"{r.query} {r.label()} round {r.round}: {r.rows} rows, digest {r.digest}; "
                f"eddy off: {ref.rows} rows, digest {ref.digest}")


# --------------------------------------------------------------------------- summary

def by_round(runs: list[Run], query: str, mode: str) -> dict[int, float | None]:
    return {r.round: r.seconds for r in runs if r.query == query and r.mode == mode}


def ms(v: float | None) -> float | None:
    return None if v is None else v * 1000.0


def summarize(result: Result, queries: list[misest.Query], args: argparse.Namespace) -> None:
    plans = {p.query: p for p in result.plans}
    rows = []
    for q in queries:
        t = {m: by_round(result.runs, q.name, m) for m in MODES}
        ci = harness.paired_bootstrap_ci(t["on"], t["off"], seed=args.bootstrap_seed)
        aa = harness.paired_bootstrap_ci(t["aa"], t["off"], seed=args.bootstrap_seed)
        mine = [r for r in result.runs if r.query == q.name]
        ref = next((r for r in mine if r.mode == "off" and r.digest), None)
        p = plans[q.name]
        rows.append(SummaryRow(
            query=q.name, kinds=",".join(q.kinds), relations=q.relations,
            eddy_nodes=p.eddy_nodes,
            on_ms=ms(median_or_none(list(t["on"].values()))),
            off_ms=ms(median_or_none(list(t["off"].values()))),
            aa_ms=ms(median_or_none(list(t["aa"].values()))),
            ratio=ci.estimate, ratio_low=ci.low, ratio_high=ci.high,
            aa_ratio=aa.estimate, aa_low=aa.low, aa_high=aa.high, rounds=ci.rounds,
            timeouts_on=sum(r.timeout for r in mine if r.mode == "on"),
            timeouts_off=sum(r.timeout for r in mine if r.mode in ("off", "aa")),
            on_run_spread=run_spread(mine, ("on",)),
            off_run_spread=run_spread(mine, ("off", "aa")),
            rows=ref.rows if ref else None, digest=ref.digest if ref else None,
            reasons=" | ".join(p.reasons),
            errors=" | ".join(sorted({f"{r.mode}: {r.error}" for r in mine if r.error}))))
    result.summary = rows
    result.totals = [totals_of("all", rows, result, args),
                     totals_of("eddy", [r for r in rows if r.eddy_nodes], result, args)]
    # per kind: the queries built for it (a query may carry two kinds)
    result.totals += [totals_of(k, of_kind, result, args) for k in misest.KINDS
                      if (of_kind := [r for r in rows if k in r.kinds.split(",")])]
    result.spread = [spread_of(result, q, args, r) for q, r in zip(queries, rows, strict=True)
                     ] if args.random_starts else []


def run_spread(runs: list[Run], modes: tuple[str, ...]) -> float | None:
    """Run to run: the slowest of a mode's timed runs over its fastest
    (None with fewer than two runs, or a timeout or an error among them:
    the spread is then unknown, not small)."""
    mine = [r for r in runs if r.mode in modes]
    secs = [r.seconds for r in mine if r.seconds is not None]
    if len(secs) < 2 or len(secs) < len(mine) or min(secs) <= 0:
        return None
    return max(secs) / min(secs)


def spread_of(result: Result, q: misest.Query, args: argparse.Namespace,
              row: SummaryRow) -> SpreadRow:
    """The random starts' and forced orders' spreads of one query."""
    def side(prefix: str) -> tuple[float | None, float | None, float | None, int, int]:
        medians = []
        timeouts = 0
        modes = {r.mode for r in result.runs if r.query == q.name and r.mode.startswith(prefix)}
        for mode in sorted(modes):
            mine = [r for r in result.runs if r.query == q.name and r.mode == mode]
            if any(r.timeout for r in mine):
                timeouts += 1
                medians.append(args.spread_timeout)
                continue
            m = median_or_none([r.seconds for r in mine if r.seconds is not None])
            if m is not None:
                medians.append(m)
        if not medians:
            return None, None, None, timeouts, len(modes)
        best, worst = min(medians), max(medians)
        return ms(best), ms(worst), worst / best if best > 0 else None, timeouts, len(modes)

    eb, ew, es, et, en = side(START)
    pb, pw, ps, pt, pn = side(ORDER)
    return SpreadRow(q.name, ",".join(q.kinds), q.relations, en, eb, ew, es, et,
                     pn, pb, pw, ps, pt, row.on_ms, row.off_ms)


def totals_of(over: str, rows: list[SummaryRow], result: Result,
              args: argparse.Namespace) -> Totals:
    complete = [r for r in rows if r.rounds == args.rounds and not r.timeouts_on
                and not r.timeouts_off and not r.errors]
    pairs = [(by_round(result.runs, r.query, "on"), by_round(result.runs, r.query, "off"))
             for r in complete]
    aa_pairs = [(by_round(result.runs, r.query, "aa"), by_round(result.runs, r.query, "off"))
                for r in complete]
    g = harness.geomean_bootstrap_ci(pairs, seed=args.bootstrap_seed)
    a = harness.geomean_bootstrap_ci(aa_pairs, seed=args.bootstrap_seed)
    return Totals(over=over, queries=len(complete),
                  left_out=[r.query for r in rows if r not in complete],
                  geomean=g.estimate, low=g.low, high=g.high,
                  aa_geomean=a.estimate, aa_low=a.low, aa_high=a.high, rounds=g.rounds,
                  above_1_1=[r.query for r in rows
                             if r.ratio_low is not None and r.ratio_low > 1.1],
                  below_1=[r.query for r in rows
                           if r.ratio_high is not None and r.ratio_high < 1.0])


def num(v: float | None, fmt: str = ".1f") -> str:
    return "-" if v is None else format(v, fmt)


def interval(estimate: float | None, low: float | None, high: float | None) -> str:
    return Interval(estimate, low, high, 0).text()


def report(result: Result) -> str:
    """The README-ready summary: the totals, then the per-query table."""
    s = result.settings
    lines = [f"Misestimation workload, scale {s['scale']:g}, {len(result.summary)} queries, "
             f"{s['rounds']} round(s); work_mem 4MB, max_parallel_workers_per_gather "
             f"{s['workers']}, jit {s.get('jit', 'off')}, eddy.* at their defaults; "
             "statement timeout "
             f"{s['statement_timeout']:g} s.  Ratios: eddy on / off, median of the paired "
             "rounds [bootstrap 95% interval]; A/A: eddy off / off.", ""]
    lines += ["| queries | n | geometric mean on/off | A/A | on/off CI low > 1.1 | "
              "CI high < 1.0 | left out |", "|---|---|---|---|---|---|---|"]
    for t in result.totals:
        label = {"all": "all", "eddy": "with an Eddy"}.get(t.over, f"kind: {t.over}")
        lines.append(f"| {label} | {t.queries} | {interval(t.geomean, t.low, t.high)} | "
                     f"{interval(t.aa_geomean, t.aa_low, t.aa_high)} | "
                     f"{', '.join(t.above_1_1) or '-'} | {len(t.below_1)} | "
                     f"{', '.join(t.left_out) or '-'} |")
    lines += ["", "| query | kinds | rel | eddies | off ms | on ms | on/off | A/A | "
              "timeouts on/off | planner |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in result.summary:
        why = r.reasons[:80] if r.reasons else ""
        lines.append(
            f"| {r.query} | {r.kinds} | {r.relations} | {r.eddy_nodes} | {num(r.off_ms)} | "
            f"{num(r.on_ms)} | {interval(r.ratio, r.ratio_low, r.ratio_high)} | "
            f"{interval(r.aa_ratio, r.aa_low, r.aa_high)} | {r.timeouts_on}/{r.timeouts_off} | "
            f"{why} |")
    if result.settings["rounds"] > 1:
        lines += ["", run_to_run_report(result)]
    if result.spread:
        lines += ["", spread_report(result)]
    if result.errors:
        lines += ["", f"{len(result.errors)} error(s): see results.json"]
    return "\n".join(lines)


RUN_TO_RUN_GOAL = 1.3               # issue 48: the eddy's slowest run / its fastest


def run_to_run_report(result: Result) -> str:
    """Run to run: per query, the eddy's slowest run over its fastest, and
    PostgreSQL's (its off and A/A runs, twice as many) beside it."""
    rows = [r for r in result.summary if r.on_run_spread is not None]
    within = [r for r in rows if r.on_run_spread <= RUN_TO_RUN_GOAL]
    pg = [r for r in result.summary if r.off_run_spread is not None]
    pg_within = [r for r in pg if r.off_run_spread <= RUN_TO_RUN_GOAL]
    rounds = result.settings["rounds"]
    worst = max(rows, key=lambda r: r.on_run_spread, default=None)
    lines = [f"Run to run: the eddy's slowest of its {rounds} runs within "
             f"{RUN_TO_RUN_GOAL:g}x of its fastest on {len(within)} of {len(rows)} queries"
             + (f" (worst {worst.query}: {worst.on_run_spread:.2f}x)" if worst else "")
             + f"; PostgreSQL's plan, slowest of {2 * rounds} runs (off and A/A), within it "
             f"on {len(pg_within)} of {len(pg)}.  Each run in a fresh connection.", "",
             "| query | eddies | eddy slowest/fastest | PG slowest/fastest |",
             "|---|---|---|---|"]
    for r in result.summary:
        lines.append(f"| {r.query} | {r.eddy_nodes} | {num(r.on_run_spread, '.2f')} | "
                     f"{num(r.off_run_spread, '.2f')} |")
    return "\n".join(lines)


SPREAD_GOAL = 1.6                    # issue 48: the eddy's worst/best over random starts


def spread_report(result: Result) -> str:
    """Random initial plans: per query, the eddy's worst/best over its
    random starts beside PostgreSQL's over forced join orders."""
    rows = [r for r in result.spread if r.eddy_spread is not None]
    within = [r for r in rows if (r.eddy_spread or 0.0) <= SPREAD_GOAL and not r.eddy_timeouts]
    pg = [r for r in result.spread if r.pg_spread is not None]
    worst = max(rows, key=lambda r: r.eddy_spread or 0.0, default=None)
    pg_worst = max(pg, key=lambda r: r.pg_spread or 0.0, default=None)
    lines = [f"Random initial plans: {result.settings['random_starts']} random starts of the "
             "eddy (eddy.random_start = 1..N) and as many random join orders forced on "
             "PostgreSQL (join_collapse_limit = 1), medians over the rounds; worst/best per "
             f"query.  The eddy within {SPREAD_GOAL:g}x on {len(within)} of {len(rows)} "
             "queries" + (f" (worst {worst.query}: {worst.eddy_spread:.2f}x)" if worst else "")
             + "; PostgreSQL's forced orders" + (
                 f" up to {pg_worst.pg_spread:.2f}x ({pg_worst.query})" if pg_worst else ": -")
             + ".", "",
             "| query | kinds | rel | eddy best ms | eddy worst ms | eddy worst/best | "
             "PG orders best ms | PG orders worst ms | PG worst/best | eddy (planner's "
             "start) ms | PG's plan ms |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in result.spread:
        et = f" ({r.eddy_timeouts} timeout)" if r.eddy_timeouts else ""
        pt = f" ({r.pg_timeouts} timeout)" if r.pg_timeouts else ""
        lines.append(
            f"| {r.query} | {r.kinds} | {r.relations} | {num(r.eddy_best_ms)} | "
            f"{num(r.eddy_worst_ms)}{et} | {num(r.eddy_spread, '.2f')} | {num(r.pg_best_ms)} | "
            f"{num(r.pg_worst_ms)}{pt} | {num(r.pg_spread, '.2f')} | {num(r.on_ms)} | "
            f"{num(r.off_ms)} |")
    return "\n".join(lines)


def plot(result: Result, out: Path) -> Path:
    """ratio.png: per query the paired ratio on / off with its interval
    (hatched: no Eddy in the plan), the A/A ratio as a black dot."""
    plt = harness.pyplot()
    rows = result.summary
    fig, ax = plt.subplots(figsize=(max(6.0, 0.32 * len(rows) + 2.5), 4.4))
    top = 1.5
    for i, r in enumerate(rows):
        if r.ratio is None:
            ax.text(i, 0.05, "timeout" if r.timeouts_off or r.timeouts_on else "-",
                    rotation=90, fontsize=6, ha="center")
            continue
        lo = max(0.0, r.ratio - (r.ratio_low or r.ratio))
        hi = max(0.0, (r.ratio_high or r.ratio) - r.ratio)
        ax.bar(i, r.ratio, 0.7, yerr=[[lo], [hi]], capsize=1.5,
               color="tab:blue" if r.eddy_nodes else "lightgrey", edgecolor="black",
               linewidth=0.4, hatch=None if r.eddy_nodes else "///",
               error_kw={"elinewidth": 0.6})
        if r.aa_ratio is not None:
            ax.plot([i], [r.aa_ratio], "k.", markersize=3)
        top = max(top, (r.ratio_high or r.ratio) * 1.1)
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
    ax.axhline(1.1, color="red", linewidth=0.6, linestyle=":")
    ax.axhline(0.6, color="green", linewidth=0.6, linestyle=":")
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([r.query for r in rows], rotation=90, fontsize=7)
    ax.set_ylabel("time eddy on / off (paired median, 95% CI)")
    ax.set_ylim(0, min(top, 6.0))
    t = result.totals[0] if result.totals else None
    g = f"; geometric mean {interval(t.geomean, t.low, t.high)}" if t else ""
    ax.set_title(f"Misestimation workload, scale {result.settings['scale']:g}, "
                 f"{result.settings['rounds']} round(s){g}", fontsize=9)
    return harness.save_figure(fig, out / "ratio.png")


def write_results(result: Result, out: Path) -> None:
    harness.write_results(result, out, [
        Table("measurements.csv", result.runs, harness.run_columns(Run),
              {"seconds": ".6f"}),
        Table("summary.csv", result.summary),
        *([Table("spread.csv", result.spread)] if result.spread else []),
    ])
    (out / "summary.md").write_text(report(result) + "\n")


# --------------------------------------------------------------------------- CLI

def build_parser() -> argparse.ArgumentParser:
    ap = harness.parser(PROG, __doc__)
    harness.add_common_arguments(
        ap, dsn_help="libpq connection string of a database on the server to use (default: "
                     "the PG* environment); the workload's database is created next to it",
        out=Path("robustness-results"),
        out_help="output folder (default: robustness-results, untracked; docs/robustness "
                 "refreshes the committed results)",
        quick_help=f"smoke run: scale {QUICK_SCALE:g}, the first {QUICK_QUERIES} queries "
                   "(one of each kind), 1 round, no warm-up", plots_help="no PNG")
    add_workload_arguments(ap)
    ap.add_argument("--random-starts", type=int, default=None,
                    help="random starts of the eddy and random join orders forced on "
                         "PostgreSQL per query (default: 5; --quick: 0; 0: none)")
    ap.add_argument("--spread-timeout", type=float, default=None,
                    help="the statement timeout of the random starts and forced orders "
                         "(default: --statement-timeout's)")
    ap.add_argument("--no-warmup", action="store_true",
                    help="no untimed eddy-off run of each query before the rounds")
    return ap


def add_workload_arguments(ap: argparse.ArgumentParser) -> None:
    """The options of the workload itself (data, queries, rounds, session
    settings, bootstrap, loader), which eddytools.ab_builds shares."""
    ap.add_argument("--scale", type=float, default=None,
                    help=f"scale of the data set (default: 1; --quick: {QUICK_SCALE:g})")
    ap.add_argument("--data-seed", type=int, default=0, help="seed of the data (default: 0)")
    ap.add_argument("--query-seed", type=int, default=0,
                    help="seed of the query generator (default: 0)")
    ap.add_argument("--count", type=int, default=misest.DEFAULT_COUNT,
                    help=f"queries generated (default: {misest.DEFAULT_COUNT})")
    ap.add_argument("--queries", type=harness.csv_list(), default=None,
                    help="comma-separated query names (m01, ...) to run (default: all; "
                         f"--quick: the first {QUICK_QUERIES})")
    ap.add_argument("--rounds", type=int, default=None, help="rounds (default: 5; --quick: 1)")
    ap.add_argument("--workers", type=int, default=0,
                    help="max_parallel_workers_per_gather (default: 0)")
    ap.add_argument("--jit", choices=("off", "on"), default="off",
                    help="the session's jit (default: off; on is PostgreSQL's default, whose "
                         "compilation, tens of milliseconds a query, both modes pay)")
    ap.add_argument("--statement-timeout", type=float, default=None,
                    help="seconds after which a run is cancelled and counted as a timeout "
                         "(default: 60; --quick: 30)")
    ap.add_argument("--bootstrap-seed", type=int, default=0,
                    help="seed of the bootstrap resampling (default: 0)")
    ap.add_argument("--dbname", default=None,
                    help="the workload's database (default: misest_s<scale>)")
    ap.add_argument("--master", default="local[*]", help="Spark master of the loader")


def resolve_workload(args: argparse.Namespace) -> None:
    """The defaults of add_workload_arguments' options that --quick changes."""
    if args.scale is None:
        args.scale = QUICK_SCALE if args.quick else 1.0
    if args.rounds is None:
        args.rounds = 1 if args.quick else 5
    if args.statement_timeout is None:
        args.statement_timeout = 30.0 if args.quick else 60.0


def resolve(args: argparse.Namespace) -> None:
    resolve_workload(args)
    if args.spread_timeout is None:
        args.spread_timeout = args.statement_timeout
    if args.random_starts is None:
        args.random_starts = 0 if args.quick else 5
    if args.quick:
        args.no_warmup = True


def select(args: argparse.Namespace) -> list[misest.Query] | str:
    queries = misest.generate(args.query_seed, args.count)
    if args.queries is None:
        return queries[:QUICK_QUERIES] if args.quick else queries
    names = {q.name: q for q in queries}
    bad = [n for n in args.queries if n not in names]
    if bad:
        return f"unknown queries {', '.join(bad)} (m01 .. m{args.count:02d})"
    return [names[n] for n in args.queries]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    resolve(args)
    if (args.rounds < 1 or args.scale <= 0 or args.count < 1 or args.workers < 0
            or args.random_starts < 0):
        print("robustness: --rounds >= 1, --scale > 0, --count >= 1, --workers >= 0, "
              "--random-starts >= 0", file=sys.stderr)
        return 2
    queries = select(args)
    if isinstance(queries, str):
        print(f"robustness: {queries}", file=sys.stderr)
        return 2
    dbname = args.dbname or dbname_for(args.scale, args.data_seed)
    settings = harness.settings_record(args, PROG, argv)
    settings["dbname"] = dbname
    settings["session_settings"] = session_settings(args)
    result = Result(settings=settings)
    result.queries = [{"name": q.name, "kinds": list(q.kinds), "relations": q.relations,
                       "sql": q.sql} for q in queries]

    def run() -> None:
        result.load = prepare_data(args.dsn, dbname, args)
        db_dsn = with_dbname(args.dsn, dbname)
        with connect(db_dsn) as conn:
            preload = harness.load_eddy(conn)
            result.environment = harness.environment(conn)
            result.environment["eddy_settings"] = harness.eddy_settings(conn)
        measure(db_dsn, args, queries, result, preload)

    def conclude() -> tuple[str, str]:
        summarize(result, queries, args)
        write_results(result, args.out)
        png = None if args.no_plots else plot(result, args.out)
        return report(result), (f"{args.out}/measurements.csv, summary.csv, "
                                + ("spread.csv, " if result.spread else "")
                                + "results.json, summary.md"
                                + (f", {png.name}" if png else ""))

    return harness.run("robustness", result, run, conclude)


def cli() -> None:
    sys.exit(main())


if __name__ == "__main__":
    cli()
