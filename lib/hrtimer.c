// SPDX-License-Identifier: MIT
/*
 * lib/hrtimer.c - precise timers: a binary min-heap of nodes per base. A leaf
 * module: base.c collects and fires the due ones in its turn.
 *
 * The wheel rounds to at least a millisecond; a pacer stepping 100 us at a
 * time needs its deadline to the microsecond. Precise timers are few and
 * short-lived (pacers, protocol retransmit deadlines), so a heap's O(log n)
 * is the right trade here, the opposite of the wheel's: exact order matters
 * and cancellations are rare. Each node keeps its heap position, so cancel is
 * O(log n) without a search, and the earliest deadline is the heap's root.
 *
 * Firing mirrors the wheel: every timer due by the turn's clock is moved out
 * of the heap into a batch first (position 0, on a private list), then the
 * callbacks run. A callback that re-arms a timer for a time already due puts
 * it back in the heap, where it waits for the next turn: a pacer that falls
 * behind cannot spin.
 */
#include <errno.h>
#include <stdlib.h>

#include "ktimer/hrtimer.h"
#include "lib/internal.h"
#include "lib/probes.h"

KT__PROBE_DEFINE(hr_expire_entry);
KT__PROBE_DEFINE(hr_expire_exit);
KT__PROBE_DEFINE(hr_arm);
KT__PROBE_DEFINE(hr_cancel);

#define HR_VALID 0x1u
#define HR_IN_BATCH 0x2u

/* Heap order: deadline, then start order (equal deadlines: first in, first out). */
static inline bool before(const struct kt_hrtimer *a, const struct kt_hrtimer *b)
{
	return a->kt__expires < b->kt__expires ||
	       (a->kt__expires == b->kt__expires && a->kt__seq < b->kt__seq);
}

static inline void place(struct kt_base *b, struct kt_hrtimer *t, uint32_t i)
{
	b->hr_heap[i] = t;
	t->kt__pos = i + 1;
}

static void sift_up(struct kt_base *b, uint32_t i)
{
	struct kt_hrtimer *t = b->hr_heap[i];

	while (i > 0) {
		uint32_t parent = (i - 1) / 2;

		if (!before(t, b->hr_heap[parent]))
			break;
		place(b, b->hr_heap[parent], i);
		i = parent;
	}
	place(b, t, i);
}

static void sift_down(struct kt_base *b, uint32_t i)
{
	struct kt_hrtimer *t = b->hr_heap[i];

	for (;;) {
		uint32_t child = 2 * i + 1;

		if (child >= b->hr_count)
			break;
		if (child + 1 < b->hr_count && before(b->hr_heap[child + 1], b->hr_heap[child]))
			child++;
		if (!before(b->hr_heap[child], t))
			break;
		place(b, b->hr_heap[child], i);
		i = child;
	}
	place(b, t, i);
}

static void heap_remove(struct kt_base *b, struct kt_hrtimer *t)
{
	uint32_t i = t->kt__pos - 1;
	struct kt_hrtimer *last = b->hr_heap[--b->hr_count];

	t->kt__pos = 0;
	if (last == t)
		return;
	place(b, last, i);
	if (i > 0 && before(last, b->hr_heap[(i - 1) / 2]))
		sift_up(b, i);
	else
		sift_down(b, i);
}

/* Take @t out of the batch being fired (a singly linked list). */
static void batch_remove(struct kt_base *b, struct kt_hrtimer *t)
{
	uint32_t i = 0;

	for (struct kt_hrtimer **pp = &b->hr_expiring; *pp; pp = &(*pp)->kt__next, i++) {
		if (*pp == t) {
			*pp = t->kt__next;
			b->hr_batched--;
			if (i < b->hr_left)
				b->hr_left--; /* one left-over fewer */
			break;
		}
	}
	t->kt__next = NULL;
	t->kt__flags &= ~HR_IN_BATCH;
}

/*
 * Whether @t is pending on @b, looked up in @b's own heap and batch (the
 * node may be uninitialized memory: its pointers are never followed).
 */
static bool linked(const struct kt_hrtimer *t, const struct kt_base *b)
{
	KT__SETUP_READS(t, sizeof(*t));
	if (!b || t->kt__base != b || !(t->kt__flags & HR_VALID))
		return false;
	if (t->kt__pos && t->kt__pos <= b->hr_count && b->hr_heap[t->kt__pos - 1] == t)
		return true;
	for (const struct kt_hrtimer *x = b->hr_expiring; x; x = x->kt__next)
		if (x == t)
			return true;
	return false;
}

