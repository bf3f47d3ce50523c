/*
 * Corrupted traces (fixed seed): random bytes flipped in the stream files
 * and in the metadata's schema block, a few thousand times, and the
 * schema block cut at every offset. The reader never crashes (the ASan
 * build checks every access) or hangs; a damaged stream gives errors
 * that name the file and a byte offset; a damaged schema block either
 * still parses or fails with a message naming metadata and a line.
 */
#define RINGTRACE_CREATE_EVENTS
#include "test_trace_util.h"

#ifdef RINGTRACE_SANITIZED
#define ITER 1500
#else
#define ITER 3000
#endif

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static ringtrace_rb *rb;

static void *writer(void *arg)
{
	int base = (int)(intptr_t)arg;
	char s[64];
	for (int i = 0; i < 300; i++) {
		switch (i % 4) {
		case 0:
			snprintf(s, sizeof(s), "w%d-%d%.*s", base, i, i % 17, "abcdefghijklmnopq");
			trace_tr_str((int16_t)i, s);
			break;
		case 1:
			trace_tr_mix(i);
			break;
		case 2:
			ringtrace_printf("w%d %d %s %g %p", base, i, "str", i * 0.5, (void *)&rng);
			break;
		default:
			trace_tr_num(i, (uint64_t)i);
		}
	}
	ringtrace_rb_writer_release(rb);
	return NULL;
}

struct stats {
	unsigned opened, failed, errors, bad_msg;
};

static void read_trace(const char *dir, struct stats *st, const char *must_name)
{
	ringtrace_trace *t;
	struct tt_errs errs = {0};
	if (ringtrace_trace_open(dir, tt_on_error, &errs, &t) < 0) {
		const char *m = ringtrace_trace_open_error();
		st->failed++;
		CHECKF(strstr(m, "metadata") != NULL, "open error does not name metadata: %s", m);
		return;
	}
	st->opened++;
	struct ringtrace_trace_record r;
	char buf[4096];
	uint64_t n = 0;
	while (ringtrace_trace_next(t, &r) == 1) {
		if (r.kind == RINGTRACE_TRACE_EVENT)
			(void)ringtrace_trace_format(t, &r, buf, sizeof(buf));
		CHECK(++n < 10000000);
	}
	if (errs.n) {
		st->errors++;
		if (!strstr(errs.first, ": byte ") || !strstr(errs.first, must_name))
			st->bad_msg++;
		CHECKF(strstr(errs.first, ": byte ") != NULL, "error without offset: %s",
		       errs.first);
	}
	CHECK(ringtrace_trace_errors(t) == errs.n);
	ringtrace_trace_close(t);
}

/* The trace and its files as written. */
struct corrupt {
	char dir[64];
	struct tt_trace tt;
	char paths[4][512]; /* the stream files */
	char *orig[4];      /* their content */
	size_t len[4];
	int nf;
	char mpath[512]; /* the metadata */
	char *meta;
	size_t mlen;
	size_t bstart; /* where its schema block starts */
};

/* Two writer threads' trace, read back without an error before any damage;
 * the random numbers start from the seed. */
static void corrupt_trace(struct corrupt *c)
{
	memset(c, 0, sizeof(*c));
	rng = 0x9E3779B97F4A7C15ull;
	snprintf(c->dir, sizeof(c->dir), "/tmp/ringtrace-corrupt-XXXXXX");
	char *dir = c->dir;
	CHECK(mkdtemp(dir) != NULL);
	struct ringtrace_rb_config cfg;
	ringtrace_rb_config_init(&cfg);
	cfg.page_size = 4096;
	cfg.pool_size = 4096 * 64;
	CHECK(ringtrace_rb_create(&cfg, &rb) == 0);
	CHECK(ringtrace_events_set_buffer(rb) == 0);
	CHECK(ringtrace_event_enable("tr_*") == 4);
	CHECK(ringtrace_event_enable("ringtrace_printf") == 1);
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&th[i], NULL, writer, (void *)(intptr_t)(i + 1)) == 0);
	for (int i = 0; i < 2; i++)
		CHECK(pthread_join(th[i], NULL) == 0);
	CHECK(ringtrace_events_set_buffer(NULL) == 0);
	struct ringtrace_trace_stats tst = {1, 2, 3, 4, 5, 6, 7, 1};
	tt_write_trace(rb, dir, &c->tt, &tst);

	/* the files */
	DIR *d = opendir(dir);
	struct dirent *de;
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, "stream_", 7) == 0 && c->nf < 3) {
			char path[sizeof(c->paths[0])]; /* (not into c: dir is in c) */
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			memcpy(c->paths[c->nf++], path, sizeof(path));
		}
	closedir(d);
	CHECK(c->nf == 2);
	for (int i = 0; i < c->nf; i++)
		tt_read_file(c->paths[i], &c->orig[i], &c->len[i]);
	snprintf(c->mpath, sizeof(c->mpath), "%s/metadata", c->dir);
	tt_read_file(c->mpath, &c->meta, &c->mlen);
	char *blk = strstr(c->meta, "\n/* ringtrace-schema 1\n");
	CHECK(blk != NULL);
	c->bstart = (size_t)(blk + 1 - c->meta);

	struct stats st = {0};
	read_trace(dir, &st, "stream_");
	CHECK(st.opened == 1 && st.errors == 0);
}

