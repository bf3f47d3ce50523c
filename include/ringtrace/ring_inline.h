/*
 * ringtrace/ring_inline.h - the ring buffer's write fast path, inline.
 *
 * Included by tracepoint.h so that the recording code generated for each
 * event reserves, fills and commits its record with no function call at
 * all: that is what keeps a recorded event within a few percent of one
 * timestamp read. The structures below are the leading fields of the
 * library's private ones (src/ring/ring_internal.h, which checks the
 * offsets at compile time); they are not an API and may change in any
 * release, so traced code and the library must come from the same version.
 *
 * ringtrace_reserve_fast_() returns NULL, having changed nothing, for
 * every case it does not handle (a thread's first event, nesting in a
 * signal handler, a page switch, a flush request, a long gap that needs an
 * extended header, the fallback clock): the caller then goes through
 * ringtrace_rb_reserve(), which handles them all and counts drops.
 */
#ifndef RINGTRACE_RING_INLINE_H
#define RINGTRACE_RING_INLINE_H

#include <stdint.h>

#include "ringtrace/format.h"
#include "ringtrace/ring.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A thread's private state for one buffer (= struct ringtrace__tls). */
struct ringtrace_wtls_ {
	uint64_t epoch;
	struct ringtrace_slot_head_ *slot;
	char *page;
	uint32_t off;
	uint32_t limit;
	uint32_t res_end;
	uint32_t pad0_;
	uint64_t last_ts;
	uint64_t seq;
	uint32_t noslot_skip;
	uint32_t attaching;
	int drop_reason;
	int pad_;
};

/* The first fields of a writer slot in shared memory. */
struct ringtrace_slot_head_ {
	uint32_t nest;
	uint32_t steal;
	uint32_t state;
	uint32_t cur_page;
	uint64_t hit;
};

/* The first fields of the process-local buffer handle. */
struct ringtrace_rb_head_ {
	uint32_t idx;
	uint32_t is_tsc;
	uint64_t epoch;
	char *base;
	char *pages;
	uint32_t page_size;
	uint32_t max_payload;
	/*
	 * epoch if the buffer's clock is the TSC, else a value no thread's
	 * epoch ever has: one compare says both "this thread writes here"
	 * and "the inline timestamp is the buffer's clock".
	 */
	uint64_t fast_epoch;
};

/*
 * The smallest max_payload a buffer can have (4 KiB pages): a record of
 * a constant size up to this needs no check against the buffer's.
 */
#define RINGTRACE_MIN_MAX_PAYLOAD_                                                       \
	((RINGTRACE_RB_MIN_PAGE_SIZE - RINGTRACE_PAGE_HEADER_SIZE - RINGTRACE_EV_EXT_HEADER_SIZE) & \
	 ~7u)

extern __thread struct ringtrace_wtls_ ringtrace_wtls_[RINGTRACE_RB_MAX_OPEN]
	__attribute__((tls_model("initial-exec")));
struct ringtrace_reader_node;
/*
 * What every recorded event reads of its thread, in one thread-local
 * object (the generated code materializes one TLS offset, not three):
 *   rnode    the thread's read-side node (event.h; defined in rcu.c).
 *   cookie, last_t  the events-buffer cookie (event.h) the thread last
 *            recorded under and its writer state in that buffer. While
 *            the cookie is current, an event's address depends on two
 *            loads (last_t, then the state in it), as DPDK's does: that
 *            chain is what an event costs right after a system call, when
 *            the pipeline is empty and the lines are no longer in L1.
 *            Reset (cookie = RINGTRACE_THR_NO_COOKIE_) by the thread
 *            itself whenever that state stops being its writer in the
 *            buffer (retire, fork, destroy): right after its epoch is
 *            cleared (so that a signal handler's event in between cannot
 *            cache it again) and before its slot or page change. Set only
 *            by the outermost read-side section (ringtrace_events_note_).
 */
struct ringtrace_thr_ {
	struct ringtrace_reader_node *rnode;
	uint64_t cookie;
	struct ringtrace_wtls_ *last_t;
};
/* A cookie the events word never holds. */
#define RINGTRACE_THR_NO_COOKIE_ (~(uint64_t)0)
extern __thread struct ringtrace_thr_ ringtrace_thr_ __attribute__((tls_model("initial-exec")));

static inline __attribute__((always_inline)) int ringtrace_hw_ticks_(uint64_t *ts)
{
#if defined(__x86_64__) || defined(__i386__)
	*ts = __builtin_ia32_rdtsc();
	return 1;
#elif defined(__aarch64__)
	uint64_t v;
	__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
	*ts = v;
	return 1;
#else
	(void)ts;
	return 0;
#endif
}

/*
 * Add 1 to a counter that only the calling thread writes and other threads
 * read (relaxed): on x86-64 one add to memory instead of a load and a
 * store (one instruction fewer on the write path; an aligned 8-byte
 * store, so readers never see a torn value). Elsewhere, and under
 * ThreadSanitizer (which must see the access as atomic), a relaxed atomic
 * load and store. Callers hold the slot's nest flag, so no signal handler
 * of the thread writes the counter in between either way.
 */
#if defined(__x86_64__) && !defined(RINGTRACE_TSAN) && !defined(__SANITIZE_THREAD__)
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RINGTRACE_INC_ATOMIC_ 1
#endif
#endif
#else
#define RINGTRACE_INC_ATOMIC_ 1
#endif
static inline __attribute__((always_inline)) void ringtrace_inc_own_(uint64_t *c)
{
#ifndef RINGTRACE_INC_ATOMIC_
	__asm__ __volatile__("addq $1, %0" : "+m"(*c));
#else
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
#endif
}
#undef RINGTRACE_INC_ATOMIC_

