/*
 * ringtrace/static/tracepoint.h - the code RINGTRACE_EVENT generates: the
 * record's schema, the descriptor and its registration, the inline call
 * site and the out-of-line recording functions, written with the
 * preprocessor.
 *
 * VERSION-LOCKED INLINE CODE, NOT AN API (see ringtrace/static/layout.h).
 * Included by ringtrace/tracepoint.h, whose comment describes what the
 * generated functions do. Every name here is RINGTRACE_I_* (macros) or
 * ringtrace_i_* (locals of the generated code): internal, and never a
 * name reserved in C or C++.
 */
#ifndef RINGTRACE_STATIC_TRACEPOINT_H
#define RINGTRACE_STATIC_TRACEPOINT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ringtrace/static/event.h"
#include "ringtrace/static/ring.h"

#ifdef __cplusplus
#define RINGTRACE_I_EXTERN_C extern "C"
#define RINGTRACE_I_DEFINE_C extern "C"
#define RINGTRACE_I_C_BEGIN extern "C" {
#define RINGTRACE_I_C_END }
#else
#define RINGTRACE_I_C_BEGIN
#define RINGTRACE_I_C_END
#define RINGTRACE_I_EXTERN_C extern
#define RINGTRACE_I_DEFINE_C
#endif

/* ---- preprocessor plumbing ----------------------------------------------- */

#define RINGTRACE_I_CAT_(a, b) a##b
#define RINGTRACE_I_CAT(a, b) RINGTRACE_I_CAT_(a, b)
#define RINGTRACE_I_UNPAREN(...) __VA_ARGS__
#define RINGTRACE_I_PREPEND_(first, ...) (first, __VA_ARGS__)
#define RINGTRACE_I_PREPEND(first, ...) RINGTRACE_I_PREPEND_(first, __VA_ARGS__)
#define RINGTRACE_I_IS_SIGNED(t) ((t)-1 <= (t)0) /* not "< 0": -Wtype-limits */
#define RINGTRACE_I_ALIGNOF(t) (sizeof(t) < 8 ? sizeof(t) : 8)
#define RINGTRACE_I_ALIGN_UP(v, a) (((v) + ((a)-1)) & ~(size_t)((a)-1))

/*
 * Iterating over a sequence of tuples "(a,b)(c,d)...": the ping-pong
 * trick. X_A consumes one tuple and leaves X_B, which consumes the next
 * and leaves X_A; the last one left is pasted with _END (the last token
 * of __VA_ARGS__ is what ## pastes), which expands to nothing. One pair of macros per context.
 */
#define RINGTRACE_I_SEQ_END_(...) __VA_ARGS__##_END
#define RINGTRACE_I_SEQ_END(...) RINGTRACE_I_SEQ_END_(__VA_ARGS__)
#define RINGTRACE_I_SEQ(ctx, seq) RINGTRACE_I_SEQ_END(RINGTRACE_I_##ctx##_A seq)

/* Schema: one ringtrace_field_desc initializer per field. */
#define RINGTRACE_I_SCHEMA_A(k, ...) RINGTRACE_I_SCHEMA_##k(__VA_ARGS__) RINGTRACE_I_SCHEMA_B
#define RINGTRACE_I_SCHEMA_B(k, ...) RINGTRACE_I_SCHEMA_##k(__VA_ARGS__) RINGTRACE_I_SCHEMA_A
#define RINGTRACE_I_SCHEMA_A_END
#define RINGTRACE_I_SCHEMA_B_END
#define RINGTRACE_I_SCHEMA_RINGTRACE_I_K_INT(t, n, e)                                           \
	{#n,  RINGTRACE_FT_INT, sizeof(t), RINGTRACE_I_IS_SIGNED(t), RINGTRACE_I_ALIGNOF(t), 0, \
	 NULL},
