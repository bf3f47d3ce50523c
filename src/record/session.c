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
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/internal.h"
#include "event/registry_internal.h"
#include "ringtrace/event.h"
#include "ringtrace/session.h"

#define RT_MAX_OPEN_FILES 64

struct rt_file {
	uint64_t stream;
	int fd;
	uint64_t last_use;
};

static struct {
	pthread_mutex_t lock;
	int active;
	ringtrace_rb *rb;
	char *dir;
	enum ringtrace_rb_mode mode;
	pthread_t consumer;
	int stop;                       /* consumer: drain and exit */
	struct rt_file files[RT_MAX_OPEN_FILES];
	uint64_t use_clock;
	uint64_t pages, bytes, t0_ns;
	int write_errno;                /* first write error, 0 if none */
	int from_env;
	pid_t pid;                      /* the process the session records in */
	int stopping;
	unsigned nsnap;
	uint32_t meta_events, meta_sites; /* registry size at the last live metadata */
} S = {.lock = PTHREAD_MUTEX_INITIALIZER};

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
const int rt_session_linked = 1;

static int rt_mkdir_empty(const char *dir)
{
	if (mkdir(dir, 0755) == 0)
		return 0;
	if (errno != EEXIST)
		return rt_error(RINGTRACE_ESYS, "cannot create output directory \"%s\": %s", dir,
				strerror(errno));
	/* An existing directory must be empty: never mix two traces. */
	DIR *d = opendir(dir);
	if (!d)
		return rt_error(RINGTRACE_ESYS, "output \"%s\" is not a usable directory: %s", dir,
				strerror(errno));
	struct dirent *e;
	int empty = 1;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			empty = 0;
	closedir(d);
	if (!empty)
		return rt_error(RINGTRACE_EINVAL,
				"output directory \"%s\" is not empty (a trace is written only into an empty or new directory)",
				dir);
	return 0;
}

void rt_stream_path(char *buf, size_t n, const char *dir, uint64_t stream)
{
	snprintf(buf, n, "%s/stream_%llu", dir, (unsigned long long)stream);
}

int rt_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* The file of a stream, opened (append) if needed; LRU eviction. */
static int rt_stream_fd(const char *dir, struct rt_file *files, uint64_t *clock, uint64_t stream)
{
	struct rt_file *victim = NULL;
	for (int i = 0; i < RT_MAX_OPEN_FILES; i++) {
		struct rt_file *f = &files[i];
		if (f->fd >= 0 && f->stream == stream) {
			f->last_use = ++*clock;
			return f->fd;
		}
		if (!victim || (victim->fd >= 0 && (f->fd < 0 || f->last_use < victim->last_use)))
			victim = f;
	}
	if (victim->fd >= 0)
		close(victim->fd);
	char path[4096];
	rt_stream_path(path, sizeof(path), dir, stream);
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	victim->fd = fd;
	victim->stream = stream;
	victim->last_use = ++*clock;
	return fd;
}

static void rt_stream_close(struct rt_file *files, uint64_t stream)
{
	for (int i = 0; i < RT_MAX_OPEN_FILES; i++)
		if (files[i].fd >= 0 && files[i].stream == stream) {
			close(files[i].fd);
			files[i].fd = -1;
		}
}

static void rt_files_init(struct rt_file *files)
{
	for (int i = 0; i < RT_MAX_OPEN_FILES; i++) {
		files[i].fd = -1;
		files[i].stream = 0;
		files[i].last_use = 0;
	}
}

static void rt_close_all(struct rt_file *files)
{
	for (int i = 0; i < RT_MAX_OPEN_FILES; i++)
		if (files[i].fd >= 0) {
			close(files[i].fd);
			files[i].fd = -1;
		}
}

/* Write one page to its stream file (consumer thread, or stop). */
static void rt_save_page(const struct ringtrace_page_header *p)
{
	if (S.write_errno)
		return; /* after a write error, pages are read (and counted) but not saved */
	size_t ps = ringtrace_rb_page_size(S.rb);
	int fd = rt_stream_fd(S.dir, S.files, &S.use_clock, p->stream_instance_id);
	int err = fd < 0 ? -errno : rt_write_all(fd, p, ps);
	if (err < 0) {
		S.write_errno = -err;
		fprintf(stderr, "ringtrace: writing stream_%llu in %s: %s (the rest of the trace is not saved)\n",
			(unsigned long long)p->stream_instance_id, S.dir, strerror(-err));
		return;
	}
	__atomic_add_fetch(&S.pages, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&S.bytes, ps, __ATOMIC_RELAXED);
	if (p->flags & RINGTRACE_PAGE_F_LAST)
		rt_stream_close(S.files, p->stream_instance_id);
}

