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

/* Point the handle's fields at the parts of a mapped region. */
void rt_bind(struct ringtrace_rb *rb, char *base)
{
	struct rt_shm *shm = (struct rt_shm *)base;
	rb->h.base = base;
	rb->shm = shm;
	rb->slots = (struct rt_slot *)(base + shm->off_slots);
	rb->qcells = (struct rt_qcell *)(base + shm->off_qcells);
	rb->free_next = (uint32_t *)(base + shm->off_free_next);
	rb->gen = (uint64_t *)(base + shm->off_gen);
	rb->h.pages = base + shm->off_pages;
	rb->h.page_size = shm->page_size;
	uint32_t room = shm->page_size - RINGTRACE_PAGE_HEADER_SIZE - RINGTRACE_EV_EXT_HEADER_SIZE;
	rb->h.max_payload = room < RINGTRACE_EV_MAX_PAYLOAD ? room : RINGTRACE_EV_MAX_PAYLOAD;
	rb->h.max_payload &= ~7u;
	rb->h.is_tsc = shm->clock_is_tsc;
	rt_set_fast_epoch(rb);
	rb->clock.is_tsc = (int)shm->clock_is_tsc;
	rb->clock.freq = shm->clock_freq;
	rb->clock.base_ticks = shm->clock_base_ticks;
	rb->clock.base_ns = shm->clock_base_ns;
}

int ringtrace_rb_attach_fd(int fd, ringtrace_rb **out)
{
	int err;
	if (!out || fd < 0)
		return rt_error(RINGTRACE_EINVAL, "ringtrace_rb_attach_fd: invalid fd or NULL out");
	*out = NULL;
	struct stat stb;
	if (fstat(fd, &stb) < 0)
		return rt_error(RINGTRACE_ESYS, "attach: fstat(fd %d): %s", fd, strerror(errno));
	if ((size_t)stb.st_size < sizeof(struct rt_shm))
		return rt_error(RINGTRACE_ECORRUPT,
				"attach: fd %d is %lld bytes, too small for a ringtrace buffer", fd,
				(long long)stb.st_size);
	size_t size = (size_t)stb.st_size;
	char *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		return rt_error(RINGTRACE_ESYS, "attach: mmap of %zu bytes: %s", size,
				strerror(errno));
	struct rt_shm *shm = (struct rt_shm *)base;
	const char *why = NULL;
	if (RT_LOAD_ACQ(&shm->magic) != RT_SHM_MAGIC)
		why = "bad magic at offset 0 (not a ringtrace buffer)";
	else if (shm->version != RT_SHM_VERSION)
		why = "unsupported version at offset 8";
	else if (shm->total_size != size)
		why = "total_size does not match the object's size";
	else if (shm->page_size < RINGTRACE_RB_MIN_PAGE_SIZE ||
		 shm->page_size > RINGTRACE_RB_MAX_PAGE_SIZE ||
		 (shm->page_size & (shm->page_size - 1)) || shm->npages < RINGTRACE_RB_MIN_PAGES ||
		 shm->max_writers < 1 || shm->qcap < shm->npages || (shm->qcap & (shm->qcap - 1)))
		why = "invalid geometry in the control block";
	else if (shm->off_pages + (uint64_t)shm->npages * shm->page_size > size ||
		 shm->off_slots + (uint64_t)shm->max_writers * sizeof(struct rt_slot) >
			 shm->off_pages ||
		 shm->off_qcells + (uint64_t)shm->qcap * sizeof(struct rt_qcell) > shm->off_pages ||
		 shm->off_gen + (uint64_t)shm->npages * 8 > shm->off_pages ||
		 shm->off_free_next + (uint64_t)shm->npages * 4 > shm->off_pages ||
		 shm->off_slots < sizeof(struct rt_shm) ||
		 shm->off_qcells < sizeof(struct rt_shm) ||
		 shm->off_free_next < sizeof(struct rt_shm) ||
		 shm->off_gen < sizeof(struct rt_shm) || shm->off_pages % 4096)
		why = "region offsets out of bounds";
	if (why) {
		munmap(base, size);
		return rt_error(RINGTRACE_ECORRUPT, "attach: fd %d: %s", fd, why);
	}
	struct ringtrace_rb *rb = calloc(1, sizeof(*rb));
	if (!rb) {
		munmap(base, size);
		return rt_error(RINGTRACE_ENOMEM, "attach: out of memory");
	}
	rt_bind(rb, base);
	rb->fd = dup(fd);
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
	    RT_LOAD(&shm->creator_mb_cmd) == MEMBARRIER_CMD_GLOBAL_EXPEDITED)
		rb->mb_cmd = MEMBARRIER_CMD_GLOBAL_EXPEDITED;
	else if (q > 0 && (q & MEMBARRIER_CMD_GLOBAL))
		rb->mb_cmd = MEMBARRIER_CMD_GLOBAL;
	(void)err;
	rt_error_clear();
	*out = rb;
	return 0;
}

int ringtrace_rb_attach_name(const char *shm_name, ringtrace_rb **out)
{
	if (!shm_name || !out)
		return rt_error(RINGTRACE_EINVAL, "ringtrace_rb_attach_name: NULL argument");
	int fd = shm_open(shm_name, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0)
		return rt_error(RINGTRACE_ESYS, "shm_open(\"%s\"): %s", shm_name, strerror(errno));
	int err = ringtrace_rb_attach_fd(fd, out);
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
	return rb->shm->npages;
}

enum ringtrace_rb_mode ringtrace_rb_mode(const ringtrace_rb *rb)
{
	return (enum ringtrace_rb_mode)rb->shm->mode;
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
