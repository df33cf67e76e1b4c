/*-------------------------------------------------------------------------
 *
 * join_graph.c
 *	  The join graph of a join block: what PostgreSQL's plan enforces, the
 *	  candidate join edges, the spanning tree, the index joins, and the
 *	  path each scanned relation is read through.
 *
 * We read PostgreSQL's cheapest plan for the block (plan_join.c) for three
 * things:
 *
 *	 - the join clauses it enforces (every JoinPath's joinrestrictinfo and
 *	   every parameterized path's ppi_clauses): PostgreSQL has already chosen
 *	   a sufficient set from its equivalence classes, so we enforce exactly
 *	   those, no more;
 *	 - which joins it made as index nested loops (eddy.join_method = auto):
 *	   a parameterized index, index-only or bitmap heap scan on the inner
 *	   side (parameterized_index), unless the loop rests on a one-row
 *	   estimate the statistics clamped ("The one-row guard" below);
 *	 - the scan of each relation (its cheapest unparameterized path; not a
 *	   Gather in a block that runs once per outer row, EddySourcePath),
 *	   which becomes the eddy's source for it.
 *
 * Modules (the EddyJoins architecture of the overhead study, with the join
 * state held in STAIRs, VLDB 2004):
 *
 *	 - Hashable equalities between exactly two relations are join keys.
 *	   They are grouped by pair of relations into candidate edges, and a
 *	   spanning tree of the join graph is chosen (Kruskal: index nested loop
 *	   edges first, then the others in PostgreSQL's order).  A tree edge is a
 *	   join module: a symmetric hash join (two dual STAIRs on the two
 *	   relations' keys) or an index join into a relation PostgreSQL reached
 *	   through an index.  If the graph is disconnected, key-less edges
 *	   (cross products: every pair matches) connect its components, each
 *	   between the relations of fewest estimated rows on its two sides.
 *	 - Pseudoconstant clauses (outer parameters and constants only) are the
 *	   eddy's One-Time Filter, checked once per scan before any source is
 *	   read (PostgreSQL's gating Result, which a CustomScan of a join
 *	   relation does not get).
 *	 - Every other clause (non-hashable join clauses, clauses over three or
 *	   more relations, key clauses of edges outside the tree) is a
 *	   selection module, eligible once a tuple spans its relations.
 *	   Expensive restriction clauses of a scanned relation are
 *	   selections too, chosen as in selection eddies (the suffix of
 *	   PostgreSQL's order, plan.c); all restriction clauses of a relation
 *	   reached through an index are selections, since nothing scans it.
 *	 - A selection that may raise an error (clauses.c) over several
 *	   relations runs last, on complete tuples only: PostgreSQL evaluates it
 *	   at some join, on a superset of those tuples, so this can raise no
 *	   error PostgreSQL would not.  One over a single relation waits for the
 *	   selections on that relation PostgreSQL ran before it.
 *
 * A relation is the inner side of at most one index join; relations that
 * no index join reaches are scanned.  A tree always has at least one.
 *
 * The phases here (below "Path: the phases of EddyCreateJoinPath") work on
 * the EddyJoinPath under construction and local lists; none touches
 * PostgreSQL's paths.  The helpers above them (relation indexes, the
 * walkers of PostgreSQL's plan, keys, edges and their sides, uniqueness
 * of a probe) serve the other files of the join planner as well.
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

/* Index of the block relation with this relid, or -1 */
int
EddyRelIndex(EddyJoinPath *jp, Index relid)
{
	int			i;

	for (i = 0; i < jp->nrels; i++)
		if (jp->rels[i]->relid == relid)
			return i;
	return -1;
}

/* Bitmap (over relation indexes) of the relids */
uint32
EddyRelMask(EddyJoinPath *jp, Relids relids)
{
	uint32		mask = 0;
	int			x = -1;

	while ((x = bms_next_member(relids, x)) >= 0)
	{
		int			i = EddyRelIndex(jp, x);

		if (i >= 0)
			mask |= 1u << i;
	}
	return mask;
}

typedef struct NestLoopIndex
{
	Relids		outer_relids;
	IndexPath  *inner;
	double		outer_rows;		/* PostgreSQL's estimate of the outer side */
	Cost		inner_cost;		/* ... and of one loop of the inner side */
} NestLoopIndex;

/*
 * The join clauses a parameterized path of an appendrel (inheritance,
 * partitioning, UNION ALL) enforces.  Its ParamPathInfo lists none: each
 * child enforces them, translated to the child.  They are the parent's join
 * clauses that the parameterization allows to move into the rel, and the
 * equivalence-class equalities between the rel and its required outer rels.
 */
static List *
appendrel_param_clauses(PlannerInfo *root, Path *path)
{
	RelOptInfo *rel = path->parent;
	Relids		outer = PATH_REQ_OUTER(path);
	Relids		joinrelids = bms_union(rel->relids, outer);
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, rel->joininfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);

		if (join_clause_is_movable_into(rinfo, rel->relids, joinrelids))
			result = lappend(result, rinfo);
	}
	return list_concat(result,
					   generate_join_implied_equalities(root, joinrelids, outer, rel));
}

/*
 * The input of a path that only wraps one (Material, Memoize, Sort,
 * Incremental Sort, Gather, Gather Merge, Projection), or NULL: what the
 * walkers of PostgreSQL's plan below look through.
 */
Path *
EddyWrappedPath(Path *path)
{
	switch (nodeTag(path))
	{
		case T_MaterialPath:
			return ((MaterialPath *) path)->subpath;
		case T_MemoizePath:
			return ((MemoizePath *) path)->subpath;
		case T_SortPath:
		case T_IncrementalSortPath:
			return ((SortPath *) path)->subpath;
		case T_GatherPath:
			return ((GatherPath *) path)->subpath;
		case T_GatherMergePath:
			return ((GatherMergePath *) path)->subpath;
		case T_ProjectionPath:
			return ((ProjectionPath *) path)->subpath;
		default:
			return NULL;
	}
}

