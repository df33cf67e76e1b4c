/*-------------------------------------------------------------------------
 *
 * migrate.c
 *	  State migration: moving a join eddy's STAIR state so that it matches
 *	  the eddy's current routing (Deshpande & Hellerstein, VLDB 2004,
 *	  sections 3.1.1, 3.2 and 4.2, Appendix A).
 *
 * Why.  A join eddy stores what it routed: a tuple x of relation X that
 * went first to join A (X = F) and then to join B (X = Y) left x itself in
 * A's STAIR on X, and x's results with F in B's STAIR on X.  Every later F
 * tuple then joins x and sends the results on to B, even once the routing
 * has learnt that x should have met Y first (the paper's "burden of
 * history").  Migration rewrites the state as if x had been routed to B
 * first: x alone in B's STAIR, x's results with Y in A's.
 *
 * What migrates.  A relation X of the block, read by a child plan, whose
 * two joins are symmetric hash joins and the block's only joins: X is the
 * middle of a three-relation path F - X - Y (the paper's Figures 6, 7 and
 * 9).  Every other relation of a tuple stored in A's STAIR on X then lies
 * beyond B, and of one in B's STAIR beyond A.  So per x, normal execution
 * leaves one of two arrangements: "A first" (A.X holds x alone; B.X holds
 * x's results across A) or "B first" (the reverse), and which one is a
 * routing decision: the join the router sends a fresh X tuple to, once X's
 * own selections are done (the router's entry for that signature).
 *
 * Why only there.  With three relations, no STAIR other than A.X and B.X
 * ever holds a tuple containing x (F's and Y's STAIRs hold F and Y rows
 * alone), so the state after a move is exactly the state of a history in
 * which every x went to B first.  In a longer path the STAIRs of the other
 * joins also hold tuples containing x, arranged by the old history, and
 * the forced-migration differential tests found duplicate results there
 * (a path r - s - t - u with s or t migrating); moving those tuples too is
 * left for later.  Centres of stars, longer paths and relations reached
 * through index joins keep their state where it is, and EXPLAIN says so.
 *
 * The move, Swap(X, A -> B), at a point of stasis (nothing in flight):
 *	1. demote B.X: every entry that reaches across A is replaced by its X
 *	   row (demotion, 3.1.1), each X row kept once (so Invariant B holds:
 *	   no two entries of a STAIR agree on their common rows);
 *	2. promote A.X's entries that are x alone: remove x from A.X, insert it
 *	   into B.X (unless step 1 put it there), probe B's other STAIR (B.Y)
 *	   and insert each result, x with a match, into A.X (promotion, 3.1.1).
 * Afterwards every x of A.X reaches across B and every entry of B.X is an
 * X row alone, once: the "B first" arrangement for every x, which is what
 * the eddy would hold had it routed every x to B first (B.Y is the same in
 * both histories: what is stored there never spans X).  The move is
 * therefore correct from any state normal execution or earlier moves
 * leave, mixed or not, and idempotent.  A demoted entry keeps the done
 * bits of X's own selections; a promoted result gets B's, as a match does.
 * An X row whose key for B is NULL can join nothing through B, so no
 * result contains it: it is dropped.
 *
 * The executor's two reasons for not storing a tuple (mod_hashjoin.c) stay
 * sound.  A tuple that found its one match in a unique side is missing from
 * its STAIR, but the move reads A.X only for x alone, and an x that met its
 * unique F row went on to B and is restored into B.X by step 1.  A tuple
 * nothing can probe any more (the far side's sources are exhausted) is
 * missing from a STAIR that no future tuple reads; the move may add
 * results to it, uselessly (the guarded policy does not move then).
 *
 * Policies (eddy.migration), evaluated at the first point of stasis after
 * each recomputation of the routing:
 *	 greedy	  the paper's (4.2): move whenever the decision for X differs
 *			  from the arrangement of X's state.
 *	 guarded  move when the decision has differed from where part of X's
 *			  state is arranged for EDDY_MIGRATION_HOLD
 *			  recomputations in a row (doubled after each move of X: a
 *			  back-off, so a relation moves O(log n) times at most and a
 *			  fluctuating decision never thrashes), and the move pays:
 *			  the intermediate tuples it saves, the F tuples still to come
 *			  times their observed fan-out into A.X (each such match would
 *			  have been routed on to B), exceed the entries it moves and
 *			  makes (B.X's entries, plus A.X's times one plus x's observed
 *			  fan-out through B).  No move is made when nothing is left to
 *			  come from beyond A, so none is made at the end of a query.
 *			  Where X's state is arranged is not only where the last move
 *			  put it: a change of decision without a move sends the X rows
 *			  read from then on to the other join first, so the state is
 *			  mixed.  The rows read under each decision are counted, and
 *			  anything arranged the other way (the STAIRs paper's Figure 7,
 *			  where orders first went to lineitem for half the query while
 *			  no move paid, then to customer) is a candidate.
 * eddy.debug_migrate_every = N forces a move at every N-th point of
 * stasis, of a random eligible relation towards a random one of its joins,
 * under any policy, and checks the arrangement above after each move: the
 * differential tests run with it.
 *
 * SteM mode (eddy.state_mode = stems, mod_hashjoin.c) stores base tuples
 * only, each in every STAIR of its relation: there is no intermediate
 * tuple to promote or demote, whatever the routing, so nothing migrates
 * and EXPLAIN says so; the settings are accepted and do nothing.
 *
 * Memory: moved entries and results go to state memory, which is checked
 * against eddy.max_memory as at any other time; the entries and stored
 * tuples a move takes out are reused (stair.h, EddyStoredTupleFree), so
 * state moved back and forth does not grow; the move's bookkeeping is
 * in a context of its own, freed afterwards (or with the query on error).
 * Interrupts are checked for every entry.  EXPLAIN ANALYZE shows the
 * number of moves, the entries moved and the time spent; VERBOSE lists
 * the moves; each STAIR counts its promoted and demoted entries.
 *
 *-------------------------------------------------------------------------
 */
