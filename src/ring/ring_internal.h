/*
 * src/ring/ring_internal.h - the ring buffer's shared memory layout, its
 * process-local handle, and what the files of src/ring share. Not
 * installed; other layers use ring/ring_api.h and the public headers.
 *
 * The files, one concern each:
 *   pool.c        attach to a pool, bind, destroy, accessors, clock
 *   create.c      create a pool (memfd or POSIX shm), prefault it
 *   identity.c    who this process is (cookie, pid, pid namespace)
 *   fifo.c        the free list and the FIFO of published pages
 *   guard.c       the SIGBUS guard of attached readers' passes
 *   writer.c      per-thread writer state, slot claim and retire, the
 *                 general write path, thread exit and fork
 *   flush.c       flush (taking pages from idle writers), reclaiming the
 *                 slots of owners that are gone
 *   consume.c     consuming by page, orphan pages (recovery)
 *   accounting.c  per-slot counters, retired totals, statistics
 *   comm.c        thread names from /proc
 *   page.c        the page decoder (ringtrace/format.h)
 *   merge.c       merging the events of several pages by timestamp
 *   reader.c      the consuming event iterator
 *   snapshot.c    non-consuming snapshots
 * The write fast path itself is inline, in ringtrace/static/ring.h.
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
 * offset, last timestamp). An event is (ringtrace/static/ring.h, inline
 * in the generated recording code and in ringtrace_rb_reserve()):
 *
 *   if slot->nest != 0:  general path (a signal handler's nested write)
 *   slot->nest = 1                     (plain store; marks "inside a write")
 *   (lo, hi) = rdtsc                 (the counter's halves, not joined)
 *   if a flush is asked or the page is full or hi != last_hi or
 *      lo < last_lo (a gap that may need the extended header, a clock gone
 *      back, a high half just moved on):  (private) decl_ts = hi:lo,
 *      slot->nest = 0, general path, which takes decl_ts as the event's
 *      timestamp rather than read the clock again (if no older than the
 *      thread's last event)
 *   (the page "full" at its warm-up mark, 2 KiB before its end, and only
 *      that: prefetch the lines the coming switch will touch, noted at
 *      the last one, limit = the page's end, go on; writer.c, rt_warm_note)
 *   last_lo = lo (last_hi is hi already); store the 8-byte header (lo in
 *      its low half) at the write offset (kept 8-aligned), return the
 *      payload pointer; the caller fills it
 *   commit: write offset = end of the payload rounded up to 8 (private),
 *           page->commit = end of the payload (store-release; unpadded,
 *           as a CTF packet's content_size must be)
 *           slot->hit++ (one add: only its owner writes it),
 *           slot->nest = 0 (store-release)
 *
 * No atomic read-modify-write, no fence, no system call and nothing shared
 * with another writer on this path: a slot's first cache line and the page
 * are written by their owner only. The general path (writer.c) raises nest
 * the same way, does what the fast path declined (a thread's first event,
 * a page switch, answering a flush, the extended header, the
 * CLOCK_MONOTONIC fallback clock) and returns to the same commit. A few
 * atomic operations per page are the price of a page switch: the
 * free-list pop (in overwrite mode, when the list is empty, the FIFO pop)
 * and the FIFO push. The count of published pages is derived from the
 * push position (no add), and the overrun of a recycled page of the
 * thread's own stream is a plain add to a counter only the owner writes
 * (ACCOUNTING). Locked instructions in a switch: three from the free list
 * (its compare-and-swap, the free count's decrement, the push's
 * compare-and-swap), two when an overwrite-mode writer recycles a page
 * of its own, three when the page was another writer's.
 *
 * SIGNALS
 *
 * A signal handler that writes an event while its thread is between
 * reserve and commit finds nest != 0. Its event is dropped and counted as
 * missed (an atomic add, since the interrupted code may be counting a
 * drop of its own), and nest is left as it was: neither event is
 * corrupted. The reserve/commit pair is thus async-signal-safe.
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
 * only asks, and idle writers keep their page until their next event; so
 * does a flush whose barrier does not reach the writer's process (a
 * private barrier, and the writers of a forked child; the control block
 * says which barrier the creator's writers registered for).
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
 * atomic add, see SIGNALS), and so is overrun_own, the events of the
 * owner's own pages that it recycled itself; overrun and read are added
 * by the thread that recycles (another writer) or consumes one of the
 * slot's pages. Those two carry a tag of the stream in their top 16
 * bits, and an add whose tag does not match goes to the buffer's
 * "retired" totals instead, so a slot that is being reused by a new
 * thread is never credited with its predecessor's losses. When a thread
 * exits, its counters are folded into the retired totals. Per page:
 * packet_seq_num, events_before (events the stream had committed before
 * the page) and events_discarded (events the stream had dropped before
 * the page): a reader computes exactly what it lost between two pages of
 * a stream.
 *
 * UNTRUSTED POOLS
 *
 * Whoever can write the pool can write anything into it: a wild pointer
 * of the traced program, or a hostile process that maps it. So nothing
 * read from shared memory is trusted, by a reader in another process (the
 * live view of `ringtrace record`, `ringtrace recover`) nor by the
 * library in the traced program:
 *
 *  - The geometry (page size, page count, slot count, FIFO cells, mode,
 *    region offsets, total size) is read once, at attach, checked against
 *    the object's size with arithmetic that cannot overflow, and kept in
 *    the handle (rb->g); nothing re-reads it. A control block whose
 *    geometry changes later is damage (rt_check_control).
 *  - Every index (a page from a FIFO cell, the free list or a slot's
 *    cur_page), offset, length and sequence read from the pool is checked
 *    against that copy before it is used; page headers are checked
 *    before a page is handed out (ringtrace_page_check), and the decoder
 *    checks every event.
 *  - Every loop over shared data is bounded: by the geometry (slot scans,
 *    free-list walks, FIFO ranges), by RT_CAS_MAX (compare-and-swap
 *    retries), or by the FIFO's own invariants (fifo.c: a cell whose
 *    sequence runs ahead of the queue's position, or lags by more than a
 *    lap, cannot happen).
 *  - A check that fails marks the handle damaged (process-local, never a
 *    flag in the pool): the calls return -RINGTRACE_ECORRUPT with
 *    ringtrace_last_error() naming what was wrong and where; the writers
 *    of the process stop (each of its slots' steal word is set to
 *    RT_STEAL_STOPPED, which sends the inline fast path to the general
 *    path, and that refuses every event, counted in rb->refused and shown
 *    as missed); a creating handle says so once on stderr. Readers go on
 *    where they safely can: each page and cell is still checked, what
 *    fails is skipped and counted, so what was recorded before the damage
 *    is still drained.
 *  - An attached reader's passes over the mapping run under a SIGBUS guard
 *    (guard.c): an object shrunk under it ends the pass with an error, and
 *    it hands out private copies of pages, so that the caller's own
 *    reading of a page can neither fault nor see the page change under it.
 * The writing program's fast path is unchanged: a writer's page pointer,
 * offset and limit are its own (thread-local), so whatever the pool holds,
 * an event is written inside the writer's page.
 */
