"""The experiments of the STAIRs paper (Deshpande & Hellerstein, VLDB 2004,
section 5: Figures 7, 8 and 9), end to end: data, configurations, answer
checks, results files, plots and the paper's claims as pass/fail goals.

    python -m eddytools.experiments --dsn "host=... dbname=..." [--out docs/experiments]
    python -m eddytools.experiments --quick --out /tmp/exp     # smoke run, a few minutes

Figures:

  9   R JOIN S JOIN T (r.a = s.a, s.b = t.b) over the rst data set, read in id
      order (the tables are loaded so; the run checks that a scan returns
      them so), at 50,000 and 500,000 rows per table (--quick: 50,000)
  7   TPC-H customer JOIN orders JOIN lineitem (c_nationkey = 1,
      c_acctbal > 9000, l_shipdate > 1996-01-01), lineitem stored in
      l_shipdate order, sources interleaved at rates proportional to their
      sizes, SF 1 (--quick: 0.1): (i) times, (ii) routing and migration held
      back until k% of orders has been seen (eddy.routing_hold), (iii) output
      tuples over time (a server-side cursor, client-side timestamps)
  8   a random workload over synthetic20 (five Wisconsin tables each of 1k,
      10k, 50k and 100k rows): path and star queries of 4-5 relations, random
      selections, join fan-outs 0..10, random SHJ plan, source rates and
      initial delays, seeded; --setups of them (default 100, --long 475);
      the static SHJ reads its base-relation inputs with the eddies'
      proportional schedule, rates and delays (--shj-sources)

  e4 .. e13  the Eddies paper's Figures 4-13 (SIGMOD 2000), run first by
      eddytools.eddies_paper into OUT/eddies (its own results.json and
      plots; --quick, --no-plots and --no-progress are passed on)

Configurations (session settings; every run starts from RESET ALL plus
synchronize_seqscans = off, max_parallel_workers_per_gather = 0, jit = off,
work_mem = 64MB, eddy.max_memory = 4GB):

  base          eddy.enabled = off: PostgreSQL with its full range of plans
  base-aa       the same again: the A/A spread of the measurements
  shj-...       eddy.enabled = off, eddy.static_shj = on, the join order
                forced (explicit JOINs, join_collapse_limit = 1, hash joins
                only); EXPLAIN must show exactly that tree of static SHJs
  eddy          eddy.enabled = on and nothing else (Figure 9 only)
  eddyjoins     eddy on, eddy.migration = off
  stairs        eddy on, eddy.migration = guarded
  stairs-greedy eddy on, eddy.migration = greedy (the paper's policy)
  stems         eddy on, eddy.state_mode = stems
  right         the eddy routed right from the start: eddy.routing_policy =
                fixed on a query whose module order (EXPLAIN) is the right one
                (Figure 7)

The adaptive configurations (all but eddy) read their sources as scans in
physical order (index and bitmap scans off), with eddy.join_method = hash,
eddy.source_schedule = proportional and --policy routing (Figure 7:
--fig7-policy, by default cumulative, the paper's).  A configuration
whose settings the server does not have (eddy.state_mode,
eddy.routing_hold, a --policy value) is recorded as unavailable.

Method: per case (a figure's query at one size, one k, one setup) every
configuration's plan is checked with EXPLAIN, then each runs once unrecorded
(warm-up; its answer, row count and an order-independent digest, must equal
Base's), eddies once more under EXPLAIN ANALYZE for their counters
(migrations, tuples moved, migration time), then --rounds rounds with the
configurations in an order rotated from round to round.  A different answer is
an error, never a data point: it is reported and makes the exit status 3.
Figure 8 compares STAIRs with another configuration by the median over the
rounds of their two times' ratio in each round (figure8_pairs): they run side
by side, so a machine that slows down between rounds slows both.

Output in --out: measurements.csv (every timed run), summary.csv, counters.csv
(EXPLAIN ANALYZE of every eddy), fig7iii_output.csv (output times),
fig8_setups.csv, results.json (all of it, with the settings, environment,
goals, unavailable configurations and errors) and fig9.png, fig7.png,
fig8.png.  The settings record the command line, the environment the git
commit of the build and whether its work tree was dirty (eddytools.harness,
shared with the other benchmarks; Figure 8's cost model: eddytools.joinorder).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from eddytools import harness
from eddytools.db import apply_settings, connect, plan_nodes, rows_digest, sql_value
from eddytools.harness import Table, csv_list, first_line
from eddytools.joinorder import Edge, largest_intermediate, make_edge, plan_excess, plan_excess_any

PROG = "eddytools.experiments"
FIGURES = ("9", "7", "8")
# The Eddies paper's figures (eddytools.eddies_paper, which imports this
# module: its FIGURES, repeated here), run by the same command into
# <out>/eddies
EDDIES_FIGURES = ("e4", "e5", "e6", "e7", "e8", "e9", "e10", "e11", "e12", "e13")
DEFAULT_OUT = Path("experiments-results")
POLICIES = ("rank", "cumulative", "lottery", "random")
SHJ_SOURCES = ("same", "delays", "none")

# Every run starts from these (after RESET ALL).  synchronize_seqscans: a
# sequential scan of a table larger than a quarter of shared_buffers starts
# where the last scan of it stopped, and an eddy stops reading a source early
# (an empty join), so lineitem would be read from the middle of its
# l_shipdate order, and R, S, T from the middle of their id order.
SESSION = {
    "synchronize_seqscans": "off",
    "max_parallel_workers_per_gather": "0",
    "jit": "off",
    "work_mem": "64MB",
    "eddy.max_memory": "4GB",
}
# The sources of SHJs and adaptive eddies are scans in physical order.
STREAM = {"enable_indexscan": "off", "enable_bitmapscan": "off"}

FULL = {"rst_rows": [50_000, 500_000], "sf": 1.0, "syn_scale": 1.0, "setups": 100,
         "rounds": 5, "hold_rounds": 3, "setup_rounds": 3}
QUICK = {"rst_rows": [50_000], "sf": 0.1, "syn_scale": 1.0, "setups": 12,
         "rounds": 2, "hold_rounds": 1, "setup_rounds": 1}
LONG_SETUPS = 475
SYN_SIZES = (("1k", 1_000), ("10k", 10_000), ("50k", 50_000), ("100k", 100_000))
# Figure 8: the largest estimated intermediate result a setup may have (at
# syn scale 1), so that the worst static plan of a setup stays in seconds.
SYN_CAP = 1_500_000
HOLD_STEPS = tuple(range(0, 101, 10))

LABELS = {
    "base": "Base", "base-aa": "Base (A/A)", "eddy": "eddy (defaults)",
    "eddyjoins": "EddyJoins", "stairs": "STAIRs", "stairs-greedy": "STAIRs (greedy)",
    "stems": "SteMs", "right": "routed right", "shj": "SHJ",
}


class ConfigUnavailable(Exception):
    """The server refuses one of a configuration's settings."""


# --------------------------------------------------------------------------- data types

@dataclass
class Config:
    name: str
    kind: str                        # base, shj, eddy
    gucs: dict[str, str]
    sql: str = ""                    # the query under this configuration
    join_order: list[list[str]] = field(default_factory=list)  # shj: expected join sets
    first_join: tuple[str, str] | None = None   # eddy: aliases of the first join module
    whole_block: bool = True         # eddy: one eddy whose sources are every relation


@dataclass
class Case:
    figure: str                      # "9", "7i", "7ii", "8"
    case: str                        # "rows=50000", "sf=1", "k=30", "setup=17"
    aliases: list[str]
    configs: list[Config]
    params: dict = field(default_factory=dict)


@dataclass
class Run:
    figure: str
    case: str
    config: str
    round: int
    seconds: float
    rows: int
    digest: str


@dataclass
class SummaryRow:
    """One (figure, case, configuration): a row of summary.csv.  Times in
    ms over the timed rounds; vs_base: the median over Base's.  The A/A
    configuration's row also has its paired ratios to Base (the rounds'
    base-aa / base), which the other rows leave out of the file."""
    figure: str
    case: str
    config: str
    n: int
    median_ms: float
    min_ms: float
    max_ms: float
    q1_ms: float
    q3_ms: float
    vs_base: float | None
    aa_ratio_median: float | None = None
    aa_ratio_min: float | None = None
    aa_ratio_max: float | None = None

    def as_row(self) -> dict[str, Any]:
        """The row as summary.csv and results.json have it."""
        row = asdict(self)
        if self.aa_ratio_median is None:
            for key in ("aa_ratio_median", "aa_ratio_min", "aa_ratio_max"):
                del row[key]
        return row


