-- delay_phased(value, pos, fast_usecs, slow_usecs, period): waits
-- fast_usecs when pos / period is even, slow_usecs when odd; returns value
SELECT delay_phased(42, 0, 0, 0, 1);
SELECT delay_phased(-7, 5, 1, 2, 3);
SELECT delay_phased(NULL, 0, 1, 1, 1) IS NULL AS null_value;
SELECT delay_phased(1, 0, 1, 1, NULL) IS NULL AS null_period;

-- errors: negative delays, a period below 1, a negative position
SELECT delay_phased(1, 0, -1, 0, 10);
SELECT delay_phased(1, 0, 0, -5, 10);
SELECT delay_phased(1, 0, 0, 0, 0);
SELECT delay_phased(1, -1, 0, 0, 10);

-- the phase is pos's: rows 0-9 and 20-29 wait fast (0 us), rows
-- 10-19 slow (2000 us); 10 slow calls take at least 20 ms, 20 fast ones
-- take well under that
DO $$
DECLARE
  t0 timestamptz := clock_timestamp();
  s int;
BEGIN
  SELECT sum(delay_phased(g, g, 0, 2000, 10)) INTO s FROM generate_series(10, 19) g;
  IF s <> 145 THEN RAISE EXCEPTION 'wrong sum %', s; END IF;
  IF clock_timestamp() - t0 < interval '20 ms' THEN
    RAISE EXCEPTION 'slow phase did not wait: %', clock_timestamp() - t0;
  END IF;
  t0 := clock_timestamp();
  SELECT sum(delay_phased(g, g, 0, 200000, 10)) INTO s
  FROM (SELECT generate_series(0, 9) UNION ALL SELECT generate_series(20, 29)) x(g);
  IF clock_timestamp() - t0 > interval '1 s' THEN
    RAISE EXCEPTION 'fast phase waited: %', clock_timestamp() - t0;
  END IF;
END $$;

-- statement_timeout interrupts a long delay
SET statement_timeout = '100ms';
SELECT delay_phased(1, 1, 0, 60000000, 1);
RESET statement_timeout;

-- STABLE (may be the outer side of an index qual), strict, and as costly as delay
SELECT provolatile, proisstrict,
       procost = (SELECT procost FROM pg_proc WHERE proname = 'delay') AS as_costly
FROM pg_proc WHERE proname = 'delay_phased';

-- being STABLE, it may be an index qual's comparison value (an index join's
-- per-probe cost in the Eddies paper's Figures 10 and 11)
CREATE TABLE dp_t AS SELECT g AS k FROM generate_series(1, 1000) g;
CREATE INDEX ON dp_t (k);
ANALYZE dp_t;
SET eddy.enabled = off;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT k FROM dp_t WHERE k = delay_phased(5, 0, 0, 0, 1);
SELECT k FROM dp_t WHERE k = delay_phased(5, 0, 0, 0, 1);
RESET enable_seqscan;
RESET enable_bitmapscan;
RESET eddy.enabled;
DROP TABLE dp_t;
