/*-------------------------------------------------------------------------
 *
 * mod_hashjoin.c
 *	  The symmetric hash join module: two dual STAIRs.
 *
 * This file is STAIR mode, the default, and what both modes share
 * (mod_hashjoin.h); SteM mode, the same struct with other methods, is
 * mod_stems.c.
 *
 * STAIR mode.  A tuple routed to the join in direction d (it
 * spans end d's relation and nothing of the other side) is inserted into
 * side d's STAIR and probes side 1 - d's (the Dual Routing Property of
 * VLDB 2004): every pair of matching tuples is then produced exactly once,
 * by whichever of the two arrived second.  Its matches are pushed as a
 * frame for the eddy to drain (EddyPushFrame).  A STAIR keeps payloads
 * (tuple.h): a fresh source row alone, or a stored eddy tuple.
 *
 * Unique probes.  When side 1 - d is one relation, unique on the join keys
 * (join_graph.c), a tuple first probes: one that finds its match can find no
 * other, now or later, so it is not stored, and its one result is returned
 * to be routed on at once, with no frame.  One that finds none is stored
 * for the match to come.
 *
 * Only what can still be probed is stored.  Side d's STAIR is probed only
 * by tuples routed in direction 1 - d, which span nothing outside side
 * 1 - d.  Every tuple in flight was made from the source tuple read last,
 * which the tuple being stored spans, so it is on side d: once every
 * scanned source of side 1 - d is exhausted, no tuple can probe side d's
 * STAIR any more, and a tuple routed to it only probes.  With sources read
 * one after another, the last source and everything made from it are
 * never stored.
 *
 * A STAIR that skipped a tuple for either reason is no longer complete
 * (stair.h): these are the documented exceptions to the completeness
 * rule.  State migration (migrate.c) rebuilds the state from the rows the
 * STAIRs hold, which is sound with both: a row missing from every STAIR
 * can be in no future result.
 *
 * While the eddy may migrate, each side counts its entries by signature
 * (the sources they span): what migration compares with the routing, and
 * what lets its replay skip probes that can only make complete results.
 *
 * Hash slots.  The sides of hash joins that hash the same columns of the
 * same relation with the same functions and collations compute the same
 * hash value: in a star, every join of the centre hashes its key column.
 * Such sides share a slot in the relation's rows, so a row is hashed once
 * per slot however many joins it meets, and when it is hashed the slots
 * (stair.h) of every STAIR that the row slot's hash will probe are
 * prefetched together
 * (a star's centre probes them one after the other; their cache misses
 * then overlap).  Sides with computed keys get no slot, nor do sides past
 * EDDY_MAX_HASH_SLOTS slots of one relation.
 *
 *-------------------------------------------------------------------------
 */
#include "mod_hashjoin.h"

#include "port/pg_bitutils.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"

static EddyTuple *hashjoin_route(EddyState *es, EddyModule *m, int dir,
								 EddyTuple *t);
static EddyTuple *hashjoin_next(EddyState *es, EddyFrame *f);
static void hashjoin_rescan(EddyState *es, EddyModule *m);
static bool hashjoin_probe_only(EddyState *es, EddyModule *m, int dir);
static bool hashjoin_probe_misses(EddyState *es, EddyModule *m, int dir,
								  Datum *keys, bool *isnull);

static const EddyModuleMethods hashjoin_methods = {
	.label = "Hash Join",
	.joins = true,
	.route = hashjoin_route,
	.next = hashjoin_next,
	.rescan = hashjoin_rescan,
	.end = EddyHashJoinEnd,
	.explain = EddyHashJoinExplain,
};

/* Its state: the two STAIRs (module.h, "The state interface") */
static const EddyStateMethods hashjoin_state = {
	.nstores = 2,
	.store = EddyHashJoinStore,
	.spec = EddyHashJoinEnds,
	.clear = EddyHashJoinClear,
	.sigs = EddyHashJoinSigs,
	.forget_sigs = EddyHashJoinForgetSigs,
	.save_counters = EddyHashJoinSaveCounters,
	.restore_counters = EddyHashJoinRestoreCounters,
	.ended = EddyHashJoinEnded,
	.probe_only = hashjoin_probe_only,
	.probe_misses = hashjoin_probe_misses,
};

