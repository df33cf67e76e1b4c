"""TPC-H with the eddy on and off: the 22 queries at a scale factor, under
PostgreSQL's default settings and with a larger work_mem, serial and
parallel (the measuring instrument of issue 13).

    python -m eddytools.tpch_bench --dsn "host=... dbname=postgres"            # SF 1
    python -m eddytools.tpch_bench --dsn "host=... dbname=postgres" --quick    # SF 0.1

Data: eddytools.tpch (tpchgen-cli, the specification's schema, primary keys,
foreign keys with an index on each, VACUUM ANALYZE), loaded once into a
database of its own on the server of --dsn (tpch_sf<scale>, e.g. tpch_sf1),
which is kept: the next run at the same scale reuses it (--reload drops it).

Configurations (session settings on top of jit = off; everything else is the
server's, eddy.* at their defaults):

  default        work_mem = 4MB, max_parallel_workers_per_gather = 2
                 (PostgreSQL's defaults)
  wm64-serial    work_mem = 64MB, max_parallel_workers_per_gather = 0
  wm64-parallel  work_mem = 64MB, max_parallel_workers_per_gather = 2
  default-serial work_mem = 4MB, max_parallel_workers_per_gather = 0 (only
                 with --configs: PostgreSQL's defaults when no parallel
                 worker is free, or for a query that cannot run in parallel)

Method: per configuration and query, the plan is read once with EXPLAIN
under eddy.enabled = on (an Eddy node in it or not; the planner's reasons
for declining, logged at DEBUG1, caught as notices with client_min_messages
= debug1) and off.  Then in every round each query runs three times, each
run in a fresh connection: eddy on, eddy off, and eddy off again (the A/A
twin, which measures the noise of the measurement itself), in the order on,
off, aa, then off, aa, on, then aa, on, off (round_order); a short query's
three run again, in the next order, until its eddy-off runs have taken
--min-seconds in the round (at most --max-repeats times), so that a 50 ms
query gets as many runs as the machine's noise needs.  A run's time is the
wall-clock time of execute + fetch of all rows, measured by the client.  Its
memory, read from /proc/<backend pid>/status (a local server only; the
backend is fresh, so its peaks are this query's; parallel workers are other
processes and are not counted): VmHWM, the peak resident set after the
fetch, which also counts every shared_buffers page the backend touched; and
the peak of RssAnon, the backend's private memory (hash tables, sorts, eddy
state), sampled every 5 ms while the query runs.  The values of the fresh
backend before the query are recorded as its baseline.  Medians over all
runs: ratio = median(on) / median(off), A/A = median(aa) / median(off); and
paired, per repeat of the three modes (which ran back to back): paired =
median over the repeats of on / off, paired A/A = median of aa / off.  The
machine's speed drifts over minutes, and a paired ratio compares runs made
within seconds of each other, so its A/A spread is about half the other's
(docs/tpch/README.md); the goal's line "no query over 1.10x" is counted
both ways.  With --confirm N, the (configuration, query) pairs whose paired
ratio is over --confirm-over (1.10) after the rounds run N more rounds, and
the summary is over all of their runs; the first pass's figures are kept
next to the final ones (results.json "confirmed", README.md).  Every
run's result must equal the first eddy-off run's (as a multiset of rows; as
a sequence where the query's ORDER BY is total, and ORDER BY keys in the
same sequence otherwise, eddytools.tpch.QUERIES): a difference, or an error
in one run that the other did not have, is reported on stderr and in
results.json and makes the exit status 3.

Output in --out/sf<scale>/: measurements.csv (every run), summary.csv (per
configuration and query), results.json (settings, environment and machine,
plans with the planner's reasons, runs, summary, totals, errors), README.md
(the totals and the per-query table) and ratio.png (eddy on / off per query,
one bar per configuration, hatched where the plan has no Eddy, A/A as dots).
The settings record the command line, the environment the git commit of
the build and whether its work tree was dirty (eddytools.harness, shared
with the other benchmarks).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from eddytools import harness, tpch
from eddytools.db import apply_settings, connect, ensure_eddy, multiset, sql_value
from eddytools.harness import Table, csv_list, median_or_none
from eddytools.tpch import QUERIES, TpchQuery

PROG = "eddytools.tpch_bench"
CONFIGS: dict[str, dict[str, str]] = {
    "default": {"work_mem": "4MB", "max_parallel_workers_per_gather": "2"},
    "wm64-serial": {"work_mem": "64MB", "max_parallel_workers_per_gather": "0"},
    "wm64-parallel": {"work_mem": "64MB", "max_parallel_workers_per_gather": "2"},
    # not run unless asked for (--configs): the defaults with no worker free
    "default-serial": {"work_mem": "4MB", "max_parallel_workers_per_gather": "0"},
}
DEFAULT_CONFIGS = ["default", "wm64-serial", "wm64-parallel"]
COMMON = {"jit": "off"}
MODES = ("on", "off", "aa")          # aa: eddy off again, the A/A twin of off
EDDY_ENABLED = {"on": "on", "off": "off", "aa": "off"}
QUICK_SCALE = 0.1
MARKER = "tpch_bench_loaded"         # table written once the load has finished


class Mismatch(Exception):
    """Two runs of a query returned different results."""


@dataclass
class Run:
    config: str
    query: str
    mode: str
    round: int
    seconds: float | None
    rows: int | None
    vmhwm_kb: int | None           # peak resident set after the query (VmHWM)
    baseline_kb: int | None        # VmHWM of the fresh backend before it
    rss_shmem_kb: int | None       # shared memory resident after the query
    anon_peak_kb: int | None       # peak private memory (RssAnon, sampled)
    anon_baseline_kb: int | None   # RssAnon of the fresh backend before the query
    error: str | None = None


@dataclass
class Plan:
    config: str
    query: str
    eddy_nodes: int                # Eddy nodes in the plan with the eddy on
    parallel_on: bool              # a Gather in the plan, eddy on / off
    parallel_off: bool
    reasons: list[str]             # the planner's DEBUG1 messages about eddies
    text_on: str
    text_off: str


@dataclass
class SummaryRow:
    """One (configuration, query): a row of summary.csv.  Times are medians
    in ms over the runs of a mode (None where no run succeeded); ratios are
    eddy on / off and A/A (aa / off), of the medians and paired (per repeat,
    harness.paired_ratios); memory in kB (peak_*: VmHWM, anon_*: peak
    RssAnon, *_baseline_kb: the fresh backend's)."""
    config: str
    query: str
    eddy: bool                     # an Eddy node in the plan with the eddy on
    eddy_nodes: int
    parallel_on: bool
    parallel_off: bool
    n: int                         # successful eddy-on runs
    on_ms: float | None
    off_ms: float | None
    aa_ms: float | None
    ratio: float | None
    ratio_min: float | None        # of the paired ratios
    ratio_max: float | None
    aa_ratio: float | None
    paired_ratio: float | None
    paired_aa_ratio: float | None
    peak_on_kb: float | None
    peak_off_kb: float | None
    peak_ratio: float | None
    baseline_kb: float | None
    anon_on_kb: float | None
    anon_off_kb: float | None
    anon_ratio: float | None
    anon_baseline_kb: float | None
    rows: float | None             # rows returned (median of the eddy-off runs)
    reasons: str                   # the planner's reasons where the plan has no Eddy
    errors: str


@dataclass
class PeakMemory:
    """A query among a configuration's three with the most private memory
    under the eddy (kB)."""
    query: str
    on_kb: float | None
    off_kb: float | None
    vmhwm_on_kb: float | None
    vmhwm_off_kb: float | None


@dataclass
class Totals:
    """One configuration over its queries (results.json "totals", the
    README's first table).  Sums and ratios are over the complete queries
    (every mode ran); "paired" ones over those with paired ratios too."""
    config: str
    queries: int
    eddy_plans: int
    on_ms: float
    off_ms: float
    aa_ms: float
    total_ratio: float | None
    total_aa_ratio: float | None
    eddy_total_ratio: float | None   # over the queries whose plan has an Eddy
    worst_query: str | None
    worst_ratio: float | None
    best_ratio: float | None
    over_1_10: int
    worst_paired_query: str | None
    worst_paired_ratio: float | None
    over_1_10_paired: int
    # of those, the ones whose plan has an Eddy (the others' plans are
    # PostgreSQL's both ways: their ratios are the machine's)
    over_1_10_paired_eddy: int
    paired_aa_min: float | None
    paired_aa_max: float | None
    aa_min: float | None
    aa_max: float | None
    aa_worst_query: str | None
    peak_top: list[PeakMemory]
    anon_over_off: int
    baseline_kb: float | None
    anon_baseline_kb: float | None
    errors: int                    # queries with an error in a run


@dataclass
class Confirmed:
    """A suspect of the --confirm stage: its figures after the rounds
    (first_*) and over all of its runs."""
    config: str
    query: str
    rounds_added: int
    first_paired_ratio: float | None
    first_paired_aa_ratio: float | None
    first_ratio: float | None
    first_n: int
    paired_ratio: float | None
    paired_aa_ratio: float | None
    ratio: float | None
    n: int


@dataclass
class Result(harness.Result[Run]):
    load: dict = field(default_factory=dict)
    plans: list[Plan] = field(default_factory=list)
    summary: list[SummaryRow] = field(default_factory=list)
    totals: list[Totals] = field(default_factory=list)
    confirmed: list[Confirmed] = field(default_factory=list)   # the --confirm stage's suspects

    def document(self) -> dict[str, Any]:
        return {"settings": self.settings, "environment": self.environment,
                "load": self.load, "configs": {c: {**COMMON, **CONFIGS[c]}
                                               for c in self.settings["configs"]},
                "totals": self.totals, "summary": self.summary, "plans": self.plans,
                "runs": self.runs, "confirmed": self.confirmed, "errors": self.errors}


# --------------------------------------------------------------------------- data

def dbname_for(scale: float) -> str:
    return "tpch_sf" + f"{scale:g}".replace(".", "_")


def with_dbname(dsn: str, dbname: str) -> str:
    params = psycopg.conninfo.conninfo_to_dict(dsn)
    params["dbname"] = dbname
    return psycopg.conninfo.make_conninfo(**params)   # type: ignore[arg-type]


def ensure_loaded(dsn: str, dbname: str, scale: float, reload: bool, quiet: bool) -> dict:
    """The TPC-H database at ``scale``: reused when a finished load of the same
    scale is there, else (re)created and loaded.  Returns the load's record."""
    with connect(dsn) as maint:
        exists = sql_value(maint, "SELECT count(*) FROM pg_database WHERE datname = %s",
                           (dbname,)) > 0
    bench_dsn = with_dbname(dsn, dbname)
    if exists and not reload:
        with connect(bench_dsn) as conn:
            if sql_value(conn, "SELECT to_regclass(%s) IS NOT NULL", (MARKER,)):
                row = conn.execute(f"SELECT scale, loaded, counts, seconds FROM {MARKER}"
                                   ).fetchone()
                if row is not None and float(row[0]) == scale:
                    return {"scale": float(row[0]), "loaded": row[1].isoformat(),
                            "counts": row[2], "load_seconds": float(row[3]), "reused": True}
    with connect(dsn) as maint:
        maint.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(dbname)))
        maint.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
    if not quiet:
        print(f"tpch_bench: loading TPC-H SF {scale:g} into {dbname} ...", file=sys.stderr)
    t0 = time.monotonic()
    with connect(bench_dsn) as conn:
        ensure_eddy(conn)
        counts = tpch.load(conn, scale)
        seconds = time.monotonic() - t0
        conn.execute(f"CREATE TABLE {MARKER} (scale float8, loaded timestamptz, "
                     "counts jsonb, seconds float8)")
        conn.execute(f"INSERT INTO {MARKER} VALUES (%s, now(), %s, %s)",
                     (scale, json.dumps(counts), seconds))
    if not quiet:
        print(f"tpch_bench: loaded in {seconds:.0f} s: {counts}", file=sys.stderr)
    return {"scale": scale, "loaded": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "counts": counts, "load_seconds": round(seconds, 1), "reused": False}


