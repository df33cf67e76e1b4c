/*-------------------------------------------------------------------------
 *
 * spill.c
 *	  Spilling: a join eddy whose state outgrows eddy.max_memory finishes
 *	  the query in batches, its input partitioned to temporary files, as
 *	  PostgreSQL's hash join does (nodeHash.c), generalised to the eddy's
 *	  multi-way joins.
 *
 * When.  The state's memory is checked as it grows (tuple.c); past
 * eddy.max_memory the eddy asks for a spill, which happens at the next
 * point of stasis (exec.c), once per scan.  For testing,
 * eddy.debug_spill_after = N forces one (into 4 batches) at the first point
 * of stasis after N tuples routed, whatever the memory: the differential
 * suites and the fuzzer run with it.  An eddy that cannot spill (SteM
 * mode, which numbers its arrivals; an eddy with no hash join, which holds
 * no state) goes on over the limit, as PostgreSQL's hash join does when a
 * batch cannot be split, and EXPLAIN ANALYZE says so.  Exceeding the limit
 * is never an error: a query that runs without the eddy runs with it.
 *
 * What is left to compute.  At a point of stasis the eddy has returned
 * every result made of the rows read so far (P), and its STAIRs hold the
 * rows of P that can be in a future result (Q: a row in no entry is in
 * none ever, the argument of state migration, migrate.c).  What remains is
 * every result with at least one row still unread (U), its other rows in
 * Q.
 *
 * How.  Choose a partitioning (below) into nbatch batches such that every
 * result falls in exactly one.  Write every row of Q (marked "from the
 * state", with the done bits of the selections on its relation alone that
 * it passed) and then every row of U (read from the sources to their end)
 * to the batches' files, and free the state.  Then, per batch: replay the
 * batch's rows from the state with their results dropped (EddyReplay, as
 * state migration does), which rebuilds the state an eddy would hold after
 * reading them, and then read the batch's unread rows as sources, one
 * after another, with results returned as usual.  Every result with a row
 * of U is made exactly once (the STAIRs paper's Theorem 1: normal
 * execution from a state built by a valid history of the rows read makes
 * exactly the results with a future tuple, each once), in the one batch
 * that holds it; the results made of rows of Q only are made by the
 * replay and dropped, since they were returned before the spill.
 *
 * Partitioning.  Every result holds one row of every source.  So
 * partitioning one source's rows into disjoint batches (dealing them out
 * in turn), and giving every batch all the rows of every other source,
 * puts every result in exactly one batch, the one of its row of that
 * source.  Or the two ends of a hash join with two scanned ends are
 * partitioned alike by the hash of their join keys (the STAIRs' hash:
 * equal keys, cross-type ones included, hash alike): a result's two rows
 * joined there agree on their keys, so they fall into the same batch, and
 * a row with a NULL key is in no result and is dropped.  What a
 * partitioning splits is the state held by tuples spanning a source it
 * partitions; everything else is in every batch, and so is the work of
 * the other sources (their rows are read, routed and index-joined again by
 * every batch).  So the choice is made on the state itself: one pass over
 * the STAIRs counts, per candidate (every such hash join, every scanned
 * source), the entries whose tuple spans a source it partitions, each
 * projected to the end of the sources it spans (the rows a source is
 * expected to give, over those read).  The candidate chosen brings a
 * batch's state within the budget in the fewest batches (those of a hash
 * join are no more than the rows of its smaller end, which bound its
 * matching keys), else brings it lowest; of equals, the one splitting
 * most state, then the one partitioning most rows.  On TPC-H Q7 under
 * PostgreSQL's defaults with no parallel worker the state is lineitem's
 * rows, reached by an index join from supplier: hashing on customer ⋈
 * nation, the largest join with two scanned ends (the choice before), put
 * all of it into each of the two batches nation's two rows give, and read
 * supplier's index join again in each (27 s against 3.3 s for
 * PostgreSQL's plan); dealing supplier out into 4 batches took 7.3 s.  The
 * number of batches, a power of two from 2 to EDDY_SPILL_MAX_BATCHES,
 * aims each batch's state at half the limit.  A batch missing the rows of
 * a partitioned source has no result and is skipped.  A batch whose state
 * still outgrows the limit (skew: one key's rows, or the unpartitioned
 * sources alone) goes on over it and is counted.  What sources not read
 * yet will store is not projected.
 *
 * Batches read their sources in build order (nothing of the last one is
 * stored), whatever eddy.source_schedule says: delays and rates are for
 * data arriving, and spilled data has arrived.  State migration stops for
 * the rest of the scan (a batch's state is rebuilt from scratch anyway).
 * Routing goes on learning across batches.
 *
 * Files.  One BufFile per partitioned source per batch, one per other
 * source, created as rows come (temporary files in temp_tablespaces,
 * removed when the scan ends or is rescanned, and by the resource owner on
 * error and cancel); a row is its done bits and a MinimalTuple of its
 * source's columns.  A batch's rows are read back into one slot per source
 * (exec.c's rows point into the slot, valid until the source is read
 * again: the same rule as a child plan's slot).  Interrupts are checked for
 * every row written and read.
 *
 * EXPLAIN ANALYZE shows the batches, how they were made, the rows and
 * bytes written, and the batches that still outgrew the limit.
 *
 *-------------------------------------------------------------------------
 */