/*
 * The index a parameterized inner path of a nested loop probes per outer
 * row, or NULL: an index or index-only scan's, or a bitmap heap scan's
 * parameterized bitmap index scan (alone, or one of a BitmapAnd's; an
 * index join reaches the same rows through the same index, one index scan
 * per probe where PostgreSQL builds a bitmap).
 */
static Path *
parameterized_index(Path *inner)
{
	ListCell   *lc;

	if (inner->param_info == NULL)
		return NULL;
	if (IsA(inner, IndexPath))
		return inner;
	if (!IsA(inner, BitmapHeapPath))
		return NULL;
	inner = ((BitmapHeapPath *) inner)->bitmapqual;
	if (IsA(inner, IndexPath))
		return inner->param_info != NULL ? inner : NULL;
	if (IsA(inner, BitmapAndPath))
	{
		foreach(lc, ((BitmapAndPath *) inner)->bitmapquals)
		{
			Path	   *q = lfirst(lc);

			if (IsA(q, IndexPath) && q->param_info != NULL)
				return q;
		}
	}
	return NULL;
}

/*
 * Collect the clauses PostgreSQL's plan enforces at and above the scans
 * (top down), the same clauses in the order it evaluates them on a tuple
 * (evalorder: below before above; at one join, its hash or merge clauses,
 * then the rest by cost), and its index nested loops.
 */
static void
collect_path_clauses(PlannerInfo *root, Path *path, List **clauses, List **evalorder,
					 List **nestloops, List **preferred)
{
	check_stack_depth();

	if (path->param_info)
	{
		*clauses = list_concat_unique_ptr(*clauses, path->param_info->ppi_clauses);
		if (IsA(path, AppendPath) || IsA(path, MergeAppendPath))
			*clauses = list_concat_unique_ptr(*clauses,
											  appendrel_param_clauses(root, path));
	}

	switch (nodeTag(path))
	{
		case T_NestPath:
		case T_MergePath:
		case T_HashPath:
			{
				JoinPath   *jp = (JoinPath *) path;
				List	   *first = NIL;

				*clauses = list_concat_unique_ptr(*clauses, jp->joinrestrictinfo);
				/* the clauses PostgreSQL joins on: preferred tree edges */
				if (IsA(path, HashPath))
					*preferred = list_concat(*preferred, ((HashPath *) path)->path_hashclauses);
				else if (IsA(path, MergePath))
					*preferred = list_concat(*preferred, ((MergePath *) path)->path_mergeclauses);
				if (IsA(path, NestPath))
				{
					Path	   *inner = jp->innerjoinpath;
					Cost		inner_cost = inner->total_cost;

					/* a nested loop joins on its filters and its inner's parameters */
					*preferred = list_concat(*preferred, jp->joinrestrictinfo);
					if (inner->param_info != NULL)
						*preferred = list_concat(*preferred, inner->param_info->ppi_clauses);

					if (IsA(inner, MemoizePath))
						inner = ((MemoizePath *) inner)->subpath;
					inner_cost = inner->total_cost;
					inner = parameterized_index(inner);
					if (inner != NULL)
					{
						NestLoopIndex *nl = palloc(sizeof(NestLoopIndex));

						nl->outer_relids = jp->outerjoinpath->parent->relids;
						nl->inner = (IndexPath *) inner;
						nl->outer_rows = jp->outerjoinpath->rows;
						nl->inner_cost = inner_cost;
						*nestloops = lappend(*nestloops, nl);
					}
				}
				collect_path_clauses(root, jp->outerjoinpath, clauses, evalorder, nestloops, preferred);
				collect_path_clauses(root, jp->innerjoinpath, clauses, evalorder, nestloops, preferred);
				if (IsA(path, HashPath))
					first = ((HashPath *) path)->path_hashclauses;
				else if (IsA(path, MergePath))
					first = ((MergePath *) path)->path_mergeclauses;
				*evalorder = list_concat_unique_ptr(*evalorder, first);
				*evalorder = list_concat_unique_ptr(*evalorder,
													EddyOrderQualClauses(root,
																		 list_difference_ptr(jp->joinrestrictinfo, first)));
			}
			break;
		default:
			/* a wrapper's input; a scan's restrictions stay with it */
			if (EddyWrappedPath(path) != NULL)
				collect_path_clauses(root, EddyWrappedPath(path), clauses, evalorder,
									 nestloops, preferred);
			break;
	}
	/* a parameterized path enforces these join clauses itself */
	if (path->param_info)
	{
		List	   *ppi = list_copy(path->param_info->ppi_clauses);

		if (IsA(path, AppendPath) || IsA(path, MergeAppendPath))
			ppi = list_concat_unique_ptr(ppi, appendrel_param_clauses(root, path));
		*evalorder = list_concat_unique_ptr(*evalorder, EddyOrderQualClauses(root, ppi));
	}
}

/*
 * The order in which PostgreSQL's plan consumes the relations: a hash
 * join's inner (build) side before its outer side, otherwise outer first.
 */
static void
build_order(EddyJoinPath *jp, Path *path, List **order)
{
	check_stack_depth();
	switch (nodeTag(path))
	{
		case T_HashPath:
			build_order(jp, ((JoinPath *) path)->innerjoinpath, order);
			build_order(jp, ((JoinPath *) path)->outerjoinpath, order);
			return;
		case T_NestPath:
		case T_MergePath:
			build_order(jp, ((JoinPath *) path)->outerjoinpath, order);
			build_order(jp, ((JoinPath *) path)->innerjoinpath, order);
			return;
		default:
			if (EddyWrappedPath(path) != NULL)
			{
				build_order(jp, EddyWrappedPath(path), order);
				return;
			}
			{
				int			i = EddyRelIndex(jp, path->parent->relid);

				if (path->parent->reloptkind == RELOPT_BASEREL && i >= 0 &&
					!list_member_int(*order, i))
					*order = lappend_int(*order, i);
			}
			return;
	}
}

