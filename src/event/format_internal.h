/* Shared by printf.c and decode.c: formatting decoded values with a printf format. */
#ifndef RINGTRACE_EVENT_FORMAT_INTERNAL_H
#define RINGTRACE_EVENT_FORMAT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/internal.h"

/* One value to format: type is an enum ringtrace_pf_type. */
struct rt_arg {
	uint8_t type;
	uint64_t v;
	const char *s;   /* RINGTRACE_PF_STRING: the bytes (not NUL-terminated) */
	uint32_t slen;
};

/*
 * Format with a printf format and decoded arguments: each conversion is
 * cut out of the format, its length modifier replaced by one that fits
 * the recorded 64-bit value, and handed to snprintf alone. Returns the
 * length that would have been written (saturated at INT_MAX).
 */
RT_HIDDEN int rt_format_args(const char *fmt, const struct rt_arg *args, uint32_t nargs, char *buf,
			     size_t size);

#endif
