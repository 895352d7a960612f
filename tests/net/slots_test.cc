// The one-second keep-alive slot ring, on the manual clock (paused time).
#include <gtest/gtest.h>

#include <ktimer/ktimer.h>

#include <algorithm>
#include <cerrno>
#include <random>
#include <vector>

#include "lib/testing/paused.h"
#include "net/slots.h"
#include "tests/support/harness.h"

using kt_test::ManualBase;

namespace {

struct Conn {
	slot_node node{};
	uint64_t expired_at = 0;
	int expirations = 0;
	int lives = 0; // touches that linked it (it can expire once per life)
	bool busy = false;
};

struct Ring {
	slot_ring ring;
	kt_base *base;
	std::vector<Conn> *conns = nullptr;
	std::vector<size_t> order; // indexes into *conns, as they expired
	static int expire(slot_ring *r, slot_node *n) {
		Ring *self = kt_container_of(r, Ring, ring);
		Conn *c = kt_container_of(n, Conn, node);
		if (c->busy)
			return 1;
		c->expirations++;
		c->expired_at = kt_base_now(self->base);
		if (self->conns)
			self->order.push_back(size_t(c - self->conns->data()));
		return 0;
	}
	Ring(kt_base *b, unsigned t) : base(b) { EXPECT_EQ(slot_ring_init(&ring, b, KT_SECONDS(t), expire), 0); }
	~Ring() { slot_ring_destroy(&ring); }
};

} // namespace

TEST(Slots, ZeroTimeoutIsEinval) {
	ManualBase b;
	slot_ring r;
	EXPECT_EQ(slot_ring_init(&r, b, KT_SECONDS(0), Ring::expire), -EINVAL);
}

TEST(Slots, EmptyRingNeverWakes) {
	ManualBase b(16, 0);
	Ring r(b, 5);
	EXPECT_EQ(kt_base_next_timeout(b), -1);
	Conn c;
	slot_touch(&r.ring, &c.node);
	EXPECT_GE(kt_base_next_timeout(b), 0);
	slot_remove(&r.ring, &c.node);
	EXPECT_EQ(kt_base_next_timeout(b), -1); // last one left: timer off
	EXPECT_EQ(slot_ring_check(&r.ring), 0);
}

TEST(Slots, IdleConnectionClosedBetweenTAndTPlusOneSecondPlusUnit) {
	for (unsigned t : {1u, 2u, 5u, 30u}) {
		for (uint64_t start : {uint64_t(0), uint64_t(1), uint64_t(999), uint64_t(12345)}) {
			ManualBase b(16, start);
			Ring r(b, t);
			Conn c;
			slot_touch(&r.ring, &c.node);
			uint64_t last = kt_base_now(b);
			kt_paused_run_until_idle(b, 1000);
			ASSERT_EQ(c.expirations, 1) << t << " " << start;
			EXPECT_GE(c.expired_at, last + t * 1000) << t << " " << start;
			EXPECT_LE(c.expired_at, last + t * 1000 + 1000 + 16) << t << " " << start;
			EXPECT_FALSE(slot_linked(&c.node));
		}
	}
}

TEST(Slots, TouchIsAStoreUnlessTheSlotMovesMoreThanASecond) {
	ManualBase b(16, 0);
	Ring r(b, 5);
	Conn c;
	slot_touch(&r.ring, &c.node);
	uint64_t moves0 = r.ring.stats.moves;
	// Touched every 100 ms for 10 s: the slot advances 10 s, the node moves
	// only when its new slot is more than one second past its current one.
	for (int i = 0; i < 100; i++) {
		kt_paused_sleep(b, KT_MILLIS(100));
		slot_touch(&r.ring, &c.node);
		EXPECT_EQ(slot_ring_check(&r.ring), 0);
	}
	uint64_t moves = r.ring.stats.moves - moves0;
	EXPECT_LE(moves, 6u);  // about every two seconds
	EXPECT_GE(moves, 3u);
	EXPECT_EQ(c.expirations, 0);
	EXPECT_EQ(r.ring.stats.touches, 101u);
}

