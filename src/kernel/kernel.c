/*
 * Kernel events beside the user events (docs/kernel.md): a
 * private tracefs instance on the cycle counter's clock, read back at the
 * end and re-encoded into a trace of its own, DIR/kernel, one stream per
 * CPU in ringtrace's page format, so that every reader of the collection
 * merges it with the programs' traces.
 *
 * libtracefs makes and removes the instance; libtraceevent parses the
 * kernel's page and event formats (kbuffer, tep). Only this command links
 * them: the library in traced programs stays libc and pthreads.
 *
 * Which kernel events are kept (unless --kernel-all): those of the
 * recorded programs' threads. The set starts with the programs' pids and
 * grows with every sched_process_fork whose parent is in it (enabled for
 * the purpose); sched_switch is kept when either side is ours,
 * sched_wakeup* when the woken thread is, anything else when its
 * common_pid is. (Not the kernel's set_event_pid: it loses the
 * sched_switch that puts a traced thread back on its CPU, docs/kernel.md.)
 * The set is applied while re-encoding, the events of every CPU merged by
 * time, so that a fork is seen before the child's events.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <traceevent/event-parse.h>
#include <traceevent/kbuffer.h>
#include <tracefs/tracefs.h>
#include <unistd.h>

#include "base/base.h"
#include "kernel/kernel_api.h"
#include "ring/page_api.h"
#include "ringtrace/ctf.h"
#include "ringtrace/format.h"
#include "ringtrace/schema.h"

#define KR_MAX_EVENTS 4096
#define KR_PAGE 65536u
#define KR_DRAIN_MS 100
#define KR_WAKE_PERCENT "25"

struct kr_event {
	struct tep_event *tep;
	uint32_t id; /* ours, in the kernel trace */
	struct ringtrace_field_desc *fields;
	struct tep_format_field **src; /* the kernel field of each of ours (NULL: _truncated) */
	uint32_t nfields;
	char *print_fmt;
	int has_var; /* a string or bytes field: _truncated first */
	uint64_t count;
};

struct kr_cpu {
	/*
	 * Drained while the programs run (kr_drain_thread): every raw page
	 * the kernel hands over, appended to a spool file of the output
	 * directory (unlinked: it goes with the recorder), read back in
	 * order by kr_finish.
	 */
	struct tracefs_cpu *tc;
	int fd; /* its trace_pipe_raw */
	int spool;
	size_t psize;
	uint64_t npages;
	char *pbuf; /* one page: the drain's, then the walk's */
	int spool_err;
	uint64_t spool_lost; /* pages read but not spooled */
	/* the walk */
	struct kbuffer *kb;
	uint64_t page;
	void *data;
	unsigned long long ts;
	int have;
	uint64_t missed;
	/* the output stream: its page being made (KR_PAGE bytes at out) */
	char *out;
	struct rt_page_enc enc;
	uint64_t seq, events_before, discarded;
};

struct kr {
	struct tracefs_instance *in;
	/* the drain: every KR_DRAIN_MS while the programs run */
	pthread_t drainer;
	int draining;
	int stop;                   /* (__atomic) */
	int outfd;                  /* DIR/kernel */
	uint64_t cal_ticks, cal_ns; /* the counter and CLOCK_MONOTONIC at the start */
	int64_t realtime_offset;    /* CLOCK_REALTIME - CLOCK_MONOTONIC at the start */
	char name[64];
	int all;
	char **systems;
	int nsys;
	uint64_t *tids; /* bitmap (kr_tid_add) */
	int32_t *ev_of; /* by the kernel's event id: index in ev + 1, 0 none */
	struct tep_handle *tep;
	struct kr_event *ev;
	uint32_t nev;
	int ncpu;
	struct kr_cpu *cpu;
	uint64_t kept, dropped_filter, unencodable;
};

/*
 * The followed threads: a bitmap over every id the kernel can give
 * (PID_MAX_LIMIT, 2^22: 512 KiB), so that the check done for every
 * record read back is one load, not a scan (a fork-heavy recording has
 * millions of records and thousands of threads).
 */
#define KR_PID_LIMIT (1u << 22)

static int kr_tid_add(struct kr *k, pid_t t)
{
	if (t <= 0 || (uint32_t)t >= KR_PID_LIMIT)
		return -1;
	k->tids[(uint32_t)t >> 6] |= 1ull << ((uint32_t)t & 63);
	return 0;
}

static int kr_tid_has(const struct kr *k, long long t)
{
	return t > 0 && t < KR_PID_LIMIT &&
	       (k->tids[(uint64_t)t >> 6] >> ((uint64_t)t & 63) & 1) != 0;
}

/* "sys:event" with globs into tracefs's regular expressions. */
static void kr_glob_to_re(const char *g, char *re, size_t n)
{
	size_t o = 0;
	if (o < n - 1)
		re[o++] = '^';
	for (; *g && o + 3 < n; g++) {
		if (*g == '*') {
			re[o++] = '.';
			re[o++] = '*';
		} else if (*g == '?') {
			re[o++] = '.';
		} else {
			re[o++] = *g;
		}
	}
	if (o < n - 1)
		re[o++] = '$';
	re[o] = 0;
}

static int kr_add_system(struct kr *k, const char *sys)
{
	for (int i = 0; i < k->nsys; i++)
		if (strcmp(k->systems[i], sys) == 0)
			return 0;
	char **s = realloc(k->systems, (size_t)(k->nsys + 2) * sizeof(*s));
	if (!s)
		return -1;
	k->systems = s;
	if (!(s[k->nsys] = strdup(sys)))
		return -1;
	s[++k->nsys] = NULL;
	return 0;
}

