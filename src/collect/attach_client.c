/*
 * The recorder's side of attaching (collect_api.h): finding a program's
 * socket and reading its HELLO, for `ringtrace ps`, `record -p` and
 * `list -p`.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/base.h"
#include "collect/collect_api.h"
#include "ringtrace/error.h"

int co_attach_hello(int dirfd, const char *name, pid_t pid, uid_t uid,
		    struct ringtrace_attach_hello *h, int *out, char *why, size_t wn)
{
	*out = -1;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(why, wn, "socket: %s", strerror(errno));
		return -1;
	}
	struct timeval tv = {1, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	struct sockaddr_un a;
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	snprintf(a.sun_path, sizeof(a.sun_path), "/proc/self/fd/%d/%s", dirfd, name);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		int e = errno;
		close(fd);
		if (e == ECONNREFUSED || e == ENOENT)
			return 1;
		snprintf(why, wn, "connect: %s", strerror(e));
		return -1;
	}
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0 || cr.pid != pid ||
	    cr.uid != uid) {
		snprintf(why, wn,
			 "the socket's listener is pid %d uid %u, not the program named (uid %u)",
			 (int)cr.pid, (unsigned)cr.uid, (unsigned)uid);
		close(fd);
		return -1;
	}
	char buf[RINGTRACE_ATTACH_MAX_PAYLOAD];
	uint32_t type, len;
	if (ringtrace_attach_recv(fd, &type, buf, sizeof(buf), &len) != 0) {
		snprintf(why, wn, "%.250s", ringtrace_last_error());
		close(fd);
		return -1;
	}
	if (type == RINGTRACE_ATTACH_DENIED) {
		close(fd);
		buf[len ? len - 1 : 0] = 0;
		snprintf(why, wn, "%.250s", rt_esc(buf)); /* (the program's words) */
		return -1;
	}
	if (type != RINGTRACE_ATTACH_HELLO || len != sizeof(*h)) {
		close(fd);
		snprintf(why, wn, "an answer of type %u and %u bytes, not a hello", type, len);
		return -1;
	}
	memcpy(h, buf, sizeof(*h));
	if (h->magic != RINGTRACE_ATTACH_MAGIC || h->version != RINGTRACE_ATTACH_VERSION ||
	    h->pid != (uint32_t)pid) {
		close(fd);
		snprintf(why, wn, "a hello of magic %#x version %u pid %u", h->magic, h->version,
			 h->pid);
		return -1;
	}
	h->comm[sizeof(h->comm) - 1] = 0;
	h->exe[sizeof(h->exe) - 1] = 0;
	*out = fd;
	return 0;
}

int co_attach_find(pid_t pid, uid_t uid, char *path, size_t pn, char *why, size_t wn)
{
	/* Where a program of uid puts its socket (docs/attach.md): the
	 * caller's own directory first (it may be $XDG_RUNTIME_DIR's), then
	 * the fixed places. */
	char cand[4][512];
	unsigned n = 0;
	if (uid == geteuid()) {
		int fd = ringtrace_attach_dir_open(0, cand[n], sizeof(cand[n]));
		if (fd >= 0) {
			close(fd);
			n++;
		}
	}
	char fixed[2][64];
	unsigned nf = 0;
	if (uid == 0) {
		snprintf(fixed[nf++], sizeof(fixed[0]), "/run/ringtrace");
	} else {
		snprintf(fixed[nf++], sizeof(fixed[0]), "/run/user/%u/ringtrace", (unsigned)uid);
		snprintf(fixed[nf++], sizeof(fixed[0]), "/tmp/ringtrace-%u", (unsigned)uid);
	}
	for (unsigned f = 0; f < nf; f++)
		if (n == 0 || strcmp(cand[0], fixed[f]) != 0)
			snprintf(cand[n++], sizeof(cand[0]), "%s", fixed[f]);
	char name[32], failed[512] = "";
	snprintf(name, sizeof(name), "%d.sock", (int)pid);
	for (unsigned i = 0; i < n; i++) {
		int dfd = ringtrace_attach_dir_check(cand[i], (unsigned)uid);
		/* (a directory that could not be looked into for want of
		 * descriptors or memory: that is why, not a missing socket) */
		if (dfd < 0 && !failed[0] &&
		    (errno == EMFILE || errno == ENFILE || errno == ENOMEM))
			snprintf(failed, sizeof(failed), "%s", ringtrace_last_error());
		if (dfd < 0)
			continue;
		struct stat st;
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISSOCK(st.st_mode)) {
			snprintf(path, pn, "%s", cand[i]);
			return dfd;
		}
		close(dfd);
	}
	if (failed[0]) {
		snprintf(why, wn, "cannot look for its socket: %s", failed);
		return -1;
	}
	snprintf(why, wn,
		 "no socket %s in the rendezvous directories of uid %u (%s%s%s): not linked "
		 "with libringtrace, started with RINGTRACE_ATTACH=0, or not attachable "
		 "(RINGTRACE_ATTACH=1 makes it say why)",
		 name, (unsigned)uid, cand[0], n > 1 ? ", " : "", n > 1 ? cand[n - 1] : "");
	return -1;
}

/* "<prefix><uid>" in a directory listing: the uid, or (uid_t)-1. */
static uid_t attach_uid_in(const char *name, const char *prefix)
{
	size_t pl = strlen(prefix);
	if (strncmp(name, prefix, pl) != 0 || name[pl] < '1' || name[pl] > '9')
		return (uid_t)-1;
	char *end;
	errno = 0;
	unsigned long v = strtoul(name + pl, &end, 10);
	if (errno || *end || v >= (uid_t)-1)
		return (uid_t)-1;
	return (uid_t)v;
}

void co_each_user_dir(void (*fn)(const char *dir, uid_t uid, void *arg), void *arg)
{
	fn("/run/ringtrace", 0, arg);
	static const struct {
		const char *parent, *prefix, *fmt;
	} where[] = {
		{"/run/user", "", "/run/user/%u/ringtrace"},
		{"/tmp", "ringtrace-", "/tmp/ringtrace-%u"},
	};
	for (size_t w = 0; w < sizeof(where) / sizeof(where[0]); w++) {
		DIR *d = opendir(where[w].parent);
		if (!d)
			continue;
		struct dirent *e;
		unsigned seen = 0;
		while ((e = readdir(d)) && seen++ < 100000) {
			uid_t uid = attach_uid_in(e->d_name, where[w].prefix);
			if (uid == (uid_t)-1)
				continue;
			char dir[256];
			snprintf(dir, sizeof(dir), where[w].fmt, (unsigned)uid);
			fn(dir, uid, arg);
		}
		closedir(d);
	}
}
