/*
 * Flush: making the committed events of writers' partly filled pages
 * readable, without stopping the writers ("FLUSH" in ring_internal.h
 * explains the handshake), and reclaiming the slots of owners that are
 * gone ("OWNERS THAT ARE GONE"). Runs in readers and recorders, in the
 * traced process or another one: it touches writers only through the
 * shared pool.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ring/page_api.h"
#include "ring/ring_internal.h"

/*
 * Fill in the fields of a page that are final once it is published, from
 * its committed content (a page taken from a writer by a flush; a
 * snapshot's copy of a writer's page).
 */
void rt_page_finalize(struct ringtrace_page_header *h, uint32_t commit, uint32_t flags)
{
	struct ringtrace_page_cursor c;
	struct ringtrace_event ev;
	uint32_t n = 0;
	uint64_t last = h->timestamp_begin;
	h->content_size = (uint64_t)commit * 8;
	ringtrace_page_cursor_init(&c, h);
	c.end = commit;
	while (rt_page_next(&c, &ev) == 1) {
		n++;
		last = ev.ts;
	}
	h->events = n;
	h->timestamp_end = last;
	h->flags |= flags;
}

uint32_t ringtrace_page_finalize_orphan(struct ringtrace_page_header *h, size_t page_size)
{
	/* A header the writer began (rt_writer_new_page: no events, content
	 * end at the header) and nobody finalized, with events committed. */
	if (!h || h->magic != RINGTRACE_PAGE_MAGIC || h->packet_size != (uint64_t)page_size * 8 ||
	    h->events != 0 || h->content_size != (uint64_t)RINGTRACE_PAGE_HEADER_SIZE * 8 ||
	    h->commit <= RINGTRACE_PAGE_HEADER_SIZE || h->commit > page_size)
		return 0;
	rt_page_finalize(h, h->commit, RINGTRACE_PAGE_F_FLUSHED);
	return h->events;
}

/*
 * Publish a page taken from a writer at FIFO position pos (claimed), or
 * free it if it holds no event. The commit offset comes from shared
 * memory: it is clamped, and the decoder checks every event under it.
 */
/* A page's commit offset as the pool says, bounded by the page. */
static uint32_t rt_page_commit(const struct ringtrace_rb *rb, const struct ringtrace_page_header *h)
{
	uint32_t commit = RT_LOAD_ACQ(&h->commit);
	return commit > rb->h.page_size ? rb->h.page_size : commit;
}

static int rt_flush_page(struct ringtrace_rb *rb, uint32_t p, uint64_t pos, uint32_t flags)
{
	struct ringtrace_page_header *h = rt_page(rb, p);
	uint32_t commit = rt_page_commit(rb, h);
	if (commit <= RINGTRACE_PAGE_HEADER_SIZE) {
		rt_fifo_fill(rb, pos, RT_NO_PAGE);
		__atomic_fetch_add(&rb->shm->cells_empty, 1, __ATOMIC_RELEASE);
		int r = rt_free_push(rb, p, 0);
		return r < 0 ? r : 0;
	}
	rt_page_finalize(h, commit, flags);
	rt_fifo_fill(rb, pos, p);
	__atomic_fetch_add(&rb->shm->pages_flushed, 1, __ATOMIC_RELAXED);
	return 1;
}

/*
 * A dead writer's page that no FIFO cell could be claimed for (one stayed
 * busy): back to the free list, its committed events counted as overrun,
 * in the retired totals (the slot is being folded into them), so that
 * written = read + overrun still holds.
 */
static int rt_drop_dead_page(struct ringtrace_rb *rb, uint32_t p)
{
	struct ringtrace_page_header *h = rt_page(rb, p);
	uint32_t commit = rt_page_commit(rb, h);
	if (commit > RINGTRACE_PAGE_HEADER_SIZE) {
		rt_page_finalize(h, commit, RINGTRACE_PAGE_F_LAST);
		__atomic_fetch_add(&rb->shm->retired_overrun, (uint64_t)h->events,
				   __ATOMIC_RELAXED);
	}
	int r = rt_free_push(rb, p, 0);
	return r < 0 ? r : 0;
}

