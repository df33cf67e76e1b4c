"""Prepared statements executed thousands of times over eddies.

Selection and join eddies with parameters in predicates and in join keys are
PREPAREd and executed over 3,000 times with random parameters under each
plan_cache_mode (force_custom_plan, force_generic_plan, auto), and once more
through the extended protocol (psycopg's named prepared statements).  Every
execution's result must be the one the same prepared statement gives in a
session with eddy.enabled = off; the eddy must be in the plan (EXPLAIN
EXECUTE at the start, the middle and the end), the plan cache must have
made the kind of plans the mode asks for (pg_prepared_statements), and the
backend's memory must stay where it was after the first executions.
"""

from __future__ import annotations

import random

import pytest
from psycopg import sql

from eddytools.db import backend_memory, connect, eddy_nodes, explain_json, set_gucs, sql_value

SCHEMA = """
CREATE TABLE pa AS
SELECT g AS id, g % 50 AS a, CASE WHEN g % 97 = 0 THEN NULL ELSE g % 200 END AS k,
       (g * 7) % 2000 AS b, md5(g::text) AS s
FROM generate_series(0, 1999) g;
CREATE TABLE pb AS
SELECT g AS id, g % 40 AS b, CASE WHEN g % 89 = 0 THEN NULL ELSE (g * 13) % 200 END AS k,
       (g % 5)::numeric + 0.5 AS n
FROM generate_series(0, 1999) g;
CREATE TABLE pc AS SELECT g AS id, g % 9 AS c FROM generate_series(0, 499) g;
CREATE UNIQUE INDEX ON pb (id);
CREATE UNIQUE INDEX ON pc (id);
ANALYZE pa, pb, pc;
"""

# name -> (parameter types, statement, random parameters)
STATEMENTS = {
    # a selection eddy: three routed predicates with parameters
    "sel": ("int, int, text",
            """SELECT count(*), sum(id) FROM pa
               WHERE delay(a, 0) < $1 AND (b + $2) % 7 <> 3 AND s > $3""",
            lambda r: (r.randrange(0, 51), r.randrange(0, 7), r.choice("0123456789abcdef"))),
    # a 2-way symmetric hash join returning rows, parameters in both sides
    "rows": ("int, int",
             """SELECT pa.id, pb.id, pb.n FROM pa JOIN pb ON pa.k = pb.k
                WHERE pa.a = $1 AND pb.b < $2 AND delay(pb.b, 0) >= 0
                ORDER BY 1, 2""",
             lambda r: (r.randrange(0, 50), r.randrange(0, 41))),
    # a parameter in a join key, a 3-way join, an aggregate
    "key": ("int, int",
            """SELECT count(*), sum(pa.id - pb.id), sum(pb.n) FROM pa
               JOIN pb ON pb.k = pa.k + $1
               JOIN pc ON pc.id = pb.id % 500
               WHERE pa.a < $2 AND delay(pc.c, 0) <> 4""",
            lambda r: (r.randrange(-5, 6), r.randrange(0, 20))),
    # an index join into pb (eddy.join_method = index) and a join into pc
    "index": ("int, int",
              """SELECT count(*), max(pb.n), min(pc.c) FROM pa
                 JOIN pb ON pb.id = pa.b
                 JOIN pc ON pc.id = pa.id % $2
                 WHERE pa.id BETWEEN $1 AND $1 + 400 AND delay(pb.b, 0) >= 0""",
              lambda r: (r.randrange(0, 2000), r.randrange(1, 600))),
}

