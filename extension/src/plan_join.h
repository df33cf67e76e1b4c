/*-------------------------------------------------------------------------
 *
 * plan_join.h
 *	  What the files of the join planner share: the EddyJoinPath under
 *	  construction, its candidate join edges, and the functions one phase
 *	  of EddyCreateJoinPath calls in another file.
 *
 * The join planner is layered: planner.c's hooks call the driver,
 * plan_join.c (EddyCreateJoinPath and the gates that keep PostgreSQL's
 * plan); the driver calls the phases, in join_graph.c (reading
 * PostgreSQL's path, the join graph, index-join choice, the sources),
 * semijoin.c (semi and anti joins), join_state.c (the join-state estimate
 * and the reading order) and plan_parallel.c (the parallel twins); those
 * call plan_build.c (the Eddy CustomScan of a join block), plan.c
 * (custom_private builders, the CustomScan itself) and clauses.c.  Nothing
 * calls up into the driver.  planner.c sees plan.h only.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EDDY_PLAN_JOIN_H
#define EDDY_PLAN_JOIN_H

#include "nodes/pathnodes.h"
#include "nodes/plannodes.h"

/* A candidate join edge between two relations of the block */
typedef struct JoinEdge
{
	int			a;				/* relation indexes; a < b */
	int			b;
	List	   *clauses;		/* hashable equality RestrictInfos a = b */
	bool		in_tree;
	int			index_into;		/* -1: hash join; else a or b, reached by index */
	IndexOptInfo *index;
	List	   *index_clauses;	/* clauses usable as index conditions */
	List	   *index_cols;		/* their index columns (1-based), in order */
	bool		from_nestloop;	/* PostgreSQL chose an index nested loop here */
	bool		preferred;		/* PostgreSQL joins on it */
	Selectivity selectivity;	/* of all its clauses: low fan-out first */
} JoinEdge;

/* What EddyEstimatedJoinState counts of the rows a relation may store */
typedef enum EddyStateEstimate
{
	EDDY_STATE_UPPER,			/* EddyStoredRows: an upper bound */
	EDDY_STATE_CERTAIN,			/* certain_rows: scanned tables only */
	EDDY_STATE_LIKELY			/* certain_rows, and likely_index_rows for
								 * the relations index joins reach */
} EddyStateEstimate;

/* Analysis of a join block, made at path time, used at plan time */
typedef struct EddyJoinPath
{
	CustomPath	cpath;			/* must be first */
	int			nrels;
	RelOptInfo **rels;
	bool	   *scanned;		/* per relation: has a source scan */
	bool	   *guarded;		/* ... because the one-row guard made
								 * PostgreSQL's index nested loop into it a
								 * hash join (join_graph.c) */
	List	   *edges;			/* JoinEdges of the tree */
	List	   *selections;		/* RestrictInfos routed as selections */
	PathTarget **targets;		/* per relation: columns the eddy needs */
	List	   *source_order;	/* relation indexes, PostgreSQL's build order */
	List	   *clause_order;	/* the clauses in PostgreSQL's evaluation order */
	List	   *reading_order;	/* Integers: the order the eddy reads in */
	Path	   *serial_basis;	/* whose cost the serial eddy takes
								 * (EddySerialCostBasis) */
	bool		sub_block;		/* below the block's special joins (planner.c):
								 * its scan paths are copied, not changed */
	double		est_state;		/* estimated join state, bytes */
	double		certain_state;	/* the part of it stored for certain */
	double		likely_state;	/* ... and likely (EDDY_STATE_LIKELY), where
								 * it does not fit */
	int			est_nstairs;	/* STAIRs it counts */
	uint32		claimed;		/* ... the relations of it one process reads
								 * whole */
	bool		exchange;		/* a partial twin whose every scanned source is
								 * partial, its state exchanged ("Parallel
								 * eddies", plan_parallel.c) */
	/* per relation: semi and anti joins (semijoin.c) */
	JoinType   *jointype;		/* JOIN_SEMI/ANTI: their inner relation */
	SpecialJoinInfo **sjinfo;	/* its special join */
	int		   *semi_from;		/* the one relation its clauses read */
	List	  **inner_quals;	/* its clauses other than the index's keys */
} EddyJoinPath;

/* The costs of a parallel twin (plan_parallel.c) */
typedef struct PartialCost
{
	Cost		startup;
	Cost		total;			/* of a Gather over the partial twin */
	Cost		path_total;		/* of the partial twin itself */
	double		state;			/* its estimated join state per participant */
	bool		fits;			/* in eddy.max_memory */
} PartialCost;

/* A parallel twin of the eddy, or why there is none (plan_parallel.c) */
typedef struct EddyTwin
{
	Path	   *child;			/* a source path of the twin; NULL: no twin */
	Path	  **children;		/* per scanned relation: the twin's source */
	int			rel;			/* the partial twin's partial source, or -1 */
	List	   *order;			/* its reading order */
	PartialCost cost;
	bool		exchange;		/* the exchange twin (its state exchanged) */
	uint32		claimed;		/* ... the relations one process reads whole */
	const char *why_not;		/* why no partial twin */
	const char *why_no_exchange;	/* why no exchange twin */
} EddyTwin;

