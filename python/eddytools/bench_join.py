"""Join-eddy overhead, measured side by side (the Select-Count-N and N-X
queries of the overhead study, Deshpande 2004, Figures 6 and 7).

    python -m eddytools.bench_join --dsn "host=... dbname=..." [--reps 7]

Creates tenk1..5 (10,000 rows) and hundredk1..5 (100,000 rows) Wisconsin
relations with 244-byte tuples and an index on unique2 (unless they exist),
then times each query under vanilla PostgreSQL, the static symmetric hash
join (eddy.static_shj) and the eddy at several eddy.reopt_frequency values,
configurations interleaved within each repetition.  Index-join queries force
index nested loops for vanilla (enable_hashjoin/mergejoin off) and index
joins for the eddy (eddy.join_method = index).  Every configuration must
return the same answer.
"""

from __future__ import annotations

import argparse
import statistics
import time

import psycopg

from eddytools.bench_selection import ensure_table
from eddytools.db import apply_settings, connect, ensure_eddy, rows_digest


def star(n: int, prefix: str, select: str, extra: str = "") -> str:
    tables = ", ".join(f"{prefix}{i}" for i in range(1, n + 1))
    conds = " and ".join(f"{prefix}1.unique2 = {prefix}{i}.unique2" for i in range(2, n + 1))
    return f"SELECT {select} FROM {tables} WHERE {extra}{conds}"


def queries(kinds: list[str]) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for n in (3, 4, 5):
        if "count" in kinds:
            out[f"Select-Count-{n}"] = ("hash", star(n, "tenk", "count(*)"))
        if "all" in kinds:
            out[f"Select-All-{n}"] = ("hash", star(n, "tenk", "*"))
        if "index" in kinds:
            for x in (10, 1000):
                out[f"{n}-{x}"] = ("index", star(n, "hundredk", "*",
                                                 f"hundredk1.unique2 % {x} = 0 and "))
    return out


def join_settings(config: str, method: str) -> dict[str, str]:
    """Settings of one configuration.  As in the study, the join method is
    forced for vanilla PostgreSQL too: hash joins for the hash experiments
    (so that the static SHJ has Hash Joins to replace), index nested loops
    for the index experiments."""
    index = method == "index"
    settings = {"enable_hashjoin": "off" if index else "on", "enable_mergejoin": "off",
                "enable_nestloop": "on" if index else "off"}
    if config == "vanilla":
        settings |= {"eddy.enabled": "off", "eddy.static_shj": "off"}
    elif config == "shj":
        settings |= {"eddy.enabled": "off", "eddy.static_shj": "on"}
    else:
        settings |= {"eddy.enabled": "on", "eddy.static_shj": "off",
                     "eddy.reopt_frequency": config.split("@")[1].partition("+")[0],
                     "eddy.join_method": "index" if index else "hash"}
    return settings


def configure(conn: psycopg.Connection, config: str, method: str) -> None:
    """Apply join_settings in the session."""
    # a selection experiment's setting must not route the N-X filters here
    conn.execute("RESET eddy.selection_min_cost")
    apply_settings(conn, join_settings(config, method))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dsn", default="")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--kinds", default="count,index", help="count, all, index")
    ap.add_argument("--freqs", default="100,1000")
    ap.add_argument("--shj", action="store_true", help="also measure the static SHJ")
    args = ap.parse_args(argv)

    with connect(args.dsn) as conn:
        ensure_eddy(conn)
        conn.execute("SET max_parallel_workers_per_gather = 0")
        conn.execute("SET jit = off")
        conn.execute("SET work_mem = '64MB'")
        for i in range(1, 6):
            ensure_table(conn, f"tenk{i}", 10_000)
            ensure_table(conn, f"hundredk{i}", 100_000)
        for name, (method, query) in queries(args.kinds.split(",")).items():
            configs = ["vanilla"] + (["shj"] if args.shj and method == "hash" else []) + \
                [f"eddy@{f}" for f in args.freqs.split(",")]
            times: dict[str, list[float]] = {c: [] for c in configs}
            answers: dict[str, set] = {c: set() for c in configs}
            for rep in range(args.reps + 1):
                for config in configs:
                    configure(conn, config, method)
                    t0 = time.perf_counter()
                    rows = conn.execute(query).fetchall()
                    elapsed = time.perf_counter() - t0
                    answers[config].add((len(rows), rows_digest(rows)))
                    if rep > 0:
                        times[config].append(elapsed)
            if len(set().union(*answers.values())) != 1:
                raise SystemExit(f"{name}: configurations disagree")
            base = statistics.median(times["vanilla"])
            line = f"{name:>15}:"
            for config in configs:
                med = statistics.median(times[config])
                line += f"  {config} {med * 1000:8.2f} ms ({med / base:.3f})"
            print(line, flush=True)


if __name__ == "__main__":
    main()
