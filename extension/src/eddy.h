/*-------------------------------------------------------------------------
 *
 * eddy.h
 *	  Shared types, limits and entry points of the eddy extension.
 *
 * The extension adds a planner hook that replaces select-project-join
 * blocks by a CustomScan "Eddy" node.  The eddy reads tuples from its
 * sources and routes each of them through a set of modules (selections,
 * symmetric hash joins made of two dual STAIRs, index joins), recomputing
 * its routing decisions every eddy.reopt_frequency tuples from what it
 * observes: the adaptive query processing of Avnur & Hellerstein (SIGMOD
 * 2000), built inside PostgreSQL the way Deshpande's overhead study
 * (SIGMOD Record 2004) did for TelegraphCQ, with the STAIRs of Deshpande &
 * Hellerstein (VLDB 2004).
 *
 * Files, in layers that call downward (docs/architecture.md has the map):
 * init.c (module load), guc.c (settings), clock.c (the clock of cost
 * sampling), delay.c (the delay() SQL function); the planner: planner.c (hooks and eligibility), plan_join.c
 * (the join driver and its gates) over join_graph.c, semijoin.c,
 * join_state.c and plan_parallel.c, then plan_build.c and plan.c
 * (CustomPath -> CustomScan; private.h: the custom_private layout) and
 * clauses.c (clause helpers shared by the planner-side files); the
 * executor: exec.c (setup and the state machine) with source.c, local.c
 * and replay.c (loop.h), the services migrate.c, spill.c, parallel.c,
 * explain.c and schedule.c (exec.h), the modules mod_selection.c,
 * mod_join.c, mod_hashjoin.c, mod_stems.c and mod_indexjoin.c (module.h:
 * the vtable and the state interface), and below them tuple.c (tuple.h),
 * node.h, routing.c, stair.c (STAIR hash tables), arena.c (bump arenas);
 * shj.c (the static symmetric hash join node).
 *
 *-------------------------------------------------------------------------
 */
#ifndef EDDY_H
#define EDDY_H

#include "postgres.h"

#include <time.h>

#if PG_VERSION_NUM < 150000 || PG_VERSION_NUM >= 160000
#error "eddy targets PostgreSQL 15 only"
#endif

#include "nodes/execnodes.h"
#include "nodes/extensible.h"
#include "nodes/pathnodes.h"
#include "common/pg_prng.h"
#include "executor/executor.h"
#include "lib/stringinfo.h"

/* Names under which the custom path/scan/state methods are registered */
#define EDDY_NODE_NAME				"Eddy"

/*
 * Limits.  Routing tables are indexed by the done bitmap of a tuple, so the
 * number of selection operators of one eddy is bounded; a block with more
 * routable predicates keeps the vanilla plan.
 */
#define EDDY_MAX_SELECTIONS			12

/* GUC ranges and defaults (guc.c) */
#define EDDY_DEFAULT_REOPT_FREQUENCY	100
#define EDDY_MIN_REOPT_FREQUENCY		1
#define EDDY_MAX_REOPT_FREQUENCY		1000000000
#define EDDY_DEFAULT_LOTTERY_WINDOW		0	/* 0: tickets never forgotten */
#define EDDY_MAX_LOTTERY_WINDOW			1000000000
#define EDDY_DEFAULT_SELECTION_MIN_COST	0.01	/* 4 x cpu_operator_cost */
#define EDDY_MAX_SELECTION_MIN_COST		1000.0

/* eddy.join_method: which join module an eddy uses per join edge */
typedef enum EddyJoinMethod
{
	EDDY_JOIN_AUTO,				/* PostgreSQL's choice in its cheapest plan */
	EDDY_JOIN_HASH,				/* symmetric hash join (two STAIRs) everywhere */
	EDDY_JOIN_INDEX,			/* index join wherever an index allows */
	EDDY_JOIN_HYBRID			/* hybrid index/hash join where a leaf
								 * relation has an index on the keys */
} EddyJoinMethod;

/* eddy.hybrid_route: how a hybrid join answers a miss (mod_hybrid.c) */
typedef enum EddyHybridRoute
{
	EDDY_HYBRID_AUTO,			/* by the observed costs, revisited */
	EDDY_HYBRID_INDEX,			/* always the index */
	EDDY_HYBRID_HASH,			/* always the hash route (stored, waits) */
	EDDY_HYBRID_RANDOM			/* either, half and half (seeded): tests */
} EddyHybridRoute;

/* eddy.hybrid_cache: does a hybrid join keep what its lookups fetch? */
typedef enum EddyHybridCache
{
	EDDY_HYBRID_CACHE_AUTO,		/* while its hits pay for it (mod_hybrid.c) */
	EDDY_HYBRID_CACHE_ON,		/* always */
	EDDY_HYBRID_CACHE_OFF		/* never: every lookup an index join's */
} EddyHybridCache;

/* eddy.parallel_exchange (plan_parallel.c, parallel.c) */
typedef enum EddyExchangeSetting
{
	EDDY_EXCHANGE_AUTO,			/* the cheaper of the two parallel eddies */
	EDDY_EXCHANGE_ALWAYS,		/* the exchanging one wherever possible */
	EDDY_EXCHANGE_OFF			/* never exchange */
} EddyExchangeSetting;

#define EDDY_DEFAULT_MAX_SOURCES	10
#define EDDY_MAX_MAX_SOURCES		16

typedef enum EddyRoutingPolicy
{
	EDDY_POLICY_RANK,			/* rank ordering on observed cost/selectivity */
	EDDY_POLICY_LOTTERY,		/* lottery scheduling (optionally windowed) */
	EDDY_POLICY_FIXED,			/* PostgreSQL's order: non-adaptive baseline */
	EDDY_POLICY_RANDOM,			/* uniform among eligible operators */
	EDDY_POLICY_CUMULATIVE		/* joins by cumulative selectivity (002 4.1) */
} EddyRoutingPolicy;

