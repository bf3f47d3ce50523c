/*
 * ringtrace/schema.h - what an event record holds: field types, the
 * schema of a record, and decoding and formatting records by it.
 *
 * A record is its fields in order, each at an offset aligned to the
 * field's alignment (relative to the payload start, itself 8-aligned):
 * scalars and arrays in native little-endian form, strings NUL-terminated,
 * byte sequences as a 4-aligned u32 length followed by the bytes. The
 * same schema describes a record in the tracing library (the registry,
 * filters), in a trace's metadata and in the trace reader.
 *
 * Contracts:
 *  - Nothing here trusts a record: every offset and length is checked
 *    against the record's length; a damaged record gives
 *    -RINGTRACE_ECORRUPT with a message naming the field and offset.
 *  - Pure code: no global state, no locks, no allocation (formatting uses
 *    the caller's buffer and a bounded stack area).
 *
 * This header compiles as C and as C++.
 */
#ifndef RINGTRACE_SCHEMA_H
#define RINGTRACE_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#include "ringtrace/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Field types of the record schema. */
enum ringtrace_ftype {
	RINGTRACE_FT_INT = 1,         /* size 1/2/4/8, is_signed */
	RINGTRACE_FT_FLOAT = 2,       /* size 4/8 */
	RINGTRACE_FT_BOOL = 3,        /* 1 byte, 0 or 1 */
	RINGTRACE_FT_ENUM = 4,        /* integer (size, is_signed) with named values */
	RINGTRACE_FT_POINTER = 5,     /* 8 bytes */
	RINGTRACE_FT_ARRAY = 6,       /* `count` integers of `size` bytes */
	RINGTRACE_FT_FLOAT_ARRAY = 7, /* `count` floats of `size` bytes */
	RINGTRACE_FT_STRING = 8,      /* NUL-terminated, at most `count` bytes with the NUL */
	RINGTRACE_FT_BYTES = 9,       /* u32 length (4-aligned) then bytes, at most `count` */
};

/* Variable-length limits (the NUL included for strings). */
#define RINGTRACE_STRING_MAX 1024u
#define RINGTRACE_BYTES_MAX 4096u

/* Event kinds, for timeline exporters. */
enum ringtrace_event_kind {
	RINGTRACE_KIND_INSTANT = 0,
	RINGTRACE_KIND_BEGIN = 1,
	RINGTRACE_KIND_END = 2,
	RINGTRACE_KIND_COUNTER = 3,
};

/* Event ids below this are reserved: 0 is ringtrace_printf, 1 for future use. */
#define RINGTRACE_EVENT_ID_PRINTF 0u
#define RINGTRACE_EVENT_ID_FIRST 2u

struct ringtrace_enum_value {
	const char *name;
	int64_t value;
};

struct ringtrace_enum_desc {
	const char *name;
	const struct ringtrace_enum_value *values;
	uint32_t count;
};

/*
 * One field of a record. Fields are laid out in order, each at an offset
 * aligned to `align` (relative to the payload start, itself 8-aligned).
 */
struct ringtrace_field_desc {
	const char *name;
	uint8_t type; /* enum ringtrace_ftype */
	uint8_t size; /* scalar or element size, bytes */
	uint8_t is_signed;
	uint8_t align;
	uint32_t count; /* array length; max length for strings and bytes */
	const struct ringtrace_enum_desc *enm;
};

struct ringtrace_value {
	const struct ringtrace_field_desc *field;
	union {
		int64_t i;  /* INT (signed), ENUM (signed) */
		uint64_t u; /* INT (unsigned), ENUM, BOOL, POINTER */
		double f;   /* FLOAT */
	} v;
	const void *ptr; /* ARRAY, FLOAT_ARRAY: elements; STRING: chars; BYTES: bytes */
	uint32_t len;    /* ARRAY: count; STRING: length without NUL; BYTES: length */
	uint32_t offset; /* offset of the field in the payload */
};

/*
 * Decode a record's payload by its schema into values[0 .. nfields-1].
 * Returns the number of fields decoded, or -RINGTRACE_ECORRUPT with a
 * message naming the field and offset where the record is damaged.
 */
int ringtrace_record_decode(const struct ringtrace_field_desc *fields, uint32_t nfields,
			    const void *payload, size_t len, struct ringtrace_value *values);

/*
 * Format a record with its print format (one conversion per field, in
 * order; %s takes any field) into buf. Returns the length that would
 * have been written (like snprintf), or a negative error.
 */
int ringtrace_record_format(const char *print_fmt, const struct ringtrace_field_desc *fields,
			    uint32_t nfields, const void *payload, size_t len, char *buf,
			    size_t size);

/* ---- binary printf records (ringtrace/printf.h) ------------------------------ */

/* Argument types as a ringtrace_printf call site records them. */
enum ringtrace_pf_type {
	RINGTRACE_PF_S64 = 1,
	RINGTRACE_PF_U64 = 2,
	RINGTRACE_PF_DOUBLE = 3,
	RINGTRACE_PF_STRING = 4,
	RINGTRACE_PF_POINTER = 5,
};

#define RINGTRACE_PRINTF_MAX_ARGS 8

/*
 * Format a ringtrace_printf record's payload with its call site's format
 * and argument types. Returns the length that would have been written (as
 * snprintf), or -RINGTRACE_ECORRUPT with a message if the record does not
 * match the site (an argument that does not fit in the record's argument
 * bytes).
 */
int ringtrace_printf_format(const char *fmt, const uint8_t *types, uint32_t nargs,
			    const void *payload, size_t len, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif /* RINGTRACE_SCHEMA_H */
