/*
 * ringtrace record: -- CMD, -p PID / -a (src/collect/programs.c), -k.
 *
 * record -- CMD runs a command with the recorder switched on through the
 * environment (RINGTRACE_OUTPUT and friends, read by libringtrace's
 * constructor in the traced program: see include/ringtrace/session.h), so
 * any program linked with libringtrace can be traced without code
 * changes. The pool is a named shared-memory object, which lets this
 * process map it and show a live status line while the program runs,
 * and recover the trace from it if the program dies.
 *
 * The pool's name has a random part (getrandom): nobody can create an
 * object at that name before the program does, to block the recording
 * or capture it. The program's library creates it O_CREAT|O_EXCL, 0600
 * (an existing object is an error, never used), and this process maps it
 * (live view, recovery) only if it is the program's: owned by our
 * effective uid (the program runs with our credentials; a set-user-ID
 * program ignores RINGTRACE_*), with no access for anyone else. Creating
 * the object here and handing the program a descriptor would close the
 * window between the program's exit and our look at the name too, but it
 * needs the pool to be built in an object someone else made (the ring
 * buffer creates its own), and the named object is what a user recovers
 * by hand with `ringtrace recover` when this process died as well: the
 * name stays. After the program's O_EXCL create, the name cannot be taken
 * over (/dev/shm is sticky, the object is 0600).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "base/base.h"
#include "collect/collect_api.h"
#include "kernel/kernel_api.h"
#include "output.h"
#include "ringtrace/ctf.h"
#include "ringtrace/ring.h"
#include "ringtrace/trace.h"
#include "verbs.h"

static volatile sig_atomic_t child_pid;
/* A signal to stop that came before there was a child to pass it to. */
static volatile sig_atomic_t early_sig;

/*
 * Pass signals on to the child, except those the terminal sent to the
 * whole foreground process group (Ctrl-C): the child got those already.
 */
static void forward(int sig, siginfo_t *info, void *ctx)
{
	(void)ctx;
	int e = errno; /* (kill may set it; the code it interrupted reads it) */
	if (child_pid <= 0 && sig != SIGUSR2)
		early_sig = sig;
	if (child_pid > 0 && !(info && info->si_code == SI_KERNEL))
		kill(child_pid, sig);
	errno = e;
}

/*
 * ringtrace record -k SPEC [--duration S] (no command, no -p/-a): every
 * thread's kernel events until Ctrl-C or the duration, into DIR/kernel,
 * on the recorder's own calibration of the counter. -k is all that was
 * asked for: if it cannot be had, that is the command's failure.
 */
static volatile sig_atomic_t konly_stop;
static void konly_on_signal(int sig)
{
	(void)sig;
	konly_stop = 1;
}

static int record_kernel_only(const char *out, char *const *specs, int nk, size_t kb, long group,
			      uint64_t duration_ns, int quiet)
{
	int ofd = co_outdir(out, group);
	if (ofd < 0)
		return 1;
	/* (the handlers before the instance: a signal while it is made only
	 * ends the recording at once) */
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = konly_on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	struct kr *kr;
	char why[512];
	if (kr_start(&kr, out, specs, nk, kb, 1, why, sizeof(why)) < 0) {
		fprintf(stderr, "ringtrace record: -k: %s\n", why);
		unlinkat(ofd, "kernel", AT_REMOVEDIR);
		close(ofd);
		rmdir(out); /* (only if it is empty: made here) */
		return 1;
	}
	close(ofd);
	if (!quiet)
		fprintf(stderr,
			"ringtrace record: recording every thread's kernel events into %s/kernel; "
			"%s\n",
			out, duration_ns ? "until the duration or Ctrl-C" : "Ctrl-C to stop");
	uint64_t t0 = rt_mono_ns();
	while (!konly_stop) {
		struct timespec d = {0, 50 * 1000 * 1000};
		nanosleep(&d, NULL);
		if (duration_ns && rt_mono_ns() - t0 >= duration_ns)
			break;
	}
	int rc = kr_finish(kr, out, NULL, NULL, quiet) < 0 ? 1 : 0;
	kr_abort(kr);
	return rc;
}

