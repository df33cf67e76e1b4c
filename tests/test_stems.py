"""SteM mode (eddy.state_mode = stems, extension/src/mod_hashjoin.c): a join
eddy's STAIRs hold base tuples of their own relation only, each built when
it arrives (BuildFirst), and never an intermediate result; each result is
made once, by its last-arriving component (TimeStamp).  What the STAIRs
stored is read from EXPLAIN ANALYZE's per-STAIR counters; every result is
compared with PostgreSQL's own (eddy.enabled = off).
"""

from __future__ import annotations

import re

import psycopg
import pytest

from eddytools.db import (
    eddy_nodes,
    explain_json,
    multiset,
    set_gucs,
    sql_value,
    vanilla_multiset,
)
from eddytools.joingen import wisconsin_join_ddl, wisconsin_join_query
from eddytools.testschemas import PATH_TABLES

SCHEMA = PATH_TABLES + """CREATE TABLE pk (id int PRIMARY KEY, v int);
INSERT INTO pk SELECT g, g * 3 FROM generate_series(0, 399) g;
ANALYZE r; ANALYZE s; ANALYZE t; ANALYZE u; ANALYZE w; ANALYZE dup; ANALYZE pk;
"""

# Queries without restrictions: every source row reaches the eddy, so what
# its STAIRs stored can be counted against the tables (see stair_counts).
UNRESTRICTED = {
    "path3": "SELECT r.v, s.id, t.v FROM r JOIN s ON s.rid = r.id JOIN t ON s.tid = t.id",
    "path4": "SELECT r.v, t.v, u.w FROM r JOIN s ON s.rid = r.id JOIN t ON s.tid = t.id "
             "JOIN u ON t.uid = u.id",
    "path5": "SELECT count(*), sum(r.v), sum(w.x) FROM r JOIN s ON s.rid = r.id "
             "JOIN t ON s.tid = t.id JOIN u ON t.uid = u.id JOIN w ON u.wid = w.id",
    "star": "SELECT count(*), sum(r.v + t.v + u.w) FROM s JOIN r ON s.rid = r.id "
            "JOIN t ON s.tid = t.id JOIN u ON u.id = s.id % 40",
    "cycle": "SELECT count(*), sum(r.v), sum(t.v) FROM r JOIN s ON s.rid = r.id "
             "JOIN t ON s.tid = t.id JOIN u ON t.uid = u.id AND u.wid = r.id % 7",
    "cross_type": "SELECT r.v, s.id, t.v FROM r JOIN s ON s.rid = r.id8 JOIN t ON s.tid = t.id",
    "text_keys": "SELECT count(*), sum(r.v), sum(t.v) FROM r JOIN s ON s.tk = r.tk "
                 "JOIN t ON t.tk = s.tk",
    "duplicates": "SELECT count(*), sum(a.v + b.v + c.v) FROM dup a JOIN dup b ON a.k = b.k "
                  "JOIN dup c ON c.k = b.k",
    "unique_side": "SELECT count(*), sum(pk.v), sum(t.v) FROM s JOIN pk ON s.rid = pk.id "
                   "JOIN t ON s.tid = t.id",
}

RESTRICTED = {
    "path3_filtered": "SELECT r.v, s.id, t.v FROM r JOIN s ON s.rid = r.id "
                      "JOIN t ON s.tid = t.id WHERE r.v % 3 <> 0 AND t.v % 5 <> 1",
    "two_keys": "SELECT r.v, s.id, t.v FROM r JOIN s ON s.rid = r.id AND s.tid = r.v % 250 "
                "JOIN t ON s.tid = t.id",
    "expensive": "SELECT count(*), sum(r.v) FROM r JOIN s ON s.rid = r.id "
                 "JOIN t ON s.tid = t.id WHERE sqrt(r.v::float8) > 5 AND md5(s.tk) > '4'",
}

POLICIES = ("rank", "lottery", "fixed", "random")
STAIR_LINE = re.compile(r"STAIR (.+?): Inserted: (\d+)(?:  Skipped: (\d+))?  Probed")


@pytest.fixture
def stems_db(eddy_conn):
    eddy_conn.execute(SCHEMA)
    return eddy_conn



def explain_text(conn, query: str) -> str:
    rows = conn.execute("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) " + query)
    return "\n".join(r[0] for r in rows.fetchall())


def aliases(query: str) -> dict[str, str]:
    """alias -> table of the query's FROM and JOIN items."""
    out = {}
    for table, alias in re.findall(r"(?:FROM|JOIN) (\w+)(?: (?!JOIN |ON |WHERE )(\w+))?",
                                   query):
        out[alias or table] = table
    return out


