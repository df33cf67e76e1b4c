/*-------------------------------------------------------------------------
 *
 * exec.c
 *	  The Eddy executor node: routing loop, rescan, EXPLAIN.
 *
 * The node reads tuples from its one source (the relation's scan, as
 * PostgreSQL planned it) and routes each through the selection operators
 * by the router's table (routing.c): the tuple's done bitmap selects the
 * next operator; a failing predicate drops the tuple; a tuple that has
 * passed every operator is projected and returned.  Every
 * eddy.reopt_frequency tuples the router recomputes its decisions.
 *
 *	 for (;;)
 *	 {
 *		 read a source tuple (end of source: done)
 *		 every reopt_frequency tuples: recompute routing
 *		 done = 0
 *		 while ((op = route[done]) != OUTPUT)
 *			 if (!op(tuple)) drop it, next tuple
 *			 done |= op
 *		 return projection of tuple
 *	 }
 *
 * Tuples are never buffered, so the eddy evaluates predicates and its
 * projection directly on the slot its source returned (custom_scan_tlist is
 * the source's target list): nothing is copied.  The scan-side slot
 * operations are therefore the source's, which we declare before any
 * expression is compiled.
 *
 * Settings are read when the node starts (eddy.routing_policy,
 * eddy.reopt_frequency, eddy.lottery_window), so a prepared statement uses
 * the values in effect when it runs.  What the eddy learned survives a
 * rescan: the data of a correlated subquery's rescans is usually alike.
 *
 * Interrupts are checked for every tuple read, so a query whose predicates
 * drop every row still stops promptly on cancel or statement_timeout.
 *
 *-------------------------------------------------------------------------
 */
#include "eddy.h"

#include "commands/explain.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "utils/builtins.h"
#include "utils/ruleutils.h"

#include "private.h"

typedef struct EddyScanState
{
	CustomScanState css;		/* must be first */
	PlanState  *source;			/* the relation's scan */
	EddyOperator *ops;			/* selection operators, PostgreSQL's order */
	EddyRouter	router;
	EddyJoinState *join;		/* join eddies: everything is in join.c */
	int			until_sample;	/* tuples until the next timed routing */
	int			deform_natts;	/* scan columns the operators read */
} EddyScanState;

static Node *eddy_create_scan_state(CustomScan *cscan);
static void eddy_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *eddy_exec(CustomScanState *node);
static TupleTableSlot *eddy_exec_node(PlanState *pstate);
static TupleTableSlot *eddy_join_exec_node(PlanState *pstate);
static void eddy_end(CustomScanState *node);
static void eddy_rescan(CustomScanState *node);
static void eddy_explain(CustomScanState *node, List *ancestors,
						 ExplainState *es);

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
	.ExplainCustomScan = eddy_explain,
};

void
EddyExecInit(void)
{
	RegisterCustomScanMethods(&eddy_scan_methods);
}

static Node *
eddy_create_scan_state(CustomScan *cscan)
{
	EddyScanState *state = palloc0(sizeof(EddyScanState));

	NodeSetTag(state, T_CustomScanState);
	state->css.methods = &eddy_exec_methods;
	return (Node *) state;
}

