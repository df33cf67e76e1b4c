/*-------------------------------------------------------------------------
 *
 * join_state.c
 *	  The estimated join state of a join eddy, and the order in which it
 *	  reads its sources.
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
 * parallel one is offered.  (Those decisions are gates of the driver,
 * plan_join.c; this file makes the estimates they read.)  The
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
 * and per STAIR entry follow tuple.c's layout (EddyEstimatedJoinState).
 * Settings read by the executor are those at plan time: a cached plan
 * whose schedule changed afterwards keeps the order it was planned with,
 * and eddy.max_memory is enforced at run time as always.
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

static List *source_reading_order(EddyJoinPath *jp, bool (*unique)[2]);
static List *tiny_scans_first(EddyJoinPath *jp, List *order);

/* Tiny scans first (tiny_scans_first) */
#define EDDY_TINY_SCAN_COST		100.0
#define EDDY_TINY_SCAN_RATIO	100.0

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
	uint32		mask0 = EddyTreeSide(jp, e, e->a);
	int			rel = side == 0 ? e->a : e->b;
	List	  **quals = palloc0(sizeof(List *) * jp->nrels);
	int			i;

	for (i = 0; i < jp->nrels; i++)
		if (jp->scanned[i])
			quals[i] = jp->rels[i]->baserestrictinfo;
	return EddyProbeSideUnique(root, jp, rel, side == 0 ? mask0 : all_rels & ~mask0,
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
double
EddyStoredRows(PlannerInfo *root, EddyJoinPath *jp, int i)
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
bool
EddyReadsInBuildOrder(void)
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
 * likely to store (EddyEstimatedJoinState's EDDY_STATE_LIKELY, and the size
 * of the slot array its STAIRs start with, EddyPresizeRows): PostgreSQL's
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
double
EddyPresizeRows(PlannerInfo *root, EddyJoinPath *jp, int i, const int *pos)
{
	if (jp->scanned[i])
		return jp->rels[i]->rows;
	return likely_index_rows(root, jp, i, pos);
}

/*
 * The join state the eddy would store, in bytes.  Per relation stored in
 * any STAIR, its stored rows (EddyStoredRows) once each (a row is copied into
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
double
EddyEstimatedJoinState(PlannerInfo *root, EddyJoinPath *jp, List *order,
					 int share_rel, double share, EddyStateEstimate kind,
					 int *nstairs)
{
	uint32		all_rels = (jp->nrels >= 32) ? ~0u : ((1u << jp->nrels) - 1);
	bool		build = EddyReadsInBuildOrder();
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
			rows[i] = EddyStoredRows(root, jp, i);
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
		side[0] = EddyTreeSide(jp, e, e->a);
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
List *
EddyLeastStateOrder(PlannerInfo *root, EddyJoinPath *jp, List *order,
				  bool keyed_only, bool certain, double *state, int *nstairs)
{
	List	   *best = order;
	double		best_certain = 0;
	bool		best_fits;
	ListCell   *lc;

	*state = EddyEstimatedJoinState(root, jp, order, -1, 1.0, EDDY_STATE_UPPER, nstairs);
	best_fits = *nstairs == 0 || *state <= (double) EddyMaxMemoryBytes(*nstairs);
	if (certain)
		best_certain = EddyEstimatedJoinState(root, jp, order, -1, 1.0, EDDY_STATE_CERTAIN, nstairs);
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
		st = EddyEstimatedJoinState(root, jp, candidate, -1, 1.0, EDDY_STATE_UPPER, &n);
		fits = n == 0 || st <= (double) EddyMaxMemoryBytes(n);
		if (certain)
			ct = EddyEstimatedJoinState(root, jp, candidate, -1, 1.0, EDDY_STATE_CERTAIN, &n);
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
bool
EddyJoinStateFits(PlannerInfo *root, EddyJoinPath *jp)
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
	jp->est_state = EddyEstimatedJoinState(root, jp, jp->reading_order, -1, 1.0,
										  EDDY_STATE_UPPER, &nstairs);
	if (nstairs > 0 && jp->est_state > (double) EddyMaxMemoryBytes(nstairs))
		jp->reading_order = EddyLeastStateOrder(root, jp, jp->reading_order, true,
											  true, &jp->est_state, &nstairs);
	jp->certain_state = EddyEstimatedJoinState(root, jp, jp->reading_order, -1,
											 1.0, EDDY_STATE_CERTAIN, &nstairs);
	jp->est_nstairs = nstairs;
	if (nstairs == 0 || jp->est_state <= (double) EddyMaxMemoryBytes(nstairs))
		return true;
	/* estimated only where the upper bound does not fit */
	jp->likely_state = EddyEstimatedJoinState(root, jp, jp->reading_order, -1,
											1.0, EDDY_STATE_LIKELY, &nstairs);
	return false;
}