static void record_usage(FILE *f)
{
	fprintf(f,
		"usage: ringtrace record [options] -- CMD [ARGS...]\n"
		"       ringtrace record [options] -p PID[,PID...] [--duration SECONDS]\n"
		"       ringtrace record [options] -a [--duration SECONDS] [-- CMD [ARGS...]]\n"
		"       ringtrace record -k SPEC [-k SPEC...] [--duration SECONDS]\n"
		"\n"
		"Run CMD (a program linked with libringtrace) with tracing on and write the\n"
		"trace to a CTF directory. With -p, record programs that are already running\n"
		"(see `ringtrace ps`) until Ctrl-C, --duration or their exit, each into\n"
		"DIR/<command>-<pid>; they go on running with tracing off afterwards.\n"
		"\n"
		"options:\n"
		"  -e, --events SPEC      events to enable: names or globs, comma-separated,\n"
		"                         '-' in front to disable; may be repeated (default: all)\n"
		"  -f, --filter EXPR      record only the calls of the events of the preceding\n"
		"                         -e whose fields match EXPR (ftrace syntax: 'len > 64',\n"
		"                         'value & 1', 'name ~ \"eth*\" && !(pid == 1)'); one -f\n"
		"                         per -e: '-e \"a,b*\" -f EXPR' filters several events.\n"
		"                         Rejected calls are counted (ringtrace stat)\n"
		"      --trigger SPEC     'EVENT [if EXPR]: ACTION[:N]', ACTION one of snapshot\n"
		"                         (write DIR.snapshot-K), traceoff, traceon,\n"
		"                         enable_event:NAME, disable_event:NAME; run at most N\n"
		"                         times if :N is given; may be repeated\n"
		"  -o, --output DIR       trace directory (default: ringtrace-YYYYmmdd-HHMMSS):\n"
		"                         created 0700, files 0600; an existing DIR must be\n"
		"                         ours, empty and writable by nobody else\n"
		"      --group GROUP      let GROUP (a name or number) read the trace:\n"
		"                         directory 0750, files 0640, given that group\n"
		"                         (default: RINGTRACE_GROUP if set, else private)\n"
		"      --overwrite        flight recorder: keep only the last buffer's worth,\n"
		"                         written when CMD exits or on `ringtrace snapshot PID`\n"
		"      --buffer-size SIZE ring buffer pool (default 16m; k/m/g suffixes)\n"
		"      --page-size SIZE   ring buffer page (default 64k)\n"
		"  -p, --pid PID[,PID...] attach to these running programs (yours; root: any)\n"
		"  -a, --all              every running program of yours (root: everyone's)\n"
		"                         and those that start while it records; with\n"
		"                         -- CMD: CMD (from its first event) and the programs\n"
		"                         it starts (attached to as they appear)\n"
		"      --duration SECONDS with -p, -a or -k alone: stop after this long\n"
		"                         (default: Ctrl-C)\n"
		"  -k, --kernel SPEC      kernel events too (root): SYSTEM:EVENT, globs allowed\n"
		"                         (sched:sched_switch, 'sched:*'); may be repeated. Only\n"
		"                         the recorded threads' events unless --kernel-all.\n"
		"                         DIR is then a collection: CMD's trace in\n"
		"                         DIR/<command>-<pid>, the kernel's in DIR/kernel\n"
		"      --kernel-all       every thread's kernel events (-k alone: always)\n"
		"      --kernel-buffer SIZE  kernel buffer per CPU (default 4m), drained every 100 ms\n"
		"  -q, --quiet            no status line, no summary\n"
		"  -h, --help             this help\n"
		"\n"
		"Filters and triggers reach CMD as RINGTRACE_FILTERS and RINGTRACE_TRIGGERS\n"
		"(inherited from the environment when no -f / --trigger is given). CMD's\n"
		"library reports an invalid filter or trigger on CMD's stderr, with the column\n"
		"where it goes wrong; an event whose filter is invalid is not recorded.\n"
		"\n"
		"example:\n"
		"  ringtrace record -e 'req_*' -f 'ms > 100' -e net_rx \\\n"
		"      --overwrite --trigger 'req_error if code == 500: snapshot:1' -- ./server\n"
		"\n"
		"SIGINT, SIGTERM and SIGUSR2 are passed on to CMD. The exit status is CMD's.\n");
}

/*
 * The position of the first ';' (or ':' too, if `colon`) outside a
 * double-quoted string, as filter expressions quote them ("..." with \"
 * and \\ escapes), or -1. *open is set if a string is left unterminated.
 * The library splits RINGTRACE_FILTERS and RINGTRACE_TRIGGERS at ';' and a
 * filter entry at its last ':' outside quotes: an unquoted one inside an
 * argument would silently cut it in two.
 */
static long unquoted(const char *s, int colon, int *open)
{
	int inq = 0;
	*open = 0;
	for (const char *p = s; *p; p++) {
		if (inq) {
			if (*p == '\\' && p[1])
				p++;
			else if (*p == '"')
				inq = 0;
		} else if (*p == '"') {
			inq = 1;
		} else if (*p == ';' || (colon && *p == ':')) {
			return (long)(p - s);
		}
	}
	*open = inq;
	return -1;
}

