/* SPDX-License-Identifier: MIT */
/*
 * ktimer/deadline.h - deadlines where zero means "disabled".
 *
 * Timeouts read from configuration follow the ntex convention: zero turns the
 * deadline off. The wheel's own calls do not: there zero means "the next
 * tick". Which call does what:
 *
 *	call                         zero means
 *	kt_timer_arm(t, 0)           fire on the next tick
 *	kt_mod_timer(t, now)         fire on the next tick
 *	kt_deadline_arm(t, 0)        disarm (delete) - deadline disabled
 *	kt_deadline_arm_s(t, 0)      disarm (delete) - deadline disabled
 *	kt_idle_setup(.., 0, ..)     tracker disabled, never fires
 *	kt_interval_setup(.., 0, ..) refused with -EINVAL
 *	kt_remote_arm(t, 0, ..)      fire in the owner's turn that applies it
 */
#ifndef KTIMER_DEADLINE_H
#define KTIMER_DEADLINE_H

#include "time.h"
#include "timer.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * kt_deadline_arm() - arm for @timeout from now, or disarm if it is zero.
 * @timer: a set-up timer.
 * @timeout: the deadline's length; zero disables it.
 *
 * Return: for a non-zero @timeout, as kt_timer_arm(); for zero, as
 * kt_timer_delete() (1 if a pending deadline was disarmed).
 */
int kt_deadline_arm(struct kt_timer *timer, kt_millis timeout);

/**
 * kt_deadline_arm_s() - kt_deadline_arm() for a kt_seconds setting.
 * @timer: a set-up timer.
 * @timeout: the deadline's length; zero disables it.
 *
 * Return: as kt_deadline_arm().
 */
int kt_deadline_arm_s(struct kt_timer *timer, kt_seconds timeout);

/**
 * kt_deadline_or() - a configured timeout, or a fallback where zero.
 * @configured: the configured value.
 * @fallback: used when @configured is zero.
 *
 * Return: @configured unless zero, else @fallback.
 */
kt_millis kt_deadline_or(kt_millis configured, kt_millis fallback);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KTIMER_DEADLINE_H */
