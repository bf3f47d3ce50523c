/*
 * Field descriptions: what a record may hold. One set of rules, used by
 * the decoder, the filter compiler and the trace reader's schema parser.
 */
#include <stdio.h>

#include "schema/schema_api.h"

int rt_field_check(const struct ringtrace_field_desc *f, char *buf, size_t size, const char **why)
{
	unsigned sz = f->size, al = f->align;
	int szok = sz == 1 || sz == 2 || sz == 4 || sz == 8;
	const char *fmt = NULL;
	unsigned arg = 0;
	if (f->is_signed > 1)
		fmt = "is_signed %u is not 0 or 1", arg = f->is_signed;
	else if (al > 8 || (al & (al - 1)))
		fmt = "alignment %u is invalid", arg = al;
	else {
		switch (f->type) {
		case RINGTRACE_FT_INT:
		case RINGTRACE_FT_ENUM:
		case RINGTRACE_FT_ARRAY:
			if (!szok)
				fmt = "size %u is invalid", arg = sz;
			break;
		case RINGTRACE_FT_FLOAT:
		case RINGTRACE_FT_FLOAT_ARRAY:
			if (sz != 4 && sz != 8)
				fmt = "float size %u is invalid", arg = sz;
			break;
		case RINGTRACE_FT_BOOL:
			if (sz != 1)
				fmt = "bool size %u is invalid", arg = sz;
			break;
		case RINGTRACE_FT_POINTER:
			if (sz != 8)
				fmt = "pointer size %u is invalid", arg = sz;
			break;
		case RINGTRACE_FT_STRING:
		case RINGTRACE_FT_BYTES:
			break;
		default:
			fmt = "unknown type %u", arg = f->type;
		}
	}
	if (!fmt && (f->type == RINGTRACE_FT_ARRAY || f->type == RINGTRACE_FT_FLOAT_ARRAY) &&
	    (uint64_t)f->count * sz > 0xFFFFu)
		fmt = "array of %u elements does not fit in an event", arg = f->count;
	if (!fmt)
		return 0;
	snprintf(buf, size, fmt, arg);
	*why = buf;
	return -1;
}

const char *rt_field_type_name(const struct ringtrace_field_desc *f)
{
	switch (f->type) {
	case RINGTRACE_FT_INT:
		return f->is_signed ? "signed integer" : "unsigned integer";
	case RINGTRACE_FT_FLOAT:
		return "float";
	case RINGTRACE_FT_BOOL:
		return "bool";
	case RINGTRACE_FT_ENUM:
		return "enum";
	case RINGTRACE_FT_POINTER:
		return "pointer";
	case RINGTRACE_FT_ARRAY:
		return "array";
	case RINGTRACE_FT_FLOAT_ARRAY:
		return "float array";
	case RINGTRACE_FT_STRING:
		return "string";
	case RINGTRACE_FT_BYTES:
		return "bytes";
	default:
		return "unknown";
	}
}

uint64_t rt_field_fixed_bytes(const struct ringtrace_field_desc *f)
{
	switch (f->type) {
	case RINGTRACE_FT_STRING:
	case RINGTRACE_FT_BYTES:
		return 0;
	case RINGTRACE_FT_ARRAY:
	case RINGTRACE_FT_FLOAT_ARRAY:
		return (uint64_t)f->size * f->count;
	default:
		return f->size;
	}
}
