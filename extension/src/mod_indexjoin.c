/*-------------------------------------------------------------------------
 *
 * mod_indexjoin.c
 *	  The index join module (Deshpande 2004, section 2.1.3).
 *
 * The relation at end 1 is not scanned: a tuple routed to the join (it
 * spans end 0's relation and nothing of side 1) probes end 1's index with
 * its keys, under the query's snapshot, and each heap tuple found is a
 * match.  Only side 0 routes to it, so it is one routing target.  The
 * matches are pushed as a frame; each fetch copies the columns end 1's
 * source provides into a transient row.  A lossy index (xs_recheck) has its
 * keys rechecked with the join operators.
 *
 * An index semi or anti join (end 1 is the inner relation of a semi or
 * anti join, semijoin.c) decides at once, in route: it reads the index's
 * matches until one, joined, passes the inner qual (the join's other
 * clauses, ExecQual semantics).  A semi join passes that joined tuple on
 * (nothing above reads end 1's columns); an anti join drops the tuple if
 * there is one, and otherwise passes it on joined with a row of NULLs, as
 * it does a tuple whose key is NULL (it matches nothing).  Either way one
 * tuple in, at most one out, whatever the duplicates in end 1.  Without
 * an inner qual only the existence of a visible match counts, and it is
 * found as an index-only scan finds it: a match on a page the visibility
 * map says is all visible needs no heap fetch (nodeIndexonlyscan.c), and
 * the joined row is one of NULLs, since nothing reads it.
 *
 * Index-only index joins.  Where every column the block needs of end 1's
 * relation is one the index returns (its keys, its selections' columns,
 * what is read above the block, a later join's keys: its source's range)
 * and enable_indexonlyscan is on, the planner marks the join index-only
 * (plan_build.c, after check_index_only in indxpath.c), and the module
 * reads its matches as nodeIndexonlyscan.c does: the scan returns index
 * tuples (xs_want_itup), a match on a page the visibility map says is all
 * visible is taken as it is, and one on another page is fetched from the
 * heap only to learn whether a version of it is visible (Heap Fetches in
 * EXPLAIN ANALYZE, as PostgreSQL's).  Either way its columns come from the
 * index tuple, deformed with the index's descriptor into a virtual slot of
 * the relation's shape (each index column at its heap attribute; the
 * others NULL, and nothing reads them), so that the fetch chain, a recheck
 * and the row (EddyRowFromHeapSlot) read it as they read a heap tuple.  An
 * index column whose type differs from its attribute's (an opclass with a
 * storage type) keeps the module on the heap path; so does a hash index,
 * which returns nothing (the planner does not mark it).  The star
 * query (issue 48): count(*) of a 1M-row fact joined through its foreign
 * key's index to a dimension filtered to 100 of its 10,000 rows (10,000
 * matches, each on its own page) fetched every match from the heap, where
 * PostgreSQL's nested loop read the index alone: 24-25 ms against
 * vanilla's 1.8-2.6 ms (medians of 21 alternating EXPLAIN ANALYZE runs,
 * TIMING OFF, two servers, non-assert builds); index-only, with Heap
 * Fetches: 0 as vanilla's, 1.7-2.8 ms against 1.6-2.5 ms (paired
 * eddy/vanilla medians 1.12x and 1.15x, from 8.7x and 12.0x).
 *
 * Fetch chains.  The selections over end 1's relation alone that the
 * routing sends an inner join's matches to first are evaluated on the heap
 * tuple as it is fetched, before the eddy makes a row or a tuple of it,
 * as PostgreSQL's inner index scan filters it (TPC-H Q7: 478,523 lineitem
 * rows fetched from supplier's keys, 70% of them dropped by the l_shipdate
 * range): exec.c's local chains at fetch time.  The chain is computed from
 * the routing table for the signature of the matches (the probe's, with
 * this join done) and again when the routing changes or the probe's
 * signature does.  A match enters routing there, counted as a routed
 * tuple and as the join's output, and each selection counts and times it
 * as route_current would; one that passes carries the chain's done bits
 * to the main loop (drain_started), which routes it on.  State
 * migration's replay (which counts nothing) fetches as before.  A
 * selection that cannot be rewritten over the heap tuple (a system column,
 * a subplan) leaves the module without a chain.
 *
 * A timed probe (one tuple in EDDY_COST_SAMPLE_INTERVAL, exec.c) is timed
 * through its last fetch, not only its index_rescan: the heap fetches are
 * most of an index join's cost (a page read for every match of a cold
 * relation), and the routing weighs them against the other modules'.
 *
 * For the routing the join and its chain are one filter: the matches the
 * chain drops are counted apart (stats.dropped) and the rank policy scores
 * the join by the matches that survive it (routing.c, ratio_with_prior).
 * Its prior follows: the planner's selectivity times the relation's tuples
 * (every row with the keys is a match; plan_build.c), times, with a chain,
 * the planner's selectivity of each selection the chain may run.  With a
 * prior of the relation's rows after its selections and no credit (before
 * 2026-11-28), the join's observed fan-out (1 on a primary key) and its
 * prior (0.49 for TPC-H Q21's orders behind o_orderstatus = 'F') disagreed,
 * and each time its decayed observations fell below the prior's weight it
 * was tried ahead of a better module; with neither, a chain that drops
 * most matches (Q8's o_orderdate range on orders) went unseen.
 *
 *-------------------------------------------------------------------------
 */
