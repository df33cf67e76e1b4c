/*-------------------------------------------------------------------------
 *
 * local.c
 *	  Chains of selections run on a source's own tuple: the one-source
 *	  eddy's chain, and the local chains of an eddy of several sources.
 *
 * The chain case.  A one-source eddy whose modules are all filters (a
 * selection eddy): every tuple of an epoch follows a prefix of one chain
 * of modules (routing.c), so the loop's READ walks the chain inline on the
 * tuple its source returned (EddyExecChain), with no copy and no
 * projection: custom_scan_tlist is the source's target list, and the
 * node's scan slot type is declared to be the source's before any
 * expression is compiled (exec.c).  The filters' columns are deformed once
 * per tuple.
 *
 * Local chains.  In an eddy of several sources, the selections over one
 * scanned source alone that this epoch's routing sends that source's
 * fresh tuples to first (before any join) are its local chain
 * (EddyLocalChainCompute): they are evaluated before the eddy makes an
 * eddy tuple of what the scan returned, so that a tuple they drop costs
 * no tuple, no row and no trip through the loop's states.  Where the
 * source is a plain scan, the chain runs inside the scan's qual, after
 * the scan's own filter and before its projection, as PostgreSQL's plan
 * filters there (begin_local_qual); else EddyReadSource (source.c) runs it
 * on the values the scan returned (EddyRouteLocally).  Either way counted,
 * timed and recorded as the main loop would.  An index-joined source has
 * the same at fetch time (mod_indexjoin.c, "Fetch chains").  Predicates
 * are rewritten over a source's own tuple by EddyRewriteForSource
 * (mod_selection.c).
 *
 * Only the filter capability of a module is used here (module.h): its
 * predicate, evaluated inline; and, for a scan's probe, the state
 * interface's probe_only and probe_misses.
 *
 *-------------------------------------------------------------------------
 */
#include "loop.h"

#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "port/pg_bitutils.h"

/* Tuples a local chain in a scan filters before it is computed again */
#define EDDY_LOCAL_RECHECK		1024

/* ----------------------------------------------------------------
 *		The chain case
 * ----------------------------------------------------------------
 */

/*
 * The chain case: walk this epoch's chain of filters on econtext's scan
 * tuple (the source's slot).  True if the tuple passed them all.  Only
 * where the tuple left the chain is counted (routing.h).  Inlined twice:
 * plain, and timing each evaluation (one tuple in
 * EDDY_COST_SAMPLE_INTERVAL).  Runs in the per-tuple memory context.
 */
static pg_attribute_always_inline bool
walk_chain(EddyRouter *router, ExprContext *econtext, bool timed)
{
	int			n = router->chain_len;
	int			k;

	for (k = 0; k < n; k++)
	{
		EddyPredicate *pred = (EddyPredicate *) router->chain_arg[k];
		bool		pass;

		if (timed)
		{
			EddyModuleStats *st = router->targets[router->chain[k]].stats;
			double		start = eddy_now_ns();

			pass = EddyPredicateEval(pred, econtext);
			st->cost_ns += eddy_now_ns() - start;
			st->samples++;
		}
		else
			pass = EddyPredicateEval(pred, econtext);
		if (!pass)
		{
			router->chain_dropped[k]++;
			return false;
		}
	}
	router->chain_passed++;
	return true;
}

/*
 * The chain case of EDDY_STATE_READ: read source tuples until one passes
 * every filter, and return its projection; NULL at the end of the source.
 */
static pg_attribute_always_inline TupleTableSlot *
read_chain(EddyState *es)
{
	ExprContext *econtext = es->css.ss.ps.ps_ExprContext;
	PlanState  *source = es->sources[0].plan;

	for (;;)
	{
		TupleTableSlot *slot;
		MemoryContext oldcontext;
		bool		pass;

		CHECK_FOR_INTERRUPTS();

		slot = ExecProcNode(source);
		if (TupIsNull(slot))
			return NULL;

		ResetExprContext(econtext);
		econtext->ecxt_scantuple = slot;
		slot_getsomeattrs(slot, es->deform_natts);
		EddyRouterTupleIn(&es->router);

		oldcontext = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
		if (unlikely(--es->until_sample <= 0))
		{
			es->until_sample = EDDY_COST_SAMPLE_INTERVAL;
			pass = walk_chain(&es->router, econtext, true);
		}
		else
			pass = walk_chain(&es->router, econtext, false);
		MemoryContextSwitchTo(oldcontext);

		if (!pass)
		{
			InstrCountFiltered1(&es->css, 1);
			continue;
		}
		if (es->css.ss.ps.ps_ProjInfo)
			return ExecProject(es->css.ss.ps.ps_ProjInfo);
		return slot;
	}
}

