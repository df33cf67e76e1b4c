"""How much does Spark add over PostgreSQL's own ingest?  TPC-H, measured both ways.

``python -m spark_loader.bench_tpch --dsn DSN [--sf 1] [--repeat 3]``

1. (not timed) ``tpchgen-cli`` writes the tables to files, the trailing ``|`` of
   dbgen's lines removed: the rows on disk, ready for ``COPY``.  Spark is started
   once, so that its class-data archive exists, as for every run of a user's but
   the first.
2. *Baseline*: into empty tables (the loader's DDL, no keys), one plain ``COPY`` per
   table from those files, one after the other: server-side ``COPY ... FROM 'file'``
   when the role may read server files and the server runs on this machine, else
   ``COPY ... FROM STDIN`` streaming the file.  Then, timed separately, the same
   primary keys, foreign-key indexes and ``ANALYZE`` the loader builds.
3. *spark_loader*: ``python -m spark_loader tpch --sf SF`` as a user runs it, in a
   subprocess: Spark start, generation inside the Spark tasks, parallel ``COPY``,
   keys, indexes, ``ANALYZE``, swap.  Wall time of the whole command, and the time
   until every row was in the staging tables (from its ``--summary-json``).

Runs alternate (baseline, loader, baseline, ...), each into empty schemas after a
``CHECKPOINT``; the report gives the best and the median of ``--repeat`` runs, rows
per second, and the ratios.  The schemas ``bench_copy`` and ``bench_spark`` are
dropped at the end (``--keep`` keeps them).

On a shared machine wall times depend on what else runs, so each measurement also
samples ``/proc`` (every 0.2 s) for the CPU-seconds used by this benchmark's own
processes (the loader, its JVM, Python workers and generators) plus the server
processes of the benchmark database (backends and their parallel workers), and by
everything else: the ``cpu`` and ``other cpu`` columns.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Self

import psycopg
from psycopg import sql

from spark_loader import tpch
from spark_loader.datasets import index_name, tpch_tables
from spark_loader.errors import LoaderError
from spark_loader.pg import connect, explain_connect_error

COPY_SCHEMA = "bench_copy"
SPARK_SCHEMA = "bench_spark"
SETTINGS = ("fsync", "synchronous_commit", "full_page_writes", "wal_level", "max_wal_size",
            "shared_buffers", "max_parallel_maintenance_workers", "server_version")


class CpuMeter:
    """CPU-seconds used while it runs, split into *ours* (this process and its
    descendants, server processes of database ``dbname`` and their parallel workers)
    and *others* (everything else).  Sampled from ``/proc``: a process that lives
    less than one interval is partly missed."""

    INTERVAL = 0.2

    def __init__(self, dbname: str, postmaster: int | None = None) -> None:
        self.tag = f" {dbname} "
        self.postmaster = postmaster      # only its children count as the server's
        self.ours = self.others = 0.0
        self.by_kind: dict[str, float] = {}     # ours, per kind of process
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._hz = os.sysconf("SC_CLK_TCK")

    def _sample(self) -> dict[int, tuple[int, str, float]]:
        procs = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            procs[int(entry)] = (int(fields[1]), cmd, (int(fields[11]) + int(fields[12]))
                                 / self._hz)
        return procs

    def _ours(self, procs: dict[int, tuple[int, str, float]]) -> set[int]:
        me = os.getpid()
        ours = {pid for pid, (_, cmd, _) in procs.items()
                if cmd.startswith("postgres: ") and self.tag in cmd
                and self.postmaster in (None, procs[pid][0])}
        for pid in procs:                      # descendants of this process
            p, seen = pid, 0
            while p > 1 and seen < 64:
                if p == me:
                    ours.add(pid)
                    break
                p, seen = procs.get(p, (0, "", 0.0))[0], seen + 1
        leaders = {str(pid) for pid in ours}
        ours |= {pid for pid, (_, cmd, _) in procs.items()
                 if cmd.startswith("postgres: parallel worker for PID ")
                 and cmd.split()[-1] in leaders}
        return ours

    @staticmethod
    def kind(cmd: str) -> str:
        if cmd.startswith("postgres: "):
            return "postgres"
        exe = os.path.basename(cmd.split(" ", 1)[0])
        if exe == "java":
            return "jvm"
        if exe.startswith("tpchgen"):
            return "tpchgen"
        return "python" if exe.startswith("python") else exe

    def _run(self) -> None:
        before = self._sample()
        while not self._stop.wait(self.INTERVAL):
            now = self._sample()
            ours = self._ours(now)
            for pid, (_, _, cpu) in now.items():
                delta = cpu - before[pid][2] if pid in before else cpu
                if pid in ours:
                    self.ours += max(delta, 0.0)
                    kind = self.kind(now[pid][1])
                    self.by_kind[kind] = self.by_kind.get(kind, 0.0) + max(delta, 0.0)
                else:
                    self.others += max(delta, 0.0)
            before = now

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def postmaster_pid(conn: psycopg.Connection) -> int | None:
    """The server's postmaster, when the server runs on this machine (else None)."""
    backend = conn.info.backend_pid
    try:
        with open(f"/proc/{backend}/stat") as f:
            stat = f.read()
        with open(f"/proc/{backend}/cmdline", "rb") as f:
            if not f.read().startswith(b"postgres: "):
                return None
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2:].split()[1])


