/*-------------------------------------------------------------------------
 *
 * routing.c
 *	  Routing tables and routing policies of the eddy.
 *
 * A tuple's signature is its done bitmap: the operators it has already
 * passed.  The routing table maps each signature to the operator the tuple
 * visits next, or to EDDY_ROUTE_OUTPUT once every operator is done.  The
 * per-tuple work is one array lookup (EddyRoute in eddy.h); the decisions
 * are made in batches, as in the TelegraphCQ implementation (Deshpande,
 * SIGMOD Record 2004, section 2.1.1): every eddy.reopt_frequency tuples
 * EddyRouterReoptimize folds the operators' counters into decayed
 * statistics, scores the operators, and starts a new epoch.  Entries of
 * older epochs are recomputed on first use (EddyRouterChoose), so a
 * recomputation costs O(operators), not O(signatures).
 *
 * An operator is eligible for a signature if it is not done and all its
 * prerequisites are (plan.c: a predicate that may raise an error waits for
 * the predicates PostgreSQL evaluated before it).  Prerequisites only point
 * to earlier operators in PostgreSQL's order, so the lowest-numbered
 * operator not yet done is always eligible.
 *
 * Policies:
 *	 fixed	 the lowest-numbered eligible operator: PostgreSQL's order, never
 *			 recomputed (the non-adaptive baseline).
 *	 random	 uniform among the eligible operators, drawn anew each epoch.
 *	 rank	 rank ordering for independent filters: the eligible operator
 *			 with the highest (1 - selectivity) / cost, from observed
 *			 selectivity and sampled cost, exponentially decayed with a
 *			 half-life of EDDY_STATS_HALFLIFE routed tuples so that the
 *			 order follows the data as it changes.  Until an operator has
 *			 been observed the planner's estimates stand in.
 *	 lottery lottery scheduling (Avnur & Hellerstein, SIGMOD 2000, 4.2): an
 *			 operator gets a ticket when it takes a tuple and gives one back
 *			 when it returns one, so its tickets count the tuples it
 *			 eliminated.  The winner is drawn with probability proportional
 *			 to tickets.  A threaded eddy also weighs speed through
 *			 back-pressure (a slow operator's queue is full); this eddy is
 *			 single-threaded, so a ticket is weighted by the inverse of the
 *			 operator's measured cost instead.  With eddy.lottery_window = W
 *			 (the windowed lottery of 000, 6.2.1), tickets older than the
 *			 previous window of W routed tuples are forgotten.  Every
 *			 eligible operator holds one ticket at least, so none starves.
 *
 * The history of first choices (the route of a fresh tuple) is kept,
 * run-length encoded, for EXPLAIN ANALYZE VERBOSE.
 *
 *-------------------------------------------------------------------------
 */
#include "eddy.h"

#include <math.h>

#include "utils/memutils.h"

/* Half-life, in routed tuples, of the statistics behind the rank policy */
#define EDDY_STATS_HALFLIFE		1000.0
/* Weight, in tuples, of the planner's selectivity estimate */
#define EDDY_PRIOR_TUPLES		2.0

void
EddyRouterInit(EddyRouter *router, EddyOperator *ops, int nops,
			   EddyRoutingPolicy policy, int reopt_frequency,
			   int lottery_window, uint64 seed)
{
	Size		nsig = (Size) 1 << nops;

	Assert(nops >= 0 && nops <= EDDY_MAX_SELECTIONS);
	memset(router, 0, sizeof(EddyRouter));
	router->nops = nops;
	router->ops = ops;
	router->policy = policy;
	router->reopt_frequency = reopt_frequency;
	router->lottery_window = lottery_window;
	router->route = palloc0(nsig * sizeof(uint8));
	router->route_epoch = palloc0(nsig * sizeof(uint32));
	router->epoch = 1;			/* every entry starts stale */
	router->until_reopt = reopt_frequency;
	router->epoch_first = -1;
	router->history = palloc(EDDY_MAX_HISTORY_RUNS * sizeof(EddyHistoryRun));
	pg_prng_seed(&router->rng, seed);
	EddyRouterReoptimize(router);
	router->recomputations = 0; /* the initial scoring is not a recomputation */
}

