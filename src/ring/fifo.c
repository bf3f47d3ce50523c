/*
 * The free list (a tagged Treiber stack of page indices) and the FIFO of
 * published pages (D. Vyukov's bounded MPMC queue): where pages wait
 * between owners (see "PAGE OWNERSHIP" in ring_internal.h).
 */
#include "ring/ring_internal.h"

/*
 * Every loop here is over words another process can write (see "UNTRUSTED
 * POOLS" in ring_internal.h): each index read is checked against the
 * handle's geometry before it is used, and each loop is bounded, by
 * RT_CAS_MAX (a compare-and-swap that keeps failing) or by the queue's
 * invariants below. What fails a check marks the pool damaged.
 */

/* ---- free list: tagged Treiber stack of page indices -------------------- */

/*
 * A link (index + 1, 0 ends the list) is written only by rt_free_push, from
 * a head it read: it names a page or nothing, even when read stale (a pop
 * that lost the race reads a link that another pop and push rewrote, and
 * its compare-and-swap then fails on the tag). A link above npages was
 * written by something else.
 */
int rt_free_pop(struct ringtrace_rb *rb, uint32_t *out, int writer)
{
	struct rt_shm *shm = rb->shm;
	uint32_t np = rb->g.npages;
	uint64_t head = RT_LOAD_ACQ(&shm->free_head);
	for (uint32_t tries = 0; tries < RT_CAS_MAX; tries++) {
		uint32_t top = (uint32_t)head; /* index + 1, 0 = empty */
		if (top == 0)
			return 0;
		if (top > np)
			return rt_pool_damaged(rb, writer,
					       "free list head at offset 128: page index %u >= %u "
					       "pages",
					       top - 1, np);
		uint32_t next = RT_LOAD(&rb->free_next[top - 1]);
		if (next > np)
			return rt_pool_damaged(rb, writer,
					       "free list link of page %u: page index %u >= %u "
					       "pages",
					       top - 1, next - 1, np);
		uint64_t nh = (((head >> 32) + 1) << 32) | next;
		if (__atomic_compare_exchange_n(&shm->free_head, &head, nh, 1, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			__atomic_fetch_sub(&shm->free_count, 1, __ATOMIC_RELAXED);
			*out = top - 1;
			return 1;
		}
	}
	return rt_pool_damaged(rb, writer,
			       "free list head at offset 128 changed %u times during one pop",
			       RT_CAS_MAX);
}

int rt_free_push(struct ringtrace_rb *rb, uint32_t page, int writer)
{
	struct rt_shm *shm = rb->shm;
	if (page >= rb->g.npages)
		return rt_pool_damaged(rb, writer, "page %u given back: index >= %u pages", page,
				       rb->g.npages);
	uint64_t head = RT_LOAD(&shm->free_head);
	for (uint32_t tries = 0; tries < RT_CAS_MAX; tries++) {
		/* (the link is the head's low word as read: a pop checks it) */
		RT_STORE(&rb->free_next[page], (uint32_t)head);
		uint64_t nh = (((head >> 32) + 1) << 32) | (uint64_t)(page + 1);
		if (__atomic_compare_exchange_n(&shm->free_head, &head, nh, 1, __ATOMIC_RELEASE,
						__ATOMIC_RELAXED)) {
			__atomic_fetch_add(&shm->free_count, 1, __ATOMIC_RELAXED);
			return 1;
		}
	}
	return rt_pool_damaged(rb, writer,
			       "free list head at offset 128 changed %u times during one push",
			       RT_CAS_MAX);
}

/* ---- FIFO of published pages ------------------------------------------- */

/*
 * The queue's invariants, which bound its loops. The cell of position pos
 * (index pos & (qcap - 1)) has seq == pos while free for the producer of
 * pos, pos + 1 once filled, and pos + qcap once consumed (free for the
 * producer of pos + qcap). A producer or consumer looking at position pos
 * therefore finds seq - pos in [-qcap, 1] (a cell still holding, or being
 * filled for, the position one lap earlier: a slow consumer or producer),
 * or seq ahead: another producer (consumer) took pos first. That one
 * advanced enq_pos (deq_pos) by compare-and-swap *before* its release
 * store of seq, which our acquire load of seq read: reading the position
 * again must then return more than pos. A sequence more than a lap behind,
 * or one ahead while the position stays where it is, was written by
 * something else; so was a page index >= npages other than the tombstone.
 * (RT_AHEAD_MAX re-reads are allowed before that verdict, against a
 * reading of this argument that is too fine.)
 */
#define RT_AHEAD_MAX 64u

/*
 * Claim the next FIFO position: the order of claims is the order readers
 * see. 1 and *out set, 0 if the cell stayed busy, or damage; a push is a
 * claim and then rt_fifo_fill. The FIFO has at least 4x as many cells as
 * there are pages, and a page is in it at most once, so a cell is only
 * found busy if a popper was descheduled inside its few-instruction
 * window while the whole pool was published three times over. A writer
 * does not wait for that: after a short spin the claim returns 0 and the
 * caller counts the page's events as overrun.
 */
int rt_fifo_claim(struct ringtrace_rb *rb, uint64_t *out, int writer)
{
	struct rt_shm *shm = rb->shm;
	uint64_t qcap = rb->g.qcap, mask = qcap - 1;
	uint64_t pos = RT_LOAD(&shm->enq_pos);
	unsigned spins = 0, ahead = 0;
	for (uint32_t tries = 0; tries < RT_CAS_MAX; tries++) {
		struct rt_qcell *c = &rb->qcells[pos & mask];
		uint64_t seq = RT_LOAD_ACQ(&c->seq);
		int64_t dif = (int64_t)(seq - pos);
		if (dif == 0) {
			if (__atomic_compare_exchange_n(&shm->enq_pos, &pos, pos + 1, 1,
							__ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
				*out = pos;
				return 1;
			}
		} else if (dif < 0) {
			if (dif < -(int64_t)qcap)
				return rt_pool_damaged(rb, writer,
						       "FIFO cell %llu: sequence %llu is more than "
						       "a lap behind the write position %llu",
						       (unsigned long long)(pos & mask),
						       (unsigned long long)seq,
						       (unsigned long long)pos);
			if (++spins > 1000)
				return 0;
			ringtrace_cpu_relax_();
			pos = RT_LOAD(&shm->enq_pos);
		} else {
			uint64_t now = RT_LOAD(&shm->enq_pos);
			if (now == pos && ++ahead > RT_AHEAD_MAX)
				return rt_pool_damaged(
					rb, writer,
					"FIFO cell %llu: sequence %llu runs ahead of "
					"the write position %llu",
					(unsigned long long)(pos & mask), (unsigned long long)seq,
					(unsigned long long)pos);
			pos = now;
		}
	}
	return rt_pool_damaged(rb, writer,
			       "FIFO write position at offset 192 moved %u times during one push",
			       RT_CAS_MAX);
}

/*
 * Pop the oldest page (and its position in *at, if at is given).
 * Tombstones are skipped; each takes one of the loop's RT_CAS_MAX rounds,
 * as does each lost race.
 */
int rt_fifo_pop(struct ringtrace_rb *rb, uint32_t *page, uint64_t *at, int writer)
{
	struct rt_shm *shm = rb->shm;
	uint64_t qcap = rb->g.qcap, mask = qcap - 1;
	uint64_t pos = RT_LOAD(&shm->deq_pos);
	unsigned ahead = 0;
	for (uint32_t tries = 0; tries < RT_CAS_MAX; tries++) {
		struct rt_qcell *c = &rb->qcells[pos & mask];
		uint64_t seq = RT_LOAD_ACQ(&c->seq);
		int64_t dif = (int64_t)(seq - (pos + 1));
		if (dif == 0) {
			if (__atomic_compare_exchange_n(&shm->deq_pos, &pos, pos + 1, 1,
							__ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
				uint32_t p = RT_LOAD(&c->page);
				RT_STORE_REL(&c->seq, pos + mask + 1);
				if (p == RT_NO_PAGE) { /* a flush's tombstone */
					pos = RT_LOAD(&shm->deq_pos);
					continue;
				}
				if (p >= rb->g.npages)
					return rt_pool_damaged(
						rb, writer,
						"FIFO cell %llu (position %llu): page "
						"index %u >= %u pages",
						(unsigned long long)(pos & mask),
						(unsigned long long)pos, p, rb->g.npages);
				*page = p;
				if (at)
					*at = pos;
				return 1;
			}
		} else if (dif < 0) {
			if (dif < -(int64_t)qcap)
				return rt_pool_damaged(rb, writer,
						       "FIFO cell %llu: sequence %llu is more than "
						       "a lap behind the read position %llu",
						       (unsigned long long)(pos & mask),
						       (unsigned long long)seq,
						       (unsigned long long)pos);
			return 0;
		} else {
			uint64_t now = RT_LOAD(&shm->deq_pos);
			if (now == pos && ++ahead > RT_AHEAD_MAX)
				return rt_pool_damaged(
					rb, writer,
					"FIFO cell %llu: sequence %llu runs ahead of "
					"the read position %llu",
					(unsigned long long)(pos & mask), (unsigned long long)seq,
					(unsigned long long)pos);
			pos = now;
		}
	}
	return rt_pool_damaged(rb, writer,
			       "FIFO read position at offset 256 moved %u times during one pop",
			       RT_CAS_MAX);
}
