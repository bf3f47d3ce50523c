/*
 * The registry's private state, shared by registry.c (events, rules,
 * probes, the buffer) and control.c (filters, triggers): one mutex guards
 * all of it.
 */
#ifndef RINGTRACE_REGISTRY_INTERNAL_H
#define RINGTRACE_REGISTRY_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "common/internal.h"
#include "ringtrace/event.h"
#include "ringtrace/filter.h"

struct rt_tinst;

#define RT_COOKIE_EPOCH(c) ((c) & ~(uint64_t)((1u << RINGTRACE_EVC_SHIFT) - 1))
#define RT_COOKIE_KEEP (-1)

/*
 * Change the events cookie (see ringtrace_events_cookie_) in one atomic
 * operation: its epoch part to `epoch_bits` (already shifted; 0 for no
 * buffer) unless keep_epoch, tracing to `off` (1 off, 0 on,
 * RT_COOKIE_KEEP: as it is); REC is recomputed, FENCE kept.
 * Lock-free: triggers call it from tracepoints.
 */
static inline void rt_cookie_update(int keep_epoch, uint64_t epoch_bits, int off)
{
	uint64_t cur = __atomic_load_n(&ringtrace_events_cookie_, __ATOMIC_RELAXED);
	uint64_t next;
	do {
		uint64_t e = keep_epoch ? RT_COOKIE_EPOCH(cur) : epoch_bits;
		int o = off == RT_COOKIE_KEEP ? (cur & RINGTRACE_EVC_OFF) != 0 : off;
		next = e | (cur & RINGTRACE_EVC_FENCE) |
		       (o ? RINGTRACE_EVC_OFF : (e ? RINGTRACE_EVC_REC : 0));
	} while (!__atomic_compare_exchange_n(&ringtrace_events_cookie_, &cur, next, 1,
					      __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

struct rt_entry {
	/* NULL once unloaded. Written under rt_reg_lock with atomic stores:
	 * enable_event triggers read it from tracepoints (inside a read-side
	 * section; unloading clears it, then waits for a grace period). */
	struct ringtrace_event_desc *desc;
	char *name, *fmt, *file;
	struct ringtrace_field_desc *fields;
	uint32_t nfields, id, kind;
	int record;                        /* rules say: record it */
	struct ringtrace_probe_set *probes;
	/* control.c: the filter expression (NULL: none), the counter slot its
	 * rejected calls go to, what earlier slots and filters counted. */
	char *filter_expr;
	uint32_t slot;                     /* RINGTRACE_COUNT_SLOTS: none */
	uint64_t rejected_base;
	uint64_t overflow;                 /* atomic: counted without a slot */
	struct ringtrace_event_ctl_ *ctl;  /* what desc->ctl points to */
	struct rt_tinst **tinsts;          /* triggers on this event */
	uint32_t ntinsts;
	struct ringtrace_filter *filter;   /* compiled filter_expr */
};

RT_HIDDEN extern pthread_mutex_t rt_reg_lock;
RT_HIDDEN extern struct rt_entry **rt_entries;
RT_HIDDEN extern uint32_t rt_nentries;

RT_HIDDEN int rt_is_glob(const char *p);
RT_HIDDEN int rt_check_pattern(const char *p);
RT_HIDDEN void rt_set_state_bit(struct ringtrace_event_desc *d, uint32_t bit, int on);
RT_HIDDEN void rt_read_env_locked(void);

/* filter.c: the inline form of a one-predicate filter (1), or 0. */
RT_HIDDEN int rt_filter_fast_form(const ringtrace_filter *f, struct ringtrace_fast_pred_ *fp);

/* control.c, called with rt_reg_lock held */
RT_HIDDEN void rt_ctl_read_env_locked(void);
RT_HIDDEN void rt_ctl_event_loaded(struct rt_entry *e);
/* Detach filter and triggers from an event being unloaded; returns what
 * to pass to rt_ctl_free() after the grace period. */
RT_HIDDEN void *rt_ctl_event_unloading(struct rt_entry *e);
RT_HIDDEN void rt_ctl_free(void *ctl);
RT_HIDDEN uint64_t rt_ctl_rejected(const struct rt_entry *e);

/* rcu.c: sum / clear one counter slot over every thread's node. Clearing
 * is only correct when no section can still count into the slot. */
RT_HIDDEN uint64_t rt_rcu_slot_sum(uint32_t slot);
RT_HIDDEN void rt_rcu_slot_clear(uint32_t slot);

/* session.c: ask the recorder's thread for a snapshot (async-signal-safe);
 * 0 if no session is recording. */
RT_HIDDEN int rt_session_request_snapshot(void);

#endif
