"""The static symmetric hash join (eddy.static_shj): with eddy.enabled off,
every inner Hash Join becomes a Custom Scan (Symmetric Hash Join) and the
query returns exactly PostgreSQL's rows."""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass

import psycopg
import pytest

from eddytools.db import explain_json, multiset, plan_nodes, set_gucs, sql_value
from spark_loader import wisconsin

SHJ = "Symmetric Hash Join"
CHUNKS = 4
QUERIES_PER_CHUNK = 30
# results larger than this are compared by count and checksum, not row by row
MAX_COMPARED_ROWS = 30000


def pg_set(conn: psycopg.Connection, **settings) -> None:
    """SET PostgreSQL's own settings (set_gucs prefixes names with eddy.)."""
    for name, value in settings.items():
        conn.execute("SELECT set_config(%s, %s, false)", (name, str(value)))


def shj_nodes(plan: dict) -> list[dict]:
    return [n for n in plan_nodes(plan) if n.get("Custom Plan Provider") == SHJ]


def inner_hash_joins(plan: dict) -> list[dict]:
    return [n for n in plan_nodes(plan)
            if n["Node Type"] == "Hash Join" and n.get("Join Type") == "Inner"]


def generated_table_sql(i: int, rows: int) -> str:
    """A table whose join keys have duplicates, skew (s), NULLs (nl), a bigint
    twin of an int key (b8), case-varied text (t), numerics of varied scale
    (nu) and floats with -0 and NaN (fl); deterministic for (i, rows)."""
    p = [7919, 104729, 1299709, 15485863, 32452843][i]
    return f"""
CREATE TABLE t{i} AS
SELECT g AS id, h % 97 AS m,
       CASE WHEN h % 10 = 0 THEN 0 ELSE h % 50 END AS s,
       CASE WHEN h % 4 = 0 THEN NULL ELSE h % 31 END AS nl,
       (h % 97)::int8 AS b8,
       CASE WHEN h % 3 = 0 THEN 'K' ELSE 'k' END || (h % 23) AS t,
       CASE WHEN h % 2 = 0 THEN (h % 13)::numeric(10, 1)
            ELSE (h % 13)::numeric(10, 3) END AS nu,
       CASE WHEN h % 17 = 0 THEN 'NaN'::float8 WHEN h % 11 = 0 THEN '-0'::float8
            ELSE (h % 11)::float8 END AS fl,
       md5(h::text) AS payload
FROM (SELECT g, (g * {p}::int8) % 1000003 AS h FROM generate_series(1, {rows}) g) src;
ANALYZE t{i};
"""


# join keys: few matches per row, usable on every edge
LOW_FANOUT = [("id", "id"), ("m", "m"), ("m", "b8"), ("b8", "m"), ("b8", "b8"), ("id", "m")]
# many matches per row (skew, NULLs, text, numeric, float): one edge per query
HIGH_FANOUT = [
    "{x}.s = {y}.s", "{x}.nl = {y}.nl", "{x}.s = {y}.nl", "{x}.t = {y}.t",
    '{x}.t = {y}.t COLLATE "C"', "upper({x}.t) = upper({y}.t)", "{x}.nu = {y}.nu",
    "{x}.fl = {y}.fl", "{x}.nl + 1 = {y}.s", "{x}.t || {x}.nl = {y}.t || {y}.nl",
]
COLUMNS = ["id", "m", "s", "nl", "b8", "t", "nu", "fl", "payload"]


@dataclass
class JoinQuery:
    sql: str
    tables: int


