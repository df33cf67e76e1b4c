/*-------------------------------------------------------------------------
 *
 * mod_selection.c
 *	  Selection modules: one predicate each, routed by the eddy.
 *
 * A selection evaluates its predicate on the tuple being routed with
 * ExecQual semantics (NULL is false): on the wide slot, filled from the
 * tuple's rows, or, in a one-source eddy of filters only, on the source's
 * own slot, which the eddy evaluates inline when it walks its chain
 * (local.c): a selection is a filter.  It is eligible once the tuple spans
 * the sources it reads and its prerequisites are done (a predicate that
 * may raise waits for the ones PostgreSQL ran before it, plan.c).  The
 * eddy times one routed tuple in EDDY_COST_SAMPLE_INTERVAL, the first one
 * always, so that the policy knows each module's cost (a single-threaded
 * eddy has no back-pressure to tell it which operators are slow); timing
 * every call would cost more than cheap predicates themselves.
 *
 * Predicates are shared by every module and the loop: EddyPredicateInit
 * (and its fast path), and EddyRewriteForSource, which rewrites one over
 * a source's own tuple for the local chains (local.c) and the index
 * joins' fetch chains (mod_indexjoin.c).
 *
 *-------------------------------------------------------------------------
 */
#include "module.h"

#include "nodes/nodeFuncs.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"

/*
 * Set up the fast path if expr is "column op constant" (either side) with
 * a strict, non-set-returning operator over a column of the scan tuple
 * (INDEX_VAR after setrefs; any Var where the expression is over a scan's
 * own tuple, scan_vars), and the constant not NULL.  Anything else is
 * evaluated by the expression interpreter.
 */
static void
predicate_fast_path(EddyPredicate *pred, Expr *expr, bool scan_vars)
{
	OpExpr	   *opexpr;
	Node	   *left;
	Node	   *right;
	Var		   *var;
	Const	   *con;
	int			argno;
	FmgrInfo   *finfo;
	FunctionCallInfo fcinfo;

	if (!IsA(expr, OpExpr))
		return;
	opexpr = (OpExpr *) expr;
	if (list_length(opexpr->args) != 2 || opexpr->opretset)
		return;
	left = linitial(opexpr->args);
	right = lsecond(opexpr->args);
	if (IsA(left, Var) && IsA(right, Const))
	{
		var = (Var *) left;
		con = (Const *) right;
		argno = 0;
	}
	else if (IsA(left, Const) && IsA(right, Var))
	{
		var = (Var *) right;
		con = (Const *) left;
		argno = 1;
	}
	else
		return;
	if ((!scan_vars && var->varno != INDEX_VAR) || var->varlevelsup != 0 ||
		var->varattno <= 0 || con->constisnull)
		return;
	set_opfuncid(opexpr);
	if (!func_strict(opexpr->opfuncid))
		return;

	finfo = palloc0(sizeof(FmgrInfo));
	fmgr_info(opexpr->opfuncid, finfo);
	fmgr_info_set_expr((Node *) expr, finfo);
	fcinfo = palloc0(SizeForFunctionCallInfo(2));
	InitFunctionCallInfoData(*fcinfo, finfo, 2, opexpr->inputcollid, NULL, NULL);
	fcinfo->args[1 - argno].value = con->constvalue;
	fcinfo->args[1 - argno].isnull = false;
	fcinfo->args[argno].isnull = false;

	pred->fast_fcinfo = fcinfo;
	pred->fast_attno = var->varattno - 1;
	pred->fast_argno = argno;
}

void
EddyPredicateInit(EddyPredicate *pred, Expr *expr, PlanState *parent)
{
	memset(pred, 0, sizeof(EddyPredicate));
	pred->qual = ExecInitQual(list_make1(expr), parent);
	predicate_fast_path(pred, expr, false);
}

/*
 * The same over a scan's own tuple (a local chain in the scan's qual,
 * exec.c), whose Vars are the scan relation's: the caller deforms the
 * tuple up to the columns read before evaluating it.
 */
void
EddyPredicateInitScan(EddyPredicate *pred, Expr *expr, PlanState *parent)
{
	memset(pred, 0, sizeof(EddyPredicate));
	pred->qual = ExecInitQual(list_make1(expr), parent);
	predicate_fast_path(pred, expr, true);
}

static bool
max_attno_walker(Node *node, AttrNumber *max)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) node;

		if (var->varno == INDEX_VAR && var->varattno > *max)
			*max = var->varattno;
		return false;
	}
	return expression_tree_walker(node, max_attno_walker, max);
}

/* Highest column of the scan tuple the expression reads */
AttrNumber
EddyPredicateMaxAttno(Expr *expr)
{
	AttrNumber	max = 0;

	max_attno_walker((Node *) expr, &max);
	return max;
}

/* ----------------------------------------------------------------
 *		The module
 * ----------------------------------------------------------------
 */

typedef struct EddySelection
{
	EddyModule	module;			/* must be first */
	EddyPredicate pred;
	uint64		prereq;			/* modules that must have passed first */
} EddySelection;

static EddyTuple *selection_route(EddyState *es, EddyModule *m, int dir,
								  EddyTuple *t);
static void selection_explain(EddyState *es, EddyModule *m, List *context,
							  bool useprefix, ExplainState *xs);

static const EddyModuleMethods selection_methods = {
	.label = "Selection",
	.joins = false,				/* passes or drops the tuple it is given */
	.route = selection_route,
	.next = NULL,				/* never pushes a frame */
	.rescan = NULL,				/* keeps no state */
	.end = NULL,
	.explain = selection_explain,
};

