/*-------------------------------------------------------------------------
 *
 * replay.c
 *	  Replaying stored rows through the routing, and the counters saved
 *	  and restored around a replay.
 *
 * State migration (migrate.c), spilling (spill.c) and the parallel
 * exchange (parallel.c) rebuild join state by routing rows again under
 * the current routing (EddyReplay), at a point of stasis.  What they
 * route again must not count as the eddy's own routing: the modules'
 * statistics, their stores' counters (through the state interface,
 * module.h) and the router's history of first choices are saved before
 * (EddySaveCounters) and restored after (EddyRestoreCounters).  A row's
 * done bits of the selections over its relation alone
 * (EddySelectionsAlone) are kept by the replay.
 *
 *-------------------------------------------------------------------------
 */
#include "loop.h"

#include "miscadmin.h"

/*
 * Per source, the selections over its relation alone (module bits): a done
 * bit of one of them on a stored tuple says its row passed, which state
 * migration's replay and spilling keep.  Palloc'd in the current context.
 */
uint64 *
EddySelectionsAlone(EddyState *es)
{
	uint64	   *xonly = palloc0(sizeof(uint64) * es->nsources);
	int			i;

	for (i = 0; i < es->nmodules; i++)
	{
		EddyModule *m = es->modules[i];
		int			x;

		for (x = 0; x < es->nsources; x++)
			if (EddyModuleFiltersSource(m, x))
				xonly[x] |= UINT64CONST(1) << i;
	}
	return xonly;
}

/* Save the counters (EddySavedCounters), palloc'd in the current context */
void
EddySaveCounters(EddyState *es, EddySavedCounters *saved)
{
	int			m;
	int			s;

	EddyRouterCloseRuns(&es->router);	/* their tuples into the counters */
	saved->lanes = palloc(sizeof(EddyHistoryLane) * es->router.nlanes);
	memcpy(saved->lanes, es->router.lanes,
		   sizeof(EddyHistoryLane) * es->router.nlanes);
	saved->last_run_tuples = palloc0(sizeof(uint64) * es->router.nlanes);
	for (s = 0; s < es->router.nlanes; s++)
		if (saved->lanes[s].nruns > 0)
			saved->last_run_tuples[s] =
				saved->lanes[s].runs[saved->lanes[s].nruns - 1].tuples;
	saved->modules = palloc0(sizeof(EddyModuleCounters) * es->nmodules);
	for (m = 0; m < es->nmodules; m++)
	{
		EddyModule *mod = es->modules[m];
		EddyModuleCounters *c = &saved->modules[m];

		memcpy(c->stats, mod->stats, sizeof(c->stats));
		if (mod->state == NULL)
			continue;
		for (s = 0; s < mod->state->nstores; s++)
			mod->state->save_counters(mod, s, &c->stores[s]);
	}
	saved->nfiltered1 = es->css.ss.ps.instrument ? es->css.ss.ps.instrument->nfiltered1 : 0;
}

/* Restore the counters EddySaveCounters saved, and free its copies */
void
EddyRestoreCounters(EddyState *es, EddySavedCounters *saved)
{
	int			m;
	int			s;

	/*
	 * The replay's first choices are forgotten, as its counts are: each
	 * lane's runs as they were (an array the replay grew is kept), no open
	 * run.
	 */
	for (s = 0; s < es->router.nlanes; s++)
	{
		EddyHistoryLane *l = &es->router.lanes[s];

		l->nruns = saved->lanes[s].nruns;
		if (l->nruns > 0)
			l->runs[l->nruns - 1].tuples = saved->last_run_tuples[s];
		l->truncated = saved->lanes[s].truncated;
		l->open_target = -1;
		l->open_tuples = 0;
	}
	for (m = 0; m < es->nmodules; m++)
	{
		EddyModule *mod = es->modules[m];
		EddyModuleCounters *c = &saved->modules[m];

		memcpy(mod->stats, c->stats, sizeof(c->stats));
		if (mod->state == NULL)
			continue;
		for (s = 0; s < mod->state->nstores; s++)
			mod->state->restore_counters(mod, s, &c->stores[s]);
	}
	if (es->css.ss.ps.instrument)
		es->css.ss.ps.instrument->nfiltered1 = saved->nfiltered1;
	pfree(saved->modules);
	pfree(saved->lanes);
	pfree(saved->last_run_tuples);
}

/*
 * State migration (migrate.c) rebuilds the join state by routing the rows
 * it holds again: route t, one of them (with the done bits of the
 * selections on its relation alone), as if it had just been read, until
 * nothing is in flight.  Complete results are dropped: they were returned
 * when first made.  Nothing is counted here (migrate.c restores the
 * counters the modules keep), nor timed, nor does routing recompute.
 */
void
EddyReplay(EddyState *es, EddyTuple *t)
{
	Assert(es->replaying && es->nstack == 0);
	for (;;)
	{
		while (t != NULL)
		{
			int			target = EddyRoute(&es->router, t->spans, t->done);
			EddyRouteTarget *tg;
			EddyModule *m;

			if (target == EDDY_ROUTE_OUTPUT)
				break;
			tg = &es->targets[target];
			m = es->modules[tg->module];
			t = m->methods->route(es, m, tg->dir, t);
		}
		for (;;)
		{
			EddyFrame  *f;

			if (es->nstack == 0)
				return;
			CHECK_FOR_INTERRUPTS();
			f = &es->stack[es->nstack - 1];
			t = f->module->methods->next(es, f);
			if (t != NULL)
				break;
			es->nstack--;
		}
	}
}
