/* SPDX-License-Identifier: MIT */
/*
 * ktimer/linux.h - the Linux kernel's timer names, for porting kernel code.
 *
 * Opt-in (not included by <ktimer/ktimer.h>): these names are short and
 * generic, and a program may already use them. They act on the calling
 * thread's base (kt_base_set_current()). Time is the base's cached
 * milliseconds, so jiffies are milliseconds and HZ is 1000.
 *
 * jiffies is an unsigned long, as in the kernel: on a 32-bit target it
 * wraps every 49.7 days, and time_after() and the timer calls work across
 * the wrap as the kernel's do (an expiry is taken relative to jiffies
 * now). A program defining KT_LINUX_INITIAL_JIFFIES starts jiffies five
 * minutes before that wrap, as the kernel does, so code that mishandles it
 * fails at once.
 *
 * jiffies is cached: it is the base's clock as of its last turn
 * (kt_base_run(), kt_base_update_time()), not a live counter the way the
 * kernel's timer interrupt keeps it. A loop that waits for it to move -
 * while (time_before(jiffies, end)) cpu_relax(); - never ends, because
 * nothing moves it while the loop runs. Wait by arming a timer and
 * returning to the worker loop instead.
 *
 * Not provided: timer_delete(). POSIX <time.h> already declares
 * timer_delete(timer_t) for its per-process interval timers; a macro of that
 * name would break any file that also uses POSIX timers. Use del_timer().
 */
#ifndef KTIMER_LINUX_H
#define KTIMER_LINUX_H

#include "ktimer.h"

/*
 * <sys/param.h> defines HZ too (100, the kernel's USER_HZ for times()), only
 * if it is not defined yet. Replace it rather than keep it: jiffies here are
 * milliseconds, so jiffies + HZ must be one second whichever was included
 * first. (No other name below is defined by a system header.)
 */
#undef HZ
#define HZ 1000

/* struct timer_list is struct kt_timer. */
#define timer_list kt_timer

/*
 * Inline functions rather than casts in the macros: the macros expand in
 * the user's code, which may be C++ built with -Wold-style-cast.
 */
static inline uint64_t kt__linux_u64(uint64_t x) { return x; }
static inline unsigned long kt__linux_ul(unsigned long x) { return x; }
/* The signed difference a - b, as the kernel takes it: modulo 2^N into long. */
static inline long kt__linux_diff(unsigned long a, unsigned long b)
{
	unsigned long d = a - b;
	/* Each conversion is of a value that fits: no cast, no overflow. */
	long lo = d & (~0UL >> 1), neg = ~d & (~0UL >> 1);

	return d > (~0UL >> 1) ? -neg - 1 : lo;
}
static inline int64_t kt__linux_diff64(uint64_t a, uint64_t b)
{
	uint64_t d = a - b;
	int64_t lo = d & (UINT64_MAX >> 1), neg = ~d & (UINT64_MAX >> 1);

	return d > (UINT64_MAX >> 1) ? -neg - 1 : lo;
}

/*
 * Where jiffies starts, as in the kernel: five minutes (300,000 jiffies)
 * before a 32-bit counter wraps, 2^32 - 300000. The kernel starts there so
 * that code mishandling the wrap fails at once, not after 49.7 days of
 * uptime. Here jiffies starts there only in a file that defines
 * KT_LINUX_INITIAL_JIFFIES before including this header (best on the
 * compiler's command line, so that every file of a program agrees): then
 * jiffies is the base's clock plus INITIAL_JIFFIES. Without it, jiffies is
 * the base's clock itself. A test on the manual clock can also start the
 * clock near the wrap (kt_base_config's start_ms).
 */
#define INITIAL_JIFFIES 0xfffb6c20UL

/*
 * The calling thread's base's cached clock in ms (kt_base_now() of
 * kt_base_current()), plus INITIAL_JIFFIES where KT_LINUX_INITIAL_JIFFIES
 * is defined: a jiffy is a millisecond here. Read from a thread without a
 * current base (kt_base_set_current()) it dereferences nothing and gives 0
 * (INITIAL_JIFFIES with the macro). Return: the 64-bit jiffies count.
 */
