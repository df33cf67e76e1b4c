/*-------------------------------------------------------------------------
 *
 * exec.c
 *	  The Eddy executor node: one executor for every eddy.
 *
 * An eddy has sources (the relations of its block: scanned by a child
 * plan, or reached through an index join) and modules (selections, hash
 * joins, index joins: exec.h's vtable), described by custom_private
 * (private.h).  It reads tuples from its sources and routes each through
 * the modules by the router's table (routing.c): the tuple's signature
 * (sources spanned, modules done) selects the next module and direction;
 * a selection drops it or passes it on; a join stores it and pushes a
 * frame whose matches are routed in turn; a tuple that spans every source
 * and has done every module is projected and returned.  Every
 * eddy.reopt_frequency tuples routed, the router recomputes its decisions.
 *
 * The main loop is a state machine, PostgreSQL style:
 *
 *	 EDDY_STATE_READ	read the next source tuple from the source the
 *						schedule chooses (schedule.c; by default one after
 *						another in PostgreSQL's build order, centres of stars
 *						last); none left: DONE.  The first READ reads one
 *						tuple of every source first: one empty source makes
 *						the result empty, and the eddy DONE at once.  After a
 *						source runs out, a hash join with a side read to its
 *						end and nothing stored there ends the result too
 *						(result_ended): DONE without reading the rest
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
 * A one-source eddy whose modules are all filters (a selection eddy) is
 * the chain case: every tuple of an epoch follows a prefix of one chain of
 * modules (routing.c), so READ walks the chain inline on the tuple its
 * source returned, with no copy and no projection: custom_scan_tlist is
 * the source's target list, and the node's scan slot type is declared to
 * be the source's before any expression is compiled.  The source is read
 * directly; the filters' columns are deformed once per tuple.  This fast
 * path is a property of the source and the modules, not a second node.
 *
 * Local chains.  In an eddy of several sources, the selections over one
 * scanned source alone that this epoch's routing sends that source's
 * fresh tuples to first (before any join) are its local chain: they are
 * evaluated before the eddy makes an eddy tuple of what the scan
 * returned, so that a tuple they drop costs no tuple, no row and no trip
 * through the states below.  Where the source is a plain scan, the chain
 * runs inside the scan's qual, after the scan's own filter and before its
 * projection, as PostgreSQL's plan filters there (begin_local_qual); else
 * read_source runs it on the values the scan returned (route_locally).
 * Either way counted, timed and recorded as the main loop would.  An
 * index-joined source has the same at fetch time: its join evaluates the
 * selections the routing sends its matches to first on the heap tuple
 * (mod_indexjoin.c, "Fetch chains"), and a match that passes enters the
 * main loop already counted (drain_started).
 *
 * In a parallel plan each participant runs its own eddy over its share of
 * one source and the whole of the others (parallel.c).
 *
 * Settings are read when the node starts (eddy.routing_policy,
 * eddy.reopt_frequency, eddy.lottery_window, eddy.state_mode), so a
 * prepared statement uses the values in effect when it runs.  What the eddy learned survives a
 * rescan: the data of a correlated subquery's rescans is usually alike.
 * Interrupts are checked for every tuple read and every match drained.
 *
 *-------------------------------------------------------------------------
 */
#include "exec.h"

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
static void begin_local_qual(EddyState *es, int i, EddySource *src);

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
 * its relation's columns, so that it need not project: plan_join.c); rows
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
		else
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
 * The rows a source has given so far, for the cumulative policy: a
 * scanned source's tuples read, an index-joined relation's tuples (all of
 * it can be probed from the start; its selections are counted apart); or
 * every source's planned rows.
 */
