/*-------------------------------------------------------------------------
 *
 * routing.c
 *	  The router of every eddy: routing tables and routing policies.
 *
 * A tuple's signature is (spans, done): the sources it holds and the
 * modules it has visited.  The router's targets are the modules in each
 * direction they can take a tuple (a selection: one; a symmetric hash
 * join: two, one per side; an index join: one), each with the conditions
 * under which it may take a tuple (routing.h) and its statistics.  The
 * routing table maps each signature to the target it visits next, or to
 * EDDY_ROUTE_OUTPUT once the tuple spans every source and has done every
 * module.  The per-hop work is one table lookup (EddyRoute); the decisions
 * are made in batches, as in the TelegraphCQ implementation (Deshpande,
 * SIGMOD Record 2004, section 2.1.1): every eddy.reopt_frequency tuples
 * routed, EddyRouterReoptimize folds the targets' counters into decayed
 * statistics, scores the targets, and starts a new epoch.  Entries of
 * older epochs are recomputed on first use, so a recomputation costs
 * O(targets), not O(signatures).
 *
 * What is counted.  A tuple is routed once when it enters the eddy's
 * routing: read from a source, or made by a join (a match).  That is what
 * eddy.reopt_frequency counts and EXPLAIN ANALYZE shows as "Tuples
 * Routed", in every eddy.  Per target: tuples in (routed to it), out
 * (passed on by a selection; results of a join), and first (source tuples
 * for which it was the first choice).
 *
 * Policies, written once for every kind of module:
 *	 fixed	 the first eligible target in PostgreSQL's order (modules in
 *			 plan order, a join's side 0 first), never recomputed: the
 *			 non-adaptive baseline.
 *	 random	 uniform among the eligible targets, drawn anew each epoch.
 *	 rank	 rank ordering for independent filters: the eligible target
 *			 with the highest (1 - ratio) / cost, ratio being the observed
 *			 selectivity of a selection or fan-out of a join (an index
 *			 join's: of the matches its fetch chain passes, the join and
 *			 the chain being one filter; its cost: the probe and its
 *			 fetches, mod_indexjoin.c), from decayed
 *			 observations (half-life EDDY_STATS_HALFLIFE routed tuples, so
 *			 the order follows the data as it changes), the planner's
 *			 estimate standing in with the weight of EDDY_PRIOR_TUPLES
 *			 tuples.  A join's observed fan-out is projected to its far
 *			 end read whole (rank_ratio): while that source is still being
 *			 read (eddy.source_schedule = proportional interleaves them),
 *			 the matches of a probe are those of the part read so far, and
 *			 a tuple stored in the join's state meets the rest as it
 *			 comes, so what it will make is the fan-out against the whole
 *			 relation, though no further than the planner's fan-out (or
 *			 the observed one if higher): rows stored in the order of
 *			 their join keys and read at the same pace find their matches
 *			 whatever share is read.  Unprojected, a join whose far end is
 *			 a tenth read scores as a filter passing a tenth of what it
 *			 will, and wins against a truly selective join when its visit
 *			 is a little cheaper (000 Figure 8 at a tenth of its size: S's
 *			 tuples went to S-T first, fan-out 1, in 23-30% of runs'
 *			 middle thirds).
 *			 Under the build schedule a join's far end is read whole or
 *			 not at all when it is probed.  A join whose far state is
 *			 empty while its far side is being read can only store the
 *			 tuple (a wait): its ratio is 1, not the zeros it observed,
 *			 and its score just above 0 (rank_ratio), so filters come
 *			 before storing, and joins that pass or multiply after it.
 *			 A join whose planner's fan-out may be a default is tried
 *			 for its first tuples (rank_ratio, EDDY_EXPLORE_TUPLES):
 *			 into a complete state, with a prior from the state; into
 *			 one still filling, where the planner says it multiplies.
 *			 The cumulative policy's own estimates take rows read so far
 *			 (the STAIRs paper's |S_tau|) and its selection placement
 *			 keeps the unprojected ratios.
 *			 Lookahead (eddy.rank_lookahead, on by default).  Ranks
 *			 order independent filters; the modules of a join eddy are
 *			 not independent: a selection over two relations, or a join
 *			 that filters, may be reachable only through joins that
 *			 filter nothing (fan-out 1, rank 0).  Scored alone, those
 *			 joins lose to any eligible target that filters at all, and
 *			 the tuple pays that target's cost first however much the
 *			 filter behind them would have dropped (the misestimation
 *			 workload's m16: every sale probed the returns index, fan-out
 *			 0.15, before the three hash joins, fan-out 1 each, that lead
 *			 to a selection passing 1.5%; PostgreSQL's plan hashes on the
 *			 composite key and probes the index with 1.5% of the sales).
 *			 So for a signature's entry, each filter f not yet eligible
 *			 (a target of ratio below 1, not done, whose allowed sources
 *			 include the tuple's) is given a path: the joins towards the
 *			 sources f reads that the tuple lacks, each step the eligible
 *			 join of the best score among those whose far side holds one,
 *			 then f.  The path is scored as one filter, the compound rank
 *			 of precedence-constrained sequencing (Monma & Sidney; IKKBZ):
 *			 (1 - r1 r2 ... rk) / (c1 + r1 c2 + ... + r1 ... rk-1 ck).
 *			 The path's first join competes with that score when it beats
 *			 its own; the next signature's entry scores the rest of the
 *			 path again, the joins already paid no longer in it.  Ratios
 *			 and costs are the rank scores' (rank_ratio, stats_cost); a
 *			 join's result is taken to span its far end only.  Entries
 *			 are filled once per epoch per signature; a path costs
 *			 O(targets x sources) to build, and only a filter whose own
 *			 score beats every eligible target's gets one (a path's
 *			 compound rank is a mediant of its prefix's and its filter's
 *			 own: rank_lookahead).  A one-source eddy (every
 *			 module over one relation) has nothing to look ahead to.
 *	 lottery lottery scheduling (Avnur & Hellerstein, SIGMOD 2000, 4.2): a
 *			 target gets a ticket when it takes a tuple and gives one back
 *			 for each it passes on, so its tickets count the tuples it
 *			 eliminated.  The winner is drawn with probability proportional
 *			 to tickets.  A threaded eddy also weighs speed through
 *			 back-pressure (a slow operator's queue is full); this eddy is
 *			 single-threaded, so a ticket is weighted by the inverse of the
 *			 target's measured cost instead.  With eddy.lottery_window = W
 *			 (the windowed lottery of 000, 6.2.1), tickets older than the
 *			 previous window of W routed tuples are forgotten, and so are
 *			 the costs timed before it (window_cost).  Every eligible
 *			 target holds one ticket at least, so none starves.
 *	 cumulative	 the STAIRs paper's policy (Deshpande & Hellerstein, VLDB
 *			 2004, 4.1).  Selections are placed as under rank (when rank's
 *			 first choice for a signature is a selection, so is this
 *			 policy's); when it is a join, the tuple goes instead to the
 *			 eligible join of the lowest cumulative estimate: the tuples
 *			 that joining it with everything reachable through that join
 *			 would make.  For an r tuple and the join r-s of the path
 *			 r - s - t that is |r JOIN s_tau JOIN t_tau|, s_tau and t_tau
 *			 being what has been read of s and t so far.  Rank ordering of
 *			 joins by their local fan-out minimises the intermediate tuples
 *			 of SteMs, whose state holds base tuples only; with STAIRs a
 *			 tuple's results are stored beyond the join it visits, and
 *			 locally optimal choices accumulate state (the paper's
 *			 argument).  The estimate assumes a tuple joins everything
 *			 beyond its first join before anything else; an eddy may
 *			 interleave the two sides afterwards, so the policy does not
 *			 minimise intermediate tuples (docs/user-guide.md, "cumulative";
 *			 tests/test_cumulative.py).
 *
 *			 The estimate of join target x (a join in one direction) is
 *			 the product, over x's join and every join beyond it (the
 *			 spanning tree's edges on x's far side, each entered from x's
 *			 side), of sel(j) * rows(far end of j), times the selectivity
 *			 of every selection over sources beyond x and of every
 *			 selection still to do that reads sources on both sides and
 *			 that the tuple and the far side cover.  sel(j) is the join's
 *			 selectivity per pair, the paper's 1 / (join attribute domain
 *			 size): observed as matches over pairs examined (a probe
 *			 examines every entry of the STAIR it probes; an index join
 *			 probe the planner's rows of its relation), pooled over the
 *			 join's directions and decayed like rank's statistics, the
 *			 planner's selectivity standing in with the weight of
 *			 EDDY_PRIOR_TUPLES probes per direction.  Per pair rather than
 *			 the fan-out per probe, because a STAIR may hold intermediate
 *			 tuples (s's results with t stored in r-s's STAIR on s): their
 *			 fan-out already contains the joins beyond, their selectivity
 *			 per pair does not.  rows(s) is the rows read of s so far (an
 *			 index-joined relation's tuples: all of it can be probed,
 *			 and its selections are multiplied in as selections beyond
 *			 x), so a join with a relation not yet read estimates
 *			 nothing, as joining s_tau = {} makes nothing.  Selections'
 *			 selectivities are observed as rank's, but the planner's
 *			 estimate weighs only as much as observations made at the
 *			 start of the scan (cumulative_ratio: decayed with them).
 *			 Everything but the selections over both sides is computed at
 *			 each recomputation, per target; those are multiplied in when
 *			 a signature's routing entry is filled, once per epoch.  Equal
 *			 estimates (typically 0, when the far sides have not been read
 *			 yet: every join of the first source read) are decided by the
 *			 same estimate over the planner's rows, then by PostgreSQL's
 *			 order.
 *
 * Costs.  A target's cost is the mean time of its timed visits (decayed
 * like the counts; under the windowed lottery, of the current or the
 * previous window).  The decayed mean is kept from a lone outlier
 * (fold_costs): a timed visit during which the process was preempted takes
 * milliseconds where the visit takes a microsecond, and weighed in the mean
 * as hundreds of true ones for thousands of tuples, decaying by half every
 * EDDY_STATS_HALFLIFE (a rank decision of 000 Figure 8 went wrong on one
 * such sample in CI); a target's first timed visits are often slow too
 * (the first call of a function, an index's first lookup).  So each
 * recomputation interval's timed visits are folded in one interval late
 * when their mean is over EDDY_COST_OUTLIER times the decayed mean, or
 * when they are the first: clipped to that factor of the larger of the
 * next interval's mean and the decayed mean, unless the next interval is
 * as slow (a cost that changed, which is then followed one interval late).
 * The windowed lottery's window costs are raw: its windows are the
 * policy's way of following changes, and a clip would delay them.
 *
 * Sampling.  One routed tuple in EDDY_COST_SAMPLE_INTERVAL is timed
 * at every hop (exec.c), and each target also times one of every
 * sample_every of its own visits, that hop alone: every
 * EDDY_TARGET_SAMPLE_PERIOD routed tuples (at a recomputation) sample_every
 * is set so that the target's visits of the last period would have had
 * EDDY_TARGET_SAMPLES timed ones (at most one in EDDY_COST_SAMPLE_INTERVAL,
 * at least every visit; set_sampling).  A target the routing rarely
 * chooses any more, or reaches only with the few tuples that pass the
 * others, is then still measured a few times a period rather than once
 * per EDDY_COST_SAMPLE_INTERVAL of its own visits; without it, the cost of
 * a join abandoned while it was slow stayed stale long after it had become
 * cheap again (000 Figure 11).  Every k-th visit of the target's own, not
 * its first after a recomputation: a recomputation falls more often while
 * a join's results are routed than while source tuples are, and a sample
 * tied to it would time those tuples' visits out of proportion (measured:
 * the lottery's optimal share in 000 Figure 9 fell from 91% to 60%).
 *
 * eddy.routing_hold (for the STAIRs paper's Figure 7(ii)): while the
 * executor holds the router (exec.c, schedule.c), a recomputation folds
 * the counters into the statistics but starts no epoch, so the decisions
 * stay; state migration waits too (migrate.c).  The decisions held are
 * those made once the statistics rest on observations, EDDY_HOLD_WARMUP
 * tuples routed (until then recomputations change them as usual), not the
 * first ones, which rest on the planner's estimates: the paper's eddy has
 * no optimizer, and the routing mistake whose repair Figure 7(ii) delays
 * is made by its first observations (lineitem's predicate passing
 * nothing), where the planner's estimates would route right.  The release
 * is recorded (tuples routed) for EXPLAIN ANALYZE.
 *
 * eddy.random_start (the STAIRs paper's "the initial plan was chosen
 * randomly", 5.3): a seed, 0 for off.  Until the first recomputation
 * (eddy.reopt_frequency tuples routed), every signature goes to its
 * eligible target of the highest key EddyRandomStartHash(seed, target): a
 * random priority order of the targets, one static plan drawn from the
 * seed, in place of the one the planner's estimates make.  Then the policy
 * decides from what it has observed, as it would have from the planner's
 * start: the random plan is the initial plan, and is kept as long as the
 * planner's would be.  (It was kept for 1,000 tuples routed before, one
 * half-life of the statistics; on the misestimation workload's smallest
 * queries that was all of them: m13 routes 1,591 tuples, and its random
 * plans sent products through the index into sales before the join that
 * leaves none, 2-4x its best start.)  Under the fixed policy the random
 * plan is kept to the end: a static random plan to compare with.  The
 * executor also reads the sources of the build schedule in an order drawn
 * from the seed (exec.c), which is the state layout a random plan would
 * have built, and which lasts: the sources read early are stored.
 *
 * The chain.  When every module is a filter over one source, every tuple
 * of an epoch follows a prefix of one chain of targets, which the executor
 * walks instead of the table; "first" is then counted per epoch.
 *
 * The history of first choices is kept run-length encoded for EXPLAIN
 * ANALYZE VERBOSE, one lane per source: an eddy interleaves its sources
 * (eddy.source_schedule = proportional), and one history over all of them
 * would be a run per tuple or two, where each source's first choice stays
 * the same for thousands.  A lane's last run is open: a tuple of the
 * source whose first choice is that run's adds one to it
 * (EddyRouterNoteFirst), and its target's "first" counter gets the run's
 * tuples when the run closes, so the hot path touches one counter in the
 * router and no target's statistics.  A lane keeps at most
 * EDDY_MAX_HISTORY_RUNS runs; its array grows as runs close.
 *
 *-------------------------------------------------------------------------
 */
