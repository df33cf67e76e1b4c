/*-------------------------------------------------------------------------
 *
 * schedule.c
 *	  Source scheduling: which source the eddy reads next.
 *
 * At every point of stasis the eddy reads one tuple from one of its
 * scanned sources; the schedule (eddy.source_schedule) chooses which:
 *
 *	 build			PostgreSQL's build order (join_graph.c): one source after
 *					another, the relations PostgreSQL hashes first and the
 *					centres of stars last.  A tuple streamed last meets the
 *					state of every relation before it and, against a unique
 *					side, finds its match at once and is never stored.
 *	 proportional	interleaved at rates proportional to the sources' sizes
 *					(the planner's rows times the source's rate), so that
 *					they all end together: the setup of the STAIRs paper's
 *					experiments (VLDB 2004, section 5).  The next source is
 *					the one whose share read is smallest.
 *
 * Deferral (build).  The build order is the planner's (or, under
 * eddy.random_start, a random one), and a source read early is stored
 * whole, waiting for the sources after it.  Deferring the source being
 * read, moving it behind the scanned sources left (EddyScheduleDefer,
 * checked every EDDY_DEFER_CHECK tuples it reads), changes one thing: the
 * sources between are stored either way, since its rows will probe them,
 * but the last one, which would have streamed unstored, is stored instead
 * of the rest of it, and the rest of it probes where the last source would
 * have.  Storing a row costs more than probing with it (and holds memory),
 * so the gain is the difference over the rows swapped: it pays where the
 * rest is much larger than the last source.  So the source is deferred
 * when its rest is expected to be a factor times the last source's rows,
 * each counting the planner's rows its index joins fetch per row (through
 * chains of them: those rows are stored with it).  The rest of a
 * sequential scan of a heap is what the share of its blocks read says
 * (returned times (1 - f) / f), which is right after the data changed, and
 * the factor is EDDY_DEFER_HEAP_FACTOR: TPC-H Q14 at 64MB had part's
 * 199,000 rows swapped for lineitem's 76,000 at 2 (1.06x PostgreSQL's time
 * against 0.99x without the deferral, 6 rounds, within the noise but no
 * gain).  Of another source the rest is taken to be as many again as it
 * returned, and the factor is EDDY_DEFER_FACTOR, so that at most twice the
 * last source is stored before the deferral, renting until the rent paid
 * reaches the price.  The last source's rows are the planner's (a source
 * deferred before: as many again as it returned).  The rows a deferred
 * source returned stay where they are, so any reading order is a valid
 * history (the interleaving the proportional schedule makes); each source
 * is deferred at most once a scan.  Measured on the misestimation workload
 * under eddy.random_start (issue 48): m27's seed 2 read sales third and
 * stored 999,174 of its rows, 1.3 s against 150-240 ms for the other
 * seeds.  The fetched rows count since m34 (customer, 60,000 rows,
 * deferred behind product's 20,000, whose 1,005 passing rows then fetched
 * 36,000 sales through an index and stored them waiting for the rest of
 * customer: 1.24x).  The first rule, deferring once the source had
 * returned twice what all the sources left were expected to hold, let
 * m17's seed 4 store 455,680 sales rows (the sum of eight dimensions'
 * estimates, twice) and spill, 2.2 s against 0.71 s for seed 1 (in
 * random-starts/ at b79d1e7); by the share of its heap, sales is deferred
 * at the first check.  Not while spilling (batches read in build order),
 * in a parallel eddy that exchanges its state (every participant must read
 * in one order) or a one-source eddy.  A rescan restores the plan's order.
 * EXPLAIN ANALYZE: "Sources Deferred: s after N tuples".
 *
 * For experiments, eddy.source_rates multiplies a source's rate (by
 * relation alias: 'orders=2, lineitem=0.5'; proportional only) and
 * eddy.source_delays holds a source back for its first milliseconds
 * ('customer=100'), as a slow remote source would be.  The eddy never
 * waits for a delayed source while another has tuples; when every source
 * left is delayed it sleeps on its latch until the first one is due, so
 * cancel and statement_timeout are honoured and nothing spins.  A
 * one-source eddy reads its source directly and ignores both settings.
 * The static symmetric hash join (shj.c) honours the same three settings
 * for its inputs that are base relations, with the parsing, naming and
 * waiting shared from here (EddySourceListValue, EddyPlanSourceName,
 * EddyWaitForSources, EddyProportionalShare).
 *
 * eddy.routing_hold ('orders=50', percent) is read here too, since it is
 * about reading: until that share of each listed relation's planned rows
 * (the planner's estimate, not the rows the relation turns out to have)
 * has been read, or the relation is exhausted, the router keeps its
 * decisions (those of its first observations, routing.c) and no state
 * migrates (migrate.c); then
 * EddyScheduleCheckHold releases it, once.  A relation reached through an
 * index join is never read and cannot hold; a one-source eddy ignores the
 * list.  A rescan does not hold again.
 *
 * The settings are read when the node starts; names that match no source
 * of an eddy are ignored by it (one query may have several eddies).
 *
 *-------------------------------------------------------------------------
 */
