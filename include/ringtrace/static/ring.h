/*
 * ringtrace/static/ring.h - the ring buffer's write fast path, inline.
 *
 * VERSION-LOCKED INLINE CODE, NOT AN API (see ringtrace/static/layout.h).
 *
 * This is the one write path of the ring buffer. The recording code that
 * RINGTRACE_EVENT generates reserves, fills and commits its record with it
 * and no function call at all (so that a recorded event costs little more
 * than its timestamp read); the library's own
 * ringtrace_rb_reserve()/ringtrace_rb_commit() call the same inline
 * functions. The structures below are the only definitions of what they
 * touch: the library's private writer slot and buffer handle
 * (src/ring/ring_internal.h) begin with ringtrace_slot_head_ and
 * ringtrace_rb_head_ as their first members, and the per-thread writer
 * state is this header's ringtrace_wtls_ itself.
 *
 * ringtrace_reserve_at_() returns NULL for every case it does not handle
 * (a nested write from a signal handler, a page switch, a flush request, a
 * clock whose high half is not the last event's or whose low half is below
 * it: a long gap that may need the extended header, a clock gone back, or
 * once every 2^32 ticks a high half just moved on; no cycle counter), having
 * changed nothing but the thread's decl_ts (the clock reading it took, if
 * it took one): the caller then goes through ringtrace_rb_reserve() or
 * ringtrace_rb_reserve_general_(), whose out-of-line general path
 * (src/ring/writer.c) handles them all, timestamps the event with that
 * reading rather than read the clock again, counts drops, and hands back
 * to the same commit.
 *
 * One case it handles off its main line and goes on: the page's warm-up
 * mark. A thread's `limit` stops RINGTRACE_WARM_AHEAD_ bytes short of the
 * page's `end` when the page is taken; the event that crosses it asks the
 * cache for the lines the coming page switch will touch (warm_off: the
 * pool's queue positions and cells, the next page's header, the slot's
 * counters, lines that one page of events has pushed out; the library
 * notes them at each switch) and moves `limit` to `end`. The switch then
 * finds them near instead of waiting for each in turn. Inline prefetches,
 * no call: a call there would make the compiler save registers on every
 * event's path.
 *
 * The nest/steal handshake (src/ring/flush.c explains it): a writer raises
 * its slot's `nest` before it tests `steal`, and lowers it after its
 * commit; a flush that asked for the page (steal) waits until nest is 0.
 */
#ifndef RINGTRACE_STATIC_RING_H
#define RINGTRACE_STATIC_RING_H

#include <stdint.h>

#include "ringtrace/format.h"
#include "ringtrace/ring.h"
#include "ringtrace/static/cpu.h"
#include "ringtrace/static/layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The first fields of a writer slot in shared memory (struct rt_slot). */
struct ringtrace_slot_head_ {
	uint32_t nest;     /* 1 while the owner is inside a write */
	uint32_t steal;    /* the flush handshake (src/ring/ring_internal.h, RT_STEAL_*) */
	uint32_t state;    /* slot state and stamp (RT_SLOT_*) */
	uint32_t cur_page; /* the owner's page, or 0xFFFFFFFF */
	uint64_t hit;      /* committed events: written by the owner only */
};

/* The first fields of the process-local buffer handle (struct ringtrace_rb). */
struct ringtrace_rb_head_ {
	uint32_t idx;    /* this buffer's index into ringtrace_wtls_ */
	uint32_t is_tsc; /* the buffer's clock is the cycle counter */
	uint64_t epoch;  /* unique per buffer and process; 0 and ~0 never */
	char *base;      /* the mapped pool */
	char *pages;     /* its first page */
	uint32_t page_size;
	uint32_t max_payload; /* largest payload an event may have */
	/*
	 * epoch if the buffer's clock is the cycle counter, else a value no
	 * thread's epoch ever has: one compare says both "this thread writes
	 * here" and "the inline timestamp is the buffer's clock".
	 */
	uint64_t fast_epoch;
};

