/*
 * ringtrace/ctf.h - trace directories: Common Trace Format 1.8 metadata
 * for ringtrace pages, and the description of a trace that the metadata
 * carries (docs/format.md, section 7).
 *
 * A ring-buffer page is a CTF packet as it is (docs/format.md). A trace
 * directory holds each stream's pages unchanged in a file of its own
 * (`stream_<N>`) and the metadata in a file named `metadata`: the TSDL
 * that babeltrace2 and Trace Compass read, followed by a comment block,
 * `ringtrace-schema`, with what ringtrace's own reader needs and CTF cannot
 * say (print formats, printf call sites, event kinds, filters, triggers,
 * the recorder's accounting). The TSDL is derived from the block, so the
 * metadata is written from one description, whoever writes it: the
 * recorder (from the live registry) or `ringtrace recover` (from the
 * block it read).
 *
 * This header compiles as C and as C++.
 */
#ifndef RINGTRACE_CTF_H
#define RINGTRACE_CTF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ringtrace/error.h"
#include "ringtrace/format.h"
#include "ringtrace/schema.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ringtrace_rb;

/* ---- what a trace's metadata says (the reader's view of it) --------------- */

/* The process the trace was recorded in (the metadata's `process` line;
 * TSDL env pid, procname, executable, hostname, as LTTng names them). */
struct ringtrace_trace_process {
	uint32_t pid;
	const char *procname;   /* its command name (comm), "" if unknown */
	const char *executable; /* its executable's path, "" if unknown */
	const char *hostname;   /* "" if unknown */
};

/* The trace clock: ns = base_ns + (ticks - base_ticks) * 10^9 / freq. */
struct ringtrace_trace_clock {
	int is_tsc;
	uint64_t freq, base_ticks, base_ns;
};

/* An event class of the schema block. */
struct ringtrace_trace_event_def {
	uint32_t id;
	uint32_t kind; /* enum ringtrace_event_kind */
	const char *name;
	const char *print_fmt;
	const struct ringtrace_field_desc *fields;
	uint32_t nfields;
	/*
	 * From the event's `filter` line (section 7), if any: the filter
	 * expression it had when the metadata was written (NULL if none: no
	 * filter line, or the filter was removed before then), and how many
	 * calls a filter kept out of the buffer (0 without a filter line).
	 */
	const char *filter;
	uint64_t rejected;
};

/* A trigger of the schema block (`trigger` line), as it stood when the
 * metadata was written. */
struct ringtrace_trace_trigger {
	const char *spec; /* "EVENT [if EXPR]: ACTION[:N]", as it was given */
	uint64_t fired;   /* times its action ran */
	uint64_t skipped; /* matched but not run (count used up, no session) */
};

/* A ringtrace_printf call site of the schema block. */
struct ringtrace_trace_site {
	uint32_t id;
	uint32_t nargs;
	uint8_t types[RINGTRACE_PRINTF_MAX_ARGS]; /* enum ringtrace_pf_type */
	const char *fmt;
	const char *file;
	uint32_t line;
};

/* A `stat` line: the recorder's accounting. */
struct ringtrace_trace_stat {
	const char *key;
	uint64_t value;
};

/*
 * A `dropped` line: a stream's drops in all (its final cumulative count)
 * where its pages do not report every drop (events dropped after its last
 * page, when the pool was full). The reader adds the rest to the stream.
 */
struct ringtrace_trace_drops {
	uint64_t stream;
	uint64_t dropped;
	uint32_t tid; /* its thread (a stream whose every event was dropped has no file) */
};

/*
 * An `unwritten` line: pages of a stream that the recorder took from the
 * buffer but could not write to its file (the disk full, an I/O error):
 * their events are lost, counted here with the reason. The reader counts
 * them as the stream's `unwritten` events (ringtrace_trace_stream_info),
 * not as overrun, wherever they fall between the pages written.
 */
struct ringtrace_trace_unwritten {
	uint64_t stream;
	uint64_t events; /* events in the pages not written */
	uint64_t pages;  /* pages not written (>= 1) */
	/* the stream's events committed up to the end of its last page not
	 * written (that page's events_before + events): those after the
	 * stream's last page written are this less that page's end */
	uint64_t end;
	uint32_t tid;       /* its thread (a stream none of whose pages was written has no file) */
	const char *reason; /* the error's name: "ENOSPC", "EIO", "EDQUOT", ... */
};

/* The recorder's accounting, stored in the metadata's schema block. */
struct ringtrace_trace_stats {
	uint64_t hit, missed, overrun, read;
	uint64_t pages, bytes; /* written to the stream files */
	uint64_t duration_ns;
	uint32_t mode; /* enum ringtrace_rb_mode */
};

/* ---- writing ------------------------------------------------------------------ */

/*
 * Write the TSDL metadata describing the pages of `rb` and every event the
 * registry knows (libraries since unloaded included, ringtrace_printf
 * records as a call-site id plus a byte sequence), followed by the
 * ringtrace-schema block with `stats` if not NULL. The wall clock's
 * offset (`realtime_offset`) is measured at the call. Returns 0, or a
 * negative error with a message (a write error names errno). In the
 * tracing library only.
 */
int ringtrace_ctf_write_metadata(const struct ringtrace_rb *rb, FILE *out,
				 const struct ringtrace_trace_stats *stats);

