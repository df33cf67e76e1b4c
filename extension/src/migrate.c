/*-------------------------------------------------------------------------
 *
 * migrate.c
 *	  State migration: making a join eddy's STAIR state match the eddy's
 *	  current routing (Deshpande & Hellerstein, VLDB 2004, sections 3.1.1,
 *	  3.2 and 4.2, Appendix A).
 *
 * Why.  A join eddy stores what it routed: a tuple x of relation X that
 * went first to join A (X = F) and then to join B (X = Y) left x itself in
 * A's STAIR on X, and x's results with F in B's STAIR on X.  Every later F
 * tuple then joins x and sends the results on to B, even once the routing
 * has learnt that x should have met Y first (the paper's "burden of
 * history").  Migration rewrites the state as if every tuple had been
 * routed the current way from the start.
 *
 * How: rebuild by replay.  The paper moves state with two operations,
 * demotion (replace an intermediate tuple in a STAIR by its base component)
 * and promotion (replace a base tuple by its joins with another STAIR),
 * chosen per relation; in a longer path or a star, the STAIRs of the other
 * joins also hold tuples arranged by the old history, and every one of
 * them must follow.  This module does the same work in one general step,
 * at a point of stasis (nothing in flight):
 *	1. collect: walk every hash join's STAIRs and take out every entry,
 *	   noting each distinct row of a scanned source that some entry holds
 *	   (EddyRow.mark), with the done bits of the selections on its relation
 *	   alone (a done bit on a tuple that is still alive means it passed);
 *	2. replay: route each row again, as if it had just been read, through
 *	   the ordinary modules under the current routing (EddyReplay): the
 *	   STAIRs fill exactly as an eddy that had read those rows under that
 *	   routing would have filled them (each tuple alone where the routing
 *	   sends it first, its results where the routing sends them next: the
 *	   promotions and demotions), and the complete results, returned when
 *	   first made, are dropped.  The counters the modules keep are restored
 *	   afterwards; each STAIR's Promoted and Demoted count how many of its
 *	   entries went from a base tuple alone to wider ones, or back.
 * The rows are replayed relation by relation: first the exhausted sources,
 * in the order they ran out, each marked exhausted only after its rows
 * are in (so the executor's rule that a tuple nothing can probe any more
 * is not stored, mod_hashjoin.c, sees the history "that source was read
 * whole, then the next"), then the others.
 *
 * Why it is correct (Appendix A's invariants, in this form).  Normal
 * execution from any state built by a valid history of the rows read so
 * far, S, produces exactly the results with a future tuple, each once (the
 * STAIRs paper's Theorem 1).  The replay is a valid history of S', the rows
 * the STAIRs hold, read in the order above under one routing.  A row of
 * S - S' is in no future result: a future result is made by a future tuple
 * probing entries, and an entry made later is made from one that exists
 * now, so a row in no entry now is in no entry ever (rows leave STAIRs only
 * here).  The two reasons the executor does not store a tuple keep this
 * true: a tuple that met its one partner in a unique side can meet nothing
 * more there, and a tuple nothing can probe any more is probed by nothing.
 * So the future results from the rebuilt state are those from the old one.
 * Invariant B of the paper (no two entries of a STAIR agree on their common
 * rows, else a later probe makes one result twice) holds after a replay
 * under one routing, and eddy.debug_migrate_every's forced migrations
 * check it, with the shape of every entry, after each migration (the
 * differential tests and the fuzzer run with them).
 *
 * Cost.  A migration costs about what the joins of the rows held cost, with
 * the probes that can only make complete results skipped (mod_hashjoin.c):
 * much less than the query so far when most rows were dropped by
 * selections, but never free, so the policies below weigh it.  Its memory
 * accesses are the other part: the entries, rows and tuples lie in the
 * arena in the order they were made, and are collected in the order of
 * the STAIRs' slots, i.e. at random, so each is a cache miss.  The walk
 * over the slots prefetches the entries and their payloads ahead
 * (StairIterNext), the replay the rows it will route next
 * (EDDY_REPLAY_AHEAD), and the entries it reuses come from an array that
 * prefetches ahead too, where a chained free list gave up one miss at a
 * time: Figure 7 at SF 1 (873,492 entries rebuilt) went from 340 to
 * 175-260 ms (perf: misses on the rows, then on the free list, had been
 * most of it).
 *
 * What migrates.  An eddy in STAIR mode (SteM mode stores base tuples only:
 * there is nothing intermediate to arrange) with two or more joins, one of
 * them a hash join (an index join holds no state; its rows are fetched
 * again by the replay).  EXPLAIN says why an eddy cannot.
 *
 * When.  Each hash join counts its STAIRs' entries by signature
 * (mod_hashjoin.c).  At the first point of stasis after each recomputation
 * of the routing, the signatures the current routing stores on each side
 * are worked out (a fixed point from every scanned source's fresh tuple,
 * following the routing table: expected_spans), and an entry of another
 * signature is misplaced.  The check is skipped while the last one found
 * nothing misplaced and no routing decision has changed since (the
 * router's count of entries filled with a new choice): what was stored in
 * between was stored by the same decisions.  A decision changes when an
 * entry is filled again in a new epoch, on its first use or by a check, so
 * a change is seen once a tuple is routed by it.  On static data this
 * keeps the cost of guarded migration to the signature counts.  The
 * policies (eddy.migration):
 *	 greedy	  the paper's (4.2): migrate whenever an entry is misplaced,
 *			  i.e. at the first recomputation after the routing changed.
 *	 guarded  migrate when entries have been misplaced for `hold`
 *			  recomputations in a row (EDDY_MIGRATION_HOLD, doubled after
 *			  every migration: a back-off, so a fluctuating decision
 *			  migrates O(log n) times at most and never thrashes), and the
 *			  migration pays: per STAIR side, the share of its entries
 *			  misplaced times the rows still to come from the sources that
 *			  probe it times its observed matches per probe (the
 *			  intermediate tuples the old arrangement would still make),
 *			  exceeds the entries rebuilt (measured: an entry rebuilt
 *			  costs about what an intermediate tuple saved does, 135-290
 *			  ns on test_migration's DRIFT data); after its first move
 *			  in a scan, the intermediate tuples the misplaced entries
 *			  made since they were found (their share of each STAIR
 *			  times its probes since the previous check times its
 *			  matches per probe) must exceed them too, or the entries
 *			  all the moves of the scan rebuilt if fewer: an online rule
 *			  (ski rental) that makes a routing flipping back and forth
 *			  pay for each new move with the waste it caused, where the
 *			  back-off alone allowed one move per doubling (8 moves, 1.8x
 *			  the time without migration, on a Figure 8 query).  The hold
 *			  counts recomputations that find the same entries misplaced
 *			  (the same signatures on the same sides): when other entries
 *			  are misplaced before the move, the routing has changed its
 *			  mind, the hold starts again and doubles for each such
 *			  change in the scan (and its rescans), so a routing that
 *			  oscillates between arrangements is not followed at all.
 *			  Without this, Figure 8's setup 28 (a 5-way path whose
 *			  routing flipped between two orders 6-25 times in a run,
 *			  after 1 to 289 recomputations each) migrated 110,000
 *			  entries to an arrangement that lasted 19 recomputations,
 *			  and took 1.3-1.6x EddyJoins' time.  Nothing migrates
 *			  when nothing is left to come, so nothing at the end of a
 *			  query.
 * eddy.debug_migrate_every = N forces a migration at every N-th point of
 * stasis, the interval doubling after every EDDY_FORCED_PER_INTERVAL of
 * them (each rebuilds the whole state: a long scan gets O(log n) of them,
 * not n), under any policy, replaying under random routing (a new random
 * decision per signature) so that the state ends up arranged in ways the
 * policy would not choose, and the invariants are checked after each one:
 * the differential tests run with it.  A held routing
 * (eddy.routing_hold) migrates nothing.
 *
 * Memory: the entries and stored tuples taken out are reused by the
 * replay (the entries from an array, StairEntryPool, what is left of them
 * then going to the arena's shared free lists, stair.h; the tuples from
 * EddyStoredTupleFree's list), so state rebuilt again and again does not
 * grow; state memory is checked
 * against eddy.max_memory as at any other time; the rows collected are
 * listed in a context of its own, freed afterwards (or with the query on
 * error: a migration interrupted by cancel leaves state the query never
 * reads again).  Interrupts are checked for every entry and every row.
 * EXPLAIN ANALYZE shows the number of migrations, the entries moved
 * (promoted and demoted) and rebuilt, and the time spent; VERBOSE lists
 * the migrations.
 *
 *-------------------------------------------------------------------------
 */