/* How many lines a page switch's warm-up asks for (ringtrace_wtls_.warm_off). */
#define RINGTRACE_WARM_LINES_ 10 /* (ringtrace_warm_ names each) */

/*
 * A thread's private state for one buffer. What the inline path reads and
 * writes on every event comes first, in 32 bytes, and an entry is aligned
 * to 32: one cache line; the raw API's epoch test is in the next 32.
 */
struct __attribute__((aligned(32))) ringtrace_wtls_ {
	struct ringtrace_slot_head_ *slot; /* its writer slot */
	char *page;                        /* current page, NULL if none */
	uint32_t off;   /* where the next event starts: the committed end rounded up to 8 */
	uint32_t limit; /* page size, 0 when there is no page */
	/* the timestamp of the previous event, as the counter's two halves:
	 * the inline path compares and stores each as it comes from the
	 * counter (ringtrace_hw_ticks_halves_); ringtrace_last_ts_() joins them */
	uint32_t last_lo, last_hi;
	uint64_t epoch;        /* == the buffer's epoch while this thread writes there */
	uint32_t res_end;      /* the payload end of ringtrace_rb_reserve's event (its commit) */
	uint32_t noslot_epoch; /* (low bits of) the epoch of the buffer noslot_skip is for */
	uint64_t seq;          /* packet_seq_num of the next page */
	uint32_t noslot_skip;  /* events to drop before retrying a slot claim */
	uint32_t attaching;    /* in attach or retire: a signal handler's event is dropped */
	int drop_reason;       /* why the last reserve returned NULL (RINGTRACE_E*) */
	uint32_t slot_w;       /* the slot's state word this thread published (ACTIVE) */
	uint32_t end;          /* the page's size, 0 when there is no page; limit is below
				  it until the warm-up mark is passed */
	/*
	 * The timestamp an inline reservation read before it declined (a page
	 * switch, a flush request, a clock reading whose halves the inline
	 * test refused), for the general path it falls back to
	 * (ringtrace_rb_reserve's own, or ringtrace_rb_reserve_general_ called
	 * by a tracepoint whose ringtrace_rec_<event> said it declined:
	 * RINGTRACE_EV_DECLINED_): that path then does not read the clock a
	 * second time (a read of the TSC is slow on some machines, and the
	 * page switch is the path it would lengthen). Taken and cleared
	 * there, after the nesting flag is raised, unless older than the last
	 * event's (ringtrace_last_ts_); 0: none. No other path takes it: a
	 * call that made no attempt of its own (a signal handler's, one
	 * inside a read-side section) would take another call's reading.
	 */
	uint64_t decl_ts;
	/* The lines the next page switch will touch, as offsets from slot
	 * (they are all in the pool's mapping), set at each switch by the
	 * library; only ever prefetched, so a stale one costs nothing. */
	int32_t warm_off[RINGTRACE_WARM_LINES_];
	const char *warm_rb; /* the buffer's handle: its first lines too */
};

/* The previous event's timestamp, and setting it (for the general path). */
static inline uint64_t ringtrace_last_ts_(const struct ringtrace_wtls_ *t)
{
	return (uint64_t)t->last_hi << 32 | t->last_lo;
}

static inline void ringtrace_set_last_ts_(struct ringtrace_wtls_ *t, uint64_t ts)
{
	t->last_lo = (uint32_t)ts;
	t->last_hi = (uint32_t)(ts >> 32);
}

/* How far before its page's end an event warms the switch's lines up: a
 * little more than a microsecond of 16-byte events, ahead of the switch
 * by more than a memory access takes, close enough that the lines asked
 * for are still in the L1 then. */
#define RINGTRACE_WARM_AHEAD_ 2048u

/*
 * initial-exec: the fast path reaches a thread's state with one
 * %fs-relative address; one entry per open buffer (ringtrace_rb_head_.idx).
 * (Laid out by hand: clang-format would split the assembler name's macro.)
 */
