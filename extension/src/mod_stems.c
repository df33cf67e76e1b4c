/*-------------------------------------------------------------------------
 *
 * mod_stems.c
 *	  The symmetric hash join module in SteM mode.
 *
 * SteM mode (eddy.state_mode = stems; Raman, Deshpande & Hellerstein, ICDE
 * 2003): a hash join module whose STAIRs hold base tuples of their end's
 * relation only, as a SteM does; an intermediate result is never stored:
 * it is made again from the stored base tuples each time a new tuple
 * needs it.  The routing
 * constraints of the SteMs paper (section 3.1) that keep every result
 * exactly once, and how this executor meets them:
 *
 *	 BuildFirst		a source tuple (the driver) is built into every STAIR of
 *					its relation before it probes anything: the loop calls
 *					stems_build (es->build_first, the documented callback)
 *					when the driver first goes to a join (after
 *					any selections on its relation alone, whose done bits the
 *					stored tuple keeps; a tuple they drop is never built).
 *	 BounceBack		a join never stores a probe tuple and never hands it
 *					back: it probes the other side's STAIR and its matches go
 *					on (the eddy's frames).
 *	 TimeStamp		every source tuple read gets the next arrival number
 *					(es->seq), and a stored row carries its own (row_seq); a
 *					probe matches only stored rows older than the driver, the
 *					newest component of the tuple probing.  Every tuple in
 *					flight is made from the driver read last (nothing
 *					intermediate is stored, and the eddy drains its matches
 *					to a point of stasis before it reads again), so the
 *					driver's number is es->seq.  Each result is made once, by
 *					its last-arriving scanned component probing the STAIRs of
 *					the others.  With one driver in flight the only stored row
 *					not older than it is the driver itself, which no tuple in
 *					flight can probe (they all span its relation): the check
 *					is what makes the rule hold, and it is cheap, but today it
 *					never rejects a match.
 *	 BoundedRepetition  a tuple visits each module once (its done bits).
 *
 * STAIR mode's rule on what can still be probed (mod_hashjoin.c) holds as
 * it is: side d's STAIR is probed by tuples spanning side 1 - d only,
 * whose drivers are side 1 - d's sources, so a base tuple is not built
 * into it once those are exhausted.  Against a unique side 1 - d, a base tuple whose one
 * partner is already stored is not built either: no later row of that
 * relation can match it.  The relation reached through an index join has
 * no arrivals of its own (its rows come only with the tuple that fetched
 * them; the SteMs paper needs a SteM caching index lookups and bouncing
 * probes back there, section 3.3), so an eddy with a hash join at the end
 * of such a relation keeps STAIRs, and EXPLAIN says why; index joins
 * themselves are the same in both modes.  State migration has nothing to
 * move in SteM mode (migrate.c).
 *
 * A hash join in SteM mode is the same struct as in STAIR mode
 * (mod_hashjoin.h): it begins as one (EddyHashJoinBegin), and
 * EddyStemsInit gives it this file's methods when the node starts in SteM
 * mode.  The two modes share the hashing, the insertion, EXPLAIN and the
 * state interface's readers through mod_hashjoin.c's functions.  The
 * state mode's demands on the loop and the services are set on the node
 * (node.h): the BuildFirst callback, rows stamped with their arrival, and
 * why the state neither migrates nor spills.
 *
 *-------------------------------------------------------------------------
 */
#include "mod_hashjoin.h"

#include "port/pg_bitutils.h"
#include "utils/lsyscache.h"

static EddyTuple *stems_route(EddyState *es, EddyModule *m, int dir,
							  EddyTuple *t);
static EddyTuple *stems_next(EddyState *es, EddyFrame *f);
static void stems_rescan(EddyState *es, EddyModule *m);
static bool stems_probe_only(EddyState *es, EddyModule *m, int dir);
static bool stems_probe_misses(EddyState *es, EddyModule *m, int dir,
							   Datum *keys, bool *isnull);
static void stems_build(EddyState *es, EddyTuple *t);

static const EddyModuleMethods stems_methods = {
	.label = "Hash Join",
	.joins = true,
	.route = stems_route,
	.next = stems_next,
	.rescan = stems_rescan,
	.end = EddyHashJoinEnd,
	.explain = EddyHashJoinExplain,
};

/*
 * Its state: the two SteMs.  Nothing is counted by signature (the eddy
 * does not migrate), and nothing is ever only probed.
 */
static const EddyStateMethods stems_state = {
	.nstores = 2,
	.store = EddyHashJoinStore,
	.spec = EddyHashJoinEnds,
	.clear = EddyHashJoinClear,
	.sigs = EddyHashJoinSigs,
	.forget_sigs = EddyHashJoinForgetSigs,
	.save_counters = EddyHashJoinSaveCounters,
	.restore_counters = EddyHashJoinRestoreCounters,
	.ended = EddyHashJoinEnded,
	.probe_only = stems_probe_only,
	.probe_misses = stems_probe_misses,
};

