/*
 * src/ctf/ctf_api.h - the one owner of the trace directory's metadata: the
 * description of a trace (struct rt_ctf_meta), written as TSDL followed by
 * the ringtrace-schema block, and the block parsed back. The recorder,
 * `ringtrace recover`, `ringtrace stat` and the reader all go through
 * here. Not installed; ringtrace/ctf.h is the public part.
 *
 * The files:
 *   schema_block.c  the ringtrace-schema block: writer and strict parser,
 *                   percent-encoding
 *   tsdl.c          the TSDL, the whole metadata file, DIR/metadata read
 *                   and written (atomically), ringtrace_ctf_set_stats
 *   stream.c        stream files: their names, appending pages; the
 *                   public face of src/base/tdir.c (a trace's file opened
 *                   to read, its directory's lock)
 *   metadata.c      the description of the running process (the
 *                   registry, printf sites, filters and triggers): the
 *                   only part that needs the tracing runtime, kept apart
 *                   so that the reader links the rest alone
 */
#ifndef RINGTRACE_CTF_API_H
#define RINGTRACE_CTF_API_H

#include <stdint.h>
#include <stdio.h>

#include "base/base.h"
#include "ringtrace/ctf.h"

/* Limits on what a schema block may declare (larger is damage). */
#define RT_CTF_MAX_FIELDS 64u   /* ringtrace_record_format's limit */
#define RT_CTF_MAX_ENUMS 65536u /* enum values per field */
#define RT_CTF_MAX_SITE_ID (1u << 20)
#define RT_CTF_MAX_METADATA (256u << 20)

/* Everything the metadata says about a trace. */
struct rt_ctf_meta {
	struct ringtrace_trace_clock clock;
	/* The pool's identity (ringtrace_rb_uuid), if has_uuid: TSDL
	 * `trace { uuid }` and the block's `uuid` line. */
	uint8_t uuid[16];
	int has_uuid;
	/* Filter lines: an event with a filter or a rejected call has one. */
	const struct ringtrace_trace_event_def *events;
	uint32_t nevents;
	const struct ringtrace_trace_site *sites;
	uint32_t nsites;
	const struct ringtrace_trace_trigger *triggers;
	uint32_t ntriggers;
	const struct ringtrace_trace_stat *stats;
	uint32_t nstats;
	/* `dropped` lines, sorted by stream, one per stream */
	const struct ringtrace_trace_drops *drops;
	uint32_t ndrops;
	/* `unwritten` lines, sorted by stream, one per stream */
	const struct ringtrace_trace_unwritten *unwritten;
	uint32_t nunwritten;
	/* The traced process, if has_process (the block's `process` line;
	 * TSDL env pid, procname, executable, hostname): who wrote it. */
	struct ringtrace_trace_process process;
	int has_process;
	/* CLOCK_REALTIME - CLOCK_MONOTONIC ns when the recording started, if
	 * has_realtime_offset (the block's `realtime_offset` line; in the
	 * TSDL, part of the clock's offset): a trace's ns + this = wall time. */
	int64_t realtime_offset;
	int has_realtime_offset;
};

/* ---- writing (tsdl.c, schema_block.c) ---- */

/* The schema block alone. */
RT_HIDDEN void rt_ctf_write_block(FILE *f, const struct rt_ctf_meta *m);
/* The whole metadata: TSDL, then the block. 0 or a negative error. */
RT_HIDDEN int rt_ctf_write(FILE *f, const struct rt_ctf_meta *m);
/* D/metadata, written under a temporary name and renamed (a reader
 * never sees half of it; src/base/tdir.c). 0 or a negative error naming
 * the file. */
RT_HIDDEN int rt_ctf_write_file(const struct rt_tdir *d, const struct rt_ctf_meta *m);

/* ---- reading (schema_block.c, tsdl.c) ---- */

/* A parsed schema block: the description and the storage behind it. */
struct rt_ctf_doc {
	struct rt_ctf_meta meta; /* set by a successful parse */
	struct rt_arena arena;
	struct ringtrace_trace_event_def *events;
	uint32_t nevents, cap_events;
	struct ringtrace_trace_site *sites;
	uint32_t nsites, cap_sites;
	struct ringtrace_trace_trigger *triggers;
	uint32_t ntriggers, cap_triggers;
	struct ringtrace_trace_stat *stats;
	uint32_t nstats, cap_stats;
	struct ringtrace_trace_drops *drops;
	uint32_t ndrops, cap_drops;
	struct ringtrace_trace_unwritten *unwritten;
	uint32_t nunwritten, cap_unwritten;
	/* Lookup by id: [0 .. max id], NULL where none. */
	struct ringtrace_trace_event_def **by_id;
	uint32_t by_id_len;
	struct ringtrace_trace_site **site_by_id;
	uint32_t site_by_id_len;
	/* (filter lines, kept until every event line is read) */
	struct rt_ctf_filter_line *filters;
	uint32_t nfilters, cap_filters;
	/* (while parsing: the event and site ids defined so far, a bit each,
	 * so a duplicate is found in O(1); scanning the earlier lines made a
	 * long metadata quadratic) */
	uint8_t *ev_seen, *site_seen;
};