#include "exec.h"

#include <math.h>

#include "access/htup_details.h"
#include "common/hashfn.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "port/pg_bitutils.h"
#include "storage/buffile.h"
#include "utils/memutils.h"

/* batches, at most (each partitioned source's file has an 8 kB buffer) */
#define EDDY_SPILL_MAX_BATCHES	256
/* the share of eddy.max_memory a batch's state is aimed at */
#define EDDY_SPILL_FILL			0.5

/* A row's record: this header, then the MinimalTuple */
typedef struct SpillRecord
{
	uint32		len;			/* of the MinimalTuple */
	uint32		from_state;		/* a row of Q (above) */
	uint64		done;			/* selections on its relation alone passed */
} SpillRecord;

typedef struct SpillSource
{
	TupleDesc	desc;			/* the source's columns */
	TupleTableSlot *slot;		/* a batch's rows are read into it */
	bool		partitioned;
	int			side;			/* the partitioning join's side it is */
	BufFile   **files;			/* per batch if partitioned, else one */
	BufFile    *cur;			/* the file read in this batch */
	bool		ahead;			/* slot holds an unread row read ahead */
	bool		eof;
} SpillSource;

struct EddySpill
{
	int			nbatch;
	int			batch;			/* being joined; -1 before the first */
	EddyModule *join;			/* partitioning hash join, or NULL */
	int			dealt;			/* without one: the source dealt out */
	bool		forced;			/* by eddy.debug_spill_after */
	uint64		deal_next;
	SpillSource *srcs;			/* per source; scanned ones used */
	MemoryContext cxt;
	MemoryContext rowcxt;		/* per row written */
	uint16		stamp;			/* EddyRow.mark of the rows written */

	/* what the spill changed, restored at a rescan */
	EddySchedule schedule;
	bool		delayed;
	bool		migrating;

	/* EXPLAIN ANALYZE */
	uint64		routed_at;		/* tuples routed when it happened */
	uint64		state_rows;
	uint64		rows;
	uint64		bytes;
	int			joined;			/* batches joined (the others were empty) */
	int			over;			/* ... whose state outgrew the limit (the
								 * batch being joined: es->spill_over_now,
								 * set by EddyCheckMemory, tuple.c) */
};

/* ----------------------------------------------------------------
 *		Whether and how
 * ----------------------------------------------------------------
 */

/* Can this eddy spill?  Set when the node starts (exec.c). */
void
EddySpillInit(EddyState *es)
{
	int			i;

	es->spill = NULL;
	es->spill_over_now = false;
	es->spill_wanted = false;
	es->over_limit = false;
	es->can_spill = false;
	es->spill_after = 0;
	if (es->chain || es->spill_refused != NULL || es->exchange)
		return;
	for (i = 0; i < es->nmodules; i++)
		if (es->modules[i]->state != NULL)
			es->can_spill = true;
	if (es->can_spill)
		es->spill_after = (uint64) eddy_debug_spill_after;
	es->spill_after_setting = es->spill_after;
}