/* eddy.migration: when an eddy moves its join state (migrate.c) */
typedef enum EddyMigrationPolicy
{
	EDDY_MIGRATION_OFF,			/* never: the state keeps its history */
	EDDY_MIGRATION_GREEDY,		/* whenever a routing decision changes (002 4.2) */
	EDDY_MIGRATION_GUARDED		/* when the change holds and pays for the move */
} EddyMigrationPolicy;

#define EDDY_MAX_DEBUG_MIGRATE_EVERY	1000000

/*
 * eddy.state_mode: what a join eddy's hash-join STAIRs hold (mod_hashjoin.c).
 * STAIRs (VLDB 2004) store every tuple routed to their side, intermediate
 * results included; SteMs (ICDE 2003) store base tuples of their own
 * relation only, built when they arrive, and never an intermediate result.
 */
typedef enum EddyStateMode
{
	EDDY_STATE_MODE_STAIRS,		/* store what is routed (the default) */
	EDDY_STATE_MODE_STEMS		/* base tuples only, TimeStamp on probes */
} EddyStateMode;

/*
 * Monotonic clock in nanoseconds (cost sampling, delay(); clock.c).  Where
 * the kernel keeps time with the TSC on x86-64, the TSC is read directly
 * and scaled by eddy_tsc_ns, calibrated against CLOCK_MONOTONIC when the
 * library loads; elsewhere (eddy_tsc_ns = 0) clock_gettime.  Only the
 * difference of two readings in one process means anything.
 */
extern PGDLLIMPORT double eddy_tsc_ns;

extern void EddyClockInit(void);
extern const char *EddyClockName(void);

static inline double
eddy_now_ns(void)
{
	struct timespec ts;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	if (likely(eddy_tsc_ns > 0))
		return (double) __builtin_ia32_rdtsc() * eddy_tsc_ns;
#endif
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec * 1e9 + (double) ts.tv_nsec;
}

/* eddy.source_schedule (schedule.c) */
typedef enum EddySchedule
{
	EDDY_SCHEDULE_BUILD,		/* one after another, in build order */
	EDDY_SCHEDULE_PROPORTIONAL	/* interleaved at rates proportional to size */
} EddySchedule;

/* eddy.source_rates and eddy.source_delays (schedule.c) */
#define EDDY_MIN_SOURCE_RATE		1e-6
#define EDDY_MAX_SOURCE_RATE		1e6
#define EDDY_MAX_SOURCE_DELAY_MS	3600000.0
#define EDDY_MAX_ROUTING_HOLD		100.0	/* eddy.routing_hold: percent */

/*
 * The name=value lists, source names and waits shared by the Eddy's
 * schedule and the static symmetric hash join's (schedule.c).
 */
extern bool EddyParseSourceList(const char *value, double min, double max,
								List **names, List **values, char **error);
extern bool EddySourceListValue(const char *setting, const char *name,
								double *value);
extern char *EddyPlanSourceName(Plan *plan, List *rtable);
extern void EddyWaitForSources(double wait_ms);
extern const char *EddyScheduleName(int schedule);
extern void EddyScheduleExplainSource(StringInfo buf, bool *listed,
									  const char *name, double rate,
									  double delay_ms);

/*
 * The proportional schedule reads next the source whose share read, with
 * the tuple it would read now, is smallest: rows read over planned rows
 * times the source's rate.
 */
static inline double
EddyProportionalShare(uint64 nread, double est_rows, double rate)
{
	return (double) (nread + 1) / (Max(est_rows, 1.0) * rate);
}

/* guc.c */
extern bool eddy_enabled;
extern int	eddy_reopt_frequency;
extern int	eddy_routing_policy;
extern int	eddy_lottery_window;
extern int	eddy_random_start;
extern double eddy_selection_min_cost;
extern bool eddy_static_shj;
extern bool eddy_filter_before_store;
extern bool eddy_rank_lookahead;
extern bool eddy_hot_keys;
extern bool eddy_one_row_guard;
extern int	eddy_hybrid_route;
extern int	eddy_hybrid_cache;		/* EddyHybridCache */
extern int	eddy_index_cache;		/* EddyHybridCache: an index join's lookup cache */
extern int	eddy_debug_index_delay;
extern int	eddy_parallel_exchange;	/* EddyExchangeSetting */
extern int	eddy_join_method;
extern int	eddy_max_sources;
extern int	eddy_max_memory;
extern int	eddy_source_schedule;	/* schedule.c */
extern char *eddy_source_rates;
extern char *eddy_source_delays;
extern char *eddy_routing_hold;
extern int	eddy_migration;
extern int	eddy_debug_migrate_every;
extern int	eddy_debug_spill_after;
extern int	eddy_state_mode;
extern void EddyScheduleGucInit(void);
extern void EddyGucInit(void);
extern Size EddyMaxMemoryBytes(int nstairs);
extern const char *EddyPolicyName(EddyRoutingPolicy policy);
extern const char *EddyMigrationName(EddyMigrationPolicy policy);
extern const char *EddyStateModeName(EddyStateMode mode);

/* planner.c */
extern void EddyPlannerInit(void);
extern bool EddyExtensionCreated(void);

/* exec.c */
extern void EddyExecInit(void);

/* shj.c: the static symmetric hash join node */
extern void EddyShjInit(void);

/* join eddies: at most this many modules (done bitmaps are 64 bits) */
#define EDDY_MAX_MODULES		64

#endif							/* EDDY_H */
