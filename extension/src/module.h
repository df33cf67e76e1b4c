/*-------------------------------------------------------------------------
 *
 * module.h
 *	  The module interface: the vtable every module implements, the state
 *	  interface of modules that keep state, what every module has, and
 *	  what the modules share (predicates, the ends of a join).
 *
 * A module is a selection (mod_selection.c), a symmetric hash join in
 * STAIR mode (mod_hashjoin.c) or SteM mode (mod_stems.c), an index join
 * (mod_indexjoin.c), or a hybrid index/hash join (mod_hybrid.c, which
 * probes through mod_indexjoin.h); mod_join.c has what the joins share.  A module file
 * includes this header and the tuple format (tuple.h) only: it never
 * includes exec.h or loop.h.  It reaches the loop through two documented
 * callbacks only, EddyPushFrame (below) and the state mode's
 * es->build_first (node.h), and EXPLAIN through explain.c's two helpers.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EDDY_MODULE_H
#define EDDY_MODULE_H

#include "tuple.h"

/* ----------------------------------------------------------------
 *		Predicates
 * ----------------------------------------------------------------
 */

/*
 * A predicate over the node's scan tuple, with ExecQual semantics (NULL is
 * false).  "column op constant" with a strict operator calls the
 * operator's function directly on the deformed column.
 */
typedef struct EddyPredicate
{
	ExprState  *qual;
	FunctionCallInfo fast_fcinfo;	/* NULL: evaluate qual */
	AttrNumber	fast_attno;		/* 0-based column of the scan tuple */
	int			fast_argno;		/* which argument the column is */
} EddyPredicate;

/*
 * Evaluate on econtext's scan tuple, in the current memory context (the
 * per-tuple one).  The fast path needs the scan tuple deformed up to its
 * column.
 */
static inline bool
EddyPredicateEval(EddyPredicate *pred, ExprContext *econtext)
{
	FunctionCallInfo fcinfo = pred->fast_fcinfo;
	Datum		result;
	bool		isnull;

	if (fcinfo != NULL)
	{
		TupleTableSlot *slot = econtext->ecxt_scantuple;

		Assert(slot->tts_nvalid > pred->fast_attno);
		if (slot->tts_isnull[pred->fast_attno])
			return false;		/* strict operator on NULL */
		fcinfo->args[pred->fast_argno].value = slot->tts_values[pred->fast_attno];
		fcinfo->isnull = false;
		result = FunctionCallInvoke(fcinfo);
		return !fcinfo->isnull && DatumGetBool(result);
	}
	result = pred->qual->evalfunc(pred->qual, econtext, &isnull);
	return !isnull && DatumGetBool(result);
}

/* mod_selection.c */
extern void EddyPredicateInit(EddyPredicate *pred, Expr *expr, PlanState *parent);
extern void EddyPredicateInitScan(EddyPredicate *pred, Expr *expr, PlanState *parent);
extern AttrNumber EddyPredicateMaxAttno(Expr *expr);
extern Node *EddyRewriteForSource(Node *expr, EddySource *src, List *tlist,
								  bool heap);

/* ----------------------------------------------------------------
 *		Modules
 * ----------------------------------------------------------------
 */

/*
 * A frame of the iterator's stack (Deshpande 2004, section 2.1.4): a join
 * module with an outstanding probe whose matches are still to come.  A
 * module is on the stack at most once (a match has done the module, and
 * so has every tuple made from it).
 */
struct EddyFrame
{
	EddyModule *module;
	int			dir;
	EddyTuple  *probe;
	bool		timed;			/* the probe's route was timed: an index join
								 * times its fetches too (mod_indexjoin.c) */
	uint32		nnext;			/* a timed frame's next calls so far (an index
								 * join's sampling of its fetches) */
	StairProbe	sp;				/* hash join: the probe of the dual STAIR */
};

/*
 * The module vtable.
 *
 * route	take tuple t in direction dir.  Returns the tuple to route on
 *			(t itself with the module done, or a join's single result), or
 *			NULL when t leaves the eddy's hands: dropped, or stored with its
 *			matches pushed as a frame (EddyPushFrame) for `next`.
 * next		the next match of a frame this module pushed, or NULL.
 * rescan	forget all state, for a rescan.
 * end		release resources.
 * explain	its EXPLAIN lines or properties.
 * hot		optional, asked only of a module that set EddyModule.hot_keys:
 *			would t's probe here be of a hot key, one the statistics say
 *			matches many times the join's average (mod_indexjoin.c, "Hot
 *			keys")?  If so the loop routes t to a filter first where it has
 *			one eligible (EddyRouteFilterInstead, routing.c), and here once
 *			it has none: content-based routing.  Never during a replay.
 *
 * joins	a capability, not a kind: route may make tuples that span more
 *			sources than the tuple routed (a join).  The loop runs the
 *			state mode's BuildFirst callback (es->build_first) before a
 *			driver's first such module, and EXPLAIN reports a fan-out
 *			rather than a selectivity.
 */