/*
 * eddy.debug_spill_after: spill now (at a point of stasis), whatever the
 * memory used, unless nothing is left to read.  Once per scan.
 */
void
EddySpillForce(EddyState *es)
{
	es->spill_after = 0;
	if (es->spill == NULL && (es->scanned & ~es->exhausted) != 0)
	{
		es->spill_wanted = true;
		es->spill_forced = true;
	}
}

/* Rows a source is expected to give in all */
static double
source_total(EddySource *src)
{
	if (src->exhausted)
		return (double) src->nread;
	return Max(src->est_rows, (double) src->nread);
}

/*
 * The state a source's rows will hold: its rows, except for the last
 * source batches read (build order), which is never stored.
 */
static double
source_weight(EddyState *es, int i)
{
	int			k;

	if (!(es->scanned & (1u << i)))
		return 0.0;
	for (k = es->nsources - 1; k >= 0; k--)
		if (es->scanned & (1u << es->source_order[k]))
			break;
	if (k >= 0 && es->source_order[k] == i)
		return 0.0;
	return source_total(&es->sources[i]);
}

/*
 * A way to partition (choose_partitioning): the sources whose rows it
 * splits, how many batches it can split them into at most, and the state
 * it splits.
 */
typedef struct SpillCandidate
{
	EddyModule *join;			/* a hash join hashed on, or NULL: dealt out */
	int			dealt;			/* ... the source dealt out */
	uint32		mask;			/* the sources it splits */
	double		cap;			/* batches with rows, at most */
	double		split;			/* projected state entries spanning mask */
	double		rows;			/* rows of the sources it splits */
} SpillCandidate;

/* Batches for a candidate, and the state a batch is expected to hold */
static double
candidate_batches(SpillCandidate *c, double total, double per_entry,
				  double budget, double *per_batch)
{
	double		most = Min((double) EDDY_SPILL_MAX_BATCHES, Max(c->cap, 1.0));
	double		rest = (total - c->split) * per_entry;
	double		part = c->split * per_entry;
	double		want;

	if (rest >= budget)
		want = most;
	else
		want = Min(ceil(part / (budget - rest)), most);
	want = Max(want, 2.0);
	*per_batch = rest + part / Min(want, most);
	return want;
}

/*
 * Choose the partitioning and the number of batches.  See the header: the
 * candidates are every hash join with two scanned ends (hashed on its
 * keys) and every scanned source (dealt out); the state each one splits is
 * counted in the STAIRs (the entries whose tuple spans a source it
 * splits), each entry projected to the end of the sources it spans.
 */
