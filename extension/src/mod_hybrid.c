/*-------------------------------------------------------------------------
 *
 * mod_hybrid.c
 *	  The hybrid index/hash join module: SteMs with two access modules
 *	  (Raman, Deshpande & Hellerstein, ICDE 2003, sections 2.1, 3.1-3.3
 *	  and 4.3).
 *
 * A join edge R-side ⋈ T where T, end 1, is one relation alone on its side
 * of the join tree (a leaf) with an index on every join key, and the keys
 * are of one type on both ends.  T has two access modules: its scan (a
 * source of the eddy, when the planner scans T) and the index, and both
 * build into one SteM, side 1's STAIR, which holds T's base tuples only.
 * Side 0's STAIR holds the R-side tuples that chose the hash route, as a
 * STAIR-mode hash join's does.  The struct is a hash join's (mod_hashjoin.h)
 * with the index and the cache beside it, so the state interface's readers
 * are the hash join's.
 *
 * Direction 1: a T tuple t from the scan, key k.
 *	 - k is complete in T's SteM (below): t is a duplicate of a row an index
 *	   lookup already built, and is not built again (competitive access
 *	   methods, section 3.2: the SteM's set semantics; counted as
 *	   Duplicates), but it probes side 0's STAIR: the R-side tuples stored
 *	   there before k's lookup wait for it (see "Why the scanned copy
 *	   probes").
 *	 - otherwise as a hash join: built into T's SteM, and it probes side 0's
 *	   STAIR (the R-side tuples stored waiting for it).
 *
 * Direction 0: an R-side tuple r, key k.  Per tuple:
 *	 1. T's scan has ended: T's SteM holds every T row; r probes it and is
 *		not stored (STAIR mode's "only what can still be probed is stored").
 *	 2. k is complete in T's SteM (the index cache, section 3.3): an index
 *		lookup of k built every visible T row with k (the end-of-transmission
 *		marker is an entry of `complete`, a STAIR of keys): r probes the SteM
 *		and is not stored, since every later T row with k is a duplicate.
 *	 3. otherwise by index or by hash (the rule is below):
 *		index: k is looked up in the index under the query's snapshot,
 *		through an index join module of this module's own
 *		(mod_indexjoin.h: its probes and its fetches, not a copy).  Each
 *		visible match first runs the clauses T's scan keeps (the plan gives
 *		them over the heap, EddyJoinFetchQual) and T's selections over T
 *		alone, rewritten over the heap tuple (one that fails is dropped,
 *		never built: what the scan and eddy.filter_before_store do for a
 *		scanned row; the planner offers no hybrid join where they are
 *		volatile, which a row and its scanned copy could pass unlike); one
 *		that passes is
 *		built into T's SteM unless the SteM already holds it (its scanned
 *		copy).  k is marked complete, and r probes the SteM, which now
 *		holds all of its matches; r is not stored.
 *		hash: r is stored in side 0's STAIR and probes T's SteM, as a hash
 *		join: the matches present now, the rest as T's scan brings them.
 *	 Without a scan of T (the planner kept PostgreSQL's index nested loop
 *	 into T) every miss goes to the index: an index join with a cache.
 *
 * Why the scanned copy probes.  The lead's design had a row the index
 * built probe side 0's STAIR at once, so that an r' stored there waiting
 * for it got its result then, and its scanned copy was dropped.  That
 * result is made from r', not from the source tuple read last, which the
 * loop's invariants need (exec.c): it would go on to the R side's other
 * joins while one of them may be on the stack with a frame iterating the
 * very STAIR it would be stored in (a three-way join crashed on the
 * stack's bound).  So the lookup builds only, and r' gets the row when
 * T's scan reads it (direction 1 above): the scanned copy is not built
 * again but probes side 0, a result made from the driver.  r' waits for
 * T's scan as any tuple on the hash route does; no R-side tuple stores
 * with k once k is complete, so the probe is the one that makes (r', t).
 *
 * Which stored T row is the fetched one.  A SteM keeps T's rows by value,
 * with no TID (a scanned row comes from a projecting scan whose slot has
 * none).  An index lookup of k compares each row it fetches with the
 * SteM's entries of key k, column by column (binary equality of the
 * columns the eddy reads, which is all a result can tell of a row), and
 * pairs it with the first such entry not paired yet in this lookup:
 * identical rows are interchangeable, and the pairing is a bijection, so
 * the SteM ends with exactly one entry per visible row of key k that
 * passed T's selections (plus, with eddy.filter_before_store off, scanned
 * rows that fail them and were stored: their results are dropped by the
 * selections, as in a hash join).  The lead's design stored a TID per
 * entry; the pairing needs no change of the row format and is exact for
 * the results.  Its cost is quadratic in the duplicates of one key that
 * were scanned before the lookup; a lookup made while T's scan has built
 * no row skips it (the SteM then holds rows of complete keys only, which
 * are never looked up again).
 *
 * The choice (step 3).  The index route pays only if it saves T's scan: a
 * tuple on the hash route costs a store and a probe, while T's scan runs
 * anyway.  So once an R-side tuple is stored waiting for the scan (side
 * 0's STAIR is not empty), every miss takes the hash route.  Before that,
 * the first HYBRID_LEARN misses go to the index to time a lookup, then
 * with C_i the observed cost of a lookup (fetches and builds included; not
 * the first, which opens the index: 0.7 ms against 3-13 us after it), m
 * the share of lookups among the probes that missed or hit the cache so
 * far, R_left the R-side tuples still to come (the planner's rows of side
 * 0's end relation minus those routed here) and T_left the rows of T still
 * to scan (the planner's rows minus those read), at C_s a row (the
 * planner's cost of T's scan per row, plus the module's observed cost of
 * building one, or its prior before one is built):
 *		index  when  C_i * m * R_left  <=  C_s * T_left
 *		hash   otherwise
 * that is, the index when answering every R-side tuple still to come by
 * index or cache costs no more than the rest of the scan; once more R-side
 * tuples have come than the planner said, R_left is as many again as have
 * come (a doubling guess: the estimate is known wrong).  Then the module
 * commits: every miss goes to the index, and T's scan is ended early (the
 * state interface's cut, source.c): a T row read later could only be
 * built, and the lookup of its key would fetch it.  The cut is made at
 * once if T is being read; if T has not been read yet (the build schedule
 * reads the R side first), at the loop's next check of the end (a source
 * exhausted, or T's first row reaching this module), and until then the
 * commit is revisited every HYBRID_RECHECK lookups with the costs and
 * counts of then: an R side that outgrows the planner's estimate, or
 * lookups that grow slower, revoke it, and the miss at hand and every
 * later one take the hash route (T's scan then runs as a hash join's).
 * This is the hybrid's exploration: the index route's observed cost is
 * weighed again against the scan while the choice can still be undone.
 * The other way is one-way: once a tuple is stored waiting for T's scan,
 * the scan must run, and a lookup could only add its cost (a share of
 * misses sent to the index to explore would cost time and decide
 * nothing); and a scan ended does not resume.  The risk left is the
 * planner's on T: the commit is final once T's scan is cut.
 * eddy.hybrid_route = index, hash or random (half and half) overrides the
 * rule, for experiments and tests (index commits at once, as above;
 * random stores half the misses, so it never commits).
 *
 * The cache.  Building a lookup's rows into T's SteM and marking their key
 * complete pays only if the key comes again: an R side whose keys are all
 * distinct (SteMs Figure 8 with a fast index) pays the building for
 * nothing, 5-10% of a lookup.  So every HYBRID_RECHECK lookups the cache is
 * judged: the hits a lookup can expect, from the share of R-side tuples
 * whose key came before (the planner's, from its distinct keys among R's
 * rows, EddyJoinKeyDistinct; or the share of those lookups' probes the
 * cache answered, if larger), times a lookup's observed time (its building
 * not counted), against the time building their rows took; when the hits
 * would save less, the cache goes off for the rest of the scan (the state
 * of a rescan starts with it on).  The planner's share matters where keys
 * cycle: the first lookups of an R side of 1,000 rows over 250 keys in
 * order (SteMs Figure 7) hit nothing.  A lookup
 * with the cache off is an index join's: its matches are fetched one by
 * one from a frame of this module (T's filters run on each, as above) and
 * joined with r, nothing is built and k is not marked; r is not stored.
 * That is exact whatever T's scan does: r has every match the index has,
 * and a scanned row of k (before or after) is built or probes side 0's
 * STAIR, which r is not in, and no later R-side tuple of k is answered
 * from the cache (k is not complete).  Keys marked before stay answered
 * from the cache.  Where the planner thinks R's keys distinct and they
 * repeat only later, the cache may go off where it would have paid, and
 * the module then costs what the plain index join costs.
 * eddy.hybrid_cache = on or off overrides the judgement (tests, experiments).
 *
 * Exactly once.  The SteMs paper's routing constraints (section 3.1), and
 * where each is met:
 *	 BuildFirst		a T row is built into T's SteM before it probes side 0's
 *					STAIR (hybrid_route, direction 1; a row an index lookup
 *					built probes when its scanned copy comes).  Side 0's
 *					tuples on the hash route likewise are stored before
 *					they probe.
 *	 BounceBack		a probe that the SteM cannot answer completely is not
 *					bounced back to the eddy: the module itself sends it to
 *					the index (step 3) within the same route call, so an
 *					R-side tuple leaves this module with all of its matches
 *					(index, cache, scan ended) or stored (hash).
 *	 TimeStamp		unnecessary: every tuple in flight comes from the source
 *					tuple read last, and each pair (r, t) is made once: a
 *					stored r' by t's scanned copy's probe, if t reaches the
 *					module after r' (built by the scan, or only probing
 *					after an index built it), else by r''s own probe of the
 *					SteM; an r not stored probes once, after its key's T rows
 *					are all built, and no scanned copy probes it.
 *	 BoundedRepetition  a tuple visits each module once (done bits).
 *	 ProbeCompletion  an R-side tuple that is not stored probes only a
 *					SteM complete for its key (steps 1, 2, and 3 after the
 *					lookup); one that may miss matches is stored (hash).
 * In assert-enabled builds every result of the module is checked against
 * the pairs it made before (check_once: the identities of the rows it
 * joins, stored rows by address, transient ones by address and the
 * source tuple read, which is all a transient row lives for).
 *
 * Where the index route is off (the module is then a hash join): a parallel
 * eddy that exchanges its state, and a partial scan of T (each
 * participant scans a share of T, the index would return everyone's).
 * State migration and spilling are refused (es->migrate_refused,
 * es->spill_refused): both rebuild STAIRs from their rows, and the cache
 * would survive without its rows.  SteM mode keeps STAIRs when a hybrid
 * join is there (mod_stems.c: a module that keeps state but is no hash
 * join).
 *
 *-------------------------------------------------------------------------
 */
