/*
 * test_event_fields: every field type of RINGTRACE_EVENT round-trips
 * through the buffer exactly.
 *
 *  1. The registry: names, ids (unique, >= RINGTRACE_EVENT_ID_FIRST, the
 *     printf pseudo-event at 0), kinds, print formats, and each field's
 *     name, type, size, signedness, alignment, count and enum values;
 *     the hidden `_truncated` field exactly when there are variable-length
 *     fields.
 *  2. Events recorded with boundary values (integer limits, NaN, +-inf,
 *     -0.0, denormals, empty / NULL / exactly-max / too-long strings,
 *     empty / max / too-long byte sequences) are read back from pages,
 *     decoded with ringtrace_record_decode() and the schema from
 *     ringtrace_event_by_id(), and compared value by value and offset by
 *     offset (the layout is recomputed here independently).
 *  3. ringtrace_record_format() text of several events; snprintf-like
 *     return value and truncation.
 *  4. Damaged records are refused with -RINGTRACE_ECORRUPT, the message
 *     naming the damaged field.
 * Each is a case; 2, 3 and 4 work on the same recorded events
 * (fields_record() records them for each).
 */
#include <float.h>
#include <math.h>

#include "events_fields.h"
#include "events_util.h"

#define SMAX RINGTRACE_STRING_MAX
#define BMAX RINGTRACE_BYTES_MAX

static const struct ringtrace_event_info *find_info(const char *name)
{
	static struct ringtrace_event_info infos[16];
	static int n;
	CHECK(n < 16);
	int rc = ringtrace_event_lookup(name, &infos[n]);
	CHECKF(rc == 0, "lookup(%s): %d: %s", name, rc, ringtrace_last_error());
	return &infos[n++];
}

static void check_field(const struct ringtrace_event_info *in, uint32_t i, const char *name,
			int type, unsigned size, int is_signed, unsigned align, uint32_t count)
{
	CHECKF(i < in->nfields, "%s: field %u of %u", in->name, i, in->nfields);
	const struct ringtrace_field_desc *f = &in->fields[i];
	CHECKF(strcmp(f->name, name) == 0, "%s field %u: name \"%s\", expected \"%s\"", in->name, i,
	       f->name, name);
	CHECKF(f->type == type, "%s.%s: type %u, expected %d", in->name, name, f->type, type);
	CHECKF(f->size == size, "%s.%s: size %u, expected %u", in->name, name, f->size, size);
	CHECKF(f->is_signed == is_signed, "%s.%s: is_signed %u, expected %d", in->name, name,
	       f->is_signed, is_signed);
	CHECKF(f->align == align, "%s.%s: align %u, expected %u", in->name, name, f->align, align);
	CHECKF(f->count == count, "%s.%s: count %u, expected %u", in->name, name, f->count, count);
	if (type != RINGTRACE_FT_ENUM)
		CHECKF(f->enm == NULL, "%s.%s: enum table on a non-enum field", in->name, name);
}

static void check_enum(const struct ringtrace_field_desc *f, const char *ename, uint32_t n,
		       const char *const *names, const int64_t *values)
{
	CHECKF(f->enm != NULL, "field %s has no enum table", f->name);
	CHECKF(strcmp(f->enm->name, ename) == 0, "enum name %s", f->enm->name);
	CHECK_EQ_U64(f->enm->count, n);
	for (uint32_t i = 0; i < n; i++) {
		CHECKF(strcmp(f->enm->values[i].name, names[i]) == 0, "enum %s value %u: %s", ename,
		       i, f->enm->values[i].name);
		CHECK_EQ_U64(f->enm->values[i].value, values[i]);
	}
}

/* ---- 1. the registry ---------------------------------------------------- */

