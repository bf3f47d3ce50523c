/*
 * The reader's `filter` and `trigger` lines (docs/format.md, section 7) on
 * hand-written schema blocks: what a valid block gives through the API
 * (filter expression and rejected count per event, triggers in order with
 * their counters) and what `ringtrace stat` prints from it; a block
 * without those lines gives no filter and no trigger; and every malformed
 * line is refused with the metadata's name, its line number and what is
 * wrong. `unwritten` lines (pages the recorder could not write) make
 * streams without a file whose losses the reader gives, with the reason,
 * and stat shows. A `realtime_offset` line gives the wall clock's offset
 * (absent: none). The traces have no stream file: only the schema block
 * matters.
 * Each is a case, in a directory of its own.
 */
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ringtrace/trace.h>

#include "check.h"

static char dir[64], mpath[128];

static void write_meta(const char *body)
{
	FILE *f = fopen(mpath, "w");
	CHECK(f != NULL);
	/* A TSDL line first: the block's line numbers count from the file's
	 * first line, as they do in a real trace. */
	fprintf(f, "/* CTF 1.8 */\n/* ringtrace-schema 1\nclock tsc 1000000000 0 0\n%send */\n",
		body);
	CHECK(fclose(f) == 0);
}

/* Event 1 (ev_a, one int field pid), 2 (ev_b), 3 (ev_c); lines 4 to 8. */
#define EVENTS                        \
	"event 1 0 ev_a 1 pid=%25d\n" \
	"field pid 1 4 1 4 0 0\n"     \
	"event 2 0 ev_b 0 %\n"        \
	"event 3 0 ev_c 0 %\n"
#define FIRST_LINE 8 /* of what follows EVENTS */

static const struct ringtrace_trace_event_def *by_name(ringtrace_trace *t, const char *name)
{
	for (uint32_t i = 0; i < ringtrace_trace_event_count(t); i++)
		if (strcmp(ringtrace_trace_event(t, i)->name, name) == 0)
			return ringtrace_trace_event(t, i);
	CHECKF(0, "no event %s", name);
	return NULL;
}

