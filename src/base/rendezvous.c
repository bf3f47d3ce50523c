/*
 * The rendezvous directory and the message framing shared by a traced
 * program's listener (src/record/attach.c) and the ringtrace command
 * (tools/cmd_ps.c). include/ringtrace/attach.h has the contract.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "ringtrace/attach.h"

int ringtrace_attach_dir_check(const char *dir, unsigned uid)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int e = errno; /* (kept for the caller: ENOENT is "none yet") */
		rt_error(RINGTRACE_ESYS, "attach directory %s: %s", dir, strerror(e));
		errno = e;
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != (uid_t)uid ||
	    (st.st_mode & 077) != 0) {
		close(fd);
		rt_error(RINGTRACE_EINVAL,
			 "attach directory %s: not a directory of uid %u with no access for "
			 "others (owner %u, mode %03o)",
			 dir, (unsigned)uid, (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777));
		return -1;
	}
	return fd;
}

/* A base directory (XDG_RUNTIME_DIR, /run/user/UID) usable for ours. */
static int rt_att_base_ok(const char *base)
{
	struct stat st;
	return base && base[0] == '/' && lstat(base, &st) == 0 && S_ISDIR(st.st_mode) &&
	       st.st_uid == geteuid() && (st.st_mode & 022) == 0;
}

int ringtrace_attach_dir_open(int create, char *path, size_t n)
{
	uid_t uid = geteuid();
	char run_user[64];
	snprintf(run_user, sizeof(run_user), "/run/user/%u", (unsigned)uid);
	/* (environ: the command's own, or the program's under the usual
	 * AT_SECURE rule: rt_getenv gives nothing there) */
	const char *xdg = rt_getenv("XDG_RUNTIME_DIR");
	int len;
	if (uid == 0)
		len = snprintf(path, n, "/run/ringtrace");
	else if (rt_att_base_ok(xdg))
		len = snprintf(path, n, "%s/ringtrace", xdg);
	else if (rt_att_base_ok(run_user))
		len = snprintf(path, n, "%s/ringtrace", run_user);
	else
		len = snprintf(path, n, "/tmp/ringtrace-%u", (unsigned)uid);
	if (len < 0 || (size_t)len >= n) {
		rt_error(RINGTRACE_EINVAL, "attach directory: path too long");
		return -1;
	}
	int created = create && mkdir(path, 0700) == 0;
	if (create && !created && errno != EEXIST) {
		rt_error(RINGTRACE_ESYS, "attach directory %s: %s", path, strerror(errno));
		return -1;
	}
	int fd = ringtrace_attach_dir_check(path, uid);
	/* (the umask may have cut the owner's bits of one we made: 0700 exactly) */
	if (fd >= 0 && created)
		fchmod(fd, 0700);
	return fd;
}

int ringtrace_attach_send(int fd, uint32_t type, const void *payload, uint32_t len)
{
	struct ringtrace_attach_hdr h = {len, type};
	char buf[sizeof(h) + RINGTRACE_ATTACH_MAX_PAYLOAD];
	if (len > RINGTRACE_ATTACH_MAX_PAYLOAD) {
		errno = EMSGSIZE;
		return -1;
	}
	memcpy(buf, &h, sizeof(h));
	if (len)
		memcpy(buf + sizeof(h), payload, len);
	return rt_write_all(fd, buf, sizeof(h) + len) == 0 ? 0 : -1;
}

/* Read exactly n bytes: 0, 1 at EOF before any byte, -1 on error. */
static int rt_att_read(int fd, void *p, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, (char *)p + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			return got == 0 ? 1 : -1;
		got += (size_t)r;
	}
	return 0;
}

int ringtrace_attach_recv(int fd, uint32_t *type, void *buf, uint32_t cap, uint32_t *len)
{
	struct ringtrace_attach_hdr h;
	int r = rt_att_read(fd, &h, sizeof(h));
	if (r == 1) {
		rt_error(RINGTRACE_ESYS, "attach: the peer closed the connection");
		return -1;
	}
	if (r < 0) {
		rt_error(RINGTRACE_ESYS, "attach: reading a message header: %s",
			 errno ? strerror(errno) : "cut short");
		return -1;
	}
	if (h.len > RINGTRACE_ATTACH_MAX_PAYLOAD || h.len > cap) {
		rt_error(RINGTRACE_ECORRUPT,
			 "attach: message of type %u says %u bytes (at most %u here)", h.type,
			 h.len,
			 cap < RINGTRACE_ATTACH_MAX_PAYLOAD ? cap : RINGTRACE_ATTACH_MAX_PAYLOAD);
		return -1;
	}
	if (h.len && rt_att_read(fd, buf, h.len) != 0) {
		rt_error(RINGTRACE_ESYS, "attach: message of type %u cut short", h.type);
		return -1;
	}
	*type = h.type;
	*len = h.len;
	return 0;
}