# --------------------------------------------------------------------------- results

def canon(rows: list[tuple]) -> list[tuple]:
    """Rows comparable as a sequence, numeric scale included (1.50 is not 1.5)."""
    return [tuple(repr(v) for v in row) for row in rows]


def compare(q: TpchQuery, got: list[tuple], want: list[tuple]) -> str | None:
    """None when ``got`` is the same result as ``want`` for query ``q``: the
    same multiset of rows, and the same sequence of rows where the ORDER BY
    is total, of ORDER BY keys otherwise; else what differs."""
    if len(got) != len(want):
        return f"{len(got)} rows against {len(want)}"
    if q.total_order:
        if canon(got) != canon(want):
            first = next(i for i, (a, b) in enumerate(zip(canon(got), canon(want), strict=True))
                         if a != b)
            return f"row {first} differs: {got[first]} against {want[first]}"
        return None
    keys = [tuple(repr(r[i]) for i in q.order_keys) for r in got]
    if keys != [tuple(repr(r[i]) for i in q.order_keys) for r in want]:
        return "ORDER BY keys in another sequence"
    if multiset(got) != multiset(want):
        extra = multiset(got) - multiset(want)
        return f"rows differ ({sum(extra.values())} not in the reference)"
    return None


# --------------------------------------------------------------------------- measuring

