"""The overhead benchmark of the TelegraphCQ study (Deshpande 2004, section 3),
end to end: data, experiments, answer checks, results files, plots.

    python -m eddytools.bench --dsn "host=... dbname=..." [--out docs/bench]
    python -m eddytools.bench --quick --out /tmp/bench      # smoke run, ~1 minute

Experiments (the study's Figure 4 queries):

  selections  No-Delay, Delay-0, Delay-10, Delay-100 over tenk1, every
              predicate a selection operator (eddy.selection_min_cost = 0)
  shj         Select-All-3/4/5, Select-Count-3/4/5: star joins of tenk1..5 on unique2
  index       3-X, 4-X, 5-X for X = 10, 1000 over hundredk1..5 (index on unique2),
              index nested loops forced for vanilla, eddy.join_method = index

Configurations: vanilla PostgreSQL (eddy.enabled = off), the static symmetric
hash join (eddy.static_shj, shj experiment only) and the eddy at every
--freqs reoptimization frequency.  The tables are generated and loaded with
the Spark loader (python -m spark_loader), which skips tables already loaded.

Method: one warm-up repetition (not recorded) warms the caches; in every
repetition each query runs once under every configuration, in an order
rotated from one repetition to the next.  Times are wall-clock times of
execute + fetch in one session (max_parallel_workers_per_gather = 0,
jit = off, work_mem = 64MB), normalized to vanilla's median of the same
query.  Every run's answer (row count and an order-independent digest of
the rows) must equal vanilla's; a mismatch is an error, never a data point,
and makes the exit status 3.

Output in --out: measurements.csv (every run), summary.csv, results.json
(settings, environment, every run, the summary, errors) and one PNG per
experiment (selections.png, shj.png, index.png).  The settings record the
command line, the environment the git commit of the build and whether its
work tree was dirty (eddytools.harness, shared with the other benchmarks).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg
from sqlglot import exp

from eddytools import bench_join, bench_selection, harness
from eddytools.db import apply_settings, connect, rows_digest
from eddytools.harness import Result, Table, csv_list
from eddytools.sqlast import DIALECT, parse

PROG = "eddytools.bench"
EXPERIMENTS = ("selections", "shj", "index")
TITLES = {
    "selections": "Cost of adaptivity: eddies with selections (Figure 5)",
    "shj": "Cost of adaptivity: eddies with symmetric hash joins (Figure 6)",
    "index": "Cost of adaptivity: eddies with index joins (Figure 7)",
}
FULL_ROWS = {"tenk": 10_000, "hundredk": 100_000}
QUICK_ROWS = {"tenk": 2_000, "hundredk": 5_000}
QUICK_SCHEMA = "eddy_bench_quick"
MIGRATIONS = ("off", "guarded", "greedy")   # eddy.migration's values
WRONG = "wrong"          # the configuration --inject-wrong-config adds
# The benchmark session's settings (every configuration starts from them).
SESSION = {"max_parallel_workers_per_gather": "0", "jit": "off", "work_mem": "64MB"}


class AnswerMismatch(Exception):
    """A configuration returned another answer than vanilla PostgreSQL."""


@dataclass
class Query:
    experiment: str
    name: str
    sql: str
    method: str           # "selection", "hash" or "index"


@dataclass
class Run:
    """One timed run: a row of measurements.csv."""
    experiment: str
    query: str
    config: str
    rep: int
    seconds: float
    rows: int
    digest: str


@dataclass
class SummaryRow:
    """One (experiment, query, configuration): a row of summary.csv.  Times
    in ms over the repetitions; normalized: over vanilla's median."""
    experiment: str
    query: str
    config: str
    n: int
    median_ms: float
    min_ms: float
    max_ms: float
    q1_ms: float
    q3_ms: float
    normalized: float
    normalized_min: float
    normalized_max: float
    normalized_q1: float
    normalized_q3: float


# --------------------------------------------------------------------------- queries

