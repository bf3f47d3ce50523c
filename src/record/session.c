/*
 * The in-process recorder: a ring buffer, a consumer thread that appends
 * pages to per-stream files, and the metadata written at the end.
 *
 * Pages are written whole and unchanged (a page is a CTF packet), with
 * one write(2) each, to the file of their writer's stream; the consumer
 * keeps a bounded number of those files open (a program with thousands of
 * short-lived threads has thousands of streams) and closes a stream's file
 * once its last page is written.
 *
 * Stopping is ordered so that nothing is lost: detach the buffer from the
 * events (after which no thread writes into it), ask every writer's
 * partial page out (flush), drain the FIFO into the files, write the
 * metadata last (a library loaded late has registered its events by then).
 *
 * A page that cannot be written (the disk full, an I/O error) is cut off
 * the file again and counted, with its events, as unwritten (the
 * metadata's `unwritten` lines); the consumer goes on taking pages from
 * the buffer (the program never waits), tries the disk again every
 * RT_RETRY_NS and resumes when a write works. Room for the metadata is
 * kept aside in the directory (RT_CTF_RESERVE), so that the metadata that
 * says so can still be written on a full disk.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "event/event_api.h"
#include "record/record_internal.h"
#include "ring/ring_api.h"

/* Read-side nodes mapped at session start for threads still to come
 * (rt_rcu_spare_nodes): 8 KiB each, kept for the process's life. */
#define RT_SESSION_SPARE_NODES 4u

static struct {
	pthread_mutex_t lock;
	int active;
	ringtrace_rb *rb;
	struct rt_tdir out; /* the output directory: open, locked (src/base/tdir.c) */
	const char *dir;    /* out.path: for messages */
	long group;         /* the group the trace is shared with, -1 none */
	enum ringtrace_rb_mode mode;
	pthread_t consumer;
	int stop; /* consumer: drain and exit */
	struct rt_file files[RT_MAX_OPEN_FILES];
	uint64_t use_clock;
	uint64_t pages, bytes, t0_ns;
	/* CLOCK_REALTIME - CLOCK_MONOTONIC at the start: every metadata of
	 * the session (live, final, snapshots) says this one */
	int64_t realtime_offset;
	int write_errno;     /* the disk fails (errno): pages are counted, not written */
	char write_err[256]; /* the message of the first failure */
	uint64_t retry_ns;   /* when the disk is tried again */
	unsigned nmsg;       /* messages about failing and resuming so far */
	/* the pages not written, by stream (sorted): the `unwritten` lines;
	 * and what else the recorder keeps of each of these streams */
	struct ringtrace_trace_unwritten *uw;
	struct rt_uw_more {
		/* the stream's drops as its last page not written said
		 * (events_discarded): no page written may say them */
		uint64_t discarded;
	} * uw_more;
	struct ringtrace_trace_drops *uw_drops; /* (for the metadata: rt_meta_write) */
	uint32_t nuw, cap_uw;
	int uw_dirty;                        /* counted since the live metadata said so */
	uint64_t uw_meta_ns;                 /* the next live metadata that says so, not before */
	uint64_t reserve_size, reserve_want; /* the room kept for the metadata */
	uint64_t reserve_retry_ns;           /* not made again before (out of descriptors) */
	int from_env;
	pid_t pid; /* the process the session records in */
	int stopping;
	unsigned nsnap;
	uint32_t meta_events, meta_sites;  /* registry size at the last live metadata */
	uint32_t meta_tails;               /* retired streams' drops beyond their pages, then */
	struct ringtrace_trace_stats last; /* the counts of the last session that stopped */
	uint32_t poll_ns; /* the consumer's sleep in discard mode (rt_poll_adapt) */
	uint64_t gen;     /* the running session's number (rt_session_stop_if) */
} S = {.lock = PTHREAD_MUTEX_INITIALIZER, .out = {.fd = -1, .parent = -1}};

/* Set by the SIGUSR2 handler, taken by the consumer thread (atomic: they run
 * on different threads; lock-free atomics are async-signal-safe). */
static int rt_snapshot_requested;
/* 1 while a session records (read by snapshot triggers, without the lock);
 * rt_wake is the futex word the consumer sleeps on, so that a trigger's
 * snapshot starts at once instead of at the next poll. */
static int rt_session_live;
static uint32_t rt_wake;