/* Save a page taken from the queue and give it back. */
static void rt_save_taken(const struct ringtrace_page_header *p)
{
	rt_save_page(p);
	ringtrace_rb_put_page(S.rb, p);
}

static int rt_drain(void)
{
	int n = 0;
	const struct ringtrace_page_header *p;
	while ((p = ringtrace_rb_get_page(S.rb)) != NULL) {
		rt_save_taken(p);
		n++;
	}
	return n;
}

static uint64_t rt_now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int rt_write_metadata(ringtrace_rb *rb, const char *dir,
			     const struct ringtrace_trace_stats *st)
{
	char path[4096], tmp[4200];
	snprintf(path, sizeof(path), "%s/metadata", dir);
	/* Written under another name and renamed: a reader never sees half of it
	 * (a name CTF readers would skip: it starts with a dot). */
	snprintf(tmp, sizeof(tmp), "%s/.metadata.tmp", dir);
	FILE *f = fopen(tmp, "we");
	if (!f)
		return rt_error(RINGTRACE_ESYS, "cannot create %s: %s", tmp, strerror(errno));
	int err = ringtrace_ctf_write_metadata(rb, f, st);
	if (fclose(f) != 0 && err == 0)
		err = rt_error(RINGTRACE_ESYS, "writing %s: %s", tmp, strerror(errno));
	if (err == 0 && rename(tmp, path) != 0)
		err = rt_error(RINGTRACE_ESYS, "renaming %s: %s", tmp, strerror(errno));
	if (err < 0)
		unlink(tmp);
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

static int rt_snapshot_locked(const char *dir);
static int rt_stop_from_consumer(void);

/*
 * Keep a `metadata` in the output directory while recording (without the
 * final `stat` lines), rewritten whenever events or printf sites were
 * registered since: if the program dies, the stream files already written
 * and the pages still in the pool (a named one: `ringtrace record` and
 * `ringtrace recover`) can be turned into a complete trace, because the
 * schema of every event they hold is on disk. Consumer thread only.
 */
static void rt_live_metadata(void)
{
	uint32_t ne = ringtrace_event_count(), ns = ringtrace_printf_site_count();
	if (ne == S.meta_events && ns == S.meta_sites)
		return;
	if (rt_write_metadata(S.rb, S.dir, NULL) == 0) {
		S.meta_events = ne;
		S.meta_sites = ns;
	}
}

static void *rt_consumer(void *arg)
{
	(void)arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals are the program's business */
	pthread_setname_np(pthread_self(), "ringtrace-rec");
	for (;;) {
		rt_live_metadata();
		if (__atomic_exchange_n(&rt_snapshot_requested, 0, __ATOMIC_ACQ_REL)) {
			char dir[4200];
			pthread_mutex_lock(&S.lock);
			snprintf(dir, sizeof(dir), "%s.snapshot-%u", S.dir, ++S.nsnap);
			if (rt_snapshot_locked(dir) < 0)
				fprintf(stderr, "ringtrace: snapshot: %s\n", ringtrace_last_error());
			else
				fprintf(stderr, "ringtrace: snapshot written to %s\n", dir);
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
			const struct ringtrace_page_header *p = ringtrace_rb_get_page(S.rb);
			if (p) {
				rt_save_taken(p);
				continue;
			}
		}
		if (stop)
			break;
		struct timespec d = {0, S.mode == RINGTRACE_RB_DISCARD ? 1000000 : 10000000};
		uint32_t w = __atomic_load_n(&rt_wake, __ATOMIC_ACQUIRE);
		if (!__atomic_load_n(&rt_snapshot_requested, __ATOMIC_ACQUIRE))
			syscall(SYS_futex, &rt_wake, FUTEX_WAIT_PRIVATE, w, &d, NULL, 0);
	}
	return NULL;
}

static void rt_deadly(int sig)
{
	__atomic_store_n(&rt_exit_signal, sig, __ATOMIC_RELEASE);
}

static void rt_sigusr2(int sig)
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

static int rt_session_start(const struct ringtrace_session_config *cfg, int cfg_from_env);

int ringtrace_session_start(const struct ringtrace_session_config *cfg)
{
	return rt_session_start(cfg, 0);
}

static int rt_session_start(const struct ringtrace_session_config *cfg, int cfg_from_env)
{
	int err;
	if (!cfg || !cfg->output_dir || !*cfg->output_dir)
		return rt_error(RINGTRACE_EINVAL, "session_start: an output directory is required");
	pthread_mutex_lock(&S.lock);
	if (S.active) {
		pthread_mutex_unlock(&S.lock);
		return rt_error(RINGTRACE_EINVAL, "session_start: a session is already recording to %s",
				S.dir);
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
	if ((err = rt_mkdir_empty(cfg->output_dir)) < 0)
		goto out;
	if ((err = ringtrace_rb_create(&rc, &S.rb)) < 0)
		goto out;
	if ((err = ringtrace_events_configure(cfg->events ? cfg->events : "*")) < 0 &&
	    err != -RINGTRACE_ENOENT) {
		ringtrace_rb_destroy(S.rb);
		S.rb = NULL;
		goto out;
	}
	/* Absolute: the program may chdir() while recording. */
	S.dir = realpath(cfg->output_dir, NULL);
	if (!S.dir) {
		err = rt_error(RINGTRACE_ESYS, "output directory \"%s\": %s", cfg->output_dir,
			       strerror(errno));
		ringtrace_rb_destroy(S.rb);
		S.rb = NULL;
		goto out;
	}
	S.mode = cfg->mode;
	S.pages = S.bytes = 0;
	S.write_errno = 0;
	S.stop = 0;
	S.nsnap = 0;
	S.meta_events = S.meta_sites = UINT32_MAX;
	rt_files_init(S.files);
	__atomic_store_n(&rt_snapshot_requested, 0, __ATOMIC_RELAXED);
	S.t0_ns = rt_now_ns();
	rt_events_set_buffer(S.rb, !cfg_from_env);
	if (pthread_create(&S.consumer, NULL, rt_consumer, NULL) != 0) {
		ringtrace_events_set_buffer(NULL);
		ringtrace_rb_destroy(S.rb);
		S.rb = NULL;
		free(S.dir);
		S.dir = NULL;
		err = rt_error(RINGTRACE_ESYS, "session_start: cannot start the consumer thread");
		goto out;
	}
	S.active = 1;
	__atomic_store_n(&rt_session_live, 1, __ATOMIC_RELEASE);
	err = 0;
out:
	pthread_mutex_unlock(&S.lock);
	return err;
}

/* Flush, drain, metadata, free. Lock held, consumer stopped or current. */
static int rt_finish_locked(void)
{
	ringtrace_rb_refresh_comm(S.rb);
	ringtrace_rb_flush(S.rb, 0); /* every writer's partial page */
	rt_drain();
	rt_close_all(S.files);
	struct ringtrace_trace_stats st;
	rt_fill_stats(&st);
	int err = rt_write_metadata(S.rb, S.dir, &st);
	if (err == 0 && S.write_errno)
		err = rt_error(RINGTRACE_ESYS, "the trace in %s is incomplete: %s", S.dir,
			       strerror(S.write_errno));
	ringtrace_rb_destroy(S.rb);
	S.rb = NULL;
	free(S.dir);
	S.dir = NULL;
	S.active = 0;
	__atomic_store_n(&rt_session_live, 0, __ATOMIC_RELEASE);
	S.stopping = 0;
	return err;
}

int ringtrace_session_stop(void)
{
	pthread_mutex_lock(&S.lock);
	if (!S.active || S.stopping) {
		pthread_mutex_unlock(&S.lock);
		return rt_error(RINGTRACE_EINVAL, "session_stop: no session is recording");
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

/* Copy the buffer's content into DIR as a complete trace. Lock held. */
static int rt_snapshot_locked(const char *dir)
{
	int err = rt_mkdir_empty(dir);
	if (err < 0)
		return err;
	ringtrace_snapshot *snap;
	if ((err = ringtrace_rb_snapshot(S.rb, &snap)) < 0)
		return err;
	struct rt_file files[RT_MAX_OPEN_FILES];
	rt_files_init(files);
	uint64_t clock = 0;
	size_t ps = ringtrace_rb_page_size(S.rb);
	for (uint32_t i = 0; i < ringtrace_snapshot_page_count(snap) && err == 0; i++) {
		const struct ringtrace_page_header *p = ringtrace_snapshot_page(snap, i);
		int fd = rt_stream_fd(dir, files, &clock, p->stream_instance_id);
		int w = fd < 0 ? -errno : rt_write_all(fd, p, ps);
		if (w < 0)
			err = rt_error(RINGTRACE_ESYS, "snapshot: writing %s/stream_%llu: %s", dir,
				       (unsigned long long)p->stream_instance_id, strerror(-w));
	}
	rt_close_all(files);
	ringtrace_snapshot_free(snap);
	if (err == 0) {
		struct ringtrace_trace_stats st;
		rt_fill_stats(&st);
		err = rt_write_metadata(S.rb, dir, &st);
	}
	return err;
}

int ringtrace_session_snapshot(const char *dir)
{
	if (!dir)
		return rt_error(RINGTRACE_EINVAL, "session_snapshot: NULL directory");
	pthread_mutex_lock(&S.lock);
	int err = S.active ? rt_snapshot_locked(dir)
			   : rt_error(RINGTRACE_EINVAL, "session_snapshot: no session is recording");
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

/* ---- started from the environment ------------------------------------------ */

static int rt_parse_size(const char *s, size_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	unsigned long long mul = 1;
	if (*end == 'k' || *end == 'K')
		mul = 1024, end++;
	else if (*end == 'm' || *end == 'M')
		mul = 1024 * 1024, end++;
	else if (*end == 'g' || *end == 'G')
		mul = 1024ull * 1024 * 1024, end++;
	if (*end)
		return -1;
	*out = (size_t)(v * mul);
	return 0;
}

static void rt_env_atexit(void)
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
static void rt_session_atfork_child(void)
{
	pthread_mutex_init(&S.lock, NULL);
	S.active = 0;
	__atomic_store_n(&rt_session_live, 0, __ATOMIC_RELEASE);
	S.from_env = 0;
}

__attribute__((constructor(200))) static void rt_env_start(void)
{
	pthread_atfork(NULL, NULL, rt_session_atfork_child);
	const char *out = getenv("RINGTRACE_OUTPUT");
	if (!out || !*out)
		return;
	struct ringtrace_session_config cfg;
	ringtrace_session_config_init(&cfg);
	cfg.output_dir = out;
	cfg.events = getenv("RINGTRACE_EVENTS");
	const char *mode = getenv("RINGTRACE_MODE");
	const char *bs = getenv("RINGTRACE_BUFFER_SIZE"), *ps = getenv("RINGTRACE_PAGE_SIZE");
	cfg.shm_name = getenv("RINGTRACE_SHM");
	if (mode && strcmp(mode, "overwrite") == 0)
		cfg.mode = RINGTRACE_RB_OVERWRITE;
	else if (mode && strcmp(mode, "discard") != 0) {
		fprintf(stderr, "ringtrace: RINGTRACE_MODE=\"%s\": use discard or overwrite; not tracing\n",
			mode);
		return;
	}
	if ((bs && rt_parse_size(bs, &cfg.pool_size) < 0) ||
	    (ps && rt_parse_size(ps, &cfg.page_size) < 0)) {
		fprintf(stderr, "ringtrace: RINGTRACE_BUFFER_SIZE/RINGTRACE_PAGE_SIZE: not a size (e.g. 64m, 64k); not tracing\n");
		return;
	}
	if (rt_session_start(&cfg, 1) < 0) {
		fprintf(stderr, "ringtrace: cannot record to %s: %s\n", out, ringtrace_last_error());
		return;
	}
	S.from_env = 1;
	atexit(rt_env_atexit);
	/* A program this one executes must not record into the same directory
	 * or claim the same shm name. */
	unsetenv("RINGTRACE_OUTPUT");
	unsetenv("RINGTRACE_SHM");
	/* Only where the program left the default action. */
	struct sigaction old, sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGUSR2, NULL, &old) == 0 && old.sa_handler == SIG_DFL) {
		sa.sa_handler = rt_sigusr2;
		sigaction(SIGUSR2, &sa, NULL);
	}
	/* Ctrl-C or kill must not lose the trace: the consumer saves it, then
	 * the signal takes its default effect (the exit status stays right). */
	sa.sa_handler = rt_deadly;
	if (sigaction(SIGINT, NULL, &old) == 0 && old.sa_handler == SIG_DFL)
		sigaction(SIGINT, &sa, NULL);
	if (sigaction(SIGTERM, NULL, &old) == 0 && old.sa_handler == SIG_DFL)
		sigaction(SIGTERM, &sa, NULL);
}