static inline uint64_t kt__linux_jiffies64(void)
{
#ifdef KT_LINUX_INITIAL_JIFFIES
	return kt_base_now(kt_base_current()) + INITIAL_JIFFIES;
#else
	return kt_base_now(kt_base_current());
#endif
}
#define get_jiffies_64() kt__linux_jiffies64()
/*
 * get_jiffies_64() as the kernel's jiffies is: an unsigned long, so on a
 * 32-bit target (ILP32) its low 32 bits, which wrap every 49.7 days, as a
 * 32-bit kernel's do. Kernel code that keeps jiffies in unsigned long and
 * compares them with time_after() works across that wrap, as it does in
 * the kernel.
 */
#define jiffies (kt__linux_ul(kt__linux_jiffies64()))
/*
 * The kernel's "infinite timeout", (LONG_MAX >> 1) - 1: 2^62 - 2 on LP64,
 * 2^30 - 2 (12.4 days) on ILP32. What msecs_to_jiffies(),
 * usecs_to_jiffies() and secs_to_jiffies() return for a negative or too
 * large value. jiffies + MAX_JIFFY_OFFSET is still after jiffies; an
 * unclamped -1 would wrap to jiffies - 1 and fire at once.
 */
#define MAX_JIFFY_OFFSET ((~0UL >> 2) - 1)
/* The conversions below; a negative value arrives as 2^64 - |x|. */
static inline unsigned long kt__linux_ms(uint64_t ms)
{
	return ms > 0x7fffffffu || ms > MAX_JIFFY_OFFSET ? MAX_JIFFY_OFFSET : kt__linux_ul(ms);
}
static inline unsigned long kt__linux_usecs(uint64_t u)
{
	return u > (UINT64_MAX >> 1) ? MAX_JIFFY_OFFSET : kt__linux_ms(u / 1000 + (u % 1000 != 0));
}
static inline unsigned long kt__linux_secs(uint64_t s)
{
	return s > (UINT64_MAX >> 1) || s > 0x7fffffffu / HZ ? MAX_JIFFY_OFFSET : kt__linux_ms(s * HZ);
}
/*
 * One rule for all three: a duration of 2^31 ms (24.8 days) or more, one
 * past MAX_JIFFY_OFFSET (on ILP32, 2^30 - 2 ms), or a negative one, is
 * MAX_JIFFY_OFFSET: an infinite timeout, never a finite expiry, nor one in
 * the past. The kernel's msecs_to_jiffies() takes an unsigned int and reads
 * every value from 2^31 up as a negative int; the same here for any
 * argument type and for each unit, so kernel code passing (unsigned)-1, -1
 * or a huge value for "forever" gets forever (the kernel's own
 * secs_to_jiffies() does not clamp; this one does). usecs_to_jiffies() rounds up
 * to whole milliseconds first, as the kernel does: a timeout never shrinks.
 *
 * Return: the duration in jiffies (milliseconds), or MAX_JIFFY_OFFSET.
 */
#define msecs_to_jiffies(m) kt__linux_ms(kt__linux_u64(m))
#define usecs_to_jiffies(u) kt__linux_usecs(kt__linux_u64(u))
#define secs_to_jiffies(s) kt__linux_secs(kt__linux_u64(s))
/* The identity: a jiffy is a millisecond. Return: @j as unsigned long. */
#define jiffies_to_msecs(j) kt__linux_ul(j)

/*
 * Wrap-safe comparisons, as in <linux/jiffies.h>: on unsigned long, by the
 * sign of the difference taken in long, so on ILP32 a time up to 2^31 - 1
 * jiffies (24.8 days) after another compares after it across the 32-bit
 * wrap. The *64 forms do the same on 64-bit values (get_jiffies_64()).
 */
#define time_after(a, b) (kt__linux_diff((b), (a)) < 0)
#define time_before(a, b) time_after(b, a)
#define time_after_eq(a, b) (kt__linux_diff((a), (b)) >= 0)
#define time_before_eq(a, b) time_after_eq(b, a)
#define time_after64(a, b) (kt__linux_diff64((b), (a)) < 0)
#define time_before64(a, b) time_after64(b, a)
#define time_after_eq64(a, b) (kt__linux_diff64((a), (b)) >= 0)
#define time_before_eq64(a, b) time_after_eq64(b, a)

