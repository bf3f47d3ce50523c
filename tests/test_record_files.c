/*
 * The recorder's files, against a hostile directory and environment
 * (src/base/tdir.c has the rules, ringtrace/session.h says them):
 *
 *  - modes: the output directory 0700 and its files 0600 by default
 *    (whatever the umask: the test sets 022, under which main made
 *    0755/0644); with a group (the session's config, RINGTRACE_GROUP)
 *    0750/0640 and that group;
 *  - directories refused: one of another user (root only), one writable
 *    by others, a symbolic link at the output name, a directory locked by
 *    another recorder while still empty, and a second recorder (another
 *    process) on a directory in use, named with the holder; the first's
 *    trace stays whole;
 *  - names planted while recording, never followed: a symbolic link at
 *    stream_N (the session reports it, the target is untouched), a FIFO
 *    there (an error, not a hang), a symbolic link at .metadata.tmp and at
 *    metadata (the metadata is still written, the target untouched), at a
 *    snapshot directory given to ringtrace_session_snapshot, and at
 *    DIR.snapshot-1 (SIGUSR2 in a program traced from the environment);
 *  - a set-user-ID-root copy of this program, run by nobody with
 *    RINGTRACE_OUTPUT pointing where nobody can write: it runs normally and
 *    writes nothing (AT_SECURE: RINGTRACE_* ignored). Root only.
 *
 * Each case works in a directory of its own under /tmp; the target files
 * the planted links point at belong to the test.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RINGTRACE_CREATE_EVENTS
#include <ringtrace/session.h>
#include <ringtrace/trace.h>
#include <ringtrace/tracepoint.h>

#include "check.h"

RINGTRACE_EVENT(files_tick, RINGTRACE_PROTO(uint64_t seq), RINGTRACE_ARGS(seq),
		RINGTRACE_FIELDS(ringtrace_integer(uint64_t, seq, seq)),
		RINGTRACE_PRINT("seq=%llu"))

#define NEVENTS 20000u
#define PRECIOUS "precious: not to be touched by the recorder\n"

static const char *self; /* this program, for the cases that run it again */

static void emit(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		trace_files_tick(i);
}

static void rmtree(const char *dir)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
}

/* A fresh base directory for a case (0700, ours). */
static void base_dir(char *buf, size_t size)
{
	snprintf(buf, size, "/tmp/ringtrace-files-XXXXXX");
	CHECK(mkdtemp(buf) != NULL);
}

/* A file the test owns, with known content: what planted links point at. */
static void make_target(const char *path)
{
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	fputs(PRECIOUS, f);
	CHECK(fclose(f) == 0);
}

static void check_target_untouched(const char *path)
{
	char buf[256] = "";
	FILE *f = fopen(path, "r");
	CHECKF(f != NULL, "%s: %s", path, strerror(errno));
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	CHECKF(strcmp(buf, PRECIOUS) == 0, "%s was changed: it now holds %zu bytes: \"%.60s\"",
	       path, n, buf);
}

static void start_session(const char *dir, const char *group)
{
	struct ringtrace_session_config cfg;
	ringtrace_session_config_init(&cfg);
	cfg.output_dir = dir;
	cfg.events = "files_*";
	cfg.page_size = 4096;
	cfg.pool_size = 4096 * 256;
	cfg.group = group;
	CHECKF(ringtrace_session_start(&cfg) == 0, "%s: %s", dir, ringtrace_last_error());
}

/* Wait (5 s at most) until PATH exists: the consumer's first live metadata. */
static void wait_for(const char *path)
{
	for (int i = 0; i < 500 && access(path, F_OK) != 0; i++) {
		struct timespec d = {0, 10 * 1000 * 1000};
		nanosleep(&d, NULL);
	}
	CHECKF(access(path, F_OK) == 0, "%s never appeared", path);
}

static unsigned mode_of(const char *path, gid_t *gid)
{
	struct stat st;
	CHECKF(lstat(path, &st) == 0, "%s: %s", path, strerror(errno));
	if (gid)
		*gid = st.st_gid;
	return (unsigned)(st.st_mode & 07777);
}

/* Every file of trace DIR has mode `fmode` (and group gid, if not -1);
 * returns how many. */