#include "exec.h"

#include <float.h>
#include <math.h>

#include "access/heapam.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "parser/parsetree.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

int			eddy_source_schedule = EDDY_SCHEDULE_BUILD;
char	   *eddy_source_rates = NULL;
char	   *eddy_source_delays = NULL;
char	   *eddy_routing_hold = NULL;

static const struct config_enum_entry schedule_options[] = {
	{"build", EDDY_SCHEDULE_BUILD, false},
	{"proportional", EDDY_SCHEDULE_PROPORTIONAL, false},
	{NULL, 0, false}
};

/*
 * Parse "name=value, name=value" into parallel lists; false (with a
 * message in *error) on bad syntax or a value outside [min, max].
 */
bool
EddyParseSourceList(const char *value, double min, double max, List **names,
					List **values, char **error)
{
	char	   *copy = pstrdup(value);
	char	   *item;
	char	   *save = NULL;

	*names = NIL;
	*values = NIL;
	for (item = strtok_r(copy, ",", &save); item != NULL;
		 item = strtok_r(NULL, ",", &save))
	{
		char	   *eq = strchr(item, '=');
		char	   *name;
		char	   *end;
		double		v;

		if (eq == NULL)
		{
			*error = psprintf("\"%s\" is not of the form name=value", item);
			return false;
		}
		*eq = '\0';
		name = item;
		while (*name == ' ' || *name == '\t')
			name++;
		end = name + strlen(name);
		while (end > name && (end[-1] == ' ' || end[-1] == '\t'))
			*--end = '\0';
		if (*name == '\0')
		{
			*error = pstrdup("a relation name is missing");
			return false;
		}
		errno = 0;
		v = strtod(eq + 1, &end);
		while (*end == ' ' || *end == '\t')
			end++;
		if (errno != 0 || end == eq + 1 || *end != '\0' || isnan(v) ||
			v < min || v > max)
		{
			*error = psprintf("the value of \"%s\" must be a number between %g and %g",
							  name, min, max);
			return false;
		}
		*names = lappend(*names, pstrdup(name));
		*values = lappend(*values, makeFloat(psprintf("%g", v)));
	}
	return true;
}

static bool
check_source_list(char **newval, double min, double max, const char *form)
{
	List	   *names;
	List	   *values;
	char	   *error = NULL;
	bool		ok;

	if (*newval == NULL || **newval == '\0')
		return true;
	ok = EddyParseSourceList(*newval, min, max, &names, &values, &error);
	if (!ok)
	{
		GUC_check_errdetail("%s.", error);
		GUC_check_errhint("The form is a comma-separated list of %s.", form);
	}
	return ok;
}

static bool
check_source_rates(char **newval, void **extra, GucSource source)
{
	return check_source_list(newval, EDDY_MIN_SOURCE_RATE, EDDY_MAX_SOURCE_RATE,
							 "relation=rate, e.g. 'orders=2, lineitem=0.5'");
}

static bool
check_source_delays(char **newval, void **extra, GucSource source)
{
	return check_source_list(newval, 0, EDDY_MAX_SOURCE_DELAY_MS,
							 "relation=milliseconds, e.g. 'customer=100'");
}

static bool
check_routing_hold(char **newval, void **extra, GucSource source)
{
	return check_source_list(newval, 0, EDDY_MAX_ROUTING_HOLD,
							 "relation=percent, e.g. 'orders=50'");
}

