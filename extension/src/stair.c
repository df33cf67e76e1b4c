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

#include <sys/mman.h>

#include "common/hashfn.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#define STAIR_INITIAL_SLOTS	512	/* 6 kB */

/* Slot arrays of this size or more get huge pages (stair_new_slots) */
#define STAIR_HUGE_PAGE		((Size) 2 * 1024 * 1024)
#define STAIR_HUGE_MIN		(4 * STAIR_HUGE_PAGE)
#define STAIR_MAX_SLOTS		((uint32) 1 << 31)

/* Does a STAIR of n slots with `used` of them used need a larger array? */
#define STAIR_FULL(used, n)	((uint64) (used) * 5 > (uint64) (n) * 4)

/*
 * StairSpreadForProbes: a STAIR left to probes gets at least this many slots
 * per group, up to this many slots (64 kB of hashes).
 */
#define STAIR_SPREAD_SLOTS_PER_GROUP	8
#define STAIR_SPREAD_MAX_SLOTS		16384

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
	int			s;

	keys->nkeys = n;
	keys->collations = palloc(sizeof(Oid) * Max(n, 1));
	keys->hash[0] = palloc0(sizeof(FmgrInfo) * Max(n, 1));
	keys->hash[1] = palloc0(sizeof(FmgrInfo) * Max(n, 1));
	keys->eq = palloc0(sizeof(FmgrInfo) * Max(n, 1));
	keys->hashkind[0] = palloc0(sizeof(uint8) * Max(n, 1));
	keys->hashkind[1] = palloc0(sizeof(uint8) * Max(n, 1));
	keys->eqkind = palloc0(sizeof(uint8) * Max(n, 1));

	for (i = 0; i < n; i++)
	{
		Oid			opno = list_nth_oid(opnos, i);
		RegProcedure lhs_hash;
		RegProcedure rhs_hash;
		RegProcedure eq;

		if (!get_op_hash_functions(opno, &lhs_hash, &rhs_hash))
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("could not find hash functions for operator %u", opno)));
		eq = get_opcode(opno);
		fmgr_info(lhs_hash, &keys->hash[0][i]);
		fmgr_info(rhs_hash, &keys->hash[1][i]);
		fmgr_info(eq, &keys->eq[i]);
		keys->collations[i] = list_nth_oid(collations, i);

		/*
		 * The functions of one by-value integer type, done inline (below):
		 * exactly what int4eq and int8eq, hashint4 and hashint8 compute.
		 * Cross-type operators (int48eq ...) are other functions.
		 */
		keys->eqkind[i] = eq == F_INT4EQ ? STAIR_INT4 :
			eq == F_INT8EQ ? STAIR_INT8 : STAIR_FMGR;
		for (s = 0; s < 2; s++)
		{
			Oid			h = keys->hash[s][i].fn_oid;

			keys->hashkind[s][i] = h == F_HASHINT4 ? STAIR_INT4 :
				h == F_HASHINT8 ? STAIR_INT8 : STAIR_FMGR;
		}
	}
}

/*
 * Hash one side's key values, any number of any type (StairKeysHash, in
 * stair.h, does one int4 inline).  Returns false if a key is NULL (isnull
 * may be NULL when the caller knows none is).
 */
bool
StairKeysHashAny(StairJoinKeys *keys, int side, Datum *values, bool *isnull,
				 uint32 *hash)
{
	uint32		h = 0;
	int			i;

	for (i = 0; i < keys->nkeys; i++)
	{
		uint32		kh;

		if (isnull != NULL && isnull[i])
			return false;
		switch (keys->hashkind[side][i])
		{
			case STAIR_INT4:
				/* hashint4 */
				kh = DatumGetUInt32(hash_uint32(DatumGetInt32(values[i])));
				break;
			case STAIR_INT8:
				{
					/* hashint8: the hash of an equal int4 (cross-type joins) */
					int64		val = DatumGetInt64(values[i]);
					uint32		lohalf = (uint32) val;
					uint32		hihalf = (uint32) (val >> 32);

					lohalf ^= (val >= 0) ? hihalf : ~hihalf;
					kh = DatumGetUInt32(hash_uint32(lohalf));
				}
				break;
			default:
				kh = DatumGetUInt32(FunctionCall1Coll(&keys->hash[side][i],
													  keys->collations[i],
													  values[i]));
				break;
		}
		h = hash_combine(h, kh);
	}
	*hash = h;
	return true;
}