static int check_files_mode(const char *dir, unsigned fmode, long gid)
{
	static const char *const names[] = {"metadata", "stream_1", "stream_2", NULL};
	int n = 0;
	for (int i = 0; names[i]; i++) {
		char p[512];
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		if (access(p, F_OK) != 0)
			continue;
		gid_t g;
		unsigned m = mode_of(p, &g);
		CHECKF(m == fmode, "%s: mode %04o, expected %04o", p, m, fmode);
		CHECKF(gid < 0 || g == (gid_t)gid, "%s: group %u, expected %ld", p, (unsigned)g,
		       gid);
		n++;
	}
	return n;
}

/* Events in trace DIR, read with the reader library. */
static uint64_t count_events(const char *dir)
{
	ringtrace_trace *t;
	CHECKF(ringtrace_trace_open(dir, NULL, NULL, &t) == 0, "%s", ringtrace_trace_open_error());
	struct ringtrace_trace_record r;
	uint64_t n = 0;
	while (ringtrace_trace_next(t, &r) == 1)
		n += r.kind == RINGTRACE_TRACE_EVENT;
	CHECK(ringtrace_trace_errors(t) == 0);
	ringtrace_trace_close(t);
	return n;
}

/* Run this program with `mode` and the environment additions env[]
 * (NAME=VALUE, NULL-terminated), stderr to errpath: its wait status. */
static int run_self(const char *mode, const char *const *env, const char *errpath)
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		for (int i = 0; env && env[i]; i++)
			putenv((char *)env[i]);
		int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd >= 0)
			dup2(fd, 2);
		execl(self, self, mode, (char *)NULL);
		_exit(127);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	return st;
}

static char *slurp(const char *path)
{
	static char buf[8192];
	buf[0] = 0;
	FILE *f = fopen(path, "r");
	if (f) {
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		buf[n] = 0;
		fclose(f);
	}
	return buf;
}

/* A group the process can give files to, other than its own where it can
 * (root: nogroup, by name, to go through the name lookup). */
static void pick_group(char *spec, size_t size, gid_t *gid)
{
	struct group *gr = geteuid() == 0 ? getgrgid(65534) : NULL;
	if (gr) {
		snprintf(spec, size, "%s", gr->gr_name);
		*gid = gr->gr_gid;
	} else {
		*gid = getegid();
		snprintf(spec, size, "%u", (unsigned)*gid);
	}
}

/* ---- modes ---- */

static void case_default_modes(void)
{
	char base[64], dir[128];
	base_dir(base, sizeof(base));
	snprintf(dir, sizeof(dir), "%s/t", base);
	start_session(dir, NULL);
	emit(NEVENTS);
	CHECKF(ringtrace_session_stop() == 0, "%s", ringtrace_last_error());
	CHECKF(mode_of(dir, NULL) == 0700, "%s: mode %04o", dir, mode_of(dir, NULL));
	CHECK(check_files_mode(dir, 0600, -1) >= 2); /* metadata and a stream */
	rmtree(base);
}

static void case_group_modes(void)
{
	char base[64], dir[128], spec[64];
	gid_t gid;
	base_dir(base, sizeof(base));
	snprintf(dir, sizeof(dir), "%s/t", base);
	pick_group(spec, sizeof(spec), &gid);
	start_session(dir, spec);
	emit(NEVENTS);
	CHECKF(ringtrace_session_stop() == 0, "%s", ringtrace_last_error());
	gid_t g;
	CHECKF(mode_of(dir, &g) == 0750 && g == gid, "%s: mode %04o group %u (group %s)", dir,
	       mode_of(dir, NULL), (unsigned)g, spec);
	CHECK(check_files_mode(dir, 0640, (long)gid) >= 2);
	rmtree(base);
}

static void case_env_group(void)
{
	char base[64], dir[128], spec[64], err[160];
	gid_t gid;
	base_dir(base, sizeof(base));
	snprintf(dir, sizeof(dir), "%s/t", base);
	snprintf(err, sizeof(err), "%s/err", base);
	pick_group(spec, sizeof(spec), &gid);
	char e1[200], e2[100];
	snprintf(e1, sizeof(e1), "RINGTRACE_OUTPUT=%s", dir);
	snprintf(e2, sizeof(e2), "RINGTRACE_GROUP=%s", spec);
	const char *env[] = {e1, e2, "RINGTRACE_EVENTS=files_*", NULL};
	int st = run_self("--child-traced", env, err);
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d: %s", st, slurp(err));
	gid_t g;
	CHECKF(mode_of(dir, &g) == 0750 && g == gid, "%s: mode %04o group %u (RINGTRACE_GROUP=%s)",
	       dir, mode_of(dir, NULL), (unsigned)g, spec);
	CHECK(check_files_mode(dir, 0640, (long)gid) >= 2);
	CHECK(count_events(dir) == NEVENTS);
	rmtree(base);
}

