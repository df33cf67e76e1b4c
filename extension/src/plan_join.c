/*-------------------------------------------------------------------------
 *
 * plan_join.c
 *	  Join eddies: the modules of a select-project-join block and the
 *	  Eddy CustomScan that routes tuples through them.
 *
 * planner.c calls EddyCreateJoinPath for the final relation of a join
 * search whose relations are all inner-joined base relations, or the one
 * inner relation of a semi or anti join (made an index semi or anti join:
 * "Semi and anti joins" below), after PostgreSQL has planned it; or, in a
 * block with other special joins, for a join relation below them
 * (planner.c, "Sub-blocks": sub_block, whose scan paths are copied before
 * they get the eddy's targets, since PostgreSQL's other plans for the
 * block may share them).  We read PostgreSQL's cheapest plan for three
 * things:
 *
 *	 - the join clauses it enforces (every JoinPath's joinrestrictinfo and
 *	   every parameterized path's ppi_clauses): PostgreSQL has already chosen
 *	   a sufficient set from its equivalence classes, so we enforce exactly
 *	   those, no more;
 *	 - which joins it made as index nested loops (eddy.join_method = auto):
 *	   a parameterized index, index-only or bitmap heap scan on the inner
 *	   side (parameterized_index);
 *	 - the scan of each relation (its cheapest unparameterized path; not a
 *	   Gather in a block that runs once per outer row, source_path), which
 *	   becomes the eddy's source for it.
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
 *	   (cross products: every pair matches) connect its components.
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
 * Estimated join state.  Whether the join state the eddy would store fits
 * in eddy.max_memory.  A block whose estimate does not fit is still an
 * eddy (the executor spills what outgrows the limit, spill.c; the estimate
 * is an upper bound, often far above the peak: TPC-H Q7 under PostgreSQL's
 * defaults is estimated at 399 MB and peaks at 12 MB per process), unless
 * the tables it stores for certain (certain_rows) are over the limit
 * already: it would spill for certain, and PostgreSQL's batched hash joins
 * are faster than a spilled eddy.  A serial eddy with no parallel twin is
 * also declined when its likely state is (nearly) over the limit: the
 * tables stored for certain, and the rows its index joins reach by
 * PostgreSQL's estimates of those joins (likely_index_rows), which the
 * routing policy's running selective joins first makes likely.  Where a
 * parallel eddy's share fits and the serial eddy does not, only the
 * parallel one is offered.  The
 * estimate counts what the executor stores under the schedule it will use
 * (mod_hashjoin.c, "Only what can still be probed is stored"), so the order
 * in which the eddy reads its sources is decided together with it, at path
 * time, and the plan keeps that order.  With eddy.source_schedule = build
 * the sources are read one after another: a join side stores nothing once
 * every source of the other side has been read, so the relation read last
 * (and a star's centre, read after its points) is never stored nor
 * counted, and neither is what it takes part in.  With the proportional
 * schedule, any eddy.source_delays or state migration (eddy.migration),
 * every side may be probed until the end and everything counts.  Rows are
 * the planner's, before any restriction the eddy may route (a routed
 * selection can run after the join that stored the tuple); bytes per row
 * and per STAIR entry follow tuple.c's layout (estimated_join_state).
 * Settings read by the executor are those at plan time: a cached plan
 * whose schedule changed afterwards keeps the order it was planned with,
 * and eddy.max_memory is enforced at run time as always.
 *
 * EddyCreateJoinPath runs in phases: collect the clauses and PostgreSQL's
 * build order; classify the clauses into candidate edges and selections;
 * mark PostgreSQL's index nested loops; choose the spanning tree; index
 * joins (join_method = index); which relations are scanned; then the
 * checks (no relation PostgreSQL reaches through a parameterized path left
 * to a full scan, parameterized_scan_lost; module count, columns per
 * relation and the path that scans each; the estimated join state and
 * the reading order).  Any of them may still give up, so none
 * touches PostgreSQL's paths: only once the eddy is certain do the chosen
 * scan paths get the eddy's target lists (make_join_path), and a block that
 * falls back keeps its vanilla plan exactly as PostgreSQL made it.
 * Last, the parallel decision ("Parallel eddies" below): where possible
 * the eddy gets a partial twin for the relation's partial_pathlist, and
 * where PostgreSQL would run the block in parallel (a Gather over its
 * partial plan, or its cheapest plan running joins below a Gather inside
 * the block) and the twin would cost more than that plan, the block keeps
 * PostgreSQL's plan; the serial eddy takes the cost of PostgreSQL's
 * cheapest plan that runs no join in parallel (serial_cost_basis).
 * eddy_plan_join_path makes, in order: the sources and their column
 * ranges, the selection modules with their prerequisites, and the join
 * modules with their uniqueness; the reading order is the one decided
 * with the estimate.
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

#include "clauses.h"
#include "plan.h"
#include "private.h"

/* A candidate join edge between two relations of the block */
typedef struct JoinEdge
{
	int			a;				/* relation indexes; a < b */
	int			b;
	List	   *clauses;		/* hashable equality RestrictInfos a = b */
	bool		in_tree;
	int			index_into;		/* -1: hash join; else a or b, reached by index */
	IndexOptInfo *index;
	List	   *index_clauses;	/* clauses usable as index conditions */
	List	   *index_cols;		/* their index columns (1-based), in order */
	bool		from_nestloop;	/* PostgreSQL chose an index nested loop here */
	bool		preferred;		/* PostgreSQL joins on it */
	Selectivity selectivity;	/* of all its clauses: low fan-out first */
} JoinEdge;

/* Analysis of a join block, made at path time, used at plan time */
/* The share of eddy.max_memory a likely state may reach (EddyCreateJoinPath) */
#define EDDY_LIKELY_MARGIN	0.9

/* What estimated_join_state counts of the rows a relation may store */
typedef enum EddyStateEstimate
{
	EDDY_STATE_UPPER,			/* stored_rows: an upper bound */
	EDDY_STATE_CERTAIN,			/* certain_rows: scanned tables only */
	EDDY_STATE_LIKELY			/* certain_rows, and likely_index_rows for
								 * the relations index joins reach */
} EddyStateEstimate;

typedef struct EddyJoinPath
{
	CustomPath	cpath;			/* must be first */
	int			nrels;
	RelOptInfo **rels;
	bool	   *scanned;		/* per relation: has a source scan */
	List	   *edges;			/* JoinEdges of the tree */
	List	   *selections;		/* RestrictInfos routed as selections */
	PathTarget **targets;		/* per relation: columns the eddy needs */
	List	   *source_order;	/* relation indexes, PostgreSQL's build order */
	List	   *clause_order;	/* the clauses in PostgreSQL's evaluation order */
	List	   *reading_order;	/* Integers: the order the eddy reads in */
	Path	   *serial_basis;	/* whose cost the serial eddy takes
								 * (serial_cost_basis) */
	bool		sub_block;		/* below the block's special joins (planner.c):
								 * its scan paths are copied, not changed */
	double		est_state;		/* estimated join state, bytes */
	double		certain_state;	/* the part of it stored for certain */
	double		likely_state;	/* ... and likely (EDDY_STATE_LIKELY), where
								 * it does not fit */
	int			est_nstairs;	/* STAIRs it counts */
	uint32		claimed;		/* ... the relations of it one process reads
								 * whole */
	bool		exchange;		/* a partial twin whose every scanned source is
								 * partial, its state exchanged ("Parallel
								 * eddies" below) */
	/* per relation: semi and anti joins ("Semi and anti joins" below) */
	JoinType   *jointype;		/* JOIN_SEMI/ANTI: their inner relation */
	SpecialJoinInfo **sjinfo;	/* its special join */
	int		   *semi_from;		/* the one relation its clauses read */
	List	  **inner_quals;	/* its clauses other than the index's keys */
} EddyJoinPath;

static Plan *eddy_plan_join_path(PlannerInfo *root, RelOptInfo *rel,
								 CustomPath *best_path, List *tlist,
								 List *clauses, List *custom_plans);
static bool probe_side_unique(PlannerInfo *root, EddyJoinPath *jp, int rel,
							  uint32 mask, List *keyclauses, List **scan_quals);
static List *source_reading_order(EddyJoinPath *jp, bool (*unique)[2]);
static Path *copy_scan_path(Path *path);

static const CustomPathMethods eddy_join_path_methods = {
	.CustomName = EDDY_NODE_NAME,
	.PlanCustomPath = eddy_plan_join_path,
};

extern const CustomScanMethods eddy_scan_methods;

/* Index of the block relation with this relid, or -1 */
static int
rel_index(EddyJoinPath *jp, Index relid)
{
	int			i;

	for (i = 0; i < jp->nrels; i++)
		if (jp->rels[i]->relid == relid)
			return i;
	return -1;
}

/* Bitmap (over relation indexes) of the relids */
static uint32
rel_mask(EddyJoinPath *jp, Relids relids)
{
	uint32		mask = 0;
	int			x = -1;

	while ((x = bms_next_member(relids, x)) >= 0)
	{
		int			i = rel_index(jp, x);

		if (i >= 0)
			mask |= 1u << i;
	}
	return mask;
}

