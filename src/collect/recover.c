/*
 * Recovery: turn what a dead program left into a trace (`ringtrace
 * recover [SHM] DIR`, and `ringtrace record` when its program dies).
 *
 * A program recording with a named pool (RINGTRACE_SHM; `ringtrace record`
 * always names it) keeps, while it runs, an up-to-date `metadata` in its
 * output directory (every event's and printf site's schema, rewritten
 * when one registers; src/record/session.c) and writes completed pages to
 * the stream files (discard mode). When it dies without stopping its
 * session (a crash, SIGKILL, _exit), the rest of its events are still in
 * the shared pool: the pages queued for the recorder and each thread's
 * current page up to its last committed event. Recovery maps the pool,
 * reclaims the dead writers' pages (ringtrace_rb_flush publishes the
 * committed part of a page whose process is gone; an event that was being
 * written is not committed and is not kept), appends every page to its
 * stream file, and adds the pool's accounting to the metadata (`stat`
 * lines, and `stat recovered N`, the pages recovered). `ringtrace record`
 * does this by itself when its program dies.
 *
 * Recovery cannot harm a trace: before anything is written,
 * the trace must be unfinished (no `stat` lines: refused even with
 * --force), the directory unlocked (the recorder's lock is taken), the
 * pool the trace's own (the same uuid in the pool's control block and the
 * metadata) and its writers gone (the flush's liveness judgement); the
 * last two can be overridden with --force. Nothing already in the trace
 * is cut or rewritten: a stream file that ends inside a page is set aside
 * unchanged (prepare_stream). Pages a dead flusher took without
 * finalizing their header are finalized from their commit offset.
 *
 * What can be lost: printf sites first called in the last milliseconds
 * (their format not yet in the metadata), and the events after the cut
 * of a page the recorder was writing when it died, if the pool no longer
 * holds that page.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect/collect_api.h"
#include "ringtrace/ctf.h"
#include "ringtrace/format.h"
#include "ringtrace/ring.h"

/* Total size of the stream files in dir (regular files only: a symbolic
 * link is not followed) into *n: 0, or -1 with a message. */
static int streams_bytes(const char *dir, uint64_t *n)
{
	DIR *d = opendir(dir);
	*n = 0;
	if (!d) {
		fprintf(stderr, "ringtrace recover: %s: %s (listing the stream files)\n", dir,
			strerror(errno));
		return -1;
	}
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, "stream_", 7) != 0)
			continue;
		struct stat st;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode))
			*n += (uint64_t)st.st_size;
	}
	closedir(d);
	return 0;
}

/*
 * The accounting of the pool into the metadata's `stat` lines (replacing
 * those there), the rest of the metadata as it was: rewritten from its
 * schema block by the ctf layer, under a temporary name, and renamed.
 */
static int patch_metadata(const char *dir, const struct ringtrace_rb_stats *s, uint64_t pages,
			  uint64_t bytes, unsigned mode, uint64_t recovered,
			  const struct ringtrace_trace_drops *drops, uint32_t ndrops)
{
	const struct ringtrace_trace_stat st[] = {
		{"hit", s->hit},   {"missed", s->missed},    {"overrun", s->overrun},
		{"read", s->read}, {"pages", pages},         {"bytes", bytes},
		{"mode", mode},    {"recovered", recovered},
	};
	if (ringtrace_ctf_set_stats_drops(dir, st, (uint32_t)(sizeof(st) / sizeof(st[0])), drops,
					  ndrops) < 0) {
		fprintf(stderr, "ringtrace recover: %s\n", ringtrace_last_error());
		return -1;
	}
	return 0;
}

/*
 * The state of one recovery: the streams whose files were looked at (a
 * stream file that ends inside a page is set aside before the first page
 * is added to it), and the orphan pages (for the set-aside page's copy).
 */
struct rcv {
	const char *dir;
	size_t ps;
	int quiet;
	uint64_t *seen;
	uint32_t nseen, cap;
	const struct ringtrace_page_header **orph;
	uint32_t norph;
	uint64_t set_aside, salvaged; /* files set aside, events salvaged from their tails */
	uint64_t finalized;           /* events of orphan pages whose header was never final */
};

/*
 * The complete events at the start of the page cut off at the end of the
 * set-aside file (`tail` bytes of it in page, the rest zero), made a whole
 * page: its header's counts and content end say what is there. 1 made, 0
 * nothing to save (no whole header, no complete event, or not a page of
 * this stream).
 */
