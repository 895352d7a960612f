/* A connection with a read deadline, pushed back by activity, on a base
 * whose manual clock the program moves itself (as a test would). */
#include <ktimer/ktimer.h>
#include <stdio.h>
#include <stdlib.h>

struct conn {
	int id;
	struct kt_base *base;
	struct kt_timer read_deadline;
};

static int closed;

static void read_timeout(struct kt_timer *t)
{
	struct conn *c = kt_from_timer(c, t, read_deadline);

	printf("conn %d: read timeout at %llu ms\n", c->id,
	       (unsigned long long)kt_base_now(c->base));
	closed = c->id;
}

int main(void)
{
	struct kt_base_config cfg = { .resolution_ms = 1, .clock = KT_CLOCK_MANUAL };
	struct conn c = { .id = 7 };
	uint32_t late;

	c.base = kt_base_new(&cfg);
	if (!c.base) {
		perror("kt_base_new");
		return EXIT_FAILURE;
	}
	printf("ktimer %s\n", kt_version_string());
	kt_timer_setup(&c.read_deadline, c.base, read_timeout, 0);
	kt_timer_arm(&c.read_deadline, KT_MILLIS(100));  /* due at 100 ms */
	kt_base_advance(c.base, KT_MILLIS(60));          /* data arrives ... */
	kt_timer_arm(&c.read_deadline, KT_MILLIS(100));  /* ... pushed back: 160 */
	late = kt_base_max_lateness(c.base, KT_MILLIS(100));
	kt_base_advance(c.base, KT_MILLIS(99));
	if (closed || !kt_timer_pending(&c.read_deadline))
		return EXIT_FAILURE;                     /* never early */
	kt_base_advance(c.base, KT_MILLIS(1 + late));      /* at most this late */
	if (closed != 7)
		return EXIT_FAILURE;
	kt_base_free(c.base);
	return EXIT_SUCCESS;
}
