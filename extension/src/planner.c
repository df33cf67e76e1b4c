/*-------------------------------------------------------------------------
 *
 * planner.c
 *	  Planner hooks: where an eddy may replace part of a plan.
 *
 * A single-relation select-project-join block (a query level with one base
 * relation) whose restriction clauses include at least two selection
 * operators gets an EddyPath over each of the relation's own scan paths.
 * A predicate is a selection operator when its estimated per-tuple cost is
 * at least eddy.selection_min_cost and it belongs to the block's user
 * predicates (the highest security level: row-level security quals and the
 * quals of security-barrier views stay on the scan, so they run first, as
 * PostgreSQL runs them).  Cheaper predicates stay on the scan.
 *
 * The EddyPath replaces the relation's paths rather than competing with
 * them on cost: once the block qualifies and the extension is created in
 * the current database, the eddy is what the user asked for.  Each scan
 * path becomes the source of its own EddyPath (so sort orders and index
 * scans that PostgreSQL found remain available), except a path whose index
 * or TID condition already enforces all but one of the predicates: it
 * stays as it is and competes on cost.  Partial paths (parallel scans) get
 * partial EddyPaths the same way, which a Gather runs in parallel
 * (parallel.c: each participant routes its share of the rows).
 *
 * A join block gets its eddy (plan_join.c) after PostgreSQL's join search,
 * and with it a partial twin that a Gather runs in parallel where one is
 * possible (parallel.c); where PostgreSQL would run the block in parallel
 * and the parallel eddy would cost more than its plan, PostgreSQL's plan
 * stays (plan_join.c, its gates; plan_parallel.c, the twins).  A block
 * refused for its outer joins, or semi or anti joins of several relations,
 * may still get eddies over the inner joins PostgreSQL's plan makes below
 * them ("Sub-blocks").
 *
 * Whatever the eddy cannot handle keeps the vanilla plan, and the reason is
 * logged at DEBUG1: inheritance and partitioned tables, foreign tables and
 * other relation kinds, the target relation of a data-modifying statement,
 * row marks (FOR UPDATE/SHARE), LATERAL references, WHERE CURRENT OF, and
 * more routable predicates than EDDY_MAX_SELECTIONS.
 *
 * The hooks are chained to whatever was installed before us.  This file
 * decides only whether a block gets an eddy; the clause tests it relies on
 * (security levels, selection candidates) are in clauses.c, and the paths
 * and plans are made by plan.c (one relation) and plan_join.c (joins,
 * with the files plan_join.h declares).
 *
 *-------------------------------------------------------------------------
 */
#include "eddy.h"

#include "catalog/pg_class.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/plancat.h"
#include "optimizer/geqo.h"
#include "parser/parsetree.h"
#include "optimizer/tlist.h"
#include "utils/lsyscache.h"

#include "clauses.h"
#include "plan.h"

static set_rel_pathlist_hook_type prev_set_rel_pathlist_hook = NULL;
static join_search_hook_type prev_join_search_hook = NULL;

static void eddy_set_rel_pathlist(PlannerInfo *root, RelOptInfo *rel,
								  Index rti, RangeTblEntry *rte);
static RelOptInfo *eddy_join_search(PlannerInfo *root, int levels_needed,
									List *initial_rels);

void
EddyPlannerInit(void)
{
	prev_set_rel_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = eddy_set_rel_pathlist;
	prev_join_search_hook = join_search_hook;
	join_search_hook = eddy_join_search;
}

/*
 * Is the extension created in the current database?  The hook only acts
 * there.  The lookup is an index probe of pg_extension; it runs only for
 * blocks that would otherwise get an eddy.
 */
bool
EddyExtensionCreated(void)
{
	return OidIsValid(get_extension_oid("eddy", true));
}

static bool
contain_current_of_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, CurrentOfExpr))
		return true;
	return expression_tree_walker(node, contain_current_of_walker, context);
}

/*
 * Why this relation's block cannot have an eddy, or NULL if it can.
 */
