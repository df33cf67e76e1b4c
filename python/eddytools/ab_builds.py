"""A/B of two builds of the extension on one data set: the misestimation
workload (eddytools.robustness) run by an old and a new build in turn, on
the same data directory, the eddy's time of the new build over the old's
paired by round, with bootstrap 95% confidence intervals and an A/A twin
(vanilla PostgreSQL on the new build's server over vanilla on the old's).

    python -m eddytools.ab_builds --old HEAD~1 --new HEAD
    python -m eddytools.ab_builds --old abeb0e8 --new HEAD --rounds 8
    python -m eddytools.ab_builds --old HEAD --new HEAD --quick --server-dir /tmp/x

Builds: --old and --new are resolved to commits (git rev-parse, in --repo,
the checkout this package runs from by default); each commit is checked
out as a detached git worktree in --build-dir/<first 12 hex digits> (kept,
and reused by the next run) and built without assertions (make -C
<worktree>/extension clean install) into a private copy of PostgreSQL 15
of its own, --build-dir/pg-old and --build-dir/pg-new: copies of
/usr/lib/postgresql/15, /usr/share/postgresql/15 and
/usr/include/postgresql/15 (made once; the copy's bin/pg_config reports the
copy's directories, so PGXS installs there).  When both revisions resolve
to the same commit (an A/A of the tool itself), the worktree is built once
and installed into both copies: the copies' headers are the same files, so
a second compilation would produce the same library.  The tool refuses to
install into a copy from which a process runs (a server someone started
from it).

Server: one data directory for both builds (--server-dir, default the
robustness server's, /tmp/eddy-robustness-server, with --port 25439: the
port its postgresql.conf names), started with tests/pgserver.sh and the
build's copy as PG_BINDIR, and stopped after each build's share of a
round: the server restarts for every build in every round.  A data
directory with a postmaster.pid (a server running on it) is refused.  At
every start the tool asks the server where it runs from (the pg_config
view's PKGLIBDIR, which PostgreSQL derives from its own executable) and
stops if that is not the build's copy; it records the eddy.so mapped into
a backend (/proc/<pid>/maps) and the server's start time.

Data: the workload's database (misest_s<scale>) loaded as
eddytools.robustness loads it (prepare_data: the Spark loader, the
functions, the stale copies), once, on the old build's server; the
extension's SQL objects are those of the old build (not updated for the
new one; the results record both builds' versions).

Method: in every round, each build in turn (old first in even rounds, new
first in odd ones): the server started with it, every query run once
untimed (eddy off: warms shared_buffers), then every query eddy on and eddy
off, each run in a fresh connection (statements never prepared) with the
robustness tool's session settings (jit off, work_mem 4MB,
max_parallel_workers_per_gather 0), in an order rotated by round and
query; then the server stopped.  A run's time is the client's wall-clock
time of execute and fetch.  Every answer is checked against the query's
first vanilla answer (row count and an order-independent digest): a
difference, or an error, makes the exit status 3.

Statistics (eddytools.harness): per query, paired by round, with the
median over the rounds and its bootstrap 95% interval: the eddy's time of
the new build over the old's (new/old), vanilla's on the new build's
server over the old's (the A/A twin: what a restart and another build
directory do to a plan that runs no eddy code), and eddy on over off
within each build; over the queries that have all four runs in every
round, the geometric mean of each (geomean_bootstrap_ci).

Output in --out: results.json (the commits, the command, the settings, the
environment, each build's worktree, copy, server paths and eddy.* settings
as SHOWn, every server start, the load, the runs, the summary, the totals,
the errors), measurements.csv (every run), summary.csv (per query) and
summary.md (the README-ready tables, also printed at the end).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from eddytools import harness, misest
from eddytools import robustness as rb
from eddytools.db import connect, sql_value
from eddytools.harness import Interval, Table, median_or_none

PROG = "eddytools.ab_builds"
BUILDS = ("old", "new")
MODES = ("on", "off")
TOP = Path(__file__).resolve().parents[2]          # python/eddytools/ab_builds.py
PGSERVER = TOP / "tests" / "pgserver.sh"
PG_DIRS = ("usr/lib/postgresql/15", "usr/share/postgresql/15", "usr/include/postgresql/15")
# name: (numerator, denominator, label), each side a (build, mode)
RATIOS: dict[str, tuple[tuple[str, str], tuple[str, str], str]] = {
    "new_old": (("new", "on"), ("old", "on"), "eddy new/old"),
    "aa": (("new", "off"), ("old", "off"), "A/A: vanilla new/old"),
    "old_on_off": (("old", "on"), ("old", "off"), "old eddy/vanilla"),
    "new_on_off": (("new", "on"), ("new", "off"), "new eddy/vanilla"),
}


class ABError(Exception):
    """A revision, a build, an install or a server that failed (exit status 1)."""


@dataclass
class Run(rb.Run):
    """One timed run, a row of measurements.csv: robustness's, and the build."""
    build: str = ""

    def label(self) -> str:
        return f"{self.build} build, {self.mode}"