static int salvage_tail(struct ringtrace_page_header *h, size_t tail, size_t ps, uint64_t stream)
{
	if (tail < RINGTRACE_PAGE_HEADER_SIZE || h->magic != RINGTRACE_PAGE_MAGIC ||
	    h->stream_instance_id != stream || h->packet_size != (uint64_t)ps * 8 ||
	    h->content_size < RINGTRACE_PAGE_HEADER_SIZE * 8u || h->content_size > h->packet_size)
		return 0;
	struct ringtrace_page_cursor c;
	ringtrace_page_cursor_init(&c, h);
	if (c.end > tail)
		c.end = (uint32_t)tail;
	struct ringtrace_event ev;
	uint32_t n = 0, end = RINGTRACE_PAGE_HEADER_SIZE;
	uint64_t last = h->timestamp_begin;
	/* (bounded: each step moves forward within c.end) */
	while (ringtrace_page_next(&c, &ev) == 1) {
		n++;
		end = (uint32_t)((const char *)ev.data - (const char *)h) + ev.len;
		last = ev.ts;
	}
	if (n == 0)
		return 0;
	memset((char *)h + end, 0, ps - end);
	h->events = n;
	h->content_size = (uint64_t)end * 8;
	h->commit = end;
	if (h->timestamp_end < last)
		h->timestamp_end = last;
	return ringtrace_page_check(h, ps) == 0;
}

/*
 * Before the first page of `stream` is added: if its file ends inside a
 * page, set it aside (ringtrace_ctf_set_aside_partial: renamed unchanged,
 * its whole pages copied to a new stream_N), then add the complete events
 * of the cut page unless the pool still holds that page whole (an orphan:
 * the recorder's page being written), which is then added in its turn.
 * 0, or -1 with a message.
 */
static int prepare_stream(struct rcv *r, uint64_t stream)
{
	for (uint32_t i = 0; i < r->nseen; i++)
		if (r->seen[i] == stream)
			return 0;
	if (r->nseen == r->cap) {
		uint32_t cap = r->cap ? 2 * r->cap : 64;
		uint64_t *n = realloc(r->seen, cap * sizeof(*n));
		if (!n) {
			fprintf(stderr,
				"ringtrace recover: %s: out of memory (listing the streams)\n",
				r->dir);
			return -1;
		}
		r->seen = n;
		r->cap = cap;
	}
	r->seen[r->nseen++] = stream;
	char aside[64];
	int set = ringtrace_ctf_set_aside_partial(r->dir, stream, r->ps, aside, sizeof(aside));
	if (set < 0) {
		fprintf(stderr, "ringtrace recover: %s\n", ringtrace_last_error());
		return -1;
	}
	if (set == 0)
		return 0;
	r->set_aside++;
	int fd = ringtrace_ctf_open_file(r->dir, aside);
	struct stat st;
	struct ringtrace_page_header *h = calloc(1, r->ps);
	int rc = 0;
	if (fd >= 0 && h && fstat(fd, &st) == 0) {
		size_t tail = (size_t)(st.st_size % (off_t)r->ps);
		ssize_t got = pread(fd, h, tail, st.st_size - (off_t)tail);
		int whole_in_pool = 0;
		for (uint32_t i = 0; got == (ssize_t)tail && i < r->norph; i++)
			if (tail >= RINGTRACE_PAGE_HEADER_SIZE &&
			    r->orph[i]->stream_instance_id == stream &&
			    r->orph[i]->packet_seq_num == h->packet_seq_num)
				whole_in_pool = 1;
		uint32_t n = 0;
		if (got == (ssize_t)tail && !whole_in_pool &&
		    salvage_tail(h, tail, r->ps, stream)) {
			n = h->events;
			if (ringtrace_ctf_append_page(r->dir, h, r->ps) < 0) {
				fprintf(stderr, "ringtrace recover: %s\n", ringtrace_last_error());
				rc = -1;
			} else {
				r->salvaged += n;
			}
		}
		if (!r->quiet)
			fprintf(stderr,
				"ringtrace recover: %s/stream_%llu ends inside a page (%zu of %zu "
				"bytes): kept unchanged as %s, its whole pages copied to a new "
				"stream_%llu%s (%u events of the cut page saved)\n",
				r->dir, (unsigned long long)stream, tail, r->ps, aside,
				(unsigned long long)stream,
				whole_in_pool ? "; the pool holds that page whole" : "", n);
	} else {
		fprintf(stderr, "ringtrace recover: %s/%s: %s\n", r->dir, aside,
			fd < 0 ? ringtrace_last_error()
			: h    ? strerror(errno)
			       : "out of memory");
	}
	if (fd >= 0)
		close(fd);
	free(h);
	return rc;
}