#include "exec.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "port/pg_bitutils.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

/* guarded: recomputations entries must stay misplaced before a migration */
#define EDDY_MIGRATION_HOLD		3
/* migrations listed by EXPLAIN ANALYZE VERBOSE */
#define EDDY_MAX_MIGRATION_EVENTS	100
/* forced migrations before their interval doubles */
#define EDDY_FORCED_PER_INTERVAL	8
/* rows the replay prefetches ahead of the one it routes */
#define EDDY_REPLAY_AHEAD		8
/* signatures expected_spans follows, at most */
#define EDDY_MAX_SIGNATURES		4096

typedef struct EddyMigrationEvent
{
	uint64		routed;			/* tuples routed when it happened */
	uint64		moved;			/* entries promoted or demoted */
	uint64		rebuilt;		/* entries after it */
	double		ms;
	bool		forced;
} EddyMigrationEvent;

/*
 * Signatures (sources spanned, modules done), listed once each: the list
 * grows as needed, up to EDDY_MAX_SIGNATURES, and is kept for the next
 * evaluation.
 */
typedef struct Sig
{
	uint32		spans;
	uint64		done;
} Sig;

typedef struct SigList
{
	Sig		   *v;
	int			n;
	int			cap;
	MemoryContext cxt;			/* where v lives: the node's */
} SigList;