/*
 * An expiry in jiffies as the base's clock: the timer fires
 * kt__linux_diff(expires, jiffies) ms after the base's now, so jiffies + d
 * means d from now across the 32-bit wrap, and an expiry not after jiffies
 * comes due at once (at the base's next turn), as in the kernel.
 */
static inline uint64_t kt__linux_expires(unsigned long expires)
{
	long d = kt__linux_diff(expires, jiffies);

	return kt_base_now(kt_base_current()) + (d > 0 ? kt__linux_u64(kt__linux_ul(d)) : 0);
}

/*
 * round_jiffies() and friends: an expiry rounded to a whole second, so that
 * timers which need no precision come due together (one wake-up instead of
 * many). As the kernel's, without its per-CPU skew: round_jiffies(j)
 * rounds the absolute time @j to the nearest whole second - down only if
 * that is less than a quarter second away, else up; round_jiffies_up(j)
 * always rounds up; round_jiffies_relative(j) and
 * round_jiffies_up_relative(j) do the same for a delay @j from now.
 *
 * Return: the rounded time (the rounded delay for the _relative forms), or
 * @j unchanged if the rounded time is not after jiffies.
 */
static inline unsigned long kt__linux_round(unsigned long j, int force_up)
{
	unsigned long rem = j % HZ, r = j - rem;

	if (force_up || rem >= HZ / 4)
		r += HZ;
	return time_after(r, jiffies) ? r : j;
}
#define round_jiffies(j) kt__linux_round((j), 0)
#define round_jiffies_up(j) kt__linux_round((j), 1)
#define round_jiffies_relative(j) (kt__linux_round(kt__linux_ul(j) + jiffies, 0) - jiffies)
#define round_jiffies_up_relative(j) (kt__linux_round(kt__linux_ul(j) + jiffies, 1) - jiffies)

/* A timer that does not wake an idle worker: KT_TIMER_DEFERRABLE. */
#define TIMER_DEFERRABLE KT_TIMER_DEFERRABLE

/*
 * Set a timer up on the calling thread's base (kt_base_current()), with
 * kt_timer_setup()'s flags. Return: as kt_timer_setup(): 0; -EBUSY if the
 * timer is pending on that base; -EINVAL if the thread has no current
 * base, @fn is NULL or @flags has unknown bits.
 */
#define timer_setup(t, fn, flags) kt_timer_setup((t), kt_base_current(), (fn), (flags))
/* On the stack: the same here (the kernel's variant exists for its object debugging). */
#define timer_setup_on_stack(t, fn, flags) timer_setup((t), (fn), (flags))
/*
 * Before the frame goes: the kernel requires the timer inactive already and
 * only drops its debug object; this also deletes it, so a forgotten
 * del_timer_sync() cannot leave a dangling node on the wheel. Returns
 * nothing, as the kernel's.
 */
static inline void kt__linux_destroy_on_stack(struct kt_timer *t) { kt_timer_delete(t); }
#define destroy_timer_on_stack(t) kt__linux_destroy_on_stack(t)

/*
 * DEFINE_TIMER(name, fn): a timer defined with its callback and no base
 * yet (the kernel's are defined at file scope, before any thread runs). It
 * is bound to the calling thread's base (kt_base_current()) the first time
 * add_timer(), mod_timer(), mod_timer_pending() or timer_reduce() is called
 * on it; it stays on that base. Only these names bind it: kt_ calls that arm
 * it return -EINVAL until then. Once bound it is a timer like any other: if
 * its base is freed, arming it (through these names too) returns -EINVAL
 * until timer_setup() binds it again.
 */
#ifdef __cplusplus
#define DEFINE_TIMER(_name, _function) struct kt_timer _name = {nullptr, nullptr, 0, 0, (_function), nullptr}
#else
#define DEFINE_TIMER(_name, _function) struct kt_timer _name = {NULL, NULL, 0, 0, (_function), NULL}
#endif
static inline struct kt_timer *kt__linux_bind(struct kt_timer *t)
{
	/*
	 * Only a DEFINE_TIMER() never bound: a callback, no base, no state.
	 * A timer whose base was freed has no base either, but kt_base_free()
	 * leaves a private flag on it, so it is not bound here: arming it
	 * returns -EINVAL until timer_setup() (as kt_mod_timer() does).
	 */
	if (t && !t->kt__base && t->kt__fn && !t->kt__word && !t->kt__pprev && kt_base_current())
		kt_timer_setup(t, kt_base_current(), t->kt__fn, 0);
	return t;
}