static void
choose_partitioning(EddyState *es, EddySpill *sp, Size used)
{
	SpillCandidate *cands;
	int			ncands = 0;
	double		total = 0.0;	/* projected entries */
	double		entries = 0.0;	/* entries now */
	double	   *growth;
	double		budget = (double) es->max_memory * EDDY_SPILL_FILL;
	double		per_entry;
	double		best_batches = 0.0;
	double		best_per_batch = 0.0;
	int			best = -1;
	int			i;
	EddyEntryIter ei;
	void	   *payload;

	cands = palloc0(sizeof(SpillCandidate) * (es->nmodules + es->nsources));
	growth = palloc(sizeof(double) * es->nsources);
	for (i = 0; i < es->nsources; i++)
	{
		EddySource *src = &es->sources[i];

		growth[i] = src->exhausted ? 1.0 :
			Max(source_total(src) / Max((double) src->nread, 1.0), 1.0);
		if (!(es->scanned & (1u << i)))
			continue;
		cands[ncands].dealt = i;
		cands[ncands].mask = 1u << i;
		cands[ncands].cap = source_total(src);
		cands[ncands].rows = source_total(src);
		ncands++;
	}
	for (i = 0; i < es->nmodules; i++)
	{
		EddyModule *m = es->modules[i];
		EddyJoinSpec *spec;

		if (m->state == NULL)
			continue;
		spec = m->state->spec(m);
		if (spec->nkeys == 0 ||
			!(es->scanned & (1u << spec->rel[0])) ||
			!(es->scanned & (1u << spec->rel[1])))
			continue;
		cands[ncands].join = m;
		cands[ncands].dealt = -1;
		cands[ncands].mask = (1u << spec->rel[0]) | (1u << spec->rel[1]);
		/* matching keys, at most: as many as the smaller end has rows */
		cands[ncands].cap = Min(source_total(&es->sources[spec->rel[0]]),
								source_total(&es->sources[spec->rel[1]]));
		cands[ncands].rows = source_total(&es->sources[spec->rel[0]]) +
			source_total(&es->sources[spec->rel[1]]);
		ncands++;
	}

	/* the census: every STAIR entry, the sources it spans */
	EddyEntryIterBegin(&ei, es);
	while ((payload = EddyEntryIterNext(&ei)) != NULL)
	{
		uint32		spans;
		uint32		bits;
		double		g = 1.0;
		int			c;

		CHECK_FOR_INTERRUPTS();
		spans = (EddyPayloadIsRow(payload) ? 1u << ei.spec->rel[ei.s] :
				 ((EddyTuple *) payload)->spans) & es->scanned;
		/* it grows with the least read of the sources it spans */
		for (bits = spans; bits != 0; bits &= bits - 1)
			g = Max(g, growth[pg_rightmost_one_pos32(bits)]);
		entries += 1.0;
		total += g;
		for (c = 0; c < ncands; c++)
			if (spans & cands[c].mask)
				cands[c].split += g;
	}

	if (entries > 0.0)
	{
		/*
		 * The fewest batches that bring a batch's state within the budget
		 * (what is not split is in every batch; a split can use no more
		 * batches than it has keys or rows), else the least state a batch
		 * can be brought to; of equals, the one splitting most.
		 */
		per_entry = (double) used / entries;
		for (i = 0; i < ncands; i++)
		{
			double		pb;
			double		nb = candidate_batches(&cands[i], total, per_entry,
											   budget, &pb);
			bool		fits = pb <= budget;
			bool		best_fits = best >= 0 && best_per_batch <= budget;
			bool		better;

			if (best < 0)
				better = true;
			else if (fits != best_fits)
				better = fits;
			else if (fits && nb != best_batches)
				better = nb < best_batches;
			else if (!fits && pb != best_per_batch)
				better = pb < best_per_batch;
			else if (cands[i].split != cands[best].split)
				better = cands[i].split > cands[best].split;
			else
				better = cands[i].rows > cands[best].rows;	/* less read again */
			if (better)
			{
				best = i;
				best_batches = nb;
				best_per_batch = pb;
			}
		}
	}
	else
	{
		/* nothing stored yet (transient memory): the largest source */
		double		w = -1.0;

		for (i = 0; i < ncands; i++)
			if (cands[i].join == NULL &&
				source_weight(es, cands[i].dealt) > w)
			{
				w = source_weight(es, cands[i].dealt);
				best = i;
			}
		best_batches = 2.0;
	}
	Assert(best >= 0);

	sp->join = cands[best].join;
	sp->dealt = cands[best].dealt;
	if (sp->join != NULL)
	{
		EddyJoinSpec *spec = sp->join->state->spec(sp->join);
		int			s;

		for (s = 0; s < 2; s++)
		{
			sp->srcs[spec->rel[s]].partitioned = true;
			sp->srcs[spec->rel[s]].side = s;
		}
	}
	else
		sp->srcs[sp->dealt].partitioned = true;
	sp->nbatch = (int) pg_nextpower2_32((uint32) Min(best_batches,
													 (double) EDDY_SPILL_MAX_BATCHES));
	if (sp->forced)
		sp->nbatch = 4;			/* eddy.debug_spill_after: a few batches */
	pfree(cands);
	pfree(growth);
}

/* ----------------------------------------------------------------
 *		Writing
 * ----------------------------------------------------------------
 */

/*
 * Write a row of source i (from the state, or unread) to its batch's file:
 * the batch of its partitioning keys' hash, dealt out, or its one file.
 * A row whose partitioning key is NULL joins nothing and is dropped.
 */