static void rt_consumer_wake(void)
{
	__atomic_fetch_add(&rt_wake, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &rt_wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* For snapshot triggers, from tracepoints: async-signal-safe (an atomic
 * store and a futex wake). 0 if no session is recording. */
int rt_session_request_snapshot(void)
{
	if (!__atomic_load_n(&rt_session_live, __ATOMIC_ACQUIRE))
		return 0;
	__atomic_store_n(&rt_snapshot_requested, 1, __ATOMIC_RELEASE);
	rt_consumer_wake();
	return 1;
}
/* SIGINT/SIGTERM received by a program traced from the environment: the
 * consumer saves the trace, then lets the signal do what it would have. */
static int rt_exit_signal;
static int rt_pending_signal;

static uint64_t rt_now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* While the disk fails, a page is tried at most this often; the live
 * metadata (with the counts of pages not written) rewritten at most this
 * often. */
#define RT_RETRY_NS 100000000ull
#define RT_FAIL_META_NS 1000000000ull
/* The room kept for the final metadata: at least this, and twice the
 * last metadata's size. */
#define RT_RESERVE_MIN (256u << 10)
/* Messages about the disk failing and resuming, at most (then only the
 * end's summary). */
#define RT_MAX_DISK_MSGS 8u

/* The unwritten entry of a stream (made if `make`): its index, or -1. */
static int64_t rt_uw_find(uint64_t stream, int make)
{
	uint32_t lo = 0, hi = S.nuw;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (S.uw[mid].stream == stream)
			return mid;
		if (S.uw[mid].stream < stream)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!make)
		return -1;
	if (S.nuw == S.cap_uw) {
		uint32_t cap = S.cap_uw ? S.cap_uw * 2 : 16;
		void *a = realloc(S.uw, cap * sizeof(*S.uw));
		if (a)
			S.uw = a;
		void *b = a ? realloc(S.uw_more, cap * sizeof(*S.uw_more)) : NULL;
		if (b)
			S.uw_more = b;
		void *c = b ? realloc(S.uw_drops, cap * sizeof(*S.uw_drops)) : NULL;
		if (!c)
			return -1;
		S.uw_drops = c;
		S.cap_uw = cap;
	}
	memmove(&S.uw[lo + 1], &S.uw[lo], (S.nuw - lo) * sizeof(*S.uw));
	memmove(&S.uw_more[lo + 1], &S.uw_more[lo], (S.nuw - lo) * sizeof(*S.uw_more));
	memset(&S.uw[lo], 0, sizeof(*S.uw));
	S.uw[lo].stream = stream;
	S.uw_more[lo].discarded = 0;
	S.nuw++;
	return lo;
}

static const char *rt_errno_name(int e)
{
	const char *n = strerrorname_np(e);
	return n ? n : "EUNKNOWN"; /* (an error glibc has no name for) */
}

/* Page p not written (errno e): counted in its stream's line. */
static void rt_unwritten_add(const struct ringtrace_page_header *p, int e)
{
	int64_t k = rt_uw_find(p->stream_instance_id, 1);
	if (k < 0) {
		if (S.nmsg++ < RT_MAX_DISK_MSGS)
			fprintf(stderr,
				"ringtrace: out of memory: %u events of stream %llu not written "
				"and not counted\n",
				p->events, (unsigned long long)p->stream_instance_id);
		return;
	}
	struct ringtrace_trace_unwritten *u = &S.uw[k];
	if (!u->reason)
		u->reason = rt_errno_name(e);
	u->events += p->events;
	u->pages++;
	if (p->events_before + p->events > u->end)
		u->end = p->events_before + p->events;
	u->tid = p->tid;
	if (p->events_discarded > S.uw_more[k].discarded)
		S.uw_more[k].discarded = p->events_discarded;
	S.uw_dirty = 1;
}

/* The room for the metadata made whole again: 0, or -1 if there is no
 * room for it (then no page is written either: the metadata first). */
static int rt_reserve_restore(void)
{
	if (rt_now_ns() < S.reserve_retry_ns)
		return 0;
	int e = rt_reserve_make(&S.out, S.reserve_want);
	if (e == -EMFILE || e == -ENFILE) {
		/* out of descriptors (the program's): ours go first */
		rt_close_all(S.files);
		e = rt_reserve_make(&S.out, S.reserve_want);
	}
	if (e == 0) {
		S.reserve_size = S.reserve_want;
		return 0;
	}
	S.reserve_size = 0;
	if (e == -ENOSPC || e == -EDQUOT)
		return -1;
	if (e == -EMFILE || e == -ENFILE) {
		/* The program holds every descriptor for now: not a file
		 * system that cannot keep the room. The pages go on; the room
		 * is made at a page RT_RETRY_NS later. */
		S.reserve_retry_ns = rt_now_ns() + RT_RETRY_NS;
		if (S.nmsg++ < RT_MAX_DISK_MSGS)
			fprintf(stderr,
				"ringtrace: cannot keep room for the metadata in %s now: %s (tried "
				"again every %u ms)\n",
				S.dir, strerror(-e), (unsigned)(RT_RETRY_NS / 1000000));
		return 0;
	}
	/* a directory or file system where it cannot be kept at all: the
	 * pages go on without it */
	fprintf(stderr,
		"ringtrace: cannot keep room for the metadata in %s: %s (a full disk may then "
		"leave the trace without its final metadata)\n",
		S.dir, strerror(-e));
	S.reserve_want = 0;
	return 0;
}

/* A page not written (errno e; what: the message): the disk fails from now
 * on, tried again in RT_RETRY_NS. */
static void rt_disk_failed(const char *what, int e)
{
	S.retry_ns = rt_now_ns() + RT_RETRY_NS;
	if (S.write_errno)
		return;
	S.write_errno = e;
	S.uw_meta_ns = 0; /* the live metadata says so at once */
	if (!S.write_err[0])
		snprintf(S.write_err, sizeof(S.write_err), "%s", what);
	if (S.nmsg++ < RT_MAX_DISK_MSGS)
		fprintf(stderr,
			"ringtrace: %s: pages are not written until writing works again (tried "
			"every %u ms); their events are counted as unwritten\n",
			what, (unsigned)(RT_RETRY_NS / 1000000));
}

/* The reasons pages were not written, once each ("ENOSPC, EIO"). */
static const char *rt_uw_reasons(void)
{
	static char buf[128];
	const char *seen[8];
	unsigned ns = 0;
	size_t n = 0;
	buf[0] = 0;
	for (uint32_t i = 0; i < S.nuw && ns < 8; i++) {
		unsigned j = 0;
		while (j < ns && strcmp(seen[j], S.uw[i].reason) != 0)
			j++;
		if (j < ns)
			continue;
		seen[ns++] = S.uw[i].reason;
		int w = snprintf(buf + n, sizeof(buf) - n, "%s%s", n ? ", " : "", S.uw[i].reason);
		if (w < 0 || (size_t)w >= sizeof(buf) - n)
			break;
		n += (size_t)w;
	}
	return buf;
}

static void rt_uw_totals(uint64_t *events, uint64_t *pages)
{
	*events = *pages = 0;
	for (uint32_t i = 0; i < S.nuw; i++) {
		*events += S.uw[i].events;
		*pages += S.uw[i].pages;
	}
}

/*
 * A stream whose write failed before: its file cut to whole pages, if the
 * cut after that failure (rt_stream_cut) failed too. 0, or the errno.
 */
static int rt_stream_whole(int fd, size_t ps)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return errno;
	if (st.st_size % (off_t)ps && ftruncate(fd, st.st_size - st.st_size % (off_t)ps) < 0)
		return errno;
	return 0;
}

