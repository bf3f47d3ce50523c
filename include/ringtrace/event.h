/*
 * ringtrace/event.h - the event registry, enabling, probes and the events
 * buffer: the run-time side of the events that ringtrace/tracepoint.h
 * defines (binary printf is ringtrace/printf.h).
 *
 * Contracts:
 *  - Enabling and disabling (by exact name or glob), registering and
 *    unregistering probes, and ringtrace_events_set_buffer() may be called
 *    from any thread at any time, concurrently with threads calling the
 *    tracepoints. They take a mutex and may sleep; never call them from a
 *    signal handler or a probe.
 *  - When ringtrace_probe_unregister() or ringtrace_events_set_buffer()
 *    returns, no thread is still running the removed probe or writing into
 *    the previous buffer (a grace period, see src/event/rcu.c), so the
 *    caller may free the probe's data or destroy the buffer.
 *  - Enabling and disabling are not barriers: a call that read the event's
 *    state just before ringtrace_event_disable() may still record its one
 *    event after disable returns (as with the kernel's tracepoints).
 *  - Tracepoints are async-signal-safe.
 *  - Probes must return normally: no C++ exception, longjmp or pthread_exit
 *    out of a probe (the read-side section would stay open; a thread that
 *    exits that way is cleaned up, but until then updaters wait).
 *  - A probe must not call dlopen()/dlclose(): unregistering a library's
 *    events runs in its destructor, under the dynamic loader's lock, and
 *    waits for running probes.
 *  - Event ids are assigned by the registry, never reused in a process;
 *    an event of a library unloaded with dlclose() keeps its id and schema
 *    (ringtrace_event_by_id() still finds it, for readers) but is no longer
 *    listed or enabled. A program that sets no RINGTRACE_EVENTS,
 *    RINGTRACE_FILTERS or RINGTRACE_TRIGGERS registers its events when
 *    the registry is first consulted (any function here, a session), in
 *    the order they were loaded, rather than at load: the same ids, and
 *    nothing done for a program that never records.
 *
 * The descriptors the event macros define, and the inline code of the
 * call sites, are in ringtrace/static/event.h (version-locked, not an
 * API). This header compiles as C and as C++.
 */
#ifndef RINGTRACE_EVENT_H
#define RINGTRACE_EVENT_H

#include <stddef.h>
#include <stdint.h>

#include "ringtrace/error.h"
#include "ringtrace/ring.h"
#include "ringtrace/schema.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One per event, defined by RINGTRACE_EVENT (ringtrace/static/event.h). */
struct ringtrace_event_desc;

/* ---- registry ------------------------------------------------------------ */

/* Called by the constructors/destructors the event macros generate. */
void ringtrace_event_register(struct ringtrace_event_desc *ev);
void ringtrace_event_unregister(struct ringtrace_event_desc *ev);

struct ringtrace_event_info {
	const char *name;
	uint32_t id;
	uint32_t kind; /* enum ringtrace_event_kind */
	const char *print_fmt;
	const struct ringtrace_field_desc *fields; /* owned by the registry */
	uint32_t nfields;
	int loaded;        /* 0 after its library was unloaded */
	int enabled;       /* recorded */
	uint64_t probes;   /* probes attached */
	int has_filter;    /* a filter decides what is recorded (ringtrace/filter.h) */
	uint64_t rejected; /* calls the filter kept out of the buffer, ever */
	const char *file;
};

/* Number of registry entries (loaded or not); entries are 0 .. n-1. */
uint32_t ringtrace_event_count(void);
int ringtrace_event_get(uint32_t index, struct ringtrace_event_info *out);
/* A loaded event by exact name: 0, or -RINGTRACE_ENOENT naming it. */
int ringtrace_event_lookup(const char *name, struct ringtrace_event_info *out);
/* Any event (even unloaded) by id: 0 or -RINGTRACE_ENOENT. */
int ringtrace_event_by_id(uint32_t id, struct ringtrace_event_info *out);

/*
 * Enable/disable recording of every loaded event whose name matches
 * `pattern` (an exact name or a glob with * ? [...]), and of events loaded
 * later that match it. Returns the number of loaded events matched (>= 1);
 * -RINGTRACE_EINVAL for a malformed pattern, -RINGTRACE_ENOENT if nothing
 * matches (the rule is still kept for libraries loaded later). The
 * message (ringtrace_last_error) names the pattern.
 */
int ringtrace_event_enable(const char *pattern);
int ringtrace_event_disable(const char *pattern);
/*
 * Apply a comma-separated list of patterns, "-" in front to disable:
 * "sched_*,net_rx,-sched_stat_*". This is what the environment variable
 * RINGTRACE_EVENTS holds at process start. Every pattern is checked
 * before any is applied; returns 0 or the first error.
 */
int ringtrace_events_configure(const char *spec);

/*
 * Where enabled events are recorded. NULL detaches. Returns after every
 * writer into the previous buffer has finished its event.
 */
int ringtrace_events_set_buffer(ringtrace_rb *rb);

/*
 * Do now what the calling thread's first recorded event would otherwise
 * do: register its read-side node and, if events are being recorded,
 * make it a writer of the events buffer (ringtrace_rb_prepare_thread)
 * with its state cached for the fast path. A thread whose first events
 * are timed (a worker's loop) calls it when it starts. (A session, when
 * it starts, maps the read-side node of its thread and a few for the
 * next threads, but claims no slot: a slot takes a stream number.)
 * 0 (also when nothing is recorded), or ringtrace_rb_prepare_thread()'s
 * error. Not for signal handlers.
 */
int ringtrace_events_prepare_thread(void);

/* ---- probes ---------------------------------------------------------------- */

typedef void (*ringtrace_probe_fn)(void);

/*
 * Attach a callback to an event; it receives (data, the event's arguments).
 * Use the typed wrappers ringtrace_probe_register_<event>(). A probe is
 * identified by (fn, data). Returns 0, or -RINGTRACE_EINVAL (already
 * attached, or NULL fn), -RINGTRACE_ENOENT (unregister: not attached).
 */
int ringtrace_probe_register(struct ringtrace_event_desc *ev, ringtrace_probe_fn fn, void *data);
int ringtrace_probe_unregister(struct ringtrace_event_desc *ev, ringtrace_probe_fn fn, void *data);

/* Wait until every read-side section (every running tracepoint and probe)
 * that began before the call has ended. */
void ringtrace_synchronize(void);

#ifdef __cplusplus
}
#endif
#endif /* RINGTRACE_EVENT_H */
