/*
 * The program's side of attaching (docs/attach.md): a socket in the
 * user's rendezvous directory and one thread that answers on it, so that
 * `ringtrace ps` (and, later, `ringtrace record -p`) can find and reach a
 * running program without a daemon.
 *
 * Started at load (runtime.c) unless RINGTRACE_ATTACH=0; a program with
 * AT_SECURE that is not running as root is never attachable (docs/attach.md,
 * "Who may attach"). What a program nobody attaches to pays: this thread,
 * blocked in accept4() (it never runs), one descriptor, the socket file
 * and the thread's 256 KiB stack, mostly untouched (it runs sessions a peer asks for).
 *
 * Every peer is checked (SO_PEERCRED) before anything is said: only the
 * program's own effective uid or root; for an AT_SECURE program root only.
 * Anyone else gets a DENIED message saying why, and nothing else happens.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "control/control_api.h"
#include "record/record_internal.h"
#include "ringtrace/attach.h"
#include "ringtrace/event.h"
#include "ringtrace/filter.h"
#include "ringtrace/session.h"

/* The listener: its socket, the directory holding it, and who made it. */
static int rt_att_fd = -1;
static int rt_att_dirfd = -1;
static pid_t rt_att_pid; /* the process that bound the socket (not a forked child) */
static char rt_att_name[32];

/* A read of at most `ms` milliseconds, or a write, never blocks the thread for good. */
static void rt_att_timeouts(int fd, int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static void rt_att_deny(int fd, const char *fmt, unsigned a, unsigned b)
{
	char why[256];
	int n = snprintf(why, sizeof(why), fmt, a, b);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(why))
		n = sizeof(why) - 1;
	(void)ringtrace_attach_send(fd, RINGTRACE_ATTACH_DENIED, why, (uint32_t)n + 1);
}

static void rt_att_converse(int fd);

/*
 * One connection: check the peer, then answer. busy: a session for a
 * peer runs (the listener serves this one between its peer's messages):
 * HELLO (which says recording) and no more, so that no one can hold the
 * listener from its peer's STOP.
 */
static void rt_att_serve(int fd, int busy)
{
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	rt_att_timeouts(fd, 1000);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0 || cl != sizeof(cr))
		return; /* no credentials: say nothing */
	uid_t me = geteuid();
	if (rt_secure_mode() && cr.uid != 0) {
		rt_att_deny(fd,
			    "refused: uid %u may not attach to a privileged program (uid %u); "
			    "only root may",
			    (unsigned)cr.uid, (unsigned)me);
		return;
	}
	if (cr.uid != me && cr.uid != 0) {
		rt_att_deny(fd, "refused: uid %u may not attach to a program of uid %u",
			    (unsigned)cr.uid, (unsigned)me);
		return;
	}
	struct ringtrace_attach_hello h;
	memset(&h, 0, sizeof(h));
	h.magic = RINGTRACE_ATTACH_MAGIC;
	h.version = RINGTRACE_ATTACH_VERSION;
	h.pid = (uint32_t)getpid();
	h.uid = (uint32_t)me;
	h.nevents = ringtrace_event_count();
	h.recording = ringtrace_session_buffer() != NULL;
	int cfd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
	if (cfd >= 0) {
		ssize_t n = read(cfd, h.comm, sizeof(h.comm) - 1);
		close(cfd);
		if (n > 0 && h.comm[n - 1] == '\n')
			h.comm[n - 1] = 0;
	}
	ssize_t n = readlink("/proc/self/exe", h.exe, sizeof(h.exe) - 1);
	if (n < 0)
		h.exe[0] = 0;
	const struct rt_clock *c = rt_clock_get();
	h.clock_is_tsc = (uint32_t)c->is_tsc;
	h.clock_freq = c->freq;
	h.clock_base_ticks = c->base_ticks;
	h.clock_base_ns = c->base_ns;
	if (ringtrace_attach_send(fd, RINGTRACE_ATTACH_HELLO, &h, sizeof(h)) == 0 && !busy)
		rt_att_converse(fd);
}

/* ---- recording for a peer (RECORD, STOP) ---------------------------------------- */

/*
 * The session a peer asked for, and what it replaced: taken by the
 * listener (start, stop at the peer's word or EOF) and by the exit
 * handler (the program exits while recorded), one at a time.
 */
