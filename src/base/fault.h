/*
 * src/base/fault.h - fault injection, in the builds made to test failure
 * paths (CMake option RINGTRACE_FAULT_INJECTION; make check's ASan build).
 *
 * In those builds every source file of ringtrace (the libraries, the
 * command) is compiled with src/base/fault_wrap.h included first, which
 * turns its calls of the allocation, file and descriptor functions below
 * into calls of rt_fault_<name>(). Those count the calls and make one of
 * them (or every one from some point on) fail as the system call would:
 * NULL or -1 or MAP_FAILED, with errno set. Only ringtrace's own calls
 * are counted: a test program's code, libc's internal allocations and
 * other libraries' (SQLite's) are compiled without the wrapper. In every
 * other build nothing of this exists.
 *
 * What is failed is said by a spec, from the environment of the process
 * (RINGTRACE_FAULT, read at the first counted call; secure_getenv, so
 * never in a set-user-ID program) or from rt_fault_arm() in a test:
 *
 *   KIND:N[:OPTION]...
 *
 *   KIND   the calls counted: a function (malloc calloc realloc strdup
 *          strndup open openat fopen shm_open memfd_create opendir
 *          fdopendir dup write pwrite ftruncate mmap socket), or a class:
 *          alloc (the first five), open (open .. dup), write (write,
 *          pwrite), file (open, write, ftruncate, mmap and socket's
 *          functions), any (all of them).
 *   N      the counted call that fails, from 1.
 *   persist  that call and every later one fail (a full disk, a
 *          process out of descriptors) instead of that call only.
 *   errno=NAME  the error: ENOMEM ENOSPC EIO EDQUOT EMFILE ENFILE EACCES
 *          EPERM EINTR EAGAIN EFBIG EROFS (default: ENOMEM for alloc and
 *          mmap, EMFILE for open and socket, EIO for write and ftruncate).
 *   stall=MS  the call is not failed: it waits MS milliseconds first (a
 *          stalled disk), every time with persist, once without.
 *
 * RINGTRACE_FAULT_ONLY=NAME arms the environment's spec only in processes
 * whose program_invocation_short_name is NAME (`ringtrace record -- CMD`
 * runs two programs; a test fails one of them at a time).
 * RINGTRACE_FAULT_LOG=PATH: each failed (or stalled) call appends one line
 * there, "fault <function> <call number> <errno name> <pid>", so that a
 * test that loops N over every call knows when N has passed the last call
 * (nothing was logged: the run made fewer than N calls).
 */
#ifndef RINGTRACE_BASE_FAULT_H
#define RINGTRACE_BASE_FAULT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Arm spec (the syntax above; NULL or "" disarms), counters reset: 0, or
 * -1 with a message on stderr for a spec that does not parse. Not while
 * other threads make counted calls (a test arms, runs, then disarms). */
int rt_fault_arm(const char *spec);
void rt_fault_disarm(void);
/* Calls counted and calls failed (or stalled) since the last arm. */
uint64_t rt_fault_calls(void);
uint64_t rt_fault_fired(void);

#ifdef __cplusplus
}
#endif

#endif /* RINGTRACE_BASE_FAULT_H */
