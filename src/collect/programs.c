/*
 * ringtrace record -p PID[,PID...]: record programs that are already
 * running (docs/attach.md). For each program: its socket found in its
 * user's rendezvous directory, its HELLO read and checked, a trace
 * directory <comm>-<pid> made for it in the output directory (given to
 * the program's user when root records another user's program), and
 * RECORD sent with that directory's descriptor. The program records into
 * it itself (its library runs the session: nothing of the tracing
 * runtime is in this command) until we send STOP, the program exits, or
 * this process goes away (the program sees the connection end and stops).
 *
 * The output directory holds one trace per program: a trace collection
 * (`babeltrace2 DIR` reads them together; `ringtrace report DIR/<comm>-<pid>`
 * one of them).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "collect/collect_api.h"
#include "kernel/kernel_api.h"
#include "ringtrace/ctf.h"
#include "ringtrace/error.h"

#define AT_MAX_PROGRAMS 256
/* A session's start creates its pool and threads; its stop flushes and
 * writes the trace out: both bounded, but not by a second. */
#define AT_START_TIMEOUT_S 10
#define AT_STOP_TIMEOUT_S 30

struct at_prog {
	pid_t pid;
	uid_t uid;
	int fd; /* the connection; -1 once done */
	char comm[16];
	char name[64]; /* its trace directory in the output directory */
	char shm[80];  /* its pool's name (recovered from if the program dies) */
	int ended;     /* the connection ended without STOPPED */
	struct ringtrace_attach_stopped st;
	int stopped; /* STOPPED received */
};

/*
 * The clock conversion every program of the recording declares: the
 * first program's (from its HELLO). Each process calibrates its cycle
 * counter on its own, and two calibrations differ by some 10^-8 in
 * frequency: microseconds apart after minutes, enough to put an event
 * before the one that caused it in another process. One conversion for
 * all makes their timestamps comparable exactly (the counter is one).
 */
static struct {
	int set;
	uint64_t freq, base_ticks, base_ns;
	/* CLOCK_REALTIME - CLOCK_MONOTONIC, measured once at the start and
	 * declared by every trace of the recording (the kernel's too): CTF
	 * readers place each trace's events by clock offset + time, so
	 * offsets measured apart (microseconds different) would reorder
	 * events of different processes. */
	int64_t realtime_offset;
} at_clock;

static volatile sig_atomic_t at_signal;
static volatile pid_t at_cmd_pid; /* -a -- CMD: the command, for the signal handler */
static int at_pipe[2] = {-1, -1};

static void at_on_signal(int sig)
{
	int e = errno;
	at_signal = sig;
	if (at_pipe[1] >= 0) {
		ssize_t r = write(at_pipe[1], "x", 1);
		(void)r;
	}
	errno = e;
}

static void at_timeout(int fd, int s)
{
	struct timeval tv = {s, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* "4242,4250" into pids: their number, or -1 having said what is wrong. */
static int at_parse_pids(const char *list, pid_t *pids, int max)
{
	int n = 0;
	const char *p = list;
	for (;;) {
		char *end;
		errno = 0;
		unsigned long v = strtoul(p, &end, 10);
		if (errno || end == p || *p < '1' || *p > '9' || v > 0x3fffffff ||
		    (*end && *end != ',')) {
			fprintf(stderr, "ringtrace record: -p '%s': expected PID[,PID...]\n", list);
			return -1;
		}
		for (int i = 0; i < n; i++)
			if (pids[i] == (pid_t)v) {
				fprintf(stderr, "ringtrace record: -p: pid %lu given twice\n", v);
				return -1;
			}
		if (n == max) {
			fprintf(stderr, "ringtrace record: -p: at most %d programs\n", max);
			return -1;
		}
		pids[n++] = (pid_t)v;
		if (!*end)
			return n;
		p = end + 1;
	}
}

/* Append "KEY=VALUE\0" to the RECORD payload: 0, or -1 if it does not fit. */
static int at_put(char *buf, uint32_t *len, const char *key, const char *val)
{
	int n = snprintf(buf + *len, RINGTRACE_ATTACH_MAX_PAYLOAD - *len, "%s=%s", key, val);
	if (n < 0 || (uint32_t)n + 1 > RINGTRACE_ATTACH_MAX_PAYLOAD - *len)
		return -1;
	*len += (uint32_t)n + 1;
	return 0;
}

/*
 * Program p's owner checked (its own user or root may record it), its
 * socket found and its HELLO read: 0 with the connection in *fd and its
 * /proc entry's owner and group in *st, or -1 having said why.
 */
/* p's command name from /proc (for messages, and its trace's name). */
static void at_read_comm(struct at_prog *p)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)p->pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t r = read(fd, p->comm, sizeof(p->comm) - 1);
	close(fd);
	p->comm[r > 0 ? r : 0] = 0;
	char *nl = strchr(p->comm, '\n');
	if (nl)
		*nl = 0;
}

