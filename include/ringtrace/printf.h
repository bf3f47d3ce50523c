/*
 * ringtrace/printf.h - binary printf, in the manner of the kernel's
 * trace_printk().
 *
 *   ringtrace_printf("req %d took %llu us on %s", id, us, host);
 *
 * The compiler checks the format against the arguments (format(printf)).
 * The call site records only an id for the format (registered once per
 * call site, on its first enabled call) and the raw argument values: the
 * argument types are worked out at compile time (_Generic in C, overloads
 * in C++), so nothing parses the format while recording. Strings are
 * copied (up to RINGTRACE_STRING_MAX bytes). Formatting happens when the
 * trace is read (ringtrace_printf_format(), ringtrace/schema.h): parsing
 * a format at record time would cost about as much as the whole event.
 *
 * Up to 8 arguments. The format must be a string literal. Arguments for %p
 * must be pointers (any pointer type in C++, void * in C). Recording is
 * enabled like an event: ringtrace_event_enable("ringtrace_printf").
 *
 * Record layout (event id RINGTRACE_EVENT_ID_PRINTF): u32 site id, u32
 * number of argument bytes that follow (so that CTF can describe the
 * record as a byte sequence), then per argument: a string as u32 length +
 * bytes (no NUL) then padding to 8; anything else padded to 8 then 8 bytes
 * (int64, uint64, double or pointer). The count and types of the
 * arguments are the call site's.
 *
 * This header compiles as C and as C++.
 */
#ifndef RINGTRACE_PRINTF_H
#define RINGTRACE_PRINTF_H

#include <stddef.h>
#include <stdint.h>

#include "ringtrace/event.h"
#include "ringtrace/schema.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A call site: static in the calling code, registered at its first enabled call. */
struct ringtrace_printf_site {
	const char *fmt;
	const char *file;
	uint32_t line;
	uint32_t id; /* 0 until the first enabled call registers it */
	uint32_t nargs;
	uint32_t pad;
	const uint8_t *types; /* enum ringtrace_pf_type per argument */
	const int *runtime;   /* &ringtrace_runtime_ (links the runtime in; unused) */
};

/* The registered call site with this id, or NULL. */
const struct ringtrace_printf_site *ringtrace_printf_site_by_id(uint32_t id);
/* Number of call sites registered so far (ids are 1 .. n). */
uint32_t ringtrace_printf_site_count(void);

#ifdef __cplusplus
}
#endif

#include "ringtrace/static/printf.h"

#define ringtrace_printf(...) \
	RINGTRACE_I_PF_CAT(RINGTRACE_I_PF_, RINGTRACE_I_PF_NARGS(__VA_ARGS__))(__VA_ARGS__)

#endif /* RINGTRACE_PRINTF_H */
