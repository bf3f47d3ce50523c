/*
 * src/read/trace_internal.h - the trace reader (ringtrace/trace.h), shared
 * by its files:
 *   trace.c   opening a trace directory, its metadata (through the ctf
 *             layer's parser), accessors
 *   stream.c  stream files: walking their packets with the page cursor,
 *             losses between packets, merging all streams by timestamp
 *   text.c    records as text: fields by their print format (the schema
 *             layer's formatter) and report lines
 *   json.c    the Chrome/Perfetto trace event format
 * The reader library links base, the page cursor of ring, schema, the
 * ctf parser and these: no constructor, no registry, no session.
 */
#ifndef RINGTRACE_READ_TRACE_INTERNAL_H
#define RINGTRACE_READ_TRACE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "ctf/ctf_api.h"
#include "ringtrace/trace.h"
#include "schema/schema_api.h"

#define RT_TRACE_MAX_STREAMS 65536u

/* An event's print format, cut into pieces once (text.c). */
struct rt_plan {
	int state; /* 0 not cut yet, 1 cut, 2 cut failed: format as it goes */
	uint32_t nseg;
	struct rt_fmt_seg *seg;
};

struct rt_tstream {
	struct ringtrace_trace_stream_info info;
	const unsigned char *map; /* the whole file, read-only (NULL if empty) */
	size_t size;
	uint64_t pkt_off;  /* file offset of the current packet */
	uint64_t next_pkt; /* file offset of the next packet */
	const struct ringtrace_page_header *page;
	struct ringtrace_page_cursor cur;
	struct ringtrace_page_header prev; /* last good packet header */
	int have_prev;
	int in_page;
	int truncated; /* the current packet runs past the end of the file */
	int dead;      /* no more packets can be read */
	int tail_done; /* the metadata's drops after the last packet were given */
	int no_file;   /* a stream of a `dropped` or `unwritten` line only: no page */
	/* its `unwritten` line's events: those still to find in the gaps
	 * between its pages, and those after its last page */
	uint64_t uw_gap_left, uw_tail, tail_overrun;
	uint32_t cpu;
	char comm[17];
	struct ringtrace_trace_record item; /* the stream's next record */
};

struct ringtrace_trace {
	char *dir;
	ringtrace_trace_error_fn err;
	void *err_arg;
	uint64_t errors;
	struct rt_arena arena;

	struct rt_ctf_doc doc;                       /* the metadata */
	struct ringtrace_trace_event_def printf_def; /* id 0 if the schema lacks it */
	struct rt_plan *plans;                       /* [doc.nevents] */

	struct rt_tstream *streams;
	uint32_t nstreams;
	uint32_t *heap;
	uint32_t nheap;
	int started;
	int pending; /* stream whose record was returned last, -1 none */
};

/* trace.c: a failure of ringtrace_trace_open (its message); returns -code. */
RT_HIDDEN int rt_open_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* trace.c: damage in a stream, reported with the file and byte offset. */
RT_HIDDEN void rt_damage(ringtrace_trace *t, struct rt_tstream *s, uint64_t off, const char *fmt,
			 ...) __attribute__((format(printf, 4, 5)));

/* stream.c: the stream files of the directory open as dirfd (regular
 * files only: anything else at a stream_<N> name is an error naming it). */
RT_HIDDEN int rt_open_streams(ringtrace_trace *t, int dirfd);

#endif /* RINGTRACE_READ_TRACE_INTERNAL_H */
