/*
 * libFuzzer harness for pools as untrusted input (ring_internal.h,
 * "UNTRUSTED POOLS"): a real pool image, mutated by the input, is read the
 * way a reader in another process reads one (attach, live stats, drain
 * with every event decoded, flush, snapshot, a recover-style drain of the
 * orphan pages), and, in another mode, a live pool of this process is
 * damaged under its own writers and reader. Whatever the bytes, nothing
 * may crash, read or write out of bounds (ASan, UBSan), or loop without
 * bound (-timeout).
 *
 * The image is made once: a pool in a memfd (4 KiB pages, 32 of them, 8
 * writer slots) where three threads wrote events of every length: one
 * holds a page in flight (its slot active, its page partly written), one
 * released its writer (its last page published), one had its page taken
 * by a flush; and the reader holds one page (in no list: an orphan, as a
 * recorder that died leaves it). The threads then exit: in the image their
 * slots name threads that are gone, which a flush reclaims.
 *
 * Input:  flags:u8  [size:u32 le, if flags & 3]  patch*
 *   flags & 1   truncate or extend the object to `size` (mod twice the
 *               image's size) after attach: the reader's SIGBUS guard
 *   flags & 2   the same before attach: attach's size checks
 *   flags & 4   live mode: a pool of this process (same geometry), written
 *               by this thread, damaged by the patches between two
 *               batches of events, then flushed, drained and counted
 *   patch:  region:u8 (mod 6: control block, slots, FIFO cells, free-list
 *           links, generations, pages) off:u24 le (mod the region's size)
 *           len:u8 (len & 15) + 1 bytes
 *
 *   fuzz_pool CORPUS -max_total_time=60 -timeout=10 -close_fd_mask=2
 *
 * (make check-fuzz builds it with clang, ASan and UBSan and seeds CORPUS.)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <ringtrace/format.h>
#include <ringtrace/ring.h>

#include "../pool_layout.h"

#define PS 4096u
#define NPAGES 32u

static char *image;
static size_t image_size;
static uint64_t region_off[6], region_len[6];

static void die(const char *what)
{
	fprintf(stderr, "fuzz_pool: %s: %s\n", what, ringtrace_last_error());
	abort();
}

static void config(struct ringtrace_rb_config *cfg)
{
	ringtrace_rb_config_init(cfg);
	cfg->page_size = PS;
	cfg->pool_size = (size_t)PS * NPAGES;
	cfg->max_writers = 8;
	cfg->flush_interval_ms = 1;
}

/* ---- the image -------------------------------------------------------------- */

static ringtrace_rb *img_rb;
static pthread_mutex_t img_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t img_cond = PTHREAD_COND_INITIALIZER;
static int img_parked, img_go;

static void write_events(ringtrace_rb *rb, unsigned n, unsigned salt)
{
	uint8_t buf[256];
	for (unsigned i = 0; i < n; i++) {
		size_t len = (i * 37 + salt) % 200;
		memset(buf, (int)(i + salt), len);
		ringtrace_rb_write(rb, 1 + (i + salt) % 100, buf, len);
	}
}

/* A writer: writes, does what `how` says, parks until the image is taken. */
static void *img_writer(void *arg)
{
	int how = (int)(intptr_t)arg;
	write_events(img_rb, how == 0 ? 300 : how == 1 ? 80 : 150, (unsigned)how * 11);
	if (how == 1)
		ringtrace_rb_writer_release(img_rb);
	pthread_mutex_lock(&img_lock);
	img_parked++;
	pthread_cond_broadcast(&img_cond);
	while (!img_go)
		pthread_cond_wait(&img_cond, &img_lock);
	pthread_mutex_unlock(&img_lock);
	return NULL;
}