/* A STAIR whose entries come from the arena (its slots from its context) */
Stair *
StairCreateInArena(StairJoinKeys *keys, int side, EddyArena *arena)
{
	Stair	   *stair = StairCreate(keys, side, arena->cxt);

	stair->arena = arena;
	if (keys->nkeys < EDDY_ARENA_FREE_LISTS)
		stair->free_list = (StairEntry **) &arena->free_lists[keys->nkeys];
	return stair;
}

/*
 * Slot arrays of n slots, in the STAIR's context (one chunk).  Only the
 * hashes are zeroed: a head is read only where the hash is set.
 *
 * Large arrays are aligned on 2 MB and asked to be backed by transparent
 * huge pages (where the kernel leaves that to madvise): slots are read at
 * random, and with 4 kB pages nearly every probe and insertion of a large
 * STAIR also missed the TLB.  The chunk is 2 MB larger, which its context
 * counts.
 */
static void
stair_new_slots(Stair *stair, uint32 n)
{
	Size		bytes = STAIR_SLOT_BYTES * (Size) n;
	char	   *p;

#ifdef MADV_HUGEPAGE
	if (bytes >= STAIR_HUGE_MIN)
	{
		stair->chunk = MemoryContextAllocHuge(stair->mcxt, bytes + STAIR_HUGE_PAGE);
		p = (char *) TYPEALIGN(STAIR_HUGE_PAGE, stair->chunk);
		/* advice only: without it the pages are 4 kB */
		(void) madvise(p, bytes, MADV_HUGEPAGE);
	}
	else
#endif
		p = stair->chunk = MemoryContextAllocHuge(stair->mcxt, bytes);
	memset(p, 0, sizeof(uint32) * (Size) n);
	/* n >= 2, so the heads are aligned */
	stair->hashes = (uint32 *) p;
	stair->heads = (StairEntry **) (p + sizeof(uint32) * (Size) n);
	stair->nslots = n;
	stair->nused = 0;
}

/*
 * A STAIR storing the given side of keys.  The Stair itself is allocated in
 * the current memory context; its entries and slots in mcxt.
 */
Stair *
StairCreate(StairJoinKeys *keys, int side, MemoryContext mcxt)
{
	Stair	   *stair = palloc0(sizeof(Stair));

	stair->keys = keys;
	stair->side = side;
	stair->mcxt = mcxt;
	stair->complete = true;
	stair->free_list = &stair->free_entries;
	stair_new_slots(stair, STAIR_INITIAL_SLOTS);
	return stair;
}

/*
 * The slot of the group of hash (not 0), or the never-used slot that ends
 * its probe sequence.  A hash has at most one slot: insertion takes the
 * first of its probe sequence.  The array is never full (STAIR_FULL).
 */
static inline uint32
stair_find(Stair *stair, uint32 hash)
{
	uint32		mask = stair->nslots - 1;
	uint32		i = hash & mask;
	uint32	   *hashes = stair->hashes;

	Assert(hash != 0);
	while (hashes[i] != hash && hashes[i] != 0)
		i = (i + 1) & mask;
	return i;
}

/*
 * Move the groups to new arrays of n slots (dropping the emptied ones),
 * entries untouched.
 */
