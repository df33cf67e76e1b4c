/*-------------------------------------------------------------------------
 *
 * parallel.c
 *	  Eddies in parallel plans: the executor's side.
 *
 * A parallel eddy is a partial plan (planner.c, plan.c, plan_join.c): one
 * of its sources is a partial scan (a Parallel Seq Scan, Parallel Index
 * Scan or Parallel Bitmap Heap Scan, which hand each participant its own
 * share of the relation's blocks), every other source is read whole by
 * every participant, and a Gather above collects the results.  This is the
 * design of PostgreSQL's hash joins before shared hash tables (9.6, 10):
 * each participant holds its own copy of the join state of the other
 * sources, so nothing is shared and no participant waits for another.
 * Every result tuple has exactly one component from the partial source,
 * read by exactly one participant, which holds every tuple of the other
 * sources it can join with: so each result is produced once, by that
 * participant, whatever each one's routing, schedule, migrations or spills
 * (all participant-local).  The plan says "Parallel Custom Scan (Eddy)".
 *
 * The node itself needs no shared state to be correct: the partial scan
 * below it coordinates through its own DSM, which PostgreSQL sets up by
 * walking the plan (custom_ps included).  It marks itself parallel-aware
 * for one thing only, EXPLAIN ANALYZE: the counters of the leader's eddy
 * are what the node shows, as every node does, and each worker's eddy adds
 * its own (tuples read, routed, recomputations, peak memory, spills,
 * migrations) to its slot of a small DSM array when it shuts down
 * (ExecShutdownNode, run in the worker before its tuple queue detaches).
 * The leader's eddy copies the array when it shuts down, which is before
 * the Gather destroys the segment and after every worker has detached if
 * the Gather read everything; a Gather stopped early (LIMIT) may show a
 * worker that had not reported yet as not reporting.  Workers add rather
 * than overwrite, and nothing resets the array when a rescanned Gather
 * relaunches its workers over the same segment (no ReInitializeDSM), so
 * EXPLAIN shows the sum of the rounds.
 *
 *-------------------------------------------------------------------------
 */
#include "exec.h"

#include "access/parallel.h"

/* One worker's counters */
typedef struct EddyWorkerStats
{
	uint64		reports;		/* eddies that reported into this slot */
	uint64		read;			/* source tuples read */
	uint64		routed;
	uint64		recomputations;
	uint64		peak_memory;	/* bytes, the largest of its reports */
	uint64		spill_batches;
	uint64		rows_spilled;
	uint64		bytes_spilled;
	uint64		migrations;
} EddyWorkerStats;

struct EddySharedStats
{
	int			nworkers;
	EddyWorkerStats workers[FLEXIBLE_ARRAY_MEMBER];
};

static Size
shared_stats_size(int nworkers)
{
	return add_size(offsetof(EddySharedStats, workers),
					mul_size(sizeof(EddyWorkerStats), Max(nworkers, 0)));
}

Size
EddyEstimateDSM(CustomScanState *node, ParallelContext *pcxt)
{
	return shared_stats_size(pcxt->nworkers);
}

void
EddyInitializeDSM(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	EddyState  *es = (EddyState *) node;
	EddySharedStats *shared = coordinate;

	memset(shared, 0, shared_stats_size(pcxt->nworkers));
	shared->nworkers = pcxt->nworkers;
	es->shared_stats = shared;
}

void
EddyInitializeWorker(CustomScanState *node, shm_toc *toc, void *coordinate)
{
	EddyState  *es = (EddyState *) node;

	es->shared_stats = coordinate;
	es->in_worker = true;
}

/*
 * The node shuts down (ExecShutdownNode): a worker reports its counters, the
 * leader copies every worker's.
 */
