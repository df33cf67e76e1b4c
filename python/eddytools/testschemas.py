"""Small join schemas shared by the test suites (tests/test_migration.py,
tests/test_stems.py, tests/test_spill.py).

``PATH_TABLES``: a path r - s - t - u - w with NULL keys (s.rid, r.tk),
cross-type keys (r.id8 is bigint), text keys (tk), and ``dup``, whose three
key values make heavy duplicates.  Each suite adds its own tables and its
``ANALYZE``.
"""

PATH_TABLES = """
CREATE TABLE r AS SELECT g % 300 AS id, g AS v, (g % 300)::bigint AS id8,
       CASE WHEN g % 17 = 0 THEN NULL ELSE 'k' || (g % 50) END AS tk
FROM generate_series(1, 1500) g;
CREATE TABLE s AS SELECT g AS id, CASE WHEN g % 13 = 0 THEN NULL ELSE g % 400 END AS rid,
       (g * 7) % 250 AS tid, 'k' || (g % 60) AS tk
FROM generate_series(1, 3000) g;
CREATE TABLE t AS SELECT g % 250 AS id, g AS v, g % 40 AS uid, 'k' || (g % 45) AS tk
FROM generate_series(1, 1000) g;
CREATE TABLE u AS SELECT g % 40 AS id, g AS w, g % 7 AS wid FROM generate_series(1, 200) g;
CREATE TABLE w AS SELECT g % 7 AS id, g AS x FROM generate_series(1, 30) g;
CREATE TABLE dup AS SELECT g % 3 AS k, g AS v FROM generate_series(1, 300) g;
"""