/*
 * The chain case's ExecProcNode (installed by exec.c's eddy_begin instead
 * of the state machine, whose states it needs but READ and DONE): the
 * One-Time Filter, then the next tuple that passes the chain.  One call a
 * tuple, as the main loop costs one turn a tuple.
 */
TupleTableSlot *
EddyExecChain(PlanState *pstate)
{
	EddyState  *es = (EddyState *) pstate;
	TupleTableSlot *slot;

	EddyCheckOneTimeFilter(es);
	if (es->state == EDDY_STATE_DONE)
		return NULL;
	Assert(es->chain && es->state == EDDY_STATE_READ);
	CHECK_FOR_INTERRUPTS();
	slot = read_chain(es);
	if (slot == NULL)
		es->state = EDDY_STATE_DONE;
	return slot;
}

/* ----------------------------------------------------------------
 *		Local chains
 * ----------------------------------------------------------------
 */

/* Highest column of its scan tuple an expression over it reads */
static bool
scan_attno_walker(Node *node, AttrNumber *max)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		if (((Var *) node)->varattno > *max)
			*max = ((Var *) node)->varattno;
		return false;
	}
	return expression_tree_walker(node, scan_attno_walker, (void *) max);
}

/*
 * Would routing a fresh tuple to target tg only probe its module's state
 * (the state interface's probe_only)?  Only asked of a target whose
 * module's state the scan may probe (probe_attnos set).
 */
static inline bool
probe_only(EddyState *es, EddyRouteTarget *tg)
{
	EddyModule *m = es->modules[tg->module];

	return m->state->probe_only(es, m, tg->dir);
}

/*
 * This epoch's local chain of source i: the selections over it alone that
 * the routing table sends its fresh tuples to, in order, until it sends
 * them to a join.
 */
void
EddyLocalChainCompute(EddyState *es, int i, EddySource *src)
{
	uint64		done = 0;
	int			target;

	src->local_len = 0;
	while ((target = EddyRoute(&es->router, 1u << i, done)) != EDDY_ROUTE_OUTPUT &&
		   es->targets[target].arg != NULL)
	{
		Assert(src->local_len < es->nmodules);
		src->local_chain[src->local_len++] = target;
		done |= UINT64CONST(1) << es->targets[target].module;
	}
	src->local_next = target == EDDY_ROUTE_OUTPUT ? -1 : target;
	src->local_generation = es->router.generation;
	src->local_recheck = EDDY_LOCAL_RECHECK;

	/*
	 * Probe in the scan only while most probes miss: a probe that matches
	 * is made again by the join itself.  Its observed fan-out is the guide:
	 * as rank's statistics decay it, or since the start under a policy that
	 * keeps none (fixed); untried, try it.  Looked at again every
	 * EDDY_LOCAL_RECHECK tuples the scan filters, whatever the routing
	 * policy does.
	 */
	src->local_probe = false;
	src->local_exhausted = es->exhausted;
	if (src->local_next >= 0 && src->local_qual != NULL &&
		src->local_qual->probe_attnos[src->local_next] != NULL &&
		probe_only(es, &es->targets[src->local_next]))
	{
		EddyModuleStats *st = es->targets[src->local_next].stats;
		double		in = st->w_in;
		double		out = st->w_out;

		if (in < 1.0)
		{
			in = (double) st->in;
			out = (double) st->out;
		}
		src->local_probe = in < 1.0 || out < 0.5 * in;
	}

	/*
	 * The scan evaluates the chain only while there is one: else its own
	 * filter alone, at no cost to it, and EddyReadSource looks again.
	 */
	if (src->local_qual != NULL)
	{
		EddyLocalQual *lq = src->local_qual;
		AttrNumber	fetch = lq->orig_attno;
		int			k;

		for (k = 0; k < src->local_len; k++)
			fetch = Max(fetch, lq->pred_attno[es->targets[src->local_chain[k]].module]);
		if (src->local_probe)
			fetch = Max(fetch, lq->probe_fetch[src->local_next]);
		lq->fetch_attno = Min(fetch, ((ScanState *) src->plan)->ss_ScanTupleSlot->tts_tupleDescriptor->natts);
		src->plan->qual = (src->local_len > 0 || src->local_probe) ?
			lq->wrapper : lq->orig;
	}
}