static pthread_mutex_t rt_att_lock = PTHREAD_MUTEX_INITIALIZER;
static int rt_att_active;
static uint64_t rt_att_gen;  /* the session's number: stopped only if still it */
static int rt_att_closing;   /* the process is exiting: no new session */
static int rt_att_conn = -1; /* the recording peer's connection (a fork child closes it) */
/*
 * RINGTRACE_ATTACH_WAIT: the program's start waits for a recorder (set by
 * `ringtrace record -a -- CMD` for the command and what it starts, so
 * that each is recorded from its first event). rt_att_settled: the
 * listener attached, or cannot (no socket); with rt_att_lock.
 */
static pthread_cond_t rt_att_cond = PTHREAD_COND_INITIALIZER;
static int rt_att_settled;

static void rt_att_settle(void)
{
	pthread_mutex_lock(&rt_att_lock);
	rt_att_settled = 1;
	pthread_cond_broadcast(&rt_att_cond);
	pthread_mutex_unlock(&rt_att_lock);
}
static struct rt_rules_saved *rt_att_rules;
static struct rt_ctl_saved *rt_att_ctl;

static void rt_att_say(int fd, uint32_t type, const char *fmt, const char *a, const char *b)
{
	char why[512];
	int n = snprintf(why, sizeof(why), fmt, a, b);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(why))
		n = sizeof(why) - 1;
	(void)ringtrace_attach_send(fd, type, why, (uint32_t)n + 1);
}

static void rt_att_close2(const int *fds)
{
	close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
}

/* The settings of a RECORD message (pointers into its payload). */
struct rt_att_settings {
	const char *dir, *events, *filters, *triggers, *mode, *bufsize, *pagesize, *clock, *shm,
		*realtime_offset;
};

/* Split "KEY=VALUE\0..." (len bytes, the last a NUL): 0, or -1 with *bad
 * the offending entry. */
static int rt_att_parse(char *p, uint32_t len, struct rt_att_settings *st, const char **bad)
{
	memset(st, 0, sizeof(*st));
	*bad = "";
	if (len == 0 || p[len - 1] != 0)
		return -1;
	static const struct {
		const char *key;
		size_t off;
	} keys[] = {
		{"DIR", offsetof(struct rt_att_settings, dir)},
		{"EVENTS", offsetof(struct rt_att_settings, events)},
		{"FILTERS", offsetof(struct rt_att_settings, filters)},
		{"TRIGGERS", offsetof(struct rt_att_settings, triggers)},
		{"MODE", offsetof(struct rt_att_settings, mode)},
		{"BUFFER_SIZE", offsetof(struct rt_att_settings, bufsize)},
		{"PAGE_SIZE", offsetof(struct rt_att_settings, pagesize)},
		{"CLOCK", offsetof(struct rt_att_settings, clock)},
		{"SHM", offsetof(struct rt_att_settings, shm)},
		{"REALTIME_OFFSET", offsetof(struct rt_att_settings, realtime_offset)},
	};
	for (char *e = p; e < p + len; e += strlen(e) + 1) {
		char *eq = strchr(e, '=');
		size_t k = 0;
		*bad = e;
		if (!eq)
			return -1;
		for (; k < sizeof(keys) / sizeof(keys[0]); k++)
			if ((size_t)(eq - e) == strlen(keys[k].key) &&
			    strncmp(e, keys[k].key, (size_t)(eq - e)) == 0)
				break;
		if (k == sizeof(keys) / sizeof(keys[0]))
			return -1;
		*(const char **)(void *)((char *)st + keys[k].off) = eq + 1;
	}
	return st->dir && *st->dir ? 0 : (*bad = "DIR (missing)", -1);
}

/*
 * Start the session RECORD asks for (lock held): OK, or ERROR having
 * changed nothing. fds: the trace directory, and its parent or -1 (taken).
 */
