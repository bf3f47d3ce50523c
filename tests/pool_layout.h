/*
 * tests/pool_layout.h - the byte layout of a pool (docs/format.md section
 * 6), as a process that maps one sees it: for tests that damage a pool on
 * purpose (test_ring_untrusted, hostile_prog, fuzz_pool). Written from the
 * documentation, not from the library's structures, so that these tests
 * check the documented layout as well.
 */
#ifndef RINGTRACE_TESTS_POOL_LAYOUT_H
#define RINGTRACE_TESTS_POOL_LAYOUT_H

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

/* Control block: offsets of its fields. */
#define PL_MAGIC 0
#define PL_VERSION 8
#define PL_PAGE_SIZE 12
#define PL_NPAGES 16
#define PL_MAX_WRITERS 20
#define PL_MODE 24
#define PL_FLUSH_MS 28
#define PL_QCAP 32
#define PL_CLOCK_IS_TSC 36
#define PL_CLOCK_FREQ 40
#define PL_TOTAL_SIZE 64
#define PL_OFF_SLOTS 72
#define PL_OFF_QCELLS 80
#define PL_OFF_FREE_NEXT 88
#define PL_OFF_GEN 96
#define PL_OFF_PAGES 104
#define PL_FREE_HEAD 128
#define PL_FREE_COUNT 136
#define PL_ENQ_POS 192
#define PL_DEQ_POS 256
#define PL_CELLS_EMPTY 368

/* Writer slot (128 bytes): offsets in a slot. */
#define PL_SLOT_SIZE 128
#define PL_SLOT_NEST 0
#define PL_SLOT_STEAL 4
#define PL_SLOT_STATE 8
#define PL_SLOT_CUR_PAGE 12
#define PL_SLOT_HIT 16
#define PL_SLOT_TID 48
#define PL_SLOT_PID 52
#define PL_SLOT_OVERRUN 64 /* tagged: the stream's tag in the top 16 bits */
#define PL_SLOT_COOKIE 104
#define PL_SLOT_OVERRUN_OWN 120

/* FIFO cell (16 bytes): u64 seq, u32 page. */
#define PL_CELL_SIZE 16

static inline uint32_t pl_u32(const char *base, uint64_t off)
{
	uint32_t v;
	memcpy(&v, base + off, 4);
	return v;
}

static inline uint64_t pl_u64(const char *base, uint64_t off)
{
	uint64_t v;
	memcpy(&v, base + off, 8);
	return v;
}

static inline void pl_set_u32(char *base, uint64_t off, uint32_t v)
{
	__atomic_store_n((uint32_t *)(void *)(base + off), v, __ATOMIC_RELEASE);
}

static inline void pl_set_u64(char *base, uint64_t off, uint64_t v)
{
	__atomic_store_n((uint64_t *)(void *)(base + off), v, __ATOMIC_RELEASE);
}

/* Where things are, from the control block. */
static inline uint64_t pl_slot(const char *base, uint32_t i)
{
	return pl_u64(base, PL_OFF_SLOTS) + (uint64_t)i * PL_SLOT_SIZE;
}

static inline uint64_t pl_cell(const char *base, uint64_t pos)
{
	uint32_t qcap = pl_u32(base, PL_QCAP);
	return pl_u64(base, PL_OFF_QCELLS) + (pos & (qcap - 1)) * PL_CELL_SIZE;
}

static inline uint64_t pl_page(const char *base, uint32_t i)
{
	return pl_u64(base, PL_OFF_PAGES) + (uint64_t)i * pl_u32(base, PL_PAGE_SIZE);
}

/* Map a pool's fd read-write: its base, *size its size; NULL on error. */
static inline char *pl_map(int fd, size_t *size)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return NULL;
	void *p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return NULL;
	*size = (size_t)st.st_size;
	return (char *)p;
}

#endif /* RINGTRACE_TESTS_POOL_LAYOUT_H */
