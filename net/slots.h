/* SPDX-License-Identifier: MIT */
/*
 * net/slots.h - keep-alive timeouts batched into one-second slots.
 *
 * Thousands of idle keep-alive connections per worker each have a deadline
 * of "last response + T", pushed back on every request. Giving each its own
 * wheel timer would cost a re-arm per request; the ntex I/O layer instead
 * drops connections into one-second slots and drives all of them with one
 * timer. This is that ring:
 *
 * - A connection's slot is the first whole second at or after its deadline.
 * - slot_touch() stores the activity time. The node moves to another slot
 *   only when its new slot is more than one second past its current one; a
 *   connection touched many times a second moves about once every two
 *   seconds, and most touches are a store and a compare.
 * - One kt_timer per ring fires at the earliest occupied slot's second and
 *   is armed only while the ring holds a node: an empty ring never wakes the
 *   worker. When the slot is further ahead than the wheel's level 0 reaches,
 *   the timer first wakes a little before it and then arms precisely, so the
 *   slot is processed at most one wheel unit late.
 * - Processing a slot: a node whose deadline has passed is unlinked and
 *   handed to the expire callback, which closes the connection (or returns 1
 *   to say "busy, keep it", and the node is re-slotted as if touched now); a
 *   node touched since is moved to its new slot.
 * - Draining: a second of deadlines can hold tens of thousands of nodes, and
 *   closing them all in one callback stalls the worker for as long (every
 *   close is a system call, and on loopback the peer's side of it too). With
 *   a drain set (a time budget, a pace or a batch), the timer only moves
 *   each due slot, whole and in O(1), to the tail of a drain list, and the
 *   owner's loop calls slot_drain() once per turn, after the turn's I/O: it
 *   settles the list's nodes oldest first and stops when the turn's wall
 *   time reaches the budget (slot_ring_set_budget()), when the pace allows
 *   no more (slot_ring_set_spread(): the list is closed evenly over the
 *   spread, as a timer per connection would have closed it over the second
 *   before; its first few nodes go unpaced, so a small second closes at
 *   once) or after a batch of closes (slot_ring_set_batch()). A count
 *   alone is wrong for some machine: a close costs 10-30 us of CPU, but its
 *   wall time depends on who else wants the core (the peers its FINs wake).
 *   A node touched while it waits is re-slotted, not closed; a node removed
 *   while it waits is simply gone. With none of the three the timer settles
 *   the whole second itself.
 *
 * So an idle connection is expired between T and T + 1 s + one wheel unit
 * after its last touch (plus the worker's own scheduling delay, plus, with a
 * drain, the spread or the turns needed to drain the nodes due before it,
 * whichever is longer).
 */
#ifndef KTIMER_NET_SLOTS_H
#define KTIMER_NET_SLOTS_H

#include <stddef.h>
#include <stdint.h>

#include <ktimer/ktimer.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An intrusive node, embedded in the connection. */
struct slot_node {
	struct slot_node *next, *prev; /* NULL while not in the ring */
	uint64_t last_ms;                 /* last activity (base clock, ms) */
	uint64_t slot;                    /* the second whose list holds it */
};

struct slot_ring;

/* Return 0 if the node was expired (the callee closed it), 1 to keep it. */
typedef int (*slot_expire_fn)(struct slot_ring *ring, struct slot_node *node);

struct slot_stats {
	uint64_t touches;  /* slot_touch() calls */
	uint64_t moves;    /* nodes moved to another slot (touch or re-slot) */
	uint64_t wakeups;  /* ring timer firings */
	uint64_t expired;  /* nodes handed to the expire callback */
	uint64_t drain_turns; /* slot_drain() calls that settled a node */
	uint64_t drain_max;   /* the most nodes closed by one slot_drain() call */
	uint64_t budget_stops; /* slot_drain() calls that stopped at the time budget */
};

struct slot_ring {
	struct kt_timer timer;
	struct kt_base *base;
	struct slot_node *heads; /* circular sentinels, one per slot */
	uint64_t size;              /* slots, a power of two > timeout + 2 s */
	uint64_t timeout_ms;
	uint64_t next_sec;  /* the first second not yet processed */
	uint64_t armed_ms;  /* what the timer is armed for, UINT64_MAX if idle */
	size_t count;         /* nodes in the slots and on the drain list */
	struct slot_node drain; /* due nodes not yet settled, oldest first */
	size_t batch;         /* closes per slot_drain() at most, 0: no count limit */
	uint64_t budget_ns;   /* wall time per slot_drain() call at most, 0: none */
	uint64_t spread_ms;   /* a due second's drain is paced over this, 0: no pace */
	size_t pace_burst;    /* nodes of a due second settled before the pace applies */
	size_t burst_left;    /* what is left of it for the seconds due so far */
	size_t unpaced;       /* nodes at the list's head whose pace is over or owed:
				 the earlier seconds' when a later one falls due */
	uint64_t (*clock_ns)(struct slot_ring *ring); /* the budget's clock, NULL: CLOCK_MONOTONIC */
	uint32_t *counts;     /* nodes per slot */
	size_t drain_len;     /* nodes on the drain list */
	uint64_t drain_end_ms; /* the pace empties the drain list by then */
	uint64_t paced_ms;    /* the last paced slot_drain() (or splice) */
	struct kt_timer pace; /* wakes the owner when the pace allows a close */
	slot_expire_fn expire;
	struct slot_stats stats;
};

/**
 * slot_ring_init() - create a ring on a base.
 * @ring: the ring.
 * @base: the worker's base.
 * @timeout: the keep-alive timeout T (must not be zero: zero means no
 *           keep-alive, so no ring is needed).
 * @expire: called for each node whose deadline passed.
 *
 * Return: 0, -EINVAL for a zero timeout or NULL argument, -ENOMEM.
 */
