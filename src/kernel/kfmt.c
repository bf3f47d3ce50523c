/*
 * Kernel events as ftrace prints them: kernel_api.h says what; here, how.
 *
 * ftrace prints an event by running its print fmt over the raw record the
 * kernel wrote. The kernel trace keeps each event's fields (the kernel's
 * names, sizes and signedness, docs/kernel.md) and its format file, so the
 * raw record can be put back together: every field written at the offset
 * the format file gives it (a __data_loc or __rel_loc field's bytes after
 * the fixed part, its location word pointing at them), common_type set to
 * the event's id in that format file and common_pid to the running task.
 * libtraceevent then prints it exactly as trace-cmd report does
 * (kfmt_tep.c: the part that needs the library; kernel_internal.h).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/kernel_internal.h"
#include "ringtrace/schema.h"

/* ---- thread names ---------------------------------------------------------- */

#define KCOMM_SLOTS 65536u /* a power of two */
#define KCOMM_PROBE 16u    /* slots tried before an old entry is replaced */

struct kcomm_slot {
	uint32_t tid1; /* tid + 1; 0: empty */
	char comm[17];
};

struct kcomm {
	struct kcomm_slot *s;
};

struct kcomm *kcomm_new(void)
{
	struct kcomm *m = calloc(1, sizeof(*m));
	if (m && !(m->s = calloc(KCOMM_SLOTS, sizeof(*m->s)))) {
		free(m);
		m = NULL;
	}
	return m;
}

void kcomm_free(struct kcomm *m)
{
	if (m) {
		free(m->s);
		free(m);
	}
}

static uint32_t kcomm_home(uint32_t tid)
{
	return (tid * 2654435761u) & (KCOMM_SLOTS - 1);
}

void kcomm_set(struct kcomm *m, uint32_t tid, const char *comm)
{
	if (!m || !comm || !comm[0] || tid == UINT32_MAX)
		return;
	uint32_t h = kcomm_home(tid);
	struct kcomm_slot *use = &m->s[h];
	for (uint32_t i = 0; i < KCOMM_PROBE; i++) {
		struct kcomm_slot *s = &m->s[(h + i) & (KCOMM_SLOTS - 1)];
		if (s->tid1 == tid + 1 || s->tid1 == 0) {
			use = s;
			break;
		}
	}
	use->tid1 = tid + 1;
	snprintf(use->comm, sizeof(use->comm), "%s", comm);
}

const char *kcomm_get(const struct kcomm *m, uint32_t tid)
{
	if (!m || tid == UINT32_MAX)
		return NULL;
	uint32_t h = kcomm_home(tid);
	for (uint32_t i = 0; i < KCOMM_PROBE; i++) {
		const struct kcomm_slot *s = &m->s[(h + i) & (KCOMM_SLOTS - 1)];
		if (s->tid1 == tid + 1)
			return s->comm;
		if (s->tid1 == 0)
			return NULL;
	}
	return NULL;
}

/* ---- a kernel trace ------------------------------------------------------- */

int kfmt_is_kernel(const ringtrace_trace *t)
{
	struct ringtrace_trace_process p;
	return ringtrace_trace_process(t, &p) == 1 && p.pid == 0 && p.procname &&
	       strcmp(p.procname, "kernel") == 0;
}

struct kfmt_ev {
	int state;             /* 0 not looked at, 1 usable, 2 not */
	struct tep_event *tep; /* its format, if it can be printed from it */
	int pid_field;         /* index of common_pid among the event's fields, -1 none */
};

struct kfmt {
	struct kfmt_ev ev[65536]; /* by event id */
	struct kfmt_tep *tep;     /* NULL: printed as name=value */
	struct ringtrace_value vals[64];
};

struct kfmt *kfmt_open(const char *dir, ringtrace_trace *t, ringtrace_trace_error_fn err, void *arg)
{
	(void)t;
	struct kfmt *k = calloc(1, sizeof(*k));
	if (k)
		k->tep = kfmt_tep_open(dir, err, arg);
	return k;
}

void kfmt_close(struct kfmt *k)
{
	if (!k)
		return;
	kfmt_tep_close(k->tep);
	free(k);
}

/* What this event is to us (looked at once per event id). */
static struct kfmt_ev *kfmt_ev(struct kfmt *k, const struct ringtrace_trace_record *rec)
{
	if (rec->kind != RINGTRACE_TRACE_EVENT || !rec->def || rec->id >= 65536)
		return NULL;
	struct kfmt_ev *e = &k->ev[rec->id];
	if (e->state == 0) {
		const struct ringtrace_trace_event_def *d = rec->def;
		e->state = 2;
		e->pid_field = -1;
		for (uint32_t i = 0; i < d->nfields && i < 64; i++)
			if (strcmp(d->fields[i].name, "common_pid") == 0 &&
			    d->fields[i].type == RINGTRACE_FT_INT)
				e->pid_field = (int)i;
		if (d->nfields <= 64)
			e->state = 1;
		e->tep = kfmt_tep_event(k->tep, d->name);
	}
	return e->state == 1 ? e : NULL;
}

const struct ringtrace_value *kfmt_val(const struct ringtrace_trace_record *rec,
				       const struct ringtrace_value *v, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(rec->def->fields[i].name, name) == 0)
			return &v[i];
	return NULL;
}

int kfmt_task(struct kfmt *k, struct kcomm *m, const struct ringtrace_trace_record *rec,
	      uint32_t *tid, const char **comm)
{
	struct kfmt_ev *e = kfmt_ev(k, rec);
	if (!e || e->pid_field < 0)
		return -1;
	int n = ringtrace_record_decode(rec->def->fields, rec->def->nfields, rec->data, rec->len,
					k->vals);
	if (n <= e->pid_field)
		return -1;
	uint32_t pid = (uint32_t)k->vals[e->pid_field].v.i;
	/* The names this event tells (a switch names both sides: the one it
	 * switches from is the task running it). */
	static const char *const pairs[][2] = {{"prev_pid", "prev_comm"},
					       {"next_pid", "next_comm"},
					       {"child_pid", "child_comm"},
					       {"parent_pid", "parent_comm"},
					       {"pid", "comm"}};
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		const struct ringtrace_value *p = kfmt_val(rec, k->vals, n, pairs[i][0]);
		const struct ringtrace_value *c = kfmt_val(rec, k->vals, n, pairs[i][1]);
		if (p && c && c->field->type == RINGTRACE_FT_STRING &&
		    p->field->type == RINGTRACE_FT_INT)
			kcomm_set(m, (uint32_t)p->v.i, (const char *)c->ptr);
	}
	*tid = pid;
	const char *s = pid == 0 ? "<idle>" : kcomm_get(m, pid);
	*comm = s ? s : "<...>";
	return 0;
}

int kfmt_fields(struct kfmt *k, const struct ringtrace_trace_record *rec, char *buf, size_t size)
{
	struct kfmt_ev *e = kfmt_ev(k, rec);
	if (!e || !e->tep || size == 0)
		return -1;
	int n = ringtrace_record_decode(rec->def->fields, rec->def->nfields, rec->data, rec->len,
					k->vals);
	if (n < 0)
		return -1;
	return kfmt_tep_print(k->tep, e->tep, rec, k->vals, n, e->pid_field, buf, size);
}
