/*
 * test_ring_untrusted: a pool is untrusted input (ring_internal.h,
 * "UNTRUSTED POOLS"; docs/format.md, "What a reader trusts"). Each case
 * damages a real pool the way a wild pointer or a hostile process could,
 * through the documented layout (pool_layout.h), and checks that the
 * library neither crashes nor spins: the damage is found, named (what and
 * where) by ringtrace_last_error() / ringtrace_rb_damaged(), the writers
 * of the creating process stop (their events refused and counted as
 * missed), readers go on with what still passes its checks, and a reader
 * whose pool is shrunk under it gets an error instead of SIGBUS.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "pool_layout.h"
#include "ringtrace/static/ring.h"
#include "testutil.h"

#define PS 4096u
#define NPAGES 64u
#define EV_LEN 56u /* 64 bytes an event with its header: 62 a page */

static ringtrace_rb *mk_pool(enum ringtrace_rb_mode mode)
{
	struct ringtrace_rb_config cfg;
	tu_config(&cfg, PS, NPAGES, mode);
	cfg.max_writers = 4;
	return tu_create(&cfg);
}

/* Write n events (payload: the event's number) from this thread. */
static void write_n(ringtrace_rb *rb, uint64_t from, uint64_t n)
{
	char buf[EV_LEN];
	memset(buf, 0, sizeof(buf));
	for (uint64_t i = from; i < from + n; i++) {
		memcpy(buf, &i, sizeof(i));
		CHECK_OK(ringtrace_rb_write(rb, 7, buf, sizeof(buf)));
	}
}

/* The pool of rb mapped again, as another process would. */
static char *map_of(ringtrace_rb *rb, size_t *size)
{
	char *b = pl_map(ringtrace_rb_fd(rb), size);
	CHECKF(b != NULL, "mapping the pool: %s", strerror(errno));
	return b;
}

static ringtrace_rb *attach(ringtrace_rb *rb)
{
	ringtrace_rb *r = NULL;
	CHECK_OK(ringtrace_rb_attach_fd(ringtrace_rb_fd(rb), &r));
	return r;
}

/* The damage must be reported, and its message contain every string given. */
#define EXPECT_DAMAGED(rb, ...)                                                                 \
	do {                                                                                    \
		int rc_ = ringtrace_rb_damaged(rb);                                             \
		const char *msg_ = ringtrace_last_error();                                      \
		CHECKF(rc_ == -RINGTRACE_ECORRUPT, "not reported damaged (%d): %s", rc_, msg_); \
		const char *want_[] = {__VA_ARGS__};                                            \
		for (size_t i_ = 0; i_ < sizeof(want_) / sizeof(want_[0]); i_++)                \
			CHECKF(strstr(msg_, want_[i_]) != NULL,                                 \
			       "the damage \"%s\" does not say \"%s\"", msg_, want_[i_]);       \
	} while (0)

/* ---- stderr of the creating process ---------------------------------------- */

static int saved_err = -1;
static char err_path[64];

