"""Join-eddy memory across rescans: a correlated subquery rescans its eddy
once per outer row, and the eddy's memory must not grow with the number of
rescans (the state is freed and reused, not leaked)."""

from __future__ import annotations

from eddytools.db import eddy_nodes, explain_json, set_gucs


def _peak_kb(conn, outer_rows: int) -> tuple[int, int]:
    plan = explain_json(conn, f"""
        SELECT a.id, (SELECT count(*) FROM mb JOIN mc ON mb.id = mc.bid
                      WHERE mb.aid = a.id)
        FROM ma a WHERE a.id <= {outer_rows}""", analyze=True)
    (eddy,) = eddy_nodes(plan)
    return eddy["Peak Memory"], eddy["Actual Loops"]


def test_rescanned_eddy_memory_does_not_grow(eddy_conn):
    """The peak memory of an eddy rescanned 1,000 times is the same as when
    rescanned 20 times: STAIRs and their bucket arrays are freed at every
    rescan."""
    conn = eddy_conn
    conn.execute("""
        CREATE TABLE ma AS SELECT g AS id FROM generate_series(1, 1000) g;
        CREATE TABLE mb AS SELECT g AS id, g % 1000 AS aid FROM generate_series(1, 5000) g;
        CREATE TABLE mc AS SELECT g AS id, g % 5000 AS bid FROM generate_series(1, 5000) g;
        ANALYZE ma, mb, mc;
    """)
    set_gucs(conn, join_method="hash")
    small, loops_small = _peak_kb(conn, 20)
    large, loops_large = _peak_kb(conn, 1000)
    assert loops_small == 20 and loops_large == 1000
    assert large <= small * 1.5 + 256, (small, large)
