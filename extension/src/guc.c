/*-------------------------------------------------------------------------
 *
 * guc.c
 *	  The eddy.* settings.
 *
 * All are user-settable (PGC_USERSET): they change how this session's
 * queries are planned and routed, never another session's.  The prefix
 * "eddy." is reserved, so a misspelt setting is an error rather than a
 * silently created placeholder.
 *
 *-------------------------------------------------------------------------
 */
#include "eddy.h"

#include "miscadmin.h"
#include "utils/guc.h"

bool		eddy_enabled = true;
int			eddy_reopt_frequency = EDDY_DEFAULT_REOPT_FREQUENCY;
int			eddy_routing_policy = EDDY_POLICY_RANK;
int			eddy_lottery_window = EDDY_DEFAULT_LOTTERY_WINDOW;
int			eddy_random_start = 0;
double		eddy_selection_min_cost = EDDY_DEFAULT_SELECTION_MIN_COST;
bool		eddy_static_shj = false;
bool		eddy_filter_before_store = true;
bool		eddy_rank_lookahead = true;
bool		eddy_hot_keys = true;
bool		eddy_one_row_guard = true;
int			eddy_hybrid_route = EDDY_HYBRID_AUTO;
int			eddy_hybrid_cache = EDDY_HYBRID_CACHE_AUTO;
int			eddy_index_cache = EDDY_HYBRID_CACHE_AUTO;
int			eddy_debug_index_delay = 0;
int			eddy_parallel_exchange = EDDY_EXCHANGE_AUTO;
int			eddy_join_method = EDDY_JOIN_AUTO;
int			eddy_max_sources = EDDY_DEFAULT_MAX_SOURCES;
int			eddy_max_memory = -1;
int			eddy_migration = EDDY_MIGRATION_OFF;
int			eddy_debug_migrate_every = 0;
int			eddy_debug_spill_after = 0;
int			eddy_state_mode = EDDY_STATE_MODE_STAIRS;
static char *eddy_clock_name = NULL;

static const struct config_enum_entry state_mode_options[] = {
	{"stairs", EDDY_STATE_MODE_STAIRS, false},
	{"stems", EDDY_STATE_MODE_STEMS, false},
	{NULL, 0, false}
};

const char *
EddyStateModeName(EddyStateMode mode)
{
	const struct config_enum_entry *e;

	for (e = state_mode_options; e->name != NULL; e++)
	{
		if (e->val == (int) mode)
			return e->name;
	}
	return "unknown";
}

static const struct config_enum_entry migration_options[] = {
	{"off", EDDY_MIGRATION_OFF, false},
	{"greedy", EDDY_MIGRATION_GREEDY, false},
	{"guarded", EDDY_MIGRATION_GUARDED, false},
	{NULL, 0, false}
};

const char *
EddyMigrationName(EddyMigrationPolicy policy)
{
	const struct config_enum_entry *e;

	for (e = migration_options; e->name != NULL; e++)
	{
		if (e->val == (int) policy)
			return e->name;
	}
	return "unknown";
}

static const struct config_enum_entry exchange_options[] = {
	{"auto", EDDY_EXCHANGE_AUTO, false},
	{"always", EDDY_EXCHANGE_ALWAYS, false},
	{"off", EDDY_EXCHANGE_OFF, false},
	{NULL, 0, false}
};

static const struct config_enum_entry hybrid_route_options[] = {
	{"auto", EDDY_HYBRID_AUTO, false},
	{"index", EDDY_HYBRID_INDEX, false},
	{"hash", EDDY_HYBRID_HASH, false},
	{"random", EDDY_HYBRID_RANDOM, false},
	{NULL, 0, false}
};

static const struct config_enum_entry hybrid_cache_options[] = {
	{"auto", EDDY_HYBRID_CACHE_AUTO, false},
	{"on", EDDY_HYBRID_CACHE_ON, false},
	{"off", EDDY_HYBRID_CACHE_OFF, false},
	{NULL, 0, false}
};

static const struct config_enum_entry join_method_options[] = {
	{"auto", EDDY_JOIN_AUTO, false},
	{"hash", EDDY_JOIN_HASH, false},
	{"index", EDDY_JOIN_INDEX, false},
	{"hybrid", EDDY_JOIN_HYBRID, false},
	{NULL, 0, false}
};

/*
 * Memory an eddy or a static symmetric hash join may hold in join state:
 * eddy.max_memory if set, else one hash table's budget per STAIR
 * (work_mem x hash_mem_multiplier each, as PostgreSQL gives each of its
 * hash joins).
 */