/*
 * Is rinfo a join key: a hashable equality between one column expression
 * of each of two distinct relations of the block?
 */
bool
EddyIsKeyClause(EddyJoinPath *jp, RestrictInfo *rinfo, int *left, int *right)
{
	if (rinfo->pseudoconstant || !OidIsValid(rinfo->hashjoinoperator))
		return false;
	if (!IsA(rinfo->clause, OpExpr) || list_length(((OpExpr *) rinfo->clause)->args) != 2)
		return false;
	if (bms_membership(rinfo->left_relids) != BMS_SINGLETON ||
		bms_membership(rinfo->right_relids) != BMS_SINGLETON)
		return false;
	*left = EddyRelIndex(jp, bms_singleton_member(rinfo->left_relids));
	*right = EddyRelIndex(jp, bms_singleton_member(rinfo->right_relids));
	return *left >= 0 && *right >= 0 && *left != *right;
}

JoinEdge *
EddyFindEdge(List *edges, int a, int b)
{
	ListCell   *lc;

	if (a > b)
	{
		int			t = a;

		a = b;
		b = t;
	}
	foreach(lc, edges)
	{
		JoinEdge   *e = lfirst(lc);

		if (e->a == a && e->b == b)
			return e;
	}
	return NULL;
}

/* The expression of clause on relation r's side (r's relid is relid) */
Node *
EddyClauseSide(RestrictInfo *rinfo, Index relid)
{
	OpExpr	   *op = (OpExpr *) rinfo->clause;

	return bms_is_member(relid, rinfo->left_relids) ? linitial(op->args) : lsecond(op->args);
}

/*
 * Can edge e be an index join into relation `into` through `index`?  Sets
 * index_clauses/index_cols to the clauses whose `into` side is a plain
 * column that is a key column of the index, with an operator of that
 * column's operator family (after commuting to "column op value").
 */
bool
EddyEdgeIndexUsable(EddyJoinPath *jp, JoinEdge *e, int into, IndexOptInfo *index)
{
	RelOptInfo *rel = jp->rels[into];
	ListCell   *lc;
	List	   *clauses = NIL;
	List	   *cols = NIL;
	bool		leading = false;

	if (index->relam != BTREE_AM_OID && index->relam != HASH_AM_OID)
		return false;
	if (!index->amhasgettuple || index->indpred != NIL)
		return false;
	foreach(lc, e->clauses)
	{
		RestrictInfo *rinfo = lfirst(lc);
		Node	   *mine = EddyClauseSide(rinfo, rel->relid);
		OpExpr	   *op = (OpExpr *) rinfo->clause;
		Oid			opno = op->opno;
		int			col;

		if (IsA(mine, RelabelType))
			mine = (Node *) ((RelabelType *) mine)->arg;
		if (!IsA(mine, Var) || ((Var *) mine)->varattno <= 0)
			continue;
		if (!bms_is_member(rel->relid, rinfo->left_relids))
			opno = get_commutator(opno);
		if (!OidIsValid(opno))
			continue;
		for (col = 0; col < index->nkeycolumns; col++)
		{
			if (index->indexkeys[col] == ((Var *) mine)->varattno &&
				op_in_opfamily(opno, index->opfamily[col]) &&
				get_op_opfamily_strategy(opno, index->opfamily[col]) ==
				(index->relam == BTREE_AM_OID ? BTEqualStrategyNumber : HTEqualStrategyNumber))
				break;
		}
		if (col >= index->nkeycolumns)
			continue;
		if (col == 0)
			leading = true;
		clauses = lappend(clauses, rinfo);
		cols = lappend_int(cols, col + 1);
	}
	/* a hash index needs every key column; a btree at least the leading one */
	if (!leading || (index->relam == HASH_AM_OID && list_length(clauses) < index->nkeycolumns))
		return false;
	e->index_into = into;
	e->index = index;
	e->index_clauses = clauses;
	e->index_cols = cols;
	return true;
}

/* May relation i be reached through an index (nothing scans it)? */
bool
EddyRelIndexJoinable(PlannerInfo *root, EddyJoinPath *jp, int i)
{
	RelOptInfo *rel = jp->rels[i];
	RangeTblEntry *rte = planner_rt_fetch(rel->relid, root);
	ListCell   *lc;

	if (rte->rtekind != RTE_RELATION || rte->inh || rte->relkind != RELKIND_RELATION ||
		rte->tablesample != NULL)
		return false;
	/* it must provide plain columns only */
	foreach(lc, rel->reltarget->exprs)
	{
		Var		   *var = lfirst(lc);

		if (!IsA(var, Var) || var->varattno <= 0)
			return false;
	}
	foreach(lc, rel->baserestrictinfo)
	{
		List	   *vars = pull_var_clause((Node *) lfirst_node(RestrictInfo, lc)->clause,
										   PVC_INCLUDE_PLACEHOLDERS);
		ListCell   *lc2;

		foreach(lc2, vars)
		{
			Var		   *var = lfirst(lc2);

			if (!IsA(var, Var) || var->varattno <= 0)
				return false;
		}
	}
	return true;
}

static int
edge_selectivity_cmp(const ListCell *a, const ListCell *b)
{
	JoinEdge   *ea = lfirst(a);
	JoinEdge   *eb = lfirst(b);

	if (ea->selectivity < eb->selectivity)
		return -1;
	if (ea->selectivity > eb->selectivity)
		return 1;
	return 0;
}