static void test_registry(void)
{
	const struct ringtrace_event_info *in;

	in = find_info("fe_ints");
	CHECK(strcmp(in->name, "fe_ints") == 0);
	CHECK_EQ_U64(in->kind, RINGTRACE_KIND_INSTANT);
	CHECK(strcmp(in->print_fmt, "s8=%d s16=%d s32=%d s64=%lld u8=%u u16=%u u32=%u u64=%llu") ==
	      0);
	CHECKF(evu_has(in->file, "events_fields"), "file \"%s\"", in->file);
	CHECK(in->loaded == 1);
	CHECK(in->enabled == 0);
	CHECK(in->probes == 0);
	CHECK_EQ_U64(in->nfields, 8); /* no variable-length field: no _truncated */
	check_field(in, 0, "s8v", RINGTRACE_FT_INT, 1, 1, 1, 0);
	check_field(in, 1, "s16v", RINGTRACE_FT_INT, 2, 1, 2, 0);
	check_field(in, 2, "s32v", RINGTRACE_FT_INT, 4, 1, 4, 0);
	check_field(in, 3, "s64v", RINGTRACE_FT_INT, 8, 1, 8, 0);
	check_field(in, 4, "u8v", RINGTRACE_FT_INT, 1, 0, 1, 0);
	check_field(in, 5, "u16v", RINGTRACE_FT_INT, 2, 0, 2, 0);
	check_field(in, 6, "u32v", RINGTRACE_FT_INT, 4, 0, 4, 0);
	check_field(in, 7, "u64v", RINGTRACE_FT_INT, 8, 0, 8, 0);

	in = find_info("fe_scalars");
	CHECK_EQ_U64(in->kind, RINGTRACE_KIND_COUNTER);
	CHECK(strcmp(in->print_fmt, "f=%g b=%d d=%g p=%p st=%s big=%s") == 0);
	CHECK_EQ_U64(in->nfields, 6);
	check_field(in, 0, "fv", RINGTRACE_FT_FLOAT, 4, 1, 4, 0);
	check_field(in, 1, "bv", RINGTRACE_FT_BOOL, 1, 0, 1, 0);
	check_field(in, 2, "dv", RINGTRACE_FT_FLOAT, 8, 1, 8, 0);
	check_field(in, 3, "pv", RINGTRACE_FT_POINTER, 8, 0, 8, 0);
	check_field(in, 4, "stv", RINGTRACE_FT_ENUM, 1, 1, 1, 0);
	check_field(in, 5, "bigv", RINGTRACE_FT_ENUM, 4, 0, 4, 0);
	{
		static const char *const n1[] = {"IDLE", "BUSY", "NEG", "BIG"};
		static const int64_t v1[] = {0, 1, -1, 100};
		check_enum(&in->fields[4], "fe_state", 4, n1, v1);
		static const char *const n2[] = {"ZERO", "MAX"};
		static const int64_t v2[] = {0, UINT32_MAX};
		check_enum(&in->fields[5], "fe_big", 2, n2, v2);
	}

	in = find_info("fe_arrays");
	CHECK_EQ_U64(in->nfields, 5);
	check_field(in, 0, "a8v", RINGTRACE_FT_ARRAY, 1, 1, 1, 3);
	check_field(in, 1, "a64v", RINGTRACE_FT_ARRAY, 8, 1, 8, 2);
	check_field(in, 2, "au16v", RINGTRACE_FT_ARRAY, 2, 0, 2, 5);
	check_field(in, 3, "afv", RINGTRACE_FT_FLOAT_ARRAY, 4, 1, 4, 4);
	check_field(in, 4, "adv", RINGTRACE_FT_FLOAT_ARRAY, 8, 1, 8, 3);

	in = find_info("fe_var");
	CHECK_EQ_U64(in->kind, RINGTRACE_KIND_BEGIN);
	CHECK_EQ_U64(in->nfields, 8);
	check_field(in, 0, "_truncated", RINGTRACE_FT_INT, 1, 0, 1, 0);
	check_field(in, 1, "tag", RINGTRACE_FT_INT, 1, 0, 1, 0);
	check_field(in, 2, "str", RINGTRACE_FT_STRING, 1, 0, 1, SMAX);
	check_field(in, 3, "mid", RINGTRACE_FT_INT, 2, 1, 2, 0);
	check_field(in, 4, "blob", RINGTRACE_FT_BYTES, 1, 0, 4, BMAX);
	check_field(in, 5, "after", RINGTRACE_FT_FLOAT, 8, 1, 8, 0);
	check_field(in, 6, "str2", RINGTRACE_FT_STRING, 1, 0, 1, SMAX);
	check_field(in, 7, "last", RINGTRACE_FT_INT, 8, 0, 8, 0);

	in = find_info("fe_nine");
	CHECK_EQ_U64(in->nfields, 10);
	check_field(in, 0, "_truncated", RINGTRACE_FT_INT, 1, 0, 1, 0);
	for (uint32_t i = 0; i < 9; i++) {
		char nm[8];
		snprintf(nm, sizeof(nm), "v%u", i);
		check_field(in, i + 1, nm, RINGTRACE_FT_STRING, 1, 0, 1, SMAX);
	}

	/* Every entry: ids unique; printf at 0, the others >= FIRST. */
	uint32_t n = ringtrace_event_count();
	CHECKF(n >= 8, "only %u events registered", n);
	uint32_t ids[64];
	int seen_printf = 0, seen_ints = 0;
	CHECK(n <= 64);
	for (uint32_t i = 0; i < n; i++) {
		struct ringtrace_event_info e;
		CHECK_OK(ringtrace_event_get(i, &e));
		ids[i] = e.id;
		if (strcmp(e.name, "ringtrace_printf") == 0) {
			CHECK_EQ_U64(e.id, RINGTRACE_EVENT_ID_PRINTF);
			seen_printf = 1;
		} else {
			CHECKF(e.id >= RINGTRACE_EVENT_ID_FIRST && e.id <= RINGTRACE_EV_MAX_ID,
			       "event %s has id %u", e.name, e.id);
		}
		if (strcmp(e.name, "fe_ints") == 0)
			seen_ints = 1;
		for (uint32_t k = 0; k < i; k++)
			CHECKF(ids[k] != e.id, "id %u given twice (%s)", e.id, e.name);
		struct ringtrace_event_info byid;
		CHECK_OK(ringtrace_event_by_id(e.id, &byid));
		CHECK(strcmp(byid.name, e.name) == 0);
	}
	CHECK(seen_printf && seen_ints);
	struct ringtrace_event_info e;
	CHECK(ringtrace_event_get(n, &e) == -RINGTRACE_ENOENT);
	CHECK(ringtrace_event_by_id(RINGTRACE_EV_MAX_ID, &e) == -RINGTRACE_ENOENT);
	CHECK(ringtrace_event_lookup("fe_nosuch", &e) == -RINGTRACE_ENOENT);
	CHECKF(evu_has(ringtrace_last_error(), "fe_nosuch"), "message: %s", ringtrace_last_error());
	/* The descriptor got the registry's id. */
	CHECK_EQ_U64(ringtrace_event_fe_ints.id, find_info("fe_ints")->id);
	CHECK_EQ_U64(ringtrace_event_fe_var.id, find_info("fe_var")->id);
}

