"""The harness the three benchmarks share: the overhead benchmark
(eddytools.bench), the STAIRs experiments (eddytools.experiments) and TPC-H
eddy on against off (eddytools.tpch_bench).

Each benchmark decides what to measure and how to summarise it; what a
measurement *is* and how it is recorded is the same for all three and lives
here:

  settings     db.apply_settings sets a configuration's settings for the
               session (RESET ALL first where a configuration must not
               inherit the previous one's)
  Result       one result type: the settings of the run, the environment
               record, the runs (one dataclass row per timed run, the row
               of measurements.csv), the summary rows (dataclasses or
               dicts, the rows of summary.csv) and the errors; a benchmark
               adds its own sections by subclassing it
  record       settings_record (every argument but the connection string,
               plus the exact command line) and environment (date, machine,
               server, the eddy version, and the git commit of the checkout
               the harness and the extension were built from, and whether
               its work tree was dirty), so that every results folder says
               which build measured it, how, and with what
  writer       write_results: the CSV tables and results.json, the same
               formats as before the harness was shared (floats with 4
               decimals, times of runs with 6, empty cells for None)
  CLI tail     parser (description and epilog from the module docstring),
               add_common_arguments (--dsn, --out, --quick, --no-plots,
               --no-progress), and run: measure (database errors, the run's
               seconds and load), the benchmark's conclusion (summary,
               files, plots), finish (print, the exit status: 0, or 3 when
               an answer check failed); csv_list for comma-separated options
  statistics   quartiles, median_or_none, paired_ratios (a configuration's
               time over another's in the same round or repeat: the two ran
               side by side, so a machine that slows down between rounds
               slows both); bootstrap_interval, paired_bootstrap_ci and
               geomean_bootstrap_ci: the median of the paired ratios (or of
               the per-round geometric means of several queries' paired
               ratios) with a percentile bootstrap confidence interval over
               the rounds (seeded: the same runs give the same interval)

Exit statuses, as every benchmark documents them: 0 success, 1 database
error, 2 usage error, 3 an answer differed (never a data point).
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import psycopg

from eddytools.db import connect, ensure_eddy, sql_value

RunT = TypeVar("RunT")
K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


# --------------------------------------------------------------------------- the result

@dataclass
class Result(Generic[RunT]):
    """What a benchmark run measured: ``settings`` (settings_record),
    ``environment`` (environment), ``runs`` (one row per timed run),
    ``summary`` (rows, one per case and configuration) and ``errors``
    (answer mismatches and failures: each makes the exit status 3)."""
    settings: dict
    environment: dict = field(default_factory=dict)
    runs: list[RunT] = field(default_factory=list)
    summary: list[Any] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def document(self) -> dict[str, Any]:
        """results.json: the sections in the order the file lists them
        (subclasses with sections of their own override it)."""
        return {"settings": self.settings, "environment": self.environment,
                "runs": self.runs, "summary": self.summary, "errors": self.errors}


def as_json(value: Any) -> Any:
    """``value`` with its dataclasses as dicts (row_dict), for json."""
    if is_dataclass(value) and not isinstance(value, type):
        return row_dict(value)
    if isinstance(value, dict):
        return {k: as_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [as_json(v) for v in value]
    return value


# --------------------------------------------------------------------------- the record

def command_line(prog: str, argv: Sequence[str], dsn: str) -> str:
    """The command that made a results folder, as one would type it again:
    ``python -m <prog>`` and the arguments, without the connection string
    (a --dsn option and its value)."""
    return f"python -m {prog} " + shlex.join(
        a for a in argv if not a.startswith("--dsn") and (not dsn or a != dsn))


def settings_record(args: argparse.Namespace, prog: str, argv: Sequence[str]) -> dict:
    """Every argument of the run but --dsn (paths as text), and the command."""
    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
                if k != "dsn"}
    settings["command"] = command_line(prog, argv, getattr(args, "dsn", ""))
    return settings


def git_state() -> dict[str, Any]:
    """The commit of the checkout this package runs from (the benchmark
    targets build and install the extension from the same checkout) and
    whether its tracked files had changes (untracked files do not count, nor
    docs/, which no build reads and where PUBLISH=1 runs write their
    results: make experiments writes docs/experiments/eddies/ before its own
    figures record their environment): None for both outside a checkout."""
    top = Path(__file__).resolve().parents[2]    # python/eddytools/harness.py

    def git(*argv: str) -> str | None:
        # safe.directory: the tests run as another OS user than the owner of
        # the checkout, whose code this very file is
        try:
            return subprocess.run(["git", "-c", f"safe.directory={top}", *argv], cwd=top,
                                  capture_output=True, text=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError):
            return None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no", "--", ".",
                 ":(exclude)docs")
    return {"git_commit": commit.strip() if commit is not None else None,
            "git_dirty": None if status is None else bool(status.strip())}


def show(conn: psycopg.Connection, name: str) -> str:
    return str(sql_value(conn, f"SHOW {name}"))


def environment(conn: psycopg.Connection) -> dict[str, Any]:
    """The environment record every results.json carries: when and where,
    the server (version, assertions, preloaded libraries), the eddy's
    version, the build's git commit and dirtiness, and the load average at
    the start (measure adds the run's seconds and the load at its end)."""
    return {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
        "server_version": show(conn, "server_version"),
        "assertions": show(conn, "debug_assertions"),
        "shared_preload_libraries": show(conn, "shared_preload_libraries"),
        "eddy_version": sql_value(
            conn, "SELECT extversion FROM pg_extension WHERE extname = 'eddy'"),
        **git_state(),
        "load_average": list(os.getloadavg()),
    }


def eddy_settings(conn: psycopg.Connection) -> dict[str, str]:
    """Every eddy.* setting of the session, as SHOW gives it (the record of
    "the eddy's defaults" a results folder was measured with)."""
    return {r[0]: r[1] for r in conn.execute(
        "SELECT name, current_setting(name) FROM pg_settings WHERE name LIKE 'eddy.%' "
        "ORDER BY name")}


def explain_with_reasons(conn: psycopg.Connection, query: str,
                         reasons: bool = True) -> tuple[str, list[str]]:
    """EXPLAIN's text of ``query`` and, if ``reasons``, the planner's
    messages about eddies (its reasons for declining, logged at DEBUG1,
    caught as notices with client_min_messages = debug1), each once."""
    messages: list[str] = []

    def handler(diag: psycopg.errors.Diagnostic) -> None:
        msg = diag.message_primary or ""
        if msg.startswith("eddy") and msg not in messages:
            messages.append(msg)

    if reasons:
        conn.add_notice_handler(handler)
        conn.execute("SET client_min_messages = debug1")
    try:
        text = "\n".join(r[0] for r in conn.execute(f"EXPLAIN {query}"))
    finally:
        if reasons:
            conn.execute("RESET client_min_messages")
            conn.remove_notice_handler(handler)
    return text, messages


def record_problems(doc: Mapping[str, Any]) -> list[str]:
    """What a results.json does not record of the build and the command
    that measured it (empty: it names both): the git commit in
    environment.git_commit and the command line in settings.command."""
    problems = []
    commit = doc.get("environment", {}).get("git_commit")
    if not (isinstance(commit, str) and len(commit) == 40
            and all(c in "0123456789abcdef" for c in commit)):
        problems.append(f"no git commit (environment.git_commit: {commit!r})")
    command = doc.get("settings", {}).get("command")
    if not (isinstance(command, str) and command.startswith("python -m eddytools.")):
        problems.append(f"no command (settings.command: {command!r})")
    return problems


# --------------------------------------------------------------------------- the writer

@dataclass
class Table:
    """One CSV file of a results folder: its rows (dataclasses or dicts),
    its columns (default: every key of the rows, in order of appearance)
    and the format of float columns that are not written with 4 decimals
    (the times of runs: ``{"seconds": ".6f"}``)."""
    name: str
    rows: Sequence[Any]
    columns: list[str] | None = None
    formats: dict[str, str] = field(default_factory=dict)


def row_dict(row: Any) -> dict[str, Any]:
    """A row as a dict: a dataclass's own as_row() if it has one (to leave
    out fields that do not apply to it), else its fields (asdict), or the
    dict itself."""
    if hasattr(row, "as_row"):
        return dict(row.as_row())
    return asdict(row) if is_dataclass(row) and not isinstance(row, type) else dict(row)


def cell(value: Any, fmt: str) -> Any:
    """A CSV cell: None empty, floats formatted, lists and dicts as JSON."""
    if value is None:
        return ""
    if isinstance(value, float):
        return format(value, fmt)
    if isinstance(value, dict | list):
        return json.dumps(value)
    return value


def write_csv(path: Path, table: Table) -> None:
    rows = [row_dict(r) for r in table.rows]
    columns = table.columns
    if columns is None:
        columns = []
        for row in rows:
            columns += [k for k in row if k not in columns]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        for row in rows:
            w.writerow({k: cell(v, table.formats.get(k, ".4f")) for k, v in row.items()})


def run_columns(run_type: type) -> list[str]:
    """The columns of measurements.csv: the fields of the run's dataclass."""
    return [f.name for f in fields(run_type)]


def write_results(result: Result, out: Path, tables: Sequence[Table]) -> None:
    """``tables`` as CSV files and results.json (Result.document) into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    for table in tables:
        write_csv(out / table.name, table)
    (out / "results.json").write_text(json.dumps(as_json(result.document()), indent=1) + "\n")


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend (files, no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    pyplot().close(fig)
    return path


# --------------------------------------------------------------------------- statistics

def quartiles(times: Sequence[float]) -> tuple[float, float]:
    """The first and third quartiles (inclusive method); one time: itself."""
    if len(times) < 2:
        return times[0], times[0]
    q1, _, q3 = statistics.quantiles(times, n=4, method="inclusive")
    return q1, q3


def median_or_none(values: Sequence[Any]) -> Any:
    """The median of the values that are not None; None if there are none."""
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def paired_ratios(a: Mapping[K, float | None], b: Mapping[K, float | None]) -> list[float]:
    """For every key (a round, a repeat) where both ran, a's time over b's:
    runs of one key ran side by side, so a machine that drifts between keys
    moves both and leaves the ratio alone (the A/A spread of a paired ratio
    is about half of that of a ratio of medians)."""
    return [x / y for k, x in a.items() if x is not None and (y := b.get(k))]


@dataclass(frozen=True)
class Interval:
    """A statistic over rounds and its bootstrap confidence interval:
    ``estimate`` (the statistic of the rounds as measured), ``low`` and
    ``high`` (the interval's ends, at ``level``), ``rounds`` (how many
    rounds it rests on); all None when no round had both runs."""
    estimate: float | None
    low: float | None
    high: float | None
    rounds: int
    level: float = 0.95

    def text(self, fmt: str = ".2f") -> str:
        """``1.23x [1.10, 1.31]``, or ``-`` without rounds."""
        if self.estimate is None or self.low is None or self.high is None:
            return "-"
        return f"{self.estimate:{fmt}}x [{self.low:{fmt}}, {self.high:{fmt}}]"


BOOTSTRAP_RESAMPLES = 4000


def bootstrap_interval(values: Sequence[float], *,
                       statistic: Callable[..., Any] | None = None,
                       resamples: int = BOOTSTRAP_RESAMPLES, level: float = 0.95,
                       seed: int = 0) -> Interval:
    """The median (or ``statistic``, a numpy reduction taking ``axis``) of
    ``values``, one per round, and its percentile bootstrap interval: the
    rounds resampled with replacement ``resamples`` times (a numpy
    generator seeded with ``seed``), the statistic of each resample, and
    the (1 - level) / 2 and (1 + level) / 2 quantiles of those.  One value:
    an interval of width zero (nothing to resample; say how many rounds a
    number rests on beside it)."""
    import numpy as np

    stat = statistic or np.median
    data = np.asarray(list(values), dtype=float)
    if data.size == 0:
        return Interval(None, None, None, 0, level)
    estimate = float(stat(data))
    if data.size == 1:
        return Interval(estimate, estimate, estimate, 1, level)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, data.size, size=(resamples, data.size))
    stats = stat(data[idx], axis=1)
    low, high = np.quantile(stats, [(1 - level) / 2, (1 + level) / 2])
    return Interval(estimate, float(low), float(high), int(data.size), level)


def paired_bootstrap_ci(a_runs: Mapping[K, float | None], b_runs: Mapping[K, float | None],
                        **kwargs: Any) -> Interval:
    """a's time over b's, paired by round (paired_ratios), their median and
    its bootstrap interval over the rounds (bootstrap_interval)."""
    return bootstrap_interval(paired_ratios(a_runs, b_runs), **kwargs)


def geomean_bootstrap_ci(pairs: Sequence[tuple[Mapping[K, float | None],
                                                Mapping[K, float | None]]],
                         **kwargs: Any) -> Interval:
    """Over several queries, each a pair (a's runs, b's runs) by round: in
    every round where all the queries have both runs, the geometric mean of
    the queries' paired ratios a / b; the median of those per-round
    geometric means and its bootstrap interval over the rounds.  (A query
    that did not finish in some round leaves that round out: leave such a
    query out of ``pairs`` and report it on its own.)"""
    if not pairs:
        return Interval(None, None, None, 0, kwargs.get("level", 0.95))
    rounds = set.intersection(*({k for k, v in a.items() if v} & {k for k, v in b.items() if v}
                                for a, b in pairs))
    per_round = []
    for k in sorted(rounds, key=repr):
        logs = [math.log(a[k] / b[k]) for a, b in pairs]   # type: ignore[operator]
        per_round.append(math.exp(math.fsum(logs) / len(logs)))
    return bootstrap_interval(per_round, **kwargs)


def geometric_mean(values: Sequence[float]) -> float | None:
    """The geometric mean of positive values; None if there are none."""
    return math.exp(math.fsum(math.log(v) for v in values) / len(values)) if values else None


# --------------------------------------------------------------------------- the CLI tail

def csv_list(choices: tuple[str, ...] | None = None, conv: Callable[[str], Any] = str
             ) -> Callable[[str], list]:
    """argparse type: a non-empty comma-separated list, each item among
    ``choices`` (if given) and converted by ``conv``."""
    def parse(text: str) -> list:
        items = [t.strip() for t in text.split(",") if t.strip()]
        if not items:
            raise argparse.ArgumentTypeError("empty list")
        for t in items:
            if choices is not None and t not in choices:
                raise argparse.ArgumentTypeError(
                    f"invalid choice {t!r} (choose from {', '.join(choices)})")
        try:
            return [conv(t) for t in items]
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    return parse


def parser(prog: str, doc: str | None) -> argparse.ArgumentParser:
    """A benchmark's parser: its docstring's first paragraph is the
    description, everything after the usage lines the epilog."""
    text = doc or ""
    return argparse.ArgumentParser(
        prog=f"python -m {prog}",
        description=text.split("\n\n")[0].replace("\n", " "),
        epilog=text.split("\n\n", 2)[2] if text.count("\n\n") >= 2 else None,
        formatter_class=argparse.RawDescriptionHelpFormatter)


def add_common_arguments(ap: argparse.ArgumentParser, *, dsn_help: str, out: Path,
                         out_help: str, quick_help: str, plots_help: str = "no PNGs",
                         progress_help: str = "no progress lines") -> None:
    """The options every benchmark has: --dsn, -o/--out, --quick, --no-plots
    and --no-progress."""
    ap.add_argument("--dsn", default="", help=dsn_help)
    ap.add_argument("--quick", action="store_true", help=quick_help)
    ap.add_argument("-o", "--out", type=Path, default=out, help=out_help)
    ap.add_argument("--no-plots", action="store_true", help=plots_help)
    ap.add_argument("--no-progress", action="store_true", help=progress_help)


def rotated(items: Sequence[T], k: int) -> list[T]:
    """``items`` rotated left by ``k``: the order of round k when each
    configuration of a round should run first in one round of len(items)."""
    if not items:
        return []
    k %= len(items)
    return list(items[k:]) + list(items[:k])


def stream_rows(conn: psycopg.Connection, query: str, batch: int = 100,
                cursor: str = "eddy_stream") -> tuple[list[tuple[float, int]], list[tuple]]:
    """Run ``query`` through a server-side cursor (cursor_tuple_fraction 1:
    the plan of a plain query): (seconds, rows so far) after every fetched
    batch and at the end, and the rows."""
    conn.execute("SET cursor_tuple_fraction = 1.0")
    points: list[tuple[float, int]] = [(0.0, 0)]
    rows: list[tuple] = []
    with conn.transaction():
        cur = conn.cursor(name=cursor)
        t0 = time.perf_counter()
        cur.execute(query)
        while True:
            got = cur.fetchmany(batch)
            if not got:
                break
            rows += got
            points.append((time.perf_counter() - t0, len(rows)))
        points.append((time.perf_counter() - t0, len(rows)))
        cur.close()
    return points, rows


def progress_printer(quiet: bool) -> Callable[[str], None]:
    """A progress line on stderr, stamped with the seconds since this call
    (nothing when ``quiet``)."""
    t0 = time.monotonic()

    def progress(text: str) -> None:
        if not quiet:
            print(f"[{time.monotonic() - t0:7.1f} s] {text}", file=sys.stderr, flush=True)
    return progress


def first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def prepare_eddy(dsn: str) -> None:
    """CREATE EXTENSION eddy in the database of ``dsn`` (if it is not there),
    or bring it up to the installed version (db.ensure_eddy)."""
    with connect(dsn) as conn:
        ensure_eddy(conn)


def load_eddy(conn: psycopg.Connection) -> bool:
    """LOAD 'eddy' in the session unless the server preloads it; returns
    whether it does."""
    preload = "eddy" in show(conn, "shared_preload_libraries")
    if not preload:
        conn.execute("LOAD 'eddy'")
    return preload


def measure(prog: str, result: Result, body: Callable[[], None]) -> int | None:
    """Run ``body`` (which fills ``result``), timing it: None when it ran,
    1 after a database error (printed).  The environment gets the run's
    seconds and the load average at its end."""
    t0 = time.monotonic()
    try:
        body()
    except psycopg.Error as e:
        print(f"{prog}: database error: {str(e).strip()}", file=sys.stderr)
        return 1
    result.environment["seconds"] = round(time.monotonic() - t0, 1)
    result.environment["load_average_end"] = list(os.getloadavg())
    return None


def run(prog: str, result: Result, body: Callable[[], None],
        conclude: Callable[[], tuple[str, str]]) -> int:
    """The tail of every benchmark's main: measure ``body``, then
    ``conclude`` (summarise, write the files, plot; it returns the text to
    print and the files written), then finish."""
    status = measure(prog, result, body)
    if status is not None:
        return status
    text, files = conclude()
    return finish(prog, result, text, files)


def finish(prog: str, result: Result, text: str, files: str) -> int:
    """Print the summary and where the files are, every error on stderr;
    the exit status: 3 if an answer check failed, else 0."""
    print(text)
    print(f"results: {files}")
    for err in result.errors:
        print(f"{prog}: error: {err}", file=sys.stderr)
    return 3 if result.errors else 0


# --------------------------------------------------------------------------- data

def missing(dsn: str, tables: Sequence[str]) -> bool:
    """Is any of ``tables`` (names, schema-qualified or not) absent?"""
    with connect(dsn) as conn:
        return any(sql_value(conn, "SELECT to_regclass(%s) IS NULL", (t,)) for t in tables)


def run_loader(dsn: str, jobs: Sequence[tuple[list[str], list[str]]], master: str,
               quiet: bool, app_name: str) -> None:
    """Run the Spark loader once per job (its arguments, and the tables it
    makes); Spark starts only when a job's tables are missing (the loader
    itself skips tables already loaded with the same parameters)."""
    from spark_loader.cli import format_report, run
    from spark_loader.session import start_spark

    spark = None
    try:
        for argv, tables in jobs:
            argv = [*argv, "--dsn", dsn, "--master", master]
            if quiet:
                argv.append("--quiet")
            if spark is None and missing(dsn, tables):
                spark = start_spark(master, app_name=app_name)
            report = run(argv, spark=spark)
            if not quiet:
                print(format_report(report), file=sys.stderr)
    finally:
        if spark is not None:
            spark.stop()