def experiment_queries(experiments: list[str]) -> list[Query]:
    """The study's queries, from bench_selection and bench_join, in figure order."""
    out: list[Query] = []
    if "selections" in experiments:
        for name in ("No-Delay", "Delay-0", "Delay-10", "Delay-100"):
            out.append(Query("selections", name,
                             bench_selection.QUERIES[name].format(t="tenk1"), "selection"))
    joins = bench_join.queries(["all", "count", "index"])
    if "shj" in experiments:
        for kind in ("All", "Count"):
            for n in (3, 4, 5):
                name = f"Select-{kind}-{n}"
                out.append(Query("shj", name, joins[name][1], "hash"))
    if "index" in experiments:
        for x in (10, 1000):
            for n in (3, 4, 5):
                name = f"{n}-{x}"
                out.append(Query("index", name, joins[name][1], "index"))
    return out


def wrong_query(query: str) -> str:
    """``query`` with one more predicate (half of its first table's rows): the
    deliberately wrong configuration that the answer check must catch."""
    tree = parse(query)
    assert isinstance(tree, exp.Select), query
    table = tree.find(exp.Table)
    assert table is not None, query
    return tree.where(f"{table.name}.unique2 % 2 = 1", dialect=DIALECT).sql(dialect=DIALECT)


def configs_for(experiment: str, args: argparse.Namespace) -> list[str]:
    configs = ["vanilla"]
    if experiment == "shj" and not args.no_shj:
        configs.append("shj")
    # a selection eddy has no join state to migrate
    migrations = ["off"] if experiment == "selections" else args.migration
    configs += [f"eddy@{f}" + ("" if m == "off" else f"+{m}")
                for f in args.freqs for m in migrations]
    if args.inject_wrong_config:
        configs.append(WRONG)
    return configs


def configure(conn: psycopg.Connection, config: str, q: Query, policy: str,
              schema: str) -> str:
    """Apply ``config`` for ``q`` in the session; return the SQL to run.

    Every configuration starts from RESET ALL, so that nothing leaks from the
    previous one (eddy.selection_min_cost = 0 of the selection experiment
    would make the join experiments' scan filters routed selections)."""
    eddy_config = "eddy@100" if config == WRONG else config
    eddy = eddy_config.startswith("eddy@")
    settings = session_settings(schema)
    if q.method == "selection":
        if eddy:
            settings |= {"eddy.enabled": "on", "eddy.static_shj": "off",
                         "eddy.selection_min_cost": "0", "eddy.routing_policy": policy,
                         "eddy.reopt_frequency": str(eddy_frequency(eddy_config))}
        else:
            settings |= {"eddy.enabled": "off", "eddy.static_shj": "off"}
    else:
        settings |= bench_join.join_settings(eddy_config, q.method)
        if eddy:
            settings["eddy.routing_policy"] = policy
    if eddy:
        settings["eddy.migration"] = eddy_migration(eddy_config)
    apply_settings(conn, settings, reset=True)
    return wrong_query(q.sql) if config == WRONG else q.sql


def eddy_frequency(config: str) -> int:
    """``eddy@F`` or ``eddy@F+M``: F, the reoptimization frequency."""
    return int(config.split("@")[1].partition("+")[0])


def eddy_migration(config: str) -> str:
    """``eddy@F+M``: M, the state migration policy (``eddy@F``: off)."""
    return config.partition("+")[2] or "off"


def answer_of(rows: list[tuple]) -> tuple[int, str]:
    """Row count and an order-independent digest of the rows (``rows_digest``:
    the same in every run, so that stored results can be compared)."""
    return len(rows), rows_digest(rows)


# --------------------------------------------------------------------------- data

def load_data(dsn: str, experiments: list[str], quick: bool, master: str,
              schema: str, quiet: bool) -> None:
    """tenk1..5 and hundredk1..5 with the Spark loader (tables already loaded
    with the same parameters are skipped by the loader itself)."""
    sets = ["tenk"] if set(experiments) & {"selections", "shj"} else []
    if "index" in experiments:
        sets.append("hundredk")
    jobs = []
    for name in sets:
        tables = [f"{name}{i}" for i in range(1, 6)]
        argv = (["wisconsin", "--rows", str(QUICK_ROWS[name]), "--tables", *tables]
                if quick else [name])
        jobs.append(([*argv, "--schema", schema], [f"{schema}.{t}" for t in tables]))
    harness.run_loader(dsn, jobs, master, quiet, app_name="eddy bench loader")


