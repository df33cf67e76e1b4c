/*-------------------------------------------------------------------------
 *
 * plan_build.c
 *	  The Eddy CustomScan of a join block: EddyPlanJoinPath and its phases.
 *
 * PostgreSQL calls EddyPlanJoinPath (the PlanCustomPath of an
 * EddyJoinPath, plan_join.c) with the plans of the eddy's scanned sources.
 * It makes, in order: the sources and their column ranges, the selection
 * modules with their prerequisites, and the join modules with their
 * uniqueness; the reading order is the one decided with the estimate
 * (join_state.c).
 *
 * The CustomScan has scanrelid 0 and a custom_scan_tlist made of one
 * column range per relation (what the block needs above it, and what the
 * modules read), so setrefs rewrites every expression into INDEX_VAR
 * references over that wide tuple.  Scanned relations' ranges are their
 * scans' target lists; an index-joined relation's range lists heap columns
 * fetched through the index.  custom_private describes sources and modules
 * in the layout of every eddy (private.h): per module its kind, per join
 * module its ends, sides, keys, uniqueness and the planner's estimates (the
 * rows of its ends, the selectivity of its key clauses).
 *
 *-------------------------------------------------------------------------
 */
#include "eddy.h"

#include "access/stratnum.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planmain.h"
#include "optimizer/plancat.h"
#include "optimizer/restrictinfo.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"

#include "clauses.h"
#include "plan.h"
#include "plan_join.h"
#include "private.h"

/*
 * Restriction clauses of a scanned relation that the eddy routes, as for
 * selection eddies (EddyRouteScanQuals); none for other kinds of sources
 * (their restrictions are inside subqueries or Append children).
 */
static List *
route_scan_quals(PlannerInfo *root, RelOptInfo *rel, Plan *source)
{
	RangeTblEntry *rte = planner_rt_fetch(rel->relid, root);

	if (rte->rtekind != RTE_RELATION || rte->inh || rel->reloptkind != RELOPT_BASEREL)
		return NIL;
	return EddyRouteScanQuals(root, EddyOrderQualClauses(root, rel->baserestrictinfo),
							  source, EDDY_MAX_MODULES);
}

/* list_sort comparator: Vars by attribute number */
static int
var_attno_cmp(const ListCell *a, const ListCell *b)
{
	AttrNumber	x = lfirst_node(Var, a)->varattno;
	AttrNumber	y = lfirst_node(Var, b)->varattno;

	return (x > y) - (x < y);
}

/* The selections the plan routes, and where each may have to wait */
typedef struct PlanSelections
{
	List	   *rinfos;			/* RestrictInfos, in module order */
	List	   *prereq_rels;	/* per selection: the relation whose earlier
								 * selections must run first, or -1 */
} PlanSelections;

/*
 * The selections in PostgreSQL's evaluation order: clauses it evaluates at
 * a join or a parameterized scan in that order (clause_order), after the
 * restriction clauses of index-joined relations (evaluated on their scans),
 * which keep their order.  A selection that may raise runs after the ones
 * before it (see EddyPlanJoinPath), so a clause PostgreSQL evaluates
 * first still guards it.
 */
static List *
selections_in_evaluation_order(EddyJoinPath *jp)
{
	int			n = list_length(jp->selections);
	ListCell  **cells;
	int		   *rank;
	List	   *result = NIL;
	int			i;

	if (n <= 1)
		return list_copy(jp->selections);
	cells = palloc(n * sizeof(ListCell *));
	rank = palloc(n * sizeof(int));
	for (i = 0; i < n; i++)
	{
		Node	   *clause = list_nth(jp->selections, i);
		int			k = 0;
		ListCell   *lc;

		rank[i] = -1;
		foreach(lc, jp->clause_order)
		{
			if (lfirst(lc) == clause)
			{
				rank[i] = k;
				break;
			}
			k++;
		}
		cells[i] = list_nth_cell(jp->selections, i);
	}
	/* stable insertion sort by rank */
	for (i = 1; i < n; i++)
	{
		ListCell   *cell = cells[i];
		int			r = rank[i];
		int			j;

		for (j = i; j > 0 && rank[j - 1] > r; j--)
		{
			cells[j] = cells[j - 1];
			rank[j] = rank[j - 1];
		}
		cells[j] = cell;
		rank[j] = r;
	}
	for (i = 0; i < n; i++)
		result = lappend(result, lfirst(cells[i]));
	return result;
}

