/*-------------------------------------------------------------------------
 *
 * private.h
 *	  custom_private of an Eddy CustomScan: the plan-time description of an
 *	  eddy's sources and modules, read back by the executor.
 *
 * Every eddy, one relation with selections or a join block, is described
 * the same way: a List indexed by EddyPrivateIndex, whose source and module
 * descriptions are Lists indexed by the enums below (the postgres_fdw
 * convention: FdwScanPrivateIndex).  Every element survives copyObject and
 * the round trip through text that sends a plan to parallel workers:
 * Integer and Float nodes (EddyPrivateFloat) and Lists of them; OIDs are stored as Integers
 * (an OID above INT_MAX reads back unchanged through a cast), bitmaps of
 * sources or modules as Integers too (at most EDDY_MAX_MAX_SOURCES, 16, bits).
 *
 * Expressions (predicates, join keys, join conditions for EXPLAIN) are in
 * custom_exprs, so that setrefs rewrites them into INDEX_VAR references
 * over custom_scan_tlist; descriptions refer to them by index.
 *
 * The wide tuple (custom_scan_tlist) is one column range per source, in
 * source order.  A one-source eddy's range is its scan's whole target list,
 * which lets the executor evaluate on the scan's own slot (no copy).
 *
 *-------------------------------------------------------------------------
 */
#ifndef EDDY_PRIVATE_H
#define EDDY_PRIVATE_H

#include "nodes/nodes.h"

/*
 * Is a plan node of this type (a Plan's tag, or a Path's pathtype) a scan
 * of one range-table entry, its scanrelid, that computes its own target
 * list?  Where the eddy needs columns beyond a relation's target, the
 * planner reads the relation through a path of such a type (an Append, a
 * Gather or a Result returns what its input returns: EddyPathProjects,
 * join_graph.c); the executor names a source by the alias of such a
 * scan's scanrelid, for eddy.source_rates, eddy.source_delays and
 * eddy.routing_hold (EddyPlanSourceName, schedule.c).  One list for both,
 * so that a relation the planner can read is one the settings can name.
 * ForeignScan and CustomScan are left out, as they always were: their
 * scanrelid is 0 where they replace a join.
 */
static inline bool
EddyIsRelationScan(NodeTag tag)
{
	switch (tag)
	{
		case T_SeqScan:
		case T_SampleScan:
		case T_IndexScan:
		case T_IndexOnlyScan:
		case T_BitmapHeapScan:
		case T_TidScan:
		case T_TidRangeScan:
		case T_SubqueryScan:
		case T_FunctionScan:
		case T_TableFuncScan:
		case T_ValuesScan:
		case T_CteScan:
		case T_NamedTuplestoreScan:
		case T_WorkTableScan:
			return true;
		default:
			return false;
	}
}

/* The top-level list */
typedef enum EddyPrivateIndex
{
	EddyPrivSources,			/* List: one description per source */
	EddyPrivModules,			/* List: one description per module */
	EddyPrivSourceOrder,		/* List of Integer: sources in reading order */
	EddyPrivEstState,			/* Float: a join eddy's estimated join state,
								 * bytes (join_state.c); 0 for one source */
	EddyPrivExchange,			/* Integer: 0, or a parallel eddy whose state
								 * is exchanged after each source but the
								 * last (parallel.c): 1, plus (shifted left
								 * by 1) the bitmap of the sources one
								 * process reads whole (claimed) */
	EddyPrivOneTimeQual,		/* Integer: the index in custom_exprs of the
								 * block's pseudoconstant clauses (ANDed),
								 * evaluated once per scan before any source
								 * is read, as PostgreSQL's gating Result
								 * does; -1 if none */
	EddyPrivNumItems
} EddyPrivateIndex;

/* How a source's tuples reach the eddy */
typedef enum EddySourceMethod
{
	EDDY_SOURCE_SCAN,			/* a child plan (custom_plans) the eddy reads */
	EDDY_SOURCE_INDEX			/* nothing reads it: an index join fetches it */
} EddySourceMethod;

/* A source description */
typedef enum EddySourcePrivateIndex
{
	EddySourceMethodItem,		/* Integer: EddySourceMethod */
	EddySourceFirstCol,			/* Integer: first column of its range in
								 * custom_scan_tlist, 0-based */
	EddySourceNumCols,			/* Integer: columns in its range */
	EddySourcePlan,				/* Integer: SCAN: its index in custom_plans;
								 * INDEX: -1 */
	EddySourceHeapOid,			/* Integer: INDEX: the relation's OID; SCAN:
								 * the same for the end 1 of a hybrid join
								 * (it is also fetched by index), else 0 */
	EddySourceHeapAttnos,		/* List of Integer: INDEX (and SCAN with a
								 * HeapOid): the heap attribute of each
								 * column of its range; SCAN: NIL */
	EddySourceEstRows,			/* Float: the planner's rows for the relation */
	EddySourceAlias,			/* String: INDEX: the relation's alias (EXPLAIN;
								 * a scan is named by its plan); SCAN: "" */
	EddySourceGuarded,			/* Integer: SCAN: 1 if scanned because the
								 * one-row guard made PostgreSQL's index nested
								 * loop into it a hash join (join_graph.c) */
	EddySourceNumItems
} EddySourcePrivateIndex;

