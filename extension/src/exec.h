/*-------------------------------------------------------------------------
 *
 * exec.h
 *	  The executor's services and the loop's entry points: what state
 *	  migration, spilling, the parallel exchange, scheduling and EXPLAIN
 *	  offer, and what the loop offers them (replay, counters, sources).
 *
 * One executor runs every eddy (exec.c).  A source is a relation of the
 * block; a module is a selection, a symmetric hash join (two dual STAIRs,
 * in STAIR or SteM mode) or an index join, each behind the module
 * interface (module.h), so that the eddy's loop and its services never
 * look at a module's kind.  The node's state: node.h.  Tuple format:
 * tuple.h.  Routing: routing.h.  Included by the loop (through loop.h),
 * the services, explain.c and schedule.c; never by a module.
 *
 * The services are below the loop, and call it in one way only: at a
 * point of stasis, they route stored rows again (EddyReplay, between
 * EddySaveCounters and EddyRestoreCounters: replay.c) and mark sources
 * exhausted or describe them (source.c).  Everything they do with
 * modules goes through the module interface (module.h).
 *
 *-------------------------------------------------------------------------
 */
#ifndef EDDY_EXEC_H
#define EDDY_EXEC_H

#include "module.h"

/* exec.c */
extern void EddyExecInit(void);
extern void EddyStorePrereqsUpdate(EddyState *es);
/* replay.c */
extern void EddyReplay(EddyState *es, EddyTuple *t);
extern uint64 *EddySelectionsAlone(EddyState *es);

/* source.c */
extern void EddySourceExhausted(EddyState *es, int i);
extern TupleDesc EddySourceTupleDesc(EddyState *es, int i);

/*
 * The counters the modules, their STAIRs and the node keep, and the
 * router's history of first choices, saved before rows are replayed (state
 * migration, exchanged state) and restored after, so that they count the
 * eddy's own routing only.
 */
typedef struct EddyModuleCounters
{
	EddyModuleStats stats[2];	/* per direction */
	EddyStoreCounters stores[EDDY_MAX_STORES];	/* per store, if any */
} EddyModuleCounters;

typedef struct EddySavedCounters
{
	EddyModuleCounters *modules;	/* per module */
	double		nfiltered1;
	EddyHistoryLane *lanes;		/* the router's history of first choices */
	uint64	   *last_run_tuples;	/* per lane */
} EddySavedCounters;

extern void EddySaveCounters(EddyState *es, EddySavedCounters *saved);
extern void EddyRestoreCounters(EddyState *es, EddySavedCounters *saved);

/* migrate.c */
extern void EddyMigrationInit(EddyState *es);
extern void EddyMigrationStasis(EddyState *es);
extern void EddyMigrationRescan(EddyState *es);
extern void EddyMigrationExplain(EddyState *es, ExplainState *xs);
extern uint64 EddyMigrations(EddyState *es);

/* spill.c */
extern void EddySpillInit(EddyState *es);
extern void EddySpillStart(EddyState *es);
extern void EddySpillForce(EddyState *es);
extern bool EddySpillNextBatch(EddyState *es);
extern TupleTableSlot *EddySpillRead(EddyState *es, int i);
extern void EddySpillEnd(EddyState *es, bool rescan);
extern void EddySpillExplain(EddyState *es, ExplainState *xs);
extern void EddySpillTotalsNow(EddyState *es, EddySpillTotals *tot);

/* parallel.c */
extern Size EddyEstimateDSM(CustomScanState *node, ParallelContext *pcxt);
extern void EddyInitializeDSM(CustomScanState *node, ParallelContext *pcxt,
							  void *coordinate);
extern void EddyInitializeWorker(CustomScanState *node, shm_toc *toc,
								 void *coordinate);
extern void EddyShutdown(CustomScanState *node);
extern void EddyReInitializeDSM(CustomScanState *node, ParallelContext *pcxt,
								void *coordinate);
extern bool EddyExchangeStart(EddyState *es);
extern bool EddyExchangeMayRead(EddyState *es, int i);
extern void EddyExchangeSource(EddyState *es, int i);
extern void EddyExchangeEnd(EddyState *es);
extern void EddyExplainWorkers(EddyState *es, ExplainState *xs);

/* schedule.c */
extern void EddyScheduleInit(EddyState *es);
extern int	EddyScheduleNext(EddyState *es);
extern bool EddyScheduleDefer(EddyState *es, int i);
extern void EddyScheduleRescan(EddyState *es);
extern void EddyScheduleCheckHold(EddyState *es);

/* explain.c */
extern void EddyExplain(CustomScanState *node, List *ancestors, ExplainState *xs);

#endif							/* EDDY_EXEC_H */