/* ---- the clock (rt_clock_sample, base.h) ------------------------------- */

/*
 * No program's trace gave the conversion (a command not linked with
 * libringtrace: its kernel events alone): the counter's frequency from the
 * two samples, kr_start's and now (the longer the recording, the closer;
 * over a second, within some 10^-6), anchored at the start.
 */
static void kr_calibrate(struct kr *k, struct ringtrace_trace_clock *c)
{
	uint64_t t1, n1;
	rt_clock_sample(&t1, &n1);
	*c = (struct ringtrace_trace_clock){1, 1000000000ull, k->cal_ticks, k->cal_ns};
	if (n1 > k->cal_ns + 1000000 && t1 > k->cal_ticks)
		c->freq = (uint64_t)((double)(t1 - k->cal_ticks) * 1e9 / (double)(n1 - k->cal_ns));
}

/* ---- draining ------------------------------------------------------------- */

/*
 * Move CPU c's full pages (all of them, partial ones too if flush) from the
 * kernel to its spool. A spool that cannot be written stops taking pages
 * (said at the end); the kernel then counts what it cannot keep.
 */
static void kr_drain_cpu(struct kr *k, int c, int flush)
{
	struct kr_cpu *cp = &k->cpu[c];
	/* (a spool that failed takes no more: the pages stay in the kernel,
	 * which counts what it cannot keep, overrun or dropped) */
	if (!cp->tc || cp->spool < 0 || cp->spool_err)
		return;
	for (unsigned i = 0; i < 1u << 20; i++) { /* (bounded: a page at a time) */
		memset(cp->pbuf, 0, cp->psize);
		int n = flush ? tracefs_cpu_flush(cp->tc, cp->pbuf)
			      : tracefs_cpu_read(cp->tc, cp->pbuf, true);
		if (n <= 0)
			return;
		if (pwrite(cp->spool, cp->pbuf, cp->psize, (off_t)(cp->npages * cp->psize)) !=
		    (ssize_t)cp->psize) {
			cp->spool_err = errno ? errno : EIO;
			cp->spool_lost++; /* (the page read, not kept) */
			return;
		}
		cp->npages++;
	}
}

/*
 * Every KR_DRAIN_MS, and as soon as a CPU's buffer is KR_WAKE_PERCENT full:
 * trace_pipe_raw polls readable then (the instance's buffer_percent), so a
 * burst is drained while three quarters of the buffer are still free
 * instead of overflowing it before the next round.
 */
static void *kr_drain_thread(void *arg)
{
	struct kr *k = arg;
	struct pollfd *pf = calloc((size_t)k->ncpu, sizeof(*pf));
	while (!__atomic_load_n(&k->stop, __ATOMIC_ACQUIRE)) {
		for (int c = 0; c < k->ncpu; c++)
			kr_drain_cpu(k, c, 0);
		if (!pf) {
			struct timespec d = {0, KR_DRAIN_MS * 1000000L};
			nanosleep(&d, NULL);
			continue;
		}
		for (int c = 0; c < k->ncpu; c++) /* (fd -1: left out of the poll) */
			pf[c] = (struct pollfd){k->cpu[c].spool_err ? -1 : k->cpu[c].fd, POLLIN, 0};
		(void)poll(pf, (nfds_t)k->ncpu, KR_DRAIN_MS); /* (fd -1: left out) */
	}
	free(pf);
	return NULL;
}

static void kr_drain_stop(struct kr *k)
{
	if (!k->draining)
		return;
	__atomic_store_n(&k->stop, 1, __ATOMIC_RELEASE);
	pthread_join(k->drainer, NULL);
	k->draining = 0;
}

/* The size of the kernel's buffer pages (sub-buffers): what one read of
 * trace_pipe_raw gives. */
static size_t kr_subbuf_size(struct kr *k)
{
	char *s = tracefs_instance_file_read(k->in, "buffer_subbuf_size_kb", NULL);
	long kb = s ? strtol(s, NULL, 10) : 0;
	free(s);
	long ps = sysconf(_SC_PAGESIZE);
	if (kb > 0 && kb <= 16384)
		return (size_t)kb * 1024;
	return ps > 0 ? (size_t)ps : 4096;
}

