/*
 * ringtrace/tracepoint.h - defining trace events and calling them.
 *
 * An event is defined once, in a header of the user's, with one macro in
 * the shape of the kernel's TRACE_EVENT():
 *
 *   #include <ringtrace/tracepoint.h>
 *
 *   RINGTRACE_EVENT(sched_wakeup,                      // name
 *       RINGTRACE_PROTO(int pid, const char *comm),     // typed arguments
 *       RINGTRACE_ARGS(pid, comm),                      // their names
 *       RINGTRACE_FIELDS(                               // record fields, each
 *           ringtrace_integer(int32_t, pid, pid)        //  assigned from an
 *           ringtrace_string(comm, comm)                //  expression of the
 *       ),                                              //  arguments
 *       RINGTRACE_PRINT("pid=%d comm=%s"))              // one conversion per field
 *
 * In exactly one .c/.cpp file of the program or library, define
 * RINGTRACE_CREATE_EVENTS before including that header: that translation
 * unit gets the event descriptors, their registration and the out-of-line
 * recording code. Everywhere else the header declares the descriptors and
 * defines the inline call sites:
 *
 *   trace_sched_wakeup(pid, name);      // type-checked like any call
 *
 * A disabled call site costs one load of the event's `enabled` word and
 * one predicted branch; everything else is out of line (cold).
 *
 * Field macros (the expression may use the arguments; wrap it in
 * parentheses if it contains a comma):
 *   ringtrace_integer(TYPE, NAME, EXPR)        signed/unsigned 8/16/32/64-bit
 *   ringtrace_float(TYPE, NAME, EXPR)          float or double
 *   ringtrace_bool(NAME, EXPR)
 *   ringtrace_pointer(NAME, EXPR)              stored as 64 bits
 *   ringtrace_enum(ENUM, TYPE, NAME, EXPR)     integer shown by name; ENUM
 *                                              defined with RINGTRACE_ENUM()
 *   ringtrace_array(TYPE, NAME, PTR, COUNT)    COUNT (a constant) integers
 *                                              or floats copied from PTR
 *   ringtrace_string(NAME, EXPR)               NUL-terminated, up to
 *                                              RINGTRACE_STRING_MAX bytes
 *   ringtrace_bytes(NAME, PTR, LEN)            length-prefixed bytes, up to
 *                                              RINGTRACE_BYTES_MAX
 * A string or byte sequence longer than its limit is truncated, and the
 * event's hidden first field `_truncated` has bit i set for its i-th
 * variable-length field (bit 7 for the 8th and later).
 *
 * Field expressions may be evaluated more than once (a record that the
 * inline fast path cannot take is redone by the general path): they must
 * not have side effects. Events need at least one argument. RINGTRACE_EVENT_KIND() is the same
 * with a kind first (RINGTRACE_KIND_INSTANT, _BEGIN, _END, _COUNTER),
 * which timeline exporters use.
 *
 * Everything here compiles as C (gnu11) and as C++ (C++11 or later).
 */
#ifndef RINGTRACE_TRACEPOINT_H
#define RINGTRACE_TRACEPOINT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ringtrace/event.h"
#include "ringtrace/ring_inline.h"

#ifdef __cplusplus
#define RT_EXTERN_C extern "C"
#define RT_DEFINE_C extern "C"
#define RT_C_BEGIN extern "C" {
#define RT_C_END }
#else
#define RT_C_BEGIN
#define RT_C_END
#define RT_EXTERN_C extern
#define RT_DEFINE_C
#endif

#define RINGTRACE_PROTO(...) (__VA_ARGS__)
#define RINGTRACE_ARGS(...) (__VA_ARGS__)
#define RINGTRACE_FIELDS(...) __VA_ARGS__
#define RINGTRACE_PRINT(fmt) fmt

/* ---- field macros: each becomes a tuple (KIND, TYPE, NAME, ...) --------- */