#include "mod_indexjoin.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/itup.h"
#include "access/relscan.h"
#include "access/tableam.h"
#include "access/visibilitymap.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/predicate.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"

typedef struct EddyIndexJoin
{
	EddyModule	module;			/* must be first */
	EddyJoinSpec ends;
	Oid			indexoid;
	Relation	index;
	IndexScanDesc scan;
	ScanKey		skeys;			/* in index column order */
	int		   *skey_of_key;	/* key k's scan key */
	JoinType	jointype;		/* JOIN_INNER, JOIN_SEMI or JOIN_ANTI */
	EddyPredicate inner_qual;	/* semi/anti: the join's other clauses */
	bool		has_inner_qual;
	Expr	   *inner_expr;		/* for EXPLAIN */
	Buffer		vmbuffer;		/* semi/anti without an inner qual, and an
								 * index-only join: the visibility map */
	uint64		heap_fetches;	/* ... matches checked in the heap */

	/* an index-only join ("Index-only index joins" above) */
	bool		index_only;
	TupleTableSlot *ioslot;		/* virtual, of the relation's shape */
	Datum	   *ivalues;		/* an index tuple, deformed */
	bool	   *iisnull;

	/* the fetch chain (an inner join; "Fetch chains" above) */
	EddyPredicate *chain_preds; /* per module: a selection over end 1's
								 * relation alone, over the heap tuple; NULL
								 * if the module has no chain */
	int		   *chain;			/* targets of this epoch's chain ... */
	int			chain_len;
	uint32		chain_spans;	/* ... for matches of this signature */
	uint64		chain_done;
	uint64		chain_generation;	/* the router's generation it is of */
	uint64		chain_dropped;	/* matches it dropped (EXPLAIN ANALYZE) */
} EddyIndexJoin;

static EddyTuple *indexjoin_route(EddyState *es, EddyModule *m, int dir,
								  EddyTuple *t);
static EddyTuple *indexjoin_next(EddyState *es, EddyFrame *f);
static EddyTuple *indexjoin_fetch(EddyState *es, EddyIndexJoin *ij, EddyTuple *t);
static void indexjoin_end(EddyState *es, EddyModule *m);
static bool index_only_possible(EddyIndexJoin *ij, EddySource *src);
static void indexjoin_explain(EddyState *es, EddyModule *m, List *context,
							  bool useprefix, ExplainState *xs);

static const EddyModuleMethods indexjoin_methods = {
	.label = "Index Join",
	.joins = true,
	.route = indexjoin_route,
	.next = indexjoin_next,
	.rescan = NULL,				/* each probe rescans the index */
	.end = indexjoin_end,
	.explain = indexjoin_explain,
};