# --------------------------------------------------------------------------- measuring

def session_settings(schema: str) -> dict[str, str]:
    """The benchmark session's settings (every configuration starts from them)."""
    return {**SESSION, **({"search_path": f"{schema}, public"} if schema != "public" else {})}


def measure(conn: psycopg.Connection, queries: list[Query], args: argparse.Namespace,
            result: Result[Run]) -> None:
    """Run every query under every configuration, interleaved, recording runs;
    answer mismatches go to ``result.errors``."""
    from tqdm import tqdm

    plan = [(q, configs_for(q.experiment, args)) for q in queries]
    total = sum(len(c) * (args.reps + args.warmup) for _, c in plan)
    bar = tqdm(total=total, unit="run", file=sys.stderr, disable=args.no_progress, miniters=1,
               dynamic_ncols=True)
    try:
        for q, configs in plan:
            reference: tuple[int, str] | None = None
            bad: dict[str, tuple[int, str]] = {}   # config -> its first wrong answer
            runs: list[Run] = []
            for rep in range(args.warmup + args.reps):
                for config in harness.rotated(configs, rep):
                    bar.set_description(f"{q.experiment} {q.name} {config}", refresh=False)
                    text = configure(conn, config, q, args.policy, args.schema)
                    t0 = time.perf_counter()
                    rows = conn.execute(text).fetchall()
                    elapsed = time.perf_counter() - t0
                    answer = answer_of(rows)
                    if reference is None and config == "vanilla":
                        reference = answer
                    runs.append(Run(q.experiment, q.name, config, rep - args.warmup,
                                    elapsed, *answer))
                    bar.update()
            assert reference is not None   # vanilla ran in every repetition
            for r in runs:
                if (r.rows, r.digest) != reference:
                    bad.setdefault(r.config, (r.rows, r.digest))
            for config, (n, digest) in bad.items():
                result.errors.append(
                    f"answer mismatch: {q.experiment} {q.name} under {config}: "
                    f"{n} rows, digest {digest}; vanilla {reference[0]} rows, "
                    f"digest {reference[1]}")
            result.runs += [r for r in runs if r.rep >= 0 and r.config not in bad]
    finally:
        bar.close()


def summarize(result: Result[Run]) -> None:
    groups: dict[tuple[str, str, str], list[float]] = {}
    for r in result.runs:
        groups.setdefault((r.experiment, r.query, r.config), []).append(r.seconds)
    rows: list[SummaryRow] = []
    for (experiment, query, config), times in groups.items():
        base_times = groups.get((experiment, query, "vanilla"))
        base = statistics.median(base_times) if base_times else float("nan")
        med = statistics.median(times)
        q1, q3 = harness.quartiles(times)
        rows.append(SummaryRow(
            experiment, query, config, len(times),
            median_ms=med * 1e3, min_ms=min(times) * 1e3, max_ms=max(times) * 1e3,
            q1_ms=q1 * 1e3, q3_ms=q3 * 1e3,
            normalized=med / base, normalized_min=min(times) / base,
            normalized_max=max(times) / base, normalized_q1=q1 / base,
            normalized_q3=q3 / base))
    rows.sort(key=lambda r: (EXPERIMENTS.index(r.experiment), config_rank(r.config)))
    result.summary = rows   # stable: queries stay in the order they ran


def config_rank(config: str) -> tuple[int, int]:
    """vanilla, shj, the eddies by frequency, anything else last."""
    if config == "vanilla":
        return (0, 0)
    if config == "shj":
        return (1, 0)
    if config.startswith("eddy@"):
        return (2, eddy_frequency(config) * len(MIGRATIONS)
                + MIGRATIONS.index(eddy_migration(config)))
    return (3, 0)