#ifndef RINGTRACE_RING_INTERNAL_H
#define RINGTRACE_RING_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "ring/ring_api.h"
#include "ringtrace/ring.h"
#include "ringtrace/static/ring.h"

#define RT_SHM_MAGIC 0x31435254474e4952ull /* "RINGTRC1" */
/* 2: slot state word with a stamp, slot pidns, flush ids; 3: uuid; 4: cells_empty
 * in place of a count of published pages; 5: a slot's overrun_own */
#define RT_SHM_VERSION 5u
#define RT_NO_PAGE 0xFFFFFFFFu

/*
 * Writer slot states, in the low 2 bits of slot->h.state; the bits above
 * count the slot's transitions (a version stamp). A thread claims a FREE
 * slot by moving it to CLAIMING, writes its pid, tid, pid namespace,
 * process cookie and stream there, then publishes ACTIVE (release):
 * whoever reads that word (acquire) reads that owner's fields. RECLAIMING:
 * a flush is taking the slot of an owner that is gone. Every change of
 * owner passes through new stamps, so a flush that judged the owner from
 * the word w and the fields read after it takes the slot by
 * compare-and-swap from w: if the slot changed hands in between (and its
 * fields with it), that fails. An owner that retires renews the stamp by
 * compare-and-swap from the word it published (still ACTIVE), then frees
 * the slot the same way.
 */