@dataclass
class Build:
    role: str                        # old or new
    rev: str                         # as given
    commit: str
    worktree: Path
    copy: Path                       # the private PostgreSQL: copy/usr/lib/postgresql/15, ...

    @property
    def bindir(self) -> Path:
        return self.copy / PG_DIRS[0] / "bin"

    @property
    def pkglibdir(self) -> Path:
        return self.copy / PG_DIRS[0] / "lib"


@dataclass
class Result(harness.Result[Run]):
    load: dict = field(default_factory=dict)
    queries: list[dict] = field(default_factory=list)
    builds: dict[str, dict] = field(default_factory=dict)
    starts: list[dict] = field(default_factory=list)
    totals: list[dict] = field(default_factory=list)

    def document(self) -> dict[str, Any]:
        return {"settings": self.settings, "environment": self.environment,
                "builds": self.builds, "starts": self.starts, "load": self.load,
                "queries": self.queries, "summary": self.summary, "totals": self.totals,
                "runs": self.runs, "errors": self.errors}


# --------------------------------------------------------------------------- builds

def command(argv: list[str], log: Path | None = None, env: dict[str, str] | None = None,
            cwd: Path | None = None) -> str:
    """Run ``argv``; its output (into ``log`` if given); ABError with the
    output's tail when it fails."""
    p = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd)
    out = p.stdout + p.stderr
    if log is not None:
        log.write_text(out)
    if p.returncode != 0:
        tail = "\n".join(out.strip().splitlines()[-15:])
        raise ABError(f"{' '.join(argv)} failed ({p.returncode})"
                      + (f", log {log}" if log else "") + f":\n{tail}")
    return p.stdout.strip()


def resolve_commit(repo: Path, rev: str) -> str:
    return command(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet",
                    f"{rev}^{{commit}}"])


def checkout(repo: Path, commit: str, build_dir: Path) -> Path:
    """A detached worktree of ``commit`` in build_dir/<commit[:12]>, reused if there."""
    wt = build_dir / commit[:12]
    if wt.exists():
        if command(["git", "-C", str(wt), "rev-parse", "HEAD"]) != commit:
            raise ABError(f"{wt} exists but is not a checkout of {commit}")
        return wt
    build_dir.mkdir(parents=True, exist_ok=True)
    command(["git", "-C", str(repo), "worktree", "prune"])
    command(["git", "-C", str(repo), "worktree", "add", "--detach", str(wt), commit])
    return wt


def processes_running_from(prefix: Path) -> list[int]:
    """The processes whose executable lies under ``prefix`` (those this
    user may see: a server runs as the postgres OS user, and so do the
    tests; root sees all)."""
    pids = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                exe = os.readlink(p / "exe")
            except OSError:
                continue
            if exe.startswith(f"{prefix}/"):
                pids.append(int(p.name))
    return pids


def private_postgres(copy: Path) -> None:
    """copy/usr/lib/postgresql/15 and its share and include directories,
    copied from the system's once (cp -a)."""
    if (copy / PG_DIRS[0] / "bin" / "postgres").exists():
        return
    command(["rm", "-rf", str(copy)])
    for d in PG_DIRS:
        (copy / d).parent.mkdir(parents=True, exist_ok=True)
        command(["cp", "-a", f"/{d}", str(copy / d)])


