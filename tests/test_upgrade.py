"""ALTER EXTENSION eddy UPDATE from 0.1 (extension/sql/eddy--0.1--0.2.sql),
as db.ensure_eddy runs it: delay_phased came in while the version was still
0.1, so a database whose extension was created before it lacked the
function, and the benchmarks' own servers (kept between runs) failed on it.
An older 0.1 is made here from a new one: the function taken out of the
extension and dropped, the version set back (both as a superuser may)."""

from __future__ import annotations

import pytest

from eddytools.db import connect, ensure_eddy, sql_value

SIGNATURE = "delay_phased(integer,integer,integer,integer,integer)"


def member(conn) -> bool:
    return bool(sql_value(conn, f"""
        SELECT count(*) FROM pg_depend d JOIN pg_extension e ON d.refobjid = e.oid
        WHERE e.extname = 'eddy' AND d.deptype = 'e'
          AND d.classid = 'pg_proc'::regclass
          AND d.objid = to_regprocedure('{SIGNATURE}')"""))


@pytest.mark.parametrize("had_it", [False, True], ids=["without", "with"])
def test_update_from_0_1(pg_dsn, had_it):
    with connect(pg_dsn) as conn:
        ensure_eddy(conn)
        assert sql_value(conn, "SELECT extversion FROM pg_extension "
                               "WHERE extname = 'eddy'") == "0.2"
        if not had_it:
            conn.execute(f"ALTER EXTENSION eddy DROP FUNCTION {SIGNATURE}")
            conn.execute(f"DROP FUNCTION {SIGNATURE}")
            assert sql_value(conn, f"SELECT to_regprocedure('{SIGNATURE}')") is None
        conn.execute("UPDATE pg_extension SET extversion = '0.1' WHERE extname = 'eddy'")
        ensure_eddy(conn)
        assert sql_value(conn, "SELECT extversion FROM pg_extension "
                               "WHERE extname = 'eddy'") == "0.2"
        assert member(conn)
        assert sql_value(conn, "SELECT delay_phased(7, 3, 0, 1, 2)") == 7
        # and ensure_eddy again is a no-op
        ensure_eddy(conn)
        assert member(conn)
