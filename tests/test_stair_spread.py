"""A STAIR left to probes is spread (stair.c, StairSpreadForProbes): once
the sources that fed it are exhausted, a small STAIR gets eight slots per
hash group, up to 16,384 slots, so that a probe which finds nothing reads
one slot (TPC-H Q17: part's 204-row STAIR probed six million times), as
far as eddy.max_memory leaves room.
Read from EXPLAIN ANALYZE's "Hash Slots" per STAIR (JSON), never from
time; every answer is PostgreSQL's."""

from __future__ import annotations

import pytest

from eddytools.db import explain_eddy, multiset, set_gucs, vanilla_multiset

FACT_ROWS = 60000


@pytest.fixture
def sp(eddy_conn):
    conn = eddy_conn
    conn.execute(f"""
        CREATE TABLE spf AS
            SELECT g AS id, (g * 7919) % 10000 AS k, g % 10 AS v
            FROM generate_series(1, {FACT_ROWS}) g;
        CREATE TABLE spd AS
            SELECT g AS id, g % 50 AS c, g % 250 AS c2, g % 2 AS c3
            FROM generate_series(0, 9999) g;
        ANALYZE spf, spd;
    """)
    set_gucs(conn, join_method="hash", pg__max_parallel_workers_per_gather=0)
    return conn


def query(filter_: str) -> str:
    return f"SELECT count(*), sum(f.v) FROM spf f JOIN spd d ON d.id = f.k WHERE {filter_}"


def stairs_of(eddy: dict) -> dict[str, dict]:
    (op,) = [op for op in eddy["Operators"] if op["Operator Type"] == "Hash Join"]
    return {st["STAIR"]: st for st in op["STAIRs"]}


@pytest.mark.parametrize("filter_, groups, slots", [
    ("d.c = 0", 200, 2048),         # 8 a group: 1,600, rounded up
    ("d.c2 = 0", 40, 512),          # already sparse: the initial 512 stay
    ("d.c3 = 0", 5000, 16384),      # the cap
])
def test_the_build_side_is_spread_once_read(sp, filter_, groups, slots):
    q = query(filter_)
    want = vanilla_multiset(sp, q)
    eddy = explain_eddy(sp, q, source_schedule="build")
    st = stairs_of(eddy)
    assert st["d.id"]["Inserted"] == groups, st
    assert st["d.id"]["Probed"] == FACT_ROWS, st
    assert st["d.id"]["Hash Slots"] == slots, st
    # the fact side stored nothing, and its STAIR kept its initial slots
    assert st["f.k"]["Inserted"] == 0 and st["f.k"]["Hash Slots"] == 512, st
    assert multiset(sp.execute(q).fetchall()) == want


def test_interleaved_sources_spread_when_the_build_side_ends(sp):
    """Under the proportional schedule both sides store while both are read.
    With the dimension read ten times as fast as its size says, it ends
    early: from then on its STAIR is left to probes, and spread, while the
    fact's tuples stop being stored."""
    q = query("d.c = 0")
    want = vanilla_multiset(sp, q)
    eddy = explain_eddy(sp, q, source_schedule="proportional", source_rates="d=10")
    st = stairs_of(eddy)
    assert st["d.id"]["Inserted"] == 200 and st["d.id"]["Hash Slots"] == 2048, st
    assert 0 < st["f.k"]["Inserted"] < FACT_ROWS / 2, st
    assert multiset(sp.execute(q).fetchall()) == want


def test_no_spreading_past_max_memory(sp):
    """The slots a spread adds count against eddy.max_memory: with no room
    left, the STAIR keeps its slots (and the eddy does not spill for it)."""
    q = query("d.c = 0")
    want = vanilla_multiset(sp, q)
    eddy = explain_eddy(sp, q, source_schedule="build", max_memory="64kB")
    st = stairs_of(eddy)
    assert st["d.id"]["Inserted"] == 200 and st["d.id"]["Hash Slots"] == 512, st
    assert multiset(sp.execute(q).fetchall()) == want
