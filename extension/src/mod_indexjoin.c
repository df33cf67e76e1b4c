/*-------------------------------------------------------------------------
 *
 * mod_indexjoin.c
 *	  The index join module (Deshpande 2004, section 2.1.3).
 *
 * The relation at end 1 is not scanned: a tuple routed to the join (it
 * spans end 0's relation and nothing of side 1) probes end 1's index with
 * its keys, under the query's snapshot, and each heap tuple found is a
 * match.  Only side 0 routes to it, so it is one routing target.  The
 * matches are pushed as a frame; each fetch copies the columns end 1's
 * source provides into a transient row.  A lossy index (xs_recheck) has its
 * keys rechecked with the join operators.
 *
 * An index semi or anti join (end 1 is the inner relation of a semi or
 * anti join, semijoin.c) decides at once, in route: it reads the index's
 * matches until one, joined, passes the inner qual (the join's other
 * clauses, ExecQual semantics).  A semi join passes that joined tuple on
 * (nothing above reads end 1's columns); an anti join drops the tuple if
 * there is one, and otherwise passes it on joined with a row of NULLs, as
 * it does a tuple whose key is NULL (it matches nothing).  Either way one
 * tuple in, at most one out, whatever the duplicates in end 1.  Without
 * an inner qual only the existence of a visible match counts, and it is
 * found as an index-only scan finds it: a match on a page the visibility
 * map says is all visible needs no heap fetch (nodeIndexonlyscan.c), and
 * the joined row is one of NULLs, since nothing reads it.
 *
 * Index-only index joins.  Where every column the block needs of end 1's
 * relation is one the index returns (its keys, its selections' columns,
 * what is read above the block, a later join's keys: its source's range)
 * and enable_indexonlyscan is on, the planner marks the join index-only
 * (plan_build.c, after check_index_only in indxpath.c), and the module
 * reads its matches as nodeIndexonlyscan.c does: the scan returns index
 * tuples (xs_want_itup), a match on a page the visibility map says is all
 * visible is taken as it is, and one on another page is fetched from the
 * heap only to learn whether a version of it is visible (Heap Fetches in
 * EXPLAIN ANALYZE, as PostgreSQL's).  Either way its columns come from the
 * index tuple, deformed with the index's descriptor into a virtual slot of
 * the relation's shape (each index column at its heap attribute; the
 * others NULL, and nothing reads them), so that the fetch chain, a recheck
 * and the row (EddyRowFromHeapSlot) read it as they read a heap tuple.  An
 * index column whose type differs from its attribute's (an opclass with a
 * storage type) keeps the module on the heap path; so does a hash index,
 * which returns nothing (the planner does not mark it).  The star
 * query (issue 48): count(*) of a 1M-row fact joined through its foreign
 * key's index to a dimension filtered to 100 of its 10,000 rows (10,000
 * matches, each on its own page) fetched every match from the heap, where
 * PostgreSQL's nested loop read the index alone: 24-25 ms against
 * vanilla's 1.8-2.6 ms (medians of 21 alternating EXPLAIN ANALYZE runs,
 * TIMING OFF, two servers, non-assert builds); index-only, with Heap
 * Fetches: 0 as vanilla's, 1.7-2.8 ms against 1.6-2.5 ms (paired
 * eddy/vanilla medians 1.12x and 1.15x, from 8.7x and 12.0x).
 *
 * Fetch chains.  The selections over end 1's relation alone that the
 * routing sends an inner join's matches to first are evaluated on the heap
 * tuple as it is fetched, before the eddy makes a row or a tuple of it,
 * as PostgreSQL's inner index scan filters it (TPC-H Q7: 478,523 lineitem
 * rows fetched from supplier's keys, 70% of them dropped by the l_shipdate
 * range): exec.c's local chains at fetch time.  The chain is computed from
 * the routing table for the signature of the matches (the probe's, with
 * this join done) and again when the routing changes or the probe's
 * signature does.  A match enters routing there, counted as a routed
 * tuple and as the join's output, and each selection counts and times it
 * as route_current would; one that passes carries the chain's done bits
 * to the main loop (drain_started), which routes it on.  State
 * migration's replay (which counts nothing) fetches as before.  A
 * selection that cannot be rewritten over the heap tuple (a system column,
 * a subplan) leaves the module without a chain.
 *
 * The lookup cache (eddy.index_cache).  An inner index join keeps the
 * matches of each lookup, keyed by the probe's keys, and answers a later
 * probe of equal keys from them instead of the index, as PostgreSQL's
 * Memoize does over an inner index scan (nodeMemoize.c), and as the SteMs
 * paper's index cache does (Raman, Deshpande & Hellerstein, ICDE 2003,
 * 3.3; mod_hybrid.c is that cache within a hybrid join).  A fact table
 * probing a dimension through its foreign key repeats a few thousand keys
 * hundreds of thousands of times; PostgreSQL's plan of the misestimation
 * workload's m25 (issue 48) put a Memoize over product's index, 17,613
 * misses for 235,216 probes, where the index join looked every probe up
 * and ran product's two opaque functions on every match (720 ms against
 * vanilla's 351 ms).  What is kept:
 *	 - per key looked up (a STAIR of end 1 holding probe keys, compared by
 *	   the join's operator, so only where both ends' key types are the
 *	   same; the hash is end 0's, the probes' own), the matches after a
 *	   lossy index's recheck, as rows in the cache's arena, in the order
 *	   the index returned them;
 *	 - per match, the results of the fetch chain's selections evaluated on
 *	   it so far (known, passed).  While the cache is on, the chain takes
 *	   every selection over end 1's relation alone, after those the routing
 *	   chose, in PostgreSQL's order as they become eligible: a selection
 *	   the routing would have placed after another join then runs at fetch,
 *	   as PostgreSQL's inner scan filters, and its result is kept, so that
 *	   a hit runs none (m25: the routing sent product's matches to the
 *	   category join first once the join was cheap, and the opaque
 *	   functions ran on 205,000 matches outside the cache).  A hit counts
 *	   each selection it answers as the selection's visit, untimed.
 * A key's entry is added when its lookup has returned its last match; a
 * lookup abandoned before (a rescan) adds nothing.  Equal keys under the
 * join's operator find the same matches (the index answers with that
 * operator), and the probe's own columns come from the probe, so a hit
 * returns what the index would.  Nothing volatile is kept: a volatile
 * selection over the relation keeps the cache off.  A rescan drops the
 * cache (a selection of the chain may read a parameter that changed).
 * State migration's replay neither reads nor fills it.  Its memory is its
 * own context, bounded by work_mem x hash_mem_multiplier as one of
 * PostgreSQL's hash tables (Memoize's bound too); full, it adds no key
 * and answers those it has.  Under auto it is on where the planner's
 * distinct keys among end 0's rows (EddyJoinKeyDistinct) say at least
 * MEMO_MIN_REPEAT of the probes repeat a key, and goes off for good, its
 * memory freed, when its first MEMO_JUDGE_AFTER lookups hit less than
 * MEMO_MIN_HITS of the time (the planner was wrong, or the keys repeat
 * only from far apart); on keeps it on, off never starts it.  The
 * planner's distinct keys are an estimate over its estimate of the probes,
 * and it cannot be more than that: where the probes outnumber the
 * planner's rows of end 0 by MEMO_LATE_FACTOR (and at least
 * MEMO_LATE_MIN of them came), that estimate is known wrong, and auto
 * starts the cache then, to be judged by its hits as above (issue 48's
 * m12: stale statistics put one sale after date 2,000 where 500,000 are,
 * so the planner saw one probe of product's index and no repeat; the
 * probes carried 20,000 keys, and the index join looked up every one of
 * them, 2.7 us a probe).  Not where end 0's relation has a unique index on
 * the keys (EddyJoinKeyUnique0: an index, not a statistic): its rows carry
 * each key once, however many they are.  A rescan counts the probes again
 * (the planner's rows are a scan's).  EXPLAIN ANALYZE: "Index Cache: H hits, M misses, R
 * selection results reused, K kB", and when it went on late, off or
 * filled.  A hybrid join's own index
 * module (mod_hybrid.c) probes through EddyIndexJoinProbeBegin/Next, which
 * the cache does not touch.
 *
 * Hot keys (eddy.hot_keys).  The routing scores a join by its average
 * fan-out, but under a skewed key one probe can match a large share of
 * end 1's relation: the misestimation workload's (issue 48) sales by
 * product are Zipf-distributed, product 0 on 9.5% of the 1,000,000 sales
 * against an average of 50.  m04 and m28 under eddy.random_start: the
 * random plan sent the first product read, product 0, to the index join
 * into sales before the category join that drops it, and that one probe
 * fetched (and in m04 stored) 95,000 rows, 2.5x and 1.9x the time of the
 * best start.  A probe, once begun, cannot be taken back (its matches are
 * on their way), so the decision is made before it, per tuple, as
 * content-based routing does (Bizarro, Babu, DeWitt & Widom, VLDB 2005):
 * at begin the module reads the most common values of end 1's key column
 * from pg_statistic, as nodeHash.c's skew optimisation reads the outer
 * key's, and keeps those with at least HOT_MIN_MATCHES matches and
 * HOT_FACTOR times the average key's share (one key of one column, of the
 * probe's own type, in an inner join: a semi or anti join stops at its
 * first match anyway).  The loop asks before routing a tuple here
 * (module.h, hot): a tuple whose key is hot goes first to the eligible
 * target expected to pass the fewest of it, if that is under one (a
 * selection, a join that filters; routing.c, EddyRouteFilterInstead), and
 * here once none is left; every other tuple is routed as the table says.
 * The order differs per tuple, as under the lottery policy, which the
 * executor allows (done bits).  EXPLAIN: "Hot Keys: N (M matches or more
 * each)", and under ANALYZE the probes deferred.  The statistics are read
 * when the node starts; a key that is hot but not in the statistics is
 * probed as any other.  Not over a relation with row-level security,
 * whose statistics may describe rows the user cannot see (the planner
 * feeds such statistics to leakproof functions only,
 * statistic_proc_security_check; the query's own privileges on the
 * columns it joins on are checked by the executor, as for any scan).
 *
 * A timed probe (one tuple in EDDY_COST_SAMPLE_INTERVAL, exec.c) is timed
 * through its last fetch, not only its index_rescan: the heap fetches are
 * most of an index join's cost (a page read for every match of a cold
 * relation), and the routing weighs them against the other modules'.
 * Past its first FETCH_TIMED_ALL fetches, one in FETCH_TIMED_ALL is timed
 * and counted for the ones between (indexjoin_next).
 *
 * For the routing the join and its chain are one filter: the matches the
 * chain drops are counted apart (stats.dropped) and the rank policy scores
 * the join by the matches that survive it (routing.c, ratio_with_prior).
 * Its prior follows: the planner's selectivity times the relation's tuples
 * (every row with the keys is a match; plan_build.c), times, with a chain,
 * the planner's selectivity of each selection the chain may run.  With a
 * prior of the relation's rows after its selections and no credit (before
 * 2026-11-28), the join's observed fan-out (1 on a primary key) and its
 * prior (0.49 for TPC-H Q21's orders behind o_orderstatus = 'F') disagreed,
 * and each time its decayed observations fell below the prior's weight it
 * was tried ahead of a better module; with neither, a chain that drops
 * most matches (Q8's o_orderdate range on orders) went unseen.
 *
 *-------------------------------------------------------------------------
 */
