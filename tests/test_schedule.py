"""Source scheduling of join eddies (eddy.source_schedule, eddy.source_rates,
eddy.source_delays), read from EXPLAIN ANALYZE counters and results.

Three relations joined along a path, ``r - s - t``; ``r`` and ``t`` have
primary keys on their join columns, so in build order the eddy reads them
first and ``s``, the centre, last."""

from __future__ import annotations

import json
import time

import psycopg
import pytest

from eddytools.db import eddy_nodes, explain_json, multiset, routing_history, set_gucs, sql_value
from eddytools.joingen import wisconsin_join_ddl, wisconsin_join_query

DIM = 500
ROWS = 20000
QUERY = "SELECT count(*) FROM r JOIN s ON s.rid = r.id JOIN t ON s.tid = t.id"
POLICIES = ("rank", "lottery", "fixed", "random", "cumulative")


@pytest.fixture
def path3(eddy_conn):
    conn = eddy_conn
    conn.execute(f"""
        CREATE TABLE r (id int PRIMARY KEY, v int);
        CREATE TABLE t (id int PRIMARY KEY, v int);
        INSERT INTO r SELECT g, g FROM generate_series(0, {DIM - 1}) g;
        INSERT INTO t SELECT g, g FROM generate_series(0, {DIM - 1}) g;
        CREATE TABLE s AS SELECT g AS id, g % {2 * DIM} AS rid, g % {DIM} AS tid
        FROM generate_series(0, {ROWS - 1}) g;
        ANALYZE r; ANALYZE s; ANALYZE t;
    """)
    set_gucs(conn, join_method="hash", routing_policy="fixed")
    return conn


def firsts_per_source(eddy: dict) -> dict[str, int]:
    """Tuples of each source in its routing history."""
    return {name: sum(n for _, n in runs) for name, runs in routing_history(eddy).items()}


def stair(eddy: dict, key: str) -> dict:
    """The counters of the STAIR on ``key`` (``"s.rid"``)."""
    (found,) = [st for op in eddy["Operators"] for st in op.get("STAIRs", [])
                if st["STAIR"] == key]
    return found


def join_number(eddy: dict, alias: str) -> int:
    (number,) = [op["Operator Number"] for op in eddy["Operators"]
                 if f"{alias}.id" in op.get("Join Condition", "")]
    return number


def tuples_read(eddy: dict) -> dict[str, int]:
    return {name: int(n) for name, n in
            (item.split(" ") for item in eddy["Tuples Read"].split(", "))}


def analyze(conn, **settings) -> tuple[dict, dict]:
    set_gucs(conn, **settings)
    plan = explain_json(conn, QUERY, analyze=True, verbose=True)
    (eddy,) = eddy_nodes(plan)
    return plan, eddy


def test_build_order_reads_one_source_after_another(path3):
    """The default reads r and t, then s (whose tuples then only probe):
    one run of first choices per source, and the settings' listing is
    absent from EXPLAIN."""
    plan, eddy = analyze(path3)
    assert "Source Schedule" not in eddy
    runs = routing_history(eddy)
    assert firsts_per_source(eddy) == {"r": DIM, "s": ROWS, "t": DIM}
    assert all(len(lane) == 1 for lane in runs.values()), runs  # fixed routing
    # s last: r and t were read to their ends first, so no s tuple is stored
    for key in ("s.rid", "s.tid"):
        assert stair(eddy, key)["Inserted"] == 0 and stair(eddy, key)["Skipped"] > 0, key
    assert plan["Plans"][0]["Actual Rows"] == ROWS // 2  # s rows with rid < DIM


def test_proportional_schedule_interleaves_and_ends_together(path3):
    """Under the proportional schedule every source is read in full,
    interleaved at rates proportional to the planner's rows: s's tuples
    come while r and t still have rows to give, so they are stored, and the
    answer is vanilla's."""
    _, eddy = analyze(path3, source_schedule="proportional")
    assert eddy["Source Schedule"] == "proportional"
    assert tuples_read(eddy) == {"r": DIM, "s": ROWS, "t": DIM}
    assert firsts_per_source(eddy) == {"r": DIM, "s": ROWS, "t": DIM}
    # one run per source however the sources interleave (fixed routing)
    assert all(len(lane) == 1 for lane in routing_history(eddy).values()), \
        eddy["Routing History"]
    # r is not read first: s tuples without an r partner yet are stored (a
    # tuple that finds its one partner in a unique side is not, as in t's join)
    assert stair(eddy, "s.rid")["Inserted"] > ROWS // 2
    answer = sql_value(path3, QUERY)
    set_gucs(path3, enabled="off")
    assert sql_value(path3, QUERY) == answer


