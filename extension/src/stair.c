/*-------------------------------------------------------------------------
 *
 * stair.c
 *	  STAIR hash tables: insert and probe (see stair.h for the design).
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
#define ARENA_MIN_BLOCK			(64 * 1024)
#define ARENA_MAX_BLOCK			(4 * 1024 * 1024)

/* An arena whose blocks live in cxt (which it owns: reset with the arena) */
void
EddyArenaInit(EddyArena *arena, MemoryContext cxt)
{
	memset(arena, 0, sizeof(EddyArena));
	arena->cxt = cxt;
	arena->next_block = ARENA_MIN_BLOCK;
}

void *
EddyArenaAllocSlow(EddyArena *arena, Size size)
{
	Size		blocksize = Max(arena->next_block, size);
	char	   *block;

	block = MemoryContextAllocExtended(arena->cxt, blocksize, MCXT_ALLOC_HUGE);
	if (arena->nblocks == 0)
	{
		arena->first = block;
		arena->first_size = blocksize;
	}
	arena->nblocks++;
	arena->allocated += blocksize;
	if (arena->next_block < ARENA_MAX_BLOCK)
		arena->next_block *= 2;
	arena->ptr = block + size;
	arena->end = block + blocksize;
	return block;
}

/* Free everything. */
void
EddyArenaReset(EddyArena *arena)
{
	MemoryContextReset(arena->cxt);
	arena->ptr = arena->end = arena->first = NULL;
	arena->nblocks = 0;
	arena->allocated = 0;
	arena->next_block = ARENA_MIN_BLOCK;
}

/* Free everything, keeping the first block when it is the only one. */
void
EddyArenaRewind(EddyArena *arena)
{
	if (arena->nblocks <= 1)
	{
		if (arena->first != NULL)
		{
			arena->ptr = arena->first;
			arena->end = arena->first + arena->first_size;
		}
		return;
	}
	EddyArenaReset(arena);
}

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
	pfree(stair->buckets);
	stair->buckets = newb;
	stair->nbuckets = newn;
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
		g = stair->arena ? EddyArenaAlloc(stair->arena, sizeof(StairGroup)) :
			MemoryContextAlloc(stair->mcxt, sizeof(StairGroup));
		g->hash = hash;
		g->entries = NULL;
		g->next = stair->buckets[b];
		stair->buckets[b] = g;
		stair->ngroups++;
	}
	e = stair->arena ?
		EddyArenaAlloc(stair->arena, offsetof(StairEntry, keys) + sizeof(Datum) * nkeys) :
		MemoryContextAlloc(stair->mcxt, offsetof(StairEntry, keys) + sizeof(Datum) * nkeys);
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
	probe->next = NULL;
	stair->probed++;
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
stair_keys_equal(Stair *stair, StairEntry *e, Datum *probe_keys)
{
	StairJoinKeys *keys = stair->keys;
	int			i;

	for (i = 0; i < keys->nkeys; i++)
	{
		Datum		l = stair->side == 0 ? e->keys[i] : probe_keys[i];
		Datum		r = stair->side == 0 ? probe_keys[i] : e->keys[i];

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
	while (probe->next != NULL)
	{
		StairEntry *e = probe->next;

		probe->next = e->next;
		if (stair_keys_equal(probe->stair, e, probe->keys))
		{
			probe->stair->matched++;
			return e->payload;
		}
	}
	return NULL;
}

/*
 * Forget every entry, for a rescan.  Call it after resetting the STAIR's
 * memory context, which held them.
 */
void
StairReset(Stair *stair)
{
	stair->buckets = MemoryContextAllocZero(stair->mcxt,
											sizeof(StairGroup *) * STAIR_INITIAL_BUCKETS);
	stair->nbuckets = STAIR_INITIAL_BUCKETS;
	stair->ngroups = 0;
	stair->nentries = 0;
}