#include "mod_indexjoin.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/itup.h"
#include "access/relscan.h"
#include "access/tableam.h"
#include "access/visibilitymap.h"
#include "catalog/pg_statistic.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/predicate.h"
#include "optimizer/optimizer.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"

/*
 * The lookup cache: a probe key's matches (after a lossy index's recheck,
 * before the fetch chain), each with the results of the chain's
 * selections evaluated on it so far.
 */
typedef struct EddyMemoRow
{
	struct EddyMemoRow *next;
	EddyRow    *row;			/* in the cache's arena */
	uint64		known;			/* chain selections evaluated on it ... */
	uint64		passed;			/* ... and those it passed */
} EddyMemoRow;

typedef struct EddyMemoEntry
{
	EddyMemoRow *head;
	EddyMemoRow *tail;
} EddyMemoEntry;

/* eddy.index_cache = auto: on where the planner expects this share of
 * probes to repeat a key; off when, after MEMO_JUDGE_AFTER lookups, fewer
 * than MEMO_MIN_HITS of them hit */
#define MEMO_MIN_REPEAT		0.5
#define MEMO_JUDGE_AFTER	4096
#define MEMO_MIN_HITS		0.1
/* ... and where auto kept it off, on once the probes outnumber the
 * planner's rows of end 0 this many times, and at least MEMO_LATE_MIN */
#define MEMO_LATE_FACTOR	4.0
#define MEMO_LATE_MIN		1000

/* Hot keys: at least this many matches, and this many times the average
 * key's ("Hot keys" above) */
#define HOT_MIN_MATCHES		1000.0
#define HOT_FACTOR			10.0

typedef struct EddyIndexJoin
{
	EddyModule	module;			/* must be first */
	EddyJoinSpec ends;
	Oid			indexoid;
	Relation	index;
	IndexScanDesc scan;
	ScanKey		skeys;			/* in index column order */
	int		   *skey_of_key;	/* key k's scan key */
	JoinType	jointype;		/* JOIN_INNER, JOIN_SEMI or JOIN_ANTI */
	EddyPredicate inner_qual;	/* semi/anti: the join's other clauses */
	bool		has_inner_qual;
	Expr	   *inner_expr;		/* for EXPLAIN */
	Buffer		vmbuffer;		/* semi/anti without an inner qual, and an
								 * index-only join: the visibility map */
	uint64		heap_fetches;	/* ... matches checked in the heap */

	/* an index-only join ("Index-only index joins" above) */
	bool		index_only;
	TupleTableSlot *ioslot;		/* virtual, of the relation's shape */
	Datum	   *ivalues;		/* an index tuple, deformed */
	bool	   *iisnull;

	/* the fetch chain (an inner join; "Fetch chains" above) */
	EddyPredicate *chain_preds; /* per module: a selection over end 1's
								 * relation alone, over the heap tuple; NULL
								 * if the module has no chain */
	int		   *chain;			/* targets of this epoch's chain ... */
	int			chain_len;
	uint32		chain_spans;	/* ... for matches of this signature */
	uint64		chain_done;
	uint64		chain_generation;	/* the router's generation it is of */
	uint64		chain_dropped;	/* matches it dropped (EXPLAIN ANALYZE) */

	/* the lookup cache ("The lookup cache" above) */
	bool		memo_wanted;	/* eddy.index_cache and the planner allow it */
	bool		memo_auto;		/* eddy.index_cache = auto (memo_lookup) */
	uint64		memo_late_after;	/* auto, off by the planner's estimate:
									 * on at this many probes; 0 never */
	uint64		memo_probes;	/* probes since the scan began (the above) */
	uint64		memo_late_at;	/* probes when it went on late */
	MemoryContext memo_cxt;		/* everything it keeps, freed when it goes off */
	EddyArena	memo_arena;
	Stair	   *memo;			/* probe keys looked up, payload EddyMemoEntry */
	Size		memo_limit;		/* bytes: work_mem x hash_mem_multiplier */
	bool		memo_full;		/* no key is added any more */
	EddyMemoEntry *memo_building;	/* the lookup under way (a miss), or NULL */
	uint32		memo_build_hash;	/* ... its keys' hash */
	Datum	   *memo_build_keys;	/* ... and its keys, in the arena */
	EddyMemoRow *memo_next;		/* a hit under way: its next row, or NULL */
	bool		memo_hit;		/* the frame reads the cache, not the index */
	TupleTableSlot *memo_slot;	/* virtual, of the relation's shape: the
								 * fetch chain reads a kept row here */
	uint64		memo_lookups;	/* probes looked up in the cache ... */
	uint64		memo_hits;		/* ... answered by it */
	uint64		memo_answers;	/* fetch-chain results read from it */
	uint64		memo_off_at;	/* lookups when it went off (memo_lookup) */
	uint64		memo_full_at;	/* ... when it filled */
	Size		memo_peak;		/* its peak bytes */

	/* hot keys ("Hot keys" above) */
	Stair	   *hot;			/* end 1's keys the statistics say are hot,
								 * hashed as probe keys; NULL if none */
	int			nhot;
	double		hot_matches;	/* the fewest matches a hot key has */
} EddyIndexJoin;