class JoinQueryGenerator:
    """Random 2-5 way inner equi-joins over t0..t4, reproducible from a seed."""

    def __init__(self, seed: int, ntables: int = 5) -> None:
        self.rng = random.Random(seed)
        self.ntables = ntables

    def _edge(self, x: str, y: str, high: bool) -> str:
        rng = self.rng
        if high:
            conds = [rng.choice(HIGH_FANOUT).format(x=x, y=y)]
            if rng.random() < 0.3:
                a, b = rng.choice(LOW_FANOUT)
                conds.append(f"{x}.{a} = {y}.{b}")
        else:
            a, b = rng.choice(LOW_FANOUT)
            conds = [f"{x}.{a} = {y}.{b}"]
        if rng.random() < 0.25:
            conds.append(rng.choice([f"{x}.id <> {y}.id", f"{x}.id + {y}.id > 60",
                                     f"{x}.payload < {y}.payload"]))
        return " AND ".join(conds)

    def query(self) -> JoinQuery:
        rng = self.rng
        n = rng.randint(2, self.ntables)
        tables = rng.sample(range(self.ntables), n)
        aliases = [f"r{k}" for k in range(n)]
        high_edge = rng.randrange(1, n) if rng.random() < 0.8 else -1
        sql_from = f"t{tables[0]} {aliases[0]}"
        for k in range(1, n):
            other = aliases[rng.randrange(k)]
            sql_from += (f" JOIN t{tables[k]} {aliases[k]} ON "
                         + self._edge(other, aliases[k], k == high_edge))
        if rng.random() < 0.3:
            select = "count(*)"
        else:
            cols = [f"{rng.choice(aliases)}.{rng.choice(COLUMNS)}"
                    for _ in range(rng.randint(1, 4))]
            select = ", ".join(cols)
        where = ""
        if rng.random() < 0.3:
            where = f" WHERE {rng.choice(aliases)}.id % 3 <> 0"
        return JoinQuery(f"SELECT {select} FROM {sql_from}{where}", n)


def _result(conn: psycopg.Connection, query: str, small: bool):
    if small:
        return multiset(conn.execute(query).fetchall())
    return conn.execute(
        f"SELECT count(*), sum(hashtext(q::text)::int8) FROM ({query}) q").fetchone()


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_generated_joins_match_hash_join(eddy_conn, chunk):
    """Seeded random 2-5 way inner equi-joins (NULL, duplicated, skewed,
    int4 = int8, text under two collations, computed, numeric and float keys,
    extra join filters) return the same multiset of rows with static_shj on as
    with PostgreSQL's Hash Joins, and every inner Hash Join of the vanilla
    plan is a Symmetric Hash Join in the other, the plan being otherwise the
    same."""
    conn = eddy_conn
    rng = random.Random(9000 + chunk)
    for i in range(5):
        conn.execute(generated_table_sql(i, rng.randint(120, 400)))
    set_gucs(conn, enabled="off", max_memory="512MB")
    gen = JoinQueryGenerator(seed=4200 + chunk)
    swapped = 0
    for _ in range(QUERIES_PER_CHUNK):
        q = gen.query()
        forced = rng.random() < 0.7
        pg_set(conn, enable_nestloop="off" if forced else "on",
               enable_mergejoin="off" if forced else "on")
        set_gucs(conn, static_shj="off")
        vanilla = explain_json(conn, q.sql)
        nrows = sql_value(conn, f"SELECT count(*) FROM ({q.sql}) q")
        small = nrows <= MAX_COMPARED_ROWS
        want = _result(conn, q.sql, small)
        set_gucs(conn, static_shj="on")
        plan = explain_json(conn, q.sql)
        got = _result(conn, q.sql, small)
        assert got == want, f"static SHJ changed the result of: {q.sql}"
        assert not inner_hash_joins(plan), f"an inner Hash Join is left in: {q.sql}"
        assert len(shj_nodes(plan)) == len(inner_hash_joins(vanilla)), q.sql
        swapped += len(shj_nodes(plan))
    assert swapped >= QUERIES_PER_CHUNK // 2


def test_generator_is_reproducible():
    """The same seed gives the same join queries; another seed gives others."""
    g1, g2, g3 = (JoinQueryGenerator(seed=s) for s in (3, 3, 4))
    first = [g1.query().sql for _ in range(20)]
    assert first == [g2.query().sql for _ in range(20)]
    assert first != [g3.query().sql for _ in range(20)]


def wisconsin_star(conn: psycopg.Connection, rows: int = 10000) -> str:
    items = ", ".join([f"{wisconsin.multiplicative_permutation_sql('g', rows)} AS unique1",
                       "g AS unique2", *wisconsin.attributes_sql("g", ("two", "ten")),
                       "'x' || g AS stringu1"])
    for i in range(1, 6):
        conn.execute(f"""
CREATE TABLE w{i} AS
SELECT {items}
FROM generate_series(0, {rows - 1}) g;
ALTER TABLE w{i} ADD PRIMARY KEY (unique2);
ANALYZE w{i};""")
    return ("SELECT count(*) FROM w1 JOIN w2 ON w1.unique2 = w2.unique2 "
            "JOIN w3 ON w1.unique2 = w3.unique2 JOIN w4 ON w1.unique2 = w4.unique2 "
            "JOIN w5 ON w1.unique2 = w5.unique2")