@pytest.mark.parametrize("state_mode", ["stairs", "stems"])
def test_the_routing_history_counts_each_sources_tuples_once(path3, state_mode):
    """Per source, the history's runs add up to the tuples it read and the
    joins' first-choice counters to the same total, with state migrated
    every 50 points of stasis (its replays are not first choices)."""
    _, eddy = analyze(path3, source_schedule="proportional", routing_policy="rank",
                      migration="greedy", debug_migrate_every=50, state_mode=state_mode)
    assert firsts_per_source(eddy) == tuples_read(eddy) == {"r": DIM, "s": ROWS, "t": DIM}
    assert sum(op["Tuples First"] for op in eddy["Operators"]) == 2 * DIM + ROWS
    if state_mode == "stairs":
        assert eddy["Migrations"] > 0


def test_a_source_whose_clauses_the_eddy_runs_is_paced_by_its_scan(path3):
    """A clause the eddy routes off a scan does not shrink the rate at which
    the proportional schedule reads that scan: s's scan returns all its rows,
    so s is paced by its size before the clause, as lineitem is in the STAIRs
    paper's TPC-H query (its rows sorted on the filtered column).  Here only
    s's last tenth passes its clause; paced by the clause's estimate (a tenth
    of s), r and t would be exhausted long before, and none of those s rows
    would be stored.  Paced by the scan, r and t are still being read then."""
    query = QUERY + f" WHERE s.id >= {ROWS * 9 // 10}"
    set_gucs(path3, source_schedule="proportional", selection_min_cost=0)
    plan = explain_json(path3, query, analyze=True, verbose=True)
    (eddy,) = eddy_nodes(plan)
    assert tuples_read(eddy) == {"r": DIM, "s": ROWS, "t": DIM}
    assert "Filter" not in {p["Alias"]: p for p in eddy["Plans"]}["s"]
    costed = sql_value(path3, f"EXPLAIN (FORMAT JSON) {query}")
    costed = costed if isinstance(costed, list) else json.loads(costed)
    (costed_eddy,) = eddy_nodes(costed[0]["Plan"])
    s_rows = {p["Alias"]: p["Plan Rows"] for p in costed_eddy["Plans"]}["s"]
    assert s_rows > ROWS * 0.9, s_rows
    s_stairs = [st for op in eddy["Operators"] for st in op.get("STAIRs", [])
                if st.get("STAIR", "").startswith("s.")]
    assert s_stairs and sum(st["Inserted"] for st in s_stairs) > 0, s_stairs
    answer = sql_value(path3, query)
    set_gucs(path3, enabled="off")
    assert sql_value(path3, query) == answer


def test_build_order_reads_the_heaviest_relation_last(eddy_conn):
    """The relation read last is never stored, so the build schedule reads
    last the relation whose storing would cost most (rows x hash joins): the
    middle of a path r - s - t, here smaller than its ends, which
    PostgreSQL's own plan hashes.  Its two STAIRs stay empty and its tuples
    only probe; r and t are stored."""
    conn = eddy_conn
    conn.execute("""
        CREATE TABLE pr (a int, pad text);
        CREATE TABLE ps (a int, b int);
        CREATE TABLE pt (b int, pad text);
        INSERT INTO pr SELECT g % 2000, 'r' FROM generate_series(0, 2999) g;
        INSERT INTO ps SELECT g, g FROM generate_series(0, 1999) g;
        INSERT INTO pt SELECT g % 2000, 't' FROM generate_series(0, 2999) g;
        ANALYZE pr; ANALYZE ps; ANALYZE pt;
    """)
    query = "SELECT count(*) FROM pr JOIN ps ON pr.a = ps.a JOIN pt ON ps.b = pt.b"
    set_gucs(conn, join_method="hash")
    (eddy,) = eddy_nodes(explain_json(conn, query, analyze=True))
    stairs = {st["STAIR"]: st for op in eddy["Operators"] for st in op.get("STAIRs", [])}
    assert set(stairs) == {"pr.a", "ps.a", "ps.b", "pt.b"}, stairs
    assert stairs["ps.a"]["Inserted"] == stairs["ps.b"]["Inserted"] == 0, stairs
    assert stairs["pr.a"]["Inserted"] == stairs["pt.b"]["Inserted"] == 3000, stairs
    answer = sql_value(conn, query)
    set_gucs(conn, enabled="off")
    assert sql_value(conn, query) == answer == 5000