/* A spool file for CPU c in DIR/kernel: unlinked from the start. */
static int kr_spool_open(struct kr *k, int c)
{
	int fd = openat(k->outfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
		return fd;
	char name[64]; /* (a file system without O_TMPFILE) */
	snprintf(name, sizeof(name), ".spool-%d-%d", c, (int)getpid());
	fd = openat(k->outfd, name, O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0)
		unlinkat(k->outfd, name, 0);
	return fd;
}

/* Open every CPU's buffer and its spool, start the drain. */
static int kr_drain_start(struct kr *k, const char *out, char *why, size_t wn)
{
	char dir[4200];
	snprintf(dir, sizeof(dir), "%s/kernel", out);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		snprintf(why, wn, "%s: %s", dir, strerror(errno));
		return -1;
	}
	k->outfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (k->outfd < 0) {
		snprintf(why, wn, "%s: %s", dir, strerror(errno));
		return -1;
	}
	k->ncpu = (int)sysconf(_SC_NPROCESSORS_CONF);
	if (k->ncpu < 1 || k->ncpu > 4096)
		k->ncpu = k->ncpu < 1 ? 1 : 4096;
	k->cpu = calloc((size_t)k->ncpu, sizeof(*k->cpu));
	if (!k->cpu) {
		snprintf(why, wn, "out of memory");
		return -1;
	}
	for (int c = 0; c < k->ncpu; c++)
		k->cpu[c].spool = k->cpu[c].fd = -1;
	for (int c = 0; c < k->ncpu; c++) {
		struct kr_cpu *cp = &k->cpu[c];
		/*
		 * Opened here, close-on-exec (tracefs_cpu_open's descriptor is
		 * not): the program the recorder starts must not hold the
		 * instance's files open, or the instance cannot be removed
		 * while it runs on after a killed recorder.
		 */
		char file[64];
		snprintf(file, sizeof(file), "per_cpu/cpu%d/trace_pipe_raw", c);
		char *path = tracefs_instance_get_file(k->in, file);
		cp->fd = path ? open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC) : -1;
		tracefs_put_tracing_file(path);
		if (cp->fd < 0)
			continue; /* (an offline CPU) */
		cp->psize = kr_subbuf_size(k);
		cp->tc = tracefs_cpu_alloc_fd(cp->fd, (int)cp->psize, true);
		if (!cp->tc) {
			snprintf(why, wn, "CPU %d's buffer: %s", c, strerror(errno));
			return -1;
		}
		cp->pbuf = malloc(cp->psize);
		cp->spool = kr_spool_open(k, c);
		if (!cp->pbuf || cp->spool < 0) {
			snprintf(why, wn, "%s: a spool file for CPU %d: %s", dir, c,
				 cp->pbuf ? strerror(errno) : "out of memory");
			return -1;
		}
	}
	/* (a kernel without buffer_percent: the drain runs on its period alone) */
	(void)tracefs_instance_file_write(k->in, "buffer_percent", KR_WAKE_PERCENT);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old); /* (signals stay the main thread's) */
	int e = pthread_create(&k->drainer, NULL, kr_drain_thread, k);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e != 0) {
		snprintf(why, wn, "cannot start the drain: %s", strerror(e));
		return -1;
	}
	k->draining = 1;
	return 0;
}

void kr_abort(struct kr *k)
{
	if (!k)
		return;
	if (k->in)
		tracefs_trace_off(k->in);
	kr_drain_stop(k);
	/* (an instance whose trace_pipe_raw is open cannot be removed) */
	for (int c = 0; k->cpu && c < k->ncpu; c++) {
		if (k->cpu[c].tc) {
			tracefs_cpu_free_fd(k->cpu[c].tc);
			k->cpu[c].tc = NULL;
		}
		if (k->cpu[c].fd >= 0) {
			close(k->cpu[c].fd);
			k->cpu[c].fd = -1;
		}
	}
	if (k->in) {
		tracefs_instance_destroy(k->in);
		tracefs_instance_free(k->in);
	}
	for (int i = 0; i < k->nsys; i++)
		free(k->systems[i]);
	free(k->systems);
	free(k->tids);
	free(k->ev_of);
	for (uint32_t i = 0; i < k->nev; i++) {
		free(k->ev[i].fields);
		free(k->ev[i].src);
		free(k->ev[i].print_fmt);
	}
	free(k->ev);
	for (int c = 0; k->cpu && c < k->ncpu; c++) {
		if (k->cpu[c].spool >= 0)
			close(k->cpu[c].spool);
		free(k->cpu[c].pbuf);
		free(k->cpu[c].out);
		if (k->cpu[c].kb)
			kbuffer_free(k->cpu[c].kb);
	}
	free(k->cpu);
	if (k->tep)
		tep_free(k->tep);
	if (k->outfd >= 0)
		close(k->outfd);
	free(k);
}

/* Instances a recorder killed left: ours by name, their pid gone. */
static void kr_clean_stale(void)
{
	char **names = tracefs_instances(NULL);
	for (int i = 0; names && names[i]; i++) {
		int pid;
		unsigned long long r;
		if (sscanf(names[i], "ringtrace-%d-%llx", &pid, &r) != 2 || pid <= 0)
			continue;
		if (kill(pid, 0) == 0 || errno != ESRCH)
			continue;
		struct tracefs_instance *in = tracefs_instance_alloc(NULL, names[i]);
		if (in) {
			tracefs_instance_destroy(in);
			tracefs_instance_free(in);
		}
	}
	tracefs_list_free(names);
}

/*
 * Enable the events of one -k argument: SYSTEM:EVENT, globs allowed, several
 * separated by commas ("sched:sched_switch,sched:sched_wakeup"). 0, or -1
 * with the reason in why (naming the item at fault).
 */
static int kr_enable_list(struct kr *k, const char *list, char *why, size_t wn)
{
	const char *p = list;
	for (;;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char item[400], sys[128], ev[256], rs[300], re[600];
		if (len >= sizeof(item)) {
			snprintf(why, wn, "-k '%.40s...': too long", p);
			return -1;
		}
		memcpy(item, p, len);
		item[len] = 0;
		const char *colon = strchr(item, ':');
		if (!colon || colon == item || !colon[1] || (size_t)(colon - item) >= sizeof(sys) ||
		    strlen(colon + 1) >= sizeof(ev)) {
			snprintf(why, wn, "-k '%s': expected SYSTEM:EVENT (globs allowed: sched:*)",
				 item);
			return -1;
		}
		memcpy(sys, item, (size_t)(colon - item));
		sys[colon - item] = 0;
		snprintf(ev, sizeof(ev), "%s", colon + 1);
		kr_glob_to_re(sys, rs, sizeof(rs));
		kr_glob_to_re(ev, re, sizeof(re));
		if (tracefs_event_enable(k->in, rs, re) < 0) {
			snprintf(why, wn, "-k '%s': no such kernel event (see %s/available_events)",
				 item, tracefs_tracing_dir());
			return -1;
		}
		/* (the systems whose formats the reading needs; a glob: each match) */
		int oom = 0;
		if (!strpbrk(sys, "*?")) {
			oom = kr_add_system(k, sys) < 0;
		} else {
			char **all = tracefs_event_systems(NULL);
			for (int i = 0; all && all[i] && !oom; i++)
				if (fnmatch(sys, all[i], 0) == 0)
					oom = kr_add_system(k, all[i]) < 0;
			tracefs_list_free(all);
		}
		if (oom) {
			snprintf(why, wn, "out of memory");
			return -1;
		}
		if (!end)
			return 0;
		p = end + 1;
	}
}