static const char *
eddy_unsupported_reason(PlannerInfo *root, RelOptInfo *rel, Index rti,
						RangeTblEntry *rte)
{
	ListCell   *lc;

	if (rte->inh)
		return "inheritance and partitioned tables are not supported";
	if (rte->relkind != RELKIND_RELATION && rte->relkind != RELKIND_MATVIEW)
		return "only tables and materialized views are supported";
	if (root->parse->resultRelation == (int) rti)
		return "the relation is the target of a data-modifying statement";
	if (root->rowMarks != NIL)
		return "the query has row marks (FOR UPDATE/SHARE or a data-modifying statement)";
	if (!bms_is_empty(rel->lateral_relids))
		return "the relation has LATERAL references";
	foreach(lc, rel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);

		if (contain_current_of_walker((Node *) rinfo->clause, NULL))
			return "WHERE CURRENT OF";
	}
	return NULL;
}

/*
 * Target lists for the source scan.  It must return every column the block
 * needs above it and every column its routed predicates read, since the
 * eddy evaluates them on the source's tuples.
 *
 * exact: just those columns.  physical: every column of the relation, in
 * order, which lets the scan return its heap tuple without projecting it
 * (as PostgreSQL's own scans do when they can); the eddy then deforms only
 * the columns its predicates read.  The physical list is NULL when it cannot
 * serve: dropped columns, system or whole-row columns needed, or anything
 * but plain columns in the relation's target.
 */
static void
source_targets(PlannerInfo *root, RelOptInfo *rel, int user_level,
			   PathTarget **exact, PathTarget **physical)
{
	List	   *vars = NIL;
	List	   *tlist;
	bool		plain = true;
	ListCell   *lc;

	*exact = copy_pathtarget(rel->reltarget);
	foreach(lc, rel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);

		if (EddyClauseIsCandidate(root, rinfo, user_level))
			vars = list_concat(vars, pull_var_clause((Node *) rinfo->clause, 0));
	}
	foreach(lc, vars)
	{
		if (!list_member((*exact)->exprs, lfirst(lc)))
			add_column_to_pathtarget(*exact, (Expr *) lfirst(lc), 0);
	}
	set_pathtarget_cost_width(root, *exact);

	foreach(lc, (*exact)->exprs)
	{
		Var		   *var = (Var *) lfirst(lc);

		if (!IsA(var, Var) || var->varattno <= 0)
			plain = false;
	}
	*physical = NULL;
	if (!plain)
		return;
	tlist = build_physical_tlist(root, rel);
	if (tlist == NIL)
		return;					/* PostgreSQL punts on dropped columns */
	foreach(lc, tlist)
	{
		if (!IsA(lfirst_node(TargetEntry, lc)->expr, Var))
			return;				/* a dropped column */
	}
	*physical = create_pathtarget(root, tlist);
}

/* Collect the RestrictInfos an index or bitmap path enforces in its index. */
static List *
path_index_clauses(Path *path)
{
	List	   *result = NIL;
	ListCell   *lc;

	switch (nodeTag(path))
	{
		case T_IndexPath:
			foreach(lc, ((IndexPath *) path)->indexclauses)
				result = lappend(result, lfirst_node(IndexClause, lc)->rinfo);
			break;
		case T_BitmapHeapPath:
			return path_index_clauses(((BitmapHeapPath *) path)->bitmapqual);
		case T_BitmapAndPath:
			foreach(lc, ((BitmapAndPath *) path)->bitmapquals)
				result = list_concat(result, path_index_clauses(lfirst(lc)));
			break;
		case T_BitmapOrPath:
			foreach(lc, ((BitmapOrPath *) path)->bitmapquals)
				result = list_concat(result, path_index_clauses(lfirst(lc)));
			break;
		case T_TidPath:
			return list_copy(((TidPath *) path)->tidquals);
		case T_TidRangePath:
			return list_copy(((TidRangePath *) path)->tidrangequals);
		default:
			break;
	}
	return result;
}

