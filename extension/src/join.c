/*-------------------------------------------------------------------------
 *
 * join.c
 *	  Executor of join eddies: eddy tuples, STAIR and index join modules,
 *	  routing by signature, and the stack-based iterator.
 *
 * The eddy tuple (Deshpande 2004, section 2.2) is an array of pointers to
 * source rows, one per relation of the block (NULL when absent), with two
 * bitmaps: the relations it spans and the modules it has visited (done).
 * A source row holds the deformed values of its relation's columns (the
 * relation's range of the wide tuple, custom_scan_tlist); rows are never
 * deformed twice.  Predicates, join key expressions and the output
 * projection read the node's scan slot, a virtual slot of the wide shape,
 * filled by copying the present rows' values into their ranges.
 *
 * Modules (plan_join.c chose them):
 *	 selection	 a predicate; eligible once the tuple spans its relations and
 *				 its prerequisites are done.
 *	 hash join	 two dual STAIRs (stair.c) on the two sides' keys.  A tuple
 *				 routed to it is inserted into its own side's STAIR and
 *				 probes the other (the Dual Routing Property).
 *	 index join	 probes an index of the relation on side 1 with side 0's
 *				 keys, under the query's snapshot; side 1 is not scanned.
 * A tuple may go to a join only if it spans the join's relation on one
 * side and nothing of the other side (in the spanning tree), and never
 * visits a module twice: that makes every result appear exactly once.
 *
 * Routing: a signature is (spans, done).  The routing table maps it to the
 * next module and direction, or to output (every relation spanned, every
 * module done).  Entries are chosen lazily per epoch by the policy, from
 * per-module, per-direction statistics (tuples in, tuples out, sampled
 * cost; out/in is the selectivity of a selection and the fan-out of a
 * join), recomputed every eddy.reopt_frequency routed tuples as in
 * routing.c.  Sources are read one after another, in
 * PostgreSQL's build order with the centres of stars last (read_source).
 *
 * The iterator (section 2.1.4): a stack of active join modules, each with
 * an outstanding probe.  The eddy drains the top module's matches, routing
 * each; when the stack is empty (a point of stasis) it reads the next
 * source tuple.  The state machine is that loop.
 *
 * Memory: two arenas.  "state" holds what STAIRs keep: a tuple inserted
 * into a STAIR is copied there with its rows (a row is copied once and
 * then shared).  "transient" holds everything else (eddy tuples in flight,
 * probe results, key values) and is rewound at every point of stasis.  A
 * source row is not copied when read: its values stay in the source's
 * slot, valid until that source is read again, which happens only at a
 * point of stasis, when nothing routed from the row is in flight any more.
 * So a row that is never stored (a probe that finds its unique match, a
 * tuple a selection drops) is never copied.  The arenas' total is checked
 * against eddy.max_memory (EddyMaxMemoryBytes) and exceeding it is an
 * ERROR.
 *
 * Hashing: the sides of hash joins that hash the same columns of one
 * relation share a hash slot in its rows (init_hash_slots), so the centre
 * of a star is hashed once, not once per join.  A probe into a unique side
 * (one relation, unique on the join keys) that finds its match does not
 * push a frame: its single result is routed on at once.
 *
 *-------------------------------------------------------------------------
 */
#include "eddy.h"

#include <math.h>
#include <time.h>

#include "access/genam.h"
#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_am.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "port/pg_bitutils.h"
#include "stair.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"

#include "private.h"

#define EDDY_STATS_HALFLIFE_TUPLES	1000.0
#define EDDY_ROUTE_OUT		(-1)

/*
 * A source row.  In state memory: the header, the hash slots, the null
 * flags, then the values (and the by-reference values' bytes), about as
 * compact as a hash join's copy, since a STAIR's footprint is most of its
 * cost.  A transient row (in flight, not stored) is preceded by a pointer
 * to its copy in state memory once one is made (row_persistent), and its
 * values may live elsewhere (the source's slot).
 */
typedef struct EddyRow
{
	Datum	   *values;
	bool	   *isnull;
	uint32		hvalid;			/* which entries of hash[] are computed */
	bool		in_state;
	uint32		hash[FLEXIBLE_ARRAY_MEMBER];	/* the source's hash slots */
} EddyRow;

#define row_persistent(row)	(((EddyRow **) (row))[-1])

#define EDDY_MAX_HASH_SLOTS	32

typedef struct EddyTuple
{
	uint32		spans;			/* relations present */
	uint64		done;			/* modules visited */
	EddyRow    *rows[FLEXIBLE_ARRAY_MEMBER];
} EddyTuple;

typedef struct JSource
{
	int			method;
	int			first_col;
	int			ncols;
	int16	   *typlen;
	bool	   *typbyval;
	int			nhash;			/* hash slots of its rows (see init_hash_slots) */
	bool		byval_only;		/* every column by value: fixed-size rows */
	int		   *nslot_stairs;	/* per hash slot: the STAIRs it probes */
	Stair	 ***slot_stairs;
	/* scanned */
	PlanState  *plan;
	bool		exhausted;
	/* reached through an index */
	Oid			heapoid;
	Relation	heap;
	AttrNumber *attnos;
	AttrNumber	max_attno;
	TupleTableSlot *heapslot;
} JSource;

typedef struct JStats
{
	uint64		in;
	uint64		out;
	uint64		samples;
	double		cost_ns;
	uint64		seen_in;
	uint64		seen_out;
	uint64		seen_samples;
	double		seen_ns;
	double		w_in;
	double		w_out;
	double		w_samples;
	double		w_ns;
	double		score;
} JStats;

typedef struct JModule
{
	int			type;
	char	   *label;			/* for EXPLAIN */
	Expr	   *expr;			/* predicate, or join condition */
	/* selection */
	uint32		rels;
	uint64		prereq;
	ExprState  *qual;
	double		est_cost_ns;
	/* joins */
	int			rel[2];
	uint32		side[2];
	StairJoinKeys keys;
	Stair	   *stair[2];
	int			nkeys;
	int		   *keycol[2];		/* per key: column of the side's row, or -1 */
	ExprState **keyexpr[2];		/* per key, when not a plain column */
	int16	   *keylen[2];
	bool	   *keybyval[2];
	bool		plainkeys[2];	/* every key a column of the side's row */
	bool		byvalkeys[2];	/* ... and passed by value */
	int			hslot[2];		/* the row's hash slot of the keys, or -1 */
	/* index join */
	Oid			indexoid;
	Relation	index;
	IndexScanDesc scan;
	ScanKey		skeys;			/* in index column order */
	int		   *skey_of_key;	/* key k's scan key */
	bool		unique[2];		/* a probe into side s finds at most one match */
	double		est_rows[2];	/* planner's rows of each side's relation */
	JStats		stats[2];		/* per direction */
} JModule;

typedef struct JFrame
{
	JModule    *mod;
	int			dir;
	EddyTuple  *probe;
	StairProbe	sp;
} JFrame;

typedef struct JRouteEntry
{
	uint32		spans;
	uint64		done;
	uint32		epoch;			/* 0: empty slot */
	int			choice;			/* module * 2 + direction, or EDDY_ROUTE_OUT */
} JRouteEntry;

typedef struct EddyJoinState
{
	CustomScanState *node;
	int			nsources;
	JSource    *sources;
	int			nmodules;
	JModule    *modules;
	uint32		all_rels;
	uint64		all_done;
	TupleTableSlot *wide;
	EddyRow   **loaded;			/* row whose values are in the wide slot */
	bool		loaded_any;		/* is an entry of loaded set? */
	EddyArena	state;			/* what STAIRs keep */
	EddyArena	transient;		/* rewound at every point of stasis */
	Size		max_memory;
	Size		peak_memory;
	JFrame	   *stack;
	int			nstack;
	int		   *source_order;	/* reading order of the relations */
	int			next_source;	/* position in source_order */
	/* routing */
	EddyRoutingPolicy policy;
	int			reopt_frequency;
	int			lottery_window;
	JRouteEntry *routes;
	uint32		nroutes;		/* slots, a power of two */
	uint32		nroutes_used;
	uint32		epoch;
	uint64		routed;
	int64		until_reopt;
	uint64		stats_routed;
	uint64		recomputations;
	int			until_sample;
	pg_prng_state rng;
	uint64		inserts;		/* STAIR insertions, for memory checks */
	bool		output_reads_columns;	/* does the output read the wide slot? */
	Datum	   *fetch_values;	/* scratch for index fetches */
	bool	   *fetch_isnull;
} EddyJoinState;

