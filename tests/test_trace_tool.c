/*
 * The ringtrace command: exit codes (0 ok, 1 damaged or unreadable trace,
 * 2 usage), --help of every subcommand, and the report's lines, exactly
 * in the ftrace shape "%16s-%-7u [%03u] %5llu.%06llu: %s: %s", merged by
 * time; --events, --from/--to, --raw; stat and list; a truncated stream
 * still prints what is readable, reports the file and offset on stderr and
 * exits 1.
 */
#define RINGTRACE_CREATE_EVENTS
#include <sys/wait.h>

#include "test_trace_util.h"

static char out[512], err[512];

static int run(const char *args)
{
	char cmd[2048];
	int n = snprintf(cmd, sizeof(cmd), "'%s' %s >'%s' 2>'%s'", RINGTRACE_TOOL, args, out, err);
	CHECKF(n > 0 && (size_t)n < sizeof(cmd), "command line of %d bytes", n);
	int st = system(cmd);
	CHECK(st != -1 && WIFEXITED(st));
	return WEXITSTATUS(st);
}

static char *slurp(const char *path, size_t *len)
{
	char *d;
	size_t l;
	tt_read_file(path, &d, &l);
	if (len)
		*len = l;
	return d;
}

static size_t count_lines(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static ringtrace_rb *rb;

static void *writer(void *arg)
{
	int base = (int)(intptr_t)arg;
	char s[64];
	pthread_setname_np(pthread_self(), base == 1 ? "tool-a" : "tool-b");
	for (int i = 0; i < 500; i++) {
		switch (i % 4) {
		case 0:
			snprintf(s, sizeof(s), "w%d-%d", base, i);
			trace_tr_str((int16_t)i, s);
			break;
		case 1:
			trace_tr_mix(i);
			break;
		case 2:
			ringtrace_printf("w%d i=%d", base, i);
			break;
		default:
			trace_tr_num(i, (uint64_t)i);
		}
	}
	ringtrace_rb_writer_release(rb);
	return NULL;
}

/* The trace every case reads. */
struct tool {
	char dir[64];
	struct tt_trace tt;
};

/* Two named threads' events written as a trace in tl->dir; the command's
 * stdout and stderr go to dir.out and dir.err. */
static void tool_trace(struct tool *tl)
{
	memset(tl, 0, sizeof(*tl));
	snprintf(tl->dir, sizeof(tl->dir), "/tmp/ringtrace-tool-XXXXXX");
	char *dir = tl->dir;
	CHECK(mkdtemp(dir) != NULL);
	snprintf(out, sizeof(out), "%s.out", dir);
	snprintf(err, sizeof(err), "%s.err", dir);
	struct ringtrace_rb_config cfg;
	ringtrace_rb_config_init(&cfg);
	cfg.page_size = 4096;
	cfg.pool_size = 4096 * 256;
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
	struct ringtrace_trace_stats tst = {1000, 0, 0, 1000, 3, 12288, 5, 0};
	tt_write_trace(rb, dir, &tl->tt, &tst);
	CHECK(tl->tt.n == 1000);
}

static void tool_done(struct tool *tl)
{
	unlink(out);
	unlink(err);
	free(tl->tt.ev);
	ringtrace_rb_destroy(rb);
	tt_rm_dir(tl->dir);
}

/* Usage errors exit 2, an unreadable trace 1; --help lists the commands. */
static void test_usage(void)
{
	struct tool tl;
	tool_trace(&tl);
	const char *dir = tl.dir;

	/* usage and help */
	CHECK(run("") == 2);
	CHECK(run("--help") == 0);
	char *o = slurp(out, NULL);
	CHECK(strstr(o, "report") && strstr(o, "stat") && strstr(o, "list"));
	free(o);
	CHECK(run("bogus") == 2);
	o = slurp(err, NULL);
	CHECK(strstr(o, "unknown command") && strstr(o, "usage"));
	free(o);
	const char *cmds[] = {"report", "stat", "list"};
	for (int i = 0; i < 3; i++) {
		char a[256];
		snprintf(a, sizeof(a), "%s --help", cmds[i]);
		CHECK(run(a) == 0);
		o = slurp(out, NULL);
		CHECK(strstr(o, "usage: ringtrace") && strstr(o, cmds[i]));
		free(o);
		CHECK(run(cmds[i]) == 2); /* no directory */
		snprintf(a, sizeof(a), "%s --bogus '%s'", cmds[i], dir);
		CHECK(run(a) == 2);
		snprintf(a, sizeof(a), "%s '%s' extra", cmds[i], dir);
		CHECK(run(a) == 2);
		snprintf(a, sizeof(a), "%s /nonexistent/trace", cmds[i]);
		CHECK(run(a) == 1);
		o = slurp(err, NULL);
		CHECK(strstr(o, "/nonexistent/trace: No such file or directory"));
		free(o);
	}
	CHECK(run("report --from") == 2);
	CHECK(run("report --to abc x") == 2);
	tool_done(&tl);
}

/* report prints every event, merged by time, in the ftrace shape. */
static void test_report(void)
{
	struct tool tl;
	tool_trace(&tl);
	const char *dir = tl.dir;
	const struct tt_trace tt = tl.tt;
	char *o;

	/* report: every line as expected */
	char a[1024];
	snprintf(a, sizeof(a), "report '%s'", dir);
	CHECK(run(a) == 0);
	size_t olen;
	o = slurp(out, &olen);
	CHECK(count_lines(o) == tt.n);
	char *line = o;
	for (size_t i = 0; i < tt.n; i++) {
		const struct tt_expect *e = &tt.ev[i];
		char want[1024];
		uint64_t ns = ringtrace_rb_ticks_to_ns(rb, e->ts);
		int n = snprintf(want, sizeof(want), "%16s-%-7u [%03u] %5llu.%06llu: %s: %s\n",
				 e->comm, e->tid, e->cpu, (unsigned long long)(ns / 1000000000),
				 (unsigned long long)(ns % 1000000000 / 1000), e->name, e->text);
		CHECKF(strncmp(line, want, (size_t)n) == 0, "line %zu:\n%.*s\nexpected:\n%s", i,
		       (int)(strchr(line, '\n') - line), line, want);
		line += n;
	}
	free(o);
	o = slurp(err, NULL);
	CHECK(o[0] == 0);
	free(o);
	tool_done(&tl);
}

/* report --events, --raw, --from and --to select and show as asked. */
static void test_report_options(void)
{
	struct tool tl;
	tool_trace(&tl);
	const char *dir = tl.dir;
	const struct tt_trace tt = tl.tt;
	char a[1024];
	char *o;

	/* --events, --raw, --from/--to */
	snprintf(a, sizeof(a), "report '%s' --events 'tr_n*'", dir);
	CHECK(run(a) == 0);
	o = slurp(out, NULL);
	CHECK(count_lines(o) == 250);
	CHECK(strstr(o, "tr_str") == NULL && strstr(o, ": tr_num: v=") != NULL);
	free(o);
	snprintf(a, sizeof(a), "report --events ringtrace_printf '%s'", dir);
	CHECK(run(a) == 0);
	o = slurp(out, NULL);
	CHECK(count_lines(o) == 250 && strstr(o, ": ringtrace_printf: w1 i=2\n"));
	free(o);
	snprintf(a, sizeof(a), "report --raw '%s'", dir);
	CHECK(run(a) == 0);
	o = slurp(out, NULL);
	char ticks[64];
	snprintf(ticks, sizeof(ticks), "] %" PRIu64 ": ", tt.ev[0].ts);
	CHECK(count_lines(o) == tt.n && strstr(o, ticks));
	free(o);
	uint64_t mid = ringtrace_rb_ticks_to_ns(rb, tt.ev[500].ts);
	size_t want_from = 0;
	for (size_t i = 0; i < tt.n; i++)
		want_from += ringtrace_rb_ticks_to_ns(rb, tt.ev[i].ts) >= mid / 1000 * 1000 + 1;
	snprintf(a, sizeof(a), "report '%s' --from %llu.%06llu001", dir,
		 (unsigned long long)(mid / 1000000000),
		 (unsigned long long)(mid % 1000000000 / 1000));
	CHECK(run(a) == 0);
	o = slurp(out, NULL);
	CHECKF(count_lines(o) == want_from, "%zu lines, want %zu", count_lines(o), want_from);
	free(o);
	snprintf(a, sizeof(a), "report '%s' --to 0.5", dir);
	CHECK(run(a) == 0);
	o = slurp(out, NULL);
	CHECK(o[0] == 0);
	free(o);
	tool_done(&tl);
}

/* stat and list summarise the trace: threads, events, recorder, schema. */
static void test_stat_list(void)
{
	struct tool tl;
	tool_trace(&tl);
	const char *dir = tl.dir;
	char a[1024];
	char *o;

	/* stat and list */
	snprintf(a, sizeof(a), "stat '%s'", dir);
	CHECK(run(a) == 0);
	o = slurp(out, NULL);
	CHECK(strstr(o, "tool-a") && strstr(o, "tool-b") && strstr(o, "total"));
	CHECK(strstr(o, "events by name") && strstr(o, "tr_num") && strstr(o, "ringtrace_printf"));
	CHECK(strstr(o, "recorder") && strstr(o, "duration_ns"));
	free(o);
	snprintf(a, sizeof(a), "list '%s'", dir);
	CHECK(run(a) == 0);
	o = slurp(out, NULL);
	CHECK(strstr(o, "tr_mix") && strstr(o, "GREEN=2") && strstr(o, "print \"k=%d s=%s\""));
	CHECK(strstr(o, "\"w%d i=%d\" args s64,s64"));
	free(o);
	tool_done(&tl);
}

/* A truncated stream: the readable part printed, the file and offset on
 * stderr, exit 1. */
static void test_damaged(void)
{
	struct tool tl;
	tool_trace(&tl);
	const char *dir = tl.dir;
	const struct tt_trace tt = tl.tt;
	char a[1024];
	char *o;

	/* a damaged trace: readable part printed, error on stderr, exit 1 */
	char spath[512] = "";
	DIR *d = opendir(dir);
	struct dirent *de;
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, "stream_", 7) == 0 && !spath[0])
			snprintf(spath, sizeof(spath), "%s/%s", dir, de->d_name);
	closedir(d);
	char *sd;
	size_t sl;
	tt_read_file(spath, &sd, &sl);
	tt_write_file(spath, sd, sl - 100);
	snprintf(a, sizeof(a), "report '%s'", dir);
	CHECK(run(a) == 1);
	o = slurp(out, NULL);
	CHECK(count_lines(o) > tt.n / 2 && count_lines(o) <= tt.n);
	free(o);
	o = slurp(err, NULL);
	CHECKF(strstr(o, spath) && strstr(o, ": byte "), "%s", o);
	free(o);
	snprintf(a, sizeof(a), "stat '%s'", dir);
	CHECK(run(a) == 1);
	tt_write_file(spath, sd, sl);
	free(sd);
	tool_done(&tl);
}