/*
 * Selection operators the eddy would route over this scan path: the
 * candidates the path does not already enforce through an index or TID
 * condition.  (plan.c makes the final choice from the scan's Filter.)
 */
static int
path_selection_count(PlannerInfo *root, RelOptInfo *rel, Path *path,
					 int user_level)
{
	List	   *enforced = path_index_clauses(path);
	int			n = 0;
	ListCell   *lc;

	foreach(lc, rel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);

		if (!list_member_ptr(enforced, rinfo) &&
			EddyClauseIsCandidate(root, rinfo, user_level))
			n++;
	}
	return n;
}

static int
partial_cost_cmp(const ListCell *a, const ListCell *b)
{
	Cost		ca = ((Path *) lfirst(a))->total_cost;
	Cost		cb = ((Path *) lfirst(b))->total_cost;

	return (ca > cb) - (ca < cb);
}

static void
eddy_set_rel_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti,
					  RangeTblEntry *rte)
{
	const char *reason;
	int			user_level;
	int			ncandidates = 0;
	ListCell   *lc;
	PathTarget *exact_target;
	PathTarget *physical_target;
	List	   *new_pathlist = NIL;
	int			neddies = 0;

	if (prev_set_rel_pathlist_hook)
		prev_set_rel_pathlist_hook(root, rel, rti, rte);

	if (!eddy_enabled)
		return;
	if (rel->reloptkind != RELOPT_BASEREL || rte->rtekind != RTE_RELATION)
		return;
	/* multi-relation blocks are joins, not selection-only eddies */
	if (bms_membership(root->all_baserels) != BMS_SINGLETON)
		return;
	if (rel->baserestrictinfo == NIL || IS_DUMMY_REL(rel))
		return;

	user_level = EddyUserSecurityLevel(rel->baserestrictinfo);
	foreach(lc, rel->baserestrictinfo)
	{
		if (EddyClauseIsCandidate(root, lfirst_node(RestrictInfo, lc), user_level))
			ncandidates++;
	}
	if (ncandidates < 2)
	{
		elog(DEBUG1, "eddy: not used for relation \"%s\": fewer than two selection operators",
			 get_rel_name(rte->relid));
		return;
	}
	if (ncandidates > EDDY_MAX_SELECTIONS)
	{
		elog(DEBUG1, "eddy: not used for relation \"%s\": %d selection operators, more than the maximum of %d",
			 get_rel_name(rte->relid), ncandidates, EDDY_MAX_SELECTIONS);
		return;
	}
	reason = eddy_unsupported_reason(root, rel, rti, rte);
	if (reason != NULL)
	{
		elog(DEBUG1, "eddy: not used for relation \"%s\": %s",
			 get_rel_name(rte->relid), reason);
		return;
	}
	if (!EddyExtensionCreated())
		return;

	source_targets(root, rel, user_level, &exact_target, &physical_target);

	foreach(lc, rel->pathlist)
	{
		Path	   *child = (Path *) lfirst(lc);

		/*
		 * Parameterized paths (not used by a single-relation block) and paths
		 * whose index enforces all but one predicate stay as they are.
		 */
		if (child->param_info != NULL ||
			path_selection_count(root, rel, child, user_level) < 2)
		{
			new_pathlist = lappend(new_pathlist, child);
			continue;
		}
		/* an index-only scan cannot return heap tuples */
		neddies++;
		new_pathlist = lappend(new_pathlist,
							   EddyCreatePath(root, rel, child,
											  (physical_target != NULL &&
											   child->pathtype != T_IndexOnlyScan) ?
											  physical_target : exact_target));
	}
	if (neddies == 0)
	{
		elog(DEBUG1, "eddy: not used for relation \"%s\": its scans enforce the predicates in an index",
			 get_rel_name(rte->relid));
		return;
	}
	rel->pathlist = new_pathlist;

	/* partial paths get partial eddies in the same way (parallel.c) */
	new_pathlist = NIL;
	if (rel->consider_parallel)
	{
		foreach(lc, rel->partial_pathlist)
		{
			Path	   *child = (Path *) lfirst(lc);

			if (!child->parallel_aware || !child->parallel_safe ||
				child->param_info != NULL)
				continue;		/* a Gather over it would bypass the eddy */
			if (path_selection_count(root, rel, child, user_level) < 2)
			{
				new_pathlist = lappend(new_pathlist, child);
				continue;
			}
			new_pathlist = lappend(new_pathlist,
								   EddyCreatePath(root, rel, child,
												  (physical_target != NULL &&
												   child->pathtype != T_IndexOnlyScan) ?
												  physical_target : exact_target));
		}
	}
	/* kept cheapest first, as add_partial_path keeps it */
	list_sort(new_pathlist, partial_cost_cmp);
	rel->partial_pathlist = new_pathlist;
}

