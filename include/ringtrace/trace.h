/*
 * ringtrace/trace.h - reading a trace directory (docs/format.md, section 7).
 *
 * A trace directory holds `metadata` (CTF 1.8 TSDL followed by the
 * ringtrace-schema comment block) and `stream_<N>` files of whole pages.
 * The reader parses the schema block strictly, opens every stream file,
 * walks its packets and merges all streams by timestamp.
 *
 * Nothing read from the directory is trusted: every size, offset and id is
 * checked before use. Damage in a stream is reported through the error
 * callback with the file name and byte offset (file offset of the packet
 * plus the offset in the page); every event before the damage is still
 * delivered, and the other streams are read on.
 *
 * The reader library (ringtrace_read) carries none of the tracing
 * runtime: no constructor, no registry, no session; reading a trace never
 * records one. The types of what the metadata says (events, call sites,
 * triggers, stat lines, the clock) are in ringtrace/ctf.h.
 *
 * This header compiles as C and as C++.
 */
#ifndef RINGTRACE_TRACE_H
#define RINGTRACE_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ringtrace/ctf.h"
#include "ringtrace/error.h"
#include "ringtrace/schema.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ringtrace_trace ringtrace_trace;

/* Called for each damage found (one line, no newline). */
typedef void (*ringtrace_trace_error_fn)(void *arg, const char *msg);

/* One stream file; the counters grow as the stream is read. */
struct ringtrace_trace_stream_info {
	uint64_t id; /* N of stream_<N> */
	const char *path;
	uint64_t bytes;             /* file size */
	uint32_t tid;               /* from the last page read */
	char comm[17];              /* from the last page read, NUL-terminated */
	uint64_t pages;             /* packets read (damaged ones included) */
	uint64_t events;            /* events delivered */
	uint64_t dropped;           /* events dropped by the writer (events_discarded, and
				     * the metadata's `dropped` line: those after its last page) */
	uint64_t overrun;           /* events lost to recycled pages */
	uint64_t first_ts, last_ts; /* ticks of the first and last event (0 if none) */
	uint64_t errors;            /* damage found */
	/* Events (and pages) the recorder took from the buffer but could not
	 * write (the disk full, an I/O error: the metadata's `unwritten`
	 * line), and why: an error name ("ENOSPC", "EIO", ...), NULL if none.
	 * For every thread, events + dropped + overrun + unwritten is what it
	 * emitted. Final when the stream is read to its end. */
	uint64_t unwritten, unwritten_pages;
	const char *unwritten_reason;
};

enum ringtrace_trace_rec_kind {
	RINGTRACE_TRACE_EVENT = 0,
	RINGTRACE_TRACE_LOST = 1, /* `lost` events were lost before this point */
};

struct ringtrace_trace_record {
	uint32_t kind;    /* enum ringtrace_trace_rec_kind */
	uint32_t id;      /* event id */
	uint64_t ts;      /* ticks */
	uint64_t ns;      /* CLOCK_MONOTONIC ns (ringtrace_trace_ticks_to_ns) */
	const void *data; /* payload (8-aligned), valid until the next call */
	uint32_t len;
	uint32_t tid;
	uint32_t cpu;          /* from the page header (0xFFFFFFFF unknown) */
	uint32_t stream_index; /* index for ringtrace_trace_stream() */
	uint64_t stream;       /* stream id */
	const char *comm;      /* thread name of the page, NUL-terminated */
	uint64_t lost;         /* RINGTRACE_TRACE_LOST: how many */
	uint64_t file_offset;  /* byte offset of the event in its stream file */
	const struct ringtrace_trace_event_def *def; /* the event's class */
	/* RINGTRACE_TRACE_LOST: the two parts of `lost` (which is their sum,
	 * saturated), as the stream's counters have them: events the writer
	 * dropped (the buffer full: events_discarded, and the metadata's
	 * `dropped` line after the last page) and events overwritten on
	 * recycled pages (overrun). 0 for events. */
	uint64_t dropped, overrun;
	/* RINGTRACE_TRACE_LOST: the third part, events the recorder could not
	 * write (the stream's `unwritten`). 0 for events. */
	uint64_t unwritten;
};