#include "mod_hashjoin.h"
#include "mod_indexjoin.h"

#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "utils/datum.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/ruleutils.h"

/* Misses sent to the index first, to learn a lookup's cost */
#define HYBRID_LEARN	3
/* Lookups between two checks of a commit not yet final (header) */
#define HYBRID_RECHECK	64


#ifdef USE_ASSERT_CHECKING
/* A result's identity: per source, its row's address and epoch */
typedef struct HybridPair
{
	uint64		id[EDDY_MAX_MAX_SOURCES][2];	/* the first nsources */
} HybridPair;
#endif

typedef struct EddyHybridJoin
{
	EddyHashJoin hj;			/* must be first: the STAIRs, the state readers */
	EddyModule *index;			/* the index probes (mod_indexjoin.c) */
	Oid			indexoid;
	Stair	   *complete;		/* keys complete in T's SteM */
	bool		t_scanned;		/* T is a source the eddy scans */
	const char *index_off;		/* why the index route is off, or NULL */
	ExprState  *fetch_qual;		/* the clauses T's scan keeps, or NULL */
	AttrNumber	fetch_natts;	/* ... the heap attributes it reads */
	EddyPredicate *sel_preds;	/* per module: a selection over T alone,
								 * over the heap tuple; NULL: none */
	EddyHybridRoute route;		/* eddy.hybrid_route when the node started */
	EddyHybridCache cache;		/* eddy.hybrid_cache likewise */
	pg_prng_state rng;
	double		scan_row_ns;	/* the planner's cost of T's scan per row */
	double		est_repeat;		/* the planner's share of R-side tuples whose
								 * key an earlier one had (EddyJoinKeyDistinct) */

	/* an index lookup's scratch */
	void	  **have;			/* the SteM's entries of k before it */
	bool	   *paired;
	int			maxhave;

	/* counters (EXPLAIN ANALYZE) */
	uint64		by_index;		/* R-side tuples answered by an index lookup */
	uint64		by_hash;		/* ... stored and probed (hash route) */
	uint64		by_cache;		/* ... answered from the cache */
	uint64		after_scan;		/* ... probing the SteM once T's scan ended */
	uint64		duplicates;		/* scanned T rows dropped: already built */
	uint64		fetched;		/* rows the index returned */
	uint64		fetched_built;	/* ... built into the SteM */
	uint64		fetched_present;	/* ... already there (scanned) */
	uint64		fetched_filtered;	/* ... dropped by T's selections */
	double		lookup_ns;		/* total time of the lookups */
	double		first_lookup_ns;	/* ... of the first (it opens the index) */
	uint64		unstored;		/* R-side tuples not stored, by any route */
	bool		committed;		/* every miss goes to the index from now on */
	int			since_check;	/* ... lookups since the commit was checked */
	uint64		committed_at;	/* R-side tuples routed here at the commit */
	uint64		revoked_at;		/* ... at its revocation, 0 if none */
	bool		t_cut;			/* ... and T's scan was ended (hybrid_cut) */
	uint64		cut_at;			/* T rows read when it was */
	uint64		scan_built;		/* T rows the scan built into the SteM */
	double		build_ns;		/* ... of lookup_ns: building into the cache */
	bool		cache_off;		/* lookups build nothing (header, "The cache") */
	bool		fetching;		/* a frame of an uncached lookup is open */
	int			window_lookups; /* lookups since the cache was judged */
	uint64		window_hits;	/* ... and cache hits */
	double		window_build_ns;	/* ... and their building time */
	uint64		uncached;		/* lookups made with the cache off */
	uint64		cache_off_at;	/* lookups made when it went off */
	bool		stem_complete;	/* T's scan ended, seen by a probe */
	uint64		complete_at;	/* tuples routed here when it was seen */
	uint64		complete_t_read;	/* ... and T rows read by then */

#ifdef USE_ASSERT_CHECKING
	HTAB	   *pairs;			/* every result's identity */
#endif
} EddyHybridJoin;

