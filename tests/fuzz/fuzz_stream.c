/*
 * libFuzzer harness for the trace reader's stream decoding: each input is
 * written as the stream file of a trace whose metadata is fixed (a real
 * one, from the directory given in RINGTRACE_FUZZ_TRACE), and the trace is
 * read to the end, every event formatted. The reader must never crash,
 * hang or read out of bounds, whatever the bytes.
 *
 *   RINGTRACE_FUZZ_TRACE=DIR fuzz_stream CORPUS -max_total_time=30
 *
 * (make check-fuzz builds it with clang, ASan and UBSan, makes DIR with
 * test_trace_gen and seeds CORPUS with its stream files.)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ringtrace/trace.h>

static char dir[64];

static void setup(void)
{
	const char *src = getenv("RINGTRACE_FUZZ_TRACE");
	if (!src) {
		fprintf(stderr, "fuzz_stream: set RINGTRACE_FUZZ_TRACE to a trace directory\n");
		abort();
	}
	snprintf(dir, sizeof(dir), "/tmp/ringtrace-fuzz-XXXXXX");
	if (!mkdtemp(dir))
		abort();
	char in[4096], out[128];
	snprintf(in, sizeof(in), "%s/metadata", src);
	snprintf(out, sizeof(out), "%s/metadata", dir);
	FILE *a = fopen(in, "rb"), *b = fopen(out, "wb");
	if (!a || !b)
		abort();
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), a)) > 0)
		fwrite(buf, 1, n, b);
	fclose(a);
	fclose(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!dir[0])
		setup();
	char path[128];
	snprintf(path, sizeof(path), "%s/stream_1", dir);
	FILE *f = fopen(path, "wb");
	if (!f)
		abort();
	if (size)
		fwrite(data, 1, size, f);
	fclose(f);
	ringtrace_trace *t;
	if (ringtrace_trace_open(dir, NULL, NULL, &t) == 0) {
		struct ringtrace_trace_record rec;
		char text[4096];
		while (ringtrace_trace_next(t, &rec) == 1)
			if (rec.kind == RINGTRACE_TRACE_EVENT)
				ringtrace_trace_format(t, &rec, text, sizeof(text));
		ringtrace_trace_close(t);
	}
	return 0;
}
