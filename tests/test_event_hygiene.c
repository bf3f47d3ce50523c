/*
 * test_event_hygiene: the code RINGTRACE_EVENT generates must not capture
 * the user's argument names. Its locals were once called rt_sz, rt_o,
 * rt_p, rt_v, rt_trunc, rt_vi, rt_ev, rt_state, rt_n, rt_rb, rt_done,
 * rt_rd, rt_ps, rt_i: a field expression (or a probe's argument) naming a
 * parameter of the same name read the local instead - the record held
 * offsets and sizes, and the probe got the loop index. Here the
 * parameters have those names; the recorded values and what the probe
 * sees must equal the arguments, on the fast path (recording only) and on
 * the slow one (recording and a probe).
 *
 * A parameter named ringtrace_data (the name the probe typedef gives its
 * first parameter) is checked by test_event_hygiene_data.c, a compile-only
 * test.
 *
 * Three cases, steps of one sequence (recording only; recording and
 * probes; probes only): the case for a later step runs the ones before.
 */
#define RINGTRACE_CREATE_EVENTS
#include <ringtrace/tracepoint.h>

#include "events_util.h"

RINGTRACE_EVENT(
	hy_rec,
	RINGTRACE_PROTO(uint32_t rt_o, uint32_t rt_sz, uint64_t rt_p, int32_t rt_v,
			uint32_t rt_trunc, uint32_t rt_vi, const char *rt_s_name),
	RINGTRACE_ARGS(rt_o, rt_sz, rt_p, rt_v, rt_trunc, rt_vi, rt_s_name),
	RINGTRACE_FIELDS(
		ringtrace_integer(uint32_t, o, rt_o) ringtrace_integer(uint32_t, sz, rt_sz)
			ringtrace_integer(uint64_t, p, rt_p) ringtrace_integer(int32_t, v, rt_v)
				ringtrace_integer(uint32_t, trunc, rt_trunc)
					ringtrace_integer(uint32_t, vi, rt_vi)
						ringtrace_string(name, rt_s_name)
							ringtrace_bytes(b, &rt_v, rt_sz & 3)),
	RINGTRACE_PRINT("o=%u sz=%u p=%llu v=%d trunc=%u vi=%u name=%s b=%s"))

RINGTRACE_EVENT(
	hy_call,
	RINGTRACE_PROTO(uint32_t rt_i, uint32_t rt_n, uint64_t rt_rb, uint32_t rt_ev,
			uint32_t rt_done, uint32_t rt_rd, uint32_t rt_ps, uint32_t rt_state),
	RINGTRACE_ARGS(rt_i, rt_n, rt_rb, rt_ev, rt_done, rt_rd, rt_ps, rt_state),
	RINGTRACE_FIELDS(ringtrace_integer(uint32_t, i, rt_i) ringtrace_integer(uint32_t, n, rt_n)
				 ringtrace_integer(uint64_t, rb, rt_rb) ringtrace_integer(uint32_t,
											  ev, rt_ev)
					 ringtrace_integer(uint32_t, done, rt_done)
						 ringtrace_integer(uint32_t, rd, rt_rd)
							 ringtrace_integer(uint32_t, ps, rt_ps)
								 ringtrace_integer(uint32_t, state,
										   rt_state)),
	RINGTRACE_PRINT("i=%u n=%u rb=%llu ev=%u done=%u rd=%u ps=%u state=%u"))

struct seen {
	int calls;
	uint64_t v[8];
	char name[32];
};

static void probe_rec(void *data, uint32_t o, uint32_t sz, uint64_t p, int32_t v, uint32_t trunc,
		      uint32_t vi, const char *name)
{
	struct seen *s = data;
	s->calls++;
	s->v[0] = o;
	s->v[1] = sz;
	s->v[2] = p;
	s->v[3] = (uint64_t)(int64_t)v;
	s->v[4] = trunc;
	s->v[5] = vi;
	snprintf(s->name, sizeof(s->name), "%s", name ? name : "(NULL)");
}

static void probe_call(void *data, uint32_t i, uint32_t n, uint64_t rb, uint32_t ev, uint32_t done,
		       uint32_t rd, uint32_t ps, uint32_t state)
{
	struct seen *s = data;
	s->calls++;
	const uint64_t v[8] = {i, n, rb, ev, done, rd, ps, state};
	memcpy(s->v, v, sizeof(v));
}

/* Values far from any offset, size, flag or index the macros use. */
static const uint32_t O = 1111, SZ = 2222 /* & 3 == 2 */, TR = 3333, VI = 4444;
static const uint64_t P = 0x123456789abcdefull;
static const int32_t V = -5555;
static const uint64_t CALL[8] = {7001, 7002, 0xfeedface12345678ull, 7004, 7005, 7006, 7007, 7008};

static void fire(void)
{
	trace_hy_rec(O, SZ, P, V, TR, VI, "hygienic");
	trace_hy_call((uint32_t)CALL[0], (uint32_t)CALL[1], CALL[2], (uint32_t)CALL[3],
		      (uint32_t)CALL[4], (uint32_t)CALL[5], (uint32_t)CALL[6], (uint32_t)CALL[7]);
}