/*
 * Relations on the given side of tree edge e: those connected to endpoint
 * `from` by tree edges other than e.
 */
uint32
EddyTreeSide(EddyJoinPath *jp, JoinEdge *e, int from)
{
	uint32		seen = 1u << from;
	bool		grew = true;

	while (grew)
	{
		ListCell   *lc;

		grew = false;
		foreach(lc, jp->edges)
		{
			JoinEdge   *f = lfirst(lc);

			if (f == e)
				continue;
			if ((seen & (1u << f->a)) && !(seen & (1u << f->b)))
			{
				seen |= 1u << f->b;
				grew = true;
			}
			else if ((seen & (1u << f->b)) && !(seen & (1u << f->a)))
			{
				seen |= 1u << f->a;
				grew = true;
			}
		}
	}
	return seen;
}

static int
uf_find(int *parent, int x)
{
	while (parent[x] != x)
		x = parent[x] = parent[parent[x]];
	return x;
}

/*
 * Does a path of this type compute its own target list (a scan of one
 * relation, private.h)?  Append, Gather, Result, ... return their input.
 */
bool
EddyPathProjects(Path *path)
{
	return EddyIsRelationScan(path->pathtype);
}

/*
 * Will the block run once for each row of a query above it: does its query
 * level, or one above it, take parameters from the level above (a
 * correlated subquery, a LATERAL one)?  The parameters a subquery needs are
 * collected in the plan_params of the level they come from while the
 * subquery is planned (subselect.c), and a subquery of a subquery that runs
 * once per row runs at least as often.
 */
static bool
block_rescanned(PlannerInfo *root)
{
	PlannerInfo *p;

	for (p = root->parent_root; p != NULL; p = p->parent_root)
		if (p->plan_params != NIL)
			return true;
	return false;
}

static bool
is_gather(Path *path)
{
	return IsA(path, GatherPath) || IsA(path, GatherMergePath);
}

/*
 * The source path of a scanned relation: its cheapest unparameterized path,
 * or, when the eddy needs columns beyond the relation's target, the
 * cheapest unparameterized one that computes its target list (a Gather or
 * an Append returns what its children return, nothing more); for a
 * parallel eddy, the cheapest parallel-safe one (not a Gather).  In a block
 * that runs once per outer row (rescanned), a Gather only where no other
 * path will do: a rescanned eddy reads every source again each time, and a
 * Gather launches its workers again each time (the planner costs one
 * launch; with parallel_setup_cost = 0, the fuzzer's seed 1201 found an
 * EXISTS whose eddy launched 1,200 workers in 300 loops, where PostgreSQL's
 * nested loop kept one of its two Gathers under a Material).
 */
Path *
EddySourcePath(RelOptInfo *rel, bool needs_projection, bool parallel_safe,
			bool rescanned)
{
	Path	   *best = NULL;
	Path	   *best_gather = NULL;
	ListCell   *lc;

	if (rel->cheapest_total_path != NULL &&
		rel->cheapest_total_path->param_info == NULL &&
		(!needs_projection || EddyPathProjects(rel->cheapest_total_path)) &&
		(!parallel_safe || rel->cheapest_total_path->parallel_safe) &&
		(!rescanned || !is_gather(rel->cheapest_total_path)))
		return rel->cheapest_total_path;
	foreach(lc, rel->pathlist)
	{
		Path	   *p = lfirst(lc);

		if (p->param_info != NULL || (needs_projection && !EddyPathProjects(p)) ||
			(parallel_safe && !p->parallel_safe))
			continue;
		if (rescanned && is_gather(p))
		{
			if (best_gather == NULL || p->total_cost < best_gather->total_cost)
				best_gather = p;
			continue;
		}
		if (best == NULL || p->total_cost < best->total_cost)
			best = p;
	}
	return best != NULL ? best : best_gather;
}

/* ----------------------------------------------------------------
 *		Path: the phases of EddyCreateJoinPath (plan_join.c)
 *
 * Every phase works on the EddyJoinPath under construction and local
 * lists; none touches PostgreSQL's paths.  Only the driver's last step
 * (make_join_path, plan_join.c), once every check and gate has passed,
 * gives the source paths the eddy's target lists, so a block that falls
 * back to the vanilla plan leaves it as it was.
 * ----------------------------------------------------------------
 */

/*
 * The clauses PostgreSQL's cheapest plan enforces (returned), in the order
 * it evaluates them (jp->clause_order), its index nested loops, the clauses
 * it joins on, and the order in which it consumes the relations
 * (jp->source_order, completed with any relation it does not reach).
 */
List *
EddyCollectClausesAndOrder(PlannerInfo *root, EddyJoinPath *jp, Path *cheapest,
						  List **nestloops, List **preferred)
{
	List	   *clauses = NIL;
	int			i;

	jp->clause_order = NIL;
	collect_path_clauses(root, cheapest, &clauses, &jp->clause_order,
						 nestloops, preferred);
	build_order(jp, cheapest, &jp->source_order);
	for (i = 0; i < jp->nrels; i++)
		if (!list_member_int(jp->source_order, i))
			jp->source_order = lappend_int(jp->source_order, i);
	return clauses;
}

/*
 * Sort the clauses into candidate key edges (returned: hashable equalities
 * grouped by pair of relations; an edge is preferred when PostgreSQL joins
 * on one of its clauses) and selections (appended to *selections).
 */