/*
 * A fresh tuple of source i (in its slot) enters routing here, where some
 * selections read its relation alone: the ones this epoch's routing sends
 * it to first (its local chain) are evaluated on the slot's values, copied
 * into its range of the wide slot, before anything is made of the tuple,
 * so that a tuple they drop costs no eddy tuple, no row and no trip through
 * the main loop.  Counted and timed as route_current would.  Where the
 * scan can run the chain itself, it does (local_qual_eval).  False if dropped; else done holds the
 * selections passed, and the routing of the tuple goes on in ROUTE.
 */
bool
EddyRouteLocally(EddyState *es, int i, EddySource *src, TupleTableSlot *slot,
			  uint64 *done)
{
	EddyRouter *router = &es->router;
	ExprContext *econtext = es->css.ss.ps.ps_ExprContext;
	TupleTableSlot *wide = es->wide;
	bool		timed;
	int			k;
	int			c;

	EddyRouterTupleIn(router);
	timed = (--es->until_sample <= 0);
	if (timed)
		es->until_sample = EDDY_COST_SAMPLE_INTERVAL;
	es->current_started = true;
	es->current_fresh = true;
	es->current_timed = timed;
	if (src->local_generation != router->generation)
		EddyLocalChainCompute(es, i, src);
	if (src->local_len == 0)
		return true;

	ExecClearTuple(wide);
	for (c = 0; c < src->ncols; c++)
	{
		wide->tts_values[src->first_col + c] = slot->tts_values[c];
		wide->tts_isnull[src->first_col + c] = slot->tts_isnull[c];
	}
	ExecStoreVirtualTuple(wide);
	es->loaded[i] = NULL;		/* no row's: the caller sets it */
	es->current_fresh = false;
	EddyRouterNoteFirst(router, i, src->local_chain[0]);
	econtext->ecxt_scantuple = wide;
	for (k = 0; k < src->local_len; k++)
	{
		EddyRouteTarget *tg = &es->targets[src->local_chain[k]];

		if (!EddyLocalFilterPerTuple(tg, (EddyPredicate *) tg->arg, econtext, timed))
		{
			InstrCountFiltered1(&es->css, 1);
			es->current_started = false;
			return false;
		}
		*done |= UINT64CONST(1) << tg->module;
	}
	return true;
}

/*
 * The local chain in the source's scan.  Where the source is a plain scan
 * node (ExecScan: a filter, then the projection) and every local selection
 * can be rewritten over the scan's own tuple (its columns are the scan's
 * target list's Vars; no subplan), the chain runs inside the scan's qual:
 * the scan's own filter first, then this epoch's local chain, counted and
 * timed as route_current would.  A tuple it drops is never projected nor
 * returned, as in PostgreSQL's plan, where the scan filtered it.  It is
 * counted by the selection that dropped it, not as the scan's Rows Removed
 * by Filter (its Filter does not show the eddy's selections).  Then, where
 * the routing sends the tuple on to a hash join that would not store it,
 * the join's probe runs there too (its keys the scan tuple's columns, or
 * expressions of them alone computed there), and a tuple that finds no match is
 * dropped (the state's probe_misses counts it as the join would), while
 * most probes miss: one that matches is made again when the tuple is
 * routed.  A tuple it passes carries what it did to
 * EddyReadSource in EddyLocalQual; one it drops still counts as read (the
 * cumulative policy's rows read, EXPLAIN's Tuples Read).  While the eddy
 * spills, what the scan returns goes to batch files unrouted, and is
 * routed when its batch is read (EddyRouteLocally), so the chain stands
 * aside; so it does for the tuple of every source read ahead before
 * anything is routed (peek_sources): one empty source, and nothing is.  Only under the build schedule with no delay and no routing hold,
 * and where state may not migrate: the schedules that pace their sources
 * (schedule.c) decide which source to read tuple by tuple, and migration
 * looks for misplaced state at every point of stasis, dropped tuples
 * included, so there the chain runs in EddyReadSource (EddyRouteLocally), which
 * then returns to the main loop for each tuple it drops.
 */