/* ----------------------------------------------------------------
 *		Join blocks
 * ----------------------------------------------------------------
 */

/*
 * Why the block joining initial_rels cannot be an eddy, or NULL if it can:
 * every relation must be a base relation of this query level, inner-joined
 * or the single inner relation of a semi or anti join (EddySemiJoinRel; the
 * eddy reaches it by an index semi or anti join, semijoin.c), not the
 * target of a data-modifying statement, with no row marks and no LATERAL
 * references.  *special is set when the block is refused for its special
 * joins alone: its inner-join sub-blocks may still be eddies (below).
 */
static const char *
eddy_join_unsupported_reason(PlannerInfo *root, RelOptInfo *joinrel,
							 List *initial_rels, bool *special)
{
	ListCell   *lc;

	*special = false;
	if (list_length(initial_rels) > eddy_max_sources)
		return "more relations than eddy.max_sources";
	if (root->rowMarks != NIL)
		return "the query has row marks (FOR UPDATE/SHARE or a data-modifying statement)";
	if (root->hasLateralRTEs)
		return "the query has LATERAL references";
	foreach(lc, initial_rels)
	{
		RelOptInfo *rel = lfirst(lc);

		if (rel->reloptkind != RELOPT_BASEREL)
			return "a member is not a base relation (join_collapse_limit or from_collapse_limit)";
		if (root->parse->resultRelation == (int) rel->relid)
			return "a relation is the target of a data-modifying statement";
		if (!bms_is_empty(rel->lateral_relids) || !bms_is_empty(rel->lateral_referencers))
			return "a relation has LATERAL references";
		if (IS_DUMMY_REL(rel))
			return "a relation is proven empty";
	}
	if (IS_DUMMY_REL(joinrel))
		return "the join is proven empty";
	foreach(lc, root->join_info_list)
	{
		SpecialJoinInfo *sjinfo = lfirst(lc);

		if (!bms_overlap(sjinfo->min_lefthand, joinrel->relids) &&
			!bms_overlap(sjinfo->min_righthand, joinrel->relids) &&
			!bms_overlap(sjinfo->syn_lefthand, joinrel->relids) &&
			!bms_overlap(sjinfo->syn_righthand, joinrel->relids))
			continue;
		if (EddySemiJoinRel(root, sjinfo) == 0)
		{
			*special = true;
			return "the block has outer joins, or semi or anti joins of more than one relation";
		}
	}
	return NULL;
}

/* ----------------------------------------------------------------
 *		Sub-blocks
 *
 * A block refused for its special joins alone (outer joins, or semi or
 * anti joins of more than one relation: TPC-H Q13 and Q20) may hold
 * inner-join sub-blocks below them: the joins PostgreSQL's plan makes
 * among relations on one side of every such join.  Each maximal one of at
 * least two relations in the plans PostgreSQL keeps for the block becomes
 * an eddy (plan_join.c, as a whole block is), the special joins staying
 * PostgreSQL's above it.  A join in the plan is such a sub-block when
 *
 *	 - it is its relation's cheapest path, unparameterized, unsorted (no
 *	   pathkeys, which a merge join or the ORDER BY above may rely on) and
 *	   not inside a Gather (a partial path: each worker would run the whole
 *	   eddy), nor on the inner side of a nested loop, which rescans it for
 *	   every outer row where PostgreSQL's hash join keeps its table; a
 *	   Material, Sort or Unique above it is fine;
 *	 - every special join it overlaps is either inside it and one the eddy
 *	   makes (EddySemiJoinRel) or wholly above it: the sub-block lies within
 *	   one of the join's sides;
 *	 - its relations pass the block's other checks.
 *
 * The eddy takes the cost of the path it replaces (it is that join
 * relation's cheapest; one that runs joins below a Gather, which a serial
 * eddy costs more than, stays), so the plans above stay what PostgreSQL
 * chose.
 * Paths are copied on the way up where a child is replaced, never changed
 * in place: a sub-path may be shared by several of the block's paths.
 * ----------------------------------------------------------------
 */