/*
 * Decide the state mode when the node starts: SteM mode when asked for and
 * every hash join's two ends are scanned (see the header), and then list,
 * per source, the hash join sides its rows build into.
 */
void
EddyStemsInit(EddyState *es)
{
	int			pass;
	int			i;
	int			s;

	es->state_mode = (EddyStateMode) eddy_state_mode;
	es->stems = false;
	es->stems_refused = NULL;
	es->seq = 0;
	es->unbuilt = false;
	es->build_first = NULL;
	es->stamp_rows = false;
	/* migrate_refused and spill_refused: a module may have set them */
	if (es->chain || es->state_mode != EDDY_STATE_MODE_STEMS)
		return;
	if (es->exchange)
	{
		es->stems_refused = "a parallel eddy that exchanges its state keeps STAIRs";
		return;
	}
	/* pass 0 checks every end, pass 1 sets SteM mode up */
	for (pass = 0; pass < 2; pass++)
	{
		if (pass == 1)
		{
			es->stems = true;
			es->build_first = stems_build;
			es->stamp_rows = true;
			es->migrate_refused = "SteM mode stores base tuples only";
			es->spill_refused = "SteM mode does not spill";
		}
		for (i = 0; i < es->nmodules; i++)
		{
			EddyHashJoin *hj = EddyHashJoinOf(es->modules[i]);

			if (hj == NULL)
			{
				/* a module that keeps state but has no SteM mode */
				if (pass == 0 && es->modules[i]->state != NULL)
				{
					es->stems_refused =
						psprintf("%s %d has no SteM mode",
								 es->modules[i]->methods->label, i + 1);
					return;
				}
				continue;
			}
			for (s = 0; s < 2; s++)
			{
				EddySource *src = &es->sources[hj->ends.rel[s]];

				if (pass == 0)
				{
					if (src->method != EDDY_SOURCE_SCAN)
					{
						es->stems_refused =
							psprintf("%s, reached through an index join, is an end of hash join %d",
									 get_rel_name(src->heapoid), i + 1);
						return;
					}
					continue;
				}
				if (src->build_join == NULL)
				{
					src->build_join = palloc(sizeof(EddyModule *) * 2 * es->nmodules);
					src->build_side = palloc(sizeof(int) * 2 * es->nmodules);
				}
				src->build_join[src->nbuild] = &hj->module;
				src->build_side[src->nbuild] = s;
				src->nbuild++;
				/* a SteM never holds the tuples routed to it */
				hj->stair[s]->complete = false;
			}
			if (pass == 1)
			{
				hj->module.methods = &stems_methods;
				hj->module.state = &stems_state;
			}
		}
	}
}

/*
 * BuildFirst: the driver t, a row of one scanned source alone (with its
 * own selections done, if any), is built into every STAIR of its relation
 * before it probes anything, except where no future tuple can match it:
 * every source that may probe the STAIR is exhausted, or the other side is
 * unique and already holds t's one partner (both counted as Skipped; a
 * NULL key is not counted, it never matches).  The stored payload is
 * shared by all the relation's STAIRs.
 */
static void
stems_build(EddyState *es, EddyTuple *t)
{
	int			rel = pg_rightmost_one_pos32(t->spans);
	EddySource *src = &es->sources[rel];
	void	   *payload = NULL;
	EddyTuple  *view = NULL;
	int			b;

	Assert(es->stems && t->spans == (1u << rel));
	for (b = 0; b < src->nbuild; b++)
	{
		EddyHashJoin *hj = (EddyHashJoin *) src->build_join[b];
		int			side = src->build_side[b];
		EddyJoinSpec *ends = &hj->ends;
		Stair	   *stair = hj->stair[side];
		Datum	   *keys;
		uint32		hash;

		keys = EddyArenaAlloc(&es->transient, sizeof(Datum) * Max(ends->nkeys, 1));
		if (!EddyJoinKeys(es, ends, side, t, keys, &es->transient))
			continue;			/* a NULL key matches nothing */
		if ((hj->probers[side] & ~es->exhausted) == 0)
		{
			stair->skipped++;
			continue;
		}
		hash = EddyHashJoinHash(es, hj, side, t, keys);
		if (ends->unique[1 - side] && hj->stair[1 - side]->nentries > 0 &&
			StairContains(hj->stair[1 - side], hash, keys))
		{
			stair->skipped++;
			continue;
		}
		if (payload == NULL)
			payload = EddyTupleStoreForJoin(es, rel, t, &view);
		/* by-reference keys must point into the stored row */
		if (!ends->byvalkeys[side] &&
			!EddyJoinKeys(es, ends, side, view, keys, &es->stored))
			continue;
		EddyHashJoinInsert(es, hj, side, hash, keys, payload);
	}
}