static int rt_att_begin(int fd, char *payload, uint32_t len, int *fds)
{
	struct rt_att_settings st;
	const char *bad;
	if (rt_att_parse(payload, len, &st, &bad) < 0) {
		rt_att_say(fd, RINGTRACE_ATTACH_ERROR, "bad RECORD setting \"%.100s\"%s", bad, "");
		rt_att_close2(fds);
		return -1;
	}
	struct ringtrace_session_config cfg;
	ringtrace_session_config_init(&cfg);
	cfg.output_dir = st.dir;
	cfg.events = st.events && *st.events ? st.events : NULL;
	uint64_t v;
	const char *what = NULL;
	if (st.mode && strcmp(st.mode, "overwrite") == 0)
		cfg.mode = RINGTRACE_RB_OVERWRITE;
	else if (st.mode && strcmp(st.mode, "discard") != 0)
		what = "MODE";
	if (st.bufsize && (rt_parse_size(st.bufsize, &v) < 0 || v > SIZE_MAX))
		what = "BUFFER_SIZE";
	else if (st.bufsize)
		cfg.pool_size = (size_t)v;
	if (st.pagesize && (rt_parse_size(st.pagesize, &v) < 0 || v > SIZE_MAX))
		what = "PAGE_SIZE";
	else if (st.pagesize)
		cfg.page_size = (size_t)v;
	/* (a shm object's name: "/name", one component; created O_EXCL, 0600) */
	if (st.shm &&
	    (st.shm[0] != '/' || !st.shm[1] || strchr(st.shm + 1, '/') || strlen(st.shm) > 200))
		what = "SHM";
	cfg.shm_name = st.shm;
	struct rt_clock clk = {1, 0, 0, 0};
	unsigned long long cf, ct, cn;
	char tail;
	if (st.clock && (sscanf(st.clock, "%llu:%llu:%llu%c", &cf, &ct, &cn, &tail) != 3 || !cf))
		what = "CLOCK";
	else if (st.clock)
		clk.freq = cf, clk.base_ticks = ct, clk.base_ns = cn;
	int64_t rto = 0;
	if (st.realtime_offset && rt_parse_i64(st.realtime_offset, &rto) < 0)
		what = "REALTIME_OFFSET";
	if (what) {
		rt_att_say(fd, RINGTRACE_ATTACH_ERROR, "bad RECORD setting %s%s", what, "");
		rt_att_close2(fds);
		return -1;
	}
	if (rt_att_closing) {
		rt_att_say(fd, RINGTRACE_ATTACH_ERROR, "the program is exiting%s%s", "", "");
		rt_att_close2(fds);
		return -1;
	}
	if (rt_att_active || ringtrace_session_buffer()) {
		rt_att_say(fd, RINGTRACE_ATTACH_ERROR,
			   "busy: a session records this program already (RINGTRACE_OUTPUT, "
			   "ringtrace record, or the program itself)%s%s",
			   "", "");
		rt_att_close2(fds);
		return -1;
	}
	/* What the session changes, kept to be put back when it stops. */
	struct rt_rules_saved *rules = rt_events_rules_save();
	struct rt_ctl_saved *ctl = rules ? rt_ctl_save() : NULL;
	int err = rules && ctl ? 0 : -RINGTRACE_ENOMEM;
	if (!err && st.filters && *st.filters)
		err = ringtrace_filters_configure(st.filters);
	if (!err && st.triggers && *st.triggers)
		err = ringtrace_triggers_configure(st.triggers);
	const char *name = strrchr(st.dir, '/');
	name = name ? name + 1 : st.dir;
	struct rt_tdir d;
	uint64_t gen = 0;
	if (err) /* (rt_tdir_adopt takes the descriptors, closing them on error) */
		rt_att_close2(fds);
	else if ((err = rt_tdir_adopt(&d, fds[1], fds[0], name, st.dir)) == 0)
		err = rt_session_start_in(&cfg, &d, st.clock ? &clk : NULL,
					  st.realtime_offset ? &rto : NULL, &gen);
	if (err < 0) {
		rt_att_say(fd, RINGTRACE_ATTACH_ERROR, "%s%s", ringtrace_last_error(), "");
		rt_ctl_restore(ctl);
		/* A session the program started itself meanwhile has its own
		 * enable rules now, which ours must not undo (ours changed none:
		 * a session start that fails changes no rule). */
		if (ringtrace_session_buffer())
			rt_events_rules_discard(rules);
		else
			rt_events_rules_restore(rules);
		return -1;
	}
	rt_att_gen = gen;
	rt_att_rules = rules;
	rt_att_ctl = ctl;
	rt_att_active = 1;
	rt_att_settled = 1; /* (lock held) a start that waits for this goes on */
	pthread_cond_broadcast(&rt_att_cond);
	(void)ringtrace_attach_send(fd, RINGTRACE_ATTACH_OK, NULL, 0);
	return 0;
}

/*
 * Stop the peer's session (lock held): its counts into *out; the events,
 * filters and triggers as they were before it (restore: not at exit).
 */
