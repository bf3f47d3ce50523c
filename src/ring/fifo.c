/*
 * The free list (a tagged Treiber stack of page indices) and the FIFO of
 * published pages (D. Vyukov's bounded MPMC queue): where pages wait
 * between owners (see "PAGE OWNERSHIP" in ring_internal.h).
 */
#include "ring/ring_internal.h"

/* ---- free list: tagged Treiber stack of page indices -------------------- */

int rt_free_pop(struct ringtrace_rb *rb, uint32_t *out)
{
	struct rt_shm *shm = rb->shm;
	uint64_t head = RT_LOAD_ACQ(&shm->free_head);
	for (;;) {
		uint32_t top = (uint32_t)head; /* index + 1, 0 = empty */
		if (top == 0)
			return 0;
		uint32_t next = RT_LOAD(&rb->free_next[top - 1]);
		uint64_t nh = (((head >> 32) + 1) << 32) | next;
		if (__atomic_compare_exchange_n(&shm->free_head, &head, nh, 1, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			__atomic_fetch_sub(&shm->free_count, 1, __ATOMIC_RELAXED);
			*out = top - 1;
			return 1;
		}
	}
}

void rt_free_push(struct ringtrace_rb *rb, uint32_t page)
{
	struct rt_shm *shm = rb->shm;
	uint64_t head = RT_LOAD(&shm->free_head);
	uint64_t nh;
	do {
		RT_STORE(&rb->free_next[page], (uint32_t)head);
		nh = (((head >> 32) + 1) << 32) | (uint64_t)(page + 1);
	} while (!__atomic_compare_exchange_n(&shm->free_head, &head, nh, 1, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
	__atomic_fetch_add(&shm->free_count, 1, __ATOMIC_RELAXED);
}

/* ---- FIFO of published pages ------------------------------------------- */

/*
 * Push a page. The FIFO has at least 4x as many cells as there are pages,
 * and a page is in it at most once, so a cell is only found busy if a
 * popper was descheduled inside its few-instruction window while the
 * whole pool was published three times over. A writer does not wait for
 * that: after a short spin it returns 0 and the caller counts the page's
 * events as overrun.
 */
/*
 * Claim the next FIFO position: the order of claims is the order readers
 * see. 1 and *out set, or 0 if the cell stayed busy.
 */
int rt_fifo_claim(struct ringtrace_rb *rb, uint64_t *out)
{
	struct rt_shm *shm = rb->shm;
	uint64_t mask = shm->qcap - 1;
	uint64_t pos = RT_LOAD(&shm->enq_pos);
	unsigned spins = 0;
	for (;;) {
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
			if (++spins > 1000)
				return 0;
			ringtrace_cpu_relax_();
			pos = RT_LOAD(&shm->enq_pos);
		} else {
			pos = RT_LOAD(&shm->enq_pos);
		}
	}
}

/* Fill a claimed position; RT_NO_PAGE makes a tombstone that pops skip. */
void rt_fifo_fill(struct ringtrace_rb *rb, uint64_t pos, uint32_t page)
{
	struct rt_qcell *c = &rb->qcells[pos & (rb->shm->qcap - 1)];
	RT_STORE(&c->page, page);
	RT_STORE_REL(&c->seq, pos + 1);
}

int rt_fifo_push(struct ringtrace_rb *rb, uint32_t page)
{
	uint64_t pos;
	if (!rt_fifo_claim(rb, &pos))
		return 0;
	rt_fifo_fill(rb, pos, page);
	return 1;
}

int rt_fifo_pop(struct ringtrace_rb *rb, uint32_t *page)
{
	struct rt_shm *shm = rb->shm;
	uint64_t mask = shm->qcap - 1;
	uint64_t pos = RT_LOAD(&shm->deq_pos);
	for (;;) {
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
				*page = p;
				return 1;
			}
		} else if (dif < 0) {
			return 0;
		} else {
			pos = RT_LOAD(&shm->deq_pos);
		}
	}
}
