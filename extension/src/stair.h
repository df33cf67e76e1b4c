/*-------------------------------------------------------------------------
 *
 * stair.h
 *	  STAIR: a hash table on one relation's join keys (Deshpande &
 *	  Hellerstein, VLDB 2004, section 3.1).
 *
 * A STAIR holds opaque payloads (eddy tuples, or rows of a static
 * symmetric hash join) under a key of one side of an equi-join, and
 * supports insert and probe.  A probe brings the key of the other side of
 * the join: hashing and equality come from the join operators' hash
 * operator families, so cross-type joins (int4 = int8, numeric), floats
 * (-0 = 0, NaN = NaN) and collations behave exactly as in PostgreSQL's hash
 * join.  NULL keys are never stored and never match.
 *
 * A symmetric hash join is two dual STAIRs: a tuple routed to the join is
 * inserted into its own side's STAIR and probes the other.
 *
 * Layout: open addressing.  A hash group holds the entries whose keys
 * have one 32-bit hash value.  Each group has a slot in a power-of-two
 * array of slots, kept as two parallel arrays: the groups' hashes (4
 * bytes a slot, 0 for a slot never used) and the heads of their entry
 * lists (8 bytes).  A hash's slot is the first from hash & (nslots - 1)
 * on, with linear probing, that holds its hash or was never used; the one
 * group of hash 0 sits outside the array.  So a probe that finds nothing
 * reads only the dense hash array (16 slots a cache line, a quarter of
 * the memory a pointer array of the same slots would take, so that more
 * of it stays in the caches), and no group or entry is read to learn its
 * hash: in a chained table, the bucket head and the first group's hash
 * were two dependent cache misses per operation, most of a probe's cost.
 * A probe skips every slot of a different hash and then only compares
 * keys within its group, so heavily duplicated or skewed keys cost time
 * proportional to the matches they produce, never quadratic.  An
 * insertion prepends to its group's list, as PostgreSQL's hash join
 * prepends to its bucket.  The arrays double (rehashing the slots, never
 * moving an entry) before more than 4/5 of the slots are used: a probe
 * that finds nothing then reads about 13 hashes on average (linear
 * probing), one or two cache lines of the dense hash array, and a
 * smaller array stays in the caches better (measured on 50,000-row
 * STAIRs: 7% fewer misses of a 512 kB cache than at 3/4).
 * Everything lives in the memory context (the entries in the arena) given
 * at creation, so its size is the STAIR's memory use.
 *
 * Insertions are pipelined: StairInsert fills in the entry, prefetches
 * its slot and queues it; it is linked into its group STAIR_PENDING
 * insertions later, when the slot is in the cache, so that the cache
 * misses of consecutive insertions overlap.  Every operation that reads
 * the groups (probe, iteration, presizing) first links the queued entries
 * in, so the queue is invisible to callers; nentries counts them.
 *
 * Equality of by-value integer keys of one type (int4 = int4, int8 =
 * int8) is compared inline and their hash computed without a function
 * call, with the same results as the operator and hash function; every
 * other key (cross-type, floats, collatable, by-reference) calls them.
 *
 * A STAIR whose keys are known to be unique (StairSetUnique: the eddy's
 * single-relation sides with a unique index on the join keys) is laid out
 * alike: its groups have one entry each.  The flag documents the caller's
 * rule (a unique side is probed before it is stored into, mod_hashjoin.c);
 * a duplicate would still be stored and found.
 *
 * Iteration and deletion (StairIterBegin/Next/Delete) visit every entry
 * once, in no particular order, and may delete the entry just returned:
 * the operations state migration (demotion and promotion, VLDB 2004
 * section 3.1.1) and spilling build on.  Deletion unlinks the entry and
 * keeps it on a free list that insertions reuse (in an arena, the arena's
 * list for entries with as many keys, shared by every STAIR of the arena:
 * an entry state migration takes out of one STAIR is reused by another);
 * a slot its group empties
 * stays its hash's (slots never move during an iteration, which must not
 * be interleaved with insertions), and the next insertion of that hash
 * refills it.  So a STAIR whose
 * entries move back and forth does not grow; slots of other hashes that
 * stay empty are dropped when the array is rehashed.
 *
 * Completeness.  A STAIR is complete when it holds every tuple that was
 * routed to its side of the join (in the eddy's SteM mode, which stores
 * base tuples only: every row of its relation read so far).  Whoever
 * skips an insertion (the eddy does not store a tuple that found its one
 * match in a unique side, nor one that no future tuple can probe, see
 * mod_hashjoin.c) must clear `complete` and count it in `skipped`: state
 * migration may only read complete STAIRs, and spilling must know what is
 * missing.  A NULL key is not an insertion skipped: it never matches.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EDDY_STAIR_H
#define EDDY_STAIR_H

#include "postgres.h"

#include "common/hashfn.h"
#include "fmgr.h"
#include "nodes/pg_list.h"

#include "arena.h"

/*
 * How one side of an equi-join hashes its keys and compares them with the
 * other side's.  Built once per join (StairJoinKeysInit) and shared by the
 * two dual STAIRs.
 */