void
EddyShutdown(CustomScanState *node)
{
	EddyState  *es = (EddyState *) node;
	EddySharedStats *shared = es->shared_stats;
	Size		size;

	if (shared == NULL || es->css.ss.ps.instrument == NULL)
		return;
	if (es->in_worker)
	{
		EddyWorkerStats *w;
		EddySpillTotals tot;
		int			i;

		if (ParallelWorkerNumber < 0 || ParallelWorkerNumber >= shared->nworkers)
			return;
		w = &shared->workers[ParallelWorkerNumber];
		EddyRouterSyncChain(&es->router);
		EddySpillTotalsNow(es, &tot);
		w->reports++;
		if (es->chain)
			w->read += EddyRouterRouted(&es->router);	/* one source, one route each */
		else
			for (i = 0; i < es->nsources; i++)
				w->read += es->sources[i].nread;
		w->routed += EddyRouterRouted(&es->router);
		w->recomputations += es->router.recomputations;
		w->peak_memory = Max(w->peak_memory, (uint64) es->peak_memory);
		w->spill_batches += tot.batches;
		w->rows_spilled += tot.rows;
		w->bytes_spilled += tot.bytes;
		w->migrations += EddyMigrations(es);
		return;
	}
	size = shared_stats_size(shared->nworkers);
	if (es->worker_stats == NULL)
		es->worker_stats = MemoryContextAlloc(es->css.ss.ps.state->es_query_cxt, size);
	memcpy(es->worker_stats, shared, size);
}

/* EXPLAIN ANALYZE: the workers' counters, as Sort and Hash show theirs */
void
EddyExplainWorkers(EddyState *es, ExplainState *xs)
{
	EddySharedStats *stats = es->worker_stats;
	bool		opened = false;
	int			n;

	if (stats == NULL)
		return;
	for (n = 0; n < stats->nworkers; n++)
	{
		EddyWorkerStats *w = &stats->workers[n];

		if (w->reports == 0)
			continue;
		if (xs->format == EXPLAIN_FORMAT_TEXT)
		{
			StringInfoData buf;

			initStringInfo(&buf);
			appendStringInfo(&buf, "Worker %d:  Tuples Read: " UINT64_FORMAT
							 "  Tuples Routed: " UINT64_FORMAT
							 "  Recomputations: " UINT64_FORMAT,
							 n, w->read, w->routed, w->recomputations);
			if (!es->chain)
				appendStringInfo(&buf, "  Peak Memory: " UINT64_FORMAT "kB",
								 w->peak_memory / 1024);
			if (w->spill_batches > 0)
				appendStringInfo(&buf, "  Batches Joined: " UINT64_FORMAT
								 "  Rows Spilled: " UINT64_FORMAT
								 "  Bytes Spilled: " UINT64_FORMAT "kB",
								 w->spill_batches, w->rows_spilled,
								 (w->bytes_spilled + 1023) / 1024);
			if (w->migrations > 0)
				appendStringInfo(&buf, "  Migrations: " UINT64_FORMAT,
								 w->migrations);
			EddyExplainLine(xs, "%s", buf.data);
			continue;
		}
		if (!opened)
		{
			ExplainOpenGroup("Eddy Workers", "Eddy Workers", false, xs);
			opened = true;
		}
		ExplainOpenGroup("Worker", NULL, true, xs);
		ExplainPropertyInteger("Worker Number", NULL, n, xs);
		ExplainPropertyUInteger("Tuples Read", NULL, w->read, xs);
		ExplainPropertyUInteger("Tuples Routed", NULL, w->routed, xs);
		ExplainPropertyUInteger("Recomputations", NULL, w->recomputations, xs);
		if (!es->chain)
			ExplainPropertyInteger("Peak Memory", "kB",
								   (int64) (w->peak_memory / 1024), xs);
		ExplainPropertyUInteger("Batches Joined", NULL, w->spill_batches, xs);
		ExplainPropertyUInteger("Rows Spilled", NULL, w->rows_spilled, xs);
		ExplainPropertyInteger("Bytes Spilled", "kB",
							   (int64) ((w->bytes_spilled + 1023) / 1024), xs);
		ExplainPropertyUInteger("Migrations", NULL, w->migrations, xs);
		ExplainCloseGroup("Worker", NULL, true, xs);
	}
	if (opened)
		ExplainCloseGroup("Eddy Workers", "Eddy Workers", false, xs);
}