@dataclass
class Goal:
    """One of the paper's claims, checked: pass, fail or n/a (not measured)."""
    figure: str
    goal: str
    status: str
    value: str


@dataclass
class Result(harness.Result[Run]):
    counters: list[dict] = field(default_factory=list)
    output_times: list[dict] = field(default_factory=list)
    setups: list[dict] = field(default_factory=list)
    unavailable: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    summary: list[SummaryRow] = field(default_factory=list)
    goals: list[Goal] = field(default_factory=list)

    def document(self) -> dict[str, Any]:
        return {"settings": self.settings, "environment": self.environment,
                "goals": self.goals, "unavailable": self.unavailable, "errors": self.errors,
                "notes": self.notes, "summary": self.summary, "counters": self.counters,
                "setups": self.setups, "output_times": self.output_times, "runs": self.runs}


# --------------------------------------------------------------------------- settings

def configure(conn: psycopg.Connection, gucs: dict[str, str]) -> None:
    """RESET ALL, the session settings, then ``gucs``."""
    apply_settings(conn, {**SESSION, **gucs}, reset=True)


def eddy_gucs(policy: str, **extra: str) -> dict[str, str]:
    return {"eddy.enabled": "on", "eddy.source_schedule": "proportional",
            "eddy.join_method": "hash", "eddy.routing_policy": policy,
            "eddy.migration": "off", **STREAM, **extra}


SHJ_GUCS = {"eddy.enabled": "off", "eddy.static_shj": "on", "join_collapse_limit": "1",
            "from_collapse_limit": "1", "enable_nestloop": "off", "enable_mergejoin": "off",
            **STREAM}
BASE_GUCS = {"eddy.enabled": "off"}


def adaptive_configs(policy: str, query: str, **extra: str) -> list[Config]:
    """EddyJoins, STAIRs (guarded and greedy) and SteMs over ``query``."""
    return [
        Config("eddyjoins", "eddy", eddy_gucs(policy, **extra), query),
        Config("stairs", "eddy", eddy_gucs(policy, **{**extra, "eddy.migration": "guarded"}),
               query),
        Config("stairs-greedy", "eddy",
               eddy_gucs(policy, **{**extra, "eddy.migration": "greedy"}), query),
        Config("stems", "eddy", eddy_gucs(policy, **{**extra, "eddy.state_mode": "stems"}),
               query),
    ]


class Availability:
    """Which settings the server accepts (probed once per name and value)."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn
        self.cache: dict[tuple[str, str], str | None] = {}

    def problem(self, gucs: dict[str, str]) -> str | None:
        for name, value in gucs.items():
            if not name.startswith("eddy."):
                continue
            key = (name, value)
            if key not in self.cache:
                try:
                    apply_settings(self.conn, {name: value}, reset=True)
                    self.cache[key] = None
                except psycopg.Error as e:
                    self.cache[key] = f"SET {name} = '{value}': {str(e).strip().splitlines()[0]}"
            if self.cache[key] is not None:
                return self.cache[key]
        return None


# --------------------------------------------------------------------------- plans

def plan_of(conn: psycopg.Connection, cfg: Config) -> dict:
    configure(conn, cfg.gucs)
    raw = sql_value(conn, f"EXPLAIN (FORMAT JSON, COSTS OFF) {cfg.sql}")
    doc = raw if isinstance(raw, list) else json.loads(raw)
    return doc[0]["Plan"]


def aliases_under(node: dict) -> set[str]:
    return {n["Alias"] for n in plan_nodes(node) if "Alias" in n}


JOIN_NODES = ("Hash Join", "Merge Join", "Nested Loop")


def check_plan(plan: dict, cfg: Config, aliases: list[str]) -> str | None:
    """Why ``plan`` is not the plan ``cfg`` is meant to run, or None."""
    nodes = list(plan_nodes(plan))
    eddies = [n for n in nodes if n.get("Custom Plan Provider") == "Eddy"]
    shjs = [n for n in nodes if n.get("Custom Plan Provider") == "Symmetric Hash Join"]
    joins = [n for n in nodes if n["Node Type"] in JOIN_NODES]
    if cfg.kind == "base":
        if eddies or shjs:
            return "an eddy or static SHJ in the plan of vanilla PostgreSQL"
        return None
    if cfg.kind == "shj":
        if eddies or joins:
            return "the plan has an eddy or a join other than a static SHJ"
        got = sorted((sorted(aliases_under(n)) for n in shjs), key=len)
        want = sorted((sorted(s) for s in cfg.join_order), key=len)
        if got != want:
            return f"static SHJ join order {got}, wanted {want}"
        return None
    if len(eddies) != 1 or joins or shjs:
        return (f"{len(eddies)} eddies, {len(joins) + len(shjs)} other joins: "
                "not one eddy over the block")
    eddy = eddies[0]
    if cfg.whole_block:
        sources = {a for child in eddy.get("Plans", []) for a in aliases_under(child)}
        if sources != set(aliases):
            return f"the eddy's sources are {sorted(sources)}, not {sorted(aliases)}"
    if cfg.first_join is not None:
        # the first join module (routed selections come before the joins)
        ops = [op for op in eddy.get("Operators", []) if "Join Condition" in op]
        cond = ops[0]["Join Condition"] if ops else ""
        if not all(f"{a}." in cond for a in cfg.first_join):
            return f"the first join module is {cond!r}, not the join of {cfg.first_join}"
    return None


def migration_moves(history: Any) -> list[tuple[int, int]]:
    """(tuples routed, tuples moved) of each migration in EXPLAIN ANALYZE
    VERBOSE's "Migration History"."""
    return [(int(at), int(moved)) for at, moved in
            re.findall(r"at (\d+): (\d+) moved", history if isinstance(history, str) else "")]


def largest_migration_at(moves: list[tuple[int, int]]) -> int:
    """The switch: where the migration that moved the most came (the paper
    moves "all those tuples"; an early move of a few hundred is not it)."""
    return max(moves, key=lambda m: m[1])[0]


def eddy_counters(conn: psycopg.Connection, cfg: Config) -> dict:
    """EXPLAIN (ANALYZE, TIMING, VERBOSE) of ``cfg``: the eddy's counters."""
    configure(conn, cfg.gucs)
    raw = sql_value(conn, f"EXPLAIN (ANALYZE, TIMING ON, VERBOSE, FORMAT JSON) {cfg.sql}")
    doc = (raw if isinstance(raw, list) else json.loads(raw))[0]
    eddy = next((n for n in plan_nodes(doc["Plan"])
                 if n.get("Custom Plan Provider") == "Eddy"), {})
    out: dict[str, Any] = {"execution_ms": doc.get("Execution Time")}
    for key in ("State Migration", "Migrations", "Tuples Moved", "Entries Rebuilt",
                "Migration Time", "Routing Changes While Held",
                "Tuples Routed", "Recomputations", "Peak Memory", "Tuples Read",
                "Migration History"):
        if key in eddy:
            out[key.lower().replace(" ", "_")] = eddy[key]
    history = out.get("migration_history") or ""
    moves = migration_moves(history)
    if moves and out.get("tuples_routed"):
        out["first_migration_at"] = moves[0][0]
        out["first_migration_fraction"] = moves[0][0] / out["tuples_routed"]
        at = largest_migration_at(moves)
        out["largest_migration_at"] = at
        out["largest_migration_fraction"] = at / out["tuples_routed"]
    if isinstance(history, str) and len(history) > 2000:
        out["migration_history"] = history[:2000] + " ..."
    return out


# --------------------------------------------------------------------------- measuring

def run_once(conn: psycopg.Connection, cfg: Config) -> tuple[float, int, str]:
    configure(conn, cfg.gucs)
    t0 = time.perf_counter()
    rows = conn.execute(cfg.sql).fetchall()
    elapsed = time.perf_counter() - t0
    return elapsed, len(rows), rows_digest(rows)


