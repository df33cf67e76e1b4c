/*-------------------------------------------------------------------------
 *
 * plan.c
 *	  EddyPath and its conversion into the Eddy CustomScan.
 *
 * An EddyPath has one child: a scan path of the relation, whose pathtarget
 * planner.c widened to every column the routed predicates read.  When the
 * plan is made, PostgreSQL first turns the child into a scan plan with all
 * the relation's quals in its Filter, then calls eddy_plan_custom_path with
 * the relation's clauses in PostgreSQL's evaluation order.  There we decide
 * which quals the eddy routes:
 *
 *	 - the routed quals are the longest suffix of PostgreSQL's order made of
 *	   selection candidates (EddyClauseIsCandidate) that the scan still
 *	   evaluates as a filter (a clause used as an index qualification is
 *	   enforced by the index and is not routed);
 *	 - they are removed from the scan's Filter, which keeps the prefix.
 *
 * So the scan keeps evaluating, first and in PostgreSQL's order, the quals
 * PostgreSQL would have evaluated first: security quals and cheap
 * predicates.  Within the routed suffix the eddy may reorder freely, with
 * one exception: a predicate that may raise an error (EddyExprMayRaise)
 * must not run before the predicates PostgreSQL evaluated ahead of it,
 * since one of them may guard it (x <> 0 AND 10 / x > 1).  Those
 * constraints travel as a list of prerequisite modules per operator.
 *
 * The CustomScan has scanrelid 0 and custom_scan_tlist equal to the
 * source's target list, so the routed predicates (custom_exprs) and the
 * output target list are rewritten by setrefs into INDEX_VAR references to
 * the source's output columns: the eddy evaluates them directly on the
 * tuples its source returns, with no copy.
 *
 * custom_private is the layout of every eddy (private.h): one
 * EDDY_SOURCE_SCAN source whose column range is the whole
 * custom_scan_tlist, one selection module per routed predicate (reading
 * source 0, in PostgreSQL's order), and the reading order [0].
 * EddyPrivateList and EddySelectionPrivate build those lists for
 * plan_build.c (join eddies) too, and EddyMakeCustomScan fills the
 * CustomScan of both.
 *
 *-------------------------------------------------------------------------
 */
#include "eddy.h"

#include <math.h>

#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/planmain.h"
#include "optimizer/restrictinfo.h"

#include "clauses.h"
#include "plan.h"
#include "private.h"

static Plan *eddy_plan_custom_path(PlannerInfo *root, RelOptInfo *rel,
								   CustomPath *best_path, List *tlist,
								   List *clauses, List *custom_plans);

static const CustomPathMethods eddy_path_methods = {
	.CustomName = EDDY_NODE_NAME,
	.PlanCustomPath = eddy_plan_custom_path,
};

extern const CustomScanMethods eddy_scan_methods;

/*
 * An EddyPath over one scan path of rel.  The child is adopted: its
 * pathtarget is replaced by source_target, and it is no longer in the
 * relation's pathlist (planner.c replaces that list).  Over a partial path
 * (a parallel scan), the EddyPath is partial too, for the relation's
 * partial_pathlist.
 */
Path *
EddyCreatePath(PlannerInfo *root, RelOptInfo *rel, Path *child,
			   PathTarget *source_target)
{
	CustomPath *cpath = makeNode(CustomPath);
	int			nquals = list_length(rel->baserestrictinfo);

	child->pathtarget = source_target;

	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = rel;
	cpath->path.pathtarget = rel->reltarget;
	cpath->path.param_info = NULL;

	/*
	 * Over a partial scan, a partial eddy (parallel.c): each participant
	 * routes its share of the rows.  Parallel-aware for its workers'
	 * counters; parallel-safe when its predicates are.
	 */
	cpath->path.parallel_aware = child->parallel_aware;
	cpath->path.parallel_safe = child->parallel_aware && child->parallel_safe &&
		rel->consider_parallel;
	cpath->path.parallel_workers = child->parallel_aware ? child->parallel_workers : 0;
	cpath->path.rows = child->rows;
	/* routing costs about one operator call per predicate and tuple */
	cpath->path.startup_cost = child->startup_cost;
	cpath->path.total_cost = child->total_cost +
		cpu_operator_cost * nquals * child->rows;
	/* one source, read in order: the eddy preserves its sort order */
	cpath->path.pathkeys = child->pathkeys;
	cpath->flags = 0;
	cpath->custom_paths = list_make1(child);
	cpath->custom_private = NIL;
	cpath->methods = &eddy_path_methods;

	return &cpath->path;
}