static double
source_rows(void *arg, int source, bool planned)
{
	EddySource *src = &((EddyState *) arg)->sources[source];

	if (src->method == EDDY_SOURCE_SCAN && !planned)
		return (double) src->nread;
	return Max(src->est_rows, 1.0);
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

/* Scanned sources that selections read alone get a local chain */
static void
begin_local_chains(EddyState *es)
{
	/*
	 * A schedule that paces its sources decides tuple by tuple, and state
	 * migration looks for misplaced state at every point of stasis, dropped
	 * tuples' included: those keep the chain in read_source.
	 */
	bool		paced = es->schedule != EDDY_SCHEDULE_BUILD || es->delayed ||
		es->holding || es->migrating;
	int			i;
	int			j;

	for (i = 0; i < es->nsources; i++)
	{
		EddySource *src = &es->sources[i];

		if (src->method != EDDY_SOURCE_SCAN)
			continue;
		for (j = 0; j < es->nmodules; j++)
		{
			EddyModule *m = es->modules[j];

			if (m->filter != NULL && (m->target[0].need & ~(1u << i)) == 0)
				src->local_sels = true;
		}
		if (src->local_sels || !paced)
		{
			src->local_chain = palloc(sizeof(int) * es->nmodules);
			src->local_generation = UINT64_MAX;
		}
		if (!paced)
			begin_local_qual(es, i, src);
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
		if (es->modules[i]->filter == NULL)
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
				   es->nsources, source_rows, es);
	es->router.held = es->holding;	/* the initial decisions are made */
	EddyMigrationInit(es);
	EddySpillInit(es);
	if (es->nsources > 1)
		begin_local_chains(es);
	es->until_sample = 1;		/* time the first tuple */
	es->state = EDDY_STATE_READ;

	/* skip ExecCustomScan's trampoline: ExecInitNode installs this one */
	node->ss.ps.ExecProcNode = eddy_exec_node;
}

/*
 * Per source, the selections over its relation alone (module bits): a done
 * bit of one of them on a stored tuple says its row passed, which state
 * migration's replay and spilling keep.  Palloc'd in the current context.
 */
uint64 *
EddySelectionsAlone(EddyState *es)
{
	uint64	   *xonly = palloc0(sizeof(uint64) * es->nsources);
	int			i;

	for (i = 0; i < es->nmodules; i++)
	{
		EddyModule *m = es->modules[i];
		int			x;

		if (m->filter == NULL)
			continue;
		for (x = 0; x < es->nsources; x++)
			if ((m->target[0].need & ~(1u << x)) == 0)
				xonly[x] |= UINT64CONST(1) << i;
	}
	return xonly;
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
	return f;
}

/*
 * The chain case: walk this epoch's chain of filters on econtext's scan
 * tuple (the source's slot).  True if the tuple passed them all.  Only
 * where the tuple left the chain is counted (routing.h).  Inlined twice:
 * plain, and timing each evaluation (one tuple in
 * EDDY_COST_SAMPLE_INTERVAL).  Runs in the per-tuple memory context.
 */
static pg_attribute_always_inline bool
walk_chain(EddyRouter *router, ExprContext *econtext, bool timed)
{
	int			n = router->chain_len;
	int			k;

	for (k = 0; k < n; k++)
	{
		EddyPredicate *pred = (EddyPredicate *) router->chain_arg[k];
		bool		pass;

		if (timed)
		{
			EddyModuleStats *st = router->targets[router->chain[k]].stats;
			double		start = eddy_now_ns();

			pass = EddyPredicateEval(pred, econtext);
			st->cost_ns += eddy_now_ns() - start;
			st->samples++;
		}
		else
			pass = EddyPredicateEval(pred, econtext);
		if (!pass)
		{
			router->chain_dropped[k]++;
			return false;
		}
	}
	router->chain_passed++;
	return true;
}

/*
 * The chain case of EDDY_STATE_READ: read source tuples until one passes
 * every filter, and return its projection; NULL at the end of the source.
 */
static TupleTableSlot *
read_chain(EddyState *es)
{
	ExprContext *econtext = es->css.ss.ps.ps_ExprContext;
	PlanState  *source = es->sources[0].plan;

	for (;;)
	{
		TupleTableSlot *slot;
		MemoryContext oldcontext;
		bool		pass;

		CHECK_FOR_INTERRUPTS();

		slot = ExecProcNode(source);
		if (TupIsNull(slot))
			return NULL;

		ResetExprContext(econtext);
		econtext->ecxt_scantuple = slot;
		slot_getsomeattrs(slot, es->deform_natts);
		EddyRouterTupleIn(&es->router);

		oldcontext = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
		if (unlikely(--es->until_sample <= 0))
		{
			es->until_sample = EDDY_COST_SAMPLE_INTERVAL;
			pass = walk_chain(&es->router, econtext, true);
		}
		else
			pass = walk_chain(&es->router, econtext, false);
		MemoryContextSwitchTo(oldcontext);

		if (!pass)
		{
			InstrCountFiltered1(&es->css, 1);
			continue;
		}
		if (es->css.ss.ps.ps_ProjInfo)
			return ExecProject(es->css.ss.ps.ps_ProjInfo);
		return slot;
	}
}

/*
 * The next source tuple, or NULL when every source is exhausted.  Its row
 * points into the source's slot (tuple.c), valid until the next point of
 * stasis.
 */
/*
 * Before the first tuple is routed, read one tuple of every scanned
 * source: if one is empty, so is the block's result (every result holds a
 * row of every source), and the eddy is done before it stores anything (a
 * cross product of the other sources, say, that PostgreSQL never builds).
 * Each source keeps the tuple it read in its slot, untouched until the
 * schedule reads that source next.
 */
static bool
peek_sources(EddyState *es)
{
	int			i;

	es->peeked = true;
	es->peeking = true;			/* local chains stand aside (local_qual_eval) */
	for (i = 0; i < es->nsources; i++)
	{
		EddySource *src = &es->sources[i];

		if (src->method != EDDY_SOURCE_SCAN)
			continue;
		src->pending = ExecProcNode(src->plan);
		if (TupIsNull(src->pending))
		{
			src->pending = NULL;
			es->peeking = false;
			return false;
		}
	}
	es->peeking = false;
	return true;
}

/* Tuples a local chain in a scan filters before it is computed again */
#define EDDY_LOCAL_RECHECK		1024

/* The local chain in a source's scan: see begin_local_qual */
typedef struct EddyLocalQual
{
	EddyState  *es;
	int			source;
	EddySource *src;			/* es->sources[source] */
	PlanState  *scan;
	ExprState  *orig;			/* the scan's own qual, or NULL */
	ExprState  *wrapper;		/* the scan's qual while there is a chain */
	EddyPredicate orig_pred;	/* the scan's qual, where it is one clause */
	EddyPredicate *preds;		/* per module: its predicate over the scan
								 * tuple */
	AttrNumber **probe_attnos;	/* per target: a hash join of this source's
								 * plain keys, their scan tuple columns */
	int		   *probe_nkeys;	/* ... and how many */
	Datum	   *keys;			/* scratch for their values */
	bool	   *keynulls;
	bool		passed;			/* the tuple the scan returns passed here */
	bool		noted;			/* ... its first choice was counted */
	bool		timed;
	uint64		done;			/* ... and these selections */

	/*
	 * The scan tuple's columns the qual reads, deformed at once as
	 * PostgreSQL's one qual does (deforming them as each predicate reads
	 * them costs a call each, TPC-H Q19: 75 instructions a tuple): the
	 * highest of the scan's own qual, per module its predicate's, and the
	 * highest of this chain's (compute_local_chain).
	 */
	AttrNumber	orig_attno;
	AttrNumber *pred_attno;
	AttrNumber	fetch_attno;
} EddyLocalQual;

/* Highest column of its scan tuple an expression over it reads */
static bool
scan_attno_walker(Node *node, AttrNumber *max)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		if (((Var *) node)->varattno > *max)
			*max = ((Var *) node)->varattno;
		return false;
	}
	return expression_tree_walker(node, scan_attno_walker, (void *) max);
}