class Measurer:
    def __init__(self, conn: psycopg.Connection, result: Result, avail: Availability,
                 progress: Callable[[str], None], skip: frozenset[str] = frozenset(),
                 counters: Callable[[psycopg.Connection, Config], dict] | None = None
                 ) -> None:
        self.conn = conn
        self.result = result
        self.avail = avail
        self.progress = progress
        self.skip = skip
        # what EXPLAIN ANALYZE records of an eddy (the Eddies paper's
        # experiments, eddytools.eddies_paper, add its routing)
        self.counters = counters or eddy_counters

    def usable(self, case: Case) -> list[Config]:
        """The case's configurations the server has and whose plans are right."""
        out = []
        for cfg in case.configs:
            why = ("skipped (--skip-configs)" if cfg.name in self.skip
                   else self.avail.problem(cfg.gucs))
            if why is not None:
                entry = {"figure": case.figure, "config": cfg.name, "reason": why}
                if not any(u["figure"] == case.figure and u["config"] == cfg.name
                           for u in self.result.unavailable):
                    self.result.unavailable.append(entry)
                continue
            try:
                bad = check_plan(plan_of(self.conn, cfg), cfg, case.aliases)
            except psycopg.Error as e:
                bad = f"EXPLAIN failed: {first_line(e)}"
            if bad is not None:
                self.result.errors.append(
                    f"wrong plan: figure {case.figure} {case.case} {cfg.name}: {bad}")
                continue
            out.append(cfg)
        return out

    def measure(self, case: Case, rounds: int,
                reference: tuple[int, str] | None = None,
                counters: bool = True) -> tuple[int, str] | None:
        """Check, warm up, count and time every configuration of ``case``;
        return the reference answer (Base's, or ``reference``)."""
        configs = self.usable(case)
        answers: dict[str, tuple[int, str]] = {}
        failed: set[str] = set()
        for cfg in configs:
            self.progress(f"{case.figure} {case.case} {cfg.name} (warm-up)")
            try:
                _, n, digest = run_once(self.conn, cfg)
                answers[cfg.name] = (n, digest)
            except psycopg.Error as e:
                self.result.errors.append(
                    f"query failed: figure {case.figure} {case.case} {cfg.name}: {first_line(e)}")
                failed.add(cfg.name)
        ref = reference if reference is not None else answers.get("base")
        if ref is None:
            self.result.errors.append(f"no Base answer for figure {case.figure} {case.case}")
            return None
        for name, answer in answers.items():
            if answer != ref:
                self.mismatch(case, name, answer, ref)
                failed.add(name)
        configs = [c for c in configs if c.name not in failed]
        if counters:
            for cfg in configs:
                if cfg.kind != "eddy":
                    continue
                self.progress(f"{case.figure} {case.case} {cfg.name} (EXPLAIN ANALYZE)")
                try:
                    row = self.counters(self.conn, cfg)
                except psycopg.Error as e:
                    self.result.errors.append(
                        f"EXPLAIN ANALYZE failed: figure {case.figure} {case.case} "
                        f"{cfg.name}: {first_line(e)}")
                    continue
                self.result.counters.append(
                    {"figure": case.figure, "case": case.case, "config": cfg.name, **row})
        runs: list[Run] = []
        for r in range(rounds):
            if not configs:
                break
            for cfg in harness.rotated(configs, r):
                if cfg.name in failed:
                    continue
                self.progress(f"{case.figure} {case.case} {cfg.name} (round {r + 1}/{rounds})")
                try:
                    seconds, n, digest = run_once(self.conn, cfg)
                except psycopg.Error as e:
                    self.result.errors.append(
                        f"query failed: figure {case.figure} {case.case} {cfg.name}: "
                        f"{first_line(e)}")
                    failed.add(cfg.name)
                    continue
                if (n, digest) != ref:
                    self.mismatch(case, cfg.name, (n, digest), ref)
                    failed.add(cfg.name)
                    continue
                runs.append(Run(case.figure, case.case, cfg.name, r, seconds, n, digest))
        self.result.runs += [r for r in runs if r.config not in failed]
        return ref

    def mismatch(self, case: Case, name: str, got: tuple[int, str],
                 ref: tuple[int, str]) -> None:
        self.result.errors.append(
            f"answer mismatch: figure {case.figure} {case.case} under {name}: {got[0]} rows, "
            f"digest {got[1]}; Base {ref[0]} rows, digest {ref[1]}")


# --------------------------------------------------------------------------- Figure 9

def rst_prefix(rows: int) -> str:
    return f"rst{rows}_"


def figure9_cases(rows: int, policy: str) -> list[Case]:
    p = rst_prefix(rows)
    select = "SELECT r.*, s.*, t.*"
    query = (f"{select} FROM {p}r r JOIN {p}s s ON r.a = s.a "
             f"JOIN {p}t t ON s.b = t.b")
    rs_t = f"{select} FROM ({p}r r JOIN {p}s s ON r.a = s.a) JOIN {p}t t ON s.b = t.b"
    st_r = f"{select} FROM ({p}s s JOIN {p}t t ON s.b = t.b) JOIN {p}r r ON r.a = s.a"
    configs = [
        Config("base", "base", BASE_GUCS, query),
        Config("base-aa", "base", BASE_GUCS, query),
        Config("shj-rs-t", "shj", SHJ_GUCS, rs_t, [["r", "s"], ["r", "s", "t"]]),
        Config("shj-st-r", "shj", SHJ_GUCS, st_r, [["s", "t"], ["r", "s", "t"]]),
        Config("eddy", "eddy", {"eddy.enabled": "on", "eddy.routing_policy": policy}, query,
               whole_block=False),
        *adaptive_configs(policy, query),
    ]
    return [Case("9", f"rows={rows}", ["r", "s", "t"], configs, {"rows": rows})]


def check_id_order(conn: psycopg.Connection, table: str, column: str) -> int:
    """Rows a sequential scan of ``table`` returns out of ``column`` order."""
    configure(conn, STREAM)
    return int(sql_value(conn, sql.SQL(
        "SELECT count(*) FROM (SELECT {c} AS v, lag({c}) OVER () AS prev FROM {t}) x "
        "WHERE prev > v").format(c=sql.Identifier(column), t=sql.Identifier(table))))


# --------------------------------------------------------------------------- Figure 7

def sf_prefix(sf: float) -> str:
    return "sf" + f"{sf:g}".replace(".", "_") + "_"


TPCH_FILTERS = ("customer.c_nationkey = 1 AND customer.c_acctbal > 9000 "
                "AND lineitem.l_shipdate > date '1996-01-01'")
TPCH_SELECT = "SELECT customer.*, orders.*, lineitem.*"
TPCH_ALIASES = ["customer", "orders", "lineitem"]


def tpch_query(sf: float, right: bool = False) -> str:
    """The paper's query; ``right``: the o-l key written so that the planner
    estimates it less selective than c-o (both sides ``+ 0``), which puts the
    c-o join first in the eddy's module order, the order the fixed policy
    routes in.  The answer is the same."""
    p = sf_prefix(sf)
    ol = ("orders.o_orderkey + 0 = lineitem.l_orderkey + 0" if right
          else "orders.o_orderkey = lineitem.l_orderkey")
    return (f"{TPCH_SELECT} FROM {p}customer customer, {p}orders orders, {p}lineitem lineitem "
            f"WHERE customer.c_custkey = orders.o_custkey AND {ol} AND {TPCH_FILTERS}")


def tpch_forced(sf: float, first: str) -> str:
    p = sf_prefix(sf)
    co = "customer.c_custkey = orders.o_custkey"
    ol = "orders.o_orderkey = lineitem.l_orderkey"
    if first == "co":
        joins = (f"({p}customer customer JOIN {p}orders orders ON {co}) "
                 f"JOIN {p}lineitem lineitem ON {ol}")
    else:
        joins = (f"({p}orders orders JOIN {p}lineitem lineitem ON {ol}) "
                 f"JOIN {p}customer customer ON {co}")
    return f"{TPCH_SELECT} FROM {joins} WHERE {TPCH_FILTERS}"


# Figure 7's eddies route the three predicates (the paper's eddy evaluates
# them; by default they are cheap enough to stay in the scans, and then the
# lineitem predicate's drift, the cause of the paper's routing mistake, is
# invisible to the routing)
FIG7_ROUTED = {"eddy.selection_min_cost": "0"}


def figure7_case(sf: float, policy: str) -> Case:
    query = tpch_query(sf)
    configs = [
        Config("base", "base", BASE_GUCS, query),
        Config("base-aa", "base", BASE_GUCS, query),
        Config("shj-co-l", "shj", SHJ_GUCS, tpch_forced(sf, "co"),
               [["customer", "orders"], TPCH_ALIASES]),
        Config("shj-ol-c", "shj", SHJ_GUCS, tpch_forced(sf, "ol"),
               [["orders", "lineitem"], TPCH_ALIASES]),
        *adaptive_configs(policy, query, **FIG7_ROUTED),
        Config("right", "eddy", eddy_gucs("fixed", **FIG7_ROUTED), tpch_query(sf, right=True),
               first_join=("customer", "orders")),
    ]
    return Case("7i", f"sf={sf:g}", TPCH_ALIASES, configs, {"sf": sf})