typedef struct EddyModuleMethods
{
	const char *label;			/* "Selection", "Hash Join", "Index Join" */
	bool		joins;
	EddyTuple  *(*route) (EddyState *es, EddyModule *m, int dir, EddyTuple *t);
	EddyTuple  *(*next) (EddyState *es, EddyFrame *f);
	void		(*rescan) (EddyState *es, EddyModule *m);
	void		(*end) (EddyState *es, EddyModule *m);
	void		(*explain) (EddyState *es, EddyModule *m, List *context,
							bool useprefix, ExplainState *xs);
	bool		(*hot) (EddyState *es, EddyModule *m, EddyTuple *t);
} EddyModuleMethods;

/*
 * How many entries of each signature (the sources they span) a store
 * holds, kept while the eddy may migrate (EddyStateMethods.sigs)
 */
typedef struct EddySigCount
{
	uint32		spans;
	uint64		count;
} EddySigCount;

/* At most this many stores per module (EddyStateMethods.nstores) */
#define EDDY_MAX_STORES		2

/* The counters of one store, saved and restored around a replay */
typedef struct EddyStoreCounters
{
	uint64		inserted;
	uint64		probed;
	uint64		matched;
	uint64		skipped;
} EddyStoreCounters;

/*
 * The state interface.  A module that keeps state between tuples (a hash
 * join's two STAIRs, in STAIR or SteM mode; a hybrid join's) sets
 * EddyModule.state; a stateless one (a selection, an index join) leaves it
 * NULL.  Everything the executor's services do with a module's state goes
 * through these operations: state migration (migrate.c), spilling
 * (spill.c), the parallel exchange (parallel.c), the counters saved around
 * a replay and the loop's test whether the result can still grow
 * (source.c), the scan's probes of a local chain (local.c).  None of them
 * asks what kind a module is.
 *
 * The state is nstores stores, one per side of the module's join-tree
 * edge (spec): store s is a STAIR (stair.h) whose entries are payloads
 * (tuple.h) spanning the end relation spec->rel[s] and nothing outside
 * spec->side[s], hashed on the side's keys.  Services read, take and
 * reinsert entries with stair.c's iterator, store by store, or read them
 * all with EddyEntryIter (below).  Entries live in the eddy's
 * state arena (es->stored), so memory is accounted there for all modules
 * at once (EddyStateMemory, tuple.c), and freed by resetting it.
 *
 * Unless said otherwise an operation is called at a point of stasis
 * (exec.c): nothing in flight, no frame of the module on the stack.
 *
 * nstores		its number of stores, at most EDDY_MAX_STORES.
 * store		store s.
 * spec			its ends and keys: the sides the stores belong to.
 * clear		forget every entry (the caller resets the state arena):
 *				spilling frees the state this way.
 * sigs			the signatures of store s's entries and their counts, kept
 *				only while es->migrating; returns how many.
 * forget_sigs	the stores were emptied by taking their entries (state
 *				migration): the signature counts start again.
 * save_counters, restore_counters
 *				store s's counters (EddyStoreCounters), saved before rows
 *				are replayed (migration, spilling, the exchange) and
 *				restored after, so that they count the eddy's own routing.
 * ended		a side d whose scanned sources are all exhausted and whose
 *				store is empty, so that no result can be made any more
 *				(and *side = d), or -1: asked after a source ran out.
 * probe_only	would routing a fresh tuple of end dir's relation only
 *				probe (store nothing)?  Asked between two source tuples,
 *				when a local chain is computed.
 * probe_misses	the same, and it finds no match for keys (isnull): then it
 *				counts what routing it would have counted and returns
 *				true, for the caller to drop the tuple; else counts
 *				nothing.  Called from a scan's qual (a local chain), with
 *				nothing of the eddy's in flight.
 * cut			optional: scanned sources, not exhausted, whose remaining
 *				tuples can make no result any more though other sources go
 *				on (a hybrid join answering every probe by index); the loop
 *				reads them no more, as if exhausted.  Asked with ended,
 *				after a source ran out or the module set es->check_end.
 */
