/*
 * ringtrace/ring.h - the lockless ring buffer.
 *
 * A ring buffer is a fixed pool of pages in shared memory. Each writing
 * thread owns one page at a time and fills it with variable-length events;
 * a full page is published to a FIFO from which readers consume it whole.
 * See src/ring/ring_internal.h for the algorithm and docs/format.md for the
 * layout.
 *
 * Contracts (what a caller may rely on):
 *
 *  - Writers never block, never take a lock, never make a system call and
 *    never wait for a reader. The common path of an event does no atomic
 *    read-modify-write; one happens per page switch.
 *  - ringtrace_rb_reserve()/ringtrace_rb_commit() and ringtrace_rb_write()
 *    are async-signal-safe. An event written from a signal handler that
 *    interrupted a write of the same thread to the same buffer is dropped
 *    and counted as missed; it never corrupts either event.
 *  - Memory ordering: everything a writer stored into an event before its
 *    commit is visible to a reader that obtains the event through any read
 *    interface of this header (page, iterator, snapshot). Readers need no
 *    further fence.
 *  - Read interfaces may be used from any one thread at a time per buffer
 *    (one consumer). Stats and snapshots may be taken from any thread at
 *    any time, concurrently with the consumer.
 *  - Every event offered to the buffer is accounted exactly once:
 *      hit + missed == written,
 *      hit == read + overrun + entries (still in the buffer).
 *  - Writer state is per (thread, buffer). A thread that exits publishes
 *    its last page and frees its writer slot. After fork() the child starts
 *    with no writer state: its first event claims a fresh slot and page.
 *    A child of _Fork() or vfork(), which run no fork handlers, must not
 *    record before it execs: it would write through the copy of its
 *    parent thread's writer state, into the parent's page.
 *
 * Return codes: 0 on success, a negative RINGTRACE_E* on error
 * (ringtrace/error.h); ringtrace_last_error() gives a sentence naming what
 * was wrong. Pages are decoded with the page cursor of ringtrace/format.h.
 */
#ifndef RINGTRACE_RING_H
#define RINGTRACE_RING_H

#include <stddef.h>
#include <stdint.h>

#include "ringtrace/error.h"
#include "ringtrace/format.h"