/* ---- directories refused ---- */

/* session_start on dir must fail with a message holding `what`; dir (if
 * it is a directory) stays empty. */
static void check_refused(const char *dir, const char *what)
{
	struct ringtrace_session_config cfg;
	ringtrace_session_config_init(&cfg);
	cfg.output_dir = dir;
	cfg.events = "files_*";
	int rc = ringtrace_session_start(&cfg);
	if (rc == 0) {
		emit(100);
		ringtrace_session_stop();
	}
	CHECKF(rc < 0, "recording into %s was not refused", dir);
	CHECKF(strstr(ringtrace_last_error(), what) && strstr(ringtrace_last_error(), dir),
	       "the error does not name %s and say \"%s\": %s", dir, what, ringtrace_last_error());
	printf("refused: %s\n", ringtrace_last_error());
}

static void check_empty(const char *dir)
{
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "[ -z \"$(ls -A '%s')\" ]", dir);
	CHECKF(system(cmd) == 0, "%s is not empty: something was written there", dir);
}

static void case_foreign_dir(void)
{
	if (geteuid() != 0)
		CHECK_SKIP("needs root: a directory of another user (chown to nobody)");
	char base[64], dir[128];
	base_dir(base, sizeof(base));
	snprintf(dir, sizeof(dir), "%s/theirs", base);
	CHECK(mkdir(dir, 0755) == 0);
	CHECK(chown(dir, 65534, 65534) == 0);
	check_refused(dir, "belongs to uid 65534");
	check_empty(dir);
	rmtree(base);
}

static void case_writable_dir(void)
{
	char base[64], dir[128];
	base_dir(base, sizeof(base));
	snprintf(dir, sizeof(dir), "%s/open", base);
	CHECK(mkdir(dir, 0700) == 0);
	CHECK(chmod(dir, 0777) == 0);
	check_refused(dir, "writable by others");
	check_empty(dir);
	rmtree(base);
}

static void case_symlink_dir(void)
{
	char base[64], dir[128], target[128];
	base_dir(base, sizeof(base));
	snprintf(target, sizeof(target), "%s/elsewhere", base);
	snprintf(dir, sizeof(dir), "%s/out", base);
	CHECK(mkdir(target, 0700) == 0);
	CHECK(symlink(target, dir) == 0);
	check_refused(dir, "symbolic link");
	check_empty(target);
	rmtree(base);
}

/* An empty directory whose lock another recorder holds (this test, here):
 * refused even though empty, naming the holder. */
static void case_locked_dir(void)
{
	char base[64], dir[128], pid[32];
	base_dir(base, sizeof(base));
	snprintf(dir, sizeof(dir), "%s/busy", base);
	CHECK(mkdir(dir, 0700) == 0);
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0);
	check_refused(dir, "in use by another recorder");
	snprintf(pid, sizeof(pid), "process %d", (int)getpid());
	CHECKF(strstr(ringtrace_last_error(), pid), "the holder (%s) is not named: %s", pid,
	       ringtrace_last_error());
	close(fd);
	check_empty(dir);
	rmtree(base);
}

/* Two recorders on one directory: this process records into it; a second
 * program traced from the environment into the same directory is
 * refused, naming the directory and this process; the first's trace is
 * whole. */
static void case_second_recorder(void)
{
	char base[64], dir[128], err[160], e1[200], pid[32];
	base_dir(base, sizeof(base));
	snprintf(dir, sizeof(dir), "%s/t", base);
	snprintf(err, sizeof(err), "%s/second.err", base);
	start_session(dir, NULL);
	emit(NEVENTS / 2);
	snprintf(e1, sizeof(e1), "RINGTRACE_OUTPUT=%s", dir);
	const char *env[] = {e1, "RINGTRACE_EVENTS=files_*", NULL};
	int st = run_self("--child-refused", env, err);
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "second program: status %d: %s", st,
	       slurp(err));
	const char *msg = slurp(err);
	snprintf(pid, sizeof(pid), "process %d", (int)getpid());
	CHECKF(strstr(msg, "in use by another recorder") && strstr(msg, dir) && strstr(msg, pid),
	       "the second recorder's message does not say the directory is in use by %s: %s", pid,
	       msg);
	printf("second recorder: %s", msg);
	emit(NEVENTS / 2);
	CHECKF(ringtrace_session_stop() == 0, "%s", ringtrace_last_error());
	uint64_t n = count_events(dir);
	CHECKF(n == NEVENTS, "the first recorder's trace holds %llu events, not %u",
	       (unsigned long long)n, NEVENTS);
	rmtree(base);
}