typedef struct EddyStateMethods
{
	int			nstores;
	Stair	   *(*store) (EddyModule *m, int s);
	EddyJoinSpec *(*spec) (EddyModule *m);
	void		(*clear) (EddyState *es, EddyModule *m);
	int			(*sigs) (EddyModule *m, int s, EddySigCount **sigs);
	void		(*forget_sigs) (EddyModule *m);
	void		(*save_counters) (EddyModule *m, int s, EddyStoreCounters *c);
	void		(*restore_counters) (EddyModule *m, int s,
									 const EddyStoreCounters *c);
	int			(*ended) (EddyState *es, EddyModule *m, int *side);
	bool		(*probe_only) (EddyState *es, EddyModule *m, int dir);
	bool		(*probe_misses) (EddyState *es, EddyModule *m, int dir,
								 Datum *keys, bool *isnull);
	uint32		(*cut) (EddyState *es, EddyModule *m);
} EddyStateMethods;

/*
 * What every module has.  ndirs routing targets (route targets' need,
 * allow and prereq, set by the module's begin function), with statistics
 * per direction.
 *
 * filter is a capability: a module whose routing is one predicate over
 * the tuple, passing or dropping it (a selection), sets it, and then the
 * loop may evaluate it inline instead of calling route (chains, local
 * chains, exec.c), and the module's done bit on a stored tuple says its
 * rows passed the predicate (kept by replay and spilling).
 */
struct EddyModule
{
	const EddyModuleMethods *methods;
	const EddyStateMethods *state;	/* NULL: the module keeps no state */
	int			index;			/* in plan order */
	Expr	   *expr;			/* predicate or join condition, for EXPLAIN */
	EddyPredicate *filter;		/* a filter's predicate, or NULL */
	uint32		ends;			/* a join's two end sources (0: a selection) */
	bool		hot_keys;		/* the loop asks methods->hot before route */
	int			ndirs;
	EddyRouteTarget target[2];	/* route conditions per direction */
	int			target_index[2];	/* their index in the router */
	EddyModuleStats stats[2];
};

/*
 * The filter capability, asked through these two and nowhere else outside
 * the module files: whether a module is a filter, and whether it is one
 * over source x alone (its one direction needs nothing else), which local
 * chains run at the scan and replay and spilling keep the done bit of.
 */
static inline bool
EddyModuleIsFilter(const EddyModule *m)
{
	return m->filter != NULL;
}

static inline bool
EddyModuleFiltersSource(const EddyModule *m, int x)
{
	return m->filter != NULL && (m->target[0].need & ~(1u << x)) == 0;
}

/* Module constructors, by EddyModuleKind (exec.c calls them in plan order) */
extern EddyModule *EddySelectionBegin(EddyState *es, List *desc, int index);
extern EddyModule *EddyHashJoinBegin(EddyState *es, List *desc, int index);
extern EddyModule *EddyIndexJoinBegin(EddyState *es, List *desc, int index);
extern void EddyIndexJoinBeginChain(EddyState *es, EddyModule *m);
extern EddyModule *EddyHybridJoinBegin(EddyState *es, List *desc, int index);

/*
 * Every entry of every store of every module that keeps state, in module
 * and store order (tuple.c): what spilling walks to count and write the
 * state.  Called at a point of stasis; an entry may not be deleted while
 * it is walked.  Next returns the entry's payload (tuple.h), or NULL at the
 * end; the iterator's m, s and spec say whose store it is in.
 */
typedef struct EddyEntryIter
{
	EddyState  *es;
	int			i;				/* the module's index, or nmodules: ended */
	int			s;				/* its store being walked, or -1 */
	EddyModule *m;
	EddyJoinSpec *spec;
	StairIterator it;
} EddyEntryIter;

extern void EddyEntryIterBegin(EddyEntryIter *ei, EddyState *es);
extern void *EddyEntryIterNext(EddyEntryIter *ei);

/*
 * The two ends of a join module and how a tuple's keys are read from them
 * (mod_join.c: shared by the hash and index joins).
 */
struct EddyJoinSpec
{
	int			rel[2];			/* the source at each end */
	uint32		side[2];		/* sources on each side of the tree edge */
	StairJoinKeys keys;
	int			nkeys;
	int		   *keycol[2];		/* per key: column of the end's row, or -1 */
	ExprState **keyexpr[2];		/* per key, when not a plain column */
	int16	   *keylen[2];
	bool	   *keybyval[2];
	bool		plainkeys[2];	/* every key a column of the end's row */
	bool		byvalkeys[2];	/* ... and passed by value */
	bool		unique[2];		/* a probe into side s finds at most one match */
	double		est_rows[2];
	double		presize_rows[2];	/* entries side s's STAIR likely holds */
	double		est_sel;
	List	   *keyexprs[2];	/* the key expressions, for EXPLAIN */
};

