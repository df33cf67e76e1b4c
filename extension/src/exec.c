/*-------------------------------------------------------------------------
 *
 * exec.c
 *	  The Eddy executor node: its setup and its state machine.
 *
 * An eddy has sources (the relations of its block: scanned by a child
 * plan, or reached through an index join) and modules (selections, hash
 * joins in STAIR or SteM mode, index joins: module.h's vtable), described by
 * custom_private (private.h).  It reads tuples from its sources and routes
 * each through the modules by the router's table (routing.c): the tuple's
 * signature (sources spanned, modules done) selects the next module and
 * direction; a selection drops it or passes it on; a join stores it and
 * pushes a frame whose matches are routed in turn; a tuple that spans
 * every source and has done every module is projected and returned.
 * Every eddy.reopt_frequency tuples routed, the router recomputes its
 * decisions.
 *
 * The main loop is a state machine, PostgreSQL style (eddy_exec_node):
 *
 *	 EDDY_STATE_READ	read the next source tuple (EddyReadSource,
 *						source.c) from the source the schedule chooses
 *						(schedule.c; by default one after another in
 *						PostgreSQL's build order, centres of stars last);
 *						none left: DONE.  The first READ reads one tuple of
 *						every source first: one empty source makes the
 *						result empty, and the eddy DONE at once.  After a
 *						source runs out, a module whose state says no result
 *						can be made any more (a hash join with a side read to
 *						its end and nothing stored there) ends the result
 *						too: DONE without reading the rest
 *	 EDDY_STATE_ROUTE	route the current tuple until it leaves: output
 *						(returned; then DRAIN), dropped, or handed to a join
 *						(DRAIN); a unique probe's one result goes on at once.
 *						In SteM mode a source tuple is built into its
 *						relation's STAIRs when it first goes to a join
 *						(BuildFirst: the es->build_first callback,
 *						mod_stems.c)
 *	 EDDY_STATE_DRAIN	the iterator (Deshpande 2004, section 2.1.4): take the
 *						next match of the frame on top of the stack and route
 *						it (ROUTE); a frame with no more matches is popped;
 *						an empty stack is a point of stasis
 *	 EDDY_STATE_STASIS	a point of stasis: nothing routed is in flight, so
 *						the transient arena is rewound; this is where
 *						whatever changes state wholesale belongs: state
 *						migration (migrate.c), and spilling when the state
 *						outgrew eddy.max_memory (spill.c); then READ
 *	 EDDY_STATE_DONE	every source exhausted and the stack empty; a
 *						spilled eddy first joins its batches one after
 *						another, each read from files as its sources
 *
 * The states are laid out in the order a source tuple goes through them,
 * each falling through to the next, so that a tuple read, routed and
 * drained costs one turn of the loop.
 *
 * Invariants.  Every tuple in flight (the current tuple and every frame's
 * probe and matches) was made from the source tuple read last, and the
 * stack holds each module at most once (a match has done the module).
 * Nothing reads the transient arena across a point of stasis, and nothing
 * changes stored state wholesale anywhere else: the services (migration,
 * spilling, the parallel exchange) act only there, through the modules'
 * state interface (module.h), never by testing what kind a module is.  A
 * tuple visits each module at most once (its done bits), so routing ends.
 *
 * Where the rest of the loop lives.  source.c reads the sources (the
 * schedule, peeking, the exchange hand-off, the routing hold, spilled
 * batches).  local.c has the chains of selections that run on a source's
 * own tuple: the one-source eddy of filters only (the chain case, whose
 * READ walks the chain inline, with no eddy tuple and no copy: its
 * ExecProcNode is local.c's EddyExecChain instead of eddy_exec_node), and
 * the local chains of an eddy of several sources, in the scan's qual or
 * on the values it returned.  replay.c routes stored rows again for
 * the services, with the counters saved and restored around it.  All of
 * them share loop.h; the services and modules below them never include
 * it, and reach the loop only through EddyPushFrame, EddyReplay, the
 * counters' save and restore, and the es->build_first callback.
 *
 * In a parallel plan each participant runs its own eddy over its share of
 * one source and the whole of the others (parallel.c).
 *
 * Settings are read when the node starts (eddy.routing_policy,
 * eddy.reopt_frequency, eddy.lottery_window, eddy.state_mode,
 * eddy.random_start: with a seed, the build schedule's order of the
 * sources is a permutation drawn from it, and the router starts from a
 * random plan, routing.c), so a
 * prepared statement uses the values in effect when it runs.  What the
 * eddy learned survives a rescan: the data of a correlated subquery's
 * rescans is usually alike.  Interrupts are checked for every tuple read
 * and every match drained.
 *
 *-------------------------------------------------------------------------
 */