/*
 * Every stream file of the trace that ends inside a page is set aside
 * first, whether or not the pool has pages of its stream: a file cut
 * inside a packet makes babeltrace2 refuse the whole trace. 0, or -1.
 */
static int prepare_all(struct rcv *r)
{
	DIR *d = opendir(r->dir);
	if (!d) {
		fprintf(stderr, "ringtrace recover: %s: %s (listing the stream files)\n", r->dir,
			strerror(errno));
		return -1;
	}
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (e = readdir(d)) != NULL) {
		const char *n = e->d_name;
		if (strncmp(n, "stream_", 7) != 0 || !n[7] || strlen(n + 7) > 19 ||
		    strspn(n + 7, "0123456789") != strlen(n + 7))
			continue;
		/* An empty file is one a killed recorder had just made, before
		 * its stream's first page went in: it holds nothing, and a
		 * finished trace has no empty stream file (the reader calls
		 * one damage). Its pages, if the pool has any, make it anew. */
		struct stat st;
		if (fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
		    st.st_size == 0) {
			if (unlinkat(dirfd(d), n, 0) != 0) {
				fprintf(stderr,
					"ringtrace recover: %s/%s: %s (removing the empty file)\n",
					r->dir, n, strerror(errno));
				rc = -1;
			}
			continue;
		}
		errno = 0;
		unsigned long long id = strtoull(n + 7, NULL, 10);
		if (errno == 0)
			rc = prepare_stream(r, id);
	}
	closedir(d);
	return rc;
}

/* Append one page to its stream file: 0, or -1 with a message. */
static int append_page(struct rcv *r, const struct ringtrace_page_header *p)
{
	if (prepare_stream(r, p->stream_instance_id) < 0)
		return -1;
	if (ringtrace_ctf_append_page(r->dir, p, r->ps) < 0) {
		fprintf(stderr, "ringtrace recover: %s\n", ringtrace_last_error());
		return -1;
	}
	return 0;
}

/* The last packet sequence number in stream N's file (-1: none), read
 * from its last whole page; the file is only read. */
static int64_t last_seq(const char *dir, uint64_t stream, size_t ps)
{
	char name[40];
	snprintf(name, sizeof(name), "stream_%llu", (unsigned long long)stream);
	int fd = ringtrace_ctf_open_file(dir, name);
	if (fd < 0)
		return -1;
	struct stat st;
	int64_t seq = -1;
	if (fstat(fd, &st) == 0) {
		off_t whole = st.st_size - st.st_size % (off_t)ps;
		struct ringtrace_page_header h;
		if (whole >= (off_t)ps &&
		    pread(fd, &h, sizeof(h), whole - (off_t)ps) == (ssize_t)sizeof(h))
			seq = (int64_t)h.packet_seq_num;
	}
	close(fd);
	return seq;
}

static int cmp_page(const void *a, const void *b)
{
	const struct ringtrace_page_header *x = *(const struct ringtrace_page_header *const *)a;
	const struct ringtrace_page_header *y = *(const struct ringtrace_page_header *const *)b;
	if (x->stream_instance_id != y->stream_instance_id)
		return x->stream_instance_id < y->stream_instance_id ? -1 : 1;
	return x->packet_seq_num < y->packet_seq_num ? -1 : x->packet_seq_num > y->packet_seq_num;
}

/*
 * Every page the pool still holds, appended to its stream file in
 * per-stream packet_seq_num order, skipping those a stream file already
 * ends with: first the pages a dead reader or flusher had taken and that
 * are in no list (the recorder's page being saved, a writer's page being
 * handed over, whose header may never have been finalized: then it is
 * finalized here from its commit offset), then the dead writers' current
 * pages (published by a flush) and the queue. All are sorted together: a
 * writer's page that a flush took is newer than the pages of its stream
 * still queued. Returns pages saved, or -1.
 */