/*
 * Sources (returned, one description per relation) and the wide tuple's
 * column ranges (*scan_tlist).  A scanned relation's range is its scan's
 * target list; the restriction clauses the eddy routes off that scan are
 * its first selections, in PostgreSQL's order, and scan_quals[i] gets the
 * ones the scan keeps.  An index-joined relation's range lists the heap
 * columns fetched through the index.
 */
static List *
make_sources(PlannerInfo *root, EddyJoinPath *jp, List *custom_plans,
			 List **scan_tlist, PlanSelections *sels, List **scan_quals)
{
	List	   *sources = NIL;
	int			plan_i = 0;
	int			i;

	for (i = 0; i < jp->nrels; i++)
	{
		RelOptInfo *rel = jp->rels[i];
		int			first_col = list_length(*scan_tlist);
		List	   *source;
		ListCell   *lc;

		if (jp->scanned[i])
		{
			Plan	   *child = list_nth(custom_plans, plan_i);
			List	   *routed = route_scan_quals(root, rel, child);
			double		scan_rows = rel->rows;

			/* a partial scan returns each participant its share */
			if (child->parallel_aware && child->plan_rows > 0)
				scan_rows = child->plan_rows;

			scan_quals[i] = list_difference_ptr(rel->baserestrictinfo, routed);

			/*
			 * The scan now returns the rows its routed clauses would have
			 * removed too: that is what the source schedule paces (a source
			 * whose clauses the eddy runs is read at the rate of its rows
			 * before them), and what EXPLAIN should show on the scan.
			 */
			if (routed != NIL)
			{
				Selectivity sel = clauselist_selectivity(root, routed, rel->relid,
														 JOIN_INNER, NULL);

				if (sel > 0)
					scan_rows = clamp_row_est(Min(scan_rows / sel,
												  Max(rel->tuples, rel->rows)));
				child->plan_rows = scan_rows;
			}

			/* routed restriction clauses come first, in PostgreSQL's order */
			foreach(lc, routed)
			{
				sels->rinfos = lappend(sels->rinfos, lfirst(lc));
				sels->prereq_rels = lappend_int(sels->prereq_rels, i);
			}
			foreach(lc, child->targetlist)
			{
				TargetEntry *tle = lfirst_node(TargetEntry, lc);

				*scan_tlist = lappend(*scan_tlist,
									  makeTargetEntry(copyObject(tle->expr),
													  list_length(*scan_tlist) + 1,
													  NULL, false));
			}
			source = EddySourcePrivate(EDDY_SOURCE_SCAN, first_col,
									list_length(child->targetlist), plan_i,
									InvalidOid, NIL, scan_rows, NULL);
			if (jp->guarded[i])
				lfirst(list_nth_cell(source, EddySourceGuarded)) = makeInteger(1);
			plan_i++;
		}
		else
		{
			RangeTblEntry *rte = planner_rt_fetch(rel->relid, root);
			List	   *attnos = NIL;
			List	   *vars = list_copy(jp->targets[i]->exprs);

			/*
			 * In attribute order: where they are consecutive, its rows
			 * borrow the heap slot's arrays (EddyRowFromHeapSlot)
			 */
			list_sort(vars, var_attno_cmp);
			foreach(lc, vars)
			{
				Var		   *var = lfirst_node(Var, lc);

				attnos = lappend_int(attnos, var->varattno);
				*scan_tlist = lappend(*scan_tlist,
									  makeTargetEntry((Expr *) copyObject(var),
													  list_length(*scan_tlist) + 1,
													  NULL, false));
			}
			/* its tuples: the rows an index join's probes can match */
			source = EddySourcePrivate(EDDY_SOURCE_INDEX, first_col,
									list_length(attnos), -1,
									rte->relid, attnos,
									Max(rel->tuples, rel->rows),
									rte->eref->aliasname);
		}
		sources = lappend(sources, source);
	}
	return sources;
}

