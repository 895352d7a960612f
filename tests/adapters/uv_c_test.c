// The libuv adapter's forms from C11, as its header documents them:
// kt_uv_init(loop, base) and kt_uv_close(loop), beside the embedded
// kt_uv_init(&ku, loop, base) / kt_uv_close(&ku, cb). Prints "N passed,
// N failed" and exits non-zero on a failure.
#include <ktimer/ktimer.h>
#include <ktimer/uv.h>

#include <errno.h>
#include <stdio.h>
#include <uv.h>

#include "tests/support/c_check.h"

static int fired;

static void on_timer(struct kt_timer *t)
{
	(void)t;
	fired++;
}

static int closed;

static void on_closed(struct kt_uv *ku)
{
	(void)ku;
	closed++;
}

int main(void)
{
	uv_loop_t loop;
	struct kt_base *b = kt_base_new(NULL);
	struct kt_timer t;
	struct kt_uv ku;

	uv_loop_init(&loop);
	/* Two arguments: the adapter is the library's. */
	CHECK(kt_uv_init(&loop, b) == 0);
	CHECK(kt_uv_of(&loop) != NULL);
	CHECK(kt_uv_init(&loop, b) == -EINVAL); /* one adapter per loop */
	kt_timer_setup(&t, b, on_timer, 0);
	kt_timer_arm(&t, KT_MILLIS(20));
	for (int i = 0; i < 100 && !fired; i++)
		uv_run(&loop, UV_RUN_ONCE);
	CHECK(fired == 1);
	CHECK(kt_uv_close(&loop) == 0);
	CHECK(kt_uv_close(&loop) == -EINVAL); /* already closing */
	uv_run(&loop, UV_RUN_DEFAULT);         /* the close callbacks free it */
	CHECK(kt_uv_of(&loop) == NULL);

	/* Three arguments: embedded, closed with a callback. */
	CHECK(kt_uv_init(&ku, &loop, b) == 0);
	CHECK(kt_uv_of(&loop) == &ku);
	CHECK(kt_uv_close(&ku, on_closed) == 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK(closed == 1);
	CHECK(kt_uv_close(NULL, NULL) == -EINVAL);

	CHECK(uv_loop_close(&loop) == 0);
	kt_base_free(b);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