#define RINGTRACE_I_SCHEMA_RINGTRACE_I_K_FLOAT(t, n, e) \
	{#n, RINGTRACE_FT_FLOAT, sizeof(t), 1, RINGTRACE_I_ALIGNOF(t), 0, NULL},
#define RINGTRACE_I_SCHEMA_RINGTRACE_I_K_BOOL(t, n, e) {#n, RINGTRACE_FT_BOOL, 1, 0, 1, 0, NULL},
#define RINGTRACE_I_SCHEMA_RINGTRACE_I_K_PTR(t, n, e) {#n, RINGTRACE_FT_POINTER, 8, 0, 8, 0, NULL},
#define RINGTRACE_I_SCHEMA_RINGTRACE_I_K_ENUM(t, n, e, en)                                     \
	{#n, RINGTRACE_FT_ENUM,   sizeof(t), RINGTRACE_I_IS_SIGNED(t), RINGTRACE_I_ALIGNOF(t), \
	 0,  &ringtrace_enum_##en},
#define RINGTRACE_I_SCHEMA_RINGTRACE_I_K_ARRAY(t, n, e, c)                         \
	{#n,                                                                       \
	 (uint8_t)(((t)0.5 != 0) ? RINGTRACE_FT_FLOAT_ARRAY : RINGTRACE_FT_ARRAY), \
	 sizeof(t),                                                                \
	 RINGTRACE_I_IS_SIGNED(t),                                                 \
	 RINGTRACE_I_ALIGNOF(t),                                                   \
	 (uint32_t)(c),                                                            \
	 NULL},
#define RINGTRACE_I_SCHEMA_RINGTRACE_I_K_STRING(t, n, e) \
	{#n, RINGTRACE_FT_STRING, 1, 0, 1, RINGTRACE_STRING_MAX, NULL},
#define RINGTRACE_I_SCHEMA_RINGTRACE_I_K_BYTES(t, n, p, l) \
	{#n, RINGTRACE_FT_BYTES, 1, 0, 4, RINGTRACE_BYTES_MAX, NULL},

/* Count of variable-length fields (a constant expression: 0 + 1 + ...). */
#define RINGTRACE_I_VARLEN_A(k, ...) RINGTRACE_I_VARLEN_##k RINGTRACE_I_VARLEN_B
#define RINGTRACE_I_VARLEN_B(k, ...) RINGTRACE_I_VARLEN_##k RINGTRACE_I_VARLEN_A
#define RINGTRACE_I_VARLEN_A_END
#define RINGTRACE_I_VARLEN_B_END
#define RINGTRACE_I_VARLEN_RINGTRACE_I_K_INT
#define RINGTRACE_I_VARLEN_RINGTRACE_I_K_FLOAT
#define RINGTRACE_I_VARLEN_RINGTRACE_I_K_BOOL
#define RINGTRACE_I_VARLEN_RINGTRACE_I_K_PTR
#define RINGTRACE_I_VARLEN_RINGTRACE_I_K_ENUM
#define RINGTRACE_I_VARLEN_RINGTRACE_I_K_ARRAY
#define RINGTRACE_I_VARLEN_RINGTRACE_I_K_STRING +1
#define RINGTRACE_I_VARLEN_RINGTRACE_I_K_BYTES +1

/* An upper bound of a fixed-size record's size (a constant expression):
 * each field's size plus its largest alignment padding. */
#define RINGTRACE_I_MAXSZ_A(k, ...) RINGTRACE_I_MAXSZ_##k(__VA_ARGS__) RINGTRACE_I_MAXSZ_B
#define RINGTRACE_I_MAXSZ_B(k, ...) RINGTRACE_I_MAXSZ_##k(__VA_ARGS__) RINGTRACE_I_MAXSZ_A
#define RINGTRACE_I_MAXSZ_A_END
#define RINGTRACE_I_MAXSZ_B_END
#define RINGTRACE_I_MAXSZ_RINGTRACE_I_K_INT(t, n, e) +sizeof(t) + 7
#define RINGTRACE_I_MAXSZ_RINGTRACE_I_K_FLOAT(t, n, e) +sizeof(t) + 7
#define RINGTRACE_I_MAXSZ_RINGTRACE_I_K_BOOL(t, n, e) +1
#define RINGTRACE_I_MAXSZ_RINGTRACE_I_K_PTR(t, n, e) +15
#define RINGTRACE_I_MAXSZ_RINGTRACE_I_K_ENUM(t, n, e, en) +sizeof(t) + 7
#define RINGTRACE_I_MAXSZ_RINGTRACE_I_K_ARRAY(t, n, e, c) +sizeof(t) * (size_t)(c) + 7
#define RINGTRACE_I_MAXSZ_RINGTRACE_I_K_STRING(t, n, e) +0
#define RINGTRACE_I_MAXSZ_RINGTRACE_I_K_BYTES(t, n, p, l) +0

/*
 * Size: evaluates string/byte expressions once into locals and adds up the
 * record size. For fixed-size fields this folds to a constant.
 */
#define RINGTRACE_I_SIZE_A(k, ...) RINGTRACE_I_SIZE_##k(__VA_ARGS__) RINGTRACE_I_SIZE_B
#define RINGTRACE_I_SIZE_B(k, ...) RINGTRACE_I_SIZE_##k(__VA_ARGS__) RINGTRACE_I_SIZE_A
#define RINGTRACE_I_SIZE_A_END
#define RINGTRACE_I_SIZE_B_END
#define RINGTRACE_I_SIZE_RINGTRACE_I_K_INT(t, n, e) \
	ringtrace_i_sz = RINGTRACE_I_ALIGN_UP(ringtrace_i_sz, RINGTRACE_I_ALIGNOF(t)) + sizeof(t);
#define RINGTRACE_I_SIZE_RINGTRACE_I_K_FLOAT(t, n, e) \
	ringtrace_i_sz = RINGTRACE_I_ALIGN_UP(ringtrace_i_sz, RINGTRACE_I_ALIGNOF(t)) + sizeof(t);
#define RINGTRACE_I_SIZE_RINGTRACE_I_K_BOOL(t, n, e) ringtrace_i_sz += 1;
#define RINGTRACE_I_SIZE_RINGTRACE_I_K_PTR(t, n, e) \
	ringtrace_i_sz = RINGTRACE_I_ALIGN_UP(ringtrace_i_sz, 8) + 8;
#define RINGTRACE_I_SIZE_RINGTRACE_I_K_ENUM(t, n, e, en) \
	ringtrace_i_sz = RINGTRACE_I_ALIGN_UP(ringtrace_i_sz, RINGTRACE_I_ALIGNOF(t)) + sizeof(t);
#define RINGTRACE_I_SIZE_RINGTRACE_I_K_ARRAY(t, n, e, c)                                \
	ringtrace_i_sz = RINGTRACE_I_ALIGN_UP(ringtrace_i_sz, RINGTRACE_I_ALIGNOF(t)) + \
			 sizeof(t) * (size_t)(c);
#define RINGTRACE_I_SIZE_RINGTRACE_I_K_STRING(t, n, e)                           \
	const char *ringtrace_i_s_##n = (e);                                     \
	size_t ringtrace_i_l_##n = ringtrace_strnlen_trunc_(                     \
		ringtrace_i_s_##n, RINGTRACE_STRING_MAX - 1, &ringtrace_i_trunc, \
		(uint8_t)(1u << (ringtrace_i_vi < 7 ? ringtrace_i_vi : 7)));     \
	ringtrace_i_vi++;                                                        \
	ringtrace_i_sz += ringtrace_i_l_##n + 1;
#define RINGTRACE_I_SIZE_RINGTRACE_I_K_BYTES(t, n, p, l)                                         \
	const void *ringtrace_i_s_##n = (p);                                                     \
	size_t ringtrace_i_l_##n = (size_t)(l);                                                  \
	if (!ringtrace_i_s_##n)                                                                  \
		ringtrace_i_l_##n = 0;                                                           \
	if (ringtrace_i_l_##n > RINGTRACE_BYTES_MAX) {                                           \
		ringtrace_i_l_##n = RINGTRACE_BYTES_MAX;                                         \
		ringtrace_i_trunc |= (uint8_t)(1u << (ringtrace_i_vi < 7 ? ringtrace_i_vi : 7)); \
	}                                                                                        \
	ringtrace_i_vi++;                                                                        \
	ringtrace_i_sz = RINGTRACE_I_ALIGN_UP(ringtrace_i_sz, 4) + 4 + ringtrace_i_l_##n;

/* Write: serialize each field at its aligned offset. */
#define RINGTRACE_I_WRITE_A(k, ...) RINGTRACE_I_WRITE_##k(__VA_ARGS__) RINGTRACE_I_WRITE_B
#define RINGTRACE_I_WRITE_B(k, ...) RINGTRACE_I_WRITE_##k(__VA_ARGS__) RINGTRACE_I_WRITE_A
#define RINGTRACE_I_WRITE_A_END
#define RINGTRACE_I_WRITE_B_END
#define RINGTRACE_I_WRITE_SCALAR_(t, v)                                                      \
	{                                                                                    \
		t ringtrace_i_v = (t)(v);                                                    \
		ringtrace_i_o = RINGTRACE_I_ALIGN_UP(ringtrace_i_o, RINGTRACE_I_ALIGNOF(t)); \
		memcpy(ringtrace_i_p + ringtrace_i_o, &ringtrace_i_v, sizeof(t));            \
		ringtrace_i_o += sizeof(t);                                                  \
	}
#define RINGTRACE_I_WRITE_RINGTRACE_I_K_INT(t, n, e) RINGTRACE_I_WRITE_SCALAR_(t, e)
#define RINGTRACE_I_WRITE_RINGTRACE_I_K_FLOAT(t, n, e) RINGTRACE_I_WRITE_SCALAR_(t, e)
#define RINGTRACE_I_WRITE_RINGTRACE_I_K_BOOL(t, n, e) \
	RINGTRACE_I_WRITE_SCALAR_(uint8_t, (e) ? 1 : 0)
#define RINGTRACE_I_WRITE_RINGTRACE_I_K_PTR(t, n, e) \
	RINGTRACE_I_WRITE_SCALAR_(uint64_t, (uintptr_t)(e))
#define RINGTRACE_I_WRITE_RINGTRACE_I_K_ENUM(t, n, e, en) RINGTRACE_I_WRITE_SCALAR_(t, e)
#define RINGTRACE_I_WRITE_RINGTRACE_I_K_ARRAY(t, n, e, c)                            \
	ringtrace_i_o = RINGTRACE_I_ALIGN_UP(ringtrace_i_o, RINGTRACE_I_ALIGNOF(t)); \
	memcpy(ringtrace_i_p + ringtrace_i_o, (e), sizeof(t) * (size_t)(c));         \
	ringtrace_i_o += sizeof(t) * (size_t)(c);
#define RINGTRACE_I_WRITE_RINGTRACE_I_K_STRING(t, n, e)                                      \
	if (ringtrace_i_l_##n)                                                               \
		memcpy(ringtrace_i_p + ringtrace_i_o, ringtrace_i_s_##n, ringtrace_i_l_##n); \
	ringtrace_i_p[ringtrace_i_o + ringtrace_i_l_##n] = 0;                                \
	ringtrace_i_o += ringtrace_i_l_##n + 1;
#define RINGTRACE_I_WRITE_RINGTRACE_I_K_BYTES(t, n, p, l)                        \
	{                                                                        \
		uint32_t ringtrace_i_v = (uint32_t)ringtrace_i_l_##n;            \
		ringtrace_i_o = RINGTRACE_I_ALIGN_UP(ringtrace_i_o, 4);          \
		memcpy(ringtrace_i_p + ringtrace_i_o, &ringtrace_i_v, 4);        \
		ringtrace_i_o += 4;                                              \
		if (ringtrace_i_l_##n)                                           \
			memcpy(ringtrace_i_p + ringtrace_i_o, ringtrace_i_s_##n, \
			       ringtrace_i_l_##n);                               \
		ringtrace_i_o += ringtrace_i_l_##n;                              \
	}

/* ---- the event macro ------------------------------------------------------ */

/* Declarations and the inline call site: in every translation unit. */
#define RINGTRACE_I_EVENT_DECL(name, proto, args)                                                  \
	RINGTRACE_I_EXTERN_C struct ringtrace_event_desc ringtrace_event_##name;                   \
	RINGTRACE_I_EXTERN_C void ringtrace_run_##name proto;                                      \
	RINGTRACE_I_EXTERN_C void ringtrace_rec_##name proto;                                      \
	typedef void(*ringtrace_probe_##name##_fn)                                                 \
		RINGTRACE_I_PREPEND(void *, RINGTRACE_I_UNPAREN proto);                            \
	/* Recording only: straight to the recording code, which then need not  \
	 * load the state again to know it; anything else to the dispatcher. */                  \
	static inline __attribute__((unused)) void trace_##name proto                              \
	{                                                                                          \
		uint32_t ringtrace_i_s = __atomic_load_n(&ringtrace_event_##name.state,            \
							 __ATOMIC_RELAXED);                        \
		if (__builtin_expect(ringtrace_i_s != 0, 0)) {                                     \
			if (__builtin_expect(ringtrace_i_s == RINGTRACE_EV_RECORD, 1))             \
				ringtrace_rec_##name args;                                         \
			else                                                                       \
				ringtrace_run_##name args;                                         \
		}                                                                                  \
	}                                                                                          \
	static inline __attribute__((unused)) int ringtrace_probe_register_##name(                 \
		ringtrace_probe_##name##_fn fn, void *data)                                        \
	{                                                                                          \
		return ringtrace_probe_register(&ringtrace_event_##name, (ringtrace_probe_fn)fn,   \
						data);                                             \
	}                                                                                          \
	static inline __attribute__((unused)) int ringtrace_probe_unregister_##name(               \
		ringtrace_probe_##name##_fn fn, void *data)                                        \
	{                                                                                          \
		return ringtrace_probe_unregister(&ringtrace_event_##name, (ringtrace_probe_fn)fn, \
						  data);                                           \
	}

/*
 * Definitions: the schema, the descriptor, its registration with the
 * process's registry (a constructor, so that events of a library loaded
 * with dlopen appear, and a destructor, so they go at dlclose), and the
 * out-of-line recording function.
 */
#define RINGTRACE_I_EVENT_DEF(kind, name, proto, args, fields, fmt)                                  \
	static const struct ringtrace_field_desc ringtrace_fields_##name[] = {                       \
		{"_truncated", RINGTRACE_FT_INT, 1, 0, 1, 0, NULL},                                  \
		RINGTRACE_I_SEQ(SCHEMA, fields)};                                                    \
	RINGTRACE_I_C_BEGIN struct ringtrace_event_desc ringtrace_event_##name = {                   \
		0,                                                                                   \
		0,                                                                                   \
		0,                                                                                   \
		(uint32_t)(kind),                                                                    \
		0,                                                                                   \
		#name,                                                                               \
		fmt,                                                                                 \
		__FILE__,                                                                            \
		ringtrace_fields_##name + ((0 RINGTRACE_I_SEQ(VARLEN, fields)) ? 0 : 1),             \
		(uint32_t)(sizeof(ringtrace_fields_##name) / sizeof(ringtrace_fields_##name[0]) -    \
			   ((0 RINGTRACE_I_SEQ(VARLEN, fields)) ? 0 : 1)),                           \
		0,                                                                                   \
		NULL,                                                                                \
		NULL,                                                                                \
		NULL};                                                                               \
	RINGTRACE_I_C_END                                                                            \
	/* Links the tracing runtime into a static link (ringtrace_runtime_). */                     \
	static const int *const ringtrace_i_anchor_##name                                            \
		__attribute__((used)) = &ringtrace_runtime_;                                         \
	__attribute__((constructor)) static void ringtrace_ctor_##name(void)                         \
	{                                                                                            \
		ringtrace_event_register(&ringtrace_event_##name);                                   \
	}                                                                                            \
	__attribute__((destructor)) static void ringtrace_dtor_##name(void)                          \
	{                                                                                            \
		ringtrace_event_unregister(&ringtrace_event_##name);                                 \
	}                                                                                            \
	/*                                                                                 \
	 * Everything but the common case: filters, triggers, probes, a thread's          \
	 * first event, page switches, drops. The record is built on the stack            \
	 * first (no clock read, nothing reserved), so that a filter can reject           \
	 * it for the cost of building it; then copied into the buffer.                   \
	 */         \
	static __attribute__((noinline)) void ringtrace_slow_##name RINGTRACE_I_PREPEND(             \
		uint32_t ringtrace_i_state, RINGTRACE_I_UNPAREN proto)                               \
	{                                                                                            \
		struct ringtrace_event_desc *ringtrace_i_ev = &ringtrace_event_##name;               \
		unsigned ringtrace_i_rd = ringtrace_read_lock();                                     \
		const struct ringtrace_event_ctl_ *ringtrace_i_ctl =                                 \
			(ringtrace_i_state & RINGTRACE_EV_CTL)                                       \
				? __atomic_load_n(&ringtrace_i_ev->ctl, __ATOMIC_ACQUIRE)            \
				: 0;                                                                 \
		ringtrace_rb *ringtrace_i_rb = (ringtrace_i_state & RINGTRACE_EV_RECORD)             \
						       ? ringtrace_events_buffer_()                  \
						       : 0;                                          \
		if (ringtrace_i_ctl || ringtrace_i_rb) {                                             \
			/* Slack: the compiler cannot see that filters read inside it. */            \
			RINGTRACE_I_BUILD_(fields,                                                   \
					   ringtrace_i_p = (char *)__builtin_alloca(                 \
						   RINGTRACE_I_ALIGN_UP(ringtrace_i_sz, 8) + 8))     \
			int ringtrace_i_keep = 1;                                                    \
			if (ringtrace_i_ctl)                                                         \
				ringtrace_i_keep = ringtrace_ctl_keep_(                              \
					ringtrace_i_ctl, ringtrace_i_p, ringtrace_i_sz,              \
					ringtrace_i_rd);                                             \
			if (ringtrace_i_keep && ringtrace_i_rb) {                                    \
				struct ringtrace_fres_ ringtrace_i_f;                                \
				/* Recording only, the thread's cache current, a size the  \
				 * inline path takes: ringtrace_rec_<event> has just tried \
				 * the inline reservation and been declined (a page switch \
				 * most often; it says so with RINGTRACE_EV_DECLINED_); the \
				 * general path, directly, which takes that attempt's clock \
				 * reading. */         \
				int ringtrace_i_tried = ringtrace_i_state ==                         \
								(RINGTRACE_EV_RECORD |               \
								 RINGTRACE_EV_DECLINED_) &&          \
							ringtrace_i_sz <=                            \
								RINGTRACE_MIN_MAX_PAYLOAD_ &&        \
							__atomic_load_n(&ringtrace_events_cookie_,   \
									__ATOMIC_RELAXED) ==         \
								ringtrace_thr_.cookie;               \
				char *ringtrace_i_q = ringtrace_i_tried                              \
							      ? (char *)0                            \
							      : (char *)ringtrace_reserve_fast_(     \
									ringtrace_i_rb,              \
									ringtrace_i_ev->id,          \
									ringtrace_i_sz,              \
									&ringtrace_i_f);             \
				if (ringtrace_i_q) {                                                 \
					memcpy(ringtrace_i_q, ringtrace_i_p, ringtrace_i_sz);        \
					ringtrace_commit_fast_(&ringtrace_i_f);                      \
					ringtrace_events_note_(ringtrace_i_rb, ringtrace_i_rd);      \
				} else if ((ringtrace_i_q =                                          \
						    (char *)(ringtrace_i_tried                       \
								     ? ringtrace_rb_reserve_general_ \
								     : ringtrace_rb_reserve)(        \
							    ringtrace_i_rb, ringtrace_i_ev->id,      \
							    ringtrace_i_sz))) {                      \
					memcpy(ringtrace_i_q, ringtrace_i_p, ringtrace_i_sz);        \
					ringtrace_rb_commit(ringtrace_i_rb);                         \
					ringtrace_events_note_(ringtrace_i_rb, ringtrace_i_rd);      \
				}                                                                    \
			}                                                                            \
			if (ringtrace_i_ctl && ringtrace_i_ctl->ntriggers)                           \
				ringtrace_triggers_run_(ringtrace_i_ctl, ringtrace_i_p,              \
							ringtrace_i_sz);                             \
		}                                                                                    \
		if (ringtrace_i_state & RINGTRACE_EV_PROBES) {                                       \
			const struct ringtrace_probe_set *ringtrace_i_ps = __atomic_load_n(          \
				&ringtrace_i_ev->probes, __ATOMIC_ACQUIRE);                          \
			for (uint32_t ringtrace_i_i = 0;                                             \
			     ringtrace_i_ps && ringtrace_i_i < ringtrace_i_ps->count;                \
			     ringtrace_i_i++)                                                        \
				((ringtrace_probe_##name##_fn)ringtrace_i_ps->probe[ringtrace_i_i]   \
					 .fn)                                                        \
					RINGTRACE_I_PREPEND(                                         \
						ringtrace_i_ps->probe[ringtrace_i_i].data,           \
						RINGTRACE_I_UNPAREN args);                           \
		}                                                                                    \
		ringtrace_read_unlock(ringtrace_i_rd);                                               \
	}                                                                                            \
	/*                                                                                 \
	 * The common case, recording only, written so that it makes no call:             \
	 * read-side section, inline reserve, fields, inline commit. Anything             \
	 * else goes to the slow function above, by a tail call.                          \
	 */         \
	RINGTRACE_I_DEFINE_C __attribute__((noinline)) void ringtrace_rec_##name proto               \
	{                                                                                            \
		/* Called for this state only (by the call site, which has just             \
		 * loaded it): one argument register fewer to keep for the slow          \
		 * call, which saves the push/pop of a register here. */        \
		const uint32_t ringtrace_i_state = RINGTRACE_EV_RECORD;                              \
		struct ringtrace_event_desc *ringtrace_i_ev = &ringtrace_event_##name;               \
		struct ringtrace_reader_node *ringtrace_i_n;                                         \
		if (__builtin_expect(ringtrace_read_enter_rec_(&ringtrace_i_n), 1)) {                \
			/* (declined: the slow call says so: its clock reading is          \
			 * there to take) */         \
			RINGTRACE_I_REC_IN_(                                                         \
				name, args, fields, ringtrace_read_unlock_fast_(ringtrace_i_n),      \
				RINGTRACE_I_DECLINED_(name, args,                                    \
						      ringtrace_read_unlock_fast_(ringtrace_i_n)))   \
		}                                                                                    \
		ringtrace_slow_##name RINGTRACE_I_PREPEND(ringtrace_i_state,                         \
							  RINGTRACE_I_UNPAREN args);                 \
	}                                                                                            \
	/* The same, called inside the read-side section (which it leaves). */                       \
	static __attribute__((noinline)) void ringtrace_recin_##name RINGTRACE_I_PREPEND(            \
		uint32_t ringtrace_i_state, RINGTRACE_I_UNPAREN proto)                               \
	{                                                                                            \
		struct ringtrace_event_desc *ringtrace_i_ev = &ringtrace_event_##name;               \
		RINGTRACE_I_REC_IN_(name, args, fields, ringtrace_read_unlock(0), (void)0)           \
		ringtrace_slow_##name RINGTRACE_I_PREPEND(ringtrace_i_state,                         \
							  RINGTRACE_I_UNPAREN args);                 \
	}                                                                                            \
	/* A fixed-size event whose filter needs the interpreter: called inside        \
	 * the read-side section (which it leaves). */             \
	static __attribute__((noinline)) void ringtrace_cfilt_##name RINGTRACE_I_PREPEND(            \
		uint32_t ringtrace_i_state, RINGTRACE_I_UNPAREN proto)                               \
	{                                                                                            \
		struct ringtrace_event_desc *ringtrace_i_ev = &ringtrace_event_##name;               \
		const struct ringtrace_event_ctl_ *ringtrace_i_ctl = __atomic_load_n(                \
			&ringtrace_i_ev->ctl, __ATOMIC_ACQUIRE);                                     \
		RINGTRACE_I_STAGE_(fields)                                                           \
		/* (read again: a filter removed since the entry read it leaves NULL) */             \
		if (ringtrace_i_ctl &&                                                               \
		    !ringtrace_ctl_keep_(ringtrace_i_ctl, ringtrace_i_p, ringtrace_i_sz, 0)) {       \
			ringtrace_read_unlock(0);                                                    \
			return;                                                                      \
		}                                                                                    \
		RINGTRACE_I_REC_IN_(name, args, fields, ringtrace_read_unlock(0), (void)0)           \
		ringtrace_slow_##name RINGTRACE_I_PREPEND(ringtrace_i_state,                         \
							  RINGTRACE_I_UNPAREN args);                 \
	}                                                                                            \
	/*                                                                                 \
	 * What the call site calls when the state is not recording only (and     \
	 * recording only again by now: straight to the code above).               \
	 * A fixed-size event with a filter of integer or float tests and no trigger: the \
	 * record is staged in a local and filtered inline, and a rejected call           \
	 * returns from here having touched no callee-saved register (so the              \
	 * compiler saves none); a passed one goes on to the recording code.              \
	 */         \
	RINGTRACE_I_DEFINE_C __attribute__((noinline)) void ringtrace_run_##name proto               \
	{                                                                                            \
		struct ringtrace_event_desc *ringtrace_i_ev = &ringtrace_event_##name;               \
		uint32_t ringtrace_i_state = __atomic_load_n(&ringtrace_i_ev->state,                 \
							     __ATOMIC_RELAXED);                      \
		struct ringtrace_reader_node *ringtrace_i_n;                                         \
		if (__builtin_expect(ringtrace_i_state == RINGTRACE_EV_RECORD, 1)) {                 \
			ringtrace_rec_##name args;                                                   \
			return;                                                                      \
		}                                                                                    \
		if (RINGTRACE_I_FIXED(fields) &&                                                     \
		    ringtrace_i_state == (RINGTRACE_EV_RECORD | RINGTRACE_EV_CTL) &&                 \
		    ringtrace_read_lock_fast_(&ringtrace_i_n)) {                                     \
			const struct ringtrace_event_ctl_ *ringtrace_i_ctl = __atomic_load_n(        \
				&ringtrace_i_ev->ctl, __ATOMIC_ACQUIRE);                             \
			uint32_t ringtrace_i_e = ringtrace_i_ctl ? ringtrace_i_ctl->entry : 0;       \
			if (__builtin_expect(ringtrace_i_e == RINGTRACE_FP_ONE, 1) ||                \
			    ringtrace_i_e == RINGTRACE_FP_PROG) {                                    \
				RINGTRACE_I_STAGE_(fields)                                           \
				(void)ringtrace_i_sz;                                                \
				if (!(__builtin_expect(ringtrace_i_e == RINGTRACE_FP_ONE, 1)         \
					      ? ringtrace_fast_pred_(&ringtrace_i_ctl->fast,         \
								     ringtrace_i_p)                  \
					      : ringtrace_fast_prog_(ringtrace_i_ctl->prog,          \
								     ringtrace_i_p))) {              \
					ringtrace_ctl_count_in_(ringtrace_i_ctl, ringtrace_i_n);     \
					ringtrace_read_unlock_fast_(ringtrace_i_n);                  \
					return;                                                      \
				}                                                                    \
				/* Passed: recorded, in the same section, by another           \
				 * function: a rejected call then returns from this one        \
				 * having saved no register. */     \
				ringtrace_recin_##name RINGTRACE_I_PREPEND(                          \
					ringtrace_i_state, RINGTRACE_I_UNPAREN args);                \
				return;                                                              \
			}                                                                            \
			if (ringtrace_i_e == RINGTRACE_FP_CALL) {                                    \
				/* Needs the interpreter: out of line, still in the            \
				 * section. */     \
				ringtrace_cfilt_##name RINGTRACE_I_PREPEND(                          \
					ringtrace_i_state, RINGTRACE_I_UNPAREN args);                \
				return;                                                              \
			}                                                                            \
			ringtrace_read_unlock(0);                                                    \
		}                                                                                    \
		ringtrace_slow_##name RINGTRACE_I_PREPEND(ringtrace_i_state,                         \
							  RINGTRACE_I_UNPAREN args);                 \
	}

/*
 * Inside a read-side section: if the events cookie is the one this thread
 * cached, record with the inline reserve/commit through the cached writer
 * state, leave the section and return; if nothing is to be recorded
 * (tracing off, no buffer), leave and return; else (a new buffer, a page
 * switch, a flush, the fence mode...) leave the section and fall through
 * to the caller's slow call. `unlock` leaves the section; `declined`, a
 * statement, runs first when the inline reservation was tried and
 * declined (ringtrace_rec_<event> notes it for its slow call). (The REC test
 * sits on the mismatch branch, not after a shared unlock: else clang keeps
 * the cookie in a callee-saved register across the record, and pushes it.)
 */
#define RINGTRACE_I_REC_IN_(name, args, fields, unlock, declined)                   \
	{                                                                           \
		uint64_t ringtrace_i_c = __atomic_load_n(&ringtrace_events_cookie_, \
							 __ATOMIC_ACQUIRE);         \
		if (__builtin_expect(ringtrace_i_c == ringtrace_thr_.cookie, 1)) {  \
			RINGTRACE_I_RECORD_(fields, unlock; return;, declined)      \
		} else if (!(ringtrace_i_c & RINGTRACE_EVC_REC)) {                  \
			unlock;                                                     \
			return;                                                     \
		}                                                                   \
		unlock;                                                             \
	}

/*
 * What ringtrace_rec_<event> does when its inline reservation declined:
 * leave the section and call the slow path with RINGTRACE_EV_DECLINED_
 * added (ringtrace/static/event.h), by a tail call.
 */
#define RINGTRACE_I_DECLINED_(name, args, unlock)                                               \
	unlock;                                                                                 \
	ringtrace_slow_##name RINGTRACE_I_PREPEND(RINGTRACE_EV_RECORD | RINGTRACE_EV_DECLINED_, \
						  RINGTRACE_I_UNPAREN args);                    \
	return

/*
 * Build a fixed-size record into a local array (the entry's filter path and
 * ringtrace_cfilt_<event> are only taken for fixed-size records; for the
 * others the alloca, never run, keeps the compiler from judging writes
 * against the one-word array).
 */
#define RINGTRACE_I_STAGE_(fields)                                                      \
	uint64_t ringtrace_i_stage[RINGTRACE_I_FIXED(fields)                            \
					   ? (0 RINGTRACE_I_SEQ(MAXSZ, fields)) / 8 + 2 \
					   : 1];                                        \
	RINGTRACE_I_BUILD_(                                                             \
		fields,                                                                 \
		ringtrace_i_p = RINGTRACE_I_FIXED(fields)                               \
					? (char *)ringtrace_i_stage                     \
					: (char *)__builtin_alloca(                     \
						  RINGTRACE_I_ALIGN_UP(ringtrace_i_sz, 8) + 8))

/* 1 if the event's record has a fixed size (no string or byte sequence). */
#define RINGTRACE_I_FIXED(fields) (!(0 RINGTRACE_I_SEQ(VARLEN, fields)))

/*
 * Size the record, get room for it with `alloc` (a statement that sets
 * ringtrace_i_p from ringtrace_i_sz, or leaves it NULL), and write the
 * fields there. Leaves ringtrace_i_sz and ringtrace_i_p in scope.
 */
#define RINGTRACE_I_BUILD_(fields, alloc)                                         \
	size_t ringtrace_i_sz = (0 RINGTRACE_I_SEQ(VARLEN, fields)) ? 1 : 0;      \
	uint8_t ringtrace_i_trunc = 0;                                            \
	unsigned ringtrace_i_vi = 0;                                              \
	RINGTRACE_I_SEQ(SIZE, fields)                                             \
	(void)ringtrace_i_vi;                                                     \
	(void)ringtrace_i_trunc;                                                  \
	char *ringtrace_i_p = 0;                                                  \
	alloc;                                                                    \
	if (ringtrace_i_p) {                                                      \
		size_t ringtrace_i_o = 0;                                         \
		if (0 RINGTRACE_I_SEQ(VARLEN, fields))                            \
			ringtrace_i_p[ringtrace_i_o++] = (char)ringtrace_i_trunc; \
		RINGTRACE_I_SEQ(WRITE, fields)                                    \
		(void)ringtrace_i_o;                                              \
	}

/*
 * Size, reserve (inline, through the thread's cached writer state; only
 * records that fit any buffer), write, commit; then run `after`.
 */
#define RINGTRACE_I_RECORD_(fields, after, declined)                                              \
	{                                                                                         \
		struct ringtrace_fres_ ringtrace_i_f;                                             \
		RINGTRACE_I_BUILD_(                                                               \
			fields, ringtrace_i_p = ringtrace_i_sz <= RINGTRACE_MIN_MAX_PAYLOAD_      \
							? (char *)ringtrace_reserve_at_(          \
								  ringtrace_thr_.last_t,          \
								  &ringtrace_i_ev->id_hdr,        \
								  ringtrace_i_sz, &ringtrace_i_f) \
							: (char *)0)                              \
		if (ringtrace_i_p) {                                                              \
			ringtrace_commit_fast_(&ringtrace_i_f);                                   \
			after                                                                     \
		} else if (ringtrace_i_sz <= RINGTRACE_MIN_MAX_PAYLOAD_) {                        \
			declined;                                                                 \
		}                                                                                 \
	}

#endif /* RINGTRACE_STATIC_TRACEPOINT_H */