static void test_valid(void)
{
	write_meta(EVENTS "filter 1 3400 pid%20>%2010%20&&%20!(pid%20==%2042)\n"
			  "filter 2 7 -\n"
			  "trigger 1 0 ev_a%20if%20pid%20==%203:%20snapshot:1\n"
			  "trigger 0 18446744073709551615 ev_b:%20traceoff\n"
			  "stat hit 0\n");
	ringtrace_trace *t;
	CHECKF(ringtrace_trace_open(dir, NULL, NULL, &t) == 0, "%s", ringtrace_trace_open_error());
	const struct ringtrace_trace_event_def *a = by_name(t, "ev_a"), *b = by_name(t, "ev_b"),
					       *c = by_name(t, "ev_c");
	CHECK(a->filter && strcmp(a->filter, "pid > 10 && !(pid == 42)") == 0);
	CHECK_EQ_U64(a->rejected, 3400);
	CHECK(b->filter == NULL); /* removed before the end, calls rejected before that */
	CHECK_EQ_U64(b->rejected, 7);
	CHECK(c->filter == NULL && c->rejected == 0);
	CHECK(ringtrace_trace_event_by_id(t, 1) == a);
	CHECK_EQ_U64(ringtrace_trace_trigger_count(t), 2);
	const struct ringtrace_trace_trigger *g0 = ringtrace_trace_trigger(t, 0),
					     *g1 = ringtrace_trace_trigger(t, 1);
	CHECK(strcmp(g0->spec, "ev_a if pid == 3: snapshot:1") == 0);
	CHECK(g0->fired == 1 && g0->skipped == 0);
	CHECK(strcmp(g1->spec, "ev_b: traceoff") == 0);
	CHECK(g1->fired == 0 && g1->skipped == UINT64_MAX);
	CHECK(ringtrace_trace_trigger(t, 2) == NULL);
	ringtrace_trace_close(t);

	/* what ringtrace stat makes of it */
	char cmd[512], out[128];
	snprintf(out, sizeof(out), "%s.out", dir);
	snprintf(cmd, sizeof(cmd), "'%s' stat '%s' >'%s'", RINGTRACE_TOOL, dir, out);
	int st = system(cmd);
	CHECKF(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status %d", cmd, st);
	FILE *f = fopen(out, "r");
	CHECK(f != NULL);
	char line[512];
	int seen_a = 0, seen_b = 0, seen_c = 0, seen_g0 = 0, seen_g1 = 0, seen_hdr = 0,
	    seen_thdr = 0;
	while (fgets(line, sizeof(line), f)) {
		char name[64], rest[256];
		unsigned long long n1, n2;
		int k = sscanf(line, " %63s %llu %llu %255[^\n]", name, &n1, &n2, rest);
		if (strstr(line, "events by name:") && strstr(line, "events") &&
		    strstr(line, "rejected"))
			seen_hdr++;
		if (strncmp(line, "triggers:", 9) == 0)
			seen_thdr++;
		if (k >= 3 && strcmp(name, "ev_a") == 0) {
			CHECKF(k == 4 && n1 == 0 && n2 == 3400 &&
				       strcmp(rest, "filter: pid > 10 && !(pid == 42)") == 0,
			       "stat line: %s", line);
			seen_a++;
		}
		if (k >= 3 && strcmp(name, "ev_b") == 0) {
			CHECKF(k == 3 && n1 == 0 && n2 == 7, "stat line: %s", line);
			seen_b++;
		}
		if (strstr(line, "ev_c"))
			seen_c++;
		if (strstr(line, "ev_a if pid == 3: snapshot:1")) {
			CHECKF(sscanf(line, " %llu %llu", &n1, &n2) == 2 && n1 == 1 && n2 == 0,
			       "stat line: %s", line);
			seen_g0++;
		}
		if (strstr(line, "ev_b: traceoff")) {
			CHECKF(sscanf(line, " %llu %llu", &n1, &n2) == 2 && n1 == 0 &&
				       n2 == 18446744073709551615ull,
			       "stat line: %s", line);
			seen_g1++;
		}
	}
	fclose(f);
	unlink(out);
	CHECK(seen_hdr == 1 && seen_thdr == 1);
	CHECK(seen_a == 1 && seen_b == 1 && seen_g0 == 1 && seen_g1 == 1);
	CHECK(seen_c == 0); /* no event, no filter, nothing rejected: not listed */
}

/* Without filter or trigger lines (traces from before filters). */
static void test_none(void)
{
	write_meta(EVENTS "stat hit 0\n");
	ringtrace_trace *t;
	CHECKF(ringtrace_trace_open(dir, NULL, NULL, &t) == 0, "%s", ringtrace_trace_open_error());
	for (uint32_t i = 0; i < ringtrace_trace_event_count(t); i++)
		CHECK(ringtrace_trace_event(t, i)->filter == NULL &&
		      ringtrace_trace_event(t, i)->rejected == 0);
	CHECK(ringtrace_trace_trigger_count(t) == 0 && ringtrace_trace_trigger(t, 0) == NULL);
	ringtrace_trace_close(t);
	/* no triggers section */
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "'%s' stat '%s' | grep -q '^triggers:'", RINGTRACE_TOOL, dir);
	int st = system(cmd);
	CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 1);
}

/* The wall clock: the offset as written, either sign, to the last ns;
 * none without the line. */
static void test_realtime_offset(void)
{
	static const struct {
		const char *text;
		int64_t want;
	} ok[] = {
		{"1764922501123456789", INT64_C(1764922501123456789)},
		{"-42", -42},
		{"0", 0},
		{"9223372036854775807", INT64_MAX},
		{"-9223372036854775808", INT64_MIN},
	};
	ringtrace_trace *t;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		char body[512];
		snprintf(body, sizeof(body), "realtime_offset %s\n%sstat hit 0\n", ok[i].text,
			 EVENTS);
		write_meta(body);
		CHECKF(ringtrace_trace_open(dir, NULL, NULL, &t) == 0, "%s",
		       ringtrace_trace_open_error());
		int64_t off = 12345;
		CHECK(ringtrace_trace_realtime_offset(t, &off) == 1);
		CHECKF(off == ok[i].want, "realtime_offset %s read as %lld", ok[i].text,
		       (long long)off);
		ringtrace_trace_close(t);
	}
	write_meta(EVENTS "stat hit 0\n");
	CHECKF(ringtrace_trace_open(dir, NULL, NULL, &t) == 0, "%s", ringtrace_trace_open_error());
	int64_t off = 12345;
	CHECK(ringtrace_trace_realtime_offset(t, &off) == 0 && off == 12345);
	ringtrace_trace_close(t);
}

struct bad {
	const char *lines; /* after EVENTS */
	unsigned line;     /* offset of the bad line in `lines` (0: the first) */
	const char *msg;
};