/*
 * Would routing a fresh tuple to target tg only probe its module's state
 * (the state interface's probe_only)?  Only asked of a target whose
 * module's state the scan may probe (probe_attnos set).
 */
static inline bool
probe_only(EddyState *es, EddyRouteTarget *tg)
{
	EddyModule *m = es->modules[tg->module];

	return m->state->probe_only(es, m, tg->dir);
}

/*
 * This epoch's local chain of source i: the selections over it alone that
 * the routing table sends its fresh tuples to, in order, until it sends
 * them to a join.
 */
static void
compute_local_chain(EddyState *es, int i, EddySource *src)
{
	uint64		done = 0;
	int			target;

	src->local_len = 0;
	while ((target = EddyRoute(&es->router, 1u << i, done)) != EDDY_ROUTE_OUTPUT &&
		   es->targets[target].arg != NULL)
	{
		Assert(src->local_len < es->nmodules);
		src->local_chain[src->local_len++] = target;
		done |= UINT64CONST(1) << es->targets[target].module;
	}
	src->local_next = target == EDDY_ROUTE_OUTPUT ? -1 : target;
	src->local_generation = es->router.generation;
	src->local_recheck = EDDY_LOCAL_RECHECK;

	/*
	 * Probe in the scan only while most probes miss: a probe that matches
	 * is made again by the join itself.  Its observed fan-out is the guide:
	 * as rank's statistics decay it, or since the start under a policy that
	 * keeps none (fixed); untried, try it.  Looked at again every
	 * EDDY_LOCAL_RECHECK tuples the scan filters, whatever the routing
	 * policy does.
	 */
	src->local_probe = false;
	src->local_exhausted = es->exhausted;
	if (src->local_next >= 0 && src->local_qual != NULL &&
		src->local_qual->probe_attnos[src->local_next] != NULL &&
		probe_only(es, &es->targets[src->local_next]))
	{
		EddyModuleStats *st = es->targets[src->local_next].stats;
		double		in = st->w_in;
		double		out = st->w_out;

		if (in < 1.0)
		{
			in = (double) st->in;
			out = (double) st->out;
		}
		src->local_probe = in < 1.0 || out < 0.5 * in;
	}

	/*
	 * The scan evaluates the chain only while there is one: else its own
	 * filter alone, at no cost to it, and read_source looks again.
	 */
	if (src->local_qual != NULL)
	{
		EddyLocalQual *lq = src->local_qual;
		AttrNumber	fetch = lq->orig_attno;
		int			k;

		for (k = 0; k < src->local_len; k++)
			fetch = Max(fetch, lq->pred_attno[es->targets[src->local_chain[k]].module]);
		if (src->local_probe)
			for (k = 0; k < lq->probe_nkeys[src->local_next]; k++)
				fetch = Max(fetch, lq->probe_attnos[src->local_next][k]);
		lq->fetch_attno = Min(fetch, ((ScanState *) src->plan)->ss_ScanTupleSlot->tts_tupleDescriptor->natts);
		src->plan->qual = (src->local_len > 0 || src->local_probe) ?
			lq->wrapper : lq->orig;
	}
}

/*
 * A fresh tuple of source i (in its slot) enters routing here, where some
 * selections read its relation alone: the ones this epoch's routing sends
 * it to first (its local chain) are evaluated on the slot's values, copied
 * into its range of the wide slot, before anything is made of the tuple,
 * so that a tuple they drop costs no eddy tuple, no row and no trip through
 * the main loop.  Counted and timed as route_current would.  Where the
 * scan can run the chain itself, it does (local_qual_eval).  False if dropped; else done holds the
 * selections passed, and the routing of the tuple goes on in ROUTE.
 */