/*
 * A custom_private description (private.h): a List of exactly nitems
 * elements, items[0 .. nitems - 1] in enum order (a NULL item is NIL).
 * Shared with plan_build.c.
 */
List *
EddyPrivateList(Node **items, int nitems)
{
	List	   *result = NIL;
	int			i;

	for (i = 0; i < nitems; i++)
		result = lappend(result, items[i]);
	Assert(list_length(result) == nitems);
	return result;
}

/* A List of Integer nodes (private.h) from an integer List */
List *
EddyPrivateIntegers(List *ints)
{
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, ints)
		result = lappend(result, makeInteger(lfirst_int(lc)));
	return result;
}

/*
 * A number as a Float node (private.h).  Its text always has a decimal
 * point or an exponent: a plan sent to parallel workers is written out and
 * read back (nodeToString, stringToNode), and a Float whose text looks like
 * an integer would read back as an Integer.
 */
Node *
EddyPrivateFloat(double v)
{
	char		buf[64];

	if (isnan(v) || isinf(v))
		v = 0;
	snprintf(buf, sizeof(buf), "%.17g", v);
	if (strpbrk(buf, ".e") == NULL)
		strlcat(buf, ".0", sizeof(buf));
	return (Node *) makeFloat(pstrdup(buf));
}

/* An OID as an Integer, as private.h stores them */
Node *
EddyPrivateOid(Oid oid)
{
	return (Node *) makeInteger((int) oid);
}

/* A selection module's description (private.h); prereqs is an integer List */
List *
EddySelectionPrivate(uint32 sources, List *prereqs, int expr_index,
					 Selectivity est_sel, Cost est_cost)
{
	Node	   *items[EddySelNumItems];

	items[EddySelKind] = (Node *) makeInteger(EDDY_MODULE_SELECTION);
	items[EddySelSources] = (Node *) makeInteger((int) sources);
	items[EddySelPrereqs] = (Node *) EddyPrivateIntegers(prereqs);
	items[EddySelExpr] = (Node *) makeInteger(expr_index);
	items[EddySelEstSelectivity] = (Node *) EddyPrivateFloat(est_sel);
	items[EddySelEstCost] = (Node *) EddyPrivateFloat(est_cost);
	return EddyPrivateList(items, EddySelNumItems);
}

/* A source description (private.h); attnos is an integer List */
List *
EddySourcePrivate(EddySourceMethod method, int first_col, int ncols, int plan,
				  Oid heapoid, List *attnos, double rows, const char *alias)
{
	Node	   *items[EddySourceNumItems];

	items[EddySourceMethodItem] = (Node *) makeInteger(method);
	items[EddySourceFirstCol] = (Node *) makeInteger(first_col);
	items[EddySourceNumCols] = (Node *) makeInteger(ncols);
	items[EddySourcePlan] = (Node *) makeInteger(plan);
	items[EddySourceHeapOid] = EddyPrivateOid(heapoid);
	items[EddySourceHeapAttnos] = (Node *) EddyPrivateIntegers(attnos);
	items[EddySourceEstRows] = (Node *) EddyPrivateFloat(rows);
	items[EddySourceAlias] = (Node *) makeString(pstrdup(alias != NULL ? alias : ""));
	items[EddySourceGuarded] = (Node *) makeInteger(0);
	return EddyPrivateList(items, EddySourceNumItems);
}

/*
 * The one source of a selection eddy (private.h): a scan whose whole
 * target list is the eddy's custom_scan_tlist.
 */
static List *
scan_source_private(Plan *source)
{
	return EddySourcePrivate(EDDY_SOURCE_SCAN, 0, list_length(source->targetlist),
							 0, InvalidOid, NIL, source->plan_rows, NULL);
}