static void
write_row(EddyState *es, int i, EddyRow *row, uint64 done, bool from_state)
{
	EddySpill  *sp = es->spill;
	SpillSource *ss = &sp->srcs[i];
	int			b = 0;
	MinimalTuple mt;
	SpillRecord rec;
	MemoryContext old;

	CHECK_FOR_INTERRUPTS();
	MemoryContextReset(sp->rowcxt);
	old = MemoryContextSwitchTo(sp->rowcxt);
	if (ss->partitioned && sp->join != NULL)
	{
		EddyJoinSpec *spec = sp->join->state->spec(sp->join);
		EddyTuple  *t = EddyTupleAlloc(es, &es->transient);
		Datum	   *keys = palloc(sizeof(Datum) * spec->nkeys);
		uint32		hash;

		memset(t->rows, 0, sizeof(EddyRow *) * es->nsources);
		t->spans = 1u << i;
		t->done = 0;
		t->rows[i] = row;
		if (!EddyJoinKeys(es, spec, ss->side, t, keys, &es->transient) ||
			!StairKeysHash(&spec->keys, ss->side, keys, NULL, &hash))
		{
			MemoryContextSwitchTo(old);
			return;
		}
		/* mixed: the STAIRs take their slots from the low bits */
		b = (int) (murmurhash32(hash) & (uint32) (sp->nbatch - 1));
	}
	else if (ss->partitioned)
		b = (int) (sp->deal_next++ % (uint64) sp->nbatch);
	mt = heap_form_minimal_tuple(ss->desc, row->values, row->isnull);
	MemoryContextSwitchTo(old);

	if (ss->files[b] == NULL)
	{
		old = MemoryContextSwitchTo(sp->cxt);
		ss->files[b] = BufFileCreateTemp(false);
		MemoryContextSwitchTo(old);
	}
	rec.len = mt->t_len;
	rec.from_state = from_state;
	rec.done = done;
	BufFileWrite(ss->files[b], &rec, sizeof(rec));
	BufFileWrite(ss->files[b], mt, mt->t_len);
	sp->rows++;
	sp->bytes += sizeof(rec) + mt->t_len;
	if (from_state)
		sp->state_rows++;
}

/* Close a source's batch files, if it has any (the last batch done, or an end) */
static void
close_source_files(EddySpill *sp, SpillSource *ss)
{
	int			b;

	if (ss->files == NULL)
		return;
	for (b = 0; b < (ss->partitioned ? sp->nbatch : 1); b++)
		if (ss->files[b] != NULL)
			BufFileClose(ss->files[b]);
	ss->files = NULL;
	ss->cur = NULL;
}

/*
 * Write the rows the STAIRs hold, each once (EddyRow.mark, cleared first:
 * state migration stamps it too), with the done bits of the selections on
 * its relation alone that an entry holding it passed.
 */
static void
write_state(EddyState *es, uint64 *xonly)
{
	EddySpill  *sp = es->spill;
	int			pass;

	for (pass = 0; pass < 2; pass++)
	{
		EddyEntryIter ei;
		void	   *payload;

		EddyEntryIterBegin(&ei, es);
		while ((payload = EddyEntryIterNext(&ei)) != NULL)
		{
			EddyTuple  *t;
			uint32		bits;

			CHECK_FOR_INTERRUPTS();
			if (EddyPayloadIsRow(payload))
			{
				EddyRow    *row = EddyPayloadRow(payload);

				if (pass == 0)
					row->mark = 0;
				else if (row->mark != sp->stamp)
				{
					row->mark = sp->stamp;
					write_row(es, ei.spec->rel[ei.s], row, 0, true);
					EddyForgetTransient(es);
				}
				continue;
			}
			t = (EddyTuple *) payload;
			bits = t->spans & es->scanned;
			while (bits != 0)
			{
				int			x = pg_rightmost_one_pos32(bits);
				EddyRow    *row = t->rows[x];

				bits &= bits - 1;
				if (pass == 0)
					row->mark = 0;
				else if (row->mark != sp->stamp)
				{
					row->mark = sp->stamp;
					write_row(es, x, row, t->done & xonly[x], true);
					EddyForgetTransient(es);
				}
			}
		}
	}
}