static void check_records(const struct evu_list *l, size_t from, size_t count)
{
	const uint32_t id_rec = evu_id("hy_rec"), id_call = evu_id("hy_call");
	CHECK_EQ_U64(l->n, from + count);
	for (size_t k = from; k < l->n; k++) {
		const struct evu_event *e = &l->ev[k];
		struct ringtrace_value v[16];
		struct ringtrace_event_info info;
		char buf[512], want[512];
		evu_decode(e, v, 16, &info);
		if (e->id == id_rec) {
			/* v[0] is the hidden _truncated */
			CHECK_EQ_U64(info.nfields, 9);
			CHECK_EQ_U64(v[0].v.u, 0);
			CHECK_EQ_U64(v[1].v.u, O);
			CHECK_EQ_U64(v[2].v.u, SZ);
			CHECK_EQ_U64(v[3].v.u, P);
			CHECK(v[4].v.i == V);
			CHECK_EQ_U64(v[5].v.u, TR);
			CHECK_EQ_U64(v[6].v.u, VI);
			CHECK(v[7].len == 8 && memcmp(v[7].ptr, "hygienic", 8) == 0);
			CHECK(v[8].len == (SZ & 3) && memcmp(v[8].ptr, &V, SZ & 3) == 0);
			const unsigned char *vb = (const unsigned char *)&V;
			snprintf(want, sizeof(want),
				 "o=%u sz=%u p=%llu v=%d trunc=%u vi=%u name=hygienic b=%02x%02x",
				 O, SZ, (unsigned long long)P, V, TR, VI, vb[0], vb[1]);
		} else {
			CHECK_EQ_U64(e->id, id_call);
			CHECK_EQ_U64(info.nfields, 8);
			for (int i = 0; i < 8; i++)
				CHECKF(v[i].v.u == CALL[i], "hy_call field %s: %llu, expected %llu",
				       info.fields[i].name, (unsigned long long)v[i].v.u,
				       (unsigned long long)CALL[i]);
			snprintf(want, sizeof(want),
				 "i=%u n=%u rb=%llu ev=%u done=%u rd=%u ps=%u state=%u",
				 (unsigned)CALL[0], (unsigned)CALL[1], (unsigned long long)CALL[2],
				 (unsigned)CALL[3], (unsigned)CALL[4], (unsigned)CALL[5],
				 (unsigned)CALL[6], (unsigned)CALL[7]);
		}
		int r = ringtrace_record_format(info.print_fmt, info.fields, info.nfields, e->data,
						e->len, buf, sizeof(buf));
		CHECKF(r > 0 && strcmp(buf, want) == 0, "\"%s\"\n  expected \"%s\"", buf, want);
	}
}

/* The steps' state. */
static ringtrace_rb *rb;
static struct evu_list l;
static struct seen s_rec, s_call;

static void step_recording(void)
{
	rb = evu_buffer(16u << 10, 8);
	memset(&l, 0, sizeof(l));
	memset(&s_rec, 0, sizeof(s_rec));
	memset(&s_call, 0, sizeof(s_call));
	CHECK(ringtrace_event_enable("hy_*") == 2);

	/* recording only: the inline fast path (and the slow one for the
	 * thread's first event) */
	fire();
	fire();
	evu_collect(rb, &l);
	check_records(&l, 0, 4);
}

static void step_probes(void)
{
	/* recording and probes: the slow path */
	CHECK_OK(ringtrace_probe_register_hy_rec(probe_rec, &s_rec));
	CHECK_OK(ringtrace_probe_register_hy_call(probe_call, &s_call));
	fire();
	CHECK(s_rec.calls == 1 && s_call.calls == 1);
	CHECK_EQ_U64(s_rec.v[0], O);
	CHECK_EQ_U64(s_rec.v[1], SZ);
	CHECK_EQ_U64(s_rec.v[2], P);
	CHECK(s_rec.v[3] == (uint64_t)(int64_t)V);
	CHECK_EQ_U64(s_rec.v[4], TR);
	CHECK_EQ_U64(s_rec.v[5], VI);
	CHECK(strcmp(s_rec.name, "hygienic") == 0);
	for (int i = 0; i < 8; i++)
		CHECKF(s_call.v[i] == CALL[i], "probe argument %d: %llu, expected %llu", i,
		       (unsigned long long)s_call.v[i], (unsigned long long)CALL[i]);
	evu_collect(rb, &l);
	check_records(&l, 4, 2);
}

static void step_probes_only(void)
{
	/* probes only */
	CHECK(ringtrace_event_disable("hy_*") == 2);
	memset(&s_call, 0, sizeof(s_call));
	fire();
	CHECK(s_rec.calls == 2 && s_call.calls == 1);
	for (int i = 0; i < 8; i++)
		CHECK(s_call.v[i] == CALL[i]);
	CHECK_OK(ringtrace_probe_unregister_hy_rec(probe_rec, &s_rec));
	CHECK_OK(ringtrace_probe_unregister_hy_call(probe_call, &s_call));
}

/* What a step left attached or on is removed; the buffer goes. */
static void steps_done(void)
{
	ringtrace_probe_unregister_hy_rec(probe_rec, &s_rec);
	ringtrace_probe_unregister_hy_call(probe_call, &s_call);
	ringtrace_event_disable("hy_*");
	evu_list_free(&l);
	evu_buffer_done(rb);
}

/* Recording only (the inline fast path): the records hold the arguments. */
static void case_fast_path(void)
{
	step_recording();
	steps_done();
}

/* Recording and probes (the slow path): records and probes see the
 * arguments. */
static void case_slow_path(void)
{
	step_recording();
	step_probes();
	steps_done();
}

/* Probes only: they see the arguments. */
static void case_probes_only(void)
{
	step_recording();
	step_probes();
	step_probes_only();
	steps_done();
}

/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
static const struct check_case cases[] = {
	CHECK_CASE(event_hygiene_fast_path_records_arguments_not_macro_locals, case_fast_path),
	CHECK_CASE(event_hygiene_slow_path_records_and_probes_get_the_arguments, case_slow_path),
	CHECK_CASE(event_hygiene_probes_alone_get_the_arguments, case_probes_only),
};
/* clang-format on */

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
