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
 * joins (join_method = index); which relations are scanned; the module
 * count, the columns per relation and the path that scans each; the
 * estimated join state and the reading order (join_state.c); the parallel
 * twin (plan_parallel.c): where possible the eddy gets a partial twin for
 * the relation's partial_pathlist; and last the gates (below).  Any of
 * them may still give up, so none touches PostgreSQL's paths: only once
 * the eddy is certain do the chosen scan paths get the eddy's target lists
 * (make_join_path), and a block that falls back keeps its vanilla plan
 * exactly as PostgreSQL made it.  The serial eddy takes the cost of
 * PostgreSQL's cheapest plan that runs no join in parallel
 * (EddySerialCostBasis).  EddyPlanJoinPath (plan_build.c) makes the plan.
 *
 * Gates.  Two kinds of decision keep PostgreSQL's plan, each with its
 * reason at DEBUG1.  Refusals of what the eddy cannot do stay in the
 * phases that find them, since a later phase needs what they check: a
 * semi or anti join of another shape (semijoin.c), one PostgreSQL makes
 * by hashing or merging or whose inner relation no index join reaches,
 * more modules than a done bitmap has bits (EDDY_MAX_MODULES), placeholder
 * variables, a column of a partitioned or inheritance parent missing from
 * its target, and a relation with no unparameterized path returning the
 * columns the eddy needs (join_graph.c).  They have no threshold.  The
 * accept/decline policy, whether an eddy the planner could build is worth
 * it, is one function, join_gates, run once every phase has passed, in
 * this order:
 *
 *	 gate			keeps PostgreSQL's plan when; why; the measurement
 *
 *	 parameterized	(eddy.join_method = auto) PostgreSQL reaches a relation
 *	 scan lost		through a parameterized path (a nested loop's inner
 *					index, index-only or bitmap scan) and the eddy has no
 *					index join into it (EddyParameterizedScanLost); the
 *					eddy would scan it whole.  A star whose fact table
 *					PostgreSQL probes by a bitmap index scan per dimension
 *					row took 13 times as long.  No threshold.  Not where
 *					the one-row guard (join_graph.c) chose the scan.
 *	 parallel plan,	PostgreSQL would run the block in parallel (a Gather
 *	 no twin		over its partial plan costs less than its serial plan,
 *					or its plan runs joins under a Gather) and no parallel
 *					twin is possible.  A serial eddy took 1.8-1.9x
 *					PostgreSQL's parallel plan on TPC-H Q3, Q5 and Q8
 *					(commit 05c8648).  No threshold.
 *	 parallel plan,	... and a Gather over the twin costs more than
 *	 dearer twin	EDDY_PARALLEL_TOLERANCE (1.01) times a Gather over
 *					PostgreSQL's partial plan (an exchange twin under
 *					eddy.parallel_exchange = always passes).  The 1.01 was
 *					set, not measured: commit 05c8648 gives only "1% more:
 *					reading a small relation whole in every process".  One
 *					query, TPC-H Q10 (parallel workers, 64MB: the serial
 *					eddy 1.25x PostgreSQL's parallel plan), is why a twin
 *					within the tolerance is costed as PostgreSQL's partial
 *					plan.
 *	 certain spill	neither the serial eddy's estimated state nor the twin's
 *					share fits in eddy.max_memory, and the tables stored for
 *					certain (certain_rows, join_state.c) already exceed it:
 *					it would spill for certain.  TPC-H orders joined to
 *					lineitem under PostgreSQL's defaults: a spilled eddy
 *					1.28x PostgreSQL's plan.  The threshold is the limit.
 *	 likely spill	no twin, the serial state does not fit, and its likely
 *					state (likely_index_rows, join_state.c) exceeds
 *					EDDY_LIKELY_MARGIN (0.9) of the limit.  The margin rests
 *					on one query, TPC-H Q7 at work_mem 4MB with no worker:
 *					31.9 MB likely for a 32 MB limit, a peak of 33.5 MB,
 *					7.3 s spilled against PostgreSQL's 3.3 s (commit 53607f1,
 *					whose other query, Q9, 90 MB likely for 64 MB, 7.5 s
 *					against 4.9 s, is over the limit with any margin; Q18,
 *					24.7 MB likely, peaks at 20.4 MB: the estimate is no
 *					bound either way).
 *	 parallel		every serial path PostgreSQL has for the block runs
 *	 joins, no twin	joins under a Gather (EddySerialCostBasis: TPC-H Q21
 *					under PostgreSQL's defaults), so a serial eddy has no
 *					cost to take, and no twin is possible.  No threshold.
 *
 * Past the gates the serial eddy is offered, with its twin if there is
 * one; only the twin where only the twin's share fits in eddy.max_memory
 * (logged at DEBUG1) or PostgreSQL's every serial path runs joins in
 * parallel.  A serial eddy whose state does not fit is offered all the
 * same (it spills, spill.c; logged at DEBUG1).
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

/* The share of eddy.max_memory a likely state may reach (join_gates, header) */
#define EDDY_LIKELY_MARGIN	0.9

/* How much more than PostgreSQL's parallel plan a twin may cost (header) */
#define EDDY_PARALLEL_TOLERANCE 1.01

/* What the gates (join_gates) offer */
typedef enum EddyJoinOffer
{
	EDDY_OFFER_NONE,			/* PostgreSQL's plan stays */
	EDDY_OFFER_SERIAL,			/* the serial eddy, and its twin if any */
	EDDY_OFFER_TWIN_ONLY		/* only the twin (PostgreSQL's serial plans
								 * stay beside it) */
} EddyJoinOffer;

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
 * The gates (header): whether the block keeps PostgreSQL's plan, and if
 * not which eddies are offered, from what the phases found.  Each gate
 * that keeps PostgreSQL's plan logs its reason at DEBUG1.  Reads only:
 * the caller makes the paths.
 */
static EddyJoinOffer
join_gates(PlannerInfo *root, EddyJoinPath *jp, RelOptInfo *joinrel,
		   bool serial_fits, EddyTwin *twin)
{
	bool		partial_fits;
	Cost		pg_gather_cost = 0;

	/* parameterized scan lost */
	if (eddy_join_method == EDDY_JOIN_AUTO || eddy_join_method == EDDY_JOIN_HYBRID)
	{
		Path	   *lost = EddyParameterizedScanLost(jp, joinrel->cheapest_total_path);

		if (lost != NULL)
		{
			elog(DEBUG1, "eddy: join block not used: PostgreSQL reaches relation \"%s\" through a parameterized %s that the eddy has no index join for, and would scan it whole",
				 get_rel_name(planner_rt_fetch(lost->parent->relid, root)->relid),
				 IsA(lost, BitmapHeapPath) ? "bitmap heap scan" :
				 IsA(lost, IndexPath) ? "index scan" : "scan");
			return EDDY_OFFER_NONE;
		}
	}

	/* parallel plan, no twin; parallel plan, dearer twin */
	if (EddyParallelPlanCheaper(root, joinrel, &pg_gather_cost))
	{
		if (twin->child == NULL)
		{
			elog(DEBUG1, "eddy: join block not used: PostgreSQL's plan for it is parallel, and a parallel eddy is not possible: %s; and with exchanged state: %s",
				 twin->why_not, twin->why_no_exchange);
			return EDDY_OFFER_NONE;
		}
		if (twin->cost.total > pg_gather_cost * EDDY_PARALLEL_TOLERANCE &&
			!(twin->exchange && eddy_parallel_exchange == EDDY_EXCHANGE_ALWAYS))
		{
			if (twin->exchange)
				elog(DEBUG1, "eddy: join block not used: PostgreSQL's plan for it is parallel, and a parallel eddy would cost more (%.0f against %.0f): every process replays the rows the others stored",
					 twin->cost.total, pg_gather_cost);
			else
				elog(DEBUG1, "eddy: join block not used: PostgreSQL's plan for it is parallel, and a parallel eddy would cost more (%.0f against %.0f): it reads the other relations than \"%s\" whole in every process; and with exchanged state: %s",
					 twin->cost.total, pg_gather_cost,
					 get_rel_name(planner_rt_fetch(jp->rels[twin->rel]->relid, root)->relid),
					 twin->why_no_exchange);
			return EDDY_OFFER_NONE;
		}

		/*
		 * Within the tolerance the twin is costed as PostgreSQL's partial
		 * plan, so that above the block the choice between a serial and a
		 * parallel plan is the one PostgreSQL made: the serial eddy must not
		 * win by the tolerance (TPC-H Q10 with parallel workers at 64MB:
		 * 1.25x PostgreSQL's parallel plan).  (A cost, not a gate: no gate
		 * below reads it.)
		 */
		twin->cost.path_total =
			Min(twin->cost.path_total,
				((Path *) linitial(joinrel->partial_pathlist))->total_cost);
	}

	/*
	 * Certain spill.  Where only the partial twin fits (each participant
	 * stores its share of a relation), it alone is offered: the caller
	 * keeps PostgreSQL's serial plans beside it.  Where neither fits, both
	 * are, and the eddy spills what outgrows the limit (spill.c), unless
	 * the tables it stores for certain already outgrow it: then it would
	 * spill for certain, and a spilled eddy is slower than PostgreSQL's
	 * batched hash joins (TPC-H orders joined to lineitem under
	 * PostgreSQL's defaults, 1.28x).
	 */
	partial_fits = twin->child != NULL && twin->cost.fits;
	if (!serial_fits && !partial_fits &&
		jp->certain_state > (double) EddyMaxMemoryBytes(jp->est_nstairs))
	{
		elog(DEBUG1, "eddy: join block not used: its estimated join state (%.0f kB, %.0f kB of it in tables stored for certain) exceeds eddy.max_memory (%zu kB): it would spill, which PostgreSQL's batched hash joins do faster",
			 jp->est_state / 1024, jp->certain_state / 1024,
			 EddyMaxMemoryBytes(jp->est_nstairs) / 1024);
		return EDDY_OFFER_NONE;
	}

	/*
	 * Likely spill.  Likewise a serial eddy with no parallel twin whose
	 * likely state (the tables it stores for certain, and the rows its
	 * index joins reach by PostgreSQL's estimates of those joins) outgrows
	 * the limit: it is likely to spill, and the batches read the sources
	 * they do not partition, and their index joins, again (TPC-H Q7 and Q9
	 * under PostgreSQL's defaults with no parallel worker: 2.2x and 1.5x
	 * PostgreSQL's plan).  Where a parallel twin is offered, each
	 * participant stores a share, and the rule above decides.  Within
	 * EDDY_LIKELY_MARGIN of the limit counts as over: this estimate is no
	 * bound either way (Q7: 31.9 MB likely, a peak of 33.5 MB unspilled,
	 * the limit 32 MB; Q18: 24.7 MB, 20.4 MB).
	 */
	if (!serial_fits && twin->child == NULL &&
		jp->likely_state > EDDY_LIKELY_MARGIN * (double) EddyMaxMemoryBytes(jp->est_nstairs))
	{
		elog(DEBUG1, "eddy: join block not used: its estimated join state (%.0f kB, %.0f kB of it likely, by PostgreSQL's estimates of the joins) exceeds eddy.max_memory (%zu kB): it would likely spill, which PostgreSQL's batched hash joins do faster",
			 jp->est_state / 1024, jp->likely_state / 1024,
			 EddyMaxMemoryBytes(jp->est_nstairs) / 1024);
		return EDDY_OFFER_NONE;
	}

	/* parallel joins, no twin */
	if ((serial_fits || !partial_fits) && jp->serial_basis != NULL)
	{
		if (!serial_fits && !partial_fits)
			EddySerialStateMessage(jp);
		return EDDY_OFFER_SERIAL;
	}
	if (jp->serial_basis == NULL && twin->child == NULL)
	{
		elog(DEBUG1, "eddy: join block not used: PostgreSQL's plan runs its joins in parallel, and no parallel eddy is possible");
		return EDDY_OFFER_NONE;
	}

	/* only the twin */
	if (jp->serial_basis != NULL)
		elog(DEBUG1, "eddy: join block: only a parallel eddy fits in eddy.max_memory (%.0f kB per participant, %.0f kB serially)",
			 twin->cost.state / 1024, jp->est_state / 1024);
	else if (!serial_fits && !partial_fits)
		EddySerialStateMessage(jp);
	return EDDY_OFFER_TWIN_ONLY;
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
	Path	   *serial = NULL;
	EddyTwin	twin;
	bool		serial_fits;
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
	jp->guarded = palloc0(sizeof(bool) * jp->nrels);
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

	/* the join graph, and what the eddy cannot do (header) */
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
	if (!EddyModulesFit(root, jp) ||
		!EddyColumnsAndSourcePaths(root, jp, children))
		return NULL;

	/* the state, the twins, and the gates */
	serial_fits = EddyJoinStateFits(root, jp);
	EddyParallelTwin(root, jp, joinrel, children, &twin);
	switch (join_gates(root, jp, joinrel, serial_fits, &twin))
	{
		case EDDY_OFFER_NONE:
			return NULL;
		case EDDY_OFFER_SERIAL:
			serial = make_join_path(root, jp, joinrel, children);
			break;
		case EDDY_OFFER_TWIN_ONLY:
			if (jp->serial_basis == NULL)
				jp->serial_basis = joinrel->cheapest_total_path;
			init_join_path_node(jp, joinrel, NIL);
			break;
	}
	if (twin.child != NULL)
	{
		*partial = EddyMakePartialJoinPath(root, jp, joinrel, twin.children,
										   twin.order, &twin.cost);
		((EddyJoinPath *) *partial)->exchange = twin.exchange;
		((EddyJoinPath *) *partial)->claimed = twin.exchange ? twin.claimed : 0;
	}
	return serial;
}
