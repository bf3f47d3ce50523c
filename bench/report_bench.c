/*
 * ringtrace-bench report: how fast does `ringtrace report` read a trace?
 *
 * T threads (default 4) emit N one-int events (bench_int, default 10 M)
 * as fast as they can into an in-process session (discard mode) writing a
 * trace directory (default on tmpfs, /dev/shm). The metadata's `stat hit`
 * and `stat missed` lines must show every event recorded; if the default
 * buffer dropped some, the trace is generated again with a 256 MiB pool.
 *
 * Then the `ringtrace` tool next to this binary is timed reading the trace:
 * `ringtrace report DIR` and `ringtrace stat DIR`, stdout to /dev/null,
 * median of 3 runs each. If babeltrace2 is on the PATH, its text output
 * (`babeltrace2 DIR`) and its counter sink (`babeltrace2 DIR -c
 * sink.utils.counter`) are timed once each, as a reference.
 *
 * Output, one `key: value` per line: events, trace bytes, the rate of each
 * reader in M events/s, the report/babeltrace2-text ratio and
 * `target (>= 5M events/s): met` or `NOT met` (for `ringtrace report`).
 * The trace directory is removed at the end.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ringtrace/session.h>

#include "bench.h"
#include "bench_common.h"
#include "bench_events.h"

extern char **environ;

#define REPORT_RUNS 3
#define REPORT_TARGET_MEPS 5.0
#define REPORT_BIG_POOL ((size_t)256 << 20)

struct report_opts {
	uint64_t events;
	unsigned threads;
	const char *dir;
};

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
	if (remove(path) != 0 && errno != ENOENT) {
		fprintf(stderr, "ringtrace-bench report: cannot remove %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	return 0;
}

/* Remove DIR and everything in it: 0 (also if it did not exist), or -1. */
static int remove_tree(const char *dir)
{
	struct stat sb;
	if (lstat(dir, &sb) != 0)
		return errno == ENOENT ? 0 : -1;
	return nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

/*
 * Record N events from T threads into DIR with the given pool size (0:
 * default). Reads back the metadata's accounting into *hit and *missed.
 * 0, or -1 (message on stderr).
 */
static int generate_trace(const struct report_opts *o, size_t pool_size, uint64_t *hit,
			  uint64_t *missed)
{
	if (remove_tree(o->dir) != 0) {
		fprintf(stderr, "ringtrace-bench report: cannot remove %s\n", o->dir);
		return -1;
	}
	struct ringtrace_session_config cfg;
	ringtrace_session_config_init(&cfg);
	cfg.output_dir = o->dir;
	cfg.events = "bench_int";
	cfg.pool_size = pool_size;
	if (ringtrace_session_start(&cfg) < 0) {
		fprintf(stderr, "ringtrace-bench report: %s\n", ringtrace_last_error());
		return -1;
	}
	struct emitter *e = calloc(o->threads, sizeof(*e));
	if (!e) {
		fprintf(stderr, "ringtrace-bench report: out of memory\n");
		ringtrace_session_stop();
		return -1;
	}
	unsigned started = 0;
	int rc = 0;
	for (unsigned i = 0; i < o->threads; i++) {
		e[i].n = o->events / o->threads + (i < o->events % o->threads ? 1 : 0);
		if (pthread_create(&e[i].t, NULL, emitter_main, &e[i]) != 0) {
			fprintf(stderr, "ringtrace-bench report: cannot start thread %u\n", i);
			rc = -1;
			break;
		}
		started++;
	}
	for (unsigned i = 0; i < started; i++)
		pthread_join(e[i].t, NULL);
	free(e);
	if (ringtrace_session_stop() < 0) {
		fprintf(stderr, "ringtrace-bench report: %s\n", ringtrace_last_error());
		return -1;
	}
	if (rc)
		return rc;

	char path[PATH_MAX + 16], line[512];
	snprintf(path, sizeof(path), "%s/metadata", o->dir);
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "ringtrace-bench report: cannot open %s: %s\n", path,
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
		fprintf(stderr, "ringtrace-bench report: %s lacks the stat hit/missed lines\n",
			path);
		return -1;
	}
	return 0;
}

/*
 * Run argv (argv[0] a path, or a name looked up in PATH if `search`) with
 * stdout on /dev/null, stderr inherited (or on /dev/null too if `quiet`);
 * seconds of wall time, or NAN if it could not be started or did not exit
 * 0 (message on stderr).
 */