/* A file that does not belong in a trace directory is named; exit 1. */
static void test_extra_file(void)
{
	struct tool tl;
	tool_trace(&tl);
	const char *dir = tl.dir;
	char a[1024];
	char *o;
	snprintf(a, sizeof(a), "stat '%s'", dir); /* an intact trace */

	/* an extra file is named */
	char extra[600];
	snprintf(extra, sizeof(extra), "%s/notes.txt", dir);
	tt_write_file(extra, "x", 1);
	CHECK(run(a) == 1);
	o = slurp(err, NULL);
	CHECK(strstr(o, "notes.txt"));
	free(o);
	unlink(extra);
	tool_done(&tl);
}

/* ---- control characters --------------------------------------------------- */

static void *ctl_writer(void *arg)
{
	(void)arg;
	/* a thread name, strings and a printf format with control bytes */
	pthread_setname_np(pthread_self(), "t\x1b]0;x\x07");
	for (int i = 0; i < 10; i++) {
		trace_tr_str((int16_t)i, "a\x1b[31mb\nc\x7f\xc2\x9b"
					 "d\xc3\xa9");
		ringtrace_printf("p\r%d\n", i);
	}
	ringtrace_rb_writer_release(rb);
	return NULL;
}

/* Control bytes from a trace (thread names, string fields, formats) reach
 * no terminal raw: report and stat print them as \xNN, one line a record. */