static Plan *
eddy_plan_custom_path(PlannerInfo *root, RelOptInfo *rel,
					  CustomPath *best_path, List *tlist,
					  List *clauses, List *custom_plans)
{
	Plan	   *source = linitial(custom_plans);
	Plan	   *scan = EddySourceScan(source);
	List	   *routed_rinfos;
	List	   *modules = NIL;
	List	   *exprs = NIL;
	double		passed = 1.0;
	int			nops;
	ListCell   *lc;

	routed_rinfos = EddyRouteScanQuals(root, clauses, source, EDDY_MAX_SELECTIONS);

	/* Operators in PostgreSQL's order, with their prerequisites. */
	nops = 0;
	foreach(lc, routed_rinfos)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
		QualCost	cost;
		Selectivity sel;
		List	   *prereqs = NIL;

		if (EddyExprMayRaise((Node *) rinfo->clause))
		{
			int			j;

			/* every operator PostgreSQL ran first */
			for (j = 0; j < nops; j++)
				prereqs = lappend_int(prereqs, j);
		}
		cost_qual_eval_node(&cost, (Node *) rinfo, root);
		sel = clause_selectivity(root, (Node *) rinfo, 0, JOIN_INNER, NULL);

		modules = lappend(modules,
						  EddySelectionPrivate(1u << 0, prereqs, list_length(exprs),
											   sel, cost.per_tuple + cost.startup));
		exprs = lappend(exprs, rinfo->clause);
		passed *= sel;
		nops++;
	}
	/*
	 * The source now returns the rows that pass the quals it kept: undo the
	 * routed quals' selectivity in its row estimate so EXPLAIN reads right.
	 */
	if (passed > 0)
	{
		source->plan_rows = Min(clamp_row_est(source->plan_rows / passed),
								Max(rel->tuples, source->plan_rows));
		if (scan != source)
			scan->plan_rows = source->plan_rows;
	}

	/* a base relation's pseudoconstant clauses gate the plan PostgreSQL makes */
	return EddyMakeCustomScan(best_path, tlist, custom_plans, exprs,
							  copyObject(source->targetlist),
							  list_make1(scan_source_private(source)), modules,
							  list_make1(makeInteger(0)), 0, 0, -1);
}

/*
 * The Eddy CustomScan of every eddy, a selection eddy (above) or a join
 * eddy (plan_build.c): scanrelid 0, the sources' plans as custom_plans,
 * the expressions the modules evaluate as custom_exprs (rewritten by
 * setrefs into INDEX_VAR references over scan_tlist), and custom_private
 * in private.h's layout: the source and module descriptions, the reading
 * order (a List of Integer), the estimated join state in bytes, the
 * exchange Integer (EddyPrivExchange) and the index in exprs of the
 * One-Time Filter (-1: none).
 */
Plan *
EddyMakeCustomScan(CustomPath *best_path, List *tlist, List *custom_plans,
				   List *exprs, List *scan_tlist, List *sources,
				   List *modules, List *reading_order, double est_state,
				   int exchange, int one_time_qual)
{
	CustomScan *cscan = makeNode(CustomScan);
	Node	   *priv[EddyPrivNumItems];

	priv[EddyPrivSources] = (Node *) sources;
	priv[EddyPrivModules] = (Node *) modules;
	priv[EddyPrivSourceOrder] = (Node *) reading_order;
	priv[EddyPrivEstState] = EddyPrivateFloat(est_state);
	priv[EddyPrivExchange] = (Node *) makeInteger(exchange);
	priv[EddyPrivOneTimeQual] = (Node *) makeInteger(one_time_qual);

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = NIL;
	cscan->scan.scanrelid = 0;
	cscan->flags = best_path->flags;
	cscan->custom_plans = custom_plans;
	cscan->custom_exprs = exprs;
	cscan->custom_private = EddyPrivateList(priv, EddyPrivNumItems);
	cscan->custom_scan_tlist = scan_tlist;
	cscan->custom_relids = NULL;	/* set by the caller */
	cscan->methods = &eddy_scan_methods;

	return &cscan->scan.plan;
}
