/*
 * test_ring_fork: the buffer across fork() and across processes.
 *
 *  1. The parent writes, forks while it holds a page; the child writes its
 *     own events, releases its writer and _exits; the parent writes more.
 *     The parent then finds the child's events in a stream of their own
 *     (different stream id, tid == child pid) and its own pages intact and
 *     in sequence: the child did not inherit the parent's writer state.
 *  2. A child process maps the buffer with ringtrace_rb_attach_fd(), from
 *     the inherited fd and from /proc/<ppid>/fd/<n>, consumes the pages the
 *     parent wrote and reports the count through a pipe; the parent sees the
 *     consumption in its stats (shared memory).
 *  3. The same through a named shm (cfg.shm_name + ringtrace_rb_attach_name).
 * Each is a case (2. twice: the inherited fd and /proc/<ppid>/fd/<n>).
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "testutil.h"

#define SRC_PARENT 0x50415245u /* "PARE" */
#define SRC_CHILD 0x4348494Cu  /* "CHIL" */
#define EV_ID 5u

struct payload {
	uint32_t src;
	uint32_t check;
	uint64_t seq;
	uint64_t body[3];
};

static uint64_t t_start_ns;

static void make(struct payload *pl, uint32_t src, uint64_t seq)
{
	pl->src = src;
	pl->seq = seq;
	pl->check = (uint32_t)(seq * 2654435761u) ^ src;
	for (int i = 0; i < 3; i++)
		pl->body[i] = seq * 1000003u + (uint64_t)i * 77u + src;
}

static int intact(const struct payload *pl)
{
	struct payload e;
	make(&e, pl->src, pl->seq);
	return memcmp(&e, pl, sizeof(e)) == 0;
}

static void write_n(ringtrace_rb *rb, uint32_t src, uint64_t from, uint64_t n)
{
	for (uint64_t s = from; s < from + n; s++) {
		struct payload pl;
		make(&pl, src, s);
		int rc = ringtrace_rb_write(rb, EV_ID, &pl, sizeof(pl));
		CHECKF(rc == 0, "%s: write seq %" PRIu64 " = %d (%s)",
		       src == SRC_CHILD ? "child" : "parent", s, rc, ringtrace_strerror(rc));
	}
}

static void wait_child(pid_t pid, const char *what)
{
	int status = 0;
	pid_t r;
	while ((r = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
	}
	CHECKF(r == pid, "waitpid: %s", strerror(errno));
	CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "%s child failed (status 0x%x; its output is above)", what, status);
}

/* ---- 1. writing from a forked child ---- */

#define P1 700u
#define C1 600u
#define P2 500u

struct stream_seen {
	uint64_t id;
	uint32_t tid;
	uint32_t src;
	uint64_t next_page_seq;
	uint64_t next_seq;
	uint64_t events;
};