PROC_FIELDS = ("VmHWM", "VmRSS", "RssAnon", "RssFile", "RssShmem")


def proc_status(pid: int) -> dict[str, int] | None:
    """The memory fields (kB) of a local backend's /proc/<pid>/status, or None
    when the server is not on this machine (or the pid is not a backend)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        if not cmdline.startswith(b"postgres"):
            return None
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    out = {}
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name in PROC_FIELDS:
            out[name] = int(value.split()[0])
    return out


class AnonSampler(threading.Thread):
    """Samples a backend's RssAnon every ``interval`` seconds while a query
    runs: VmHWM counts every page of shared_buffers the backend touched, so
    the private memory a query's hash tables and eddy state take is read
    from RssAnon, whose peak the kernel does not keep."""

    def __init__(self, pid: int, interval: float = 0.005) -> None:
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.peak: int | None = None
        self._stop_event = threading.Event()

    def sample(self) -> None:
        status = proc_status(self.pid)
        if status is not None and "RssAnon" in status:
            self.peak = max(self.peak or 0, status["RssAnon"])

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            self.sample()

    def finish(self) -> int | None:
        self._stop_event.set()
        self.join()
        self.sample()
        return self.peak


def session(dsn: str, config: str, mode: str, preload: bool) -> psycopg.Connection:
    conn = connect(dsn)
    if not preload:
        conn.execute("LOAD 'eddy'")
    apply_settings(conn, {**COMMON, **CONFIGS[config], "eddy.enabled": EDDY_ENABLED[mode]})
    return conn


def explain(dsn: str, config: str, q: TpchQuery, preload: bool) -> Plan:
    """The plans with the eddy on and off, and the planner's messages about eddies."""
    texts = {}
    reasons: list[str] = []
    for mode in ("on", "off"):
        with session(dsn, config, mode, preload) as conn:
            def handler(diag: psycopg.errors.Diagnostic) -> None:
                msg = diag.message_primary or ""
                if msg.startswith("eddy") and msg not in reasons:
                    reasons.append(msg)
            if mode == "on":
                conn.add_notice_handler(handler)
                conn.execute("SET client_min_messages = debug1")
            texts[mode] = "\n".join(r[0] for r in conn.execute(f"EXPLAIN {q.sql}"))
    return Plan(config, q.name, len(re.findall(r"\(Eddy\)", texts["on"])),
                "Gather" in texts["on"], "Gather" in texts["off"], reasons,
                texts["on"], texts["off"])


def timed_run(dsn: str, config: str, q: TpchQuery, mode: str, rnd: int, preload: bool,
              timeout_s: float) -> tuple[Run, list[tuple] | None]:
    """One run of ``q`` in a fresh connection: time, rows and the backend's memory."""
    conn = session(dsn, config, mode, preload)
    try:
        if timeout_s > 0:
            conn.execute("SELECT set_config('statement_timeout', %s, false)",
                         (f"{int(timeout_s * 1000)}",))
        pid = conn.info.backend_pid
        before = proc_status(pid) or {}
        sampler = AnonSampler(pid) if before else None
        if sampler is not None:
            sampler.start()
        try:
            t0 = time.perf_counter()
            rows = conn.execute(q.sql).fetchall()
            seconds = time.perf_counter() - t0
        except psycopg.Error as e:
            if sampler is not None:
                sampler.finish()
            msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            if conn.broken:
                msg = f"connection lost (backend crash?): {msg}"
            return Run(config, q.name, mode, rnd, None, None, None, before.get("VmHWM"),
                       None, None, before.get("RssAnon"),
                       f"{getattr(e, 'sqlstate', None) or ''} {msg}".strip()), None
        anon_peak = sampler.finish() if sampler is not None else None
        after = proc_status(pid) or {}
        return Run(config, q.name, mode, rnd, seconds, len(rows), after.get("VmHWM"),
                   before.get("VmHWM"), after.get("RssShmem"), anon_peak,
                   before.get("RssAnon")), rows
    finally:
        conn.close()