#define RT_SLOT_FREE 0u
#define RT_SLOT_ACTIVE 1u
#define RT_SLOT_RECLAIMING 2u
#define RT_SLOT_CLAIMING 3u
#define RT_SLOT_STATE(w) ((w)&3u)
#define RT_SLOT_NEXT(w, st) ((((w) & ~3u) + 4u) | (st))

/* slot->h.steal: the flush handshake (see flush.c). */
#define RT_STEAL_NONE 0u
#define RT_STEAL_TAKEN 2u
/*
 * Set by the owner's process in its slots when it found the pool damaged:
 * non-zero, so the inline fast path declines every event, and neither
 * asked nor taken, so a flush may still ask for the page (and publish
 * what the writer had committed).
 */
#define RT_STEAL_STOPPED 3u
/*
 * Asked by the flush call with this id (shm->flush_seq): only that call
 * may take the page (ASKED -> TAKEN), so a flush that was slow to act on
 * its request cannot take a page asked for again later by another one.
 * A later flush takes a pending request over by replacing the id.
 */
#define RT_STEAL_ASKED_BY(id) (((uint32_t)(id) << 2) | 1u)
#define RT_STEAL_IS_ASKED(st) (((st)&3u) == 1u)

/*
 * Counters that a thread other than the slot's owner adds to (overrun, read)
 * carry a 16-bit tag of the stream they belong to in their top bits, so an
 * add that races with the slot being retired and reused is never credited
 * to the next thread (see rt_slot_add()).
 */
#define RT_TAG_SHIFT 48
#define RT_COUNT_MASK ((1ull << RT_TAG_SHIFT) - 1)
#define RT_TAG(stream) ((((stream)&0x7FFFull) | 0x8000ull) << RT_TAG_SHIFT)

/* The control block at offset 0 of the shared region. */
struct rt_shm {
	uint64_t magic;
	uint32_t version;
	uint32_t page_size;
	uint32_t npages;
	uint32_t max_writers;
	uint32_t mode;
	uint32_t flush_ms;
	uint32_t qcap; /* FIFO cells, power of two >= npages */
	uint32_t clock_is_tsc;
	uint64_t clock_freq;
	uint64_t clock_base_ticks;
	uint64_t clock_base_ns;
	uint64_t total_size;
	uint64_t off_slots, off_qcells, off_free_next, off_gen, off_pages;
	uint32_t creator_pid;
	/*
	 * The membarrier command that orders the creator's writers (flush.c):
	 * MEMBARRIER_CMD_GLOBAL_EXPEDITED if the creator registered for it
	 * (its forked children do too), _PRIVATE_EXPEDITED (its own threads
	 * only), _GLOBAL, or 0 (none: flush only asks). Another process that
	 * flushes the pool can use only what this allows (pool.c).
	 */
	uint32_t creator_mb_cmd;

	/* Each hot shared word on its own cache line. */
	uint64_t free_head __attribute__((aligned(RT_CACHELINE))); /* tag<<32 | (index+1) */
	uint32_t free_count;
	uint64_t enq_pos __attribute__((aligned(RT_CACHELINE)));
	uint64_t deq_pos __attribute__((aligned(RT_CACHELINE)));