/* An index join module from its description (private.h) */
EddyModule *
EddyIndexJoinBegin(EddyState *es, List *desc, int index)
{
	CustomScan *cscan = (CustomScan *) es->css.ss.ps.plan;
	EddyIndexJoin *ij = palloc0(sizeof(EddyIndexJoin));
	EddyModule *m = &ij->module;
	EddyJoinSpec *ends = &ij->ends;
	EddySource *inner;
	List	   *cols = list_nth(desc, EddyJoinIndexCols);
	List	   *opnos = list_nth(desc, EddyJoinOperators);
	int			k;

	m->methods = &indexjoin_methods;
	m->index = index;
	m->expr = list_nth(cscan->custom_exprs, intVal(list_nth(desc, EddyJoinCondition)));
	EddyJoinSpecInit(es, ends, desc);
	EddyJoinTargets(m, ends, 1);
	inner = &es->sources[ends->rel[1]];
	Assert(inner->heap != NULL);	/* index-joined, or a hybrid join's */

	ij->indexoid = (Oid) intVal(list_nth(desc, EddyJoinIndexOid));
	ij->jointype = (JoinType) intVal(list_nth(desc, EddyJoinType));
	if (intVal(list_nth(desc, EddyJoinInnerQual)) >= 0)
	{
		ij->inner_expr = list_nth(cscan->custom_exprs,
								  intVal(list_nth(desc, EddyJoinInnerQual)));
		EddyPredicateInit(&ij->inner_qual, ij->inner_expr, &es->css.ss.ps);
		ij->has_inner_qual = true;
	}
	ij->index = index_open(ij->indexoid, AccessShareLock);
	ij->skeys = palloc0(sizeof(ScanKeyData) * Max(ends->nkeys, 1));
	for (k = 0; k < ends->nkeys; k++)
	{
		/* the plan orients operators end 0 (outer) on the left: commute */
		Oid			opno = get_commutator((Oid) intVal(list_nth(opnos, k)));
		int			col = intVal(list_nth(cols, k));
		Oid			opfamily = ij->index->rd_opfamily[col - 1];
		int			strategy;
		Oid			lefttype;
		Oid			righttype;

		if (!OidIsValid(opno))
			elog(ERROR, "eddy: no commutator for an index join operator");
		get_op_opfamily_properties(opno, opfamily, false, &strategy, &lefttype,
								   &righttype);
		ScanKeyEntryInitialize(&ij->skeys[k], 0, col, strategy, righttype,
							   ends->keys.collations[k], get_opcode(opno), (Datum) 0);
	}
	/* btree wants its scan keys in index column order: sort, keep a map */
	ij->skey_of_key = palloc(sizeof(int) * Max(ends->nkeys, 1));
	for (k = 0; k < ends->nkeys; k++)
		ij->skey_of_key[k] = k;
	for (k = 1; k < ends->nkeys; k++)
	{
		int			j;

		for (j = k; j > 0 && ij->skeys[j - 1].sk_attno > ij->skeys[j].sk_attno; j--)
		{
			ScanKeyData tmp = ij->skeys[j];
			int			a;

			ij->skeys[j] = ij->skeys[j - 1];
			ij->skeys[j - 1] = tmp;
			/* keys whose scan key sat at j and j - 1 swap places */
			for (a = 0; a < ends->nkeys; a++)
			{
				if (ij->skey_of_key[a] == j)
					ij->skey_of_key[a] = j - 1;
				else if (ij->skey_of_key[a] == j - 1)
					ij->skey_of_key[a] = j;
			}
		}
	}
	ij->scan = index_beginscan(inner->heap, ij->index,
							   es->css.ss.ps.state->es_snapshot, ends->nkeys, 0);
	if (intVal(list_nth(desc, EddyJoinIndexOnly)) != 0 &&
		index_only_possible(ij, inner))
	{
		TupleDesc	heapdesc = RelationGetDescr(inner->heap);
		int			c;

		ij->index_only = true;
		ij->scan->xs_want_itup = true;
		ij->ioslot = MakeSingleTupleTableSlot(heapdesc, &TTSOpsVirtual);
		/* the columns no index column fills stay NULL */
		for (c = 0; c < heapdesc->natts; c++)
		{
			ij->ioslot->tts_values[c] = (Datum) 0;
			ij->ioslot->tts_isnull[c] = true;
		}
		ij->ivalues = palloc(sizeof(Datum) * RelationGetDescr(ij->index)->natts);
		ij->iisnull = palloc(sizeof(bool) * RelationGetDescr(ij->index)->natts);
	}
	return m;
}