static EddyTuple *join_tuples(EddyJoinState *js, JModule *m, int dir,
							  EddyTuple *probe, void *payload);
static inline bool join_keys(EddyJoinState *js, JModule *m, int side,
							 EddyTuple *t, Datum *values, EddyArena *arena);

/* ----------------------------------------------------------------
 *		Memory
 * ----------------------------------------------------------------
 */

static void
check_memory(EddyJoinState *js)
{
	Size		used = js->state.allocated + js->transient.allocated +
		MemoryContextMemAllocated(js->state.cxt, false) +
		MemoryContextMemAllocated(js->transient.cxt, false);

	if (used > js->peak_memory)
		js->peak_memory = used;
	if (used > js->max_memory)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("eddy join state exceeds eddy.max_memory (%zu kB)",
						js->max_memory / 1024),
				 errhint("Raise eddy.max_memory, or work_mem / hash_mem_multiplier when eddy.max_memory is -1.")));
}

/* Bytes of a row header of source src: hash slots, and null flags when inline */
static inline Size
row_header_size(JSource *src, bool inline_nulls)
{
	return MAXALIGN(offsetof(EddyRow, hash) + sizeof(uint32) * src->nhash +
					(inline_nulls ? src->ncols : 0));
}

/*
 * A row of source src from values/isnull, in one allocation from the
 * arena (see EddyRow).  A transient row gets its row_persistent pointer.
 */
static EddyRow *
make_row(EddyArena *arena, JSource *src, Datum *values, bool *isnull,
		 bool transient)
{
	Size		prefix = transient ? sizeof(EddyRow *) : 0;
	Size		hsize = row_header_size(src, true);
	Size		size = prefix + hsize + src->ncols * sizeof(Datum);
	EddyRow    *row;
	char	   *data;
	int			c;

	if (!src->byval_only)
		for (c = 0; c < src->ncols; c++)
			if (!isnull[c] && !src->typbyval[c])
				size += MAXALIGN(datumGetSize(values[c], false, src->typlen[c]));
	row = (EddyRow *) ((char *) EddyArenaAlloc(arena, size) + prefix);
	if (transient)
		row_persistent(row) = NULL;
	row->in_state = false;
	row->hvalid = 0;
	row->isnull = (bool *) ((char *) row + offsetof(EddyRow, hash) +
							sizeof(uint32) * src->nhash);
	row->values = (Datum *) ((char *) row + hsize);
	memcpy(row->isnull, isnull, sizeof(bool) * src->ncols);
	if (src->byval_only)
	{
		/* the common case of integer keys and columns */
		memcpy(row->values, values, sizeof(Datum) * src->ncols);
		return row;
	}
	data = (char *) (row->values + src->ncols);
	for (c = 0; c < src->ncols; c++)
	{
		if (isnull[c] || src->typbyval[c])
			row->values[c] = values[c];
		else
		{
			Size		len = datumGetSize(values[c], false, src->typlen[c]);

			memcpy(data, DatumGetPointer(values[c]), len);
			row->values[c] = PointerGetDatum(data);
			data += MAXALIGN(len);
		}
	}
	return row;
}

/*
 * The copy of a row in state memory (made once, then shared), with the
 * hashes computed so far.
 */
static EddyRow *
persist_row(EddyJoinState *js, int i, EddyRow *row)
{
	JSource    *src = &js->sources[i];
	EddyRow    *copy;

	if (row->in_state)
		return row;
	if (row_persistent(row) != NULL)
		return row_persistent(row);
	copy = make_row(&js->state, src, row->values, row->isnull, false);
	copy->in_state = true;
	copy->hvalid = row->hvalid;
	if (row->hvalid != 0)
		memcpy(copy->hash, row->hash, sizeof(uint32) * src->nhash);
	row_persistent(row) = copy;
	return copy;
}

/* An eddy tuple; the caller sets every field, rows included */
static inline EddyTuple *
alloc_tuple(EddyJoinState *js, EddyArena *arena)
{
	return EddyArenaAlloc(arena, offsetof(EddyTuple, rows) +
						  sizeof(EddyRow *) * js->nsources);
}

/* A tuple's copy in state memory, for a STAIR to keep */
static EddyTuple *
store_tuple(EddyJoinState *js, EddyTuple *t)
{
	EddyTuple  *s = alloc_tuple(js, &js->state);
	uint32		bits = t->spans;

	s->spans = t->spans;
	s->done = t->done;
	memset(s->rows, 0, sizeof(EddyRow *) * js->nsources);
	while (bits != 0)
	{
		int			i = pg_rightmost_one_pos32(bits);

		s->rows[i] = persist_row(js, i, t->rows[i]);
		bits &= bits - 1;
	}
	return s;
}

/*
 * What a STAIR keeps.  A tuple that is one fresh source row (one relation,
 * no module done), by far the most common, is kept as its row alone, the
 * pointer tagged in its low bit: no tuple header, no row-pointer array, so
 * a STAIR's entries are about as small as a hash join's.  A STAIR's rows
 * are all of the relation on its side of the join.
 */
#define STORED_ROW_TAG	((uintptr_t) 1)

static inline bool
stored_is_row(void *payload)
{
	return ((uintptr_t) payload & STORED_ROW_TAG) != 0;
}

static inline EddyRow *
stored_row(void *payload)
{
	return (EddyRow *) ((uintptr_t) payload & ~STORED_ROW_TAG);
}

/*
 * Store tuple t for side dir of join m: returns the STAIR payload, and in
 * *view (unless NULL) a tuple whose rows are the stored ones, for the keys
 * and the probe (transient when the payload is a tagged row).
 */
static void *
store_for_join(EddyJoinState *js, JModule *m, int dir, EddyTuple *t,
			   EddyTuple **view)
{
	int			rel = m->rel[dir];
	EddyTuple  *stored;

	if (t->done == 0 && t->spans == (1u << rel))
	{
		EddyRow    *row = persist_row(js, rel, t->rows[rel]);
		EddyTuple  *v;

		if (view == NULL)
			return (void *) ((uintptr_t) row | STORED_ROW_TAG);
		v = alloc_tuple(js, &js->transient);

		v->spans = t->spans;
		v->done = 0;
		memset(v->rows, 0, sizeof(EddyRow *) * js->nsources);
		v->rows[rel] = row;
		*view = v;
		return (void *) ((uintptr_t) row | STORED_ROW_TAG);
	}
	stored = store_tuple(js, t);
	if (view != NULL)
		*view = stored;
	return stored;
}

/* A by-reference datum copied into the arena */
static Datum
arena_datum_copy(EddyArena *arena, Datum d, bool byval, int16 len)
{
	Size		size;
	char	   *p;

	if (byval)
		return d;
	size = datumGetSize(d, false, len);
	p = EddyArenaAlloc(arena, size);
	memcpy(p, DatumGetPointer(d), size);
	return PointerGetDatum(p);
}