TEST(Slots, RingWakesAtMostOncePerSecondWithIdleConnections) {
	ManualBase b(16, 0);
	Ring r(b, 5);
	std::vector<Conn> c(1000);
	std::mt19937 rng(1);
	// 1000 connections becoming idle at random times over 10 s.
	for (int ms = 0; ms < 10000; ms += 10) {
		Conn &x = c[rng() % c.size()];
		x.lives += !slot_linked(&x.node);
		slot_touch(&r.ring, &x.node);
		kt_paused_sleep(b, KT_MILLIS(10));
	}
	kt_paused_run_until_idle(b, 100000);
	uint64_t seconds = kt_base_now(b) / 1000 + 1;
	EXPECT_LE(r.ring.stats.wakeups, seconds + 2);
	for (auto &x : c)
		EXPECT_EQ(x.expirations, x.lives); // each idle life ends exactly once
	EXPECT_EQ(slot_count(&r.ring), 0u);
}

TEST(Slots, BusyConnectionIsKeptAndReSlotted) {
	ManualBase b(16, 0);
	Ring r(b, 1);
	Conn c;
	c.busy = true;
	slot_touch(&r.ring, &c.node);
	kt_paused_sleep(b, KT_MILLIS(5000));
	EXPECT_EQ(c.expirations, 0);
	EXPECT_TRUE(slot_linked(&c.node));
	c.busy = false;
	kt_paused_sleep(b, KT_MILLIS(3000));
	EXPECT_EQ(c.expirations, 1);
}

TEST(Slots, ManyConnectionsRandomTouchesNeverEarlyNeverLost) {
	ManualBase b(16, 0);
	Ring r(b, 3);
	std::vector<Conn> c(500);
	std::vector<uint64_t> last(c.size(), 0);
	std::vector<bool> live(c.size(), false);
	std::mt19937 rng(42);
	for (int step = 0; step < 20000; step++) {
		size_t i = rng() % c.size();
		if (c[i].expirations) { // expired: check it, then reuse it
			EXPECT_GE(c[i].expired_at, last[i] + 3000) << i;
			EXPECT_LE(c[i].expired_at, last[i] + 3000 + 1000 + 16) << i;
			c[i] = Conn();
			live[i] = false;
		}
		switch (rng() % 4) {
		case 0:
		case 1:
			slot_touch(&r.ring, &c[i].node);
			last[i] = kt_base_now(b);
			live[i] = true;
			break;
		case 2:
			slot_remove(&r.ring, &c[i].node);
			live[i] = false;
			break;
		default:
			kt_paused_sleep(b, KT_MILLIS(rng() % 400));
			break;
		}
		ASSERT_EQ(slot_ring_check(&r.ring), 0);
		for (size_t k = 0; k < c.size(); k += 37) // nothing overdue is still linked
			if (live[k] && !c[k].expirations)
				ASSERT_LT(kt_base_now(b), last[k] + 3000 + 1000 + 16 + 1) << k;
	}
}