/*
 * Open a trace directory: parse `metadata` and open every stream_<N>.
 * err (may be NULL: messages are then only counted) receives every damage
 * found while reading. Returns 0, or a negative error with a message
 * (ringtrace_trace_open_error()) naming the file, line or offset.
 */
int ringtrace_trace_open(const char *dir, ringtrace_trace_error_fn err, void *arg,
			 ringtrace_trace **out);
/* The message of the last failed ringtrace_trace_open() in this thread. */
const char *ringtrace_trace_open_error(void);
void ringtrace_trace_close(ringtrace_trace *t);

/*
 * The next record, merged by timestamp across streams (ties by stream id):
 * 1 and *rec filled, 0 at the end. Damage is reported and skipped.
 */
int ringtrace_trace_next(ringtrace_trace *t, struct ringtrace_trace_record *rec);

/* Damage found so far (errors reported through the callback). */
uint64_t ringtrace_trace_errors(const ringtrace_trace *t);

/*
 * Format the fields of an event record: with its print format, or for
 * ringtrace_printf records (id 0) with its call site's format. Returns the
 * length (as snprintf), or a negative error (the damage is reported through
 * the callback with the file and offset, and counted).
 */
int ringtrace_trace_format(ringtrace_trace *t, const struct ringtrace_trace_record *rec, char *buf,
			   size_t size);
/* The name shown for a record's event ("ringtrace_printf" for id 0). */
const char *ringtrace_trace_event_name(const struct ringtrace_trace_record *rec);

/*
 * A record as `ringtrace report` prints it, without the newline:
 *   COMM-TID [CPU] SECONDS.MICROS: EVENT: FIELDS
 * (clock ticks instead of seconds if raw), or for lost events
 *   COMM-TID [CPU] SECONDS.MICROS: *** N events lost ***
 * Control bytes from the trace (C0 controls, DEL, and the C1 controls in
 * their UTF-8 form, 0xc2 0x80..0x9f) are written as \xNN, so that a line
 * is one line and nothing in a trace reaches a terminal as a command; a
 * thread name's control bytes show as '?'.
 * Returns the length (as snprintf; buf is NUL-terminated when size > 0),
 * or a negative error (damage is reported through the callback).
 */
int ringtrace_trace_format_line(ringtrace_trace *t, const struct ringtrace_trace_record *rec,
				int raw, char *buf, size_t size);

/*
 * Write the rest of the trace (from the next record on) to f in the
 * Chrome/Perfetto trace event format (JSON): one process, its real pid and
 * command if the trace records them (ringtrace_trace_process), else pid 1
 * named process_name. 0, or a negative error if writing failed.
 */
int ringtrace_trace_write_json(ringtrace_trace *t, FILE *f, const char *process_name);
/* The same for n traces into one JSON (a trace collection: one process
 * each; a trace without process information is pid i + 1, named names[i]).
 * The kernel trace of a collection (its process line says pid 0, procname
 * "kernel": docs/kernel.md) is a process named "kernel" with one thread
 * per CPU, named "CPU N", its events on their CPU's track; its pid is
 * RINGTRACE_JSON_KERNEL_PID and CPU N's tid RINGTRACE_JSON_KERNEL_PID + 1 +
 * N (CPU unknown: RINGTRACE_JSON_KERNEL_PID), above every Linux pid, so that
 * they meet no real thread (Perfetto keys threads by tid). */
int ringtrace_trace_write_json_set(ringtrace_trace *const *ts, uint32_t n, FILE *f,
				   const char *const *names);
#define RINGTRACE_JSON_KERNEL_PID 4194304u /* PID_MAX_LIMIT (2^22): no pid reaches it */

