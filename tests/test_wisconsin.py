"""The one definition of the Wisconsin columns (``spark_loader.wisconsin``):
its SQL renderings compute what its Python functions compute, and the
benchmark's own tables (``bench_selection.ensure_table``) hold exactly the
rows the Spark loader's generator makes."""

from __future__ import annotations

from eddytools.bench_selection import ensure_table
from spark_loader import wisconsin

KEYS = [0, 1, 2, 25, 26, 27, 99, 100, 675, 676, 9_999, 17_576, 456_976, 12_345_678,
        308_915_776, 2**31 - 1]


def test_sql_formulas_match_python(eddy_conn):
    """For keys around every power of 26 and 100 up to 2**31 - 1, each derived
    attribute (and the alias hundred), unique_string and string4 give the
    same values in PostgreSQL as in Python; the compact test-table string
    and the multiplicative permutation are what their documentation says."""
    attrs = [*wisconsin.DERIVED, wisconsin.attribute("hundred")]
    exprs = [a.sql("k") for a in attrs] + [
        wisconsin.unique_string_sql("k", 64), wisconsin.unique_string_sql("k", 7),
        wisconsin.string4_sql("k", 60), wisconsin.string4_sql("k", 4),
        wisconsin.compact_string_sql("k", 2, 53)]
    keys = ", ".join(map(str, KEYS))   # no parameters: the formulas are full of %
    got = eddy_conn.execute(
        f"SELECT {', '.join(exprs)} FROM unnest(ARRAY[{keys}]) WITH ORDINALITY u(k, n) ORDER BY n"
    ).fetchall()
    for k, row in zip(KEYS, got, strict=True):
        want = [a.value(k) for a in attrs] + [
            wisconsin.unique_string(k, 64), wisconsin.unique_string(k, 7),
            wisconsin.string4(k, 60), wisconsin.string4(k, 4),
            "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[k % 26] + "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[k // 26 % 26]
            + "xx" + str(k % 53)]
        assert list(row) == want, k
    assert wisconsin.attribute("hundred").value(1234) == 34
    perm = wisconsin.multiplicative_permutation_sql("g", 1000)
    values = eddy_conn.execute(f"SELECT {perm} FROM generate_series(0, 999) g").fetchall()
    assert sorted(v for (v,) in values) == list(range(1000))


def test_bench_tables_are_the_loaders_rows(eddy_conn):
    """``ensure_table`` makes the rows ``wisconsin.chunks`` generates for the
    same name (what the Spark loader loads), with DeWitt's column types and a
    primary key on unique2; run again, it keeps the table."""
    n = 3001
    ensure_table(eddy_conn, "tenk9", n)
    params = {"rows": n, "seed": 0, "label": "tenk9", "width": wisconsin.DEFAULT_WIDTH}
    text = b"".join(wisconsin.chunks(params, 0, n)).decode()
    want = [tuple(int(v) if i < wisconsin.INT_COLUMNS else v
                  for i, v in enumerate(line.split("\t")))
            for line in text.splitlines()]
    got = eddy_conn.execute("SELECT * FROM tenk9 ORDER BY unique2").fetchall()
    assert got == want
    assert [d.name for d in eddy_conn.execute("SELECT * FROM tenk9 LIMIT 0").description] == \
        list(wisconsin.COLUMNS)
    oid = eddy_conn.execute("SELECT 'tenk9'::regclass::oid").fetchone()[0]
    ensure_table(eddy_conn, "tenk9", n)
    assert eddy_conn.execute("SELECT 'tenk9'::regclass::oid").fetchone()[0] == oid
    assert eddy_conn.execute(
        "SELECT count(*) FROM pg_index WHERE indrelid = 'tenk9'::regclass AND indisprimary"
    ).fetchone()[0] == 1
