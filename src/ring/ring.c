/*
 * ringtrace ring buffer: pages, writers, the page FIFO, flush, accounting.
 *
 * OVERVIEW
 *
 * A buffer is one shared-memory region (a memfd or a POSIX shm object),
 * sized once at creation and never grown:
 *
 *   [ control block | writer slots | FIFO cells | free-list links |
 *     page generations | pages ... ]
 *
 * Everything in it is addressed by index or offset, so another process (a
 * recorder, or a recovery tool after a crash) can map it anywhere and read
 * it. See docs/format.md for the byte layout of pages and events.
 *
 * PAGE OWNERSHIP
 *
 * Every page has exactly one owner at any instant, and ownership only
 * moves by an atomic operation that one party wins:
 *
 *   FREE      on the free list (a tagged Treiber stack of page indices)
 *   WRITING   the current page of one writer slot (slot->cur_page)
 *   QUEUED    in the FIFO of published pages, oldest first
 *   READING   handed to a reader by ringtrace_rb_get_page()
 *
 *      free-list pop            publish (FIFO push)         FIFO pop
 *   FREE ---------> WRITING ------------------> QUEUED -----------> READING
 *    ^                 ^                          |                  |
 *    |                 +--------------------------+ FIFO pop by a     |
 *    |                    overwrite-mode writer: recycle (overrun)    |
 *    +----------------------------------------------------------------+
 *                          ringtrace_rb_put_page()
 *
 * The FIFO is a bounded multi-producer multi-consumer queue (D. Vyukov's
 * design: one sequence number per cell). Its pop is the single point where
 * a QUEUED page changes hands, and the reader and an overwrite-mode writer
 * looking for the oldest page to recycle both go through it. Whoever pops
 * the page owns it exclusively. That is the whole answer to "a reader must
 * never see its page recycled under it": a writer can only recycle a page
 * that is still QUEUED, and a page the reader holds has left the queue.
 * Nothing needs to be locked or re-checked, and the writer never waits:
 * if the FIFO is empty (the reader holds every page) the writer's event
 * is dropped and counted as missed.
 *
 * A snapshot reads pages it does not own (QUEUED pages and the committed
 * part of WRITING pages). For that, each page has a generation counter,
 * used as a sequence lock: a new owner that is about to rewrite the page
 * header makes it odd, writes, and makes it even again; events are only
 * ever appended beyond the page's commit offset. A snapshot reads an even
 * generation, copies [0, commit), and keeps the copy only if the
 * generation has not changed.
 *
 * THE WRITE PATH
 *
 * Each thread has, per buffer, a slot in shared memory (its counters and
 * the flush handshake) and private thread-local state (page pointer, write
 * offset, last timestamp). An event is:
 *
 *   slot->nest++                       (plain store; marks "inside a write")
 *   if nest was non-zero or a flush is asked or the page is full or the
 *      timestamp needs the extended header:  slow path
 *   ts = rdtsc
 *   store the 8-byte header at the write offset (kept 8-aligned), return
 *      the payload pointer; the caller fills it
 *   commit: write offset = end of the payload rounded up to 8 (private),
 *           page->commit = end of the payload (store-release; unpadded,
 *           as a CTF packet's content_size must be)
 *           slot->hit++ (one add: only its owner writes it),
 *           slot->nest = 0 (store-release)
 *
 * No atomic read-modify-write, no fence, no system call and nothing shared
 * with another writer on this path: a slot's first cache line and the page
 * are written by their owner only. One atomic operation per page (the
 * free-list pop and the FIFO push) is the price of a page switch.
 *
 * SIGNALS
 *
 * A signal handler that writes an event while its thread is between
 * reserve and commit finds nest != 0. Its event is dropped and counted as
 * missed (an atomic add, since the interrupted code may be counting a
 * drop of its own), and nest is restored: neither event is corrupted.
 * The reserve/commit pair is thus async-signal-safe.
 *
 * FLUSH: TAKING A PAGE FROM AN IDLE WRITER
 *
 * A writer that went quiet would keep its committed events in its page
 * forever. ringtrace_rb_flush() moves such a page to the FIFO without
 * stopping the writer and without adding anything to its fast path but
 * the test of slot->steal, which shares a cache line with nest:
 *
 *   reader:  steal = ASKED;  membarrier();  wait until nest == 0;
 *            p = cur_page;  CAS(steal, ASKED -> TAKEN)  ... p is the reader's
 *   writer:  nest = 1;  if (steal) { CAS(steal, ASKED -> NONE) ? publish p
 *                                     itself : forget p (TAKEN) }
 *
 * The writer's "store nest, then load steal" would need a full fence to
 * be ordered against the reader's "store steal, then load nest" (the
 * Dekker pattern). membarrier(2) puts that fence on the reader's side
 * only: it makes every running thread of the traced process execute a
 * full barrier before it returns. Afterwards either the writer's nest is
 * visible to the reader (it is inside a write: the reader waits a bounded
 * time and otherwise leaves the request, which the writer honours by
 * publishing at its next event), or the writer's next write will see
 * steal != NONE. The compare-and-swap on steal decides who publishes the
 * page when both act at once. Where membarrier is not available, flush
 * only asks, and idle writers keep their page until their next event.
 *
 * Several flushes may run at once (a session's reader and the program, a
 * recorder in another process). Each flush call asks with an id of its
 * own (ASKED is `id << 2 | 1`, the id from a counter in the pool), and
 * only the call whose id is there may take the page: a flush that waited
 * while the writer answered an earlier request and got a new page cannot
 * take that one with the old page's index. A later flush takes a pending
 * request over by writing its own id.
 *
 * OWNERS THAT ARE GONE
 *
 * A slot whose owner no longer exists is reclaimed by flush: its page
 * published, its counters folded into the retired totals, the slot freed.
 * That is a process that crashed or _exited (a forked child writing into
 * a shared pool), or a thread that ended without retiring (it attached
 * after its last round of thread-key destructors). A slot records its
 * owner's process by a random cookie, pid and pid namespace: a thread of
 * this process is judged by its tid (tgkill 0), another process by its pid
 * (kill 0), only when its pid namespace is ours. The slot's state word carries a stamp
 * that every transition advances, and the flush takes the slot by
 * compare-and-swap from the word it judged: if the slot changed hands in
 * between, that fails. The reclaim takes the page with the flush
 * handshake's own compare-and-swap (steal -> TAKEN), so a flush that had
 * asked the dead writer for it cannot publish it a second time.
 *
 * ACCOUNTING
 *
 * Per slot: hit and missed are written by the owner (missed with an
 * atomic add, see SIGNALS); overrun and read are added by the thread that
 * recycles or consumes one of the slot's pages. Those two carry a tag of
 * the stream in their top 16 bits, and an add whose tag does not match
 * goes to the buffer's "retired" totals instead, so a slot that is being
 * reused by a new thread is never credited with its predecessor's
 * losses. When a thread exits, its counters are folded into the retired
 * totals. Per page: packet_seq_num, events_before (events the stream had
 * committed before the page) and events_discarded (events the stream had
 * dropped before the page): a reader computes exactly what it lost
 * between two pages of a stream.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ring/ring_internal.h"
#include "ringtrace/ring_inline.h"

/* ---- per-thread writer state ------------------------------------------- */

struct rt_wtls {
	uint64_t epoch;        /* == rb->epoch when this thread writes to rb */
	struct rt_slot *slot;
	char *page;            /* current page, NULL if none */
	uint32_t off;          /* where the next event starts: the committed end rounded up to 8 */
	uint32_t limit;        /* page size, 0 when there is no page */
	uint32_t res_end;      /* end of the reserved event */
	uint32_t noslot_epoch; /* (low bits of) the epoch of the buffer noslot_skip is for */
	uint64_t last_ts;      /* timestamp of the previous event */
	uint64_t seq;          /* packet_seq_num of the next page */
	uint32_t noslot_skip;  /* events to drop before retrying a slot claim (noslot_epoch) */
	uint32_t attaching;
	int drop_reason;       /* why the last reserve returned NULL (RINGTRACE_E*) */
	uint32_t slot_w;       /* the slot's state word this thread published (ACTIVE) */
};

/*
 * initial-exec: the fast path reaches it with one %fs-relative load. Its
 * public name and type are those of ring_inline.h, whose inline fast path
 * the generated recording code uses; the layouts are checked to agree.
 */
__thread struct ringtrace_wtls_ ringtrace_wtls_[RINGTRACE_RB_MAX_OPEN]
	__attribute__((tls_model("initial-exec")));
