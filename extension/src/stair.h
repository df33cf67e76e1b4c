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
 * Layout: a power-of-two array of buckets; a bucket holds a list of hash
 * groups, one per distinct 32-bit hash value that fell into it; a group
 * holds its entries.  A probe skips every group of a different hash and
 * then only compares keys within its group, so heavily duplicated or
 * skewed keys cost time proportional to the matches they produce, never
 * quadratic.  The bucket array doubles when there are more groups than
 * buckets.  Everything lives in the memory context given at creation, so
 * its size is the STAIR's memory use.
 *
 * A STAIR whose keys are known to be unique (StairSetUnique: the eddy's
 * single-relation sides with a unique index on the join keys) needs no
 * groups: its entries carry their hash and sit directly in the buckets'
 * chains, 16 bytes smaller each, since a STAIR's footprint is most of a
 * probe's cost (cache misses).
 *
 *-------------------------------------------------------------------------
 */
#ifndef EDDY_STAIR_H
#define EDDY_STAIR_H

#include "postgres.h"

#include "fmgr.h"
#include "nodes/pg_list.h"
#include "utils/memdebug.h"

/*
 * A bump allocator: memory carved from large blocks of a memory context,
 * with no per-chunk header, freed all at once.  Join state is made of
 * millions of small objects that die together (at the end of the scan or at
 * a rescan), so this halves their footprint and makes allocation a pointer
 * bump.  `allocated` counts the blocks' bytes, so accounting is O(1).
 */
typedef struct EddyArena
{
	MemoryContext cxt;			/* oversized blocks and bookkeeping live here */
	char	   *ptr;			/* next free byte of the current block */
	char	   *end;			/* end of the current block */
	char	  **blocks;			/* pooled blocks in use, first one first */
	int			nblocks;
	int			maxblocks;
	char	  **bigs;			/* oversized blocks, in cxt */
	int			nbigs;
	int			maxbigs;
	Size		allocated;		/* bytes in pooled blocks (oversized ones are
								 * counted by cxt) */
} EddyArena;

extern void EddyArenaInit(EddyArena *arena, MemoryContext cxt);
extern void *EddyArenaAllocSlow(EddyArena *arena, Size size);
extern void EddyArenaReset(EddyArena *arena);
extern void EddyArenaRewind(EddyArena *arena);

/*
 * In a build of PostgreSQL with USE_VALGRIND, pooled blocks are no-access
 * to memcheck except for the objects handed out (undefined until written),
 * and every object is followed by a no-access gap of EDDY_ARENA_REDZONE
 * bytes: a read of a recycled block, or past an object's end, is reported.
 */
#ifdef USE_VALGRIND
#define EDDY_ARENA_REDZONE		MAXIMUM_ALIGNOF
#else
#define EDDY_ARENA_REDZONE		0
#endif

static inline void *
EddyArenaAlloc(EddyArena *arena, Size size)
{
	char	   *p;

	size = MAXALIGN(size);
	if (unlikely((Size) (arena->end - arena->ptr) < size + EDDY_ARENA_REDZONE))
		return EddyArenaAllocSlow(arena, size);
	p = arena->ptr;
	arena->ptr += size + EDDY_ARENA_REDZONE;
	VALGRIND_MAKE_MEM_UNDEFINED(p, size);
	return p;
}

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
} StairJoinKeys;

typedef struct StairEntry
{
	struct StairEntry *next;	/* in the same hash group */
	void	   *payload;
	Datum		keys[FLEXIBLE_ARRAY_MEMBER];	/* this side's key values */
} StairEntry;

typedef struct StairGroup
{
	struct StairGroup *next;	/* in the same bucket */
	uint32		hash;
	StairEntry *entries;
} StairGroup;

/*
 * An entry of a unique STAIR (StairSetUnique): its keys are unique, so it
 * needs no group; it sits directly in its bucket's chain, with its hash.
 */
typedef struct StairUniqueEntry
{
	struct StairUniqueEntry *next;	/* in the same bucket */
	void	   *payload;
	uint32		hash;
	Datum		keys[FLEXIBLE_ARRAY_MEMBER];
} StairUniqueEntry;

typedef struct Stair
{
	StairJoinKeys *keys;
	int			side;			/* which side of keys this STAIR stores */
	MemoryContext mcxt;			/* entries, groups and buckets live here */
	EddyArena  *arena;			/* if set, entries and groups come from it */
	bool		unique;			/* keys are unique: StairUniqueEntry chains
								 * in the buckets, no groups */
	StairGroup **buckets;
	uint32		nbuckets;		/* power of two */
	uint64		ngroups;
	uint64		nentries;
	/* counters for EXPLAIN ANALYZE */
	uint64		inserted;
	uint64		probed;
	uint64		matched;
} Stair;

/* Iterator over the matches of one probe */
typedef struct StairProbe
{
	Stair	   *stair;
	StairEntry *next;			/* next candidate of the matching group (in a
								 * unique STAIR, a StairUniqueEntry) */
	Datum	   *keys;			/* probe key values (other side) */
	uint32		hash;			/* their hash */
} StairProbe;

extern void StairJoinKeysInit(StairJoinKeys *keys, List *opnos,
							  List *collations);
extern bool StairKeysHash(StairJoinKeys *keys, int side, Datum *values,
						  bool *isnull, uint32 *hash);
extern Stair *StairCreate(StairJoinKeys *keys, int side, MemoryContext mcxt);
extern Stair *StairCreateInArena(StairJoinKeys *keys, int side, EddyArena *arena);
extern void StairInsert(Stair *stair, uint32 hash, Datum *values, void *payload);
extern void StairProbeBegin(StairProbe *probe, Stair *stair, uint32 hash,
							Datum *values);
extern void *StairProbeNext(StairProbe *probe);
extern void StairReset(Stair *stair);
extern void StairClear(Stair *stair);
extern void StairPresize(Stair *stair, double nentries);
extern void StairSetUnique(Stair *stair);

#endif							/* EDDY_STAIR_H */