/* Usage error unless `arg` (of option `opt`) can be passed in a ';'-list. */
static int check_list_arg(const char *opt, const char *arg, int colon)
{
	int open;
	long at = unquoted(arg, colon, &open);
	if (!*arg) {
		fprintf(stderr, "ringtrace record: %s: empty argument\n", opt);
		return -1;
	}
	if (at >= 0) {
		fprintf(stderr,
			"ringtrace record: %s '%s': '%c' at column %ld outside a quoted string%s\n",
			opt, arg, arg[at], at + 1,
			arg[at] == ';' ? " (';' separates entries; quote it: \";\")" : "");
		return -1;
	}
	if (open) {
		fprintf(stderr,
			"ringtrace record: %s '%s': unterminated string (missing closing '\"')\n",
			opt, arg);
		return -1;
	}
	return 0;
}

/* Append a, b and c to the malloc'ed list *list, after `sep` if it is not empty. */
static int append(char **list, const char *sep, const char *a, const char *b, const char *c)
{
	size_t old = *list ? strlen(*list) : 0;
	size_t n = old + strlen(sep) + strlen(a) + strlen(b) + strlen(c) + 1;
	char *p = realloc(*list, n);
	if (!p) {
		fprintf(stderr, "ringtrace record: out of memory\n");
		return -1;
	}
	if (!old)
		p[0] = 0;
	snprintf(p + old, n - old, "%s%s%s%s", old ? sep : "", a, b, c);
	*list = p;
	return 0;
}

/*
 * --group: the group's number (a name resolved here, so that the program
 * does not look it up), checked to be one we can give files to (root, or
 * one of our groups): -1 with a message if not.
 */
static long group_arg(const char *g)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(g, &end, 10);
	long gid;
	if (*g >= '0' && *g <= '9' && !*end && !errno && v < (gid_t)-1) {
		gid = (long)v;
	} else {
		struct group *gr = getgrnam(g);
		if (!gr) {
			fprintf(stderr, "ringtrace record: --group %s: no such group\n", g);
			return -1;
		}
		gid = (long)gr->gr_gid;
	}
	if (geteuid() == 0 || (gid_t)gid == getegid())
		return gid;
	gid_t groups[1024];
	int n = getgroups(1024, groups);
	for (int i = 0; i < n; i++)
		if (groups[i] == (gid_t)gid)
			return gid;
	fprintf(stderr,
		"ringtrace record: --group %s: not one of your groups (a file can be given only "
		"to a group one is a member of)\n",
		g);
	return -1;
}

static uint64_t dir_bytes(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	uint64_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		struct stat st; /* (never through a symbolic link) */
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode))
			n += (uint64_t)st.st_size;
	}
	closedir(d);
	return n;
}

/* A `stat` line of the trace's metadata (0 and *found 0 if none or unreadable). */
static uint64_t meta_stat(const char *dir, const char *key, int *found)
{
	uint64_t v = 0;
	*found = ringtrace_ctf_get_stat(dir, key, &v) == 1;
	return *found ? v : 0;
}

/*
 * The closing summary: the reader's per-stream accounting, the table
 * `ringtrace stat` prints, so that the two always agree (a page header
 * does not say the drops after a thread's last page: the metadata's
 * `dropped` lines do, and the reader adds them to their streams). The
 * whole trace is read for it, as stat reads it.
 */
static void print_summary(const char *tdir, const char *out)
{
	ringtrace_trace *t;
	if (ringtrace_trace_open(tdir, NULL, NULL, &t) < 0) {
		fprintf(stderr,
			"ringtrace record: the trace is written; reading it for the summary: %s\n",
			rt_esc(ringtrace_trace_open_error()));
		return;
	}
	out_read_all(t);
	struct out_totals sum;
	out_totals(t, &sum);
	int found;
	uint64_t dur = meta_stat(tdir, "duration_ns", &found);
	char uw[80] = "";
	if (sum.unwritten)
		snprintf(uw, sizeof(uw), ", %" PRIu64 " not written (the recorder's write failed)",
			 sum.unwritten);
	fprintf(stderr,
		"ringtrace: %s: %" PRIu64 " events recorded, %" PRIu64 " dropped, %" PRIu64
		" overwritten%s; %.1f MB in %.2f s (see `ringtrace stat %s`)\n",
		tdir, sum.events, sum.dropped, sum.overrun, uw, (double)sum.bytes / 1e6,
		(double)dur / 1e9, out);
	out_stream_table(stderr, t);
	uint64_t n = ringtrace_trace_errors(t);
	if (n)
		fprintf(stderr, "ringtrace record: %s: %" PRIu64 " error%s found in the trace\n",
			tdir, n, n == 1 ? "" : "s");
	ringtrace_trace_close(t);
}

