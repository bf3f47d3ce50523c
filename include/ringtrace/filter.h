/*
 * ringtrace/filter.h - filter expressions over event records (the ftrace
 * filter syntax), compiled once against an event's schema and evaluated
 * against record payloads.
 *
 * Syntax:
 *   expr   := expr "||" expr | expr "&&" expr | "!" expr | "(" expr ")" | pred
 *   pred   := FIELD OP VALUE
 * Precedence, highest first: "!", the predicates, "&&", "||".
 *
 *  - Integer, bool, enum and pointer fields: == != < <= > >= with an
 *    integer literal (decimal or 0x hex, optionally negative), compared
 *    as int64 for signed fields and as uint64 for unsigned ones; a
 *    negative literal for an unsigned field is an error. `FIELD & MASK`
 *    is true when the field's value and MASK share a set bit.
 *  - Enum fields also take a quoted value name with == and !=.
 *  - Float fields: the six comparisons with an integer or float literal,
 *    as double (a literal for a 4-byte float field is first rounded to
 *    float, so that `x == 0.1` matches a float recorded as 0.1f).
 *  - String fields: == and != with a "quoted" literal, and `~` with a
 *    quoted glob (fnmatch: * ? [...]). Byte-sequence fields: == and !=
 *    with a quoted literal (the exact bytes). In quoted literals, \" and
 *    \\ stand for " and \; any other backslash is kept as it is (so a
 *    glob can still escape * with \*).
 *  - Array fields cannot be filtered on. The hidden `_truncated` field is
 *    an ordinary u8 field.
 *
 * Contracts:
 *  - A compiled filter is immutable: any number of threads may call
 *    ringtrace_filter_match() on it at once. It keeps a copy of what it
 *    needs from the schema (the caller's field array may go away).
 *  - ringtrace_filter_match() does not allocate, format or lock; it is
 *    async-signal-safe except for glob predicates (fnmatch, which may
 *    consult the locale).
 *  - A record is not trusted: every offset and length the filter reads
 *    is checked against the record's length. A record shorter than the
 *    fixed-size prefix of its schema, or damaged where the filter has to
 *    look, is rejected (0) whatever the expression.
 *
 * This header compiles as C and as C++.
 */
#ifndef RINGTRACE_FILTER_H
#define RINGTRACE_FILTER_H

#include <stddef.h>
#include <stdint.h>

#include "ringtrace/error.h"
#include "ringtrace/schema.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ringtrace_filter ringtrace_filter;

/*
 * Compile `expr` against the schema fields[0 .. nfields-1]. Returns 0 and
 * the filter in *out, or -RINGTRACE_EINVAL with a message
 * (ringtrace_last_error) naming the problem and its 1-based column, which
 * is also stored in *err_column (if not NULL; 0 on success, and 0 when the
 * schema itself is invalid), or -RINGTRACE_ENOMEM.
 */
int ringtrace_filter_compile(const struct ringtrace_field_desc *fields, uint32_t nfields,
			     const char *expr, ringtrace_filter **out, unsigned *err_column);

/* 1: the record matches; 0: it does not, or it is malformed. */
int ringtrace_filter_match(const struct ringtrace_filter *f, const void *payload, size_t len);

void ringtrace_filter_free(ringtrace_filter *f);

/* ---- filters on events ------------------------------------------------------
 *
 * An event's filter decides what is recorded: a call whose record does not
 * match is not written into the buffer (it reads no clock and reserves
 * nothing) and is counted in the event's `rejected` counter
 * (ringtrace_event_info, `ringtrace stat`). Probes still see every call;
 * triggers have filters of their own.
 *
 * The expression is compiled once, when it is set, against each matching
 * event's schema. Setting, replacing and removing a filter is safe while
 * other threads call the tracepoint: the old filter is freed after a grace
 * period, and a call uses either the old or the new one, never a mix.
 * Like the enable rules, a filter set on a pattern also applies to events
 * loaded later whose name matches it (a compile error then is reported on
 * stderr and that event is not recorded).
 */

