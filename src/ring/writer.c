/*
 * Writers: per-thread writer state, claiming and retiring writer slots,
 * the general write path, and what thread exit, process exit and fork do
 * to writers ("THE WRITE PATH", "SIGNALS", "OWNERS THAT ARE GONE" in
 * ring_internal.h). The fast path is inline (ringtrace/static/ring.h);
 * ringtrace_rb_reserve() and ringtrace_rb_commit() below use it too, and
 * come here for everything it declines.
 *
 * This is the only part of the ring buffer with per-thread state, a
 * constructor and fork handlers: a process that only reads pools (the
 * ringtrace command) does not link it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ring/ring_internal.h"

/* ---- per-thread writer state ------------------------------------------- */

__thread struct ringtrace_wtls_ ringtrace_wtls_[RINGTRACE_RB_MAX_OPEN]
	__attribute__((tls_model("initial-exec")));

/*
 * An upper layer may cache a pointer to a thread's writer state (the
 * events layer's recording fast path does: ringtrace/static/event.h). It
 * registers a hook, called in the thread whose state stops being valid,
 * to forget it: rt_ring_set_forget_hook().
 */
static rt_ring_forget_fn rt_forget_hook;

void rt_ring_set_forget_hook(rt_ring_forget_fn fn)
{
	__atomic_store_n(&rt_forget_hook, fn, __ATOMIC_RELEASE);
}

static void rt_forget_cached(struct ringtrace_wtls_ *t)
{
	rt_ring_forget_fn fn = __atomic_load_n(&rt_forget_hook, __ATOMIC_ACQUIRE);
	if (fn)
		fn(t);
}

/*
 * This thread's state t stops being a writer: its epoch first, then any
 * cache of it above. Not the other way round: a signal handler's event in
 * between would take the general path, find the epoch still valid,
 * record, and cache the state again (until the epoch is cleared the state
 * is still a valid writer, so a handler's fast-path event meanwhile is an
 * ordinary one).
 */
static void rt_state_leave(struct ringtrace_wtls_ *t)
{
	t->epoch = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	rt_forget_cached(t);
}

/* The buffers open for writing in this process, for thread-exit handling. */
static struct {
	struct ringtrace_rb *rb;
	uint64_t epoch;
} rt_open[RINGTRACE_RB_MAX_OPEN];
static pthread_mutex_t rt_open_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t rt_epoch_next = 1;
static pthread_key_t rt_exit_key;

static void rt_thread_exit(void *arg);
static void rt_process_exit(void);
static void rt_atfork_prepare(void);
static void rt_atfork_parent(void);
static void rt_atfork_child(void);

/*
 * The process whose threads' writer states these are: set when the
 * process first opens a buffer for writing and in a forked child of such
 * a process (rt_atfork_child), never otherwise, so that a child of
 * _Fork() or vfork(), which no fork handler saw, can tell that the states
 * it inherited are its parent's (rt_thread_exit). 0: no buffer was ever
 * opened for writing, so no thread has a writer state.
 */
static uint32_t rt_writers_pid;

/*
 * A constructor, so the key gets a low index: pthread_setspecific() on a
 * low key never allocates, which keeps a thread's first event
 * async-signal-safe. No system call here: a process that never records
 * pays for none (the identity and the pid are read when it first opens a
 * buffer for writing, rt_writers_open).
 */
__attribute__((constructor(101))) static void rt_writers_init(void)
{
	if (pthread_key_create(&rt_exit_key, rt_thread_exit) != 0 ||
	    pthread_atfork(rt_atfork_prepare, rt_atfork_parent, rt_atfork_child) != 0 ||
	    atexit(rt_process_exit) != 0)
		fprintf(stderr,
			"ringtrace: cannot register the thread-exit and fork handlers of the "
			"ring buffer's writers: threads that exit keep their writer slot until a "
			"flush reclaims it, and a forked child must not record\n");
}

/* The buffer's destruction: no thread writes into it any more. */
static void rt_writers_close(struct ringtrace_rb *rb)
{
	pthread_mutex_lock(&rt_open_lock);
	if (rt_open[rb->h.idx].rb == rb)
		rt_open[rb->h.idx].rb = NULL;
	pthread_mutex_unlock(&rt_open_lock);
	struct ringtrace_wtls_ *t = &ringtrace_wtls_[rb->h.idx];
	if (t->epoch == rb->h.epoch)
		rt_state_leave(t);
	else
		rt_forget_cached(t);
}

int rt_writers_open(struct ringtrace_rb *rb)
{
	/*
	 * The identity read now, before any thread can write into rb, so that
	 * a thread's first event (possibly in a signal handler) only loads it
	 * (rt_identity_loaded): never outside a buffer's creation.
	 */
	rt_identity();
	/* (untouched pages of it cost no memory; NULL: every tail is counted
	 * in tails_lost) */
	rb->tails = calloc(RT_TAILS_MAX, sizeof(*rb->tails));
	pthread_mutex_lock(&rt_open_lock);
	if (!RT_LOAD(&rt_writers_pid))
		RT_STORE(&rt_writers_pid, (uint32_t)getpid());
	for (unsigned i = 0; i < RINGTRACE_RB_MAX_OPEN; i++) {
		if (!rt_open[i].rb) {
			rb->h.idx = i;
			rb->h.epoch = rt_epoch_next++;
			rt_set_fast_epoch(rb);
			rb->on_destroy = rt_writers_close;
			rt_open[i].rb = rb;
			rt_open[i].epoch = rb->h.epoch;
			pthread_mutex_unlock(&rt_open_lock);
			return 0;
		}
	}
	pthread_mutex_unlock(&rt_open_lock);
	free(rb->tails);
	rb->tails = NULL;
	return rt_error(RINGTRACE_ENOSPC, "too many ring buffers open in this process (at most %u)",
			RINGTRACE_RB_MAX_OPEN);
}

/* ---- pages ----------------------------------------------------------------- */

