/* eddy--0.2.sql: objects of the eddy extension (0.2: delay_phased) */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION eddy" to load this file. \quit

/*
 * delay(value, usecs): busy-wait on the clock for usecs microseconds, then
 * return value.  The expensive predicate of the overhead study.  It is
 * declared expensive (COST 1000000, that is 2500 planner units per call at
 * the default cpu_operator_cost) so that a predicate calling it is always a
 * selection operator of the eddy, whatever eddy.selection_min_cost says
 * (its maximum is 1000).  VOLATILE: it has an observable effect (time), so
 * the planner never folds or duplicates it.
 */
CREATE FUNCTION delay(value int, usecs int)
RETURNS int
AS 'MODULE_PATHNAME', 'eddy_delay'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE
COST 1000000;

COMMENT ON FUNCTION delay(int, int) IS
'busy-waits usecs microseconds, then returns value (the expensive predicate of the eddy overhead study)';

/*
 * delay_phased(value, pos, fast_usecs, slow_usecs, period): busy-wait
 * fast_usecs when pos / period is even, slow_usecs when it is odd,
 * then return value (delay.c).  The changing cost of the Eddies paper's
 * Figures 10 and 11: with pos the row's place in the scan, the cost
 * flips every period rows.  STABLE, not VOLATILE like delay: its result is
 * a function of its arguments, and a STABLE expression may be the outer side
 * of an index qual, which puts the cost inside an index join's probe.
 * COST as delay's.
 */
CREATE FUNCTION delay_phased(value int, pos int, fast_usecs int, slow_usecs int,
							 period int)
RETURNS int
AS 'MODULE_PATHNAME', 'eddy_delay_phased'
LANGUAGE C STRICT STABLE PARALLEL SAFE
COST 1000000;

COMMENT ON FUNCTION delay_phased(int, int, int, int, int) IS
'busy-waits fast_usecs (pos / period even) or slow_usecs (odd), then returns value (the changing costs of the Eddies paper''s Figures 10 and 11)';
