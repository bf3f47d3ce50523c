/*
 * ringtrace/static/event.h - what a tracepoint's generated code compiles:
 * event descriptors, probe lists, read-side sections, the events buffer
 * and its per-thread cache, and the inline form of a filter.
 *
 * VERSION-LOCKED INLINE CODE, NOT AN API (see ringtrace/static/layout.h).
 * The library's registry (src/event) and control layer (src/control)
 * write what is declared here; call sites only read it.
 */
#ifndef RINGTRACE_STATIC_EVENT_H
#define RINGTRACE_STATIC_EVENT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ringtrace/event.h"
#include "ringtrace/static/ring.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * What every recorded event reads of its thread, in one thread-local
 * object (the generated code materializes one TLS offset, not three):
 *   rnode    the thread's read-side node (below; defined in src/event/rcu.c).
 *   cookie, last_t  the events-buffer cookie (below) the thread last
 *            recorded under and its writer state in that buffer. While
 *            the cookie is current, an event's address depends on two
 *            loads (last_t, then the state in it), as DPDK's does: that
 *            chain is what an event costs right after a system call, when
 *            the pipeline is empty and the lines are no longer in L1.
 *            Reset (cookie = RINGTRACE_THR_NO_COOKIE_) whenever that state
 *            stops being the thread's writer in the buffer (retire, fork,
 *            destroy: the ring buffer calls the events layer's hook right
 *            after the state's epoch is cleared, so that a signal
 *            handler's event in between cannot cache it again, and before
 *            its slot or page change). Set only by the outermost read-side
 *            section (ringtrace_events_note_).
 */
/*
 * Defined by the top layer of the library (src/record/runtime.c). Every
 * event definition and printf call site refers to it, so that linking a
 * traced program with the static library brings in the whole runtime:
 * filters, triggers and the recorder that RINGTRACE_OUTPUT starts. (The
 * lower layers never refer upward; the program, above them all, does.)
 */
extern const int ringtrace_runtime_ RINGTRACE_LAYOUT_SYM_(ringtrace_runtime_);

struct ringtrace_reader_node;
/* (aligned to 32: in one cache line) */
struct __attribute__((aligned(32))) ringtrace_thr_ {
	struct ringtrace_reader_node *rnode;
	uint64_t cookie;
	struct ringtrace_wtls_ *last_t;
};
/* A cookie the events word never holds. */
#define RINGTRACE_THR_NO_COOKIE_ (~(uint64_t)0)
extern __thread struct ringtrace_thr_ ringtrace_thr_ RINGTRACE_LAYOUT_SYM_(ringtrace_thr_)
	__attribute__((tls_model("initial-exec")));

struct ringtrace_probe {
	ringtrace_probe_fn fn;
	void *data;
};

struct ringtrace_probe_set {
	uint32_t count;
	uint32_t pad;
	struct ringtrace_probe probe[1]; /* really [count] */
};

/* state bits */
#define RINGTRACE_EV_RECORD 0x1u /* recorded into the events buffer */
#define RINGTRACE_EV_PROBES 0x2u /* probes attached */
#define RINGTRACE_EV_CTL 0x4u    /* a filter or triggers attached (desc->ctl) */
/*
 * Not a state bit: what ringtrace_rec_<event> adds to the state it passes
 * its slow path when its inline reservation was declined (a page switch,
 * a flush request, a long gap, a nested write). Only then may the general
 * path take the clock reading in the thread's writer state
 * (ringtrace_rb_reserve_general_; ringtrace/static/ring.h, decl_ts): the
 * attempt left it there, unless it declined a nested write, whose event
 * the general path drops before it looks.
 */
#define RINGTRACE_EV_DECLINED_ 0x80000000u

struct ringtrace_event_ctl_;

/*
 * One per event, defined by RINGTRACE_EVENT in the CREATE_EVENTS file.
 * What a recorded event reads of it (state, id_hdr) lies in its first 32
 * bytes, and it is aligned to 32: one cache line.
 */