int kr_available(char *why, size_t wn)
{
	(void)why, (void)wn;
	return 0;
}

int kr_start(struct kr **out, const char *dir, char *const *specs, int nspecs, size_t buf_kb,
	     int all, char *why, size_t wn)
{
	*out = NULL;
	if (geteuid() != 0) {
		snprintf(why, wn, "kernel events need root (a tracefs instance)");
		return -1;
	}
	if (!tracefs_tracing_dir()) {
		snprintf(why, wn,
			 "no tracefs (mount it: mount -t tracefs nodev /sys/kernel/tracing)");
		return -1;
	}
	kr_clean_stale();
	struct kr *k = calloc(1, sizeof(*k));
	if (!k || !(k->tids = calloc(KR_PID_LIMIT / 64, sizeof(*k->tids))) ||
	    !(k->ev_of = calloc(65536, sizeof(*k->ev_of)))) {
		if (k)
			free(k->tids);
		free(k);
		snprintf(why, wn, "out of memory");
		return -1;
	}
	k->outfd = -1;
	k->all = all;
	uint64_t r = 0;
	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		r = (uint64_t)getpid() * 2654435761u;
	snprintf(k->name, sizeof(k->name), "ringtrace-%d-%016" PRIx64, (int)getpid(), r);
	k->in = tracefs_instance_create(k->name);
	if (!k->in) {
		snprintf(why, wn, "cannot make the tracefs instance %s: %s", k->name,
			 strerror(errno));
		kr_abort(k);
		return -1;
	}
	/* The counter the library reads: kernel and user timestamps are one clock. */
#if defined(__x86_64__) || defined(__i386__)
	const char *clock = "x86-tsc";
#else
	const char *clock = "counter";
#endif
	char *clocks = tracefs_instance_file_read(k->in, "trace_clock", NULL);
	int has_clock = clocks && strstr(clocks, clock) != NULL;
	free(clocks);
	if (!has_clock || tracefs_instance_file_write(k->in, "trace_clock", clock) < 0) {
		snprintf(why, wn, "this kernel has no %s trace clock (the counter user events use)",
			 clock);
		kr_abort(k);
		return -1;
	}
	if (buf_kb && tracefs_instance_set_buffer_size(k->in, buf_kb, -1) < 0) {
		snprintf(why, wn, "buffer size %zu KiB: %s", buf_kb, strerror(errno));
		kr_abort(k);
		return -1;
	}
	for (int i = 0; i < nspecs; i++) {
		if (kr_enable_list(k, specs[i], why, wn) < 0) {
			kr_abort(k);
			return -1;
		}
	}
	/* (the set of our threads follows forks) */
	if (!all && tracefs_event_enable(k->in, "sched", "sched_process_fork") < 0) {
		snprintf(why, wn, "cannot enable sched:sched_process_fork");
		kr_abort(k);
		return -1;
	}
	kr_add_system(k, "sched");
	if (kr_drain_start(k, dir, why, wn) < 0) {
		kr_abort(k);
		return -1;
	}
	rt_clock_sample(&k->cal_ticks, &k->cal_ns);
	k->realtime_offset = rt_clock_realtime_offset();
	tracefs_trace_on(k->in);
	*out = k;
	return 0;
}

void kr_follow(struct kr *k, pid_t pid)
{
	if (!k)
		return;
	(void)kr_tid_add(k, pid);
	/* its threads now (those it makes later come as forks) */
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	struct dirent *e;
	unsigned seen = 0;
	while (d && (e = readdir(d)) && seen++ < KR_PID_LIMIT) {
		long t = strtol(e->d_name, NULL, 10);
		if (t > 0)
			(void)kr_tid_add(k, (pid_t)t);
	}
	if (d)
		closedir(d);
}

/* ---- reading back --------------------------------------------------------- */

/* The next record of CPU c, into cp->data / ts (cp->have 0 at the end). */
static void kr_next(struct kr_cpu *cp, int first)
{
	for (;;) {
		if (!first && cp->have)
			cp->data = kbuffer_next_event(cp->kb, &cp->ts);
		else if (!first)
			cp->data = NULL;
		first = 0;
		if (cp->data) {
			cp->have = 1;
			return;
		}
		if (cp->page >= cp->npages ||
		    pread(cp->spool, cp->pbuf, cp->psize, (off_t)(cp->page * cp->psize)) !=
			    (ssize_t)cp->psize) {
			cp->have = 0;
			return;
		}
		cp->page++;
		kbuffer_load_subbuffer(cp->kb, cp->pbuf);
		int m = kbuffer_missed_events(cp->kb);
		if (m != 0) /* (-1: some, the kernel did not count them) */
			cp->missed += m > 0 ? (uint64_t)m : 1;
		cp->data = kbuffer_read_event(cp->kb, &cp->ts);
		cp->have = cp->data != NULL;
		if (cp->have)
			return;
	}
}