/* Read every source to its end, writing its rows */
static void
write_unread(EddyState *es)
{
	int			i;

	for (i = 0; i < es->nsources; i++)
	{
		EddySource *src = &es->sources[i];

		if (!(es->scanned & (1u << i)) || src->exhausted)
			continue;
		for (;;)
		{
			TupleTableSlot *slot;

			if (src->pending != NULL)
			{
				slot = src->pending;
				src->pending = NULL;
			}
			else
				slot = ExecProcNode(src->plan);
			if (TupIsNull(slot))
				break;
			src->nread++;
			slot_getsomeattrs(slot, src->ncols);
			write_row(es, i, EddyRowFromSlot(es, src, slot), 0, false);
			EddyForgetTransient(es);
		}
		src->exhausted = true;
		src->exhausted_rank = ++es->nexhausted;
		es->exhausted |= 1u << i;
	}
}

/* Empty every STAIR and free the state */
static void
free_state(EddyState *es)
{
	int			i;

	for (i = 0; i < es->nmodules; i++)
	{
		EddyModule *m = es->modules[i];

		if (m->state != NULL)
			m->state->clear(es, m);
	}
	EddyArenaReset(&es->transient);
	EddyArenaReset(&es->stored);
	es->free_tuples = NULL;
	memset(es->loaded, 0, sizeof(EddyRow *) * es->nsources);
	es->loaded_any = false;
}

/*
 * Spill (exec.c, at a point of stasis, after EddyCheckMemory asked for
 * it): write the rows the state holds and every unread row to the
 * batches' files, free the state, and leave every source exhausted, so
 * that the next read starts the first batch (EddySpillNextBatch).
 */
void
EddySpillStart(EddyState *es)
{
	EddySpill  *sp;
	MemoryContext old;
	Size		used = EddyStateMemory(es);
	uint64	   *xonly;
	int			i;

	Assert(es->nstack == 0 && es->spill == NULL && es->can_spill);
	es->spill_wanted = false;
	sp = palloc0(sizeof(EddySpill));
	sp->cxt = AllocSetContextCreate(es->css.ss.ps.state->es_query_cxt,
									"eddy spill", ALLOCSET_DEFAULT_SIZES);
	sp->rowcxt = AllocSetContextCreate(sp->cxt, "eddy spill row",
									   ALLOCSET_DEFAULT_SIZES);
	sp->stamp = 1;
	sp->batch = -1;
	sp->forced = es->spill_forced;
	es->spill_forced = false;
	sp->routed_at = EddyRouterRouted(&es->router);
	old = MemoryContextSwitchTo(sp->cxt);
	sp->srcs = palloc0(sizeof(SpillSource) * es->nsources);
	choose_partitioning(es, sp, used);
	for (i = 0; i < es->nsources; i++)
	{
		SpillSource *ss = &sp->srcs[i];

		if (!(es->scanned & (1u << i)))
			continue;
		ss->desc = EddySourceTupleDesc(es, i);
		ss->slot = MakeSingleTupleTableSlot(ss->desc, &TTSOpsMinimalTuple);
		ss->files = palloc0(sizeof(BufFile *) *
							(ss->partitioned ? sp->nbatch : 1));
	}

	/* the selections on one relation alone: their done bits are kept */
	xonly = EddySelectionsAlone(es);
	MemoryContextSwitchTo(old);

	es->spill = sp;
	es->spill_over_now = false;
	write_state(es, xonly);
	write_unread(es);
	free_state(es);

	/* batches: build order, no migration */
	sp->schedule = es->schedule;
	sp->delayed = es->delayed;
	sp->migrating = es->migrating;
	es->schedule = EDDY_SCHEDULE_BUILD;
	es->delayed = false;
	es->migrating = false;
	es->next_source = es->nsources;
}

/* ----------------------------------------------------------------
 *		Batches
 * ----------------------------------------------------------------
 */