struct __attribute__((aligned(32))) ringtrace_event_desc {
	/*
	 * RINGTRACE_EV_* bits; the one word a call site reads (non-zero:
	 * call in). Changed only by atomic read-modify-writes of single bits
	 * (the registry under its mutex, triggers from tracepoints), so that
	 * an enable_event trigger and a probe registration never undo each
	 * other.
	 */
	uint32_t state;
	uint32_t id; /* assigned at registration */
	uint32_t flags;
	uint32_t kind; /* enum ringtrace_event_kind */
	/* (uint64_t)id << 32, set with id: the id as it sits in an event
	 * header word, so that the recording code ORs it in with one load. */
	uint64_t id_hdr;
	const char *name;
	const char *print_fmt;
	const char *file;
	const struct ringtrace_field_desc *fields;
	uint32_t nfields;
	uint32_t pad;
	const struct ringtrace_probe_set *probes;
	const struct ringtrace_event_ctl_ *ctl; /* filter and triggers (RCU) */
	void *reg;                              /* registry entry (internal) */
};

/* ---- read-side critical sections (a small RCU) ---------------------------- */

/*
 * Per-thread counters of filtered events: slot i counts the calls that the
 * filter of the event holding slot i kept out of the buffer. [0] is written
 * only by the thread's outermost read-side section (a plain load and
 * store: no bus lock on the path a rejected event takes), [1] by nested
 * ones (signal handlers; an atomic add, so that a handler interrupting
 * another handler loses nothing). Summed by the registry when asked.
 */
#define RINGTRACE_COUNT_SLOTS 256u

struct ringtrace_reader_node {
	uint64_t seq;  /* RINGTRACE_RCU_IN_ (or the waiter's mark) inside a section, else 0 */
	uint32_t nest; /* sections nested inside the outermost (signal handlers) */
	uint32_t in_use;
	struct ringtrace_reader_node *next;
	uint64_t count[2][RINGTRACE_COUNT_SLOTS];
};

/*
 * The thread's node (ringtrace_thr_.rnode). A thread that has none points at
 * ringtrace_rnode_none_, whose seq is never 0: the fast entries below then
 * need no NULL test (one load and one compare tell "no node", "already
 * inside a section" and "can enter" apart), and the general entry
 * registers a node.
 */
extern struct ringtrace_reader_node ringtrace_rnode_none_
	RINGTRACE_LAYOUT_SYM_(ringtrace_rnode_none_);
/* Readers must fence themselves (no membarrier); set for good. */
extern int ringtrace_rcu_fence_ RINGTRACE_LAYOUT_SYM_(ringtrace_rcu_fence_);
/*
 * What a section's entry stores into the thread's node: a constant, so
 * that the entry loads nothing for it. Odd; the grace-period waiter marks a
 * section it waits for by changing it to another odd value
 * (src/event/rcu.c explains why that wait is bounded).
 */
#define RINGTRACE_RCU_IN_ 1u
/*
 * The events buffer (read under a read-side section; NULL for none). What
 * a tracepoint does with it is said by ringtrace_events_cookie_.
 */
extern uintptr_t ringtrace_events_rb_ RINGTRACE_LAYOUT_SYM_(ringtrace_events_rb_);
/*
 * Whether and where events are recorded, in one word that is replaced
 * with one atomic operation, so that a trigger can turn tracing off or on
 * from a tracepoint without racing with ringtrace_events_set_buffer():
 *   bits 63..3  the events buffer's epoch (unique to that buffer for the
 *               life of the process; 0: no buffer)
 *   bit 2       RINGTRACE_EVC_FENCE: readers must fence (no membarrier);
 *               makes the word match no thread's cache (below), so that
 *               every event takes the general path, which fences
 *   bit 1       RINGTRACE_EVC_OFF: tracing is off (ringtrace_tracing_off(),
 *               a traceoff trigger)
 *   bit 0       RINGTRACE_EVC_REC: record, i.e. a buffer and not OFF
 * Each thread keeps the value it last recorded under, with its writer
 * state for that buffer (ringtrace_thr_.cookie, .last_t; set by
 * ringtrace_events_cache_() once the thread is attached to the buffer
 * and its clock is the TSC). A recorded event compares the two words
 * and, when they are equal, writes through the cached state: no buffer
 * pointer, epoch or clock to check. A new buffer, tracing off, the fence
 * mode, or the thread leaving the buffer (its cache is reset) all make
 * them differ.
 */
