/*
 * Inside the kernel layer: what kfmt.c asks of libtraceevent, given by
 * kfmt_tep.c where the library is and by none.c where it is not (no
 * format: every kernel event printed as name=value).
 */
#ifndef RINGTRACE_KERNEL_INTERNAL_H
#define RINGTRACE_KERNEL_INTERNAL_H

#include "kernel/kernel_api.h"
#include "ringtrace/schema.h"

struct kfmt_tep;  /* a kernel trace's format files, parsed */
struct tep_event; /* libtraceevent's: one event's format */

/* The format files of the kernel trace in dir (DIR/formats): NULL if
 * none can be had (out of memory, or built without libtraceevent).
 * Files that cannot be read are said through err. */
struct kfmt_tep *kfmt_tep_open(const char *dir, ringtrace_trace_error_fn err, void *arg);
void kfmt_tep_close(struct kfmt_tep *k);
/* The format of the event called name, if it is there and safe to print
 * from (kfmt_tep.c says what that takes), else NULL. */
struct tep_event *kfmt_tep_event(struct kfmt_tep *k, const char *name);
/*
 * rec, whose n fields decoded are vals (common_pid the pid_field-th, -1:
 * none), printed by te's print fmt into buf (NUL-terminated, control
 * bytes as \xNN): the length, or -1.
 */
int kfmt_tep_print(struct kfmt_tep *k, struct tep_event *te,
		   const struct ringtrace_trace_record *rec, const struct ringtrace_value *vals,
		   int n, int pid_field, char *buf, size_t size);

/* The decoded value of rec's field named `name` among its n values, or NULL. */
const struct ringtrace_value *kfmt_val(const struct ringtrace_trace_record *rec,
				       const struct ringtrace_value *v, int n, const char *name);

#endif