static EddyTuple *indexjoin_route(EddyState *es, EddyModule *m, int dir,
								  EddyTuple *t);
static EddyTuple *indexjoin_next(EddyState *es, EddyFrame *f);
static EddyTuple *indexjoin_fetch(EddyState *es, EddyIndexJoin *ij, EddyTuple *t);
static void indexjoin_end(EddyState *es, EddyModule *m);
static void indexjoin_rescan(EddyState *es, EddyModule *m);
static bool memo_lookup(EddyState *es, EddyIndexJoin *ij, Datum *keys);
static bool index_only_possible(EddyIndexJoin *ij, EddySource *src);
static void hot_keys_init(EddyIndexJoin *ij, EddySource *inner, int col);
static bool indexjoin_hot(EddyState *es, EddyModule *m, EddyTuple *t);
static void indexjoin_explain(EddyState *es, EddyModule *m, List *context,
							  bool useprefix, ExplainState *xs);

static const EddyModuleMethods indexjoin_methods = {
	.label = "Index Join",
	.joins = true,
	.route = indexjoin_route,
	.next = indexjoin_next,
	.rescan = indexjoin_rescan, /* each probe rescans the index; the lookup
								 * cache is dropped */
	.end = indexjoin_end,
	.explain = indexjoin_explain,
	.hot = indexjoin_hot,
};

/* An index join module from its description (private.h) */
EddyModule *
EddyIndexJoinBegin(EddyState *es, List *desc, int index)
{
	CustomScan *cscan = (CustomScan *) es->css.ss.ps.plan;
	EddyIndexJoin *ij = palloc0(sizeof(EddyIndexJoin));
	EddyModule *m = &ij->module;
	EddyJoinSpec *ends = &ij->ends;
	EddySource *inner;
	List	   *cols = list_nth(desc, EddyJoinIndexCols);
	List	   *opnos = list_nth(desc, EddyJoinOperators);
	int			k;

	m->methods = &indexjoin_methods;
	m->index = index;
	m->expr = list_nth(cscan->custom_exprs, intVal(list_nth(desc, EddyJoinCondition)));
	EddyJoinSpecInit(es, ends, desc);
	EddyJoinTargets(m, ends, 1);
	inner = &es->sources[ends->rel[1]];
	Assert(inner->heap != NULL);	/* index-joined, or a hybrid join's */
	/* what the inner's rows hang off, for the build schedule's deferral */
	inner->fetched_by = ends->rel[0];
	inner->fetch_fanout = Max(m->stats[0].prior_ratio, 0.0);

	ij->indexoid = (Oid) intVal(list_nth(desc, EddyJoinIndexOid));
	ij->jointype = (JoinType) intVal(list_nth(desc, EddyJoinType));
	if (intVal(list_nth(desc, EddyJoinInnerQual)) >= 0)
	{
		ij->inner_expr = list_nth(cscan->custom_exprs,
								  intVal(list_nth(desc, EddyJoinInnerQual)));
		EddyPredicateInit(&ij->inner_qual, ij->inner_expr, &es->css.ss.ps);
		ij->has_inner_qual = true;
	}
	ij->index = index_open(ij->indexoid, AccessShareLock);
	ij->skeys = palloc0(sizeof(ScanKeyData) * Max(ends->nkeys, 1));
	/* the lookup cache: an inner join's, keyed as end 1 (same types) */
	ij->memo_wanted = ij->jointype == JOIN_INNER && ends->nkeys > 0 &&
		eddy_index_cache != EDDY_HYBRID_CACHE_OFF;
	ij->memo_auto = eddy_index_cache == EDDY_HYBRID_CACHE_AUTO;
	{
		double		distinct = floatVal(list_nth(desc, EddyJoinKeyDistinct));
		double		rows = Max(ends->est_rows[0], 1.0);

		/* the planner's share of probes whose keys an earlier probe had */
		double		repeat = distinct > 0 ? Min(Max(1.0 - distinct / rows, 0.0), 1.0) : 0.0;

		if (eddy_index_cache == EDDY_HYBRID_CACHE_AUTO && repeat < MEMO_MIN_REPEAT &&
			ij->memo_wanted)
		{
			/*
			 * Off, unless the probes prove the estimate wrong; where end 0's
			 * relation is unique on the keys (an index says so, not the
			 * statistics), its rows' keys never repeat, however many.
			 */
			ij->memo_wanted = false;
			if (intVal(list_nth(desc, EddyJoinKeyUnique0)) == 0)
				ij->memo_late_after = (uint64) Max(MEMO_LATE_FACTOR * rows, MEMO_LATE_MIN);
		}
	}
	for (k = 0; k < ends->nkeys; k++)
	{
		/* the plan orients operators end 0 (outer) on the left: commute */
		Oid			opno = get_commutator((Oid) intVal(list_nth(opnos, k)));
		int			col = intVal(list_nth(cols, k));
		Oid			opfamily = ij->index->rd_opfamily[col - 1];
		int			strategy;
		Oid			lefttype;
		Oid			righttype;

		if (!OidIsValid(opno))
			elog(ERROR, "eddy: no commutator for an index join operator");
		get_op_opfamily_properties(opno, opfamily, false, &strategy, &lefttype,
								   &righttype);
		/* the cache compares probe keys with probe keys by this operator */
		if (lefttype != righttype)
		{
			ij->memo_wanted = false;
			ij->memo_late_after = 0;
		}
		ScanKeyEntryInitialize(&ij->skeys[k], 0, col, strategy, righttype,
							   ends->keys.collations[k], get_opcode(opno), (Datum) 0);
		/* hot keys are kept as probe keys are in the cache: same types */
		if (eddy_hot_keys && ij->jointype == JOIN_INNER && ends->nkeys == 1 &&
			lefttype == righttype)
			hot_keys_init(ij, inner, col);
	}
	/* btree wants its scan keys in index column order: sort, keep a map */
	ij->skey_of_key = palloc(sizeof(int) * Max(ends->nkeys, 1));
	for (k = 0; k < ends->nkeys; k++)
		ij->skey_of_key[k] = k;
	for (k = 1; k < ends->nkeys; k++)
	{
		int			j;

		for (j = k; j > 0 && ij->skeys[j - 1].sk_attno > ij->skeys[j].sk_attno; j--)
		{
			ScanKeyData tmp = ij->skeys[j];
			int			a;

			ij->skeys[j] = ij->skeys[j - 1];
			ij->skeys[j - 1] = tmp;
			/* keys whose scan key sat at j and j - 1 swap places */
			for (a = 0; a < ends->nkeys; a++)
			{
				if (ij->skey_of_key[a] == j)
					ij->skey_of_key[a] = j - 1;
				else if (ij->skey_of_key[a] == j - 1)
					ij->skey_of_key[a] = j;
			}
		}
	}
	ij->scan = index_beginscan(inner->heap, ij->index,
							   es->css.ss.ps.state->es_snapshot, ends->nkeys, 0);
	if (intVal(list_nth(desc, EddyJoinIndexOnly)) != 0 &&
		index_only_possible(ij, inner))
	{
		TupleDesc	heapdesc = RelationGetDescr(inner->heap);
		int			c;

		ij->index_only = true;
		ij->scan->xs_want_itup = true;
		ij->ioslot = MakeSingleTupleTableSlot(heapdesc, &TTSOpsVirtual);
		/* the columns no index column fills stay NULL */
		for (c = 0; c < heapdesc->natts; c++)
		{
			ij->ioslot->tts_values[c] = (Datum) 0;
			ij->ioslot->tts_isnull[c] = true;
		}
		ij->ivalues = palloc(sizeof(Datum) * RelationGetDescr(ij->index)->natts);
		ij->iisnull = palloc(sizeof(bool) * RelationGetDescr(ij->index)->natts);
	}
	return m;
}

