/* SPDX-License-Identifier: MIT */
/*
 * ktimer/call.h - one-shot calls that need no embedding: "call fn(arg) in
 * 200 ms" (libevent's event_base_once(), Go's time.AfterFunc()).
 *
 * Everything else in ktimer embeds its node in the caller's struct and never
 * allocates. A one-shot call has nowhere to embed, so the base keeps the
 * nodes in a pool of its own: kt_call_after() may allocate (a chunk of 64
 * nodes when the pool is empty); the nodes are reused, and the memory is
 * returned by kt_base_free(). For deadlines on objects you own, embed a
 * struct kt_timer instead.
 *
 * The handle is a value - a node and its generation - so cancelling is safe
 * at any time while the base lives: after the call ran (or was cancelled) the
 * node's generation has moved on and kt_call_cancel() reports 0.
 */
#ifndef KTIMER_CALL_H
#define KTIMER_CALL_H

#include <stdint.h>

#include "base.h"
#include "time.h"

#ifdef __cplusplus
extern "C" {
#endif

/** kt_call_fn - the function of a one-shot call; runs on the base's thread. */
typedef void (*kt_call_fn)(void *arg);

/**
 * struct kt_call - a handle to a one-shot call; copy it freely.
 *
 * Every field is private. A handle whose call could not be made has a NULL
 * node (kt_call_failed() is true).
 */
struct kt_call {
	void *kt__node;
	uint64_t kt__gen;
};

/**
 * kt_call_after() - call @fn(@arg) once, @delay from the turn's now.
 * @base: the base whose thread runs it.
 * @delay: as kt_timer_arm(): from the turn's instant, never early; zero runs
 *         it on the next tick.
 * @fn: the function.
 * @arg: its argument.
 *
 * May allocate (see the top of this header). @fn runs like a timer callback
 * and may call kt_call_after() and kt_call_cancel() itself.
 *
 * A call still pending when its base is freed is dropped without running
 * (like a pending timer): if @arg owns memory, cancel such calls first, or
 * keep track of their arguments.
 *
 * Return: the handle; on failure a handle for which kt_call_failed() is
 * true, with errno EINVAL (NULL @base or @fn), ENOMEM, or ERANGE (@delay
 * ends past the clock's limit, as kt_timer_arm() refuses it).
 */
struct kt_call kt_call_after(struct kt_base *base, kt_millis delay, kt_call_fn fn, void *arg);

/**
 * kt_call_cancel() - cancel a one-shot call that has not run.
 * @call: the handle kt_call_after() returned.
 *
 * Safe after the call ran or was cancelled (it then does nothing), as long as
 * the base has not been freed.
 *
 * Return: 1 if the call was pending and will not run, 0 if it already ran,
 * was cancelled, or the handle is a failed one.
 */
int kt_call_cancel(struct kt_call call);

/**
 * kt_call_pending() - whether a one-shot call is still to run.
 * @call: the handle.
 *
 * Return: 1 if pending, 0 if it ran, was cancelled or never was made.
 */
int kt_call_pending(struct kt_call call);

/**
 * kt_call_failed() - whether kt_call_after() could not make the call.
 * @call: the handle.
 *
 * Return: 1 if the handle is a failed one, 0 otherwise.
 */
static inline int kt_call_failed(struct kt_call call) { return !call.kt__node; }

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KTIMER_CALL_H */
