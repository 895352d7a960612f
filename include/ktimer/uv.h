/* SPDX-License-Identifier: MIT */
/*
 * ktimer/uv.h - a ktimer base driven by a libuv loop (//:ktimer_uv).
 *
 * Four handles on the caller's uv_loop_t make one ktimer turn per loop
 * iteration, in nginx's order (docs/API.md, "The worker loop"):
 *
 *	prepare  kt_base_prepare_wait(), then aim the uv_timer_t at the base's
 *	         next expiry (re-aimed before every poll, so a timer armed
 *	         earlier than the current aim anywhere in the iteration counts)
 *	poll     libuv waits: for I/O, for the uv_timer_t, or for the uv_async_t
 *	         that kt_remote_*() on other threads send while the loop waits;
 *	         your I/O callbacks run here
 *	check    kt_base_run(): queued cross-thread operations, then every ktimer
 *	         callback that is due
 *	closing  libuv's close callbacks, including those that ktimer callbacks
 *	         asked for with uv_close()
 *
 * So ktimer's callbacks run in libuv's check phase, after the iteration's
 * I/O callbacks. A ktimer callback may free any memory that holds no open
 * libuv handle - its own timer's container included - but a struct that
 * embeds a uv handle (a connection's uv_tcp_t) is freed in that handle's
 * close callback, never before: uv_close() only starts the close, and libuv
 * still touches the handle until the callback, which runs in the closing
 * phase of this same iteration. Delete the struct's other timers
 * (kt_timer_delete(), kt_remote_forget() if other threads arm them) before
 * the memory goes.
 *
 * The clock. The base keeps its own clock: CLOCK_MONOTONIC, read by the
 * base in nanoseconds. uv_now() counts the same clock in milliseconds, but
 * truncated, cached at the top of each iteration and - on kernels whose
 * coarse clock ticks at least every millisecond - read from
 * CLOCK_MONOTONIC_COARSE, up to a tick behind. Following it would make
 * ktimer's "never early" depend on libuv's caching and cost kt_hrtimer its
 * microseconds. Both count from the same origin, so the uv_timer_t is aimed
 * at an absolute millisecond (the deadline rounded up), and libuv's lag can
 * only make it fire later, never before ktimer's deadline.
 *
 * libuv offers no hook between its wait and the I/O callbacks that follow,
 * so during the poll phase the base's cached clock is still the one of the
 * previous check phase - before the wait, however long it was. Nor does
 * the base's clock move between a check phase and what runs after it: the
 * closing phase, the program's own code after uv_run(UV_RUN_NOWAIT) or
 * UV_RUN_ONCE returned, and the timer, pending and idle callbacks of the
 * next uv_run(), which libuv runs before its prepare phase. So a callback
 * of any phase that arms relative deadlines (kt_timer_arm()) or touches
 * idle trackers (kt_idle_touch()) calls kt_uv_update_time() first: the first
 * call after a wait reads the clock (kt_base_update_time()), later ones in
 * that poll phase are one flag test; from a check phase to the next
 * prepare phase - where time outside the loop may pass between two calls,
 * and no hook says when - every call reads it. A ktimer callback needs
 * none: it runs inside the turn, on the turn's clock.
 *
 * Precise timers (kt_hrtimer) ride on the millisecond uv_timer_t: never
 * early, up to a millisecond late. Prepare handles run newest first (libuv
 * inserts at the head): one started before kt_uv_init() runs after ktimer's
 * and should not arm ktimer timers, or the wait may not count them.
 *
 * Tear down: kt_uv_close(), let the loop run until its callback, then free
 * the struct kt_uv and, when no other thread uses it, the base.
 *
 * Closing from a callback. kt_uv_close() may be called from any callback
 * on the loop, a ktimer callback of the turn included (a shutdown timer):
 * the adapter stops driving the base at once, and libuv closes its handles
 * in the closing phase of that iteration. The struct kt_uv must stay valid
 * until the close callback; free it there. Every loop adapter follows this
 * rule (kt_epoll, kt_uring, kt_event: valid until the call running the turn
 * has returned).
 *
 * fork(). libuv's rule is that a child of fork() calls uv_loop_fork() on a
 * loop it goes on using: the loop, and the uv_async_t the adapter's waker
 * sends, get kernel objects of the child's own. The child then calls
 * kt_uv_fork(), which installs the waker on the base (kt_base_fork()). The
 * base keeps its timers; before kt_uv_fork() they fire in the child as
 * usual, but the inherited waker is never called, so other threads'
 * kt_remote_*() do not wake the child's loop (they are applied at its next
 * turn). A child that only calls exec() or exits needs nothing.
 */