/* A tuple the chain or the probe drops: the eddy's drop, not the scan's */
static inline Datum
local_qual_drop(EddyLocalQual *lq, EddySource *src, bool filtered)
{
	src->nread++;
	src->scan_dropped++;
	if (filtered)
		InstrCountFiltered1(&lq->es->css, 1);
	if (unlikely(lq->scan->instrument != NULL))
		lq->scan->instrument->nfiltered1 -= 1;	/* ExecScan counts it there */
	return BoolGetDatum(false);
}

/*
 * The probe of local_qual_eval: true if the tuple misses, and then counted
 * as the join's (out of line: the chain's drops are the common case).
 */
static pg_noinline bool
local_probe_misses(EddyLocalQual *lq, EddySource *src, ExprContext *econtext,
				   bool timed)
{
	EddyState  *es = lq->es;
	EddyRouteTarget *tg = &es->targets[src->local_next];
	EddyModule *m = es->modules[tg->module];
	AttrNumber *attnos = lq->probe_attnos[src->local_next];
	ExprState **kexprs = lq->probe_exprs[src->local_next];
	TupleTableSlot *scantuple = econtext->ecxt_scantuple;
	int			nkeys = lq->probe_nkeys[src->local_next];
	double		start = 0;
	int			k;

	/* computed keys in the scan's per-tuple context, as its own filter */
	for (k = 0; k < nkeys; k++)
		lq->keys[k] = (kexprs != NULL && kexprs[k] != NULL) ?
			ExecEvalExpr(kexprs[k], econtext, &lq->keynulls[k]) :
			slot_getattr(scantuple, attnos[k], &lq->keynulls[k]);
	if (timed)
		start = eddy_now_ns();
	if (!m->state->probe_misses(es, m, tg->dir, lq->keys, lq->keynulls))
		return false;
	if (timed)
	{
		tg->stats->cost_ns += eddy_now_ns() - start;
		tg->stats->samples++;
	}
	if (!lq->noted)
		EddyRouterNoteFirst(&es->router, lq->source, src->local_next);
	return true;
}

/* The chain, timed (out of line: one tuple in EDDY_COST_SAMPLE_INTERVAL) */
static pg_noinline bool
local_chain_timed(EddyLocalQual *lq, EddySource *src, ExprContext *econtext,
				  uint64 *done)
{
	EddyState  *es = lq->es;
	int			k;

	for (k = 0; k < src->local_len; k++)
	{
		EddyRouteTarget *tg = &es->targets[src->local_chain[k]];

		if (!EddyLocalFilter(tg, &lq->preds[tg->module], econtext, true))
			return false;
		*done |= UINT64CONST(1) << tg->module;
	}
	return true;
}

