/*-------------------------------------------------------------------------
 *
 * explain.c
 *	  EXPLAIN of the Eddy node.
 *
 * Plain EXPLAIN: the routing policy (and the lottery window if any), the
 * reoptimization frequency (VERBOSE: a join eddy's estimated join state,
 * the planner's, which decided that the eddy fits in eddy.max_memory),
 * and the modules numbered in plan order, each
 * through its vtable's explain method: its predicate or join condition
 * (and a hash join's two STAIRs, an index join's index).  The sources are
 * the node's children.
 *
 * ANALYZE adds, for every module alike, the same counters with the same
 * meaning (routing.c): tuples in, tuples out, tuples for which it was the
 * first choice, the observed ratio (a selection's selectivity, a join's
 * fan-out) and, unless TIMING OFF, the mean sampled cost per visit; a hash
 * join's STAIRs add inserted, probed and matched.  Then tuples routed,
 * recomputations, and the final order (one-source eddies, whose routing
 * is one chain) or the join state's peak memory.  VERBOSE adds the history
 * of first choices: runs of "module x tuples".  An eddy that may migrate
 * its state shows the policy, and under ANALYZE the moves (migrate.c).
 * A join eddy in SteM mode shows "State Mode: stems", or why it could not
 * be (STAIRs, the default, show nothing).
 * Under the cumulative policy ANALYZE shows each join's estimates per
 * direction; eddy.routing_hold shows the relations held for and, under
 * ANALYZE, the tuples routed when the hold was released.
 *
 *-------------------------------------------------------------------------
 */
#include "exec.h"

#include "port/pg_bitutils.h"
#include "utils/builtins.h"
#include "utils/ruleutils.h"

/* One indented line of text-format output */
void
EddyExplainLine(ExplainState *xs, const char *fmt,...)
{
	appendStringInfoSpaces(xs->str, xs->indent * 2);
	for (;;)
	{
		va_list		args;
		int			needed;

		va_start(args, fmt);
		needed = appendStringInfoVA(xs->str, fmt, args);
		va_end(args);
		if (needed == 0)
			break;
		enlargeStringInfo(xs->str, needed);
	}
	appendStringInfoChar(xs->str, '\n');
}

/*
 * The cumulative policy's estimates of a join (ANALYZE), as of the last
 * recomputation, per direction: "from r" for the tuples that reach it
 * from r's side.
 */
static void
explain_cumulative(EddyState *es, EddyModule *m, ExplainState *xs)
{
	StringInfoData buf;
	int			d;

	if (es->router.policy != EDDY_POLICY_CUMULATIVE || !m->methods->joins)
		return;
	initStringInfo(&buf);
	for (d = 0; d < m->ndirs; d++)
	{
		EddySource *src = &es->sources[pg_rightmost_one_pos32(m->target[d].need)];

		appendStringInfo(&buf, "%sfrom %s %.3f", d > 0 ? ", " : "",
						 src->name ? src->name : "?", m->stats[d].cumulative);
	}
	if (xs->format == EXPLAIN_FORMAT_TEXT)
		EddyExplainLine(xs, "  Cumulative Estimate: %s", buf.data);
	else
		ExplainPropertyText("Cumulative Estimate", buf.data, xs);
}

/*
 * A module's counters (ANALYZE only), summed over its directions when dir
 * is -1.
 */
