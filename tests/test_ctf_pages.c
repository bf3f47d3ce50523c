/*
 * The page format is CTF: ring-buffer pages written to files unchanged,
 * with a metadata file describing them, are read by babeltrace2 (the
 * reference CTF reader) with the same events, field values and raw
 * timestamps that ringtrace's own decoder finds.
 *
 * The metadata is generated from the event registry
 * (ringtrace_ctf_write_metadata). Checked: the page and event layout
 * (packet header and context, compact and extended event headers, field
 * alignment, strings, the hidden _truncated field, content_size at the end
 * of the last payload, packets that follow each other in a stream file)
 * and the description of every field type and of ringtrace_printf
 * records.
 *
 * babeltrace2 must be installed (make check installs it); its absence is a
 * failure, not a skip.
 *
 * Two cases on the same trace (ctf_write_and_read() makes it and reads it
 * with babeltrace2 for each): the events of ctf_num and ctf_str compared
 * one by one, and the every-type event and the printf record.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RINGTRACE_CREATE_EVENTS
#include <ringtrace/ctf.h>
#include <ringtrace/tracepoint.h>

#include "check.h"

RINGTRACE_EVENT(ctf_num, RINGTRACE_PROTO(int32_t v, uint64_t x), RINGTRACE_ARGS(v, x),
		RINGTRACE_FIELDS(ringtrace_integer(int32_t, v, v)
					 ringtrace_integer(uint64_t, x, x)),
		RINGTRACE_PRINT("v=%d x=%llu"))

RINGTRACE_EVENT(ctf_str, RINGTRACE_PROTO(int16_t k, const char *s), RINGTRACE_ARGS(k, s),
		RINGTRACE_FIELDS(ringtrace_integer(int16_t, k, k) ringtrace_string(s, s)),
		RINGTRACE_PRINT("k=%d s=%s"))

RINGTRACE_ENUM(ctf_color, RINGTRACE_ENUM_VALUE("RED", 1) RINGTRACE_ENUM_VALUE("GREEN", 2))

/* Every field type, and field names that are TSDL keywords. */
RINGTRACE_EVENT(
	ctf_all, RINGTRACE_PROTO(int v), RINGTRACE_ARGS(v),
	RINGTRACE_FIELDS(
		ringtrace_integer(int8_t, i8, (int8_t)-v) ringtrace_integer(
			uint16_t, u16, (uint16_t)v) ringtrace_integer(int64_t, i64,
								      (int64_t)v * -1000000000000ll)
			ringtrace_float(float, f32, (float)v / 4) ringtrace_float(
				double, f64, (double)v / 8) ringtrace_bool(ok, v & 1)
				ringtrace_pointer(where, (void *)(uintptr_t)0x1234) ringtrace_enum(
					ctf_color, int32_t, color, 1 + (v & 1))
					ringtrace_array(int16_t, arr,
							((const int16_t[3]){1, -2, 3}), 3)
						ringtrace_array(double, farr,
								((const double[2]){0.5, -1.5}),
								2) ringtrace_string(string, "kw")
							ringtrace_bytes(event, "\x01\x02\x03", 3)
								ringtrace_integer(uint32_t, align,
										  7)),
	RINGTRACE_PRINT(
		"i8=%d u16=%u i64=%lld f32=%g f64=%g ok=%d where=%p color=%s arr=%s farr=%s string=%s event=%s align=%u"))

#define NEV 3000

static ringtrace_rb *rb;

static void *writer(void *arg)
{
	int base = (int)(intptr_t)arg;
	char s[40];
	for (int i = 0; i < NEV; i++) {
		if (i % 3 == 0) {
			snprintf(s, sizeof(s), "w%d-%d%.*s", base, i, i % 17, "abcdefghijklmnopq");
			trace_ctf_str((int16_t)(i - 1000), s);
		} else {
			trace_ctf_num(base * 100000 + i, (uint64_t)i * 0x100000001ull);
		}
	}
	ringtrace_rb_writer_release(rb);
	return NULL;
}

