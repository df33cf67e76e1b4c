/*-------------------------------------------------------------------------
 *
 * stair.c
 *	  STAIR hash tables: insert, probe, iterate and delete (see stair.h).
 *
 * Keys are hashed with each side's hash function from the join operator's
 * hash operator family (get_op_hash_functions), combined across keys with
 * hash_combine, exactly as PostgreSQL's hash join does; equality is the
 * join operator itself, called with side 0's value on the left.  A NULL
 * key makes StairKeysHash return false: such a tuple is neither stored nor
 * used to probe, since it can never match (strict equality operators).
 *
 * The caller owns the payloads and the key values' memory: a by-reference
 * key Datum must stay valid as long as the entry (the eddy keeps source
 * rows for the whole scan).
 *
 *-------------------------------------------------------------------------
 */
#include "stair.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#define STAIR_INITIAL_BUCKETS	1024
/*
 * Set up hashing and equality for an equi-join on the given hashable
 * operators: key i compares side 0's value (the operator's left input) with
 * side 1's (its right input) by opnos[i], under collations[i].  Allocated
 * in the current memory context.
 */
void
StairJoinKeysInit(StairJoinKeys *keys, List *opnos, List *collations)
{
	int			n = list_length(opnos);
	int			i;

	keys->nkeys = n;
	keys->collations = palloc(sizeof(Oid) * Max(n, 1));
	keys->hash[0] = palloc0(sizeof(FmgrInfo) * Max(n, 1));
	keys->hash[1] = palloc0(sizeof(FmgrInfo) * Max(n, 1));
	keys->eq = palloc0(sizeof(FmgrInfo) * Max(n, 1));

	for (i = 0; i < n; i++)
	{
		Oid			opno = list_nth_oid(opnos, i);
		RegProcedure lhs_hash;
		RegProcedure rhs_hash;

		if (!get_op_hash_functions(opno, &lhs_hash, &rhs_hash))
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("could not find hash functions for operator %u", opno)));
		fmgr_info(lhs_hash, &keys->hash[0][i]);
		fmgr_info(rhs_hash, &keys->hash[1][i]);
		fmgr_info(get_opcode(opno), &keys->eq[i]);
		keys->collations[i] = list_nth_oid(collations, i);
	}
}

/*
 * Hash one side's key values.  Returns false if a key is NULL (isnull may
 * be NULL when the caller knows none is).
 */
bool
StairKeysHash(StairJoinKeys *keys, int side, Datum *values, bool *isnull,
			  uint32 *hash)
{
	uint32		h = 0;
	int			i;

	for (i = 0; i < keys->nkeys; i++)
	{
		uint32		kh;

		if (isnull != NULL && isnull[i])
			return false;
		kh = DatumGetUInt32(FunctionCall1Coll(&keys->hash[side][i],
											  keys->collations[i],
											  values[i]));
		h = hash_combine(h, kh);
	}
	*hash = h;
	return true;
}

/* A STAIR whose entries and groups come from the arena (buckets from its context) */
Stair *
StairCreateInArena(StairJoinKeys *keys, int side, EddyArena *arena)
{
	Stair	   *stair = StairCreate(keys, side, arena->cxt);

	stair->arena = arena;
	return stair;
}

/*
 * A STAIR storing the given side of keys.  The Stair itself is allocated in
 * the current memory context; its entries, groups and buckets in mcxt.
 */
Stair *
StairCreate(StairJoinKeys *keys, int side, MemoryContext mcxt)
{
	Stair	   *stair = palloc0(sizeof(Stair));

	stair->keys = keys;
	stair->side = side;
	stair->mcxt = mcxt;
	stair->complete = true;
	stair->nbuckets = STAIR_INITIAL_BUCKETS;
	stair->buckets = MemoryContextAllocZero(mcxt,
											sizeof(StairGroup *) * stair->nbuckets);
	return stair;
}