/* Does every special join that overlaps relids lie inside it (one the eddy
 * makes) or wholly above it? */
static bool
special_joins_above(PlannerInfo *root, Relids relids)
{
	ListCell   *lc;

	foreach(lc, root->join_info_list)
	{
		SpecialJoinInfo *sjinfo = lfirst(lc);
		Relids		left = bms_union(sjinfo->min_lefthand, sjinfo->syn_lefthand);
		Relids		right = bms_union(sjinfo->min_righthand, sjinfo->syn_righthand);

		if (!bms_overlap(left, relids) && !bms_overlap(right, relids))
			continue;
		if (bms_is_subset(sjinfo->min_lefthand, relids) &&
			bms_is_subset(sjinfo->min_righthand, relids))
		{
			/* made inside the sub-block */
			if (EddySemiJoinRel(root, sjinfo) == 0)
				return false;
			continue;
		}
		/* above it: the sub-block lies within one side */
		if (bms_overlap(left, relids) && bms_overlap(right, relids))
			return false;
	}
	return true;
}

/* The eddy for join relation rel's cheapest path, or NULL */
static Path *
sub_block_eddy(PlannerInfo *root, RelOptInfo *rel)
{
	List	   *rels = NIL;
	const char *reason;
	bool		special;
	Path	   *path;
	Path	   *partial;
	int			relid = -1;

	while ((relid = bms_next_member(rel->relids, relid)) >= 0)
	{
		if (relid >= root->simple_rel_array_size ||
			root->simple_rel_array[relid] == NULL)
			return NULL;
		rels = lappend(rels, root->simple_rel_array[relid]);
	}
	if (!special_joins_above(root, rel->relids))
		return NULL;
	/* its special joins were checked above: they are the block's */
	reason = eddy_join_unsupported_reason(root, rel, rels, &special);
	if (reason != NULL && !special)
	{
		elog(DEBUG1, "eddy: sub-block of %d relations not used: %s",
			 list_length(rels), reason);
		return NULL;
	}
	elog(DEBUG1, "eddy: sub-block of %d relations below the block's special joins",
		 list_length(rels));
	path = EddyCreateJoinPath(root, rel, rels, true, &partial);
	return path;				/* a partial twin is not used below a serial join */
}

/* A flat copy of a path node, whose children may then be replaced */
static Path *
copy_path_node(Path *path, Size size)
{
	Path	   *copy = palloc(size);

	memcpy(copy, path, size);
	return copy;
}

/*
 * path with its maximal inner-join sub-blocks made eddies (header), a copy
 * where anything below changed; *made counts them.  rescanned: path is on
 * the inner side of a nested loop.
 */