/*
 * What a fast reservation hands to its commit, kept in the caller's
 * registers rather than reloaded through the thread's state.
 */
struct ringtrace_fres_ {
	struct ringtrace_wtls_ *t;
	struct ringtrace_slot_head_ *s;
	char *page;
	uint32_t end;  /* where the payload ends: the page's new commit */
	uint32_t next; /* end rounded up to 8: the thread's new offset */
};

/* The header and payload of a record of len bytes, rounded up to 8. */
#define RINGTRACE_EV_SPAN_(len)                                               \
	((RINGTRACE_EV_HEADER_SIZE + (uint32_t)(len) + (RINGTRACE_EV_ALIGN - 1)) & \
	 ~(RINGTRACE_EV_ALIGN - 1))

/*
 * Reserve room for an event in the page the thread's writer state t holds:
 * t must be the calling thread's, attached to its buffer, whose clock is
 * the TSC; len at most the buffer's max_payload. *id_hdr: the event id
 * shifted into place ((uint64_t)id << 32); ids need no check here: the
 * registry never assigns one above RINGTRACE_EV_MAX_ID. (A pointer, read
 * once the checks have passed: a value would be loaded before them, at
 * the call, and kept in a register all along.) The
 * buffer's library commit (ringtrace_rb_commit) is not used with this
 * reservation: ringtrace_commit_fast_() is.
 */
static inline __attribute__((always_inline)) void *
ringtrace_reserve_at_(struct ringtrace_wtls_ *t, const uint64_t *id_hdr, size_t len,
		      struct ringtrace_fres_ *f)
{
	uint64_t ts;
	struct ringtrace_slot_head_ *s = t->slot;
	/*
	 * nest: this thread is inside a write to this buffer already (this
	 * is a signal handler's). steal (a flush asking for the page) is only
	 * tested below, once nest is raised: that is the test that the
	 * flush's membarrier orders.
	 */
	if (__builtin_expect(__atomic_load_n(&s->nest, __ATOMIC_RELAXED) != 0, 0))
		return 0;
	__atomic_store_n(&s->nest, 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	/*
	 * Read now that nest is raised: a signal handler that wrote before it
	 * may have moved the offset or switched the page. `off` is where the
	 * previous event's payload ended, rounded up to 8: where this one
	 * starts.
	 */
	uint32_t start = t->off;
	uint32_t next = start + RINGTRACE_EV_SPAN_(len);
	/*
	 * (Hides from the compiler that next is start + a constant, so that
	 * it derives the commit offset from next below and start's register
	 * dies early: with GCC 12, the path then saves no register.)
	 */
	__asm__("" : "+r"(next));
	if (__builtin_expect(!ringtrace_hw_ticks_(&ts) || next > t->limit ||
				     ts - t->last_ts > 0xFFFFFFFFull ||
				     __atomic_load_n(&s->steal, __ATOMIC_RELAXED) != 0,
			     0)) {
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		__atomic_store_n(&s->nest, 0, __ATOMIC_RELAXED);
		return 0;
	}
	char *page = t->page;
	uint64_t *h = (uint64_t *)(void *)(page + start);
	/* (RINGTRACE_EV_WORD without masking id and len: id <= RINGTRACE_EV_MAX_ID,
	 * len <= max_payload < 2^16) */
	*h = (uint64_t)(uint32_t)ts | *id_hdr | ((uint64_t)len << 48);
	t->last_ts = ts;
	f->t = t;
	f->s = s;
	f->page = page;
	f->end = next - (RINGTRACE_EV_SPAN_(len) - RINGTRACE_EV_HEADER_SIZE - (uint32_t)len);
	f->next = next;
	return h + 1;
}

/*
 * The same, for buffer rb: finds the thread's state there (NULL if the
 * thread is not attached, the clock is not the TSC or the record too big).
 */
static inline __attribute__((always_inline)) void *
ringtrace_reserve_fast_(ringtrace_rb *rb, uint32_t id, size_t len, struct ringtrace_fres_ *f)
{
	const struct ringtrace_rb_head_ *r = (const struct ringtrace_rb_head_ *)(const void *)rb;
	struct ringtrace_wtls_ *t = &ringtrace_wtls_[r->idx];
	/* (the first size test folds away for a constant size that fits any buffer) */
	if (__builtin_expect(t->epoch != r->fast_epoch ||
				     (len > RINGTRACE_MIN_MAX_PAYLOAD_ && len > r->max_payload),
			     0))
		return 0;
	uint64_t id_hdr = (uint64_t)id << 32;
	return ringtrace_reserve_at_(t, &id_hdr, len, f);
}

static inline __attribute__((always_inline)) void
ringtrace_commit_fast_(const struct ringtrace_fres_ *f)
{
	struct ringtrace_wtls_ *t = f->t;
	struct ringtrace_slot_head_ *s = f->s;
	struct ringtrace_page_header *h = (struct ringtrace_page_header *)(void *)f->page;
	t->off = f->next;
	__atomic_store_n(&h->commit, f->end, __ATOMIC_RELEASE);
	ringtrace_inc_own_(&s->hit);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&s->nest, 0, __ATOMIC_RELEASE);
}

#ifdef __cplusplus
}
#endif
#endif /* RINGTRACE_RING_INLINE_H */