static int at_hello(struct at_prog *p, struct stat *st, int *fd)
{
	char path[512], why[600], proc[32];
	snprintf(proc, sizeof(proc), "/proc/%d", (int)p->pid);
	if (stat(proc, st) < 0) {
		fprintf(stderr, "ringtrace record: pid %d: %s\n", (int)p->pid,
			errno == ENOENT ? "no such process" : strerror(errno));
		return -1;
	}
	p->uid = st->st_uid;
	if (geteuid() != 0 && p->uid != geteuid()) {
		fprintf(stderr,
			"ringtrace record: pid %d runs as uid %u: only its own user or root may "
			"record it\n",
			(int)p->pid, (unsigned)p->uid);
		return -1;
	}
	int dfd = co_attach_find(p->pid, p->uid, path, sizeof(path), why, sizeof(why));
	if (dfd < 0) {
		fprintf(stderr, "ringtrace record: pid %d: %s\n", (int)p->pid, why);
		return -1;
	}
	char sock[32];
	snprintf(sock, sizeof(sock), "%d.sock", (int)p->pid);
	struct ringtrace_attach_hello h;
	int r = co_attach_hello(dfd, sock, p->pid, p->uid, &h, fd, why, sizeof(why));
	close(dfd);
	if (r != 0) {
		fprintf(stderr, "ringtrace record: pid %d: %s\n", (int)p->pid,
			r > 0 ? "its socket is there but nobody listens (it exited?)" : why);
		return -1;
	}
	memcpy(p->comm, h.comm, sizeof(p->comm));
	if (!p->comm[0]) /* (a program out of descriptors could not read its own) */
		at_read_comm(p);
	/* (the first program's, never changed after: every trace of the
	 * recording must declare the same one. A program of another user,
	 * when root records it, could give a wrong calibration point; that
	 * would shift the collection's times, not their order; docs/attach.md) */
	if (!at_clock.set && h.clock_is_tsc && h.clock_freq) {
		at_clock.set = 1;
		at_clock.freq = h.clock_freq;
		at_clock.base_ticks = h.clock_base_ticks;
		at_clock.base_ns = h.clock_base_ns;
	}
	if (h.recording) {
		fprintf(stderr,
			"ringtrace record: pid %d (%s): busy: a session records it already\n",
			(int)p->pid, rt_esc(p->comm));
		close(*fd);
		return -1;
	}
	return 0;
}

/*
 * p's trace directory outfd/<comm>-<pid>, the program's user's (it
 * creates the files), with the recording's group if one was given: its
 * descriptor, or -1 having said why (nothing left behind).
 */
static int at_make_dir(struct at_prog *p, int outfd, const char *out, const struct stat *st,
		       long group)
{
	co_dirname(p->name, sizeof(p->name), p->comm, p->pid);
	mode_t mode = group >= 0 ? 0750 : 0700;
	int sub = -1;
	const char *step = "mkdir";
	if (mkdirat(outfd, p->name, mode) == 0) {
		step = "open";
		sub = openat(outfd, p->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub >= 0 &&
		    ((step = "chown"),
		     (p->uid != geteuid() || group >= 0) &&
			     fchown(sub, p->uid, group >= 0 ? (gid_t)group : st->st_gid) < 0)) {
			close(sub);
			sub = -1;
		} else if (sub >= 0 && ((step = "chmod"), fchmod(sub, mode) < 0)) {
			close(sub);
			sub = -1;
		}
	}
	if (sub < 0) {
		fprintf(stderr, "ringtrace record: pid %d (%s): %s %s/%s: %s\n", (int)p->pid,
			rt_esc(p->comm), step, out, p->name, strerror(errno));
		unlinkat(outfd, p->name, AT_REMOVEDIR);
	}
	return sub;
}

