/*
 * src/base/base.h - what every layer of ringtrace shares: error reporting,
 * the trace clock, atomics shorthands, small I/O helpers, text escaped for
 * the terminal.
 *
 * The lowest layer: it depends on libc and the version-locked cpu header
 * only, and nothing here calls into another layer. Not installed.
 *
 * Layers, lowest first (each may use those before it, never after; a
 * lower layer that must act upward calls a hook the upper one registers):
 *   base    errors, clock, heap, I/O helpers, the environment, trace
 *           directories' files (opened safely: tdir.c)
 *   ring    the pool, writers, FIFO, flush, readers, snapshots, accounting
 *   schema  field types, record decoding and formatting (pure code)
 *   event   registry, read-side sections, probes, printf records
 *   control filters and triggers
 *   ctf     the metadata (TSDL and the ringtrace-schema block)
 *   record  sessions: the in-process recorder, started from the environment
 * and, beside the runtime, the layers of the reader and of the programs
 * that read traces (the ringtrace command; never in traced programs):
 *   read     the trace reader: base, the page cursor of ring, schema and
 *            ctf's parser only
 *   kernel   kernel events: recorded through tracefs, printed as ftrace
 *            does (libtracefs, libtraceevent where built with them); what
 *            read may use, and read
 *   analysis trace collections, the scheduling model: what kernel may
 *            use, and kernel
 *   collect  recording other processes and recovering their pools (the
 *            command's machinery): what kernel may use, and kernel (the
 *            ring only as a process mapping another's pool sees it)
 *   query    the trace as tables that SQLite queries (libsqlite3): what
 *            analysis may use, and analysis
 * then the command (tools/: a dispatcher, one file per verb, support files
 * the verbs share), which may use all of these. scripts/check-layers
 * checks it.
 */
#ifndef RINGTRACE_BASE_H
#define RINGTRACE_BASE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "ringtrace/error.h"
#include "ringtrace/static/cpu.h"

#define RT_HIDDEN __attribute__((visibility("hidden")))
#define rt_likely(x) __builtin_expect(!!(x), 1)
#define rt_unlikely(x) __builtin_expect(!!(x), 0)
#define RT_ALIGN8(x) (((x) + 7) & ~(size_t)7)
#define RT_CACHELINE 64

#define RT_LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define RT_LOAD_ACQ(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define RT_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define RT_STORE_REL(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

/* ---- errors (error.c) ---- */

/* Record a message for ringtrace_last_error() and return -code. */
RT_HIDDEN int rt_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
RT_HIDDEN void rt_error_clear(void);
/*
 * Format into buf (always NUL-terminated, cut at n - 1 bytes) with an
 * async-signal-safe subset of printf: %s, %c, %%, and %u %d %x with the
 * length modifiers l, ll and z. No locale, no allocation, no lock: for
 * messages written where vsnprintf may not be called (a writer that finds
 * its pool damaged inside a signal handler). Returns the length written.
 */