def summary_table(result: Result[Run]) -> str:
    """The terminal table: per query, each configuration's median (ms),
    its ratio to vanilla and the ratio's min-max spread."""
    lines = []
    by_exp: dict[str, list[SummaryRow]] = {}
    for row in result.summary:
        by_exp.setdefault(row.experiment, []).append(row)
    for experiment in EXPERIMENTS:
        rows = by_exp.get(experiment)
        if not rows:
            continue
        configs = sorted(dict.fromkeys(r.config for r in rows), key=config_rank)
        queries = list(dict.fromkeys(r.query for r in rows))
        cell = {(r.query, r.config): r for r in rows}
        width = 30
        lines.append(f"{experiment}: median ms (x vanilla) [min-max x vanilla], "
                     f"n = {rows[0].n}")
        lines.append(f"{'query':<16}" + "".join(f"{c:>{width}}" for c in configs))
        for q in queries:
            line = f"{q:<16}"
            for c in configs:
                r = cell.get((q, c))
                if r is None:
                    line += f"{'-':>{width}}"
                elif c == "vanilla":
                    line += f"{r.median_ms:>{width}.2f}"
                else:
                    text = (f"{r.median_ms:.2f} ({r.normalized:.2f}x)"
                            f" [{r.normalized_min:.2f}-{r.normalized_max:.2f}]")
                    line += f"{text:>{width}}"
            lines.append(line)
        lines.append("")
    return "\n".join(lines)


# --------------------------------------------------------------------------- output

def write_results(result: Result[Run], out: Path) -> None:
    tables = [Table("measurements.csv", result.runs, harness.run_columns(Run),
                    {"seconds": ".6f"})]
    if result.summary:
        tables.append(Table("summary.csv", result.summary))
    harness.write_results(result, out, tables)


def plot(result: Result[Run], out: Path) -> list[Path]:
    """One PNG per experiment, as the study's Figures 5-7: grouped bars of the
    median time normalized to vanilla, one group per query, one bar per
    configuration, whiskers spanning the interquartile range of the runs."""
    plt = harness.pyplot()
    written = []
    for experiment in EXPERIMENTS:
        rows = [r for r in result.summary if r.experiment == experiment]
        if not rows:
            continue
        configs = sorted(dict.fromkeys(r.config for r in rows), key=config_rank)
        queries = list(dict.fromkeys(r.query for r in rows))
        cell = {(r.query, r.config): r for r in rows}
        fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(queries) + 2), 4.2))
        width = 0.8 / len(configs)
        cmap = plt.get_cmap("tab10")
        for k, config in enumerate(configs):
            xs, ys, lo, hi = [], [], [], []
            for i, q in enumerate(queries):
                r = cell.get((q, config))
                if r is None:
                    continue
                xs.append(i - 0.4 + width * (k + 0.5))
                ys.append(r.normalized)
                lo.append(max(0.0, r.normalized - r.normalized_q1))
                hi.append(max(0.0, r.normalized_q3 - r.normalized))
            label = {"vanilla": "PostgreSQL", "shj": "SHJ"}.get(
                config, config.replace("eddy@", "E(") + ")" if config.startswith("eddy@")
                else config)
            ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2, label=label,
                   color=cmap(k % 10), edgecolor="black", linewidth=0.4,
                   error_kw={"elinewidth": 0.7})
        ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
        ax.set_xticks(range(len(queries)))
        ax.set_xticklabels(queries, rotation=0 if len(queries) <= 6 else 30,
                           ha="center" if len(queries) <= 6 else "right")
        ax.set_ylabel("time normalized to PostgreSQL\n(median, whiskers: IQR)")
        ax.set_title(TITLES[experiment], fontsize=10)
        ax.legend(fontsize=8, ncol=min(len(configs), 6), loc="upper left", frameon=False)
        top = max(r.normalized_q3 for r in rows)
        ax.set_ylim(0, max(1.5, top * 1.18))
        written.append(harness.save_figure(fig, out / f"{experiment}.png"))
    return written


