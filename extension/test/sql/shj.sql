-- The static symmetric hash join: with eddy.enabled = off and
-- eddy.static_shj = on, Custom Scan (Symmetric Hash Join) replaces every
-- inner Hash Join and returns the same rows.
SET max_parallel_workers_per_gather = 0;
SET eddy.enabled = off;

CREATE TABLE shj_a AS
SELECT g AS id, g % 50 AS k, (g % 50)::int8 AS k8,
       CASE WHEN g % 7 = 0 THEN NULL ELSE g % 40 END AS kn,
       'v' || (g % 30) AS s
FROM generate_series(1, 2000) g;
CREATE TABLE shj_b AS
SELECT g AS id, g % 60 AS k, (g % 60)::int8 AS k8,
       CASE WHEN g % 5 = 0 THEN NULL ELSE g % 40 END AS kn,
       'V' || (g % 20) AS s
FROM generate_series(1, 1500) g;
CREATE TABLE shj_c AS
SELECT g AS id, g % 45 AS k, 'c' || g AS s FROM generate_series(1, 1000) g;
CREATE TABLE shj_d AS
SELECT g AS id, g % 30 AS k FROM generate_series(1, 800) g;
CREATE TABLE shj_e AS
SELECT g AS id, g % 20 AS k FROM generate_series(1, 600) g;
ANALYZE shj_a, shj_b, shj_c, shj_d, shj_e;

-- Plan shapes: Hash Join by default, the custom scan with static_shj = on
EXPLAIN (COSTS OFF) SELECT count(*) FROM shj_a a JOIN shj_b b ON a.k = b.k;
SET eddy.static_shj = on;
EXPLAIN (COSTS OFF) SELECT count(*) FROM shj_a a JOIN shj_b b ON a.k = b.k;
-- the plan is PostgreSQL's, each Hash Join swapped; no Hash node below
EXPLAIN (COSTS OFF)
SELECT a.s, b.s, c.s FROM shj_a a JOIN shj_b b ON a.k = b.k AND a.id < b.id
JOIN shj_c c ON c.k = b.k8 WHERE c.id < 500;
-- VERBOSE: outputs, and both sides' columns in the join's scan tuple
EXPLAIN (COSTS OFF, VERBOSE)
SELECT a.id + b.id, upper(b.s) FROM shj_a a JOIN shj_b b ON a.k = b.k8 AND a.s <> b.s;
-- other join types keep their Hash Join; inner joins below them do not
EXPLAIN (COSTS OFF)
SELECT count(*) FROM shj_a a LEFT JOIN (shj_b b JOIN shj_c c ON b.id = c.id) ON a.k = b.k;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM shj_a a WHERE EXISTS (SELECT 1 FROM shj_b b WHERE b.id = a.id);
-- eddy.static_shj = off gives PostgreSQL's plan back
SET eddy.static_shj = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM shj_a a JOIN shj_b b ON a.k = b.k;
SET eddy.static_shj = on;

-- A join with a pseudoconstant clause keeps its Hash Join: PostgreSQL does
-- not call join hooks for such joins (it could not place the gating Result)
EXPLAIN (COSTS OFF)
SELECT count(*) FROM shj_a a JOIN shj_b b ON a.k = b.k
WHERE current_setting('eddy.static_shj') = 'on';

-- Not in a database where the extension is not created
SELECT current_database() AS shj_regress_db \gset
CREATE DATABASE shj_regress_noext;
\c shj_regress_noext
SET max_parallel_workers_per_gather = 0;
SET eddy.enabled = off;
SET eddy.static_shj = on;
CREATE TABLE t1 AS SELECT g AS k FROM generate_series(1, 1000) g;
CREATE TABLE t2 AS SELECT g AS k FROM generate_series(1, 1000) g;
ANALYZE t1, t2;
EXPLAIN (COSTS OFF) SELECT count(*) FROM t1 JOIN t2 ON t1.k = t2.k;
\c :shj_regress_db
DROP DATABASE shj_regress_noext;
SET max_parallel_workers_per_gather = 0;
SET eddy.enabled = off;

