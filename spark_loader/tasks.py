"""What one Spark task does: generate one part of one table and ``COPY`` it into staging.

A :class:`Unit` is one part of one table.  The driver ``parallelize``s *bundles* of
units (one part of a table, or several whole small TPC-H tables that share one
generator run), one bundle per partition, and :func:`load_partition` runs on the
executors; for each unit:

1. open a connection (the DSN the driver resolved), begin a transaction;
2. claim the part in the table's *ledger* (``INSERT ... ON CONFLICT DO NOTHING``):
   if another attempt of the same part (a retried or speculative task) already
   committed it, do nothing; if one is running, wait for it (row lock);
3. stream the generator's lines into ``COPY staging FROM STDIN``, counting bytes and
   computing the CRC-32 of the text on the way (the row count is COPY's own);
4. record rows, bytes and CRC in the ledger, commit.

So each part lands exactly once, in one transaction with its ledger row, whatever
Spark retries; the driver checks that every part is in the ledger and combines the
parts' CRCs into the table's (:mod:`spark_loader.checksum`).

This module is imported on executors: it does no work at import time, and imports
psycopg and the generators only when a task runs.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Unit:
    """One part of one table: what a single Spark task generates and loads."""

    table: str                  # final table name (for messages)
    schema: str
    staging: str                # table the rows are copied into
    ledger: str                 # ledger table of this load
    generator: str              # "wisconsin", "rst", "misest" or "tpch"
    params: dict = field(hash=False)
    part: int = 1               # 1-based
    nparts: int = 1
    lo: int = 0                 # row range, for the row-at-a-time generators
    hi: int = 0
    delimiter: str = "\t"
    est_bytes: int = 0
    fail_after_rows: int | None = None   # testing: raise after this many rows


@dataclass(frozen=True)
class PartResult:
    """What a task reports back (the same facts are committed in the ledger)."""

    table: str
    part: int
    rows: int
    nbytes: int
    crc: int
    seconds: float
    started: float = 0.0        # wall clock (time.time()) at the start
    skipped: bool = False       # another attempt had already loaded this part


class InjectedFailure(RuntimeError):
    """Raised by a unit with ``fail_after_rows`` set (tests of failed loads)."""


def _chunks(unit: Unit) -> Iterator[bytes]:
    if unit.generator == "tpch":
        from spark_loader import tpch
        return tpch.chunks(unit.params, unit.part, unit.nparts)
    if unit.generator == "wisconsin":
        from spark_loader import wisconsin
        return wisconsin.chunks(unit.params, unit.lo, unit.hi)
    if unit.generator == "rst":
        from spark_loader import rst
        return rst.chunks(unit.params, unit.lo, unit.hi)
    if unit.generator == "misest":
        from spark_loader import misest
        return misest.chunks(unit.params, unit.lo, unit.hi)
    raise ValueError(f"unknown generator {unit.generator!r}")


def _fail_midway(unit: Unit, copy, chunk: bytes, keep: int) -> None:
    """Testing: send the first ``keep`` lines of ``chunk``, then fail the task."""
    cut = 0
    for _ in range(keep):
        cut = chunk.index(b"\n", cut) + 1
    copy.write(chunk[:cut])
    raise InjectedFailure(f"injected failure in {unit.table} part {unit.part} after "
                          f"{unit.fail_after_rows} rows")


def copy_unit(dsn: str, unit: Unit, chunks: Iterator[bytes] | None = None) -> PartResult:
    """Generate ``unit`` (or take its text from ``chunks``) and load it into its staging
    table in one transaction."""
    import time

    import psycopg
    from psycopg import sql

    start, started = time.monotonic(), time.time()
    staging = sql.Identifier(unit.schema, unit.staging)
    ledger = sql.Identifier(unit.schema, unit.ledger)
    with psycopg.connect(dsn, application_name="spark_loader task") as conn:
        conn.execute("SET synchronous_commit = off")
        claimed = conn.execute(
            sql.SQL("INSERT INTO {} (part, rows, nbytes, crc) VALUES (%s, -1, 0, 0) "
                    "ON CONFLICT (part) DO NOTHING RETURNING part").format(ledger),
            (unit.part,),
        ).fetchone()
        if claimed is None:
            conn.rollback()
            done = conn.execute(
                sql.SQL("SELECT rows, nbytes, crc FROM {} WHERE part = %s").format(ledger),
                (unit.part,),
            ).fetchone()
            if done is None:
                raise RuntimeError(f"part {unit.part} of {unit.table}: claimed by another task, "
                                   "but not in the ledger")
            rows, nbytes, crc = done
            return PartResult(unit.table, unit.part, rows, nbytes, crc,
                              time.monotonic() - start, started, skipped=True)
        rows = nbytes = crc = 0
        freeze = sql.SQL("")
        if unit.nparts == 1:
            # the only part of its table: truncating the (empty) staging table in this
            # transaction lets COPY write the rows frozen (no hint bits to set later by
            # the index builds and ANALYZE) and, with wal_level = minimal, skip the WAL
            conn.execute(sql.SQL("TRUNCATE {}").format(staging))
            freeze = sql.SQL(", FREEZE")
        with conn.cursor() as cur:
            copy_sql = sql.SQL("COPY {} FROM STDIN (FORMAT text, DELIMITER {}{})").format(
                staging, sql.Literal(unit.delimiter), freeze)
            with cur.copy(copy_sql) as copy:
                for chunk in chunks if chunks is not None else _chunks(unit):
                    if unit.fail_after_rows is not None:
                        lines = chunk.count(b"\n")
                        if rows + lines > unit.fail_after_rows:
                            _fail_midway(unit, copy, chunk, unit.fail_after_rows - rows)
                        rows += lines
                    nbytes += len(chunk)
                    crc = zlib.crc32(chunk, crc)
                    copy.write(chunk)
            # the rows COPY stored (counting the lines here instead would cost as much
            # CPU as the CRC and the separators together)
            rows = cur.rowcount
        conn.execute(
            sql.SQL("UPDATE {} SET rows = %s, nbytes = %s, crc = %s WHERE part = %s").format(
                ledger),
            (rows, nbytes, crc, unit.part),
        )
        conn.commit()
    return PartResult(unit.table, unit.part, rows, nbytes, crc, time.monotonic() - start,
                      started)


def copy_bundle(dsn: str, bundle: tuple[Unit, ...]) -> list[PartResult]:
    """Several whole TPC-H tables from one generator run (it builds dbgen's text pool,
    ~1 CPU-second, once for all of them), each streamed into its own ``COPY`` in its
    own thread, connection and transaction as the generator writes it."""
    import tempfile
    from concurrent.futures import ThreadPoolExecutor, wait

    from spark_loader import tpch

    failures: list[BaseException] = []      # in the order they happened

    with tempfile.TemporaryDirectory(prefix="spark_loader-") as workdir:
        streams = tpch.TableStreams([u.params for u in bundle], workdir)

        def work(unit: Unit) -> PartResult:
            chunks = streams.chunks(unit.params["table"])
            try:
                result = copy_unit(dsn, unit, chunks)
            except BaseException as exc:
                failures.append(exc)
                streams.close()        # the other tables end early and roll back
                raise
            for _ in chunks:           # a part another attempt had loaded: read it
                pass                   # anyway, so that the generator goes on
            return result

        try:
            with ThreadPoolExecutor(max_workers=len(bundle),
                                    thread_name_prefix="spark_loader-copy") as pool:
                futures = [pool.submit(work, unit) for unit in bundle]
                wait(futures)
            if failures:
                raise failures[0]
            return [f.result() for f in futures]
        finally:
            streams.close()
            streams.close_unread()


def load_partition(dsn: str, bundles: Iterable[tuple[Unit, ...]]) -> Iterator[PartResult]:
    """``mapPartitions`` body: load every bundle of the partition (normally exactly one).

    A bundle is one part of one table, or several whole TPC-H tables generated
    together; each unit in it is still loaded and recorded in its own transaction."""
    for bundle in bundles:
        if len(bundle) == 1:
            yield copy_unit(dsn, bundle[0])
        else:
            yield from copy_bundle(dsn, bundle)