def figure7_hold_cases(sf: float, policy: str, greedy: bool) -> list[Case]:
    """Figure 7(ii); greedy migration only if asked (--long): at SF 1 it
    thrashes for 10-50 s a run, which would double the default run."""
    query = tpch_query(sf)
    cases = []
    for k in HOLD_STEPS:
        hold = {"eddy.routing_hold": f"orders={k}", **FIG7_ROUTED}
        configs = [
            Config("eddyjoins", "eddy", eddy_gucs(policy, **hold), query),
            Config("stairs", "eddy", eddy_gucs(policy, **hold, **{"eddy.migration": "guarded"}),
                   query),
        ]
        if greedy:
            configs.append(Config("stairs-greedy", "eddy",
                                  eddy_gucs(policy, **hold, **{"eddy.migration": "greedy"}),
                                  query))
        cases.append(Case("7ii", f"k={k}", TPCH_ALIASES, configs, {"k": k}))
    return cases


def stream_output(conn: psycopg.Connection, cfg: Config, batch: int = 100
                  ) -> tuple[list[tuple[float, int]], int, str]:
    """Run ``cfg`` through a server-side cursor; (seconds, rows so far) after
    every fetched batch, the row count and the digest."""
    configure(conn, cfg.gucs)
    points, rows = harness.stream_rows(conn, cfg.sql, batch, "eddy_experiment_stream")
    return points, len(rows), rows_digest(rows)


# --------------------------------------------------------------------------- Figure 8

def syn_prefix(scale: float) -> str:
    return "" if scale == 1 else "x" + f"{scale:g}".replace(".", "_") + "_"


def syn_tables(scale: float) -> dict[str, int]:
    """Table name -> rows of synthetic20 at ``scale``."""
    p = syn_prefix(scale)
    return {f"{p}syn{label}_{i}": max(10, round(rows * scale))
            for label, rows in SYN_SIZES for i in range(1, 6)}


@dataclass
class Setup:
    index: int
    shape: str
    tables: dict[str, str]          # alias -> table
    rows: dict[str, int]            # alias -> rows
    selections: dict[str, int]      # alias -> percentage kept (100: no selection)
    edges: list[Edge]
    order: list[str]                # the SHJ plan: aliases in join order
    rates: dict[str, float]
    delays: dict[str, int]
    estimate: float                 # largest estimated intermediate result

    def where(self) -> list[str]:
        return [f"({a}.unique2 * 37) % 100 < {p}" for a, p in self.selections.items()
                if p < 100]

    def select(self) -> str:
        cols = ", ".join(f"{a}.unique2" for a in self.tables)
        return f"SELECT count(*), sum(hashtext(concat_ws(',', {cols}))::bigint)"

    def query(self) -> str:
        rels = ", ".join(f"{t} {a}" for a, t in self.tables.items())
        conds = [e.clause() for e in self.edges] + self.where()
        return f"{self.select()} FROM {rels} WHERE {' AND '.join(conds)}"

    def forced(self) -> str:
        """The SHJ plan: the relations joined in ``order`` (left-deep)."""
        first = self.order[0]
        text = f"{self.tables[first]} {first}"
        done = {first}
        for a in self.order[1:]:
            conds = [e.clause() for e in self.edges
                     if (e.a == a and e.b in done) or (e.b == a and e.a in done)]
            text = f"({text} JOIN {self.tables[a]} {a} ON {' AND '.join(conds)})"
            done.add(a)
        where = self.where()
        return f"{self.select()} FROM {text}" + (f" WHERE {' AND '.join(where)}" if where else "")

    def join_sets(self) -> list[list[str]]:
        return [sorted(self.order[:k]) for k in range(2, len(self.order) + 1)]

    def describe(self) -> dict:
        return {"setup": self.index, "shape": self.shape, "tables": self.tables,
                "selections": self.selections,
                "fanouts": {f"{e.a}-{e.b}": e.fanout for e in self.edges},
                "shj_order": self.order, "rates": self.rates, "delays_ms": self.delays,
                "estimated_max_intermediate": round(self.estimate),
                "shj_plan_excess": round(plan_excess(self), 3),
                "shj_plan_excess_any": round(plan_excess_any(self), 3)}


# The random plan is the best of all plans (plan_excess_any) within this.
BEST_PLAN_SLACK = 1.005
EXCESS_BANDS = ((1.0, 1.1), (1.1, 1.3), (1.3, 2.0), (2.0, math.inf))


def make_setup(index: int, seed: int, tables: dict[str, int], cap: float) -> Setup:
    """Setup ``index`` of the random workload, from its own generator."""
    rng = random.Random(f"stairs-figure8:{seed}:{index}")
    names = sorted(tables)
    for _ in range(10_000):
        shape = rng.choice(["path4", "path5", "star4", "star5"])
        n = int(shape[-1])
        aliases = [f"t{i}" for i in range(1, n + 1)]
        chosen = dict(zip(aliases, rng.sample(names, n), strict=True))
        rows = {a: tables[t] for a, t in chosen.items()}
        pairs = ([(aliases[i], aliases[i + 1]) for i in range(n - 1)] if shape.startswith("path")
                 else [(aliases[0], a) for a in aliases[1:]])
        edges = []
        for a, b in pairs:
            f = rng.uniform(0, 1) if rng.random() < 0.3 else rng.uniform(1, 10)
            edges.append(make_edge(a, b, rows, round(f, 2)))
        selections = {a: (rng.randint(1, 99) if rng.random() < 0.6 else 100) for a in aliases}
        estimate = largest_intermediate(aliases, edges, rows, selections)
        if estimate > cap:
            continue
        start = rng.choice(aliases)
        order = [start]
        while len(order) < n:
            nxt = sorted({x for e in edges for x in (e.a, e.b)
                          if x not in order and ({e.a, e.b} - {x}) <= set(order)})
            order.append(rng.choice(nxt))
        rates = {a: rng.choice([0.25, 0.5, 2.0, 4.0]) for a in aliases if rng.random() < 0.5}
        delays = {a: rng.randint(1, 50) for a in aliases if rng.random() < 0.25}
        return Setup(index, shape, chosen, rows, selections, edges, order, rates, delays,
                     estimate)
    raise RuntimeError(f"no setup {index} within the size cap {cap:,.0f}")


def figure8_shj_gucs(setup: Setup, shj_sources: str) -> dict[str, str]:
    """The static SHJ's settings in a setup: ``same`` sources as the eddies
    (the proportional schedule, the setup's rates and delays), ``delays``
    (alternate reads, the initial delays only) or ``none`` (alternate reads,
    neither: the SHJ before it honoured them)."""
    gucs = dict(SHJ_GUCS)
    if shj_sources == "same":
        gucs["eddy.source_schedule"] = "proportional"
        if setup.rates:
            gucs["eddy.source_rates"] = ", ".join(f"{a}={r:g}" for a, r in setup.rates.items())
    if shj_sources in ("same", "delays") and setup.delays:
        gucs["eddy.source_delays"] = ", ".join(f"{a}={d}" for a, d in setup.delays.items())
    return gucs


def figure8_case(setup: Setup, policy: str, shj_sources: str = "same",
                 greedy: bool = False) -> Case:
    """A setup's configurations; greedy migration only if asked (--long):
    since a migration rebuilds the whole state it thrashes on some 4-5
    relation setups, minutes a run, which made the default run take hours."""
    query = setup.query()
    extra = {}
    if setup.rates:
        extra["eddy.source_rates"] = ", ".join(f"{a}={r:g}" for a, r in setup.rates.items())
    if setup.delays:
        extra["eddy.source_delays"] = ", ".join(f"{a}={d}" for a, d in setup.delays.items())
    configs = [
        Config("base", "base", BASE_GUCS, query),
        # the eddy as a user gets it: every eddy.* setting at its default,
        # without the setup's rates and delays, which PostgreSQL's plan does
        # not see either (issue 48: never over 1.5x Base)
        Config("eddy", "eddy", {"eddy.enabled": "on"}, query, whole_block=False),
        Config("shj", "shj", figure8_shj_gucs(setup, shj_sources), setup.forced(),
               setup.join_sets()),
        *(c for c in adaptive_configs(policy, query, **extra)
          if greedy or c.name != "stairs-greedy"),
    ]
    return Case("8", f"setup={setup.index}", list(setup.tables), configs,
                setup.describe())


# --------------------------------------------------------------------------- data

