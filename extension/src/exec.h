/*-------------------------------------------------------------------------
 *
 * exec.h
 *	  The executor's types: sources, eddy tuples, modules and their
 *	  vtable, the iterator's frames, and the Eddy node's state.
 *
 * One executor runs every eddy (exec.c).  A source is a relation of the
 * block; a module is a selection, a symmetric hash join (two dual STAIRs)
 * or an index join, each behind EddyModuleMethods (mod_selection.c,
 * mod_hashjoin.c, mod_indexjoin.c), so that the eddy's loop never looks at
 * a module's kind.  Tuple format: tuple.c.  EXPLAIN: explain.c.  Routing:
 * routing.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EDDY_EXEC_H
#define EDDY_EXEC_H

#include "eddy.h"

#include "access/genam.h"
#include "access/parallel.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "arena.h"
#include "private.h"
#include "routing.h"
#include "stair.h"

/* Time the routing of one tuple in this many (and the first one) */
#define EDDY_COST_SAMPLE_INTERVAL	128

/* Planner cost units to nanoseconds, for the policies' priors (about 4 us) */
#define EDDY_NS_PER_COST_UNIT	4000.0

/* At most this many hash slots per source row (see mod_hashjoin.c) */
#define EDDY_MAX_HASH_SLOTS		32

typedef struct EddyState EddyState;
typedef struct EddyModule EddyModule;
typedef struct EddySpill EddySpill;
typedef struct EddySharedStats EddySharedStats;
typedef struct EddyJoinSpec EddyJoinSpec;

/* ----------------------------------------------------------------
 *		Predicates
 * ----------------------------------------------------------------
 */

/*
 * A predicate over the node's scan tuple, with ExecQual semantics (NULL is
 * false).  "column op constant" with a strict operator calls the
 * operator's function directly on the deformed column.
 */
typedef struct EddyPredicate
{
	ExprState  *qual;
	FunctionCallInfo fast_fcinfo;	/* NULL: evaluate qual */
	AttrNumber	fast_attno;		/* 0-based column of the scan tuple */
	int			fast_argno;		/* which argument the column is */
} EddyPredicate;

/*
 * Evaluate on econtext's scan tuple, in the current memory context (the
 * per-tuple one).  The fast path needs the scan tuple deformed up to its
 * column.
 */
static inline bool
EddyPredicateEval(EddyPredicate *pred, ExprContext *econtext)
{
	FunctionCallInfo fcinfo = pred->fast_fcinfo;
	Datum		result;
	bool		isnull;

	if (fcinfo != NULL)
	{
		TupleTableSlot *slot = econtext->ecxt_scantuple;

		Assert(slot->tts_nvalid > pred->fast_attno);
		if (slot->tts_isnull[pred->fast_attno])
			return false;		/* strict operator on NULL */
		fcinfo->args[pred->fast_argno].value = slot->tts_values[pred->fast_attno];
		fcinfo->isnull = false;
		result = FunctionCallInvoke(fcinfo);
		return !fcinfo->isnull && DatumGetBool(result);
	}
	result = pred->qual->evalfunc(pred->qual, econtext, &isnull);
	return !isnull && DatumGetBool(result);
}

/* mod_selection.c */
extern void EddyPredicateInit(EddyPredicate *pred, Expr *expr, PlanState *parent);
extern void EddyPredicateInitScan(EddyPredicate *pred, Expr *expr, PlanState *parent);
extern AttrNumber EddyPredicateMaxAttno(Expr *expr);

/* ----------------------------------------------------------------
 *		Sources
 * ----------------------------------------------------------------
 */

