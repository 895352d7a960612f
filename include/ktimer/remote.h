/* SPDX-License-Identifier: MIT */
/*
 * ktimer/remote.h - arming a worker's timers from other threads.
 *
 * Cross-thread operations. Timers belong to the base they were set up on;
 * only its thread touches the wheel. Other threads use kt_remote_*(): each
 * appends an operation to the base's queue (a mutex-protected array: the
 * owner's timer operations never take that lock) and calls the waker only on
 * the empty-to-non-empty transition while the owner waits. Each
 * kt_base_run() takes at most KT_REMOTE_BATCH queued operations (the plan
 * stays IMMEDIATE while more remain) and applies them in the order they were
 * queued, after the clock is refreshed and the wheel clock has moved past
 * now, before any callback runs. So a relative kt_remote_arm() counts from
 * the turn that applies it, even after a long idle sleep.
 *
 * A remote "fire now" - kt_remote_arm() with a delay of 0, or
 * kt_remote_mod() to an expiry the owner's clock has reached when it
 * applies it - fires in the turn that applies it, in the same
 * kt_base_run(), after the timers that turn gathered: not on the wheel's
 * next tick, up to a unit later. It still never runs before the I/O of its
 * turn (the loop runs its timers after its I/O) and never early (it is due
 * by the turn's clock). Its cost is described at kt_remote_arm().
 *
 * A remote delete racing with expiry has one defined outcome. If the owner
 * applies the delete in or before the turn in which the timer would fire,
 * the timer does not fire and the delete reports 1. If the timer fired in an
 * earlier turn, its callback ran exactly once and the delete reports 0.
 * Never both, never neither.
 *
 * fork(). A child of fork() has a copy of each base, with its timers and
 * its queued operations, and a consistent queue whatever the parent's
 * producers were doing at the instant of the fork. Its waker is the
 * parent's, which the child never calls: a producer in the child queues
 * without waking until the child installs a waker of its own with
 * kt_base_fork() - or, for a base a loop adapter drives, the adapter's
 * fork call (kt_epoll_fork(), kt_uring_fork(), kt_event_fork(),
 * kt_uv_fork()).
 */
#ifndef KTIMER_REMOTE_H
#define KTIMER_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "time.h"
#include "timer.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * KT_REMOTE_BATCH - the most cross-thread operations one turn applies.
 *
 * kt_base_run() applies at most this many queued kt_remote_*() operations
 * (256); more stay queued in order, and the wait plan is immediate until
 * they are all applied.
 */
#define KT_REMOTE_BATCH 256u

/** kt_waker_fn - wakes the owner's blocking wait; called on a producer thread. */
typedef void (*kt_waker_fn)(void *arg);

/**
 * kt_base_set_waker() - how producers wake the owner (e.g. write an eventfd).
 * @base: the base.
 * @wake: the function, or NULL for none (producers then never wake anyone).
 * @arg: its argument.
 *
 * Call it on the owner thread before other threads use kt_remote_*(). A
 * waker runs on a producer's thread, outside the base's lock; it may call
 * kt_remote_*() but not kt_base_set_waker() or kt_base_free().
 *
 * The shutdown protocol: this call waits until no producer is inside the old
 * waker, so once it returns (with NULL or a new waker) the old waker's
 * argument may be freed. kt_base_free() waits the same way. Tear down in this
 * order: kt_base_set_waker(base, NULL, NULL) (kt_epoll_close() does it),
 * free what the waker used, stop and join the producers or make sure they
 * no longer touch the base, then kt_base_free().
 *
 * In a child of fork() it replaces the parent's waker, which the child
 * never calls (kt_base_fork()).
 *
 * Return: 0, or -EINVAL for a NULL @base.
 */
int kt_base_set_waker(struct kt_base *base, kt_waker_fn wake, void *arg);