static struct kr_event *kr_event_of(struct kr *k, struct tep_event *e)
{
	/* (by the kernel's id, a u16 in every record: found in one load) */
	int32_t *slot = e->id >= 0 && e->id < 65536 ? &k->ev_of[e->id] : NULL;
	if (slot && *slot > 0 && k->ev[*slot - 1].tep == e)
		return &k->ev[*slot - 1];
	for (uint32_t i = 0; !slot && i < k->nev; i++)
		if (k->ev[i].tep == e)
			return &k->ev[i];
	if (k->nev == KR_MAX_EVENTS)
		return NULL;
	struct kr_event *ne = realloc(k->ev, (k->nev + 1) * sizeof(*ne));
	if (!ne)
		return NULL;
	k->ev = ne;
	struct kr_event *x = &k->ev[k->nev];
	memset(x, 0, sizeof(*x));
	x->tep = e;
	x->id = 2 + k->nev; /* (0: printf, 1: reserved) */
	int nf = 0;
	struct tep_format_field **fl = tep_event_fields(e);
	for (int i = 0; fl && fl[i]; i++)
		nf++;
	x->fields = calloc((size_t)nf + 2, sizeof(*x->fields));
	x->src = calloc((size_t)nf + 2, sizeof(*x->src));
	size_t fmtcap = 64 + (size_t)nf * 80;
	x->print_fmt = malloc(fmtcap);
	if (!x->fields || !x->src || !x->print_fmt) {
		free(fl);
		return NULL;
	}
	x->print_fmt[0] = 0;
	size_t fo = 0;
	uint32_t n = 0;
	x->fields[n] = (struct ringtrace_field_desc){"_truncated", RINGTRACE_FT_INT, 1, 0, 1, 0,
						     NULL};
	x->src[n++] = NULL;
	for (int i = 0; fl && fl[i]; i++) {
		struct tep_format_field *f = fl[i];
		struct ringtrace_field_desc *d = &x->fields[n];
		unsigned long fl_ = f->flags;
		int is_char = f->type && strstr(f->type, "char") != NULL;
		const char *conv = "%d";
		d->name = f->name;
		if ((fl_ & TEP_FIELD_IS_STRING) || ((fl_ & TEP_FIELD_IS_ARRAY) && is_char)) {
			d->type = RINGTRACE_FT_STRING;
			d->size = 1;
			d->align = 1;
			d->count = (fl_ & TEP_FIELD_IS_DYNAMIC) ? 1024
				   : f->arraylen                ? (uint32_t)f->arraylen + 1
								: (uint32_t)f->size + 1;
			x->has_var = 1;
			conv = "%s";
		} else if (fl_ & TEP_FIELD_IS_ARRAY) {
			uint32_t es = f->elementsize ? (uint32_t)f->elementsize : 1;
			if ((fl_ & TEP_FIELD_IS_DYNAMIC) ||
			    (es != 1 && es != 2 && es != 4 && es != 8)) {
				d->type = RINGTRACE_FT_BYTES;
				d->size = 1;
				d->align = 4;
				d->count = 4096;
				x->has_var = 1;
			} else {
				d->type = RINGTRACE_FT_ARRAY;
				d->size = (uint8_t)es;
				d->align = (uint8_t)es;
				d->count = (uint32_t)f->arraylen;
				d->is_signed = (fl_ & TEP_FIELD_IS_SIGNED) != 0;
			}
			conv = "%s";
		} else {
			uint32_t sz = (uint32_t)f->size;
			if (sz != 1 && sz != 2 && sz != 4 && sz != 8)
				continue; /* (an odd scalar: left out) */
			d->type = RINGTRACE_FT_INT;
			d->size = (uint8_t)sz;
			d->align = (uint8_t)sz;
			d->is_signed = (fl_ & TEP_FIELD_IS_SIGNED) != 0;
			conv = sz == 8 ? (d->is_signed ? "%lld" : "%llu")
				       : (d->is_signed ? "%d" : "%u");
		}
		x->src[n++] = f;
		int w = snprintf(x->print_fmt + fo, fmtcap - fo, "%s%s=%s", fo ? " " : "", f->name,
				 conv);
		if (w > 0 && (size_t)w < fmtcap - fo)
			fo += (size_t)w;
	}
	free(fl);
	/*
	 * The task that was running when the event was recorded: ftrace's
	 * "comm-pid" column, and what report prints there. Last, so that the
	 * print format's conversions still meet the event's own fields first.
	 */
	struct tep_format_field *cp = tep_find_common_field(e, "common_pid");
	if (cp && cp->size == 4) {
		x->fields[n] = (struct ringtrace_field_desc){
			"common_pid", RINGTRACE_FT_INT, 4, 1, 4, 0, NULL};
		x->src[n++] = cp;
	}
	if (!x->has_var) { /* (no _truncated without a variable-length field) */
		memmove(&x->fields[0], &x->fields[1], (n - 1) * sizeof(*x->fields));
		memmove(&x->src[0], &x->src[1], (n - 1) * sizeof(*x->src));
		n--;
	}
	x->nfields = n;
	k->nev++;
	if (slot)
		*slot = (int32_t)k->nev;
	return x;
}

