"""Command line: ``python -m spark_loader <dataset> [options]`` (also ``spark-loader``)."""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from decimal import Decimal, InvalidOperation

import psycopg

from spark_loader import rst, tpch, wisconsin
from spark_loader.datasets import (
    WISCONSIN_SETS,
    TableSpec,
    apply_options,
    misest_tables,
    rst_tables,
    tpch_tables,
    wisconsin_tables,
)
from spark_loader.errors import LoaderError, UsageError
from spark_loader.loader import DEFAULT_PART_MB, TPCH_PART_MB, LoadRequest, Report, load
from spark_loader.session import DEFAULT_MASTER

PROG = "spark_loader"
_NAME = re.compile(r"^[a-z_][a-z0-9_$]*$")

EPILOG = """\
examples:
  python -m spark_loader tenk --dsn 'host=/tmp port=5432 dbname=bench'
  python -m spark_loader wisconsin --rows 1000000 --tables onemtup1 onemtup2 --index unique1
  python -m spark_loader tpch --sf 1 --order-by lineitem.l_shipdate
  python -m spark_loader tpch --sf 100 --master spark://head:7077 --conf spark.executor.cores=4
  python -m spark_loader rst
  python -m spark_loader misest --scale 0.1

Without --dsn the PG* environment variables (PGHOST, PGPORT, PGUSER, PGDATABASE,
PGPASSWORD, ...) select the database, as for psql.  Re-running with the same
parameters changes nothing; --force reloads.  Exit status: 0 on success, 1 when
the load failed or was refused, 2 for invalid arguments.
"""


# --------------------------------------------------------------------------- argument types

def _int_in(lo: int, hi: int, what: str):
    def parse(text: str) -> int:
        try:
            value = int(text.replace("_", ""))
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid {what} {text!r}: not an integer") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(
                f"invalid {what} {text!r}: must be between {lo:,} and {hi:,}")
        return value
    return parse


def scale_factor(text: str) -> str:
    """A TPC-H scale factor, normalised (``"1.0"`` -> ``"1"``)."""
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise argparse.ArgumentTypeError(f"invalid scale factor {text!r}: not a number") from None
    if not value.is_finite() or not tpch.MIN_SF <= value <= tpch.MAX_SF:
        raise argparse.ArgumentTypeError(
            f"invalid scale factor {text!r}: must be between {tpch.MIN_SF} and {tpch.MAX_SF:g}")
    normal = format(value.normalize(), "f")
    return normal


def part_size(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid part size {text!r}: not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"invalid part size {text!r}: must be > 0 (MB)")
    return value


def conf_pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"invalid --conf {text!r}: expected KEY=VALUE")
    return key.strip(), value


def failure_spec(text: str) -> tuple[str, int]:
    table, _, part = text.partition(":")
    return table, int(part or 1)


def table_name(text: str) -> str:
    if not _NAME.match(text) or len(text) > 63:
        raise argparse.ArgumentTypeError(
            f"invalid table name {text!r}: use a lower-case SQL identifier")
    return text


# --------------------------------------------------------------------------- parser

