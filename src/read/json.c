/*
 * The Chrome/Perfetto trace event format: {"traceEvents":[...]} with one
 * object per event (microsecond timestamps), "M" metadata events naming
 * the process and each thread, and the phase chosen by the event's kind
 * (RINGTRACE_EVENT_KIND): instant "i", begin "B", end "E", counter "C"
 * (each numeric field a series). Fields go into "args"; a
 * ringtrace_printf record's text into args.msg; events lost between two
 * pages of a stream become an instant event "ringtrace_lost" with the
 * count. Loadable in Perfetto's UI and chrome://tracing.
 *
 * The kernel trace of a collection (process pid 0: docs/kernel.md) has one
 * stream per CPU, and its records' tid is no thread's: its events go on
 * one track per CPU ("CPU N", sorted by N) of a process "kernel", at pids
 * and tids above every Linux pid (RINGTRACE_JSON_KERNEL_PID). Spans the
 * caller gives (ringtrace_trace_write_json_spans) come last, as "X" events.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "read/trace_internal.h"

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len = s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 ? 2 : 0;
	if (len == 0 || len > n || s[0] > 0xF4)
		return 0;
	for (size_t i = 1; i < len; i++)
		if ((s[i] & 0xC0) != 0x80)
			return 0;
	return len;
}

/* A JSON string: UTF-8 passes through, invalid bytes become U+FFFD. */
static void json_str(FILE *f, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	fputc('"', f);
	for (size_t i = 0; i < n && u[i];) {
		unsigned char c = u[i];
		if (c == '"' || c == '\\') {
			fprintf(f, "\\%c", c);
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			fprintf(f, "\\u%04x", c);
			i++;
		} else if (c < 0x80) {
			fputc(c, f);
			i++;
		} else {
			size_t l = utf8_len(u + i, n - i);
			if (l) {
				fwrite(u + i, 1, l, f);
				i += l;
			} else {
				fputs("\\ufffd", f);
				i++;
			}
		}
	}
	fputc('"', f);
}

static void json_double(FILE *f, double d)
{
	if (isnan(d) || isinf(d))
		fprintf(f, "\"%g\"", d); /* JSON has no NaN/Infinity */
	else
		fprintf(f, "%.17g", d);
}

/* args of an event from its fields; numeric_only for counters. */
static int json_args(FILE *f, const struct ringtrace_trace_record *rec, int numeric_only)
{
	const struct ringtrace_trace_event_def *d = rec->def;
	struct ringtrace_value vals[RT_CTF_MAX_FIELDS];
	if (!d || d->nfields > RT_CTF_MAX_FIELDS)
		return -1;
	int n = ringtrace_record_decode(d->fields, d->nfields, rec->data, rec->len, vals);
	if (n < 0)
		return -1;
	int first = 1;
	for (uint32_t i = 0; i < d->nfields; i++) {
		const struct ringtrace_field_desc *fd = &d->fields[i];
		const struct ringtrace_value *v = &vals[i];
		if (rt_field_hidden(d->fields, i))
			continue;
		int numeric = fd->type == RINGTRACE_FT_INT || fd->type == RINGTRACE_FT_FLOAT ||
			      fd->type == RINGTRACE_FT_BOOL || fd->type == RINGTRACE_FT_ENUM;
		if (numeric_only && !numeric)
			continue;
		if (numeric_only && fd->type == RINGTRACE_FT_FLOAT &&
		    (isnan(v->v.f) || isinf(v->v.f)))
			continue; /* a counter series has no NaN */
		fputs(first ? "" : ",", f);
		first = 0;
		json_str(f, fd->name, strlen(fd->name));
		fputc(':', f);
		switch (fd->type) {
		case RINGTRACE_FT_INT:
		case RINGTRACE_FT_BOOL:
			if (fd->is_signed)
				fprintf(f, "%lld", (long long)v->v.i);
			else
				fprintf(f, "%llu", (unsigned long long)v->v.u);
			break;
		case RINGTRACE_FT_ENUM: {
			const char *name = NULL;
			int64_t val = fd->is_signed ? v->v.i : (int64_t)v->v.u;
			for (uint32_t k = 0; fd->enm && k < fd->enm->count; k++)
				if (fd->enm->values[k].value == val)
					name = fd->enm->values[k].name;
			if (name && !numeric_only)
				json_str(f, name, strlen(name));
			else
				fprintf(f, "%lld", (long long)val);
			break;
		}
		case RINGTRACE_FT_FLOAT:
			json_double(f, v->v.f);
			break;
		case RINGTRACE_FT_POINTER:
			fprintf(f, "\"0x%llx\"", (unsigned long long)v->v.u);
			break;
		case RINGTRACE_FT_STRING:
			json_str(f, v->ptr, v->len);
			break;
		case RINGTRACE_FT_BYTES: {
			fputc('"', f);
			for (uint32_t k = 0; k < v->len; k++)
				fprintf(f, "%02x", ((const unsigned char *)v->ptr)[k]);
			fputc('"', f);
			break;
		}
		case RINGTRACE_FT_ARRAY:
		case RINGTRACE_FT_FLOAT_ARRAY: {
			fputc('[', f);
			for (uint32_t k = 0; k < v->len; k++) {
				const char *e = (const char *)v->ptr + (size_t)k * fd->size;
				if (k)
					fputc(',', f);
				if (fd->type == RINGTRACE_FT_FLOAT_ARRAY) {
					json_double(f, rt_field_load_float(e, fd->size));
				} else {
					uint64_t u = rt_field_load(e, fd->size);
					if (fd->is_signed)
						fprintf(f, "%lld",
							(long long)rt_field_sext(u, fd->size));
					else
						fprintf(f, "%llu", (unsigned long long)u);
				}
			}
			fputc(']', f);
			break;
		}
		default:
			fputs("null", f);
		}
	}
	return 0;
}