/**
 * kt_base_wake() - call the base's waker now, from any thread.
 * @base: the base.
 *
 * For "set a flag, then wake the worker" (a stop request): the owner's next
 * wait, or the one it is in, returns. Safe against teardown: it is counted
 * like a producer's wake-up, so kt_base_set_waker() (and kt_epoll_close())
 * waits for it, and once the waker is removed it does nothing.
 *
 * Return: 1 if a waker was called, 0 if none is set (or it is the
 * parent's, in a child of fork() before kt_base_fork()), -EINVAL for NULL.
 */
int kt_base_wake(struct kt_base *base);

/**
 * kt_base_fork() - give a base a waker of its own in a child of fork().
 * @base: a base the calling process inherited across fork().
 * @wake: the child's waker (see kt_base_set_waker()), or NULL for none.
 * @arg: its argument.
 *
 * A child of fork() has a copy of every base of its parent, with its
 * timers, precise timers and queued kt_remote_*() operations: they fire and
 * apply in the child as in the parent, each process its own copy. Only the
 * thread that called fork() runs in the child; the library makes each
 * base's cross-thread queue consistent for it (no lock is left held by a
 * thread the child does not have). What the child does not get is the
 * waker: it writes the parent's kernel object (an eventfd both processes
 * share), so in the child the inherited waker is never called - neither by
 * kt_remote_*() nor by kt_base_wake() - and a wake-up meant for the parent
 * is never taken by the child. kt_base_forked() says so until the child
 * installs a waker of its own with this call (or kt_base_set_waker()).
 *
 * This call is for a base the caller drives itself. A base a loop adapter
 * drives is forked through the adapter: kt_epoll_fork(), kt_uring_fork(),
 * kt_event_fork(), kt_uv_fork() make the adapter's kernel objects the
 * child's and then install its waker; this call would leave the adapter
 * on the parent's. The calling thread becomes the base's owner (as
 * kt_base_adopt()). In a process that made the base, or a child after its
 * call, it is kt_base_set_waker(). A child that only calls exec() or
 * exits needs nothing: it never touches the parent's objects.
 *
 * Which thread forks. The owner, between turns or from a callback (the
 * child then has the thread running the turn, which goes on there; the
 * callback may make this call itself), or any thread while the owner is
 * outside a turn (waiting in its loop, say). A fork() from another thread
 * while the owner is inside a turn (a callback running) leaves the child
 * a base in the middle of a turn whose thread it does not have, which
 * never ends there: no timer of it would fire in the child again. This
 * call refuses such a base with -EBUSY (so do the adapters' fork calls,
 * touching nothing), it stays forked for good (a loop adapter's wait keeps
 * returning -EBADFD), and kt_base_free() returns -EBUSY for it in the
 * child.
 *
 * Return: 0, -EINVAL for a NULL @base, or -EBUSY for a base the child
 * inherited in the middle of another thread's turn (nothing is changed).
 */
int kt_base_fork(struct kt_base *base, kt_waker_fn wake, void *arg);

/**
 * kt_base_forked() - whether a base still has its parent's waker.
 * @base: the base.
 *
 * Return: 1 if the calling process inherited @base across fork() and has
 * installed no waker of its own since (kt_base_fork(), kt_base_set_waker(),
 * or a loop adapter's fork call), or for good if it inherited @base in the
 * middle of another thread's turn (kt_base_fork() refuses it); 0
 * otherwise (also for NULL).
 */
int kt_base_forked(const struct kt_base *base);

/**
 * kt_remote_done_fn - reports a remote operation's result, on the owner thread.
 * @timer: the timer the operation was for.
 * @result: what the owner-side call returned (kt_mod_timer(),
 *          kt_timer_arm() or kt_timer_delete() semantics: 1 pending, 0 idle,
 *          negative error, -ERANGE for a kt_remote_arm() whose delay ends
 *          past the clock's limit), or -ECANCELED if the operation was
 *          dropped by kt_remote_forget() or kt_base_free() (the timer may be
 *          about to be freed: use only @arg then).
 * @arg: the caller's argument.
 */
typedef void (*kt_remote_done_fn)(struct kt_timer *timer, int result, void *arg);