/* ---- names planted while recording ---- */

/* Plant a symbolic link (fifo: a FIFO) at stream_1 .. stream_8 of dir. */
static void plant_streams(const char *dir, const char *target, int fifo)
{
	for (int i = 1; i <= 8; i++) {
		char p[200];
		snprintf(p, sizeof(p), "%s/stream_%d", dir, i);
		CHECK(fifo ? mkfifo(p, 0600) == 0 : symlink(target, p) == 0);
	}
}

static void case_symlink_stream(void)
{
	char base[64], dir[128], target[128], meta[160];
	base_dir(base, sizeof(base));
	snprintf(dir, sizeof(dir), "%s/t", base);
	snprintf(target, sizeof(target), "%s/target", base);
	snprintf(meta, sizeof(meta), "%s/metadata", dir);
	make_target(target);
	start_session(dir, NULL);
	plant_streams(dir, target, 0);
	emit(NEVENTS);
	int rc = ringtrace_session_stop();
	CHECKF(rc < 0, "the session did not report the planted stream files");
	CHECKF(strstr(ringtrace_last_error(), "stream_") &&
		       strstr(ringtrace_last_error(), "symbolic link"),
	       "the error does not name the stream file: %s", ringtrace_last_error());
	printf("reported: %s\n", ringtrace_last_error());
	check_target_untouched(target);
	CHECKF(mode_of(meta, NULL) == 0600, "the metadata was not written");
	rmtree(base);
}

static void case_fifo_stream(void)
{
	char base[64], dir[128];
	base_dir(base, sizeof(base));
	snprintf(dir, sizeof(dir), "%s/t", base);
	start_session(dir, NULL);
	plant_streams(dir, NULL, 1);
	emit(NEVENTS);
	alarm(30); /* opening a FIFO without a reader blocked the recorder for ever */
	int rc = ringtrace_session_stop();
	alarm(0);
	CHECKF(rc < 0, "the session did not report the FIFO at a stream file");
	CHECKF(strstr(ringtrace_last_error(), "stream_") && strstr(ringtrace_last_error(), "FIFO"),
	       "the error does not name the FIFO: %s", ringtrace_last_error());
	printf("reported: %s\n", ringtrace_last_error());
	rmtree(base);
}

static void case_symlink_metadata_tmp(void)
{
	char base[64], dir[128], target[128], meta[160], tmp[160];
	base_dir(base, sizeof(base));
	snprintf(dir, sizeof(dir), "%s/t", base);
	snprintf(target, sizeof(target), "%s/target", base);
	snprintf(meta, sizeof(meta), "%s/metadata", dir);
	snprintf(tmp, sizeof(tmp), "%s/.metadata.tmp", dir);
	make_target(target);
	start_session(dir, NULL);
	wait_for(meta); /* the live metadata is written: the next one is at stop */
	CHECK(symlink(target, tmp) == 0);
	emit(NEVENTS);
	CHECKF(ringtrace_session_stop() == 0, "%s", ringtrace_last_error());
	check_target_untouched(target);
	CHECKF(mode_of(meta, NULL) == 0600, "%s is not the recorder's file", meta);
	CHECK(access(tmp, F_OK) != 0 && errno == ENOENT);
	CHECK(count_events(dir) == NEVENTS);
	rmtree(base);
}

static void case_symlink_metadata(void)
{
	char base[64], dir[128], target[128], meta[160];
	base_dir(base, sizeof(base));
	snprintf(dir, sizeof(dir), "%s/t", base);
	snprintf(target, sizeof(target), "%s/target", base);
	snprintf(meta, sizeof(meta), "%s/metadata", dir);
	make_target(target);
	start_session(dir, NULL);
	wait_for(meta);
	CHECK(unlink(meta) == 0 && symlink(target, meta) == 0);
	emit(NEVENTS);
	CHECKF(ringtrace_session_stop() == 0, "%s", ringtrace_last_error());
	check_target_untouched(target);
	struct stat st;
	CHECK(lstat(meta, &st) == 0 && S_ISREG(st.st_mode)); /* the link replaced */
	CHECK(count_events(dir) == NEVENTS);
	rmtree(base);
}

