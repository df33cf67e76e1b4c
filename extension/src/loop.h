/*-------------------------------------------------------------------------
 *
 * loop.h
 *	  The eddy's loop: what its four files share (exec.c, the node and its
 *	  state machine; source.c, reading the sources; local.c, the chains
 *	  run on a source's own tuple; replay.c, replay and counters).
 *
 * The loop is the top layer of the executor: it calls the services
 * (migrate.c, spill.c, parallel.c), the modules through their vtable, and
 * the data files; none of them includes this header.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EDDY_LOOP_H
#define EDDY_LOOP_H

#include "exec.h"

/* The local chain in a source's scan: see begin_local_qual */
typedef struct EddyLocalQual
{
	EddyState  *es;
	int			source;
	EddySource *src;			/* es->sources[source] */
	PlanState  *scan;
	ExprState  *orig;			/* the scan's own qual, or NULL */
	ExprState  *wrapper;		/* the scan's qual while there is a chain */
	EddyPredicate orig_pred;	/* the scan's qual, where it is one clause */
	EddyPredicate *preds;		/* per module: its predicate over the scan
								 * tuple */
	AttrNumber **probe_attnos;	/* per target: a hash join on this source's
								 * keys, their scan tuple columns (0: a
								 * computed key) */
	ExprState ***probe_exprs;	/* ... its computed keys over the scan tuple,
								 * per key (NULL: a column); NULL: none */
	AttrNumber *probe_fetch;	/* ... the highest scan column they read */
	int		   *probe_nkeys;	/* ... and how many */
	Datum	   *keys;			/* scratch for their values */
	bool	   *keynulls;
	bool		passed;			/* the tuple the scan returns passed here */
	bool		noted;			/* ... its first choice was counted */
	bool		timed;
	uint64		done;			/* ... and these selections */

	/*
	 * The scan tuple's columns the qual reads, deformed at once as
	 * PostgreSQL's one qual does (deforming them as each predicate reads
	 * them costs a call each, TPC-H Q19: 75 instructions a tuple): the
	 * highest of the scan's own qual, per module its predicate's, and the
	 * highest of this chain's (EddyLocalChainCompute, local.c).
	 */
	AttrNumber	orig_attno;
	AttrNumber *pred_attno;
	AttrNumber	fetch_attno;
} EddyLocalQual;

/*
 * The One-Time Filter, first in each scan: when it fails, read nothing
 * (the state becomes DONE)
 */
static inline void
EddyCheckOneTimeFilter(EddyState *es)
{
	if (unlikely(es->one_time_qual != NULL) && !es->one_time_checked)
	{
		ExprContext *econtext = es->css.ss.ps.ps_ExprContext;

		es->one_time_checked = true;
		ResetExprContext(econtext);
		if (!ExecQual(es->one_time_qual, econtext))
			es->state = EDDY_STATE_DONE;
	}
}

/* source.c */
extern EddyTuple *EddyReadSource(EddyState *es);

/* local.c */
extern void EddyLocalChainsBegin(EddyState *es);
extern TupleTableSlot *EddyExecChain(PlanState *pstate);
extern void EddyLocalChainCompute(EddyState *es, int i, EddySource *src);
extern bool EddyRouteLocally(EddyState *es, int i, EddySource *src,
							 TupleTableSlot *slot, uint64 *done);

#endif							/* EDDY_LOOP_H */