/*
 * A slot's current page as read from the pool: its index, RT_NO_PAGE, or
 * damage (an index past the pool).
 */
static int rt_slot_page(struct ringtrace_rb *rb, uint32_t slot, uint32_t p)
{
	if (p == RT_NO_PAGE || p < rb->g.npages)
		return 0;
	return rt_pool_damaged(rb, 0, "writer slot %u: current page %u >= %u pages", slot, p,
			       rb->g.npages);
}

/*
 * 1 if the owner of a slot, as read from it, no longer exists: a thread of
 * this process that ended without retiring its writer (it attached after
 * its last round of thread-key destructors, from a signal handler or from
 * another key's destructor): tgkill 0; or another process that crashed or
 * _exited: kill 0, judged only in our own pid namespace (elsewhere its
 * numbers mean other processes), and never when the namespace is unknown.
 * A number reused by a new process or thread keeps the slot longer, never
 * takes it from a live owner; an owner we may not signal (EPERM) counts as
 * alive. (The numbers come from the pool: signal 0 sends nothing, so a
 * wrong one only misjudges that slot. Pids that are no process, 0 and
 * numbers that would be negative as a pid_t, name process groups or
 * everyone to kill(): judged alive without asking.)
 */
/*
 * 1 if thread tid of process pid (of our pid namespace) is dead: gone
 * from /proc/PID/task, or dead and not yet reaped (a zombie: a crashed
 * program whose parent has not waited for it). Per thread: a process
 * whose main thread called pthread_exit shows as a zombie while its other
 * threads still run and write.
 */
static int rt_task_dead(uint32_t pid, uint32_t tid)
{
	char path[64], buf[512];
	/*
	 * Gone since the caller's kill(pid, 0) found it (a zombie its parent
	 * reaped meanwhile): dead. No /proc, or not ours to read: it cannot
	 * be told, so not dead.
	 */
	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT && kill((pid_t)pid, 0) < 0 && errno == ESRCH;
	snprintf(path, sizeof(path), "%u/stat", tid);
	int fd = openat(dfd, path, O_RDONLY | O_CLOEXEC);
	int e = errno;
	close(dfd);
	if (fd < 0)
		return e == ENOENT;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* "tid (comm) S ...": the state follows the last ')' (comm may hold one) */
	const char *rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
}

static int rt_owner_gone(uint64_t cookie, uint64_t pidns, uint32_t pid, uint32_t tid)
{
	const struct rt_identity *me = rt_identity();
	if (cookie == RT_LOAD(&me->cookie))
		return tid != 0 && tid <= INT32_MAX &&
		       syscall(SYS_tgkill, (pid_t)RT_LOAD(&me->pid), (pid_t)tid, 0) < 0 &&
		       errno == ESRCH;
	if (pidns == 0 || pidns != RT_LOAD(&me->pidns))
		return 0;
	if (pid == 0 || pid > INT32_MAX)
		return 0;
	if (pid == RT_LOAD(&me->pid))
		return 1; /* another process had our pid: it is gone */
	if (kill((pid_t)pid, 0) < 0)
		return errno == ESRCH;
	/* There, but its writing thread may be dead (the process a zombie, or
	 * only that thread gone), which writes no more. */
	return rt_task_dead(pid, tid != 0 && tid <= INT32_MAX ? tid : pid);
}

/*
 * A slot whose owner is gone (rt_owner_gone, judged from the state word w
 * and the fields read after it): publish its committed events and free the
 * slot. An event it was in the middle of is not committed and is not
 * published.
 */
