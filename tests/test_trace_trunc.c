/*
 * A truncated stream file: a one-thread trace of 3 pages of 4096 bytes is
 * cut at every byte offset from 0 to its size. The reader never crashes
 * or hangs, delivers exactly the events that are complete before the cut,
 * and (unless the cut falls between packets) reports an error naming the
 * file and a byte offset.
 *
 * Then a damaged event header (a payload length that overruns the page)
 * in every event in turn: the error names the exact file offset of the
 * event, the events before it are delivered and the stream goes on with
 * the next packet.
 *
 * The two are cases, each on the trace trunc_trace() writes.
 */
#define RINGTRACE_CREATE_EVENTS
#include "test_trace_util.h"

struct evpos {
	uint64_t off; /* file offset of the event */
	uint64_t end; /* file offset where its payload ends */
	uint64_t pkt; /* file offset of its packet */
};

static uint64_t read_all(const char *dir, struct tt_errs *errs)
{
	ringtrace_trace *t;
	memset(errs, 0, sizeof(*errs));
	CHECKF(ringtrace_trace_open(dir, tt_on_error, errs, &t) == 0, "%s",
	       ringtrace_trace_open_error());
	struct ringtrace_trace_record r;
	uint64_t n = 0;
	char buf[2048];
	while (ringtrace_trace_next(t, &r) == 1) {
		CHECK(r.kind == RINGTRACE_TRACE_EVENT);
		CHECK(ringtrace_trace_format(t, &r, buf, sizeof(buf)) >= 0);
		n++;
	}
	CHECK(ringtrace_trace_errors(t) == errs->n);
	ringtrace_trace_close(t);
	return n;
}

/* The trace, and where each event is in its one stream file. */
struct trunc {
	char dir[64];
	ringtrace_rb *rb;
	struct tt_trace tt;
	char spath[512]; /* the stream file */
	char *data;      /* its content */
	size_t size;
	struct evpos *pos; /* per event */
	size_t ne;
};

/* A one-thread trace of 3 pages with mixed event sizes, read back whole
 * (every event, no error) before any damage. */
static void trunc_trace(struct trunc *x)
{
	memset(x, 0, sizeof(*x));
	snprintf(x->dir, sizeof(x->dir), "/tmp/ringtrace-trunc-XXXXXX");
	char *dir = x->dir;
	CHECK(mkdtemp(dir) != NULL);
	struct ringtrace_rb_config cfg;
	ringtrace_rb_config_init(&cfg);
	cfg.page_size = 4096;
	cfg.pool_size = 4096 * 16;
	CHECK(ringtrace_rb_create(&cfg, &x->rb) == 0);
	ringtrace_rb *rb = x->rb;
	CHECK(ringtrace_events_set_buffer(rb) == 0);
	CHECK(ringtrace_event_enable("tr_*") == 4);
	CHECK(ringtrace_event_enable("ringtrace_printf") == 1);
	/* fill a bit more than 2 pages, with mixed event sizes */
	char s[64];
	size_t bytes = 0;
	for (int i = 0; bytes < 2 * (4096 - 112) + 1500; i++) {
		switch (i % 4) {
		case 0:
			snprintf(s, sizeof(s), "s%d%.*s", i, i % 23, "abcdefghijklmnopqrstuvw");
			trace_tr_str((int16_t)i, s);
			bytes += 8 + 3 + strlen(s) + 8;
			break;
		case 1:
			trace_tr_mix(i);
			bytes += 48;
			break;
		case 2:
			ringtrace_printf("i=%d %s", i, "x");
			bytes += 40;
			break;
		default:
			trace_tr_num(i, (uint64_t)i);
			bytes += 24;
		}
	}
	ringtrace_rb_writer_release(rb);
	CHECK(ringtrace_events_set_buffer(NULL) == 0);
	tt_write_trace(rb, dir, &x->tt, NULL);
	CHECKF(x->tt.pages == 3, "%u pages", x->tt.pages);
	struct tt_trace tt = x->tt;

	/* the one stream file, and where each event ends in it */
	char *spath = x->spath;
	DIR *d = opendir(dir);
	struct dirent *de;
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, "stream_", 7) == 0)
			snprintf(spath, sizeof(x->spath), "%s/%s", dir, de->d_name);
	closedir(d);
	CHECK(spath[0]);
	tt_read_file(spath, &x->data, &x->size);
	CHECK(x->size == 3 * 4096);
	char *data = x->data;
	size_t size = x->size;
	struct evpos *pos = x->pos = calloc(tt.n, sizeof(*pos));
	size_t ne = 0;
	for (size_t off = 0; off < size; off += 4096) {
		const struct ringtrace_page_header *h = (const void *)(data + off);
		struct ringtrace_page_cursor c;
		struct ringtrace_event ev;
		ringtrace_page_cursor_init(&c, h);
		while (ringtrace_page_next(&c, &ev) == 1) {
			CHECK(ne < tt.n);
			pos[ne].pkt = off;
			pos[ne].off = off + ev.offset;
			pos[ne++].end = off + (uint64_t)((const char *)ev.data - (const char *)h) +
					ev.len;
		}
	}
	CHECK(ne == tt.n);

	struct tt_errs errs;
	CHECK(read_all(dir, &errs) == tt.n && errs.n == 0);
	x->ne = ne;
}

