// libFuzzer target: an operation stream against the wheel and a reference
// model (the differential test's rules), checking every outcome.
//
// Each input byte pair is one operation on one of 16 timers embedded in
// heap-allocated "connections": setup, arm, mod, mod_pending, reduce,
// delete, shutdown, advance (small or huge), callbacks that re-arm or delete
// or free, free the base with timers pending. Checked: return values, never
// early, bounded lateness, nothing lost, nothing doubled, kt_base_check().
#include <ktimer/ktimer.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr int kTimers = 16;

struct Conn {
	kt_timer timer;
	int id;
};

struct Model {
	bool set_up = false, shut = false, pending = false;
	uint64_t expires = 0, latest = 0;
};

struct State {
	kt_base *base = nullptr;
	unsigned res = 16;
	Conn *conn[kTimers] = {};
	Model m[kTimers];
	int cb_action = 0; // what the next callback does
	uint8_t cb_arg = 0;
};

State *S;

[[noreturn]] void fail(const char *what, int id) {
	fprintf(stderr, "wheel_fuzz: %s (timer %d)\n", what, id);
	abort();
}

uint64_t bound(uint64_t now, uint64_t expires) {
	unsigned res = S->res;
	uint64_t next_tick = now / res + 1;
	uint64_t u = expires / res + (expires % res != 0);
	uint64_t delta = u > next_tick ? u - next_tick : 0, limit = 63, gran = 1;
	for (int lvl = 0; lvl < 7 && delta >= limit; lvl++) {
		limit *= 8;
		gran *= 8;
	}
	uint64_t start = expires > now ? expires : now, slack = gran * res + res;
	return start > UINT64_MAX - slack ? UINT64_MAX : start + slack; // saturate
}

void model_arm(int id, uint64_t expires) {
	Model &m = S->m[id];
	uint64_t now = kt_base_now(S->base);
	if (!(m.pending && m.expires == expires))
		m.latest = bound(now, expires);
	m.pending = true;
	m.expires = expires;
}

void on_fire(kt_timer *t);

void check_ret(int got, int want, int id) {
	if (got != want) {
		fprintf(stderr, "got %d want %d\n", got, want);
		fail("wrong return value", id);
	}
}

// Arm through one of the API's arming calls; the model decides the result.
void arm(int id, int how, uint64_t expires) {
	Model &m = S->m[id];
	int want, got;
	if (!m.set_up)
		return;
	kt_timer *t = &S->conn[id]->timer;
	switch (how % 4) {
	case 0:
		want = m.shut ? -ESHUTDOWN : m.pending;
		got = kt_mod_timer(t, expires);
		check_ret(got, want, id);
		if (!m.shut)
			model_arm(id, expires);
		break;
	case 1:
		want = m.shut ? -ESHUTDOWN : m.pending;
		got = kt_mod_timer_pending(t, expires);
		check_ret(got, want, id);
		if (!m.shut && m.pending)
			model_arm(id, expires);
		break;
	case 2:
		want = m.shut ? -ESHUTDOWN : m.pending;
		got = kt_timer_reduce(t, expires);
		check_ret(got, want, id);
		if (!m.shut && (!m.pending || expires < m.expires))
			model_arm(id, expires);
		break;
	default:
		want = m.shut ? -ESHUTDOWN : m.pending ? -EBUSY : 0;
		got = kt_add_timer(t, expires);
		check_ret(got, want, id);
		if (!m.shut && !m.pending)
			model_arm(id, expires);
		break;
	}
}

void del(int id, bool shutdown) {
	Model &m = S->m[id];
	if (!m.set_up)
		return;
	int got = shutdown ? kt_timer_shutdown(&S->conn[id]->timer) : kt_timer_delete(&S->conn[id]->timer);
	check_ret(got, m.pending, id);
	m.pending = false;
	if (shutdown)
		m.shut = true;
}

void setup(int id) {
	if (S->m[id].pending)
		return; // setting up a pending timer is a caller bug; not exercised
	if (!S->conn[id]) {
		S->conn[id] = static_cast<Conn *>(malloc(sizeof(Conn)));
		S->conn[id]->id = id;
	}
	if (kt_timer_setup(&S->conn[id]->timer, S->base, on_fire, 0) != 0)
		fail("setup failed", id);
	S->m[id] = Model();
	S->m[id].set_up = true;
}