def generate_files(sf: str, workdir: Path) -> dict[str, Path]:
    """dbgen's tables as COPY text files (trailing ``|`` removed), readable by the server."""
    exe = tpch.find_tpchgen()
    if exe is None:
        raise LoaderError("tpchgen-cli not found (pip install tpchgen-cli)")
    raw = workdir / "raw"
    raw.mkdir()
    subprocess.run([exe, "-s", sf, "-o", str(raw), "--quiet", "--no-progress"], check=True)
    files = {}
    for table in tpch.TABLES:
        path = workdir / f"{table}.tbl"
        with open(raw / f"{table}.tbl", "rb") as src, open(path, "wb") as dst:
            carry = b""
            while data := src.read(1 << 22):
                data = carry + data
                cut = data.rfind(b"\n") + 1
                dst.write(data[:cut].replace(b"|\n", b"\n"))
                carry = data[cut:]
            dst.write(carry)
        (raw / f"{table}.tbl").unlink()
        path.chmod(0o644)
        files[table] = path
    raw.rmdir()
    return files


def warm_jvm_cache() -> None:
    """Start and stop Spark once, untimed, so that the driver's class-data archive
    exists before the first timed run (the first JVM writes it; see
    :mod:`spark_loader.session`), as it does for a user's every run but the first.
    Spark's log level ``warn`` leaves the JVM on this child's output pipes, so that
    the wait for them to close is a wait for the JVM to have written the archive."""
    code = ("from spark_loader.session import start_spark; "
            "start_spark(log_level='warn').parallelize([1], 1).count()")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                   cwd=str(Path(__file__).resolve().parent.parent))


def server_reads_files(conn: psycopg.Connection) -> bool:
    """Whether ``COPY ... FROM 'file'`` is allowed and the server is on this machine."""
    host = conn.info.host or ""
    local = host.startswith("/") or host in ("localhost", "127.0.0.1", "::1")
    row = conn.execute(
        "SELECT rolsuper OR pg_has_role(current_user, 'pg_read_server_files', 'MEMBER') "
        "FROM pg_roles WHERE rolname = current_user").fetchone()
    allowed = row is not None and row[0]
    return bool(local and allowed)


def reset_schema(conn: psycopg.Connection, schema: str) -> None:
    conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    conn.execute("CHECKPOINT")