/* Write page p to its stream's file: 0, or the errno why it is not written now. */
static int rt_try_page(const struct ringtrace_page_header *p, size_t ps)
{
	char what[300];
	uint64_t id = p->stream_instance_id;
	if (S.write_errno || S.reserve_size < S.reserve_want) {
		if (S.write_errno && rt_now_ns() < S.retry_ns)
			return S.write_errno;
		/* the room for the metadata before any page: pages written
		 * into the space it needs would leave the trace without it */
		if (S.reserve_size < S.reserve_want && rt_reserve_restore() < 0) {
			snprintf(what, sizeof(what), "keeping room for the metadata in %s: %s",
				 S.dir, strerror(ENOSPC));
			rt_disk_failed(what, ENOSPC);
			return S.write_errno;
		}
	}
	errno = 0;
	int fd = rt_stream_fd(&S.out, S.files, &S.use_clock, id);
	if (fd < 0) {
		int e = errno ? errno : EIO;
		/* the message names the file and what is wrong with it */
		rt_disk_failed(ringtrace_last_error(), e);
		return e;
	}
	int e = rt_uw_find(id, 0) >= 0 ? rt_stream_whole(fd, ps) : 0;
	if (e) {
		snprintf(what, sizeof(what), "cutting %s/stream_%llu back to whole pages: %s",
			 S.dir, (unsigned long long)id, strerror(e));
		rt_disk_failed(what, e);
		return e;
	}
	int w = rt_write_all(fd, p, ps);
	if (w < 0) {
		/* what went in of the page comes out again (a CTF reader
		 * refuses a stream that ends inside a packet; an empty file
		 * is removed) */
		rt_stream_cut(&S.out, S.files, id, ps);
		snprintf(what, sizeof(what), "writing %s/stream_%llu: %s", S.dir,
			 (unsigned long long)id, strerror(-w));
		rt_disk_failed(what, -w);
		return -w;
	}
	if (S.write_errno) {
		S.write_errno = 0;
		uint64_t ev, pg;
		rt_uw_totals(&ev, &pg);
		if (S.nmsg++ < RT_MAX_DISK_MSGS)
			fprintf(stderr,
				"ringtrace: writing to %s resumed (%llu events in %llu pages not "
				"written so far, counted as unwritten)\n",
				S.dir, (unsigned long long)ev, (unsigned long long)pg);
	}
	return 0;
}

/* Referenced by the registry so that a static link always pulls this file
 * in: RINGTRACE_OUTPUT must work for programs that never call a session
 * function (its constructor lives here). */
static void rt_save_page(const struct ringtrace_page_header *p)
{
	size_t ps = ringtrace_rb_page_size(S.rb);
	int e = rt_try_page(p, ps);
	if (e) {
		rt_unwritten_add(p, e);
	} else {
		__atomic_add_fetch(&S.pages, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&S.bytes, ps, __ATOMIC_RELAXED);
	}
	if (p->flags & RINGTRACE_PAGE_F_LAST)
		rt_stream_close(S.files, p->stream_instance_id);
}

/*
 * The metadata with the recorder's `unwritten` lines; when there is no
 * room for it, in the room kept for it (released first).
 */