static bool
route_locally(EddyState *es, int i, EddySource *src, TupleTableSlot *slot,
			  uint64 *done)
{
	EddyRouter *router = &es->router;
	ExprContext *econtext = es->css.ss.ps.ps_ExprContext;
	TupleTableSlot *wide = es->wide;
	bool		timed;
	int			k;
	int			c;

	EddyRouterTupleIn(router);
	timed = (--es->until_sample <= 0);
	if (timed)
		es->until_sample = EDDY_COST_SAMPLE_INTERVAL;
	es->current_started = true;
	es->current_fresh = true;
	es->current_timed = timed;
	if (src->local_generation != router->generation)
		compute_local_chain(es, i, src);
	if (src->local_len == 0)
		return true;

	ExecClearTuple(wide);
	for (c = 0; c < src->ncols; c++)
	{
		wide->tts_values[src->first_col + c] = slot->tts_values[c];
		wide->tts_isnull[src->first_col + c] = slot->tts_isnull[c];
	}
	ExecStoreVirtualTuple(wide);
	es->loaded[i] = NULL;		/* no row's: the caller sets it */
	es->current_fresh = false;
	EddyRouterNoteFirst(router, i, src->local_chain[0]);
	econtext->ecxt_scantuple = wide;
	for (k = 0; k < src->local_len; k++)
	{
		EddyRouteTarget *tg = &es->targets[src->local_chain[k]];

		if (!EddyLocalFilterPerTuple(tg, (EddyPredicate *) tg->arg, econtext, timed))
		{
			InstrCountFiltered1(&es->css, 1);
			es->current_started = false;
			return false;
		}
		*done |= UINT64CONST(1) << tg->module;
	}
	return true;
}

/*
 * The local chain in the source's scan.  Where the source is a plain scan
 * node (ExecScan: a filter, then the projection) and every local selection
 * can be rewritten over the scan's own tuple (its columns are the scan's
 * target list's Vars; no subplan), the chain runs inside the scan's qual:
 * the scan's own filter first, then this epoch's local chain, counted and
 * timed as route_current would.  A tuple it drops is never projected nor
 * returned, as in PostgreSQL's plan, where the scan filtered it.  It is
 * counted by the selection that dropped it, not as the scan's Rows Removed
 * by Filter (its Filter does not show the eddy's selections).  Then, where
 * the routing sends the tuple on to a hash join that would not store it,
 * the join's probe runs there too, and a tuple that finds no match is
 * dropped (the state's probe_misses counts it as the join would), while
 * most probes miss: one that matches is made again when the tuple is
 * routed.  A tuple it passes carries what it did to
 * read_source in EddyLocalQual; one it drops still counts as read (the
 * cumulative policy's rows read, EXPLAIN's Tuples Read).  While the eddy
 * spills, what the scan returns goes to batch files unrouted, and is
 * routed when its batch is read (route_locally), so the chain stands
 * aside; so it does for the tuple of every source read ahead before
 * anything is routed (peek_sources): one empty source, and nothing is.  Only under the build schedule with no delay and no routing hold,
 * and where state may not migrate: the schedules that pace their sources
 * (schedule.c) decide which source to read tuple by tuple, and migration
 * looks for misplaced state at every point of stasis, dropped tuples
 * included, so there the chain runs in read_source (route_locally), which
 * then returns to the main loop for each tuple it drops.
 */

/* A tuple the chain or the probe drops: the eddy's drop, not the scan's */
static inline Datum
local_qual_drop(EddyLocalQual *lq, EddySource *src, bool filtered)
{
	src->nread++;
	src->scan_dropped++;
	if (filtered)
		InstrCountFiltered1(&lq->es->css, 1);
	if (unlikely(lq->scan->instrument != NULL))
		lq->scan->instrument->nfiltered1 -= 1;	/* ExecScan counts it there */
	return BoolGetDatum(false);
}

/*
 * The probe of local_qual_eval: true if the tuple misses, and then counted
 * as the join's (out of line: the chain's drops are the common case).
 */
static pg_noinline bool
local_probe_misses(EddyLocalQual *lq, EddySource *src, ExprContext *econtext,
				   bool timed)
{
	EddyState  *es = lq->es;
	EddyRouteTarget *tg = &es->targets[src->local_next];
	EddyModule *m = es->modules[tg->module];
	AttrNumber *attnos = lq->probe_attnos[src->local_next];
	TupleTableSlot *scantuple = econtext->ecxt_scantuple;
	int			nkeys = lq->probe_nkeys[src->local_next];
	double		start = 0;
	int			k;

	for (k = 0; k < nkeys; k++)
		lq->keys[k] = slot_getattr(scantuple, attnos[k], &lq->keynulls[k]);
	if (timed)
		start = eddy_now_ns();
	if (!m->state->probe_misses(es, m, tg->dir, lq->keys, lq->keynulls))
		return false;
	if (timed)
	{
		tg->stats->cost_ns += eddy_now_ns() - start;
		tg->stats->samples++;
	}
	if (!lq->noted)
		EddyRouterNoteFirst(&es->router, lq->source, src->local_next);
	return true;
}

/* The chain, timed (out of line: one tuple in EDDY_COST_SAMPLE_INTERVAL) */
static pg_noinline bool
local_chain_timed(EddyLocalQual *lq, EddySource *src, ExprContext *econtext,
				  uint64 *done)
{
	EddyState  *es = lq->es;
	int			k;

	for (k = 0; k < src->local_len; k++)
	{
		EddyRouteTarget *tg = &es->targets[src->local_chain[k]];

		if (!EddyLocalFilter(tg, &lq->preds[tg->module], econtext, true))
			return false;
		*done |= UINT64CONST(1) << tg->module;
	}
	return true;
}