/*
 * Can the index's tuples stand for the heap's (the planner marked the join
 * index-only)?  Each column of end 1's source must be an index column of
 * the attribute's own type: an opclass with a storage type (opckeytype)
 * stores something else.
 */
static bool
index_only_possible(EddyIndexJoin *ij, EddySource *src)
{
	TupleDesc	idesc = RelationGetDescr(ij->index);
	TupleDesc	hdesc = RelationGetDescr(src->heap);
	int			c;

	for (c = 0; c < src->ncols; c++)
	{
		AttrNumber	attno = src->attnos[c];
		int			col;

		for (col = 0; col < ij->index->rd_index->indnatts; col++)
			if (ij->index->rd_index->indkey.values[col] == attno &&
				TupleDescAttr(idesc, col)->atttypid ==
				TupleDescAttr(hdesc, attno - 1)->atttypid)
				break;
		if (col >= ij->index->rd_index->indnatts)
			return false;
	}
	return true;
}

/*
 * The fetch chain's predicates, for an inner index join whose end 1 some
 * selections read alone (exec.c calls this once every module is begun).
 */
void
EddyIndexJoinBeginChain(EddyState *es, EddyModule *m)
{
	EddyIndexJoin *ij = (EddyIndexJoin *) m;
	EddySource *src;
	EddyPredicate *preds = NULL;
	int			x;
	int			j;

	if (m->methods != &indexjoin_methods || ij->jointype != JOIN_INNER)
		return;
	x = ij->ends.rel[1];
	src = &es->sources[x];
	for (j = 0; j < es->nmodules; j++)
	{
		EddyModule *sel = es->modules[j];
		Node	   *expr;

		if (sel->filter == NULL || (sel->target[0].need & ~(1u << x)) != 0)
			continue;
		expr = EddyRewriteForSource((Node *) sel->expr, src, NIL, true);
		if (expr == NULL)
			return;
		/* a volatile selection's results cannot be kept */
		if (contain_volatile_functions(expr))
		{
			ij->memo_wanted = false;
			ij->memo_late_after = 0;
		}
		if (preds == NULL)
			preds = palloc0(sizeof(EddyPredicate) * es->nmodules);
		preds[j].qual = ExecInitQual(list_make1(expr), &es->css.ss.ps);
	}
	if (preds == NULL)
		return;
	ij->chain_preds = preds;
	ij->chain = palloc(sizeof(int) * es->nmodules);
	ij->chain_generation = UINT64_MAX;

	/*
	 * The routing credits the join with what its chain drops (routing.c,
	 * ratio_with_prior): its prior fan-out is of the matches that pass the
	 * selections the chain may run, each at the planner's selectivity.
	 */
	for (j = 0; j < es->nmodules; j++)
		if (preds[j].qual != NULL)
			m->stats[0].prior_ratio *= es->modules[j]->stats[0].prior_ratio;
}

/* A kept row's columns in the cache's slot, of the relation's shape */
static TupleTableSlot *
memo_slot_of(EddyIndexJoin *ij, EddySource *src, EddyRow *row)
{
	TupleTableSlot *slot = ij->memo_slot;
	int			c;

	ExecClearTuple(slot);
	for (c = 0; c < src->ncols; c++)
	{
		slot->tts_values[src->attnos[c] - 1] = row->values[c];
		slot->tts_isnull[src->attnos[c] - 1] = row->isnull[c];
	}
	return ExecStoreVirtualTuple(slot);
}

/*
 * A match enters routing here, where the fetch chain evaluates it (above):
 * a match fetched, on the heap slot, or one the lookup cache kept (mr,
 * heapslot NULL), whose results of the chain's selections are read from
 * the cache where they are known.  A match being kept (mr and the heap
 * slot) has its results recorded.  False if a selection dropped it; else
 * *done holds the selections it passed and the main loop routes it on.
 */
static bool
fetch_chain(EddyState *es, EddyIndexJoin *ij, EddyTuple *t,
			TupleTableSlot *heapslot, EddyMemoRow *mr, uint64 *done)
{
	EddyRouter *router = &es->router;
	ExprContext *econtext = es->css.ss.ps.ps_ExprContext;
	uint32		spans = t->spans | (1u << ij->ends.rel[1]);
	uint64		d = t->done | (UINT64CONST(1) << ij->module.index);
	bool		timed;
	int			k;

	EddyRouterTupleIn(router);	/* as start_route counts it */
	timed = (--es->until_sample <= 0);
	if (timed)
		es->until_sample = EDDY_COST_SAMPLE_INTERVAL;
	if (ij->chain_generation != router->generation ||
		ij->chain_spans != spans || ij->chain_done != d)
	{
		int			target;

		ij->chain_len = 0;
		while ((target = EddyRoute(router, spans, d)) != EDDY_ROUTE_OUTPUT &&
			   ij->chain_preds[es->targets[target].module].qual != NULL)
		{
			Assert(ij->chain_len < es->nmodules);
			ij->chain[ij->chain_len++] = target;
			d |= UINT64CONST(1) << es->targets[target].module;
		}
		if (ij->memo_cxt != NULL)
		{
			/*
			 * With the lookup cache, every selection over end 1 alone runs
			 * here, after those the routing chose, in PostgreSQL's order as
			 * they become eligible: the cache keeps their results, so that
			 * a hit runs none ("The lookup cache" above).
			 */
			bool		added;

			do
			{
				added = false;
				for (target = 0; target < es->ntargets; target++)
				{
					EddyRouteTarget *tg = &es->targets[target];

					if (ij->chain_preds[tg->module].qual != NULL &&
						EddyRouteTargetEligible(tg, spans, d))
					{
						Assert(ij->chain_len < es->nmodules);
						ij->chain[ij->chain_len++] = target;
						d |= UINT64CONST(1) << tg->module;
						added = true;
					}
				}
			} while (added);
		}
		ij->chain_spans = spans;
		ij->chain_done = t->done | (UINT64CONST(1) << ij->module.index);
		ij->chain_generation = router->generation;
	}
	*done = 0;
	if (ij->chain_len > 0)
	{
		econtext->ecxt_scantuple = heapslot;
		for (k = 0; k < ij->chain_len; k++)
		{
			EddyRouteTarget *tg = &es->targets[ij->chain[k]];
			uint64		bit = UINT64CONST(1) << tg->module;
			bool		pass;

			if (mr != NULL && (mr->known & bit) != 0)
			{
				/* answered by the cache: counted, not timed */
				pass = (mr->passed & bit) != 0;
				tg->stats->in++;
				if (pass)
					tg->stats->out++;
				ij->memo_answers++;
			}
			else
			{
				if (econtext->ecxt_scantuple == NULL)
					econtext->ecxt_scantuple =
						memo_slot_of(ij, &es->sources[ij->ends.rel[1]], mr->row);
				pass = EddyLocalFilterPerTuple(tg, &ij->chain_preds[tg->module],
											   econtext, timed);
				if (mr != NULL)
				{
					mr->known |= bit;
					if (pass)
						mr->passed |= bit;
				}
			}
			if (!pass)
			{
				InstrCountFiltered1(&es->css, 1);
				ij->module.stats[0].out++;	/* the join made it */
				ij->module.stats[0].dropped++;	/* ... and the chain dropped it */
				ij->chain_dropped++;
				return false;
			}
			*done |= bit;
		}
	}
	es->drain_started = true;
	es->current_timed = timed;
	return true;
}

