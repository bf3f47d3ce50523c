/*
 * test_event_filter: filters and triggers at tracepoints.
 *
 *  1. A filter decides what is recorded: `value & 1` keeps exactly the odd
 *     values (negative ones too), in order; the others are counted in the
 *     event's `rejected` counter; removing the filter records everything
 *     again and keeps the count.
 *  2. A table of filters over every kind of field, on a fixed-size event
 *     (the inline fast path for one integer predicate, the interpreter
 *     otherwise) and on a variable-size one (the general path): what is
 *     recorded is exactly what a C predicate says, and rejected = calls -
 *     recorded.
 *  3. Errors: unknown field, glob on an integer, unbalanced parenthesis,
 *     `<` on a string: -RINGTRACE_EINVAL, a message naming the event, and
 *     the column; the previous filter stays. A pattern matching two events
 *     where the expression fits only one changes neither. Unknown events:
 *     -RINGTRACE_ENOENT. One filter for several events ("a,b", globs).
 *  4. Concurrency: two threads call the tracepoint with sequence numbers
 *     while the main thread replaces and removes the filter; every call is
 *     either recorded (intact, and passing one of the filters) or counted:
 *     calls = recorded + rejected, per the buffer's and event's counters.
 *     Run under TSan in CI.
 *  5. Triggers: traceoff / traceon, enable_event / disable_event with
 *     conditions and counts (fired and skipped counted), removal, and spec
 *     errors with their column.
 *  6. The flight recorder: a session in overwrite mode, many events, one
 *     anomaly; a `snapshot` trigger on the anomaly writes DIR.snapshot-1,
 *     which holds the anomaly and the events just before it, and which
 *     babeltrace2 reads.
 *  7. RINGTRACE_FILTERS / RINGTRACE_TRIGGERS at process start (re-exec):
 *     applied to the events when they register; a filter that does not
 *     compile is reported on stderr and its event is not recorded.
 * Each is a case, with its own events buffer (1-5); 2-4 start with ft_int
 * enabled and no filter, as 1 leaves it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define RINGTRACE_CREATE_EVENTS
#include "events_filter.h"
#include "events_util.h"
#include "ringtrace/filter.h"
#include "ringtrace/session.h"
#include "ringtrace/trace.h"
#include "testutil.h"

extern char **environ;

static uint64_t rejected(const char *name)
{
	struct ringtrace_event_info info;
	CHECK_OK(ringtrace_event_lookup(name, &info));
	return info.rejected;
}

static void set_filter(const char *pattern, const char *expr, int want)
{
	unsigned col = 99;
	int rc = ringtrace_event_set_filter(pattern, expr, &col);
	CHECKF(rc == want, "set_filter(%s, %s) = %d (%s): %s", pattern, expr ? expr : "NULL", rc,
	       ringtrace_strerror(rc), ringtrace_last_error());
	CHECK(col == 0);
}

static int64_t big_of(int v)
{
	return (int64_t)v * 1000003;
}

static void emit_ints(const int *vals, int n)
{
	for (int i = 0; i < n; i++)
		trace_ft_int(vals[i], (uint8_t)vals[i], big_of(vals[i]), (uint64_t)i);
}

/* The `value` fields of the ft_int events in l, in order. */
static int collect_values(ringtrace_rb *rb, int *out, int max)
{
	struct evu_list l = {0};
	evu_collect(rb, &l);
	uint32_t id = evu_id("ft_int");
	int n = 0;
	for (size_t i = 0; i < l.n; i++) {
		if (l.ev[i].id != id)
			continue;
		struct ringtrace_value v[8];
		evu_decode(&l.ev[i], v, 8, NULL);
		CHECK(n < max);
		out[n++] = (int)v[0].v.i;
		CHECK_EQ_U64(v[1].v.u, (uint8_t)out[n - 1]);
		CHECK(v[2].v.i == big_of(out[n - 1]));
	}
	evu_list_free(&l);
	return n;
}

/* ---- 1 ----------------------------------------------------------------------- */

static void test_basic(ringtrace_rb *rb)
{
	int vals[100], got[200];
	for (int i = 0; i < 100; i++)
		vals[i] = i - 50;
	CHECK_OK(ringtrace_event_enable("ft_int"));
	uint64_t r0 = rejected("ft_int");
	set_filter("ft_int", "value & 1", 1);
	struct ringtrace_event_info info;
	CHECK_OK(ringtrace_event_lookup("ft_int", &info));
	CHECK(info.has_filter == 1);
	char buf[64];
	CHECK(ringtrace_event_get_filter("ft_int", buf, sizeof(buf)) == 9);
	CHECK(strcmp(buf, "value & 1") == 0);
	emit_ints(vals, 100);
	int n = collect_values(rb, got, 200);
	CHECK_EQ_U64(n, 50);
	for (int i = 0; i < 50; i++)
		CHECKF(got[i] == -49 + 2 * i, "event %d: value %d", i, got[i]);
	CHECK_EQ_U64(rejected("ft_int") - r0, 50);

	set_filter("ft_int", NULL, 1);
	CHECK_OK(ringtrace_event_lookup("ft_int", &info));
	CHECK(info.has_filter == 0);
	CHECK(ringtrace_event_get_filter("ft_int", buf, sizeof(buf)) == 0);
	emit_ints(vals, 100);
	CHECK_EQ_U64(collect_values(rb, got, 200), 100);
	CHECK_EQ_U64(rejected("ft_int") - r0, 50); /* the count survives the filter */
	printf("basic: ok\n");
}