/*
 * The kernel sets timer->expires and then calls add_timer(timer). The node's
 * fields are private here, so the expiry is add_timer()'s second argument.
 * In add_timer(), mod_timer(), mod_timer_pending() and timer_reduce() the
 * expiry is in jiffies, taken relative to jiffies now: jiffies + d fires d
 * ms from now (across the 32-bit wrap too), an expiry not after jiffies
 * fires at the base's next turn. (The kt_ calls take the base's clock,
 * kt_base_now(), which is not jiffies where KT_LINUX_INITIAL_JIFFIES is
 * defined or unsigned long is 32 bits wide.)
 */
/*
 * On a shut-down timer (timer_shutdown()) the kernel's add_timer() does
 * nothing, silently (it returns void); here it does nothing and returns 0,
 * as mod_timer() below does, not kt_add_timer()'s -ESHUTDOWN. On a pending
 * timer (a bug the kernel warns about) it changes nothing and returns
 * -EBUSY; on a timer never set up, or whose base was freed, -EINVAL.
 */
#define add_timer(t, expires) kt__linux_ret(kt_add_timer(kt__linux_bind(t), kt__linux_expires(expires)))

/*
 * The kernel's mod_timer(), mod_timer_pending() and timer_reduce() return 0
 * or 1, and on a shut-down timer they silently do nothing and return 0.
 * kt_ calls say -ESHUTDOWN there; a negative value is truthy and would invert
 * idioms like `if (!mod_timer(t, e)) get_ref()`, so these map it to 0.
 * -EINVAL (a timer never set up) has no kernel meaning and stays negative.
 */
static inline int kt__linux_ret(int r) { return r == -ESHUTDOWN ? 0 : r; }
#define mod_timer(t, expires) kt__linux_ret(kt_mod_timer(kt__linux_bind(t), kt__linux_expires(expires)))
#define mod_timer_pending(t, expires) kt__linux_ret(kt_mod_timer_pending(kt__linux_bind(t), kt__linux_expires(expires)))
#define timer_reduce(t, expires) kt__linux_ret(kt_timer_reduce(kt__linux_bind(t), kt__linux_expires(expires)))

/*
 * Deleting. The kernel's return values: 0 if the timer was not pending, 1
 * if it was (and is no more). The _sync forms wait in the kernel for a
 * callback running on another CPU; a base's callbacks run on its own
 * thread, which is the caller, so there is never one to wait for.
 *
 * Where this differs: the kernel's try_to_del_timer_sync() returns -1
 * whenever the timer's callback is running - from another CPU, and also
 * when called from that callback itself - and then deletes nothing. Here a
 * callback runs with its timer already detached, and nothing records which
 * callback is running (that would cost every fired timer a store), so it
 * never returns -1: from the timer's own callback it returns 0, or, if the
 * callback re-armed the timer before the call, 1 - and that new arming is
 * deleted, where the kernel would return -1 and leave it pending. Kernel
 * code that calls it from the callback to ask "am I running?" must know
 * that it is. del_timer_sync() and timer_delete_sync() from the timer's own
 * callback (which the kernel warns about: they would wait for themselves)
 * delete, as del_timer() does. timer_delete() is not provided: see above.
 */
#define del_timer(t) kt_timer_delete(t)
#define del_timer_sync(t) kt_timer_delete(t)
#define timer_delete_sync(t) kt_timer_delete(t)
#define try_to_del_timer_sync(t) kt_timer_delete(t)
/* Delete, and refuse re-arming until the next timer_setup(): 0 or 1 as above. */
#define timer_shutdown(t) kt_timer_shutdown(t)
#define timer_shutdown_sync(t) kt_timer_shutdown(t)
/* 1 if the timer is pending, else 0. */
#define timer_pending(t) kt_timer_pending(t)
/* The struct that holds the timer: from_timer(), renamed timer_container_of() in Linux 6.16. */
#define from_timer(var, timer, field) kt_from_timer(var, timer, field)
#define timer_container_of(var, timer, field) kt_from_timer(var, timer, field)

#endif /* KTIMER_LINUX_H */