/* Re-encode one kernel record as a ringtrace payload: its length, or -1. */
static int kr_encode(const struct kr_event *x, const void *data, int dsize, char *out, size_t cap)
{
	size_t o = 0;
	uint8_t trunc = 0;
	uint32_t nvar = 0;
	for (uint32_t i = 0; i < x->nfields; i++) {
		const struct ringtrace_field_desc *d = &x->fields[i];
		const struct tep_format_field *f = x->src[i];
		size_t al = d->align ? d->align : 1;
		o = (o + al - 1) & ~(al - 1);
		if (!f) { /* _truncated, filled at the end */
			if (o + 1 > cap)
				return -1;
			out[o++] = 0;
			continue;
		}
		const char *p = (const char *)data + f->offset;
		size_t len = (size_t)f->size;
		if (f->flags & TEP_FIELD_IS_DYNAMIC) {
			/* __data_loc: u32, offset in the low 16 bits, length in the high */
			uint32_t loc;
			if ((long)f->offset + 4 > (long)dsize)
				return -1;
			memcpy(&loc, p, 4);
			size_t off = loc & 0xffff;
			len = loc >> 16;
			if (f->flags & TEP_FIELD_IS_RELATIVE) /* __rel_loc: from the field's end */
				off += (size_t)f->offset + (size_t)f->size;
			if (off + len > (size_t)dsize)
				return -1;
			p = (const char *)data + off;
		} else if ((size_t)f->offset + len > (size_t)dsize) {
			return -1;
		}
		if (d->type == RINGTRACE_FT_STRING) {
			size_t sl = strnlen(p, len);
			if (sl + 1 > d->count) {
				sl = d->count - 1;
				trunc |= (uint8_t)(1u << (nvar < 7 ? nvar : 7));
			}
			if (o + sl + 1 > cap)
				return -1;
			memcpy(out + o, p, sl);
			out[o + sl] = 0;
			o += sl + 1;
			nvar++;
		} else if (d->type == RINGTRACE_FT_BYTES) {
			if (len > d->count) {
				len = d->count;
				trunc |= (uint8_t)(1u << (nvar < 7 ? nvar : 7));
			}
			uint32_t l32 = (uint32_t)len;
			if (o + 4 + len > cap)
				return -1;
			memcpy(out + o, &l32, 4);
			memcpy(out + o + 4, p, len);
			o += 4 + len;
			nvar++;
		} else {
			size_t n = d->type == RINGTRACE_FT_ARRAY ? (size_t)d->size * d->count
								 : d->size;
			if (n > len || o + n > cap)
				return -1;
			memcpy(out + o, p, n);
			o += n;
		}
	}
	if (x->has_var)
		out[0] = (char)trunc;
	return (int)o;
}

/* Publish CPU c's page into the trace (if it holds events) and begin a new one. */
static int kr_flush_page(struct kr_cpu *cp, int c, const char *dir)
{
	struct ringtrace_page_header *h = cp->enc.h;
	if (h->events == 0)
		return 0;
	h->stream_instance_id = (uint64_t)c + 1;
	h->packet_seq_num = cp->seq++;
	h->events_discarded = cp->discarded;
	h->events_before = cp->events_before;
	h->tid = 0;
	h->writer = (uint32_t)c;
	h->cpu = (uint32_t)c;
	/* (a CPU number: eight digits at most fit the 16-byte name, and say so
	 * to the compiler, whose -O3 range analysis sees an int) */
	snprintf(h->comm, sizeof(h->comm), "kernel/%u", (unsigned)c % 100000000u);
	rt_page_enc_close(&cp->enc);
	int err = ringtrace_ctf_append_page(dir, h, KR_PAGE);
	cp->events_before += h->events;
	rt_page_enc_begin(&cp->enc, cp->out, KR_PAGE);
	return err;
}

/* Append one event to CPU c's stream: 1, 0 if it cannot be encoded (too
 * big for a page), or < 0 if a full page could not be written. */
static int kr_put(struct kr_cpu *cp, int c, const char *dir, uint32_t id, uint64_t ts,
		  const char *payload, uint32_t len)
{
	int rc = rt_page_enc_add(&cp->enc, id, ts, payload, len);
	if (rc == 0) {
		int err = kr_flush_page(cp, c, dir);
		if (err < 0)
			return err;
		rc = rt_page_enc_add(&cp->enc, id, ts, payload, len);
	}
	return rc > 0; /* (refused by an empty page: never encodable) */
}

/* Is this record one of ours (the followed threads)? Learns forks. */
static int kr_keep(struct kr *k, struct tep_event *e, struct tep_record *rec)
{
	unsigned long long v;
	const char *n = e->name;
	if (strcmp(n, "sched_process_fork") == 0) {
		unsigned long long parent, child;
		if (tep_get_field_val(NULL, e, "parent_pid", rec, &parent, 0) == 0 &&
		    tep_get_field_val(NULL, e, "child_pid", rec, &child, 0) == 0 &&
		    kr_tid_has(k, (long long)parent)) {
			kr_tid_add(k, (pid_t)child);
			return 1;
		}
		return k->all;
	}
	if (k->all)
		return 1;
	if (strcmp(n, "sched_switch") == 0)
		return (tep_get_field_val(NULL, e, "prev_pid", rec, &v, 0) == 0 &&
			kr_tid_has(k, (long long)v)) ||
		       (tep_get_field_val(NULL, e, "next_pid", rec, &v, 0) == 0 &&
			kr_tid_has(k, (long long)v));
	if (strncmp(n, "sched_wak", 9) == 0)
		return tep_get_field_val(NULL, e, "pid", rec, &v, 0) == 0 &&
		       kr_tid_has(k, (long long)v);
	return tep_get_common_field_val(NULL, e, "common_pid", rec, &v, 0) == 0 &&
	       kr_tid_has(k, (long long)v);
}

/*
 * DIR/kernel/formats/SYSTEM.EVENT: the kernel's format file of each event
 * in the trace, as tracefs gave it, so that report can print the events as
 * ftrace does (with the kernel's print fmt, through libtraceevent) on any
 * machine. Created new, never through a link (O_EXCL | O_NOFOLLOW,
 * relative to the directory made here). 0, or -1 having said why.
 */
