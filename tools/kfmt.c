/*
 * Kernel events as ftrace prints them: tools/kfmt.h says what; here, how.
 *
 * ftrace prints an event by running its print fmt over the raw record the
 * kernel wrote. The kernel trace keeps each event's fields (the kernel's
 * names, sizes and signedness, docs/kernel.md) and its format file, so the
 * raw record can be put back together: every field written at the offset
 * the format file gives it (a __data_loc or __rel_loc field's bytes after
 * the fixed part, its location word pointing at them), common_type set to
 * the event's id in that format file and common_pid to the running task.
 * libtraceevent then prints it exactly as trace-cmd report does.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef RINGTRACE_HAVE_TRACEFS
#include <traceevent/event-parse.h>
#include <traceevent/trace-seq.h>
#endif

#include "kfmt.h"
#include "output.h"
#include "ringtrace/ctf.h"
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

#define KFMT_MAX_FILES 8192
#define KFMT_MAX_FORMAT (256 * 1024)
#define KFMT_MAX_TOTAL (8u << 20) /* bytes of formats parsed in all */
#define KFMT_RAW 65536            /* a kernel record is smaller than a page */

int kfmt_is_kernel(const ringtrace_trace *t)
{
	struct ringtrace_trace_process p;
	return ringtrace_trace_process(t, &p) == 1 && p.pid == 0 && p.procname &&
	       strcmp(p.procname, "kernel") == 0;
}

struct kfmt_ev {
	int state; /* 0 not looked at, 1 usable, 2 not */
#ifdef RINGTRACE_HAVE_TRACEFS
	struct tep_event *tep;
#endif
	int pid_field; /* index of common_pid among the event's fields, -1 none */
};

struct kfmt {
	struct kfmt_ev ev[65536]; /* by event id */
#ifdef RINGTRACE_HAVE_TRACEFS
	struct tep_handle *tep;
	unsigned char raw[KFMT_RAW];
#endif
	struct ringtrace_value vals[64];
};

#ifdef RINGTRACE_HAVE_TRACEFS
/* Parse every DIR/formats/SYSTEM.EVENT into k->tep. */
static void kfmt_load(struct kfmt *k, const char *dir, ringtrace_trace_error_fn err, void *arg)
{
	char path[4200], msg[4400];
	/* (the names cut where the message would be) */
	snprintf(path, sizeof(path), "%s/formats", dir);
	int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		if (errno != ENOENT && err) {
			snprintf(msg, sizeof(msg), "%s: %s (kernel events printed as name=value)",
				 path, strerror(errno));
			err(arg, msg);
		}
		return;
	}
	int lfd = dup(dfd);
	DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
	if (!d) {
		if (lfd >= 0)
			close(lfd);
		close(dfd);
		return;
	}
	char *buf = malloc(KFMT_MAX_FORMAT + 1);
	struct dirent *de;
	unsigned n = 0;
	size_t total = 0; /* (parsed formats cost memory: bounded in all) */
	while (buf && (de = readdir(d)) != NULL && n++ < KFMT_MAX_FILES && total < KFMT_MAX_TOTAL) {
		const char *name = de->d_name;
		const char *dot = strchr(name, '.');
		if (name[0] == '.' || !dot || dot - name >= 128)
			continue;
		char sys[128];
		memcpy(sys, name, (size_t)(dot - name));
		sys[dot - name] = 0;
		/* (a regular file, looked at before it is opened: a device
		 * node there is never opened) */
		struct stat st;
		ssize_t got = -1;
		int fd = fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
					 st.st_size <= KFMT_MAX_FORMAT
				 ? openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
				 : -1;
		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		    st.st_size <= KFMT_MAX_FORMAT)
			got = read(fd, buf, KFMT_MAX_FORMAT);
		if (fd >= 0)
			close(fd);
		if (got > 0)
			total += (size_t)got;
		struct tep_event *parsed = NULL;
		if (got > 0)
			buf[got] = 0; /* (libtraceevent reads past the size it is given) */
		if (got <= 0 ||
		    tep_parse_format(k->tep, &parsed, buf, (unsigned long)got, sys) != 0) {
			if (err) {
				snprintf(msg, sizeof(msg),
					 "%.4000s/%.200s: not a kernel format file that "
					 "libtraceevent reads (that event printed as name=value)",
					 path, name);
				err(arg, msg);
			}
		}
	}
	free(buf);
	closedir(d);
	close(dfd);
}
#endif

struct kfmt *kfmt_open(const char *dir, ringtrace_trace *t, ringtrace_trace_error_fn err, void *arg)
{
	(void)t;
	struct kfmt *k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
#ifdef RINGTRACE_HAVE_TRACEFS
	k->tep = tep_alloc();
	if (k->tep) {
		tep_set_long_size(k->tep, (int)sizeof(long));
		tep_set_page_size(k->tep, (int)sysconf(_SC_PAGESIZE));
		kfmt_load(k, dir, err, arg);
	}
#else
	(void)dir;
	(void)err;
	(void)arg;
#endif
	return k;
}

