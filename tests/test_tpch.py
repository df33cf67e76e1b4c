"""Differential TPC-H: the 22 queries on scale-factor 0.01 data return exactly
PostgreSQL's results with eddy.enabled on and off, and the inner-join blocks
of the queries that have one become eddies.

The data are generated once per module by tpchgen-cli and loaded into a
database ``tpch_template`` of the session's server (eddytools.tpch); the tests
only read it.  TPC-H uses numeric for money and quantities, so sums and
averages are exact and results are compared exactly: as multisets, and as
sequences where the query's ORDER BY is total (eddytools.tpch.QUERIES).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import psycopg
import pytest

from eddytools import tpch
from eddytools.db import (
    connect,
    eddy_nodes,
    eddy_reasons,
    explain_json,
    multiset,
    server_log_excerpt,
    set_gucs,
    sql_value,
)
from eddytools.tpch import QUERIES, TpchQuery

SCALE = 0.01
DBNAME = "tpch_template"

# Queries whose plan has an inner-join block of 2+ relations that no outer,
# semi or anti join touches (checked by reading the vanilla plans):
#   Q2 outer block and correlated subquery; Q3; Q5; Q7; Q8; Q9; Q10; Q11 (and
#   its HAVING subquery); Q12; Q14; Q15 (supplier x the CTE); Q16 (the NOT IN
#   stays a hashed SubPlan filter); Q17 (the correlated subquery is a
#   selection); Q18 (PostgreSQL reduces the IN over a GROUP BY to an inner
#   join: reduce_unique_semijoins); Q19 (the common p_partkey = l_partkey is
#   factored out of the OR).
# Q1 and Q6 are single-table; Q4, Q13, Q20, Q21 and Q22 have their joins
# touched by semi, anti or outer joins.
# Q8 and Q19 reach lineitem through a bitmap index scan per part row at this
# scale: with eddy.join_method = auto the eddy reaches it through the same
# index, an index join (plan_join.c, parameterized_index), and join_method =
# hash forces hash joins.
BITMAP = {8, 19}
EXPECT_EDDY = {2, 3, 5, 7, 8, 9, 10, 11, 12, 14, 15, 16, 17, 18, 19}

JOIN_HEAVY = (5, 7, 8, 9, 10)
VARIANTS = (
    {"routing_policy": "fixed"},
    {"routing_policy": "random", "reopt_frequency": 1},
    {"routing_policy": "lottery"},
    {"routing_policy": "lottery", "lottery_window": 50},
    {"routing_policy": "rank", "join_method": "hash"},
    {"routing_policy": "rank", "join_method": "index"},
)


def canon(rows: list[tuple]) -> list[tuple]:
    """Rows comparable as a sequence, numeric scale included (1.50 is not 1.5)."""
    return [tuple(repr(v) for v in row) for row in rows]


@pytest.fixture(scope="module")
def tpch_dsn(postgresql_proc, tmp_path_factory) -> Iterator[str]:
    """A database loaded with TPC-H at SF 0.01 and the extension created,
    built once for this module and dropped after it."""
    proc = postgresql_proc
    info = {"host": proc.host, "port": proc.port, "user": proc.user, "password": proc.password}
    maint = psycopg.conninfo.make_conninfo(dbname="postgres", **info)
    with connect(maint) as c:
        c.execute(f"DROP DATABASE IF EXISTS {DBNAME} WITH (FORCE)")
        c.execute(f"CREATE DATABASE {DBNAME}")
    dsn = psycopg.conninfo.make_conninfo(dbname=DBNAME, **info)
    with connect(dsn) as c:
        c.execute("CREATE EXTENSION eddy")
        counts = tpch.load(c, SCALE, workdir=tmp_path_factory.mktemp("tpch"))
    assert counts["lineitem"] > 50_000 and counts["region"] == 5, counts
    yield dsn
    with connect(maint) as c:
        c.execute(f"DROP DATABASE IF EXISTS {DBNAME} WITH (FORCE)")


@pytest.fixture
def run(postgresql_proc) -> Callable[[psycopg.Connection, str], list[tuple]]:
    """Run a query; a lost connection (a backend crash) fails with the server log's tail."""
    def _run(conn: psycopg.Connection, query: str) -> list[tuple]:
        try:
            return conn.execute(query).fetchall()
        except psycopg.OperationalError as e:
            if not conn.broken:
                raise
            pytest.fail(f"connection lost (backend crash?): {e}\nquery:\n{query}\n"
                        f"server log:\n{server_log_excerpt(postgresql_proc.logfile)}")
    return _run


@pytest.fixture(scope="module")
def vanilla_results(tpch_dsn):
    """PostgreSQL's own result of each query (eddy.enabled = off), computed once."""
    cache: dict[int, list[tuple]] = {}
    conn = connect(tpch_dsn)
    set_gucs(conn, enabled="off")

    def get(number: int) -> list[tuple]:
        if number not in cache:
            cache[number] = conn.execute(QUERIES[number].sql).fetchall()
        return cache[number]

    yield get
    conn.close()