def test_source_rates_change_the_interleaving(path3):
    """A rate of 10 on s makes the schedule read s ten times faster than its
    size asks for: more of s's tuples arrive before their partners in r and
    t, so the STAIRs store more of them."""
    def inserted(eddy: dict) -> int:
        return sum(op.get("Inserted", 0) for op in eddy["Operators"])

    _, even = analyze(path3, source_schedule="proportional")
    _, fast_s = analyze(path3, source_schedule="proportional", source_rates="s=10")
    assert fast_s["Source Schedule"] == "proportional (s rate 10)"
    assert tuples_read(fast_s) == tuples_read(even) == {"r": DIM, "s": ROWS, "t": DIM}
    assert inserted(fast_s) > inserted(even) + ROWS // 10, (inserted(fast_s), inserted(even))


def test_a_delayed_source_does_not_block_the_others(path3):
    """With r held back for 300 ms, the eddy reads t and s first (they are
    stored, r's tuples then only probe), and the answer is unchanged."""
    plan, eddy = analyze(path3, source_delays="r=300")
    assert eddy["Source Schedule"] == "build (r delay 300 ms)"
    assert routing_history(eddy)["r"] == [(join_number(eddy, "r"), DIM)]
    # r read last: t and s are stored, r never is
    assert stair(eddy, "r.id")["Inserted"] == 0 and stair(eddy, "r.id")["Skipped"] == DIM
    assert stair(eddy, "t.id")["Inserted"] == DIM and stair(eddy, "s.rid")["Inserted"] > 0
    assert tuples_read(eddy) == {"r": DIM, "s": ROWS, "t": DIM}
    assert plan["Plans"][0]["Actual Rows"] == ROWS // 2  # s rows with rid < DIM


def test_a_rescan_waits_for_a_delayed_source_again(path3):
    """The delay counts from each scan's first read: an eddy rescanned for
    each row of a subplan holds r back every time (the clock is read only
    until every delay has passed, and a rescan starts it again)."""
    set_gucs(path3, source_delays="r=300")
    query = ("SELECT g, (SELECT count(*) FROM r JOIN s ON s.rid = r.id JOIN t ON s.tid = t.id"
             " WHERE s.id < g * 1000) FROM generate_series(1, 3) g ORDER BY g")
    plan = explain_json(path3, query, analyze=True, verbose=True)
    (eddy,) = eddy_nodes(plan)
    assert eddy["Actual Loops"] == 3
    start = time.monotonic()
    got = path3.execute(query).fetchall()
    elapsed = time.monotonic() - start
    set_gucs(path3, enabled="off")
    assert got == path3.execute(query).fetchall()
    assert elapsed >= 3 * 0.3, elapsed


def test_waiting_for_delayed_sources_honours_the_timeout(path3):
    """When every source is held back the eddy sleeps on its latch; a
    statement_timeout ends the wait with PostgreSQL's error, promptly."""
    set_gucs(path3, source_delays="r=60000, s=60000, t=60000")
    path3.execute("SET statement_timeout = '200ms'")
    start = time.monotonic()
    with pytest.raises(psycopg.errors.QueryCanceled):
        path3.execute(QUERY)
    assert time.monotonic() - start < 5
    path3.execute("RESET statement_timeout")


@pytest.mark.parametrize("value,detail", [
    ("s", 'is not of the form name=value'),
    ("s=0", "between 1e-06 and 1e+06"),
    ("=2", "a relation name is missing"),
    ("s=two", "must be a number"),
])
def test_bad_rates_are_refused(path3, value, detail):
    """SET refuses a malformed list with the reason in its detail."""
    with pytest.raises(psycopg.errors.InvalidParameterValue) as e:
        path3.execute(f"SET eddy.source_rates = '{value}'")
    assert detail in (e.value.diag.message_detail or "")


def test_bad_delays_are_refused(path3):
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        path3.execute("SET eddy.source_delays = 'r=-1'")