typedef struct EddySource
{
	EddySourceMethod method;
	char	   *name;			/* scanned: the relation's alias, or NULL */
	int			first_col;		/* its column range in the wide tuple */
	int			ncols;			/* ... the leading columns the eddy reads
								 * (exec.c, narrow_sources), which rows hold */
	int			range_cols;		/* ... all of it: what the scan returns */
	int16	   *typlen;
	bool	   *typbyval;
	bool		byval_only;		/* every column by value: fixed-size rows */
	int16	   *byref_cols;		/* the columns by reference, ascending (of
								 * range_cols: the ones < ncols count) */
	int			nbyref;
	double		est_rows;		/* the planner's rows of the source (a scan: before
								 * the clauses the eddy routes off it; an
								 * index-joined relation: its tuples) */

	/* hash slots of its rows (mod_hashjoin.c) */
	int			nhash;
	int		   *nslot_stairs;	/* per hash slot: the STAIRs it probes */
	Stair	 ***slot_stairs;

	/* SteM mode: the hash join sides (module, side) its rows build into */
	int			nbuild;
	EddyModule **build_join;
	int		   *build_side;

	/* scanned */
	PlanState  *plan;
	TupleTableSlot *pending;	/* a tuple read ahead, not yet routed */
	bool		exhausted;
	int			exhausted_rank; /* 1 for the first source to run out, ... */
	uint64		nread;			/* tuples read */
	uint64		scan_dropped;	/* ... of which its scan dropped (exec.c,
								 * local chains), so did not return */
	double		rate;			/* eddy.source_rates (proportional schedule) */
	double		delay_ms;		/* eddy.source_delays */
	double		hold_pct;		/* eddy.routing_hold: percent, 0 if none */
	uint64		hold_rows;		/* ... as rows of the planner's estimate */
	int		   *local_chain;	/* selections over it alone: NULL if none;
								 * else this epoch's first choices of its
								 * tuples that are such selections (exec.c) */
	int			local_len;
	int			local_next;		/* ... and the target after it, or -1 */
	bool		local_probe;	/* ... a hash join probed in the scan */
	int			local_recheck;	/* ... tuples until it is computed again */
	uint32		local_exhausted;	/* ... the sources exhausted then */
	bool		local_sels;		/* some selections read it alone */
	uint64		local_generation;	/* the router's generation it is of */
	struct EddyLocalQual *local_qual;	/* the chain in its scan's qual, or
										 * NULL (exec.c) */

	/* reached through an index join */
	Oid			heapoid;
	Relation	heap;
	AttrNumber *attnos;
	AttrNumber	attno_run;		/* attnos[0] when the first ncols attnos
								 * are consecutive (rows borrow the heap
								 * slot's arrays, tuple.c), else 0 */
	AttrNumber	max_attno;
	TupleTableSlot *heapslot;
} EddySource;

/* ----------------------------------------------------------------
 *		Source rows and eddy tuples (tuple.c)
 * ----------------------------------------------------------------
 */

/*
 * A source row.  In state memory: the header, the hash slots, the null
 * flags, then the values (and the by-reference values' bytes), about as
 * compact as a hash join's copy.  A transient row (in flight, not stored)
 * is preceded by a pointer to its copy in state memory once one is made
 * (row_persistent), and its values may live elsewhere (the source's slot).
 */
typedef struct EddyRow
{
	Datum	   *values;
	bool	   *isnull;
	uint32		hvalid;			/* which entries of hash[] are computed */
	bool		in_state;
	uint16		mark;			/* state migration's: last visited (migrate.c) */
	uint32		hash[FLEXIBLE_ARRAY_MEMBER];	/* the source's hash slots */
} EddyRow;

#define row_persistent(row)	(((EddyRow **) (row))[-1])

/*
 * SteM mode (mod_stems.c): a row in state memory is preceded by its
 * arrival number, the TimeStamp of the SteMs paper.  STAIR mode has no
 * such prefix.
 */
#define row_seq(row)	(((uint64 *) (row))[-1])

/*
 * The eddy tuple (Deshpande 2004, section 2.2): a pointer per source (NULL
 * when absent), the sources it spans and the modules it has visited.
 */
typedef struct EddyTuple
{
	uint32		spans;			/* sources present */
	uint64		done;			/* modules visited */
	EddyRow    *rows[FLEXIBLE_ARRAY_MEMBER];
} EddyTuple;

/*
 * What a STAIR keeps: a payload, the one encoding of stored state.  A
 * tuple that is one fresh source row (one relation, no module done), by
 * far the most common, is kept as its row alone, the pointer tagged in its
 * low bit: no tuple header, no row-pointer array.  Anything else is a
 * stored EddyTuple.  EddyTupleJoin joins a probe with either; the other
 * readers (migration, spilling, the exchange, SteM mode) test
 * EddyPayloadIsRow.
 */
#define EDDY_PAYLOAD_ROW_TAG	((uintptr_t) 1)

static inline bool
EddyPayloadIsRow(void *payload)
{
	return ((uintptr_t) payload & EDDY_PAYLOAD_ROW_TAG) != 0;
}

static inline EddyRow *
EddyPayloadRow(void *payload)
{
	return (EddyRow *) ((uintptr_t) payload & ~EDDY_PAYLOAD_ROW_TAG);
}

static inline void *
EddyPayloadFromRow(EddyRow *row)
{
	return (void *) ((uintptr_t) row | EDDY_PAYLOAD_ROW_TAG);
}

/* ----------------------------------------------------------------
 *		Modules
 * ----------------------------------------------------------------
 */

