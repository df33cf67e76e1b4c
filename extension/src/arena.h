/*-------------------------------------------------------------------------
 *
 * arena.h
 *	  Bump arenas: the memory of join state (arena.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef EDDY_ARENA_H
#define EDDY_ARENA_H

#include "postgres.h"

#include "utils/memdebug.h"

/* Free lists kept per arena (below) */
#define EDDY_ARENA_FREE_LISTS	8

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

	/*
	 * Freed objects of the arena's users, by kind, for reuse: STAIR entries
	 * with k keys chain on free_lists[k] (stair.c), so that an entry one
	 * STAIR deletes (state migration) is reused by any other.  Emptied with
	 * the arena.
	 */
	void	   *free_lists[EDDY_ARENA_FREE_LISTS];
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

#endif							/* EDDY_ARENA_H */
