"""Small query-runner helpers over psycopg 3 (in the spirit of Citus's common.py)."""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql


def connect(dsn: str, autocommit: bool = True) -> psycopg.Connection:
    """A connection that never prepares statements behind our back: psycopg
    prepares a query after 5 executions, and a prepared plan is not replanned
    when eddy.* settings change, which would silently compare a plan with
    itself."""
    conn = psycopg.connect(dsn, autocommit=autocommit)
    conn.prepare_threshold = None
    return conn


def sql_value(conn: psycopg.Connection | psycopg.Cursor, query: str | sql.SQL | sql.Composed,
              params: Any = None) -> Any:
    """The single value of a one-row, one-column query."""
    row = conn.execute(query, params).fetchone()
    if row is None:
        raise LookupError(f"no row from {query!r}")
    return row[0]


def apply_settings(conn: psycopg.Connection, settings: Mapping[str, Any],
                   reset: bool = False) -> None:
    """Set each setting (full name: work_mem, eddy.enabled) to its value for
    the session with set_config, after RESET ALL if ``reset``: the one way
    the tests and the benchmark harness apply settings."""
    if reset:
        conn.execute("RESET ALL")
    for name, value in settings.items():
        conn.execute(sql.SQL("SELECT set_config({}, {}, false)").format(
            sql.Literal(name), sql.Literal(str(value))))


def ensure_eddy(conn: psycopg.Connection) -> None:
    """CREATE EXTENSION eddy in the connection's database if it is not
    there, and bring an older one up to the installed version (ALTER
    EXTENSION ... UPDATE: a database whose extension predates an object,
    such as delay_phased, gets it)."""
    conn.execute("CREATE EXTENSION IF NOT EXISTS eddy")
    conn.execute("ALTER EXTENSION eddy UPDATE")


def set_gucs(conn: psycopg.Connection, **settings: Any) -> None:
    """SET each eddy.<name> for the session; a name given with '__' is a full
    dotted name, and one that begins with 'pg__' a core setting (pg__work_mem)."""
    apply_settings(conn, {
        name[4:] if name.startswith("pg__")
        else name.replace("__", ".") if "__" in name else f"eddy.{name}": value
        for name, value in settings.items()})


def explain_json(conn: psycopg.Connection, query: str, *, analyze: bool = False,
                 verbose: bool = False, params: Any = None) -> dict:
    """The top plan node of EXPLAIN (FORMAT JSON) as a dict."""
    options = ["FORMAT JSON", "COSTS OFF"]
    if analyze:
        options += ["ANALYZE", "TIMING OFF", "SUMMARY OFF"]
    if verbose:
        options.append("VERBOSE")
    raw = sql_value(conn, f"EXPLAIN ({', '.join(options)}) {query}", params)
    doc = raw if isinstance(raw, list) else json.loads(raw)
    return doc[0]["Plan"]


def plan_nodes(plan: dict) -> Iterator[dict]:
    """Every node of a JSON plan, depth first (subplans and init plans included)."""
    yield plan
    for child in plan.get("Plans", []):
        yield from plan_nodes(child)


def eddy_nodes(plan: dict) -> list[dict]:
    return [n for n in plan_nodes(plan) if n.get("Custom Plan Provider") == "Eddy"]


def explain_eddy(conn: psycopg.Connection, query: str, **settings: Any) -> dict:
    """The one eddy of ``query`` under EXPLAIN (ANALYZE, VERBOSE), after
    setting ``settings`` (eddy.* names without the prefix)."""
    set_gucs(conn, **settings)
    eddies = eddy_nodes(explain_json(conn, query, analyze=True, verbose=True))
    assert len(eddies) == 1, f"expected one eddy, found {len(eddies)}"
    return eddies[0]


def routing_history(eddy: dict) -> dict[str, list[tuple[int, int]]]:
    """An eddy's Routing History (EXPLAIN ANALYZE VERBOSE): per scanned
    source, by name, its runs of (operator number, tuples) in the order
    its tuples were read; the key is "" where the eddy has one scanned
    source and the history names none.  A source's history past 1,000 runs
    ends in "...", left out here."""
    out: dict[str, list[tuple[int, int]]] = {}
    for lane in eddy["Routing History"].split("; "):
        name, _, runs = lane.rpartition(": ")
        out[name] = [(int(m), int(n)) for m, n in
                     (run.split(" x ") for run in runs.split(", ") if run != "...")]
    return out


def set_core_gucs(conn: psycopg.Connection, settings: dict[str, str]) -> None:
    """SET each of PostgreSQL's own settings in ``settings`` for the session
    (PARALLEL_FORCED, enable_hashjoin, ...)."""
    set_gucs(conn, **{f"pg__{name}": value for name, value in settings.items()})


