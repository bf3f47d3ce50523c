/*
 * Stream files: the packets of every stream_<N>, walked with the page
 * cursor (ringtrace/format.h), and all streams merged by timestamp with
 * the merge heap (src/base/heap.h).
 *
 * Nothing from the directory is trusted: only regular files are opened
 * (src/base/tdir.c: a FIFO, device, socket or symbolic link at a stream
 * name is an error naming it); a packet header is checked with
 * ringtrace_page_check() against the packet size it declares and the size
 * of the file; events are walked with rt_page_next(), whose every
 * step is bounded by the content end (itself bounded by the file). Damage
 * is reported with the file and byte offset and the stream goes on at the
 * next packet when the damaged packet's size is known, else it ends.
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

#include "base/heap.h"
#include "read/trace_internal.h"
#include "ring/page_api.h"

/* a + b + c, saturated (counts from a file: any value) */
static uint64_t rt_sat_add3(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t s = a + b;
	if (s < a)
		return UINT64_MAX;
	return s + c < s ? UINT64_MAX : s + c;
}

static int rt_cmp_stream(const void *a, const void *b)
{
	uint64_t x = ((const struct rt_tstream *)a)->info.id,
		 y = ((const struct rt_tstream *)b)->info.id;
	return x < y ? -1 : x > y;
}

/*
 * .stream_<N>.partial: a stream file that ended inside a page, set aside
 * unchanged by `ringtrace recover` (its whole pages are in stream_<N>;
 * src/ctf/stream.c). Hidden, as CTF readers skip it; not a stream here
 * either.
 */
static int rt_is_set_aside(const char *n)
{
	static const char pre[] = ".stream_", suf[] = ".partial";
	size_t len = strlen(n), pl = sizeof(pre) - 1, sl = sizeof(suf) - 1;
	if (len <= pl + sl || strncmp(n, pre, pl) != 0 || strcmp(n + len - sl, suf) != 0)
		return 0;
	for (size_t i = pl; i < len - sl; i++)
		if (n[i] < '0' || n[i] > '9')
			return 0;
	return 1;
}

/* One stream_<N> file: a stream, its file mapped. */
static int rt_open_stream_file(ringtrace_trace *t, int dirfd, const char *n, uint64_t id,
			       uint32_t *cap)
{
	if (t->nstreams >= RT_TRACE_MAX_STREAMS)
		return rt_open_fail(RINGTRACE_EINVAL, "%s: more than %u streams", t->dir,
				    RT_TRACE_MAX_STREAMS);
	if (rt_grow((void **)&t->streams, cap, t->nstreams + 1, sizeof(*t->streams)) < 0)
		return rt_open_fail(RINGTRACE_ENOMEM, "%s: out of memory (opening the trace)",
				    t->dir);
	struct rt_tstream *s = &t->streams[t->nstreams];
	memset(s, 0, sizeof(*s));
	size_t pl = strlen(t->dir) + strlen(n) + 2;
	char *path = rt_arena_alloc(&t->arena, pl);
	if (!path)
		return rt_open_fail(RINGTRACE_ENOMEM, "%s: out of memory (opening the trace)",
				    t->dir);
	snprintf(path, pl, "%s/%s", t->dir, n);
	s->info.id = id;
	s->info.path = path;
	t->nstreams++;
	/* A regular file only, never followed, never blocking: a FIFO
	 * named stream_1 must not hang the reader, a symbolic link must
	 * not make it read (and print) another file. */
	struct stat st;
	char msg[1024];
	int fd = rt_open_regular_at(dirfd, t->dir, n, &st, msg, sizeof(msg));
	if (fd < 0)
		return rt_open_fail(-fd, "%s", msg);
	s->size = (size_t)st.st_size;
	s->info.bytes = s->size;
	if (s->size) {
		void *m = mmap(NULL, s->size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED) {
			int r = rt_open_fail(RINGTRACE_ESYS, "%s: mmap: %s", path, strerror(errno));
			close(fd);
			return r;
		}
		madvise(m, s->size, MADV_SEQUENTIAL);
		s->map = m;
	}
	close(fd);
	return 0;
}