#include "exec.h"

#include "miscadmin.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

/* guarded: recomputations a changed decision must hold before a move */
#define EDDY_MIGRATION_HOLD		3
/* moves listed by EXPLAIN ANALYZE VERBOSE */
#define EDDY_MAX_MIGRATION_EVENTS	100

/* A relation whose state may move */
typedef struct EddyMigrant
{
	int			rel;
	EddyModule *join[2];		/* its two hash joins */
	int			side[2];		/* its side in each */
	int			target[2];		/* router target: join[j] from its side */
	uint64		xonly;			/* selections that read the relation alone */
	int			arranged;		/* the join its state has first, or -1 */
	double		routed[2];		/* guarded: X rows read while the routing sent
								 * them to join[j] first, since the last move */
	int			last_pref;		/* the decision at the previous evaluation */
	uint64		seen_read;		/* X rows read at the previous evaluation */
	int			streak;			/* guarded: recomputations preferring the other */
	int			hold;			/* guarded: ... needed before a move */
} EddyMigrant;

typedef struct EddyMigrationEvent
{
	uint64		routed;			/* tuples routed when it happened */
	int			rel;
	int			from;			/* module indexes */
	int			to;
	uint64		moved;
	double		ms;
	bool		forced;
} EddyMigrationEvent;

typedef struct EddyMigrator
{
	EddyMigrationPolicy policy;
	int			debug_every;
	int			until_forced;
	int			nmigrants;
	EddyMigrant *migrants;
	uint64		seen_recomputations;
	pg_prng_state rng;

	/* EXPLAIN ANALYZE */
	uint64		migrations;
	uint64		moved;
	double		ns;
	EddyMigrationEvent *events;
	int			nevents;
	bool		events_truncated;
} EddyMigrator;

/* An entry taken out of a STAIR */
typedef struct MovedEntry
{
	EddyRow    *row;			/* its X row */
	uint64		done;
	uint32		hash;
	Datum	   *keys;
} MovedEntry;

/* The join (0 or 1) the router sends a fresh X tuple to, or -1 */
static int
preferred(EddyState *es, EddyMigrant *mg)
{
	int			t = EddyRoute(&es->router, 1u << mg->rel, mg->xonly);

	if (t == mg->target[0])
		return 0;
	if (t == mg->target[1])
		return 1;
	return -1;
}

