/*
 * libFuzzer harness for the trace reader's metadata: each input is written
 * as the metadata of a trace whose stream files are fixed (real ones, from
 * the directory given in RINGTRACE_FUZZ_TRACE), and the trace is opened,
 * described (events, fields, sites, stats) and read to the end, every
 * event formatted as `ringtrace report` prints it. Whatever the metadata
 * says (print formats with huge widths, ids defined twice, thousands of
 * events), the reader must never crash, read out of bounds, or take long:
 * make check-fuzz runs it with a per-input time limit (-timeout).
 *
 *   RINGTRACE_FUZZ_TRACE=DIR fuzz_metadata CORPUS -max_total_time=30 -timeout=10
 *
 * (make check-fuzz builds it with clang, ASan and UBSan, makes DIR with
 * test_trace_gen and seeds CORPUS with its metadata.)
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ringtrace/trace.h>

static char dir[64];

static void copy(const char *from, const char *to)
{
	FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
	if (!a || !b)
		abort();
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), a)) > 0)
		if (fwrite(buf, 1, n, b) != n)
			abort();
	fclose(a);
	fclose(b);
}

static void setup(void)
{
	const char *src = getenv("RINGTRACE_FUZZ_TRACE");
	if (!src) {
		fprintf(stderr, "fuzz_metadata: set RINGTRACE_FUZZ_TRACE to a trace directory\n");
		abort();
	}
	snprintf(dir, sizeof(dir), "/tmp/ringtrace-fuzz-meta-XXXXXX");
	if (!mkdtemp(dir))
		abort();
	DIR *d = opendir(src);
	if (!d)
		abort();
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, "stream_", 7) != 0)
			continue;
		char in[4200], out[4200];
		snprintf(in, sizeof(in), "%s/%s", src, e->d_name);
		snprintf(out, sizeof(out), "%s/%s", dir, e->d_name);
		copy(in, out);
	}
	closedir(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!dir[0])
		setup();
	char path[128];
	snprintf(path, sizeof(path), "%s/metadata", dir);
	FILE *f = fopen(path, "wb");
	if (!f)
		abort();
	if (size && fwrite(data, 1, size, f) != size)
		abort();
	fclose(f);
	ringtrace_trace *t;
	if (ringtrace_trace_open(dir, NULL, NULL, &t) != 0)
		return 0;
	/* what `ringtrace list` and `stat` look at */
	size_t sum = 0;
	for (uint32_t i = 0; i < ringtrace_trace_event_count(t); i++) {
		const struct ringtrace_trace_event_def *d = ringtrace_trace_event(t, i);
		sum += strlen(d->name) + strlen(d->print_fmt);
		for (uint32_t k = 0; k < d->nfields; k++)
			sum += strlen(d->fields[k].name);
	}
	for (uint32_t i = 0; i < ringtrace_trace_site_count(t); i++) {
		const struct ringtrace_trace_site *s = ringtrace_trace_site(t, i);
		sum += strlen(s->fmt) + strlen(s->file);
	}
	int64_t off;
	if (ringtrace_trace_realtime_offset(t, &off) == 1)
		sum += (size_t)(off & 1);
	struct ringtrace_trace_record rec;
	static char line[(1 << 16) + 256];
	while (ringtrace_trace_next(t, &rec) == 1)
		sum += (size_t)ringtrace_trace_format_line(t, &rec, 0, line, sizeof(line));
	ringtrace_trace_close(t);
	return sum == 1; /* (keeps the sums from being optimized away) */
}