/* Mean cost of an operator in ns: measured if ever timed, else the prior. */
static double
eddy_op_cost(EddyOperator *op)
{
	double		cost;

	if (op->w_samples > 1e-9)
		cost = op->w_ns / op->w_samples;
	else if (op->cost_samples > 0)
		cost = op->cost_ns / op->cost_samples;
	else
		cost = op->est_cost_ns;
	return Max(cost, 1.0);
}

static double
eddy_op_selectivity(EddyOperator *op)
{
	return (op->w_out + EDDY_PRIOR_TUPLES * op->est_sel) /
		(op->w_in + EDDY_PRIOR_TUPLES);
}

/* Fold the counters gathered since the last call into decayed statistics. */
static void
eddy_update_statistics(EddyRouter *router)
{
	double		decay;
	int			i;

	decay = exp2(-(double) (router->routed - router->stats_routed) /
				 EDDY_STATS_HALFLIFE);
	router->stats_routed = router->routed;
	for (i = 0; i < router->nops; i++)
	{
		EddyOperator *op = &router->ops[i];

		op->w_in = op->w_in * decay + (double) (op->tuples_in - op->seen_in);
		op->w_out = op->w_out * decay +
			(double) ((op->tuples_in - op->tuples_dropped) - op->seen_out);
		op->w_samples = op->w_samples * decay +
			(double) (op->cost_samples - op->seen_samples);
		op->w_ns = op->w_ns * decay + (op->cost_ns - op->seen_ns);
		op->seen_in = op->tuples_in;
		op->seen_out = op->tuples_in - op->tuples_dropped;
		op->seen_samples = op->cost_samples;
		op->seen_ns = op->cost_ns;
	}
}

static void
eddy_score_operators(EddyRouter *router)
{
	bool		new_window = false;
	int			i;

	if (router->policy == EDDY_POLICY_LOTTERY && router->lottery_window > 0 &&
		router->routed - router->window_start >= (uint64) router->lottery_window)
	{
		new_window = true;
		router->window_start = router->routed;
	}

	for (i = 0; i < router->nops; i++)
	{
		EddyOperator *op = &router->ops[i];

		switch (router->policy)
		{
			case EDDY_POLICY_RANK:
				op->score = (1.0 - eddy_op_selectivity(op)) / eddy_op_cost(op);
				break;
			case EDDY_POLICY_LOTTERY:
				{
					int64		held = (int64) op->tuples_dropped;

					if (new_window)
					{
						/* forget what was earned before the previous window */
						op->ticket_base = op->ticket_next_base;
						op->ticket_next_base = held;
					}
					op->score = (double) (1 + held - op->ticket_base) /
						eddy_op_cost(op);
				}
				break;
			case EDDY_POLICY_FIXED:
			case EDDY_POLICY_RANDOM:
				op->score = 0.0;
				break;
		}
	}
}

/* Append the epoch that just ended to the run-length encoded history. */
static void
EddyRouterCloseEpoch(EddyRouter *router)
{
	uint64		tuples = router->routed - router->epoch_start;

	if (router->epoch_first >= 0 && tuples > 0)
	{
		router->ops[router->epoch_first].tuples_first += tuples;
		if (router->nhistory > 0 &&
			router->history[router->nhistory - 1].op == router->epoch_first)
			router->history[router->nhistory - 1].tuples += tuples;
		else if (router->nhistory < EDDY_MAX_HISTORY_RUNS)
		{
			router->history[router->nhistory].op = router->epoch_first;
			router->history[router->nhistory].tuples = tuples;
			router->nhistory++;
		}
		else
			router->history_truncated = true;
	}
	router->epoch_start = router->routed;
	router->epoch_first = -1;
}