/*
 * A frame of the iterator's stack (Deshpande 2004, section 2.1.4): a join
 * module with an outstanding probe whose matches are still to come.  A
 * module is on the stack at most once (a match has done the module, and
 * so has every tuple made from it).
 */
typedef struct EddyFrame
{
	EddyModule *module;
	int			dir;
	EddyTuple  *probe;
	bool		timed;			/* the probe's route was timed: an index join
								 * times its fetches too (mod_indexjoin.c) */
	StairProbe	sp;				/* hash join: the probe of the dual STAIR */
} EddyFrame;

/*
 * The module vtable.
 *
 * route	take tuple t in direction dir.  Returns the tuple to route on
 *			(t itself with the module done, or a join's single result), or
 *			NULL when t leaves the eddy's hands: dropped, or stored with its
 *			matches pushed as a frame (EddyPushFrame) for `next`.
 * next		the next match of a frame this module pushed, or NULL.
 * rescan	forget all state, for a rescan.
 * end		release resources.
 * explain	its EXPLAIN lines or properties.
 *
 * joins	a capability, not a kind: route may make tuples that span more
 *			sources than the tuple routed (a join).  The loop runs the
 *			state mode's BuildFirst callback (es->build_first) before a
 *			driver's first such module, and EXPLAIN reports a fan-out
 *			rather than a selectivity.
 */
typedef struct EddyModuleMethods
{
	const char *label;			/* "Selection", "Hash Join", "Index Join" */
	bool		joins;
	EddyTuple  *(*route) (EddyState *es, EddyModule *m, int dir, EddyTuple *t);
	EddyTuple  *(*next) (EddyState *es, EddyFrame *f);
	void		(*rescan) (EddyState *es, EddyModule *m);
	void		(*end) (EddyState *es, EddyModule *m);
	void		(*explain) (EddyState *es, EddyModule *m, List *context,
							bool useprefix, ExplainState *xs);
} EddyModuleMethods;

/*
 * How many entries of each signature (the sources they span) a store
 * holds, kept while the eddy may migrate (EddyStateMethods.sigs)
 */
typedef struct EddySigCount
{
	uint32		spans;
	uint64		count;
} EddySigCount;

/* At most this many stores per module (EddyStateMethods.nstores) */
#define EDDY_MAX_STORES		2

/* The counters of one store, saved and restored around a replay */
typedef struct EddyStoreCounters
{
	uint64		inserted;
	uint64		probed;
	uint64		matched;
	uint64		skipped;
} EddyStoreCounters;

/*
 * The state interface.  A module that keeps state between tuples (a hash
 * join's two STAIRs, in STAIR or SteM mode) sets EddyModule.state; a
 * stateless one (a selection, an index join) leaves it NULL.  Everything
 * the executor's services do with a module's state goes through these
 * operations: state migration (migrate.c), spilling (spill.c), the
 * parallel exchange (parallel.c), the counters saved around a replay and
 * the loop's test whether the result can still grow (exec.c), the scan's
 * probes of a local chain (exec.c).  None of them asks what kind a
 * module is.
 *
 * The state is nstores stores, one per side of the module's join-tree
 * edge (spec): store s is a STAIR (stair.h) whose entries are payloads
 * (exec.h) spanning the end relation spec->rel[s] and nothing outside
 * spec->side[s], hashed on the side's keys.  Services read, take and
 * reinsert entries with stair.c's iterator.  Entries live in the eddy's
 * state arena (es->stored), so memory is accounted there for all modules
 * at once (EddyStateMemory, tuple.c), and freed by resetting it.
 *
 * Unless said otherwise an operation is called at a point of stasis
 * (exec.c): nothing in flight, no frame of the module on the stack.
 *
 * nstores		its number of stores, at most EDDY_MAX_STORES.
 * store		store s.
 * spec			its ends and keys: the sides the stores belong to.
 * clear		forget every entry (the caller resets the state arena):
 *				spilling frees the state this way.
 * sigs			the signatures of store s's entries and their counts, kept
 *				only while es->migrating; returns how many.
 * forget_sigs	the stores were emptied by taking their entries (state
 *				migration): the signature counts start again.
 * save_counters, restore_counters
 *				store s's counters (EddyStoreCounters), saved before rows
 *				are replayed (migration, spilling, the exchange) and
 *				restored after, so that they count the eddy's own routing.
 * ended		a side d whose scanned sources are all exhausted and whose
 *				store is empty, so that no result can be made any more
 *				(and *side = d), or -1: asked after a source ran out.
 * probe_only	would routing a fresh tuple of end dir's relation only
 *				probe (store nothing)?  Asked between two source tuples,
 *				when a local chain is computed.
 * probe_misses	the same, and it finds no match for keys (isnull): then it
 *				counts what routing it would have counted and returns
 *				true, for the caller to drop the tuple; else counts
 *				nothing.  Called from a scan's qual (a local chain), with
 *				nothing of the eddy's in flight.
 */