List *
EddyClassifyClauses(EddyJoinPath *jp, List *clauses, List *preferred,
				 List **selections)
{
	List	   *candidates = NIL;
	ListCell   *lc;

	foreach(lc, clauses)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
		int			l,
					r;

		if (EddyIsKeyClause(jp, rinfo, &l, &r))
		{
			JoinEdge   *e = EddyFindEdge(candidates, l, r);

			if (e == NULL)
			{
				e = palloc0(sizeof(JoinEdge));
				e->a = Min(l, r);
				e->b = Max(l, r);
				e->index_into = -1;
				candidates = lappend(candidates, e);
			}
			e->clauses = lappend(e->clauses, rinfo);
			if (list_member_ptr(preferred, rinfo))
				e->preferred = true;
		}
		else
			*selections = lappend(*selections, rinfo);
	}
	return candidates;
}

/*
 * The one-row guard (eddy.one_row_guard): how many times more outer rows
 * than PostgreSQL estimated an index nested loop must be ready for, or 1
 * where its estimate is to be trusted.
 *
 * An index nested loop that is cheap only because an estimate says one row
 * is the classic disaster (issue 48).  PostgreSQL clamps a relation's rows
 * to one when its statistics say its filters leave nothing, and that is
 * what statistics taken before the data changed say of a value added since
 * (the misestimation workload's m36: segment = 10 of ms_customer_st,
 * estimated at 1 row, 42,000 rows: 42,000 bitmap scans of sales, 2.4 s,
 * where a hash join over a scan of sales takes 0.5 s).  Such an estimate
 * says nothing of how many rows there are.  So a base relation on the
 * outer side with a filter clause whose selectivity times its rows rounds
 * to no row by itself (under GUARD_MAX_RAW_ROWS: the statistics say no row
 * has the value), of GUARD_MIN_TUPLES rows or more, and with no
 * unique index pinned by equalities to constants (a key lookup's row is
 * certain) may return all of its rows: the outer side's estimate may be
 * its tuples over its rows times too small.  Estimates of one row that the
 * statistics make (one of many distinct values: 1/n of n rows) are trusted,
 * and so are products of clauses that each leave rows (m19: brand and
 * category, 100 rows each of 20,000, 0.44 together under independence:
 * made hash joins, 7.7 times PostgreSQL's time, for its few rows are right);
 * so are the relations the guard passes over: the relation the loop goes
 * into, a semi or anti join's.  A relation the guard makes scanned is
 * exempt from the gate "parameterized scan lost" (plan_join.c), which keeps
 * PostgreSQL's plan where the eddy would scan what it probes.
 * EXPLAIN: "One-Row Guard" names the relations scanned; DEBUG1 says which
 * estimate made each.
 */
#define GUARD_MIN_TUPLES	1000.0
#define GUARD_MAX_RAW_ROWS	0.5

static double
one_row_distrust(PlannerInfo *root, EddyJoinPath *jp, Relids outer_relids,
				 StringInfo why)
{
	double		factor = 1.0;
	int			relid = -1;

	while ((relid = bms_next_member(outer_relids, relid)) >= 0)
	{
		int			i = EddyRelIndex(jp, relid);
		RelOptInfo *rel;
		double		raw;
		ListCell   *lc;

		if (i < 0)
			continue;
		rel = jp->rels[i];
		if (rel->rows > 1.0 || rel->tuples < GUARD_MIN_TUPLES ||
			rel->baserestrictinfo == NIL)
			continue;
		/* the fewest rows one clause leaves by itself */
		raw = rel->tuples;
		foreach(lc, rel->baserestrictinfo)
			raw = Min(raw, clause_selectivity(root, (Node *) lfirst(lc), 0,
											  JOIN_INNER, NULL) * rel->tuples);
		if (raw >= GUARD_MAX_RAW_ROWS ||
			relation_has_unique_index_for(root, rel, NIL, NIL, NIL))
			continue;
		factor *= rel->tuples / Max(rel->rows, 1.0);
		appendStringInfo(why, "%s\"%s\" estimated at %g of %.0f rows",
						 why->len > 0 ? ", " : "",
						 get_rel_name(planner_rt_fetch(relid, root)->relid),
						 raw, rel->tuples);
	}
	return factor;
}

/*
 * Should PostgreSQL's index nested loop nl into relation `into` be a hash
 * join, its outer side between its estimate and `factor` times it?  The
 * choice of least regret: a hash join costs a scan of the relation (its
 * cheapest path) and a hash table entry per row whatever comes, and at
 * worst regrets that much less the index join's cost at the estimate; the
 * index join costs one loop of PostgreSQL's inner path per outer row, and
 * at worst regrets its cost at factor times the estimate less the hash
 * join's.  A hash join's worst is bounded by the scan, an index join's
 * grows with the rows nobody predicted.
 */
static bool
one_row_guard_prefers_hash(EddyJoinPath *jp, NestLoopIndex *nl, int into, double factor)
{
	RelOptInfo *rel = jp->rels[into];
	Cost		hash;
	Cost		index_regret;
	Cost		hash_regret;

	if (rel->cheapest_total_path == NULL)
		return false;
	hash = rel->cheapest_total_path->total_cost +
		rel->rows * (cpu_tuple_cost + cpu_operator_cost);
	index_regret = nl->outer_rows * factor * nl->inner_cost - hash;
	hash_regret = hash - nl->outer_rows * nl->inner_cost;
	return index_regret > hash_regret;
}

/*
 * eddy.join_method = auto: the candidate edges PostgreSQL's plan joins by an
 * index nested loop become index joins into the same relation, when the
 * eddy can use that index (and the one-row guard, above, does not make it a
 * hash join: the edge is then still one PostgreSQL joins on, first in the
 * spanning tree).
 */