/*
 * After the routed restriction clauses: selections over several relations,
 * and of index-joined relations, in PostgreSQL's evaluation order.  The
 * ones that may raise run in this order, so a clause PostgreSQL runs first
 * still guards a later one; a selection over one relation waits only for
 * that relation's.
 */
static void
add_block_selections(EddyJoinPath *jp, PlanSelections *sels, List **one_time)
{
	ListCell   *lc;

	foreach(lc, selections_in_evaluation_order(jp))
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
		uint32		rels = EddyRelMask(jp, rinfo->clause_relids);
		int			single = (rels != 0 && (rels & (rels - 1)) == 0) ? ffs(rels) - 1 : -1;

		/*
		 * A pseudoconstant clause (outer parameters and constants only) is
		 * the same for every tuple of a scan: PostgreSQL checks it once, in
		 * a gating Result, and reads nothing when it fails; so does the
		 * eddy (its One-Time Filter), where as a selection it let every
		 * source be read, once per outer row in a correlated subquery.
		 */
		if (rinfo->pseudoconstant)
		{
			*one_time = lappend(*one_time, rinfo->clause);
			continue;
		}
		sels->rinfos = lappend(sels->rinfos, rinfo);
		sels->prereq_rels = lappend_int(sels->prereq_rels, single);
	}
}

/*
 * Selection modules (returned), with their prerequisites: one that may
 * raise waits for the earlier selections on its relation, or, over several
 * relations, runs last on complete tuples, after every selection that may
 * not raise and the earlier ones that may.  Their predicates are appended
 * to *exprs.
 */
static List *
make_selection_modules(PlannerInfo *root, EddyJoinPath *jp, PlanSelections *sels,
					   List **exprs)
{
	List	   *modules = NIL;
	uint32		all_rels = (jp->nrels >= 32) ? ~0u : ((1u << jp->nrels) - 1);
	int			nsels = list_length(sels->rinfos);
	int			i;

	for (i = 0; i < nsels; i++)
	{
		RestrictInfo *rinfo = list_nth_node(RestrictInfo, sels->rinfos, i);
		uint32		rels = EddyRelMask(jp, rinfo->clause_relids);
		int			single = list_nth_int(sels->prereq_rels, i);
		List	   *prereq = NIL;
		bool		complete_only = false;
		QualCost	cost;

		if (EddyExprMayRaise((Node *) rinfo->clause))
		{
			int			j;

			if (single >= 0 && rels != 0)
			{
				/* after the earlier selections on the same relation */
				for (j = 0; j < i; j++)
					if (list_nth_int(sels->prereq_rels, j) == single)
						prereq = lappend_int(prereq, j);
			}
			else
			{
				/* over several relations: last, on complete tuples */
				complete_only = true;
				for (j = 0; j < nsels; j++)
					if (j != i && !EddyExprMayRaise((Node *) list_nth_node(RestrictInfo, sels->rinfos, j)->clause))
						prereq = lappend_int(prereq, j);
				for (j = 0; j < i; j++)
					if (EddyExprMayRaise((Node *) list_nth_node(RestrictInfo, sels->rinfos, j)->clause))
						prereq = lappend_int(prereq, j);
			}
		}
		cost_qual_eval_node(&cost, (Node *) rinfo, root);
		modules = lappend(modules,
						  EddySelectionPrivate(complete_only ? all_rels : rels, prereq,
											   list_length(*exprs),
											   clause_selectivity(root, (Node *) rinfo, 0,
																  JOIN_INNER, NULL),
											   cost.per_tuple + cost.startup));
		*exprs = lappend(*exprs, rinfo->clause);
	}
	return modules;
}