static void case_symlink_snapshot(void)
{
	char base[64], dir[128], target[128], snap[160];
	base_dir(base, sizeof(base));
	snprintf(dir, sizeof(dir), "%s/t", base);
	snprintf(target, sizeof(target), "%s/elsewhere", base);
	snprintf(snap, sizeof(snap), "%s/snap", base);
	CHECK(mkdir(target, 0700) == 0);
	CHECK(symlink(target, snap) == 0);
	start_session(dir, NULL);
	emit(NEVENTS);
	int rc = ringtrace_session_snapshot(snap);
	CHECKF(rc < 0, "a snapshot was written through the symbolic link %s", snap);
	CHECKF(strstr(ringtrace_last_error(), "symbolic link") &&
		       strstr(ringtrace_last_error(), snap),
	       "the error does not name %s: %s", snap, ringtrace_last_error());
	printf("refused: %s\n", ringtrace_last_error());
	/* the session's own directory is not a snapshot's either (in use) */
	CHECK(ringtrace_session_snapshot(dir) < 0);
	CHECKF(strstr(ringtrace_last_error(), "in use"), "%s", ringtrace_last_error());
	CHECKF(ringtrace_session_stop() == 0, "%s", ringtrace_last_error());
	check_empty(target);
	rmtree(base);
}

/* DIR.snapshot-1 planted before a program traced from the environment
 * takes a snapshot (SIGUSR2): reported on its stderr, nothing written
 * through it, the program's own trace whole. */
static void case_symlink_snapshot_k(void)
{
	char base[64], dir[128], target[128], snap[160], err[160], e1[200];
	base_dir(base, sizeof(base));
	snprintf(dir, sizeof(dir), "%s/t", base);
	snprintf(target, sizeof(target), "%s/elsewhere", base);
	snprintf(snap, sizeof(snap), "%s.snapshot-1", dir);
	snprintf(err, sizeof(err), "%s/err", base);
	CHECK(mkdir(target, 0700) == 0);
	CHECK(symlink(target, snap) == 0);
	snprintf(e1, sizeof(e1), "RINGTRACE_OUTPUT=%s", dir);
	const char *env[] = {e1, "RINGTRACE_EVENTS=files_*", "RINGTRACE_MODE=overwrite", NULL};
	int st = run_self("--child-snapshot", env, err);
	const char *msg = slurp(err);
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d: %s", st, msg);
	CHECKF(strstr(msg, "snapshot: ") && strstr(msg, "symbolic link"),
	       "the snapshot's refusal was not reported: %s", msg);
	printf("%s", msg);
	check_empty(target);
	CHECK(count_events(dir) > 0);
	rmtree(base); /* (snap, a symbolic link, with it) */
}

/* ---- AT_SECURE ---- */

/* Copy this program (what /proc/self/exe is here, not in a shell's cp). */
static void copy_self(const char *to)
{
	int in = open("/proc/self/exe", O_RDONLY);
	int out = open(to, O_WRONLY | O_CREAT | O_EXCL, 0700);
	CHECK(in >= 0 && out >= 0);
	char buf[65536];
	ssize_t n;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		CHECK(write(out, buf, (size_t)n) == n);
	CHECK(n == 0);
	close(in);
	CHECK(close(out) == 0);
}

