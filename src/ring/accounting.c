/*
 * Accounting: every event offered to a buffer is counted exactly once
 * (see "ACCOUNTING" in ring_internal.h): hit and missed by the writer,
 * overrun and read by the thread that recycles or consumes a page (tagged
 * with the stream, so a reused slot is never credited with its
 * predecessor's losses; a writer's own recycled pages in its untagged
 * overrun_own), retired totals for writers that left.
 */
#include <string.h>

#include "ring/ring_internal.h"

/*
 * Add n to a tagged per-slot counter, or to `retired` if the stream is
 * gone. The slot number comes from a page header (shared memory): one
 * that names no slot goes to `retired` too. Bounded: a counter that keeps
 * changing under the compare-and-swap (RT_CAS_MAX times) is damage.
 */
static void rt_slot_add(struct ringtrace_rb *rb, uint32_t slot, uint64_t stream, int which,
			uint64_t n, int writer)
{
	struct rt_shm *shm = rb->shm;
	uint64_t *retired = which ? &shm->retired_read : &shm->retired_overrun;
	if (n == 0)
		return;
	if (slot >= rb->g.max_writers) {
		__atomic_fetch_add(retired, n, __ATOMIC_RELAXED);
		return;
	}
	struct rt_slot *s = &rb->slots[slot];
	uint64_t *ctr = which ? &s->read : &s->overrun;
	uint64_t tag = RT_TAG(stream);
	uint64_t v = RT_LOAD(ctr);
	for (uint32_t tries = 0; tries < RT_CAS_MAX; tries++) {
		if ((v & ~RT_COUNT_MASK) != tag) {
			__atomic_fetch_add(retired, n, __ATOMIC_RELAXED);
			return;
		}
		if (__atomic_compare_exchange_n(ctr, &v, v + n, 1, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			return;
	}
	rt_pool_damaged(rb, writer,
			"writer slot %u: its %s counter changed %u times during one add", slot,
			which ? "read" : "overrun", RT_CAS_MAX);
}

void rt_account_read(struct ringtrace_rb *rb, const struct ringtrace_page_header *h)
{
	rt_slot_add(rb, h->writer, h->stream_instance_id, 1, h->events, 0);
}

void rt_account_overrun_of(struct ringtrace_rb *rb, uint32_t slot, uint64_t stream, uint64_t n)
{
	rt_slot_add(rb, slot, stream, 0, n, 1);
}

/*
 * Move a slot's counters into the buffer's retired totals (its writer is
 * leaving: retire, or reclaim of an owner that is gone). Exchanges: a
 * process killed in between must not have a later reclaim fold the same
 * counts again.
 */
void rt_slot_fold(struct rt_shm *shm, struct rt_slot *s)
{
	__atomic_fetch_add(&shm->retired_hit, __atomic_exchange_n(&s->h.hit, 0, __ATOMIC_RELAXED),
			   __ATOMIC_RELAXED);
	__atomic_fetch_add(&shm->retired_missed,
			   __atomic_exchange_n(&s->missed, 0, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
	RT_STORE(&s->missed_reported, 0);
	uint64_t ov = __atomic_exchange_n(&s->overrun, 0, __ATOMIC_ACQ_REL);
	uint64_t rd = __atomic_exchange_n(&s->read, 0, __ATOMIC_ACQ_REL);
	uint64_t own = __atomic_exchange_n(&s->overrun_own, 0, __ATOMIC_ACQ_REL);
	__atomic_fetch_add(&shm->retired_overrun, (ov & RT_COUNT_MASK) + own, __ATOMIC_RELAXED);
	__atomic_fetch_add(&shm->retired_read, rd & RT_COUNT_MASK, __ATOMIC_RELAXED);
}

/*
 * A retiring writer's drops that no page of its stream reports (it had no
 * page when it dropped them, the pool being full, or dropped them during
 * its last page): its final `missed` is kept for the stream's `dropped`
 * line in the metadata, since the slot's counters are folded into the
 * retired totals next and the stream's part of them would be lost. The
 * page published at retire reports what was dropped before it began, and
 * nothing after, so the comparison is with missed_reported.
 */
void rt_tail_note(struct ringtrace_rb *rb, struct rt_slot *s)
{
	/* (an attached reader's reclaim: the reader took the drops from the
	 * pool before, ringtrace_rb_stream_drops) */
	if (!rb->owner)
		return;
	uint64_t missed = RT_LOAD(&s->missed), stream = RT_LOAD(&s->stream);
	if (missed <= RT_LOAD(&s->missed_reported) || stream == 0)
		return;
	uint32_t i = __atomic_fetch_add(&rb->ntails, 1, __ATOMIC_RELAXED);
	if (!rb->tails || i >= RT_TAILS_MAX) {
		__atomic_fetch_add(&rb->tails_lost, 1, __ATOMIC_RELAXED);
		return;
	}
	RT_STORE(&rb->tails[i].missed, missed);
	RT_STORE(&rb->tails[i].tid, RT_LOAD(&s->tid));
	RT_STORE_REL(&rb->tails[i].stream, stream);
}

/* ---- queries ---------------------------------------------------------------- */

/*
 * Stats are read from counters anyone can write: whatever they hold, the
 * reading is bounded (one pass over max_writers slots of the handle's
 * geometry). On a damaged buffer the stats are still filled as far as the
 * counters say, with the events this process's writers refused since
 * counted as missed, and the call returns -RINGTRACE_ECORRUPT.
 */
static int rt_stats_pass(struct ringtrace_rb *rb, void *arg)
{
	struct ringtrace_rb_stats *st = arg;
	const struct rt_shm *shm = rb->shm;
	for (uint32_t i = 0; i < rb->g.max_writers; i++) {
		const struct rt_slot *s = &rb->slots[i];
		if (RT_SLOT_STATE(RT_LOAD_ACQ(&s->h.state)) != RT_SLOT_ACTIVE)
			continue;
		st->writers_active++;
		st->hit += RT_LOAD(&s->h.hit);
		st->missed += RT_LOAD(&s->missed);
		st->overrun += (RT_LOAD(&s->overrun) & RT_COUNT_MASK) + RT_LOAD(&s->overrun_own);
		st->read += RT_LOAD(&s->read) & RT_COUNT_MASK;
	}
	st->hit += RT_LOAD(&shm->retired_hit);
	st->missed += RT_LOAD(&shm->retired_missed) + RT_LOAD(&shm->missed_noslot);
	st->overrun += RT_LOAD(&shm->retired_overrun);
	st->read += RT_LOAD(&shm->retired_read);
	/*
	 * Every claimed position but the empty ones holds a published page (or
	 * was claimed by a process that died before filling it). cells_empty
	 * first, with acquire: each empty cell it counts was claimed before
	 * (its add is a release after the claim), so the enq_pos read next is
	 * no smaller; reading them the other way, a flush's empty cell counted
	 * in between could make the difference negative. A hostile pool's
	 * words still can: 0 then, as entries below.
	 */
	uint64_t empty = RT_LOAD_ACQ(&shm->cells_empty), claimed = RT_LOAD(&shm->enq_pos);
	st->pages_published = claimed > empty ? claimed - empty : 0;
	st->pages_flushed = RT_LOAD(&shm->pages_flushed);
	st->pages_free = RT_LOAD(&shm->free_count);
	return rt_check_control(rb);
}

int ringtrace_rb_get_stats(const ringtrace_rb *rb, struct ringtrace_rb_stats *st)
{
	if (!rb || !st)
		return rt_error(RINGTRACE_EINVAL, "stats: NULL argument");
	memset(st, 0, sizeof(*st));
	int err = rt_guard_run(rb, rt_stats_pass, st);
	st->missed += RT_LOAD(&rb->refused);
	st->pages_skipped = RT_LOAD(&rb->pages_skipped);
	uint64_t gone = st->read + st->overrun;
	st->entries = st->hit > gone ? st->hit - gone : 0;
	st->damaged = RT_LOAD_ACQ(&rb->damaged) ? 1 : 0;
	if (err == 0)
		err = rt_pool_check_damaged(rb, 0);
	return err;
}

struct rt_wstats_pass {
	struct ringtrace_rb_writer_stats *out;
	uint32_t max, n;
};

static int rt_wstats_pass(struct ringtrace_rb *rb, void *arg)
{
	struct rt_wstats_pass *a = arg;
	for (uint32_t i = 0; i < rb->g.max_writers; i++) {
		const struct rt_slot *s = &rb->slots[i];
		if (RT_SLOT_STATE(RT_LOAD_ACQ(&s->h.state)) != RT_SLOT_ACTIVE)
			continue;
		if (a->n < a->max) {
			struct ringtrace_rb_writer_stats *w = &a->out[a->n];
			w->slot = i;
			w->tid = RT_LOAD(&s->tid);
			w->stream = RT_LOAD(&s->stream);
			w->hit = RT_LOAD(&s->h.hit);
			w->missed = RT_LOAD(&s->missed);
			w->overrun = (RT_LOAD(&s->overrun) & RT_COUNT_MASK) +
				     RT_LOAD(&s->overrun_own);
			w->read = RT_LOAD(&s->read) & RT_COUNT_MASK;
			w->pages = RT_LOAD(&s->pages);
			uint64_t gone = w->read + w->overrun;
			w->entries = w->hit > gone ? w->hit - gone : 0;
		}
		a->n++;
	}
	return rt_check_control(rb);
}

int ringtrace_rb_get_writer_stats(const ringtrace_rb *rb, struct ringtrace_rb_writer_stats *out,
				  uint32_t max)
{
	if (!rb || (!out && max))
		return rt_error(RINGTRACE_EINVAL, "writer_stats: NULL argument");
	struct rt_wstats_pass a = {out, max, 0};
	int err = rt_guard_run(rb, rt_wstats_pass, &a);
	if (err == 0)
		err = rt_pool_check_damaged(rb, 0);
	return err < 0 ? err : (int)a.n;
}

struct rt_drops_pass {
	struct ringtrace_rb_stream_drops *out;
	uint32_t max, n;
};

static void rt_drops_put(struct rt_drops_pass *a, uint64_t stream, uint64_t missed, uint32_t tid)
{
	if (a->n < a->max) {
		a->out[a->n].stream = stream;
		a->out[a->n].dropped = missed;
		a->out[a->n].tid = tid;
	}
	a->n++;
}

static int rt_drops_pass(struct ringtrace_rb *rb, void *arg)
{
	struct rt_drops_pass *a = arg;
	/* the retired writers of this process (a creating handle) */
	uint32_t nt = RT_LOAD(&rb->ntails);
	for (uint32_t i = 0; rb->tails && i < nt && i < RT_TAILS_MAX; i++) {
		uint64_t stream = RT_LOAD_ACQ(&rb->tails[i].stream);
		if (stream)
			rt_drops_put(a, stream, RT_LOAD(&rb->tails[i].missed),
				     RT_LOAD(&rb->tails[i].tid));
	}
	/* the active writers, from the pool: their drops beyond their page */
	for (uint32_t i = 0; i < rb->g.max_writers; i++) {
		const struct rt_slot *s = &rb->slots[i];
		if (RT_SLOT_STATE(RT_LOAD_ACQ(&s->h.state)) != RT_SLOT_ACTIVE)
			continue;
		uint64_t missed = RT_LOAD(&s->missed), stream = RT_LOAD(&s->stream);
		if (stream && missed > RT_LOAD(&s->missed_reported))
			rt_drops_put(a, stream, missed, RT_LOAD(&s->tid));
	}
	return rt_check_control(rb);
}

int ringtrace_rb_stream_drops(const ringtrace_rb *rb, struct ringtrace_rb_stream_drops *out,
			      uint32_t max, uint64_t *lost)
{
	if (!rb || (!out && max))
		return rt_error(RINGTRACE_EINVAL, "stream_drops: NULL argument");
	struct rt_drops_pass a = {out, max, 0};
	int err = rt_guard_run(rb, rt_drops_pass, &a);
	if (lost)
		*lost = RT_LOAD(&rb->tails_lost);
	return err < 0 ? err : (int)a.n;
}

uint32_t rt_rb_retired_tails(const struct ringtrace_rb *rb)
{
	return RT_LOAD(&rb->ntails);
}