-- Results.  shj_check runs a query with static_shj off, then on, and
-- reports its rows, the inner Hash Joins of the vanilla plan, the Symmetric
-- Hash Joins and remaining Hash Joins of the other plan, and the rows (as
-- text, so that -0 and 0 or 1.0 and 1.00 differ) missing from or extra in
-- the symmetric hash join's result.
CREATE FUNCTION shj_check(query text,
						  OUT nrows bigint, OUT hash_joins int, OUT shjs int,
						  OUT hash_joins_left int, OUT missing bigint,
						  OUT extra bigint)
LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	hash_joins := 0;
	shjs := 0;
	hash_joins_left := 0;
	PERFORM set_config('eddy.static_shj', 'off', true);
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		IF line ~ '(^|->  )Hash Join' THEN hash_joins := hash_joins + 1; END IF;
	END LOOP;
	EXECUTE format('CREATE TEMP TABLE shj_off AS SELECT t::text AS r FROM (%s) t', query);
	PERFORM set_config('eddy.static_shj', 'on', true);
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		IF line ~ 'Custom Scan \(Symmetric Hash Join\)' THEN shjs := shjs + 1; END IF;
		IF line ~ '(^|->  )Hash Join' THEN hash_joins_left := hash_joins_left + 1; END IF;
	END LOOP;
	EXECUTE format('CREATE TEMP TABLE shj_on AS SELECT t::text AS r FROM (%s) t', query);
	SELECT count(*) INTO nrows FROM shj_on;
	SELECT count(*) INTO missing FROM (SELECT r FROM shj_off EXCEPT ALL SELECT r FROM shj_on) d;
	SELECT count(*) INTO extra FROM (SELECT r FROM shj_on EXCEPT ALL SELECT r FROM shj_off) d;
	DROP TABLE shj_off, shj_on;
END
$$;

-- hash joins only, so that every join below is one
SET enable_nestloop = off;
SET enable_mergejoin = off;

-- plain, cross-type (int4 = int8) and NULL keys
SELECT * FROM shj_check('SELECT a.id, b.id FROM shj_a a JOIN shj_b b ON a.k = b.k');
SELECT * FROM shj_check('SELECT a.id, b.id FROM shj_a a JOIN shj_b b ON a.k = b.k8');
SELECT * FROM shj_check('SELECT a.id, b.id FROM shj_a a JOIN shj_b b ON a.k8 = b.k');
SELECT * FROM shj_check('SELECT a.kn, b.kn FROM shj_a a JOIN shj_b b ON a.kn = b.kn');
SELECT count(*) FILTER (WHERE kn IS NULL) AS null_keys FROM shj_a;
-- multi-key, and keys with extra (non-hash) join quals
SELECT * FROM shj_check('SELECT a.*, b.* FROM shj_a a JOIN shj_b b ON a.k = b.k AND a.kn = b.kn');
SELECT * FROM shj_check('SELECT a.id, b.id FROM shj_a a JOIN shj_b b ON a.k = b.k AND a.id < b.id');
SELECT * FROM shj_check('SELECT a.id, b.id FROM shj_a a JOIN shj_b b ON a.k = b.k AND (a.id + b.id) % 7 = 0 AND a.s < b.s');
-- computed keys, by value and by reference
SELECT * FROM shj_check('SELECT a.id, b.id FROM shj_a a JOIN shj_b b ON a.k + 10 = b.k * 2');
SELECT * FROM shj_check('SELECT a.s, b.s FROM shj_a a JOIN shj_b b ON upper(a.s) = b.s');
SELECT * FROM shj_check('SELECT a.s, b.s FROM shj_a a JOIN shj_b b ON a.s || ''x'' = lower(b.s) || ''x'' AND a.k = b.k');
-- 3, 4 and 5-way joins
SELECT * FROM shj_check('SELECT a.id, b.id, c.id FROM shj_a a JOIN shj_b b ON a.k = b.k JOIN shj_c c ON c.k = b.kn WHERE c.id < 300');
SELECT * FROM shj_check('SELECT a.id, b.s, c.s, d.id FROM shj_a a JOIN shj_b b ON a.kn = b.kn JOIN shj_c c ON c.id = a.id JOIN shj_d d ON d.id = b.id');
SELECT * FROM shj_check('SELECT a.id, b.id, c.id, d.id, e.id FROM shj_a a JOIN shj_b b ON a.id = b.id JOIN shj_c c ON c.id = b.id JOIN shj_d d ON d.id = c.id JOIN shj_e e ON e.id = d.id');
SELECT * FROM shj_check('SELECT count(*), sum(a.id + b.id + c.id + d.id + e.id) FROM shj_a a JOIN shj_b b ON a.k = b.k JOIN shj_c c ON c.k = b.k AND c.id < 60 JOIN shj_d d ON d.id = a.id JOIN shj_e e ON e.k = d.k AND e.id < 40');

