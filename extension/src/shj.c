/*-------------------------------------------------------------------------
 *
 * shj.c
 *	  The static symmetric hash join: Custom Scan (Symmetric Hash Join).
 *
 * With eddy.enabled = off and eddy.static_shj = on, every inner Hash Join
 * PostgreSQL would have chosen runs as a symmetric hash join instead (the
 * "SHJ" baseline of the eddy studies: a pipelined join with no build phase,
 * the non-adaptive counterpart of an eddy routing over two dual STAIRs).
 * The plan is otherwise PostgreSQL's own, so the two can be compared node
 * for node.
 *
 * Planning.  A set_join_pathlist_hook looks at each join relation once
 * PostgreSQL has added its paths for a pair of inputs.  Every HashPath of
 * an inner join in the relation's pathlist is replaced, in place, by a
 * CustomPath with the same inputs (custom_paths = outer, inner), rows,
 * costs, parameterization and target: the competition between paths, and
 * so the plan's shape, is exactly what it would have been with the Hash
 * Join.  The hash clauses and the join's restriction clauses travel in the
 * path's custom_private (RestrictInfos: copyObject-safe).  Other join types
 * keep their Hash Join.  Partial inner HashPaths are dropped from the
 * partial pathlist, so that a parallel plan cannot keep a Parallel Hash
 * Join; the CustomPath itself is not parallel-safe.  (With
 * max_parallel_workers_per_gather = 0, as in the benchmarks, no partial
 * path exists and every path is parallel-unsafe anyway.)  The hook acts
 * only where CREATE EXTENSION eddy has run, and is chained.
 *
 * Plan.  A CustomScan with scanrelid 0 whose custom_scan_tlist is the outer
 * child's target list followed by the inner child's: setrefs rewrites the
 * target list and every expression of custom_exprs into INDEX_VAR
 * references to that combined tuple, whose first columns are the outer
 * child's and the rest the inner child's.  Layout of custom_exprs:
 *
 *	 outer keys (nkeys) | inner keys (nkeys) | join quals | one-time quals
 *
 * and custom_private is a List indexed by ShjPrivateIndex (the
 * postgres_fdw convention).  The hash clauses are turned, as
 * create_hashjoin_plan does, so that the outer key is the operator's left
 * input: side 0 of the STAIRs is the outer side.
 *
 * Deviations from PostgreSQL's CustomScan conventions, and why: the scan
 * clauses that create_customscan_plan hands to PlanCustomPath come from
 * baserestrictinfo and ppi_clauses, both empty for a join relation, so the
 * join clauses are taken from custom_private instead (postgres_fdw keeps
 * them in its fpinfo for the same reason).  Pseudoconstant join clauses:
 * PostgreSQL (15.4 and later) does not call join hooks for a join that has
 * them, so such a join keeps its Hash Join under its gating Result.  Should
 * one reach us anyway, create_scan_plan (which plans a CustomPath) would
 * not add the gating Result, so we evaluate those clauses ourselves once
 * per scan ("One-Time Filter") and read no input when they fail.
 *
 * Execution.  Tuples are read alternately from the inner and the outer
 * child, the inner first: PostgreSQL made it the build side, the smaller
 * one, and with an inner-unique join an outer tuple that arrives after its
 * match is never stored (below).  A tuple's join keys are hashed with its
 * side's hash functions (StairKeysHash); a NULL key can never match, so
 * such a tuple is dropped at once.  Otherwise the tuple probes the other
 * side's STAIR and each match becomes a combined tuple (the probing tuple's
 * columns come from its child's slot, the match's from its stored row), is
 * checked against the join quals and is projected.  Once its probe is
 * exhausted, the tuple is copied into node-owned memory and inserted into
 * its own side's STAIR, for the other side's future tuples to find, unless
 * the other side is exhausted (nothing will probe it any more).  When a side
 * ends with an empty STAIR, nothing the other side still holds can match:
 * the join ends.  With an inner-unique join (the planner proved that an
 * outer tuple matches at most one inner tuple) an outer tuple stops probing
 * at its first match and is not stored, since no later inner tuple can
 * match it.
 *
 *	 SHJ_START	evaluate the one-time quals (if any)
 *	 SHJ_READ	read the next tuple from the side whose turn it is; hash
 *				its keys; start its probe of the other STAIR
 *	 SHJ_PROBE	return the probe's next match that passes the join
 *				quals; when there are no more, store the tuple
 *	 SHJ_DONE	both sides exhausted (or nothing more can match)
 *
 * The schedule.  By default (eddy.source_schedule = build) the sides are
 * read alternately, as above.  Under eddy.source_schedule = proportional
 * the next side is the one whose share read is smallest, rows read over
 * the planner's rows of the child times its rate, as the Eddy schedules
 * its sources (schedule.c), so that the two inputs end together.
 * eddy.source_rates and eddy.source_delays apply to the inputs that are
 * base relations, by alias (EddyPlanSourceName: a scan, possibly under a
 * Result or Material).  An input that is itself a static SHJ is paced by
 * the base relations under it: its share is the smallest share among its
 * own inputs that are neither exhausted nor held back, and under this
 * schedule it reads stepwise, handing control back to its parent (NULL,
 * with would_block set and no time to wait for) after each tuple it reads,
 * so that the topmost join chooses every read of the tree and the base
 * relations are read at their rates, as an eddy reads its sources.  (A
 * join input that is not a static SHJ has rate 1 and its planned rows are
 * the join's estimate.)  A delayed input is not read before its delay has
 * passed since the first read of the tree of static SHJs it belongs to
 * (a join whose input is itself a static SHJ passes its clock down), the
 * other input is read meanwhile.  A join whose input is a static SHJ
 * polls it: when nothing under that child is ready, the child returns NULL
 * with would_block set and the time its first held-back input is due
 * (instead of sleeping), and the parent reads its other input until then.
 * When no input is ready, the topmost join sleeps on its latch until the
 * first is due (WaitLatch with a timeout, then CHECK_FOR_INTERRUPTS, as
 * the Eddy does): no spinning, and cancel and statement_timeout are
 * honoured.  The settings are read when the node starts; a rescan starts
 * the delays again.  With none of them the read path is the plain
 * alternation, without a clock.
 *
 * Invariant: every pair of tuples with equal keys is produced exactly once,
 * by whichever of the two arrived second; the first one is in its STAIR by
 * then, because a tuple is stored before the next tuple is read.
 *
 * A stored row is a Datum/isnull array of the child's columns with the
 * by-reference values copied after it (expanded objects are flattened),
 * carved from an EddyArena (stair.h), which also holds the STAIR entries:
 * no per-row allocation or header, and blocks pooled by the backend, so
 * that a query does not fault its state in page by page.  A join key that
 * is a plain column is read from the row, a computed key is evaluated on
 * the child's slot and copied.  A STAIR's slot array is sized from the
 * planner's row estimate of its side at its first insertion, as a Hash
 * Join sizes its table, so that it does not grow by repeated doubling.
 * The arena and its context (the slot arrays) are the join's state: its
 * size is checked after every insertion against eddy.max_memory
 * (EddyMaxMemoryBytes(2): two hash tables' worth of work_mem x
 * hash_mem_multiplier by default), and past it the query ends with an
 * ERROR naming the setting.  There is no spilling to disk.
 *
 * ReScan resets the arena and both STAIRs and rescans the children
 * (through chgParam when parameters changed).  Mark/restore and backward
 * scans are not supported: the planner adds a Material node where it needs
 * them, as it does for a Hash Join.
 *
 * EXPLAIN shows the hash condition and the join filter as a Hash Join
 * does, and, when the schedule is not plain alternation, "Source
 * Schedule: alternate (t3 delay 20 ms)" (or proportional, with rates) as
 * an Eddy shows its own; with ANALYZE, per side the tuples inserted into
 * its STAIR, the tuples that probed the other STAIR and the matches those
 * probes found (totals over all loops), and the peak memory of the join
 * state; with a schedule, also the tuples read per side ("Tuples Read"),
 * when each delayed input was first read ("First Read: t3 after 20.4
 * ms", the first loop's: the delay honoured), and, at the topmost join of
 * a delayed tree, how often and how long it slept on its latch.
 *
 *-------------------------------------------------------------------------
 */