/*
 * Parse the metadata text (len bytes, NUL-terminated at text[len];
 * modified in place) of DIR/metadata into doc (zeroed by the caller).
 * Strict: every line and number is checked; the first damage gives
 * -RINGTRACE_ECORRUPT with "DIR/metadata: line N: what" in err. Free the
 * doc with rt_ctf_doc_free() whatever the result.
 */
RT_HIDDEN int rt_ctf_parse(struct rt_ctf_doc *doc, const char *dir, char *text, size_t len,
			   char *err, size_t errsize);
/* Read DIR/metadata (a regular file of at most RT_CTF_MAX_METADATA bytes:
 * a FIFO, device or symbolic link there is an error naming it) and parse
 * it; errors as rt_ctf_parse, naming the file. */
RT_HIDDEN int rt_ctf_read(struct rt_ctf_doc *doc, const char *dir, char *err, size_t errsize);
/* The same in the directory open as dirfd (DIR names it in messages). */
RT_HIDDEN int rt_ctf_read_at(struct rt_ctf_doc *doc, int dirfd, const char *dir, char *err,
			     size_t errsize);
RT_HIDDEN void rt_ctf_doc_free(struct rt_ctf_doc *doc);

/*
 * Sort drops by stream and merge those of one stream (the larger count
 * kept: counts are cumulative): the new length.
 */
RT_HIDDEN uint32_t rt_ctf_drops_normalize(struct ringtrace_trace_drops *d, uint32_t n);
/* The `dropped` line of a stream: its count, or 0 if none. */
RT_HIDDEN uint64_t rt_ctf_stream_dropped(const struct rt_ctf_meta *m, uint64_t stream);

/* The `unwritten` line of a stream, or NULL if none. */
RT_HIDDEN const struct ringtrace_trace_unwritten *rt_ctf_stream_unwritten(
	const struct rt_ctf_meta *m, uint64_t stream);

/* A UUID as text: 36 characters and a NUL (8-4-4-4-12 lowercase hex). */
RT_HIDDEN void rt_ctf_uuid_str(char out[37], const uint8_t uuid[16]);
/* Parse that form (exactly): 0, or -1. */
RT_HIDDEN int rt_ctf_uuid_parse(const char *s, uint8_t uuid[16]);

/* ---- stream files (stream.c) ---- */

/* The room a recorder keeps in its trace directory for the final metadata
 * (a preallocated hidden file, removed when the disk fills and the
 * metadata must be written, and at the end: docs/format.md, section 7).
 * Readers skip it; the final metadata's writers remove it. */
#define RT_CTF_RESERVE ".ringtrace-reserve"

/* DIR/stream_N. */
RT_HIDDEN void rt_ctf_stream_path(char *buf, size_t n, const char *dir, uint64_t stream);
/* Open D/stream_N to append (created new if missing, else only the
 * regular file we wrote: rt_tdir_append_file): an fd, or a negative error
 * naming the file. */
RT_HIDDEN int rt_ctf_stream_open(const struct rt_tdir *d, uint64_t stream);

/* ---- the running process (metadata.c) ---- */

/* What the recorder adds to the metadata of the running process: its
 * `unwritten` lines (sorted by stream, one per stream; their totals also
 * as `stat unwritten` and `stat unwritten_pages` when there are stats),
 * and `dropped` lines of its own, merged with the ring's (the larger
 * count of a stream kept). */
struct rt_ctf_extra {
	const struct ringtrace_trace_unwritten *unwritten;
	uint32_t nunwritten;
	const struct ringtrace_trace_drops *drops;
	uint32_t ndrops;
	/* The session's realtime offset (measured once, at its start, so
	 * that every metadata of the session says the same), if has_... ;
	 * without it the offset is measured when the metadata is written. */
	int64_t realtime_offset;
	int has_realtime_offset;
};
/* D/metadata for buffer rb and this process's registry (x: NULL, or the
 * recorder's lines). */
RT_HIDDEN int rt_ctf_write_live(const struct ringtrace_rb *rb, const struct rt_tdir *d,
				const struct ringtrace_trace_stats *st,
				const struct rt_ctf_extra *x);

#endif /* RINGTRACE_CTF_API_H */
