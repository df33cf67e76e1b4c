/*-------------------------------------------------------------------------
 *
 * semijoin.c
 *	  Semi and anti joins of a join block: index semi and anti join
 *	  modules.
 *
 * A semi or anti join (EXISTS, IN, NOT EXISTS pulled up) whose inner side
 * is one relation s, whose clauses read s and one other relation a, and
 * which PostgreSQL makes as an index nested loop into s (join_method =
 * auto; any usable index under join_method = index) becomes an index semi
 * or anti join module (mod_indexjoin.c): a tuple spanning a probes s's
 * index and passes on once if a match passes the join's other clauses
 * (semi), or if none does (anti).  Every clause that reads s, s's own
 * restrictions and the anti join's clauses over a alone (required_relids
 * holds s) are the module's inner qual, evaluated on each match, never
 * selections.  The module filters a's rows by a condition on a's row
 * alone, so it commutes with the block's inner joins and the other semi
 * and anti joins (whose clauses read no inner relation of another: their
 * minimal sides would hold it, EddySemiJoinRel), and the eddy may route it
 * anywhere after a; the tuple it passes on spans s with a match's row
 * (semi) or a row of NULLs (anti), which nothing above reads.  A clause
 * pushed down above an anti join that reads its inner relation (a WHERE
 * "s.x IS NULL" that made a left join an anti join) is not supported.
 *
 * planner.c asks EddySemiJoinRel which semi and anti joins a block may
 * take; EddyCreateJoinPath (plan_join.c) takes their clauses apart
 * (EddySemiJoinClauses) and makes the edge into each inner relation an
 * index join (EddySemiJoinEdges).
 *
 *-------------------------------------------------------------------------
 */
#include "eddy.h"

#include "access/stratnum.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planmain.h"
#include "optimizer/plancat.h"
#include "optimizer/restrictinfo.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"

#include "clauses.h"
#include "plan.h"
#include "plan_join.h"
#include "private.h"

/*
 * The relid of the inner relation of a semi or anti join the eddy can make
 * an index semi or anti join into, or 0: the join's inner side, minimal
 * and syntactic, is that one relation, and no other special join has it
 * on its inner side or needs it on its outer side.
 */
Index
EddySemiJoinRel(PlannerInfo *root, SpecialJoinInfo *sjinfo)
{
	int			relid;
	ListCell   *lc;

	if (sjinfo->jointype != JOIN_SEMI && sjinfo->jointype != JOIN_ANTI)
		return 0;
	if (!bms_get_singleton_member(sjinfo->min_righthand, &relid) ||
		!bms_equal(sjinfo->min_righthand, sjinfo->syn_righthand))
		return 0;
	foreach(lc, root->join_info_list)
	{
		SpecialJoinInfo *other = lfirst(lc);

		if (other == sjinfo)
			continue;
		if (bms_is_member(relid, other->min_lefthand) ||
			bms_is_member(relid, other->min_righthand) ||
			bms_is_member(relid, other->syn_righthand))
			return 0;
	}
	return (Index) relid;
}

/*
 * The relation other than s that an equality clause between s and one
 * other relation reads, or -1 (not such a clause)
 */
static int
semi_key_other(EddyJoinPath *jp, int s, RestrictInfo *rinfo)
{
	int			l,
				r;

	if (!EddyIsKeyClause(jp, rinfo, &l, &r) || (l != s && r != s))
		return -1;
	return l == s ? r : l;
}

/*
 * Is rinfo, an equality of an equivalence class between the semi or anti
 * join's inner relation s and a relation b, implied by the block's other
 * clauses, so that the join need not test it?  PostgreSQL's plan may test
 * two equalities of one class into s, each against another member (TPC-H
 * Q21 in parallel: l2.l_orderkey = orders.o_orderkey as the semi join's
 * filter, l2.l_orderkey = l1.l_orderkey as its index condition).  It is
 * implied where s has another equality of the same class with the relation
 * a that its clauses read otherwise (l1, in l2.l_suppkey <> l1.l_suppkey):
 * every member of a class is equal in every row of the inner joins that
 * join them (PostgreSQL's plan, whose clauses the eddy takes, joins a and b
 * on the class), so s's key equals b's where it equals a's.  Only with
 * one such relation a, and not b.
 */
static bool
redundant_semi_key(EddyJoinPath *jp, int s, RestrictInfo *rinfo, List *clauses)
{
	int			b = semi_key_other(jp, s, rinfo);
	int			a = -1;
	bool		same_class_to_a = false;
	ListCell   *lc;

	if (b < 0 || rinfo->parent_ec == NULL)
		return false;
	/* the one relation besides s read by s's clauses that are not keys of a class */
	foreach(lc, clauses)
	{
		RestrictInfo *c = lfirst_node(RestrictInfo, lc);
		uint32		other;

		if (!bms_is_member(jp->rels[s]->relid, c->required_relids) &&
			!bms_is_member(jp->rels[s]->relid, c->clause_relids))
			continue;
		if (c->parent_ec != NULL && semi_key_other(jp, s, c) >= 0)
			continue;
		other = (EddyRelMask(jp, c->required_relids) |
				 EddyRelMask(jp, c->clause_relids)) & ~(1u << s);
		if (other == 0)
			continue;
		if ((other & (other - 1)) != 0 || (a >= 0 && other != (1u << a)))
			return false;
		a = ffs(other) - 1;
	}
	if (a < 0 || a == b)
		return false;
	foreach(lc, clauses)
	{
		RestrictInfo *c = lfirst_node(RestrictInfo, lc);

		if (c != rinfo && c->parent_ec == rinfo->parent_ec &&
			semi_key_other(jp, s, c) == a)
			same_class_to_a = true;
	}
	return same_class_to_a;
}

