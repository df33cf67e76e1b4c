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

#include "utils/guc.h"

bool		eddy_enabled = true;
int			eddy_reopt_frequency = EDDY_DEFAULT_REOPT_FREQUENCY;
int			eddy_routing_policy = EDDY_POLICY_RANK;
int			eddy_lottery_window = EDDY_DEFAULT_LOTTERY_WINDOW;
double		eddy_selection_min_cost = EDDY_DEFAULT_SELECTION_MIN_COST;

static const struct config_enum_entry policy_options[] = {
	{"rank", EDDY_POLICY_RANK, false},
	{"lottery", EDDY_POLICY_LOTTERY, false},
	{"fixed", EDDY_POLICY_FIXED, false},
	{"random", EDDY_POLICY_RANDOM, false},
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
							 "fixed: PostgreSQL's order; random: uniform.",
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

	MarkGUCPrefixReserved("eddy");
}