static int rt_meta_write(const struct ringtrace_trace_stats *st)
{
	const struct rt_tdir *d = &S.out;
	/* Drops only pages not written reported (their events_discarded):
	 * `dropped` lines, merged with the ring's, so that no drop goes
	 * uncounted with the page that said it. */
	struct rt_ctf_extra x = {.unwritten = S.uw,
				 .nunwritten = S.nuw,
				 .drops = S.uw_drops,
				 .realtime_offset = S.realtime_offset,
				 .has_realtime_offset = 1};
	for (uint32_t i = 0; i < S.nuw; i++)
		if (S.uw_more[i].discarded)
			S.uw_drops[x.ndrops++] = (struct ringtrace_trace_drops){
				.stream = S.uw[i].stream,
				.dropped = S.uw_more[i].discarded,
				.tid = S.uw[i].tid};
	errno = 0;
	int err = rt_ctf_write_live(S.rb, d, st, &x);
	if (err < 0 && (errno == EMFILE || errno == ENFILE)) {
		/* out of descriptors (the program's): ours go first, and the
		 * stream files are opened again at their next page */
		rt_close_all(S.files);
		err = rt_ctf_write_live(S.rb, d, st, &x);
	}
	if (err < 0 && S.reserve_size) {
		rt_reserve_release(d);
		S.reserve_size = 0;
		err = rt_ctf_write_live(S.rb, d, st, &x);
	}
	/* the room kept grows with the metadata (made at the next page) */
	struct stat fs;
	if (err == 0 && S.reserve_want &&
	    fstatat(d->fd, "metadata", &fs, AT_SYMLINK_NOFOLLOW) == 0 &&
	    (uint64_t)fs.st_size * 2 > S.reserve_want)
		S.reserve_want = ((uint64_t)fs.st_size * 2 + 65535) & ~(uint64_t)65535;
	return err;
}

static void rt_fill_stats(struct ringtrace_trace_stats *st)
{
	struct ringtrace_rb_stats rs;
	ringtrace_rb_get_stats(S.rb, &rs);
	st->hit = rs.hit;
	st->missed = rs.missed;
	st->overrun = rs.overrun;
	st->read = rs.read;
	st->pages = __atomic_load_n(&S.pages, __ATOMIC_RELAXED);
	st->bytes = __atomic_load_n(&S.bytes, __ATOMIC_RELAXED);
	st->duration_ns = rt_now_ns() - S.t0_ns;
	st->mode = (uint32_t)S.mode;
}

static int rt_snapshot_locked(const struct rt_tdir *sd);
static int rt_stop_from_consumer(void);

/*
 * Keep a `metadata` in the output directory while recording (without the
 * final `stat` lines), rewritten whenever events or printf sites were
 * registered since: if the program dies, the stream files already written
 * and the pages still in the pool (a named one: `ringtrace record` and
 * `ringtrace recover`) can be turned into a complete trace, because the
 * schema of every event they hold is on disk. Also when threads that
 * dropped events after their last page (a full pool) retired since:
 * their `dropped` lines are in this process's memory only (exact
 * per-stream accounting, docs/format.md section 7). At most once a poll.
 * Consumer thread only.
 */
static void rt_live_metadata(void)
{
	uint32_t ne = ringtrace_event_count(), ns = ringtrace_printf_site_count();
	uint32_t nt = rt_rb_retired_tails(S.rb);
	/* pages not written since the last one: the counts on disk at once
	 * when the disk starts failing (a crash then keeps them), then at
	 * most once per RT_FAIL_META_NS */
	int uw = S.uw_dirty && rt_now_ns() >= S.uw_meta_ns;
	if (ne == S.meta_events && ns == S.meta_sites && nt == S.meta_tails && !uw)
		return;
	if (S.uw_dirty) {
		S.uw_dirty = 0;
		S.uw_meta_ns = rt_now_ns() + RT_FAIL_META_NS;
	}
	S.meta_tails = nt;
	/* Tried once per change of the registry: a failure here (the
	 * directory damaged by someone) must not become a loop; the final
	 * metadata at stop is written anyway. */
	S.meta_events = ne;
	S.meta_sites = ns;
	if (rt_meta_write(NULL) < 0)
		fprintf(stderr, "ringtrace: live metadata: %s\n", ringtrace_last_error());
}

/*
 * The consumer's pace in discard mode. Each time the consumer wakes and
 * gives pages back, the free list's head and links are written on the
 * consumer's CPU, and a writer's next page switch reads them from there:
 * a switch that follows the consumer's give-backs takes several times as
 * long as one that follows none (bench/probes/handover.c shows it). So
 * the consumer
 *
 *  - gives a wake's pages back together, after it has saved them, rather
 *    than one by one while the writers switch pages (a burst of a few
 *    microseconds instead of one spread over the whole drain): a writer
 *    pays for the consumer's lines once a wake, not once a page;
 *  - wakes less often when the pool has room to spare: the sleep doubles
 *    (up to RT_POLL_MAX_NS, and never longer than the pool takes to fill
 *    at RT_POLL_FILL_BYTES_PER_NS) while a wake finds fewer than 1/32 of
 *    the pool's pages, and halves (down to RT_POLL_MIN_NS) when one finds
 *    more than 1/8.
 *
 * A wake holds at most rt_batch_max() pages (1/8 of the pool, at most
 * RT_BATCH_MAX) before it gives them back, so the writers always have
 * most of the pool. A held page is saved already: a crash loses nothing
 * of it. A snapshot request or a stop wakes the consumer at once
 * (rt_consumer_wake), whatever the sleep.
 */
#define RT_BATCH_MAX 64u
#define RT_POLL_MIN_NS 1000000u
#define RT_POLL_MAX_NS 8000000u
#define RT_POLL_FILL_BYTES_PER_NS \
	2u /* 2 GB/s: a pool filled faster than this needs a bigger pool */