static Datum
local_qual_eval(ExprState *state, ExprContext *econtext, bool *isnull)
{
	EddyLocalQual *lq = (EddyLocalQual *) state->evalfunc_private;
	EddyState  *es = lq->es;
	EddySource *src = lq->src;
	uint64		done = 0;
	bool		timed;
	int			k;

	lq->passed = false;
	if (econtext->ecxt_scantuple->tts_nvalid < lq->fetch_attno)
		slot_getsomeattrs(econtext->ecxt_scantuple, lq->fetch_attno);
	/*
	 * The scan's own filter (ExecScan's ExecQual switched the context), one
	 * clause by its fast path where it has one
	 */
	*isnull = false;
	if (lq->orig_pred.fast_fcinfo != NULL)
	{
		if (!EddyPredicateEval(&lq->orig_pred, econtext))
			return BoolGetDatum(false);
	}
	else if (lq->orig != NULL &&
			 !DatumGetBool(ExecEvalExpr(lq->orig, econtext, isnull)))
	{
		*isnull = false;
		return BoolGetDatum(false);
	}
	*isnull = false;
	if (unlikely(es->spill != NULL || es->peeking))
		return BoolGetDatum(true);	/* routed later, in read_source */

	EddyRouterTupleIn(&es->router);
	timed = (--es->until_sample <= 0);
	if (unlikely(src->local_generation != es->router.generation ||
				 src->local_exhausted != es->exhausted ||
				 --src->local_recheck <= 0))
	{
		compute_local_chain(es, lq->source, src);
		/* the new chain's predicates may read further (their fast paths) */
		if (econtext->ecxt_scantuple->tts_nvalid < lq->fetch_attno)
			slot_getsomeattrs(econtext->ecxt_scantuple, lq->fetch_attno);
	}
	lq->noted = src->local_len > 0;
	if (lq->noted)
		EddyRouterNoteFirst(&es->router, lq->source, src->local_chain[0]);
	if (likely(!timed))
	{
		for (k = 0; k < src->local_len; k++)
		{
			EddyRouteTarget *tg = &es->targets[src->local_chain[k]];

			if (!EddyLocalFilter(tg, &lq->preds[tg->module], econtext, false))
				return local_qual_drop(lq, src, true);
			done |= UINT64CONST(1) << tg->module;
		}
	}
	else
	{
		es->until_sample = EDDY_COST_SAMPLE_INTERVAL;
		if (!local_chain_timed(lq, src, econtext, &done))
			return local_qual_drop(lq, src, true);
	}

	/*
	 * Then a hash join that would neither store the tuple (nothing probes
	 * its side any more) nor find it a match drops it too: the probe of
	 * the source read last into the others' state (TPC-H Q17: 6,001,215
	 * lineitem rows probe 204 of part, 6,088 match).
	 */
	if (src->local_probe && local_probe_misses(lq, src, econtext, timed))
		return local_qual_drop(lq, src, false);
	lq->passed = true;
	lq->done = done;
	lq->timed = timed;
	return BoolGetDatum(true);
}

/*
 * Rewrite a predicate over the wide tuple into one over a source's own
 * tuple: its scan's (tlist: the scan's target list, whose Vars its columns
 * are) or its heap tuple's (heap: an index-joined source's columns are heap
 * attributes, src->attnos).  NULL where it cannot be: a column outside
 * the source's range, or computed by the scan (it would be computed twice),
 * or a system column of a heap tuple, or a subplan (its state belongs to
 * the eddy).
 */
typedef struct SourceRewrite
{
	EddySource *src;
	List	   *tlist;
	bool		heap;
	bool		ok;
} SourceRewrite;

static Node *
source_rewrite_mutator(Node *node, SourceRewrite *cxt)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var) && ((Var *) node)->varno == INDEX_VAR)
	{
		int			c = ((Var *) node)->varattno - 1 - cxt->src->first_col;
		TargetEntry *tle;
		Var		   *var;

		if (cxt->heap)
		{
			if (c < 0 || c >= cxt->src->ncols || cxt->src->attnos[c] <= 0)
			{
				cxt->ok = false;
				return node;
			}
			var = copyObject((Var *) node);
			var->varno = 1;		/* any plain varno reads the scan tuple */
			var->varattno = cxt->src->attnos[c];
			return (Node *) var;
		}
		if (c < 0 || c >= list_length(cxt->tlist))
		{
			cxt->ok = false;
			return node;
		}
		tle = list_nth_node(TargetEntry, cxt->tlist, c);
		if (!IsA(tle->expr, Var))
		{
			cxt->ok = false;
			return node;
		}
		return (Node *) copyObject(tle->expr);
	}
	if (IsA(node, SubPlan) || IsA(node, AlternativeSubPlan))
	{
		cxt->ok = false;
		return node;
	}
	return expression_tree_mutator(node, source_rewrite_mutator, (void *) cxt);
}

Node *
EddyRewriteForSource(Node *expr, EddySource *src, List *tlist, bool heap)
{
	SourceRewrite cxt;
	Node	   *result;

	cxt.src = src;
	cxt.tlist = tlist;
	cxt.heap = heap;
	cxt.ok = true;
	result = source_rewrite_mutator(expr, &cxt);
	return cxt.ok ? result : NULL;
}