void
EddyExplainCounters(EddyState *es, EddyModule *m, int dir, ExplainState *xs)
{
	uint64		in = 0;
	uint64		out = 0;
	uint64		first = 0;
	uint64		samples = 0;
	uint64		outliers = 0;
	double		cost_ns = 0;
	double		ratio;
	double		cost_us;
	const char *ratio_name = m->methods->joins ? "Fan-out" : "Selectivity";
	int			d;

	if (!xs->analyze || es->css.ss.ps.instrument == NULL)
		return;
	for (d = 0; d < m->ndirs; d++)
	{
		if (dir >= 0 && d != dir)
			continue;
		in += m->stats[d].in;
		out += m->stats[d].out;
		first += EddyRouterFirst(&es->router, m->target_index[d]);
		samples += m->stats[d].samples;
		cost_ns += m->stats[d].cost_ns;
		outliers += m->stats[d].outliers;
	}
	ratio = in > 0 ? (double) out / in : 0.0;
	cost_us = samples > 0 ? cost_ns / samples / 1000.0 : 0.0;

	if (xs->format == EXPLAIN_FORMAT_TEXT)
	{
		StringInfoData buf;

		initStringInfo(&buf);
		appendStringInfo(&buf, "  Tuples In: " UINT64_FORMAT "  Out: " UINT64_FORMAT
						 "  First: " UINT64_FORMAT "  %s: %.3f",
						 in, out, first, ratio_name, ratio);
		if (xs->timing)
			appendStringInfo(&buf, "  Cost: %.3f us", cost_us);
		if (xs->timing && outliers > 0)
			appendStringInfo(&buf, "  Outliers Clipped: " UINT64_FORMAT, outliers);
		EddyExplainLine(xs, "%s", buf.data);
		explain_cumulative(es, m, xs);
		return;
	}
	ExplainPropertyUInteger("Tuples In", NULL, in, xs);
	ExplainPropertyUInteger("Tuples Out", NULL, out, xs);
	ExplainPropertyUInteger("Tuples First", NULL, first, xs);
	ExplainPropertyFloat(ratio_name, NULL, ratio, 3, xs);
	if (xs->timing)
	{
		ExplainPropertyFloat("Cost", "us", cost_us, 3, xs);
		ExplainPropertyUInteger("Cost Outliers Clipped", NULL, outliers, xs);
	}
	explain_cumulative(es, m, xs);
}

static char *
int_list_string(List *list)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, list)
		appendStringInfo(&buf, "%s%d", buf.len > 0 ? ", " : "", lfirst_int(lc));
	return buf.data;
}

/*
 * Runs of "module x tuples" of one lane of the history of first choices,
 * appended to buf
 */
static void
lane_string(EddyState *es, int lane, StringInfo buf)
{
	EddyRouter *router = &es->router;
	EddyHistoryLane *l = &router->lanes[lane];
	int			last = -1;
	uint64		run = 0;
	bool		any = false;
	int			i;

	for (i = 0; i <= l->nruns + 1; i++)
	{
		int			module;
		uint64		tuples;

		if (i < l->nruns)
		{
			module = es->targets[l->runs[i].target].module + 1;
			tuples = l->runs[i].tuples;
		}
		else if (i == l->nruns)
		{
			/* the open run, unless runs before it were left out */
			if (l->open_target < 0 || l->truncated)
				continue;
			module = es->targets[l->open_target].module + 1;
			tuples = l->open_tuples;
		}
		else if (lane == 0 && router->chain_len >= 0 && router->epoch_first >= 0)
		{
			/* the open epoch of a chain */
			module = es->targets[router->epoch_first].module + 1;
			tuples = EddyRouterRouted(router) - router->epoch_start;
		}
		else
			break;
		if (tuples == 0)
			continue;
		if (module == last)
		{
			run += tuples;
			continue;
		}
		if (last >= 0)
		{
			appendStringInfo(buf, "%s%d x " UINT64_FORMAT, any ? ", " : "",
							 last, run);
			any = true;
		}
		last = module;
		run = tuples;
	}
	if (last >= 0)
		appendStringInfo(buf, "%s%d x " UINT64_FORMAT, any ? ", " : "",
						 last, run);
	if (l->truncated)
		appendStringInfoString(buf, ", ...");
}

/*
 * The history of first choices: one eddy source's runs, or with several
 * scanned sources each one's, named ("r: 1 x 500; s: 2 x 300, 1 x 700")
 */
static char *
history_string(EddyState *es)
{
	StringInfoData buf;
	int			nscanned = 0;
	int			i;

	initStringInfo(&buf);
	for (i = 0; i < es->nsources; i++)
		if (es->sources[i].method == EDDY_SOURCE_SCAN)
			nscanned++;
	if (nscanned <= 1)
	{
		/* only the scanned source has first choices */
		for (i = 0; i < es->router.nlanes && buf.len == 0; i++)
			lane_string(es, i, &buf);
		return buf.data;
	}
	for (i = 0; i < es->router.nlanes && i < es->nsources; i++)
	{
		StringInfoData lane;

		if (es->sources[i].method != EDDY_SOURCE_SCAN)
			continue;
		initStringInfo(&lane);
		lane_string(es, i, &lane);
		if (lane.len == 0)
			continue;
		appendStringInfo(&buf, "%s%s: %s", buf.len > 0 ? "; " : "",
						 es->sources[i].name ? es->sources[i].name : "?",
						 lane.data);
	}
	return buf.data;
}