/*
 * The hash slot of side `side`: shared with an earlier hash join side of
 * the same relation, columns, hash functions and collations, or a new one.
 * Modules begin in plan order, so earlier modules are set up.
 */
static void
init_hash_slot(EddyState *es, EddyHashJoin *hj, int side)
{
	EddyJoinSpec *ends = &hj->ends;
	EddySource *src = &es->sources[ends->rel[side]];
	int			h = -1;
	int			mi;

	hj->hslot[side] = -1;
	if (!ends->plainkeys[side])
		return;
	if (src->slot_stairs == NULL)
	{
		src->nslot_stairs = palloc0(sizeof(int) * EDDY_MAX_HASH_SLOTS);
		src->slot_stairs = palloc0(sizeof(Stair **) * EDDY_MAX_HASH_SLOTS);
	}
	for (mi = 0; mi <= hj->module.index && h < 0; mi++)
	{
		EddyHashJoin *o = (EddyHashJoin *) es->modules[mi];
		int			os;

		if (o->module.methods != &hashjoin_methods)
			continue;
		for (os = 0; os < 2 && h < 0; os++)
		{
			int			k;
			bool		same;

			if ((o == hj && os >= side) || o->hslot[os] < 0 ||
				o->ends.rel[os] != ends->rel[side] || o->ends.nkeys != ends->nkeys)
				continue;
			same = true;
			for (k = 0; k < ends->nkeys && same; k++)
				same = o->ends.keycol[os][k] == ends->keycol[side][k] &&
					o->ends.keys.hash[os][k].fn_oid == ends->keys.hash[side][k].fn_oid &&
					o->ends.keys.collations[k] == ends->keys.collations[k];
			if (same)
				h = o->hslot[os];
		}
	}
	if (h < 0 && src->nhash < EDDY_MAX_HASH_SLOTS)
		h = src->nhash++;
	if (h >= 0)
	{
		/* per slot, the STAIRs a row's hash probes: prefetched together */
		if (src->slot_stairs[h] == NULL)
			src->slot_stairs[h] = palloc(sizeof(Stair *) * 2 * es->nmodules);
		src->slot_stairs[h][src->nslot_stairs[h]++] = hj->stair[1 - side];
	}
	hj->hslot[side] = h;
}

/* A hash join module from its description (private.h) */
EddyModule *
EddyHashJoinBegin(EddyState *es, List *desc, int index)
{
	CustomScan *cscan = (CustomScan *) es->css.ss.ps.plan;
	EddyHashJoin *hj = palloc0(sizeof(EddyHashJoin));
	EddyModule *m = &hj->module;
	int			s;

	m->methods = &hashjoin_methods;
	m->state = &hashjoin_state;
	m->index = index;
	m->expr = list_nth(cscan->custom_exprs, intVal(list_nth(desc, EddyJoinCondition)));
	EddyJoinSpecInit(es, &hj->ends, desc);
	EddyJoinTargets(m, &hj->ends, 2);
	hj->hslot[0] = hj->hslot[1] = -1;
	hj->probers[0] = hj->ends.side[1] & es->scanned;
	hj->probers[1] = hj->ends.side[0] & es->scanned;
	for (s = 0; s < 2; s++)
	{
		hj->stair[s] = StairCreateInArena(&hj->ends.keys, s, &es->stored);
		if (hj->ends.unique[s])
			StairSetUnique(hj->stair[s]);
	}
	/* the module is visible to init_hash_slot through es->modules */
	es->modules[index] = m;
	for (s = 0; s < 2; s++)
		init_hash_slot(es, hj, s);
	es->nstairs += 2;
	return m;
}