/*
 * The RECORD payload for p (KEY=VALUE strings: its directory, the
 * settings, the recording's clock, its pool's name, made here) in buf:
 * its length, or -1 having said why.
 */
static int64_t at_payload(struct at_prog *p, const char *out, const struct co_settings *o,
			  char *buf)
{
	uint32_t len = 0;
	char dir[4200];
	snprintf(dir, sizeof(dir), "%s/%s", out, p->name);
	int bad = at_put(buf, &len, "DIR", dir) < 0 ||
		  at_put(buf, &len, "EVENTS", o->events && *o->events ? o->events : "*") < 0 ||
		  (o->filters && at_put(buf, &len, "FILTERS", o->filters) < 0) ||
		  (o->triggers && at_put(buf, &len, "TRIGGERS", o->triggers) < 0) ||
		  at_put(buf, &len, "MODE", o->overwrite ? "overwrite" : "discard") < 0 ||
		  (o->bufsize && at_put(buf, &len, "BUFFER_SIZE", o->bufsize) < 0) ||
		  (o->pagesize && at_put(buf, &len, "PAGE_SIZE", o->pagesize) < 0);
	char clk[80];
	snprintf(clk, sizeof(clk), "%" PRIu64 ":%" PRIu64 ":%" PRIu64, at_clock.freq,
		 at_clock.base_ticks, at_clock.base_ns);
	bad = bad || (at_clock.set && at_put(buf, &len, "CLOCK", clk) < 0);
	char rto[24];
	snprintf(rto, sizeof(rto), "%" PRId64, at_clock.realtime_offset);
	bad = bad || at_put(buf, &len, "REALTIME_OFFSET", rto) < 0;
	if (co_shm_name(p->shm, sizeof(p->shm)) < 0)
		return -1;
	if (bad || at_put(buf, &len, "SHM", p->shm) < 0) {
		fprintf(stderr,
			"ringtrace record: the settings (events, filters, triggers) are longer "
			"than the %u bytes a program takes\n",
			RINGTRACE_ATTACH_MAX_PAYLOAD);
		return -1;
	}
	return len;
}

/*
 * RECORD sent to p on fd with its directory sub (and the output directory
 * outfd, where snapshots are made beside the trace: not to another user's
 * program, which could not write there and would see the other programs'
 * names), and its answer read: 0 if OK, or -1 having said why.
 */
static int at_send_record(struct at_prog *p, int fd, int sub, int outfd, const char *buf,
			  uint32_t len)
{
	int fds[2] = {sub, outfd};
	unsigned nfds = p->uid == geteuid() ? 2 : 1;
	at_timeout(fd, AT_START_TIMEOUT_S);
	uint32_t type = 0, rl = 0;
	char reply[RINGTRACE_ATTACH_MAX_PAYLOAD];
	int r = ringtrace_attach_send_fds(fd, RINGTRACE_ATTACH_RECORD, buf, len, fds, nfds);
	if (r == 0)
		r = ringtrace_attach_recv(fd, &type, reply, sizeof(reply), &rl);
	if (r == 0 && type == RINGTRACE_ATTACH_OK)
		return 0;
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		fprintf(stderr, "ringtrace record: pid %d (%s): no answer within %d s\n",
			(int)p->pid, rt_esc(p->comm), AT_START_TIMEOUT_S);
	else if (r < 0)
		fprintf(stderr,
			"ringtrace record: pid %d (%s): the connection ended during the attach "
			"(the program exited?): %s\n",
			(int)p->pid, rt_esc(p->comm), ringtrace_last_error());
	else if (type == RINGTRACE_ATTACH_ERROR && rl > 0) {
		reply[rl - 1] = 0;
		fprintf(stderr, "ringtrace record: pid %d (%s): %s\n", (int)p->pid, rt_esc(p->comm),
			rt_esc(reply));
	} else
		fprintf(stderr, "ringtrace record: pid %d (%s): an answer of type %u, not OK\n",
			(int)p->pid, rt_esc(p->comm), type);
	return -1;
}

/*
 * Reach program p and make it record into outfd/<name>: 0 with p->fd the
 * live connection, or -1 having said why (nothing left behind but what a
 * program that failed half-way wrote).
 */
