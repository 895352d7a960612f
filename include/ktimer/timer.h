/* SPDX-License-Identifier: MIT */
/*
 * ktimer/timer.h - intrusive timers on the per-worker wheel.
 *
 * A struct kt_timer is embedded in the object it times (a connection, a
 * request) and costs no allocation. Expiry times are absolute milliseconds on
 * the base's clock (kt_base_now()). Arming, re-arming and deleting are O(1)
 * and touch no lock, atomic or allocator. Recover the enclosing object in the
 * callback with kt_from_timer() or kt_container_of().
 *
 * A timer fires only when kt_base_now() >= its expiry (never early), and at
 * most one granularity of the level it lands on after it
 * (kt_base_max_lateness()), plus however late the worker calls
 * kt_base_run(). Timers due in the same bucket fire in no particular order.
 */
#ifndef KTIMER_TIMER_H
#define KTIMER_TIMER_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "time.h"

#ifdef __cplusplus
#include <type_traits>
extern "C" {
#endif

struct kt_timer;

/** kt_timer_fn - a timer callback; the timer is detached when it runs. */
typedef void (*kt_timer_fn)(struct kt_timer *timer);

/**
 * struct kt_timer - a timer node, embedded in the caller's struct.
 *
 * Transparent so it can be embedded; every field is private to the library
 * (names start with kt__). Initialize with kt_timer_setup().
 *
 * Its size and layout are ABI: programs embed it in their own structs, and
 * the inline functions below read its fields, so both are fixed for a
 * soname. 48 bytes on LP64 (x86_64, aarch64, s390x), 32 on ILP32 (i686,
 * 32-bit ARM, x32), asserted below.
 */
struct kt_timer {
	struct kt_timer *kt__next;   /* bucket list */
	struct kt_timer **kt__pprev; /* NULL while idle */
	uint64_t kt__expires;        /* requested expiry, ms */
	uint64_t kt__word;           /* its list and its state, in one word */
	kt_timer_fn kt__fn;
	struct kt_base *kt__base;
};

/*
 * The node's size per data model, asserted so that a change to it cannot
 * go unnoticed: four pointers and 16 bytes of expiry and state, with no
 * padding whether a uint64_t is aligned to 4 (i686) or 8. A re-arm that
 * moves the node writes it as two 16-byte halves: the links, then the
 * expiry with the word. Changing it changes the soname.
 */
#ifdef __cplusplus
static_assert(sizeof(void *) != 8 || sizeof(struct kt_timer) == 48, "struct kt_timer is 48 bytes on LP64 (ABI)");
static_assert(sizeof(void *) != 4 || sizeof(struct kt_timer) == 32, "struct kt_timer is 32 bytes on ILP32 (ABI)");
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(void *) != 8 || sizeof(struct kt_timer) == 48, "struct kt_timer is 48 bytes on LP64 (ABI)");
_Static_assert(sizeof(void *) != 4 || sizeof(struct kt_timer) == 32, "struct kt_timer is 32 bytes on ILP32 (ABI)");
#endif

/*
 * KT_TIMER_DEFERRABLE - the timer never makes kt_base_next_timeout() ask for a
 * wake-up by itself; it fires on the next turn that happens anyway. For
 * housekeeping that must not wake an idle worker.
 */
#define KT_TIMER_DEFERRABLE 0x1u

/*
 * KT_TIMER_LAZY - push-backs only store the new expiry. A keep-alive or read
 * deadline is pushed back on every request and almost never fires; moving its
 * node to a later bucket each time is list work nobody needs. A lazy timer
 * re-armed stays in the bucket it is in and only records the new expiry
 * whenever that bucket comes due no later than the expiry's own would (a
 * later expiry, or an earlier one not before the bucket); when the bucket
 * comes due, a timer whose expiry is still ahead is requeued for the time
 * left instead of fired. An expiry whose bucket comes due before the
 * timer's moves it at once. kt_timer_expires(), kt_timer_remaining() and
 * kt_timer_pending() report the stored expiry.
 *
 * Never early, and the lateness bound is the one of a plain timer armed at
 * the last re-arm for the time then left: at most one granularity of the
 * level that delay lands on, kt_base_max_lateness() for it (each requeue
 * places the time left, which only shrinks). The cost: the worker may wake up at the old bucket's time to
 * requeue the timer (at most one such wake-up per level the remaining time
 * crosses). Combines with KT_TIMER_DEFERRABLE.
 */
#define KT_TIMER_LAZY 0x2u

/**
 * kt_timer_setup() - bind a timer to a base and a callback.
 * @timer: the timer: zero-filled, never used, or not pending.
 * @base: the base whose thread will own it.
 * @fn: the callback.
 * @flags: 0, or KT_TIMER_DEFERRABLE and/or KT_TIMER_LAZY.
 *
 * Also clears the effect of kt_timer_shutdown() and binds a timer whose base
 * was freed to a new one. A timer pending on @base is refused:
 * re-initializing it would leave its bucket pointing at it (delete it
 * first). Moving a pending timer to another base without deleting it first
 * is undefined.
 *
 * Return: 0; -EBUSY if @timer is pending on @base (nothing changed); -EINVAL if
 * @timer, @base or @fn is NULL or @flags has unknown bits, and the timer then
 * refuses to arm (every arming call returns -EINVAL).
 */
