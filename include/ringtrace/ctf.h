/*
 * ringtrace/ctf.h - Common Trace Format 1.8 metadata for ringtrace pages.
 *
 * A ring-buffer page is a CTF packet as it is (docs/format.md). To make a
 * trace directory, write each stream's pages unchanged into a file of its
 * own and this metadata next to them in a file named "metadata";
 * babeltrace2 and Trace Compass then read it.
 *
 * This header compiles as C and as C++.
 */
#ifndef RINGTRACE_CTF_H
#define RINGTRACE_CTF_H

#include <stdint.h>
#include <stdio.h>

#include "ringtrace/ring.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The recorder's accounting, stored in the metadata's schema block. */
struct ringtrace_trace_stats {
	uint64_t hit, missed, overrun, read;
	uint64_t pages, bytes;     /* written to the stream files */
	uint64_t duration_ns;
	uint32_t mode;             /* enum ringtrace_rb_mode */
};

/*
 * Write the TSDL metadata describing the pages of `rb` and every event the
 * registry knows (libraries since unloaded included, ringtrace_printf
 * records as a call-site id plus a byte sequence), followed by the
 * ringtrace-schema comment block (docs/format.md, section 7) with `stats`
 * if not NULL. Returns 0, or a negative error with a message (a write
 * error names errno).
 */
int ringtrace_ctf_write_metadata(const ringtrace_rb *rb, FILE *out,
				 const struct ringtrace_trace_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