#include "routing.h"

#include <math.h>

#include "port/pg_bitutils.h"
#include "utils/memutils.h"

/* Half-life, in routed tuples, of the statistics behind the rank policy */
#define EDDY_STATS_HALFLIFE		1000.0
/* Weight, in tuples, of the planner's estimates */
#define EDDY_PRIOR_TUPLES		2.0
/* A wait's score, over 1 + the planner's fan-out (rank_ratio) */
#define EDDY_WAIT_SCORE			1e-9
/* Exploring a join whose planner's fan-out may be a default (rank_ratio) */
#define EDDY_EXPLORE_RATIO		0.5
#define EDDY_EXPLORE_FANOUT		10.0
#define EDDY_EXPLORE_TUPLES		64
/* eddy.routing_hold: tuples routed before the decisions are held */
#define EDDY_HOLD_WARMUP		((uint64) EDDY_STATS_HALFLIFE)
/* An interval's mean cost over this many times its reference is an outlier */
#define EDDY_COST_OUTLIER		8.0
/* Timed visits per target per period, beside the tuples timed throughout */
#define EDDY_TARGET_SAMPLES		2
#define EDDY_TARGET_SAMPLE_PERIOD	100 /* routed tuples */
/* Initial size of a hashed routing table */
#define EDDY_ROUTE_ENTRIES		1024