/* ---- 2 ----------------------------------------------------------------------- */

typedef int (*pred_fn)(int v);
static int p_eq7(int v)
{
	return v == 7;
}
static int p_ne7(int v)
{
	return v != 7;
}
static int p_lt(int v)
{
	return v < -3;
}
static int p_le(int v)
{
	return v <= -3;
}
static int p_gt(int v)
{
	return v > 100;
}
static int p_ge(int v)
{
	return v >= 100;
}
static int p_small_eq(int v)
{
	return (uint8_t)v == 255;
}
static int p_small_gt(int v)
{
	return (uint8_t)v > 128;
}
static int p_big_lt(int v)
{
	return big_of(v) < 0;
}
static int p_big_ge(int v)
{
	return big_of(v) >= 2000006;
}
static int p_bits4(int v)
{
	return (v & 4) != 0;
}
static int p_small_bit(int v)
{
	return ((uint8_t)v & 0x80) != 0;
}
static int p_and(int v)
{
	return v > 0 && (uint8_t)v < 10;
}
static int p_or(int v)
{
	return v < 0 || big_of(v) > 50000000;
}
static int p_not(int v)
{
	return !(v & 1);
}
static int p_half(int v)
{
	return v / 2.0 > 2.5;
}
static int p_half_le(int v)
{
	return v / 2.0 <= -1;
}
static int p_minint(int v)
{
	return v == INT32_MIN;
}
static int p_ne_neg(int v)
{
	return v != -1 && v >= -2;
}

static const struct {
	const char *expr;
	pred_fn pred;
} int_cases[] = {
	{"value == 7", p_eq7},
	{"value != 7", p_ne7},
	{"value < -3", p_lt},
	{"value <= -3", p_le},
	{"value > 100", p_gt},
	{"value >= 100", p_ge},
	{"small == 255", p_small_eq},
	{"small > 128", p_small_gt},
	{"big < 0", p_big_lt},
	{"big >= 2000006", p_big_ge},
	{"value & 4", p_bits4},
	{"small & 0x80", p_small_bit},
	{"value > 0 && small < 10", p_and},
	{"value < 0 || big > 50000000", p_or},
	{"!(value & 1)", p_not},
	{"half > 2.5", p_half},
	{"half <= -1", p_half_le},
	{"value == -2147483648", p_minint},
	{"(value != -1) && (value >= -2)", p_ne_neg},
};

static const int table_vals[] = {
	0,        1,         -1,         2,     -2,    3,      -3,        4,         -4,
	5,        6,         7,          8,     9,     10,     99,        100,       101,
	127,      128,       129,        200,   255,   256,    383,       -128,      -129,
	-255,     -256,      1000,       65535, 65536, 100000, INT32_MAX, INT32_MIN, INT32_MIN + 1,
	-1000000, 123456789, -123456789,
};
#define NVALS ((int)(sizeof(table_vals) / sizeof(table_vals[0])))

static int s_eth0(int id, const char *s)
{
	(void)id;
	return strcmp(s, "eth0") == 0;
}
static int s_eth_glob(int id, const char *s)
{
	(void)id;
	return strncmp(s, "eth", 3) == 0;
}
static int s_not_lo(int id, const char *s)
{
	(void)id;
	return strcmp(s, "lo") != 0;
}
static int s_after(int id, const char *s)
{
	size_t l = strlen(s);
	return (uint32_t)id * 3u > 30 && l && s[l - 1] == '1';
}
static int s_neg(int id, const char *s)
{
	(void)s;
	return id < 0;
}

static const struct {
	const char *expr;
	int (*pred)(int, const char *);
} str_cases[] = {
	{"name == \"eth0\"", s_eth0},
	{"name ~ \"eth*\"", s_eth_glob},
	{"name != \"lo\"", s_not_lo},
	{"after > 30 && name ~ \"*1\"", s_after},
	{"id < 0", s_neg},
};

static const char *const names[] = {"eth0", "eth1", "lo", "wlan1", "", "eth", "veth0", "x1"};