static const struct bad bad[] = {
	{"filter 9 1 pid%20>%201\n", 0, "filter: event id 9 is not defined"},
	/* the printf event is not implied for filter lines */
	{"filter 0 1 -\n", 0, "filter: event id 0 is not defined"},
	{"filter 1 1 pid%20>%201\nfilter 2 1 -\nfilter 1 2 -\n", 2,
	 "filter: second filter line for event 1 (ev_a)"},
	{"filter 1 1\n", 0, "filter: expected \"filter <event id> <rejected> <expression|->\""},
	{"filter 1 1 a b\n", 0, "filter: expected"},
	{"filter 1  1 a\n", 0, "filter: expected"},
	{"filter 1 1 a \n", 0, "filter: expected"},
	{"filter x 1 a\n", 0, "filter event id \"x\" is not a number"},
	{"filter 01 1 a\n", 0, "filter event id \"01\" is not a number"},
	{"filter 1 -1 a\n", 0, "filter rejected count \"-1\" is not a number"},
	{"filter 1 18446744073709551616 a\n", 0, "filter rejected count"},
	{"filter 1 1 %\n", 0, "filter: empty expression"},
	{"filter 1 1 pid%2\n", 0, "filter expression: bad %XX escape"},
	{"filter 1 1 pid%00\n", 0, "filter expression: %00 in a string"},
	{"filter 1 1 name~\"x\"\n", 0, "filter expression: character that must be percent-encoded"},
	{"trigger 1 0\n", 0, "trigger: expected \"trigger <fired> <skipped> <spec>\""},
	{"trigger 1 0 a b\n", 0, "trigger: expected"},
	{"trigger 1 0 %\n", 0, "trigger with an empty spec"},
	{"trigger -1 0 a\n", 0, "trigger fired count"},
	{"trigger 1 99999999999999999999 a\n", 0, "trigger skipped count"},
	{"trigger 1 0 a%ZZ\n", 0, "trigger spec: bad %XX escape"},
	{"unwritten 1 5 0 5 1 ENOSPC\n", 0, "unwritten: 0 pages"},
	{"unwritten 1 6 1 5 1 ENOSPC\n", 0, "unwritten: 6 events, more than the stream's 5"},
	{"unwritten 1 5 1 5 1 enospc\n", 0, "unwritten: reason \"enospc\" is not an error name"},
	{"unwritten 1 5 1 5 1 %\n", 0, "unwritten: reason \"%\" is not an error name"},
	{"unwritten 1 5 1 5 1 E%20IO\n", 0, "unwritten: reason \"E%20IO\" is not an error name"},
	{"unwritten 1 5 1 5 1\n", 0,
	 "unwritten: expected \"unwritten <stream> <events> <pages> <end> <tid> <reason>\""},
	{"unwritten x 5 1 5 1 EIO\n", 0, "unwritten stream \"x\" is not a number"},
	{"unwritten 1 5 1 5 4294967296 EIO\n", 0, "unwritten tid \"4294967296\" is not a number"},
	{"unwritten 1 5 1 99999999999999999999 7 EIO\n", 0, "unwritten end"},
	{"realtime_offset 1.5\n", 0, "realtime_offset \"1.5\" is not a 64-bit integer (ns)"},
	{"realtime_offset 9223372036854775808\n", 0,
	 "realtime_offset \"9223372036854775808\" is not a 64-bit integer"},
	{"realtime_offset -0\n", 0, "realtime_offset \"-0\" is not a 64-bit integer"},
	{"realtime_offset +5\n", 0, "realtime_offset \"+5\" is not a 64-bit integer"},
	{"realtime_offset 07\n", 0, "realtime_offset \"07\" is not a 64-bit integer"},
	{"realtime_offset\n", 0, "realtime_offset: expected \"realtime_offset <ns>\""},
	{"realtime_offset 1 2\n", 0, "realtime_offset: expected \"realtime_offset <ns>\""},
	{"realtime_offset 5\nstat hit 0\nrealtime_offset 5\n", 2, "second realtime_offset line"},
	{"stat hit 0\ntriggers 1 0 a\n", 1, "unknown line \"triggers 1 0 a\""},
	{"filters 1 0 a\n", 0, "unknown line"},
};

static void test_bad(void)
{
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char body[1024], want[256];
		snprintf(body, sizeof(body), "%s%s", EVENTS, bad[i].lines);
		write_meta(body);
		ringtrace_trace *t = NULL;
		CHECKF(ringtrace_trace_open(dir, NULL, NULL, &t) < 0, "accepted: %s", bad[i].lines);
		const char *m = ringtrace_trace_open_error();
		snprintf(want, sizeof(want), "%s/metadata: line %u: %s", dir,
			 FIRST_LINE + bad[i].line, bad[i].msg);
		CHECKF(strstr(m, want) != NULL, "case %zu: got \"%s\", want \"%s\"", i, m, want);
	}
}

/* Pages not written: stream 3 (every page, 15 events overwritten before
 * them) and stream 4 (with drops after them), neither with a file. */