/* Put the tuple's rows into the wide slot */
static void
fill_slot(EddyJoinState *js, EddyTuple *t)
{
	TupleTableSlot *slot = js->wide;
	int			i;

	ExecClearTuple(slot);
	for (i = 0; i < js->nsources; i++)
	{
		EddyRow    *row = t->rows[i];
		JSource    *src = &js->sources[i];

		Datum	   *values;
		bool	   *isnull;
		int			c;

		if (row == NULL || js->loaded[i] == row)
			continue;
		/* ranges are a few columns: a loop beats two calls of memcpy */
		values = slot->tts_values + src->first_col;
		isnull = slot->tts_isnull + src->first_col;
		for (c = 0; c < src->ncols; c++)
		{
			values[c] = row->values[c];
			isnull[c] = row->isnull[c];
		}
		js->loaded[i] = row;
		js->loaded_any = true;
	}
	ExecStoreVirtualTuple(slot);
}

/* ----------------------------------------------------------------
 *		Setup
 * ----------------------------------------------------------------
 */

static void
init_key_side(EddyJoinState *js, JModule *m, int side, List *exprs_idx,
			  List *custom_exprs, PlanState *parent)
{
	JSource    *src = &js->sources[m->rel[side]];
	int			k = 0;
	ListCell   *lc;

	m->keycol[side] = palloc(sizeof(int) * Max(m->nkeys, 1));
	m->keyexpr[side] = palloc0(sizeof(ExprState *) * Max(m->nkeys, 1));
	m->keylen[side] = palloc(sizeof(int16) * Max(m->nkeys, 1));
	m->keybyval[side] = palloc(sizeof(bool) * Max(m->nkeys, 1));
	m->plainkeys[side] = true;
	m->byvalkeys[side] = true;
	m->hslot[side] = -1;
	foreach(lc, exprs_idx)
	{
		Expr	   *e = list_nth(custom_exprs, intVal(lfirst(lc)));
		Var		   *var = (Var *) e;

		get_typlenbyval(exprType((Node *) e), &m->keylen[side][k], &m->keybyval[side][k]);
		if (IsA(var, Var) && var->varno == INDEX_VAR &&
			var->varattno - 1 >= src->first_col &&
			var->varattno - 1 < src->first_col + src->ncols)
		{
			m->keycol[side][k] = var->varattno - 1 - src->first_col;
		}
		else
		{
			m->keycol[side][k] = -1;
			m->keyexpr[side][k] = ExecInitExpr(e, parent);
			m->plainkeys[side] = false;
		}
		if (!m->keybyval[side][k])
			m->byvalkeys[side] = false;
		k++;
	}
}

/*
 * Hash slots.  The sides of hash joins that hash the same columns of the
 * same relation with the same functions and collations compute the same
 * hash value: in a star, every join of the centre hashes its key column.
 * Such sides share a slot in the relation's rows, so a row is hashed once
 * per slot however many joins it meets.  Sides with computed keys get no
 * slot (and so do sides past EDDY_MAX_HASH_SLOTS slots of one relation).
 */
static void
init_hash_slots(EddyJoinState *js)
{
	int			mi;

	for (mi = 0; mi < js->nsources; mi++)
	{
		js->sources[mi].nslot_stairs = palloc0(sizeof(int) * EDDY_MAX_HASH_SLOTS);
		js->sources[mi].slot_stairs = palloc0(sizeof(Stair **) * EDDY_MAX_HASH_SLOTS);
	}
	for (mi = 0; mi < js->nmodules; mi++)
	{
		JModule    *m = &js->modules[mi];
		int			side;

		if (m->type != EDDY_MODULE_HASH_JOIN)
			continue;
		for (side = 0; side < 2; side++)
		{
			JSource    *src = &js->sources[m->rel[side]];
			int			oj;

			if (!m->plainkeys[side])
				continue;
			/* an earlier side with the same columns and hash functions? */
			for (oj = 0; oj < mi * 2 + side && m->hslot[side] < 0; oj++)
			{
				JModule    *o = &js->modules[oj / 2];
				int			os = oj % 2;
				int			k;
				bool		same;

				if (o->type != EDDY_MODULE_HASH_JOIN || o->hslot[os] < 0 ||
					o->rel[os] != m->rel[side] || o->nkeys != m->nkeys)
					continue;
				same = true;
				for (k = 0; k < m->nkeys && same; k++)
					same = o->keycol[os][k] == m->keycol[side][k] &&
						o->keys.hash[os][k].fn_oid == m->keys.hash[side][k].fn_oid &&
						o->keys.collations[k] == m->keys.collations[k];
				if (same)
					m->hslot[side] = o->hslot[os];
			}
			if (m->hslot[side] < 0 && src->nhash < EDDY_MAX_HASH_SLOTS)
				m->hslot[side] = src->nhash++;
			if (m->hslot[side] >= 0)
			{
				/* per slot, the STAIRs a row's hash probes: prefetched together */
				int			h = m->hslot[side];

				if (src->slot_stairs[h] == NULL)
					src->slot_stairs[h] = palloc(sizeof(Stair *) * 2 * js->nmodules);
				src->slot_stairs[h][src->nslot_stairs[h]++] = m->stair[1 - side];
			}
		}
	}
}

static void
init_index_join(EddyJoinState *js, JModule *m, List *opnos, Oid indexoid, List *cols)
{
	JSource    *inner = &js->sources[m->rel[1]];
	int			k;

	m->indexoid = indexoid;
	m->index = index_open(m->indexoid, AccessShareLock);
	m->skeys = palloc0(sizeof(ScanKeyData) * Max(m->nkeys, 1));
	for (k = 0; k < m->nkeys; k++)
	{
		/* the plan orients operators side 0 (outer) on the left: commute */
		Oid			opno = get_commutator((Oid) intVal(list_nth(opnos, k)));
		int			col = intVal(list_nth(cols, k));
		Oid			opfamily = m->index->rd_opfamily[col - 1];
		int			strategy;
		Oid			lefttype;
		Oid			righttype;

		if (!OidIsValid(opno))
			elog(ERROR, "eddy: no commutator for an index join operator");
		get_op_opfamily_properties(opno, opfamily, false, &strategy, &lefttype,
								   &righttype);
		ScanKeyEntryInitialize(&m->skeys[k], 0, col, strategy, righttype,
							   m->keys.collations[k], get_opcode(opno), (Datum) 0);
	}
	/* btree wants its scan keys in index column order: sort, keep a map */
	m->skey_of_key = palloc(sizeof(int) * Max(m->nkeys, 1));
	for (k = 0; k < m->nkeys; k++)
		m->skey_of_key[k] = k;
	for (k = 1; k < m->nkeys; k++)
	{
		int			j;

		for (j = k; j > 0 &&
			 m->skeys[j - 1].sk_attno > m->skeys[j].sk_attno; j--)
		{
			ScanKeyData tmp = m->skeys[j];
			int			a;
			int			b;

			m->skeys[j] = m->skeys[j - 1];
			m->skeys[j - 1] = tmp;
			/* keys whose scan key sat at j and j - 1 swap places */
			for (a = 0; a < m->nkeys; a++)
			{
				b = m->skey_of_key[a];
				if (b == j)
					m->skey_of_key[a] = j - 1;
				else if (b == j - 1)
					m->skey_of_key[a] = j;
			}
		}
	}
	m->scan = index_beginscan(inner->heap, m->index,
							  js->node->ss.ps.state->es_snapshot, m->nkeys, 0);
}