def load_data(dsn: str, args: argparse.Namespace, quiet: bool) -> None:
    """The figures' tables with the Spark loader (tables already loaded with
    the same parameters are skipped by the loader itself)."""
    jobs: list[tuple[list[str], list[str]]] = []   # (argv, tables it makes)
    if "9" in args.figures:
        for n in args.rst_rows:
            p = rst_prefix(n)
            jobs.append((["rst", "--rows", str(n), "--prefix", p], [p + t for t in "rst"]))
    if "7" in args.figures:
        p = sf_prefix(args.sf)
        jobs.append((["tpch", "--sf", f"{args.sf:g}", "--tables", "customer,orders,lineitem",
                      "--order-by", "lineitem.l_shipdate", "--prefix", p],
                     [p + t for t in ("customer", "orders", "lineitem")]))
    if "8" in args.figures:
        if args.syn_scale == 1:
            jobs.append((["synthetic20"], list(syn_tables(1.0))))
        else:
            p = syn_prefix(args.syn_scale)
            for label, rows in SYN_SIZES:
                names = [f"syn{label}_{i}" for i in range(1, 6)]
                jobs.append((["wisconsin", "--rows", str(max(10, round(rows * args.syn_scale))),
                              "--prefix", p, "--tables", *names], [p + t for t in names]))
    harness.run_loader(dsn, jobs, args.master, quiet, app_name="eddy experiments loader")


# --------------------------------------------------------------------------- running

def run_figures(conn: psycopg.Connection, args: argparse.Namespace, result: Result,
                progress: Callable[[str], None]) -> None:
    avail = Availability(conn)
    m = Measurer(conn, result, avail, progress, frozenset(args.skip_configs))
    for policy in {args.policy, args.fig7_policy}:
        policy_problem = avail.problem({"eddy.routing_policy": policy})
        if policy_problem is not None:
            raise ConfigUnavailable(f"{policy}: {policy_problem}")
    if "9" in args.figures:
        for n in args.rst_rows:
            p = rst_prefix(n)
            for t in "rst":
                bad = check_id_order(conn, p + t, "id")
                if bad:
                    result.errors.append(f"{p}{t}: a sequential scan returns {bad} rows out of "
                                         "id order")
            for case in figure9_cases(n, args.policy):
                m.measure(case, args.rounds)
    if "7" in args.figures:
        bad = check_id_order(conn, sf_prefix(args.sf) + "lineitem", "l_shipdate")
        if bad:
            result.errors.append(f"lineitem: a sequential scan returns {bad} rows out of "
                                 "l_shipdate order")
        case = figure7_case(args.sf, args.fig7_policy)
        ref = m.measure(case, args.rounds)
        if ref is not None:
            for hold in figure7_hold_cases(args.sf, args.fig7_policy, greedy=args.long):
                m.measure(hold, args.hold_rounds, reference=ref)
            for cfg in m.usable(Case("7iii", case.case, case.aliases,
                                     [c for c in case.configs if c.name != "base-aa"])):
                progress(f"7iii {case.case} {cfg.name} (streaming)")
                try:
                    points, n, digest = stream_output(conn, cfg)
                except psycopg.Error as e:
                    result.errors.append(f"query failed: figure 7iii {cfg.name}: {first_line(e)}")
                    continue
                if (n, digest) != ref:
                    result.errors.append(f"answer mismatch: figure 7iii under {cfg.name}: "
                                         f"{n} rows, digest {digest}; Base {ref[0]} rows")
                    continue
                result.output_times += [{"config": cfg.name, "seconds": round(t, 6), "rows": k}
                                        for t, k in points]
    if "8" in args.figures:
        tables = syn_tables(args.syn_scale)
        cap = SYN_CAP * args.syn_scale
        for i in range(args.setups):
            setup = make_setup(i, args.seed, tables, cap)
            result.setups.append(setup.describe())
            m.measure(figure8_case(setup, args.policy, args.shj_sources, greedy=args.long),
                      args.setup_rounds,
                      counters=args.setup_counters)


# --------------------------------------------------------------------------- summary

def times_by_round(result: Result) -> dict[tuple[str, str, str], dict[int, float]]:
    """(figure, case, config) -> round -> seconds of every timed run."""
    out: dict[tuple[str, str, str], dict[int, float]] = {}
    for r in result.runs:
        out.setdefault((r.figure, r.case, r.config), {})[r.round] = r.seconds
    return out


def summarize(result: Result) -> None:
    groups: dict[tuple[str, str, str], list[float]] = {}
    for r in result.runs:
        groups.setdefault((r.figure, r.case, r.config), []).append(r.seconds)
    by_round = times_by_round(result)
    rows: list[SummaryRow] = []
    for (figure, case, config), times in groups.items():
        med = statistics.median(times)
        q1, q3 = harness.quartiles(times)
        base = groups.get((figure, case, "base"))
        row = SummaryRow(figure, case, config, len(times), median_ms=med * 1e3,
                         min_ms=min(times) * 1e3, max_ms=max(times) * 1e3,
                         q1_ms=q1 * 1e3, q3_ms=q3 * 1e3,
                         vs_base=med / statistics.median(base) if base else None)
        if config == "base-aa" and (figure, case, "base") in by_round:
            ratios = harness.paired_ratios(by_round[(figure, case, "base-aa")],
                                           by_round[(figure, case, "base")])
            if ratios:
                row.aa_ratio_median = statistics.median(ratios)
                row.aa_ratio_min = min(ratios)
                row.aa_ratio_max = max(ratios)
        rows.append(row)
    result.summary = rows


def median_ms(result: Result, figure: str, case: str, config: str) -> float | None:
    for row in result.summary:
        if (row.figure, row.case, row.config) == (figure, case, config):
            return float(row.median_ms)
    return None


def counter(result: Result, figure: str, case: str, config: str, key: str) -> Any:
    for row in result.counters:
        if (row["figure"], row["case"], row["config"]) == (figure, case, config):
            return row.get(key)
    return None


def add_goal(result: Result, figure: str, text: str, passed: bool | None,
             value: str) -> None:
    """Record a claim's outcome (passed None: not measured, n/a)."""
    result.goals.append(Goal(figure, text,
                             "n/a" if passed is None else "pass" if passed else "fail", value))


def unavailable(result: Result, figure: str, config: str) -> str | None:
    for u in result.unavailable:
        if u["figure"] == figure and u["config"] == config:
            return str(u["reason"])
    return None


def figure8_pairs(result: Result, other: str, against: str = "stairs"
                  ) -> list[tuple[str, float]]:
    """(case, other / against) for every setup where both were measured in a
    round: per round, other's time over ``against``'s (STAIRs') in that
    round, the median over the rounds.  The two run side by side in every
    round, so a machine that slows down between rounds (this one can, by
    1.7x) moves both; a ratio of the medians over the rounds would take that
    step for a difference between the configurations."""
    by_round = times_by_round(result)
    out = []
    for s in result.setups:
        case = f"setup={s['setup']}"
        ratios = harness.paired_ratios(by_round.get(("8", case, other), {}),
                                       by_round.get(("8", case, against), {}))
        if ratios:
            out.append((case, statistics.median(ratios)))
    return out


def figure8_median_pairs(result: Result, other: str) -> list[tuple[str, float]]:
    """(case, other / stairs) by the medians over the rounds: figure8_pairs'
    estimate before it paired the rounds, reported next to it."""
    out = []
    for s in result.setups:
        case = f"setup={s['setup']}"
        a = median_ms(result, "8", case, other)
        b = median_ms(result, "8", case, "stairs")
        if a is not None and b is not None and b > 0:
            out.append((case, a / b))
    return out


def figure8_bands(result: Result, pairs: list[tuple[str, float]]) -> str:
    """STAIRs' wins (pairs: case, other / stairs) per band of the SHJ
    plan's estimated excess over the best plan (plan_excess)."""
    excess: dict[str, float] = {f"setup={s['setup']}": float(s["shj_plan_excess"])
                                for s in result.setups if s.get("shj_plan_excess") is not None}
    parts = []
    for lo, hi in EXCESS_BANDS:
        band = [r for case, r in pairs if case in excess and lo <= excess[case] < hi]
        label = f">= {lo:g}" if hi == math.inf else f"{lo:g}-{hi:g}"
        parts.append(f"{label}: {sum(r > 1 for r in band)}/{len(band)}")
    return ", ".join(parts)


def figure8_best_plan(result: Result, pairs: list[tuple[str, float]]) -> str:
    """STAIRs' wins (pairs: case, other / stairs) in the setups whose random
    plan is the best of all plans by the estimates (plan_excess_any within
    BEST_PLAN_SLACK): there the eddy can only match the SHJ's work, so these
    setups bound what routing alone can win."""
    best = {f"setup={s['setup']}" for s in result.setups
            if s.get("shj_plan_excess_any") is not None
            and float(s["shj_plan_excess_any"]) < BEST_PLAN_SLACK}
    ratios = [r for case, r in pairs if case in best]
    return (f"the random plan the best of all plans (bushy included) in {len(ratios)}: "
            f"STAIRs faster in {sum(r > 1 for r in ratios)} of them")


