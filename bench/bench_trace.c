/*
 * bench/bench_trace.c - the trace and the child processes of the reading
 * benchmarks (see bench_trace.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ringtrace/session.h>

#include "bench_common.h"
#include "bench_events.h"
#include "bench_trace.h"

extern char **environ;

#define BIG_POOL ((size_t)256 << 20)
#define MAX_RUNS 9

struct emitter {
	uint64_t n;
	pthread_t t;
};

static void *emitter_main(void *arg)
{
	struct emitter *e = arg;
	for (uint64_t i = 0; i < e->n; i++)
		trace_bench_int((int)i);
	return NULL;
}

/* nftw callbacks: total size of the regular files; removal, depth first. */
static uint64_t tree_bytes;

static int add_size(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)path;
	(void)ftw;
	if (type == FTW_F && S_ISREG(sb->st_mode))
		tree_bytes += (uint64_t)sb->st_size;
	return 0;
}

static int remove_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	if (remove(path) != 0 && errno != ENOENT)
		return -1;
	return 0;
}

int bench_remove_tree(const char *cmd, const char *dir)
{
	struct stat sb;
	if (lstat(dir, &sb) != 0) {
		if (errno == ENOENT)
			return 0;
	} else if (nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS) == 0) {
		return 0;
	}
	fprintf(stderr, "ringtrace-bench %s: cannot remove %s: %s\n", cmd, dir, strerror(errno));
	return -1;
}

uint64_t bench_tree_bytes(const char *dir)
{
	tree_bytes = 0;
	nftw(dir, add_size, 16, FTW_PHYS);
	return tree_bytes;
}

/* The threads' events, each thread its share. 0, or -1 (said). */
static int emit_all(const char *cmd, uint64_t events, unsigned threads)
{
	struct emitter *e = calloc(threads, sizeof(*e));
	if (!e) {
		fprintf(stderr, "ringtrace-bench %s: out of memory\n", cmd);
		return -1;
	}
	unsigned started = 0;
	int rc = 0;
	for (unsigned i = 0; i < threads; i++) {
		e[i].n = events / threads + (i < events % threads ? 1 : 0);
		if (pthread_create(&e[i].t, NULL, emitter_main, &e[i]) != 0) {
			fprintf(stderr, "ringtrace-bench %s: cannot start thread %u\n", cmd, i);
			rc = -1;
			break;
		}
		started++;
	}
	for (unsigned i = 0; i < started; i++)
		pthread_join(e[i].t, NULL);
	free(e);
	return rc;
}

/* The metadata's `stat hit` and `stat missed`: 0, or -1 (said). */
static int read_accounting(const char *cmd, const char *dir, uint64_t *hit, uint64_t *missed)
{
	char path[PATH_MAX + 16], line[512];
	snprintf(path, sizeof(path), "%s/metadata", dir);
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "ringtrace-bench %s: cannot open %s: %s\n", cmd, path,
			strerror(errno));
		return -1;
	}
	int seen = 0;
	*hit = *missed = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v;
		if (sscanf(line, "stat hit %llu", &v) == 1) {
			*hit = v;
			seen |= 1;
		}
		if (sscanf(line, "stat missed %llu", &v) == 1) {
			*missed = v;
			seen |= 2;
		}
	}
	fclose(f);
	if (seen != 3) {
		fprintf(stderr, "ringtrace-bench %s: %s lacks the stat hit/missed lines\n", cmd,
			path);
		return -1;
	}
	return 0;
}

/* One recording with the given pool size (0: default). 0, or -1 (said). */
static int record_once(const char *cmd, const char *dir, uint64_t events, unsigned threads,
		       size_t pool_size, uint64_t *hit, uint64_t *missed)
{
	if (bench_remove_tree(cmd, dir) != 0)
		return -1;
	struct ringtrace_session_config cfg;
	ringtrace_session_config_init(&cfg);
	cfg.output_dir = dir;
	cfg.events = "bench_int";
	cfg.pool_size = pool_size;
	if (ringtrace_session_start(&cfg) < 0) {
		fprintf(stderr, "ringtrace-bench %s: %s\n", cmd, ringtrace_last_error());
		return -1;
	}
	int rc = emit_all(cmd, events, threads);
	if (ringtrace_session_stop() < 0) {
		fprintf(stderr, "ringtrace-bench %s: %s\n", cmd, ringtrace_last_error());
		return -1;
	}
	if (rc)
		return rc;
	return read_accounting(cmd, dir, hit, missed);
}

int bench_record_ints(const char *cmd, const char *dir, uint64_t events, unsigned threads)
{
	uint64_t hit = 0, missed = 0;
	if (record_once(cmd, dir, events, threads, 0, &hit, &missed) != 0)
		return -1;
	if (missed != 0 || hit != events) {
		fprintf(stderr,
			"ringtrace-bench %s: default buffer recorded %llu, dropped %llu; again with "
			"a %zu MiB pool\n",
			cmd, (unsigned long long)hit, (unsigned long long)missed, BIG_POOL >> 20);
		if (record_once(cmd, dir, events, threads, BIG_POOL, &hit, &missed) != 0)
			return -1;
	}
	if (missed != 0 || hit != events) {
		fprintf(stderr, "ringtrace-bench %s: recorded %llu of %llu events (dropped %llu)\n",
			cmd, (unsigned long long)hit, (unsigned long long)events,
			(unsigned long long)missed);
		return -1;
	}
	return 0;
}