/* t joined with end 1's row, which the module has done */
static EddyTuple *
joined(EddyState *es, EddyModule *m, EddyTuple *t, int rel, EddyRow *row)
{
	EddyTuple  *r = EddyTupleAlloc(es, &es->transient);

	r->spans = t->spans | (1u << rel);
	r->done = t->done | (UINT64CONST(1) << m->index);
	memcpy(r->rows, t->rows, sizeof(EddyRow *) * es->nsources);
	r->rows[rel] = row;
	return r;
}

/*
 * A lossy index's match (xs_recheck): do its keys equal the probe's under
 * the join operators?  The heap slot is deformed up to src->max_attno.
 */
static bool
keys_match(EddyIndexJoin *ij, EddySource *src, TupleTableSlot *heapslot)
{
	EddyJoinSpec *ends = &ij->ends;
	int			k;

	for (k = 0; k < ends->nkeys; k++)
	{
		int			col = ends->keycol[1][k];

		if (col < 0 || heapslot->tts_isnull[src->attnos[col] - 1] ||
			!DatumGetBool(FunctionCall2Coll(&ends->keys.eq[k],
											ends->keys.collations[k],
											ij->skeys[ij->skey_of_key[k]].sk_argument,
											heapslot->tts_values[src->attnos[col] - 1])))
			return false;
	}
	return true;
}

/*
 * Is there a visible match of the index scan under way (an inner qual-less
 * semi or anti join)?  As an index-only scan: no heap fetch for a match on
 * an all-visible page.
 */
static bool
semijoin_exists(EddyState *es, EddyIndexJoin *ij)
{
	EddySource *src = &es->sources[ij->ends.rel[1]];
	TupleTableSlot *heapslot = src->heapslot;
	ItemPointer tid;

	while ((tid = index_getnext_tid(ij->scan, ForwardScanDirection)) != NULL)
	{
		CHECK_FOR_INTERRUPTS();
		if (!ij->scan->xs_recheck &&
			VM_ALL_VISIBLE(ij->scan->heapRelation, ItemPointerGetBlockNumber(tid),
						   &ij->vmbuffer))
		{
			PredicateLockPage(ij->scan->heapRelation, ItemPointerGetBlockNumber(tid),
							  es->css.ss.ps.state->es_snapshot);
			return true;
		}
		ij->heap_fetches++;
		if (!index_fetch_heap(ij->scan, heapslot))
			continue;			/* no visible version */
		if (ij->scan->xs_recheck)
		{
			bool		match;

			slot_getsomeattrs(heapslot, src->max_attno);
			match = keys_match(ij, src, heapslot);
			ExecClearTuple(heapslot);
			if (!match)
				continue;
		}
		ExecClearTuple(heapslot);
		return true;
	}
	return false;
}

/* t joined with a row of NULLs for end 1 */
static EddyTuple *
joined_nulls(EddyState *es, EddyIndexJoin *ij, EddyTuple *t)
{
	EddySource *src = &es->sources[ij->ends.rel[1]];
	Datum	   *values = es->fetch_values;
	bool	   *isnull = es->fetch_isnull;
	int			c;

	for (c = 0; c < src->ncols; c++)
	{
		values[c] = (Datum) 0;
		isnull[c] = true;
	}
	return joined(es, &ij->module, t, ij->ends.rel[1],
				  EddyRowMake(&es->transient, src, values, isnull, true));
}

/* Semi or anti join: t joined with its first match, with NULLs, or NULL */
static EddyTuple *
semijoin_decide(EddyState *es, EddyIndexJoin *ij, EddyTuple *t, bool keyed)
{
	EddyModule *m = &ij->module;
	EddyTuple  *r = NULL;

	if (!ij->has_inner_qual)
	{
		bool		found = keyed && semijoin_exists(es, ij);

		if (found != (ij->jointype == JOIN_SEMI))
			return NULL;
		m->stats[0].out++;
		return joined_nulls(es, ij, t);
	}
	while (keyed && (r = indexjoin_fetch(es, ij, t)) != NULL)
	{
		if (EddyPredicateOnTuple(es, &ij->inner_qual, r))
			break;
	}
	if (ij->jointype == JOIN_SEMI)
	{
		if (r == NULL)
			return NULL;
		r->done |= UINT64CONST(1) << m->index;
	}
	else
	{
		if (r != NULL)
			return NULL;
		r = joined_nulls(es, ij, t);
	}
	m->stats[0].out++;
	return r;
}

/*
 * Start an index scan with t's keys; its matches come from the frame (an
 * inner join), or decide at once (semi, anti).
 */
static EddyTuple *
indexjoin_route(EddyState *es, EddyModule *m, int dir, EddyTuple *t)
{
	EddyIndexJoin *ij = (EddyIndexJoin *) m;
	EddyJoinSpec *ends = &ij->ends;
	Datum	   *keys = EddyArenaAlloc(&es->transient, sizeof(Datum) * Max(ends->nkeys, 1));
	int			k;

	Assert(dir == 0);
	m->stats[0].pairs += Max(ends->est_rows[1], 1.0);	/* pairs examined */
	if (!EddyJoinKeys(es, ends, 0, t, keys, &es->transient))
	{
		/* a NULL key matches nothing */
		return ij->jointype == JOIN_INNER ? NULL : semijoin_decide(es, ij, t, false);
	}
	ij->memo_hit = false;
	ij->memo_building = NULL;
	if (ij->memo_late_after > 0 && !es->replaying &&
		++ij->memo_probes >= ij->memo_late_after)
	{
		/* the planner's probes were far too few: auto starts it now */
		ij->memo_late_after = 0;
		ij->memo_late_at = ij->memo_probes;
		ij->memo_wanted = true;
	}
	if (ij->memo_cxt != NULL || ij->memo_wanted)
	{
		if (!es->replaying && memo_lookup(es, ij, keys))
		{
			/* a hit: the frame reads the cache */
			EddyPushFrame(es, m, 0, t);
			return NULL;
		}
	}
	for (k = 0; k < ends->nkeys; k++)
		ij->skeys[ij->skey_of_key[k]].sk_argument = keys[k];
	EddyIndexLookupDelay();
	index_rescan(ij->scan, ij->skeys, ends->nkeys, NULL, 0);
	if (ij->jointype != JOIN_INNER)
		return semijoin_decide(es, ij, t, true);
	EddyPushFrame(es, m, 0, t);
	return NULL;
}

/*
 * A timed probe's fetches: the first FETCH_TIMED_ALL are timed, then one in
 * FETCH_TIMED_ALL, counted for the ones between (two clock reads a fetch
 * were 3% of m04's time: 966 timed probes of 31 matches each)
 */
#define FETCH_TIMED_ALL	8