typedef struct EddyStateMethods
{
	int			nstores;
	Stair	   *(*store) (EddyModule *m, int s);
	EddyJoinSpec *(*spec) (EddyModule *m);
	void		(*clear) (EddyState *es, EddyModule *m);
	int			(*sigs) (EddyModule *m, int s, EddySigCount **sigs);
	void		(*forget_sigs) (EddyModule *m);
	void		(*save_counters) (EddyModule *m, int s, EddyStoreCounters *c);
	void		(*restore_counters) (EddyModule *m, int s,
									 const EddyStoreCounters *c);
	int			(*ended) (EddyState *es, EddyModule *m, int *side);
	bool		(*probe_only) (EddyState *es, EddyModule *m, int dir);
	bool		(*probe_misses) (EddyState *es, EddyModule *m, int dir,
								 Datum *keys, bool *isnull);
} EddyStateMethods;

/*
 * What every module has.  ndirs routing targets (route targets' need,
 * allow and prereq, set by the module's begin function), with statistics
 * per direction.
 *
 * filter is a capability: a module whose routing is one predicate over
 * the tuple, passing or dropping it (a selection), sets it, and then the
 * loop may evaluate it inline instead of calling route (chains, local
 * chains, exec.c), and the module's done bit on a stored tuple says its
 * rows passed the predicate (kept by replay and spilling).
 */
struct EddyModule
{
	const EddyModuleMethods *methods;
	const EddyStateMethods *state;	/* NULL: the module keeps no state */
	int			index;			/* in plan order */
	Expr	   *expr;			/* predicate or join condition, for EXPLAIN */
	EddyPredicate *filter;		/* a filter's predicate, or NULL */
	uint32		ends;			/* a join's two end sources (0: a selection) */
	int			ndirs;
	EddyRouteTarget target[2];	/* route conditions per direction */
	int			target_index[2];	/* their index in the router */
	EddyModuleStats stats[2];
};

/* Module constructors, by EddyModuleKind (exec.c calls them in plan order) */
extern EddyModule *EddySelectionBegin(EddyState *es, List *desc, int index);
extern EddyModule *EddyHashJoinBegin(EddyState *es, List *desc, int index);
extern EddyModule *EddyIndexJoinBegin(EddyState *es, List *desc, int index);
extern void EddyIndexJoinBeginChain(EddyState *es, EddyModule *m);

/*
 * The two ends of a join module and how a tuple's keys are read from them
 * (mod_join.c: shared by the hash and index joins).
 */
struct EddyJoinSpec
{
	int			rel[2];			/* the source at each end */
	uint32		side[2];		/* sources on each side of the tree edge */
	StairJoinKeys keys;
	int			nkeys;
	int		   *keycol[2];		/* per key: column of the end's row, or -1 */
	ExprState **keyexpr[2];		/* per key, when not a plain column */
	int16	   *keylen[2];
	bool	   *keybyval[2];
	bool		plainkeys[2];	/* every key a column of the end's row */
	bool		byvalkeys[2];	/* ... and passed by value */
	bool		unique[2];		/* a probe into side s finds at most one match */
	double		est_rows[2];
	double		presize_rows[2];	/* entries side s's STAIR likely holds */
	double		est_sel;
	List	   *keyexprs[2];	/* the key expressions, for EXPLAIN */
};

extern void EddyJoinSpecInit(EddyState *es, EddyJoinSpec *ends, List *desc);
extern void EddyJoinTargets(EddyModule *m, EddyJoinSpec *ends, int ndirs);
extern bool EddyJoinKeysComputed(EddyState *es, EddyJoinSpec *ends, int side,
								 EddyTuple *t, Datum *values, EddyArena *arena);
extern char *EddyJoinKeysString(List *keyexprs, List *context, bool useprefix);

/*
 * The key values of tuple t on side `side`; false if a key is NULL.
 * Computed keys of by-reference types are copied into the arena.
 */
static inline bool
EddyJoinKeys(EddyState *es, EddyJoinSpec *ends, int side, EddyTuple *t,
			 Datum *values, EddyArena *arena)
{
	if (likely(ends->plainkeys[side]))
	{
		EddyRow    *row = t->rows[ends->rel[side]];
		int			k;

		for (k = 0; k < ends->nkeys; k++)
		{
			int			col = ends->keycol[side][k];

			if (row->isnull[col])
				return false;
			values[k] = row->values[col];
		}
		return true;
	}
	return EddyJoinKeysComputed(es, ends, side, t, values, arena);
}

