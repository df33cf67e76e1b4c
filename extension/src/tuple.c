/*-------------------------------------------------------------------------
 *
 * tuple.c
 *	  Eddy tuples, source rows and the wide slot; the memory they live in.
 *
 * The eddy tuple (Deshpande 2004, section 2.2) is an array of pointers to
 * source rows, one per source of the block (NULL when absent), with two
 * bitmaps: the sources it spans and the modules it has visited (done).
 * A source row holds the deformed values of its source's columns (the
 * source's range of the wide tuple, custom_scan_tlist); rows are never
 * deformed twice.  Predicates, join key expressions and the output
 * projection read the node's scan slot, a virtual slot of the wide shape,
 * filled by copying the present rows' values into their ranges
 * (EddyTupleFillSlot).  A one-source eddy whose modules are all filters
 * skips all of this: it evaluates on its source's own slot (local.c).
 *
 * Memory: two arenas.  "stored" holds what STAIRs keep: a tuple inserted
 * into a STAIR is copied there with its rows (a row is copied once and
 * then shared).  "transient" holds everything else (eddy tuples in flight,
 * join results, key values) and is rewound at every point of stasis.  A
 * source row is not copied when read: its values stay in the source's
 * slot, valid until that source is read again, which happens only at a
 * point of stasis, when nothing routed from the row is in flight any more.
 * So a row that is never stored (a probe that finds its unique match, a
 * tuple a selection drops) is never copied.  Likewise a row an index join
 * fetches keeps its by-reference values in the heap tuple of the module's
 * slot, which stays until the module fetches again (EddyRowFromHeapSlot).
 * The arenas' total is checked against eddy.max_memory
 * (EddyMaxMemoryBytes); past it the eddy spills (spill.c).
 *
 *-------------------------------------------------------------------------
 */
#include "module.h"

#include "port/pg_bitutils.h"
#include "utils/datum.h"
#include "utils/memutils.h"

/* The memory the state holds: both arenas and their contexts */
Size
EddyStateMemory(EddyState *es)
{
	return es->stored.allocated + es->transient.allocated +
		MemoryContextMemAllocated(es->stored.cxt, false) +
		MemoryContextMemAllocated(es->transient.cxt, false);
}

/* Walk every stored entry (module.h, EddyEntryIter) */
void
EddyEntryIterBegin(EddyEntryIter *ei, EddyState *es)
{
	ei->es = es;
	ei->i = -1;
	ei->s = -1;
	ei->m = NULL;
	ei->spec = NULL;
}

void *
EddyEntryIterNext(EddyEntryIter *ei)
{
	EddyState  *es = ei->es;

	for (;;)
	{
		if (ei->m != NULL && ei->s >= 0)
		{
			uint32		hash;
			Datum	   *keys;
			void	   *payload = StairIterNext(&ei->it, &hash, &keys);

			if (payload != NULL)
				return payload;
		}
		/* the next store: of this module, else of the next that has any */
		if (ei->m != NULL && ei->s + 1 < ei->m->state->nstores)
			ei->s++;
		else
		{
			do
			{
				if (++ei->i >= es->nmodules)
				{
					ei->i = es->nmodules;
					ei->m = NULL;
					return NULL;
				}
				ei->m = es->modules[ei->i];
			} while (ei->m->state == NULL || ei->m->state->nstores == 0);
			ei->spec = ei->m->state->spec(ei->m);
			ei->s = 0;
		}
		StairIterBegin(&ei->it, ei->m->state->store(ei->m, ei->s));
	}
}

/*
 * Check the state's memory against eddy.max_memory and keep the peak.
 * Past the limit the eddy spills at its next point of stasis (spill.c);
 * one that cannot, or whose batch outgrows it, goes on over it.
 */
void
EddyCheckMemory(EddyState *es)
{
	Size		used = EddyStateMemory(es);

	if (used > es->peak_memory)
		es->peak_memory = used;
	if (unlikely(used > es->max_memory))
	{
		es->over_limit = true;
		if (es->spill != NULL)
			es->spill_over_now = true;	/* this batch (spill.c) */
		else if (es->can_spill && (es->scanned & ~es->exhausted) != 0)
			es->spill_wanted = true;	/* not when nothing is left to read */
	}
}

/*
 * A row of source src from values/isnull, in one allocation from the
 * arena (see EddyRow), after `prefix` bytes for the caller.
 */
