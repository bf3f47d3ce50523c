/*
 * The trace reader on an undamaged trace: three writer threads and the
 * main thread, several event types and ringtrace_printf records. The
 * reader delivers every event once, merged by timestamp (ties by stream
 * id), with the same text as ringtrace_record_format/printf_format of the
 * in-memory events, the writers' tids and names, and converts ticks to
 * nanoseconds as the buffer does. An overwrite-mode trace reports its
 * losses: delivered + lost == written.
 * Three cases: the merged events and the schema block (both on the trace
 * that threads_trace() writes for each), and the losses.
 */
#define RINGTRACE_CREATE_EVENTS
#include "test_trace_util.h"

#define NEV 4000

static ringtrace_rb *rb;

static void *writer(void *arg)
{
	int base = (int)(intptr_t)arg;
	char name[16], s[64];
	snprintf(name, sizeof(name), "trw-%d", base);
	pthread_setname_np(pthread_self(), name);
	for (int i = 0; i < NEV; i++) {
		if (i % 5 == 4) {
			trace_tr_fmt((int64_t)i * 12345 - 2000000 + base);
			trace_tr_fmt(-(int64_t)i);
			continue;
		}
		switch (i % 4) {
		case 0:
			snprintf(s, sizeof(s), "w%d-%d%.*s", base, i, i % 17, "abcdefghijklmnopq");
			trace_tr_str((int16_t)(i - 1000), s);
			break;
		case 1:
			trace_tr_mix(i);
			break;
		case 2:
			ringtrace_printf("w%d i=%d %s %.2f", base, i, "p", i / 4.0);
			break;
		default:
			trace_tr_num(base * 100000 + i, (uint64_t)i * 0x100000001ull);
		}
	}
	ringtrace_rb_writer_release(rb);
	return NULL;
}

static void check_merged(const char *dir, const struct tt_trace *tt)
{
	ringtrace_trace *t;
	struct tt_errs errs = {0};
	CHECKF(ringtrace_trace_open(dir, tt_on_error, &errs, &t) == 0, "%s",
	       ringtrace_trace_open_error());
	struct ringtrace_trace_record r;
	size_t n = 0;
	uint64_t last_ts = 0, last_stream = 0;
	char buf[1024];
	while (ringtrace_trace_next(t, &r) == 1) {
		CHECK(r.kind == RINGTRACE_TRACE_EVENT);
		CHECK(n < tt->n);
		const struct tt_expect *e = &tt->ev[n];
		CHECKF(r.ts > last_ts || (r.ts == last_ts && r.stream >= last_stream),
		       "event %zu out of order", n);
		last_ts = r.ts;
		last_stream = r.stream;
		CHECK_EQ_U64(r.ts, e->ts);
		CHECK_EQ_U64(r.stream, e->stream);
		CHECK_EQ_U64(r.tid, e->tid);
		CHECK(strcmp(ringtrace_trace_event_name(&r), e->name) == 0);
		CHECK(ringtrace_trace_format(t, &r, buf, sizeof(buf)) >= 0);
		CHECKF(strcmp(buf, e->text) == 0, "event %zu: \"%s\" != \"%s\"", n, buf, e->text);
		CHECK_EQ_U64(r.ns, ringtrace_rb_ticks_to_ns(rb, r.ts));
		if (strcmp(e->name, "ringtrace_printf") != 0 && r.id != 0)
			CHECK(strncmp(r.comm, "trw-", 4) == 0 || r.tid == (uint32_t)getpid());
		n++;
	}
	CHECK_EQ_U64(n, tt->n);
	CHECKF(errs.n == 0, "%u errors, first: %s", errs.n, errs.first);
	CHECK(ringtrace_trace_errors(t) == 0);
	/* stream accounting */
	uint64_t total = 0;
	for (uint32_t i = 0; i < ringtrace_trace_stream_count(t); i++) {
		const struct ringtrace_trace_stream_info *s = ringtrace_trace_stream(t, i);
		total += s->events;
		CHECK(s->dropped == 0 && s->overrun == 0 && s->errors == 0);
		CHECK(s->bytes % tt->page_size == 0);
	}
	CHECK_EQ_U64(total, tt->n);
	ringtrace_trace_close(t);
}

/* Three writer threads and this one record into a buffer that is then
 * written to dir as a trace; tt gets the events it holds. */
static void threads_trace(char *dir, struct tt_trace *tt)
{
	CHECK(mkdtemp(dir) != NULL);
	struct ringtrace_rb_config cfg;
	ringtrace_rb_config_init(&cfg);
	cfg.page_size = 4096;
	cfg.pool_size = 4096 * 1024;
	CHECK(ringtrace_rb_create(&cfg, &rb) == 0);
	CHECK(ringtrace_events_set_buffer(rb) == 0);
	CHECK(ringtrace_event_enable("tr_*") == 4);
	CHECK(ringtrace_event_enable("ringtrace_printf") == 1);
	pthread_t th[3];
	for (int i = 0; i < 3; i++)
		CHECK(pthread_create(&th[i], NULL, writer, (void *)(intptr_t)(i + 1)) == 0);
	for (int i = 0; i < 100; i++)
		trace_tr_num(-i, 7);
	for (int i = 0; i < 3; i++)
		CHECK(pthread_join(th[i], NULL) == 0);
	ringtrace_rb_writer_release(rb);
	CHECK(ringtrace_events_set_buffer(NULL) == 0);
	memset(tt, 0, sizeof(*tt));
	struct ringtrace_trace_stats st = {1, 2, 3, 4, 5, 6, 7, 0};
	tt_write_trace(rb, dir, tt, &st);
	CHECK_EQ_U64(tt->n, 3 * (NEV + NEV / 5) + 100);
}

