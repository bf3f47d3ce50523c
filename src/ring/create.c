/*
 * Creating a pool: the shared memory (an anonymous memfd, or a named POSIX
 * shm object another process can open), its layout (ring_internal.h,
 * "OVERVIEW"; docs/format.md section 6), every page faulted in writable,
 * and the buffer opened for writing in this process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "ring/ring_internal.h"

void ringtrace_rb_config_init(struct ringtrace_rb_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->page_size = RINGTRACE_RB_DEFAULT_PAGE_SIZE;
	cfg->pool_size = RINGTRACE_RB_DEFAULT_POOL_SIZE;
	cfg->max_writers = RINGTRACE_RB_DEFAULT_MAX_WRITERS;
	cfg->mode = RINGTRACE_RB_DISCARD;
	cfg->flush_interval_ms = RINGTRACE_RB_DEFAULT_FLUSH_MS;
	cfg->shm_name = NULL;
}

static int rt_check_config(const struct ringtrace_rb_config *c)
{
	size_t ps = c->page_size;
	if (ps < RINGTRACE_RB_MIN_PAGE_SIZE || ps > RINGTRACE_RB_MAX_PAGE_SIZE || (ps & (ps - 1)))
		return rt_error(RINGTRACE_EINVAL,
				"page_size %zu is invalid: it must be a power of two from %u to %u",
				ps, RINGTRACE_RB_MIN_PAGE_SIZE, RINGTRACE_RB_MAX_PAGE_SIZE);
	if (c->pool_size % ps)
		return rt_error(RINGTRACE_EINVAL,
				"pool_size %zu is invalid: it must be a multiple of page_size %zu",
				c->pool_size, ps);
	size_t np = c->pool_size / ps;
	if (np < RINGTRACE_RB_MIN_PAGES || np > RINGTRACE_RB_MAX_PAGES)
		return rt_error(RINGTRACE_EINVAL,
				"pool_size %zu is invalid: it holds %zu pages, allowed %u to %u",
				c->pool_size, np, RINGTRACE_RB_MIN_PAGES, RINGTRACE_RB_MAX_PAGES);
	if (c->max_writers < 1 || c->max_writers > RINGTRACE_RB_MAX_WRITERS)
		return rt_error(RINGTRACE_EINVAL, "max_writers %u is invalid: allowed 1 to %u",
				c->max_writers, RINGTRACE_RB_MAX_WRITERS);
	if (c->mode != RINGTRACE_RB_DISCARD && c->mode != RINGTRACE_RB_OVERWRITE)
		return rt_error(RINGTRACE_EINVAL,
				"mode %d is invalid: use discard (0) or overwrite (1)",
				(int)c->mode);
	if (c->flush_interval_ms < 1 || c->flush_interval_ms > 60000)
		return rt_error(RINGTRACE_EINVAL,
				"flush_interval_ms %u is invalid: allowed 1 to 60000",
				c->flush_interval_ms);
	if (c->shm_name && (c->shm_name[0] != '/' || strlen(c->shm_name) < 2 ||
			    strchr(c->shm_name + 1, '/') || strlen(c->shm_name) > 200))
		return rt_error(
			RINGTRACE_EINVAL,
			"shm_name \"%s\" is invalid: it must be \"/name\" with no other '/'",
			c->shm_name);
	return 0;
}

/* splitmix64's finaliser: spreads the fallback seed's bits. */
static uint64_t rt_mix64(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/*
 * A new pool's identity (rt_shm.uuid): random (getrandom, never blocking:
 * a program starting early in boot must not wait for entropy), else from
 * the clock, pid and an address, which is enough to tell two pools apart
 * (it is an identity, not a secret). Version 4 and variant bits as RFC
 * 4122 says, so it is a valid UUID for the CTF metadata; never all zero.
 */
static void rt_new_uuid(uint8_t u[16])
{
	if (getrandom(u, 16, GRND_NONBLOCK) != 16) {
		static uint64_t seq;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t a = rt_mix64((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
		uint64_t b = rt_mix64(a ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)u ^
				      __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
		memcpy(u, &a, 8);
		memcpy(u + 8, &b, 8);
	}
	u[6] = (uint8_t)((u[6] & 0x0F) | 0x40);
	u[8] = (uint8_t)((u[8] & 0x3F) | 0x80);
}

static size_t rt_align(size_t v, size_t a)
{
	return (v + a - 1) & ~(a - 1);
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/*
 * Make every page of the pool writable now, and really there. MAP_POPULATE
 * on a shared mapping only read-faults the pages in: the first store to
 * each 4 KiB page would still take a write fault, in the middle of a
 * writer's event: a cost on every page's first event and a latency spike
 * of its own each time. MADV_POPULATE_WRITE takes those faults here.
 *
 * Then one store to each page, even so: a hypervisor may back the guest's
 * memory lazily (a Firecracker VM with free-page reporting does: pages
 * the guest freed went back to the host, and the guest does not write a
 * page it knows is zero). The guest's page tables are then complete but
 * the first store to each page still traps to the host, with no fault the
 * guest sees or counts, and the first event of every page of a new pool
 * would pay for that trap, many microseconds. On a machine that backs
 * memory eagerly the loop costs one store (a TLB miss) a page. The memory
 * is zero already: storing a zero changes nothing.
 */
static void rt_prefault_write(char *base, size_t total)
{
	(void)madvise(base, total, MADV_POPULATE_WRITE); /* (the stores below do it otherwise) */
	long ps = sysconf(_SC_PAGESIZE);
	size_t step = ps > 0 ? (size_t)ps : 4096;
	for (size_t off = 0; off < total; off += step)
		__atomic_store_n(base + off, 0, __ATOMIC_RELAXED);
}

/* The pool's layout for a valid configuration (docs/format.md section 6). */
static struct rt_geom rt_pool_geometry(const struct ringtrace_rb_config *cfg)
{
	uint32_t npages = (uint32_t)(cfg->pool_size / cfg->page_size);
	uint32_t qcap = 1;
	while (qcap < 4 * npages)
		qcap <<= 1;
	struct rt_geom g = {
		.page_size = (uint32_t)cfg->page_size,
		.npages = npages,
		.max_writers = cfg->max_writers,
		.qcap = qcap,
		.mode = (uint32_t)cfg->mode,
		.flush_ms = cfg->flush_interval_ms,
	};
	size_t off = rt_align(sizeof(struct rt_shm), 4096);
	g.off_slots = off;
	off = rt_align(off + (size_t)cfg->max_writers * sizeof(struct rt_slot), RT_CACHELINE);
	g.off_qcells = off;
	off = rt_align(off + (size_t)qcap * sizeof(struct rt_qcell), RT_CACHELINE);
	g.off_free_next = off;
	off = rt_align(off + (size_t)npages * sizeof(uint32_t), RT_CACHELINE);
	g.off_gen = off;
	off = rt_align(off + (size_t)npages * sizeof(uint64_t), 4096);
	g.off_pages = off;
	g.total_size = off + (size_t)npages * cfg->page_size;
	return g;
}

/*
 * The pool's shared memory, `total` bytes: a new named shm object or an
 * anonymous memfd, mapped and faulted in writable. 0 with *fd and *base,
 * or an error (nothing left behind: a named object is unlinked again).
 */
static int rt_pool_memory(const char *shm_name, size_t total, int *fd, char **base)
{
	int err;
	if (shm_name) {
		*fd = shm_open(shm_name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (*fd < 0)
			return rt_error(RINGTRACE_ESYS, "shm_open(\"%s\"): %s", shm_name,
					strerror(errno));
	} else {
		*fd = memfd_create("ringtrace", MFD_CLOEXEC);
		if (*fd < 0)
			return rt_error(RINGTRACE_ESYS,
					"cannot create the ring buffer's pool (memfd_create): %s",
					strerror(errno));
	}
	if (ftruncate(*fd, (off_t)total) < 0) {
		err = rt_error(RINGTRACE_ENOMEM, "ftruncate of shared memory to %zu bytes: %s",
			       total, strerror(errno));
		goto fail;
	}
	*base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, *fd, 0);
	if (*base == MAP_FAILED) {
		err = rt_error(RINGTRACE_ENOMEM, "mmap of %zu bytes of shared memory: %s", total,
			       strerror(errno));
		goto fail;
	}
	rt_prefault_write(*base, total);
	return 0;
fail:
	close(*fd);
	if (shm_name)
		shm_unlink(shm_name);
	return err;
}

/*
 * Lay the new pool out at base (zero-filled), from rb's geometry: the
 * control block, the empty FIFO, every page on the free list (page 0 on
 * top), every slot free. The magic is left for last (ringtrace_rb_create).
 */
static void rt_pool_init(struct ringtrace_rb *rb, char *base)
{
	const struct rt_geom *g = &rb->g;
	const struct rt_clock *clk = &rb->clock;
	struct rt_shm *shm = (struct rt_shm *)base;
	shm->version = RT_SHM_VERSION;
	shm->page_size = g->page_size;
	shm->npages = g->npages;
	shm->max_writers = g->max_writers;
	shm->mode = g->mode;
	shm->flush_ms = g->flush_ms;
	shm->qcap = g->qcap;
	shm->clock_is_tsc = (uint32_t)clk->is_tsc;
	shm->clock_freq = clk->freq;
	shm->clock_base_ticks = clk->base_ticks;
	shm->clock_base_ns = clk->base_ns;
	shm->total_size = g->total_size;
	shm->off_slots = g->off_slots;
	shm->off_qcells = g->off_qcells;
	shm->off_free_next = g->off_free_next;
	shm->off_gen = g->off_gen;
	shm->off_pages = g->off_pages;
	shm->creator_pid = (uint32_t)getpid();
	shm->next_stream = 1;
	rt_new_uuid(rb->uuid);
	memcpy(shm->uuid, rb->uuid, sizeof(shm->uuid));
	rt_bind(rb, base);
	for (uint32_t i = 0; i < g->qcap; i++)
		rb->qcells[i].seq = i;
	for (uint32_t i = 0; i < g->npages; i++)
		rb->free_next[i] = i + 1 < g->npages ? i + 2 : 0;
	for (uint32_t i = 0; i < g->max_writers; i++)
		rb->slots[i].h.cur_page = RT_NO_PAGE;
	shm->free_head = 1;
	shm->free_count = g->npages;
}

/*
 * The strongest membarrier this process can use for its flushes (0:
 * none; the writers then answer a flush at their next event).
 */
static int rt_membarrier_choose(void)
{
	if (rt_membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0)
		return MEMBARRIER_CMD_GLOBAL_EXPEDITED;
	if (rt_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0)
		return MEMBARRIER_CMD_PRIVATE_EXPEDITED;
	if (rt_membarrier(MEMBARRIER_CMD_QUERY) > 0 &&
	    (rt_membarrier(MEMBARRIER_CMD_QUERY) & MEMBARRIER_CMD_GLOBAL))
		return MEMBARRIER_CMD_GLOBAL;
	return 0;
}

int ringtrace_rb_create(const struct ringtrace_rb_config *cfg, ringtrace_rb **out)
{
	int err;
	if (!cfg || !out)
		return rt_error(RINGTRACE_EINVAL,
				"ringtrace_rb_create: cfg and out must not be NULL");
	*out = NULL;
	if ((err = rt_check_config(cfg)) < 0)
		return err;

	struct ringtrace_rb *rb = calloc(1, sizeof(*rb));
	if (!rb)
		return rt_error(RINGTRACE_ENOMEM, "out of memory creating a ring buffer");
	/* The handle's geometry: its own, never read back from the pool. */
	rb->g = rt_pool_geometry(cfg);
	size_t total = rb->g.total_size;
	int fd;
	char *base;
	if ((err = rt_pool_memory(cfg->shm_name, total, &fd, &base)) < 0) {
		free(rb);
		return err;
	}
	rb->clock = *rt_clock_get();
	rt_pool_init(rb, base);
	rb->fd = fd;
	rb->owner = 1;
	rb->map_size = total;
	rb->mb_cmd = rt_membarrier_choose();
	rb->shm->creator_mb_cmd = (uint32_t)rb->mb_cmd;
	if ((err = rt_writers_open(rb)) < 0) {
		munmap(base, total);
		close(fd);
		if (cfg->shm_name)
			shm_unlink(cfg->shm_name);
		free(rb);
		return err;
	}
	/* Publish the magic last: an attacher that sees it sees a whole pool. */
	RT_STORE_REL(&rb->shm->magic, RT_SHM_MAGIC);
	if (cfg->shm_name) {
		rb->shm_name = strdup(cfg->shm_name);
	}
	rt_error_clear();
	*out = rb;
	return 0;
}

int rt_rb_use_clock(struct ringtrace_rb *rb, const struct rt_clock *c)
{
	uint64_t f = rb->clock.freq;
	if (!rb->clock.is_tsc || !c->is_tsc || c->freq < f - f / 1000 || c->freq > f + f / 1000)
		return rt_error(RINGTRACE_EINVAL,
				"clock: %s at %llu Hz cannot take a cycle-counter conversion at "
				"%llu Hz",
				rb->clock.is_tsc ? "cycle counter" : "CLOCK_MONOTONIC",
				(unsigned long long)f, (unsigned long long)c->freq);
	rb->clock = *c;
	RT_STORE(&rb->shm->clock_freq, c->freq);
	RT_STORE(&rb->shm->clock_base_ticks, c->base_ticks);
	RT_STORE(&rb->shm->clock_base_ns, c->base_ns);
	return 0;
}