/* The JSON tid of a kernel trace's CPU (docs/kernel.md: one stream per
 * CPU); CPUs past any machine's share the "unknown" track. */
static uint32_t json_cpu_tid(uint32_t cpu)
{
	return cpu < (1u << 20) ? RINGTRACE_JSON_KERNEL_PID + 1 + cpu : RINGTRACE_JSON_KERNEL_PID;
}

/* One trace's events as process pid named process_name (its first line
 * after a comma unless first); per_cpu: the kernel trace, a track per CPU. */
static void json_trace(ringtrace_trace *t, FILE *f, int pid, const char *process_name, int first,
		       int per_cpu)
{
	fprintf(f,
		"%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":",
		first ? "" : ",\n", pid);
	json_str(f, process_name, strlen(process_name));
	fputs("}}", f);
	/* thread names: one M event per tid, the first time it appears */
	uint32_t named[4096];
	uint32_t nnamed = 0;
	struct ringtrace_trace_record rec;
	char text[4096];
	while (ringtrace_trace_next(t, &rec) == 1) {
		if (per_cpu)
			rec.tid = json_cpu_tid(rec.cpu);
		int seen = 0;
		for (uint32_t i = 0; i < nnamed && !seen; i++)
			seen = named[i] == rec.tid;
		if (!seen && per_cpu) {
			if (nnamed < 4096)
				named[nnamed++] = rec.tid;
			uint32_t cpu = rec.tid - RINGTRACE_JSON_KERNEL_PID; /* N + 1, 0: unknown */
			fprintf(f,
				",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"args\":{\"name\":",
				pid, rec.tid);
			if (cpu)
				fprintf(f, "\"CPU %u\"}}", cpu - 1);
			else
				fputs("\"CPU ?\"}}", f);
			fprintf(f,
				",\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"args\":{\"sort_index\":%u}}",
				pid, rec.tid, cpu);
		} else if (!seen) {
			if (nnamed < 4096)
				named[nnamed++] = rec.tid;
			fprintf(f,
				",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"args\":{\"name\":",
				pid, rec.tid);
			json_str(f, rec.comm ? rec.comm : "", rec.comm ? strlen(rec.comm) : 0);
			fputs("}}", f);
		}
		double us = (double)rec.ns / 1000.0;
		if (rec.kind == RINGTRACE_TRACE_LOST) {
			fprintf(f,
				",\n{\"name\":\"ringtrace_lost\",\"cat\":\"ringtrace\",\"ph\":\"i\",\"s\":\"t\","
				"\"ts\":%.3f,\"pid\":%d,\"tid\":%u,\"args\":{\"events\":%llu}}",
				us, pid, rec.tid, (unsigned long long)rec.lost);
			continue;
		}
		const char *name = ringtrace_trace_event_name(&rec);
		uint32_t kind = rec.def ? rec.def->kind : RINGTRACE_KIND_INSTANT;
		const char *ph = kind == RINGTRACE_KIND_BEGIN     ? "B"
				 : kind == RINGTRACE_KIND_END     ? "E"
				 : kind == RINGTRACE_KIND_COUNTER ? "C"
								  : "i";
		fputs(",\n{\"name\":", f);
		json_str(f, name, strlen(name));
		fprintf(f,
			",\"cat\":\"ringtrace\",\"ph\":\"%s\",%s\"ts\":%.3f,\"pid\":%d,\"tid\":%u,\"args\":{",
			ph, ph[0] == 'i' ? "\"s\":\"t\"," : "", us, pid, rec.tid);
		if (rec.id == RINGTRACE_EVENT_ID_PRINTF || !rec.def) {
			int n = ringtrace_trace_format(t, &rec, text, sizeof(text));
			fputs("\"msg\":", f);
			json_str(f, n >= 0 ? text : "", n >= 0 ? strlen(text) : 0);
		} else if (json_args(f, &rec, kind == RINGTRACE_KIND_COUNTER) < 0) {
			fputs("\"damaged\":true", f);
		}
		fputs("}}", f);
	}
}

