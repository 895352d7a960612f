/* SPDX-License-Identifier: MIT */
/*
 * ktimer/loop.h - kept so that programs written against ktimer 0.1 still
 * compile: the wait plan is in <ktimer/base.h>, the cross-thread calls in
 * <ktimer/remote.h>.
 */
#ifndef KTIMER_LOOP_H
#define KTIMER_LOOP_H

#include "base.h"
#include "remote.h"

#endif /* KTIMER_LOOP_H */