static void
stair_rehash(Stair *stair, uint32 n)
{
	void	   *oldchunk = stair->chunk;
	uint32	   *oldhashes = stair->hashes;
	StairEntry **oldheads = stair->heads;
	uint32		oldn = stair->nslots;
	uint32		i;

	stair_new_slots(stair, n);
	for (i = 0; i < oldn; i++)
	{
		uint32		j;

		if (oldhashes[i] == 0 || oldheads[i] == NULL)
			continue;
		j = stair_find(stair, oldhashes[i]);
		Assert(stair->hashes[j] == 0);
		stair->hashes[j] = oldhashes[i];
		stair->heads[j] = oldheads[i];
		stair->nused++;
	}
	Assert(stair->nused + (stair->zero != NULL) == stair->ngroups);
	pfree(oldchunk);
}

/*
 * Make room for one more used slot: drop the emptied slots if they are
 * what fills the arrays, else double them.
 */
static void
stair_grow(Stair *stair)
{
	uint32		n = stair->nslots;

	while (STAIR_FULL(stair->ngroups + 1, n) || STAIR_FULL(stair->ngroups * 2, n))
	{
		if (n >= STAIR_MAX_SLOTS)
		{
			if (stair->ngroups + 1 < n)
				break;
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("eddy: a STAIR cannot hold more than %u distinct key hashes",
							n - 1),
					 errhint("Lower eddy.max_memory, or disable the eddy for this query (eddy.enabled).")));
		}
		n *= 2;
	}
	stair_rehash(stair, n);
}

/* Link a filled-in entry into the group of hash */
static inline void
stair_link(Stair *stair, uint32 hash, StairEntry *e)
{
	StairEntry **head;

	if (unlikely(hash == 0))
		head = &stair->zero;
	else
	{
		uint32		i = stair_find(stair, hash);

		if (stair->hashes[i] == 0)
		{
			/* a new slot */
			if (unlikely(STAIR_FULL(stair->nused + 1, stair->nslots)))
			{
				stair_grow(stair);
				i = stair_find(stair, hash);
			}
			stair->hashes[i] = hash;
			stair->heads[i] = NULL;
			stair->nused++;
		}
		head = &stair->heads[i];
	}
	if (*head == NULL)
		stair->ngroups++;
	e->next = *head;
	*head = e;
}

/* Link the queued insertions, oldest first */
static void
stair_flush(Stair *stair)
{
	while (stair->npending > 0)
	{
		int			k = stair->pending_first;

		stair_link(stair, stair->pending_hash[k], stair->pending_entry[k]);
		stair->pending_first = (k + 1) % STAIR_PENDING;
		stair->npending--;
	}
}

/*
 * An entry: from the free list (deleted ones, chained by their next), else
 * from the arena or context.
 */
static inline StairEntry *
stair_alloc_entry(Stair *stair)
{
	StairEntry *e;
	Size		size = offsetof(StairEntry, keys) + sizeof(Datum) * stair->keys->nkeys;

	if (unlikely(stair->pool != NULL) && stair->pool->n > 0)
	{
		StairEntryPool *pool = stair->pool;

		e = pool->v[--pool->n];
		if (pool->n >= STAIR_POOL_AHEAD)
			__builtin_prefetch(pool->v[pool->n - STAIR_POOL_AHEAD], 1);
		return e;
	}
	e = *stair->free_list;
	if (e != NULL)
	{
		*stair->free_list = e->next;
		return e;
	}
	return stair->arena ? EddyArenaAlloc(stair->arena, size) :
		MemoryContextAlloc(stair->mcxt, size);
}

/*
 * Store payload under this side's key values (hashed by StairKeysHash):
 * fill in an entry, prefetch its slot and queue it; link in the one queued
 * STAIR_PENDING insertions ago, whose slot is now in the cache.
 */