#include "eddy.h"

#include <math.h>

#include "commands/explain.h"
#include "executor/instrument.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/appendinfo.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/restrictinfo.h"
#include "utils/datum.h"
#include "utils/expandeddatum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/ruleutils.h"
#include "utils/timestamp.h"
#include "port/pg_bitutils.h"

#include "clauses.h"
#include "stair.h"

#define SHJ_NODE_NAME			"Symmetric Hash Join"

/* Sides of the join; also the STAIR side of its keys (outer = left input) */
#define SHJ_OUTER				0
#define SHJ_INNER				1

/* Entries presized from an estimate that is not a scan's, at most (4 MB) */
#define SHJ_PRESIZE_UNTRUSTED	131072.0

/* Executor states */
#define SHJ_START				1
#define SHJ_READ				2
#define SHJ_PROBE				3
#define SHJ_DONE				4


/*
 * custom_private of the CustomPath: the HashPath's clauses.
 */
enum ShjPathPrivateIndex
{
	/* List of RestrictInfo: the hash clauses (path_hashclauses) */
	ShjPathPrivHashClauses,
	/* List of RestrictInfo: every clause of the join (joinrestrictinfo) */
	ShjPathPrivJoinClauses,
	/* Integer: 1 if each outer tuple matches at most one inner tuple */
	ShjPathPrivInnerUnique,
	ShjPathPrivNumItems
};

/*
 * custom_private of the CustomScan.  custom_exprs holds the outer keys, the
 * inner keys, the join quals and the one-time quals, in that order.
 */
enum ShjPrivateIndex
{
	/* OID list: per key, the join operator (outer key is its left input) */
	ShjPrivHashOperators,
	/* OID list: per key, the operator's input collation */
	ShjPrivHashCollations,
	/* Integer: number of join quals in custom_exprs, after the keys */
	ShjPrivNumJoinQuals,
	/* Integer: 1 if each outer tuple matches at most one inner tuple */
	ShjPrivInnerUnique,
	ShjPrivNumItems
};

/*
 * custom_private and custom_exprs read back: the hash operators and their
 * collations per key, and custom_exprs cut into its four lists.
 */
typedef struct ShjPlanLists
{
	List	   *ops;
	List	   *colls;
	int			nkeys;
	List	   *keys[2];		/* outer keys, inner keys */
	List	   *joinquals;
	List	   *onetime_quals;
	bool		inner_unique;
} ShjPlanLists;

struct ShjState;

/* One input of the join at run time */
typedef struct ShjSide
{
	PlanState  *ps;				/* the child */
	struct ShjState *child_shj; /* the child, if it is a static SHJ: polled */
	char	   *name;			/* a base relation's alias, or NULL */
	double		est_rows;		/* the planner's rows of the child */
	double		rate;			/* eddy.source_rates (proportional schedule) */
	double		delay_ms;		/* eddy.source_delays */
	TimestampTz ready_at;		/* not read before this; 0: ready */
	double		first_read_ms;	/* delayed: first read after start, or -1 */
	uint64		nread;			/* tuples read, over all loops */
	uint64		nread_loop;		/* ... in this loop (the schedule's count) */
	Stair	   *stair;			/* this side's stored tuples, by key */
	int			natts;			/* columns of the child's target list */
	int			offset;			/* its first column in the combined tuple */
	int16	   *attlen;			/* per column */
	bool	   *attbyval;
	bool		byval_only;		/* every column by value: a row is a memcpy */
	Size	   *datasize;		/* per column: scratch, by-reference sizes */
	Size		row_header;		/* MAXALIGN(natts * (Datum + bool)) */
	int			nkeys;
	int		   *key_col;		/* per key: 0-based column, or -1: computed */
	ExprState **key_expr;		/* per computed key: over the child's slot */
	int16	   *key_len;		/* per computed key: its type's length */
	bool	   *key_byval;
	bool		any_key_expr;
	Datum	   *keys;			/* the current tuple's keys */
	bool	   *keynull;
	bool		exhausted;
} ShjSide;

typedef struct ShjState
{
	CustomScanState css;		/* must be first */
	ShjSide		side[2];		/* SHJ_OUTER, SHJ_INNER */
	StairJoinKeys keys;			/* hashing and equality of the join keys */
	EddyArena	arena;			/* rows and STAIR entries: the join state */
	bool		ended;			/* EndCustomScan ran: the arena is gone */
	ExprContext *key_econtext;	/* computed keys of the current input tuple */
	ExprState  *joinqual;		/* other join quals, on the combined tuple */
	ExprState  *onetime_qual;	/* pseudoconstant quals, once per scan */
	bool		inner_unique;
	Size		max_memory;		/* eddy.max_memory, in bytes */
	Size		peak_memory;	/* over all loops */
	int			state;			/* SHJ_* */
	int			next_side;		/* whose turn it is to be read */
	Datum	   *insert_keys;	/* scratch: the keys of a stored row */

	/* the schedule of the reads (eddy.source_schedule, _rates, _delays) */
	int			schedule;		/* EDDY_SCHEDULE_*; build: alternately */
	bool		listed;			/* a side has a rate or a delay */
	bool		paced;			/* not just alternately: proportional, a
								 * delay, or a child that may be held back */
	bool		delayed;		/* a delay here or in a polled child */
	struct ShjState *parent;	/* the static SHJ that polls this one */
	TimestampTz start_time;		/* of this loop's first read, when paced */
	int			nwaiting;		/* sides with a ready_at still to come */
	bool		would_block;	/* polled: returned NULL, nothing ready */
	TimestampTz block_until;	/* ... until then; 0: ready, it stepped */
	bool		stepwise;		/* polled under the proportional schedule:
								 * hands control back after each read */
	bool		stepped;		/* ... and read a tuple since it last did */
	uint64		nwaits;			/* latch waits, over all loops */
	double		waited_ms;		/* ... and the time slept */

	/* the tuple being probed */
	int			probe_side;
	TupleTableSlot *probe_slot; /* its child's slot (valid until next read) */
	bool		probe_in_slot;	/* its columns are in the scan slot */
	uint32		probe_hash;
	StairProbe	probe;
} ShjState;

static set_join_pathlist_hook_type prev_set_join_pathlist_hook = NULL;

