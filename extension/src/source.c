/*-------------------------------------------------------------------------
 *
 * source.c
 *	  Reading the eddy's sources: the loop's READ state (exec.c).
 *
 * EddyReadSource returns the next source tuple as a fresh eddy tuple, or
 * NULL when there is none.  It reads the source the schedule chooses
 * (schedule.c; by default one after another in PostgreSQL's build order)
 * and before the first tuple reads one tuple of every scanned source
 * (peek_sources: one empty source makes the result empty).  Around the
 * read: an exchanging participant hands its state over when a source runs
 * out, or reads a source another process claimed at once (parallel.c);
 * a spilled eddy reads the batch's files (spill.c); the routing hold is
 * checked (schedule.c); the source's local chain runs, in its scan or on
 * the values it returned (local.c); a tuple the chain drops asks for a
 * point of stasis when state may migrate (migrate.c); and after a source
 * ran out, the modules' state says whether the result can still grow
 * (result_ended).
 *
 * Every call happens at a point of stasis or between two source tuples:
 * nothing routed is in flight.
 *
 *-------------------------------------------------------------------------
 */
#include "loop.h"

#include "miscadmin.h"
#include "port/pg_bitutils.h"

/*
 * Before the first tuple is routed, read one tuple of every scanned
 * source: if one is empty, so is the block's result (every result holds a
 * row of every source), and the eddy is done before it stores anything (a
 * cross product of the other sources, say, that PostgreSQL never builds).
 * Each source keeps the tuple it read in its slot, untouched until the
 * schedule reads that source next.
 */
static bool
peek_sources(EddyState *es)
{
	int			i;

	es->peeked = true;
	es->peeking = true;			/* local chains stand aside (local_qual_eval) */
	for (i = 0; i < es->nsources; i++)
	{
		EddySource *src = &es->sources[i];

		if (src->method != EDDY_SOURCE_SCAN)
			continue;
		src->pending = ExecProcNode(src->plan);
		if (TupIsNull(src->pending))
		{
			src->pending = NULL;
			es->peeking = false;
			return false;
		}
	}
	es->peeking = false;
	return true;
}

/*
 * Priors from the data.  A join direction whose far side is read to its end
 * probes a state that will not change: its STAIR's entries per group (per
 * distinct key, as far as hashes tell) is the fan-out of a probe that finds
 * its key, where the planner's estimate may be a default (joins on
 * expressions: 1/200 per pair).  The prior becomes the lower of the two,
 * and the direction is marked for exploration (routing.c, rank_ratio).
 * Not while the eddy spills or exchanges its state (a STAIR is then not
 * all of its side).
 */
static void
data_priors(EddyState *es)
{
	int			mi;

	if (es->spill != NULL || es->exchange)
		return;
	for (mi = 0; mi < es->nmodules; mi++)
	{
		EddyModule *m = es->modules[mi];
		int			d;

		for (d = 0; d < m->ndirs; d++)
		{
			uint32		far_side = 0;
			Stair	   *far = EddyJoinFarStair(m, d, &far_side);
			EddyModuleStats *st = &m->stats[d];
			double		fanout;

			if (far == NULL || !far->complete || st->data_prior ||
				(far_side & es->scanned & ~es->exhausted) != 0)
				continue;
			fanout = far->ngroups > 0 ?
				(double) far->nentries / (double) far->ngroups : 0.0;
			st->prior_ratio = Min(st->prior_ratio, fanout);
			st->data_prior = true;
		}
	}
}

/*
 * The far STAIRs of probe-only directions (module.h, EddyJoinFarStair)
 * whose probers are still being read: whatever could insert into them is
 * exhausted, and what remains is probes, so small ones are spread for
 * probing (StairSpreadForProbes), as far as eddy.max_memory leaves room.
 * Asked again at every exhaustion: spreading a STAIR spread already changes
 * nothing, and one that no source will probe any more is left alone.
 */