int slot_ring_init(struct slot_ring *ring, struct kt_base *base, kt_seconds timeout, slot_expire_fn expire);

/** slot_ring_destroy() - release the ring (nodes are simply forgotten). */
void slot_ring_destroy(struct slot_ring *ring);

/**
 * slot_touch() - record activity now; links the node if it is not linked.
 * @ring: the ring.
 * @node: the connection's node.
 *
 * "Now" is the base's cached clock (kt_base_now_ns()) rounded up to the
 * millisecond. The caller refreshes it (kt_base_update_time()) after the
 * activity when its turn may have run long since the clock was read: a
 * node touched from a stale clock would expire early by that much.
 */
void slot_touch(struct slot_ring *ring, struct slot_node *node);

/**
 * slot_remove() - take a node out of the ring (connection closing).
 * @ring: the ring.
 * @node: the node; harmless if not linked.
 *
 * Return: 1 if it was linked, 0 otherwise.
 */
int slot_remove(struct slot_ring *ring, struct slot_node *node);

/**
 * slot_ring_set_batch() - drain due nodes a batch at a time.
 * @ring: the ring.
 * @batch: nodes closed per slot_drain() call at most; 0 (the default): the
 *         ring's timer settles every due node itself, in one callback.
 *
 * With a batch, the owner must call slot_drain() in its loop, and must not
 * block in its wait while slot_draining() is true.
 */
static inline void slot_ring_set_batch(struct slot_ring *ring, size_t batch) { ring->batch = batch; }

/**
 * slot_ring_set_budget() - drain due nodes a time budget at a time.
 * @ring: the ring.
 * @budget_us: wall time one slot_drain() call may spend, in microseconds; it
 *             stops after the node that reaches it (so it settles one node
 *             at least). 0: no time limit.
 * @clock_ns: the clock the budget is read from, in nanoseconds; NULL for
 *            CLOCK_MONOTONIC (tests pass a counting one).
 *
 * Like a batch, a budget makes the owner call slot_drain() in its loop.
 */
static inline void slot_ring_set_budget(struct slot_ring *ring, uint64_t budget_us,
					uint64_t (*clock_ns)(struct slot_ring *ring))
{
	ring->budget_ns = budget_us * 1000u;
	ring->clock_ns = clock_ns;
}

/**
 * slot_ring_set_spread() - pace the drain of a due second over @spread_ms.
 * @ring: the ring.
 * @spread_ms: from the moment a second falls due, its nodes (and any still
 *             waiting) are settled evenly over this many milliseconds of the
 *             base's clock, at most 1000 (a longer one is taken as 1000:
 *             the next second's restart of the pace would stretch what is
 *             left of this one's past the spread); 0: as fast as the budget
 *             and batch allow.
 * @burst: the first this many nodes of each due second go unpaced, so a
 *         second of a few connections is closed at once, not spread.
 *
 * The owner must then ask slot_drain_ready() before each wait, and block
 * while it says no: the ring's pace timer wakes it when a node may go.
 */
static inline void slot_ring_set_spread(struct slot_ring *ring, uint64_t spread_ms, size_t burst)
{
	/* A second falls due every second and restarts the pace over the
	 * whole list: a longer spread would be stretched again by each one. */
	ring->spread_ms = spread_ms < 1000u ? spread_ms : 1000u;
	ring->pace_burst = burst;
}

/**
 * slot_drain_ready() - whether slot_drain() would settle a node now.
 * @ring: the ring.
 *
 * When nodes wait but the pace allows none yet, arms the ring's pace timer
 * for when it will, and returns 0: the owner's wait may block until then.
 *
 * Return: 1 if slot_drain() has work now (the owner's wait should not
 * block), 0 otherwise.
 */
int slot_drain_ready(struct slot_ring *ring);

/**
 * slot_drain() - settle due nodes, oldest first: close at most one batch.
 * @ring: the ring.
 *
 * Each node taken off the drain list is handed to the expire callback if its
 * deadline has passed, or re-slotted if it was touched since. Stops at the
 * time budget, at what the pace allows, or after a batch of closes (or
 * eight batches of nodes looked at), whichever comes first.
 *
 * Return: the nodes closed.
 */
size_t slot_drain(struct slot_ring *ring);

/** slot_draining() - whether due nodes wait for slot_drain(). */
static inline int slot_draining(const struct slot_ring *ring) { return ring->drain.next != &ring->drain; }

/** slot_linked() - whether a node is in the ring. */
static inline int slot_linked(const struct slot_node *node) { return node->next != NULL; }

/** slot_count() - nodes in the ring. */
static inline size_t slot_count(const struct slot_ring *ring) { return ring->count; }

/** slot_ring_check() - invariants (for tests). Return: 0 if consistent. */
int slot_ring_check(const struct slot_ring *ring);

/**
 * slot_oldest() - the node idle the longest, to close it early.
 * @ring: the ring.
 * @eligible: whether a node may be chosen (a connection mid-request is in
 *            the ring too, and is not idle).
 * @max_visit: nodes examined at most (eligible or not).
 *
 * Nodes sit in the slot of their deadline, or one slot earlier when touched
 * lazily, so the least recently touched eligible node is on the drain list
 * (due, not yet settled), or in the first slot that holds an eligible one,
 * or in the next: all three are searched. The node is
 * left in the ring; the caller removes it (closing the connection does).
 *
 * Return: the eligible node with the oldest activity among those examined,
 * or NULL if none (an empty ring, or no eligible node within @max_visit).
 */
struct slot_node *slot_oldest(struct slot_ring *ring, int (*eligible)(const struct slot_node *node),
			      size_t max_visit);

#ifdef __cplusplus
}
#endif

#endif
