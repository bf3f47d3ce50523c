/*
 * src/event/event_api.h - what the layers above the events layer (the
 * filters and triggers of src/control, the metadata writer of src/ctf, the
 * recorder) may use of it beyond the public headers: the registry's
 * entries and lock, the events cookie, the per-thread counter slots, and
 * the hooks through which the events layer tells control about events.
 * Not installed.
 *
 * One mutex, rt_reg_lock, guards the registry and everything control
 * keeps per event. Tracepoints never take it.
 */
#ifndef RINGTRACE_EVENT_API_H
#define RINGTRACE_EVENT_API_H

#include <pthread.h>
#include <stdint.h>

#include "base/base.h"
#include "ringtrace/event.h"
#include "ringtrace/static/event.h"

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

/*
 * Make sure `want` read-side nodes are free for threads to come (mapping
 * the missing ones now): a new thread's first tracepoint then takes one
 * instead of mapping its own (a system call and page faults). Nodes are
 * never unmapped; a spare costs 8 KiB. Not for signal handlers.
 */
RT_HIDDEN void rt_rcu_spare_nodes(uint32_t want);
/*
 * Register the process for membarrier (or make readers fence), once; made
 * at a thread's first read-side section at the latest. Where sections
 * are about to begin (a session, a probe), so that the first does not pay
 * for it.
 */
RT_HIDDEN void rt_rcu_register(void);

/* One registry entry per event ever registered in the process. */
struct rt_entry {
	/* NULL once unloaded. Written under rt_reg_lock with atomic stores:
	 * enable_event triggers read it from tracepoints (inside a read-side
	 * section; unloading clears it, then waits for a grace period). */
	struct ringtrace_event_desc *desc;
	char *name, *fmt, *file;
	struct ringtrace_field_desc *fields;
	uint32_t nfields, id, kind;
	int record; /* rules say: record it */
	struct ringtrace_probe_set *probes;
	/* What the control layer keeps for this event (its filter, triggers,
	 * counters), owned by control; NULL until it needs some. */
	void *ctl;
};

RT_HIDDEN extern pthread_mutex_t rt_reg_lock;
RT_HIDDEN extern struct rt_entry **rt_entries; /* only appended to */
RT_HIDDEN extern uint32_t rt_nentries;

/* Event names: [A-Za-z_][A-Za-z0-9_:.]*; globs add * ? [ ] ! -. 0 or -EINVAL. */
RT_HIDDEN int rt_check_pattern(const char *p);
RT_HIDDEN int rt_is_glob(const char *p);
/* Set or clear one state bit of a loaded event (an atomic RMW: triggers
 * change RINGTRACE_EV_RECORD from tracepoints, without the lock). */
RT_HIDDEN void rt_set_state_bit(struct ringtrace_event_desc *d, uint32_t bit, int on);
/*
 * The registry's first consultation, once: read the environment's rules
 * (RINGTRACE_EVENTS, then the hooks' read_env), then register the events
 * whose registration was deferred until now (registry.c). Every function
 * that looks at the registry's entries or rules calls it first. Lock held.
 */
RT_HIDDEN void rt_read_env_locked(void);
/* Register the deferred events, in their order (rt_read_env_locked). */
RT_HIDDEN void rt_register_pending_locked(void);
/* The first registration found no rule in the environment and deferred. */
RT_HIDDEN int rt_env_found_quiet(void);

/*
 * The enable rules as they stand (a copy; NULL with a message when out of
 * memory), and putting them back: every loaded event then records as the
 * saved rules say, whatever the rules and triggers changed meanwhile.
 * Restoring frees the copy. For a session attached from outside
 * (src/record/attach.c): the program goes back to what it did before.
 */
struct rt_rules_saved;
RT_HIDDEN struct rt_rules_saved *rt_events_rules_save(void);
RT_HIDDEN void rt_events_rules_restore(struct rt_rules_saved *s);
/* Free the copy without putting it back (the process is exiting). */
RT_HIDDEN void rt_events_rules_discard(struct rt_rules_saved *s);

/*
 * The events layer's hooks into the layer above (src/control), all called
 * with rt_reg_lock held unless said otherwise:
 *   read_env   once, when the registry first reads the environment
 *              (RINGTRACE_FILTERS, RINGTRACE_TRIGGERS)
 *   loaded     an event was registered (or registered again)
 *   unloading  an event is being unregistered: detach what tracepoints
 *              may still use; returns what `unloaded` frees
 *   unloaded   after the grace period, without the lock
 *   info       has_filter and rejected of ringtrace_event_info
 * Setting them replays what happened before: read_env if the environment
 * was read already, loaded for every event loaded now.
 */
struct rt_event_hooks {
	void (*read_env)(void);
	void (*loaded)(struct rt_entry *e);
	void *(*unloading)(struct rt_entry *e);
	void (*unloaded)(void *p);
	void (*info)(const struct rt_entry *e, int *has_filter, uint64_t *rejected);
};
RT_HIDDEN void rt_event_set_hooks(const struct rt_event_hooks *h);

/*
 * The set_buffer of a session started from the environment: it runs
 * before the program's events have registered, so it does not report
 * RINGTRACE_EVENTS patterns that match nothing yet (check 0); the session
 * asks for that report when it stops (rt_events_report_unmatched).
 */
RT_HIDDEN int rt_events_set_buffer(ringtrace_rb *rb, int check);
RT_HIDDEN void rt_events_report_unmatched(void);

/* rcu.c: sum / clear one counter slot over every thread's node. Clearing
 * is only correct when no section can still count into the slot. */
RT_HIDDEN uint64_t rt_rcu_slot_sum(uint32_t slot);
RT_HIDDEN void rt_rcu_slot_clear(uint32_t slot);

#endif /* RINGTRACE_EVENT_API_H */