def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    db = common.add_argument_group("database")
    db.add_argument("--dsn", default="", metavar="DSN",
                    help="libpq connection string or URI of the target database "
                         "(default: the PG* environment)")
    db.add_argument("--schema", default="public", help="schema to load into (default: public)")
    db.add_argument("--prefix", default="", type=lambda s: s if not s else table_name(s),
                    help="prefix for every table name (e.g. 'x_' gives x_tenk1)")
    db.add_argument("--force", action="store_true",
                    help="reload tables that are up to date, and replace tables of another "
                         "schema or not made by spark_loader")
    db.add_argument("--index", action="append", default=[], metavar="[TABLE.]COL[,COL...]",
                    help="add an index (repeatable); without TABLE, on every table that has "
                         "the columns")
    db.add_argument("--order-by", action="append", default=[], metavar="[TABLE.]COL[,COL...]",
                    help="store the table physically ordered by these columns (ties by "
                         "primary key), e.g. lineitem.l_shipdate")
    db.add_argument("--jobs", type=_int_in(1, 64, "job count"), default=2, metavar="N",
                    help="tables finished (keys, indexes, ANALYZE) at a time (default: 2)")
    db.add_argument("--maintenance-work-mem", default="512MB", metavar="SIZE",
                    help="maintenance_work_mem for index builds (default: 512MB)")
    sp = common.add_argument_group("spark")
    sp.add_argument("--master", default=DEFAULT_MASTER, metavar="URL",
                    help=f"Spark master URL (default: {DEFAULT_MASTER})")
    sp.add_argument("--conf", action="append", default=[], type=conf_pair, metavar="KEY=VALUE",
                    help="extra Spark setting (repeatable)")
    sp.add_argument("--part-size", type=part_size, default=None, metavar="MB",
                    help=f"approximate COPY text per Spark task (default: {DEFAULT_PART_MB:g}; "
                         f"tpch {TPCH_PART_MB:g}, as each part starts a generator that "
                         "costs ~0.7 CPU-seconds)")
    sp.add_argument("--verbose", action="store_true", help="show Spark's warnings")
    out = common.add_argument_group("output")
    out.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    out.add_argument("--summary-json", metavar="PATH",
                     help="also write the per-table summary and timings as JSON")
    common.add_argument("--inject-failure", type=failure_spec, help=argparse.SUPPRESS)

    parser = argparse.ArgumentParser(
        prog=PROG, description="Generate benchmark data sets with PySpark and load them into "
        "PostgreSQL with parallel COPY, atomically per table.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="dataset", required=True, metavar="DATASET")

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, parents=[common], help=help_text, description=help_text)

    def wisconsin_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--seed", type=_int_in(0, 2**63 - 1, "seed"), default=0,
                       help="seed of the unique1 permutations (default: 0)")
        p.add_argument("--tuple-width", type=_int_in(wisconsin.MIN_WIDTH, 100_000, "tuple width"),
                       default=wisconsin.DEFAULT_WIDTH, metavar="BYTES",
                       help="13 four-byte integers plus the three strings "
                            f"(default: {wisconsin.DEFAULT_WIDTH}, as in the overhead study)")

    p = add("wisconsin", "Wisconsin benchmark relations of any size")
    p.add_argument("--rows", type=_int_in(1, wisconsin.MAX_ROWS, "row count"), required=True,
                   help="rows per table")
    p.add_argument("--tables", nargs="+", type=table_name, default=["wisconsin"],
                   metavar="NAME", help="table names (default: wisconsin)")
    wisconsin_options(p)
    for name, tables in WISCONSIN_SETS.items():
        names = ", ".join(t for t, _ in tables)
        p = add(name, f"Wisconsin relations {names}")
        wisconsin_options(p)

    p = add("tpch", "the eight TPC-H tables, as dbgen generates them")
    p.add_argument("--sf", "--scale-factor", dest="sf", type=scale_factor, default="1",
                   help="scale factor (default: 1)")
    p.add_argument("--tables", type=lambda s: [t.strip() for t in s.split(",") if t.strip()],
                   default=None, metavar="T[,T...]",
                   help=f"only these tables (of {', '.join(tpch.TABLES)})")
    p.add_argument("--tpchgen", metavar="PATH", help="tpchgen-cli executable "
                   "(default: next to this Python, or on PATH)")

    p = add("rst", "the partitioned R, S, T of the STAIRs paper (002, section 5.4)")
    p.add_argument("--rows", type=_int_in(10, rst.MAX_ROWS, "row count"),
                   default=rst.DEFAULT_ROWS, help=f"rows per table, a multiple of 10 "
                   f"(default: {rst.DEFAULT_ROWS:,})")
    p.add_argument("--seed", type=_int_in(0, 2**63 - 1, "seed"), default=0,
                   help="seed of the join-key orders (default: 0)")
    p.add_argument("--tuple-width", type=_int_in(rst.MIN_WIDTH, 100_000, "tuple width"),
                   default=rst.DEFAULT_WIDTH, metavar="BYTES",
                   help=f"bytes per tuple: id, a, b and the padding (default: "
                        f"{rst.DEFAULT_WIDTH})")

    p = add("misest", "the snowflake schema of the misestimation workload (issue 48)")
    p.add_argument("--scale", type=_scale(0.001, 100.0), default=1.0,
                   help="scale of the fact tables, customers, products and cities "
                        "(default: 1, about 1.2 million rows in all)")
    p.add_argument("--seed", type=_int_in(0, 2**63 - 1, "seed"), default=0,
                   help="seed of every column (default: 0)")
    return parser


def _scale(lo: float, hi: float):
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid scale {text!r}: not a number") from None
        if not (math.isfinite(value) and lo <= value <= hi):
            raise argparse.ArgumentTypeError(
                f"invalid scale {text!r}: must be between {lo:g} and {hi:g}")
        return value
    return parse