/* Read source i's next row of this batch into its slot; false at the end */
static bool
read_record(EddySpill *sp, int i, uint64 *done, bool *from_state)
{
	SpillSource *ss = &sp->srcs[i];
	SpillRecord rec;
	size_t		n;
	MinimalTuple mt;

	CHECK_FOR_INTERRUPTS();
	if (ss->cur == NULL)
		return false;
	n = BufFileRead(ss->cur, &rec, sizeof(rec));
	if (n == 0)
		return false;
	if (n != sizeof(rec))
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("eddy: could not read from a spill file: read only %zu of %zu bytes",
						n, sizeof(rec))));
	mt = MemoryContextAlloc(sp->cxt, rec.len);
	n = BufFileRead(ss->cur, mt, rec.len);
	if (n != rec.len)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("eddy: could not read from a spill file: read only %zu of %u bytes",
						n, rec.len)));
	ExecStoreMinimalTuple(mt, ss->slot, true);
	slot_getallattrs(ss->slot);
	*done = rec.done;
	*from_state = rec.from_state != 0;
	return true;
}

/*
 * The next batch, when the last one is done (exec.c, at a point of
 * stasis, when no source has a row left): rebuild its state from its rows
 * that were in the state (results dropped), and leave its unread rows to
 * be read.  False when every batch is done.
 */
bool
EddySpillNextBatch(EddyState *es)
{
	EddySpill  *sp = es->spill;
	EddySavedCounters saved;
	int			i;

	Assert(es->nstack == 0);
	if (sp->batch >= 0)
	{
		free_state(es);
		if (es->spill_over_now)
			sp->over++;
	}
	es->spill_over_now = false;
	for (;;)
	{
		bool		empty = false;

		if (++sp->batch >= sp->nbatch)
		{
			/* done: the files go now */
			for (i = 0; i < es->nsources; i++)
				close_source_files(sp, &sp->srcs[i]);
			return false;
		}
		for (i = 0; i < es->nsources; i++)
		{
			SpillSource *ss = &sp->srcs[i];

			if (!(es->scanned & (1u << i)))
				continue;
			ss->cur = ss->files[ss->partitioned ? sp->batch : 0];
			ss->ahead = false;
			ss->eof = false;
			/* a batch without rows of some source has no result */
			if (ss->cur == NULL)
				empty = true;
			else if (BufFileSeek(ss->cur, 0, 0, SEEK_SET) != 0)
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("eddy: could not rewind a spill file")));
		}
		if (!empty)
			break;
	}
	sp->joined++;

	/* every source has its batch's rows to come */
	es->exhausted = 0;
	es->nexhausted = 0;
	es->next_source = 0;
	for (i = 0; i < es->nsources; i++)
	{
		es->sources[i].exhausted = false;
		es->sources[i].exhausted_rank = 0;
	}
	EddyStorePrereqsUpdate(es);

	/*
	 * Replay the rows from the state: their results were returned.  As in
	 * state migration, the replay is not counted (a selection's passes
	 * without its tuples in made Q7's selectivities over 1, and routing
	 * reads them).
	 */
	EddySaveCounters(es, &saved);
	es->replaying = true;
	for (i = 0; i < es->nsources; i++)
	{
		SpillSource *ss = &sp->srcs[i];
		uint64		done;
		bool		from_state;

		if (!(es->scanned & (1u << i)))
			continue;
		while (read_record(sp, i, &done, &from_state))
		{
			EddyTuple  *t;

			if (!from_state)
			{
				ss->ahead = true;	/* the first unread row */
				break;
			}
			t = EddyTupleAlloc(es, &es->transient);
			memset(t->rows, 0, sizeof(EddyRow *) * es->nsources);
			t->spans = 1u << i;
			t->done = done;
			t->rows[i] = EddyRowFromSlot(es, &es->sources[i], ss->slot);
			EddyReplay(es, t);
			EddyForgetTransient(es);
		}
		if (!ss->ahead)
			ss->eof = true;
	}
	es->replaying = false;
	EddyRestoreCounters(es, &saved);
	EddyCheckMemory(es);
	return true;
}

/* Source i's next unread row of this batch (source.c), or NULL */
TupleTableSlot *
EddySpillRead(EddyState *es, int i)
{
	EddySpill  *sp = es->spill;
	SpillSource *ss = &sp->srcs[i];
	uint64		done;
	bool		from_state;

	if (ss->ahead)
	{
		ss->ahead = false;
		return ss->slot;
	}
	if (ss->eof || !read_record(sp, i, &done, &from_state))
	{
		ss->eof = true;
		return NULL;
	}
	Assert(!from_state && done == 0);
	return ss->slot;
}