/* ---- 2. recording and decoding -------------------------------------------- */

static uint32_t align_up(uint32_t v, uint32_t a)
{
	return (v + a - 1) & ~(a - 1);
}

static int same_bits_f(float a, float b)
{
	return memcmp(&a, &b, sizeof(a)) == 0;
}

static int same_bits_d(double a, double b)
{
	return memcmp(&a, &b, sizeof(a)) == 0;
}

struct var_case {
	uint8_t tag;
	const char *s;
	int16_t mid;
	const void *b;
	size_t blen;
	double after;
	const char *s2;
	uint64_t last;
	/* expected */
	uint8_t trunc;
	uint32_t slen, blen_rec, s2len;
};

static char str_1023[SMAX], str_1024[SMAX + 1], str_5000[5001];
static uint8_t bytes_max1[BMAX + 1];

static void fill_data(void)
{
	for (uint32_t i = 0; i < 5000; i++)
		str_5000[i] = (char)('A' + i % 26);
	str_5000[5000] = 0;
	memcpy(str_1023, str_5000 + 3, SMAX - 1);
	str_1023[SMAX - 1] = 0;
	memcpy(str_1024, str_5000 + 7, SMAX);
	str_1024[SMAX] = 0;
	for (uint32_t i = 0; i < BMAX + 1; i++)
		bytes_max1[i] = (uint8_t)(i * 7 + (i >> 8));
}

static void check_var(const struct evu_event *e, const struct var_case *c)
{
	struct ringtrace_value v[16];
	struct ringtrace_event_info info;
	uint32_t n = evu_decode(e, v, 16, &info);
	CHECK(strcmp(info.name, "fe_var") == 0);
	CHECK_EQ_U64(n, 8);
	/* Layout recomputed independently. */
	uint32_t o = 0;
	CHECK_EQ_U64(v[0].offset, o);
	CHECKF(v[0].v.u == c->trunc, "tag %u: _truncated 0x%" PRIx64 ", expected 0x%x", c->tag,
	       v[0].v.u, c->trunc);
	o = 1;
	CHECK_EQ_U64(v[1].offset, o);
	CHECK_EQ_U64(v[1].v.u, c->tag);
	o += 1;
	CHECK_EQ_U64(v[2].offset, o);
	CHECKF(v[2].len == c->slen, "tag %u: str len %u, expected %u", c->tag, v[2].len, c->slen);
	CHECK(c->slen == 0 || memcmp(v[2].ptr, c->s, c->slen) == 0);
	CHECK(((const char *)v[2].ptr)[c->slen] == 0);
	o += c->slen + 1;
	o = align_up(o, 2);
	CHECK_EQ_U64(v[3].offset, o);
	CHECK_EQ_U64(v[3].v.i, c->mid);
	o += 2;
	o = align_up(o, 4);
	CHECK_EQ_U64(v[4].offset, o);
	CHECKF(v[4].len == c->blen_rec, "tag %u: blob len %u, expected %u", c->tag, v[4].len,
	       c->blen_rec);
	CHECK(c->blen_rec == 0 || memcmp(v[4].ptr, c->b, c->blen_rec) == 0);
	CHECK((const char *)v[4].ptr == (const char *)e->data + o + 4);
	o += 4 + c->blen_rec;
	o = align_up(o, 8);
	CHECK_EQ_U64(v[5].offset, o);
	CHECK(same_bits_d(v[5].v.f, c->after));
	o += 8;
	CHECK_EQ_U64(v[6].offset, o);
	CHECKF(v[6].len == c->s2len, "tag %u: str2 len %u, expected %u", c->tag, v[6].len,
	       c->s2len);
	CHECK(c->s2len == 0 || memcmp(v[6].ptr, c->s2, c->s2len) == 0);
	o += c->s2len + 1;
	o = align_up(o, 8);
	CHECK_EQ_U64(v[7].offset, o);
	CHECK_EQ_U64(v[7].v.u, c->last);
	o += 8;
	CHECKF(e->len == o, "tag %u: record %u bytes, expected %u", c->tag, e->len, o);
}

static int tagged;
static void trace_var(const struct var_case *c)
{
	trace_fe_var(c->tag, c->s, c->mid, c->b, c->blen, c->after, c->s2, c->last);
	tagged++;
}