def test_star_join_benchmark_plan(eddy_conn):
    """The benchmark's five-way star of 10,000-row tables: the static SHJ
    plan is the Hash Join plan with its four joins swapped, gives the same
    count, and its EXPLAIN ANALYZE counters add up (every match is found by
    exactly one side's probes)."""
    conn = eddy_conn
    q = wisconsin_star(conn)
    set_gucs(conn, enabled="off", static_shj="off")
    vanilla = explain_json(conn, q)
    want = sql_value(conn, q)
    set_gucs(conn, static_shj="on")
    plan = explain_json(conn, q, analyze=True)
    assert len(inner_hash_joins(vanilla)) == 4
    nodes = shj_nodes(plan)
    assert len(nodes) == 4 and not inner_hash_joins(plan)
    assert sql_value(conn, q) == want == 10000
    for node in nodes:
        assert node["Outer"]["Matched"] + node["Inner"]["Matched"] == node["Actual Rows"]
        assert node["Memory"] > 0
        assert "unique2" in node["Hash Cond"]


def test_explain_json_properties(eddy_conn):
    """EXPLAIN (FORMAT JSON) shows the hash condition and join filter as
    properties, and with ANALYZE per side Inserted/Probed/Matched, the rows
    removed by the join filter and the memory in kB."""
    conn = eddy_conn
    conn.execute("CREATE TABLE a AS SELECT g AS id, g % 10 AS k FROM generate_series(1, 500) g")
    conn.execute("CREATE TABLE b AS SELECT g AS id, g % 10 AS k FROM generate_series(1, 300) g")
    conn.execute("ANALYZE a, b")
    set_gucs(conn, enabled="off", static_shj="on")
    pg_set(conn, enable_nestloop="off", enable_mergejoin="off")
    q = "SELECT a.id, b.id FROM a JOIN b ON a.k = b.k AND a.id < b.id"
    node = shj_nodes(explain_json(conn, q, analyze=True))[0]
    assert node["Hash Cond"] in ("(a.k = b.k)", "(b.k = a.k)")
    assert node["Join Filter"] == "(a.id < b.id)"
    assert set(node["Outer"]) == set(node["Inner"]) == {"Inserted", "Probed", "Matched"}
    total = node["Outer"]["Matched"] + node["Inner"]["Matched"]
    assert total == node["Actual Rows"] + node["Rows Removed by Join Filter"] == 500 * 300 // 10
    assert isinstance(node["Memory"], int) and node["Memory"] > 0
    plain = shj_nodes(explain_json(conn, q))[0]
    assert "Outer" not in plain and "Memory" not in plain


def test_memory_limit_error_names_setting(eddy_conn):
    """Past eddy.max_memory the query fails with SQLSTATE 54000 and a message
    naming the setting, the session survives, and the default limit
    (work_mem x hash_mem_multiplier per STAIR) scales with work_mem."""
    conn = eddy_conn
    conn.execute("CREATE TABLE big AS "
                 "SELECT g AS id, md5(g::text) AS pad FROM generate_series(1, 50000) g")
    conn.execute("ANALYZE big")
    set_gucs(conn, enabled="off", static_shj="on")
    pg_set(conn, enable_nestloop="off", enable_mergejoin="off")
    q = "SELECT count(*), max(x.pad || y.pad) FROM big x JOIN big y ON x.id = y.id"
    assert shj_nodes(explain_json(conn, q))
    set_gucs(conn, max_memory="256kB")
    with pytest.raises(psycopg.errors.ProgramLimitExceeded) as exc:
        conn.execute(q)
    assert "eddy.max_memory (256 kB)" in str(exc.value)
    assert (exc.value.diag.message_hint or "").startswith("Raise eddy.max_memory")
    assert sql_value(conn, "SELECT 1") == 1
    set_gucs(conn, max_memory="-1")
    pg_set(conn, work_mem="64kB", hash_mem_multiplier="1")
    with pytest.raises(psycopg.errors.ProgramLimitExceeded):
        conn.execute(q)
    pg_set(conn, work_mem="64MB")
    assert conn.execute(q).fetchone()[0] == 50000