static void test_table(ringtrace_rb *rb)
{
	int got[NVALS * 2];
	int ncases = (int)(sizeof(int_cases) / sizeof(int_cases[0]));
	for (int c = 0; c < ncases; c++) {
		set_filter("ft_int", int_cases[c].expr, 1);
		uint64_t r0 = rejected("ft_int");
		emit_ints(table_vals, NVALS);
		int n = collect_values(rb, got, NVALS * 2), k = 0;
		for (int i = 0; i < NVALS; i++) {
			if (!int_cases[c].pred(table_vals[i]))
				continue;
			CHECKF(k < n && got[k] == table_vals[i],
			       "\"%s\": value %d should be recorded", int_cases[c].expr,
			       table_vals[i]);
			k++;
		}
		CHECKF(k == n, "\"%s\": %d recorded, %d expected", int_cases[c].expr, n, k);
		CHECKF(rejected("ft_int") - r0 == (uint64_t)(NVALS - n), "\"%s\": rejected %llu",
		       int_cases[c].expr, (unsigned long long)(rejected("ft_int") - r0));
	}
	set_filter("ft_int", NULL, 1);

	CHECK_OK(ringtrace_event_enable("ft_str"));
	uint32_t sid = evu_id("ft_str");
	int nnames = (int)(sizeof(names) / sizeof(names[0]));
	for (size_t c = 0; c < sizeof(str_cases) / sizeof(str_cases[0]); c++) {
		set_filter("ft_str", str_cases[c].expr, 1);
		uint64_t r0 = rejected("ft_str");
		int want = 0;
		for (int i = -4; i < 20; i++) {
			trace_ft_str(i, names[(i + 4) % nnames]);
			want += str_cases[c].pred(i, names[(i + 4) % nnames]);
		}
		struct evu_list l = {0};
		evu_collect(rb, &l);
		int n = 0;
		for (size_t e = 0; e < l.n; e++) {
			if (l.ev[e].id != sid)
				continue;
			struct ringtrace_value v[4];
			evu_decode(&l.ev[e], v, 4, NULL);
			/* v[0] is _truncated */
			CHECKF(str_cases[c].pred((int)v[1].v.i, (const char *)v[2].ptr),
			       "\"%s\": recorded id=%lld name=%s", str_cases[c].expr,
			       (long long)v[1].v.i, (const char *)v[2].ptr);
			n++;
		}
		evu_list_free(&l);
		CHECKF(n == want, "\"%s\": %d recorded, %d expected", str_cases[c].expr, n, want);
		CHECK_EQ_U64(rejected("ft_str") - r0, (uint64_t)(24 - want));
	}
	set_filter("ft_str", NULL, 1);
	printf("table: %d + %zu filters ok\n", ncases, sizeof(str_cases) / sizeof(str_cases[0]));
}

/*
 * 2b. Random filters of integer tests joined by &&, || and ! (the
 * tracepoint's inline program), with a float test now and then (the
 * out-of-line path), on random calls: each call is rejected (the event's
 * counter moves by one) exactly when C's operators say the expression is
 * false.
 */
static uint64_t rnd_state = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	return check_rnd(&rnd_state);
}

static unsigned rndn(unsigned n)
{
	return check_rndn(&rnd_state, n);
}

static const int64_t rpool[] = {0,         1,         -1,        2,        5,    42,
				127,       128,       255,       256,      -128, 0x10000,
				INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN};

struct rcall {
	int32_t value;
	uint8_t small;
	int64_t big;
	uint64_t seq;
};

#define RCMP(k, a, b)            \
	((k) == 0   ? (a) == (b) \
	 : (k) == 1 ? (a) != (b) \
	 : (k) == 2 ? (a) < (b)  \
	 : (k) == 3 ? (a) <= (b) \
	 : (k) == 4 ? (a) > (b)  \
		    : (a) >= (b))

/* Append a random expression to buf (at *n) and return its value for each
 * of the calls in c (bit i: call i). */
static uint32_t rgen(char *buf, size_t *n, size_t cap, int depth, const struct rcall *c, int ncalls)
{
	static const char *const ops[] = {"==", "!=", "<", "<=", ">", ">="};
	uint32_t v = 0;
	unsigned kind = depth > 0 ? rndn(5) : 0;
	if (kind < 2) {
		unsigned f = rndn(13), k = rndn(6);
		int64_t lit = rpool[rndn(sizeof(rpool) / sizeof(rpool[0]))];
		if (f == 12) { /* half = value / 2.0: a float test */
			size_t at = *n + 5 + strlen(ops[k]) + 1; /* the literal */
			*n += (size_t)snprintf(buf + *n, cap - *n, "half %s %lld.5", ops[k],
					       (long long)(lit / 4));
			double d = strtod(buf + at, NULL);
			for (int i = 0; i < ncalls; i++)
				v |= (uint32_t)RCMP(k, c[i].value / 2.0, d) << i;
			return v;
		}
		static const char *const names[] = {"value", "small", "big", "seq"};
		unsigned fi = f % 4, band = f >= 8;
		if ((fi == 1 || fi == 3) && lit < 0 && !band)
			lit = lit == INT64_MIN ? INT64_MAX : -lit;
		if (band)
			*n += (size_t)snprintf(buf + *n, cap - *n, "%s & %lld", names[fi],
					       (long long)lit);
		else if (fi == 1 || fi == 3)
			*n += (size_t)snprintf(buf + *n, cap - *n, "%s %s %llu", names[fi], ops[k],
					       (unsigned long long)lit);
		else
			*n += (size_t)snprintf(buf + *n, cap - *n, "%s %s %lld", names[fi], ops[k],
					       (long long)lit);
		for (int i = 0; i < ncalls; i++) {
			int64_t s = fi == 0 ? c[i].value : fi == 1 ? c[i].small : c[i].big;
			uint64_t u = fi == 3 ? c[i].seq : (uint64_t)s;
			int m = band                 ? (u & (uint64_t)lit) != 0
				: fi == 1 || fi == 3 ? RCMP(k, u, (uint64_t)lit)
						     : RCMP(k, s, lit);
			v |= (uint32_t)m << i;
		}
		return v;
	}
	if (kind == 2) {
		*n += (size_t)snprintf(buf + *n, cap - *n, "!(");
		v = ~rgen(buf, n, cap, depth - 1, c, ncalls);
		*n += (size_t)snprintf(buf + *n, cap - *n, ")");
		return v & ((1u << ncalls) - 1);
	}
	int is_or = kind == 3;
	unsigned terms = 2 + rndn(3);
	*n += (size_t)snprintf(buf + *n, cap - *n, "(");
	v = is_or ? 0 : (1u << ncalls) - 1;
	for (unsigned t = 0; t < terms; t++) {
		if (t)
			*n += (size_t)snprintf(buf + *n, cap - *n, is_or ? " || " : " && ");
		uint32_t x = rgen(buf, n, cap, depth - 1, c, ncalls);
		v = is_or ? v | x : v & x;
	}
	*n += (size_t)snprintf(buf + *n, cap - *n, ")");
	return v;
}