#include "loop.h"

#include "access/table.h"
#include "access/tableam.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/memutils.h"

static Node *eddy_create_scan_state(CustomScan *cscan);
static void eddy_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *eddy_exec(CustomScanState *node);
static TupleTableSlot *eddy_exec_node(PlanState *pstate);
static void eddy_end(CustomScanState *node);
static void eddy_rescan(CustomScanState *node);

const CustomScanMethods eddy_scan_methods = {
	.CustomName = EDDY_NODE_NAME,
	.CreateCustomScanState = eddy_create_scan_state,
};

static const CustomExecMethods eddy_exec_methods = {
	.CustomName = EDDY_NODE_NAME,
	.BeginCustomScan = eddy_begin,
	.ExecCustomScan = eddy_exec,
	.EndCustomScan = eddy_end,
	.ReScanCustomScan = eddy_rescan,
	.EstimateDSMCustomScan = EddyEstimateDSM,
	.InitializeDSMCustomScan = EddyInitializeDSM,
	.InitializeWorkerCustomScan = EddyInitializeWorker,
	.ReInitializeDSMCustomScan = EddyReInitializeDSM,
	.ShutdownCustomScan = EddyShutdown,
	.ExplainCustomScan = EddyExplain,
};

/* Module constructors by kind: the first item of every module description */
static EddyModule *(*const module_begin[EDDY_NUM_MODULE_KINDS]) (EddyState *es,
																 List *desc,
																 int index) =
{
	[EDDY_MODULE_SELECTION] = EddySelectionBegin,
	[EDDY_MODULE_HASH_JOIN] = EddyHashJoinBegin,
	[EDDY_MODULE_INDEX_JOIN] = EddyIndexJoinBegin,
	[EDDY_MODULE_HYBRID_JOIN] = EddyHybridJoinBegin,
};

void
EddyExecInit(void)
{
	RegisterCustomScanMethods(&eddy_scan_methods);
}

static Node *
eddy_create_scan_state(CustomScan *cscan)
{
	EddyState  *es = palloc0(sizeof(EddyState));

	NodeSetTag(es, T_CustomScanState);
	es->css.methods = &eddy_exec_methods;
	return (Node *) es;
}

/* ----------------------------------------------------------------
 *		Setup
 * ----------------------------------------------------------------
 */

/* Widen src->ncols to every INDEX_VAR column of its range that node reads */
static bool
narrow_source_walker(Node *node, EddySource *src)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var) && ((Var *) node)->varno == INDEX_VAR)
	{
		int			c = ((Var *) node)->varattno - 1 - src->first_col;

		if (c >= 0 && c < src->range_cols && c + 1 > src->ncols)
			src->ncols = c + 1;
		return false;
	}
	return expression_tree_walker(node, narrow_source_walker, src);
}

/*
 * Columns of each scanned source's range that the eddy reads: up to the
 * last one any expression of the node (its target list, predicates, join
 * keys and conditions) refers to.  A source's scan may return more (all of
 * its relation's columns, so that it need not project: join_graph.c); rows
 * then hold, store and spill only these, and the wide slot's other columns
 * stay NULL.  Every Var of the node's expressions is counted, so nothing
 * reads a column past them.
 */
static void
narrow_sources(EddyState *es)
{
	CustomScan *cscan = (CustomScan *) es->css.ss.ps.plan;
	TupleTableSlot *wide = es->css.ss.ss_ScanTupleSlot;
	int			i;

	if (es->nsources < 2)
		return;					/* one source: its whole target list */
	for (i = 0; i < es->nsources; i++)
	{
		EddySource *src = &es->sources[i];
		int			c;

		if (src->method != EDDY_SOURCE_SCAN)
			continue;
		src->ncols = 0;
		(void) narrow_source_walker((Node *) cscan->scan.plan.targetlist, src);
		(void) narrow_source_walker((Node *) cscan->custom_exprs, src);
		for (c = src->ncols; c < src->range_cols; c++)
		{
			wide->tts_values[src->first_col + c] = (Datum) 0;
			wide->tts_isnull[src->first_col + c] = true;
		}
	}
}

