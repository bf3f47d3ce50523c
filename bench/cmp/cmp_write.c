/*
 * cmp-write and cmp-ftrace: one write(2) of 8 bytes per event.
 *
 * cmp-write writes to /dev/null: the cost of the system call alone, the
 * baseline of every tracer that goes through the kernel.
 * cmp-ftrace (built from this file with CMP_FTRACE) writes the same 8 bytes
 * to a tracefs trace_marker_raw file (--file, set up by bench/compare in a
 * tracefs instance of its own): the first 4 bytes are the marker id, the
 * next 4 the int, which the kernel copies into its ftrace ring buffer as a
 * raw_data event. This is how a user-space program records into ftrace.
 * The kernel's per-CPU buffer counters (entries, overrun, dropped) are read
 * by the script, not here.
 */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "cmp.h"

#ifdef CMP_FTRACE
static const char backend_name[] = "ftrace-marker";
#else
static const char backend_name[] = "write-devnull";
#endif

static int cmp_fd = -1;

static inline void cmp_emit(int v)
{
	uint32_t rec[2] = {1u /* marker id */, (uint32_t)v};
	if (write(cmp_fd, rec, sizeof(rec)) != (ssize_t)sizeof(rec))
		cmp_die("write: short or failed");
}

static int backend_init(struct cmp_opts *o)
{
#ifdef CMP_FTRACE
	if (!o->file)
		cmp_die("cmp-ftrace needs --file PATH/trace_marker_raw");
#else
	if (!o->file)
		o->file = "/dev/null";
#endif
	cmp_fd = open(o->file, O_WRONLY | O_CLOEXEC);
	if (cmp_fd < 0)
		cmp_die("%s: %s", o->file, strerror(errno));
	return 0;
}

CMP_NO_READY

static void backend_finish(struct cmp_opts *o, struct cmp_result *r)
{
	(void)o;
	close(cmp_fd);
#ifndef CMP_FTRACE
	cmp_result_none(r);
#else
	(void)r;
#endif
}

#include "cmp_harness.h"
