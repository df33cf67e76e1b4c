-- Where the eddy replaces a single-relation block, and what EXPLAIN shows
SET max_parallel_workers_per_gather = 0;
CREATE TABLE wisc AS
SELECT g AS unique2, (g * 7919) % 10000 AS unique1, g % 2 AS two, g % 4 AS four,
       g % 10 AS ten, g % 20 AS twenty,
       CASE WHEN g % 5 = 0 THEN NULL ELSE g % 100 END AS onepercent_n,
       'AAAA' || (g % 26)::text AS stringu1
FROM generate_series(0, 9999) g;
CREATE INDEX wisc_unique2 ON wisc (unique2);
ANALYZE wisc;

-- cheap predicates stay on the scan (default eddy.selection_min_cost)
EXPLAIN (COSTS OFF) SELECT count(*) FROM wisc WHERE two < 1 AND four < 2;

-- expensive predicates become selection operators
EXPLAIN (COSTS OFF)
SELECT count(*) FROM wisc WHERE delay(two, 0) = 0 AND delay(four, 0) < 2;

-- a cheap predicate stays on the scan, the expensive ones are routed
EXPLAIN (COSTS OFF)
SELECT count(*) FROM wisc
WHERE delay(two, 0) = 0 AND ten < 5 AND delay(four, 0) < 2 AND delay(ten, 0) > 1;

-- selection_min_cost = 0: every predicate is a selection operator
SET eddy.selection_min_cost = 0;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM wisc WHERE two < 2 AND four < 4 AND ten < 10;

-- the source is the scan PostgreSQL chose: an index qual stays in the index
EXPLAIN (COSTS OFF)
SELECT unique2 FROM wisc WHERE unique2 < 100 AND two = 0 AND four < 2 ORDER BY unique2;

-- a predicate that may raise an error waits for the ones PostgreSQL ran first
EXPLAIN (COSTS OFF)
SELECT count(*) FROM wisc WHERE ten <> 0 AND 100 / ten > 20 AND four < 2;
SELECT count(*) FROM wisc WHERE ten <> 0 AND 100 / ten > 20 AND four < 2;

-- VERBOSE and the JSON format
EXPLAIN (COSTS OFF, VERBOSE)
SELECT unique1, stringu1 FROM wisc WHERE two = 1 AND stringu1 LIKE 'AAAA1%';
EXPLAIN (COSTS OFF, FORMAT JSON)
SELECT count(*) FROM wisc WHERE two = 1 AND four = 1;

-- EXPLAIN ANALYZE counters (fixed policy: deterministic)
SET eddy.routing_policy = fixed;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT count(*) FROM wisc WHERE two = 0 AND four < 2 AND ten < 5;
SET eddy.reopt_frequency = 1000;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, VERBOSE)
SELECT count(*) FROM wisc WHERE two = 0 AND four < 2 AND ten < 5;
RESET eddy.reopt_frequency;
RESET eddy.routing_policy;

-- the lottery with a window says so
SET eddy.routing_policy = lottery;
SET eddy.lottery_window = 500;
EXPLAIN (COSTS OFF) SELECT count(*) FROM wisc WHERE two = 0 AND four < 2;
RESET eddy.lottery_window;
RESET eddy.routing_policy;

-- eddies at several query levels
EXPLAIN (COSTS OFF)
SELECT w.ten, (SELECT count(*) FROM wisc i WHERE i.two = 0 AND i.ten < w.ten)
FROM wisc w WHERE w.unique2 < 3 AND w.four < 4 AND w.twenty < 20;
EXPLAIN (COSTS OFF)
WITH c AS MATERIALIZED (SELECT * FROM wisc WHERE two = 0 AND four = 0)
SELECT count(*) FROM c UNION ALL
SELECT count(*) FROM wisc WHERE ten = 1 AND twenty = 1;

-- fallbacks: the vanilla plan, with the reason at DEBUG1
SET client_min_messages = debug1;
EXPLAIN (COSTS OFF) SELECT * FROM wisc WHERE two = 0 AND four = 0 FOR UPDATE;
EXPLAIN (COSTS OFF) UPDATE wisc SET twenty = twenty WHERE two = 9 AND four = 9;
EXPLAIN (COSTS OFF) DELETE FROM wisc WHERE two = 9 AND four = 9;
EXPLAIN (COSTS OFF) SELECT count(*) FROM wisc WHERE two = 0;
CREATE TABLE parted (k int, v int) PARTITION BY RANGE (k);
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (0) TO (10);
EXPLAIN (COSTS OFF) SELECT * FROM parted WHERE k = 1 AND v = 1;
-- an index that enforces the predicates leaves nothing to route
EXPLAIN (COSTS OFF) SELECT count(*) FROM wisc WHERE unique2 < 100 AND unique2 > 5;
RESET client_min_messages;

-- a join block is a join eddy (join.sql); its restrictions are routed too
EXPLAIN (COSTS OFF)
SELECT count(*) FROM wisc a JOIN wisc b ON a.unique1 = b.unique2 WHERE a.two = 0 AND a.four = 0;

-- eddy.enabled = off gives the vanilla plan
SET eddy.enabled = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM wisc WHERE two < 2 AND four < 4;
RESET eddy.enabled;

DROP TABLE wisc, parted;