def prepare_builds(args: argparse.Namespace, progress: Callable[[str], None]
                   ) -> dict[str, Build]:
    """Resolve, check out, copy PostgreSQL, build and install both builds."""
    builds: dict[str, Build] = {}
    for role, rev in (("old", args.old), ("new", args.new)):
        try:
            commit = resolve_commit(args.repo, rev)
        except ABError:
            raise ABError(f"{rev!r} is not a commit of {args.repo}") from None
        builds[role] = Build(role, rev, commit, checkout(args.repo, commit, args.build_dir),
                             args.build_dir / f"pg-{role}")
    built: set[Path] = set()
    for b in builds.values():
        running = processes_running_from(b.copy)
        if running:
            raise ABError(f"processes run from {b.copy} (pids {running}): stop its server "
                          "before installing into it")
        private_postgres(b.copy)
        targets = ["install"] if b.worktree in built else ["clean", "install"]
        progress(f"{b.role} build {b.commit[:12]}: make {' '.join(targets)} into {b.copy}")
        command(["make", "-C", str(b.worktree / "extension"), *targets, "EDDY_ASSERT=",
                 f"PG_CONFIG={b.bindir / 'pg_config'}"], log=args.build_dir / f"pg-{b.role}.log")
        if not (b.pkglibdir / "eddy.so").exists():
            raise ABError(f"no eddy.so in {b.pkglibdir} after the install")
        built.add(b.worktree)
    return builds


# --------------------------------------------------------------------------- server

def maintenance_dsn(args: argparse.Namespace) -> str:
    return psycopg.conninfo.make_conninfo(host=str(args.server_dir), port=args.port,
                                          user="postgres", dbname="postgres")


def mapped_library(pid: int, name: str = "eddy.so") -> str | None:
    """The path of ``name`` as mapped into process ``pid`` (None if unreadable)."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return None
    return next((line.split(None, 5)[5] for line in maps.splitlines()
                 if line.endswith(f"/{name}")), None)


@contextmanager
def server(b: Build, args: argparse.Namespace, result: Result, rnd: int) -> Iterator[None]:
    """The data directory's server started with ``b``'s PostgreSQL, checked
    to run from it (recorded in result.starts), and stopped afterwards."""
    env = dict(os.environ, PG_BINDIR=str(b.bindir))
    command([str(PGSERVER), "start", str(args.server_dir), str(args.port)], env=env)
    try:
        with connect(maintenance_dsn(args)) as conn:
            start = {"round": rnd, "build": b.role,
                     "started": str(sql_value(conn, "SELECT pg_postmaster_start_time()")),
                     "pkglibdir": sql_value(conn, "SELECT setting FROM pg_config "
                                                  "WHERE name = 'PKGLIBDIR'"),
                     "eddy_library": mapped_library(sql_value(conn, "SELECT pg_backend_pid()"))}
        result.starts.append(start)
        if start["pkglibdir"] != str(b.pkglibdir):
            raise ABError(f"the server of {args.server_dir} runs from {start['pkglibdir']}, "
                          f"not from the {b.role} build's {b.pkglibdir}")
        yield
    finally:
        command([str(PGSERVER), "stop", str(args.server_dir)], env=env)


def describe(conn: psycopg.Connection, b: Build, start: dict) -> dict:
    """A build's record: where it came from and what its server reports."""
    return {"rev": b.rev, "commit": b.commit, "worktree": str(b.worktree), "copy": str(b.copy),
            "pkglibdir": start["pkglibdir"], "eddy_library": start["eddy_library"],
            "server_version": harness.show(conn, "server_version"),
            "assertions": harness.show(conn, "debug_assertions"),
            "eddy_version": sql_value(conn, "SELECT extversion FROM pg_extension "
                                            "WHERE extname = 'eddy'"),
            "eddy_default_version": sql_value(conn, "SELECT default_version FROM "
                                                    "pg_available_extensions WHERE name = 'eddy'"),
            "eddy_settings": harness.eddy_settings(conn)}


# --------------------------------------------------------------------------- measuring

def measure(builds: dict[str, Build], args: argparse.Namespace, queries: list[misest.Query],
            result: Result, progress: Callable[[str], None]) -> None:
    maint = maintenance_dsn(args)
    db = rb.with_dbname(maint, result.settings["dbname"])
    with server(builds["old"], args, result, -1):
        progress("loading the data with the old build's server")
        result.load = rb.prepare_data(maint, result.settings["dbname"], args)
        with connect(db) as conn:
            result.environment = harness.environment(conn)
    for rnd in range(args.rounds):
        for role in harness.rotated(BUILDS, rnd):
            with server(builds[role], args, result, rnd):
                with connect(db) as conn:
                    preload = harness.load_eddy(conn)
                    result.builds.setdefault(role, describe(conn, builds[role],
                                                            result.starts[-1]))
                for q in queries:
                    rb.timed_run(db, args, q, "off", -1, preload)
                for i, q in enumerate(queries):
                    for mode in harness.rotated(MODES, rnd + i):
                        run = Run(build=role, **asdict(rb.timed_run(db, args, q, mode, rnd,
                                                                    preload)))
                        result.runs.append(run)
                        took = "timeout" if run.timeout else (
                            f"{run.seconds:.3f} s" if run.seconds is not None else run.error)
                        progress(f"round {rnd + 1}/{args.rounds} {role} {q.name} {mode}: {took}")
    rb.check_answers(result)