Size
EddyMaxMemoryBytes(int nstairs)
{
	if (eddy_max_memory >= 0)
		return (Size) eddy_max_memory * 1024;
	return (Size) (get_hash_memory_limit() * (double) Max(nstairs, 1));
}

static const struct config_enum_entry policy_options[] = {
	{"rank", EDDY_POLICY_RANK, false},
	{"lottery", EDDY_POLICY_LOTTERY, false},
	{"fixed", EDDY_POLICY_FIXED, false},
	{"random", EDDY_POLICY_RANDOM, false},
	{"cumulative", EDDY_POLICY_CUMULATIVE, false},
	{NULL, 0, false}
};

const char *
EddyPolicyName(EddyRoutingPolicy policy)
{
	const struct config_enum_entry *e;

	for (e = policy_options; e->name != NULL; e++)
	{
		if (e->val == (int) policy)
			return e->name;
	}
	return "unknown";
}

void
EddyGucInit(void)
{
	/* on/off for the planner hook; off gives PostgreSQL's own plans */
	DefineCustomBoolVariable("eddy.enabled",
							 "Replaces select-project-join blocks by adaptive eddies.",
							 NULL,
							 &eddy_enabled,
							 true,
							 PGC_USERSET,
							 0,
							 NULL,
							 NULL,
							 NULL);

	/* 1 .. 10^9 tuples; 1 recomputes routing for every tuple */
	DefineCustomIntVariable("eddy.reopt_frequency",
							"Tuples routed between two recomputations of the eddy's routing decisions.",
							"1 recomputes the routing for every tuple; larger values batch the decisions.",
							&eddy_reopt_frequency,
							EDDY_DEFAULT_REOPT_FREQUENCY,
							EDDY_MIN_REOPT_FREQUENCY,
							EDDY_MAX_REOPT_FREQUENCY,
							PGC_USERSET,
							0,
							NULL,
							NULL,
							NULL);

	DefineCustomEnumVariable("eddy.routing_policy",
							 "Policy by which the eddy orders its operators.",
							 "rank: by observed selectivity and cost; lottery: lottery scheduling; "
							 "fixed: PostgreSQL's order; random: uniform; "
							 "cumulative: rank for selections, joins by the tuples they and the joins beyond them make.",
							 &eddy_routing_policy,
							 EDDY_POLICY_RANK,
							 policy_options,
							 PGC_USERSET,
							 0,
							 NULL,
							 NULL,
							 NULL);

	/* 0 .. 10^9 tuples; 0 keeps every ticket ever given */
	DefineCustomIntVariable("eddy.lottery_window",
							"Window, in routed tuples, after which the lottery forgets old tickets.",
							"0 disables the window: tickets accumulate over the whole query.",
							&eddy_lottery_window,
							EDDY_DEFAULT_LOTTERY_WINDOW,
							0,
							EDDY_MAX_LOTTERY_WINDOW,
							PGC_USERSET,
							0,
							NULL,
							NULL,
							NULL);

	/* a seed; 0 starts from the planner's estimates and its build order */
	DefineCustomIntVariable("eddy.random_start",
							"Starts each eddy from a random plan drawn from this seed (0: off).",
							"The sources are read in a random order and the first routing decisions follow a random order of the operators, "
							"as if the initial plan had been chosen at random; the routing policy then adapts as usual "
							"(the fixed policy keeps the random plan).  For robustness experiments.",
							&eddy_random_start,
							0,
							0,
							INT_MAX,
							PGC_USERSET,
							0,
							NULL,
							NULL,
							NULL);

	/* 0 .. 1000 planner cost units; 0 routes every predicate */
	DefineCustomRealVariable("eddy.selection_min_cost",
							 "Minimum estimated per-tuple cost of a predicate routed by the eddy.",
							 "Cheaper predicates stay on the scan; 0 makes every predicate a selection operator.",
							 &eddy_selection_min_cost,
							 EDDY_DEFAULT_SELECTION_MIN_COST,
							 0.0,
							 EDDY_MAX_SELECTION_MIN_COST,
							 PGC_USERSET,
							 0,
							 NULL,
							 NULL,
							 NULL);

	DefineCustomBoolVariable("eddy.filter_before_store",
							 "A base tuple passes its own relation's selections before a hash join stores it.",
							 "Off: the routing may send it to a join first, which stores it unfiltered "
							 "(the papers' free routing; it can store many times the rows).",
							 &eddy_filter_before_store,
							 true,
							 PGC_USERSET,
							 0,
							 NULL,
							 NULL,
							 NULL);

	DefineCustomBoolVariable("eddy.rank_lookahead",
							 "The rank policy also weighs the joins that lead to a filter a tuple cannot reach yet.",
							 "Off: each eligible module is scored alone, and a join that filters nothing "
							 "never goes before a selective one, even when it leads to a more selective filter.",
							 &eddy_rank_lookahead,
							 true,
							 PGC_USERSET,
							 0,
							 NULL,
							 NULL,
							 NULL);

	DefineCustomBoolVariable("eddy.hot_keys",
							 "An index join's probe of a key the statistics say is common waits for the tuple's filters.",
							 "Off: a tuple routed to an index join probes it whatever its key, even one that "
							 "matches a large share of the relation while a filter could still drop the tuple.",
							 &eddy_hot_keys,
							 true,
							 PGC_USERSET,
							 0,
							 NULL,
							 NULL,
							 NULL);

	DefineCustomBoolVariable("eddy.one_row_guard",
							 "Distrust PostgreSQL's one-row estimates where its index nested loops rest on them.",
							 "Under eddy.join_method = auto or hybrid, an index nested loop whose outer side holds a "
							 "relation of 1,000 rows or more with a filter clause the statistics say leaves no row by "
							 "itself (the estimate clamped to one; no unique key pinning it) becomes a hash join where "
							 "that is the choice of least regret, should the relation return all of its rows.",
							 &eddy_one_row_guard,
							 true,
							 PGC_USERSET,
							 0,
							 NULL,
							 NULL,
							 NULL);

	DefineCustomEnumVariable("eddy.hybrid_route",
							 "How a hybrid join answers a probe its SteM cannot answer yet.",
							 "auto: by the index lookups' observed cost against the rest of the scan; "
							 "index or hash: always that route; random: either, half and half (for tests). "
							 "Read when the node starts.",
							 &eddy_hybrid_route,
							 EDDY_HYBRID_AUTO,
							 hybrid_route_options,
							 PGC_USERSET,
							 0,
							 NULL,
							 NULL,
							 NULL);

	DefineCustomEnumVariable("eddy.hybrid_cache",
							 "Whether a hybrid join keeps the rows its index lookups fetch, to answer later probes of the same key.",
							 "auto: while the cache's hits save more time than building the rows costs, judged every 64 lookups; "
							 "on: always; off: never (each lookup is an index join's). "
							 "Read when the node starts.",
							 &eddy_hybrid_cache,
							 EDDY_HYBRID_CACHE_AUTO,
							 hybrid_cache_options,
							 PGC_USERSET,
							 0,
							 NULL,
							 NULL,
							 NULL);

	DefineCustomEnumVariable("eddy.index_cache",
							 "Whether an index join keeps the matches of its lookups, and its selections' results on them, to answer later probes of the same key (as PostgreSQL's Memoize).",
							 "auto: where the planner expects at least half the probes to repeat a key, until its first 4096 lookups hit less than a tenth of the time; "
							 "on: always; off: never. At most work_mem x hash_mem_multiplier per join. "
							 "Read when the node starts.",
							 &eddy_index_cache,
							 EDDY_HYBRID_CACHE_AUTO,
							 hybrid_cache_options,
							 PGC_USERSET,
							 0,
							 NULL,
							 NULL,
							 NULL);

	DefineCustomIntVariable("eddy.debug_index_delay",
							"Experiments: each index lookup of an index or hybrid join first sleeps this long.",
							"A slow index, for the SteMs paper's Figures 7 and 8; 0: none.",
							&eddy_debug_index_delay,
							0,
							0,
							1000000,
							PGC_USERSET,
							0,
							NULL,
							NULL,
							NULL);

	DefineCustomBoolVariable("eddy.static_shj",
							 "Replaces PostgreSQL's hash joins by static symmetric hash joins (when eddy.enabled is off).",
							 NULL,
							 &eddy_static_shj,
							 false,
							 PGC_USERSET,
							 0,
							 NULL,
							 NULL,
							 NULL);

	DefineCustomEnumVariable("eddy.parallel_exchange",
							 "Whether a parallel join eddy reads every source through a partial scan and exchanges its stored rows after each source.",
							 "auto: where that costs less than reading one source partially and every other whole in every process, and no more than PostgreSQL's parallel plan; always: wherever possible, whatever the costs (for tests and experiments); off: never.",
							 &eddy_parallel_exchange,
							 EDDY_EXCHANGE_AUTO,
							 exchange_options,
							 PGC_USERSET,
							 0,
							 NULL,
							 NULL,
							 NULL);

	DefineCustomEnumVariable("eddy.join_method",
							 "Join module of the eddy for each join edge.",
							 "auto: PostgreSQL's choice (index nested loop: index join, else symmetric hash join); "
							 "hash: symmetric hash joins; index: index joins wherever an index allows; "
							 "hybrid: as auto, but an index on a leaf relation's join keys makes a hybrid "
							 "index/hash join that chooses per tuple and caches index lookups.",
							 &eddy_join_method,
							 EDDY_JOIN_AUTO,
							 join_method_options,
							 PGC_USERSET,
							 0,
							 NULL,
							 NULL,
							 NULL);

	/* 2 .. 16 relations; larger blocks keep the vanilla plan */
	DefineCustomIntVariable("eddy.max_sources",
							"Largest number of relations one eddy may join.",
							NULL,
							&eddy_max_sources,
							EDDY_DEFAULT_MAX_SOURCES,
							2,
							EDDY_MAX_MAX_SOURCES,
							PGC_USERSET,
							0,
							NULL,
							NULL,
							NULL);

	/* -1: work_mem x hash_mem_multiplier per STAIR; else kB per eddy */
	DefineCustomIntVariable("eddy.max_memory",
							"Memory an eddy or symmetric hash join may use for join state.",
							"-1 gives each hash table (STAIR) work_mem times hash_mem_multiplier.",
							&eddy_max_memory,
							-1,
							-1,
							MAX_KILOBYTES,
							PGC_USERSET,
							GUC_UNIT_KB,
							NULL,
							NULL,
							NULL);

	DefineCustomEnumVariable("eddy.migration",
							 "When a join eddy moves its STAIRs' state to match its routing.",
							 "off: never; greedy: whenever the routing changed so that some stored entry is no longer where it would route it; "
							 "guarded: when that has held for a while and the intermediate tuples the misplaced entries would still make exceed the cost of rebuilding the state; "
							 "after a first move, only if those they made since they were found exceed it too, "
							 "or the entries all the moves so far rebuilt if fewer.",
							 &eddy_migration,
							 EDDY_MIGRATION_OFF,
							 migration_options,
							 PGC_USERSET,
							 0,
							 NULL,
							 NULL,
							 NULL);

	/* testing: a migration at every N-th point of stasis, whatever the policy */
	DefineCustomIntVariable("eddy.debug_migrate_every",
							"Forces a state migration at every N-th point of stasis (0: never), the interval doubling after every 8; for testing.",
							"Each forced migration rebuilds the join state under random routing, "
							"and checks the migration's invariants afterwards.",
							&eddy_debug_migrate_every,
							0,
							0,
							EDDY_MAX_DEBUG_MIGRATE_EVERY,
							PGC_USERSET,
							0,
							NULL,
							NULL,
							NULL);

	DefineCustomIntVariable("eddy.debug_spill_after",
							"Forces a join eddy to spill at the first point of stasis after N tuples routed (0: never); for testing.",
							"The spill writes the state and the unread input to temporary files "
							"and joins them in 4 batches, whatever the memory used.",
							&eddy_debug_spill_after,
							0,
							0,
							INT_MAX,
							PGC_USERSET,
							0,
							NULL,
							NULL,
							NULL);

	DefineCustomEnumVariable("eddy.state_mode",
							 "What the hash joins of a join eddy store.",
							 "stairs: every tuple routed to a join side, intermediate results included (STAIRs); "
							 "stems: base tuples of the side's own relation only, built when they arrive (SteMs).",
							 &eddy_state_mode,
							 EDDY_STATE_MODE_STAIRS,
							 state_mode_options,
							 PGC_USERSET,
							 0,
							 NULL,
							 NULL,
							 NULL);

	EddyScheduleGucInit();

	/* read-only: what EddyClockInit, which _PG_init calls first, chose */
	DefineCustomStringVariable("eddy.clock",
							   "Shows the clock that times the eddy's cost samples.",
							   "tsc: the CPU's time-stamp counter, read directly (x86-64 where the kernel's "
							   "clocksource is tsc); clock_gettime: CLOCK_MONOTONIC.",
							   &eddy_clock_name,
							   EddyClockName(),
							   PGC_INTERNAL,
							   GUC_NOT_IN_SAMPLE | GUC_DISALLOW_IN_FILE,
							   NULL,
							   NULL,
							   NULL);

	MarkGUCPrefixReserved("eddy");
}
