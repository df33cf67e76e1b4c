"""The partitioned R, S, T of the STAIRs paper (002 section 5.4), loaded through Spark."""

from __future__ import annotations

from .helpers import by_name, rows, scalar


def test_rst_partitioned_join_selectivities(pg_dsn, load):
    """Default size: three tables of 50,000 rows of 100 bytes; over the first 25,000 rows
    (by primary key) every S row joins exactly 5 R rows and no T row, over the last
    25,000 every S row joins exactly 5 T rows and no R row; so |R JOIN S| = |S JOIN T| =
    125,000 and R JOIN S JOIN T is empty."""
    report = by_name(load(pg_dsn, "rst"))
    assert {name: t.rows for name, t in report.items()} == {"r": 50_000, "s": 50_000,
                                                              "t": 50_000}
    per_half = rows(pg_dsn, """
        SELECT s.id < 25000 AS first_half,
               min(coalesce(rs.n, 0)), max(coalesce(rs.n, 0)),
               min(coalesce(st.n, 0)), max(coalesce(st.n, 0))
          FROM s
          LEFT JOIN (SELECT a, count(*) AS n FROM r GROUP BY a) rs ON rs.a = s.a
          LEFT JOIN (SELECT b, count(*) AS n FROM t GROUP BY b) st ON st.b = s.b
         GROUP BY 1 ORDER BY 1 DESC""")
    assert per_half == [(True, 5, 5, 0, 0), (False, 0, 0, 5, 5)]
    assert scalar(pg_dsn, "SELECT count(*) FROM r JOIN s ON r.a = s.a") == 125_000
    assert scalar(pg_dsn, "SELECT count(*) FROM s JOIN t ON s.b = t.b") == 125_000
    assert scalar(pg_dsn, "SELECT count(*) FROM r JOIN s ON r.a = s.a "
                          "JOIN t ON s.b = t.b") == 0
    for table in ("r", "s", "t"):
        assert rows(pg_dsn, f"SELECT min(id), max(id), count(DISTINCT id), "
                            f"min(12 + length(pad)), max(12 + length(pad)) FROM {table}") == [
            (0, 49_999, 50_000, 100, 100)]
        assert scalar(pg_dsn, f"SELECT count(*) FROM pg_indexes WHERE tablename = '{table}' "
                              f"AND indexname = '{table}_pkey'") == 1