/* join_graph.c: the block's relations */
extern int	EddyRelIndex(EddyJoinPath *jp, Index relid);
extern uint32 EddyRelMask(EddyJoinPath *jp, Relids relids);
extern uint32 EddyTreeSide(EddyJoinPath *jp, JoinEdge *e, int from);

/* join_graph.c: PostgreSQL's paths */
extern Path *EddyWrappedPath(Path *path);
extern bool EddyPathProjects(Path *path);
extern Path *EddySourcePath(RelOptInfo *rel, bool needs_projection,
							bool parallel_safe, bool rescanned);
extern Path *EddyCopyScanPath(Path *path);

/* join_graph.c: keys and index joins */
extern bool EddyIsKeyClause(EddyJoinPath *jp, RestrictInfo *rinfo, int *left,
							int *right);
extern JoinEdge *EddyFindEdge(List *edges, int a, int b);
extern Node *EddyClauseSide(RestrictInfo *rinfo, Index relid);
extern bool EddyEdgeIndexUsable(EddyJoinPath *jp, JoinEdge *e, int into,
								IndexOptInfo *index);
extern bool EddyRelIndexJoinable(PlannerInfo *root, EddyJoinPath *jp, int i);
extern bool EddyProbeSideUnique(PlannerInfo *root, EddyJoinPath *jp, int rel,
								uint32 mask, List *keyclauses,
								List **scan_quals);

/* join_graph.c: the phases of EddyCreateJoinPath */
extern List *EddyCollectClausesAndOrder(PlannerInfo *root, EddyJoinPath *jp,
										Path *cheapest, List **nestloops,
										List **preferred);
extern List *EddyClassifyClauses(EddyJoinPath *jp, List *clauses,
								 List *preferred, List **selections);
extern void EddyMarkNestLoopIndexJoins(PlannerInfo *root, EddyJoinPath *jp,
									   List *candidates, List *nestloops);
extern List *EddyChooseSpanningTree(PlannerInfo *root, EddyJoinPath *jp,
									List *candidates, int *incoming,
									List **selections);
extern void EddyChooseIndexJoins(PlannerInfo *root, EddyJoinPath *jp,
								 List *edges, int *incoming);
extern void EddyIndexJoinedRelations(PlannerInfo *root, EddyJoinPath *jp,
									 List *edges, List **selections);
extern Path *EddyParameterizedScanLost(EddyJoinPath *jp, Path *path);
extern bool EddyModulesFit(PlannerInfo *root, EddyJoinPath *jp);
extern bool EddyColumnsAndSourcePaths(PlannerInfo *root, EddyJoinPath *jp,
									  Path **children);

/* semijoin.c */
extern bool EddySemiJoinClauses(PlannerInfo *root, EddyJoinPath *jp,
								RelOptInfo *joinrel, List **clauses);
extern bool EddySemiJoinEdges(PlannerInfo *root, EddyJoinPath *jp,
							  List *candidates);

/* join_state.c */
extern bool EddyReadsInBuildOrder(void);
extern double EddyStoredRows(PlannerInfo *root, EddyJoinPath *jp, int i);
extern double EddyPresizeRows(PlannerInfo *root, EddyJoinPath *jp, int i,
							  const int *pos);
extern double EddyEstimatedJoinState(PlannerInfo *root, EddyJoinPath *jp,
									 List *order, int share_rel, double share,
									 EddyStateEstimate kind, int *nstairs);
extern List *EddyLeastStateOrder(PlannerInfo *root, EddyJoinPath *jp,
								 List *order, bool keyed_only, bool certain,
								 double *state, int *nstairs);
extern bool EddyJoinStateFits(PlannerInfo *root, EddyJoinPath *jp);
extern void EddySerialStateMessage(EddyJoinPath *jp);
extern PathTarget *EddyPhysicalTarget(PlannerInfo *root, EddyJoinPath *jp,
									  int i, Path *path);

/* plan_parallel.c */
extern Path *EddySerialCostBasis(RelOptInfo *joinrel);
extern bool EddyParallelPlanCheaper(PlannerInfo *root, RelOptInfo *joinrel,
									Cost *gather_cost);
extern Path *EddyPartialSource(PlannerInfo *root, EddyJoinPath *jp,
							   RelOptInfo *joinrel, Path **children,
							   Path **pchildren, int *rel, List **order,
							   PartialCost *cost, const char **why);
extern bool EddyExchangeSources(PlannerInfo *root, EddyJoinPath *jp,
								RelOptInfo *joinrel, Path **children,
								Path **xchildren, uint32 *claimed,
								List **order, PartialCost *cost,
								const char **why);
extern void EddyParallelTwin(PlannerInfo *root, EddyJoinPath *jp,
							 RelOptInfo *joinrel, Path **children,
							 EddyTwin *twin);
extern Path *EddyMakePartialJoinPath(PlannerInfo *root, EddyJoinPath *jp,
									 RelOptInfo *joinrel, Path **pchildren,
									 List *order, PartialCost *cost);

/* plan_build.c */
extern Plan *EddyPlanJoinPath(PlannerInfo *root, RelOptInfo *joinrel,
							  CustomPath *best_path, List *tlist,
							  List *clauses, List *custom_plans);

#endif							/* EDDY_PLAN_JOIN_H */
