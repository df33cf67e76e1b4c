/*-------------------------------------------------------------------------
 *
 * mod_hashjoin.h
 *	  What the two kinds of symmetric hash join module share: STAIR mode
 *	  (mod_hashjoin.c) and SteM mode (mod_stems.c).
 *
 * A hash join in either mode is the same struct, two dual STAIRs on the
 * join's two ends; the modes differ in what they store and when (see
 * each file's header).  Every hash join begins in STAIR mode
 * (EddyHashJoinBegin); when the node starts in SteM mode, EddyStemsInit
 * gives each one SteM mode's methods.  Only the two hash join files
 * include this header.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EDDY_MOD_HASHJOIN_H
#define EDDY_MOD_HASHJOIN_H

#include "module.h"

typedef struct EddyHashJoin
{
	EddyModule	module;			/* must be first */
	EddyJoinSpec ends;
	Stair	   *stair[2];		/* per side: its tuples, by its keys */
	int			hslot[2];		/* the end's row hash slot of the keys, or -1 */
	uint32		probers[2];		/* scanned sources whose tuples may probe
								 * side d's STAIR: those of side 1 - d */

	/* while the eddy may migrate: per side, its entries by signature */
	EddySigCount *sigs[2];
	int			nsigs[2];
	int			maxsigs[2];
	int			lastsig[2];		/* the index note_sig matched last */
} EddyHashJoin;

/* m as a hash join in STAIR mode, or NULL if it is no such module */
extern EddyHashJoin *EddyHashJoinOf(EddyModule *m);

/*
 * The hash of t's side `side` keys, computed once per row slot; when it is
 * computed, the first STAIR slot each probe of that hash will read is
 * prefetched, in every STAIR the row slot probes.
 */
static inline uint32
EddyHashJoinHash(EddyState *es, EddyHashJoin *hj, int side, EddyTuple *t, Datum *keys)
{
	int			slot = hj->hslot[side];
	EddyRow    *row;
	uint32		hash;

	if (slot < 0)
	{
		StairKeysHash(&hj->ends.keys, side, keys, NULL, &hash);
		return hash;
	}
	row = t->rows[hj->ends.rel[side]];
	if (row->hvalid & (1u << slot))
		return row->hash[slot];
	StairKeysHash(&hj->ends.keys, side, keys, NULL, &hash);
	row->hash[slot] = hash;
	row->hvalid |= 1u << slot;
	{
		EddySource *src = &es->sources[hj->ends.rel[side]];
		int			n = src->nslot_stairs[slot];

		if (n > 1)
		{
			Stair	  **stairs = src->slot_stairs[slot];
			int			i;

			for (i = 0; i < n; i++)
				StairPrefetch(stairs[i], hash);
		}
	}
	return hash;
}

/* Insert into side dir's STAIR (mod_hashjoin.c, stair_insert) */
extern void EddyHashJoinInsert(EddyState *es, EddyHashJoin *hj, int dir,
							   uint32 hash, Datum *keys, void *payload);

/* Shared methods: the same in both modes */
extern void EddyHashJoinEnd(EddyState *es, EddyModule *m);
extern void EddyHashJoinExplain(EddyState *es, EddyModule *m, List *context,
								bool useprefix, ExplainState *xs);
extern void EddyHashJoinClear(EddyState *es, EddyModule *m);

/* ... and state operations (module.h, "The state interface") */
extern Stair *EddyHashJoinStore(EddyModule *m, int s);
extern EddyJoinSpec *EddyHashJoinEnds(EddyModule *m);
extern int	EddyHashJoinSigs(EddyModule *m, int side, EddySigCount **sigs);
extern void EddyHashJoinForgetSigs(EddyModule *m);
extern void EddyHashJoinSaveCounters(EddyModule *m, int s, EddyStoreCounters *c);
extern void EddyHashJoinRestoreCounters(EddyModule *m, int s,
										const EddyStoreCounters *c);
extern int	EddyHashJoinEnded(EddyState *es, EddyModule *m, int *side);

#endif							/* EDDY_MOD_HASHJOIN_H */
