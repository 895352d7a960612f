/* A periodic tick on the wheel, and a precise timer 1.5 ms ahead. */
#include <ktimer/ktimer.h>
#include <stdio.h>
#include <stdlib.h>

static int ticks, precise;

static void tick(struct kt_interval *iv, uint64_t due)
{
	(void)iv;
	printf("tick due at %llu ms\n", (unsigned long long)due);
	ticks++;
}

static void pace(struct kt_hrtimer *t)
{
	printf("precise timer at %llu ns\n", (unsigned long long)kt_hrtimer_expires(t));
	precise++;
}

int main(void)
{
	struct kt_base_config cfg = { .resolution_ms = 1, .clock = KT_CLOCK_MANUAL };
	struct kt_base *base = kt_base_new(&cfg);
	struct kt_interval iv;
	struct kt_hrtimer hr;

	if (!base)
		return EXIT_FAILURE;
	if (kt_interval_setup(&iv, base, KT_MILLIS(100), tick) != 0 ||
	    kt_hrtimer_setup(&hr, base, pace) != 0)
		return EXIT_FAILURE;
	kt_interval_start(&iv);                                 /* ticks at 0, 100, 200, ... */
	kt_hrtimer_start(&hr, kt_base_now_ns(base) + 1500000);  /* 1.5 ms */
	kt_base_advance(base, KT_MILLIS(350));
	kt_interval_stop(&iv);
	kt_base_free(base);
	return ticks == 4 && precise == 1 ? EXIT_SUCCESS : EXIT_FAILURE;
}
