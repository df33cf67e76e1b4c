-- Join eddies over appendrels (inheritance, partitioning, UNION ALL) whose
-- vanilla plan is a nested loop into a parameterized Append: the Append's
-- parameterization lists no join clauses (its children enforce them), so the
-- eddy must take them from the parent rel, or it joins by a cross product.
-- With eddy.join_method = auto such a block keeps PostgreSQL's plan (the
-- eddy would scan whole what it probes per outer row): hash forces the eddy.
SET max_parallel_workers_per_gather = 0;
SET eddy.join_method = hash;
CREATE TABLE ap0 (id int, x int);
CREATE TABLE ap1 () INHERITS (ap0);
CREATE TABLE ap2 () INHERITS (ap0);
INSERT INTO ap0 SELECT g, g FROM generate_series(0, 999) g;
INSERT INTO ap1 SELECT g, g FROM generate_series(0, 999) g;
INSERT INTO ap2 SELECT g, g FROM generate_series(0, 999) g;
CREATE INDEX ap0_id ON ap0 (id);
CREATE INDEX ap1_id ON ap1 (id);
CREATE INDEX ap2_id ON ap2 (id);
CREATE TABLE apk (f1 int);
INSERT INTO apk VALUES (0), (5), (-7), (123456);
ANALYZE ap0, ap1, ap2, apk;

-- inheritance parent joined to a subquery that is not pulled up
SET eddy.enabled = off;
SELECT count(*) FROM ap0 JOIN (SELECT f1 FROM apk ORDER BY f1 DESC LIMIT 2) ss ON id = f1;
SET eddy.enabled = on;
EXPLAIN (COSTS OFF)
SELECT * FROM ap0 JOIN (SELECT f1 FROM apk ORDER BY f1 DESC LIMIT 2) ss ON id = f1;
SELECT count(*) FROM ap0 JOIN (SELECT f1 FROM apk ORDER BY f1 DESC LIMIT 2) ss ON id = f1;
SELECT id, x, f1 FROM ap0 JOIN (SELECT f1 FROM apk ORDER BY f1 DESC LIMIT 2) ss ON id = f1
ORDER BY id, x;

-- a join clause that is not an equivalence (a non-equality)
SET eddy.enabled = off;
SELECT count(*) FROM ap0 JOIN (SELECT f1 FROM apk ORDER BY f1 DESC LIMIT 2) ss ON id < f1 - 990;
SET eddy.enabled = on;
SELECT count(*) FROM ap0 JOIN (SELECT f1 FROM apk ORDER BY f1 DESC LIMIT 2) ss ON id < f1 - 990;

-- UNION ALL flattened into an appendrel, joined on an expression
CREATE FUNCTION ap_expensive(int) RETURNS int LANGUAGE plpgsql IMMUTABLE STRICT COST 10000
AS 'BEGIN RETURN $1; END';
CREATE INDEX ap1_exp ON ap1 (ap_expensive(id));
CREATE INDEX ap2_exp ON ap2 (ap_expensive(id));
ANALYZE ap1, ap2;
SET eddy.enabled = off;
SELECT count(*) FROM (SELECT id FROM ap1 UNION ALL SELECT id FROM ap2) u
JOIN apk ON f1 = ap_expensive(u.id);
SET eddy.enabled = on;
EXPLAIN (COSTS OFF)
SELECT * FROM (SELECT id FROM ap1 UNION ALL SELECT id FROM ap2) u
JOIN apk ON f1 = ap_expensive(u.id);
SELECT count(*) FROM (SELECT id FROM ap1 UNION ALL SELECT id FROM ap2) u
JOIN apk ON f1 = ap_expensive(u.id);

-- a partitioned table
CREATE TABLE app (id int, x int) PARTITION BY RANGE (id);
CREATE TABLE app_1 PARTITION OF app FOR VALUES FROM (0) TO (5000);
CREATE TABLE app_2 PARTITION OF app FOR VALUES FROM (5000) TO (10000);
INSERT INTO app SELECT g, g FROM generate_series(0, 9999) g;
CREATE INDEX app_id ON app (id);
ANALYZE app;
SET eddy.enabled = off;
SELECT count(*) FROM app JOIN (SELECT f1 FROM apk ORDER BY f1 DESC LIMIT 2) ss ON id = f1;
SET eddy.enabled = on;
SELECT count(*) FROM app JOIN (SELECT f1 FROM apk ORDER BY f1 DESC LIMIT 2) ss ON id = f1;

RESET eddy.enabled;
DROP TABLE ap0 CASCADE;
DROP TABLE apk, app;
DROP FUNCTION ap_expensive(int);