/* What fields_record() records: its arguments, kept for the checks. */
static int obj;
static const int8_t a8[3] = {INT8_MIN, 0, INT8_MAX};
static const int64_t a64[2] = {INT64_MIN, INT64_MAX};
static const uint16_t au16[5] = {0, 1, 2, UINT16_MAX, 7};
static const float af[4] = {NAN, -0.0f, INFINITY, 1.5f};
static const double ad[3] = {-INFINITY, DBL_MIN, 3.25};
static const uint8_t three[3] = {1, 2, 0xff};
static const struct var_case vc[] = {
	/* empty string, empty bytes (non-NULL), NULL string */
	{1, "", -2, three, 0, 1.5, NULL, 0, 0, 0, 0, 0},
	/* exactly the maxima: not truncated */
	{2, str_1023, INT16_MIN, bytes_max1, BMAX, -0.0, "x", UINT64_MAX, 0, SMAX - 1, BMAX, 1},
	/* all three too long */
	{3, str_1024, INT16_MAX, bytes_max1, BMAX + 1, NAN, str_5000, 3, 7, SMAX - 1, BMAX,
	 SMAX - 1},
	/* NULL bytes with a length: nothing; only str2 too long */
	{4, "ok", 1, NULL, 10, 2.0, str_1024, 4, 4, 2, 0, SMAX - 1},
	/* only the bytes too long */
	{5, "three", 0, bytes_max1, (size_t)1 << 40, INFINITY, "", 5, 2, 5, BMAX, 0},
	/* only the first string */
	{6, str_5000, 0, three, 3, 0.0, "tail", 6, 1, SMAX - 1, 3, 4},
	/* 1 .. 7 bytes of string to walk the alignment of what follows */
	{7, "a", 3, three, 1, 7.0, "bb", 7, 0, 1, 1, 2},
	{8, "abc", 3, three, 2, 8.0, "bbbbbbb", 8, 0, 3, 2, 7},
	{9, "abcdef", 3, three, 3, 9.0, "bbbbbb", 9, 0, 6, 3, 6},
};
static const size_t nvc = sizeof(vc) / sizeof(vc[0]);
static uint64_t a32[32];
/* l.ev[K_EXPR] is the fe_expr event: after 3 + 5 + 1 + nvc + 5 others */
#define K_EXPR (3 + 5 + 1 + sizeof(vc) / sizeof(vc[0]) + 5)

struct fields_rec {
	ringtrace_rb *rb;
	struct evu_list l;
};

/*
 * Records the events of every field type, with boundary values, and
 * collects them into f->l (nothing is recorded while they are disabled).
 * fields_done() frees them and disables the events again.
 */
static void fields_record(struct fields_rec *f)
{
	tagged = 0;
	fill_data();
	f->rb = evu_buffer(64u << 10, 32);
	memset(&f->l, 0, sizeof(f->l));
	ringtrace_rb *rb = f->rb;
	struct evu_list *lp = &f->l;

	/* Disabled: nothing recorded (and fe_off stays so). */
	trace_fe_ints(1, 2, 3, 4, 5, 6, 7, 8);
	trace_fe_off(1);
	evu_collect(rb, lp);
	CHECK_EQ_U64(lp->n, 0);

	CHECK(ringtrace_event_enable("fe_ints") == 1);
	CHECK(ringtrace_event_enable("fe_scalars") == 1);
	CHECK(ringtrace_event_enable("fe_arrays") == 1);
	CHECK(ringtrace_event_enable("fe_var") == 1);
	CHECK(ringtrace_event_enable("fe_nine") == 1);
	CHECK(ringtrace_event_enable("fe_expr") == 1);
	CHECK(evu_enabled("fe_var") && !evu_enabled("fe_off"));

	/* integers */
	trace_fe_ints(INT8_MIN, INT16_MIN, INT32_MIN, INT64_MIN, 0, 0, 0, 0);
	trace_fe_ints(INT8_MAX, INT16_MAX, INT32_MAX, INT64_MAX, UINT8_MAX, UINT16_MAX, UINT32_MAX,
		      UINT64_MAX);
	trace_fe_ints(-1, -1, -1, -1, 1, 1, 1, 1);
	trace_fe_off(2);

	/* floats, bool, pointer, enums */
	trace_fe_scalars(NAN, NAN, 2, NULL, -1, UINT32_MAX);
	trace_fe_scalars(INFINITY, -INFINITY, 0, (const void *)UINTPTR_MAX, 1, 0);
	trace_fe_scalars(-0.0f, -0.0, 1, &obj, 0, 7);
	trace_fe_scalars(FLT_MIN / 4, DBL_MAX, -5, (const void *)0x1234, 100, 5);
	trace_fe_scalars(FLT_MAX, DBL_TRUE_MIN, 1, (const void *)0x1234, -128, 1);

	/* arrays */
	trace_fe_arrays(a8, a64, au16, af, ad);

	/* variable-length */
	for (size_t i = 0; i < nvc; i++)
		trace_var(&vc[i]);

	/* nine variable-length fields */
	trace_fe_nine("0", "1", "2", "3", "4", "5", "6", "7", str_1024);
	trace_fe_nine("0", "1", "2", "3", "4", "5", "6", str_5000, "8");
	trace_fe_nine("0", "1", "2", "3", "4", "5", str_1024, "7", "8");
	trace_fe_nine(str_1024, "1", "2", "3", "4", "5", "6", "7", str_1024);
	trace_fe_nine(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);

	/* expressions */
	trace_fe_expr(-3, 7);

	/* larger fixed-size records */
	for (int i = 0; i < 32; i++)
		a32[i] = 0x0101010101010101ull * (uint64_t)(i + 1) ^ ((uint64_t)1 << 63);
	CHECK(ringtrace_event_enable("fe_fix2*") == 2);
	trace_fe_fix256(a32);
	trace_fe_fix264(-9, a32);

	evu_collect(rb, lp);
}