void
EddyMigrationInit(EddyState *es)
{
	EddyMigrator *mgr;
	int			x;

	es->migrator = NULL;
	es->migrating = false;
	if (es->chain || (eddy_migration == EDDY_MIGRATION_OFF &&
					  eddy_debug_migrate_every == 0))
		return;
	mgr = palloc0(sizeof(EddyMigrator));
	mgr->policy = (EddyMigrationPolicy) eddy_migration;
	mgr->debug_every = eddy_debug_migrate_every;
	mgr->until_forced = mgr->debug_every;
	mgr->migrants = palloc0(sizeof(EddyMigrant) * es->nsources);
	pg_prng_seed(&mgr->rng, UINT64CONST(0x316a7e) ^
				 (uint64) es->css.ss.ps.plan->plan_node_id);
	mgr->events = palloc(sizeof(EddyMigrationEvent) * EDDY_MAX_MIGRATION_EVENTS);
	es->migrator = mgr;
	if (es->stems)
		return;					/* SteM mode: nothing intermediate to move */

	for (x = 0; x < es->nsources; x++)
	{
		EddyMigrant mg;
		int			njoins = 0;
		bool		all_hash = true;
		int			i;

		if (es->sources[x].method != EDDY_SOURCE_SCAN)
			continue;
		memset(&mg, 0, sizeof(mg));
		mg.rel = x;
		for (i = 0; i < es->nmodules; i++)
		{
			EddyModule *m = es->modules[i];

			if (m->filter != NULL)
			{
				/* a selection that reads X alone (or nothing) */
				if ((m->target[0].need & ~(1u << x)) == 0)
					mg.xonly |= UINT64CONST(1) << i;
				continue;
			}
			if (EddyModuleIsHashJoin(m))
			{
				EddyJoinSpec *spec = EddyHashJoinSpec(m);
				int			s;

				for (s = 0; s < 2; s++)
				{
					if (spec->rel[s] != x)
						continue;
					if (njoins < 2)
					{
						mg.join[njoins] = m;
						mg.side[njoins] = s;
						mg.target[njoins] = m->target_index[s];
					}
					njoins++;
				}
			}
			else if ((m->ends & (1u << x)) != 0)
			{
				/* an index join with X at an end */
				all_hash = false;
				njoins++;
			}
		}
		if (njoins != 2 || !all_hash)
			continue;
		/* ... and the block's only joins (see the header) */
		for (i = 0; i < es->nmodules; i++)
			if (es->modules[i]->filter == NULL &&
				(es->modules[i]->ends & (1u << x)) == 0)
				break;
		if (i < es->nmodules)
			continue;
		mg.hold = EDDY_MIGRATION_HOLD;
		mg.arranged = preferred(es, &mg);
		mg.last_pref = mg.arranged;
		mgr->migrants[mgr->nmigrants++] = mg;
	}
	es->migrating = mgr->nmigrants > 0;
}

/* The X row, signature of a STAIR payload of relation rel */
static EddyRow *
payload_row(void *payload, int rel, uint32 *spans, uint64 *done)
{
	EddyTuple  *t;

	if (EddyPayloadIsRow(payload))
	{
		*spans = 1u << rel;
		*done = 0;
		return EddyPayloadRow(payload);
	}
	t = (EddyTuple *) payload;
	*spans = t->spans;
	*done = t->done;
	return t->rows[rel];
}

/* The payload for an X row alone with modules done */
static void *
base_payload(EddyState *es, int rel, EddyRow *row, uint64 done)
{
	EddyTuple  *t;

	if (done == 0)
		return EddyPayloadFromRow(row);
	t = EddyStoredTupleAlloc(es);
	memset(t->rows, 0, sizeof(EddyRow *) * es->nsources);
	t->spans = 1u << rel;
	t->done = done;
	t->rows[rel] = row;
	return t;
}

static void
append_moved(MovedEntry **arr, int *n, int *cap, EddyRow *row, uint64 done,
			 uint32 hash, Datum *keys, int nkeys)
{
	MovedEntry *e;

	if (*n >= *cap)
	{
		*cap *= 2;
		*arr = repalloc_huge(*arr, sizeof(MovedEntry) * *cap);
	}
	e = &(*arr)[(*n)++];
	e->row = row;
	e->done = done;
	e->hash = hash;
	e->keys = palloc(sizeof(Datum) * Max(nkeys, 1));
	memcpy(e->keys, keys, sizeof(Datum) * nkeys);
}

/*
 * Debugging (eddy.debug_migrate_every): after Swap(X, A -> B), every entry
 * of A.X reaches across B, and B.X holds X rows alone, each once.
 */
