-- A probe into a STAIR of a relation that is unique on its join keys finds
-- at most one match, and a tuple that found it is not stored.  Uniqueness
-- may come from a unique index on the join keys plus `column = constant`
-- restrictions (PostgreSQL's relation_has_unique_index_for): it holds only
-- if those restrictions run on the scan, before the STAIR.  When the eddy
-- routes such a restriction as a selection (eddy.selection_min_cost = 0), a
-- tuple may reach the join first, and the STAIR holds rows the restriction
-- would have removed: the side is not unique, and assuming it lost rows
-- (found by PostgreSQL's regression suite, psql's \dRp+ with
-- eddy.reopt_frequency = 1).
SET max_parallel_workers_per_gather = 0;
CREATE TABLE uq_n (oid int, name text);
CREATE TABLE uq_pn (pubid int, nspid int, UNIQUE (nspid, pubid));
INSERT INTO uq_n SELECT g, 'n' || g FROM generate_series(1, 200) g;
INSERT INTO uq_pn SELECT p, g FROM generate_series(1, 5) p, generate_series(1, 50) g;
ANALYZE uq_n, uq_pn;

-- PostgreSQL hashes uq_pn (filtered): the eddy reads it first, then probes
-- its STAIR with uq_n's rows
SET eddy.enabled = off;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM uq_n n JOIN uq_pn pn ON n.oid = pn.nspid WHERE pn.pubid = 3;
SELECT count(*) FROM uq_n n JOIN uq_pn pn ON n.oid = pn.nspid WHERE pn.pubid = 3;
SET eddy.enabled = on;
SET eddy.selection_min_cost = 0;
SET eddy.reopt_frequency = 1;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM uq_n n JOIN uq_pn pn ON n.oid = pn.nspid WHERE pn.pubid = 3;
-- random and lottery routing send some of uq_pn's rows to the join before
-- the selection
SET eddy.routing_policy = random;
SELECT count(*) FROM uq_n n JOIN uq_pn pn ON n.oid = pn.nspid WHERE pn.pubid = 3;
SET eddy.routing_policy = lottery;
SELECT count(*) FROM uq_n n JOIN uq_pn pn ON n.oid = pn.nspid WHERE pn.pubid = 3;
SET eddy.routing_policy = rank;
SELECT count(*) FROM uq_n n JOIN uq_pn pn ON n.oid = pn.nspid WHERE pn.pubid = 3;
SELECT n.name, pn.pubid FROM uq_n n JOIN uq_pn pn ON n.oid = pn.nspid
WHERE pn.pubid = 3 AND n.oid <= 3 ORDER BY 1;

-- the restriction on the scan (default selection_min_cost): unique, and right
RESET eddy.selection_min_cost;
SELECT count(*) FROM uq_n n JOIN uq_pn pn ON n.oid = pn.nspid WHERE pn.pubid = 3;

RESET eddy.routing_policy;
RESET eddy.reopt_frequency;
RESET eddy.enabled;
DROP TABLE uq_n, uq_pn;