/* A hash join side, as migration sees it */
typedef struct EddyMigrationSide
{
	EddyModule *join;
	int			side;
	Stair	   *stair;
	uint32		alone;			/* the signature of its end's row alone */
	uint32		probers;		/* scanned sources whose tuples probe it */
	SigList		stored;			/* expected_spans: what the routing stores here */
	uint64		seen_probed;	/* its STAIR's probes at the last check */
} EddyMigrationSide;

typedef struct EddyMigrator
{
	EddyMigrationPolicy policy;
	int			debug_every;
	int			until_forced;
	int			forced;			/* forced migrations since the scan began */
	const char *why_not;		/* NULL: the eddy may migrate */
	int			nsides;
	EddyMigrationSide *sides;
	uint64	   *xonly;			/* per source: selections on it alone */
	SigList		work;			/* expected_spans: signatures to follow */
	uint64		seen_recomputations;
	uint64		seen_changes;	/* the router's changes at the last check */
	bool		clean;			/* the last check found nothing misplaced */
	double		waste;			/* guarded: intermediate tuples the misplaced
								 * entries made since they were found */
	double		spent;			/* guarded: entries its moves rebuilt in this
								 * scan */
	uint64		checks;			/* looks for misplaced state (VERBOSE) */
	int			streak;			/* guarded: recomputations misplaced, the
								 * same entries */
	uint32		misplaced_sigs; /* which signatures of which sides are
								 * misplaced (a hash), by misplaced() */
	uint32		streak_sigs;	/* guarded: ... over the streak */
	int			flips;			/* guarded: changes of misplaced_sigs while
								 * misplaced (changes of mind), this scan
								 * and earlier ones */
	int			hold;			/* guarded: ... needed before a migration */
	uint16		stamp;			/* EddyRow.mark of this migration */
	pg_prng_state rng;

	/* EXPLAIN ANALYZE */
	uint64		migrations;
	uint64		moved;
	uint64		rebuilt;
	double		ns;
	EddyMigrationEvent *events;
	int			nevents;
	bool		events_truncated;
} EddyMigrator;

/* The rows of one source collected for the replay */
typedef struct CollectedRows
{
	EddyRow   **rows;
	uint64	   *done;
	int			n;
	int			cap;
} CollectedRows;

/*
 * The entries taken out of the STAIRs that share one free list: the pool
 * they are reused from during the replay (its array grows while they are
 * taken), what is left of it freed afterwards.
 */
typedef struct TakenEntries
{
	Stair	   *stair;			/* one of them */
	StairEntryPool pool;
	Size		cap;
} TakenEntries;

void
EddyMigrationInit(EddyState *es)
{
	EddyMigrator *mgr;
	int			njoins = 0;
	int			nhash = 0;
	int			i;

	es->migrator = NULL;
	es->migrating = false;
	if (es->chain || es->exchange ||
		(eddy_migration == EDDY_MIGRATION_OFF && eddy_debug_migrate_every == 0))
		return;					/* an exchanging eddy: parallel.c */
	mgr = palloc0(sizeof(EddyMigrator));
	mgr->policy = (EddyMigrationPolicy) eddy_migration;
	mgr->debug_every = eddy_debug_migrate_every;
	mgr->until_forced = mgr->debug_every;
	mgr->hold = EDDY_MIGRATION_HOLD;
	/* forced migrations count every point of stasis (EddyMigrationStasis) */
	es->migration_seen = mgr->debug_every > 0 ? PG_UINT64_MAX : 0;
	pg_prng_seed(&mgr->rng, UINT64CONST(0x316a7e) ^
				 (uint64) es->css.ss.ps.plan->plan_node_id);
	mgr->events = palloc(sizeof(EddyMigrationEvent) * EDDY_MAX_MIGRATION_EVENTS);
	es->migrator = mgr;

	for (i = 0; i < es->nmodules; i++)
	{
		if (!es->modules[i]->methods->joins)
			continue;
		njoins++;
		if (es->modules[i]->state != NULL)
			nhash++;
	}
	if (es->migrate_refused != NULL)
		mgr->why_not = es->migrate_refused;	/* the state mode's */
	else if (njoins < 2)
		mgr->why_not = "one join";
	else if (nhash == 0)
		mgr->why_not = "no hash join";
	if (mgr->why_not != NULL)
		return;

	mgr->xonly = EddySelectionsAlone(es);
	mgr->work.cxt = CurrentMemoryContext;
	mgr->sides = palloc0(sizeof(EddyMigrationSide) * 2 * nhash);
	for (i = 0; i < es->nmodules; i++)
	{
		EddyModule *m = es->modules[i];
		EddyJoinSpec *spec;
		int			s;

		if (m->state == NULL)
			continue;
		spec = m->state->spec(m);
		Assert(m->state->nstores == 2);
		for (s = 0; s < 2; s++)
		{
			EddyMigrationSide *sd = &mgr->sides[mgr->nsides++];

			sd->join = m;
			sd->side = s;
			sd->stair = m->state->store(m, s);
			sd->alone = 1u << spec->rel[s];
			sd->probers = spec->side[1 - s] & es->scanned;
			sd->stored.cxt = CurrentMemoryContext;
		}
	}
	es->migrating = true;
}

