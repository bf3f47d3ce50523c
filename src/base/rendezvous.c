/*
 * The rendezvous directory and the message framing shared by a traced
 * program's listener (src/record/attach.c) and the ringtrace command
 * (src/collect/attach_client.c). include/ringtrace/attach.h has the contract.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
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
		errno = EPERM; /* (not ENOENT: there is one, not ours to use) */
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
	/* Opened first, made only if it is not there: a program's start makes
	 * one system call here, not two, once the directory exists. */
	int fd = ringtrace_attach_dir_check(path, uid);
	if (fd >= 0 || !create || errno != ENOENT)
		return fd;
	int created = mkdir(path, 0700) == 0;
	if (!created && errno != EEXIST) {
		rt_error(RINGTRACE_ESYS, "attach directory %s: %s", path, strerror(errno));
		return -1;
	}
	fd = ringtrace_attach_dir_check(path, uid);
	/* (the umask may have cut the owner's bits of one we made: 0700 exactly) */
	if (fd >= 0 && created)
		fchmod(fd, 0700);
	return fd;
}

/* All of it, without SIGPIPE if the peer has gone (that is an error here). */
static int rt_att_send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t r = send(fd, p, n, MSG_NOSIGNAL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

int ringtrace_attach_send_fds(int fd, uint32_t type, const void *payload, uint32_t len,
			      const int *fds, unsigned nfds)
{
	struct ringtrace_attach_hdr h = {len, type};
	char buf[sizeof(h) + RINGTRACE_ATTACH_MAX_PAYLOAD];
	if (len > RINGTRACE_ATTACH_MAX_PAYLOAD || nfds > RINGTRACE_ATTACH_MAX_FDS) {
		errno = EMSGSIZE;
		return -1;
	}
	memcpy(buf, &h, sizeof(h));
	if (len)
		memcpy(buf + sizeof(h), payload, len);
	size_t total = sizeof(h) + len, sent = 0;
	if (nfds) {
		/* The descriptors go with the first bytes; the rest, if the
		 * socket takes less at once, as plain writes. */
		union {
			char b[CMSG_SPACE(sizeof(int) * RINGTRACE_ATTACH_MAX_FDS)];
			struct cmsghdr align;
		} ctl;
		memset(&ctl, 0, sizeof(ctl));
		struct iovec iov = {buf, total};
		struct msghdr m;
		memset(&m, 0, sizeof(m));
		m.msg_iov = &iov;
		m.msg_iovlen = 1;
		m.msg_control = ctl.b;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
		ssize_t r;
		while ((r = sendmsg(fd, &m, MSG_NOSIGNAL)) < 0 && errno == EINTR)
			;
		if (r < 0)
			return -1;
		sent = (size_t)r;
	}
	return rt_att_send_all(fd, buf + sent, total - sent);
}

int ringtrace_attach_send(int fd, uint32_t type, const void *payload, uint32_t len)
{
	return ringtrace_attach_send_fds(fd, type, payload, len, NULL, 0);
}

/* Descriptors received so far, and whether more came than wanted. */
struct rt_att_fds {
	int *fds;
	unsigned max, n;
	int excess;
	int cut; /* the kernel could not give us some (MSG_CTRUNC) */
};

/* Keep the descriptors a recvmsg brought (close those over the limit). */
static void rt_att_take_fds(struct msghdr *m, struct rt_att_fds *f)
{
	if (m->msg_flags & MSG_CTRUNC)
		f->cut = 1; /* (the kernel closed what did not fit, or what it had no descriptor for) */
	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
		    c->cmsg_len < CMSG_LEN(0))
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int d;
			memcpy(&d, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (f->n < f->max) {
				f->fds[f->n++] = d;
			} else {
				close(d);
				f->excess = 1;
			}
		}
	}
}

