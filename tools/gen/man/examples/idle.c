/* Close a connection after 5 s without activity; activity costs one store. */
#include <ktimer/ktimer.h>
#include <stdio.h>
#include <stdlib.h>

struct conn {
	struct kt_idle idle;
	int open;
};

static void idle_out(struct kt_idle *idle)
{
	struct conn *c = kt_container_of(idle, struct conn, idle);

	printf("idle: closing\n");
	c->open = 0;
}

int main(void)
{
	struct kt_base_config cfg = { .resolution_ms = 16, .clock = KT_CLOCK_MANUAL };
	struct kt_base *base = kt_base_new(&cfg);
	struct conn c = { .open = 1 };
	int i;

	if (!base || kt_idle_setup(&c.idle, base, KT_MILLIS(5000), idle_out) != 0)
		return EXIT_FAILURE;
	kt_idle_start(&c.idle);
	for (i = 0; i < 10; i++) {  /* a request every second: stays open */
		kt_base_advance(base, KT_MILLIS(1000));
		kt_idle_touch(&c.idle);
	}
	if (!c.open)
		return EXIT_FAILURE;
	kt_base_advance(base, KT_MILLIS(6000));  /* silence */
	kt_base_free(base);
	return c.open ? EXIT_FAILURE : EXIT_SUCCESS;
}