/* ----------------------------------------------------------------
 *		What the routing stores where
 * ----------------------------------------------------------------
 */

/* Add a signature: true if it is new; *overflow when the list is full */
static bool
sig_add(SigList *l, uint32 spans, uint64 done, bool *overflow)
{
	int			i;

	for (i = 0; i < l->n; i++)
		if (l->v[i].spans == spans && l->v[i].done == done)
			return false;
	if (l->n >= EDDY_MAX_SIGNATURES)
	{
		*overflow = true;
		return false;
	}
	if (l->n >= l->cap)
	{
		l->cap = Max(16, 2 * l->cap);
		l->v = l->v == NULL ? MemoryContextAlloc(l->cxt, sizeof(Sig) * l->cap) :
			repalloc(l->v, sizeof(Sig) * l->cap);
	}
	l->v[l->n].spans = spans;
	l->v[l->n].done = done;
	l->n++;
	return true;
}

/* Is spans among the signatures the routing stores on side sd? */
static bool
expected_has(EddyMigrationSide *sd, uint32 spans)
{
	int			i;

	for (i = 0; i < sd->stored.n; i++)
		if (sd->stored.v[i].spans == spans)
			return true;
	return false;
}

/*
 * Work out, per hash join side, the signatures an eddy routing every tuple
 * by the current routing table would store there: follow every scanned
 * source's fresh tuple through the table (selections pass, an index join
 * adds its far end, a hash join stores the tuple on its side and makes
 * results with every signature the other side stores), to a fixed point.
 * Each pair of signatures stored on the two sides of a join is joined once,
 * when the later of the two is stored.  False if there are too many
 * signatures to follow.
 */
static bool
expected_spans(EddyState *es)
{
	EddyMigrator *mgr = es->migrator;
	SigList    *work = &mgr->work;
	bool		overflow = false;
	int			next = 0;
	int			i;

	work->n = 0;
	for (i = 0; i < mgr->nsides; i++)
		mgr->sides[i].stored.n = 0;
	for (i = 0; i < es->nsources; i++)
		if (es->scanned & (1u << i))
			sig_add(work, 1u << i, 0, &overflow);

	while (next < work->n && !overflow)
	{
		Sig			sig = work->v[next++];
		int			target = EddyRoute(&es->router, sig.spans, sig.done);
		EddyRouteTarget *tg;
		EddyModule *m;
		uint64		bit;
		EddyMigrationSide *sd;
		EddyMigrationSide *other;
		int			k;
		int			j;

		if (target == EDDY_ROUTE_OUTPUT)
			continue;
		tg = &es->targets[target];
		m = es->modules[tg->module];
		bit = UINT64CONST(1) << tg->module;
		if (!m->methods->joins)
		{
			sig_add(work, sig.spans, sig.done | bit, &overflow);
			continue;
		}
		if (m->state == NULL)
		{
			sig_add(work, sig.spans | (1u << tg->far_rel), sig.done | bit, &overflow);
			continue;
		}
		/* the sides of a join are listed in pairs, side 0 first */
		for (k = 0; k < mgr->nsides; k += 2)
			if (mgr->sides[k].join == m)
				break;
		Assert(k < mgr->nsides);
		sd = &mgr->sides[k + tg->dir];
		other = &mgr->sides[k + 1 - tg->dir];
		if (!sig_add(&sd->stored, sig.spans, sig.done, &overflow))
			continue;
		for (j = 0; j < other->stored.n; j++)
			sig_add(work, sig.spans | other->stored.v[j].spans,
					sig.done | other->stored.v[j].done | bit, &overflow);
	}
	return !overflow;
}

/* Rows a scanned source is still expected to give */
static double
remaining_rows(EddySource *src)
{
	double		r;

	if (src->method != EDDY_SOURCE_SCAN || src->exhausted)
		return 0.0;
	r = src->est_rows - (double) src->nread;
	/* the estimate was low: assume a tenth more to come */
	return r > 0.0 ? r : Max((double) src->nread * 0.1, 1.0);
}

/*
 * The entries misplaced under the current routing (0 if the signatures
 * could not be followed), the entries in all, and, for the guarded policy,
 * the intermediate tuples the misplaced ones are still expected to make
 * (*benefit) and made since the last check, if they were misplaced then too
 * (added to mgr->waste).
 */
