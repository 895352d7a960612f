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
 * twice per turn (take a batch, prepare the wait), never per timer operation,
 * so the wheel's hot path stays lock-free. Producers contend only with each
 * other and with those two short critical sections.
 *
 * Wake-ups: a producer calls the waker only when it turns the queue from
 * empty to non-empty while the owner is marked waiting. Any later producer
 * sees a non-empty queue and knows a wake-up is already on its way (or the
 * owner is awake and will drain at its next turn). The waker runs outside the
 * lock, so a slow waker (a write() to an eventfd) never extends the critical
 * section.
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

void kt__remote_init(struct kt_base *b) { pthread_mutex_init(&b->qlock, NULL); }

void kt__remote_destroy(struct kt_base *b)
{
	pthread_mutex_destroy(&b->qlock);
	free(b->q);
}

void kt_base_set_waker(struct kt_base *b, kt_waker_fn wake, void *arg)
{
	pthread_mutex_lock(&b->qlock);
	b->waker = wake;
	b->waker_arg = arg;
	pthread_mutex_unlock(&b->qlock);
}

static int push(struct kt_timer *t, int kind, uint64_t arg, kt_remote_done_fn done, void *done_arg)
{
	struct kt_base *b = kt__timer_base(t);
	kt_waker_fn wake = NULL;
	void *wake_arg = NULL;

	if (!b || !t->kt__fn)
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
	b->q[b->q_tail++] = (struct kt__remote_op){t, arg, done, done_arg, kind};
	if (b->q_tail - b->q_head == 1 && b->waiting) {
		/* Empty to non-empty while the owner waits: this producer wakes it. */
		b->waiting = false;
		wake = b->waker;
		wake_arg = b->waker_arg;
	}
	pthread_mutex_unlock(&b->qlock);
	TEST_HOOK(KT__HOOK_QUEUED, b);
	if (wake)
		wake(wake_arg);
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

size_t kt_base_remote_queued(struct kt_base *b)
{
	size_t n;

	pthread_mutex_lock(&b->qlock);
	n = b->q_tail - b->q_head;
	pthread_mutex_unlock(&b->qlock);
	return n;
}

size_t kt_remote_forget(struct kt_timer *t)
{
	struct kt_base *b = kt__timer_base(t);
	size_t dropped = 0, out;

	if (!b)
		return 0;
	pthread_mutex_lock(&b->qlock);
	out = b->q_head;
	for (size_t i = b->q_head; i < b->q_tail; i++) {
		if (b->q[i].timer == t)
			dropped++;
		else
			b->q[out++] = b->q[i];
	}
	b->q_tail = out;
	pthread_mutex_unlock(&b->qlock);
	return dropped;
}

/* Owner, start of a turn: stop waiting, copy out at most one batch. */
size_t kt__remote_take(struct kt_base *b)
{
	size_t n;

	pthread_mutex_lock(&b->qlock);
	b->waiting = false;
	n = b->q_tail - b->q_head;
	if (n > KT_REMOTE_BATCH)
		n = KT_REMOTE_BATCH;
	if (n) {
		memcpy(b->batch, b->q + b->q_head, n * sizeof(*b->q));
		b->q_head += n;
		if (b->q_head == b->q_tail)
			b->q_head = b->q_tail = 0;
	}
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
		b->waiting = true;
	pthread_mutex_unlock(&b->qlock);
	return queued;
}