/*
 * Count an entry of signature `spans` stored on side `side`: the signature
 * of the previous entry first, inline (a side stores a few signatures, most
 * often one after another the same), the others in note_sig_slow.
 */
static pg_noinline void
note_sig_slow(EddyHashJoin *hj, int side, uint32 spans)
{
	EddySigCount *c = hj->sigs[side];
	int			n = hj->nsigs[side];
	int			i;

	for (i = 0; i < n; i++)
		if (c[i].spans == spans)
		{
			c[i].count++;
			hj->lastsig[side] = i;
			return;
		}
	if (n >= hj->maxsigs[side])
	{
		hj->maxsigs[side] = Max(8, 2 * n);
		hj->sigs[side] = c = (c == NULL) ?
			MemoryContextAlloc(GetMemoryChunkContext(hj),
							   sizeof(EddySigCount) * hj->maxsigs[side]) :
			repalloc(c, sizeof(EddySigCount) * hj->maxsigs[side]);
	}
	c[n].spans = spans;
	c[n].count = 1;
	hj->nsigs[side] = n + 1;
	hj->lastsig[side] = n;
}

static inline void
note_sig(EddyHashJoin *hj, int side, uint32 spans)
{
	int			i = hj->lastsig[side];

	if (likely(i < hj->nsigs[side] && hj->sigs[side][i].spans == spans))
		hj->sigs[side][i].count++;
	else
		note_sig_slow(hj, side, spans);
}

/*
 * State migration's replay (migrate.c) drops complete results: a tuple
 * that spans its whole side of the join, probing a STAIR whose entries all
 * span the other whole side, can only make complete results, and need not
 * probe.  The signatures are counted only while the eddy may migrate: a
 * spilled eddy's replay (spill.c) probes.
 */
static bool
replay_probe_useless(EddyState *es, EddyHashJoin *hj, int dir, EddyTuple *t)
{
	int			i;

	if (!es->migrating || t->spans != hj->ends.side[dir])
		return false;
	for (i = 0; i < hj->nsigs[1 - dir]; i++)
		if (hj->sigs[1 - dir][i].count > 0 &&
			hj->sigs[1 - dir][i].spans != hj->ends.side[1 - dir])
			return false;
	return true;
}

/*
 * Insert into side dir's STAIR; the first insertion sizes its slot array
 * from the planner's estimate of the entries it likely holds (presize_rows,
 * join_state.c; a STAIR only probed keeps its small one, one of a source
 * likely deferred a check's worth, its source's presize_cap, and one that
 * outgrows the estimate doubles).
 * The memory limit is checked every 64 insertions (and by the arenas'
 * block counts in between, which grow 64 kB at a time).
 */
static inline void
stair_insert(EddyState *es, EddyHashJoin *hj, int dir, uint32 hash, Datum *keys,
			 void *payload)
{
	Stair	   *stair = hj->stair[dir];

	if (unlikely(stair->nentries == 0 && stair->ngroups == 0))
	{
		double		rows = Min(hj->ends.presize_rows[dir],
							   (double) es->max_memory / 4 /
							   STAIR_PRESIZE_BYTES_PER_ENTRY);
		double		cap = es->sources[hj->ends.rel[dir]].presize_cap;

		/* a source likely deferred (schedule.c, "Presizing") */
		if (cap > 0)
			rows = Min(rows, cap);
		StairPresize(stair, rows);
	}
	StairInsert(stair, hash, keys, payload);
	if (unlikely(es->migrating))
		note_sig(hj, dir, EddyPayloadIsRow(payload) ? 1u << hj->ends.rel[dir] :
				 ((EddyTuple *) payload)->spans);
	if (unlikely((++es->inserts & 63) == 0))
		EddyCheckMemory(es);
}

/* Insert into side dir's STAIR, for SteM mode's BuildFirst (mod_stems.c) */
void
EddyHashJoinInsert(EddyState *es, EddyHashJoin *hj, int dir, uint32 hash,
				   Datum *keys, void *payload)
{
	stair_insert(es, hj, dir, hash, keys, payload);
}