static void case_setuid(void)
{
	if (geteuid() != 0)
		CHECK_SKIP("needs root: runs a set-user-ID-root copy of itself as nobody");
	char bindir[64], outdir[64], prog[128], out[128], err[128], trace[128];
	base_dir(bindir, sizeof(bindir));
	struct statvfs vfs;
	CHECK(statvfs(bindir, &vfs) == 0);
	if (vfs.f_flag & ST_NOSUID) {
		rmtree(bindir);
		CHECK_SKIP("/tmp is mounted nosuid: a set-user-ID program cannot run there");
	}
	CHECK(chmod(bindir, 0755) == 0);
	snprintf(prog, sizeof(prog), "%s/prog", bindir);
	snprintf(out, sizeof(out), "%s/out", bindir);
	snprintf(err, sizeof(err), "%s/err", bindir);
	copy_self(prog);
	CHECK(chown(prog, 0, 0) == 0 && chmod(prog, 04755) == 0);
	/* where nobody may write: RINGTRACE_OUTPUT names a new directory there */
	base_dir(outdir, sizeof(outdir));
	CHECK(chown(outdir, 65534, 65534) == 0 && chmod(outdir, 0755) == 0);
	snprintf(trace, sizeof(trace), "%s/trace", outdir);
	char e1[200], e2[100];
	snprintf(e1, sizeof(e1), "RINGTRACE_OUTPUT=%s", trace);
	snprintf(e2, sizeof(e2), "RINGTRACE_SHM=/ringtrace-files-setuid-%d", (int)getpid());
	char *const envp[] = {e1, e2, "RINGTRACE_EVENTS=*", "RINGTRACE_GROUP=0",
			      /* a sanitizer build: LeakSanitizer cannot run in a
			       * set-user-ID process (it is not dumpable) */
			      "ASAN_OPTIONS=detect_leaks=0", NULL};
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
			_exit(126);
		if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)
			_exit(125);
		execle(prog, prog, "--child-setuid", (char *)NULL, envp);
		_exit(127);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	char o[512];
	snprintf(o, sizeof(o), "%s", slurp(out));
	const char *e = slurp(err);
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "set-user-ID program: status %d: %s%s", st, o,
	       e);
	/* It really ran set-user-ID root, as nobody, with AT_SECURE ... */
	CHECKF(strstr(o, "uid 65534 euid 0 secure 1"), "not run as expected: %s", o);
	/* ... normally, recording nothing, and said nothing. */
	CHECKF(strstr(o, "session none, done"), "%s", o);
	CHECKF(access(trace, F_OK) != 0, "the set-user-ID program created %s", trace);
	check_empty(outdir);
	CHECKF(e[0] == 0, "the set-user-ID program wrote to stderr: %s", e);
	printf("set-user-ID program: %s", o);
	rmtree(bindir);
	rmtree(outdir);
}

/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
static const struct check_case cases[] = {
	CHECK_CASE(record_files_default_dir_0700_files_0600, case_default_modes),
	CHECK_CASE(record_files_group_option_dir_0750_files_0640_of_the_group, case_group_modes),
	CHECK_CASE(record_files_env_group_variable_shares_the_trace_with_the_group, case_env_group),
	CHECK_CASE(record_files_dir_of_another_user_refused, case_foreign_dir),
	CHECK_CASE(record_files_dir_writable_by_others_refused, case_writable_dir),
	CHECK_CASE(record_files_symlink_at_output_dir_refused_not_followed, case_symlink_dir),
	CHECK_CASE(record_files_empty_dir_locked_by_another_recorder_refused_naming_it, case_locked_dir),
	CHECK_CASE(record_files_second_recorder_on_a_dir_in_use_refused_first_trace_whole, case_second_recorder),
	CHECK_CASE(record_files_symlink_at_stream_file_reported_target_untouched, case_symlink_stream),
	CHECK_CASE(record_files_fifo_at_stream_file_reported_not_a_hang, case_fifo_stream),
	CHECK_CASE(record_files_symlink_at_metadata_tmp_not_followed, case_symlink_metadata_tmp),
	CHECK_CASE(record_files_symlink_at_metadata_replaced_not_followed, case_symlink_metadata),
	CHECK_CASE(record_files_symlink_at_snapshot_dir_refused_not_followed, case_symlink_snapshot),
	CHECK_CASE(record_files_symlink_at_dir_snapshot_k_refused_not_followed, case_symlink_snapshot_k),
	CHECK_CASE(record_files_setuid_program_ignores_ringtrace_env_writes_nothing, case_setuid),
};
/* clang-format on */

int main(int argc, char **argv)
{
	umask(022); /* the usual one: modes must not depend on it */
	if (argc == 2 && strcmp(argv[1], "--child-traced") == 0) {
		/* traced from the environment: no session calls */
		emit(NEVENTS);
		return ringtrace_session_buffer() ? 0 : 3;
	}
	if (argc == 2 && strcmp(argv[1], "--child-refused") == 0) {
		emit(100); /* its session was refused: it runs on */
		return ringtrace_session_buffer() ? 3 : 0;
	}
	if (argc == 2 && strcmp(argv[1], "--child-snapshot") == 0) {
		emit(NEVENTS);
		/* The request is taken before the stop at exit is (the consumer
		 * looks at it first in every round). */
		raise(SIGUSR2);
		return ringtrace_session_buffer() ? 0 : 3;
	}
	if (argc == 2 && strcmp(argv[1], "--child-setuid") == 0) {
		emit(1000);
		printf("uid %u euid %u secure %lu session %s, done\n", (unsigned)getuid(),
		       (unsigned)geteuid(), getauxval(AT_SECURE),
		       ringtrace_session_buffer() ? "running" : "none");
		return 0;
	}
	self = argv[0];
	return CHECK_MAIN(cases, argc, argv);
}
