/*
 * ringtrace record -k: kernel events in a trace of their own beside the
 * programs' (tools/kernel.c, docs/kernel.md). Linked with libtracefs and
 * libtraceevent, by the command only.
 */
#ifndef RINGTRACE_TOOLS_KERNEL_H
#define RINGTRACE_TOOLS_KERNEL_H

#include <stddef.h>
#include <sys/types.h>

#include "ringtrace/ctf.h"

struct kr;

/*
 * Make a private tracefs instance on the cycle counter's clock with the
 * events of specs ("sched:sched_switch", globs, several separated by
 * commas), buf_kb of buffer per CPU (0: the kernel's default), and start
 * it, with a thread that drains every CPU's buffer by pages into spool
 * files in dir/kernel (unlinked) while the programs run. all: every
 * thread's events, else only those of the threads kr_follow names and
 * their descendants. 0 and *out, or -1 with the reason in why (nothing
 * left behind).
 */
int kr_start(struct kr **out, const char *dir, char *const *specs, int nspecs, size_t buf_kb,
	     int all, char *why, size_t wn);
/* Record the events of pid's threads (and of what they fork from now on). */
void kr_follow(struct kr *k, pid_t pid);
/* Its instance's name (for messages). */
const char *kr_instance(const struct kr *k);
/*
 * Stop, drain what is left and write the trace DIR/kernel
 * (clk: the recording's clock conversion; NULL: none, the recorder's own,
 * the counter calibrated against CLOCK_MONOTONIC from kr_start to here).
 * 0, or -1 having said why.
 */
int kr_finish(struct kr *k, const char *dir, const struct ringtrace_trace_clock *clk, int quiet);
/* Remove the instance and free everything (after kr_finish too). */
void kr_abort(struct kr *k);

#endif
