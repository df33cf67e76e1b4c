-- delay(value, usecs): busy-waits, then returns value
SELECT delay(42, 0);
SELECT delay(-7, 10);
SELECT delay(NULL, 10) IS NULL AS null_value;
SELECT delay(1, NULL) IS NULL AS null_usecs;
SELECT delay(1, -1);

-- it really waits: 20 calls of 500 us take at least 10 ms
DO $$
DECLARE
  t0 timestamptz := clock_timestamp();
  s int;
BEGIN
  SELECT sum(delay(g, 500)) INTO s FROM generate_series(1, 20) g;
  IF s <> 210 THEN RAISE EXCEPTION 'wrong sum %', s; END IF;
  IF clock_timestamp() - t0 < interval '10 ms' THEN
    RAISE EXCEPTION 'delay did not wait: %', clock_timestamp() - t0;
  END IF;
END $$;

-- statement_timeout interrupts a long delay
SET statement_timeout = '100ms';
SELECT delay(1, 60000000);
RESET statement_timeout;

-- declared costly enough to be a selection operator at any eddy.selection_min_cost
SELECT procost * current_setting('cpu_operator_cost')::float8 > 1000 AS always_routed,
       provolatile, proisstrict
FROM pg_proc WHERE proname = 'delay';
