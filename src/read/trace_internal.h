/* Internal state of the trace reader (src/read/trace.c); not installed. */
#ifndef RINGTRACE_READ_TRACE_INTERNAL_H
#define RINGTRACE_READ_TRACE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "ringtrace/trace.h"

/* Limits on what a schema block may declare (larger is damage). */
#define RT_TRACE_MAX_FIELDS 64u        /* ringtrace_record_format's limit */
#define RT_TRACE_MAX_ENUMS 65536u      /* enum values per field */
#define RT_TRACE_MAX_SITE_ID (1u << 20)
#define RT_TRACE_MAX_METADATA (256u << 20)
#define RT_TRACE_MAX_STREAMS 65536u

/* Memory owned by the trace, freed at close. */
struct rt_arena_chunk {
	struct rt_arena_chunk *next;
	size_t used, size;
	max_align_t data[];
};

/*
 * A print format compiled for the common case (literals and %d %i %u %x %X
 * with optional length modifiers on integer fields, %s on string fields,
 * no flags, width or precision): formatted without snprintf, with the
 * same output as ringtrace_record_format. Anything else uses that.
 */
struct rt_seg {
	const char *lit;   /* literal text (conv == 0) */
	uint32_t litlen;
	char conv;         /* 'd' 'u' 'x' 'X' 's', or 0 for a literal */
	uint8_t mod;       /* 0 int, 1 hh, 2 h, 3 wide */
	uint16_t value;    /* index into the decoded values */
};

struct rt_plan {
	int state;         /* 0 not compiled, 1 compiled, 2 use record_format */
	uint32_t nseg;
	struct rt_seg *seg;
};

struct rt_filter_line {
	uint32_t id;          /* event id, not yet checked */
	unsigned line;        /* in metadata, for the error message */
	uint64_t rejected;
	const char *expr;     /* NULL for "-" */
};

struct rt_tstream {
	struct ringtrace_trace_stream_info info;
	const unsigned char *map; /* the whole file, read-only (NULL if empty) */
	size_t size;
	uint64_t pkt_off;         /* file offset of the current packet */
	uint64_t next_pkt;        /* file offset of the next packet */
	const struct ringtrace_page_header *page;
	struct ringtrace_page_cursor cur;
	struct ringtrace_page_header prev; /* last good packet header */
	int have_prev;
	int in_page;
	int truncated;            /* the current packet runs past the end of the file */
	int dead;                 /* no more packets can be read */
	uint32_t cpu;
	char comm[17];
	struct ringtrace_trace_record item; /* the stream's next record */
};

struct ringtrace_trace {
	char *dir;
	ringtrace_trace_error_fn err;
	void *err_arg;
	uint64_t errors;
	struct rt_arena_chunk *arena;

	struct ringtrace_trace_clock clock;
	struct ringtrace_trace_event_def *events;
	uint32_t nevents, cap_events;
	struct rt_plan *plans;                    /* [nevents] */
	struct ringtrace_trace_event_def **by_id; /* [0 .. max_id] */
	uint32_t by_id_len;
	struct ringtrace_trace_event_def printf_def; /* used if the schema lacks id 0 */
	struct ringtrace_trace_site *sites;
	uint32_t nsites, cap_sites;
	struct ringtrace_trace_site **site_by_id;
	uint32_t site_by_id_len;
	struct ringtrace_trace_stat *stats;
	uint32_t nstats, cap_stats;
	/*
	 * `filter` lines, kept apart until every event line is read: they name
	 * their event by id, checked once the id table exists (and events[]
	 * may still move while lines are read).
	 */
	struct rt_filter_line *filters;
	uint32_t nfilters, cap_filters;
	struct ringtrace_trace_trigger *triggers;
	uint32_t ntriggers, cap_triggers;

	struct rt_tstream *streams;
	uint32_t nstreams;
	uint32_t *heap;
	uint32_t nheap;
	int started;
	int pending;              /* stream whose record was returned last, -1 none */
};

#endif
