/*
 * src/kernel/kernel_api.h - the kernel events layer: recording the
 * kernel's events beside the programs' (`ringtrace record -k`) and
 * printing them as ftrace does (`ringtrace report`), docs/kernel.md.
 *
 * Built with libtracefs and libtraceevent where they exist (kernel.c,
 * kfmt_tep.c); where they do not, none.c stands in: kr_available says
 * why, kr_start fails with the same reason, and kernel events are printed
 * as name=value. Every declaration here is there in both builds, so that
 * no user of the layer tests how it was built.
 */
#ifndef RINGTRACE_KERNEL_API_H
#define RINGTRACE_KERNEL_API_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ringtrace/ctf.h"
#include "ringtrace/trace.h"

/* ---- recording: ringtrace record -k (kernel.c) ---- */

/*
 * Whether this build can record kernel events: 0, or -1 with the reason
 * in why (built without libtracefs and libtraceevent, and what to install).
 */
int kr_available(char *why, size_t wn);

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
/*
 * Stop, drain what is left and write the trace DIR/kernel
 * (clk: the recording's clock conversion; NULL: none, the recorder's own,
 * the counter calibrated against CLOCK_MONOTONIC from kr_start to here;
 * realtime_offset: the recording's CLOCK_REALTIME - CLOCK_MONOTONIC, the
 * one its programs' traces declare; NULL: the recorder's own, measured
 * at kr_start). 0, or -1 having said why.
 */
int kr_finish(struct kr *k, const char *dir, const struct ringtrace_trace_clock *clk,
	      const int64_t *realtime_offset, int quiet);
/* Remove the instance and free everything (after kr_finish too). */
void kr_abort(struct kr *k);

/* ---- printing: ringtrace report (kfmt.c) ---- */

/*
 * Kernel events as ftrace prints them (report, docs/kernel.md; kfmt.c).
 *
 * A kernel trace (DIR/kernel of a collection: its process is pid 0,
 * "kernel") has one stream per CPU; each event carries the task that was
 * running (common_pid, its last field) and the trace keeps the kernel's
 * format file of each event (DIR/kernel/formats/SYSTEM.EVENT, docs/format.md
 * section 9). report prints such an event in ftrace's shape:
 *
 *   COMM-PID [CPU] SECONDS.MICROS: EVENT: <the kernel's print fmt>
 *
 * COMM from the names the collection has shown so far for that thread
 * (kcomm: sched_switch's prev_comm/next_comm, sched_wakeup's comm, the
 * fork's child_comm, the thread names of the user traces), "<...>" when
 * none yet, as ftrace does for a pid it has no name for. The fields are
 * printed by libtraceevent from the saved format file (the kernel's own
 * print fmt: sched_switch's "prev_state=S ==> next_comm=..."); a command
 * built without libtraceevent, or an event whose format is missing or
 * does not parse, prints the fields as name=value instead.
 *
 * Everything here reads a trace, which anyone can write: formats are
 * bounded in size and number, and a field that does not fit is left out.
 */
/* ---- thread names --------------------------------------------------------- */

struct kcomm;
struct kcomm *kcomm_new(void); /* NULL: out of memory */
void kcomm_free(struct kcomm *m);
/* Remember tid's name (the newest wins; bounded: an old entry may go). */
void kcomm_set(struct kcomm *m, uint32_t tid, const char *comm);
/* tid's name, or NULL if none was seen. */
const char *kcomm_get(const struct kcomm *m, uint32_t tid);

/* ---- a kernel trace ------------------------------------------------------- */

struct kfmt;
/* Whether t is a kernel trace (its process line: pid 0, "kernel"). */
int kfmt_is_kernel(const ringtrace_trace *t);
/* For the kernel trace t in dir: NULL if out of memory. Formats that
 * cannot be read are said once through err (the file and why). */
struct kfmt *kfmt_open(const char *dir, ringtrace_trace *t, ringtrace_trace_error_fn err,
		       void *arg);
void kfmt_close(struct kfmt *k);
/*
 * Learn names from rec (into m) and give the task that ran it: *tid and
 * *comm (kcomm's, or "<...>"). 0, or -1 if rec has no common_pid.
 */
int kfmt_task(struct kfmt *k, struct kcomm *m, const struct ringtrace_trace_record *rec,
	      uint32_t *tid, const char **comm);
/*
 * rec's fields as ftrace prints them, into buf (NUL-terminated, control
 * bytes as \xNN): the length, or -1 (no format for it: the caller prints
 * the fields its own way).
 */
int kfmt_fields(struct kfmt *k, const struct ringtrace_trace_record *rec, char *buf, size_t size);

#endif