static void part_write(void)
{
	struct ringtrace_rb_config cfg;
	tu_config(&cfg, 4096, 64, RINGTRACE_RB_DISCARD);
	ringtrace_rb *rb = tu_create(&cfg);
	write_n(rb, SRC_PARENT, 0, P1); /* the parent holds a partly filled page */

	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	CHECKF(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		write_n(rb, SRC_CHILD, 0, C1);
		ringtrace_rb_writer_release(rb);
		_exit(0);
	}
	wait_child(pid, "writer");
	write_n(rb, SRC_PARENT, P1, P2);
	ringtrace_rb_writer_release(rb);

	struct stream_seen ss[8];
	uint32_t nss = 0;
	const struct ringtrace_page_header *p;
	uint32_t my_tid = tu_gettid();
	while ((p = ringtrace_rb_get_page(rb)) != NULL) {
		tu_check_page_header(p, cfg.page_size);
		struct stream_seen *s = NULL;
		for (uint32_t i = 0; i < nss; i++)
			if (ss[i].id == p->stream_instance_id)
				s = &ss[i];
		if (!s) {
			CHECK(nss < 8);
			s = &ss[nss++];
			memset(s, 0, sizeof(*s));
			s->id = p->stream_instance_id;
			s->tid = p->tid;
		}
		CHECKF(p->tid == s->tid, "stream %" PRIu64 ": pages of tids %u and %u", s->id,
		       s->tid, p->tid);
		CHECKF(p->packet_seq_num == s->next_page_seq,
		       "stream %" PRIu64 " (tid %u): page seq %" PRIu64 ", expected %" PRIu64,
		       s->id, s->tid, p->packet_seq_num, s->next_page_seq);
		s->next_page_seq++;
		struct ringtrace_page_cursor c;
		struct ringtrace_event ev;
		ringtrace_page_cursor_init(&c, p);
		int rc;
		while ((rc = ringtrace_page_next(&c, &ev)) == 1) {
			tu_check_event_in_page(p, &ev);
			CHECKF(ev.id == EV_ID && ev.len == sizeof(struct payload), "id %u len %u",
			       ev.id, ev.len);
			const struct payload *pl = (const struct payload *)ev.data;
			CHECKF(intact(pl),
			       "stream %" PRIu64 " (tid %u): corrupt event (src 0x%x seq %" PRIu64
			       ")",
			       s->id, s->tid, pl->src, pl->seq);
			if (s->events == 0)
				s->src = pl->src;
			CHECKF(pl->src == s->src,
			       "stream %" PRIu64 " (tid %u) mixes parent and child events "
			       "(the child wrote into the parent's page?)",
			       s->id, s->tid);
			CHECKF(pl->seq == s->next_seq,
			       "stream %" PRIu64 " (%s): seq %" PRIu64 ", expected %" PRIu64, s->id,
			       s->src == SRC_CHILD ? "child" : "parent", pl->seq, s->next_seq);
			s->next_seq++;
			s->events++;
		}
		CHECKF(rc == 0, "page_next: %d: %s", rc, ringtrace_last_error());
		ringtrace_rb_put_page(rb, p);
	}
	uint64_t parent_events = 0, child_events = 0;
	uint64_t parent_stream = 0, child_stream = 0;
	for (uint32_t i = 0; i < nss; i++) {
		if (ss[i].src == SRC_PARENT) {
			CHECKF(ss[i].tid == my_tid, "parent stream with tid %u (parent is %u)",
			       ss[i].tid, my_tid);
			parent_events += ss[i].events;
			parent_stream = ss[i].id;
		} else {
			CHECKF(ss[i].tid == (uint32_t)pid,
			       "child stream with tid %u, the child's pid is %d", ss[i].tid,
			       (int)pid);
			child_events += ss[i].events;
			child_stream = ss[i].id;
		}
	}
	CHECK_EQ_U64(parent_events, P1 + P2);
	CHECK_EQ_U64(child_events, C1);
	CHECK(parent_stream != child_stream);
	CHECKF(nss == 2, "%u streams, expected 2 (parent, child)", nss);
	struct ringtrace_rb_stats st = tu_stats(rb);
	CHECK_EQ_U64(st.hit, P1 + P2 + C1);
	CHECK_EQ_U64(st.missed, 0);
	CHECK_EQ_U64(st.read, P1 + P2 + C1);
	CHECK_EQ_U64(st.entries, 0);
	CHECK_EQ_U64(st.writers_active, 0);
	CHECK_EQ_U64(st.pages_free, ringtrace_rb_page_count(rb));
	ringtrace_rb_destroy(rb);
	printf("  fork writer: parent %u events (stream %" PRIu64 ", tid %u), child %u events "
	       "(stream %" PRIu64 ", tid %d), intact and in order\n",
	       P1 + P2, parent_stream, my_tid, C1, child_stream, (int)pid);
}

/* ---- 2./3. reading from another process ---- */

#define NREAD 3000u

enum attach_how { BY_FD, BY_PROC, BY_NAME };

/* In the child: attach, consume everything, report the count. */
static void child_reader(enum attach_how how, int fd, const char *name, int pipe_w)
{
	ringtrace_rb *rb = NULL;
	int rc;
	if (how == BY_FD) {
		rc = ringtrace_rb_attach_fd(fd, &rb);
	} else if (how == BY_PROC) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)getppid(), fd);
		int nfd = open(path, O_RDWR | O_CLOEXEC);
		CHECKF(nfd >= 0, "open %s: %s", path, strerror(errno));
		rc = ringtrace_rb_attach_fd(nfd, &rb);
	} else {
		rc = ringtrace_rb_attach_name(name, &rb);
	}
	CHECKF(rc == 0 && rb, "attach (%d): %d (%s): %s", (int)how, rc, ringtrace_strerror(rc),
	       ringtrace_last_error());
	CHECK_EQ_U64(ringtrace_rb_page_size(rb), 4096);
	CHECK_EQ_U64(ringtrace_rb_page_count(rb), 64);
	CHECK(ringtrace_rb_mode(rb) == RINGTRACE_RB_DISCARD);
	uint64_t n = 0;
	const struct ringtrace_page_header *p;
	while ((p = ringtrace_rb_get_page(rb)) != NULL) {
		tu_check_page_header(p, 4096);
		struct ringtrace_page_cursor c;
		struct ringtrace_event ev;
		ringtrace_page_cursor_init(&c, p);
		while ((rc = ringtrace_page_next(&c, &ev)) == 1) {
			tu_check_event_in_page(p, &ev);
			const struct payload *pl = (const struct payload *)ev.data;
			CHECKF(ev.len == sizeof(*pl) && pl->src == SRC_PARENT && intact(pl) &&
				       pl->seq == n,
			       "attached reader: event %" PRIu64
			       " wrong (len %u src 0x%x seq %" PRIu64 ")",
			       n, ev.len, pl->src, pl->seq);
			uint64_t ns = ringtrace_rb_ticks_to_ns(rb, ev.ts);
			CHECKF(ns + 50000000ull >= t_start_ns && ns <= tu_mono_ns() + 50000000ull,
			       "attached reader: ts %" PRIu64 " -> %" PRIu64
			       " ns, outside the test's run time",
			       ev.ts, ns);
			n++;
		}
		CHECKF(rc == 0, "page_next: %d", rc);
		ringtrace_rb_put_page(rb, p);
	}
	struct ringtrace_rb_stats st = tu_stats(rb);
	CHECK_EQ_U64(st.read, n);
	CHECK_EQ_U64(st.entries, 0);
	ringtrace_rb_destroy(rb);
	CHECK(write(pipe_w, &n, sizeof(n)) == (ssize_t)sizeof(n));
}

