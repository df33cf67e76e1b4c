"""Where the planner hook acts: databases with the extension, LOAD for one
session, and eddy.enabled."""

from __future__ import annotations

import psycopg
from pytest_postgresql import factories

from conftest import dsn_of, pg_ctl_path
from eddytools.db import connect, eddy_nodes, explain_json, sql_value

QUERY = "SELECT count(*) FROM t WHERE delay(a, 0) > 1 AND delay(b, 0) > 1"

plain_proc = factories.postgresql_proc(executable=pg_ctl_path(), port=None,
                                       postgres_options="-c fsync=off")
plain = factories.postgresql("plain_proc")


def _make_table(conn: psycopg.Connection) -> None:
    conn.execute("CREATE TABLE t AS SELECT g AS a, g % 7 AS b FROM generate_series(1, 1000) g")
    conn.execute("ANALYZE t")


def test_hook_acts_only_where_the_extension_is_created(pg_dsn):
    """With the library preloaded, a database without CREATE EXTENSION keeps the
    vanilla plan; after CREATE EXTENSION every new session gets eddies; after
    DROP EXTENSION the plans are vanilla again."""
    with connect(pg_dsn) as conn:
        conn.execute("CREATE FUNCTION delay(int, int) RETURNS int LANGUAGE sql "
                     "COST 1000000 AS 'SELECT $1'")
        _make_table(conn)
        assert not eddy_nodes(explain_json(conn, QUERY))
        conn.execute("DROP FUNCTION delay(int, int)")
        conn.execute("CREATE EXTENSION eddy")
    with connect(pg_dsn) as conn:
        assert eddy_nodes(explain_json(conn, QUERY))
        conn.execute("SET eddy.enabled = off")
        assert not eddy_nodes(explain_json(conn, QUERY))
        conn.execute("RESET eddy.enabled")
        assert sql_value(conn, QUERY) == sum(
            1 for a in range(1, 1001) if a > 1 and a % 7 > 1)
        conn.execute("DROP EXTENSION eddy")
        conn.execute("CREATE FUNCTION delay(int, int) RETURNS int LANGUAGE sql "
                     "COST 1000000 AS 'SELECT $1'")
        assert not eddy_nodes(explain_json(conn, QUERY))


def test_load_works_for_one_session(plain):
    """On a server without shared_preload_libraries, LOAD 'eddy' enables the
    hook in that session only; the GUCs exist once it is loaded."""
    dsn = dsn_of(plain)
    with connect(dsn) as conn:
        conn.execute("CREATE EXTENSION eddy")
        _make_table(conn)
    with connect(dsn) as other, \
            connect(dsn) as conn:
        assert not eddy_nodes(explain_json(conn, QUERY))
        conn.execute("LOAD 'eddy'")
        assert sql_value(conn, "SHOW eddy.reopt_frequency") == "100"
        assert eddy_nodes(explain_json(conn, QUERY))
        assert not eddy_nodes(explain_json(other, QUERY))