static void test_random_inline(void)
{
	enum { NCALLS = 16 };
	char expr[8192];
	unsigned rounds = CHECK_SCALE(600, 150), calls = 0, kept = 0;
	for (unsigned r = 0; r < rounds; r++) {
		struct rcall c[NCALLS];
		for (int i = 0; i < NCALLS; i++) {
			c[i].value = (int32_t)(rndn(2) ? rpool[rndn(16)] : (int64_t)rnd());
			c[i].small = (uint8_t)(rndn(2) ? rpool[rndn(16)] : (int64_t)rnd());
			c[i].big = rndn(2) ? rpool[rndn(16)] : (int64_t)rnd();
			c[i].seq = rndn(2) ? (uint64_t)rpool[rndn(16)] : rnd();
		}
		size_t n = 0;
		uint32_t want = rgen(expr, &n, sizeof(expr), 1 + rndn(3), c, NCALLS);
		CHECK(n < sizeof(expr) - 1);
		set_filter("ft_int", expr, 1);
		for (int i = 0; i < NCALLS; i++) {
			uint64_t r0 = rejected("ft_int");
			trace_ft_int(c[i].value, c[i].small, c[i].big, c[i].seq);
			int pass = rejected("ft_int") == r0;
			CHECKF(pass == (int)((want >> i) & 1),
			       "\"%s\" on value=%d small=%u big=%lld seq=%llu: %s", expr,
			       c[i].value, c[i].small, (long long)c[i].big,
			       (unsigned long long)c[i].seq, pass ? "recorded" : "rejected");
			calls++;
			kept += (unsigned)pass;
		}
	}
	set_filter("ft_int", NULL, 1);
	printf("random inline: %u filters, %u calls, %u recorded\n", rounds, calls, kept);
}

/* ---- 3 ----------------------------------------------------------------------- */

static void expect_error(const char *pattern, const char *expr, int code, unsigned col,
			 const char *msg_part)
{
	unsigned c = 0;
	int rc = ringtrace_event_set_filter(pattern, expr, &c);
	CHECKF(rc == -code, "set_filter(%s, %s) = %d, want %d", pattern, expr, rc, -code);
	CHECKF(c == col, "set_filter(%s, %s): column %u, want %u (%s)", pattern, expr, c, col,
	       ringtrace_last_error());
	CHECKF(evu_has(ringtrace_last_error(), msg_part), "message \"%s\" lacks \"%s\"",
	       ringtrace_last_error(), msg_part);
}

static void test_errors(ringtrace_rb *rb)
{
	set_filter("ft_int", "value > 10", 1);
	expect_error("ft_int", "nosuch == 1", RINGTRACE_EINVAL, 1, "nosuch");
	expect_error("ft_int", "value ~ \"a*\"", RINGTRACE_EINVAL, 7, "ft_int");
	expect_error("ft_int", "value == 1)", RINGTRACE_EINVAL, 11, "parenthes");
	expect_error("ft_int", "(value == 1", RINGTRACE_EINVAL, 1, "never closed");
	expect_error("ft_int", "value == 12x", RINGTRACE_EINVAL, 10, "ft_int");
	expect_error("ft_str", "name < \"x\"", RINGTRACE_EINVAL, 6, "ft_str");
	expect_error("ft_str", "name == \"open", RINGTRACE_EINVAL, 9, "ft_str");
	/* ft_str has no `value`: neither event changes */
	set_filter("ft_str", "id > 0", 1);
	expect_error("ft_int,ft_str", "value > 0", RINGTRACE_EINVAL, 1, "ft_str");
	char buf[64];
	CHECK(ringtrace_event_get_filter("ft_int", buf, sizeof(buf)) > 0 &&
	      strcmp(buf, "value > 10") == 0);
	CHECK(ringtrace_event_get_filter("ft_str", buf, sizeof(buf)) > 0 &&
	      strcmp(buf, "id > 0") == 0);
	/* the old filter still works */
	int vals[] = {5, 11, 12}, got[8];
	emit_ints(vals, 3);
	CHECK_EQ_U64(collect_values(rb, got, 8), 2);
	CHECK(got[0] == 11 && got[1] == 12);
	CHECK(ringtrace_event_set_filter("no_such_event", "v == 1", NULL) == -RINGTRACE_ENOENT);
	CHECK(ringtrace_event_set_filter("ft_[", "v == 1", NULL) == -RINGTRACE_EINVAL);
	CHECK(ringtrace_event_set_filter("ringtrace_printf", "site == 1", NULL) ==
	      -RINGTRACE_EINVAL);

	/* one filter for several events: a list and a glob */
	set_filter("ft_other,ft_target", "v > 5", 2);
	set_filter("ft_o*", "v > 6", 1);
	CHECK(ringtrace_event_get_filter("ft_target", buf, sizeof(buf)) > 0 &&
	      strcmp(buf, "v > 5") == 0);
	CHECK(ringtrace_event_get_filter("ft_other", buf, sizeof(buf)) > 0 &&
	      strcmp(buf, "v > 6") == 0);
	CHECK_OK(ringtrace_event_enable("ft_other"));
	CHECK_OK(ringtrace_event_enable("ft_target"));
	for (int i = 0; i < 10; i++) {
		trace_ft_other(i);
		trace_ft_target(i);
	}
	struct evu_list l = {0};
	evu_collect(rb, &l);
	CHECK_EQ_U64(evu_count_id(&l, evu_id("ft_other")), 3);
	CHECK_EQ_U64(evu_count_id(&l, evu_id("ft_target")), 4);
	evu_list_free(&l);
	set_filter("ft_*", "", 4);
	CHECK(ringtrace_filters_configure("ft_other:v == 1;ft_target:v == \"a;b\"") ==
	      -RINGTRACE_EINVAL);
	CHECK(ringtrace_event_get_filter("ft_other", buf, sizeof(buf)) == 0);
	CHECK_OK(ringtrace_filters_configure("ft_other:v == 1; ft_target : v & 2"));
	CHECK(ringtrace_event_get_filter("ft_target", buf, sizeof(buf)) > 0 &&
	      strcmp(buf, "v & 2") == 0);
	set_filter("ft_*", NULL, 4);
	printf("errors: ok\n");
}