void on_fire(kt_timer *t) {
	Conn *c = kt_container_of(t, Conn, timer);
	int id = c->id;
	Model &m = S->m[id];
	uint64_t now = kt_base_now(S->base);
	if (!m.pending)
		fail("fired while not pending", id);
	if (now < m.expires)
		fail("fired early", id);
	if (now > m.latest)
		fail("fired late", id);
	if (kt_timer_pending(t))
		fail("pending inside its callback", id);
	m.pending = false;
	int action = S->cb_action;
	S->cb_action = 0;
	switch (action) {
	case 1: // re-arm itself, maybe for "now"
		arm(id, 0, now + S->cb_arg * 37u);
		break;
	case 2: // delete another
		del(S->cb_arg % kTimers, false);
		break;
	case 3: // free its own container
		free(c);
		S->conn[id] = nullptr;
		S->m[id] = Model();
		break;
	default:
		break;
	}
}

void advance(uint64_t by) {
	kt_base_advance(S->base, KT_MILLIS(by > KT_MILLIS_MAX ? KT_MILLIS_MAX : uint32_t(by)));
	uint64_t now = kt_base_now(S->base);
	for (int id = 0; id < kTimers; id++)
		if (S->m[id].pending && S->m[id].latest < now)
			fail("lost: not fired by its latest time", id);
}

void teardown(bool free_first) {
	if (free_first) {
		kt_base_free(S->base); // pending timers are detached, never fire
		for (int id = 0; id < kTimers; id++)
			if (S->conn[id] && kt_timer_pending(&S->conn[id]->timer))
				fail("pending after its base was freed", id);
	}
	for (int id = 0; id < kTimers; id++) {
		if (S->conn[id] && !free_first)
			kt_timer_delete(&S->conn[id]->timer);
		free(S->conn[id]);
		S->conn[id] = nullptr;
	}
	if (!free_first)
		kt_base_free(S->base);
	S->base = nullptr;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
	static const unsigned kRes[] = {1, 2, 4, 8, 16};
	static State st;
	st = State();
	S = &st;
	if (size < 1)
		return 0;
	st.res = kRes[data[0] % 5];
	kt_base_config cfg{st.res, KT_CLOCK_MANUAL, uint64_t(data[0]) * 1000003u};
	st.base = kt_base_new(&cfg);
	for (size_t i = 1; i + 1 < size; i += 2) {
		uint8_t op = data[i], arg = data[i + 1];
		int id = op % kTimers;
		uint64_t now = kt_base_now(st.base);
		switch (op >> 4) {
		case 0:
			setup(id);
			break;
		case 1:
		case 2:
		case 3: // short delays, across level 0 and 1
			arm(id, op >> 4, now + uint64_t(arg) * (op >> 4) * 3u);
			break;
		case 4: // long delays: every level
			arm(id, arg, now + (uint64_t(arg) << (arg % 28)));
			break;
		case 5: // the past, and beyond the wheel's reach
			arm(id, arg, arg & 1 ? now - (now > arg ? arg : now) : now + kt_wheel_reach_ms(st.res) + arg);
			break;
		case 6:
			arm(id, 0, UINT64_MAX - arg);
			break;
		case 7:
		case 8:
			del(id, false);
			break;
		case 9:
			del(id, true);
			break;
		case 10:
		case 11:
			advance(arg);
			break;
		case 12:
			advance(uint64_t(arg) * 1000);
			break;
		case 13:
			advance(uint64_t(arg) << 22); // up to ~12 days per step
			break;
		case 14:
			st.cb_action = arg % 4;
			st.cb_arg = arg;
			break;
		default:
			if (arg == 0xff) { // free the base with timers pending
				teardown(true);
				return 0;
			}
			kt_base_run(st.base);
			break;
		}
		// The invariant walker visits all 1,024 buckets: after every clock
		// step (where the state changes most) and every 8th operation.
		if (((op >> 4) >= 10 || (i & 15) == 1) && kt_base_check(st.base) != 0)
			fail(kt_base_check_str(kt_base_check(st.base)), i);
	}
	if (kt_base_check(st.base) != 0)
		fail(kt_base_check_str(kt_base_check(st.base)), -1);
	teardown(false);
	return 0;
}