/* The next heap tuple the frame's index scan finds, joined, or NULL */
static EddyTuple *
indexjoin_next(EddyState *es, EddyFrame *f)
{
	EddyIndexJoin *ij = (EddyIndexJoin *) f->module;
	EddyTuple  *r;

	if (unlikely(f->timed) &&
		(f->nnext < FETCH_TIMED_ALL || f->nnext % FETCH_TIMED_ALL == 0))
	{
		/* the probe's cost is its index scan's: the fetches count with it */
		double		start = eddy_now_ns();
		double		weight = f->nnext < FETCH_TIMED_ALL ? 1.0 : FETCH_TIMED_ALL;

		r = indexjoin_fetch(es, ij, f->probe);
		f->module->stats[0].cost_ns += (eddy_now_ns() - start) * weight;
		f->nnext++;
	}
	else
	{
		r = indexjoin_fetch(es, ij, f->probe);
		if (unlikely(f->timed))
			f->nnext++;
	}
	if (r != NULL)
		f->module->stats[0].out++;
	return r;
}

/*
 * The next visible match of an index-only join's scan, in ij->ioslot, or
 * NULL: IndexOnlyNext (nodeIndexonlyscan.c).
 */
static TupleTableSlot *
index_only_next(EddyState *es, EddyIndexJoin *ij, EddySource *src)
{
	IndexScanDesc scan = ij->scan;
	TupleTableSlot *slot = ij->ioslot;
	ItemPointer tid;

	while ((tid = index_getnext_tid(scan, ForwardScanDirection)) != NULL)
	{
		bool		from_heap = false;
		int			col;

		CHECK_FOR_INTERRUPTS();
		if (!VM_ALL_VISIBLE(scan->heapRelation, ItemPointerGetBlockNumber(tid),
							&ij->vmbuffer))
		{
			/* not known visible to all: is a version of it visible to us? */
			ij->heap_fetches++;
			if (!index_fetch_heap(scan, src->heapslot))
				continue;
			ExecClearTuple(src->heapslot);
			if (scan->xs_heap_continue)
				elog(ERROR, "non-MVCC snapshots are not supported in index-only scans");
			from_heap = true;
		}
		/* its columns from the index tuple, at their heap attributes */
		if (scan->xs_hitup != NULL)
			heap_deform_tuple(scan->xs_hitup, scan->xs_hitupdesc, ij->ivalues,
							  ij->iisnull);
		else if (scan->xs_itup != NULL)
			index_deform_tuple(scan->xs_itup, scan->xs_itupdesc, ij->ivalues,
							   ij->iisnull);
		else
			elog(ERROR, "no data returned for index-only scan");
		ExecClearTuple(slot);
		for (col = 0; col < ij->index->rd_index->indnatts; col++)
		{
			AttrNumber	attno = ij->index->rd_index->indkey.values[col];

			if (attno > 0)
			{
				slot->tts_values[attno - 1] = ij->ivalues[col];
				slot->tts_isnull[attno - 1] = ij->iisnull[col];
			}
		}
		ExecStoreVirtualTuple(slot);
		if (!from_heap)
			PredicateLockPage(scan->heapRelation, ItemPointerGetBlockNumber(tid),
							  es->css.ss.ps.state->es_snapshot);
		return slot;
	}
	return NULL;
}

/* The next match of the module's index scan, in a slot of the relation's shape */
static inline TupleTableSlot *
next_match(EddyState *es, EddyIndexJoin *ij, EddySource *src)
{
	if (ij->index_only)
		return index_only_next(es, ij, src);
	if (!index_getnext_slot(ij->scan, ForwardScanDirection, src->heapslot))
		return NULL;
	slot_getsomeattrs(src->heapslot, src->max_attno);
	return src->heapslot;
}


/* ----------------------------------------------------------------
 *		The lookup cache
 * ----------------------------------------------------------------
 */

/* Its first lookup: the context, the arena, the STAIR of keys */
static void
memo_start(EddyState *es, EddyIndexJoin *ij)
{
	TupleDesc	heapdesc = RelationGetDescr(es->sources[ij->ends.rel[1]].heap);
	int			c;

	ij->memo_cxt = AllocSetContextCreate(GetMemoryChunkContext(ij),
										 "eddy index join cache",
										 ALLOCSET_DEFAULT_SIZES);
	EddyArenaInit(&ij->memo_arena, ij->memo_cxt);
	/* end 1's STAIR of the join keys, holding probe keys (same types) */
	ij->memo = StairCreateInArena(&ij->ends.keys, 1, &ij->memo_arena);
	ij->memo_limit = get_hash_memory_limit();
	ij->memo_full = false;
	if (ij->memo_slot == NULL)
	{
		ij->memo_slot = MakeSingleTupleTableSlot(heapdesc, &TTSOpsVirtual);
		for (c = 0; c < heapdesc->natts; c++)
		{
			ij->memo_slot->tts_values[c] = (Datum) 0;
			ij->memo_slot->tts_isnull[c] = true;
		}
	}
	ij->chain_generation = UINT64_MAX;	/* the chain takes every selection */
}

/* Drop what it keeps; it starts again at the next lookup if still wanted */
static void
memo_drop(EddyIndexJoin *ij)
{
	if (ij->memo_cxt == NULL)
		return;
	EddyArenaReset(&ij->memo_arena);
	MemoryContextDelete(ij->memo_cxt);
	ij->memo_cxt = NULL;
	ij->memo = NULL;
	ij->memo_building = NULL;
	ij->memo_next = NULL;
	ij->memo_hit = false;
	ij->chain_generation = UINT64_MAX;	/* the routing's chain again */
}

static Size
memo_bytes(EddyIndexJoin *ij)
{
	return ij->memo_arena.allocated + MemoryContextMemAllocated(ij->memo_cxt, true);
}

/*
 * Look a probe's keys up.  True on a hit (memo_next is the first of its
 * rows); else the lookup goes to the index, and a new entry collects its
 * matches unless the cache is full.  Under eddy.index_cache = auto, the
 * cache goes off for good when its first MEMO_JUDGE_AFTER lookups hit
 * less than MEMO_MIN_HITS of the time.
 */
static bool
memo_lookup(EddyState *es, EddyIndexJoin *ij, Datum *keys)
{
	EddyJoinSpec *ends = &ij->ends;
	EddyMemoEntry *e;
	uint32		hash;
	int			k;

	if (ij->memo_cxt == NULL)
		memo_start(es, ij);
	if (!StairKeysHash(&ends->keys, 0, keys, NULL, &hash))
		return false;
	if (ij->memo_auto && ij->memo_lookups == MEMO_JUDGE_AFTER &&
		(double) ij->memo_hits < MEMO_MIN_HITS * (double) ij->memo_lookups)
	{
		/* judged after its first MEMO_JUDGE_AFTER lookups: off for good */
		ij->memo_off_at = ij->memo_lookups;
		ij->memo_peak = Max(ij->memo_peak, memo_bytes(ij));
		memo_drop(ij);
		ij->memo_wanted = false;
		return false;
	}
	ij->memo_lookups++;
	if (ij->memo->nentries > 0 && !StairHashAbsent(ij->memo, hash))
	{
		StairProbe	sp;

		StairProbeBegin(&sp, ij->memo, hash, keys);
		if ((e = StairProbeNext(&sp)) != NULL)
		{
			ij->memo_hits++;
			ij->memo_hit = true;
			ij->memo_next = e->head;
			return true;
		}
	}
	if (ij->memo_full)
		return false;
	e = EddyArenaAlloc(&ij->memo_arena, sizeof(EddyMemoEntry));
	e->head = e->tail = NULL;
	ij->memo_building = e;
	ij->memo_build_hash = hash;
	ij->memo_build_keys = EddyArenaAlloc(&ij->memo_arena, sizeof(Datum) * ends->nkeys);
	for (k = 0; k < ends->nkeys; k++)
		ij->memo_build_keys[k] = EddyArenaDatumCopy(&ij->memo_arena, keys[k],
													ends->keybyval[0][k],
													ends->keylen[0][k]);
	return false;
}