static int kr_save_formats(struct kr *k, const char *dir)
{
	char path[4300];
	snprintf(path, sizeof(path), "%s/formats", dir);
	if (mkdir(path, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "ringtrace record: %s: %s\n", path, strerror(errno));
		return -1;
	}
	int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		fprintf(stderr, "ringtrace record: %s: %s\n", path, strerror(errno));
		return -1;
	}
	int rc = 0;
	for (uint32_t i = 0; i < k->nev && rc == 0; i++) {
		struct tep_event *e = k->ev[i].tep;
		int size = 0;
		char *text = tracefs_event_file_read(NULL, e->system, e->name, "format", &size);
		char name[300];
		snprintf(name, sizeof(name), "%s.%s", e->system, e->name);
		int fd = text ? openat(dfd, name,
				       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644)
			      : -1;
		if (fd < 0 || size < 0 || write(fd, text, (size_t)size) != (ssize_t)size) {
			fprintf(stderr, "ringtrace record: %s/%s: %s\n", path, name,
				text ? strerror(errno) : "cannot read the kernel's format file");
			rc = -1;
		}
		if (fd >= 0 && close(fd) < 0 && rc == 0) {
			fprintf(stderr, "ringtrace record: %s/%s: %s\n", path, name,
				strerror(errno));
			rc = -1;
		}
		free(text);
	}
	close(dfd);
	return rc;
}

/* Every event enabled goes in the metadata, those that never occurred too. */
static void kr_define_enabled(struct kr *k)
{
	struct tep_event **all = tep_list_events(k->tep, TEP_EVENT_SORT_ID);
	for (int i = 0; all && all[i]; i++) {
		char path[512];
		snprintf(path, sizeof(path), "events/%s/%s/enable", all[i]->system, all[i]->name);
		char *on = tracefs_instance_file_read(k->in, path, NULL);
		if (on && on[0] == '1')
			(void)kr_event_of(k, all[i]);
		free(on);
	}
}

/* The losses the kernel counted on CPU c (its stats file): overrun and
 * dropped events. */
static void kr_cpu_losses(struct kr *k, int c, uint64_t *overrun, uint64_t *dropped)
{
	char path[64];
	snprintf(path, sizeof(path), "per_cpu/cpu%d/stats", c);
	char *st = tracefs_instance_file_read(k->in, path, NULL);
	const char *o = st ? strstr(st, "overrun: ") : NULL;
	const char *d = st ? strstr(st, "dropped events: ") : NULL;
	*overrun = o ? strtoull(o + 9, NULL, 10) : 0;
	*dropped = d ? strtoull(d + 16, NULL, 10) : 0;
	free(st);
}

/*
 * Every CPU's spool completed (the pages left in the kernel drained), its
 * losses added to *overrun and *dropped, and made ready to be read back
 * into its output stream. 0, or -1 out of memory (said).
 */
static int kr_read_setup(struct kr *k, const char *dir, uint64_t *overrun, uint64_t *dropped)
{
	for (int c = 0; c < k->ncpu; c++) {
		struct kr_cpu *cp = &k->cpu[c];
		kr_drain_cpu(k, c, 0); /* what is left: the full pages, */
		kr_drain_cpu(k, c, 1); /* then the partial one */
		if (cp->spool_err)
			fprintf(stderr,
				"ringtrace record: kernel: CPU %d's spool in %s: %s (the page "
				"being written lost, %" PRIu64
				" in all; later events left in the kernel's buffer, which "
				"counts what it could not keep)\n",
				c, dir, strerror(cp->spool_err), cp->spool_lost);
		uint64_t ov, dr;
		kr_cpu_losses(k, c, &ov, &dr);
		*overrun += ov;
		*dropped += dr;
		cp->discarded = ov + dr;
		cp->kb = kbuffer_alloc(KBUFFER_LSIZE_SAME_AS_HOST, KBUFFER_ENDIAN_SAME_AS_HOST);
		cp->out = malloc(KR_PAGE);
		if (!cp->kb || !cp->out) {
			fprintf(stderr, "ringtrace record: out of memory\n");
			return -1;
		}
		rt_page_enc_begin(&cp->enc, cp->out, KR_PAGE);
		if (cp->psize)
			kr_next(cp, 1);
	}
	return 0;
}

/*
 * Every CPU's records merged by time (forks before what follows them),
 * the followed threads' re-encoded into their CPU's stream in dir. 0, or
 * -1 having said why.
 */
static int kr_convert(struct kr *k, const char *dir)
{
	static char payload[65536];
	int err = 0;
	for (;;) {
		int c = -1;
		for (int i = 0; i < k->ncpu; i++)
			if (k->cpu[i].have && (c < 0 || k->cpu[i].ts < k->cpu[c].ts))
				c = i;
		if (c < 0)
			break;
		struct kr_cpu *cp = &k->cpu[c];
		struct tep_record rec = {.ts = cp->ts,
					 .data = cp->data,
					 .size = kbuffer_event_size(cp->kb),
					 .cpu = c};
		struct tep_event *e = tep_find_event_by_record(k->tep, &rec);
		int keep = e && kr_keep(k, e, &rec);
		struct kr_event *x = keep ? kr_event_of(k, e) : NULL;
		int len = x ? kr_encode(x, rec.data, rec.size, payload, sizeof(payload)) : -1;
		int put = len >= 0 ? kr_put(cp, c, dir, x->id, cp->ts, payload, (uint32_t)len) : 0;
		if (put < 0) {
			err = put;
			break;
		}
		if (put) {
			x->count++;
			k->kept++;
		} else if (e && !keep) {
			k->dropped_filter++; /* (not one of the followed threads) */
		} else {
			k->unencodable++; /* (no format for it, or too big for a page) */
		}
		kr_next(cp, 0);
	}
	for (int c = 0; c < k->ncpu && err == 0; c++)
		err = kr_flush_page(&k->cpu[c], c, dir);
	if (err < 0) {
		fprintf(stderr, "ringtrace record: %s: %s\n", dir, ringtrace_last_error());
		return -1;
	}
	return 0;
}