/*
 * The chain of choices a tuple makes in this epoch if it passes every
 * operator: order[k] = route[{order[0], ..., order[k-1]}].  With selection
 * operators only, every tuple of the epoch follows a prefix of this chain
 * (each signature's entry is chosen once per epoch, even by the random and
 * lottery policies), so the executor walks the array instead of the table.
 */
static void
eddy_compute_order(EddyRouter *router)
{
	uint32		done = 0;
	int			op;

	router->order_len = 0;
	while ((op = EddyRoute(router, done)) != EDDY_ROUTE_OUTPUT)
	{
		router->order[router->order_len++] = (uint8) op;
		done |= 1u << op;
	}
	router->epoch_first = router->order_len > 0 ? router->order[0] : -1;
}

/*
 * Recompute the routing decisions: called every reopt_frequency tuples.
 * The fixed policy never changes its mind, so it only re-arms the counter.
 */
void
EddyRouterReoptimize(EddyRouter *router)
{
	router->routed = EddyRouterRouted(router);
	router->until_reopt = router->reopt_frequency;
	if (router->policy == EDDY_POLICY_FIXED && router->epoch_first >= 0)
		return;

	EddyRouterCloseEpoch(router);
	eddy_update_statistics(router);
	eddy_score_operators(router);
	router->epoch++;
	if (router->epoch == 0)		/* wrapped: 0 would match fresh entries */
	{
		memset(router->route_epoch, 0,
			   ((Size) 1 << router->nops) * sizeof(uint32));
		router->epoch = 1;
	}
	router->recomputations++;
	eddy_compute_order(router);
}

/*
 * Fill the routing table entry of signature done for the current epoch.
 */
int
EddyRouterChoose(EddyRouter *router, uint32 done)
{
	uint32		eligible = 0;
	int			neligible = 0;
	int			choice = EDDY_ROUTE_OUTPUT;
	int			i;

	for (i = 0; i < router->nops; i++)
	{
		EddyOperator *op = &router->ops[i];

		if ((done & (1u << i)) == 0 && (op->prereq & ~done) == 0)
		{
			eligible |= 1u << i;
			neligible++;
		}
	}
	Assert(neligible > 0 || done == ((1u << router->nops) - 1));

	if (neligible == 1)
	{
		for (i = 0; i < router->nops; i++)
			if (eligible & (1u << i))
				choice = i;
	}
	else if (neligible > 1)
	{
		switch (router->policy)
		{
			case EDDY_POLICY_FIXED:
				for (i = router->nops - 1; i >= 0; i--)
					if (eligible & (1u << i))
						choice = i;
				break;
			case EDDY_POLICY_RANDOM:
				{
					int			k = (int) pg_prng_uint64_range(&router->rng, 0,
															   neligible - 1);

					for (i = 0; i < router->nops; i++)
						if ((eligible & (1u << i)) && k-- == 0)
						{
							choice = i;
							break;
						}
				}
				break;
			case EDDY_POLICY_RANK:
				{
					double		best = -1.0;

					/* ties go to the earlier operator in PostgreSQL's order */
					for (i = 0; i < router->nops; i++)
						if ((eligible & (1u << i)) && router->ops[i].score > best)
						{
							best = router->ops[i].score;
							choice = i;
						}
				}
				break;
			case EDDY_POLICY_LOTTERY:
				{
					double		total = 0.0;
					double		draw;

					for (i = 0; i < router->nops; i++)
						if (eligible & (1u << i))
							total += router->ops[i].score;
					draw = pg_prng_double(&router->rng) * total;
					for (i = 0; i < router->nops; i++)
						if (eligible & (1u << i))
						{
							choice = i;
							draw -= router->ops[i].score;
							if (draw < 0.0)
								break;
						}
				}
				break;
		}
	}

	router->route[done] = (uint8) choice;
	router->route_epoch[done] = router->epoch;
	return choice;
}