def round_order(rnd: int) -> tuple[str, ...]:
    """on, off, aa; then off, aa, on; then aa, on, off (and again): in every
    three rounds each mode runs first, second and third once, so a first run
    that pays for what the previous query evicted from shared_buffers (Q11
    after Q10 reads partsupp again) is one of each mode's three, and their
    median leaves it out.  (Alternating on, off, aa with aa, off, on put eddy
    on first in two of three rounds: Q11 showed 1.7-2.0x that warm runs
    side by side do not, 0.99-1.19x.)"""
    return tuple(harness.rotated(MODES, rnd))


def measure(dsn: str, args: argparse.Namespace, result: Result, preload: bool) -> Checked:
    queries = [QUERIES[n] for n in args.queries]
    for config in args.configs:
        for q in queries:
            plan = explain(dsn, config, q, preload)
            result.plans.append(plan)
            if not args.no_progress:
                print(f"tpch_bench: {config} {q.name}: "
                      f"{'eddy' if plan.eddy_nodes else 'no eddy'}"
                      + (f" ({'; '.join(plan.reasons)})" if plan.reasons and not plan.eddy_nodes
                         else ""), file=sys.stderr)
    if not args.no_warmup:
        # one untimed run per query first: the first timed round then finds
        # the tables as warm as the later ones (Q11, first after Q10, paid
        # for reading partsupp in whichever mode came first)
        for config in args.configs:
            for q in queries:
                timed_run(dsn, config, q, "off", -1, preload, args.statement_timeout)
    checked = Checked()
    for rnd in range(args.rounds):
        for config in args.configs:
            for q in queries:
                measure_round(dsn, args, result, preload, rnd, config, q, checked)
    return checked


@dataclass
class Checked:
    """What the result check has seen: the first eddy-off run's result per
    (configuration, query), and the differences already reported."""
    reference: dict[tuple[str, str], list[tuple] | str] = field(default_factory=dict)
    failed: set[tuple[str, str, str]] = field(default_factory=set)


def measure_round(dsn: str, args: argparse.Namespace, result: Result, preload: bool,
                  rnd: int, config: str, q: TpchQuery, checked: Checked) -> None:
    """One round of one query under one configuration: the three modes, again
    while eddy off has taken less than --min-seconds (--max-repeats at most),
    every result checked against the reference."""
    spent_off = 0.0
    for rep in range(args.max_repeats):
        outcomes: dict[str, list[tuple] | str] = {}
        line = []
        for mode in round_order(rnd + rep):
            run, rows = timed_run(dsn, config, q, mode, rnd, preload, args.statement_timeout)
            result.runs.append(run)
            outcomes[mode] = rows if rows is not None else f"error: {run.error}"
            line.append(f"{mode} " + (f"{run.seconds * 1e3:.0f} ms"
                                      if run.seconds is not None else "ERROR"))
            if mode == "off":
                spent_off += run.seconds if run.seconds is not None else 1e9
        ref = checked.reference.setdefault((config, q.name), outcomes["off"])
        for mode, outcome in outcomes.items():
            what = check(q, outcome, ref)
            if what and (config, q.name, mode) not in checked.failed:
                checked.failed.add((config, q.name, mode))
                msg = (f"RESULT DIFFERS: {q.name} under {config}, eddy "
                       f"{EDDY_ENABLED[mode]} ({mode}), round {rnd}: {what}")
                result.errors.append(msg)
                print(f"tpch_bench: {msg}", file=sys.stderr)
        if not args.no_progress:
            print(f"tpch_bench: round {rnd}" + (f".{rep}" if rep else "")
                  + f" {config} {q.name}: {', '.join(line)}", file=sys.stderr)
        if spent_off >= args.min_seconds:
            break


def confirm(dsn: str, args: argparse.Namespace, result: Result, preload: bool,
            checked: Checked) -> None:
    """The confirmation stage (--confirm N): every (configuration, query)
    whose paired ratio after the rounds is over --confirm-over runs N more
    rounds (numbered on from --rounds, the same method), and the summary is
    made again over all of its runs.  A paired ratio of one run of each mode
    a round spreads by 10-30% on a shared machine (the A/A columns), so a
    query over the line after 5 rounds may be the machine's; this measures
    the suspects again rather than every query, and records the first pass's
    figures next to the final ones (result.confirmed), so nothing is hidden.
    The rounds are added only to the suspects: a query under the line stays
    as measured, so the stage can only make a count of queries over the line
    more exact, never hide one that the rounds did not flag."""
    summarize(result, args)
    first = {(r.config, r.query): r for r in result.summary}
    suspects = [(c, n) for c in args.configs for n in args.queries
                if (first[(c, QUERIES[n].name)].paired_ratio or 0) > args.confirm_over]
    if not suspects:
        return
    if not args.no_progress:
        print("tpch_bench: confirming " + ", ".join(f"{c} {QUERIES[n].name}"
                                                     for c, n in suspects)
              + f" with {args.confirm} more round(s)", file=sys.stderr)
    for extra in range(args.confirm):
        for config, n in suspects:
            measure_round(dsn, args, result, preload, args.rounds + extra, config,
                          QUERIES[n], checked)
    summarize(result, args)
    final = {(r.config, r.query): r for r in result.summary}
    for config, n in suspects:
        key = (config, QUERIES[n].name)
        result.confirmed.append(Confirmed(
            config=config, query=key[1], rounds_added=args.confirm,
            first_paired_ratio=first[key].paired_ratio,
            first_paired_aa_ratio=first[key].paired_aa_ratio,
            first_ratio=first[key].ratio, first_n=first[key].n,
            paired_ratio=final[key].paired_ratio, paired_aa_ratio=final[key].paired_aa_ratio,
            ratio=final[key].ratio, n=final[key].n))


def check(q: TpchQuery, outcome: list[tuple] | str, ref: list[tuple] | str) -> str | None:
    """What differs between a run's outcome (rows or an error) and the reference's."""
    if isinstance(outcome, str) or isinstance(ref, str):
        if isinstance(outcome, str) and isinstance(ref, str):
            return None   # both failed (the error itself is in the run)
        return outcome if isinstance(outcome, str) else f"succeeded where the reference {ref}"
    return compare(q, outcome, ref)