def build_parser() -> argparse.ArgumentParser:
    ap = harness.parser(PROG, __doc__)
    harness.add_common_arguments(
        ap, dsn_help="libpq connection string of the database (default: the PG* "
                     "environment); the server must preload eddy",
        out=Path("bench-results"),
        out_help="output folder (default: bench-results, untracked; "
                 "--out docs/bench refreshes the committed results)",
        quick_help=f"smoke run: small tables ({QUICK_ROWS['tenk']:,} and "
                   f"{QUICK_ROWS['hundredk']:,} rows) in schema {QUICK_SCHEMA}, "
                   "2 repetitions, frequencies 1 and 100",
        progress_help="no progress bar")
    ap.add_argument("-e", "--experiments", type=csv_list(EXPERIMENTS), default=list(EXPERIMENTS),
                    help="comma-separated, from selections, shj, index (default: all)")
    ap.add_argument("--freqs", type=csv_list(conv=int), default=None,
                    help="eddy.reopt_frequency values, comma-separated (default: 1,10,100,1000;"
                         " --quick: 1,100)")
    ap.add_argument("--policy", default="rank", choices=("rank", "lottery", "fixed", "random"),
                    help="eddy.routing_policy of the eddy configurations (default: rank)")
    ap.add_argument("--migration", type=csv_list(MIGRATIONS), default=["off"],
                    help="eddy.migration values of the eddy configurations, comma-separated "
                         "(default: off): off,guarded measures guarded migration on static "
                         "data side by side (configurations eddy@F+guarded)")
    ap.add_argument("--no-shj", action="store_true",
                    help="leave out the static symmetric hash join configuration")
    ap.add_argument("-r", "--reps", "--rounds", dest="reps", type=int, default=None,
                    help="measured repetitions (default: 11; --quick: 2)")
    ap.add_argument("--warmup", type=int, default=1,
                    help="unrecorded warm-up repetitions first (default: 1)")
    ap.add_argument("--master", default="local[*]",
                    help="Spark master of the loader (default: local[*])")
    ap.add_argument("--no-load", action="store_true",
                    help="do not run the Spark loader; the tables must exist")
    # Testing only: adds a configuration that runs a different query.
    ap.add_argument("--inject-wrong-config", action="store_true", help=argparse.SUPPRESS)
    return ap


def resolve(args: argparse.Namespace) -> None:
    """The defaults that depend on --quick."""
    if args.reps is None:
        args.reps = 2 if args.quick else 11
    if args.freqs is None:
        args.freqs = [1, 100] if args.quick else [1, 10, 100, 1000]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    resolve(args)
    if args.reps < 1 or args.warmup < 0:
        print("bench: --reps must be >= 1 and --warmup >= 0", file=sys.stderr)
        return 2
    schema = QUICK_SCHEMA if args.quick else "public"
    settings = harness.settings_record(args, PROG, argv)
    settings["schema"] = schema
    settings["rows"] = QUICK_ROWS if args.quick else FULL_ROWS
    result: Result[Run] = Result(settings=settings)
    args.schema = schema

    def run() -> None:
        harness.prepare_eddy(args.dsn)
        if schema != "public":
            with connect(args.dsn) as conn:
                conn.execute(psycopg.sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(
                    psycopg.sql.Identifier(schema)))
        if not args.no_load:
            load_data(args.dsn, args.experiments, args.quick, args.master, schema,
                      quiet=args.no_progress)
        with connect(args.dsn) as conn:
            apply_settings(conn, session_settings(schema))
            harness.load_eddy(conn)
            result.environment = harness.environment(conn)
            measure(conn, experiment_queries(args.experiments), args, result)

    def conclude() -> tuple[str, str]:
        summarize(result)
        write_results(result, args.out)
        pngs = [] if args.no_plots else plot(result, args.out)
        return summary_table(result), (
            f"{args.out}/measurements.csv, summary.csv, results.json"
            + (f"; plots: {', '.join(p.name for p in pngs)}" if pngs else ""))

    return harness.run("bench", result, run, conclude)


def cli() -> None:
    """Console script ``eddy-bench``."""
    sys.exit(main())


if __name__ == "__main__":
    cli()