EddyJoinState *
EddyJoinBegin(CustomScanState *node, EState *estate, int eflags)
{
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *sources = list_nth(cscan->custom_private, EddyPrivSources);
	List	   *modules = list_nth(cscan->custom_private, EddyPrivModules);
	EddyJoinState *js = palloc0(sizeof(EddyJoinState));
	TupleDesc	wide_desc = node->ss.ss_ScanTupleSlot->tts_tupleDescriptor;
	List	   *child_states = NIL;
	int			nstairs = 0;
	int			i;
	ListCell   *lc;

	js->node = node;
	js->wide = node->ss.ss_ScanTupleSlot;
	js->nsources = list_length(sources);
	js->sources = palloc0(sizeof(JSource) * js->nsources);
	js->loaded = palloc0(sizeof(EddyRow *) * js->nsources);
	js->all_rels = (js->nsources >= 32) ? ~0u : ((1u << js->nsources) - 1);
	EddyArenaInit(&js->state, AllocSetContextCreate(estate->es_query_cxt, "eddy join state",
													ALLOCSET_DEFAULT_SIZES));
	EddyArenaInit(&js->transient, AllocSetContextCreate(estate->es_query_cxt,
														"eddy transient tuples",
														ALLOCSET_DEFAULT_SIZES));

	/* sources */
	for (i = 0; i < js->nsources; i++)
	{
		List	   *s = list_nth(sources, i);
		JSource    *src = &js->sources[i];
		int			c;

		Assert(list_length(s) == EddySourceNumItems);
		src->method = intVal(list_nth(s, EddySourceMethodItem));
		src->first_col = intVal(list_nth(s, EddySourceFirstCol));
		src->ncols = intVal(list_nth(s, EddySourceNumCols));
		src->typlen = palloc(sizeof(int16) * Max(src->ncols, 1));
		src->typbyval = palloc(sizeof(bool) * Max(src->ncols, 1));
		src->byval_only = true;
		for (c = 0; c < src->ncols; c++)
		{
			Form_pg_attribute att = TupleDescAttr(wide_desc, src->first_col + c);

			src->typlen[c] = att->attlen;
			src->typbyval[c] = att->attbyval;
			if (!att->attbyval)
				src->byval_only = false;
		}
		if (src->method == EDDY_SOURCE_SCAN)
		{
			Plan	   *child = list_nth(cscan->custom_plans,
											 intVal(list_nth(s, EddySourcePlan)));

			src->plan = ExecInitNode(child, estate, eflags);
			child_states = lappend(child_states, src->plan);
		}
		else
		{
			List	   *attnos = list_nth(s, EddySourceHeapAttnos);
			int			k = 0;
			ListCell   *lc2;

			src->heapoid = (Oid) intVal(list_nth(s, EddySourceHeapOid));
			src->heap = table_open(src->heapoid, AccessShareLock);
			src->attnos = palloc(sizeof(AttrNumber) * Max(src->ncols, 1));
			foreach(lc2, attnos)
			{
				src->attnos[k] = intVal(lfirst(lc2));
				src->max_attno = Max(src->max_attno, src->attnos[k]);
				k++;
			}
			src->heapslot = table_slot_create(src->heap, NULL);
		}
	}
	{
		int			maxcols = 1;

		for (i = 0; i < js->nsources; i++)
			maxcols = Max(maxcols, js->sources[i].ncols);
		js->fetch_values = palloc(sizeof(Datum) * maxcols);
		js->fetch_isnull = palloc(sizeof(bool) * maxcols);
	}
	node->custom_ps = child_states;

	/* modules */
	js->nmodules = list_length(modules);
	js->modules = palloc0(sizeof(JModule) * Max(js->nmodules, 1));
	i = 0;
	foreach(lc, modules)
	{
		List	   *md = lfirst(lc);
		JModule    *m = &js->modules[i];

		/* the kind is the first item of every module description */
		StaticAssertStmt(EddySelKind == 0 && EddyJoinKind == 0,
						 "module kind must come first");
		m->type = intVal(list_nth(md, EddySelKind));
		if (m->type == EDDY_MODULE_SELECTION)
		{
			ListCell   *lc2;

			Assert(list_length(md) == EddySelNumItems);
			m->rels = (uint32) intVal(list_nth(md, EddySelSources));
			foreach(lc2, (List *) list_nth(md, EddySelPrereqs))
				m->prereq |= UINT64CONST(1) << intVal(lfirst(lc2));
			m->expr = list_nth(cscan->custom_exprs, intVal(list_nth(md, EddySelExpr)));
			m->qual = ExecInitQual(list_make1(m->expr), &node->ss.ps);
			m->est_cost_ns = floatVal(list_nth(md, EddySelEstCost)) * 4000.0;
			m->label = "Selection";
		}
		else
		{
			List	   *ends = list_nth(md, EddyJoinEnds);
			List	   *sides = list_nth(md, EddyJoinSides);
			List	   *ops = list_nth(md, EddyJoinOperators);
			List	   *uniq = list_nth(md, EddyJoinUnique);

			Assert(list_length(md) == EddyJoinNumItems);
			m->rel[0] = intVal(linitial(ends));
			m->rel[1] = intVal(lsecond(ends));
			m->side[0] = (uint32) intVal(linitial(sides));
			m->side[1] = (uint32) intVal(lsecond(sides));
			m->nkeys = list_length(ops);
			{
				List	   *opnos = NIL;
				List	   *colls = NIL;
				ListCell   *lc2;

				foreach(lc2, ops)
					opnos = lappend_oid(opnos, (Oid) intVal(lfirst(lc2)));
				foreach(lc2, (List *) list_nth(md, EddyJoinCollations))
					colls = lappend_oid(colls, (Oid) intVal(lfirst(lc2)));
				StairJoinKeysInit(&m->keys, opnos, colls);
			}
			init_key_side(js, m, 0, list_nth(md, EddyJoinKeys0), cscan->custom_exprs,
						  &node->ss.ps);
			init_key_side(js, m, 1, list_nth(md, EddyJoinKeys1), cscan->custom_exprs,
						  &node->ss.ps);
			m->expr = list_nth(cscan->custom_exprs, intVal(list_nth(md, EddyJoinCondition)));
			m->unique[0] = intVal(linitial(uniq)) != 0;
			m->unique[1] = intVal(lsecond(uniq)) != 0;
			if (m->type == EDDY_MODULE_HASH_JOIN)
			{
				MemoryContext old = MemoryContextSwitchTo(estate->es_query_cxt);

				m->stair[0] = StairCreateInArena(&m->keys, 0, &js->state);
				m->stair[1] = StairCreateInArena(&m->keys, 1, &js->state);
				if (m->unique[0])
					StairSetUnique(m->stair[0]);
				if (m->unique[1])
					StairSetUnique(m->stair[1]);
				/* size the bucket arrays from the planner's estimates */
				m->est_rows[0] = floatVal(linitial((List *) list_nth(md, EddyJoinEstRows)));
				m->est_rows[1] = floatVal(lsecond((List *) list_nth(md, EddyJoinEstRows)));
				MemoryContextSwitchTo(old);
				m->label = "Hash Join";
				nstairs += 2;
			}
			else
			{
				init_index_join(js, m, ops,
								(Oid) intVal(list_nth(md, EddyJoinIndexOid)),
								list_nth(md, EddyJoinIndexCols));
				m->label = "Index Join";
			}
		}
		i++;
	}
	init_hash_slots(js);
	js->all_done = (js->nmodules >= 64) ? ~UINT64CONST(0) :
		((UINT64CONST(1) << js->nmodules) - 1);
	js->max_memory = EddyMaxMemoryBytes(Max(nstairs, 1));
	js->stack = palloc(sizeof(JFrame) * Max(js->nmodules, 1));
	js->source_order = palloc(sizeof(int) * js->nsources);
	i = 0;
	foreach(lc, (List *) list_nth(cscan->custom_private, EddyPrivSourceOrder))
		js->source_order[i++] = intVal(lfirst(lc));
	Assert(i == js->nsources);

	/* the output needs the wide slot filled unless its projection reads none */
	js->output_reads_columns = node->ss.ps.ps_ProjInfo == NULL ||
		pull_var_clause((Node *) cscan->scan.plan.targetlist,
						PVC_RECURSE_AGGREGATES | PVC_RECURSE_WINDOWFUNCS |
						PVC_INCLUDE_PLACEHOLDERS) != NIL;

	js->policy = (EddyRoutingPolicy) eddy_routing_policy;
	js->reopt_frequency = eddy_reopt_frequency;
	js->lottery_window = eddy_lottery_window;
	js->nroutes = 1024;
	js->routes = palloc0(sizeof(JRouteEntry) * js->nroutes);
	js->epoch = 1;
	js->until_reopt = js->reopt_frequency;
	js->until_sample = 1;
	pg_prng_seed(&js->rng, UINT64CONST(0x5eed0edd) ^ (uint64) cscan->scan.plan.plan_node_id);
	return js;
}

