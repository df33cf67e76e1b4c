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
 * Iteration and deletion (StairIterBegin/Next/Delete) visit every entry
 * once, in no particular order, and may delete the entry just returned:
 * the operations state migration (demotion and promotion, VLDB 2004
 * section 3.1.1) and spilling build on.  Deletion unlinks the entry and
 * keeps it (and a group it empties) on a free list that insertions reuse,
 * so a STAIR whose entries move back and forth does not grow.
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
	void	   *free_entries;	/* deleted entries, chained by their next */
	StairGroup *free_groups;	/* emptied groups, chained by next */
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

/* Iterator over the matches of one probe */
typedef struct StairProbe
{
	Stair	   *stair;
	StairEntry *next;			/* next candidate of the matching group (in a
								 * unique STAIR, a StairUniqueEntry) */
	Datum	   *keys;			/* probe key values (other side) */
	uint32		hash;			/* their hash */
} StairProbe;

/*
 * Iterator over every entry of a STAIR.  `elink` points at the link (a
 * bucket head, a group's entry list head, or an entry's next field: every
 * entry struct starts with its next pointer) that leads to the entry last
 * returned.
 */
typedef struct StairIterator
{
	Stair	   *stair;
	uint32		bucket;			/* bucket being walked */
	StairGroup **glink;			/* link to the group being walked (not unique) */
	void	  **elink;			/* link to the entry last returned, or NULL */
	bool		deleted;		/* that entry was deleted */
} StairIterator;

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
extern bool StairContains(Stair *stair, uint32 hash, Datum *values);
extern void StairReset(Stair *stair);
extern void StairClear(Stair *stair);
extern void StairPresize(Stair *stair, double nentries);
extern void StairSetUnique(Stair *stair);
extern void StairIterBegin(StairIterator *it, Stair *stair);
extern void *StairIterNext(StairIterator *it, uint32 *hash, Datum **keys);
extern void StairIterDelete(StairIterator *it);
extern void StairSelfCheck(Stair *stair);

#endif							/* EDDY_STAIR_H */
