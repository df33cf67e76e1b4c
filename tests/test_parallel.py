"""Eddies in parallel plans (extension/src/parallel.c; the planner's side in
plan_join.c, "Parallel eddies", and planner.c).

A partial eddy reads one relation through a partial scan (each participant
its share) and every other relation whole; a Gather collects the results.
With parallel plans forced (zero parallel costs), a join block whose other
relations are small gets a "Parallel Custom Scan (Eddy)" under a Gather and
returns exactly PostgreSQL's rows, under every policy, a forced spill,
forced migrations and SteM mode; EXPLAIN ANALYZE shows each worker's
counters.  Where the parallel eddy would repeat more work than PostgreSQL's
parallel plan shares (a Parallel Hash over a large relation), PostgreSQL's
plan stays and the planner says why at DEBUG1.  A selection eddy runs over a
parallel scan the same way.
"""

from __future__ import annotations

import time

import psycopg
import pytest

from eddytools.db import (
    PARALLEL_FORCED,
    eddy_nodes,
    eddy_reasons,
    explain_json,
    multiset,
    plan_nodes,
    set_gucs,
)

SCHEMA = """
CREATE TABLE pa AS SELECT g AS id, g % 5000 AS k, md5(g::text) AS s, g % 10 AS j
    FROM generate_series(1, 200000) g;
CREATE TABLE pb AS SELECT g AS id, g % 5000 AS k, g % 10 AS j FROM generate_series(1, 100000) g;
CREATE TABLE pc AS SELECT g AS j, 'c' || g AS name FROM generate_series(0, 9) g;
CREATE TABLE pd AS SELECT g AS k, g % 3 AS z FROM generate_series(0, 4999, 7) g;
CREATE FUNCTION pslow(int) RETURNS bool LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE COST 500
    AS 'BEGIN RETURN $1 % 3 <> 0; END';
ANALYZE pa, pb, pc, pd;
"""

# the other relations are small: the parallel eddy repeats little
PARALLEL_QUERIES = [
    "SELECT count(*), sum(pa.id), max(pc.name) FROM pa JOIN pc ON pc.j = pa.j "
    "JOIN pd ON pd.k = pa.k WHERE pa.id % 7 <> 0",
    "SELECT pa.id, pc.name, pd.z FROM pa JOIN pc ON pc.j = pa.j JOIN pd ON pd.k = pa.k "
    "WHERE pa.s LIKE 'a%' AND pd.z <> 1",
    "SELECT pc.name, count(*) FROM pa JOIN pc ON pc.j = pa.j GROUP BY pc.name",
]

# PostgreSQL's plan shares a Parallel Hash over pb (100,000 rows)
SHARED_QUERY = ("SELECT count(*), sum(pa.id) FROM pa JOIN pb ON pa.k = pb.k "
                "WHERE pa.id % 7 <> 0")

SELECTION_QUERY = "SELECT id, k FROM pa WHERE pslow(id) AND pslow(k) AND s LIKE '%a%'"


@pytest.fixture
def par(eddy_conn):
    """The tests of the partial eddy that reads one source partially and the
    others whole (eddy.parallel_exchange off); the exchanging eddy's are
    below, "Exchanged state"."""
    eddy_conn.execute(SCHEMA)
    set_gucs(eddy_conn, max_memory="1GB", join_method="hash", parallel_exchange="off")
    return eddy_conn


def _set(conn, settings: dict) -> None:
    for name, value in settings.items():
        conn.execute("SELECT set_config(%s, %s, false)", (name, value))


def _parallel_eddy(plan: dict) -> dict | None:
    """The parallel-aware Eddy node under a Gather, if the plan has one."""
    gathers = [n for n in plan_nodes(plan) if n["Node Type"] in ("Gather", "Gather Merge")]
    for g in gathers:
        for n in plan_nodes(g):
            if n.get("Custom Plan Provider") == "Eddy" and n.get("Parallel Aware"):
                return n
    return None