static void
spread_final_stores(EddyState *es)
{
	int			k;

	for (k = 0; k < es->nmodules; k++)
	{
		EddyModule *m = es->modules[k];
		int			dir;

		if (m->state == NULL || m->state->probe_only == NULL)
			continue;
		for (dir = 0; dir < m->ndirs; dir++)
		{
			uint32		far_side;
			Stair	   *far = EddyJoinFarStair(m, dir, &far_side);

			if (far != NULL &&
				(m->state->spec(m)->side[dir] & ~es->exhausted) != 0 &&
				m->state->probe_only(es, m, dir))
			{
				Size		used = EddyStateMemory(es);

				/* within eddy.max_memory: spreading must not make it spill */
				StairSpreadForProbes(far, used < es->max_memory ?
									 es->max_memory - used : 0);
			}
		}
	}
}

/* Source i has no more rows (for this participant, or at all) */
void
EddySourceExhausted(EddyState *es, int i)
{
	EddySource *src = &es->sources[i];

	src->exhausted = true;
	src->exhausted_rank = ++es->nexhausted;
	es->exhausted |= 1u << i;
	data_priors(es);
	EddyStorePrereqsUpdate(es);
	spread_final_stores(es);
	es->check_end = true;
	if (unlikely(es->holding))
		EddyScheduleCheckHold(es);
}

/*
 * A source ran out: can the result still grow?  Not when a module's state
 * says no result can be made any more (its `ended` operation: a hash join
 * with a side read to its end and nothing stored): then the eddy ends
 * without reading the rest of its sources, as PostgreSQL's hash join does
 * not read its outer side when its inner one was empty.  Called by
 * EddyReadSource, at a point of stasis.  Not while the eddy spills (a batch's
 * state is partly in its files) nor in an eddy that exchanges its state
 * (its STAIRs are not yet everyone's).  First, the sources a module says
 * are of no use any more (the state interface's cut: a hybrid join that
 * answers every probe by index) are marked exhausted, and the modules
 * asked about those too.
 */
static bool
result_ended(EddyState *es)
{
	int			side = -1;
	int			m;

	es->check_end = false;
	if ((es->scanned & ~es->exhausted) == 0)
		return false;			/* the ordinary end */
	if (es->spill != NULL || es->exchange)
		return false;
	/* sources whose remaining tuples a module says are of no use */
	for (m = 0; m < es->nmodules; m++)
	{
		EddyModule *mod = es->modules[m];
		uint32		cut;

		if (mod->state == NULL || mod->state->cut == NULL)
			continue;
		cut = mod->state->cut(es, mod) & es->scanned & ~es->exhausted;
		while (cut != 0)
		{
			int			i = pg_rightmost_one_pos32(cut);

			cut &= cut - 1;
			es->sources[i].cut = true;
			EddySourceExhausted(es, i);
		}
	}
	if ((es->scanned & ~es->exhausted) == 0)
		return false;
	es->check_end = false;
	for (m = 0; m < es->nmodules; m++)
	{
		EddyModule *mod = es->modules[m];

		if (mod->state != NULL && mod->state->ended(es, mod, &side) >= 0)
			break;
	}
	if (m == es->nmodules)
		return false;
	es->ended_by = m + 1;
	es->ended_side = side;
	es->ended_loops++;
	return true;
}

/*
 * The next source tuple, or NULL when every source is exhausted.  Its row
 * points into the source's slot (tuple.c), valid until the next point of
 * stasis.
 */