static void shj_set_join_pathlist(PlannerInfo *root, RelOptInfo *joinrel,
								  RelOptInfo *outerrel, RelOptInfo *innerrel,
								  JoinType jointype, JoinPathExtraData *extra);
static Plan *shj_plan_custom_path(PlannerInfo *root, RelOptInfo *rel,
								  CustomPath *best_path, List *tlist,
								  List *clauses, List *custom_plans);
static List *shj_reparameterize(PlannerInfo *root, List *custom_private,
								RelOptInfo *child_rel);
static Node *shj_create_scan_state(CustomScan *cscan);
static void shj_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *shj_exec(CustomScanState *node);
static TupleTableSlot *shj_exec_node(PlanState *pstate);
static void shj_end(CustomScanState *node);
static void shj_rescan(CustomScanState *node);
static void shj_explain(CustomScanState *node, List *ancestors,
						ExplainState *es);

static const CustomPathMethods shj_path_methods = {
	.CustomName = SHJ_NODE_NAME,
	.PlanCustomPath = shj_plan_custom_path,
	.ReparameterizeCustomPathByChild = shj_reparameterize,
};

static const CustomScanMethods shj_scan_methods = {
	.CustomName = SHJ_NODE_NAME,
	.CreateCustomScanState = shj_create_scan_state,
};

static const CustomExecMethods shj_exec_methods = {
	.CustomName = SHJ_NODE_NAME,
	.BeginCustomScan = shj_begin,
	.ExecCustomScan = shj_exec,
	.EndCustomScan = shj_end,
	.ReScanCustomScan = shj_rescan,
	.ExplainCustomScan = shj_explain,
};

void
EddyShjInit(void)
{
	RegisterCustomScanMethods(&shj_scan_methods);

	prev_set_join_pathlist_hook = set_join_pathlist_hook;
	set_join_pathlist_hook = shj_set_join_pathlist;
}

/* ----------------------------------------------------------------
 *		Planning
 * ----------------------------------------------------------------
 */

/* A path the static symmetric hash join replaces */
static bool
shj_is_candidate(Path *path)
{
	return IsA(path, HashPath) &&
		((HashPath *) path)->jpath.jointype == JOIN_INNER;
}

/*
 * The CustomPath standing in for an inner HashPath: same inputs, same
 * estimates, same parameterization and target.  The HashPath itself is no
 * longer in any list; its clause lists are shared, not copied (the planner
 * never frees them).
 */
static Path *
shj_create_path(HashPath *hpath)
{
	CustomPath *cpath = makeNode(CustomPath);
	JoinPath   *jpath = &hpath->jpath;

	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = jpath->path.parent;
	cpath->path.pathtarget = jpath->path.pathtarget;
	cpath->path.param_info = jpath->path.param_info;
	cpath->path.parallel_aware = false;
	cpath->path.parallel_safe = false;
	cpath->path.parallel_workers = 0;
	cpath->path.rows = jpath->path.rows;
	cpath->path.startup_cost = jpath->path.startup_cost;
	cpath->path.total_cost = jpath->path.total_cost;
	cpath->path.pathkeys = jpath->path.pathkeys;
	cpath->flags = CUSTOMPATH_SUPPORT_PROJECTION;
	cpath->custom_paths = list_make2(jpath->outerjoinpath, jpath->innerjoinpath);
	cpath->custom_private = list_make3(hpath->path_hashclauses,
									   jpath->joinrestrictinfo,
									   makeInteger(jpath->inner_unique ? 1 : 0));
	cpath->methods = &shj_path_methods;
	return &cpath->path;
}

/*
 * set_join_pathlist_hook: replace the join relation's inner HashPaths.
 * Called once per pair of inputs, after PostgreSQL added that pair's paths,
 * so each HashPath is seen (and replaced) by the call that made it.
 */
static void
shj_set_join_pathlist(PlannerInfo *root, RelOptInfo *joinrel,
					  RelOptInfo *outerrel, RelOptInfo *innerrel,
					  JoinType jointype, JoinPathExtraData *extra)
{
	bool		found = false;
	ListCell   *lc;

	if (prev_set_join_pathlist_hook)
		prev_set_join_pathlist_hook(root, joinrel, outerrel, innerrel,
									jointype, extra);

	if (eddy_enabled || !eddy_static_shj)
		return;

	foreach(lc, joinrel->pathlist)
	{
		if (shj_is_candidate((Path *) lfirst(lc)))
			found = true;
	}
	foreach(lc, joinrel->partial_pathlist)
	{
		if (shj_is_candidate((Path *) lfirst(lc)))
			found = true;
	}
	if (!found || !EddyExtensionCreated())
		return;

	/* in place: the list stays sorted, since costs do not change */
	foreach(lc, joinrel->pathlist)
	{
		Path	   *path = (Path *) lfirst(lc);

		if (shj_is_candidate(path))
			lfirst(lc) = shj_create_path((HashPath *) path);
	}
	foreach(lc, joinrel->partial_pathlist)
	{
		if (shj_is_candidate((Path *) lfirst(lc)))
			joinrel->partial_pathlist =
				foreach_delete_current(joinrel->partial_pathlist, lc);
	}
}

/*
 * Partitionwise join: translate the clauses to a child join, as
 * reparameterize_path_by_child does for a HashPath.
 */
static List *
shj_reparameterize(PlannerInfo *root, List *custom_private,
				   RelOptInfo *child_rel)
{
	Node	   *hashclauses = list_nth(custom_private, ShjPathPrivHashClauses);
	Node	   *joinclauses = list_nth(custom_private, ShjPathPrivJoinClauses);

	hashclauses = adjust_appendrel_attrs_multilevel(root, hashclauses,
													child_rel->relids,
													child_rel->top_parent_relids);
	joinclauses = adjust_appendrel_attrs_multilevel(root, joinclauses,
													child_rel->relids,
													child_rel->top_parent_relids);
	return list_make3(hashclauses, joinclauses,
					  list_nth(custom_private, ShjPathPrivInnerUnique));
}

/* Copies of the children's target lists, one after the other */
static List *
shj_scan_tlist(List *outer_tlist, List *inner_tlist)
{
	List	   *result = NIL;
	AttrNumber	resno = 1;
	ListCell   *lc;

	foreach(lc, list_concat_copy(outer_tlist, inner_tlist))
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		result = lappend(result,
						 makeTargetEntry(copyObject(tle->expr), resno++,
										 tle->resname ? pstrdup(tle->resname) : NULL,
										 false));
	}
	return result;
}

