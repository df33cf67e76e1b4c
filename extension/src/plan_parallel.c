/*-------------------------------------------------------------------------
 *
 * plan_parallel.c
 *	  Parallel eddies: the partial twin and the exchange twin of a join
 *	  eddy, run by parallel.c.
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
 *
 * Whether a twin is offered, and whether it may replace PostgreSQL's
 * parallel plan, are gates of the driver (plan_join.c); this file finds
 * the twins and their costs.
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

/* What a participant pays per row it replays (header) */
#define EDDY_EXCHANGE_ROW_COST	(10 * cpu_tuple_cost)

/*
 * Does path run joins in parallel: is there a Gather or Gather Merge with a
 * join below it?  (A Gather over one relation's scan the eddy can read as
 * that relation's source, EddySourcePath: TPC-H Q17's part.)
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
			return gathered_join(EddyWrappedPath(path), true);
		case T_UniquePath:
			return gathered_join(((UniquePath *) path)->subpath, below_gather);
		default:
			sub = EddyWrappedPath(path);
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
Path *
EddySerialCostBasis(RelOptInfo *joinrel)
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
bool
EddyParallelPlanCheaper(PlannerInfo *root, RelOptInfo *joinrel, Cost *gather_cost)
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
		int			i = EddyRelIndex(jp, path->parent->relid);

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
			if (EddyWrappedPath(path) != NULL)
				partial_plan_relations(jp, EddyWrappedPath(path), partial, param, driver);
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
			EddyPathProjects(p))
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
	return EddySourcePath(jp->rels[i],
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
Path *
EddyPartialSource(PlannerInfo *root, EddyJoinPath *jp, RelOptInfo *joinrel,
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
		double		s = EddyEstimatedJoinState(root, jp, candidate, *rel, share,
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
bool
EddyExchangeSources(PlannerInfo *root, EddyJoinPath *jp, RelOptInfo *joinrel,
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
	if (!EddyReadsInBuildOrder() || eddy_state_mode != EDDY_STATE_MODE_STAIRS)
	{
		*why = "the eddy does not read its sources one after another into STAIRs";
		return false;
	}
	/*
	 * The reading order: the serial eddy's, or that order with another
	 * scanned relation moved last, whichever stores least (every
	 * participant holds the whole state, which must fit).
	 */
	*order = EddyLeastStateOrder(root, jp, jp->reading_order, false, false, &state,
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
			rows += EddyStoredRows(root, jp, i);
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
 * The partial twin of the eddy jp (after make_join_path, whose children
 * may be the same paths: the twin's are copies where they can be, and a
 * path that could not be copied gets the relation's plain target, right
 * for both).
 */
Path *
EddyMakePartialJoinPath(PlannerInfo *root, EddyJoinPath *jp, RelOptInfo *joinrel,
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
		copy = EddyCopyScanPath(pchildren[i]);
		/* the source read last: as make_join_path's last */
		if (copy != NULL)
		{
			pchildren[i] = copy;
			if (i == intVal(llast(order)))
				physical = EddyPhysicalTarget(root, jp, i, pchildren[i]);
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
 * The parallel twin of the eddy jp (twin): the partial twin, or the
 * exchange twin where it is possible and costs less (or under
 * eddy.parallel_exchange = always), with why either is not.  Whether it is
 * offered is the driver's gates' decision (plan_join.c).
 */
void
EddyParallelTwin(PlannerInfo *root, EddyJoinPath *jp, RelOptInfo *joinrel,
				 Path **children, EddyTwin *twin)
{
	PartialCost exchange_cost = {0, 0, 0, 0, false};
	Path	  **xchildren;		/* per scanned relation: the exchange twin's */
	List	   *exchange_order = NIL;
	int			i;

	memset(twin, 0, sizeof(EddyTwin));
	twin->rel = -1;
	twin->order = NIL;
	twin->children = palloc0(sizeof(Path *) * jp->nrels);
	twin->child = EddyPartialSource(root, jp, joinrel, children, twin->children,
									&twin->rel, &twin->order, &twin->cost,
									&twin->why_not);
	xchildren = palloc0(sizeof(Path *) * jp->nrels);
	if (!EddyExchangeSources(root, jp, joinrel, children, xchildren,
							 &twin->claimed, &exchange_order, &exchange_cost,
							 &twin->why_no_exchange))
		;						/* why_no_exchange says why */
	else if (twin->child != NULL && exchange_cost.total >= twin->cost.total &&
			 eddy_parallel_exchange != EDDY_EXCHANGE_ALWAYS)
		twin->why_no_exchange = psprintf("it would cost more still (%.0f)",
										 exchange_cost.total);
	else
	{
		twin->exchange = true;
		twin->children = xchildren;
		twin->order = exchange_order;
		twin->cost = exchange_cost;
		for (i = 0; i < jp->nrels; i++)
			if (xchildren[i] != NULL)
				twin->child = xchildren[i];
	}
}
