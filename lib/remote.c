// SPDX-License-Identifier: MIT
/*
 * lib/remote.c - the cross-thread queue: producers on any thread push
 * operations, the owner takes them in batches (base.c applies them). A leaf:
 * it calls nothing but the waker.
 *
 * Why one mutex and not a lock-free queue: the lost wake-up problem is about
 * two facts changing together - "the queue is empty" and "the owner is about
 * to block" - and one lock around both is the simplest thing that makes the
 * bad interleaving impossible rather than unlikely. The owner takes the lock
 * at most twice per turn (take a batch - skipped when nothing can be queued,
 * see kt__remote_take() - and prepare the wait), never per timer operation,
 * so the wheel's hot path stays lock-free. Producers contend only with each
 * other and with those two short critical sections.
 *
 * Wake-ups: a producer calls the waker only when it turns the queue from
 * empty to non-empty while the owner is marked waiting. Any later producer
 * sees a non-empty queue and knows a wake-up is already on its way (or the
 * owner is awake and will drain at its next turn). The waker runs outside the
 * lock, so a slow waker (a write() to an eventfd) never extends the critical
 * section.
 *
 * Shutdown: because the waker runs outside the lock, the owner could free
 * what the waker uses (kt_epoll_close() closes its eventfd) while a producer
 * is about to call it. So a producer counts itself in (wakers_busy) under the
 * lock before it lets go, and out after the call; kt_base_set_waker() and
 * kt_base_free() wait for that count to reach zero. After either returns, no
 * producer is inside the old waker or will enter it.
 *
 * Dropped operations: kt_remote_forget() and kt_base_free() call each dropped
 * operation's done callback with -ECANCELED (outside the lock), so whatever
 * its argument owns is never leaked.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "ktimer/remote.h"
#include "lib/internal.h"

/* ---- test seams ---------------------------------------------------------
 * Compiled only into the testonly //lib:ktimer_testing (KT_TESTING); the
 * production library and the installed one carry none of this.
 */
#ifdef KT_TESTING
#include "lib/testing/hooks.h"

void (*kt__remote_test_hook)(int point, struct kt_base *base);

#define TEST_HOOK(point, b)                                                    \
	do {                                                                   \
		if (kt__remote_test_hook)                                      \
			kt__remote_test_hook((point), (b));                    \
	} while (0)
#else
#define TEST_HOOK(point, b) ((void)0)
#endif

/* ---- fork() ------------------------------------------------------------
 * A child of fork() gets a copy of every base with its timers and queued
 * operations, but only the thread that forked: a producer that held a
 * base's lock, or was inside its waker, at that instant does not exist
 * there, and its lock would stay held forever. So every base is on one
 * list, and three handlers (pthread_atfork()) hold every base's lock across
 * the fork: the child starts with each queue consistent and unlocked, no
 * producer counted inside a waker, the owner not marked waiting, and each
 * base marked forked. The waker is the parent's (an eventfd both processes
 * share): the child never calls it, so a wake-up meant for the parent is
 * never taken by the child, until the child installs its own with
 * kt_base_fork() (an adapter's fork call does it) or kt_base_set_waker().
 * The cost is a global lock when a base is made or freed, and the bases'
 * locks taken once per fork(); none on any timer or queue operation.
 */
static pthread_mutex_t bases_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kt_base *bases;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static int fork_handlers_err;

static void before_fork(void)
{
	pthread_mutex_lock(&bases_lock);
	for (struct kt_base *b = bases; b; b = b->fork_next)
		pthread_mutex_lock(&b->qlock);
}

static void after_fork_parent(void)
{
	for (struct kt_base *b = bases; b; b = b->fork_next)
		pthread_mutex_unlock(&b->qlock);
	pthread_mutex_unlock(&bases_lock);
}

static void after_fork_child(void)
{
	/* Fresh locks: the child has only this thread, which holds them all. */
	for (struct kt_base *b = bases; b; b = b->fork_next) {
		pthread_mutex_init(&b->qlock, NULL);
		pthread_cond_init(&b->wakers_idle, NULL);
		b->wakers_busy = 0; /* those producers stayed in the parent */
		b->waiting = false; /* the child's owner marks itself again */
		b->forked = true;
		/*
		 * A turn another thread was running (its owner, while this one
		 * forked): that thread is not here, and its turn - half its
		 * batch fired, the rest on its stack - never ends. The child
		 * cannot use the base; it is told so (kt_base_fork()).
		 */
		b->torn = b->running && !pthread_equal(b->turn_thread, pthread_self());
	}
	pthread_mutex_init(&bases_lock, NULL);
}