typedef struct StairJoinKeys
{
	int			nkeys;
	Oid		   *collations;		/* per key: the join operator's input collation */
	FmgrInfo   *hash[2];		/* per side, per key: the side's hash function */
	FmgrInfo   *eq;				/* per key: the join operator, (side 0, side 1) */
	uint8	   *hashkind[2];	/* per side, per key: STAIR_INT4, ... or 0 */
	uint8	   *eqkind;			/* per key: STAIR_INT4, ... or 0 (fmgr) */
} StairJoinKeys;

/* Keys hashed and compared inline (StairJoinKeys' hashkind, eqkind) */
#define STAIR_FMGR	0			/* call the function */
#define STAIR_INT4	1			/* hashint4, int4eq */
#define STAIR_INT8	2			/* hashint8, int8eq */

typedef struct StairEntry
{
	struct StairEntry *next;	/* in the same hash group */
	void	   *payload;
	Datum		keys[FLEXIBLE_ARRAY_MEMBER];	/* this side's key values */
} StairEntry;

#define STAIR_PENDING	8		/* insertions queued (above) */

/*
 * Entries taken out of STAIRs in bulk (StairIterTake), for StairInsert to
 * reuse from the end of the array before anything on the free list: state
 * migration takes every entry, then reinserts about as many, and an array
 * lets each reuse prefetch the entry it will reuse STAIR_POOL_AHEAD later,
 * where a chained free list reveals one entry at a time (each a cache
 * miss: they lie in the arena in the order they were made, taken in slot
 * order).  Its owner sets `pool` on every STAIR sharing the free list and
 * gives back what is left with StairEntriesFree.
 */
typedef struct StairEntryPool
{
	struct StairEntry **v;
	Size		n;
} StairEntryPool;

#define STAIR_POOL_AHEAD	8

typedef struct Stair
{
	StairJoinKeys *keys;
	int			side;			/* which side of keys this STAIR stores */
	MemoryContext mcxt;			/* entries and slots live here */
	EddyArena  *arena;			/* if set, entries come from it */
	bool		unique;			/* keys are unique (StairSetUnique) */
	void	   *chunk;			/* the slot arrays' allocation */
	uint32	   *hashes;			/* per slot: its group's hash, or 0 */
	StairEntry **heads;			/* per slot with a hash: its group's entries */
	uint32		nslots;			/* power of two */
	uint32		nused;			/* slots with a hash (some emptied) */
	StairEntry *zero;			/* the entries of hash 0 */
	uint64		ngroups;		/* groups with entries */
	uint64		nentries;		/* entries, queued ones included */
	StairEntry *free_entries;	/* deleted entries, chained by their next */
	StairEntry **free_list;		/* where they chain: &free_entries, or the
								 * arena's list for entries of this size */
	struct StairEntryPool *pool;	/* reused before the free list, or NULL */
	int			npending;		/* queued insertions, oldest first from */
	int			pending_first;	/* this index of the ring */
	uint32		pending_hash[STAIR_PENDING];
	StairEntry *pending_entry[STAIR_PENDING];
	bool		complete;		/* holds every tuple routed to it (above) */
	/* counters for EXPLAIN ANALYZE */
	uint64		inserted;
	uint64		probed;
	uint64		matched;
	uint64		skipped;		/* tuples routed to it but not stored (by
								 * the caller's rules, see completeness) */
	uint64		promoted;		/* entries promoted out of it (migrate.c) */
	uint64		demoted;		/* entries demoted in it (migrate.c) */
} Stair;

/* Bytes of a slot, in the two arrays */
#define STAIR_SLOT_BYTES	(sizeof(uint32) + sizeof(StairEntry *))

/* Bytes of slot arrays StairPresize allocates per entry, at most */
#define STAIR_PRESIZE_BYTES_PER_ENTRY	(2 * 5 * STAIR_SLOT_BYTES / 4)

/* Iterator over the matches of one probe */
typedef struct StairProbe
{
	Stair	   *stair;
	StairEntry *next;			/* next candidate of the matching group */
	Datum	   *keys;			/* probe key values (other side) */
} StairProbe;