void
EddyExplain(CustomScanState *node, List *ancestors, ExplainState *xs)
{
	EddyState  *es = (EddyState *) node;
	EddyRouter *router = &es->router;
	bool		analyze = xs->analyze && node->ss.ps.instrument != NULL;
	bool		useprefix = es->nsources > 1 || xs->verbose;
	List	   *context;
	int			i;
	bool		dropped_in_scans = false;
	bool		deferred = false;

	context = set_deparse_context_plan(xs->deparse_cxt, node->ss.ps.plan,
									   ancestors);
	EddyRouterSyncChain(router);	/* a chain's open epoch's counts */
	if (es->one_time_expr != NULL)
		ExplainPropertyText("One-Time Filter",
							deparse_expression((Node *) es->one_time_expr,
											   context, useprefix, false), xs);
	ExplainPropertyText("Routing Policy", EddyPolicyName(router->policy), xs);
	if (router->policy == EDDY_POLICY_LOTTERY && router->lottery_window > 0)
		ExplainPropertyInteger("Lottery Window", "tuples",
							   router->lottery_window, xs);
	ExplainPropertyInteger("Reoptimization Frequency", "tuples",
						   router->reopt_frequency, xs);
	if (es->random_start != 0)
	{
		StringInfoData buf;

		/* eddy.random_start: the seed, and the build order drawn from it */
		initStringInfo(&buf);
		appendStringInfo(&buf, "seed %llu", (unsigned long long) es->random_start);
		if (!es->chain && es->schedule == EDDY_SCHEDULE_BUILD && es->nsources > 1)
		{
			appendStringInfoString(&buf, ", reading");
			for (i = 0; i < es->nsources; i++)
			{
				EddySource *src = &es->sources[es->plan_order[i]];

				if (src->method != EDDY_SOURCE_SCAN)
					continue;
				appendStringInfo(&buf, " %s", src->name ? src->name : "?");
			}
		}
		ExplainPropertyText("Random Start", buf.data, xs);
	}
	if (router->held || router->released)
	{
		StringInfoData buf;

		/* eddy.routing_hold: the relations and shares held for */
		initStringInfo(&buf);
		for (i = 0; i < es->nsources; i++)
			if (es->sources[i].hold_pct > 0)
				appendStringInfo(&buf, "%s%s %g%%", buf.len > 0 ? ", " : "",
								 es->sources[i].name ? es->sources[i].name : "?",
								 es->sources[i].hold_pct);
		ExplainPropertyText("Routing Hold", buf.data, xs);
	}
	if (!es->chain && (es->schedule != EDDY_SCHEDULE_BUILD || es->delayed))
	{
		StringInfoData buf;
		bool		listed = false;

		/* the schedule, and the sources' rates and delays if any */

		initStringInfo(&buf);
		appendStringInfoString(&buf, EddyScheduleName(es->schedule));
		for (i = 0; i < es->nsources; i++)
		{
			EddySource *src = &es->sources[i];

			if (src->method == EDDY_SOURCE_SCAN)
				EddyScheduleExplainSource(&buf, &listed,
										  src->name ? src->name : "?",
										  src->rate, src->delay_ms);
		}
		if (listed)
			appendStringInfoChar(&buf, ')');
		ExplainPropertyText("Source Schedule", buf.data, xs);
	}

	EddyStateModeExplain(es, xs);	/* mod_stems.c */

	/* VERBOSE: the planner's estimate of the join state (join_state.c) */
	if (xs->verbose && !es->chain && es->nstairs > 0)
	{
		CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
		double		est = floatVal(list_nth(cscan->custom_private, EddyPrivEstState));

		ExplainPropertyInteger("Estimated Join State", "kB", (int64) (est / 1024), xs);
	}

	ExplainOpenGroup("Operators", "Operators", false, xs);
	for (i = 0; i < es->nmodules; i++)
	{
		EddyModule *m = es->modules[i];

		if (xs->format != EXPLAIN_FORMAT_TEXT)
			ExplainOpenGroup("Operator", NULL, true, xs);
		m->methods->explain(es, m, context, useprefix, xs);
		if (xs->format != EXPLAIN_FORMAT_TEXT)
			ExplainCloseGroup("Operator", NULL, true, xs);
	}
	ExplainCloseGroup("Operators", "Operators", false, xs);
	EddyMigrationExplain(es, xs);
	/* a parallel eddy that exchanges its state (parallel.c) */
	if (es->exchange)
		ExplainPropertyText("Parallel State", "exchanged after each source but the last", xs);

	{
		/* scanned and hashed where PostgreSQL probed per row (join_graph.c) */
		StringInfoData buf;

		initStringInfo(&buf);
		for (i = 0; i < es->nsources; i++)
			if (es->sources[i].guarded)
				appendStringInfo(&buf, "%s%s", buf.len > 0 ? ", " : "",
								 es->sources[i].name ? es->sources[i].name : "?");
		if (buf.len > 0)
		{
			appendStringInfoString(&buf, " scanned: PostgreSQL's index nested loop rests on a one-row estimate the statistics clamped");
			ExplainPropertyText("One-Row Guard", buf.data, xs);
		}
	}
	if (!analyze)
		return;
	for (i = 0; i < es->nsources; i++)
	{
		if (es->sources[i].scan_dropped > 0 || es->sources[i].cut)
			dropped_in_scans = true;	/* or not read to the end */
		if (es->sources[i].deferred_at > 0)
			deferred = true;
	}
	/* what the eddy read, where that is not what its scans returned */
	if (!es->chain && (es->schedule != EDDY_SCHEDULE_BUILD || es->delayed ||
					   dropped_in_scans || deferred || es->ended_loops > 0))
	{
		StringInfoData buf;

		initStringInfo(&buf);
		for (i = 0; i < es->nsources; i++)
			if (es->sources[i].method == EDDY_SOURCE_SCAN)
				appendStringInfo(&buf, "%s%s " UINT64_FORMAT "%s", buf.len > 0 ? ", " : "",
								 es->sources[i].name ? es->sources[i].name : "?",
								 es->sources[i].nread,
								 es->sources[i].cut ? " (cut)" : "");
		ExplainPropertyText("Tuples Read", buf.data, xs);
	}
	if (deferred)
	{
		/* sources read last once they outgrew those left (schedule.c) */
		StringInfoData buf;

		initStringInfo(&buf);
		for (i = 0; i < es->nsources; i++)
			if (es->sources[i].deferred_at > 0)
				appendStringInfo(&buf, "%s%s after " UINT64_FORMAT " tuples",
								 buf.len > 0 ? ", " : "",
								 es->sources[i].name ? es->sources[i].name : "?",
								 es->sources[i].deferred_at);
		ExplainPropertyText("Sources Deferred", buf.data, xs);
	}
	if (es->ended_loops > 0)
	{
		/* the result could not grow: the rest was not read (source.c) */
		EddyModule *m = es->modules[es->ended_by - 1];
		int			rel = m->state->spec(m)->rel[es->ended_side];
		const char *name = es->sources[rel].name;
		StringInfoData buf;

		initStringInfo(&buf);
		appendStringInfo(&buf, "Hash Join %d, whose ", m->index + 1);
		if (name != NULL)
			appendStringInfo(&buf, "%s", name);
		else
			appendStringInfo(&buf, "relation %d", rel + 1);
		appendStringInfoString(&buf, " side ran out with nothing stored");
		if (es->ended_loops > 1)
			appendStringInfo(&buf, " (" UINT64_FORMAT " loops)", es->ended_loops);
		ExplainPropertyText("Ended Early", buf.data, xs);
	}
	ExplainPropertyUInteger("Tuples Routed", NULL, EddyRouterRouted(router), xs);
	ExplainPropertyUInteger("Recomputations", NULL, router->recomputations, xs);
	if (router->lookahead_choices > 0)
		ExplainPropertyUInteger("Lookahead Choices", NULL,
								router->lookahead_choices, xs);
	if (es->exchange_active)
	{
		ExplainPropertyUInteger("Rows Sent", NULL, es->rows_sent, xs);
		ExplainPropertyUInteger("Rows Replayed", NULL, es->rows_replayed, xs);
	}
	if (router->released)
		ExplainPropertyUInteger("Hold Released At", "tuples routed",
								router->released_at, xs);
	else if (router->held)
		ExplainPropertyText("Hold Released At", "never", xs);
	if (router->chain_len >= 0)
	{
		List	   *order = NIL;

		for (i = 0; i < router->chain_len; i++)
			order = lappend_int(order, es->targets[router->chain[i]].module + 1);
		ExplainPropertyText("Final Order", int_list_string(order), xs);
	}
	else
	{
		ExplainPropertyInteger("Peak Memory", "kB",
							   (int64) (es->peak_memory / 1024), xs);
		EddySpillExplain(es, xs);
	}
	if (xs->verbose)
		ExplainPropertyText("Routing History", history_string(es), xs);
	EddyExplainWorkers(es, xs);
}