static uint64
misplaced(EddyState *es, uint64 *total, double *benefit)
{
	EddyMigrator *mgr = es->migrator;
	uint64		mis = 0;
	int			k;

	*total = 0;
	*benefit = 0.0;
	mgr->misplaced_sigs = 0;
	if (!expected_spans(es))
		return 0;
	for (k = 0; k < mgr->nsides; k++)
	{
		EddyMigrationSide *sd = &mgr->sides[k];
		EddySigCount *sigs;
		int			n = sd->join->state->sigs(sd->join, sd->side, &sigs);
		uint64		here = 0;
		uint64		all = 0;
		/* (a rescan may have reset the counters) */
		uint64		probes = sd->stair->probed >= sd->seen_probed ?
			sd->stair->probed - sd->seen_probed : sd->stair->probed;
		int			j;

		sd->seen_probed = sd->stair->probed;

		for (j = 0; j < n; j++)
		{
			all += sigs[j].count;
			if (!expected_has(sd, sigs[j].spans))
			{
				here += sigs[j].count;
				if (sigs[j].count > 0)
					mgr->misplaced_sigs +=
						murmurhash32(((uint32) k << 24) ^ sigs[j].spans);
			}
		}
		*total += all;
		mis += here;
		if (here > 0)
		{
			Stair	   *st = sd->stair;
			double		rate = st->probed > 0 ?
				(double) st->matched / (double) st->probed : 1.0;
			double		rem = 0.0;
			int			i;

			for (i = 0; i < es->nsources; i++)
				if (sd->probers & (1u << i))
					rem += remaining_rows(&es->sources[i]);
			*benefit += (double) here / (double) all * rem * rate;
			if (mgr->streak > 0)
				mgr->waste += (double) here / (double) all * (double) probes * rate;
		}
	}
	return mis;
}

/* ----------------------------------------------------------------
 *		The rebuild
 * ----------------------------------------------------------------
 */

static void
collect_row(EddyMigrator *mgr, CollectedRows *c, EddyRow *row, uint64 done)
{
	if (row->mark == mgr->stamp)
		return;
	row->mark = mgr->stamp;
	if (c->n >= c->cap)
	{
		c->cap = Max(64, 2 * c->cap);
		c->rows = c->rows ? repalloc_huge(c->rows, sizeof(EddyRow *) * c->cap) :
			palloc(sizeof(EddyRow *) * c->cap);
		c->done = c->done ? repalloc_huge(c->done, sizeof(uint64) * c->cap) :
			palloc(sizeof(uint64) * c->cap);
	}
	c->rows[c->n] = row;
	c->done[c->n] = done;
	c->n++;
}

/* The group of entries taken from STAIRs sharing st's free list */
static TakenEntries *
taken_group(TakenEntries *taken, int *ntaken, Stair *st)
{
	TakenEntries *te;
	int			j;

	for (j = 0; j < *ntaken; j++)
		if (taken[j].stair->free_list == st->free_list)
			return &taken[j];
	te = &taken[(*ntaken)++];
	te->stair = st;
	te->pool.v = NULL;
	te->pool.n = te->cap = 0;
	return te;
}

static void
take_entry(TakenEntries *te, StairEntry *e)
{
	if (te->pool.n >= te->cap)
	{
		te->cap = Max(64, 2 * te->cap);
		te->pool.v = te->pool.v ?
			repalloc_huge(te->pool.v, sizeof(StairEntry *) * te->cap) :
			palloc(sizeof(StairEntry *) * te->cap);
	}
	te->pool.v[te->pool.n++] = e;
}

/*
 * The replay's STAIRs that share te's free list reuse te's entries first
 * (on), or no longer.
 */
static void
set_pool(EddyMigrator *mgr, TakenEntries *te, bool on)
{
	int			k;

	for (k = 0; k < mgr->nsides; k++)
		if (mgr->sides[k].stair->free_list == te->stair->free_list)
			mgr->sides[k].stair->pool = on ? &te->pool : NULL;
}

/* Entries per side that are its end's row alone */
static uint64
count_alone(EddyMigrationSide *sd)
{
	EddySigCount *sigs;
	int			n = sd->join->state->sigs(sd->join, sd->side, &sigs);
	int			j;

	for (j = 0; j < n; j++)
		if (sigs[j].spans == sd->alone)
			return sigs[j].count;
	return 0;
}

/*
 * Check the rebuilt state (after forced migrations, eddy.debug_migrate_every):
 * every entry spans its side's end and nothing beyond its side, and no two
 * entries of a STAIR agree on all their common rows (Invariant B).
 */
