"""Randomized differential testing of eddies, long form: generate seeded
queries, compare each with the eddy on and off under several settings,
minimise the failures into regression files (``run``, and the command line
that ``make fuzz`` wraps).

    python -m eddytools.fuzz --dsn "host=... dbname=..." --queries 5000 --seed 1 \
        [--schema-every 250] [--settings 8] [--save tests/regressions]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from eddytools.fuzz.generator import FuzzQueryGenerator
from eddytools.fuzz.minimise import minimise_failure, save_regression
from eddytools.fuzz.runner import BackendCrash, Differ, Failure, Stats, settings_for


def run(dsn: str, *, queries: int, seed: int, schema_every: int = 250,
        settings_per_query: int = 4, log: Callable[[str], None] = print,
        minimise_into: Path | None = None, max_failures: int = 20,
        deadline: float | None = None) -> Stats:
    """Generate and compare ``queries`` queries; a new schema (seed
    ``seed * 1000 + k``) every ``schema_every`` queries."""
    stats = Stats()
    differ = Differ(dsn, log)
    rng = random.Random(seed)
    gen: FuzzQueryGenerator | None = None
    saved = 0
    for i in range(queries):
        if deadline is not None and time.monotonic() > deadline:
            log(f"deadline reached after {i} queries")
            break
        if i % schema_every == 0:
            schema_seed = seed * 1000 + i // schema_every
            schema = differ.load_schema(schema_seed)
            gen = FuzzQueryGenerator(seed * 1000 + i // schema_every, schema)
        assert gen is not None
        q = gen.query()
        stats.queries += 1
        stats.by_relations[q.relations] = stats.by_relations.get(q.relations, 0) + 1
        stats.by_shape[q.shape] = stats.by_shape.get(q.shape, 0) + 1
        for f in q.features:
            stats.by_feature[f] = stats.by_feature.get(f, 0) + 1
        try:
            want = differ.vanilla(q.sql)
        except BackendCrash as e:
            differ.reconnect()
            stats.failures.append(Failure("vanilla-crash", q.sql, {}, q.ordered, str(e),
                                          differ.schema_seed or 0,
                                          f"gen seed {gen.seed} #{q.number}"))
            continue
        if want[0] == "error":
            stats.vanilla_errors += 1
        any_eddy = False
        for s in settings_for(rng, settings_per_query):
            verdict, detail, has = differ.check(q.sql, s, q.ordered, want)
            stats.comparisons += 1
            stats.plans_with_eddy += has
            stats.settings_seen.add((s["routing_policy"], s["reopt_frequency"], s["join_method"]))
            any_eddy |= has
            if verdict == "tolerated":
                stats.tolerated += 1
            elif verdict == "plan-dependent":
                stats.plan_dependent += 1
                if len(stats.plan_dependent_examples) < 3:
                    stats.plan_dependent_examples.append(
                        f"gen seed {gen.seed} #{q.number} {s}\n{q.sql}\n{detail}")
            elif verdict == "slow":
                stats.slow += 1
                if len(stats.slow_examples) < 3:
                    stats.slow_examples.append(
                        f"gen seed {gen.seed} #{q.number} {s}\n{q.sql}\n{detail}")
            elif verdict != "ok":
                fail = Failure(verdict, q.sql, s, q.ordered, detail, differ.schema_seed or 0,
                               f"gen seed {gen.seed} #{q.number}")
                stats.failures.append(fail)
                log(f"FAILURE {fail.describe()}")
                if minimise_into is not None and saved < 5:
                    reduced = minimise_failure(differ, fail, log=log)
                    path = save_regression(minimise_into, reduced)
                    saved += 1
                    log(f"minimised to:\n{reduced.query}\nsaved as {path}")
                break  # one failure per query is enough
        stats.with_eddy += any_eddy
        if len(stats.failures) >= max_failures:
            log("too many failures; stopping")
            break
        if (i + 1) % 100 == 0:
            log(f"{i + 1} queries, {stats.comparisons} comparisons, "
                f"{len(stats.failures)} failures, eddy share "
                f"{stats.with_eddy / stats.queries:.1%}")
    differ.conn.close()
    return stats


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eddytools.fuzz",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--dsn", required=True,
                    help="libpq connection string of a database on a server that preloads eddy"
                         " (the data go to schema fz)")
    ap.add_argument("--queries", type=int, default=1000,
                    help="queries to generate and compare (default: 1000)")
    ap.add_argument("--seed", type=int, default=1,
                    help="seed of the data and the queries (default: 1)")
    ap.add_argument("--schema-every", type=int, default=250,
                    help="queries per schema (data seed seed*1000+k)")
    ap.add_argument("--settings", type=int, default=8,
                    help="settings per query (every policy once per 5)")
    ap.add_argument("--minutes", type=float, default=0, help="stop after this long (0: never)")
    ap.add_argument("--save", type=Path, default=None,
                    help="minimise failures and save regression files here")
    ap.add_argument("--report", type=Path, default=None, help="write the summary as JSON here")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    deadline = t0 + args.minutes * 60 if args.minutes else None

    def log(s: str) -> None:
        print(f"[{time.monotonic() - t0:7.1f}s] {s}", flush=True)

    stats = run(args.dsn, queries=args.queries, seed=args.seed, schema_every=args.schema_every,
                settings_per_query=args.settings, log=log, minimise_into=args.save,
                max_failures=50, deadline=deadline)
    log(stats.summary())
    for f in stats.failures:
        print("\n" + f.describe())
    for example in stats.plan_dependent_examples:
        print("\nplan-dependent (not a failure):\n" + example)
    for example in stats.slow_examples:
        print("\nslow in both (not a failure):\n" + example)
    if args.report:
        doc = asdict(stats)
        doc["settings_seen"] = sorted(map(list, stats.settings_seen))
        doc["seconds"] = round(time.monotonic() - t0, 1)
        args.report.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    return 1 if stats.failures else 0