/* m as a hash join in STAIR mode, or NULL (for EddyStemsInit, mod_stems.c) */
EddyHashJoin *
EddyHashJoinOf(EddyModule *m)
{
	return m->methods == &hashjoin_methods ? (EddyHashJoin *) m : NULL;
}

/*
 * Route tuple t into the join in direction dir: store it in its side's
 * STAIR and probe the dual one (a frame for the matches), or, against a
 * unique side, probe first and return the one result.
 */
static EddyTuple *
hashjoin_route(EddyState *es, EddyModule *m, int dir, EddyTuple *t)
{
	EddyHashJoin *hj = (EddyHashJoin *) m;
	EddyJoinSpec *ends = &hj->ends;
	Datum	   *keys = EddyArenaAlloc(&es->transient, sizeof(Datum) * Max(ends->nkeys, 1));
	Stair	   *other = hj->stair[1 - dir];
	EddyTuple  *probe;
	EddyFrame  *f;
	void	   *payload;
	uint32		hash;

	/* pairs examined, for the cumulative policy's selectivity */
	m->stats[dir].pairs += (double) other->nentries;

	/* can a future tuple still probe this side's STAIR? */
	if (unlikely((hj->probers[dir] & ~es->exhausted) == 0))
	{
		hj->stair[dir]->complete = false;
		hj->stair[dir]->skipped++;
		if (other->nentries == 0 ||
			!EddyJoinKeys(es, ends, dir, t, keys, &es->transient))
			return NULL;
		if (unlikely(es->replaying) && replay_probe_useless(es, hj, dir, t))
			return NULL;
		hash = EddyHashJoinHash(es, hj, dir, t, keys);
		if (ends->unique[1 - dir])
		{
			StairProbe	sp;
			void	   *u;

			StairProbeBegin(&sp, other, hash, keys);
			u = StairProbeNext(&sp);
			if (u == NULL)
				return NULL;
			m->stats[dir].out++;
			return EddyTupleJoin(es, m, t, ends->rel[1 - dir], u);
		}
		f = EddyPushFrame(es, m, dir, t);
		StairProbeBegin(&f->sp, other, hash, keys);
		return NULL;
	}

	if (ends->unique[1 - dir])
	{
		if (!EddyJoinKeys(es, ends, dir, t, keys, &es->transient))
			return NULL;		/* a NULL key matches nothing */
		hash = EddyHashJoinHash(es, hj, dir, t, keys);
		if (other->nentries > 0)
		{
			StairProbe	sp;
			void	   *u;

			StairProbeBegin(&sp, other, hash, keys);
			u = StairProbeNext(&sp);
			if (u != NULL)
			{
				/* the one match: t is not stored (the STAIR is incomplete) */
				hj->stair[dir]->complete = false;
				hj->stair[dir]->skipped++;
				m->stats[dir].out++;
				return EddyTupleJoin(es, m, t, ends->rel[1 - dir], u);
			}
		}
		/* by-reference keys must point into the stored rows */
		if (ends->byvalkeys[dir])
			payload = EddyTupleStoreForJoin(es, ends->rel[dir], t, NULL);
		else
		{
			payload = EddyTupleStoreForJoin(es, ends->rel[dir], t, &probe);
			if (!EddyJoinKeys(es, ends, dir, probe, keys, &es->stored))
				return NULL;
		}
		stair_insert(es, hj, dir, hash, keys, payload);
		return NULL;
	}

	/* the stored copy's rows hold the key values the STAIR keeps */
	payload = EddyTupleStoreForJoin(es, ends->rel[dir], t, &probe);
	if (!EddyJoinKeys(es, ends, dir, probe, keys, &es->stored))
		return NULL;
	hash = EddyHashJoinHash(es, hj, dir, probe, keys);
	stair_insert(es, hj, dir, hash, keys, payload);
	if (other->nentries == 0)
		return NULL;			/* nothing to match yet */
	if (unlikely(es->replaying) && replay_probe_useless(es, hj, dir, t))
		return NULL;
	f = EddyPushFrame(es, m, dir, probe);
	StairProbeBegin(&f->sp, other, hash, keys);
	return NULL;
}