/* Put source i's local chain in its scan's qual, where it can be */
static void
begin_local_qual(EddyState *es, int i, EddySource *src)
{
	PlanState  *scan = src->plan;
	EddyLocalQual *lq;
	ExprState  *wrapper;
	List	   *tlist = scan->plan->targetlist;
	int			maxkeys = 0;
	bool		any;
	int			j;

	if (!IsA(scan, SeqScanState) && !IsA(scan, IndexScanState) &&
		!IsA(scan, IndexOnlyScanState) && !IsA(scan, BitmapHeapScanState))
		return;
	lq = palloc0(sizeof(EddyLocalQual));
	lq->preds = palloc0(sizeof(EddyPredicate) * es->nmodules);
	lq->pred_attno = palloc0(sizeof(AttrNumber) * es->nmodules);
	for (j = 0; j < es->nmodules; j++)
	{
		EddyModule *m = es->modules[j];
		Node	   *expr;

		if (m->filter == NULL || (m->target[0].need & ~(1u << i)) != 0)
			continue;
		expr = EddyRewriteForSource((Node *) m->expr, src, tlist, false);
		if (expr == NULL)
			return;				/* route_locally does it */
		EddyPredicateInitScan(&lq->preds[j], (Expr *) expr, scan);
		scan_attno_walker(expr, &lq->pred_attno[j]);
	}

	/* the hash joins this source's tuples may go to first, on plain keys */
	lq->probe_attnos = palloc0(sizeof(AttrNumber *) * es->ntargets);
	lq->probe_nkeys = palloc0(sizeof(int) * es->ntargets);
	any = src->local_sels;
	for (j = 0; j < es->ntargets; j++)
	{
		EddyRouteTarget *tg = &es->targets[j];
		EddyModule *m = es->modules[tg->module];
		EddyJoinSpec *ends;
		AttrNumber *attnos;
		int			k;

		if (m->state == NULL || m->state->probe_misses == NULL)
			continue;			/* nothing a scan can probe */
		ends = m->state->spec(m);
		if (ends->rel[tg->dir] != i || !ends->plainkeys[tg->dir])
			continue;
		attnos = palloc(sizeof(AttrNumber) * ends->nkeys);
		for (k = 0; k < ends->nkeys; k++)
		{
			int			c = ends->keycol[tg->dir][k];
			TargetEntry *tle;

			if (c < 0 || c >= list_length(tlist))
				break;
			tle = list_nth_node(TargetEntry, tlist, c);
			if (!IsA(tle->expr, Var) || ((Var *) tle->expr)->varattno <= 0)
				break;
			attnos[k] = ((Var *) tle->expr)->varattno;
		}
		if (k < ends->nkeys)
			continue;
		lq->probe_attnos[j] = attnos;
		lq->probe_nkeys[j] = ends->nkeys;
		maxkeys = Max(maxkeys, ends->nkeys);
		any = true;
	}
	if (!any)
		return;					/* nothing to do there */
	lq->keys = palloc(sizeof(Datum) * Max(maxkeys, 1));
	lq->keynulls = palloc(sizeof(bool) * Max(maxkeys, 1));
	lq->es = es;
	lq->source = i;
	lq->src = src;
	lq->scan = scan;
	lq->orig = scan->qual;
	if (list_length(scan->plan->qual) == 1)
		EddyPredicateInitScan(&lq->orig_pred, linitial(scan->plan->qual), scan);
	scan_attno_walker((Node *) scan->plan->qual, &lq->orig_attno);
	lq->orig_attno = Min(lq->orig_attno,
						 ((ScanState *) scan)->ss_ScanTupleSlot->tts_tupleDescriptor->natts);
	lq->fetch_attno = lq->orig_attno;	/* until the first chain */
	wrapper = makeNode(ExprState);
	wrapper->flags = EEO_FLAG_IS_QUAL;
	wrapper->evalfunc = local_qual_eval;
	wrapper->evalfunc_private = lq;
	wrapper->parent = scan;
	lq->wrapper = wrapper;
	scan->qual = wrapper;
	src->local_qual = lq;
}

/* The tuple descriptor of source i's columns (palloc'd in the current context) */
TupleDesc
EddySourceTupleDesc(EddyState *es, int i)
{
	EddySource *src = &es->sources[i];
	TupleDesc	wide = es->wide->tts_tupleDescriptor;
	TupleDesc	desc = CreateTemplateTupleDesc(src->ncols);
	int			c;

	for (c = 0; c < src->ncols; c++)
		TupleDescCopyEntry(desc, c + 1, wide, src->first_col + c + 1);
	return desc;
}

/* Save the counters (EddySavedCounters), palloc'd in the current context */
void
EddySaveCounters(EddyState *es, EddySavedCounters *saved)
{
	int			m;
	int			s;

	EddyRouterCloseRuns(&es->router);	/* their tuples into the counters */
	saved->lanes = palloc(sizeof(EddyHistoryLane) * es->router.nlanes);
	memcpy(saved->lanes, es->router.lanes,
		   sizeof(EddyHistoryLane) * es->router.nlanes);
	saved->last_run_tuples = palloc0(sizeof(uint64) * es->router.nlanes);
	for (s = 0; s < es->router.nlanes; s++)
		if (saved->lanes[s].nruns > 0)
			saved->last_run_tuples[s] =
				saved->lanes[s].runs[saved->lanes[s].nruns - 1].tuples;
	saved->modules = palloc0(sizeof(EddyModuleCounters) * es->nmodules);
	for (m = 0; m < es->nmodules; m++)
	{
		EddyModule *mod = es->modules[m];
		EddyModuleCounters *c = &saved->modules[m];

		memcpy(c->stats, mod->stats, sizeof(c->stats));
		if (mod->state == NULL)
			continue;
		for (s = 0; s < mod->state->nstores; s++)
			mod->state->save_counters(mod, s, &c->stores[s]);
	}
	saved->nfiltered1 = es->css.ss.ps.instrument ? es->css.ss.ps.instrument->nfiltered1 : 0;
}

