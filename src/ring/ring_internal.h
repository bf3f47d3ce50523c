/*
 * Internal layout of a ring buffer's shared memory, shared by ring.c (the
 * writers, the page FIFO, flush and accounting) and read.c (decoding, the
 * event iterator and snapshots). Everything in the shared region is
 * addressed by offsets and indices, never pointers, so that any process
 * can map it at any address.
 */
#ifndef RINGTRACE_RING_INTERNAL_H
#define RINGTRACE_RING_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/internal.h"

#define RT_CACHELINE 64
#define RT_SHM_MAGIC 0x31435254474e4952ull /* "RINGTRC1" */
#define RT_SHM_VERSION 2u /* 2: slot state word with a stamp, slot pidns, flush ids */
#define RT_NO_PAGE 0xFFFFFFFFu

/*
 * Writer slot states, in the low 2 bits of slot->state; the bits above
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
#define RT_SLOT_STATE(w) ((w) & 3u)
#define RT_SLOT_NEXT(w, st) ((((w) & ~3u) + 4u) | (st))

/* slot->steal: the flush handshake (see ring.c, "Flush"). */
#define RT_STEAL_NONE 0u
#define RT_STEAL_TAKEN 2u
/*
 * Asked by the flush call with this id (shm->flush_seq): only that call
 * may take the page (ASKED -> TAKEN), so a flush that was slow to act on
 * its request cannot take a page asked for again later by another one.
 * A later flush takes a pending request over by replacing the id.
 */
#define RT_STEAL_ASKED_BY(id) (((uint32_t)(id) << 2) | 1u)
#define RT_STEAL_IS_ASKED(st) (((st) & 3u) == 1u)

/*
 * Counters that a thread other than the slot's owner adds to (overrun, read)
 * carry a 16-bit tag of the stream they belong to in their top bits, so an
 * add that races with the slot being retired and reused is never credited
 * to the next thread (see rt_slot_add()).
 */
#define RT_TAG_SHIFT 48
#define RT_COUNT_MASK ((1ull << RT_TAG_SHIFT) - 1)
#define RT_TAG(stream) ((((stream) & 0x7FFFull) | 0x8000ull) << RT_TAG_SHIFT)

/* The control block at offset 0 of the shared region. */
struct rt_shm {
	uint64_t magic;
	uint32_t version;
	uint32_t page_size;
	uint32_t npages;
	uint32_t max_writers;
	uint32_t mode;
	uint32_t flush_ms;
	uint32_t qcap;               /* FIFO cells, power of two >= npages */
	uint32_t clock_is_tsc;
	uint64_t clock_freq;
	uint64_t clock_base_ticks;
	uint64_t clock_base_ns;
	uint64_t total_size;
	uint64_t off_slots, off_qcells, off_free_next, off_gen, off_pages;
	uint32_t creator_pid;
	uint32_t pad0;

	/* Each hot shared word on its own cache line. */
	uint64_t free_head __attribute__((aligned(RT_CACHELINE))); /* tag<<32 | (index+1) */
	uint32_t free_count;
	uint64_t enq_pos __attribute__((aligned(RT_CACHELINE)));
	uint64_t deq_pos __attribute__((aligned(RT_CACHELINE)));

	/* Slow-path counters (atomic adds, never per event on the fast path). */
	uint64_t next_stream __attribute__((aligned(RT_CACHELINE)));
	uint64_t retired_hit, retired_missed, retired_overrun, retired_read;
	uint64_t missed_noslot;       /* events of threads that got no slot */
	uint64_t pages_published, pages_flushed;
	uint64_t last_flush_ticks;
	uint64_t flush_seq;           /* ids of flush calls (RT_STEAL_ASKED_BY) */
};

/*
 * A writer slot: 128 bytes. The first line is written only by its owner
 * thread (and read by flush and stats); the second holds the counters that
 * other threads add to.
 */
struct rt_slot {
	uint32_t nest;        /* >0 while the owner is inside a write */
	uint32_t steal;       /* RT_STEAL_NONE, _TAKEN, or _ASKED_BY(id) */
	uint32_t state;       /* RT_SLOT_* | stamp, see RT_SLOT_STATE */
	uint32_t cur_page;    /* the owner's page, or RT_NO_PAGE */
	uint64_t hit;         /* committed events */
	uint64_t missed;      /* dropped events */
	uint64_t pages;       /* pages taken */
	uint64_t stream;      /* stream_instance_id */
	uint32_t tid;
	uint32_t pid;
	uint64_t page_ts;     /* timestamp_begin of cur_page (for flush) */
	uint64_t overrun __attribute__((aligned(RT_CACHELINE))); /* tagged */
	uint64_t read;                                            /* tagged */
	uint64_t comm[2];     /* thread name, refreshed by readers (ringtrace_rb_refresh_comm) */
	uint64_t pidns;       /* the owner's pid namespace (inode of /proc/self/ns/pid), 0 unknown */
	uint64_t owner_cookie; /* random per owner process (ring.c, rt_read_self) */
	uint64_t pad2[2];
};

_Static_assert(sizeof(struct rt_slot) == 128, "slot is two cache lines");
_Static_assert(sizeof(struct ringtrace_page_header) == RINGTRACE_PAGE_HEADER_SIZE,
	       "page header size");

/* One FIFO cell (Vyukov's bounded MPMC queue). */
struct rt_qcell {
	uint64_t seq;
	uint32_t page;
	uint32_t pad;
};

/* The process-local handle. */
struct ringtrace_rb {
	/* Read on every event: keep together. */
	uint32_t idx;          /* index into the per-thread writer table */
	uint32_t is_tsc;
	uint64_t epoch;        /* matches rt_tls[idx].epoch when the thread has a writer */
	char *base;
	char *pages;
	uint32_t page_size;
	uint32_t max_payload;
	uint64_t fast_epoch;   /* epoch if is_tsc, else UINT64_MAX (rt_set_fast_epoch) */

	struct rt_shm *shm;
	struct rt_slot *slots;
	struct rt_qcell *qcells;
	uint32_t *free_next;
	uint64_t *gen;
	size_t map_size;
	int fd;
	int owner;             /* created here (may write) vs attached (read only) */
	int mb_cmd;            /* membarrier command for flush, 0 if unavailable */
	struct rt_clock clock;
	char *shm_name;        /* creator of a named object: unlinked on destroy */
};

static inline struct ringtrace_page_header *rt_page(const struct ringtrace_rb *rb, uint32_t i)
{
	return (struct ringtrace_page_header *)(rb->pages + (size_t)i * rb->page_size);
}

static inline uint32_t rt_page_index(const struct ringtrace_rb *rb, const void *p)
{
	return (uint32_t)(((const char *)p - rb->pages) / rb->page_size);
}

#define RT_LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define RT_LOAD_ACQ(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define RT_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define RT_STORE_REL(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

/* ring.c, used by read.c */
RT_HIDDEN int rt_fifo_pop(struct ringtrace_rb *rb, uint32_t *page);
RT_HIDDEN void rt_page_finalize(struct ringtrace_rb *rb, struct ringtrace_page_header *h,
				uint32_t commit, uint32_t flags);

#endif