static void capture_stderr(void)
{
	fflush(stderr);
	snprintf(err_path, sizeof(err_path), "/tmp/rt-untrusted-err-%d", (int)getpid());
	int fd = open(err_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	saved_err = dup(2);
	CHECK(dup2(fd, 2) == 2);
	close(fd);
}

/* Restore stderr; the captured text (static buffer). */
static const char *captured_stderr(void)
{
	static char text[4096];
	fflush(stderr);
	CHECK(dup2(saved_err, 2) == 2);
	close(saved_err);
	int fd = open(err_path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	ssize_t n = read(fd, text, sizeof(text) - 1);
	close(fd);
	unlink(err_path);
	text[n > 0 ? n : 0] = 0;
	fputs(text, stderr); /* (shown in the test's log as well) */
	return text;
}

static unsigned count_of(const char *text, const char *what)
{
	unsigned n = 0;
	for (const char *p = text; (p = strstr(p, what)) != NULL; p++)
		n++;
	return n;
}

/* ---- attach: the geometry, checked once ------------------------------------- */

struct bad_field {
	uint64_t off;
	int wide; /* 8 bytes */
	uint64_t value;
	const char *names; /* what the message must say */
};

/* Attach must refuse the pool with its field named; the pool is restored. */
static void expect_refused(ringtrace_rb *rb, char *b, const struct bad_field *f)
{
	uint64_t old = f->wide ? pl_u64(b, f->off) : pl_u32(b, f->off);
	if (f->wide)
		pl_set_u64(b, f->off, f->value);
	else
		pl_set_u32(b, f->off, (uint32_t)f->value);
	ringtrace_rb *r = (ringtrace_rb *)(uintptr_t)0x1;
	int rc = ringtrace_rb_attach_fd(ringtrace_rb_fd(rb), &r);
	const char *msg = ringtrace_last_error();
	CHECKF(rc == -RINGTRACE_ECORRUPT && r == NULL,
	       "offset %" PRIu64 " = %" PRIu64 ": attach returned %d (%s)", f->off, f->value, rc,
	       msg);
	CHECKF(strstr(msg, f->names) != NULL,
	       "offset %" PRIu64 " = %" PRIu64 ": \"%s\" does not name \"%s\"", f->off, f->value,
	       msg, f->names);
	printf("  refused: %s\n", msg);
	if (f->wide)
		pl_set_u64(b, f->off, old);
	else
		pl_set_u32(b, f->off, (uint32_t)old);
}

/*
 * Offsets whose sums wrap past 2^64 used to pass the region checks (the
 * handle then pointed far outside the mapping); every field is checked on
 * its own, and named.
 */
static void test_attach_geometry(void)
{
	ringtrace_rb *rb = mk_pool(RINGTRACE_RB_DISCARD);
	size_t size;
	char *b = map_of(rb, &size);
	uint64_t pages_len = (uint64_t)NPAGES * PS;
	const struct bad_field bad[] = {
		/* off_pages + npages * page_size wraps to 0 */
		{PL_OFF_PAGES, 1, 0 - pages_len, "off_pages"},
		/* off_slots + max_writers * 128 wraps */
		{PL_OFF_SLOTS, 1, 0 - 64ull, "off_slots"},
		{PL_OFF_QCELLS, 1, 0 - 4096ull, "off_qcells"},
		{PL_OFF_FREE_NEXT, 1, 0 - 64ull, "off_free_next"},
		{PL_OFF_GEN, 1, 0 - 128ull, "off_gen"},
		/* a region inside the control block */
		{PL_OFF_SLOTS, 1, 64, "off_slots"},
		/* a power of two, but far more cells than the pool holds */
		{PL_QCAP, 0, 1ull << 31, "qcap"},
		{PL_QCAP, 0, 96, "qcap"},
		{PL_NPAGES, 0, 0xFFFFFFFFull, "npages"},
		{PL_NPAGES, 0, NPAGES + 1, "off_pages"},
		{PL_MAX_WRITERS, 0, 0, "max_writers"},
		{PL_MAX_WRITERS, 0, 1u << 20, "max_writers"},
		{PL_PAGE_SIZE, 0, 4097, "page_size"},
		{PL_MODE, 0, 7, "mode"},
		{PL_FLUSH_MS, 0, 0, "flush interval"},
		{PL_TOTAL_SIZE, 1, 1ull << 62, "total_size"},
		{PL_CLOCK_IS_TSC, 0, 2, "clock kind"},
		{PL_CLOCK_FREQ, 1, 0, "clock frequency"},
		{PL_VERSION, 0, 99, "version"},
		{PL_MAGIC, 1, 0x1234, "magic"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_refused(rb, b, &bad[i]);
	/* Restored: it attaches. */
	ringtrace_rb *r = attach(rb);
	ringtrace_rb_destroy(r);
	munmap(b, size);
	ringtrace_rb_destroy(rb);
}

/* ---- the FIFO -------------------------------------------------------------- */

/* A pool with `pages` published pages (events 0 .. pages * 62 - 1). */
static ringtrace_rb *pool_with_pages(unsigned pages, enum ringtrace_rb_mode mode)
{
	ringtrace_rb *rb = mk_pool(mode);
	write_n(rb, 0, (uint64_t)pages * 62);
	ringtrace_rb_writer_release(rb);
	struct ringtrace_rb_stats st = tu_stats(rb);
	CHECK_EQ_U64(st.pages_published, pages);
	return rb;
}

/* Read a page wholly: every event decodes; returns the event count. */
static unsigned drain_page(const struct ringtrace_page_header *p)
{
	tu_check_page_header(p, PS);
	struct ringtrace_page_cursor c;
	struct ringtrace_event ev;
	unsigned n = 0;
	ringtrace_page_cursor_init(&c, p);
	while (ringtrace_page_next(&c, &ev) == 1)
		n++;
	return n;
}

/*
 * A cell at the read position naming a page past the pool: an attached
 * reader gets no page out of bounds (it used to get a pointer past the
 * mapping); the damage names the cell and the index; the reader goes on
 * with the next cell, which is intact.
 */
static void test_cell_index_reader(void)
{
	ringtrace_rb *rb = pool_with_pages(3, RINGTRACE_RB_DISCARD);
	size_t size;
	char *b = map_of(rb, &size);
	uint64_t deq = pl_u64(b, PL_DEQ_POS);
	pl_set_u32(b, pl_cell(b, deq) + 8, NPAGES + 7);
	ringtrace_rb *r = attach(rb);
	const struct ringtrace_page_header *p = ringtrace_rb_get_page(r);
	CHECKF(p == NULL, "a page was handed out for index %u", NPAGES + 7);
	EXPECT_DAMAGED(r, "FIFO cell 0 (position 0)", "page index 71 >= 64 pages");
	/* the next two cells are intact: read, as private copies */
	unsigned events = 0;
	for (int k = 0; k < 2; k++) {
		p = ringtrace_rb_get_page(r);
		CHECKF(p != NULL, "page %d after the damaged cell not read: %s", k,
		       ringtrace_last_error());
		CHECK((const char *)p < b || (const char *)p >= b + size);
		events += drain_page(p);
		ringtrace_rb_put_page(r, p);
	}
	CHECK_EQ_U64(events, 2 * 62);
	ringtrace_rb_destroy(r);
	munmap(b, size);
	ringtrace_rb_destroy(rb);
}

/*
 * The same found by the creating process's own reader: it says so once on
 * stderr, and its writers stop: their events are refused
 * (-RINGTRACE_ECORRUPT) and counted as missed, so that hit + missed is
 * still what was offered.
 */
static void test_cell_index_creator(void)
{
	ringtrace_rb *rb = pool_with_pages(2, RINGTRACE_RB_DISCARD);
	size_t size;
	char *b = map_of(rb, &size);
	write_n(rb, 1000, 10); /* this thread has a slot and a page again */
	struct ringtrace_rb_stats before = tu_stats(rb);
	pl_set_u32(b, pl_cell(b, pl_u64(b, PL_DEQ_POS)) + 8, 0xFFFFFFF0u);
	capture_stderr();
	const struct ringtrace_page_header *p = ringtrace_rb_get_page(rb);
	CHECK(p == NULL);
	char buf[EV_LEN] = {0};
	int refused = 0;
	for (int i = 0; i < 100; i++)
		refused += ringtrace_rb_write(rb, 7, buf, sizeof(buf)) == -RINGTRACE_ECORRUPT;
	p = ringtrace_rb_get_page(rb); /* (found again: said once) */
	const char *err = captured_stderr();
	CHECK_EQ_U64(refused, 100);
	CHECKF(strstr(err, "damaged (FIFO cell 0 (position 0): page index 4294967280 >= 64 "
			   "pages); tracing to it stopped"),
	       "stderr: %s", err);
	CHECK_EQ_U64(count_of(err, "damaged"), 1);
	EXPECT_DAMAGED(rb, "page index 4294967280");
	/* the intact page after the damaged cell is still read */
	CHECKF(p != NULL, "the intact page was not read: %s", ringtrace_last_error());
	CHECK_EQ_U64(drain_page(p), 62);
	ringtrace_rb_put_page(rb, p);
	struct ringtrace_rb_stats st;
	CHECK(ringtrace_rb_get_stats(rb, &st) == -RINGTRACE_ECORRUPT);
	CHECK_EQ_U64(st.damaged, 1);
	CHECK_EQ_U64(st.hit, before.hit);
	CHECK_EQ_U64(st.missed, before.missed + 100);
	munmap(b, size);
	ringtrace_rb_destroy(rb);
}

/*
 * A cell whose sequence runs ahead of the read position (as if another
 * reader had taken it) while the position stays: the pop used to re-read
 * the position forever.
 */
static void test_seq_ahead_reader(void)
{
	ringtrace_rb *rb = pool_with_pages(2, RINGTRACE_RB_DISCARD);
	size_t size;
	char *b = map_of(rb, &size);
	uint64_t deq = pl_u64(b, PL_DEQ_POS);
	pl_set_u64(b, pl_cell(b, deq), deq + 1 + 50);
	ringtrace_rb *r = attach(rb);
	CHECK(ringtrace_rb_get_page(r) == NULL);
	EXPECT_DAMAGED(r, "FIFO cell 0: sequence 51 runs ahead of the read position 0");
	CHECK(ringtrace_rb_get_page(r) == NULL); /* bounded again */
	ringtrace_rb_destroy(r);
	munmap(b, size);
	ringtrace_rb_destroy(rb);
}

/*
 * A cell at the write position whose sequence runs ahead: a writer
 * publishing its page used to spin there forever, at 100% CPU, inside the
 * traced program. Now its event is refused and the writers stop.
 */
static void test_seq_ahead_writer(void)
{
	ringtrace_rb *rb = mk_pool(RINGTRACE_RB_DISCARD);
	size_t size;
	char *b = map_of(rb, &size);
	uint64_t enq = pl_u64(b, PL_ENQ_POS);
	pl_set_u64(b, pl_cell(b, enq), enq + 9);
	capture_stderr();
	char buf[EV_LEN] = {0};
	int first = -1;
	for (int i = 0; i < 3 * 62; i++)
		if (ringtrace_rb_write(rb, 7, buf, sizeof(buf)) == -RINGTRACE_ECORRUPT && first < 0)
			first = i;
	const char *err = captured_stderr();
	CHECKF(first == 62, "first refused event %d, expected the page switch at 62", first);
	CHECKF(strstr(err, "FIFO cell 0: sequence 9 runs ahead of the write position 0"),
	       "stderr: %s", err);
	EXPECT_DAMAGED(rb, "runs ahead of the write position");
	struct ringtrace_rb_stats st;
	CHECK(ringtrace_rb_get_stats(rb, &st) == -RINGTRACE_ECORRUPT);
	CHECK_EQ_U64(st.hit, 62);
	CHECK_EQ_U64(st.hit + st.missed, 3 * 62);
	munmap(b, size);
	ringtrace_rb_destroy(rb);
}

/* A sequence more than a lap behind the read position cannot happen. */
static void test_seq_lap_behind(void)
{
	ringtrace_rb *rb = pool_with_pages(1, RINGTRACE_RB_DISCARD);
	size_t size;
	char *b = map_of(rb, &size);
	uint32_t qcap = pl_u32(b, PL_QCAP);
	pl_set_u64(b, pl_cell(b, 0), 0 - 3ull * qcap);
	ringtrace_rb *r = attach(rb);
	CHECK(ringtrace_rb_get_page(r) == NULL);
	EXPECT_DAMAGED(r, "FIFO cell 0", "more than a lap behind the read position 0");
	ringtrace_rb_destroy(r);
	munmap(b, size);
	ringtrace_rb_destroy(rb);
}

/*
 * The count of published pages is the FIFO's write position less the
 * empty cells, both words of the pool. Empty cells written above the
 * position (by a hostile process) give 0, not a count wrapped to 2^64;
 * the stats are otherwise unaffected, and the true words give the true
 * count back.
 */
static void test_published_count(void)
{
	ringtrace_rb *rb = pool_with_pages(3, RINGTRACE_RB_DISCARD);
	size_t size;
	char *b = map_of(rb, &size);
	CHECK_EQ_U64(pl_u64(b, PL_CELLS_EMPTY), 0);
	uint64_t enq = pl_u64(b, PL_ENQ_POS);
	CHECK_EQ_U64(enq, 3);
	pl_set_u64(b, PL_CELLS_EMPTY, enq + 5);
	struct ringtrace_rb_stats st = tu_stats(rb);
	CHECK_EQ_U64(st.pages_published, 0);
	CHECK_EQ_U64(st.hit, 3 * 62);
	pl_set_u64(b, PL_CELLS_EMPTY, 1);
	CHECK_EQ_U64(tu_stats(rb).pages_published, 2);
	pl_set_u64(b, PL_CELLS_EMPTY, 0);
	CHECK_EQ_U64(tu_stats(rb).pages_published, 3);
	munmap(b, size);
	ringtrace_rb_destroy(rb);
}

/* ---- the free list and the slots -------------------------------------------- */

/*
 * A free-list head naming a page past the pool: a writer used to take it
 * and write a page header there (out of bounds). Its event is refused.
 */
static void test_free_head(void)
{
	ringtrace_rb *rb = mk_pool(RINGTRACE_RB_DISCARD);
	size_t size;
	char *b = map_of(rb, &size);
	pl_set_u64(b, PL_FREE_HEAD, (5ull << 32) | (NPAGES + 100));
	capture_stderr();
	char buf[EV_LEN] = {0};
	int rc = ringtrace_rb_write(rb, 7, buf, sizeof(buf));
	const char *err = captured_stderr();
	CHECKF(rc == -RINGTRACE_ECORRUPT, "write returned %d", rc);
	CHECKF(strstr(err, "free list head at offset 128: page index 163 >= 64 pages"), "%s", err);
	EXPECT_DAMAGED(rb, "free list head");
	munmap(b, size);
	ringtrace_rb_destroy(rb);
}

/* A free-list link naming a page past the pool. */
static void test_free_link(void)
{
	ringtrace_rb *rb = mk_pool(RINGTRACE_RB_DISCARD);
	size_t size;
	char *b = map_of(rb, &size);
	pl_set_u32(b, pl_u64(b, PL_OFF_FREE_NEXT) + 0, NPAGES + 50);
	capture_stderr();
	char buf[EV_LEN] = {0};
	int rc = ringtrace_rb_write(rb, 7, buf, sizeof(buf));
	captured_stderr();
	CHECKF(rc == -RINGTRACE_ECORRUPT, "write returned %d", rc);
	EXPECT_DAMAGED(rb, "free list link of page 0: page index 113 >= 64 pages");
	munmap(b, size);
	ringtrace_rb_destroy(rb);
}

/* The slot of this thread (state active, our tid). */
static uint32_t my_slot(const char *b)
{
	uint32_t nw = pl_u32(b, PL_MAX_WRITERS);
	for (uint32_t i = 0; i < nw; i++) {
		uint64_t s = pl_slot(b, i);
		if ((pl_u32(b, s + PL_SLOT_STATE) & 3) == 1 &&
		    pl_u32(b, s + PL_SLOT_TID) == tu_gettid())
			return i;
	}
	CHECKF(0, "no active slot of this thread");
	return 0;
}

/*
 * A dead writer's slot reclaimed while the FIFO's next cell stays busy
 * (here its sequence a lap behind, as a popper descheduled in its window
 * would leave it): no cell for the dead writer's page, which goes back to
 * the free list with its events counted as overrun, so that written =
 * read + overrun still holds, and nothing is reported as damage.
 */
static void test_reclaim_cell_busy(void)
{
	ringtrace_rb *rb = mk_pool(RINGTRACE_RB_DISCARD);
	size_t size;
	char *b = map_of(rb, &size);
	fflush(stdout);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		char buf[EV_LEN] = {0};
		for (int i = 0; i < 10; i++)
			if (ringtrace_rb_write(rb, 7, buf, sizeof(buf)) != 0)
				_exit(3);
		_exit(0); /* (no exit handlers: the writer is not retired) */
	}
	int ws;
	CHECK(waitpid(pid, &ws, 0) == pid && WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
	struct ringtrace_rb_stats st = tu_stats(rb);
	CHECK_EQ_U64(st.writers_active, 1);
	CHECK_EQ_U64(st.hit, 10);
	uint64_t enq = pl_u64(b, PL_ENQ_POS), qcap = pl_u32(b, PL_QCAP);
	pl_set_u64(b, pl_cell(b, enq), enq - qcap);
	int fr = ringtrace_rb_flush(rb, 0);
	CHECKF(fr == 0, "flush = %d: no page could be published", fr);
	CHECK(!ringtrace_rb_damaged(rb));
	st = tu_stats(rb);
	CHECK_EQ_U64(st.writers_active, 0);
	CHECK_EQ_U64(st.hit, 10);
	CHECK_EQ_U64(st.overrun, 10);
	CHECK_EQ_U64(st.entries, 0);
	CHECK_EQ_U64(st.pages_free, NPAGES);
	CHECK_EQ_U64(pl_u64(b, PL_ENQ_POS), enq);
	munmap(b, size);
	ringtrace_rb_destroy(rb);
}

/*
 * A slot whose current page is past the pool: a flush (of a reader in
 * another process, here) reports it, and takes nothing from it.
 */
static void test_slot_page(void)
{
	ringtrace_rb *rb = mk_pool(RINGTRACE_RB_DISCARD);
	size_t size;
	char *b = map_of(rb, &size);
	write_n(rb, 0, 10);
	uint32_t slot = my_slot(b);
	pl_set_u32(b, pl_slot(b, slot) + PL_SLOT_CUR_PAGE, NPAGES + 3);
	ringtrace_rb *r = attach(rb);
	CHECK(ringtrace_rb_flush(r, 0) <= 0);
	char want[96];
	snprintf(want, sizeof(want), "writer slot %u: current page 67 >= 64 pages", slot);
	EXPECT_DAMAGED(r, want);
	ringtrace_rb_destroy(r);
	munmap(b, size);
	ringtrace_rb_destroy(rb);
}

/* ---- writers that never leave their event ------------------------------------ */

#define STUCK 32

static ringtrace_rb *stuck_rb;
static volatile int stuck_go, hogs_stop;

static void *stuck_writer(void *arg)
{
	(void)arg;
	char buf[EV_LEN] = {0};
	CHECK_OK(ringtrace_rb_write(stuck_rb, 7, buf, sizeof(buf)));
	__atomic_add_fetch(&stuck_go, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&stuck_go, __ATOMIC_SEQ_CST) > 0)
		tu_sleep_us(1000);
	return NULL;
}

static void *hog(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&hogs_stop, __ATOMIC_RELAXED))
		sched_yield();
	return NULL;
}

/*
 * Writers whose slots say they are inside an event forever (nest raised,
 * as by a scribble or a writer stuck in a signal handler), while other
 * threads keep the CPUs busy: each flush used to wait 2000 rounds, 1900
 * of them sched_yield(), for every such slot (found by fuzz_pool: seconds
 * a flush, a test far past its time limit); the whole flush now waits a
 * bounded time, and takes no page from them.
 */
static void test_flush_stuck_writers(void)
{
	struct ringtrace_rb_config cfg;
	tu_config(&cfg, PS, NPAGES, RINGTRACE_RB_DISCARD);
	cfg.max_writers = STUCK;
	stuck_rb = tu_create(&cfg);
	pthread_t w[STUCK], h[2];
	for (int i = 0; i < STUCK; i++)
		CHECK(pthread_create(&w[i], NULL, stuck_writer, NULL) == 0);
	while (__atomic_load_n(&stuck_go, __ATOMIC_SEQ_CST) < STUCK)
		tu_sleep_us(1000);
	size_t size;
	char *b = map_of(stuck_rb, &size);
	for (uint32_t i = 0; i < STUCK; i++)
		pl_set_u32(b, pl_slot(b, i) + PL_SLOT_NEST, 1);
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&h[i], NULL, hog, NULL) == 0);
	for (int k = 0; k < 50; k++)
		CHECK_EQ_U64(ringtrace_rb_flush(stuck_rb, 0), 0);
	__atomic_store_n(&hogs_stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++)
		pthread_join(h[i], NULL);
	for (uint32_t i = 0; i < STUCK; i++)
		pl_set_u32(b, pl_slot(b, i) + PL_SLOT_NEST, 0);
	/* out of their event: the next flush takes their pages */
	CHECK_EQ_U64(ringtrace_rb_flush(stuck_rb, 0), STUCK);
	__atomic_store_n(&stuck_go, 0, __ATOMIC_SEQ_CST);
	for (int i = 0; i < STUCK; i++)
		pthread_join(w[i], NULL);
	CHECK_EQ_U64(tu_stats(stuck_rb).pages_published, STUCK);
	munmap(b, size);
	ringtrace_rb_destroy(stuck_rb);
}