/* The sources, from their descriptions (private.h) */
static void
begin_sources(EddyState *es, List *descs, EState *estate, int eflags)
{
	CustomScan *cscan = (CustomScan *) es->css.ss.ps.plan;
	TupleDesc	wide_desc = es->css.ss.ss_ScanTupleSlot->tts_tupleDescriptor;
	List	   *child_states = NIL;
	int			maxcols = 1;
	int			i;

	es->nsources = list_length(descs);
	es->sources = palloc0(sizeof(EddySource) * es->nsources);
	es->all_sources = (es->nsources >= 32) ? ~0u : ((1u << es->nsources) - 1);
	for (i = 0; i < es->nsources; i++)
	{
		List	   *d = list_nth(descs, i);
		EddySource *src = &es->sources[i];
		int			c;

		Assert(list_length(d) == EddySourceNumItems);
		src->method = (EddySourceMethod) intVal(list_nth(d, EddySourceMethodItem));
		src->first_col = intVal(list_nth(d, EddySourceFirstCol));
		src->ncols = intVal(list_nth(d, EddySourceNumCols));
		src->range_cols = src->ncols;
		src->est_rows = floatVal(list_nth(d, EddySourceEstRows));
		src->fetched_by = -1;
		src->guarded = intVal(list_nth(d, EddySourceGuarded)) != 0;
		/* an index-joined relation's alias; a scan's is its plan's (schedule.c) */
		if (src->method != EDDY_SOURCE_SCAN)
			src->name = strVal(list_nth(d, EddySourceAlias));
		src->typlen = palloc(sizeof(int16) * Max(src->ncols, 1));
		src->typbyval = palloc(sizeof(bool) * Max(src->ncols, 1));
		src->byval_only = true;
		src->byref_cols = palloc(sizeof(int16) * Max(src->ncols, 1));
		src->nbyref = 0;
		for (c = 0; c < src->ncols; c++)
		{
			Form_pg_attribute att = TupleDescAttr(wide_desc, src->first_col + c);

			src->typlen[c] = att->attlen;
			src->typbyval[c] = att->attbyval;
			if (!att->attbyval)
			{
				src->byval_only = false;
				src->byref_cols[src->nbyref++] = c;
			}
		}
		maxcols = Max(maxcols, src->ncols);
		if (src->method == EDDY_SOURCE_SCAN)
		{
			Plan	   *child = list_nth(cscan->custom_plans,
										 intVal(list_nth(d, EddySourcePlan)));

			src->plan = ExecInitNode(child, estate, eflags);
			child_states = lappend(child_states, src->plan);
			es->scanned |= 1u << i;
		}
		/* index-joined, or a hybrid join's scanned end 1: its heap too */
		if (src->method != EDDY_SOURCE_SCAN ||
			OidIsValid((Oid) intVal(list_nth(d, EddySourceHeapOid))))
		{
			ListCell   *lc;
			int			k = 0;

			src->heapoid = (Oid) intVal(list_nth(d, EddySourceHeapOid));
			src->heap = table_open(src->heapoid, AccessShareLock);
			src->attnos = palloc(sizeof(AttrNumber) * Max(src->ncols, 1));
			foreach(lc, (List *) list_nth(d, EddySourceHeapAttnos))
			{
				src->attnos[k] = intVal(lfirst(lc));
				src->max_attno = Max(src->max_attno, src->attnos[k]);
				k++;
			}
			src->heapslot = table_slot_create(src->heap, NULL);
		}
	}
	es->fetch_values = palloc(sizeof(Datum) * maxcols);
	es->fetch_isnull = palloc(sizeof(bool) * maxcols);
	es->css.custom_ps = child_states;
	narrow_sources(es);
	for (i = 0; i < es->nsources; i++)
	{
		EddySource *src = &es->sources[i];
		int			c;

		/* an index-joined source: are its columns consecutive attributes? */
		if (src->attnos == NULL || src->ncols == 0 || src->attnos[0] < 1)
			continue;
		for (c = 1; c < src->ncols; c++)
			if (src->attnos[c] != src->attnos[0] + c)
				break;
		if (c == src->ncols)
			src->attno_run = src->attnos[0];
	}
}

/*
 * One source, read directly: declare its slot type as the node's scan slot
 * type and build the projection again (ExecInitCustomScan built it for a
 * virtual scan slot), before any expression is compiled.
 */
static void
begin_direct_source(EddyState *es)
{
	PlanState  *source = es->sources[0].plan;
	const TupleTableSlotOps *ops;
	bool		fixed;

	ops = ExecGetResultSlotOps(source, &fixed);
	es->css.ss.ps.scanops = ops;
	es->css.ss.ps.scanopsfixed = fixed;
	es->css.ss.ps.scanopsset = true;
	ExecAssignScanProjectionInfoWithVarno(&es->css.ss, INDEX_VAR);
}