/* Read exactly n bytes: 0, 1 at EOF before any byte, -1 on error. */
static int rt_att_read(int fd, void *p, size_t n, struct rt_att_fds *f)
{
	size_t got = 0;
	while (got < n) {
		union {
			char b[CMSG_SPACE(sizeof(int) * RINGTRACE_ATTACH_MAX_FDS)];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = {(char *)p + got, n - got};
		struct msghdr m;
		memset(&m, 0, sizeof(m));
		m.msg_iov = &iov;
		m.msg_iovlen = 1;
		m.msg_control = ctl.b;
		m.msg_controllen = sizeof(ctl.b);
		ssize_t r = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		rt_att_take_fds(&m, f);
		if (r == 0) {
			errno = 0; /* the peer closed it in the middle of a message */
			return got == 0 ? 1 : -1;
		}
		got += (size_t)r;
	}
	return 0;
}

/* Why a read failed (errno e): a receive time limit that ran out says so and
 * how long it was, rather than EAGAIN's "Resource temporarily unavailable",
 * which reads like a fault when the peer is only slow (a loaded machine). */
static const char *rt_att_read_why(int fd, int e, char *buf, size_t n)
{
	if (e == EAGAIN || e == EWOULDBLOCK) {
		struct timeval tv = {0, 0};
		socklen_t l = sizeof(tv);
		getsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &l);
		snprintf(buf, n, "no answer from the peer within its time limit (%ld.%03ld s)",
			 (long)tv.tv_sec, (long)tv.tv_usec / 1000);
		return buf;
	}
	return e ? strerror(e) : "cut short";
}

int ringtrace_attach_recv_fds(int fd, uint32_t *type, void *buf, uint32_t cap, uint32_t *len,
			      int *fds, unsigned maxfds, unsigned *nfds)
{
	struct rt_att_fds f = {fds, fds ? maxfds : 0, 0, 0, 0};
	for (unsigned i = 0; i < f.max; i++)
		fds[i] = -1;
	if (nfds)
		*nfds = 0;
	struct ringtrace_attach_hdr h;
	int r = rt_att_read(fd, &h, sizeof(h), &f);
	if (r == 1) {
		rt_error(RINGTRACE_ESYS, "attach: the peer closed the connection");
		goto fail;
	}
	char why[100];
	if (r < 0) {
		int e = errno;
		rt_error(RINGTRACE_ESYS, "attach: reading a message header: %s",
			 rt_att_read_why(fd, e, why, sizeof(why)));
		errno = e;
		goto fail;
	}
	if (h.len > RINGTRACE_ATTACH_MAX_PAYLOAD || h.len > cap) {
		rt_error(RINGTRACE_ECORRUPT,
			 "attach: message of type %u says %u bytes (at most %u here)", h.type,
			 h.len,
			 cap < RINGTRACE_ATTACH_MAX_PAYLOAD ? cap : RINGTRACE_ATTACH_MAX_PAYLOAD);
		goto fail;
	}
	if (h.len && rt_att_read(fd, buf, h.len, &f) != 0) {
		int e = errno;
		rt_error(RINGTRACE_ESYS, "attach: message of type %u: reading its %u bytes: %s",
			 h.type, h.len, rt_att_read_why(fd, e, why, sizeof(why)));
		errno = e;
		goto fail;
	}
	if (f.cut && !f.excess) {
		/* Room for every descriptor expected was given: what did not come
		 * had no descriptor number to go to, or there were more of them.
		 * (A descriptor asked for now tells which.) */
		int probe = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		int e = errno;
		if (probe >= 0)
			close(probe);
		else if (e == EMFILE || e == ENFILE) {
			rt_error(RINGTRACE_ESYS,
				 "attach: the descriptors sent with message type %u could not be "
				 "received: %s (RLIMIT_NOFILE)",
				 h.type, strerror(e));
			goto fail;
		}
		f.excess = 1;
	}
	if (f.excess) {
		rt_error(RINGTRACE_ECORRUPT,
			 "attach: message of type %u came with more descriptors than the %u "
			 "expected",
			 h.type, f.max);
		goto fail;
	}
	*type = h.type;
	*len = h.len;
	if (nfds)
		*nfds = f.n;
	return 0;
fail:;
	/* errno stays the read's: callers tell a time limit (EAGAIN) from the rest */
	int e = errno;
	for (unsigned i = 0; i < f.n; i++) {
		close(fds[i]);
		fds[i] = -1;
	}
	errno = e;
	return -1;
}

int ringtrace_attach_recv(int fd, uint32_t *type, void *buf, uint32_t cap, uint32_t *len)
{
	return ringtrace_attach_recv_fds(fd, type, buf, cap, len, NULL, 0, NULL);
}
