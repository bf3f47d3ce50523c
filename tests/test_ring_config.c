/*
 * test_ring_config: every invalid configuration is refused with
 * -RINGTRACE_EINVAL and a message naming the field; boundary values are
 * accepted; error names are non-empty and distinct; oversized events give
 * -RINGTRACE_E2BIG and are counted as missed; the open-buffer limit.
 */
#include "testutil.h"

static unsigned n_refused, n_accepted;

/* Create must fail with -EINVAL and a message containing `field`. */
static void expect_invalid(const struct ringtrace_rb_config *cfg, const char *field,
			   const char *what, int line)
{
	ringtrace_rb *rb = (ringtrace_rb *)(uintptr_t)0x1; /* must not be used */
	int rc = ringtrace_rb_create(cfg, &rb);
	const char *msg = ringtrace_last_error();
	if (rc != -RINGTRACE_EINVAL) {
		fprintf(stderr, "%s:%d: config '%s' (%s): create returned %d (%s), expected %d\n",
			__FILE__, line, what, field, rc, ringtrace_strerror(rc), -RINGTRACE_EINVAL);
		if (rc == 0)
			ringtrace_rb_destroy(rb);
		exit(1);
	}
	CHECKF(msg != NULL && msg[0] != '\0', "line %d: config '%s': empty last_error", line, what);
	CHECKF(field == NULL || strstr(msg, field) != NULL,
	       "line %d: config '%s': last_error \"%s\" does not name the field '%s'", line, what,
	       msg, field);
	n_refused++;
}

static void expect_valid(const struct ringtrace_rb_config *cfg, const char *what, int line)
{
	ringtrace_rb *rb = NULL;
	int rc = ringtrace_rb_create(cfg, &rb);
	CHECKF(rc == 0 && rb != NULL, "line %d: valid config '%s' refused: %d (%s): %s", line, what,
	       rc, ringtrace_strerror(rc), ringtrace_last_error());
	CHECK_EQ_U64(ringtrace_rb_page_size(rb), cfg->page_size);
	CHECK_EQ_U64(ringtrace_rb_page_count(rb), cfg->pool_size / cfg->page_size);
	CHECK(ringtrace_rb_mode(rb) == cfg->mode);
	/* It works: one event in, one out. */
	uint64_t v = 0x1122334455667788ull;
	CHECK_OK(ringtrace_rb_write(rb, 3, &v, sizeof(v)));
	ringtrace_rb_writer_release(rb);
	const struct ringtrace_page_header *p = ringtrace_rb_get_page(rb);
	CHECKF(p != NULL, "line %d: config '%s': no page after writer_release", line, what);
	CHECK_EQ_U64(p->events, 1);
	ringtrace_rb_put_page(rb, p);
	ringtrace_rb_destroy(rb);
	n_accepted++;
}