/*
 * Iterator over every entry of a STAIR.  `elink` points at the link (a
 * group's entry list head or an entry's next field) that leads to the
 * entry last returned.  Slot nslots stands for the group of hash 0.
 */
typedef struct StairIterator
{
	Stair	   *stair;
	uint32		slot;			/* slot being walked */
	StairEntry **elink;			/* link to the entry last returned, or NULL */
	bool		deleted;		/* that entry was deleted */
} StairIterator;

/*
 * Prefetch the slot where a probe or insertion of this hash begins (the
 * eddy hashes a row once for several joins, then probes them in turn).  A
 * macro: GCC 12 drops the prefetches of an inline function, which has no
 * side effects (it deems the call dead).
 */
#define StairPrefetch(stair, hash) \
	do { \
		Stair	   *pf_stair_ = (stair); \
		uint32		pf_i_ = (hash) & (pf_stair_->nslots - 1); \
		\
		__builtin_prefetch(&pf_stair_->hashes[pf_i_]); \
		__builtin_prefetch(&pf_stair_->heads[pf_i_]); \
	} while (0)

/*
 * Is no entry of this hash in the STAIR, for certain?  True when the
 * hash's probe sequence ends at a never-used slot (a hash has at most one
 * slot, stair.c), so that a probe would find nothing; false when its group
 * is there (the keys must be compared: StairContains) or insertions are
 * still queued.  Inline, and without a probe's bookkeeping, for the
 * probes that find nothing in the scan of the source read last
 * (mod_hashjoin.c, EddyHashJoinProbeMisses: TPC-H Q17's 6 million).
 */
static inline bool
StairHashAbsent(Stair *stair, uint32 hash)
{
	uint32		mask = stair->nslots - 1;
	uint32		i = hash & mask;
	uint32	   *hashes = stair->hashes;

	if (unlikely(stair->npending > 0 || hash == 0))
		return false;
	while (hashes[i] != hash)
	{
		if (hashes[i] == 0)
			return true;
		i = (i + 1) & mask;
	}
	return false;
}

extern void StairJoinKeysInit(StairJoinKeys *keys, List *opnos,
							  List *collations);
extern bool StairKeysHashAny(StairJoinKeys *keys, int side, Datum *values,
							 bool *isnull, uint32 *hash);

/*
 * Hash one side's key values (StairKeysHashAny), inline where the keys are
 * one int4, the common case: the same hash, hash_combine(0, hashint4's),
 * without a call and a loop.  Every probe and insertion hashes: in TPC-H
 * Q17, where 6 million lineitem rows probe part's STAIR, this and the
 * check of EddyHashJoinProbeMisses made inline took a run from 6,523 M
 * instructions to 6,175 M under callgrind (PostgreSQL's plan: 6,161 M).
 */
static inline bool
StairKeysHash(StairJoinKeys *keys, int side, Datum *values,
			  bool *isnull, uint32 *hash)
{
	if (keys->nkeys == 1 && keys->hashkind[side][0] == STAIR_INT4)
	{
		if (isnull != NULL && isnull[0])
			return false;
		*hash = hash_combine(0, hash_bytes_uint32((uint32) DatumGetInt32(values[0])));
		return true;
	}
	return StairKeysHashAny(keys, side, values, isnull, hash);
}

extern Stair *StairCreate(StairJoinKeys *keys, int side, MemoryContext mcxt);
extern Stair *StairCreateInArena(StairJoinKeys *keys, int side, EddyArena *arena);
extern void StairInsert(Stair *stair, uint32 hash, Datum *values, void *payload);
extern void StairProbeBegin(StairProbe *probe, Stair *stair, uint32 hash,
							Datum *values);
extern void *StairProbeNext(StairProbe *probe);
extern bool StairContains(Stair *stair, uint32 hash, Datum *values);
extern void StairReset(Stair *stair);
extern void StairClear(Stair *stair);
extern void StairPresize(Stair *stair, double nentries);
extern void StairSpreadForProbes(Stair *stair, Size budget);
extern void StairSetUnique(Stair *stair);
extern void StairIterBegin(StairIterator *it, Stair *stair);
extern void *StairIterNext(StairIterator *it, uint32 *hash, Datum **keys);
extern void StairIterDelete(StairIterator *it);
extern StairEntry *StairIterTake(StairIterator *it);
extern void StairEntriesFree(Stair *stair, StairEntry **entries, Size n);
extern void StairSelfCheck(Stair *stair);

#endif							/* EDDY_STAIR_H */