/* ---- 4 ----------------------------------------------------------------------- */

#define CC_THREADS 2
static int cc_stop;
static uint64_t cc_calls[CC_THREADS];

static void *cc_writer(void *arg)
{
	int th = (int)(intptr_t)arg;
	uint64_t seq = 0;
	while (!__atomic_load_n(&cc_stop, __ATOMIC_ACQUIRE)) {
		/* value alternates sign and parity; seq lets us check order */
		int v = (int)(seq % 1000) - 500;
		trace_ft_int(v, (uint8_t)th, big_of(v), seq);
		seq++;
	}
	cc_calls[th] = seq;
	return NULL;
}

struct cc_check {
	uint32_t id;
	uint64_t read;
	uint64_t last[CC_THREADS];
	int seen[CC_THREADS];
};

/*
 * Consume up to max_pages readable pages (0: all), checking every event as
 * it is read (the writers outpace a reader that keeps what it reads).
 */
static void cc_drain(ringtrace_rb *rb, struct cc_check *c, unsigned max_pages)
{
	const struct ringtrace_page_header *p;
	unsigned pages = 0;
	while ((max_pages == 0 || pages < max_pages) && (p = ringtrace_rb_get_page(rb)) != NULL) {
		struct ringtrace_page_cursor cur;
		struct ringtrace_event ev;
		int rc;
		ringtrace_page_cursor_init(&cur, p);
		while ((rc = ringtrace_page_next(&cur, &ev)) == 1) {
			if (ev.id != c->id)
				continue;
			struct evu_event e = {0};
			e.id = ev.id;
			e.len = ev.len;
			e.data = (void *)ev.data;
			struct ringtrace_value v[8];
			evu_decode(&e, v, 8, NULL);
			int th = (int)v[1].v.u;
			CHECK(th >= 0 && th < CC_THREADS);
			uint64_t seq = v[3].v.u;
			CHECK((int)v[0].v.i == (int)(seq % 1000) - 500);
			CHECK(v[2].v.i == big_of((int)v[0].v.i));
			CHECK(!c->seen[th] || seq > c->last[th]);
			c->seen[th] = 1;
			c->last[th] = seq;
			c->read++;
		}
		CHECKF(rc == 0, "page_next: %d: %s", rc, ringtrace_last_error());
		ringtrace_rb_put_page(rb, p);
		pages++;
	}
}

static void test_concurrency(ringtrace_rb *rb)
{
	static const char *const filters[] = {"value & 1", "value >= 0", NULL,
					      "value < -400 || value > 400", "half > 100"};
	struct ringtrace_rb_stats s0 = tu_stats(rb);
	uint64_t r0 = rejected("ft_int");
	struct cc_check chk;
	memset(&chk, 0, sizeof(chk));
	chk.id = evu_id("ft_int");
	pthread_t t[CC_THREADS];
	cc_stop = 0;
	for (int i = 0; i < CC_THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, cc_writer, (void *)(intptr_t)i) == 0);
	uint64_t t_end = tu_mono_ns() + 800000000ull;
	unsigned k = 0;
	while (tu_mono_ns() < t_end) {
		set_filter("ft_int", filters[k++ % 5], 1);
		cc_drain(rb, &chk, 64);
		tu_sleep_us(2000);
	}
	__atomic_store_n(&cc_stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < CC_THREADS; i++)
		pthread_join(t[i], NULL);
	ringtrace_rb_writer_release(rb);
	CHECK_OK(ringtrace_rb_flush(rb, 0));
	cc_drain(rb, &chk, 0);
	struct ringtrace_rb_stats s1 = tu_stats(rb);
	uint64_t calls = cc_calls[0] + cc_calls[1], rej = rejected("ft_int") - r0;
	uint64_t hit = s1.hit - s0.hit, missed = s1.missed - s0.missed;
	CHECKF(hit + missed + rej == calls,
	       "calls %llu != recorded %llu + missed %llu + rejected %llu",
	       (unsigned long long)calls, (unsigned long long)hit, (unsigned long long)missed,
	       (unsigned long long)rej);
	/* every event recorded was read, intact and in order per thread */
	CHECKF(chk.read == hit, "read %llu events, %llu recorded", (unsigned long long)chk.read,
	       (unsigned long long)hit);
	set_filter("ft_int", NULL, 1);
	printf("concurrency: %llu calls, %llu recorded, %llu rejected, %llu missed, %u filter changes\n",
	       (unsigned long long)calls, (unsigned long long)hit, (unsigned long long)rej,
	       (unsigned long long)missed, k);
}