struct line {
	char text[1024];
};

static int cmp_line(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->text, ((const struct line *)b)->text);
}

/* The trace written and what each reader made of it. */
struct ctf_run {
	char dir[64];
	double gap_s;
	int extended;                  /* a gap long enough for an extended header */
	struct line *ours, *theirs;    /* ctf_num and ctf_str events, by each */
	size_t n, m;                   /* how many: ringtrace, babeltrace2 */
	int npages, nextended, nother; /* pages; extended headers; other events */
	int nall, all_ok, nprintf;     /* ctf_all and printf events babeltrace2 read */
};

/* Two writers, then this thread with the gap; ringtrace_printf last. */
static void ctf_record(struct ctf_run *r)
{
	struct ringtrace_rb_config cfg;
	ringtrace_rb_config_init(&cfg);
	cfg.page_size = 4096;
	cfg.pool_size = 4096 * 256;
	CHECK(ringtrace_rb_create(&cfg, &rb) == 0);
	CHECK(ringtrace_events_set_buffer(rb) == 0);
	CHECK(ringtrace_event_enable("ctf_*") == 3);
	CHECK(ringtrace_event_enable("ringtrace_printf") == 1);

	/* Two writers; then one thread with a gap long enough for the
	 * extended header (2^32 ticks). */
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&t[i], NULL, writer, (void *)(intptr_t)(i + 1)) == 0);
	for (int i = 0; i < 2; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
	uint64_t freq = ringtrace_rb_clock_freq(rb);
	double gap_s = r->gap_s = 4294967296.0 / (double)freq + 0.05;
	int extended = r->extended = gap_s < 5.0;
	trace_ctf_num(-1, 1);
	if (extended) {
		struct timespec d = {(time_t)gap_s, (long)((gap_s - (time_t)gap_s) * 1e9)};
		nanosleep(&d, NULL);
	} else {
		printf("note: clock at %" PRIu64
		       " Hz: a 2^32-tick gap is %.1f s, extended header not exercised\n",
		       freq, gap_s);
	}
	trace_ctf_num(-2, 2);
	for (int i = 0; i < 5; i++)
		trace_ctf_all(i);
	ringtrace_printf("printf %d %s %.2f", 42, "str", 2.5);
	ringtrace_rb_writer_release(rb);
	CHECK(ringtrace_events_set_buffer(NULL) == 0);
}

/* Writes every page to its stream's file and decodes its events. */
static void ctf_write_pages(struct ctf_run *r, size_t cap)
{
	const char *dir = r->dir;
	/* Write every page, unchanged, to its stream's file; keep our own
	 * decoding of every event in babeltrace's text shape. */
	struct ringtrace_event_info num, str;
	CHECK(ringtrace_event_lookup("ctf_num", &num) == 0);
	CHECK(ringtrace_event_lookup("ctf_str", &str) == 0);
	size_t n = 0;
	struct line *ours = r->ours = calloc(cap, sizeof(*ours));
	CHECK(ours != NULL);
	int npages = 0, nextended = 0, nother = 0;
	const struct ringtrace_page_header *p;
	while ((p = ringtrace_rb_get_page(rb)) != NULL) {
		char path[128];
		snprintf(path, sizeof(path), "%s/stream_%" PRIu64, dir, p->stream_instance_id);
		FILE *f = fopen(path, "ab");
		CHECK(f != NULL);
		CHECK(fwrite(p, 1, ringtrace_rb_page_size(rb), f) == ringtrace_rb_page_size(rb));
		fclose(f);
		npages++;
		struct ringtrace_page_cursor c;
		struct ringtrace_event ev;
		ringtrace_page_cursor_init(&c, p);
		while (ringtrace_page_next(&c, &ev) == 1) {
			struct ringtrace_value vals[4];
			CHECK(n < cap);
			uint64_t w;
			memcpy(&w, (const char *)p + ev.offset, 8);
			nextended += RINGTRACE_EV_WORD_ID(w) == RINGTRACE_EV_EXTENDED;
			if (ev.id != num.id && ev.id != str.id) {
				nother++;
				continue;
			}
			if (ev.id == num.id) {
				CHECK(ringtrace_record_decode(num.fields, num.nfields, ev.data,
							      ev.len, vals) == 2);
				snprintf(ours[n++].text, sizeof(ours[0].text),
					 "%" PRIu64 " ctf_num: { v = %" PRId64 ", x = %" PRIu64
					 " }",
					 ev.ts, vals[0].v.i, vals[1].v.u);
			} else {
				CHECK(ev.id == str.id);
				CHECK(ringtrace_record_decode(str.fields, str.nfields, ev.data,
							      ev.len, vals) == 3);
				snprintf(ours[n++].text, sizeof(ours[0].text),
					 "%" PRIu64 " ctf_str: { truncated = %" PRIu64
					 ", k = %" PRId64 ", s = \"%.*s\" }",
					 ev.ts, vals[0].v.u, vals[1].v.i, (int)vals[2].len,
					 (const char *)vals[2].ptr);
			}
		}
		ringtrace_rb_put_page(rb, p);
	}
	r->n = n;
	r->npages = npages;
	r->nextended = nextended;
	r->nother = nother;
}