/*
 * Can the index's tuples stand for the heap's (the planner marked the join
 * index-only)?  Each column of end 1's source must be an index column of
 * the attribute's own type: an opclass with a storage type (opckeytype)
 * stores something else.
 */
static bool
index_only_possible(EddyIndexJoin *ij, EddySource *src)
{
	TupleDesc	idesc = RelationGetDescr(ij->index);
	TupleDesc	hdesc = RelationGetDescr(src->heap);
	int			c;

	for (c = 0; c < src->ncols; c++)
	{
		AttrNumber	attno = src->attnos[c];
		int			col;

		for (col = 0; col < ij->index->rd_index->indnatts; col++)
			if (ij->index->rd_index->indkey.values[col] == attno &&
				TupleDescAttr(idesc, col)->atttypid ==
				TupleDescAttr(hdesc, attno - 1)->atttypid)
				break;
		if (col >= ij->index->rd_index->indnatts)
			return false;
	}
	return true;
}

/*
 * The fetch chain's predicates, for an inner index join whose end 1 some
 * selections read alone (exec.c calls this once every module is begun).
 */
void
EddyIndexJoinBeginChain(EddyState *es, EddyModule *m)
{
	EddyIndexJoin *ij = (EddyIndexJoin *) m;
	EddySource *src;
	EddyPredicate *preds = NULL;
	int			x;
	int			j;

	if (m->methods != &indexjoin_methods || ij->jointype != JOIN_INNER)
		return;
	x = ij->ends.rel[1];
	src = &es->sources[x];
	for (j = 0; j < es->nmodules; j++)
	{
		EddyModule *sel = es->modules[j];
		Node	   *expr;

		if (sel->filter == NULL || (sel->target[0].need & ~(1u << x)) != 0)
			continue;
		expr = EddyRewriteForSource((Node *) sel->expr, src, NIL, true);
		if (expr == NULL)
			return;
		if (preds == NULL)
			preds = palloc0(sizeof(EddyPredicate) * es->nmodules);
		preds[j].qual = ExecInitQual(list_make1(expr), &es->css.ss.ps);
	}
	if (preds == NULL)
		return;
	ij->chain_preds = preds;
	ij->chain = palloc(sizeof(int) * es->nmodules);
	ij->chain_generation = UINT64_MAX;

	/*
	 * The routing credits the join with what its chain drops (routing.c,
	 * ratio_with_prior): its prior fan-out is of the matches that pass the
	 * selections the chain may run, each at the planner's selectivity.
	 */
	for (j = 0; j < es->nmodules; j++)
		if (preds[j].qual != NULL)
			m->stats[0].prior_ratio *= es->modules[j]->stats[0].prior_ratio;
}

/*
 * A match on the heap slot enters routing here, where the fetch chain
 * evaluates it (above).  False if a selection dropped it; else *done holds
 * the selections it passed and the main loop routes it on.
 */