static Plan *
shj_plan_custom_path(PlannerInfo *root, RelOptInfo *rel,
					 CustomPath *best_path, List *tlist,
					 List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);
	Plan	   *outer_plan = linitial(custom_plans);
	Plan	   *inner_plan = lsecond(custom_plans);
	Path	   *outer_path = linitial(best_path->custom_paths);
	Relids		outer_relids = outer_path->parent->relids;
	List	   *hashrinfos = list_nth(best_path->custom_private,
									  ShjPathPrivHashClauses);
	List	   *joinrinfos = list_nth(best_path->custom_private,
									  ShjPathPrivJoinClauses);
	int			inner_unique = intVal(list_nth(best_path->custom_private,
											   ShjPathPrivInnerUnique));
	List	   *hashops = NIL;
	List	   *hashcolls = NIL;
	List	   *outer_keys = NIL;
	List	   *inner_keys = NIL;
	List	   *joinquals;
	List	   *onetime;
	ListCell   *lc;

	/*
	 * A join relation has no restriction clauses of its own and its
	 * ParamPathInfos carry none either, so clauses is empty; should that
	 * ever change, they are join quals like the others.
	 */
	if (clauses != NIL)
		joinrinfos = list_concat_unique_ptr(list_copy(joinrinfos), clauses);

	/* as create_join_plan orders them */
	joinrinfos = EddyOrderQualClauses(root, joinrinfos);
	joinquals = list_difference(extract_actual_clauses(joinrinfos, false),
								get_actual_clauses(hashrinfos));
	onetime = extract_actual_clauses(joinrinfos, true);

	/* hash clauses turned so that the outer key is the left input */
	foreach(lc, hashrinfos)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
		OpExpr	   *clause = castNode(OpExpr, rinfo->clause);

		if (bms_is_subset(rinfo->right_relids, outer_relids))
		{
			OpExpr	   *temp = makeNode(OpExpr);

			temp->opno = clause->opno;
			temp->opfuncid = InvalidOid;
			temp->opresulttype = clause->opresulttype;
			temp->opretset = clause->opretset;
			temp->opcollid = clause->opcollid;
			temp->inputcollid = clause->inputcollid;
			temp->args = list_copy(clause->args);
			temp->location = clause->location;
			CommuteOpExpr(temp);
			clause = temp;
		}
		else
			Assert(bms_is_subset(rinfo->left_relids, outer_relids));
		hashops = lappend_oid(hashops, clause->opno);
		hashcolls = lappend_oid(hashcolls, clause->inputcollid);
		outer_keys = lappend(outer_keys, linitial(clause->args));
		inner_keys = lappend(inner_keys, lsecond(clause->args));
	}

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = NIL;
	cscan->scan.scanrelid = 0;
	cscan->flags = best_path->flags;
	cscan->custom_plans = custom_plans;
	cscan->custom_exprs = list_concat(list_concat(outer_keys, inner_keys),
									  list_concat(list_copy(joinquals),
												  onetime));
	cscan->custom_private = list_make4(hashops, hashcolls,
									   makeInteger(list_length(joinquals)),
									   makeInteger(inner_unique));
	cscan->custom_scan_tlist = shj_scan_tlist(outer_plan->targetlist,
											  inner_plan->targetlist);
	cscan->custom_relids = NULL;	/* set by the caller */
	cscan->methods = &shj_scan_methods;

	return &cscan->scan.plan;
}

/* ----------------------------------------------------------------
 *		Execution
 * ----------------------------------------------------------------
 */

static Node *
shj_create_scan_state(CustomScan *cscan)
{
	ShjState   *state = palloc0(sizeof(ShjState));

	NodeSetTag(state, T_CustomScanState);
	state->css.methods = &shj_exec_methods;
	return (Node *) state;
}

/* count elements of list from the start-th (0-based), as a new list */
static List *
shj_sublist(List *list, int start, int count)
{
	return list_copy_head(list_copy_tail(list, start), count);
}

/* Read custom_private and cut custom_exprs as ShjPrivateIndex documents */
static void
shj_plan_lists(CustomScan *cscan, ShjPlanLists *pl)
{
	List	   *exprs = cscan->custom_exprs;
	int			nexprs = list_length(exprs);
	int			njoinquals = intVal(list_nth(cscan->custom_private,
											 ShjPrivNumJoinQuals));

	Assert(list_length(cscan->custom_private) == ShjPrivNumItems);
	pl->ops = list_nth(cscan->custom_private, ShjPrivHashOperators);
	pl->colls = list_nth(cscan->custom_private, ShjPrivHashCollations);
	pl->nkeys = list_length(pl->ops);
	Assert(pl->nkeys > 0 && nexprs >= 2 * pl->nkeys + njoinquals);
	pl->keys[SHJ_OUTER] = shj_sublist(exprs, 0, pl->nkeys);
	pl->keys[SHJ_INNER] = shj_sublist(exprs, pl->nkeys, pl->nkeys);
	pl->joinquals = shj_sublist(exprs, 2 * pl->nkeys, njoinquals);
	pl->onetime_quals = shj_sublist(exprs, 2 * pl->nkeys + njoinquals,
									nexprs - 2 * pl->nkeys - njoinquals);
	pl->inner_unique = intVal(list_nth(cscan->custom_private,
									   ShjPrivInnerUnique)) != 0;
}

/* Shift INDEX_VAR references of a key down to its child's columns */
static Node *
shj_shift_vars_mutator(Node *node, int *offset)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var) && ((Var *) node)->varno == INDEX_VAR)
	{
		Var		   *var = copyObject((Var *) node);

		var->varattno -= *offset;
		Assert(var->varattno > 0);
		return (Node *) var;
	}
	return expression_tree_mutator(node, shj_shift_vars_mutator, offset);
}

/* The child's column a key reads, if the key is a plain column; else -1 */
static int
shj_key_column(Expr *key, int offset, int natts)
{
	while (IsA(key, RelabelType))
		key = ((RelabelType *) key)->arg;
	if (IsA(key, Var) && ((Var *) key)->varno == INDEX_VAR)
	{
		int			col = ((Var *) key)->varattno - 1 - offset;

		if (col >= 0 && col < natts)
			return col;
	}
	return -1;
}

static void
shj_init_side(ShjState *state, int s, Plan *plan, List *keys, EState *estate,
			  int eflags)
{
	ShjSide    *side = &state->side[s];
	PlanState  *ps = &state->css.ss.ps;
	TupleDesc	desc;
	int			i;

	side->ps = ExecInitNode(plan, estate, eflags);
	desc = ExecGetResultType(side->ps);

	/* its schedule: a base relation by its alias, a static SHJ polled */
	side->est_rows = plan->plan_rows;
	side->rate = 1.0;
	side->delay_ms = 0;
	side->first_read_ms = -1;
	side->name = EddyPlanSourceName(plan, estate->es_range_table);
	if (side->name != NULL)
	{
		(void) EddySourceListValue(eddy_source_rates, side->name, &side->rate);
		(void) EddySourceListValue(eddy_source_delays, side->name,
								   &side->delay_ms);
	}
	if (IsA(side->ps, CustomScanState) &&
		((CustomScanState *) side->ps)->methods == &shj_exec_methods)
	{
		side->child_shj = (struct ShjState *) side->ps;
		side->child_shj->parent = state;
	}
	side->natts = list_length(plan->targetlist);
	Assert(side->natts == desc->natts);
	side->offset = s == SHJ_OUTER ? 0 : state->side[SHJ_OUTER].natts;

	side->attlen = palloc(sizeof(int16) * Max(side->natts, 1));
	side->attbyval = palloc(sizeof(bool) * Max(side->natts, 1));
	side->datasize = palloc(sizeof(Size) * Max(side->natts, 1));
	side->byval_only = true;
	for (i = 0; i < side->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		side->attlen[i] = att->attlen;
		side->attbyval[i] = att->attbyval;
		if (!att->attbyval)
			side->byval_only = false;
	}
	side->row_header = MAXALIGN(side->natts * (sizeof(Datum) + sizeof(bool)));

	side->nkeys = list_length(keys);
	side->key_col = palloc(sizeof(int) * side->nkeys);
	side->key_expr = palloc0(sizeof(ExprState *) * side->nkeys);
	side->key_len = palloc0(sizeof(int16) * side->nkeys);
	side->key_byval = palloc0(sizeof(bool) * side->nkeys);
	side->keys = palloc0(sizeof(Datum) * side->nkeys);
	side->keynull = palloc0(sizeof(bool) * side->nkeys);
	for (i = 0; i < side->nkeys; i++)
	{
		Expr	   *key = list_nth(keys, i);
		const TupleTableSlotOps *scanops = ps->scanops;
		bool		scanopsfixed = ps->scanopsfixed;
		bool		scanopsset = ps->scanopsset;

		side->key_col[i] = shj_key_column(key, side->offset, side->natts);
		if (side->key_col[i] >= 0)
			continue;

		/*
		 * A computed key runs on the child's slot, whose type the scan slot
		 * information of this node does not describe: compile it for a slot
		 * of any type.
		 */
		key = (Expr *) shj_shift_vars_mutator((Node *) key, &side->offset);
		ps->scanops = NULL;
		ps->scanopsfixed = false;
		ps->scanopsset = true;
		side->key_expr[i] = ExecInitExpr(key, ps);
		ps->scanops = scanops;
		ps->scanopsfixed = scanopsfixed;
		ps->scanopsset = scanopsset;
		get_typlenbyval(exprType((Node *) key), &side->key_len[i],
						&side->key_byval[i]);
		side->any_key_expr = true;
	}
}