/* What `ringtrace record` was asked for. */
struct rec_opts {
	char *events, *filters, *triggers; /* RINGTRACE_EVENTS, ... as built (malloc'ed) */
	const char *out, *bufsize, *pagesize, *pids, *kbuf;
	int all, overwrite, quiet;
	long group; /* -1: private */
	uint64_t duration_ns;
	char *kspecs[64];
	int nk, kall;
	uint64_t kbuf_bytes;
	char **cmd;         /* -- CMD [ARGS...], or NULL */
	int konly;          /* -k alone: every thread's kernel events */
	const char *last_e; /* the -e a -f applies to */
	int last_e_filtered;
	char defdir[64];
};

/* -f EXPR: the filter of the preceding -e. -1, or the exit status. */
static int rec_filter_arg(struct rec_opts *o, const char *arg)
{
	if (!o->last_e) {
		fprintf(stderr,
			"ringtrace record: -f '%s' must follow the -e EVENTS it filters (e.g. -e "
			"'req_*' -f 'len > 64')\n",
			arg);
		return 2;
	}
	if (o->last_e_filtered) {
		fprintf(stderr,
			"ringtrace record: a second -f for -e '%s' (one filter per -e; to combine "
			"conditions use && or ||)\n",
			o->last_e);
		return 2;
	}
	/* A filter on "a,-b" would say nothing about b. */
	if (o->last_e[0] == '-' || strstr(o->last_e, ",-")) {
		fprintf(stderr,
			"ringtrace record: -f '%s' follows -e '%s', which disables events: give "
			"the filtered events an -e of their own\n",
			arg, o->last_e);
		return 2;
	}
	if (check_list_arg("-f", arg, 1) < 0)
		return 2;
	if (append(&o->filters, ";", o->last_e, ":", arg) < 0)
		return 1;
	o->last_e_filtered = 1;
	return -1;
}

/* --duration SECONDS. -1, or the exit status. */
static int rec_duration_arg(struct rec_opts *o, const char *arg)
{
	char *end;
	errno = 0;
	double d = strtod(arg, &end);
	if (errno || end == arg || *end || !(d > 0) || d > 1e7) {
		fprintf(stderr,
			"ringtrace record: --duration '%s': expected seconds (e.g. 10 or 0.5)\n",
			arg);
		return 2;
	}
	o->duration_ns = (uint64_t)(d * 1e9);
	return -1;
}

/* One option (getopt_long's c and optarg): -1, or the exit status. */
static int rec_option(struct rec_opts *o, int c, char *arg, const char *word)
{
	switch (c) {
	case 'e':
		/* RINGTRACE_EVENTS is one comma list; ';' has no place in an
		 * event pattern and would cut a RINGTRACE_FILTERS entry. */
		if (check_list_arg("-e", arg, 0) < 0)
			return 2;
		if (append(&o->events, ",", arg, "", "") < 0)
			return 1;
		o->last_e = arg;
		o->last_e_filtered = 0;
		return -1;
	case 'f':
		return rec_filter_arg(o, arg);
	case 'T':
		if (check_list_arg("--trigger", arg, 0) < 0)
			return 2;
		return append(&o->triggers, ";", arg, "", "") < 0 ? 1 : -1;
	case 'o':
		o->out = arg;
		return -1;
	case 'w':
		o->overwrite = 1;
		return -1;
	case 'b':
		o->bufsize = arg;
		return -1;
	case 'S':
		o->pagesize = arg;
		return -1;
	case 'G':
		return (o->group = group_arg(arg)) < 0 ? 2 : -1;
	case 'q':
		o->quiet = 1;
		return -1;
	case 'p':
		o->pids = arg;
		return -1;
	case 'a':
		o->all = 1;
		return -1;
	case 'k':
		if (o->nk == 64) {
			fprintf(stderr, "ringtrace record: at most 64 -k\n");
			return 2;
		}
		o->kspecs[o->nk++] = arg;
		return -1;
	case 'K':
		o->kall = 1;
		return -1;
	case 'B':
		o->kbuf = arg;
		return -1;
	case 'D':
		return rec_duration_arg(o, arg);
	case 'h':
		record_usage(stdout);
		return 0;
	default:
		fprintf(stderr, "ringtrace record: unknown option or missing value: %s\n", word);
		record_usage(stderr);
		return 2;
	}
}