/*
 * A thread that dropped every event it emitted (the pool full from
 * its first event on), or none of whose pages the recorder could write
 * (the disk full), has no file, only its `dropped` or `unwritten` line:
 * it is a stream of the trace all the same, with no event, so that every
 * thread's events + dropped + unwritten is accounted. (The lists are
 * sorted: one merge pass.)
 */
static int rt_add_fileless_streams(ringtrace_trace *t, uint32_t *cap)
{
	const struct rt_ctf_meta *m = &t->doc.meta;
	uint32_t nfiles = t->nstreams, j = 0, di = 0, ui = 0;
	while (di < m->ndrops || ui < m->nunwritten) {
		/* the next stream id of either list (both when equal) */
		int take_d = di < m->ndrops && (ui >= m->nunwritten ||
						m->drops[di].stream <= m->unwritten[ui].stream);
		uint64_t id = take_d ? m->drops[di].stream : m->unwritten[ui].stream;
		uint32_t tid = take_d ? m->drops[di].tid : m->unwritten[ui].tid;
		int every_dropped = take_d;
		if (di < m->ndrops && m->drops[di].stream == id)
			di++;
		if (ui < m->nunwritten && m->unwritten[ui].stream == id) {
			ui++;
			every_dropped = 0;
		}
		while (j < nfiles && t->streams[j].info.id < id)
			j++;
		if (j < nfiles && t->streams[j].info.id == id)
			continue;
		if (t->nstreams >= RT_TRACE_MAX_STREAMS)
			return rt_open_fail(RINGTRACE_EINVAL, "%s: more than %u streams", t->dir,
					    RT_TRACE_MAX_STREAMS);
		if (rt_grow((void **)&t->streams, cap, t->nstreams + 1, sizeof(*t->streams)) < 0)
			return rt_open_fail(RINGTRACE_ENOMEM,
					    "%s: out of memory (opening the trace)", t->dir);
		struct rt_tstream *s = &t->streams[t->nstreams++];
		memset(s, 0, sizeof(*s));
		s->info.id = id;
		s->info.path = every_dropped ? "(no file: every event dropped)"
					     : "(no file: no page written)";
		s->info.tid = tid;
		s->no_file = 1;
	}
	if (t->nstreams > nfiles)
		qsort(t->streams, t->nstreams, sizeof(*t->streams), rt_cmp_stream);
	return 0;
}

/*
 * The end of the last whole packet of the stream in its file (its
 * events_before + events), or 0 if none: where the events after the
 * stream's last page written begin.
 */
static uint64_t rt_stream_written_end(const struct rt_tstream *s)
{
	uint64_t off = 0, end = 0;
	while (s->map && off + RINGTRACE_PAGE_HEADER_SIZE <= s->size) {
		const struct ringtrace_page_header *h = (const void *)(s->map + off);
		if (ringtrace_page_check(h, 0) < 0 || h->packet_size / 8 > s->size - off)
			break;
		if (h->stream_instance_id == s->info.id)
			end = h->events_before + h->events;
		off += h->packet_size / 8;
	}
	return end;
}

/*
 * A stream's `unwritten` line split: those after its last page written
 * (its `end` less that page's end: all lost, the line's first, the rest
 * overwritten before them) and those in the gaps between its pages, where
 * they are taken out of what looks like overrun (docs/format.md, section
 * 7), so that they are not counted twice or as overwritten.
 */
static void rt_unwritten_split(ringtrace_trace *t, struct rt_tstream *s)
{
	const struct ringtrace_trace_unwritten *u = rt_ctf_stream_unwritten(&t->doc.meta,
									    s->info.id);
	if (!u)
		return;
	s->info.unwritten_reason = u->reason;
	s->info.unwritten_pages = u->pages;
	uint64_t last = s->no_file ? 0 : rt_stream_written_end(s);
	uint64_t after = u->end > last ? u->end - last : 0;
	s->uw_tail = after < u->events ? after : u->events;
	s->tail_overrun = after - s->uw_tail;
	s->uw_gap_left = u->events - s->uw_tail;
}

