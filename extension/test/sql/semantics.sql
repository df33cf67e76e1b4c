-- Semantics the eddy must keep: results, security, volatility, guards
SET max_parallel_workers_per_gather = 0;
SET eddy.selection_min_cost = 0;
CREATE TABLE s AS
SELECT g AS id, g % 7 AS a, CASE WHEN g % 3 = 0 THEN NULL ELSE g % 5 END AS b,
       (g % 4)::text AS t
FROM generate_series(0, 999) g;
ANALYZE s;

-- guards: 100 / a only runs where a <> 0, whatever the policy
SET eddy.routing_policy = random;
SET eddy.reopt_frequency = 1;
SELECT count(*) FROM s WHERE a <> 0 AND 100 / a > 20 AND b IS NOT NULL;
SELECT count(*) FROM s WHERE b <> 0 AND (id / b) % 2 = 0 AND t <> '1';
SELECT count(*) FROM s WHERE t ~ '^[0-9]+$' AND t::int > 1 AND a < 5;
RESET eddy.routing_policy;
RESET eddy.reopt_frequency;

-- volatile predicates run at most once per row
CREATE SEQUENCE calls;
SELECT count(*) FROM s WHERE a < 3 AND nextval('calls') > 0 AND b = 1;
SELECT last_value <= 1000 AS at_most_once_per_row FROM calls;

-- NULLs: a predicate that is NULL drops the row
SELECT count(*) FROM s WHERE b > 1 AND a > 1;
SELECT count(*) FROM s WHERE NOT (b > 1) AND a > 1;
SELECT count(*) FROM s WHERE b IS NULL AND a > 1;

-- row-level security: the policy runs on the scan, before user predicates
CREATE FUNCTION leaky(int) RETURNS bool LANGUAGE plpgsql COST 1000 AS
$$ BEGIN RAISE NOTICE 'saw %', $1; RETURN true; END $$;
CREATE TABLE secret (id int, owner text, val int);
INSERT INTO secret VALUES (1, 'alice', 10), (2, 'bob', 20), (3, 'alice', 30);
ALTER TABLE secret ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON secret USING (owner = 'alice');
CREATE ROLE eddy_alice;
GRANT SELECT ON secret TO eddy_alice;
SET ROLE eddy_alice;
EXPLAIN (COSTS OFF) SELECT * FROM secret WHERE leaky(val) AND leaky(id);
SELECT * FROM secret WHERE leaky(val) AND leaky(id) ORDER BY id;
RESET ROLE;

-- security-barrier views: the view's quals run first
CREATE VIEW alice_rows WITH (security_barrier) AS
  SELECT * FROM secret WHERE owner = 'alice';
GRANT SELECT ON alice_rows TO eddy_alice;
SET ROLE eddy_alice;
EXPLAIN (COSTS OFF) SELECT * FROM alice_rows WHERE leaky(val) AND leaky(id);
SELECT * FROM alice_rows WHERE leaky(val) AND leaky(id) ORDER BY id;
RESET ROLE;
DROP VIEW alice_rows;
DROP POLICY own ON secret;
DROP TABLE secret;
DROP FUNCTION leaky(int);
DROP ROLE eddy_alice;

-- prepared statements, custom and generic plans
PREPARE p(int) AS SELECT count(*) FROM s WHERE a < $1 AND b < $1 AND t <> '2';
EXECUTE p(3);
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE p(3);
EXECUTE p(3);
EXECUTE p(5);
RESET plan_cache_mode;
DEALLOCATE p;

-- rescans: an eddy in a correlated subquery
SELECT x, (SELECT count(*) FROM s WHERE a < x AND b < x) AS n
FROM generate_series(0, 6) x ORDER BY x;
SET eddy.enabled = off;
SELECT x, (SELECT count(*) FROM s WHERE a < x AND b < x) AS n
FROM generate_series(0, 6) x ORDER BY x;
RESET eddy.enabled;

-- scroll cursors fetch backwards (the planner adds a Material)
BEGIN;
DECLARE c SCROLL CURSOR FOR SELECT id FROM s WHERE a = 1 AND b = 1 ORDER BY id;
FETCH 3 FROM c;
FETCH BACKWARD 2 FROM c;
FETCH LAST FROM c;
FETCH BACKWARD 1 FROM c;
COMMIT;

-- cancel: statement_timeout stops an eddy whose predicates are slow
SET statement_timeout = '200ms';
SELECT count(*) FROM s, generate_series(1, 1) WHERE delay(a, 100000) >= 0 AND b >= 0;
SELECT count(*) FROM s WHERE delay(a, 100000) >= 0 AND delay(b, 1) >= 0;
RESET statement_timeout;

-- dropped and added columns, whole-row and system columns, tablesample
CREATE TABLE d AS SELECT g AS id, g % 10 AS a, g % 7 AS b, md5(g::text) AS s
FROM generate_series(1, 2000) g;
ALTER TABLE d ADD COLUMN z int DEFAULT 3;
ALTER TABLE d DROP COLUMN s;
ANALYZE d;
EXPLAIN (COSTS OFF) SELECT * FROM d WHERE a < 5 AND b < 3 AND z = 3 LIMIT 3;
SELECT * FROM d WHERE a < 5 AND b < 3 AND z = 3 ORDER BY id LIMIT 3;
SELECT count(*) FROM d t WHERE t IS NOT NULL AND ctid > '(1,1)' AND a < 5;
SELECT count(*) FROM d TABLESAMPLE SYSTEM (50) REPEATABLE (1) WHERE a < 5 AND b < 3;
SET eddy.enabled = off;
SELECT count(*) FROM d t WHERE t IS NOT NULL AND ctid > '(1,1)' AND a < 5;
SELECT count(*) FROM d TABLESAMPLE SYSTEM (50) REPEATABLE (1) WHERE a < 5 AND b < 3;
RESET eddy.enabled;
DROP TABLE d;

DROP TABLE s;
DROP SEQUENCE calls;