/*
 * May the index join of edge e into relation `into` read the index alone,
 * as an index-only scan does (check_index_only, indxpath.c)?  Every column
 * the block needs of the relation (jp->targets: what is read above the
 * block, the join keys, the selections over it, a semi or anti join's
 * inner qual, later joins' keys; the columns of its source range) must be
 * a plain key or included column the index can return (amcanreturn, per
 * column: a hash index returns none), and enable_indexonlyscan on.
 */
static bool
index_join_index_only(EddyJoinPath *jp, JoinEdge *e, int into)
{
	IndexOptInfo *index = e->index;
	ListCell   *lc;

	if (!enable_indexonlyscan)
		return false;
	foreach(lc, jp->targets[into]->exprs)
	{
		Var		   *var = lfirst(lc);
		int			col;

		if (!IsA(var, Var) || var->varattno <= 0)
			return false;
		for (col = 0; col < index->ncolumns; col++)
			if (index->indexkeys[col] == var->varattno && index->canreturn[col])
				break;
		if (col >= index->ncolumns)
			return false;
	}
	return true;
}

/*
 * A hybrid join (eddy.join_method = hybrid, mod_hybrid.c) of tree edge e:
 * the relation it also reaches by index (end 1), returned, with the index
 * and its columns in *hybrid, or -1 (and why not at DEBUG1).  An index join
 * PostgreSQL's plan made (e->index_into) becomes one whose relation is
 * reached by index only, with the cache; a hash join one whose leaf
 * relation is both scanned and indexed.  The relation must be one alone on
 * its side of the tree, of plain columns, an inner relation whose
 * restriction clauses are neither volatile (a fetched row and its scanned
 * copy must pass alike) nor hold a subplan (the clauses its scan keeps run
 * on the rows the index fetches too, EddyJoinFetchQual), with a btree or
 * hash index on every key, and the keys of one type on both ends (the
 * cache is probed with either end's).
 */
/*
 * A hybrid join is offered whatever eddy.migration and eddy.state_mode say,
 * and its eddy then neither migrates nor spills (mod_hybrid.c: the cache
 * would outlive the rows it stands for); said here at DEBUG1 as well as in
 * EXPLAIN, for a user who asked for both.
 */
static void
hybrid_limits(PlannerInfo *root, EddyJoinPath *jp, JoinEdge *e)
{
	elog(DEBUG1, "eddy: hybrid join between relations \"%s\" and \"%s\": its eddy %sdoes not spill%s (the join's SteM caches index lookups)",
		 get_rel_name(planner_rt_fetch(jp->rels[e->a]->relid, root)->relid),
		 get_rel_name(planner_rt_fetch(jp->rels[e->b]->relid, root)->relid),
		 eddy_migration != EDDY_MIGRATION_OFF ? "does not migrate state (eddy.migration) and " : "",
		 eddy_state_mode == EDDY_STATE_MODE_STEMS ? " and keeps STAIRs (eddy.state_mode = stems)" : "");
}