/*
 * Size a STAIR's slot array for the rows its side is expected to store
 * (the planner's estimate, as PostgreSQL sizes a Hash Join's table), so
 * that it does not grow by doubling, rehashing every hash group each time.
 * At most a quarter of eddy.max_memory goes to slots.  Done at the
 * first insertion, so that a STAIR that is only probed (the outer side of
 * an inner-unique join often stores nothing) keeps its small initial array.
 * The estimate of a scan is bounded by its relation; that of a join (a
 * tree of static SHJs) or of any other node with inputs may be off by
 * orders of magnitude, so it sizes the array up to SHJ_PRESIZE_UNTRUSTED
 * entries only and the array grows from there if it must (the STAIRs
 * experiments' Figure 8: 790 MB of slots for 12,142 rows under
 * eddy.max_memory = 4GB).
 */
static void
shj_presize(ShjState *state, ShjSide *side)
{
	Plan	   *plan = side->ps->plan;
	double		rows = plan->plan_rows;
	double		cap = (double) state->max_memory / 4 /
		STAIR_PRESIZE_BYTES_PER_ENTRY;

	if (plan->lefttree != NULL || plan->righttree != NULL || IsA(plan, CustomScan))
		cap = Min(cap, SHJ_PRESIZE_UNTRUSTED);
	StairPresize(side->stair, Min(rows, cap));
}

static void
shj_begin(CustomScanState *node, EState *estate, int eflags)
{
	ShjState   *state = (ShjState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	ShjPlanLists pl;
	int			s;

	shj_plan_lists(cscan, &pl);
	/* the planner adds a Material node where these are needed */
	Assert(!(eflags & (EXEC_FLAG_BACKWARD | EXEC_FLAG_MARK)));

	state->inner_unique = pl.inner_unique;
	shj_init_side(state, SHJ_OUTER, linitial(cscan->custom_plans),
				  pl.keys[SHJ_OUTER], estate, eflags);
	shj_init_side(state, SHJ_INNER, lsecond(cscan->custom_plans),
				  pl.keys[SHJ_INNER], estate, eflags);
	node->custom_ps = list_make2(state->side[SHJ_OUTER].ps,
								 state->side[SHJ_INNER].ps);
	Assert(state->side[SHJ_OUTER].natts + state->side[SHJ_INNER].natts ==
		   node->ss.ss_ScanTupleSlot->tts_tupleDescriptor->natts);

	/* the join and one-time quals run on the combined (virtual) tuple */
	state->joinqual = ExecInitQual(pl.joinquals, &node->ss.ps);
	state->onetime_qual = ExecInitQual(pl.onetime_quals, &node->ss.ps);
	state->key_econtext = CreateExprContext(estate);
	state->insert_keys = palloc0(sizeof(Datum) * pl.nkeys);

	StairJoinKeysInit(&state->keys, pl.ops, pl.colls);
	/* the arena's context is a child of the per-query one, ShjState in it */
	EddyArenaInit(&state->arena,
				  AllocSetContextCreate(CurrentMemoryContext,
										"Symmetric Hash Join",
										ALLOCSET_DEFAULT_SIZES));
	state->max_memory = EddyMaxMemoryBytes(2);
	for (s = 0; s < 2; s++)
		state->side[s].stair = StairCreateInArena(&state->keys, s,
												  &state->arena);
	state->state = SHJ_START;
	state->next_side = SHJ_INNER;

	/* the schedule, from the settings as they are when the node starts */
	state->schedule = eddy_source_schedule;
	state->paced = state->schedule != EDDY_SCHEDULE_BUILD;
	for (s = 0; s < 2; s++)
	{
		ShjSide    *side = &state->side[s];

		if (side->rate != 1.0 || side->delay_ms > 0)
			state->listed = true;
		if (side->delay_ms > 0 ||
			(side->child_shj != NULL && side->child_shj->delayed))
			state->delayed = true;
		if (state->delayed ||
			(side->child_shj != NULL && side->child_shj->paced))
			state->paced = true;
	}

	/* skip ExecCustomScan's trampoline: ExecInitNode installs this one */
	node->ss.ps.ExecProcNode = shj_exec_node;
}

/* Bytes a by-reference value takes once copied (expanded: flattened) */
static inline Size
shj_datum_size(Datum value, int16 typlen)
{
	if (typlen == -1)
	{
		if (VARATT_IS_EXTERNAL_EXPANDED(DatumGetPointer(value)))
			return EOH_get_flat_size(DatumGetEOHP(value));
		return VARSIZE_ANY(DatumGetPointer(value));
	}
	if (typlen == -2)
		return strlen(DatumGetCString(value)) + 1;
	return typlen;
}

/* Copy a by-reference value of the given size to dest */
static inline Datum
shj_datum_copy_to(Datum value, int16 typlen, Size size, char *dest)
{
	if (typlen == -1 && VARATT_IS_EXTERNAL_EXPANDED(DatumGetPointer(value)))
		EOH_flatten_into(DatumGetEOHP(value), dest, size);
	else
		memcpy(dest, DatumGetPointer(value), size);
	return PointerGetDatum(dest);
}

/*
 * Copy the child's current tuple (deformed in its slot) into the join's
 * memory: values[natts], isnull[natts], then the by-reference data.
 */
static Datum *
shj_store_row(ShjState *state, ShjSide *side, TupleTableSlot *slot)
{
	int			natts = side->natts;
	Size		size = side->row_header;
	Datum	   *values;
	bool	   *isnull;
	char	   *data;
	int			i;

	if (!side->byval_only)
	{
		for (i = 0; i < natts; i++)
		{
			if (side->attbyval[i] || slot->tts_isnull[i])
				continue;
			side->datasize[i] = shj_datum_size(slot->tts_values[i],
											   side->attlen[i]);
			size += MAXALIGN(side->datasize[i]);
		}
	}
	values = (Datum *) EddyArenaAlloc(&state->arena, size);
	isnull = (bool *) (values + natts);
	memcpy(values, slot->tts_values, sizeof(Datum) * natts);
	memcpy(isnull, slot->tts_isnull, sizeof(bool) * natts);
	if (!side->byval_only)
	{
		data = (char *) values + side->row_header;
		for (i = 0; i < natts; i++)
		{
			if (side->attbyval[i] || isnull[i])
				continue;
			values[i] = shj_datum_copy_to(values[i], side->attlen[i],
										  side->datasize[i], data);
			data += MAXALIGN(side->datasize[i]);
		}
	}
	return values;
}

/*
 * The join state's size: the arena's blocks, and what lives in its context
 * (the STAIRs' slot arrays).  join.c counts the same way.
 */
static inline Size
shj_memory_used(ShjState *state)
{
	return state->arena.allocated +
		MemoryContextMemAllocated(state->arena.cxt, false);
}

static void
shj_memory_error(ShjState *state)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("symmetric hash join state exceeds eddy.max_memory (%zu kB)",
					state->max_memory / 1024),
			 errdetail("The join had stored " UINT64_FORMAT " outer and "
					   UINT64_FORMAT " inner rows.",
					   state->side[SHJ_OUTER].stair->nentries,
					   state->side[SHJ_INNER].stair->nentries),
			 errhint("Raise eddy.max_memory, or work_mem / hash_mem_multiplier when eddy.max_memory is -1.")));
}