/* Reads the trace with babeltrace2; keeps its ctf_num and ctf_str lines. */
static void ctf_read_babeltrace(struct ctf_run *r, size_t cap)
{
	const char *dir = r->dir;
	char path[128];
	snprintf(path, sizeof(path), "%s/metadata", dir);
	FILE *mf = fopen(path, "w");
	CHECK(mf != NULL);
	CHECKF(ringtrace_ctf_write_metadata(rb, mf, NULL) == 0, "%s", ringtrace_last_error());
	fclose(mf);

	/* babeltrace2, raw clock cycles, one event per line. */
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "babeltrace2 --clock-cycles --no-delta %s 2>%s.stderr", dir,
		 dir);
	CHECKF(system("command -v babeltrace2 >/dev/null 2>&1") == 0,
	       "babeltrace2 is not installed (make check installs it)");
	FILE *bt = popen(cmd, "r");
	CHECK(bt != NULL);
	struct line *theirs = r->theirs = calloc(cap + 16, sizeof(*theirs));
	CHECK(theirs != NULL);
	size_t m = 0;
	int nall = 0, all_ok = 0, nprintf = 0;
	char buf[1024];
	while (fgets(buf, sizeof(buf), bt)) {
		uint64_t cyc;
		char rest[900];
		buf[strcspn(buf, "\n")] = 0;
		CHECKF(sscanf(buf, "[%" SCNu64 "] %899[^\n]", &cyc, rest) == 2,
		       "unexpected line: %s", buf);
		CHECK(m < cap + 16);
		/* "name: { packet context }, { payload }": keep name and payload */
		char *colon = strstr(rest, ": {");
		char *ctx_end = NULL;
		for (char *q = strstr(rest, "}, {"); q; q = strstr(q + 1, "}, {"))
			ctx_end = q;
		CHECKF(colon && ctx_end, "unexpected line: %s", buf);
		colon[1] = 0;
		/* ("(+delta) host:procname name:": the trace's env names its process) */
		char *name = strrchr(rest, ' ');
		name = name ? name + 1 : rest;
		if (strcmp(name, "ctf_all:") == 0) {
			nall++;
			if (strstr(ctx_end, "i8 = -1,") && strstr(ctx_end, "u16 = 1,") &&
			    strstr(ctx_end, "i64 = -1000000000000,") &&
			    strstr(ctx_end, "ok = 1,") && strstr(ctx_end, "where = 0x1234") &&
			    strstr(ctx_end, "\"GREEN\"") &&
			    strstr(ctx_end, "[0] = 1, [1] = -2, [2] = 3") &&
			    strstr(ctx_end, "string = \"kw\"") && strstr(ctx_end, "align = 7"))
				all_ok++;
			continue;
		}
		if (strcmp(name, "ringtrace_printf:") == 0) {
			nprintf++;
			continue;
		}
		snprintf(theirs[m++].text, sizeof(theirs[0].text), "%" PRIu64 " %s %s", cyc, name,
			 ctx_end + 3);
	}
	int st = pclose(bt);
	if (st != 0) {
		snprintf(cmd, sizeof(cmd), "tail -20 %s.stderr", dir);
		CHECKF(system(cmd) >= 0 && 0, "babeltrace2 failed (status %d) on %s", st, dir);
	}
	r->m = m;
	r->nall = nall;
	r->all_ok = all_ok;
	r->nprintf = nprintf;
}