# --------------------------------------------------------------------------- summary

def summarize(result: Result, args: argparse.Namespace) -> None:
    plans = {(p.config, p.query): p for p in result.plans}
    by: dict[tuple[str, str, str], list[Run]] = {}
    for r in result.runs:
        by.setdefault((r.config, r.query, r.mode), []).append(r)
    rows: list[SummaryRow] = []
    for config in args.configs:
        for n in args.queries:
            name = QUERIES[n].name
            p = plans[(config, name)]
            med = {m: median_or_none([r.seconds for r in by.get((config, name, m), [])])
                   for m in MODES}
            hwm = {m: median_or_none([r.vmhwm_kb for r in by.get((config, name, m), [])])
                   for m in MODES}
            anon = {m: median_or_none([r.anon_peak_kb for r in by.get((config, name, m), [])])
                    for m in MODES}
            errors = sorted({f"{r.mode}: {r.error}" for m in MODES
                             for r in by.get((config, name, m), []) if r.error})
            ratio = med["on"] / med["off"] if med["on"] and med["off"] else None
            aa = med["aa"] / med["off"] if med["aa"] and med["off"] else None
            ratios = paired_ratios(by.get((config, name, "on"), []),
                                   by.get((config, name, "off"), []))
            aa_ratios = paired_ratios(by.get((config, name, "aa"), []),
                                      by.get((config, name, "off"), []))
            rows.append(SummaryRow(
                config=config, query=name, eddy=p.eddy_nodes > 0,
                eddy_nodes=p.eddy_nodes, parallel_on=p.parallel_on,
                parallel_off=p.parallel_off,
                n=len([r for r in by.get((config, name, "on"), []) if r.seconds]),
                on_ms=ms_or_none(med["on"]), off_ms=ms_or_none(med["off"]),
                aa_ms=ms_or_none(med["aa"]),
                ratio=ratio, ratio_min=min(ratios) if ratios else None,
                ratio_max=max(ratios) if ratios else None, aa_ratio=aa,
                paired_ratio=median_or_none(ratios), paired_aa_ratio=median_or_none(aa_ratios),
                peak_on_kb=hwm["on"], peak_off_kb=hwm["off"],
                peak_ratio=(hwm["on"] / hwm["off"]) if hwm["on"] and hwm["off"] else None,
                baseline_kb=median_or_none([r.baseline_kb for m in MODES
                                        for r in by.get((config, name, m), [])]),
                anon_on_kb=anon["on"], anon_off_kb=anon["off"],
                anon_ratio=(anon["on"] / anon["off"]) if anon["on"] and anon["off"] else None,
                anon_baseline_kb=median_or_none([r.anon_baseline_kb for m in MODES
                                             for r in by.get((config, name, m), [])]),
                rows=median_or_none([r.rows for r in by.get((config, name, "off"), [])]),
                reasons=" | ".join(p.reasons) if not p.eddy_nodes else "",
                errors=" | ".join(errors),
            ))
    result.summary = rows
    result.totals = [totals_of(config, [r for r in rows if r.config == config])
                     for config in args.configs]


def totals_of(config: str, rows: list[SummaryRow]) -> Totals:
    """The totals of one configuration's summary rows."""
    def known(v: float | None) -> float:
        assert v is not None    # a complete query's times and ratios are there
        return v

    complete = [r for r in rows if r.on_ms and r.off_ms and r.aa_ms]
    with_eddy = [r for r in complete if r.eddy]
    worst = max(complete, key=lambda r: known(r.ratio), default=None)
    paired = [r for r in complete if r.paired_ratio and r.paired_aa_ratio]
    worst_paired = max(paired, key=lambda r: known(r.paired_ratio), default=None)
    aa_dev = max(complete, key=lambda r: max(known(r.aa_ratio), 1 / known(r.aa_ratio)),
                 default=None)
    peaks = sorted((r for r in rows if r.anon_on_kb), key=lambda r: -known(r.anon_on_kb))
    on_ms = sum(known(r.on_ms) for r in complete)
    off_ms = sum(known(r.off_ms) for r in complete)
    aa_ms = sum(known(r.aa_ms) for r in complete)
    return Totals(
        config=config, queries=len(rows), eddy_plans=sum(r.eddy for r in rows),
        on_ms=on_ms, off_ms=off_ms, aa_ms=aa_ms,
        total_ratio=ratio_or_none(on_ms, off_ms),
        total_aa_ratio=ratio_or_none(aa_ms, off_ms),
        eddy_total_ratio=ratio_or_none(sum(known(r.on_ms) for r in with_eddy),
                                       sum(known(r.off_ms) for r in with_eddy)),
        worst_query=worst.query if worst else None,
        worst_ratio=worst.ratio if worst else None,
        best_ratio=min((known(r.ratio) for r in complete), default=None),
        over_1_10=sum(known(r.ratio) > 1.10 for r in complete),
        worst_paired_query=worst_paired.query if worst_paired else None,
        worst_paired_ratio=worst_paired.paired_ratio if worst_paired else None,
        over_1_10_paired=sum(known(r.paired_ratio) > 1.10 for r in paired),
        over_1_10_paired_eddy=sum(known(r.paired_ratio) > 1.10 for r in paired if r.eddy),
        paired_aa_min=min((known(r.paired_aa_ratio) for r in paired), default=None),
        paired_aa_max=max((known(r.paired_aa_ratio) for r in paired), default=None),
        aa_min=min((known(r.aa_ratio) for r in complete), default=None),
        aa_max=max((known(r.aa_ratio) for r in complete), default=None),
        aa_worst_query=aa_dev.query if aa_dev else None,
        peak_top=[PeakMemory(r.query, r.anon_on_kb, r.anon_off_kb, r.peak_on_kb,
                             r.peak_off_kb) for r in peaks[:3]],
        anon_over_off=sum(1 for r in rows if r.anon_ratio and r.anon_ratio > 1.10),
        baseline_kb=median_or_none([r.baseline_kb for r in rows]),
        anon_baseline_kb=median_or_none([r.anon_baseline_kb for r in rows]),
        errors=sum(bool(r.errors) for r in rows))


