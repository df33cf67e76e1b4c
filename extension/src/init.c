/*-------------------------------------------------------------------------
 *
 * init.c
 *	  Module load: PG_MODULE_MAGIC and _PG_init.
 *
 * _PG_init only calls each feature's initializer (the pgvector pattern):
 * settings first, so that hooks see them, then the custom scan methods,
 * then the planner hooks.  Loaded through shared_preload_libraries the
 * hooks act in every backend; LOAD 'eddy' works for one session.  Either
 * way the planner hook only rewrites plans in databases where CREATE
 * EXTENSION eddy has run (planner.c).
 *
 *-------------------------------------------------------------------------
 */
#include "eddy.h"

#include "fmgr.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	EddyClockInit();
	EddyGucInit();
	EddyExecInit();
	EddyShjInit();
	EddyPlannerInit();
}
