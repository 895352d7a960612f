/* SPDX-License-Identifier: MIT */
/*
 * ktimer/ktimer.h - everything ktimer offers, in one include.
 *
 * The kernel-style names (timer_setup, mod_timer, ...) are opt-in: include
 * <ktimer/linux.h> as well if you want them. The epoll helper is in
 * <ktimer/epoll.h> (Linux-only system headers).
 */
#ifndef KTIMER_KTIMER_H
#define KTIMER_KTIMER_H

#include "base.h"
#include "call.h"
#include "clock.h"
#include "deadline.h"
#include "hrtimer.h"
#include "idle.h"
#include "interval.h"
#include "remote.h"
#include "time.h"
#include "timer.h"
#include "version.h"

#endif /* KTIMER_KTIMER_H */
