/*
 * libFuzzer harness for filter expressions: each input is compiled as an
 * expression against a fixed schema (every filterable type, fields after
 * a byte sequence); when it compiles, it is evaluated against a few
 * records, whole and cut short. Compiling must never crash or read past
 * the input; evaluating must never read past a record; the inline forms
 * the tracepoint would run (one test, a program) must agree with the
 * interpreter on the whole records.
 *
 * The same input is also parsed as a trigger spec (`EVENT [if EXPR]:
 * ACTION[:N]`) for the event fz_ev defined here; a trigger that is added
 * runs once on a call of the tracepoint, then is removed.
 *
 *   fuzz_filter [CORPUS] -max_total_time=30
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ringtrace/filter.h>

#define RINGTRACE_CREATE_EVENTS
#include <ringtrace/tracepoint.h>

RINGTRACE_EVENT(fz_ev, RINGTRACE_PROTO(int32_t c, const char *s), RINGTRACE_ARGS(c, s),
		RINGTRACE_FIELDS(ringtrace_integer(int32_t, c, c) ringtrace_string(s, s)),
		RINGTRACE_PRINT("c=%d s=%s"))

static const struct ringtrace_enum_value ev[] = {{"RED", 0}, {"GREEN", 1}, {"NEG", -1}};
static const struct ringtrace_enum_desc ed = {"color", ev, 3};
static const struct ringtrace_field_desc schema[] = {
	{"_truncated", RINGTRACE_FT_INT, 1, 0, 1, 0, NULL},
	{"a", RINGTRACE_FT_INT, 1, 1, 1, 0, NULL},
	{"b", RINGTRACE_FT_INT, 2, 0, 2, 0, NULL},
	{"c", RINGTRACE_FT_INT, 4, 1, 4, 0, NULL},
	{"d", RINGTRACE_FT_INT, 8, 0, 8, 0, NULL},
	{"f", RINGTRACE_FT_FLOAT, 4, 1, 4, 0, NULL},
	{"g", RINGTRACE_FT_FLOAT, 8, 1, 8, 0, NULL},
	{"ok", RINGTRACE_FT_BOOL, 1, 0, 1, 0, NULL},
	{"e", RINGTRACE_FT_ENUM, 4, 1, 4, 0, &ed},
	{"p", RINGTRACE_FT_POINTER, 8, 0, 8, 0, NULL},
	{"arr", RINGTRACE_FT_ARRAY, 2, 0, 2, 2, NULL},
	{"s", RINGTRACE_FT_STRING, 1, 0, 1, 64, NULL},
	{"y", RINGTRACE_FT_BYTES, 1, 0, 4, 64, NULL},
	{"t", RINGTRACE_FT_INT, 4, 0, 4, 0, NULL},
	{"z", RINGTRACE_FT_STRING, 1, 0, 1, 64, NULL},
};
#define NF ((uint32_t)(sizeof(schema) / sizeof(schema[0])))

/* The library's inline forms of a compiled filter (src/control; the
 * harness links the static library). */
int rt_filter_fast_form(const ringtrace_filter *f, struct ringtrace_fast_pred_ *fp);
const struct ringtrace_fast_pred_ *rt_filter_inline_prog(const ringtrace_filter *f);

/* Records: the fixed part (64 bytes), then s, y, t, z. */
static size_t build(uint8_t *buf, unsigned seed, const char *s, const char *y, uint32_t yl,
		    const char *z)
{
	for (size_t i = 0; i < 64; i++)
		buf[i] = (uint8_t)(seed * 37u + i * 11u);
	size_t o = 64;
	memcpy(buf + o, s, strlen(s) + 1);
	o += strlen(s) + 1;
	while (o % 4)
		buf[o++] = 0;
	memcpy(buf + o, &yl, 4);
	memcpy(buf + o + 4, y, yl);
	o += 4 + yl;
	while (o % 4)
		buf[o++] = 0;
	uint32_t t = seed;
	memcpy(buf + o, &t, 4);
	o += 4;
	memcpy(buf + o, z, strlen(z) + 1);
	return o + strlen(z) + 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *expr = malloc(size + 1);
	if (!expr)
		return 0;
	memcpy(expr, data, size);
	expr[size] = 0;
	ringtrace_filter *f = NULL;
	unsigned col = 0;
	int rc = ringtrace_filter_compile(schema, NF, expr, &f, &col);
	if (rc == 0) {
		uint8_t buf[256];
		size_t lens[3];
		uint8_t *recs[3];
		lens[0] = build(buf, 1, "eth0", "ab", 2, "x");
		recs[0] = malloc(lens[0]);
		memcpy(recs[0], buf, lens[0]);
		lens[1] = build(buf, 2, "", "", 0, "");
		recs[1] = malloc(lens[1]);
		memcpy(recs[1], buf, lens[1]);
		lens[2] = build(buf, 3, "wlan*", "\0\1\2", 3, "sda");
		recs[2] = malloc(lens[2]);
		memcpy(recs[2], buf, lens[2]);
		struct ringtrace_fast_pred_ one;
		int has_one = rt_filter_fast_form(f, &one);
		const struct ringtrace_fast_pred_ *prog = rt_filter_inline_prog(f);
		for (int r = 0; r < 3; r++) {
			int m = ringtrace_filter_match(f, recs[r], lens[r]);
			/* The tracepoint's inline forms say what the interpreter says
			 * (on a whole record: the call's entry stages whole ones). */
			if ((has_one && ringtrace_fast_pred_(&one, recs[r]) != m) ||
			    (prog && ringtrace_fast_prog_(prog, recs[r]) != m))
				abort();
			/* Cut short at a few places, copied to an exact-size block. */
			for (size_t cut = 0; cut < lens[r]; cut += 7) {
				uint8_t *p = malloc(cut ? cut : 1);
				memcpy(p, recs[r], cut);
				(void)ringtrace_filter_match(f, p, cut);
				free(p);
			}
			free(recs[r]);
		}
		ringtrace_filter_free(f);
	} else if (col > size + 1) {
		abort(); /* the column must point into the expression (or just past it) */
	}
	col = 0;
	int id = ringtrace_trigger_add(expr, &col);
	if (id > 0) {
		trace_fz_ev(3, "eth0");
		ringtrace_tracing_on(); /* whatever the action did */
		if (ringtrace_trigger_remove(id) != 0)
			abort();
	} else if (col > size + 1) {
		abort();
	}
	free(expr);
	return 0;
}