def paired_ratios(runs: list[Run], refs: list[Run]) -> list[float]:
    """Per repeat of the three modes, the time of runs[k] over refs[k] (the
    k-th run of each mode belong to one repeat: they ran back to back)."""
    return harness.paired_ratios(dict(enumerate(r.seconds for r in runs)),
                                 dict(enumerate(r.seconds for r in refs)))


def ms_or_none(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e3


def ratio_or_none(a: float, b: float) -> float | None:
    return a / b if b else None


def num(v: Any, fmt: str = ".2f") -> str:
    """A number as text (``fmt``), "-" for None."""
    return "-" if v is None else format(v, fmt)


def kb_as_mb(kb: Any) -> str:
    """kB as whole MB, "-" for None."""
    return "-" if kb is None else f"{kb / 1024:.0f}"


def summary_table(result: Result) -> str:
    lines = []
    for t in result.totals:
        lines.append(
            f"{t.config}: eddy in {t.eddy_plans} of {t.queries} plans; total "
            f"{num(t.on_ms / 1e3)} s on / {num(t.off_ms / 1e3)} s off = "
            f"{num(t.total_ratio)}x (eddy plans only {num(t.eddy_total_ratio)}x); worst "
            f"{t.worst_query} {num(t.worst_ratio)}x, {t.over_1_10} over 1.10x; A/A "
            f"{num(t.aa_min)}-{num(t.aa_max)} (total {num(t.total_aa_ratio)}); paired: "
            f"worst {t.worst_paired_query} {num(t.worst_paired_ratio)}x, "
            f"{t.over_1_10_paired} over 1.10x ({t.over_1_10_paired_eddy} with an eddy), "
            f"A/A {num(t.paired_aa_min)}-{num(t.paired_aa_max)}; private "
            "memory peak " + ", ".join(f"{p.query} {kb_as_mb(p.on_kb)}/{kb_as_mb(p.off_kb)} MB"
                                       for p in t.peak_top)
            + f" (on/off; fresh backend {kb_as_mb(t.anon_baseline_kb)} MB private, VmHWM "
            f"{kb_as_mb(t.baseline_kb)} MB)")
    lines.append("")
    lines.append(f"{'config':<14} {'query':<5} {'eddy':<4} {'off ms':>9} {'on ms':>9} "
                 f"{'on/off':>6} {'A/A':>5} {'paired':>6} {'p.A/A':>5} "
                 f"{'MB on':>6} {'MB off':>6} {'HWM on':>6} {'HWM off':>7}"
                 "  reason / error")
    for r in result.summary:
        note = r.errors or r.reasons
        lines.append(
            f"{r.config:<14} {r.query:<5} {'yes' if r.eddy else 'no':<4} "
            f"{num(r.off_ms, '.1f'):>9} {num(r.on_ms, '.1f'):>9} {num(r.ratio):>6} "
            f"{num(r.aa_ratio):>5} {num(r.paired_ratio):>6} {num(r.paired_aa_ratio):>5} "
            f"{kb_as_mb(r.anon_on_kb):>6} {kb_as_mb(r.anon_off_kb):>6} "
            f"{kb_as_mb(r.peak_on_kb):>6} {kb_as_mb(r.peak_off_kb):>7}  {note[:100]}")
    for c in result.confirmed:
        lines.append(f"confirmed {c.config} {c.query}: paired {num(c.first_paired_ratio)}"
                     f" (A/A {num(c.first_paired_aa_ratio)}) after {c.first_n} runs, "
                     f"{num(c.paired_ratio)} (A/A {num(c.paired_aa_ratio)}) after {c.n}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- output

def environment(conn: psycopg.Connection) -> dict:
    def cpu_model() -> str | None:
        try:
            for line in Path("/proc/cpuinfo").read_text().splitlines():
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
        except OSError:
            pass
        return None

    def mem_total_kb() -> int | None:
        try:
            for line in Path("/proc/meminfo").read_text().splitlines():
                if line.startswith("MemTotal:"):
                    return int(line.split()[1])
        except OSError:
            pass
        return None

    server = {name: harness.show(conn, name) for name in (
        "server_version", "debug_assertions", "shared_preload_libraries", "shared_buffers",
        "effective_cache_size", "max_worker_processes", "max_parallel_workers",
        "random_page_cost", "huge_pages")}
    eddy: dict[str, str] = dict(conn.execute(
        "SELECT name, setting FROM pg_settings WHERE name LIKE 'eddy.%' ORDER BY name"
    ).fetchall())
    record = harness.environment(conn)
    record["load_average_start"] = record.pop("load_average")
    return {
        **record,
        "machine": platform.machine(), "kernel": platform.release(),
        "cpu_model": cpu_model(), "mem_total_kb": mem_total_kb(),
        "psycopg": psycopg.__version__,
        "server": server, "eddy_settings": eddy,
    }


def write_results(result: Result, out: Path) -> None:
    tables = [Table("measurements.csv", result.runs, harness.run_columns(Run),
                    {"seconds": ".6f"})]
    if result.summary:
        tables.append(Table("summary.csv", result.summary))
    harness.write_results(result, out, tables)
    (out / "README.md").write_text(report(result))


def report(result: Result) -> str:
    s, env = result.settings, result.environment
    fresh_anon = median_or_none([t.anon_baseline_kb for t in result.totals])
    fresh_hwm = median_or_none([t.baseline_kb for t in result.totals])
    lines = [
        f"# TPC-H SF {s['scale']:g}, eddy on against off",
        "",
        f"Measured {env.get('date')} on {env.get('cpus')} CPUs ({env.get('cpu_model')}), "
        f"PostgreSQL {env.get('server', {}).get('server_version')}, eddy "
        f"{env.get('eddy_version')} (commit {str(env.get('git_commit'))[:10]}), "
        f"{s['rounds']} round(s), a short query's runs repeated within a round until eddy "
        f"off took {s.get('min_seconds', 0):g} s (at most {s.get('max_repeats', 1)} times), "
        f"medians; {result.environment.get('seconds')} s in all.",
        "",
        "Command: `" + s["command"] + "`",
        "",
        "Method: see `python -m eddytools.tpch_bench --help` and ../README.md. "
        "Ratios are eddy on / off (medians); A/A is off against itself; *paired* "
        "ratios are medians over the repeats of on / off and aa / off within the repeat "
        "(the three modes ran back to back). Memory in MB: "
        "*private* is the backend's peak RssAnon (sampled every 5 ms), *HWM* its VmHWM "
        "(peak resident set, which counts the shared_buffers pages it touched); a fresh "
        f"backend has {kb_as_mb(fresh_anon)} MB private and a VmHWM of "
        f"{kb_as_mb(fresh_hwm)} MB; parallel workers are not counted.",
        "",
        "| config | Eddy plans | total on/off | eddy plans only | worst query | "
        "> 1.10x | A/A range | A/A total | paired: worst | > 1.10x (with an eddy) | "
        "A/A range | private MB on/off (top 3) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for t in result.totals:
        lines.append(
            f"| {t.config} | {t.eddy_plans} of {t.queries} | {num(t.total_ratio)} | "
            f"{num(t.eddy_total_ratio)} | {t.worst_query} {num(t.worst_ratio)} | "
            f"{t.over_1_10} | {num(t.aa_min)}-{num(t.aa_max)} | "
            f"{num(t.total_aa_ratio)} | {t.worst_paired_query} "
            f"{num(t.worst_paired_ratio)} | {t.over_1_10_paired} "
            f"({t.over_1_10_paired_eddy}) | {num(t.paired_aa_min)}-"
            f"{num(t.paired_aa_max)} | "
            + ", ".join(f"{p.query} {kb_as_mb(p.on_kb)}/{kb_as_mb(p.off_kb)}"
                        for p in t.peak_top) + " |")
    lines += ["", "| config | query | Eddy | off ms | on ms | on/off | A/A | paired "
              "| paired A/A | private on | private off | HWM on | HWM off "
              "| why no eddy / errors |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in result.summary:
        note = (r.errors or r.reasons).replace("|", "/")
        lines.append(
            f"| {r.config} | {r.query} | {'yes' if r.eddy else 'no'} | "
            f"{num(r.off_ms, '.1f')} | {num(r.on_ms, '.1f')} | {num(r.ratio)} | "
            f"{num(r.aa_ratio)} | {num(r.paired_ratio)} | {num(r.paired_aa_ratio)} | "
            f"{kb_as_mb(r.anon_on_kb)} | {kb_as_mb(r.anon_off_kb)} | "
            f"{kb_as_mb(r.peak_on_kb)} | {kb_as_mb(r.peak_off_kb)} | {note} |")
    if result.confirmed:
        lines += ["", f"Confirmation (`--confirm {s.get('confirm')}`): the queries whose "
                  f"paired ratio was over {s.get('confirm_over'):g} after the "
                  f"{s['rounds']} round(s) ran {s.get('confirm')} more; the tables above "
                  "are over all of their runs.", "",
                  "| config | query | runs (on) first | paired first (A/A) | on/off first "
                  "| runs (on) in all | paired in all (A/A) | on/off in all |",
                  "|---|---|---|---|---|---|---|---|"]
        lines += [confirmed_row(c) for c in result.confirmed]
    if result.errors:
        lines += ["", "Errors:", ""] + [f"- {e}" for e in result.errors]
    return "\n".join(lines) + "\n"


def confirmed_row(c: Confirmed) -> str:
    return (f"| {c.config} | {c.query} | {c.first_n} | "
            f"{num(c.first_paired_ratio)} ({num(c.first_paired_aa_ratio)}) | "
            f"{num(c.first_ratio)} | {c.n} | {num(c.paired_ratio)} "
            f"({num(c.paired_aa_ratio)}) | {num(c.ratio)} |")


def plot(result: Result, out: Path) -> Path:
    """ratio.png: per query, one bar per configuration (eddy on / off, median;
    whiskers: min-max of the ratios of paired runs, on against the off run
    of the same repeat), hatched where the plan has no Eddy; the A/A ratio
    of the same configuration as a black dot."""
    from matplotlib.artist import Artist
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    plt = harness.pyplot()
    configs = list(dict.fromkeys(r.config for r in result.summary))
    queries = list(dict.fromkeys(r.query for r in result.summary))
    cell = {(r.config, r.query): r for r in result.summary}
    fig, ax = plt.subplots(figsize=(max(6.0, 0.5 * len(queries) + 2.5), 4.6))
    width = 0.8 / len(configs)
    cmap = plt.get_cmap("tab10")
    top = 1.5
    for k, config in enumerate(configs):
        for i, q in enumerate(queries):
            r = cell.get((config, q))
            if r is None or r.ratio is None:
                continue
            x = i - 0.4 + width * (k + 0.5)
            lo = max(0.0, r.ratio - (r.ratio_min or r.ratio))
            hi = max(0.0, (r.ratio_max or r.ratio) - r.ratio)
            ax.bar(x, r.ratio, width, yerr=[[lo], [hi]], capsize=1.5,
                   color=cmap(k % 10), edgecolor="black", linewidth=0.4,
                   hatch=None if r.eddy else "///", alpha=1.0 if r.eddy else 0.45,
                   error_kw={"elinewidth": 0.6})
            if r.aa_ratio is not None:
                ax.plot([x], [r.aa_ratio], "k.", markersize=3)
            top = max(top, (r.ratio_max or r.ratio) * 1.1)
    handles: list[Artist] = [
        Patch(facecolor=cmap(k % 10), edgecolor="black", linewidth=0.4, label=c)
        for k, c in enumerate(configs)]
    handles += [Patch(facecolor="lightgrey", edgecolor="black", linewidth=0.4, hatch="///",
                      label="no Eddy in the plan"),
                Line2D([], [], color="black", marker=".", linestyle="", label="A/A (off / off)")]
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
    ax.axhline(1.1, color="red", linewidth=0.6, linestyle=":")
    ax.set_xticks(range(len(queries)))
    ax.set_xticklabels([q.upper() for q in queries], rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("time eddy on / eddy off (median)")
    ax.set_ylim(0, min(top, 6.0))
    ax.set_title(f"TPC-H SF {result.settings['scale']:g}: eddy on against PostgreSQL "
                 f"({result.settings['rounds']} round(s); whiskers: min-max of the paired runs)",
                 fontsize=9)
    ax.legend(handles=handles, fontsize=7, ncol=len(handles), loc="upper left", frameon=False)
    return harness.save_figure(fig, out / "ratio.png")


# --------------------------------------------------------------------------- CLI

def build_parser() -> argparse.ArgumentParser:
    ap = harness.parser(PROG, __doc__)
    harness.add_common_arguments(
        ap, dsn_help="libpq connection string of a database on the server to use (default: "
                     "the PG* environment); the TPC-H database is created next to it",
        out=Path("tpch-results"),
        out_help="output folder; the files go into <out>/sf<scale>/ (default: "
                 "tpch-results, untracked; docs/tpch refreshes the committed results)",
        quick_help=f"smoke run: scale factor {QUICK_SCALE:g}, 1 round", plots_help="no PNG")
    ap.add_argument("--scale", type=float, default=None,
                    help="TPC-H scale factor (default: 1; --quick: 0.1)")
    ap.add_argument("--configs", type=csv_list(tuple(CONFIGS)), default=list(DEFAULT_CONFIGS),
                    help=f"comma-separated, from {', '.join(CONFIGS)} "
                         f"(default: {','.join(DEFAULT_CONFIGS)})")
    ap.add_argument("--rounds", type=int, default=None,
                    help="rounds (default: 3; --quick: 1)")
    ap.add_argument("--min-seconds", type=float, default=None,
                    help="in each round, run the three modes again (rotating their order) "
                         "until eddy off has taken this long in the round, a short query's "
                         "noise shrinking with its runs (default: 1; --quick: 0, once)")
    ap.add_argument("--max-repeats", type=int, default=7,
                    help="at most this many times the three modes per round (default: 7)")
    ap.add_argument("--confirm", type=int, default=0, metavar="N",
                    help="after the rounds, run N more rounds of every (configuration, "
                         "query) whose paired ratio is over --confirm-over, and report "
                         "both passes (default: 0, none)")
    ap.add_argument("--confirm-over", type=float, default=1.10, metavar="RATIO",
                    help="the paired ratio over which --confirm measures a query again "
                         "(default: 1.10, the goal's line)")
    ap.add_argument("--queries", type=csv_list(conv=int), default=sorted(QUERIES),
                    help="comma-separated query numbers 1-22 (default: all)")
    ap.add_argument("--dbname", default=None,
                    help="name of the TPC-H database (default: tpch_sf<scale>, e.g. tpch_sf1)")
    ap.add_argument("--reload", action="store_true",
                    help="drop and load the TPC-H database even when it is there")
    ap.add_argument("--statement-timeout", type=float, default=0,
                    help="seconds after which a run is cancelled, an error (default: none)")
    ap.add_argument("--no-warmup", action="store_true",
                    help="no untimed run of each query before the timed rounds")
    return ap


def resolve(args: argparse.Namespace) -> None:
    """The defaults that depend on --quick."""
    if args.scale is None:
        args.scale = QUICK_SCALE if args.quick else 1.0
    if args.rounds is None:
        args.rounds = 1 if args.quick else 3
    if args.min_seconds is None:
        args.min_seconds = 0.0 if args.quick else 1.0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    resolve(args)
    bad = [n for n in args.queries if n not in QUERIES]
    if (bad or args.rounds < 1 or args.scale <= 0 or args.max_repeats < 1
            or args.confirm < 0 or args.confirm_over < 0):
        print(f"tpch_bench: queries must be 1-22 (not {bad}), --rounds >= 1, "
              "--max-repeats >= 1, --scale > 0, --confirm >= 0, --confirm-over >= 0",
              file=sys.stderr)
        return 2
    dbname = args.dbname or dbname_for(args.scale)
    out = args.out / f"sf{args.scale:g}"
    settings = harness.settings_record(args, PROG, argv)
    settings["dbname"] = dbname
    result = Result(settings=settings)

    def run() -> None:
        result.load = ensure_loaded(args.dsn, dbname, args.scale, args.reload,
                                    args.no_progress)
        bench_dsn = with_dbname(args.dsn, dbname)
        harness.prepare_eddy(bench_dsn)
        with connect(bench_dsn) as conn:
            preload = harness.load_eddy(conn)
            result.environment = environment(conn)
        checked = measure(bench_dsn, args, result, preload)
        if args.confirm > 0:
            confirm(bench_dsn, args, result, preload, checked)

    def conclude() -> tuple[str, str]:
        summarize(result, args)
        write_results(result, out)
        png = None if args.no_plots else plot(result, out)
        return summary_table(result), (
            f"{out}/measurements.csv, summary.csv, results.json, README.md"
            + (f", {png.name}" if png else ""))

    return harness.run("tpch_bench", result, run, conclude)


def cli() -> None:
    sys.exit(main())


if __name__ == "__main__":
    cli()