def stair_counts(conn, query: str, text: str) -> list[tuple[str, int, int, int]]:
    """Per STAIR line of EXPLAIN ANALYZE: (keys, inserted, skipped, rows of its
    relation whose keys are all non-NULL)."""
    tables = aliases(query)
    out = []
    for keys, inserted, skipped in STAIR_LINE.findall(text):
        exprs = keys[1:-1].split(", ") if keys.startswith("(") and ", " in keys else [keys]
        alias = exprs[0].split(".")[0].lstrip("(")
        cond = " AND ".join(f"({e}) IS NOT NULL" for e in exprs)
        rows = sql_value(conn, f"SELECT count(*) FROM {tables[alias]} {alias} WHERE {cond}")
        out.append((keys, int(inserted), int(skipped or 0), int(rows)))
    assert out, text
    return out


@pytest.mark.parametrize("name", sorted(UNRESTRICTED))
@pytest.mark.parametrize("schedule", ["build", "proportional"])
def test_stems_store_base_tuples_only(stems_db, name, schedule):
    """In SteM mode every STAIR built each row of its own relation with a
    non-NULL key once, or skipped it (nothing can probe it any more, or its
    one partner in a unique side is already there): Inserted + Skipped is
    exactly that relation's number of such rows, whatever the policy, so no
    STAIR holds an intermediate tuple; the rows are PostgreSQL's."""
    conn = stems_db
    query = UNRESTRICTED[name]
    want = vanilla_multiset(conn, query)
    for policy in POLICIES:
        for reopt in (1, 100):
            set_gucs(conn, join_method="hash", source_schedule=schedule, state_mode="stems",
                     routing_policy=policy, reopt_frequency=reopt)
            text = explain_text(conn, query)
            assert "State Mode: stems" in text, text
            for keys, inserted, skipped, rows in stair_counts(conn, query, text):
                assert inserted + skipped == rows, f"{policy}/{reopt}: STAIR {keys}\n{text}"
            assert multiset(conn.execute(query).fetchall()) == want, f"{policy}/{reopt}"


@pytest.mark.parametrize("name", ["path3", "path4", "path5", "star", "cross_type"])
def test_stairs_store_intermediate_results_where_stems_do_not(stems_db, name):
    """The same query read interleaved, in PostgreSQL's module order: in
    STAIR mode some STAIR holds more entries than its relation has rows
    (intermediate results stored for later probes), in SteM mode none does,
    and SteM mode routes more tuples (it rebuilds intermediate results from
    the stored base tuples)."""
    conn = stems_db
    query = UNRESTRICTED[name]
    routed = {}
    for mode in ("stairs", "stems"):
        set_gucs(conn, join_method="hash", source_schedule="proportional",
                 routing_policy="fixed", state_mode=mode)
        text = explain_text(conn, query)
        counts = stair_counts(conn, query, text)
        over = [c for c in counts if c[1] > c[3]]
        if mode == "stairs":
            assert "State Mode" not in text
            assert over, f"STAIR mode stored no intermediate tuple:\n{text}"
        else:
            assert not over, text
        found = re.search(r"Tuples Routed: (\d+)", text)
        assert found, text
        routed[mode] = int(found.group(1))
    assert routed["stems"] > routed["stairs"], routed


@pytest.mark.parametrize("name", sorted(UNRESTRICTED | RESTRICTED))
@pytest.mark.parametrize("schedule", ["build", "proportional"])
def test_stems_match_vanilla_under_every_setting(stems_db, name, schedule):
    """Every query under every policy, reoptimization frequencies 1 and 100,
    every join method, every predicate routed or only the costly ones, with
    the sources interleaved at skewed rates and one delayed (proportional)
    or read one after another (build): PostgreSQL's rows.  An index join
    into a relation that is also a hash join's end keeps STAIRs, and EXPLAIN
    says why."""
    conn = stems_db
    query = (UNRESTRICTED | RESTRICTED)[name]
    want = vanilla_multiset(conn, query)
    extra = {"source_rates": "s=4, t=0.3", "source_delays": "r=5"} \
        if schedule == "proportional" else {"source_rates": "", "source_delays": ""}
    failures = []
    for method in ("auto", "hash", "index"):
        for policy in POLICIES:
            for reopt in (1, 100):
                # every predicate routed (BuildFirst after a row's own
                # selections) at frequency 1, the default at 100
                set_gucs(conn, join_method=method, source_schedule=schedule, state_mode="stems",
                         routing_policy=policy, reopt_frequency=reopt,
                         selection_min_cost=0 if reopt == 1 else 0.01, **extra)
                (eddy,) = eddy_nodes(explain_json(conn, query))
                mode = eddy.get("State Mode", "")
                assert mode == "stems" or mode.startswith("stairs (stems not possible: "), mode
                if multiset(conn.execute(query).fetchall()) != want:
                    failures.append(f"{method}/{policy}/{reopt} ({mode})")
    assert not failures, failures