/* ----------------------------------------------------------------
 *		Routing
 * ----------------------------------------------------------------
 */

static double
stats_cost(JStats *st, double prior)
{
	if (st->w_samples > 1e-9)
		return Max(st->w_ns / st->w_samples, 1.0);
	if (st->samples > 0)
		return Max(st->cost_ns / st->samples, 1.0);
	return Max(prior, 1.0);
}

static void
reoptimize(EddyJoinState *js)
{
	double		decay;
	int			m;

	js->until_reopt = js->reopt_frequency;
	if (js->policy == EDDY_POLICY_FIXED)
		return;					/* PostgreSQL's order never changes */
	decay = exp2(-(double) (js->routed - js->stats_routed) / EDDY_STATS_HALFLIFE_TUPLES);
	js->stats_routed = js->routed;
	for (m = 0; m < js->nmodules; m++)
	{
		JModule    *mod = &js->modules[m];
		int			d;

		for (d = 0; d < 2; d++)
		{
			JStats	   *st = &mod->stats[d];
			double		ratio;
			double		cost;

			st->w_in = st->w_in * decay + (double) (st->in - st->seen_in);
			st->w_out = st->w_out * decay + (double) (st->out - st->seen_out);
			st->w_samples = st->w_samples * decay + (double) (st->samples - st->seen_samples);
			st->w_ns = st->w_ns * decay + (st->cost_ns - st->seen_ns);
			st->seen_in = st->in;
			st->seen_out = st->out;
			st->seen_samples = st->samples;
			st->seen_ns = st->cost_ns;

			/* selectivity or fan-out, with a prior of 1 tuple */
			ratio = (st->w_out + (mod->type == EDDY_MODULE_SELECTION ? 0.5 : 1.0)) /
				(st->w_in + 1.0);
			cost = stats_cost(st, mod->type == EDDY_MODULE_SELECTION ? mod->est_cost_ns : 1000.0);
			switch (js->policy)
			{
				case EDDY_POLICY_RANK:
					st->score = (1.0 - ratio) / cost;
					break;
				case EDDY_POLICY_LOTTERY:
					{
						double		tickets = 1.0 + (double) st->in - (double) st->out;

						st->score = Max(tickets, 1.0) / cost;
					}
					break;
				default:
					st->score = 0.0;
					break;
			}
		}
	}
	js->epoch++;
	if (js->epoch == 0)
	{
		memset(js->routes, 0, sizeof(JRouteEntry) * js->nroutes);
		js->nroutes_used = 0;
		js->epoch = 1;
	}
	js->recomputations++;
}

/* Can module m take tuple t, and in which direction? (-1: no) */
static int
eligible_dir(EddyJoinState *js, JModule *m, int mi, uint32 spans, uint64 done)
{
	if (done & (UINT64CONST(1) << mi))
		return -1;
	if (m->type == EDDY_MODULE_SELECTION)
		return ((m->rels & ~spans) == 0 && (m->prereq & ~done) == 0) ? 0 : -1;
	if ((spans & (1u << m->rel[0])) && (spans & ~m->side[0]) == 0)
		return 0;
	if (m->type == EDDY_MODULE_HASH_JOIN &&
		(spans & (1u << m->rel[1])) && (spans & ~m->side[1]) == 0)
		return 1;
	return -1;
}

static int
choose_route(EddyJoinState *js, uint32 spans, uint64 done)
{
	int			cand[2 * EDDY_MAX_MODULES];
	int			n = 0;
	int			m;
	int			choice = -1;

	if (spans == js->all_rels && done == js->all_done)
		return EDDY_ROUTE_OUT;
	for (m = 0; m < js->nmodules; m++)
	{
		int			d = eligible_dir(js, &js->modules[m], m, spans, done);

		if (d >= 0)
			cand[n++] = m * 2 + d;
	}
	if (n == 0)
		elog(ERROR, "eddy: no module can take a tuple spanning %x with modules %llx done",
			 spans, (unsigned long long) done);
	switch (js->policy)
	{
		case EDDY_POLICY_FIXED:
			choice = cand[0];
			break;
		case EDDY_POLICY_RANDOM:
			choice = cand[pg_prng_uint64_range(&js->rng, 0, n - 1)];
			break;
		case EDDY_POLICY_RANK:
			{
				double		best = 0;
				int			k;

				for (k = 0; k < n; k++)
				{
					double		s = js->modules[cand[k] / 2].stats[cand[k] % 2].score;

					if (choice < 0 || s > best)
					{
						best = s;
						choice = cand[k];
					}
				}
			}
			break;
		case EDDY_POLICY_LOTTERY:
			{
				double		total = 0;
				double		draw;
				int			k;

				for (k = 0; k < n; k++)
					total += js->modules[cand[k] / 2].stats[cand[k] % 2].score;
				draw = pg_prng_double(&js->rng) * total;
				for (k = 0; k < n; k++)
				{
					choice = cand[k];
					draw -= js->modules[cand[k] / 2].stats[cand[k] % 2].score;
					if (draw < 0)
						break;
				}
			}
			break;
	}
	return choice;
}

static inline uint32
route_hash(uint32 spans, uint64 done)
{
	uint64		h = done * UINT64CONST(0x9E3779B97F4A7C15) ^ ((uint64) spans << 17) ^ spans;

	return (uint32) (h ^ (h >> 29));
}

static void
routes_grow(EddyJoinState *js)
{
	JRouteEntry *old = js->routes;
	uint32		oldn = js->nroutes;
	uint32		i;

	js->nroutes *= 2;
	js->routes = palloc0(sizeof(JRouteEntry) * js->nroutes);
	js->nroutes_used = 0;
	for (i = 0; i < oldn; i++)
	{
		if (old[i].epoch == js->epoch)
		{
			uint32		h = route_hash(old[i].spans, old[i].done) & (js->nroutes - 1);

			while (js->routes[h].epoch != 0)
				h = (h + 1) & (js->nroutes - 1);
			js->routes[h] = old[i];
			js->nroutes_used++;
		}
	}
	pfree(old);
}

/* The routing decision for a signature: one table lookup in this epoch */
static int
route(EddyJoinState *js, uint32 spans, uint64 done)
{
	uint32		h;
	JRouteEntry *e;

	if (unlikely(--js->until_reopt <= 0))
		reoptimize(js);
	js->routed++;
	h = route_hash(spans, done) & (js->nroutes - 1);
	for (;;)
	{
		e = &js->routes[h];
		if (e->epoch == 0 || (e->spans == spans && e->done == done))
			break;
		h = (h + 1) & (js->nroutes - 1);
	}
	if (e->epoch == js->epoch)
		return e->choice;
	if (e->epoch == 0)
	{
		if (js->nroutes_used * 2 >= js->nroutes)
		{
			routes_grow(js);
			return route(js, spans, done);
		}
		js->nroutes_used++;
	}
	e->spans = spans;
	e->done = done;
	e->epoch = js->epoch;
	e->choice = choose_route(js, spans, done);
	return e->choice;
}

/* ----------------------------------------------------------------
 *		Modules
 * ----------------------------------------------------------------
 */

/*
 * Key values of tuple t on side `side` of join m; false if a key is NULL.
 * Computed keys of by-reference types are copied into the arena.
 */