/*
 * The rows of a source, for the router (EddySourceRowsKind): a scanned
 * source's tuples read so far, or once it is exhausted as expected; an
 * index-joined relation's planned tuples whatever is asked (all of it can
 * be probed from the start; its selections are counted apart).
 */
static double
source_rows(void *arg, int source, EddySourceRowsKind kind)
{
	EddySource *src = &((EddyState *) arg)->sources[source];

	if (src->method == EDDY_SOURCE_SCAN)
	{
		if (kind == EDDY_ROWS_READ || (kind == EDDY_ROWS_EXPECTED && src->exhausted))
			return (double) src->nread;
		if (kind == EDDY_ROWS_EXPECTED)
			return Max(Max(src->est_rows, 1.0), (double) src->nread);
	}
	return Max(src->est_rows, 1.0);
}

/*
 * The router's waits: module mi's direction dir probes a state that holds
 * nothing yet while sources of its far side are still to be read, so a
 * tuple routed there is only stored (routing.c, score_targets).  Only
 * for modules with two STAIRs.
 */
static bool
target_waits(void *arg, int mi, int dir)
{
	EddyState  *es = (EddyState *) arg;
	uint32		far_side = 0;
	Stair	   *far = EddyJoinFarStair(es->modules[mi], dir, &far_side);

	return far != NULL && far->nentries == 0 &&
		(far_side & es->scanned & ~es->exhausted) != 0;
}

/*
 * Storing has a price (eddy.filter_before_store): a tuple routed to a
 * module that keeps state may be stored there, and a base tuple stored
 * before a selection of its own relation drops it costs memory and a probe
 * of every later match for nothing (a 9%-selective dimension stored whole,
 * when its join looked like a cheap filter to the rank policy).  So each
 * direction of such a module takes its end relation's tuples only after
 * that relation's own filters: they join the direction's prerequisites.
 * Every tuple routed there spans the end relation (its need), and such a
 * filter needs that relation alone and has only filters of it as
 * prerequisites, so the constraint can always be met.
 *
 * The price is paid only where the tuple would be stored.  A direction that
 * only probes (the state interface's probe_only: no source that could probe
 * what it stores is left to read, so a relation read last is never stored)
 * stores nothing, and its filter prerequisites (the target's store_prereq)
 * are dropped from its prerequisites until the sources are read again
 * (EddyStorePrereqsUpdate): the routing may then send the tuple to the join
 * first, as its scores say (TPC-H Q16: partsupp, read last, went first to
 * NOT (hashed SubPlan), which passes every row, and then to the join with
 * part, which drops 86% of them).  Whatever the join makes from it is
 * stored elsewhere only through a direction whose own prerequisites still
 * hold, so no STAIR stores a row its relation's filters would drop where
 * the constraint held before.
 */
static void
store_after_filters(EddyState *es)
{
	int			i;
	int			j;
	int			d;

	for (i = 0; i < es->nmodules; i++)
	{
		EddyModule *m = es->modules[i];

		if (m->state == NULL)
			continue;
		for (d = 0; d < m->ndirs; d++)
		{
			uint32		need = m->target[d].need;
			int			x;

			if (need == 0 || (need & (need - 1)) != 0)
				continue;		/* not one end relation */
			x = pg_rightmost_one_pos32(need);
			for (j = 0; j < es->nmodules; j++)
				if (j != i && EddyModuleFiltersSource(es->modules[j], x) &&
					(m->target[d].prereq & (UINT64CONST(1) << j)) == 0)
				{
					m->target[d].prereq |= UINT64CONST(1) << j;
					m->target[d].store_prereq |= UINT64CONST(1) << j;
				}
		}
	}
}

/*
 * Each target's filter prerequisites (store_after_filters) held where it
 * may store a tuple and dropped where it only probes, after es->exhausted
 * changed for good: a source ran out (EddySourceExhausted), or the sources
 * are read again (a rescan, a spilled eddy's next batch).  A new routing
 * epoch where anything changed.
 */
void
EddyStorePrereqsUpdate(EddyState *es)
{
	bool		changed = false;
	int			k;

	for (k = 0; k < es->ntargets; k++)
	{
		EddyRouteTarget *t = &es->targets[k];
		EddyModule *m;
		uint64		want;

		if (t->store_prereq == 0)
			continue;
		m = es->modules[t->module];
		want = m->state->probe_only(es, m, t->dir) ? 0 : t->store_prereq;
		if ((t->prereq & t->store_prereq) != want)
		{
			t->prereq = (t->prereq & ~t->store_prereq) | want;
			changed = true;
		}
	}
	if (changed)
		EddyRouterTargetsChanged(&es->router);
}

