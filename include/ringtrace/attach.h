/*
 * ringtrace/attach.h - reaching a running program linked with libringtrace
 * (docs/attach.md): where its socket is, and the messages on it. Used by
 * the library in every program (its listener) and by the ringtrace
 * command (ps); in both libraries (libringtrace, libringtrace_read).
 *
 * The rendezvous directory of a user: $XDG_RUNTIME_DIR/ringtrace, else
 * /run/user/<euid>/ringtrace, else /tmp/ringtrace-<euid>; /run/ringtrace for
 * root. Made 0700; used only when it is a directory (not a symbolic link),
 * owned by that uid, with no access for group or others. A program's
 * socket there is <pid>.sock (a Unix stream socket).
 *
 * Messages: a header (payload length, type), then at most
 * RINGTRACE_ATTACH_MAX_PAYLOAD bytes. A peer is another process, trusted
 * by neither side: everything received is checked before use.
 */
#ifndef RINGTRACE_ATTACH_H
#define RINGTRACE_ATTACH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RINGTRACE_ATTACH_MAGIC 0x54415452u /* "RTAT" */
#define RINGTRACE_ATTACH_VERSION 2u
#define RINGTRACE_ATTACH_MAX_PAYLOAD 4096u

/*
 * A conversation: the program sends HELLO (or DENIED and closes) as soon
 * as it accepts. A peer that only looks (ringtrace ps) closes then. A
 * recorder sends RECORD; the program answers OK (it records) or ERROR
 * (nothing changed). It records until the peer sends STOP or closes the
 * connection (a recorder killed with SIGKILL closes it too); then it
 * stops, restores what events, filters and triggers it had, and (if the
 * connection is still there) answers STOPPED.
 */
enum ringtrace_attach_type {
	RINGTRACE_ATTACH_HELLO = 1,  /* program -> peer, at once: struct ringtrace_attach_hello */
	RINGTRACE_ATTACH_DENIED = 2, /* program -> peer: why (NUL-terminated text), then close */
	/*
	 * peer -> program: the session's settings as "KEY=VALUE" strings,
	 * each NUL-terminated, one after the other: DIR (the trace
	 * directory's path, for messages), EVENTS, FILTERS, TRIGGERS (as
	 * RINGTRACE_EVENTS, _FILTERS, _TRIGGERS), MODE (discard or
	 * overwrite), BUFFER_SIZE, PAGE_SIZE (as RINGTRACE_BUFFER_SIZE and
	 * _PAGE_SIZE), CLOCK ("FREQ:BASE_TICKS:BASE_NS", decimal: the
	 * conversion of the cycle counter to time the trace is to declare;
	 * taken when the program's own clock is the cycle counter too and
	 * FREQ is within 0.1% of its own, else the program's is used),
	 * REALTIME_OFFSET (CLOCK_REALTIME - CLOCK_MONOTONIC in ns, decimal,
	 * signed: the recording's, which every trace of it declares; without
	 * it the program measures its own when it starts), SHM
	 * (the pool as a named shared-memory object, "/name", created new and
	 * 0600, as RINGTRACE_SHM: the recorder recovers the committed events
	 * from it if the program dies while recorded); only DIR is required. With it, by SCM_RIGHTS, the
	 * trace directory (empty, the program's user's, made by the peer:
	 * files are shared with its group if it can read it) and,
	 * optionally, the directory that holds it (where snapshots are made;
	 * without it, snapshot triggers fail with a message).
	 */
	RINGTRACE_ATTACH_RECORD = 3,
	RINGTRACE_ATTACH_OK = 4,      /* program -> peer: recording (no payload) */
	RINGTRACE_ATTACH_ERROR = 5,   /* program -> peer: why not (NUL-terminated text) */
	RINGTRACE_ATTACH_STOP = 6,    /* peer -> program: stop recording (no payload) */
	RINGTRACE_ATTACH_STOPPED = 7, /* program -> peer: struct ringtrace_attach_stopped */
};

struct ringtrace_attach_hdr {
	uint32_t len; /* payload bytes after the header */
	uint32_t type;
};

struct ringtrace_attach_hello {
	uint32_t magic, version;
	uint32_t pid, uid;
	uint32_t nevents;   /* events registered in the program */
	uint32_t recording; /* 1: a session records it now */
	char comm[16];      /* NUL-terminated */
	char exe[1024];     /* NUL-terminated; "" if unknown */
	/*
	 * The program's trace clock: is_tsc 1 if its timestamps are the cycle
	 * counter, then ticks per second and one calibration point (ticks and
	 * CLOCK_MONOTONIC ns at the same instant). A recorder of several
	 * programs sends one program's to all (RECORD's CLOCK), so that they
	 * all convert the counter to time the same way.
	 */
	uint32_t clock_is_tsc, pad;
	uint64_t clock_freq, clock_base_ticks, clock_base_ns;
};

/* The answer to STOP: what the session recorded (struct ringtrace_trace_stats). */
struct ringtrace_attach_stopped {
	uint64_t hit;          /* events recorded into the buffer */
	uint64_t missed;       /* events lost: the buffer was full (discard mode) */
	uint64_t overrun;      /* events overwritten before being written out (overwrite mode) */
	uint64_t pages, bytes; /* written to the trace's stream files */
	int32_t status;        /* 0, or the negative error of the session's stop */
	char error[252];       /* its message, NUL-terminated ("" if none) */
};

/*
 * Open the rendezvous directory of the effective uid (create: make it,
 * 0700, if missing): its descriptor (close-on-exec) and its path in
 * path[0..n), or -1 with ringtrace_last_error() saying what is wrong with
 * which path (errno kept: ENOENT when there is none).
 */
int ringtrace_attach_dir_open(int create, char *path, size_t n);
/* The same for an existing directory `dir` that must be uid's. */
int ringtrace_attach_dir_check(const char *dir, unsigned uid);

/* Send one message, header and payload, in full: 0 or -1 (errno). */
int ringtrace_attach_send(int fd, uint32_t type, const void *payload, uint32_t len);
/*
 * Receive one message: its type, its payload in buf (at most cap bytes)
 * and its length. 0, or -1 with ringtrace_last_error() saying what was
 * wrong (the peer closed, a length over cap, a read error or timeout).
 */
int ringtrace_attach_recv(int fd, uint32_t *type, void *buf, uint32_t cap, uint32_t *len);
/*
 * The same with descriptors passed along (SCM_RIGHTS): send nfds (at most
 * RINGTRACE_ATTACH_MAX_FDS) of fds with the message; receive at most
 * maxfds of them into fds (close-on-exec), their number in *nfds (-1 in
 * each unused entry). A message that comes with more descriptors than
 * asked for is refused, the extra ones closed.
 */
#define RINGTRACE_ATTACH_MAX_FDS 4
int ringtrace_attach_send_fds(int fd, uint32_t type, const void *payload, uint32_t len,
			      const int *fds, unsigned nfds);
int ringtrace_attach_recv_fds(int fd, uint32_t *type, void *buf, uint32_t cap, uint32_t *len,
			      int *fds, unsigned maxfds, unsigned *nfds);

#ifdef __cplusplus
}
#endif
#endif /* RINGTRACE_ATTACH_H */