static Path *
eddy_sub_blocks(PlannerInfo *root, Path *path, bool rescanned, int *made)
{
	check_stack_depth();
	switch (nodeTag(path))
	{
		case T_NestPath:
		case T_HashPath:
		case T_MergePath:
			{
				JoinPath   *jpath = (JoinPath *) path;
				Path	   *outer;
				Path	   *inner;
				Size		size;

				if (!rescanned && path == path->parent->cheapest_total_path &&
					path->param_info == NULL && path->pathkeys == NIL &&
					!path->parallel_aware &&
					path->pathtarget == path->parent->reltarget &&
					bms_num_members(path->parent->relids) >= 2)
				{
					Path	   *eddy = sub_block_eddy(root, path->parent);

					/* not where it costs more: a Gather inside the join */
					if (eddy != NULL && eddy->total_cost <= path->total_cost)
					{
						(*made)++;
						return eddy;
					}
				}
				outer = eddy_sub_blocks(root, jpath->outerjoinpath, rescanned, made);
				inner = eddy_sub_blocks(root, jpath->innerjoinpath,
										rescanned || IsA(path, NestPath), made);
				if (outer == jpath->outerjoinpath && inner == jpath->innerjoinpath)
					return path;
				size = IsA(path, NestPath) ? sizeof(NestPath) :
					IsA(path, HashPath) ? sizeof(HashPath) : sizeof(MergePath);
				jpath = (JoinPath *) copy_path_node(path, size);
				jpath->outerjoinpath = outer;
				jpath->innerjoinpath = inner;
				return (Path *) jpath;
			}
		case T_MaterialPath:
		case T_UniquePath:
		case T_SortPath:
			{
				/* one input: replaced in a copy of the node */
				Size		size;
				Size		offset;
				bool		sub_rescanned = rescanned;
				Path	   *sub;
				Path	   *copy;

				if (IsA(path, MaterialPath))
				{
					size = sizeof(MaterialPath);
					offset = offsetof(MaterialPath, subpath);
					/* a Material reads its input once, however often rescanned */
					sub_rescanned = false;
				}
				else if (IsA(path, UniquePath))
				{
					size = sizeof(UniquePath);
					offset = offsetof(UniquePath, subpath);
				}
				else
				{
					size = sizeof(SortPath);
					offset = offsetof(SortPath, subpath);
				}
				sub = *(Path **) ((char *) path + offset);
				sub = eddy_sub_blocks(root, sub, sub_rescanned, made);
				if (sub == *(Path **) ((char *) path + offset))
					return path;
				copy = copy_path_node(path, size);
				*(Path **) ((char *) copy + offset) = sub;
				return copy;
			}
		default:
			/* scans, Gather (partial paths below), Memoize, Append, ... */
			return path;
	}
}

static RelOptInfo *
eddy_join_search(PlannerInfo *root, int levels_needed, List *initial_rels)
{
	RelOptInfo *final_rel;
	const char *reason;
	Path	   *path;
	Path	   *partial;
	bool		special;

	if (prev_join_search_hook)
		final_rel = prev_join_search_hook(root, levels_needed, initial_rels);
	else if (enable_geqo && levels_needed >= geqo_threshold)
		final_rel = geqo(root, levels_needed, initial_rels);
	else
		final_rel = standard_join_search(root, levels_needed, initial_rels);

	if (!eddy_enabled || final_rel == NULL)
		return final_rel;
	reason = eddy_join_unsupported_reason(root, final_rel, initial_rels, &special);
	if (reason != NULL)
	{
		elog(DEBUG1, "eddy: join of %d relations not used: %s",
			 list_length(initial_rels), reason);
		if (special && EddyExtensionCreated())
		{
			int			made = 0;
			ListCell   *lc;

			foreach(lc, final_rel->pathlist)
				lfirst(lc) = eddy_sub_blocks(root, lfirst(lc), false, &made);
			if (made > 0)
				set_cheapest(final_rel);
		}
		return final_rel;
	}
	if (!EddyExtensionCreated())
		return final_rel;

	path = EddyCreateJoinPath(root, final_rel, initial_rels, false, &partial);
	if (path == NULL && partial == NULL)
		return final_rel;

	/*
	 * The eddy replaces PostgreSQL's plans; where only its partial twin was
	 * made (the serial eddy's state would not fit), PostgreSQL's serial
	 * plans stay beside it and a Gather over the twin must beat them.
	 */
	if (path != NULL)
		final_rel->pathlist = list_make1(path);
	final_rel->partial_pathlist = partial != NULL ? list_make1(partial) : NIL;
	set_cheapest(final_rel);
	return final_rel;
}