#ifndef KTIMER_UV_H
#define KTIMER_UV_H

#include <stdint.h>
#include <uv.h>

#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kt_uv;

/** kt_uv_close_cb - the adapter's handles are closed; @ku may be freed. */
typedef void (*kt_uv_close_cb)(struct kt_uv *ku);

/**
 * struct kt_uv - a base on a libuv loop; embed it or allocate it.
 * @timer: aimed at the base's next expiry (the only handle libuv's poll
 *         timeout sees).
 * @prepare: plans the wait and aims @timer before each poll.
 * @check: runs the base after each poll.
 * @async: woken by producers on other threads (the base's waker).
 * @loop: the loop.
 * @base: the base.
 * @aimed_ms: the absolute millisecond (uv_now()'s clock) @timer is aimed
 *            at, UINT64_MAX while it is stopped.
 * @stale: 1 from each prepare phase until a kt_uv_update_time() reads the
 *         clock and clears it; 2 from kt_uv_init() and each check phase to
 *         the next prepare phase, where every kt_uv_update_time() reads it.
 * @closing: handles whose close callback is still to come.
 * @close_cb: what kt_uv_close() was given.
 * @turns: check-phase turns so far (libuv loop iterations).
 * @fired: ktimer callbacks run so far.
 * @aims: uv_timer_start() calls so far (aim changes).
 * @owned: allocated by kt_uv_open(), freed by kt_uv_close_loop().
 *
 * The fields are readable (the counters are for tests and statistics);
 * none is to be written.
 */
struct kt_uv {
	uv_timer_t timer;
	uv_prepare_t prepare;
	uv_check_t check;
	uv_async_t async;
	uv_loop_t *loop;
	struct kt_base *base;
	uint64_t aimed_ms;
	int stale;
	int closing;
	kt_uv_close_cb close_cb;
	uint64_t turns;
	uint64_t fired;
	uint64_t aims;
	int owned;
};

/**
 * kt_uv_init() - drive @base from @loop.
 * @ku: the adapter state to fill; it must stay put (libuv keeps pointers to
 *      its handles) until kt_uv_close()'s callback.
 * @loop: the loop; it runs on the thread that owns @base.
 * @base: the worker's base (monotonic clock); @ku becomes its waker.
 *
 * The handles are referenced: uv_run() keeps running while the adapter is
 * open, even with no timer pending (kt_uv_unref() changes that). Timers
 * armed before the first uv_run() are seen by its first prepare phase.
 *
 * Return: 0, -EINVAL for a NULL argument or a manual-clock base, or a libuv
 * error (a negative errno) from uv_async_init(); nothing is left open on
 * failure, and @ku (if not NULL) is marked as having no handles:
 * kt_uv_close() on it returns -EINVAL and touches no handle.
 */
int kt_uv_init(struct kt_uv *ku, uv_loop_t *loop, struct kt_base *base);

/**
 * kt_uv_open() - kt_uv_init() with the adapter allocated for you.
 * @loop: the loop.
 * @base: the worker's base.
 *
 * The two-argument form, kt_uv_init(@loop, @base), is this call: the state
 * is allocated (once, here) and freed by kt_uv_close(@loop) after its
 * handles are closed. kt_uv_of() finds it again.
 *
 * Return: 0, -EINVAL for a NULL argument or a loop that already has an
 * adapter, -ENOMEM, or a libuv error from uv_async_init().
 */
int kt_uv_open(uv_loop_t *loop, struct kt_base *base);

/**
 * kt_uv_of() - the adapter kt_uv_open() (or kt_uv_init()) put on @loop.
 * @loop: the loop.
 *
 * Return: the adapter, or NULL if @loop has none (or is NULL).
 */
struct kt_uv *kt_uv_of(uv_loop_t *loop);