static double time_command(char *const argv[], int search, int quiet)
{
	posix_spawn_file_actions_t fa;
	if (posix_spawn_file_actions_init(&fa) != 0)
		return NAN;
	posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
	if (quiet)
		posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	pid_t pid;
	uint64_t t0 = bench_now_ns();
	int err = search ? posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ)
			 : posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (err != 0) {
		fprintf(stderr, "ringtrace-bench report: cannot run %s: %s\n", argv[0],
			strerror(err));
		return NAN;
	}
	int status;
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "ringtrace-bench report: waitpid: %s\n", strerror(errno));
			return NAN;
		}
	}
	double secs = (double)(bench_now_ns() - t0) / 1e9;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		if (WIFEXITED(status))
			fprintf(stderr, "ringtrace-bench report: %s %s exited with status %d\n",
				argv[0], argv[1], WEXITSTATUS(status));
		else
			fprintf(stderr, "ringtrace-bench report: %s %s killed by signal %d\n",
				argv[0], argv[1], WIFSIGNALED(status) ? WTERMSIG(status) : 0);
		return NAN;
	}
	return secs;
}

/* Median of `runs` timed runs; NAN if any failed. */
static double time_median(char *const argv[], int runs)
{
	double s[REPORT_RUNS];
	for (int i = 0; i < runs && i < REPORT_RUNS; i++) {
		s[i] = time_command(argv, 0, 0);
		if (isnan(s[i]))
			return NAN;
	}
	return bench_median(s, (size_t)(runs < REPORT_RUNS ? runs : REPORT_RUNS));
}

/* Is `name` an executable file in a directory of PATH? */
static int in_path(const char *name)
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

static double meps(uint64_t events, double secs)
{
	return (double)events / secs / 1e6;
}

static void report_usage(FILE *f)
{
	fprintf(f, "usage: ringtrace-bench report [options]\n\n"
		   "Records a trace of N one-int events from T threads, then times the\n"
		   "`ringtrace` tool next to this binary reading it (`report` and `stat`,\n"
		   "median of 3 runs) and, if installed, babeltrace2 (text and counter sinks,\n"
		   "one run each). Target: `ringtrace report` >= 5 M events/s.\n\n"
		   "options:\n"
		   "  --events N      events to record (default 10000000)\n"
		   "  --threads T     threads emitting them (default 4)\n"
		   "  --dir DIR       trace directory, removed first and at the end\n"
		   "                  (default /dev/shm/ringtrace-bench-report)\n"
		   "  -h, --help      this help\n");
}

/* Reads the options into *o; returns -1 to go on, else the exit status. */
static int report_parse_args(int argc, char **argv, struct report_opts *o)
{
	static const struct option longopts[] = {
		{"events", required_argument, NULL, 'e'},
		{"threads", required_argument, NULL, 't'},
		{"dir", required_argument, NULL, 'd'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			report_usage(stdout);
			return BENCH_EXIT_OK;
		case 'e':
			if (bench_parse_u64(optarg, 1, 1000000000000ull, &o->events))
				return bench_usage_error("report", "--events: '%s' is not a count",
							 optarg);
			break;
		case 't':
			if (bench_parse_uint(optarg, 1, 1024, &o->threads))
				return bench_usage_error(
					"report", "--threads: '%s' is not in 1..1024", optarg);
			break;
		case 'd':
			if (!*optarg || strlen(optarg) >= PATH_MAX)
				return bench_usage_error(
					"report", "--dir: '%s' is not a usable directory name",
					optarg);
			o->dir = optarg;
			break;
		default: /* ':' missing value, '?' unknown option */
			return bench_getopt_error("report", c, argv);
		}
	}
	if (optind < argc)
		return bench_usage_error("report", "unexpected argument '%s'", argv[optind]);
	return -1;
}

/* The tool: `ringtrace` in the directory of this executable; -1 if not there (said). */
static int report_find_tool(char *tool, size_t size)
{
	char self[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len < 0) {
		fprintf(stderr, "ringtrace-bench report: cannot read /proc/self/exe: %s\n",
			strerror(errno));
		return -1;
	}
	self[len] = '\0';
	snprintf(tool, size, "%s/ringtrace", dirname(self));
	if (access(tool, X_OK) != 0) {
		fprintf(stderr,
			"ringtrace-bench report: the ringtrace tool is not at %s (%s); build it next "
			"to ringtrace-bench\n",
			tool, strerror(errno));
		return -1;
	}
	return 0;
}