static void
check_swap(EddyState *es, EddyMigrant *mg, Stair *ax, Stair *bx)
{
	uint32		xbit = 1u << mg->rel;
	StairIterator it;
	void	   *payload;
	uint32		hash;
	Datum	   *keys;
	HTAB	   *seen;
	HASHCTL		ctl;

	StairIterBegin(&it, ax);
	while ((payload = StairIterNext(&it, &hash, &keys)) != NULL)
	{
		uint32		spans;
		uint64		done;

		payload_row(payload, mg->rel, &spans, &done);
		if (spans == xbit)
			elog(ERROR, "eddy: state migration left a row of relation %d alone in the STAIR it was promoted from",
				 mg->rel + 1);
	}
	ctl.keysize = sizeof(EddyRow *);
	ctl.entrysize = sizeof(EddyRow *);
	ctl.hcxt = CurrentMemoryContext;
	seen = hash_create("eddy migration check", 1024, &ctl,
					   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	StairIterBegin(&it, bx);
	while ((payload = StairIterNext(&it, &hash, &keys)) != NULL)
	{
		uint32		spans;
		uint64		done;
		EddyRow    *row = payload_row(payload, mg->rel, &spans, &done);
		bool		found;

		if (spans != xbit)
			elog(ERROR, "eddy: state migration left an entry reaching across the old first join of relation %d",
				 mg->rel + 1);
		hash_search(seen, &row, HASH_ENTER, &found);
		if (found)
			elog(ERROR, "eddy: state migration left a row of relation %d twice in one STAIR",
				 mg->rel + 1);
	}
	hash_destroy(seen);
}

/*
 * Swap(X, A -> B): move relation X's state to the "B first" arrangement
 * (see the header).  Returns the entries moved.
 */
static uint64
swap(EddyState *es, EddyMigrant *mg, int to, bool forced)
{
	EddyMigrator *mgr = es->migrator;
	int			from = 1 - to;
	EddyModule *a = mg->join[from];
	EddyModule *b = mg->join[to];
	int			sa = mg->side[from];
	int			sb = mg->side[to];
	Stair	   *ax = EddyHashJoinStair(a, sa);
	Stair	   *bx = EddyHashJoinStair(b, sb);
	Stair	   *by = EddyHashJoinStair(b, 1 - sb);
	EddyJoinSpec *bspec = EddyHashJoinSpec(b);
	int			nka = EddyHashJoinSpec(a)->nkeys;
	int			nkb = bspec->nkeys;
	int			yrel = bspec->rel[1 - sb];
	int			x = mg->rel;
	uint32		xbit = 1u << x;
	double		start = eddy_now_ns();
	MemoryContext cxt;
	MemoryContext old;
	HTAB	   *present;
	HASHCTL		ctl;
	MovedEntry *demoted;
	MovedEntry *promoted;
	int			ndemoted = 0;
	int			npromoted = 0;
	int			capd = 64;
	int			capp = 64;
	EddyTuple  *view;
	Datum	   *bkeys;
	StairIterator it;
	void	   *payload;
	uint32		hash;
	Datum	   *keys;
	uint64		moved = 0;
	int			i;

	cxt = AllocSetContextCreate(CurrentMemoryContext, "eddy state migration",
								ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);
	ctl.keysize = sizeof(EddyRow *);
	ctl.entrysize = sizeof(EddyRow *);
	ctl.hcxt = cxt;
	present = hash_create("eddy migration rows", 1024, &ctl,
						  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	demoted = palloc(sizeof(MovedEntry) * capd);
	promoted = palloc(sizeof(MovedEntry) * capp);
	view = palloc(offsetof(EddyTuple, rows) + sizeof(EddyRow *) * es->nsources);
	bkeys = palloc(sizeof(Datum) * Max(nkb, 1));

	/* 1a. take out B.X's entries that reach across A */
	StairIterBegin(&it, bx);
	while ((payload = StairIterNext(&it, &hash, &keys)) != NULL)
	{
		uint32		spans;
		uint64		done;
		EddyRow    *row = payload_row(payload, x, &spans, &done);

		if (spans == xbit)
		{
			hash_search(present, &row, HASH_ENTER, NULL);
			continue;
		}
		StairIterDelete(&it);
		append_moved(&demoted, &ndemoted, &capd, row, done & mg->xonly,
					 hash, keys, nkb);
		if (!EddyPayloadIsRow(payload))
			EddyStoredTupleFree(es, payload);
	}

	/* 2a. take out A.X's entries that are an X row alone */
	StairIterBegin(&it, ax);
	while ((payload = StairIterNext(&it, &hash, &keys)) != NULL)
	{
		uint32		spans;
		uint64		done;
		EddyRow    *row = payload_row(payload, x, &spans, &done);

		if (spans != xbit)
			continue;
		StairIterDelete(&it);
		append_moved(&promoted, &npromoted, &capp, row, done, hash, keys, nka);
		if (!EddyPayloadIsRow(payload))
			EddyStoredTupleFree(es, payload);
	}

	/* 1b. demotion: each X row once in B.X */
	for (i = 0; i < ndemoted; i++)
	{
		MovedEntry *d = &demoted[i];
		bool		found;

		CHECK_FOR_INTERRUPTS();
		hash_search(present, &d->row, HASH_ENTER, &found);
		if (!found)
			StairInsert(bx, d->hash, d->keys, base_payload(es, x, d->row, d->done));
		bx->demoted++;
		moved++;
	}

	/* 2b. promotion: into B.X, and x's matches in B.Y back into A.X */
	MemoryContextSwitchTo(old);
	for (i = 0; i < npromoted; i++)
	{
		MovedEntry *p = &promoted[i];
		uint32		bhash;
		bool		found;
		StairProbe	sp;
		void	   *u;

		CHECK_FOR_INTERRUPTS();
		ax->promoted++;
		moved++;
		memset(view->rows, 0, sizeof(EddyRow *) * es->nsources);
		view->spans = xbit;
		view->done = p->done;
		view->rows[x] = p->row;
		if (!EddyHashJoinKeyHash(es, b, sb, view, bkeys, &bhash))
			continue;			/* a NULL key: x can be in no result */
		hash_search(present, &p->row, HASH_ENTER, &found);
		if (!found)
			StairInsert(bx, bhash, bkeys, base_payload(es, x, p->row, p->done));
		if (by->nentries == 0)
			continue;
		StairProbeBegin(&sp, by, bhash, bkeys);
		while ((u = StairProbeNext(&sp)) != NULL)
		{
			EddyTuple  *r = EddyTupleJoin(es, b, view, yrel, u);

			CHECK_FOR_INTERRUPTS();
			StairInsert(ax, p->hash, p->keys, EddyTupleStore(es, r));
			if (unlikely((++es->inserts & 63) == 0))
				EddyCheckMemory(es);
		}
		EddyArenaRewind(&es->transient);
	}
	EddyCheckMemory(es);

	if (mgr->debug_every > 0)
		check_swap(es, mg, ax, bx);
	MemoryContextDelete(cxt);

	/* account */
	mgr->migrations++;
	mgr->moved += moved;
	{
		double		ns = eddy_now_ns() - start;

		mgr->ns += ns;
		if (mgr->nevents < EDDY_MAX_MIGRATION_EVENTS)
		{
			EddyMigrationEvent *ev = &mgr->events[mgr->nevents++];

			ev->routed = EddyRouterRouted(&es->router);
			ev->rel = x;
			ev->from = a->index;
			ev->to = b->index;
			ev->moved = moved;
			ev->ms = ns / 1e6;
			ev->forced = forced;
		}
		else
			mgr->events_truncated = true;
	}
	mg->arranged = to;
	mg->routed[to] += mg->routed[1 - to];
	mg->routed[1 - to] = 0.0;
	return moved;
}

/* Observed ratio (fan-out) of a target, or the planner's estimate */
static double
observed_ratio(EddyModuleStats *st)
{
	if (st->in > 0)
		return (double) st->out / (double) st->in;
	return st->prior_ratio;
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
 * guarded: does moving X's state from join[1 - to] to join[to] pay?  The
 * intermediate tuples saved against the entries moved and made (header).
 */
static bool
move_pays(EddyState *es, EddyMigrant *mg, int to)
{
	int			from = 1 - to;
	EddyModule *a = mg->join[from];
	EddyModule *b = mg->join[to];
	int			sa = mg->side[from];
	int			sb = mg->side[to];
	uint32		far = EddyHashJoinSpec(a)->side[1 - sa] & es->scanned;
	double		rem = 0.0;
	double		benefit;
	double		cost;
	int			i;

	for (i = 0; i < es->nsources; i++)
		if (far & (1u << i))
			rem += remaining_rows(&es->sources[i]);
	benefit = rem * observed_ratio(&a->stats[1 - sa]);
	cost = (double) EddyHashJoinStair(b, sb)->nentries +
		(double) EddyHashJoinStair(a, sa)->nentries *
		(1.0 + observed_ratio(&b->stats[sb]));
	return benefit > cost;
}

/* A forced move (eddy.debug_migrate_every) */
static void
forced_migration(EddyState *es)
{
	EddyMigrator *mgr = es->migrator;
	EddyMigrant *mg;

	mg = &mgr->migrants[pg_prng_uint64_range(&mgr->rng, 0, mgr->nmigrants - 1)];
	swap(es, mg, (int) pg_prng_uint64_range(&mgr->rng, 0, 1), true);
}

/*
 * At a point of stasis (exec.c, before the transient arena is rewound):
 * forced moves, then the policy's, once per recomputation of the routing.
 */
void
EddyMigrationStasis(EddyState *es)
{
	EddyMigrator *mgr = es->migrator;
	int			i;

	if (es->router.held)
		return;					/* eddy.routing_hold: nothing moves yet */
	if (mgr->debug_every > 0 && --mgr->until_forced <= 0)
	{
		mgr->until_forced = mgr->debug_every;
		forced_migration(es);
	}
	if (mgr->policy == EDDY_MIGRATION_OFF ||
		es->router.recomputations == mgr->seen_recomputations)
		return;
	mgr->seen_recomputations = es->router.recomputations;

	for (i = 0; i < mgr->nmigrants; i++)
	{
		EddyMigrant *mg = &mgr->migrants[i];
		int			p = preferred(es, mg);
		uint64		nread = es->sources[mg->rel].nread;

		/*
		 * The rows read since the previous evaluation went first where the
		 * routing then sent them: without a move, a change of decision
		 * leaves the state mixed, whatever `arranged` says.
		 */
		if (mg->last_pref >= 0)
			mg->routed[mg->last_pref] += (double) (nread - mg->seen_read);
		mg->seen_read = nread;
		mg->last_pref = p;

		if (mgr->policy == EDDY_MIGRATION_GREEDY &&
			(p < 0 || p == mg->arranged))
			continue;
		if (mgr->policy == EDDY_MIGRATION_GUARDED)
		{
			/* guarded: anything arranged the other way is worth a look */
			if (p < 0 || mg->routed[1 - p] == 0.0)
			{
				mg->streak = 0;
				continue;
			}
			if (++mg->streak < mg->hold || !move_pays(es, mg, p))
				continue;
			mg->hold *= 2;
			mg->streak = 0;
		}
		swap(es, mg, p, false);
	}
}

/* Rescan: the state is gone; what was learnt (the back-off) stays */
void
EddyMigrationRescan(EddyState *es)
{
	EddyMigrator *mgr = es->migrator;
	int			i;

	if (mgr == NULL)
		return;
	mgr->until_forced = mgr->debug_every;
	for (i = 0; i < mgr->nmigrants; i++)
	{
		mgr->migrants[i].arranged = preferred(es, &mgr->migrants[i]);
		mgr->migrants[i].last_pref = mgr->migrants[i].arranged;
		mgr->migrants[i].routed[0] = mgr->migrants[i].routed[1] = 0.0;
		mgr->migrants[i].seen_read = 0;
		mgr->migrants[i].streak = 0;
	}
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
	if (es->stems)
		appendStringInfoString(&buf, " (nothing to move: SteM mode stores base tuples only)");
	else if (mgr->nmigrants == 0)
		appendStringInfoString(&buf, " (no relation in the middle of a three-relation path of hash joins)");
	ExplainPropertyText("State Migration", buf.data, xs);
	if (!analyze || mgr->nmigrants == 0)
		return;
	ExplainPropertyUInteger("Migrations", NULL, mgr->migrations, xs);
	ExplainPropertyUInteger("Tuples Moved", NULL, mgr->moved, xs);
	if (xs->timing)
		ExplainPropertyFloat("Migration Time", "ms", mgr->ns / 1e6, 3, xs);
	if (!xs->verbose || mgr->nevents == 0)
		return;
	resetStringInfo(&buf);
	for (i = 0; i < mgr->nevents; i++)
	{
		EddyMigrationEvent *ev = &mgr->events[i];
		EddySource *src = &es->sources[ev->rel];

		if (i > 0)
			appendStringInfoString(&buf, "; ");
		appendStringInfo(&buf, "at " UINT64_FORMAT ": %s from %d to %d, " UINT64_FORMAT " moved%s",
						 ev->routed, src->name ? src->name : "?",
						 ev->from + 1, ev->to + 1, ev->moved,
						 ev->forced ? " (forced)" : "");
		if (xs->timing)
			appendStringInfo(&buf, " in %.3f ms", ev->ms);
	}
	if (mgr->events_truncated)
		appendStringInfoString(&buf, "; ...");
	ExplainPropertyText("Migration History", buf.data, xs);
}