static void register_fork_handlers(void)
{
	fork_handlers_err = pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

int kt__remote_init(struct kt_base *b)
{
	pthread_once(&fork_once, register_fork_handlers);
	if (fork_handlers_err)
		return -fork_handlers_err;
	pthread_mutex_init(&b->qlock, NULL);
	pthread_cond_init(&b->wakers_idle, NULL);
	pthread_mutex_lock(&bases_lock);
	b->fork_next = bases;
	b->fork_pprev = &bases;
	if (bases)
		bases->fork_pprev = &b->fork_next;
	bases = b;
	pthread_mutex_unlock(&bases_lock);
	return 0;
}

/* With qlock held: wait until no producer is inside the waker. */
static void wait_wakers_locked(struct kt_base *b)
{
	while (b->wakers_busy)
		pthread_cond_wait(&b->wakers_idle, &b->qlock);
}

/*
 * Dropping queued operations is linear in the queue's length: the ones to
 * drop are copied out in one pass under the lock (the rest close ranks in the
 * same pass), and their done callbacks run afterwards, outside the lock,
 * from the copy - a done callback may queue again, or forget again. Removing
 * them one at a time would shift the rest of the queue per drop: 100k
 * queued operations took seconds.
 */
#ifdef KT_TESTING
size_t kt__remote_moved; /* test seam: operations copied while dropping */
#define COUNT_MOVED(n) (kt__remote_moved += (n))
#else
#define COUNT_MOVED(n) ((void)0)
#endif

static void report_cancelled(struct kt__remote_op *ops, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ops[i].done)
			ops[i].done(ops[i].timer, -ECANCELED, ops[i].done_arg);
}

void kt__remote_destroy(struct kt_base *b)
{
	pthread_mutex_lock(&bases_lock);
	*b->fork_pprev = b->fork_next;
	if (b->fork_next)
		b->fork_next->fork_pprev = b->fork_pprev;
	pthread_mutex_unlock(&bases_lock);
	pthread_mutex_lock(&b->qlock);
	wait_wakers_locked(b);
	b->waker = NULL;
	/*
	 * Take the whole queue at once and report it outside the lock; what a
	 * done callback queues meanwhile is taken by the next round.
	 */
	while (b->q_tail != b->q_head) {
		struct kt__remote_op *q = b->q;
		size_t head = b->q_head, tail = b->q_tail;

		b->q = NULL;
		b->q_head = b->q_tail = b->q_cap = 0;
		pthread_mutex_unlock(&b->qlock);
		report_cancelled(q + head, tail - head);
		free(q);
		pthread_mutex_lock(&b->qlock);
	}
	pthread_mutex_unlock(&b->qlock);
	/* Taken for this turn but not applied (kt_base_free() is refused there). */
	for (; b->batch_pos < b->batch_n; b->batch_pos++) {
		struct kt__remote_op *op = &b->batch[b->batch_pos];

		if (op->timer && op->done)
			op->done(op->timer, -ECANCELED, op->done_arg);
	}
	pthread_cond_destroy(&b->wakers_idle);
	pthread_mutex_destroy(&b->qlock);
	free(b->q);
}

int kt_base_set_waker(struct kt_base *b, kt_waker_fn wake, void *arg)
{
	if (!b)
		return -EINVAL;
	pthread_mutex_lock(&b->qlock);
	wait_wakers_locked(b);
	b->waker = wake;
	b->waker_arg = arg;
	b->forked = b->torn; /* the parent's waker is replaced (a torn base stays refused) */
	pthread_mutex_unlock(&b->qlock);
	return 0;
}

int kt_base_fork(struct kt_base *b, kt_waker_fn wake, void *arg)
{
	if (!b)
		return -EINVAL;
	if (b->torn)
		return -EBUSY; /* inherited in another thread's turn: see after_fork_child() */
	/* In the child only the forking thread runs: it becomes the owner. */
	kt_base_adopt(b);
	return kt_base_set_waker(b, wake, arg);
}

