/*
 * The events buffer: where enabled events are recorded, named by one word
 * (the cookie, ringtrace/static/event.h) that a tracepoint compares with
 * its thread's cached copy; the per-thread cache of the writer state; and
 * the hook through which the ring buffer says that a cached writer state
 * stopped being valid.
 */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event/event_internal.h"

uintptr_t ringtrace_events_rb_;
uint64_t ringtrace_events_cookie_;

/* The epoch part of the cookie for buffer rb (a buffer's epoch is unique
 * for the life of the process; a read-only attached buffer's is all ones,
 * which no writing buffer reaches). */
static uint64_t rt_cookie_epoch_bits(const ringtrace_rb *rb)
{
	if (!rb)
		return 0;
	return ((const struct ringtrace_rb_head_ *)(const void *)rb)->epoch << RINGTRACE_EVC_SHIFT;
}

void ringtrace_events_cache_(ringtrace_rb *rb)
{
	/* Inside a read-side section (the general path's): rb stays valid. */
	const struct ringtrace_rb_head_ *r = (const struct ringtrace_rb_head_ *)(const void *)rb;
	uint64_t c = __atomic_load_n(&ringtrace_events_cookie_, __ATOMIC_ACQUIRE);
	struct ringtrace_wtls_ *t = &ringtrace_wtls_[r->idx];
	if ((c & (RINGTRACE_EVC_REC | RINGTRACE_EVC_OFF | RINGTRACE_EVC_FENCE)) !=
		    RINGTRACE_EVC_REC ||
	    RT_COOKIE_EPOCH(c) != rt_cookie_epoch_bits(rb) || t->epoch != r->fast_epoch)
		return;
	/*
	 * A signal handler's event may run between any two of these stores.
	 * Its own general path does not cache (only the outermost section
	 * calls this: ringtrace_events_note_), and its fast path finds no
	 * cookie until the pair is complete. The re-check covers a handler
	 * that changed the state under us all the same (one that cached,
	 * or released the writer, or forked): if last_t changed or t is no
	 * longer attached, the pair (c, last_t) would be wrong, so drop it.
	 */
	ringtrace_thr_.cookie = RINGTRACE_THR_NO_COOKIE_;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	ringtrace_thr_.last_t = t;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	ringtrace_thr_.cookie = c;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (ringtrace_thr_.last_t != t || t->epoch != r->fast_epoch)
		ringtrace_thr_.cookie = RINGTRACE_THR_NO_COOKIE_;
}

/*
 * The ring buffer's hook (ring/ring_api.h): this thread's writer state t
 * (NULL: every one of them) is no longer valid; if it is the one cached,
 * forget it. Called in the thread itself, maybe from a fork child's
 * handler with signals blocked: a plain store and a compiler barrier.
 */
static void rt_events_forget(struct ringtrace_wtls_ *t)
{
	if (!t || ringtrace_thr_.last_t == t) {
		ringtrace_thr_.cookie = RINGTRACE_THR_NO_COOKIE_;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	}
}

__attribute__((constructor(101))) static void rt_buffer_init(void)
{
	rt_ring_set_forget_hook(rt_events_forget);
}

/*
 * check: report RINGTRACE_EVENTS patterns that match nothing. A session
 * started from the environment runs before the program's own events have
 * registered, so it asks for the report when it stops instead.
 */
int rt_events_set_buffer(ringtrace_rb *rb, int check)
{
	pthread_mutex_lock(&rt_reg_lock);
	rt_read_env_locked();
	if (rb && check)
		rt_report_unmatched_locked();
	/*
	 * The pointer first, then the cookie that names it: a tracepoint that
	 * reads the new cookie reads the new pointer. Tracing's on/off state
	 * (in the cookie; triggers change it from tracepoints) is kept.
	 */
	__atomic_store_n(&ringtrace_events_rb_, (uintptr_t)rb, __ATOMIC_RELEASE);
	rt_cookie_update(0, rt_cookie_epoch_bits(rb), RT_COOKIE_KEEP);
	pthread_mutex_unlock(&rt_reg_lock);
	ringtrace_synchronize();
	return 0;
}

int ringtrace_events_set_buffer(ringtrace_rb *rb)
{
	return rt_events_set_buffer(rb, 1);
}

int ringtrace_events_prepare_thread(void)
{
	/* (registers this thread's reader node, if it has none) */
	unsigned rd = ringtrace_read_lock();
	ringtrace_rb *rb = ringtrace_events_buffer_();
	int r = 0;
	if (rb && (r = ringtrace_rb_prepare_thread(rb)) == 0)
		ringtrace_events_note_(rb, rd); /* the writer state, cached for the fast path */
	ringtrace_read_unlock(rd);
	return r;
}
