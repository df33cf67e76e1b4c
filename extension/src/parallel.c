/*-------------------------------------------------------------------------
 *
 * parallel.c
 *	  Eddies in parallel plans: the executor's side.
 *
 * A parallel eddy is a partial plan (planner.c, plan.c, plan_parallel.c) of
 * one of two kinds.  In the first, one of its sources is a partial scan (a
 * Parallel Seq Scan, Parallel Index Scan or Parallel Bitmap Heap Scan,
 * which hand each participant its own share of the relation's blocks),
 * every other source is read whole by every participant, and a Gather
 * above collects the results.  This is the
 * design of PostgreSQL's hash joins before shared hash tables (9.6, 10):
 * each participant holds its own copy of the join state of the other
 * sources, so nothing is shared and no participant waits for another.
 * Every result tuple has exactly one component from the partial source,
 * read by exactly one participant, which holds every tuple of the other
 * sources it can join with: so each result is produced once, by that
 * participant, whatever each one's routing, schedule, migrations or spills
 * (all participant-local).  The plan says "Parallel Custom Scan (Eddy)".
 *
 * That kind of node needs no shared state to be correct: the partial scan
 * below it coordinates through its own DSM, which PostgreSQL sets up by
 * walking the plan (custom_ps included).  It marks itself parallel-aware
 * for one thing only, EXPLAIN ANALYZE: the counters of the leader's eddy
 * are what the node shows, as every node does, and each worker's eddy adds
 * its own (tuples read, routed, recomputations, lookahead choices, peak
 * memory, spills, migrations) to its slot of a small DSM array when it shuts down
 * (ExecShutdownNode, run in the worker before its tuple queue detaches).
 * The leader's eddy copies the array when it shuts down, which is before
 * the Gather destroys the segment and after every worker has detached if
 * the Gather read everything; a Gather stopped early (LIMIT) may show a
 * worker that had not reported yet as not reporting.  Workers add rather
 * than overwrite, and nothing resets the array when a rescanned Gather
 * relaunches its workers over the same segment (ReInitializeDSM resets
 * only an exchanging eddy's barrier and files, below), so EXPLAIN shows
 * the sum of the rounds.
 *
 * Exchanged state, the second kind.  Reading the other sources whole in
 * every participant repeats their scans, their filters and their joins;
 * PostgreSQL's Parallel Hash shares them.  So an eddy may instead read
 * every scanned source through a partial scan (plan_parallel.c and
 * the driver's gates in plan_join.c decide), one after another in the build order, each
 * participant its share, and
 * exchange what it stored after each source but the last: it writes the
 * rows of that source its STAIRs hold (with the done bits of the
 * selections on that source alone, as state migration collects them) to
 * a file of a SharedFileSet, waits at a barrier for every participant to
 * finish the source, and then replays the rows the others wrote, as state
 * migration replays rows (EddyReplay: routed under its own routing,
 * complete results dropped; none can be complete, a source is still
 * unread).  So before it reads the next source every participant holds a
 * state built by a valid history of every row of the sources read so far
 * (the STAIRs paper's Theorem 1, the argument of migrate.c): a row of the
 * next source finds all its matches in the participant that reads it, and
 * every result is made once, by the participant that read its row of the
 * source read last.  A row of an earlier source that is in no entry of its
 * reader's STAIRs is in no future result (migrate.c), so it is not sent.
 * Correct under any routing of any participant, since each rebuilds its
 * own arrangement; the state is not shared, its building is repeated (each
 * participant replays the others' stored rows), but no scan is.
 *
 * A relation without a partial scan (a small table under
 * min_parallel_table_scan_size) may be exchanged too: the first process to
 * get to it (an atomic flag) reads it whole, the others exchange at once,
 * and it is sent as any other (claimed sources; plan_parallel.c costs it).
 *
 * Participants.  The leader is participant 0, worker n participant n + 1.
 * Each attaches to the barrier at its first read; one that attaches late,
 * after k exchanges, replays every file of those k first, and its shares
 * of their sources are empty (their partial scans are done).  A
 * participant reads no source ahead (peek_sources): its share of one may
 * be empty while the others' are not.  No result can be made before the
 * last source is read, so no participant waits at the barrier while
 * another waits to hand a result to the Gather.  A participant detaches
 * after the last exchange, when the node ends or is rescanned, and when it
 * shuts down (a Gather that stops early).  An exchanging eddy keeps the
 * build order, STAIRs and no state migration whatever the settings say
 * (the plan was made for them), and does not spill: the planner offers it
 * only where the whole state fits in eddy.max_memory.  A rescanned Gather
 * re-initializes the barrier and deletes the files; a file's name carries
 * the round.  The files go with the DSM segment on error and cancel.
 * Without a DSM (a Gather that runs its plan in the leader alone) there is
 * one participant and nothing to exchange.  EXPLAIN ANALYZE shows the rows
 * sent and replayed, per worker too.
 *
 *-------------------------------------------------------------------------
 */