static void fields_done(struct fields_rec *f)
{
	evu_list_free(&f->l);
	evu_buffer_done(f->rb);
	CHECK(ringtrace_event_disable("fe_*") >= 1);
}

/* The fe_ints events: extremes and -1/1; returns the index after them. */
static size_t check_rec_ints(const struct evu_list *l, size_t k, uint32_t id_ints)
{
	struct ringtrace_value v[16];

	/* integers */
	for (int i = 0; i < 3; i++, k++) {
		const struct evu_event *e = &l->ev[k];
		CHECK_EQ_U64(e->id, id_ints);
		CHECK_EQ_U64(evu_decode(e, v, 16, NULL), 8);
		/* offsets: 0, 2, 4, 8, 16, 18, 20, 24 */
		static const uint32_t off[8] = {0, 2, 4, 8, 16, 18, 20, 24};
		for (int f = 0; f < 8; f++)
			CHECK_EQ_U64(v[f].offset, off[f]);
		CHECK_EQ_U64(e->len, 32);
		if (i == 0) {
			CHECK(v[0].v.i == INT8_MIN && v[1].v.i == INT16_MIN);
			CHECK(v[2].v.i == INT32_MIN && v[3].v.i == INT64_MIN);
			CHECK(v[4].v.u == 0 && v[5].v.u == 0 && v[6].v.u == 0 && v[7].v.u == 0);
		} else if (i == 1) {
			CHECK(v[0].v.i == INT8_MAX && v[1].v.i == INT16_MAX);
			CHECK(v[2].v.i == INT32_MAX && v[3].v.i == INT64_MAX);
			CHECK(v[4].v.u == UINT8_MAX && v[5].v.u == UINT16_MAX);
			CHECK(v[6].v.u == UINT32_MAX && v[7].v.u == UINT64_MAX);
		} else {
			for (int f = 0; f < 4; f++)
				CHECKF(v[f].v.i == -1, "field %d: %" PRId64, f, v[f].v.i);
			for (int f = 4; f < 8; f++)
				CHECKF(v[f].v.u == 1, "field %d: %" PRIu64, f, v[f].v.u);
		}
	}
	return k;
}

/* The fe_scalars events: floats, bool, pointer, enums; returns the index after them. */
static size_t check_rec_scalars(const struct evu_list *l, size_t k, uint32_t id_sc)
{
	struct ringtrace_value v[16];

	/* floats, bool, pointer, enums */
	for (int i = 0; i < 5; i++, k++) {
		const struct evu_event *e = &l->ev[k];
		CHECK_EQ_U64(e->id, id_sc);
		CHECK_EQ_U64(evu_decode(e, v, 16, NULL), 6);
		/* f@0 b@4 d@8 p@16 st@24 big@28 */
		CHECK(v[0].offset == 0 && v[1].offset == 4 && v[2].offset == 8);
		CHECK(v[3].offset == 16 && v[4].offset == 24 && v[5].offset == 28);
		CHECK_EQ_U64(e->len, 32);
		switch (i) {
		case 0:
			CHECK(isnan(v[0].v.f) && isnan(v[2].v.f));
			CHECK_EQ_U64(v[1].v.u, 1); /* 2 is stored as true */
			CHECK_EQ_U64(v[3].v.u, 0);
			CHECK(v[4].v.i == -1);
			CHECK(v[5].v.u == UINT32_MAX);
			break;
		case 1:
			CHECK(isinf(v[0].v.f) && v[0].v.f > 0);
			CHECK(isinf(v[2].v.f) && v[2].v.f < 0);
			CHECK_EQ_U64(v[1].v.u, 0);
			CHECK(v[3].v.u == (uint64_t)UINTPTR_MAX);
			CHECK(v[4].v.i == 1 && v[5].v.u == 0);
			break;
		case 2:
			CHECK(v[0].v.f == 0 && signbit(v[0].v.f));
			CHECK(same_bits_d(v[2].v.f, -0.0));
			CHECK_EQ_U64(v[1].v.u, 1);
			CHECK(v[3].v.u == (uint64_t)(uintptr_t)&obj);
			CHECK(v[4].v.i == 0 && v[5].v.u == 7);
			break;
		case 3:
			CHECK(same_bits_f((float)v[0].v.f, FLT_MIN / 4)); /* denormal */
			CHECK(same_bits_d(v[2].v.f, DBL_MAX));
			CHECK_EQ_U64(v[1].v.u, 1);
			CHECK(v[3].v.u == 0x1234);
			CHECK(v[4].v.i == 100 && v[5].v.u == 5);
			break;
		case 4:
			CHECK(same_bits_f((float)v[0].v.f, FLT_MAX));
			CHECK(same_bits_d(v[2].v.f, DBL_TRUE_MIN));
			CHECK(v[4].v.i == -128 && v[5].v.u == 1);
			break;
		}
	}
	return k;
}