#ifdef __cplusplus
extern "C" {
#endif

enum ringtrace_rb_mode {
	RINGTRACE_RB_DISCARD = 0,   /* full pool: new events are dropped (missed) */
	RINGTRACE_RB_OVERWRITE = 1, /* full pool: the oldest page is recycled (overrun) */
};

#define RINGTRACE_RB_MIN_PAGE_SIZE 4096u
#define RINGTRACE_RB_MAX_PAGE_SIZE (1u << 20)
#define RINGTRACE_RB_DEFAULT_PAGE_SIZE (64u << 10)
#define RINGTRACE_RB_DEFAULT_POOL_SIZE (16u << 20)
#define RINGTRACE_RB_MIN_PAGES 2u
#define RINGTRACE_RB_MAX_PAGES (1u << 20)
#define RINGTRACE_RB_DEFAULT_MAX_WRITERS 128u
#define RINGTRACE_RB_MAX_WRITERS 65535u
#define RINGTRACE_RB_DEFAULT_FLUSH_MS 100u
/* How many buffers one process may have open at once. */
#define RINGTRACE_RB_MAX_OPEN 16u

struct ringtrace_rb_config {
	size_t page_size;     /* power of two, 4 KiB .. 1 MiB */
	size_t pool_size;     /* bytes of pages; a multiple of page_size, 2 .. 2^20 pages */
	uint32_t max_writers; /* writer slots: threads writing at once, 1 .. 65535 */
	enum ringtrace_rb_mode mode;
	uint32_t flush_interval_ms; /* a page idle this long is flushed to readers, 1 .. 60000 */
	const char *shm_name;       /* NULL: anonymous memfd; else a POSIX shm name ("/x") */
};

/* Fill a configuration with the defaults. */
void ringtrace_rb_config_init(struct ringtrace_rb_config *cfg);

typedef struct ringtrace_rb ringtrace_rb;

/*
 * Create a buffer: allocates the whole pool once and faults every page in,
 * writable, so that no event ever takes a page fault (this costs a few ms
 * per 100 MiB here, once).
 */
int ringtrace_rb_create(const struct ringtrace_rb_config *cfg, ringtrace_rb **out);
/*
 * Map a buffer created by another process, to read it (by page, by event,
 * snapshot, stats). fd: the creator's ringtrace_rb_fd() (passed over a unix
 * socket, inherited, or opened as /proc/PID/fd/N). A reader attached this
 * way must not write (its events are refused and counted as missed).
 *
 * The pool is untrusted input (anyone who can write it can write anything
 * there; docs/format.md, "What a reader trusts"): its geometry is read
 * once, here, and checked against the object's size (-RINGTRACE_ECORRUPT
 * naming the field otherwise); every index and sequence read later is
 * checked against it; every loop over the pool is bounded; an object
 * shrunk under the reader makes the calls fail (-RINGTRACE_ECORRUPT, or
 * NULL with ringtrace_last_error() set) instead of raising SIGBUS (a
 * process-wide SIGBUS handler is installed at the first attach, passing
 * on every fault outside an attached pool to the handler it replaced).
 * Pages are handed out as private copies (ringtrace_rb_get_page,
 * ringtrace_rb_page_at), so that reading them cannot fault either.
 */
int ringtrace_rb_attach_fd(int fd, ringtrace_rb **out);
int ringtrace_rb_attach_name(const char *shm_name, ringtrace_rb **out);
/* Unmap (and, for the creator, free) the buffer. No thread may be writing. */
void ringtrace_rb_destroy(ringtrace_rb *rb);
/*
 * 0, or -RINGTRACE_ECORRUPT (ringtrace_last_error() naming what was found,
 * and where) once this handle found the pool damaged: an index, sequence
 * or geometry field that failed its check, a loop over the pool that went
 * round its bound, or (attached) the object shrunk under it. From then on
 * this process's writers refuse every event (counted as missed), and a
 * creating process said so once on stderr; readers go on with what still
 * passes every check (each page and FIFO cell is checked on its own).
 * Process-local: nothing in the pool says it.
 */
int ringtrace_rb_damaged(const ringtrace_rb *rb);
/* The shared memory file descriptor. */
int ringtrace_rb_fd(const ringtrace_rb *rb);
size_t ringtrace_rb_page_size(const ringtrace_rb *rb);
uint32_t ringtrace_rb_page_count(const ringtrace_rb *rb);
enum ringtrace_rb_mode ringtrace_rb_mode(const ringtrace_rb *rb);
/*
 * The pool's identity: 16 random bytes (an RFC 4122 version 4 UUID) drawn
 * when it was created, never zero; an attached handle's copy was read once
 * at attach. The recorder writes it into the trace's metadata, so that a
 * trace and its pool can be matched (`ringtrace recover`).
 */
void ringtrace_rb_uuid(const ringtrace_rb *rb, uint8_t uuid[16]);

/* ---- writing ------------------------------------------------------------ */

/*
 * Reserve space for an event of `len` payload bytes with event id `id`
 * (0 .. RINGTRACE_EV_MAX_ID) and return a pointer to the payload, aligned
 * to 8 bytes, or NULL if the event is dropped (counted as missed: no page,
 * nested in a signal handler, or an invalid id/len - see
 * ringtrace_last_error() is NOT set on this path, to keep it cheap).
 * The timestamp is taken here. Exactly one ringtrace_rb_commit() must
 * follow a non-NULL reserve, on the same thread, before the next reserve.
 * The code between them must not leave it (longjmp, a C++ exception,
 * thread cancellation): the thread would stay inside its write, every
 * later event of it be dropped as nested, and no flush could take its
 * page, until it releases its writer or exits.
 */
void *ringtrace_rb_reserve(ringtrace_rb *rb, uint32_t id, size_t len);
void ringtrace_rb_commit(ringtrace_rb *rb);
/*
 * Reserve, copy `len` bytes, commit. 0, or the reason the event was dropped
 * (and counted as missed): -RINGTRACE_ENESTED (inside a write of this
 * thread, from a signal handler), -RINGTRACE_E2BIG, -RINGTRACE_EINVAL (id),
 * -RINGTRACE_ENOSPC (no page or writer slot).
 */
int ringtrace_rb_write(ringtrace_rb *rb, uint32_t id, const void *data, size_t len);
/* Largest payload this buffer accepts. */
size_t ringtrace_rb_max_payload(const ringtrace_rb *rb);
/*
 * Publish this thread's page and release its writer slot now (done
 * automatically when the thread exits). Not async-signal-safe: never call
 * it from a signal handler (it may interrupt this thread's own write or
 * release); events written from handlers while it runs are dropped and
 * counted.
 */
void ringtrace_rb_writer_release(ringtrace_rb *rb);
/*
 * Make the calling thread a writer of rb now (claim its writer slot), so
 * that its first event costs what the next ones do instead of the slot
 * claim's tens of microseconds (system calls, cold memory). Optional:
 * the first reserve does it otherwise. The slot is the thread's until it
 * exits or calls ringtrace_rb_writer_release(), events or not. No page is
 * taken (the first event takes one), nothing is counted. 0 (also if the
 * thread already writes here), -RINGTRACE_ENOSPC (every writer slot is
 * taken), -RINGTRACE_EINVAL (a handle that only reads),
 * -RINGTRACE_ECORRUPT (the buffer was found damaged). Not for signal
 * handlers.
 */
int ringtrace_rb_prepare_thread(ringtrace_rb *rb);

/* ---- consuming by page -------------------------------------------------- */

/*
 * Take the oldest published page, or NULL if none (or if the buffer is
 * damaged beyond what can be read: ringtrace_rb_damaged() says). The page
 * is the caller's (never recycled under it) until ringtrace_rb_put_page:
 * in the creating process the page itself (no copy), in an attached
 * reader a private copy. Its header is final (content_size, events,
 * timestamp_end are set) and passed ringtrace_page_check(); a published
 * page whose header does not is skipped, given back and counted
 * (ringtrace_rb_stats.pages_skipped). Calls ringtrace_rb_flush() by
 * itself when no page is ready and a flush interval has passed.
 */
const struct ringtrace_page_header *ringtrace_rb_get_page(ringtrace_rb *rb);
/*
 * For recovery tools, on a pool no process uses any more (its program
 * died): the pages that are in no list (not free, not queued, not a
 * writer's current page), in which a dead reader or flusher left pages it
 * had taken: the recorder's page being saved, a page being handed over.
 * Up to max indices into out; returns how many there are. Use
 * ringtrace_rb_page_at() to read them (NULL if the index is out of range).
 */
uint32_t ringtrace_rb_orphan_pages(const ringtrace_rb *rb, uint32_t *out, uint32_t max);
/* (An attached reader gets a private copy of the page, valid until the
 * handle is destroyed; the caller checks it with ringtrace_page_check.) */
const struct ringtrace_page_header *ringtrace_rb_page_at(const ringtrace_rb *rb, uint32_t index);
/*
 * An orphan page (a copy of it, in the caller's memory) whose header was
 * never finalized: taken from a writer by a flush or reclaim that died
 * before it filled in events, content_size and timestamp_end. Finalized
 * from its commit offset, as the flush would have (every event under it
 * checked by the decoder; flag RINGTRACE_PAGE_F_FLUSHED). Returns the
 * events it now holds, or 0 (not such a page: left unchanged).
 */
uint32_t ringtrace_page_finalize_orphan(struct ringtrace_page_header *page, size_t page_size);
void ringtrace_rb_put_page(ringtrace_rb *rb, const struct ringtrace_page_header *page);

/*
 * Make committed events in the partly filled pages of writers readable.
 * A writer whose page began more than `min_age_ms` ago is flushed: if it is
 * idle its page is taken from it (it gets a new one at its next event);
 * if it is in the middle of an event, it is asked to publish at its next
 * event. Writers are never stopped. A writer whose owner no longer exists
 * (a process that crashed or _exited, a thread that ended without
 * retiring, see ringtrace_rb_writer_release) has its page published
 * whatever its age and its slot freed for other threads. Returns the
 * number of pages made readable, or a negative error.
 */
int ringtrace_rb_flush(ringtrace_rb *rb, uint32_t min_age_ms);

/*
 * The number of writer slots whose owner is alive as a flush judges it (a
 * thread of this process by its tid, another process by its pid when it
 * is in our pid namespace; one in another namespace, or with no pid, is
 * judged alive), and the pid and tid of the first (either may be NULL).
 * Slots of owners that are gone are not counted: a flush reclaims them.
 * A negative error if the pool is damaged.
 */
int ringtrace_rb_live_writers(ringtrace_rb *rb, uint32_t *pid, uint32_t *tid);

/*
 * Re-read the names of the writer threads (for threads renamed after their
 * first event, from /proc); later pages carry the new name. Returns how
 * many were read. ringtrace_rb_get_page() calls it with its periodic
 * flush; writers never make this system call.
 */
int ringtrace_rb_refresh_comm(ringtrace_rb *rb);

/* ---- consuming by event ------------------------------------------------- */

typedef struct ringtrace_rb_reader ringtrace_rb_reader;

/*
 * An iterator that consumes the buffer event by event: it takes every page
 * that is ready (up to a bound), merges their events by timestamp (ties in
 * stream order) and gives the pages back once read. Within one writer the
 * order is exact; across writers, events are in time order within each
 * batch of pages taken together.
 */
int ringtrace_rb_reader_open(ringtrace_rb *rb, ringtrace_rb_reader **out);
/* 1 and *ev filled; 0 if nothing is readable now; negative on error. */
int ringtrace_rb_reader_next(ringtrace_rb_reader *r, struct ringtrace_event *ev);
void ringtrace_rb_reader_close(ringtrace_rb_reader *r);

/* ---- non-consuming snapshot ---------------------------------------------- */

typedef struct ringtrace_snapshot ringtrace_snapshot;

/*
 * Copy everything currently in the buffer (published pages and the
 * committed part of every writer's current page) without consuming it and
 * without stopping writers. A page recycled by a writer while it was being
 * copied is left out and counted in `pages_lost`.
 */
int ringtrace_rb_snapshot(ringtrace_rb *rb, ringtrace_snapshot **out);
uint32_t ringtrace_snapshot_page_count(const ringtrace_snapshot *s);
const struct ringtrace_page_header *ringtrace_snapshot_page(const ringtrace_snapshot *s,
							    uint32_t i);
uint32_t ringtrace_snapshot_pages_lost(const ringtrace_snapshot *s);
/* Events of the snapshot merged by timestamp: 1, 0 at the end, negative on error. */
int ringtrace_snapshot_next(ringtrace_snapshot *s, struct ringtrace_event *ev);
void ringtrace_snapshot_free(ringtrace_snapshot *s);

/* ---- accounting --------------------------------------------------------- */

struct ringtrace_rb_stats {
	uint64_t entries; /* events still in the buffer (incl. writers' current pages) */
	uint64_t hit;     /* events committed */
	uint64_t missed;  /* events dropped: no page, no slot, nested, too big */
	uint64_t overrun; /* committed events lost to page recycling (overwrite) */
	uint64_t read;    /* events consumed by readers (pages handed out) */
	uint64_t pages_published;
	uint64_t pages_flushed; /* of which taken from idle writers */
	uint32_t writers_active;
	uint32_t pages_free;
	/* pages this handle's readers skipped: their header failed its checks */
	uint64_t pages_skipped;
	/* 1 once this handle found the pool damaged (ringtrace_rb_damaged) */
	uint32_t damaged;
};

struct ringtrace_rb_writer_stats {
	uint32_t slot;
	uint32_t tid;
	uint64_t stream; /* stream_instance_id */
	uint64_t entries, hit, missed, overrun, read;
	uint64_t pages; /* pages published */
};

/*
 * 0, or -RINGTRACE_ECORRUPT if the buffer is damaged: then *st is still
 * filled as far as the counters can be read, the events this process's
 * writers refused since counted in `missed`.
 */
int ringtrace_rb_get_stats(const ringtrace_rb *rb, struct ringtrace_rb_stats *st);
/*
 * Stats of the writers active now: fills up to `max` entries, returns how
 * many writers are active (may be more than max).
 */
int ringtrace_rb_get_writer_stats(const ringtrace_rb *rb, struct ringtrace_rb_writer_stats *out,
				  uint32_t max);

/*
 * Exact per-stream accounting: the streams whose drops no page reports
 * (events dropped after their last page, when the pool was full, or
 * during it), each with the stream's final cumulative drop count (what a
 * next page's events_discarded would have said). The writers of this
 * process that retired so (a creating handle keeps them until it is
 * destroyed), then the active writers of the pool. Fills up to `max`,
 * returns how many there are, or a negative error; *lost (if not NULL):
 * retired streams that could not be kept (more than 65536).
 */
struct ringtrace_rb_stream_drops {
	uint64_t stream; /* stream_instance_id */
	uint64_t dropped;
	uint32_t tid; /* the writer's thread */
};
int ringtrace_rb_stream_drops(const ringtrace_rb *rb, struct ringtrace_rb_stream_drops *out,
			      uint32_t max, uint64_t *lost);

/* ---- time --------------------------------------------------------------- */

/* Ticks now, in the buffer's clock (TSC, or CLOCK_MONOTONIC nanoseconds). */
uint64_t ringtrace_rb_now(const ringtrace_rb *rb);
/* Ticks to nanoseconds of CLOCK_MONOTONIC. */
uint64_t ringtrace_rb_ticks_to_ns(const ringtrace_rb *rb, uint64_t ticks);
/* Tick frequency in Hz, and whether the clock is the TSC. */
uint64_t ringtrace_rb_clock_freq(const ringtrace_rb *rb);
int ringtrace_rb_clock_is_tsc(const ringtrace_rb *rb);
/*
 * The calibration point the conversion is anchored at: ticks and
 * CLOCK_MONOTONIC nanoseconds read together (both 0 for the monotonic
 * clock, whose ticks are nanoseconds). With the frequency it is the whole
 * conversion: ns = base_ns + (ticks - base_ticks) * 10^9 / freq.
 */
void ringtrace_rb_clock_base(const ringtrace_rb *rb, uint64_t *base_ticks, uint64_t *base_ns);

#ifdef __cplusplus
}
#endif
#endif /* RINGTRACE_RING_H */