def assert_same_result(q: TpchQuery, got: list[tuple], want: list[tuple], settings: dict) -> None:
    """Same multiset of rows; the same sequence of ORDER BY keys; the same
    sequence of rows when the ORDER BY is total."""
    where = f"TPC-H {q.name} under {settings}"
    assert len(got) == len(want), f"{where}: {len(got)} rows, vanilla {len(want)}"
    if q.total_order:
        assert canon(got) == canon(want), f"{where}: rows differ from vanilla (in order)\n" \
            f"eddy:    {got[:5]}\nvanilla: {want[:5]}"
        return
    keys = [tuple(r[i] for i in q.order_keys) for r in got]
    assert keys == [tuple(r[i] for i in q.order_keys) for r in want], \
        f"{where}: ORDER BY keys out of order"
    assert multiset(got) == multiset(want), f"{where}: rows differ from vanilla\n" \
        f"eddy:    {got[:5]}\nvanilla: {want[:5]}"


def test_tpch_loaded(tpch_dsn):
    """The generated data satisfy the schema: every foreign key was validated
    when it was added, and lineitem references existing orders."""
    with connect(tpch_dsn) as conn:
        fks = sql_value(
            conn, "SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND convalidated")
        orphans = sql_value(
            conn, "SELECT count(*) FROM lineitem l "
                  "LEFT JOIN orders o ON o.o_orderkey = l.l_orderkey WHERE o.o_orderkey IS NULL")
    assert fks == len(tpch.FOREIGN_KEYS)
    assert orphans == 0


@pytest.mark.parametrize("number", sorted(QUERIES), ids=lambda n: f"q{n:02d}")
def test_tpch_query_matches_vanilla(tpch_dsn, vanilla_results, run, number):
    """Query ``number`` returns PostgreSQL's exact result under the default
    eddy (rank, reoptimization every 100 tuples), in PostgreSQL's order where
    the ORDER BY is total; and its plan has an Eddy when it has an inner-join
    block (EXPECT_EDDY)."""
    q = QUERIES[number]
    settings = {"enabled": "on", "routing_policy": "rank", "reopt_frequency": 100}
    with connect(tpch_dsn) as conn:
        set_gucs(conn, **settings)
        eddies = eddy_nodes(explain_json(conn, q.sql))
        got = run(conn, q.sql)
        assert_same_result(q, got, vanilla_results(number), settings)
        if number in EXPECT_EDDY:
            assert eddies, (f"{q.name}: no Eddy in the plan; planner said: "
                            f"{eddy_reasons(conn, q.sql)}")
        if number in BITMAP:
            ops = [op["Operator Type"] for e in eddies for op in e["Operators"]]
            assert "Index Join" in ops, (q.name, ops)
            forced = settings | {"join_method": "hash"}
            set_gucs(conn, **forced)
            assert eddy_nodes(explain_json(conn, q.sql))
            assert_same_result(q, run(conn, q.sql), vanilla_results(number), forced)


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "-".join(map(str, v.values())))
@pytest.mark.parametrize("number", JOIN_HEAVY, ids=lambda n: f"q{n:02d}")
def test_tpch_join_heavy_under_every_policy(tpch_dsn, vanilla_results, run, number, variant):
    """The join-heavy queries (Q5, Q7, Q8, Q9, Q10) return PostgreSQL's exact
    result under the fixed, random (recomputed every tuple) and lottery
    policies and with only hash joins or only index joins, each plan with an
    Eddy."""
    q = QUERIES[number]
    settings = {"enabled": "on", "reopt_frequency": 100, **variant}
    with connect(tpch_dsn) as conn:
        set_gucs(conn, **settings)
        plan = explain_json(conn, q.sql)
        got = run(conn, q.sql)
        assert_same_result(q, got, vanilla_results(number), settings)
        assert eddy_nodes(plan), f"{q.name}: no Eddy under {settings}"
        if variant.get("join_method") == "hash":
            ops = [op["Operator Type"] for e in eddy_nodes(plan) for op in e["Operators"]]
            assert "Index Join" not in ops, f"{q.name}: index join under join_method=hash"


def test_tpch_eddy_coverage(tpch_dsn):
    """Every query of EXPECT_EDDY plans with an Eddy, Q2 and Q11 with two (an
    outer block and a subquery block each); all 22 are planned and the
    queries with eddies are printed for the record."""
    with connect(tpch_dsn) as conn:
        set_gucs(conn, enabled="on")
        eddies = {n: len(eddy_nodes(explain_json(conn, q.sql))) for n, q in QUERIES.items()}
        with_eddy = {n for n, k in eddies.items() if k}
        missing = {n: eddy_reasons(conn, QUERIES[n].sql) for n in EXPECT_EDDY - with_eddy}
    print(f"TPC-H queries with eddies (query: eddies): "
          f"{ {n: k for n, k in eddies.items() if k} }")
    assert not missing, f"queries with an Eddy: {sorted(with_eddy)}; missing: {missing}"
    assert eddies[2] == 2 and eddies[11] == 2, eddies