/**
 * kt_uv_update_time() - read the clock at the start of a poll-phase callback.
 * @ku: the adapter.
 *
 * The first call after each wait refreshes the base's cached clock
 * (kt_base_update_time()); the others of that poll phase return at once.
 * From a check phase to the next prepare phase - the closing phase, the
 * program's own code between two uv_run() calls, the next uv_run()'s
 * timer, pending and idle callbacks - every call refreshes it (a vDSO
 * clock read and a gathering, tens of nanoseconds): time spent outside the
 * loop may come between any two of them. Call it at the top of any
 * callback - I/O, libuv timer, idle, close - that arms relative deadlines
 * or touches idle trackers, and in the program's own code between two
 * uv_run() calls before it arms.
 */
static inline void kt_uv_update_time(struct kt_uv *ku)
{
	if (ku->stale) {
		if (ku->stale == 1)
			ku->stale = 0;
		kt_base_update_time(ku->base);
	}
}

/**
 * kt_uv_fork() - let a child of fork() wake its loop from other threads.
 * @ku: the adapter, inherited across fork().
 *
 * Call it in the child after uv_loop_fork(@ku->loop) (libuv's own rule for
 * a child that goes on using a loop). It installs the adapter's waker on
 * the base (kt_base_fork()), whose inherited waker a child never calls.
 * The base keeps its timers, precise timers and queued operations. Calling
 * it in the parent, or again, does nothing.
 *
 * Return: 0, -EINVAL for NULL or an adapter that is closed or closing, or
 * -EBUSY for a base the child inherited in the middle of another thread's
 * turn, which it cannot use (kt_base_fork(): its timers never fire there).
 */
int kt_uv_fork(struct kt_uv *ku);

/**
 * kt_uv_unref() - let the loop end when only the adapter's handles remain.
 * @ku: the adapter.
 *
 * uv_unref() on all four handles: uv_run(UV_RUN_DEFAULT) returns once the
 * caller's own handles and requests are gone, even while ktimer timers are
 * pending (as for an unreferenced uv_timer_t: a pending timer does not keep
 * the loop alive). The adapter keeps working while the loop runs.
 */
void kt_uv_unref(struct kt_uv *ku);

/**
 * kt_uv_ref() - undo kt_uv_unref(): the adapter keeps the loop alive.
 * @ku: the adapter.
 */
void kt_uv_ref(struct kt_uv *ku);

/**
 * kt_uv_close() - stop driving the base and close the adapter's handles.
 * @ku: the adapter.
 * @cb: called from the loop once all four handles are closed (@ku may be
 *      freed from it), or NULL.
 *
 * First removes the base's waker, waiting for any producer thread that is
 * inside it (kt_base_set_waker()): after that no thread touches @ku->async.
 * Pending timers stay pending on the base, which stays the caller's; they
 * no longer fire unless the base gets another driver. May be called from
 * any callback on the loop, a ktimer callback included: the turn that runs
 * it touches nothing of the adapter's but @ku after it.
 *
 * Return: 0, or -EINVAL (nothing done, @cb not called) if @ku is NULL, a
 * zero-filled struct never initialized, one whose kt_uv_init() failed, or
 * one already closing or closed.
 */
int kt_uv_close(struct kt_uv *ku, kt_uv_close_cb cb);

/**
 * kt_uv_close_loop() - kt_uv_close() for the adapter on @loop.
 * @loop: the loop.
 *
 * The one-argument form, kt_uv_close(@loop). An adapter kt_uv_open()
 * allocated is freed once its handles are closed (run the loop until then,
 * e.g. uv_run(loop, UV_RUN_DEFAULT) before uv_loop_close()).
 *
 * Return: 0, or -EINVAL if @loop has no adapter or it is already closing.
 */
int kt_uv_close_loop(uv_loop_t *loop);

#ifdef __cplusplus
} /* extern "C" */

/*
 * The short forms, as overloads: kt_uv_init(loop, base) is kt_uv_open(),
 * kt_uv_close(loop) is kt_uv_close_loop(), kt_uv_close(ku) passes no
 * callback. Any other argument count or type does not compile.
 */
