/* Timers that fire by the program's own cached millisecond clock. */
#include <ktimer/ktimer.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t my_msec = 1000;  /* the server's cached clock */
static int fired;

static uint64_t read_my_clock(void *arg)
{
	(void)arg;
	return my_msec;
}

static void cb(struct kt_timer *t)
{
	(void)t;
	fired++;
}

int main(void)
{
	struct kt_base *base = kt_base_new(NULL);  /* monotonic, 16 ms */
	struct kt_timer t;
	uint32_t late;

	if (!base || kt_base_set_clock_source(base, read_my_clock, NULL) != 0)
		return EXIT_FAILURE;
	kt_timer_setup(&t, base, cb, 0);
	kt_mod_timer(&t, my_msec + 5000);
	late = kt_base_max_lateness(base, KT_MILLIS(5000));  /* as armed now */
	my_msec += 4999;
	kt_base_run(base);
	if (fired)
		return EXIT_FAILURE;  /* the source says 4,999 ms: not due */
	my_msec += 1 + late;
	kt_base_run(base);
	printf("fired %d time(s)\n", fired);
	kt_base_free(base);
	return fired == 1 ? EXIT_SUCCESS : EXIT_FAILURE;
}
