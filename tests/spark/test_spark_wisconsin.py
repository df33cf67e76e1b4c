"""Wisconsin relations loaded through Spark into PostgreSQL: sizes, keys, distributions."""

from __future__ import annotations

import pytest

from .helpers import by_name, rows, scalar


def test_tenk_counts_keys_and_distributions(pg_dsn, load):
    """`tenk` makes tenk1..tenk5 of 10,000 rows with a primary key on unique2, and every
    attribute has DeWitt's distribution: unique1 a permutation of 0..9999, unique2 the
    sequence, two/four/ten/twenty/onepercent/... uniform over their ranges, 244-byte
    tuples; the five tables have different unique1 permutations."""
    report = load(pg_dsn, "tenk")
    tables = [f"tenk{i}" for i in range(1, 6)]
    assert [t.name for t in report.tables] == tables
    assert all(t.status == "loaded" and t.rows == 10_000 for t in report.tables)
    for name in tables:
        assert scalar(pg_dsn, f"SELECT count(*) FROM {name}") == 10_000
        assert rows(pg_dsn, """
            SELECT a.attname FROM pg_index i
              JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
             WHERE i.indrelid = %s::regclass AND i.indisprimary""", (name,)) == [("unique2",)]

    n = 10_000
    stats = rows(pg_dsn, """
        SELECT count(DISTINCT unique1), min(unique1), max(unique1),
               count(DISTINCT unique2), min(unique2), max(unique2),
               bool_and(unique3 = unique1),
               bool_and(evenonepercent = 2 * onepercent),
               bool_and(oddonepercent = 2 * onepercent + 1),
               bool_and(tenpercent = unique1 % 10 AND twentypercent = unique1 % 5
                        AND fiftypercent = unique1 % 2 AND twenty = unique1 % 20),
               min(length(stringu1)), max(length(stringu2)), count(DISTINCT stringu1),
               count(DISTINCT string4)
          FROM tenk1""")[0]
    assert stats == (n, 0, n - 1, n, 0, n - 1, True, True, True, True, 64, 64, n, 4)
    for column, values in (("two", 2), ("four", 4), ("ten", 10), ("twenty", 20),
                           ("onepercent", 100), ("tenpercent", 10), ("twentypercent", 5),
                           ("fiftypercent", 2), ("string4", 4)):
        counts = rows(pg_dsn, f"SELECT {column}, count(*) FROM tenk1 GROUP BY 1")
        assert len(counts) == values, column
        assert {c for _, c in counts} == {n // values}, column
    # rows are sequential in unique2, unique1 is shuffled
    assert scalar(pg_dsn, "SELECT count(*) FROM tenk1 WHERE unique1 = unique2") < 20
    assert scalar(pg_dsn, "SELECT stringu2 FROM tenk1 WHERE unique2 = 27") == "AAAAABB" + "x" * 57
    # different tables, different permutations; a join on unique2 is 1:1
    assert scalar(pg_dsn, "SELECT count(*) FROM tenk1 JOIN tenk2 USING (unique1, unique2)") < 20
    assert scalar(pg_dsn, "SELECT count(*) FROM tenk1 JOIN tenk2 USING (unique2)") == n
    assert len({t.checksum for t in report.tables}) == 5


def test_wisconsin_any_size_width_parts_and_indexes(pg_dsn, load):
    """`wisconsin` makes relations of any row count and tuple width; the content does not
    depend on how the rows are cut into Spark tasks (same checksum and rows for 1 part
    and for 10 parts) nor on --prefix; the seed and the table's own name select the
    unique1 permutation; --index adds indexes."""
    common = ("wisconsin", "--rows", "7001", "--tables", "w", "--tuple-width", "100",
              "--index", "unique1", "--index", "two,four")
    one = by_name(load(pg_dsn, *common, "--prefix", "a_"))
    many = by_name(load(pg_dsn, *common, "--prefix", "b_", "--part-size", "0.1"))
    assert one["a_w"].parts == 1
    assert many["b_w"].parts == 10
    assert one["a_w"].checksum == many["b_w"].checksum
    assert one["a_w"].rows == many["b_w"].rows == 7001
    assert scalar(pg_dsn,
                  "SELECT count(*) FROM (SELECT * FROM a_w EXCEPT SELECT * FROM b_w) d") == 0
    assert scalar(pg_dsn, "SELECT max(length(stringu1) + length(stringu2) + length(string4)) "
                          "FROM a_w") == 100 - 52
    assert rows(pg_dsn, "SELECT indexname FROM pg_indexes WHERE tablename = 'a_w' "
                        "ORDER BY 1") == [("a_w_pkey",), ("a_w_two_four_idx",),
                                          ("a_w_unique1_idx",)]
    seeded = by_name(load(pg_dsn, *common, "--prefix", "c_", "--seed", "42"))
    assert seeded["c_w"].checksum != one["a_w"].checksum
    renamed = by_name(load(pg_dsn, "wisconsin", "--rows", "7001", "--tables", "w2",
                           "--tuple-width", "100"))
    assert renamed["w2"].checksum != one["a_w"].checksum
    assert scalar(pg_dsn, "SELECT count(DISTINCT unique1) FROM c_w") == 7001


@pytest.mark.slow
def test_hundredk(pg_dsn, load):
    """`hundredk` makes hundredk1..hundredk5 of 100,000 rows, unique1 a permutation."""
    report = load(pg_dsn, "hundredk")
    assert [(t.name, t.rows) for t in report.tables] == [
        (f"hundredk{i}", 100_000) for i in range(1, 6)]
    for i in range(1, 6):
        assert rows(pg_dsn, f"SELECT count(DISTINCT unique1), min(unique1), max(unique1), "
                            f"count(DISTINCT onepercent) FROM hundredk{i}") == [
            (100_000, 0, 99_999, 100)]


@pytest.mark.slow
def test_synthetic20(pg_dsn, load):
    """`synthetic20` makes the STAIRs workload's 20 tables: five each of 1k, 10k, 50k and
    100k rows."""
    report = load(pg_dsn, "synthetic20")
    sizes = {t.name: t.rows for t in report.tables}
    assert len(sizes) == 20
    for label, n in (("1k", 1_000), ("10k", 10_000), ("50k", 50_000), ("100k", 100_000)):
        for i in range(1, 6):
            assert sizes[f"syn{label}_{i}"] == n
            assert scalar(pg_dsn, f"SELECT count(*) FROM syn{label}_{i}") == n