static inline int kt_uv_init(uv_loop_t *loop, struct kt_base *base) { return kt_uv_open(loop, base); }
static inline int kt_uv_close(uv_loop_t *loop) { return kt_uv_close_loop(loop); }
static inline int kt_uv_close(struct kt_uv *ku) { return kt_uv_close(ku, nullptr); }
#else
/*
 * The short forms in C: kt_uv_init(ku, loop, base) or kt_uv_init(loop,
 * base); kt_uv_close(ku, cb), kt_uv_close(ku) or kt_uv_close(loop). The
 * argument count picks the function, and every argument must have the
 * parameter's type (or be NULL, a void *): a wrong type or count is a
 * compile error, not a warning, as C++'s overloads make it: a "_Generic"
 * selector that matches no association, whose expansion names the argument
 * of the wrong type, or kt_uv_init_takes_2_or_3_arguments
 * (kt_uv_close_takes_1_or_2_arguments) for a wrong count.
 */
static inline int kt__uv_close_no_cb(struct kt_uv *ku) { return (kt_uv_close)(ku, 0); }
#define KT__UV_NARGS(...) KT__UV_NARGS_(__VA_ARGS__, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define KT__UV_NARGS_(a1, a2, a3, a4, a5, a6, a7, a8, a9, n, ...) n
#define KT__UV_CAT(a, b) KT__UV_CAT_(a, b)
#define KT__UV_CAT_(a, b) a##b
/* @x, which must be a T (or a void *, such as NULL). */
#define KT__UV_ARG(x, T) _Generic((x), T: (x), void *: (x))
/* A count no form takes: a _Generic that matches nothing. */
#define KT__UV_WRONG_COUNT(what) _Generic(0, struct what *: 0)

#define kt_uv_init(...) KT__UV_CAT(KT__UV_INIT_, KT__UV_NARGS(__VA_ARGS__))(__VA_ARGS__)
#define KT__UV_INIT_3(ku, loop, base)                                                                        \
	(kt_uv_init)(KT__UV_ARG(ku, struct kt_uv *), KT__UV_ARG(loop, uv_loop_t *), KT__UV_ARG(base, struct kt_base *))
#define KT__UV_INIT_2(loop, base) kt_uv_open(KT__UV_ARG(loop, uv_loop_t *), KT__UV_ARG(base, struct kt_base *))
#define KT__UV_INIT_1(...) KT__UV_WRONG_COUNT(kt_uv_init_takes_2_or_3_arguments)
#define KT__UV_INIT_4(...) KT__UV_INIT_1()
#define KT__UV_INIT_5(...) KT__UV_INIT_1()
#define KT__UV_INIT_6(...) KT__UV_INIT_1()
#define KT__UV_INIT_7(...) KT__UV_INIT_1()
#define KT__UV_INIT_8(...) KT__UV_INIT_1()
#define KT__UV_INIT_9(...) KT__UV_INIT_1()

#define kt_uv_close(...) KT__UV_CAT(KT__UV_CLOSE_, KT__UV_NARGS(__VA_ARGS__))(__VA_ARGS__)
#define KT__UV_CLOSE_2(ku, cb) (kt_uv_close)(KT__UV_ARG(ku, struct kt_uv *), KT__UV_ARG(cb, kt_uv_close_cb))
/* One argument: the loop's adapter, or the adapter itself (no callback). */
#define KT__UV_CLOSE_1(x)                                                                                    \
	_Generic((x), uv_loop_t *: kt_uv_close_loop, struct kt_uv *: kt__uv_close_no_cb, void *: kt__uv_close_no_cb)(x)
#define KT__UV_CLOSE_3(...) KT__UV_WRONG_COUNT(kt_uv_close_takes_1_or_2_arguments)
#define KT__UV_CLOSE_4(...) KT__UV_CLOSE_3()
#define KT__UV_CLOSE_5(...) KT__UV_CLOSE_3()
#define KT__UV_CLOSE_6(...) KT__UV_CLOSE_3()
#define KT__UV_CLOSE_7(...) KT__UV_CLOSE_3()
#define KT__UV_CLOSE_8(...) KT__UV_CLOSE_3()
#define KT__UV_CLOSE_9(...) KT__UV_CLOSE_3()
#endif

#endif /* KTIMER_UV_H */