static unsigned rt_batch_max(void)
{
	unsigned n = ringtrace_rb_page_count(S.rb) / 8;
	return n < 1 ? 1 : n > RT_BATCH_MAX ? RT_BATCH_MAX : n;
}

/* Take, save and give back up to rt_batch_max() pages; how many. */
static unsigned rt_drain_batch(void)
{
	const struct ringtrace_page_header *held[RT_BATCH_MAX];
	unsigned max = rt_batch_max(), n = 0;
	const struct ringtrace_page_header *p;
	while (n < max && (p = ringtrace_rb_get_page(S.rb)) != NULL) {
		rt_save_page(p);
		held[n++] = p;
	}
	for (unsigned i = 0; i < n; i++)
		ringtrace_rb_put_page(S.rb, held[i]);
	return n;
}

/* Every page waiting (at stop, after the last flush). */
static void rt_drain(void)
{
	while (rt_drain_batch() > 0)
		;
}

/* The next sleep in discard mode, from the pages the last wake found. */
static long rt_poll_adapt(unsigned found)
{
	uint64_t np = ringtrace_rb_page_count(S.rb);
	uint64_t cap = np * ringtrace_rb_page_size(S.rb) / RT_POLL_FILL_BYTES_PER_NS;
	if (cap > RT_POLL_MAX_NS)
		cap = RT_POLL_MAX_NS;
	if (cap < RT_POLL_MIN_NS)
		cap = RT_POLL_MIN_NS;
	if ((uint64_t)found * 8 > np)
		S.poll_ns /= 2;
	else if ((uint64_t)found * 32 < np)
		S.poll_ns *= 2;
	if (S.poll_ns < RT_POLL_MIN_NS)
		S.poll_ns = RT_POLL_MIN_NS;
	if (S.poll_ns > cap)
		S.poll_ns = (uint32_t)cap;
	return (long)S.poll_ns;
}

static void *rt_consumer(void *arg)
{
	(void)arg;
	unsigned found = 0; /* pages taken since the last sleep */
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals are the program's business */
	pthread_setname_np(pthread_self(), "ringtrace-rec");
	/* The room for the metadata, first (here rather than in the
	 * program's thread that starts the session: it is the recorder's
	 * work). On a disk full already it is made before the first page
	 * is written (rt_try_page). */
	(void)rt_reserve_restore();
	for (;;) {
		rt_live_metadata();
		if (__atomic_exchange_n(&rt_snapshot_requested, 0, __ATOMIC_ACQ_REL)) {
			char name[4200], shown[4200];
			struct rt_tdir sd;
			pthread_mutex_lock(&S.lock);
			/* A sibling of the output directory, made through the
			 * parent's descriptor (the program may have chdir'ed, the
			 * path may have changed since). */
			++S.nsnap;
			snprintf(name, sizeof(name), "%s.snapshot-%u", S.out.name, S.nsnap);
			snprintf(shown, sizeof(shown), "%s.snapshot-%u", S.dir, S.nsnap);
			int err = rt_tdir_create(&sd, S.out.parent, name, shown, S.group);
			if (err == 0) {
				err = rt_snapshot_locked(&sd);
				rt_tdir_close(&sd);
				/* (emptied by rt_snapshot_locked: made here, removed) */
				if (err < 0)
					unlinkat(S.out.parent, name, AT_REMOVEDIR);
			}
			if (err < 0)
				fprintf(stderr,
					"ringtrace: snapshot: %s (no snapshot is kept; the recording "
					"goes on)\n",
					ringtrace_last_error());
			else
				fprintf(stderr, "ringtrace: snapshot written to %s\n", shown);
			pthread_mutex_unlock(&S.lock);
		}
		int sig = __atomic_exchange_n(&rt_exit_signal, 0, __ATOMIC_ACQ_REL);
		if (sig) {
			if (rt_stop_from_consumer()) {
				signal(sig, SIG_DFL);
				kill(getpid(), sig);
				return NULL;
			}
			/* A stop is already under way (exit): it re-raises the signal. */
			__atomic_store_n(&rt_pending_signal, sig, __ATOMIC_RELEASE);
		}
		int stop = __atomic_load_n(&S.stop, __ATOMIC_ACQUIRE);
		if (S.mode == RINGTRACE_RB_DISCARD) {
			unsigned n = rt_drain_batch();
			found += n;
			if (n == rt_batch_max())
				continue; /* more may be waiting: around again (snapshots, signals) */
		}
		if (stop)
			break;
		/* (overwrite mode: no pages to save, only snapshots and metadata) */
		struct timespec d = {0, S.mode == RINGTRACE_RB_DISCARD ? rt_poll_adapt(found)
								       : 10000000};
		found = 0;
		uint32_t w = __atomic_load_n(&rt_wake, __ATOMIC_ACQUIRE);
		if (!__atomic_load_n(&rt_snapshot_requested, __ATOMIC_ACQUIRE))
			syscall(SYS_futex, &rt_wake, FUTEX_WAIT_PRIVATE, w, &d, NULL, 0);
	}
	return NULL;
}

