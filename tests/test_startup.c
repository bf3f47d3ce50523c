/*
 * test_startup: what a program linked with libringtrace does at its start
 * when nobody traces it, and that what it leaves for later happens when
 * it is needed (docs/benchmarks.md, "The start of an untraced program"):
 *
 *  - the process identity (a random cookie, the pid namespace) is read
 *    when the process first creates a buffer, not at load; a child forked
 *    before that reads its own when it creates one;
 *  - the membarrier registration happens when a thread first enters a
 *    read-side section, not at load; an event unregistered before that
 *    (a dlclose, the process's exit) sends no barrier;
 *  - the attach listener listens without calibrating the trace clock; the
 *    first connection's HELLO carries a calibration, made then.
 *
 * Each case needs a process in which nothing was traced yet
 * (CHECK_CASE_ALONE).
 */
#include <dirent.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>

#define RINGTRACE_CREATE_EVENTS
#include "base/base.h"
#include "check.h"
#include "ring/ring_internal.h"
#include "ringtrace/attach.h"
#include "ringtrace/tracepoint.h"

RINGTRACE_EVENT(startup_test_event, RINGTRACE_PROTO(int value), RINGTRACE_ARGS(value),
		RINGTRACE_FIELDS(ringtrace_integer(int, value, value)), RINGTRACE_PRINT("value=%d"))

static ringtrace_rb *make_buffer(void)
{
	struct ringtrace_rb_config cfg;
	ringtrace_rb_config_init(&cfg);
	cfg.page_size = 4096;
	cfg.pool_size = 4096 * 16;
	ringtrace_rb *rb = NULL;
	CHECK_OK(ringtrace_rb_create(&cfg, &rb));
	return rb;
}

static void identity_at_first_buffer(void)
{
	CHECK_EQ_U64(rt_identity_loaded()->cookie, 0);
	ringtrace_rb *rb = make_buffer();
	CHECK(rt_identity_loaded()->cookie != 0);
	CHECK_EQ_U64(rt_identity_loaded()->pid, (uint64_t)getpid());
	ringtrace_rb_destroy(rb);
}

static void fork_child_identity(void)
{
	int p[2];
	CHECK(pipe(p) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		uint64_t before = rt_identity_loaded()->cookie;
		ringtrace_rb *rb = make_buffer();
		uint64_t c[2] = {before, rt_identity_loaded()->cookie};
		ssize_t w = write(p[1], c, sizeof(c));
		ringtrace_rb_destroy(rb);
		_exit(w == (ssize_t)sizeof(c) ? 0 : 1);
	}
	close(p[1]);
	uint64_t c[2] = {1, 0};
	CHECK(read(p[0], c, sizeof(c)) == (ssize_t)sizeof(c));
	close(p[0]);
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECKF(c[0] == 0, "the child had an identity before its first buffer: %#" PRIx64, c[0]);
	CHECK(c[1] != 0);
	ringtrace_rb *rb = make_buffer();
	uint64_t mine = rt_identity_loaded()->cookie;
	CHECK(mine != 0);
	CHECKF(mine != c[1], "parent and child drew the same cookie %#" PRIx64, mine);
	ringtrace_rb_destroy(rb);
}

/* membarrier(PRIVATE_EXPEDITED): 0 once the process registered, EPERM before. */
static int private_expedited(void)
{
	return syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0 ? 0 : errno;
}

static int have_membarrier(void)
{
	long q = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
	return q > 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED);
}

static void mb_first_section(void)
{
	if (!have_membarrier())
		CHECK_SKIP("the kernel has no private expedited membarrier");
	CHECKF(private_expedited() == EPERM, "registered at load (membarrier says %d)",
	       private_expedited());
	unsigned rd = ringtrace_read_lock();
	ringtrace_read_unlock(rd);
	CHECKF(private_expedited() == 0, "not registered after a section (errno %d)",
	       private_expedited());
}

