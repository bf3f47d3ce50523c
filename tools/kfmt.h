/*
 * Kernel events as ftrace prints them (report, docs/kernel.md).
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
#ifndef RINGTRACE_TOOLS_KFMT_H
#define RINGTRACE_TOOLS_KFMT_H

#include <stddef.h>
#include <stdint.h>

#include "ringtrace/trace.h"

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