static EddyTuple *hybrid_route(EddyState *es, EddyModule *m, int dir,
							   EddyTuple *t);
static EddyTuple *hybrid_next(EddyState *es, EddyFrame *f);
static void hybrid_rescan(EddyState *es, EddyModule *m);
static void hybrid_end(EddyState *es, EddyModule *m);
static void hybrid_explain(EddyState *es, EddyModule *m, List *context,
						   bool useprefix, ExplainState *xs);
static void hybrid_clear(EddyState *es, EddyModule *m);
static int	hybrid_ended(EddyState *es, EddyModule *m, int *side);
static bool hybrid_probe_only(EddyState *es, EddyModule *m, int dir);
static bool hybrid_probe_misses(EddyState *es, EddyModule *m, int dir,
								Datum *keys, bool *isnull);
static uint32 hybrid_cut(EddyState *es, EddyModule *m);

static const EddyModuleMethods hybrid_methods = {
	.label = "Hybrid Join",
	.joins = true,
	.route = hybrid_route,
	.next = hybrid_next,
	.rescan = hybrid_rescan,
	.end = hybrid_end,
	.explain = hybrid_explain,
};

/* Its state: the hash join's two STAIRs (module.h, "The state interface") */
static const EddyStateMethods hybrid_state = {
	.nstores = 2,
	.store = EddyHashJoinStore,
	.spec = EddyHashJoinEnds,
	.clear = hybrid_clear,
	.sigs = EddyHashJoinSigs,
	.forget_sigs = EddyHashJoinForgetSigs,
	.save_counters = EddyHashJoinSaveCounters,
	.restore_counters = EddyHashJoinRestoreCounters,
	.ended = hybrid_ended,
	.probe_only = hybrid_probe_only,
	.probe_misses = hybrid_probe_misses,
	.cut = hybrid_cut,
};