// With a batch, the due second moves to the drain list and the timer closes
// nothing; each slot_drain() closes a batch at most, oldest first. A node
// touched while it waits is re-slotted (whether the touch moved it at once
// or left it lazily in the due second's list), a node removed while it waits
// never expires, and every other node expires exactly once.
TEST(Slots, BatchDrainsOldestFirstAtMostABatchPerCall) {
	ManualBase b(16, 100);
	Ring r(b, 1);
	std::vector<Conn> c(20);
	r.conns = &c;
	slot_ring_set_batch(&r.ring, 3);
	for (auto &x : c) { // idle from 100 ms to 290 ms: all due in second 2
		slot_touch(&r.ring, &x.node);
		kt_paused_sleep(b, KT_MILLIS(10));
	}
	kt_paused_sleep(b, KT_MILLIS(1500 - kt_base_now(b)));
	slot_touch(&r.ring, &c[18].node); // deadline 2.5 s: lazily left in second 2
	uint64_t touched18 = kt_base_now(b);
	kt_paused_sleep(b, KT_MILLIS(2050 - kt_base_now(b)));
	ASSERT_TRUE(slot_draining(&r.ring));
	EXPECT_TRUE(r.order.empty()) << "the timer closed connections itself";
	EXPECT_EQ(slot_ring_check(&r.ring), 0);
	slot_touch(&r.ring, &c[19].node); // waiting, touched: moves out at once
	uint64_t touched19 = kt_base_now(b);
	EXPECT_EQ(slot_remove(&r.ring, &c[10].node), 1); // waiting, removed

	int calls = 0;
	while (slot_draining(&r.ring) && calls < 100) {
		size_t before = r.order.size();
		EXPECT_LE(slot_drain(&r.ring), 3u);
		EXPECT_LE(r.order.size() - before, 3u);
		ASSERT_EQ(slot_ring_check(&r.ring), 0);
		calls++;
	}
	EXPECT_GE(calls, 6); // 17 due, 3 per call
	std::vector<size_t> want;
	for (size_t i = 0; i < 18; i++) // not 18 nor 19 (active since), nor 10 (removed)
		if (i != 10)
			want.push_back(i);
	EXPECT_EQ(r.order, want);
	EXPECT_EQ(c[18].expirations, 0);
	EXPECT_EQ(c[19].expirations, 0);
	EXPECT_TRUE(slot_linked(&c[18].node));
	EXPECT_TRUE(slot_linked(&c[19].node));

	// The two re-slotted nodes expire later, once, never early.
	for (int i = 0; i < 400 && slot_count(&r.ring); i++) {
		kt_paused_sleep(b, KT_MILLIS(10));
		slot_drain(&r.ring);
		ASSERT_EQ(slot_ring_check(&r.ring), 0);
	}
	EXPECT_EQ(slot_count(&r.ring), 0u);
	EXPECT_EQ(c[18].expirations, 1);
	EXPECT_EQ(c[19].expirations, 1);
	EXPECT_GE(c[18].expired_at, touched18 + 1000);
	EXPECT_GE(c[19].expired_at, touched19 + 1000);
	EXPECT_EQ(c[10].expirations, 0);
	EXPECT_EQ(r.ring.stats.drain_max, 3u);
	EXPECT_EQ(kt_base_next_timeout(b), -1); // all gone: the ring's timer is off
}

namespace {
// The budget's clock for the tests: every read advances it by 100 us, so a
// drain turn's reads, not the machine's speed, decide where it stops.
uint64_t counting_ns;
uint64_t counting_clock(slot_ring *) { return counting_ns += 100000; }
} // namespace

// With a time budget, a turn settles nodes until its clock reaches the
// budget, oldest first: with 100 us per read and a 250 us budget, the third
// node's check passes it, so every turn but the last closes three. Nothing
// is lost or closed twice; a node touched while it waits is re-slotted.
TEST(Slots, BudgetDrainsOldestFirstUntilTheTurnsTimeIsSpent) {
	ManualBase b(16, 100);
	Ring r(b, 1);
	std::vector<Conn> c(20);
	r.conns = &c;
	slot_ring_set_budget(&r.ring, 250, counting_clock);
	for (auto &x : c) { // idle from 100 ms to 290 ms: all due in second 2
		slot_touch(&r.ring, &x.node);
		kt_paused_sleep(b, KT_MILLIS(10));
	}
	kt_paused_sleep(b, KT_MILLIS(2050 - kt_base_now(b)));
	ASSERT_TRUE(slot_draining(&r.ring));
	EXPECT_TRUE(r.order.empty()) << "the timer closed connections itself";
	EXPECT_EQ(r.ring.drain_len, 20u);
	EXPECT_EQ(slot_drain_ready(&r.ring), 1); // no pace: ready at once
	slot_touch(&r.ring, &c[19].node);         // touched while waiting: moves out
	std::vector<size_t> per_turn;
	for (int calls = 0; slot_draining(&r.ring) && calls < 100; calls++) {
		per_turn.push_back(slot_drain(&r.ring));
		ASSERT_EQ(slot_ring_check(&r.ring), 0);
	}
	std::vector<size_t> want_turns = {3, 3, 3, 3, 3, 3, 1};
	EXPECT_EQ(per_turn, want_turns);
	std::vector<size_t> want;
	for (size_t i = 0; i < 19; i++)
		want.push_back(i);
	EXPECT_EQ(r.order, want);
	EXPECT_EQ(r.ring.stats.drain_turns, 7u);
	EXPECT_EQ(r.ring.stats.budget_stops, 6u); // the last turn emptied the list
	EXPECT_EQ(r.ring.stats.drain_max, 3u);
	EXPECT_TRUE(slot_linked(&c[19].node));
	EXPECT_EQ(c[19].expirations, 0);
}

