"""The misestimation workload (python -m eddytools.robustness, issue 48): its
--quick form end to end on a real server with the real Spark loader (answers
equal, the records of commit, command and settings, the stale statistics
really stale), the query generator (deterministic, every kind in at least
three queries, every query valid SQL on the schema) and the data generator.
Assertions on counters and fields, never on time."""

from __future__ import annotations

import collections
import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from eddytools import harness, misest
from eddytools import robustness as rb
from eddytools.db import connect, sql_value
from spark_loader import misest as data

DBNAME = "misest_test"
DOCS = Path(__file__).resolve().parent.parent / "docs" / "robustness"


@pytest.fixture(scope="module")
def server_dsn(postgresql_proc) -> Iterator[str]:
    """The session server's maintenance database; the workload's database is
    dropped after the module."""
    proc = postgresql_proc
    dsn = psycopg.conninfo.make_conninfo(host=proc.host, port=proc.port, user=proc.user,
                                         password=proc.password, dbname="postgres")
    yield dsn
    with connect(dsn) as c:
        c.execute(f"DROP DATABASE IF EXISTS {DBNAME} WITH (FORCE)")


@pytest.fixture(scope="module")
def quick_run(server_dsn, tmp_path_factory) -> tuple[int, Path]:
    out = tmp_path_factory.mktemp("robustness")
    status = rb.main(["--dsn", server_dsn, "--out", str(out), "--quick", "--dbname", DBNAME,
                      "--no-progress"])
    return status, out