int kt_hrtimer_setup(struct kt_hrtimer *t, struct kt_base *b, kt_hrtimer_fn fn)
{
	if (!t)
		return -EINVAL;
	if (linked(t, b))
		return -EBUSY; /* re-initializing would leave the heap pointing at it */
	if (b)
		KT__OWNER_CHECK(b);
	t->kt__expires = 0;
	t->kt__seq = 0;
	t->kt__fn = fn;
	t->kt__base = b;
	t->kt__next = NULL;
	t->kt__pos = 0;
	t->kt__flags = (b && fn) ? HR_VALID : 0;
	return (b && fn) ? 0 : -EINVAL;
}

int kt_hrtimer_pending(const struct kt_hrtimer *t) { return t && (t->kt__pos != 0 || (t->kt__flags & HR_IN_BATCH)); }

uint64_t kt_hrtimer_expires(const struct kt_hrtimer *t) { return t ? t->kt__expires : 0; }

int kt_hrtimer_cancel(struct kt_hrtimer *t)
{
	struct kt_base *b;

	if (!t)
		return -EINVAL;
	b = t->kt__base;
	if (t->kt__pos || (t->kt__flags & HR_IN_BATCH)) {
		KT__OWNER_CHECK(b);
		KT__PROBE2(hr_cancel, t, b);
	}

	if (t->kt__pos) {
		heap_remove(b, t);
		return 1;
	}
	if (t->kt__flags & HR_IN_BATCH) {
		batch_remove(b, t);
		return 1;
	}
	return 0;
}

int kt_hrtimer_start(struct kt_hrtimer *t, uint64_t expires_ns)
{
	struct kt_base *b;
	int was;

	if (!t || !(t->kt__flags & HR_VALID))
		return -EINVAL;
	b = t->kt__base;
	KT__OWNER_CHECK(b);
	if (t->kt__pos) {
		uint32_t i = t->kt__pos - 1;

		/* A restart goes behind the timers already due at the same time:
		 * to the same deadline too, it changes the order. */
		KT__PROBE3(hr_arm, t, expires_ns, b);
		t->kt__expires = expires_ns;
		t->kt__seq = b->hr_seq++;
		if (i > 0 && before(t, b->hr_heap[(i - 1) / 2]))
			sift_up(b, i);
		else
			sift_down(b, i);
		return 1;
	}
	was = 0;
	if (t->kt__flags & HR_IN_BATCH) {
		batch_remove(b, t);
		was = 1;
	}
	if (b->hr_count == b->hr_cap) {
		uint32_t cap = b->hr_cap ? b->hr_cap * 2 : 16;
		struct kt_hrtimer **heap = realloc(b->hr_heap, cap * sizeof(*heap));

		if (!heap)
			return -ENOMEM;
		b->hr_heap = heap;
		b->hr_cap = cap;
	}
	KT__PROBE3(hr_arm, t, expires_ns, b);
	t->kt__expires = expires_ns;
	t->kt__seq = b->hr_seq++;
	b->hr_heap[b->hr_count] = t;
	t->kt__pos = ++b->hr_count;
	sift_up(b, b->hr_count - 1);
	return was;
}

int kt_hrtimer_start_after(struct kt_hrtimer *t, uint64_t delay_ns)
{
	uint64_t now;

	if (!t || !(t->kt__flags & HR_VALID))
		return -EINVAL;
	KT__OWNER_CHECK_AS(t->kt__base, __func__);
	now = kt__clock_read_ns(t->kt__base);
	/*
	 * Saturate: a wrapped sum would be a deadline in the past and fire at
	 * once. UINT64_MAX is "never", as for the wheel's far expiries: no clock
	 * gets there (a manual one stops at 2^44 ms) and the wait plan treats it
	 * as no deadline (kt__hr_earliest()'s "none").
	 */
	return kt_hrtimer_start(t, delay_ns > UINT64_MAX - now ? UINT64_MAX : now + delay_ns);
}

uint64_t kt__hr_earliest(const struct kt_base *b)
{
	return b->hr_count ? b->hr_heap[0]->kt__expires : UINT64_MAX;
}

/*
 * For kt_base_advance() when a callback re-armed a precise timer for a time
 * already passed: that one waits a tick (time must not stand still), but
 * the others keep their exact deadlines. A scan of the heap, on the test
 * clock only.
 */
uint64_t kt__hr_next_after(const struct kt_base *b, uint64_t after, uint64_t cap)
{
	uint64_t best = cap;

	for (uint32_t i = 0; i < b->hr_count; i++)
		if (b->hr_heap[i]->kt__expires > after && b->hr_heap[i]->kt__expires < best)
			best = b->hr_heap[i]->kt__expires;
	return best;
}