void
EddyScheduleGucInit(void)
{
	DefineCustomEnumVariable("eddy.source_schedule",
							 "How a join eddy or a static symmetric hash join interleaves the reading of its sources.",
							 "build: an eddy reads one source after another in PostgreSQL's build order, "
							 "a static symmetric hash join its two inputs alternately; "
							 "proportional: interleaved at rates proportional to their sizes.",
							 &eddy_source_schedule,
							 EDDY_SCHEDULE_BUILD,
							 schedule_options,
							 PGC_USERSET,
							 0,
							 NULL,
							 NULL,
							 NULL);

	/* relation=rate, rates 1e-6 .. 1e6 (proportional schedule) */
	DefineCustomStringVariable("eddy.source_rates",
							   "Relative reading rates of join eddy sources and static symmetric hash join inputs, for experiments.",
							   "A list of relation=rate (by alias), e.g. 'orders=2, lineitem=0.5'; "
							   "the proportional schedule multiplies a source's share by its rate.",
							   &eddy_source_rates,
							   "",
							   PGC_USERSET,
							   0,
							   check_source_rates,
							   NULL,
							   NULL);

	/* relation=milliseconds, 0 .. 3600000 */
	DefineCustomStringVariable("eddy.source_delays",
							   "Initial delays of join eddy sources and static symmetric hash join inputs, in milliseconds, for experiments.",
							   "A list of relation=milliseconds (by alias), e.g. 'customer=100': "
							   "the source is not read before that much time has passed since the "
							   "eddy's (or the tree of static symmetric hash joins') first read.",
							   &eddy_source_delays,
							   "",
							   PGC_USERSET,
							   0,
							   check_source_delays,
							   NULL,
							   NULL);

	/* relation=percent, 0 .. 100 */
	DefineCustomStringVariable("eddy.routing_hold",
							   "Holds a join eddy's routing and state migration back, for experiments.",
							   "A list of relation=percent (by alias), e.g. 'orders=50': until that share of "
							   "each listed relation's planned rows has been read (or the relation is exhausted), "
							   "the eddy keeps the routing decisions of its first 1,000 tuples routed and migrates no state.",
							   &eddy_routing_hold,
							   "",
							   PGC_USERSET,
							   0,
							   check_routing_hold,
							   NULL,
							   NULL);
}

const char *
EddyScheduleName(int schedule)
{
	const struct config_enum_entry *e;

	for (e = schedule_options; e->name != NULL; e++)
		if (e->val == schedule)
			return e->name;
	return "unknown";
}

/*
 * The relation alias of a scanned source's plan (a scan, possibly under a
 * Result, Material, Gather or Gather Merge), or NULL: the name by which
 * the name=value lists address it (the Eddy's sources and the static
 * symmetric hash join's inputs, shj.c).
 */
char *
EddyPlanSourceName(Plan *plan, List *rtable)
{
	Index		rti = 0;

	/* a scan of one relation: the planner's list (private.h) */
	if (EddyIsRelationScan(nodeTag(plan)))
		rti = ((Scan *) plan)->scanrelid;
	switch (nodeTag(plan))
	{
		case T_Append:
			rti = bms_next_member(((Append *) plan)->apprelids, -1);
			break;
		case T_Result:
		case T_Material:
		case T_Gather:
		case T_GatherMerge:
			return plan->lefttree ? EddyPlanSourceName(plan->lefttree, rtable) : NULL;
		default:
			break;
	}
	if (rti == 0 || (int) rti > list_length(rtable))
		return NULL;
	return rt_fetch(rti, rtable)->eref->aliasname;
}

/*
 * The value a name=value setting gives the source called name (the last
 * one if it is listed twice), in *value; false if the setting does not
 * name it.  The setting was checked when it was set.
 */
bool
EddySourceListValue(const char *setting, const char *name, double *value)
{
	List	   *names;
	List	   *values;
	char	   *error;
	ListCell   *ln;
	ListCell   *lv;
	bool		found = false;

	if (name == NULL || setting == NULL || *setting == '\0' ||
		!EddyParseSourceList(setting, 0, DBL_MAX, &names, &values, &error))
		return false;
	forboth(ln, names, lv, values)
	{
		if (strcmp((char *) lfirst(ln), name) == 0)
		{
			*value = floatVal(lfirst(lv));
			found = true;
		}
	}
	return found;
}

/*
 * Sleep on the latch for wait_ms milliseconds (at least 1), or until it is
 * set, then honour interrupts (cancel, statement_timeout): the wait of a
 * reader whose every source left is held back by eddy.source_delays.
 */
void
EddyWaitForSources(double wait_ms)
{
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 (long) ceil(Max(wait_ms, 1.0)), PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
}

