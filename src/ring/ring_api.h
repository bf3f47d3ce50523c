/*
 * src/ring/ring_api.h - what the layers above the ring buffer may use of
 * it beyond its public headers (ringtrace/ring.h, ringtrace/format.h and
 * the inline ringtrace/static/ring.h). Not installed.
 *
 * Contracts:
 *  - The ring buffer never calls upward. Where an upper layer must know of
 *    something the ring does, it registers a hook here.
 */
#ifndef RINGTRACE_RING_API_H
#define RINGTRACE_RING_API_H

#include "base/base.h"
#include "ringtrace/static/ring.h"

/*
 * Called when a writer state of the calling thread stops being valid:
 * state t when the thread retires from its buffer (release, thread exit)
 * or destroys the buffer, NULL for every state of the thread at once (in
 * a forked child, before signals are unblocked: the child starts with no
 * writer). Only the calling thread's states: other threads' caches of a
 * destroyed buffer's states are the upper layer's to invalidate, before
 * the destroy (the events layer detaches the buffer first, which changes
 * the cookie every cache is checked against).
 * An upper layer that caches a pointer to a writer state (the events
 * layer's recording fast path, ringtrace/static/event.h) forgets it here.
 * The hook runs in that thread, possibly with signals blocked or from a
 * thread-key destructor: it must be async-signal-safe, take no lock and
 * not call back into the ring buffer. One hook; registering replaces it.
 */
typedef void (*rt_ring_forget_fn)(struct ringtrace_wtls_ *t);
RT_HIDDEN void rt_ring_set_forget_hook(rt_ring_forget_fn fn);

struct ringtrace_rb;
/*
 * How many retired streams with drops beyond their pages this process's
 * writers have left in rb (ringtrace_rb_stream_drops): a recorder writes
 * its live metadata again when it grows, so that they survive a crash.
 */
RT_HIDDEN uint32_t rt_rb_retired_tails(const struct ringtrace_rb *rb);
/*
 * Make the buffer's clock conversion c (before any event is written: the
 * buffer just made): the same counter, converted as another process does
 * (a trace collection's programs all declare one conversion). Only a
 * cycle-counter buffer takes a cycle-counter conversion whose frequency
 * is within 0.1% of its own: 0, else -RINGTRACE_EINVAL (nothing changed).
 */
RT_HIDDEN int rt_rb_use_clock(struct ringtrace_rb *rb, const struct rt_clock *c);

/*
 * Who this process is, as the slots its threads claim record it
 * (identity.c). Read when the process first creates a buffer, not at
 * load: until then the cookie is 0.
 */
struct rt_identity {
	uint64_t cookie; /* random per process, never 0: a slot with it is one of our threads' */
	uint64_t pidns;  /* our pid namespace (inode of /proc/self/ns/pid), 0 if unknown */
	uint32_t pid;    /* getpid(), without the system call */
};
/*
 * The identity without reading it (no pthread_once, which is not
 * async-signal-safe): for the writers, whose buffer's creation read it
 * (rt_writers_open), and for whoever asks whether it was read.
 */
RT_HIDDEN const struct rt_identity *rt_identity_loaded(void);

#endif /* RINGTRACE_RING_API_H */