/* ---- 5 ----------------------------------------------------------------------- */

static struct ringtrace_trigger_info trig(int id)
{
	struct ringtrace_trigger_info ti;
	uint32_t n = ringtrace_trigger_count();
	for (uint32_t i = 0; i < n; i++) {
		CHECK_OK(ringtrace_trigger_get(i, &ti));
		if (ti.id == id)
			return ti;
	}
	CHECKF(0, "no trigger %d", id);
	return ti;
}

static void trig_error(const char *spec, unsigned col, const char *part)
{
	unsigned c = 0;
	int rc = ringtrace_trigger_add(spec, &c);
	CHECKF(rc == -RINGTRACE_EINVAL, "trigger_add(%s) = %d", spec, rc);
	CHECKF(c == col, "trigger_add(%s): column %u, want %u: %s", spec, c, col,
	       ringtrace_last_error());
	CHECKF(evu_has(ringtrace_last_error(), part), "\"%s\" lacks \"%s\"", ringtrace_last_error(),
	       part);
}

static void test_triggers(ringtrace_rb *rb)
{
	uint32_t oid = evu_id("ft_other"), tid = evu_id("ft_target");
	CHECK_OK(ringtrace_event_enable("ft_other"));
	CHECK_OK(ringtrace_event_disable("ft_target"));

	/* traceoff at v == 5, traceon at v == 8: 5 is recorded (before the
	 * action), 6 and 7 are not, 8 is not (recorded before traceon runs) */
	int off = ringtrace_trigger_add("ft_other if v == 5: traceoff", NULL);
	int on = ringtrace_trigger_add("ft_other if v == 8 : traceon", NULL);
	CHECK(off > 0 && on > off);
	for (int i = 0; i < 12; i++)
		trace_ft_other(i);
	CHECK(ringtrace_tracing_is_on());
	struct evu_list l = {0};
	evu_collect(rb, &l);
	int want[] = {0, 1, 2, 3, 4, 5, 9, 10, 11}, n = 0;
	for (size_t i = 0; i < l.n; i++) {
		if (l.ev[i].id != oid)
			continue;
		struct ringtrace_value v[2];
		evu_decode(&l.ev[i], v, 2, NULL);
		CHECKF(n < 9 && v[0].v.i == want[n], "event %d: v=%lld", n, (long long)v[0].v.i);
		n++;
	}
	CHECK_EQ_U64(n, 9);
	evu_list_free(&l);
	CHECK_EQ_U64(trig(off).fired, 1);
	CHECK_EQ_U64(trig(on).fired, 1);
	CHECK_OK(ringtrace_trigger_remove(off));
	CHECK_OK(ringtrace_trigger_remove(on));
	CHECK(ringtrace_trigger_remove(on) == -RINGTRACE_ENOENT);

	/* enable_event with a count: the first 2 calls with v > 2 enable
	 * ft_target; then disable_event at v == 6 */
	int en = ringtrace_trigger_add("ft_other if v > 2: enable_event:ft_target:2", NULL);
	int dis = ringtrace_trigger_add("ft_other if v == 6: disable_event:ft_target", NULL);
	CHECK(en > 0 && dis > 0);
	CHECK(trig(en).remaining == 2 && trig(dis).remaining == -1);
	for (int i = 0; i < 10; i++) {
		trace_ft_other(i);
		trace_ft_target(i);
	}
	evu_collect(rb, &l);
	n = 0;
	for (size_t i = 0; i < l.n; i++) {
		if (l.ev[i].id != tid)
			continue;
		struct ringtrace_value v[2];
		evu_decode(&l.ev[i], v, 2, NULL);
		CHECKF(v[0].v.i >= 3 && v[0].v.i <= 5, "ft_target v=%lld recorded",
		       (long long)v[0].v.i);
		n++;
	}
	CHECK_EQ_U64(n, 3);
	evu_list_free(&l);
	struct ringtrace_trigger_info ti = trig(en);
	CHECK_EQ_U64(ti.fired, 2);
	CHECK_EQ_U64(ti.skipped, 5); /* v = 5..9 matched with no runs left */
	CHECK(ti.remaining == 0);
	CHECK(ti.action == RINGTRACE_TRIGGER_ENABLE_EVENT);
	CHECK(strcmp(ti.spec, "ft_other if v > 2: enable_event:ft_target:2") == 0);
	CHECK_EQ_U64(trig(dis).fired, 1);
	CHECK(!evu_enabled("ft_target"));
	CHECK_OK(ringtrace_trigger_remove(en));
	CHECK_OK(ringtrace_trigger_remove(dis));

	/* a snapshot trigger with no session: skipped, nothing else happens */
	int sn = ringtrace_trigger_add("ft_other: snapshot:1", NULL);
	trace_ft_other(1);
	CHECK_EQ_U64(trig(sn).fired, 0);
	CHECK_EQ_U64(trig(sn).skipped, 1);
	CHECK(trig(sn).remaining == 1);
	CHECK_OK(ringtrace_trigger_remove(sn));
	evu_collect(rb, &l);
	evu_list_free(&l);

	/* a trigger on an event loaded later waits for it (not an error) */
	int later = ringtrace_trigger_add("not_loaded_yet: traceoff", NULL);
	CHECK(later > 0);
	CHECK_OK(ringtrace_trigger_remove(later));

	trig_error("ft_other if v == : snapshot", 17, "ft_other");
	trig_error("ft_other: explode", 11, "unknown action");
	trig_error("ft_other: snapshot:0", 20, "count");
	trig_error("ft_other snapshot", 10, "expected ':'");
	trig_error("ft_other: enable_event", 23, "NAME");
	trig_error("ft_other: snapshot junk", 20, "unexpected");
	trig_error("ft_[: snapshot", 1, "ft_[");
	trig_error("", 1, "event");
	trig_error("ft_other if nosuch > 1: traceoff", 13, "nosuch");
	trig_error("ft_other if v > 1", 18, "ACTION");
	CHECK(ringtrace_triggers_configure("ft_other: traceoff; ft_other: bad") ==
	      -RINGTRACE_EINVAL);
	CHECK_EQ_U64(ringtrace_trigger_count(), 0); /* all or nothing */
	printf("triggers: ok\n");
}