/*
 * Does routing a fresh tuple of side dir's relation into this join only
 * probe?  So when nothing can probe its side any more (it would not be
 * stored).  (In SteM mode never: a probe builds there, mod_stems.c.)
 */
static inline bool
probe_only(EddyState *es, EddyHashJoin *hj, int dir)
{
	return (hj->probers[dir] & ~es->exhausted) == 0;
}

static bool
hashjoin_probe_only(EddyState *es, EddyModule *m, int dir)
{
	return probe_only(es, (EddyHashJoin *) m, dir);
}

/*
 * Would routing a fresh tuple of side dir's relation, whose key values are
 * keys (isnull), into this join make nothing and store nothing?  So when
 * it only probes (probe_only) and matches nothing in the other side's
 * STAIR: then it is counted here as hashjoin_route counts such a tuple,
 * and true is returned: the caller drops it (local.c's local chain, in the
 * source's scan).  False when it might make or store something: nothing
 * is counted, and the tuple is routed (and probes again).
 */
static bool
hashjoin_probe_misses(EddyState *es, EddyModule *m, int dir, Datum *keys,
					  bool *isnull)
{
	EddyHashJoin *hj = (EddyHashJoin *) m;
	Stair	   *other = hj->stair[1 - dir];
	uint32		hash;

	if (!probe_only(es, hj, dir))
		return false;
	if (other->nentries > 0 &&
		StairKeysHash(&hj->ends.keys, dir, keys, isnull, &hash))
	{
		if (!StairHashAbsent(other, hash) && StairContains(other, hash, keys))
			return false;
		other->probed++;		/* a probe that found nothing */
	}
	m->stats[dir].in++;
	m->stats[dir].pairs += (double) other->nentries;
	hj->stair[dir]->complete = false;
	hj->stair[dir]->skipped++;
	return true;
}

/*
 * Can the eddy make no more results, whatever its sources still hold?  Asked
 * (source.c, result_ended) at a point of stasis after a source ran out: so
 * when this join has a side whose scanned sources are all exhausted and
 * whose STAIR is empty, as a static hash join ends when one input ended
 * empty.  Returns that side (and sets *side), or -1.
 *
 * Why that ends the result.  A join module is an edge of the join tree:
 * every result spans both its sides, so it was made by a tuple of one side
 * probing the other side's STAIR here, or is made from a stored entry that
 * already spans both sides.  No tuple of side d will come: its sources are
 * exhausted and nothing is in flight.  A tuple of side 1 - d probes side
 * d's STAIR, which is empty.  And no entry anywhere spans both sides: a
 * tuple of side d routed here is stored in side d's STAIR (entries leave a
 * STAIR only when state migration rebuilds the state, and the rebuilt
 * state is that of a history under which the same holds, migrate.c),
 * except when it only probes (then side 1 - d is exhausted too, and so is
 * every source), or when its unique match on side 1 - d was already
 * stored: then side 1 - d is that one relation alone, whose tuples reach
 * side d through this join only, and none of them can match it again.
 * With no tuple of side d ever stored, side 1 - d's probes found nothing,
 * so nothing spanning both sides was ever made.  In SteM mode side d's
 * STAIR holds end d's base tuples, built into it before they probe
 * anything (BuildFirst), and a tuple of side 1 - d crosses by probing it;
 * its exceptions are the same.
 *
 * The caller does not ask while the eddy spills (a batch's state is
 * partly in its files) nor in an eddy that exchanges its state (its
 * STAIRs are not yet everyone's).
 */