static int rt_reclaim_dead(struct ringtrace_rb *rb, uint32_t i, uint32_t w)
{
	struct rt_slot *s = &rb->slots[i];
	/*
	 * Take the slot away from other flushers, and only if it is still the
	 * owner that was judged: a slot that changed hands since has another
	 * stamp (see RT_SLOT_NEXT).
	 */
	uint32_t wr = RT_SLOT_NEXT(w, RT_SLOT_RECLAIMING);
	if (!__atomic_compare_exchange_n(&s->h.state, &w, wr, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED))
		return 0;
	int n = 0;
	uint32_t p = RT_LOAD_ACQ(&s->h.cur_page);
	int err = rt_slot_page(rb, i, p);
	/*
	 * The page is ours only if it was not taken by a flush that asked the
	 * writer for it before the writer died (TAKEN), and if such a flush,
	 * now in its second loop, does not take it first: win it the way it
	 * does (it then leaves a tombstone). (Bounded: a flush changes the
	 * word once per request.)
	 */
	uint32_t st = RT_LOAD_ACQ(&s->h.steal);
	uint32_t tries = 0;
	while (st != RT_STEAL_TAKEN &&
	       !__atomic_compare_exchange_n(&s->h.steal, &st, RT_STEAL_TAKEN, 0, __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE))
		if (++tries >= RT_CAS_MAX)
			return rt_pool_damaged(rb, 0,
					       "writer slot %u: its steal word changed %u times "
					       "during one reclaim",
					       i, RT_CAS_MAX);
	if (err == 0 && p != RT_NO_PAGE && st != RT_STEAL_TAKEN) {
		uint64_t pos;
		int r = rt_fifo_claim(rb, &pos, 0);
		if (r > 0)
			n = rt_flush_page(rb, p, pos, RINGTRACE_PAGE_F_LAST);
		else if (r == 0)
			n = rt_drop_dead_page(rb, p);
		else
			n = r;
		if (n < 0)
			return n;
	}
	rt_tail_note(rb, s);
	rt_slot_fold(rb->shm, s);
	RT_STORE(&s->h.cur_page, RT_NO_PAGE);
	/* (release: a flush that reads them reads cur_page as left above) */
	RT_STORE_REL(&s->h.steal, RT_STEAL_NONE);
	RT_STORE_REL(&s->h.nest, 0);
	RT_STORE_REL(&s->h.state, RT_SLOT_NEXT(wr, RT_SLOT_FREE));
	return n > 0 ? 1 : 0;
}

/* How long one flush waits, in all, for asked writers to leave their event. */
#define RT_FLUSH_WAIT_NS 2000000ull

struct rt_flush_pass {
	uint32_t min_age_ms;
	uint32_t *asked; /* slots asked for their page: at most max_writers */
	uint32_t nflushed;
};

/*
 * The flush's first round, over every writer slot: publish the page of a
 * writer that is gone (rt_reclaim_dead), and ask each other writer whose
 * page holds events and was begun min_age_ms or more ago for that page
 * (its steal word set to `ask`, taking over a request still pending from
 * another flush). The slots asked go to a->asked; their count, or an
 * error.
 */
static int rt_flush_ask(struct ringtrace_rb *rb, struct rt_flush_pass *a, uint64_t now,
			uint32_t ask)
{
	uint64_t age = (uint64_t)a->min_age_ms * (rb->clock.freq / 1000);
	uint32_t nasked = 0;
	for (uint32_t i = 0; i < rb->g.max_writers; i++) {
		struct rt_slot *s = &rb->slots[i];
		uint32_t w = RT_LOAD_ACQ(&s->h.state);
		if (RT_SLOT_STATE(w) != RT_SLOT_ACTIVE)
			continue;
		/* (the owner fields of w, unless the slot changes hands meanwhile:
		 * then the reclaim's exchange from w fails, see RT_SLOT_NEXT) */
		if (rt_owner_gone(RT_LOAD(&s->owner_cookie), RT_LOAD(&s->pidns), RT_LOAD(&s->pid),
				  RT_LOAD(&s->tid))) {
			int r = rt_reclaim_dead(rb, i, w);
			if (r < 0)
				return r;
			a->nflushed += (uint32_t)r;
			continue;
		}
		uint32_t st = RT_LOAD_ACQ(&s->h.steal);
		uint32_t p = RT_LOAD_ACQ(&s->h.cur_page);
		if (rt_slot_page(rb, i, p) < 0 || st == RT_STEAL_TAKEN || p == RT_NO_PAGE)
			continue;
		if (RT_LOAD_ACQ(&rt_page(rb, p)->commit) <= RINGTRACE_PAGE_HEADER_SIZE)
			continue;
		uint64_t pts = RT_LOAD(&s->page_ts);
		if (now > pts && now - pts < age)
			continue;
		if (!__atomic_compare_exchange_n(&s->h.steal, &st, ask, 0, __ATOMIC_SEQ_CST,
						 __ATOMIC_RELAXED))
			continue;
		a->asked[nasked++] = i;
	}
	return (int)nasked;
}

