/* eddy--0.1.sql: objects of the eddy extension */

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