static void
check_state(EddyState *es)
{
	EddyMigrator *mgr = es->migrator;
	int			k;

	for (k = 0; k < mgr->nsides; k++)
	{
		EddyMigrationSide *sd = &mgr->sides[k];
		EddyJoinSpec *spec = sd->join->state->spec(sd->join);
		uint32		side_rels = spec->side[sd->side];
		int			rel = spec->rel[sd->side];
		HASHCTL		ctl;
		HTAB	   *byrow;
		StairIterator it;
		void	   *payload;
		uint32		hash;
		Datum	   *keys;
		typedef struct
		{
			EddyRow    *row;
			List	   *entries;
		}			RowEntries;

		ctl.keysize = sizeof(EddyRow *);
		ctl.entrysize = sizeof(RowEntries);
		ctl.hcxt = CurrentMemoryContext;
		byrow = hash_create("eddy migration check", 1024, &ctl,
							HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		StairIterBegin(&it, sd->stair);
		while ((payload = StairIterNext(&it, &hash, &keys)) != NULL)
		{
			EddyRow    *row;
			uint32		spans;
			RowEntries *re;
			bool		found;
			ListCell   *lc;

			CHECK_FOR_INTERRUPTS();
			if (EddyPayloadIsRow(payload))
			{
				row = EddyPayloadRow(payload);
				spans = 1u << rel;
			}
			else
			{
				row = ((EddyTuple *) payload)->rows[rel];
				spans = ((EddyTuple *) payload)->spans;
			}
			if ((spans & (1u << rel)) == 0 || (spans & ~side_rels) != 0)
				elog(ERROR, "eddy: state migration left an entry spanning %x in a STAIR of relation %d",
					 spans, rel + 1);
			re = hash_search(byrow, &row, HASH_ENTER, &found);
			if (!found)
				re->entries = NIL;
			/* few entries share a row; compare with at most 64 of them */
			foreach(lc, re->entries)
			{
				void	   *other = lfirst(lc);
				uint32		ospans;
				uint32		common;
				int			i;
				bool		agree = true;

				if (foreach_current_index(lc) >= 64)
					break;
				ospans = EddyPayloadIsRow(other) ? 1u << rel :
					((EddyTuple *) other)->spans;
				common = spans & ospans;
				for (i = 0; i < es->nsources && agree; i++)
				{
					EddyRow    *a;
					EddyRow    *b;

					if ((common & (1u << i)) == 0)
						continue;
					a = EddyPayloadIsRow(payload) ? EddyPayloadRow(payload) :
						((EddyTuple *) payload)->rows[i];
					b = EddyPayloadIsRow(other) ? EddyPayloadRow(other) :
						((EddyTuple *) other)->rows[i];
					agree = (a == b);
				}
				if (agree)
					elog(ERROR, "eddy: state migration left two entries of a STAIR of relation %d that agree on their common rows (spans %x and %x)",
						 rel + 1, spans, ospans);
			}
			re->entries = lappend(re->entries, payload);
		}
		hash_destroy(byrow);
	}
}

/* Rebuild the state under the current routing (random routing if forced) */
static void
migrate(EddyState *es, bool forced)
{
	EddyMigrator *mgr = es->migrator;
	double		start = eddy_now_ns();
	MemoryContext cxt;
	MemoryContext old;
	CollectedRows *collected;
	TakenEntries *taken;
	int			ntaken = 0;
	uint64	   *alone_before;
	EddySavedCounters saved;
	uint32		exhausted = es->exhausted;
	EddyRoutingPolicy policy = es->router.policy;
	int		   *order;
	int			norder = 0;
	uint64		moved = 0;
	uint64		rebuilt = 0;
	int			i;
	int			k;

	Assert(es->nstack == 0 && !es->replaying);
	mgr->clean = false;			/* look again at the next recomputation */
	cxt = AllocSetContextCreate(CurrentMemoryContext, "eddy state migration",
								ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);
	if (++mgr->stamp == 0)		/* rows are made with mark 0 */
		mgr->stamp = 1;

	/* 1. collect the rows, emptying the STAIRs */
	collected = palloc0(sizeof(CollectedRows) * es->nsources);
	taken = palloc(sizeof(TakenEntries) * mgr->nsides);
	alone_before = palloc(sizeof(uint64) * mgr->nsides);
	EddySaveCounters(es, &saved);	/* restored after the replay */
	for (k = 0; k < mgr->nsides; k++)
	{
		EddyMigrationSide *sd = &mgr->sides[k];
		Stair	   *st = sd->stair;
		int			rel = pg_rightmost_one_pos32(sd->alone);
		StairIterator it;
		void	   *payload;
		uint32		hash;
		Datum	   *keys;
		TakenEntries *te = taken_group(taken, &ntaken, st);

		alone_before[k] = count_alone(sd);
		StairIterBegin(&it, st);
		while ((payload = StairIterNext(&it, &hash, &keys)) != NULL)
		{
			CHECK_FOR_INTERRUPTS();
			if (EddyPayloadIsRow(payload))
				collect_row(mgr, &collected[rel], EddyPayloadRow(payload), 0);
			else
			{
				EddyTuple  *t = (EddyTuple *) payload;
				uint32		bits = t->spans & es->scanned;

				while (bits != 0)
				{
					int			x = pg_rightmost_one_pos32(bits);

					collect_row(mgr, &collected[x], t->rows[x],
								t->done & mgr->xonly[x]);
					bits &= bits - 1;
				}
				EddyStoredTupleFree(es, t);
			}
			take_entry(te, StairIterTake(&it));
		}
		st->complete = true;
		if (sd->side == 1)
			sd->join->state->forget_sigs(sd->join);
	}

	/* the replay reuses the entries taken, prefetching (StairEntryPool) */
	for (k = 0; k < ntaken; k++)
		set_pool(mgr, &taken[k], true);

	/* 2. replay, under the current routing; nothing is counted */
	order = palloc(sizeof(int) * es->nsources);
	for (k = 1; k <= es->nexhausted; k++)
		for (i = 0; i < es->nsources; i++)
			if (es->sources[i].exhausted && es->sources[i].exhausted_rank == k)
				order[norder++] = i;
	for (i = 0; i < es->nsources; i++)
		if ((es->scanned & (1u << i)) && !es->sources[i].exhausted)
			order[norder++] = i;

	es->replaying = true;
	es->exhausted = 0;
	if (forced)
		EddyRouterSetPolicy(&es->router, EDDY_POLICY_RANDOM);
	MemoryContextSwitchTo(old);
	for (k = 0; k < norder; k++)
	{
		int			x = order[k];
		CollectedRows *c = &collected[x];

		for (i = 0; i < c->n; i++)
		{
			EddyTuple  *t;

			CHECK_FOR_INTERRUPTS();
			/* the rows lie in read order, listed in STAIR order: prefetch */
			if (i + EDDY_REPLAY_AHEAD < c->n)
			{
				__builtin_prefetch(c->rows[i + EDDY_REPLAY_AHEAD]);
				__builtin_prefetch((char *) c->rows[i + EDDY_REPLAY_AHEAD] + 64);
			}
			t = EddyTupleAlloc(es, &es->transient);
			memset(t->rows, 0, sizeof(EddyRow *) * es->nsources);
			t->spans = 1u << x;
			t->done = c->done[i];
			t->rows[x] = c->rows[i];
			EddyReplay(es, t);
			EddyForgetTransient(es);
		}
		es->exhausted |= exhausted & (1u << x);
	}
	Assert(es->exhausted == exhausted);
	es->exhausted = exhausted;
	es->replaying = false;
	for (k = 0; k < ntaken; k++)
	{
		set_pool(mgr, &taken[k], false);
		StairEntriesFree(taken[k].stair, taken[k].pool.v, taken[k].pool.n);
	}
	if (forced)
		EddyRouterSetPolicy(&es->router, policy);
	MemoryContextSwitchTo(cxt);

	/* restore the counters; count the moves */
	EddyRestoreCounters(es, &saved);
	for (k = 0; k < mgr->nsides; k++)
	{
		EddyMigrationSide *sd = &mgr->sides[k];
		Stair	   *st = sd->stair;
		uint64		alone = count_alone(sd);

		if (alone > alone_before[k])
		{
			st->demoted += alone - alone_before[k];
			moved += alone - alone_before[k];
		}
		else
		{
			st->promoted += alone_before[k] - alone;
			moved += alone_before[k] - alone;
		}
		rebuilt += st->nentries;
	}
	EddyCheckMemory(es);
	if (mgr->debug_every > 0)
		check_state(es);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);

	/* account */
	mgr->migrations++;
	mgr->moved += moved;
	mgr->rebuilt += rebuilt;
	{
		double		ns = eddy_now_ns() - start;

		mgr->ns += ns;
		if (mgr->nevents < EDDY_MAX_MIGRATION_EVENTS)
		{
			EddyMigrationEvent *ev = &mgr->events[mgr->nevents++];

			ev->routed = EddyRouterRouted(&es->router);
			ev->moved = moved;
			ev->rebuilt = rebuilt;
			ev->ms = ns / 1e6;
			ev->forced = forced;
		}
		else
			mgr->events_truncated = true;
	}
}

