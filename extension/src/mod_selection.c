/*-------------------------------------------------------------------------
 *
 * mod_selection.c
 *	  Selection operators: one predicate each, routed by the eddy.
 *
 * A selection evaluates its predicate on the tuple being routed (the
 * source's own slot, see plan.c) with ExecQual semantics: NULL is false.
 * It counts tuples in and out; one evaluation in EDDY_COST_SAMPLE_INTERVAL
 * is timed, the first one always, so that the policy knows its cost (a
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

void
EddySelectionInit(EddyOperator *op, Expr *expr, uint32 prereq,
				  double est_sel, double est_cost, PlanState *parent)
{
	memset(op, 0, sizeof(EddyOperator));
	op->expr = expr;
	op->qual = ExecInitQual(list_make1(expr), parent);
	op->prereq = prereq;
	op->est_sel = Min(Max(est_sel, 0.0), 1.0);
	op->est_cost_ns = Max(est_cost, 0.0) * EDDY_NS_PER_COST_UNIT;
	op->sample_countdown = 1;	/* time the first evaluation */
}

static inline double
monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec * 1e9 + (double) ts.tv_nsec;
}

bool
EddySelectionEvalTimed(EddyOperator *op, ExprContext *econtext)
{
	double		start = monotonic_ns();
	bool		pass = ExecQual(op->qual, econtext);

	op->cost_ns += monotonic_ns() - start;
	op->cost_samples++;
	op->sample_countdown = EDDY_COST_SAMPLE_INTERVAL;
	return pass;
}