/* Keep a match of the lookup under way (its row, in the cache's arena) */
static EddyMemoRow *
memo_keep(EddyIndexJoin *ij, EddySource *src, EddyRow *row)
{
	EddyMemoEntry *e = ij->memo_building;
	EddyMemoRow *mr = EddyArenaAlloc(&ij->memo_arena, sizeof(EddyMemoRow));

	mr->next = NULL;
	mr->row = EddyRowMake(&ij->memo_arena, src, row->values, row->isnull, false);
	mr->known = 0;
	mr->passed = 0;
	if (e->tail == NULL)
		e->head = mr;
	else
		e->tail->next = mr;
	e->tail = mr;
	return mr;
}

/* The lookup under way found every match: its keys answer from now on */
static void
memo_finish(EddyIndexJoin *ij)
{
	Size		bytes;

	StairInsert(ij->memo, ij->memo_build_hash, ij->memo_build_keys,
				ij->memo_building);
	ij->memo_building = NULL;
	bytes = memo_bytes(ij);
	ij->memo_peak = Max(ij->memo_peak, bytes);
	if (bytes > ij->memo_limit)
	{
		ij->memo_full = true;
		ij->memo_full_at = ij->memo_lookups;
	}
}

/* The next heap tuple the module's index scan finds, joined with t, or NULL */
static EddyTuple *
indexjoin_fetch(EddyState *es, EddyIndexJoin *ij, EddyTuple *t)
{
	EddyJoinSpec *ends = &ij->ends;
	EddySource *src = &es->sources[ends->rel[1]];
	TupleTableSlot *heapslot;
	bool		chain = ij->chain_preds != NULL && !es->replaying;

	if (ij->memo_hit)
	{
		EddyMemoRow *mr;

		/* a hit: the rows the cache kept for the keys */
		while ((mr = ij->memo_next) != NULL)
		{
			EddyTuple  *r;
			uint64		chain_done = 0;

			CHECK_FOR_INTERRUPTS();
			ij->memo_next = mr->next;
			if (chain && !fetch_chain(es, ij, t, NULL, mr, &chain_done))
				continue;
			r = joined(es, &ij->module, t, ends->rel[1], EddyRowBorrow(es, src, mr->row));
			r->done |= chain_done;
			return r;
		}
		return NULL;
	}
	while ((heapslot = next_match(es, ij, src)) != NULL)
	{
		EddyTuple  *r;
		EddyRow    *row;
		EddyMemoRow *mr = NULL;
		uint64		chain_done = 0;

		CHECK_FOR_INTERRUPTS();
		if (ij->scan->xs_recheck && !keys_match(ij, src, heapslot))
			continue;
		/* the row is made for a match kept or passed on, not for a drop */
		row = NULL;
		if (ij->memo_building != NULL)
		{
			row = EddyRowFromHeapSlot(es, src, heapslot);
			mr = memo_keep(ij, src, row);
		}
		if (chain && !fetch_chain(es, ij, t, heapslot, mr, &chain_done))
			continue;
		if (row == NULL)
			row = EddyRowFromHeapSlot(es, src, heapslot);
		r = joined(es, &ij->module, t, ends->rel[1], row);
		/* semi/anti: the module is done once it decides (semijoin_decide) */
		if (ij->jointype != JOIN_INNER)
			r->done = t->done;
		r->done |= chain_done;
		return r;
	}
	if (ij->memo_building != NULL)
		memo_finish(ij);
	return NULL;
}

static void
indexjoin_end(EddyState *es, EddyModule *m)
{
	EddyIndexJoin *ij = (EddyIndexJoin *) m;

	if (BufferIsValid(ij->vmbuffer))
	{
		ReleaseBuffer(ij->vmbuffer);
		ij->vmbuffer = InvalidBuffer;
	}
	index_endscan(ij->scan);
	index_close(ij->index, AccessShareLock);
	if (ij->ioslot != NULL)
		ExecDropSingleTupleTableSlot(ij->ioslot);
	memo_drop(ij);
	if (ij->memo_slot != NULL)
		ExecDropSingleTupleTableSlot(ij->memo_slot);
}

/*
 * A rescan drops the lookup cache: a selection of its fetch chain may read
 * a parameter that has changed.  It starts again at the next lookup.
 */
static void
indexjoin_rescan(EddyState *es, EddyModule *m)
{
	EddyIndexJoin *ij = (EddyIndexJoin *) m;

	if (ij->memo_cxt != NULL)
		ij->memo_peak = Max(ij->memo_peak, memo_bytes(ij));
	memo_drop(ij);
	ij->memo_probes = 0;		/* the planner's rows are a scan's */
}

/*
 * Hot keys ("Hot keys" above): the most common values of end 1's key
 * column whose frequency makes at least HOT_MIN_MATCHES matches and
 * HOT_FACTOR times the average key's share, from the column's statistics.
 */
static void
hot_keys_init(EddyIndexJoin *ij, EddySource *inner, int col)
{
	EddyJoinSpec *ends = &ij->ends;
	AttrNumber	attno = ij->index->rd_index->indkey.values[col - 1];
	double		reltuples = inner->heap->rd_rel->reltuples;
	HeapTuple	tup;
	AttStatsSlot sslot;
	double		distinct;
	double		share;
	int			i;

	if (attno <= 0 || reltuples <= 0)
		return;					/* an expression, or never analyzed */
	if (inner->heap->rd_rel->relrowsecurity)
		return;					/* the statistics may describe hidden rows */
	tup = SearchSysCache3(STATRELATTINH,
						  ObjectIdGetDatum(RelationGetRelid(inner->heap)),
						  Int16GetDatum(attno), BoolGetDatum(false));
	if (!HeapTupleIsValid(tup))
		return;
	distinct = ((Form_pg_statistic) GETSTRUCT(tup))->stadistinct;
	if (distinct < 0)
		distinct = -distinct * reltuples;
	share = Max(HOT_MIN_MATCHES / reltuples, distinct >= 1.0 ? HOT_FACTOR / distinct : 0.0);
	if (get_attstatsslot(&sslot, tup, STATISTIC_KIND_MCV, InvalidOid,
						 ATTSTATSSLOT_VALUES | ATTSTATSSLOT_NUMBERS))
	{
		for (i = 0; i < sslot.nvalues && i < sslot.nnumbers; i++)
		{
			Datum		key;
			uint32		hash;

			if (sslot.numbers[i] < share)
				continue;
			key = datumCopy(sslot.values[i], ends->keybyval[0][0], ends->keylen[0][0]);
			if (!StairKeysHash(&ends->keys, 0, &key, NULL, &hash))
				continue;
			if (ij->hot == NULL)
				ij->hot = StairCreate(&ends->keys, 1, CurrentMemoryContext);
			StairInsert(ij->hot, hash, &key, ij);	/* any payload but NULL */
			ij->nhot++;
		}
		free_attstatsslot(&sslot);
	}
	ReleaseSysCache(tup);
	ij->hot_matches = share * reltuples;
	ij->module.hot_keys = ij->nhot > 0;
}

/* Would t's probe be of a hot key (module.h, hot)? */
static bool
indexjoin_hot(EddyState *es, EddyModule *m, EddyTuple *t)
{
	EddyIndexJoin *ij = (EddyIndexJoin *) m;
	Datum		key;
	uint32		hash;

	Assert(ij->hot != NULL && ij->ends.nkeys == 1);
	return EddyJoinKeys(es, &ij->ends, 0, t, &key, &es->transient) &&
		StairKeysHash(&ij->ends.keys, 0, &key, NULL, &hash) &&
		StairContains(ij->hot, hash, &key);
}

