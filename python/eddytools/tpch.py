"""TPC-H for the eddy tests and benchmarks: data, schema and the 22 queries.

    python -m eddytools.tpch --dsn "host=... dbname=..." [--scale 0.01]

Data come from ``tpchgen-cli`` (a Rust port of dbgen, a project dependency),
written as CSV into a temporary directory and loaded with
``COPY ... FROM STDIN``.  The schema follows the specification (clause 1.4):
identifiers as integer, money and quantities as numeric(15,2), dates as date,
fixed texts as char(n); then primary keys, foreign keys with an index on every
foreign-key column not already covered by a primary key, and ANALYZE.

The 22 queries (``tpch_queries/qNN.sql``) carry the specification's default
substitution parameters, the query-validation values of clause 2.4, written
for PostgreSQL (Q15's view revenue0 is a CTE).  ``QUERIES`` describes each
query's ORDER BY (which output columns it sorts on, and whether that order is
total, i.e. fixes the sequence of the result) so that a differential test can
compare the order of rows and not just their multiset.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

from eddytools.db import sql_value
from spark_loader.tpch import COLUMNS, FOREIGN_KEYS, PRIMARY_KEYS

QUERY_DIR = Path(__file__).with_name("tpch_queries")

# Tables in load order (parents before children), columns per clause 1.4.1.
# The schema (clause 1.4) lives with the data pipeline that loads it.
TABLES = COLUMNS


@dataclass(frozen=True)
class TpchQuery:
    number: int
    order_keys: tuple[int, ...]  # output columns the ORDER BY sorts on (0-based)
    total_order: bool  # the ORDER BY fixes the sequence of result rows
    limit: bool  # a LIMIT cuts the sorted result

    @property
    def name(self) -> str:
        return f"q{self.number:02d}"

    @property
    def sql(self) -> str:
        return (QUERY_DIR / f"{self.name}.sql").read_text()


# An ORDER BY is total when its keys include a key of the result: the group
# keys of a grouped query, or a unique column.  Single-row queries count as
# total.  Q3, Q5, Q10, Q11 and Q18 sort on an aggregate (ties possible).
QUERIES: dict[int, TpchQuery] = {q.number: q for q in (
    TpchQuery(1, (0, 1), True, False),
    TpchQuery(2, (0, 2, 1, 3), True, True),
    TpchQuery(3, (1, 2), False, True),
    TpchQuery(4, (0,), True, False),
    TpchQuery(5, (1,), False, False),
    TpchQuery(6, (), True, False),
    TpchQuery(7, (0, 1, 2), True, False),
    TpchQuery(8, (0,), True, False),
    TpchQuery(9, (0, 1), True, False),
    TpchQuery(10, (2,), False, True),
    TpchQuery(11, (1,), False, False),
    TpchQuery(12, (0,), True, False),
    TpchQuery(13, (1, 0), True, False),
    TpchQuery(14, (), True, False),
    TpchQuery(15, (0,), True, False),
    TpchQuery(16, (3, 0, 1, 2), True, False),
    TpchQuery(17, (), True, False),
    TpchQuery(18, (4, 3), False, True),
    TpchQuery(19, (), True, False),
    TpchQuery(20, (0,), True, False),
    TpchQuery(21, (1, 0), True, True),
    TpchQuery(22, (0,), True, False),
)}


def tpchgen_executable() -> str:
    """tpchgen-cli next to this interpreter (a venv need not be on PATH), else on PATH."""
    beside = Path(sys.executable).with_name("tpchgen-cli")
    if beside.exists():
        return str(beside)
    found = shutil.which("tpchgen-cli")
    if found is None:
        raise RuntimeError("tpchgen-cli not found: pip install tpchgen-cli")
    return found


def generate(scale: float, outdir: Path) -> dict[str, Path]:
    """Write the 8 tables at ``scale`` as CSV files with a header line."""
    outdir.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [tpchgen_executable(), "csv", "-s", str(scale), "-o", str(outdir),
         "--overwrite", "--quiet", "--num-threads", "2"],
        check=True, capture_output=True, text=True)
    files = {t: outdir / f"{t}.csv" for t in TABLES}
    missing = [str(p) for p in files.values() if not p.exists()]
    if missing:
        raise RuntimeError(f"tpchgen-cli did not write {missing}")
    return files


def create_schema(conn: psycopg.Connection) -> None:
    for table, columns in TABLES.items():
        conn.execute(sql.SQL("CREATE TABLE {} ({})").format(
            sql.Identifier(table),
            sql.SQL(", ").join(
                sql.SQL("{} {} NOT NULL").format(sql.Identifier(c), sql.SQL(t))
                for c, t in columns)))


def copy_csv(conn: psycopg.Connection, table: str, path: Path) -> None:
    copy_sql = sql.SQL("COPY {} FROM STDIN (FORMAT csv, HEADER true)").format(
        sql.Identifier(table))
    with conn.cursor() as cur, cur.copy(copy_sql) as copy, path.open("rb") as f:
        while chunk := f.read(1 << 20):
            copy.write(chunk)


def add_keys(conn: psycopg.Connection) -> None:
    """Primary keys, foreign keys, and an index on each foreign key not led by a primary key."""
    for table, cols in PRIMARY_KEYS.items():
        conn.execute(sql.SQL("ALTER TABLE {} ADD PRIMARY KEY ({})").format(
            sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, cols))))
    for table, cols, ref, ref_cols in FOREIGN_KEYS:
        conn.execute(sql.SQL("ALTER TABLE {} ADD FOREIGN KEY ({}) REFERENCES {} ({})").format(
            sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, cols)),
            sql.Identifier(ref), sql.SQL(", ").join(map(sql.Identifier, ref_cols))))
        if PRIMARY_KEYS[table][:len(cols)] != cols:
            conn.execute(sql.SQL("CREATE INDEX ON {} ({})").format(
                sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, cols))))
    # Q-friendly single-column index on lineitem's supplier (Q9, Q21 probe it)
    conn.execute("CREATE INDEX ON lineitem (l_suppkey)")


def load(conn: psycopg.Connection, scale: float = 0.01, workdir: Path | None = None) -> dict:
    """Generate and load TPC-H at ``scale`` into the (empty) database of ``conn``.
    Returns the row count of each table."""
    with tempfile.TemporaryDirectory(dir=workdir, prefix="tpch-") as tmp:
        files = generate(scale, Path(tmp))
        with conn.transaction():
            create_schema(conn)
            for table, path in files.items():
                copy_csv(conn, table, path)
            add_keys(conn)
    conn.execute("VACUUM ANALYZE")
    return {t: sql_value(conn, sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(t)))
            for t in TABLES}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dsn", default="", help="libpq connection string of an empty database")
    ap.add_argument("--scale", type=float, default=0.01, help="TPC-H scale factor (default 0.01)")
    ap.add_argument("--print-query", type=int, metavar="N",
                    help="print query N (1-22) and exit")
    args = ap.parse_args(argv)
    if args.print_query:
        print(QUERIES[args.print_query].sql)
        return
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        counts = load(conn, args.scale)
    for table, n in counts.items():
        print(f"{table:10s} {n:>10d}")


if __name__ == "__main__":
    main()
