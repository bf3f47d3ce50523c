/*
 * The program's side of attaching (docs/attach.md): a socket in the
 * user's rendezvous directory and one thread that answers on it, so that
 * `ringtrace ps` (and, later, `ringtrace record -p`) can find and reach a
 * running program without a daemon.
 *
 * Started at load (runtime.c) unless RINGTRACE_ATTACH=0; a program with
 * AT_SECURE that is not running as root is never attachable (docs/attach.md,
 * "Who may attach"). What a program nobody attaches to pays: this thread,
 * blocked in accept4() (it never runs), one descriptor, the socket file
 * and the thread's 64 KiB stack, mostly untouched.
 *
 * Every peer is checked (SO_PEERCRED) before anything is said: only the
 * program's own effective uid or root; for an AT_SECURE program root only.
 * Anyone else gets a DENIED message saying why, and nothing else happens.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "record/record_internal.h"
#include "ringtrace/attach.h"
#include "ringtrace/event.h"
#include "ringtrace/session.h"

/* The listener: its socket, the directory holding it, and who made it. */
static int rt_att_fd = -1;
static int rt_att_dirfd = -1;
static pid_t rt_att_pid; /* the process that bound the socket (not a forked child) */
static char rt_att_name[32];

/* A read of at most `ms` milliseconds, or a write, never blocks the thread for good. */
static void rt_att_timeouts(int fd, int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static void rt_att_deny(int fd, const char *fmt, unsigned a, unsigned b)
{
	char why[256];
	int n = snprintf(why, sizeof(why), fmt, a, b);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(why))
		n = sizeof(why) - 1;
	(void)ringtrace_attach_send(fd, RINGTRACE_ATTACH_DENIED, why, (uint32_t)n + 1);
}

/* One connection: check the peer, then answer. */
static void rt_att_serve(int fd)
{
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	rt_att_timeouts(fd, 1000);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0 || cl != sizeof(cr))
		return; /* no credentials: say nothing */
	uid_t me = geteuid();
	if (rt_secure_mode() && cr.uid != 0) {
		rt_att_deny(fd,
			    "refused: uid %u may not attach to a privileged program (uid %u); "
			    "only root may",
			    (unsigned)cr.uid, (unsigned)me);
		return;
	}
	if (cr.uid != me && cr.uid != 0) {
		rt_att_deny(fd, "refused: uid %u may not attach to a program of uid %u",
			    (unsigned)cr.uid, (unsigned)me);
		return;
	}
	struct ringtrace_attach_hello h;
	memset(&h, 0, sizeof(h));
	h.magic = RINGTRACE_ATTACH_MAGIC;
	h.version = RINGTRACE_ATTACH_VERSION;
	h.pid = (uint32_t)getpid();
	h.uid = (uint32_t)me;
	h.nevents = ringtrace_event_count();
	h.recording = ringtrace_session_buffer() != NULL;
	int cfd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
	if (cfd >= 0) {
		ssize_t n = read(cfd, h.comm, sizeof(h.comm) - 1);
		close(cfd);
		if (n > 0 && h.comm[n - 1] == '\n')
			h.comm[n - 1] = 0;
	}
	ssize_t n = readlink("/proc/self/exe", h.exe, sizeof(h.exe) - 1);
	if (n < 0)
		h.exe[0] = 0;
	(void)ringtrace_attach_send(fd, RINGTRACE_ATTACH_HELLO, &h, sizeof(h));
}

/*
 * The socket: in the rendezvous directory, bound through the checked
 * directory's descriptor. 0, or -1 having said why if asked to.
 */