EddyTuple *
EddyReadSource(EddyState *es)
{
	if (unlikely(!es->peeked))
	{
		/*
		 * An exchanging participant reads no source ahead: its share of one
		 * may be empty while the others' are not (parallel.c).
		 */
		if (es->exchange && !es->exchange_started && EddyExchangeStart(es))
			es->peeked = true;
		else if (!peek_sources(es))
			return NULL;		/* a source is empty: so is the result */
	}

	for (;;)
	{
		int			i;
		EddySource *src;
		TupleTableSlot *slot;
		EddyTuple  *t;
		uint64		done;
		bool		from_scan;
		bool		filled;

		if (unlikely(es->check_end) && result_ended(es))
			return NULL;
		if (likely(es->schedule == EDDY_SCHEDULE_BUILD && !es->delayed))
		{
			/* build order: the first source in order that is not exhausted */
			if (es->next_source >= es->nsources)
				return NULL;
			i = es->source_order[es->next_source];
			if (es->sources[i].method != EDDY_SOURCE_SCAN || es->sources[i].exhausted)
			{
				es->next_source++;
				continue;
			}
			/* a source far larger than those left: read it last (schedule.c) */
			if (unlikely(es->sources[i].nread >= es->sources[i].defer_check_at) &&
				EddyScheduleDefer(es, i))
				continue;
		}
		else if ((i = EddyScheduleNext(es)) < 0)
			return NULL;
		src = &es->sources[i];
		if (unlikely(es->claimed & (1u << i)) && es->exchange_active &&
			!EddyExchangeMayRead(es, i))
		{
			/* another process reads it whole: exchange at once */
			EddyExchangeSource(es, i);
			EddySourceExhausted(es, i);
			continue;
		}
		from_scan = true;
		if (src->pending != NULL)
		{
			slot = src->pending;	/* read by peek_sources */
			src->pending = NULL;
		}
		else if (unlikely(es->spill != NULL))
		{
			slot = EddySpillRead(es, i);	/* a batch's file */
			from_scan = false;
		}
		else
			slot = ExecProcNode(src->plan);
		if (TupIsNull(slot))
		{
			/* exchanging: the others' rows of it first (a point of stasis) */
			if (unlikely(es->exchange_active))
				EddyExchangeSource(es, i);
			EddySourceExhausted(es, i);
			continue;
		}
		src->nread++;
		es->seq++;				/* the driver's arrival (SteM mode) */
		es->unbuilt = src->nbuild > 0; /* BuildFirst: es->build_first */
		if (unlikely(es->holding))
			EddyScheduleCheckHold(es);
		slot_getsomeattrs(slot, src->ncols);
		done = 0;
		filled = false;
		if (src->local_qual != NULL && !src->local_qual->passed &&
			!es->peeking && es->spill == NULL &&
			(src->local_generation != es->router.generation ||
			 src->local_exhausted != es->exhausted ||
			 --src->local_recheck <= 0))
			EddyLocalChainCompute(es, i, src);	/* may put the chain back */
		if (from_scan && src->local_qual != NULL && src->local_qual->passed)
		{
			/* its scan's qual began routing it (local_qual_eval) */
			EddyLocalQual *lq = src->local_qual;

			lq->passed = false;
			done = lq->done;
			es->current_started = true;
			es->current_fresh = !lq->noted;
			es->current_timed = lq->timed;
		}
		else if (src->local_sels)
		{
			if (!EddyRouteLocally(es, i, src, slot, &done))
			{
				/* dropped: nothing was made of it */
				if (unlikely(es->migrating))
				{
					/* migration looks at every point of stasis */
					es->stasis_due = true;
					return NULL;
				}
				CHECK_FOR_INTERRUPTS();
				continue;
			}
			filled = done != 0;
		}
		t = EddyTupleAlloc(es, &es->transient);
		memset(t->rows, 0, sizeof(EddyRow *) * es->nsources);
		t->spans = 1u << i;
		t->done = done;
		t->rows[i] = EddyRowFromSlot(es, src, slot);
		if (filled)
		{
			/* EddyRouteLocally put its values in the wide slot */
			es->loaded[i] = t->rows[i];
			es->loaded_any = true;
		}
		return t;
	}
}

/* The tuple descriptor of source i's columns (palloc'd in the current context) */
TupleDesc
EddySourceTupleDesc(EddyState *es, int i)
{
	EddySource *src = &es->sources[i];
	TupleDesc	wide = es->wide->tts_tupleDescriptor;
	TupleDesc	desc = CreateTemplateTupleDesc(src->ncols);
	int			c;

	for (c = 0; c < src->ncols; c++)
		TupleDescCopyEntry(desc, c + 1, wide, src->first_col + c + 1);
	return desc;
}