int
EddyHashJoinEnded(EddyState *es, EddyModule *m, int *side)
{
	EddyHashJoin *hj = (EddyHashJoin *) m;
	int			d;

	for (d = 0; d < 2; d++)
	{
		uint32		scanned = hj->probers[1 - d];	/* side d's */

		if (scanned != 0 && (scanned & ~es->exhausted) == 0 &&
			hj->stair[d]->nentries == 0)
		{
			*side = d;
			return d;
		}
	}
	return -1;
}

/*
 * The state interface's readers (module.h): the join's ends and its
 * STAIRs, and their counters.
 */
EddyJoinSpec *
EddyHashJoinEnds(EddyModule *m)
{
	return &((EddyHashJoin *) m)->ends;
}

Stair *
EddyHashJoinStore(EddyModule *m, int s)
{
	Assert(s >= 0 && s < 2);
	return ((EddyHashJoin *) m)->stair[s];
}

void
EddyHashJoinSaveCounters(EddyModule *m, int s, EddyStoreCounters *c)
{
	Stair	   *st = ((EddyHashJoin *) m)->stair[s];

	c->inserted = st->inserted;
	c->probed = st->probed;
	c->matched = st->matched;
	c->skipped = st->skipped;
}

void
EddyHashJoinRestoreCounters(EddyModule *m, int s, const EddyStoreCounters *c)
{
	Stair	   *st = ((EddyHashJoin *) m)->stair[s];

	st->inserted = c->inserted;
	st->probed = c->probed;
	st->matched = c->matched;
	st->skipped = c->skipped;
}

/*
 * The signatures of side `side`'s entries (counted while es->migrating:
 * migrate.c turns that on when the node starts, or not at all) and their
 * counts; the number of signatures.
 */
int
EddyHashJoinSigs(EddyModule *m, int side, EddySigCount **sigs)
{
	EddyHashJoin *hj = (EddyHashJoin *) m;

	*sigs = hj->sigs[side];
	return hj->nsigs[side];
}

/* The STAIRs were emptied (state migration took their entries) */
void
EddyHashJoinForgetSigs(EddyModule *m)
{
	EddyHashJoin *hj = (EddyHashJoin *) m;

	hj->nsigs[0] = hj->nsigs[1] = 0;
}

/* The next match of a frame's probe, or NULL */
static EddyTuple *
hashjoin_next(EddyState *es, EddyFrame *f)
{
	EddyHashJoin *hj = (EddyHashJoin *) f->module;
	void	   *u;

	if (f->sp.next == NULL)
		return NULL;
	u = StairProbeNext(&f->sp);
	if (u == NULL)
		return NULL;
	f->module->stats[f->dir].out++;
	return EddyTupleJoin(es, f->module, f->probe, hj->ends.rel[1 - f->dir], u);
}

/* The entries lived in the state arena, which the eddy resets */
static void
hashjoin_rescan(EddyState *es, EddyModule *m)
{
	EddyHashJoinClear(es, m);
}

/* Forget every entry (the state interface's clear; rescan) */
void
EddyHashJoinClear(EddyState *es, EddyModule *m)
{
	EddyHashJoin *hj = (EddyHashJoin *) m;

	StairSelfCheck(hj->stair[0]);
	StairSelfCheck(hj->stair[1]);
	StairClear(hj->stair[0]);
	StairClear(hj->stair[1]);
	hj->nsigs[0] = hj->nsigs[1] = 0;
}

void
EddyHashJoinEnd(EddyState *es, EddyModule *m)
{
	EddyHashJoin *hj = (EddyHashJoin *) m;

	/* assert-enabled builds: walk and empty the STAIRs being discarded */
	StairSelfCheck(hj->stair[0]);
	StairSelfCheck(hj->stair[1]);
}