-- numeric: 1.0 = 1.00 = 1 (and each row keeps its own scale), NaN = NaN
CREATE TABLE shj_num1 (v numeric);
CREATE TABLE shj_num2 (v numeric);
INSERT INTO shj_num1 VALUES ('1.0'), ('1.00'), ('2.5'), ('NaN'), (NULL), ('0'), ('-0.000'), ('1e3');
INSERT INTO shj_num2 VALUES ('1'), ('1.000'), ('2.50'), ('NaN'), (NULL), ('0.0'), ('1000.0');
SELECT * FROM shj_check('SELECT x.v, y.v FROM shj_num1 x JOIN shj_num2 y ON x.v = y.v');
SET eddy.static_shj = on;
SELECT x.v, y.v FROM shj_num1 x JOIN shj_num2 y ON x.v = y.v ORDER BY x.v::text, y.v::text;

-- float: -0 = 0, NaN = NaN, infinities, float4 = float8
CREATE TABLE shj_f8 (v float8);
CREATE TABLE shj_f4 (v float4);
INSERT INTO shj_f8 VALUES ('0'), ('-0'), ('NaN'), ('Infinity'), ('-Infinity'), ('1.5'), (NULL), ('0.1');
INSERT INTO shj_f4 VALUES ('-0'), ('0'), ('NaN'), ('NaN'), ('Infinity'), ('1.5'), (NULL), ('0.1');
SELECT * FROM shj_check('SELECT x.v, y.v FROM shj_f8 x JOIN shj_f8 y ON x.v = y.v');
SELECT * FROM shj_check('SELECT x.v, y.v FROM shj_f8 x JOIN shj_f4 y ON x.v = y.v');
SELECT x.v, y.v FROM shj_f8 x JOIN shj_f4 y ON x.v = y.v ORDER BY x.v::text, y.v::text;

-- text keys under collations: "C", the database default, and a
-- nondeterministic (case-insensitive) ICU collation
CREATE TABLE shj_t1 (v text);
CREATE TABLE shj_t2 (v text);
INSERT INTO shj_t1 VALUES ('abc'), ('ABC'), ('Abc'), ('b'), ('B'), ('é'), ('É'), (NULL), ('');
INSERT INTO shj_t2 VALUES ('abc'), ('aBc'), ('b'), ('É'), ('e'), (NULL), ('');
CREATE COLLATION shj_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
SELECT * FROM shj_check('SELECT x.v, y.v FROM shj_t1 x JOIN shj_t2 y ON x.v = y.v COLLATE "C"');
SELECT * FROM shj_check('SELECT x.v, y.v FROM shj_t1 x JOIN shj_t2 y ON x.v = y.v');
SELECT * FROM shj_check('SELECT x.v, y.v FROM shj_t1 x JOIN shj_t2 y ON x.v = y.v COLLATE shj_ci');
SELECT x.v, y.v FROM shj_t1 x JOIN shj_t2 y ON x.v = y.v COLLATE shj_ci
ORDER BY x.v COLLATE "C", y.v COLLATE "C";