/* ---- 6 ----------------------------------------------------------------------- */

static void test_snapshot_trigger(const char *bt)
{
	char dir[128], snap[160], cmd[1024];
	snprintf(dir, sizeof(dir), "/tmp/rt_filter_snap_%d", (int)getpid());
	snprintf(snap, sizeof(snap), "%s.snapshot-1", dir);
	snprintf(cmd, sizeof(cmd), "rm -rf %s %s", dir, snap);
	CHECK(system(cmd) == 0);
	struct ringtrace_session_config cfg;
	ringtrace_session_config_init(&cfg);
	cfg.output_dir = dir;
	cfg.events = "ft_int,ft_other";
	cfg.mode = RINGTRACE_RB_OVERWRITE;
	cfg.page_size = 4096;
	cfg.pool_size = 64 * 4096;
	CHECK_OK(ringtrace_session_start(&cfg));
	int id = ringtrace_trigger_add("ft_other if v == 777: snapshot:1", NULL);
	CHECK(id > 0);
	/* many events: the buffer wraps many times over */
	for (int i = 0; i < 200000; i++)
		trace_ft_int(i, 0, big_of(i), (uint64_t)i);
	trace_ft_other(776);
	trace_ft_other(777); /* the anomaly */
	/* the recorder writes the snapshot on its own thread */
	char meta[400];
	snprintf(meta, sizeof(meta), "%s/metadata", snap);
	struct stat st;
	for (int i = 0; i < 2000 && stat(meta, &st) != 0; i++)
		tu_sleep_us(5000);
	CHECKF(stat(meta, &st) == 0, "%s was not written", meta);
	for (int i = 0; i < 1000; i++)
		trace_ft_int(-i, 0, 0, 0);
	trace_ft_other(777); /* :1 - no second snapshot */
	CHECK_EQ_U64(trig(id).fired, 1);
	CHECK_OK(ringtrace_trigger_remove(id));
	CHECK_OK(ringtrace_session_stop());

	ringtrace_trace *t;
	CHECKF(ringtrace_trace_open(snap, NULL, NULL, &t) == 0, "open %s: %s", snap,
	       ringtrace_trace_open_error());
	struct ringtrace_trace_record r;
	uint64_t nint = 0, last_int = 0, n777 = 0;
	int anomaly_after_last = 0;
	while (ringtrace_trace_next(t, &r) == 1) {
		if (r.kind != RINGTRACE_TRACE_EVENT || !r.def)
			continue;
		int32_t v;
		memcpy(&v, r.data, 4);
		if (strcmp(r.def->name, "ft_int") == 0) {
			CHECKF(v >= 0, "an event after the snapshot (v=%d) is in it", v);
			nint++;
			last_int = (uint64_t)v;
		} else if (strcmp(r.def->name, "ft_other") == 0 && v == 777) {
			n777++;
			anomaly_after_last = last_int == 199999;
		}
	}
	CHECK_EQ_U64(ringtrace_trace_errors(t), 0);
	ringtrace_trace_close(t);
	CHECK_EQ_U64(n777, 1);
	CHECK(anomaly_after_last);
	CHECKF(nint > 1000, "only %llu events before the anomaly", (unsigned long long)nint);

	/* the reference reader */
	snprintf(cmd, sizeof(cmd), "%s %s > %s.txt 2>/dev/null", bt, snap, dir);
	CHECKF(system(cmd) == 0, "%s failed", cmd);
	snprintf(cmd, sizeof(cmd),
		 "grep -c 'ft_other' %s.txt | grep -qx 2 && grep -q 'v = 777' %s.txt", dir, dir);
	CHECKF(system(cmd) == 0, "babeltrace2 output lacks the anomaly (%s.txt)", dir);
	snprintf(cmd, sizeof(cmd), "rm -rf %s %s %s.txt", dir, snap, dir);
	CHECK(system(cmd) == 0);
	printf("snapshot trigger: %llu events before the anomaly in the snapshot; babeltrace2 reads it\n",
	       (unsigned long long)nint);
}

/* ---- 7 ----------------------------------------------------------------------- */