def test_parallel_eddy_under_gather_returns_vanillas_rows(par):
    """With parallel plans forced each join block gets a parallel eddy over a
    Parallel Seq Scan of pa, and its rows are those of PostgreSQL's plan
    (serial and parallel), under every policy and with a forced spill,
    forced migrations and SteM mode."""
    for q in PARALLEL_QUERIES:
        set_gucs(par, enabled="off")
        _set(par, {"max_parallel_workers_per_gather": "0"})
        want = multiset(par.execute(q).fetchall())
        assert sum(want.values()) > 0, q
        _set(par, PARALLEL_FORCED)
        assert multiset(par.execute(q).fetchall()) == want, q
        set_gucs(par, enabled="on")
        for extra in ({}, {"routing_policy": "lottery", "debug_spill_after": "50"},
                      {"routing_policy": "cumulative", "migration": "greedy",
                       "debug_migrate_every": "3"},
                      {"state_mode": "stems", "source_schedule": "proportional"}):
            set_gucs(par, routing_policy="rank", debug_spill_after="0", migration="off",
                     debug_migrate_every="0", state_mode="stairs", source_schedule="build")
            set_gucs(par, **extra)
            plan = explain_json(par, q)
            node = _parallel_eddy(plan)
            assert node is not None, (q, extra, eddy_reasons(par, q))
            scans = [n for n in plan_nodes(node) if n["Node Type"] == "Seq Scan"]
            assert any(n.get("Parallel Aware") and n["Relation Name"] == "pa"
                       for n in scans), (q, extra)
            assert all(not n.get("Parallel Aware") for n in scans
                       if n["Relation Name"] != "pa"), (q, extra)
            assert multiset(par.execute(q).fetchall()) == want, (q, extra)


