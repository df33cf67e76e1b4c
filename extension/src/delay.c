/*-------------------------------------------------------------------------
 *
 * delay.c
 *	  delay(value int, usecs int) returns int: the expensive predicate of
 *	  the overhead study.
 *
 * It busy-waits on the monotonic clock for usecs microseconds and returns
 * value, so that a predicate's cost can be dialled without I/O or sleeping
 * (a sleep would give the CPU away and measure the scheduler instead).
 * Interrupts are honoured inside the wait, so statement_timeout and cancel
 * stop even a very long delay promptly.
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