static bool
fetch_chain(EddyState *es, EddyIndexJoin *ij, EddyTuple *t,
			TupleTableSlot *heapslot, uint64 *done)
{
	EddyRouter *router = &es->router;
	ExprContext *econtext = es->css.ss.ps.ps_ExprContext;
	uint32		spans = t->spans | (1u << ij->ends.rel[1]);
	uint64		d = t->done | (UINT64CONST(1) << ij->module.index);
	bool		timed;
	int			k;

	EddyRouterTupleIn(router);	/* as start_route counts it */
	timed = (--es->until_sample <= 0);
	if (timed)
		es->until_sample = EDDY_COST_SAMPLE_INTERVAL;
	if (ij->chain_generation != router->generation ||
		ij->chain_spans != spans || ij->chain_done != d)
	{
		int			target;

		ij->chain_len = 0;
		while ((target = EddyRoute(router, spans, d)) != EDDY_ROUTE_OUTPUT &&
			   ij->chain_preds[es->targets[target].module].qual != NULL)
		{
			Assert(ij->chain_len < es->nmodules);
			ij->chain[ij->chain_len++] = target;
			d |= UINT64CONST(1) << es->targets[target].module;
		}
		ij->chain_spans = spans;
		ij->chain_done = t->done | (UINT64CONST(1) << ij->module.index);
		ij->chain_generation = router->generation;
	}
	*done = 0;
	if (ij->chain_len > 0)
	{
		econtext->ecxt_scantuple = heapslot;
		for (k = 0; k < ij->chain_len; k++)
		{
			EddyRouteTarget *tg = &es->targets[ij->chain[k]];

			if (!EddyLocalFilterPerTuple(tg, &ij->chain_preds[tg->module],
										 econtext, timed))
			{
				InstrCountFiltered1(&es->css, 1);
				ij->module.stats[0].out++;	/* the join made it */
				ij->module.stats[0].dropped++;	/* ... and the chain dropped it */
				ij->chain_dropped++;
				return false;
			}
			*done |= UINT64CONST(1) << tg->module;
		}
	}
	es->drain_started = true;
	es->current_timed = timed;
	return true;
}

/* t joined with end 1's row, which the module has done */
static EddyTuple *
joined(EddyState *es, EddyModule *m, EddyTuple *t, int rel, EddyRow *row)
{
	EddyTuple  *r = EddyTupleAlloc(es, &es->transient);

	r->spans = t->spans | (1u << rel);
	r->done = t->done | (UINT64CONST(1) << m->index);
	memcpy(r->rows, t->rows, sizeof(EddyRow *) * es->nsources);
	r->rows[rel] = row;
	return r;
}

/*
 * A lossy index's match (xs_recheck): do its keys equal the probe's under
 * the join operators?  The heap slot is deformed up to src->max_attno.
 */
static bool
keys_match(EddyIndexJoin *ij, EddySource *src, TupleTableSlot *heapslot)
{
	EddyJoinSpec *ends = &ij->ends;
	int			k;

	for (k = 0; k < ends->nkeys; k++)
	{
		int			col = ends->keycol[1][k];

		if (col < 0 || heapslot->tts_isnull[src->attnos[col] - 1] ||
			!DatumGetBool(FunctionCall2Coll(&ends->keys.eq[k],
											ends->keys.collations[k],
											ij->skeys[ij->skey_of_key[k]].sk_argument,
											heapslot->tts_values[src->attnos[col] - 1])))
			return false;
	}
	return true;
}

/*
 * Is there a visible match of the index scan under way (an inner qual-less
 * semi or anti join)?  As an index-only scan: no heap fetch for a match on
 * an all-visible page.
 */
static bool
semijoin_exists(EddyState *es, EddyIndexJoin *ij)
{
	EddySource *src = &es->sources[ij->ends.rel[1]];
	TupleTableSlot *heapslot = src->heapslot;
	ItemPointer tid;

	while ((tid = index_getnext_tid(ij->scan, ForwardScanDirection)) != NULL)
	{
		CHECK_FOR_INTERRUPTS();
		if (!ij->scan->xs_recheck &&
			VM_ALL_VISIBLE(ij->scan->heapRelation, ItemPointerGetBlockNumber(tid),
						   &ij->vmbuffer))
		{
			PredicateLockPage(ij->scan->heapRelation, ItemPointerGetBlockNumber(tid),
							  es->css.ss.ps.state->es_snapshot);
			return true;
		}
		ij->heap_fetches++;
		if (!index_fetch_heap(ij->scan, heapslot))
			continue;			/* no visible version */
		if (ij->scan->xs_recheck)
		{
			bool		match;

			slot_getsomeattrs(heapslot, src->max_attno);
			match = keys_match(ij, src, heapslot);
			ExecClearTuple(heapslot);
			if (!match)
				continue;
		}
		ExecClearTuple(heapslot);
		return true;
	}
	return false;
}