/* The metadata: the kernel's event formats, the recording's clock, the
 * counts. 0, or -1 having said why. */
static int kr_write_metadata(struct kr *k, const char *dir, const struct ringtrace_trace_clock *clk,
			     const int64_t *realtime_offset, uint64_t overrun, uint64_t dropped)
{
	struct ringtrace_trace_event_def *defs = calloc(k->nev ? k->nev : 1, sizeof(*defs));
	if (!defs)
		return -1;
	for (uint32_t i = 0; i < k->nev; i++) {
		defs[i].id = k->ev[i].id;
		defs[i].kind = RINGTRACE_KIND_INSTANT;
		defs[i].name = k->ev[i].tep->name;
		defs[i].print_fmt = k->ev[i].print_fmt;
		defs[i].fields = k->ev[i].fields;
		defs[i].nfields = k->ev[i].nfields;
	}
	/* (missed: the kernel's drops, and records that could not be
	 * re-encoded: no format for them, or too big for a page) */
	struct ringtrace_trace_stat stats[4] = {{"hit", k->kept},
						{"missed", dropped + k->unencodable},
						{"overrun", overrun},
						{"read", k->kept}};
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	struct ringtrace_trace_process pr = {0, "kernel", "", host};
	struct ringtrace_trace_clock own;
	if (!clk) {
		kr_calibrate(k, &own);
		clk = &own;
	}
	struct ringtrace_ctf_trace_desc desc = {
		*clk, defs, k->nev, stats, 4,
		NULL, 0,    &pr,    1,     realtime_offset ? *realtime_offset : k->realtime_offset};
	int err = ringtrace_ctf_write_described(dir, &desc);
	free(defs);
	if (err < 0) {
		fprintf(stderr, "ringtrace record: %s\n", ringtrace_last_error());
		return -1;
	}
	return kr_save_formats(k, dir);
}

/*
 * The event formats of the systems enabled, parsed into a new tep. Not
 * libtracefs's tracefs_local_events_system: it also parses /proc/kallsyms
 * (over 100,000 symbols, a malloc each), saved_cmdlines and printk_formats,
 * which re-encoding never uses (no record is printed here): a tenth of a
 * second a stop, and half a minute under a sanitizer's allocator. A
 * format libtraceevent cannot parse leaves its event out, as libtracefs's
 * own reading would (kr_define_enabled says which). NULL: out of memory.
 */
static struct tep_handle *kr_local_events(struct kr *k)
{
	struct tep_handle *tep = tep_alloc();
	if (!tep)
		return NULL;
	/* (the page header's layout: kbuffer takes it from the kernel itself,
	 * tep keeps it for completeness) */
	char *path = tracefs_get_tracing_file("events/header_page");
	if (path) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		char buf[4096];
		ssize_t got = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		if (got > 0) {
			buf[got] = 0;
			tep_parse_header_page(tep, buf, (unsigned long)got, (int)sizeof(long));
		}
		if (fd >= 0)
			close(fd);
		tracefs_put_tracing_file(path);
	}
	int size = 0;
	for (int i = 0; i < k->nsys; i++) {
		char **evs = tracefs_system_events(NULL, k->systems[i]);
		for (int j = 0; evs && evs[j]; j++) {
			char *fmt = tracefs_event_file_read(NULL, k->systems[i], evs[j], "format",
							    &size);
			if (fmt && size > 0)
				tep_parse_event(tep, fmt, (unsigned long)size, k->systems[i]);
			free(fmt);
		}
		tracefs_list_free(evs);
	}
	return tep;
}

int kr_finish(struct kr *k, const char *out, const struct ringtrace_trace_clock *clk,
	      const int64_t *realtime_offset, int quiet)
{
	tracefs_trace_off(k->in);
	kr_drain_stop(k);
	k->tep = kr_local_events(k);
	if (!k->tep) {
		fprintf(stderr, "ringtrace record: kernel events: cannot read the event formats\n");
		return -1;
	}
	char dir[4200];
	snprintf(dir, sizeof(dir), "%s/kernel", out);
	kr_define_enabled(k);
	uint64_t overrun = 0, dropped = 0;
	if (kr_read_setup(k, dir, &overrun, &dropped) < 0 || kr_convert(k, dir) < 0 ||
	    kr_write_metadata(k, dir, clk, realtime_offset, overrun, dropped) < 0)
		return -1;
	uint64_t missed = 0;
	for (int c = 0; c < k->ncpu; c++)
		missed += k->cpu[c].missed;
	if (!quiet)
		fprintf(stderr,
			"ringtrace: kernel: %" PRIu64 " events kept in %s (%" PRIu64
			" of other threads left out), %" PRIu64
			" lost by the kernel (overrun %" PRIu64 ", dropped %" PRIu64 ")%s\n",
			k->kept, dir, k->dropped_filter, overrun + dropped, overrun, dropped,
			missed ? " (the buffer wrapped: raise --kernel-buffer)" : "");
	return 0;
}
