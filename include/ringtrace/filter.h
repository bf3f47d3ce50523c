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

#include "ringtrace/event.h"

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
int ringtrace_filter_match(const ringtrace_filter *f, const void *payload, size_t len);

void ringtrace_filter_free(ringtrace_filter *f);

#ifdef __cplusplus
}
#endif

#endif /* RINGTRACE_FILTER_H */
