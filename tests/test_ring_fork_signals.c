/*
 * Forked children that are signalled from the moment they exist, while a
 * thread of the parent writes and another flushes and consumes: every
 * event of every process (children, their signal handlers, the parent's
 * threads) read back intact and in order, and the accounting exact.
 *
 * What it guards: a child must have its own identity (ring/identity.c)
 * before any of its writers can claim a slot. A slot claimed with the
 * parent's cookie looks to the parent's flush like a thread of the parent
 * that is gone (tgkill fails): the flush takes the child's live slot and
 * page, and two writers share a page (torn pages, checked below). The
 * child's first event here is a signal handler's, as early as signals are
 * unblocked after the fork.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#define NCHILD CHECK_SCALE(300, 60)
#define CHILD_EV 300
#define SRC_T 1 /* parent writer thread */

#define NSRC (300 + 2)

struct shared {
	uint32_t ok[NSRC][2]; /* [src][0 main, 1 handler] */
	uint32_t fail[NSRC][2];
	uint32_t hseq[NSRC];
};
static struct shared *sh;
static ringtrace_rb *rb;
static volatile uint32_t my_src;
static atomic_int stop;

struct pl {
	uint32_t src, kind;
	uint64_t seq;
	uint64_t chk;
};

static int wr(uint32_t src, uint32_t kind, uint64_t seq)
{
	struct pl p = {src, kind, seq,
		       (seq * 0x9E3779B97F4A7C15ull) ^ src ^ ((uint64_t)kind << 40)};
	return ringtrace_rb_write(rb, 7, &p, sizeof(p));
}

static void handler(int sig)
{
	(void)sig;
	int e = errno;
	uint32_t s = my_src;
	uint32_t q = sh->hseq[s]++;
	if (wr(s, 1, q) == 0)
		sh->ok[s][1]++;
	else
		sh->fail[s][1]++;
	errno = e;
}

static void *writer(void *arg)
{
	(void)arg;
	uint64_t q = 0;
	while (!atomic_load(&stop)) {
		if (wr(SRC_T, 0, q++) == 0)
			sh->ok[SRC_T][0]++;
		else
			sh->fail[SRC_T][0]++;
	}
	return NULL;
}

static uint64_t read_n[NSRC][2];
static int64_t last[NSRC][2];

static void consume(const struct ringtrace_page_header *pg)
{
	tu_check_page_header(pg, ringtrace_rb_page_size(rb));
	struct ringtrace_page_cursor c;
	struct ringtrace_event ev;
	ringtrace_page_cursor_init(&c, pg);
	while (ringtrace_page_next(&c, &ev) == 1) {
		struct pl p;
		CHECK(ev.len == sizeof(p));
		memcpy(&p, ev.data, sizeof(p));
		CHECK(p.src < NSRC && p.kind < 2);
		CHECKF(p.chk ==
			       ((p.seq * 0x9E3779B97F4A7C15ull) ^ p.src ^ ((uint64_t)p.kind << 40)),
		       "chk src %u", p.src);
		CHECKF((int64_t)p.seq > last[p.src][p.kind],
		       "src %u kind %u seq %" PRIu64 " after %" PRId64, p.src, p.kind, p.seq,
		       last[p.src][p.kind]);
		last[p.src][p.kind] = (int64_t)p.seq;
		read_n[p.src][p.kind]++;
	}
}

static void *flusher(void *arg)
{
	(void)arg;
	for (;;) {
		int s = atomic_load(&stop);
		const struct ringtrace_page_header *pg;
		ringtrace_rb_flush(rb, 0);
		while ((pg = ringtrace_rb_get_page(rb))) {
			consume(pg);
			ringtrace_rb_put_page(rb, pg);
		}
		if (s)
			break;
		sched_yield();
	}
	return NULL;
}

static void case_fork_storm(void)
{
	memset(last, 0xff, sizeof(last));
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(sh != MAP_FAILED);
	struct ringtrace_rb_config cfg;
	tu_config(&cfg, 4096, 4096, RINGTRACE_RB_DISCARD);
	cfg.max_writers = 64;
	rb = tu_create(&cfg);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	CHECK(sigaction(SIGRTMIN, &sa, NULL) == 0);
	sigset_t rt;
	sigemptyset(&rt);
	sigaddset(&rt, SIGRTMIN);
	pthread_sigmask(SIG_BLOCK, &rt, NULL);
	pthread_t wt, ft;
	CHECK(pthread_create(&wt, NULL, writer, NULL) == 0);
	CHECK(pthread_create(&ft, NULL, flusher, NULL) == 0);
	pthread_sigmask(SIG_UNBLOCK, &rt, NULL);
	my_src = 0;
	for (uint32_t i = 0; i < NCHILD; i++) {
		/* the forking thread writes first (its own state must not leak into
		 * the child); the pool may be full (the flusher lags on a loaded
		 * machine): then the event is counted as failed, as the others */
		if (wr(0, 0, i) == 0)
			sh->ok[0][0]++;
		else
			sh->fail[0][0]++;
		uint32_t src = i + 2;
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			my_src = src;
			for (uint32_t k = 0; k < CHILD_EV; k++) {
				if (wr(src, 0, k) == 0)
					sh->ok[src][0]++;
				else
					sh->fail[src][0]++;
			}
			/* _exit: the parent's other threads were copied mid-way
			 * (a flush's buffer, say), which exit()'s leak check
			 * under AddressSanitizer would report as leaks */
			_exit(0);
		}
		for (int k = 0; k < 20; k++) {
			union sigval v = {0};
			sigqueue(pid, SIGRTMIN, v);
		}
		int st;
		CHECK(waitpid(pid, &st, 0) == pid);
		CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %u status %x", i, st);
	}
	atomic_store(&stop, 1);
	pthread_join(wt, NULL);
	ringtrace_rb_writer_release(rb);
	pthread_join(ft, NULL);
	ringtrace_rb_flush(rb, 0);
	const struct ringtrace_page_header *pg;
	while ((pg = ringtrace_rb_get_page(rb))) {
		consume(pg);
		ringtrace_rb_put_page(rb, pg);
	}
	uint64_t okt = 0, fl = 0, rd = 0, hs = 0;
	for (int s = 0; s < NSRC; s++)
		for (int k = 0; k < 2; k++) {
			CHECKF(read_n[s][k] == sh->ok[s][k],
			       "src %d kind %d: ok %u read %" PRIu64 " (fail %u)", s, k,
			       sh->ok[s][k], read_n[s][k], sh->fail[s][k]);
			okt += sh->ok[s][k];
			fl += sh->fail[s][k];
			rd += read_n[s][k];
			if (k == 1)
				hs += sh->ok[s][k];
		}
	struct ringtrace_rb_stats st = tu_stats(rb);
	check_print_stats("stats", &st);
	printf("ok %" PRIu64 " failed %" PRIu64 " read %" PRIu64 " handler-ok %" PRIu64 "\n", okt,
	       fl, rd, hs);
	CHECK_EQ_U64(st.hit + st.missed, okt + fl);
	CHECK_EQ_U64(st.read, rd);
	CHECK_STATS_BALANCED(&st);
}

/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
static const struct check_case cases[] = {
	CHECK_CASE(ring_fork_children_signalled_at_birth_keep_their_slots_while_the_parent_flushes, case_fork_storm),
};
/* clang-format on */

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