def test_index_join_end_keeps_stairs(stems_db):
    """A hash join whose end is reached only through an index join has no
    base tuples of that relation to build (SteMs paper 3.3): such an eddy
    keeps STAIRs, says so, and returns PostgreSQL's rows."""
    conn = stems_db
    query = ("SELECT count(*), sum(pk.v) FROM s JOIN pk ON s.rid = pk.id "
             "JOIN t ON t.id = pk.v % 250")
    set_gucs(conn, join_method="index", state_mode="stems")
    (eddy,) = eddy_nodes(explain_json(conn, query))
    ops = [op["Operator Type"] for op in eddy["Operators"]]
    assert "Index Join" in ops and "Hash Join" in ops, ops
    assert eddy["State Mode"] == ("stairs (stems not possible: pk, reached through an "
                                  "index join, is an end of hash join "
                                  f"{ops.index('Hash Join') + 1})"), eddy["State Mode"]
    assert multiset(conn.execute(query).fetchall()) == vanilla_multiset(conn, query)
    # an index join whose inner relation is no hash join's end: SteMs
    query = "SELECT count(*), sum(pk.v) FROM s JOIN pk ON s.rid = pk.id JOIN t ON t.id = s.tid"
    (eddy,) = eddy_nodes(explain_json(conn, query))
    assert "Index Join" in [op["Operator Type"] for op in eddy["Operators"]]
    assert eddy["State Mode"] == "stems"
    assert multiset(conn.execute(query).fetchall()) == vanilla_multiset(conn, query)


def test_default_is_stairs_and_bad_values_are_refused(stems_db):
    conn = stems_db
    assert sql_value(conn, "SHOW eddy.state_mode") == "stairs"
    (eddy,) = eddy_nodes(explain_json(conn, UNRESTRICTED["path3"]))
    assert "State Mode" not in eddy
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        conn.execute("SET eddy.state_mode = stem")


def test_rescans_cursors_limit_and_generic_plans(stems_db):
    """SteM mode in an eddy rescanned as a correlated subquery (its state
    rebuilt each time), read through a scroll cursor backwards and forwards,
    stopped by LIMIT, and in a prepared statement planned before the mode
    was set (the mode is read when the node starts): PostgreSQL's rows."""
    conn = stems_db
    set_gucs(conn, join_method="hash", source_schedule="proportional")
    rescanned = ("SELECT g, (SELECT count(*) FROM r JOIN s ON s.rid = r.id "
                 "JOIN t ON s.tid = t.id WHERE r.v > g * 300 AND t.v < 900 - g * 100) "
                 "FROM generate_series(0, 4) g")
    limited = UNRESTRICTED["path3"] + " ORDER BY 1, 2, 3 LIMIT 50"
    want_rescan = vanilla_multiset(conn, rescanned)
    set_gucs(conn, enabled="off")
    want_limit = conn.execute(limited).fetchall()
    want_all = multiset(conn.execute(UNRESTRICTED["path4"]).fetchall())
    set_gucs(conn, enabled="on")
    conn.execute("SET plan_cache_mode = force_generic_plan")
    conn.execute(f"PREPARE p AS {UNRESTRICTED['path4']}")
    set_gucs(conn, state_mode="stems")
    assert multiset(conn.execute(rescanned).fetchall()) == want_rescan
    assert conn.execute(limited).fetchall() == want_limit
    assert multiset(conn.execute("EXECUTE p").fetchall()) == want_all
    with conn.transaction():
        conn.execute(f"DECLARE c SCROLL CURSOR FOR {UNRESTRICTED['path4']}")
        first = conn.execute("FETCH FORWARD 7 FROM c").fetchall()
        back = conn.execute("FETCH BACKWARD 6 FROM c").fetchall()
        conn.execute("MOVE ABSOLUTE 0 FROM c")
        forward = conn.execute("FETCH ALL FROM c").fetchall()
        conn.execute("CLOSE c")
    assert back == list(reversed(first[:6]))
    assert forward[:7] == first
    assert multiset(forward) == want_all
    conn.execute("DEALLOCATE p")
    conn.execute("RESET plan_cache_mode")


@pytest.mark.parametrize("shape", ["star", "path", "cycle"])
def test_wisconsin_joins_in_stem_mode_match_vanilla(eddy_conn, shape):
    """Wisconsin joins of 2..6 tables (NULL and duplicate keys) in SteM mode,
    sources read in build order, under every policy and join method: the
    rows are PostgreSQL's.  (test_schedule.py runs them interleaved.)"""
    conn = eddy_conn
    for k in range(1, 7):
        conn.execute(wisconsin_join_ddl(k))
    failures = []
    for n in range(2, 7):
        for variant in ("count", "project", "filtered"):
            q = wisconsin_join_query(shape, n, variant)
            want = vanilla_multiset(conn, q)
            for method in ("auto", "hash", "index"):
                for policy in POLICIES:
                    set_gucs(conn, state_mode="stems", join_method=method,
                             routing_policy=policy, reopt_frequency=1)
                    if multiset(conn.execute(q).fetchall()) != want:
                        failures.append(f"{method}/{policy}: {q}")
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:20])