int kt_timer_setup(struct kt_timer *timer, struct kt_base *base, kt_timer_fn fn, unsigned flags);

/**
 * kt_mod_timer() - arm or re-arm a timer.
 * @timer: a set-up timer.
 * @expires: absolute expiry in milliseconds on the base's clock. A time in the
 *           past fires on the next tick; a time beyond the wheel's reach
 *           waits at its far end and is re-queued until due; a time past
 *           the clock's limit (2^44 ms), UINT64_MAX for instance, never
 *           comes: the timer stays pending, never fires and never sets a
 *           wait plan's deadline (<ktimer/base.h>, "The clock's limit").
 *
 * Re-arming into the same bucket only updates the expiry; re-arming to the
 * same expiry does nothing.
 *
 * A timer's lateness bound (kt_base_max_lateness()) is that of the arm that
 * placed it in its bucket, for the delay that arm was given: the arm of an
 * idle timer, a re-arm that moved it, or a re-arm whose new expiry maps to
 * the bucket it is in. A re-arm to the absolute expiry the timer already
 * has places nothing and keeps the earlier arm's bound, which can be wider
 * than the one for the delay left (a 30 s timer re-armed to its own expiry
 * 20 ms before it keeps a bucket up to 511 ms wide at 1 ms resolution,
 * against a bound of 1 ms for 20 ms). It never fires early. To have the bound of the
 * delay left, delete the timer and arm it again. A KT_TIMER_LAZY timer
 * pushed later keeps its bucket too, and is requeued from it: see
 * KT_TIMER_LAZY for its bound.
 *
 * Fastest for timers of the base that last ran a turn on the calling thread
 * (one base per worker thread): that base is known before the node is read,
 * so the new bucket is found while the node's cache miss is pending. Timers
 * of other bases take a slower path to the same result.
 *
 * Return: 1 if the timer was pending, 0 if it was idle, -EINVAL if it is
 * NULL, was not set up or its base was freed, -ESHUTDOWN after
 * kt_timer_shutdown() (the call is ignored).
 */
int kt_mod_timer(struct kt_timer *timer, uint64_t expires);

/**
 * kt_add_timer() - arm an idle timer.
 * @timer: a set-up, idle timer.
 * @expires: absolute expiry, as for kt_mod_timer().
 *
 * Return: 0, -EBUSY (nothing changed) if the timer is already pending, or the
 * errors of kt_mod_timer().
 */
int kt_add_timer(struct kt_timer *timer, uint64_t expires);

/**
 * kt_mod_timer_pending() - re-arm a timer only if it is pending.
 * @timer: a set-up timer.
 * @expires: absolute expiry.
 *
 * Return: 1 if the timer was pending (and is re-armed), 0 if it was idle (and
 * stays idle), or the errors of kt_mod_timer().
 */
int kt_mod_timer_pending(struct kt_timer *timer, uint64_t expires);

/**
 * kt_timer_reduce() - move a timer earlier, never later.
 * @timer: a set-up timer.
 * @expires: absolute expiry.
 *
 * A pending timer is re-armed only if @expires is earlier than its current
 * expiry; an idle timer is armed.
 *
 * Return: 1 if the timer was pending, 0 if it was idle, or the errors of
 * kt_mod_timer().
 */
int kt_timer_reduce(struct kt_timer *timer, uint64_t expires);

/**
 * kt_timer_arm() - arm or re-arm a timer relative to the cached now.
 * @timer: a set-up timer.
 * @delay: delay from the turn's instant (kt_base_now_ns() rounded up to the
 *         millisecond, so at least @delay of real time passes from the start
 *         of the turn); zero fires on the next tick.
 *
 * A delay that would end past the clock's limit (2^44 ms; only a manual
 * clock or a clock source can get near it) is refused: the clock never gets
 * there, so the timer would never fire (<ktimer/base.h>, "The clock's
 * limit"). kt_deadline_arm(), kt_call_after() and kt_remote_arm() refuse it
 * the same way.
 *
 * Return: as kt_mod_timer(), or -ERANGE if the delay ends past the clock's
 * limit (the call is ignored: a pending timer keeps its expiry).
 */
int kt_timer_arm(struct kt_timer *timer, kt_millis delay);

/**
 * kt_timer_delete() - disarm a timer.
 * @timer: a set-up timer. Deleting an idle timer is harmless.
 *
 * After it returns the callback will not run for the deleted arming, even if
 * it was due in the batch being fired right now (or gathered by
 * kt_base_update_time()).
 *
 * Return: 1 if the timer was pending, 0 if it was idle, -EINVAL for NULL.
 */