def tables_for(args: argparse.Namespace) -> list[TableSpec]:
    """The table specs the arguments ask for."""
    if args.dataset == "wisconsin":
        if len(set(args.tables)) != len(args.tables):
            raise UsageError("--tables: a table name is given twice")
        specs = wisconsin_tables([(t, args.rows) for t in args.tables], args.prefix, args.seed,
                                 args.tuple_width)
    elif args.dataset in WISCONSIN_SETS:
        specs = wisconsin_tables(list(WISCONSIN_SETS[args.dataset]), args.prefix, args.seed,
                                 args.tuple_width)
    elif args.dataset == "tpch":
        unknown = [t for t in args.tables or () if t not in tpch.TABLES]
        if unknown:
            raise UsageError(f"--tables: unknown TPC-H table {unknown[0]!r} "
                             f"(tables: {', '.join(tpch.TABLES)})")
        if args.tpchgen and not os.access(args.tpchgen, os.X_OK):
            raise UsageError(f"--tpchgen {args.tpchgen!r} is not an executable file")
        specs = tpch_tables(args.sf, args.prefix, args.tables, args.tpchgen)
    elif args.dataset == "misest":
        specs = misest_tables(args.scale, args.prefix, args.seed)
    else:
        if args.rows % 10:
            raise UsageError(f"invalid row count {args.rows:,} for rst: must be a multiple "
                             "of 10 (each half splits into groups of 5)")
        specs = rst_tables(args.rows, args.prefix, args.seed, args.tuple_width)
    too_long = [s.name for s in specs if len(s.name.encode()) > 63]
    if too_long:
        raise UsageError(f"table name {too_long[0]!r} is longer than PostgreSQL's 63 bytes")
    return apply_options(specs, args.prefix, args.index, args.order_by)


def request_for(args: argparse.Namespace) -> LoadRequest:
    """The :class:`LoadRequest` for parsed arguments."""
    part_mb = args.part_size or (TPCH_PART_MB if args.dataset == "tpch" else DEFAULT_PART_MB)
    conf = dict(args.conf)
    return LoadRequest(
        dataset=args.dataset, tables=tables_for(args), dsn=args.dsn, schema=args.schema,
        force=args.force, master=args.master, spark_conf=conf,
        spark_log_level="warn" if args.verbose else "fatal",
        part_bytes=max(1, int(part_mb * 2**20)), jobs=args.jobs,
        maintenance_work_mem=args.maintenance_work_mem, progress=not args.quiet,
        inject_failure=args.inject_failure,
    )


def run(argv: list[str] | None = None, spark=None, exiting: bool = False) -> Report:
    """Parse ``argv`` and load; raises :class:`LoaderError` (and ``SystemExit`` on bad
    arguments, from argparse).  ``exiting``: see :func:`spark_loader.loader.load`."""
    args = build_parser().parse_args(argv)
    report = load(request_for(args), spark=spark, exiting=exiting)
    if args.summary_json:
        with open(args.summary_json, "w") as f:
            f.write(report.to_json() + "\n")
    return report


def format_report(report: Report) -> str:
    """The end-of-run table: per table the status, row count and checksum."""
    width = max([5] + [len(t.name) for t in report.tables])
    lines = [f"{'table':<{width}}  {'status':<9}  {'rows':>13}  checksum"]
    for t in report.tables:
        rows = f"{t.rows:,}" if t.rows is not None else "-"
        lines.append(f"{t.name:<{width}}  {t.status:<9}  {rows:>13}  {t.checksum or '-'}")
    tm = report.timings
    phases = ", ".join(f"{k.replace('_', ' ')} {tm[k]:.1f} s"
                       for k in ("prepare", "spark_start", "load", "finish") if k in tm)
    total = tm.get("total", 0.0)
    loaded = report.loaded_rows
    rate = f" ({loaded / total:,.0f} rows/s)" if loaded and total else ""
    if any(t.status == "loaded" for t in report.tables):
        lines.append(f"{loaded:,} rows loaded in {total:.1f} s{rate}"
                     + (f"; {phases}" if phases else ""))
    elif report.tables and all(t.status == "unchanged" for t in report.tables):
        lines.append("nothing to do: every table is up to date (--force reloads)")
    return "\n".join(lines)


def main(argv: list[str] | None = None, spark=None, exiting: bool = False) -> int:
    """The command line; returns the exit code.  ``python -m spark_loader`` and
    ``spark-loader`` call it with ``exiting=True`` (see :func:`spark_loader.loader.load`)."""
    try:
        report = run(argv, spark=spark, exiting=exiting)
    except LoaderError as exc:
        partial = getattr(exc, "report", None)
        if partial is not None:
            print(format_report(partial))
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except psycopg.Error as exc:
        diag = getattr(exc, "diag", None)
        message = (diag.message_primary if diag and diag.message_primary else str(exc)).strip()
        print(f"{PROG}: database error: {message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; no table was changed by the unfinished part",
              file=sys.stderr)
        return 130
    print(format_report(report))
    return 0
