"""Tiny scans first (issue 48; join_state.c, tiny_scans_first).

The eddy reads its scanned relations in PostgreSQL's build order, adjusted
(star centres last); then a relation whose scan costs at most 100 and at
most 1/100 of the block's costliest scan is read before the others.  Here
PostgreSQL's plan is m13's of the misestimation workload: a fact table
filtered by correlated predicates (estimated 1 row, 200 in fact) is the
outer of nested loops into a category (equal to the fact's by a constant,
so the two are a cross product) and a department joined on an expression,
which makes the join empty.  Read in PostgreSQL's order, the eddy would
route every fact row before the department that empties the join was read;
read first, category and department join to nothing and the eddy ends
before it reads the fact table.  Counters only; every answer is
PostgreSQL's.
"""

from __future__ import annotations

import pytest

from eddytools.db import eddy_nodes, explain_json, multiset, set_gucs, vanilla_multiset

SCHEMA = """
CREATE TABLE tf_dept (id int PRIMARY KEY, kind int);
INSERT INTO tf_dept SELECT g, CASE WHEN g = 10 THEN 1 ELSE 0 END FROM generate_series(0, 19) g;
CREATE TABLE tf_cat (id int PRIMARY KEY, name text);
INSERT INTO tf_cat SELECT g, 'c' || g FROM generate_series(0, 199) g;
CREATE TABLE tf_big (id int, cat_id int, a int, b int, v int);
INSERT INTO tf_big SELECT g, g % 200, g % 100, g % 100, g % 7 FROM generate_series(1, 40000) g;
CREATE TABLE tf_small (id int, cat_id int, a int, b int, v int);
INSERT INTO tf_small SELECT * FROM tf_big WHERE id <= 600;
ANALYZE tf_dept, tf_cat, tf_big, tf_small;
"""


def query(fact: str, kind: int) -> str:
    return f"""
SELECT count(*), sum(b.v)
FROM {fact} b JOIN tf_cat c ON c.id = b.cat_id JOIN tf_dept d ON d.id = c.id % 20
WHERE b.a = 30 AND b.b = 30 AND b.cat_id = 30 AND d.kind = {kind}"""


@pytest.fixture
def tf(eddy_conn):
    eddy_conn.execute(SCHEMA)
    set_gucs(eddy_conn, routing_policy="rank", source_schedule="build",
             pg__max_parallel_workers_per_gather=0)
    return eddy_conn


def vanilla_scans(conn, sql: str) -> list[str]:
    """The relations PostgreSQL's plan scans, in its plan's order."""
    set_gucs(conn, enabled="off")
    try:
        plan = explain_json(conn, sql)
    finally:
        set_gucs(conn, enabled="on")
    out = []

    def walk(node):
        if node.get("Node Type") == "Seq Scan":
            out.append(node["Relation Name"])
        for child in node.get("Plans", []):
            walk(child)
    walk(plan)
    return out


def the_eddy(conn, sql: str) -> dict:
    (eddy,) = eddy_nodes(explain_json(conn, sql, analyze=True))
    return eddy


def cross_product_stair(eddy: dict, name: str) -> dict:
    (op,) = [op for op in eddy["Operators"] if op.get("Join Condition") == "true"]
    return {st["STAIR"]: st for st in op["STAIRs"]}[name]


def test_postgres_reads_the_fact_table_first(tf):
    """The premise: PostgreSQL's plan scans the fact table before the two
    tiny relations (its estimate says one row)."""
    assert vanilla_scans(tf, query("tf_big", 0)) == ["tf_big", "tf_cat", "tf_dept"]


def test_tiny_relations_empty_the_join_before_the_fact_table_is_read(tf):
    sql = query("tf_big", 0)
    eddy = the_eddy(tf, sql)
    assert eddy["Tuples Read"].startswith("b 0,"), eddy["Tuples Read"]
    assert "c side ran out with nothing stored" in eddy["Ended Early"]
    assert multiset(tf.execute(sql).fetchall()) == vanilla_multiset(tf, sql)


def test_a_non_empty_join_streams_the_fact_table_last(tf):
    """With department 10 kept, the join is not empty: the fact table is
    read after category and department, so its rows probe and are never
    stored (it is the relation read last)."""
    sql = query("tf_big", 1)
    eddy = the_eddy(tf, sql)
    stair = cross_product_stair(eddy, "relation 1")
    assert stair["Inserted"] == 0 and stair["Skipped"] == 200, stair
    rows = tf.execute(sql).fetchall()
    assert rows[0][0] == 200
    assert multiset(rows) == vanilla_multiset(tf, sql)


def test_scans_of_comparable_cost_keep_postgres_order(tf):
    """A fact table of 600 rows (its scan 4x category's, not 100x): no scan
    is tiny beside it, the order the eddy makes of PostgreSQL's stands (the
    fact table first, department last), and the fact rows are read before
    category's and stored in the cross product's STAIR."""
    sql = query("tf_small", 0)
    eddy = the_eddy(tf, sql)
    stair = cross_product_stair(eddy, "relation 1")
    assert stair["Inserted"] > 0, eddy["Operators"]
    assert multiset(tf.execute(sql).fetchall()) == vanilla_multiset(tf, sql)


CROSS = """
SELECT count(*), sum(b.v)
FROM tf_big b JOIN tf_cat c ON c.id % 1000 = b.cat_id JOIN tf_dept d ON d.kind = 1
WHERE b.a < 50"""


def test_a_cross_product_joins_the_smallest_relations(tf):
    """The department is a component of its own (restricted by a constant):
    the cross product that connects it is drawn between it and category (200
    rows), not the fact table (20,000 after its filter), so the fact rows
    reach the department's row through category's tuples, never probing the
    cross product themselves (join_graph.c, EddyChooseSpanningTree)."""
    eddy = the_eddy(tf, CROSS)
    (op,) = [op for op in eddy["Operators"] if op.get("Join Condition") == "true"]
    assert op["Tuples In"] <= 201, op
    rows = tf.execute(CROSS).fetchall()
    assert rows[0][0] == 20000
    assert multiset(rows) == vanilla_multiset(tf, CROSS)