static int
hybrid_edge(PlannerInfo *root, EddyJoinPath *jp, JoinEdge *e, List *custom_plans,
			List **scan_quals, JoinEdge *hybrid)
{
	uint32		all_rels = (jp->nrels >= 32) ? ~0u : ((1u << jp->nrels) - 1);
	const char *why = NULL;
	const char *whys[2] = {NULL, NULL};
	int			side;

	if (eddy_join_method != EDDY_JOIN_HYBRID || e->clauses == NIL)
		return -1;
	for (side = 1; side >= 0; side--)
	{
		int			into = side ? e->b : e->a;
		int			from = side ? e->a : e->b;
		List	   *keyclauses = e->index_into >= 0 ? e->index_clauses : e->clauses;
		ListCell   *lc;
		bool		same_type = true;

		if (side == 0)
			whys[1] = why;		/* end b's reason, before end a is tried */
		why = NULL;
		if (e->index_into >= 0 && e->index_into != into)
		{
			why = "PostgreSQL's index nested loop goes into the other relation";
			continue;
		}
		if ((all_rels & ~EddyTreeSide(jp, e, from)) != (1u << into))
		{
			why = "not a leaf of the join tree";
			continue;
		}
		if (jp->jointype[into] != JOIN_INNER || jp->jointype[from] != JOIN_INNER)
		{
			why = "a semi or anti join";
			continue;
		}
		foreach(lc, keyclauses)
		{
			Oid			ltype;
			Oid			rtype;

			op_input_types(((OpExpr *) lfirst_node(RestrictInfo, lc)->clause)->opno,
						   &ltype, &rtype);
			if (ltype != rtype)
				same_type = false;
		}
		if (!same_type)
		{
			why = "its keys are of two types";
			continue;
		}
		if (contain_volatile_functions((Node *) extract_actual_clauses(jp->rels[into]->baserestrictinfo, false)) ||
			contain_subplans((Node *) extract_actual_clauses(jp->rels[into]->baserestrictinfo, false)))
		{
			why = "the relation's restriction clauses are volatile or hold a subplan";
			continue;
		}
		if (e->index_into >= 0)
		{
			/* PostgreSQL's index nested loop: the index join with a cache */
			*hybrid = *e;
			hybrid_limits(root, jp, e);
			return into;
		}
		if (!jp->scanned[into] || !EddyRelIndexJoinable(root, jp, into))
		{
			why = "the relation is not a plain table";
			continue;
		}
		{
			int			plan_i = 0;
			int			i;
			Plan	   *child;

			for (i = 0; i < into; i++)
				if (jp->scanned[i])
					plan_i++;
			child = list_nth(custom_plans, plan_i);
			foreach(lc, child->targetlist)
			{
				Expr	   *expr = lfirst_node(TargetEntry, lc)->expr;

				if (!IsA(expr, Var) || ((Var *) expr)->varattno <= 0)
					break;
			}
			if (lc != NULL)
			{
				why = "the relation's scan returns more than its columns";
				continue;
			}
		}
		foreach(lc, jp->rels[into]->indexlist)
		{
			*hybrid = *e;
			if (EddyEdgeIndexUsable(jp, hybrid, into, lfirst(lc)) &&
				list_length(hybrid->index_clauses) == list_length(e->clauses))
			{
				hybrid_limits(root, jp, e);
				return into;
			}
		}
		why = "no index of the relation has every key";
	}
	whys[0] = why;
	elog(DEBUG1, "eddy: no hybrid join between relations \"%s\" and \"%s\": into \"%s\": %s; into \"%s\": %s",
		 get_rel_name(planner_rt_fetch(jp->rels[e->a]->relid, root)->relid),
		 get_rel_name(planner_rt_fetch(jp->rels[e->b]->relid, root)->relid),
		 get_rel_name(planner_rt_fetch(jp->rels[e->b]->relid, root)->relid),
		 whys[1] ? whys[1] : "not tried",
		 get_rel_name(planner_rt_fetch(jp->rels[e->a]->relid, root)->relid),
		 whys[0] ? whys[0] : "not tried");
	return -1;
}

/*
 * The heap attributes of a scanned relation's columns, for a hybrid join
 * that also fetches it by index: its source description names the heap.
 */
static void
hybrid_source(PlannerInfo *root, EddyJoinPath *jp, List *sources, List *custom_plans,
			  int into)
{
	List	   *source = list_nth(sources, into);
	int			plan_i = 0;
	List	   *attnos = NIL;
	Plan	   *child;
	ListCell   *lc;
	int			i;

	if (!jp->scanned[into])
		return;					/* index-joined: it has them */
	for (i = 0; i < into; i++)
		if (jp->scanned[i])
			plan_i++;
	child = list_nth(custom_plans, plan_i);
	foreach(lc, child->targetlist)
		attnos = lappend_int(attnos, ((Var *) lfirst_node(TargetEntry, lc)->expr)->varattno);
	lfirst(list_nth_cell(source, EddySourceHeapOid)) =
		EddyPrivateOid(planner_rt_fetch(jp->rels[into]->relid, root)->relid);
	lfirst(list_nth_cell(source, EddySourceHeapAttnos)) = EddyPrivateIntegers(attnos);
}