def test_statement_timeout_is_prompt(eddy_conn):
    """statement_timeout cancels a join producing 100 million matches within
    a fraction of a second of the deadline."""
    conn = eddy_conn
    conn.execute("CREATE TABLE dup AS SELECT g AS id, 1 AS k FROM generate_series(1, 10000) g")
    conn.execute("ANALYZE dup")
    set_gucs(conn, enabled="off", static_shj="on")
    pg_set(conn, enable_nestloop="off", enable_mergejoin="off")
    q = "SELECT count(*) FROM dup x JOIN dup y ON x.k = y.k"
    assert shj_nodes(explain_json(conn, q))
    pg_set(conn, statement_timeout="200ms")
    start = time.monotonic()
    with pytest.raises(psycopg.errors.QueryCanceled):
        conn.execute(q)
    assert time.monotonic() - start < 2.0


def test_rescans_with_and_without_parameters(eddy_conn):
    """A join rescanned for every outer row, in a correlated subquery (new
    parameter values) and on the inner side of a nested loop (none), returns
    PostgreSQL's rows each time."""
    conn = eddy_conn
    conn.execute(generated_table_sql(0, 300))
    conn.execute(generated_table_sql(1, 200))
    conn.execute(generated_table_sql(2, 40))
    set_gucs(conn, enabled="off")
    pg_set(conn, enable_material="off", join_collapse_limit="1")
    queries = [
        "SELECT r.id, (SELECT count(*) FROM t0 a JOIN t1 b ON a.m = b.b8 "
        "WHERE a.s = r.s AND b.nl IS DISTINCT FROM r.nl) FROM t2 r",
        "SELECT r.id, a.id, b.payload FROM t2 r JOIN (t0 a JOIN t1 b ON a.t = b.t) "
        "ON r.m < a.m WHERE r.id < 6",
    ]
    for q in queries:
        set_gucs(conn, static_shj="off")
        want = multiset(conn.execute(q).fetchall())
        set_gucs(conn, static_shj="on")
        plan = explain_json(conn, q, analyze=True)
        node = shj_nodes(plan)[0]
        assert node["Actual Loops"] > 1
        assert multiset(conn.execute(q).fetchall()) == want, q


def test_parallel_plans_keep_no_hash_join(eddy_conn):
    """With parallel query allowed, the partial (parallel) inner Hash Joins are
    dropped too: no inner Hash Join is left, and the rows are the same."""
    conn = eddy_conn
    for i in range(3):
        conn.execute(generated_table_sql(i, 3000))
    q = ("SELECT count(*), sum(a.id + b.id + c.id) FROM t0 a JOIN t1 b ON a.m = b.m "
         "JOIN t2 c ON c.id = b.id")
    set_gucs(conn, enabled="off")
    pg_set(conn, max_parallel_workers_per_gather="2", parallel_setup_cost="0",
           parallel_tuple_cost="0", min_parallel_table_scan_size="0")
    set_gucs(conn, static_shj="off")
    want = conn.execute(q).fetchall()
    assert any(n["Node Type"] == "Gather" or n.get("Parallel Aware")
               for n in plan_nodes(explain_json(conn, q)))
    set_gucs(conn, static_shj="on")
    plan = explain_json(conn, q)
    assert not inner_hash_joins(plan)
    assert shj_nodes(plan)
    assert conn.execute(q).fetchall() == want


def test_nothing_changes_without_the_setting_or_with_eddies(eddy_conn):
    """static_shj off keeps Hash Join; static_shj only acts when eddy.enabled
    is off (the join eddy planner owns joins otherwise)."""
    conn = eddy_conn
    conn.execute(generated_table_sql(0, 300))
    conn.execute(generated_table_sql(1, 300))
    q = "SELECT a.id, b.id FROM t0 a JOIN t1 b ON a.m = b.m"
    pg_set(conn, enable_nestloop="off", enable_mergejoin="off")
    set_gucs(conn, enabled="off", static_shj="off")
    assert inner_hash_joins(explain_json(conn, q)) and not shj_nodes(explain_json(conn, q))
    set_gucs(conn, enabled="on", static_shj="on")
    assert not shj_nodes(explain_json(conn, q))