static void
eddy_begin(CustomScanState *node, EState *estate, int eflags)
{
	EddyScanState *state = (EddyScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *sources;
	List	   *modules;
	int			nops;
	const TupleTableSlotOps *source_ops;
	bool		source_ops_fixed;
	bool		selections_only = true;
	int			i;
	ListCell   *lc;

	/* private.h: a selection eddy has one source and selections only */
	Assert(list_length(cscan->custom_private) == EddyPrivNumItems);
	sources = list_nth(cscan->custom_private, EddyPrivSources);
	modules = list_nth(cscan->custom_private, EddyPrivModules);
	foreach(lc, modules)
	{
		if (intVal(list_nth((List *) lfirst(lc), EddySelKind)) != EDDY_MODULE_SELECTION)
			selections_only = false;
	}
	if (list_length(sources) != 1 || !selections_only)
	{
		state->join = EddyJoinBegin(node, estate, eflags);
		node->ss.ps.ExecProcNode = eddy_join_exec_node;
		return;
	}
	nops = list_length(modules);
	Assert(nops <= EDDY_MAX_SELECTIONS);

	state->source = ExecInitNode(linitial(cscan->custom_plans), estate, eflags);
	node->custom_ps = list_make1(state->source);

	/*
	 * Predicates and projection read the source's slot itself: declare its
	 * slot type as our scan slot type, then build the projection again
	 * (ExecInitCustomScan built it for a virtual scan slot).
	 */
	source_ops = ExecGetResultSlotOps(state->source, &source_ops_fixed);
	node->ss.ps.scanops = source_ops;
	node->ss.ps.scanopsfixed = source_ops_fixed;
	node->ss.ps.scanopsset = true;
	ExecAssignScanProjectionInfoWithVarno(&node->ss, INDEX_VAR);

	state->ops = palloc0(sizeof(EddyOperator) * Max(nops, 1));
	for (i = 0; i < nops; i++)
	{
		List	   *md = list_nth(modules, i);
		uint32		prereq = 0;
		ListCell   *lc2;

		Assert(list_length(md) == EddySelNumItems);
		foreach(lc2, (List *) list_nth(md, EddySelPrereqs))
			prereq |= 1u << intVal(lfirst(lc2));
		EddySelectionInit(&state->ops[i],
						  list_nth(cscan->custom_exprs,
								   intVal(list_nth(md, EddySelExpr))),
						  prereq,
						  floatVal(list_nth(md, EddySelEstSelectivity)),
						  floatVal(list_nth(md, EddySelEstCost)),
						  &node->ss.ps);
		state->deform_natts = Max(state->deform_natts,
								  EddySelectionMaxAttno(&state->ops[i]));
	}

	EddyRouterInit(&state->router, state->ops, nops,
				   (EddyRoutingPolicy) eddy_routing_policy,
				   eddy_reopt_frequency, eddy_lottery_window,
				   UINT64CONST(0x5eed0edd) ^ (uint64) cscan->scan.plan.plan_node_id);
	state->until_sample = 1;	/* time the first tuple */

	/* skip ExecCustomScan's trampoline: ExecInitNode installs this one */
	node->ss.ps.ExecProcNode = eddy_exec_node;
}

/*
 * Route the tuple in econtext's scan slot through the operators in this
 * epoch's order (routing.c: for selections the routing table reduces to one
 * chain per epoch).  Returns true if it passed them all.  Inlined twice:
 * plain, and timing each evaluation (one tuple in EDDY_COST_SAMPLE_INTERVAL).
 * Runs in the per-tuple memory context; a NULL result fails, as in ExecQual.
 */
static pg_attribute_always_inline bool
eddy_route_tuple(EddyRouter *router, EddyOperator *ops,
				 ExprContext *econtext, bool timed)
{
	int			k;

	for (k = 0; k < router->order_len; k++)
	{
		EddyOperator *o = &ops[router->order[k]];
		bool		pass;

		o->tuples_in++;
		if (timed)
			pass = EddySelectionEvalTimed(o, econtext);
		else
			pass = EddySelectionEval(o, econtext);
		if (!pass)
		{
			o->tuples_dropped++;
			return false;
		}
	}
	return true;
}

/*
 * The node's ExecProcNode: installed directly by eddy_begin, so that the
 * executor calls it without going through ExecCustomScan.
 */
static TupleTableSlot *
eddy_exec_node(PlanState *pstate)
{
	EddyScanState *state = (EddyScanState *) pstate;
	EddyRouter *router = &state->router;
	EddyOperator *ops = state->ops;
	ExprContext *econtext = pstate->ps_ExprContext;

	for (;;)
	{
		TupleTableSlot *slot;
		MemoryContext oldcontext;
		bool		pass;

		CHECK_FOR_INTERRUPTS();

		slot = ExecProcNode(state->source);
		if (TupIsNull(slot))
			return NULL;

		ResetExprContext(econtext);
		econtext->ecxt_scantuple = slot;
		/* deform, once, every column the operators read */
		slot_getsomeattrs(slot, state->deform_natts);

		if (unlikely(router->until_reopt <= 0))
			EddyRouterReoptimize(router);
		router->until_reopt--;

		oldcontext = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
		if (unlikely(--state->until_sample <= 0))
		{
			state->until_sample = EDDY_COST_SAMPLE_INTERVAL;
			pass = eddy_route_tuple(router, ops, econtext, true);
		}
		else
			pass = eddy_route_tuple(router, ops, econtext, false);
		MemoryContextSwitchTo(oldcontext);

		if (!pass)
		{
			InstrCountFiltered1(&state->css, 1);
			continue;
		}

		if (pstate->ps_ProjInfo)
			return ExecProject(pstate->ps_ProjInfo);
		return slot;
	}
}

static TupleTableSlot *
eddy_join_exec_node(PlanState *pstate)
{
	return EddyJoinNext(((EddyScanState *) pstate)->join);
}

static TupleTableSlot *
eddy_exec(CustomScanState *node)
{
	if (((EddyScanState *) node)->join)
		return eddy_join_exec_node(&node->ss.ps);
	return eddy_exec_node(&node->ss.ps);
}

static void
eddy_end(CustomScanState *node)
{
	EddyScanState *state = (EddyScanState *) node;

	if (state->join)
		EddyJoinEnd(state->join);
	else
		ExecEndNode(state->source);
}

static void
eddy_rescan(CustomScanState *node)
{
	EddyScanState *state = (EddyScanState *) node;

	if (state->join)
	{
		EddyJoinRescan(state->join);
		return;
	}
	if (node->ss.ps.chgParam != NULL)
		UpdateChangedParamSet(state->source, node->ss.ps.chgParam);
	if (state->source->chgParam == NULL)
		ExecReScan(state->source);
}

/* ----------------------------------------------------------------
 *		EXPLAIN
 * ----------------------------------------------------------------
 */

static void
eddy_explain_line_start(ExplainState *es)
{
	appendStringInfoSpaces(es->str, es->indent * 2);
}

/* Operators a fresh tuple visits under the current routing, if it passes */
static List *
eddy_current_order(EddyRouter *router)
{
	List	   *order = NIL;
	int			k;

	for (k = 0; k < router->order_len; k++)
		order = lappend_int(order, router->order[k] + 1);
	return order;
}

static char *
eddy_int_list_string(List *list)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, list)
		appendStringInfo(&buf, "%s%d", buf.len > 0 ? ", " : "", lfirst_int(lc));
	return buf.data;
}