/*
 * Store the tuple whose probe just ended in its side's STAIR: a copy of its
 * row, under copies of its keys.
 */
static void
shj_insert(ShjState *state)
{
	ShjSide    *side = &state->side[state->probe_side];
	Datum	   *row;
	int			i;

	/* full size with the first entry: a STAIR never used stays small */
	if (side->stair->nentries == 0)
		shj_presize(state, side);

	row = shj_store_row(state, side, state->probe_slot);

	for (i = 0; i < side->nkeys; i++)
	{
		int			col = side->key_col[i];

		if (col >= 0)
			state->insert_keys[i] = row[col];
		else if (side->key_byval[i])
			state->insert_keys[i] = side->keys[i];
		else
		{
			Size		size = shj_datum_size(side->keys[i], side->key_len[i]);

			state->insert_keys[i] =
				shj_datum_copy_to(side->keys[i], side->key_len[i], size,
								  EddyArenaAlloc(&state->arena, size));
		}
	}
	StairInsert(side->stair, state->probe_hash, state->insert_keys, row);
	if (unlikely(shj_memory_used(state) > state->max_memory))
		shj_memory_error(state);
}

/*
 * A paced join starts a loop: the clock of its delays starts (a polled
 * join's is its parent's, so that the delays of a tree of joins all count
 * from the tree's first read, as an eddy's count from its own).
 */
static void
shj_start_schedule(ShjState *state)
{
	int			s;

	if (state->parent != NULL && state->parent->start_time != 0)
		state->start_time = state->parent->start_time;
	else
		state->start_time = GetCurrentTimestamp();
	state->stepwise = state->parent != NULL &&
		state->schedule == EDDY_SCHEDULE_PROPORTIONAL &&
		state->parent->schedule == EDDY_SCHEDULE_PROPORTIONAL;
	state->stepped = false;
	state->nwaiting = 0;
	for (s = 0; s < 2; s++)
	{
		ShjSide    *side = &state->side[s];

		side->nread_loop = 0;
		side->ready_at = 0;
		if (side->delay_ms > 0)
		{
			side->ready_at = state->start_time +
				(TimestampTz) ceil(side->delay_ms * 1000.0);
			state->nwaiting++;
		}
	}
}

static double shj_subtree_share(ShjState *state, TimestampTz now);

/*
 * A side's share read, under the proportional schedule: a base input's
 * rows read over its planned rows times its rate; a polled static SHJ's,
 * the smallest share among its own inputs that are not exhausted and not
 * held back, down to the base relations, so that a tree of joins reads
 * its base relations at their rates, as an eddy reads its sources.
 */
static double
shj_side_share(ShjSide *side, TimestampTz now)
{
	if (side->child_shj != NULL &&
		side->child_shj->schedule == EDDY_SCHEDULE_PROPORTIONAL)
		return shj_subtree_share(side->child_shj, now);
	return EddyProportionalShare(side->nread_loop, side->est_rows, side->rate);
}

static double
shj_subtree_share(ShjState *state, TimestampTz now)
{
	double		best = -1;
	int			s;

	for (s = 0; s < 2; s++)
	{
		ShjSide    *side = &state->side[s];
		double		share;

		if (side->exhausted)
			continue;
		if (side->ready_at != 0)
		{
			if (now == 0)
				now = GetCurrentTimestamp();
			if (now < side->ready_at)
				continue;
		}
		share = shj_side_share(side, now);
		if (best < 0 || share < best)
			best = share;
	}
	return best < 0 ? 0 : best;
}

/*
 * The side a paced join reads next: under the build schedule the side
 * whose turn it is, else the other one; under the proportional schedule
 * the side whose share read is smallest (the inner on a tie); in both,
 * among the sides that are not exhausted and not held back (a delay that
 * has not passed, a polled child that found nothing ready).  When every
 * side left is held back, a polled join returns -1 with would_block set
 * (its parent reads its other side meanwhile); any other join sleeps on
 * its latch until the first is due, honouring interrupts.
 */
static int
shj_schedule_next(ShjState *state)
{
	for (;;)
	{
		TimestampTz now = 0;
		TimestampTz due = 0;
		int			best = -1;
		double		best_share = 0;
		int			k;

		if (state->nwaiting > 0)
			now = GetCurrentTimestamp();
		for (k = 0; k < 2; k++)
		{
			int			s;
			ShjSide    *side;

			if (state->schedule == EDDY_SCHEDULE_BUILD)
				s = k == 0 ? state->next_side : 1 - state->next_side;
			else
				s = k == 0 ? SHJ_INNER : SHJ_OUTER;
			side = &state->side[s];
			if (side->exhausted)
				continue;
			if (side->ready_at != 0)
			{
				if (now < side->ready_at)
				{
					if (due == 0 || side->ready_at < due)
						due = side->ready_at;
					continue;
				}
				side->ready_at = 0;
				state->nwaiting--;
			}
			if (state->schedule == EDDY_SCHEDULE_BUILD)
			{
				best = s;
				break;
			}
			else
			{
				double		share = shj_side_share(side, now);

				if (best < 0 || share < best_share)
				{
					best = s;
					best_share = share;
				}
			}
		}
		if (best >= 0)
		{
			state->next_side = 1 - best;
			return best;
		}
		Assert(due != 0);		/* SHJ_DONE once both sides are exhausted */

		if (state->parent != NULL)
		{
			state->would_block = true;
			state->block_until = due;
			return -1;
		}
		else
		{
			double		wait_ms = (double) (due - now) / 1000.0;
			instr_time	t0;
			instr_time	t1;

			INSTR_TIME_SET_CURRENT(t0);
			EddyWaitForSources(wait_ms);
			INSTR_TIME_SET_CURRENT(t1);
			INSTR_TIME_SUBTRACT(t1, t0);
			state->nwaits++;
			state->waited_ms += INSTR_TIME_GET_MILLISEC(t1);
		}
	}
}