# Figure 8's SHJ goal restated (issue 48): over the setups where the SHJ's
# random plan handles at least this many times the tuples of the best
# left-deep plan (shj_plan_excess), there is something for STAIRs to repair.
REPAIR_EXCESS = 1.1


def figure8_base_pairs(result: Result, config: str) -> list[tuple[str, float]]:
    """(case, config / base) per setup, paired by round (medians over rounds)."""
    return figure8_pairs(result, config, against="base")


def figure8_restated_goals(result: Result, shj: list[tuple[str, float]]) -> None:
    """Issue 48's restatement of Figure 8's goals: STAIRs faster than the
    static SHJ in >= 95% of the setups with something to repair, and the
    eddy with its defaults never over 1.5x PostgreSQL's plan (STAIRs' worst
    against PostgreSQL's plan beside it: STAIRs pay the setup's delays,
    which PostgreSQL's plan does not see)."""
    repair = {f"setup={s['setup']}" for s in result.setups
              if s.get("shj_plan_excess") is not None
              and float(s["shj_plan_excess"]) >= REPAIR_EXCESS}
    wins = [r > 1 for case, r in shj if case in repair]
    text = f"STAIRs faster than SHJ in >= 95% of setups with SHJ plan >= {REPAIR_EXCESS:g}x best"
    if wins:
        add_goal(result, "8", text, sum(wins) >= 0.95 * len(wins),
                 f"{sum(wins)}/{len(wins)} ({100 * sum(wins) / len(wins):.0f}%)")
    else:
        add_goal(result, "8", text, None, "no such setups")
    eddy = figure8_base_pairs(result, "eddy")
    text = "eddy (defaults) never over 1.5x Base in any setup"
    if eddy:
        worst_case, worst = max(eddy, key=lambda p: p[1])
        ratios = sorted(r for _, r in eddy)
        stairs = figure8_base_pairs(result, "stairs")
        also = (f"; STAIRs / Base: median {statistics.median(r for _, r in stairs):.2f}x, "
                f"worst {max(r for _, r in stairs):.2f}x" if stairs else "")
        add_goal(result, "8", text, worst <= 1.5,
                 f"worst {worst:.2f}x ({worst_case}), median {statistics.median(ratios):.2f}x, "
                 f"over 1.5x in {sum(r > 1.5 for r in ratios)}/{len(ratios)}" + also)
    else:
        add_goal(result, "8", text, None, "not measured")


def compute_goals(result: Result, args: argparse.Namespace) -> None:
    result.goals = []
    if "9" in args.figures:
        for n in args.rst_rows:
            case = f"rows={n}"
            e, b = median_ms(result, "9", case, "eddy"), median_ms(result, "9", case, "base")
            if e is None or b is None:
                add_goal(result, "9", f"eddy (defaults) <= 0.5x Base at {n:,} rows", None,
                     "not measured")
            else:
                add_goal(result, "9", f"eddy (defaults) <= 0.5x Base at {n:,} rows", e <= 0.5 * b,
                     f"{e / b:.2f}x ({e:.1f} / {b:.1f} ms)")
    if "7" in args.figures:
        case = f"sf={args.sf:g}"

        def ratio_goal(text: str, num: str, den: str, ok: Callable[[float], bool]) -> None:
            a, b = median_ms(result, "7i", case, num), median_ms(result, "7i", case, den)
            if a is None or b is None:
                why = unavailable(result, "7i", num if a is None else den) or "not measured"
                add_goal(result, "7", text, None, why)
            else:
                add_goal(result, "7", text, ok(a / b), f"{a / b:.2f}x ({a:.1f} / {b:.1f} ms)")

        ratio_goal("STAIRs <= 1.15x routed right", "stairs", "right", lambda r: r <= 1.15)
        ratio_goal("EddyJoins >= 1.2x STAIRs", "eddyjoins", "stairs", lambda r: r >= 1.2)
        stairs_ms = median_ms(result, "7i", case, "stairs")
        mig = counter(result, "7i", case, "stairs", "migration_time")
        moves = counter(result, "7i", case, "stairs", "migrations") or 0
        greedy = counter(result, "7i", case, "stairs-greedy", "largest_migration_fraction")
        also = ("" if greedy is None else
                f"; greedy: largest migration after {100 * greedy:.0f}% of the tuples routed")
        if stairs_ms is None or mig is None or not moves:
            add_goal(result, "7", "migration <= 10% of STAIRs' time", None,
                 ("STAIRs made no migration" if moves == 0 else "no migration time")
                 if stairs_ms else "STAIRs not measured")
        else:
            add_goal(result, "7", "migration <= 10% of STAIRs' time", mig <= 0.1 * stairs_ms,
                 f"{100 * mig / stairs_ms:.1f}% ({mig:.1f} of {stairs_ms:.1f} ms, "
                 f"{moves} migrations)")
        frac = counter(result, "7i", case, "stairs", "largest_migration_fraction")
        first = counter(result, "7i", case, "stairs", "first_migration_fraction")
        if frac is None:
            add_goal(result, "7", "switch at 45-65% of orders seen", False if stairs_ms else None,
                 ("STAIRs made no migration" if stairs_ms else "STAIRs not measured") + also)
        else:
            add_goal(result, "7", "switch at 45-65% of orders seen", 0.45 <= frac <= 0.65,
                 f"largest migration after {100 * frac:.0f}% of the tuples routed "
                 f"(first after {100 * first:.0f}%)" + also)
        ratio_goal("SteMs slower than STAIRs", "stems", "stairs", lambda r: r > 1.0)
    if "8" in args.figures:
        shj = figure8_pairs(result, "shj")
        ej = figure8_pairs(result, "eddyjoins")
        shj_med = figure8_median_pairs(result, "shj")
        ej_med = figure8_median_pairs(result, "eddyjoins")
        if shj:
            wins = sum(r > 1 for _, r in shj)
            # the count over the setups with initial delays and without
            delayed = {f"setup={s['setup']}" for s in result.setups if s["delays_ms"]}
            calm = [r for case, r in shj if case not in delayed]
            held = [r for case, r in shj if case in delayed]
            paid = ("which the SHJ pays too" if args.shj_sources != "none"
                    else "which the SHJ does not pay")
            add_goal(result, "8", "STAIRs faster than SHJ in >= 90% of setups",
                 wins >= 0.9 * len(shj), f"{wins}/{len(shj)} ({100 * wins / len(shj):.0f}%); "
                 f"setups without initial delays: {sum(r > 1 for r in calm)}/{len(calm)}, "
                 f"with ({paid}): {sum(r > 1 for r in held)}/{len(held)}; "
                 "by the SHJ plan's estimated tuples over the best plan's: " +
                 figure8_bands(result, shj) + "; " + figure8_best_plan(result, shj) +
                 f"; by the medians over the rounds: {sum(r > 1 for _, r in shj_med)}"
                 f"/{len(shj_med)}")
        else:
            add_goal(result, "8", "STAIRs faster than SHJ in >= 90% of setups", None, "no setups")
        figure8_restated_goals(result, shj)
        if ej:
            close = sum(abs(r - 1) <= 0.1 for _, r in ej)
            worst_case, worst = min(ej, key=lambda p: p[1])
            close_med = sum(abs(r - 1) <= 0.1 for _, r in ej_med)
            worst_med = min((r for _, r in ej_med), default=worst)
            add_goal(result, "8", "STAIRs within 10% of EddyJoins in >= 60% of setups",
                 close >= 0.6 * len(ej), f"{close}/{len(ej)} ({100 * close / len(ej):.0f}%); "
                 f"by the medians over the rounds: {close_med}/{len(ej_med)}")
            add_goal(result, "8", "STAIRs never slower than EddyJoins by > 1.5x",
                 worst >= 1 / 1.5, f"worst: STAIRs {1 / worst:.2f}x EddyJoins ({worst_case}); "
                 f"by the medians over the rounds: {1 / worst_med:.2f}x")
        else:
            for text in ("STAIRs within 10% of EddyJoins in >= 60% of setups",
                         "STAIRs never slower than EddyJoins by > 1.5x"):
                add_goal(result, "8", text, None, "no setups")


