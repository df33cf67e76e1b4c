"""Selection-eddy overhead, measured side by side (the No-Delay and Delay-X
queries of the overhead study, Deshpande 2004, Figure 5).

    python -m eddytools.bench_selection --dsn "host=... dbname=..." [--rows 100000]

Creates a Wisconsin relation of --rows rows with 244-byte tuples (unless it
exists; the Spark loader's rows, see ``ensure_table``), then times each query
under vanilla PostgreSQL (eddy.enabled = off) and under the eddy at several
eddy.reopt_frequency values, every predicate a selection operator
(eddy.selection_min_cost = 0).  Configurations are interleaved within each
repetition; the medians and their ratio to vanilla are printed.  Every
configuration must return the same count.
"""

from __future__ import annotations

import argparse
import statistics
import time

import psycopg
from psycopg import sql

from eddytools.db import connect, ensure_eddy, set_gucs, sql_value
from spark_loader import wisconsin

QUERIES = {
    "No-Delay": "SELECT count(*) FROM {t} WHERE two < 2 AND four < 4 AND ten < 10",
    "Delay-0": "SELECT count(*) FROM {t} WHERE delay(two, 0) < 2 AND delay(four, 0) < 4"
               " AND delay(ten, 0) < 10",
    "Delay-10": "SELECT count(*) FROM {t} WHERE delay(two, 10) < 2 AND delay(four, 10) < 4"
                " AND delay(ten, 10) < 10",
    "Delay-100": "SELECT count(*) FROM {t} WHERE delay(two, 100) < 2 AND delay(four, 100) < 4"
                 " AND delay(ten, 100) < 10",
}


def ensure_table(conn: psycopg.Connection, table: str, rows: int, seed: int = 0) -> None:
    """Create Wisconsin relation ``table`` of ``rows`` rows (244-byte tuples,
    a primary key on unique2) unless it exists with that many rows.  The rows
    are ``spark_loader.wisconsin``'s, the same as the Spark loader's for a
    table of that name and seed (``python -m spark_loader tenk`` makes
    tenk1..5), copied in from this process."""
    exists = sql_value(conn, "SELECT to_regclass(%s) IS NOT NULL", (table,))
    name = sql.Identifier(table)
    if exists:
        if sql_value(conn, sql.SQL("SELECT count(*) FROM {}").format(name)) == rows:
            return
        conn.execute(sql.SQL("DROP TABLE {}").format(name))
    columns = sql.SQL(", ").join(
        sql.SQL("{} {}").format(sql.Identifier(c),
                                sql.SQL("integer" if k < wisconsin.INT_COLUMNS else "text"))
        for k, c in enumerate(wisconsin.COLUMNS))
    conn.execute(sql.SQL("CREATE TABLE {} ({})").format(name, columns))
    params = {"rows": rows, "seed": seed, "label": table, "width": wisconsin.DEFAULT_WIDTH}
    with conn.cursor() as cur, cur.copy(sql.SQL("COPY {} FROM STDIN").format(name)) as copy:
        for chunk in wisconsin.chunks(params, 0, rows):
            copy.write(chunk)
    conn.execute(sql.SQL("ALTER TABLE {} ADD PRIMARY KEY (unique2)").format(name))
    conn.execute(sql.SQL("VACUUM ANALYZE {}").format(name))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dsn", default="", help="libpq connection string (default: PG* environment)")
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--table", default="bench_sel")
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--queries", default="No-Delay,Delay-10",
                    help=f"comma-separated, from {', '.join(QUERIES)}")
    ap.add_argument("--freqs", default="1,10,100,1000",
                    help="eddy.reopt_frequency values to measure")
    ap.add_argument("--policy", default="rank")
    args = ap.parse_args(argv)

    with connect(args.dsn) as conn:
        ensure_eddy(conn)
        conn.execute("SET max_parallel_workers_per_gather = 0")
        conn.execute("SET jit = off")
        ensure_table(conn, args.table, args.rows)
        configs = ["vanilla"] + [f"eddy@{f}" for f in args.freqs.split(",")]
        for qname in args.queries.split(","):
            query = QUERIES[qname].format(t=args.table)
            times: dict[str, list[float]] = {c: [] for c in configs}
            answers: dict[str, set] = {c: set() for c in configs}
            for rep in range(args.reps + 1):  # the first repetition warms up
                for config in configs:
                    if config == "vanilla":
                        set_gucs(conn, enabled="off")
                    else:
                        set_gucs(conn, enabled="on", selection_min_cost=0,
                                 routing_policy=args.policy,
                                 reopt_frequency=config.split("@")[1])
                    t0 = time.perf_counter()
                    answer = sql_value(conn, query)
                    elapsed = time.perf_counter() - t0
                    answers[config].add(answer)
                    if rep > 0:
                        times[config].append(elapsed)
            if len(set().union(*answers.values())) != 1:
                raise SystemExit(f"{qname}: configurations disagree: {answers}")
            base = statistics.median(times["vanilla"])
            print(f"{qname} ({args.rows} rows, {args.reps} reps, policy {args.policy})")
            for config in configs:
                med = statistics.median(times[config])
                lo, hi = min(times[config]), max(times[config])
                print(f"  {config:>10}: median {med * 1000:9.2f} ms  "
                      f"[{lo * 1000:.2f} .. {hi * 1000:.2f}]  ratio {med / base:.3f}")


if __name__ == "__main__":
    main()