static void threads_done(char *dir, struct tt_trace *tt)
{
	free(tt->ev);
	ringtrace_rb_destroy(rb);
	tt_rm_dir(dir);
}

/* Every event once, merged by time, with the text, tid and name written. */
static void test_merged(void)
{
	char dir[] = "/tmp/ringtrace-trace-XXXXXX";
	struct tt_trace tt;
	threads_trace(dir, &tt);
	check_merged(dir, &tt);
	threads_done(dir, &tt);
}

/* The schema block as the reader sees it: events, sites, stats, clock. */
static void test_schema(void)
{
	char dir[] = "/tmp/ringtrace-trace-XXXXXX";
	struct tt_trace tt;
	threads_trace(dir, &tt);

	/* the schema block as the reader sees it */
	ringtrace_trace *t;
	CHECK(ringtrace_trace_open(dir, NULL, NULL, &t) == 0);
	CHECK(ringtrace_trace_stream_count(t) == 4);
	const struct ringtrace_trace_event_def *d = NULL;
	for (uint32_t i = 0; i < ringtrace_trace_event_count(t); i++)
		if (strcmp(ringtrace_trace_event(t, i)->name, "tr_mix") == 0)
			d = ringtrace_trace_event(t, i);
	CHECK(d != NULL && d->nfields == 6); /* _truncated + 5 */
	CHECK(d->fields[1].type == RINGTRACE_FT_ENUM && d->fields[1].enm->count == 2);
	CHECK(strcmp(d->fields[1].enm->values[1].name, "GREEN") == 0);
	CHECK(strcmp(d->print_fmt, "color=%s odd=%d half=%g arr=%s raw=%s") == 0);
	/* threads racing on a site's first call may each register it */
	CHECK(ringtrace_trace_site_count(t) >= 1 && ringtrace_trace_site_count(t) <= 3);
	for (uint32_t i = 0; i < ringtrace_trace_site_count(t); i++)
		CHECK(strcmp(ringtrace_trace_site(t, i)->fmt, "w%d i=%d %s %.2f") == 0);
	CHECK(ringtrace_trace_stat_count(t) == 8);
	CHECK(strcmp(ringtrace_trace_stat(t, 6)->key, "duration_ns") == 0);
	CHECK(ringtrace_trace_stat(t, 6)->value == 7);
	CHECK(ringtrace_trace_clock(t)->freq == ringtrace_rb_clock_freq(rb));
	ringtrace_trace_close(t);
	threads_done(dir, &tt);
}

/* Overwrite mode: pages recycled before they were read show as losses. */
static void test_lost(void)
{
	char dir[] = "/tmp/ringtrace-trace-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	struct ringtrace_rb_config cfg;
	ringtrace_rb_config_init(&cfg);
	cfg.page_size = 4096;
	cfg.pool_size = 4096 * 4;
	cfg.mode = RINGTRACE_RB_OVERWRITE;
	CHECK(ringtrace_rb_create(&cfg, &rb) == 0);
	CHECK(ringtrace_events_set_buffer(rb) == 0);
	CHECK(ringtrace_event_enable("tr_*") == 4); /* tr_num recorded */
	const int written = 5000;
	for (int i = 0; i < written; i++)
		trace_tr_num(i, (uint64_t)i);
	ringtrace_rb_writer_release(rb);
	CHECK(ringtrace_events_set_buffer(NULL) == 0);
	struct tt_trace tt = {0};
	tt_write_trace(rb, dir, &tt, NULL);
	CHECK(tt.n < (size_t)written);
	ringtrace_trace *t;
	struct tt_errs errs = {0};
	CHECK(ringtrace_trace_open(dir, tt_on_error, &errs, &t) == 0);
	struct ringtrace_trace_record r;
	uint64_t lost = 0, n = 0;
	int first = 1;
	while (ringtrace_trace_next(t, &r) == 1) {
		if (r.kind == RINGTRACE_TRACE_LOST) {
			CHECK(r.lost > 0);
			/* overwrite mode: every loss is an overrun, none a drop */
			CHECK(r.overrun == r.lost && r.dropped == 0);
			lost += r.lost;
			continue;
		}
		if (first) /* the events before the first page read were lost */
			CHECK(lost > 0);
		first = 0;
		n++;
	}
	CHECK_EQ_U64(n, tt.n);
	CHECK_EQ_U64(n + lost, (uint64_t)written);
	CHECK(errs.n == 0);
	CHECK_EQ_U64(ringtrace_trace_stream(t, 0)->overrun, lost);
	ringtrace_trace_close(t);
	free(tt.ev);
	ringtrace_rb_destroy(rb);
	tt_rm_dir(dir);
}

/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
static const struct check_case cases[] = {
	CHECK_CASE(trace_read_events_merged_by_time_with_the_text_written, test_merged),
	CHECK_CASE(trace_read_schema_block_gives_events_sites_stats_and_clock, test_schema),
	CHECK_CASE(trace_read_overwrite_losses_reported_delivered_plus_lost_is_written, test_lost),
};
/* clang-format on */

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
