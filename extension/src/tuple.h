/*-------------------------------------------------------------------------
 *
 * tuple.h
 *	  The tuple format: source rows, eddy tuples, what a STAIR keeps, and
 *	  the memory they live in (tuple.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef EDDY_TUPLE_H
#define EDDY_TUPLE_H

#include "node.h"

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
struct EddyRow
{
	Datum	   *values;
	bool	   *isnull;
	uint32		hvalid;			/* which entries of hash[] are computed */
	bool		in_state;
	uint16		mark;			/* state migration's: last visited (migrate.c) */
	uint32		hash[FLEXIBLE_ARRAY_MEMBER];	/* the source's hash slots */
};

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
struct EddyTuple
{
	uint32		spans;			/* sources present */
	uint64		done;			/* modules visited */
	EddyRow    *rows[FLEXIBLE_ARRAY_MEMBER];
};

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

/* tuple.c */
extern Size EddyStateMemory(EddyState *es);
extern void EddyCheckMemory(EddyState *es);
extern EddyRow *EddyRowMake(EddyArena *arena, EddySource *src, Datum *values,
							bool *isnull, bool transient);
extern EddyRow *EddyRowFromHeapSlot(EddyState *es, EddySource *src,
									TupleTableSlot *slot);
extern EddyRow *EddyRowBorrow(EddyState *es, EddySource *src, EddyRow *kept);
extern EddyRow *EddyRowPersistSlow(EddyState *es, int i, EddyRow *row);
extern EddyTuple *EddyTupleStore(EddyState *es, EddyTuple *t);
extern EddyTuple *EddyTupleJoin(EddyState *es, EddyModule *m, EddyTuple *probe,
								int rel, void *payload);
extern void EddyTupleFillSlot(EddyState *es, EddyTuple *t);
extern Datum EddyArenaDatumCopy(EddyArena *arena, Datum d, bool byval, int16 len);

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

#endif							/* EDDY_TUPLE_H */
