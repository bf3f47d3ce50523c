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
 * A disabled call site costs one load of the event's `state` word and
 * one predicted branch; everything else is out of line (cold).
 *
 * Out of line, per event: ringtrace_run_<name> (what the call site calls)
 * records with an inline reserve/commit (ringtrace_rec_<name>), or, when
 * the event has a filter (ringtrace/filter.h), builds the record in a
 * local, filters it and returns at once if it is rejected;
 * ringtrace_slow_<name> handles everything else (probes, triggers,
 * filters that need the interpreter, records with strings, a thread's
 * first event, page switches). A filtered or probed event with strings or
 * byte sequences builds its record on the stack: up to 1 KiB per string
 * and 4 KiB per byte sequence (mind small signal stacks).
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
#define RINGTRACE__EXTERN_C extern "C"
#define RINGTRACE__DEFINE_C extern "C"
#define RINGTRACE__C_BEGIN extern "C" {
#define RINGTRACE__C_END }
#else
#define RINGTRACE__C_BEGIN
#define RINGTRACE__C_END
#define RINGTRACE__EXTERN_C extern
#define RINGTRACE__DEFINE_C
#endif

#define RINGTRACE_PROTO(...) (__VA_ARGS__)
#define RINGTRACE_ARGS(...) (__VA_ARGS__)
#define RINGTRACE_FIELDS(...) __VA_ARGS__
#define RINGTRACE_PRINT(fmt) fmt

/* ---- field macros: each becomes a tuple (KIND, TYPE, NAME, ...) --------- */

#define ringtrace_integer(type, name, expr) (RINGTRACE__K_INT, type, name, expr)
#define ringtrace_float(type, name, expr) (RINGTRACE__K_FLOAT, type, name, expr)
#define ringtrace_bool(name, expr) (RINGTRACE__K_BOOL, uint8_t, name, expr)
#define ringtrace_pointer(name, expr) (RINGTRACE__K_PTR, uint64_t, name, expr)
#define ringtrace_enum(enm, type, name, expr) (RINGTRACE__K_ENUM, type, name, expr, enm)
#define ringtrace_array(type, name, ptr, count) (RINGTRACE__K_ARRAY, type, name, ptr, count)
#define ringtrace_string(name, expr) (RINGTRACE__K_STRING, char, name, expr)
#define ringtrace_bytes(name, ptr, len) (RINGTRACE__K_BYTES, uint8_t, name, ptr, len)

/* ---- enums --------------------------------------------------------------- */

/*
 *   RINGTRACE_ENUM(task_state,
 *       RINGTRACE_ENUM_VALUE("RUNNING", 0)
 *       RINGTRACE_ENUM_VALUE("SLEEPING", 1))
 * in the events header; usable by ringtrace_enum(task_state, ...).
 */
#define RINGTRACE_ENUM_VALUE(str, val) {str, (int64_t)(val)},

/* ---- preprocessor plumbing ----------------------------------------------- */

#define RINGTRACE__CAT_(a, b) a##b
#define RINGTRACE__CAT(a, b) RINGTRACE__CAT_(a, b)
#define RINGTRACE__UNPAREN(...) __VA_ARGS__
#define RINGTRACE__PREPEND_(first, ...) (first, __VA_ARGS__)
#define RINGTRACE__PREPEND(first, ...) RINGTRACE__PREPEND_(first, __VA_ARGS__)
#define RINGTRACE__IS_SIGNED(t) ((t)-1 <= (t)0) /* not "< 0": -Wtype-limits */
#define RINGTRACE__ALIGNOF(t) (sizeof(t) < 8 ? sizeof(t) : 8)
#define RINGTRACE__ALIGN_UP(v, a) (((v) + ((a)-1)) & ~(size_t)((a)-1))

/*
 * Iterating over a sequence of tuples "(a,b)(c,d)...": the ping-pong
 * trick. X_A consumes one tuple and leaves X_B, which consumes the next
 * and leaves X_A; the last one left is pasted with _END (the last token
 * of __VA_ARGS__ is what ## pastes), which expands to nothing. One pair of macros per context.
 */