/* ---- the control block after attach ------------------------------------------ */

static ringtrace_rb *thread_rb;
static int thread_rc[2];

static void *new_writer(void *arg)
{
	(void)arg;
	char buf[EV_LEN] = {0};
	thread_rc[0] = ringtrace_rb_write(thread_rb, 7, buf, sizeof(buf));
	return NULL;
}

/*
 * The geometry is the handle's own: a control block whose max_writers,
 * qcap and npages are scribbled over is not read again (a new thread's
 * first event used to divide by max_writers = 0), and the change is found
 * and named as damage.
 */
static void test_control_changed(void)
{
	ringtrace_rb *rb = mk_pool(RINGTRACE_RB_DISCARD);
	size_t size;
	char *b = map_of(rb, &size);
	pl_set_u32(b, PL_MAX_WRITERS, 0);
	pl_set_u32(b, PL_QCAP, pl_u32(b, PL_QCAP) << 8);
	pl_set_u32(b, PL_NPAGES, 1u << 30);
	thread_rb = rb;
	pthread_t t;
	CHECK(pthread_create(&t, NULL, new_writer, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECKF(thread_rc[0] == 0, "a new thread's event: %d", thread_rc[0]);
	CHECK_EQ_U64(ringtrace_rb_page_count(rb), NPAGES);
	capture_stderr();
	struct ringtrace_rb_stats st;
	int rc = ringtrace_rb_get_stats(rb, &st);
	const char *err = captured_stderr();
	CHECKF(rc == -RINGTRACE_ECORRUPT, "stats: %d", rc);
	CHECK_EQ_U64(st.hit, 1);
	CHECKF(strstr(err, "control block: npages at offset 16 is 1073741824, was 64"), "%s", err);
	EXPECT_DAMAGED(rb, "npages at offset 16");
	char buf[EV_LEN] = {0};
	CHECK(ringtrace_rb_write(rb, 7, buf, sizeof(buf)) == -RINGTRACE_ECORRUPT);
	munmap(b, size);
	ringtrace_rb_destroy(rb);
}

/* ---- pages ---------------------------------------------------------------- */

/*
 * A published page whose header was scribbled over is skipped and counted,
 * and the next one is read: the damage of one page is not the pool's.
 */
static void test_page_header(void)
{
	ringtrace_rb *rb = pool_with_pages(2, RINGTRACE_RB_DISCARD);
	size_t size;
	char *b = map_of(rb, &size);
	uint32_t first = pl_u32(b, pl_cell(b, pl_u64(b, PL_DEQ_POS)) + 8);
	memset(b + pl_page(b, first), 0x5A, 48); /* magic, sizes, timestamps */
	ringtrace_rb *r = attach(rb);
	const struct ringtrace_page_header *p = ringtrace_rb_get_page(r);
	CHECKF(p != NULL, "the intact page was not read: %s", ringtrace_last_error());
	CHECK_EQ_U64(drain_page(p), 62);
	CHECK_EQ_U64(p->events_before, 62); /* the second page */
	ringtrace_rb_put_page(r, p);
	CHECK(ringtrace_rb_get_page(r) == NULL);
	struct ringtrace_rb_stats st = tu_stats(r);
	CHECK_EQ_U64(st.pages_skipped, 1);
	CHECK_EQ_U64(st.damaged, 0);
	ringtrace_rb_destroy(r);
	munmap(b, size);
	ringtrace_rb_destroy(rb);
}

/* A pointer that is no page of the pool is not given back to it. */
static void test_put_foreign(void)
{
	ringtrace_rb *rb = pool_with_pages(1, RINGTRACE_RB_DISCARD);
	struct ringtrace_rb_stats st0 = tu_stats(rb);
	static uint64_t not_a_page[PS / 8];
	ringtrace_rb_put_page(rb, (const struct ringtrace_page_header *)(void *)not_a_page);
	CHECK(strstr(ringtrace_last_error(), "no page of this buffer") != NULL);
	const struct ringtrace_page_header *p = ringtrace_rb_get_page(rb);
	CHECK(p != NULL);
	ringtrace_rb_put_page(
		rb, (const struct ringtrace_page_header *)(const void *)((const char *)p + 8));
	CHECK(strstr(ringtrace_last_error(), "no page of this buffer") != NULL);
	ringtrace_rb_put_page(rb, p);
	struct ringtrace_rb_stats st = tu_stats(rb);
	CHECK_EQ_U64(st.pages_free, st0.pages_free + 1);
	ringtrace_rb *r = attach(rb);
	ringtrace_rb_put_page(r, (const struct ringtrace_page_header *)(void *)not_a_page);
	CHECK(strstr(ringtrace_last_error(), "no page this reader took") != NULL);
	CHECK_EQ_U64(tu_stats(r).pages_free, st.pages_free);
	ringtrace_rb_destroy(r);
	ringtrace_rb_destroy(rb);
}

/* ---- an object shrunk under a reader: no SIGBUS ----------------------------- */

/*
 * Every read interface of an attached reader, after the object was
 * truncated under it (here by this process, through the fd): errors
 * naming it, no SIGBUS; the handle stays usable for destroy.
 */
static void test_shrunk(void)
{
	ringtrace_rb *rb = pool_with_pages(2, RINGTRACE_RB_DISCARD);
	ringtrace_rb *r = attach(rb);
	const struct ringtrace_page_header *held = ringtrace_rb_get_page(r);
	CHECK(held != NULL);
	CHECK(ftruncate(ringtrace_rb_fd(rb), 2048) == 0);
	struct ringtrace_rb_stats st;
	CHECK(ringtrace_rb_get_stats(r, &st) == -RINGTRACE_ECORRUPT);
	EXPECT_DAMAGED(r, "shrank under the reader (2048 bytes now", "SIGBUS");
	CHECK(ringtrace_rb_get_page(r) == NULL);
	CHECK(ringtrace_rb_flush(r, 0) < 0);
	CHECK(ringtrace_rb_refresh_comm(r) < 0);
	ringtrace_snapshot *snap = NULL;
	CHECK(ringtrace_rb_snapshot(r, &snap) == -RINGTRACE_ECORRUPT && snap == NULL);
	uint32_t idx[NPAGES];
	CHECK_EQ_U64(ringtrace_rb_orphan_pages(r, idx, NPAGES), 0);
	CHECK(ringtrace_rb_page_at(r, 3) == NULL);
	struct ringtrace_rb_writer_stats ws[4];
	CHECK(ringtrace_rb_get_writer_stats(r, ws, 4) == -RINGTRACE_ECORRUPT);
	/* the copy it held is the reader's own: still whole */
	CHECK_EQ_U64(drain_page(held), 62);
	ringtrace_rb_put_page(r, held);
	ringtrace_rb *r2 = (ringtrace_rb *)(uintptr_t)0x1;
	CHECK(ringtrace_rb_attach_fd(ringtrace_rb_fd(rb), &r2) == -RINGTRACE_ECORRUPT && !r2);
	ringtrace_rb_destroy(r);
	ringtrace_rb_destroy(rb); /* (its writer released: nothing touches the pool) */
}

/* ---- the SIGBUS handler passes on what is not a pool's -------------------- */

static void user_bus(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	(void)si;
	(void)ctx;
	_exit(42);
}

/* In a child: touch a truncated mapping that is no pool. */
static void fault_elsewhere(int with_handler)
{
	if (with_handler) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = user_bus;
		sa.sa_flags = SA_SIGINFO;
		sigaction(SIGBUS, &sa, NULL);
	}
	ringtrace_rb *rb = pool_with_pages(1, RINGTRACE_RB_DISCARD);
	ringtrace_rb *r = attach(rb); /* installs the guard's handler */
	CHECK(tu_stats(r).pages_published == 1);
	int fd = memfd_create("other", MFD_CLOEXEC);
	CHECK(fd >= 0 && ftruncate(fd, 8192) == 0);
	volatile char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(m != MAP_FAILED);
	CHECK(ftruncate(fd, 0) == 0);
	m[4096] = 1; /* SIGBUS, outside any pool */
	printf("survived a fault outside any pool\n");
	fflush(stdout);
	_exit(0);
}

static int child_status(int with_handler)
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		fault_elsewhere(with_handler);
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	return status;
}