/* The child's stdout, a memory file, into out (NUL-terminated, the rest dropped). */
static void read_output(int fd, char *out, size_t outsize)
{
	ssize_t n = pread(fd, out, outsize - 1, 0);
	out[n > 0 ? (size_t)n : 0] = '\0';
}

/* Whether wait_child samples the child's peak memory, and what it found. */
static int sample_peak;
static long last_child_peak_kb = -1;

void bench_measure_child_peak(int on)
{
	sample_peak = on;
}

long bench_last_child_peak_kb(void)
{
	return last_child_peak_kb;
}

/* VmHWM of a running process in KiB: its peak resident memory since its exec; -1 if gone. */
static long read_hwm_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/*
 * Wait for pid, sampling its VmHWM every 2 ms if asked: wait4's ru_maxrss
 * would not do, as a child that posix_spawn starts shares the parent's
 * memory until its exec and inherits its high-water mark (the benchmark's
 * own store). Its exit status, or -1 if killed (said unless quiet).
 */
static int wait_child(const char *cmd, pid_t pid, char *const argv[], int quiet)
{
	int status;
	last_child_peak_kb = -1;
	for (;;) {
		pid_t w = waitpid(pid, &status, sample_peak ? WNOHANG : 0);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			fprintf(stderr, "ringtrace-bench %s: waitpid: %s\n", cmd, strerror(errno));
			return -1;
		}
		if (w == 0) {
			long kb = read_hwm_kb(pid);
			if (kb > last_child_peak_kb)
				last_child_peak_kb = kb;
			bench_sleep_us(2000);
		}
	}
	if (WIFEXITED(status)) {
		if (WEXITSTATUS(status) != 0 && !quiet)
			fprintf(stderr, "ringtrace-bench %s: %s %s exited with status %d\n", cmd,
				argv[0], argv[1] ? argv[1] : "", WEXITSTATUS(status));
		return WEXITSTATUS(status);
	}
	if (!quiet)
		fprintf(stderr, "ringtrace-bench %s: %s %s killed by signal %d\n", cmd, argv[0],
			argv[1] ? argv[1] : "", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	return -1;
}

/* Start argv with stdout on outfd (-1: /dev/null): 0 with *pid, or an errno value. */
static int spawn_child(char *const argv[], int search, int quiet, int outfd, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	if (posix_spawn_file_actions_init(&fa) != 0)
		return ENOMEM;
	if (outfd >= 0)
		posix_spawn_file_actions_adddup2(&fa, outfd, STDOUT_FILENO);
	else
		posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
	if (quiet)
		posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	int err = search ? posix_spawnp(pid, argv[0], &fa, NULL, argv, environ)
			 : posix_spawn(pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	return err;
}

double bench_time_command(const char *cmd, char *const argv[], int search, int quiet, char *out,
			  size_t outsize, int *status)
{
	/* the output into a memory file, read after the exit: the wait is free to sample */
	int outfd = -1;
	if (status)
		*status = -1;
	if (out && (outsize == 0 || (outfd = memfd_create("bench-out", MFD_CLOEXEC)) < 0))
		return NAN;
	pid_t pid;
	uint64_t t0 = bench_now_ns();
	int err = spawn_child(argv, search, quiet, outfd, &pid);
	if (err != 0) {
		if (!quiet)
			fprintf(stderr, "ringtrace-bench %s: cannot run %s: %s\n", cmd, argv[0],
				strerror(err));
		if (outfd >= 0)
			close(outfd);
		return NAN;
	}
	int st = wait_child(cmd, pid, argv, quiet);
	double secs = (double)(bench_now_ns() - t0) / 1e9;
	if (outfd >= 0) {
		read_output(outfd, out, outsize);
		close(outfd);
	}
	if (status)
		*status = st;
	return st == 0 ? secs : NAN;
}

double bench_time_median(const char *cmd, char *const argv[], int runs)
{
	double s[MAX_RUNS];
	if (runs > MAX_RUNS)
		runs = MAX_RUNS;
	for (int i = 0; i < runs; i++) {
		s[i] = bench_time_command(cmd, argv, 0, 0, NULL, 0, NULL);
		if (isnan(s[i]))
			return NAN;
	}
	return bench_median(s, (size_t)runs);
}

int bench_in_path(const char *name)
{
	const char *p = getenv("PATH");
	if (!p || !*p)
		p = "/usr/local/bin:/usr/bin:/bin";
	while (*p) {
		const char *colon = strchr(p, ':');
		size_t len = colon ? (size_t)(colon - p) : strlen(p);
		char path[PATH_MAX];
		if (len == 0)
			snprintf(path, sizeof(path), "./%s", name);
		else
			snprintf(path, sizeof(path), "%.*s/%s", (int)len, p, name);
		if (access(path, X_OK) == 0)
			return 1;
		if (!colon)
			break;
		p = colon + 1;
	}
	return 0;
}

int bench_find_sibling(const char *cmd, const char *name, char *path, size_t size)
{
	char self[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len < 0) {
		fprintf(stderr, "ringtrace-bench %s: cannot read /proc/self/exe: %s\n", cmd,
			strerror(errno));
		return -1;
	}
	self[len] = '\0';
	snprintf(path, size, "%s/%s", dirname(self), name);
	if (access(path, R_OK) != 0) {
		fprintf(stderr,
			"ringtrace-bench %s: %s is not at %s (%s); build it next to "
			"ringtrace-bench\n",
			cmd, name, path, strerror(errno));
		return -1;
	}
	return 0;
}