def test_workers_report_their_counters(par):
    """EXPLAIN ANALYZE of a parallel eddy shows each worker's counters: with
    the leader not participating, the workers read every row of pa that its
    scan returns between them (plus pc's and pd's each), and the Parallel Seq
    Scan's rows add up."""
    _set(par, PARALLEL_FORCED | {"parallel_leader_participation": "off"})
    q = PARALLEL_QUERIES[0]
    plan = explain_json(par, q, analyze=True)
    node = _parallel_eddy(plan)
    assert node is not None
    gather = next(n for n in plan_nodes(plan) if n["Node Type"] == "Gather")
    launched = gather["Workers Launched"]
    workers = node.get("Eddy Workers", [])
    reported = [w for w in workers if "Tuples Read" in w]
    assert launched >= 1, gather  # the test server allows 8 worker processes
    assert len(reported) == launched, workers
    assert sorted(w["Worker Number"] for w in reported) == list(range(launched))
    # the rows of pa the scan returns (its filter stays on it)
    pa_rows = par.execute("SELECT count(*) FROM pa WHERE id % 7 <> 0").fetchone()[0]
    read = sum(w["Tuples Read"] for w in reported)
    assert pa_rows < read <= pa_rows + launched * (10 + 715), (read, pa_rows)
    assert all(w["Tuples Routed"] > 0 and w["Peak Memory"] > 0 for w in reported)
    scan = next(n for n in plan_nodes(node)
                if n["Node Type"] == "Seq Scan" and n["Relation Name"] == "pa")
    # EXPLAIN shows rows per loop, rounded; the scan returns at most its
    # filter's rows (fewer where the eddy's probes dropped some in it)
    assert scan["Actual Rows"] * scan["Actual Loops"] < pa_rows + scan["Actual Loops"]

    # text format: one line per worker
    text = "\n".join(r[0] for r in par.execute(
        f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) {q}").fetchall())
    assert "Parallel Custom Scan (Eddy)" in text
    assert text.count("Worker 0:  Tuples Read:") == 1, text


def test_shared_parallel_hash_keeps_postgresqls_plan(par):
    """Where PostgreSQL's parallel plan shares a Parallel Hash over a large
    relation that a parallel eddy would read whole in every process, the
    block keeps PostgreSQL's plan (the DEBUG1 reason names the cost); with
    parallel query off it gets its serial eddy, with the same rows."""
    _set(par, PARALLEL_FORCED)
    plan = explain_json(par, SHARED_QUERY)
    assert not eddy_nodes(plan)
    assert any(n["Node Type"] == "Hash" and n.get("Parallel Aware") for n in plan_nodes(plan))
    assert any("a parallel eddy would cost more" in r
               for r in eddy_reasons(par, SHARED_QUERY)), eddy_reasons(par, SHARED_QUERY)
    want = multiset(par.execute(SHARED_QUERY).fetchall())
    _set(par, {"max_parallel_workers_per_gather": "0"})
    assert eddy_nodes(explain_json(par, SHARED_QUERY))
    assert multiset(par.execute(SHARED_QUERY).fetchall()) == want


def test_partial_source_read_first_where_only_its_share_fits(par):
    """px's filtered rows (12,500) outnumber py's (10,000), so the serial
    eddy reads px last and stores py; each participant of the parallel eddy
    holds only its share of px (about 5,200 rows), so it reads px first and
    stores that share, and py's rows probe it.  At a limit between the two
    estimates only the parallel eddy fits: the planner says so and offers
    it alone, PostgreSQL's serial plans beside it; a Gather over it is the
    plan, with PostgreSQL's rows (serial and parallel), py's STAIR storing
    nothing.  Without workers the serial eddy would store all of py, past
    the limit: PostgreSQL's plan."""
    par.execute("CREATE TABLE px AS SELECT g AS id, g % 10000 AS k, md5(g::text) AS s "
                "FROM generate_series(1, 500000) g")
    par.execute("CREATE TABLE py AS SELECT g AS k, 'y' || g AS name "
                "FROM generate_series(0, 9999) g")
    par.execute("ANALYZE px, py")
    q = ("SELECT px.id, py.name FROM px JOIN py ON px.k = py.k "
         "WHERE px.id > 487500")
    set_gucs(par, enabled="off")
    want = multiset(par.execute(q).fetchall())
    assert sum(want.values()) == 12_500
    set_gucs(par, enabled="on", max_memory="1MB")
    _set(par, PARALLEL_FORCED)
    reasons = eddy_reasons(par, q)
    assert any("only a parallel eddy fits in eddy.max_memory" in r for r in reasons), reasons
    assert multiset(par.execute(q).fetchall()) == want
    # the node shows the leader's STAIR counters: with no worker launched
    # the leader reads every share (all of px's 12,500 rows, which would
    # outgrow 1MB and spill: a larger limit, under which the partial source
    # is read first all the same)
    _set(par, {"max_parallel_workers": "0"})
    set_gucs(par, max_memory="64MB")
    plan = explain_json(par, q, analyze=True)
    node = _parallel_eddy(plan)
    assert node is not None, reasons
    stairs = {st["STAIR"]: st for op in node["Operators"] for st in op.get("STAIRs", [])}
    assert stairs["py.k"]["Inserted"] == 0 and stairs["py.k"]["Skipped"] == 10_000, stairs
    assert stairs["px.k"]["Inserted"] == 12_500, stairs
    _set(par, {"max_parallel_workers": "8"})
    # with no workers there is no parallel eddy, and the serial one would
    # store py, a table past the limit: PostgreSQL's plan
    set_gucs(par, max_memory="1MB")
    _set(par, {"max_parallel_workers_per_gather": "0"})
    assert any("stored for certain" in r for r in eddy_reasons(par, q))
    assert not eddy_nodes(explain_json(par, q))
    assert multiset(par.execute(q).fetchall()) == want


def _times_out(conn, query: str) -> None:
    """statement_timeout (2s) cancels query promptly, and the session goes on."""
    conn.execute("SET statement_timeout = '2s'")
    start = time.monotonic()
    with pytest.raises(psycopg.errors.QueryCanceled):
        conn.execute(query).fetchall()
    assert time.monotonic() - start < 10
    conn.execute("RESET statement_timeout")


def _tmp_files(conn) -> int:
    return conn.execute("SELECT count(*) FROM pg_ls_tmpdir()").fetchone()[0]


def test_worker_spill_files_go_on_error_and_cancel(par):
    """Each worker of a parallel eddy spills (eddy.debug_spill_after) to its
    own temporary files; they are gone when the query ends in an error raised
    in the batches (pa.id 199998 joins pd.k 4998, whose z is 0), and when
    statement_timeout cancels it, and the session goes on."""
    par.execute("CREATE FUNCTION pslow2(x int) RETURNS int LANGUAGE plpgsql PARALLEL SAFE "
                "AS $$ BEGIN PERFORM pg_sleep(0.0005); RETURN x; END $$")
    _set(par, PARALLEL_FORCED)
    set_gucs(par, debug_spill_after="50")
    error_query = (PARALLEL_QUERIES[0] +
                   " AND 10 / (pa.id * 10 + pd.z - 1999980) > -100")
    assert _parallel_eddy(explain_json(par, error_query)) is not None
    with pytest.raises(psycopg.errors.DivisionByZero):
        par.execute(error_query).fetchall()
    assert _tmp_files(par) == 0

    slow_query = PARALLEL_QUERIES[0] + " AND pslow2(pa.id + pd.z) >= 0"
    plan = explain_json(par, slow_query, analyze=False)
    assert _parallel_eddy(plan) is not None
    _times_out(par, slow_query)
    assert _tmp_files(par) == 0
    assert par.execute("SELECT 1").fetchone() == (1,)


def test_selection_eddy_over_a_parallel_scan(par):
    """A selection eddy over a Parallel Seq Scan: a partial eddy under a
    Gather, with PostgreSQL's rows."""
    set_gucs(par, enabled="off")
    want = multiset(par.execute(SELECTION_QUERY).fetchall())
    assert sum(want.values()) > 0
    set_gucs(par, enabled="on")
    _set(par, PARALLEL_FORCED)
    plan = explain_json(par, SELECTION_QUERY)
    node = _parallel_eddy(plan)
    assert node is not None, plan
    assert any(n["Node Type"] == "Seq Scan" and n.get("Parallel Aware")
               for n in plan_nodes(node))
    assert multiset(par.execute(SELECTION_QUERY).fetchall()) == want


# --------------------------------------------------------------------------- exchanged state
#
# With eddy.parallel_exchange = always a parallel eddy reads every
# source through a partial scan and exchange the rows it stored after each
# source but the last (parallel.c, "Exchanged state"): the plan says
# "Parallel State: exchanged ...", every Seq Scan under it is parallel-aware
# (auto, the default, chooses the cheaper of the two parallel eddies).

X_QUERIES = PARALLEL_QUERIES


@pytest.fixture
def xpar(eddy_conn):
    eddy_conn.execute(SCHEMA)
    set_gucs(eddy_conn, max_memory="1GB", join_method="hash", parallel_exchange="always")
    return eddy_conn


def _exchanging(plan: dict) -> dict | None:
    node = _parallel_eddy(plan)
    return node if node is not None and "Parallel State" in node else None


def _vanilla(conn, q: str):
    set_gucs(conn, enabled="off")
    _set(conn, {"max_parallel_workers_per_gather": "0"})
    try:
        return multiset(conn.execute(q).fetchall())
    finally:
        set_gucs(conn, enabled="on")


def _tmp_entries(conn) -> int:
    """Files and file sets (directories) in the temporary directory."""
    return conn.execute(
        "SELECT count(*) FROM pg_ls_dir('base/pgsql_tmp', true, false)").fetchone()[0]


@pytest.mark.parametrize("policy", ["rank", "lottery", "fixed", "random", "cumulative"])
def test_exchanging_eddy_returns_vanillas_rows(xpar, policy):
    """Every source read through a partial scan, PostgreSQL's rows, under
    every routing policy, with the leader taking part and without it."""
    for q in X_QUERIES:
        want = _vanilla(xpar, q)
        assert sum(want.values()) > 0, q
        _set(xpar, PARALLEL_FORCED)
        set_gucs(xpar, routing_policy=policy)
        node = _exchanging(explain_json(xpar, q))
        assert node is not None, (q, eddy_reasons(xpar, q))
        scans = [n for n in plan_nodes(node) if n["Node Type"] == "Seq Scan"]
        assert len(scans) >= 2 and all(n.get("Parallel Aware") for n in scans), q
        for leader in ("on", "off"):
            _set(xpar, {"parallel_leader_participation": leader})
            assert multiset(xpar.execute(q).fetchall()) == want, (q, leader)


def test_exchanged_rows_add_up(xpar):
    """Each worker replays every row the others sent, whenever it attached:
    its rows replayed and sent add up to all the rows sent; the workers read
    pa's rows between them."""
    _set(xpar, PARALLEL_FORCED | {"parallel_leader_participation": "off"})
    q = PARALLEL_QUERIES[0]
    want = _vanilla(xpar, q)
    _set(xpar, PARALLEL_FORCED | {"parallel_leader_participation": "off"})
    plan = explain_json(xpar, q, analyze=True)
    node = _exchanging(plan)
    assert node is not None
    launched = next(n for n in plan_nodes(plan) if n["Node Type"] == "Gather")["Workers Launched"]
    workers = [w for w in node.get("Eddy Workers", []) if "Rows Sent" in w]
    assert launched >= 1 and len(workers) == launched, workers
    sent = sum(w["Rows Sent"] for w in workers)
    assert sent > 0
    assert all(w["Rows Replayed"] + w["Rows Sent"] == sent for w in workers), workers
    pa_rows = xpar.execute("SELECT count(*) FROM pa WHERE id % 7 <> 0").fetchone()[0]
    assert sum(w["Tuples Read"] for w in workers) >= pa_rows
    assert multiset(xpar.execute(q).fetchall()) == want


def test_exchange_keeps_its_plan_whatever_the_settings_at_run_time(xpar):
    """A cached plan made for exchanging runs so under settings it was not
    made for (state migration, SteMs, the proportional schedule, delays, a
    forced spill): they are not applied to it, and the rows are PostgreSQL's."""
    q = PARALLEL_QUERIES[1]
    want = _vanilla(xpar, q)
    _set(xpar, PARALLEL_FORCED | {"plan_cache_mode": "force_generic_plan"})
    xpar.execute(f"PREPARE xq AS {q}")
    assert multiset(xpar.execute("EXECUTE xq").fetchall()) == want
    assert _exchanging(explain_json(xpar, "EXECUTE xq")) is not None
    set_gucs(xpar, migration="greedy", debug_migrate_every="1", state_mode="stems",
             source_schedule="proportional", source_delays="pd=5", debug_spill_after="10")
    assert multiset(xpar.execute("EXECUTE xq").fetchall()) == want
    node = _exchanging(explain_json(xpar, "EXECUTE xq", analyze=True))
    assert node is not None and node.get("Migrations", 0) == 0
    assert "Batches Joined" not in node or node["Batches Joined"] == 0, node


def test_exchange_with_no_worker_launched(xpar):
    """The leader alone (no worker to launch): it reads every share, sends,
    replays nothing, and returns PostgreSQL's rows."""
    q = PARALLEL_QUERIES[0]
    want = _vanilla(xpar, q)
    _set(xpar, PARALLEL_FORCED | {"max_parallel_workers": "0"})
    node = _exchanging(explain_json(xpar, q, analyze=True))
    assert node is not None and node["Rows Replayed"] == 0
    assert multiset(xpar.execute(q).fetchall()) == want
    _set(xpar, {"max_parallel_workers": "8"})


def test_exchange_files_go_on_error_and_cancel(xpar):
    """The exchanged rows' files are gone when the query ends, when it
    fails after an exchange (pa.id 199998 joins pd.k 4998, whose z is 0),
    and when statement_timeout cancels it; the session goes on."""
    xpar.execute("CREATE FUNCTION xslow(x int) RETURNS int LANGUAGE plpgsql PARALLEL SAFE "
                 "AS $$ BEGIN PERFORM pg_sleep(0.0005); RETURN x; END $$")
    _set(xpar, PARALLEL_FORCED)
    before = _tmp_entries(xpar)
    xpar.execute(PARALLEL_QUERIES[0]).fetchall()
    assert _tmp_entries(xpar) == before
    error_query = (PARALLEL_QUERIES[0] +
                   " AND 10 / (pa.id * 10 + pd.z - 1999980) > -100")
    assert _exchanging(explain_json(xpar, error_query)) is not None
    with pytest.raises(psycopg.errors.DivisionByZero):
        xpar.execute(error_query).fetchall()
    assert _tmp_entries(xpar) == before
    slow_query = PARALLEL_QUERIES[0] + " AND xslow(pa.id + pd.z) >= 0"
    assert _exchanging(explain_json(xpar, slow_query)) is not None
    _times_out(xpar, slow_query)
    assert _tmp_entries(xpar) == before
    assert xpar.execute("SELECT 1").fetchone() == (1,)


def test_a_relation_without_a_partial_scan_is_claimed_by_one_process(xpar):
    """pc and pd are under min_parallel_table_scan_size: no partial scan.
    The first process to get to each reads it whole and sends its rows, the
    others exchange at once: every source but pa is read once, and the rows
    are PostgreSQL's, with the leader taking part and without it."""
    for q in X_QUERIES:
        want = _vanilla(xpar, q)
        _set(xpar, PARALLEL_FORCED | {"min_parallel_table_scan_size": "1MB"})
        node = _exchanging(explain_json(xpar, q))
        assert node is not None, (q, eddy_reasons(xpar, q))
        scans = {n["Relation Name"]: n for n in plan_nodes(node) if n["Node Type"] == "Seq Scan"}
        assert scans["pa"].get("Parallel Aware"), q
        assert not any(n.get("Parallel Aware") for name, n in scans.items() if name != "pa"), q
        for leader in ("on", "off"):
            _set(xpar, {"parallel_leader_participation": leader})
            for _ in range(3):
                assert multiset(xpar.execute(q).fetchall()) == want, (q, leader)
            plan = explain_json(xpar, q, analyze=True)
            node = _exchanging(plan)
            assert node is not None
            # pc's and pd's rows were read once in all: by one process
            for name, n in plan_nodes_by_relation(node).items():
                if name != "pa":
                    assert n["Actual Rows"] * n["Actual Loops"] <= _rows(xpar, name), (name, n)
            assert multiset(xpar.execute(q).fetchall()) == want, (q, leader)
        _set(xpar, {"min_parallel_table_scan_size": "0"})


def plan_nodes_by_relation(node: dict) -> dict[str, dict]:
    return {n["Relation Name"]: n for n in plan_nodes(node) if n["Node Type"] == "Seq Scan"}


def _rows(conn, table: str) -> int:
    return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


# ---------------------------------------------------------------------------
# Rescanned blocks
# ---------------------------------------------------------------------------

# A correlated subquery's block runs once per outer row, and its eddy reads
# every source again each time: a source read through a Gather would launch
# its workers again each time (fuzzer seed 1201: 1,200 workers in 300 loops).
RESCANNED = """
CREATE TABLE co AS SELECT g AS id FROM generate_series(1, 60) g;
CREATE TABLE ca AS SELECT g AS id, g % 50 AS x FROM generate_series(1, 2000) g;
CREATE TABLE cb AS SELECT g AS id, g % 50 AS x, g % 70 AS y FROM generate_series(1, 2000) g;
CREATE TABLE cc AS SELECT g AS id, g % 70 AS y FROM generate_series(1, 2000) g;
ANALYZE co, ca, cb, cc;
"""
RESCANNED_BLOCK = ("SELECT count(*) AS n FROM ca, cb, cc WHERE ca.x = cb.x AND cb.y = cc.y "
                   "AND ca.id = co.id AND delay(cc.id, 0) > cb.id")
RESCANNED_QUERIES = [
    f"SELECT co.id, ({RESCANNED_BLOCK}) FROM co",
    f"SELECT co.id, s.n FROM co, LATERAL ({RESCANNED_BLOCK}) s",
]


@pytest.mark.parametrize("query", RESCANNED_QUERIES, ids=["subplan", "lateral"])
def test_a_rescanned_blocks_eddy_reads_no_source_through_a_gather(eddy_conn, query):
    """With parallel plans forced, the eddy of a block that runs once per
    outer row reads its sources through serial scans, once per row, and
    returns PostgreSQL's rows; run once, the same block runs in parallel."""
    conn = eddy_conn
    conn.execute(RESCANNED)
    set_gucs(conn, join_method="hash")
    want = _vanilla(conn, query)
    _set(conn, PARALLEL_FORCED)
    (eddy,) = eddy_nodes(explain_json(conn, query, analyze=True))
    kinds = [child["Node Type"] for child in eddy["Plans"]]
    assert len(kinds) == 3 and not {"Gather", "Gather Merge"} & set(kinds), kinds
    assert eddy["Actual Loops"] == 60
    assert multiset(conn.execute(query).fetchall()) == want
    once = explain_json(conn, RESCANNED_BLOCK.replace("ca.id = co.id", "ca.id < 60"))
    assert eddy_nodes(once)
    assert any(n["Node Type"] == "Gather" for n in plan_nodes(once))