/*
 * Find the block's semi and anti joins (jp->jointype, jp->sjinfo) and take
 * the clauses that read their inner relations out of *clauses: the key
 * equalities between a and s stay (they make the edge the module's index
 * uses), the others go to jp->inner_quals[s].  False, with the reason at
 * DEBUG1, when a semi or anti join does not have the shape the module
 * needs.
 */
bool
EddySemiJoinClauses(PlannerInfo *root, EddyJoinPath *jp, RelOptInfo *joinrel,
				  List **clauses)
{
	ListCell   *lc;
	int			s;

	foreach(lc, root->join_info_list)
	{
		SpecialJoinInfo *sjinfo = lfirst(lc);
		Index		relid = EddySemiJoinRel(root, sjinfo);

		if (relid == 0 || (s = EddyRelIndex(jp, relid)) < 0)
			continue;
		if (!bms_is_subset(sjinfo->min_lefthand, joinrel->relids))
		{
			elog(DEBUG1, "eddy: join block not used: a semi or anti join reaches outside the block");
			return false;
		}
		jp->jointype[s] = sjinfo->jointype;
		jp->sjinfo[s] = sjinfo;
	}
	for (s = 0; s < jp->nrels; s++)
	{
		Index		relid = jp->rels[s]->relid;
		const char *what = jp->jointype[s] == JOIN_ANTI ? "anti" : "semi";
		List	   *keep = NIL;
		int			a = -1;

		if (jp->jointype[s] == JOIN_INNER)
			continue;
		foreach(lc, *clauses)
		{
			RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
			uint32		other;
			int			l,
						r;

			if (!bms_is_member(relid, rinfo->required_relids) &&
				!bms_is_member(relid, rinfo->clause_relids))
			{
				keep = lappend(keep, rinfo);
				continue;
			}
			if (redundant_semi_key(jp, s, rinfo, *clauses))
				continue;
			if (jp->jointype[s] == JOIN_ANTI && rinfo->is_pushed_down)
			{
				elog(DEBUG1, "eddy: join block not used: a condition above an anti join reads its inner relation");
				return false;
			}
			other = (EddyRelMask(jp, rinfo->required_relids) |
					 EddyRelMask(jp, rinfo->clause_relids)) & ~(1u << s);
			if (other != 0 && ((other & (other - 1)) != 0 ||
							   (a >= 0 && other != (1u << a))))
			{
				elog(DEBUG1, "eddy: join block not used: the clauses of a %s join read more than one relation besides its inner one", what);
				return false;
			}
			if (other != 0)
				a = ffs(other) - 1;
			if (other != 0 && EddyIsKeyClause(jp, rinfo, &l, &r))
				keep = lappend(keep, rinfo);	/* a key of the edge (a, s) */
			else
				jp->inner_quals[s] = lappend(jp->inner_quals[s], rinfo);
		}
		if (a < 0)
		{
			elog(DEBUG1, "eddy: join block not used: a %s join has no join clause", what);
			return false;
		}
		jp->semi_from[s] = a;
		*clauses = keep;
	}
	return true;
}

/*
 * The edge into each semi or anti join's inner relation must be an index
 * join into it: the index PostgreSQL's nested loop probes (join_method =
 * auto, EddyMarkNestLoopIndexJoins), or, under join_method = index, the
 * first usable one.  Such an edge is chosen first for the tree (it is the
 * relation's only edge).  False, with the reason at DEBUG1, where there
 * is none: PostgreSQL's hash or merge semi join stays.
 */
bool
EddySemiJoinEdges(PlannerInfo *root, EddyJoinPath *jp, List *candidates)
{
	int			s;

	for (s = 0; s < jp->nrels; s++)
	{
		JoinEdge   *e;

		if (jp->jointype[s] == JOIN_INNER)
			continue;
		e = EddyFindEdge(candidates, jp->semi_from[s], s);
		if (e != NULL && e->index_into != s)
			e->index_into = -1;
		if (e != NULL && e->index_into < 0 && eddy_join_method == EDDY_JOIN_INDEX &&
			EddyRelIndexJoinable(root, jp, s))
		{
			ListCell   *lc;

			foreach(lc, jp->rels[s]->indexlist)
				if (EddyEdgeIndexUsable(jp, e, s, lfirst(lc)))
					break;
		}
		if (e == NULL || e->index_into != s)
		{
			elog(DEBUG1, "eddy: join block not used: PostgreSQL makes its %s join into relation \"%s\" by hashing or merging, and the eddy has only index %s joins",
				 jp->jointype[s] == JOIN_ANTI ? "anti" : "semi",
				 get_rel_name(planner_rt_fetch(jp->rels[s]->relid, root)->relid),
				 jp->jointype[s] == JOIN_ANTI ? "anti" : "semi");
			return false;
		}
		e->from_nestloop = true;
	}
	return true;
}
