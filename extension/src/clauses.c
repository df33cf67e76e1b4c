/*-------------------------------------------------------------------------
 *
 * clauses.c
 *	  Clause helpers shared by selection eddies (plan.c), join eddies
 *	  (plan_join.c and the files it drives) and the static symmetric hash join (shj.c).
 *
 * An eddy may reorder predicates only where PostgreSQL's own plan leaves
 * it free to, so every planner-side decision about a clause is made here,
 * once, the same way for every kind of node:
 *
 *	 - the user's predicates are the clauses of the highest security level
 *	   among a relation's restrictions (EddyUserSecurityLevel): row-level
 *	   security quals and the quals of security-barrier views are below them
 *	   and must run first;
 *	 - the order in which PostgreSQL evaluates a list of quals is that of
 *	   createplan.c's order_qual_clauses (static there), reproduced exactly
 *	   by EddyOrderQualClauses: by security level, a leakproof clause
 *	   cheaper than 10 x cpu_operator_cost counting as level 0, then by
 *	   cost, stably;
 *	 - a clause is a selection candidate (EddyClauseIsCandidate) when it is
 *	   a user predicate, not a pseudoconstant, free of PlaceHolderVars and
 *	   at least eddy.selection_min_cost per tuple;
 *	 - over a scan plan, the eddy routes the longest suffix of PostgreSQL's
 *	   order made of candidates the scan still evaluates as a filter
 *	   (EddyRouteScanQuals), and takes them out of the scan's Filter, so
 *	   the scan keeps running first what PostgreSQL runs first;
 *	 - a predicate that may raise an error for some input (EddyExprMayRaise)
 *	   must not run before the predicates PostgreSQL evaluated ahead of it,
 *	   since one of them may guard it (x <> 0 AND 10 / x > 1).  The test is
 *	   conservative: only node types known to be error-free, and functions
 *	   and operators marked leakproof (a leakproof function must not raise
 *	   errors that depend on its arguments), are considered safe.  delay()
 *	   is safe when its usecs argument is a constant of zero or more: then
 *	   it cannot fail.
 *
 *-------------------------------------------------------------------------
 */
#include "eddy.h"

#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "clauses.h"

/*
 * Highest security level among the relation's (non-pseudoconstant)
 * restriction clauses: the level of the user's own predicates.
 */
int
EddyUserSecurityLevel(List *clauses)
{
	ListCell   *lc;
	Index		level = 0;

	foreach(lc, clauses)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);

		if (!rinfo->pseudoconstant && rinfo->security_level > level)
			level = rinfo->security_level;
	}
	return (int) level;
}

/*
 * The clauses in the order PostgreSQL evaluates them (createplan.c's
 * order_qual_clauses, which is static): by security level, a leakproof
 * clause cheaper than 10 x cpu_operator_cost counting as level 0, then by
 * cost; stable.  RestrictInfos and bare clauses alike (a bare clause is at
 * level 0), as there.  Returns a new list.
 */
List *
EddyOrderQualClauses(PlannerInfo *root, List *clauses)
{
	typedef struct
	{
		Node	   *clause;
		Cost		cost;
		Index		security_level;
	} QualItem;
	int			n = list_length(clauses);
	QualItem   *items;
	List	   *result = NIL;
	ListCell   *lc;
	int			i;

	if (n <= 1)
		return list_copy(clauses);
	items = palloc(n * sizeof(QualItem));
	i = 0;
	foreach(lc, clauses)
	{
		Node	   *clause = lfirst(lc);
		QualCost	qcost;

		cost_qual_eval_node(&qcost, clause, root);
		items[i].clause = clause;
		items[i].cost = qcost.per_tuple;
		if (IsA(clause, RestrictInfo))
		{
			RestrictInfo *rinfo = (RestrictInfo *) clause;

			/*
			 * A leakproof clause need not wait for its nominal level; when it
			 * is also cheap, PostgreSQL runs it at level 0, ahead of the
			 * more expensive quals of lower levels.
			 */
			if (rinfo->leakproof && items[i].cost < 10 * cpu_operator_cost)
				items[i].security_level = 0;
			else
				items[i].security_level = rinfo->security_level;
		}
		else
			items[i].security_level = 0;
		i++;
	}
	for (i = 1; i < n; i++)
	{
		QualItem	newitem = items[i];
		int			j;

		for (j = i; j > 0; j--)
		{
			QualItem   *olditem = &items[j - 1];

			if (newitem.security_level > olditem->security_level ||
				(newitem.security_level == olditem->security_level &&
				 newitem.cost >= olditem->cost))
				break;
			items[j] = *olditem;
		}
		items[j] = newitem;
	}
	for (i = 0; i < n; i++)
		result = lappend(result, items[i].clause);
	return result;
}

/*
 * May this restriction clause become a selection operator?  It must be a
 * user predicate (highest security level), not a pseudoconstant (those
 * become a gating Result), free of PlaceHolderVars, and at least
 * eddy.selection_min_cost per tuple.
 */
bool
EddyClauseIsCandidate(PlannerInfo *root, RestrictInfo *rinfo, int user_level)
{
	QualCost	cost;
	List	   *vars;
	ListCell   *lc;

	if (rinfo->pseudoconstant)
		return false;
	if ((int) rinfo->security_level != user_level)
		return false;
	vars = pull_var_clause((Node *) rinfo->clause, PVC_INCLUDE_PLACEHOLDERS);
	foreach(lc, vars)
	{
		if (!IsA(lfirst(lc), Var))
			return false;		/* a PlaceHolderVar: leave it to the scan */
	}
	cost_qual_eval_node(&cost, (Node *) rinfo, root);
	return cost.per_tuple + cost.startup >= eddy_selection_min_cost;
}

/* The scan plan under a gating Result, if any: the node with the Filter. */
Plan *
EddySourceScan(Plan *plan)
{
	if (IsA(plan, Result) && plan->lefttree != NULL)
		return plan->lefttree;
	return plan;
}

/*
 * The restriction clauses the eddy routes over a source scan, given in
 * PostgreSQL's evaluation order: the longest suffix of selection candidates
 * that the scan still evaluates as a filter, at most max_routed of them.
 * They are removed from the scan's filter, which keeps the prefix.
 * Pseudoconstant clauses are not in the filter (a gating Result tests them
 * once), so they neither end nor join the suffix.  Shared by selection and
 * join eddies.
 */
List *
EddyRouteScanQuals(PlannerInfo *root, List *ordered, Plan *source, int max_routed)
{
	Plan	   *scan = EddySourceScan(source);
	int			user_level = EddyUserSecurityLevel(ordered);
	List	   *routed = NIL;
	ListCell   *lc;
	int			i;

	for (i = list_length(ordered) - 1; i >= 0; i--)
	{
		RestrictInfo *rinfo = list_nth_node(RestrictInfo, ordered, i);

		if (rinfo->pseudoconstant)
			continue;
		if (!EddyClauseIsCandidate(root, rinfo, user_level) ||
			!list_member(scan->qual, rinfo->clause) ||
			list_length(routed) >= max_routed)
			break;
		routed = lcons(rinfo, routed);
	}
	foreach(lc, routed)
		scan->qual = list_delete(scan->qual, lfirst_node(RestrictInfo, lc)->clause);
	return routed;
}

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
