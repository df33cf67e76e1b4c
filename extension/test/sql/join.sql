-- Join eddies: where they apply, their modules, and what EXPLAIN shows
-- (autovacuum off: a vacuum in the middle of the test, as on a slow machine,
-- changes the costs of the plans below; under valgrind it turned the join
-- that must outgrow eddy.max_memory into an index join)
SET max_parallel_workers_per_gather = 0;
CREATE TABLE ja WITH (autovacuum_enabled = off) AS SELECT g AS id, g % 10 AS x, (g % 20)::text AS t,
  CASE WHEN g % 7 = 0 THEN NULL ELSE g % 50 END AS n
FROM generate_series(1, 2000) g;
CREATE TABLE jb WITH (autovacuum_enabled = off) AS SELECT g AS id, g % 50 AS aid, (g % 13)::int8 AS big, g % 3 AS s
FROM generate_series(1, 3000) g;
CREATE TABLE jc WITH (autovacuum_enabled = off) AS SELECT g AS id, g % 30 AS bid, (g % 9)::numeric / 2 AS num
FROM generate_series(1, 500) g;
CREATE INDEX ja_id ON ja (id);
CREATE INDEX jc_id ON jc (id);
ANALYZE ja, jb, jc;

-- EXPLAIN ANALYZE with the memory figure masked (it depends on the platform)
CREATE FUNCTION explain_masked(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE ln text;
BEGIN
  FOR ln IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
    RETURN NEXT regexp_replace(ln, 'Peak Memory: \d+', 'Peak Memory: N');
  END LOOP;
END $$;

-- a two-way equi-join: a symmetric hash join of two dual STAIRs
EXPLAIN (COSTS OFF) SELECT count(*) FROM ja JOIN jb ON ja.x = jb.s;
SELECT count(*) FROM ja JOIN jb ON ja.x = jb.s;

-- PostgreSQL's index nested loop becomes an index join (join_method auto)
EXPLAIN (COSTS OFF)
SELECT count(*) FROM ja JOIN jb ON ja.id = jb.aid JOIN jc ON jc.id = jb.id;
SELECT count(*) FROM ja JOIN jb ON ja.id = jb.aid JOIN jc ON jc.id = jb.id;

-- join_method overrides it
SET eddy.join_method = hash;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM ja JOIN jb ON ja.id = jb.aid JOIN jc ON jc.id = jb.id;
SET eddy.join_method = index;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM ja JOIN jb ON ja.id = jb.aid JOIN jc ON jc.id = jb.id;
SELECT count(*) FROM ja JOIN jb ON ja.id = jb.aid JOIN jc ON jc.id = jb.id;
RESET eddy.join_method;

-- cross-type keys, non-hashable join clauses, clauses over several relations,
-- a cycle, and a cross product
EXPLAIN (COSTS OFF)
SELECT count(*) FROM ja, jb, jc
WHERE ja.x = jb.big AND jb.id = jc.bid AND ja.n::numeric = jc.num AND ja.id < jb.id + jc.id;
SELECT count(*) FROM ja, jb, jc
WHERE ja.x = jb.big AND jb.id = jc.bid AND ja.n::numeric = jc.num AND ja.id < jb.id + jc.id;
EXPLAIN (COSTS OFF) SELECT count(*) FROM ja, jc WHERE ja.x = 1 AND jc.id < 3;
SELECT count(*) FROM ja, jc WHERE ja.x = 1 AND jc.id < 3;

-- a clause over several relations that may raise runs last, on complete
-- tuples, after the predicates that guard it (here jb.s <> 0, so ja.x <> 0)
SET eddy.selection_min_cost = 0;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM ja JOIN jb ON ja.x = jb.s WHERE jb.s <> 0 AND jb.aid / ja.x > 2;
SET eddy.routing_policy = random;
SET eddy.reopt_frequency = 1;
SELECT count(*) FROM ja JOIN jb ON ja.x = jb.s WHERE jb.s <> 0 AND jb.aid / ja.x > 2;
RESET eddy.routing_policy;
RESET eddy.reopt_frequency;
RESET eddy.selection_min_cost;

-- counters (fixed policy: deterministic)
SET eddy.routing_policy = fixed;
SELECT * FROM explain_masked('SELECT count(*) FROM ja JOIN jb ON ja.x = jb.s WHERE jb.id < 100');
RESET eddy.routing_policy;

-- fallbacks, with the reason at DEBUG1
SET client_min_messages = debug1;
EXPLAIN (COSTS OFF) SELECT count(*) FROM ja LEFT JOIN jb ON ja.x = jb.s;
EXPLAIN (COSTS OFF) SELECT count(*) FROM ja WHERE ja.x IN (SELECT s FROM jb);
EXPLAIN (COSTS OFF) SELECT * FROM ja JOIN jb ON ja.id = jb.aid WHERE ja.id = 1 FOR UPDATE;
SET eddy.max_sources = 2;
EXPLAIN (COSTS OFF) SELECT count(*) FROM ja, jb, jc WHERE ja.x = jb.s AND jb.id = jc.bid;
RESET eddy.max_sources;
-- more modules than a done bitmap holds (64)
SET eddy.selection_min_cost = 0;
DO $$
DECLARE
  q text;
  ln text;
  eddy bool := false;
BEGIN
  SELECT 'SELECT count(*) FROM ja JOIN jb ON ja.x = jb.s WHERE '
         || string_agg('ja.id <> ' || g, ' AND ') INTO q
  FROM generate_series(1, 70) g;
  FOR ln IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    eddy := eddy OR ln LIKE '%Eddy%';
  END LOOP;
  RAISE NOTICE 'eddy in the plan of a 70-predicate join: %', eddy;
END $$;
RESET eddy.selection_min_cost;
RESET client_min_messages;

-- the inner-join block under an outer join can still be an eddy in a subquery
EXPLAIN (COSTS OFF)
SELECT count(*) FROM jc LEFT JOIN
  (SELECT jb.id FROM ja JOIN jb ON ja.x = jb.s OFFSET 0) sub ON sub.id = jc.id;
-- and without the subquery: the block has an outer join, and the inner join
-- PostgreSQL makes below it is an eddy (a sub-block), with the same count
SET client_min_messages = debug1;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM jc LEFT JOIN (ja JOIN jb ON ja.x = jb.s) ON jb.id = jc.id;
RESET client_min_messages;
SELECT count(*) FROM jc LEFT JOIN (ja JOIN jb ON ja.x = jb.s) ON jb.id = jc.id;
SET eddy.enabled = off;
SELECT count(*) FROM jc LEFT JOIN (ja JOIN jb ON ja.x = jb.s) ON jb.id = jc.id;
RESET eddy.enabled;

-- the memory limit: a block whose tables stored for certain exceed it keeps
-- the vanilla plan (which batches faster than the eddy spills); one whose
-- estimate exceeds it only on the account of estimates that may run high
-- is an eddy, which spills what outgrows the limit (spill.c)
SET eddy.max_memory = '64kB';
SET client_min_messages = debug1;
EXPLAIN (COSTS OFF) SELECT count(*) FROM ja JOIN jb ON ja.x = jb.s;
-- the estimate counts what the schedule stores: in build order not the
-- relation read last (nothing probes it), interleaved everything
SET eddy.source_schedule = proportional;
EXPLAIN (COSTS OFF) SELECT count(*) FROM ja JOIN jb ON ja.x = jb.s;
RESET eddy.source_schedule;
RESET client_min_messages;
SELECT count(*) FROM ja JOIN jb ON ja.x = jb.s;
-- a block that falls back after choosing its sources (here: PostgreSQL's
-- plan is parallel and a parallel eddy would cost more) leaves PostgreSQL's
-- plan as it was: the scan of ja returns only what the join needs, not the
-- column its restriction reads (the eddy's source would have): the same
-- plan as with eddy off
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET client_min_messages = debug1;
EXPLAIN (VERBOSE, COSTS OFF) SELECT count(*) FROM ja JOIN jb ON ja.x = jb.s WHERE ja.t <> 'x';
RESET client_min_messages;
SET eddy.enabled = off;
EXPLAIN (VERBOSE, COSTS OFF) SELECT count(*) FROM ja JOIN jb ON ja.x = jb.s WHERE ja.t <> 'x';
RESET eddy.enabled;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
CREATE FUNCTION many(n int) RETURNS SETOF int LANGUAGE plpgsql ROWS 10 AS
$$ BEGIN RETURN QUERY SELECT generate_series(1, n); END $$;
-- its state outgrows the limit: it spills, and finishes
SET eddy.max_memory = '2MB';
SELECT count(*) FROM many(300000) m JOIN ja ON ja.id = m;
SET eddy.max_memory = '256MB';
SELECT count(*) FROM many(300000) m JOIN ja ON ja.id = m;
RESET eddy.max_memory;
-- VERBOSE shows the estimate
EXPLAIN (VERBOSE, COSTS OFF) SELECT count(*) FROM ja JOIN jb ON ja.x = jb.s;
DROP FUNCTION many(int);
-- an empty source makes the result empty before anything is stored (found
-- by sqlsmith: the cross product of two relations, joined to a third that
-- its filter leaves empty, outgrew eddy.max_memory where PostgreSQL returns
-- no row): each source is read once, and nothing is routed
SET eddy.max_memory = '1MB';
SELECT * FROM explain_masked('SELECT 1 FROM ja a1, ja a2, jb WHERE jb.id < 0');
SELECT count(*) FROM ja a1, ja a2, jb WHERE jb.id < 0;
RESET eddy.max_memory;

-- unique sides: a probe that finds its match stores nothing; a tuple that
-- passed a selection before its join, and text keys, are stored whole
CREATE TABLE ju1 (id int PRIMARY KEY, t text UNIQUE, v int);
CREATE TABLE ju2 (id int PRIMARY KEY, t text UNIQUE, v int);
INSERT INTO ju1 SELECT g, 'k' || g, g % 7 FROM generate_series(1, 3000) g;
INSERT INTO ju2 SELECT g, 'k' || g, g % 5 FROM generate_series(1, 3000, 2) g;
ANALYZE ju1, ju2;
SET eddy.selection_min_cost = 0;
SET enable_mergejoin = off;
SET enable_nestloop = off;
EXPLAIN (COSTS OFF)
SELECT count(*), sum(ju1.v + ju2.v) FROM ju1 JOIN ju2 ON ju1.id = ju2.id
  JOIN ja ON ja.id = ju1.id WHERE delay(ju2.v, 0) < 4 AND delay(ju1.v, 0) > 1;
SELECT count(*), sum(ju1.v + ju2.v) FROM ju1 JOIN ju2 ON ju1.id = ju2.id
  JOIN ja ON ja.id = ju1.id WHERE delay(ju2.v, 0) < 4 AND delay(ju1.v, 0) > 1;
SELECT count(*), sum(ju1.v + ju2.v) FROM ju1 JOIN ju2 ON ju1.t = ju2.t
  WHERE delay(ju2.v, 0) < 4;
SELECT count(*), sum(ju1.v * ju2.id) FROM ju1 JOIN ju2 ON ju1.id = ju2.id;
SET eddy.enabled = off;
SELECT count(*), sum(ju1.v + ju2.v) FROM ju1 JOIN ju2 ON ju1.id = ju2.id
  JOIN ja ON ja.id = ju1.id WHERE delay(ju2.v, 0) < 4 AND delay(ju1.v, 0) > 1;
SELECT count(*), sum(ju1.v + ju2.v) FROM ju1 JOIN ju2 ON ju1.t = ju2.t
  WHERE delay(ju2.v, 0) < 4;
SELECT count(*), sum(ju1.v * ju2.id) FROM ju1 JOIN ju2 ON ju1.id = ju2.id;
RESET eddy.enabled;
RESET enable_mergejoin;
RESET enable_nestloop;
RESET eddy.selection_min_cost;
DROP TABLE ju1, ju2;

-- an index-joined relation's restrictions keep PostgreSQL's order (by cost,
-- not as written): the division, which may raise, runs after the cheaper
-- LIKE that PostgreSQL runs first and that rejects every row here (found by
-- the randomized differential test; tests/regressions/fuzz-001.json)
CREATE TABLE jd AS SELECT g AS id, g % 5 AS a, 'k' || g AS kt
FROM generate_series(1, 200) g;
CREATE INDEX jd_id ON jd (id);
ANALYZE jd;
SET eddy.join_method = index;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM ja JOIN jd ON jd.id = ja.id WHERE 7 / jd.a > 1 AND jd.kt LIKE 'beta_';
SELECT count(*) FROM ja JOIN jd ON jd.id = ja.id WHERE 7 / jd.a > 1 AND jd.kt LIKE 'beta_';
RESET eddy.join_method;

-- The relation read last returns its heap tuples unprojected (plan_join.c,
-- physical_target), unless the eddy reads a system column of it
SET eddy.join_method = hash;
EXPLAIN (VERBOSE, COSTS OFF) SELECT count(*), sum(jb.big) FROM ja JOIN jb ON ja.id = jb.aid;
SELECT count(*), sum(jb.big) FROM ja JOIN jb ON ja.id = jb.aid;
SELECT count(*) FROM ja t1 JOIN ja t2 ON t1.ctid = t2.ctid;
SELECT count(*), min(t2.tableoid::regclass::text) FROM ja t1 JOIN jb t2 ON t1.id = t2.aid;
SET eddy.enabled = off;
SELECT count(*), sum(jb.big) FROM ja JOIN jb ON ja.id = jb.aid;
SELECT count(*) FROM ja t1 JOIN ja t2 ON t1.ctid = t2.ctid;
RESET eddy.enabled;
RESET eddy.join_method;

DROP FUNCTION explain_masked(text);
DROP TABLE ja, jb, jc, jd;
