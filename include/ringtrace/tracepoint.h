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
 * Out of line, per event: ringtrace_rec_<name> (what the call site calls
 * when the event is recorded and nothing else) records with an inline
 * reserve/commit; ringtrace_run_<name> (what it calls in any other state),
 * when the event has a filter (ringtrace/filter.h), builds the record in a
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
 * not have side effects. They are evaluated inside the write (between the
 * reservation and the commit): they must not throw, longjmp or fault, or
 * the thread's writer stays inside that write (ringtrace_rb_reserve). Events need at least one argument. RINGTRACE_EVENT_KIND() is the same
 * with a kind first (RINGTRACE_KIND_INSTANT, _BEGIN, _END, _COUNTER),
 * which timeline exporters use.
 *
 * The machinery behind these macros is in ringtrace/static/tracepoint.h
 * (version-locked: a program must be built with the headers of the
 * library it runs with). Everything here compiles as C (gnu11) and as C++
 * (C++11 or later).
 */
#ifndef RINGTRACE_TRACEPOINT_H
#define RINGTRACE_TRACEPOINT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ringtrace/event.h"
#include "ringtrace/printf.h"
#include "ringtrace/static/tracepoint.h"

#define RINGTRACE_PROTO(...) (__VA_ARGS__)
#define RINGTRACE_ARGS(...) (__VA_ARGS__)
#define RINGTRACE_FIELDS(...) __VA_ARGS__
#define RINGTRACE_PRINT(fmt) fmt

/* ---- field macros: each becomes a tuple (KIND, TYPE, NAME, ...) --------- */

#define ringtrace_integer(type, name, expr) (RINGTRACE_I_K_INT, type, name, expr)
#define ringtrace_float(type, name, expr) (RINGTRACE_I_K_FLOAT, type, name, expr)
#define ringtrace_bool(name, expr) (RINGTRACE_I_K_BOOL, uint8_t, name, expr)
#define ringtrace_pointer(name, expr) (RINGTRACE_I_K_PTR, uint64_t, name, expr)
#define ringtrace_enum(enm, type, name, expr) (RINGTRACE_I_K_ENUM, type, name, expr, enm)
#define ringtrace_array(type, name, ptr, count) (RINGTRACE_I_K_ARRAY, type, name, ptr, count)
#define ringtrace_string(name, expr) (RINGTRACE_I_K_STRING, char, name, expr)
#define ringtrace_bytes(name, ptr, len) (RINGTRACE_I_K_BYTES, uint8_t, name, ptr, len)

/* ---- enums --------------------------------------------------------------- */

/*
 *   RINGTRACE_ENUM(task_state,
 *       RINGTRACE_ENUM_VALUE("RUNNING", 0)
 *       RINGTRACE_ENUM_VALUE("SLEEPING", 1))
 * in the events header; usable by ringtrace_enum(task_state, ...).
 */
#define RINGTRACE_ENUM_VALUE(str, val) {str, (int64_t)(val)},

#endif /* RINGTRACE_TRACEPOINT_H */

/*
 * Outside the include guard: re-read at every inclusion, so that a file
 * defining RINGTRACE_CREATE_EVENTS gets the definitions even when
 * tracepoint.h was already included.
 */
#undef RINGTRACE_ENUM
#ifdef RINGTRACE_CREATE_EVENTS
#define RINGTRACE_ENUM(name, ...)                                                                \
	static const struct ringtrace_enum_value ringtrace_enum_values_##name[] = {__VA_ARGS__}; \
	static const struct ringtrace_enum_desc ringtrace_enum_##name = {                        \
		#name, ringtrace_enum_values_##name,                                             \
		sizeof(ringtrace_enum_values_##name) / sizeof(ringtrace_enum_values_##name[0])};
#else
#define RINGTRACE_ENUM(name, ...)
#endif
#undef RINGTRACE_EVENT_KIND
#undef RINGTRACE_EVENT
#ifdef RINGTRACE_CREATE_EVENTS
#define RINGTRACE_EVENT_KIND(kind, name, proto, args, fields, fmt) \
	RINGTRACE_I_EVENT_DECL(name, proto, args)                  \
	RINGTRACE_I_EVENT_DEF(kind, name, proto, args, fields, fmt)
#else
#define RINGTRACE_EVENT_KIND(kind, name, proto, args, fields, fmt) \
	RINGTRACE_I_EVENT_DECL(name, proto, args)
#endif
#define RINGTRACE_EVENT(name, proto, args, fields, fmt) \
	RINGTRACE_EVENT_KIND(RINGTRACE_KIND_INSTANT, name, proto, args, fields, fmt)