/* clang-format off */
extern __thread struct ringtrace_wtls_ ringtrace_wtls_[RINGTRACE_RB_MAX_OPEN]
	RINGTRACE_LAYOUT_SYM_(ringtrace_wtls_) __attribute__((tls_model("initial-exec")));
/* clang-format on */

/*
 * The smallest max_payload a buffer can have (4 KiB pages): a record of
 * a constant size up to this needs no check against the buffer's.
 */
#define RINGTRACE_MIN_MAX_PAYLOAD_                                  \
	((RINGTRACE_RB_MIN_PAGE_SIZE - RINGTRACE_PAGE_HEADER_SIZE - \
	  RINGTRACE_EV_EXT_HEADER_SIZE) &                           \
	 ~7u)

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
#define RINGTRACE_EV_SPAN_(len)                                                    \
	((RINGTRACE_EV_HEADER_SIZE + (uint32_t)(len) + (RINGTRACE_EV_ALIGN - 1)) & \
	 ~(RINGTRACE_EV_ALIGN - 1))

/*
 * The warm-up (see the top): move limit to the page's end and ask for the
 * lines the coming switch will touch, with write intent where the target
 * has such a prefetch (the switch writes the pool's lines; the handle's
 * are only read). Inside the write (nest raised); nothing is read through
 * the addresses. Unrolled by hand, and limit stored first: a loop, or end
 * kept for a store at the end, needs registers that the compiler then
 * saves on every event's path.
 */
static inline __attribute__((always_inline)) void ringtrace_warm_(
	struct ringtrace_wtls_ *t, const struct ringtrace_slot_head_ *s)
{
	t->limit = t->end;
	const char *b = (const char *)s;
	const int32_t *o = t->warm_off;
	__builtin_prefetch(b + o[0], 1);
	__builtin_prefetch(b + o[1], 1);
	__builtin_prefetch(b + o[2], 1);
	__builtin_prefetch(b + o[3], 1);
	__builtin_prefetch(b + o[4], 1);
	__builtin_prefetch(b + o[5], 1);
	__builtin_prefetch(b + o[6], 1);
	__builtin_prefetch(b + o[7], 1);
	__builtin_prefetch(b + o[8], 1);
	__builtin_prefetch(b + o[9], 1);
	b = t->warm_rb;
	__builtin_prefetch(b);
	__builtin_prefetch(b + 64);
	__builtin_prefetch(b + 128);
	__builtin_prefetch(b + 192);
}

/*
 * What ringtrace_reserve_at_ does when it declines, nest raised: keep the
 * clock reading it took for the general path (see decl_ts) and lower nest.
 */
static inline __attribute__((always_inline)) void *ringtrace_decline_(
	struct ringtrace_wtls_ *t, struct ringtrace_slot_head_ *s, int hw, uint32_t hi, uint64_t lo)
{
	t->decl_ts = hw ? (uint64_t)hi << 32 | lo : 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&s->nest, 0, __ATOMIC_RELAXED);
	return 0;
}

/*
 * Reserve room for an event in the page the thread's writer state t holds:
 * t must be the calling thread's, attached to its buffer, whose clock is
 * the cycle counter; len at most the buffer's max_payload. *id_hdr: the
 * event id shifted into place ((uint64_t)id << 32), id at most
 * RINGTRACE_EV_MAX_ID (the registry never assigns more; the library checks
 * its callers'). (A pointer, read once the checks have passed: a value
 * would be loaded before them, at the call, and kept in a register all
 * along.) Commit with ringtrace_commit_fast_().
 */