/* t joined with a row of NULLs for end 1 */
static EddyTuple *
joined_nulls(EddyState *es, EddyIndexJoin *ij, EddyTuple *t)
{
	EddySource *src = &es->sources[ij->ends.rel[1]];
	Datum	   *values = es->fetch_values;
	bool	   *isnull = es->fetch_isnull;
	int			c;

	for (c = 0; c < src->ncols; c++)
	{
		values[c] = (Datum) 0;
		isnull[c] = true;
	}
	return joined(es, &ij->module, t, ij->ends.rel[1],
				  EddyRowMake(&es->transient, src, values, isnull, true));
}

/* Semi or anti join: t joined with its first match, with NULLs, or NULL */
static EddyTuple *
semijoin_decide(EddyState *es, EddyIndexJoin *ij, EddyTuple *t, bool keyed)
{
	EddyModule *m = &ij->module;
	EddyTuple  *r = NULL;

	if (!ij->has_inner_qual)
	{
		bool		found = keyed && semijoin_exists(es, ij);

		if (found != (ij->jointype == JOIN_SEMI))
			return NULL;
		m->stats[0].out++;
		return joined_nulls(es, ij, t);
	}
	while (keyed && (r = indexjoin_fetch(es, ij, t)) != NULL)
	{
		if (EddyPredicateOnTuple(es, &ij->inner_qual, r))
			break;
	}
	if (ij->jointype == JOIN_SEMI)
	{
		if (r == NULL)
			return NULL;
		r->done |= UINT64CONST(1) << m->index;
	}
	else
	{
		if (r != NULL)
			return NULL;
		r = joined_nulls(es, ij, t);
	}
	m->stats[0].out++;
	return r;
}

/*
 * Start an index scan with t's keys; its matches come from the frame (an
 * inner join), or decide at once (semi, anti).
 */
static EddyTuple *
indexjoin_route(EddyState *es, EddyModule *m, int dir, EddyTuple *t)
{
	EddyIndexJoin *ij = (EddyIndexJoin *) m;
	EddyJoinSpec *ends = &ij->ends;
	Datum	   *keys = EddyArenaAlloc(&es->transient, sizeof(Datum) * Max(ends->nkeys, 1));
	int			k;

	Assert(dir == 0);
	m->stats[0].pairs += Max(ends->est_rows[1], 1.0);	/* pairs examined */
	if (!EddyJoinKeys(es, ends, 0, t, keys, &es->transient))
	{
		/* a NULL key matches nothing */
		return ij->jointype == JOIN_INNER ? NULL : semijoin_decide(es, ij, t, false);
	}
	for (k = 0; k < ends->nkeys; k++)
		ij->skeys[ij->skey_of_key[k]].sk_argument = keys[k];
	EddyIndexLookupDelay();
	index_rescan(ij->scan, ij->skeys, ends->nkeys, NULL, 0);
	if (ij->jointype != JOIN_INNER)
		return semijoin_decide(es, ij, t, true);
	EddyPushFrame(es, m, 0, t);
	return NULL;
}

/* The next heap tuple the frame's index scan finds, joined, or NULL */
static EddyTuple *
indexjoin_next(EddyState *es, EddyFrame *f)
{
	EddyIndexJoin *ij = (EddyIndexJoin *) f->module;
	EddyTuple  *r;

	if (unlikely(f->timed))
	{
		/* the probe's cost is its index scan's: the fetches count with it */
		double		start = eddy_now_ns();

		r = indexjoin_fetch(es, ij, f->probe);
		f->module->stats[0].cost_ns += eddy_now_ns() - start;
	}
	else
		r = indexjoin_fetch(es, ij, f->probe);
	if (r != NULL)
		f->module->stats[0].out++;
	return r;
}

/*
 * The next visible match of an index-only join's scan, in ij->ioslot, or
 * NULL: IndexOnlyNext (nodeIndexonlyscan.c).
 */
