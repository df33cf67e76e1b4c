"""TPC-H through Spark: dbgen's rows, the specification's cardinalities, keys, ordering."""

from __future__ import annotations

import subprocess
import zlib

import psycopg
import pytest

from spark_loader import tpch

from .helpers import by_name, rows, scalar

# TPC-H specification, section 4.2.5 (lineitem as dbgen generates it at these SFs)
SF001 = {"region": 5, "nation": 25, "supplier": 100, "customer": 1_500, "part": 2_000,
         "partsupp": 8_000, "orders": 15_000, "lineitem": 60_175}
SF01 = {"region": 5, "nation": 25, "supplier": 1_000, "customer": 15_000, "part": 20_000,
        "partsupp": 80_000, "orders": 150_000, "lineitem": 600_572}


def dbgen_checksums(sf: str, tmp_path) -> dict[str, str]:
    """CRC-32 of each table's dbgen text (trailing ``|`` removed), from one tpchgen run."""
    tpchgen = tpch.find_tpchgen()
    assert tpchgen is not None, "tpchgen-cli is a dependency of the project"
    subprocess.run([tpchgen, "-s", sf, "-o", str(tmp_path), "--quiet",
                    "--no-progress"], check=True)
    out = {}
    for table in tpch.TABLES:
        data = (tmp_path / f"{table}.tbl").read_bytes().replace(b"|\n", b"\n")
        out[table] = f"{zlib.crc32(data):08x}"
    return out


def check_keys(dsn: str) -> None:
    """Primary keys on every table, an index on every foreign key, no dangling reference."""
    for table, pk in tpch.PRIMARY_KEYS.items():
        cols = rows(dsn, """
            SELECT a.attname FROM pg_index i
              JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
             WHERE i.indrelid = %s::regclass AND i.indisprimary
             ORDER BY array_position(i.indkey, a.attnum)""", (table,))
        assert tuple(c for (c,) in cols) == pk, table
        # a constraint (made from the unique index built beside the others), with the
        # name PostgreSQL would give it
        assert scalar(dsn, "SELECT conname FROM pg_constraint WHERE contype = 'p' "
                           "AND conrelid = %s::regclass", (table,)) == f"{table}_pkey"
    indexed = {tuple(r[0].split(", ")) for r in rows(dsn, """
        SELECT regexp_replace(indexdef, '.*\\((.*)\\)$', '\\1') FROM pg_indexes
         WHERE schemaname = 'public'""")}
    for child, fk_cols, parent, keys in tpch.FOREIGN_KEYS:
        assert any(idx[:len(fk_cols)] == fk_cols for idx in indexed), (child, fk_cols)
        join = " AND ".join(f"p.{k} = c.{c}" for c, k in zip(fk_cols, keys, strict=True))
        dangling = scalar(dsn, f"SELECT count(*) FROM {child} c "
                               f"WHERE NOT EXISTS (SELECT 1 FROM {parent} p WHERE {join})")
        assert dangling == 0, (child, cols, parent)


def test_tpch_sf001(pg_dsn, load, tmp_path):
    """Scale factor 0.01: the specification's row counts; every table's content is
    byte-for-byte dbgen's (its CRC-32 equals that of tpchgen-cli's single-file output,
    although lineitem was generated in 4 parts by different tasks); primary keys,
    foreign-key indexes and referential integrity; lineitem stored in l_shipdate order
    (002 section 5.2); ANALYZE ran."""
    report = load(pg_dsn, "tpch", "--sf", "0.01", "--part-size", "2",
                  "--order-by", "lineitem.l_shipdate")
    result = by_name(report)
    assert {name: t.rows for name, t in result.items()} == SF001
    assert result["lineitem"].parts == 4
    for table, n in SF001.items():
        assert scalar(pg_dsn, f"SELECT count(*) FROM {table}") == n
    assert {name: t.checksum for name, t in result.items()} == dbgen_checksums("0.01", tmp_path)
    check_keys(pg_dsn)
    out_of_order = scalar(pg_dsn, """
        SELECT count(*) FROM (
          SELECT l_shipdate < lag(l_shipdate) OVER (ORDER BY ctid) AS back FROM lineitem) s
         WHERE back""")
    assert out_of_order == 0
    assert scalar(pg_dsn, "SELECT n_name FROM nation WHERE n_nationkey = 0") == "ALGERIA" + " " * 18
    analyzed = scalar(pg_dsn, "SELECT count(*) FROM pg_stats WHERE schemaname = 'public' "
                              "AND tablename = 'lineitem'")
    assert analyzed == 16
    # a table loaded by one task (orders: one part, in a bundle) is written frozen
    # (TRUNCATE + COPY FREEZE in the task's transaction): no hint bits left to set
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")
        flags = conn.execute("""
            SELECT count(*), count(*) FILTER (WHERE t_infomask & 768 = 768)
              FROM generate_series(0, pg_relation_size('orders') / 8192 - 1) AS p,
                   heap_page_items(get_raw_page('orders', p::int))""").fetchone()
    assert flags == (15_000, 15_000)


def test_tpch_subset_and_prefix(pg_dsn, load):
    """--tables loads only the named tables, --prefix renames them; same checksums as
    without a prefix (the content does not depend on names)."""
    a = by_name(load(pg_dsn, "tpch", "--sf", "0.01", "--tables", "nation,region"))
    b = by_name(load(pg_dsn, "tpch", "--sf", "0.01", "--tables", "nation,region",
                     "--prefix", "x_"))
    assert set(a) == {"nation", "region"}
    assert set(b) == {"x_nation", "x_region"}
    assert a["nation"].checksum == b["x_nation"].checksum
    assert scalar(pg_dsn, "SELECT count(*) FROM x_nation JOIN x_region "
                          "ON n_regionkey = r_regionkey") == 25


@pytest.mark.slow
def test_tpch_sf01(pg_dsn, load, tmp_path):
    """Scale factor 0.1: the specification's row counts, dbgen's content, keys."""
    result = by_name(load(pg_dsn, "tpch", "--sf", "0.1", "--part-size", "16"))
    assert {name: t.rows for name, t in result.items()} == SF01
    assert {name: t.checksum for name, t in result.items()} == dbgen_checksums("0.1", tmp_path)
    check_keys(pg_dsn)