int kt_base_forked(const struct kt_base *b) { return b && b->forked; }

static int push(struct kt_timer *t, int kind, uint64_t arg, kt_remote_done_fn done, void *done_arg)
{
	struct kt_base *b;
	kt_waker_fn wake = NULL;
	void *wake_arg = NULL;

	/*
	 * Never set up, a setup that failed (it leaves no callback), or its
	 * base was freed (which clears the timer's base): refused here, at
	 * once. The timer's word is the owner's and is not read here: a
	 * shut-down timer is left to the owner, which reports -ESHUTDOWN.
	 */
	if (!t || !(b = kt__timer_base(t)) || !t->kt__fn)
		return -EINVAL;
	pthread_mutex_lock(&b->qlock);
	if (b->q_tail == b->q_cap) {
		if (b->q_head > 0) {
			/* Slide the live part down before growing. */
			memmove(b->q, b->q + b->q_head, (b->q_tail - b->q_head) * sizeof(*b->q));
			b->q_tail -= b->q_head;
			b->q_head = 0;
		} else {
			size_t cap = b->q_cap ? b->q_cap * 2 : 64;
			struct kt__remote_op *q = realloc(b->q, cap * sizeof(*q));

			if (!q) {
				pthread_mutex_unlock(&b->qlock);
				return -ENOMEM;
			}
			b->q = q;
			b->q_cap = cap;
		}
	}
	TEST_HOOK(KT__HOOK_LOCKED, b);
	b->q[b->q_tail++] = (struct kt__remote_op){t, arg, done, done_arg, kind};
	/* Under the lock, so a plain increment; atomic for the owner's peek. */
	__atomic_store_n(&b->q_pushed, b->q_pushed + 1, __ATOMIC_RELAXED);
	if (b->q_tail - b->q_head == 1 && b->waiting) {
		/* Empty to non-empty while the owner waits: this producer wakes it. */
		b->waiting = false;
		wake = b->forked ? NULL : b->waker; /* the parent's: not ours to call */
		wake_arg = b->waker_arg;
		if (wake)
			b->wakers_busy++; /* the waker may not go away until we are out */
	}
	pthread_mutex_unlock(&b->qlock);
	TEST_HOOK(KT__HOOK_QUEUED, b);
	if (wake) {
		wake(wake_arg);
		pthread_mutex_lock(&b->qlock);
		if (--b->wakers_busy == 0)
			pthread_cond_broadcast(&b->wakers_idle);
		pthread_mutex_unlock(&b->qlock);
	}
	return 0;
}

int kt_remote_mod(struct kt_timer *t, uint64_t expires, kt_remote_done_fn done, void *arg)
{
	return push(t, KT__OP_MOD, expires, done, arg);
}

int kt_remote_arm(struct kt_timer *t, kt_millis delay, kt_remote_done_fn done, void *arg)
{
	return push(t, KT__OP_ARM, delay.ms, done, arg);
}

int kt_remote_delete(struct kt_timer *t, kt_remote_done_fn done, void *arg)
{
	return push(t, KT__OP_DELETE, 0, done, arg);
}

int kt_base_wake(struct kt_base *b)
{
	kt_waker_fn wake;
	void *arg;

	if (!b)
		return -EINVAL;
	pthread_mutex_lock(&b->qlock);
	wake = b->forked ? NULL : b->waker; /* the parent's: not ours to call */
	arg = b->waker_arg;
	if (wake)
		b->wakers_busy++; /* as a producer's wake-up: teardown waits for it */
	pthread_mutex_unlock(&b->qlock);
	if (!wake)
		return 0;
	wake(arg);
	pthread_mutex_lock(&b->qlock);
	if (--b->wakers_busy == 0)
		pthread_cond_broadcast(&b->wakers_idle);
	pthread_mutex_unlock(&b->qlock);
	return 1;
}

size_t kt_base_remote_queued(struct kt_base *b)
{
	size_t n;

	if (!b)
		return 0;
	pthread_mutex_lock(&b->qlock);
	n = b->q_tail - b->q_head;
	pthread_mutex_unlock(&b->qlock);
	return n;
}

