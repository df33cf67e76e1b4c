/*-------------------------------------------------------------------------
 *
 * eddy.h
 *	  Shared types, limits and entry points of the eddy extension.
 *
 * The extension adds a planner hook that replaces select-project-join
 * blocks by a CustomScan "Eddy" node.  The eddy reads tuples from its
 * source scans and routes each of them through a set of modules (for now:
 * selection operators), recomputing its routing decisions every
 * eddy.reopt_frequency tuples from what it observes: the adaptive query
 * processing of Avnur & Hellerstein (SIGMOD 2000), built inside PostgreSQL
 * the way Deshpande's overhead study (SIGMOD Record 2004) did for
 * TelegraphCQ.
 *
 * Files: init.c (module load), guc.c (settings), delay.c (the delay() SQL
 * function), planner.c (hooks and eligibility), clauses.c (clause helpers
 * shared by the planner-side files: security levels, PostgreSQL's qual
 * order, selection candidates, may-raise), plan.c (selection eddies:
 * CustomPath -> CustomScan), plan_join.c (join eddies), private.h (the
 * custom_private layout, the planner's contract with the executor), exec.c
 * (the executor node and EXPLAIN), join.c (the executor of join eddies),
 * routing.c (routing tables and policies), mod_selection.c (selection
 * operators), stair.c (STAIRs), shj.c (the static symmetric hash join).
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
	EDDY_JOIN_INDEX				/* index join wherever an index allows */
} EddyJoinMethod;

#define EDDY_DEFAULT_MAX_SOURCES	10
#define EDDY_MAX_MAX_SOURCES		16

typedef enum EddyRoutingPolicy
{
	EDDY_POLICY_RANK,			/* rank ordering on observed cost/selectivity */
	EDDY_POLICY_LOTTERY,		/* lottery scheduling (optionally windowed) */
	EDDY_POLICY_FIXED,			/* PostgreSQL's order: non-adaptive baseline */
	EDDY_POLICY_RANDOM			/* uniform among eligible operators */
} EddyRoutingPolicy;

/* Monotonic clock in nanoseconds (cost sampling, delay()) */
static inline double
eddy_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec * 1e9 + (double) ts.tv_nsec;
}

/* guc.c */
extern bool eddy_enabled;
extern int	eddy_reopt_frequency;
extern int	eddy_routing_policy;
extern int	eddy_lottery_window;
extern double eddy_selection_min_cost;
extern bool eddy_static_shj;
extern int	eddy_join_method;
extern int	eddy_max_sources;
extern int	eddy_max_memory;
extern void EddyGucInit(void);
extern Size EddyMaxMemoryBytes(int nstairs);
extern const char *EddyPolicyName(EddyRoutingPolicy policy);

/* planner.c */
extern void EddyPlannerInit(void);
extern bool EddyExtensionCreated(void);

/* exec.c */
extern void EddyExecInit(void);

/* join.c: the executor of join eddies */
typedef struct EddyJoinState EddyJoinState;
extern EddyJoinState *EddyJoinBegin(CustomScanState *node, EState *estate, int eflags);
extern TupleTableSlot *EddyJoinNext(EddyJoinState *js);
extern void EddyJoinEnd(EddyJoinState *js);
extern void EddyJoinRescan(EddyJoinState *js);
extern void EddyJoinExplain(EddyJoinState *js, List *ancestors,
							struct ExplainState *es);

/* shj.c: the static symmetric hash join node */
extern void EddyShjInit(void);

/*
 * A selection operator at run time: one predicate, its prerequisites, and
 * what the eddy observed of it.  The counters feed EXPLAIN ANALYZE (totals)
 * and the routing policy (routing.c keeps decayed copies).
 */
typedef struct EddyOperator
{
	ExprState  *qual;			/* predicate over the source's tuple */
	Expr	   *expr;			/* the same, for EXPLAIN */

	/*
	 * Fast path for "column op constant" with a strict operator (mod_selection.c):
	 * the operator's function is called directly on the deformed column.
	 */
	FunctionCallInfo fast_fcinfo;	/* NULL: evaluate qual */
	AttrNumber	fast_attno;		/* 0-based column of the scan tuple */
	int			fast_argno;		/* which argument the column is */

	uint32		prereq;			/* operators that must have passed first */
	double		est_sel;		/* planner's selectivity: the prior */
	double		est_cost_ns;	/* planner's cost, in ns: the prior */

	/* totals since the scan began; the hot path only increments the first two */
	uint64		tuples_in;
	uint64		tuples_dropped; /* tuples out = tuples_in - tuples_dropped */
	uint64		tuples_first;	/* tuples for which it was the first choice,
								 * counted per closed epoch */
	uint64		cost_samples;	/* timed evaluations */
	double		cost_ns;		/* their summed time */

	/* policy state, updated at each recomputation (routing.c) */
	uint64		seen_in;		/* totals at the previous recomputation */
	uint64		seen_out;
	uint64		seen_samples;
	double		seen_ns;
	double		w_in;			/* exponentially decayed statistics */
	double		w_out;
	double		w_samples;
	double		w_ns;
	int64		ticket_base;	/* lottery: (in - out) where the window began */
	int64		ticket_next_base;	/* ... and where the current one began */
	double		score;			/* rank or lottery weight; higher goes first */
} EddyOperator;