extern uint64_t ringtrace_events_cookie_ RINGTRACE_LAYOUT_SYM_(ringtrace_events_cookie_);
#define RINGTRACE_EVC_REC 1u
#define RINGTRACE_EVC_OFF 2u
#define RINGTRACE_EVC_FENCE 4u
#define RINGTRACE_EVC_SHIFT 3
struct ringtrace_reader_node *ringtrace_read_register_(void)
	RINGTRACE_LAYOUT_SYM_(ringtrace_read_register_);
/* Cache the calling thread's writer state for rb if the cookie names rb
 * and the thread can write there inline; called by the general path. */
void ringtrace_events_cache_(ringtrace_rb *rb) RINGTRACE_LAYOUT_SYM_(ringtrace_events_cache_);

/*
 * Enter/leave a read-side section: what tracepoints do around their
 * probes and recording. Nests (the token says whether this one is nested);
 * async-signal-safe. The outermost entry stores RINGTRACE_RCU_IN_ into
 * the thread's node and the exit stores 0: no value depends on the
 * thread's previous store, so back-to-back sections do not wait on store
 * forwarding.
 */
static inline unsigned ringtrace_read_lock(void)
{
	struct ringtrace_reader_node *n = ringtrace_thr_.rnode;
	if (__builtin_expect(n == &ringtrace_rnode_none_, 0))
		n = ringtrace_read_register_();
	if (__builtin_expect(__atomic_load_n(&n->seq, __ATOMIC_RELAXED) & 1, 0)) {
		n->nest++;
		return 1;
	}
	__atomic_store_n(&n->seq, RINGTRACE_RCU_IN_, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (__builtin_expect(ringtrace_rcu_fence_, 0))
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return 0;
}

/*
 * The outermost entry without a fence: 1 if entered (the thread has a
 * node and is not inside a section already), with the node in *np; 0 if
 * the caller must go the general way (ringtrace_read_lock()). Leave with
 * ringtrace_read_unlock_fast_(*np) or ringtrace_read_unlock(0).
 *
 * Only for a section that reads nothing but ringtrace_events_cookie_
 * before it knows that readers need no fence (the cookie says so): the
 * recording fast path. Anything else uses ringtrace_read_lock_fast_().
 */
static inline __attribute__((always_inline)) int ringtrace_read_enter_rec_(
	struct ringtrace_reader_node **np)
{
	struct ringtrace_reader_node *n = ringtrace_thr_.rnode;
	if (__builtin_expect(__atomic_load_n(&n->seq, __ATOMIC_RELAXED) != 0, 0))
		return 0;
	__atomic_store_n(&n->seq, RINGTRACE_RCU_IN_, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	*np = n;
	return 1;
}

/* The same, for any section: 0 as well when readers must fence. */
static inline __attribute__((always_inline)) int ringtrace_read_lock_fast_(
	struct ringtrace_reader_node **np)
{
	if (__builtin_expect(ringtrace_rcu_fence_, 0))
		return 0;
	return ringtrace_read_enter_rec_(np);
}

static inline __attribute__((always_inline)) void ringtrace_read_unlock_fast_(
	struct ringtrace_reader_node *n)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&n->seq, 0, __ATOMIC_RELEASE);
}

static inline void ringtrace_read_unlock(unsigned nested)
{
	struct ringtrace_reader_node *n = ringtrace_thr_.rnode;
	if (__builtin_expect(nested, 0)) {
		n->nest--;
		return;
	}
	ringtrace_read_unlock_fast_(n);
}

/* The buffer to record into: NULL if none is set or tracing is off. */
static inline ringtrace_rb *ringtrace_events_buffer_(void)
{
	if (!(__atomic_load_n(&ringtrace_events_cookie_, __ATOMIC_ACQUIRE) & RINGTRACE_EVC_REC))
		return 0;
	return (ringtrace_rb *)__atomic_load_n(&ringtrace_events_rb_, __ATOMIC_ACQUIRE);
}

/*
 * After the general path recorded into rb (the events buffer) in a
 * section whose token is `nested`: let the next events go the fast way,
 * if they can. Only from the outermost section: a signal handler's event
 * must not cache while the code it interrupted may be changing the cache.
 */