/*
 * Read the next tuple of the side whose turn it is and start its probe.
 * Returns false if there is nothing to probe for this tuple (a NULL key, or
 * the side ended, or, polled, nothing was ready: would_block); the state
 * says what comes next.
 */
static inline bool
shj_read(ShjState *state)
{
	int			s = state->next_side;
	ShjSide    *side;
	ShjSide    *other;
	TupleTableSlot *slot;
	int			i;

	if (unlikely(state->paced))
	{
		if ((s = shj_schedule_next(state)) < 0)
			return false;		/* would_block */
	}
	else if (state->side[s].exhausted)
		s = 1 - s;
	else
		state->next_side = 1 - s;
	side = &state->side[s];
	other = &state->side[1 - s];

	slot = ExecProcNode(side->ps);
	if (TupIsNull(slot) && unlikely(side->child_shj != NULL) &&
		side->child_shj->would_block)
	{
		side->child_shj->would_block = false;
		if (side->child_shj->block_until == 0)
		{
			/* it read a tuple (stepwise): choose again, or let the parent */
			if (state->stepwise)
			{
				state->would_block = true;
				state->block_until = 0;
			}
			return false;
		}
		/* the child join has nothing ready yet: read the other side */
		side->ready_at = side->child_shj->block_until;
		state->nwaiting++;
		return false;
	}
	if (TupIsNull(slot))
	{
		side->exhausted = true;
		/* an empty STAIR matches nothing the other side still holds */
		if (other->exhausted || side->stair->nentries == 0)
			state->state = SHJ_DONE;
		return false;
	}

	side->nread++;
	side->nread_loop++;
	state->stepped = state->stepwise;
	if (unlikely(side->first_read_ms < 0) && side->delay_ms > 0)
		side->first_read_ms =
			(double) (GetCurrentTimestamp() - state->start_time) / 1000.0;

	slot_getallattrs(slot);
	if (side->any_key_expr)
	{
		ResetExprContext(state->key_econtext);
		state->key_econtext->ecxt_scantuple = slot;
	}
	for (i = 0; i < side->nkeys; i++)
	{
		int			col = side->key_col[i];

		if (col >= 0)
		{
			side->keys[i] = slot->tts_values[col];
			side->keynull[i] = slot->tts_isnull[col];
		}
		else
			side->keys[i] = ExecEvalExprSwitchContext(side->key_expr[i],
													  state->key_econtext,
													  &side->keynull[i]);
	}
	if (!StairKeysHash(&state->keys, s, side->keys, side->keynull,
					   &state->probe_hash))
		return false;			/* a NULL key never matches */

	state->probe_side = s;
	state->probe_slot = slot;
	state->probe_in_slot = false;
	StairProbeBegin(&state->probe, other->stair, state->probe_hash, side->keys);
	state->state = SHJ_PROBE;
	return true;
}

/*
 * The node's ExecProcNode: installed directly by shj_begin, so that the
 * executor calls it without going through ExecCustomScan.
 */
static TupleTableSlot *
shj_exec_node(PlanState *pstate)
{
	ShjState   *state = (ShjState *) pstate;
	ExprContext *econtext = pstate->ps_ExprContext;
	TupleTableSlot *scanslot = state->css.ss.ss_ScanTupleSlot;

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();

		/* the previous output tuple, or a rejected one, is gone */
		ResetExprContext(econtext);

		switch (state->state)
		{
			case SHJ_START:
				if (state->onetime_qual != NULL &&
					!ExecQual(state->onetime_qual, econtext))
				{
					state->state = SHJ_DONE;
					break;
				}
				if (state->paced)
					shj_start_schedule(state);
				state->state = SHJ_READ;
				break;

			case SHJ_READ:
				if (unlikely(state->stepped))
				{
					/* polled stepwise: the parent chooses the next read */
					state->stepped = false;
					state->would_block = true;
					state->block_until = 0;
					return NULL;
				}
				if (!shj_read(state) && unlikely(state->would_block))
					return NULL;	/* polled: the parent reads elsewhere */
				break;

			case SHJ_PROBE:
				{
					Datum	   *row = StairProbeNext(&state->probe);
					ShjSide    *match_side;

					if (row == NULL)
					{
						/* store it for the other side's future tuples */
						if (!state->side[1 - state->probe_side].exhausted)
							shj_insert(state);
						state->state = SHJ_READ;
						break;
					}

					/*
					 * The probing tuple's part of the combined tuple, once
					 * for all its matches (most probes find none); again if
					 * a consumer materialized the slot we returned, since
					 * clearing it frees the copy.
					 */
					if (!state->probe_in_slot || TTS_SHOULDFREE(scanslot))
					{
						ShjSide    *side = &state->side[state->probe_side];
						TupleTableSlot *slot = state->probe_slot;

						ExecClearTuple(scanslot);
						memcpy(scanslot->tts_values + side->offset,
							   slot->tts_values, sizeof(Datum) * side->natts);
						memcpy(scanslot->tts_isnull + side->offset,
							   slot->tts_isnull, sizeof(bool) * side->natts);
						ExecStoreVirtualTuple(scanslot);
						state->probe_in_slot = true;
					}

					match_side = &state->side[1 - state->probe_side];
					memcpy(scanslot->tts_values + match_side->offset, row,
						   sizeof(Datum) * match_side->natts);
					memcpy(scanslot->tts_isnull + match_side->offset,
						   row + match_side->natts,
						   sizeof(bool) * match_side->natts);

					econtext->ecxt_scantuple = scanslot;
					if (state->joinqual != NULL &&
						!ExecQual(state->joinqual, econtext))
					{
						InstrCountFiltered1(&state->css, 1);
						break;
					}

					/*
					 * Inner unique: this outer tuple has found its only
					 * match, and no later inner tuple can match it, so it
					 * is neither probed further nor stored.
					 */
					if (state->inner_unique && state->probe_side == SHJ_OUTER)
						state->state = SHJ_READ;

					if (pstate->ps_ProjInfo)
						return ExecProject(pstate->ps_ProjInfo);
					return scanslot;
				}

			case SHJ_DONE:
				return NULL;

			default:
				elog(ERROR, "unrecognized symmetric hash join state: %d",
					 state->state);
		}
	}
}

static TupleTableSlot *
shj_exec(CustomScanState *node)
{
	return shj_exec_node(&node->ss.ps);
}

/* Remember the memory the join state holds now, if it is the most yet */
static void
shj_note_peak(ShjState *state)
{
	Size		used = shj_memory_used(state);

	if (used > state->peak_memory)
		state->peak_memory = used;
}

static void
shj_end(CustomScanState *node)
{
	ShjState   *state = (ShjState *) node;

	ExecEndNode(state->side[SHJ_OUTER].ps);
	ExecEndNode(state->side[SHJ_INNER].ps);
	/* gives the arena's blocks back to the backend's pool */
	MemoryContextDelete(state->arena.cxt);
	state->ended = true;
}

