/*
 * ringtrace export --format=json DIR -o FILE
 *
 * The Chrome/Perfetto trace event format: {"traceEvents":[...]} with one
 * object per event (microsecond timestamps), "M" metadata events naming
 * the process and each thread, and the phase chosen by the event's kind
 * (RINGTRACE_EVENT_KIND): instant "i", begin "B", end "E", counter "C"
 * (each numeric field a series). Fields go into "args"; a
 * ringtrace_printf record's text into args.msg; events lost between two
 * pages of a stream become an instant event "ringtrace_lost" with the
 * count. Loadable in Perfetto's UI and chrome://tracing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "ringtrace/trace.h"

static void export_usage(FILE *f)
{
	fprintf(f, "usage: ringtrace export --format=json DIR -o FILE\n\n"
		   "Write the trace in DIR as Chrome/Perfetto trace event JSON (FILE '-' is\n"
		   "stdout). Events defined with RINGTRACE_EVENT_KIND BEGIN/END/COUNTER become\n"
		   "B/E/C events, the others instant events.\n");
}

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
	struct ringtrace_value vals[64];
	if (!d || d->nfields > 64)
		return -1;
	int n = ringtrace_record_decode(d->fields, d->nfields, rec->data, rec->len, vals);
	if (n < 0)
		return -1;
	int first = 1;
	for (uint32_t i = 0; i < d->nfields; i++) {
		const struct ringtrace_field_desc *fd = &d->fields[i];
		const struct ringtrace_value *v = &vals[i];
		if (i == 0 && strcmp(fd->name, "_truncated") == 0)
			continue;
		int numeric = fd->type == RINGTRACE_FT_INT || fd->type == RINGTRACE_FT_FLOAT ||
			      fd->type == RINGTRACE_FT_BOOL || fd->type == RINGTRACE_FT_ENUM;
		if (numeric_only && !numeric)
			continue;
		if (numeric_only && fd->type == RINGTRACE_FT_FLOAT && (isnan(v->v.f) || isinf(v->v.f)))
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
					double x;
					if (fd->size == 4) {
						float y;
						memcpy(&y, e, 4);
						x = y;
					} else {
						memcpy(&x, e, 8);
					}
					json_double(f, x);
				} else {
					uint64_t u = 0;
					memcpy(&u, e, fd->size);
					if (fd->is_signed && fd->size < 8 && (u >> (fd->size * 8 - 1)) & 1)
						u |= ~0ull << (fd->size * 8);
					if (fd->is_signed)
						fprintf(f, "%lld", (long long)u);
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

static void on_error(void *arg, const char *msg)
{
	(void)arg;
	fprintf(stderr, "ringtrace export: %s\n", msg);
}

int ringtrace_cmd_export(int argc, char **argv)
{
	const char *format = NULL, *out = NULL;
	static const struct option longopts[] = {
		{"format", required_argument, NULL, 'f'},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":f:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'f': format = optarg; break;
		case 'o': out = optarg; break;
		case 'h': export_usage(stdout); return 0;
		default:
			fprintf(stderr, "ringtrace export: unknown option or missing value: %s\n",
				argv[optind - 1]);
			export_usage(stderr);
			return 2;
		}
	}
	if (!format || strcmp(format, "json") != 0) {
		fprintf(stderr, "ringtrace export: --format=json is required (the only format)\n");
		return 2;
	}
	if (optind != argc - 1 || !out) {
		fprintf(stderr, "ringtrace export: usage: ringtrace export --format=json DIR -o FILE\n");
		return 2;
	}
	ringtrace_trace *t;
	if (ringtrace_trace_open(argv[optind], on_error, NULL, &t) < 0) {
		fprintf(stderr, "ringtrace export: %s\n", ringtrace_trace_open_error());
		return 1;
	}
	FILE *f = strcmp(out, "-") == 0 ? stdout : fopen(out, "w");
	if (!f) {
		fprintf(stderr, "ringtrace export: cannot create %s: %s\n", out, strerror(errno));
		ringtrace_trace_close(t);
		return 1;
	}
	static char obuf[1 << 16];
	setvbuf(f, obuf, _IOFBF, sizeof(obuf));
	const int pid = 1;
	fputs("{\"traceEvents\":[\n", f);
	fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":", pid);
	json_str(f, argv[optind], strlen(argv[optind]));
	fputs("}}", f);
	/* thread names: one M event per tid, the first time it appears */
	uint32_t named[4096];
	uint32_t nnamed = 0;
	struct ringtrace_trace_record rec;
	char text[4096];
	uint64_t nev = 0;
	while (ringtrace_trace_next(t, &rec) == 1) {
		int seen = 0;
		for (uint32_t i = 0; i < nnamed && !seen; i++)
			seen = named[i] == rec.tid;
		if (!seen) {
			if (nnamed < 4096)
				named[nnamed++] = rec.tid;
			fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"args\":{\"name\":",
				pid, rec.tid);
			json_str(f, rec.comm ? rec.comm : "", rec.comm ? strlen(rec.comm) : 0);
			fputs("}}", f);
		}
		double us = (double)rec.ns / 1000.0;
		if (rec.kind == RINGTRACE_TRACE_LOST) {
			fprintf(f, ",\n{\"name\":\"ringtrace_lost\",\"cat\":\"ringtrace\",\"ph\":\"i\",\"s\":\"t\","
				"\"ts\":%.3f,\"pid\":%d,\"tid\":%u,\"args\":{\"events\":%llu}}",
				us, pid, rec.tid, (unsigned long long)rec.lost);
			continue;
		}
		const char *name = ringtrace_trace_event_name(&rec);
		uint32_t kind = rec.def ? rec.def->kind : RINGTRACE_KIND_INSTANT;
		const char *ph = kind == RINGTRACE_KIND_BEGIN ? "B" : kind == RINGTRACE_KIND_END ? "E"
							: kind == RINGTRACE_KIND_COUNTER ? "C" : "i";
		fputs(",\n{\"name\":", f);
		json_str(f, name, strlen(name));
		fprintf(f, ",\"cat\":\"ringtrace\",\"ph\":\"%s\",%s\"ts\":%.3f,\"pid\":%d,\"tid\":%u,\"args\":{",
			ph, ph[0] == 'i' ? "\"s\":\"t\"," : "", us, pid, rec.tid);
		if (rec.id == RINGTRACE_EVENT_ID_PRINTF || !rec.def) {
			int n = ringtrace_trace_format(t, &rec, text, sizeof(text));
			fputs("\"msg\":", f);
			json_str(f, n >= 0 ? text : "", n >= 0 ? strlen(text) : 0);
		} else if (json_args(f, &rec, kind == RINGTRACE_KIND_COUNTER) < 0) {
			fputs("\"damaged\":true", f);
		}
		fputs("}}", f);
		nev++;
	}
	fputs("\n],\"displayTimeUnit\":\"ns\"}\n", f);
	int werr = ferror(f);
	if (f != stdout)
		werr |= fclose(f) != 0;
	else
		fflush(f);
	uint64_t errors = ringtrace_trace_errors(t);
	ringtrace_trace_close(t);
	if (werr) {
		fprintf(stderr, "ringtrace export: writing %s failed\n", out);
		return 1;
	}
	return errors ? 1 : 0;
}