static void make_image(void)
{
	struct ringtrace_rb_config cfg;
	config(&cfg);
	if (ringtrace_rb_create(&cfg, &img_rb) < 0)
		die("create");
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		if (pthread_create(&t[i], NULL, img_writer, (void *)(intptr_t)i) != 0)
			die("pthread_create");
	pthread_mutex_lock(&img_lock);
	while (img_parked < 3)
		pthread_cond_wait(&img_cond, &img_lock);
	pthread_mutex_unlock(&img_lock);
	/* idle writers' pages taken by a flush; one page held by the reader */
	ringtrace_rb_flush(img_rb, 0);
	const struct ringtrace_page_header *held = ringtrace_rb_get_page(img_rb);
	if (!held)
		die("no page published");
	write_events(img_rb, 40, 7); /* this thread's page, in flight */
	size_t size;
	char *b = pl_map(ringtrace_rb_fd(img_rb), &size);
	if (!b)
		die("map");
	image = malloc(size);
	if (!image)
		die("malloc");
	memcpy(image, b, size);
	image_size = size;
	munmap(b, size);
	pthread_mutex_lock(&img_lock);
	img_go = 1;
	pthread_cond_broadcast(&img_cond);
	pthread_mutex_unlock(&img_lock);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	ringtrace_rb_put_page(img_rb, held);
	ringtrace_rb_writer_release(img_rb);
	ringtrace_rb_destroy(img_rb);
	/* the regions, from the image's (clean) control block */
	uint64_t end = pl_u64(image, PL_TOTAL_SIZE);
	uint64_t offs[6] = {0,
			    pl_u64(image, PL_OFF_SLOTS),
			    pl_u64(image, PL_OFF_QCELLS),
			    pl_u64(image, PL_OFF_FREE_NEXT),
			    pl_u64(image, PL_OFF_GEN),
			    pl_u64(image, PL_OFF_PAGES)};
	for (int i = 0; i < 6; i++) {
		region_off[i] = offs[i];
		region_len[i] = (i < 5 ? offs[i + 1] : end) - offs[i];
	}
}

/* ---- inputs ------------------------------------------------------------------- */

struct input {
	const uint8_t *p;
	size_t n;
};

static int take(struct input *in, void *dst, size_t n)
{
	if (in->n < n)
		return 0;
	memcpy(dst, in->p, n);
	in->p += n;
	in->n -= n;
	return 1;
}

/* Apply the patches to the pool mapped at b. */
static void apply_patches(char *b, struct input in)
{
	uint8_t hdr[5];
	while (take(&in, hdr, sizeof(hdr))) {
		unsigned r = hdr[0] % 6;
		uint64_t off = (uint64_t)hdr[1] | (uint64_t)hdr[2] << 8 | (uint64_t)hdr[3] << 16;
		size_t len = (size_t)(hdr[4] & 15) + 1;
		if (region_len[r] == 0)
			continue;
		off = region_off[r] + off % region_len[r];
		if (off + len > image_size)
			len = image_size - off;
		uint8_t bytes[16];
		if (!take(&in, bytes, len))
			return;
		memcpy(b + off, bytes, len);
	}
}

/* Decode every event of a page (checked first, as every reader must). */
static uint64_t decode_page(const struct ringtrace_page_header *p)
{
	if (ringtrace_page_check(p, PS) < 0)
		return 0;
	struct ringtrace_page_cursor c;
	struct ringtrace_event ev;
	uint64_t n = 0, sum = 0;
	ringtrace_page_cursor_init(&c, p);
	while (ringtrace_page_next(&c, &ev) == 1) {
		const uint8_t *d = ev.data;
		for (uint32_t i = 0; i < ev.len; i++)
			sum += d[i]; /* every payload byte read: ASan checks each */
		n++;
	}
	return n + (sum & 1);
}

/*
 * Everything a reader does with a pool, bounded: no loop here may go on
 * for long unless the library hands out pages without end, which is a
 * finding (abort).
 */