static void part_read(enum attach_how how)
{
	static const char *names[] = {"inherited fd", "/proc/<ppid>/fd/<n>", "shm name"};
	char name[64] = "";
	struct ringtrace_rb_config cfg;
	tu_config(&cfg, 4096, 64, RINGTRACE_RB_DISCARD);
	if (how == BY_NAME) {
		snprintf(name, sizeof(name), "/ringtrace-test-%d", (int)getpid());
		shm_unlink(name);
		cfg.shm_name = name;
	}
	ringtrace_rb *rb = tu_create(&cfg);
	write_n(rb, SRC_PARENT, 0, NREAD);
	ringtrace_rb_writer_release(rb);
	struct ringtrace_rb_stats st = tu_stats(rb);
	CHECK_EQ_U64(st.entries, NREAD);

	int pfd[2];
	CHECK(pipe(pfd) == 0);
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	CHECKF(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		close(pfd[0]);
		child_reader(how, ringtrace_rb_fd(rb), name, pfd[1]);
		_exit(0);
	}
	close(pfd[1]);
	uint64_t n = 0;
	ssize_t r;
	while ((r = read(pfd[0], &n, sizeof(n))) < 0 && errno == EINTR) {
	}
	close(pfd[0]);
	wait_child(pid, names[how]);
	CHECKF(r == (ssize_t)sizeof(n), "no count from the %s reader child", names[how]);
	CHECKF(n == NREAD, "%s reader child consumed %" PRIu64 " events, %u written", names[how], n,
	       NREAD);
	st = tu_stats(rb);
	CHECK_EQ_U64(st.read, NREAD);
	CHECK_EQ_U64(st.entries, 0);
	CHECK(ringtrace_rb_get_page(rb) == NULL);
	CHECK_EQ_U64(st.pages_free, ringtrace_rb_page_count(rb));
	/* The buffer still works in the creator after the reader left. */
	write_n(rb, SRC_PARENT, 0, 10);
	ringtrace_rb_writer_release(rb);
	const struct ringtrace_page_header *p = ringtrace_rb_get_page(rb);
	CHECK(p != NULL && p->events == 10);
	ringtrace_rb_put_page(rb, p);
	ringtrace_rb_destroy(rb);
	if (how == BY_NAME)
		shm_unlink(name);
	printf("  %s: another process attached and consumed all %u events\n", names[how], NREAD);
}

static void read_by_fd(void)
{
	part_read(BY_FD);
}

static void read_by_proc(void)
{
	part_read(BY_PROC);
}

static void read_by_name(void)
{
	part_read(BY_NAME);
}

/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
static const struct check_case cases[] = {
	CHECK_CASE(ring_fork_child_writes_its_own_stream_parent_pages_intact, part_write),
	CHECK_CASE(ring_fork_reader_attached_by_inherited_fd_consumes_pages, read_by_fd),
	CHECK_CASE(ring_fork_reader_attached_by_proc_fd_path_consumes_pages, read_by_proc),
	CHECK_CASE(ring_fork_reader_attached_by_shm_name_consumes_pages, read_by_name),
};
/* clang-format on */

int main(int argc, char **argv)
{
	t_start_ns = tu_mono_ns(); /* events of every case are written after this */
	return CHECK_MAIN(cases, argc, argv);
}
