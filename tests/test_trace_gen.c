/*
 * Not a test: writes a large trace for measuring the reader.
 *   test_trace_gen DIR [EVENTS] [THREADS]
 * Events are a mix of tr_num, tr_str and ringtrace_printf records, written
 * in rounds (all threads, then the pages drained to the stream files).
 *   time build/bin/ringtrace report DIR >/dev/null
 */
#define RINGTRACE_CREATE_EVENTS
#include "test_trace_util.h"

static ringtrace_rb *rb;
static long per_thread;

static void *writer(void *arg)
{
	int base = (int)(intptr_t)arg;
	char s[32];
	for (long i = 0; i < per_thread; i++) {
		if (i % 8 == 0) {
			snprintf(s, sizeof(s), "req-%ld", i);
			trace_tr_str((int16_t)i, s);
		} else if (i % 64 == 1) {
			ringtrace_printf("thread %d at %ld", base, i);
		} else {
			trace_tr_num((int32_t)i, (uint64_t)i * 3);
		}
	}
	ringtrace_rb_writer_release(rb);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR [EVENTS] [THREADS]\n", argv[0]);
		return 2;
	}
	const char *dir = argv[1];
	long total = argc > 2 ? atol(argv[2]) : 10000000;
	int nth = argc > 3 ? atoi(argv[3]) : 4;
	mkdir(dir, 0755);
	struct ringtrace_rb_config cfg;
	ringtrace_rb_config_init(&cfg);
	cfg.page_size = 65536;
	cfg.pool_size = (size_t)65536 * 1024;
	CHECK(ringtrace_rb_create(&cfg, &rb) == 0);
	CHECK(ringtrace_events_set_buffer(rb) == 0);
	CHECK(ringtrace_event_enable("tr_*") >= 3);
	CHECK(ringtrace_event_enable("ringtrace_printf") == 1);
	long rounds = (total + 999999) / 1000000;
	per_thread = total / rounds / nth;
	size_t psz = ringtrace_rb_page_size(rb);
	for (long r = 0; r < rounds; r++) {
		pthread_t th[64];
		for (int i = 0; i < nth; i++)
			CHECK(pthread_create(&th[i], NULL, writer, (void *)(intptr_t)i) == 0);
		for (int i = 0; i < nth; i++)
			CHECK(pthread_join(th[i], NULL) == 0);
		const struct ringtrace_page_header *p;
		CHECK(ringtrace_rb_flush(rb, 0) >= 0);
		while ((p = ringtrace_rb_get_page(rb)) != NULL) {
			char path[512];
			snprintf(path, sizeof(path), "%s/stream_%" PRIu64, dir,
				 p->stream_instance_id);
			FILE *f = fopen(path, "ab");
			CHECK(f != NULL);
			CHECK(fwrite(p, 1, psz, f) == psz);
			fclose(f);
			ringtrace_rb_put_page(rb, p);
		}
	}
	CHECK(ringtrace_events_set_buffer(NULL) == 0);
	char path[512];
	snprintf(path, sizeof(path), "%s/metadata", dir);
	FILE *mf = fopen(path, "w");
	CHECK(mf && ringtrace_ctf_write_metadata(rb, mf, NULL) == 0);
	fclose(mf);
	struct ringtrace_rb_stats st;
	ringtrace_rb_get_stats(rb, &st);
	printf("%" PRIu64 " events written, %" PRIu64 " missed\n", st.hit, st.missed);
	ringtrace_rb_destroy(rb);
	return 0;
}