/* The fe_arrays event; returns the index after them. */
static size_t check_rec_arrays(const struct evu_list *l, size_t k, uint32_t id_arr)
{
	struct ringtrace_value v[16];

	/* arrays */
	{
		const struct evu_event *e = &l->ev[k++];
		CHECK_EQ_U64(e->id, id_arr);
		CHECK_EQ_U64(evu_decode(e, v, 16, NULL), 5);
		/* a8@0 (3), a64@8 (16), au16@24 (10), af@36 (16), ad@56 (24) = 80 */
		CHECK(v[0].offset == 0 && v[1].offset == 8 && v[2].offset == 24);
		CHECK(v[3].offset == 36 && v[4].offset == 56);
		CHECK_EQ_U64(e->len, 80);
		CHECK(v[0].len == 3 && memcmp(v[0].ptr, a8, sizeof(a8)) == 0);
		CHECK(v[1].len == 2 && memcmp(v[1].ptr, a64, sizeof(a64)) == 0);
		CHECK(v[2].len == 5 && memcmp(v[2].ptr, au16, sizeof(au16)) == 0);
		CHECK(v[3].len == 4 && memcmp(v[3].ptr, af, sizeof(af)) == 0);
		CHECK(v[4].len == 3 && memcmp(v[4].ptr, ad, sizeof(ad)) == 0);
	}
	return k;
}

/* The fe_nine events: which of nine strings were cut; returns the index after them. */
static size_t check_rec_nine(const struct evu_list *l, size_t k, uint32_t id_nine)
{
	struct ringtrace_value v[16];

	/* nine */
	static const uint8_t nine_trunc[5] = {0x80, 0x80, 0x40, 0x81, 0};
	for (int i = 0; i < 5; i++, k++) {
		const struct evu_event *e = &l->ev[k];
		CHECK_EQ_U64(e->id, id_nine);
		CHECK_EQ_U64(evu_decode(e, v, 16, NULL), 10);
		CHECKF(v[0].v.u == nine_trunc[i],
		       "fe_nine #%d: _truncated 0x%" PRIx64 ", expected 0x%x", i, v[0].v.u,
		       nine_trunc[i]);
		uint32_t total = 1;
		for (int f = 1; f <= 9; f++) {
			uint32_t want = 1;
			if (i == 4)
				want = 0;
			else if ((i == 0 && f == 9) || (i == 1 && f == 8) || (i == 2 && f == 7) ||
				 (i == 3 && (f == 1 || f == 9)))
				want = SMAX - 1;
			CHECKF(v[f].len == want, "fe_nine #%d field %d: len %u, expected %u", i, f,
			       v[f].len, want);
			CHECK_EQ_U64(v[f].offset, total);
			total += want + 1;
		}
		CHECK_EQ_U64(e->len, total);
	}
	return k;
}

/* The fe_expr event, then fe_fix256 and fe_fix264; returns the index after them. */
static size_t check_rec_expr_fixed(const struct evu_list *l, size_t k, uint32_t id_expr,
				   uint32_t id_f256, uint32_t id_f264)
{
	struct ringtrace_value v[16];

	/* expressions */
	{
		const struct evu_event *e = &l->ev[k++];
		CHECK_EQ_U64(e->id, id_expr);
		CHECK_EQ_U64(evu_decode(e, v, 16, NULL), 3);
		CHECK(v[0].v.i == 4 && v[1].v.i == -21 && v[2].v.i == 7);
	}
	CHECK_EQ_U64(k - 1, K_EXPR);
	{
		const struct evu_event *e = &l->ev[k++];
		CHECK_EQ_U64(e->id, id_f256);
		CHECK_EQ_U64(e->len, 256);
		CHECK_EQ_U64(evu_decode(e, v, 16, NULL), 1);
		CHECK(v[0].len == 32 && memcmp(v[0].ptr, a32, sizeof(a32)) == 0);
		e = &l->ev[k++];
		CHECK_EQ_U64(e->id, id_f264);
		CHECK_EQ_U64(e->len, 264);
		CHECK_EQ_U64(evu_decode(e, v, 16, NULL), 2);
		CHECK(v[0].v.i == -9 && v[1].offset == 8);
		CHECK(v[1].len == 32 && memcmp(v[1].ptr, a32, sizeof(a32)) == 0);
	}
	return k;
}