/* Which field of the sources a name=value list sets */
typedef enum SourceListField
{
	SOURCE_RATE,
	SOURCE_DELAY,
	SOURCE_HOLD
} SourceListField;

/* Apply a name=value list to the sources: field = value where names match */
static void
apply_source_list(EddyState *es, const char *setting, SourceListField field)
{
	int			i;

	if (setting == NULL || *setting == '\0')
		return;
	for (i = 0; i < es->nsources; i++)
	{
		EddySource *src = &es->sources[i];
		double		v;

		/* an index-joined relation is not read: no rate, delay or hold */
		if (src->method != EDDY_SOURCE_SCAN ||
			!EddySourceListValue(setting, src->name, &v))
			continue;
		switch (field)
		{
			case SOURCE_RATE:
				src->rate = v;
				break;
			case SOURCE_DELAY:
				src->delay_ms = v;
				break;
			case SOURCE_HOLD:
				src->hold_pct = v;
				break;
		}
	}
}

/* Set up the schedule from the settings (exec.c, after the sources) */
void
EddyScheduleInit(EddyState *es)
{
	int			i;

	es->schedule = (EddySchedule) eddy_source_schedule;
	for (i = 0; i < es->nsources; i++)
	{
		EddySource *src = &es->sources[i];

		src->rate = 1.0;
		src->delay_ms = 0;
		src->hold_pct = 0;
		if (src->method == EDDY_SOURCE_SCAN)
			src->name = EddyPlanSourceName(src->plan->plan,
											   es->css.ss.ps.state->es_range_table);
	}
	apply_source_list(es, eddy_source_rates, SOURCE_RATE);
	apply_source_list(es, eddy_source_delays, SOURCE_DELAY);
	apply_source_list(es, eddy_routing_hold, SOURCE_HOLD);
	es->holding = false;
	for (i = 0; i < es->nsources; i++)
	{
		EddySource *src = &es->sources[i];

		if (src->delay_ms > 0)
			es->delayed = true;
		if (src->method != EDDY_SOURCE_SCAN)
			src->hold_pct = 0;	/* read through an index join: never "read" */
		if (src->hold_pct > 0 && !es->chain)
		{
			src->hold_rows = (uint64) ceil(src->hold_pct / 100.0 *
										   Max(src->est_rows, 1.0));
			es->holding = true;
		}
	}
}

/*
 * eddy.routing_hold: is every held source read far enough (or exhausted)?
 * Then release the router (exec.c calls this while es->holding, after each
 * tuple read and when a source ends).
 */
void
EddyScheduleCheckHold(EddyState *es)
{
	int			i;

	for (i = 0; i < es->nsources; i++)
	{
		EddySource *src = &es->sources[i];

		if (src->hold_pct > 0 && !src->exhausted && src->nread < src->hold_rows)
			return;
	}
	EddyRouterRelease(&es->router);
	es->holding = false;
}

/*
 * The next source to read: the schedule's choice among the scanned
 * sources that are not exhausted and not held back, or -1 when every
 * source is exhausted.  When all that are left are held back, wait on the
 * latch until the first is due.
 */
int
EddyScheduleNext(EddyState *es)
{
	for (;;)
	{
		TimestampTz now = 0;
		double		wait_ms = -1;
		int			best = -1;
		double		best_share = 0;
		int			k;

		/* the clock is read only until every delay has passed */
		if (es->delayed && !es->delays_over)
		{
			now = GetCurrentTimestamp();
			if (es->start_time == 0)
				es->start_time = now;
			es->delays_over = true;
			for (k = 0; k < es->nsources; k++)
			{
				EddySource *src = &es->sources[k];

				if (src->method == EDDY_SOURCE_SCAN && !src->exhausted &&
					src->delay_ms > 0 &&
					(double) (now - es->start_time) / 1000.0 < src->delay_ms)
					es->delays_over = false;
			}
		}
		for (k = 0; k < es->nsources; k++)
		{
			int			i = es->source_order[k];
			EddySource *src = &es->sources[i];
			double		share;

			if (src->method != EDDY_SOURCE_SCAN || src->exhausted)
				continue;
			if (src->delay_ms > 0 && !es->delays_over)
			{
				double		elapsed = (double) (now - es->start_time) / 1000.0;

				if (elapsed < src->delay_ms)
				{
					double		left = src->delay_ms - elapsed;

					if (wait_ms < 0 || left < wait_ms)
						wait_ms = left;
					continue;
				}
			}
			if (es->schedule == EDDY_SCHEDULE_BUILD)
				return i;		/* the first ready one in build order */
			share = EddyProportionalShare(src->nread, src->est_rows, src->rate);
			if (best < 0 || share < best_share)
			{
				best = i;
				best_share = share;
			}
		}
		if (best >= 0)
			return best;
		if (wait_ms < 0)
			return -1;			/* every source is exhausted */

		/* every source left is held back: sleep until the first is due */
		EddyWaitForSources(wait_ms);
	}
}