#define rt_tls ((struct rt_wtls *)(void *)ringtrace_wtls_)
#define RT_SAME_FIELD(a, b, f) \
	_Static_assert(offsetof(a, f) == offsetof(b, f), #f " differs between " #a " and " #b)
_Static_assert(sizeof(struct rt_wtls) == sizeof(struct ringtrace_wtls_), "rt_tls size");
RT_SAME_FIELD(struct rt_wtls, struct ringtrace_wtls_, epoch);
RT_SAME_FIELD(struct rt_wtls, struct ringtrace_wtls_, slot);
RT_SAME_FIELD(struct rt_wtls, struct ringtrace_wtls_, page);
RT_SAME_FIELD(struct rt_wtls, struct ringtrace_wtls_, off);
RT_SAME_FIELD(struct rt_wtls, struct ringtrace_wtls_, limit);
RT_SAME_FIELD(struct rt_wtls, struct ringtrace_wtls_, res_end);
RT_SAME_FIELD(struct rt_wtls, struct ringtrace_wtls_, last_ts);
RT_SAME_FIELD(struct ringtrace_rb, struct ringtrace_rb_head_, idx);
RT_SAME_FIELD(struct ringtrace_rb, struct ringtrace_rb_head_, is_tsc);
RT_SAME_FIELD(struct ringtrace_rb, struct ringtrace_rb_head_, epoch);
RT_SAME_FIELD(struct ringtrace_rb, struct ringtrace_rb_head_, max_payload);
RT_SAME_FIELD(struct ringtrace_rb, struct ringtrace_rb_head_, fast_epoch);
_Static_assert(RINGTRACE_MIN_MAX_PAYLOAD_ <= RINGTRACE_EV_MAX_PAYLOAD, "minimum max_payload");
/*
 * A writer's offset is kept 8-aligned (the fast path stores header and
 * payload there without rounding), and its page-full test compares the
 * rounded-up end with the page size: exact only while pages (powers of
 * two from 4 KiB) and their header are multiples of the event alignment.
 */
_Static_assert(RINGTRACE_PAGE_HEADER_SIZE % RINGTRACE_EV_ALIGN == 0, "page header size");
_Static_assert(RINGTRACE_RB_MIN_PAGE_SIZE % RINGTRACE_EV_ALIGN == 0, "page size");

/*
 * What the inline fast path compares a thread's epoch with: the epoch
 * only where its timestamp (rdtsc) is the buffer's clock. Call whenever
 * epoch or is_tsc changes.
 */
static void rt_set_fast_epoch(struct ringtrace_rb *rb)
{
	rb->fast_epoch = rb->is_tsc ? rb->epoch : UINT64_MAX;
}
RT_SAME_FIELD(struct rt_slot, struct ringtrace_slot_head_, nest);
RT_SAME_FIELD(struct rt_slot, struct ringtrace_slot_head_, steal);
RT_SAME_FIELD(struct rt_slot, struct ringtrace_slot_head_, hit);

/*
 * The events fast path (ringtrace_thr_, ring_inline.h) caches a pointer
 * to this thread's state for one buffer: forget it before that state
 * stops being the thread's writer there.
 */
static void rt_forget_cached(struct rt_wtls *t)
{
	if (ringtrace_thr_.last_t == (struct ringtrace_wtls_ *)(void *)t) {
		ringtrace_thr_.cookie = RINGTRACE_THR_NO_COOKIE_;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	}
}

/*
 * This thread's state t stops being a writer: its epoch first, then the
 * events fast path's cache of it. Not the other way round: a signal
 * handler's event in between would take the general path, find the epoch
 * still valid, record, and cache the state again (until the epoch is
 * cleared the state is still a valid writer, so a handler's fast-path
 * event meanwhile is an ordinary one).
 */
static void rt_state_leave(struct rt_wtls *t)
{
	t->epoch = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	rt_forget_cached(t);
}

/* The buffers open in this process, for thread-exit handling. */
static struct {
	struct ringtrace_rb *rb;
	uint64_t epoch;
} rt_open[RINGTRACE_RB_MAX_OPEN];
static pthread_mutex_t rt_open_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t rt_epoch_next = 1;
static pthread_key_t rt_exit_key;

static void rt_thread_exit(void *arg);
static void rt_atfork_prepare(void);
static void rt_atfork_parent(void);
static void rt_atfork_child(void);

static void rt_process_exit(void);

/*
 * Who this process is, recorded in the slots it claims, so that a flush can
 * judge whether a slot's owner is gone (rt_owner_gone):
 *   rt_proc_cookie  a random number of this process (a forked child draws
 *                   its own): a slot with it belongs to one of our threads,
 *                   whatever the pid namespaces and /proc;
 *   rt_pidns        our pid namespace (inode of /proc/self/ns/pid, 0 if
 *                   /proc is not there): another process's pid means
 *                   something here only if its namespace is the same;
 *   rt_self_pid     getpid(), without the system call.
 * Set at start and in a forked child (which unshare(CLONE_NEWPID) may have
 * put in a new namespace).
 */
static uint64_t rt_proc_cookie, rt_pidns;
static uint32_t rt_self_pid;

static void rt_read_self(void)
{
	uint64_t c = 0;
	if (getrandom(&c, sizeof(c), GRND_NONBLOCK) != (ssize_t)sizeof(c))
		c = 0;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	c ^= ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
	     (uint64_t)(uintptr_t)&c;
	RT_STORE(&rt_proc_cookie, c | 1); /* never 0, which a fresh slot holds */
	struct stat st;
	RT_STORE(&rt_pidns, stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0);
	RT_STORE(&rt_self_pid, (uint32_t)getpid());
}

/*
 * A constructor, so the key gets a low index: pthread_setspecific() on a
 * low key never allocates, which keeps a thread's first event
 * async-signal-safe.
 */
__attribute__((constructor(101))) static void rt_global_init(void)
{
	rt_read_self();
	pthread_key_create(&rt_exit_key, rt_thread_exit);
	pthread_atfork(rt_atfork_prepare, rt_atfork_parent, rt_atfork_child);
	atexit(rt_process_exit);
}

static inline void rt_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

static int rt_membarrier(int cmd)
{
	return (int)syscall(__NR_membarrier, cmd, 0, 0);
}

/* ---- free list: tagged Treiber stack of page indices -------------------- */

static int rt_free_pop(struct ringtrace_rb *rb, uint32_t *out)
{
	struct rt_shm *shm = rb->shm;
	uint64_t head = RT_LOAD_ACQ(&shm->free_head);
	for (;;) {
		uint32_t top = (uint32_t)head; /* index + 1, 0 = empty */
		if (top == 0)
			return 0;
		uint32_t next = RT_LOAD(&rb->free_next[top - 1]);
		uint64_t nh = (((head >> 32) + 1) << 32) | next;
		if (__atomic_compare_exchange_n(&shm->free_head, &head, nh, 1, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			__atomic_fetch_sub(&shm->free_count, 1, __ATOMIC_RELAXED);
			*out = top - 1;
			return 1;
		}
	}
}

static void rt_free_push(struct ringtrace_rb *rb, uint32_t page)
{
	struct rt_shm *shm = rb->shm;
	uint64_t head = RT_LOAD(&shm->free_head);
	uint64_t nh;
	do {
		RT_STORE(&rb->free_next[page], (uint32_t)head);
		nh = (((head >> 32) + 1) << 32) | (uint64_t)(page + 1);
	} while (!__atomic_compare_exchange_n(&shm->free_head, &head, nh, 1, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
	__atomic_fetch_add(&shm->free_count, 1, __ATOMIC_RELAXED);
}

/* ---- FIFO of published pages ------------------------------------------- */

/*
 * Push a page. The FIFO has at least 4x as many cells as there are pages,
 * and a page is in it at most once, so a cell is only found busy if a
 * popper was descheduled inside its few-instruction window while the
 * whole pool was published three times over. A writer does not wait for
 * that: after a short spin it returns 0 and the caller counts the page's
 * events as overrun.
 */
/*
 * Claim the next FIFO position: the order of claims is the order readers
 * see. 1 and *out set, or 0 if the cell stayed busy.
 */
static int rt_fifo_claim(struct ringtrace_rb *rb, uint64_t *out)
{
	struct rt_shm *shm = rb->shm;
	uint64_t mask = shm->qcap - 1;
	uint64_t pos = RT_LOAD(&shm->enq_pos);
	unsigned spins = 0;
	for (;;) {
		struct rt_qcell *c = &rb->qcells[pos & mask];
		uint64_t seq = RT_LOAD_ACQ(&c->seq);
		int64_t dif = (int64_t)(seq - pos);
		if (dif == 0) {
			if (__atomic_compare_exchange_n(&shm->enq_pos, &pos, pos + 1, 1,
							__ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
				*out = pos;
				return 1;
			}
		} else if (dif < 0) {
			if (++spins > 1000)
				return 0;
			rt_cpu_relax();
			pos = RT_LOAD(&shm->enq_pos);
		} else {
			pos = RT_LOAD(&shm->enq_pos);
		}
	}
}

/* Fill a claimed position; RT_NO_PAGE makes a tombstone that pops skip. */
static void rt_fifo_fill(struct ringtrace_rb *rb, uint64_t pos, uint32_t page)
{
	struct rt_qcell *c = &rb->qcells[pos & (rb->shm->qcap - 1)];
	RT_STORE(&c->page, page);
	RT_STORE_REL(&c->seq, pos + 1);
}

static int rt_fifo_push(struct ringtrace_rb *rb, uint32_t page)
{
	uint64_t pos;
	if (!rt_fifo_claim(rb, &pos))
		return 0;
	rt_fifo_fill(rb, pos, page);
	return 1;
}

int rt_fifo_pop(struct ringtrace_rb *rb, uint32_t *page)
{
	struct rt_shm *shm = rb->shm;
	uint64_t mask = shm->qcap - 1;
	uint64_t pos = RT_LOAD(&shm->deq_pos);
	for (;;) {
		struct rt_qcell *c = &rb->qcells[pos & mask];
		uint64_t seq = RT_LOAD_ACQ(&c->seq);
		int64_t dif = (int64_t)(seq - (pos + 1));
		if (dif == 0) {
			if (__atomic_compare_exchange_n(&shm->deq_pos, &pos, pos + 1, 1,
							__ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
				uint32_t p = RT_LOAD(&c->page);
				RT_STORE_REL(&c->seq, pos + mask + 1);
				if (p == RT_NO_PAGE) { /* a flush's tombstone */
					pos = RT_LOAD(&shm->deq_pos);
					continue;
				}
				*page = p;
				return 1;
			}
		} else if (dif < 0) {
			return 0;
		} else {
			pos = RT_LOAD(&shm->deq_pos);
		}
	}
}

/* ---- accounting ---------------------------------------------------------- */

/* Add n to a tagged per-slot counter, or to `retired` if the stream is gone. */
static void rt_slot_add(struct ringtrace_rb *rb, uint32_t slot, uint64_t stream, int which,
			uint64_t n)
{
	struct rt_shm *shm = rb->shm;
	uint64_t *retired = which ? &shm->retired_read : &shm->retired_overrun;
	if (n == 0)
		return;
	if (slot >= shm->max_writers) {
		__atomic_fetch_add(retired, n, __ATOMIC_RELAXED);
		return;
	}
	struct rt_slot *s = &rb->slots[slot];
	uint64_t *ctr = which ? &s->read : &s->overrun;
	uint64_t tag = RT_TAG(stream);
	uint64_t v = RT_LOAD(ctr);
	for (;;) {
		if ((v & ~RT_COUNT_MASK) != tag) {
			__atomic_fetch_add(retired, n, __ATOMIC_RELAXED);
			return;
		}
		if (__atomic_compare_exchange_n(ctr, &v, v + n, 1, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			return;
	}
}

/* A consumer took a page: its events are read. */
RT_HIDDEN void rt_account_read(struct ringtrace_rb *rb, const struct ringtrace_page_header *h);
void rt_account_read(struct ringtrace_rb *rb, const struct ringtrace_page_header *h)
{
	rt_slot_add(rb, h->writer, h->stream_instance_id, 1, h->events);
}

static void rt_account_overrun(struct ringtrace_rb *rb, const struct ringtrace_page_header *h)
{
	rt_slot_add(rb, h->writer, h->stream_instance_id, 0, h->events);
}

/* ---- pages ---------------------------------------------------------------- */

/*
 * Fill in the fields of a page that are final once it is published, from
 * its committed content (used by flush for a page taken from a writer).
 */
void rt_page_finalize(struct ringtrace_rb *rb, struct ringtrace_page_header *h, uint32_t commit,
		      uint32_t flags)
{
	struct ringtrace_page_cursor c;
	struct ringtrace_event ev;
	uint32_t n = 0;
	uint64_t last = h->timestamp_begin;
	h->content_size = (uint64_t)commit * 8;
	ringtrace_page_cursor_init(&c, h);
	c.end = commit;
	while (ringtrace_page_next(&c, &ev) == 1) {
		n++;
		last = ev.ts;
	}
	(void)rb;
	h->events = n;
	h->timestamp_end = last;
	h->flags |= flags;
}

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
 * Events committed in the thread's current page: the slot's hit counter
 * now, less what it was when the page was opened (events_before). The
 * write path counts an event once, in hit.
 */
static uint32_t rt_page_events(const struct rt_wtls *t, const struct rt_slot *s)
{
	const struct ringtrace_page_header *h = (const struct ringtrace_page_header *)t->page;
	return (uint32_t)(RT_LOAD(&s->hit) - h->events_before);
}

static void rt_publish(struct ringtrace_rb *rb, struct rt_wtls *t, struct rt_slot *s,
		       uint32_t flags)
{
	struct ringtrace_page_header *h = (struct ringtrace_page_header *)t->page;
	uint32_t idx = rt_page_index(rb, h);
	h->timestamp_end = t->last_ts;
	h->content_size = (uint64_t)h->commit * 8;
	h->events = rt_page_events(t, s);
	h->flags |= flags;
	RT_STORE(&s->cur_page, RT_NO_PAGE);
	t->page = NULL;
	t->limit = 0;
	if (rt_fifo_push(rb, idx)) {
		__atomic_fetch_add(&rb->shm->pages_published, 1, __ATOMIC_RELAXED);
	} else {
		rt_account_overrun(rb, h);
		rt_free_push(rb, idx);
	}
}

static int rt_take_page(struct ringtrace_rb *rb, struct rt_wtls *t, struct rt_slot *s,
			uint64_t ts)
{
	uint32_t idx;
	if (!rt_free_pop(rb, &idx)) {
		if (rb->shm->mode != RINGTRACE_RB_OVERWRITE || !rt_fifo_pop(rb, &idx))
			return -1;
		rt_account_overrun(rb, rt_page(rb, idx));
	}
	struct ringtrace_page_header *h = rt_page(rb, idx);
	rt_gen_begin(rb, idx);
	h->magic = RINGTRACE_PAGE_MAGIC;
	h->stream_id = 0;
	h->stream_instance_id = s->stream;
	h->timestamp_begin = ts;
	h->timestamp_end = ts;
	h->content_size = (uint64_t)RINGTRACE_PAGE_HEADER_SIZE * 8;
	h->packet_size = (uint64_t)rb->page_size * 8;
	h->packet_seq_num = t->seq++;
	h->events_discarded = RT_LOAD(&s->missed);
	h->events_before = RT_LOAD(&s->hit);
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
	t->limit = rb->page_size;
	t->last_ts = ts;
	RT_STORE(&s->pages, RT_LOAD(&s->pages) + 1);
	RT_STORE(&s->page_ts, ts);
	RT_STORE_REL(&s->cur_page, idx);
	return 0;
}

/* Answer a flush request (called inside a write, nest != 0). */
static void rt_answer_steal(struct ringtrace_rb *rb, struct rt_wtls *t, struct rt_slot *s,
			    uint32_t st)
{
	while (RT_STEAL_IS_ASKED(st)) {
		if (__atomic_compare_exchange_n(&s->steal, &st, RT_STEAL_NONE, 0,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			if (t->page && rt_page_events(t, s)) {
				rt_publish(rb, t, s, RINGTRACE_PAGE_F_FLUSHED);
				__atomic_fetch_add(&rb->shm->pages_flushed, 1, __ATOMIC_RELAXED);
			}
			return;
		}
		/* st now holds the current value: the reader took the page, or
		 * another flush took the request over (then try again). */
	}
	if (st == RT_STEAL_TAKEN) {
		t->page = NULL;
		t->limit = 0;
		RT_STORE(&s->cur_page, RT_NO_PAGE);
		RT_STORE_REL(&s->steal, RT_STEAL_NONE);
	}
}

static inline void rt_count_missed(struct rt_slot *s)
{
	__atomic_fetch_add(&s->missed, 1, __ATOMIC_RELAXED);
}

/* Drop an event (counted) and leave the write. */
static void *rt_drop(struct rt_wtls *t, struct rt_slot *s, uint32_t nest, int reason)
{
	t->drop_reason = reason;
	rt_count_missed(s);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	RT_STORE_REL(&s->nest, nest);
	return NULL;
}

/* The slow path of reserve: entered with s->nest already raised. */
static void *__attribute__((noinline, cold))
rt_reserve_slow(struct ringtrace_rb *rb, uint32_t nest, uint32_t id, size_t len, uint64_t ts)
{
	struct rt_wtls *t = &rt_tls[rb->idx];
	struct rt_slot *s = t->slot;
	if (nest != 0)
		return rt_drop(t, s, nest, RINGTRACE_ENESTED); /* nested in a signal handler */
	if (id > RINGTRACE_EV_MAX_ID)
		return rt_drop(t, s, 0, RINGTRACE_EINVAL);
	if (len > rb->max_payload)
		return rt_drop(t, s, 0, RINGTRACE_E2BIG);
	uint32_t st = RT_LOAD_ACQ(&s->steal);
	if (st != RT_STEAL_NONE)
		rt_answer_steal(rb, t, s, st);
	if (ts < t->last_ts)
		ts = t->last_ts; /* keep each stream monotonic */
	int ext = t->page && ts - t->last_ts > 0xFFFFFFFFull;
	uint32_t start = t->off;
	uint32_t end = start + (ext ? RINGTRACE_EV_EXT_HEADER_SIZE : RINGTRACE_EV_HEADER_SIZE) +
		       (uint32_t)len;
	if (!t->page || end > t->limit) {
		if (t->page)
			rt_publish(rb, t, s, 0);
		if (rt_take_page(rb, t, s, ts) < 0)
			return rt_drop(t, s, 0, RINGTRACE_ENOSPC);
		ext = 0;
		start = t->off;
		end = start + RINGTRACE_EV_HEADER_SIZE + (uint32_t)len;
	}
	uint64_t *h = (uint64_t *)(t->page + start);
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
	t->last_ts = ts;
	return h;
}

static void *rt_reserve_attach(struct ringtrace_rb *rb, uint32_t id, size_t len);

/*
 * Everything the fast path does not handle inline: a thread's first event
 * (attach) and the CLOCK_MONOTONIC fallback clock. Kept out of line, and
 * reached by tail calls only, so that the fast path saves no registers.
 */
static void *__attribute__((noinline, cold)) rt_reserve_generic(struct ringtrace_rb *rb, uint32_t id,
							       size_t len)
{
	struct rt_wtls *t = &rt_tls[rb->idx];
	if (t->epoch != rb->epoch)
		return rt_reserve_attach(rb, id, len);
	struct rt_slot *s = t->slot;
	uint32_t nest = RT_LOAD(&s->nest);
	RT_STORE(&s->nest, nest + 1);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return rt_reserve_slow(rb, nest, id, len, rt_ticks(rb->is_tsc));
}

static inline __attribute__((always_inline)) void *rt_reserve_inline(ringtrace_rb *rb, uint32_t id,
								      size_t len)
{
	struct rt_wtls *t = &rt_tls[rb->idx];
	if (rt_unlikely(t->epoch != rb->epoch || !rb->is_tsc))
		return rt_reserve_generic(rb, id, len);
	struct rt_slot *s = t->slot;
	uint32_t nest = RT_LOAD(&s->nest);
	RT_STORE(&s->nest, nest + 1);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	uint64_t ts = rt_hw_ticks();
	/* Events start 8-aligned, at `off`. */
	uint32_t start = t->off;
	uint32_t end = start + RINGTRACE_EV_HEADER_SIZE + (uint32_t)len;
	/* One unlikely branch covers every rare case; ts < last_ts wraps huge. */
	if (rt_unlikely((nest | RT_LOAD(&s->steal)) != 0 || len > rb->max_payload ||
			id > RINGTRACE_EV_MAX_ID || end > t->limit ||
			ts - t->last_ts > 0xFFFFFFFFull))
		return rt_reserve_slow(rb, nest, id, len, ts);
	uint64_t *h = (uint64_t *)(t->page + start);
	*h = RINGTRACE_EV_WORD(ts, id, len);
	t->res_end = end;
	t->last_ts = ts;
	return h + 1;
}

static inline __attribute__((always_inline)) void rt_commit_inline(ringtrace_rb *rb)
{
	struct rt_wtls *t = &rt_tls[rb->idx];
	struct rt_slot *s = t->slot;
	struct ringtrace_page_header *h = (struct ringtrace_page_header *)t->page;
	t->off = (t->res_end + (RINGTRACE_EV_ALIGN - 1)) & ~(RINGTRACE_EV_ALIGN - 1);
	RT_STORE_REL(&h->commit, t->res_end);
	ringtrace_inc_own_(&s->hit);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	RT_STORE_REL(&s->nest, 0);
}

void *ringtrace_rb_reserve(ringtrace_rb *rb, uint32_t id, size_t len)
{
	return rt_reserve_inline(rb, id, len); /* the slow paths are tail calls */
}

void ringtrace_rb_commit(ringtrace_rb *rb)
{
	rt_commit_inline(rb);
}

int ringtrace_rb_write(ringtrace_rb *rb, uint32_t id, const void *data, size_t len)
{
	/*
	 * A signal handler may write (and fail) between our reserve and our
	 * reading of drop_reason: each call restores what it found, so the
	 * handler leaves the interrupted call's reason intact.
	 */
	int *reason = &rt_tls[rb->idx].drop_reason;
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

size_t ringtrace_rb_max_payload(const ringtrace_rb *rb)
{
	return rb->max_payload;
}

/* ---- writer slots: attach, release ------------------------------------- */

static pid_t rt_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static void *__attribute__((noinline, cold)) rt_reserve_attach(struct ringtrace_rb *rb, uint32_t id,
							      size_t len)
{
	struct rt_wtls *t = &rt_tls[rb->idx];
	struct rt_shm *shm = rb->shm;
	/*
	 * No writer yet: a reader-only handle, a signal handler interrupting
	 * this thread's own attach, or no free slot (retried every 1024 events
	 * rather than scanning the slots on every dropped event).
	 */
	if (!rb->owner) {
		__atomic_fetch_add(&shm->missed_noslot, 1, __ATOMIC_RELAXED);
		t->drop_reason = RINGTRACE_EINVAL;
		return NULL;
	}
	/*
	 * Test and set in one instruction (an exchange): a signal handler's
	 * event that lands between a separate test and set would attach
	 * this thread itself, and the interrupted attach would then claim a
	 * second slot over it, leaking the first with its page, or leave
	 * the handler's next event a valid epoch with half-reset state.
	 */
	if (__atomic_exchange_n(&t->attaching, 1, __ATOMIC_RELAXED)) {
		__atomic_fetch_add(&shm->missed_noslot, 1, __ATOMIC_RELAXED);
		t->drop_reason = RINGTRACE_ENESTED;
		return NULL;
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (t->epoch == rb->epoch) {
		/* A signal handler attached this thread before the exchange. */
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		t->attaching = 0;
		return ringtrace_rb_reserve(rb, id, len);
	}
	/* (a count left from another buffer that had this index is not this one's) */
	if (t->noslot_skip && t->noslot_epoch == (uint32_t)rb->epoch && t->noslot_skip-- > 0) {
		__atomic_fetch_add(&shm->missed_noslot, 1, __ATOMIC_RELAXED);
		t->drop_reason = RINGTRACE_ENOSPC;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		t->attaching = 0;
		return NULL;
	}
	struct rt_slot *s = NULL;
	uint32_t w = 0;
	uint32_t start = (uint32_t)rt_gettid() % shm->max_writers;
	for (uint32_t k = 0; k < shm->max_writers; k++) {
		struct rt_slot *c = &rb->slots[(start + k) % shm->max_writers];
		w = RT_LOAD(&c->state);
		if (RT_SLOT_STATE(w) == RT_SLOT_FREE &&
		    __atomic_compare_exchange_n(&c->state, &w, RT_SLOT_NEXT(w, RT_SLOT_CLAIMING), 0,
						__ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			s = c;
			w = RT_SLOT_NEXT(w, RT_SLOT_CLAIMING);
			break;
		}
	}
	if (!s) {
		t->drop_reason = RINGTRACE_ENOSPC;
		t->noslot_skip = 1024;
		t->noslot_epoch = (uint32_t)rb->epoch;
		__atomic_fetch_add(&shm->missed_noslot, 1, __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		t->attaching = 0;
		return NULL;
	}
	uint64_t stream = __atomic_fetch_add(&shm->next_stream, 1, __ATOMIC_RELAXED);
	RT_STORE(&s->nest, 0);
	RT_STORE(&s->steal, RT_STEAL_NONE);
	RT_STORE(&s->cur_page, RT_NO_PAGE);
	RT_STORE(&s->hit, 0);
	RT_STORE(&s->missed, 0);
	RT_STORE(&s->pages, 0);
	RT_STORE(&s->page_ts, 0);
	RT_STORE(&s->stream, stream);
	RT_STORE(&s->tid, (uint32_t)rt_gettid());
	RT_STORE(&s->pid, (uint32_t)getpid());
	RT_STORE(&s->pidns, RT_LOAD(&rt_pidns));
	RT_STORE(&s->owner_cookie, RT_LOAD(&rt_proc_cookie));
	uint64_t cm[2] = {0, 0};
	prctl(PR_GET_NAME, (unsigned long)cm, 0, 0, 0);
	((char *)cm)[15] = 0;
	RT_STORE(&s->comm[0], cm[0]);
	RT_STORE(&s->comm[1], cm[1]);
	RT_STORE(&s->overrun, RT_TAG(stream));
	RT_STORE_REL(&s->read, RT_TAG(stream));
	/*
	 * Only now ACTIVE: a flush that reads this word reads this thread's
	 * pid and tid, not those of the slot's previous owner, which may be
	 * gone (it would take the slot from under us). A process killed
	 * before this store leaves the slot CLAIMING for good: one slot fewer,
	 * no event lost (it holds no page yet).
	 */
	RT_STORE_REL(&s->state, RT_SLOT_NEXT(w, RT_SLOT_ACTIVE));
	t->slot_w = RT_SLOT_NEXT(w, RT_SLOT_ACTIVE);
	t->slot = s;
	t->page = NULL;
	t->off = 0;
	t->limit = 0;
	t->last_ts = 0;
	t->seq = 0;
	t->noslot_skip = 0;
	pthread_setspecific(rt_exit_key, (void *)1);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->epoch = rb->epoch;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->attaching = 0;
	return ringtrace_rb_reserve(rb, id, len);
}

/*
 * Move a slot's counters into the buffer's retired totals (its writer is
 * leaving: retire, or reclaim of an owner that is gone). Exchanges: a
 * process killed in between must not have a later reclaim fold the same
 * counts again.
 */
static void rt_slot_fold(struct rt_shm *shm, struct rt_slot *s)
{
	__atomic_fetch_add(&shm->retired_hit, __atomic_exchange_n(&s->hit, 0, __ATOMIC_RELAXED),
			   __ATOMIC_RELAXED);
	__atomic_fetch_add(&shm->retired_missed, __atomic_exchange_n(&s->missed, 0, __ATOMIC_RELAXED),
			   __ATOMIC_RELAXED);
	uint64_t ov = __atomic_exchange_n(&s->overrun, 0, __ATOMIC_ACQ_REL);
	uint64_t rd = __atomic_exchange_n(&s->read, 0, __ATOMIC_ACQ_REL);
	__atomic_fetch_add(&shm->retired_overrun, ov & RT_COUNT_MASK, __ATOMIC_RELAXED);
	__atomic_fetch_add(&shm->retired_read, rd & RT_COUNT_MASK, __ATOMIC_RELAXED);
}

/* Publish the thread's page and give its slot back. */
static void rt_writer_retire(struct ringtrace_rb *rb, struct rt_wtls *t)
{
	struct rt_slot *s = t->slot;
	/*
	 * From here a signal handler's event on this thread goes to the attach
	 * path, finds `attaching` and is counted in missed_noslot: it never
	 * touches a slot that is being folded or that another thread may
	 * already have claimed.
	 */
	t->attaching = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	rt_state_leave(t);
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
	if (!__atomic_compare_exchange_n(&s->state, &w, wr, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
		t->page = NULL;
		t->slot = NULL;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		t->attaching = 0;
		return;
	}
	RT_STORE(&s->nest, 1);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	/* Make sure a flush that already asked sees us inside a write. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	uint32_t st = RT_LOAD_ACQ(&s->steal);
	if (st != RT_STEAL_NONE)
		rt_answer_steal(rb, t, s, st);
	if (t->page) {
		if (rt_page_events(t, s)) {
			rt_publish(rb, t, s, RINGTRACE_PAGE_F_LAST);
		} else {
			uint32_t idx = rt_page_index(rb, t->page);
			RT_STORE(&s->cur_page, RT_NO_PAGE);
			t->page = NULL;
			rt_free_push(rb, idx);
		}
	}
	rt_slot_fold(rb->shm, s);
	/* (release: a flush that reads them reads cur_page as left above) */
	RT_STORE_REL(&s->steal, RT_STEAL_NONE);
	RT_STORE_REL(&s->nest, 0);
	/* (a compare-and-swap: if the slot was taken from us meanwhile, it
	 * is not ours to free) */
	__atomic_compare_exchange_n(&s->state, &wr, RT_SLOT_NEXT(wr, RT_SLOT_FREE), 0,
				    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	t->slot = NULL;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->attaching = 0;
}

void ringtrace_rb_writer_release(ringtrace_rb *rb)
{
	struct rt_wtls *t = &rt_tls[rb->idx];
	if (t->epoch == rb->epoch && rb->owner)
		rt_writer_retire(rb, t);
}

static void rt_thread_exit(void *arg)
{
	(void)arg;
	/*
	 * A child of _Fork() or vfork() (no atfork handler ran) has a copy of
	 * its parent's thread state: its writers are the parent's, which its
	 * exit must not retire.
	 */
	if ((uint32_t)getpid() != RT_LOAD(&rt_self_pid))
		return;
	pthread_mutex_lock(&rt_open_lock);
	for (unsigned i = 0; i < RINGTRACE_RB_MAX_OPEN; i++) {
		struct rt_wtls *t = &rt_tls[i];
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
 * and the events fast path's cache of it (rt_atfork_child): a handler's
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
	/* Signals are blocked (rt_atfork_prepare): nothing writes in between. */
	rt_read_self();
	ringtrace_thr_.cookie = RINGTRACE_THR_NO_COOKIE_;
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

/* ---- thread names ---------------------------------------------------------- */

/*
 * A writer reads its thread's name once, when it attaches; every page
 * header carries a copy. A thread renamed later (pthread_setname_np) is
 * caught up by readers: ringtrace_rb_get_page() calls this with every
 * periodic flush, and it reads /proc on the reader's time, so the write
 * path never makes the system call. Works from another process too.
 */
int ringtrace_rb_refresh_comm(ringtrace_rb *rb)
{
	int n = 0;
	for (uint32_t i = 0; i < rb->shm->max_writers; i++) {
		struct rt_slot *s = &rb->slots[i];
		if (RT_SLOT_STATE(RT_LOAD_ACQ(&s->state)) != RT_SLOT_ACTIVE)
			continue;
		uint64_t stream = RT_LOAD_ACQ(&s->stream);
		char path[80];
		snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", RT_LOAD(&s->pid),
			 RT_LOAD(&s->tid));
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		uint64_t cm[2] = {0, 0};
		ssize_t r = read(fd, cm, 15);
		close(fd);
		if (r <= 0)
			continue;
		char *c = (char *)cm;
		if (c[r - 1] == '\n')
			c[r - 1] = 0;
		/* The slot may have changed hands meanwhile (torn names are possible
		 * but harmless: the next refresh repairs them). */
		if (RT_LOAD_ACQ(&s->stream) != stream ||
		    RT_SLOT_STATE(RT_LOAD(&s->state)) != RT_SLOT_ACTIVE)
			continue;
		if (RT_LOAD(&s->comm[0]) != cm[0] || RT_LOAD(&s->comm[1]) != cm[1]) {
			RT_STORE(&s->comm[0], cm[0]);
			RT_STORE(&s->comm[1], cm[1]);
		}
		n++;
	}
	return n;
}

/* ---- flush ---------------------------------------------------------------- */

/*
 * Publish a page taken from a writer at FIFO position pos (claimed), or
 * free it if it holds no event. The commit offset comes from shared
 * memory: it is clamped, and the decoder checks every event under it.
 */
static int rt_flush_page(struct ringtrace_rb *rb, uint32_t p, uint64_t pos, uint32_t flags)
{
	struct ringtrace_page_header *h = rt_page(rb, p);
	uint32_t commit = RT_LOAD_ACQ(&h->commit);
	if (commit > rb->page_size)
		commit = rb->page_size;
	if (commit <= RINGTRACE_PAGE_HEADER_SIZE) {
		rt_fifo_fill(rb, pos, RT_NO_PAGE);
		rt_free_push(rb, p);
		return 0;
	}
	rt_page_finalize(rb, h, commit, flags);
	rt_fifo_fill(rb, pos, p);
	__atomic_fetch_add(&rb->shm->pages_published, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&rb->shm->pages_flushed, 1, __ATOMIC_RELAXED);
	return 1;
}

/*
 * 1 if the owner of a slot, as read from it, no longer exists: a thread of
 * this process that ended without retiring its writer (it attached after
 * its last round of thread-key destructors, from a signal handler or from
 * another key's destructor): tgkill 0; or another process that crashed or
 * _exited: kill 0, judged only in our own pid namespace (elsewhere its
 * numbers mean other processes), and never when the namespace is unknown.
 * A number reused by a new process or thread keeps the slot longer, never
 * takes it from a live owner; an owner we may not signal (EPERM) counts as
 * alive.
 */
static int rt_owner_gone(uint64_t cookie, uint64_t pidns, uint32_t pid, uint32_t tid)
{
	if (cookie == RT_LOAD(&rt_proc_cookie))
		return syscall(SYS_tgkill, (pid_t)RT_LOAD(&rt_self_pid), (pid_t)tid, 0) < 0 &&
		       errno == ESRCH;
	if (pidns == 0 || pidns != RT_LOAD(&rt_pidns))
		return 0;
	if (pid == RT_LOAD(&rt_self_pid))
		return 1; /* another process had our pid: it is gone */
	return kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

/*
 * A slot whose owner is gone (rt_owner_gone, judged from the state word w
 * and the fields read after it): publish its committed events and free the
 * slot. An event it was in the middle of is not committed and is not
 * published.
 */
static int rt_reclaim_dead(struct ringtrace_rb *rb, struct rt_slot *s, uint32_t w)
{
	struct rt_shm *shm = rb->shm;
	/*
	 * Take the slot away from other flushers, and only if it is still the
	 * owner that was judged: a slot that changed hands since has another
	 * stamp (see RT_SLOT_NEXT).
	 */
	uint32_t wr = RT_SLOT_NEXT(w, RT_SLOT_RECLAIMING);
	if (!__atomic_compare_exchange_n(&s->state, &w, wr, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return 0;
	int n = 0;
	uint32_t p = RT_LOAD_ACQ(&s->cur_page);
	/*
	 * The page is ours only if it was not taken by a flush that asked the
	 * writer for it before the writer died (TAKEN), and if such a flush,
	 * now in its second loop, does not take it first: win it the way it
	 * does (it then leaves a tombstone).
	 */
	uint32_t st = RT_LOAD_ACQ(&s->steal);
	while (st != RT_STEAL_TAKEN &&
	       !__atomic_compare_exchange_n(&s->steal, &st, RT_STEAL_TAKEN, 0, __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE))
		;
	if (p < shm->npages && st != RT_STEAL_TAKEN) {
		uint64_t pos;
		if (rt_fifo_claim(rb, &pos))
			n = rt_flush_page(rb, p, pos, RINGTRACE_PAGE_F_LAST);
		else
			rt_free_push(rb, p);
	}
	rt_slot_fold(shm, s);
	RT_STORE(&s->cur_page, RT_NO_PAGE);
	/* (release: a flush that reads them reads cur_page as left above) */
	RT_STORE_REL(&s->steal, RT_STEAL_NONE);
	RT_STORE_REL(&s->nest, 0);
	RT_STORE_REL(&s->state, RT_SLOT_NEXT(wr, RT_SLOT_FREE));
	return n;
}

int ringtrace_rb_flush(ringtrace_rb *rb, uint32_t min_age_ms)
{
	struct rt_shm *shm = rb->shm;
	uint64_t now = rt_ticks(rb->is_tsc);
	uint64_t age = (uint64_t)min_age_ms * (rb->clock.freq / 1000);
	uint32_t nasked = 0, nflushed = 0;
	uint32_t *asked = malloc(sizeof(uint32_t) * shm->max_writers);
	if (!asked)
		return rt_error(RINGTRACE_ENOMEM, "flush: out of memory");
	uint32_t ask = RT_STEAL_ASKED_BY(__atomic_add_fetch(&shm->flush_seq, 1, __ATOMIC_RELAXED));
	RT_STORE(&shm->last_flush_ticks, now);

	for (uint32_t i = 0; i < shm->max_writers; i++) {
		struct rt_slot *s = &rb->slots[i];
		uint32_t w = RT_LOAD_ACQ(&s->state);
		if (RT_SLOT_STATE(w) != RT_SLOT_ACTIVE)
			continue;
		/* (the owner fields of w, unless the slot changes hands meanwhile:
		 * then the reclaim's exchange from w fails, see RT_SLOT_NEXT) */
		if (rt_owner_gone(RT_LOAD(&s->owner_cookie), RT_LOAD(&s->pidns), RT_LOAD(&s->pid),
				  RT_LOAD(&s->tid))) {
			nflushed += rt_reclaim_dead(rb, s, w);
			continue;
		}
		uint32_t st = RT_LOAD_ACQ(&s->steal);
		uint32_t p = RT_LOAD_ACQ(&s->cur_page);
		if (st == RT_STEAL_TAKEN || p >= shm->npages)
			continue;
		if (RT_LOAD_ACQ(&rt_page(rb, p)->commit) <= RINGTRACE_PAGE_HEADER_SIZE)
			continue;
		uint64_t pts = RT_LOAD(&s->page_ts);
		if (now > pts && now - pts < age)
			continue;
		/* (a request still pending from another flush is taken over) */
		if (!__atomic_compare_exchange_n(&s->steal, &st, ask, 0, __ATOMIC_SEQ_CST,
						 __ATOMIC_RELAXED))
			continue;
		asked[nasked++] = i;
	}
	if (nasked == 0 || rb->mb_cmd == 0 || rt_membarrier(rb->mb_cmd) != 0) {
		/* Without membarrier the writers answer at their next event. (The
		 * pages of writers that were gone are published already.) */
		free(asked);
		return (int)nflushed;
	}
	for (uint32_t k = 0; k < nasked; k++) {
		struct rt_slot *s = &rb->slots[asked[k]];
		uint32_t spins = 0;
		while (RT_LOAD_ACQ(&s->nest) != 0 && spins < 2000) {
			if (++spins > 100)
				sched_yield();
			else
				rt_cpu_relax();
		}
		if (RT_LOAD_ACQ(&s->nest) != 0)
			continue; /* busy in a write: it will publish at its next event */
		uint32_t p = RT_LOAD_ACQ(&s->cur_page);
		uint32_t st = ask;
		if (p >= shm->npages) {
			__atomic_compare_exchange_n(&s->steal, &st, RT_STEAL_NONE, 0, __ATOMIC_ACQ_REL,
						    __ATOMIC_RELAXED);
			continue;
		}
		/*
		 * Claim the FIFO position before taking the page: once the writer
		 * sees TAKEN it may publish its next page, which must come after
		 * this one.
		 */
		uint64_t pos;
		if (!rt_fifo_claim(rb, &pos))
			continue;
		/*
		 * Only while our request is there: not if the writer answered it
		 * (and may have a new page since, or have left the slot to
		 * another thread), a reclaim took the page, or another flush
		 * took the request over.
		 */
		if (!__atomic_compare_exchange_n(&s->steal, &st, RT_STEAL_TAKEN, 0, __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE)) {
			rt_fifo_fill(rb, pos, RT_NO_PAGE);
			continue;
		}
		/* A snapshot must not read this page as the writer's any more. */
		uint32_t exp = p;
		__atomic_compare_exchange_n(&s->cur_page, &exp, RT_NO_PAGE, 0, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED);
		if (rt_flush_page(rb, p, pos, RINGTRACE_PAGE_F_FLUSHED))
			nflushed++;
	}
	free(asked);
	return (int)nflushed;
}

/* ---- consuming by page --------------------------------------------------- */

const struct ringtrace_page_header *ringtrace_rb_get_page(ringtrace_rb *rb)
{
	uint32_t idx;
	if (!rt_fifo_pop(rb, &idx)) {
		uint64_t now = rt_ticks(rb->is_tsc);
		uint64_t last = RT_LOAD(&rb->shm->last_flush_ticks);
		uint64_t iv = (uint64_t)rb->shm->flush_ms * (rb->clock.freq / 1000);
		if (now - last < iv)
			return NULL;
		ringtrace_rb_refresh_comm(rb);
		if (ringtrace_rb_flush(rb, rb->shm->flush_ms) <= 0 || !rt_fifo_pop(rb, &idx))
			return NULL;
	}
	struct ringtrace_page_header *h = rt_page(rb, idx);
	rt_account_read(rb, h);
	return h;
}

uint32_t ringtrace_rb_orphan_pages(const ringtrace_rb *rb, uint32_t *out, uint32_t max)
{
	const struct rt_shm *shm = rb->shm;
	uint32_t np = shm->npages, n = 0;
	uint8_t *seen = calloc(np, 1);
	if (!seen)
		return 0;
	/* the free list (bounded: a damaged link cannot loop forever) */
	uint32_t top = (uint32_t)RT_LOAD(&shm->free_head);
	for (uint32_t steps = 0; top != 0 && top <= np && steps < np; steps++) {
		seen[top - 1] = 1;
		top = RT_LOAD(&rb->free_next[top - 1]);
	}
	/* queued pages: the filled cells between the read and write positions */
	uint64_t mask = shm->qcap - 1, deq = RT_LOAD(&shm->deq_pos), enq = RT_LOAD(&shm->enq_pos);
	for (uint64_t pos = deq; pos < enq && pos - deq <= mask; pos++) {
		const struct rt_qcell *c = &rb->qcells[pos & mask];
		if (RT_LOAD(&c->seq) == pos + 1 && RT_LOAD(&c->page) < np)
			seen[RT_LOAD(&c->page)] = 1;
	}
	/* writers' pages, unless a flusher had taken one away (then it is
	 * either queued, seen above, or in nobody's hands) */
	for (uint32_t i = 0; i < shm->max_writers; i++) {
		const struct rt_slot *s = &rb->slots[i];
		uint32_t p = RT_LOAD(&s->cur_page);
		if (RT_SLOT_STATE(RT_LOAD(&s->state)) == RT_SLOT_ACTIVE && p < np &&
		    RT_LOAD(&s->steal) != RT_STEAL_TAKEN)
			seen[p] = 1;
	}
	for (uint32_t i = 0; i < np; i++) {
		if (seen[i])
			continue;
		if (n < max)
			out[n] = i;
		n++;
	}
	free(seen);
	return n;
}

const struct ringtrace_page_header *ringtrace_rb_page_at(const ringtrace_rb *rb, uint32_t index)
{
	return index < rb->shm->npages ? rt_page(rb, index) : NULL;
}

/*
 * Give a page back. Its cache lines are first evicted from every cache
 * (clflush): a reader that walked the page holds them, and the writer that
 * reuses the page would otherwise pay a cross-core invalidation for each
 * line it writes, where an evicted line streams in from memory with the
 * prefetchers' help. Measured with ringtrace-bench rb: an aggressive page
 * reader made each write 1.5x dearer without this, about 1.0x with it.
 * The reader, which has time to spare, pays instead.
 */
void ringtrace_rb_put_page(ringtrace_rb *rb, const struct ringtrace_page_header *page)
{
#if defined(__x86_64__) || defined(__i386__)
	size_t used = (size_t)(page->content_size / 8);
	if (used > rb->page_size)
		used = rb->page_size;
	for (size_t off = 0; off < used; off += RT_CACHELINE)
		__builtin_ia32_clflush((const char *)page + off);
#endif
	rt_free_push(rb, rt_page_index(rb, page));
}

/* ---- accounting queries --------------------------------------------------- */

int ringtrace_rb_get_stats(const ringtrace_rb *rb, struct ringtrace_rb_stats *st)
{
	if (!rb || !st)
		return rt_error(RINGTRACE_EINVAL, "stats: NULL argument");
	const struct rt_shm *shm = rb->shm;
	memset(st, 0, sizeof(*st));
	for (uint32_t i = 0; i < shm->max_writers; i++) {
		const struct rt_slot *s = &rb->slots[i];
		if (RT_SLOT_STATE(RT_LOAD_ACQ(&s->state)) != RT_SLOT_ACTIVE)
			continue;
		st->writers_active++;
		st->hit += RT_LOAD(&s->hit);
		st->missed += RT_LOAD(&s->missed);
		st->overrun += RT_LOAD(&s->overrun) & RT_COUNT_MASK;
		st->read += RT_LOAD(&s->read) & RT_COUNT_MASK;
	}
	st->hit += RT_LOAD(&shm->retired_hit);
	st->missed += RT_LOAD(&shm->retired_missed) + RT_LOAD(&shm->missed_noslot);
	st->overrun += RT_LOAD(&shm->retired_overrun);
	st->read += RT_LOAD(&shm->retired_read);
	uint64_t gone = st->read + st->overrun;
	st->entries = st->hit > gone ? st->hit - gone : 0;
	st->pages_published = RT_LOAD(&shm->pages_published);
	st->pages_flushed = RT_LOAD(&shm->pages_flushed);
	st->pages_free = RT_LOAD(&shm->free_count);
	return 0;
}

int ringtrace_rb_get_writer_stats(const ringtrace_rb *rb, struct ringtrace_rb_writer_stats *out,
			      uint32_t max)
{
	if (!rb || (!out && max))
		return rt_error(RINGTRACE_EINVAL, "writer_stats: NULL argument");
	uint32_t n = 0;
	for (uint32_t i = 0; i < rb->shm->max_writers; i++) {
		const struct rt_slot *s = &rb->slots[i];
		if (RT_SLOT_STATE(RT_LOAD_ACQ(&s->state)) != RT_SLOT_ACTIVE)
			continue;
		if (n < max) {
			struct ringtrace_rb_writer_stats *w = &out[n];
			w->slot = i;
			w->tid = RT_LOAD(&s->tid);
			w->stream = RT_LOAD(&s->stream);
			w->hit = RT_LOAD(&s->hit);
			w->missed = RT_LOAD(&s->missed);
			w->overrun = RT_LOAD(&s->overrun) & RT_COUNT_MASK;
			w->read = RT_LOAD(&s->read) & RT_COUNT_MASK;
			w->pages = RT_LOAD(&s->pages);
			uint64_t gone = w->read + w->overrun;
			w->entries = w->hit > gone ? w->hit - gone : 0;
		}
		n++;
	}
	return (int)n;
}

/* ---- creation, attach, destroy ------------------------------------------ */

void ringtrace_rb_config_init(struct ringtrace_rb_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->page_size = RINGTRACE_RB_DEFAULT_PAGE_SIZE;
	cfg->pool_size = RINGTRACE_RB_DEFAULT_POOL_SIZE;
	cfg->max_writers = RINGTRACE_RB_DEFAULT_MAX_WRITERS;
	cfg->mode = RINGTRACE_RB_DISCARD;
	cfg->flush_interval_ms = RINGTRACE_RB_DEFAULT_FLUSH_MS;
	cfg->shm_name = NULL;
}

static int rt_check_config(const struct ringtrace_rb_config *c)
{
	size_t ps = c->page_size;
	if (ps < RINGTRACE_RB_MIN_PAGE_SIZE || ps > RINGTRACE_RB_MAX_PAGE_SIZE || (ps & (ps - 1)))
		return rt_error(RINGTRACE_EINVAL,
				"page_size %zu is invalid: it must be a power of two from %u to %u",
				ps, RINGTRACE_RB_MIN_PAGE_SIZE, RINGTRACE_RB_MAX_PAGE_SIZE);
	if (c->pool_size % ps)
		return rt_error(RINGTRACE_EINVAL,
				"pool_size %zu is invalid: it must be a multiple of page_size %zu",
				c->pool_size, ps);
	size_t np = c->pool_size / ps;
	if (np < RINGTRACE_RB_MIN_PAGES || np > RINGTRACE_RB_MAX_PAGES)
		return rt_error(RINGTRACE_EINVAL,
				"pool_size %zu is invalid: it holds %zu pages, allowed %u to %u", c->pool_size,
				np, RINGTRACE_RB_MIN_PAGES, RINGTRACE_RB_MAX_PAGES);
	if (c->max_writers < 1 || c->max_writers > RINGTRACE_RB_MAX_WRITERS)
		return rt_error(RINGTRACE_EINVAL, "max_writers %u is invalid: allowed 1 to %u",
				c->max_writers, RINGTRACE_RB_MAX_WRITERS);
	if (c->mode != RINGTRACE_RB_DISCARD && c->mode != RINGTRACE_RB_OVERWRITE)
		return rt_error(RINGTRACE_EINVAL, "mode %d is invalid: use discard (0) or overwrite (1)",
				(int)c->mode);
	if (c->flush_interval_ms < 1 || c->flush_interval_ms > 60000)
		return rt_error(RINGTRACE_EINVAL, "flush_interval_ms %u is invalid: allowed 1 to 60000",
				c->flush_interval_ms);
	if (c->shm_name && (c->shm_name[0] != '/' || strlen(c->shm_name) < 2 ||
			    strchr(c->shm_name + 1, '/') || strlen(c->shm_name) > 200))
		return rt_error(RINGTRACE_EINVAL,
				"shm_name \"%s\" is invalid: it must be \"/name\" with no other '/'",
				c->shm_name);
	return 0;
}

static size_t rt_align(size_t v, size_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* Point the handle's fields at the parts of a mapped region. */
static void rt_bind(struct ringtrace_rb *rb, char *base)
{
	struct rt_shm *shm = (struct rt_shm *)base;
	rb->base = base;
	rb->shm = shm;
	rb->slots = (struct rt_slot *)(base + shm->off_slots);
	rb->qcells = (struct rt_qcell *)(base + shm->off_qcells);
	rb->free_next = (uint32_t *)(base + shm->off_free_next);
	rb->gen = (uint64_t *)(base + shm->off_gen);
	rb->pages = base + shm->off_pages;
	rb->page_size = shm->page_size;
	uint32_t room = shm->page_size - RINGTRACE_PAGE_HEADER_SIZE - RINGTRACE_EV_EXT_HEADER_SIZE;
	rb->max_payload = room < RINGTRACE_EV_MAX_PAYLOAD ? room : RINGTRACE_EV_MAX_PAYLOAD;
	rb->max_payload &= ~7u;
	rb->is_tsc = shm->clock_is_tsc;
	rt_set_fast_epoch(rb);
	rb->clock.is_tsc = (int)shm->clock_is_tsc;
	rb->clock.freq = shm->clock_freq;
	rb->clock.base_ticks = shm->clock_base_ticks;
	rb->clock.base_ns = shm->clock_base_ns;
}

static int rt_register_open(struct ringtrace_rb *rb)
{
	pthread_mutex_lock(&rt_open_lock);
	for (unsigned i = 0; i < RINGTRACE_RB_MAX_OPEN; i++) {
		if (!rt_open[i].rb) {
			rb->idx = i;
			rb->epoch = rt_epoch_next++;
			rt_set_fast_epoch(rb);
			rt_open[i].rb = rb;
			rt_open[i].epoch = rb->epoch;
			pthread_mutex_unlock(&rt_open_lock);
			return 0;
		}
	}
	pthread_mutex_unlock(&rt_open_lock);
	return rt_error(RINGTRACE_ENOSPC, "too many ring buffers open in this process (at most %u)",
			RINGTRACE_RB_MAX_OPEN);
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/*
 * Make every page of the pool writable now. MAP_POPULATE on a shared
 * mapping only read-faults the pages in: the first store to each 4 KiB
 * page would still take a write fault, in the middle of a writer's event.
 * With a cold 128 MiB pool that was ~2 ns per event on average (one fault
 * per 256 events), and a latency spike of its own each time. The memory
 * is zero already: storing a zero changes nothing.
 */
static void rt_prefault_write(char *base, size_t total)
{
	if (madvise(base, total, MADV_POPULATE_WRITE) == 0)
		return;
	long ps = sysconf(_SC_PAGESIZE);
	size_t step = ps > 0 ? (size_t)ps : 4096;
	for (size_t off = 0; off < total; off += step)
		__atomic_store_n(base + off, 0, __ATOMIC_RELAXED);
}

int ringtrace_rb_create(const struct ringtrace_rb_config *cfg, ringtrace_rb **out)
{
	int err;
	if (!cfg || !out)
		return rt_error(RINGTRACE_EINVAL, "ringtrace_rb_create: cfg and out must not be NULL");
	*out = NULL;
	if ((err = rt_check_config(cfg)) < 0)
		return err;

	uint32_t npages = (uint32_t)(cfg->pool_size / cfg->page_size);
	uint32_t qcap = 1;
	while (qcap < 4 * npages)
		qcap <<= 1;
	size_t off = rt_align(sizeof(struct rt_shm), 4096);
	size_t off_slots = off;
	off = rt_align(off + (size_t)cfg->max_writers * sizeof(struct rt_slot), RT_CACHELINE);
	size_t off_q = off;
	off = rt_align(off + (size_t)qcap * sizeof(struct rt_qcell), RT_CACHELINE);
	size_t off_fn = off;
	off = rt_align(off + (size_t)npages * sizeof(uint32_t), RT_CACHELINE);
	size_t off_gen = off;
	off = rt_align(off + (size_t)npages * sizeof(uint64_t), 4096);
	size_t off_pages = off;
	size_t total = off_pages + (size_t)npages * cfg->page_size;

	struct ringtrace_rb *rb = calloc(1, sizeof(*rb));
	if (!rb)
		return rt_error(RINGTRACE_ENOMEM, "ringtrace_rb_create: out of memory");
	int fd;
	if (cfg->shm_name) {
		fd = shm_open(cfg->shm_name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0) {
			err = rt_error(RINGTRACE_ESYS, "shm_open(\"%s\"): %s", cfg->shm_name,
				       strerror(errno));
			free(rb);
			return err;
		}
	} else {
		fd = memfd_create("ringtrace", MFD_CLOEXEC);
		if (fd < 0) {
			err = rt_error(RINGTRACE_ESYS, "memfd_create: %s", strerror(errno));
			free(rb);
			return err;
		}
	}
	if (ftruncate(fd, (off_t)total) < 0) {
		err = rt_error(RINGTRACE_ENOMEM, "ftruncate of shared memory to %zu bytes: %s", total,
			       strerror(errno));
		goto fail_fd;
	}
	char *base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (base == MAP_FAILED) {
		err = rt_error(RINGTRACE_ENOMEM, "mmap of %zu bytes of shared memory: %s", total,
			       strerror(errno));
		goto fail_fd;
	}
	rt_prefault_write(base, total);
	const struct rt_clock *clk = rt_clock_get();
	struct rt_shm *shm = (struct rt_shm *)base;
	shm->version = RT_SHM_VERSION;
	shm->page_size = (uint32_t)cfg->page_size;
	shm->npages = npages;
	shm->max_writers = cfg->max_writers;
	shm->mode = (uint32_t)cfg->mode;
	shm->flush_ms = cfg->flush_interval_ms;
	shm->qcap = qcap;
	shm->clock_is_tsc = (uint32_t)clk->is_tsc;
	shm->clock_freq = clk->freq;
	shm->clock_base_ticks = clk->base_ticks;
	shm->clock_base_ns = clk->base_ns;
	shm->total_size = total;
	shm->off_slots = off_slots;
	shm->off_qcells = off_q;
	shm->off_free_next = off_fn;
	shm->off_gen = off_gen;
	shm->off_pages = off_pages;
	shm->creator_pid = (uint32_t)getpid();
	shm->next_stream = 1;
	rt_bind(rb, base);
	for (uint32_t i = 0; i < qcap; i++)
		rb->qcells[i].seq = i;
	/* Free list: page 0 on top. */
	for (uint32_t i = 0; i < npages; i++) {
		rb->free_next[i] = i + 1 < npages ? i + 2 : 0;
	}
	for (uint32_t i = 0; i < cfg->max_writers; i++)
		rb->slots[i].cur_page = RT_NO_PAGE;
	shm->free_head = 1;
	shm->free_count = npages;
	rb->fd = fd;
	rb->owner = 1;
	rb->map_size = total;
	if (rt_membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0)
		rb->mb_cmd = MEMBARRIER_CMD_GLOBAL_EXPEDITED;
	else if (rt_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0)
		rb->mb_cmd = MEMBARRIER_CMD_PRIVATE_EXPEDITED;
	else if (rt_membarrier(MEMBARRIER_CMD_QUERY) > 0 &&
		 (rt_membarrier(MEMBARRIER_CMD_QUERY) & MEMBARRIER_CMD_GLOBAL))
		rb->mb_cmd = MEMBARRIER_CMD_GLOBAL;
	if ((err = rt_register_open(rb)) < 0) {
		munmap(base, total);
		goto fail_fd;
	}
	/* Publish the magic last: an attacher that sees it sees a whole pool. */
	RT_STORE_REL(&shm->magic, RT_SHM_MAGIC);
	if (cfg->shm_name) {
		rb->shm_name = strdup(cfg->shm_name);
	}
	rt_error_clear();
	*out = rb;
	return 0;
fail_fd:
	close(fd);
	if (cfg->shm_name)
		shm_unlink(cfg->shm_name);
	free(rb);
	return err;
}

int ringtrace_rb_attach_fd(int fd, ringtrace_rb **out)
{
	int err;
	if (!out || fd < 0)
		return rt_error(RINGTRACE_EINVAL, "ringtrace_rb_attach_fd: invalid fd or NULL out");
	*out = NULL;
	struct stat stb;
	if (fstat(fd, &stb) < 0)
		return rt_error(RINGTRACE_ESYS, "attach: fstat(fd %d): %s", fd, strerror(errno));
	if ((size_t)stb.st_size < sizeof(struct rt_shm))
		return rt_error(RINGTRACE_ECORRUPT,
				"attach: fd %d is %lld bytes, too small for a ringtrace buffer", fd,
				(long long)stb.st_size);
	size_t size = (size_t)stb.st_size;
	char *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		return rt_error(RINGTRACE_ESYS, "attach: mmap of %zu bytes: %s", size, strerror(errno));
	struct rt_shm *shm = (struct rt_shm *)base;
	const char *why = NULL;
	if (RT_LOAD_ACQ(&shm->magic) != RT_SHM_MAGIC)
		why = "bad magic at offset 0 (not a ringtrace buffer)";
	else if (shm->version != RT_SHM_VERSION)
		why = "unsupported version at offset 8";
	else if (shm->total_size != size)
		why = "total_size does not match the object's size";
	else if (shm->page_size < RINGTRACE_RB_MIN_PAGE_SIZE ||
		 shm->page_size > RINGTRACE_RB_MAX_PAGE_SIZE ||
		 (shm->page_size & (shm->page_size - 1)) || shm->npages < RINGTRACE_RB_MIN_PAGES ||
		 shm->max_writers < 1 || shm->qcap < shm->npages || (shm->qcap & (shm->qcap - 1)))
		why = "invalid geometry in the control block";
	else if (shm->off_pages + (uint64_t)shm->npages * shm->page_size > size ||
		 shm->off_slots + (uint64_t)shm->max_writers * sizeof(struct rt_slot) > shm->off_pages ||
		 shm->off_qcells + (uint64_t)shm->qcap * sizeof(struct rt_qcell) > shm->off_pages ||
		 shm->off_gen + (uint64_t)shm->npages * 8 > shm->off_pages ||
		 shm->off_free_next + (uint64_t)shm->npages * 4 > shm->off_pages ||
		 shm->off_slots < sizeof(struct rt_shm) || shm->off_qcells < sizeof(struct rt_shm) ||
		 shm->off_free_next < sizeof(struct rt_shm) || shm->off_gen < sizeof(struct rt_shm) ||
		 shm->off_pages % 4096)
		why = "region offsets out of bounds";
	if (why) {
		munmap(base, size);
		return rt_error(RINGTRACE_ECORRUPT, "attach: fd %d: %s", fd, why);
	}
	struct ringtrace_rb *rb = calloc(1, sizeof(*rb));
	if (!rb) {
		munmap(base, size);
		return rt_error(RINGTRACE_ENOMEM, "attach: out of memory");
	}
	rt_bind(rb, base);
	rb->fd = dup(fd);
	rb->owner = 0;
	rb->map_size = size;
	rb->idx = 0;
	rb->epoch = UINT64_MAX; /* never matches a thread: a reader does not write */
	rt_set_fast_epoch(rb);
	int q = rt_membarrier(MEMBARRIER_CMD_QUERY);
	if (q > 0 && (q & MEMBARRIER_CMD_GLOBAL_EXPEDITED))
		rb->mb_cmd = MEMBARRIER_CMD_GLOBAL_EXPEDITED;
	else if (q > 0 && (q & MEMBARRIER_CMD_GLOBAL))
		rb->mb_cmd = MEMBARRIER_CMD_GLOBAL;
	(void)err;
	rt_error_clear();
	*out = rb;
	return 0;
}

int ringtrace_rb_attach_name(const char *shm_name, ringtrace_rb **out)
{
	if (!shm_name || !out)
		return rt_error(RINGTRACE_EINVAL, "ringtrace_rb_attach_name: NULL argument");
	int fd = shm_open(shm_name, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0)
		return rt_error(RINGTRACE_ESYS, "shm_open(\"%s\"): %s", shm_name, strerror(errno));
	int err = ringtrace_rb_attach_fd(fd, out);
	close(fd);
	return err;
}

void ringtrace_rb_destroy(ringtrace_rb *rb)
{
	if (!rb)
		return;
	if (rb->owner) {
		pthread_mutex_lock(&rt_open_lock);
		if (rt_open[rb->idx].rb == rb)
			rt_open[rb->idx].rb = NULL;
		pthread_mutex_unlock(&rt_open_lock);
		struct rt_wtls *t = &rt_tls[rb->idx];
		if (t->epoch == rb->epoch)
			rt_state_leave(t);
		else
			rt_forget_cached(t);
		if (rb->shm_name)
			shm_unlink(rb->shm_name);
	}
	munmap(rb->base, rb->map_size);
	close(rb->fd);
	free(rb->shm_name);
	free(rb);
}

int ringtrace_rb_fd(const ringtrace_rb *rb)
{
	return rb->fd;
}

size_t ringtrace_rb_page_size(const ringtrace_rb *rb)
{
	return rb->page_size;
}

uint32_t ringtrace_rb_page_count(const ringtrace_rb *rb)
{
	return rb->shm->npages;
}

enum ringtrace_rb_mode ringtrace_rb_mode(const ringtrace_rb *rb)
{
	return (enum ringtrace_rb_mode)rb->shm->mode;
}

uint64_t ringtrace_rb_now(const ringtrace_rb *rb)
{
	return rt_ticks(rb->is_tsc);
}

uint64_t ringtrace_rb_ticks_to_ns(const ringtrace_rb *rb, uint64_t ticks)
{
	return rt_clock_to_ns(&rb->clock, ticks);
}

uint64_t ringtrace_rb_clock_freq(const ringtrace_rb *rb)
{
	return rb->clock.freq;
}

int ringtrace_rb_clock_is_tsc(const ringtrace_rb *rb)
{
	return rb->clock.is_tsc;
}