/*
 * Join modules (returned), one per edge of the tree, in jp->edges order.
 * An index join's end 0 is the relation it probes from, end 1 the one it
 * probes into; a hash join's ends are the edge's.  Key expressions and the
 * join condition are appended to *exprs; unique[k][s] tells whether a probe
 * into side s of edge k finds at most one match.
 */
static List *
make_join_modules(PlannerInfo *root, EddyJoinPath *jp, List **scan_quals,
				  List **exprs, bool (*unique)[2], List *sources,
				  List *custom_plans)
{
	List	   *modules = NIL;
	uint32		all_rels = (jp->nrels >= 32) ? ~0u : ((1u << jp->nrels) - 1);
	int		   *pos = palloc(sizeof(int) * jp->nrels);
	int			k = 0;
	ListCell   *lc;

	foreach(lc, jp->reading_order)
		pos[intVal(lfirst(lc))] = k++;
	k = 0;
	foreach(lc, jp->edges)
	{
		JoinEdge   *e = lfirst(lc);
		JoinEdge	hy;
		int			hybrid_into = hybrid_edge(root, jp, e, custom_plans, scan_quals, &hy);
		bool		hybrid = hybrid_into >= 0;
		bool		index_join = e->index_into >= 0;
		List	   *keyclauses = index_join ? e->index_clauses : e->clauses;
		int			side0 = hybrid ? (hybrid_into == e->a ? e->b : e->a) :
			index_join ? (e->index_into == e->a ? e->b : e->a) : e->a;
		int			side1 = (side0 == e->a) ? e->b : e->a;
		uint32		mask0 = EddyTreeSide(jp, e, side0);
		uint32		mask1 = all_rels & ~mask0;
		List	   *opnos = NIL;
		List	   *colls = NIL;
		List	   *keys0 = NIL;
		List	   *keys1 = NIL;
		List	   *keyexprs0 = NIL;
		Node	   *items[EddyJoinNumItems];
		ListCell   *lc2;

		foreach(lc2, keyclauses)
		{
			RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc2);
			OpExpr	   *op = (OpExpr *) rinfo->clause;
			Index		relid0 = jp->rels[side0]->relid;
			Oid			opno = op->opno;

			if (!bms_is_member(relid0, rinfo->left_relids))
				opno = get_commutator(opno);
			opnos = lappend(opnos, EddyPrivateOid(opno));
			colls = lappend(colls, EddyPrivateOid(op->inputcollid));
			keys0 = lappend_int(keys0, list_length(*exprs));
			keyexprs0 = lappend(keyexprs0, EddyClauseSide(rinfo, relid0));
			*exprs = lappend(*exprs, llast(keyexprs0));
			keys1 = lappend_int(keys1, list_length(*exprs));
			*exprs = lappend(*exprs, EddyClauseSide(rinfo, jp->rels[side1]->relid));
		}
		unique[k][0] = (!index_join || hybrid) &&
			EddyProbeSideUnique(root, jp, side0, mask0, keyclauses, scan_quals);
		unique[k][1] = (!index_join || hybrid) &&
			EddyProbeSideUnique(root, jp, side1, mask1, keyclauses, scan_quals);
		if (hybrid)
			hybrid_source(root, jp, sources, custom_plans, hybrid_into);

		items[EddyJoinKind] = (Node *) makeInteger(hybrid ? EDDY_MODULE_HYBRID_JOIN :
												   index_join ?
												   EDDY_MODULE_INDEX_JOIN :
												   EDDY_MODULE_HASH_JOIN);
		items[EddyJoinEnds] = (Node *) list_make2(makeInteger(side0), makeInteger(side1));
		items[EddyJoinSides] = (Node *) list_make2(makeInteger((int) mask0),
												   makeInteger((int) mask1));
		items[EddyJoinOperators] = (Node *) opnos;
		items[EddyJoinCollations] = (Node *) colls;
		items[EddyJoinKeys0] = (Node *) EddyPrivateIntegers(keys0);
		items[EddyJoinKeys1] = (Node *) EddyPrivateIntegers(keys1);
		/* the join condition, for EXPLAIN */
		items[EddyJoinCondition] = (Node *) makeInteger(list_length(*exprs));
		*exprs = lappend(*exprs, keyclauses == NIL ? (Expr *) makeBoolConst(true, false) :
						 make_ands_explicit(extract_actual_clauses(keyclauses, false)));
		items[EddyJoinUnique] = (Node *) list_make2(makeInteger(unique[k][0] ? 1 : 0),
													makeInteger(unique[k][1] ? 1 : 0));
		/*
		 * Estimated tuples per side: to size the STAIRs, and (with the
		 * selectivity) the join's fan-out before it is observed.  An index
		 * join's matches are every row of its relation with the keys; the
		 * relation's restriction clauses are selections of their own
		 * (evaluated at fetch, and counted, by them), so its side is the
		 * relation's tuples, not its rows after them.  With the rows after
		 * them, the fan-out the routing assumes for a join not taken for a
		 * while would fold those selections in a second time (TPC-H Q21:
		 * 0.49 for orders' primary key, where every probe matches one row),
		 * and the join would be tried again and again ahead of better ones.
		 */
		items[EddyJoinEstRows] =
			(Node *) list_make2(EddyPrivateFloat(jp->rels[side0]->rows),
								EddyPrivateFloat(index_join ?
												 Max(jp->rels[side1]->tuples,
													 jp->rels[side1]->rows) :
												 jp->rels[side1]->rows));
		/*
		 * The entries each side's STAIR likely holds, to size its slot array
		 * when it stores first: a scanned relation's rows, and for one an
		 * index join reaches, the likely estimate of the join state
		 * (likely_index_rows), not every row of the relation.  TPC-H Q7
		 * (work_mem 64MB): lineitem's STAIR, reached from supplier, was
		 * sized for 1.8 M entries (a 48 MB slot array) and held 145,703.
		 * A STAIR that outgrows its estimate doubles.
		 */
		items[EddyJoinPresizeRows] =
			(Node *) list_make2(EddyPrivateFloat(EddyPresizeRows(root, jp, side0, pos)),
								EddyPrivateFloat(EddyPresizeRows(root, jp, side1, pos)));
		items[EddyJoinEstSelectivity] =
			EddyPrivateFloat(clauselist_selectivity(root, keyclauses, 0,
													JOIN_INNER, NULL));
		items[EddyJoinIndexOid] = EddyPrivateOid(hybrid ? hy.index->indexoid :
												 index_join ? e->index->indexoid : InvalidOid);
		items[EddyJoinIndexCols] = (Node *) (hybrid ? EddyPrivateIntegers(hy.index_cols) :
											 index_join ?
											 EddyPrivateIntegers(e->index_cols) : NIL);
		items[EddyJoinType] = (Node *) makeInteger(index_join ? jp->jointype[side1] : JOIN_INNER);
		items[EddyJoinInnerQual] = (Node *) makeInteger(-1);
		items[EddyJoinIndexOnly] =
			(Node *) makeInteger(index_join && !hybrid &&
								 index_join_index_only(jp, e, side1) ? 1 : 0);
		/*
		 * How often end 0's keys repeat: does a hybrid's index cache pay,
		 * or an index join's lookup cache (mod_indexjoin.c)?
		 */
		items[EddyJoinKeyDistinct] =
			EddyPrivateFloat((hybrid || index_join) && keyexprs0 != NIL ?
							 estimate_num_groups(root, keyexprs0,
												 Max(jp->rels[side0]->rows, 1.0),
												 NULL, NULL) : 0.0);
		items[EddyJoinKeyUnique0] =
			(Node *) makeInteger(index_join && !hybrid &&
								 EddyProbeSideUnique(root, jp, side0, 1u << side0,
													 keyclauses, scan_quals) ? 1 : 0);
		items[EddyJoinFetchQual] = (Node *) NIL;
		if (hybrid && jp->scanned[hybrid_into] && scan_quals[hybrid_into] != NIL)
		{
			/* the clauses T's scan keeps, for the rows its index fetches */
			List	   *quals = extract_actual_clauses(scan_quals[hybrid_into], false);

			fix_opfuncids((Node *) quals);
			items[EddyJoinFetchQual] = (Node *) copyObject(quals);
		}
		if (index_join && jp->jointype[side1] != JOIN_INNER)
		{
			SpecialJoinInfo *sjinfo = jp->sjinfo[side1];
			List	   *quals = jp->inner_quals[side1];
			Selectivity sel;

			if (quals != NIL)
			{
				ListCell   *lc3;
				List	   *conds = NIL;

				foreach(lc3, quals)
					conds = lappend(conds, lfirst_node(RestrictInfo, lc3)->clause);
				items[EddyJoinInnerQual] = (Node *) makeInteger(list_length(*exprs));
				*exprs = lappend(*exprs, make_ands_explicit(conds));
			}
			/* the fraction of end 0's tuples with a match, as PostgreSQL's */
			sel = clauselist_selectivity(root, list_concat(list_copy(keyclauses), quals),
										 0, JOIN_SEMI, sjinfo);
			sel = Min(Max(sel, 0.0), 1.0);
			items[EddyJoinEstRows] =
				(Node *) list_make2(EddyPrivateFloat(jp->rels[side0]->rows),
									EddyPrivateFloat(1.0));
			items[EddyJoinEstSelectivity] =
				EddyPrivateFloat(sjinfo->jointype == JOIN_ANTI ? 1.0 - sel : sel);
		}
		modules = lappend(modules, EddyPrivateList(items, EddyJoinNumItems));
		k++;
	}
	return modules;
}