static int at_attach(struct at_prog *p, int outfd, const char *out, const struct co_settings *o)
{
	struct stat st;
	int fd;
	if (at_hello(p, &st, &fd) < 0)
		return -1;
	int sub = at_make_dir(p, outfd, out, &st, o->group);
	if (sub < 0) {
		close(fd);
		return -1;
	}
	char buf[RINGTRACE_ATTACH_MAX_PAYLOAD];
	int64_t len = at_payload(p, out, o, buf);
	int r = len < 0 ? -1 : at_send_record(p, fd, sub, outfd, buf, (uint32_t)len);
	close(sub);
	if (r == 0) {
		p->fd = fd;
		return 0;
	}
	close(fd);
	/* (empty unless the program failed half-way: then what it wrote stays) */
	unlinkat(outfd, p->name, AT_REMOVEDIR);
	return -1;
}

/* Send STOP to every program still connected, then read each STOPPED. */
static void at_stop_all(struct at_prog *ps, int n)
{
	for (int i = 0; i < n; i++)
		if (ps[i].fd >= 0 &&
		    ringtrace_attach_send(ps[i].fd, RINGTRACE_ATTACH_STOP, NULL, 0) < 0)
			ps[i].ended = 1;
	for (int i = 0; i < n; i++) {
		if (ps[i].fd < 0)
			continue;
		at_timeout(ps[i].fd, AT_STOP_TIMEOUT_S);
		uint32_t type, len;
		struct ringtrace_attach_stopped st;
		if (!ps[i].ended &&
		    ringtrace_attach_recv(ps[i].fd, &type, &st, sizeof(st), &len) == 0 &&
		    type == RINGTRACE_ATTACH_STOPPED && len == sizeof(st)) {
			st.error[sizeof(st.error) - 1] = 0;
			ps[i].st = st;
			ps[i].stopped = 1;
		} else {
			ps[i].ended = 1;
		}
		close(ps[i].fd);
		ps[i].fd = -1;
	}
}

/* 1 if every thread of pid is dead (gone, or a zombie not reaped yet). */
static int at_all_dead(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return 1;
	struct dirent *e;
	int dead = 1;
	unsigned seen = 0;
	while (dead && (e = readdir(d)) && seen++ < 100000) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.20s/stat", (int)pid, e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (n <= 0)
			continue; /* (gone meanwhile) */
		buf[n] = 0;
		const char *rp = strrchr(buf, ')');
		dead = rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
	}
	closedir(d);
	return dead;
}

/*
 * Until every thread of pid is dead, 2 s at most: its connection ends
 * while its threads are still exiting, and a pool with a live writer is
 * not recovered. (Per thread: a process whose main thread called
 * pthread_exit shows as a zombie while the others run.)
 */
static void at_wait_dead(pid_t pid)
{
	for (int i = 0; i < 200 && !at_all_dead(pid); i++) {
		struct timespec d = {0, 10 * 1000 * 1000};
		nanosleep(&d, NULL);
	}
}

/* What became of program p: said on stderr; 0, or -1 if its trace is not complete. */
static int at_report(const struct at_prog *p, const struct co_settings *o)
{
	int rc = 0;
	if (!p->name[0] || (!p->stopped && !p->ended))
		return rc;
	char dir[4200];
	snprintf(dir, sizeof(dir), "%s/%s", o->out, p->name);
	if (p->stopped) {
		if (p->st.status < 0) {
			fprintf(stderr, "ringtrace record: pid %d (%s): %s\n", (int)p->pid,
				rt_esc(p->comm), rt_esc(p->st.error));
			rc = -1;
		}
		if (!o->quiet)
			fprintf(stderr,
				"ringtrace: pid %d (%s): %" PRIu64 " events recorded, %" PRIu64
				" dropped, %" PRIu64 " overwritten; %.1f MB in %s\n",
				(int)p->pid, rt_esc(p->comm), p->st.hit, p->st.missed,
				p->st.overrun, (double)p->st.bytes / 1e6, rt_esc(dir));
		return rc;
	}
	/* It went first: exited (its exit handler finished the trace), or
	 * died: then its pool (named, ours to map) holds the committed events
	 * the recorder thread had not written out. */
	uint64_t v;
	if (ringtrace_ctf_get_stat(dir, "hit", &v) == 1) {
		if (!o->quiet)
			fprintf(stderr,
				"ringtrace: pid %d (%s) exited; its trace is complete: %" PRIu64
				" events in %s\n",
				(int)p->pid, rt_esc(p->comm), v, rt_esc(dir));
	} else {
		fprintf(stderr,
			"ringtrace record: pid %d (%s) ended without finishing its trace (it "
			"crashed or was killed); recovering its events into %s\n",
			(int)p->pid, rt_esc(p->comm), rt_esc(dir));
		at_wait_dead(p->pid);
		if (co_recover(p->shm, dir, o->quiet, 0) == 0 &&
		    ringtrace_ctf_get_stat(dir, "hit", &v) == 1) {
			if (!o->quiet)
				fprintf(stderr,
					"ringtrace: pid %d (%s): %" PRIu64 " events in %s\n",
					(int)p->pid, rt_esc(p->comm), v, rt_esc(dir));
		} else {
			rc = -1;
		}
	}
	return rc;
}