void kfmt_close(struct kfmt *k)
{
	if (!k)
		return;
#ifdef RINGTRACE_HAVE_TRACEFS
	if (k->tep)
		tep_free(k->tep);
#endif
	free(k);
}

#ifdef RINGTRACE_HAVE_TRACEFS
/*
 * A format file is the trace's, which anyone can write, and libtraceevent
 * trusts it: a field's offset and size are where it reads and kfmt_rebuild
 * writes, and a print fmt's __print_hex(REC->x, 200000) reads as much as
 * it says. So an event is printed from its format only when every field
 * lies in the first half of the rebuilt record (offsets and sizes not
 * negative: libtraceevent keeps them as int) with at most KFMT_MAX_FIELDS
 * of them, a dynamic field's location word is 4 bytes, and every length
 * its print fmt gives to a hex dump, array or bitmask is a dynamic
 * array's own (bounded by the location word kfmt writes), never a
 * constant or another field's value. Else the reader's name=value.
 */
#define KFMT_MAX_FIELDS 256
#define KFMT_MAX_ARGS 4096

static int kfmt_check_fields(const struct tep_format_field *f)
{
	for (int n = 0; f; f = f->next, n++) {
		long long end = (long long)f->offset + (long long)f->size;
		if (n >= KFMT_MAX_FIELDS || f->offset < 0 || f->size < 0 || end > KFMT_RAW / 2 ||
		    ((f->flags & TEP_FIELD_IS_DYNAMIC) && f->size != 4))
			return -1;
	}
	return 0;
}

/* A length argument that is bounded by the rebuilt record: a dynamic
 * array's own length (or no argument). */
static int kfmt_len_ok(const struct tep_print_arg *a)
{
	return !a || a->type == TEP_PRINT_DYNAMIC_ARRAY_LEN;
}

static int kfmt_check_args(const struct tep_print_arg *a, int depth, int *budget)
{
	for (; a; a = a->next) {
		if (depth > 32 || --*budget < 0)
			return -1;
		int bad = 0;
		switch (a->type) {
		case TEP_PRINT_HEX:
		case TEP_PRINT_HEX_STR:
			bad = !kfmt_len_ok(a->hex.size) ||
			      kfmt_check_args(a->hex.field, depth + 1, budget) < 0;
			break;
		case TEP_PRINT_INT_ARRAY:
			bad = !kfmt_len_ok(a->int_array.count) ||
			      kfmt_check_args(a->int_array.field, depth + 1, budget) < 0;
			break;
		case TEP_PRINT_BITMASK:
		case TEP_PRINT_CPUMASK:
			bad = !a->bitmask.field ||
			      !(a->bitmask.field->flags & TEP_FIELD_IS_DYNAMIC);
			break;
		case TEP_PRINT_FLAGS:
			bad = kfmt_check_args(a->flags.field, depth + 1, budget) < 0;
			break;
		case TEP_PRINT_SYMBOL:
			bad = kfmt_check_args(a->symbol.field, depth + 1, budget) < 0;
			break;
		case TEP_PRINT_TYPE:
			bad = kfmt_check_args(a->typecast.item, depth + 1, budget) < 0;
			break;
		case TEP_PRINT_OP:
			bad = kfmt_check_args(a->op.left, depth + 1, budget) < 0 ||
			      kfmt_check_args(a->op.right, depth + 1, budget) < 0;
			break;
		case TEP_PRINT_FUNC:
			bad = kfmt_check_args(a->func.args, depth + 1, budget) < 0;
			break;
		case TEP_PRINT_DYNAMIC_ARRAY:
			bad = kfmt_check_args(a->dynarray.index, depth + 1, budget) < 0;
			break;
		default:
			break;
		}
		if (bad)
			return -1;
	}
	return 0;
}

static int kfmt_check(const struct tep_event *te)
{
	int budget = KFMT_MAX_ARGS;
	if (kfmt_check_fields(te->format.common_fields) < 0 ||
	    kfmt_check_fields(te->format.fields) < 0)
		return -1;
	return kfmt_check_args(te->print_fmt.args, 0, &budget);
}
#endif

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
#ifdef RINGTRACE_HAVE_TRACEFS
		e->tep = k->tep ? tep_find_event_by_name(k->tep, NULL, d->name) : NULL;
		if (e->tep && kfmt_check(e->tep) < 0)
			e->tep = NULL; /* (printed as name=value) */
#endif
	}
	return e->state == 1 ? e : NULL;
}

/* The decoded value of the field named `name`, or NULL. */
static const struct ringtrace_value *kfmt_val(const struct ringtrace_trace_record *rec,
					      const struct ringtrace_value *v, int n,
					      const char *name)
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

#ifdef RINGTRACE_HAVE_TRACEFS
/* Write the integer v as `size` bytes at p (the host's order, as the kernel). */
static void kfmt_put_int(unsigned char *p, uint64_t v, int size)
{
	uint8_t b1 = (uint8_t)v;
	uint16_t b2 = (uint16_t)v;
	uint32_t b4 = (uint32_t)v;
	switch (size) {
	case 1:
		memcpy(p, &b1, 1);
		break;
	case 2:
		memcpy(p, &b2, 2);
		break;
	case 4:
		memcpy(p, &b4, 4);
		break;
	case 8:
		memcpy(p, &v, 8);
		break;
	default:
		break;
	}
}