# --------------------------------------------------------------------------- summary

def by_round(runs: list[Run], query: str, build: str, mode: str) -> dict[int, float | None]:
    return {r.round: r.seconds for r in runs
            if (r.query, r.build, r.mode) == (query, build, mode)}


def summarize(result: Result, queries: list[misest.Query], args: argparse.Namespace) -> None:
    """summary (a row per query) and totals (a geometric mean per ratio)."""
    series = {q.name: {(b, m): by_round(result.runs, q.name, b, m)
                       for b in BUILDS for m in MODES} for q in queries}
    rows = []
    for q in queries:
        t = series[q.name]
        mine = [r for r in result.runs if r.query == q.name]
        ref = next((r for r in mine if r.mode == "off" and r.digest), None)
        row: dict[str, Any] = {"query": q.name, "kinds": ",".join(q.kinds),
                               "relations": q.relations}
        row |= {f"{b}_{m}_ms": rb.ms(median_or_none(list(t[b, m].values()))) for b, m in t}
        for name, (a, b, _) in RATIOS.items():
            iv = harness.paired_bootstrap_ci(t[a], t[b], seed=args.bootstrap_seed)
            row |= {name: iv.estimate, f"{name}_low": iv.low, f"{name}_high": iv.high}
        row["rounds"] = sum(all(s.get(k) for s in t.values()) for k in range(args.rounds))
        row["timeouts"] = sum(r.timeout for r in mine)
        row["rows"], row["digest"] = (ref.rows, ref.digest) if ref else (None, None)
        row["errors"] = " | ".join(sorted({f"{r.label()}: {r.error}" for r in mine if r.error}))
        rows.append(row)
    result.summary = rows
    complete = [r["query"] for r in rows if r["rounds"] == args.rounds and not r["errors"]]
    result.totals = []
    for name, (a, b, label) in RATIOS.items():
        g = harness.geomean_bootstrap_ci([(series[n][a], series[n][b]) for n in complete],
                                         seed=args.bootstrap_seed)
        result.totals.append({"ratio": name, "label": label, "queries": len(complete),
                              "geomean": g.estimate, "low": g.low, "high": g.high,
                              "rounds": g.rounds,
                              "left_out": [r["query"] for r in rows if r["query"] not in complete]})


def ratio_text(row: dict, name: str) -> str:
    return Interval(row[name], row[f"{name}_low"], row[f"{name}_high"], 0).text()


def report(result: Result) -> str:
    """The README-ready summary: the geometric means, then per query."""
    s, b = result.settings, result.builds

    def who(role: str) -> str:
        return f"{s[role]} ({s[role + '_commit'][:12]})"

    lines = [f"A/B of two builds on the misestimation workload: old {who('old')} against new "
             f"{who('new')}; scale {s['scale']:g}, {len(result.summary)} queries, {s['rounds']} "
             f"round(s), the server restarted for each build in each round; work_mem 4MB, "
             f"max_parallel_workers_per_gather {s['workers']}, jit {s['jit']}, eddy.* at each "
             "build's defaults.  Ratios: median of the rounds' paired ratios [bootstrap 95% "
             "interval]; A/A: vanilla PostgreSQL on the new build's server over the old's.", ""]
    if b.get("old", {}).get("eddy_settings") != b.get("new", {}).get("eddy_settings"):
        lines += ["The builds' eddy.* settings differ (results.json, builds).", ""]
    lines += ["| ratio | n | geometric mean [95% CI] | left out |", "|---|---|---|---|"]
    for t in result.totals:
        lines.append(f"| {t['label']} | {t['queries']} | "
                     f"{Interval(t['geomean'], t['low'], t['high'], 0).text()} | "
                     f"{', '.join(t['left_out']) or '-'} |")
    lines += ["", "| query | kinds | old eddy ms | new eddy ms | eddy new/old | A/A | "
              "old eddy/vanilla | new eddy/vanilla |", "|---|---|---|---|---|---|---|---|"]
    for r in result.summary:
        lines.append(f"| {r['query']} | {r['kinds']} | {rb.num(r['old_on_ms'])} | "
                     f"{rb.num(r['new_on_ms'])} | "
                     + " | ".join(ratio_text(r, n) for n in RATIOS) + " |")
    if result.errors:
        lines += ["", f"{len(result.errors)} error(s): see results.json"]
    return "\n".join(lines)


