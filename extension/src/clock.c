/*-------------------------------------------------------------------------
 *
 * clock.c
 *	  The clock of cost sampling (eddy_now_ns, eddy.h): the TSC where the
 *	  kernel trusts it, clock_gettime elsewhere.
 *
 * The routing times a sample of its hops (routing.c, Sampling): each
 * target two of its visits per 100 tuples routed, so a join eddy of seven
 * targets reads the clock about once every five tuples routed, and a hop
 * costs 70-300 ns.  clock_gettime(CLOCK_MONOTONIC) through the vDSO takes
 * 26 ns a call on the development machines and reading the TSC 11 ns
 * (measured by hand); on misestimation query m05 (1.5 million tuples
 * routed, 300,000 clock reads) the clock was 3.6% of the backend's
 * profile.  So where the clock is the TSC anyway, the eddy reads it
 * directly and scales it itself.
 *
 * When: on x86-64 only, and only when the kernel's current clocksource is
 * "tsc" (/sys/devices/system/clocksource/clocksource0): the kernel has then
 * checked that the TSC runs at a constant rate, does not stop in idle
 * states and agrees across CPUs, the properties a difference of two
 * readings taken on different CPUs needs.  Anywhere else (another
 * clocksource, such as kvm-clock or hpet; another architecture; no sysfs),
 * eddy_tsc_ns stays 0 and eddy_now_ns calls clock_gettime as before.
 *
 * Calibration: at load (_PG_init: once in the postmaster when the library
 * is preloaded, so that every backend and parallel worker inherits it, or
 * once per session with LOAD), both clocks are read at one instant, again
 * EDDY_CLOCK_CALIBRATE_NS later by CLOCK_MONOTONIC, and the ratio of the
 * two intervals is the scale.  An instant is a CLOCK_MONOTONIC reading
 * bracketed by two TSC readings, the tightest bracket of a few tries: a
 * preemption or an interrupt between a pair of readings would otherwise
 * skew the scale by its length.  The scale is measured twice and believed
 * only when the two agree within EDDY_CLOCK_AGREEMENT and the rate is
 * plausible (0.1-10 GHz), else after three attempts clock_gettime is kept.
 * About half a millisecond, once.
 *
 * The TSC is read with RDTSC, which is not ordered with the instructions
 * around it: a reading may move by a few cycles against the work it
 * brackets, noise far below the hop costs sampled (and below the 26 ns that
 * clock_gettime itself used to add to every sample).  eddy.clock (a
 * read-only setting) shows which clock is in use, and the TSC's rate.
 *
 *-------------------------------------------------------------------------
 */
#include "eddy.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define EDDY_CLOCK_CALIBRATE_NS		250000.0	/* 250 us, twice */
#define EDDY_CLOCK_AGREEMENT		0.0005	/* of the two measurements */
#define EDDY_CLOCKSOURCE_PATH \
	"/sys/devices/system/clocksource/clocksource0/current_clocksource"

double		eddy_tsc_ns = 0;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
static double
monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec * 1e9 + (double) ts.tv_nsec;
}

/* Is the kernel's clocksource the TSC? */
static bool
kernel_clock_is_tsc(void)
{
	FILE	   *f = fopen(EDDY_CLOCKSOURCE_PATH, "r");
	char		name[64];
	bool		tsc = false;

	if (f == NULL)
		return false;
	if (fgets(name, sizeof(name), f) != NULL)
	{
		name[strcspn(name, "\n")] = '\0';
		tsc = strcmp(name, "tsc") == 0;
	}
	fclose(f);
	return tsc;
}

/*
 * Both clocks at one instant: CLOCK_MONOTONIC, and the midpoint of TSC
 * readings on either side of it, from the tightest of a few tries (an
 * interrupt or a preemption between the readings widens that try only).
 * The tightest bracket goes to *width.
 */
static void
read_both(double *ns, double *tsc, uint64 *width)
{
	int			i;

	*width = PG_UINT64_MAX;
	*ns = *tsc = 0;
	for (i = 0; i < 8; i++)
	{
		uint64		a = __builtin_ia32_rdtsc();
		double		t = monotonic_ns();
		uint64		b = __builtin_ia32_rdtsc();

		if (i == 0)
			*ns = t;			/* whatever the brackets, time passes */
		if (b >= a && b - a < *width)
		{
			*width = b - a;
			*ns = t;
			*tsc = (double) a + (double) (b - a) / 2.0;
		}
	}
}

/* The TSC's nanoseconds per tick over EDDY_CLOCK_CALIBRATE_NS, or 0 */
static double
measure_scale(void)
{
	double		t0,
				t1,
				c0,
				c1;
	uint64		w0,
				w1;

	read_both(&t0, &c0, &w0);
	do
	{
		read_both(&t1, &c1, &w1);
	} while (t1 - t0 < EDDY_CLOCK_CALIBRATE_NS);
	if (w0 == PG_UINT64_MAX || w1 == PG_UINT64_MAX || c1 <= c0)
		return 0;
	return (t1 - t0) / (c1 - c0);
}
#endif

void
EddyClockInit(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	int			attempt;

	if (eddy_tsc_ns > 0 || !kernel_clock_is_tsc())
		return;
	(void) monotonic_ns();		/* the first call may fault the vDSO in */
	for (attempt = 0; attempt < 3; attempt++)
	{
		double		s1 = measure_scale();
		double		s2 = measure_scale();

		/* two measurements that agree, of a plausible rate (0.1-10 GHz) */
		if (s1 >= 0.1 && s1 <= 10.0 &&
			fabs(s1 - s2) <= EDDY_CLOCK_AGREEMENT * s1)
		{
			eddy_tsc_ns = (s1 + s2) / 2.0;
			return;
		}
	}
#endif
}

/* eddy.clock: which clock eddy_now_ns reads ("tsc, 2600.0 MHz") */
const char *
EddyClockName(void)
{
	static char name[64];

	if (eddy_tsc_ns <= 0)
		return "clock_gettime";
	snprintf(name, sizeof(name), "tsc, %.1f MHz", 1000.0 / eddy_tsc_ns);
	return name;
}