/* The command line into o: -1, or the exit status. */
static int rec_parse(struct rec_opts *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"events", required_argument, NULL, 'e'},
		{"filter", required_argument, NULL, 'f'},
		{"trigger", required_argument, NULL, 'T'},
		{"output", required_argument, NULL, 'o'},
		{"overwrite", no_argument, NULL, 'w'},
		{"buffer-size", required_argument, NULL, 'b'},
		{"page-size", required_argument, NULL, 'S'},
		{"group", required_argument, NULL, 'G'},
		{"quiet", no_argument, NULL, 'q'},
		{"pid", required_argument, NULL, 'p'},
		{"all", no_argument, NULL, 'a'},
		{"kernel", required_argument, NULL, 'k'},
		{"kernel-all", no_argument, NULL, 'K'},
		{"kernel-buffer", required_argument, NULL, 'B'},
		{"duration", required_argument, NULL, 'D'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;
	opterr = 0;
	optind = 1;
	/* '+': stop at the first non-option (the command). */
	while ((c = getopt_long(argc, argv, "+:ae:f:k:o:p:qh", longopts, NULL)) != -1) {
		int rc = rec_option(o, c, optarg, argv[optind - 1]);
		if (rc >= 0)
			return rc;
	}
	o->cmd = optind < argc ? argv + optind : NULL;
	return -1;
}

/* What to record, and with what: -1 if it makes sense, else 2 (said). */
static int rec_check_modes(struct rec_opts *o)
{
	if (o->pids && o->all) {
		fprintf(stderr, "ringtrace record: -p PID or -a, not both\n");
		return 2;
	}
	if (o->pids && o->cmd) {
		fprintf(stderr, "ringtrace record: -p PID or a command to run, not both "
				"(-a -- CMD records a command and the programs it starts)\n");
		return 2;
	}
	o->konly = o->nk && !o->pids && !o->all && !o->cmd;
	if (!o->pids && !o->all && o->duration_ns && !o->konly) {
		fprintf(stderr,
			"ringtrace record: --duration is for -p PID, -a and -k alone (a command "
			"records until it exits)\n");
		return 2;
	}
	if (!o->pids && !o->all && !o->cmd && !o->konly) {
		fprintf(stderr, "ringtrace record: no command to run (ringtrace record [options] "
				"-- CMD, or -p PID)\n");
		return 2;
	}
	return -1;
}

/*
 * The sizes, checked here by the rules the library applies to the same
 * strings (RINGTRACE_BUFFER_SIZE, RINGTRACE_PAGE_SIZE), so that a bad
 * value is a usage error before CMD runs, not a trace that never starts;
 * and -k's. -1, or 2 (said).
 */
static int rec_check_sizes(struct rec_opts *o)
{
	uint64_t pool = 0, page = 0;
	char why[200];
	const char *bad = NULL;
	if (o->bufsize && rt_parse_size_in(o->bufsize, 1, UINT64_MAX, &pool, why, sizeof(why)) < 0)
		bad = "--buffer-size";
	else if (o->pagesize &&
		 rt_parse_size_in(o->pagesize, 1, UINT64_MAX, &page, why, sizeof(why)) < 0)
		bad = "--page-size";
	else if (arg_pool_geometry(pool, page, why, sizeof(why)) < 0)
		bad = o->pagesize && o->bufsize ? "--buffer-size with --page-size"
		      : o->pagesize             ? "--page-size (with the default buffer size)"
						: "--buffer-size (with the default page size)";
	if (bad) {
		fprintf(stderr, "ringtrace record: %s: %s\n", bad, why);
		return 2;
	}
	if (o->nk && kr_available(why, sizeof(why)) < 0) {
		fprintf(stderr, "ringtrace record: -k: %s\n", why);
		return 2;
	}
	if (!o->nk && (o->kall || o->kbuf)) {
		fprintf(stderr, "ringtrace record: --kernel-all and --kernel-buffer go with -k\n");
		return 2;
	}
	o->kbuf_bytes = 4u << 20;
	if (o->kbuf && rt_parse_size_in(o->kbuf, 4096, (uint64_t)1 << 40, &o->kbuf_bytes, why,
					sizeof(why)) < 0) {
		fprintf(stderr, "ringtrace record: --kernel-buffer: %s\n", why);
		return 2;
	}
	return -1;
}