static int save_pages(ringtrace_rb *rb, struct rcv *r)
{
	size_t ps = r->ps;
	uint32_t np = ringtrace_rb_page_count(rb);
	uint32_t *idx = calloc(np ? np : 1, sizeof(*idx));
	/* (each page of the pool at most once: orphans, then the queue) */
	const struct ringtrace_page_header **pg = calloc(2 * (size_t)np + 1, sizeof(*pg));
	const struct ringtrace_page_header **got = calloc((size_t)np + 1, sizeof(*got));
	/* (copies of the orphans finalized here) */
	void **own = calloc(np ? np : 1, sizeof(*own));
	uint32_t k = 0, nown = 0, ngot = 0;
	int saved = 0;
	if (!idx || !pg || !got || !own) {
		fprintf(stderr, "ringtrace recover: %s: out of memory (listing the pool's pages)\n",
			r->dir);
		saved = -1;
		goto out;
	}
	uint32_t n = ringtrace_rb_orphan_pages(rb, idx, np);
	for (uint32_t i = 0; i < n && i < np; i++) {
		const struct ringtrace_page_header *p = ringtrace_rb_page_at(rb, idx[i]);
		if (!p)
			continue;
		/* A page whose header its taker never finalized (it died in the
		 * middle of the handover): finalized from its commit offset. */
		if (p->events == 0 && (own[nown] = malloc(ps)) != NULL) {
			memcpy(own[nown], p, ps);
			r->finalized += ringtrace_page_finalize_orphan(own[nown], ps);
			p = own[nown++];
		}
		/* only pages that hold events and pass every check */
		if (ringtrace_page_check(p, ps) == 0 && p->events > 0)
			pg[k++] = p;
	}
	r->orph = pg;
	r->norph = k;
	/* Publishes the committed part of every dead writer's page. */
	ringtrace_rb_flush(rb, 0);
	const struct ringtrace_page_header *p;
	while (ngot <= np && (p = ringtrace_rb_get_page(rb)) != NULL) {
		got[ngot++] = p;
		if (k < 2 * np + 1)
			pg[k++] = p;
	}
	qsort(pg, k, sizeof(*pg), cmp_page);
	/* (a file cut inside a page is set aside first, with the orphans
	 * known: prepare_stream) */
	if (prepare_all(r) < 0)
		saved = -1;
	r->orph = NULL;
	r->norph = 0;
	for (uint32_t i = 0; saved >= 0 && i < k; i++) {
		if (prepare_stream(r, pg[i]->stream_instance_id) < 0) {
			saved = -1;
			break;
		}
		if ((int64_t)pg[i]->packet_seq_num <=
		    last_seq(r->dir, pg[i]->stream_instance_id, ps))
			continue; /* saved before the program died */
		if (append_page(r, pg[i]) < 0) {
			saved = -1;
			break;
		}
		saved++;
	}
out:
	/* Pages taken from the queue go back to the free list only once
	 * saved: after a failure they stay in no list, where the next
	 * recover finds them as a dead reader's (its orphans), and saves
	 * those not saved yet. */
	for (uint32_t i = 0; saved >= 0 && i < ngot; i++)
		ringtrace_rb_put_page(rb, got[i]);
	for (uint32_t i = 0; i < nown; i++)
		free(own[i]);
	free(own);
	free(got);
	free(idx);
	free(pg);
	return saved;
}

int co_pool_attach(const char *shm, uid_t owner, ringtrace_rb **out, char *err, size_t errsize)
{
	*out = NULL;
	int fd = shm_open(shm, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errsize, "cannot map the pool %s: %s", shm, strerror(errno));
		return -1;
	}
	/* The object must be the one the program made: created O_EXCL, 0600,
	 * by the program's user. One that someone else made at that name (to
	 * feed us a forged pool, or to read what we write into it) is not. */
	struct stat st;
	const char *why = NULL;
	if (fstat(fd, &st) < 0) {
		snprintf(err, errsize, "the pool %s: fstat: %s", shm, strerror(errno));
		close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode))
		why = "not a shared-memory object";
	else if (st.st_uid != owner)
		why = "owned by another user";
	else if (st.st_mode & 077)
		why = "open to other users";
	if (why) {
		snprintf(err, errsize,
			 "the pool %s is not the one the program made: %s (uid %u, mode %04o; "
			 "expected uid %u, mode 0600)",
			 shm, why, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
			 (unsigned)owner);
		close(fd);
		return -1;
	}
	int r = ringtrace_rb_attach_fd(fd, out);
	close(fd);
	if (r < 0) {
		snprintf(err, errsize, "cannot map the pool %s: %s", shm, ringtrace_last_error());
		return -1;
	}
	return 0;
}