void
StairInsert(Stair *stair, uint32 hash, Datum *values, void *payload)
{
	StairEntry *e = stair_alloc_entry(stair);
	int			k;

	e->payload = payload;
	memcpy(e->keys, values, sizeof(Datum) * stair->keys->nkeys);
	StairPrefetch(stair, hash);
	k = stair->pending_first + stair->npending;
	if (stair->npending == STAIR_PENDING)
	{
		k = stair->pending_first;
		stair_link(stair, stair->pending_hash[k], stair->pending_entry[k]);
		stair->pending_first = (k + 1) % STAIR_PENDING;
	}
	else
	{
		k %= STAIR_PENDING;
		stair->npending++;
	}
	stair->pending_hash[k] = hash;
	stair->pending_entry[k] = e;
	stair->nentries++;
	stair->inserted++;
}

/*
 * Start a probe with the other side's key values and their hash.
 */
void
StairProbeBegin(StairProbe *probe, Stair *stair, uint32 hash, Datum *values)
{
	if (unlikely(stair->npending > 0))
		stair_flush(stair);
	probe->stair = stair;
	probe->keys = values;
	if (likely(hash != 0))
	{
		uint32		i = stair_find(stair, hash);

		/* a probe that finds no group reads no head */
		probe->next = stair->hashes[i] == hash ? stair->heads[i] : NULL;
	}
	else
		probe->next = stair->zero;
	/* the caller asks for the first candidate soon (a frame, then next) */
	if (probe->next != NULL)
		__builtin_prefetch(probe->next);
	stair->probed++;
}