/* -p / -a: the running programs (src/collect/programs.c). */
static int record_programs(const struct rec_opts *o)
{
	struct co_settings cs = {.pids = o->pids,
				 .all = o->all,
				 .argv = o->all ? o->cmd : NULL,
				 .out = o->out,
				 .events = o->events,
				 .filters = o->filters,
				 .triggers = o->triggers,
				 .bufsize = o->bufsize,
				 .pagesize = o->pagesize,
				 .overwrite = o->overwrite,
				 .quiet = o->quiet,
				 .group = o->group,
				 .duration_ns = o->duration_ns,
				 .kspecs = o->kspecs,
				 .nk = o->nk,
				 .kbuf_kb = (size_t)(o->kbuf_bytes >> 10),
				 .kall = o->kall};
	return co_record_programs(&cs);
}

/* A recording of -- CMD: where its trace goes and what became of it. */
struct rec_run {
	char shm[64];
	struct kr *kr;    /* -k: the kernel's events, or NULL */
	char cname[16];   /* -k: CMD's name, for its trace directory */
	char tdir[4200];  /* -k: CMD's trace directory in the collection */
	const char *tout; /* CMD's trace: out, or tdir with -k */
	pid_t pid;
	int status;
	int have; /* CMD's trace is complete */
	/* CMD's metadata is there but could not be read (why): the trace can
	 * be neither judged nor recovered */
	char unread[512];
};

static void rec_kernel_abort(struct rec_run *r)
{
	kr_abort(r->kr);
	r->kr = NULL;
}

/*
 * Before CMD runs: the output directory free, its pool's name, the signal
 * handlers (first: a Ctrl-C, SIGTERM or hang-up while the kernel instance
 * is being made, which a big --kernel-buffer makes slow, must not kill the
 * recorder with the instance half made; it is noted in early_sig and the
 * recording does not start), and with -k the collection's directory and
 * the kernel instance, running before CMD does so that its first events
 * are there. -1, or the exit status.
 */
static int rec_prepare(const struct rec_opts *o, struct rec_run *r)
{
	struct stat st;
	char meta[4200];
	snprintf(meta, sizeof(meta), "%s/metadata", o->out);
	if (stat(meta, &st) == 0) {
		fprintf(stderr,
			"ringtrace record: %s already holds a trace; choose another -o DIR\n",
			o->out);
		return 1;
	}
	if (co_shm_name(r->shm, sizeof(r->shm)) < 0)
		return 1;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = forward;
	sa.sa_flags = SA_RESTART | SA_SIGINFO;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	if (o->nk) {
		int ofd = co_outdir(o->out, o->group);
		if (ofd < 0)
			return 1;
		close(ofd);
		const char *b = strrchr(o->cmd[0], '/');
		snprintf(r->cname, sizeof(r->cname), "%s", b ? b + 1 : o->cmd[0]);
		char kwhy[512];
		if (kr_start(&r->kr, o->out, o->kspecs, o->nk, (size_t)(o->kbuf_bytes >> 10),
			     o->kall, kwhy, sizeof(kwhy)) < 0) {
			fprintf(stderr,
				"ringtrace record: -k: %s; recording the user events only\n", kwhy);
			r->kr = NULL;
		}
	}
	if (early_sig) {
		rec_kernel_abort(r);
		fprintf(stderr, "ringtrace record: stopped by signal %d before %s started\n",
			(int)early_sig, o->cmd[0]);
		return 128 + early_sig;
	}
	return -1;
}

/* In the child: the recorder's settings in the environment, then CMD. */
static void rec_exec(const struct rec_opts *o, struct rec_run *r)
{
	if (o->nk) {
		char name[64];
		co_dirname(name, sizeof(name), r->cname, getpid());
		snprintf(r->tdir, sizeof(r->tdir), "%s/%s", o->out, name);
		setenv("RINGTRACE_OUTPUT", r->tdir, 1);
	} else {
		setenv("RINGTRACE_OUTPUT", o->out, 1);
	}
	setenv("RINGTRACE_EVENTS", o->events ? o->events : "*", 1);
	if (o->filters)
		setenv("RINGTRACE_FILTERS", o->filters, 1);
	if (o->triggers)
		setenv("RINGTRACE_TRIGGERS", o->triggers, 1);
	setenv("RINGTRACE_MODE", o->overwrite ? "overwrite" : "discard", 1);
	setenv("RINGTRACE_SHM", r->shm, 1);
	if (o->bufsize)
		setenv("RINGTRACE_BUFFER_SIZE", o->bufsize, 1);
	if (o->pagesize)
		setenv("RINGTRACE_PAGE_SIZE", o->pagesize, 1);
	if (o->group >= 0) { /* (else RINGTRACE_GROUP as inherited, if any) */
		char g[32];
		snprintf(g, sizeof(g), "%ld", o->group);
		setenv("RINGTRACE_GROUP", g, 1);
	}
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGUSR2, SIG_DFL);
	execvp(o->cmd[0], o->cmd);
	fprintf(stderr, "ringtrace record: cannot run %s: %s\n", o->cmd[0], strerror(errno));
	_exit(127);
}