/*
 * Append one page, unchanged, to the file of its stream in trace
 * directory `dir`: created new (0600, or 0640 with the directory's group
 * when the directory is readable by its group) if missing; an existing
 * one is written only if it is a regular file with one link, ours or the
 * directory owner's. `dir` must be a directory (not a symbolic link),
 * ours (any, for root), writable by nobody else. No symbolic link is
 * followed. Does not lock the directory (ringtrace_ctf_lock_dir). 0, or
 * a negative error with a message naming the file.
 */
int ringtrace_ctf_append_page(const char *dir, const struct ringtrace_page_header *page,
			      size_t page_size);

/*
 * A stream file that ends inside a page (a recorder killed while writing
 * it): rename DIR/stream_N, unchanged, to the hidden DIR/.stream_N.partial
 * (its name in aside[], at least 48 bytes; never replacing a file there),
 * and write its whole pages, copied as they are, to a new DIR/stream_N.
 * Nothing in the file is cut or rewritten, and CTF readers (which skip
 * hidden files) read every whole page. 1 if set aside, 0 if the file is
 * missing or holds whole pages only, or a negative error with a message.
 * Not locked (ringtrace_ctf_lock_dir).
 */
int ringtrace_ctf_set_aside_partial(const char *dir, uint64_t stream, size_t page_size, char *aside,
				    size_t aside_size);

/* DIR/stream_N: the file of stream N in a trace directory. */
void ringtrace_ctf_stream_path(char *buf, size_t size, const char *dir, uint64_t stream);

/*
 * Open file `name` (e.g. "metadata", "stream_3") of trace directory `dir`
 * to read: a regular file only, never through a symbolic link, and
 * without blocking (a FIFO, socket, device or symbolic link there is an
 * error naming it). An fd (close it), or a negative error with a message.
 */
int ringtrace_ctf_open_file(const char *dir, const char *name);

/*
 * Take the lock a recorder holds on its trace directory while it writes
 * (flock on the directory): a descriptor that holds it until closed, or
 * a negative error whose message names the directory and, where known,
 * the process holding it. `dir` must be a directory (not a symbolic
 * link), ours (any, for root), writable by nobody else. Writers of the
 * same process must not lock again while it is held (the second lock is
 * refused like any other).
 */
int ringtrace_ctf_lock_dir(const char *dir);

/*
 * The value of one `stat` line of DIR/metadata (the recorder's
 * accounting: hit, missed, overrun, read, pages, bytes, duration_ns, mode,
 * recovered): 1 and *value, 0 if the metadata has no such line, or a
 * negative error with a message naming the file and line.
 */
int ringtrace_ctf_get_stat(const char *dir, const char *key, uint64_t *value);

/* What `ringtrace recover` checks before it writes anything. */
struct ringtrace_ctf_info {
	int has_uuid;     /* the metadata has a `uuid` line */
	uint8_t uuid[16]; /* then: the pool's identity */
	uint32_t nstats;  /* `stat` lines: a recorder stopped normally (complete) */
};
/*
 * Read DIR/metadata's identity and whether it is complete: 0, or a
 * negative error with a message naming the file and line.
 */
int ringtrace_ctf_get_info(const char *dir, struct ringtrace_ctf_info *info);

/*
 * Replace the `stat` lines of DIR/metadata with these (the trace's events,
 * sites, filters and triggers stay as they are); the file is written anew
 * from what its schema block says, under a temporary name (made new:
 * whatever was at that name is removed, never followed), and renamed.
 * `dir` as for ringtrace_ctf_append_page; not locked. 0, or a negative
 * error with a message naming the file and line.
 */
int ringtrace_ctf_set_stats(const char *dir, const struct ringtrace_trace_stat *stats,
			    uint32_t nstats);
/*
 * The same, and `dropped` lines for these streams (`ringtrace recover`:
 * the dead writers' drops beyond their pages), merged with those the
 * metadata has (the larger count of a stream is kept).
 */
int ringtrace_ctf_set_stats_drops(const char *dir, const struct ringtrace_trace_stat *stats,
				  uint32_t nstats, const struct ringtrace_trace_drops *drops,
				  uint32_t ndrops);

/*
 * A trace made outside a ring buffer (the kernel's events, which the
 * ringtrace command re-encodes into pages: docs/kernel.md): its metadata,
 * TSDL and schema block, from this description, into the existing trace
 * directory dir (written as the recorder writes it: a temporary file
 * renamed over `metadata`). 0 or a negative error naming the problem.
 */
struct ringtrace_ctf_trace_desc {
	struct ringtrace_trace_clock clock;
	const struct ringtrace_trace_event_def *events;
	uint32_t nevents;
	const struct ringtrace_trace_stat *stats; /* the accounting: `stat` lines */
	uint32_t nstats;
	const struct ringtrace_trace_drops *drops;
	uint32_t ndrops;
	const struct ringtrace_trace_process *process; /* NULL: none */
	/* CLOCK_REALTIME - CLOCK_MONOTONIC ns at the recording's start (the
	 * `realtime_offset` line), if has_realtime_offset */
	int has_realtime_offset;
	int64_t realtime_offset;
};
int ringtrace_ctf_write_described(const char *dir, const struct ringtrace_ctf_trace_desc *t);

#ifdef __cplusplus
}
#endif
#endif /* RINGTRACE_CTF_H */