static void trunc_done(struct trunc *x)
{
	free(x->pos);
	free(x->data);
	free(x->tt.ev);
	ringtrace_rb_destroy(x->rb);
	tt_rm_dir(x->dir);
}

/* Cut at every byte offset: the events complete before the cut, and an
 * error naming the file and offset unless the cut is between packets (or
 * at 0: the trace is not finished, see below). */
static void test_cut(void)
{
	struct trunc x;
	trunc_trace(&x);
	char *dir = x.dir, *spath = x.spath, *data = x.data;
	size_t size = x.size, ne = x.ne;
	const struct evpos *pos = x.pos;
	struct tt_errs errs;
	/* cut at every offset */
	for (size_t cut = 0; cut <= size; cut++) {
		tt_write_file(spath, data, cut);
		uint64_t want = 0;
		for (size_t i = 0; i < ne; i++)
			want += pos[i].end <= cut;
		uint64_t got = read_all(dir, &errs);
		CHECKF(got == want, "cut at %zu: %" PRIu64 " events, expected %" PRIu64, cut, got,
		       want);
		/* (cut at 0: an empty file, in a trace without final stats: a
		 * stream whose recorder was killed before its first page, no
		 * damage; docs/format.md section 7) */
		if (cut % 4096 != 0) {
			CHECKF(errs.n >= 1, "cut at %zu: no error", cut);
			CHECKF(strstr(errs.first, spath) && strstr(errs.first, ": byte "),
			       "cut at %zu: error does not name the file and offset: %s", cut,
			       errs.first);
		} else {
			CHECKF(errs.n == 0, "cut at %zu (between packets): %s", cut, errs.first);
		}
	}
	trunc_done(&x);
	printf("  %zu events, %zu cuts\n", ne, size + 1);
}

/* A damaged event header, in each event in turn: the error names its file
 * offset; the events before it are read and the next packet too. */
static void test_damaged_header(void)
{
	struct trunc x;
	trunc_trace(&x);
	char *dir = x.dir, *spath = x.spath, *data = x.data;
	size_t size = x.size, ne = x.ne;
	const struct evpos *pos = x.pos;
	const struct tt_trace tt = x.tt;
	struct tt_errs errs;
	/* a damaged event header in each event in turn */
	for (size_t i = 0; i < ne; i++) {
		char *copy = malloc(size);
		memcpy(copy, data, size);
		uint16_t bad = 0xFFFF;
		memcpy(copy + pos[i].off + 6, &bad, 2); /* len bits 48..63 */
		tt_write_file(spath, copy, size);
		free(copy);
		uint64_t want = 0;
		for (size_t k = 0; k < ne; k++)
			want += k < i || pos[k].pkt != pos[i].pkt;
		uint64_t got = read_all(dir, &errs);
		CHECKF(got == want, "event %zu damaged: %" PRIu64 " events, expected %" PRIu64, i,
		       got, want);
		char at[64];
		snprintf(at, sizeof(at), ": byte %" PRIu64 ": ", pos[i].off);
		CHECKF(errs.n == 1 && strstr(errs.first, spath) && strstr(errs.first, at),
		       "event %zu at %" PRIu64 ": %u errors, first: %s", i, pos[i].off, errs.n,
		       errs.first);
	}
	tt_write_file(spath, data, size);
	CHECK(read_all(dir, &errs) == tt.n && errs.n == 0);
	trunc_done(&x);
}

/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
static const struct check_case cases[] = {
	CHECK_CASE(trace_trunc_cut_at_every_offset_gives_complete_events_and_offset, test_cut),
	CHECK_CASE(trace_trunc_damaged_event_header_named_by_offset_next_packet_read, test_damaged_header),
};
/* clang-format on */

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