def write_results(result: Result, out: Path) -> None:
    harness.write_results(result, out, [
        Table("measurements.csv", result.runs, ["build", *harness.run_columns(rb.Run)],
              {"seconds": ".6f"}),
        Table("summary.csv", result.summary),
    ])
    (out / "summary.md").write_text(report(result) + "\n")


# --------------------------------------------------------------------------- CLI

def build_parser() -> argparse.ArgumentParser:
    ap = harness.parser(PROG, __doc__)
    ap.add_argument("--old", required=True, help="the old build: a git revision")
    ap.add_argument("--new", required=True, help="the new build: a git revision")
    ap.add_argument("--workload", choices=("robustness",), default="robustness",
                    help="the workload (default and only one: robustness, the misestimation "
                         "workload)")
    ap.add_argument("--repo", type=Path, default=TOP,
                    help=f"the git repository of the revisions (default: {TOP})")
    ap.add_argument("--build-dir", type=Path, default=Path("/tmp/eddy-ab"),
                    help="worktrees, PostgreSQL copies and build logs (default: /tmp/eddy-ab)")
    ap.add_argument("--server-dir", type=Path, default=Path("/tmp/eddy-robustness-server"),
                    help="the server's directory (tests/pgserver.sh's DIR: data/ in it; "
                         "default: the robustness server's, /tmp/eddy-robustness-server)")
    ap.add_argument("--port", type=int, default=25439,
                    help="its port, as its postgresql.conf sets it (default: 25439)")
    ap.add_argument("--quick", action="store_true",
                    help=f"smoke run: scale {rb.QUICK_SCALE:g}, the first {rb.QUICK_QUERIES} "
                         "queries (one of each kind), 1 round")
    ap.add_argument("-o", "--out", type=Path, default=Path("ab-results"),
                    help="output folder (default: ab-results, untracked)")
    ap.add_argument("--no-progress", action="store_true", help="no progress lines")
    rb.add_workload_arguments(ap)
    return ap


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    rb.resolve_workload(args)
    if args.rounds < 1 or args.scale <= 0 or args.count < 1 or args.workers < 0:
        print("ab_builds: --rounds >= 1, --scale > 0, --count >= 1, --workers >= 0",
              file=sys.stderr)
        return 2
    queries = rb.select(args)
    if isinstance(queries, str):
        print(f"ab_builds: {queries}", file=sys.stderr)
        return 2
    args.server_dir, args.build_dir = args.server_dir.resolve(), args.build_dir.resolve()
    if (args.server_dir / "data" / "postmaster.pid").exists():
        print(f"ab_builds: a server runs on {args.server_dir} (data/postmaster.pid): stop it, "
              "or name another --server-dir", file=sys.stderr)
        return 1
    progress = harness.progress_printer(args.no_progress)
    try:
        builds = prepare_builds(args, progress)
    except ABError as e:
        print(f"ab_builds: {e}", file=sys.stderr)
        return 1
    settings = harness.settings_record(args, PROG, argv)
    settings |= {"old_commit": builds["old"].commit, "new_commit": builds["new"].commit,
                 "dbname": args.dbname or rb.dbname_for(args.scale, args.data_seed),
                 "session_settings": rb.session_settings(args)}
    result = Result(settings=settings)
    result.queries = [{"name": q.name, "kinds": list(q.kinds), "relations": q.relations,
                       "sql": q.sql} for q in queries]

    def conclude() -> tuple[str, str]:
        summarize(result, queries, args)
        write_results(result, args.out)
        return report(result), f"{args.out}/measurements.csv, summary.csv, results.json, summary.md"

    try:
        return harness.run("ab_builds", result,
                           lambda: measure(builds, args, queries, result, progress), conclude)
    except ABError as e:
        print(f"ab_builds: {e}", file=sys.stderr)
        return 1


def cli() -> None:
    sys.exit(main())


if __name__ == "__main__":
    cli()
