"""PostgreSQL's access paths and the eddy (plan_join.c,
parameterized_scan_lost).

Where PostgreSQL's plan reaches a relation through a parameterized path (an
index, index-only or bitmap scan per outer row), the eddy either reaches it
through the same index (an index join, eddy.join_method = auto) or keeps
PostgreSQL's plan for the block: scanning the relation whole instead costs
orders of magnitude more.
eddy.join_method = hash still forces the eddy.  Rows are PostgreSQL's either
way.
"""

from __future__ import annotations

import pytest

from eddytools.db import eddy_nodes, eddy_reasons, explain_json, multiset, plan_nodes, set_gucs

SCHEMA = """
CREATE TABLE dim1 AS SELECT g AS id, g % 100 AS cat FROM generate_series(1, 2000) g;
CREATE TABLE dim2 AS SELECT g AS id, 'n' || g AS name FROM generate_series(1, 50) g;
CREATE TABLE fact AS SELECT g AS id, (g * 7) % 2000 + 1 AS d1, g % 50 + 1 AS d2, g AS v
    FROM generate_series(1, 300000) g;
CREATE INDEX ON fact (d1);
CREATE INDEX ON fact ((d1 + 0));
CREATE TABLE fu AS SELECT g AS id, g % 50 + 1 AS d2 FROM generate_series(1, 300000) g;
ALTER TABLE fu ADD PRIMARY KEY (id);
ANALYZE dim1, dim2, fact, fu;
"""

# PostgreSQL: a bitmap index scan of fact per qualifying dim1 row (15 rows)
STAR = ("SELECT count(*), sum(fact.v), max(dim2.name) FROM fact JOIN dim1 ON fact.d1 = dim1.id "
        "JOIN dim2 ON fact.d2 = dim2.id WHERE dim1.cat = 7")
# PostgreSQL: a scan of the expression index per qualifying dim1 row; the
# eddy's index joins probe plain columns only
EXPRESSION = ("SELECT count(*), sum(fact.v) FROM fact JOIN dim1 ON fact.d1 + 0 = dim1.id "
              "JOIN dim2 ON fact.d2 = dim2.id WHERE dim1.cat = 7")
# PostgreSQL: an index scan of fu's primary key per dim1 row: an index join
UNIQUE = ("SELECT count(*), sum(fu.id) FROM dim1 JOIN fu ON fu.id = dim1.id * 3 "
          "JOIN dim2 ON fu.d2 = dim2.id WHERE dim1.cat < 50")


@pytest.fixture
def ap(eddy_conn):
    eddy_conn.execute(SCHEMA)
    set_gucs(eddy_conn, max_memory="1GB")
    return eddy_conn


def test_parameterized_bitmap_scan_becomes_an_index_join(ap):
    """PostgreSQL reaches fact by a bitmap index scan per qualifying dim1 row;
    the eddy reaches it through the same index, an index join, and never
    scans it."""
    plan = explain_json(ap, STAR)
    assert any(n["Node Type"] == "Bitmap Heap Scan" and n.get("Relation Name") == "fact"
               for n in plan_nodes(explain_json_off(ap, STAR)))
    (eddy,) = eddy_nodes(plan)
    assert any(op["Operator Type"] == "Index Join" and "fact_d1_idx" in str(op)
               for op in eddy["Operators"]), eddy["Operators"]
    set_gucs(ap, enabled="off")
    want = multiset(ap.execute(STAR).fetchall())
    set_gucs(ap, enabled="on")
    (eddy,) = eddy_nodes(explain_json(ap, STAR, analyze=True))
    assert not [n for n in plan_nodes(eddy) if n.get("Relation Name") == "fact"]
    join = next(op for op in eddy["Operators"] if op["Operator Type"] == "Index Join")
    assert join["Tuples In"] == 20  # the qualifying dim1 rows (cat = 7)
    assert multiset(ap.execute(STAR).fetchall()) == want


def test_parameterized_path_without_an_index_join_keeps_postgresqls_plan(ap):
    """An index the eddy cannot probe (on an expression) keeps PostgreSQL's
    plan and says why; eddy.join_method = hash forces the eddy, which scans
    fact whole, with the same rows."""
    plan = explain_json(ap, EXPRESSION)
    assert not eddy_nodes(plan)
    assert any('reaches relation "fact" through a parameterized' in r
               for r in eddy_reasons(ap, EXPRESSION)), eddy_reasons(ap, EXPRESSION)
    set_gucs(ap, enabled="off")
    want = multiset(ap.execute(EXPRESSION).fetchall())
    set_gucs(ap, enabled="on", join_method="hash")
    (eddy,) = eddy_nodes(explain_json(ap, EXPRESSION, analyze=True))
    fact = [n for n in plan_nodes(eddy) if n.get("Relation Name") == "fact"]
    # fact is read whole; its scan probes dim1's state on the computed key
    # fact.d1 + 0 and returns only the rows that match (local.c)
    assert fact and fact[0]["Actual Rows"] < 300000
    assert "fact 300000" in eddy["Tuples Read"].split(", "), eddy["Tuples Read"]
    assert multiset(ap.execute(EXPRESSION).fetchall()) == want


def explain_json_off(conn, query: str) -> dict:
    set_gucs(conn, enabled="off")
    try:
        return explain_json(conn, query)
    finally:
        set_gucs(conn, enabled="on")


def test_index_nested_loop_becomes_an_index_join(ap):
    plan = explain_json(ap, UNIQUE)
    (eddy,) = eddy_nodes(plan)
    assert any(op["Operator Type"] == "Index Join" for op in eddy["Operators"]), eddy
    set_gucs(ap, enabled="off")
    want = multiset(ap.execute(UNIQUE).fetchall())
    set_gucs(ap, enabled="on")
    assert multiset(ap.execute(UNIQUE).fetchall()) == want