void kt__hr_collect(struct kt_base *b)
{
	struct kt_hrtimer **tail = &b->hr_expiring;

	while (*tail)
		tail = &(*tail)->kt__next;
	/* Batch everything due, in deadline order. */
	while (b->hr_count && b->hr_heap[0]->kt__expires <= b->now_ns) {
		struct kt_hrtimer *t = b->hr_heap[0];

		heap_remove(b, t);
		t->kt__flags |= HR_IN_BATCH;
		b->hr_batched++;
		t->kt__next = NULL;
		*tail = t;
		tail = &t->kt__next;
	}
}

/* The firing loop; @probed (a constant) adds the expiry probes. */
static inline __attribute__((always_inline)) void hr_fire(struct kt_base *b, bool left_only, struct kt__budget *bg,
							  const bool probed)
{
	struct kt_hrtimer *t;

	/*
	 * hr_left is read live, not counted down from the call's start: a
	 * callback that cancels or restarts a left-over takes it out of the
	 * count, and a stale count would fire a timer gathered later here.
	 */
	while ((t = b->hr_expiring) != NULL && (!left_only || b->hr_left)) {
		/* A run stopped by its limit leaves the rest at the head, in order. */
		if (kt__budget_spent(b, bg))
			return;
		b->hr_expiring = t->kt__next;
		b->hr_batched--;
		if (b->hr_left)
			b->hr_left--;
		t->kt__next = NULL;
		t->kt__flags &= ~HR_IN_BATCH;
		bg->ran++;
		if (probed) {
			/* @t may be freed by its callback: only its address is passed after. */
			kt_hrtimer_fn fn = t->kt__fn;

			KT__PROBE5(hr_expire_entry, t, fn, t->kt__expires, b->now_ns, b);
			fn(t);
			KT__PROBE3(hr_expire_exit, t, fn, b);
			continue;
		}
		t->kt__fn(t);
	}
}

static __attribute__((noinline, unused)) void hr_fire_traced(struct kt_base *b, bool left_only,
							     struct kt__budget *bg)
{
	hr_fire(b, left_only, bg, true);
}

void kt__hr_fire(struct kt_base *b, bool left_only, struct kt__budget *bg)
{
	/* As the wheel's (kt__wheel_fire()): the probes in a copy of the loop. */
	if (KT__PROBE_ON(hr_expire_entry) || KT__PROBE_ON(hr_expire_exit))
		hr_fire_traced(b, left_only, bg);
	else
		hr_fire(b, left_only, bg, false);
}

/*
 * kt_base_free(): detach without firing, and make every pending timer refuse
 * to arm (HR_VALID cleared, no base) until it is set up again.
 */
void kt__hr_orphan_all(struct kt_base *b)
{
	for (uint32_t i = 0; i < b->hr_count; i++) {
		b->hr_heap[i]->kt__pos = 0;
		b->hr_heap[i]->kt__flags = 0;
		b->hr_heap[i]->kt__base = NULL;
	}
	for (struct kt_hrtimer *t = b->hr_expiring, *n; t; t = n) {
		n = t->kt__next;
		t->kt__next = NULL;
		t->kt__flags = 0;
		t->kt__base = NULL;
	}
	b->hr_batched = b->hr_left = 0;
	free(b->hr_heap);
}

static void dump_one(const struct kt_base *b, FILE *f, const struct kt_hrtimer *t, const char *where)
{
	uint64_t now = b->now_ns;

	fprintf(f, "  %-10s expires %llu ns (%s%llu ns) timer %p ", where, (unsigned long long)t->kt__expires,
		t->kt__expires >= now ? "in " : "due ",
		(unsigned long long)(t->kt__expires >= now ? t->kt__expires - now : now - t->kt__expires),
		(const void *)t);
	kt__dump_fn(f, (const void *)(uintptr_t)t->kt__fn);
	fputc('\n', f);
}

size_t kt__hr_dump(const struct kt_base *b, FILE *f)
{
	size_t n = 0;

	for (const struct kt_hrtimer *t = b->hr_expiring; t; t = t->kt__next, n++)
		dump_one(b, f, t, "due-batch");
	for (uint32_t i = 0; i < b->hr_count; i++, n++)
		dump_one(b, f, b->hr_heap[i], "precise");
	return n;
}

int kt__hr_check(const struct kt_base *b)
{
	for (uint32_t i = 0; i < b->hr_count; i++) {
		if (b->hr_heap[i]->kt__pos != i + 1 || b->hr_heap[i]->kt__base != b)
			return KT_CHECK_HR_HEAP;
		if (i > 0 && before(b->hr_heap[i], b->hr_heap[(i - 1) / 2]))
			return KT_CHECK_HR_HEAP;
	}
	return KT_CHECK_OK;
}