#include "exec.h"

#include "access/htup_details.h"
#include "access/parallel.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/barrier.h"
#include "storage/buffile.h"
#include "storage/dsm.h"
#include "storage/sharedfileset.h"
#include "utils/memutils.h"
#include "utils/wait_event.h"

/* One worker's counters */
typedef struct EddyWorkerStats
{
	uint64		reports;		/* eddies that reported into this slot */
	uint64		read;			/* source tuples read */
	uint64		routed;
	uint64		recomputations;
	uint64		lookahead_choices;
	uint64		peak_memory;	/* bytes, the largest of its reports */
	uint64		spill_batches;
	uint64		rows_spilled;
	uint64		bytes_spilled;
	uint64		migrations;
	uint64		rows_sent;
	uint64		rows_replayed;
} EddyWorkerStats;

struct EddySharedStats
{
	int			nworkers;
	/* exchanged state (an exchanging eddy's only) */
	dsm_handle	segment;		/* the DSM segment, which workers attach */
	int			round;			/* rescans of the Gather so far */
	Barrier		barrier;		/* its phase: exchanges done */
	SharedFileSet fileset;		/* the rows sent */
	pg_atomic_flag claims[EDDY_MAX_MAX_SOURCES];	/* per claimed source: taken */
	EddyWorkerStats workers[FLEXIBLE_ARRAY_MEMBER];
};

/* A row sent: this header, then the MinimalTuple */
typedef struct ExchangeRecord
{
	uint32		len;			/* of the MinimalTuple */
	uint32		pad;
	uint64		done;			/* selections on its source alone passed */
} ExchangeRecord;

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
	if (es->exchange)
	{
		int			i;

		shared->segment = dsm_segment_handle(pcxt->seg);
		BarrierInit(&shared->barrier, 0);
		SharedFileSetInit(&shared->fileset, pcxt->seg);
		for (i = 0; i < EDDY_MAX_MAX_SOURCES; i++)
			pg_atomic_init_flag(&shared->claims[i]);
	}
	es->shared_stats = shared;
}

/* A rescanned Gather: a new round of exchanges (the workers start again) */
void
EddyReInitializeDSM(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	EddyState  *es = (EddyState *) node;
	EddySharedStats *shared = coordinate;

	int			i;

	if (!es->exchange)
		return;
	BarrierInit(&shared->barrier, 0);
	SharedFileSetDeleteAll(&shared->fileset);
	for (i = 0; i < EDDY_MAX_MAX_SOURCES; i++)
		pg_atomic_init_flag(&shared->claims[i]);
	shared->round++;
}

void
EddyInitializeWorker(CustomScanState *node, shm_toc *toc, void *coordinate)
{
	EddyState  *es = (EddyState *) node;
	EddySharedStats *shared = coordinate;

	es->shared_stats = shared;
	es->in_worker = true;
	if (es->exchange)
	{
		dsm_segment *seg = dsm_find_mapping(shared->segment);

		if (seg == NULL)
			elog(ERROR, "eddy: the parallel query's shared memory is not mapped");
		SharedFileSetAttach(&shared->fileset, seg);
	}
}

/* ----------------------------------------------------------------
 *		Exchanged state (the header)
 * ----------------------------------------------------------------
 */

static void
exchange_file_name(char *name, EddySharedStats *shared, int exchange, int participant)
{
	snprintf(name, MAXPGPATH, "eddy.%d.%d.%d", shared->round, exchange, participant);
}

/* The scanned source exchanged k-th (the k-th in reading order) */
static int
exchanged_source(EddyState *es, int k)
{
	int			n;

	for (n = 0; n < es->nsources; n++)
	{
		int			i = es->source_order[n];

		if (es->sources[i].method == EDDY_SOURCE_SCAN && k-- == 0)
			return i;
	}
	elog(ERROR, "eddy: no source for exchange %d", k);
	return -1;
}

static void
send_row(EddyState *es, BufFile *file, TupleDesc desc, EddyRow *row, uint64 done)
{
	ExchangeRecord rec;
	MinimalTuple mt;

	CHECK_FOR_INTERRUPTS();
	if (row->mark == es->exchange_stamp)
		return;					/* sent already */
	row->mark = es->exchange_stamp;
	mt = heap_form_minimal_tuple(desc, row->values, row->isnull);
	rec.len = mt->t_len;
	rec.pad = 0;
	rec.done = done;
	BufFileWrite(file, &rec, sizeof(rec));
	BufFileWrite(file, mt, mt->t_len);
	pfree(mt);
	es->rows_sent++;
}