static int run_env_child(const char *self, const char *filters, const char *triggers,
			 const char *errfile)
{
	char f[512], t[512];
	snprintf(f, sizeof(f), "RINGTRACE_FILTERS=%s", filters);
	snprintf(t, sizeof(t), "RINGTRACE_TRIGGERS=%s", triggers);
	char *envp[] = {f, t, NULL};
	char *argv[] = {(char *)self, (char *)"env-child", NULL};
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 2, errfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	pid_t pid;
	CHECK(posix_spawn(&pid, self, &fa, NULL, argv, envp) == 0);
	posix_spawn_file_actions_destroy(&fa);
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static int env_child(void)
{
	char buf[128];
	CHECK(ringtrace_event_get_filter("ft_int", buf, sizeof(buf)) > 0 &&
	      strcmp(buf, "value > 5") == 0);
	CHECK(ringtrace_event_get_filter("ft_str", buf, sizeof(buf)) > 0 &&
	      strcmp(buf, "name ~ \"a;b*\"") == 0);
	/* ft_other's filter did not compile: not recorded */
	CHECK(!evu_enabled("ft_other"));
	CHECK(ringtrace_event_get_filter("ft_other", buf, sizeof(buf)) == 0);
	CHECK_EQ_U64(ringtrace_trigger_count(), 1);
	ringtrace_rb *rb = evu_buffer(4096, 16);
	CHECK_OK(ringtrace_event_enable("ft_int"));
	for (int i = 0; i < 10; i++)
		trace_ft_int(i, 0, 0, 0);
	CHECK(ringtrace_tracing_is_on());
	trace_ft_target(3); /* the trigger: traceoff */
	CHECK(!ringtrace_tracing_is_on());
	ringtrace_tracing_on();
	struct evu_list l = {0};
	evu_collect(rb, &l);
	CHECK_EQ_U64(evu_count_id(&l, evu_id("ft_int")), 4);
	evu_list_free(&l);
	evu_buffer_done(rb);
	return 0;
}

static void test_env(const char *self)
{
	char errfile[128];
	snprintf(errfile, sizeof(errfile), "/tmp/rt_filter_env_%d.err", (int)getpid());
	int rc = run_env_child(self,
			       "ft_int:value > 5; ft_str : name ~ \"a;b*\";ft_other:nope == 1",
			       "ft_target if v == 3: traceoff", errfile);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "grep -q 'RINGTRACE_FILTERS.*ft_other.*nope.*column 1' %s",
		 errfile);
	int found = system(cmd);
	if (rc != 0 || found != 0) {
		snprintf(cmd, sizeof(cmd), "cat %s >&2", errfile);
		CHECK(system(cmd) == 0);
	}
	CHECKF(rc == 0, "env child exited %d", rc);
	CHECKF(found == 0, "the bad filter was not reported on stderr");
	unlink(errfile);
	printf("environment: ok\n");
}

/* ---- the cases ----------------------------------------------------------------- */

static const char *self_path; /* argv[0]: the environment case runs it again */
static const char *bt_path;   /* babeltrace2 */

static void case_basic(void)
{
	ringtrace_rb *rb = evu_buffer(4096, 256);
	test_basic(rb);
	evu_buffer_done(rb);
}

/* ft_int recorded, no filter on it (as case_basic leaves it). */
static ringtrace_rb *ft_int_buffer(void)
{
	ringtrace_rb *rb = evu_buffer(4096, 256);
	CHECK_OK(ringtrace_event_enable("ft_int"));
	return rb;
}

static void case_table(void)
{
	ringtrace_rb *rb = ft_int_buffer();
	test_table(rb);
	evu_buffer_done(rb);
}

static void case_random_inline(void)
{
	ringtrace_rb *rb = ft_int_buffer();
	test_random_inline();
	evu_buffer_done(rb);
}

static void case_errors(void)
{
	ringtrace_rb *rb = ft_int_buffer();
	test_errors(rb);
	evu_buffer_done(rb);
}

static void case_concurrency(void)
{
	ringtrace_rb *rb = ft_int_buffer();
	test_concurrency(rb);
	evu_buffer_done(rb);
}

static void case_triggers(void)
{
	ringtrace_rb *rb = evu_buffer(4096, 256);
	test_triggers(rb);
	evu_buffer_done(rb);
}

static void case_snapshot_trigger(void)
{
	test_snapshot_trigger(bt_path);
}

static void case_env(void)
{
	test_env(self_path);
}

/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
static const struct check_case cases[] = {
	CHECK_CASE(event_filter_records_matching_calls_counts_the_rest_rejected, case_basic),
	CHECK_CASE(event_filter_table_agrees_with_c_predicates_on_every_field_kind, case_table),
	CHECK_CASE(event_filter_random_integer_programs_agree_with_c_at_the_tracepoint, case_random_inline),
	CHECK_CASE(event_filter_errors_name_event_and_column_and_keep_old_filter, case_errors),
	CHECK_CASE(event_filter_replaced_under_concurrent_calls_every_call_counted, case_concurrency),
	CHECK_CASE(event_filter_triggers_fire_with_conditions_and_counts, case_triggers),
	CHECK_CASE(event_filter_snapshot_trigger_writes_flight_recorder_dump, case_snapshot_trigger),
	CHECK_CASE(event_filter_env_filters_and_triggers_applied_at_start, case_env),
};
/* clang-format on */

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && strcmp(argv[1], "env-child") == 0)
		return env_child();
	bt_path = getenv("RINGTRACE_BABELTRACE2");
	if (!bt_path)
		bt_path = "babeltrace2";
	self_path = argv[0];
	return CHECK_MAIN(cases, argc, argv);
}