void
EddyRouterInit(EddyRouter *router, EddyRouteTarget *targets, int ntargets,
			   int nmodules, uint32 all_sources, bool chain,
			   EddyRoutingPolicy policy, int reopt_frequency,
			   int lottery_window, uint64 seed, uint64 random_start,
			   int nsources, EddySourceRowsFn source_rows,
			   void *source_rows_arg)
{
	int			i;

	memset(router, 0, sizeof(EddyRouter));
	router->prior_weight = EDDY_PRIOR_TUPLES;
	router->ntargets = ntargets;
	router->targets = targets;
	router->nmodules = nmodules;
	router->all_sources = all_sources;
	router->all_done = (nmodules >= 64) ? ~UINT64CONST(0) :
		((UINT64CONST(1) << nmodules) - 1);
	router->policy = policy;
	router->reopt_frequency = reopt_frequency;
	router->lottery_window = lottery_window;
	router->direct = (all_sources == 1 && nmodules <= EDDY_MAX_SELECTIONS);
	if (router->direct)
	{
		Size		nsig = (Size) 1 << nmodules;

		router->route = palloc0(nsig * sizeof(int));
		router->route_epoch = palloc0(nsig * sizeof(uint32));
	}
	else
	{
		router->nentries = EDDY_ROUTE_ENTRIES;
		router->entries = palloc0(sizeof(EddyRouteEntry) * router->nentries);
	}
	Assert(!chain || router->direct);
	router->chain_len = chain ? 0 : -1;
	router->epoch = 0;			/* the first computation makes it 1 */
	router->until_reopt = reopt_frequency;
	router->epoch_first = -1;
	router->nlanes = Max(nsources, 1);
	router->lanes = palloc0(sizeof(EddyHistoryLane) * router->nlanes);
	for (i = 0; i < router->nlanes; i++)
		router->lanes[i].open_target = -1;
	router->history_cxt = CurrentMemoryContext;
	pg_prng_seed(&router->rng, seed);
	router->nsources = nsources;
	router->source_rows = source_rows;
	router->source_rows_arg = source_rows_arg;
	router->random_start = random_start;
	router->random_until = random_start != 0 ? (uint64) Max(reopt_frequency, 1) : 0;
	if (policy == EDDY_POLICY_CUMULATIVE)
	{
		router->rows = palloc0(sizeof(double) * 2 * Max(nsources, 1));
		router->module_sel = palloc0(sizeof(double) * Max(nmodules, 1));
		router->module_target = palloc(sizeof(int) * Max(nmodules, 1));
		for (i = 0; i < nmodules; i++)
			router->module_target[i] = -1;
		for (i = ntargets - 1; i >= 0; i--)
			router->module_target[targets[i].module] = i;
	}
	EddyRouterReoptimize(router);
	router->recomputations = 0; /* the initial scoring is not a recomputation */
}

/*
 * Mean cost of a target in ns: measured if ever timed, else the prior (also
 * while its first timed interval waits to be judged: fold_costs).
 */
static double
stats_cost(EddyModuleStats *st)
{
	double		cost;

	if (st->w_samples > 1e-9)
		cost = st->w_ns / st->w_samples;
	else if (st->samples > 0 && st->held_samples == 0)
		cost = st->cost_ns / st->samples;
	else
		cost = st->prior_cost_ns;
	return Max(cost, 1.0);
}

/*
 * Fold one recomputation interval's timed visits of a target (ns, samples)
 * into its decayed cost (w_ns, w_samples), an outlier clipped first (the
 * header's Costs).  An interval whose mean is over EDDY_COST_OUTLIER times
 * the decayed mean, or the first one timed, is held until the next timed
 * interval: if its mean is over EDDY_COST_OUTLIER times both the next
 * one's and the decayed mean, it is clipped to that, else it counts as
 * measured; the next one counts as measured either way (two high intervals
 * in a row are a cost that changed).  Time without samples (an index
 * join's fetches after its timed probe's interval) joins the interval
 * held, if any.
 */
static void
fold_costs(EddyModuleStats *st, double ns, uint64 samples)
{
	double		mean;

	if (samples == 0)
	{
		if (st->held_samples > 0)
			st->held_ns += ns;
		else
			st->w_ns += ns;
		return;
	}
	mean = ns / (double) samples;
	if (st->held_samples > 0)
	{
		double		ref = mean;
		double		cap;

		if (st->w_samples > 1e-9)
			ref = Max(ref, st->w_ns / st->w_samples);
		cap = EDDY_COST_OUTLIER * ref * (double) st->held_samples;
		if (st->held_ns > cap)
		{
			st->held_ns = cap;
			st->outliers++;
		}
		st->w_ns += st->held_ns;
		st->w_samples += (double) st->held_samples;
		st->held_ns = 0.0;
		st->held_samples = 0;
	}
	else if (st->w_samples <= 1e-9 ||
			 mean > EDDY_COST_OUTLIER * st->w_ns / st->w_samples)
	{
		st->held_ns = ns;
		st->held_samples = samples;
		return;
	}
	st->w_ns += ns;
	st->w_samples += (double) samples;
}

/*
 * Mean cost of a target under the windowed lottery: of its visits timed
 * since the current window began, else since the previous one began, else
 * stats_cost.  A cost that changes while the query runs (000 6.2.1 and
 * Figure 11) is then followed within a window or so rather than a
 * half-life: one slow visit weighs as much as a hundred fast ones in a
 * mean, so a mean that reaches back two windows lags the change by both.
 */
