/*-------------------------------------------------------------------------
 *
 * plan_join.c
 *	  Join eddies: the driver that decides whether a select-project-join
 *	  block becomes an Eddy CustomScan routing tuples through its modules.
 *
 * planner.c calls EddyCreateJoinPath for the final relation of a join
 * search whose relations are all inner-joined base relations, or the one
 * inner relation of a semi or anti join (made an index semi or anti join:
 * semijoin.c), after PostgreSQL has planned it; or, in a block with other
 * special joins, for a join relation below them (planner.c, "Sub-blocks":
 * sub_block, whose scan paths are copied before they get the eddy's
 * targets, since PostgreSQL's other plans for the block may share them).
 * We read PostgreSQL's cheapest plan for the join clauses it enforces,
 * the joins it made as index nested loops, and the scan of each relation,
 * and make of them the eddy's modules and sources (join_graph.c, which
 * says how).
 *
 * The planner's files, each of one concern, called downward only:
 *
 *	 plan_join.c		this driver: the phases in order, and the gates
 *	 join_graph.c		PostgreSQL's plan read, the join graph, spanning
 *						tree and index joins, the columns and source paths
 *	 semijoin.c			semi and anti joins as index semi and anti joins
 *	 join_state.c		the estimated join state and the reading order
 *	 plan_parallel.c	the partial and exchange twins (parallel.c)
 *	 plan_build.c		the CustomScan of a join block and its
 *						custom_private (private.h)
 *	 plan.c				selection eddies, custom_private builders
 *	 clauses.c			clause helpers (candidates, may-raise, order)
 *
 * EddyCreateJoinPath runs in phases: collect the clauses and PostgreSQL's
 * build order; classify the clauses into candidate edges and selections;
 * mark PostgreSQL's index nested loops; choose the spanning tree; index
 * joins (join_method = index); which relations are scanned; then the
 * checks (no relation PostgreSQL reaches through a parameterized path left
 * to a full scan, EddyParameterizedScanLost; module count, columns per
 * relation and the path that scans each; the estimated join state and
 * the reading order).  Any of them may still give up, so none
 * touches PostgreSQL's paths: only once the eddy is certain do the chosen
 * scan paths get the eddy's target lists (make_join_path), and a block that
 * falls back keeps its vanilla plan exactly as PostgreSQL made it.
 * Last, the parallel decision (plan_parallel.c): where possible
 * the eddy gets a partial twin for the relation's partial_pathlist, and
 * where PostgreSQL would run the block in parallel (a Gather over its
 * partial plan, or its cheapest plan running joins below a Gather inside
 * the block) and the twin would cost more than that plan, the block keeps
 * PostgreSQL's plan; the serial eddy takes the cost of PostgreSQL's
 * cheapest plan that runs no join in parallel (EddySerialCostBasis).
 * EddyPlanJoinPath (plan_build.c) makes the plan.
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
#include "plan_join.h"
#include "private.h"

/* The share of eddy.max_memory a likely state may reach (EddyCreateJoinPath) */
#define EDDY_LIKELY_MARGIN	0.9

/* How much more than PostgreSQL's parallel plan a parallel twin may cost */
#define EDDY_PARALLEL_TOLERANCE 1.01

static const CustomPathMethods eddy_join_path_methods = {
	.CustomName = EDDY_NODE_NAME,
	.PlanCustomPath = EddyPlanJoinPath,
};

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
			Path	   *copy = EddyCopyScanPath(children[i]);

			if (copy != NULL)
				children[i] = copy;
		}
		if (i == last)
			physical = EddyPhysicalTarget(root, jp, i, children[i]);
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
	jp->serial_basis = EddySerialCostBasis(joinrel);
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

	clauses = EddyCollectClausesAndOrder(root, jp, joinrel->cheapest_total_path,
										&nestloops, &preferred);
	if (!EddySemiJoinClauses(root, jp, joinrel, &clauses))
		return NULL;
	candidates = EddyClassifyClauses(jp, clauses, preferred, &selections);
	EddyMarkNestLoopIndexJoins(root, jp, candidates, nestloops);
	if (!EddySemiJoinEdges(root, jp, candidates))
		return NULL;
	jp->edges = EddyChooseSpanningTree(root, jp, candidates, incoming, &selections);
	EddyChooseIndexJoins(root, jp, jp->edges, incoming);
	EddyIndexJoinedRelations(root, jp, jp->edges, &selections);
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
		Path	   *lost = EddyParameterizedScanLost(jp, joinrel->cheapest_total_path);

		if (lost != NULL)
		{
			elog(DEBUG1, "eddy: join block not used: PostgreSQL reaches relation \"%s\" through a parameterized %s that the eddy has no index join for, and would scan it whole",
				 get_rel_name(planner_rt_fetch(lost->parent->relid, root)->relid),
				 IsA(lost, BitmapHeapPath) ? "bitmap heap scan" :
				 IsA(lost, IndexPath) ? "index scan" : "scan");
			return NULL;
		}
	}

	if (!EddyModulesFit(root, jp) ||
		!EddyColumnsAndSourcePaths(root, jp, children))
		return NULL;
	serial_fits = EddyJoinStateFits(root, jp);

	/* a parallel eddy, and whether it may replace PostgreSQL's plan */
	pchildren = palloc0(sizeof(Path *) * jp->nrels);
	partial_child = EddyPartialSource(root, jp, joinrel, children, pchildren,
								   &partial_rel, &partial_order, &partial_cost,
								   &why_not);
	xchildren = palloc0(sizeof(Path *) * jp->nrels);
	if (!EddyExchangeSources(root, jp, joinrel, children, xchildren, &claimed,
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
	if (EddyParallelPlanCheaper(root, joinrel, &pg_gather_cost))
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
		EddySerialStateMessage(jp);
	if (partial_child != NULL)
	{
		*partial = EddyMakePartialJoinPath(root, jp, joinrel, pchildren, partial_order,
										  &partial_cost);
		((EddyJoinPath *) *partial)->exchange = exchange;
		((EddyJoinPath *) *partial)->claimed = exchange ? claimed : 0;
	}
	return serial;
}
