/*-------------------------------------------------------------------------
 *
 * routing.h
 *	  The router of an eddy: per-target statistics, the routing table and
 *	  the policies that fill it (routing.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef EDDY_ROUTING_H
#define EDDY_ROUTING_H

#include "eddy.h"

#include "common/pg_prng.h"

/*
 * What the eddy observed of one routing target (a module in one
 * direction: a selection has one, a symmetric hash join two).  The totals
 * feed EXPLAIN ANALYZE; the policy folds them into decayed statistics at
 * each recomputation.  out/in is the selectivity of a selection and the
 * fan-out of a join.
 */
typedef struct EddyModuleStats
{
	/* totals since the node began; the hot path only increments these */
	uint64		in;				/* tuples routed to it */
	uint64		out;			/* tuples it passed on (passed, or results) */
	uint64		dropped;		/* an index join: of its results, those its
								 * fetch chain dropped (mod_indexjoin.c) */
	uint64		first;			/* source tuples it was the first choice of */
	uint64		hot_deferred;	/* tuples sent to a filter first instead, their
								 * probe here being of a hot key (module.h) */
	uint64		samples;		/* timed visits */
	double		cost_ns;		/* their summed time */

	/* the planner's estimates: the priors */
	double		prior_ratio;	/* selectivity or fan-out */
	bool		data_prior;		/* a join's, from its far side's complete
								 * state (source.c, data_priors) */
	double		prior_cost_ns;

	/* policy state, updated at each recomputation (routing.c) */
	uint64		seen_in;		/* totals at the previous recomputation */
	uint64		seen_out;
	uint64		seen_dropped;
	uint64		seen_samples;
	double		seen_ns;
	double		w_in;			/* exponentially decayed statistics */
	double		w_out;
	double		w_dropped;
	double		w_samples;
	double		w_ns;
	double		held_ns;		/* an interval's timed visits waiting for the
								 * next to judge them (routing.c, Costs) */
	uint64		held_samples;
	uint64		outliers;		/* intervals whose time was clipped */
	int64		ticket_base;	/* lottery: (in - out) where the window began */
	int64		ticket_next_base;	/* ... and where the current one began */
	double		window_ns;		/* lottery window: (cost_ns, samples) where */
	uint64		window_samples; /* the previous window began, */
	double		window_next_ns; /* ... and where the current one began */
	uint64		window_next_samples;
	double		score;			/* rank or lottery weight: higher goes first */
	bool		rank_wait;		/* rank: the target only stores (routing.c) */
	double		rank_ratio;		/* rank: the ratio and cost (ns) behind the */
	double		rank_cost;		/* score, for the lookahead (routing.c) */

	/*
	 * Joins, for the cumulative policy: pairs examined (each probe counts
	 * the entries it probed, an index join's the planner's rows of its
	 * relation), so that out / pairs is the join's selectivity per pair;
	 * the planner's selectivity stands in for EDDY_PRIOR_TUPLES probes of
	 * prior_pairs pairs each.
	 */
	double		pairs;
	double		prior_sel;
	double		prior_pairs;
	double		seen_pairs;
	double		w_pairs;
	double		cumulative;		/* as of the last recomputation: a join's
								 * cumulative estimate (routing.c), a
								 * selection's selectivity */
	double		cumulative_planned; /* ... the same with the planner's rows */
} EddyModuleStats;

/*
 * A routing target and when it may take a tuple of signature (spans,
 * done): it is not done, the tuple spans every source in `need` and none
 * outside `allow`, and every module in `prereq` is done.  A selection
 * needs the sources its predicate reads; a join direction needs its end's
 * source and allows only its side of the tree (a tuple goes to a join only
 * if it spans the join's relation on one side and nothing of the other).
 * store_prereq is the part of prereq that holds only while routing there
 * may store the tuple (exec.c, "Storing has a price"): the executor drops
 * it from prereq when the direction only probes, and puts it back when the
 * sources are read again.
 */