/* Add a spill's counters to the scan's totals */
static void
add_totals(EddySpillTotals *tot, EddySpill *sp, bool over_now)
{
	tot->spills++;
	tot->batches += sp->joined;
	tot->over += sp->over + (over_now ? 1 : 0);
	tot->rows += sp->rows;
	tot->state_rows += sp->state_rows;
	tot->bytes += sp->bytes;
}

/*
 * Close the files and forget the spill (rescan: its counters go to the
 * totals EXPLAIN shows), or just close them (the node ends).
 */
void
EddySpillEnd(EddyState *es, bool rescan)
{
	EddySpill  *sp = es->spill;
	int			i;

	es->spill_wanted = false;
	es->spill_forced = false;
	if (rescan)
		es->spill_after = es->spill_after_setting;
	if (sp == NULL)
		return;
	for (i = 0; i < es->nsources; i++)
	{
		SpillSource *ss = &sp->srcs[i];

		if (ss->slot != NULL)
			ExecDropSingleTupleTableSlot(ss->slot);
		ss->slot = NULL;
		close_source_files(sp, ss);
	}
	if (!rescan)
		return;
	es->schedule = sp->schedule;
	es->delayed = sp->delayed;
	es->migrating = sp->migrating;
	add_totals(&es->spill_totals, sp, es->spill_over_now);
	MemoryContextDelete(sp->cxt);
	pfree(sp);
	es->spill = NULL;
}

/* The scan's spill counters so far: earlier loops' and the current spill's */
void
EddySpillTotalsNow(EddyState *es, EddySpillTotals *tot)
{
	*tot = es->spill_totals;
	if (es->spill != NULL)
		add_totals(tot, es->spill, es->spill_over_now);
}

/* EXPLAIN ANALYZE: the spill, if the eddy spilled (explain.c) */
void
EddySpillExplain(EddyState *es, ExplainState *xs)
{
	EddySpill  *sp = es->spill;
	EddySpillTotals tot;
	StringInfoData buf;

	EddySpillTotalsNow(es, &tot);
	if (tot.spills == 0)
	{
		if (es->over_limit)
			ExplainPropertyText("Memory Limit",
								psprintf("exceeded (%s)",
										 es->spill_refused != NULL ?
										 es->spill_refused : "nothing to spill"),
								xs);
		return;
	}
	initStringInfo(&buf);
	if (sp != NULL && sp->join != NULL)
		appendStringInfo(&buf, "%d, on Hash Join %d", sp->nbatch,
						 sp->join->index + 1);
	else if (sp != NULL)
		appendStringInfo(&buf, "%d, dealing out %s", sp->nbatch,
						 es->sources[sp->dealt].name ? es->sources[sp->dealt].name : "?");
	else
		appendStringInfo(&buf, "%d", (int) tot.batches);
	if (sp != NULL && sp->forced)
		appendStringInfoString(&buf, " (forced)");
	ExplainPropertyText("Spill Batches", buf.data, xs);
	if (xs->format != EXPLAIN_FORMAT_TEXT || tot.spills > 1)
		ExplainPropertyUInteger("Spills", NULL, tot.spills, xs);
	ExplainPropertyUInteger("Batches Joined", NULL, tot.batches, xs);
	if (sp != NULL && xs->verbose)
		ExplainPropertyUInteger("Spilled At", "tuples routed", sp->routed_at, xs);
	ExplainPropertyUInteger("Rows Spilled", NULL, tot.rows, xs);
	if (xs->verbose)
		ExplainPropertyUInteger("Rows Spilled From State", NULL, tot.state_rows, xs);
	ExplainPropertyInteger("Bytes Spilled", "kB", (int64) ((tot.bytes + 1023) / 1024), xs);
	if (tot.over > 0 || xs->format != EXPLAIN_FORMAT_TEXT)
		ExplainPropertyUInteger("Batches Over Memory", NULL, tot.over, xs);
}