/* A block whose state does not fit (EddyJoinStateFits) may spill */
void
EddySerialStateMessage(EddyJoinPath *jp)
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
PathTarget *
EddyPhysicalTarget(PlannerInfo *root, EddyJoinPath *jp, int i, Path *path)
{
	RelOptInfo *rel = jp->rels[i];
	RangeTblEntry *rte = planner_rt_fetch(rel->relid, root);
	List	   *tlist;
	ListCell   *lc;

	if (!EddyReadsInBuildOrder())
		return NULL;
	if (rte->rtekind != RTE_RELATION || rte->inh || rel->reloptkind != RELOPT_BASEREL ||
		!EddyPathProjects(path) || path->pathtype == T_IndexOnlyScan)
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
 * The order in which the eddy reads its sources (returned, a List of
 * Integer), decided at path time with the state estimate (EddyJoinStateFits).  A relation whose hash joins all probe unique sides (the center
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
 * eddy.max_memory, EddyJoinStateFits tries each other relation last
 * (EddyLeastStateOrder: TPC-H Q21 under PostgreSQL's defaults, where orders,
 * unique on its key, went first and stored 729,413 rows, 60 MB, and its
 * block was declined; read last, it stores the 156,000 l1 rows its index
 * join from supplier makes).  Last, tiny scans move to the front
 * (tiny_scans_first).
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
	return tiny_scans_first(jp, order);
}

/*
 * Tiny scans first.  A scanned relation whose scan costs at most
 * EDDY_TINY_SCAN_COST, and at most 1/EDDY_TINY_SCAN_RATIO of the costliest
 * scan of the block, is read before the others (their order kept), unless it
 * joins on no key (blocks of cross products keep their order, header
 * above); so is one read last, whose storing costs as little.  Reading it
 * costs next to nothing, and a tuple streamed after it meets its whole
 * state (the join it empties may end the eddy before the large relation is
 * read, "Ended Early" in EXPLAIN ANALYZE): PostgreSQL
 * orders a nested loop's inner, or a hash join's outer, after the other side
 * on estimates, and where those are wrong the eddy would otherwise route a
 * large relation's tuples while the tiny one that empties the join is still
 * unread (the misestimation workload's m13: 109 product rows, estimated 1,
 * each went to an index join into sales, 3,505 rows, before category and
 * department, scans of cost 3.5 and 1.25 against product's 478, were read
 * and joined to nothing; read first, they end the eddy before product).
 */
static List *
tiny_scans_first(EddyJoinPath *jp, List *order)
{
	List	   *tiny = NIL;
	List	   *rest = NIL;
	Cost		most = 0.0;
	ListCell   *lc;

	foreach(lc, order)
	{
		RelOptInfo *rel = jp->rels[intVal(lfirst(lc))];

		if (jp->scanned[intVal(lfirst(lc))] && rel->cheapest_total_path)
			most = Max(most, rel->cheapest_total_path->total_cost);
	}
	foreach(lc, order)
	{
		int			r = intVal(lfirst(lc));
		Path	   *path = jp->rels[r]->cheapest_total_path;

		if (jp->scanned[r] && path != NULL &&
			path->total_cost <= EDDY_TINY_SCAN_COST &&
			path->total_cost * EDDY_TINY_SCAN_RATIO <= most &&
			keyed_hash_joins(jp, r) > 0)
			tiny = lappend(tiny, lfirst(lc));
		else
			rest = lappend(rest, lfirst(lc));
	}
	return list_concat(tiny, rest);
}
