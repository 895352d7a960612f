// SPDX-License-Identifier: MIT
/* lib/deadline.c - deadlines where zero means "disabled" (see the header). */
#include "ktimer/deadline.h"

#include "lib/internal.h"

int kt_deadline_arm(struct kt_timer *t, kt_millis timeout)
{
	KT__OWNER_CHECK_TIMER(t);
	if (timeout.ms == 0)
		return kt_timer_delete(t);
	return kt_timer_arm(t, timeout);
}

int kt_deadline_arm_s(struct kt_timer *t, kt_seconds timeout)
{
	KT__OWNER_CHECK_TIMER(t);
	return kt_deadline_arm(t, kt_millis_from_seconds(timeout));
}

kt_millis kt_deadline_or(kt_millis configured, kt_millis fallback)
{
	return configured.ms ? configured : fallback;
}