/* A selection module from its description (private.h) */
EddyModule *
EddySelectionBegin(EddyState *es, List *desc, int index)
{
	CustomScan *cscan = (CustomScan *) es->css.ss.ps.plan;
	EddySelection *sel = palloc0(sizeof(EddySelection));
	EddyModule *m = &sel->module;
	ListCell   *lc;

	Assert(list_length(desc) == EddySelNumItems);
	m->methods = &selection_methods;
	m->index = index;
	m->expr = list_nth(cscan->custom_exprs, intVal(list_nth(desc, EddySelExpr)));
	EddyPredicateInit(&sel->pred, m->expr, &es->css.ss.ps);
	m->filter = &sel->pred;
	foreach(lc, (List *) list_nth(desc, EddySelPrereqs))
		sel->prereq |= UINT64CONST(1) << intVal(lfirst(lc));

	m->ndirs = 1;
	m->target[0].need = (uint32) intVal(list_nth(desc, EddySelSources));
	m->target[0].allow = ~0u;
	m->target[0].prereq = sel->prereq;
	m->stats[0].prior_ratio =
		Min(Max(floatVal(list_nth(desc, EddySelEstSelectivity)), 0.0), 1.0);
	m->stats[0].prior_cost_ns =
		Max(floatVal(list_nth(desc, EddySelEstCost)), 0.0) * EDDY_NS_PER_COST_UNIT;
	return m;
}

/*
 * Evaluate the predicate on the tuple's rows: it passes (done) or is
 * dropped.
 */
static EddyTuple *
selection_route(EddyState *es, EddyModule *m, int dir, EddyTuple *t)
{
	EddySelection *sel = (EddySelection *) m;

	if (!EddyPredicateOnTuple(es, &sel->pred, t))
	{
		InstrCountFiltered1(&es->css, 1);
		return NULL;
	}
	m->stats[0].out++;
	t->done |= UINT64CONST(1) << m->index;
	return t;
}

static void
selection_explain(EddyState *es, EddyModule *m, List *context, bool useprefix,
				  ExplainState *xs)
{
	EddySelection *sel = (EddySelection *) m;
	char	   *expr = deparse_expression((Node *) m->expr, context, useprefix, false);
	StringInfoData after;
	int			j;

	initStringInfo(&after);
	for (j = 0; j < es->nmodules; j++)
		if (sel->prereq & (UINT64CONST(1) << j))
			appendStringInfo(&after, "%s%d", after.len > 0 ? ", " : "", j + 1);

	if (xs->format == EXPLAIN_FORMAT_TEXT)
	{
		if (after.len > 0)
			EddyExplainLine(xs, "Selection %d: %s (after %s)", m->index + 1, expr,
							after.data);
		else
			EddyExplainLine(xs, "Selection %d: %s", m->index + 1, expr);
	}
	else
	{
		ExplainPropertyText("Operator Type", "Selection", xs);
		ExplainPropertyInteger("Operator Number", NULL, m->index + 1, xs);
		ExplainPropertyText("Predicate", expr, xs);
		if (after.len > 0)
			ExplainPropertyText("After", after.data, xs);
	}
	EddyExplainCounters(es, m, -1, xs);
}

/*
 * Rewrite a predicate over the wide tuple into one over a source's own
 * tuple: its scan's (tlist: the scan's target list, whose Vars its columns
 * are) or its heap tuple's (heap: an index-joined source's columns are heap
 * attributes, src->attnos).  NULL where it cannot be: a column outside
 * the source's range, or computed by the scan (it would be computed twice),
 * or a system column of a heap tuple, or a subplan (its state belongs to
 * the eddy).
 */
typedef struct SourceRewrite
{
	EddySource *src;
	List	   *tlist;
	bool		heap;
	bool		ok;
} SourceRewrite;

static Node *
source_rewrite_mutator(Node *node, SourceRewrite *cxt)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var) && ((Var *) node)->varno == INDEX_VAR)
	{
		int			c = ((Var *) node)->varattno - 1 - cxt->src->first_col;
		TargetEntry *tle;
		Var		   *var;

		if (cxt->heap)
		{
			if (c < 0 || c >= cxt->src->ncols || cxt->src->attnos[c] <= 0)
			{
				cxt->ok = false;
				return node;
			}
			var = copyObject((Var *) node);
			var->varno = 1;		/* any plain varno reads the scan tuple */
			var->varattno = cxt->src->attnos[c];
			return (Node *) var;
		}
		if (c < 0 || c >= list_length(cxt->tlist))
		{
			cxt->ok = false;
			return node;
		}
		tle = list_nth_node(TargetEntry, cxt->tlist, c);
		if (!IsA(tle->expr, Var))
		{
			cxt->ok = false;
			return node;
		}
		return (Node *) copyObject(tle->expr);
	}
	if (IsA(node, SubPlan) || IsA(node, AlternativeSubPlan))
	{
		cxt->ok = false;
		return node;
	}
	return expression_tree_mutator(node, source_rewrite_mutator, (void *) cxt);
}

Node *
EddyRewriteForSource(Node *expr, EddySource *src, List *tlist, bool heap)
{
	SourceRewrite cxt;
	Node	   *result;

	cxt.src = src;
	cxt.tlist = tlist;
	cxt.heap = heap;
	cxt.ok = true;
	result = source_rewrite_mutator(expr, &cxt);
	return cxt.ok ? result : NULL;
}
