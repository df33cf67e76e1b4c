"""The SteMs paper's Figures 7 and 8 (Raman, Deshpande & Hellerstein, ICDE
2003, sections 4.2-4.3) on the hybrid index/hash join (issue 46,
extension/src/mod_hybrid.c): data, configurations, answer checks, output over
time, counters and the paper's claims as pass/fail goals.

    python -m eddytools.stems_paper --dsn "host=... dbname=..." [--out experiments-results/stems]
    python -m eddytools.stems_paper --quick --out /tmp/stems     # a smoke run

Figures:

  s7  head-of-line blocking: R(key, a) of 1,000 rows over 250 distinct a,
      joined to S(x, pay) (--s-rows rows, 4 per x) reached only through its
      index on x, each lookup slowed by eddy.debug_index_delay (--delay-us,
      a busy wait, as delay() is): the plain index join (every R tuple looks
      its key up) against the index join with the cache (a hybrid join whose
      relation is reached by index only: one lookup per distinct key), and
      the hybrid join with S scanned as well.
  s8  hybridization: R(key, a) of --r8-rows rows joined to T(x, pay) of
      --t-rows rows, scanned and indexed (slowed likewise): the index join,
      the symmetric hash join and the hybrid (eddy.hybrid_route = auto).
      The hash join is the faster here.
  s8f the same with the index not slowed: the index join is the faster.
      (--r8-rows and --t-rows are ten times the first runs': the whole run
      took 25-75 ms there and a tenth of it 2-7 ms, the size of the 3
      lookups the hybrid makes to learn their cost.)
  s7stairs  the STAIRs paper's Figure 7 query (TPC-H customer, orders and
      lineitem at --stairs-sf, loaded by the Spark loader as make experiments
      loads them, eddytools.experiments) with access modules: base
      (PostgreSQL's plan), stairs (the adaptive configuration of make
      experiments' Figure 7: cumulative routing, proportional schedule,
      guarded migration, every predicate routed, sequential scans only) and
      hybrid (the same with eddy.join_method = hybrid and PostgreSQL's
      indexes available to the eddy; the hybrid join refuses migration,
      which EXPLAIN ANALYZE says).  Its eddies' index lookups are not slowed.

Configurations (session settings after RESET ALL; jit off, no parallel
workers): base (eddy.enabled = off: PostgreSQL's own plan, with the index
not slowed: the delay is the eddy's), indexjoin (eddy.join_method = index
and eddy.index_cache = off: the paper's index join, which keeps nothing),
cache (eddy.join_method = hybrid with PostgreSQL's plan forced to an index
nested loop, so the relation is reached by index only), hybrid
(eddy.join_method = hybrid) and hash (eddy.join_method = hash).  Each
configuration runs once unrecorded with its answer (row count and an
order-independent digest) checked against base's, once under EXPLAIN ANALYZE
for its counters (index lookups, cache hits), then --rounds rounds in an
order rotated from round to round, each streamed through a server-side
cursor (output rows over time, client-side timestamps; the first row's time)
right after an unrecorded run of the same configuration (--no-warm: none;
the rotation alone keeps each configuration's predecessor, and one that
follows a full scan of T finds the index's pages evicted).  Times are
medians over the rounds, per tenth of the output too.

Exit statuses: 0 success, 1 database error, 2 usage error, 3 an answer
differed (never a data point).
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from eddytools import harness
from eddytools.db import apply_settings, connect, eddy_nodes, explain_json, rows_digest

PROG = "eddytools.stems_paper"


@dataclass
class Config:
    name: str
    gucs: dict[str, str]


@dataclass
class Run:
    figure: str
    config: str
    round: int
    seconds: float
    first_row: float
    rows: int
    warm_up: bool = False      # the unrecorded run before a recorded one (A/A)


@dataclass
class StemsResult(harness.Result[Run]):
    output: list[dict[str, Any]] = field(default_factory=list)
    counters: list[dict[str, Any]] = field(default_factory=list)
    goals: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def ddl(args: argparse.Namespace) -> str:
    s_keys = max(args.s_rows // 4, 250)
    return f"""