static void read_pool(ringtrace_rb *rb)
{
	struct ringtrace_rb_stats st;
	ringtrace_rb_get_stats(rb, &st);
	struct ringtrace_rb_writer_stats ws[16];
	ringtrace_rb_get_writer_stats(rb, ws, 16);
	ringtrace_rb_refresh_comm(rb);
	ringtrace_snapshot *snap = NULL;
	if (ringtrace_rb_snapshot(rb, &snap) == 0) {
		struct ringtrace_event ev;
		uint64_t n = 0;
		while (ringtrace_snapshot_next(snap, &ev) == 1)
			if (++n > (uint64_t)NPAGES * 2 * PS)
				die("snapshot: more events than the pool can hold");
		for (uint32_t i = 0; i < ringtrace_snapshot_page_count(snap); i++)
			decode_page(ringtrace_snapshot_page(snap, i));
		ringtrace_snapshot_free(snap);
	}
	/* recover: the orphans first, then the dead writers' pages, then the queue */
	uint32_t idx[NPAGES];
	uint32_t n = ringtrace_rb_orphan_pages(rb, idx, NPAGES);
	/* (recover's checks first: live writers, the drops beyond the pages) */
	ringtrace_rb_live_writers(rb, NULL, NULL);
	struct ringtrace_rb_stream_drops drops[8];
	if (ringtrace_rb_stream_drops(rb, drops, 8, NULL) > (int)(64 * 1024 + 4096))
		die("stream_drops: more streams than slots and tails");
	static uint64_t copy[PS / 8];
	for (uint32_t i = 0; i < n && i < NPAGES; i++) {
		const struct ringtrace_page_header *p = ringtrace_rb_page_at(rb, idx[i]);
		if (p)
			decode_page(p);
		/* an orphan whose header was never finalized, as recover does */
		if (p && p->events == 0) {
			memcpy(copy, p, PS);
			struct ringtrace_page_header *c = (struct ringtrace_page_header *)copy;
			if (ringtrace_page_finalize_orphan(c, PS) &&
			    ringtrace_page_check(c, PS) == 0)
				decode_page(c);
		}
	}
	ringtrace_rb_flush(rb, 0);
	const struct ringtrace_page_header *p;
	unsigned pages = 0;
	while ((p = ringtrace_rb_get_page(rb)) != NULL) {
		if (ringtrace_page_check(p, PS) < 0)
			die("get_page handed out a page that fails its checks");
		decode_page(p);
		ringtrace_rb_put_page(rb, p);
		if (++pages > 4 * NPAGES + 64)
			die("get_page: more pages than the FIFO and the slots can hold");
	}
	ringtrace_rb_reader *r;
	if (ringtrace_rb_reader_open(rb, &r) == 0) {
		struct ringtrace_event ev;
		uint64_t k = 0;
		while (ringtrace_rb_reader_next(r, &ev) == 1)
			if (++k > (uint64_t)NPAGES * PS)
				die("reader: more events than the pool can hold");
		ringtrace_rb_reader_close(r);
	}
	ringtrace_rb_get_stats(rb, &st);
	ringtrace_rb_damaged(rb);
}

/* The image, mutated, read by an attached reader. */
static void run_attached(uint8_t flags, uint32_t size, struct input in)
{
	int fd = memfd_create("fuzz_pool", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)image_size) != 0)
		die("memfd");
	char *b = mmap(NULL, image_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (b == MAP_FAILED)
		die("mmap");
	memcpy(b, image, image_size);
	apply_patches(b, in);
	munmap(b, image_size);
	off_t newsize = (off_t)(size % (2 * image_size));
	if ((flags & 2) && ftruncate(fd, newsize) != 0)
		die("ftruncate");
	ringtrace_rb *rb = NULL;
	if (ringtrace_rb_attach_fd(fd, &rb) == 0) {
		if ((flags & 1) && ftruncate(fd, newsize) != 0)
			die("ftruncate");
		read_pool(rb);
		ringtrace_rb_destroy(rb);
	} else if (!ringtrace_last_error()[0]) {
		die("attach refused without saying why");
	}
	close(fd);
}

/*
 * A pool of this process, damaged under its writer (this thread) and its
 * reader: events before and after, a flush, a drain, the stats.
 */
static void run_live(struct input in)
{
	struct ringtrace_rb_config cfg;
	config(&cfg);
	ringtrace_rb *rb = NULL;
	if (ringtrace_rb_create(&cfg, &rb) < 0)
		die("create");
	write_events(rb, 100, 3);
	size_t size;
	char *b = pl_map(ringtrace_rb_fd(rb), &size);
	if (!b)
		die("map");
	apply_patches(b, in);
	write_events(rb, 400, 5);
	ringtrace_rb_flush(rb, 0);
	read_pool(rb);
	write_events(rb, 50, 9);
	ringtrace_rb_writer_release(rb);
	read_pool(rb);
	munmap(b, size);
	ringtrace_rb_destroy(rb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	if (!image)
		make_image();
	struct input in = {data, n};
	uint8_t flags = 0;
	uint32_t size = 0;
	if (!take(&in, &flags, 1))
		flags = 0;
	if ((flags & 3) && !take(&in, &size, 4))
		return 0;
	if (flags & 4)
		run_live(in);
	else
		run_attached(flags, size, in);
	return 0;
}
