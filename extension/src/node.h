/*-------------------------------------------------------------------------
 *
 * node.h
 *	  The Eddy node's state (EddyState) and its sources (EddySource).
 *
 * The node's state is read by every layer of the executor: the loop
 * (exec.c, source.c, local.c, replay.c: loop.h) drives it, the services
 * (migrate.c, spill.c, parallel.c: exec.h) and the modules (module.h) act
 * on it, the data files (tuple.c) allocate in its arenas.  This header
 * declares the state only, and no function: what a file may call is
 * declared in its layer's header.  The header graph, each including the
 * one below it: loop.h -> exec.h -> module.h -> tuple.h -> node.h ->
 * routing.h, stair.h, arena.h, private.h, eddy.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EDDY_NODE_H
#define EDDY_NODE_H

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

/* Planner cost units to nanoseconds, for the policies' priors (about 4 us) */
#define EDDY_NS_PER_COST_UNIT	4000.0

/* At most this many hash slots per source row (see mod_hashjoin.c) */
#define EDDY_MAX_HASH_SLOTS		32


typedef struct EddyState EddyState;
typedef struct EddySource EddySource;
typedef struct EddyModule EddyModule;
typedef struct EddyFrame EddyFrame;
typedef struct EddyRow EddyRow;
typedef struct EddyTuple EddyTuple;
typedef struct EddySpill EddySpill;
typedef struct EddySharedStats EddySharedStats;
typedef struct EddyJoinSpec EddyJoinSpec;

/* ----------------------------------------------------------------
 *		Sources
 * ----------------------------------------------------------------
 */

struct EddySource
{
	EddySourceMethod method;
	char	   *name;			/* the relation's alias (a scan: or NULL) */
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
	bool		cut;			/* ... because a module said its remaining
								 * tuples are of no use (module.h, cut) */
	int			exhausted_rank; /* 1 for the first source to run out, ... */
	uint64		nread;			/* tuples read */
	uint64		defer_check_at; /* nread of the next deferral check
								 * (schedule.c, EddyScheduleDefer) */
	uint64		deferred_at;	/* nread when it was deferred, or 0 */
	double		presize_cap;	/* entries its STAIRs are presized for at
								 * most, 0: no cap (schedule.c, "Presizing") */
	uint64		scan_dropped;	/* ... of which its scan dropped (local.c,
								 * local chains), so did not return */
	double		rate;			/* eddy.source_rates (proportional schedule) */
	double		delay_ms;		/* eddy.source_delays */
	double		hold_pct;		/* eddy.routing_hold: percent, 0 if none */
	uint64		hold_rows;		/* ... as rows of the planner's estimate */
	int		   *local_chain;	/* selections over it alone: NULL if none;
								 * else this epoch's first choices of its
								 * tuples that are such selections (local.c) */
	int			local_len;
	int			local_next;		/* ... and the target after it, or -1 */
	bool		local_probe;	/* ... a hash join probed in the scan */
	int			local_recheck;	/* ... tuples until it is computed again */
	uint32		local_exhausted;	/* ... the sources exhausted then */
	bool		local_sels;		/* some selections read it alone */
	uint64		local_generation;	/* the router's generation it is of */
	struct EddyLocalQual *local_qual;	/* the chain in its scan's qual, or
										 * NULL (local.c) */

	/* reached through an index join */
	Oid			heapoid;
	Relation	heap;
	AttrNumber *attnos;
	AttrNumber	attno_run;		/* attnos[0] when the first ncols attnos
								 * are consecutive (rows borrow the heap
								 * slot's arrays, tuple.c), else 0 */
	AttrNumber	max_attno;
	TupleTableSlot *heapslot;
	int			fetched_by;		/* the other end of the index join that
								 * fetches it (set by that join's Begin), or
								 * -1: what its rows hang off (schedule.c) */
	double		fetch_fanout;	/* ... its planner's rows per probing tuple */
	bool		guarded;		/* scanned, not probed per row: the one-row
								 * guard's (join_graph.c) */
};

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
	int		   *source_order;	/* reading order (a deferral changes it) */
	int		   *plan_order;		/* ... as the node began (restored by a
								 * rescan) */
	uint64		random_start;	/* eddy.random_start when the node began */
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
								 * (the state interface's ended)? */
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
	bool		spill_over_now; /* ... and its batch outgrew max_memory */
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

#endif							/* EDDY_NODE_H */