static void
shj_rescan(CustomScanState *node)
{
	ShjState   *state = (ShjState *) node;
	int			s;

	/* forget the stored state: the arena first, then the STAIRs' slots */
	shj_note_peak(state);
	EddyArenaReset(&state->arena);
	for (s = 0; s < 2; s++)
	{
		ShjSide    *side = &state->side[s];

		StairClear(side->stair);
		side->exhausted = false;
		side->ready_at = 0;
		side->nread_loop = 0;

		if (node->ss.ps.chgParam != NULL)
			UpdateChangedParamSet(side->ps, node->ss.ps.chgParam);
		/* with changed parameters, the child's next ExecProcNode rescans */
		if (side->ps->chgParam == NULL)
			ExecReScan(side->ps);
	}
	state->state = SHJ_START;
	state->next_side = SHJ_INNER;
	state->start_time = 0;
	state->nwaiting = 0;
	state->would_block = false;
	state->stepped = false;
}

/* ----------------------------------------------------------------
 *		EXPLAIN
 * ----------------------------------------------------------------
 */

/* A qual list as explain.c's show_qual prints it */
static void
shj_show_qual(List *qual, const char *label, List *context, bool useprefix,
			  ExplainState *es)
{
	char	   *str;

	if (qual == NIL)
		return;
	str = deparse_expression((Node *) make_ands_explicit(qual), context,
							 useprefix, false);
	ExplainPropertyText(label, str, es);
}

/* Per side: its tuples stored, its probes of the other STAIR, their matches */
static void
shj_show_side(const char *label, Stair *own, Stair *other, ExplainState *es)
{
	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		appendStringInfoSpaces(es->str, es->indent * 2);
		appendStringInfo(es->str,
						 "%s: Inserted " UINT64_FORMAT "  Probed " UINT64_FORMAT
						 "  Matched " UINT64_FORMAT "\n",
						 label, own->inserted, other->probed, other->matched);
	}
	else
	{
		ExplainOpenGroup(label, label, true, es);
		ExplainPropertyUInteger("Inserted", NULL, own->inserted, es);
		ExplainPropertyUInteger("Probed", NULL, other->probed, es);
		ExplainPropertyUInteger("Matched", NULL, other->matched, es);
		ExplainCloseGroup(label, label, true, es);
	}
}

/* A side as the schedule's lines name it: its alias, or outer/inner */
static const char *
shj_side_name(ShjState *state, int s)
{
	if (state->side[s].name != NULL)
		return state->side[s].name;
	return s == SHJ_OUTER ? "outer" : "inner";
}

/*
 * The schedule, when it is not just alternate reads: "Source Schedule:
 * alternate (t3 delay 20 ms)" as the Eddy shows its own (explain.c); with
 * ANALYZE, the tuples each side gave, when each delayed side was first
 * read (after its delay: the delay honoured) and the time the join slept
 * on its latch waiting for a delayed side.
 */
static void
shj_explain_schedule(ShjState *state, bool analyze, ExplainState *es)
{
	StringInfoData buf;
	bool		listed = false;
	int			s;

	if (state->schedule == EDDY_SCHEDULE_BUILD && !state->listed &&
		!state->delayed)
		return;

	initStringInfo(&buf);
	appendStringInfoString(&buf, state->schedule == EDDY_SCHEDULE_BUILD ?
						   "alternate" : EddyScheduleName(state->schedule));
	for (s = 0; s < 2; s++)
	{
		ShjSide    *side = &state->side[s];

		if (side->rate != 1.0 || side->delay_ms != 0)
			EddyScheduleExplainSource(&buf, &listed, shj_side_name(state, s),
									  side->rate, side->delay_ms);
	}
	if (listed)
		appendStringInfoChar(&buf, ')');
	ExplainPropertyText("Source Schedule", buf.data, es);

	if (!analyze)
		return;
	resetStringInfo(&buf);
	for (s = 0; s < 2; s++)
		appendStringInfo(&buf, "%s%s " UINT64_FORMAT, s > 0 ? ", " : "",
						 shj_side_name(state, s), state->side[s].nread);
	ExplainPropertyText("Tuples Read", buf.data, es);
	resetStringInfo(&buf);
	for (s = 0; s < 2; s++)
	{
		ShjSide    *side = &state->side[s];

		if (side->delay_ms <= 0)
			continue;
		if (buf.len > 0)
			appendStringInfoString(&buf, ", ");
		if (side->first_read_ms < 0)
			appendStringInfo(&buf, "%s never", shj_side_name(state, s));
		else
			appendStringInfo(&buf, "%s after %.1f ms", shj_side_name(state, s),
							 side->first_read_ms);
	}
	if (buf.len > 0)
		ExplainPropertyText("First Read", buf.data, es);
	if (state->delayed && state->parent == NULL)
	{
		if (es->format == EXPLAIN_FORMAT_TEXT)
		{
			appendStringInfoSpaces(es->str, es->indent * 2);
			appendStringInfo(es->str, "Latch Waits: " UINT64_FORMAT
							 "  Waited: %.1f ms\n",
							 state->nwaits, state->waited_ms);
		}
		else
		{
			ExplainPropertyUInteger("Latch Waits", NULL, state->nwaits, es);
			ExplainPropertyFloat("Waited", "ms", state->waited_ms, 1, es);
		}
	}
}

static void
shj_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	ShjState   *state = (ShjState *) node;
	ShjPlanLists pl;
	List	   *hashcond = NIL;
	bool		useprefix = list_length(es->rtable) > 1 || es->verbose;
	List	   *context;
	Instrumentation *instr = node->ss.ps.instrument;
	int			i;

	context = set_deparse_context_plan(es->deparse_cxt, node->ss.ps.plan,
									   ancestors);

	shj_plan_lists((CustomScan *) node->ss.ps.plan, &pl);
	for (i = 0; i < pl.nkeys; i++)
		hashcond = lappend(hashcond,
						   make_opclause(list_nth_oid(pl.ops, i), BOOLOID,
										 false,
										 list_nth(pl.keys[SHJ_OUTER], i),
										 list_nth(pl.keys[SHJ_INNER], i),
										 InvalidOid,
										 list_nth_oid(pl.colls, i)));
	shj_show_qual(hashcond, "Hash Cond", context, useprefix, es);
	shj_show_qual(pl.joinquals, "Join Filter", context, useprefix, es);
	/* as explain.c's show_instrumentation_count */
	if (pl.joinquals != NIL && es->analyze && instr != NULL &&
		(instr->nfiltered1 > 0 || es->format != EXPLAIN_FORMAT_TEXT))
		ExplainPropertyFloat("Rows Removed by Join Filter", NULL,
							 instr->nloops > 0 ?
							 instr->nfiltered1 / instr->nloops : 0.0,
							 0, es);
	shj_show_qual(pl.onetime_quals, "One-Time Filter", context, useprefix,
				  es);
	if (es->verbose)
		ExplainPropertyBool("Inner Unique", state->inner_unique, es);
	shj_explain_schedule(state, es->analyze && instr != NULL, es);

	if (es->analyze && instr != NULL && !state->ended)
	{
		Stair	   *outer = state->side[SHJ_OUTER].stair;
		Stair	   *inner = state->side[SHJ_INNER].stair;

		shj_show_side("Outer", outer, inner, es);
		shj_show_side("Inner", inner, outer, es);
		shj_note_peak(state);
		ExplainPropertyInteger("Memory", "kB",
							   (int64) ((state->peak_memory + 1023) / 1024), es);
	}
}