# The executor's variants a differential test runs a query under, one after
# another, each on top of EXECUTOR_DEFAULTS: routing policies, forced state
# migration, a forced spill, SteMs under the proportional schedule, routing
# recomputed for every tuple.
EXECUTOR_VARIANTS: list[dict[str, str]] = [
    {},
    {"routing_policy": "lottery"},
    {"routing_policy": "cumulative", "migration": "greedy", "debug_migrate_every": "3"},
    {"debug_spill_after": "40"},
    {"state_mode": "stems", "source_schedule": "proportional"},
    {"reopt_frequency": "1", "routing_policy": "rank"},
    {"filter_before_store": "off", "routing_policy": "random"},
]
EXECUTOR_DEFAULTS: dict[str, str] = {
    "routing_policy": "rank", "migration": "off", "debug_migrate_every": "0",
    "debug_spill_after": "0", "state_mode": "stairs", "source_schedule": "build",
    "reopt_frequency": "100", "filter_before_store": "on"}


def vanilla_multiset(conn: psycopg.Connection, query: str) -> Counter:
    """``query``'s rows with eddies off (PostgreSQL's own plan), as a multiset;
    eddies are on again afterwards."""
    set_gucs(conn, enabled="off")
    try:
        return multiset(conn.execute(query).fetchall())
    finally:
        set_gucs(conn, enabled="on")


def _sort_key(value: Any) -> tuple:
    return (value is None, str(type(value)), repr(value))


def multiset(rows: Iterable[tuple]) -> Counter:
    """Rows as a multiset: equal for equal query results in any order."""
    return Counter(tuple(_sort_key(v) for v in row) for row in rows)


def row_digest(row: tuple) -> int:
    """A 64-bit digest of one row, the same in every process and on every
    machine (unlike ``hash()``, which is salted per process): BLAKE2b over
    the row's ``repr``, which tells values and types apart (1, 1.0, '1',
    True, None; -0.0 and 0.0; Decimal('1.5') and Decimal('1.50'))."""
    return int.from_bytes(hashlib.blake2b(repr(row).encode(), digest_size=8).digest(), "little")


def rows_digest(rows: Iterable[tuple]) -> str:
    """An order-independent digest of a multiset of rows, as 16 hex digits:
    the sum of the rows' digests modulo 2**64 (a repeated row counts
    twice).  Stable across processes, so digests stored in benchmark results
    can be compared from one run to the next."""
    acc = 0
    for row in rows:
        acc = (acc + row_digest(row)) & 0xFFFFFFFFFFFFFFFF
    return f"{acc:016x}"


def server_log_excerpt(logfile: str, lines: int = 30) -> str:
    """The server log's lines about the last backend crash (or its tail)."""
    time.sleep(1)  # the postmaster logs the crash after the connection drops
    try:
        text = Path(logfile).read_text(errors="replace").splitlines()
    except OSError as e:
        return f"(no server log: {e})"
    crash = [k for k, line in enumerate(text) if "terminated by signal" in line
             or "was terminated by exception" in line or "TRAP:" in line]
    if crash:
        return "\n".join(text[max(0, crash[-1] - 10):crash[-1] + 4])
    return "\n".join(text[-lines:])


def eddy_reasons(conn: psycopg.Connection, query: str) -> list[str]:
    """The planner's DEBUG1 messages about eddies for ``query``."""
    messages: list[str] = []

    def handler(diag: psycopg.errors.Diagnostic) -> None:
        if diag.message_primary and "eddy" in diag.message_primary:
            messages.append(diag.message_primary)

    conn.add_notice_handler(handler)
    try:
        conn.execute("SET client_min_messages = debug1")
        conn.execute(f"EXPLAIN {query}")
    finally:
        conn.execute("RESET client_min_messages")
        conn.remove_notice_handler(handler)
    return messages


def backend_memory(conn: psycopg.Connection) -> tuple[int, int]:
    """The memory of ``conn``'s backend: the total bytes of its memory
    contexts (pg_backend_memory_contexts) and its private resident memory in
    kB (RssAnon of /proc/<pid>/status, which leaves out shared buffers).
    The server must run on this machine under the caller's OS user (or the
    caller is root)."""
    total = sql_value(conn, "SELECT sum(total_bytes)::bigint FROM pg_backend_memory_contexts")
    pid = conn.info.backend_pid
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(total), int(line.split()[1])
    raise LookupError(f"no RssAnon in /proc/{pid}/status")


def migration_settings(tag: str) -> dict:
    """State-migration settings for a differential run, drawn from their own
    generator seeded by ``tag`` (so adding them changes no other draw): the
    policy, and a forced migration at every N-th point of stasis half the
    time (which also checks the migration's invariants, see migrate.c)."""
    rng = random.Random(f"migration:{tag}")
    return {"migration": rng.choice(["off", "greedy", "guarded"]),
            "debug_migrate_every": rng.choice([0, 1, 3, 17])}