static inline void ringtrace_events_note_(ringtrace_rb *rb, unsigned nested)
{
	if (__builtin_expect(!nested && __atomic_load_n(&ringtrace_events_cookie_,
							__ATOMIC_RELAXED) != ringtrace_thr_.cookie,
			     0))
		ringtrace_events_cache_(rb);
}

/* ---- filters and triggers, as tracepoints see them (internal) --------------
 *
 * desc->ctl points to one of these while the event has a filter or
 * triggers (RINGTRACE_EV_CTL set); it is replaced as a whole and freed
 * after a grace period. The API is in ringtrace/filter.h.
 */
struct ringtrace_filter;

/*
 * A filter that is one integer or float predicate on a fixed-offset field
 * (`value & 1`, `pid == 42`, `len > 64`, `ratio < 0.5`), in a form
 * evaluated inline with no data-dependent branch: load the field at
 * `off`, sign-extend it to 64 bits (shift left by `sh`, then arithmetic
 * right), then
 *     match = ((v & mask) - lo) <= span
 * Every comparison is a range test [lo, lo + span] of the wrapped
 * difference: the mask zero-extends an unsigned field (or is `&`'s
 * operand); signed order needs nothing more (lo is the signed lower
 * bound); `v != k` is the range that starts after k and wraps around to
 * just before it; `v & m` is `(v & m) - 1 <= ~0 - 1`. A float comparison
 * is one range (or two: a program) of the field's bits.
 */
struct ringtrace_fast_pred_ {
	uint8_t op; /* RINGTRACE_FP_* (in ctl->fast; 1 in a program's tests) */
	uint8_t sh; /* 64 - 8 * field size */
	/* In a program (RINGTRACE_FP_PROG): the test to run next if this one
	 * fails [0] or holds [1], or a verdict (RINGTRACE_FP_ACCEPT, _REJECT). */
	uint8_t next[2];
	uint32_t off; /* in the payload; off + size <= the fixed prefix */
	uint64_t mask, lo, span;
};
/* ctl->fast.op: not that simple (call ringtrace_filter_match); the test is
 * the filter; the filter is the program of such tests at ctl->prog (a
 * filter of integer tests on fixed-offset fields joined by &&, ||, !). */
#define RINGTRACE_FP_NONE 0
#define RINGTRACE_FP_ONE 1
#define RINGTRACE_FP_PROG 2
#define RINGTRACE_FP_CALL 3 /* ctl->entry only */
#define RINGTRACE_FP_REJECT 0xfe
#define RINGTRACE_FP_ACCEPT 0xff /* odd: accepts */

struct ringtrace_event_ctl_ {
	const struct ringtrace_filter *filter; /* NULL: every call is recorded */
	struct ringtrace_fast_pred_ fast;
	uint32_t slot; /* counter slot, or RINGTRACE_COUNT_SLOTS: use *overflow */
	uint32_t ntriggers;
	/* What the call's entry does with a fixed-size record: 0 nothing (the
	 * general path: triggers, or no filter), RINGTRACE_FP_ONE or _PROG
	 * (filter it inline), RINGTRACE_FP_CALL (filter it out of line). */
	uint32_t entry;
	uint32_t pad;
	uint64_t *overflow; /* rejected count when no slot was free (atomic add) */
	void *triggers;     /* the library's trigger list */
	/* fast.op == RINGTRACE_FP_PROG: the program, test 0 first (inside the filter) */
	const struct ringtrace_fast_pred_ *prog;
};

/* ringtrace/filter.h; declared here too for the inline evaluation below. */
int ringtrace_filter_match(const struct ringtrace_filter *f, const void *payload, size_t len);
/* Run the triggers of `ctl` on a record (out of line; async-signal-safe). */
void ringtrace_triggers_run_(const struct ringtrace_event_ctl_ *ctl, const void *payload,
			     size_t len) RINGTRACE_LAYOUT_SYM_(ringtrace_triggers_run_);