void rt_session_deadly_signal(int sig)
{
	__atomic_store_n(&rt_exit_signal, sig, __ATOMIC_RELEASE);
}

void rt_session_sigusr2(int sig)
{
	(void)sig;
	__atomic_store_n(&rt_snapshot_requested, 1, __ATOMIC_RELEASE);
	rt_consumer_wake();
}

void ringtrace_session_config_init(struct ringtrace_session_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->mode = RINGTRACE_RB_DISCARD;
}

int ringtrace_session_start(const struct ringtrace_session_config *cfg)
{
	return rt_session_start(cfg, 0);
}

static int rt_session_begin(const struct ringtrace_session_config *cfg, int cfg_from_env,
			    struct rt_tdir *given, const struct rt_clock *clk,
			    const int64_t *realtime_offset);

int rt_session_start(const struct ringtrace_session_config *cfg, int cfg_from_env)
{
	if (!cfg || !cfg->output_dir || !*cfg->output_dir)
		return rt_error(RINGTRACE_EINVAL, "session_start: an output directory is required");
	return rt_session_begin(cfg, cfg_from_env, NULL, NULL, NULL);
}

int rt_session_start_in(const struct ringtrace_session_config *cfg, struct rt_tdir *dir,
			const struct rt_clock *clk, const int64_t *realtime_offset, uint64_t *gen)
{
	int err = rt_session_begin(cfg, 0, dir, clk, realtime_offset);
	if (err == 0) {
		pthread_mutex_lock(&S.lock);
		*gen = S.gen;
		pthread_mutex_unlock(&S.lock);
	}
	return err;
}

/* given: a trace directory made and checked already (taken over, closed
 * on error); NULL: cfg->output_dir, made here. clk: the clock conversion
 * to declare (rt_rb_use_clock), or NULL for the process's; realtime_offset:
 * the wall clock's offset to declare, or NULL to measure it now. */
static int rt_session_begin(const struct ringtrace_session_config *cfg, int cfg_from_env,
			    struct rt_tdir *given, const struct rt_clock *clk,
			    const int64_t *realtime_offset)
{
	int err;
	pthread_mutex_lock(&S.lock);
	if (S.active) {
		pthread_mutex_unlock(&S.lock);
		if (given)
			rt_tdir_close(given);
		return rt_error(RINGTRACE_EINVAL,
				"session_start: a session is already recording to %s", S.dir);
	}
	S.pid = getpid();
	struct ringtrace_rb_config rc;
	ringtrace_rb_config_init(&rc);
	rc.mode = cfg->mode;
	if (cfg->page_size)
		rc.page_size = cfg->page_size;
	if (cfg->pool_size)
		rc.pool_size = cfg->pool_size;
	if (cfg->max_writers)
		rc.max_writers = cfg->max_writers;
	rc.shm_name = cfg->shm_name;
	long group = -1;
	if (given) {
		S.out = *given;
		given->fd = given->parent = -1; /* (moved: nothing left to close) */
		given->name = given->path = NULL;
		/* its group is the directory's (rt_tdir_adopt): snapshots too */
		if (S.out.file_mode & 0040)
			group = (long)S.out.gid;
	} else {
		if ((err = rt_tdir_group(cfg->group, &group)) < 0)
			goto out;
		/* Made (or an empty one of ours taken) and locked; every file
		 * is opened through its descriptor from now on. */
		if ((err = rt_tdir_create(&S.out, AT_FDCWD, cfg->output_dir, NULL, group)) < 0)
			goto out;
	}
	S.dir = S.out.path;
	S.group = group;
	if ((err = ringtrace_rb_create(&rc, &S.rb)) < 0) {
		rt_tdir_close(&S.out);
		goto out;
	}
	/* (one that does not fit this process's counter is not taken: the
	 * trace then declares the process's own conversion) */
	if (clk)
		(void)rt_rb_use_clock(S.rb, clk);
	if ((err = ringtrace_events_configure(cfg->events ? cfg->events : "*")) < 0 &&
	    err != -RINGTRACE_ENOENT) {
		ringtrace_rb_destroy(S.rb);
		S.rb = NULL;
		rt_tdir_close(&S.out);
		goto out;
	}
	S.mode = cfg->mode;
	S.pages = S.bytes = 0;
	S.write_errno = 0;
	S.write_err[0] = 0;
	S.nmsg = 0;
	S.nuw = 0;
	S.uw_dirty = 0;
	S.reserve_size = 0;
	S.reserve_want = RT_RESERVE_MIN; /* (made by the consumer thread) */
	S.reserve_retry_ns = 0;
	S.stop = 0;
	S.nsnap = 0;
	S.meta_events = S.meta_sites = UINT32_MAX;
	S.meta_tails = 0;
	S.poll_ns = RT_POLL_MIN_NS;
	/* (without a descriptor of its own the recorder could write nothing,
	 * not even the metadata at the end: refused now, said clearly) */
	if ((err = rt_files_init(S.files)) < 0) {
		err = rt_error(
			RINGTRACE_ESYS,
			"cannot keep a descriptor for the trace's files (opening /dev/null): %s%s",
			strerror(-err), err == -EMFILE ? " (RLIMIT_NOFILE)" : "");
		ringtrace_rb_destroy(S.rb);
		S.rb = NULL;
		rt_tdir_close(&S.out);
		S.dir = NULL;
		goto out;
	}
	__atomic_store_n(&rt_snapshot_requested, 0, __ATOMIC_RELAXED);
	S.t0_ns = rt_now_ns();
	S.realtime_offset = realtime_offset ? *realtime_offset : rt_clock_realtime_offset();
	rt_events_set_buffer(S.rb, !cfg_from_env);
	if (pthread_create(&S.consumer, NULL, rt_consumer, NULL) != 0) {
		ringtrace_events_set_buffer(NULL);
		rt_close_all(S.files);
		ringtrace_rb_destroy(S.rb);
		S.rb = NULL;
		rt_tdir_close(&S.out);
		S.dir = NULL;
		err = rt_error(RINGTRACE_ESYS, "session_start: cannot start the consumer thread");
		goto out;
	}
	S.from_env = cfg_from_env;
	S.active = 1;
	S.gen++;
	__atomic_store_n(&rt_session_live, 1, __ATOMIC_RELEASE);
	/*
	 * Most of what a thread's first event costs (its read-side node
	 * mapped: a system call and page faults, tens of microseconds in a
	 * VM), paid here rather than by the first events: the
	 * starting thread's node, and nodes ready for the next few threads.
	 * Not the writer slot (ringtrace_events_prepare_thread does that):
	 * a slot gets its stream number when claimed, and a thread that only
	 * starts the session (the main thread of a program traced with
	 * `ringtrace record`, which may never record) would leave a stream
	 * number without a stream. Claiming the slot is the smaller part
	 * (four system calls).
	 */
	ringtrace_read_unlock(ringtrace_read_lock());
	rt_rcu_spare_nodes(RT_SESSION_SPARE_NODES);
	err = 0;
out:
	pthread_mutex_unlock(&S.lock);
	return err;
}