/*
 * Records events of two writers and then of this thread (with a gap of
 * 2^32 ticks where that takes under 5 s), writes every page to its
 * stream's file with the generated metadata, and reads the trace with
 * ringtrace's decoder and with babeltrace2.
 */
static void ctf_write_and_read(struct ctf_run *r)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->dir, sizeof(r->dir), "/tmp/ringtrace-ctf-XXXXXX");
	CHECK(mkdtemp(r->dir) != NULL);
	ctf_record(r);
	size_t cap = 3 * NEV;
	ctf_write_pages(r, cap);
	ctf_read_babeltrace(r, cap);
}

static void ctf_done(struct ctf_run *r)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf %s %s.stderr", r->dir, r->dir);
	CHECK(system(cmd) == 0);
	free(r->ours);
	free(r->theirs);
	ringtrace_rb_destroy(rb);
}

/* babeltrace2 reads every ctf_num and ctf_str event with the same field
 * values and raw timestamps as ringtrace's decoder, through packets that
 * follow each other in a stream file and extended headers. */
static void test_same_events(void)
{
	struct ctf_run r;
	ctf_write_and_read(&r);
	size_t n = r.n, m = r.m;
	struct line *ours = r.ours, *theirs = r.theirs;
	CHECK(n == 2 * NEV + 2);
	CHECK(r.npages > 4); /* several packets per stream file */
	if (r.extended)
		CHECKF(r.nextended >= 1, "no extended header after a %.2f s gap", r.gap_s);
	CHECKF(m == n, "babeltrace2 read %zu events, ringtrace %zu", m, n);
	qsort(ours, n, sizeof(*ours), cmp_line);
	qsort(theirs, m, sizeof(*theirs), cmp_line);
	for (size_t i = 0; i < n; i++)
		CHECKF(strcmp(ours[i].text, theirs[i].text) == 0,
		       "event %zu differs:\n  ringtrace:   %s\n  babeltrace2: %s", i, ours[i].text,
		       theirs[i].text);
	printf("  babeltrace2 read %zu events in %d packets (%d extended headers) exactly as "
	       "ringtrace decodes them\n",
	       m, r.npages, r.nextended);
	ctf_done(&r);
}

/* The generated metadata describes every field type (TSDL keywords as
 * field names too) and ringtrace_printf records: babeltrace2 reads them. */
static void test_every_type(void)
{
	struct ctf_run r;
	ctf_write_and_read(&r);
	CHECK(r.nother == 6); /* 5 ctf_all, 1 printf */
	CHECKF(r.nall == 5 && r.all_ok >= 1, "ctf_all: %d read, %d with the v=1 values", r.nall,
	       r.all_ok);
	CHECK(r.nprintf == 1);
	ctf_done(&r);
}

/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
static const struct check_case cases[] = {
	CHECK_CASE(ctf_pages_babeltrace2_reads_the_events_ringtrace_decodes, test_same_events),
	CHECK_CASE(ctf_pages_metadata_describes_every_field_type_and_printf, test_every_type),
};
/* clang-format on */

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