def baseline(conn: psycopg.Connection, sf: str, files: dict[str, Path], server_side: bool,
             maintenance_work_mem: str) -> dict[str, Any]:
    """One plain COPY per table, then (timed apart) the loader's keys, indexes, ANALYZE."""
    reset_schema(conn, COPY_SCHEMA)
    specs = tpch_tables(sf, "", None, None)
    for spec in specs:
        coldefs = sql.SQL(", ").join(sql.SQL("{} {} NOT NULL").format(
            sql.Identifier(c), sql.SQL(t)) for c, t in spec.columns)
        conn.execute(sql.SQL("CREATE TABLE {} ({})").format(
            sql.Identifier(COPY_SCHEMA, spec.name), coldefs))
    rows = 0
    with CpuMeter(conn.info.dbname, postmaster_pid(conn)) as meter:
        t0 = time.monotonic()
        for spec in specs:
            rows += _copy_file(conn, sql.Identifier(COPY_SCHEMA, spec.name), files[spec.name],
                               server_side)
        copy_seconds = time.monotonic() - t0

    t0 = time.monotonic()
    conn.execute(sql.SQL("SET maintenance_work_mem = {}").format(
        sql.Literal(maintenance_work_mem)))
    for spec in specs:
        target = sql.Identifier(COPY_SCHEMA, spec.name)
        conn.execute(sql.SQL("ALTER TABLE {} ADD PRIMARY KEY ({})").format(
            target, sql.SQL(", ").join(sql.Identifier(c) for c in spec.primary_key)))
        for cols in spec.indexes:
            conn.execute(sql.SQL("CREATE INDEX {} ON {} ({})").format(
                sql.Identifier(index_name(spec.name, cols)), target,
                sql.SQL(", ").join(sql.Identifier(c) for c in cols)))
        conn.execute(sql.SQL("ANALYZE {}").format(target))
    index_seconds = time.monotonic() - t0
    conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(COPY_SCHEMA)))
    return {"copy": copy_seconds, "indexes": index_seconds, "rows": rows,
            "cpu": meter.ours, "other_cpu": meter.others, "cpu_by_kind": meter.by_kind}


def _copy_file(conn: psycopg.Connection, target: sql.Identifier, path: Path,
               server_side: bool) -> int:
    """One plain COPY of ``path`` into ``target``; the row count."""
    if server_side:
        return conn.execute(sql.SQL("COPY {} FROM {} (FORMAT text, DELIMITER '|')").format(
            target, sql.Literal(str(path)))).rowcount
    with conn.cursor() as cur:
        with cur.copy(sql.SQL("COPY {} FROM STDIN (FORMAT text, DELIMITER '|')").format(
                target)) as copy, open(path, "rb") as f:
            while data := f.read(1 << 20):
                copy.write(data)
        return cur.rowcount


def spark_run(dsn: str, sf: str, extra: list[str], workdir: Path,
              checkout: str | None = None) -> dict:
    """``python -m spark_loader tpch`` in a subprocess; its wall time and summary."""
    with connect(dsn) as conn:
        reset_schema(conn, SPARK_SCHEMA)
    summary = workdir / "summary.json"
    cmd = [sys.executable, "-m", "spark_loader", "tpch", "--sf", sf, "--dsn", dsn,
           "--schema", SPARK_SCHEMA, "--force", "--quiet", "--summary-json", str(summary),
           *extra]
    dbname = str(psycopg.conninfo.conninfo_to_dict(dsn)["dbname"])
    with connect(dsn) as conn:
        postmaster = postmaster_pid(conn)
    with CpuMeter(dbname, postmaster) as meter:
        t0 = time.monotonic()
        env = None
        if checkout:             # another version of spark_loader, for before/after
            env = {**os.environ, "PYTHONPATH": checkout}
        result = subprocess.run(cmd, check=False, capture_output=True, text=True,
                                cwd=checkout, env=env)
        seconds = time.monotonic() - t0
    if result.returncode != 0:
        raise LoaderError(f"spark_loader failed ({result.returncode}):\n{result.stderr}")
    report = json.loads(summary.read_text())
    with connect(dsn) as conn:
        conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(SPARK_SCHEMA)))
    timings = report["timings"]
    last_part = max((p["start"] + p["seconds"] for p in report["parts"]), default=0.0)
    staged = timings.get("prepare", 0.0) + timings.get("spark_start", 0.0) + last_part
    return {"total": seconds, "staged": staged, "rows": report["loaded_rows"],
            "timings": timings, "cpu": meter.ours, "other_cpu": meter.others,
            "cpu_by_kind": meter.by_kind}


def summarize(values: list[float]) -> tuple[float, float]:
    return min(values), statistics.median(values)