int rt_open_streams(ringtrace_trace *t, int dirfd)
{
	/* (a descriptor of its own: readdir moves its position) */
	int lfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
	if (!d) {
		int e = errno;
		if (lfd >= 0)
			close(lfd);
		return rt_open_fail(RINGTRACE_ESYS, "%s: %s (listing the stream files)", t->dir,
				    strerror(e));
	}
	uint32_t cap = 0;
	int ret = 0;
	struct dirent *de;
	char extra[512] = "";
	while ((de = readdir(d)) != NULL) {
		const char *n = de->d_name;
		uint64_t id;
		if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0 || strcmp(n, "metadata") == 0 ||
		    strcmp(n, RT_CTF_RESERVE) == 0 || rt_is_set_aside(n))
			continue;
		/* A kernel trace's format files (docs/format.md, section 9): not
		 * read here, but the trace's own. */
		struct stat fst;
		if (strcmp(n, "formats") == 0 &&
		    fstatat(dirfd, n, &fst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(fst.st_mode))
			continue;
		if (strncmp(n, "stream_", 7) != 0 || rt_parse_u64(n + 7, UINT64_MAX, &id) < 0) {
			if (!extra[0])
				snprintf(
					extra, sizeof(extra),
					"%s/%s: not a file of a trace (only metadata, stream_<N> and formats/)",
					t->dir, n);
			continue;
		}
		if ((ret = rt_open_stream_file(t, dirfd, n, id, &cap)) < 0)
			break;
	}
	closedir(d);
	if (ret < 0)
		return ret;
	if (t->nstreams)
		qsort(t->streams, t->nstreams, sizeof(*t->streams), rt_cmp_stream);
	if ((ret = rt_add_fileless_streams(t, &cap)) < 0)
		return ret;
	for (uint32_t i = 0; i < t->nstreams; i++)
		rt_unwritten_split(t, &t->streams[i]);
	t->heap = calloc(t->nstreams ? t->nstreams : 1, sizeof(*t->heap));
	if (!t->heap)
		return rt_open_fail(RINGTRACE_ENOMEM, "%s: out of memory (opening the trace)",
				    t->dir);
	if (extra[0]) {
		t->errors++;
		if (t->err)
			t->err(t->err_arg, extra);
	}
	return 0;
}

/*
 * Produce the stream's next record into s->item: 1, or 0 when the stream
 * has nothing more. Damage is reported and skipped.
 */
static int rt_stream_pages(ringtrace_trace *t, struct rt_tstream *s);

/*
 * The same, and after the last packet what no packet reports, as one last
 * lost record: the metadata's `dropped` line for the stream (its drops in
 * all, written by the recorder or recover) less what the last packet said
 * (events_discarded is cumulative), and its `unwritten` events after its
 * last page written (with those gaps between its pages did not hold:
 * the line's count is the stream's), so that the stream's events +
 * dropped + overrun + unwritten is what its thread emitted.
 */
static int rt_stream_advance(ringtrace_trace *t, struct rt_tstream *s)
{
	if (rt_stream_pages(t, s))
		return 1;
	if (s->tail_done)
		return 0;
	s->tail_done = 1;
	uint64_t all = rt_ctf_stream_dropped(&t->doc.meta, s->info.id);
	uint64_t seen = s->have_prev ? s->prev.events_discarded : 0;
	uint64_t dropped = all > seen ? all - seen : 0;
	uint64_t unwritten = s->uw_tail + s->uw_gap_left;
	uint64_t overrun = s->tail_overrun;
	s->uw_gap_left = 0;
	if (!(dropped | unwritten | overrun))
		return 0;
	struct ringtrace_trace_record *it = &s->item;
	it->kind = RINGTRACE_TRACE_LOST;
	it->id = 0;
	it->ts = s->have_prev ? s->prev.timestamp_end : 0;
	it->data = NULL;
	it->len = 0;
	it->lost = rt_sat_add3(dropped, overrun, unwritten);
	it->dropped = dropped;
	it->overrun = overrun;
	it->unwritten = unwritten;
	it->file_offset = s->size;
	it->def = NULL;
	s->info.dropped += dropped;
	s->info.overrun += overrun;
	s->info.unwritten += unwritten;
	return 1;
}

/*
 * The next event of the current packet into s->item: 1, or 0 when there is
 * none to give now (an event skipped, or the packet ended: s->in_page is
 * then cleared and damage at its end reported).
 */