// With a spread, the due second's nodes are settled evenly over it: turns
// every 50 ms of a 500 ms spread close a tenth of the list each (rounded
// up), none before the second is due, all by its end; between turns the
// pace allows nothing and slot_drain_ready() arms the ring's pace timer
// instead of asking for a poll.
TEST(Slots, SpreadPacesTheDrainEvenlyOverTheSpread) {
	ManualBase b(1, 100);
	Ring r(b, 1);
	std::vector<Conn> c(40);
	r.conns = &c;
	slot_ring_set_spread(&r.ring, 500, 0);
	for (auto &x : c) { // idle from 100 ms to 490 ms: all due in second 2
		slot_touch(&r.ring, &x.node);
		kt_paused_sleep(b, KT_MILLIS(10));
	}
	kt_paused_sleep(b, KT_MILLIS(2000 - kt_base_now(b)));
	ASSERT_TRUE(slot_draining(&r.ring));
	uint64_t due = kt_base_now(b);
	EXPECT_EQ(slot_drain(&r.ring), 0u); // no time of the spread has passed
	EXPECT_EQ(slot_drain_ready(&r.ring), 0);
	EXPECT_GE(kt_base_next_timeout(b), 0); // the pace timer will wake the owner
	std::vector<size_t> per_turn;
	for (int i = 0; i < 20 && slot_draining(&r.ring); i++) {
		kt_paused_sleep(b, KT_MILLIS(50));
		per_turn.push_back(slot_drain(&r.ring));
		ASSERT_EQ(slot_ring_check(&r.ring), 0);
	}
	EXPECT_EQ(per_turn, std::vector<size_t>(10, 4));
	EXPECT_EQ(kt_base_now(b), due + 500);
	EXPECT_EQ(r.order.size(), 40u);
	for (size_t i = 0; i < r.order.size(); i++)
		EXPECT_EQ(r.order[i], i);
	EXPECT_EQ(slot_count(&r.ring), 0u);
}

// Past the spread, whatever is left goes as fast as the budget allows (a
// turn that comes late catches up at once), and a spread of 0 is no pace.
TEST(Slots, SpreadCatchesUpAfterALateTurn) {
	ManualBase b(1, 100);
	Ring r(b, 1);
	std::vector<Conn> c(30);
	r.conns = &c;
	slot_ring_set_spread(&r.ring, 300, 0);
	for (auto &x : c)
		slot_touch(&r.ring, &x.node);
	kt_paused_sleep(b, KT_MILLIS(2000 - kt_base_now(b)));
	ASSERT_TRUE(slot_draining(&r.ring));
	kt_paused_sleep(b, KT_MILLIS(100)); // a third of the spread
	EXPECT_EQ(slot_drain(&r.ring), 10u);
	kt_paused_sleep(b, KT_MILLIS(400)); // past its end
	EXPECT_EQ(slot_drain_ready(&r.ring), 1);
	EXPECT_EQ(slot_drain(&r.ring), 20u);
	EXPECT_FALSE(slot_draining(&r.ring));
	EXPECT_EQ(r.order.size(), 30u);
	EXPECT_EQ(slot_ring_check(&r.ring), 0);
}

// The burst: the first nodes of each due second go unpaced (a second of a
// few connections closes at once), the rest are paced as before.
TEST(Slots, SpreadLeavesTheFirstBurstOfASecondUnpaced) {
	ManualBase b(1, 100);
	Ring r(b, 1);
	std::vector<Conn> c(25);
	r.conns = &c;
	slot_ring_set_spread(&r.ring, 400, 5);
	for (auto &x : c)
		slot_touch(&r.ring, &x.node);
	kt_paused_sleep(b, KT_MILLIS(2000 - kt_base_now(b)));
	ASSERT_TRUE(slot_draining(&r.ring));
	EXPECT_EQ(slot_drain_ready(&r.ring), 1);
	EXPECT_EQ(slot_drain(&r.ring), 5u); // the burst, no time having passed
	EXPECT_EQ(slot_drain(&r.ring), 0u);
	EXPECT_EQ(slot_drain_ready(&r.ring), 0);
	kt_paused_sleep(b, KT_MILLIS(100)); // a quarter of the spread: a quarter of the 20 left
	EXPECT_EQ(slot_drain(&r.ring), 5u);
	kt_paused_sleep(b, KT_MILLIS(300));
	EXPECT_EQ(slot_drain(&r.ring), 15u);
	EXPECT_EQ(r.order.size(), 25u);
	for (size_t i = 0; i < r.order.size(); i++)
		EXPECT_EQ(r.order[i], i);
	EXPECT_EQ(slot_ring_check(&r.ring), 0);
}