/* Write the rows of source i the STAIRs hold, for exchange k */
static void
send_rows(EddyState *es, int k, int i, TupleDesc desc)
{
	EddySharedStats *shared = es->shared_stats;
	uint64	   *xonly = EddySelectionsAlone(es);
	char		name[MAXPGPATH];
	BufFile    *file;
	int			m;

	if (++es->exchange_stamp == 0)	/* rows are made with mark 0 */
		es->exchange_stamp = 1;
	exchange_file_name(name, shared, k, es->exchange_me);
	file = BufFileCreateFileSet(&shared->fileset.fs, name);
	for (m = 0; m < es->nmodules; m++)
	{
		EddyModule *mod = es->modules[m];
		int			s;

		if (mod->state == NULL)
			continue;
		for (s = 0; s < mod->state->nstores; s++)
		{
			Stair	   *st = mod->state->store(mod, s);
			int			end = mod->state->spec(mod)->rel[s];
			StairIterator it;
			void	   *payload;
			uint32		hash;
			Datum	   *keys;

			StairIterBegin(&it, st);
			while ((payload = StairIterNext(&it, &hash, &keys)) != NULL)
			{
				if (EddyPayloadIsRow(payload))
				{
					if (end == i)
						send_row(es, file, desc, EddyPayloadRow(payload), 0);
				}
				else
				{
					EddyTuple  *t = (EddyTuple *) payload;

					if (t->spans & (1u << i))
						send_row(es, file, desc, t->rows[i], t->done & xonly[i]);
				}
			}
		}
	}
	BufFileClose(file);
	pfree(xonly);
}

/*
 * Replay the rows of source i the other participants sent for exchange k
 * (every participant's but skip's), as state migration replays rows:
 * nothing counted.
 */
static void
replay_rows(EddyState *es, int k, int i, int skip)
{
	EddySharedStats *shared = es->shared_stats;
	TupleTableSlot *slot = es->exchange_slots[i];
	EddySavedCounters saved;
	MemoryContext cxt;
	MemoryContext old;
	int			p;

	Assert(es->nstack == 0 && !es->replaying);
	cxt = AllocSetContextCreate(CurrentMemoryContext, "eddy exchange",
								ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);
	EddySaveCounters(es, &saved);
	MemoryContextSwitchTo(old);

	es->replaying = true;
	for (p = 0; p <= shared->nworkers; p++)
	{
		char		name[MAXPGPATH];
		BufFile    *file;

		if (p == skip)
			continue;
		exchange_file_name(name, shared, k, p);
		file = BufFileOpenFileSet(&shared->fileset.fs, name, O_RDONLY, true);
		if (file == NULL)
			continue;			/* it did not take part, or stored nothing */
		for (;;)
		{
			ExchangeRecord rec;
			MinimalTuple mt;
			EddyTuple  *t;
			size_t		n;

			CHECK_FOR_INTERRUPTS();
			n = BufFileRead(file, &rec, sizeof(rec));
			if (n == 0)
				break;
			if (n != sizeof(rec))
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("eddy: could not read from an exchange file: read only %zu of %zu bytes",
								n, sizeof(rec))));
			mt = MemoryContextAlloc(cxt, rec.len);
			n = BufFileRead(file, mt, rec.len);
			if (n != rec.len)
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("eddy: could not read from an exchange file: read only %zu of %u bytes",
								n, rec.len)));
			ExecStoreMinimalTuple(mt, slot, true);
			slot_getallattrs(slot);
			t = EddyTupleAlloc(es, &es->transient);
			memset(t->rows, 0, sizeof(EddyRow *) * es->nsources);
			t->spans = 1u << i;
			t->done = rec.done;
			t->rows[i] = EddyRowFromSlot(es, &es->sources[i], slot);
			EddyReplay(es, t);
			EddyForgetTransient(es);
			es->rows_replayed++;
		}
		BufFileClose(file);
	}
	ExecClearTuple(slot);
	es->replaying = false;

	/* the counters are this participant's own routing's */
	EddyRestoreCounters(es, &saved);
	MemoryContextDelete(cxt);
	EddyCheckMemory(es);
}

/* A slot to read source i's rows into, made once */
static void
exchange_slot(EddyState *es, int i)
{
	MemoryContext old;

	if (es->exchange_slots == NULL)
		es->exchange_slots = MemoryContextAllocZero(es->css.ss.ps.state->es_query_cxt,
													sizeof(TupleTableSlot *) * es->nsources);
	if (es->exchange_slots[i] != NULL)
		return;
	old = MemoryContextSwitchTo(es->css.ss.ps.state->es_query_cxt);
	es->exchange_slots[i] = MakeSingleTupleTableSlot(EddySourceTupleDesc(es, i),
													 &TTSOpsMinimalTuple);
	MemoryContextSwitchTo(old);
}

static void
exchange_detach(EddyState *es)
{
	if (es->exchange_attached)
	{
		BarrierDetach(&es->shared_stats->barrier);
		es->exchange_attached = false;
	}
}