/* A span of the caller's as an "X" event (after a comma unless first). */
static void json_span(FILE *f, const struct ringtrace_json_span *sp, int first)
{
	const char *name = sp->name ? sp->name : "", *cat = sp->cat ? sp->cat : "ringtrace";
	fputs(first ? "{\"name\":" : ",\n{\"name\":", f);
	json_str(f, name, strlen(name));
	fputs(",\"cat\":", f);
	json_str(f, cat, strlen(cat));
	/* (microseconds with the nanoseconds as decimals: exact, as the events') */
	fprintf(f,
		",\"ph\":\"X\",\"ts\":%" PRIu64 ".%03u,\"dur\":%" PRIu64
		".%03u,\"pid\":%u,\"tid\":%u}",
		sp->ns / 1000, (unsigned)(sp->ns % 1000), sp->dur_ns / 1000,
		(unsigned)(sp->dur_ns % 1000), sp->pid, sp->tid);
}

int ringtrace_trace_write_json_spans(ringtrace_trace *const *ts, uint32_t n, FILE *f,
				     const char *const *names, ringtrace_json_span_fn next,
				     void *arg)
{
	if (!ts || !f || !names)
		return rt_error(RINGTRACE_EINVAL, "trace_write_json: NULL argument");
	fputs("{\"traceEvents\":[\n", f);
	for (uint32_t i = 0; i < n; i++) {
		if (!ts[i] || !names[i])
			return rt_error(RINGTRACE_EINVAL, "trace_write_json: NULL trace or name");
		/* Its real pid and command when the trace knows them (docs/attach.md);
		 * else 1, 2, ... in the order given, named as the caller says. The
		 * kernel trace (pid 0, "kernel") has a pid no process has. */
		struct ringtrace_trace_process pr;
		int has = ringtrace_trace_process(ts[i], &pr) == 1;
		int known = has && pr.pid;
		int kernel = has && !pr.pid && strcmp(pr.procname, "kernel") == 0;
		json_trace(ts[i], f,
			   kernel  ? (int)RINGTRACE_JSON_KERNEL_PID
			   : known ? (int)pr.pid
				   : (int)i + 1,
			   (known || kernel) && pr.procname[0] ? pr.procname : names[i], i == 0,
			   kernel);
	}
	struct ringtrace_json_span sp;
	int r;
	while (next && (r = next(arg, &sp)) != 0) {
		if (r < 0)
			return r;
		json_span(f, &sp, n == 0);
		n = 1; /* (what follows comes after a comma) */
	}
	fputs("\n],\"displayTimeUnit\":\"ns\"}\n", f);
	if (fflush(f) != 0 || ferror(f))
		return rt_error(RINGTRACE_ESYS, "JSON output: write failed");
	return 0;
}

int ringtrace_trace_write_json_set(ringtrace_trace *const *ts, uint32_t n, FILE *f,
				   const char *const *names)
{
	return ringtrace_trace_write_json_spans(ts, n, f, names, NULL, NULL);
}

int ringtrace_trace_write_json(ringtrace_trace *t, FILE *f, const char *process_name)
{
	return ringtrace_trace_write_json_set(&t, 1, f, &process_name);
}