static double
window_cost(EddyModuleStats *st)
{
	uint64		samples = st->samples - st->window_next_samples;

	if (samples > 0)
		return Max((st->cost_ns - st->window_next_ns) / (double) samples, 1.0);
	samples = st->samples - st->window_samples;
	if (samples > 0)
		return Max((st->cost_ns - st->window_ns) / (double) samples, 1.0);
	return stats_cost(st);
}

/*
 * Observed ratio, the planner's standing in with the weight of prior tuples.
 * An index join's results that its fetch chain dropped go no further than
 * the join: for the routing the join and the chain's selections are one
 * filter, and its ratio is of the results that survive the chain (its
 * prior likewise, mod_indexjoin.c).  Without that credit, a join whose
 * chain drops most of its matches (TPC-H Q8: orders' primary key behind
 * the o_orderdate range, 62% dropped) scores as a fan-out of 1 and ties
 * with a join that drops nothing, which may then go first.
 */
static double
ratio_with_prior(EddyModuleStats *st, double prior)
{
	return (st->w_out - st->w_dropped + prior * st->prior_ratio) /
		(st->w_in + prior);
}

static double
stats_ratio(EddyModuleStats *st)
{
	return ratio_with_prior(st, EDDY_PRIOR_TUPLES);
}

/*
 * The rank policy's ratio of target t: stats_ratio, but a join's observed
 * fan-out projected to its far end read whole (header comment, rank):
 * scaled by the rows that source is expected to give over those it has
 * given, while it has given some and is not exhausted, and at most to the
 * planner's fan-out (or the observed one, if higher).  The scaling assumes
 * the far end's rows arrive in no order related to the probes'; relations
 * stored in the order of their join keys and read at the same pace find
 * their matches whatever share is read (a star on a common key: fan-out 1
 * observed with a twentieth read), and the cap keeps the projection from
 * making such a join look twenty times worse than it is.  The planner's
 * prior is of the whole relation already and is not scaled.
 *
 * A join whose far state holds nothing while its far side is still being
 * read (router->waits) can only store a tuple routed to it (a wait):
 * nothing comes out now, and the zeros it has observed say nothing of its
 * fan-out.  Scored by them it was the best filter there is and took every
 * tuple first, so a tuple was stored before the joins that could have
 * dropped it (002 Figure 8, setup 18: a path t1-t2-t3-t4 read in that
 * order; each t3 row waited for t4 in t3-t4's state instead of probing
 * t2's, complete, first, and t4 made 469,000 results there instead of
 * 47,000: 3.5x PostgreSQL's plan).  A wait neither drops the tuple nor
 * multiplies it now: score_targets gives it a ratio of 1 and a score just
 * above 0, lower the larger the planner's fan-out (which breaks ties
 * between waits).  So a join that filters (fan-out below 1, complete far
 * end) or a selection runs before it, and the waiting join stores what
 * they pass; a join that passes every tuple or multiplies runs after it,
 * on the stored tuple's results when the far end comes, which the joins
 * beyond may filter first.  A join of fan-out 1 (an index join to a
 * dimension) would only widen what is stored: with the wait's score at 0
 * or below, the misestimation workload's m35 from a random start stored
 * 75,000 sales with their customers, 58 MB, and spilled (0.96 s, against
 * 0.42 s storing the sales alone).  (The planner's fan-out plus one for
 * every wait, tried instead, sent tuples through multiplying joins before
 * storing them: setups 40 and 99 went from 0.92x and 0.75x to 2.69x and
 * 1.52x.)  The lookahead neither paths through a wait nor ends at one.
 *
 * A join whose far side was read to its end, whose prior the state set
 * (source.c, data_priors) at most EDDY_EXPLORE_FANOUT, is scored as
 * EDDY_EXPLORE_RATIO until it has taken EDDY_EXPLORE_TUPLES tuples: a
 * planner default (1/200 per pair on expressions) no longer keeps it from
 * being tried, and what it costs is bounded.  So is a join whose far end
 * is partly read (it has given rows and is not exhausted: the projection
 * above has something to scale) and whose planner's fan-out multiplies,
 * at most EDDY_EXPLORE_FANOUT: under the proportional schedule every
 * state fills while it is probed, and such a join was never tried while a
 * wait scored just above 0 (002 Figure 8, setup 31: a t1-t2 join of
 * fan-out 0.33 that the planner put at 5; 22,000 of t1's 50,000 rows
 * waited for t3, of fan-out 1.8, first).  Not one the planner puts at 1
 * or less: the ordinary scores already weigh it against a wait and a
 * filter (the Eddies paper's Figure 13: S's tuples wait for the delayed R
 * in R-S, of prior 0.2, rather than probe S-T, of fan-out 0.9, first),
 * and where its fan-out ties another's (a star on unique keys read at one
 * pace: both 0.5 observed) a join that took no tuples would stay explored
 * and the decision flip at each recomputation.
 */
static double
rank_ratio(EddyRouter *router, EddyRouteTarget *t)
{
	EddyModuleStats *st = t->stats;
	double		observed = st->w_out - st->w_dropped;
	bool		explore = st->in < EDDY_EXPLORE_TUPLES &&
		st->prior_ratio <= EDDY_EXPLORE_FANOUT;
	bool		measured = observed > 0 && st->w_in > 0;

	if (explore && st->data_prior)
		return Min(st->prior_ratio, EDDY_EXPLORE_RATIO);	/* (above) */
	explore = explore && st->prior_ratio > 1.0; /* a far end partly read */
	if (t->far != 0 && router->source_rows != NULL && (explore || measured))
	{
		double		read = router->source_rows(router->source_rows_arg,
											   t->far_rel, EDDY_ROWS_READ);
		double		expected = router->source_rows(router->source_rows_arg,
												   t->far_rel,
												   EDDY_ROWS_EXPECTED);

		if (read > 0 && read < expected)
		{
			double		ratio;
			double		projected;

			if (explore)
				return EDDY_EXPLORE_RATIO;	/* (above) */
			ratio = observed / st->w_in;
			projected = Min(ratio * (expected / read),
							Max(ratio, st->prior_ratio));
			return (projected * st->w_in + EDDY_PRIOR_TUPLES * st->prior_ratio) /
				(st->w_in + EDDY_PRIOR_TUPLES);
		}
	}
	return stats_ratio(st);
}

/*
 * A selection's selectivity as the cumulative policy sees it: the planner's
 * estimate counts as EDDY_PRIOR_TUPLES tuples observed at the start of the
 * scan, decayed like every observation (router->prior_weight), where
 * stats_ratio gives it that weight for ever.  The two differ for a
 * selection that has passed nothing for a while: with half-life
 * EDDY_STATS_HALFLIFE, the decayed observations weigh about 1,400 tuples
 * at most, so a fixed prior keeps its selectivity near 2 / 1,400 of the
 * planner's, where the observations say 0.  The cumulative estimates
 * multiply selectivities along a path, and that floor decides between two
 * joins that both look very selective (the STAIRs paper's Figure 7: the
 * lineitem predicate passes nothing until l_shipdate reaches 1996, the
 * customer predicates pass 0.36%; with the floor the two joins of orders
 * tie and the decision flips back and forth, without it the eddy makes the
 * paper's mistake and corrects it when lineitem's rows start to pass).
 */