/* Restore the counters EddySaveCounters saved, and free its copies */
void
EddyRestoreCounters(EddyState *es, EddySavedCounters *saved)
{
	int			m;
	int			s;

	/*
	 * The replay's first choices are forgotten, as its counts are: each
	 * lane's runs as they were (an array the replay grew is kept), no open
	 * run.
	 */
	for (s = 0; s < es->router.nlanes; s++)
	{
		EddyHistoryLane *l = &es->router.lanes[s];

		l->nruns = saved->lanes[s].nruns;
		if (l->nruns > 0)
			l->runs[l->nruns - 1].tuples = saved->last_run_tuples[s];
		l->truncated = saved->lanes[s].truncated;
		l->open_target = -1;
		l->open_tuples = 0;
	}
	for (m = 0; m < es->nmodules; m++)
	{
		EddyModule *mod = es->modules[m];
		EddyModuleCounters *c = &saved->modules[m];

		memcpy(mod->stats, c->stats, sizeof(c->stats));
		if (mod->state == NULL)
			continue;
		for (s = 0; s < mod->state->nstores; s++)
			mod->state->restore_counters(mod, s, &c->stores[s]);
	}
	if (es->css.ss.ps.instrument)
		es->css.ss.ps.instrument->nfiltered1 = saved->nfiltered1;
	pfree(saved->modules);
	pfree(saved->lanes);
	pfree(saved->last_run_tuples);
}

/* Source i has no more rows (for this participant, or at all) */
void
EddySourceExhausted(EddyState *es, int i)
{
	EddySource *src = &es->sources[i];

	src->exhausted = true;
	src->exhausted_rank = ++es->nexhausted;
	es->exhausted |= 1u << i;
	es->check_end = true;
	if (unlikely(es->holding))
		EddyScheduleCheckHold(es);
}

/*
 * A source ran out: can the result still grow?  Not when a module's state
 * says no result can be made any more (its `ended` operation: a hash join
 * with a side read to its end and nothing stored): then the eddy ends
 * without reading the rest of its sources, as PostgreSQL's hash join does
 * not read its outer side when its inner one was empty.  Called by
 * read_source, at a point of stasis.  Not while the eddy spills (a batch's
 * state is partly in its files) nor in an eddy that exchanges its state
 * (its STAIRs are not yet everyone's).
 */
static bool
result_ended(EddyState *es)
{
	int			side = -1;
	int			m;

	es->check_end = false;
	if ((es->scanned & ~es->exhausted) == 0)
		return false;			/* the ordinary end */
	if (es->spill != NULL || es->exchange)
		return false;
	for (m = 0; m < es->nmodules; m++)
	{
		EddyModule *mod = es->modules[m];

		if (mod->state != NULL && mod->state->ended(es, mod, &side) >= 0)
			break;
	}
	if (m == es->nmodules)
		return false;
	es->ended_by = m + 1;
	es->ended_side = side;
	es->ended_loops++;
	return true;
}