static inline __attribute__((always_inline)) int ringtrace_fast_pred_(
	const struct ringtrace_fast_pred_ *fp, const void *payload)
{
	/*
	 * Load exactly the field's bytes: the record was just written, and a
	 * wider load than the store it reads from would not be forwarded
	 * from the store buffer (a stall longer than the whole filter).
	 */
	const char *p = (const char *)payload + fp->off;
	uint64_t raw;
	if (__builtin_expect(fp->sh == 32, 1)) {
		uint32_t x;
		memcpy(&x, p, 4);
		raw = x;
	} else if (fp->sh == 0) {
		memcpy(&raw, p, 8);
	} else if (fp->sh == 48) {
		uint16_t x;
		memcpy(&x, p, 2);
		raw = x;
	} else {
		uint8_t x;
		memcpy(&x, p, 1);
		raw = x;
	}
	uint64_t v = (uint64_t)((int64_t)(raw << fp->sh) >> fp->sh);
	return ((v & fp->mask) - fp->lo) <= fp->span;
}

/*
 * A program of tests (RINGTRACE_FP_PROG) on a staged record: each test
 * names the one to run next, or the verdict; every successor comes after
 * its test, so the loop ends.
 */
static inline __attribute__((always_inline)) int ringtrace_fast_prog_(
	const struct ringtrace_fast_pred_ *prog, const void *payload)
{
	const struct ringtrace_fast_pred_ *t = prog;
	for (;;) {
		unsigned nx = t->next[ringtrace_fast_pred_(t, payload)];
		if (nx >= RINGTRACE_FP_REJECT)
			return (int)(nx & 1);
		t = prog + nx;
	}
}

/* A compiled filter on a staged record: inline when it is one test. */
static inline __attribute__((always_inline)) int ringtrace_filter_eval_(
	const struct ringtrace_filter *f, const struct ringtrace_fast_pred_ *fast,
	const void *payload, size_t len)
{
	return fast->op == RINGTRACE_FP_ONE ? ringtrace_fast_pred_(fast, payload)
					    : ringtrace_filter_match(f, payload, len);
}

/* Count one call rejected by ctl's filter. `nested`: the token of the
 * read-side section the caller is in. */
static inline __attribute__((always_inline)) void ringtrace_ctl_count_(
	const struct ringtrace_event_ctl_ *ctl, unsigned nested)
{
	uint32_t slot = ctl->slot;
	if (__builtin_expect(slot < RINGTRACE_COUNT_SLOTS, 1)) {
		uint64_t *c = &ringtrace_thr_.rnode->count[nested ? 1 : 0][slot];
		if (!nested)
			__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1,
					 __ATOMIC_RELAXED);
		else
			__atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
	} else {
		__atomic_fetch_add(ctl->overflow, 1, __ATOMIC_RELAXED);
	}
}

/* The same, in the outermost read-side section, entered with node n. */
static inline __attribute__((always_inline)) void ringtrace_ctl_count_in_(
	const struct ringtrace_event_ctl_ *ctl, struct ringtrace_reader_node *n)
{
	uint32_t slot = ctl->slot;
	if (__builtin_expect(slot < RINGTRACE_COUNT_SLOTS, 1)) {
		uint64_t *c = &n->count[0][slot];
		__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
	} else {
		__atomic_fetch_add(ctl->overflow, 1, __ATOMIC_RELAXED);
	}
}

/*
 * Whether a record (built by the tracepoint: trusted, `len` bytes plus 8
 * bytes of slack) passes the event's filter; a rejected call is counted.
 */
static inline __attribute__((always_inline)) int ringtrace_ctl_keep_(
	const struct ringtrace_event_ctl_ *ctl, const void *payload, size_t len, unsigned nested)
{
	if (!ctl->filter)
		return 1;
	if (__builtin_expect(ringtrace_filter_eval_(ctl->filter, &ctl->fast, payload, len), 1))
		return 1;
	ringtrace_ctl_count_(ctl, nested);
	return 0;
}

/* Length of s up to max; sets `bit` in *trunc if s is longer (NULL: 0). */
static inline size_t ringtrace_strnlen_trunc_(const char *s, size_t max, uint8_t *trunc,
					      uint8_t bit)
{
	size_t n = 0;
	if (!s)
		return 0;
	for (; s[n]; n++) {
		if (n == max) {
			*trunc |= bit;
			break;
		}
	}
	return n;
}

static inline size_t ringtrace_strnlen_(const char *s, size_t max)
{
	size_t n = 0;
	if (!s)
		return 0;
	while (n < max && s[n])
		n++;
	return n;
}

#ifdef __cplusplus
}
#endif
#endif /* RINGTRACE_STATIC_EVENT_H */
