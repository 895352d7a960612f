// cross_dlopen LIB: load the shared library LIB with dlopen() at run time,
// as a plugin host would (an nginx dynamic module, a Python or Lua
// extension), and drive one timer through it on the manual clock.
//
// tools/check/cross_test builds this with musl-gcc and runs it under musl's
// dynamic linker against a musl-built libktimer.so: musl refuses to load a
// library whose thread-locals need the static TLS block ("initial-exec TLS
// resolves to dynamic definition"), which glibc tolerates while its surplus
// lasts. Prints "N passed, N failed" like the C tests and exits non-zero on
// any failure. Only the public API, looked up by name.
#include <ktimer/ktimer.h>

#include <dlfcn.h>
#include <stdio.h>

#include "tests/support/c_check.h"

static int fired;

static void on_fire(struct kt_timer *t)
{
	(void)t;
	fired++;
}

// dlsym() returns a data pointer; POSIX guarantees it converts to a function
// pointer, which ISO C does not promise, so the conversion goes through a
// union.
#define LOOKUP(h, var, name)                                                                           \
	do {                                                                                           \
		union {                                                                                \
			void *p;                                                                       \
			__typeof__(var) f;                                                             \
		} u_;                                                                                  \
		u_.p = dlsym(h, name);                                                                 \
		var = u_.f;                                                                            \
		CHECK(var != NULL);                                                                    \
		if (!var) {                                                                            \
			fprintf(stderr, "dlsym(%s): %s\n", name, dlerror());                           \
			return 1;                                                                      \
		}                                                                                      \
	} while (0)

int main(int argc, char **argv)
{
	struct kt_base *(*base_new)(const struct kt_base_config *);
	int (*timer_setup)(struct kt_timer *, struct kt_base *, kt_timer_fn, unsigned);
	int (*timer_arm)(struct kt_timer *, kt_millis);
	long (*base_advance)(struct kt_base *, kt_millis);
	int (*base_free)(struct kt_base *);
	struct kt_base_config cfg = {1, KT_CLOCK_MANUAL, 1000};
	struct kt_timer t;
	struct kt_base *b;
	void *h;

	if (argc != 2) {
		fprintf(stderr, "usage: %s LIBRARY.so\n", argv[0]);
		return 2;
	}
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	CHECK(h != NULL);
	if (!h) {
		fprintf(stderr, "dlopen(%s): %s\n", argv[1], dlerror());
		printf("%d passed, %d failed\n", passed, failed);
		return 1;
	}
	LOOKUP(h, base_new, "kt_base_new");
	LOOKUP(h, timer_setup, "kt_timer_setup");
	LOOKUP(h, timer_arm, "kt_timer_arm");
	LOOKUP(h, base_advance, "kt_base_advance");
	LOOKUP(h, base_free, "kt_base_free");
	b = base_new(&cfg);
	CHECK(b != NULL);
	if (b) {
		// The re-arm path reads the thread's current base (a thread-local):
		// the variable musl must resolve in a dlopen()ed library.
		CHECK(timer_setup(&t, b, on_fire, 0) == 0);
		CHECK(timer_arm(&t, KT_MILLIS(10)) == 0);
		CHECK(timer_arm(&t, KT_MILLIS(20)) == 1);
		CHECK(base_advance(b, KT_MILLIS(19)) == 0);
		CHECK(fired == 0);
		CHECK(base_advance(b, KT_MILLIS(1)) == 1);
		CHECK(fired == 1);
		CHECK(base_free(b) == 0);
	}
	CHECK(dlclose(h) == 0);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
