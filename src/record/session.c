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
	int write_errno;     /* a write error happened: pages are no longer saved */
	char write_err[256]; /* its message */
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

/* Referenced by the registry so that a static link always pulls this file
 * in: RINGTRACE_OUTPUT must work for programs that never call a session
 * function (its constructor lives here). */
static void rt_save_page(const struct ringtrace_page_header *p)
{
	if (S.write_errno)
		return; /* after a write error, pages are read (and counted) but not saved */
	size_t ps = ringtrace_rb_page_size(S.rb);
	int fd = rt_stream_fd(&S.out, S.files, &S.use_clock, p->stream_instance_id);
	int err = fd < 0 ? fd : rt_write_all(fd, p, ps);
	if (err < 0) {
		S.write_errno = 1;
		if (fd < 0) /* the message names the file and what is wrong with it */
			snprintf(S.write_err, sizeof(S.write_err), "%s", ringtrace_last_error());
		else {
			snprintf(S.write_err, sizeof(S.write_err), "writing %s/stream_%llu: %s",
				 S.dir, (unsigned long long)p->stream_instance_id, strerror(-err));
			rt_stream_cut(&S.out, S.files, p->stream_instance_id, ps);
		}
		fprintf(stderr, "ringtrace: %s (the rest of the trace is not saved)\n",
			S.write_err);
		return;
	}
	__atomic_add_fetch(&S.pages, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&S.bytes, ps, __ATOMIC_RELAXED);
	if (p->flags & RINGTRACE_PAGE_F_LAST)
		rt_stream_close(S.files, p->stream_instance_id);
}

static uint64_t rt_now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
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
	if (ne == S.meta_events && ns == S.meta_sites && nt == S.meta_tails)
		return;
	S.meta_tails = nt;
	/* Tried once per change of the registry: a failure here (the
	 * directory damaged by someone) must not become a loop; the final
	 * metadata at stop is written anyway. */
	S.meta_events = ne;
	S.meta_sites = ns;
	if (rt_ctf_write_live(S.rb, &S.out, NULL) < 0)
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
			}
			if (err < 0)
				fprintf(stderr, "ringtrace: snapshot: %s\n",
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
			    struct rt_tdir *given, const struct rt_clock *clk);

int rt_session_start(const struct ringtrace_session_config *cfg, int cfg_from_env)
{
	if (!cfg || !cfg->output_dir || !*cfg->output_dir)
		return rt_error(RINGTRACE_EINVAL, "session_start: an output directory is required");
	return rt_session_begin(cfg, cfg_from_env, NULL, NULL);
}

int rt_session_start_in(const struct ringtrace_session_config *cfg, struct rt_tdir *dir,
			const struct rt_clock *clk, uint64_t *gen)
{
	int err = rt_session_begin(cfg, 0, dir, clk);
	if (err == 0) {
		pthread_mutex_lock(&S.lock);
		*gen = S.gen;
		pthread_mutex_unlock(&S.lock);
	}
	return err;
}

/* given: a trace directory made and checked already (taken over, closed
 * on error); NULL: cfg->output_dir, made here. clk: the clock conversion
 * to declare (rt_rb_use_clock), or NULL for the process's. */
static int rt_session_begin(const struct ringtrace_session_config *cfg, int cfg_from_env,
			    struct rt_tdir *given, const struct rt_clock *clk)
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
	int err = rt_ctf_write_live(S.rb, &S.out, &st);
	if (err == 0 && S.write_errno)
		err = rt_error(RINGTRACE_ESYS, "the trace in %s is incomplete: %s", S.dir,
			       S.write_err);
	else if (err == 0 && flush_err[0])
		err = rt_error(RINGTRACE_ESYS, "the trace in %s lacks the writers' last events: %s",
			       S.dir, flush_err);
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
	ringtrace_snapshot_free(snap);
	if (err == 0) {
		struct ringtrace_trace_stats st;
		rt_fill_stats(&st);
		err = rt_ctf_write_live(S.rb, sd, &st);
	}
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