DROP TABLE IF EXISTS s7r, s7s, s8r, s8t;
CREATE TABLE s7r (key int, a int);
INSERT INTO s7r SELECT g, (g * 7919) % 250 FROM generate_series(1, 1000) g;
CREATE TABLE s7s (x int, pay text);
INSERT INTO s7s SELECT ((g::bigint * 104729) % {s_keys})::int, 'pay' || g
  FROM generate_series(1, {args.s_rows}) g;
CREATE INDEX s7s_x ON s7s (x);
CREATE TABLE s8r (key int, a int);
INSERT INTO s8r SELECT g, ((g::bigint * 7919) % {args.t_rows // 2})::int
  FROM generate_series(1, {args.r8_rows}) g;
CREATE TABLE s8t (x int, pay text);
INSERT INTO s8t SELECT ((g::bigint * 104729) % {args.t_rows // 2})::int, 'pay' || g
  FROM generate_series(1, {args.t_rows}) g;
CREATE INDEX s8t_x ON s8t (x);
VACUUM ANALYZE s7r; VACUUM ANALYZE s7s; VACUUM ANALYZE s8r; VACUUM ANALYZE s8t;
"""


QUERIES = {
    "s7": "SELECT r.key, s.pay FROM s7r r JOIN s7s s ON s.x = r.a",
    "s8": "SELECT r.key, t.pay FROM s8r r JOIN s8t t ON t.x = r.a",
    "s8f": "SELECT r.key, t.pay FROM s8r r JOIN s8t t ON t.x = r.a",
}
FIGURES = ("s7", "s8", "s8f", "s7stairs")


def stairs_query(args: argparse.Namespace) -> str:
    from eddytools.experiments import tpch_query
    return tpch_query(args.stairs_sf)


def query_of(figure: str, args: argparse.Namespace) -> str:
    return stairs_query(args) if figure == "s7stairs" else QUERIES[figure]


def configs(figure: str, delay: int) -> list[Config]:
    slow = {"eddy.debug_index_delay": str(0 if figure == "s8f" else delay)}
    nestloop = {"enable_hashjoin": "off", "enable_mergejoin": "off"}
    plain = {"eddy.index_cache": "off"}   # the paper's index join keeps nothing
    if figure == "s7stairs":
        from eddytools import experiments as ex
        stairs = ex.eddy_gucs("cumulative", **ex.FIG7_ROUTED, **{"eddy.migration": "guarded"})
        hybrid = {**stairs, "eddy.join_method": "hybrid", "enable_indexscan": "on",
                  "enable_bitmapscan": "on"}
        return [Config("base", {**ex.SESSION, **ex.BASE_GUCS}),
                Config("stairs", {**ex.SESSION, **stairs}),
                Config("hybrid", {**ex.SESSION, **hybrid})]
    if figure == "s7":
        return [
            Config("base", {"eddy.enabled": "off"}),
            Config("indexjoin", {"eddy.join_method": "index", **plain, **slow, **nestloop}),
            Config("cache", {"eddy.join_method": "hybrid", **slow, **nestloop}),
            Config("hybrid", {"eddy.join_method": "hybrid", **slow}),
        ]
    return [
        Config("base", {"eddy.enabled": "off"}),
        Config("indexjoin", {"eddy.join_method": "index", **plain, **slow}),
        Config("hash", {"eddy.join_method": "hash"}),
        Config("hybrid", {"eddy.join_method": "hybrid", **slow}),
    ]


def configure(conn: psycopg.Connection, gucs: dict[str, str]) -> None:
    """RESET ALL, the session settings, then ``gucs``."""
    apply_settings(conn, {"jit": "off", "max_parallel_workers_per_gather": "0",
                          "synchronize_seqscans": "off", **gucs}, reset=True)


def stream(conn: psycopg.Connection, cfg: Config, sql: str, batch: int = 50
           ) -> tuple[list[tuple[float, int]], list[tuple]]:
    """(seconds, rows so far) after every fetched batch and at the end, and the rows."""
    configure(conn, cfg.gucs)
    return harness.stream_rows(conn, sql, batch, "stems_stream")


def counters(conn: psycopg.Connection, cfg: Config, sql: str) -> dict[str, Any]:
    """The join module's counters under EXPLAIN ANALYZE (eddies only)."""
    configure(conn, cfg.gucs)
    eddies = eddy_nodes(explain_json(conn, sql, analyze=True, verbose=True))
    out: dict[str, Any] = {"lookups": None, "cache": None, "by_hash": None,
                           "after_scan": None, "duplicates": None, "uncached": None}

    def add(key: str, value: Any) -> None:
        # several joins (s7stairs): their counters summed
        if value is not None:
            out[key] = (out[key] or 0) + value

    for op in (eddies[0].get("Operators", []) if eddies else []):
        kind = op.get("Operator Type")
        if kind == "Index Join":
            add("lookups", op.get("Tuples In"))
        elif kind == "Hybrid Join":
            add("lookups", op.get("Probes by Index"))
            add("cache", op.get("Probes from Cache"))
            add("by_hash", op.get("Probes by Hash"))
            add("after_scan", op.get("Probes after Scan"))
            add("duplicates", op.get("Duplicates Dropped"))
            add("uncached", op.get("Uncached Lookups"))
        elif kind == "Hash Join":
            add("lookups", 0)
    if eddies:
        from eddytools import experiments as ex
        routed = eddies[0].get("Tuples Routed")
        moves = ex.migration_moves(eddies[0].get("Migration History"))
        out["migrations"] = len(moves)
        out["switch_fraction"] = (ex.largest_migration_at(moves) / routed
                                  if moves and routed else None)
        out["state_migration"] = eddies[0].get("State Migration")
    out["operators"] = ", ".join(str(op.get("Operator Type"))
                                 for op in (eddies[0].get("Operators", []) if eddies else []))
    out["eddy"] = bool(eddies)
    return out


def run_figure(conn: psycopg.Connection, figure: str, args: argparse.Namespace,
               result: StemsResult, progress: Any) -> None:
    sql = query_of(figure, args)
    cfgs = configs(figure, args.delay_us)
    expected: tuple[int, str] | None = None
    for cfg in cfgs:
        progress(f"{figure} {cfg.name} (warm-up, answer check)")
        _, rows = stream(conn, cfg, sql)
        got = (len(rows), rows_digest(rows))
        if expected is None:
            expected = got
        elif got != expected:
            result.errors.append(f"{figure} {cfg.name}: {got[0]} rows, digest {got[1][:12]}, "
                                 f"expected {expected[0]} rows, {expected[1][:12]}")
        if cfg.name != "base":
            c = counters(conn, cfg, sql)
            result.counters.append({"figure": figure, "config": cfg.name, **c})
    for r in range(args.rounds):
        for cfg in harness.rotated(cfgs, r):
            # a rotation keeps each configuration's predecessor (the hybrid
            # always ran after the hash join's full scan of T, which evicts
            # the index's pages): each recorded run follows one of its own
            for warm_up in ((True, False) if args.warm else (False,)):
                progress(f"{figure} {cfg.name} (round {r + 1}/{args.rounds}"
                         + (", warm-up)" if warm_up else ")"))
                points, rows = stream(conn, cfg, sql)
                first = next((t for t, n in points if n > 0), points[-1][0])
                result.runs.append(Run(figure, cfg.name, r, round(points[-1][0], 6),
                                       round(first, 6), len(rows), warm_up))
            result.output += [{"figure": figure, "config": cfg.name, "round": r,
                               "seconds": round(t, 6), "rows": n} for t, n in thin(points)]


def thin(points: list[tuple[float, int]], steps: int = 100) -> list[tuple[float, int]]:
    """The stream's points kept for the output files: the start, the first
    point at or past each 1/steps of the rows (so each tenth's time is
    exactly the unthinned stream's) and the end.  A batch of 50 rows a point
    made Figure 8's 40,000-row streams 800 points each, 4.6 MB of
    results.json for 5 rounds."""
    if not points:
        return []
    total = points[-1][1]
    kept = [points[0]]
    level = 1
    for t, n in points[1:]:
        if n * steps >= level * total:
            kept.append((t, n))
            while level <= steps and n * steps >= level * total:
                level += 1
    if kept[-1] != points[-1]:
        kept.append(points[-1])
    return kept


def median_seconds(result: StemsResult, figure: str, config: str, what: str = "seconds"
                   ) -> float:
    return statistics.median(getattr(r, what) for r in result.runs
                             if r.figure == figure and r.config == config and not r.warm_up)


def by_round(result: StemsResult, figure: str, config: str, warm_up: bool = False
             ) -> dict[int, float]:
    """A configuration's recorded times (or its warm-up runs') by round."""
    return {r.round: r.seconds for r in result.runs
            if r.figure == figure and r.config == config and r.warm_up == warm_up}


def tenths(result: StemsResult, figure: str, config: str) -> list[float]:
    """The times at which each tenth of the output was out: per tenth, the
    median over the rounds."""
    per_round = []
    for r in sorted({p["round"] for p in result.output}):
        pts = [(p["seconds"], p["rows"]) for p in result.output
               if p["figure"] == figure and p["config"] == config and p["round"] == r]
        if not pts:
            continue
        total = max(n for _, n in pts)
        per_round.append([next(t for t, n in pts if n >= total * k / 10)
                          for k in range(1, 11)])
    return [statistics.median(tt[k] for tt in per_round) for k in range(10)]


def summarize(result: StemsResult, args: argparse.Namespace) -> None:
    for figure in args.figures:
        for cfg in configs(figure, args.delay_us):
            result.summary.append({
                "figure": figure, "config": cfg.name,
                "median_seconds": round(median_seconds(result, figure, cfg.name), 4),
                "median_first_row": round(median_seconds(result, figure, cfg.name,
                                                         "first_row"), 4)})
    by = {(c["figure"], c["config"]): c for c in result.counters}

    def goal(figure: str, name: str, ok: bool, detail: str) -> None:
        result.goals.append({"figure": figure, "goal": name, "pass": ok, "detail": detail})

    if "s7" in args.figures:
        cache = by[("s7", "cache")]
        goal("s7", "one index lookup per distinct key (250)", cache["lookups"] == 250,
             f"cache: {cache['lookups']} lookups, {cache['cache']} answered from the cache; "
             f"index join: {by[('s7', 'indexjoin')]['lookups']} lookups")
        ij = median_seconds(result, "s7", "indexjoin")
        ca = median_seconds(result, "s7", "cache")
        goal("s7", "all output sooner than the plain index join", ca < ij,
             f"cache {ca:.3f} s, index join {ij:.3f} s (medians)")
        f_ij = median_seconds(result, "s7", "indexjoin", "first_row")
        f_ca = median_seconds(result, "s7", "cache", "first_row")
        goal("s7", "first output no later than the plain index join", f_ca <= f_ij * 1.1,
             f"first batch: cache {f_ca * 1000:.1f} ms, index join {f_ij * 1000:.1f} ms")
    for f8 in ("s8", "s8f"):
        if f8 not in args.figures:
            continue
        times = {c: median_seconds(result, f8, c) for c in ("indexjoin", "hash", "hybrid")}
        faster = min(("indexjoin", "hash"), key=lambda c: times[c])
        # paired by round: the hybrid's time over the faster method's of the
        # same round, the median and its bootstrap 95% interval; A/A: the
        # faster method's recorded run over its warm-up run just before it
        ci = harness.paired_bootstrap_ci(by_round(result, f8, "hybrid"),
                                         by_round(result, f8, faster))
        aa = harness.paired_bootstrap_ci(by_round(result, f8, faster),
                                         by_round(result, f8, faster, warm_up=True))
        goal(f8, "hybrid within 1.1x of the faster of index and hash join (whole run)",
             ci.estimate is not None and ci.estimate <= 1.1,
             f"{ci.text()} of {faster} (paired, {ci.rounds} rounds; A/A {aa.text()}); medians: "
             + ", ".join(f"{c} {t:.3f} s" for c, t in times.items()))
        tt = {c: tenths(result, f8, c) for c in ("indexjoin", "hash", "hybrid")}
        worst = max(tt["hybrid"][k] / max(min(tt["indexjoin"][k], tt["hash"][k]), 1e-6)
                    for k in range(10))
        goal(f8, "hybrid within 1.2x of the faster in each tenth of the output "
             "(per tenth, medians over the rounds)",
             worst <= 1.2, f"worst tenth: {worst:.2f}x")
    if "s7stairs" in args.figures:
        t = {c: median_seconds(result, "s7stairs", c) for c in ("base", "stairs", "hybrid")}
        goal("s7stairs", "with access modules, the adaptive eddy within 1.3x of PostgreSQL's "
             "plan (the STAIRs configuration on scans alone beside it)",
             t["hybrid"] <= 1.3 * t["base"],
             f"hybrid {t['hybrid'] * 1000:.0f} ms ({t['hybrid'] / t['base']:.2f}x), "
             f"stairs {t['stairs'] * 1000:.0f} ms ({t['stairs'] / t['base']:.2f}x), "
             f"PostgreSQL {t['base'] * 1000:.0f} ms (medians)")
        for name in ("stairs", "hybrid"):
            c = by[("s7stairs", name)]
            frac = c.get("switch_fraction")
            goal("s7stairs", f"{name}: the routing switch (the largest state migration) "
                 "at 45-65% of the tuples routed",
                 frac is not None and 0.45 <= frac <= 0.65,
                 f"after {100 * frac:.0f}% ({c['migrations']} migrations)" if frac is not None
                 else f"no migration: {c.get('state_migration') or 'none made'}")


def write(result: StemsResult, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(harness.as_json(asdict(result)), indent=2)
                                      + "\n")
    for name, rows in (("measurements.csv", [asdict(r) for r in result.runs]),
                       ("summary.csv", result.summary), ("counters.csv", result.counters),
                       ("output.csv", result.output), ("goals.csv", result.goals)):
        if not rows:
            continue
        with open(out / name, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)


def plot(result: StemsResult, out: Path, figures: list[str]) -> list[Path]:
    plt = harness.pyplot()
    paths = []
    for figure in figures:
        fig, ax = plt.subplots(figsize=(6, 4))
        for cfg in configs(figure, 0):
            pts = [(p["seconds"], p["rows"]) for p in result.output
                   if p["figure"] == figure and p["config"] == cfg.name and p["round"] == 0]
            ax.plot([t for t, _ in pts], [n for _, n in pts], label=cfg.name)
        ax.set_xlabel("seconds")
        ax.set_ylabel("output rows")
        ax.set_title("STAIRs Figure 7 query with access modules: output over time"
                     if figure == "s7stairs" else
                     f"SteMs Figure {figure[1:2]}: output over time"
                     + (" (index not slowed)" if figure == "s8f" else ""), fontsize=9)
        ax.legend(fontsize=8)
        paths.append(harness.save_figure(fig, out / f"{figure}.png"))
    return paths


def summary_text(result: StemsResult) -> str:
    lines = [f"{s['figure']} {s['config']:10} {s['median_seconds']:8.3f} s  first row "
             f"{s['median_first_row'] * 1000:8.1f} ms" for s in result.summary]
    lines += [f"{c['figure']} {c['config']:10} lookups {c['lookups']}  cache {c['cache']}  "
              f"hash {c['by_hash']}  after scan {c['after_scan']}  duplicates {c['duplicates']}"
              for c in result.counters]
    lines += [f"[{'PASS' if g['pass'] else 'FAIL'}] {g['figure']}: {g['goal']} ({g['detail']})"
              for g in result.goals]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = harness.parser(PROG, __doc__)
    harness.add_common_arguments(ap, dsn_help="connection string of a server with eddy",
                                 out=Path("experiments-results/stems"),
                                 out_help="results folder (PUBLISH: docs/experiments/stems)",
                                 quick_help="1 round, smaller S and T")
    ap.add_argument("--figures", type=harness.csv_list(FIGURES), default=list(FIGURES))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--delay-us", type=int, default=500,
                    help="microseconds each index lookup of the eddy's joins waits")
    ap.add_argument("--s-rows", type=int, default=100_000)
    ap.add_argument("--r8-rows", type=int, default=20_000)
    ap.add_argument("--t-rows", type=int, default=4_000_000)
    ap.add_argument("--stairs-sf", type=float, default=1.0,
                    help="s7stairs: TPC-H scale factor (default 1; --quick: 0.1)")
    ap.add_argument("--master", default="local[*]", help="Spark master of the loader")
    ap.add_argument("--no-warm", dest="warm", action="store_false",
                    help="no unrecorded run of a configuration before each recorded one")
    args = ap.parse_args(argv)
    if args.quick:
        args.rounds, args.s_rows, args.t_rows, args.stairs_sf = 1, 20_000, 100_000, 0.1
        args.r8_rows, args.warm = 2_000, False
    if args.rounds < 1 or args.delay_us < 0 or args.t_rows < 2 or args.s_rows < 1000:
        print(f"{PROG}: --rounds >= 1, --delay-us >= 0, --t-rows >= 2, --s-rows >= 1000",
              file=sys.stderr)
        return 2
    result = StemsResult(settings=harness.settings_record(args, PROG, argv))
    result.notes = [
        "The index is slowed by eddy.debug_index_delay, a busy wait before each lookup "
        "of the eddy's index and hybrid joins; base (PostgreSQL's plan) is not slowed.",
        "The cache configuration forces PostgreSQL's plan to an index nested loop "
        "(enable_hashjoin and enable_mergejoin off at planning), which the hybrid join "
        "method keeps as an index join with the cache: the relation is not scanned.",
        "The hybrid ends T's scan early once it commits to the index (its cost rule: "
        "answering every R-side tuple still to come by index or cache costs no more "
        "than the rest of the scan); EXPLAIN ANALYZE's Tuples Read says (cut).",
        "s7stairs runs make experiments' Figure 7 query on its tables (loaded by the Spark "
        "loader if missing) under its session settings (work_mem 64MB, eddy.max_memory 4GB); "
        "its eddies' index lookups are not slowed (eddy.debug_index_delay is for s7-s8).",
    ]
    progress = harness.progress_printer(args.no_progress)

    def body() -> None:
        harness.prepare_eddy(args.dsn)
        with connect(args.dsn) as conn:
            harness.load_eddy(conn)
            result.environment = harness.environment(conn)
            progress("loading")
            for stmt in ddl(args).split(";"):
                if stmt.strip():
                    conn.execute(stmt)
            if "s7stairs" in args.figures:
                from eddytools.experiments import sf_prefix
                p = sf_prefix(args.stairs_sf)
                harness.run_loader(
                    args.dsn, [(["tpch", "--sf", f"{args.stairs_sf:g}", "--tables",
                                 "customer,orders,lineitem", "--order-by",
                                 "lineitem.l_shipdate", "--prefix", p],
                                [p + t for t in ("customer", "orders", "lineitem")])],
                    args.master, args.no_progress, app_name="eddy stems_paper loader")
            for figure in args.figures:
                run_figure(conn, figure, args, result, progress)

    def conclude() -> tuple[str, str]:
        summarize(result, args)
        write(result, args.out)
        pngs = [] if args.no_plots else plot(result, args.out, args.figures)
        return summary_text(result), (
            f"{args.out}/results.json, measurements.csv, summary.csv, counters.csv, "
            f"output.csv, goals.csv" + (f"; plots: {', '.join(p.name for p in pngs)}"
                                        if pngs else ""))

    return harness.run(PROG, result, body, conclude)


def cli() -> None:
    sys.exit(main())


if __name__ == "__main__":
    cli()