static void corrupt_done(struct corrupt *c)
{
	free(c->meta);
	for (int i = 0; i < c->nf; i++)
		free(c->orig[i]);
	free(c->tt.ev);
	ringtrace_rb_destroy(rb);
	tt_rm_dir(c->dir);
}

/* One stream file's content in buf with 1..8 random bytes flipped (biased
 * to page headers); returns which file. */
static int stream_damage(const struct corrupt *c, char *buf)
{
	const int nf = c->nf;
	char *const *orig = c->orig;
	const size_t *len = c->len;
	int f = (int)(rnd() % (uint64_t)nf);
	memcpy(buf, orig[f], len[f]);
	int nflip = 1 + (int)(rnd() % 8);
	for (int k = 0; k < nflip; k++) {
		size_t at = (size_t)(rnd() % len[f]);
		if (rnd() % 2) /* into a page header */
			at = at / 4096 * 4096 + (size_t)(rnd() % 112);
		buf[at] ^= (char)(1 + rnd() % 255);
	}
	return f;
}

/* Random bytes flipped in the stream files: errors name the file and a
 * byte offset; the reader never crashes or hangs. */
static void test_stream_bytes(void)
{
	struct corrupt c;
	corrupt_trace(&c);
	const char *dir = c.dir;
	const size_t *len = c.len;
	struct stats st;

	/* stream files: flip 1..8 random bytes (biased to page headers) */
	memset(&st, 0, sizeof(st));
	char *buf = malloc(len[0] > len[1] ? len[0] : len[1]);
	for (int it = 0; it < ITER; it++) {
		int f = stream_damage(&c, buf);
		tt_write_file(c.paths[f], buf, len[f]);
		read_trace(dir, &st, c.paths[f]);
		tt_write_file(c.paths[f], c.orig[f], len[f]);
	}
	printf("streams: %u iterations, %u with errors (%u naming another file)\n", ITER, st.errors,
	       st.bad_msg);
	CHECK(st.failed == 0);
	CHECK(st.errors > ITER / 4);
	CHECK(st.bad_msg == 0);
	free(buf);
	corrupt_done(&c);
}

/* Random bytes flipped in the schema block: it parses, or the open fails
 * naming the metadata. */
static void test_schema_bytes(void)
{
	struct corrupt c;
	corrupt_trace(&c);
	const char *dir = c.dir, *mpath = c.mpath, *meta = c.meta;
	const size_t mlen = c.mlen, bstart = c.bstart;
	struct stats st;

	/* the random numbers the stream case draws before this one */
	char *scratch = malloc(c.len[0] > c.len[1] ? c.len[0] : c.len[1]);
	for (int it = 0; it < ITER; it++)
		stream_damage(&c, scratch);
	free(scratch);

	/* schema block: flip 1..4 bytes */
	memset(&st, 0, sizeof(st));
	char *mb = malloc(mlen + 1);
	for (int it = 0; it < ITER; it++) {
		memcpy(mb, meta, mlen);
		int nflip = 1 + (int)(rnd() % 4);
		for (int k = 0; k < nflip; k++) {
			size_t at = bstart + (size_t)(rnd() % (mlen - bstart));
			if (rnd() % 4 == 0) /* printable damage, more likely to parse */
				mb[at] = (char)(' ' + rnd() % 95);
			else
				mb[at] ^= (char)(1 + rnd() % 255);
		}
		tt_write_file(mpath, mb, mlen);
		read_trace(dir, &st, "stream_");
	}
	printf("schema: %u iterations, %u rejected, %u opened\n", ITER, st.failed, st.opened);
	CHECK(st.failed > ITER / 2);
	free(mb);
	corrupt_done(&c);
}

/* The schema block cut at every offset: always refused, naming a line. */
static void test_schema_cut(void)
{
	struct corrupt c;
	corrupt_trace(&c);
	const char *dir = c.dir, *mpath = c.mpath, *meta = c.meta;
	const size_t mlen = c.mlen, bstart = c.bstart;

	/* schema block cut at every offset: always rejected, naming a line */
	for (size_t cut = bstart; cut < mlen; cut++) {
		tt_write_file(mpath, meta, cut);
		ringtrace_trace *t;
		CHECKF(ringtrace_trace_open(dir, NULL, NULL, &t) < 0,
		       "metadata cut at %zu accepted", cut);
		const char *m = ringtrace_trace_open_error();
		CHECKF(strstr(m, "metadata") &&
			       (strstr(m, ": line ") || strstr(m, "no \"/* ringtrace-schema")),
		       "cut at %zu: %s", cut, m);
	}
	corrupt_done(&c);
}

