/*-------------------------------------------------------------------------
 *
 * arena.c
 *	  Bump arenas for join state, and the per-backend pool of their blocks.
 *
 * An arena (arena.h) carves objects from EDDY_ARENA_BLOCK-sized blocks with
 * no per-chunk header and frees them all at once: join state is millions
 * of small objects that die together, at the end of the scan, at a rescan,
 * or (the transient arena) at every point of stasis.
 *
 *-------------------------------------------------------------------------
 */
#include "arena.h"

#include "executor/nodeHash.h"
#include "miscadmin.h"
#include "utils/memutils.h"

/*
 * Arena blocks are EDDY_ARENA_BLOCK bytes.  A backend keeps blocks that
 * finished queries gave back, in TopMemoryContext, and hands them to the
 * next query's arenas: memory the allocator returned to the operating
 * system at the end of every query would otherwise be faulted in page by
 * page again by the next one, and those page faults were most of a join
 * eddy's cost over a hash join.  The pool holds at most what one hash table
 * may use (work_mem × hash_mem_multiplier, as of the block's return) and
 * never more than EDDY_ARENA_POOL_MAX: a session that once ran a large join
 * does not keep its memory.  Blocks return to the pool through a reset
 * callback of the arena's memory context, so an error does not leak them.
 */
#define EDDY_ARENA_BLOCK		(64 * 1024)
#define EDDY_ARENA_POOL_MAX		(64 * 1024 * 1024)

static char **arena_pool = NULL;
static int	arena_pool_n = 0;
static int	arena_pool_max = 0;

static char *
arena_pool_get(void)
{
	char	   *block;

	if (arena_pool_n > 0)
		return arena_pool[--arena_pool_n];
	block = MemoryContextAlloc(TopMemoryContext, EDDY_ARENA_BLOCK);
	/* objects are made accessible one by one as EddyArenaAlloc hands them out */
	VALGRIND_MAKE_MEM_NOACCESS(block, EDDY_ARENA_BLOCK);
	return block;
}

static void
arena_pool_put(char *block)
{
	if (arena_pool == NULL)
	{
		arena_pool_max = EDDY_ARENA_POOL_MAX / EDDY_ARENA_BLOCK;
		arena_pool = MemoryContextAlloc(TopMemoryContext, sizeof(char *) * arena_pool_max);
	}
	if (arena_pool_n < arena_pool_max &&
		(size_t) (arena_pool_n + 1) * EDDY_ARENA_BLOCK <= get_hash_memory_limit())
	{
		/* whatever the last query left in it is gone */
		VALGRIND_MAKE_MEM_NOACCESS(block, EDDY_ARENA_BLOCK);
		arena_pool[arena_pool_n++] = block;
	}
	else
		pfree(block);
}

/* Give the arena's pooled blocks back (its context frees the rest). */
static void
arena_release_blocks(EddyArena *arena)
{
	int			i;

	for (i = 0; i < arena->nblocks; i++)
		arena_pool_put(arena->blocks[i]);
	arena->nblocks = 0;
	arena->ptr = arena->end = NULL;
	arena->allocated = 0;
}

/* The arena's context is going away: its pooled blocks go back to the pool */
static void
arena_context_callback(void *arg)
{
	EddyArena  *arena = (EddyArena *) arg;

	arena_release_blocks(arena);
	arena->blocks = NULL;
	arena->maxblocks = 0;
	arena->bigs = NULL;
	arena->nbigs = 0;
	arena->maxbigs = 0;
}

/* Append p to a growing array kept in the arena's context */
static void
arena_remember(EddyArena *arena, char ***array, int *n, int *max, char *p)
{
	if (*n >= *max)
	{
		int			newmax = Max(16, *max * 2);

		*array = *array == NULL ?
			MemoryContextAlloc(arena->cxt, sizeof(char *) * newmax) :
			repalloc(*array, sizeof(char *) * newmax);
		*max = newmax;
	}
	(*array)[(*n)++] = p;
}

/*
 * An arena whose bookkeeping and oversized blocks live in cxt.  The arena
 * struct must outlive cxt (allocate it in cxt's parent): deleting or
 * resetting cxt returns the pooled blocks.
 */
void
EddyArenaInit(EddyArena *arena, MemoryContext cxt)
{
	MemoryContextCallback *cb;

	memset(arena, 0, sizeof(EddyArena));
	arena->cxt = cxt;
	cb = MemoryContextAlloc(MemoryContextGetParent(cxt), sizeof(MemoryContextCallback));
	cb->func = arena_context_callback;
	cb->arg = arena;
	MemoryContextRegisterResetCallback(cxt, cb);
}

void *
EddyArenaAllocSlow(EddyArena *arena, Size size)
{
	char	   *block;

	if (size > EDDY_ARENA_BLOCK / 4)
	{
		/* oversized: a block of its own, not pooled; the current one stays */
		block = MemoryContextAllocExtended(arena->cxt, size, MCXT_ALLOC_HUGE);
		arena_remember(arena, &arena->bigs, &arena->nbigs, &arena->maxbigs, block);
		return block;
	}
	block = arena_pool_get();
	arena_remember(arena, &arena->blocks, &arena->nblocks, &arena->maxblocks, block);
	arena->allocated += EDDY_ARENA_BLOCK;
	arena->ptr = block + size + EDDY_ARENA_REDZONE;
	arena->end = block + EDDY_ARENA_BLOCK;
	VALGRIND_MAKE_MEM_UNDEFINED(block, size);
	return block;
}

/* Free everything. */
void
EddyArenaReset(EddyArena *arena)
{
	int			i;

	arena_release_blocks(arena);
	for (i = 0; i < arena->nbigs; i++)
		pfree(arena->bigs[i]);
	arena->nbigs = 0;
	memset(arena->free_lists, 0, sizeof(arena->free_lists));
}

/* Free everything, keeping the first block when it is the only one. */
void
EddyArenaRewind(EddyArena *arena)
{
	if (arena->nblocks == 1 && arena->nbigs == 0)
	{
		memset(arena->free_lists, 0, sizeof(arena->free_lists));
		VALGRIND_MAKE_MEM_NOACCESS(arena->blocks[0], EDDY_ARENA_BLOCK);
		arena->ptr = arena->blocks[0];
		arena->end = arena->blocks[0] + EDDY_ARENA_BLOCK;
		return;
	}
	if (arena->nblocks > 0 || arena->nbigs > 0)
		EddyArenaReset(arena);
}