def state_settings(tag: str) -> dict:
    """The join state mode for a differential run (eddy.state_mode: STAIRs,
    which store intermediate results, or SteMs, which store base tuples
    only), drawn from its own generator seeded by ``tag`` so that adding it
    changes no other draw."""
    rng = random.Random(f"state:{tag}")
    return {"state_mode": rng.choice(["stairs", "stems"])}


def hybrid_settings(tag: str, join_method: str) -> dict:
    """Hybrid index/hash joins for a differential run (eddy.join_method =
    hybrid in place of auto a third of the time, with a route and a cache
    setting; otherwise an index join's cache setting, index_cache_settings),
    drawn from their own generators seeded by ``tag`` so that adding them
    changes no other draw."""
    rng = random.Random(f"hybrid:{tag}")
    if join_method != "auto" or rng.random() >= 1 / 3:
        return index_cache_settings(tag)
    return {"join_method": "hybrid",
            "hybrid_route": rng.choice(["auto", "auto", "index", "hash", "random"]),
            "hybrid_cache": random.Random(f"hybrid_cache:{tag}").choice(
                ["auto", "auto", "on", "off"])}


def index_cache_settings(tag: str) -> dict:
    """An index join's lookup cache (eddy.index_cache: auto half the time,
    on or off a quarter each), from its own generator seeded by ``tag`` so
    that adding it changes no other draw."""
    return {"index_cache": random.Random(f"index_cache:{tag}").choice(
        ["auto", "auto", "on", "off"])}


def lookahead_settings(tag: str) -> dict:
    """The rank policy's lookahead (eddy.rank_lookahead: on, its default,
    three times in four), from its own generator seeded by ``tag`` so that
    adding it changes no other draw."""
    return {"rank_lookahead": random.Random(f"lookahead:{tag}").choice(
        ["on", "on", "on", "off"])}


def hot_keys_settings(tag: str) -> dict:
    """An index join's hot keys (eddy.hot_keys: on, its default, three times
    in four), from its own generator seeded by ``tag`` so that adding it
    changes no other draw."""
    return {"hot_keys": random.Random(f"hot_keys:{tag}").choice(["on", "on", "on", "off"])}


# Parallel plans forced (the cost of starting workers and of passing tuples
# set to zero, any table large enough), and the servers' own settings, which
# a run that does not force them sets back.
PARALLEL_FORCED = {"max_parallel_workers_per_gather": "2", "parallel_setup_cost": "0",
                   "parallel_tuple_cost": "0", "min_parallel_table_scan_size": "0",
                   "min_parallel_index_scan_size": "0"}
PARALLEL_SERVER = {"max_parallel_workers_per_gather": "0", "parallel_setup_cost": "1000",
                   "parallel_tuple_cost": "0.1", "min_parallel_table_scan_size": "8MB",
                   "min_parallel_index_scan_size": "512kB"}


def parallel_settings(tag: str) -> dict:
    """Parallel plans forced a third of the time (partial eddies under a
    Gather, parallel.c), as core settings for set_gucs, and which parallel
    eddy (eddy.parallel_exchange), drawn from their own
    generator seeded by ``tag`` so that adding them changes no other draw.
    Every key is always there, so a run that does not force them undoes one
    that did."""
    rng = random.Random(f"parallel:{tag}")
    chosen = PARALLEL_FORCED if rng.random() < 1 / 3 else PARALLEL_SERVER
    # which parallel eddy: from a generator of its own, as above
    exchange = random.Random(f"exchange:{tag}").choice(["auto", "always", "off"])
    return {f"pg__{k}": v for k, v in chosen.items()} | {"parallel_exchange": exchange}


def random_start_settings(tag: str) -> dict:
    """A random initial plan for a differential run (eddy.random_start: the
    build order and the first routing decisions drawn from a seed; under
    the fixed policy, the whole run), drawn from its own generator seeded
    by ``tag`` so that adding it changes no other draw."""
    rng = random.Random(f"random_start:{tag}")
    return {"random_start": rng.choice([0, 0, 1, 2, 3, 1234567])}


def spill_settings(tag: str) -> dict:
    """A forced spill for a differential run (eddy.debug_spill_after: the
    join eddy writes its state and unread input to temporary files after N
    tuples routed and finishes in batches, spill.c), drawn from its own
    generator seeded by ``tag`` so that adding it changes no other draw."""
    rng = random.Random(f"spill:{tag}")
    return {"debug_spill_after": rng.choice([0, 0, 1, 25, 400])}
