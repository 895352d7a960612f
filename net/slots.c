// SPDX-License-Identifier: MIT
/* net/slots.c - the one-second keep-alive slot ring (see slots.h). */
#include "net/slots.h"
#include "net/probes.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#define SEC 1000u

KT__PROBE_DEFINE(drain_turn);

static struct slot_ring *ring_of(struct kt_timer *t) { return kt_container_of(t, struct slot_ring, timer); }

static uint64_t slot_for(const struct slot_ring *r, uint64_t last_ms)
{
	uint64_t deadline = last_ms + r->timeout_ms;

	return deadline / SEC + (deadline % SEC != 0);
}

static void unlink_node(struct slot_ring *r, struct slot_node *n)
{
	/* Slots hold nodes of next_sec on; the drain list, of seconds before. */
	if (n->slot < r->next_sec) {
		r->drain_len--;
		if (r->unpaced > r->drain_len)
			r->unpaced = r->drain_len;
	} else
		r->counts[n->slot & (r->size - 1)]--;
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = NULL;
	r->count--;
}

static void link_node(struct slot_ring *r, struct slot_node *n, uint64_t slot)
{
	struct slot_node *head;
	uint64_t now_sec = kt_base_now(r->base) / SEC;

	/*
	 * The window starts where the ring timer last stopped. While the
	 * earliest occupied slot is still ahead (armed_ms never overstates it),
	 * every slot up to now is empty, so the window may slide to now.
	 */
	if (r->next_sec <= now_sec && (!r->count || r->armed_ms / SEC > now_sec))
		r->next_sec = now_sec + 1;
	/* Keep every node within the ring's window (never earlier than due:
	 * a node clamped to the window's end is re-slotted when it fires). */
	if (slot < r->next_sec)
		slot = r->next_sec;
	if (slot >= r->next_sec + r->size)
		slot = r->next_sec + r->size - 1;
	head = &r->heads[slot & (r->size - 1)];
	r->counts[slot & (r->size - 1)]++;
	n->slot = slot;
	n->next = head;
	n->prev = head->prev;
	head->prev->next = n;
	head->prev = n;
	r->count++;
}

/*
 * Arm the ring timer for @due_ms. The wheel rounds a timer up by one
 * granularity of its level; a slot further ahead than level 0 reaches gets
 * an intermediate wake first, half a level-0 span early, so the final wake
 * is on level 0 and at most one unit late.
 */
static uint64_t granularity_for(unsigned res, uint64_t delay_ms)
{
	struct kt_level_info li;

	for (unsigned lvl = 0; lvl < KT_WHEEL_LEVELS; lvl++) {
		kt_wheel_level_info(res, lvl, &li);
		if (delay_ms <= li.max_delay_ms)
			return li.granularity_ms;
	}
	return li.granularity_ms;
}

static void arm_for(struct slot_ring *r, uint64_t due_ms)
{
	unsigned res = kt_base_resolution(r->base);
	uint64_t now = kt_base_now(r->base);
	uint64_t reach0 = 63u * res;
	uint64_t at = due_ms;

	if (due_ms > now && due_ms - now > reach0 - res) {
		/* Early enough that even rounded up by its level it lands inside
		 * level 0's reach of the slot. */
		uint64_t back = reach0 / 2 + granularity_for(res, due_ms - now);

		at = due_ms > now + back ? due_ms - back : now;
	}
	r->armed_ms = due_ms;
	kt_mod_timer(&r->timer, at);
}

static uint64_t first_occupied(const struct slot_ring *r)
{
	for (uint64_t s = r->next_sec; s < r->next_sec + r->size; s++) {
		const struct slot_node *h = &r->heads[s & (r->size - 1)];

		if (h->next != h)
			return s;
	}
	return UINT64_MAX;
}

static void rearm(struct slot_ring *r)
{
	uint64_t s = r->count ? first_occupied(r) : UINT64_MAX;

	if (s == UINT64_MAX) {
		/* An empty ring never wakes anyone (nor do nodes that all wait on
		 * the drain list: slot_drain() takes those). */
		kt_timer_delete(&r->timer);
		r->armed_ms = UINT64_MAX;
		return;
	}
	arm_for(r, s * SEC);
}

