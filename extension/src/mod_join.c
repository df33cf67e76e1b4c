/*-------------------------------------------------------------------------
 *
 * mod_join.c
 *	  What the two join modules share: their ends, their keys, and their
 *	  routing targets.
 *
 * A join module is an edge of the block's spanning tree between the source
 * at end 0 and the one at end 1 (join_graph.c).  A tuple may go to it only
 * if it spans the edge's relation on one side and nothing of the other
 * side, and never visits a module twice: that makes every result appear
 * exactly once.  A hash join takes tuples from both sides (two routing
 * targets), an index join from side 0 only, probing end 1's index.
 *
 * Keys: a key that is a plain column of its end's row is read from the
 * row; any other key expression is evaluated over the wide slot.
 *
 *-------------------------------------------------------------------------
 */
#include "module.h"

#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"

static void
init_key_side(EddyState *es, EddyJoinSpec *ends, int side, List *exprs_idx)
{
	CustomScan *cscan = (CustomScan *) es->css.ss.ps.plan;
	EddySource *src = &es->sources[ends->rel[side]];
	int			n = Max(ends->nkeys, 1);
	int			k = 0;
	ListCell   *lc;

	ends->keycol[side] = palloc(sizeof(int) * n);
	ends->keyexpr[side] = palloc0(sizeof(ExprState *) * n);
	ends->keylen[side] = palloc(sizeof(int16) * n);
	ends->keybyval[side] = palloc(sizeof(bool) * n);
	ends->plainkeys[side] = true;
	ends->byvalkeys[side] = true;
	ends->keyexprs[side] = NIL;
	foreach(lc, exprs_idx)
	{
		Expr	   *e = list_nth(cscan->custom_exprs, intVal(lfirst(lc)));
		Var		   *var = (Var *) e;

		ends->keyexprs[side] = lappend(ends->keyexprs[side], e);
		get_typlenbyval(exprType((Node *) e), &ends->keylen[side][k],
						&ends->keybyval[side][k]);
		if (IsA(var, Var) && var->varno == INDEX_VAR &&
			var->varattno - 1 >= src->first_col &&
			var->varattno - 1 < src->first_col + src->ncols)
			ends->keycol[side][k] = var->varattno - 1 - src->first_col;
		else
		{
			ends->keycol[side][k] = -1;
			ends->keyexpr[side][k] = ExecInitExpr(e, &es->css.ss.ps);
			ends->plainkeys[side] = false;
		}
		if (!ends->keybyval[side][k])
			ends->byvalkeys[side] = false;
		k++;
	}
}

/* Read a join module's description (private.h) */
void
EddyJoinSpecInit(EddyState *es, EddyJoinSpec *ends, List *desc)
{
	List	   *rels = list_nth(desc, EddyJoinEnds);
	List	   *sides = list_nth(desc, EddyJoinSides);
	List	   *unique = list_nth(desc, EddyJoinUnique);
	List	   *rows = list_nth(desc, EddyJoinEstRows);
	List	   *presize = list_nth(desc, EddyJoinPresizeRows);
	List	   *opnos = NIL;
	List	   *colls = NIL;
	ListCell   *lc;
	int			s;

	Assert(list_length(desc) == EddyJoinNumItems);
	foreach(lc, (List *) list_nth(desc, EddyJoinOperators))
		opnos = lappend_oid(opnos, (Oid) intVal(lfirst(lc)));
	foreach(lc, (List *) list_nth(desc, EddyJoinCollations))
		colls = lappend_oid(colls, (Oid) intVal(lfirst(lc)));
	ends->nkeys = list_length(opnos);
	StairJoinKeysInit(&ends->keys, opnos, colls);
	for (s = 0; s < 2; s++)
	{
		ends->rel[s] = intVal(list_nth(rels, s));
		ends->side[s] = (uint32) intVal(list_nth(sides, s));
		ends->unique[s] = intVal(list_nth(unique, s)) != 0;
		ends->est_rows[s] = floatVal(list_nth(rows, s));
		ends->presize_rows[s] = floatVal(list_nth(presize, s));
	}
	ends->est_sel = floatVal(list_nth(desc, EddyJoinEstSelectivity));
	init_key_side(es, ends, 0, list_nth(desc, EddyJoinKeys0));
	init_key_side(es, ends, 1, list_nth(desc, EddyJoinKeys1));
}

/*
 * The module's routing targets: direction d takes tuples that span end d's
 * relation and nothing outside side d.  The priors: the planner's fan-out
 * (selectivity times the other end's rows) and the cost of hashing the keys
 * and probing.  For the cumulative policy: the sources beyond each
 * direction and the planner's selectivity per pair.
 */
void
EddyJoinTargets(EddyModule *m, EddyJoinSpec *ends, int ndirs)
{
	int			d;

	m->ndirs = ndirs;
	m->ends = (1u << ends->rel[0]) | (1u << ends->rel[1]);
	for (d = 0; d < ndirs; d++)
	{
		m->target[d].need = 1u << ends->rel[d];
		m->target[d].allow = ends->side[d];
		m->target[d].prereq = 0;
		m->target[d].far = ends->side[1 - d];
		m->target[d].far_rel = ends->rel[1 - d];
		m->stats[d].prior_ratio = ends->est_sel * Max(ends->est_rows[1 - d], 1.0);
		m->stats[d].prior_sel = ends->est_sel;
		m->stats[d].prior_pairs = Max(ends->est_rows[1 - d], 1.0);
		m->stats[d].prior_cost_ns = EDDY_NS_PER_COST_UNIT *
			(cpu_operator_cost * Max(ends->nkeys, 1) + cpu_tuple_cost);
	}
}

/*
 * Key values of tuple t on side `side`, some of them computed over the
 * wide slot; false if a key is NULL.  Computed keys of by-reference types
 * are copied into the arena.
 */
bool
EddyJoinKeysComputed(EddyState *es, EddyJoinSpec *ends, int side, EddyTuple *t,
					 Datum *values, EddyArena *arena)
{
	EddyRow    *row = t->rows[ends->rel[side]];
	ExprContext *econtext = es->css.ss.ps.ps_ExprContext;
	bool		filled = false;
	int			k;

	for (k = 0; k < ends->nkeys; k++)
	{
		int			col = ends->keycol[side][k];

		if (col >= 0)
		{
			if (row->isnull[col])
				return false;
			values[k] = row->values[col];
		}
		else
		{
			bool		isnull;
			Datum		d;

			if (!filled)
			{
				EddyTupleFillSlot(es, t);
				econtext->ecxt_scantuple = es->wide;
				ResetExprContext(econtext);
				filled = true;
			}
			d = ExecEvalExprSwitchContext(ends->keyexpr[side][k], econtext, &isnull);
			if (isnull)
				return false;
			/* by-reference results must outlive the per-tuple context */
			values[k] = EddyArenaDatumCopy(arena, d, ends->keybyval[side][k],
										   ends->keylen[side][k]);
		}
	}
	return true;
}

/* Deparsed keys of one side, e.g. "b.aid" or "(a.x, a.y)" */
char *
EddyJoinKeysString(List *keyexprs, List *context, bool useprefix)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	if (list_length(keyexprs) != 1)
		appendStringInfoChar(&buf, '(');
	foreach(lc, keyexprs)
	{
		if (buf.len > 1)
			appendStringInfoString(&buf, ", ");
		appendStringInfoString(&buf, deparse_expression(lfirst(lc), context,
														useprefix, false));
	}
	if (list_length(keyexprs) != 1)
		appendStringInfoChar(&buf, ')');
	return buf.data;
}