typedef struct EddyRouteTarget
{
	int			module;			/* index of the module */
	int			dir;			/* direction: 0, or 1 for a join's side 1 */
	uint32		need;
	uint32		allow;
	uint64		prereq;
	uint64		store_prereq;	/* in prereq while the target may store */
	uint32		far;			/* a join: the sources beyond it (0: a selection) */
	int			far_rel;		/* a join: the source at its other end */
	EddyModuleStats *stats;		/* the module's statistics for dir */
	void	   *arg;			/* the executor's: a filter's predicate */
	uint64		sample_in;		/* its visits when its sampling was set */
	int			until_sample;	/* visits until its own next timed visit */
	int			sample_every;	/* ... and between two of them (routing.c,
								 * Costs) */
} EddyRouteTarget;

/* May target t take a tuple of signature (spans, done)? */
static inline bool
EddyRouteTargetEligible(EddyRouteTarget *t, uint32 spans, uint64 done)
{
	return (done & (UINT64CONST(1) << t->module)) == 0 &&
		(t->need & ~spans) == 0 &&
		(spans & ~t->allow) == 0 &&
		(t->prereq & ~done) == 0;
}

/* One run of the routing history: first choice and tuples routed under it */
typedef struct EddyHistoryRun
{
	int			target;
	uint64		tuples;
} EddyHistoryRun;

/*
 * The history of one source's first choices (a lane: the tuples of one
 * source, which an eddy interleaves with the others'), run-length encoded:
 * the closed runs, then the open one (open_target, -1 if none; its tuples
 * are not yet in its target's stats->first), which EddyRouterNoteFirst
 * extends.
 */
typedef struct EddyHistoryLane
{
	EddyHistoryRun *runs;		/* grown as needed, up to
								 * EDDY_MAX_HISTORY_RUNS */
	int			nruns;
	int			maxruns;
	bool		truncated;		/* runs past EDDY_MAX_HISTORY_RUNS left out */
	int			open_target;
	uint64		open_tuples;
} EddyHistoryLane;

/*
 * Time the routing of one tuple in this many (and the first one); each
 * target times some of its own visits besides (routing.c, Costs)
 */
#define EDDY_COST_SAMPLE_INTERVAL	128

#define EDDY_ROUTE_OUTPUT		(-1)	/* routing decision: emit the tuple */
#define EDDY_MAX_HISTORY_RUNS	1000	/* per lane */

/*
 * Rows of a source, asked of the executor at a recomputation: given so far
 * (the cumulative policy's |S_tau|), the planner's, or those it will have
 * given when exhausted (its rows read once it is, else the larger of the
 * planner's and those read: rank's projection of a join's fan-out).
 */
typedef enum EddySourceRowsKind
{
	EDDY_ROWS_READ,
	EDDY_ROWS_PLANNED,
	EDDY_ROWS_EXPECTED
} EddySourceRowsKind;

typedef double (*EddySourceRowsFn) (void *arg, int source,
									EddySourceRowsKind kind);

/*
 * Would a tuple routed to module's direction dir only be stored, waiting
 * for its far side (its state there empty, the side still being read)?
 * Same arg as EddySourceRowsFn.
 */
typedef bool (*EddyTargetWaitsFn) (void *arg, int module, int dir);

/* An entry of the hashed routing table */
typedef struct EddyRouteEntry
{
	uint32		spans;
	uint32		epoch;			/* 0: empty slot */
	uint64		done;
	int			choice;			/* target, or EDDY_ROUTE_OUTPUT */
} EddyRouteEntry;