void
EddyHashJoinExplain(EddyState *es, EddyModule *m, List *context, bool useprefix,
				 ExplainState *xs)
{
	EddyHashJoin *hj = (EddyHashJoin *) m;
	bool		analyze = xs->analyze && es->css.ss.ps.instrument != NULL;
	char	   *expr = deparse_expression((Node *) m->expr, context, useprefix, false);
	char	   *keys[2];
	int			s;

	for (s = 0; s < 2; s++)
		keys[s] = hj->ends.nkeys > 0 ?
			EddyJoinKeysString(hj->ends.keyexprs[s], context, useprefix) :
			psprintf("relation %d", hj->ends.rel[s] + 1);

	if (xs->format == EXPLAIN_FORMAT_TEXT)
	{
		EddyExplainLine(xs, "Hash Join %d: %s", m->index + 1,
						hj->ends.nkeys > 0 ? expr : "(cross product)");
		EddyExplainCounters(es, m, -1, xs);
		for (s = 0; s < 2; s++)
		{
			Stair	   *st = hj->stair[s];
			StringInfoData buf;

			initStringInfo(&buf);
			appendStringInfo(&buf, "  STAIR %s", keys[s]);
			if (analyze)
			{
				appendStringInfo(&buf, ": Inserted: " UINT64_FORMAT, st->inserted);
				if (st->skipped > 0)
					appendStringInfo(&buf, "  Skipped: " UINT64_FORMAT, st->skipped);
				appendStringInfo(&buf, "  Probed: " UINT64_FORMAT "  Matched: " UINT64_FORMAT,
								 st->probed, st->matched);
				if (st->promoted > 0 || st->demoted > 0)
					appendStringInfo(&buf, "  Promoted: " UINT64_FORMAT
									 "  Demoted: " UINT64_FORMAT,
									 st->promoted, st->demoted);
			}
			EddyExplainLine(xs, "%s", buf.data);
		}
		return;
	}
	ExplainPropertyText("Operator Type", "Hash Join", xs);
	ExplainPropertyInteger("Operator Number", NULL, m->index + 1, xs);
	ExplainPropertyText("Join Condition", expr, xs);
	ExplainPropertyText("STAIR 1", keys[0], xs);
	ExplainPropertyText("STAIR 2", keys[1], xs);
	EddyExplainCounters(es, m, -1, xs);
	if (analyze)
	{
		ExplainPropertyUInteger("Inserted", NULL,
								hj->stair[0]->inserted + hj->stair[1]->inserted, xs);
		ExplainPropertyUInteger("Skipped", NULL,
								hj->stair[0]->skipped + hj->stair[1]->skipped, xs);
		ExplainPropertyUInteger("Probed", NULL,
								hj->stair[0]->probed + hj->stair[1]->probed, xs);
		ExplainPropertyUInteger("Matched", NULL,
								hj->stair[0]->matched + hj->stair[1]->matched, xs);
		ExplainPropertyUInteger("Promoted", NULL,
								hj->stair[0]->promoted + hj->stair[1]->promoted, xs);
		ExplainPropertyUInteger("Demoted", NULL,
								hj->stair[0]->demoted + hj->stair[1]->demoted, xs);
		/* ... and per STAIR, as the text format shows them */
		ExplainOpenGroup("STAIRs", "STAIRs", false, xs);
		for (s = 0; s < 2; s++)
		{
			Stair	   *st = hj->stair[s];

			ExplainOpenGroup("STAIR", NULL, true, xs);
			ExplainPropertyText("STAIR", keys[s], xs);
			ExplainPropertyUInteger("Inserted", NULL, st->inserted, xs);
			ExplainPropertyUInteger("Skipped", NULL, st->skipped, xs);
			ExplainPropertyUInteger("Probed", NULL, st->probed, xs);
			ExplainPropertyUInteger("Matched", NULL, st->matched, xs);
			ExplainPropertyUInteger("Promoted", NULL, st->promoted, xs);
			ExplainPropertyUInteger("Demoted", NULL, st->demoted, xs);
			ExplainPropertyUInteger("Hash Slots", NULL, st->nslots, xs);
			ExplainCloseGroup("STAIR", NULL, true, xs);
		}
		ExplainCloseGroup("STAIRs", "STAIRs", false, xs);
	}
}
