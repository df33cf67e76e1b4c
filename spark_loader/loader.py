"""Orchestration: check, stage, generate and COPY in Spark, finish and swap, report.

:func:`load` is the whole run.  Everything that can be refused is refused before
anything is created or Spark is started: connection, schema, conflicting tables,
the TPC-H generator.  From then on a failure drops what this run created (its
staging tables) and leaves the existing tables as they were.

Phases (timed, reported):

``prepare``      connect, plan, create the staging tables
``spark_start``  start the SparkContext (0 when one is passed in)
``load``         one Spark job: one task per part, each ``COPY``-ing into staging
``finish``       what remains after the job: per table ordering, primary key,
                 indexes, ``ANALYZE`` and the atomic swap

Finishing is pipelined with loading: while the job runs, the driver watches the
ledgers, and as soon as every part of a table has been committed, that table is
finished on a pool of ``--jobs`` threads, so the index builds of the first tables
overlap with the loading of the last.  Tables are atomic one by one: if the job
fails, the tables that were complete are still swapped in, the others are left as
they were, and the error says which is which (a re-run loads only what is missing).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import partial

import psycopg

from spark_loader import pg, tpch
from spark_loader.datasets import TableSpec, units
from spark_loader.errors import LoaderError, LoadFailed
from spark_loader.progress import Progress, human
from spark_loader.session import DEFAULT_MASTER, ship_package, spark_context, start_spark
from spark_loader.tasks import PartResult, Unit, load_partition

DEFAULT_PART_MB = 64.0
TPCH_PART_MB = 800.0


@dataclass
class LoadRequest:
    """Everything one run needs (the CLI builds it from its arguments)."""

    dataset: str
    tables: list[TableSpec]
    dsn: str = ""
    schema: str = "public"
    force: bool = False
    master: str = DEFAULT_MASTER
    spark_conf: dict[str, str] = field(default_factory=dict)
    spark_log_level: str = "fatal"
    part_bytes: int = int(DEFAULT_PART_MB * 2**20)
    jobs: int = 2
    maintenance_work_mem: str = "512MB"
    progress: bool = True
    inject_failure: tuple[str, int] | None = None    # testing: (table, part) fails midway


@dataclass
class TableResult:
    """The outcome for one table."""

    name: str
    status: str                  # loaded, unchanged, failed
    rows: int | None = None
    checksum: str | None = None
    parts: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    error: str | None = None


@dataclass
class Report:
    """The outcome of a run (printed by the CLI, written by ``--summary-json``)."""

    dataset: str
    schema: str
    tables: list[TableResult] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    parts: list[dict] = field(default_factory=list)    # per part: start (s after the
                                                       # job's start), seconds, rows

    @property
    def loaded_rows(self) -> int:
        return sum(t.rows or 0 for t in self.tables if t.status == "loaded")

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "loaded_rows": self.loaded_rows}, indent=2)


def task_error(exc: BaseException) -> str:
    """The Python exception a Spark task died of (``Type: message``), from the text of
    the error PySpark raises on the driver; else the first line of that text."""
    text = str(exc)
    marker = "Traceback (most recent call last):"
    if marker in text:         # in a line of its own, or after Spark's "...worker: "
        for line in text.rsplit(marker, 1)[1].splitlines()[1:]:
            if line.strip() and not line.startswith((" ", "\t")):
                name, sep, message = line.partition(": ")
                name = name.rsplit(".", 1)[-1]
                return f"{name}: {message.strip()}" if sep else name
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), repr(exc))
    return first[:500]


def _check_generators(request: LoadRequest, todo: list[pg.Plan]) -> None:
    for plan in todo:
        if plan.spec.generator == "tpch" and request.master.startswith("local"):
            if tpch.find_tpchgen(plan.spec.params.get("tpchgen")) is None:
                raise LoaderError("tpchgen-cli not found (pip install tpchgen-cli, "
                                  "or give its path with --tpchgen)")
            return


def _skip_result(plan: pg.Plan) -> TableResult:
    marker = plan.existing.marker if plan.existing else None
    return TableResult(plan.spec.name, "unchanged", rows=marker.get("rows") if marker else None,
                       checksum=marker.get("checksum") if marker else None)


def load(request: LoadRequest, spark=None, exiting: bool = False) -> Report:
    """Run one load; returns the report, raises :class:`LoaderError` on failure.

    ``spark``: an existing SparkContext (or SparkSession) to use, left running; by
    default one is started for ``request.master`` and stopped at the end, unless
    ``exiting`` says that the process ends right after: then the JVM ends with it.
    """
    out = Progress(request.progress)
    report = Report(request.dataset, request.schema)
    t_start = time.monotonic()

    conn = pg.connect(request.dsn)
    own_spark = None
    todo: list[pg.Plan] = []
    try:
        if not pg.schema_exists(conn, request.schema):
            raise LoaderError(f"schema {request.schema!r} does not exist in database "
                              f"{conn.info.dbname!r}; create it first")
        plans = pg.plan_tables(conn, request.schema, request.tables, request.force,
                               run=uuid.uuid4().hex[:8])
        todo = [p for p in plans if p.action != "skip"]
        for plan in plans:
            if plan.action == "skip":
                report.tables.append(_skip_result(plan))
                out.log(f"{plan.spec.name}: already loaded with the same parameters, skipped "
                        "(--force reloads)")
        if not todo:
            report.timings["total"] = time.monotonic() - t_start
            return report
        _check_generators(request, todo)
        dsn = pg.executor_dsn(conn, request.dsn)
        pg.create_staging(conn, request.schema, todo)
        work = _bundles(request, todo)
        report.timings["prepare"] = time.monotonic() - t_start

        t0 = time.monotonic()
        if spark is None:
            out.log(f"starting Spark ({request.master})")
            try:
                spark = own_spark = start_spark(request.master, request.spark_conf,
                                                app_name=f"spark_loader {request.dataset}",
                                                log_level=request.spark_log_level)
            except Exception as exc:    # no Java, a bad --conf, an unreachable master
                raise LoaderError(f"could not start Spark ({request.master}): "
                                  f"{str(exc).strip()[:3000]}\nnothing was changed") from exc
        ship_package(spark)
        report.timings["spark_start"] = time.monotonic() - t0

        _Pipeline(spark, request, todo, work, dsn, out, report).run()
    except BaseException:
        _cleanup(request, todo)
        raise
    finally:
        conn.close()
        if own_spark is not None and not exiting:
            own_spark.stop()
    report.timings["total"] = time.monotonic() - t_start
    order = {s.name: i for i, s in enumerate(request.tables)}
    report.tables.sort(key=lambda t: order.get(t.name, 0))
    return report


def _bundles(request: LoadRequest, todo: list[pg.Plan]) -> list[tuple[Unit, ...]]:
    """The Spark tasks: one part of a table each, except that whole TPC-H tables (not
    cut into parts) share tasks of up to a part's size: one generator run for all of
    them, each table streamed into its own COPY (see :mod:`tpch`)."""
    work: list[Unit] = []
    for plan in todo:
        fail = None
        if request.inject_failure and request.inject_failure[0] == plan.spec.name:
            fail = request.inject_failure[1]
        work += units(plan.spec, request.schema, plan.staging, plan.ledger,
                      request.part_bytes, fail_part=fail)
    small = [u for u in work if u.generator == "tpch" and u.nparts == 1]
    bundled = {id(u) for u in small}
    bundles: list[tuple[Unit, ...]] = [(u,) for u in work if id(u) not in bundled]
    current: list[Unit] = []
    for unit in sorted(small, key=lambda u: -u.est_bytes):
        if current and sum(u.est_bytes for u in current) + unit.est_bytes > request.part_bytes:
            bundles.append(tuple(current))
            current = []
        current.append(unit)
    if current:
        bundles.append(tuple(current))
    # largest first: the first tables complete early (their finishing overlaps the
    # loading of the rest) and the last tasks are short (the slots end evenly)
    return sorted(bundles, key=lambda b: -sum(u.est_bytes for u in b))


class _Pipeline:
    """The Spark job, and the finishing of each table as soon as its parts are in."""

    POLL_SECONDS = 0.2

    def __init__(self, spark, request: LoadRequest, todo: list[pg.Plan],
                 work: list[tuple[Unit, ...]], dsn: str, out: Progress, report: Report) -> None:
        self.sc = spark_context(spark)
        self.request, self.work, self.dsn, self.out, self.report = (
            request, work, dsn, out, report)
        self.group = f"spark_loader-{uuid.uuid4().hex[:8]}"
        self.expected = Counter(u.table for bundle in work for u in bundle)
        self.total_parts = sum(self.expected.values())
        self.pending = sorted(todo, key=lambda p: -p.spec.est_rows * p.spec.est_line_bytes)
        self.parts_done = 0                 # parts and rows of the tables handed to
        self.rows_done = 0                  # finishing (their ledgers go away)
        self.job_result: list[PartResult] | None = None
        self.job_error: BaseException | None = None
        self.job_done = threading.Event()

    def _job(self) -> None:
        try:
            self.sc.setJobGroup(self.group, f"spark_loader {self.request.dataset}",
                                interruptOnCancel=True)
            rdd = self.sc.parallelize(self.work, len(self.work))
            self.job_result = rdd.mapPartitions(partial(load_partition, self.dsn)).collect()
        except BaseException as exc:
            self.job_error = exc
        finally:
            self.job_done.set()

    def _running_tasks(self) -> int:
        tracker = self.sc.statusTracker()
        running = 0
        for job_id in tracker.getJobIdsForGroup(self.group):
            job = tracker.getJobInfo(job_id)
            for stage_id in job.stageIds if job else ():
                stage = tracker.getStageInfo(stage_id)
                running += stage.numActiveTasks if stage else 0
        return running

    def _poll(self, conn: psycopg.Connection, pool: ThreadPoolExecutor,
              futures: list[Future], started: float) -> None:
        """Hand complete tables to the pool; refresh the progress line."""
        progress = pg.ledger_progress(conn, self.request.schema, self.pending)
        for plan in list(self.pending):
            parts, rows = progress.get(plan.spec.name, (0, 0))
            if parts == self.expected[plan.spec.name]:
                self.pending.remove(plan)
                self.parts_done += parts
                self.rows_done += rows
                futures.append(pool.submit(self._finish, plan))
        if not self.out.enabled:
            return
        current = [progress.get(p.spec.name, (0, 0)) for p in self.pending]
        parts = self.parts_done + sum(c[0] for c in current)
        rows = self.rows_done + sum(c[1] for c in current)
        elapsed = max(time.monotonic() - started, 1e-9)
        self.out.status(parts, self.total_parts,
                        f"{self._running_tasks()} running, {human(rows)} rows, "
                        f"{human(rows / elapsed)} rows/s")

    def _finish(self, plan: pg.Plan) -> TableResult:
        t0 = time.monotonic()
        name = plan.spec.name
        try:
            with pg.connect(self.request.dsn) as conn:
                done = pg.finish_table(conn, self.request.schema, plan, self.expected[name],
                                       self.request.maintenance_work_mem, self.out.log,
                                       dsn=self.request.dsn)
        except (psycopg.Error, LoaderError) as exc:
            diag = getattr(exc, "diag", None)
            message = getattr(diag, "message_primary", None) or str(exc)
            detail = getattr(diag, "message_detail", None)
            _cleanup(self.request, [plan])
            return TableResult(name, "failed", error=message + (f" ({detail})" if detail else ""))
        secs = {**done.seconds, "total": time.monotonic() - t0}
        self.out.log(f"{name}: {done.rows:,} rows, checksum {done.checksum}, keys and indexes "
                     f"{secs['indexes']:.1f} s, analyze {secs['analyze']:.1f} s, swapped in")
        return TableResult(name, "loaded", rows=done.rows, checksum=done.checksum,
                           parts=self.expected[name], seconds=secs)

    def run(self) -> None:
        timings = self.report.timings
        started = time.monotonic()
        futures: list[Future] = []
        pool = ThreadPoolExecutor(max_workers=max(1, self.request.jobs),
                                  thread_name_prefix="spark_loader-finish")
        thread = threading.Thread(target=self._job, name="spark_loader-job", daemon=True)
        thread.start()
        try:
            with pg.connect(self.request.dsn) as conn:
                while not self.job_done.wait(self.POLL_SECONDS):
                    self._poll(conn, pool, futures, started)
                timings["load"] = time.monotonic() - started
                if self.job_error is not None:      # stop what still runs of this job
                    self.sc.cancelJobGroup(self.group)
                self._poll(conn, pool, futures, started)   # complete tables, even on failure
            self.out.clear()
            job_start = time.time() - (time.monotonic() - started)
            self.report.parts = [
                {"table": r.table, "part": r.part, "rows": r.rows,
                 "start": round(r.started - job_start, 3), "seconds": round(r.seconds, 3)}
                for r in sorted(self.job_result or (), key=lambda r: r.started)]
            if self.job_error is None:
                loaded = sum(r.rows for r in self.job_result or ())
                self.out.log(f"loaded {loaded:,} rows in {self.total_parts} parts "
                             f"({len(self.work)} tasks) in "
                             f"{timings['load']:.1f} s "
                             f"({human(loaded / max(timings['load'], 1e-9))} rows/s)")
            t0 = time.monotonic()
            results = [f.result() for f in futures]
            timings["finish"] = time.monotonic() - t0
        except BaseException:
            self.sc.cancelJobGroup(self.group)
            pool.shutdown(wait=True, cancel_futures=True)
            thread.join()
            raise
        pool.shutdown()
        thread.join()
        self.report.tables.extend(results)
        if self.pending:                       # only after a failed job
            _cleanup(self.request, self.pending)
        self._raise_failures(results)

    def _raise_failures(self, results: list[TableResult]) -> None:
        if isinstance(self.job_error, KeyboardInterrupt):
            raise self.job_error
        failed = [t for t in results if t.status == "failed"]
        if not failed and not self.pending:
            if self.job_error is not None:     # every part had landed: the tables are good
                self.out.log(f"warning: after every part was loaded, the Spark job failed: "
                             f"{task_error(self.job_error)}")
            return
        cause = (f"loading failed: {task_error(self.job_error)}" if self.job_error is not None
                 else "the Spark job ended with parts missing from the ledgers")
        for plan in self.pending:
            self.report.tables.append(TableResult(plan.spec.name, "failed", error=cause))
        loaded = [t.name for t in results if t.status == "loaded"]
        unchanged = [p.spec.name for p in self.pending] + [t.name for t in failed]
        lines = []
        if self.pending:
            lines.append(cause)
        lines += [f"{t.name} not replaced: {t.error}" for t in failed]
        if unchanged:
            lines.append(f"left as they were: {', '.join(unchanged)}")
        if loaded:
            lines.append(f"complete and swapped in: {', '.join(loaded)}")
        err = LoadFailed("\n".join(lines))
        err.report = self.report  # type: ignore[attr-defined]
        raise err


def _cleanup(request: LoadRequest, plans: list[pg.Plan]) -> None:
    """Drop what this run created for ``plans``; never raises."""
    if not plans:
        return
    # best effort: the error that got us here matters more than a failed cleanup
    with contextlib.suppress(Exception), pg.connect(request.dsn) as conn:
        pg.drop_staging(conn, request.schema, plans)
