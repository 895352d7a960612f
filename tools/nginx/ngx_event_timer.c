/* SPDX-License-Identifier: MIT */
/*
 * ngx_event_timer.c - nginx's event timers on a ktimer wheel (see the
 * header). One struct kt_base per worker process, at 1 ms resolution, whose
 * clock is nginx's own ngx_current_msec (kt_base_set_clock_source()): a timer
 * fires on the first expiry pass whose ngx_current_msec has reached its key,
 * as in stock nginx, plus the wheel's rounding (at most one bucket of the
 * level the delay falls on: 8 ms for delays under 0.5 s, 64 ms under 4 s,
 * 512 ms under 32 s, 4.1 s under 4.3 min; never early).
 *
 * A run limit bounds one expiry pass: ngx_event_expire_timers() fires at most
 * NGX_KTIMER_RUN_LIMIT handlers (or what the environment variable
 * KTIMER_RUN_LIMIT says, passed to workers with nginx's `env` directive;
 * 0 means no limit, as stock nginx). What is left stays due and in order;
 * ngx_event_find_timer() then returns 0, so the worker polls its sockets
 * without blocking and the next pass goes on. A burst of expiries (a second
 * of idle keep-alive connections timing out together) is spread over turns
 * instead of holding up every active connection of the worker.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>

#include <stdlib.h>

#include <ktimer/base.h>
#include <ktimer/clock.h>


#ifndef NGX_KTIMER_RUN_LIMIT
#define NGX_KTIMER_RUN_LIMIT  128
#endif


struct kt_base  *ngx_event_timer_base;
ngx_uint_t       ngx_event_timer_noncancelable;

/* The ngx_current_msec the wheel's clock was last brought to. */
static ngx_msec_t  ngx_event_timer_synced;


static uint64_t
ngx_event_timer_clock(void *arg)
{
    return ngx_current_msec;
}


static void
ngx_event_timer_fire(struct kt_timer *t)
{
    ngx_event_t  *ev;

    ev = kt_container_of(t, ngx_event_t, timer);

    ngx_log_debug2(NGX_LOG_DEBUG_EVENT, ev->log, 0,
                   "event timer del: %d: %M",
                   ngx_event_ident(ev->data),
                   (ngx_msec_t) kt_timer_expires(&ev->timer));

    /* ktimer detached the node before the callback: only nginx's flags. */

    if (ev->timer_noncancelable) {
        ev->timer_noncancelable = 0;
        ngx_event_timer_noncancelable--;
    }

    ev->timer_set = 0;

    ev->timedout = 1;

    ev->handler(ev);
}


ngx_int_t
ngx_event_timer_init(ngx_log_t *log)
{
    int                     rc;
    char                   *env, *end;
    unsigned long           limit;
    struct kt_base_config   cfg;

    if (ngx_event_timer_base) {
        /* init_process runs once per worker; keep what is pending. */
        return NGX_OK;
    }

    cfg.resolution_ms = 1;
    cfg.clock = KT_CLOCK_MONOTONIC;
    cfg.start_ms = 0;

    ngx_event_timer_base = kt_base_new(&cfg);
    if (ngx_event_timer_base == NULL) {
        ngx_log_error(NGX_LOG_EMERG, log, ngx_errno, "kt_base_new() failed");
        return NGX_ERROR;
    }

    rc = kt_base_set_clock_source(ngx_event_timer_base,
                                  ngx_event_timer_clock, NULL);
    if (rc != 0) {
        ngx_log_error(NGX_LOG_EMERG, log, -rc,
                      "kt_base_set_clock_source() failed");
        return NGX_ERROR;
    }

    limit = NGX_KTIMER_RUN_LIMIT;

    env = getenv("KTIMER_RUN_LIMIT");
    if (env != NULL && *env != '\0') {
        limit = strtoul(env, &end, 10);
        if (*end != '\0' || limit > UINT32_MAX) {
            ngx_log_error(NGX_LOG_EMERG, log, 0,
                          "invalid KTIMER_RUN_LIMIT \"%s\"", env);
            return NGX_ERROR;
        }
    }

    /*
     * Handlers only: the time limit would be measured on this base's clock,
     * ngx_current_msec, which stands still during a pass.
     */
    rc = kt_base_set_run_limit(ngx_event_timer_base, (uint32_t) limit, 0);
    if (rc != 0) {
        ngx_log_error(NGX_LOG_EMERG, log, -rc,
                      "kt_base_set_run_limit() failed");
        return NGX_ERROR;
    }

    ngx_event_timer_noncancelable = 0;
    ngx_event_timer_synced = ngx_current_msec;

    return NGX_OK;
}