/* The size of a by-reference value of type length typlen (datumGetSize) */
static inline Size
byref_size(Datum value, int16 typlen)
{
	if (typlen > 0)
		return (Size) typlen;
	if (typlen == -1)
		return VARSIZE_ANY(DatumGetPointer(value));
	return datumGetSize(value, false, typlen);
}

#define ROW_MAKE_MAX_BYREF 32	/* sizes remembered between the two passes */

/*
 * A row of source src with inline null flags and room for its values and
 * `data` bytes after them, from the arena after `prefix` bytes for the
 * caller; the values and flags are the caller's to fill.
 */
static inline EddyRow *
row_alloc(EddyArena *arena, EddySource *src, Size prefix, Size data)
{
	Size		hsize = EddyRowHeaderSize(src, true);
	EddyRow    *row;

	row = (EddyRow *) ((char *) EddyArenaAlloc(arena, prefix + hsize +
											   src->ncols * sizeof(Datum) +
											   data) + prefix);
	row->in_state = false;
	row->mark = 0;
	row->hvalid = 0;
	row->isnull = (bool *) ((char *) row + offsetof(EddyRow, hash) +
							sizeof(uint32) * src->nhash);
	row->values = (Datum *) ((char *) row + hsize);
	return row;
}

static EddyRow *
row_make(EddyArena *arena, EddySource *src, Datum *values, bool *isnull,
		 Size prefix)
{
	Size		size = 0;		/* of the by-reference data */
	Size		lens[ROW_MAKE_MAX_BYREF];
	EddyRow    *row;
	char	   *data;
	int			k;

	/* the by-reference values' sizes: one pass over those columns only */
	for (k = 0; k < src->nbyref && src->byref_cols[k] < src->ncols; k++)
	{
		int			c = src->byref_cols[k];
		Size		len;

		if (isnull[c])
			continue;
		len = byref_size(values[c], src->typlen[c]);
		if (k < ROW_MAKE_MAX_BYREF)
			lens[k] = len;
		size += MAXALIGN(len);
	}
	row = row_alloc(arena, src, prefix, size);
	memcpy(row->isnull, isnull, sizeof(bool) * src->ncols);
	memcpy(row->values, values, sizeof(Datum) * src->ncols);
	data = (char *) (row->values + src->ncols);
	for (k = 0; k < src->nbyref && src->byref_cols[k] < src->ncols; k++)
	{
		int			c = src->byref_cols[k];
		Size		len;

		if (isnull[c])
			continue;
		len = k < ROW_MAKE_MAX_BYREF ? lens[k] :
			byref_size(values[c], src->typlen[c]);
		memcpy(data, DatumGetPointer(values[c]), len);
		row->values[c] = PointerGetDatum(data);
		data += MAXALIGN(len);
	}
	return row;
}

/* A row of source src; a transient row gets its row_persistent pointer */
EddyRow *
EddyRowMake(EddyArena *arena, EddySource *src, Datum *values, bool *isnull,
			bool transient)
{
	EddyRow    *row;

	row = row_make(arena, src, values, isnull, transient ? sizeof(EddyRow *) : 0);
	if (transient)
		row_persistent(row) = NULL;
	return row;
}

/*
 * A transient row of index-joined source src from the heap tuple an index
 * join fetched into slot.  Its values are copied, but by-reference ones
 * still point into the slot's tuple, which stays until the module fetches
 * again; by then everything routed from this row is gone, as routing is
 * depth first and no tuple visits a module twice (so one frame at most per
 * module is live).  Where the source's columns are consecutive attributes
 * of the heap (attno_run), the row borrows the slot's value and null
 * arrays themselves, as a scanned source's row does (EddyRowFromSlot), for
 * the same time.  What a STAIR keeps is copied by EddyRowPersist,
 * by-reference data with it.
 */
EddyRow *
EddyRowFromHeapSlot(EddyState *es, EddySource *src, TupleTableSlot *slot)
{
	EddyRow    *row;
	int			c;

	if (src->attno_run > 0)
	{
		/* its columns are consecutive in the heap tuple: borrow them all */
		row = EddyRowFromSlot(es, src, slot);
		row->values += src->attno_run - 1;
		row->isnull += src->attno_run - 1;
		return row;
	}
	row = row_alloc(&es->transient, src, sizeof(EddyRow *), 0);
	row_persistent(row) = NULL;
	for (c = 0; c < src->ncols; c++)
	{
		row->values[c] = slot->tts_values[src->attnos[c] - 1];
		row->isnull[c] = slot->tts_isnull[src->attnos[c] - 1];
	}
	return row;
}