#define ringtrace_integer(type, name, expr) (RT_K_INT, type, name, expr)
#define ringtrace_float(type, name, expr) (RT_K_FLOAT, type, name, expr)
#define ringtrace_bool(name, expr) (RT_K_BOOL, uint8_t, name, expr)
#define ringtrace_pointer(name, expr) (RT_K_PTR, uint64_t, name, expr)
#define ringtrace_enum(enm, type, name, expr) (RT_K_ENUM, type, name, expr, enm)
#define ringtrace_array(type, name, ptr, count) (RT_K_ARRAY, type, name, ptr, count)
#define ringtrace_string(name, expr) (RT_K_STRING, char, name, expr)
#define ringtrace_bytes(name, ptr, len) (RT_K_BYTES, uint8_t, name, ptr, len)

/* ---- enums --------------------------------------------------------------- */

/*
 *   RINGTRACE_ENUM(task_state,
 *       RINGTRACE_ENUM_VALUE("RUNNING", 0)
 *       RINGTRACE_ENUM_VALUE("SLEEPING", 1))
 * in the events header; usable by ringtrace_enum(task_state, ...).
 */
#define RINGTRACE_ENUM_VALUE(str, val) {str, (int64_t)(val)},

/* ---- preprocessor plumbing ----------------------------------------------- */

#define RT_CAT_(a, b) a##b
#define RT_CAT(a, b) RT_CAT_(a, b)
#define RT_UNPAREN(...) __VA_ARGS__
#define RT_PREPEND_(first, ...) (first, __VA_ARGS__)
#define RT_PREPEND(first, ...) RT_PREPEND_(first, __VA_ARGS__)
#define RT_IS_SIGNED(t) ((t)-1 <= (t)0) /* not "< 0": -Wtype-limits */
#define RT_ALIGNOF(t) (sizeof(t) < 8 ? sizeof(t) : 8)
#define RT_ALIGN_UP(v, a) (((v) + ((a)-1)) & ~(size_t)((a)-1))

/*
 * Iterating over a sequence of tuples "(a,b)(c,d)...": the ping-pong
 * trick. X_A consumes one tuple and leaves X_B, which consumes the next
 * and leaves X_A; the last one left is pasted with _END (the last token
 * of __VA_ARGS__ is what ## pastes), which expands to nothing. One pair of macros per context.
 */
#define RT_SEQ_END_(...) __VA_ARGS__##_END
#define RT_SEQ_END(...) RT_SEQ_END_(__VA_ARGS__)
#define RT_SEQ(ctx, seq) RT_SEQ_END(RT_##ctx##_A seq)

