/*
 * A pool as any process sees it: mapping one created elsewhere (a
 * recorder, a recovery tool), binding the handle to its parts, destroying
 * the handle, and the accessors. Nothing here writes events or keeps
 * per-thread state: a process that only reads a pool links this part of
 * the ring buffer without the writers (writer.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ring/ring_internal.h"

int rt_membarrier(int cmd)
{
	return (int)syscall(__NR_membarrier, cmd, 0, 0);
}

/*
 * What the inline fast path compares a thread's epoch with: the epoch
 * only where its timestamp (rdtsc) is the buffer's clock. Call whenever
 * epoch or is_tsc changes.
 */
void rt_set_fast_epoch(struct ringtrace_rb *rb)
{
	rb->h.fast_epoch = rb->h.is_tsc ? rb->h.epoch : UINT64_MAX;
}

/* Point the handle's fields at the parts of a mapped region (rb->g). */
void rt_bind(struct ringtrace_rb *rb, char *base)
{
	const struct rt_geom *g = &rb->g;
	rb->h.base = base;
	rb->shm = (struct rt_shm *)base;
	rb->slots = (struct rt_slot *)(base + g->off_slots);
	rb->qcells = (struct rt_qcell *)(base + g->off_qcells);
	rb->free_next = (uint32_t *)(base + g->off_free_next);
	rb->gen = (uint64_t *)(base + g->off_gen);
	rb->h.pages = base + g->off_pages;
	rb->h.page_size = g->page_size;
	uint32_t room = g->page_size - RINGTRACE_PAGE_HEADER_SIZE - RINGTRACE_EV_EXT_HEADER_SIZE;
	rb->h.max_payload = room < RINGTRACE_EV_MAX_PAYLOAD ? room : RINGTRACE_EV_MAX_PAYLOAD;
	rb->h.max_payload &= ~7u;
	rb->h.is_tsc = (uint32_t)rb->clock.is_tsc;
	rt_set_fast_epoch(rb);
}

/* ---- damage ------------------------------------------------------------- */

/* What the handle is called in messages: its shm name, or its fd. */
static void rt_pool_name(const struct ringtrace_rb *rb, char *buf, size_t n)
{
	if (rb->shm_name)
		rt_format_safe(buf, n, "%s", rb->shm_name);
	else
		rt_format_safe(buf, n, "(fd %d)", rb->fd);
}

/*
 * Stop this process's writers: every slot of ours (our cookie, active)
 * gets RT_STEAL_STOPPED, unless a flush has taken its page (TAKEN keeps
 * the fast path off already, and the writer, which refuses from now on,
 * never answers it). Bounded: one pass over the slots, a few tries each
 * (a slot whose word keeps changing is left: its writer's next page
 * switch reaches the refusing general path anyway).
 */