/* ----------------------------------------------------------------
 *		The node
 * ----------------------------------------------------------------
 */

/* What the spills of a scan's earlier loops did (spill.c), for EXPLAIN */
typedef struct EddySpillTotals
{
	uint64		spills;
	uint64		batches;
	uint64		over;
	uint64		rows;
	uint64		state_rows;
	uint64		bytes;
} EddySpillTotals;

/*
 * The main loop's states (exec.c).  Room is left between them for the
 * states that state migration, flushing and spilling add.
 */
typedef enum EddyExecState
{
	EDDY_STATE_STASIS,			/* a point of stasis: nothing in flight */
	EDDY_STATE_READ,			/* read the next source tuple */
	EDDY_STATE_ROUTE,			/* route the current tuple until it leaves */
	EDDY_STATE_DRAIN,			/* take the next match of the top frame */
	EDDY_STATE_DONE				/* every source exhausted, stack empty */
} EddyExecState;

struct EddyState
{
	CustomScanState css;		/* must be first */
	EddyExecState state;

	/* sources */
	int			nsources;
	EddySource *sources;
	uint32		all_sources;
	int		   *source_order;	/* reading order */
	int			next_source;	/* position in source_order */
	uint32		scanned;		/* sources read by a child plan */
	uint32		exhausted;		/* ... of which these are exhausted */
	int			nexhausted;		/* ... and how many */
	EddySchedule schedule;
	bool		peeked;			/* every source's first tuple read ahead */
	bool		peeking;		/* ... being read ahead */
	bool		delayed;		/* some source has an initial delay */
	TimestampTz start_time;		/* of the first read, when delayed */
	bool		delays_over;	/* every delay has passed (since start_time) */
	bool		holding;		/* eddy.routing_hold not yet released */

	/* modules and routing */
	int			nmodules;
	EddyModule **modules;
	int			ntargets;
	EddyRouteTarget *targets;
	EddyRouter	router;
	bool		chain;			/* one source, filters only: see exec.c */
	int			deform_natts;	/* chain: source columns the filters read */

	/* the tuple being routed, and the stack */
	EddyTuple  *current;
	bool		current_fresh;	/* read from a source, not yet routed */
	bool		current_timed;
	bool		current_started;	/* EddyReadSource began routing it */
	bool		drain_started;	/* an index join's fetch chain began routing
								 * the tuple its frame returns (mod_indexjoin.c) */
	bool		stasis_due;		/* EddyReadSource dropped a tuple: a point of
								 * stasis before reading on (migration) */
	bool		check_end;		/* a source ran out: can the result grow
								 * (EddyHashJoinsEnded)? */
	int			ended_by;		/* 1 + the hash join that ended the last loop
								 * early, or 0 */
	int			ended_side;		/* ... its side whose end was seen */
	uint64		ended_loops;	/* loops ended early, over all loops */
	int			until_sample;
	EddyFrame  *stack;
	int			nstack;

	/* the block's pseudoconstant clauses (EddyPrivOneTimeQual), or NULL */
	Expr	   *one_time_expr;
	ExprState  *one_time_qual;
	bool		one_time_checked;	/* ... this scan */

	/* the wide tuple */
	TupleTableSlot *wide;		/* the node's scan slot */
	EddyRow   **loaded;			/* row whose values are in the wide slot */
	bool		loaded_any;
	bool		output_reads_columns;

	/* memory */
	EddyArena	stored;			/* what STAIRs keep */
	EddyArena	transient;		/* rewound at every point of stasis */
	Size		max_memory;
	Size		peak_memory;
	uint64		inserts;		/* STAIR insertions, for memory checks */
	EddyTuple  *free_tuples;	/* stored tuples migration took out of STAIRs,
								 * chained through rows[0], for reuse */
	int			nstairs;

	/* scratch for index fetches */
	Datum	   *fetch_values;
	bool	   *fetch_isnull;

	/*
	 * SteM mode (eddy.state_mode = stems, mod_stems.c).  seq numbers the
	 * source tuples read: the one read last is the driver, the newest
	 * component of every tuple in flight; unbuilt says it is still to be
	 * built into its relation's STAIRs (BuildFirst).
	 */
	EddyStateMode state_mode;	/* asked for when the node started */
	bool		stems;			/* ... and in effect */
	const char *stems_refused;	/* why not, when asked for */
	uint64		seq;
	bool		unbuilt;

