/* SPDX-License-Identifier: MIT */
/*
 * ngx_event_timer.h - nginx's event timers on a ktimer wheel.
 *
 * Replaces nginx's red-black-tree timer module (src/event/ngx_event_timer.h)
 * in the build tools/nginx/build.sh makes; written against ktimer's public
 * API and nginx's documented timer interface, not derived from nginx's code.
 * Each worker process owns one ktimer base; ngx_event_t embeds a
 * struct kt_timer where it embedded a tree node.
 *
 * The interface nginx's other modules use is unchanged:
 *
 *   ngx_add_timer(ev, ms)   arm or re-arm ev for ngx_current_msec + ms; sets
 *                           ev->timer_set. A re-arm within
 *                           NGX_TIMER_LAZY_DELAY of the pending expiry keeps
 *                           the pending one, as stock nginx does.
 *   ngx_del_timer(ev)       disarm; clears ev->timer_set.
 *   ngx_event_find_timer()  how long the worker may block.
 *   ngx_event_expire_timers()  fire what is due: ev->timedout = 1, then
 *                           ev->handler(ev), with ev->timer_set cleared.
 *   ngx_event_no_timers_left()  NGX_OK once only cancelable timers are
 *                           pending (graceful shutdown waits for the rest).
 */

#ifndef _NGX_EVENT_TIMER_H_INCLUDED_
#define _NGX_EVENT_TIMER_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>

#include <ktimer/timer.h>


#define NGX_TIMER_INFINITE  (ngx_msec_t) -1

/*
 * Kept from stock nginx, for the same semantics: a connection that re-arms
 * its timeout on every read keeps its pending expiry while the new one is
 * within 300 ms of it (so a timeout may fire up to 300 ms before the last
 * re-arm asked, exactly as in stock nginx). On the wheel such a re-arm would
 * mostly be a same-bucket store rather than a tree delete and insert, so the
 * delay matters less for cost here; it stays so that timeouts fire when
 * stock nginx fires them.
 */
#define NGX_TIMER_LAZY_DELAY  300


ngx_int_t ngx_event_timer_init(ngx_log_t *log);
ngx_msec_t ngx_event_find_timer(void);
void ngx_event_expire_timers(void);
ngx_int_t ngx_event_no_timers_left(void);

void ngx_event_timer_arm(ngx_event_t *ev, ngx_msec_t key);


/* The worker's base: one per process, created by ngx_event_timer_init(). */
extern struct kt_base  *ngx_event_timer_base;

/* Pending timers whose event is not cancelable (graceful shutdown). */
extern ngx_uint_t       ngx_event_timer_noncancelable;


static ngx_inline void
ngx_event_del_timer(ngx_event_t *ev)
{
    ngx_log_debug2(NGX_LOG_DEBUG_EVENT, ev->log, 0,
                   "event timer del: %d: %M",
                   ngx_event_ident(ev->data),
                   (ngx_msec_t) kt_timer_expires(&ev->timer));

    (void) kt_timer_delete(&ev->timer);

    if (ev->timer_noncancelable) {
        ev->timer_noncancelable = 0;
        ngx_event_timer_noncancelable--;
    }

    ev->timer_set = 0;
}


static ngx_inline void
ngx_event_add_timer(ngx_event_t *ev, ngx_msec_t timer)
{
    ngx_msec_t      key;
    ngx_msec_int_t  diff;

    key = ngx_current_msec + timer;

    if (ev->timer_set) {
        diff = (ngx_msec_int_t) (key - (ngx_msec_t) kt_timer_expires(&ev->timer));

        if (ngx_abs(diff) < NGX_TIMER_LAZY_DELAY) {
            ngx_log_debug3(NGX_LOG_DEBUG_EVENT, ev->log, 0,
                           "event timer: %d, old: %M, new: %M",
                           ngx_event_ident(ev->data),
                           (ngx_msec_t) kt_timer_expires(&ev->timer), key);
            return;
        }
    }

    ngx_log_debug3(NGX_LOG_DEBUG_EVENT, ev->log, 0,
                   "event timer add: %d: %M:%M",
                   ngx_event_ident(ev->data), timer, key);

    ngx_event_timer_arm(ev, key);
}


#endif /* _NGX_EVENT_TIMER_H_INCLUDED_ */