/*
 * The first read of an exchanging eddy (source.c): true if it exchanges (it
 * runs in a parallel query), after attaching to the barrier and replaying
 * the exchanges it came too late for.
 */
bool
EddyExchangeStart(EddyState *es)
{
	EddySharedStats *shared = es->shared_stats;
	int			phase;
	int			k;

	es->exchange_started = true;
	if (shared == NULL || es->nexchanges <= 0)
		return false;
	es->exchange_active = true;
	es->exchange_me = es->in_worker ? ParallelWorkerNumber + 1 : 0;
	phase = BarrierAttach(&shared->barrier);
	es->exchange_attached = true;
	for (k = 0; k < phase && k < es->nexchanges; k++)
	{
		int			i = exchanged_source(es, k);

		exchange_slot(es, i);
		replay_rows(es, k, i, -1);
		EddySourceExhausted(es, i);
		es->exchanges_done++;
	}
	if (es->exchanges_done >= es->nexchanges)
		exchange_detach(es);
	return true;
}

/*
 * Source i is done for this participant (source.c, before it is marked
 * exhausted; a point of stasis): unless it is the last, send its rows,
 * wait for the others, replay theirs.
 */
void
EddyExchangeSource(EddyState *es, int i)
{
	EddySharedStats *shared = es->shared_stats;
	int			k = es->exchanges_done;

	if (k >= es->nexchanges)
		return;					/* the last source: nothing is stored */
	if (exchanged_source(es, k) != i)
		elog(ERROR, "eddy: exchange %d is of another source than the one read", k);
	exchange_slot(es, i);
	send_rows(es, k, i, es->exchange_slots[i]->tts_tupleDescriptor);
	BarrierArriveAndWait(&shared->barrier, PG_WAIT_EXTENSION);
	replay_rows(es, k, i, es->exchange_me);
	es->exchanges_done++;
	if (es->exchanges_done >= es->nexchanges)
		exchange_detach(es);
}

/*
 * May this process read source i?  Unless another one claimed it (a source
 * with no partial scan, read whole by the first process to get there).
 */
bool
EddyExchangeMayRead(EddyState *es, int i)
{
	uint32		bit = 1u << i;

	if (!(es->claimed & bit))
		return true;
	if (!(es->claims_checked & bit))
	{
		es->claims_checked |= bit;
		if (pg_atomic_test_set_flag(&es->shared_stats->claims[i]))
			es->claims_won |= bit;
	}
	return (es->claims_won & bit) != 0;
}

/* The node ends, is rescanned or shuts down: no more waiting for it */
void
EddyExchangeEnd(EddyState *es)
{
	if (es->shared_stats != NULL)
		exchange_detach(es);
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

	if (shared == NULL)
		return;
	exchange_detach(es);		/* a Gather that stops early */
	if (es->css.ss.ps.instrument == NULL)
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
		w->lookahead_choices += es->router.lookahead_choices;
		w->peak_memory = Max(w->peak_memory, (uint64) es->peak_memory);
		w->spill_batches += tot.batches;
		w->rows_spilled += tot.rows;
		w->bytes_spilled += tot.bytes;
		w->migrations += EddyMigrations(es);
		w->rows_sent += es->rows_sent;
		w->rows_replayed += es->rows_replayed;
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
			if (w->lookahead_choices > 0)
				appendStringInfo(&buf, "  Lookahead Choices: " UINT64_FORMAT,
								 w->lookahead_choices);
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
			if (es->exchange)
				appendStringInfo(&buf, "  Rows Sent: " UINT64_FORMAT
								 "  Rows Replayed: " UINT64_FORMAT,
								 w->rows_sent, w->rows_replayed);
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
		ExplainPropertyUInteger("Lookahead Choices", NULL, w->lookahead_choices, xs);
		if (!es->chain)
			ExplainPropertyInteger("Peak Memory", "kB",
								   (int64) (w->peak_memory / 1024), xs);
		ExplainPropertyUInteger("Batches Joined", NULL, w->spill_batches, xs);
		ExplainPropertyUInteger("Rows Spilled", NULL, w->rows_spilled, xs);
		ExplainPropertyInteger("Bytes Spilled", "kB",
							   (int64) ((w->bytes_spilled + 1023) / 1024), xs);
		ExplainPropertyUInteger("Migrations", NULL, w->migrations, xs);
		if (es->exchange)
		{
			ExplainPropertyUInteger("Rows Sent", NULL, w->rows_sent, xs);
			ExplainPropertyUInteger("Rows Replayed", NULL, w->rows_replayed, xs);
		}
		ExplainCloseGroup("Worker", NULL, true, xs);
	}
	if (opened)
		ExplainCloseGroup("Eddy Workers", "Eddy Workers", false, xs);
}