static Datum
local_qual_eval(ExprState *state, ExprContext *econtext, bool *isnull)
{
	EddyLocalQual *lq = (EddyLocalQual *) state->evalfunc_private;
	EddyState  *es = lq->es;
	EddySource *src = lq->src;
	uint64		done = 0;
	bool		timed;
	int			k;

	lq->passed = false;
	if (econtext->ecxt_scantuple->tts_nvalid < lq->fetch_attno)
		slot_getsomeattrs(econtext->ecxt_scantuple, lq->fetch_attno);
	/*
	 * The scan's own filter (ExecScan's ExecQual switched the context), one
	 * clause by its fast path where it has one
	 */
	*isnull = false;
	if (lq->orig_pred.fast_fcinfo != NULL)
	{
		if (!EddyPredicateEval(&lq->orig_pred, econtext))
			return BoolGetDatum(false);
	}
	else if (lq->orig != NULL &&
			 !DatumGetBool(ExecEvalExpr(lq->orig, econtext, isnull)))
	{
		*isnull = false;
		return BoolGetDatum(false);
	}
	*isnull = false;
	if (unlikely(es->spill != NULL || es->peeking))
		return BoolGetDatum(true);	/* routed later, in EddyReadSource */

	EddyRouterTupleIn(&es->router);
	timed = (--es->until_sample <= 0);
	if (unlikely(src->local_generation != es->router.generation ||
				 src->local_exhausted != es->exhausted ||
				 --src->local_recheck <= 0))
	{
		EddyLocalChainCompute(es, lq->source, src);
		/* the new chain's predicates may read further (their fast paths) */
		if (econtext->ecxt_scantuple->tts_nvalid < lq->fetch_attno)
			slot_getsomeattrs(econtext->ecxt_scantuple, lq->fetch_attno);
	}
	lq->noted = src->local_len > 0;
	if (lq->noted)
		EddyRouterNoteFirst(&es->router, lq->source, src->local_chain[0]);
	if (likely(!timed))
	{
		for (k = 0; k < src->local_len; k++)
		{
			EddyRouteTarget *tg = &es->targets[src->local_chain[k]];

			if (!EddyLocalFilter(tg, &lq->preds[tg->module], econtext, false))
				return local_qual_drop(lq, src, true);
			done |= UINT64CONST(1) << tg->module;
		}
	}
	else
	{
		es->until_sample = EDDY_COST_SAMPLE_INTERVAL;
		if (!local_chain_timed(lq, src, econtext, &done))
			return local_qual_drop(lq, src, true);
	}

	/*
	 * Then a hash join that would neither store the tuple (nothing probes
	 * its side any more) nor find it a match drops it too: the probe of
	 * the source read last into the others' state (TPC-H Q17: 6,001,215
	 * lineitem rows probe 204 of part, 6,088 match).
	 */
	if (src->local_probe && local_probe_misses(lq, src, econtext, timed))
		return local_qual_drop(lq, src, false);
	lq->passed = true;
	lq->done = done;
	lq->timed = timed;
	return BoolGetDatum(true);
}

