// SPDX-License-Identifier: MIT
/*
 * tools/trace/arm_target.c - a known sequence of arms, re-arms and cancels,
 * for the test of the per-operation probes (tools/check/trace_test).
 *
 *   arm_target [N]
 *
 * Prints "ready PID", waits for a line on stdin (a tracer attaches by PID
 * meanwhile), then makes its calls on two bases with manual clocks, N wheel
 * timers (default 100) and N precise timers: arms of idle timers (plain and
 * KT_TIMER_LAZY), re-arms to another expiry in the same bucket and in
 * another, re-arms to the expiry the timer has (which do nothing,
 * kt_mod_timer(3)) on the fast path and on the other base's path,
 * kt_timer_reduce() to a later expiry, kt_add_timer() of a pending timer
 * and kt_mod_timer() of a shut-down one (refused), remote arms due at once
 * and remote re-arms to the same expiry (applied by kt_base_run()), deletes
 * of pending and of idle timers, and starts, restarts (to the same deadline
 * too) and cancels of precise timers. Then it prints
 *
 *   calls C arms A noops S refused R remote M cancels D hr_arms H hr_cancels X
 *
 * C wheel calls that may arm, of which A changed the timer: an idle timer
 * armed, or a pending one given another expiry (what ktimer:arm reports),
 * S changed nothing and R were refused; M of the A were applied from the
 * remote queue; D deletes of a pending timer (ktimer:cancel); H precise
 * starts that succeeded (ktimer:hr_arm: a restart to the same deadline
 * moves the timer behind the others due then); X cancels of a pending
 * precise timer (ktimer:hr_cancel). Each is decided from what the public
 * API says before and after the call, not from the library's internals.
 * It exits at the next line on stdin, or at its end.
 */
#include <ktimer/ktimer.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static unsigned long calls, arms, noops, refused, remote, cancels, hr_arms, hr_cancels;

static void on_wheel(struct kt_timer *t) { (void)t; }

static void on_precise(struct kt_hrtimer *t) { (void)t; }

/* One call that may arm @t, made by @call; counted by what it changed. */
#define ARM_CALL(t, call)                                                                          \
	do {                                                                                       \
		int was_ = kt_timer_pending(t);                                                    \
		uint64_t old_ = kt_timer_expires(t);                                               \
		int r_ = (call);                                                                   \
		calls++;                                                                           \
		if (r_ < 0)                                                                        \
			refused++;                                                                 \
		else if (!was_ ? kt_timer_pending(t) : kt_timer_expires(t) != old_)                \
			arms++;                                                                    \
		else                                                                               \
			noops++;                                                                   \
	} while (0)

/* What a remote operation found, to be judged when it is applied. */
struct before {
	int was;
	uint64_t old;
};