/*
 * A fault outside every attached pool reaches the program's own SIGBUS
 * handler, or, with none, ends the program as it would have.
 */
static void test_sigbus_chain(void)
{
	int st = child_status(1);
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 42,
	       "the program's handler did not run (status 0x%x)", st);
	st = child_status(0);
	/* (a sanitizer's own handler may end it instead of the default action) */
	CHECKF(!(WIFEXITED(st) && WEXITSTATUS(st) == 0),
	       "a fault outside the pools was swallowed (status 0x%x)", st);
	if (WIFSIGNALED(st))
		printf("  default action: killed by signal %d\n", WTERMSIG(st));
}

/* ---- another process tampers with the pool while a reader runs ------------ */

/*
 * The reader: attach, then drain (every event decoded), stats, writer
 * stats, snapshots and flushes in a loop, until the damage is reported
 * (any: a control block zeroed by the truncation is as good a finding as
 * a page that vanished), and, for a shrunk object, until it has gone on
 * for 100 rounds after the last truncation (the reads beyond the end
 * fault: each must be caught), or 20 s pass. Exits 0 if it saw the
 * damage, 3 if not; any crash (SIGBUS) is the test's failure.
 */
static void reader_loop(int fd, int ready_w, int shrink)
{
	ringtrace_rb *r = NULL;
	if (ringtrace_rb_attach_fd(fd, &r) < 0)
		_exit(4);
	char c = 1;
	if (write(ready_w, &c, 1) != 1)
		_exit(5);
	uint64_t end = tu_mono_ns() + 20000000000ull, rounds = 0, events = 0, after = 0;
	while (tu_mono_ns() < end) {
		rounds++;
		const struct ringtrace_page_header *p;
		while ((p = ringtrace_rb_get_page(r)) != NULL) {
			struct ringtrace_page_cursor cur;
			struct ringtrace_event ev;
			ringtrace_page_cursor_init(&cur, p);
			while (ringtrace_page_next(&cur, &ev) == 1)
				events++;
			ringtrace_rb_put_page(r, p);
		}
		struct ringtrace_rb_stats st;
		ringtrace_rb_get_stats(r, &st);
		struct ringtrace_rb_writer_stats ws[8];
		ringtrace_rb_get_writer_stats(r, ws, 8);
		ringtrace_snapshot *s = NULL;
		if (ringtrace_rb_snapshot(r, &s) == 0) {
			struct ringtrace_event ev;
			while (ringtrace_snapshot_next(s, &ev) == 1)
				events++;
			ringtrace_snapshot_free(s);
		}
		ringtrace_rb_flush(r, 0);
		uint32_t idx[NPAGES];
		uint32_t n = ringtrace_rb_orphan_pages(r, idx, NPAGES);
		for (uint32_t i = 0; i < n && i < NPAGES; i++)
			ringtrace_rb_page_at(r, idx[i]);
		if (ringtrace_rb_damaged(r) == 0)
			continue;
		struct stat fs;
		if (shrink && (fstat(fd, &fs) != 0 || fs.st_size > 100 || ++after < 100))
			continue;
		printf("  reader: %s (after %" PRIu64 " rounds, %" PRIu64 " events)\n",
		       ringtrace_last_error(), rounds, events);
		fflush(stdout);
		ringtrace_rb_destroy(r);
		_exit(0);
	}
	printf("  reader: saw no damage to the end (last error: %s)\n", ringtrace_last_error());
	fflush(stdout);
	_exit(3);
}