// The allowance is the spread: every node of a due second is closed by its
// second plus the spread, also while later seconds keep falling due (each
// restarts the pace over the whole list). A spread over a second let every
// second that fell due stretch what was left of the earlier ones again:
// asked for 2000 ms, 2000 nodes followed by one node a second drained in
// about 5 s, shrinking by a fixed share per second, not to an end.
TEST(Slots, SpreadOverASecondStillClosesEveryNodeWithinTheSpread) {
	ManualBase b(1, 100);
	Ring r(b, 1);
	std::vector<Conn> c(2000), trickle(20);
	slot_ring_set_spread(&r.ring, 2000, 0);
	for (auto &x : c) // idle from 100 ms: all due in second 2
		slot_touch(&r.ring, &x.node);
	kt_paused_sleep(b, KT_MILLIS(2000 - kt_base_now(b)));
	ASSERT_TRUE(slot_draining(&r.ring));
	const uint64_t due = kt_base_now(b);
	size_t next = 0;
	for (int turn = 0; turn < 2000; turn++) { // 20 s in turns of 10 ms
		if (kt_base_now(b) % 1000 == 0 && next < trickle.size())
			slot_touch(&r.ring, &trickle[next++].node); // a second falls due every second
		if (slot_drain_ready(&r.ring))
			slot_drain(&r.ring);
		ASSERT_EQ(slot_ring_check(&r.ring), 0);
		kt_paused_sleep(b, KT_MILLIS(10));
	}
	uint64_t last = 0;
	for (const auto &x : c) {
		ASSERT_EQ(x.expirations, 1);
		last = std::max(last, x.expired_at);
	}
	EXPECT_LE(last, due + 2000) << "the last node closed " << last - due << " ms after its second";
}

// The pace of a second that falls due while an earlier one still waits:
// the earlier nodes go on as they were allowed, the new ones are paced over
// the spread. Run @turns turns of 10 ms from second 2 on, @n nodes due in
// second 2 and one more in each second after it; return when the last of
// the @n closed, in ms after second 2.
static uint64_t drain_with_later_seconds(uint64_t spread, uint64_t budget_us, size_t n, int turns) {
	ManualBase b(1, 100);
	Ring r(b, 1);
	std::vector<Conn> c(n), trickle(turns / 100 + 1);
	slot_ring_set_spread(&r.ring, spread, 0);
	if (budget_us)
		slot_ring_set_budget(&r.ring, budget_us, counting_clock);
	for (auto &x : c) // idle from 100 ms: all due in second 2
		slot_touch(&r.ring, &x.node);
	kt_paused_sleep(b, KT_MILLIS(2000 - kt_base_now(b)));
	EXPECT_TRUE(slot_draining(&r.ring));
	const uint64_t due = kt_base_now(b);
	size_t next = 0;
	for (int turn = 0; turn < turns; turn++) {
		if (kt_base_now(b) % 1000 == 0 && next < trickle.size())
			slot_touch(&r.ring, &trickle[next++].node); // a second falls due every second
		if (slot_drain_ready(&r.ring))
			slot_drain(&r.ring);
		EXPECT_EQ(slot_ring_check(&r.ring), 0);
		kt_paused_sleep(b, KT_MILLIS(10));
	}
	uint64_t last = 0;
	for (const auto &x : c) {
		EXPECT_EQ(x.expirations, 1);
		last = std::max(last, x.expired_at);
	}
	return last - due;
}

// Paced over a whole second, the last turn's share was due when the next
// second fell due, and that second restarted the pace over what was left:
// 20 nodes closed one a turn, 200 ms past the spread.
TEST(Slots, SpreadOfASecondEndsWhenTheNextSecondFallsDue) {
	EXPECT_LE(drain_with_later_seconds(1000, 0, 2000, 500), 1000u);
}

// Closing takes longer than the spread (3 closes a turn, 400 nodes: 1.34 s):
// what is left when the next second falls due goes on at the budget's pace,
// not paced again over the spread (it was: 2 a turn, 160 ms later).
TEST(Slots, ANextSecondDoesNotPaceAgainWhatTheBudgetHoldsBack) {
	EXPECT_LE(drain_with_later_seconds(500, 250, 400, 500), 1340u + 10u);
}