/* Begin rewriting a page's header: snapshots copying it will notice. */
static inline void rt_gen_begin(struct ringtrace_rb *rb, uint32_t page)
{
	uint64_t g = RT_LOAD(&rb->gen[page]);
	RT_STORE(&rb->gen[page], g | 1);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static inline void rt_gen_end(struct ringtrace_rb *rb, uint32_t page)
{
	uint64_t g = RT_LOAD(&rb->gen[page]);
	RT_STORE_REL(&rb->gen[page], g + 1);
}

/*
 * Events committed in the slot's current page h: the slot's hit counter
 * now, less what it was when the page was opened (events_before). The
 * write path counts an event once, in hit.
 */
static inline uint32_t rt_page_events(const struct ringtrace_page_header *h,
				      const struct rt_slot *s)
{
	return (uint32_t)(RT_LOAD(&s->h.hit) - h->events_before);
}

/* The thread's current page, as its header. */
static inline struct ringtrace_page_header *rt_cur_header(const struct ringtrace_wtls_ *t)
{
	return (struct ringtrace_page_header *)(void *)t->page;
}

/* The thread holds no page: the next event takes one (the general path). */
static inline void rt_state_no_page(struct ringtrace_wtls_ *t)
{
	t->page = NULL;
	t->limit = 0;
	t->end = 0;
}

/* The lines of a page switch's warm-up (rt_warm_note). */
enum {
	RT_WARM_PUSH_CELL,
	RT_WARM_POP_CELL,
	RT_WARM_HEADER,
	RT_WARM_HEADER2,
	RT_WARM_GEN,
	RT_WARM_LINK, /* the free-list link, or (a FIFO page) the line of the cell after the next */
	RT_WARM_FREE_HEAD,
	RT_WARM_ENQ,
	RT_WARM_DEQ,
	RT_WARM_SLOT,
	RT_WARM_N
};
_Static_assert(RT_WARM_N == RINGTRACE_WARM_LINES_, "one warm-up line each");

/* A line with nothing to name: the slot's second line (warmed anyway). */
#define RT_WARM_NONE ((int32_t)offsetof(struct rt_slot, overrun))

/*
 * The lines are offsets from the slot, which is in the pool's mapping as
 * they all are: they fit an int32_t when the mapping does. A pool can be
 * larger (up to 2^40 bytes); its switches are not warmed up (every line
 * RT_WARM_NONE).
 */
static inline int rt_warm_reach(const struct ringtrace_rb *rb)
{
	return rb->map_size <= (size_t)INT32_MAX;
}

/* (only where rt_warm_reach) */
static inline int32_t rt_warm_off(const struct rt_slot *s, const void *p)
{
	return (int32_t)((const char *)p - (const char *)s);
}

/* A thread's first lines, at its attach: those that stay. */
static void rt_warm_init(struct ringtrace_rb *rb, struct ringtrace_wtls_ *t,
			 const struct rt_slot *s)
{
	int32_t *w = t->warm_off;
	struct rt_shm *shm = rb->shm;
	for (int i = 0; i < RT_WARM_N; i++)
		w[i] = RT_WARM_NONE;
	t->warm_rb = (const char *)rb;
	if (!rt_warm_reach(rb))
		return;
	w[RT_WARM_FREE_HEAD] = rt_warm_off(s, &shm->free_head);
	w[RT_WARM_ENQ] = rt_warm_off(s, &shm->enq_pos);
	if (rb->g.mode == RINGTRACE_RB_OVERWRITE)
		w[RT_WARM_DEQ] = rt_warm_off(s, &shm->deq_pos);
}

/*
 * Publish the thread's page. If the FIFO is found damaged the page is left
 * where it is, in no list: its events stay in the pool, where a recovery
 * tool finds such pages (ringtrace_rb_orphan_pages), and its header is
 * final.
 */
static inline __attribute__((always_inline)) void rt_page_push(struct ringtrace_rb *rb,
							       struct ringtrace_wtls_ *t,
							       struct rt_slot *s,
							       struct ringtrace_page_header *h)
{
	uint32_t idx = rt_page_index(rb, h);
	uint64_t pos = 0; /* set when the claim returns 1 (gcc -O3 cannot see it) */
	int r = rt_fifo_claim_for_switch(rb, &pos);
	if (r > 0) {
		rt_fifo_fill(rb, pos, idx);
		/* (the next push's cell, most likely: rt_warm_note) */
		if (rt_warm_reach(rb))
			t->warm_off[RT_WARM_PUSH_CELL] = rt_warm_off(
				s, &rb->qcells[(pos + 1) & (rb->g.qcap - 1)]);
	} else if (r == 0) {
		rt_account_overrun_by(rb, s, h);
		rt_free_push(rb, idx, 1);
	}
}

/* The thread's page is full or given up: its header's final fields. */
static inline __attribute__((always_inline)) void rt_page_close(struct ringtrace_wtls_ *t,
								struct rt_slot *s,
								struct ringtrace_page_header *h,
								uint32_t flags)
{
	h->timestamp_end = ringtrace_last_ts_(t);
	h->content_size = (uint64_t)h->commit * 8;
	h->events = rt_page_events(h, s);
	h->flags |= flags;
	RT_STORE(&s->h.cur_page, RT_NO_PAGE);
}

static void rt_publish(struct ringtrace_rb *rb, struct ringtrace_wtls_ *t, struct rt_slot *s,
		       uint32_t flags)
{
	struct ringtrace_page_header *h = rt_cur_header(t);
	rt_page_close(t, s, h, flags);
	rt_state_no_page(t);
	rt_page_push(rb, t, s, h);
}

/*
 * Note what the thread's next page switch will touch, for its warm-up
 * (ringtrace/static/ring.h: ringtrace_warm_, RINGTRACE_WARM_AHEAD_ bytes
 * before the page's end). Why: one page of events (64 KiB by default)
 * pushes the pool's lines that only a switch uses out of the nearest
 * caches, and a switch would then wait for them one after another (each
 * address depends on the line before: the queue position, then its cell,
 * then the page it names, then that page's header). Asked for a
 * microsecond ahead, they are near by then.
 *
 * The lines: the control block's free-list head and FIFO write position
 * (and the FIFO read position in overwrite mode, where
 * the writers pop; in discard mode it is the consumer's line), the slot's
 * second line (rt_warm_init), the next push's cell (rt_page_push notes it),
 * and the page the next take will most likely find first: the free list's
 * new head (and its free-list link), or in overwrite mode the FIFO's,
 * read from the cell after the one just popped; that page's header and
 * generation word. When the page came from the FIFO, the line of the
 * cell after that one too (in the link's place), so that the next switch
 * reads its guess from a near line, whichever line its cell is in; else
 * a switch after one that could not guess would find its page's header
 * far away. That line is near when this thread popped the position
 * before too; where others pop between (several writers recycling, a
 * consumer of an overwrite buffer) the guess may be read from far, a wait
 * nothing here uses, so it costs only the instructions retired behind
 * it. And the first lines of the buffer's handle
 * (ringtrace_wtls_.warm_rb). A line with nothing to name repeats the
 * slot's second line. The values read here are the pool's (untrusted): a
 * page index is checked against the geometry, and the result is only ever
 * an address to prefetch.
 */
static void rt_warm_note(struct ringtrace_rb *rb, struct ringtrace_wtls_ *t,
			 const struct rt_slot *s, uint64_t popped, int from_fifo)
{
	int32_t *w = t->warm_off;
	struct rt_shm *shm = rb->shm;
	const int32_t none = RT_WARM_NONE;
	uint32_t next = RT_NO_PAGE;
	if (!rt_warm_reach(rb))
		return;
	w[RT_WARM_POP_CELL] = none;
	w[RT_WARM_LINK] = none;
	if (from_fifo) {
		const struct rt_qcell *c = &rb->qcells[(popped + 1) & (rb->g.qcap - 1)];
		w[RT_WARM_POP_CELL] = rt_warm_off(s, c);
		w[RT_WARM_LINK] = rt_warm_off(s, &rb->qcells[(popped + 2) & (rb->g.qcap - 1)]);
		if (RT_LOAD(&c->seq) == popped + 2)
			next = RT_LOAD(&c->page);
	} else {
		uint32_t top = (uint32_t)RT_LOAD(&shm->free_head); /* index + 1 */
		if (top != 0 && top <= rb->g.npages) {
			next = top - 1;
			w[RT_WARM_LINK] = rt_warm_off(s, &rb->free_next[next]);
		}
	}
	if (next < rb->g.npages) {
		const char *h = (const char *)rt_page(rb, next);
		w[RT_WARM_HEADER] = rt_warm_off(s, h);
		w[RT_WARM_HEADER2] = rt_warm_off(s, h + RT_CACHELINE);
		w[RT_WARM_GEN] = rt_warm_off(s, &rb->gen[next]);
	} else {
		w[RT_WARM_HEADER] = w[RT_WARM_HEADER2] = w[RT_WARM_GEN] = none;
	}
}

/* 0, -1 if there is no page to take, -2 if the pool was found damaged. */
static inline __attribute__((always_inline)) int rt_take_page(struct ringtrace_rb *rb,
							      struct ringtrace_wtls_ *t,
							      struct rt_slot *s, uint64_t ts)
{
	uint32_t idx;
	uint64_t popped = 0;
	/* (an empty free list, the steady state of overwrite mode, seen
	 * without the call: the pop reads the head again) */
	int r = (uint32_t)RT_LOAD(&rb->shm->free_head) != 0 ? rt_free_pop(rb, &idx, 1) : 0;
	int from_fifo = 0;
	if (r == 0) {
		if (rb->g.mode != RINGTRACE_RB_OVERWRITE)
			return -1;
		r = rt_fifo_pop_for_switch(rb, &idx, &popped);
		if (r == 0)
			return -1;
		if (r > 0)
			rt_account_overrun_by(rb, s, rt_page(rb, idx));
		from_fifo = 1;
	}
	if (r < 0 || RT_LOAD(&rb->damaged))
		return -2;
	struct ringtrace_page_header *h = rt_page(rb, idx);
	rt_gen_begin(rb, idx);
	h->magic = RINGTRACE_PAGE_MAGIC;
	h->stream_id = 0;
	h->stream_instance_id = s->stream;
	h->timestamp_begin = ts;
	h->timestamp_end = ts;
	h->content_size = (uint64_t)RINGTRACE_PAGE_HEADER_SIZE * 8;
	h->packet_size = (uint64_t)rb->h.page_size * 8;
	h->packet_seq_num = t->seq++;
	h->events_discarded = RT_LOAD(&s->missed);
	RT_STORE(&s->missed_reported, h->events_discarded);
	h->events_before = RT_LOAD(&s->h.hit);
	h->events = 0;
	h->tid = s->tid;
	h->writer = (uint32_t)(s - rb->slots);
	int cpu = sched_getcpu();
	h->cpu = cpu < 0 ? 0xFFFFFFFFu : (uint32_t)cpu;
	h->flags = 0;
	uint64_t cm[2] = {RT_LOAD(&s->comm[0]), RT_LOAD(&s->comm[1])};
	memcpy(h->comm, cm, sizeof(cm));
	RT_STORE_REL(&h->commit, RINGTRACE_PAGE_HEADER_SIZE);
	rt_gen_end(rb, idx);
	t->page = (char *)h;
	t->off = RINGTRACE_PAGE_HEADER_SIZE;
	t->end = rb->h.page_size;
	/* (the warm-up mark: not on pages too small to have a point) */
	t->limit = t->end >= 4 * RINGTRACE_WARM_AHEAD_ ? t->end - RINGTRACE_WARM_AHEAD_ : t->end;
	rt_warm_note(rb, t, s, popped, from_fifo);
	ringtrace_set_last_ts_(t, ts);
	RT_STORE(&s->pages, RT_LOAD(&s->pages) + 1);
	RT_STORE(&s->page_ts, ts);
	RT_STORE_REL(&s->h.cur_page, idx);
	return 0;
}

/*
 * Answer a flush request (called inside a write, nest != 0). Bounded: each
 * failed exchange is another flush taking the request over, which the
 * buffer's readers do once per flush call.
 */
static void rt_answer_steal(struct ringtrace_rb *rb, struct ringtrace_wtls_ *t, struct rt_slot *s,
			    uint32_t st)
{
	uint32_t tries = 0;
	while (RT_STEAL_IS_ASKED(st)) {
		if (__atomic_compare_exchange_n(&s->h.steal, &st, RT_STEAL_NONE, 0,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			if (t->page && rt_page_events(rt_cur_header(t), s)) {
				rt_publish(rb, t, s, RINGTRACE_PAGE_F_FLUSHED);
				__atomic_fetch_add(&rb->shm->pages_flushed, 1, __ATOMIC_RELAXED);
			}
			return;
		}
		/* st now holds the current value: the reader took the page, or
		 * another flush took the request over (then try again). */
		if (++tries >= RT_CAS_MAX) {
			rt_pool_damaged(rb, 1,
					"writer slot %u: its steal word changed %u times while its "
					"writer answered a flush",
					(uint32_t)(s - rb->slots), RT_CAS_MAX);
			return;
		}
	}
	if (st == RT_STEAL_TAKEN) {
		rt_state_no_page(t);
		RT_STORE(&s->h.cur_page, RT_NO_PAGE);
		RT_STORE_REL(&s->h.steal, RT_STEAL_NONE);
	}
}

/*
 * An event refused because the pool was found damaged: counted in the
 * handle (process-local, shown as missed by the stats), nothing written
 * to the pool.
 */
static void *rt_refuse(struct ringtrace_rb *rb, struct ringtrace_wtls_ *t)
{
	t->drop_reason = RINGTRACE_ECORRUPT;
	__atomic_fetch_add(&rb->refused, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* (an atomic add: a nested drop may interrupt the owner's own count) */
static inline void rt_count_missed(struct rt_slot *s)
{
	__atomic_fetch_add(&s->missed, 1, __ATOMIC_RELAXED);
}

/* Drop an event (counted) and leave the write (nest back to 0). */
static void *rt_drop(struct ringtrace_wtls_ *t, struct rt_slot *s, int reason)
{
	t->drop_reason = reason;
	rt_count_missed(s);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	RT_STORE_REL(&s->h.nest, 0);
	return NULL;
}

/*
 * No page could be taken for an event (r: rt_take_page's -1 or -2): the
 * thread holds none, and the event is dropped (no page to take) or
 * refused (the pool was found damaged: this event is the first refused).
 */
static void *rt_take_failed(struct ringtrace_rb *rb, struct ringtrace_wtls_ *t, struct rt_slot *s,
			    int r)
{
	rt_state_no_page(t);
	if (r == -1)
		return rt_drop(t, s, RINGTRACE_ENOSPC);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	RT_STORE_REL(&s->h.nest, 0);
	return rt_refuse(rb, t);
}

/*
 * Any case, each tested in turn, inside the write (nest raised): taken by
 * rt_reserve_out_of_line for all but a plain page switch. Checks the
 * caller's id and size, answers a flush request, keeps the stream
 * monotonic if the clock went back, writes the extended header of a long
 * gap, takes the thread's first page or switches to the next one. The
 * reservation is committed by the same commit as a fast one
 * (ringtrace_rb_commit, from res_end).
 */
static void *rt_reserve_any_case(struct ringtrace_rb *rb, uint32_t id, size_t len, uint64_t ts)
{
	struct ringtrace_wtls_ *t = &ringtrace_wtls_[rb->h.idx];
	struct rt_slot *s = rt_slot_of(t);
	if (id > RINGTRACE_EV_MAX_ID)
		return rt_drop(t, s, RINGTRACE_EINVAL);
	if (len > rb->h.max_payload)
		return rt_drop(t, s, RINGTRACE_E2BIG);
	uint32_t st = RT_LOAD_ACQ(&s->h.steal);
	if (st != RT_STEAL_NONE)
		rt_answer_steal(rb, t, s, st);
	uint64_t last = ringtrace_last_ts_(t);
	if (ts < last)
		ts = last; /* keep each stream monotonic */
	int ext = t->page && ts - last > 0xFFFFFFFFull;
	uint32_t start = t->off;
	uint32_t end = start + (ext ? RINGTRACE_EV_EXT_HEADER_SIZE : RINGTRACE_EV_HEADER_SIZE) +
		       (uint32_t)len;
	if (t->page && end > t->limit && end <= t->end)
		ringtrace_warm_(t, &s->h); /* the warm-up mark (as the inline path does) */
	if (!t->page || end > t->end) {
		if (t->page)
			rt_publish(rb, t, s, 0);
		int r = RT_LOAD(&rb->damaged) ? -2 : rt_take_page(rb, t, s, ts);
		if (r < 0)
			return rt_take_failed(rb, t, s, r);
		ext = 0;
		start = t->off;
		end = start + RINGTRACE_EV_HEADER_SIZE + (uint32_t)len;
	}
	uint64_t *h = (uint64_t *)(void *)(t->page + start);
	if (ext) {
		h[0] = RINGTRACE_EV_WORD(ts, RINGTRACE_EV_EXTENDED, len);
		h[1] = (uint64_t)id;
		h[2] = ts;
		h += 3;
	} else {
		h[0] = RINGTRACE_EV_WORD(ts, id, len);
		h += 1;
	}
	t->res_end = end;
	ringtrace_set_last_ts_(t, ts);
	return h;
}

/*
 * The page switch, the common case of a declined event: taken by
 * rt_reserve_out_of_line when the event does not fit in the thread's
 * page, no flush asks for the page, and the clock reading is in order (it
 * checked all this, nest raised). Close the page and push it (as
 * rt_publish does), take the next one (rt_take_page), write the event's
 * header (the first in the page: the short one). The thread's page is
 * cleared before the take, as rt_publish clears it, but only the pointer
 * (the take sets the rest): the state never names a page the thread gave
 * away, even to a retire that ran after a handler left this write by
 * siglongjmp (unsupported: nest stays raised). What rt_reserve_any_case
 * does in this case, without its tests of the cases that are not this
 * one, which the switch, the slowest event of a page, would otherwise
 * pay for. A failed take goes the way rt_reserve_any_case's does
 * (rt_take_failed).
 */
static inline __attribute__((always_inline)) void *rt_switch_and_reserve(struct ringtrace_rb *rb,
									 struct ringtrace_wtls_ *t,
									 struct rt_slot *s,
									 uint32_t id, uint32_t len,
									 uint64_t ts)
{
	struct ringtrace_page_header *o = rt_cur_header(t);
	rt_page_close(t, s, o, 0);
	rt_page_push(rb, t, s, o);
	t->page = NULL;
	int r = RT_LOAD(&rb->damaged) ? -2 : rt_take_page(rb, t, s, ts);
	if (r < 0)
		return rt_take_failed(rb, t, s, r);
	uint64_t *h = (uint64_t *)(void *)(t->page + RINGTRACE_PAGE_HEADER_SIZE);
	h[0] = RINGTRACE_EV_WORD(ts, id, len);
	t->res_end = RINGTRACE_PAGE_HEADER_SIZE + RINGTRACE_EV_HEADER_SIZE + len;
	return h + 1; /* (the take set the thread's last timestamp: ts) */
}

static void *rt_attach_and_reserve(struct ringtrace_rb *rb, uint32_t id, size_t len);

/*
 * The general write path: everything the inline fast path does not
 * handle, as the body of its two out-of-line entries below. A damaged
 * pool (refused), a thread's first event (rt_attach_and_reserve), a write
 * nested in a signal handler (dropped and counted: the interrupted write
 * goes on untouched); then, nest raised, the clock (the declined
 * attempt's reading, or a new one: also the CLOCK_MONOTONIC fallback) and
 * the cases the fast path left with nest lowered: a page switch
 * (rt_switch_and_reserve) or any other (rt_reserve_any_case). The entries
 * are out of line and reached by a tail call, so that the fast path
 * saves no registers for them.
 */
static inline __attribute__((always_inline)) void *rt_reserve_out_of_line(struct ringtrace_rb *rb,
									  uint32_t id, size_t len,
									  int declined)
{
	struct ringtrace_wtls_ *t = &ringtrace_wtls_[rb->h.idx];
	/* A damaged pool: nothing more is written to it (ring_internal.h,
	 * "UNTRUSTED POOLS"). */
	if (rt_unlikely(RT_LOAD(&rb->damaged)))
		return rt_refuse(rb, t);
	if (t->epoch != rb->h.epoch)
		return rt_attach_and_reserve(rb, id, len);
	struct rt_slot *s = rt_slot_of(t);
	if (RT_LOAD(&s->h.nest) != 0) {
		t->drop_reason = RINGTRACE_ENESTED;
		rt_count_missed(s);
		return NULL;
	}
	RT_STORE(&s->h.nest, 1);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	/*
	 * The inline attempt that declined read the clock already: its
	 * reading, taken now that nest is raised (a signal handler's write
	 * from here on is dropped above and leaves it alone; one that wrote
	 * in between may have taken it, leaving 0, or replaced it with its
	 * own, later reading). One older than the thread's last event (a
	 * handler's event came after it) is not used: the clock is read.
	 */
	uint64_t ts = 0;
	if (declined) {
		if (rb->h.is_tsc)
			ts = t->decl_ts;
		t->decl_ts = 0;
	}
	uint64_t last = ringtrace_last_ts_(t);
	if (ts == 0 || ts < last)
		ts = rt_ticks((int)rb->h.is_tsc);
	/* (the common case of a declined event: rt_switch_and_reserve) */
	if (declined && t->page && ts >= last && id <= RINGTRACE_EV_MAX_ID &&
	    len <= rb->h.max_payload &&
	    (uint64_t)t->off + RINGTRACE_EV_HEADER_SIZE + len > t->end &&
	    RT_LOAD_ACQ(&s->h.steal) == RT_STEAL_NONE)
		return rt_switch_and_reserve(rb, t, s, id, (uint32_t)len, ts);
	return rt_reserve_any_case(rb, id, len, ts);
}

/*
 * ringtrace_rb_reserve's way when it made no inline attempt: the thread
 * is not this buffer's writer yet, the buffer's clock is not the cycle
 * counter, or the id or size is out of range. No clock reading waits in
 * the thread's state for this event.
 */
static void *__attribute__((noinline, cold))
rt_reserve_untried(struct ringtrace_rb *rb, uint32_t id, size_t len)
{
	return rt_reserve_out_of_line(rb, id, len, 0);
}

/*
 * The way after an inline attempt through the thread's state declined
 * (ringtrace_rb_reserve's own, or a tracepoint's, which comes through
 * ringtrace_rb_reserve_general_): a page switch, a flush request, a long
 * gap, a clock gone back, a nested write. The attempt's clock reading is
 * in decl_ts (ringtrace/static/ring.h).
 */
static void *__attribute__((noinline, cold))
rt_reserve_after_decline(struct ringtrace_rb *rb, uint32_t id, size_t len)
{
	return rt_reserve_out_of_line(rb, id, len, 1);
}

void *ringtrace_rb_reserve(ringtrace_rb *rb, uint32_t id, size_t len)
{
	struct ringtrace_wtls_ *t = &ringtrace_wtls_[rb->h.idx];
	/*
	 * (t as one opaque value: else the compiler recomputes it from the
	 * thread pointer, the index and the array's offset where it is used,
	 * and keeps those three in registers it saves and restores, four more
	 * pushes and pops on every call.)
	 */
	__asm__("" : "+r"(t));
	struct ringtrace_fres_ f;
	if (rt_unlikely(t->epoch != rb->h.fast_epoch || id > RINGTRACE_EV_MAX_ID ||
			len > rb->h.max_payload))
		return rt_reserve_untried(rb, id, len);
	/*
	 * The inline fast path, with id and len packed in the header word it
	 * ORs in: one value to keep for the general path instead of three,
	 * which saves registers.
	 */
	uint64_t w = RINGTRACE_EV_WORD(0, id, len);
	void *p = ringtrace_reserve_at_(t, &w, RINGTRACE_EV_WORD_LEN(w), &f);
	if (rt_unlikely(!p))
		return rt_reserve_after_decline(rb, RINGTRACE_EV_WORD_ID(w),
						RINGTRACE_EV_WORD_LEN(w));
	t->res_end = f.end; /* for ringtrace_rb_commit */
	return p;
}

void *ringtrace_rb_reserve_general_(ringtrace_rb *rb, uint32_t id, size_t len)
{
	return rt_reserve_after_decline(rb, id, len);
}

void ringtrace_rb_commit(ringtrace_rb *rb)
{
	struct ringtrace_wtls_ *t = &ringtrace_wtls_[rb->h.idx];
	struct ringtrace_fres_ f = {
		t,
		t->slot,
		t->page,
		t->res_end,
		(t->res_end + (RINGTRACE_EV_ALIGN - 1)) & ~(RINGTRACE_EV_ALIGN - 1),
	};
	ringtrace_commit_fast_(&f);
}

int ringtrace_rb_write(ringtrace_rb *rb, uint32_t id, const void *data, size_t len)
{
	/*
	 * A signal handler may write (and fail) between our reserve and our
	 * reading of drop_reason: each call restores what it found, so the
	 * handler leaves the interrupted call's reason intact.
	 */
	int *reason = &ringtrace_wtls_[rb->h.idx].drop_reason;
	int saved = *reason;
	void *p = ringtrace_rb_reserve(rb, id, len);
	if (rt_unlikely(!p)) {
		int r = *reason;
		*reason = saved;
		return -r;
	}
	memcpy(p, data, len);
	ringtrace_rb_commit(rb);
	return 0;
}

/* ---- writer slots: attach, retire ------------------------------------------ */

static pid_t rt_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/*
 * Make the calling thread a writer of rb: claim a slot. 0 once attached
 * (also if a signal handler attached it meanwhile), else the negated
 * reason, also left in drop_reason. `ev`: an event is waiting, whose drop
 * is counted (missed_noslot, refused) and which spends one of the events
 * skipped after a failed slot scan; ringtrace_rb_prepare_thread() passes
 * 0: no event, nothing counted, and it always scans.
 */
static int __attribute__((noinline, cold)) rt_attach(struct ringtrace_rb *rb, int ev)
{
	struct ringtrace_wtls_ *t = &ringtrace_wtls_[rb->h.idx];
	struct rt_shm *shm = rb->shm;
	/*
	 * No writer yet: a reader-only handle, a signal handler interrupting
	 * this thread's own attach, or no free slot (retried every 1024 events
	 * rather than scanning the slots on every dropped event).
	 */
	if (!rb->owner) {
		/* (counted in the handle: a reader does not write to the pool) */
		if (ev)
			__atomic_fetch_add(&rb->refused, 1, __ATOMIC_RELAXED);
		t->drop_reason = RINGTRACE_EINVAL;
		return -RINGTRACE_EINVAL;
	}
	/*
	 * Test and set in one instruction (an exchange): a signal handler's
	 * event that lands between a separate test and set would attach
	 * this thread itself, and the interrupted attach would then claim a
	 * second slot over it, leaking the first with its page, or leave
	 * the handler's next event a valid epoch with half-reset state.
	 */
	if (__atomic_exchange_n(&t->attaching, 1, __ATOMIC_RELAXED)) {
		if (ev)
			__atomic_fetch_add(&shm->missed_noslot, 1, __ATOMIC_RELAXED);
		t->drop_reason = RINGTRACE_ENESTED;
		return -RINGTRACE_ENESTED;
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (t->epoch == rb->h.epoch) {
		/* A signal handler attached this thread before the exchange. */
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		t->attaching = 0;
		return 0;
	}
	/* (a count left from another buffer that had this index is not this one's) */
	if (ev && t->noslot_skip && t->noslot_epoch == (uint32_t)rb->h.epoch &&
	    t->noslot_skip-- > 0) {
		__atomic_fetch_add(&shm->missed_noslot, 1, __ATOMIC_RELAXED);
		t->drop_reason = RINGTRACE_ENOSPC;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		t->attaching = 0;
		return -RINGTRACE_ENOSPC;
	}
	struct rt_slot *s = NULL;
	uint32_t w = 0;
	uint32_t nw = rb->g.max_writers;
	/* (one system call: a thread's first event pays for each, and they
	 * are slow in a VM with page-table isolation) */
	uint32_t tid = (uint32_t)rt_gettid();
	uint32_t start = tid % nw;
	for (uint32_t k = 0; k < nw; k++) {
		struct rt_slot *c = &rb->slots[(start + k) % nw];
		w = RT_LOAD(&c->h.state);
		if (RT_SLOT_STATE(w) == RT_SLOT_FREE &&
		    __atomic_compare_exchange_n(&c->h.state, &w, RT_SLOT_NEXT(w, RT_SLOT_CLAIMING),
						0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			s = c;
			w = RT_SLOT_NEXT(w, RT_SLOT_CLAIMING);
			break;
		}
	}
	if (!s) {
		t->drop_reason = RINGTRACE_ENOSPC;
		t->noslot_skip = 1024;
		t->noslot_epoch = (uint32_t)rb->h.epoch;
		if (ev)
			__atomic_fetch_add(&shm->missed_noslot, 1, __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		t->attaching = 0;
		return -RINGTRACE_ENOSPC;
	}
	uint64_t stream = __atomic_fetch_add(&shm->next_stream, 1, __ATOMIC_RELAXED);
	RT_STORE(&s->h.nest, 0);
	RT_STORE(&s->h.steal, RT_STEAL_NONE);
	RT_STORE(&s->h.cur_page, RT_NO_PAGE);
	RT_STORE(&s->h.hit, 0);
	RT_STORE(&s->missed, 0);
	RT_STORE(&s->pages, 0);
	RT_STORE(&s->page_ts, 0);
	RT_STORE(&s->stream, stream);
	RT_STORE(&s->tid, tid);
	RT_STORE(&s->pid, (uint32_t)getpid());
	const struct rt_identity *me = rt_identity_loaded();
	RT_STORE(&s->pidns, RT_LOAD(&me->pidns));
	RT_STORE(&s->owner_cookie, RT_LOAD(&me->cookie));
	uint64_t cm[2] = {0, 0};
	prctl(PR_GET_NAME, (unsigned long)cm, 0, 0, 0);
	((char *)cm)[15] = 0;
	RT_STORE(&s->comm[0], cm[0]);
	RT_STORE(&s->comm[1], cm[1]);
	RT_STORE(&s->overrun, RT_TAG(stream));
	RT_STORE(&s->overrun_own, 0);
	RT_STORE_REL(&s->read, RT_TAG(stream));
	/*
	 * Only now ACTIVE: a flush that reads this word reads this thread's
	 * pid and tid, not those of the slot's previous owner, which may be
	 * gone (it would take the slot from under us). A process killed
	 * before this store leaves the slot CLAIMING for good: one slot fewer,
	 * no event lost (it holds no page yet).
	 */
	RT_STORE_REL(&s->h.state, RT_SLOT_NEXT(w, RT_SLOT_ACTIVE));
	t->slot_w = RT_SLOT_NEXT(w, RT_SLOT_ACTIVE);
	t->slot = &s->h;
	rt_state_no_page(t);
	t->off = 0;
	rt_warm_init(rb, t, s);
	ringtrace_set_last_ts_(t, 0);
	t->decl_ts = 0; /* (a reading for the buffer this state served before) */
	t->seq = 0;
	t->noslot_skip = 0;
	pthread_setspecific(rt_exit_key, (void *)1);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->epoch = rb->h.epoch;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->attaching = 0;
	return 0;
}

/*
 * A thread's first event in the buffer (or one after its attach failed):
 * claim a writer slot (rt_attach), then reserve as ringtrace_rb_reserve
 * does, inline attempt first.
 */
static void *__attribute__((noinline, cold))
rt_attach_and_reserve(struct ringtrace_rb *rb, uint32_t id, size_t len)
{
	if (rt_attach(rb, 1) < 0)
		return NULL;
	return ringtrace_rb_reserve(rb, id, len);
}

int ringtrace_rb_prepare_thread(ringtrace_rb *rb)
{
	struct ringtrace_wtls_ *t = &ringtrace_wtls_[rb->h.idx];
	if (RT_LOAD(&rb->damaged))
		return rt_error(
			RINGTRACE_ECORRUPT,
			"prepare_thread: the buffer was found damaged: nothing is written to it");
	if (t->epoch == rb->h.epoch)
		return 0;
	/* (the reason the thread's last event was dropped is its caller's) */
	int saved = t->drop_reason;
	int r = rt_attach(rb, 0);
	t->drop_reason = saved;
	if (r == -RINGTRACE_EINVAL)
		return rt_error(RINGTRACE_EINVAL,
				"prepare_thread: a handle that only reads this buffer");
	if (r == -RINGTRACE_ENESTED)
		return rt_error(RINGTRACE_ENESTED,
				"prepare_thread: called inside this thread's own attach (a signal "
				"handler)");
	if (r == -RINGTRACE_ENOSPC)
		return rt_error(
			RINGTRACE_ENOSPC,
			"prepare_thread: every one of the buffer's %u writer slots is taken",
			rb->g.max_writers);
	return r;
}

/* Publish the thread's page and give its slot back. */
static void rt_writer_retire(struct ringtrace_rb *rb, struct ringtrace_wtls_ *t)
{
	struct rt_slot *s = rt_slot_of(t);
	/*
	 * From here a signal handler's event on this thread goes to the attach
	 * path, finds `attaching` and is counted in missed_noslot: it never
	 * touches a slot that is being folded or that another thread may
	 * already have claimed.
	 */
	t->attaching = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	rt_state_leave(t);
	if (RT_LOAD(&rb->damaged)) {
		/*
		 * The pool was found damaged: touch nothing in it. The slot
		 * stays active with its page; a flush that finds this thread
		 * gone publishes what it had committed (rt_reclaim_dead).
		 */
		t->page = NULL;
		t->slot = NULL;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		t->attaching = 0;
		return;
	}
	/*
	 * Renew the slot's stamp (still ACTIVE) from exactly the word this
	 * thread published: a reclaim judged on the old word now fails, and
	 * if this process dies in the middle of the retire, a later flush
	 * still finds the slot ACTIVE and its owner gone. If the word is not
	 * ours any more, the slot was taken from us (a flush that misjudged
	 * us; or it was freed by a copy of this thread's state, such as a
	 * child of _Fork() that retired it, and claimed by another thread):
	 * then nothing in it is ours to publish or fold.
	 */
	uint32_t w = t->slot_w;
	uint32_t wr = RT_SLOT_NEXT(w, RT_SLOT_ACTIVE);
	if (!__atomic_compare_exchange_n(&s->h.state, &w, wr, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED)) {
		t->page = NULL;
		t->slot = NULL;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		t->attaching = 0;
		return;
	}
	RT_STORE(&s->h.nest, 1);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	/* Make sure a flush that already asked sees us inside a write. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	uint32_t st = RT_LOAD_ACQ(&s->h.steal);
	if (st != RT_STEAL_NONE)
		rt_answer_steal(rb, t, s, st);
	if (t->page) {
		if (rt_page_events(rt_cur_header(t), s)) {
			rt_publish(rb, t, s, RINGTRACE_PAGE_F_LAST);
		} else {
			uint32_t idx = rt_page_index(rb, t->page);
			RT_STORE(&s->h.cur_page, RT_NO_PAGE);
			rt_state_no_page(t);
			rt_free_push(rb, idx, 1);
		}
	}
	rt_tail_note(rb, s);
	rt_slot_fold(rb->shm, s);
	/* (release: a flush that reads them reads cur_page as left above) */
	RT_STORE_REL(&s->h.steal, RT_STEAL_NONE);
	RT_STORE_REL(&s->h.nest, 0);
	/* (a compare-and-swap: if the slot was taken from us meanwhile, it
	 * is not ours to free) */
	__atomic_compare_exchange_n(&s->h.state, &wr, RT_SLOT_NEXT(wr, RT_SLOT_FREE), 0,
				    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	t->slot = NULL;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->attaching = 0;
}

void ringtrace_rb_writer_release(ringtrace_rb *rb)
{
	struct ringtrace_wtls_ *t = &ringtrace_wtls_[rb->h.idx];
	if (t->epoch == rb->h.epoch && rb->owner)
		rt_writer_retire(rb, t);
}

static void rt_thread_exit(void *arg)
{
	(void)arg;
	/*
	 * A child of _Fork() or vfork() (no atfork handler ran) has a copy of
	 * its parent's thread state: its writers are the parent's, which its
	 * exit must not retire. (0: no buffer was ever opened for writing,
	 * no thread writes: nothing to do, and no system call at exit.)
	 */
	uint32_t writers_pid = RT_LOAD(&rt_writers_pid);
	if (!writers_pid || (uint32_t)getpid() != writers_pid)
		return;
	pthread_mutex_lock(&rt_open_lock);
	for (unsigned i = 0; i < RINGTRACE_RB_MAX_OPEN; i++) {
		struct ringtrace_wtls_ *t = &ringtrace_wtls_[i];
		if (rt_open[i].rb && t->epoch != 0 && t->epoch == rt_open[i].epoch) {
			/*
			 * Retire leaves the epoch 0. Not zeroed again after it: a
			 * signal handler's event may have attached the thread anew
			 * in between, and that writer (and the destructor round
			 * its attach re-armed) must not be forgotten. (An event
			 * after the thread's last destructor round, from a signal
			 * handler or another key's destructor, attaches a writer
			 * that nothing here retires: the next flush after the
			 * thread is gone publishes its page and frees its slot,
			 * see rt_owner_gone.)
			 */
			rt_writer_retire(rt_open[i].rb, t);
		} else if (t->epoch != 0) {
			/* A buffer destroyed or replaced since: forget it. */
			rt_state_leave(t);
		}
	}
	pthread_mutex_unlock(&rt_open_lock);
}

/*
 * exit() does not run thread-key destructors: retire the exiting thread's
 * writers so that its last pages are published and its slots freed (this
 * matters for short-lived forked children writing into a shared pool).
 */
static void rt_process_exit(void)
{
	rt_thread_exit(NULL);
}

/*
 * fork(): the child's only thread starts with no writer. It shares the
 * pool (MAP_SHARED) and will claim its own slot and page at its first
 * event; the parent's slot stays the parent's. Signals are blocked from
 * before the fork until the child has reset this thread's writer state
 * and any cache of it above (rt_atfork_child): a handler's
 * event in the child before that would write into the parent's slot in
 * the shared pool, or cache that state. Not covered: fork from a signal
 * handler that interrupted a write (glibc does not make fork
 * async-signal-safe either), and children made by _Fork(), vfork() or a
 * raw clone(), which run no atfork handlers: such a child must exec or
 * _exit before it records. (Its exit(), allowed when the parent had one
 * thread at the fork, leaves the parent's writers alone: rt_thread_exit
 * compares the pid. With more threads, exit() in such a child may wait
 * forever for a lock another thread held at the fork, ours or libc's.)
 */
static __thread sigset_t rt_fork_sigmask;

static void rt_atfork_prepare(void)
{
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &rt_fork_sigmask);
}

static void rt_atfork_parent(void)
{
	pthread_sigmask(SIG_SETMASK, &rt_fork_sigmask, NULL);
}

static void rt_atfork_child(void)
{
	/*
	 * Signals are blocked (rt_atfork_prepare): nothing writes in between.
	 * The child's identity first, before any writer of it can claim a
	 * slot: one claimed with the parent's cookie would be judged by the
	 * parent's flush as one of the parent's threads, and taken from the
	 * child as gone (identity.c's own handler did this already; again
	 * here so that the order does not rest on registration order). A
	 * process that never opened a buffer for writing has read neither:
	 * its child reads them when it opens one.
	 */
	if (RT_LOAD(&rt_identity_loaded()->cookie))
		rt_identity_refresh();
	if (RT_LOAD(&rt_writers_pid))
		RT_STORE(&rt_writers_pid, (uint32_t)getpid());
	rt_forget_cached(NULL);
	memset(ringtrace_wtls_, 0, sizeof(ringtrace_wtls_));
	pthread_mutex_init(&rt_open_lock, NULL);
	for (unsigned i = 0; i < RINGTRACE_RB_MAX_OPEN; i++) {
		if (!rt_open[i].rb)
			continue;
		if (rt_open[i].rb->mb_cmd == MEMBARRIER_CMD_GLOBAL_EXPEDITED)
			rt_membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED);
	}
	pthread_sigmask(SIG_SETMASK, &rt_fork_sigmask, NULL);
}