/* Deferral ("Deferral" above): tuples between checks, and the factor */
#define EDDY_DEFER_CHECK	1024
#define EDDY_DEFER_FACTOR	2.0
/* ... and the factor where the heap measured the rest ("Deferral" above) */
#define EDDY_DEFER_HEAP_FACTOR	4.0

/*
 * The planner's rows the index joins fetch per row of scanned source x,
 * through chains of them (x fetches p, p fetches q: p's fanout times q's).
 */
static double
fetched_per_row(EddyState *es, int x)
{
	double		total = 0.0;
	int			p;

	for (p = 0; p < es->nsources; p++)
	{
		double		chain = 1.0;
		int			y = p;
		int			depth = 0;

		while (y >= 0 && es->sources[y].method == EDDY_SOURCE_INDEX &&
			   depth++ < es->nsources)
		{
			chain *= es->sources[y].fetch_fanout;
			y = es->sources[y].fetched_by;
		}
		if (y == x && p != x)
			total += chain;
	}
	return total;
}

/* The planner's rows a scanned source has left (deferred: as many again) */
static double
rows_left(EddySource *o)
{
	if (o->deferred_at > 0)
		return Max(o->est_rows - (double) o->nread, (double) o->nread);
	return Max(o->est_rows - (double) o->nread, 1.0);
}

/*
 * Presizing.  A hash join sizes a STAIR at its first insertion for the
 * rows the planner expects it to hold (mod_hashjoin.c), and a source read
 * early would be stored whole.  But a source the planner's rows say is
 * EDDY_DEFER_HEAP_FACTOR times the last one is likely deferred at its
 * first check, and its STAIRs would hold a check's worth of rows in
 * slot arrays sized for all of it: m17's seed 2 read sales third, 1,024
 * rows into three STAIRs sized for a million, 104 MB at the peak against
 * 23 MB from the planner's start.  Such a source's presize_cap is
 * 2 * EDDY_DEFER_CHECK entries (0: none); one that is not deferred after
 * all grows its STAIRs by doubling.  A deferred source's STAIRs hold what
 * it returned before the deferral (and what that makes with the sources
 * read after it), the rest streaming: its cap is the rows it had read
 * then.  Set at the start, at each rescan and after each deferral, for
 * the order then.
 */
static void
presize_caps(EddyState *es)
{
	int			last = -1;
	int			k;

	for (k = 0; k < es->nsources; k++)
		es->sources[k].presize_cap = 0;
	if (es->schedule != EDDY_SCHEDULE_BUILD || es->spill != NULL || es->exchange ||
		es->chain || es->nsources < 2)
		return;
	for (k = es->nsources - 1; k >= 0 && last < 0; k--)
		if (es->sources[es->source_order[k]].method == EDDY_SOURCE_SCAN)
			last = es->source_order[k];
	if (last < 0)
		return;
	for (k = 0; k < es->nsources; k++)
	{
		EddySource *o = &es->sources[k];

		if (o->method != EDDY_SOURCE_SCAN)
			continue;
		if (o->deferred_at > 0)
			o->presize_cap = (double) o->deferred_at;
		else if (k != last &&
				 rows_left(o) * (1.0 + fetched_per_row(es, k)) >=
				 EDDY_DEFER_HEAP_FACTOR * rows_left(&es->sources[last]) *
				 (1.0 + fetched_per_row(es, last)))
			o->presize_cap = 2.0 * EDDY_DEFER_CHECK;
	}
}

/*
 * The share of a sequential scan's heap read so far, in (0, 1]; -1 if the
 * source is not a serial sequential scan of a heap, or has not started.
 * The relation's blocks are counted when the scan starts, so unlike the
 * planner's rows this is right after the data changed.
 */