/*
 * The pool's creator writes, a reader in another process loops over the
 * pool, and a third process (the tamperer, with the pool mapped) changes
 * geometry fields (`geometry`) or shrinks the object under the reader. The
 * reader must report the damage and exit, not crash or hang.
 */
static void tamper_case(int shrink)
{
	ringtrace_rb *rb = pool_with_pages(8, RINGTRACE_RB_DISCARD);
	int fd = ringtrace_rb_fd(rb);
	int ready[2];
	CHECK(pipe(ready) == 0);
	fflush(stdout);
	fflush(stderr);
	pid_t reader = fork();
	CHECK(reader >= 0);
	if (reader == 0) {
		close(ready[0]);
		reader_loop(fd, ready[1], shrink);
	}
	close(ready[1]);
	char c;
	CHECK(read(ready[0], &c, 1) == 1);
	close(ready[0]);
	/* the creator writes while the reader drains, then stops writing */
	write_n(rb, 1000000, 5 * 62);
	ringtrace_rb_writer_release(rb);
	pid_t tamperer = fork();
	CHECK(tamperer >= 0);
	if (tamperer == 0) {
		size_t size;
		char *b = pl_map(fd, &size);
		if (!b)
			_exit(2);
		tu_sleep_us(50000);
		if (shrink) {
			/* in steps, down to less than the control block */
			for (off_t sz = (off_t)size - PS; sz > 0; sz -= (off_t)(size / 4))
				if (ftruncate(fd, sz) != 0 || (tu_sleep_us(20000), 0))
					_exit(2);
			if (ftruncate(fd, 100) != 0)
				_exit(2);
		} else {
			uint32_t qcap = pl_u32(b, PL_QCAP);
			for (int i = 0; i < 200; i++) {
				pl_set_u32(b, PL_QCAP, qcap << (1 + i % 8));
				pl_set_u32(b, PL_NPAGES, 0xFFFFFFFFu - (uint32_t)i);
				pl_set_u32(b, PL_MAX_WRITERS, (uint32_t)i);
				pl_set_u64(b, PL_OFF_PAGES, 0 - (uint64_t)NPAGES * PS);
				tu_sleep_us(1000);
			}
		}
		_exit(0);
	}
	int st;
	CHECK(waitpid(tamperer, &st, 0) == tamperer);
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "tamperer status 0x%x", st);
	CHECK(waitpid(reader, &st, 0) == reader);
	CHECKF(!WIFSIGNALED(st), "the reader was killed by signal %d (%s)", WTERMSIG(st),
	       strsignal(WTERMSIG(st)));
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the reader exited %d", WEXITSTATUS(st));
	ringtrace_rb_destroy(rb); /* (its writer released before the tampering) */
}