static bool
join_keys_computed(EddyJoinState *js, JModule *m, int side, EddyTuple *t,
				   Datum *values, EddyArena *arena)
{
	EddyRow    *row = t->rows[m->rel[side]];
	ExprContext *econtext = js->node->ss.ps.ps_ExprContext;
	bool		filled = false;
	int			k;

	for (k = 0; k < m->nkeys; k++)
	{
		int			col = m->keycol[side][k];

		if (col >= 0)
		{
			if (row->isnull[col])
				return false;
			values[k] = row->values[col];
		}
		else
		{
			bool		isnull;
			Datum		d;

			if (!filled)
			{
				fill_slot(js, t);
				econtext->ecxt_scantuple = js->wide;
				ResetExprContext(econtext);
				filled = true;
			}
			d = ExecEvalExprSwitchContext(m->keyexpr[side][k], econtext, &isnull);
			if (isnull)
				return false;
			/* by-reference results must outlive the per-tuple context */
			values[k] = arena_datum_copy(arena, d, m->keybyval[side][k],
										 m->keylen[side][k]);
		}
	}
	return true;
}

static inline bool
join_keys(EddyJoinState *js, JModule *m, int side, EddyTuple *t, Datum *values,
		  EddyArena *arena)
{
	if (likely(m->plainkeys[side]))
	{
		EddyRow    *row = t->rows[m->rel[side]];
		int			k;

		for (k = 0; k < m->nkeys; k++)
		{
			int			col = m->keycol[side][k];

			if (row->isnull[col])
				return false;
			values[k] = row->values[col];
		}
		return true;
	}
	return join_keys_computed(js, m, side, t, values, arena);
}

/*
 * The hash of t's side `side` keys of join m, computed once per row slot.
 * When it is computed, the buckets of every STAIR that the slot's hash will
 * probe are prefetched: a tuple at the centre of a star probes them one
 * after the other, and their cache misses then overlap instead of adding
 * up (the probes' cost was mostly those misses).
 */
static inline uint32
join_hash(EddyJoinState *js, JModule *m, int side, EddyTuple *t, Datum *keys)
{
	int			slot = m->hslot[side];
	EddyRow    *row;
	uint32		hash;

	if (slot < 0)
	{
		StairKeysHash(&m->keys, side, keys, NULL, &hash);
		return hash;
	}
	row = t->rows[m->rel[side]];
	if (row->hvalid & (1u << slot))
		return row->hash[slot];
	StairKeysHash(&m->keys, side, keys, NULL, &hash);
	row->hash[slot] = hash;
	row->hvalid |= 1u << slot;
	{
		JSource    *src = &js->sources[m->rel[side]];
		int			n = src->nslot_stairs[slot];

		if (n > 1)
		{
			Stair	  **stairs = src->slot_stairs[slot];
			int			i;

			for (i = 0; i < n; i++)
				__builtin_prefetch(&stairs[i]->buckets[hash & (stairs[i]->nbuckets - 1)]);
		}
	}
	return hash;
}

/*
 * Insert into side dir's STAIR; the first insertion sizes its bucket array
 * from the planner's estimate (a STAIR only probed keeps its small one).
 * The memory limit is checked every 64 insertions (and by the arenas'
 * block counts in between, which grow 64 kB at a time).
 */
static inline void
stair_insert(EddyJoinState *js, JModule *m, int dir, uint32 hash, Datum *keys,
			 void *payload)
{
	Stair	   *stair = m->stair[dir];

	if (unlikely(stair->nentries == 0 && stair->ngroups == 0))
		StairPresize(stair, Min(m->est_rows[dir],
								(double) js->max_memory / 4 / sizeof(void *)));
	StairInsert(stair, hash, keys, payload);
	if (unlikely((++js->inserts & 63) == 0))
		check_memory(js);
}

/*
 * Route tuple t into join m in direction dir.  Hash join: insert t's
 * stored copy into its side's STAIR and start probing the dual STAIR.
 * Index join: start an index scan with t's keys.  A frame is pushed for
 * the matches to come, unless there can be none.  A probe into a unique
 * side that matched returns its one result, for the caller to route on at
 * once; otherwise NULL.
 */
static EddyTuple *
start_join(EddyJoinState *js, JModule *m, int dir, EddyTuple *t)
{
	Datum	   *keys = EddyArenaAlloc(&js->transient, sizeof(Datum) * Max(m->nkeys, 1));
	uint32		hash;
	JFrame	   *f;
	EddyTuple  *probe;
	void	   *payload;
	Stair	   *other;

	if (m->type == EDDY_MODULE_INDEX_JOIN)
	{
		int			k;

		Assert(dir == 0);
		if (!join_keys(js, m, 0, t, keys, &js->transient))
			return NULL;		/* a NULL key matches nothing */
		for (k = 0; k < m->nkeys; k++)
			m->skeys[m->skey_of_key[k]].sk_argument = keys[k];
		index_rescan(m->scan, m->skeys, m->nkeys, NULL, 0);
		f = &js->stack[js->nstack++];
		f->mod = m;
		f->dir = 0;
		f->probe = t;
		return NULL;
	}

	other = m->stair[1 - dir];

	/*
	 * The other side is one relation, unique on its keys: probe first.  A
	 * tuple that finds its match can find no other, now or later, so it is
	 * not stored, and its result goes on at once.  One that finds none is
	 * stored for the match to come.
	 */
	if (m->unique[1 - dir])
	{
		if (!join_keys(js, m, dir, t, keys, &js->transient))
			return NULL;
		hash = join_hash(js, m, dir, t, keys);
		if (other->nentries > 0)
		{
			StairProbe	sp;
			void	   *u;			/* a STAIR payload: tuple or tagged row */

			StairProbeBegin(&sp, other, hash, keys);
			u = StairProbeNext(&sp);
			if (u != NULL)
				return join_tuples(js, m, dir, t, u);
		}
		/* by-reference keys must point into the stored rows */
		if (m->byvalkeys[dir])
			payload = store_for_join(js, m, dir, t, NULL);
		else
		{
			payload = store_for_join(js, m, dir, t, &probe);
			if (!join_keys(js, m, dir, probe, keys, &js->state))
				return NULL;
		}
		stair_insert(js, m, dir, hash, keys, payload);
		return NULL;
	}

	/* the stored copy's rows hold the key values the STAIR keeps */
	payload = store_for_join(js, m, dir, t, &probe);
	if (!join_keys(js, m, dir, probe, keys, &js->state))
		return NULL;
	hash = join_hash(js, m, dir, probe, keys);
	stair_insert(js, m, dir, hash, keys, payload);
	if (other->nentries == 0)
		return NULL;			/* nothing to match yet */
	f = &js->stack[js->nstack++];
	f->mod = m;
	f->dir = dir;
	f->probe = probe;
	StairProbeBegin(&f->sp, other, hash, keys);
	return NULL;
}

/* The result of joining probe (routed into m in direction dir) with a STAIR payload */
static EddyTuple *
join_tuples(EddyJoinState *js, JModule *m, int dir, EddyTuple *probe, void *payload)
{
	EddyTuple  *r = alloc_tuple(js, &js->transient);
	EddyTuple  *u;
	uint32		bits;

	if (stored_is_row(payload))
	{
		int			rel = m->rel[1 - dir];

		r->spans = probe->spans | (1u << rel);
		r->done = probe->done | (UINT64CONST(1) << (m - js->modules));
		memcpy(r->rows, probe->rows, sizeof(EddyRow *) * js->nsources);
		r->rows[rel] = stored_row(payload);
		m->stats[dir].out++;
		return r;
	}
	u = (EddyTuple *) payload;
	bits = u->spans;
	r->spans = probe->spans | u->spans;
	r->done = probe->done | u->done | (UINT64CONST(1) << (m - js->modules));
	memcpy(r->rows, probe->rows, sizeof(EddyRow *) * js->nsources);
	while (bits != 0)
	{
		int			i = pg_rightmost_one_pos32(bits);

		r->rows[i] = u->rows[i];
		bits &= bits - 1;
	}
	m->stats[dir].out++;
	return r;
}

