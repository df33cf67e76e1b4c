-- The hybrid index/hash join (eddy.join_method = hybrid, mod_hybrid.c): a
-- leaf relation with an index on the join key is reached by its scan and
-- its index into one SteM; probes of a key the index fetched are answered
-- from the SteM (the index cache), and with every probe answered by index
-- the relation's scan ends early.  Results are PostgreSQL's.
SET max_parallel_workers_per_gather = 0;
CREATE TABLE hy_r (id int, a int);
CREATE TABLE hy_t (x int, pay text);
INSERT INTO hy_r SELECT g, CASE WHEN g % 50 = 0 THEN NULL ELSE g % 25 END
  FROM generate_series(1, 200) g;
INSERT INTO hy_t SELECT g % 40, 'p' || g FROM generate_series(1, 400) g;
CREATE INDEX hy_t_x ON hy_t (x);
ANALYZE hy_r, hy_t;

SET eddy.join_method = hybrid;
EXPLAIN (COSTS OFF)
SELECT count(*), sum(length(pay)) FROM hy_r JOIN hy_t ON hy_r.a = hy_t.x;
SELECT count(*), sum(length(pay)) FROM hy_r JOIN hy_t ON hy_r.a = hy_t.x;

-- every miss to the index: 25 lookups, the other 171 probes from the cache,
-- hy_t held back until it is cut
SET eddy.hybrid_route = index;
SET eddy.source_delays = 'hy_t=100';
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT count(*), sum(length(pay)) FROM hy_r JOIN hy_t ON hy_r.a = hy_t.x;
SELECT count(*), sum(length(pay)) FROM hy_r JOIN hy_t ON hy_r.a = hy_t.x;
RESET eddy.source_delays;

-- both routes, the scan read to its end
SET eddy.hybrid_route = random;
SELECT count(*), sum(length(pay)) FROM hy_r JOIN hy_t ON hy_r.a = hy_t.x;
RESET eddy.hybrid_route;

-- keys of two types: not offered (a hash join)
EXPLAIN (COSTS OFF)
SELECT count(*) FROM hy_r JOIN hy_t ON hy_r.a::int8 = hy_t.x;
RESET eddy.join_method;
SET eddy.enabled = off;
SELECT count(*), sum(length(pay)) FROM hy_r JOIN hy_t ON hy_r.a = hy_t.x;
RESET eddy.enabled;
DROP TABLE hy_r, hy_t;