static void
eddy_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	EddyScanState *state = (EddyScanState *) node;
	EddyRouter *router = &state->router;
	bool		analyze = es->analyze && node->ss.ps.instrument != NULL;
	List	   *context;
	int			i;

	if (state->join)
	{
		EddyJoinExplain(state->join, ancestors, es);
		return;
	}
	context = set_deparse_context_plan(es->deparse_cxt, node->ss.ps.plan,
									   ancestors);

	ExplainPropertyText("Routing Policy", EddyPolicyName(router->policy), es);
	if (router->policy == EDDY_POLICY_LOTTERY && router->lottery_window > 0)
		ExplainPropertyInteger("Lottery Window", "tuples",
							   router->lottery_window, es);
	ExplainPropertyInteger("Reoptimization Frequency", "tuples",
						   router->reopt_frequency, es);

	ExplainOpenGroup("Operators", "Operators", false, es);
	for (i = 0; i < router->nops; i++)
	{
		EddyOperator *op = &state->ops[i];
		char	   *expr = deparse_expression((Node *) op->expr, context,
											  es->verbose, false);
		uint64		tuples_out = op->tuples_in - op->tuples_dropped;
		uint64		tuples_first = op->tuples_first;
		double		sel = op->tuples_in > 0 ?
			(double) tuples_out / op->tuples_in : 0.0;
		double		cost_us = op->cost_samples > 0 ?
			op->cost_ns / op->cost_samples / 1000.0 : 0.0;
		List	   *after = NIL;
		int			j;

		/* the open epoch's tuples are not yet counted */
		if (i == router->epoch_first)
			tuples_first += EddyRouterRouted(router) - router->epoch_start;

		for (j = 0; j < router->nops; j++)
			if (op->prereq & (1u << j))
				after = lappend_int(after, j + 1);

		if (es->format == EXPLAIN_FORMAT_TEXT)
		{
			eddy_explain_line_start(es);
			appendStringInfo(es->str, "Selection %d: %s", i + 1, expr);
			if (after != NIL)
				appendStringInfo(es->str, " (after %s)",
								 eddy_int_list_string(after));
			appendStringInfoChar(es->str, '\n');
			if (analyze)
			{
				eddy_explain_line_start(es);
				appendStringInfo(es->str,
								 "  Tuples In: " UINT64_FORMAT
								 "  Out: " UINT64_FORMAT
								 "  First: " UINT64_FORMAT
								 "  Selectivity: %.3f",
								 op->tuples_in, tuples_out,
								 tuples_first, sel);
				if (es->timing)
					appendStringInfo(es->str, "  Cost: %.3f us", cost_us);
				appendStringInfoChar(es->str, '\n');
			}
		}
		else
		{
			ExplainOpenGroup("Operator", NULL, true, es);
			ExplainPropertyText("Operator Type", "Selection", es);
			ExplainPropertyInteger("Operator Number", NULL, i + 1, es);
			ExplainPropertyText("Predicate", expr, es);
			if (after != NIL)
				ExplainPropertyText("After", eddy_int_list_string(after), es);
			if (analyze)
			{
				ExplainPropertyUInteger("Tuples In", NULL, op->tuples_in, es);
				ExplainPropertyUInteger("Tuples Out", NULL, tuples_out, es);
				ExplainPropertyUInteger("Tuples First", NULL, tuples_first, es);
				ExplainPropertyFloat("Selectivity", NULL, sel, 3, es);
				if (es->timing)
					ExplainPropertyFloat("Cost", "us", cost_us, 3, es);
			}
			ExplainCloseGroup("Operator", NULL, true, es);
		}
	}
	ExplainCloseGroup("Operators", "Operators", false, es);

	if (analyze)
	{
		ExplainPropertyUInteger("Tuples Routed", NULL, EddyRouterRouted(router), es);
		ExplainPropertyUInteger("Recomputations", NULL, router->recomputations, es);
		ExplainPropertyText("Final Order",
							eddy_int_list_string(eddy_current_order(router)), es);
		if (es->verbose)
		{
			StringInfoData buf;
			uint64		open_tuples = EddyRouterRouted(router) - router->epoch_start;

			/* runs of "first operator x tuples", the open epoch included */
			initStringInfo(&buf);
			for (i = 0; i < router->nhistory; i++)
			{
				uint64		tuples = router->history[i].tuples;

				if (i == router->nhistory - 1 &&
					router->history[i].op == router->epoch_first)
				{
					tuples += open_tuples;
					open_tuples = 0;
				}
				appendStringInfo(&buf, "%s%d x " UINT64_FORMAT,
								 i > 0 ? ", " : "",
								 router->history[i].op + 1, tuples);
			}
			if (open_tuples > 0 && router->epoch_first >= 0)
				appendStringInfo(&buf, "%s%d x " UINT64_FORMAT,
								 buf.len > 0 ? ", " : "",
								 router->epoch_first + 1, open_tuples);
			if (router->history_truncated)
				appendStringInfoString(&buf, ", ...");
			ExplainPropertyText("Routing History", buf.data, es);
		}
	}
}