/* Schema: one ringtrace_field_desc initializer per field. */
#define RT_SCHEMA_A(k, ...) RT_SCHEMA_##k(__VA_ARGS__) RT_SCHEMA_B
#define RT_SCHEMA_B(k, ...) RT_SCHEMA_##k(__VA_ARGS__) RT_SCHEMA_A
#define RT_SCHEMA_A_END
#define RT_SCHEMA_B_END
#define RT_SCHEMA_RT_K_INT(t, n, e) \
	{#n, RINGTRACE_FT_INT, sizeof(t), RT_IS_SIGNED(t), RT_ALIGNOF(t), 0, NULL},
#define RT_SCHEMA_RT_K_FLOAT(t, n, e) \
	{#n, RINGTRACE_FT_FLOAT, sizeof(t), 1, RT_ALIGNOF(t), 0, NULL},
#define RT_SCHEMA_RT_K_BOOL(t, n, e) {#n, RINGTRACE_FT_BOOL, 1, 0, 1, 0, NULL},
#define RT_SCHEMA_RT_K_PTR(t, n, e) {#n, RINGTRACE_FT_POINTER, 8, 0, 8, 0, NULL},
#define RT_SCHEMA_RT_K_ENUM(t, n, e, en) \
	{#n, RINGTRACE_FT_ENUM, sizeof(t), RT_IS_SIGNED(t), RT_ALIGNOF(t), 0, &ringtrace_enum_##en},
#define RT_SCHEMA_RT_K_ARRAY(t, n, e, c)                                                      \
	{#n, (uint8_t)(((t)0.5 != 0) ? RINGTRACE_FT_FLOAT_ARRAY : RINGTRACE_FT_ARRAY), sizeof(t), \
	 RT_IS_SIGNED(t), RT_ALIGNOF(t), (uint32_t)(c), NULL},
#define RT_SCHEMA_RT_K_STRING(t, n, e) \
	{#n, RINGTRACE_FT_STRING, 1, 0, 1, RINGTRACE_STRING_MAX, NULL},
#define RT_SCHEMA_RT_K_BYTES(t, n, p, l) \
	{#n, RINGTRACE_FT_BYTES, 1, 0, 4, RINGTRACE_BYTES_MAX, NULL},

/* Count of variable-length fields (a constant expression: 0 + 1 + ...). */
#define RT_VARLEN_A(k, ...) RT_VARLEN_##k RT_VARLEN_B
#define RT_VARLEN_B(k, ...) RT_VARLEN_##k RT_VARLEN_A
#define RT_VARLEN_A_END
#define RT_VARLEN_B_END
#define RT_VARLEN_RT_K_INT
#define RT_VARLEN_RT_K_FLOAT
#define RT_VARLEN_RT_K_BOOL
#define RT_VARLEN_RT_K_PTR
#define RT_VARLEN_RT_K_ENUM
#define RT_VARLEN_RT_K_ARRAY
#define RT_VARLEN_RT_K_STRING +1
#define RT_VARLEN_RT_K_BYTES +1

/*
 * Size: evaluates string/byte expressions once into locals and adds up the
 * record size. For fixed-size fields this folds to a constant.
 */
#define RT_SIZE_A(k, ...) RT_SIZE_##k(__VA_ARGS__) RT_SIZE_B
#define RT_SIZE_B(k, ...) RT_SIZE_##k(__VA_ARGS__) RT_SIZE_A
#define RT_SIZE_A_END
#define RT_SIZE_B_END
#define RT_SIZE_RT_K_INT(t, n, e) rt_sz = RT_ALIGN_UP(rt_sz, RT_ALIGNOF(t)) + sizeof(t);
#define RT_SIZE_RT_K_FLOAT(t, n, e) rt_sz = RT_ALIGN_UP(rt_sz, RT_ALIGNOF(t)) + sizeof(t);
#define RT_SIZE_RT_K_BOOL(t, n, e) rt_sz += 1;
#define RT_SIZE_RT_K_PTR(t, n, e) rt_sz = RT_ALIGN_UP(rt_sz, 8) + 8;
#define RT_SIZE_RT_K_ENUM(t, n, e, en) rt_sz = RT_ALIGN_UP(rt_sz, RT_ALIGNOF(t)) + sizeof(t);
#define RT_SIZE_RT_K_ARRAY(t, n, e, c) \
	rt_sz = RT_ALIGN_UP(rt_sz, RT_ALIGNOF(t)) + sizeof(t) * (size_t)(c);
#define RT_SIZE_RT_K_STRING(t, n, e)                                                  \
	const char *rt_s_##n = (e);                                                   \
	size_t rt_l_##n = ringtrace_strnlen_(rt_s_##n, RINGTRACE_STRING_MAX - 1);     \
	if (rt_l_##n == RINGTRACE_STRING_MAX - 1 && rt_s_##n[rt_l_##n])               \
		rt_trunc |= (uint8_t)(1u << (rt_vi < 7 ? rt_vi : 7));                 \
	rt_vi++;                                                                      \
	rt_sz += rt_l_##n + 1;
#define RT_SIZE_RT_K_BYTES(t, n, p, l)                                                \
	const void *rt_s_##n = (p);                                                   \
	size_t rt_l_##n = (size_t)(l);                                                \
	if (!rt_s_##n)                                                                \
		rt_l_##n = 0;                                                         \
	if (rt_l_##n > RINGTRACE_BYTES_MAX) {                                         \
		rt_l_##n = RINGTRACE_BYTES_MAX;                                       \
		rt_trunc |= (uint8_t)(1u << (rt_vi < 7 ? rt_vi : 7));                 \
	}                                                                             \
	rt_vi++;                                                                      \
	rt_sz = RT_ALIGN_UP(rt_sz, 4) + 4 + rt_l_##n;

/* Write: serialize each field at its aligned offset. */
#define RT_WRITE_A(k, ...) RT_WRITE_##k(__VA_ARGS__) RT_WRITE_B
#define RT_WRITE_B(k, ...) RT_WRITE_##k(__VA_ARGS__) RT_WRITE_A
#define RT_WRITE_A_END
#define RT_WRITE_B_END
#define RT_WRITE_SCALAR_(t, v)                                                        \
	{                                                                             \
		t rt_v = (t)(v);                                                      \
		rt_o = RT_ALIGN_UP(rt_o, RT_ALIGNOF(t));                              \
		memcpy(rt_p + rt_o, &rt_v, sizeof(t));                                \
		rt_o += sizeof(t);                                                    \
	}
#define RT_WRITE_RT_K_INT(t, n, e) RT_WRITE_SCALAR_(t, e)
#define RT_WRITE_RT_K_FLOAT(t, n, e) RT_WRITE_SCALAR_(t, e)
#define RT_WRITE_RT_K_BOOL(t, n, e) RT_WRITE_SCALAR_(uint8_t, (e) ? 1 : 0)
#define RT_WRITE_RT_K_PTR(t, n, e) RT_WRITE_SCALAR_(uint64_t, (uintptr_t)(e))
#define RT_WRITE_RT_K_ENUM(t, n, e, en) RT_WRITE_SCALAR_(t, e)
#define RT_WRITE_RT_K_ARRAY(t, n, e, c)                                               \
	rt_o = RT_ALIGN_UP(rt_o, RT_ALIGNOF(t));                                      \
	memcpy(rt_p + rt_o, (e), sizeof(t) * (size_t)(c));                            \
	rt_o += sizeof(t) * (size_t)(c);
#define RT_WRITE_RT_K_STRING(t, n, e)                                                 \
	if (rt_l_##n)                                                                 \
		memcpy(rt_p + rt_o, rt_s_##n, rt_l_##n);                              \
	rt_p[rt_o + rt_l_##n] = 0;                                                    \
	rt_o += rt_l_##n + 1;
#define RT_WRITE_RT_K_BYTES(t, n, p, l)                                               \
	{                                                                             \
		uint32_t rt_v = (uint32_t)rt_l_##n;                                   \
		rt_o = RT_ALIGN_UP(rt_o, 4);                                          \
		memcpy(rt_p + rt_o, &rt_v, 4);                                        \
		rt_o += 4;                                                            \
		if (rt_l_##n)                                                         \
			memcpy(rt_p + rt_o, rt_s_##n, rt_l_##n);                      \
		rt_o += rt_l_##n;                                                     \
	}

/* ---- the event macro ------------------------------------------------------ */

/* Declarations and the inline call site: in every translation unit. */
#define RT_EVENT_DECL(name, proto, args)                                                 \
	RT_EXTERN_C struct ringtrace_event_desc ringtrace_event_##name;                  \
	RT_EXTERN_C void ringtrace_run_##name proto;                                     \
	typedef void (*ringtrace_probe_##name##_fn) RT_PREPEND(void *ringtrace_data,      \
								RT_UNPAREN proto);        \
	static inline __attribute__((unused)) void trace_##name proto                    \
	{                                                                                \
		if (__builtin_expect(__atomic_load_n(&ringtrace_event_##name.enabled,     \
						     __ATOMIC_RELAXED), 0))                \
			ringtrace_run_##name args;                                        \
	}                                                                                \
	static inline __attribute__((unused)) int ringtrace_probe_register_##name(          \
		ringtrace_probe_##name##_fn fn,                                            \
							  void *data)                     \
	{                                                                                \
		return ringtrace_probe_register(&ringtrace_event_##name,                  \
						(ringtrace_probe_fn)fn, data);            \
	}                                                                                \
	static inline __attribute__((unused)) int ringtrace_probe_unregister_##name(        \
		ringtrace_probe_##name##_fn fn,                                            \
							    void *data)                   \
	{                                                                                \
		return ringtrace_probe_unregister(&ringtrace_event_##name,                \
						  (ringtrace_probe_fn)fn, data);          \
	}

/*
 * Definitions: the schema, the descriptor, its registration with the
 * process's registry (a constructor, so that events of a library loaded
 * with dlopen appear, and a destructor, so they go at dlclose), and the
 * out-of-line recording function.
 */
#define RT_EVENT_DEF(kind, name, proto, args, fields, fmt)                                  \
	static const struct ringtrace_field_desc ringtrace_fields_##name[] = {              \
		{"_truncated", RINGTRACE_FT_INT, 1, 0, 1, 0, NULL},                        \
		RT_SEQ(SCHEMA, fields)};                                                   \
	RT_C_BEGIN struct ringtrace_event_desc ringtrace_event_##name = {                  \
		0, 0, 0, 0, #name, fmt, __FILE__,                                          \
		ringtrace_fields_##name + ((0 RT_SEQ(VARLEN, fields)) ? 0 : 1),            \
		(uint32_t)(sizeof(ringtrace_fields_##name) /                               \
				   sizeof(ringtrace_fields_##name[0]) -                    \
			   ((0 RT_SEQ(VARLEN, fields)) ? 0 : 1)),                          \
		(uint32_t)(kind), NULL, NULL}; RT_C_END                                             \
	__attribute__((constructor)) static void ringtrace_ctor_##name(void)                \
	{                                                                                  \
		ringtrace_event_register(&ringtrace_event_##name);                         \
	}                                                                                  \
	__attribute__((destructor)) static void ringtrace_dtor_##name(void)                 \
	{                                                                                  \
		ringtrace_event_unregister(&ringtrace_event_##name);                       \
	}                                                                                  \
	/* Everything but the common case: probes, first events, drops... */       \
	static __attribute__((noinline)) void ringtrace_slow_##name RT_PREPEND(                 \
		uint32_t rt_state, RT_UNPAREN proto)                                       \
	{                                                                                  \
		struct ringtrace_event_desc *rt_ev = &ringtrace_event_##name;              \
		unsigned rt_rd = ringtrace_read_lock();                                    \
		if (rt_state & RINGTRACE_EV_RECORD) {                                      \
			ringtrace_rb *rt_rb = ringtrace_events_buffer_();                  \
			if (rt_rb) {                                                       \
				RT_RECORD_(rt_rb, ringtrace_rb_reserve, ringtrace_rb_commit, \
					   fields, )                                       \
			}                                                                  \
		}                                                                          \
		if (rt_state & RINGTRACE_EV_PROBES) {                                      \
			const struct ringtrace_probe_set *rt_ps = __atomic_load_n(          \
				&rt_ev->probes, __ATOMIC_ACQUIRE);                         \
			for (uint32_t rt_i = 0; rt_ps && rt_i < rt_ps->count; rt_i++)      \
				((ringtrace_probe_##name##_fn)rt_ps->probe[rt_i].fn)        \
					RT_PREPEND(rt_ps->probe[rt_i].data, RT_UNPAREN args); \
		}                                                                          \
		ringtrace_read_unlock(rt_rd);                                              \
	}                                                                                  \
	/*                                                                                 \
	 * The common case, recording only, written so that it makes no call:             \
	 * read-side section, inline reserve, fields, inline commit. Anything             \
	 * else goes to the slow function above, by a tail call.                          \
	 */                                                                                \
	RT_DEFINE_C __attribute__((noinline)) void ringtrace_run_##name proto         \
	{                                                                                  \
		struct ringtrace_event_desc *rt_ev = &ringtrace_event_##name;              \
		uint32_t rt_state = __atomic_load_n(&rt_ev->state, __ATOMIC_RELAXED);       \
		struct ringtrace_reader_node *rt_n = ringtrace_rnode_;                     \
		if (__builtin_expect(rt_state == RINGTRACE_EV_RECORD && rt_n != 0 &&       \
					     !(__atomic_load_n(&rt_n->seq, __ATOMIC_RELAXED) & 1) && \
					     !ringtrace_rcu_fence_,                          \
				     1)) {                                                 \
			__atomic_store_n(&rt_n->seq,                                       \
					 __atomic_load_n(&ringtrace_rcu_gp_, __ATOMIC_ACQUIRE) | 1, \
					 __ATOMIC_RELAXED);                                \
			__atomic_signal_fence(__ATOMIC_SEQ_CST);                           \
			ringtrace_rb *rt_rb = ringtrace_events_buffer_();                  \
			int rt_done = 1;                                                   \
			if (rt_rb) {                                                       \
				rt_done = 0;                                               \
				RT_RECORD_(rt_rb, ringtrace_reserve_fast_, ringtrace_commit_fast_, \
					   fields, rt_done = 1;)                           \
			}                                                                  \
			ringtrace_read_unlock(0);                                          \
			if (rt_done)                                                       \
				return;                                                    \
		}                                                                          \
		ringtrace_slow_##name RT_PREPEND(rt_state, RT_UNPAREN args);                \
	}

/*
 * Size, reserve, write, commit; then run `after`. Used by both paths: the
 * fast one with the inline reserve/commit, the slow one with the library's.
 */
#define RT_RECORD_(rb, reserve, commit, fields, after)                                       \
	{                                                                                  \
		size_t rt_sz = (0 RT_SEQ(VARLEN, fields)) ? 1 : 0;                         \
		uint8_t rt_trunc = 0;                                                      \
		unsigned rt_vi = 0;                                                        \
		RT_SEQ(SIZE, fields)                                                       \
		(void)rt_vi;                                                               \
		(void)rt_trunc;                                                            \
		char *rt_p = (char *)reserve(rb, rt_ev->id, rt_sz);                        \
		if (rt_p) {                                                                \
			size_t rt_o = 0;                                                   \
			if (0 RT_SEQ(VARLEN, fields))                                      \
				rt_p[rt_o++] = (char)rt_trunc;                             \
			RT_SEQ(WRITE, fields)                                              \
			(void)rt_o;                                                        \
			commit(rb);                                                        \
			after                                                              \
		}                                                                          \
	}

#endif /* RINGTRACE_TRACEPOINT_H */

/*
 * Outside the include guard: re-read at every inclusion, so that a file
 * defining RINGTRACE_CREATE_EVENTS gets the definitions even when
 * tracepoint.h was already included.
 */
#undef RINGTRACE_ENUM
#ifdef RINGTRACE_CREATE_EVENTS
#define RINGTRACE_ENUM(name, ...)                                              \
	static const struct ringtrace_enum_value ringtrace_enum_values_##name[] = { \
		__VA_ARGS__};                                                  \
	static const struct ringtrace_enum_desc ringtrace_enum_##name = {      \
		#name, ringtrace_enum_values_##name,                           \
		sizeof(ringtrace_enum_values_##name) /                         \
			sizeof(ringtrace_enum_values_##name[0])};
#else
#define RINGTRACE_ENUM(name, ...)
#endif
#undef RINGTRACE_EVENT_KIND
#undef RINGTRACE_EVENT
#ifdef RINGTRACE_CREATE_EVENTS
#define RINGTRACE_EVENT_KIND(kind, name, proto, args, fields, fmt) \
	RT_EVENT_DECL(name, proto, args)                           \
	RT_EVENT_DEF(kind, name, proto, args, fields, fmt)
#else
#define RINGTRACE_EVENT_KIND(kind, name, proto, args, fields, fmt) \
	RT_EVENT_DECL(name, proto, args)
#endif
#define RINGTRACE_EVENT(name, proto, args, fields, fmt) \
	RINGTRACE_EVENT_KIND(RINGTRACE_KIND_INSTANT, name, proto, args, fields, fmt)