static double
cumulative_ratio(EddyRouter *router, EddyModuleStats *st)
{
	return ratio_with_prior(st, router->prior_weight);
}

/* Fold the counters gathered since the last call into decayed statistics. */
static void
update_statistics(EddyRouter *router)
{
	double		decay;
	int			i;

	decay = exp2(-(double) (router->routed - router->stats_routed) /
				 EDDY_STATS_HALFLIFE);
	router->stats_routed = router->routed;
	/* (a floor keeps the ratio of a target never taken defined) */
	router->prior_weight = Max(router->prior_weight * decay, 1e-6);
	for (i = 0; i < router->ntargets; i++)
	{
		EddyModuleStats *st = router->targets[i].stats;

		st->w_in = st->w_in * decay + (double) (st->in - st->seen_in);
		st->w_out = st->w_out * decay + (double) (st->out - st->seen_out);
		st->w_dropped = st->w_dropped * decay +
			(double) (st->dropped - st->seen_dropped);
		st->w_samples *= decay;
		st->w_ns *= decay;
		fold_costs(st, st->cost_ns - st->seen_ns, st->samples - st->seen_samples);
		st->w_pairs = st->w_pairs * decay + (st->pairs - st->seen_pairs);
		st->seen_in = st->in;
		st->seen_out = st->out;
		st->seen_dropped = st->dropped;
		st->seen_samples = st->samples;
		st->seen_ns = st->cost_ns;
		st->seen_pairs = st->pairs;
	}
}

/*
 * The cumulative policy's selectivity per pair of join module m: what its
 * directions matched over the pairs they examined, decayed, pooled over
 * both directions (a pair matches whichever side probes), the planner's
 * selectivity standing in for EDDY_PRIOR_TUPLES probes per direction.
 */
static double
join_selectivity(EddyRouter *router, int m)
{
	double		num = 0.0;
	double		den = 0.0;
	int			i;

	/* a module's targets are consecutive (exec.c numbers them so) */
	for (i = router->module_target[m];
		 i >= 0 && i < router->ntargets && router->targets[i].module == m; i++)
	{
		EddyModuleStats *st = router->targets[i].stats;
		double		prior = EDDY_PRIOR_TUPLES * Max(st->prior_pairs, 1.0);

		num += st->w_out + prior * st->prior_sel;
		den += st->w_pairs + prior;
	}
	return den > 0.0 ? num / den : 1.0;
}

/*
 * The cumulative policy's estimates (header): per join target t, the tuples
 * one tuple routed to t makes with everything beyond t, |x JOIN S_tau JOIN
 * T_tau ...|: the product, over t's join and every join beyond it, of the
 * join's selectivity per pair times the rows read so far of its far end,
 * times the selectivity of every selection over the sources beyond t.
 * Selections over both sides of t are the tuple's own business
 * (cumulative_estimate).  A selection's "cumulative" is its selectivity.
 */
static void
score_cumulative(EddyRouter *router)
{
	int			ns = router->nsources;
	double	   *rows = router->rows;
	double	   *sel = router->module_sel;
	int			i;
	int			m;

	for (i = 0; i < ns; i++)
	{
		rows[i] = Max(router->source_rows(router->source_rows_arg, i,
										  EDDY_ROWS_READ), 0.0);
		rows[ns + i] = Max(router->source_rows(router->source_rows_arg, i,
											   EDDY_ROWS_PLANNED), 1.0);
	}
	for (m = 0; m < router->nmodules; m++)
	{
		int			t = router->module_target[m];

		sel[m] = (t >= 0 && router->targets[t].far != 0) ?
			join_selectivity(router, m) : 1.0;
	}
	for (i = 0; i < router->ntargets; i++)
	{
		EddyRouteTarget *t = &router->targets[i];
		uint32		far = t->far;
		double		est;
		double		planned;

		if (far == 0)
		{
			t->stats->cumulative = t->stats->cumulative_planned =
				cumulative_ratio(router, t->stats);
			continue;
		}
		est = sel[t->module] * rows[t->far_rel];
		planned = sel[t->module] * rows[ns + t->far_rel];
		for (m = 0; m < router->nmodules; m++)
		{
			EddyRouteTarget *u;

			if (m == t->module || router->module_target[m] < 0)
				continue;
			u = &router->targets[router->module_target[m]];
			if (u->far == 0)
			{
				/* a selection over sources beyond t only */
				if (u->need != 0 && (u->need & ~far) == 0)
				{
					double		ratio = cumulative_ratio(router, u->stats);

					est *= ratio;
					planned *= ratio;
				}
			}
			else
			{
				uint32		ends = u->need | (1u << u->far_rel);

				/* a join beyond t, entered from t's side: its far end */
				if ((ends & ~far) == 0)
				{
					int			end = (u->far & ~far) == 0 ? u->far_rel :
						pg_rightmost_one_pos32(u->need);

					est *= sel[m] * rows[end];
					planned *= sel[m] * rows[ns + end];
				}
			}
		}
		t->stats->cumulative = est;
		t->stats->cumulative_planned = planned;
	}
}

/*
 * The cumulative estimate of join target ti for a tuple of signature
 * (spans, done): its estimate of the last recomputation, times the
 * selectivity of each selection still to do that reads sources on both
 * sides of the join and that the tuple and the sources beyond the join
 * cover.
 */
static double
cumulative_estimate(EddyRouter *router, int ti, uint32 spans, uint64 done,
					double *planned)
{
	EddyRouteTarget *t = &router->targets[ti];
	double		est = t->stats->cumulative;
	int			i;

	*planned = t->stats->cumulative_planned;
	for (i = 0; i < router->ntargets; i++)
	{
		EddyRouteTarget *u = &router->targets[i];

		if (u->far != 0 || (done & (UINT64CONST(1) << u->module)) != 0)
			continue;
		if ((u->need & t->far) != 0 && (u->need & ~t->far) != 0 &&
			(u->need & ~(spans | t->far)) == 0)
		{
			est *= u->stats->cumulative;
			*planned *= u->stats->cumulative;
		}
	}
	return est;
}