/*
 * Set the filter of every loaded event matching `pattern` (exact name or
 * glob; "a,b*" for several) to `expr`; NULL or "" removes it. Either every
 * matching event gets the filter or, on error, none does: returns the
 * number of loaded events matched (>= 1), -RINGTRACE_EINVAL with a message
 * naming the event, the problem and its column (also in *err_column if not
 * NULL), or -RINGTRACE_ENOENT if nothing is loaded that matches (the rule
 * is kept for events loaded later).
 */
int ringtrace_event_set_filter(const char *pattern, const char *expr, unsigned *err_column);

/* The filter expression of a loaded event, copied into buf (truncated to
 * size); returns its length, 0 if the event has none, or -RINGTRACE_ENOENT. */
int ringtrace_event_get_filter(const char *name, char *buf, size_t size);

/*
 * "PATTERN:EXPR;PATTERN:EXPR..." (a ';' or ':' inside a quoted string is
 * part of the expression): what RINGTRACE_FILTERS holds at process start
 * and `ringtrace record -e EVENT -f EXPR` passes to the program. All or
 * nothing, as above; 0 or the first error.
 */
int ringtrace_filters_configure(const char *spec);

/* ---- triggers ------------------------------------------------------------------
 *
 *   EVENT [if EXPR]: ACTION[:N]
 *
 * When EVENT is called and its record matches EXPR (if given), ACTION
 * runs, at most N times in all (per matching event) if :N is given:
 *   snapshot             write the session's buffer out as a complete trace
 *                        (DIR.snapshot-K, next to the session's directory)
 *                        while tracing goes on; done by the recorder's
 *                        thread, woken at once
 *   traceoff, traceon    ringtrace_tracing_off() / _on()
 *   enable_event:NAME    start / stop recording event NAME (an exact
 *   disable_event:NAME   name; it may be loaded later)
 * EVENT is an exact name or a glob. A trigger fires on calls whether or
 * not the event is recorded and whatever its filter; the triggering event
 * itself is recorded (if it is) before the action runs. Actions run in the
 * calling thread, inside the tracepoint: they are async-signal-safe and
 * take no lock.
 */
enum ringtrace_trigger_action {
	RINGTRACE_TRIGGER_SNAPSHOT = 1,
	RINGTRACE_TRIGGER_TRACEOFF = 2,
	RINGTRACE_TRIGGER_TRACEON = 3,
	RINGTRACE_TRIGGER_ENABLE_EVENT = 4,
	RINGTRACE_TRIGGER_DISABLE_EVENT = 5,
};

/*
 * Add a trigger. Returns its id (>= 1), or -RINGTRACE_EINVAL with a
 * message and column (*err_column if not NULL; 1-based in `spec`), or
 * -RINGTRACE_ENOMEM. If no loaded event matches EVENT, the trigger waits
 * for one to be loaded (not an error).
 */
int ringtrace_trigger_add(const char *spec, unsigned *err_column);
/* Remove a trigger: 0 or -RINGTRACE_ENOENT. When it returns, the action no
 * longer runs. */
int ringtrace_trigger_remove(int id);
/* ';'-separated triggers (RINGTRACE_TRIGGERS, `ringtrace record --trigger`):
 * all or nothing; 0 or the first error. */
int ringtrace_triggers_configure(const char *spec);

struct ringtrace_trigger_info {
	int id;
	enum ringtrace_trigger_action action;
	const char *spec;  /* as given; valid until the trigger is removed */
	uint64_t fired;    /* times the action ran */
	uint64_t skipped;  /* matched but not run: count used up, or a snapshot with no session */
	int64_t remaining; /* -1: no limit; else runs left (summed over its events) */
};
/* Number of triggers; index them 0 .. n-1 (order of addition). */
uint32_t ringtrace_trigger_count(void);
int ringtrace_trigger_get(uint32_t index, struct ringtrace_trigger_info *out);

/* ---- tracing on / off ----------------------------------------------------------
 *
 * The global switch of the traceoff / traceon triggers: while off, no
 * event is recorded (and none is counted as dropped), triggers still run.
 * Async-signal-safe; a session start does not change it.
 */
void ringtrace_tracing_off(void);
void ringtrace_tracing_on(void);
int ringtrace_tracing_is_on(void);

#ifdef __cplusplus
}
#endif

#endif /* RINGTRACE_FILTER_H */