/* Double the bucket array and redistribute the groups. */
static void
stair_grow(Stair *stair)
{
	uint32		newn = stair->nbuckets * 2;
	StairGroup **newb;
	uint32		i;

	newb = MemoryContextAllocExtended(stair->mcxt, sizeof(StairGroup *) * newn,
									  MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	for (i = 0; i < stair->nbuckets; i++)
	{
		if (stair->unique)
		{
			StairUniqueEntry *u = (StairUniqueEntry *) stair->buckets[i];

			while (u != NULL)
			{
				StairUniqueEntry *next = u->next;
				uint32		b = u->hash & (newn - 1);

				u->next = (StairUniqueEntry *) newb[b];
				newb[b] = (StairGroup *) u;
				u = next;
			}
			continue;
		}
		{
			StairGroup *g = stair->buckets[i];

			while (g != NULL)
			{
				StairGroup *next = g->next;
				uint32		b = g->hash & (newn - 1);

				g->next = newb[b];
				newb[b] = g;
				g = next;
			}
		}
	}
	pfree(stair->buckets);
	stair->buckets = newb;
	stair->nbuckets = newn;
}

/*
 * An entry or group: from its free list (deleted ones, chained by their
 * first field, the next pointer), else from the arena or context.
 */
static inline void *
stair_alloc(Stair *stair, void **freelist, Size size)
{
	void	   *p = *freelist;

	if (p != NULL)
	{
		*freelist = *(void **) p;
		return p;
	}
	return stair->arena ? EddyArenaAlloc(stair->arena, size) :
		MemoryContextAlloc(stair->mcxt, size);
}

/*
 * Store payload under this side's key values (hashed by StairKeysHash).
 */
void
StairInsert(Stair *stair, uint32 hash, Datum *values, void *payload)
{
	int			nkeys = stair->keys->nkeys;
	uint32		b = hash & (stair->nbuckets - 1);
	StairGroup *g;
	StairEntry *e;

	if (stair->unique)
	{
		StairUniqueEntry *u;

		if (stair->ngroups >= stair->nbuckets &&
			stair->nbuckets < (uint32) 1 << 30)
		{
			stair_grow(stair);
			b = hash & (stair->nbuckets - 1);
		}
		u = stair_alloc(stair, &stair->free_entries,
						offsetof(StairUniqueEntry, keys) + sizeof(Datum) * nkeys);
		u->payload = payload;
		u->hash = hash;
		memcpy(u->keys, values, sizeof(Datum) * nkeys);
		u->next = (StairUniqueEntry *) stair->buckets[b];
		stair->buckets[b] = (StairGroup *) u;
		stair->ngroups++;
		stair->nentries++;
		stair->inserted++;
		return;
	}
	for (g = stair->buckets[b]; g != NULL; g = g->next)
	{
		if (g->hash == hash)
			break;
	}
	if (g == NULL)
	{
		if (stair->ngroups >= stair->nbuckets &&
			stair->nbuckets < (uint32) 1 << 30)
		{
			stair_grow(stair);
			b = hash & (stair->nbuckets - 1);
		}
		g = stair_alloc(stair, (void **) &stair->free_groups, sizeof(StairGroup));
		g->hash = hash;
		g->entries = NULL;
		g->next = stair->buckets[b];
		stair->buckets[b] = g;
		stair->ngroups++;
	}
	e = stair_alloc(stair, &stair->free_entries,
					offsetof(StairEntry, keys) + sizeof(Datum) * nkeys);
	e->payload = payload;
	memcpy(e->keys, values, sizeof(Datum) * nkeys);
	e->next = g->entries;
	g->entries = e;
	stair->nentries++;
	stair->inserted++;
}

/*
 * Start a probe with the other side's key values and their hash.
 */
void
StairProbeBegin(StairProbe *probe, Stair *stair, uint32 hash, Datum *values)
{
	StairGroup *g;

	probe->stair = stair;
	probe->keys = values;
	probe->hash = hash;
	probe->next = NULL;
	stair->probed++;
	if (stair->unique)
	{
		probe->next = (StairEntry *) stair->buckets[hash & (stair->nbuckets - 1)];
		return;
	}
	for (g = stair->buckets[hash & (stair->nbuckets - 1)]; g != NULL; g = g->next)
	{
		if (g->hash == hash)
		{
			probe->next = g->entries;
			break;
		}
	}
}

/* Do the entry's keys equal the probe's?  Side 0's value goes on the left. */
static bool
stair_keys_equal(Stair *stair, Datum *entry_keys, Datum *probe_keys)
{
	StairJoinKeys *keys = stair->keys;
	int			i;

	for (i = 0; i < keys->nkeys; i++)
	{
		Datum		l = stair->side == 0 ? entry_keys[i] : probe_keys[i];
		Datum		r = stair->side == 0 ? probe_keys[i] : entry_keys[i];

		if (!DatumGetBool(FunctionCall2Coll(&keys->eq[i], keys->collations[i],
											l, r)))
			return false;
	}
	return true;
}

/*
 * Next matching payload of a probe, or NULL when there are no more.
 */
void *
StairProbeNext(StairProbe *probe)
{
	if (probe->stair->unique)
	{
		/* a chain of the bucket: entries of other hashes are skipped */
		while (probe->next != NULL)
		{
			StairUniqueEntry *u = (StairUniqueEntry *) probe->next;

			probe->next = (StairEntry *) u->next;
			if (u->hash == probe->hash &&
				stair_keys_equal(probe->stair, u->keys, probe->keys))
			{
				probe->stair->matched++;
				return u->payload;
			}
		}
		return NULL;
	}
	while (probe->next != NULL)
	{
		StairEntry *e = probe->next;

		probe->next = e->next;
		if (stair_keys_equal(probe->stair, e->keys, probe->keys))
		{
			probe->stair->matched++;
			return e->payload;
		}
	}
	return NULL;
}

/*
 * Does the STAIR hold an entry matching the other side's key values?  A
 * lookup, not a probe: the counters are left alone.
 */
bool
StairContains(Stair *stair, uint32 hash, Datum *values)
{
	StairProbe	probe;
	uint64		probed = stair->probed;
	uint64		matched = stair->matched;
	bool		found;

	StairProbeBegin(&probe, stair, hash, values);
	found = StairProbeNext(&probe) != NULL;
	stair->probed = probed;
	stair->matched = matched;
	return found;
}

/*
 * Size an empty STAIR's bucket array for about nentries distinct keys (the
 * planner's estimate), so that it does not double its way up while filling.
 */
void
StairPresize(Stair *stair, double nentries)
{
	uint32		n = STAIR_INITIAL_BUCKETS;

	Assert(stair->ngroups == 0);
	while (n < nentries && n < ((uint32) 1 << 26))
		n *= 2;
	if (n == stair->nbuckets)
		return;
	pfree(stair->buckets);
	stair->buckets = MemoryContextAllocExtended(stair->mcxt, sizeof(StairGroup *) * n,
												MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	stair->nbuckets = n;
}

/*
 * Declare that the keys this STAIR will store are unique (a unique index
 * on them), before the first insertion: entries then sit in their buckets'
 * chains without groups, 16 bytes smaller each.  A duplicate would still be
 * found (a probe walks the whole chain), only less quickly.
 */
void
StairSetUnique(Stair *stair)
{
	Assert(stair->nentries == 0);
	stair->unique = true;
}

/*
 * Forget every entry, for a rescan, when the entries live in an arena that
 * the caller resets: frees the bucket array and starts a new one.
 */
void
StairClear(Stair *stair)
{
	pfree(stair->buckets);
	StairReset(stair);
}

/*
 * Forget every entry, for a rescan.  Call it after resetting the STAIR's
 * memory context, which held them (and the bucket array).
 */
void
StairReset(Stair *stair)
{
	stair->buckets = MemoryContextAllocZero(stair->mcxt,
											sizeof(StairGroup *) * STAIR_INITIAL_BUCKETS);
	stair->nbuckets = STAIR_INITIAL_BUCKETS;
	stair->ngroups = 0;
	stair->nentries = 0;
	stair->complete = true;
	stair->free_entries = NULL;
	stair->free_groups = NULL;
}

/*
 * Iteration.  Every entry struct starts with its next pointer, so the
 * address of an entry is the address of its own next link.
 */
void
StairIterBegin(StairIterator *it, Stair *stair)
{
	it->stair = stair;
	it->bucket = 0;
	it->glink = NULL;
	it->elink = NULL;
	it->deleted = false;
}

/*
 * The next entry's payload, with its hash and key values, or NULL when
 * every entry has been returned.
 */
void *
StairIterNext(StairIterator *it, uint32 *hash, Datum **keys)
{
	Stair	   *stair = it->stair;

	/* step past the entry last returned, unless it was deleted */
	if (it->elink != NULL && !it->deleted)
		it->elink = (void **) *it->elink;
	it->deleted = false;

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (it->elink != NULL && *it->elink != NULL)
			break;
		if (stair->unique)
		{
			/* entries sit in the bucket chains */
			if (it->elink != NULL)
				it->bucket++;
			if (it->bucket >= stair->nbuckets)
			{
				it->elink = NULL;
				return NULL;
			}
			it->elink = (void **) &stair->buckets[it->bucket];
			continue;
		}
		/* the group being walked is done: drop it if emptied, go on */
		if (it->glink != NULL && it->elink != NULL)
		{
			StairGroup *g = *it->glink;

			if (g->entries == NULL)
			{
				*it->glink = g->next;
				stair->ngroups--;
				g->next = stair->free_groups;	/* reused by StairInsert */
				stair->free_groups = g;
			}
			else
				it->glink = &g->next;
			it->elink = NULL;
		}
		if (it->glink == NULL || *it->glink == NULL)
		{
			if (it->glink != NULL)
				it->bucket++;
			if (it->bucket >= stair->nbuckets)
			{
				it->glink = NULL;
				return NULL;
			}
			it->glink = &stair->buckets[it->bucket];
			continue;
		}
		it->elink = (void **) &(*it->glink)->entries;
	}

	if (stair->unique)
	{
		StairUniqueEntry *u = (StairUniqueEntry *) *it->elink;

		*hash = u->hash;
		*keys = u->keys;
		return u->payload;
	}
	else
	{
		StairEntry *e = (StairEntry *) *it->elink;

		*hash = (*it->glink)->hash;
		*keys = e->keys;
		return e->payload;
	}
}

/* Delete the entry StairIterNext returned last: unlink it. */
void
StairIterDelete(StairIterator *it)
{
	Stair	   *stair = it->stair;
	void	  **entry;

	Assert(it->elink != NULL && *it->elink != NULL && !it->deleted);
	entry = (void **) *it->elink;
	*it->elink = *entry;		/* the entry's next */
	*entry = stair->free_entries;	/* reused by StairInsert */
	stair->free_entries = entry;
	it->deleted = true;
	stair->nentries--;
	if (stair->unique)
		stair->ngroups--;
}

/*
 * Assert-enabled builds: iterate over every entry (their count must be
 * nentries), then delete them all through the iterator, leaving an empty
 * STAIR.  The eddy calls it on STAIRs it is about to discard, so that the
 * iteration and deletion that state migration builds on run on every
 * test's join state.
 */
void
StairSelfCheck(Stair *stair)
{
#ifdef USE_ASSERT_CHECKING
	StairIterator it;
	uint64		n = 0;
	uint32		hash;
	Datum	   *keys;
	void	   *payload;

	StairIterBegin(&it, stair);
	while ((payload = StairIterNext(&it, &hash, &keys)) != NULL)
	{
		Assert((hash & (stair->nbuckets - 1)) == it.bucket);
		n++;
	}
	Assert(n == stair->nentries);
	StairIterBegin(&it, stair);
	while ((payload = StairIterNext(&it, &hash, &keys)) != NULL)
		StairIterDelete(&it);
	Assert(stair->nentries == 0 && stair->ngroups == 0);
#endif
}