static void
score_targets(EddyRouter *router)
{
	bool		new_window = false;
	int			i;

	if (router->policy == EDDY_POLICY_LOTTERY && router->lottery_window > 0 &&
		router->routed - router->window_start >= (uint64) router->lottery_window)
	{
		new_window = true;
		router->window_start = router->routed;
	}

	for (i = 0; i < router->ntargets; i++)
	{
		EddyModuleStats *st = router->targets[i].stats;

		switch (router->policy)
		{
			case EDDY_POLICY_RANK:
				st->rank_cost = stats_cost(st);
				st->rank_wait = router->targets[i].far != 0 && router->waits != NULL &&
					router->waits(router->source_rows_arg, router->targets[i].module,
								  router->targets[i].dir);
				if (st->rank_wait)
				{
					/* a wait (rank_ratio's header) */
					st->rank_ratio = 1.0;
					st->score = EDDY_WAIT_SCORE / (1.0 + st->prior_ratio);
					break;
				}
				st->rank_ratio = rank_ratio(router, &router->targets[i]);
				st->score = (1.0 - st->rank_ratio) / st->rank_cost;
				break;
			case EDDY_POLICY_CUMULATIVE:
				st->score = (1.0 - stats_ratio(st)) / stats_cost(st);
				break;
			case EDDY_POLICY_LOTTERY:
				{
					int64		held = (int64) st->in - (int64) st->out;
					int64		tickets;

					if (new_window)
					{
						/* forget what was earned before the previous window */
						st->ticket_base = st->ticket_next_base;
						st->ticket_next_base = held;
						st->window_ns = st->window_next_ns;
						st->window_samples = st->window_next_samples;
						st->window_next_ns = st->cost_ns;
						st->window_next_samples = st->samples;
					}
					tickets = Max(1 + held - st->ticket_base, 1);
					st->score = (double) tickets /
						(router->lottery_window > 0 ? window_cost(st) : stats_cost(st));
				}
				break;
			case EDDY_POLICY_FIXED:
			case EDDY_POLICY_RANDOM:
				st->score = 0.0;
				break;
		}
	}
	if (router->policy == EDDY_POLICY_CUMULATIVE && router->chain_len < 0)
		score_cumulative(router);	/* a chain has no joins */
}

static void history_append(EddyRouter *router, int lane, int target,
						   uint64 tuples);

/* Close a lane's open run: its tuples go to its target's counter and runs */
static void
close_run(EddyRouter *router, int lane)
{
	EddyHistoryLane *l = &router->lanes[lane];
	int			target = l->open_target;
	uint64		tuples = l->open_tuples;

	l->open_target = -1;
	l->open_tuples = 0;
	if (target < 0 || tuples == 0)
		return;
	router->targets[target].stats->first += tuples;
	history_append(router, lane, target, tuples);
}

/* Close every lane's open run (before the counters are read or saved) */
void
EddyRouterCloseRuns(EddyRouter *router)
{
	int			lane;

	for (lane = 0; lane < router->nlanes; lane++)
		close_run(router, lane);
}

/* A first choice other than the lane's open run's: close it, open target's */
void
EddyRouterOpenRun(EddyRouter *router, int lane, int target)
{
	close_run(router, lane);
	router->lanes[lane].open_target = target;
	router->lanes[lane].open_tuples = 1;
}

/* Append a run of first choices to the closed runs of a lane. */
static void
history_append(EddyRouter *router, int lane, int target, uint64 tuples)
{
	EddyHistoryLane *l = &router->lanes[lane];

	Assert(l->open_target < 0);
	if (l->nruns > 0 && l->runs[l->nruns - 1].target == target)
	{
		l->runs[l->nruns - 1].tuples += tuples;
		return;
	}
	if (l->nruns == EDDY_MAX_HISTORY_RUNS)
	{
		l->truncated = true;
		return;
	}
	if (l->nruns == l->maxruns)
	{
		int			grown = Min(Max(l->maxruns * 2, 16), EDDY_MAX_HISTORY_RUNS);

		l->runs = l->runs == NULL ?
			MemoryContextAlloc(router->history_cxt, grown * sizeof(EddyHistoryRun)) :
			repalloc(l->runs, grown * sizeof(EddyHistoryRun));
		l->maxruns = grown;
	}
	l->runs[l->nruns].target = target;
	l->runs[l->nruns].tuples = tuples;
	l->nruns++;
}

/* Chain: account the epoch that just ended to its first choice. */
static void
close_epoch(EddyRouter *router)
{
	uint64		tuples = router->routed - router->epoch_start;

	EddyRouterCloseRuns(router);
	if (router->epoch_first >= 0 && tuples > 0)
	{
		router->targets[router->epoch_first].stats->first += tuples;
		history_append(router, 0, router->epoch_first, tuples);
	}
	router->epoch_start = router->routed;
	router->epoch_first = -1;
}

/*
 * Fold a chain's counters into its targets' statistics: a tuple dropped at
 * step k went into steps 0..k and out of steps 0..k-1; a tuple that passed
 * went into and out of every step.
 */
void
EddyRouterSyncChain(EddyRouter *router)
{
	uint64		reached = router->chain_passed;
	int			k;

	if (router->chain_len < 0)
		return;
	for (k = 0; k < router->chain_len; k++)
		reached += router->chain_dropped[k];
	for (k = 0; k < router->chain_len; k++)
	{
		EddyModuleStats *st = router->targets[router->chain[k]].stats;

		st->in += reached;
		st->out += reached - router->chain_dropped[k];
		reached -= router->chain_dropped[k];
		router->chain_dropped[k] = 0;
	}
	router->chain_passed = 0;
}

/*
 * Source tuples for which target was the first choice, the open runs and
 * the open epoch included
 */
uint64
EddyRouterFirst(EddyRouter *router, int target)
{
	uint64		first = router->targets[target].stats->first;
	int			lane;

	for (lane = 0; lane < router->nlanes; lane++)
		if (router->lanes[lane].open_target == target)
			first += router->lanes[lane].open_tuples;
	if (router->chain_len >= 0 && target == router->epoch_first)
		first += EddyRouterRouted(router) - router->epoch_start;
	return first;
}

/*
 * The chain of choices a tuple makes in this epoch if it passes every
 * filter: chain[k] = route[{chain[0], ..., chain[k-1]}].
 */
static void
compute_chain(EddyRouter *router)
{
	uint64		done = 0;
	int			t;

	router->chain_len = 0;
	while ((t = EddyRoute(router, router->all_sources, done)) != EDDY_ROUTE_OUTPUT)
	{
		router->chain_arg[router->chain_len] = router->targets[t].arg;
		router->chain[router->chain_len++] = t;
		done |= UINT64CONST(1) << router->targets[t].module;
	}
	router->epoch_first = router->chain_len > 0 ? router->chain[0] : -1;
}

/* Start a new epoch: every entry is recomputed on first use */
static void
next_epoch(EddyRouter *router)
{
	router->generation++;
	router->epoch++;
	if (router->epoch == 0)		/* wrapped: 0 would match fresh entries */
	{
		if (router->direct)
			memset(router->route_epoch, 0,
				   ((Size) 1 << router->nmodules) * sizeof(uint32));
		else
		{
			memset(router->entries, 0, sizeof(EddyRouteEntry) * router->nentries);
			router->nentries_used = 0;
		}
		router->epoch = 1;
	}
}

/*
 * Route by `policy` from now on, with the scores of the last recomputation,
 * in a new epoch: state migration's forced moves (migrate.c) replay the
 * state under random routing, then restore the eddy's policy.  Not for a
 * chain.
 */
void
EddyRouterSetPolicy(EddyRouter *router, EddyRoutingPolicy policy)
{
	Assert(router->chain_len < 0);
	router->policy = policy;
	next_epoch(router);
}

/*
 * The executor changed which signatures a target may take (its
 * prerequisites, exec.c): a new epoch, so that every entry is chosen again,
 * with the scores of the last recomputation.  Before the first computation
 * nothing is chosen yet; a chain (a selection eddy) has no such targets.
 */
void
EddyRouterTargetsChanged(EddyRouter *router)
{
	Assert(router->chain_len < 0);
	if (router->epoch > 0)
		next_epoch(router);
}