static int rt_packet_event(ringtrace_trace *t, struct rt_tstream *s)
{
	struct ringtrace_event ev;
	uint32_t at = (s->cur.off + 7u) & ~7u;
	int r = rt_page_next(&s->cur, &ev);
	if (r == 1) {
		struct ringtrace_trace_event_def *def = ev.id < t->doc.by_id_len
								? t->doc.by_id[ev.id]
								: NULL;
		if (!def) {
			rt_damage(t, s, s->pkt_off + ev.offset,
				  "event id %u is not defined in the metadata (event skipped)",
				  ev.id);
			return 0;
		}
		struct ringtrace_trace_record *it = &s->item;
		it->kind = RINGTRACE_TRACE_EVENT;
		it->id = ev.id;
		it->ts = ev.ts;
		it->data = ev.data;
		it->len = ev.len;
		it->lost = 0;
		it->dropped = 0;
		it->overrun = 0;
		it->unwritten = 0;
		it->file_offset = s->pkt_off + ev.offset;
		it->def = def;
		if (!s->info.events)
			s->info.first_ts = ev.ts;
		s->info.last_ts = ev.ts;
		s->info.events++;
		return 1;
	}
	s->in_page = 0;
	if (r < 0) {
		if (s->truncated)
			rt_damage(
				t, s, s->pkt_off + at,
				"event cut off by the end of the file at byte %zu (packet at byte %" PRIu64
				" declares %" PRIu64 " bytes)",
				s->size, s->pkt_off, s->page->packet_size / 8);
		else
			rt_damage(t, s, s->pkt_off + at, "%s", ringtrace_last_error());
		if (s->truncated)
			s->dead = 1;
		return 0;
	}
	if (s->truncated) {
		rt_damage(t, s, s->size,
			  "file ends inside the packet at byte %" PRIu64 " (%" PRIu64
			  " bytes declared)",
			  s->pkt_off, s->page->packet_size / 8);
		s->dead = 1;
	} else if (s->cur.index != s->page->events) {
		rt_damage(t, s, s->pkt_off + 72, "packet header declares %u events, %u found",
			  s->page->events, s->cur.index);
	}
	return 0;
}

/*
 * Enter the stream's next packet: 1, 0 if it was skipped (it belongs to
 * another stream), -1 if the stream has no more (its end, or damage that
 * leaves the next packet's place unknown).
 */
static int rt_packet_open(ringtrace_trace *t, struct rt_tstream *s)
{
	if (s->dead)
		return -1;
	if (s->size == 0) {
		/* A recorder killed (its metadata has no final stats) may leave
		 * the file it had just made for a stream before the stream's
		 * first page went in: a stream without pages yet, which
		 * `ringtrace recover` fills from the pool. In a finished trace
		 * every stream file holds pages. */
		if (t->doc.nstats != 0)
			rt_damage(t, s, 0, "stream file is empty");
		s->dead = 1;
		return -1;
	}
	if (s->next_pkt >= s->size)
		return -1;
	uint64_t off = s->next_pkt;
	uint64_t avail = s->size - off;
	s->pkt_off = off;
	s->info.pages++;
	if (avail < RINGTRACE_PAGE_HEADER_SIZE) {
		rt_damage(t, s, s->size,
			  "file ends inside the packet header at byte %" PRIu64 " (%" PRIu64
			  " of %u bytes)",
			  off, avail, RINGTRACE_PAGE_HEADER_SIZE);
		s->dead = 1;
		return -1;
	}
	const struct ringtrace_page_header *h = (const void *)(s->map + off);
	if (ringtrace_page_check(h, 0) < 0) {
		rt_damage(t, s, off, "packet header: %s", ringtrace_last_error());
		s->dead = 1;
		return -1;
	}
	uint64_t psz = h->packet_size / 8;
	s->next_pkt = off + psz;
	s->page = h;
	if (h->stream_instance_id != s->info.id || h->stream_id != 0) {
		rt_damage(t, s, off + 4,
			  "packet header names stream %" PRIu64 " (class %u), not %" PRIu64
			  " (packet skipped)",
			  h->stream_instance_id, h->stream_id, s->info.id);
		return 0;
	}
	s->truncated = psz > avail;
	ringtrace_page_cursor_init(&s->cur, h);
	if (s->truncated && s->cur.end > avail)
		s->cur.end = (uint32_t)avail;
	s->in_page = 1;
	s->info.tid = h->tid;
	s->cpu = h->cpu;
	memcpy(s->comm, h->comm, 16);
	s->comm[16] = 0;
	for (int i = 0; i < 16; i++)
		if (s->comm[i] &&
		    ((unsigned char)s->comm[i] < 0x20 || (unsigned char)s->comm[i] == 0x7F))
			s->comm[i] = '?';
	memcpy(s->info.comm, s->comm, sizeof(s->comm));
	return 1;
}