/* Module kinds: the first element of every module description */
typedef enum EddyModuleKind
{
	EDDY_MODULE_SELECTION,		/* one predicate */
	EDDY_MODULE_HASH_JOIN,		/* symmetric hash join: two dual STAIRs */
	EDDY_MODULE_INDEX_JOIN,		/* probes an index of side 1's relation */
	EDDY_MODULE_HYBRID_JOIN,	/* hash join whose side 1, one relation, is
								 * also reached by index (mod_hybrid.c) */
	EDDY_NUM_MODULE_KINDS
} EddyModuleKind;

/* A selection module's description */
typedef enum EddySelectionPrivateIndex
{
	EddySelKind,				/* Integer: EDDY_MODULE_SELECTION */
	EddySelSources,				/* Integer: bitmap of the sources it reads; all
								 * of the block's when it must run on complete
								 * tuples only */
	EddySelPrereqs,				/* List of Integer: modules (by index) that
								 * must have passed first */
	EddySelExpr,				/* Integer: the predicate in custom_exprs */
	EddySelEstSelectivity,		/* Float: the planner's selectivity */
	EddySelEstCost,				/* Float: the planner's per-tuple cost */
	EddySelNumItems
} EddySelectionPrivateIndex;

/*
 * A join module's description: an edge of the block's spanning tree
 * between the relation at end 0 and the one at end 1.  An index join
 * probes end 1's index with end 0's keys; an index semi or anti join
 * passes end 0's tuple on once if some match passes its inner qual (semi)
 * or none does (anti).
 */
typedef enum EddyJoinPrivateIndex
{
	EddyJoinKind,				/* Integer: EDDY_MODULE_HASH_JOIN or _INDEX_JOIN */
	EddyJoinEnds,				/* List of 2 Integer: the source at each end */
	EddyJoinSides,				/* List of 2 Integer: bitmap of the sources on
								 * each side of the edge in the tree */
	EddyJoinOperators,			/* List of Integer: per key, the equality
								 * operator's OID, end 0's key on the left */
	EddyJoinCollations,			/* List of Integer: per key, its collation */
	EddyJoinKeys0,				/* List of Integer: per key, end 0's key
								 * expression in custom_exprs */
	EddyJoinKeys1,				/* List of Integer: ... and end 1's */
	EddyJoinCondition,			/* Integer: the join condition in custom_exprs
								 * (for EXPLAIN; TRUE for a cross product) */
	EddyJoinUnique,				/* List of 2 Integer (0/1): a probe into side
								 * s finds at most one match (one relation,
								 * unique on the keys) */
	EddyJoinEstRows,			/* List of 2 Float: the planner's rows of each
								 * end's relation */
	EddyJoinEstSelectivity,		/* Float: the planner's selectivity of the
								 * join clauses */
	EddyJoinIndexOid,			/* Integer: INDEX_JOIN, HYBRID_JOIN: the index
								 * on end 1's relation; HASH_JOIN: 0 */
	EddyJoinIndexCols,			/* List of Integer: INDEX_JOIN, HYBRID_JOIN:
								 * per key, its index column (1-based);
								 * HASH_JOIN: NIL */
	EddyJoinType,				/* Integer: JOIN_INNER; INDEX_JOIN also
								 * JOIN_SEMI or JOIN_ANTI (end 1 is the semi
								 * or anti join's inner relation) */
	EddyJoinInnerQual,			/* Integer: JOIN_SEMI/ANTI: the join's other
								 * clauses in custom_exprs, evaluated on each
								 * index match joined (a match must pass
								 * them), or -1 */
	EddyJoinPresizeRows,		/* List of 2 Float: the entries each side's
								 * STAIR is likely to hold, to size its slot
								 * array at its first insertion */
	EddyJoinIndexOnly,			/* Integer (0/1): INDEX_JOIN: every column the
								 * block needs of end 1's relation is
								 * returned by the index, and index-only
								 * scans are enabled: the module reads the
								 * index tuples and visits the heap only for
								 * pages not all visible (mod_indexjoin.c);
								 * HASH_JOIN: 0 */
	EddyJoinFetchQual,			/* HYBRID_JOIN: List of the restriction
								 * clauses end 1's scan keeps (Exprs over
								 * the relation's Vars, opfuncids set), run
								 * on each row its index fetches; else NIL */
	EddyJoinKeyDistinct,		/* Float: HYBRID_JOIN and INDEX_JOIN: the
								 * planner's distinct values of end 0's keys
								 * among its rows (estimate_num_groups), for
								 * the index caches' judgement; else 0 */
	EddyJoinKeyUnique0,			/* Integer (0/1): INDEX_JOIN: end 0's relation
								 * has a unique index on its keys, so its
								 * rows carry each key once (the lookup
								 * cache's late start, mod_indexjoin.c) */
	EddyJoinNumItems
} EddyJoinPrivateIndex;

#endif							/* EDDY_PRIVATE_H */