size_t kt_remote_forget(struct kt_timer *t)
{
	struct kt_base *b;
	size_t dropped = 0, i;

	if (!t || !(b = kt__timer_base(t)))
		return 0;
	KT__OWNER_CHECK(b);
	/*
	 * First the operations of this turn's batch that are still ahead of the
	 * owner's cursor: a done callback that forgets its timer and frees it
	 * must not see the next operation for it applied to freed memory.
	 */
	for (i = b->batch_pos; i < b->batch_n; i++) {
		struct kt__remote_op *op = &b->batch[i];

		if (op->timer != t)
			continue;
		op->timer = NULL; /* apply_remote() skips it */
		dropped++;
		if (op->done)
			op->done(t, -ECANCELED, op->done_arg);
	}
	/* Then the queue: one pass under the lock, the done calls outside it. */
	for (;;) {
		struct kt__remote_op *out;
		size_t n = 0, w;

		pthread_mutex_lock(&b->qlock);
		for (i = b->q_head; i < b->q_tail; i++)
			n += b->q[i].timer == t;
		if (n == 0) {
			pthread_mutex_unlock(&b->qlock);
			break;
		}
		out = malloc(n * sizeof(*out));
		if (!out) {
			/* No room for the copy: drop one, report it, look again. */
			for (i = b->q_head; b->q[i].timer != t; i++)
				;
			struct kt__remote_op op = b->q[i];

			memmove(b->q + i, b->q + i + 1, (b->q_tail - i - 1) * sizeof(*b->q));
			b->q_tail--;
			pthread_mutex_unlock(&b->qlock);
			report_cancelled(&op, 1);
			dropped++;
			continue;
		}
		n = 0;
		for (i = w = b->q_head; i < b->q_tail; i++) {
			if (b->q[i].timer == t)
				out[n++] = b->q[i];
			else if (w != i)
				b->q[w++] = b->q[i];
			else
				w++;
		}
		COUNT_MOVED(b->q_tail - b->q_head);
		b->q_tail = w;
		if (b->q_head == b->q_tail)
			b->q_head = b->q_tail = 0;
		pthread_mutex_unlock(&b->qlock);
		report_cancelled(out, n);
		free(out);
		dropped += n;
		/* A done callback may have queued for @t again: look once more. */
	}
	return dropped;
}

/*
 * Owner, start of a turn: stop waiting, copy out at most one batch.
 *
 * Most turns find the queue empty, and a run stopped by its limit comes
 * back at once for the rest: the lock (two locked instructions) is skipped
 * when nothing was pushed since the owner last saw the queue empty and the
 * owner is not marked waiting (only the owner marks it, so it knows). A
 * push the peek misses is taken by the next turn at the latest: the wait
 * plan decides under the lock (kt__remote_prepare_wait()) and sees it.
 */
size_t kt__remote_take(struct kt_base *b)
{
	size_t n;

	if (!b->q_marked && __atomic_load_n(&b->q_pushed, __ATOMIC_RELAXED) == b->q_seen)
		return 0;
	pthread_mutex_lock(&b->qlock);
	b->waiting = false;
	b->q_marked = false;
	n = b->q_tail - b->q_head;
	if (n > KT_REMOTE_BATCH)
		n = KT_REMOTE_BATCH;
	if (n) {
		memcpy(b->batch, b->q + b->q_head, n * sizeof(*b->q));
		b->q_head += n;
		if (b->q_head == b->q_tail)
			b->q_head = b->q_tail = 0;
	}
	if (b->q_head == b->q_tail)
		b->q_seen = b->q_pushed;
	pthread_mutex_unlock(&b->qlock);
	return n;
}

/*
 * Owner, before blocking: the decision that matters is made under the
 * producers' lock. Either the queue already has work (true: do not block),
 * or the owner is marked waiting before any later producer can look, and
 * that producer will wake it.
 */
bool kt__remote_prepare_wait(struct kt_base *b)
{
	bool queued;

	pthread_mutex_lock(&b->qlock);
	queued = b->q_tail != b->q_head;
	if (!queued)
		b->waiting = b->q_marked = true;
	pthread_mutex_unlock(&b->qlock);
	return queued;
}
