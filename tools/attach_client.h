/*
 * The recorder's side of the attach conversation (docs/attach.md), shared
 * by `ringtrace ps` and `ringtrace record -p`: finding a program's socket
 * and reading its HELLO, with every answer checked (the program is
 * another process: trusted for nothing).
 */
#ifndef RINGTRACE_TOOLS_ATTACH_CLIENT_H
#define RINGTRACE_TOOLS_ATTACH_CLIENT_H

#include <stddef.h>
#include <sys/types.h>

#include "ringtrace/attach.h"

/*
 * Connect to the program behind dirfd/name (its socket, <pid>.sock in a
 * rendezvous directory of uid), check that the listener is that pid and
 * uid, and read its HELLO. 0, *h and the connection in *fd (1 s timeouts
 * set on it); 1 if no one listens there (a stale file); -1 with a reason
 * in why (the program's refusal, escaped, or what was wrong).
 */
int attach_hello(int dirfd, const char *name, pid_t pid, uid_t uid,
		 struct ringtrace_attach_hello *h, int *fd, char *why, size_t wn);

/*
 * The rendezvous directory of uid holding <pid>.sock: its descriptor and
 * path, or -1 with a reason in why (no such socket in any of them).
 */
int attach_find(pid_t pid, uid_t uid, char *path, size_t pn, char *why, size_t wn);

/*
 * Every user's rendezvous directory that root may look in (docs/attach.md:
 * /run/ringtrace for root, then /run/user/UID/ringtrace and
 * /tmp/ringtrace-UID for each UID found there), as path and uid, to fn;
 * whether each is one (its user's, 0700) is fn's to check. Bounded.
 */
void attach_each_user_dir(void (*fn)(const char *dir, uid_t uid, void *arg), void *arg);

#endif