int kt_timer_delete(struct kt_timer *timer);

/**
 * kt_timer_shutdown() - disarm a timer for good.
 * @timer: a set-up timer.
 *
 * Every later arming call is ignored (and returns -ESHUTDOWN) until the
 * next kt_timer_setup(). For teardown paths where a racing re-arm must lose.
 *
 * Return: 1 if the timer was pending, 0 if it was idle, -EINVAL for NULL.
 */
int kt_timer_shutdown(struct kt_timer *timer);

/**
 * kt_timer_pending() - whether a timer is armed.
 * @timer: the timer.
 *
 * Inline, like the kernel's timer_pending(): one load from the node.
 *
 * Return: 1 if pending, 0 otherwise (idle, fired, deleted, its base freed, or
 * NULL).
 */
static inline int kt_timer_pending(const struct kt_timer *timer) { return timer && timer->kt__pprev; }

/**
 * kt_timer_remaining() - time left until a pending timer is due.
 * @timer: the timer.
 *
 * Measured from the base's cached now (kt_base_now()), like libuv's
 * uv_timer_get_due_in(). Inline: one load and a subtraction.
 *
 * Return: milliseconds until the requested expiry, 0 if it is due already or
 * the timer is not pending (or NULL).
 */
static inline uint64_t kt_timer_remaining(const struct kt_timer *timer)
{
	uint64_t now;

	if (!timer || !timer->kt__pprev)
		return 0;
	now = kt_base_now(timer->kt__base);
	return timer->kt__expires > now ? timer->kt__expires - now : 0;
}

/**
 * kt_timer_prefetch() - a hint: this timer is about to be re-armed or deleted.
 * @timer: the timer (any value, NULL included: a prefetch never faults).
 *
 * With many connections every re-arm begins with a cache miss on the node,
 * and the list links it rewrites are found only through it. A loop that
 * knows which connections it will serve next - the ready events of an
 * epoll_wait() batch - can start those misses early: call this for the
 * event a few positions ahead of the one being handled (kt_epoll's and
 * net/'s loops use a distance of 4), so the node is in cache when its
 * re-arm comes. It changes nothing but speed. Both cache lines of a node that
 * straddles two are asked for.
 */
static inline void kt_timer_prefetch(const struct kt_timer *timer)
{
#if defined(__GNUC__) || defined(__clang__)
	/*
	 * The node's last byte is computed as an integer: pointer arithmetic
	 * on NULL is undefined (UBSan reports it), integer arithmetic is not,
	 * and it keeps the hot path two prefetches with no branch. For NULL
	 * the second prefetch asks for a low address, which never faults.
	 */
	__builtin_prefetch(timer, 1, 3);
#ifdef __cplusplus
	/* Named casts: clang++ -Wold-style-cast flags C ones in users' code. */
	__builtin_prefetch(reinterpret_cast<const void *>(reinterpret_cast<uintptr_t>(timer) + sizeof(*timer) - 1), 1, 3);
#else
	__builtin_prefetch((const void *)((uintptr_t)timer + sizeof(*timer) - 1), 1, 3);
#endif
#else
	(void)timer;
#endif
}

/**
 * kt_timer_expires() - the expiry last requested.
 * @timer: the timer.
 *
 * Return: absolute milliseconds as given to the last arming call (0 for NULL).
 */
static inline uint64_t kt_timer_expires(const struct kt_timer *timer) { return timer ? timer->kt__expires : 0; }

#ifdef __cplusplus
} /* extern "C" */
#endif

/**
 * kt_container_of() - the struct that holds a member.
 * @ptr: pointer to the member.
 * @type: the enclosing struct type.
 * @member: the member's name.
 *
 * Return: a pointer to the @type whose @member @ptr points to.
 */
#ifdef __cplusplus
/* Named casts: the macro expands in user code that may use -Wold-style-cast. */
#define kt_container_of(ptr, type, member)                                                                   \
	(reinterpret_cast<type *>(const_cast<char *>(reinterpret_cast<const char *>(ptr)) - offsetof(type, member)))
#else
#define kt_container_of(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))
#endif

/**
 * kt_from_timer() - the struct that holds a timer, typed after a variable.
 * @var: a pointer variable of the enclosing type (only its type is used).
 * @timer: the struct kt_timer pointer the callback received.
 * @field: the name of the timer member.
 *
 * Return: a pointer to the struct of @var's type whose @field @timer points
 * to (in a callback: the object the timer belongs to).
 */
#ifdef __cplusplus
#define kt_from_timer(var, timer, field)                                       \
	kt_container_of(timer, std::remove_pointer<decltype(var)>::type, field)
#else
#define kt_from_timer(var, timer, field) kt_container_of(timer, __typeof__(*(var)), field)
#endif

#endif /* KTIMER_TIMER_H */