/* A hybrid join module from its description (private.h) */
EddyModule *
EddyHybridJoinBegin(EddyState *es, List *desc, int index)
{
	EddyHashJoin *hj0 = (EddyHashJoin *) EddyHashJoinBegin(es, desc, index);
	EddyHybridJoin *hy = palloc0(sizeof(EddyHybridJoin));
	EddyModule *m = &hy->hj.module;
	EddyJoinSpec *ends;
	EddySource *src;
	int			x;
	int			j;
	int			k;

	memcpy(&hy->hj, hj0, sizeof(EddyHashJoin));
	pfree(hj0);
	/* the STAIRs point at their join's keys: at the copy's now, not hj0's */
	for (k = 0; k < 2; k++)
		hy->hj.stair[k]->keys = &hy->hj.ends.keys;
	m->methods = &hybrid_methods;
	m->state = &hybrid_state;
	es->modules[index] = m;
	ends = &hy->hj.ends;
	x = ends->rel[1];
	src = &es->sources[x];
	if (src->heap == NULL || (ends->side[1] & ~(1u << x)) != 0)
		elog(ERROR, "eddy: a hybrid join's end 1 must be one relation with its heap open");
	hy->t_scanned = (es->scanned & (1u << x)) != 0;
	hy->route = (EddyHybridRoute) eddy_hybrid_route;
	hy->cache = (EddyHybridCache) eddy_hybrid_cache;
	hy->cache_off = hy->cache == EDDY_HYBRID_CACHE_OFF;
	{
		double		distinct = floatVal(list_nth(desc, EddyJoinKeyDistinct));
		double		rows = Max(ends->est_rows[0], 1.0);

		hy->est_repeat = distinct > 0 ? Min(Max(1.0 - distinct / rows, 0.0), 1.0) : 1.0;
	}
	hy->complete = StairCreateInArena(&ends->keys, 1, &es->stored);
	es->nstairs++;
	hy->index = EddyIndexJoinBegin(es, desc, index);
	hy->indexoid = (Oid) intVal(list_nth(desc, EddyJoinIndexOid));
	pg_prng_seed(&hy->rng, UINT64CONST(0x5eed4b1d) ^ (uint64) index);

	/* the cache is probed with either end's keys: one type, one hash */
	for (k = 0; k < ends->nkeys; k++)
		if (ends->keys.hash[0][k].fn_oid != ends->keys.hash[1][k].fn_oid)
			hy->index_off = "its ends' keys hash differently";
	if (ends->nkeys == 0)
		hy->index_off = "it has no keys";
	/* a scanned T: its index would return rows other participants scan */
	if (hy->t_scanned && es->exchange)
		hy->index_off = "the parallel eddy exchanges its state";
	else if (hy->t_scanned)
	{
		Plan	   *scan = src->plan->plan;

		while (IsA(scan, Result) && scan->lefttree != NULL)
			scan = scan->lefttree;	/* a gating Result */
		if (scan->parallel_aware)
			hy->index_off = "its relation's scan is partial";
	}
	if (hy->index_off != NULL && !hy->t_scanned)
		elog(ERROR, "eddy: hybrid join %d reaches its relation by index only, but %s",
			 index + 1, hy->index_off);

	/* the planner's cost of a row of T's scan */
	if (hy->t_scanned)
	{
		Plan	   *plan = src->plan->plan;

		hy->scan_row_ns = EDDY_NS_PER_COST_UNIT *
			(plan->total_cost / Max(plan->plan_rows, 1.0));
	}

	/* the clauses T's scan keeps, and T's selections over T alone */
	if (list_nth(desc, EddyJoinFetchQual) != NIL)
	{
		List	   *quals = (List *) list_nth(desc, EddyJoinFetchQual);
		ListCell   *lc;

		hy->fetch_qual = ExecInitQual(quals, &es->css.ss.ps);
		foreach(lc, pull_var_clause((Node *) quals, 0))
			hy->fetch_natts = Max(hy->fetch_natts, lfirst_node(Var, lc)->varattno);
	}
	for (j = 0; j < index; j++)
	{
		EddyModule *sel = es->modules[j];
		Node	   *expr;

		if (sel == NULL || !EddyModuleFiltersSource(sel, x))
			continue;
		expr = EddyRewriteForSource((Node *) sel->expr, src, NIL, true);
		if (expr == NULL)
		{
			/* unfiltered at fetch: its results are filtered after the join */
			hy->sel_preds = NULL;
			break;
		}
		if (hy->sel_preds == NULL)
			hy->sel_preds = palloc0(sizeof(EddyPredicate) * es->nmodules);
		hy->sel_preds[j].qual = ExecInitQual(list_make1(expr), &es->css.ss.ps);
	}

	/* the cache would survive a rebuild of the STAIRs without its rows */
	if (hy->index_off == NULL)
	{
		es->migrate_refused = "a hybrid join's SteM caches index lookups";
		es->spill_refused = "a hybrid join's SteM caches index lookups";
	}
#ifdef USE_ASSERT_CHECKING
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(uint64) * 2 * es->nsources;
		ctl.entrysize = ctl.keysize;
		ctl.hcxt = CurrentMemoryContext;
		hy->pairs = hash_create("eddy hybrid join results", 256, &ctl,
								HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
#endif
	return m;
}

#ifdef USE_ASSERT_CHECKING
/*
 * Exactly once: result r was not made before.  A row in state memory is
 * known by its address; a transient one by its address and the source
 * tuple read (the transient arena is rewound before the next is read).
 */
static void
check_once(EddyState *es, EddyHybridJoin *hy, EddyTuple *r)
{
	HybridPair	key;
	uint64		epoch = 1;
	uint32		bits = r->spans;
	bool		found;
	int			i;

	if (es->replaying)
		return;
	for (i = 0; i < es->nsources; i++)
		epoch += es->sources[i].nread;
	memset(&key, 0, sizeof(key));
	while (bits != 0)
	{
		EddyRow    *row;

		i = pg_rightmost_one_pos32(bits);
		bits &= bits - 1;
		row = r->rows[i];
		if (row->in_state)
			key.id[i][0] = (uint64) (uintptr_t) row;
		else if (row_persistent(row) != NULL)
			key.id[i][0] = (uint64) (uintptr_t) row_persistent(row);
		else
		{
			key.id[i][0] = (uint64) (uintptr_t) row;
			key.id[i][1] = epoch;
		}
	}
	hash_search(hy->pairs, &key, HASH_ENTER, &found);
	Assert(!found);
}
#else
#define check_once(es, hy, r)	((void) 0)
#endif

/* Push a frame whose one probe is of side `side`'s STAIR */
static void
push_probe(EddyState *es, EddyHybridJoin *hy, int dir, EddyTuple *probe,
		   uint32 hash, Datum *keys)
{
	EddyFrame  *f = EddyPushFrame(es, &hy->hj.module, dir, probe);

	StairProbeBegin(&f->sp, hy->hj.stair[1 - dir], hash, keys);
}

/* Note that T's SteM is complete: its scan ended (EXPLAIN ANALYZE) */
static inline void
note_complete(EddyState *es, EddyHybridJoin *hy)
{
	if (hy->stem_complete)
		return;
	hy->stem_complete = true;
	hy->complete_at = hy->hj.module.stats[0].in + hy->hj.module.stats[1].in;
	hy->complete_t_read = es->sources[hy->hj.ends.rel[1]].nread;
}

/*
 * The clauses T's scan keeps, then T's selections over T alone, on the heap
 * tuple, as the scan and then the routing would run them (in plan order:
 * a selection that may raise runs after the earlier ones on T).  True if
 * it passed them all; *done holds the selections.
 */
static bool
fetch_filters(EddyState *es, EddyHybridJoin *hy, TupleTableSlot *slot,
			  uint64 *done)
{
	ExprContext *econtext = es->css.ss.ps.ps_ExprContext;
	int			j;

	*done = 0;
	econtext->ecxt_scantuple = slot;
	if (hy->fetch_qual != NULL)
	{
		MemoryContext oldcontext;
		bool		pass;

		/* compiled for the node's virtual slot: it deforms nothing itself */
		slot_getsomeattrs(slot, hy->fetch_natts);
		ResetExprContext(econtext);
		oldcontext = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
		pass = ExecQual(hy->fetch_qual, econtext);
		MemoryContextSwitchTo(oldcontext);
		if (!pass)
			return false;
	}
	if (hy->sel_preds == NULL)
		return true;
	for (j = 0; j < hy->hj.module.index; j++)
	{
		MemoryContext oldcontext;
		bool		pass;

		if (hy->sel_preds[j].qual == NULL)
			continue;
		ResetExprContext(econtext);
		oldcontext = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
		pass = EddyPredicateEval(&hy->sel_preds[j], econtext);
		MemoryContextSwitchTo(oldcontext);
		if (!pass)
			return false;
		*done |= UINT64CONST(1) << j;
	}
	return true;
}

/*
 * The next row the lookup begun fetches that passes fetch_filters (its
 * selections in *done), in T's heap slot, or NULL; counted.
 */
static TupleTableSlot *
next_fetched(EddyState *es, EddyHybridJoin *hy, uint64 *done)
{
	TupleTableSlot *slot;

	while ((slot = EddyIndexJoinProbeNext(es, hy->index)) != NULL)
	{
		hy->fetched++;
		if (fetch_filters(es, hy, slot, done))
			return slot;
		hy->fetched_filtered++;
	}
	return NULL;
}

/* Are two rows of T the same to the eddy (every column it reads)? */
static bool
rows_equal(EddySource *src, EddyRow *a, EddyRow *b)
{
	int			c;

	for (c = 0; c < src->ncols; c++)
	{
		if (a->isnull[c] != b->isnull[c])
			return false;
		if (!a->isnull[c] &&
			!datumIsEqual(a->values[c], b->values[c], src->typbyval[c], src->typlen[c]))
			return false;
	}
	return true;
}

/*
 * Step 3's index route for r, of keys k (hash): build every visible T row
 * of k not yet in T's SteM and mark k complete (r then probes the SteM).
 */
static void
lookup(EddyState *es, EddyHybridJoin *hy, EddyTuple *r, Datum *keys, uint32 hash)
{
	EddyJoinSpec *ends = &hy->hj.ends;
	int			x = ends->rel[1];
	EddySource *src = &es->sources[x];
	Stair	   *stem = hy->hj.stair[1];
	MemoryContext mcxt = GetMemoryChunkContext(hy);
	TupleTableSlot *slot;
	uint64		done;
	Datum	   *ckeys;
	int			nhave = 0;
	double		start = eddy_now_ns();
	double		build_start;
	double		build_ns = 0;
	int			k;

	/*
	 * The SteM's rows of k, scanned before: the fetched copies pair with
	 * them.  None when T's scan built no row (rows of k an index lookup built
	 * are complete, and k is not looked up again).
	 */
	if (stem->nentries > 0 && hy->scan_built > 0)
	{
		StairProbe	sp;
		void	   *u;

		StairProbeBegin(&sp, stem, hash, keys);
		while ((u = StairProbeNext(&sp)) != NULL)
		{
			if (nhave >= hy->maxhave)
			{
				hy->maxhave = Max(16, 2 * hy->maxhave);
				hy->have = hy->have == NULL ?
					MemoryContextAlloc(mcxt, sizeof(void *) * hy->maxhave) :
					repalloc(hy->have, sizeof(void *) * hy->maxhave);
				hy->paired = hy->paired == NULL ?
					MemoryContextAlloc(mcxt, sizeof(bool) * hy->maxhave) :
					repalloc(hy->paired, sizeof(bool) * hy->maxhave);
			}
			hy->have[nhave] = u;
			hy->paired[nhave] = false;
			nhave++;
		}
	}

	EddyIndexJoinProbeBegin(es, hy->index, keys);
	while ((slot = next_fetched(es, hy, &done)) != NULL)
	{
		EddyRow    *row;
		EddyTuple  *t;
		EddyTuple  *view;
		void	   *payload;
		Datum	   *tkeys;
		int			i;

		row = EddyRowFromHeapSlot(es, src, slot);
		for (i = 0; i < nhave; i++)
		{
			void	   *u = hy->have[i];
			EddyRow    *urow = EddyPayloadIsRow(u) ? EddyPayloadRow(u) :
				((EddyTuple *) u)->rows[x];

			if (!hy->paired[i] && rows_equal(src, row, urow))
				break;
		}
		if (i < nhave)
		{
			/* its scanned copy is in the SteM (competitive access methods) */
			hy->paired[i] = true;
			hy->fetched_present++;
			continue;
		}
		/* BuildFirst: built; it probes side 0 when the scan reads it */
		build_start = eddy_now_ns();
		t = EddyTupleAlloc(es, &es->transient);
		t->spans = 1u << x;
		t->done = done;
		memset(t->rows, 0, sizeof(EddyRow *) * es->nsources);
		t->rows[x] = row;
		payload = EddyTupleStoreForJoin(es, x, t, &view);
		tkeys = EddyArenaAlloc(&es->transient, sizeof(Datum) * ends->nkeys);
		if (!EddyJoinKeys(es, ends, 1, view, tkeys, &es->stored))
			elog(ERROR, "eddy: an index match of hybrid join %d has a NULL key",
				 hy->hj.module.index + 1);
		EddyHashJoinInsert(es, &hy->hj, 1, hash, tkeys, payload);
		hy->fetched_built++;
		build_ns += eddy_now_ns() - build_start;
	}

	/* the end-of-transmission marker: every T row of k is in the SteM */
	build_start = eddy_now_ns();
	ckeys = EddyArenaAlloc(&es->transient, sizeof(Datum) * ends->nkeys);
	for (k = 0; k < ends->nkeys; k++)
		ckeys[k] = EddyArenaDatumCopy(&es->stored, keys[k], ends->keybyval[0][k],
									  ends->keylen[0][k]);
	StairInsert(hy->complete, hash, ckeys, (void *) hy);	/* no payload */
	build_ns += eddy_now_ns() - build_start;
	hy->build_ns += build_ns;
	hy->window_build_ns += build_ns;
	if (hy->by_index == 0)
		hy->first_lookup_ns = eddy_now_ns() - start;
	hy->lookup_ns += eddy_now_ns() - start;
	hy->by_index++;
}

/*
 * Step 3's index route with the cache off (header, "The cache"): r is
 * answered as an index join answers it, from a frame that fetches its
 * matches one by one (hybrid_next), and nothing is built or marked.
 */
static void
lookup_uncached(EddyState *es, EddyHybridJoin *hy, EddyTuple *r, Datum *keys)
{
	double		start = eddy_now_ns();

	Assert(!hy->fetching);
	EddyIndexJoinProbeBegin(es, hy->index, keys);
	hy->lookup_ns += eddy_now_ns() - start;
	EddyPushFrame(es, &hy->hj.module, 0, r);
	hy->fetching = true;
	hy->by_index++;
	hy->uncached++;
}

/* The next match of an uncached lookup's frame, joined with its probe, or NULL */
static EddyTuple *
fetch_uncached(EddyState *es, EddyHybridJoin *hy, EddyFrame *f)
{
	int			x = hy->hj.ends.rel[1];
	EddySource *src = &es->sources[x];
	TupleTableSlot *slot;
	uint64		done;

	if ((slot = next_fetched(es, hy, &done)) != NULL)
	{
		EddyTuple  *t;

		/*
		 * T's row borrows the heap slot, as an index join's: the loop copies
		 * what it keeps before the next fetch
		 */
		t = EddyTupleAlloc(es, &es->transient);
		t->spans = 1u << x;
		t->done = done;
		memset(t->rows, 0, sizeof(EddyRow *) * es->nsources);
		t->rows[x] = EddyRowFromHeapSlot(es, src, slot);
		return EddyTupleJoin(es, &hy->hj.module, f->probe, x, t);
	}
	hy->fetching = false;
	return NULL;
}

/*
 * Does the cache pay (header, "The cache")?  Judged every HYBRID_RECHECK
 * lookups: it goes off, for the rest of the scan, when the hits a lookup
 * can expect, at the planner's share of repeated keys or the share of
 * hits among those lookups' probes, whichever is larger, save less time
 * than building a lookup's rows costs.
 */
static void
judge_cache(EddyHybridJoin *hy)
{
	double		fetch_ns;
	double		repeat;
	double		hits_per_lookup;

	if (hy->cache != EDDY_HYBRID_CACHE_AUTO || hy->cache_off ||
		++hy->window_lookups < HYBRID_RECHECK)
		return;
	/* a lookup's time without its building (not the first's: header) */
	fetch_ns = Max(hy->lookup_ns - hy->first_lookup_ns - hy->build_ns, 0.0) /
		Max((double) (hy->by_index - 1), 1.0);
	repeat = Max(hy->est_repeat, (double) hy->window_hits /
				 (double) (hy->window_hits + hy->window_lookups));
	hits_per_lookup = repeat >= 1.0 ? 1e9 : repeat / (1.0 - repeat);
	if (hits_per_lookup * fetch_ns * hy->window_lookups < hy->window_build_ns)
	{
		hy->cache_off = true;
		hy->cache_off_at = hy->by_index;
	}
	hy->window_lookups = 0;
	hy->window_hits = 0;
	hy->window_build_ns = 0;
}

/*
 * The rule of step 3 (header): does answering every R-side tuple still to
 * come by index or cache cost no more than the rest of T's scan?
 */
static bool
index_pays(EddyState *es, EddyHybridJoin *hy)
{
	EddyModule *m = &hy->hj.module;
	EddyJoinSpec *ends = &hy->hj.ends;
	EddySource *src = &es->sources[ends->rel[1]];
	double		seen = (double) m->stats[0].in;
	double		misses;
	double		r_left;
	double		t_left;
	double		lookup_cost;
	double		row_cost;

	misses = (double) hy->by_index /
		Max((double) (hy->by_index + hy->by_cache), 1.0);
	/*
	 * The planner's rows still to come, or, once more have come than it
	 * said, as many again as have come (its estimate is known wrong)
	 */
	r_left = Max(seen < ends->est_rows[0] ? ends->est_rows[0] - seen : seen, 1.0);
	t_left = Max(src->est_rows - (double) src->nread, 0.0);
	/* the first lookup reads the index's metapage: not counted */
	lookup_cost = (hy->lookup_ns - hy->first_lookup_ns) / (double) (hy->by_index - 1);
	row_cost = hy->scan_row_ns + (m->stats[1].samples > 0 ?
								  m->stats[1].cost_ns / (double) m->stats[1].samples :
								  m->stats[1].prior_cost_ns);
	return lookup_cost * misses * r_left <= row_cost * t_left;
}

/*
 * Step 3's choice (header): the index route?
 */
static bool
choose_index(EddyState *es, EddyHybridJoin *hy)
{
	EddyModule *m = &hy->hj.module;
	EddySource *src = &es->sources[hy->hj.ends.rel[1]];

	if (!hy->t_scanned)
		return true;
	if (hy->committed)
	{
		/* the commit revisited while T is unread (header) */
		if (hy->t_cut || hy->route != EDDY_HYBRID_AUTO ||
			++hy->since_check < HYBRID_RECHECK)
			return true;
		hy->since_check = 0;
		if (index_pays(es, hy))
			return true;
		/* revoked: this tuple is stored, and the choice is hash from now on */
		hy->committed = false;
		hy->revoked_at = m->stats[0].in;
		return false;
	}
	if (hy->index_off != NULL || hy->route == EDDY_HYBRID_HASH)
		return false;
	if (hy->route == EDDY_HYBRID_RANDOM)
		return pg_prng_bool(&hy->rng);
	if (hy->hj.stair[0]->nentries > 0)
		return false;			/* the scan must end anyway: hashing is free */
	if (hy->route == EDDY_HYBRID_AUTO)
	{
		if (hy->by_index < HYBRID_LEARN)
			return true;		/* learn the lookup's cost */
		if (!index_pays(es, hy))
			return false;
	}

	/*
	 * Every R-side tuple still to come is cheaper by index or cache than the
	 * rest of the scan, and none waits for the scan: commit.  The loop ends
	 * T's scan (hybrid_cut) at once if T is being read; if it has not been
	 * read yet, at its next check of the end (a source exhausted, or T's
	 * first row: hybrid_route), and until then the commit is revisited.
	 */
	hy->committed = true;
	hy->since_check = 0;
	hy->committed_at = m->stats[0].in;
	if (src->nread > 0)
		es->check_end = true;
	return true;
}

/*
 * t probes the other side's STAIR without being stored on its own (a
 * STAIR-mode hash join's skip: nothing can probe it later, or its matches
 * are all there).
 */
static void
probe_unstored(EddyState *es, EddyHybridJoin *hy, int dir, EddyTuple *t,
			   uint32 hash, Datum *keys)
{
	EddyHashJoin *hj = &hy->hj;

	hj->stair[dir]->complete = false;
	hj->stair[dir]->skipped++;
	if (hj->stair[1 - dir]->nentries > 0)
		push_probe(es, hy, dir, t, hash, keys);
}

/* BuildFirst: t is stored on its side, then probes the other */
static void
store_and_probe(EddyState *es, EddyHybridJoin *hy, int dir, EddyTuple *t,
				uint32 hash, Datum *keys)
{
	EddyHashJoin *hj = &hy->hj;
	EddyJoinSpec *ends = &hj->ends;
	EddyTuple  *probe;
	void	   *payload;

	payload = EddyTupleStoreForJoin(es, ends->rel[dir], t, &probe);
	if (!EddyJoinKeys(es, ends, dir, probe, keys, &es->stored))
		return;
	EddyHashJoinInsert(es, hj, dir, hash, keys, payload);
	if (hj->stair[1 - dir]->nentries > 0)
		push_probe(es, hy, dir, probe, hash, keys);
}

/*
 * Route t into the join in direction dir (the header's steps).
 */
static EddyTuple *
hybrid_route(EddyState *es, EddyModule *m, int dir, EddyTuple *t)
{
	EddyHybridJoin *hy = (EddyHybridJoin *) m;
	EddyHashJoin *hj = &hy->hj;
	EddyJoinSpec *ends = &hj->ends;
	Datum	   *keys = EddyArenaAlloc(&es->transient, sizeof(Datum) * Max(ends->nkeys, 1));
	Stair	   *other = hj->stair[1 - dir];
	uint32		hash;

	Assert(other->keys == &ends->keys && hj->stair[dir]->keys == &ends->keys);
	m->stats[dir].pairs += (double) other->nentries;
	if (!EddyJoinKeys(es, ends, dir, t, keys, &es->transient))
		return NULL;			/* a NULL key matches nothing */
	hash = EddyHashJoinHash(es, hj, dir, t, keys);

	if (dir == 1)
	{
		/*
		 * A scanned T row built already by an index lookup of its key, or
		 * one that no R-side tuple can probe any more: it only probes.
		 */
		bool		dup = hy->complete->nentries > 0 &&
			!StairHashAbsent(hy->complete, hash) &&
			StairContains(hy->complete, hash, keys);

		if (hy->committed && !hy->t_cut)
			es->check_end = true;	/* T's first row since the commit: cut */
		if (dup)
			hy->duplicates++;
		if (dup || (hj->probers[1] & ~es->exhausted) == 0)
			probe_unstored(es, hy, 1, t, hash, keys);
		else
		{
			hy->scan_built++;
			store_and_probe(es, hy, 1, t, hash, keys);	/* BuildFirst */
		}
		return NULL;
	}

	/* 1. T's scan has ended: its SteM is complete (ProbeCompletion) */
	if (hy->t_scanned && !hy->t_cut && (hj->probers[0] & ~es->exhausted) == 0)
	{
		note_complete(es, hy);
		hy->after_scan++;
		hy->unstored++;
		probe_unstored(es, hy, 0, t, hash, keys);
		return NULL;
	}
	/* 2. the index cache: k's rows are all in the SteM (ProbeCompletion) */
	if (hy->complete->nentries > 0 && !StairHashAbsent(hy->complete, hash) &&
		StairContains(hy->complete, hash, keys))
	{
		hy->by_cache++;
		hy->window_hits++;
		hy->unstored++;
		probe_unstored(es, hy, 0, t, hash, keys);
		return NULL;
	}
	/* 3. index (BounceBack: the module sends it there itself) or hash */
	if (choose_index(es, hy))
	{
		hy->unstored++;
		if (hy->cache_off)
		{
			/* not stored: the STAIR is incomplete (stair.h), as a skip */
			hj->stair[0]->complete = false;
			hj->stair[0]->skipped++;
			lookup_uncached(es, hy, t, keys);
			return NULL;
		}
		lookup(es, hy, t, keys, hash);
		probe_unstored(es, hy, 0, t, hash, keys);
		judge_cache(hy);
		return NULL;
	}
	hy->by_hash++;
	store_and_probe(es, hy, 0, t, hash, keys);
	return NULL;
}

/* The next result of a frame, or NULL */
static EddyTuple *
hybrid_next(EddyState *es, EddyFrame *f)
{
	EddyHybridJoin *hy = (EddyHybridJoin *) f->module;
	EddyTuple  *r;
	void	   *u;

	if (f->dir == 0 && hy->fetching)
	{
		/*
		 * An uncached lookup's (no other frame of this module is open).  Its
		 * fetches are the lookup's time, as in the cache's (index_pays,
		 * judge_cache), and the probe's cost when it is timed.
		 */
		double		start = eddy_now_ns();
		double		elapsed;

		r = fetch_uncached(es, hy, f);
		elapsed = eddy_now_ns() - start;
		hy->lookup_ns += elapsed;
		if (unlikely(f->timed))
			f->module->stats[0].cost_ns += elapsed;
		if (r == NULL)
			return NULL;
		f->module->stats[0].out++;
		check_once(es, hy, r);
		return r;
	}
	if (f->sp.next == NULL)
		return NULL;
	u = StairProbeNext(&f->sp);
	if (u == NULL)
		return NULL;
	r = EddyTupleJoin(es, f->module, f->probe, hy->hj.ends.rel[1 - f->dir], u);
	f->module->stats[f->dir].out++;
	check_once(es, hy, r);
	return r;
}

/*
 * Can no result be made any more (module.h, ended)?  Side 1 (T): T's scan
 * is exhausted and its SteM empty: every T row is built there before it
 * makes anything, by scan or index (or only probed, when nothing of side
 * 0 is left to read), so none ever crossed.  Side 0 only as a hash join's,
 * when no R-side tuple ever left unstored (by index, cache or after T's
 * scan): those made results that side 0's STAIR does not show.
 */
static int
hybrid_ended(EddyState *es, EddyModule *m, int *side)
{
	EddyHybridJoin *hy = (EddyHybridJoin *) m;
	EddyHashJoin *hj = &hy->hj;

	if (hy->t_scanned && !hy->t_cut && (hj->probers[0] & ~es->exhausted) == 0 &&
		hj->stair[1]->nentries == 0)
	{
		*side = 1;
		return 1;
	}
	if (hy->unstored == 0 && hj->probers[1] != 0 &&
		(hj->probers[1] & ~es->exhausted) == 0 && hj->stair[0]->nentries == 0)
	{
		*side = 0;
		return 0;
	}
	return -1;
}

/*
 * T's scan is of no use any more (module.h, cut) once the module committed
 * to the index: every R-side tuple still to come is answered by index or
 * cache, and none is stored waiting for a T row (side 0's STAIR is empty:
 * the module commits only then, and stores nothing after), so a T row read
 * now could only be built, and would be fetched by the lookup of its key.
 * T is a leaf: no other module reads it.
 */
static uint32
hybrid_cut(EddyState *es, EddyModule *m)
{
	EddyHybridJoin *hy = (EddyHybridJoin *) m;
	int			x = hy->hj.ends.rel[1];

	if (!hy->committed || hy->t_cut || (es->exhausted & (1u << x)) != 0)
		return 0;
	Assert(hy->hj.stair[0]->nentries == 0);
	hy->t_cut = true;
	hy->cut_at = es->sources[x].nread;
	return 1u << x;
}

/*
 * Would a fresh T row only probe (module.h, probe_only)?  When no R-side
 * tuple can come any more, as for a hash join (mod_hashjoin.c).  An R-side
 * tuple may always be looked up or stored.
 */
static bool
hybrid_probe_only(EddyState *es, EddyModule *m, int dir)
{
	EddyHybridJoin *hy = (EddyHybridJoin *) m;

	return dir == 1 && (hy->hj.probers[1] & ~es->exhausted) == 0;
}

/*
 * ... and it finds nothing in side 0's STAIR (module.h, probe_misses):
 * counted as hybrid_route would count it, for the scan to drop it.
 */
static bool
hybrid_probe_misses(EddyState *es, EddyModule *m, int dir, Datum *keys,
					bool *isnull)
{
	EddyHybridJoin *hy = (EddyHybridJoin *) m;
	Stair	   *other = hy->hj.stair[0];
	uint32		hash;

	if (!hybrid_probe_only(es, m, dir))
		return false;
	m->stats[1].pairs += (double) other->nentries;
	if (StairKeysHash(&hy->hj.ends.keys, 1, keys, isnull, &hash))
	{
		if (other->nentries > 0)
		{
			if (!StairHashAbsent(other, hash) && StairContains(other, hash, keys))
			{
				m->stats[1].pairs -= (double) other->nentries;
				return false;
			}
			other->probed++;	/* a probe that found nothing */
		}
		if (hy->complete->nentries > 0 && !StairHashAbsent(hy->complete, hash) &&
			StairContains(hy->complete, hash, keys))
			hy->duplicates++;
		else
		{
			hy->hj.stair[1]->complete = false;
			hy->hj.stair[1]->skipped++;
		}
	}
	m->stats[1].in++;
	return true;
}

/* Forget every entry and every mark of the cache (the caller resets the arena) */
static void
hybrid_clear(EddyState *es, EddyModule *m)
{
	EddyHybridJoin *hy = (EddyHybridJoin *) m;

	EddyHashJoinClear(es, m);
	StairClear(hy->complete);
	hy->stem_complete = false;
	hy->committed = false;
	hy->since_check = 0;
	hy->committed_at = 0;
	hy->revoked_at = 0;
	hy->t_cut = false;
	hy->unstored = 0;
	hy->scan_built = 0;
	hy->fetching = false;
	hy->cache_off = hy->cache == EDDY_HYBRID_CACHE_OFF;
	hy->window_lookups = 0;
	hy->window_hits = 0;
	hy->window_build_ns = 0;
#ifdef USE_ASSERT_CHECKING
	{
		HASH_SEQ_STATUS status;
		HybridPair *p;

		hash_seq_init(&status, hy->pairs);
		while ((p = hash_seq_search(&status)) != NULL)
			hash_search(hy->pairs, p, HASH_REMOVE, NULL);
	}
#endif
}

static void
hybrid_rescan(EddyState *es, EddyModule *m)
{
	hybrid_clear(es, m);
}

static void
hybrid_end(EddyState *es, EddyModule *m)
{
	EddyHybridJoin *hy = (EddyHybridJoin *) m;

	EddyHashJoinEnd(es, m);
	hy->index->methods->end(es, hy->index);
}

static void
hybrid_explain(EddyState *es, EddyModule *m, List *context, bool useprefix,
			   ExplainState *xs)
{
	EddyHybridJoin *hy = (EddyHybridJoin *) m;
	EddyJoinSpec *ends = &hy->hj.ends;
	bool		analyze = xs->analyze && es->css.ss.ps.instrument != NULL;
	char	   *expr = deparse_expression((Node *) m->expr, context, useprefix, false);
	char	   *rel = get_rel_name(es->sources[ends->rel[1]].heapoid);
	const char *access = hy->t_scanned ? (hy->index_off == NULL ? "scan and index" : "scan") :
		"index";
	Stair	   *stem = hy->hj.stair[1];
	Stair	   *waiting = hy->hj.stair[0];
	double		avg_us = hy->by_index > 0 ? hy->lookup_ns / hy->by_index / 1000.0 : 0;

	if (xs->format == EXPLAIN_FORMAT_TEXT)
	{
		EddyExplainLine(xs, "Hybrid Join %d: %s, %s by %s", m->index + 1, expr, rel, access);
		if (hy->index_off != NULL)
			EddyExplainLine(xs, "  Index Route Off: %s", hy->index_off);
		EddyExplainCounters(es, m, -1, xs);
		if (!analyze)
			return;
		EddyExplainLine(xs, "  Probes: Index: " UINT64_FORMAT "  Hash: " UINT64_FORMAT
						"  Cache: " UINT64_FORMAT "  After Scan: " UINT64_FORMAT,
						hy->by_index, hy->by_hash, hy->by_cache, hy->after_scan);
		if (xs->timing)
			EddyExplainLine(xs, "  Index Fetches: " UINT64_FORMAT "  Built: " UINT64_FORMAT
							"  Present: " UINT64_FORMAT "  Filtered: " UINT64_FORMAT
							"  Lookup: %.1f us",
							hy->fetched, hy->fetched_built, hy->fetched_present,
							hy->fetched_filtered, avg_us);
		else
			EddyExplainLine(xs, "  Index Fetches: " UINT64_FORMAT "  Built: " UINT64_FORMAT
							"  Present: " UINT64_FORMAT "  Filtered: " UINT64_FORMAT,
							hy->fetched, hy->fetched_built, hy->fetched_present,
							hy->fetched_filtered);
		EddyExplainLine(xs, "  SteM: Inserted: " UINT64_FORMAT "  Duplicates Dropped: "
						UINT64_FORMAT "  Probed: " UINT64_FORMAT "  Matched: " UINT64_FORMAT,
						stem->inserted, hy->duplicates, stem->probed, stem->matched);
		EddyExplainLine(xs, "  STAIR: Inserted: " UINT64_FORMAT "  Skipped: " UINT64_FORMAT
						"  Probed: " UINT64_FORMAT "  Matched: " UINT64_FORMAT,
						waiting->inserted, waiting->skipped, waiting->probed,
						waiting->matched);
		if (hy->stem_complete)
			EddyExplainLine(xs, "  SteM Complete: after " UINT64_FORMAT
							" tuples routed here, " UINT64_FORMAT " rows of %s read",
							hy->complete_at, hy->complete_t_read, rel);
		if (hy->committed_at > 0 && hy->revoked_at > 0)
			EddyExplainLine(xs, "  Index Route: committed after " UINT64_FORMAT
							" tuples routed here, revoked after " UINT64_FORMAT,
							hy->committed_at, hy->revoked_at);
		else if (hy->committed_at > 0)
			EddyExplainLine(xs, "  Index Route: committed after " UINT64_FORMAT
							" tuples routed here", hy->committed_at);
		if (hy->t_cut)
			EddyExplainLine(xs, "  Scan Ended Early: after " UINT64_FORMAT " rows of %s read",
							hy->cut_at, rel);
		if (hy->cache_off_at > 0)
			EddyExplainLine(xs, "  Index Cache: off after " UINT64_FORMAT " lookups, "
							UINT64_FORMAT " lookups uncached",
							hy->cache_off_at, hy->uncached);
		else if (hy->cache == EDDY_HYBRID_CACHE_OFF)
			EddyExplainLine(xs, "  Index Cache: off, " UINT64_FORMAT " lookups uncached",
							hy->uncached);
		return;
	}
	ExplainPropertyText("Operator Type", "Hybrid Join", xs);
	ExplainPropertyInteger("Operator Number", NULL, m->index + 1, xs);
	ExplainPropertyText("Join Condition", expr, xs);
	ExplainPropertyText("Relation Name", rel, xs);
	ExplainPropertyText("Index Name", get_rel_name(hy->indexoid), xs);
	ExplainPropertyText("Access", access, xs);
	if (hy->index_off != NULL)
		ExplainPropertyText("Index Route Off", hy->index_off, xs);
	EddyExplainCounters(es, m, -1, xs);
	if (!analyze)
		return;
	ExplainPropertyUInteger("Probes by Index", NULL, hy->by_index, xs);
	ExplainPropertyUInteger("Probes by Hash", NULL, hy->by_hash, xs);
	ExplainPropertyUInteger("Probes from Cache", NULL, hy->by_cache, xs);
	ExplainPropertyUInteger("Probes after Scan", NULL, hy->after_scan, xs);
	ExplainPropertyUInteger("Index Fetches", NULL, hy->fetched, xs);
	ExplainPropertyUInteger("Index Rows Built", NULL, hy->fetched_built, xs);
	ExplainPropertyUInteger("Index Rows Present", NULL, hy->fetched_present, xs);
	ExplainPropertyUInteger("Index Rows Filtered", NULL, hy->fetched_filtered, xs);
	if (xs->timing)
		ExplainPropertyFloat("Lookup Time", "us", avg_us, 1, xs);
	ExplainPropertyUInteger("SteM Inserted", NULL, stem->inserted, xs);
	ExplainPropertyUInteger("Duplicates Dropped", NULL, hy->duplicates, xs);
	ExplainPropertyUInteger("STAIR Inserted", NULL, waiting->inserted, xs);
	ExplainPropertyUInteger("STAIR Skipped", NULL, waiting->skipped, xs);
	if (hy->stem_complete)
	{
		ExplainPropertyUInteger("SteM Complete After Tuples", NULL, hy->complete_at, xs);
		ExplainPropertyUInteger("SteM Complete After Rows Read", NULL,
								hy->complete_t_read, xs);
	}
	if (hy->committed_at > 0)
		ExplainPropertyUInteger("Index Route Committed After Tuples", NULL,
								hy->committed_at, xs);
	if (hy->revoked_at > 0)
		ExplainPropertyUInteger("Index Route Revoked After Tuples", NULL, hy->revoked_at, xs);
	if (hy->t_cut)
		ExplainPropertyUInteger("Scan Ended Early After Rows Read", NULL, hy->cut_at, xs);
	if (hy->cache_off_at > 0)
		ExplainPropertyUInteger("Index Cache Off After Lookups", NULL, hy->cache_off_at, xs);
	ExplainPropertyUInteger("Uncached Lookups", NULL, hy->uncached, xs);
}
