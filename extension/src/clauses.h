/*-------------------------------------------------------------------------
 *
 * clauses.h
 *	  Clause helpers shared by the planner-side files (clauses.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef EDDY_CLAUSES_H
#define EDDY_CLAUSES_H

#include "nodes/pathnodes.h"
#include "nodes/plannodes.h"

extern int	EddyUserSecurityLevel(List *clauses);
extern List *EddyOrderQualClauses(PlannerInfo *root, List *clauses);
extern bool EddyClauseIsCandidate(PlannerInfo *root, RestrictInfo *rinfo,
								  int user_level);
extern Plan *EddySourceScan(Plan *plan);
extern List *EddyRouteScanQuals(PlannerInfo *root, List *ordered, Plan *source,
								int max_routed);
extern bool EddyExprMayRaise(Node *expr);

#endif							/* EDDY_CLAUSES_H */
