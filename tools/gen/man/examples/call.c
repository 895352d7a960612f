/* One-shot calls: one runs, one is cancelled before its time. */
#include <ktimer/ktimer.h>
#include <stdio.h>
#include <stdlib.h>

static int ran;

static void hello(void *arg)
{
	printf("%s\n", (const char *)arg);
	ran++;
}

int main(void)
{
	struct kt_base_config cfg = { .resolution_ms = 1, .clock = KT_CLOCK_MANUAL };
	struct kt_base *base = kt_base_new(&cfg);
	struct kt_call a, b;

	if (!base)
		return EXIT_FAILURE;
	a = kt_call_after(base, KT_MILLIS(200), hello, "200 ms later");
	b = kt_call_after(base, KT_MILLIS(300), hello, "never printed");
	if (kt_call_failed(a) || kt_call_failed(b)) {
		perror("kt_call_after");
		return EXIT_FAILURE;
	}
	kt_base_advance(base, KT_MILLIS(250));
	if (kt_call_cancel(b) != 1 || kt_call_cancel(a) != 0)
		return EXIT_FAILURE;  /* a ran already: cancelling it does nothing */
	kt_base_advance(base, KT_MILLIS(1000));
	kt_base_free(base);
	return ran == 1 ? EXIT_SUCCESS : EXIT_FAILURE;
}
