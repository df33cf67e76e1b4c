-- PostgreSQL's qual order, reproduced where the eddy needs it (clauses.c):
-- a leakproof clause of the user's level runs at level 0, ahead of the
-- row-level security quals, only when it is cheap (under
-- 10 x cpu_operator_cost), as createplan.c's order_qual_clauses does.
SET max_parallel_workers_per_gather = 0;
CREATE TABLE qo_t WITH (autovacuum_enabled = off) AS
  SELECT g AS id, g % 10 AS a, g % 7 AS b, g % 5 AS c FROM generate_series(1, 1000) g;
CREATE TABLE qo_u WITH (autovacuum_enabled = off) AS
  SELECT g AS id, g % 7 AS b FROM generate_series(1, 100) g;
ANALYZE qo_t, qo_u;

-- not inlined (plpgsql), so their COST stands
CREATE FUNCTION qo_policy_check(int) RETURNS bool LANGUAGE plpgsql COST 10000
  AS $$ BEGIN RETURN $1 >= 0; END $$;
CREATE FUNCTION qo_leakproof_costly(int) RETURNS bool LANGUAGE plpgsql COST 1000
  LEAKPROOF AS $$ BEGIN RETURN $1 >= 0; END $$;
CREATE FUNCTION qo_costly(int) RETURNS bool LANGUAGE plpgsql COST 1000
  AS $$ BEGIN RETURN $1 >= 0; END $$;
ALTER TABLE qo_t ENABLE ROW LEVEL SECURITY;
CREATE POLICY qo_policy ON qo_t USING (qo_policy_check(a));
CREATE ROLE eddy_qo_user;
GRANT SELECT ON qo_t, qo_u TO eddy_qo_user;
SET ROLE eddy_qo_user;

-- The policy's qual runs first on the scan of qo_t.  The user's leakproof
-- predicate is expensive, so it keeps the user's level: the eddy routes it
-- with the other user predicate, and the scan's Filter keeps the policy.
EXPLAIN (COSTS OFF)
SELECT count(*) FROM qo_t JOIN qo_u ON qo_t.b = qo_u.b
WHERE qo_leakproof_costly(qo_t.c) AND qo_costly(qo_t.id);
SELECT count(*) FROM qo_t JOIN qo_u ON qo_t.b = qo_u.b
WHERE qo_leakproof_costly(qo_t.c) AND qo_costly(qo_t.id);
SET eddy.enabled = off;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM qo_t JOIN qo_u ON qo_t.b = qo_u.b
WHERE qo_leakproof_costly(qo_t.c) AND qo_costly(qo_t.id);
SELECT count(*) FROM qo_t JOIN qo_u ON qo_t.b = qo_u.b
WHERE qo_leakproof_costly(qo_t.c) AND qo_costly(qo_t.id);
RESET eddy.enabled;

RESET ROLE;
DROP TABLE qo_t, qo_u;
DROP ROLE eddy_qo_user;