	/*
	 * What the state mode asks of the loop and the services (set by
	 * EddyStemsInit; all unset in STAIR mode).  build_first is the
	 * documented callback by which a module reaches the loop: the loop
	 * calls it with a driver (a fresh source tuple of a source with
	 * nbuild > 0) before the driver's first join (a module whose methods
	 * say `joins`), once.  stamp_rows: rows copied into state memory carry
	 * their arrival number (row_seq, tuple.c).  migrate_refused and
	 * spill_refused: why the state can neither migrate nor spill, or NULL.
	 */
	void		(*build_first) (EddyState *es, EddyTuple *t);
	bool		stamp_rows;
	const char *migrate_refused;
	const char *spill_refused;

	/* spilling (spill.c) */
	bool		can_spill;
	bool		spill_wanted;	/* the state outgrew max_memory: spill at the
								 * next point of stasis */
	bool		over_limit;		/* the state outgrew max_memory at some time */
	uint64		spill_after;	/* eddy.debug_spill_after, until it fires */
	uint64		spill_after_setting;	/* ... as set when the node started */
	bool		spill_forced;	/* the spill asked for is forced */
	EddySpill  *spill;			/* NULL until the eddy spills */
	EddySpillTotals spill_totals;	/* of the spills of earlier loops */

	/* state migration (migrate.c), NULL when the eddy never migrates */
	struct EddyMigrator *migrator;
	bool		migrating;		/* ... and its state may move */
	uint64		migration_seen; /* EddyMigrationStasis has nothing to do
								 * until the router's recomputations move
								 * past this */
	bool		replaying;		/* rebuilding it: results are dropped */

	/* parallel plans (parallel.c) */
	bool		in_worker;		/* this is a parallel worker's eddy */
	EddySharedStats *shared_stats;	/* the workers' counters, in DSM */
	EddySharedStats *worker_stats;	/* leader: their copy, for EXPLAIN */

	/* ... with exchanged state (parallel.c, "Exchanged state") */
	bool		exchange;		/* planned so */
	uint32		claimed;		/* ... sources one process reads whole */
	uint32		claims_checked; /* ... those this process asked for */
	uint32		claims_won;		/* ... and got */
	bool		exchange_started;	/* the first read looked for the DSM */
	bool		exchange_active;	/* ... and found it: exchanging */
	bool		exchange_attached;	/* to the exchange barrier */
	int			exchange_me;	/* participant number: 0 leader, 1.. workers */
	int			nexchanges;		/* scanned sources but the last */
	int			exchanges_done; /* exchanges this participant went through */
	uint16		exchange_stamp; /* EddyRow.mark of the rows written */
	uint64		rows_sent;		/* rows written for the others */
	uint64		rows_replayed;	/* the others' rows replayed */
	TupleTableSlot **exchange_slots;	/* per source, to read rows into */
};

/* exec.c */
extern void EddyExecInit(void);
extern EddyFrame *EddyPushFrame(EddyState *es, EddyModule *m, int dir,
								EddyTuple *probe);

/* replay.c */
extern void EddyReplay(EddyState *es, EddyTuple *t);
extern uint64 *EddySelectionsAlone(EddyState *es);

/* local.c */
extern Node *EddyRewriteForSource(Node *expr, EddySource *src, List *tlist,
								  bool heap);

/* source.c */
extern void EddySourceExhausted(EddyState *es, int i);
extern TupleDesc EddySourceTupleDesc(EddyState *es, int i);

/*
 * The counters the modules, their STAIRs and the node keep, and the
 * router's history of first choices, saved before rows are replayed (state
 * migration, exchanged state) and restored after, so that they count the
 * eddy's own routing only.
 */
typedef struct EddyModuleCounters
{
	EddyModuleStats stats[2];	/* per direction */
	EddyStoreCounters stores[EDDY_MAX_STORES];	/* per store, if any */
} EddyModuleCounters;

typedef struct EddySavedCounters
{
	EddyModuleCounters *modules;	/* per module */
	double		nfiltered1;
	EddyHistoryLane *lanes;		/* the router's history of first choices */
	uint64	   *last_run_tuples;	/* per lane */
} EddySavedCounters;

extern void EddySaveCounters(EddyState *es, EddySavedCounters *saved);
extern void EddyRestoreCounters(EddyState *es, EddySavedCounters *saved);

/*
 * Nothing in flight references transient memory (a point of stasis, or
 * between two tuples state migration replays): rewind it, and forget which
 * rows the wide slot holds (their addresses will be reused).
 */
