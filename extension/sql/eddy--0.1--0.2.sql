/* eddy--0.1--0.2.sql: ALTER EXTENSION eddy UPDATE from 0.1 */

\echo Use "ALTER EXTENSION eddy UPDATE" to load this file. \quit

/*
 * delay_phased came in while the version was still 0.1, so a database
 * whose extension was created earlier lacks it: (re)declared here, which
 * makes it a member of the extension either way (eddy--0.2.sql has the
 * comment on what it does).
 */
CREATE OR REPLACE FUNCTION delay_phased(value int, pos int, fast_usecs int, slow_usecs int,
										period int)
RETURNS int
AS 'MODULE_PATHNAME', 'eddy_delay_phased'
LANGUAGE C STRICT STABLE PARALLEL SAFE
COST 1000000;
COMMENT ON FUNCTION delay_phased(int, int, int, int, int) IS
'busy-waits fast_usecs (pos / period even) or slow_usecs (odd), then returns value (the changing costs of the Eddies paper''s Figures 10 and 11)';