/**
 * kt_remote_mod() - kt_mod_timer() from any thread.
 * @timer: a timer set up on its owner's base.
 * @expires: absolute expiry in ms on the owner's clock. One the owner's
 *           clock has reached when it applies the operation (a time
 *           already passed) fires in the turn that applies it, as
 *           kt_remote_arm() with a delay of 0 does, at the cost described
 *           there; a re-arm to the expiry the timer already has changes
 *           nothing, as kt_mod_timer() (it fires from where it is).
 * @done: called on the owner thread once applied, or NULL.
 * @arg: argument for @done.
 *
 * Return: 0 once queued, -EINVAL for NULL, a timer never set up or one
 * whose base was freed, -ENOMEM if the queue could not grow (nothing
 * queued).
 */
int kt_remote_mod(struct kt_timer *timer, uint64_t expires, kt_remote_done_fn done, void *arg);

/**
 * kt_remote_arm() - kt_timer_arm() from any thread.
 * @timer: a timer set up on its owner's base.
 * @delay: delay from the owner's cached now when the owner applies it (so the
 *         timer can only be later than the caller's own clock says, never
 *         earlier). Zero fires in the turn that applies it: the operation
 *         was queued before that turn read its clock, so the turn's own
 *         millisecond is the expiry (kt_timer_arm(t, 0) on the owner's
 *         thread waits for the next tick instead).
 * @done: called on the owner thread once applied, or NULL.
 * @arg: argument for @done.
 *
 * What a remote arm of a due timer costs (a delay of 0 here, an expiry
 * already passed for kt_remote_mod()): the producer pays what every remote
 * operation does - the queue's lock, and the waker (one write() to an
 * eventfd on kt_epoll) if the owner is waiting. The owner pays a wake-up and
 * one turn: the poll of its I/O, the take of the queue under the lock, the
 * timers that turn gathered, then an unlink and a link into the turn's
 * batch (no level search, no bucket: the wheel's own arm path is not used,
 * and the owner's timer operations are unchanged by it). From the call to
 * the callback, then, takes the owner's wake-up and the I/O of one turn, not
 * up to a unit of the wheel (16 ms by default); tools/bench/remote_latency
 * measures it at resolutions 1, 4 and 16 ms. The callback counts toward the
 * run limit (kt_base_set_run_limit()) as any timer callback. A callback that
 * keeps handing its own timer a remote "fire now" makes every turn of its
 * owner immediate: on the owner's thread, re-arm with kt_timer_arm().
 *
 * Return: as kt_remote_mod().
 */
int kt_remote_arm(struct kt_timer *timer, kt_millis delay, kt_remote_done_fn done, void *arg);

/**
 * kt_remote_delete() - kt_timer_delete() from any thread.
 * @timer: a timer set up on its owner's base.
 * @done: called on the owner thread with 1 if the delete removed a pending
 *        timer (it will not fire), 0 if the timer was idle (it had fired, or
 *        was never armed), or NULL.
 * @arg: argument for @done.
 *
 * Return: as kt_remote_mod().
 */
int kt_remote_delete(struct kt_timer *timer, kt_remote_done_fn done, void *arg);

/**
 * kt_remote_forget() - drop queued operations for a timer (owner thread).
 * @timer: the timer.
 *
 * Call before freeing a timer that other threads may have queued operations
 * for, including from a @done callback of that timer: operations already
 * taken for the current turn are dropped too. Each dropped operation's @done
 * is called, before this returns, with -ECANCELED, so whatever its argument
 * owns can be reclaimed.
 *
 * Return: the number of operations dropped (0 for NULL or a timer never set
 * up).
 */
size_t kt_remote_forget(struct kt_timer *timer);

/**
 * kt_base_remote_queued() - operations waiting for the owner.
 * @base: the base.
 *
 * Return: the queue's length at the time of the call (any thread); 0 for
 * NULL.
 */
size_t kt_base_remote_queued(struct kt_base *base);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KTIMER_REMOTE_H */