def loadavg() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m spark_loader.bench_tpch",
        description="Time spark_loader's TPC-H load against plain COPY of the same rows "
                    "from files (see the module docstring).")
    parser.add_argument("--dsn", default="", help="target database (default: PG* environment)")
    parser.add_argument("--sf", default="1", help="scale factor (default: 1)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each (default: 3)")
    parser.add_argument("--workdir", help="directory for the files, kept and reused by later "
                        "runs with the same --workdir and --sf (default: a temporary one)")
    parser.add_argument("--maintenance-work-mem", default="512MB",
                        help="for the baseline's index builds, as the loader's default")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument("--keep", action="store_true", help="keep the files")
    parser.add_argument("--compare-with", metavar="CHECKOUT",
                        help="also run the spark_loader of another checkout (e.g. an older "
                             "commit's worktree) in every round, for before/after figures")
    parser.add_argument("loader_args", nargs=argparse.REMAINDER,
                        help="after '--': extra spark_loader options (e.g. --part-size 128)")
    args = parser.parse_args(argv)
    extra = [a for a in args.loader_args if a != "--"]

    try:
        conn = connect(args.dsn)
    except LoaderError as exc:
        print(f"bench_tpch: error: {exc}", file=sys.stderr)
        return 1
    conn.autocommit = True
    dsn = psycopg.conninfo.make_conninfo(args.dsn, host=conn.info.host,
                                         port=str(conn.info.port), user=conn.info.user,
                                         dbname=conn.info.dbname)
    settings: dict[str, str] = dict(conn.execute(
        "SELECT name, setting FROM pg_settings WHERE name = ANY(%s)", (list(SETTINGS),)).fetchall())
    server_side = server_reads_files(conn)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench_tpch-"))
    workdir.mkdir(parents=True, exist_ok=True)
    workdir.chmod(0o755)
    try:
        t0 = time.monotonic()
        files = {t: workdir / f"{t}.tbl" for t in tpch.TABLES}
        stamp = workdir / "scale-factor"
        if not (args.workdir and stamp.is_file() and stamp.read_text() == args.sf
                and all(p.is_file() for p in files.values())):
            files = generate_files(args.sf, workdir)   # else: kept by an earlier --workdir run
            stamp.write_text(args.sf)
        gen_seconds = time.monotonic() - t0
        warm_jvm_cache()
        text_bytes = sum(p.stat().st_size for p in files.values())
        print(f"files: {text_bytes / 1e9:.2f} GB of COPY text in {gen_seconds:.1f} s "
              f"(not counted); baseline COPY is "
              f"{'server-side from the files' if server_side else 'streamed from the files'}",
              file=sys.stderr)
        runs: list[dict] = []
        compared: list[dict] = []
        load_start = loadavg()
        for i in range(args.repeat):
            load = loadavg()
            base = baseline(conn, args.sf, files, server_side, args.maintenance_work_mem)
            spark = spark_run(dsn, args.sf, extra, workdir)
            if args.compare_with:
                other = spark_run(dsn, args.sf, [], workdir, args.compare_with)
                compared.append(other)
                kinds = sorted(other["cpu_by_kind"].items())
                print(f"run {i + 1}: spark_loader of {args.compare_with} {other['total']:.1f} s "
                      f"(cpu {other['cpu']:.1f} s: "
                      f"{', '.join(f'{k} {v:.1f}' for k, v in kinds)}; "
                      f"ratio {other['total'] / base['copy']:.2f})", file=sys.stderr)
            runs.append({"baseline": base, "spark": spark, "loadavg_before": load,
                         "loadavg_after": loadavg(),
                         "ratio": spark["total"] / base["copy"]})
            print(f"run {i + 1}: plain COPY {base['copy']:.1f} s (cpu {base['cpu']:.1f} s, "
                  f"other processes {base['other_cpu']:.1f} s; + keys/indexes/ANALYZE "
                  f"{base['indexes']:.1f} s), spark_loader {spark['total']:.1f} s (cpu "
                  f"{spark['cpu']:.1f} s: "
                  f"{', '.join(f'{k} {v:.1f}' for k, v in sorted(spark['cpu_by_kind'].items()))}"
                  f"; other processes {spark['other_cpu']:.1f} s) "
                  f"{json.dumps({k: round(v, 1) for k, v in spark['timings'].items()})}, "
                  f"ratio {runs[-1]['ratio']:.2f}, load average before {load}, after "
                  f"{runs[-1]['loadavg_after']}", file=sys.stderr)
        load_end = loadavg()
    except (LoaderError, psycopg.Error, subprocess.CalledProcessError) as exc:
        message = explain_connect_error(args.dsn, exc) if isinstance(
            exc, psycopg.OperationalError) else str(exc)
        print(f"bench_tpch: error: {message}", file=sys.stderr)
        return 1
    finally:
        conn.close()
        if not args.keep and not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)

    rows = runs[0]["baseline"]["rows"]
    copy_best, copy_median = summarize([r["baseline"]["copy"] for r in runs])
    full_best, full_median = summarize(
        [r["baseline"]["copy"] + r["baseline"]["indexes"] for r in runs])
    spark_best, spark_median = summarize([r["spark"]["total"] for r in runs])
    load_best, load_median = summarize([r["spark"]["staged"] for r in runs])
    result = {
        "sf": args.sf, "rows": rows, "cpus": os.cpu_count(), "settings": settings,
        "server_side_copy": server_side, "runs": runs,
        "best": {"copy": copy_best, "copy_indexes": full_best, "spark_total": spark_best,
                 "spark_staged": load_best},
        "median": {"copy": copy_median, "copy_indexes": full_median,
                   "spark_total": spark_median, "spark_staged": load_median},
        "ratio_best": spark_best / copy_best, "ratio_median": spark_median / copy_median,
        "loadavg_start": load_start, "loadavg_end": load_end,
        "compared": {"checkout": args.compare_with, "runs": compared},
    }
    best_copy = min(runs, key=lambda r: r["baseline"]["copy"])["baseline"]
    best_spark = min(runs, key=lambda r: r["spark"]["total"])["spark"]
    lines = [
        (f"TPC-H SF {args.sf}: {rows:,} rows; {os.cpu_count()} CPUs; PostgreSQL "
        f"{settings.get('server_version')}, fsync={settings.get('fsync')}, "
        f"synchronous_commit={settings.get('synchronous_commit')}, "
        f"full_page_writes={settings.get('full_page_writes')}; {args.repeat} runs each"),
        f"{'':44}{'best':>9}{'median':>9}{'worst':>9}{'rows/s':>12}{'cpu':>9}"
        f"{'other cpu':>11}",
    ]

    def line(label: str, values: list[float], run: dict | None = None) -> str:
        best, median = summarize(values)
        cpu = f"{run['cpu']:8.1f}s{run['other_cpu']:10.1f}s" if run else ""
        return (f"{label:44}{best:8.1f}s{median:8.1f}s{max(values):8.1f}s"
                f"{rows / best:12,.0f}{cpu}")

    ratios = [r["ratio"] for r in runs]
    lines += [
        line("plain COPY per table, from files", [r["baseline"]["copy"] for r in runs],
             best_copy),
        line("plain COPY + same keys/indexes/ANALYZE",
             [r["baseline"]["copy"] + r["baseline"]["indexes"] for r in runs]),
        line("spark_loader, whole command", [r["spark"]["total"] for r in runs], best_spark),
        line("  all rows in staging: Spark start+gen+COPY",
             [r["spark"]["staged"] for r in runs]),
        (f"spark_loader / plain COPY: {spark_best / copy_best:.2f} (best / best), "
        f"{spark_median / copy_median:.2f} (median / median); per run (side by side) "
        f"{', '.join(f'{x:.2f}' for x in ratios)}; goal <= 1.5"),
        (f"spark_loader / (plain COPY + keys/indexes/ANALYZE): {spark_best / full_best:.2f} "
        f"(best); all rows in staging / plain COPY: {load_best / copy_best:.2f} (best)"),
        f"load average (1, 5, 15 min) at the start {load_start}, at the end {load_end}",
    ]
    if compared:
        totals = [c["total"] for c in compared]
        lines.insert(6, line("spark_loader of --compare-with", totals))
        lines.insert(-1, "--compare-with / plain COPY per run: " + ", ".join(
            f"{c / r['baseline']['copy']:.2f}" for c, r in zip(totals, runs, strict=True)))
    print("\n".join(lines))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