/* Next result of the frame's probe, or NULL */
static EddyTuple *
frame_next(EddyJoinState *js, JFrame *f)
{
	JModule    *m = f->mod;
	EddyTuple  *probe = f->probe;
	EddyTuple  *r;
	int			mi = m - js->modules;

	if (m->type == EDDY_MODULE_HASH_JOIN)
	{
		void	   *u;			/* a STAIR payload: tuple or tagged row */

		if (f->sp.next == NULL)
			return NULL;
		u = StairProbeNext(&f->sp);
		if (u == NULL)
			return NULL;
		return join_tuples(js, m, f->dir, probe, u);
	}
	else
	{
		JSource    *src = &js->sources[m->rel[1]];

		while (index_getnext_slot(m->scan, ForwardScanDirection, src->heapslot))
		{
			Datum	   *values;
			bool	   *isnull;
			EddyRow    *row;
			int			c;

			CHECK_FOR_INTERRUPTS();
			slot_getsomeattrs(src->heapslot, src->max_attno);
			if (m->scan->xs_recheck)
			{
				int			k;
				bool		match = true;

				for (k = 0; k < m->nkeys && match; k++)
				{
					int			col = m->keycol[1][k];

					if (col < 0 || src->heapslot->tts_isnull[src->attnos[col] - 1])
					{
						match = false;
						break;
					}
					match = DatumGetBool(FunctionCall2Coll(&m->keys.eq[k],
														   m->keys.collations[k],
														   m->skeys[m->skey_of_key[k]].sk_argument,
														   src->heapslot->tts_values[src->attnos[col] - 1]));
				}
				if (!match)
					continue;
			}
			values = js->fetch_values;
			isnull = js->fetch_isnull;
			for (c = 0; c < src->ncols; c++)
			{
				values[c] = src->heapslot->tts_values[src->attnos[c] - 1];
				isnull[c] = src->heapslot->tts_isnull[src->attnos[c] - 1];
			}
			row = make_row(&js->transient, src, values, isnull, true);
			r = alloc_tuple(js, &js->transient);
			r->spans = probe->spans | (1u << m->rel[1]);
			r->done = probe->done | (UINT64CONST(1) << mi);
			memcpy(r->rows, probe->rows, sizeof(EddyRow *) * js->nsources);
			r->rows[m->rel[1]] = row;
			m->stats[0].out++;
			return r;
		}
		return NULL;
	}
}

/*
 * The next source tuple, or NULL at the end.  Sources are read one after
 * the other in PostgreSQL's build order (the relations its hash joins
 * build on first, then the one it streams), like the static symmetric hash
 * join: a streamed tuple then meets the state of the relations before it
 * and, against a unique side, finds its match at once and is not stored.
 */
static EddyTuple *
read_source(EddyJoinState *js)
{
	while (js->next_source < js->nsources)
	{
		int			i = js->source_order[js->next_source];
		JSource    *src = &js->sources[i];
		TupleTableSlot *slot;
		EddyTuple  *t;
		EddyRow    *row;

		if (src->method != EDDY_SOURCE_SCAN || src->exhausted)
		{
			js->next_source++;
			continue;
		}
		slot = ExecProcNode(src->plan);
		if (TupIsNull(slot))
		{
			src->exhausted = true;
			js->next_source++;
			continue;
		}
		slot_getallattrs(slot);
		t = alloc_tuple(js, &js->transient);
		memset(t->rows, 0, sizeof(EddyRow *) * js->nsources);
		t->spans = 1u << i;
		t->done = 0;
		/*
		 * The row points into the source's slot, which keeps its tuple
		 * until the next point of stasis, when everything routed from it
		 * is gone: what a STAIR keeps is copied by persist_row.  A tuple
		 * that finds its unique matches, or is dropped, is never copied.
		 */
		row = (EddyRow *) ((char *) EddyArenaAlloc(&js->transient,
												   sizeof(EddyRow *) +
												   row_header_size(src, false)) +
						   sizeof(EddyRow *));
		row_persistent(row) = NULL;
		row->in_state = false;
		row->hvalid = 0;
		row->values = slot->tts_values;
		row->isnull = slot->tts_isnull;
		t->rows[i] = row;
		return t;
	}
	return NULL;
}

/* ----------------------------------------------------------------
 *		The iterator
 * ----------------------------------------------------------------
 */

TupleTableSlot *
EddyJoinNext(EddyJoinState *js)
{
	ExprContext *econtext = js->node->ss.ps.ps_ExprContext;

	for (;;)
	{
		EddyTuple  *t;
		bool		timed;

		CHECK_FOR_INTERRUPTS();

		if (js->nstack > 0)
		{
			t = frame_next(js, &js->stack[js->nstack - 1]);
			if (t == NULL)
			{
				js->nstack--;
				continue;
			}
		}
		else
		{
			/* a point of stasis: nothing in flight references transient memory */
			EddyArenaRewind(&js->transient);
			if (js->loaded_any)
			{
				memset(js->loaded, 0, sizeof(EddyRow *) * js->nsources);
				js->loaded_any = false;
			}
			t = read_source(js);
			if (t == NULL)
				return NULL;
		}

		timed = (--js->until_sample <= 0);
		if (timed)
			js->until_sample = EDDY_COST_SAMPLE_INTERVAL;

		/* route t until it leaves: output, dropped, or handed to a join */
		for (;;)
		{
			int			choice = route(js, t->spans, t->done);
			JModule    *m;
			int			dir;
			double		start = 0;

			if (choice == EDDY_ROUTE_OUT)
			{
				/* a projection that reads no column (count(*)) needs no fill */
				if (js->output_reads_columns)
					fill_slot(js, t);
				econtext->ecxt_scantuple = js->wide;
				ResetExprContext(econtext);
				if (js->node->ss.ps.ps_ProjInfo)
					return ExecProject(js->node->ss.ps.ps_ProjInfo);
				return js->wide;
			}
			m = &js->modules[choice / 2];
			dir = choice % 2;
			m->stats[dir].in++;
			if (timed)
				start = eddy_now_ns();
			if (m->type == EDDY_MODULE_SELECTION)
			{
				bool		pass;

				fill_slot(js, t);
				econtext->ecxt_scantuple = js->wide;
				ResetExprContext(econtext);
				pass = ExecQual(m->qual, econtext);
				if (timed)
				{
					m->stats[dir].cost_ns += eddy_now_ns() - start;
					m->stats[dir].samples++;
				}
				if (!pass)
				{
					InstrCountFiltered1(js->node, 1);
					break;
				}
				m->stats[dir].out++;
				t->done |= UINT64CONST(1) << (choice / 2);
				continue;
			}
			t = start_join(js, m, dir, t);
			if (timed)
			{
				m->stats[dir].cost_ns += eddy_now_ns() - start;
				m->stats[dir].samples++;
			}
			if (t == NULL)
				break;
			/* a unique probe's one result goes on at once */
		}
	}
}

/* ----------------------------------------------------------------
 *		End, rescan, EXPLAIN
 * ----------------------------------------------------------------
 */

void
EddyJoinEnd(EddyJoinState *js)
{
	int			i;

	for (i = 0; i < js->nmodules; i++)
	{
		JModule    *m = &js->modules[i];

		if (m->type == EDDY_MODULE_INDEX_JOIN)
		{
			index_endscan(m->scan);
			index_close(m->index, AccessShareLock);
		}
	}
	for (i = 0; i < js->nsources; i++)
	{
		JSource    *src = &js->sources[i];

		if (src->method == EDDY_SOURCE_SCAN)
			ExecEndNode(src->plan);
		else
		{
			ExecDropSingleTupleTableSlot(src->heapslot);
			table_close(src->heap, AccessShareLock);
		}
	}
	MemoryContextDelete(js->state.cxt);
	MemoryContextDelete(js->transient.cxt);
}