/*
 * A transient row of src whose values are those of `kept`, a row kept
 * elsewhere for as long as the eddy runs (an index join's lookup cache,
 * mod_indexjoin.c): the values are copied, by-reference ones still point
 * into `kept`.  Transient, so that what a STAIR keeps of it is copied as
 * of any other (EddyRowPersist), and `kept` is never written.
 */
EddyRow *
EddyRowBorrow(EddyState *es, EddySource *src, EddyRow *kept)
{
	EddyRow    *row = row_alloc(&es->transient, src, sizeof(EddyRow *), 0);

	row_persistent(row) = NULL;
	memcpy(row->isnull, kept->isnull, sizeof(bool) * src->ncols);
	memcpy(row->values, kept->values, sizeof(Datum) * src->ncols);
	return row;
}

/*
 * Copy a transient row into state memory (EddyRowPersist: made once, then
 * shared), with the hashes computed so far.  When the state mode stamps
 * rows (es->stamp_rows: SteM mode, where only the driver, the source row
 * read last, is ever stored), the copy carries its arrival number.
 */
EddyRow *
EddyRowPersistSlow(EddyState *es, int i, EddyRow *row)
{
	EddySource *src = &es->sources[i];
	EddyRow    *copy;

	if (es->stamp_rows)
	{
		copy = row_make(&es->stored, src, row->values, row->isnull, sizeof(uint64));
		row_seq(copy) = es->seq;
	}
	else
		copy = row_make(&es->stored, src, row->values, row->isnull, 0);
	copy->in_state = true;
	copy->hvalid = row->hvalid;
	if (row->hvalid != 0)
		memcpy(copy->hash, row->hash, sizeof(uint32) * src->nhash);
	row_persistent(row) = copy;
	return copy;
}

/* A tuple's copy in state memory, for a STAIR to keep */
EddyTuple *
EddyTupleStore(EddyState *es, EddyTuple *t)
{
	EddyTuple  *s = EddyStoredTupleAlloc(es);
	uint32		bits = t->spans;

	s->spans = t->spans;
	s->done = t->done;
	memset(s->rows, 0, sizeof(EddyRow *) * es->nsources);
	while (bits != 0)
	{
		int			i = pg_rightmost_one_pos32(bits);

		s->rows[i] = EddyRowPersist(es, i, t->rows[i]);
		bits &= bits - 1;
	}
	return s;
}

/*
 * The result of joining probe (routed into join module m) with a STAIR
 * payload of the other side, whose row is of relation rel when it is a
 * tagged row.  Counts the result as the module's output.
 */
EddyTuple *
EddyTupleJoin(EddyState *es, EddyModule *m, EddyTuple *probe, int rel,
			  void *payload)
{
	EddyTuple  *r = EddyTupleAlloc(es, &es->transient);

	memcpy(r->rows, probe->rows, sizeof(EddyRow *) * es->nsources);
	if (EddyPayloadIsRow(payload))
	{
		r->spans = probe->spans | (1u << rel);
		r->done = probe->done | (UINT64CONST(1) << m->index);
		r->rows[rel] = EddyPayloadRow(payload);
	}
	else
	{
		EddyTuple  *u = (EddyTuple *) payload;
		uint32		bits = u->spans;

		r->spans = probe->spans | u->spans;
		r->done = probe->done | u->done | (UINT64CONST(1) << m->index);
		while (bits != 0)
		{
			int			i = pg_rightmost_one_pos32(bits);

			r->rows[i] = u->rows[i];
			bits &= bits - 1;
		}
	}
	return r;
}

/* A by-reference datum copied into the arena */
Datum
EddyArenaDatumCopy(EddyArena *arena, Datum d, bool byval, int16 len)
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
void
EddyTupleFillSlot(EddyState *es, EddyTuple *t)
{
	TupleTableSlot *slot = es->wide;
	int			i;

	ExecClearTuple(slot);
	for (i = 0; i < es->nsources; i++)
	{
		EddyRow    *row = t->rows[i];
		EddySource *src = &es->sources[i];
		Datum	   *values;
		bool	   *isnull;
		int			c;

		if (row == NULL || es->loaded[i] == row)
			continue;
		/* ranges are a few columns: a loop beats two calls of memcpy */
		values = slot->tts_values + src->first_col;
		isnull = slot->tts_isnull + src->first_col;
		for (c = 0; c < src->ncols; c++)
		{
			values[c] = row->values[c];
			isnull[c] = row->isnull[c];
		}
		es->loaded[i] = row;
		es->loaded_any = true;
	}
	ExecStoreVirtualTuple(slot);
}