/* Flush, drain, metadata, free. Lock held, consumer stopped or current. */
static int rt_finish_locked(void)
{
	ringtrace_rb_refresh_comm(S.rb);
	char flush_err[256] = "";            /* (the writers' last pages not taken: said) */
	if (ringtrace_rb_flush(S.rb, 0) < 0) /* every writer's partial page */
		snprintf(flush_err, sizeof(flush_err), "%s", ringtrace_last_error());
	rt_drain();
	rt_close_all(S.files);
	struct ringtrace_trace_stats st;
	rt_fill_stats(&st);
	S.last = st;
	int err = rt_meta_write(&st);
	rt_reserve_release(&S.out);
	uint64_t ev, pg;
	rt_uw_totals(&ev, &pg);
	/* (the first failure first: a message is at most 255 bytes) */
	if (err == 0 && pg)
		err = rt_error(RINGTRACE_ESYS,
			       "%s: %llu events in %llu pages not written (%s); the trace is valid "
			       "without them and counts them as lost",
			       S.write_err, (unsigned long long)ev, (unsigned long long)pg,
			       rt_uw_reasons());
	else if (err == 0 && flush_err[0])
		err = rt_error(RINGTRACE_ESYS, "the trace in %s lacks the writers' last events: %s",
			       S.dir, flush_err);
	free(S.uw);
	free(S.uw_more);
	free(S.uw_drops);
	S.uw = NULL;
	S.uw_more = NULL;
	S.uw_drops = NULL;
	S.nuw = S.cap_uw = 0;
	ringtrace_rb_destroy(S.rb);
	S.rb = NULL;
	rt_tdir_close(&S.out); /* and with it the lock */
	S.dir = NULL;
	S.active = 0;
	__atomic_store_n(&rt_session_live, 0, __ATOMIC_RELEASE);
	S.stopping = 0;
	return err;
}

static int rt_session_stop_gen(const uint64_t *gen);

int ringtrace_session_stop(void)
{
	return rt_session_stop_gen(NULL);
}

int rt_session_stop_if(uint64_t gen)
{
	return rt_session_stop_gen(&gen);
}

/* Stop the running session (only if it is session *gen, when given). */
static int rt_session_stop_gen(const uint64_t *gen)
{
	pthread_mutex_lock(&S.lock);
	if (!S.active || S.stopping) {
		pthread_mutex_unlock(&S.lock);
		if (gen)
			return 1;
		return rt_error(RINGTRACE_EINVAL, "session_stop: no session is recording");
	}
	if (gen && S.gen != *gen) {
		pthread_mutex_unlock(&S.lock);
		return 1;
	}
	S.stopping = 1; /* a second stop (another thread, atexit) returns at once */
	/* No thread writes into the buffer after this returns. */
	ringtrace_events_set_buffer(NULL);
	rt_events_report_unmatched();
	__atomic_store_n(&S.stop, 1, __ATOMIC_RELEASE);
	rt_consumer_wake();
	pthread_mutex_unlock(&S.lock);
	pthread_join(S.consumer, NULL);
	pthread_mutex_lock(&S.lock);
	int err = rt_finish_locked();
	pthread_mutex_unlock(&S.lock);
	/* A SIGINT/SIGTERM that came while stopping: now the trace is safe. */
	int sig = __atomic_exchange_n(&rt_pending_signal, 0, __ATOMIC_ACQ_REL);
	if (sig) {
		signal(sig, SIG_DFL);
		raise(sig);
	}
	return err;
}