void
EddyMarkNestLoopIndexJoins(PlannerInfo *root, EddyJoinPath *jp, List *candidates,
						  List *nestloops)
{
	ListCell   *lc;

	if (eddy_join_method != EDDY_JOIN_AUTO && eddy_join_method != EDDY_JOIN_HYBRID)
		return;
	foreach(lc, nestloops)
	{
		NestLoopIndex *nl = lfirst(lc);
		int			into = EddyRelIndex(jp, nl->inner->path.parent->relid);
		Relids		req = PATH_REQ_OUTER(&nl->inner->path);
		int			from;
		JoinEdge   *e;

		if (into < 0 || bms_membership(req) != BMS_SINGLETON)
			continue;
		from = EddyRelIndex(jp, bms_singleton_member(req));
		if (from < 0 || !EddyRelIndexJoinable(root, jp, into))
			continue;
		e = EddyFindEdge(candidates, from, into);
		if (e != NULL && e->index_into < 0 &&
			EddyEdgeIndexUsable(jp, e, into, nl->inner->indexinfo))
		{
			e->from_nestloop = true;
			if (eddy_one_row_guard && jp->jointype[into] == JOIN_INNER &&
				jp->jointype[from] == JOIN_INNER)
			{
				StringInfoData why;
				double		factor;

				initStringInfo(&why);
				factor = one_row_distrust(root, jp, nl->outer_relids, &why);
				if (factor > 1.0 &&
					one_row_guard_prefers_hash(jp, nl, into, factor))
				{
					elog(DEBUG1, "eddy: index nested loop into relation \"%s\" made a hash join (eddy.one_row_guard): its outer side rests on %s",
						 get_rel_name(planner_rt_fetch(jp->rels[into]->relid, root)->relid),
						 why.data);
					e->index_into = -1;
					e->index = NULL;
					e->index_clauses = NIL;
					e->index_cols = NIL;
					jp->guarded[into] = true;
				}
				pfree(why.data);
			}
		}
	}
}

/*
 * The spanning tree (returned, in the order its edges were chosen):
 * PostgreSQL's index nested loops first, then the edges it joins on, then
 * the rest (for cyclic queries); within each pass the most selective edges
 * first, so that a many-to-many edge closing a cycle stays a selection
 * rather than multiplying intermediate tuples.  A relation is the inner
 * side of at most one index join (incoming[] counts them).  Disconnected
 * components are joined by cross products (key-less edges); the key
 * clauses of candidate edges outside the tree become selections.
 */
List *
EddyChooseSpanningTree(PlannerInfo *root, EddyJoinPath *jp, List *candidates,
					 int *incoming, List **selections)
{
	List	   *edges = NIL;
	int		   *uf;
	int			i;
	ListCell   *lc;

	foreach(lc, candidates)
	{
		JoinEdge   *e = lfirst(lc);

		e->selectivity = clauselist_selectivity(root, e->clauses, 0, JOIN_INNER, NULL);
	}
	list_sort(candidates, edge_selectivity_cmp);
	uf = palloc(sizeof(int) * jp->nrels);
	for (i = 0; i < jp->nrels; i++)
		uf[i] = i;
	for (i = 0; i < 3; i++)
	{
		foreach(lc, candidates)
		{
			JoinEdge   *e = lfirst(lc);
			int			ra,
						rb;
			int			pass = e->from_nestloop ? 0 : e->preferred ? 1 : 2;

			if (pass != i)
				continue;
			ra = uf_find(uf, e->a);
			rb = uf_find(uf, e->b);
			if (ra == rb)
				continue;
			if (e->index_into >= 0 && incoming[e->index_into] > 0)
				e->index_into = -1; /* one index join into a relation */
			uf[ra] = rb;
			e->in_tree = true;
			if (e->index_into >= 0)
				incoming[e->index_into]++;
			edges = lappend(edges, e);
		}
	}
	/*
	 * Disconnected components: cross products (key-less edges), each between
	 * the relations of fewest estimated rows on its two sides.  Only tuples
	 * that span its sides' relations probe a cross product; a row of its end
	 * relations carries its side into it at once (a large fact table's end
	 * would have every tuple of the fact table probe it: the misestimation
	 * workload's m04, 30,192 probes of a one-row department where its
	 * category end takes 10).
	 */
	for (i = 1; i < jp->nrels; i++)
	{
		if (uf_find(uf, i) != uf_find(uf, 0))
		{
			JoinEdge   *e = palloc0(sizeof(JoinEdge));
			int			joined = uf_find(uf, 0);
			int			other = uf_find(uf, i);
			int			a = -1;
			int			b = -1;
			int			r;

			for (r = 0; r < jp->nrels; r++)
			{
				int			root_r = uf_find(uf, r);

				if (root_r == joined && (a < 0 || jp->rels[r]->rows < jp->rels[a]->rows))
					a = r;
				else if (root_r == other && (b < 0 || jp->rels[r]->rows < jp->rels[b]->rows))
					b = r;
			}
			e->a = a;
			e->b = b;
			e->index_into = -1;
			e->in_tree = true;
			uf[other] = joined;
			edges = lappend(edges, e);
		}
	}
	/* Key clauses of edges outside the tree are selections. */
	foreach(lc, candidates)
	{
		JoinEdge   *e = lfirst(lc);

		if (!e->in_tree)
			*selections = list_concat(*selections, e->clauses);
	}
	return edges;
}

/*
 * eddy.join_method = index: index joins on every tree edge where an index
 * allows, into end b rather than end a, one per relation.
 */
void
EddyChooseIndexJoins(PlannerInfo *root, EddyJoinPath *jp, List *edges, int *incoming)
{
	ListCell   *lc;

	if (eddy_join_method != EDDY_JOIN_INDEX)
		return;
	foreach(lc, edges)
	{
		JoinEdge   *e = lfirst(lc);
		int			side;

		if (e->clauses == NIL)
			continue;
		for (side = 1; side >= 0 && e->index_into < 0; side--)
		{
			int			into = side ? e->b : e->a;
			ListCell   *lc2;

			if (incoming[into] > 0 || !EddyRelIndexJoinable(root, jp, into))
				continue;
			foreach(lc2, jp->rels[into]->indexlist)
			{
				if (EddyEdgeIndexUsable(jp, e, into, lfirst(lc2)))
				{
					incoming[into]++;
					break;
				}
			}
		}
	}
}