#define INVALID(field, ...)                                         \
	do {                                                        \
		struct ringtrace_rb_config c_;                      \
		ringtrace_rb_config_init(&c_);                      \
		__VA_ARGS__;                                        \
		expect_invalid(&c_, field, #__VA_ARGS__, __LINE__); \
	} while (0)

#define VALID(...)                                         \
	do {                                               \
		struct ringtrace_rb_config c_;             \
		ringtrace_rb_config_init(&c_);             \
		c_.page_size = 4096;                       \
		c_.pool_size = 4096 * 4;                   \
		__VA_ARGS__;                               \
		expect_valid(&c_, #__VA_ARGS__, __LINE__); \
	} while (0)

/* Every invalid value of each field, and NULL arguments: -EINVAL, the
 * message naming the field. */
static void test_invalid_configs(void)
{
	n_refused = 0;
	/* page_size: power of two, 4 KiB .. 1 MiB. */
	INVALID("page_size", c_.page_size = 0);
	INVALID("page_size", c_.page_size = 5000; c_.pool_size = 5000 * 4);
	INVALID("page_size", c_.page_size = 4096 * 3; c_.pool_size = 4096 * 3 * 4);
	INVALID("page_size", c_.page_size = 65536 + 8; c_.pool_size = (65536 + 8) * 4);
	INVALID("page_size", c_.page_size = 2048; c_.pool_size = 2048 * 16);
	INVALID("page_size", c_.page_size = 1024; c_.pool_size = 1024 * 16);
	INVALID("page_size", c_.page_size = 2u << 20; c_.pool_size = (2u << 20) * 2);
	INVALID("page_size", c_.page_size = (size_t)1 << 40; c_.pool_size = (size_t)1 << 41);

	/* pool_size: a multiple of page_size, 2 .. 2^20 pages. */
	INVALID("pool_size", c_.page_size = 4096; c_.pool_size = 4096 * 4 + 1);
	INVALID("pool_size", c_.page_size = 4096; c_.pool_size = 4096 * 4 + 2048);
	INVALID("pool_size", c_.page_size = 4096; c_.pool_size = 4096);
	INVALID("pool_size", c_.page_size = 4096; c_.pool_size = 0);
	INVALID("pool_size", c_.page_size = 4096; c_.pool_size = 4095);
	INVALID("pool_size", c_.page_size = 4096;
		c_.pool_size = (size_t)4096 * ((size_t)RINGTRACE_RB_MAX_PAGES + 1));
	INVALID("pool_size", c_.page_size = 1u << 20;
		c_.pool_size = ((size_t)1 << 20) * ((size_t)RINGTRACE_RB_MAX_PAGES * 2));
	INVALID("pool_size", c_.page_size = 4096; c_.pool_size = (size_t)-1 & ~(size_t)4095);

	/* max_writers: 1 .. 65535. */
	INVALID("max_writers", c_.max_writers = 0);
	INVALID("max_writers", c_.max_writers = RINGTRACE_RB_MAX_WRITERS + 1);
	INVALID("max_writers", c_.max_writers = 0xFFFFFFFFu);

	/* mode: 0 or 1. */
	INVALID("mode", c_.mode = (enum ringtrace_rb_mode)2);
	INVALID("mode", c_.mode = (enum ringtrace_rb_mode) - 1);
	INVALID("mode", c_.mode = (enum ringtrace_rb_mode)0x7fffffff);

	/* flush_interval_ms: 1 .. 60000. */
	INVALID("flush_interval_ms", c_.flush_interval_ms = 0);
	INVALID("flush_interval_ms", c_.flush_interval_ms = 60001);
	INVALID("flush_interval_ms", c_.flush_interval_ms = 0xFFFFFFFFu);

	/* NULL arguments. */
	{
		ringtrace_rb *rb = NULL;
		int rc = ringtrace_rb_create(NULL, &rb);
		CHECKF(rc == -RINGTRACE_EINVAL, "create(NULL cfg) = %d", rc);
		CHECKF(ringtrace_last_error()[0] != '\0', "create(NULL cfg): empty last_error");
		CHECK(rb == NULL);
		n_refused++;
		struct ringtrace_rb_config c;
		ringtrace_rb_config_init(&c);
		rc = ringtrace_rb_create(&c, NULL);
		CHECKF(rc == -RINGTRACE_EINVAL, "create(cfg, NULL out) = %d", rc);
		CHECKF(ringtrace_last_error()[0] != '\0', "create(cfg, NULL): empty last_error");
		n_refused++;
	}
	printf("  %u invalid configurations refused with EINVAL naming the field\n", n_refused);
}

/* Boundary values and the defaults are accepted, and the buffer works. */
static void test_valid_configs(void)
{
	n_accepted = 0;
	/* Boundary values that must be accepted. */
	VALID(c_.page_size = 4096; c_.pool_size = 4096 * 2);
	VALID(c_.page_size = 1u << 20; c_.pool_size = (1u << 20) * 2);
	VALID(c_.page_size = 8192; c_.pool_size = 8192 * 3);
	VALID(c_.max_writers = 1);
	VALID(c_.max_writers = RINGTRACE_RB_MAX_WRITERS);
	VALID(c_.mode = RINGTRACE_RB_OVERWRITE);
	VALID(c_.flush_interval_ms = 1);
	VALID(c_.flush_interval_ms = 60000);
	{
		/* The defaults themselves. */
		struct ringtrace_rb_config c;
		ringtrace_rb_config_init(&c);
		expect_valid(&c, "defaults", __LINE__);
	}
	printf("  %u boundary configurations accepted\n", n_accepted);
}

static void test_strerror(void)
{
	const int codes[] = {RINGTRACE_OK,       RINGTRACE_EINVAL, RINGTRACE_ENOMEM,
			     RINGTRACE_E2BIG,    RINGTRACE_ENOSPC, RINGTRACE_EAGAIN,
			     RINGTRACE_ECORRUPT, RINGTRACE_ESYS,   RINGTRACE_ENESTED,
			     RINGTRACE_ENOENT};
	const unsigned n = sizeof(codes) / sizeof(codes[0]);
	for (unsigned i = 0; i < n; i++) {
		const char *s = ringtrace_strerror(codes[i]);
		const char *sn = ringtrace_strerror(-codes[i]);
		CHECKF(s != NULL && s[0] != '\0', "strerror(%d) empty", codes[i]);
		CHECKF(sn != NULL && strcmp(s, sn) == 0,
		       "strerror(%d) \"%s\" != strerror(%d) \"%s\"", codes[i], s, -codes[i],
		       sn ? sn : "(null)");
		for (unsigned j = 0; j < i; j++)
			CHECKF(strcmp(s, ringtrace_strerror(codes[j])) != 0,
			       "strerror(%d) == strerror(%d) == \"%s\"", codes[i], codes[j], s);
	}
	/* Unknown codes still give a string. */
	const char *u = ringtrace_strerror(12345);
	CHECK(u != NULL && u[0] != '\0');
	u = ringtrace_strerror(-12345);
	CHECK(u != NULL && u[0] != '\0');
}

static void test_e2big(void)
{
	struct ringtrace_rb_config cfg;
	for (int k = 0; k < 2; k++) {
		tu_config(&cfg, k ? 65536 : 4096, 4, RINGTRACE_RB_DISCARD);
		ringtrace_rb *rb = tu_create(&cfg);
		size_t maxp = ringtrace_rb_max_payload(rb);
		CHECKF(maxp > 0 && maxp < cfg.page_size, "max payload %zu for page %zu", maxp,
		       cfg.page_size);
		static uint8_t buf[(1 << 17)];
		memset(buf, 0x3C, sizeof(buf));
		const size_t bad[] = {maxp + 1, maxp + 8, cfg.page_size, 65535, 65536, sizeof(buf)};
		uint64_t missed = 0;
		for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			if (bad[i] <= maxp)
				continue;
			int rc = ringtrace_rb_write(rb, 1, buf, bad[i]);
			CHECKF(rc == -RINGTRACE_E2BIG, "page %zu: write(len %zu) = %d (%s)",
			       cfg.page_size, bad[i], rc, ringtrace_strerror(rc));
			missed++;
			CHECK(ringtrace_rb_reserve(rb, 1, bad[i]) == NULL);
			missed++;
			struct ringtrace_rb_stats st = tu_stats(rb);
			CHECK_EQ_U64(st.missed, missed);
			CHECK_EQ_U64(st.hit, 0);
		}
		/* Max payload is accepted, also twice in a row (fills a fresh page). */
		CHECK_OK(ringtrace_rb_write(rb, 1, buf, maxp));
		CHECK_OK(ringtrace_rb_write(rb, 2, buf, maxp));
		struct ringtrace_rb_stats st = tu_stats(rb);
		CHECK_EQ_U64(st.hit, 2);
		CHECK_EQ_U64(st.missed, missed);
		CHECK_STATS_BALANCED(&st);
		ringtrace_rb_writer_release(rb);
		const struct ringtrace_page_header *p;
		uint32_t n = 0;
		while ((p = ringtrace_rb_get_page(rb)) != NULL) {
			tu_check_page_header(p, cfg.page_size);
			n += p->events;
			ringtrace_rb_put_page(rb, p);
		}
		CHECK_EQ_U64(n, 2);
		ringtrace_rb_destroy(rb);
	}
}

static void test_open_limit(void)
{
	struct ringtrace_rb_config cfg;
	tu_config(&cfg, 4096, 2, RINGTRACE_RB_DISCARD);
	ringtrace_rb *rbs[RINGTRACE_RB_MAX_OPEN + 1];
	for (unsigned i = 0; i < RINGTRACE_RB_MAX_OPEN; i++)
		rbs[i] = tu_create(&cfg);
	ringtrace_rb *extra = NULL;
	int rc = ringtrace_rb_create(&cfg, &extra);
	CHECKF(rc < 0, "create #%u succeeded, limit is RINGTRACE_RB_MAX_OPEN = %u",
	       RINGTRACE_RB_MAX_OPEN + 1, RINGTRACE_RB_MAX_OPEN);
	CHECKF(ringtrace_last_error()[0] != '\0', "open limit: empty last_error");
	ringtrace_rb_destroy(rbs[3]);
	rbs[3] = tu_create(&cfg); /* a slot is free again */
	for (unsigned i = 0; i < RINGTRACE_RB_MAX_OPEN; i++)
		ringtrace_rb_destroy(rbs[i]);
}

/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
static const struct check_case cases[] = {
	CHECK_CASE(ring_config_invalid_values_refused_naming_the_field, test_invalid_configs),
	CHECK_CASE(ring_config_boundary_values_accepted, test_valid_configs),
	CHECK_CASE(ring_config_error_names_non_empty_and_distinct, test_strerror),
	CHECK_CASE(ring_config_oversized_events_refused_and_counted_as_missed, test_e2big),
	CHECK_CASE(ring_config_open_buffer_limit_enforced, test_open_limit),
};
/* clang-format on */

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
