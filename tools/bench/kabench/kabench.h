/* SPDX-License-Identifier: MIT */
/*
 * tools/bench/kabench/kabench.h - one ops table, many timer implementations.
 *
 * Every implementation keeps its timer node inside a connection struct
 * (128 bytes, or larger when its node does not fit), allocated through
 * jemalloc, and is driven by the same phase code in kabench.c.
 */
#ifndef KTIMER_TOOLS_KABENCH_H
#define KTIMER_TOOLS_KABENCH_H

#include <stddef.h>
#include <stdint.h>

#define KAB_CONN_SIZE 128u
#define KAB_KEEPALIVE_MS 30000u

/* The connection: a few fields a server would have, then the timer node. */
struct kab_conn {
	uint64_t id;
	uint64_t last_ms; /* simulation: last request */
	uint32_t fired;
	uint32_t closed;
	void *state; /* stands in for a server's other per-connection state */
	/*
	 * The implementation's node starts on a cache line of its own (the
	 * connections are 64-byte aligned), as a server would lay out a hot
	 * member: a 48-byte kt_timer at offset 32 would straddle two lines and
	 * pay a second miss that a 16-byte list node does not.
	 */
	_Alignas(64) unsigned char node[];
};

struct kab_impl {
	const char *name;
	const char *note;        /* what the phases mean for it, if different */
	size_t node_bytes;       /* sizeof the embedded node */
	size_t extra_bytes;      /* per-timer bytes outside the node (heap slot) */
	int allocs_per_timer;
	int settable_clock;      /* can run expire-in-time and the simulation */
	int fixed_timeout;       /* ignores the requested expiry: re-arm = touch */
	void *(*create)(size_t n, uint64_t now_ms);
	void (*destroy)(void *ctx);
	void (*init)(void *ctx, struct kab_conn *c);
	void (*arm)(void *ctx, struct kab_conn *c, uint64_t expires_ms);
	void (*cancel)(void *ctx, struct kab_conn *c);
	/* Move the clock to @now_ms (settable clocks) and fire what is due;
	 * without a settable clock: fire what is due now. Returns fired. */
	size_t (*advance)(void *ctx, uint64_t now_ms);
	/* ms until the next expiry from @now_ms, -1 if none. */
	int64_t (*next_timeout)(void *ctx, uint64_t now_ms);
	/* Timer-structure operations so far (links, unlinks, sifts...). */
	uint64_t (*ops)(void *ctx);
	/* Optional: the connection will be re-armed soon (the rearm phase calls
	 * it --prefetch-distance requests ahead). */
	void (*prefetch)(void *ctx, struct kab_conn *c);
	/* Optional: count the operations from here on; without it ops() counts
	 * always. The simulation's operations then come from a pass of their
	 * own, untimed (ktimer counts on a slower path, only when asked). */
	void (*count_ops)(void *ctx);
};

/* The ktimer rows' shared operations (impl_ktimer.c): @ctx is a struct
 * whose first member is the row's struct kt_base pointer. */
void kab_kt_init(void *ctx, struct kab_conn *c);
void kab_kt_arm(void *ctx, struct kab_conn *c, uint64_t expires_ms);
void kab_kt_cancel(void *ctx, struct kab_conn *c);
int64_t kab_kt_next_timeout(void *ctx, uint64_t now_ms);
uint64_t kab_kt_ops(void *ctx);
void kab_kt_count_ops(void *ctx);

/* Called by implementations when a timer fires. */
void kab_fired(struct kab_conn *c);

extern const struct kab_impl kab_ktimer, kab_ktimer_idle, kab_slots, kab_heap, kab_floor, kab_floor_walk;
extern const struct kab_impl kab_libevent, kab_libevent_common, kab_libuv, kab_libev;
extern const struct kab_impl kab_ktimer_prefetch, kab_ktimer_lazy, kab_floor_prefetch;
/* Opt-in rows (--turns): kt_base_run() turns, with and without a run limit.
 * Weak, so that tools/bench/kabench/ab can build kabench against a library from
 * before kt_base_set_run_limit() without them. */
extern const struct kab_impl kab_ktimer_turn __attribute__((weak));
extern const struct kab_impl kab_ktimer_turn_limited __attribute__((weak));
extern uint32_t kab_run_limit __attribute__((weak));

#endif