	/* Slow-path counters (atomic adds, never per event on the fast path). */
	uint64_t next_stream __attribute__((aligned(RT_CACHELINE)));
	uint64_t retired_hit, retired_missed, retired_overrun, retired_read;
	uint64_t missed_noslot; /* events of threads that got no slot */
	/*
	 * FIFO positions claimed and filled with no page (a flush that found
	 * its page empty or lost its request; added to after the claim, with
	 * release). Pages published = enq_pos - cells_empty (the stats,
	 * accounting.c): a page switch then publishes with its one
	 * compare-and-swap on enq_pos and no locked add for a count of its
	 * own. A position claimed by a process that died before filling it
	 * counts as published too.
	 */
	uint64_t cells_empty;
	uint64_t pages_flushed;
	uint64_t last_flush_ticks;
	uint64_t flush_seq; /* ids of flush calls (RT_STEAL_ASKED_BY) */
	/*
	 * The pool's identity: 16 random bytes drawn at creation (an RFC 4122
	 * version 4 UUID), never 0, never changed. The recorder writes it
	 * into the trace's metadata (`trace { uuid }` and the schema block's
	 * `uuid` line), so that `ringtrace recover` can tell the pool of a
	 * trace from any other before it writes anything (src/collect/recover.c).
	 * Read once at attach like the geometry; a change is damage.
	 */
	uint8_t uuid[16];
};

/*
 * A writer slot: 128 bytes. The first line is written only by its owner
 * thread (and read by flush and stats); the second holds the counters that
 * other threads add to, and the owner's overrun_own. It begins with the
 * part the inline fast path knows (nest, steal, state, cur_page, hit).
 */
struct rt_slot {
	struct ringtrace_slot_head_ h;
	uint64_t missed; /* dropped events */
	uint64_t pages;  /* pages taken */
	uint64_t stream; /* stream_instance_id */
	uint32_t tid;
	uint32_t pid;
	uint64_t page_ts; /* timestamp_begin of cur_page (for flush) */
	uint64_t overrun __attribute__((aligned(RT_CACHELINE))); /* tagged */
	uint64_t read;                                           /* tagged */
	uint64_t comm[2]; /* thread name, refreshed by readers (ringtrace_rb_refresh_comm) */
	uint64_t pidns;   /* the owner's pid namespace (inode of /proc/self/ns/pid), 0 unknown */
	uint64_t owner_cookie; /* random per owner process (identity.c) */
	/*
	 * `missed` when the owner took its current (or last) page: what the
	 * stream's pages report as events_discarded. Drops beyond it are in
	 * no page yet; the owner records them when it retires (rt_tail_note).
	 */
	uint64_t missed_reported;
	/*
	 * Events of this slot's own pages that its owner recycled (overwrite
	 * mode) or could not publish: while the slot is ACTIVE, written by
	 * its owner only, with a plain add, so that the page switch of a
	 * thread recycling its own pages (a program with one recording
	 * thread: all of them) counts the loss with no locked instruction.
	 * Untagged: the owner's attach sets it to 0 before it publishes the
	 * slot ACTIVE, and the fold of a leaving writer (its own retire, or a
	 * flush's reclaim of an owner that is gone) empties it. The slot's
	 * overrun is this plus the tagged `overrun` above, which the pages
	 * recycled by other threads go to.
	 */
	uint64_t overrun_own;
};

_Static_assert(sizeof(struct rt_slot) == 128, "slot is two cache lines");
_Static_assert(offsetof(struct rt_slot, h) == 0, "the inline head starts the slot");
_Static_assert(sizeof(struct ringtrace_page_header) == RINGTRACE_PAGE_HEADER_SIZE,
	       "page header size");
_Static_assert(RINGTRACE_MIN_MAX_PAYLOAD_ <= RINGTRACE_EV_MAX_PAYLOAD, "minimum max_payload");
/*
 * A writer's offset is kept 8-aligned (the fast path stores header and
 * payload there without rounding), and its page-full test compares the
 * rounded-up end with the page size: exact only while pages (powers of
 * two from 4 KiB) and their header are multiples of the event alignment.
 */
