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
 *    first connection's HELLO carries a calibration, made then;
 *  - with no rule in the environment, the events are registered (their
 *    schemas copied, ids given) at the registry's first consultation, in
 *    their order, and a session started later records them; one
 *    unregistered before (a dlclose) is forgotten; with a rule in the
 *    environment they are registered at load, the rule applied.
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
#include "event/event_api.h"
#include "events_util.h"
#include "ring/ring_api.h"
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

/* RINGTRACE_EVENTS, _FILTERS, _TRIGGERS: set in this environment. */
static int env_has_rules(void)
{
	const char *n[] = {"RINGTRACE_EVENTS", "RINGTRACE_FILTERS", "RINGTRACE_TRIGGERS"};
	for (int i = 0; i < 3; i++)
		if (getenv(n[i]) && *getenv(n[i]))
			return 1;
	return 0;
}

static void registry_deferred(void)
{
	if (env_has_rules())
		CHECK_SKIP("a RINGTRACE_ rule in the environment: registered at load");
	CHECK_EQ_U64(rt_nentries, 0);
	/* The first consultation: both events, the library's printf first
	 * (its constructor runs before the program's), with their ids. */
	CHECK_EQ_U64(ringtrace_event_count(), 2);
	struct ringtrace_event_info a, b;
	CHECK_OK(ringtrace_event_get(0, &a));
	CHECK_OK(ringtrace_event_get(1, &b));
	CHECK(strcmp(a.name, "ringtrace_printf") == 0 && a.id == RINGTRACE_EVENT_ID_PRINTF);
	CHECK(strcmp(b.name, "startup_test_event") == 0 && b.id == RINGTRACE_EVENT_ID_FIRST);
	CHECK(b.loaded && !b.enabled);
	CHECK_EQ_U64(ringtrace_event_startup_test_event.id, b.id);
}

static void reg_recorded(void)
{
	if (env_has_rules())
		CHECK_SKIP("a RINGTRACE_ rule in the environment: registered at load");
	CHECK_EQ_U64(rt_nentries, 0);
	trace_startup_test_event(1); /* (not registered yet: nothing) */
	CHECK_EQ_U64(ringtrace_event_startup_test_event.state, 0);
	CHECK(ringtrace_event_enable("startup_test_event") == 1);
	ringtrace_rb *rb = evu_buffer(4096, 16);
	trace_startup_test_event(42);
	struct evu_list l = {0};
	evu_collect(rb, &l);
	CHECK_EQ_U64(l.n, 1);
	CHECK_EQ_U64(l.ev[0].id, evu_id("startup_test_event"));
	int v = 0;
	memcpy(&v, l.ev[0].data, sizeof(v));
	CHECK_EQ_U64(v, 42);
	evu_list_free(&l);
	evu_buffer_done(rb);
}

static void reg_unregistered(void)
{
	if (env_has_rules())
		CHECK_SKIP("a RINGTRACE_ rule in the environment: registered at load");
	ringtrace_event_unregister(&ringtrace_event_startup_test_event);
	CHECK_EQ_U64(rt_nentries, 0);
	struct ringtrace_event_info info;
	CHECK(ringtrace_event_lookup("startup_test_event", &info) == -RINGTRACE_ENOENT);
	CHECK_EQ_U64(ringtrace_event_count(), 1); /* (ringtrace_printf) */
	ringtrace_event_register(&ringtrace_event_startup_test_event);
	CHECK_OK(ringtrace_event_lookup("startup_test_event", &info));
	CHECK(info.loaded && info.id == RINGTRACE_EVENT_ID_FIRST);
}

/* Run again with RINGTRACE_EVENTS set: registered at load, enabled. */
static void registry_env_rule_at_load(void)
{
	const char *v = getenv("RINGTRACE_EVENTS");
	if (!v || strcmp(v, "startup_test_event") != 0) {
		char self[4096];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		CHECK(n > 0);
		self[n] = 0;
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			setenv("RINGTRACE_EVENTS", "startup_test_event", 1);
			execl(self, self, "startup_registry_env_rule_registers_at_load",
			      (char *)NULL);
			_exit(127);
		}
		int st = 0;
		CHECK(waitpid(pid, &st, 0) == pid);
		CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the run with RINGTRACE_EVENTS: %#x",
		       st);
		return;
	}
	CHECK_EQ_U64(rt_nentries, 2);
	CHECK_EQ_U64(ringtrace_event_startup_test_event.state, RINGTRACE_EV_RECORD);
}

static const struct check_case cases[] = {
	CHECK_CASE_ALONE(startup_identity_read_at_first_buffer, identity_at_first_buffer),
	CHECK_CASE_ALONE(startup_fork_child_reads_its_own_identity, fork_child_identity),
	CHECK_CASE_ALONE(startup_membarrier_registered_at_first_section, mb_first_section),
	CHECK_CASE_ALONE(startup_unregister_before_any_section_no_barrier, mb_unregister),
	CHECK_CASE_ALONE(startup_listener_does_not_calibrate_the_clock, listener_no_calibration),
	CHECK_CASE_ALONE(startup_registry_deferred_to_first_consultation, registry_deferred),
	CHECK_CASE_ALONE(startup_registry_deferred_event_recorded_later, reg_recorded),
	CHECK_CASE_ALONE(startup_registry_deferred_event_unregistered, reg_unregistered),
	CHECK_CASE_ALONE(startup_registry_env_rule_registers_at_load, registry_env_rule_at_load),
};

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