/* ---- -a: every program, and those that start ------------------------------ */

/* The rendezvous directories watched by -a: the caller's; root: everyone's. */
struct at_dir {
	int fd;
	uid_t uid;
	char path[512];
};
#define AT_MAX_DIRS 256

static int at_add_dir(struct at_dir *ds, int *n, const char *path, uid_t uid, int ino)
{
	for (int i = 0; i < *n; i++)
		if (strcmp(ds[i].path, path) == 0)
			return 0;
	if (*n == AT_MAX_DIRS)
		return 0;
	int fd = ringtrace_attach_dir_check(path, (unsigned)uid);
	if (fd < 0)
		return 0; /* (none, or not that user's: nothing to find there) */
	ds[*n].fd = fd;
	ds[*n].uid = uid;
	snprintf(ds[*n].path, sizeof(ds[*n].path), "%s", path);
	/* (a program renames its socket into place once it listens: IN_MOVED_TO) */
	if (ino >= 0)
		inotify_add_watch(ino, path, IN_CREATE | IN_MOVED_TO | IN_ONLYDIR);
	(*n)++;
	return 1;
}

struct at_dirs_arg {
	struct at_dir *ds;
	int *n, ino;
};

static void at_add_user_dir(const char *dir, uid_t uid, void *arg)
{
	struct at_dirs_arg *a = arg;
	at_add_dir(a->ds, a->n, dir, uid, a->ino);
}

/* Find the rendezvous directories (again: a user's first program makes one). */
static void at_find_dirs(struct at_dir *ds, int *n, int ino)
{
	char path[512];
	/* (ours made if missing, to be watched from the start) */
	int fd = ringtrace_attach_dir_open(1, path, sizeof(path));
	if (fd >= 0)
		close(fd);
	if (geteuid() != 0) {
		if (fd >= 0)
			at_add_dir(ds, n, path, geteuid(), ino);
		return;
	}
	struct at_dirs_arg a = {ds, n, ino};
	co_each_user_dir(at_add_user_dir, &a);
}

/* 1 if pid descends from root (bounded walk up the parents), else 0. */
static int at_descends(pid_t pid, pid_t root)
{
	for (int depth = 0; depth < 64 && pid > 1; depth++) {
		if (pid == root)
			return 1;
		char path[64], buf[512];
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return 0;
		ssize_t r = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (r <= 0)
			return 0;
		buf[r] = 0;
		/* "pid (comm) state ppid ...": comm may hold anything, ')' too */
		char *rp = strrchr(buf, ')');
		int ppid;
		char st;
		if (!rp || sscanf(rp + 1, " %c %d", &st, &ppid) != 2)
			return 0;
		pid = ppid;
	}
	return 0;
}

/* The recording: the programs, where their traces go, and how it ends. */
struct at_run {
	const struct co_settings *o;
	int outfd;
	struct at_prog ps[AT_MAX_PROGRAMS];
	int n, live, failed;
	struct at_dir dirs[AT_MAX_DIRS];
	int ndirs;
	int ino;   /* inotify on the directories (-a), or -1 */
	pid_t cmd; /* -a -- CMD: the command (its descendants only), or 0 */
	int cmd_status;
	int full_said;
	struct kr *kr; /* -k: the kernel's events, or NULL */
};

static struct at_prog *at_known(struct at_run *R, pid_t pid)
{
	for (int i = 0; i < R->n; i++)
		if (R->ps[i].pid == pid)
			return &R->ps[i];
	return NULL;
}