static void rt_att_end(struct ringtrace_attach_stopped *out, int restore)
{
	memset(out, 0, sizeof(*out));
	if (!rt_att_active)
		return;
	/* Only the session we started: the program may have stopped it (and
	 * started one of its own, which is not ours to stop or undo). */
	int err = rt_session_stop_if(rt_att_gen);
	int ours = err <= 0;
	struct ringtrace_trace_stats ts;
	memset(&ts, 0, sizeof(ts));
	if (ours)
		rt_session_last_stats(&ts);
	else
		err = rt_error(RINGTRACE_EINVAL,
			       "the program stopped the session itself; its counts are in the "
			       "trace's metadata");
	out->hit = ts.hit;
	out->missed = ts.missed;
	out->overrun = ts.overrun;
	out->pages = ts.pages;
	out->bytes = ts.bytes;
	out->status = err;
	if (err < 0)
		snprintf(out->error, sizeof(out->error), "%s", ringtrace_last_error());
	if (restore && (ours || !ringtrace_session_buffer())) {
		rt_ctl_restore(rt_att_ctl);
		rt_events_rules_restore(rt_att_rules);
	} else {
		rt_ctl_discard(rt_att_ctl);
		rt_events_rules_discard(rt_att_rules);
	}
	rt_att_ctl = NULL;
	rt_att_rules = NULL;
	rt_att_active = 0;
}

/*
 * After HELLO: a peer that only looked closes (or says nothing for a
 * second); RECORD starts a session, which runs until STOP or the end of
 * the connection (the recorder exited or was killed).
 */
static void rt_att_converse(int fd)
{
	char buf[RINGTRACE_ATTACH_MAX_PAYLOAD +
		 1]; /* (4 KiB of the 256 KiB stack; a nested serve has its own) */
	uint32_t type, len;
	int fds[2]; /* the trace directory, and the one holding it (if given) */
	unsigned nfds;
	if (ringtrace_attach_recv_fds(fd, &type, buf, RINGTRACE_ATTACH_MAX_PAYLOAD, &len, fds, 2,
				      &nfds) != 0) {
		/* (said to a peer that only looked and went, it is lost: no harm;
		 * to a recorder, it is why: out of descriptors, most likely) */
		rt_att_say(fd, RINGTRACE_ATTACH_ERROR, "%s%s", ringtrace_last_error(), "");
		return;
	}
	if (type != RINGTRACE_ATTACH_RECORD || nfds < 1) {
		for (unsigned i = 0; i < nfds; i++)
			close(fds[i]);
		rt_att_say(fd, RINGTRACE_ATTACH_ERROR,
			   "expected RECORD with the trace directory's descriptor%s%s", "", "");
		return;
	}
	pthread_mutex_lock(&rt_att_lock);
	int r = rt_att_begin(fd, buf, len, fds);
	pthread_mutex_unlock(&rt_att_lock);
	if (r < 0)
		return;
	/* (a child forked while it records must not keep the peer waiting) */
	__atomic_store_n(&rt_att_conn, fd, __ATOMIC_RELEASE);
	/* Recording: wait for the peer's word, however long (no timeout),
	 * or for it to go. Anything else than STOP ends it too. Others who
	 * connect meanwhile are answered (HELLO says recording; a RECORD
	 * gets ERROR busy). */
	int lfd = __atomic_load_n(&rt_att_fd, __ATOMIC_RELAXED);
	for (;;) {
		struct pollfd p[2] = {{fd, POLLIN, 0}, {lfd, POLLIN, 0}};
		int n = poll(p, 2, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n > 0 && !p[0].revents && (p[1].revents & POLLIN)) {
			int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			if (c >= 0) {
				rt_att_serve(c, 1);
				close(c);
			}
			continue;
		}
		if (n > 0 && !p[0].revents)
			poll(p, 1, -1); /* (the listening socket broke: only the peer now) */
		break;
	}
	int stop = ringtrace_attach_recv(fd, &type, buf, RINGTRACE_ATTACH_MAX_PAYLOAD, &len) == 0 &&
		   type == RINGTRACE_ATTACH_STOP;
	struct ringtrace_attach_stopped out;
	pthread_mutex_lock(&rt_att_lock);
	rt_att_end(&out, 1);
	pthread_mutex_unlock(&rt_att_lock);
	__atomic_store_n(&rt_att_conn, -1, __ATOMIC_RELEASE);
	if (stop)
		(void)ringtrace_attach_send(fd, RINGTRACE_ATTACH_STOPPED, &out, sizeof(out));
}

