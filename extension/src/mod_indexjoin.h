/*-------------------------------------------------------------------------
 *
 * mod_indexjoin.h
 *	  The index join's probes, for the modules that probe an index through
 *	  an index join module of their own (mod_hybrid.c).
 *
 * The caller begins the index join module with EddyIndexJoinBegin
 * (module.h) from a join description naming the index (private.h), keeps
 * it outside the eddy's modules (it is never routed to), and ends it with
 * its methods' end.  End 1's source must have its heap open (its
 * description names the relation and the heap attribute of each column).
 *
 *-------------------------------------------------------------------------
 */
#ifndef EDDY_MOD_INDEXJOIN_H
#define EDDY_MOD_INDEXJOIN_H

#include "module.h"

#include "miscadmin.h"

/*
 * eddy.debug_index_delay: a slow index, for experiments.  Busy-waits, as
 * delay() does (delay.c), so that the lookup's cost is time on the CPU.
 */
static inline void
EddyIndexLookupDelay(void)
{
	if (unlikely(eddy_debug_index_delay > 0))
	{
		double		deadline = eddy_now_ns() + eddy_debug_index_delay * 1000.0;

		while (eddy_now_ns() < deadline)
			CHECK_FOR_INTERRUPTS();
	}
}

extern void EddyIndexJoinProbeBegin(EddyState *es, EddyModule *m, Datum *keys);
extern TupleTableSlot *EddyIndexJoinProbeNext(EddyState *es, EddyModule *m);

#endif							/* EDDY_MOD_INDEXJOIN_H */