static inline __attribute__((always_inline)) void *ringtrace_reserve_at_(struct ringtrace_wtls_ *t,
									 const uint64_t *id_hdr,
									 size_t len,
									 struct ringtrace_fres_ *f)
{
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
	uintptr_t next_w = (uintptr_t)t->off + RINGTRACE_EV_SPAN_(len);
	/*
	 * (Hides from the compiler that next is off + a constant, so that it
	 * derives the record's address and the commit offset from next below
	 * and keeps no register for the start: with one register fewer in
	 * use, the compiler saves none on the path. Pointer-wide, so that
	 * the record's address needs no zero extension of it: next < 2^32.)
	 */
	__asm__("" : "+r"(next_w));
	uint32_t next = (uint32_t)next_w;
	/*
	 * The clock, as two halves: the header takes the low one as it is,
	 * and the gap test compares each with the previous event's. Same
	 * high half and a low half not below: 0 <= ts - last < 2^32, what a
	 * header's 32-bit delta can say. It also declines, once every 2^32
	 * ticks, an event whose high half has just moved on although its
	 * delta would fit; the general path writes that one with the usual
	 * header. (Testing the 64-bit difference needed the halves joined
	 * first: two instructions more between the counter and the store.)
	 */
	uint64_t lo; /* (< 2^32) */
	uint32_t hi;
	int hw = ringtrace_hw_ticks_halves_(&lo, &hi);
	if (__builtin_expect(!hw || hi != t->last_hi || (uint32_t)lo < t->last_lo ||
				     ringtrace_nonzero_(&s->steal),
			     0))
		return ringtrace_decline_(t, s, hw, hi, lo);
	/* The warm-up mark: warm up and go on; the page's end: decline. (One
	 * test of limit on the path; the clock's tests are not made again.) */
	if (__builtin_expect(next > t->limit, 0)) {
		if (next > t->end)
			return ringtrace_decline_(t, s, hw, hi, lo);
		ringtrace_warm_(t, s);
	}
	char *page = t->page;
	/* (the start again, from next: the stores below take the
	 * difference as their displacement) */
	uint64_t *h = (uint64_t *)(void *)(page + next_w - RINGTRACE_EV_SPAN_(len));
	/* (RINGTRACE_EV_WORD without masking id and len: id <= RINGTRACE_EV_MAX_ID,
	 * len <= max_payload < 2^16) */
	/*
	 * The id and size are joined first and the clock's low half or-ed in
	 * last: one instruction between the counter and the header's store
	 * (the empty asm keeps the compiler from reassociating the ors). The
	 * low half is stored first: the other order makes the compiler copy
	 * it and save another register.
	 */
	t->last_lo = (uint32_t)lo; /* (last_hi is hi already: tested above) */
	uint64_t w = *id_hdr | ((uint64_t)len << 48);
	__asm__("" : "+r"(w));
	*h = w | lo;
	f->t = t;
	f->s = s;
	f->page = page;
	f->end = next - (RINGTRACE_EV_SPAN_(len) - RINGTRACE_EV_HEADER_SIZE - (uint32_t)len);
	f->next = next;
	return h + 1;
}

/*
 * The same, for buffer rb: finds the thread's state there (NULL if the
 * thread is not attached, the clock is not the cycle counter or the
 * record too big).
 */
static inline __attribute__((always_inline)) void *ringtrace_reserve_fast_(
	ringtrace_rb *rb, uint32_t id, size_t len, struct ringtrace_fres_ *f)
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

/*
 * ringtrace_rb_reserve() without its inline attempt, for a caller whose
 * own inline reservation through the thread's current writer state has
 * just been declined (a page switch, a flush request, a long gap, a
 * nested write): trying it again would only fail again, after reading
 * the clock a second time, on the page switch's path. It timestamps the
 * event with the reading that attempt left (decl_ts): only a caller whose
 * attempt did decline may call it. Same contract and commit as
 * ringtrace_rb_reserve().
 */
void *ringtrace_rb_reserve_general_(ringtrace_rb *rb, uint32_t id, size_t len)
	RINGTRACE_LAYOUT_SYM_(ringtrace_rb_reserve_general_);

/* Publish the reserved event: the page's commit, the hit count, nest 0. */
static inline __attribute__((always_inline)) void ringtrace_commit_fast_(
	const struct ringtrace_fres_ *f)
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
#endif /* RINGTRACE_STATIC_RING_H */