/*
 * Arm or re-arm ev for the absolute time key (ngx_current_msec + delay).
 *
 * Before placing it, the wheel's clock is brought to ngx_current_msec if the
 * event loop has moved that since the last expiry pass or arm (I/O handlers run
 * between the wait and ngx_event_expire_timers()): kt_base_update_time()
 * gathers what is due for the coming pass and fires nothing, so a timer
 * armed after a long wait is placed by its own delay, not by its delay plus
 * the length of the wait. From inside a timer handler the base refuses
 * (-EBUSY): its clock is already this pass's ngx_current_msec.
 */
void
ngx_event_timer_arm(ngx_event_t *ev, ngx_msec_t key)
{
    if (ngx_current_msec != ngx_event_timer_synced
        && kt_base_update_time(ngx_event_timer_base) == 0)
    {
        ngx_event_timer_synced = ngx_current_msec;
    }

    if (!ev->timer_ready) {
        /*
         * First timer of this event, or of its memory since nginx zeroed it
         * (a connection's events are zeroed when it is reused): the node is
         * idle, set it up once; timer_ready stays set across re-arms,
         * deletes and expiries.
         */
        if (kt_timer_setup(&ev->timer, ngx_event_timer_base,
                           ngx_event_timer_fire, 0) != 0)
        {
            ngx_log_error(NGX_LOG_ALERT, ev->log, 0,
                          "kt_timer_setup() failed");
            abort();
        }

        ev->timer_ready = 1;
        ev->timer_noncancelable = 0;
    }

    if (kt_mod_timer(&ev->timer, key) < 0) {
        ngx_log_error(NGX_LOG_ALERT, ev->log, 0, "kt_mod_timer() failed");
        abort();
    }

    /* Counted as armed, even if ev->cancelable changes while pending. */
    if (ev->timer_noncancelable != !ev->cancelable) {
        if (ev->cancelable) {
            ev->timer_noncancelable = 0;
            ngx_event_timer_noncancelable--;

        } else {
            ev->timer_noncancelable = 1;
            ngx_event_timer_noncancelable++;
        }
    }

    ev->timer_set = 1;
}


ngx_msec_t
ngx_event_find_timer(void)
{
    int64_t     t;
    ngx_msec_t  lag;

    t = kt_base_next_timeout(ngx_event_timer_base);

    if (t < 0) {
        return NGX_TIMER_INFINITE;
    }

    /*
     * Measured from the base's now, the ngx_current_msec of the last pass;
     * a handler may have refreshed ngx_current_msec since.
     */
    lag = ngx_current_msec - (ngx_msec_t) kt_base_now(ngx_event_timer_base);

    return (ngx_msec_t) t > lag ? (ngx_msec_t) t - lag : 0;
}


void
ngx_event_expire_timers(void)
{
    /* The pass reads ngx_current_msec: the wheel's clock is there after it. */
    ngx_event_timer_synced = ngx_current_msec;

    (void) kt_base_run(ngx_event_timer_base);
}


ngx_int_t
ngx_event_no_timers_left(void)
{
    return ngx_event_timer_noncancelable ? NGX_AGAIN : NGX_OK;
}