#define RINGTRACE__SEQ_END_(...) __VA_ARGS__##_END
#define RINGTRACE__SEQ_END(...) RINGTRACE__SEQ_END_(__VA_ARGS__)
#define RINGTRACE__SEQ(ctx, seq) RINGTRACE__SEQ_END(RINGTRACE__##ctx##_A seq)

/* Schema: one ringtrace_field_desc initializer per field. */
#define RINGTRACE__SCHEMA_A(k, ...) RINGTRACE__SCHEMA_##k(__VA_ARGS__) RINGTRACE__SCHEMA_B
#define RINGTRACE__SCHEMA_B(k, ...) RINGTRACE__SCHEMA_##k(__VA_ARGS__) RINGTRACE__SCHEMA_A
#define RINGTRACE__SCHEMA_A_END
#define RINGTRACE__SCHEMA_B_END
#define RINGTRACE__SCHEMA_RINGTRACE__K_INT(t, n, e) \
	{#n, RINGTRACE_FT_INT, sizeof(t), RINGTRACE__IS_SIGNED(t), RINGTRACE__ALIGNOF(t), 0, NULL},
#define RINGTRACE__SCHEMA_RINGTRACE__K_FLOAT(t, n, e) \
	{#n, RINGTRACE_FT_FLOAT, sizeof(t), 1, RINGTRACE__ALIGNOF(t), 0, NULL},
#define RINGTRACE__SCHEMA_RINGTRACE__K_BOOL(t, n, e) {#n, RINGTRACE_FT_BOOL, 1, 0, 1, 0, NULL},
#define RINGTRACE__SCHEMA_RINGTRACE__K_PTR(t, n, e) {#n, RINGTRACE_FT_POINTER, 8, 0, 8, 0, NULL},
#define RINGTRACE__SCHEMA_RINGTRACE__K_ENUM(t, n, e, en) \
	{#n, RINGTRACE_FT_ENUM, sizeof(t), RINGTRACE__IS_SIGNED(t), RINGTRACE__ALIGNOF(t), 0, &ringtrace_enum_##en},
#define RINGTRACE__SCHEMA_RINGTRACE__K_ARRAY(t, n, e, c)                                                      \
	{#n, (uint8_t)(((t)0.5 != 0) ? RINGTRACE_FT_FLOAT_ARRAY : RINGTRACE_FT_ARRAY), sizeof(t), \
	 RINGTRACE__IS_SIGNED(t), RINGTRACE__ALIGNOF(t), (uint32_t)(c), NULL},
#define RINGTRACE__SCHEMA_RINGTRACE__K_STRING(t, n, e) \
	{#n, RINGTRACE_FT_STRING, 1, 0, 1, RINGTRACE_STRING_MAX, NULL},
#define RINGTRACE__SCHEMA_RINGTRACE__K_BYTES(t, n, p, l) \
	{#n, RINGTRACE_FT_BYTES, 1, 0, 4, RINGTRACE_BYTES_MAX, NULL},

/* Count of variable-length fields (a constant expression: 0 + 1 + ...). */
#define RINGTRACE__VARLEN_A(k, ...) RINGTRACE__VARLEN_##k RINGTRACE__VARLEN_B
#define RINGTRACE__VARLEN_B(k, ...) RINGTRACE__VARLEN_##k RINGTRACE__VARLEN_A
#define RINGTRACE__VARLEN_A_END
#define RINGTRACE__VARLEN_B_END
#define RINGTRACE__VARLEN_RINGTRACE__K_INT
#define RINGTRACE__VARLEN_RINGTRACE__K_FLOAT
#define RINGTRACE__VARLEN_RINGTRACE__K_BOOL
#define RINGTRACE__VARLEN_RINGTRACE__K_PTR
#define RINGTRACE__VARLEN_RINGTRACE__K_ENUM
#define RINGTRACE__VARLEN_RINGTRACE__K_ARRAY
#define RINGTRACE__VARLEN_RINGTRACE__K_STRING +1
#define RINGTRACE__VARLEN_RINGTRACE__K_BYTES +1

/* An upper bound of a fixed-size record's size (a constant expression):
 * each field's size plus its largest alignment padding. */
#define RINGTRACE__MAXSZ_A(k, ...) RINGTRACE__MAXSZ_##k(__VA_ARGS__) RINGTRACE__MAXSZ_B
#define RINGTRACE__MAXSZ_B(k, ...) RINGTRACE__MAXSZ_##k(__VA_ARGS__) RINGTRACE__MAXSZ_A
#define RINGTRACE__MAXSZ_A_END
#define RINGTRACE__MAXSZ_B_END
#define RINGTRACE__MAXSZ_RINGTRACE__K_INT(t, n, e) +sizeof(t) + 7
#define RINGTRACE__MAXSZ_RINGTRACE__K_FLOAT(t, n, e) +sizeof(t) + 7
#define RINGTRACE__MAXSZ_RINGTRACE__K_BOOL(t, n, e) +1
#define RINGTRACE__MAXSZ_RINGTRACE__K_PTR(t, n, e) +15
#define RINGTRACE__MAXSZ_RINGTRACE__K_ENUM(t, n, e, en) +sizeof(t) + 7
#define RINGTRACE__MAXSZ_RINGTRACE__K_ARRAY(t, n, e, c) +sizeof(t) * (size_t)(c) + 7
#define RINGTRACE__MAXSZ_RINGTRACE__K_STRING(t, n, e) +0
#define RINGTRACE__MAXSZ_RINGTRACE__K_BYTES(t, n, p, l) +0

/*
 * Size: evaluates string/byte expressions once into locals and adds up the
 * record size. For fixed-size fields this folds to a constant.
 */
#define RINGTRACE__SIZE_A(k, ...) RINGTRACE__SIZE_##k(__VA_ARGS__) RINGTRACE__SIZE_B
#define RINGTRACE__SIZE_B(k, ...) RINGTRACE__SIZE_##k(__VA_ARGS__) RINGTRACE__SIZE_A
#define RINGTRACE__SIZE_A_END
#define RINGTRACE__SIZE_B_END
#define RINGTRACE__SIZE_RINGTRACE__K_INT(t, n, e) ringtrace__sz = RINGTRACE__ALIGN_UP(ringtrace__sz, RINGTRACE__ALIGNOF(t)) + sizeof(t);
#define RINGTRACE__SIZE_RINGTRACE__K_FLOAT(t, n, e) ringtrace__sz = RINGTRACE__ALIGN_UP(ringtrace__sz, RINGTRACE__ALIGNOF(t)) + sizeof(t);
#define RINGTRACE__SIZE_RINGTRACE__K_BOOL(t, n, e) ringtrace__sz += 1;
#define RINGTRACE__SIZE_RINGTRACE__K_PTR(t, n, e) ringtrace__sz = RINGTRACE__ALIGN_UP(ringtrace__sz, 8) + 8;
#define RINGTRACE__SIZE_RINGTRACE__K_ENUM(t, n, e, en) ringtrace__sz = RINGTRACE__ALIGN_UP(ringtrace__sz, RINGTRACE__ALIGNOF(t)) + sizeof(t);
#define RINGTRACE__SIZE_RINGTRACE__K_ARRAY(t, n, e, c) \
	ringtrace__sz = RINGTRACE__ALIGN_UP(ringtrace__sz, RINGTRACE__ALIGNOF(t)) + sizeof(t) * (size_t)(c);
#define RINGTRACE__SIZE_RINGTRACE__K_STRING(t, n, e)                                                  \
	const char *ringtrace__s_##n = (e);                                                   \
	size_t ringtrace__l_##n = ringtrace_strnlen_trunc_(                                    \
		ringtrace__s_##n, RINGTRACE_STRING_MAX - 1, &ringtrace__trunc,                 \
		(uint8_t)(1u << (ringtrace__vi < 7 ? ringtrace__vi : 7)));                     \
	ringtrace__vi++;                                                                      \
	ringtrace__sz += ringtrace__l_##n + 1;
#define RINGTRACE__SIZE_RINGTRACE__K_BYTES(t, n, p, l)                                                \
	const void *ringtrace__s_##n = (p);                                                   \
	size_t ringtrace__l_##n = (size_t)(l);                                                \
	if (!ringtrace__s_##n)                                                                \
		ringtrace__l_##n = 0;                                                         \
	if (ringtrace__l_##n > RINGTRACE_BYTES_MAX) {                                         \
		ringtrace__l_##n = RINGTRACE_BYTES_MAX;                                       \
		ringtrace__trunc |= (uint8_t)(1u << (ringtrace__vi < 7 ? ringtrace__vi : 7));                 \
	}                                                                             \
	ringtrace__vi++;                                                                      \
	ringtrace__sz = RINGTRACE__ALIGN_UP(ringtrace__sz, 4) + 4 + ringtrace__l_##n;

/* Write: serialize each field at its aligned offset. */
#define RINGTRACE__WRITE_A(k, ...) RINGTRACE__WRITE_##k(__VA_ARGS__) RINGTRACE__WRITE_B
#define RINGTRACE__WRITE_B(k, ...) RINGTRACE__WRITE_##k(__VA_ARGS__) RINGTRACE__WRITE_A
#define RINGTRACE__WRITE_A_END
#define RINGTRACE__WRITE_B_END
#define RINGTRACE__WRITE_SCALAR_(t, v)                                                        \
	{                                                                             \
		t ringtrace__v = (t)(v);                                                      \
		ringtrace__o = RINGTRACE__ALIGN_UP(ringtrace__o, RINGTRACE__ALIGNOF(t));                              \
		memcpy(ringtrace__p + ringtrace__o, &ringtrace__v, sizeof(t));                                \
		ringtrace__o += sizeof(t);                                                    \
	}
#define RINGTRACE__WRITE_RINGTRACE__K_INT(t, n, e) RINGTRACE__WRITE_SCALAR_(t, e)
#define RINGTRACE__WRITE_RINGTRACE__K_FLOAT(t, n, e) RINGTRACE__WRITE_SCALAR_(t, e)
#define RINGTRACE__WRITE_RINGTRACE__K_BOOL(t, n, e) RINGTRACE__WRITE_SCALAR_(uint8_t, (e) ? 1 : 0)
#define RINGTRACE__WRITE_RINGTRACE__K_PTR(t, n, e) RINGTRACE__WRITE_SCALAR_(uint64_t, (uintptr_t)(e))
#define RINGTRACE__WRITE_RINGTRACE__K_ENUM(t, n, e, en) RINGTRACE__WRITE_SCALAR_(t, e)
#define RINGTRACE__WRITE_RINGTRACE__K_ARRAY(t, n, e, c)                                               \
	ringtrace__o = RINGTRACE__ALIGN_UP(ringtrace__o, RINGTRACE__ALIGNOF(t));                                      \
	memcpy(ringtrace__p + ringtrace__o, (e), sizeof(t) * (size_t)(c));                            \
	ringtrace__o += sizeof(t) * (size_t)(c);
#define RINGTRACE__WRITE_RINGTRACE__K_STRING(t, n, e)                                                 \
	if (ringtrace__l_##n)                                                                 \
		memcpy(ringtrace__p + ringtrace__o, ringtrace__s_##n, ringtrace__l_##n);                              \
	ringtrace__p[ringtrace__o + ringtrace__l_##n] = 0;                                                    \
	ringtrace__o += ringtrace__l_##n + 1;
#define RINGTRACE__WRITE_RINGTRACE__K_BYTES(t, n, p, l)                                               \
	{                                                                             \
		uint32_t ringtrace__v = (uint32_t)ringtrace__l_##n;                                   \
		ringtrace__o = RINGTRACE__ALIGN_UP(ringtrace__o, 4);                                          \
		memcpy(ringtrace__p + ringtrace__o, &ringtrace__v, 4);                                        \
		ringtrace__o += 4;                                                            \
		if (ringtrace__l_##n)                                                         \
			memcpy(ringtrace__p + ringtrace__o, ringtrace__s_##n, ringtrace__l_##n);                      \
		ringtrace__o += ringtrace__l_##n;                                                     \
	}

/* ---- the event macro ------------------------------------------------------ */

/* Declarations and the inline call site: in every translation unit. */
#define RINGTRACE__EVENT_DECL(name, proto, args)                                                 \
	RINGTRACE__EXTERN_C struct ringtrace_event_desc ringtrace_event_##name;                  \
	RINGTRACE__EXTERN_C void ringtrace_run_##name proto;                                     \
	typedef void (*ringtrace_probe_##name##_fn) RINGTRACE__PREPEND(void *,      \
								RINGTRACE__UNPAREN proto);        \
	static inline __attribute__((unused)) void trace_##name proto                    \
	{                                                                                \
		if (__builtin_expect(__atomic_load_n(&ringtrace_event_##name.state,       \
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
#define RINGTRACE__EVENT_DEF(kind, name, proto, args, fields, fmt)                                  \
	static const struct ringtrace_field_desc ringtrace_fields_##name[] = {              \
		{"_truncated", RINGTRACE_FT_INT, 1, 0, 1, 0, NULL},                        \
		RINGTRACE__SEQ(SCHEMA, fields)};                                                   \
	RINGTRACE__C_BEGIN struct ringtrace_event_desc ringtrace_event_##name = {                  \
		0, 0, 0, (uint32_t)(kind), #name, fmt, __FILE__,                           \
		ringtrace_fields_##name + ((0 RINGTRACE__SEQ(VARLEN, fields)) ? 0 : 1),            \
		(uint32_t)(sizeof(ringtrace_fields_##name) /                               \
				   sizeof(ringtrace_fields_##name[0]) -                    \
			   ((0 RINGTRACE__SEQ(VARLEN, fields)) ? 0 : 1)),                          \
		0, NULL, NULL, NULL, 0}; RINGTRACE__C_END                                          \
	__attribute__((constructor)) static void ringtrace_ctor_##name(void)                \
	{                                                                                  \
		ringtrace_event_register(&ringtrace_event_##name);                         \
	}                                                                                  \
	__attribute__((destructor)) static void ringtrace_dtor_##name(void)                 \
	{                                                                                  \
		ringtrace_event_unregister(&ringtrace_event_##name);                       \
	}                                                                                  \
	/*                                                                                 \
	 * Everything but the common case: filters, triggers, probes, a thread's          \
	 * first event, page switches, drops. The record is built on the stack            \
	 * first (no clock read, nothing reserved), so that a filter can reject           \
	 * it for the cost of building it; then copied into the buffer.                   \
	 */                                                                                \
	static __attribute__((noinline)) void ringtrace_slow_##name RINGTRACE__PREPEND(                 \
		uint32_t ringtrace__state, RINGTRACE__UNPAREN proto)                                       \
	{                                                                                  \
		struct ringtrace_event_desc *ringtrace__ev = &ringtrace_event_##name;              \
		unsigned ringtrace__rd = ringtrace_read_lock();                                    \
		const struct ringtrace_event_ctl_ *ringtrace__ctl =                                \
			(ringtrace__state & RINGTRACE_EV_CTL)                                      \
				? __atomic_load_n(&ringtrace__ev->ctl, __ATOMIC_ACQUIRE)           \
				: 0;                                                       \
		ringtrace_rb *ringtrace__rb =                                                      \
			(ringtrace__state & RINGTRACE_EV_RECORD) ? ringtrace_events_buffer_() : 0; \
		if (ringtrace__ctl || ringtrace__rb) {                                             \
			/* Slack: the compiler cannot see that filters read inside it. */  \
			RINGTRACE__BUILD_(fields, ringtrace__p = (char *)__builtin_alloca(          \
							  RINGTRACE__ALIGN_UP(ringtrace__sz, 8) + 8)) \
			int ringtrace__keep = 1;                                                   \
			if (ringtrace__ctl)                                                        \
				ringtrace__keep = ringtrace_ctl_keep_(ringtrace__ctl, ringtrace__p, \
								       ringtrace__sz, ringtrace__rd); \
			if (ringtrace__keep && ringtrace__rb) {                                    \
				struct ringtrace_fres_ ringtrace__f;                               \
				char *ringtrace__q = (char *)ringtrace_reserve_fast_(               \
					ringtrace__rb, ringtrace__ev->id, ringtrace__sz, &ringtrace__f); \
				if (ringtrace__q) {                                                \
					memcpy(ringtrace__q, ringtrace__p, ringtrace__sz);         \
					ringtrace_commit_fast_(&ringtrace__f);                     \
					ringtrace_events_note_(ringtrace__rb, ringtrace__rd); \
				} else if ((ringtrace__q = (char *)ringtrace_rb_reserve(            \
						    ringtrace__rb, ringtrace__ev->id, ringtrace__sz))) { \
					memcpy(ringtrace__q, ringtrace__p, ringtrace__sz);         \
					ringtrace_rb_commit(ringtrace__rb);                        \
					ringtrace_events_note_(ringtrace__rb, ringtrace__rd); \
				}                                                          \
			}                                                                  \
			if (ringtrace__ctl && ringtrace__ctl->ntriggers)                           \
				ringtrace_triggers_run_(ringtrace__ctl, ringtrace__p, ringtrace__sz); \
		}                                                                          \
		if (ringtrace__state & RINGTRACE_EV_PROBES) {                                      \
			const struct ringtrace_probe_set *ringtrace__ps = __atomic_load_n(          \
				&ringtrace__ev->probes, __ATOMIC_ACQUIRE);                         \
			for (uint32_t ringtrace__i = 0; ringtrace__ps && ringtrace__i < ringtrace__ps->count; ringtrace__i++)      \
				((ringtrace_probe_##name##_fn)ringtrace__ps->probe[ringtrace__i].fn)        \
					RINGTRACE__PREPEND(ringtrace__ps->probe[ringtrace__i].data, RINGTRACE__UNPAREN args); \
		}                                                                          \
		ringtrace_read_unlock(ringtrace__rd);                                              \
	}                                                                                  \
	/*                                                                                 \
	 * The common case, recording only, written so that it makes no call:             \
	 * read-side section, inline reserve, fields, inline commit. Anything             \
	 * else goes to the slow function above, by a tail call.                          \
	 */                                                                                \
	static __attribute__((noinline)) void ringtrace_rec_##name proto                           \
	{                                                                                  \
		/* Called for this state only: one argument register fewer to keep           \
		 * for the slow call, which saves the push/pop of a register here. */         \
		const uint32_t ringtrace__state = RINGTRACE_EV_RECORD;                              \
		struct ringtrace_event_desc *ringtrace__ev = &ringtrace_event_##name;              \
		struct ringtrace_reader_node *ringtrace__n;                                        \
		if (__builtin_expect(ringtrace_read_enter_rec_(&ringtrace__n), 1)) {               \
			RINGTRACE__REC_IN_(name, args, fields, ringtrace_read_unlock_fast_(ringtrace__n)) \
		}                                                                          \
		ringtrace_slow_##name RINGTRACE__PREPEND(ringtrace__state, RINGTRACE__UNPAREN args);                \
	}                                                                                  \
	/* The same, called inside the read-side section (which it leaves). */          \
	static __attribute__((noinline)) void ringtrace_recin_##name RINGTRACE__PREPEND(               \
		uint32_t ringtrace__state, RINGTRACE__UNPAREN proto)                                       \
	{                                                                                  \
		struct ringtrace_event_desc *ringtrace__ev = &ringtrace_event_##name;              \
		RINGTRACE__REC_IN_(name, args, fields, ringtrace_read_unlock(0))                        \
		ringtrace_slow_##name RINGTRACE__PREPEND(ringtrace__state, RINGTRACE__UNPAREN args);                \
	}                                                                                  \
	/* A fixed-size event whose filter needs the interpreter: called inside        \
	 * the read-side section (which it leaves). */                                     \
	static __attribute__((noinline)) void ringtrace_cfilt_##name RINGTRACE__PREPEND(               \
		uint32_t ringtrace__state, RINGTRACE__UNPAREN proto)                                       \
	{                                                                                  \
		struct ringtrace_event_desc *ringtrace__ev = &ringtrace_event_##name;              \
		const struct ringtrace_event_ctl_ *ringtrace__ctl =                                \
			__atomic_load_n(&ringtrace__ev->ctl, __ATOMIC_ACQUIRE);                    \
		RINGTRACE__STAGE_(fields)                                                          \
		/* (read again: a filter removed since the entry read it leaves NULL) */     \
		if (ringtrace__ctl &&                                                              \
		    !ringtrace_ctl_keep_(ringtrace__ctl, ringtrace__p, ringtrace__sz, 0)) {         \
			ringtrace_read_unlock(0);                                                  \
			return;                                                                    \
		}                                                                          \
		RINGTRACE__REC_IN_(name, args, fields, ringtrace_read_unlock(0))                        \
		ringtrace_slow_##name RINGTRACE__PREPEND(ringtrace__state, RINGTRACE__UNPAREN args);                \
	}                                                                                  \
	/*                                                                                 \
	 * What the call site calls. Recording only: straight to the code above.          \
	 * A fixed-size event with a one-predicate filter and no trigger: the             \
	 * record is staged in a local and filtered inline, and a rejected call           \
	 * returns from here having touched no callee-saved register (so the              \
	 * compiler saves none); a passed one goes on to the recording code.              \
	 */                                                                                \
	RINGTRACE__DEFINE_C __attribute__((noinline)) void ringtrace_run_##name proto         \
	{                                                                                  \
		struct ringtrace_event_desc *ringtrace__ev = &ringtrace_event_##name;              \
		uint32_t ringtrace__state = __atomic_load_n(&ringtrace__ev->state, __ATOMIC_RELAXED);       \
		struct ringtrace_reader_node *ringtrace__n;                                        \
		if (__builtin_expect(ringtrace__state == RINGTRACE_EV_RECORD, 1)) {               \
			ringtrace_rec_##name args;                                                 \
			return;                                                            \
		}                                                                          \
		if (RINGTRACE__FIXED(fields) &&                                                    \
		    ringtrace__state == (RINGTRACE_EV_RECORD | RINGTRACE_EV_CTL) &&                \
		    ringtrace_read_lock_fast_(&ringtrace__n)) {                                    \
			const struct ringtrace_event_ctl_ *ringtrace__ctl =                        \
				__atomic_load_n(&ringtrace__ev->ctl, __ATOMIC_ACQUIRE);            \
			if (ringtrace__ctl && ringtrace__ctl->inline_ok) {                         \
				if (!ringtrace__ctl->fast.op) {                                    \
					/* Needs the interpreter: out of line, still in the    \
					 * section. */                                         \
					ringtrace_cfilt_##name RINGTRACE__PREPEND(ringtrace__state, \
									    RINGTRACE__UNPAREN args); \
					return;                                                    \
				}                                                                  \
				RINGTRACE__STAGE_(fields)                                          \
				(void)ringtrace__sz;                                               \
				if (!ringtrace_fast_pred_(&ringtrace__ctl->fast, ringtrace__p)) {  \
					ringtrace_ctl_count_(ringtrace__ctl, 0);                   \
					ringtrace_read_unlock(0);                                  \
					return;                                                    \
				}                                                                  \
				/* Passed: recorded, in the same section, by another           \
				 * function: a rejected call then returns from this one        \
				 * having saved no register. */                                 \
				ringtrace_recin_##name RINGTRACE__PREPEND(ringtrace__state,         \
								    RINGTRACE__UNPAREN args);      \
				return;                                                            \
			}                                                                  \
			ringtrace_read_unlock(0);                                          \
		}                                                                          \
		ringtrace_slow_##name RINGTRACE__PREPEND(ringtrace__state, RINGTRACE__UNPAREN args);                \
	}

/*
 * Inside a read-side section: if the events cookie is the one this thread
 * cached, record with the inline reserve/commit through the cached writer
 * state, leave the section and return; if nothing is to be recorded
 * (tracing off, no buffer), leave and return; else (a new buffer, a page
 * switch, a flush, the fence mode...) leave the section and fall through
 * to the caller's slow call. `unlock` leaves the section. (The REC test
 * sits on the mismatch branch, not after a shared unlock: else clang keeps
 * the cookie in a callee-saved register across the record, and pushes it.)
 */
#define RINGTRACE__REC_IN_(name, args, fields, unlock)                                           \
	{                                                                                  \
		uint64_t ringtrace__c = __atomic_load_n(&ringtrace_events_cookie_, __ATOMIC_ACQUIRE); \
		if (__builtin_expect(ringtrace__c == ringtrace_thr_.cookie, 1)) {                 \
			RINGTRACE__RECORD_(fields, unlock; return;)                                \
		} else if (!(ringtrace__c & RINGTRACE_EVC_REC)) {                                  \
			unlock;                                                            \
			return;                                                            \
		}                                                                          \
		unlock;                                                                    \
	}

/*
 * Build a fixed-size record into a local array (the entry's filter path and
 * ringtrace_cfilt_<event> are only taken for fixed-size records; for the
 * others the alloca, never run, keeps the compiler from judging writes
 * against the one-word array).
 */
#define RINGTRACE__STAGE_(fields)                                                                 \
	uint64_t ringtrace__stage[RINGTRACE__FIXED(fields)                                         \
					  ? (0 RINGTRACE__SEQ(MAXSZ, fields)) / 8 + 2 : 1];         \
	RINGTRACE__BUILD_(fields, ringtrace__p = RINGTRACE__FIXED(fields)                          \
			? (char *)ringtrace__stage                                                \
			: (char *)__builtin_alloca(RINGTRACE__ALIGN_UP(ringtrace__sz, 8) + 8))

/* 1 if the event's record has a fixed size (no string or byte sequence). */
#define RINGTRACE__FIXED(fields) (!(0 RINGTRACE__SEQ(VARLEN, fields)))

/*
 * Size the record, get room for it with `alloc` (a statement that sets
 * ringtrace__p from ringtrace__sz, or leaves it NULL), and write the
 * fields there. Leaves ringtrace__sz and ringtrace__p in scope.
 */
#define RINGTRACE__BUILD_(fields, alloc)                                                            \
	size_t ringtrace__sz = (0 RINGTRACE__SEQ(VARLEN, fields)) ? 1 : 0;                         \
	uint8_t ringtrace__trunc = 0;                                                      \
	unsigned ringtrace__vi = 0;                                                        \
	RINGTRACE__SEQ(SIZE, fields)                                                       \
	(void)ringtrace__vi;                                                               \
	(void)ringtrace__trunc;                                                            \
	char *ringtrace__p = 0;                                                            \
	alloc;                                                                             \
	if (ringtrace__p) {                                                                \
		size_t ringtrace__o = 0;                                                   \
		if (0 RINGTRACE__SEQ(VARLEN, fields))                                      \
			ringtrace__p[ringtrace__o++] = (char)ringtrace__trunc;                     \
		RINGTRACE__SEQ(WRITE, fields)                                              \
		(void)ringtrace__o;                                                        \
	}

/*
 * Size, reserve (inline, through the thread's cached writer state; only
 * records that fit any buffer), write, commit; then run `after`.
 */
#define RINGTRACE__RECORD_(fields, after)                                                        \
	{                                                                                  \
		struct ringtrace_fres_ ringtrace__f;                                               \
		RINGTRACE__BUILD_(fields, ringtrace__p = ringtrace__sz <= RINGTRACE_MIN_MAX_PAYLOAD_      \
					  ? (char *)ringtrace_reserve_at_(ringtrace_thr_.last_t,    \
									  &ringtrace__ev->id_hdr,   \
									  ringtrace__sz, &ringtrace__f) \
					  : (char *)0)                                             \
		if (ringtrace__p) {                                                                \
			ringtrace_commit_fast_(&ringtrace__f);                                     \
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
	RINGTRACE__EVENT_DECL(name, proto, args)                           \
	RINGTRACE__EVENT_DEF(kind, name, proto, args, fields, fmt)
#else
#define RINGTRACE_EVENT_KIND(kind, name, proto, args, fields, fmt) \
	RINGTRACE__EVENT_DECL(name, proto, args)
#endif
#define RINGTRACE_EVENT(name, proto, args, fields, fmt) \
	RINGTRACE_EVENT_KIND(RINGTRACE_KIND_INSTANT, name, proto, args, fields, fmt)