@pytest.mark.parametrize("mode", ["stairs", "stems"])
@pytest.mark.parametrize("shape", ["star", "path", "cycle"])
def test_interleaved_joins_match_vanilla(eddy_conn, shape, mode):
    """Wisconsin joins of 2..6 tables return PostgreSQL's rows under the
    proportional schedule, with rates and a delay, under every policy, in
    both state modes (STAIRs and SteMs)."""
    conn = eddy_conn
    for k in range(1, 7):
        conn.execute(wisconsin_join_ddl(k))
    failures = []
    for n in range(2, 7):
        for variant in ("count", "project", "filtered"):
            q = wisconsin_join_query(shape, n, variant)
            set_gucs(conn, enabled="off")
            want = multiset(conn.execute(q).fetchall())
            for policy in POLICIES:
                set_gucs(conn, enabled="on", routing_policy=policy, reopt_frequency=10,
                         source_schedule="proportional", source_rates="t2=5, t3=0.2",
                         source_delays="t1=20", state_mode=mode)
                (eddy,) = eddy_nodes(explain_json(conn, q))
                assert mode == "stairs" or eddy["State Mode"].startswith(("stems", "stairs (")), q
                got = multiset(conn.execute(q).fetchall())
                if got != want:
                    failures.append(f"{policy}: {q}")
    assert not failures, failures


@pytest.mark.parametrize("migration", ["off", "greedy"])
def test_a_side_read_to_its_end_with_nothing_stored_ends_the_eddy(path3, migration):
    """Once every source on one side of a hash join is exhausted and that
    side's STAIR is empty, no result can come: the eddy ends without reading
    the rest, as a hash join whose inner side was empty.  t, read a hundred
    times faster than its share, passes none of its rows through the eddy's
    selection, so s (20,000 rows) is read only in part, EXPLAIN says where
    the eddy ended, and the answer is PostgreSQL's."""
    query = QUERY + " WHERE t.v < 0"
    set_gucs(path3, source_schedule="proportional", source_rates="t=100",
             selection_min_cost=0, migration=migration)
    plan = explain_json(path3, query, analyze=True, verbose=True)
    (eddy,) = eddy_nodes(plan)
    read = tuples_read(eddy)
    assert read["t"] == DIM and read["s"] < ROWS // 2, read
    assert eddy["Ended Early"] == (f"Hash Join {join_number(eddy, 't')}, whose t side ran "
                                   "out with nothing stored"), eddy["Ended Early"]
    assert sql_value(path3, query) == 0
    set_gucs(path3, enabled="off")
    assert sql_value(path3, query) == 0


@pytest.mark.parametrize("mode", ["stairs", "stems"])
def test_ending_early_keeps_every_result(path3, mode):
    """The end is taken only where no result can follow: with r's rows
    unique and read first, s's rows find their r match and are not stored
    (their r side is r alone), yet every result still comes; under each
    policy, rates that exhaust each source first, and selections that empty
    one source or none, the answers are PostgreSQL's."""
    queries = [QUERY, QUERY + " WHERE t.v < 0", QUERY + " WHERE r.v < 0",
               QUERY + " WHERE s.id % 7 = 0 AND t.v % 3 = 0",
               QUERY.replace("count(*)", "r.id, s.id, t.id") + " WHERE s.id < 100"]
    failures = []
    ended = skipped = 0
    for q in queries:
        set_gucs(path3, enabled="off")
        want = multiset(path3.execute(q).fetchall())
        for policy in POLICIES:
            for rates in ("r=100", "s=100", "t=100", "r=100, t=50"):
                set_gucs(path3, enabled="on", routing_policy=policy, reopt_frequency=10,
                         source_schedule="proportional", source_rates=rates,
                         selection_min_cost=0, state_mode=mode)
                got = multiset(path3.execute(q).fetchall())
                if got != want:
                    failures.append(f"{policy} {rates}: {q}")
                (eddy,) = eddy_nodes(explain_json(path3, q, analyze=True))
                ended += "Ended Early" in eddy
                if rates == "r=100":
                    # s rows that found their unique r match, not stored
                    skipped += sum(st.get("Skipped", 0) for op in eddy["Operators"]
                                   if "r.id" in op.get("Join Condition", "")
                                   for st in op.get("STAIRs", [])
                                   if st.get("STAIR", "").startswith("s."))
    assert not failures, failures
    assert ended > 0 and skipped > 0, (ended, skipped)


XML_ROWS = "<rows>" + "".join(f"<row><n>{i}</n></row>" for i in range(DIM)) + "</rows>"
NAMED_SOURCE_QUERIES = {
    # a table function (TableFuncScan) as the source x
    "table function": (
        "x",
        "SELECT r.id, s.id, x.n FROM r JOIN s ON s.rid = r.id"
        f" JOIN XMLTABLE('/rows/row' PASSING ('{XML_ROWS}'::xml)"
        " COLUMNS n int PATH 'n') AS x ON s.tid = x.n WHERE s.id % 10 = 0"),
    # the working table of a recursive query (WorkTableScan) as the source w
    "working table": (
        "w",
        "WITH RECURSIVE w(n, k) AS (SELECT 0, 0 UNION ALL"
        " SELECT t.id + 1, r.v FROM w JOIN t ON t.id = w.n JOIN r ON r.id = w.n"
        f" WHERE w.n < {DIM // 5}) SELECT * FROM w"),
}