/*
 * The socket: in the rendezvous directory, bound through the checked
 * directory's descriptor. 0, or -1 having said why if asked to.
 */
static int rt_att_listen(int verbose)
{
	char dir[512];
	int dfd = ringtrace_attach_dir_open(1, dir, sizeof(dir));
	if (dfd < 0) {
		if (verbose)
			fprintf(stderr, "ringtrace: not attachable: %s\n", ringtrace_last_error());
		return -1;
	}
	/*
	 * Bound under a temporary name, then renamed once it listens: a
	 * recorder that sees <pid>.sock appear (record -a watches the
	 * directory) can connect at once, never between bind and listen.
	 */
	char name[32], tmp[40];
	pid_t pid = getpid();
	snprintf(name, sizeof(name), "%u.sock", (unsigned)pid);
	snprintf(tmp, sizeof(tmp), ".%u.sock.new", (unsigned)pid);
	struct sockaddr_un a;
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	int len = snprintf(a.sun_path, sizeof(a.sun_path), "/proc/self/fd/%d/%s", dfd, tmp);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* (connect needs write permission on the socket: the directory's 0700
	 * already keeps others out; the file need not add to it) */
	/*
	 * Files of these names are a dead process's, whose pid this one has:
	 * the temporary one is removed if bind finds it (not before: a start
	 * makes no system call it can do without), <pid>.sock is replaced by
	 * the rename.
	 */
	int bound = fd >= 0 && len >= 0 && (size_t)len < sizeof(a.sun_path) &&
		    bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	if (!bound && fd >= 0 && errno == EADDRINUSE) {
		if (unlinkat(dfd, tmp, 0) == 0)
			bound = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
		else
			errno = EADDRINUSE; /* (what is said: bind's error) */
	}
	if (!bound || listen(fd, 8) != 0 || fchmodat(dfd, tmp, 0600, 0) != 0 ||
	    renameat(dfd, tmp, dfd, name) != 0) {
		if (verbose)
			fprintf(stderr, "ringtrace: not attachable: socket in %s: %s\n", dir,
				strerror(errno));
		if (fd >= 0)
			close(fd);
		unlinkat(dfd, tmp, 0);
		close(dfd);
		return -1;
	}
	memcpy(rt_att_name, name, sizeof(name));
	rt_att_pid = pid;
	__atomic_store_n(&rt_att_fd, fd, __ATOMIC_RELAXED);
	__atomic_store_n(&rt_att_dirfd, dfd, __ATOMIC_RELEASE);
	return 0;
}

/*
 * The listener. It also makes the socket, so that the program's start
 * pays only for creating this thread: the directory, socket, bind and
 * listen calls (~20 system calls) are made here, beside the program.
 */
static void *rt_att_thread(void *arg)
{
	int verbose = (int)(intptr_t)arg;
	pthread_setname_np(pthread_self(), "ringtrace-att");
	if (rt_att_listen(verbose) < 0) {
		rt_att_settle();
		return NULL;
	}
	/*
	 * Not the trace clock's calibration (20 ms asleep, two CPUID
	 * instructions, each a VM exit in a guest): every program would pay
	 * for it, traced or not. It happens at the first connection (the
	 * HELLO carries the calibration) or the first session, whichever
	 * comes first, once per process.
	 */
	int lfd = __atomic_load_n(&rt_att_fd, __ATOMIC_RELAXED);
	for (;;) {
		int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EAGAIN)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				/* (out of descriptors or memory: try later, slowly) */
				sleep(1);
				continue;
			}
			return NULL; /* the socket was closed (a forked child) or is broken */
		}
		rt_att_serve(c, 0);
		close(c);
	}
}