/* CMD started: -1, or the exit status. */
static int rec_spawn(const struct rec_opts *o, struct rec_run *r)
{
	r->tout = o->out;
	r->pid = fork();
	if (r->pid < 0) {
		fprintf(stderr, "ringtrace record: fork: %s\n", strerror(errno));
		rec_kernel_abort(r);
		return 1;
	}
	if (r->pid == 0)
		rec_exec(o, r);
	child_pid = r->pid;
	if (o->nk) {
		char name[64];
		co_dirname(name, sizeof(name), r->cname, r->pid);
		snprintf(r->tdir, sizeof(r->tdir), "%s/%s", o->out, name);
		r->tout = r->tdir;
		kr_follow(r->kr, r->pid);
	}
	return -1;
}

/*
 * One live status line from CMD's pool (mapped by name once it is there
 * and is the program's): 0, or -1 if the pool is damaged (said once; the
 * program's library says what it does about it).
 */
static int rec_live_line(const struct rec_opts *o, struct rec_run *r, ringtrace_rb **rb,
			 uint64_t *last_hit, uint64_t *last_t)
{
	char why[512]; /* (not there yet, or not the program's: no live view) */
	if (!*rb && co_pool_attach(r->shm, geteuid(), rb, why, sizeof(why)) < 0)
		*rb = NULL;
	if (!*rb)
		return 0;
	struct ringtrace_rb_stats s;
	if (ringtrace_rb_get_stats(*rb, &s) < 0) {
		fprintf(stderr, "\nringtrace record: live status stopped: %s\n",
			ringtrace_last_error());
		ringtrace_rb_destroy(*rb);
		*rb = NULL;
		return -1;
	}
	uint64_t now = rt_mono_ns();
	double rate = now > *last_t ? (double)(s.hit - *last_hit) * 1e9 / (double)(now - *last_t)
				    : 0;
	*last_hit = s.hit;
	*last_t = now;
	fprintf(stderr,
		"\rringtrace: %.2f M events/s, %" PRIu64 " events, %.1f MB written, %" PRIu64
		" lost   ",
		rate / 1e6, s.hit, (double)dir_bytes(o->out) / 1e6, s.missed + s.overrun);
	return 0;
}

/* Until CMD exits, with a live status on a terminal: -1, or the exit status. */
static int rec_wait(const struct rec_opts *o, struct rec_run *r)
{
	int live = !o->quiet && isatty(STDERR_FILENO);
	ringtrace_rb *rb = NULL;
	uint64_t last_hit = 0, last_t = rt_mono_ns();
	for (;;) {
		pid_t w = waitpid(r->pid, &r->status, live ? WNOHANG : 0);
		if (w == r->pid)
			break;
		if (w < 0 && errno != EINTR) {
			fprintf(stderr, "ringtrace record: waitpid: %s\n", strerror(errno));
			rec_kernel_abort(r);
			return 1;
		}
		if (!live)
			continue;
		struct timespec d = {0, 500 * 1000 * 1000};
		nanosleep(&d, NULL);
		if (rec_live_line(o, r, &rb, &last_hit, &last_t) < 0)
			live = 0;
	}
	if (rb)
		ringtrace_rb_destroy(rb);
	if (live)
		fputc('\n', stderr);
	child_pid = 0;
	return -1;
}

/*
 * CMD's trace complete: if it died without stopping its session, its live
 * metadata and its pool (still named) hold the rest, recovered here. The
 * pool's name removed (if the program died without removing it).
 */
static void rec_complete(const struct rec_opts *o, struct rec_run *r)
{
	uint64_t hit;
	int got = ringtrace_ctf_get_stat(r->tout, "hit", &hit);
	r->have = got == 1;
	char live_meta[4300];
	snprintf(live_meta, sizeof(live_meta), "%s/metadata", r->tout);
	if (got < 0 && access(live_meta, F_OK) == 0) {
		/* (not a program that died: this process failed to read it) */
		snprintf(r->unread, sizeof(r->unread), "%s", ringtrace_last_error());
	} else if (!r->have && access(live_meta, R_OK) == 0) {
		if (WIFSIGNALED(r->status))
			fprintf(stderr,
				"ringtrace record: %s was killed by signal %d (%s); recovering its "
				"trace\n",
				o->cmd[0], WTERMSIG(r->status), strsignal(WTERMSIG(r->status)));
		else
			/* (or its recorder stopped and could not write the final
			 * metadata: a disk that failed even the room kept for it) */
			fprintf(stderr,
				"ringtrace record: %s exited (status %d) and its trace has no final "
				"metadata (its recorder was not stopped, or could not write it: "
				"see above); recovering its trace\n",
				o->cmd[0], WEXITSTATUS(r->status));
		if (co_recover(r->shm, r->tout, o->quiet, 0) == 0)
			meta_stat(r->tout, "hit", &r->have);
	}
	shm_unlink(r->shm);
}