/*
 * Each target's own sampling (header, Costs): EDDY_TARGET_SAMPLES timed
 * visits per EDDY_TARGET_SAMPLE_PERIOD routed tuples at the rate of its
 * visits since the last setting, whatever eddy.reopt_frequency is (per
 * epoch, eddy.reopt_frequency = 1 timed every visit: 2.3x PostgreSQL's
 * time on Select-Count-3 of make bench, against 1.7x).  Before the first
 * setting, every visit is timed.  The fixed policy keeps the tuples timed
 * throughout and none of its own: it never reads a cost.
 */
static void
set_sampling(EddyRouter *router)
{
	uint64		elapsed = router->routed - router->sample_routed;
	int			i;

	router->sample_routed = router->routed;
	for (i = 0; i < router->ntargets; i++)
	{
		EddyRouteTarget *t = &router->targets[i];
		uint64		visits = t->stats->in - t->sample_in;
		double		every;

		t->sample_in = t->stats->in;
		every = elapsed == 0 ? 1.0 :
			(double) visits * EDDY_TARGET_SAMPLE_PERIOD / elapsed / EDDY_TARGET_SAMPLES;
		t->sample_every = router->policy == EDDY_POLICY_FIXED ?
			EDDY_COST_SAMPLE_INTERVAL :
			(int) Max(Min(every, (double) EDDY_COST_SAMPLE_INTERVAL), 1.0);
		t->until_sample = Min(Max(t->until_sample, 1), t->sample_every);
	}
}

/*
 * Recompute the routing decisions: every reopt_frequency tuples routed.
 * The fixed policy never changes its mind, so after the first computation
 * it only re-arms the counter.
 */
void
EddyRouterReoptimize(EddyRouter *router)
{
	router->routed = EddyRouterRouted(router);
	router->until_reopt = router->reopt_frequency;
	if (router->policy == EDDY_POLICY_FIXED && router->epoch > 0)
		return;
	if (router->epoch == 0 ||
		router->routed - router->sample_routed >= EDDY_TARGET_SAMPLE_PERIOD)
		set_sampling(router);
	if (router->held && router->epoch > 0 && router->routed >= EDDY_HOLD_WARMUP)
	{
		/* eddy.routing_hold: learn, but keep the decisions */
		Assert(router->chain_len < 0);
		update_statistics(router);
		return;
	}

	if (router->chain_len >= 0)
	{
		EddyRouterSyncChain(router);
		close_epoch(router);
	}
	update_statistics(router);
	score_targets(router);
	next_epoch(router);
	router->recomputations++;
	if (router->chain_len >= 0)
		compute_chain(router);
}

/*
 * eddy.routing_hold is over: recomputations change the decisions again,
 * from the next one on (the executor calls this once).
 */
void
EddyRouterRelease(EddyRouter *router)
{
	if (!router->held)
		return;
	router->held = false;
	router->released = true;
	router->released_at = EddyRouterRouted(router);
}


/*
 * eddy.random_start: a 64-bit mix of a seed and a key (splitmix64's
 * finaliser), the same on every platform and in every process.
 */