/* The modules, in plan order, and their routing targets */
static void
begin_modules(EddyState *es, List *descs)
{
	int			i;
	int			k = 0;

	es->nmodules = list_length(descs);
	es->modules = palloc0(sizeof(EddyModule *) * Max(es->nmodules, 1));
	for (i = 0; i < es->nmodules; i++)
	{
		List	   *d = list_nth(descs, i);
		int			kind = intVal(linitial(d));

		if (kind < 0 || kind >= EDDY_NUM_MODULE_KINDS)
			elog(ERROR, "eddy: unknown module kind %d", kind);
		es->modules[i] = module_begin[kind] (es, d, i);
		es->ntargets += es->modules[i]->ndirs;
	}
	if (eddy_filter_before_store)
		store_after_filters(es);
	es->targets = palloc0(sizeof(EddyRouteTarget) * Max(es->ntargets, 1));
	for (i = 0; i < es->nmodules; i++)
	{
		EddyModule *m = es->modules[i];
		int			d;

		for (d = 0; d < m->ndirs; d++)
		{
			es->targets[k] = m->target[d];
			es->targets[k].module = i;
			es->targets[k].dir = d;
			es->targets[k].stats = &m->stats[d];
			es->targets[k].arg = m->filter;
			m->target_index[d] = k;
			k++;
		}
	}
}

