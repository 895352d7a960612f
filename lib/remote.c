// SPDX-License-Identifier: MIT
/*
 * lib/remote.c - the cross-thread queue and the wait plan.
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

#include "ktimer/loop.h"
#include "lib/base_internal.h"
#include "lib/testing/time_source.h"

void (*kt__remote_test_hook)(int point, struct kt_base *base);

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
	struct kt_base *b = t->kt__base;
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
	if (kt__remote_test_hook)
		kt__remote_test_hook(KT__HOOK_QUEUED, b);
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
	struct kt_base *b = t->kt__base;
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

/* Owner: apply a taken batch, in queue order, outside the lock. */
void kt__remote_apply(struct kt_base *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct kt__remote_op *op = &b->batch[i];
		int r;

		switch (op->kind) {
		case KT__OP_MOD:
			r = kt_mod_timer(op->timer, op->arg);
			break;
		case KT__OP_ARM:
			r = kt_timer_arm(op->timer, (kt_millis){(uint32_t)op->arg});
			break;
		default:
			r = kt_timer_delete(op->timer);
			break;
		}
		if (op->done)
			op->done(op->timer, r, op->done_arg);
	}
}

struct kt_wait_plan kt_base_prepare_wait(struct kt_base *b)
{
	struct kt_wait_plan plan = {KT_WAIT_INDEFINITE, 0, 0};
	uint64_t wheel_ms = kt__wheel_next_due_ms(b);
	uint64_t hr = kt__hr_earliest(b);
	uint64_t wheel_ns = wheel_ms == UINT64_MAX ? UINT64_MAX : wheel_ms * KT__NS_PER_MS;

	if (hr < wheel_ns) {
		plan.kind = KT_WAIT_UNTIL;
		plan.precise = 1;
		plan.deadline_ns = hr;
	} else if (wheel_ns != UINT64_MAX) {
		plan.kind = KT_WAIT_UNTIL;
		plan.deadline_ns = wheel_ns;
	}
	/*
	 * The decision that matters is made under the producers' lock: either
	 * the queue already has work (IMMEDIATE), or the owner is marked waiting
	 * before any later producer can look, and that producer will wake it.
	 */
	pthread_mutex_lock(&b->qlock);
	if (b->q_tail != b->q_head) {
		plan.kind = KT_WAIT_IMMEDIATE;
		plan.precise = 0;
		plan.deadline_ns = 0;
	} else {
		b->waiting = true;
	}
	pthread_mutex_unlock(&b->qlock);
	return plan;
}

int kt_wait_plan_timeout_ms(const struct kt_base *b, const struct kt_wait_plan *plan)
{
	uint64_t now, left, ms;

	if (plan->kind == KT_WAIT_IMMEDIATE)
		return 0;
	if (plan->kind == KT_WAIT_INDEFINITE)
		return -1;
	now = kt__read_mono_ns(b);
	if (plan->deadline_ns <= now)
		return 0;
	left = plan->deadline_ns - now;
	/* Round up: epoll must not return before the deadline. */
	ms = left / KT__NS_PER_MS + (left % KT__NS_PER_MS != 0);
	return ms > INT_MAX ? INT_MAX : (int)ms;
}