static int rt_att_listen(int verbose)
{
	char dir[512];
	int dfd = ringtrace_attach_dir_open(1, dir, sizeof(dir));
	if (dfd < 0) {
		if (verbose)
			fprintf(stderr, "ringtrace: not attachable: %s\n", ringtrace_last_error());
		return -1;
	}
	char name[32];
	snprintf(name, sizeof(name), "%u.sock", (unsigned)getpid());
	/* (a file of that name is a dead process's, whose pid this one has) */
	unlinkat(dfd, name, 0);
	struct sockaddr_un a;
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	int len = snprintf(a.sun_path, sizeof(a.sun_path), "/proc/self/fd/%d/%s", dfd, name);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || len < 0 || (size_t)len >= sizeof(a.sun_path) ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 8) != 0) {
		if (verbose)
			fprintf(stderr, "ringtrace: not attachable: socket in %s: %s\n", dir,
				strerror(errno));
		if (fd >= 0)
			close(fd);
		unlinkat(dfd, name, 0);
		close(dfd);
		return -1;
	}
	/* (connect needs write permission on the socket: the directory's 0700
	 * already keeps others out; the file need not add to it) */
	fchmodat(dfd, name, 0600, 0);
	memcpy(rt_att_name, name, sizeof(name));
	__atomic_store_n(&rt_att_fd, fd, __ATOMIC_RELAXED);
	__atomic_store_n(&rt_att_dirfd, dfd, __ATOMIC_RELEASE);
	return 0;
}

/*
 * The listener. It also makes the socket, so that the program's start
 * pays only for creating this thread: the directory, socket, bind and
 * listen calls (~20 system calls) are made here, beside the program.
 */
static void *rt_att_thread(void *arg)
{
	int verbose = (int)(intptr_t)arg;
	pthread_setname_np(pthread_self(), "ringtrace-att");
	if (rt_att_listen(verbose) < 0)
		return NULL;
	int lfd = __atomic_load_n(&rt_att_fd, __ATOMIC_RELAXED);
	for (;;) {
		int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EAGAIN)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				/* (out of descriptors or memory: try later, slowly) */
				sleep(1);
				continue;
			}
			return NULL; /* the socket was closed (a forked child) or is broken */
		}
		rt_att_serve(c);
		close(c);
	}
}

/* At exit: the socket file goes (only the process that made it removes it). */
static void rt_att_exit(void)
{
	int dfd = __atomic_load_n(&rt_att_dirfd, __ATOMIC_ACQUIRE);
	if (dfd >= 0 && getpid() == rt_att_pid)
		unlinkat(dfd, rt_att_name, 0);
}

/*
 * A forked child has no listener thread and must not answer for its
 * parent: it closes the inherited socket and directory (the file stays
 * the parent's). Attaching to it after exec works (the constructor runs
 * again); without exec it is not attachable (docs/attach.md).
 */
static void rt_att_atfork_child(void)
{
	/* (published by the listener: the socket, then the directory, released;
	 * a socket still being made at the fork is closed by exec) */
	int dfd = __atomic_load_n(&rt_att_dirfd, __ATOMIC_ACQUIRE);
	if (dfd < 0)
		return;
	close(__atomic_load_n(&rt_att_fd, __ATOMIC_RELAXED));
	close(dfd);
	__atomic_store_n(&rt_att_fd, -1, __ATOMIC_RELAXED);
	__atomic_store_n(&rt_att_dirfd, -1, __ATOMIC_RELAXED);
}

void rt_attach_start(void)
{
	const char *v = rt_getenv("RINGTRACE_ATTACH");
	if (v && strcmp(v, "0") == 0)
		return;
	int verbose = v && strcmp(v, "1") == 0;
	if (rt_secure_mode() && geteuid() != 0)
		return; /* attachable by root only, and root's directory is not ours to make */
	rt_att_pid = getpid();
	/* (before the thread: a fork meanwhile must not keep its descriptors) */
	pthread_atfork(NULL, NULL, rt_att_atfork_child);
	atexit(rt_att_exit);
	pthread_attr_t at;
	pthread_t th;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 64 * 1024);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	/* The thread takes no signal: they are blocked around its creation. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int err = pthread_create(&th, &at, rt_att_thread, (void *)(intptr_t)verbose);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&at);
	if (err != 0 && verbose)
		fprintf(stderr, "ringtrace: not attachable: no listener thread: %s\n",
			strerror(err));
}