def summary_text(result: Result, args: argparse.Namespace) -> str:
    lines = []
    by_case: dict[tuple[str, str], list[SummaryRow]] = {}
    for row in result.summary:
        by_case.setdefault((row.figure, row.case), []).append(row)
    for (figure, case), rows in by_case.items():
        if figure == "8":
            continue
        lines.append(f"figure {figure} {case}: median ms [IQR] (x Base)")
        for row in rows:
            vs = f"({row.vs_base:.2f}x)" if row.vs_base else ""
            aa = (f"  A/A {row.aa_ratio_min:.2f}-{row.aa_ratio_max:.2f}"
                  if row.aa_ratio_min is not None and row.aa_ratio_max is not None else "")
            lines.append(f"  {row.config:<16}{row.median_ms:>11.1f} "
                         f"[{row.q1_ms:.1f}-{row.q3_ms:.1f}] {vs}{aa}")
    if result.setups:
        lines.append(f"figure 8: {len(result.setups)} setups")
        for other in ("shj", "stems", "eddyjoins", "stairs-greedy"):
            pairs = figure8_pairs(result, other)
            if pairs:
                ratios = sorted(r for _, r in pairs)
                wins = sum(r > 1 for r in ratios)
                lines.append(f"  {other:<16}/ STAIRs: median {statistics.median(ratios):.2f}x, "
                             f"range {ratios[0]:.2f}-{ratios[-1]:.2f}x, STAIRs faster in "
                             f"{wins}/{len(ratios)}")
    if result.goals:
        lines.append("goals:")
        for g in result.goals:
            lines.append(f"  [{g.status:>4}] figure {g.figure}: {g.goal}: {g.value}")
    for u in result.unavailable:
        lines.append(f"unavailable: figure {u['figure']} {u['config']}: {u['reason']}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- output

def kept_figure(figure: str, figures: list[str]) -> bool:
    """Is a row of ``figure`` ('9', '7i', '7ii', '7iii', '8') of a figure not run?"""
    return figure[:1] not in figures


def keep_other_figures(result: Result, out: Path, figures: list[str]) -> dict | None:
    """Take the rows of the figures not in ``figures`` from ``out``'s
    results.json (--keep-other-figures); returns the earlier document, whose
    goals for those figures the caller keeps once it has computed its own."""
    path = out / "results.json"
    if not path.exists():
        return None
    old = json.loads(path.read_text())
    result.runs[:0] = [Run(**r) for r in old["runs"] if kept_figure(r["figure"], figures)]
    result.counters[:0] = [r for r in old["counters"] if kept_figure(r["figure"], figures)]
    result.unavailable[:0] = [r for r in old["unavailable"]
                              if kept_figure(r["figure"], figures)]
    if "7" not in figures:
        result.output_times = old["output_times"]
    if "8" not in figures:
        result.setups = old["setups"]
    kept = sorted({r["figure"][:1] for r in old["runs"] if kept_figure(r["figure"], figures)})
    result.settings["kept_figures"] = {"figures": kept, "settings": old["settings"],
                                       "environment": old["environment"]}
    if kept:
        result.notes.append(f"Figures {', '.join(kept)} are kept from an earlier run (settings "
                            "and environment under settings.kept_figures).")
    return old


def write_results(result: Result, out: Path) -> None:
    tables = [Table("measurements.csv", result.runs, harness.run_columns(Run)),
              Table("summary.csv", result.summary), Table("counters.csv", result.counters)]
    if result.output_times:
        tables.append(Table("fig7iii_output.csv", result.output_times))
    if result.setups:
        tables.append(Table("fig8_setups.csv", result.setups))
    harness.write_results(result, out, tables)


def label(config: str) -> str:
    if config.startswith("shj-"):
        return "SHJ " + config[4:]
    return LABELS.get(config, config)


def bars(ax: Any, rows: list[SummaryRow], title: str) -> None:
    cmap = {"base": "#777777", "base-aa": "#aaaaaa", "eddy": "#17becf", "eddyjoins": "#1f77b4",
            "stairs": "#d62728", "stairs-greedy": "#ff9896", "stems": "#2ca02c",
            "right": "#9467bd"}
    xs = range(len(rows))
    ys = [r.median_ms for r in rows]
    lo = [max(0.0, r.median_ms - r.q1_ms) for r in rows]
    hi = [max(0.0, r.q3_ms - r.median_ms) for r in rows]
    ax.bar(xs, ys, yerr=[lo, hi], capsize=2, edgecolor="black", linewidth=0.4,
           color=[cmap.get(r.config, "#bcbd22") for r in rows])
    ax.set_xticks(list(xs))
    ax.set_xticklabels([label(r.config) for r in rows], rotation=35, ha="right", fontsize=8)
    ax.set_ylabel("median time, ms (whiskers: IQR)")
    ax.set_title(title, fontsize=9)


def plot(result: Result, out: Path) -> list[Path]:
    from matplotlib.ticker import FormatStrFormatter

    plt = harness.pyplot()

    written: list[Path] = []
    fig9 = [r for r in result.summary if r.figure == "9"]
    if fig9:
        cases = list(dict.fromkeys(r.case for r in fig9))
        fig, axes = plt.subplots(1, len(cases), figsize=(5.5 * len(cases), 4.2), squeeze=False)
        for ax, case in zip(axes[0], cases, strict=True):
            bars(ax, [r for r in fig9 if r.case == case],
                 f"Figure 9: R ⋈ S ⋈ T, {case.split('=')[1]} rows per table")
        written.append(harness.save_figure(fig, out / "fig9.png"))
    fig7 = [r for r in result.summary if r.figure == "7i"]
    hold = [r for r in result.summary if r.figure == "7ii"]
    if fig7 or hold or result.output_times:
        fig, axes = plt.subplots(1, 3, figsize=(16, 4.4))
        if fig7:
            bars(axes[0], fig7, f"Figure 7(i): TPC-H C ⋈ O ⋈ L, {fig7[0].case}")
        else:
            axes[0].set_axis_off()
        ax = axes[1]
        if hold:
            for config, colour in (("eddyjoins", "#1f77b4"), ("stairs", "#d62728"),
                                   ("stairs-greedy", "#ff9896")):
                pts = sorted((int(r.case.split("=")[1]), r.median_ms)
                             for r in hold if r.config == config)
                if pts:
                    ax.plot(*zip(*pts, strict=True), marker="o", color=colour, label=label(config))
            mig = sorted((int(c["case"].split("=")[1]), c.get("migration_time") or 0.0)
                         for c in result.counters
                         if c["figure"] == "7ii" and c["config"] == "stairs")
            if mig:
                ax.plot(*zip(*mig, strict=True), marker="x", linestyle="--", color="black",
                        label="STAIRs migration time")
            ax.set_xlabel("routing held until k% of orders seen")
            ax.set_ylabel("ms")
            ax.legend(fontsize=8, frameon=False)
            ax.set_title("Figure 7(ii): routing and migration held back", fontsize=9)
        else:
            ax.text(0.5, 0.5, "Figure 7(ii): eddy.routing_hold unavailable",
                    ha="center", va="center", fontsize=9)
            ax.set_axis_off()
        ax = axes[2]
        if result.output_times:
            for config in dict.fromkeys(p["config"] for p in result.output_times):
                pts = [(p["seconds"], p["rows"]) for p in result.output_times
                       if p["config"] == config]
                ax.step(*zip(*pts, strict=True), where="post", label=label(config))
            ax.set_xlabel("seconds since the query started")
            ax.set_ylabel("output tuples")
            ax.legend(fontsize=7, frameon=False)
            ax.set_title("Figure 7(iii): output over time", fontsize=9)
        else:
            ax.set_axis_off()
        written.append(harness.save_figure(fig, out / "fig7.png"))
    if result.setups:
        others = [o for o in ("shj", "stems", "eddyjoins") if figure8_pairs(result, o)]
        if others:
            fig, axes = plt.subplots(1, len(others), figsize=(5.2 * len(others), 4.0),
                                     squeeze=False)
            for ax, other in zip(axes[0], others, strict=True):
                ratios = sorted(r for _, r in figure8_pairs(result, other))
                heights = [max(r, 1 / r) for r in ratios]
                colours = ["#404040" if r > 1 else "#c0c0c0" for r in ratios]
                ax.bar(range(len(ratios)), heights, width=1.0, color=colours)
                ax.set_yscale("log")
                ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
                ax.yaxis.set_minor_formatter(FormatStrFormatter("%g"))
                ax.tick_params(axis="y", which="minor", labelsize=7)
                ax.axhline(1.0, color="black", linewidth=0.6)
                ax.set_xlabel("setups, ascending benefit of STAIRs")
                ax.set_ylabel("slower / faster")
                ax.set_title(f"{label(other)} vs STAIRs (dark: STAIRs faster)", fontsize=9)
            fig.suptitle(f"Figure 8: {len(result.setups)} random setups", fontsize=10)
            written.append(harness.save_figure(fig, out / "fig8.png"))
    return written


# --------------------------------------------------------------------------- CLI

def build_parser() -> argparse.ArgumentParser:
    ap = harness.parser(PROG, __doc__)
    harness.add_common_arguments(
        ap, dsn_help="libpq connection string (default: the PG* environment); the server "
                     "must preload eddy",
        out=DEFAULT_OUT,
        out_help=f"output folder (default: {DEFAULT_OUT}, untracked; "
                 "--out docs/experiments refreshes the committed results)",
        quick_help="smoke run: Figure 9 at 50,000 rows, TPC-H SF 0.1, "
                   f"{QUICK['setups']} setups, {QUICK['rounds']} rounds "
                   f"({QUICK['setup_rounds']} per setup)")
    ap.add_argument("--figures", type=csv_list(FIGURES + EDDIES_FIGURES),
                    default=list(FIGURES + EDDIES_FIGURES),
                    help="comma-separated, from 9, 7, 8, run in that order, and the Eddies "
                         "paper's e4 .. e13 (python -m eddytools.eddies_paper --quick if "
                         "--quick, into OUT/eddies, run first; default: all)")
    ap.add_argument("--long", action="store_true",
                    help=f"Figure 8 with the paper's {LONG_SETUPS} setups, and greedy "
                         "migration in Figures 7(ii) and 8 (it can thrash for minutes "
                         "on a Figure 8 setup)")
    ap.add_argument("--seed", type=int, default=1, help="seed of Figure 8's setups (default: 1)")
    ap.add_argument("--rounds", type=int, default=None,
                    help=f"timed rounds of Figures 9 and 7 (default: {FULL['rounds']})")
    ap.add_argument("--hold-rounds", type=int, default=None,
                    help="timed rounds per k of Figure 7(ii) (default: "
                         f"{FULL['hold_rounds']})")
    ap.add_argument("--setup-rounds", type=int, default=None,
                    help=f"timed rounds per Figure 8 setup (default: {FULL['setup_rounds']})")
    ap.add_argument("--setups", type=int, default=None,
                    help=f"Figure 8 setups (default: {FULL['setups']}; --long {LONG_SETUPS})")
    ap.add_argument("--policy", default="rank",
                    help="eddy.routing_policy of the adaptive configurations (default: rank; "
                         f"e.g. {', '.join(POLICIES)})")
    ap.add_argument("--fig7-policy", default="cumulative",
                    help="eddy.routing_policy of Figure 7's adaptive configurations (default: "
                         "cumulative, the paper's: its estimates make the paper's routing "
                         "mistake while lineitem's predicate passes nothing, and correct it "
                         "when it starts to pass; under rank the two joins of orders tie)")
    ap.add_argument("--shj-sources", choices=SHJ_SOURCES, default="same",
                    help="Figure 8's static SHJ reads its sources as the eddies do (same: "
                         "the proportional schedule, the setup's rates and initial delays; "
                         "the default), with the initial delays only (delays: alternate "
                         "reads) or with neither (none: before the SHJ honoured them)")
    ap.add_argument("--rst-rows", type=csv_list(conv=int), default=None,
                    help="Figure 9's rows per table, comma-separated (default: 50000,500000)")
    ap.add_argument("--sf", type=float, default=None, help="Figure 7's TPC-H scale factor")
    ap.add_argument("--syn-scale", type=float, default=None,
                    help="Figure 8's table sizes as a fraction of synthetic20's (default: 1)")
    ap.add_argument("--no-setup-counters", dest="setup_counters", action="store_false",
                    help="no EXPLAIN ANALYZE counters for Figure 8's setups")
    ap.add_argument("--master", default="local[*]", help="Spark master of the loader")
    ap.add_argument("--no-load", action="store_true",
                    help="do not run the Spark loader; the tables must exist")
    ap.add_argument("--skip-configs", type=lambda v: [c for c in v.split(",") if c],
                    default=[], metavar="NAMES",
                    help="comma-separated configurations not to run (e.g. stairs-greedy, "
                         "whose migrations can thrash for minutes on a Figure 8 setup); "
                         "listed as unavailable")
    ap.add_argument("--keep-other-figures", action="store_true",
                    help="keep the results of the figures not run that --out already holds "
                         "(its results.json): regenerate one figure of the committed results")
    return ap


def resolve(args: argparse.Namespace) -> None:
    preset = QUICK if args.quick else FULL
    for key in ("rst_rows", "sf", "syn_scale", "setups", "rounds", "hold_rounds",
                "setup_rounds"):
        if getattr(args, key) is None:
            setattr(args, key, preset[key])
    if args.long and args.setups == preset["setups"]:
        args.setups = LONG_SETUPS
    args.figures = [f for f in FIGURES if f in args.figures]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    eddies = [f for f in EDDIES_FIGURES if f in args.figures]
    resolve(args)
    eddies_status = run_eddies_paper(args, eddies) if eddies else 0
    if not args.figures:
        return eddies_status
    if min(args.rounds, args.hold_rounds, args.setup_rounds) < 1 or args.setups < 0 \
            or args.sf <= 0 or args.syn_scale <= 0 \
            or any(n < 10 or n % 10 for n in args.rst_rows):
        print("experiments: --rounds, --hold-rounds and --setup-rounds must be >= 1, "
              "--setups >= 0, --sf and --syn-scale > 0, --rst-rows multiples of 10",
              file=sys.stderr)
        return 2
    result = Result(settings=harness.settings_record(args, PROG, argv))
    shj_note = {
        "same": "Figure 8's static SHJ reads its base-relation inputs as the eddies read "
                "their sources: the proportional schedule (a join input paced by the base "
                "relations under it, read stepwise), the setup's rates and initial delays.",
        "delays": "Figure 8's static SHJ reads its inputs alternately and honours the "
                  "setup's initial delays, not its rates (--shj-sources delays).",
        "none": "Figure 8's static SHJ reads its inputs alternately and ignores the "
                "setup's rates and delays, which apply to the eddies only "
                "(--shj-sources none).",
    }[args.shj_sources]
    result.notes = [
        shj_note,
        "Figures 7 and 9's static SHJs read their inputs alternately.",
        "Figure 8's eddies start from the planner's estimates, not from the random plan "
        "that the SHJ is forced to.",
        "Figure 7's switch point is the position among all tuples routed of the "
        "migration that moved the most tuples (under the proportional schedule every "
        "source is read at the same pace).",
    ]
    earlier = keep_other_figures(result, args.out, args.figures) \
        if args.keep_other_figures else None
    progress = harness.progress_printer(args.no_progress)

    def run() -> None:
        harness.prepare_eddy(args.dsn)
        if not args.no_load:
            load_data(args.dsn, args, quiet=args.no_progress)
        with connect(args.dsn) as conn:
            harness.load_eddy(conn)
            result.environment = harness.environment(conn)
            run_figures(conn, args, result, progress)

    def conclude() -> tuple[str, str]:
        summarize(result)
        compute_goals(result, args)
        if earlier is not None:
            result.goals += [Goal(**g) for g in earlier["goals"]
                             if kept_figure(g["figure"], args.figures)]
        write_results(result, args.out)
        pngs = [] if args.no_plots else plot(result, args.out)
        return summary_text(result, args), (
            f"{args.out}/measurements.csv, summary.csv, counters.csv, results.json"
            + (f"; plots: {', '.join(p.name for p in pngs)}" if pngs else "")
            + f"; {result.environment['seconds']:.0f} s")

    try:
        status = harness.run("experiments", result, run, conclude)
        return eddies_status or status
    except ConfigUnavailable as e:
        print(f"experiments: routing policy {e}", file=sys.stderr)
        return 2


def run_eddies_paper(args: argparse.Namespace, figures: list[str]) -> int:
    """The Eddies paper's figures (eddytools.eddies_paper) into OUT/eddies,
    with --quick, --no-plots and --no-progress passed on; its exit status."""
    from eddytools import eddies_paper

    argv = ["--dsn", args.dsn, "--out", str(args.out / "eddies"), "--figures",
            ",".join(figures)]
    argv += [o for o, on in (("--quick", args.quick), ("--no-plots", args.no_plots),
                             ("--no-progress", args.no_progress)) if on]
    return eddies_paper.main(argv)


def cli() -> None:
    """Console script ``eddy-experiments``."""
    sys.exit(main())


if __name__ == "__main__":
    cli()