/* 2. Every field type round-trips: values and offsets, boundary values. */
static void test_record(void)
{
	struct fields_rec f;
	fields_record(&f);
	const struct evu_list l = f.l;
	const uint32_t id_ints = evu_id("fe_ints"), id_sc = evu_id("fe_scalars"),
		       id_arr = evu_id("fe_arrays"), id_var = evu_id("fe_var"),
		       id_nine = evu_id("fe_nine"), id_expr = evu_id("fe_expr"),
		       id_f256 = evu_id("fe_fix256"), id_f264 = evu_id("fe_fix264");
	CHECK_EQ_U64(evu_count_id(&l, evu_id("fe_off")), 0);
	CHECK_EQ_U64(l.n, 3 + 5 + 1 + nvc + 5 + 1 + 2);
	size_t k = 0;

	k = check_rec_ints(&l, k, id_ints);
	k = check_rec_scalars(&l, k, id_sc);
	k = check_rec_arrays(&l, k, id_arr);
	/* variable-length */
	for (size_t i = 0; i < nvc; i++, k++) {
		CHECK_EQ_U64(l.ev[k].id, id_var);
		check_var(&l.ev[k], &vc[i]);
	}

	k = check_rec_nine(&l, k, id_nine);
	k = check_rec_expr_fixed(&l, k, id_expr, id_f256, id_f264);
	CHECK_EQ_U64(k, l.n);
	CHECK_EQ_U64(tagged, nvc);

	fields_done(&f);
}

/* 3. ringtrace_record_format() text; snprintf-like length and truncation. */
static void test_format(void)
{
	struct fields_rec f;
	fields_record(&f);
	const struct evu_list l = f.l;
	const size_t k_expr = K_EXPR;
	/* ---- 3. formatting ---- */
	char buf[9000];
	struct ringtrace_event_info info;
#define FORMAT_IS(ev, expect)                                                                     \
	do {                                                                                      \
		CHECK_OK(ringtrace_event_by_id((ev)->id, &info));                                 \
		int r_ = ringtrace_record_format(info.print_fmt, info.fields, info.nfields,       \
						 (ev)->data, (ev)->len, buf, sizeof(buf));        \
		CHECKF(r_ >= 0 && strcmp(buf, expect) == 0,                                       \
		       "%s formatted (%d) as\n    \"%s\"\n  expected\n    \"%s\"", info.name, r_, \
		       buf, expect);                                                              \
		CHECK_EQ_U64(r_, strlen(expect));                                                 \
	} while (0)
	FORMAT_IS(&l.ev[0], "s8=-128 s16=-32768 s32=-2147483648 s64=-9223372036854775808 u8=0 "
			    "u16=0 u32=0 u64=0");
	FORMAT_IS(&l.ev[1], "s8=127 s16=32767 s32=2147483647 s64=9223372036854775807 u8=255 "
			    "u16=65535 u32=4294967295 u64=18446744073709551615");
	char want[256];
	snprintf(want, sizeof(want), "f=nan b=1 d=nan p=%p st=NEG big=MAX", (void *)0);
	FORMAT_IS(&l.ev[3], want); /* %p as the C library prints it */
	snprintf(want, sizeof(want), "f=inf b=0 d=-inf p=%p st=BUSY big=ZERO", (void *)UINTPTR_MAX);
	FORMAT_IS(&l.ev[4], want);
	snprintf(want, sizeof(want), "f=2.93874e-39 b=1 d=1.79769e+308 p=%p st=BIG big=5",
		 (void *)0x1234);
	FORMAT_IS(&l.ev[6], want);
	snprintf(want, sizeof(want), "f=3.40282e+38 b=1 d=4.94066e-324 p=%p st=-128 big=1",
		 (void *)0x1234);
	FORMAT_IS(&l.ev[7], want);
	FORMAT_IS(&l.ev[8], "a8={-128,0,127} a64={-9223372036854775808,9223372036854775807} "
			    "au16={0,1,2,65535,7} af={nan,-0,inf,1.5} ad={-inf,2.22507e-308,3.25}");
	FORMAT_IS(&l.ev[9], "tag=1 str= mid=-2 blob= after=1.50 str2= last=0");
	FORMAT_IS(&l.ev[15], "tag=7 str=a mid=3 blob=01 after=7.00 str2=bb last=7");
	FORMAT_IS(&l.ev[16], "tag=8 str=abc mid=3 blob=0102 after=8.00 str2=bbbbbbb last=8");
	FORMAT_IS(&l.ev[k_expr], "sum=4 prod=-21 max=7");
	{
		/* The too-long string comes out at its truncated length. */
		const struct evu_event *e = &l.ev[11];
		CHECK_OK(ringtrace_event_by_id(e->id, &info));
		int r = ringtrace_record_format("%s|%s|%s", info.fields, info.nfields, e->data, 0,
						buf, sizeof(buf));
		CHECK(r == -RINGTRACE_ECORRUPT);
		/* tag through %s, then the string */
		r = ringtrace_record_format("%s[%s]", info.fields, 3, e->data, e->len, buf,
					    sizeof(buf));
		CHECKF(r == (int)SMAX - 1 + 3, "r = %d", r);
		CHECK(buf[0] == '3' && buf[1] == '[' && memcmp(buf + 2, str_1024, SMAX - 1) == 0 &&
		      buf[SMAX + 1] == ']' && buf[SMAX + 2] == 0);
	}
	{
		/* snprintf semantics: the would-be length, truncated output. */
		const struct evu_event *e = &l.ev[1];
		CHECK_OK(ringtrace_event_by_id(e->id, &info));
		char small[10];
		memset(small, 'Z', sizeof(small));
		int r = ringtrace_record_format(info.print_fmt, info.fields, info.nfields, e->data,
						e->len, small, sizeof(small));
		CHECK_EQ_U64(r, strlen("s8=127 s16=32767 s32=2147483647 s64=9223372036854775807 "
				       "u8=255 u16=65535 u32=4294967295 u64=18446744073709551615"));
		CHECKF(strcmp(small, "s8=127 s1") == 0, "small: \"%.10s\"", small);
		r = ringtrace_record_format(info.print_fmt, info.fields, info.nfields, e->data,
					    e->len, NULL, 0);
		CHECK(r > 0);
	}
	fields_done(&f);
}