/* Rebuild rec's raw kernel record into k->raw: its size, or -1. */
static int kfmt_rebuild(struct kfmt *k, struct tep_event *te,
			const struct ringtrace_trace_record *rec, int n)
{
	unsigned char *raw = k->raw;
	size_t fixed = 0;
	for (int pass = 0; pass < 2; pass++) {
		struct tep_format_field *f = pass ? te->format.fields : te->format.common_fields;
		for (; f; f = f->next)
			if ((size_t)f->offset + (size_t)f->size > fixed)
				fixed = (size_t)f->offset + (size_t)f->size;
	}
	if (fixed > KFMT_RAW / 2)
		return -1;
	memset(raw, 0, fixed);
	size_t end = fixed;
	for (struct tep_format_field *f = te->format.common_fields; f; f = f->next) {
		if (strcmp(f->name, "common_type") == 0)
			kfmt_put_int(raw + f->offset, (uint64_t)te->id, f->size);
		else if (strcmp(f->name, "common_pid") == 0 && k->ev[rec->id].pid_field >= 0)
			kfmt_put_int(raw + f->offset,
				     (uint64_t)k->vals[k->ev[rec->id].pid_field].v.i, f->size);
	}
	for (struct tep_format_field *f = te->format.fields; f; f = f->next) {
		const struct ringtrace_value *v = kfmt_val(rec, k->vals, n, f->name);
		if (!v)
			continue; /* (left out when recorded: printed as 0) */
		const unsigned char *src = v->ptr;
		size_t len = 0;
		switch (v->field->type) {
		case RINGTRACE_FT_STRING:
			len = (size_t)v->len + 1;
			break;
		case RINGTRACE_FT_BYTES:
			len = v->len;
			break;
		case RINGTRACE_FT_ARRAY:
			len = (size_t)v->len * v->field->size;
			break;
		default:
			break;
		}
		if (!src || (v->field->type != RINGTRACE_FT_STRING &&
			     v->field->type != RINGTRACE_FT_BYTES &&
			     v->field->type != RINGTRACE_FT_ARRAY)) {
			/* (a dynamic field's location word is only ever ours) */
			if (!(f->flags & TEP_FIELD_IS_DYNAMIC))
				kfmt_put_int(raw + f->offset, v->v.u, f->size);
			continue;
		}
		if (f->flags & TEP_FIELD_IS_DYNAMIC) {
			/* the bytes after the fixed part; the location word:
			 * offset in the low 16 bits (from the field's end for
			 * __rel_loc), length in the high 16 */
			if (f->size != 4 || end + len > KFMT_RAW || len > 0xffff)
				continue;
			memcpy(raw + end, src, len);
			if (v->field->type == RINGTRACE_FT_STRING)
				raw[end + len - 1] = 0;
			size_t off = end;
			if (f->flags & TEP_FIELD_IS_RELATIVE)
				off -= (size_t)f->offset + (size_t)f->size;
			kfmt_put_int(raw + f->offset, (uint64_t)((len << 16) | (off & 0xffff)), 4);
			end += len;
			end = (end + 3) & ~(size_t)3;
		} else {
			size_t room = (size_t)f->size;
			size_t c = len < room ? len : room;
			memcpy(raw + f->offset, src, c);
			if (v->field->type == RINGTRACE_FT_STRING && c == room && room)
				raw[f->offset + room - 1] = 0;
		}
	}
	return (int)end;
}
#endif

int kfmt_fields(struct kfmt *k, const struct ringtrace_trace_record *rec, char *buf, size_t size)
{
#ifdef RINGTRACE_HAVE_TRACEFS
	struct kfmt_ev *e = kfmt_ev(k, rec);
	if (!e || !e->tep || size == 0)
		return -1;
	int n = ringtrace_record_decode(rec->def->fields, rec->def->nfields, rec->data, rec->len,
					k->vals);
	if (n < 0)
		return -1;
	int len = kfmt_rebuild(k, e->tep, rec, n);
	if (len < 0)
		return -1;
	struct tep_record r = {.ts = rec->ts,
			       .cpu = (int)(rec->cpu == 0xFFFFFFFFu ? 0 : rec->cpu),
			       .size = len,
			       .data = k->raw};
	struct trace_seq s;
	trace_seq_init(&s);
	tep_print_event(k->tep, &s, &r, "%s", TEP_PRINT_INFO);
	trace_seq_terminate(&s);
	int rc = -1;
	if (s.state == TRACE_SEQ__GOOD && s.buffer) {
		const char *esc = out_esc(s.buffer);
		rc = snprintf(buf, size, "%s", esc);
		if (rc >= (int)size)
			rc = (int)size - 1;
	}
	trace_seq_destroy(&s);
	return rc;
#else
	(void)k;
	(void)rec;
	(void)buf;
	(void)size;
	return -1;
#endif
}