/* Attach to pid (a new program): 0, or -1 having said why. */
static int at_take(struct at_run *R, pid_t pid)
{
	if (R->n == AT_MAX_PROGRAMS) {
		if (!R->full_said++)
			fprintf(stderr, "ringtrace record: %d programs recorded: no more\n",
				AT_MAX_PROGRAMS);
		return -1;
	}
	struct at_prog *p = &R->ps[R->n++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->fd = -1;
	if (at_attach(p, R->outfd, R->o->out, R->o) < 0) {
		R->failed++;
		return -1;
	}
	R->live++;
	kr_follow(R->kr, pid); /* (its kernel events from now on) */
	return 0;
}

/* -a: every program in the directories not seen yet (of the command's tree). */
static void at_scan(struct at_run *R)
{
	for (int i = 0; i < R->ndirs; i++) {
		int dfd = dup(R->dirs[i].fd);
		DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
		if (!d) {
			if (dfd >= 0)
				close(dfd);
			continue;
		}
		rewinddir(d);
		struct dirent *e;
		unsigned seen = 0;
		while ((e = readdir(d)) && seen++ < 100000) {
			char *end;
			errno = 0;
			unsigned long v = strtoul(e->d_name, &end, 10);
			if (errno || end == e->d_name || strcmp(end, ".sock") != 0 || v == 0 ||
			    v > 0x3fffffff || e->d_name[0] == '0')
				continue;
			pid_t pid = (pid_t)v;
			if (at_known(R, pid) || (R->cmd && !at_descends(pid, R->cmd)))
				continue;
			/* (gone already: a stale file, not a program to report) */
			if (kill(pid, 0) != 0 && errno == ESRCH)
				continue;
			at_take(R, pid);
		}
		closedir(d);
	}
}

/*
 * -a -- CMD: run CMD with RINGTRACE_ATTACH_WAIT set: it and every program
 * it starts (the variable is inherited) wait at their start, up to
 * AT_CMD_WAIT_MS, until this process has attached to them, so each is
 * recorded from its first event. Programs not linked with libringtrace
 * ignore it.
 */
#define AT_CMD_WAIT_MS "3000"
static pid_t at_run_cmd(char **argv)
{
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "ringtrace record: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid > 0)
		return pid;
	setenv("RINGTRACE_ATTACH_WAIT", AT_CMD_WAIT_MS, 1);
	setenv("RINGTRACE_ATTACH", "1", 1); /* (attachable, and says so if it is not) */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
	execvp(argv[0], argv);
	fprintf(stderr, "ringtrace record: cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

static void at_on_signal_info(int sig, siginfo_t *si, void *ctx)
{
	(void)ctx;
	if (sig == SIGCHLD) { /* (the command may have exited: look) */
		int e = errno;
		if (at_pipe[1] >= 0) {
			ssize_t r = write(at_pipe[1], "c", 1);
			(void)r;
		}
		errno = e;
		return;
	}
	/* -- CMD: passed on, unless the terminal sent it to the whole group */
	int e = errno; /* (kill may set it) */
	if (at_cmd_pid > 0 && !(si && si->si_code == SI_KERNEL))
		kill(at_cmd_pid, sig);
	errno = e;
	at_on_signal(sig);
}

/* What a recording opened, closed (the programs' connections are by then). */
static void at_run_close(struct at_run *R)
{
	at_cmd_pid = 0;
	close(R->outfd);
	close(at_pipe[0]);
	close(at_pipe[1]);
	at_pipe[0] = at_pipe[1] = -1;
	for (int i = 0; i < R->ndirs; i++)
		close(R->dirs[i].fd);
	if (R->ino >= 0)
		close(R->ino);
}

/*
 * -k: stop the kernel instance and write DIR/kernel on the recording's one
 * clock conversion (the first program's); discard: nothing was recorded,
 * only remove the instance (and the spool directory it made).
 */
static void at_kernel_end(struct at_run *R, int discard)
{
	if (!R->kr)
		return;
	if (!discard) {
		struct ringtrace_trace_clock clk = {1, at_clock.freq, at_clock.base_ticks,
						    at_clock.base_ns};
		/* (no program gave one: the recorder's own calibration) */
		if (kr_finish(R->kr, R->o->out, at_clock.set ? &clk : NULL,
			      &at_clock.realtime_offset, R->o->quiet) < 0)
			R->failed++;
	}
	kr_abort(R->kr);
	R->kr = NULL;
	if (discard)
		unlinkat(R->outfd, "kernel", AT_REMOVEDIR);
}

/*
 * The start: the output directory, the signal pipe and handlers, the
 * kernel instance (-k: before the first program is attached to, so that
 * its events from then on are there). 0, or -1 having said why.
 */
static int at_start(struct at_run *R)
{
	const struct co_settings *o = R->o;
	if ((R->outfd = co_outdir(o->out, o->group)) < 0)
		return -1;
	if (pipe2(at_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		fprintf(stderr, "ringtrace record: pipe: %s\n", strerror(errno));
		close(R->outfd);
		return -1;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = at_on_signal_info;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL); /* (a closed terminal ends the recording as Ctrl-C does) */
	sa.sa_flags |= SA_NOCLDSTOP;  /* (a command stopped and continued is not its end) */
	sigaction(SIGCHLD, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (o->nk) {
		char kwhy[512];
		if (kr_start(&R->kr, o->out, o->kspecs, o->nk, o->kbuf_kb, o->kall, kwhy,
			     sizeof(kwhy)) < 0) {
			fprintf(stderr,
				"ringtrace record: -k: %s; recording the user events only\n", kwhy);
			R->kr = NULL;
		}
	}
	return 0;
}

/*
 * Attach to the programs: -a: those running (of the command's tree, with
 * -- CMD, which is started here), -p: those named. 0, or -1 (the command
 * could not be run).
 */
static int at_attach_first(struct at_run *R, const pid_t *pids, int n)
{
	const struct co_settings *o = R->o;
	if (o->all) {
		R->ino = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
		at_find_dirs(R->dirs, &R->ndirs, R->ino);
		if (o->argv) {
			R->cmd = at_cmd_pid = at_run_cmd(o->argv);
			if (R->cmd < 0)
				return -1;
			kr_follow(R->kr, R->cmd); /* (and what it starts, as forks) */
		}
		at_scan(R);
	}
	for (int i = 0; i < n; i++)
		at_take(R, pids[i]);
	return 0;
}

static void at_say_started(const struct at_run *R, uint64_t t0, uint64_t t_attached)
{
	const struct co_settings *o = R->o;
	if (o->quiet)
		return;
	if (o->all)
		fprintf(stderr,
			"ringtrace record: recording %s%s into %s (%d running, attached in "
			"%.1f ms); Ctrl-C to stop\n",
			R->cmd ? "the command and the programs it starts"
			       : "every program and those that start",
			!R->cmd && geteuid() == 0 ? " (every user's)" : "", o->out, R->live,
			(double)(t_attached - t0) / 1e6);
	else
		fprintf(stderr,
			"ringtrace record: recording %d program%s into %s (attached in %.1f ms); "
			"Ctrl-C to stop\n",
			R->live, R->live == 1 ? "" : "s", o->out, (double)(t_attached - t0) / 1e6);
}

/* The command's exit status, if it exited (-a -- CMD): 1 then, else 0. */
static int at_cmd_exited(struct at_run *R)
{
	int st;
	if (R->cmd <= 0 || waitpid(R->cmd, &st, WNOHANG) != R->cmd)
		return 0;
	R->cmd_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	R->cmd = -R->cmd; /* (done; its descendants stay filtered by it) */
	return 1;
}

/*
 * What poll() said: the signal pipe drained, a rendezvous directory that
 * changed (-a) noted in *rescan, a program whose connection spoke (it says
 * nothing unasked: this is its end, it exited or broke the conversation)
 * marked ended.
 */
static void at_polled(struct at_run *R, struct pollfd *pf, const int *idx, int k, int *rescan)
{
	if (pf[0].revents & POLLIN) {
		char b[64];
		while (read(at_pipe[0], b, sizeof(b)) > 0)
			;
	}
	for (int j = 1; j < k; j++) {
		if (!pf[j].revents)
			continue;
		if (idx[j] == -2) {
			char b[4096];
			while (read(R->ino, b, sizeof(b)) > 0)
				;
			*rescan = 1;
			continue;
		}
		struct at_prog *p = &R->ps[idx[j]];
		p->ended = 1;
		close(p->fd);
		p->fd = -1;
		R->live--;
	}
}

/*
 * Until a signal, the deadline (0: none), every program gone (-p) or the
 * command's exit (-a -- CMD); -a: new programs attached to as their
 * sockets appear (inotify), and a rescan each second.
 */
static void at_wait(struct at_run *R, uint64_t deadline)
{
	const struct co_settings *o = R->o;
	uint64_t next_scan = rt_mono_ns() + 1000000000ull;
	while (!at_cmd_exited(R) && !at_signal && (o->all || R->live)) {
		struct pollfd pf[AT_MAX_PROGRAMS + 2];
		int idx[AT_MAX_PROGRAMS + 2], k = 0;
		pf[k] = (struct pollfd){at_pipe[0], POLLIN, 0};
		idx[k++] = -1;
		if (R->ino >= 0) {
			pf[k] = (struct pollfd){R->ino, POLLIN, 0};
			idx[k++] = -2;
		}
		for (int i = 0; i < R->n; i++)
			if (R->ps[i].fd >= 0 && !R->ps[i].ended) {
				pf[k] = (struct pollfd){R->ps[i].fd, POLLIN, 0};
				idx[k++] = i;
			}
		uint64_t now = rt_mono_ns();
		if (deadline && now >= deadline)
			break;
		uint64_t until = deadline;
		if (o->all && (!until || next_scan < until))
			until = next_scan;
		int ms = until ? (int)((until > now ? until - now : 0) / 1000000 + 1) : -1;
		int r = poll(pf, (nfds_t)k, ms);
		if (r < 0 && errno != EINTR) {
			fprintf(stderr, "ringtrace record: poll: %s\n", strerror(errno));
			break;
		}
		int rescan = o->all && rt_mono_ns() >= next_scan;
		if (r > 0)
			at_polled(R, pf, idx, k, &rescan);
		if (rescan) {
			if (geteuid() == 0)
				at_find_dirs(R->dirs, &R->ndirs, R->ino);
			at_scan(R);
			next_scan = rt_mono_ns() + 1000000000ull;
		}
	}
}

/*
 * The end: every program stopped, the command waited for (stopped by a
 * signal or the duration, it goes on; we wait for it, as `record -- CMD`
 * does), the kernel's trace written, and what became of each program said.
 * The exit status.
 */
static int at_finish(struct at_run *R)
{
	const struct co_settings *o = R->o;
	uint64_t t_stop = rt_mono_ns();
	at_stop_all(R->ps, R->n);
	uint64_t t_stopped = rt_mono_ns();
	if (R->cmd > 0) {
		int st;
		while (waitpid(R->cmd, &st, 0) < 0 && errno == EINTR)
			;
		R->cmd_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	}
	at_kernel_end(R, 0);
	at_run_close(R);
	/* -p: every program asked for must have been recorded; -a: those
	 * that could not be (exited meanwhile, busy) were said, not failures. */
	int rc = !o->all && R->failed ? 1 : 0;
	for (int i = 0; i < R->n; i++) {
		if (at_report(&R->ps[i], o) < 0)
			rc = 1;
		/* (the program removes its pool when it stops; not when it died) */
		if (R->ps[i].shm[0])
			shm_unlink(R->ps[i].shm);
	}
	if (!o->quiet)
		fprintf(stderr, "ringtrace record: detached in %.1f ms\n",
			(double)(t_stopped - t_stop) / 1e6);
	if (o->all && o->argv)
		return R->cmd_status ? R->cmd_status : rc;
	return rc;
}

int co_record_programs(const struct co_settings *o)
{
	static struct at_run R;
	memset(&R, 0, sizeof(R));
	memset(&at_clock, 0, sizeof(at_clock));
	at_clock.realtime_offset = rt_clock_realtime_offset();
	at_signal = 0;
	R.o = o;
	R.ino = -1;
	pid_t pids[AT_MAX_PROGRAMS];
	int n = 0;
	if (o->pids && (n = at_parse_pids(o->pids, pids, AT_MAX_PROGRAMS)) < 0)
		return 2;
	uint64_t t0 = rt_mono_ns();
	if (at_start(&R) < 0)
		return 1;
	if (at_attach_first(&R, pids, n) < 0) {
		at_kernel_end(&R, 1);
		at_run_close(&R);
		return 1;
	}
	uint64_t t_attached = rt_mono_ns();
	if (!o->all && !R.live) {
		at_kernel_end(&R, 1);
		at_run_close(&R);
		rmdir(o->out); /* (only if we left it empty) */
		return 1;
	}
	at_say_started(&R, t0, t_attached);
	at_wait(&R, o->duration_ns ? t_attached + o->duration_ns : 0);
	return at_finish(&R);
}