typedef struct EddyRouter
{
	int			ntargets;
	EddyRouteTarget *targets;
	int			nmodules;
	uint32		all_sources;	/* a complete tuple spans these ... */
	uint64		all_done;		/* ... and has done every module */
	EddyRoutingPolicy policy;
	int			reopt_frequency;
	int			lottery_window;

	/*
	 * The routing table.  A one-source eddy's signatures differ only in
	 * their done bitmaps (at most EDDY_MAX_SELECTIONS modules), so its
	 * table is an array indexed by done; other eddies hash (spans, done).
	 * Entries are filled lazily: one whose epoch is not the current one is
	 * recomputed on first use, so a recomputation costs O(targets) however
	 * many signatures exist.
	 */
	bool		direct;
	int		   *route;			/* direct: [1 << nmodules] */
	uint32	   *route_epoch;	/* direct: [1 << nmodules] */
	EddyRouteEntry *entries;	/* hashed: [nentries], a power of two */
	uint32		nentries;
	uint32		nentries_used;
	uint32		epoch;
	uint64		generation;		/* epochs started: never wraps, unlike epoch */

	/*
	 * The chain: when every module is a filter of one source, every tuple
	 * of an epoch follows a prefix of one chain of targets (each
	 * signature's entry is chosen once per epoch, even by the random and
	 * lottery policies), so the executor walks this array instead of the
	 * table.  chain_len is -1 when the eddy has no chain.
	 */
	int			chain_len;
	int			chain[EDDY_MAX_SELECTIONS];
	void	   *chain_arg[EDDY_MAX_SELECTIONS];	/* their targets' arg */

	/*
	 * A chain's counters: the walk counts, per tuple, only where it left the
	 * chain (dropped at step k, or passed every step).  Every tuple of the
	 * epoch went through the steps before that, so tuples in and out per
	 * target follow; EddyRouterSyncChain folds them into the targets'
	 * statistics (at each recomputation, and before EXPLAIN reads them).
	 */
	uint64		chain_dropped[EDDY_MAX_SELECTIONS];
	uint64		chain_passed;

	/*
	 * Routing entries filled for the first time or with another choice than
	 * the entry had in its previous epoch: state migration looks for
	 * misplaced state again only when this moved (migrate.c).
	 */
	uint64		changes;

	uint64		routed;			/* tuples routed until the last recomputation */
	int64		until_reopt;	/* tuples until the next one (hot path) */
	uint64		recomputations;
	uint64		stats_routed;	/* routed at the last statistics update */
	uint64		sample_routed;	/* routed when the targets' sampling was set */
	double		prior_weight;	/* cumulative: the planner's estimates'
								 * weight, decayed like the observations */
	uint64		window_start;	/* lottery: routed when the window began */
	uint64		epoch_start;	/* chain: routed when the current epoch began */
	int			epoch_first;	/* chain: first choice of the current epoch */
	pg_prng_state rng;

	/*
	 * The cumulative policy: rows of each source so far (asked of the
	 * executor at each recomputation), and per module its selectivity per
	 * pair and its first target.
	 */
	int			nsources;
	EddySourceRowsFn source_rows;
	void	   *source_rows_arg;
	EddyTargetWaitsFn waits;	/* optional */
	double	   *rows;			/* [2 * nsources]: read so far, planned */
	double	   *module_sel;		/* [nmodules] */
	int		   *module_target;	/* [nmodules] */

	/*
	 * eddy.routing_hold: while held, a recomputation folds the counters
	 * into the statistics but keeps the decisions (no new epoch) once
	 * EDDY_HOLD_WARMUP tuples have been routed (routing.c); state migration
	 * waits from the start; the executor releases the hold
	 * (EddyRouterRelease).
	 */
	bool		held;
	bool		released;
	uint64		released_at;	/* tuples routed at the release */

	/*
	 * eddy.random_start: a seed (0: off).  The decisions are a random plan
	 * until random_until tuples have been routed (for ever under the
	 * fixed policy), routing.c.
	 */
	uint64		random_start;
	uint64		random_until;

	/*
	 * eddy.rank_lookahead: the rank policy weighs, beside each eligible
	 * target's own rank, the compound rank of the joins that lead to a
	 * filter the tuple cannot reach yet (routing.c, "Lookahead");
	 * lookahead_choices counts the routing entries it decided.
	 */
	bool		lookahead;
	uint64		lookahead_choices;

	/*
	 * The history of first choices, one lane per source (a chain's is lane
	 * 0), its runs allocated in history_cxt.
	 */
	int			nlanes;
	EddyHistoryLane *lanes;
	MemoryContext history_cxt;
} EddyRouter;