/*
 * TimeStamp: is the stored base tuple `payload`, of end `side`'s relation,
 * older than the driver?
 */
static inline bool
stems_older(EddyState *es, EddyHashJoin *hj, int side, void *payload)
{
	EddyRow    *row;

	if (EddyPayloadIsRow(payload))
		row = EddyPayloadRow(payload);
	else
		row = ((EddyTuple *) payload)->rows[hj->ends.rel[side]];
	Assert(row->in_state);
	return row_seq(row) < es->seq;
}

/* The next match of a SteM probe that is older than the driver, or NULL */
static inline void *
stems_probe_next(EddyState *es, EddyHashJoin *hj, int side, StairProbe *sp)
{
	void	   *u;

	while ((u = StairProbeNext(sp)) != NULL)
	{
		if (likely(stems_older(es, hj, side, u)))
			return u;
		sp->stair->matched--;	/* not a match under TimeStamp */
	}
	return NULL;
}

/*
 * Route t into the join in direction dir in SteM mode: t is never stored
 * (a base tuple was built when it arrived); it probes the other side's
 * STAIR, base tuples of the other end, and matches those older than the
 * driver.
 */
static EddyTuple *
stems_route(EddyState *es, EddyModule *m, int dir, EddyTuple *t)
{
	EddyHashJoin *hj = (EddyHashJoin *) m;
	EddyJoinSpec *ends = &hj->ends;
	Datum	   *keys = EddyArenaAlloc(&es->transient, sizeof(Datum) * Max(ends->nkeys, 1));
	Stair	   *other = hj->stair[1 - dir];
	EddyFrame  *f;
	uint32		hash;

	/* pairs examined, for the cumulative policy's selectivity */
	m->stats[dir].pairs += (double) other->nentries;

	if (other->nentries == 0 ||
		!EddyJoinKeys(es, ends, dir, t, keys, &es->transient))
		return NULL;
	hash = EddyHashJoinHash(es, hj, dir, t, keys);
	if (ends->unique[1 - dir])
	{
		StairProbe	sp;
		void	   *u;

		StairProbeBegin(&sp, other, hash, keys);
		u = stems_probe_next(es, hj, 1 - dir, &sp);
		if (u == NULL)
			return NULL;
		m->stats[dir].out++;
		return EddyTupleJoin(es, m, t, ends->rel[1 - dir], u);
	}
	f = EddyPushFrame(es, m, dir, t);
	StairProbeBegin(&f->sp, other, hash, keys);
	return NULL;
}

/* The next match of a frame's probe that is older than the driver, or NULL */
static EddyTuple *
stems_next(EddyState *es, EddyFrame *f)
{
	EddyHashJoin *hj = (EddyHashJoin *) f->module;
	void	   *u;

	if (f->sp.next == NULL)
		return NULL;
	u = stems_probe_next(es, hj, 1 - f->dir, &f->sp);
	if (u == NULL)
		return NULL;
	f->module->stats[f->dir].out++;
	return EddyTupleJoin(es, f->module, f->probe, hj->ends.rel[1 - f->dir], u);
}

/* The entries lived in the state arena, which the eddy resets */
static void
stems_rescan(EddyState *es, EddyModule *m)
{
	EddyHashJoin *hj = (EddyHashJoin *) m;

	EddyHashJoinClear(es, m);
	hj->stair[0]->complete = hj->stair[1]->complete = false;
}

/*
 * A fresh tuple routed to a SteM builds (BuildFirst) before it probes: it
 * never only probes, so a scan's local chain never probes here.
 */
static bool
stems_probe_only(EddyState *es, EddyModule *m, int dir)
{
	return false;
}

static bool
stems_probe_misses(EddyState *es, EddyModule *m, int dir, Datum *keys,
				   bool *isnull)
{
	return false;
}

/*
 * EXPLAIN's State Mode line (explain.c): SteM mode when in effect, or why
 * it was not possible when asked for.
 */
void
EddyStateModeExplain(EddyState *es, ExplainState *xs)
{
	if (es->chain || es->state_mode == EDDY_STATE_MODE_STAIRS)
		return;
	if (es->stems)
		ExplainPropertyText("State Mode", EddyStateModeName(es->state_mode), xs);
	else
		ExplainPropertyText("State Mode",
							psprintf("stairs (stems not possible: %s)",
									 es->stems_refused), xs);
}