_Static_assert(RINGTRACE_PAGE_HEADER_SIZE % RINGTRACE_EV_ALIGN == 0, "page header size");
_Static_assert(RINGTRACE_RB_MIN_PAGE_SIZE % RINGTRACE_EV_ALIGN == 0, "page size");

/* One FIFO cell (Vyukov's bounded MPMC queue). */
struct rt_qcell {
	uint64_t seq;
	uint32_t page;
	uint32_t pad;
};

/*
 * The pool's geometry, the handle's own copy: computed at create, or read
 * once from the control block at attach and validated there against the
 * object's size (pool.c, rt_geom_check). Nothing re-reads these fields
 * from shared memory afterwards: every index, offset and count that comes
 * from the pool is checked against this copy, which no other process can
 * change (see "UNTRUSTED POOLS" above).
 */
struct rt_geom {
	uint32_t page_size, npages, max_writers, qcap;
	uint32_t mode, flush_ms;
	uint64_t total_size;
	uint64_t off_slots, off_qcells, off_free_next, off_gen, off_pages;
};

struct rt_copy;

/* The process-local handle: the inline head first (read on every event). */
struct ringtrace_rb {
	struct ringtrace_rb_head_ h;

	struct rt_shm *shm;
	struct rt_slot *slots;
	struct rt_qcell *qcells;
	uint32_t *free_next;
	uint64_t *gen;
	struct rt_geom g; /* never re-read from shared memory */
	uint8_t uuid[16]; /* the pool's identity: the same (read once at attach) */
	size_t map_size;
	int fd;
	int owner;  /* created here (may write) vs attached (read only) */
	int mb_cmd; /* membarrier command for flush, 0 if unavailable */
	struct rt_clock clock;
	char *shm_name; /* creator of a named object: unlinked on destroy */
	/* Set when created for writing (writer.c): forgets the buffer's
	 * writers when it is destroyed. */
	void (*on_destroy)(struct ringtrace_rb *rb);

	/*
	 * Damage found in the pool (rt_pool_damaged): process-local, never
	 * read from shared memory. damaged: 0, or 1 once something failed a
	 * check (the first finder writes `damage`, then sets damage_ready);
	 * from then on this process's writers refuse every event. gone: an
	 * access to the mapping faulted (the object was shrunk under an
	 * attached reader): every later call fails at once.
	 */
	uint32_t damaged, damage_ready, gone;
	char damage[200];
	uint64_t refused;       /* events writers refused since (counted as missed) */
	uint64_t pages_skipped; /* published pages whose header failed its checks */
	/*
	 * An attached handle hands out private copies of pages, never the
	 * mapping itself (consume.c): the list of copies given out and not
	 * yet put back, and those of ringtrace_rb_page_at (by index). Only
	 * the consumer's thread uses them (one consumer per buffer).
	 */
	struct rt_copy *copies;
	struct rt_copy **at_copies;
	/*
	 * Exact per-stream accounting (ringtrace_rb_stream_drops): streams of
	 * this process's writers that retired with drops no page of theirs
	 * reports (the pool was full when they dropped: no page carries
	 * them), each with its final `missed`. Process-local (a creating
	 * handle's writers only), kept until the handle is destroyed: the
	 * recorder writes them into the metadata. Appended by exiting threads
	 * (a slot by fetch-add; stream written last, release: 0 is "not yet
	 * written"); entries past RT_TAILS_MAX are counted in tails_lost.
	 */
	struct rt_tail *tails;
	uint32_t ntails;
	uint64_t tails_lost;
};

struct rt_tail {
	uint64_t stream, missed;
	uint32_t tid;
};
#define RT_TAILS_MAX 65536u

_Static_assert(offsetof(struct ringtrace_rb, h) == 0, "the inline head starts the handle");

static inline struct ringtrace_page_header *rt_page(const struct ringtrace_rb *rb, uint32_t i)
{
	return (struct ringtrace_page_header *)(rb->h.pages + (size_t)i * rb->h.page_size);
}

static inline uint32_t rt_page_index(const struct ringtrace_rb *rb, const void *p)
{
	return (uint32_t)(((const char *)p - rb->h.pages) / rb->h.page_size);
}