static void
indexjoin_explain(EddyState *es, EddyModule *m, List *context, bool useprefix,
				  ExplainState *xs)
{
	EddyIndexJoin *ij = (EddyIndexJoin *) m;
	char	   *expr = deparse_expression((Node *) m->expr, context, useprefix, false);
	char	   *index_name = get_rel_name(ij->indexoid);
	char	   *index_rel = get_rel_name(es->sources[ij->ends.rel[1]].heapoid);

	const char *label = ij->jointype == JOIN_SEMI ? "Index Semi Join" :
		ij->jointype == JOIN_ANTI ? "Index Anti Join" : "Index Join";
	/* text names an index-only join as PostgreSQL its Index Only Scan */
	const char *text_label = !ij->index_only ? label :
		ij->jointype == JOIN_SEMI ? "Index Only Semi Join" :
		ij->jointype == JOIN_ANTI ? "Index Only Anti Join" : "Index Only Join";
	char	   *inner = ij->inner_expr == NULL ? NULL :
		deparse_expression((Node *) ij->inner_expr, context, useprefix, false);

	if (xs->format == EXPLAIN_FORMAT_TEXT)
	{
		if (inner != NULL)
			EddyExplainLine(xs, "%s %d: %s using %s on %s, where %s", text_label,
							m->index + 1, expr, index_name, index_rel, inner);
		else
			EddyExplainLine(xs, "%s %d: %s using %s on %s", text_label, m->index + 1,
							expr, index_name, index_rel);
	}
	else
	{
		ExplainPropertyText("Operator Type", label, xs);
		ExplainPropertyInteger("Operator Number", NULL, m->index + 1, xs);
		ExplainPropertyText("Join Condition", expr, xs);
		ExplainPropertyText("Index Name", index_name, xs);
		ExplainPropertyText("Relation Name", index_rel, xs);
		if (inner != NULL)
			ExplainPropertyText("Join Filter", inner, xs);
		ExplainPropertyBool("Index Only", ij->index_only, xs);
	}
	EddyExplainCounters(es, m, -1, xs);
	if (ij->nhot > 0)
	{
		/* hot keys: how many, and the tuples sent to a filter first */
		if (xs->format == EXPLAIN_FORMAT_TEXT)
		{
			if (xs->analyze)
				EddyExplainLine(xs, "  Hot Keys: %d (%.0f matches or more each), " UINT64_FORMAT
								" probes deferred", ij->nhot, ij->hot_matches,
								m->stats[0].hot_deferred);
			else
				EddyExplainLine(xs, "  Hot Keys: %d (%.0f matches or more each)", ij->nhot,
								ij->hot_matches);
		}
		else
		{
			ExplainPropertyInteger("Hot Keys", NULL, ij->nhot, xs);
			ExplainPropertyFloat("Hot Key Matches", NULL, ij->hot_matches, 0, xs);
			if (xs->analyze)
				ExplainPropertyUInteger("Hot Probes Deferred", NULL,
										m->stats[0].hot_deferred, xs);
		}
	}
	if (!xs->analyze)
		return;
	/* under the module's counters in text, as they are */
	if (ij->index_only || (ij->jointype != JOIN_INNER && !ij->has_inner_qual))
	{
		if (xs->format == EXPLAIN_FORMAT_TEXT)
			EddyExplainLine(xs, "  Heap Fetches: " UINT64_FORMAT, ij->heap_fetches);
		else
			ExplainPropertyUInteger("Heap Fetches", NULL, ij->heap_fetches, xs);
	}
	if (ij->chain_dropped > 0)
	{
		if (xs->format == EXPLAIN_FORMAT_TEXT)
			EddyExplainLine(xs, "  Dropped at Fetch: " UINT64_FORMAT, ij->chain_dropped);
		else
			ExplainPropertyUInteger("Dropped at Fetch", NULL, ij->chain_dropped, xs);
	}
	if (ij->memo_lookups > 0)
	{
		Size		peak = ij->memo_peak;

		if (ij->memo_cxt != NULL)
			peak = Max(peak, memo_bytes(ij));
		if (xs->format == EXPLAIN_FORMAT_TEXT)
		{
			StringInfoData buf;

			initStringInfo(&buf);
			appendStringInfo(&buf, "  Index Cache: " UINT64_FORMAT " hits, " UINT64_FORMAT
							 " misses, " UINT64_FORMAT " selection results reused, %zu kB",
							 ij->memo_hits, ij->memo_lookups - ij->memo_hits,
							 ij->memo_answers, (peak + 1023) / 1024);
			if (ij->memo_late_at > 0)
				appendStringInfo(&buf, "; on after " UINT64_FORMAT " probes",
								 ij->memo_late_at);
			if (ij->memo_off_at > 0)
				appendStringInfo(&buf, "; off after " UINT64_FORMAT " lookups",
								 ij->memo_off_at);
			if (ij->memo_full_at > 0)
				appendStringInfo(&buf, "; full after " UINT64_FORMAT " lookups",
								 ij->memo_full_at);
			EddyExplainLine(xs, "%s", buf.data);
		}
		else
		{
			ExplainPropertyUInteger("Index Cache Hits", NULL, ij->memo_hits, xs);
			ExplainPropertyUInteger("Index Cache Misses", NULL,
									ij->memo_lookups - ij->memo_hits, xs);
			ExplainPropertyUInteger("Index Cache Results Reused", NULL, ij->memo_answers, xs);
			ExplainPropertyUInteger("Index Cache Memory", "kB", (peak + 1023) / 1024, xs);
			ExplainPropertyUInteger("Index Cache On After Probes", NULL, ij->memo_late_at, xs);
			ExplainPropertyUInteger("Index Cache Off After Lookups", NULL, ij->memo_off_at, xs);
			ExplainPropertyUInteger("Index Cache Full After Lookups", NULL, ij->memo_full_at, xs);
		}
	}
}

/*
 * Index probes for other modules (mod_indexjoin.h): a hybrid join
 * (mod_hybrid.c) begins an index join module of its own, outside the
 * eddy's modules, and probes through it.  Begin a probe of the index with
 * the keys of end 0 (one per key, none NULL).
 */
void
EddyIndexJoinProbeBegin(EddyState *es, EddyModule *m, Datum *keys)
{
	EddyIndexJoin *ij = (EddyIndexJoin *) m;
	int			k;

	Assert(m->methods == &indexjoin_methods);
	for (k = 0; k < ij->ends.nkeys; k++)
		ij->skeys[ij->skey_of_key[k]].sk_argument = keys[k];
	EddyIndexLookupDelay();
	index_rescan(ij->scan, ij->skeys, ij->ends.nkeys, NULL, 0);
}

/*
 * The next visible heap tuple of the probe, in end 1's source's heap slot
 * deformed up to its max_attno (a lossy index's keys rechecked), or NULL.
 * The slot holds it until the next call.
 */
TupleTableSlot *
EddyIndexJoinProbeNext(EddyState *es, EddyModule *m)
{
	EddyIndexJoin *ij = (EddyIndexJoin *) m;
	EddySource *src = &es->sources[ij->ends.rel[1]];
	TupleTableSlot *heapslot = src->heapslot;

	while (index_getnext_slot(ij->scan, ForwardScanDirection, heapslot))
	{
		CHECK_FOR_INTERRUPTS();
		slot_getsomeattrs(heapslot, src->max_attno);
		if (ij->scan->xs_recheck && !keys_match(ij, src, heapslot))
			continue;
		return heapslot;
	}
	return NULL;
}