static void test_unwritten(void)
{
	write_meta(EVENTS "dropped 4 7 44\n"
			  "unwritten 3 10 2 25 33 ENOSPC\n"
			  "unwritten 4 5 1 5 44 EIO\n"
			  "stat hit 0\n");
	ringtrace_trace *t;
	CHECKF(ringtrace_trace_open(dir, NULL, NULL, &t) == 0, "%s", ringtrace_trace_open_error());
	CHECK_EQ_U64(ringtrace_trace_stream_count(t), 2);
	struct ringtrace_trace_record r;
	uint64_t lost = 0, uw = 0, ov = 0, dr = 0;
	while (ringtrace_trace_next(t, &r) == 1) {
		CHECK(r.kind == RINGTRACE_TRACE_LOST);
		CHECK_EQ_U64(r.lost, r.dropped + r.overrun + r.unwritten);
		lost += r.lost;
		uw += r.unwritten;
		ov += r.overrun;
		dr += r.dropped;
	}
	CHECK(lost == 37 && uw == 15 && ov == 15 && dr == 7);
	const struct ringtrace_trace_stream_info *a = ringtrace_trace_stream(t, 0),
						 *b = ringtrace_trace_stream(t, 1);
	CHECK(a->id == 3 && a->tid == 33 && a->events == 0 && a->dropped == 0);
	CHECK(a->overrun == 15 && a->unwritten == 10 && a->unwritten_pages == 2);
	CHECK(a->unwritten_reason && strcmp(a->unwritten_reason, "ENOSPC") == 0);
	CHECK(b->id == 4 && b->tid == 44 && b->dropped == 7 && b->overrun == 0);
	CHECK(b->unwritten == 5 && b->unwritten_pages == 1);
	CHECK(b->unwritten_reason && strcmp(b->unwritten_reason, "EIO") == 0);
	ringtrace_trace_close(t);

	/* stat: the column, and each reason's line */
	char cmd[2048];
	snprintf(cmd, sizeof(cmd),
		 "'%s' stat '%s' >'%s.out' && grep -q '^total  *2  *0  *7  *15  *15 ' '%s.out' && "
		 "grep -qx 'unwritten: 10 events in 2 pages of 1 stream not written by the "
		 "recorder: ENOSPC (no space left on device); counted as lost' '%s.out' && "
		 "grep -qx 'unwritten: 5 events in 1 pages of 1 stream not written by the "
		 "recorder: EIO (input/output error); counted as lost' '%s.out'",
		 RINGTRACE_TOOL, dir, dir, dir, dir, dir);
	int st = system(cmd);
	char out[128];
	snprintf(out, sizeof(out), "%s.out", dir);
	if (st != 0)
		system(strcat(strcpy(cmd, "cat "), out));
	unlink(out);
	CHECKF(st == 0, "stat's output (above) lacks the unwritten counts");

	/* one line per stream */
	write_meta(EVENTS "unwritten 3 10 2 25 33 ENOSPC\nunwritten 3 1 1 30 33 ENOSPC\n");
	CHECK(ringtrace_trace_open(dir, NULL, NULL, &t) < 0);
	CHECKF(strstr(ringtrace_trace_open_error(), "two unwritten lines for stream 3") != NULL,
	       "%s", ringtrace_trace_open_error());
}

/* Runs fn with dir, a directory of its own, and mpath its metadata. */
static void in_dir(void (*fn)(void))
{
	snprintf(dir, sizeof(dir), "/tmp/ringtrace-schema-XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
	snprintf(mpath, sizeof(mpath), "%s/metadata", dir);
	fn();
	unlink(mpath);
	CHECK(rmdir(dir) == 0);
}

static void case_valid(void)
{
	in_dir(test_valid);
}

static void case_none(void)
{
	in_dir(test_none);
}

static void case_unwritten(void)
{
	in_dir(test_unwritten);
}

static void case_realtime_offset(void)
{
	in_dir(test_realtime_offset);
}

static void case_bad(void)
{
	in_dir(test_bad);
	printf("  %zu malformed lines refused\n", sizeof(bad) / sizeof(bad[0]));
}

/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
static const struct check_case cases[] = {
	CHECK_CASE(trace_schema_filter_and_trigger_lines_read_and_shown_by_stat, case_valid),
	CHECK_CASE(trace_schema_without_filter_or_trigger_lines_gives_none, case_none),
	CHECK_CASE(trace_schema_malformed_lines_refused_with_their_line_number, case_bad),
	CHECK_CASE(trace_schema_unwritten_lines_counted_as_lost_with_their_reason, case_unwritten),
	CHECK_CASE(trace_schema_realtime_offset_line_read_to_the_ns_or_absent, case_realtime_offset),
};
/* clang-format on */

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