static void uuid_str(char out[37], const uint8_t u[16])
{
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
		 u[13], u[14], u[15]);
}

/*
 * The pool of the trace in dir, found by the uuid that both carry. Only
 * objects named ringtrace-* are looked at (`ringtrace record` names its
 * pools /ringtrace-rec-PID-RANDOM, where PID is the command's: after the
 * command and its program were both killed, nobody else knows the name),
 * and each is mapped only if co_pool_attach takes it (the trace owner's,
 * 0600), so that another user's object is never read.
 */
int co_find_pool(const char *dir, char *shm, size_t n, char *err, size_t errsize)
{
	struct ringtrace_ctf_info info;
	struct stat dst;
	if (ringtrace_ctf_get_info(dir, &info) < 0) {
		snprintf(err, errsize, "%s", ringtrace_last_error());
		return -1;
	}
	if (info.nstats) {
		snprintf(err, errsize,
			 "%s is a complete trace (its recorder stopped normally): it has no pool "
			 "left to recover from",
			 dir);
		return -1;
	}
	if (!info.has_uuid) {
		snprintf(err, errsize, "%s/metadata has no uuid: its pool cannot be told", dir);
		return -1;
	}
	if (stat(dir, &dst) < 0) {
		snprintf(err, errsize, "%s: %s", dir, strerror(errno));
		return -1;
	}
	DIR *d = opendir("/dev/shm");
	if (!d) {
		snprintf(err, errsize, "/dev/shm: %s", strerror(errno));
		return -1;
	}
	int found = 0;
	struct dirent *e;
	while (!found && (e = readdir(d)) != NULL) {
		char name[300], why[512];
		ringtrace_rb *rb;
		uint8_t pu[16];
		if (strncmp(e->d_name, "ringtrace-", 10) != 0 ||
		    (size_t)snprintf(name, sizeof(name), "/%s", e->d_name) >= sizeof(name) ||
		    co_pool_attach(name, dst.st_uid, &rb, why, sizeof(why)) < 0)
			continue;
		ringtrace_rb_uuid(rb, pu);
		ringtrace_rb_destroy(rb);
		if (memcmp(pu, info.uuid, 16) == 0 && strlen(name) < n) {
			memcpy(shm, name, strlen(name) + 1);
			found = 1;
		}
	}
	closedir(d);
	return found;
}

/*
 * Before anything is written: the trace must be unfinished and the pool
 * its own, with no writer left alive. 0, or 1 with a message (each says
 * what and, where an override makes sense, that --force overrides it).
 * The complete trace is refused whatever `force` says: its files are
 * final, and recovery would have to write into them.
 */
static int refuse(ringtrace_rb *rb, const char *shm, const char *dir, int force)
{
	struct ringtrace_ctf_info info;
	if (ringtrace_ctf_get_info(dir, &info) < 0) {
		fprintf(stderr, "ringtrace recover: %s\n", ringtrace_last_error());
		return 1;
	}
	if (info.nstats) {
		fprintf(stderr,
			"ringtrace recover: %s is a complete trace (its recorder stopped normally: "
			"the metadata has its stat lines); nothing is recovered into it, even with "
			"--force\n",
			dir);
		return 1;
	}
	uint8_t pu[16];
	ringtrace_rb_uuid(rb, pu);
	if (!info.has_uuid || memcmp(pu, info.uuid, 16) != 0) {
		char a[37] = "none", b[37];
		if (info.has_uuid)
			uuid_str(a, info.uuid);
		uuid_str(b, pu);
		fprintf(stderr,
			"ringtrace recover: the pool %s is not the one of the trace %s: the trace's "
			"uuid is %s, the pool's %s%s\n",
			shm, dir, a, b,
			force ? " (recovering anyway: --force)"
			      : "; --force recovers it anyway, if you know they belong together");
		if (!force)
			return 1;
	}
	uint32_t pid = 0, tid = 0;
	int live = ringtrace_rb_live_writers(rb, &pid, &tid);
	if (live < 0) {
		fprintf(stderr, "ringtrace recover: %s\n", ringtrace_last_error());
		return 1;
	}
	if (live > 0) {
		fprintf(stderr,
			"ringtrace recover: the pool %s has %d writer%s still alive (pid %u, thread "
			"%u): its program is running, and recovering would take its pages%s\n",
			shm, live, live == 1 ? "" : "s", pid, tid,
			force ? " (recovering anyway: --force; only idle pages are taken)"
			      : "; stop it first, or --force to recover its idle pages anyway");
		if (!force)
			return 1;
	}
	return 0;
}