def test_unprojected_output_consumed_by_insert(eddy_conn):
    """When the join's target list is its scan tuple (no projection), the
    slot it returns is the one it fills; INSERT ... SELECT materializes it,
    and every row inserted is right (a probing tuple's columns are refilled
    after a consumer materialized the slot)."""
    conn = eddy_conn
    conn.execute("CREATE TABLE x AS "
                 "SELECT g % 100 AS k, 'x' || g AS s FROM generate_series(1, 1000) g")
    conn.execute("CREATE TABLE y AS "
                 "SELECT g % 100 AS k, 'y' || g AS t FROM generate_series(1, 500) g")
    conn.execute("ANALYZE x, y")
    conn.execute("CREATE TABLE r (k1 int, s text, k2 int, t text)")
    set_gucs(conn, enabled="off", static_shj="on")
    pg_set(conn, enable_nestloop="off", enable_mergejoin="off")
    q = "SELECT * FROM x JOIN y ON x.k = y.k"
    node = shj_nodes(explain_json(conn, "INSERT INTO r " + q, verbose=True))[0]
    assert node["Output"] == ["x.k", "x.s", "y.k", "y.t"]
    conn.execute("INSERT INTO r " + q)
    set_gucs(conn, static_shj="off")
    assert (multiset(conn.execute("SELECT * FROM r").fetchall())
            == multiset(conn.execute(q).fetchall()))
    assert sql_value(conn, "SELECT count(*) FROM r") == 5000


def test_jit_compiled_expressions(eddy_conn):
    """With JIT forced for every expression, computed keys (evaluated on a
    child's slot of any type) and join filters give PostgreSQL's rows."""
    conn = eddy_conn
    if not sql_value(conn, "SELECT pg_jit_available()"):
        pytest.skip("JIT is not available")
    conn.execute(generated_table_sql(0, 400))
    conn.execute(generated_table_sql(1, 400))
    set_gucs(conn, enabled="off")
    pg_set(conn, jit="on", jit_above_cost="0", jit_inline_above_cost="0",
           jit_optimize_above_cost="0", enable_nestloop="off", enable_mergejoin="off")
    q = ("SELECT a.id, b.payload FROM t0 a JOIN t1 b ON upper(a.t) = upper(b.t) "
         "AND a.m + 1 = b.b8 AND a.payload < b.payload")
    set_gucs(conn, static_shj="off")
    want = multiset(conn.execute(q).fetchall())
    set_gucs(conn, static_shj="on")
    assert shj_nodes(explain_json(conn, q))
    assert multiset(conn.execute(q).fetchall()) == want


def test_join_input_presizes_within_reason(eddy_conn):
    """A join input's estimate (here 8,000,000 rows for 40,000) sizes the
    upper join's slot array only up to 131,072 entries: under a large
    eddy.max_memory the upper join held 202 MB for its 40,000
    rows before; the rows are PostgreSQL's."""
    conn = eddy_conn
    conn.execute("CREATE TABLE pa AS SELECT g AS id FROM generate_series(1, 40000) g")
    conn.execute("CREATE TABLE pb AS SELECT g AS id FROM generate_series(1, 40000) g")
    conn.execute("CREATE TABLE pc AS SELECT g AS id FROM generate_series(1, 40000) g")
    conn.execute("ANALYZE pa, pb, pc")
    q = ("SELECT count(*), sum(pc.id) FROM (pa JOIN pb ON (pa.id % 100000) = (pb.id % 100000)) "
         "JOIN pc ON pc.id = pa.id")
    set_gucs(conn, enabled="off", static_shj="off")
    want = conn.execute(q).fetchall()
    set_gucs(conn, static_shj="on", max_memory="1GB")
    pg_set(conn, join_collapse_limit=1, enable_nestloop="off", enable_mergejoin="off")
    plan = explain_json(conn, q, analyze=True)
    upper, lower = shj_nodes(plan)      # pre-order: the upper join first
    assert shj_nodes(upper["Plans"][0]) == [lower] or shj_nodes(upper["Plans"][1]) == [lower]
    # the lower join: estimated far above its 40,000 rows
    raw = sql_value(conn, f"EXPLAIN (FORMAT JSON) {q}")
    estimated = shj_nodes((raw if isinstance(raw, list) else json.loads(raw))[0]["Plan"])
    assert estimated[1]["Plan Rows"] >= 1_000_000, estimated[1]["Plan Rows"]
    assert lower["Actual Rows"] == 40000, lower
    assert upper["Memory"] < 32 * 1024, upper["Memory"]
    assert conn.execute(q).fetchall() == want