static void remote_done(struct kt_timer *t, int result, void *arg)
{
	const struct before *b = arg;

	calls++;
	if (result < 0)
		refused++;
	else if (!b->was || kt_timer_expires(t) != b->old)
		arms++, remote++;
	else
		noops++;
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 100;
	struct kt_base_config cfg = {1, KT_CLOCK_MANUAL, 1000000};
	struct kt_base *a = kt_base_new(&cfg), *other = kt_base_new(&cfg);
	struct kt_timer *w = calloc(n ? n : 1, sizeof(*w)), *o = calloc(n ? n : 1, sizeof(*o));
	struct kt_hrtimer *h = calloc(n ? n : 1, sizeof(*h));
	struct before *rb = calloc(n ? n : 1, sizeof(*rb));
	struct kt_timer never_set = {0}, down = {0};
	struct kt_hrtimer hr_never_set = {0};
	char line[16];

	if (!a || !other || !w || !o || !h || !rb) {
		fprintf(stderr, "arm_target: out of memory\n");
		return 1;
	}
	printf("ready %ld\n", (long)getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	/* @a is the thread's hot base (it ran the last turn): its timers take
	 * the fast path; @other's take the general one. */
	kt_base_advance(other, KT_MILLIS(1));
	kt_base_advance(a, KT_MILLIS(1));
	for (size_t i = 0; i < n; i++) {
		uint64_t e;

		kt_timer_setup(&w[i], a, on_wheel, i % 4 == 3 ? KT_TIMER_LAZY : 0);
		kt_timer_setup(&o[i], other, on_wheel, 0);
		ARM_CALL(&w[i], kt_timer_arm(&w[i], KT_MILLIS(2000 + i)));
		ARM_CALL(&o[i], kt_timer_arm(&o[i], KT_MILLIS(2000 + i)));
		e = kt_timer_expires(&w[i]);
		ARM_CALL(&w[i], kt_mod_timer(&w[i], e));     /* the expiry it has */
		ARM_CALL(&w[i], kt_mod_timer(&w[i], e + 1)); /* the same bucket (1,024 ms wide here) */
		ARM_CALL(&w[i], kt_mod_timer(&w[i], e + 1));
		ARM_CALL(&w[i], kt_timer_reduce(&w[i], e + 50)); /* later: nothing */
		ARM_CALL(&w[i], kt_add_timer(&w[i], e));         /* pending: -EBUSY */
		ARM_CALL(&w[i], kt_mod_timer(&w[i], e + 60000)); /* another level (lazy: only stored) */
		ARM_CALL(&w[i], kt_timer_reduce(&w[i], e));      /* earlier: moves */
		e = kt_timer_expires(&o[i]);
		ARM_CALL(&o[i], kt_mod_timer(&o[i], e)); /* the general path, the expiry it has */
		ARM_CALL(&o[i], kt_mod_timer(&o[i], e + 7));
		ARM_CALL(&o[i], kt_mod_timer(&o[i], e + 7));
	}
	/* Cancels: half the timers, then once more (idle: nothing). */
	for (size_t i = 0; i < n; i += 2) {
		cancels += kt_timer_delete(&w[i]) == 1;
		cancels += kt_timer_delete(&w[i]) == 1;
		ARM_CALL(&w[i], kt_mod_timer_pending(&w[i], 5)); /* idle: stays idle, no arm */
	}
	/* Refused: a timer never set up, one shut down. */
	ARM_CALL(&never_set, kt_mod_timer(&never_set, 5));
	kt_timer_setup(&down, a, on_wheel, 0);
	ARM_CALL(&down, kt_timer_arm(&down, KT_MILLIS(10)));
	cancels += kt_timer_shutdown(&down) == 1;
	ARM_CALL(&down, kt_mod_timer(&down, kt_base_now(a) + 10));
	ARM_CALL(&down, kt_timer_arm(&down, KT_MILLIS(10)));
	/* Remote: "fire now" for the idle half (due at once: into the turn's
	 * own batch), and for the pending half a re-arm to the expiry it has
	 * or to one already due (also into the batch). */
	for (size_t i = 0; i < n; i++) {
		rb[i].was = kt_timer_pending(&w[i]);
		rb[i].old = kt_timer_expires(&w[i]);
		if (!rb[i].was)
			kt_remote_arm(&w[i], KT_MILLIS(0), remote_done, &rb[i]);
		else if (i % 4 == 1)
			kt_remote_mod(&w[i], rb[i].old, remote_done, &rb[i]);
		else
			kt_remote_mod(&w[i], kt_base_now(a) - 1, remote_done, &rb[i]);
	}
	kt_base_run(a);
	/* Precise: start, restart to the same deadline, to another, cancel. */
	for (size_t i = 0; i < n; i++) {
		uint64_t d = kt_base_now_ns(a) + (1 + i) * UINT64_C(1000000);

		kt_hrtimer_setup(&h[i], a, on_precise);
		hr_arms += kt_hrtimer_start(&h[i], d) >= 0;
		hr_arms += kt_hrtimer_start(&h[i], d) >= 0;
		hr_arms += kt_hrtimer_start(&h[i], d + 5) >= 0;
		if (i % 2) {
			hr_cancels += kt_hrtimer_cancel(&h[i]) == 1;
			hr_cancels += kt_hrtimer_cancel(&h[i]) == 1;
		}
	}
	hr_arms += kt_hrtimer_start(&hr_never_set, 5) >= 0;
	/* Everything left fires: no more calls. */
	while (kt_base_pending_count(a) || kt_base_pending_count(other)) {
		kt_base_advance(a, KT_MILLIS(1000));
		kt_base_advance(other, KT_MILLIS(1000));
	}
	printf("calls %lu arms %lu noops %lu refused %lu remote %lu cancels %lu hr_arms %lu hr_cancels %lu\n", calls,
	       arms, noops, refused, remote, cancels, hr_arms, hr_cancels);
	fflush(stdout);
	(void)fgets(line, sizeof(line), stdin);
	kt_base_free(a);
	kt_base_free(other);
	free(w);
	free(o);
	free(h);
	free(rb);
	return 0;
}