/* At exit: the socket file goes (only the process that made it removes it). */
static void rt_att_exit(void)
{
	int dfd = __atomic_load_n(&rt_att_dirfd, __ATOMIC_ACQUIRE);
	/* No socket (not made yet, or a forked child's, closed): nothing to
	 * remove, and no peer can have started a session; a RECORD from now
	 * on is refused all the same. (No system call: a program that exits
	 * before its listener made the socket pays none here.) */
	if (dfd < 0) {
		pthread_mutex_lock(&rt_att_lock);
		rt_att_closing = 1;
		pthread_mutex_unlock(&rt_att_lock);
		return;
	}
	if (getpid() != rt_att_pid)
		return; /* (a child of _Fork or vfork: the socket is its parent's) */
	unlinkat(dfd, rt_att_name, 0);
	/* Recorded by a peer: the trace is finished here (the peer sees the
	 * connection end). */
	struct ringtrace_attach_stopped out;
	pthread_mutex_lock(&rt_att_lock);
	rt_att_closing = 1; /* (a RECORD from now on is refused) */
	rt_att_end(&out, 0);
	pthread_mutex_unlock(&rt_att_lock);
}

/*
 * A forked child has no listener thread and must not answer for its
 * parent: it closes the inherited socket and directory (the file stays
 * the parent's). Attaching to it after exec works (the constructor runs
 * again); without exec it is not attachable (docs/attach.md).
 */
static void rt_att_atfork_child(void)
{
	/* (published by the listener: the socket, then the directory, released;
	 * a socket still being made at the fork is closed by exec) */
	int conn = __atomic_load_n(&rt_att_conn, __ATOMIC_ACQUIRE);
	if (conn >= 0) {
		close(conn); /* (the parent's peer sees the end when the parent goes) */
		__atomic_store_n(&rt_att_conn, -1, __ATOMIC_RELAXED);
	}
	int dfd = __atomic_load_n(&rt_att_dirfd, __ATOMIC_ACQUIRE);
	if (dfd < 0)
		return;
	close(__atomic_load_n(&rt_att_fd, __ATOMIC_RELAXED));
	close(dfd);
	__atomic_store_n(&rt_att_fd, -1, __ATOMIC_RELAXED);
	__atomic_store_n(&rt_att_dirfd, -1, __ATOMIC_RELAXED);
}

void rt_attach_start(void)
{
	const char *v = rt_getenv("RINGTRACE_ATTACH");
	if (v && strcmp(v, "0") == 0)
		return;
	int verbose = v && strcmp(v, "1") == 0;
	if (rt_secure_mode() && geteuid() != 0)
		return; /* attachable by root only, and root's directory is not ours to make */
	/* (RINGTRACE_ATTACH_WAIT's deadline: on the monotonic clock) */
	pthread_condattr_t ca;
	if (pthread_condattr_init(&ca) == 0) {
		if (pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0)
			pthread_cond_init(&rt_att_cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	/* (before the thread: a fork meanwhile must not keep its descriptors) */
	pthread_atfork(NULL, NULL, rt_att_atfork_child);
	atexit(rt_att_exit);
	pthread_attr_t at;
	pthread_t th;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 256 * 1024);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	/*
	 * The thread takes no signal: it starts with all of them blocked.
	 * Given to pthread_create (which blocks them around the clone anyway)
	 * rather than blocked and restored around it here: two system calls
	 * fewer. (The attribute allocates; so does pthread_create, for the
	 * thread's TLS: malloc's first use is paid for either way.)
	 */
	sigset_t all;
	sigfillset(&all);
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 32)
	int err = pthread_attr_setsigmask_np(&at, &all);
	if (err == 0)
		err = pthread_create(&th, &at, rt_att_thread, (void *)(intptr_t)verbose);
#else
	sigset_t old;
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int err = pthread_create(&th, &at, rt_att_thread, (void *)(intptr_t)verbose);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
#endif
	pthread_attr_destroy(&at);
	if (err != 0) {
		if (verbose)
			fprintf(stderr, "ringtrace: not attachable: no listener thread: %s\n",
				strerror(err));
		return;
	}
	/* Asked to wait for a recorder: at most the milliseconds given (10 s at most). */
	const char *w = rt_getenv("RINGTRACE_ATTACH_WAIT");
	char *end;
	unsigned long ms = w ? strtoul(w, &end, 10) : 0;
	if (!w || !*w || *end || ms == 0)
		return;
	if (ms > 10000)
		ms = 10000;
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += (time_t)(ms / 1000);
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&rt_att_lock);
	while (!rt_att_settled && pthread_cond_timedwait(&rt_att_cond, &rt_att_lock, &until) == 0)
		;
	int got = rt_att_active;
	pthread_mutex_unlock(&rt_att_lock);
	if (!got && verbose)
		fprintf(stderr, "ringtrace: RINGTRACE_ATTACH_WAIT: no recorder within %lu ms\n",
			ms);
}