/* A malformed line of the schema block is named by its number. */
static void test_malformed_line(void)
{
	struct corrupt c;
	corrupt_trace(&c);
	const char *dir = c.dir, *mpath = c.mpath, *meta = c.meta;
	const size_t mlen = c.mlen, bstart = c.bstart;
	char *mb = malloc(mlen + 1);

	/* a malformed line is named by number */
	tt_write_file(mpath, meta, mlen);
	unsigned line = 1;
	for (size_t i = 0; i < bstart; i++)
		line += meta[i] == '\n';
	memcpy(mb, meta, mlen);
	char *clk = strstr(mb + bstart, "\nclock ");
	CHECK(clk != NULL);
	clk[1] = 'k';
	tt_write_file(mpath, mb, mlen);
	ringtrace_trace *t;
	CHECK(ringtrace_trace_open(dir, NULL, NULL, &t) < 0);
	char want[64];
	snprintf(want, sizeof(want), "/metadata: line %u: unknown line", line + 1);
	CHECKF(strstr(ringtrace_trace_open_error(), want), "%s (want %s)",
	       ringtrace_trace_open_error(), want);
	tt_write_file(mpath, meta, mlen);
	free(mb);
	corrupt_done(&c);
}

/* An event or site id defined twice is refused, naming the second line
 * (found in constant time per line: a long metadata is not quadratic). */
static void test_duplicate_ids(void)
{
	struct corrupt c;
	corrupt_trace(&c);
	const char *meta = c.meta;
	const size_t mlen = c.mlen, bstart = c.bstart;
	for (int k = 0; k < 2; k++) {
		char ins[512];
		size_t at;
		if (k == 0) {
			/* before the second event line (after the first one's
			 * fields): an event with the first one's id, no fields */
			const char *e1 = strstr(meta + bstart, "\nevent ");
			CHECK(e1 != NULL);
			const char *e2 = strstr(e1 + 1, "\nevent ");
			CHECK(e2 != NULL);
			unsigned id;
			CHECK(sscanf(e1 + 1, "event %u", &id) == 1);
			snprintf(ins, sizeof(ins), "event %u 0 again 0 x\n", id);
			at = (size_t)(e2 + 1 - meta);
		} else {
			/* a copy of the first site line, right after it */
			const char *l = strstr(meta + bstart, "\nsite ");
			CHECK(l != NULL);
			const char *e = strchr(l + 1, '\n');
			CHECK((size_t)(e - l) < sizeof(ins));
			memcpy(ins, l + 1, (size_t)(e - l));
			ins[e - l] = 0;
			at = (size_t)(e + 1 - meta);
		}
		size_t n = strlen(ins);
		char *mb = malloc(mlen + n + 1);
		memcpy(mb, meta, at);
		memcpy(mb + at, ins, n);
		memcpy(mb + at + n, meta + at, mlen - at);
		tt_write_file(c.mpath, mb, mlen + n);
		unsigned line = 1;
		for (size_t i = 0; i < at; i++)
			line += meta[i] == '\n';
		ringtrace_trace *t;
		CHECK(ringtrace_trace_open(c.dir, NULL, NULL, &t) < 0);
		char want[80];
		snprintf(want, sizeof(want), "/metadata: line %u: %s id ", line,
			 k ? "site" : "event");
		CHECKF(strstr(ringtrace_trace_open_error(), want) &&
			       strstr(ringtrace_trace_open_error(), "defined twice"),
		       "%s (want \"%s... defined twice\")", ringtrace_trace_open_error(), want);
		free(mb);
	}
	tt_write_file(c.mpath, meta, mlen);
	corrupt_done(&c);
}

/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
static const struct check_case cases[] = {
	CHECK_CASE(trace_corrupt_stream_bytes_give_errors_naming_file_and_offset, test_stream_bytes),
	CHECK_CASE(trace_corrupt_schema_bytes_parse_or_fail_naming_metadata, test_schema_bytes),
	CHECK_CASE(trace_corrupt_schema_cut_anywhere_refused_naming_a_line, test_schema_cut),
	CHECK_CASE(trace_corrupt_malformed_schema_line_named_by_number, test_malformed_line),
	CHECK_CASE(trace_corrupt_duplicate_event_and_site_ids_refused_naming_the_line, test_duplicate_ids),
};
/* clang-format on */

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