/* The losses since the previous packet of the stream (the packet just
 * entered, s->page): 1 with a lost record in s->item, or 0 if none. */
static int rt_packet_losses(ringtrace_trace *t, struct rt_tstream *s)
{
	const struct ringtrace_page_header *h = s->page;
	uint64_t dropped = 0, overrun = 0;
	if (!s->have_prev) {
		dropped = h->events_discarded;
		overrun = h->events_before;
	} else {
		const struct ringtrace_page_header *a = &s->prev;
		if (h->packet_seq_num <= a->packet_seq_num ||
		    h->events_discarded < a->events_discarded ||
		    h->events_before < a->events_before ||
		    h->events_before - a->events_before < a->events) {
			rt_damage(
				t, s, s->pkt_off + 48,
				"packet sequence or event counters go backwards from the previous packet");
		} else {
			dropped = h->events_discarded - a->events_discarded;
			overrun = h->events_before - a->events_before - a->events;
		}
	}
	memcpy(&s->prev, h, sizeof(s->prev));
	s->have_prev = 1;
	/* pages the recorder could not write look like recycled ones: the
	 * stream's `unwritten` line says how many of them there are */
	uint64_t unwritten = overrun < s->uw_gap_left ? overrun : s->uw_gap_left;
	s->uw_gap_left -= unwritten;
	overrun -= unwritten;
	if (!(dropped | overrun | unwritten))
		return 0;
	s->info.dropped += dropped;
	s->info.overrun += overrun;
	s->info.unwritten += unwritten;
	struct ringtrace_trace_record *it = &s->item;
	it->kind = RINGTRACE_TRACE_LOST;
	it->id = 0;
	it->ts = h->timestamp_begin;
	it->data = NULL;
	it->len = 0;
	it->lost = rt_sat_add3(dropped, overrun, unwritten);
	it->dropped = dropped;
	it->overrun = overrun;
	it->unwritten = unwritten;
	it->file_offset = s->pkt_off;
	it->def = NULL;
	return 1;
}

static int rt_stream_pages(ringtrace_trace *t, struct rt_tstream *s)
{
	if (s->no_file)
		return 0;
	for (;;) {
		if (s->in_page) {
			if (rt_packet_event(t, s))
				return 1;
			continue;
		}
		int r = rt_packet_open(t, s);
		if (r < 0)
			return 0;
		if (r > 0 && rt_packet_losses(t, s))
			return 1;
	}
}

/* Streams are sorted by id: ties in time go to the lower stream id. */
static inline int rt_less(const void *ctx, uint32_t a, uint32_t b)
{
	const ringtrace_trace *t = ctx;
	const struct rt_tstream *x = &t->streams[a], *y = &t->streams[b];
	if (x->item.ts != y->item.ts)
		return x->item.ts < y->item.ts;
	return a < b;
}

int ringtrace_trace_next(ringtrace_trace *t, struct ringtrace_trace_record *rec)
{
	if (!t->started) {
		t->started = 1;
		for (uint32_t i = 0; i < t->nstreams; i++)
			if (rt_stream_advance(t, &t->streams[i]))
				rt_heap_push(t->heap, &t->nheap, i, rt_less, t);
	} else if (t->pending >= 0) {
		uint32_t i = (uint32_t)t->pending;
		t->pending = -1;
		/* the returned stream is at the top of the heap */
		rt_heap_fix_top(t->heap, &t->nheap, rt_stream_advance(t, &t->streams[i]), rt_less,
				t);
	}
	if (t->nheap == 0)
		return 0;
	uint32_t i = t->heap[0];
	struct rt_tstream *s = &t->streams[i];
	*rec = s->item;
	rec->ns = ringtrace_trace_ticks_to_ns(t, rec->ts);
	rec->tid = s->info.tid;
	rec->cpu = s->cpu;
	rec->stream_index = i;
	rec->stream = s->info.id;
	rec->comm = s->comm;
	t->pending = (int)i;
	return 1;
}