static inline void
EddyForgetTransient(EddyState *es)
{
	EddyArenaRewind(&es->transient);
	if (es->loaded_any)
	{
		memset(es->loaded, 0, sizeof(EddyRow *) * es->nsources);
		es->loaded_any = false;
	}
}

/* tuple.c */
extern Size EddyStateMemory(EddyState *es);
extern void EddyCheckMemory(EddyState *es);
extern EddyRow *EddyRowMake(EddyArena *arena, EddySource *src, Datum *values,
							bool *isnull, bool transient);
extern EddyRow *EddyRowFromHeapSlot(EddyState *es, EddySource *src,
									TupleTableSlot *slot);
extern EddyRow *EddyRowPersistSlow(EddyState *es, int i, EddyRow *row);
extern EddyTuple *EddyTupleStore(EddyState *es, EddyTuple *t);
extern EddyTuple *EddyTupleJoin(EddyState *es, EddyModule *m, EddyTuple *probe,
								int rel, void *payload);
extern void EddyTupleFillSlot(EddyState *es, EddyTuple *t);

/*
 * Evaluate a predicate on t's rows (the wide slot) with ExecQual semantics,
 * in the per-tuple memory context: a selection's, or an index semi or anti
 * join's inner qual on a match.
 */
static inline bool
EddyPredicateOnTuple(EddyState *es, EddyPredicate *pred, EddyTuple *t)
{
	ExprContext *econtext = es->css.ss.ps.ps_ExprContext;
	MemoryContext oldcontext;
	bool		pass;

	EddyTupleFillSlot(es, t);
	econtext->ecxt_scantuple = es->wide;
	ResetExprContext(econtext);
	oldcontext = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
	pass = EddyPredicateEval(pred, econtext);
	MemoryContextSwitchTo(oldcontext);
	return pass;
}

/*
 * A local chain's filter tg (exec.c, "Local chains"; an index join's fetch
 * chain, mod_indexjoin.c) on econtext's scan tuple, in the current memory
 * context: counted as route_current counts it, and timed when the tuple
 * is.  True if it passed.
 */
static pg_attribute_always_inline bool
EddyLocalFilter(EddyRouteTarget *tg, EddyPredicate *pred, ExprContext *econtext,
				bool timed)
{
	bool		pass;

	tg->stats->in++;
	if (timed)
	{
		double		start = eddy_now_ns();

		pass = EddyPredicateEval(pred, econtext);
		tg->stats->cost_ns += eddy_now_ns() - start;
		tg->stats->samples++;
	}
	else
		pass = EddyPredicateEval(pred, econtext);
	if (pass)
		tg->stats->out++;
	return pass;
}

/* The same, in econtext's per-tuple memory, reset first */
static pg_attribute_always_inline bool
EddyLocalFilterPerTuple(EddyRouteTarget *tg, EddyPredicate *pred,
						ExprContext *econtext, bool timed)
{
	MemoryContext oldcontext;
	bool		pass;

	ResetExprContext(econtext);
	oldcontext = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
	pass = EddyLocalFilter(tg, pred, econtext, timed);
	MemoryContextSwitchTo(oldcontext);
	return pass;
}
extern Datum EddyArenaDatumCopy(EddyArena *arena, Datum d, bool byval, int16 len);

/* An eddy tuple; the caller sets every field, rows included */
static inline EddyTuple *
EddyTupleAlloc(EddyState *es, EddyArena *arena)
{
	return EddyArenaAlloc(arena, offsetof(EddyTuple, rows) +
						  sizeof(EddyRow *) * es->nsources);
}

/*
 * A tuple in state memory: one that state migration took out of its STAIR
 * (EddyStoredTupleFree) if any, else a new one.  A stored tuple belongs to
 * one STAIR entry.
 */
static inline EddyTuple *
EddyStoredTupleAlloc(EddyState *es)
{
	EddyTuple  *t = es->free_tuples;

	if (likely(t == NULL))
		return EddyTupleAlloc(es, &es->stored);
	es->free_tuples = (EddyTuple *) t->rows[0];
	return t;
}

static inline void
EddyStoredTupleFree(EddyState *es, EddyTuple *t)
{
	t->rows[0] = (EddyRow *) es->free_tuples;
	es->free_tuples = t;
}

/* Bytes of a row header of source src: hash slots, and null flags when inline */
static inline Size
EddyRowHeaderSize(EddySource *src, bool inline_nulls)
{
	return MAXALIGN(offsetof(EddyRow, hash) + sizeof(uint32) * src->nhash +
					(inline_nulls ? src->ncols : 0));
}