uint64
EddyRandomStartHash(uint64 seed, uint64 key)
{
	uint64		z = seed * UINT64CONST(0x9E3779B97F4A7C15) + key +
		UINT64CONST(0x632BE59BD9B4E019);

	z = (z ^ (z >> 30)) * UINT64CONST(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64CONST(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/* Are the decisions still the random plan of eddy.random_start? */
static inline bool
random_phase(EddyRouter *router)
{
	return router->random_start != 0 &&
		(router->policy == EDDY_POLICY_FIXED ||
		 router->routed < router->random_until);
}

/*
 * Rank's lookahead (header, "Lookahead"): per target in cand[0..n-1], the
 * highest compound rank of a path that starts with it and ends at a filter
 * the tuple (spans, done) cannot visit yet, into look[] (-HUGE_VAL where
 * there is none).  A path is the joins towards the sources the filter reads
 * that the tuple lacks, in the order the rank scores would take them, then
 * the filter; its compound rank is (1 - product of ratios) / (expected cost
 * per tuple entering it), the rank of the path taken as one filter.
 * A path's compound rank is a mediant of its prefix's and its filter's
 * own rank, so a filter whose own score is at most best (the candidates'
 * best) cannot make its path beat best unless its prefix does alone: it
 * is skipped, which leaves the lookahead a filter or two to score in most
 * entries (a prefix that filters ends at a filter of its own).  A path
 * whose next join would only store the tuple (rank_ratio) leads nowhere
 * now: the filter is not scored.
 */
static void
rank_lookahead(EddyRouter *router, uint32 spans, uint64 done,
			   const int *cand, int n, double best, double *look)
{
	int			f;
	int			k;

	for (k = 0; k < n; k++)
		look[k] = -HUGE_VAL;
	for (f = 0; f < router->ntargets; f++)
	{
		EddyRouteTarget *ft = &router->targets[f];
		uint32		s = spans;
		uint64		d = done;
		double		pass = 1.0;
		double		cost = 0.0;
		double		compound;
		int			first = -1;
		int			steps = 0;

		if ((done & (UINT64CONST(1) << ft->module)) != 0 || ft->stats->rank_wait ||
			ft->stats->rank_ratio >= 1.0 || ft->stats->score <= best ||
			(spans & ~ft->allow) != 0 ||
			EddyRouteTargetEligible(ft, spans, done))
			continue;
		/* the joins towards the sources it reads, best rank first */
		while ((ft->need & ~s) != 0 && steps++ < router->nsources)
		{
			int			step = -1;
			int			u;

			for (u = 0; u < router->ntargets; u++)
			{
				EddyRouteTarget *ut = &router->targets[u];

				if (ut->far == 0 || (ut->far & ft->need & ~s) == 0 ||
					!EddyRouteTargetEligible(ut, s, d))
					continue;
				if (step < 0 ||
					ut->stats->score > router->targets[step].stats->score)
					step = u;
			}
			if (step < 0)
				break;
			if (router->targets[step].stats->rank_wait)
			{
				first = -1;		/* it would store the tuple, not lead on */
				break;
			}
			if (first < 0)
				first = step;
			cost += pass * router->targets[step].stats->rank_cost;
			pass *= router->targets[step].stats->rank_ratio;
			s |= ((uint32) 1) << router->targets[step].far_rel;
			d |= UINT64CONST(1) << router->targets[step].module;
		}
		if (first < 0 || !EddyRouteTargetEligible(ft, s, d))
			continue;
		cost += pass * ft->stats->rank_cost;
		pass *= ft->stats->rank_ratio;
		compound = (1.0 - pass) / Max(cost, 1.0);
		for (k = 0; k < n; k++)
			if (cand[k] == first && compound > look[k])
				look[k] = compound;
	}
}

/*
 * Content-based routing (module.h, hot): for a tuple of signature (spans,
 * done) whose probe of target except would be of a hot key, the eligible
 * target other than except expected to pass the fewest tuples per tuple
 * in, if that is under one, else -1.  A join's is its observed ratio with
 * the prior (stats_ratio), but never under the planner's fan-out while its
 * far end is still being read: what its state holds so far says little of
 * what the tuple will meet (a wait stores it, to come out when the far end
 * brings a match).  Not under the fixed and random policies, whose plans
 * are baselines.  Not cached in the table: a hot key is rare, by
 * definition, and its signature's other tuples keep the table's choice.
 */
int
EddyRouteFilterInstead(EddyRouter *router, uint32 spans, uint64 done, int except)
{
	double		lowest = 1.0;
	int			best = -1;
	int			i;

	if (router->policy == EDDY_POLICY_FIXED || router->policy == EDDY_POLICY_RANDOM)
		return -1;
	for (i = 0; i < router->ntargets; i++)
	{
		EddyRouteTarget *t = &router->targets[i];
		double		r;

		if (i == except || !EddyRouteTargetEligible(t, spans, done))
			continue;
		r = stats_ratio(t->stats);
		if (t->far != 0)
		{
			if (router->source_rows == NULL)
				continue;
			if (router->source_rows(router->source_rows_arg, t->far_rel, EDDY_ROWS_READ) <
				router->source_rows(router->source_rows_arg, t->far_rel, EDDY_ROWS_EXPECTED))
				r = Max(r, t->stats->prior_ratio);
		}
		if (r < lowest)
		{
			lowest = r;
			best = i;
		}
	}
	return best;
}

/* The policy's choice for a signature in this epoch */
static int
choose_target(EddyRouter *router, uint32 spans, uint64 done)
{
	int			cand[2 * EDDY_MAX_MODULES];
	int			n = 0;
	int			choice = EDDY_ROUTE_OUTPUT;
	int			i;

	if (spans == router->all_sources && done == router->all_done)
		return EDDY_ROUTE_OUTPUT;
	for (i = 0; i < router->ntargets; i++)
		if (EddyRouteTargetEligible(&router->targets[i], spans, done))
			cand[n++] = i;
	if (n == 0)
		elog(ERROR, "eddy: no module can take a tuple spanning %x with modules %llx done",
			 spans, (unsigned long long) done);
	if (n == 1)
		return cand[0];

	if (random_phase(router))
	{
		uint64		best = 0;
		int			k;

		/* the random plan: targets in the order of their random keys */
		for (k = 0; k < n; k++)
		{
			uint64		key = EddyRandomStartHash(router->random_start,
												  (uint64) cand[k]);

			if (k == 0 || key > best)
			{
				best = key;
				choice = cand[k];
			}
		}
		return choice;
	}

	switch (router->policy)
	{
		case EDDY_POLICY_FIXED:
			choice = cand[0];
			break;
		case EDDY_POLICY_RANDOM:
			choice = cand[pg_prng_uint64_range(&router->rng, 0, n - 1)];
			break;
		case EDDY_POLICY_RANK:
		case EDDY_POLICY_CUMULATIVE:
			{
				double		best = 0.0;
				double		look[2 * EDDY_MAX_MODULES];
				bool		lookahead = router->policy == EDDY_POLICY_RANK &&
					router->lookahead && !router->direct;
				int			own = -1;
				int			k;

				/* ties go to the earlier target in PostgreSQL's order */
				for (k = 0; k < n; k++)
				{
					double		s = router->targets[cand[k]].stats->score;

					if (k == 0 || s > best)
					{
						best = s;
						choice = cand[k];
					}
				}
				own = choice;
				if (lookahead)
				{
					rank_lookahead(router, spans, done, cand, n, best, look);
					for (k = 0; k < n; k++)
						if (look[k] > best)
						{
							best = look[k];
							choice = cand[k];
						}
					if (choice != own)
						router->lookahead_choices++;
				}
				if (router->policy == EDDY_POLICY_RANK ||
					router->targets[choice].far == 0)
					break;

				/* cumulative: a join goes first; the one of lowest estimate */
				{
					double		lowest = 0.0;
					double		lowest_planned = 0.0;
					bool		any = false;

					for (k = 0; k < n; k++)
					{
						double		e;
						double		p;

						if (router->targets[cand[k]].far == 0)
							continue;
						e = cumulative_estimate(router, cand[k], spans, done, &p);
						if (!any || e < lowest || (e == lowest && p < lowest_planned))
						{
							lowest = e;
							lowest_planned = p;
							choice = cand[k];
							any = true;
						}
					}
				}
			}
			break;
		case EDDY_POLICY_LOTTERY:
			{
				double		total = 0.0;
				double		draw;
				int			k;

				for (k = 0; k < n; k++)
					total += router->targets[cand[k]].stats->score;
				draw = pg_prng_double(&router->rng) * total;
				for (k = 0; k < n; k++)
				{
					choice = cand[k];
					draw -= router->targets[cand[k]].stats->score;
					if (draw < 0.0)
						break;
				}
			}
			break;
	}
	return choice;
}

/* Fill the direct table's entry of signature done for the current epoch. */
int
EddyRouterChoose(EddyRouter *router, uint32 spans, uint64 done)
{
	int			choice = choose_target(router, spans, done);

	Assert(router->direct);
	if (router->route_epoch[done] == 0 || router->route[done] != choice)
		router->changes++;
	router->route[done] = choice;
	router->route_epoch[done] = router->epoch;
	return choice;
}

static inline uint32
route_hash(uint32 spans, uint64 done)
{
	uint64		h = done * UINT64CONST(0x9E3779B97F4A7C15) ^ ((uint64) spans << 17) ^ spans;

	return (uint32) (h ^ (h >> 29));
}

static void
entries_grow(EddyRouter *router)
{
	EddyRouteEntry *old = router->entries;
	uint32		oldn = router->nentries;
	uint32		i;

	router->nentries *= 2;
	router->entries = palloc0(sizeof(EddyRouteEntry) * router->nentries);
	router->nentries_used = 0;
	for (i = 0; i < oldn; i++)
	{
		if (old[i].epoch == router->epoch)
		{
			uint32		h = route_hash(old[i].spans, old[i].done) & (router->nentries - 1);

			while (router->entries[h].epoch != 0)
				h = (h + 1) & (router->nentries - 1);
			router->entries[h] = old[i];
			router->nentries_used++;
		}
	}
	pfree(old);
}

/* The hashed table's decision for a signature, chosen on first use */
int
EddyRouterLookup(EddyRouter *router, uint32 spans, uint64 done)
{
	uint32		mask = router->nentries - 1;
	uint32		h = route_hash(spans, done) & mask;
	EddyRouteEntry *e;

	for (;;)
	{
		e = &router->entries[h];
		if (e->epoch == 0 || (e->spans == spans && e->done == done))
			break;
		h = (h + 1) & mask;
	}
	if (e->epoch == router->epoch)
		return e->choice;
	if (e->epoch == 0)
	{
		if (router->nentries_used * 2 >= router->nentries)
		{
			entries_grow(router);
			return EddyRouterLookup(router, spans, done);
		}
		router->nentries_used++;
	}
	{
		int			choice = choose_target(router, spans, done);

		if (e->epoch == 0 || e->choice != choice)
			router->changes++;
		e->spans = spans;
		e->done = done;
		e->epoch = router->epoch;
		e->choice = choice;
	}
	return e->choice;
}