int co_recover(const char *shm, const char *dir, int quiet, int force)
{
	char meta[4200];
	snprintf(meta, sizeof(meta), "%s/metadata", dir);
	if (access(meta, R_OK) != 0) {
		fprintf(stderr,
			"ringtrace recover: %s: %s (the program died before its recorder wrote one: "
			"without it nothing can be decoded)\n",
			meta, strerror(errno));
		return 1;
	}
	/* The recorder's lock: a program still recording there holds it (and
	 * its pages are its own), so does a second recover. */
	int lock = ringtrace_ctf_lock_dir(dir);
	if (lock < 0) {
		fprintf(stderr, "ringtrace recover: %s\n", ringtrace_last_error());
		return 1;
	}
	/* The pool belongs to whoever owns the trace: the same program made
	 * both. */
	struct stat dst;
	char why[512];
	ringtrace_rb *rb = NULL;
	int bad = fstat(lock, &dst) < 0;
	if (bad)
		snprintf(why, sizeof(why), "%s: %s", dir, strerror(errno));
	else
		bad = co_pool_attach(shm, dst.st_uid, &rb, why, sizeof(why)) < 0;
	if (bad) {
		fprintf(stderr, "ringtrace recover: %s\n", why);
		close(lock);
		return 1;
	}
	if (refuse(rb, shm, dir, force)) {
		ringtrace_rb_destroy(rb);
		close(lock);
		return 1;
	}
	size_t ps = ringtrace_rb_page_size(rb);
	struct rcv r = {.dir = dir, .ps = ps, .quiet = quiet};
	uint64_t recovered = 0;
	int rc = 0;
	/*
	 * The dead writers' drops that no page reports (after their last
	 * page, the pool full): read before the flush folds their slots into
	 * the pool's totals, for the metadata's `dropped` lines.
	 */
	struct ringtrace_trace_drops *drops = NULL;
	uint32_t ndrops = 0;
	int nd = ringtrace_rb_stream_drops(rb, NULL, 0, NULL);
	if (nd > 0) {
		struct ringtrace_rb_stream_drops *rd = calloc((size_t)nd, sizeof(*rd));
		drops = calloc((size_t)nd, sizeof(*drops));
		int got = rd && drops ? ringtrace_rb_stream_drops(rb, rd, (uint32_t)nd, NULL) : -1;
		for (int i = 0; i < got && i < nd; i++) {
			drops[ndrops].stream = rd[i].stream;
			drops[ndrops].tid = rd[i].tid;
			drops[ndrops++].dropped = rd[i].dropped;
		}
		free(rd);
	}
	int saved = save_pages(rb, &r);
	if (saved < 0)
		rc = 1;
	else
		recovered += (uint64_t)saved;
	struct ringtrace_rb_stats s;
	/* A damaged pool: what passed every check is recovered; say what. */
	if (ringtrace_rb_get_stats(rb, &s) < 0 && !quiet)
		fprintf(stderr,
			"ringtrace recover: %s; recovered what passed every check (%" PRIu64
			" damaged pages skipped)\n",
			ringtrace_last_error(), s.pages_skipped);
	else if (s.pages_skipped && !quiet)
		fprintf(stderr, "ringtrace recover: %" PRIu64 " damaged pages of %s skipped\n",
			s.pages_skipped, shm);
	unsigned mode = (unsigned)ringtrace_rb_mode(rb);
	ringtrace_rb_destroy(rb);
	free(r.seen);
	uint64_t bytes = 0;
	if (rc == 0 &&
	    (streams_bytes(dir, &bytes) < 0 ||
	     patch_metadata(dir, &s, bytes / ps, bytes, mode, recovered, drops, ndrops) < 0))
		rc = 1;
	free(drops);
	if (rc == 0 && !quiet && r.finalized)
		fprintf(stderr,
			"ringtrace recover: %" PRIu64
			" events were in pages whose header was never "
			"finalized (their taker died during a handover): finalized from their commit "
			"offset and recovered\n",
			r.finalized);
	if (rc == 0 && !quiet)
		fprintf(stderr,
			"ringtrace: recovered %" PRIu64 " pages from the pool %s into %s (%" PRIu64
			" events committed, %" PRIu64 " dropped, %" PRIu64 " overwritten)\n",
			recovered, shm, dir, s.hit, s.missed, s.overrun);
	close(lock);
	return rc;
}
