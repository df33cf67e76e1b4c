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
 * EddyExprMayRaise decides, at plan time, whether a predicate may raise an
 * error for some input, in which case the eddy never runs it before a
 * predicate PostgreSQL would have run first (that one may be its guard).
 * The test is conservative: only node types known to be error-free, and
 * functions and operators marked leakproof (a leakproof function must not
 * raise errors that depend on its arguments), are considered safe.
 * delay() is safe when its usecs argument is a constant of zero or more:
 * then it cannot fail.
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

/* Is funcid our delay(int, int), the C function eddy_delay of this module? */
static bool
eddy_is_delay_function(Oid funcid)
{
	HeapTuple	tuple;
	bool		result = false;

	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
	if (HeapTupleIsValid(tuple))
	{
		Form_pg_proc proc = (Form_pg_proc) GETSTRUCT(tuple);

		if (proc->prolang == ClanguageId && proc->pronargs == 2)
		{
			bool		isnull;
			Datum		src = SysCacheGetAttr(PROCOID, tuple,
											  Anum_pg_proc_prosrc, &isnull);

			if (!isnull && strcmp(TextDatumGetCString(src), "eddy_delay") == 0)
			{
				Datum		bin = SysCacheGetAttr(PROCOID, tuple,
												  Anum_pg_proc_probin, &isnull);

				if (!isnull)
				{
					char	   *path = TextDatumGetCString(bin);
					size_t		len = strlen(path);

					result = (len >= 4 && strcmp(path + len - 4, "eddy") == 0);
				}
			}
		}
		ReleaseSysCache(tuple);
	}
	return result;
}

static bool
eddy_may_raise_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;

	switch (nodeTag(node))
	{
		case T_Var:
		case T_Const:
		case T_Param:
		case T_CaseTestExpr:
			return false;

		case T_BoolExpr:
		case T_NullTest:
		case T_BooleanTest:
		case T_RelabelType:
		case T_CaseExpr:
		case T_CaseWhen:
		case T_CoalesceExpr:
		case T_List:
			break;				/* safe themselves: look at the arguments */

		case T_OpExpr:
		case T_DistinctExpr:
		case T_NullIfExpr:
			{
				OpExpr	   *op = (OpExpr *) node;

				set_opfuncid(op);
				if (!get_func_leakproof(op->opfuncid))
					return true;
			}
			break;

		case T_ScalarArrayOpExpr:
			{
				ScalarArrayOpExpr *op = (ScalarArrayOpExpr *) node;

				set_sa_opfuncid(op);
				if (!get_func_leakproof(op->opfuncid))
					return true;
			}
			break;

		case T_FuncExpr:
			{
				FuncExpr   *func = (FuncExpr *) node;

				if (!get_func_leakproof(func->funcid))
				{
					Node	   *usecs;

					if (list_length(func->args) != 2 ||
						!eddy_is_delay_function(func->funcid))
						return true;
					usecs = lsecond(func->args);
					if (!IsA(usecs, Const) || ((Const *) usecs)->constisnull ||
						DatumGetInt32(((Const *) usecs)->constvalue) < 0)
						return true;
				}
			}
			break;

		default:
			/* anything else (casts through I/O, subplans, ...) may fail */
			return true;
	}
	return expression_tree_walker(node, eddy_may_raise_walker, context);
}

bool
EddyExprMayRaise(Node *expr)
{
	return eddy_may_raise_walker(expr, NULL);
}

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
