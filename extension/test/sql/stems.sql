-- SteM mode (eddy.state_mode = stems): a join eddy's STAIRs hold base tuples
-- of their own relation only, built when they arrive, never an intermediate
-- result; STAIR mode (the default) stores whatever is routed to a join side.
SET max_parallel_workers_per_gather = 0;
CREATE TABLE sr WITH (autovacuum_enabled = off) AS
  SELECT g % 300 AS id, g AS v FROM generate_series(1, 1500) g;
CREATE TABLE ss WITH (autovacuum_enabled = off) AS
  SELECT g AS id, CASE WHEN g % 13 = 0 THEN NULL ELSE g % 400 END AS rid,
         (g * 7) % 250 AS tid FROM generate_series(1, 3000) g;
CREATE TABLE st WITH (autovacuum_enabled = off) AS
  SELECT g % 250 AS id, g AS v FROM generate_series(1, 1000) g;
CREATE TABLE spk (id int PRIMARY KEY, v int);
INSERT INTO spk SELECT g, g * 3 FROM generate_series(0, 399) g;
ANALYZE sr, ss, st, spk;

CREATE FUNCTION stems_explain(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE ln text;
BEGIN
  FOR ln IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
    RETURN NEXT regexp_replace(ln, 'Peak Memory: \d+', 'Peak Memory: N');
  END LOOP;
END $$;

SHOW eddy.state_mode;
SET eddy.state_mode = stem;
SET eddy.join_method = hash;
SET eddy.routing_policy = fixed;

-- a three-way path read interleaved: STAIR mode stores the results of
-- sr JOIN ss in ss.tid's STAIR (10620 entries for 3000 rows) ...
SET eddy.source_schedule = proportional;
SELECT * FROM stems_explain('SELECT count(*) FROM sr JOIN ss ON ss.rid = sr.id JOIN st ON ss.tid = st.id');
-- ... SteM mode only base rows: each STAIR's Inserted is its relation's rows
-- with a non-NULL key (ss has 230 NULL rid), and intermediate results are
-- made again from them (more tuples routed)
SET eddy.state_mode = stems;
SELECT * FROM stems_explain('SELECT count(*) FROM sr JOIN ss ON ss.rid = sr.id JOIN st ON ss.tid = st.id');
SELECT count(*), sum(sr.v), sum(st.v) FROM sr JOIN ss ON ss.rid = sr.id JOIN st ON ss.tid = st.id;

-- in build order the last source read (ss) is never stored: nothing is left
-- to probe it (Skipped)
SET eddy.source_schedule = build;
SELECT * FROM stems_explain('SELECT count(*) FROM sr JOIN ss ON ss.rid = sr.id JOIN st ON ss.tid = st.id');

-- against a unique side, a row whose one partner is already stored is not
-- built (Skipped): no later spk row can match it
SET eddy.source_schedule = proportional;
SELECT * FROM stems_explain('SELECT count(*) FROM ss JOIN spk ON ss.rid = spk.id');
SELECT count(*) FROM ss JOIN spk ON ss.rid = spk.id;

-- migration has nothing to move in SteM mode
SET eddy.debug_migrate_every = 1;
EXPLAIN (COSTS OFF) SELECT count(*) FROM sr JOIN ss ON ss.rid = sr.id JOIN st ON ss.tid = st.id;
RESET eddy.debug_migrate_every;

-- a hash join whose end is reached through an index join has no base
-- tuples to build: that eddy keeps STAIRs, and says why
SET eddy.join_method = index;
EXPLAIN (COSTS OFF) SELECT count(*) FROM ss JOIN spk ON ss.rid = spk.id JOIN st ON st.id = spk.v % 250;
SELECT count(*) FROM ss JOIN spk ON ss.rid = spk.id JOIN st ON st.id = spk.v % 250;
RESET eddy.join_method;

-- rescanned as a correlated subquery: the state is rebuilt each time
SELECT g, (SELECT count(*) FROM sr JOIN ss ON ss.rid = sr.id JOIN st ON ss.tid = st.id
           WHERE sr.v > g * 300) FROM generate_series(0, 4) g;
SET eddy.enabled = off;
SELECT count(*), sum(sr.v), sum(st.v) FROM sr JOIN ss ON ss.rid = sr.id JOIN st ON ss.tid = st.id;
SELECT count(*) FROM ss JOIN spk ON ss.rid = spk.id JOIN st ON st.id = spk.v % 250;
SELECT g, (SELECT count(*) FROM sr JOIN ss ON ss.rid = sr.id JOIN st ON ss.tid = st.id
           WHERE sr.v > g * 300) FROM generate_series(0, 4) g;
RESET ALL;
