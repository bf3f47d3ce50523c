/*
 * test_event_comm: the thread name (comm) in the page headers of events.
 *
 *  1. A thread named with pthread_setname_np() before its first event:
 *     the header of its pages carries that name (also a 15-character one).
 *  2. Renamed later: its writer keeps the name it read when it attached
 *     (writers make no system call), so the next pages still carry the old
 *     name, until a reader calls ringtrace_rb_refresh_comm(rb); pages begun
 *     after that carry the new name. Both for the main thread renaming
 *     itself and for a worker renamed by another thread.
 *  3. A thread that releases its writer reads its name again.
 * Each is a case; all three run the same sequence of renames and events
 * (comm_flow), each checking what it proves.
 */
#include <pthread.h>

#define RINGTRACE_CREATE_EVENTS
#include "events_comm.h"
#include "events_util.h"
#include "testutil.h"

static ringtrace_rb *rb;
static int stage;     /* main -> worker: go to this step */
static int done_step; /* worker -> main: finished this step */

static void wait_for(int *v, int want)
{
	while (__atomic_load_n(v, __ATOMIC_ACQUIRE) < want)
		tu_sleep_us(200);
}

static void *worker(void *arg)
{
	(void)arg;
	CHECK(pthread_setname_np(pthread_self(), "worker-A") == 0);
	for (uint32_t step = 1; step <= 3; step++) {
		wait_for(&stage, (int)step);
		trace_comm_step(1, step);
		__atomic_store_n(&done_step, (int)step, __ATOMIC_RELEASE);
	}
	return NULL; /* exit: its last page is published */
}

static const struct evu_event *find(const struct evu_list *l, uint32_t who, uint32_t step)
{
	for (size_t i = 0; i < l->n; i++) {
		const uint32_t *p = l->ev[i].data;
		if (l->ev[i].len == 8 && p[0] == who && p[1] == step)
			return &l->ev[i];
	}
	check_fail_(__FILE__, __LINE__, "find", "no event who=%u step=%u", who, step);
}

#define CHECK_COMM(ev, name) \
	CHECKF(strcmp((ev)->comm, name) == 0, "page comm \"%s\", expected \"%s\"", (ev)->comm, name)

/*
 * Main and a worker record steps 1-3, renamed between them, with a flush
 * between steps and refresh_comm before step 3; l gets the 6 events.
 */
static void comm_flow(struct evu_list *lp)
{
	__atomic_store_n(&stage, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&done_step, 0, __ATOMIC_RELEASE);
	rb = evu_buffer(4096, 64);
	CHECK(ringtrace_event_enable("comm_step") == 1);
	memset(lp, 0, sizeof(*lp));

	/* main: named before its first event */
	CHECK(pthread_setname_np(pthread_self(), "evcomm-main") == 0);
	trace_comm_step(0, 1);
	CHECK_OK(ringtrace_rb_flush(rb, 0)); /* publishes main's page; main keeps its writer */
	CHECK(pthread_setname_np(pthread_self(), "evcomm-main-2") == 0);
	trace_comm_step(0, 2); /* a new page, the name read at attach */
	CHECK_OK(ringtrace_rb_flush(rb, 0));

	pthread_t t;
	CHECK(pthread_create(&t, NULL, worker, NULL) == 0);
	__atomic_store_n(&stage, 1, __ATOMIC_RELEASE);
	wait_for(&done_step, 1);
	CHECK_OK(ringtrace_rb_flush(rb, 0));
	/* renamed by another thread: 15 characters, the most a name holds */
	CHECK(pthread_setname_np(t, "worker-B-15chrs") == 0);
	__atomic_store_n(&stage, 2, __ATOMIC_RELEASE);
	wait_for(&done_step, 2);
	CHECK_OK(ringtrace_rb_flush(rb, 0));

	int n = ringtrace_rb_refresh_comm(rb);
	CHECKF(n >= 2, "refresh_comm read %d names (main and worker are writing)", n);
	__atomic_store_n(&stage, 3, __ATOMIC_RELEASE);
	trace_comm_step(0, 3);
	CHECK(pthread_join(t, NULL) == 0);
	evu_collect(rb, lp);
	CHECK_EQ_U64(lp->n, 6);
}

static void comm_done(struct evu_list *lp)
{
	evu_list_free(lp);
	evu_buffer_done(rb);
}

/* 1. Named before its first event: its pages carry the name. */
static void test_named_first(void)
{
	struct evu_list l;
	comm_flow(&l);
	CHECK_COMM(find(&l, 0, 1), "evcomm-main");
	CHECK_COMM(find(&l, 1, 1), "worker-A");
	CHECK(find(&l, 1, 1)->tid != find(&l, 0, 1)->tid);
	comm_done(&l);
}

/* 2. Renamed later: pages keep the old name until refresh_comm. */
static void test_renamed(void)
{
	struct evu_list l;
	comm_flow(&l);
	CHECK_COMM(find(&l, 0, 2), "evcomm-main");
	CHECK_COMM(find(&l, 0, 3), "evcomm-main-2");
	CHECK_COMM(find(&l, 1, 2), "worker-A");
	CHECK_COMM(find(&l, 1, 3), "worker-B-15chrs");
	/* every step of a thread on its own page (a flush between them) */
	CHECK(find(&l, 1, 2)->page_seq > find(&l, 1, 1)->page_seq);
	CHECK(find(&l, 0, 3)->page_seq > find(&l, 0, 2)->page_seq);
	comm_done(&l);
}

/* 3. A thread that releases its writer reads its name again. */
static void test_released(void)
{
	struct evu_list l;
	comm_flow(&l);
	evu_list_free(&l);

	/* a thread that releases its writer reads its name again at its next event */
	CHECK(pthread_setname_np(pthread_self(), "evcomm-main-3") == 0);
	trace_comm_step(0, 4);
	evu_collect(rb, &l);
	CHECK_EQ_U64(l.n, 1);
	CHECK_COMM(&l.ev[0], "evcomm-main-3");
	comm_done(&l);
}

/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
static const struct check_case cases[] = {
	CHECK_CASE(event_comm_thread_named_before_first_event_names_its_pages, test_named_first),
	CHECK_CASE(event_comm_rename_shows_in_new_pages_only_after_refresh_comm, test_renamed),
	CHECK_CASE(event_comm_released_writer_reads_the_name_again, test_released),
};
/* clang-format on */

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