static void test_control_chars(void)
{
	char dir[64];
	snprintf(dir, sizeof(dir), "/tmp/ringtrace-tool-XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
	snprintf(out, sizeof(out), "%s.out", dir);
	snprintf(err, sizeof(err), "%s.err", dir);
	struct ringtrace_rb_config cfg;
	ringtrace_rb_config_init(&cfg);
	cfg.page_size = 4096;
	cfg.pool_size = 4096 * 16;
	CHECK(ringtrace_rb_create(&cfg, &rb) == 0);
	CHECK(ringtrace_events_set_buffer(rb) == 0);
	CHECK(ringtrace_event_enable("tr_str") == 1);
	CHECK(ringtrace_event_enable("ringtrace_printf") == 1);
	pthread_t th;
	CHECK(pthread_create(&th, NULL, ctl_writer, NULL) == 0);
	CHECK(pthread_join(th, NULL) == 0);
	CHECK(ringtrace_events_set_buffer(NULL) == 0);
	struct tt_trace tt;
	memset(&tt, 0, sizeof(tt));
	struct ringtrace_trace_stats tst = {20, 0, 0, 20, 1, 4096, 1, 0};
	tt_write_trace(rb, dir, &tt, &tst);
	CHECK(tt.n == 20);

	char a[1024];
	snprintf(a, sizeof(a), "report '%s'", dir);
	CHECK(run(a) == 0);
	size_t olen;
	char *o = slurp(out, &olen);
	CHECK_EQ_U64(count_lines(o), 20);
	for (size_t i = 0; i < olen; i++) {
		unsigned char b = (unsigned char)o[i];
		CHECKF((b >= 0x20 && b != 0x7f && !(b == 0xc2 && (unsigned char)o[i + 1] < 0xa0)) ||
			       b == '\n',
		       "report: byte 0x%02x at %zu reached the output raw", b, i);
	}
	CHECKF(strstr(o, "s=a\\x1b[31mb\\x0ac\\x7f\\xc2\\x9bd\xc3\xa9"),
	       "report: string not escaped as expected:\n%s", o);
	CHECKF(strstr(o, "ringtrace_printf: p\\x0d3\\x0a"), "report: printf text:\n%s", o);
	/* (the reader shows a thread name's control bytes as '?') */
	CHECKF(strstr(o, "t?]0;x?-"), "report: thread name not made safe:\n%s", o);
	free(o);
	snprintf(a, sizeof(a), "stat '%s'", dir);
	CHECK(run(a) == 0);
	o = slurp(out, &olen);
	CHECKF(strstr(o, "t?]0;x?") && !strchr(o, 0x1b), "stat: thread name:\n%s", o);
	free(o);
	/* an event name with control bytes, written into the metadata as a
	 * hostile writer would: list and stat escape it */
	char mpath[512];
	snprintf(mpath, sizeof(mpath), "%s/metadata", dir);
	size_t mlen;
	char *m;
	tt_read_file(mpath, &m, &mlen);
	char *blk = strstr(m, "/* ringtrace-schema 1");
	CHECK(blk != NULL);
	char *name = strstr(blk, " tr_str ");
	CHECK(name != NULL);
	char *m2 = malloc(mlen + 16);
	size_t at = (size_t)(name - m) + 1;
	memcpy(m2, m, at);
	memcpy(m2 + at, "tr%1B%0Astr", 11);
	memcpy(m2 + at + 11, m + at + 6, mlen - at - 6);
	tt_write_file(mpath, m2, mlen + 5);
	for (int k = 0; k < 2; k++) {
		snprintf(a, sizeof(a), "%s '%s'", k ? "stat" : "list", dir);
		CHECK(run(a) == 0);
		o = slurp(out, &olen);
		CHECKF(strstr(o, "tr\\x1b\\x0astr") && !strchr(o, 0x1b),
		       "%s: event name not escaped:\n%s", k ? "stat" : "list", o);
		free(o);
	}
	free(m2);
	free(m);
	unlink(out);
	unlink(err);
	free(tt.ev);
	ringtrace_rb_destroy(rb);
	tt_rm_dir(dir);
}

/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
static const struct check_case cases[] = {
	CHECK_CASE(trace_tool_usage_errors_exit_2_and_help_lists_commands, test_usage),
	CHECK_CASE(trace_tool_report_prints_every_event_in_ftrace_shape, test_report),
	CHECK_CASE(trace_tool_report_selects_by_event_name_time_and_shows_raw, test_report_options),
	CHECK_CASE(trace_tool_stat_and_list_summarise_the_trace, test_stat_list),
	CHECK_CASE(trace_tool_truncated_stream_printed_in_part_and_exit_1, test_damaged),
	CHECK_CASE(trace_tool_unexpected_file_in_trace_named_and_exit_1, test_extra_file),
	CHECK_CASE(trace_tool_control_characters_from_the_trace_printed_escaped, test_control_chars),
};
/* clang-format on */

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