-- heavy duplicates and skew: one key on 40% of each side
CREATE TABLE shj_skew1 AS
SELECT g AS id, CASE WHEN g % 5 < 2 THEN 0 ELSE g END AS k FROM generate_series(1, 1000) g;
CREATE TABLE shj_skew2 AS
SELECT g AS id, CASE WHEN g % 5 < 2 THEN 0 ELSE g * 2 END AS k FROM generate_series(1, 800) g;
ANALYZE shj_skew1, shj_skew2;
SELECT * FROM shj_check('SELECT x.id, y.id FROM shj_skew1 x JOIN shj_skew2 y ON x.k = y.k');
SELECT * FROM shj_check('SELECT x.id, y.id FROM shj_skew1 x JOIN shj_skew2 y ON x.k = y.k AND x.id % 10 = y.id % 10');

-- wide rows: toasted (external and compressed) values copied into the join
CREATE TABLE shj_wide AS
SELECT g AS id, g % 10 AS k,
	   (SELECT string_agg(md5((g * 1000 + i)::text), '') FROM generate_series(1, 100) i) AS ext,
	   repeat('z', 5000 + g) AS comp,
	   ARRAY[g, g + 1, g + 2] AS arr, jsonb_build_object('g', g) AS j
FROM generate_series(1, 60) g;
ANALYZE shj_wide;
SELECT * FROM shj_check('SELECT x.id, y.id, md5(x.ext), length(y.comp), x.arr, y.j FROM shj_wide x JOIN shj_wide y ON x.k = y.k');
SELECT * FROM shj_check('SELECT x.id, y.id FROM shj_wide x JOIN shj_wide y ON x.ext = y.ext AND x.arr = y.arr');

RESET enable_nestloop;
RESET enable_mergejoin;

