/*
 * Kernel events printed by libtraceevent from their format files
 * (kernel_internal.h): the part of kfmt.c that needs the library, built
 * only where it is (src/kernel/none.c stands in elsewhere).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <traceevent/event-parse.h>
#include <traceevent/trace-seq.h>
#include <unistd.h>

#include "base/base.h"
#include "kernel/kernel_internal.h"
#include "ringtrace/schema.h"

#define KFMT_MAX_FILES 8192
#define KFMT_MAX_FORMAT (256 * 1024)
#define KFMT_MAX_TOTAL (8u << 20) /* bytes of formats parsed in all */
#define KFMT_RAW 65536            /* a kernel record is smaller than a page */

struct kfmt_tep {
	struct tep_handle *tep;
	unsigned char raw[KFMT_RAW]; /* the record rebuilt for printing */
};

/* Parse every DIR/formats/SYSTEM.EVENT into k->tep. */
static void kfmt_load(struct kfmt_tep *k, const char *dir, ringtrace_trace_error_fn err, void *arg)
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
struct kfmt_tep *kfmt_tep_open(const char *dir, ringtrace_trace_error_fn err, void *arg)
{
	struct kfmt_tep *k = calloc(1, sizeof(*k));
	if (!k || !(k->tep = tep_alloc())) {
		free(k);
		return NULL;
	}
	tep_set_long_size(k->tep, (int)sizeof(long));
	tep_set_page_size(k->tep, (int)sysconf(_SC_PAGESIZE));
	kfmt_load(k, dir, err, arg);
	return k;
}

void kfmt_tep_close(struct kfmt_tep *k)
{
	if (!k)
		return;
	tep_free(k->tep);
	free(k);
}

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
struct tep_event *kfmt_tep_event(struct kfmt_tep *k, const char *name)
{
	struct tep_event *te = k ? tep_find_event_by_name(k->tep, NULL, name) : NULL;
	return te && kfmt_check(te) == 0 ? te : NULL; /* (else printed as name=value) */
}

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
static int kfmt_rebuild(struct kfmt_tep *k, struct tep_event *te,
			const struct ringtrace_trace_record *rec,
			const struct ringtrace_value *vals, int n, int pid_field)
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
		else if (strcmp(f->name, "common_pid") == 0 && pid_field >= 0 && pid_field < n)
			kfmt_put_int(raw + f->offset, (uint64_t)vals[pid_field].v.i, f->size);
	}
	for (struct tep_format_field *f = te->format.fields; f; f = f->next) {
		const struct ringtrace_value *v = kfmt_val(rec, vals, n, f->name);
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
int kfmt_tep_print(struct kfmt_tep *k, struct tep_event *te,
		   const struct ringtrace_trace_record *rec, const struct ringtrace_value *vals,
		   int n, int pid_field, char *buf, size_t size)
{
	int len = kfmt_rebuild(k, te, rec, vals, n, pid_field);
	if (len < 0)
		return -1;
	struct tep_record r = {.ts = rec->ts,
			       .cpu = (int)(rec->cpu == UINT32_MAX ? 0 : rec->cpu),
			       .size = len,
			       .data = k->raw};
	struct trace_seq s;
	trace_seq_init(&s);
	tep_print_event(k->tep, &s, &r, "%s", TEP_PRINT_INFO);
	trace_seq_terminate(&s);
	int rc = -1;
	if (s.state == TRACE_SEQ__GOOD && s.buffer) {
		const char *esc = rt_esc(s.buffer);
		rc = snprintf(buf, size, "%s", esc);
		if (rc >= (int)size)
			rc = (int)size - 1;
	}
	trace_seq_destroy(&s);
	return rc;
}