/* Put source i's local chain in its scan's qual, where it can be */
static void
begin_local_qual(EddyState *es, int i, EddySource *src)
{
	PlanState  *scan = src->plan;
	EddyLocalQual *lq;
	ExprState  *wrapper;
	List	   *tlist = scan->plan->targetlist;
	int			maxkeys = 0;
	bool		any;
	int			j;

	if (!IsA(scan, SeqScanState) && !IsA(scan, IndexScanState) &&
		!IsA(scan, IndexOnlyScanState) && !IsA(scan, BitmapHeapScanState))
		return;
	lq = palloc0(sizeof(EddyLocalQual));
	lq->preds = palloc0(sizeof(EddyPredicate) * es->nmodules);
	lq->pred_attno = palloc0(sizeof(AttrNumber) * es->nmodules);
	for (j = 0; j < es->nmodules; j++)
	{
		EddyModule *m = es->modules[j];
		Node	   *expr;

		if (!EddyModuleFiltersSource(m, i))
			continue;
		expr = EddyRewriteForSource((Node *) m->expr, src, tlist, false);
		if (expr == NULL)
			return;				/* EddyRouteLocally does it */
		EddyPredicateInitScan(&lq->preds[j], (Expr *) expr, scan);
		scan_attno_walker(expr, &lq->pred_attno[j]);
	}

	/*
	 * The hash joins this source's tuples may go to first, on its columns
	 * or on keys computed from them alone (r.reason_id + 0: the
	 * misestimation workload's m07, m10, m22), rewritten over the scan's
	 * tuple as the chain's predicates are.  A volatile key is not computed
	 * twice.
	 */
	lq->probe_attnos = palloc0(sizeof(AttrNumber *) * es->ntargets);
	lq->probe_exprs = palloc0(sizeof(ExprState **) * es->ntargets);
	lq->probe_fetch = palloc0(sizeof(AttrNumber) * es->ntargets);
	lq->probe_nkeys = palloc0(sizeof(int) * es->ntargets);
	any = src->local_sels;
	for (j = 0; j < es->ntargets; j++)
	{
		EddyRouteTarget *tg = &es->targets[j];
		EddyModule *m = es->modules[tg->module];
		EddyJoinSpec *ends;
		AttrNumber *attnos;
		ExprState **kexprs = NULL;
		AttrNumber	fetch = 0;
		int			k;

		if (m->state == NULL || m->state->probe_misses == NULL)
			continue;			/* nothing a scan can probe */
		ends = m->state->spec(m);
		if (ends->rel[tg->dir] != i)
			continue;
		attnos = palloc0(sizeof(AttrNumber) * Max(ends->nkeys, 1));
		for (k = 0; k < ends->nkeys; k++)
		{
			int			c = ends->keycol[tg->dir][k];
			TargetEntry *tle;

			if (c < 0)
			{
				Node	   *expr;

				expr = EddyRewriteForSource(list_nth(ends->keyexprs[tg->dir], k),
											src, tlist, false);
				if (expr == NULL || contain_volatile_functions(expr))
					break;
				if (kexprs == NULL)
					kexprs = palloc0(sizeof(ExprState *) * ends->nkeys);
				kexprs[k] = ExecInitExpr((Expr *) expr, scan);
				scan_attno_walker(expr, &fetch);
				continue;
			}
			if (c >= list_length(tlist))
				break;
			tle = list_nth_node(TargetEntry, tlist, c);
			if (!IsA(tle->expr, Var) || ((Var *) tle->expr)->varattno <= 0)
				break;
			attnos[k] = ((Var *) tle->expr)->varattno;
			fetch = Max(fetch, attnos[k]);
		}
		if (k < ends->nkeys)
			continue;
		lq->probe_attnos[j] = attnos;
		lq->probe_exprs[j] = kexprs;
		lq->probe_fetch[j] = fetch;
		lq->probe_nkeys[j] = ends->nkeys;
		maxkeys = Max(maxkeys, ends->nkeys);
		any = true;
	}
	if (!any)
		return;					/* nothing to do there */
	lq->keys = palloc(sizeof(Datum) * Max(maxkeys, 1));
	lq->keynulls = palloc(sizeof(bool) * Max(maxkeys, 1));
	lq->es = es;
	lq->source = i;
	lq->src = src;
	lq->scan = scan;
	lq->orig = scan->qual;
	if (list_length(scan->plan->qual) == 1)
		EddyPredicateInitScan(&lq->orig_pred, linitial(scan->plan->qual), scan);
	scan_attno_walker((Node *) scan->plan->qual, &lq->orig_attno);
	lq->orig_attno = Min(lq->orig_attno,
						 ((ScanState *) scan)->ss_ScanTupleSlot->tts_tupleDescriptor->natts);
	lq->fetch_attno = lq->orig_attno;	/* until the first chain */
	wrapper = makeNode(ExprState);
	wrapper->flags = EEO_FLAG_IS_QUAL;
	wrapper->evalfunc = local_qual_eval;
	wrapper->evalfunc_private = lq;
	wrapper->parent = scan;
	lq->wrapper = wrapper;
	scan->qual = wrapper;
	src->local_qual = lq;
}

/* Scanned sources that selections read alone get a local chain */
void
EddyLocalChainsBegin(EddyState *es)
{
	/*
	 * A schedule that paces its sources decides tuple by tuple, and state
	 * migration looks for misplaced state at every point of stasis, dropped
	 * tuples' included: those keep the chain in EddyReadSource.
	 */
	bool		paced = es->schedule != EDDY_SCHEDULE_BUILD || es->delayed ||
		es->holding || es->migrating;
	int			i;
	int			j;

	for (i = 0; i < es->nsources; i++)
	{
		EddySource *src = &es->sources[i];

		if (src->method != EDDY_SOURCE_SCAN)
			continue;
		for (j = 0; j < es->nmodules; j++)
		{
			EddyModule *m = es->modules[j];

			if (EddyModuleFiltersSource(m, i))
				src->local_sels = true;
		}
		if (src->local_sels || !paced)
		{
			src->local_chain = palloc(sizeof(int) * es->nmodules);
			src->local_generation = UINT64_MAX;
		}
		if (!paced)
			begin_local_qual(es, i, src);
	}
}