extern void EddyRouterInit(EddyRouter *router, EddyRouteTarget *targets,
						   int ntargets, int nmodules, uint32 all_sources,
						   bool chain, EddyRoutingPolicy policy,
						   int reopt_frequency, int lottery_window,
						   uint64 seed, uint64 random_start, int nsources,
						   EddySourceRowsFn source_rows, void *source_rows_arg);
extern void EddyRouterRelease(EddyRouter *router);
extern uint64 EddyRandomStartHash(uint64 seed, uint64 key);
extern int	EddyRouterChoose(EddyRouter *router, uint32 spans, uint64 done);
extern int	EddyRouterLookup(EddyRouter *router, uint32 spans, uint64 done);
extern int	EddyRouteFilterInstead(EddyRouter *router, uint32 spans, uint64 done,
								   int except);
extern void EddyRouterReoptimize(EddyRouter *router);
extern void EddyRouterSetPolicy(EddyRouter *router, EddyRoutingPolicy policy);
extern void EddyRouterTargetsChanged(EddyRouter *router);
extern void EddyRouterOpenRun(EddyRouter *router, int lane, int target);
extern void EddyRouterCloseRuns(EddyRouter *router);
extern uint64 EddyRouterFirst(EddyRouter *router, int target);
extern void EddyRouterSyncChain(EddyRouter *router);

/*
 * Tuples routed so far.  A tuple is routed once when it enters the eddy's
 * routing, read from a source or made by a join, however many modules it
 * then visits: that is what eddy.reopt_frequency and "Tuples Routed" count.
 */
static inline uint64
EddyRouterRouted(EddyRouter *router)
{
	return router->routed + (uint64) (router->reopt_frequency - router->until_reopt);
}

/* A tuple enters routing: recompute first if it is time. */
static inline void
EddyRouterTupleIn(EddyRouter *router)
{
	if (unlikely(router->until_reopt <= 0))
		EddyRouterReoptimize(router);
	router->until_reopt--;
}

/* The routing decision for a signature: one table lookup in this epoch. */
static inline int
EddyRoute(EddyRouter *router, uint32 spans, uint64 done)
{
	if (router->direct)
	{
		if (unlikely(router->route_epoch[done] != router->epoch))
			return EddyRouterChoose(router, spans, done);
		return router->route[done];
	}
	else
	{
		uint32		mask = router->nentries - 1;
		uint64		h64 = done * UINT64CONST(0x9E3779B97F4A7C15) ^
			((uint64) spans << 17) ^ spans;
		EddyRouteEntry *e = &router->entries[(uint32) (h64 ^ (h64 >> 29)) & mask];

		/* the first probe usually hits; anything else takes the slow path */
		if (likely(e->epoch == router->epoch && e->spans == spans && e->done == done))
			return e->choice;
		return EddyRouterLookup(router, spans, done);
	}
}

/*
 * The first choice of a tuple of source lane (not in chain mode, which
 * counts per epoch): one more tuple of the lane's open run, where it
 * usually is; else that run is closed and a new one opened
 * (EddyRouterOpenRun).
 */
static inline void
EddyRouterNoteFirst(EddyRouter *router, int lane, int target)
{
	EddyHistoryLane *l = &router->lanes[lane];

	Assert(lane >= 0 && lane < router->nlanes);
	if (likely(l->open_target == target))
		l->open_tuples++;
	else
		EddyRouterOpenRun(router, lane, target);
}

#endif							/* EDDY_ROUTING_H */
