// The one-second keep-alive slot ring, on the manual clock (paused time).
#include <gtest/gtest.h>

#include <ktimer/ktimer.h>

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
	static int expire(slot_ring *r, slot_node *n) {
		Ring *self = kt_container_of(r, Ring, ring);
		Conn *c = kt_container_of(n, Conn, node);
		if (c->busy)
			return 1;
		c->expirations++;
		c->expired_at = kt_base_now(self->base);
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