/*
 * A transient row whose values stay in the source's slot, which keeps its
 * tuple until the next point of stasis, when everything routed from it is
 * gone: what a STAIR keeps is copied by EddyRowPersist.
 */
static inline EddyRow *
EddyRowFromSlot(EddyState *es, EddySource *src, TupleTableSlot *slot)
{
	EddyRow    *row;

	row = (EddyRow *) ((char *) EddyArenaAlloc(&es->transient,
											   sizeof(EddyRow *) +
											   EddyRowHeaderSize(src, false)) +
					   sizeof(EddyRow *));
	row_persistent(row) = NULL;
	row->in_state = false;
	row->mark = 0;
	row->hvalid = 0;
	row->values = slot->tts_values;
	row->isnull = slot->tts_isnull;
	return row;
}

/* The copy of row (of source i) in state memory: made once, then shared */
static inline EddyRow *
EddyRowPersist(EddyState *es, int i, EddyRow *row)
{
	if (row->in_state)
		return row;
	if (row_persistent(row) != NULL)
		return row_persistent(row);
	return EddyRowPersistSlow(es, i, row);
}

/*
 * Store tuple t for a STAIR on relation rel's side: returns the payload,
 * and in *view (unless NULL) a tuple whose rows are the stored ones, for
 * the keys and the probe (transient when the payload is a tagged row).
 */
static inline void *
EddyTupleStoreForJoin(EddyState *es, int rel, EddyTuple *t, EddyTuple **view)
{
	EddyTuple  *stored;

	if (t->done == 0 && t->spans == (1u << rel))
	{
		EddyRow    *row = EddyRowPersist(es, rel, t->rows[rel]);
		EddyTuple  *v;

		if (view == NULL)
			return EddyPayloadFromRow(row);
		v = EddyTupleAlloc(es, &es->transient);
		v->spans = t->spans;
		v->done = 0;
		memset(v->rows, 0, sizeof(EddyRow *) * es->nsources);
		v->rows[rel] = row;
		*view = v;
		return EddyPayloadFromRow(row);
	}
	stored = EddyTupleStore(es, t);
	if (view != NULL)
		*view = stored;
	return stored;
}

/* mod_stems.c: SteM mode */
extern void EddyStemsInit(EddyState *es);
extern void EddyStateModeExplain(EddyState *es, ExplainState *xs);

/* migrate.c */
extern void EddyMigrationInit(EddyState *es);
extern void EddyMigrationStasis(EddyState *es);
extern void EddyMigrationRescan(EddyState *es);
extern void EddyMigrationExplain(EddyState *es, ExplainState *xs);
extern uint64 EddyMigrations(EddyState *es);

/* spill.c */
extern void EddySpillInit(EddyState *es);
extern void EddySpillStart(EddyState *es);
extern void EddySpillForce(EddyState *es);
extern bool EddySpillNextBatch(EddyState *es);
extern TupleTableSlot *EddySpillRead(EddyState *es, int i);
extern void EddySpillOver(EddyState *es);
extern void EddySpillEnd(EddyState *es, bool rescan);
extern void EddySpillExplain(EddyState *es, ExplainState *xs);
extern void EddySpillTotalsNow(EddyState *es, EddySpillTotals *tot);

/* parallel.c */
extern Size EddyEstimateDSM(CustomScanState *node, ParallelContext *pcxt);
extern void EddyInitializeDSM(CustomScanState *node, ParallelContext *pcxt,
							  void *coordinate);
extern void EddyInitializeWorker(CustomScanState *node, shm_toc *toc,
								 void *coordinate);
extern void EddyShutdown(CustomScanState *node);
extern void EddyReInitializeDSM(CustomScanState *node, ParallelContext *pcxt,
								void *coordinate);
extern bool EddyExchangeStart(EddyState *es);
extern bool EddyExchangeMayRead(EddyState *es, int i);
extern void EddyExchangeSource(EddyState *es, int i);
extern void EddyExchangeEnd(EddyState *es);
extern void EddyExplainWorkers(EddyState *es, ExplainState *xs);

/* schedule.c */
extern void EddyScheduleInit(EddyState *es);
extern int	EddyScheduleNext(EddyState *es);
extern void EddyScheduleCheckHold(EddyState *es);

/* explain.c */
extern void EddyExplain(CustomScanState *node, List *ancestors, ExplainState *xs);
extern void EddyExplainLine(ExplainState *xs, const char *fmt,...) pg_attribute_printf(2, 3);
extern void EddyExplainCounters(EddyState *es, EddyModule *m, int dir,
								ExplainState *xs);

#endif							/* EDDY_EXEC_H */
