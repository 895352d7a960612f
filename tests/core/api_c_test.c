// The public contract compiled as C11: includes only <ktimer/ktimer.h>.
// Plain C (no googletest): prints "N passed, N failed" and exits non-zero on
// any failure.
#include <ktimer/ktimer.h>

#include <errno.h>
#include <stdio.h>
#include <time.h>

#include "tests/support/c_check.h"

struct conn {
	int fd;
	int fired;
	uint64_t fired_at;
	struct kt_timer read_deadline;
	struct kt_timer idle;
};

static void on_read_deadline(struct kt_timer *t)
{
	struct conn *c = kt_from_timer(c, t, read_deadline);

	c->fired++;
	c->fired_at = kt_base_now(kt_base_current());
}

static void on_idle(struct kt_timer *t)
{
	struct conn *c = kt_container_of(t, struct conn, idle);

	c->fired += 100;
}

static const kt_millis kConnectTimeout = {5000};

int main(void)
{
	struct kt_base_config cfg = {16, KT_CLOCK_MANUAL, 0};
	struct kt_base *b = kt_base_new(&cfg);
	struct conn c = {.fd = 3};
	struct timespec ts = {1, 500000};

	CHECK(b != NULL);
	kt_base_set_current(b);
	CHECK(kt_timer_setup(&c.read_deadline, b, on_read_deadline, 0) == 0);
	CHECK(kt_timer_setup(&c.idle, b, on_idle, KT_TIMER_DEFERRABLE) == 0);

	/* _Generic conversions */
	CHECK(kt_to_millis(KT_SECONDS(2)).ms == 2000);
	CHECK(kt_to_millis(KT_MILLIS(7)).ms == 7);
	CHECK(kt_to_millis(ts).ms == 1001);
	CHECK(kConnectTimeout.ms == 5000);

	CHECK(kt_timer_arm(&c.read_deadline, KT_MILLIS(100)) == 0);
	CHECK(kt_timer_arm(&c.idle, kt_millis_from_seconds(KT_SECONDS(30))) == 0);
	CHECK(kt_base_pending_count(b) == 2);
	CHECK(kt_base_next_timeout(b) == 112);
	CHECK(kt_base_advance(b, KT_MILLIS(200)) == 1);
	CHECK(c.fired == 1);
	CHECK(c.fired_at == 112);
	CHECK(!kt_timer_pending(&c.read_deadline));
	CHECK(kt_base_next_timeout(b) == -1); /* only the deferrable one is left */
	CHECK(kt_timer_delete(&c.idle) == 1);
	CHECK(kt_base_check(b) == 0);

	CHECK(kt_base_new(&(struct kt_base_config){3, KT_CLOCK_MANUAL, 0}) == NULL && errno == EINVAL);

	kt_base_free(b);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
