/*
 * lib/probes.h - the project's USDT probes, private: the library's (provider
 * "ktimer") and the server's (provider "httpd", net/probes.h). One set of
 * macros; the provider is KT__PROBE_PROVIDER, "ktimer" unless the module
 * defines it before including this header, as net/probes.h does.
 *
 * Built in when KT_PROBES is defined (CMake: KTIMER_PROBES; Bazel:
 * --define=ktimer_probes=on, the project's .bazelrc), which needs <sys/sdt.h> (systemtap-sdt-dev) at build
 * time only: a probe is a nop in the code and an entry in the ELF note
 * .note.stapsdt, nothing is linked or loaded at run time.
 *
 * Every probe has an is-enabled semaphore: KT__PROBE_ON(name) is a load of
 * a 16-bit counter the tracer raises while attached, and a branch predicted
 * not taken, so an untraced probe costs that and nothing more; what only a
 * tracer needs (a clock read, the pending count) is computed inside the
 * test. The semaphores (PROVIDER_NAME_semaphore, the name <sys/sdt.h> gives
 * them in the note) are hidden symbols in section .probes: not exported
 * (the version script keeps only kt_ names; the static library's internals
 * are made local), and found by the tracer through the note, not by name.
 *
 * The arm and cancel probes (arm, cancel, hr_arm, hr_cancel) sit on the
 * paths a server calls per I/O event, a few dozen instructions long, where
 * a semaphore's test would be a few per cent: they are not tested. A probe
 * is one nop, and its arguments are in registers at the site already, so
 * it fires, to nobody, at the cost of that nop (BENCHMARKS.md, "Probes");
 * a tracer raises their semaphores as any other, which nothing reads.
 *
 * The expiry probes are not tested per timer: the firing loops test their
 * semaphores once per call and run a copy of the loop with the probes in
 * it when a tracer is attached (wheel.c's fire_traced(), hrtimer.c's
 * hr_fire_traced()), so the untraced loop is the one a build without
 * probes has.
 *
 * The probe list and each probe's arguments are documented in
 * ktimer_probes(7) (man/man7/ktimer_probes.7, docs/TRACING.md), and
 * tools/check/probes_check compares the built library's and server's notes
 * with it.
 *
 * Use, in the one .c file that fires a probe:
 *
 *	KT__PROBE_DEFINE(wait_plan);
 *	...
 *	if (KT__PROBE_ON(wait_plan))
 *		KT__PROBE4(wait_plan, b, kind, deadline_ns, precise);
 */
#ifndef KT_LIB_PROBES_H
#define KT_LIB_PROBES_H

#ifndef KT__PROBE_PROVIDER
#define KT__PROBE_PROVIDER ktimer
#endif

#ifdef KT_PROBES
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

/* PROVIDER_NAME_semaphore, KT__PROBE_PROVIDER expanded before the paste. */
#define KT__PROBE_SEM_(provider, name) provider##_##name##_semaphore
#define KT__PROBE_SEM(provider, name) KT__PROBE_SEM_(provider, name)
#define KT__PROBE_DEFINE(name)                                                    \
	__attribute__((section(".probes"), used, visibility("hidden"))) unsigned short \
		KT__PROBE_SEM(KT__PROBE_PROVIDER, name);                                \
	extern unsigned short KT__PROBE_SEM(KT__PROBE_PROVIDER, name)
#define KT__PROBE_ON(name) __builtin_expect(KT__PROBE_SEM(KT__PROBE_PROVIDER, name) != 0, 0)
#define KT__PROBE1(name, a) STAP_PROBE1(KT__PROBE_PROVIDER, name, a)
#define KT__PROBE2(name, a, b) STAP_PROBE2(KT__PROBE_PROVIDER, name, a, b)
#define KT__PROBE3(name, a, b, c) STAP_PROBE3(KT__PROBE_PROVIDER, name, a, b, c)
#define KT__PROBE4(name, a, b, c, d) STAP_PROBE4(KT__PROBE_PROVIDER, name, a, b, c, d)
#define KT__PROBE5(name, a, b, c, d, e) STAP_PROBE5(KT__PROBE_PROVIDER, name, a, b, c, d, e)
#else
/* Compiled out: the arguments are not evaluated, but count as used, so a
 * variable computed for a probe alone (a start time) raises no warning. */
#define KT__PROBE_DEFINE(name) extern int kt__probe_unused_##name
#define KT__PROBE_ON(name) 0
#define KT__PROBE1(name, a) ((void)(0 ? ((void)(a), 0) : 0))
#define KT__PROBE2(name, a, b) ((void)(0 ? ((void)(a), (void)(b), 0) : 0))
#define KT__PROBE3(name, a, b, c) ((void)(0 ? ((void)(a), (void)(b), (void)(c), 0) : 0))
#define KT__PROBE4(name, a, b, c, d) ((void)(0 ? ((void)(a), (void)(b), (void)(c), (void)(d), 0) : 0))
#define KT__PROBE5(name, a, b, c, d, e) ((void)(0 ? ((void)(a), (void)(b), (void)(c), (void)(d), (void)(e), 0) : 0))
#endif

#endif /* KT_LIB_PROBES_H */