/*
 * -k: the kernel's trace, on the clock conversion CMD's trace declares
 * (the same counter: docs/kernel.md); without CMD's trace (a program not
 * linked with libringtrace: only its kernel events), the recorder's own
 * calibration. 1 if DIR/kernel was written, 0 if not, -1 if it failed.
 */
static int rec_kernel_finish(const struct rec_opts *o, struct rec_run *r)
{
	if (!r->kr)
		return 0;
	ringtrace_trace *t = NULL;
	struct ringtrace_trace_clock clk;
	int64_t rto = 0;
	int with = r->have && ringtrace_trace_open(r->tout, NULL, NULL, &t) == 0;
	int with_rto = with && ringtrace_trace_realtime_offset(t, &rto) == 1;
	if (with)
		clk = *ringtrace_trace_clock(t);
	if (t)
		ringtrace_trace_close(t);
	/* (the program's clock conversion and wall-clock offset: the two
	 * traces of the collection then place their events alike) */
	int rc = kr_finish(r->kr, o->out, with ? &clk : NULL, with_rto ? &rto : NULL, o->quiet) < 0
			 ? -1
			 : 1;
	rec_kernel_abort(r);
	return rc;
}

/* -- CMD: run it with the recorder on; the exit status (CMD's). */
static int record_command(const struct rec_opts *o)
{
	struct rec_run r;
	memset(&r, 0, sizeof(r));
	int rc = rec_prepare(o, &r);
	if (rc < 0)
		rc = rec_spawn(o, &r);
	if (rc < 0)
		rc = rec_wait(o, &r);
	if (rc >= 0)
		return rc;
	int code = WIFEXITED(r.status) ? WEXITSTATUS(r.status) : 128 + WTERMSIG(r.status);
	rec_complete(o, &r);
	int kdone = rec_kernel_finish(o, &r);
	if (kdone < 0 && code == 0)
		code = 1;
	if (r.unread[0]) {
		fprintf(stderr,
			"ringtrace record: cannot read the metadata of %s to check it: %s\n",
			r.tout, rt_esc(r.unread));
		return code ? code : 1;
	}
	if (!r.have && kdone > 0) {
		/* (-k on a program not linked with libringtrace: its kernel
		 * events are the recording) */
		if (!o->quiet)
			fprintf(stderr,
				"ringtrace record: %s wrote no user-space trace (not linked with "
				"libringtrace?): its kernel events only, in %s/kernel\n",
				o->cmd[0], o->out);
		return code;
	}
	if (!r.have) {
		fprintf(stderr,
			"ringtrace record: %s wrote no trace to %s: is it linked with libringtrace, "
			"and did it exit normally (status %d)? (if it is, its recorder's message "
			"above says why it could not record)\n",
			o->cmd[0], r.tout, code);
		return code ? code : 1;
	}
	if (!o->quiet)
		print_summary(r.tout, o->out);
	return code;
}

int verb_record(int argc, char **argv)
{
	struct rec_opts o;
	memset(&o, 0, sizeof(o));
	o.group = -1;
	int rc = rec_parse(&o, argc, argv);
	if (rc < 0)
		rc = rec_check_modes(&o);
	if (rc < 0)
		rc = rec_check_sizes(&o);
	if (rc < 0 && !o.out) {
		time_t now = time(NULL);
		struct tm tm;
		localtime_r(&now, &tm);
		strftime(o.defdir, sizeof(o.defdir), "ringtrace-%Y%m%d-%H%M%S", &tm);
		o.out = o.defdir;
	}
	if (rc < 0 && o.konly)
		rc = record_kernel_only(o.out, o.kspecs, o.nk, (size_t)(o.kbuf_bytes >> 10),
					o.group, o.duration_ns, o.quiet);
	else if (rc < 0 && (o.pids || o.all))
		rc = record_programs(&o);
	else if (rc < 0)
		rc = record_command(&o);
	free(o.events);
	free(o.filters);
	free(o.triggers);
	return rc;
}