/*
 * Which relations are scanned (jp->scanned): all but those an index join
 * reaches.  An index join's key clauses that the index cannot use are
 * selections; so are all restriction clauses of a relation nothing scans,
 * in the order PostgreSQL evaluates them on a scan (a clause that may raise
 * runs after the ones listed before it, which may guard it).
 */
void
EddyIndexJoinedRelations(PlannerInfo *root, EddyJoinPath *jp, List *edges,
					   List **selections)
{
	int			i;
	ListCell   *lc;

	for (i = 0; i < jp->nrels; i++)
		jp->scanned[i] = true;
	foreach(lc, edges)
	{
		JoinEdge   *e = lfirst(lc);
		ListCell   *lc2;

		if (e->index_into < 0)
			continue;
		jp->scanned[e->index_into] = false;
		if (jp->jointype[e->index_into] != JOIN_INNER)
		{
			/* a semi or anti join's: all in its inner qual */
			int			s = e->index_into;
			List	   *quals = list_copy(jp->rels[s]->baserestrictinfo);

			foreach(lc2, e->clauses)
			{
				if (!list_member_ptr(e->index_clauses, lfirst(lc2)))
					quals = lappend(quals, lfirst(lc2));
			}
			jp->inner_quals[s] = EddyOrderQualClauses(root,
													  list_concat(quals, jp->inner_quals[s]));
			continue;
		}
		foreach(lc2, e->clauses)
		{
			if (!list_member_ptr(e->index_clauses, lfirst(lc2)))
				*selections = lappend(*selections, lfirst(lc2));
		}
		*selections = list_concat(*selections,
								  EddyOrderQualClauses(root, jp->rels[e->index_into]->baserestrictinfo));
	}
}

/*
 * Done bitmaps have 64 bits: count the modules, taking every candidate
 * restriction clause of a scanned relation as routed (plan time routes a
 * subset of them).
 */
bool
EddyModulesFit(PlannerInfo *root, EddyJoinPath *jp)
{
	int			nmodules = list_length(jp->selections) + list_length(jp->edges);
	int			i;

	for (i = 0; i < jp->nrels; i++)
	{
		RelOptInfo *rel = jp->rels[i];
		int			level = EddyUserSecurityLevel(rel->baserestrictinfo);
		ListCell   *lc;

		if (!jp->scanned[i])
			continue;
		foreach(lc, rel->baserestrictinfo)
			if (EddyClauseIsCandidate(root, lfirst_node(RestrictInfo, lc), level))
				nmodules++;
	}
	if (nmodules > EDDY_MAX_MODULES)
	{
		elog(DEBUG1, "eddy: join block not used: %d modules, more than the maximum of %d",
			 nmodules, EDDY_MAX_MODULES);
		return false;
	}
	return true;
}

/*
 * Columns per relation (jp->targets): what the block needs above it, plus
 * what the modules read (keys, selections, and the restriction clauses that
 * plan time may route: the selection candidates, EddyRouteScanQuals; the
 * others stay in the scan's filter, so that a relation whose restrictions
 * are all cheap keeps its own target and may be read through any of its
 * paths, a Gather included: TPC-H Q17's part under PostgreSQL's defaults,
 * 67 ms read serially, 24 ms through a Gather); and for a scanned
 * relation the path to scan it (children[i]), which does not get that
 * target yet.  False (with the reason at DEBUG1) when a relation cannot
 * provide them.
 */
bool
EddyColumnsAndSourcePaths(PlannerInfo *root, EddyJoinPath *jp, Path **children)
{
	int			i;

	for (i = 0; i < jp->nrels; i++)
	{
		RelOptInfo *rel = jp->rels[i];
		PathTarget *target = copy_pathtarget(rel->reltarget);
		List	   *vars = NIL;
		ListCell   *lc;
		bool		inh = planner_rt_fetch(rel->relid, root)->inh;

		foreach(lc, jp->selections)
			vars = list_concat(vars, pull_var_clause((Node *) lfirst_node(RestrictInfo, lc)->clause,
													 PVC_INCLUDE_PLACEHOLDERS));
		foreach(lc, jp->edges)
		{
			JoinEdge   *e = lfirst(lc);
			ListCell   *lc2;

			foreach(lc2, e->clauses)
				vars = list_concat(vars, pull_var_clause((Node *) lfirst_node(RestrictInfo, lc2)->clause,
														 PVC_INCLUDE_PLACEHOLDERS));
		}
		for (int s = 0; s < jp->nrels; s++)
		{
			foreach(lc, jp->inner_quals[s])
				vars = list_concat(vars, pull_var_clause((Node *) lfirst_node(RestrictInfo, lc)->clause,
														 PVC_INCLUDE_PLACEHOLDERS));
		}
		if (jp->scanned[i] && !inh)
		{
			int			level = EddyUserSecurityLevel(rel->baserestrictinfo);

			/* only candidates may be routed; the scan filters the others */
			foreach(lc, rel->baserestrictinfo)
				if (EddyClauseIsCandidate(root, lfirst_node(RestrictInfo, lc), level))
					vars = list_concat(vars, pull_var_clause((Node *) lfirst_node(RestrictInfo, lc)->clause,
															 PVC_INCLUDE_PLACEHOLDERS));
		}
		foreach(lc, vars)
		{
			Var		   *var = lfirst(lc);

			if (!IsA(var, Var))
			{
				elog(DEBUG1, "eddy: join block not used: placeholder variables");
				return false;
			}
			if ((Index) var->varno == rel->relid && var->varlevelsup == 0 &&
				!list_member(target->exprs, var))
			{
				/*
				 * An inheritance or partitioned parent is an Append, which
				 * does not project: it has no other path to choose.
				 */
				if (inh)
				{
					elog(DEBUG1, "eddy: join block not used: a column of a partitioned or inheritance parent is not in its target");
					return false;
				}
				add_column_to_pathtarget(target, (Expr *) var, 0);
			}
		}
		foreach(lc, target->exprs)
		{
			if (!IsA(lfirst(lc), Var))
			{
				elog(DEBUG1, "eddy: join block not used: relation target is not plain columns");
				return false;
			}
		}
		set_pathtarget_cost_width(root, target);
		jp->targets[i] = target;

		children[i] = NULL;
		if (jp->scanned[i])
		{
			children[i] = EddySourcePath(rel, list_length(target->exprs) >
									  list_length(rel->reltarget->exprs), false,
									  block_rescanned(root));
			if (children[i] == NULL)
			{
				elog(DEBUG1, "eddy: join block not used: no unparameterized path that returns the columns a relation must provide");
				return false;
			}
		}
	}
	return true;
}