/* 4. Damaged records: -RINGTRACE_ECORRUPT, the message naming the field. */
static void test_damaged(void)
{
	struct fields_rec f;
	fields_record(&f);
	const struct evu_list l = f.l;
	struct ringtrace_value v[16];
	struct ringtrace_event_info info;
	/* ---- 4. damaged records ---- */
	{
		const struct evu_event *e = &l.ev[0]; /* fe_ints, 32 bytes */
		CHECK_OK(ringtrace_event_by_id(e->id, &info));
		for (uint32_t len = 0; len < e->len; len++) {
			int r = ringtrace_record_decode(info.fields, info.nfields, e->data, len, v);
			CHECKF(r == -RINGTRACE_ECORRUPT, "fe_ints cut to %u bytes: %d", len, r);
		}
		/* fe_var: cut anywhere; a string that loses its NUL, bytes that overrun */
		const struct evu_event *ev = &l.ev[10]; /* tag 2: the maxima */
		CHECK_OK(ringtrace_event_by_id(ev->id, &info));
		for (uint32_t len = 0; len < ev->len; len += (len < 64 ? 1 : 61)) {
			int r = ringtrace_record_decode(info.fields, info.nfields, ev->data, len,
							v);
			CHECKF(r == -RINGTRACE_ECORRUPT, "fe_var cut to %u bytes: %d", len, r);
			CHECK(ringtrace_last_error()[0] != 0);
		}
		char copy[8192];
		CHECK(ev->len <= sizeof(copy));
		memcpy(copy, ev->data, ev->len);
		copy[2 + SMAX - 1] = 'X'; /* str's NUL: decoding may go either way, safely */
		int r = ringtrace_record_decode(info.fields, info.nfields, copy, ev->len, v);
		CHECKF(r == (int)info.nfields || r == -RINGTRACE_ECORRUPT, "r = %d", r);
		memcpy(copy, ev->data, ev->len);
		uint32_t big = 0x7fffffff;
		uint32_t boff = align_up(2 + SMAX - 1 + 1 + 2, 4);
		memcpy(copy + boff, &big, 4);
		r = ringtrace_record_decode(info.fields, info.nfields, copy, ev->len, v);
		CHECKF(r == -RINGTRACE_ECORRUPT, "overrunning bytes: %d", r);
		CHECKF(evu_has(ringtrace_last_error(), "blob"), "message: %s",
		       ringtrace_last_error());
		/* A string with no NUL at all before the end */
		const struct evu_event *e9 = &l.ev[9]; /* tag 1: "" strings */
		CHECK_OK(ringtrace_event_by_id(e9->id, &info));
		r = ringtrace_record_decode(info.fields, 3, e9->data, 2, v);
		CHECKF(r == -RINGTRACE_ECORRUPT, "string without NUL: %d", r);
		CHECKF(evu_has(ringtrace_last_error(), "\"str\""), "message: %s",
		       ringtrace_last_error());
	}
	{
		/*
		 * "a message naming the field and offset where the record is
		 * damaged": a record cut inside its last field names that field.
		 */
		const struct evu_event *e = &l.ev[0];
		CHECK_OK(ringtrace_event_by_id(e->id, &info));
		int r = ringtrace_record_decode(info.fields, info.nfields, e->data, e->len - 1, v);
		CHECK(r == -RINGTRACE_ECORRUPT);
		CHECKF(evu_has(ringtrace_last_error(), "\"u64v\"") &&
			       evu_has(ringtrace_last_error(), "24"),
		       "the message should name field \"u64v\" at offset 24: %s",
		       ringtrace_last_error());
	}
	fields_done(&f);
}

/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
static const struct check_case cases[] = {
	CHECK_CASE(event_fields_registry_describes_ids_kinds_and_field_layouts, test_registry),
	CHECK_CASE(event_fields_every_type_round_trips_with_boundary_values, test_record),
	CHECK_CASE(event_fields_record_format_prints_every_type_like_snprintf, test_format),
	CHECK_CASE(event_fields_damaged_records_refused_naming_the_field, test_damaged),
};
/* clang-format on */

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