static TupleTableSlot *
index_only_next(EddyState *es, EddyIndexJoin *ij, EddySource *src)
{
	IndexScanDesc scan = ij->scan;
	TupleTableSlot *slot = ij->ioslot;
	ItemPointer tid;

	while ((tid = index_getnext_tid(scan, ForwardScanDirection)) != NULL)
	{
		bool		from_heap = false;
		int			col;

		CHECK_FOR_INTERRUPTS();
		if (!VM_ALL_VISIBLE(scan->heapRelation, ItemPointerGetBlockNumber(tid),
							&ij->vmbuffer))
		{
			/* not known visible to all: is a version of it visible to us? */
			ij->heap_fetches++;
			if (!index_fetch_heap(scan, src->heapslot))
				continue;
			ExecClearTuple(src->heapslot);
			if (scan->xs_heap_continue)
				elog(ERROR, "non-MVCC snapshots are not supported in index-only scans");
			from_heap = true;
		}
		/* its columns from the index tuple, at their heap attributes */
		if (scan->xs_hitup != NULL)
			heap_deform_tuple(scan->xs_hitup, scan->xs_hitupdesc, ij->ivalues,
							  ij->iisnull);
		else if (scan->xs_itup != NULL)
			index_deform_tuple(scan->xs_itup, scan->xs_itupdesc, ij->ivalues,
							   ij->iisnull);
		else
			elog(ERROR, "no data returned for index-only scan");
		ExecClearTuple(slot);
		for (col = 0; col < ij->index->rd_index->indnatts; col++)
		{
			AttrNumber	attno = ij->index->rd_index->indkey.values[col];

			if (attno > 0)
			{
				slot->tts_values[attno - 1] = ij->ivalues[col];
				slot->tts_isnull[attno - 1] = ij->iisnull[col];
			}
		}
		ExecStoreVirtualTuple(slot);
		if (!from_heap)
			PredicateLockPage(scan->heapRelation, ItemPointerGetBlockNumber(tid),
							  es->css.ss.ps.state->es_snapshot);
		return slot;
	}
	return NULL;
}

/* The next match of the module's index scan, in a slot of the relation's shape */
static inline TupleTableSlot *
next_match(EddyState *es, EddyIndexJoin *ij, EddySource *src)
{
	if (ij->index_only)
		return index_only_next(es, ij, src);
	if (!index_getnext_slot(ij->scan, ForwardScanDirection, src->heapslot))
		return NULL;
	slot_getsomeattrs(src->heapslot, src->max_attno);
	return src->heapslot;
}

/* The next heap tuple the module's index scan finds, joined with t, or NULL */
static EddyTuple *
indexjoin_fetch(EddyState *es, EddyIndexJoin *ij, EddyTuple *t)
{
	EddyJoinSpec *ends = &ij->ends;
	EddySource *src = &es->sources[ends->rel[1]];
	TupleTableSlot *heapslot;

	while ((heapslot = next_match(es, ij, src)) != NULL)
	{
		EddyTuple  *r;
		uint64		chain_done = 0;

		CHECK_FOR_INTERRUPTS();
		if (ij->scan->xs_recheck && !keys_match(ij, src, heapslot))
			continue;
		if (ij->chain_preds != NULL && !es->replaying &&
			!fetch_chain(es, ij, t, heapslot, &chain_done))
			continue;
		r = joined(es, &ij->module, t, ends->rel[1],
				   EddyRowFromHeapSlot(es, src, heapslot));
		/* semi/anti: the module is done once it decides (semijoin_decide) */
		if (ij->jointype != JOIN_INNER)
			r->done = t->done;
		r->done |= chain_done;
		return r;
	}
	return NULL;
}

static void
indexjoin_end(EddyState *es, EddyModule *m)
{
	EddyIndexJoin *ij = (EddyIndexJoin *) m;

	if (BufferIsValid(ij->vmbuffer))
	{
		ReleaseBuffer(ij->vmbuffer);
		ij->vmbuffer = InvalidBuffer;
	}
	index_endscan(ij->scan);
	index_close(ij->index, AccessShareLock);
	if (ij->ioslot != NULL)
		ExecDropSingleTupleTableSlot(ij->ioslot);
}