/* One run of the routing history: first choice and tuples routed under it */
typedef struct EddyHistoryRun
{
	int			op;
	uint64		tuples;
} EddyHistoryRun;

#define EDDY_ROUTE_OUTPUT		0xFF	/* routing table entry: emit the tuple */
#define EDDY_MAX_HISTORY_RUNS	1000

/*
 * The router: routing table indexed by a tuple's done bitmap, plus the
 * policy that fills it.  Entries are filled lazily: an entry whose epoch is
 * not the current one is recomputed on first use, so a recomputation costs
 * O(operators) however many signatures exist.
 */
typedef struct EddyRouter
{
	int			nops;
	EddyOperator *ops;
	EddyRoutingPolicy policy;
	int			reopt_frequency;
	int			lottery_window;
	uint8	   *route;			/* [1 << nops] next operator or OUTPUT */
	uint32	   *route_epoch;	/* [1 << nops] epoch of each entry */
	uint32		epoch;
	uint64		routed;			/* tuples routed until the last recomputation */
	int64		until_reopt;	/* tuples until the next one (hot path) */
	uint64		recomputations;
	uint64		stats_routed;	/* routed at the last statistics update */
	uint64		window_start;	/* lottery: routed when the window began */
	uint64		epoch_start;	/* routed when the current epoch began */
	int			epoch_first;	/* first choice of the current epoch, or -1 */
	int			order_len;		/* the route of a fresh tuple this epoch: */
	uint8		order[EDDY_MAX_SELECTIONS]; /* order[k] = route[order[0..k-1]] */
	pg_prng_state rng;
	EddyHistoryRun *history;
	int			nhistory;
	bool		history_truncated;
} EddyRouter;

/* routing.c */
extern void EddyRouterInit(EddyRouter *router, EddyOperator *ops, int nops,
						   EddyRoutingPolicy policy, int reopt_frequency,
						   int lottery_window, uint64 seed);
extern int	EddyRouterChoose(EddyRouter *router, uint32 done);
extern void EddyRouterReoptimize(EddyRouter *router);

/* Tuples routed so far */
static inline uint64
EddyRouterRouted(EddyRouter *router)
{
	return router->routed + (uint64) (router->reopt_frequency - router->until_reopt);
}

/* Next operator for a tuple whose done bitmap is done: one array lookup. */
static inline int
EddyRoute(EddyRouter *router, uint32 done)
{
	if (unlikely(router->route_epoch[done] != router->epoch))
		return EddyRouterChoose(router, done);
	return router->route[done];
}

/* mod_selection.c */
extern void EddySelectionInit(EddyOperator *op, Expr *expr, uint32 prereq,
							  double est_sel, double est_cost,
							  PlanState *parent);
extern bool EddySelectionEvalTimed(EddyOperator *op, ExprContext *econtext);
extern AttrNumber EddySelectionMaxAttno(EddyOperator *op);

/*
 * Evaluate a selection on econtext's scan tuple, in the per-tuple memory
 * context, with ExecQual semantics (NULL is false).  The fast path needs
 * the scan tuple deformed up to its column (the executor deforms every
 * column the operators read once per tuple).
 */
static inline bool
EddySelectionEval(EddyOperator *op, ExprContext *econtext)
{
	FunctionCallInfo fcinfo = op->fast_fcinfo;
	Datum		result;
	bool		isnull;

	if (fcinfo != NULL)
	{
		TupleTableSlot *slot = econtext->ecxt_scantuple;

		Assert(slot->tts_nvalid > op->fast_attno);
		if (slot->tts_isnull[op->fast_attno])
			return false;		/* strict operator on NULL */
		fcinfo->args[op->fast_argno].value = slot->tts_values[op->fast_attno];
		fcinfo->isnull = false;
		result = FunctionCallInvoke(fcinfo);
		return !fcinfo->isnull && DatumGetBool(result);
	}
	result = op->qual->evalfunc(op->qual, econtext, &isnull);
	return !isnull && DatumGetBool(result);
}

/* Time the routing of one tuple in this many (and the first one) */
#define EDDY_COST_SAMPLE_INTERVAL	128

/* join eddies: at most this many modules (done bitmaps are 64 bits) */
#define EDDY_MAX_MODULES		64

#endif							/* EDDY_H */