/* Do the entry's keys equal the probe's?  Side 0's value goes on the left. */
static inline bool
stair_keys_equal(Stair *stair, Datum *entry_keys, Datum *probe_keys)
{
	StairJoinKeys *keys = stair->keys;
	int			i;

	for (i = 0; i < keys->nkeys; i++)
	{
		Datum		l = stair->side == 0 ? entry_keys[i] : probe_keys[i];
		Datum		r = stair->side == 0 ? probe_keys[i] : entry_keys[i];

		switch (keys->eqkind[i])
		{
			case STAIR_INT4:
				if (DatumGetInt32(l) != DatumGetInt32(r))
					return false;
				break;
			case STAIR_INT8:
				if (DatumGetInt64(l) != DatumGetInt64(r))
					return false;
				break;
			default:
				if (!DatumGetBool(FunctionCall2Coll(&keys->eq[i],
													keys->collations[i],
													l, r)))
					return false;
				break;
		}
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
		if (stair_keys_equal(probe->stair, e->keys, probe->keys))
		{
			probe->stair->matched++;
			/* its miss overlaps the routing of this match */
			if (probe->next != NULL)
				__builtin_prefetch(probe->next);
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
 * Size an empty STAIR's slot arrays for about nentries distinct keys (the
 * planner's estimate), so that they do not double their way up while
 * filling: at most STAIR_PRESIZE_BYTES_PER_ENTRY bytes per entry.  Never
 * shrinks them.
 */
void
StairPresize(Stair *stair, double nentries)
{
	uint32		n = STAIR_INITIAL_SLOTS;

	Assert(stair->ngroups == 0 && stair->npending == 0);
	while (STAIR_FULL(Min(nentries, (double) ((uint32) 1 << 28)), n) &&
		   n < ((uint32) 1 << 28))
		n *= 2;
	if (n <= stair->nslots)
		return;
	pfree(stair->chunk);
	stair_new_slots(stair, n);
}

/*
 * The STAIR takes no more insertions from the routing and is left to
 * probes (the caller knows: the sources that fed it are exhausted): when it
 * is small, spread its groups over STAIR_SPREAD_SLOTS_PER_GROUP slots each,
 * so that a probe that finds nothing, most probes of a selective join,
 * reads one slot and stops.  At the 4/5 load kept while a STAIR grows (or
 * the 2/5 of 204 groups in the initial 512 slots), such a probe reads a run
 * of 2-13 slots of unpredictable length: TPC-H Q17 probes part's 204-row
 * STAIR six million times, and the branch that ends that run was the
 * hottest code of the eddy's profile.  Small only (up to
 * STAIR_SPREAD_MAX_SLOTS): the hashes of a larger STAIR would leave the
 * caches, and its probes would pay in misses what they save in branches.
 * Never shrinks the arrays, and adds at most budget bytes to them (the
 * caller's memory limit); insertions (state migration) still work.  Not
 * during an iteration.
 */
void
StairSpreadForProbes(Stair *stair, Size budget)
{
	uint32		n = stair->nslots;
	Size		slot_bytes = sizeof(uint32) + sizeof(StairEntry *);

	if (stair->npending > 0)
		stair_flush(stair);
	while ((uint64) stair->ngroups * STAIR_SPREAD_SLOTS_PER_GROUP > n &&
		   n < STAIR_SPREAD_MAX_SLOTS &&
		   (Size) (2 * n - stair->nslots) * slot_bytes <= budget)
		n *= 2;
	if (n > stair->nslots)
		stair_rehash(stair, n);
}

/*
 * Declare that the keys this STAIR will store are unique (a unique index
 * on them), before the first insertion.  The layout is the same (each
 * group has one entry); a duplicate would still be stored and found.
 */
void
StairSetUnique(Stair *stair)
{
	Assert(stair->nentries == 0);
	stair->unique = true;
}

/*
 * Forget every entry, for a rescan, when the entries live in an arena that
 * the caller resets: frees the slot arrays and starts new ones.
 */
void
StairClear(Stair *stair)
{
	pfree(stair->chunk);
	StairReset(stair);
}

/*
 * Forget every entry, for a rescan.  Call it after resetting the STAIR's
 * memory context, which held them (and the slot arrays).
 */
void
StairReset(Stair *stair)
{
	stair_new_slots(stair, STAIR_INITIAL_SLOTS);
	stair->zero = NULL;
	stair->ngroups = 0;
	stair->nentries = 0;
	stair->npending = 0;
	stair->pending_first = 0;
	stair->complete = true;
	stair->free_entries = NULL; /* an arena's shared list goes with the arena */
}

/*
 * Iteration: slot after slot, each group's list, then the group of hash 0
 * (slot nslots).  The queued insertions are linked in first.
 */
void
StairIterBegin(StairIterator *it, Stair *stair)
{
	stair_flush(stair);
	it->stair = stair;
	it->slot = 0;
	it->elink = NULL;
	it->deleted = false;
}

/*
 * Iteration walks the slots in order, but the entries and what they point
 * to lie in insertion order: a cache miss each, which state migration pays
 * for every entry of every STAIR (migrate.c).  So the walk prefetches
 * ahead, in two stages: the head entry of the group STAIR_ITER_AHEAD slots
 * on, and the payload of the one half as far, whose entry the first stage
 * brought in.  (A macro, as StairPrefetch in stair.h.)
 */
#define STAIR_ITER_AHEAD	16
#define STAIR_ITER_PREFETCH(stair, slot) \
	do { \
		uint32		pf_far_ = (slot) + STAIR_ITER_AHEAD; \
		uint32		pf_near_ = (slot) + STAIR_ITER_AHEAD / 2; \
		\
		if (pf_far_ < (stair)->nslots && (stair)->hashes[pf_far_] != 0) \
			__builtin_prefetch((stair)->heads[pf_far_]); \
		if (pf_near_ < (stair)->nslots && (stair)->hashes[pf_near_] != 0 && \
			(stair)->heads[pf_near_] != NULL) \
			__builtin_prefetch((stair)->heads[pf_near_]->payload); \
	} while (0)

/* The list head of slot i (nslots: the group of hash 0), NULL if unused */
static inline StairEntry **
stair_head(Stair *stair, uint32 i)
{
	if (i == stair->nslots)
		return &stair->zero;
	return stair->hashes[i] != 0 ? &stair->heads[i] : NULL;
}

/*
 * The next entry's payload, with its hash and key values, or NULL when
 * every entry has been returned.
 */
void *
StairIterNext(StairIterator *it, uint32 *hash, Datum **keys)
{
	Stair	   *stair = it->stair;
	StairEntry *e;

	Assert(stair->npending == 0);	/* no insertion since StairIterBegin */
	/* step past the entry last returned, unless it was deleted */
	if (it->elink != NULL && !it->deleted)
		it->elink = &(*it->elink)->next;
	it->deleted = false;

	for (;;)
	{
		if (it->elink != NULL)
		{
			if (*it->elink != NULL)
				break;
			/* the group is done */
			it->elink = NULL;
			it->slot++;
		}
		if ((it->slot & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		if (it->slot > stair->nslots)
			return NULL;
		STAIR_ITER_PREFETCH(stair, it->slot);
		it->elink = stair_head(stair, it->slot);
		if (it->elink == NULL || *it->elink == NULL)
		{
			it->elink = NULL;
			it->slot++;
		}
	}

	e = *it->elink;
	*hash = it->slot < stair->nslots ? stair->hashes[it->slot] : 0;
	*keys = e->keys;
	return e->payload;
}

/*
 * Take the entry StairIterNext returned last out of the STAIR: unlink it
 * and return it, for the caller to give back with StairEntriesFree.
 */
StairEntry *
StairIterTake(StairIterator *it)
{
	Stair	   *stair = it->stair;
	StairEntry *e;

	Assert(it->elink != NULL && *it->elink != NULL && !it->deleted);
	e = *it->elink;
	*it->elink = e->next;
	it->deleted = true;
	stair->nentries--;
	if (*stair_head(stair, it->slot) == NULL)
		stair->ngroups--;		/* the slot stays its hash's */
	return e;
}

/* Delete the entry StairIterNext returned last: unlink and free it. */
void
StairIterDelete(StairIterator *it)
{
	Stair	   *stair = it->stair;
	StairEntry *e = StairIterTake(it);

	e->next = *stair->free_list;	/* reused by StairInsert */
	*stair->free_list = e;
}

/*
 * Free n entries taken from STAIRs whose entries share this one's free
 * list (those of one arena with as many keys).
 */
void
StairEntriesFree(Stair *stair, StairEntry **entries, Size n)
{
	while (n > 0)
	{
		StairEntry *e = entries[--n];

		e->next = *stair->free_list;
		*stair->free_list = e;
	}
}

/*
 * Assert-enabled builds: iterate over every entry (their count must be
 * nentries, each found from its hash), then delete them all through the
 * iterator, leaving an empty STAIR.  The eddy calls it on STAIRs it is
 * about to discard, so that the iteration and deletion that state
 * migration builds on run on every test's join state.
 */
void
StairSelfCheck(Stair *stair)
{
#ifdef USE_ASSERT_CHECKING
	StairIterator it;
	uint64		n = 0;
	uint64		ngroups = 0;
	uint32		nused = 0;
	uint32		hash;
	Datum	   *keys;
	void	   *payload;
	uint32		i;

	stair_flush(stair);
	for (i = 0; i <= stair->nslots; i++)
	{
		StairEntry **head = stair_head(stair, i);

		if (i < stair->nslots)
			nused += stair->hashes[i] != 0;
		ngroups += head != NULL && *head != NULL;
	}
	Assert(nused == stair->nused && ngroups == stair->ngroups);
	Assert(!STAIR_FULL(stair->nused, stair->nslots) || stair->nslots >= STAIR_MAX_SLOTS);
	StairIterBegin(&it, stair);
	while ((payload = StairIterNext(&it, &hash, &keys)) != NULL)
	{
		Assert(hash == 0 ? it.slot == stair->nslots :
			   stair_find(stair, hash) == it.slot);
		n++;
	}
	Assert(n == stair->nentries);
	StairIterBegin(&it, stair);
	while ((payload = StairIterNext(&it, &hash, &keys)) != NULL)
		StairIterDelete(&it);
	Assert(stair->nentries == 0 && stair->ngroups == 0);
#endif
}
