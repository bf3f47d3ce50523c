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

#include <stdio.h>

#include "ringtrace/ring.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Write the TSDL metadata describing the pages of `rb` and every event the
 * registry knows (libraries since unloaded included, ringtrace_printf
 * records as a call-site id plus a byte sequence). Returns 0, or a negative
 * error with a message (a write error names errno).
 */
int ringtrace_ctf_write_metadata(const ringtrace_rb *rb, FILE *out);

#ifdef __cplusplus
}
#endif
#endif