/*
 * The consumer thread itself stops the session (a deadly signal arrived).
 * 1 if it did; 0 if another thread is stopping it (that one finishes).
 */
static int rt_stop_from_consumer(void)
{
	int done = 0;
	pthread_mutex_lock(&S.lock);
	if (S.active && !S.stopping) {
		S.stopping = 1;
		ringtrace_events_set_buffer(NULL);
		pthread_detach(pthread_self());
		if (rt_finish_locked() < 0)
			fprintf(stderr, "ringtrace: %s\n", ringtrace_last_error());
		done = 1;
	}
	pthread_mutex_unlock(&S.lock);
	return done;
}

/* Copy the buffer's content into sd (made and locked) as a complete
 * trace. Lock held. */
static int rt_snapshot_locked(const struct rt_tdir *sd)
{
	int err;
	ringtrace_snapshot *snap;
	if ((err = ringtrace_rb_snapshot(S.rb, &snap)) < 0)
		return err;
	struct rt_file files[RT_MAX_OPEN_FILES];
	(void)rt_files_init(files); /* (without a reserve: the first open says why) */
	uint64_t clock = 0;
	size_t ps = ringtrace_rb_page_size(S.rb);
	for (uint32_t i = 0; i < ringtrace_snapshot_page_count(snap) && err == 0; i++) {
		const struct ringtrace_page_header *p = ringtrace_snapshot_page(snap, i);
		int fd = rt_stream_fd(sd, files, &clock, p->stream_instance_id);
		if (fd < 0) {
			err = fd; /* the message names the file */
			break;
		}
		int w = rt_write_all(fd, p, ps);
		if (w < 0) {
			err = rt_error(RINGTRACE_ESYS, "snapshot: writing %s/stream_%llu: %s",
				       sd->path, (unsigned long long)p->stream_instance_id,
				       strerror(-w));
			rt_stream_cut(sd, files, p->stream_instance_id, ps);
		}
	}
	rt_close_all(files);
	if (err == 0) {
		struct ringtrace_trace_stats st;
		rt_fill_stats(&st);
		struct rt_ctf_extra x = {.realtime_offset = S.realtime_offset,
					 .has_realtime_offset = 1};
		err = rt_ctf_write_live(S.rb, sd, &st, &x);
	}
	/* A snapshot that could not be written whole (a full disk) is not
	 * kept at all: a stream file without metadata, or cut inside a page,
	 * is no trace, and its space is the recording's. */
	for (uint32_t i = 0; err < 0 && i < ringtrace_snapshot_page_count(snap); i++) {
		char name[40];
		snprintf(name, sizeof(name), "stream_%llu",
			 (unsigned long long)ringtrace_snapshot_page(snap, i)->stream_instance_id);
		unlinkat(sd->fd, name, 0);
	}
	ringtrace_snapshot_free(snap);
	return err;
}

int ringtrace_session_snapshot(const char *dir)
{
	if (!dir)
		return rt_error(RINGTRACE_EINVAL, "session_snapshot: NULL directory");
	pthread_mutex_lock(&S.lock);
	int err;
	struct rt_tdir sd;
	if (!S.active)
		err = rt_error(RINGTRACE_EINVAL, "session_snapshot: no session is recording");
	else if ((err = rt_tdir_create(&sd, AT_FDCWD, dir, NULL, S.group)) == 0) {
		err = rt_snapshot_locked(&sd);
		rt_tdir_close(&sd);
	}
	pthread_mutex_unlock(&S.lock);
	return err;
}

ringtrace_rb *ringtrace_session_buffer(void)
{
	pthread_mutex_lock(&S.lock);
	ringtrace_rb *rb = S.active ? S.rb : NULL;
	pthread_mutex_unlock(&S.lock);
	return rb;
}

void rt_session_last_stats(struct ringtrace_trace_stats *st)
{
	pthread_mutex_lock(&S.lock);
	*st = S.last;
	pthread_mutex_unlock(&S.lock);
}

int ringtrace_session_stats(struct ringtrace_trace_stats *st)
{
	if (!st)
		return rt_error(RINGTRACE_EINVAL, "session_stats: NULL argument");
	pthread_mutex_lock(&S.lock);
	int err = 0;
	if (S.active)
		rt_fill_stats(st);
	else
		err = rt_error(RINGTRACE_EINVAL, "session_stats: no session is recording");
	pthread_mutex_unlock(&S.lock);
	return err;
}

void rt_session_env_exit(void)
{
	/* (not in a child of _Fork() or vfork(), which no atfork handler
	 * reset: the session, its consumer thread and its files are the
	 * parent's, and the join would wait forever) */
	if (getpid() != S.pid)
		return;
	if (S.from_env && S.active && ringtrace_session_stop() < 0)
		fprintf(stderr, "ringtrace: %s\n", ringtrace_last_error());
}

/* A forked child has no consumer thread: it only writes into the shared
 * pool, which the parent's session reads. */
void rt_session_atfork_child(void)
{
	pthread_mutex_init(&S.lock, NULL);
	S.active = 0;
	__atomic_store_n(&rt_session_live, 0, __ATOMIC_RELEASE);
	S.from_env = 0;
}
