/* Kernel-style timer code, unchanged but for the include. */
#include <ktimer/ktimer.h>
#include <ktimer/linux.h>
#include <stdio.h>
#include <stdlib.h>

struct watchdog {
	struct timer_list timer;
	int barks;
};

static void bark(struct timer_list *t)
{
	struct watchdog *w = from_timer(w, t, timer);

	w->barks++;
	mod_timer(&w->timer, jiffies + HZ);  /* again in a second */
}

int main(void)
{
	struct kt_base_config cfg = { .resolution_ms = 1, .clock = KT_CLOCK_MANUAL };
	struct kt_base *base = kt_base_new(&cfg);
	struct watchdog w = { .barks = 0 };

	if (!base)
		return EXIT_FAILURE;
	kt_base_set_current(base);  /* the names act on this thread's base */
	timer_setup(&w.timer, bark, 0);
	mod_timer(&w.timer, jiffies + msecs_to_jiffies(500));
	kt_base_advance(base, KT_MILLIS(2600));  /* 500, 1500, 2500 ms */
	del_timer_sync(&w.timer);
	printf("%d barks\n", w.barks);
	kt_base_free(base);
	return w.barks == 3 ? EXIT_SUCCESS : EXIT_FAILURE;
}