/*
 * At a point of stasis (exec.c, before the transient arena is rewound):
 * forced migrations, then the policy's, once per recomputation of the
 * routing.
 */
void
EddyMigrationStasis(EddyState *es)
{
	EddyMigrator *mgr = es->migrator;
	uint64		total;
	double		benefit;

	if (es->router.held)
		return;					/* eddy.routing_hold: nothing moves yet */
	if (mgr->debug_every > 0 && --mgr->until_forced <= 0)
	{
		migrate(es, true);
		mgr->forced++;
		mgr->until_forced = mgr->debug_every <<
			Min(mgr->forced / EDDY_FORCED_PER_INTERVAL, 20);
	}
	if (mgr->policy == EDDY_MIGRATION_OFF ||
		es->router.recomputations == mgr->seen_recomputations)
		return;
	mgr->seen_recomputations = es->router.recomputations;
	/*
	 * The executor calls again after the next recomputation (or, forced
	 * migrations counting points of stasis, at every one).
	 */
	if (mgr->debug_every == 0)
		es->migration_seen = mgr->seen_recomputations;

	/*
	 * Nothing was misplaced at the last check and no routing decision has
	 * changed since: nothing is misplaced now either (what was stored since
	 * was stored by the same decisions).
	 */
	if (mgr->clean && es->router.changes == mgr->seen_changes)
		return;
	mgr->checks++;
	mgr->clean = misplaced(es, &total, &benefit) == 0;
	mgr->seen_changes = es->router.changes; /* with what the check filled */
	if (mgr->clean)
	{
		mgr->streak = 0;
		mgr->waste = 0.0;
		return;
	}
	if (mgr->policy == EDDY_MIGRATION_GUARDED)
	{
		/*
		 * Held for a while, and the intermediate tuples the misplaced
		 * entries are still expected to make pay for the move; after a
		 * first move, those they made since they were found must have paid
		 * for it too, or for all the moves so far if those rebuilt fewer
		 * entries (rent before buying, as in ski rental: a routing that
		 * flips back and forth pays for each new move with the waste it
		 * caused; a small early move, made while the state was small,
		 * costs a later large one little evidence).
		 */
		if (mgr->streak > 0 && mgr->misplaced_sigs != mgr->streak_sigs)
		{
			/*
			 * The routing changed its mind before we moved: other entries
			 * are misplaced now.  Start the hold again, and double it for
			 * every such change (a routing that keeps changing is not
			 * followed: what a move arranges would be misplaced again).
			 */
			mgr->flips++;
			mgr->streak = 0;
		}
		mgr->streak_sigs = mgr->misplaced_sigs;
		if (++mgr->streak < (int64) mgr->hold << Min(mgr->flips, 24) ||
			benefit <= (double) total ||
			(mgr->spent > 0.0 && mgr->waste <= Min((double) total, mgr->spent)))
			return;
		mgr->hold *= 2;
		mgr->streak = 0;
		mgr->spent += (double) total;
	}
	mgr->waste = 0.0;
	migrate(es, false);
}

