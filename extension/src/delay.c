/*-------------------------------------------------------------------------
 *
 * delay.c
 *	  delay(value int, usecs int) returns int: the expensive predicate of
 *	  the overhead study; and delay_phased(value, position, fast_usecs,
 *	  slow_usecs, period), a cost that changes while a query runs (the
 *	  Eddies paper's Figures 10 and 11).
 *
 * delay busy-waits on the monotonic clock for usecs microseconds and returns
 * value, so that a predicate's cost can be dialled without I/O or sleeping
 * (a sleep would give the CPU away and measure the scheduler instead).
 * Interrupts are honoured inside the wait, so statement_timeout and cancel
 * stop even a very long delay promptly.
 *
 * delay_phased waits fast_usecs when position / period is even and
 * slow_usecs when it is odd, then returns value: with position the row's
 * place in the scanned relation (read in that order), the cost flips every
 * period rows of the scan, as the paper's index servers change speed while
 * the query runs.  The phase is a function of the arguments, not of a call
 * counter: a counter kept per expression would count the calls the routing
 * sends to that expression, so a join the eddy routes few tuples to would
 * stay in its first phase (the paper's phases are the query's, in time;
 * here, in rows of the scan, which are the same for every plan and routing).
 * Being a function of its arguments it is declared STABLE, unlike delay, so
 * that it may be the outer side of an index qual (an index join's per-probe
 * cost: t.k = delay_phased(r.k, r.id, ...)); it is never folded, since its
 * arguments are columns.
 *
 *-------------------------------------------------------------------------
 */
#include "eddy.h"

#include <time.h>

#include "fmgr.h"
#include "miscadmin.h"

PG_FUNCTION_INFO_V1(eddy_delay);

Datum
eddy_delay(PG_FUNCTION_ARGS)
{
	int32		value = PG_GETARG_INT32(0);
	int32		usecs = PG_GETARG_INT32(1);
	double		deadline;

	if (usecs < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("delay must not be negative: %d microseconds", usecs),
				 errhint("Pass a number of microseconds of zero or more.")));

	if (usecs > 0)
	{
		deadline = eddy_now_ns() + (double) usecs * 1000.0;
		while (eddy_now_ns() < deadline)
			CHECK_FOR_INTERRUPTS();
	}

	PG_RETURN_INT32(value);
}

PG_FUNCTION_INFO_V1(eddy_delay_phased);

Datum
eddy_delay_phased(PG_FUNCTION_ARGS)
{
	int32		value = PG_GETARG_INT32(0);
	int32		position = PG_GETARG_INT32(1);
	int32		fast_usecs = PG_GETARG_INT32(2);
	int32		slow_usecs = PG_GETARG_INT32(3);
	int32		period = PG_GETARG_INT32(4);
	int32		usecs;
	double		deadline;

	if (fast_usecs < 0 || slow_usecs < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("delay must not be negative: %d and %d microseconds",
						fast_usecs, slow_usecs),
				 errhint("Pass numbers of microseconds of zero or more.")));
	if (period <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("period of delay_phased must be positive: %d", period),
				 errhint("Pass the number of rows of each phase, 1 or more.")));
	if (position < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("position of delay_phased must not be negative: %d", position),
				 errhint("Pass the row's place in the scan, counted from 0.")));

	usecs = (position / period) % 2 == 0 ? fast_usecs : slow_usecs;
	if (usecs > 0)
	{
		deadline = eddy_now_ns() + (double) usecs * 1000.0;
		while (eddy_now_ns() < deadline)
			CHECK_FOR_INTERRUPTS();
	}

	PG_RETURN_INT32(value);
}