static void
indexjoin_explain(EddyState *es, EddyModule *m, List *context, bool useprefix,
				  ExplainState *xs)
{
	EddyIndexJoin *ij = (EddyIndexJoin *) m;
	char	   *expr = deparse_expression((Node *) m->expr, context, useprefix, false);
	char	   *index_name = get_rel_name(ij->indexoid);
	char	   *index_rel = get_rel_name(es->sources[ij->ends.rel[1]].heapoid);

	const char *label = ij->jointype == JOIN_SEMI ? "Index Semi Join" :
		ij->jointype == JOIN_ANTI ? "Index Anti Join" : "Index Join";
	/* text names an index-only join as PostgreSQL its Index Only Scan */
	const char *text_label = !ij->index_only ? label :
		ij->jointype == JOIN_SEMI ? "Index Only Semi Join" :
		ij->jointype == JOIN_ANTI ? "Index Only Anti Join" : "Index Only Join";
	char	   *inner = ij->inner_expr == NULL ? NULL :
		deparse_expression((Node *) ij->inner_expr, context, useprefix, false);

	if (xs->format == EXPLAIN_FORMAT_TEXT)
	{
		if (inner != NULL)
			EddyExplainLine(xs, "%s %d: %s using %s on %s, where %s", text_label,
							m->index + 1, expr, index_name, index_rel, inner);
		else
			EddyExplainLine(xs, "%s %d: %s using %s on %s", text_label, m->index + 1,
							expr, index_name, index_rel);
	}
	else
	{
		ExplainPropertyText("Operator Type", label, xs);
		ExplainPropertyInteger("Operator Number", NULL, m->index + 1, xs);
		ExplainPropertyText("Join Condition", expr, xs);
		ExplainPropertyText("Index Name", index_name, xs);
		ExplainPropertyText("Relation Name", index_rel, xs);
		if (inner != NULL)
			ExplainPropertyText("Join Filter", inner, xs);
		ExplainPropertyBool("Index Only", ij->index_only, xs);
	}
	EddyExplainCounters(es, m, -1, xs);
	if (!xs->analyze)
		return;
	/* under the module's counters in text, as they are */
	if (ij->index_only || (ij->jointype != JOIN_INNER && !ij->has_inner_qual))
	{
		if (xs->format == EXPLAIN_FORMAT_TEXT)
			EddyExplainLine(xs, "  Heap Fetches: " UINT64_FORMAT, ij->heap_fetches);
		else
			ExplainPropertyUInteger("Heap Fetches", NULL, ij->heap_fetches, xs);
	}
	if (ij->chain_dropped > 0)
	{
		if (xs->format == EXPLAIN_FORMAT_TEXT)
			EddyExplainLine(xs, "  Dropped at Fetch: " UINT64_FORMAT, ij->chain_dropped);
		else
			ExplainPropertyUInteger("Dropped at Fetch", NULL, ij->chain_dropped, xs);
	}
}

/*
 * Index probes for other modules (mod_indexjoin.h): a hybrid join
 * (mod_hybrid.c) begins an index join module of its own, outside the
 * eddy's modules, and probes through it.  Begin a probe of the index with
 * the keys of end 0 (one per key, none NULL).
 */
void
EddyIndexJoinProbeBegin(EddyState *es, EddyModule *m, Datum *keys)
{
	EddyIndexJoin *ij = (EddyIndexJoin *) m;
	int			k;

	Assert(m->methods == &indexjoin_methods);
	for (k = 0; k < ij->ends.nkeys; k++)
		ij->skeys[ij->skey_of_key[k]].sk_argument = keys[k];
	EddyIndexLookupDelay();
	index_rescan(ij->scan, ij->skeys, ij->ends.nkeys, NULL, 0);
}

/*
 * The next visible heap tuple of the probe, in end 1's source's heap slot
 * deformed up to its max_attno (a lossy index's keys rechecked), or NULL.
 * The slot holds it until the next call.
 */
TupleTableSlot *
EddyIndexJoinProbeNext(EddyState *es, EddyModule *m)
{
	EddyIndexJoin *ij = (EddyIndexJoin *) m;
	EddySource *src = &es->sources[ij->ends.rel[1]];
	TupleTableSlot *heapslot = src->heapslot;

	while (index_getnext_slot(ij->scan, ForwardScanDirection, heapslot))
	{
		CHECK_FOR_INTERRUPTS();
		slot_getsomeattrs(heapslot, src->max_attno);
		if (ij->scan->xs_recheck && !keys_match(ij, src, heapslot))
			continue;
		return heapslot;
	}
	return NULL;
}