static void
eddy_begin(CustomScanState *node, EState *estate, int eflags)
{
	EddyState  *es = (EddyState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *priv = cscan->custom_private;
	bool		all_filters = true;
	int			i;
	ListCell   *lc;

	Assert(list_length(priv) == EddyPrivNumItems);
	es->exchange = intVal(list_nth(priv, EddyPrivExchange)) != 0;
	es->claimed = (uint32) intVal(list_nth(priv, EddyPrivExchange)) >> 1;
	es->wide = node->ss.ss_ScanTupleSlot;
	i = intVal(list_nth(priv, EddyPrivOneTimeQual));
	if (i >= 0)
	{
		es->one_time_expr = list_nth(cscan->custom_exprs, i);
		es->one_time_qual = ExecInitQual(list_make1(es->one_time_expr),
										 &node->ss.ps);
	}
	begin_sources(es, list_nth(priv, EddyPrivSources), estate, eflags);
	if (es->nsources == 1)
		begin_direct_source(es);
	else
	{
		EddyArenaInit(&es->stored,
					  AllocSetContextCreate(estate->es_query_cxt, "eddy join state",
											ALLOCSET_DEFAULT_SIZES));
		EddyArenaInit(&es->transient,
					  AllocSetContextCreate(estate->es_query_cxt, "eddy transient tuples",
											ALLOCSET_DEFAULT_SIZES));
	}
	es->loaded = palloc0(sizeof(EddyRow *) * es->nsources);
	begin_modules(es, list_nth(priv, EddyPrivModules));

	for (i = 0; i < es->nmodules; i++)
		if (!EddyModuleIsFilter(es->modules[i]))
			all_filters = false;
	es->chain = es->nsources == 1;
	if (es->chain && (!all_filters || es->nmodules > EDDY_MAX_SELECTIONS))
		elog(ERROR, "eddy: a one-source eddy must have at most %d filters",
			 EDDY_MAX_SELECTIONS);
	if (es->chain)
	{
		/* deform, once per tuple, every column the filters read */
		for (i = 0; i < es->nmodules; i++)
			es->deform_natts = Max(es->deform_natts,
								   EddyPredicateMaxAttno(es->modules[i]->expr));
	}

	EddyStemsInit(es);
	EddyScheduleInit(es);
	if (es->exchange)
	{
		/* the plan's build order, as every participant must read it */
		es->schedule = EDDY_SCHEDULE_BUILD;
		es->delayed = false;
		es->holding = false;
		for (i = 0; i < es->nsources; i++)
		{
			es->sources[i].rate = 1.0;
			es->sources[i].delay_ms = 0;
			es->sources[i].hold_pct = 0;
		}
	}
	es->max_memory = EddyMaxMemoryBytes(Max(es->nstairs, 1));
	es->stack = palloc(sizeof(EddyFrame) * Max(es->nmodules, 1));
	es->source_order = palloc(sizeof(int) * es->nsources);
	i = 0;
	foreach(lc, (List *) list_nth(priv, EddyPrivSourceOrder))
		es->source_order[i++] = intVal(lfirst(lc));
	Assert(i == es->nsources);
	es->random_start = (uint64) eddy_random_start;
	if (es->random_start != 0 && !es->exchange)
	{
		/* eddy.random_start: the build order drawn from the seed */
		for (i = es->nsources - 1; i > 0; i--)
		{
			int			j = (int) (EddyRandomStartHash(es->random_start,
													   UINT64CONST(1) << 32 | (uint64) i) %
								   (uint64) (i + 1));
			int			tmp = es->source_order[i];

			es->source_order[i] = es->source_order[j];
			es->source_order[j] = tmp;
		}
	}
	es->plan_order = palloc(sizeof(int) * es->nsources);
	memcpy(es->plan_order, es->source_order, sizeof(int) * es->nsources);
	EddyScheduleRescan(es);
	es->nexchanges = -1;
	for (i = 0; i < es->nsources; i++)
		if (es->sources[i].method == EDDY_SOURCE_SCAN)
			es->nexchanges++;

	/* the output needs the wide slot filled unless its projection reads none */
	es->output_reads_columns = node->ss.ps.ps_ProjInfo == NULL ||
		pull_var_clause((Node *) cscan->scan.plan.targetlist,
						PVC_RECURSE_AGGREGATES | PVC_RECURSE_WINDOWFUNCS |
						PVC_INCLUDE_PLACEHOLDERS) != NIL;

	/*
	 * Index-joined sources' chains at fetch time (mod_indexjoin.c), before
	 * the router's first scoring: they make the joins' priors
	 */
	for (i = 0; i < es->nmodules; i++)
		EddyIndexJoinBeginChain(es, es->modules[i]);
	EddyRouterInit(&es->router, es->targets, es->ntargets, es->nmodules,
				   es->all_sources, es->chain,
				   (EddyRoutingPolicy) eddy_routing_policy,
				   eddy_reopt_frequency, eddy_lottery_window,
				   UINT64CONST(0x5eed0edd) ^ (uint64) cscan->scan.plan.plan_node_id,
				   es->random_start, es->nsources, source_rows, es);
	es->router.waits = target_waits;
	es->router.held = es->holding;	/* the initial decisions are made */
	es->router.lookahead = eddy_rank_lookahead;
	EddyMigrationInit(es);
	EddySpillInit(es);
	if (es->nsources > 1)
		EddyLocalChainsBegin(es);	/* local.c */
	es->until_sample = 1;		/* time the first tuple */
	es->state = EDDY_STATE_READ;

	/*
	 * Skip ExecCustomScan's trampoline: ExecInitNode installs this one.  The
	 * chain case has its own, which reads and filters in one call a tuple
	 * (local.c).
	 */
	node->ss.ps.ExecProcNode = es->chain ? EddyExecChain : eddy_exec_node;
}

/* ----------------------------------------------------------------
 *		Routing
 * ----------------------------------------------------------------
 */

/*
 * Push a frame for a join module's outstanding probe (its `next` method
 * gives the matches).  The module fills in the probe state.
 */
EddyFrame *
EddyPushFrame(EddyState *es, EddyModule *m, int dir, EddyTuple *probe)
{
	EddyFrame  *f;

	Assert(es->nstack < es->nmodules);
	f = &es->stack[es->nstack++];
	f->module = m;
	f->dir = dir;
	f->probe = probe;
	f->timed = es->current_timed && !es->replaying;
	f->nnext = 0;
	return f;
}

/*
 * A tuple enters routing: counted, and timed one time in 128 at every hop
 * (route_current times the hops a target's own sampling picks as well)
 */
static inline void
start_route(EddyState *es, EddyTuple *t, bool fresh)
{
	EddyRouterTupleIn(&es->router);
	es->current = t;
	es->current_fresh = fresh;
	es->current_timed = (--es->until_sample <= 0);
	if (es->current_timed)
		es->until_sample = EDDY_COST_SAMPLE_INTERVAL;
	es->state = EDDY_STATE_ROUTE;
}

/* The projection of a complete tuple */
static TupleTableSlot *
output_tuple(EddyState *es, EddyTuple *t)
{
	ExprContext *econtext = es->css.ss.ps.ps_ExprContext;

	/* a projection that reads no column (count(*)) needs no fill */
	if (es->output_reads_columns)
		EddyTupleFillSlot(es, t);
	econtext->ecxt_scantuple = es->wide;
	ResetExprContext(econtext);
	if (es->css.ss.ps.ps_ProjInfo)
		return ExecProject(es->css.ss.ps.ps_ProjInfo);
	return es->wide;
}

/*
 * EDDY_STATE_ROUTE: route the current tuple until it leaves.  Returns the
 * output slot when it is complete, else NULL; either way the next state is
 * DRAIN.
 */
static TupleTableSlot *
route_current(EddyState *es)
{
	EddyRouter *router = &es->router;
	EddyTuple  *t = es->current;

	es->state = EDDY_STATE_DRAIN;
	for (;;)
	{
		int			target = EddyRoute(router, t->spans, t->done);
		EddyRouteTarget *tg;
		EddyModule *m;
		EddyTuple  *next;
		double		start = 0;

		if (target == EDDY_ROUTE_OUTPUT)
			return output_tuple(es, t);
		tg = &es->targets[target];
		m = es->modules[tg->module];
		if (unlikely(m->hot_keys) && !es->replaying && m->methods->hot(es, m, t))
		{
			/* content-based routing: a filter first, if one can go */
			int			alt = EddyRouteFilterInstead(router, t->spans, t->done, target);

			if (alt >= 0)
			{
				tg->stats->hot_deferred++;
				target = alt;
				tg = &es->targets[target];
				m = es->modules[tg->module];
			}
		}
		if (es->current_fresh)
		{
			es->current_fresh = false;
			/* a fresh tuple spans its source alone */
			EddyRouterNoteFirst(router, pg_rightmost_one_pos32(t->spans), target);
		}
		if (unlikely(es->unbuilt) && m->methods->joins)
		{
			/* the state mode's BuildFirst: before the driver's first join */
			es->unbuilt = false;
			es->build_first(es, t);
		}
		tg->stats->in++;
		if (unlikely(--tg->until_sample <= 0) && !es->current_timed)
		{
			/* the target's own sample (routing.c, Costs): this hop alone */
			tg->until_sample = tg->sample_every;
			es->current_timed = true;
			start = eddy_now_ns();
			next = m->methods->route(es, m, tg->dir, t);
			tg->stats->cost_ns += eddy_now_ns() - start;
			tg->stats->samples++;
			es->current_timed = false;
		}
		else if (es->current_timed)
		{
			start = eddy_now_ns();
			next = m->methods->route(es, m, tg->dir, t);
			tg->stats->cost_ns += eddy_now_ns() - start;
			tg->stats->samples++;
		}
		else
			next = m->methods->route(es, m, tg->dir, t);
		if (next == NULL)
			return NULL;		/* dropped, or stored with its matches pushed */
		if (next != t)
			router->until_reopt--;	/* a join's one result: a routed tuple */
		t = next;
	}
}

/*
 * The node's ExecProcNode: installed directly by eddy_begin, so that the
 * executor calls it without going through ExecCustomScan.
 */
static TupleTableSlot *
eddy_exec_node(PlanState *pstate)
{
	EddyState  *es = (EddyState *) pstate;

	EddyCheckOneTimeFilter(es);

	/*
	 * The states are laid out in the order a source tuple goes through them,
	 * each falling through to the next: a tuple read, routed and drained
	 * costs one turn of the loop.
	 */
	for (;;)
	{
		CHECK_FOR_INTERRUPTS();

		switch (es->state)
		{
			case EDDY_STATE_STASIS:
				if (unlikely(es->migrating) &&
					es->router.recomputations != es->migration_seen)
					EddyMigrationStasis(es);
				if (unlikely(es->spill_after != 0) &&
					EddyRouterRouted(&es->router) >= es->spill_after)
					EddySpillForce(es);
				if (unlikely(es->spill_wanted))
					EddySpillStart(es);
				EddyForgetTransient(es);
				es->state = EDDY_STATE_READ;
				/* FALLTHROUGH */

			case EDDY_STATE_READ:
				{
					EddyTuple  *t;

					Assert(!es->chain); /* EddyExecChain reads it */
					t = EddyReadSource(es);
					if (t == NULL && es->stasis_due)
					{
						es->stasis_due = false;
						es->state = EDDY_STATE_STASIS;
						break;
					}
					if (t == NULL)
					{
						/* spilled: the next batch, if any */
						if (unlikely(es->spill != NULL) && EddySpillNextBatch(es))
							break;
						/* the peak of an eddy that stored little (checked
						 * every 64 insertions) */
						EddyCheckMemory(es);
						es->state = EDDY_STATE_DONE;
						return NULL;
					}
					if (es->current_started)
					{
						/* EddyRouteLocally began: counted, maybe routed */
						es->current_started = false;
						es->current = t;
						es->state = EDDY_STATE_ROUTE;
					}
					else
						start_route(es, t, true);
				}
				/* FALLTHROUGH */

			case EDDY_STATE_ROUTE:
				{
					TupleTableSlot *slot = route_current(es);

					if (slot != NULL)
						return slot;	/* resumes at DRAIN */
				}
				/* FALLTHROUGH */

			case EDDY_STATE_DRAIN:
				{
					EddyFrame  *f;
					EddyTuple  *t;

					if (es->nstack == 0)
					{
						es->state = EDDY_STATE_STASIS;
						break;
					}
					f = &es->stack[es->nstack - 1];
					t = f->module->methods->next(es, f);
					if (t == NULL)
					{
						es->nstack--;
						es->state = EDDY_STATE_DRAIN;
					}
					else if (es->drain_started)
					{
						/* an index join's fetch chain began: counted, timed */
						es->drain_started = false;
						es->current = t;
						es->current_fresh = false;
						es->state = EDDY_STATE_ROUTE;
					}
					else
						start_route(es, t, false);
				}
				break;

			case EDDY_STATE_DONE:
				return NULL;
		}
	}
}

static TupleTableSlot *
eddy_exec(CustomScanState *node)
{
	return node->ss.ps.ExecProcNode == EddyExecChain ?
		EddyExecChain(&node->ss.ps) : eddy_exec_node(&node->ss.ps);
}

/* ----------------------------------------------------------------
 *		End and rescan
 * ----------------------------------------------------------------
 */

static void
eddy_end(CustomScanState *node)
{
	EddyState  *es = (EddyState *) node;
	int			i;

	EddyExchangeEnd(es);
	EddySpillEnd(es, false);
	for (i = 0; i < es->nmodules; i++)
	{
		EddyModule *m = es->modules[i];

		if (m->methods->end)
			m->methods->end(es, m);
	}
	for (i = 0; i < es->nsources; i++)
	{
		EddySource *src = &es->sources[i];

		if (src->method == EDDY_SOURCE_SCAN)
			ExecEndNode(src->plan);
		if (src->heap != NULL)
		{
			ExecDropSingleTupleTableSlot(src->heapslot);
			table_close(src->heap, AccessShareLock);
		}
	}
	if (!es->chain)
	{
		MemoryContextDelete(es->stored.cxt);
		MemoryContextDelete(es->transient.cxt);
	}
}

static void
eddy_rescan(CustomScanState *node)
{
	EddyState  *es = (EddyState *) node;
	int			i;

	es->state = EDDY_STATE_READ;
	es->one_time_checked = false;
	es->nstack = 0;
	es->next_source = 0;
	es->exhausted = 0;
	es->nexhausted = 0;
	es->start_time = 0;
	es->delays_over = false;
	es->peeked = false;
	es->seq = 0;
	es->unbuilt = false;
	es->current_started = false;
	es->stasis_due = false;
	es->check_end = false;
	EddyExchangeEnd(es);
	es->exchange_started = false;
	es->exchange_active = false;
	es->exchanges_done = 0;
	es->claims_checked = 0;
	es->claims_won = 0;
	EddySpillEnd(es, true);
	EddyScheduleRescan(es);		/* the plan's reading order again */
	for (i = 0; i < es->nmodules; i++)
	{
		EddyModule *m = es->modules[i];

		if (m->methods->rescan)
			m->methods->rescan(es, m);
	}
	EddyMigrationRescan(es);
	EddyStorePrereqsUpdate(es);	/* every source is to be read again */
	if (!es->chain)
	{
		EddyArenaReset(&es->transient);
		EddyArenaReset(&es->stored);
		es->free_tuples = NULL;
		memset(es->loaded, 0, sizeof(EddyRow *) * es->nsources);
		es->loaded_any = false;
	}
	for (i = 0; i < es->nsources; i++)
	{
		EddySource *src = &es->sources[i];

		if (src->method != EDDY_SOURCE_SCAN)
			continue;
		src->exhausted = false;
		src->cut = false;
		src->exhausted_rank = 0;
		src->nread = 0;
		src->pending = NULL;
		if (node->ss.ps.chgParam != NULL)
			UpdateChangedParamSet(src->plan, node->ss.ps.chgParam);
		if (src->plan->chgParam == NULL)
			ExecReScan(src->plan);
	}
}