typedef struct NestLoopIndex
{
	Relids		outer_relids;
	IndexPath  *inner;
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
static Path *
wrapped_path(Path *path)
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

					/* a nested loop joins on its filters and its inner's parameters */
					*preferred = list_concat(*preferred, jp->joinrestrictinfo);
					if (inner->param_info != NULL)
						*preferred = list_concat(*preferred, inner->param_info->ppi_clauses);

					if (IsA(inner, MemoizePath))
						inner = ((MemoizePath *) inner)->subpath;
					inner = parameterized_index(inner);
					if (inner != NULL)
					{
						NestLoopIndex *nl = palloc(sizeof(NestLoopIndex));

						nl->outer_relids = jp->outerjoinpath->parent->relids;
						nl->inner = (IndexPath *) inner;
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
			if (wrapped_path(path) != NULL)
				collect_path_clauses(root, wrapped_path(path), clauses, evalorder,
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
 * The selections in PostgreSQL's evaluation order: clauses it evaluates at
 * a join or a parameterized scan in that order (clause_order), after the
 * restriction clauses of index-joined relations (evaluated on their scans),
 * which keep their order.  A selection that may raise runs after the ones
 * before it (see eddy_plan_join_path), so a clause PostgreSQL evaluates
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
			if (wrapped_path(path) != NULL)
			{
				build_order(jp, wrapped_path(path), order);
				return;
			}
			{
				int			i = rel_index(jp, path->parent->relid);

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
static bool
is_key_clause(EddyJoinPath *jp, RestrictInfo *rinfo, int *left, int *right)
{
	if (rinfo->pseudoconstant || !OidIsValid(rinfo->hashjoinoperator))
		return false;
	if (!IsA(rinfo->clause, OpExpr) || list_length(((OpExpr *) rinfo->clause)->args) != 2)
		return false;
	if (bms_membership(rinfo->left_relids) != BMS_SINGLETON ||
		bms_membership(rinfo->right_relids) != BMS_SINGLETON)
		return false;
	*left = rel_index(jp, bms_singleton_member(rinfo->left_relids));
	*right = rel_index(jp, bms_singleton_member(rinfo->right_relids));
	return *left >= 0 && *right >= 0 && *left != *right;
}

static JoinEdge *
find_edge(List *edges, int a, int b)
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
static Node *
clause_side(RestrictInfo *rinfo, Index relid)
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
static bool
edge_index_usable(EddyJoinPath *jp, JoinEdge *e, int into, IndexOptInfo *index)
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
		Node	   *mine = clause_side(rinfo, rel->relid);
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
static bool
rel_index_joinable(PlannerInfo *root, EddyJoinPath *jp, int i)
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

/* ----------------------------------------------------------------
 *		Semi and anti joins
 *
 * A semi or anti join (EXISTS, IN, NOT EXISTS pulled up) whose inner side
 * is one relation s, whose clauses read s and one other relation a, and
 * which PostgreSQL makes as an index nested loop into s (join_method =
 * auto; any usable index under join_method = index) becomes an index semi
 * or anti join module (mod_indexjoin.c): a tuple spanning a probes s's
 * index and passes on once if a match passes the join's other clauses
 * (semi), or if none does (anti).  Every clause that reads s, s's own
 * restrictions and the anti join's clauses over a alone (required_relids
 * holds s) are the module's inner qual, evaluated on each match, never
 * selections.  The module filters a's rows by a condition on a's row
 * alone, so it commutes with the block's inner joins and the other semi
 * and anti joins (whose clauses read no inner relation of another: their
 * minimal sides would hold it, EddySemiJoinRel), and the eddy may route it
 * anywhere after a; the tuple it passes on spans s with a match's row
 * (semi) or a row of NULLs (anti), which nothing above reads.  A clause
 * pushed down above an anti join that reads its inner relation (a WHERE
 * "s.x IS NULL" that made a left join an anti join) is not supported.
 * ----------------------------------------------------------------
 */

/*
 * The relid of the inner relation of a semi or anti join the eddy can make
 * an index semi or anti join into, or 0: the join's inner side, minimal
 * and syntactic, is that one relation, and no other special join has it
 * on its inner side or needs it on its outer side.
 */
Index
EddySemiJoinRel(PlannerInfo *root, SpecialJoinInfo *sjinfo)
{
	int			relid;
	ListCell   *lc;

	if (sjinfo->jointype != JOIN_SEMI && sjinfo->jointype != JOIN_ANTI)
		return 0;
	if (!bms_get_singleton_member(sjinfo->min_righthand, &relid) ||
		!bms_equal(sjinfo->min_righthand, sjinfo->syn_righthand))
		return 0;
	foreach(lc, root->join_info_list)
	{
		SpecialJoinInfo *other = lfirst(lc);

		if (other == sjinfo)
			continue;
		if (bms_is_member(relid, other->min_lefthand) ||
			bms_is_member(relid, other->min_righthand) ||
			bms_is_member(relid, other->syn_righthand))
			return 0;
	}
	return (Index) relid;
}

/*
 * The relation other than s that an equality clause between s and one
 * other relation reads, or -1 (not such a clause)
 */
static int
semi_key_other(EddyJoinPath *jp, int s, RestrictInfo *rinfo)
{
	int			l,
				r;

	if (!is_key_clause(jp, rinfo, &l, &r) || (l != s && r != s))
		return -1;
	return l == s ? r : l;
}

/*
 * Is rinfo, an equality of an equivalence class between the semi or anti
 * join's inner relation s and a relation b, implied by the block's other
 * clauses, so that the join need not test it?  PostgreSQL's plan may test
 * two equalities of one class into s, each against another member (TPC-H
 * Q21 in parallel: l2.l_orderkey = orders.o_orderkey as the semi join's
 * filter, l2.l_orderkey = l1.l_orderkey as its index condition).  It is
 * implied where s has another equality of the same class with the relation
 * a that its clauses read otherwise (l1, in l2.l_suppkey <> l1.l_suppkey):
 * every member of a class is equal in every row of the inner joins that
 * join them (PostgreSQL's plan, whose clauses the eddy takes, joins a and b
 * on the class), so s's key equals b's where it equals a's.  Only with
 * one such relation a, and not b.
 */
static bool
redundant_semi_key(EddyJoinPath *jp, int s, RestrictInfo *rinfo, List *clauses)
{
	int			b = semi_key_other(jp, s, rinfo);
	int			a = -1;
	bool		same_class_to_a = false;
	ListCell   *lc;

	if (b < 0 || rinfo->parent_ec == NULL)
		return false;
	/* the one relation besides s read by s's clauses that are not keys of a class */
	foreach(lc, clauses)
	{
		RestrictInfo *c = lfirst_node(RestrictInfo, lc);
		uint32		other;

		if (!bms_is_member(jp->rels[s]->relid, c->required_relids) &&
			!bms_is_member(jp->rels[s]->relid, c->clause_relids))
			continue;
		if (c->parent_ec != NULL && semi_key_other(jp, s, c) >= 0)
			continue;
		other = (rel_mask(jp, c->required_relids) |
				 rel_mask(jp, c->clause_relids)) & ~(1u << s);
		if (other == 0)
			continue;
		if ((other & (other - 1)) != 0 || (a >= 0 && other != (1u << a)))
			return false;
		a = ffs(other) - 1;
	}
	if (a < 0 || a == b)
		return false;
	foreach(lc, clauses)
	{
		RestrictInfo *c = lfirst_node(RestrictInfo, lc);

		if (c != rinfo && c->parent_ec == rinfo->parent_ec &&
			semi_key_other(jp, s, c) == a)
			same_class_to_a = true;
	}
	return same_class_to_a;
}

/*
 * Find the block's semi and anti joins (jp->jointype, jp->sjinfo) and take
 * the clauses that read their inner relations out of *clauses: the key
 * equalities between a and s stay (they make the edge the module's index
 * uses), the others go to jp->inner_quals[s].  False, with the reason at
 * DEBUG1, when a semi or anti join does not have the shape the module
 * needs.
 */
static bool
semi_join_clauses(PlannerInfo *root, EddyJoinPath *jp, RelOptInfo *joinrel,
				  List **clauses)
{
	ListCell   *lc;
	int			s;

	foreach(lc, root->join_info_list)
	{
		SpecialJoinInfo *sjinfo = lfirst(lc);
		Index		relid = EddySemiJoinRel(root, sjinfo);

		if (relid == 0 || (s = rel_index(jp, relid)) < 0)
			continue;
		if (!bms_is_subset(sjinfo->min_lefthand, joinrel->relids))
		{
			elog(DEBUG1, "eddy: join block not used: a semi or anti join reaches outside the block");
			return false;
		}
		jp->jointype[s] = sjinfo->jointype;
		jp->sjinfo[s] = sjinfo;
	}
	for (s = 0; s < jp->nrels; s++)
	{
		Index		relid = jp->rels[s]->relid;
		const char *what = jp->jointype[s] == JOIN_ANTI ? "anti" : "semi";
		List	   *keep = NIL;
		int			a = -1;

		if (jp->jointype[s] == JOIN_INNER)
			continue;
		foreach(lc, *clauses)
		{
			RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
			uint32		other;
			int			l,
						r;

			if (!bms_is_member(relid, rinfo->required_relids) &&
				!bms_is_member(relid, rinfo->clause_relids))
			{
				keep = lappend(keep, rinfo);
				continue;
			}
			if (redundant_semi_key(jp, s, rinfo, *clauses))
				continue;
			if (jp->jointype[s] == JOIN_ANTI && rinfo->is_pushed_down)
			{
				elog(DEBUG1, "eddy: join block not used: a condition above an anti join reads its inner relation");
				return false;
			}
			other = (rel_mask(jp, rinfo->required_relids) |
					 rel_mask(jp, rinfo->clause_relids)) & ~(1u << s);
			if (other != 0 && ((other & (other - 1)) != 0 ||
							   (a >= 0 && other != (1u << a))))
			{
				elog(DEBUG1, "eddy: join block not used: the clauses of a %s join read more than one relation besides its inner one", what);
				return false;
			}
			if (other != 0)
				a = ffs(other) - 1;
			if (other != 0 && is_key_clause(jp, rinfo, &l, &r))
				keep = lappend(keep, rinfo);	/* a key of the edge (a, s) */
			else
				jp->inner_quals[s] = lappend(jp->inner_quals[s], rinfo);
		}
		if (a < 0)
		{
			elog(DEBUG1, "eddy: join block not used: a %s join has no join clause", what);
			return false;
		}
		jp->semi_from[s] = a;
		*clauses = keep;
	}
	return true;
}

/*
 * The edge into each semi or anti join's inner relation must be an index
 * join into it: the index PostgreSQL's nested loop probes (join_method =
 * auto, mark_nestloop_index_joins), or, under join_method = index, the
 * first usable one.  Such an edge is chosen first for the tree (it is the
 * relation's only edge).  False, with the reason at DEBUG1, where there
 * is none: PostgreSQL's hash or merge semi join stays.
 */
static bool
semi_join_edges(PlannerInfo *root, EddyJoinPath *jp, List *candidates)
{
	int			s;

	for (s = 0; s < jp->nrels; s++)
	{
		JoinEdge   *e;

		if (jp->jointype[s] == JOIN_INNER)
			continue;
		e = find_edge(candidates, jp->semi_from[s], s);
		if (e != NULL && e->index_into != s)
			e->index_into = -1;
		if (e != NULL && e->index_into < 0 && eddy_join_method == EDDY_JOIN_INDEX &&
			rel_index_joinable(root, jp, s))
		{
			ListCell   *lc;

			foreach(lc, jp->rels[s]->indexlist)
				if (edge_index_usable(jp, e, s, lfirst(lc)))
					break;
		}
		if (e == NULL || e->index_into != s)
		{
			elog(DEBUG1, "eddy: join block not used: PostgreSQL makes its %s join into relation \"%s\" by hashing or merging, and the eddy has only index %s joins",
				 jp->jointype[s] == JOIN_ANTI ? "anti" : "semi",
				 get_rel_name(planner_rt_fetch(jp->rels[s]->relid, root)->relid),
				 jp->jointype[s] == JOIN_ANTI ? "anti" : "semi");
			return false;
		}
		e->from_nestloop = true;
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
static uint32
tree_side(EddyJoinPath *jp, JoinEdge *e, int from)
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

/* Does a path of this type compute its own target list (a scan)? */
static bool
path_projects(Path *path)
{
	switch (path->pathtype)
	{
		case T_SeqScan:
		case T_SampleScan:
		case T_IndexScan:
		case T_IndexOnlyScan:
		case T_BitmapHeapScan:
		case T_TidScan:
		case T_TidRangeScan:
		case T_SubqueryScan:
		case T_FunctionScan:
		case T_TableFuncScan:
		case T_ValuesScan:
		case T_CteScan:
		case T_NamedTuplestoreScan:
		case T_WorkTableScan:
			return true;
		default:
			return false;		/* Append, Gather, Result, ... return their input */
	}
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
static Path *
source_path(RelOptInfo *rel, bool needs_projection, bool parallel_safe,
			bool rescanned)
{
	Path	   *best = NULL;
	Path	   *best_gather = NULL;
	ListCell   *lc;

	if (rel->cheapest_total_path != NULL &&
		rel->cheapest_total_path->param_info == NULL &&
		(!needs_projection || path_projects(rel->cheapest_total_path)) &&
		(!parallel_safe || rel->cheapest_total_path->parallel_safe) &&
		(!rescanned || !is_gather(rel->cheapest_total_path)))
		return rel->cheapest_total_path;
	foreach(lc, rel->pathlist)
	{
		Path	   *p = lfirst(lc);

		if (p->param_info != NULL || (needs_projection && !path_projects(p)) ||
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
 *		Path: the phases of EddyCreateJoinPath
 *
 * Every phase works on the EddyJoinPath under construction and local
 * lists; none touches PostgreSQL's paths.  Only the last one, once every
 * check has passed, gives the source paths the eddy's target lists, so a
 * block that falls back to the vanilla plan leaves it as it was.
 * ----------------------------------------------------------------
 */

/*
 * The clauses PostgreSQL's cheapest plan enforces (returned), in the order
 * it evaluates them (jp->clause_order), its index nested loops, the clauses
 * it joins on, and the order in which it consumes the relations
 * (jp->source_order, completed with any relation it does not reach).
 */
static List *
collect_clauses_and_order(PlannerInfo *root, EddyJoinPath *jp, Path *cheapest,
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
static List *
classify_clauses(EddyJoinPath *jp, List *clauses, List *preferred,
				 List **selections)
{
	List	   *candidates = NIL;
	ListCell   *lc;

	foreach(lc, clauses)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
		int			l,
					r;

		if (is_key_clause(jp, rinfo, &l, &r))
		{
			JoinEdge   *e = find_edge(candidates, l, r);

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
 * eddy.join_method = auto: the candidate edges PostgreSQL's plan joins by an
 * index nested loop become index joins into the same relation, when the
 * eddy can use that index.
 */
static void
mark_nestloop_index_joins(PlannerInfo *root, EddyJoinPath *jp, List *candidates,
						  List *nestloops)
{
	ListCell   *lc;

	if (eddy_join_method != EDDY_JOIN_AUTO)
		return;
	foreach(lc, nestloops)
	{
		NestLoopIndex *nl = lfirst(lc);
		int			into = rel_index(jp, nl->inner->path.parent->relid);
		Relids		req = PATH_REQ_OUTER(&nl->inner->path);
		int			from;
		JoinEdge   *e;

		if (into < 0 || bms_membership(req) != BMS_SINGLETON)
			continue;
		from = rel_index(jp, bms_singleton_member(req));
		if (from < 0 || !rel_index_joinable(root, jp, into))
			continue;
		e = find_edge(candidates, from, into);
		if (e != NULL && e->index_into < 0 &&
			edge_index_usable(jp, e, into, nl->inner->indexinfo))
			e->from_nestloop = true;
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
static List *
choose_spanning_tree(PlannerInfo *root, EddyJoinPath *jp, List *candidates,
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
	/* Disconnected components: cross products (key-less edges). */
	for (i = 1; i < jp->nrels; i++)
	{
		if (uf_find(uf, i) != uf_find(uf, 0))
		{
			JoinEdge   *e = palloc0(sizeof(JoinEdge));

			e->a = 0;
			e->b = i;
			e->index_into = -1;
			e->in_tree = true;
			uf[uf_find(uf, i)] = uf_find(uf, 0);
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
static void
choose_index_joins(PlannerInfo *root, EddyJoinPath *jp, List *edges, int *incoming)
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

			if (incoming[into] > 0 || !rel_index_joinable(root, jp, into))
				continue;
			foreach(lc2, jp->rels[into]->indexlist)
			{
				if (edge_index_usable(jp, e, into, lfirst(lc2)))
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
static void
index_joined_relations(PlannerInfo *root, EddyJoinPath *jp, List *edges,
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
static bool
modules_fit(PlannerInfo *root, EddyJoinPath *jp)
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
static bool
columns_and_source_paths(PlannerInfo *root, EddyJoinPath *jp, Path **children)
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
			children[i] = source_path(rel, list_length(target->exprs) >
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
 * Does a probe into side `side` (0: e->a's, 1: e->b's) of hash edge e find
 * at most one match?  For the reading order only (source_reading_order),
 * decided here at path time, with every restriction of a scanned relation:
 * the plan decides the uniqueness the executor relies on with the
 * restrictions its scans keep (make_join_modules).
 */
static bool
path_probe_unique(PlannerInfo *root, EddyJoinPath *jp, JoinEdge *e, int side)
{
	uint32		all_rels = (jp->nrels >= 32) ? ~0u : ((1u << jp->nrels) - 1);
	uint32		mask0 = tree_side(jp, e, e->a);
	int			rel = side == 0 ? e->a : e->b;
	List	  **quals = palloc0(sizeof(List *) * jp->nrels);
	int			i;

	for (i = 0; i < jp->nrels; i++)
		if (jp->scanned[i])
			quals[i] = jp->rels[i]->baserestrictinfo;
	return probe_side_unique(root, jp, rel, side == 0 ? mask0 : all_rels & ~mask0,
							 e->clauses, quals);
}

/*
 * Rows of relation i that may enter a STAIR: the planner's rows, after
 * every restriction of the relation, unless the eddy may route one of them
 * (then it may meet a join first, and the join stores the tuple): the rows
 * of a scanned relation before the restrictions the eddy may route
 * (selection candidates, clauses.c; the plan routes a suffix of them,
 * make_sources).  A relation reached through an index join keeps the
 * planner's rows although the eddy routes all its restrictions: what an
 * index join fetches is what its probing tuples reach, already fewer than
 * the relation's rows wherever that join is selective (TPC-H Q7: 156,000
 * lineitem rows stored, the planner's rows 1,800,000).
 */
static double
stored_rows(PlannerInfo *root, EddyJoinPath *jp, int i)
{
	RelOptInfo *rel = jp->rels[i];
	RangeTblEntry *rte = planner_rt_fetch(rel->relid, root);
	int			user_level = EddyUserSecurityLevel(rel->baserestrictinfo);
	List	   *routable = NIL;
	Selectivity sel;
	ListCell   *lc;

	if (!jp->scanned[i] || rte->rtekind != RTE_RELATION || rte->inh ||
		rel->reloptkind != RELOPT_BASEREL)
		return rel->rows;
	foreach(lc, rel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);

		if (rinfo->pseudoconstant)
			continue;
		if (EddyClauseIsCandidate(root, rinfo, user_level))
			routable = lappend(routable, rinfo);
	}
	if (routable == NIL)
		return rel->rows;
	sel = clauselist_selectivity(root, routable, rel->relid, JOIN_INNER, NULL);
	if (sel <= 0)
		return rel->rows;
	return clamp_row_est(Min(rel->rows / sel, Max(rel->tuples, rel->rows)));
}

/*
 * The rows of relation i that the eddy stores for certain where its side
 * stores: those of a scanned table, after its restrictions, as
 * PostgreSQL's statistics give them; none of a relation an index join
 * reaches or of a subquery, function or other source, whose estimates
 * (join fan-outs, HAVING, ROWS) may run far above what is stored.
 */
static double
certain_rows(PlannerInfo *root, EddyJoinPath *jp, int i)
{
	RelOptInfo *rel = jp->rels[i];
	RangeTblEntry *rte = planner_rt_fetch(rel->relid, root);

	if (!jp->scanned[i] || rte->rtekind != RTE_RELATION || rte->inh ||
		rel->reloptkind != RELOPT_BASEREL)
		return 0;
	return rel->rows;
}

/*
 * Will the eddy read its sources one after another in the order decided
 * here, never storing what nothing can probe any more?  (Not under the
 * proportional schedule, eddy.source_delays or state migration.)
 */
static bool
reads_in_build_order(void)
{
	return eddy_source_schedule == EDDY_SCHEDULE_BUILD &&
		(eddy_source_delays == NULL || eddy_source_delays[0] == '\0') &&
		eddy_migration == EDDY_MIGRATION_OFF;
}

/*
 * The earliest place in the reading order (pos) at which a row spanning
 * relation r can exist: r's own for a scanned relation; for one an index
 * join reaches, the earliest of the relations its index joins come from (a
 * row spanning r was made by probing r's index with a row spanning one of
 * them).  0, the start, where it cannot tell (no index join into r, or a
 * malformed tree): counted as stored from the start.
 */
static int
earliest_source(EddyJoinPath *jp, int r, const int *pos, int depth)
{
	int			first = INT_MAX;
	ListCell   *lc;

	if (jp->scanned[r])
		return pos[r];
	if (depth > jp->nrels)
		return 0;
	foreach(lc, jp->edges)
	{
		JoinEdge   *e = lfirst(lc);
		int			from;

		if (e->index_into != r)
			continue;
		from = earliest_source(jp, e->a == r ? e->b : e->a, pos, depth + 1);
		if (from < first)
			first = from;
	}
	return first == INT_MAX ? 0 : first;
}

/*
 * The rows of relation i, reached through index joins, that the eddy is
 * likely to store (estimated_join_state's EDDY_STATE_LIKELY, and the size
 * of the slot array its STAIRs start with, presize_rows): PostgreSQL's
 * estimate for the join of i with the relations its index joins come from,
 * back to a scanned one (the origin), and with those a tuple may have met
 * before it reaches i: relations read before the origin, or reached by an
 * index join from it or from one of those.  The routing policy runs
 * selective joins and selections first, so the least of these estimates
 * (one such relation added at a time, or all of them) is taken, and never
 * more than the relation's own rows.  TPC-H Q7: lineitem reached from
 * supplier, 1,800,000 rows by the relation, 145,150 by supplier ⋈ nation ⋈
 * lineitem (165,000 stored).  The relation's own rows where PostgreSQL
 * built no such join (GEQO).
 */
static double
likely_index_rows(PlannerInfo *root, EddyJoinPath *jp, int i, const int *pos)
{
	double		best = jp->rels[i]->rows;
	Relids		chain = bms_copy(jp->rels[i]->relids);
	Relids		all;
	bool	   *in_chain = palloc0(sizeof(bool) * jp->nrels);
	int			r = i;
	int			depth;
	int			k;
	RelOptInfo *jrel;

	in_chain[i] = true;
	for (depth = 0; !jp->scanned[r] && depth <= jp->nrels; depth++)
	{
		ListCell   *lc;
		int			from = -1;

		foreach(lc, jp->edges)
		{
			JoinEdge   *e = lfirst(lc);

			if (e->index_into == r)
				from = e->a == r ? e->b : e->a;
		}
		if (from < 0 || in_chain[from])
			return best;
		r = from;
		in_chain[r] = true;
		chain = bms_add_members(chain, jp->rels[r]->relids);
	}
	if (!jp->scanned[r])
		return best;
	jrel = find_join_rel(root, chain);
	if (jrel != NULL)
		best = Min(best, jrel->rows);
	all = bms_copy(chain);
	for (k = 0; k < jp->nrels; k++)
	{
		Relids		one;

		if (in_chain[k] || earliest_source(jp, k, pos, 0) > pos[r])
			continue;
		one = bms_union(chain, jp->rels[k]->relids);
		all = bms_add_members(all, jp->rels[k]->relids);
		jrel = find_join_rel(root, one);
		if (jrel != NULL)
			best = Min(best, jrel->rows);
	}
	jrel = find_join_rel(root, all);
	if (jrel != NULL)
		best = Min(best, jrel->rows);
	return clamp_row_est(best);
}


/*
 * The entries a STAIR at relation i likely holds (make_join_modules): its
 * rows if it is scanned, its likely stored rows if an index join reaches
 * it.
 */
static double
presize_rows(PlannerInfo *root, EddyJoinPath *jp, int i, const int *pos)
{
	if (jp->scanned[i])
		return jp->rels[i]->rows;
	return likely_index_rows(root, jp, i, pos);
}

/*
 * The join state the eddy would store, in bytes.  Per relation stored in
 * any STAIR, its stored rows (stored_rows) once each (a row is copied into
 * state memory once and shared, tuple.c): its width, plus per column a
 * Datum, a null flag and the alignment of a by-reference value (13 bytes),
 * plus 32 bytes of header; per STAIR that stores, one entry per stored row
 * of its end relation: 48 bytes of entry and hash slot, plus a Datum per
 * key and a row pointer per relation of the block (the stored eddy tuple
 * of an intermediate result).  Measured on TPC-H at scale factor 1, this
 * is above the peak memory the executor reports (EXPLAIN ANALYZE: 1.2-12x
 * of it on the eddies storing over 1 MB, work_mem 64MB), except where the
 * planner's row estimates are low; the arenas' first blocks (an eddy
 * that stores almost nothing reports about 176 kB) are left out.
 *
 * Which STAIRs store is what the executor stores under the schedule it
 * will use (mod_hashjoin.c: "Only what can still be probed is stored"),
 * with the reading order decided here:
 *
 *	 build			(eddy.source_schedule, no eddy.source_delays) the sources
 *					are read one after another in `order`.  Side d of a join
 *					stores only while a scanned source of side 1 - d is still
 *					to be read, and what it stores spans its end relation, so
 *					it is made from a source read no earlier than that
 *					relation (or, for a relation an index join reaches, than
 *					the earliest of the relations its index joins come from,
 *					earliest_source: on TPC-H Q9 lineitem, reached from
 *					partsupp, read last, is never stored, and counting its
 *					6 million rows made the estimate 1.7 GB against a peak
 *					of 135 MB).  A side whose end is read
 *					after the other side's last source stores nothing: the
 *					relation read last, and the centre of a star read after
 *					its points, are never stored.  A probe that finds its one
 *					match against a unique side changes nothing here: that
 *					side is then read, so exhausted, already.
 *	 proportional	(or any source delayed) sources are interleaved and every
 *					side may still be probed until the end: everything
 *					counts.
 *
 * State migration (eddy.migration) may rebuild state that nothing probes
 * and promotes intermediate results (migrate.c), so an eddy that may
 * migrate counts everything too.
 */
static double
estimated_join_state(PlannerInfo *root, EddyJoinPath *jp, List *order,
					 int share_rel, double share, EddyStateEstimate kind,
					 int *nstairs)
{
	uint32		all_rels = (jp->nrels >= 32) ? ~0u : ((1u << jp->nrels) - 1);
	bool		build = reads_in_build_order();
	int		   *pos = palloc(sizeof(int) * jp->nrels);
	double	   *rows = palloc(sizeof(double) * jp->nrels);
	bool	   *stored = palloc0(sizeof(bool) * jp->nrels);
	double		state = 0;
	int			k = 0;
	int			i;
	ListCell   *lc;

	*nstairs = 0;
	foreach(lc, order)
		pos[intVal(lfirst(lc))] = k++;
	for (i = 0; i < jp->nrels; i++)
	{
		if (kind == EDDY_STATE_UPPER)
			rows[i] = stored_rows(root, jp, i);
		else if (kind == EDDY_STATE_LIKELY && !jp->scanned[i])
			rows[i] = likely_index_rows(root, jp, i, pos);
		else
			rows[i] = certain_rows(root, jp, i);
		rows[i] *= i == share_rel ? share : 1.0;
	}
	foreach(lc, jp->edges)
	{
		JoinEdge   *e = lfirst(lc);
		uint32		side[2];
		int			end[2];
		int			d;

		if (e->index_into >= 0)
			continue;
		*nstairs += 2;
		side[0] = tree_side(jp, e, e->a);
		side[1] = all_rels & ~side[0];
		end[0] = e->a;
		end[1] = e->b;
		for (d = 0; d < 2; d++)
		{
			if (build)
			{
				int			first = earliest_source(jp, end[d], pos, 0);
				int			last_other = -1;

				for (i = 0; i < jp->nrels; i++)
				{
					if (!jp->scanned[i])
						continue;
					if ((side[1 - d] & (1u << i)) && pos[i] > last_other)
						last_other = pos[i];
				}
				if (first > last_other)
					continue;	/* nothing can probe it by then */
			}
			stored[end[d]] = true;
			state += rows[end[d]] *
				(48 + 8 * Max(list_length(e->clauses), 1) + 8 * jp->nrels);
		}
	}
	for (i = 0; i < jp->nrels; i++)
		if (stored[i])
			state += rows[i] * (jp->targets[i]->width +
								13 * list_length(jp->targets[i]->exprs) + 32);
	return state;
}

/* Hash joins on keys (not cross products) that relation r takes part in */
static int
keyed_hash_joins(EddyJoinPath *jp, int r)
{
	int			n = 0;
	ListCell   *lc;

	foreach(lc, jp->edges)
	{
		JoinEdge   *e = lfirst(lc);

		if (e->index_into < 0 && e->clauses != NIL && (e->a == r || e->b == r))
			n++;
	}
	return n;
}

/*
 * The reading order that stores least of `order` and that order with
 * another scanned relation moved last (returned, with its estimated state
 * in *state and its STAIRs in *nstairs), the relation read last being
 * never stored.  keyed_only: move only relations of a hash join on keys,
 * as source_reading_order does (blocks of cross products keep
 * PostgreSQL's order).  certain: where no order's estimate fits in
 * eddy.max_memory, the order that stores least for certain (certain_rows:
 * the estimate's other rows, of relations index joins reach, may run far
 * above what is stored), then least in all; an order that fits is
 * preferred to any that does not.
 */
static List *
least_state_order(PlannerInfo *root, EddyJoinPath *jp, List *order,
				  bool keyed_only, bool certain, double *state, int *nstairs)
{
	List	   *best = order;
	double		best_certain = 0;
	bool		best_fits;
	ListCell   *lc;

	*state = estimated_join_state(root, jp, order, -1, 1.0, EDDY_STATE_UPPER, nstairs);
	best_fits = *nstairs == 0 || *state <= (double) EddyMaxMemoryBytes(*nstairs);
	if (certain)
		best_certain = estimated_join_state(root, jp, order, -1, 1.0, EDDY_STATE_CERTAIN, nstairs);
	foreach(lc, order)
	{
		int			r = intVal(lfirst(lc));
		List	   *candidate;
		ListCell   *lc2;
		double		st;
		double		ct = 0;
		bool		fits;
		bool		better;
		int			n;

		if (!jp->scanned[r] || r == intVal(llast(order)) ||
			(keyed_only && keyed_hash_joins(jp, r) == 0))
			continue;
		candidate = NIL;
		foreach(lc2, order)
			if (intVal(lfirst(lc2)) != r)
				candidate = lappend(candidate, lfirst(lc2));
		candidate = lappend(candidate, makeInteger(r));
		st = estimated_join_state(root, jp, candidate, -1, 1.0, EDDY_STATE_UPPER, &n);
		fits = n == 0 || st <= (double) EddyMaxMemoryBytes(n);
		if (certain)
			ct = estimated_join_state(root, jp, candidate, -1, 1.0, EDDY_STATE_CERTAIN, &n);
		if (fits != best_fits)
			better = fits;
		else if (certain && !fits && ct != best_certain)
			better = ct < best_certain;
		else
			better = st < *state;
		if (better)
		{
			best = candidate;
			*state = st;
			*nstairs = n;
			best_fits = fits;
			best_certain = ct;
		}
	}
	return best;
}

/*
 * Does the estimated join state fit in eddy.max_memory?  Past it the eddy
 * spills (spill.c), which costs more than PostgreSQL's batching.  Decides
 * the reading order (jp->reading_order) the plan will use, so that the
 * estimate is of that order's state, and estimates the part of it stored
 * for certain (jp->certain_state).
 */
static bool
join_state_fits(PlannerInfo *root, EddyJoinPath *jp)
{
	int			nedges = list_length(jp->edges);
	bool		(*unique)[2] = palloc0(sizeof(bool[2]) * Max(nedges, 1));
	int			nstairs;
	int			k = 0;
	ListCell   *lc;

	foreach(lc, jp->edges)
	{
		JoinEdge   *e = lfirst(lc);

		if (e->index_into < 0)
		{
			unique[k][0] = path_probe_unique(root, jp, e, 0);
			unique[k][1] = path_probe_unique(root, jp, e, 1);
		}
		k++;
	}
	jp->reading_order = source_reading_order(jp, unique);
	jp->est_state = estimated_join_state(root, jp, jp->reading_order, -1, 1.0,
										  EDDY_STATE_UPPER, &nstairs);
	if (nstairs > 0 && jp->est_state > (double) EddyMaxMemoryBytes(nstairs))
		jp->reading_order = least_state_order(root, jp, jp->reading_order, true,
											  true, &jp->est_state, &nstairs);
	jp->certain_state = estimated_join_state(root, jp, jp->reading_order, -1,
											 1.0, EDDY_STATE_CERTAIN, &nstairs);
	jp->est_nstairs = nstairs;
	if (nstairs == 0 || jp->est_state <= (double) EddyMaxMemoryBytes(nstairs))
		return true;
	/* estimated only where the upper bound does not fit */
	jp->likely_state = estimated_join_state(root, jp, jp->reading_order, -1,
											1.0, EDDY_STATE_LIKELY, &nstairs);
	return false;
}

/* A block whose state does not fit (join_state_fits) may spill */
static void
serial_state_message(EddyJoinPath *jp)
{
	elog(DEBUG1, "eddy: join block: its estimated join state (%.0f kB, %.0f kB of it likely) exceeds eddy.max_memory (%zu kB): it spills what outgrows the limit",
		 jp->est_state / 1024, jp->likely_state / 1024,
		 EddyMaxMemoryBytes(jp->est_nstairs) / 1024);
}

/*
 * The relation read last in build order is never stored (mod_hashjoin.c,
 * "Only what can still be probed is stored"), so its scan may return its
 * heap tuples as they are, every column in order, and need not project
 * them: the eddy deforms just the leading columns it reads (exec.c,
 * narrow_sources), as PostgreSQL's hash join reads its outer side.  On
 * TPC-H Q17's 6,001,215 lineitem rows the projection took 22 ns a row.
 * The physical target of relation i read through path, or NULL where the
 * eddy reads in another order (every source may then be stored, and rows
 * would hold more columns) or the scan cannot return its heap tuple.
 */
static PathTarget *
physical_target(PlannerInfo *root, EddyJoinPath *jp, int i, Path *path)
{
	RelOptInfo *rel = jp->rels[i];
	RangeTblEntry *rte = planner_rt_fetch(rel->relid, root);
	List	   *tlist;
	ListCell   *lc;

	if (!reads_in_build_order())
		return NULL;
	if (rte->rtekind != RTE_RELATION || rte->inh || rel->reloptkind != RELOPT_BASEREL ||
		!path_projects(path) || path->pathtype == T_IndexOnlyScan)
		return NULL;
	/* system columns (tableoid, ctid) are not in a physical target list */
	foreach(lc, jp->targets[i]->exprs)
	{
		if (!IsA(lfirst(lc), Var) || ((Var *) lfirst(lc))->varattno <= 0)
			return NULL;
	}
	tlist = build_physical_tlist(root, rel);
	if (tlist == NIL)
		return NULL;			/* PostgreSQL punts on dropped columns */
	foreach(lc, tlist)
	{
		if (!IsA(lfirst_node(TargetEntry, lc)->expr, Var))
			return NULL;
	}
	return create_pathtarget(root, tlist);
}

/*
 * The eddy is certain: its scanned relations' paths return its columns
 * (their pathtargets change only now), and they are its children.
 */
static void init_join_path_node(EddyJoinPath *jp, RelOptInfo *joinrel,
								List *custom_paths);

static Path *
make_join_path(PlannerInfo *root, EddyJoinPath *jp, RelOptInfo *joinrel,
			   Path **children)
{
	List	   *custom_paths = NIL;
	int			last = intVal(llast(jp->reading_order));
	int			i;

	for (i = 0; i < jp->nrels; i++)
	{
		PathTarget *physical = NULL;

		if (!jp->scanned[i])
			continue;
		if (jp->sub_block)
		{
			/* PostgreSQL's other plans for the block may share the path */
			Path	   *copy = copy_scan_path(children[i]);

			if (copy != NULL)
				children[i] = copy;
		}
		if (i == last)
			physical = physical_target(root, jp, i, children[i]);
		children[i]->pathtarget = physical != NULL ? physical : jp->targets[i];
		custom_paths = lappend(custom_paths, children[i]);
	}
	init_join_path_node(jp, joinrel, custom_paths);
	return &jp->cpath.path;
}

/* The fields of the eddy's CustomPath (make_join_path) */
static void
init_join_path_node(EddyJoinPath *jp, RelOptInfo *joinrel, List *custom_paths)
{
	jp->cpath.path.pathtype = T_CustomScan;
	jp->cpath.path.parent = joinrel;
	jp->cpath.path.pathtarget = joinrel->reltarget;
	jp->cpath.path.param_info = NULL;
	jp->cpath.path.parallel_aware = false;
	jp->cpath.path.parallel_safe = false;
	jp->cpath.path.parallel_workers = 0;
	jp->cpath.path.rows = joinrel->rows;
	jp->cpath.path.startup_cost = jp->serial_basis->startup_cost;
	jp->cpath.path.total_cost = jp->serial_basis->total_cost;
	jp->cpath.path.pathkeys = NIL;
	jp->cpath.flags = 0;
	jp->cpath.custom_paths = custom_paths;
	jp->cpath.custom_private = NIL;
	jp->cpath.methods = &eddy_join_path_methods;
}

/*
 * A relation of the block that PostgreSQL's plan reaches through a
 * parameterized path (the inner side of a nested loop: an index, index-only
 * or bitmap scan per outer row) but that the eddy would scan whole, for it
 * has no index join into it: such a scan can cost orders of magnitude more
 * than PostgreSQL's probes (a star whose fact table PostgreSQL reaches by
 * a bitmap index scan per qualifying dimension row took 13 times as long),
 * so the block keeps PostgreSQL's plan.  NULL if there is none.  Only with
 * eddy.join_method = auto: hash forces the eddy's hash joins.
 */
static Path *
parameterized_scan_lost(EddyJoinPath *jp, Path *path)
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
					int			i = rel_index(jp, inner->parent->relid);

					if (i >= 0 && jp->scanned[i])
						return inner;
				}
				found = parameterized_scan_lost(jp, j->outerjoinpath);
				if (found == NULL)
					found = parameterized_scan_lost(jp, j->innerjoinpath);
				return found;
			}
		default:
			if (wrapped_path(path) != NULL)
				return parameterized_scan_lost(jp, wrapped_path(path));
			return NULL;
	}
}

/* ----------------------------------------------------------------
 *		Parallel eddies (parallel.c)
 *
 * A partial twin of the eddy reads one relation, the partial source,
 * through a partial path (each participant gets its share of the blocks)
 * and every other scanned relation whole in every participant, holding its
 * own join state.  The partial source is the relation PostgreSQL's
 * cheapest partial plan drives (its outermost partial scan).  It is read
 * where a participant stores least: last, so that its rows are never
 * stored (mod_hashjoin.c), unless its share stored costs less than another
 * relation stored whole (TPC-H Q14: each participant stores its share of
 * the month's lineitem rows, 2 MB, instead of all of part, 22 MB, and
 * part's rows probe them).  Its cost is PostgreSQL's
 * partial plan's, plus what the eddy repeats that PostgreSQL shares: a
 * relation PostgreSQL's plan also reads through a partial scan (a Parallel
 * Hash's inner side) costs each participant its whole scan instead of its
 * share, and one PostgreSQL reaches through a parameterized path costs its
 * whole scan.  Where PostgreSQL would run the block in parallel, the eddy
 * is used only if a Gather over its partial twin costs no more than
 * EDDY_PARALLEL_TOLERANCE times a Gather over PostgreSQL's partial plan
 * (1% more: reading a small relation whole in every process).
 *
 * The exchange twin (parallel.c, "Exchanged state") reads every scanned
 * relation through its partial path, in the serial eddy's reading order or
 * that order with another relation moved last, whichever stores least,
 * and after each source but the last every participant replays the rows
 * the others stored, so that each holds the whole state before the next
 * source: the scans are shared as in PostgreSQL's Parallel Hash, the
 * building is not.  Its cost is PostgreSQL's partial plan's, plus the rows
 * a participant replays (the stored rows of every source but the last,
 * but its own share, at EDDY_EXCHANGE_ROW_COST each: writing, reading and
 * routing the row, a hash insertion: on TPC-H Q3 and Q10 a row replayed
 * cost about 1 us, where a sequential scan spends about 0.1 us on a row
 * that cpu_tuple_cost charges 0.01), plus a partial scan of each relation
 * PostgreSQL reaches through a parameterized path.  It is possible only
 * where the eddy reads in build order without migration and keeps STAIRs,
 * the relation read last has a partial path (one without, such as a small
 * table under min_parallel_table_scan_size, is read whole by one process
 * while the others wait: a claimed source, its whole scan counted), and
 * the whole state fits in
 * eddy.max_memory (every participant holds it; an exchanging eddy does not
 * spill).  Of the two twins the cheaper is offered (eddy.parallel_exchange
 * = always: the exchange twin wherever possible, even where it costs more
 * than PostgreSQL's parallel plan, for tests and experiments).
 * ----------------------------------------------------------------
 */
#define EDDY_PARALLEL_TOLERANCE 1.01
#define EDDY_EXCHANGE_ROW_COST	(10 * cpu_tuple_cost)

typedef struct PartialCost
{
	Cost		startup;
	Cost		total;			/* of a Gather over the partial twin */
	Cost		path_total;		/* of the partial twin itself */
	double		state;			/* its estimated join state per participant */
	bool		fits;			/* in eddy.max_memory */
} PartialCost;

/*
 * Does path run joins in parallel: is there a Gather or Gather Merge with a
 * join below it?  (A Gather over one relation's scan the eddy can read as
 * that relation's source, source_path: TPC-H Q17's part.)
 */
static bool
gathered_join(Path *path, bool below_gather)
{
	Path	   *sub;

	check_stack_depth();
	switch (nodeTag(path))
	{
		case T_NestPath:
		case T_HashPath:
		case T_MergePath:
			if (below_gather)
				return true;
			return gathered_join(((JoinPath *) path)->outerjoinpath, false) ||
				gathered_join(((JoinPath *) path)->innerjoinpath, false);
		case T_GatherPath:
		case T_GatherMergePath:
			return gathered_join(wrapped_path(path), true);
		case T_UniquePath:
			return gathered_join(((UniquePath *) path)->subpath, below_gather);
		default:
			sub = wrapped_path(path);
			return sub != NULL && gathered_join(sub, below_gather);
	}
}

/*
 * The cost a serial eddy is given: its join relation's cheapest path's,
 * unless that path runs joins in parallel (a Gather inside the block:
 * TPC-H Q21 under PostgreSQL's defaults, a Gather over its hash join of
 * orders below the semi join), which the serial eddy does not: then the
 * cheapest unparameterized path that does not.  NULL if there is none.
 */
static Path *
serial_cost_basis(RelOptInfo *joinrel)
{
	Path	   *best = NULL;
	ListCell   *lc;

	if (!gathered_join(joinrel->cheapest_total_path, false))
		return joinrel->cheapest_total_path;
	foreach(lc, joinrel->pathlist)
	{
		Path	   *p = lfirst(lc);

		if (p->param_info == NULL && !gathered_join(p, false) &&
			(best == NULL || p->total_cost < best->total_cost))
			best = p;
	}
	return best;
}

/*
 * Would PostgreSQL run the block in parallel: does a Gather over its
 * cheapest partial path cost less than its cheapest serial path, or does
 * that path itself run joins in parallel below the block's top
 * (gathered_join)?  The comparison is made on the join alone, before any
 * partial aggregation above it (which favours the parallel plan further).
 * *gather_cost gets the cost of the cheaper of the two.
 */
static bool
parallel_plan_cheaper(PlannerInfo *root, RelOptInfo *joinrel, Cost *gather_cost)
{
	GatherPath *gather;
	bool		inside;

	if (joinrel->cheapest_total_path == NULL)
		return false;
	inside = gathered_join(joinrel->cheapest_total_path, false);
	*gather_cost = joinrel->cheapest_total_path->total_cost;
	if (joinrel->partial_pathlist == NIL)
		return inside;
	gather = create_gather_path(root, joinrel, linitial(joinrel->partial_pathlist),
								joinrel->reltarget, NULL, NULL);
	if (gather->path.total_cost < *gather_cost)
	{
		*gather_cost = gather->path.total_cost;
		return true;
	}
	return inside;
}

/*
 * The relations a partial plan reads through partial scans (*partial) and
 * through parameterized paths (*param), and the first partial scan met
 * going down outer sides first (*driver, -1 if none).
 */
static void
partial_plan_relations(EddyJoinPath *jp, Path *path, uint32 *partial,
					   uint32 *param, int *driver)
{
	check_stack_depth();
	if (path->parent != NULL && path->parent->reloptkind == RELOPT_BASEREL)
	{
		int			i = rel_index(jp, path->parent->relid);

		if (i < 0)
			return;
		if (path->param_info != NULL)
			*param |= 1u << i;
		if (path->parallel_aware)
		{
			*partial |= 1u << i;
			if (*driver < 0)
				*driver = i;
		}
		return;
	}
	switch (nodeTag(path))
	{
		case T_NestPath:
		case T_HashPath:
		case T_MergePath:
			partial_plan_relations(jp, ((JoinPath *) path)->outerjoinpath,
								   partial, param, driver);
			partial_plan_relations(jp, ((JoinPath *) path)->innerjoinpath,
								   partial, param, driver);
			break;
		default:
			if (wrapped_path(path) != NULL)
				partial_plan_relations(jp, wrapped_path(path), partial, param, driver);
			break;
	}
}

/*
 * How many shares a partial path's rows are dealt into: its workers, and
 * the leader's part (costsize.c's get_parallel_divisor, which is static).
 */
static double
partial_divisor(Path *path)
{
	double		divisor = path->parallel_workers;

	if (parallel_leader_participation && 1.0 - 0.3 * divisor > 0)
		divisor += 1.0 - 0.3 * divisor;
	return Max(divisor, 1.0);
}

/* The cheapest partial path of rel that can be the eddy's source, or NULL */
static Path *
partial_source_path(RelOptInfo *rel)
{
	ListCell   *lc;

	foreach(lc, rel->partial_pathlist)	/* cheapest first */
	{
		Path	   *p = lfirst(lc);

		if (p->parallel_aware && p->parallel_safe && p->param_info == NULL &&
			path_projects(p))
			return p;
	}
	return NULL;
}

/*
 * The path a parallel eddy reads relation i through whole: the serial
 * eddy's, unless that one is not parallel-safe (a Gather), or NULL.
 */
static Path *
parallel_safe_source(EddyJoinPath *jp, Path **children, int i)
{
	if (children[i]->parallel_safe)
		return children[i];
	return source_path(jp->rels[i],
					   list_length(jp->targets[i]->exprs) >
					   list_length(jp->rels[i]->reltarget->exprs),
					   true, false);
}

/*
 * The partial source of the eddy's partial twin: its partial path
 * (returned), its relation (*rel), the reading order with it last
 * (*order) and the twin's costs (*cost), and per scanned relation the path
 * the twin reads (pchildren: the serial eddy's unless that one is not
 * parallel-safe, a Gather); or NULL with the reason (*why).
 */
static Path *
partial_source(PlannerInfo *root, EddyJoinPath *jp, RelOptInfo *joinrel,
			   Path **children, Path **pchildren, int *rel, List **order,
			   PartialCost *cost, const char **why)
{
	Path	   *pg_partial;
	Path	   *child = NULL;
	uint32		partial = 0;
	uint32		param = 0;
	int			driver = -1;
	Cost		extra = 0;
	int			nstairs;
	double		state;
	double		share;
	List	   *others;
	GatherPath *gather;
	Path		costed;
	int			i;
	ListCell   *lc;

	*rel = -1;
	if (max_parallel_workers_per_gather <= 0)
	{
		*why = "max_parallel_workers_per_gather is 0";
		return NULL;
	}
	if (!joinrel->consider_parallel)
	{
		*why = "the block is not parallel-safe";
		return NULL;
	}
	if (joinrel->partial_pathlist == NIL)
	{
		*why = "PostgreSQL found no partial plan for it";
		return NULL;
	}
	pg_partial = linitial(joinrel->partial_pathlist);
	partial_plan_relations(jp, pg_partial, &partial, &param, &driver);

	/* PostgreSQL's driving relation, or else the largest partial one */
	if (driver >= 0 && jp->scanned[driver])
		child = partial_source_path(jp->rels[driver]);
	if (child != NULL)
		*rel = driver;
	else
	{
		for (i = 0; i < jp->nrels; i++)
		{
			Path	   *p;

			if (!jp->scanned[i] || !(partial & (1u << i)))
				continue;
			p = partial_source_path(jp->rels[i]);
			if (p != NULL && (child == NULL || jp->rels[i]->rows > jp->rels[*rel]->rows))
			{
				child = p;
				*rel = i;
			}
		}
	}
	if (child == NULL)
	{
		*why = "no relation it scans has a partial path it can read";
		return NULL;
	}
	for (i = 0; i < jp->nrels; i++)
	{
		if (!jp->scanned[i] || i == *rel)
			continue;
		pchildren[i] = parallel_safe_source(jp, children, i);
		if (pchildren[i] == NULL)
		{
			*why = psprintf("relation \"%s\" has no parallel-safe scan the eddy can read",
							get_rel_name(planner_rt_fetch(jp->rels[i]->relid, root)->relid));
			return NULL;
		}
		if (param & (1u << i))
			extra += pchildren[i]->total_cost;
		else if (partial & (1u << i))
		{
			Path	   *p = partial_source_path(jp->rels[i]);

			extra += pchildren[i]->total_cost - (p != NULL ? p->total_cost : 0);
		}
	}
	pchildren[*rel] = child;

	/*
	 * Where the partial source is read: at the place in the serial eddy's
	 * reading order where a participant stores least (its share of the
	 * partial source's rows counting where they are stored), last on a tie,
	 * where nothing of it is stored and its rows need no projection.
	 * Whether that fits in eddy.max_memory decides between the twins
	 * (EddyCreateJoinPath).
	 */
	others = NIL;
	foreach(lc, jp->reading_order)
		if (intVal(lfirst(lc)) != *rel)
			others = lappend(others, lfirst(lc));
	share = 1.0 / partial_divisor(child);
	*order = NIL;
	state = 0;
	for (i = list_length(others); i >= 0; i--)
	{
		List	   *candidate = list_insert_nth(list_copy(others), i,
												makeInteger(*rel));
		double		s = estimated_join_state(root, jp, candidate, *rel, share,
											 EDDY_STATE_UPPER, &nstairs);

		if (*order == NIL || s < state)
		{
			*order = candidate;
			state = s;
		}
	}
	cost->fits = nstairs == 0 || state <= (double) EddyMaxMemoryBytes(nstairs);
	cost->state = state;
	cost->startup = pg_partial->startup_cost;
	cost->path_total = pg_partial->total_cost + Max(extra, 0);
	/* a Gather over PostgreSQL's partial plan at the twin's cost */
	costed = *pg_partial;
	costed.total_cost = cost->path_total;
	gather = create_gather_path(root, joinrel, &costed, joinrel->reltarget, NULL, NULL);
	cost->total = gather->path.total_cost;
	return child;
}

/*
 * The exchange twin (above): per scanned relation its partial path
 * (xchildren), or, for one without a partial path but the last, the path
 * one process reads it whole through (its bit set in *claimed: the others
 * wait at the exchange, so its whole cost counts), the reading order
 * (*order) and the costs (*cost); false with the reason (*why) where there
 * is none.
 */
static bool
exchange_sources(PlannerInfo *root, EddyJoinPath *jp, RelOptInfo *joinrel,
				 Path **children, Path **xchildren, uint32 *claimed, List **order,
				 PartialCost *cost, const char **why)
{
	double		state;
	int			nstairs;
	Path	   *pg_partial;
	uint32		partial = 0;
	uint32		param = 0;
	int			driver = -1;
	int			last = -1;
	Cost		extra = 0;
	double		rows = 0;
	GatherPath *gather;
	Path		costed;
	int			i;
	ListCell   *lc;

	if (eddy_parallel_exchange == EDDY_EXCHANGE_OFF)
	{
		*why = "eddy.parallel_exchange is off";
		return false;
	}
	if (max_parallel_workers_per_gather <= 0 || !joinrel->consider_parallel ||
		joinrel->partial_pathlist == NIL)
	{
		*why = "no parallel plan";
		return false;
	}
	if (!reads_in_build_order() || eddy_state_mode != EDDY_STATE_MODE_STAIRS)
	{
		*why = "the eddy does not read its sources one after another into STAIRs";
		return false;
	}
	/*
	 * The reading order: the serial eddy's, or that order with another
	 * scanned relation moved last, whichever stores least (every
	 * participant holds the whole state, which must fit).
	 */
	*order = least_state_order(root, jp, jp->reading_order, false, false, &state,
							   &nstairs);
	if (nstairs > 0 && state > (double) EddyMaxMemoryBytes(nstairs))
	{
		*why = psprintf("its whole state (%.0f kB), which every participant would hold, exceeds eddy.max_memory",
						state / 1024);
		return false;
	}
	foreach(lc, *order)
		if (jp->scanned[intVal(lfirst(lc))])
			last = intVal(lfirst(lc));
	pg_partial = linitial(joinrel->partial_pathlist);
	partial_plan_relations(jp, pg_partial, &partial, &param, &driver);
	for (i = 0; i < jp->nrels; i++)
	{
		if (!jp->scanned[i])
			continue;
		xchildren[i] = partial_source_path(jp->rels[i]);
		if (xchildren[i] == NULL && i != last)
		{
			/* one process reads it whole, the others wait (a claimed source) */
			xchildren[i] = parallel_safe_source(jp, children, i);
			if (xchildren[i] != NULL)
			{
				*claimed |= 1u << i;
				extra += xchildren[i]->total_cost;
			}
		}
		if (xchildren[i] == NULL)
		{
			*why = psprintf("relation \"%s\" has no parallel-safe scan the eddy can read%s",
							get_rel_name(planner_rt_fetch(jp->rels[i]->relid, root)->relid),
							i == last ? " partially, and it would be read last" : "");
			return false;
		}
		if (param & (1u << i))
			extra += xchildren[i]->total_cost;
		if (i != last)
			rows += stored_rows(root, jp, i);
	}
	extra += rows * (1.0 - 1.0 / partial_divisor(pg_partial)) * EDDY_EXCHANGE_ROW_COST;
	cost->fits = true;
	cost->state = state;
	cost->startup = pg_partial->startup_cost;
	cost->path_total = pg_partial->total_cost + extra;
	costed = *pg_partial;
	costed.total_cost = cost->path_total;
	gather = create_gather_path(root, joinrel, &costed, joinrel->reltarget, NULL, NULL);
	cost->total = gather->path.total_cost;
	return true;
}

/*
 * A shallow copy of a scan path, whose target can then be set without
 * touching the path other plans share (the serial eddy's, or PostgreSQL's
 * own where only the partial twin replaces its plans); NULL for a kind of
 * path not copied here.
 */
static Path *
copy_scan_path(Path *path)
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
 * The partial twin of the eddy jp (after make_join_path, whose children
 * may be the same paths: the twin's are copies where they can be, and a
 * path that could not be copied gets the relation's plain target, right
 * for both).
 */
static Path *
make_partial_join_path(PlannerInfo *root, EddyJoinPath *jp, RelOptInfo *joinrel,
					   Path **pchildren, List *order, PartialCost *cost)
{
	EddyJoinPath *twin = (EddyJoinPath *) newNode(sizeof(EddyJoinPath), T_CustomPath);
	Path	   *pg_partial = linitial(joinrel->partial_pathlist);
	List	   *custom_paths = NIL;
	int			i;

	memcpy(twin, jp, sizeof(EddyJoinPath));
	for (i = 0; i < jp->nrels; i++)
	{
		PathTarget *physical = NULL;
		Path	   *copy;

		if (!jp->scanned[i])
			continue;
		copy = copy_scan_path(pchildren[i]);
		/* the source read last: as make_join_path's last */
		if (copy != NULL)
		{
			pchildren[i] = copy;
			if (i == intVal(llast(order)))
				physical = physical_target(root, jp, i, pchildren[i]);
		}
		pchildren[i]->pathtarget = physical != NULL ? physical : jp->targets[i];
		custom_paths = lappend(custom_paths, pchildren[i]);
	}
	twin->reading_order = order;
	twin->est_state = cost->state;
	twin->cpath.path.parallel_aware = true;
	twin->cpath.path.parallel_safe = true;
	twin->cpath.path.parallel_workers = pg_partial->parallel_workers;
	twin->cpath.path.rows = pg_partial->rows;
	twin->cpath.path.startup_cost = cost->startup;
	twin->cpath.path.total_cost = cost->path_total;
	twin->cpath.custom_paths = custom_paths;
	return &twin->cpath.path;
}

/*
 * Build an EddyJoinPath for the block whose final relation is joinrel, or
 * return NULL (with the reason at DEBUG1) and leave every path as it was.
 * *partial gets its partial twin (a parallel eddy), or NULL.
 */
Path *
EddyCreateJoinPath(PlannerInfo *root, RelOptInfo *joinrel, List *initial_rels,
				   bool sub_block, Path **partial)
{
	EddyJoinPath *jp;
	Path	   *serial;
	Path	   *partial_child;
	Path	  **pchildren;		/* per scanned relation: the twin's source */
	int			partial_rel = -1;
	List	   *partial_order = NIL;
	PartialCost partial_cost = {0, 0, 0, 0, false};
	PartialCost exchange_cost = {0, 0, 0, 0, false};
	Path	  **xchildren;		/* ... the exchange twin's */
	List	   *exchange_order = NIL;
	uint32		claimed = 0;
	bool		exchange = false;
	const char *why_not = NULL;
	const char *why_no_exchange = NULL;
	bool		serial_fits;
	bool		partial_fits;
	Cost		pg_gather_cost = 0;
	List	   *clauses;
	List	   *nestloops = NIL;
	List	   *preferred = NIL;	/* clauses PostgreSQL joins on */
	List	   *candidates;		/* JoinEdges */
	List	   *selections = NIL;
	int		   *incoming;		/* per relation: index joins into it */
	Path	  **children;		/* per scanned relation: its source path */
	int			i;
	ListCell   *lc;

	*partial = NULL;
	if (joinrel->cheapest_total_path == NULL)
		return NULL;

	jp = (EddyJoinPath *) newNode(sizeof(EddyJoinPath), T_CustomPath);
	jp->nrels = list_length(initial_rels);
	jp->sub_block = sub_block;
	jp->serial_basis = serial_cost_basis(joinrel);
	jp->rels = palloc(sizeof(RelOptInfo *) * jp->nrels);
	jp->scanned = palloc(sizeof(bool) * jp->nrels);
	jp->targets = palloc0(sizeof(PathTarget *) * jp->nrels);
	jp->jointype = palloc(sizeof(JoinType) * jp->nrels);
	jp->sjinfo = palloc0(sizeof(SpecialJoinInfo *) * jp->nrels);
	jp->semi_from = palloc(sizeof(int) * jp->nrels);
	jp->inner_quals = palloc0(sizeof(List *) * jp->nrels);
	for (i = 0; i < jp->nrels; i++)
	{
		jp->jointype[i] = JOIN_INNER;
		jp->semi_from[i] = -1;
	}
	i = 0;
	foreach(lc, initial_rels)
		jp->rels[i++] = lfirst(lc);
	incoming = palloc0(sizeof(int) * jp->nrels);
	children = palloc0(sizeof(Path *) * jp->nrels);

	clauses = collect_clauses_and_order(root, jp, joinrel->cheapest_total_path,
										&nestloops, &preferred);
	if (!semi_join_clauses(root, jp, joinrel, &clauses))
		return NULL;
	candidates = classify_clauses(jp, clauses, preferred, &selections);
	mark_nestloop_index_joins(root, jp, candidates, nestloops);
	if (!semi_join_edges(root, jp, candidates))
		return NULL;
	jp->edges = choose_spanning_tree(root, jp, candidates, incoming, &selections);
	choose_index_joins(root, jp, jp->edges, incoming);
	index_joined_relations(root, jp, jp->edges, &selections);
	jp->selections = selections;
	for (i = 0; i < jp->nrels; i++)
	{
		if (jp->jointype[i] != JOIN_INNER && jp->scanned[i])
		{
			elog(DEBUG1, "eddy: join block not used: the inner relation of a semi or anti join is not reached through an index");
			return NULL;
		}
	}

	if (eddy_join_method == EDDY_JOIN_AUTO)
	{
		Path	   *lost = parameterized_scan_lost(jp, joinrel->cheapest_total_path);

		if (lost != NULL)
		{
			elog(DEBUG1, "eddy: join block not used: PostgreSQL reaches relation \"%s\" through a parameterized %s that the eddy has no index join for, and would scan it whole",
				 get_rel_name(planner_rt_fetch(lost->parent->relid, root)->relid),
				 IsA(lost, BitmapHeapPath) ? "bitmap heap scan" :
				 IsA(lost, IndexPath) ? "index scan" : "scan");
			return NULL;
		}
	}

	if (!modules_fit(root, jp) ||
		!columns_and_source_paths(root, jp, children))
		return NULL;
	serial_fits = join_state_fits(root, jp);

	/* a parallel eddy, and whether it may replace PostgreSQL's plan */
	pchildren = palloc0(sizeof(Path *) * jp->nrels);
	partial_child = partial_source(root, jp, joinrel, children, pchildren,
								   &partial_rel, &partial_order, &partial_cost,
								   &why_not);
	xchildren = palloc0(sizeof(Path *) * jp->nrels);
	if (!exchange_sources(root, jp, joinrel, children, xchildren, &claimed,
						  &exchange_order, &exchange_cost, &why_no_exchange))
		;						/* why_no_exchange says why */
	else if (partial_child != NULL && exchange_cost.total >= partial_cost.total &&
			 eddy_parallel_exchange != EDDY_EXCHANGE_ALWAYS)
		why_no_exchange = psprintf("it would cost more still (%.0f)", exchange_cost.total);
	else
	{
		exchange = true;
		pchildren = xchildren;
		partial_order = exchange_order;
		partial_cost = exchange_cost;
		for (i = 0; i < jp->nrels; i++)
			if (xchildren[i] != NULL)
				partial_child = xchildren[i];
	}
	if (parallel_plan_cheaper(root, joinrel, &pg_gather_cost))
	{
		if (partial_child == NULL)
		{
			elog(DEBUG1, "eddy: join block not used: PostgreSQL's plan for it is parallel, and a parallel eddy is not possible: %s; and with exchanged state: %s",
				 why_not, why_no_exchange);
			return NULL;
		}
		if (partial_cost.total > pg_gather_cost * EDDY_PARALLEL_TOLERANCE &&
			!(exchange && eddy_parallel_exchange == EDDY_EXCHANGE_ALWAYS))
		{
			if (exchange)
				elog(DEBUG1, "eddy: join block not used: PostgreSQL's plan for it is parallel, and a parallel eddy would cost more (%.0f against %.0f): every process replays the rows the others stored",
					 partial_cost.total, pg_gather_cost);
			else
				elog(DEBUG1, "eddy: join block not used: PostgreSQL's plan for it is parallel, and a parallel eddy would cost more (%.0f against %.0f): it reads the other relations than \"%s\" whole in every process; and with exchanged state: %s",
					 partial_cost.total, pg_gather_cost,
					 get_rel_name(planner_rt_fetch(jp->rels[partial_rel]->relid, root)->relid),
					 why_no_exchange);
			return NULL;
		}

		/*
		 * Within the tolerance the twin is costed as PostgreSQL's partial
		 * plan, so that above the block the choice between a serial and a
		 * parallel plan is the one PostgreSQL made: the serial eddy must not
		 * win by the tolerance (TPC-H Q10 with parallel workers at 64MB:
		 * 1.25x PostgreSQL's parallel plan).
		 */
		partial_cost.path_total =
			Min(partial_cost.path_total,
				((Path *) linitial(joinrel->partial_pathlist))->total_cost);
	}

	/*
	 * Where only the partial twin fits (each participant stores its share
	 * of a relation), it alone is offered: the caller keeps PostgreSQL's
	 * serial plans beside it.  Where neither fits, both are, and the eddy
	 * spills what outgrows the limit (spill.c), unless the tables it stores
	 * for certain already outgrow it: then it would spill for certain, and
	 * a spilled eddy is slower than PostgreSQL's batched hash joins (TPC-H
	 * orders joined to lineitem under PostgreSQL's defaults, 1.28x).
	 */
	partial_fits = partial_child != NULL && partial_cost.fits;
	if (!serial_fits && !partial_fits &&
		jp->certain_state > (double) EddyMaxMemoryBytes(jp->est_nstairs))
	{
		elog(DEBUG1, "eddy: join block not used: its estimated join state (%.0f kB, %.0f kB of it in tables stored for certain) exceeds eddy.max_memory (%zu kB): it would spill, which PostgreSQL's batched hash joins do faster",
			 jp->est_state / 1024, jp->certain_state / 1024,
			 EddyMaxMemoryBytes(jp->est_nstairs) / 1024);
		return NULL;
	}

	/*
	 * Likewise a serial eddy with no parallel twin whose likely state (the
	 * tables it stores for certain, and the rows its index joins reach by
	 * PostgreSQL's estimates of those joins) outgrows the limit: it is
	 * likely to spill, and the batches read the sources they do not
	 * partition, and their index joins, again (TPC-H Q7 and Q9 under
	 * PostgreSQL's defaults with no parallel worker: 2.2x and 1.5x
	 * PostgreSQL's plan).  Where a parallel twin is offered, each
	 * participant stores a share, and the rule above decides.  Within
	 * EDDY_LIKELY_MARGIN of the limit counts as over: this estimate is no
	 * bound either way (Q7: 31.9 MB likely, a peak of 33.5 MB unspilled,
	 * the limit 32 MB; Q18: 24.7 MB, 20.4 MB).
	 */
	if (!serial_fits && partial_child == NULL &&
		jp->likely_state > EDDY_LIKELY_MARGIN * (double) EddyMaxMemoryBytes(jp->est_nstairs))
	{
		elog(DEBUG1, "eddy: join block not used: its estimated join state (%.0f kB, %.0f kB of it likely, by PostgreSQL's estimates of the joins) exceeds eddy.max_memory (%zu kB): it would likely spill, which PostgreSQL's batched hash joins do faster",
			 jp->est_state / 1024, jp->likely_state / 1024,
			 EddyMaxMemoryBytes(jp->est_nstairs) / 1024);
		return NULL;
	}
	if ((serial_fits || !partial_fits) && jp->serial_basis != NULL)
		serial = make_join_path(root, jp, joinrel, children);
	else if (jp->serial_basis == NULL && partial_child == NULL)
	{
		elog(DEBUG1, "eddy: join block not used: PostgreSQL's plan runs its joins in parallel, and no parallel eddy is possible");
		return NULL;
	}
	else if (jp->serial_basis == NULL)
	{
		serial = NULL;
		jp->serial_basis = joinrel->cheapest_total_path;
		init_join_path_node(jp, joinrel, NIL);
	}
	else
	{
		serial = NULL;
		init_join_path_node(jp, joinrel, NIL);
		elog(DEBUG1, "eddy: join block: only a parallel eddy fits in eddy.max_memory (%.0f kB per participant, %.0f kB serially)",
			 partial_cost.state / 1024, jp->est_state / 1024);
	}
	if (!serial_fits && !partial_fits)
		serial_state_message(jp);
	if (partial_child != NULL)
	{
		*partial = make_partial_join_path(root, jp, joinrel, pchildren, partial_order,
										  &partial_cost);
		((EddyJoinPath *) *partial)->exchange = exchange;
		((EddyJoinPath *) *partial)->claimed = exchange ? claimed : 0;
	}
	return serial;
}

/* ----------------------------------------------------------------
 *		Plan: eddy_plan_join_path and its phases
 * ----------------------------------------------------------------
 */

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

/* A source description (private.h); attnos is an integer List */
static List *
source_private(EddySourceMethod method, int first_col, int ncols, int plan,
			   Oid heapoid, List *attnos, double rows)
{
	Node	   *items[EddySourceNumItems];

	items[EddySourceMethodItem] = (Node *) makeInteger(method);
	items[EddySourceFirstCol] = (Node *) makeInteger(first_col);
	items[EddySourceNumCols] = (Node *) makeInteger(ncols);
	items[EddySourcePlan] = (Node *) makeInteger(plan);
	items[EddySourceHeapOid] = EddyPrivateOid(heapoid);
	items[EddySourceHeapAttnos] = (Node *) EddyPrivateIntegers(attnos);
	items[EddySourceEstRows] = (Node *) EddyPrivateFloat(rows);
	return EddyPrivateList(items, EddySourceNumItems);
}

/* The selections the plan routes, and where each may have to wait */
typedef struct PlanSelections
{
	List	   *rinfos;			/* RestrictInfos, in module order */
	List	   *prereq_rels;	/* per selection: the relation whose earlier
								 * selections must run first, or -1 */
} PlanSelections;

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
			source = source_private(EDDY_SOURCE_SCAN, first_col,
									list_length(child->targetlist), plan_i,
									InvalidOid, NIL, scan_rows);
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
			source = source_private(EDDY_SOURCE_INDEX, first_col,
									list_length(attnos), -1,
									rte->relid, attnos,
									Max(rel->tuples, rel->rows));
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
		uint32		rels = rel_mask(jp, rinfo->clause_relids);
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
		uint32		rels = rel_mask(jp, rinfo->clause_relids);
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
 * Does a probe into the side of a hash join made of relation `rel` alone
 * (its tree side is `mask`) find at most one match?  When rel has a unique
 * index on its join keys: then a tuple of the other side that found its
 * match needs no storing.
 */
static bool
probe_side_unique(PlannerInfo *root, EddyJoinPath *jp, int rel, uint32 mask,
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
		kexprs = lappend(kexprs, clause_side(rinfo, relinfo->relid));
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

/*
 * Join modules (returned), one per edge of the tree, in jp->edges order.
 * An index join's end 0 is the relation it probes from, end 1 the one it
 * probes into; a hash join's ends are the edge's.  Key expressions and the
 * join condition are appended to *exprs; unique[k][s] tells whether a probe
 * into side s of edge k finds at most one match.
 */
static List *
make_join_modules(PlannerInfo *root, EddyJoinPath *jp, List **scan_quals,
				  List **exprs, bool (*unique)[2])
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
		bool		index_join = e->index_into >= 0;
		List	   *keyclauses = index_join ? e->index_clauses : e->clauses;
		int			side0 = index_join ? (e->index_into == e->a ? e->b : e->a) : e->a;
		int			side1 = (side0 == e->a) ? e->b : e->a;
		uint32		mask0 = tree_side(jp, e, side0);
		uint32		mask1 = all_rels & ~mask0;
		List	   *opnos = NIL;
		List	   *colls = NIL;
		List	   *keys0 = NIL;
		List	   *keys1 = NIL;
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
			*exprs = lappend(*exprs, clause_side(rinfo, relid0));
			keys1 = lappend_int(keys1, list_length(*exprs));
			*exprs = lappend(*exprs, clause_side(rinfo, jp->rels[side1]->relid));
		}
		unique[k][0] = !index_join &&
			probe_side_unique(root, jp, side0, mask0, keyclauses, scan_quals);
		unique[k][1] = !index_join &&
			probe_side_unique(root, jp, side1, mask1, keyclauses, scan_quals);

		items[EddyJoinKind] = (Node *) makeInteger(index_join ?
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
			(Node *) list_make2(EddyPrivateFloat(presize_rows(root, jp, side0, pos)),
								EddyPrivateFloat(presize_rows(root, jp, side1, pos)));
		items[EddyJoinEstSelectivity] =
			EddyPrivateFloat(clauselist_selectivity(root, keyclauses, 0,
													JOIN_INNER, NULL));
		items[EddyJoinIndexOid] = EddyPrivateOid(index_join ? e->index->indexoid : InvalidOid);
		items[EddyJoinIndexCols] = (Node *) (index_join ?
											 EddyPrivateIntegers(e->index_cols) : NIL);
		items[EddyJoinType] = (Node *) makeInteger(index_join ? jp->jointype[side1] : JOIN_INNER);
		items[EddyJoinInnerQual] = (Node *) makeInteger(-1);
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

/*
 * The order in which the eddy reads its sources (returned, a List of
 * Integer), decided at path time with the state estimate (join_state_fits).  A relation whose hash joins all probe unique sides (the center
 * of a star over primary keys) is read last: each of its tuples then finds
 * its matches at once and is never stored.  Otherwise PostgreSQL's build
 * order stands, but for its last relation: the relation read last is never
 * stored (mod_hashjoin.c), so it should be the one whose storing would cost
 * most, a relation stored once per hash join it takes part in: the largest
 * rows x hash joins (on keys: blocks of cross products keep PostgreSQL's
 * order, which decides which row a clause that raises an error meets first,
 * as in vanilla).  PostgreSQL's last relation (its outermost probe) keeps
 * its place unless another's product is larger.  So the middle of a path of
 * equal relations is read last, whichever of them PostgreSQL's statistics
 * made it hash: it is the relation whose tuples each meet both joins
 * complete and can go first to the one that eliminates them (the STAIRs
 * paper's Figure 9).  Where the order so made stores more than
 * eddy.max_memory, join_state_fits tries each other relation last
 * (least_state_order: TPC-H Q21 under PostgreSQL's defaults, where orders,
 * unique on its key, went first and stored 729,413 rows, 60 MB, and its
 * block was declined; read last, it stores the 156,000 l1 rows its index
 * join from supplier makes).
 */
static List *
source_reading_order(EddyJoinPath *jp, bool (*unique)[2])
{
	List	   *order = NIL;
	int		   *unique_edges = palloc0(sizeof(int) * jp->nrels);
	int			k = 0;
	int			pass;
	int			centres = 0;
	int			best = -1;
	double		best_weight = 0.0;
	ListCell   *lc;

	foreach(lc, jp->edges)
	{
		JoinEdge   *e = lfirst(lc);

		/* a hash join's end 0 is e->a, its end 1 e->b */
		if (e->index_into < 0)
		{
			if (unique[k][1])
				unique_edges[e->a]++;
			if (unique[k][0])
				unique_edges[e->b]++;
		}
		k++;
	}
	for (pass = 0; pass < 2; pass++)
	{
		foreach(lc, jp->source_order)
		{
			int			r = lfirst_int(lc);
			int			degree = 0;
			int			keyed = 0;
			bool		all_unique;
			ListCell   *lc2;

			foreach(lc2, jp->edges)
			{
				JoinEdge   *e = lfirst(lc2);

				if (e->index_into < 0 && (e->a == r || e->b == r))
				{
					degree++;
					if (e->clauses != NIL)
						keyed++;
				}
			}
			all_unique = degree > 0 && unique_edges[r] == degree;
			if (all_unique && pass == 0)
				centres++;
			if (all_unique == (pass == 1))
				order = lappend(order, makeInteger(r));
			if (pass == 0 && keyed > 0 &&
				jp->rels[r]->rows * keyed > best_weight)
			{
				best_weight = jp->rels[r]->rows * keyed;
				best = r;
			}
		}
	}

	/* no centre: the heaviest relation last (header) */
	if (centres == 0 && best >= 0 && order != NIL &&
		intVal(llast(order)) != best)
	{
		int			last = intVal(llast(order));

		if (best_weight > jp->rels[last]->rows * keyed_hash_joins(jp, last))
		{
			foreach(lc, order)
			{
				if (intVal(lfirst(lc)) == best)
				{
					order = foreach_delete_current(order, lc);
					break;
				}
			}
			order = lappend(order, makeInteger(best));
		}
	}
	return order;
}

static Plan *
eddy_plan_join_path(PlannerInfo *root, RelOptInfo *joinrel,
					CustomPath *best_path, List *tlist,
					List *clauses, List *custom_plans)
{
	EddyJoinPath *jp = (EddyJoinPath *) best_path;
	CustomScan *cscan = makeNode(CustomScan);
	List	   *scan_tlist = NIL;
	List	   *exprs = NIL;
	List	   *sources;
	List	   *modules;
	PlanSelections sels = {NIL, NIL};
	List	  **scan_quals = palloc0(sizeof(List *) * jp->nrels);	/* restrictions
																	 * a source's
																	 * scan keeps */
	bool		(*unique)[2] = palloc0(sizeof(bool[2]) * Max(list_length(jp->edges), 1));
	Node	   *priv[EddyPrivNumItems];
	List	   *one_time = NIL;

	sources = make_sources(root, jp, custom_plans, &scan_tlist, &sels, scan_quals);
	add_block_selections(jp, &sels, &one_time);
	modules = make_selection_modules(root, jp, &sels, &exprs);
	modules = list_concat(modules, make_join_modules(root, jp, scan_quals, &exprs, unique));
	if (one_time != NIL)
	{
		exprs = lappend(exprs, make_ands_explicit(one_time));
		priv[EddyPrivOneTimeQual] = (Node *) makeInteger(list_length(exprs) - 1);
	}
	else
		priv[EddyPrivOneTimeQual] = (Node *) makeInteger(-1);

	priv[EddyPrivSources] = (Node *) sources;
	priv[EddyPrivModules] = (Node *) modules;
	/* decided with the estimate (join_state_fits) */
	priv[EddyPrivSourceOrder] = (Node *) jp->reading_order;
	priv[EddyPrivEstState] = (Node *) EddyPrivateFloat(jp->est_state);
	priv[EddyPrivExchange] = (Node *) makeInteger(jp->exchange ?
												  (int) (1 | (jp->claimed << 1)) : 0);

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = NIL;
	cscan->scan.scanrelid = 0;
	cscan->flags = best_path->flags;
	cscan->custom_plans = custom_plans;
	cscan->custom_exprs = exprs;
	cscan->custom_private = EddyPrivateList(priv, EddyPrivNumItems);
	cscan->custom_scan_tlist = scan_tlist;
	cscan->methods = &eddy_scan_methods;

	(void) clauses;				/* a join relation has no restriction clauses */
	return &cscan->scan.plan;
}
