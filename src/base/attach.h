/*
 * src/base/attach.h - what a traced program and the ringtrace command
 * share to find each other without a daemon (docs/attach.md): the
 * rendezvous directory and the messages on a program's socket.
 *
 * The directory: $XDG_RUNTIME_DIR/ringtrace, else /run/user/<euid>/ringtrace,
 * else /tmp/ringtrace-<euid>; /run/ringtrace for root. Made 0700; used only
 * when it is a directory (not a symbolic link), owned by the effective uid,
 * with no access for anyone else. A program's socket there is <pid>.sock.
 *
 * Messages: a header (payload length, type) and a payload of at most
 * RT_ATT_MAX_PAYLOAD bytes; everything received is checked (lengths,
 * magic, version, NUL-terminated strings) before use: the peer is another
 * process, trusted by neither side.
 */
#ifndef RINGTRACE_BASE_ATTACH_H
#define RINGTRACE_BASE_ATTACH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/base.h"

#define RT_ATT_MAGIC 0x54415452u /* "RTAT" */
#define RT_ATT_VERSION 1u
#define RT_ATT_MAX_PAYLOAD 4096u

enum rt_att_type {
	RT_ATT_HELLO = 1,  /* program -> recorder, on accept */
	RT_ATT_DENIED = 2, /* program -> recorder: a reason (text), then close */
};

struct rt_att_hdr {
	uint32_t len; /* payload bytes after the header */
	uint32_t type;
};

struct rt_att_hello {
	uint32_t magic, version;
	uint32_t pid, uid;
	uint32_t nevents;   /* events registered in the program */
	uint32_t recording; /* 1: a session records now */
	char comm[16];      /* NUL-terminated */
	char exe[1024];     /* NUL-terminated; "" if unknown */
};

/*
 * Open the rendezvous directory of the effective uid: its descriptor
 * (O_DIRECTORY | O_PATH-free, close-on-exec), its path in path[0..n), or
 * -1 with ringtrace_last_error() saying what was wrong with which path.
 * create: make it (0700) if missing.
 */
RT_HIDDEN int rt_att_dir_open(int create, char *path, size_t n);

/*
 * Open dir as a rendezvous directory of uid: a directory (not a symbolic
 * link), owned by uid, no access for group or others. Its descriptor, or
 * -1 (errno kept: ENOENT when there is none) with ringtrace_last_error()
 * saying what was wrong.
 */
RT_HIDDEN int rt_att_dir_check(const char *dir, uid_t uid);

/* Write one message (header and payload) in full; 0 or -1 (errno). */
RT_HIDDEN int rt_att_send(int fd, uint32_t type, const void *payload, uint32_t len);
/*
 * Read one message: its type, and its payload into buf (at most cap bytes;
 * *len its length). 0, or -1 with ringtrace_last_error() naming what was
 * wrong (EOF, a length over cap or RT_ATT_MAX_PAYLOAD, a read error).
 */
RT_HIDDEN int rt_att_recv(int fd, uint32_t *type, void *buf, uint32_t cap, uint32_t *len);

#endif /* RINGTRACE_BASE_ATTACH_H */