static EddyTuple *
read_source(EddyState *es)
{
	if (unlikely(!es->peeked))
	{
		/*
		 * An exchanging participant reads no source ahead: its share of one
		 * may be empty while the others' are not (parallel.c).
		 */
		if (es->exchange && !es->exchange_started && EddyExchangeStart(es))
			es->peeked = true;
		else if (!peek_sources(es))
			return NULL;		/* a source is empty: so is the result */
	}

	for (;;)
	{
		int			i;
		EddySource *src;
		TupleTableSlot *slot;
		EddyTuple  *t;
		uint64		done;
		bool		from_scan;
		bool		filled;

		if (unlikely(es->check_end) && result_ended(es))
			return NULL;
		if (likely(es->schedule == EDDY_SCHEDULE_BUILD && !es->delayed))
		{
			/* build order: the first source in order that is not exhausted */
			if (es->next_source >= es->nsources)
				return NULL;
			i = es->source_order[es->next_source];
			if (es->sources[i].method != EDDY_SOURCE_SCAN || es->sources[i].exhausted)
			{
				es->next_source++;
				continue;
			}
		}
		else if ((i = EddyScheduleNext(es)) < 0)
			return NULL;
		src = &es->sources[i];
		if (unlikely(es->claimed & (1u << i)) && es->exchange_active &&
			!EddyExchangeMayRead(es, i))
		{
			/* another process reads it whole: exchange at once */
			EddyExchangeSource(es, i);
			EddySourceExhausted(es, i);
			continue;
		}
		from_scan = true;
		if (src->pending != NULL)
		{
			slot = src->pending;	/* read by peek_sources */
			src->pending = NULL;
		}
		else if (unlikely(es->spill != NULL))
		{
			slot = EddySpillRead(es, i);	/* a batch's file */
			from_scan = false;
		}
		else
			slot = ExecProcNode(src->plan);
		if (TupIsNull(slot))
		{
			/* exchanging: the others' rows of it first (a point of stasis) */
			if (unlikely(es->exchange_active))
				EddyExchangeSource(es, i);
			EddySourceExhausted(es, i);
			continue;
		}
		src->nread++;
		es->seq++;				/* the driver's arrival (SteM mode) */
		es->unbuilt = src->nbuild > 0; /* BuildFirst: es->build_first */
		if (unlikely(es->holding))
			EddyScheduleCheckHold(es);
		slot_getsomeattrs(slot, src->ncols);
		done = 0;
		filled = false;
		if (src->local_qual != NULL && !src->local_qual->passed &&
			!es->peeking && es->spill == NULL &&
			(src->local_generation != es->router.generation ||
			 src->local_exhausted != es->exhausted ||
			 --src->local_recheck <= 0))
			compute_local_chain(es, i, src);	/* may put the chain back */
		if (from_scan && src->local_qual != NULL && src->local_qual->passed)
		{
			/* its scan's qual began routing it (local_qual_eval) */
			EddyLocalQual *lq = src->local_qual;

			lq->passed = false;
			done = lq->done;
			es->current_started = true;
			es->current_fresh = !lq->noted;
			es->current_timed = lq->timed;
		}
		else if (src->local_sels)
		{
			if (!route_locally(es, i, src, slot, &done))
			{
				/* dropped: nothing was made of it */
				if (unlikely(es->migrating))
				{
					/* migration looks at every point of stasis */
					es->stasis_due = true;
					return NULL;
				}
				CHECK_FOR_INTERRUPTS();
				continue;
			}
			filled = done != 0;
		}
		t = EddyTupleAlloc(es, &es->transient);
		memset(t->rows, 0, sizeof(EddyRow *) * es->nsources);
		t->spans = 1u << i;
		t->done = done;
		t->rows[i] = EddyRowFromSlot(es, src, slot);
		if (filled)
		{
			/* route_locally put its values in the wide slot */
			es->loaded[i] = t->rows[i];
			es->loaded_any = true;
		}
		return t;
	}
}

/* A tuple enters routing: counted, and timed one time in 128 */
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
		if (es->current_timed)
			start = eddy_now_ns();
		next = m->methods->route(es, m, tg->dir, t);
		if (es->current_timed)
		{
			tg->stats->cost_ns += eddy_now_ns() - start;
			tg->stats->samples++;
		}
		if (next == NULL)
			return NULL;		/* dropped, or stored with its matches pushed */
		if (next != t)
			router->until_reopt--;	/* a join's one result: a routed tuple */
		t = next;
	}
}

/*
 * State migration (migrate.c) rebuilds the join state by routing the rows
 * it holds again: route t, one of them (with the done bits of the
 * selections on its relation alone), as if it had just been read, until
 * nothing is in flight.  Complete results are dropped: they were returned
 * when first made.  Nothing is counted here (migrate.c restores the
 * counters the modules keep), nor timed, nor does routing recompute.
 */
void
EddyReplay(EddyState *es, EddyTuple *t)
{
	Assert(es->replaying && es->nstack == 0);
	for (;;)
	{
		while (t != NULL)
		{
			int			target = EddyRoute(&es->router, t->spans, t->done);
			EddyRouteTarget *tg;
			EddyModule *m;

			if (target == EDDY_ROUTE_OUTPUT)
				break;
			tg = &es->targets[target];
			m = es->modules[tg->module];
			t = m->methods->route(es, m, tg->dir, t);
		}
		for (;;)
		{
			EddyFrame  *f;

			if (es->nstack == 0)
				return;
			CHECK_FOR_INTERRUPTS();
			f = &es->stack[es->nstack - 1];
			t = f->module->methods->next(es, f);
			if (t != NULL)
				break;
			es->nstack--;
		}
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

	/* the One-Time Filter, first in each scan: when it fails, read nothing */
	if (unlikely(es->one_time_qual != NULL) && !es->one_time_checked)
	{
		ExprContext *econtext = es->css.ss.ps.ps_ExprContext;

		es->one_time_checked = true;
		ResetExprContext(econtext);
		if (!ExecQual(es->one_time_qual, econtext))
			es->state = EDDY_STATE_DONE;
	}

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

					if (es->chain)
					{
						TupleTableSlot *slot = read_chain(es);

						if (slot == NULL)
							es->state = EDDY_STATE_DONE;
						return slot;
					}
					t = read_source(es);
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
						/* route_locally began: counted, maybe routed */
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
	return eddy_exec_node(&node->ss.ps);
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
		else
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
	for (i = 0; i < es->nmodules; i++)
	{
		EddyModule *m = es->modules[i];

		if (m->methods->rescan)
			m->methods->rescan(es, m);
	}
	EddyMigrationRescan(es);
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
		src->exhausted_rank = 0;
		src->nread = 0;
		src->pending = NULL;
		if (node->ss.ps.chgParam != NULL)
			UpdateChangedParamSet(src->plan, node->ss.ps.chgParam);
		if (src->plan->chgParam == NULL)
			ExecReScan(src->plan);
	}
}
