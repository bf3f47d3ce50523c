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
#define RINGTRACE_ATTACH_VERSION 1u
#define RINGTRACE_ATTACH_MAX_PAYLOAD 4096u

enum ringtrace_attach_type {
	RINGTRACE_ATTACH_HELLO = 1,  /* program -> peer, at once: struct ringtrace_attach_hello */
	RINGTRACE_ATTACH_DENIED = 2, /* program -> peer: why (NUL-terminated text), then close */
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

#ifdef __cplusplus
}
#endif
#endif /* RINGTRACE_ATTACH_H */
