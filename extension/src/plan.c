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
 * constraints travel as a prerequisite bitmap per operator.
 *
 * The CustomScan has scanrelid 0 and custom_scan_tlist equal to the
 * source's target list, so the routed predicates (custom_exprs) and the
 * output target list are rewritten by setrefs into INDEX_VAR references to
 * the source's output columns: the eddy evaluates them directly on the
 * tuples its source returns, with no copy.
 *
 *-------------------------------------------------------------------------
 */
#include "eddy.h"

#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/planmain.h"
#include "optimizer/restrictinfo.h"

#include "clauses.h"
#include "plan.h"

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
 * relation's pathlist (planner.c replaces that list).
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
	cpath->path.parallel_aware = false;
	cpath->path.parallel_safe = false;
	cpath->path.parallel_workers = 0;
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

static Plan *
eddy_plan_custom_path(PlannerInfo *root, RelOptInfo *rel,
					  CustomPath *best_path, List *tlist,
					  List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);
	Plan	   *source = linitial(custom_plans);
	Plan	   *scan = EddySourceScan(source);
	List	   *routed_rinfos;
	List	   *prereqs = NIL;
	List	   *est_sel = NIL;
	List	   *est_cost = NIL;
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
		int			prereq = 0;

		if (EddyExprMayRaise((Node *) rinfo->clause))
			prereq = (1 << nops) - 1;	/* every operator PostgreSQL ran first */
		cost_qual_eval_node(&cost, (Node *) rinfo, root);
		sel = clause_selectivity(root, (Node *) rinfo, 0, JOIN_INNER, NULL);

		exprs = lappend(exprs, rinfo->clause);
		prereqs = lappend(prereqs, makeInteger(prereq));
		est_sel = lappend(est_sel, makeFloat(psprintf("%.6g", sel)));
		est_cost = lappend(est_cost,
						   makeFloat(psprintf("%.6g", cost.per_tuple + cost.startup)));
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

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = NIL;
	cscan->scan.scanrelid = 0;
	cscan->flags = best_path->flags;
	cscan->custom_plans = custom_plans;
	cscan->custom_exprs = exprs;
	cscan->custom_private = list_make4(makeInteger(EDDY_KIND_SELECTIONS),
									   prereqs, est_sel, est_cost);
	cscan->custom_scan_tlist = copyObject(source->targetlist);
	cscan->custom_relids = NULL;	/* set by the caller */
	cscan->methods = &eddy_scan_methods;

	return &cscan->scan.plan;
}