Plan *
EddyPlanJoinPath(PlannerInfo *root, RelOptInfo *joinrel,
				 CustomPath *best_path, List *tlist,
				 List *clauses, List *custom_plans)
{
	EddyJoinPath *jp = (EddyJoinPath *) best_path;
	List	   *scan_tlist = NIL;
	List	   *exprs = NIL;
	List	   *sources;
	List	   *modules;
	PlanSelections sels = {NIL, NIL};
	List	  **scan_quals = palloc0(sizeof(List *) * jp->nrels);	/* restrictions
																	 * a source's
																	 * scan keeps */
	bool		(*unique)[2] = palloc0(sizeof(bool[2]) * Max(list_length(jp->edges), 1));
	List	   *one_time = NIL;
	int			one_time_qual = -1;

	sources = make_sources(root, jp, custom_plans, &scan_tlist, &sels, scan_quals);
	add_block_selections(jp, &sels, &one_time);
	modules = make_selection_modules(root, jp, &sels, &exprs);
	modules = list_concat(modules, make_join_modules(root, jp, scan_quals, &exprs, unique,
													 sources, custom_plans));
	if (one_time != NIL)
	{
		exprs = lappend(exprs, make_ands_explicit(one_time));
		one_time_qual = list_length(exprs) - 1;
	}

	(void) clauses;				/* a join relation has no restriction clauses */
	/* the reading order was decided with the estimate (EddyJoinStateFits) */
	return EddyMakeCustomScan(best_path, tlist, custom_plans, exprs, scan_tlist,
							  sources, modules, jp->reading_order,
							  jp->est_state,
							  jp->exchange ? (int) (1 | (jp->claimed << 1)) : 0,
							  one_time_qual);
}