-- EXPLAIN ANALYZE, its memory line masked (the size depends on the platform)
CREATE FUNCTION shj_explain(query text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || query LOOP
		RETURN NEXT regexp_replace(line, 'Memory: \d+ kB', 'Memory: N kB');
	END LOOP;
END
$$;
-- Rescans.  A correlated subquery whose plan holds the join: rescanned
-- with a new parameter value for each outer row
SET eddy.static_shj = on;
EXPLAIN (COSTS OFF)
SELECT e.id, (SELECT count(*) FROM shj_a a JOIN shj_b b ON a.k = b.k WHERE a.id % 20 = e.k)
FROM shj_e e WHERE e.id <= 5;
SELECT * FROM shj_check('SELECT e.id, (SELECT count(*) FROM shj_a a JOIN shj_b b ON a.k = b.k WHERE a.id % 20 = e.k) FROM shj_e e WHERE e.id <= 25');
-- the inner side of a nested loop: rescanned without parameter changes
SET enable_material = off;
SET join_collapse_limit = 1;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM shj_e e JOIN (shj_a a JOIN shj_b b ON a.id = b.id) ON e.k < a.k
WHERE e.id < 10;
SELECT * FROM shj_check('SELECT e.id, a.id, b.id FROM shj_e e JOIN (shj_a a JOIN shj_b b ON a.id = b.id) ON e.k < a.k WHERE e.id < 10');
SELECT shj_explain('SELECT count(*) FROM shj_e e JOIN (shj_a a JOIN shj_b b ON a.id = b.id) ON e.k < a.k WHERE e.id < 4');
RESET join_collapse_limit;
RESET enable_material;
-- a scrollable cursor: the planner puts a Material above the join
BEGIN;
EXPLAIN (COSTS OFF) DECLARE c SCROLL CURSOR FOR
SELECT a.id, b.id FROM shj_a a JOIN shj_b b ON a.id = b.id;
DECLARE c SCROLL CURSOR FOR SELECT a.id, b.id FROM shj_a a JOIN shj_b b ON a.id = b.id;
FETCH 2 FROM c;
FETCH BACKWARD 1 FROM c;
FETCH LAST FROM c;
COMMIT;

-- EXPLAIN ANALYZE: per side, tuples inserted into its STAIR, tuples that
-- probed the other one and the matches they found.  The inner side is read
-- first; once a side ends, the other stops storing its tuples.
SELECT shj_explain('SELECT count(*) FROM shj_a a JOIN shj_b b ON a.k = b.k AND a.id < b.id');
-- NULL keys neither probe nor are stored
SELECT shj_explain('SELECT count(*) FROM shj_a a JOIN shj_b b ON a.kn = b.kn');
-- inner-unique joins: an outer tuple that found its match is not stored
CREATE UNIQUE INDEX ON shj_c (id);
ANALYZE shj_c;
SELECT shj_explain('SELECT count(*) FROM shj_a a JOIN shj_c c ON a.id = c.id');
-- an empty side ends the join early
SELECT shj_explain('SELECT count(*) FROM shj_a a JOIN shj_b b ON a.k = b.k AND b.id < 0');
-- loops: counters are totals
SELECT shj_explain('SELECT e.id, (SELECT count(*) FROM shj_a a JOIN shj_b b ON a.k = b.k WHERE a.id % 20 = e.k) FROM shj_e e WHERE e.id <= 3');

-- Memory: past eddy.max_memory the query ends with an error naming it
SET eddy.max_memory = '64kB';
DO $$
DECLARE
	msg text;
	hint text;
BEGIN
	PERFORM count(*) FROM shj_a a JOIN shj_b b ON a.id = b.id;
EXCEPTION WHEN program_limit_exceeded THEN
	GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, hint = PG_EXCEPTION_HINT;
	RAISE NOTICE 'caught: %', msg;
	RAISE NOTICE 'hint: %', hint;
END
$$;
-- the same join runs under a limit it fits in
SET eddy.max_memory = '1MB';
SELECT count(*) FROM shj_a a JOIN shj_b b ON a.id = b.id;
RESET eddy.max_memory;

-- statement_timeout stops a long join (100 million matches)
SET enable_nestloop = off;
SET enable_mergejoin = off;
CREATE TABLE shj_dup AS SELECT g AS id, 1 AS k FROM generate_series(1, 10000) g;
ANALYZE shj_dup;
EXPLAIN (COSTS OFF) SELECT count(*) FROM shj_dup x JOIN shj_dup y ON x.k = y.k;
SET statement_timeout = '300ms';
SELECT count(*) FROM shj_dup x JOIN shj_dup y ON x.k = y.k;
RESET statement_timeout;
RESET enable_nestloop;
RESET enable_mergejoin;

-- eddy.source_delays, eddy.source_rates and the proportional schedule:
-- EXPLAIN names the inputs they apply to (base relations, by alias); a
-- join that only holds a delayed child shows its clock; the rows are the
-- same whatever the schedule (the delays are short: 5 and 10 ms)
SET join_collapse_limit = 1;
SET eddy.source_delays = 'b=5, c=10, nosuch=3';
EXPLAIN (COSTS OFF)
SELECT count(*) FROM (shj_a a JOIN shj_b b ON a.k = b.k) JOIN shj_c c ON c.id = b.id;
SELECT count(*), sum(a.id + b.id + c.id)
FROM (shj_a a JOIN shj_b b ON a.k = b.k) JOIN shj_c c ON c.id = b.id;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM (shj_b b JOIN shj_c c ON c.id = b.id) JOIN shj_a a ON a.k = b.k;
SET eddy.source_schedule = proportional;
SET eddy.source_rates = 'a=2, c=0.5';
EXPLAIN (COSTS OFF)
SELECT count(*) FROM (shj_a a JOIN shj_b b ON a.k = b.k) JOIN shj_c c ON c.id = b.id;
SELECT count(*), sum(a.id + b.id + c.id)
FROM (shj_a a JOIN shj_b b ON a.k = b.k) JOIN shj_c c ON c.id = b.id;
RESET eddy.source_delays;
SELECT count(*), sum(a.id + b.id + c.id)
FROM (shj_a a JOIN shj_b b ON a.k = b.k) JOIN shj_c c ON c.id = b.id;
RESET eddy.source_rates;
RESET eddy.source_schedule;
RESET join_collapse_limit;
SELECT count(*), sum(a.id + b.id + c.id)
FROM (shj_a a JOIN shj_b b ON a.k = b.k) JOIN shj_c c ON c.id = b.id;

RESET eddy.static_shj;
RESET eddy.enabled;