static void test_tamper_geometry(void)
{
	tamper_case(0);
}

static void test_tamper_shrink(void)
{
	tamper_case(1);
}

/*
 * The page switch's warm-up guesses the next page to recycle from the
 * FIFO cell after the one just popped (writer.c, rt_warm_note): a page
 * index there is the pool's, untrusted. One just past the pool (its
 * header would be the first byte after the mapping) is seen at a switch
 * and dropped: no warm-up line outside the pool, nothing reported damaged
 * (the guess is never used as a page), the writer goes on; put back
 * before the cell is popped for real, the pool stays sound.
 */
static void test_warm_guess(void)
{
	const uint32_t ps = 16384, np = 16, rec = EV_LEN + 8;
	struct ringtrace_rb_config cfg;
	tu_config(&cfg, ps, np, RINGTRACE_RB_OVERWRITE);
	ringtrace_rb *rb = tu_create(&cfg);
	size_t size;
	char *b = map_of(rb, &size);
	const struct ringtrace_rb_head_ *hd = (const struct ringtrace_rb_head_ *)(const void *)rb;
	const struct ringtrace_wtls_ *t = &ringtrace_wtls_[hd->idx];
	const char *lo = hd->base, *hi = hd->pages + (size_t)np * ps;
	uint64_t n = 0;
	/* until the writer recycles published pages */
	while (tu_stats(rb).pages_published < 2 * np)
		write_n(rb, n++, 1);
	uint64_t cell = pl_cell(b, pl_u64(b, PL_DEQ_POS) + 1) + 8;
	uint32_t honest = pl_u32(b, cell);
	pl_set_u32(b, cell, np + 1);
	const char *page = t->page;
	while (t->page == page) /* up to the switch that pops the cell before */
		write_n(rb, n++, 1);
	for (int k = 0; k < RINGTRACE_WARM_LINES_; k++) {
		const char *l = (const char *)t->slot + t->warm_off[k];
		CHECKF(l >= lo && l < hi, "warm-up line %d at %td, outside the pool [0, %td)", k,
		       l - lo, hi - lo);
	}
	CHECK_EQ_U64(ringtrace_rb_damaged(rb), 0);
	pl_set_u32(b, cell, honest);
	uint64_t more = 3 * (ps / rec);
	write_n(rb, n, more);
	n += more;
	CHECK_EQ_U64(ringtrace_rb_damaged(rb), 0);
	struct ringtrace_rb_stats st = tu_stats(rb);
	CHECK_EQ_U64(st.hit, n);
	CHECK_EQ_U64(st.missed, 0);
	munmap(b, size);
	ringtrace_rb_destroy(rb);
}