/* Rescan: the state is gone; what was learnt (the back-off) stays */
void
EddyMigrationRescan(EddyState *es)
{
	EddyMigrator *mgr = es->migrator;

	if (mgr == NULL)
		return;
	mgr->until_forced = mgr->debug_every;
	mgr->forced = 0;
	mgr->streak = 0;
	mgr->waste = 0.0;
	mgr->spent = 0.0;
	mgr->clean = false;
	/* the hash joins forgot their entries' signatures (hashjoin_rescan) */
}

void
EddyMigrationExplain(EddyState *es, ExplainState *xs)
{
	EddyMigrator *mgr = es->migrator;
	bool		analyze = xs->analyze && es->css.ss.ps.instrument != NULL;
	StringInfoData buf;
	int			i;

	if (mgr == NULL)
		return;
	initStringInfo(&buf);
	appendStringInfoString(&buf, EddyMigrationName(mgr->policy));
	if (mgr->debug_every > 0)
		appendStringInfo(&buf, ", forced every %d", mgr->debug_every);
	if (mgr->why_not != NULL)
		appendStringInfo(&buf, " (nothing to move: %s)", mgr->why_not);
	ExplainPropertyText("State Migration", buf.data, xs);
	if (!analyze || mgr->why_not != NULL)
		return;
	ExplainPropertyUInteger("Migrations", NULL, mgr->migrations, xs);
	ExplainPropertyUInteger("Tuples Moved", NULL, mgr->moved, xs);
	ExplainPropertyUInteger("Entries Rebuilt", NULL, mgr->rebuilt, xs);
	if (xs->timing)
		ExplainPropertyFloat("Migration Time", "ms", mgr->ns / 1e6, 3, xs);
	if (!xs->verbose)
		return;
	if (mgr->policy != EDDY_MIGRATION_OFF)
		ExplainPropertyUInteger("Migration Checks", NULL, mgr->checks, xs);
	if (mgr->policy == EDDY_MIGRATION_GUARDED)
		ExplainPropertyInteger("Routing Changes While Held", NULL, mgr->flips, xs);
	if (mgr->nevents == 0)
		return;
	resetStringInfo(&buf);
	for (i = 0; i < mgr->nevents; i++)
	{
		EddyMigrationEvent *ev = &mgr->events[i];

		if (i > 0)
			appendStringInfoString(&buf, "; ");
		appendStringInfo(&buf, "at " UINT64_FORMAT ": " UINT64_FORMAT " moved, "
						 UINT64_FORMAT " rebuilt%s",
						 ev->routed, ev->moved, ev->rebuilt,
						 ev->forced ? " (forced)" : "");
		if (xs->timing)
			appendStringInfo(&buf, " in %.3f ms", ev->ms);
	}
	if (mgr->events_truncated)
		appendStringInfoString(&buf, "; ...");
	ExplainPropertyText("Migration History", buf.data, xs);
}

/* Migrations so far (parallel.c: a worker's counters) */
uint64
EddyMigrations(EddyState *es)
{
	return es->migrator != NULL ? es->migrator->migrations : 0;
}