static double
scan_fraction(PlanState *ps)
{
	ScanState  *ss = (ScanState *) ps;
	HeapScanDesc hs;
	BlockNumber done;

	if (ps == NULL || !IsA(ps, SeqScanState) || ss->ss_currentScanDesc == NULL ||
		ss->ss_currentRelation == NULL ||
		ss->ss_currentRelation->rd_tableam != GetHeapamTableAmRoutine())
		return -1.0;
	hs = (HeapScanDesc) ss->ss_currentScanDesc;
	if (hs->rs_base.rs_parallel != NULL || !hs->rs_inited ||
		hs->rs_nblocks == 0 || !BlockNumberIsValid(hs->rs_cblock))
		return -1.0;
	done = (hs->rs_cblock + hs->rs_nblocks - hs->rs_startblock) % hs->rs_nblocks + 1;
	return (double) done / (double) hs->rs_nblocks;
}

/*
 * Should source i, being read in build order, be read last instead?  If
 * so, move it behind the scanned sources left and say true; the caller
 * reads the next one.  Called when i's tuples read reach defer_check_at.
 *
 * Deferring i changes what is stored in one way only: the sources between
 * are stored either way (i's rows will probe them), so what the last
 * scanned source left would have streamed is stored instead of the rest
 * of i.  So i is deferred when the rest of it is expected to be a factor
 * times the last source's rows (each with the rows its index joins fetch,
 * which are stored with it): EDDY_DEFER_HEAP_FACTOR where a sequential
 * scan's share of its heap read says what the rest is, returned times
 * (1 - f) / f; otherwise EDDY_DEFER_FACTOR, the rest taken to be as many
 * again as it returned.  The last source's rows are the planner's (a
 * source deferred before: as many again as it returned).  See "Deferral"
 * above.
 */
bool
EddyScheduleDefer(EddyState *es, int i)
{
	EddySource *src = &es->sources[i];
	double		returned = (double) (src->nread - src->scan_dropped);
	double		rest = returned;
	double		f;
	double		last = -1.0;
	int			k;

	src->defer_check_at = src->nread + EDDY_DEFER_CHECK;
	if (src->deferred_at > 0 || es->spill != NULL || es->exchange || es->chain ||
		es->source_order[es->next_source] != i)
		return false;
	for (k = es->nsources - 1; k > es->next_source; k--)
	{
		int			x = es->source_order[k];
		EddySource *o = &es->sources[x];

		if (o->method != EDDY_SOURCE_SCAN || o->exhausted)
			continue;
		last = rows_left(o) * (1.0 + fetched_per_row(es, x));
		break;
	}
	if (last < 0)
		return false;			/* i is the last scanned source */
	f = scan_fraction(src->plan);
	if (f > 0)
		rest = returned * (1.0 - f) / f;
	if (rest * (1.0 + fetched_per_row(es, i)) <
		(f > 0 ? EDDY_DEFER_HEAP_FACTOR : EDDY_DEFER_FACTOR) * last)
		return false;
	memmove(&es->source_order[es->next_source], &es->source_order[es->next_source + 1],
			sizeof(int) * (es->nsources - es->next_source - 1));
	es->source_order[es->nsources - 1] = i;
	src->deferred_at = src->nread;
	presize_caps(es);
	return true;
}

/* The plan's reading order again, nothing deferred (the node's start, a rescan) */
void
EddyScheduleRescan(EddyState *es)
{
	int			i;

	memcpy(es->source_order, es->plan_order, sizeof(int) * es->nsources);
	for (i = 0; i < es->nsources; i++)
	{
		es->sources[i].deferred_at = 0;
		es->sources[i].defer_check_at = EDDY_DEFER_CHECK;
	}
	presize_caps(es);
}

/*
 * EXPLAIN's "Source Schedule" (explain.c, shj.c): append one source's rate
 * and delay to buf, opening the list with " (" at the first one listed
 * (*listed); nothing for a source at rate 1 with no delay.  The caller
 * closes the list when *listed.
 */
void
EddyScheduleExplainSource(StringInfo buf, bool *listed, const char *name,
						  double rate, double delay_ms)
{
	if (rate == 1.0 && delay_ms == 0)
		return;
	appendStringInfo(buf, "%s%s", *listed ? ", " : " (", name);
	if (rate != 1.0)
		appendStringInfo(buf, " rate %g", rate);
	if (delay_ms > 0)
		appendStringInfo(buf, " delay %g ms", delay_ms);
	*listed = true;
}