/* clang-format off */
static const struct check_case cases[] = {
	CHECK_CASE(ring_untrusted_attach_bad_geometry_refused_naming_each_field, test_attach_geometry),
	CHECK_CASE(ring_untrusted_fifo_cell_page_index_out_of_range_named_reader_goes_on, test_cell_index_reader),
	CHECK_CASE(ring_untrusted_fifo_cell_page_index_out_of_range_stops_the_creators_writers_once, test_cell_index_creator),
	CHECK_CASE(ring_untrusted_fifo_sequence_ahead_of_read_position_bounded_and_named, test_seq_ahead_reader),
	CHECK_CASE(ring_untrusted_fifo_sequence_ahead_of_write_position_refused_not_spinning, test_seq_ahead_writer),
	CHECK_CASE(ring_untrusted_fifo_sequence_a_lap_behind_named, test_seq_lap_behind),
	CHECK_CASE(ring_untrusted_warm_up_guess_of_next_page_out_of_range_dropped_not_used, test_warm_guess),
	CHECK_CASE(ring_untrusted_empty_cells_above_write_position_count_zero_published, test_published_count),
	CHECK_CASE(ring_untrusted_free_list_head_out_of_range_refuses_the_event, test_free_head),
	CHECK_CASE(ring_untrusted_free_list_link_out_of_range_refuses_the_event, test_free_link),
	CHECK_CASE(ring_untrusted_slot_current_page_out_of_range_named_by_flush, test_slot_page),
	CHECK_CASE(ring_untrusted_reclaim_with_fifo_cell_busy_counts_dead_page_overrun, test_reclaim_cell_busy),
	CHECK_CASE(ring_untrusted_flush_waits_bounded_for_writers_stuck_in_an_event, test_flush_stuck_writers),
	CHECK_CASE(ring_untrusted_control_block_geometry_not_reread_and_change_named, test_control_changed),
	CHECK_CASE(ring_untrusted_page_with_damaged_header_skipped_and_counted, test_page_header),
	CHECK_CASE(ring_untrusted_put_page_of_a_foreign_pointer_ignored, test_put_foreign),
	CHECK_CASE(ring_untrusted_pool_shrunk_under_reader_gives_errors_not_sigbus, test_shrunk),
	CHECK_CASE(ring_untrusted_sigbus_outside_pools_reaches_the_programs_handler, test_sigbus_chain),
	CHECK_CASE(ring_untrusted_reader_survives_geometry_changed_by_another_process, test_tamper_geometry),
	CHECK_CASE(ring_untrusted_reader_survives_pool_shrunk_by_another_process, test_tamper_shrink),
};
/* clang-format on */

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