@pytest.mark.parametrize("kind", sorted(NAMED_SOURCE_QUERIES))
def test_rates_and_delays_name_table_function_and_working_table_sources(path3, kind):
    """A table function or a recursive query's working table is a source the
    planner reads like any scan (private.h, EddyIsRelationScan), so
    eddy.source_rates and eddy.source_delays reach it by its alias as they
    reach a table: EXPLAIN lists its rate and delay, and the answer under
    the proportional schedule with that rate, and under the build schedule
    with that delay, is PostgreSQL's."""
    alias, q = NAMED_SOURCE_QUERIES[kind]
    set_gucs(path3, enabled="off")
    want = multiset(path3.execute(q).fetchall())
    assert want
    for schedule, setting, listed in (
            ("proportional", {"source_rates": f"{alias}=3"}, f"{alias} rate 3"),
            ("build", {"source_delays": f"{alias}=20"}, f"{alias} delay 20 ms")):
        set_gucs(path3, enabled="on", source_schedule=schedule,
                 **({"source_rates": "", "source_delays": ""} | setting))
        eddies = eddy_nodes(explain_json(path3, q, analyze=True))
        assert any(listed in e.get("Source Schedule", "") for e in eddies), \
            [e.get("Source Schedule") for e in eddies]
        assert multiset(path3.execute(q).fetchall()) == want, (schedule, q)


def test_rates_and_delays_name_a_transition_table_source(path3):
    """A trigger's transition table (NamedTuplestoreScan) is a source named by
    its name in the trigger's queries: eddy.source_rates and
    eddy.source_delays reach it, EXPLAIN (run inside the trigger) lists its
    rate and delay, and the rows the trigger's join makes are PostgreSQL's."""
    path3.execute("""
        CREATE TABLE ins (id int, rid int);
        CREATE TABLE plans (setting text, plan json);
        CREATE TABLE joined (setting text, nid int, sid int, rv int);
        CREATE FUNCTION ins_join() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE
            q text := 'SELECT nt.id, s.id, r.v FROM nt JOIN s ON s.rid = nt.rid'
                      ' JOIN r ON r.id = s.rid WHERE s.id % 7 = 0';
            p json;
        BEGIN
            EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON) ' || q INTO p;
            INSERT INTO plans VALUES (current_setting('eddy.source_schedule'), p);
            EXECUTE 'INSERT INTO joined SELECT current_setting(''eddy.source_schedule''), * FROM ('
                    || q || ') x';
            RETURN NULL;
        END $$;
        CREATE TRIGGER ins_join AFTER INSERT ON ins REFERENCING NEW TABLE AS nt
            FOR EACH STATEMENT EXECUTE FUNCTION ins_join();
    """)
    insert = f"INSERT INTO ins SELECT g, g % {DIM} FROM generate_series(1, 300) g"
    set_gucs(path3, enabled="off", source_schedule="build")
    path3.execute(insert)
    want = multiset(path3.execute(
        "SELECT nid, sid, rv FROM joined WHERE setting = 'build'").fetchall())
    assert want
    path3.execute("TRUNCATE joined, plans")
    for schedule, setting, listed in (
            ("proportional", {"source_rates": "nt=3"}, "nt rate 3"),
            ("build", {"source_delays": "nt=20"}, "nt delay 20 ms")):
        set_gucs(path3, enabled="on", source_schedule=schedule,
                 **({"source_rates": "", "source_delays": ""} | setting))
        path3.execute(insert)
        plan = sql_value(path3, "SELECT plan FROM plans WHERE setting = %s", (schedule,))
        doc = plan if isinstance(plan, list) else json.loads(plan)
        eddies = eddy_nodes(doc[0]["Plan"])
        assert eddies, doc
        assert any(listed in e.get("Source Schedule", "") for e in eddies), \
            [e.get("Source Schedule") for e in eddies]
        got = multiset(path3.execute(
            "SELECT nid, sid, rv FROM joined WHERE setting = %s", (schedule,)).fetchall())
        assert got == want, schedule