/*
 * Wait until slot s's writer is out of its event (nest 0), spinning a
 * little, then yielding, until the deadline: 1 if it is out.
 */
static int rt_flush_wait_out(const struct rt_slot *s, uint64_t deadline)
{
	uint32_t spins = 0;
	while (RT_LOAD_ACQ(&s->h.nest) != 0 && spins < 2000) {
		if (++spins <= 100) {
			ringtrace_cpu_relax_();
			continue;
		}
		if (rt_mono_ns() > deadline)
			break;
		sched_yield();
	}
	return RT_LOAD_ACQ(&s->h.nest) == 0;
}

/*
 * Take and publish the page of slot i, whose writer was asked (`ask`) and
 * is out of its event: 0 (taken, or left to the writer, which answered
 * or moved on), or an error.
 */
static int rt_flush_take(struct ringtrace_rb *rb, struct rt_flush_pass *a, uint32_t i, uint32_t ask)
{
	struct rt_slot *s = &rb->slots[i];
	uint32_t p = RT_LOAD_ACQ(&s->h.cur_page);
	uint32_t st = ask;
	if (rt_slot_page(rb, i, p) < 0 || p == RT_NO_PAGE) {
		__atomic_compare_exchange_n(&s->h.steal, &st, RT_STEAL_NONE, 0, __ATOMIC_ACQ_REL,
					    __ATOMIC_RELAXED);
		return 0;
	}
	/*
	 * Claim the FIFO position before taking the page: once the writer
	 * sees TAKEN it may publish its next page, which must come after
	 * this one.
	 */
	uint64_t pos;
	int r = rt_fifo_claim(rb, &pos, 0);
	if (r <= 0)
		return r;
	/*
	 * Only while our request is there: not if the writer answered it
	 * (and may have a new page since, or have left the slot to
	 * another thread), a reclaim took the page, or another flush
	 * took the request over.
	 */
	if (!__atomic_compare_exchange_n(&s->h.steal, &st, RT_STEAL_TAKEN, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		rt_fifo_fill(rb, pos, RT_NO_PAGE);
		__atomic_fetch_add(&rb->shm->cells_empty, 1, __ATOMIC_RELEASE);
		return 0;
	}
	/* A snapshot must not read this page as the writer's any more. */
	uint32_t exp = p;
	__atomic_compare_exchange_n(&s->h.cur_page, &exp, RT_NO_PAGE, 0, __ATOMIC_RELEASE,
				    __ATOMIC_RELAXED);
	if ((r = rt_flush_page(rb, p, pos, RINGTRACE_PAGE_F_FLUSHED)) < 0)
		return r;
	a->nflushed += (uint32_t)r;
	return 0;
}

static int rt_flush_pass(struct ringtrace_rb *rb, void *arg)
{
	struct rt_flush_pass *a = arg;
	struct rt_shm *shm = rb->shm;
	/* (a changed control block is damage; the flush goes on: every index
	 * is checked against the handle's own geometry) */
	rt_check_control(rb);
	uint64_t now = rt_ticks(rb->h.is_tsc);
	uint32_t ask = RT_STEAL_ASKED_BY(__atomic_add_fetch(&shm->flush_seq, 1, __ATOMIC_RELAXED));
	RT_STORE(&shm->last_flush_ticks, now);
	int nasked = rt_flush_ask(rb, a, now, ask);
	/* Without membarrier the writers answer at their next event. (The
	 * pages of writers that were gone are published already.) */
	if (nasked <= 0 || rb->mb_cmd == 0 || rt_membarrier(rb->mb_cmd) != 0)
		return nasked < 0 ? nasked : 0;
	/*
	 * A private barrier orders only this process's threads: the writers of
	 * another process sharing the pool (a forked child) answer at their
	 * next event instead.
	 */
	int own_only = rb->mb_cmd == MEMBARRIER_CMD_PRIVATE_EXPEDITED;
	uint64_t cookie = own_only ? RT_LOAD(&rt_identity()->cookie) : 0;
	/*
	 * A writer is inside one event for far less than a microsecond, unless
	 * it was preempted there; then it publishes at its next event. So the
	 * waits for writers to leave their event are bounded in time, for the
	 * whole flush: RT_FLUSH_WAIT_NS, whatever the slots' nest words say (a
	 * slot whose nest stays raised, by a writer stuck in a signal handler
	 * or by whoever wrote the pool, costs this once per flush, not a
	 * bounded wait of its own for each such slot, which on a busy machine
	 * adds up to seconds).
	 */
	uint64_t deadline = rt_mono_ns() + RT_FLUSH_WAIT_NS;
	for (int k = 0; k < nasked; k++) {
		uint32_t i = a->asked[k];
		const struct rt_slot *s = &rb->slots[i];
		if (own_only && RT_LOAD(&s->owner_cookie) != cookie)
			continue;
		if (!rt_flush_wait_out(s, deadline))
			continue; /* busy in a write: it will publish at its next event */
		int r = rt_flush_take(rb, a, i, ask);
		if (r < 0)
			return r;
	}
	return 0;
}

int ringtrace_rb_flush(ringtrace_rb *rb, uint32_t min_age_ms)
{
	/* (on the stack for the usual number of writers: the flush at a
	 * session's stop must not fail for want of memory, or the writers'
	 * last events would be left out of the trace) */
	uint32_t on_stack[1024];
	struct rt_flush_pass a = {min_age_ms, on_stack, 0};
	if (rb->g.max_writers > sizeof(on_stack) / sizeof(on_stack[0]) &&
	    !(a.asked = malloc(sizeof(uint32_t) * rb->g.max_writers)))
		return rt_error(RINGTRACE_ENOMEM, "flush: out of memory");
	int err = rt_guard_run(rb, rt_flush_pass, &a);
	if (a.asked != on_stack)
		free(a.asked);
	if (err < 0 && a.nflushed == 0)
		return err;
	return (int)a.nflushed;
}

struct rt_live_pass {
	uint32_t n, pid, tid;
};

static int rt_live_pass(struct ringtrace_rb *rb, void *arg)
{
	struct rt_live_pass *a = arg;
	for (uint32_t i = 0; i < rb->g.max_writers; i++) {
		const struct rt_slot *s = &rb->slots[i];
		/* (a CLAIMING slot holds no page yet: nothing a flush would take) */
		if (RT_SLOT_STATE(RT_LOAD_ACQ(&s->h.state)) != RT_SLOT_ACTIVE)
			continue;
		uint32_t pid = RT_LOAD(&s->pid), tid = RT_LOAD(&s->tid);
		if (rt_owner_gone(RT_LOAD(&s->owner_cookie), RT_LOAD(&s->pidns), pid, tid))
			continue;
		if (a->n++ == 0) {
			a->pid = pid;
			a->tid = tid;
		}
	}
	return 0;
}

/*
 * The writers a flush would leave to their owner: the same judgement as
 * the reclaim's (rt_owner_gone), so that `ringtrace recover` refuses a
 * pool whose program still writes (its flush would take a live thread's
 * page). One pass over the slots, bounded by the handle's geometry.
 */
int ringtrace_rb_live_writers(ringtrace_rb *rb, uint32_t *pid, uint32_t *tid)
{
	struct rt_live_pass a = {0, 0, 0};
	int err = rt_guard_run(rb, rt_live_pass, &a);
	if (err < 0)
		return err;
	if (pid)
		*pid = a.pid;
	if (tid)
		*tid = a.tid;
	return (int)a.n;
}
