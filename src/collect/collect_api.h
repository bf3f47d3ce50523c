/*
 * src/collect/collect_api.h - recording other processes and recovering
 * their pools: the machinery of the ringtrace command's record, list -p,
 * ps and recover verbs, below them so that no verb uses another's file.
 *
 * Above the reader and the kernel events layer; uses the ring buffer only
 * as a process that maps another's pool sees it (no writer), the ctf
 * layer's trace-directory files and the attach protocol of the base. Never
 * the tracing runtime: the programs recorded run their own session (their
 * library), this layer only asks them to and collects what they leave.
 * Messages go to stderr, prefixed with the command's verb ("ringtrace
 * record: ..."): this layer is the command's.
 *
 *   attach_client.c  the recorder's side of the attach conversation
 *                    (docs/attach.md): a program's socket and its HELLO
 *   programs.c       recording running programs (record -p / -a) into a
 *                    collection, one trace directory each
 *   outdir.c         output and temporary directories, pool names
 *   recover.c        a dead program's trace completed from its pool
 */
#ifndef RINGTRACE_COLLECT_API_H
#define RINGTRACE_COLLECT_API_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ringtrace/attach.h"

struct ringtrace_rb;

/* ---- the attach conversation (attach_client.c) ---- */

/*
 * Connect to the program behind dirfd/name (its socket, <pid>.sock in a
 * rendezvous directory of uid), check that the listener is that pid and
 * uid, and read its HELLO. 0, *h and the connection in *fd (1 s timeouts
 * set on it); 1 if no one listens there (a stale file); -1 with a reason
 * in why (the program's refusal, escaped, or what was wrong). The program
 * is another process: every answer is checked, it is trusted for nothing.
 */
int co_attach_hello(int dirfd, const char *name, pid_t pid, uid_t uid,
		    struct ringtrace_attach_hello *h, int *fd, char *why, size_t wn);

/*
 * The rendezvous directory of uid holding <pid>.sock: its descriptor and
 * path, or -1 with a reason in why (no such socket in any of them).
 */
int co_attach_find(pid_t pid, uid_t uid, char *path, size_t pn, char *why, size_t wn);

/*
 * Every user's rendezvous directory that root may look in (docs/attach.md:
 * /run/ringtrace for root, then /run/user/UID/ringtrace and
 * /tmp/ringtrace-UID for each UID found there), as path and uid, to fn;
 * whether each is one (its user's, 0700) is fn's to check. Bounded.
 */
void co_each_user_dir(void (*fn)(const char *dir, uid_t uid, void *arg), void *arg);

/* ---- directories and pool names (outdir.c) ---- */

/*
 * The output directory of a recording: made (0700, or 0750 with group),
 * or an existing one taken if it is ours, writable by nobody else and
 * empty. Its descriptor, or -1 having said why.
 */
int co_outdir(const char *out, long group);
/* A process's trace directory name in a collection: <comm>-<pid>. */
void co_dirname(char *buf, size_t n, const char *comm, pid_t pid);
/* A pool name nobody can guess (or create before the program does), in
 * buf: 0, or -1 having said why. */
int co_shm_name(char *buf, size_t size);
/*
 * A private temporary directory ($TMPDIR or /tmp, ringtrace-list-XXXXXX,
 * 0700) in buf: 0, or -1 having said why.
 */
int co_tmpdir(char *buf, size_t size);
/*
 * Remove a directory this process made with co_tmpdir and what was
 * written under it: a walk of at most a few levels and entries that never
 * follows a symbolic link (unlinkat, openat O_NOFOLLOW). 0, or -1 having
 * said what was left.
 */
int co_tmpdir_remove(const char *dir);

/* ---- recording running programs (programs.c) ---- */

struct co_settings {
	const char *pids; /* "PID[,PID...]", or NULL */
	int all;          /* -a: every program (root: every user's), those that start too */
	char **argv;      /* -a -- CMD: the command; then only it and its descendants */
	const char *out;  /* the output directory (one trace per program in it) */
	const char *events, *filters, *triggers; /* as RINGTRACE_EVENTS, ... (NULL: none) */
	const char *bufsize, *pagesize;          /* NULL: the defaults */
	int overwrite, quiet;
	long group;           /* -1: private */
	uint64_t duration_ns; /* 0: until Ctrl-C or every program's exit */
	/* -k: kernel events of the recorded programs' threads (the kernel layer) */
	char *const *kspecs;
	int nk;
	size_t kbuf_kb;
	int kall; /* --kernel-all */
};

/*
 * Record until Ctrl-C, the duration, every program's exit (-p) or the
 * command's (-a -- CMD): the exit status (the command's, with one; 2 for
 * a malformed pid list).
 */
int co_record_programs(const struct co_settings *o);

/* ---- recovery (recover.c) ---- */

/*
 * Complete the trace of a dead program in DIR from its pool SHM: 0, or 1
 * having said why not. `force`: recover from a pool of another uuid, or
 * with live writers (ringtrace recover --force).
 */
int co_recover(const char *shm, const char *dir, int quiet, int force);
/*
 * The pool of the unfinished trace in DIR (the same uuid), among the
 * shared-memory objects named ringtrace-* that co_pool_attach takes for
 * DIR's owner: 1 and its name ("/ringtrace-...") in shm[0..n), 0 if none
 * is left, -1 with a message in err (DIR's metadata unreadable, or
 * final: a complete trace).
 */
int co_find_pool(const char *dir, char *shm, size_t n, char *err, size_t errsize);
/*
 * Map the pool SHM for reading if it is the object the program made: a
 * shared-memory object of uid `owner`, no access for group or others
 * (the library creates it O_EXCL, 0600). 0 and *out, or -1 with a message
 * in err.
 */
int co_pool_attach(const char *shm, uid_t owner, struct ringtrace_rb **out, char *err,
		   size_t errsize);

#endif
