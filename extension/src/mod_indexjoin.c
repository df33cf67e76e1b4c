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
 *-------------------------------------------------------------------------
 */
#include "exec.h"

#include "access/genam.h"
#include "access/relscan.h"
#include "access/tableam.h"
#include "miscadmin.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"

typedef struct EddyIndexJoin
{
	EddyModule	module;			/* must be first */
	EddyJoinSpec ends;
	Oid			indexoid;
	Relation	index;
	IndexScanDesc scan;
	ScanKey		skeys;			/* in index column order */
	int		   *skey_of_key;	/* key k's scan key */
} EddyIndexJoin;

static EddyTuple *indexjoin_route(EddyState *es, EddyModule *m, int dir,
								  EddyTuple *t);
static EddyTuple *indexjoin_next(EddyState *es, EddyFrame *f);
static void indexjoin_end(EddyState *es, EddyModule *m);
static void indexjoin_explain(EddyState *es, EddyModule *m, List *context,
							  bool useprefix, ExplainState *xs);

static const EddyModuleMethods indexjoin_methods = {
	.label = "Index Join",
	.route = indexjoin_route,
	.next = indexjoin_next,
	.rescan = NULL,				/* each probe rescans the index */
	.end = indexjoin_end,
	.explain = indexjoin_explain,
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
	Assert(inner->method == EDDY_SOURCE_INDEX);

	ij->indexoid = (Oid) intVal(list_nth(desc, EddyJoinIndexOid));
	ij->index = index_open(ij->indexoid, AccessShareLock);
	ij->skeys = palloc0(sizeof(ScanKeyData) * Max(ends->nkeys, 1));
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
		ScanKeyEntryInitialize(&ij->skeys[k], 0, col, strategy, righttype,
							   ends->keys.collations[k], get_opcode(opno), (Datum) 0);
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
	return m;
}

/* Start an index scan with t's keys; its matches come from the frame */
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
		return NULL;			/* a NULL key matches nothing */
	for (k = 0; k < ends->nkeys; k++)
		ij->skeys[ij->skey_of_key[k]].sk_argument = keys[k];
	index_rescan(ij->scan, ij->skeys, ends->nkeys, NULL, 0);
	EddyPushFrame(es, m, 0, t);
	return NULL;
}

/* The next heap tuple the frame's index scan finds, joined, or NULL */
static EddyTuple *
indexjoin_next(EddyState *es, EddyFrame *f)
{
	EddyIndexJoin *ij = (EddyIndexJoin *) f->module;
	EddyJoinSpec *ends = &ij->ends;
	EddySource *src = &es->sources[ends->rel[1]];
	TupleTableSlot *heapslot = src->heapslot;

	while (index_getnext_slot(ij->scan, ForwardScanDirection, heapslot))
	{
		Datum	   *values = es->fetch_values;
		bool	   *isnull = es->fetch_isnull;
		EddyTuple  *r;
		int			c;

		CHECK_FOR_INTERRUPTS();
		slot_getsomeattrs(heapslot, src->max_attno);
		if (ij->scan->xs_recheck)
		{
			bool		match = true;
			int			k;

			for (k = 0; k < ends->nkeys && match; k++)
			{
				int			col = ends->keycol[1][k];

				if (col < 0 || heapslot->tts_isnull[src->attnos[col] - 1])
					match = false;
				else
					match = DatumGetBool(FunctionCall2Coll(&ends->keys.eq[k],
														   ends->keys.collations[k],
														   ij->skeys[ij->skey_of_key[k]].sk_argument,
														   heapslot->tts_values[src->attnos[col] - 1]));
			}
			if (!match)
				continue;
		}
		for (c = 0; c < src->ncols; c++)
		{
			values[c] = heapslot->tts_values[src->attnos[c] - 1];
			isnull[c] = heapslot->tts_isnull[src->attnos[c] - 1];
		}
		r = EddyTupleAlloc(es, &es->transient);
		r->spans = f->probe->spans | (1u << ends->rel[1]);
		r->done = f->probe->done | (UINT64CONST(1) << f->module->index);
		memcpy(r->rows, f->probe->rows, sizeof(EddyRow *) * es->nsources);
		r->rows[ends->rel[1]] = EddyRowMake(&es->transient, src, values, isnull, true);
		f->module->stats[0].out++;
		return r;
	}
	return NULL;
}

static void
indexjoin_end(EddyState *es, EddyModule *m)
{
	EddyIndexJoin *ij = (EddyIndexJoin *) m;

	index_endscan(ij->scan);
	index_close(ij->index, AccessShareLock);
}

static void
indexjoin_explain(EddyState *es, EddyModule *m, List *context, bool useprefix,
				  ExplainState *xs)
{
	EddyIndexJoin *ij = (EddyIndexJoin *) m;
	char	   *expr = deparse_expression((Node *) m->expr, context, useprefix, false);
	char	   *index_name = get_rel_name(ij->indexoid);
	char	   *index_rel = get_rel_name(es->sources[ij->ends.rel[1]].heapoid);

	if (xs->format == EXPLAIN_FORMAT_TEXT)
		EddyExplainLine(xs, "Index Join %d: %s using %s on %s", m->index + 1,
						expr, index_name, index_rel);
	else
	{
		ExplainPropertyText("Operator Type", "Index Join", xs);
		ExplainPropertyInteger("Operator Number", NULL, m->index + 1, xs);
		ExplainPropertyText("Join Condition", expr, xs);
		ExplainPropertyText("Index Name", index_name, xs);
		ExplainPropertyText("Relation Name", index_rel, xs);
	}
	EddyExplainCounters(es, m, -1, xs);
}
