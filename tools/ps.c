/*
 * ringtrace ps: the running programs that can be attached to
 * (docs/attach.md): every socket in the caller's rendezvous directory
 * (root: every user's, and /run/ringtrace where root's and privileged
 * programs are), asked for its HELLO.
 *
 * A program is untrusted here: its socket is connected with a timeout,
 * its answer is read with a bound and checked (magic, version, sizes,
 * NUL-terminated strings), and the peer's credentials must say it is the
 * process the file is named after, owned by the caller (or any, for root).
 * A file whose process is gone (the program was killed) is removed: the
 * directory is the caller's.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/base.h"
#include "collect/collect_api.h"
#include "ringtrace/attach.h"
#include "ringtrace/error.h"
#include "verbs.h"

#define PS_MAX_PROGRAMS 4096

static void ps_usage(FILE *f)
{
	fprintf(f, "usage: ringtrace ps\n"
		   "\n"
		   "List the running programs linked with libringtrace that can be attached to\n"
		   "(ringtrace record -p PID, ringtrace list -p PID): pid, user, command, events\n"
		   "defined, whether a session records it now, executable. Yours; root:\n"
		   "everyone's.\n"
		   "A program started with RINGTRACE_ATTACH=0 is not listed.\n"
		   "\n"
		   "exit status: 0, 1 if the rendezvous directory cannot be read, 2 usage error\n");
}

/* "4242.sock" -> 4242, or 0 if the name is not that. */
static pid_t ps_pid_of(const char *name)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(name, &end, 10);
	if (errno || end == name || strcmp(end, ".sock") != 0 || v == 0 || v > 0x3fffffff ||
	    name[0] == '0')
		return 0;
	return (pid_t)v;
}

static int ps_cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return (x > y) - (x < y);
}

/* Every program in the rendezvous directory dfd (path dir) of uid. */
static void ps_scan(int dfd, const char *dir, uid_t uid)
{
	int lfd = dup(dfd);
	DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
	if (!d) {
		fprintf(stderr, "ringtrace ps: %s: %s\n", dir, strerror(errno));
		if (lfd >= 0)
			close(lfd);
		return;
	}
	static pid_t pids[PS_MAX_PROGRAMS];
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < PS_MAX_PROGRAMS) {
		pid_t p = ps_pid_of(e->d_name);
		if (p)
			pids[n++] = p;
	}
	closedir(d);
	qsort(pids, n, sizeof(pids[0]), ps_cmp_pid);
	for (size_t i = 0; i < n; i++) {
		char name[32], why[300];
		snprintf(name, sizeof(name), "%d.sock", (int)pids[i]);
		struct ringtrace_attach_hello h;
		int cfd = -1;
		int r = co_attach_hello(dfd, name, pids[i], uid, &h, &cfd, why, sizeof(why));
		if (r == 0)
			close(cfd);
		if (r == 1) {
			/* nobody listens: a program that died without removing it */
			if (kill(pids[i], 0) != 0 && errno == ESRCH)
				unlinkat(dfd, name, 0);
			continue;
		}
		if (r < 0) {
			fprintf(stderr, "ringtrace ps: %s/%s: %s\n", dir, name, why);
			continue;
		}
		struct passwd *pw = getpwuid(h.uid);
		char user[16];
		if (pw)
			snprintf(user, sizeof(user), "%s", pw->pw_name);
		else
			snprintf(user, sizeof(user), "%u", h.uid);
		printf("%-8u %-10s %-16s %7u %9s %s\n", h.pid, rt_esc(user), rt_esc(h.comm),
		       h.nevents, h.recording ? "yes" : "no", rt_esc(h.exe));
	}
}

/* dir, if it is a rendezvous directory of uid: scanned; if there is none, nothing. */
static void ps_scan_path(const char *dir, uid_t uid, void *arg)
{
	(void)arg;
	int dfd = ringtrace_attach_dir_check(dir, uid);
	if (dfd < 0) {
		if (errno != ENOENT)
			fprintf(stderr, "ringtrace ps: skipped: %s\n", ringtrace_last_error());
		return;
	}
	ps_scan(dfd, dir, uid);
	close(dfd);
}

int verb_ps(int argc, char **argv)
{
	if (argc > 1) {
		if (cmd_is_help(argv[1])) {
			ps_usage(stdout);
			return 0;
		}
		fprintf(stderr, "ringtrace ps: unexpected argument '%s'\n", argv[1]);
		ps_usage(stderr);
		return 2;
	}
	printf("%-8s %-10s %-16s %7s %9s %s\n", "PID", "USER", "COMMAND", "EVENTS", "RECORDING",
	       "EXECUTABLE");
	if (geteuid() == 0) {
		co_each_user_dir(ps_scan_path, NULL); /* (root: every user's) */
		return 0;
	}
	char dir[512];
	int dfd = ringtrace_attach_dir_open(0, dir, sizeof(dir));
	if (dfd < 0) {
		if (errno == ENOENT)
			return 0; /* no attachable program has run as this user */
		fprintf(stderr, "ringtrace ps: %s\n", ringtrace_last_error());
		return 1;
	}
	ps_scan(dfd, dir, geteuid());
	close(dfd);
	return 0;
}