void
EddyJoinRescan(EddyJoinState *js)
{
	CustomScanState *node = js->node;
	int			i;

	js->nstack = 0;
	js->next_source = 0;
	EddyArenaReset(&js->transient);
	EddyArenaReset(&js->state);
	memset(js->loaded, 0, sizeof(EddyRow *) * js->nsources);
	for (i = 0; i < js->nmodules; i++)
	{
		JModule    *m = &js->modules[i];

		if (m->type == EDDY_MODULE_HASH_JOIN)
		{
			StairClear(m->stair[0]);
			StairClear(m->stair[1]);
		}
	}
	for (i = 0; i < js->nsources; i++)
	{
		JSource    *src = &js->sources[i];

		if (src->method != EDDY_SOURCE_SCAN)
			continue;
		src->exhausted = false;
		if (node->ss.ps.chgParam != NULL)
			UpdateChangedParamSet(src->plan, node->ss.ps.chgParam);
		if (src->plan->chgParam == NULL)
			ExecReScan(src->plan);
	}
}

static void
line_start(ExplainState *es)
{
	appendStringInfoSpaces(es->str, es->indent * 2);
}

/* Deparsed side `side` keys of a join module, e.g. "b.aid" or "(a.x, a.y)" */
static char *
explain_keys(JModule *m, int side, List *custom_exprs, List *key_idx,
			 List *context, bool useprefix)
{
	StringInfoData buf;
	ListCell   *lc;

	(void) m;
	(void) side;
	initStringInfo(&buf);
	if (list_length(key_idx) != 1)
		appendStringInfoChar(&buf, '(');
	foreach(lc, key_idx)
	{
		if (buf.len > 1)
			appendStringInfoString(&buf, ", ");
		appendStringInfoString(&buf,
							   deparse_expression(list_nth(custom_exprs, intVal(lfirst(lc))),
												  context, useprefix, false));
	}
	if (list_length(key_idx) != 1)
		appendStringInfoChar(&buf, ')');
	return buf.data;
}

void
EddyJoinExplain(EddyJoinState *js, List *ancestors, ExplainState *es)
{
	CustomScanState *node = js->node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *modules = list_nth(cscan->custom_private, EddyPrivModules);
	bool		analyze = es->analyze && node->ss.ps.instrument != NULL;
	bool		useprefix = list_length(es->rtable) > 1 || es->verbose;
	List	   *context;
	int			i;

	context = set_deparse_context_plan(es->deparse_cxt, node->ss.ps.plan, ancestors);
	ExplainPropertyText("Routing Policy", EddyPolicyName(js->policy), es);
	if (js->policy == EDDY_POLICY_LOTTERY && js->lottery_window > 0)
		ExplainPropertyInteger("Lottery Window", "tuples", js->lottery_window, es);
	ExplainPropertyInteger("Reoptimization Frequency", "tuples", js->reopt_frequency, es);

	ExplainOpenGroup("Operators", "Operators", false, es);
	for (i = 0; i < js->nmodules; i++)
	{
		JModule    *m = &js->modules[i];
		char	   *expr = deparse_expression((Node *) m->expr, context, useprefix, false);
		char	   *stair_keys[2] = {NULL, NULL};
		char	   *index_name = NULL;
		char	   *index_rel = NULL;

		if (m->type != EDDY_MODULE_SELECTION)
		{
			List	   *md = list_nth(modules, i);
			int			side;

			for (side = 0; side < 2; side++)
				stair_keys[side] = m->nkeys > 0 ?
					explain_keys(m, side, cscan->custom_exprs,
								 list_nth(md, side == 0 ? EddyJoinKeys0 : EddyJoinKeys1),
								 context, useprefix) :
					psprintf("relation %d", m->rel[side] + 1);
		}
		if (m->type == EDDY_MODULE_INDEX_JOIN)
		{
			index_name = get_rel_name(m->indexoid);
			index_rel = get_rel_name(js->sources[m->rel[1]].heapoid);
		}

		if (es->format == EXPLAIN_FORMAT_TEXT)
		{
			line_start(es);
			if (m->type == EDDY_MODULE_INDEX_JOIN)
				appendStringInfo(es->str, "%s %d: %s using %s on %s\n", m->label, i + 1,
								 expr, index_name, index_rel);
			else if (m->type == EDDY_MODULE_HASH_JOIN)
				appendStringInfo(es->str, "%s %d: %s\n", m->label, i + 1,
								 m->nkeys > 0 ? expr : "(cross product)");
			else if (m->prereq != 0)
			{
				StringInfoData after;
				int			j;

				initStringInfo(&after);
				for (j = 0; j < js->nmodules; j++)
					if (m->prereq & (UINT64CONST(1) << j))
						appendStringInfo(&after, "%s%d", after.len > 0 ? ", " : "", j + 1);
				appendStringInfo(es->str, "%s %d: %s (after %s)\n", m->label, i + 1, expr,
								 after.data);
			}
			else
				appendStringInfo(es->str, "%s %d: %s\n", m->label, i + 1, expr);
			if (m->type == EDDY_MODULE_HASH_JOIN)
			{
				int			side;

				for (side = 0; side < 2; side++)
				{
					line_start(es);
					appendStringInfo(es->str, "  STAIR %s", stair_keys[side]);
					if (analyze)
						appendStringInfo(es->str,
										 ": Inserted: " UINT64_FORMAT "  Probed: " UINT64_FORMAT
										 "  Matched: " UINT64_FORMAT,
										 m->stair[side]->inserted, m->stair[side]->probed,
										 m->stair[side]->matched);
					appendStringInfoChar(es->str, '\n');
				}
			}
			else if (analyze)
			{
				line_start(es);
				if (m->type == EDDY_MODULE_SELECTION)
					appendStringInfo(es->str, "  Tuples In: " UINT64_FORMAT "  Out: " UINT64_FORMAT "\n",
									 m->stats[0].in, m->stats[0].out);
				else
					appendStringInfo(es->str, "  Probes: " UINT64_FORMAT "  Matches: " UINT64_FORMAT "\n",
									 m->stats[0].in, m->stats[0].out);
			}
		}
		else
		{
			ExplainOpenGroup("Operator", NULL, true, es);
			ExplainPropertyText("Operator Type", m->label, es);
			ExplainPropertyInteger("Operator Number", NULL, i + 1, es);
			ExplainPropertyText(m->type == EDDY_MODULE_SELECTION ? "Predicate" : "Join Condition",
								expr, es);
			if (m->type == EDDY_MODULE_INDEX_JOIN)
			{
				ExplainPropertyText("Index Name", index_name, es);
				ExplainPropertyText("Relation Name", index_rel, es);
			}
			if (m->type == EDDY_MODULE_HASH_JOIN)
			{
				ExplainPropertyText("STAIR 1", stair_keys[0], es);
				ExplainPropertyText("STAIR 2", stair_keys[1], es);
			}
			if (analyze)
			{
				ExplainPropertyUInteger("Tuples In", NULL, m->stats[0].in + m->stats[1].in, es);
				ExplainPropertyUInteger("Tuples Out", NULL, m->stats[0].out + m->stats[1].out, es);
				if (m->type == EDDY_MODULE_HASH_JOIN)
				{
					ExplainPropertyUInteger("Inserted", NULL,
											m->stair[0]->inserted + m->stair[1]->inserted, es);
					ExplainPropertyUInteger("Probed", NULL,
											m->stair[0]->probed + m->stair[1]->probed, es);
					ExplainPropertyUInteger("Matched", NULL,
											m->stair[0]->matched + m->stair[1]->matched, es);
				}
			}
			ExplainCloseGroup("Operator", NULL, true, es);
		}
	}
	ExplainCloseGroup("Operators", "Operators", false, es);
	if (analyze)
	{
		ExplainPropertyUInteger("Tuples Routed", NULL, js->routed, es);
		ExplainPropertyUInteger("Recomputations", NULL, js->recomputations, es);
		ExplainPropertyInteger("Peak Memory", "kB", (int64) (js->peak_memory / 1024), es);
	}
}