/* babeltrace2 as a reference, one run each, where it is installed. */
static void report_babeltrace(char *dir, uint64_t events, double t_report)
{
	if (in_path("babeltrace2")) {
		char *bt_text[] = {"babeltrace2", dir, NULL};
		char *bt_counter[] = {"babeltrace2", dir, "-c", "sink.utils.counter", NULL};
		/* its stderr is dropped: it warns about the header's len and pad fields */
		double t_text = time_command(bt_text, 1, 1);
		if (isnan(t_text))
			printf("babeltrace2 text: failed\n");
		else
			printf("babeltrace2 text: %.2f M events/s (%.3f s)\n", meps(events, t_text),
			       t_text);
		fflush(stdout);
		double t_counter = time_command(bt_counter, 1, 1);
		if (isnan(t_counter))
			printf("babeltrace2 counter: failed\n");
		else
			printf("babeltrace2 counter: %.2f M events/s (%.3f s)\n",
			       meps(events, t_counter), t_counter);
		if (isnan(t_text))
			printf("ratio report/babeltrace2 text: n/a\n");
		else
			printf("ratio report/babeltrace2 text: %.2f\n", t_text / t_report);
	} else {
		printf("babeltrace2: not installed (no reference)\n");
	}
}

int report_bench_main(int argc, char **argv)
{
	struct report_opts o = {10000000ull, 4, "/dev/shm/ringtrace-bench-report"};
	int status = report_parse_args(argc, argv, &o);
	if (status >= 0)
		return status;

	char tool[PATH_MAX + 16];
	if (report_find_tool(tool, sizeof(tool)) < 0)
		return BENCH_EXIT_FAIL;

	/* (1) The trace: default buffer, then a 256 MiB pool if it dropped events. */
	uint64_t hit = 0, missed = 0;
	if (generate_trace(&o, 0, &hit, &missed) != 0)
		goto fail;
	if (missed != 0 || hit != o.events) {
		fprintf(stderr,
			"ringtrace-bench report: default buffer recorded %" PRIu64
			", dropped %" PRIu64 "; again with a %zu MiB pool\n",
			hit, missed, REPORT_BIG_POOL >> 20);
		if (generate_trace(&o, REPORT_BIG_POOL, &hit, &missed) != 0)
			goto fail;
	}
	if (missed != 0 || hit != o.events) {
		fprintf(stderr,
			"ringtrace-bench report: recorded %" PRIu64 " of %" PRIu64
			" events (dropped %" PRIu64 ")\n",
			hit, o.events, missed);
		goto fail;
	}
	tree_bytes = 0;
	nftw(o.dir, add_size, 16, FTW_PHYS);
	printf("events: %" PRIu64 "\n", o.events);
	printf("trace bytes: %" PRIu64 "\n", tree_bytes);
	fflush(stdout);

	/* (2), (3) The tool, median of 3 runs. */
	char *dir = (char *)o.dir;
	char *report_argv[] = {tool, "report", dir, NULL};
	char *stat_argv[] = {tool, "stat", dir, NULL};
	double t_report = time_median(report_argv, REPORT_RUNS);
	if (isnan(t_report))
		goto fail;
	printf("ringtrace report: %.2f M events/s (%.3f s)\n", meps(o.events, t_report), t_report);
	fflush(stdout);
	double t_stat = time_median(stat_argv, REPORT_RUNS);
	if (isnan(t_stat))
		goto fail;
	printf("ringtrace stat: %.2f M events/s\n", meps(o.events, t_stat));
	fflush(stdout);

	/* (4) babeltrace2 as a reference, one run each. */
	report_babeltrace(dir, o.events, t_report);

	int met = meps(o.events, t_report) >= REPORT_TARGET_MEPS;
	printf("target (>= 5M events/s): %s\n", met ? "met" : "NOT met");
	if (remove_tree(o.dir) != 0)
		fprintf(stderr, "ringtrace-bench report: could not remove %s\n", o.dir);
	return BENCH_EXIT_OK;

fail:
	if (remove_tree(o.dir) != 0)
		fprintf(stderr, "ringtrace-bench report: could not remove %s\n", o.dir);
	return BENCH_EXIT_FAIL;
}