RT_HIDDEN size_t rt_format_safe(char *buf, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
RT_HIDDEN size_t rt_vformat_safe(char *buf, size_t n, const char *fmt, va_list ap);

/* ---- the trace clock (clock.c) ---- */

struct rt_clock {
	int is_tsc;          /* 1: ticks are cycle-counter ticks; 0: CLOCK_MONOTONIC ns */
	uint64_t freq;       /* ticks per second */
	uint64_t base_ticks; /* a calibration point: ticks ... */
	uint64_t base_ns;    /* ... and CLOCK_MONOTONIC ns at the same instant */
};

/*
 * Calibrate once per process (thread-safe); returns the process clock.
 * Called where a timestamp needs converting or the calibration is sent
 * (a buffer's creation, an attach's HELLO), never at load: a program
 * nobody traces does not calibrate.
 */
RT_HIDDEN const struct rt_clock *rt_clock_get(void);
/* Whether rt_clock_get() has calibrated (or is calibrating) in this process. */
RT_HIDDEN int rt_clock_calibrated(void);
RT_HIDDEN uint64_t rt_mono_ns(void);
/*
 * The cycle counter (0 where there is none) and CLOCK_MONOTONIC ns read
 * together: of a few tries, the one whose clock_gettime bracket around the
 * counter read is narrowest, ns its middle. What a clock conversion is
 * calibrated from (the process clock here, the kernel trace's in
 * src/kernel: the counter is the kernel's x86-tsc / counter trace clock).
 */
RT_HIDDEN void rt_clock_sample(uint64_t *ticks, uint64_t *ns);
/*
 * CLOCK_REALTIME - CLOCK_MONOTONIC now, in ns (the metadata's
 * `realtime_offset`: wall time = a trace's ns + this): the realtime read
 * between two monotonic reads, the narrowest of a few tries.
 */
RT_HIDDEN int64_t rt_clock_realtime_offset(void);
/* Ticks to CLOCK_MONOTONIC ns (saturating at 0 and UINT64_MAX). */
RT_HIDDEN uint64_t rt_clock_to_ns(const struct rt_clock *c, uint64_t ticks);

/* Ticks now: the cycle counter where is_tsc, else CLOCK_MONOTONIC ns. */
static inline uint64_t rt_ticks(int is_tsc)
{
	uint64_t t;
	if (rt_likely(is_tsc) && ringtrace_hw_ticks_(&t))
		return t;
	return rt_mono_ns();
}

/* ---- text from a trace on the terminal (esc.c) ---- */

/*
 * Text from a trace on the terminal: names, thread names, formats and
 * file names come from a trace's metadata or page headers, which anyone
 * can write, and a control byte in them (an ESC sequence, a newline) would
 * reach the terminal or forge a line of output. rt_esc() gives the text
 * with each such byte as \xNN (C0 controls, DEL, and the C1 controls in
 * their UTF-8 form, 0xc2 0x80..0x9f; other UTF-8 as it is), the same
 * rule as `ringtrace report` (ringtrace_trace_format_line).
 */
/*
 * s escaped, in one of eight buffers used in turn (so up to eight may
 * appear in one printf); "" for NULL; cut at 4096 bytes of input with
 * "..." after it. Not thread-safe: for a command that prints from one
 * thread (the ringtrace command, its kernel and analysis layers).
 */
RT_HIDDEN const char *rt_esc(const char *s);

/* ---- memory and numbers (util.c) ---- */

/*
 * An arena: many small allocations freed together (a trace's strings and
 * schema). rt_arena_alloc returns 16-aligned memory, not cleared, or NULL
 * when out of memory.
 */
struct rt_arena_chunk;
struct rt_arena {
	struct rt_arena_chunk *head;
};
RT_HIDDEN void *rt_arena_alloc(struct rt_arena *a, size_t n);
RT_HIDDEN char *rt_arena_strdup(struct rt_arena *a, const char *s);
RT_HIDDEN void rt_arena_free(struct rt_arena *a);

/* Grow *arr (elements of `elem` bytes, capacity *cap) to hold `need`: 0 or -1. */
RT_HIDDEN int rt_grow(void **arr, uint32_t *cap, uint32_t need, size_t elem);

/*
 * A strict decimal number: digits only, no sign, no leading zero (but
 * "0"), no overflow, at most max: 0 and *out, or -1.
 */
RT_HIDDEN int rt_parse_u64(const char *s, uint64_t max, uint64_t *out);
/* The same with an optional '-' (int64_t range; "-0" refused). */
RT_HIDDEN int rt_parse_i64(const char *s, int64_t *out);
/*
 * A size: a strict decimal number with an optional k, m or g suffix (KiB,
 * MiB, GiB, either case), no overflow, from min to max: 0 and *out, or -1
 * with why (if not NULL; 160 bytes are enough) saying what is wrong with
 * it. The one size parser: the library's RINGTRACE_BUFFER_SIZE and
 * RINGTRACE_PAGE_SIZE, and `ringtrace record --buffer-size`, which hands
 * the same strings to the library through the environment and so must
 * accept exactly what the library accepts.
 */
RT_HIDDEN int rt_parse_size_in(const char *s, uint64_t min, uint64_t max, uint64_t *out, char *why,
			       size_t whylen);
/* The same with no range and no message. */
RT_HIDDEN int rt_parse_size(const char *s, uint64_t *out);

/* ---- I/O (io.c) ---- */

/* write() all of buf, retrying on EINTR and short writes: 0 or -errno. */
RT_HIDDEN int rt_write_all(int fd, const void *buf, size_t len);

/* openat(dirfd, name, flags, mode), tried again after 1, 2, 4 ... 64 ms
 * while the process is out of descriptors (EMFILE, ENFILE): an fd, or -1
 * with errno. For the files the recorder makes in the traced program
 * (io.c says why). */
RT_HIDDEN int rt_openat_wait(int dirfd, const char *name, int flags, unsigned mode);

/* Decimal digits of v at p (no NUL); returns the end. */
RT_HIDDEN char *rt_put_u64(char *p, uint64_t v);

/* "00" "01" ... "99": the pairs of digits rt_dec_back writes. */
RT_HIDDEN extern const char rt_digits2[200];

/*
 * The decimal digits of v written backwards so that they end just before
 * `end`; returns where they start (at most 20 bytes before end). Two
 * digits a division: the report tool prints a few numbers on every line,
 * and a digit a division was a fifth of its time.
 */
static inline char *rt_dec_back(char *end, uint64_t v)
{
	while (v >= 100) {
		unsigned r = (unsigned)(v % 100);
		v /= 100;
		end -= 2;
		memcpy(end, rt_digits2 + 2 * r, 2);
	}
	if (v >= 10) {
		end -= 2;
		memcpy(end, rt_digits2 + 2 * v, 2);
	} else {
		*--end = (char)('0' + v);
	}
	return end;
}

/* 1, 10, 100, ... 10^19. */
RT_HIDDEN extern const uint64_t rt_pow10[20];

/*
 * How many decimal digits v has (1 to 20), without a loop: the bit
 * length times log10(2) (1233/4096) is the digit count or one more.
 */
static inline unsigned rt_dec_len(uint64_t v)
{
	unsigned t = (unsigned)(64 - __builtin_clzll(v | 1)) * 1233 >> 12;
	return t + 1 - ((v | 1) < rt_pow10[t]); /* t is 19 at most; 0 has one digit */
}

/* ---- the environment (environ.c) ---- */

/* 1 if the program runs with AT_SECURE (set-user-ID, set-group-ID, file
 * capabilities): its environment was chosen by someone less privileged. */
RT_HIDDEN int rt_secure_mode(void);
/* getenv for RINGTRACE_* variables: NULL, whatever is set, in a program
 * running with AT_SECURE (environ.c says why). */
RT_HIDDEN const char *rt_getenv(const char *name);

/* ---- trace directories and their files (tdir.c: the rules) ---- */

/* "a FIFO", "a symbolic link", ...: the file type of a st_mode. */
RT_HIDDEN const char *rt_file_kind(unsigned mode);

/*
 * Read side: open NAME of directory dirfd (shown as DIR in messages) to
 * read, a regular file only, never following a symbolic link and never
 * blocking: an fd and *st, or -RINGTRACE_ECORRUPT (something else is
 * there: "DIR/NAME: a FIFO, not a regular file ...") or -RINGTRACE_ESYS,
 * with the message in err.
 */
RT_HIDDEN int rt_open_regular_at(int dirfd, const char *dir, const char *name, struct stat *st,
				 char *err, size_t errsize);

/* A trace directory being written. */
struct rt_tdir {
	int fd;             /* the directory: every file of the trace is opened relative to it */
	int parent;         /* its parent (O_PATH; -1 if not kept): DIR.snapshot-K are made there */
	char *name;         /* its name in parent (NULL if not kept) */
	char *path;         /* for messages */
	unsigned file_mode; /* 0600, or 0640 when shared with a group */
	uid_t uid;          /* given to created files ((uid_t)-1: left as created) */
	gid_t gid;          /* the same for the group */
	uid_t owner;        /* the directory's owner */
};

/* RINGTRACE_GROUP / the group option: NULL or "" (*gid -1), a group name
 * or a number: 0, or a negative error naming it. */
RT_HIDDEN int rt_tdir_group(const char *spec, long *gid);
/*
 * Create directory PATH (relative to atfd) for a new trace, 0700, or
 * 0750 and group `group` if group >= 0 (files then 0640), or take an
 * existing one if it is a directory (not a symbolic link), ours, writable
 * by nobody else and empty; locked until rt_tdir_close. `shown` (NULL:
 * path) names it in messages. 0, or a negative error naming the
 * directory (and the lock's holder where known).
 */
RT_HIDDEN int rt_tdir_create(struct rt_tdir *d, int atfd, const char *path, const char *shown,
			     long group);
/*
 * The same checks (ours, writable by nobody else, empty; then locked) on a
 * directory given as a descriptor fd, named `name` in the directory
 * `parent` (-1: none; snapshots then cannot be made beside it); `shown`
 * names it in messages. Takes both descriptors (closed on error too).
 * Files are shared with the directory's group if it can read it. For a
 * directory made by another process (an attaching recorder).
 */
RT_HIDDEN int rt_tdir_adopt(struct rt_tdir *d, int parent, int fd, const char *name,
			    const char *shown);
/* Open an existing trace directory to add to it (recover): a directory
 * (not a symbolic link), ours (any, for root), writable by nobody else;
 * new files get its sharing and owner. Not locked (rt_tdir_lock). */
RT_HIDDEN int rt_tdir_open(struct rt_tdir *d, const char *path);
/* flock the directory open as fd: 0, or an error naming path and holder. */
RT_HIDDEN int rt_tdir_lock(int fd, const char *path);
RT_HIDDEN void rt_tdir_close(struct rt_tdir *d);
/* A new file NAME in d (O_EXCL, O_NOFOLLOW): an fd, or a negative error. */
RT_HIDDEN int rt_tdir_create_file(const struct rt_tdir *d, const char *name);
/* NAME in d opened to append: created new, or an existing regular file
 * with one link, ours or the directory owner's. An fd, or an error. */
RT_HIDDEN int rt_tdir_append_file(const struct rt_tdir *d, const char *name);
/* Replace NAME atomically: fill(f, arg) writes .NAME.tmp (made new), then
 * it is renamed over NAME. 0, or fill's error or one naming the file. */
RT_HIDDEN int rt_tdir_replace(const struct rt_tdir *d, const char *name,
			      int (*fill)(FILE *f, void *arg), void *arg);

#endif /* RINGTRACE_BASE_H */