static void mb_unregister(void)
{
	if (!have_membarrier())
		CHECK_SKIP("the kernel has no private expedited membarrier");
	struct ringtrace_event_info info;
	CHECK_OK(ringtrace_event_lookup("startup_test_event", &info));
	ringtrace_event_unregister(&ringtrace_event_startup_test_event);
	CHECK(ringtrace_event_lookup("startup_test_event", &info) == -RINGTRACE_ENOENT);
	/* (no grace period had anything to wait for: still unregistered) */
	CHECKF(private_expedited() == EPERM, "registered by an unregister (membarrier says %d)",
	       private_expedited());
	ringtrace_event_register(&ringtrace_event_startup_test_event);
	CHECK_OK(ringtrace_event_lookup("startup_test_event", &info));
	/* Once a thread has entered a section, an unregister waits for it. */
	unsigned rd = ringtrace_read_lock();
	ringtrace_read_unlock(rd);
	ringtrace_event_unregister(&ringtrace_event_startup_test_event);
	CHECK(ringtrace_event_lookup("startup_test_event", &info) == -RINGTRACE_ENOENT);
	CHECK(private_expedited() == 0);
}

/* The listener's thread (named ringtrace-att) is blocked in accept4. */
static int listener_in_accept(void)
{
	DIR *d = opendir("/proc/self/task");
	CHECK(d != NULL);
	int found = 0;
	for (struct dirent *e; !found && (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		char path[300], buf[256];
		int n = snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		CHECK(n > 0 && (size_t)n < sizeof(path));
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		int is_att = fgets(buf, sizeof(buf), f) && strncmp(buf, "ringtrace-att", 13) == 0;
		fclose(f);
		if (!is_att)
			continue;
		n = snprintf(path, sizeof(path), "/proc/self/task/%s/syscall", e->d_name);
		CHECK(n > 0 && (size_t)n < sizeof(path));
		f = fopen(path, "r");
		if (!f)
			continue;
		long nr = -1;
		found = fscanf(f, "%ld", &nr) == 1 && nr == __NR_accept4;
		fclose(f);
	}
	closedir(d);
	return found;
}

static void listener_no_calibration(void)
{
	const char *a = getenv("RINGTRACE_ATTACH");
	if (a && strcmp(a, "0") == 0)
		CHECK_SKIP("RINGTRACE_ATTACH=0: no listener");
	char dir[512];
	int dfd = ringtrace_attach_dir_open(0, dir, sizeof(dir));
	CHECKF(dfd >= 0, "no rendezvous directory: %s", ringtrace_last_error());
	char name[32];
	snprintf(name, sizeof(name), "%u.sock", (unsigned)getpid());
	/* The socket, then its thread blocked in accept (10 s at most each). */
	struct timespec tick = {0, 1000000};
	for (int i = 0; i < 10000 && faccessat(dfd, name, F_OK, 0) != 0; i++)
		nanosleep(&tick, NULL);
	CHECKF(faccessat(dfd, name, F_OK, 0) == 0, "no socket %s/%s", dir, name);
	for (int i = 0; i < 10000 && !listener_in_accept(); i++)
		nanosleep(&tick, NULL);
	CHECK(listener_in_accept());
	CHECK(!rt_clock_calibrated());
	/* The first connection's HELLO carries a calibration. */
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(fd >= 0);
	struct sockaddr_un sa;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	int n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, name);
	CHECK(n > 0 && (size_t)n < sizeof(sa.sun_path));
	CHECKF(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "connect %s: %s", sa.sun_path,
	       strerror(errno));
	struct ringtrace_attach_hello h;
	uint32_t type = 0, len = 0;
	CHECK(ringtrace_attach_recv(fd, &type, &h, sizeof(h), &len) == 0);
	CHECK_EQ_U64(type, RINGTRACE_ATTACH_HELLO);
	CHECK_EQ_U64(len, sizeof(h));
	CHECK(h.clock_freq != 0);
	CHECK(rt_clock_calibrated());
	close(fd);
	close(dfd);
}

static const struct check_case cases[] = {
	CHECK_CASE_ALONE(startup_identity_read_at_first_buffer, identity_at_first_buffer),
	CHECK_CASE_ALONE(startup_fork_child_reads_its_own_identity, fork_child_identity),
	CHECK_CASE_ALONE(startup_membarrier_registered_at_first_section, mb_first_section),
	CHECK_CASE_ALONE(startup_unregister_before_any_section_no_barrier, mb_unregister),
	CHECK_CASE_ALONE(startup_listener_does_not_calibrate_the_clock, listener_no_calibration),
};

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