/* Expire or re-slot one node taken off the drain list. Return: 1 if it
 * was closed. */
static int settle(struct slot_ring *r, struct slot_node *n, uint64_t now)
{
	if (n->last_ms + r->timeout_ms <= now) {
		r->stats.expired++;
		if (r->expire(r, n) == 0)
			return 1;
		n->last_ms = now; /* busy: as if touched now */
	}
	r->stats.moves++;
	link_node(r, n, slot_for(r, n->last_ms));
	return 0;
}

static size_t pace_quota(const struct slot_ring *r, uint64_t now);

static void on_ring_timer(struct kt_timer *t)
{
	struct slot_ring *r = ring_of(t);
	uint64_t now = kt_base_now(r->base);
	uint64_t upto = now / SEC; /* seconds fully reached */
	size_t owed;
	bool spliced = false;

	r->stats.wakeups++;
	if (r->armed_ms != UINT64_MAX && now < r->armed_ms) {
		/* The intermediate wake: now arm precisely. */
		arm_for(r, r->armed_ms);
		return;
	}
	/*
	 * Each second reached moves, whole, to the tail of the drain list (a
	 * splice: no node is looked at here), so the list holds the due
	 * seconds oldest first. Callbacks may touch or remove any node; a node
	 * re-slotted later lands at or past next_sec and is never seen twice.
	 * What the pace of the seconds already waiting allows by now (all of
	 * them once it is over, as it is a second later: spread_ms is at most
	 * a second) stays allowed: a second falling due paces its own nodes,
	 * not those again.
	 */
	owed = pace_quota(r, now);
	while (r->next_sec <= upto) {
		struct slot_node *head = &r->heads[r->next_sec & (r->size - 1)];
		struct slot_node *d = &r->drain;

		r->next_sec++;
		if (head->next == head)
			continue;
		if (!spliced) {
			r->unpaced = owed < r->drain_len ? owed : r->drain_len;
			spliced = true;
		}
		r->drain_len += r->counts[(r->next_sec - 1) & (r->size - 1)];
		r->counts[(r->next_sec - 1) & (r->size - 1)] = 0;
		r->drain_end_ms = now + r->spread_ms;
		r->paced_ms = now;
		r->burst_left = r->pace_burst;
		head->next->prev = d->prev;
		d->prev->next = head->next;
		head->prev->next = d;
		d->prev = head->prev;
		head->next = head->prev = head;
	}
	if (!r->batch && !r->budget_ns && !r->spread_ms) {
		/* No drain: settle the whole second here, as one callback. */
		while (r->drain.next != &r->drain) {
			struct slot_node *n = r->drain.next;

			unlink_node(r, n);
			settle(r, n, now);
		}
	}
	rearm(r);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * The closes the pace allows now: the drain list shrinks in proportion to
 * the time since the last paced turn over the time left until drain_end_ms,
 * so it is empty by then whatever the turns' spacing. Rounded up: a turn
 * that is allowed anything closes at least one.
 */
static size_t pace_quota(const struct slot_ring *r, uint64_t now)
{
	uint64_t dt, left;

	if (!r->spread_ms || now >= r->drain_end_ms)
		return SIZE_MAX;
	dt = now - r->paced_ms;
	left = r->drain_end_ms - r->paced_ms;
	if (!dt)
		return r->unpaced + r->burst_left;
	return r->unpaced + r->burst_left +
	       (size_t)(((uint64_t)(r->drain_len - r->unpaced) * dt + left - 1) / left);
}

int slot_drain_ready(struct slot_ring *r)
{
	uint64_t now = kt_base_now(r->base), left, at;

	if (!slot_draining(r))
		return 0;
	if (pace_quota(r, now))
		return 1;
	/* Nothing allowed yet: wake when one close is (the time the list's
	 * share of one node takes), never later than drain_end_ms. */
	left = r->drain_end_ms - r->paced_ms;
	at = r->paced_ms + (left + r->drain_len - 1) / (r->drain_len ? r->drain_len : 1);
	if (at > r->drain_end_ms)
		at = r->drain_end_ms;
	if (at <= now)
		at = now + 1;
	if (!kt_timer_pending(&r->pace) || kt_timer_expires(&r->pace) > at)
		kt_mod_timer(&r->pace, at);
	return 0;
}

size_t slot_drain(struct slot_ring *r)
{
	uint64_t now = kt_base_now(r->base), first = UINT64_MAX, t0 = 0;
	size_t closed = 0, seen = 0;
	size_t quota = pace_quota(r, now), unpaced = r->unpaced;
	/* Re-slotting is a few stores, closing is a system call: count closes
	 * against the batch, and look at a few times as many nodes at most. */
	size_t max_seen = r->batch && r->batch < SIZE_MAX / 8 ? r->batch * 8 : SIZE_MAX;
	size_t max_closed = r->batch ? r->batch : SIZE_MAX;

	bool stopped = false, timed = false;

	if (!quota)
		return 0;
	if (r->budget_ns || KT__PROBE_ON(drain_turn)) {
		t0 = r->clock_ns ? r->clock_ns(r) : mono_ns();
		timed = true;
	}
	while (r->drain.next != &r->drain && closed < max_closed && seen < max_seen && seen < quota) {
		struct slot_node *n = r->drain.next;

		unlink_node(r, n);
		seen++;
		if (settle(r, n, now))
			closed++;
		else if (n->slot < first)
			first = n->slot;
		/* The budget is wall time: a turn whose closes were preempted
		 * (the peers they wake take the core) ends as soon. */
		if (r->budget_ns && r->drain.next != &r->drain &&
		    (r->clock_ns ? r->clock_ns(r) : mono_ns()) - t0 >= r->budget_ns) {
			r->stats.budget_stops++;
			stopped = true;
			break;
		}
	}
	if (!seen)
		return 0;
	if (KT__PROBE_ON(drain_turn))
		KT__PROBE5(drain_turn, r, closed, seen, timed ? (r->clock_ns ? r->clock_ns(r) : mono_ns()) - t0 : 0,
			     (int)stopped);
	/* What went was the unpaced head first, then the burst (unlink_node()
	 * only kept the count within the list meanwhile). */
	if (unpaced >= seen) {
		unpaced -= seen;
	} else {
		r->burst_left = seen - unpaced < r->burst_left ? r->burst_left - (seen - unpaced) : 0;
		unpaced = 0;
	}
	r->unpaced = unpaced < r->drain_len ? unpaced : r->drain_len;
	r->paced_ms = now;
	r->stats.drain_turns++;
	if (closed > r->stats.drain_max)
		r->stats.drain_max = closed;
	/* A re-slotted node may sit before the slot the timer waits for. */
	if (first != UINT64_MAX && first * SEC < r->armed_ms)
		arm_for(r, first * SEC);
	return closed;
}

static void on_pace_timer(struct kt_timer *t)
{
	/* Nothing to do here: the wake itself ends the worker's wait, and its
	 * loop then sees slot_drain_ready(). */
	(void)t;
}

int slot_ring_init(struct slot_ring *r, struct kt_base *base, kt_seconds timeout, slot_expire_fn expire)
{
	uint64_t size = 4;

	if (!r || !base || !expire || timeout.s == 0)
		return -EINVAL;
	while (size < (uint64_t)timeout.s + 3)
		size *= 2;
	r->heads = calloc(size, sizeof(*r->heads));
	r->counts = calloc(size, sizeof(*r->counts));
	if (!r->heads || !r->counts) {
		free(r->heads);
		free(r->counts);
		r->heads = NULL;
		r->counts = NULL;
		return -ENOMEM;
	}
	for (uint64_t i = 0; i < size; i++)
		r->heads[i].next = r->heads[i].prev = &r->heads[i];
	r->size = size;
	r->base = base;
	r->timeout_ms = (uint64_t)timeout.s * SEC;
	r->next_sec = kt_base_now(base) / SEC + 1;
	r->armed_ms = UINT64_MAX;
	r->count = 0;
	r->expire = expire;
	r->batch = 0;
	r->budget_ns = 0;
	r->spread_ms = 0;
	r->pace_burst = r->burst_left = r->unpaced = 0;
	r->clock_ns = NULL;
	r->drain_len = 0;
	r->drain_end_ms = r->paced_ms = 0;
	r->drain.next = r->drain.prev = &r->drain;
	r->stats = (struct slot_stats){0};
	kt_timer_setup(&r->timer, base, on_ring_timer, 0);
	kt_timer_setup(&r->pace, base, on_pace_timer, 0);
	return 0;
}

void slot_ring_destroy(struct slot_ring *r)
{
	kt_timer_delete(&r->timer);
	kt_timer_delete(&r->pace);
	free(r->heads);
	free(r->counts);
	r->heads = NULL;
	r->counts = NULL;
}

void slot_touch(struct slot_ring *r, struct slot_node *n)
{
	uint64_t ns = kt_base_now_ns(r->base), slot;

	/* The turn's instant rounded up, as kt_timer_arm() counts: a deadline
	 * counted from a reading taken after the activity is never early. */
	n->last_ms = ns / 1000000u + (ns % 1000000u != 0);
	r->stats.touches++;
	slot = slot_for(r, n->last_ms);
	if (n->next) {
		/* The lazy rule: within a second of its slot, only the store. */
		if (slot <= n->slot + 1)
			return;
		unlink_node(r, n);
		r->stats.moves++;
	}
	link_node(r, n, slot);
	if (n->slot * SEC < r->armed_ms)
		arm_for(r, n->slot * SEC);
}

int slot_remove(struct slot_ring *r, struct slot_node *n)
{
	if (!n->next)
		return 0;
	unlink_node(r, n);
	if (!r->count)
		rearm(r);
	return 1;
}

int slot_ring_check(const struct slot_ring *r)
{
	size_t seen = 0, drained = 0;

	for (uint64_t s = r->next_sec; s < r->next_sec + r->size; s++) {
		const struct slot_node *h = &r->heads[s & (r->size - 1)];
		size_t here = 0;

		for (const struct slot_node *n = h->next; n != h; n = n->next, here++) {
			if (n->next->prev != n || n->prev->next != n)
				return -1;
			if (n->slot != s)
				return -2; /* a node outside the window or in the wrong list */
			/* Lazily touched nodes may sit one slot before their deadline's,
			 * never more (unless clamped to the window's end). */
			if (slot_for(r, n->last_ms) > n->slot + 1 && n->slot != r->next_sec + r->size - 1)
				return -3;
			seen++;
		}
		if (here != r->counts[s & (r->size - 1)])
			return -6; /* a slot's count is off */
	}
	for (const struct slot_node *n = r->drain.next; n != &r->drain; n = n->next, drained++) {
		if (n->next->prev != n || n->prev->next != n)
			return -1;
		if (n->slot >= r->next_sec)
			return -2; /* a node on the drain list whose second has not come */
		seen++;
	}
	if (seen != r->count)
		return -4;
	if (drained != r->drain_len)
		return -6;
	if (first_occupied(r) != UINT64_MAX && !kt_timer_pending(&r->timer))
		return -5; /* nodes in slots but no timer: they would never expire */
	return 0;
}

struct slot_node *slot_oldest(struct slot_ring *r, int (*eligible)(const struct slot_node *), size_t max_visit)
{
	struct slot_node *best = NULL;
	uint64_t last = r->next_sec + r->size;
	size_t visited = 0;

	/* Walked only while the server is at its connection limit: never on
	 * the timer path. The drain list first: its nodes' seconds have come,
	 * oldest first (a node touched while it waits has a later last_ms, and
	 * the comparison below sees that). */
	for (struct slot_node *n = r->drain.next; n != &r->drain; n = n->next) {
		if (visited++ == max_visit)
			return best;
		if ((!best || n->last_ms < best->last_ms) && eligible(n))
			best = n;
	}
	/* Every node seen (the drain list's too): no slot further on holds
	 * one (with --keepalive 65535 the ring has 131,072 slots). */
	for (uint64_t s = r->next_sec; s < last && visited < r->count; s++) {
		struct slot_node *h = &r->heads[s & (r->size - 1)];
		int found = 0;

		for (struct slot_node *n = h->next; n != h; n = n->next) {
			if (visited++ == max_visit)
				return best;
			if ((!best || n->last_ms < best->last_ms) && eligible(n)) {
				best = n;
				found = 1;
			}
		}
		/* Found in slot s: a lazily touched node one slot later may be
		 * older still; none further on can be. */
		if (found && last > s + 2)
			last = s + 2;
	}
	return best;
}
