/*
 * src/event/event_internal.h - shared by the files of the events layer:
 *   registry.c  the entries (one per event ever registered), ids,
 *               registration and unregistration, queries
 *   rules.c     enabling by name and glob, RINGTRACE_EVENTS
 *   probes.c    probe lists
 *   buffer.c    the events buffer, its cookie and the per-thread cache
 *   rcu.c       read-side sections and grace periods
 *   printf.c    binary printf: call sites and recording
 * Not installed; the layers above use event/event_api.h.
 */
#ifndef RINGTRACE_EVENT_INTERNAL_H
#define RINGTRACE_EVENT_INTERNAL_H

#include "event/event_api.h"
#include "ring/ring_api.h"

/* The hooks control registered (all NULL until then). Lock held to read. */
RT_HIDDEN extern struct rt_event_hooks rt_ev_hooks;

/* rules.c: 1 once the environment's rules were read. Lock held. */
RT_HIDDEN extern int rt_env_read;
/* rules.c: the rules' verdict for an event (e->record). Lock held. */
RT_HIDDEN void rt_apply_rules(struct rt_entry *e);
/* rules.c: say once, on stderr, which RINGTRACE_EVENTS patterns matched
 * no event. Lock held. */
RT_HIDDEN void rt_report_unmatched_locked(void);
/* registry.c: what the rules decided (recording) and the probes, onto the
 * descriptor; probes only (an enable_event trigger may have changed
 * recording since the rules last did). Lock held. */
RT_HIDDEN void rt_apply(struct rt_entry *e);
RT_HIDDEN void rt_apply_probes(struct rt_entry *e);

#endif /* RINGTRACE_EVENT_INTERNAL_H */
