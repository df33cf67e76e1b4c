/*-------------------------------------------------------------------------
 *
 * plan.h
 *	  Eddy paths and plans: what planner.c calls once a block qualifies.
 *
 * plan.c turns one relation's scan path into a selection eddy; plan_join.c
 * turns a join block into a join eddy (with the files plan_join.h
 * declares, which planner.c does not see).  Both make plans whose
 * custom_private follows private.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EDDY_PLAN_H
#define EDDY_PLAN_H

#include "nodes/pathnodes.h"

#include "private.h"

/* plan.c */
extern Path *EddyCreatePath(PlannerInfo *root, RelOptInfo *rel, Path *child,
							PathTarget *source_target);
extern List *EddyPrivateList(Node **items, int nitems);
extern List *EddyPrivateIntegers(List *ints);
extern Node *EddyPrivateOid(Oid oid);
extern Node *EddyPrivateFloat(double v);
extern List *EddySourcePrivate(EddySourceMethod method, int first_col,
							   int ncols, int plan, Oid heapoid, List *attnos,
							   double rows, const char *alias);
extern List *EddySelectionPrivate(uint32 sources, List *prereqs, int expr_index,
								  Selectivity est_sel, Cost est_cost);
extern Plan *EddyMakeCustomScan(CustomPath *best_path, List *tlist,
								List *custom_plans, List *exprs,
								List *scan_tlist, List *sources,
								List *modules, List *reading_order,
								double est_state, int exchange,
								int one_time_qual);

/* plan_join.c */
extern Path *EddyCreateJoinPath(PlannerInfo *root, RelOptInfo *joinrel,
								 List *initial_rels, bool sub_block,
								 Path **partial);

/* semijoin.c */
extern Index EddySemiJoinRel(PlannerInfo *root, SpecialJoinInfo *sjinfo);

#endif							/* EDDY_PLAN_H */