/*
 * A relation of the block that PostgreSQL's plan reaches through a
 * parameterized path (the inner side of a nested loop: an index, index-only
 * or bitmap scan per outer row) but that the eddy would scan whole, for it
 * has no index join into it: such a scan can cost orders of magnitude more
 * than PostgreSQL's probes (a star whose fact table PostgreSQL reaches by
 * a bitmap index scan per qualifying dimension row took 13 times as long),
 * so the block keeps PostgreSQL's plan.  NULL if there is none.  Only with
 * eddy.join_method = auto: hash forces the eddy's hash joins.  A relation
 * the one-row guard made scanned is not lost: the guard weighed the scan.
 */
Path *
EddyParameterizedScanLost(EddyJoinPath *jp, Path *path)
{
	Path	   *found = NULL;

	check_stack_depth();
	switch (nodeTag(path))
	{
		case T_NestPath:
		case T_HashPath:
		case T_MergePath:
			{
				JoinPath   *j = (JoinPath *) path;
				Path	   *inner = j->innerjoinpath;

				if (IsA(inner, MemoizePath))
					inner = ((MemoizePath *) inner)->subpath;
				if (IsA(path, NestPath) && inner->param_info != NULL &&
					inner->parent->reloptkind == RELOPT_BASEREL)
				{
					int			i = EddyRelIndex(jp, inner->parent->relid);

					if (i >= 0 && jp->scanned[i] && !jp->guarded[i])
						return inner;
				}
				found = EddyParameterizedScanLost(jp, j->outerjoinpath);
				if (found == NULL)
					found = EddyParameterizedScanLost(jp, j->innerjoinpath);
				return found;
			}
		default:
			if (EddyWrappedPath(path) != NULL)
				return EddyParameterizedScanLost(jp, EddyWrappedPath(path));
			return NULL;
	}
}

/* ----------------------------------------------------------------
 *		Helpers of the driver and of the other phase files
 * ----------------------------------------------------------------
 */

/*
 * A shallow copy of a scan path, whose target can then be set without
 * touching the path other plans share (the serial eddy's, or PostgreSQL's
 * own where only the partial twin replaces its plans); NULL for a kind of
 * path not copied here.
 */
Path *
EddyCopyScanPath(Path *path)
{
	Size		size;
	Path	   *copy;

	switch (nodeTag(path))
	{
		case T_Path:
			size = sizeof(Path);
			break;
		case T_IndexPath:
			size = sizeof(IndexPath);
			break;
		case T_BitmapHeapPath:
			size = sizeof(BitmapHeapPath);
			break;
		case T_TidPath:
			size = sizeof(TidPath);
			break;
		case T_TidRangePath:
			size = sizeof(TidRangePath);
			break;
		case T_SubqueryScanPath:
			size = sizeof(SubqueryScanPath);
			break;
		default:
			return NULL;
	}
	copy = palloc(size);
	memcpy(copy, path, size);
	return copy;
}

/*
 * Does a probe into the side of a hash join made of relation `rel` alone
 * (its tree side is `mask`) find at most one match?  When rel has a unique
 * index on its join keys: then a tuple of the other side that found its
 * match needs no storing.
 */
bool
EddyProbeSideUnique(PlannerInfo *root, EddyJoinPath *jp, int rel, uint32 mask,
				  List *keyclauses, List **scan_quals)
{
	RelOptInfo *relinfo = jp->rels[rel];
	List	   *kexprs = NIL;
	List	   *kops = NIL;
	List	   *saved;
	bool		unique;
	ListCell   *lc;

	if (keyclauses == NIL || mask != (1u << rel) ||
		planner_rt_fetch(relinfo->relid, root)->rtekind != RTE_RELATION)
		return false;
	foreach(lc, keyclauses)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
		Oid			op = ((OpExpr *) rinfo->clause)->opno;

		/* relation_has_unique_index_for wants rel's side on the right */
		if (bms_is_member(relinfo->relid, rinfo->left_relids))
			op = get_commutator(op);
		if (!OidIsValid(op))
			return false;
		kexprs = lappend(kexprs, EddyClauseSide(rinfo, relinfo->relid));
		kops = lappend_oid(kops, op);
	}

	/*
	 * relation_has_unique_index_for also counts the rel's `column =
	 * constant` restrictions; only those its scan keeps hold for every tuple
	 * in the STAIR (routed ones run in the eddy, maybe after the join; a
	 * relation reached by an index join keeps none).
	 */
	saved = relinfo->baserestrictinfo;
	relinfo->baserestrictinfo = scan_quals[rel];
	unique = relation_has_unique_index_for(root, relinfo, NIL, kexprs, kops);
	relinfo->baserestrictinfo = saved;
	return unique;
}
