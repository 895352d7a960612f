/* SPDX-License-Identifier: MIT */
/*
 * ktimer/linux.h - the Linux kernel's timer names, for porting kernel code.
 *
 * Opt-in (not included by <ktimer/ktimer.h>): these names are short and
 * generic, and a program may already use them. They act on the calling
 * thread's base (kt_base_set_current()). Time is the base's cached
 * milliseconds, so jiffies are milliseconds and HZ is 1000.
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

#define jiffies (kt_base_now(kt_base_current()))
#define msecs_to_jiffies(m) ((uint64_t)(m))
#define jiffies_to_msecs(j) ((uint64_t)(j))

/* Wrap-safe comparisons, as in <linux/jiffies.h>. */
#define time_after(a, b) ((int64_t)((uint64_t)(b) - (uint64_t)(a)) < 0)
#define time_before(a, b) time_after(b, a)
#define time_after_eq(a, b) ((int64_t)((uint64_t)(a) - (uint64_t)(b)) >= 0)
#define time_before_eq(a, b) time_after_eq(b, a)

#define TIMER_DEFERRABLE KT_TIMER_DEFERRABLE

#define timer_setup(t, fn, flags) kt_timer_setup((t), kt_base_current(), (fn), (flags))
/*
 * The kernel sets timer->expires and then calls add_timer(timer). The node's
 * fields are private here, so the expiry is add_timer()'s second argument.
 */
#define add_timer(t, expires) kt_add_timer((t), (expires))

/*
 * The kernel's mod_timer(), mod_timer_pending() and timer_reduce() return 0
 * or 1, and on a shut-down timer they silently do nothing and return 0.
 * kt_ calls say -ESHUTDOWN there; a negative value is truthy and would invert
 * idioms like `if (!mod_timer(t, e)) get_ref()`, so these map it to 0.
 * -EINVAL (a timer never set up) has no kernel meaning and stays negative.
 */
static inline int kt__linux_ret(int r) { return r == -ESHUTDOWN ? 0 : r; }
#define mod_timer(t, expires) kt__linux_ret(kt_mod_timer((t), (expires)))
#define mod_timer_pending(t, expires) kt__linux_ret(kt_mod_timer_pending((t), (expires)))
#define timer_reduce(t, expires) kt__linux_ret(kt_timer_reduce((t), (expires)))
#define del_timer(t) kt_timer_delete(t)
#define del_timer_sync(t) kt_timer_delete(t)
#define timer_shutdown(t) kt_timer_shutdown(t)
#define timer_shutdown_sync(t) kt_timer_shutdown(t)
#define timer_pending(t) kt_timer_pending(t)
#define from_timer(var, timer, field) kt_from_timer(var, timer, field)

#endif /* KTIMER_LINUX_H */
