"""Small join schemas shared by the test suites (tests/test_migration.py,
tests/test_stems.py, tests/test_spill.py).

``PATH_TABLES``: a path r - s - t - u - w with NULL keys (s.rid, r.tk),
cross-type keys (r.id8 is bigint), text keys (tk), and ``dup``, whose three
key values make heavy duplicates.  Each suite adds its own tables and its
``ANALYZE``.  ``PATH_QUERIES``: named queries over them (``unique`` also
needs ``su``, a copy of s with a unique index on id).
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

PATH_QUERIES = {
    "path3": "SELECT r.v, s.id, t.v FROM r JOIN s ON s.rid = r.id JOIN t ON s.tid = t.id "
             "WHERE r.v % 3 <> 0",
    "path3_selective": "SELECT r.v, s.id, t.v FROM r JOIN s ON s.rid = r.id "
                       "JOIN t ON s.tid = t.id WHERE t.v % 5 <> 1 AND s.id % 4 = 0",
    "path4": "SELECT r.v, t.v, u.w FROM r JOIN s ON s.rid = r.id JOIN t ON s.tid = t.id "
             "JOIN u ON t.uid = u.id WHERE t.v % 5 <> 1",
    "path5": "SELECT count(*), sum(r.v), sum(w.x) FROM r JOIN s ON s.rid = r.id "
             "JOIN t ON s.tid = t.id JOIN u ON t.uid = u.id JOIN w ON u.wid = w.id",
    "star": "SELECT s.id, r.v, t.v, dup.v FROM s JOIN r ON s.rid = r.id JOIN t ON s.tid = t.id "
            "JOIN dup ON dup.k = s.id % 3 WHERE s.id % 11 = 0",
    # unique sides (su.id): a tuple that meets its one partner is not stored
    "unique": "SELECT count(*), sum(r.v) FROM r JOIN su a ON a.id = r.v "
              "JOIN su b ON b.id = a.rid JOIN t ON t.id = b.tid",
    # a selection over three relations, evaluated on intermediate tuples
    "multi_selection": "SELECT r.v, s.id, t.v, u.w FROM r JOIN s ON s.rid = r.id "
                       "JOIN t ON s.tid = t.id JOIN u ON t.uid = u.id "
                       "WHERE r.v + t.v > 700 AND s.id + u.w < 2000",
    "cross_type": "SELECT r.v, s.id, t.v FROM r JOIN s ON s.rid = r.id8 JOIN t ON s.tid = t.id",
    "text_keys": "SELECT r.v, s.id, t.v FROM r JOIN s ON s.tk = r.tk JOIN t ON t.tk = s.tk "
                 "WHERE t.v < 200",
    "duplicates": "SELECT count(*), sum(a.v + b.v + c.v) FROM dup a JOIN dup b ON a.k = b.k "
                  "JOIN dup c ON c.k = b.k",
    "two_keys": "SELECT r.v, s.id, t.v FROM r JOIN s ON s.rid = r.id AND s.tid = r.v % 250 "
                "JOIN t ON s.tid = t.id",
}