/* The private slot a thread's writer state points at. */
static inline struct rt_slot *rt_slot_of(const struct ringtrace_wtls_ *t)
{
	return (struct rt_slot *)(void *)t->slot;
}

/* ---- pool.c ---- */
/* Point the handle's fields at the parts of a mapped region laid out as
 * rb->g says (already validated). */
RT_HIDDEN void rt_bind(struct ringtrace_rb *rb, char *base);
/*
 * The pool failed a check: mark the handle damaged (first call only: its
 * message is kept, the writers of this process are stopped, and a creating
 * handle says so once on stderr), set ringtrace_last_error() unless called
 * from a writer (`writer`: inside the write path, maybe a signal handler,
 * where only async-signal-safe code may run), and return
 * -RINGTRACE_ECORRUPT. The format is rt_format_safe's subset.
 */
RT_HIDDEN int rt_pool_damaged(const struct ringtrace_rb *rb, int writer, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* 0, or -RINGTRACE_ECORRUPT with ringtrace_last_error() set if the handle
 * is damaged (`gone_only`: only if its mapping is gone). */
RT_HIDDEN int rt_pool_check_damaged(const struct ringtrace_rb *rb, int gone_only);
/*
 * Compare the control block's geometry with the handle's copy: 0, or the
 * pool is damaged (a change means something scribbled over it).
 */
RT_HIDDEN int rt_check_control(const struct ringtrace_rb *rb);

/* ---- guard.c ---- */
/*
 * Run fn(rb, arg) as one pass over the mapping. For an attached handle, a
 * SIGBUS inside the mapping (the object was shrunk or truncated under us)
 * ends the pass: the handle is marked gone and damaged and
 * -RINGTRACE_ECORRUPT is returned. A creating handle runs fn directly (the
 * writing program keeps its own signal dispositions). fn must allocate
 * nothing it cannot find again from arg: the pass may end at any access
 * to the mapping.
 */
typedef int (*rt_pass_fn)(struct ringtrace_rb *rb, void *arg);
RT_HIDDEN int rt_guard_run(const struct ringtrace_rb *rb, rt_pass_fn fn, void *arg);
/* The same over [base, base + size) before a handle exists (attach): 0 or
 * fn's result, or RT_GUARD_FAULT. */
#define RT_GUARD_FAULT (-0x7000)
RT_HIDDEN int rt_guard_range(const char *base, size_t size, int (*fn)(void *arg), void *arg);
/* fast_epoch from epoch and is_tsc (call whenever either changes). */
RT_HIDDEN void rt_set_fast_epoch(struct ringtrace_rb *rb);
RT_HIDDEN int rt_membarrier(int cmd);

/* ---- identity.c ---- (struct rt_identity, rt_identity_loaded: ring_api.h) */
/* This process's identity, read once (writers read it when the process
 * first opens a buffer for writing). */
RT_HIDDEN const struct rt_identity *rt_identity(void);
/* Read it again (in a forked child). */
RT_HIDDEN void rt_identity_refresh(void);

/* ---- fifo.c ---- */
/*
 * Each returns 1 (done), 0 (nothing: the list or queue is empty, or a cell
 * stayed busy), or -RINGTRACE_ECORRUPT: the pool failed a check (an index
 * out of range, a sequence that cannot be, a loop that went round its
 * bound), and is marked damaged. `writer`: called from the write path
 * (see rt_pool_damaged).
 */
RT_HIDDEN int rt_free_pop(struct ringtrace_rb *rb, uint32_t *out, int writer);
RT_HIDDEN int rt_free_push(struct ringtrace_rb *rb, uint32_t page, int writer);
RT_HIDDEN int rt_fifo_claim(struct ringtrace_rb *rb, uint64_t *out, int writer);
/* Fill a claimed position; RT_NO_PAGE makes a tombstone that pops skip. */
static inline void rt_fifo_fill(struct ringtrace_rb *rb, uint64_t pos, uint32_t page)
{
	struct rt_qcell *c = &rb->qcells[pos & (rb->g.qcap - 1)];
	RT_STORE(&c->page, page);
	RT_STORE_REL(&c->seq, pos + 1);
}
RT_HIDDEN int rt_fifo_pop(struct ringtrace_rb *rb, uint32_t *page, uint64_t *at, int writer);
/*
 * rt_fifo_claim and rt_fifo_pop as a writer's page switch calls them (the
 * claim to publish its full page, the pop to recycle one in overwrite
 * mode), with the common case inline: the cell of the write (read)
 * position is ready at the first look, holds a page in range (a pop), and
 * the position is won by the first compare-and-swap. That is the first
 * round of the functions' loops, without the call and the handle's fields
 * loaded again there, on the switch's path. Anything else (a busy cell, a
 * lost race, a tombstone, an index that fails the check) goes to the
 * function, which starts over from the position with every check and
 * bound. The pop reads
 * the cell's page before its compare-and-swap, not after: the page of a
 * filled cell (seq == pos + 1, read with acquire) is written again only
 * by the producer of pos + qcap, after pos was consumed; if another
 * popper consumed it meanwhile, the compare-and-swap fails.
 */
static inline int rt_fifo_claim_for_switch(struct ringtrace_rb *rb, uint64_t *out)
{
	struct rt_shm *shm = rb->shm;
	uint64_t pos = RT_LOAD(&shm->enq_pos);
	const struct rt_qcell *c = &rb->qcells[pos & (rb->g.qcap - 1)];
	if (RT_LOAD_ACQ(&c->seq) == pos &&
	    __atomic_compare_exchange_n(&shm->enq_pos, &pos, pos + 1, 0, __ATOMIC_RELAXED,
					__ATOMIC_RELAXED)) {
		*out = pos;
		return 1;
	}
	return rt_fifo_claim(rb, out, 1);
}

static inline int rt_fifo_pop_for_switch(struct ringtrace_rb *rb, uint32_t *page, uint64_t *at)
{
	struct rt_shm *shm = rb->shm;
	uint64_t qcap = rb->g.qcap;
	uint64_t pos = RT_LOAD(&shm->deq_pos);
	struct rt_qcell *c = &rb->qcells[pos & (qcap - 1)];
	if (RT_LOAD_ACQ(&c->seq) == pos + 1) {
		uint32_t p = RT_LOAD(&c->page);
		if (p < rb->g.npages &&
		    __atomic_compare_exchange_n(&shm->deq_pos, &pos, pos + 1, 0, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED)) {
			RT_STORE_REL(&c->seq, pos + qcap);
			*page = p;
			*at = pos;
			return 1;
		}
	}
	return rt_fifo_pop(rb, page, at, 1);
}
/*
 * Bounds of the loops over shared memory. A compare-and-swap that fails
 * means another party changed the word in between; the buffer's own
 * threads change these words once per page (free list, FIFO positions) or
 * once per flush (a slot's steal word), so failing RT_CAS_MAX times in a
 * row cannot come from them: something else keeps writing the word, and
 * the pool is judged damaged. (A million consecutive failures would need
 * a million pages taken and given back while this thread retried, each
 * by another thread winning the race: no workload comes near.)
 */
#define RT_CAS_MAX (1u << 20)

/* ---- consume.c ---- */
/* Free the page copies an attached handle made (destroy). */
RT_HIDDEN void rt_copies_free(struct ringtrace_rb *rb);

/* ---- accounting.c ---- */
/* A consumer took a page: its events are read. */
RT_HIDDEN void rt_account_read(struct ringtrace_rb *rb, const struct ringtrace_page_header *h);
/*
 * Events of writer slot `slot`'s stream `stream` overrun: n added to the
 * slot's tagged counter, or to the retired totals if the stream is gone
 * (called from a writer's path).
 */
RT_HIDDEN void rt_account_overrun_of(struct ringtrace_rb *rb, uint32_t slot, uint64_t stream,
				     uint64_t n);
/*
 * A page was recycled (or could not be published) before a reader saw
 * it: its events are overrun. Called from the write path of slot s's
 * owner. The page's header names its writer slot and stream (the pool's
 * words: read once each). Ours, and our stream: no other thread adds to
 * overrun_own, and a signal handler's event inside our write is dropped
 * before it could take a page (nest), so a plain add is exact; inline,
 * as it is the page switch's case in a program with one recording
 * thread. A stream number is its slot's for one owner only, so a page of
 * an earlier owner of this slot does not match and goes through
 * rt_slot_add, whose tag check sends it to the retired totals. (Not
 * covered: a flush that misjudged a live owner as gone, which only an
 * unsupported writer can cause, a child of _Fork() or vfork() that
 * records: its fold may then race the owner's add and count it twice, as
 * it already would the owner's hit.)
 */
static inline void rt_account_overrun_by(struct ringtrace_rb *rb, struct rt_slot *s,
					 const struct ringtrace_page_header *h)
{
	uint32_t slot = RT_LOAD(&h->writer);
	uint64_t stream = RT_LOAD(&h->stream_instance_id), n = RT_LOAD(&h->events);
	if (slot == (uint32_t)(s - rb->slots) && stream == RT_LOAD(&s->stream)) {
		RT_STORE(&s->overrun_own, RT_LOAD(&s->overrun_own) + n);
		return;
	}
	rt_account_overrun_of(rb, slot, stream, n);
}
/*
 * A slot whose writer is leaving (retire, or reclaim of an owner that is
 * gone) with drops no page reports: its stream and final `missed` kept
 * in rb's tails (ringtrace_rb_stream_drops). Call before rt_slot_fold.
 */
RT_HIDDEN void rt_tail_note(struct ringtrace_rb *rb, struct rt_slot *s);
/* Move a slot's counters into the retired totals (its writer is leaving). */
RT_HIDDEN void rt_slot_fold(struct rt_shm *shm, struct rt_slot *s);

/* ---- flush.c ---- */
/*
 * Fill in the fields of a page that are final once it is published, from
 * its committed content (a page taken from a writer, a snapshot's copy).
 */
RT_HIDDEN void rt_page_finalize(struct ringtrace_page_header *h, uint32_t commit, uint32_t flags);

/* ---- merge.c ---- */
/* One page taken into a merge (see merge.c). */
struct rt_src {
	struct ringtrace_page_cursor cur; /* heads: the cursor of the stream */
	struct ringtrace_event ev;        /* heads: the stream's next event */
	const struct ringtrace_page_header *page;
	int32_t next;  /* next page of the same stream, or -1 */
	int32_t chain; /* heads: next page to move to, or -1 */
	int32_t tail;  /* heads: last page of the chain */
	int32_t head;  /* 1 for the first page of its stream */
};

struct rt_merge {
	struct rt_src *src;
	uint32_t *heap;
	uint32_t n, cap, nheap;
	uint32_t corrupt;   /* pages whose decoding stopped at damage */
	uint32_t page_size; /* no cursor reads beyond it, whatever a header says (0: none) */
};

RT_HIDDEN int rt_merge_init(struct rt_merge *m, uint32_t cap);
RT_HIDDEN void rt_merge_free(struct rt_merge *m);
/* Add a page (checked; its content_size bounds the decoding). Call
 * rt_merge_start() once all pages of a batch are added. */
RT_HIDDEN void rt_merge_add(struct rt_merge *m, const struct ringtrace_page_header *page);
RT_HIDDEN void rt_merge_start(struct rt_merge *m);
/* The next event of the merge: 1, or 0 when every page is read. */
RT_HIDDEN int rt_merge_next(struct rt_merge *m, struct ringtrace_event *ev);

/* ---- writer.c ---- */
/* Open a created buffer for writing: its epoch and per-thread index. */
RT_HIDDEN int rt_writers_open(struct ringtrace_rb *rb);

#endif /* RINGTRACE_RING_INTERNAL_H */