/*
 * A complete event ("ph":"X") that the caller adds to the JSON: for
 * instance `ringtrace export`'s thread states (running / runnable /
 * blocked, from the kernel's scheduling events) on the recorded threads'
 * own tracks. The library writes it (strings escaped, as every string);
 * what it means is the caller's.
 */
struct ringtrace_json_span {
	const char *name; /* NUL-terminated */
	const char *cat;  /* NUL-terminated; NULL: "ringtrace" */
	uint32_t pid, tid;
	uint64_t ns;     /* start, CLOCK_MONOTONIC ns (as a record's ns) */
	uint64_t dur_ns; /* duration */
};
/*
 * The caller's spans, one per call: 1 and *span filled (its strings valid
 * until the next call), 0 after the last one, or a negative error (the
 * writing stops there and returns it: the JSON is incomplete).
 */
typedef int (*ringtrace_json_span_fn)(void *arg, struct ringtrace_json_span *span);
/*
 * ringtrace_trace_write_json_set, and the spans next(arg) gives, written
 * after every trace's events (next is first called then: it may read the
 * same trace directories through handles of its own). next NULL: none.
 */
int ringtrace_trace_write_json_spans(ringtrace_trace *const *ts, uint32_t n, FILE *f,
				     const char *const *names, ringtrace_json_span_fn next,
				     void *arg);

uint64_t ringtrace_trace_ticks_to_ns(const ringtrace_trace *t, uint64_t ticks);
const struct ringtrace_trace_clock *ringtrace_trace_clock(const ringtrace_trace *t);

uint32_t ringtrace_trace_event_count(const ringtrace_trace *t);
const struct ringtrace_trace_event_def *ringtrace_trace_event(const ringtrace_trace *t, uint32_t i);
const struct ringtrace_trace_event_def *ringtrace_trace_event_by_id(const ringtrace_trace *t,
								    uint32_t id);
uint32_t ringtrace_trace_site_count(const ringtrace_trace *t);
const struct ringtrace_trace_site *ringtrace_trace_site(const ringtrace_trace *t, uint32_t i);
/* Triggers, in the order of the schema block (the order they were added). */
uint32_t ringtrace_trace_trigger_count(const ringtrace_trace *t);
const struct ringtrace_trace_trigger *ringtrace_trace_trigger(const ringtrace_trace *t, uint32_t i);
/* The trace's identity (its pool's ringtrace_rb_uuid, from the metadata's
 * `uuid` line): 1 and uuid[], or 0 if the metadata has none (a trace
 * written before ids existed). */
int ringtrace_trace_uuid(const ringtrace_trace *t, uint8_t uuid[16]);
/* 1 and *out (strings owned by the trace), or 0 if the metadata has none
 * (a trace written before this line existed). */
int ringtrace_trace_process(const ringtrace_trace *t, struct ringtrace_trace_process *out);
/*
 * How the trace's clock maps to wall-clock time: CLOCK_REALTIME -
 * CLOCK_MONOTONIC in ns, measured when the recording started (the
 * metadata's `realtime_offset` line), so that a timestamp's ns
 * (ringtrace_trace_ticks_to_ns) + *offset_ns is ns since the Unix epoch
 * (UTC). 1 and *offset_ns, or 0 if the metadata has none (a trace
 * written before this line existed). The wall clock of a later step
 * (settimeofday, NTP) is not followed.
 */
int ringtrace_trace_realtime_offset(const ringtrace_trace *t, int64_t *offset_ns);
uint32_t ringtrace_trace_stat_count(const ringtrace_trace *t);
const struct ringtrace_trace_stat *ringtrace_trace_stat(const ringtrace_trace *t, uint32_t i);
uint32_t ringtrace_trace_stream_count(const ringtrace_trace *t);
const struct ringtrace_trace_stream_info *ringtrace_trace_stream(const ringtrace_trace *t,
								 uint32_t i);

#ifdef __cplusplus
}
#endif
#endif /* RINGTRACE_TRACE_H */