MODES = ("force_custom_plan", "force_generic_plan", "auto")
ROUNDS = 250            # executions of each statement in each mode
CHECKPOINTS = (0, ROUNDS // 2, ROUNDS - 1)


def _session(dsn: str, eddy: bool, mode: str):
    conn = connect(dsn)
    conn.execute("SET jit = off")
    conn.execute(f"SET plan_cache_mode = {mode}")
    # every predicate a selection operator: the parameters' too
    set_gucs(conn, enabled="on" if eddy else "off", join_method="auto", selection_min_cost=0)
    for name, (types, stmt, _) in STATEMENTS.items():
        if name == "index":
            set_gucs(conn, join_method="index")
        conn.execute(f"PREPARE {name} ({types}) AS {stmt}")
        set_gucs(conn, join_method="auto")
    return conn


def _execute_sql(conn, name: str, params: tuple) -> str:
    """EXECUTE name (params), the parameters as literals (EXECUTE itself
    takes no bind parameters)."""
    return sql.SQL("EXECUTE {} ({})").format(
        sql.Identifier(name), sql.SQL(", ").join(map(sql.Literal, params))).as_string(conn)


def _execute(conn, name: str, params: tuple) -> list[tuple]:
    return conn.execute(_execute_sql(conn, name, params)).fetchall()


@pytest.fixture
def pdb(eddy_conn, pg_dsn):
    eddy_conn.execute(SCHEMA)
    return pg_dsn


@pytest.mark.parametrize("mode", MODES)
def test_prepared_statements_thousands_of_executions(pdb, mode):
    """1,000 executions of four prepared eddy statements under ``mode``
    (3,000 over the three modes), each equal to the vanilla session's."""
    rng = random.Random(f"prepared-{mode}")
    eddy = _session(pdb, True, mode)
    vanilla = _session(pdb, False, mode)
    try:
        executions = 0
        nonempty = 0
        mem0 = None
        for i in range(ROUNDS):
            for name, (_, _, draw) in STATEMENTS.items():
                params = draw(rng)
                if i in CHECKPOINTS:
                    plan = explain_json(eddy, _execute_sql(eddy, name, params))
                    assert eddy_nodes(plan), f"{name} under {mode}: no eddy at execution {i}"
                got = _execute(eddy, name, params)
                want = _execute(vanilla, name, params)
                assert got == want, f"{name}{params} under {mode}, execution {i}"
                executions += 1
                nonempty += bool(want and want[0][0])
            if i == 20:
                mem0 = backend_memory(eddy)
        mem1 = backend_memory(eddy)
        assert mem0 is not None
        assert executions == ROUNDS * len(STATEMENTS)
        assert nonempty > executions // 2, "the parameters select too little to compare"
        assert mem1[0] - mem0[0] < 256 * 1024, (mode, mem0, mem1)
        assert mem1[1] - mem0[1] < 4 * 1024, (mode, mem0, mem1)
        plans = {r[0]: (r[1], r[2]) for r in eddy.execute(
            "SELECT name, generic_plans, custom_plans FROM pg_prepared_statements")}
        for name in STATEMENTS:
            generic, custom = plans[name]
            if mode == "force_custom_plan":
                assert generic == 0 and custom >= ROUNDS, (name, plans[name])
            elif mode == "force_generic_plan":
                assert custom == 0 and generic >= 1, (name, plans[name])
            else:
                # auto: five custom plans first, then whichever is cheaper
                assert custom >= 5 and generic + custom >= ROUNDS, (name, plans[name])
        print(f"{mode}: {executions} executions, memory {mem0} -> {mem1}, plans {plans}")
    finally:
        eddy.close()
        vanilla.close()


def test_protocol_level_prepared_statements(pdb):
    """The extended protocol's named prepared statements (psycopg
    prepare=True, plan_cache_mode = auto): 1,000 executions of a join eddy
    with a parameter in a join key, equal to vanilla's."""
    rng = random.Random("protocol")
    _, stmt, draw = STATEMENTS["key"]
    query = stmt.replace("%", "%%").replace("$1", "%(d)s").replace("$2", "%(a)s")
    eddy = connect(pdb)
    vanilla = connect(pdb)
    try:
        for conn in (eddy, vanilla):
            conn.execute("SET jit = off")
            conn.prepare_threshold = 0      # connect() disables preparing
        set_gucs(vanilla, enabled="off")
        assert eddy_nodes(explain_json(eddy, stmt.replace("$1", "2").replace("$2", "10")))
        for i in range(1000):
            d, a = draw(rng)
            got = eddy.execute(query, {"d": d, "a": a}, prepare=True).fetchall()
            assert got == vanilla.execute(query, {"d": d, "a": a}, prepare=True).fetchall(), (d, a)
            if i == 20:
                mem0 = backend_memory(eddy)
        mem1 = backend_memory(eddy)
        assert mem1[0] - mem0[0] < 256 * 1024 and mem1[1] - mem0[1] < 4 * 1024, (mem0, mem1)
        n = sql_value(eddy, "SELECT count(*) FROM pg_prepared_statements "
                            "WHERE NOT from_sql AND generic_plans + custom_plans >= 1000")
        assert n == 1
    finally:
        eddy.close()
        vanilla.close()
