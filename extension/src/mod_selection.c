/*-------------------------------------------------------------------------
 *
 * mod_selection.c
 *	  Selection operators: one predicate each, routed by the eddy.
 *
 * A selection evaluates its predicate on the tuple being routed (the
 * source's own slot, see plan.c) with ExecQual semantics: NULL is false.
 * It counts tuples in and dropped; the eddy times its evaluations for one
 * tuple in EDDY_COST_SAMPLE_INTERVAL, the first one always, so that the
 * policy knows each operator's cost (a
 * single-threaded eddy has no back-pressure to tell it which operators are
 * slow).  Timing every call would cost more than the cheap predicates
 * themselves.
 *
 *-------------------------------------------------------------------------
 */
#include "eddy.h"

#include <time.h>

#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "nodes/nodeFuncs.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

/* Planner cost units to nanoseconds, for the policy's prior (about 4 us) */
#define EDDY_NS_PER_COST_UNIT	4000.0

/*
 * Set up the fast path if expr is "column op constant" (either side) with
 * a strict, non-set-returning operator over a column of the scan tuple
 * (INDEX_VAR after setrefs), and the constant not NULL.  Anything else is
 * evaluated by the expression interpreter.
 */
static void
eddy_selection_fast_path(EddyOperator *op, Expr *expr)
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
	if (var->varno != INDEX_VAR || var->varattno <= 0 || con->constisnull)
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

	op->fast_fcinfo = fcinfo;
	op->fast_attno = var->varattno - 1;
	op->fast_argno = argno;
}

static bool
eddy_max_attno_walker(Node *node, AttrNumber *max)
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
	return expression_tree_walker(node, eddy_max_attno_walker, max);
}

/* Highest column of the scan tuple the operator reads */
AttrNumber
EddySelectionMaxAttno(EddyOperator *op)
{
	AttrNumber	max = 0;

	eddy_max_attno_walker((Node *) op->expr, &max);
	return max;
}

void
EddySelectionInit(EddyOperator *op, Expr *expr, uint32 prereq,
				  double est_sel, double est_cost, PlanState *parent)
{
	memset(op, 0, sizeof(EddyOperator));
	op->expr = expr;
	op->qual = ExecInitQual(list_make1(expr), parent);
	eddy_selection_fast_path(op, expr);
	op->prereq = prereq;
	op->est_sel = Min(Max(est_sel, 0.0), 1.0);
	op->est_cost_ns = Max(est_cost, 0.0) * EDDY_NS_PER_COST_UNIT;
}

bool
EddySelectionEvalTimed(EddyOperator *op, ExprContext *econtext)
{
	double		start = eddy_now_ns();
	bool		pass = EddySelectionEval(op, econtext);

	op->cost_ns += eddy_now_ns() - start;
	op->cost_samples++;
	return pass;
}