def test_quick_run_answers_equal_and_records(quick_run):
    """--quick: six queries (one of each kind), one round, three modes each,
    every answer the same in every mode, an Eddy in the plan or the
    planner's reasons recorded; the results record the commit, the command,
    the session settings and the eddy's settings; every file is written."""
    status, out = quick_run
    assert status == 0
    doc = json.loads((out / "results.json").read_text())
    assert doc["errors"] == []
    assert harness.record_problems(doc) == []
    assert doc["settings"]["command"].startswith("python -m eddytools.robustness")
    assert "--quick" in doc["settings"]["command"]
    assert doc["settings"]["session_settings"] == {
        "jit": "off", "work_mem": "4MB", "max_parallel_workers_per_gather": "0"}
    assert doc["settings"]["rounds"] == 1 and doc["settings"]["scale"] == rb.QUICK_SCALE
    assert doc["environment"]["eddy_settings"]["eddy.enabled"] == "on"
    assert doc["load"]["counts"]["ms_sales"] == data.rows_of("ms_sales", rb.QUICK_SCALE)
    assert doc["load"]["counts"]["ms_sales_st"] == doc["load"]["counts"]["ms_sales"]

    names = [q["name"] for q in doc["queries"]]
    assert names == [f"m{i:02d}" for i in range(1, rb.QUICK_QUERIES + 1)]
    kinds = {q["kinds"][0] for q in doc["queries"]}
    assert kinds == set(misest.KINDS)
    runs = doc["runs"]
    assert len(runs) == len(names) * len(rb.MODES)
    assert {(r["query"], r["mode"]) for r in runs} == {(q, m) for q in names for m in rb.MODES}
    answers: dict[str, set] = collections.defaultdict(set)
    for r in runs:
        assert r["error"] is None and not r["timeout"], r
        assert r["rows"] == 1                      # an aggregate: one row
        answers[r["query"]].add(r["digest"])
    assert all(len(v) == 1 for v in answers.values()), answers

    plans = {p["query"]: p for p in doc["plans"]}
    assert set(plans) == set(names)
    for p in plans.values():
        assert "Eddy" not in p["text_off"]
        assert (p["eddy_nodes"] > 0) == ("(Eddy)" in p["text_on"])
        assert p["eddy_nodes"] > 0 or p["reasons"], p
    summary = {r["query"]: r for r in doc["summary"]}
    assert set(summary) == set(names)
    for r in summary.values():
        assert r["rounds"] == 1 and r["ratio"] is not None
        assert r["ratio_low"] == r["ratio"] == r["ratio_high"]     # one round: no spread
    # all, with an Eddy, then one per kind among the queries
    kinds = {k for q in doc["summary"] for k in q["kinds"].split(",")}
    assert [t["over"] for t in doc["totals"]] == ["all", "eddy"] + [
        k for k in misest.KINDS if k in kinds]
    for t in doc["totals"][2:]:
        assert t["queries"] == sum(t["over"] in q["kinds"].split(",") for q in doc["summary"])
    assert doc["totals"][0]["queries"] == len(names)

    with open(out / "measurements.csv") as f:
        assert len(list(csv.DictReader(f))) == len(runs)
    with open(out / "summary.csv") as f:
        assert [r["query"] for r in csv.DictReader(f)] == names
    assert "geometric mean" in (out / "summary.md").read_text()
    assert (out / "ratio.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_stale_tables_are_stale(quick_run, server_dsn):
    """After the runner: the stale copies have autovacuum off, and their
    statistics describe the data before the change (no segment 10, no sale
    after date 1,999) while the data has them (70% and 50%)."""
    dsn = rb.with_dbname(server_dsn, DBNAME)
    with connect(dsn) as conn:
        for t in misest.STALE_TABLES:
            opts = sql_value(conn, "SELECT reloptions FROM pg_class WHERE relname = %s", (t,))
            assert "autovacuum_enabled=false" in opts
        mcv = sql_value(conn, "SELECT most_common_vals::text::int[] FROM pg_stats "
                              "WHERE tablename = 'ms_customer_st' AND attname = 'segment'")
        assert 10 not in mcv and len(mcv) == 10
        share = float(sql_value(conn, "SELECT avg((segment = 10)::int) FROM ms_customer_st"))
        assert 0.6 < share < 0.8
        top = sql_value(conn, "SELECT max(v) FROM (SELECT unnest(histogram_bounds::text::int[]) "
                              "AS v FROM pg_stats WHERE tablename = 'ms_sales_st' "
                              "AND attname = 'date_id') h")
        assert top < data.SALE_DATES
        moved = float(sql_value(conn, "SELECT avg((date_id >= 2000)::int) FROM ms_sales_st"))
        assert 0.45 < moved < 0.55
        # the planner believes the statistics: about one row for half the table
        plan = sql_value(conn, "EXPLAIN (FORMAT JSON) SELECT * FROM ms_sales_st "
                               "WHERE date_id >= 2000")
        rows = sql_value(conn, "SELECT count(*) FROM ms_sales_st")
        assert plan[0]["Plan"]["Plan Rows"] < 0.01 * moved * rows


def test_every_generated_query_plans(quick_run, server_dsn):
    """All 36 queries are valid on the schema (EXPLAIN, eddy on)."""
    dsn = rb.with_dbname(server_dsn, DBNAME)
    with connect(dsn) as conn:
        for q in misest.generate():
            text, _ = harness.explain_with_reasons(conn, q.sql)
            assert "Aggregate" in text, q.name


def test_generator_is_deterministic_and_covers_every_kind():
    """The same seed gives the same queries, another seed others; at least
    30 queries of 3-10 relations; each of the six kinds in at least three;
    the committed listing is generate(0)'s."""
    a, b = misest.generate(0), misest.generate(0)
    assert a == b
    assert misest.generate(1) != a
    assert len(a) >= 30
    assert all(3 <= q.relations <= 10 for q in a)
    assert all(q.sql.count(" JOIN ") == q.relations - 1 for q in a)
    counts = collections.Counter(k for q in a for k in q.kinds)
    assert set(counts) == set(misest.KINDS)
    assert all(counts[k] >= 3 for k in misest.KINDS), counts
    assert all(q.relations >= 7 for q in a if "many" in q.kinds)
    assert all(("_st " in q.sql) for q in a if "stale" in q.kinds)
    assert all(any(f + "(" in q.sql for f in misest.FUNCTIONS) for q in a if "opaque" in q.kinds)
    listing = DOCS / "queries.sql"
    if listing.exists():
        assert listing.read_text() == misest.listing(a)


def test_data_generator_is_split_independent_and_correlated():
    """A table's rows do not depend on how they are cut into parts; the
    correlations and the skew the workload relies on are in the data."""
    params = {"table": "ms_customer", "seed": 0, "scale": 0.1}
    whole = b"".join(data.chunks(params, 0, 2000))
    assert whole == b"".join(data.chunks(params, 0, 700)) + b"".join(
        data.chunks(params, 700, 2000))
    rows = [list(map(int, line.split("\t"))) for line in whole.decode().splitlines()]
    assert all(r[2] == r[1] % data.STATES for r in rows)             # state from city
    same = sum(r[6] == r[7] for r in rows) / len(rows)               # a = b
    assert 0.9 < same < 0.99
    sales = b"".join(data.chunks({"table": "ms_sales", "seed": 0, "scale": 0.1}, 0, 20000))
    promo = collections.Counter(line.split("\t")[5] for line in sales.decode().splitlines())
    assert promo.most_common(1)[0][0] == "0" and promo["0"] > 0.2 * 20000   # Zipf's head
    assert max(int(line.split("\t")[1]) for line in sales.decode().splitlines()) \
        < data.SALE_DATES


@pytest.mark.parametrize("table", ["ms_sales", "ms_returns"])
def test_fact_batches_equal_the_row_definition(table):
    """The fact tables' numpy batches are Tables.row's rows, byte for byte,
    whatever the cut (a part boundary inside a batch)."""
    params = {"table": table, "seed": 3, "scale": 0.05}
    got = b"".join(data.chunks(params, 0, 1234)) + b"".join(data.chunks(params, 1234, 9000))
    gen = data.Tables(3, 0.05)
    want = "".join("\t".join(map(str, gen.row(table, i))) + "\n" for i in range(9000))
    assert got == want.encode()


def test_a_different_answer_is_an_error():
    """check_answers: a digest that differs from eddy off's, or an error,
    is reported; a timeout is not."""
    res = rb.Result(settings={})
    res.runs = [rb.Run("m01", "off", 0, 1.0, 1, "aaaa"), rb.Run("m01", "on", 0, 1.0, 1, "bbbb"),
                rb.Run("m01", "aa", 0, None, None, None, timeout=True),
                rb.Run("m02", "on", 0, None, None, None, error="XX000 boom")]
    rb.check_answers(res)
    assert len(res.errors) == 2
    assert "digest bbbb" in res.errors[1] or "digest bbbb" in res.errors[0]
    assert any("boom" in e for e in res.errors)


def test_run_to_run_spread():
    """run_spread: a mode's slowest run over its fastest (PostgreSQL's over
    its off and A/A runs together); unknown (None) with one run, or with a
    timeout or an error among them; the report counts the queries within
    1.3x."""
    runs = [rb.Run("m01", "on", r, s, 1, "d") for r, s in enumerate((1.0, 1.2, 0.8))]
    runs += [rb.Run("m01", "off", 0, 2.0, 1, "d"), rb.Run("m01", "aa", 0, 2.2, 1, "d")]
    assert rb.run_spread(runs, ("on",)) == pytest.approx(1.5)
    assert rb.run_spread(runs, ("off", "aa")) == pytest.approx(1.1)
    assert rb.run_spread(runs[:1], ("on",)) is None
    timed_out = [*runs, rb.Run("m01", "on", 3, None, None, None, timeout=True)]
    assert rb.run_spread(timed_out, ("on",)) is None

    res = rb.Result(settings={"rounds": 3})
    def row(query: str, on: float, off: float) -> rb.SummaryRow:
        fields: dict[str, Any] = dict.fromkeys(rb.SummaryRow.__dataclass_fields__)
        fields |= {"query": query, "eddy_nodes": 1, "on_run_spread": on, "off_run_spread": off}
        return rb.SummaryRow(**fields)

    res.summary = [row("m01", 1.5, 1.1), row("m02", 1.2, 1.4)]
    text = rb.run_to_run_report(res)
    assert "within 1.3x of its fastest on 1 of 2 queries (worst m01: 1.50x)" in text
    assert "within it on 1 of 2" in text


def test_random_starts_and_forced_orders(quick_run, server_dsn, tmp_path):
    """--random-starts 3 on two queries (--quick's data, loaded already):
    three random starts of the eddy and three forced join orders of
    PostgreSQL per query, each answer PostgreSQL's; the forced orders are
    what PostgreSQL ran (its plan joins the first two relations of the
    order first); spread.csv has worst/best per query, >= 1."""
    out = tmp_path / "spread"
    status = rb.main(["--dsn", server_dsn, "--out", str(out), "--quick", "--dbname", DBNAME,
                      "--no-progress", "--queries", "m01,m05", "--random-starts", "3"])
    assert status == 0
    doc = json.loads((out / "results.json").read_text())
    assert doc["errors"] == []
    modes = {(r["query"], r["mode"]) for r in doc["runs"]}
    want = {f"start{k}" for k in (1, 2, 3)} | {f"order{k}" for k in (1, 2, 3)} | set(rb.MODES)
    assert modes == {(q, m) for q in ("m01", "m05") for m in want}
    digests = collections.defaultdict(set)
    for r in doc["runs"]:
        assert r["error"] is None and not r["timeout"], r
        digests[r["query"]].add(r["digest"])
    assert all(len(v) == 1 for v in digests.values()), digests
    queries = {q.name: q for q in misest.generate()}
    assert set(doc["orders"]) == {"m01", "m05"}
    dsn = rb.with_dbname(server_dsn, DBNAME)
    with connect(dsn) as conn:
        conn.execute("SET join_collapse_limit = 1; SET eddy.enabled = off")
        for name, orders in doc["orders"].items():
            assert len(orders) == len(set(orders)) == 3
            for text in orders:
                order = tuple(text.split())
                assert sorted(order) == sorted(a for a, _ in queries[name].tables)
                plan = sql_value(conn, "EXPLAIN (FORMAT JSON, COSTS OFF) "
                                 + queries[name].forced_sql(order))
                pairs = [a for a in join_alias_sets(plan[0]["Plan"]) if len(a) == 2]
                assert pairs == [set(order[:2])], (name, text, pairs)
    spread = {r["query"]: r for r in doc["spread"]}
    assert set(spread) == {"m01", "m05"}
    for r in spread.values():
        assert r["starts"] == r["orders"] == 3
        assert r["eddy_spread"] >= 1.0 and r["pg_spread"] >= 1.0
        assert r["eddy_worst_ms"] >= r["eddy_best_ms"]
    with open(out / "spread.csv") as f:
        assert [r["query"] for r in csv.DictReader(f)] == ["m01", "m05"]
    assert "Random initial plans" in (out / "summary.md").read_text()


def join_alias_sets(node: dict) -> list[set[str]]:
    """The relations (aliases) under each join node of a plan."""
    out: list[set[str]] = []

    def walk(n: dict) -> set[str]:
        under = {n["Alias"]} if "Alias" in n else set()
        for child in n.get("Plans", []):
            under |= walk(child)
        if "Join" in n["Node Type"] or n["Node Type"] == "Nested Loop":
            out.append(under)
        return under

    walk(node)
    return out


def test_forced_orders_join_only_connected_relations():
    """Every query's random orders: distinct permutations of its relations,
    each relation after the first joined by a clause to those before it,
    the same for the same seed; the forced SQL has the query's clauses."""
    for q in misest.generate():
        orders = q.random_orders(5)
        assert orders == q.random_orders(5)
        assert len(orders) == len(set(orders)) >= 2
        for order in orders:
            assert sorted(order) == sorted(a for a, _ in q.tables)
            text = q.forced_sql(order)
            assert text.count(" JOIN ") == q.relations - 1
            for e in q.edges:
                assert e.on in text
            for w in q.where:
                assert w in text