/*
 * The STAIR that direction dir of join module m probes (its far side's),
 * with that side's sources in *far_side; NULL for a module without two
 * STAIRs.  For what the state says to routing (exec.c, target_waits;
 * source.c, data_priors).
 */
static inline Stair *
EddyJoinFarStair(EddyModule *m, int dir, uint32 *far_side)
{
	if (m->state == NULL || m->state->nstores != 2 || m->ndirs != 2 ||
		m->state->spec == NULL || m->state->store == NULL)
		return NULL;
	*far_side = m->state->spec(m)->side[1 - dir];
	return m->state->store(m, 1 - dir);
}

extern void EddyJoinSpecInit(EddyState *es, EddyJoinSpec *ends, List *desc);
extern void EddyJoinTargets(EddyModule *m, EddyJoinSpec *ends, int ndirs);
extern bool EddyJoinKeysComputed(EddyState *es, EddyJoinSpec *ends, int side,
								 EddyTuple *t, Datum *values, EddyArena *arena);
extern char *EddyJoinKeysString(List *keyexprs, List *context, bool useprefix);

/*
 * The key values of tuple t on side `side`; false if a key is NULL.
 * Computed keys of by-reference types are copied into the arena.
 */
static inline bool
EddyJoinKeys(EddyState *es, EddyJoinSpec *ends, int side, EddyTuple *t,
			 Datum *values, EddyArena *arena)
{
	if (likely(ends->plainkeys[side]))
	{
		EddyRow    *row = t->rows[ends->rel[side]];
		int			k;

		for (k = 0; k < ends->nkeys; k++)
		{
			int			col = ends->keycol[side][k];

			if (row->isnull[col])
				return false;
			values[k] = row->values[col];
		}
		return true;
	}
	return EddyJoinKeysComputed(es, ends, side, t, values, arena);
}

/*
 * Evaluate a predicate on t's rows (the wide slot) with ExecQual semantics,
 * in the per-tuple memory context: a selection's, or an index semi or anti
 * join's inner qual on a match.
 */
static inline bool
EddyPredicateOnTuple(EddyState *es, EddyPredicate *pred, EddyTuple *t)
{
	ExprContext *econtext = es->css.ss.ps.ps_ExprContext;
	MemoryContext oldcontext;
	bool		pass;

	EddyTupleFillSlot(es, t);
	econtext->ecxt_scantuple = es->wide;
	ResetExprContext(econtext);
	oldcontext = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
	pass = EddyPredicateEval(pred, econtext);
	MemoryContextSwitchTo(oldcontext);
	return pass;
}

/*
 * A local chain's filter tg (local.c, "Local chains"; an index join's fetch
 * chain, mod_indexjoin.c) on econtext's scan tuple, in the current memory
 * context: counted as route_current counts it, and timed when the tuple
 * is.  True if it passed.
 */
static pg_attribute_always_inline bool
EddyLocalFilter(EddyRouteTarget *tg, EddyPredicate *pred, ExprContext *econtext,
				bool timed)
{
	bool		pass;

	tg->stats->in++;
	if (timed)
	{
		double		start = eddy_now_ns();

		pass = EddyPredicateEval(pred, econtext);
		tg->stats->cost_ns += eddy_now_ns() - start;
		tg->stats->samples++;
	}
	else
		pass = EddyPredicateEval(pred, econtext);
	if (pass)
		tg->stats->out++;
	return pass;
}

/* The same, in econtext's per-tuple memory, reset first */
static pg_attribute_always_inline bool
EddyLocalFilterPerTuple(EddyRouteTarget *tg, EddyPredicate *pred,
						ExprContext *econtext, bool timed)
{
	MemoryContext oldcontext;
	bool		pass;

	ResetExprContext(econtext);
	oldcontext = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
	pass = EddyLocalFilter(tg, pred, econtext, timed);
	MemoryContextSwitchTo(oldcontext);
	return pass;
}

/*
 * The loop's callback for a join module (exec.c): push a frame for an
 * outstanding probe, whose matches the module's `next` gives.  The module
 * fills in the probe state.
 */
extern EddyFrame *EddyPushFrame(EddyState *es, EddyModule *m, int dir,
								EddyTuple *probe);

/* mod_stems.c: SteM mode */
extern void EddyStemsInit(EddyState *es);
extern void EddyStateModeExplain(EddyState *es, ExplainState *xs);

/* explain.c: for the modules' explain methods */
extern void EddyExplainLine(ExplainState *xs, const char *fmt,...) pg_attribute_printf(2, 3);
extern void EddyExplainCounters(EddyState *es, EddyModule *m, int dir,
								ExplainState *xs);

#endif							/* EDDY_MODULE_H */