static void rt_stop_writers(struct ringtrace_rb *rb)
{
	uint64_t cookie = RT_LOAD(&rt_identity_loaded()->cookie);
	if (cookie == 0)
		return;
	for (uint32_t i = 0; i < rb->g.max_writers; i++) {
		struct rt_slot *s = &rb->slots[i];
		if (RT_SLOT_STATE(RT_LOAD(&s->h.state)) != RT_SLOT_ACTIVE ||
		    RT_LOAD(&s->owner_cookie) != cookie)
			continue;
		uint32_t st = RT_LOAD(&s->h.steal);
		for (int k = 0; k < 64 && (st == RT_STEAL_NONE || RT_STEAL_IS_ASKED(st)); k++)
			if (__atomic_compare_exchange_n(&s->h.steal, &st, RT_STEAL_STOPPED, 0,
							__ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
				break;
	}
}

int rt_pool_damaged(const struct ringtrace_rb *crb, int writer, const char *fmt, ...)
{
	/* The flags and counters are the handle's own, never the pool's. */
	struct ringtrace_rb *rb = (struct ringtrace_rb *)(uintptr_t)crb;
	char what[sizeof(rb->damage)];
	va_list ap;
	va_start(ap, fmt);
	rt_vformat_safe(what, sizeof(what), fmt, ap);
	va_end(ap);
	uint32_t zero = 0;
	if (__atomic_compare_exchange_n(&rb->damaged, &zero, 1, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		memcpy(rb->damage, what, sizeof(what));
		RT_STORE_REL(&rb->damage_ready, 1);
		if (rb->owner) {
			rt_stop_writers(rb);
			/* One message, with write(2): this may run in a signal handler. */
			char name[240], msg[512];
			rt_pool_name(rb, name, sizeof(name));
			size_t n = rt_format_safe(msg, sizeof(msg),
						  "ringtrace: buffer %s: damaged (%s); tracing to "
						  "it stopped\n",
						  name, what);
			if (rt_write_all(STDERR_FILENO, msg, n) < 0) {
				/* nothing more can be said */
			}
		}
	}
	if (!writer) {
		char name[240];
		rt_pool_name(rb, name, sizeof(name));
		return rt_error(RINGTRACE_ECORRUPT, "buffer %s is damaged: %s", name, what);
	}
	return -RINGTRACE_ECORRUPT;
}

int rt_pool_check_damaged(const struct ringtrace_rb *rb, int gone_only)
{
	if (!RT_LOAD_ACQ(&rb->damaged) || (gone_only && !RT_LOAD_ACQ(&rb->gone)))
		return 0;
	char name[240];
	rt_pool_name(rb, name, sizeof(name));
	return rt_error(RINGTRACE_ECORRUPT, "buffer %s is damaged: %s", name,
			RT_LOAD_ACQ(&rb->damage_ready) ? rb->damage : "(being reported)");
}

int ringtrace_rb_damaged(const ringtrace_rb *rb)
{
	if (!rb)
		return rt_error(RINGTRACE_EINVAL, "ringtrace_rb_damaged: NULL buffer");
	return rt_pool_check_damaged(rb, 0);
}

/* ---- geometry ------------------------------------------------------------ */

/* (the geometry fields of the control block, in its order, for messages;
 * kept out of clang-format, which reflows it differently on each run) */
/* clang-format off */
#define RT_GEOM_FIELDS(X)                                                   \
	X(page_size, 12) X(npages, 16) X(max_writers, 20) X(mode, 24)       \
	X(flush_ms, 28) X(qcap, 32) X(total_size, 64) X(off_slots, 72)      \
	X(off_qcells, 80) X(off_free_next, 88) X(off_gen, 96) X(off_pages, 104)
/* clang-format on */

/* Read the geometry from a control block, each field once. */
static void rt_geom_read(const struct rt_shm *shm, struct rt_geom *g)
{
#define RT_GEOM_READ(f, off) g->f = RT_LOAD(&shm->f);
	RT_GEOM_FIELDS(RT_GEOM_READ)
#undef RT_GEOM_READ
}

/*
 * Region [off, off + len) starts at or after `from`, is `align`-aligned
 * and ends by `to` (all in bytes, no overflow: len <= to is checked
 * first, and off <= to - len).
 */
static int rt_region_ok(uint64_t off, uint64_t len, uint64_t from, uint64_t to, uint64_t align)
{
	return off >= from && off % align == 0 && len <= to && off <= to - len;
}

/*
 * Check a geometry read from an object of `size` bytes: 0, or a message in
 * why[] naming the field (its offset in the control block) and the value.
 * The regions must lie in the order create.c lays them out, each after the
 * previous one and the last page ending exactly at the object's end, so
 * that every index checked against npages, max_writers or qcap addresses
 * memory inside the mapping.
 */
static int rt_geom_check(const struct rt_geom *g, uint64_t size, char *why, size_t n)
{
	uint32_t ps = g->page_size;
	if (ps < RINGTRACE_RB_MIN_PAGE_SIZE || ps > RINGTRACE_RB_MAX_PAGE_SIZE || (ps & (ps - 1)))
		return (int)rt_format_safe(
			why, n,
			"page_size %u at offset 12 is not a power of two from %u "
			"to %u",
			ps, RINGTRACE_RB_MIN_PAGE_SIZE, RINGTRACE_RB_MAX_PAGE_SIZE);
	if (g->npages < RINGTRACE_RB_MIN_PAGES || g->npages > RINGTRACE_RB_MAX_PAGES)
		return (int)rt_format_safe(why, n, "npages %u at offset 16 is not from %u to %u",
					   g->npages, RINGTRACE_RB_MIN_PAGES,
					   RINGTRACE_RB_MAX_PAGES);
	if (g->max_writers < 1 || g->max_writers > RINGTRACE_RB_MAX_WRITERS)
		return (int)rt_format_safe(why, n,
					   "max_writers %u at offset 20 is not from 1 to %u",
					   g->max_writers, RINGTRACE_RB_MAX_WRITERS);
	if (g->mode != RINGTRACE_RB_DISCARD && g->mode != RINGTRACE_RB_OVERWRITE)
		return (int)rt_format_safe(why, n, "mode %u at offset 24 is not 0 or 1", g->mode);
	if (g->flush_ms < 1 || g->flush_ms > 60000)
		return (int)rt_format_safe(why, n,
					   "flush interval %u ms at offset 28 is not from 1 to "
					   "60000",
					   g->flush_ms);
	/* (4 x the most pages, which create.c never exceeds) */
	if (g->qcap < g->npages || g->qcap > 4 * RINGTRACE_RB_MAX_PAGES ||
	    (g->qcap & (g->qcap - 1)))
		return (int)rt_format_safe(why, n,
					   "qcap %u at offset 32 is not a power of two from npages "
					   "(%u) to %u",
					   g->qcap, g->npages, 4 * RINGTRACE_RB_MAX_PAGES);
	if (g->total_size != size)
		return (int)rt_format_safe(why, n,
					   "total_size %llu at offset 64 is not the object's size "
					   "%llu",
					   (unsigned long long)g->total_size,
					   (unsigned long long)size);
	/* Each length is below 2^41 (the bounds above): no product overflows. */
	uint64_t pages_len = (uint64_t)g->npages * ps;
	if (!rt_region_ok(g->off_pages, pages_len, 4096, size, 4096) ||
	    g->off_pages != size - pages_len)
		return (int)rt_format_safe(
			why, n,
			"off_pages %llu at offset 104: %u pages of %u bytes from "
			"there do not end at the object's end (%llu bytes)",
			(unsigned long long)g->off_pages, g->npages, ps, (unsigned long long)size);
	if (!rt_region_ok(g->off_slots, (uint64_t)g->max_writers * sizeof(struct rt_slot),
			  sizeof(struct rt_shm), g->off_pages, RT_CACHELINE))
		return (int)rt_format_safe(
			why, n,
			"off_slots %llu at offset 72: %u slots do not fit between "
			"the control block and the pages (offset %llu)",
			(unsigned long long)g->off_slots, g->max_writers,
			(unsigned long long)g->off_pages);
	uint64_t end_slots = g->off_slots + (uint64_t)g->max_writers * sizeof(struct rt_slot);
	if (!rt_region_ok(g->off_qcells, (uint64_t)g->qcap * sizeof(struct rt_qcell), end_slots,
			  g->off_pages, RT_CACHELINE))
		return (int)rt_format_safe(
			why, n,
			"off_qcells %llu at offset 80: %u FIFO cells do not fit "
			"between the slots (end %llu) and the pages (offset %llu)",
			(unsigned long long)g->off_qcells, g->qcap, (unsigned long long)end_slots,
			(unsigned long long)g->off_pages);
	uint64_t end_q = g->off_qcells + (uint64_t)g->qcap * sizeof(struct rt_qcell);
	if (!rt_region_ok(g->off_free_next, (uint64_t)g->npages * sizeof(uint32_t), end_q,
			  g->off_pages, RT_CACHELINE))
		return (int)rt_format_safe(
			why, n,
			"off_free_next %llu at offset 88: %u links do not fit "
			"between the FIFO (end %llu) and the pages (offset %llu)",
			(unsigned long long)g->off_free_next, g->npages, (unsigned long long)end_q,
			(unsigned long long)g->off_pages);
	uint64_t end_fn = g->off_free_next + (uint64_t)g->npages * sizeof(uint32_t);
	if (!rt_region_ok(g->off_gen, (uint64_t)g->npages * sizeof(uint64_t), end_fn, g->off_pages,
			  RT_CACHELINE))
		return (int)rt_format_safe(why, n,
					   "off_gen %llu at offset 96: %u generations do not fit "
					   "between the free list (end %llu) and the pages (offset "
					   "%llu)",
					   (unsigned long long)g->off_gen, g->npages,
					   (unsigned long long)end_fn,
					   (unsigned long long)g->off_pages);
	return 0;
}

int rt_check_control(const struct ringtrace_rb *rb)
{
	if (RT_LOAD(&rb->gone))
		return rt_pool_check_damaged(rb, 1);
	const struct rt_shm *shm = rb->shm;
	if (RT_LOAD(&shm->magic) != RT_SHM_MAGIC)
		return rt_pool_damaged(rb, 0, "control block: magic at offset 0 changed to 0x%llx",
				       (unsigned long long)RT_LOAD(&shm->magic));
	if (RT_LOAD(&shm->version) != RT_SHM_VERSION)
		return rt_pool_damaged(rb, 0, "control block: version at offset 8 changed to %u",
				       RT_LOAD(&shm->version));
	const struct rt_geom *g = &rb->g;
#define RT_GEOM_CMP(f, off)                                                                 \
	if ((uint64_t)RT_LOAD(&shm->f) != (uint64_t)g->f)                                   \
		return rt_pool_damaged(rb, 0,                                               \
				       "control block: " #f " at offset " #off " is %llu, " \
				       "was %llu",                                          \
				       (unsigned long long)RT_LOAD(&shm->f),                \
				       (unsigned long long)g->f);
	RT_GEOM_FIELDS(RT_GEOM_CMP)
#undef RT_GEOM_CMP
	for (unsigned i = 0; i < sizeof(rb->uuid); i++)
		if (RT_LOAD(&shm->uuid[i]) != rb->uuid[i])
			return rt_pool_damaged(rb, 0,
					       "control block: uuid byte %u at offset %u changed",
					       i, (unsigned)offsetof(struct rt_shm, uuid) + i);
	return 0;
}

/* ---- attach -------------------------------------------------------------- */

struct rt_attach_pass {
	const struct rt_shm *shm;
	uint64_t size;
	struct rt_geom g;
	struct rt_clock clock;
	uint32_t mb_cmd;
	uint8_t uuid[16];
	char why[200];
};

/* The reads of attach, under the SIGBUS guard: each field once. */
static int rt_attach_read(void *arg)
{
	struct rt_attach_pass *a = arg;
	const struct rt_shm *shm = a->shm;
	uint64_t magic = RT_LOAD_ACQ(&shm->magic);
	uint32_t version = RT_LOAD(&shm->version);
	if (magic != RT_SHM_MAGIC)
		return (int)rt_format_safe(a->why, sizeof(a->why),
					   "bad magic 0x%llx at offset 0 (not a ringtrace buffer)",
					   (unsigned long long)magic);
	if (version != RT_SHM_VERSION)
		return (int)rt_format_safe(a->why, sizeof(a->why),
					   "unsupported version %u at offset 8 (this library reads "
					   "%u)",
					   version, RT_SHM_VERSION);
	rt_geom_read(shm, &a->g);
	if (rt_geom_check(&a->g, a->size, a->why, sizeof(a->why)))
		return 1;
	uint32_t is_tsc = RT_LOAD(&shm->clock_is_tsc);
	a->clock.freq = RT_LOAD(&shm->clock_freq);
	a->clock.base_ticks = RT_LOAD(&shm->clock_base_ticks);
	a->clock.base_ns = RT_LOAD(&shm->clock_base_ns);
	a->mb_cmd = RT_LOAD(&shm->creator_mb_cmd);
	uint8_t any = 0;
	for (int i = 0; i < 16; i++)
		any |= a->uuid[i] = RT_LOAD(&shm->uuid[i]);
	/* (create.c never makes a zero id: a trace could not be told apart) */
	if (!any)
		return (int)rt_format_safe(
			a->why, sizeof(a->why),
			"uuid at offset %u is zero (a pool is made with a random id)",
			(unsigned)offsetof(struct rt_shm, uuid));
	if (is_tsc > 1)
		return (int)rt_format_safe(a->why, sizeof(a->why),
					   "clock kind %u at offset 36 is not 0 or 1", is_tsc);
	/* (a tick rate below 1 kHz would make flush intervals 0 ticks) */
	if (a->clock.freq < 1000)
		return (int)rt_format_safe(a->why, sizeof(a->why),
					   "clock frequency %llu Hz at offset 40 is below 1 kHz",
					   (unsigned long long)a->clock.freq);
	a->clock.is_tsc = (int)is_tsc;
	return 0;
}

static int rt_attach(int fd, const char *name, ringtrace_rb **out)
{
	char who[240];
	if (name)
		snprintf(who, sizeof(who), "pool %s", name);
	else
		snprintf(who, sizeof(who), "fd %d", fd);
	struct stat stb;
	if (fstat(fd, &stb) < 0)
		return rt_error(RINGTRACE_ESYS, "attach: fstat(%s): %s", who, strerror(errno));
	if (!S_ISREG(stb.st_mode))
		return rt_error(RINGTRACE_ECORRUPT,
				"attach: %s is not a shared memory object (file type 0%o)", who,
				(unsigned)(stb.st_mode & S_IFMT));
	if (stb.st_size < (off_t)sizeof(struct rt_shm))
		return rt_error(RINGTRACE_ECORRUPT,
				"attach: %s is %lld bytes, too small for a ringtrace buffer", who,
				(long long)stb.st_size);
	if ((uint64_t)stb.st_size > SIZE_MAX / 2)
		return rt_error(RINGTRACE_ECORRUPT, "attach: %s is %lld bytes, too large", who,
				(long long)stb.st_size);
	size_t size = (size_t)stb.st_size;
	char *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		return rt_error(RINGTRACE_ESYS, "attach: mmap of %zu bytes of %s: %s", size, who,
				strerror(errno));
	int err;
	struct rt_attach_pass *a = calloc(1, sizeof(*a));
	struct ringtrace_rb *rb = calloc(1, sizeof(*rb));
	char *dname = name ? strdup(name) : NULL;
	int dfd = dup(fd);
	if (!a || !rb || (name && !dname) || dfd < 0) {
		err = dfd < 0 ? rt_error(RINGTRACE_ESYS, "attach: dup(%d): %s", fd, strerror(errno))
			      : rt_error(RINGTRACE_ENOMEM, "attach: out of memory");
		goto fail;
	}
	a->shm = (const struct rt_shm *)base;
	a->size = size;
	/* The object may shrink between fstat and these reads: guarded. */
	int r = rt_guard_range(base, size, rt_attach_read, a);
	if (r != 0) {
		err = r == RT_GUARD_FAULT
			      ? rt_error(RINGTRACE_ECORRUPT,
					 "attach: %s shrank below %zu bytes while it was read", who,
					 size)
			      : rt_error(RINGTRACE_ECORRUPT, "attach: %s: %s", who, a->why);
		goto fail;
	}
	rb->g = a->g;
	rb->clock = a->clock;
	memcpy(rb->uuid, a->uuid, sizeof(rb->uuid));
	rt_bind(rb, base);
	rb->fd = dfd;
	rb->shm_name = dname;
	rb->owner = 0;
	rb->map_size = size;
	rb->h.idx = 0;
	rb->h.epoch = UINT64_MAX; /* never matches a thread: a reader does not write */
	rt_set_fast_epoch(rb);
	/*
	 * The expedited global barrier reaches only processes registered for
	 * it: usable only if the pool's creator registered (its forked
	 * children do as well). Otherwise the plain global barrier (it waits
	 * for every CPU to pass a quiescent state: slow, but it orders every
	 * running thread), or none: flush then only asks.
	 */
	int q = rt_membarrier(MEMBARRIER_CMD_QUERY);
	if (q > 0 && (q & MEMBARRIER_CMD_GLOBAL_EXPEDITED) &&
	    a->mb_cmd == MEMBARRIER_CMD_GLOBAL_EXPEDITED)
		rb->mb_cmd = MEMBARRIER_CMD_GLOBAL_EXPEDITED;
	else if (q > 0 && (q & MEMBARRIER_CMD_GLOBAL))
		rb->mb_cmd = MEMBARRIER_CMD_GLOBAL;
	free(a);
	rt_error_clear();
	*out = rb;
	return 0;
fail:
	if (dfd >= 0)
		close(dfd);
	free(dname);
	free(rb);
	free(a);
	munmap(base, size);
	return err;
}

int ringtrace_rb_attach_fd(int fd, ringtrace_rb **out)
{
	if (!out || fd < 0)
		return rt_error(RINGTRACE_EINVAL, "ringtrace_rb_attach_fd: invalid fd or NULL out");
	*out = NULL;
	return rt_attach(fd, NULL, out);
}

int ringtrace_rb_attach_name(const char *shm_name, ringtrace_rb **out)
{
	if (!shm_name || !out)
		return rt_error(RINGTRACE_EINVAL, "ringtrace_rb_attach_name: NULL argument");
	*out = NULL;
	int fd = shm_open(shm_name, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0)
		return rt_error(RINGTRACE_ESYS, "shm_open(\"%s\"): %s", shm_name, strerror(errno));
	int err = rt_attach(fd, shm_name, out);
	close(fd);
	return err;
}

void ringtrace_rb_destroy(ringtrace_rb *rb)
{
	if (!rb)
		return;
	if (rb->owner) {
		if (rb->on_destroy)
			rb->on_destroy(rb);
		if (rb->shm_name)
			shm_unlink(rb->shm_name);
	}
	rt_copies_free(rb);
	free(rb->tails);
	munmap(rb->h.base, rb->map_size);
	close(rb->fd);
	free(rb->shm_name);
	free(rb);
}

size_t ringtrace_rb_max_payload(const ringtrace_rb *rb)
{
	return rb->h.max_payload;
}

int ringtrace_rb_fd(const ringtrace_rb *rb)
{
	return rb->fd;
}

size_t ringtrace_rb_page_size(const ringtrace_rb *rb)
{
	return rb->h.page_size;
}

uint32_t ringtrace_rb_page_count(const ringtrace_rb *rb)
{
	return rb->g.npages;
}

void ringtrace_rb_uuid(const ringtrace_rb *rb, uint8_t uuid[16])
{
	memcpy(uuid, rb->uuid, sizeof(rb->uuid));
}

enum ringtrace_rb_mode ringtrace_rb_mode(const ringtrace_rb *rb)
{
	return (enum ringtrace_rb_mode)rb->g.mode;
}

uint64_t ringtrace_rb_now(const ringtrace_rb *rb)
{
	return rt_ticks(rb->h.is_tsc);
}

uint64_t ringtrace_rb_ticks_to_ns(const ringtrace_rb *rb, uint64_t ticks)
{
	return rt_clock_to_ns(&rb->clock, ticks);
}

uint64_t ringtrace_rb_clock_freq(const ringtrace_rb *rb)
{
	return rb->clock.freq;
}

int ringtrace_rb_clock_is_tsc(const ringtrace_rb *rb)
{
	return rb->clock.is_tsc;
}

void ringtrace_rb_clock_base(const ringtrace_rb *rb, uint64_t *base_ticks, uint64_t *base_ns)
{
	if (base_ticks)
		*base_ticks = rb->clock.base_ticks;
	if (base_ns)
		*base_ns = rb->clock.base_ns;
}
