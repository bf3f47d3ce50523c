/*
 * The metadata file: CTF 1.8 TSDL for ringtrace pages and the events of a
 * trace, then the ringtrace-schema block (schema_block.c), both from one
 * description (struct rt_ctf_meta); DIR/metadata written atomically and
 * read back.
 *
 * The packet header and context describe the 112-byte page header field by
 * field; the event header is the compact 64-bit word with a variant for the
 * extended form (docs/format.md, "Events"); each event's payload is its
 * schema, field by field with the same alignments the recording code uses.
 * Integers are declared with explicit alignment, so the layout does not
 * depend on any typealias.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctf/ctf_api.h"

/* TSDL keywords cannot be field names: such a field gets a '_' in front
 * (which CTF readers drop again when they display it). */
static const char *const rt_keywords[] = {
	"align",  "callsite", "const",     "char",           "clock",    "double",
	"enum",   "env",      "event",     "floating_point", "float",    "integer",
	"int",    "long",     "short",     "signed",         "stream",   "string",
	"struct", "trace",    "typealias", "typedef",        "unsigned", "variant",
	"void",   "_Bool",    "_Complex",  "_Imaginary",     NULL,
};

static void rt_name(FILE *f, const char *n)
{
	for (int i = 0; rt_keywords[i]; i++)
		if (strcmp(n, rt_keywords[i]) == 0) {
			fprintf(f, "_%s", n);
			return;
		}
	fputs(n, f);
}

static void rt_int_type(FILE *f, unsigned size, unsigned align, int is_signed, int base)
{
	fprintf(f, "integer { size = %u; align = %u; signed = %s;%s }", size * 8, align * 8,
		is_signed ? "true" : "false", base == 16 ? " base = 16;" : "");
}

static void rt_float_type(FILE *f, unsigned size)
{
	if (size == 4)
		fputs("floating_point { exp_dig = 8; mant_dig = 24; align = 32; }", f);
	else
		fputs("floating_point { exp_dig = 11; mant_dig = 53; align = 64; }", f);
}

static void rt_quoted(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if ((unsigned char)*s >= 0x20)
			fputc(*s, f);
	}
	fputc('"', f);
}

static int rt_field(FILE *f, const struct ringtrace_field_desc *fd)
{
	unsigned align = fd->align ? fd->align : 1;
	fputs("\t\t", f);
	switch (fd->type) {
	case RINGTRACE_FT_INT:
		rt_int_type(f, fd->size, align, fd->is_signed, 10);
		break;
	case RINGTRACE_FT_BOOL:
		rt_int_type(f, 1, 1, 0, 10);
		break;
	case RINGTRACE_FT_POINTER:
		rt_int_type(f, 8, 8, 0, 16);
		break;
	case RINGTRACE_FT_FLOAT:
		rt_float_type(f, fd->size);
		break;
	case RINGTRACE_FT_ENUM:
		fputs("enum : ", f);
		rt_int_type(f, fd->size, align, fd->is_signed, 10);
		fputs(" {", f);
		for (uint32_t i = 0; fd->enm && i < fd->enm->count; i++) {
			fputs(i ? ", " : " ", f);
			rt_quoted(f, fd->enm->values[i].name);
			fprintf(f, " = %lld", (long long)fd->enm->values[i].value);
		}
		if (!fd->enm || fd->enm->count == 0)
			fputs(" \"_\" = 0", f); /* TSDL needs at least one label */
		fputs(" }", f);
		break;
	case RINGTRACE_FT_ARRAY:
		rt_int_type(f, fd->size, align, fd->is_signed, 10);
		fputc(' ', f);
		rt_name(f, fd->name);
		fprintf(f, "[%u];\n", fd->count);
		return 0;
	case RINGTRACE_FT_FLOAT_ARRAY:
		rt_float_type(f, fd->size);
		fputc(' ', f);
		rt_name(f, fd->name);
		fprintf(f, "[%u];\n", fd->count);
		return 0;
	case RINGTRACE_FT_STRING:
		fputs("string", f);
		break;
	case RINGTRACE_FT_BYTES:
		rt_int_type(f, 4, 4, 0, 10);
		fprintf(f, " __%s_length;\n\t\t", fd->name);
		rt_int_type(f, 1, 1, 0, 16);
		fputc(' ', f);
		rt_name(f, fd->name);
		fprintf(f, "[__%s_length];\n", fd->name);
		return 0;
	default:
		return rt_error(RINGTRACE_EINVAL, "metadata: field \"%s\" has unknown type %u",
				fd->name, fd->type);
	}
	fputc(' ', f);
	rt_name(f, fd->name);
	fputs(";\n", f);
	return 0;
}

int rt_ctf_write(FILE *f, const struct rt_ctf_meta *m)
{
	const struct ringtrace_trace_clock *c = &m->clock;
	if (c->freq == 0)
		return rt_error(RINGTRACE_EINVAL, "metadata: clock frequency 0");
	/*
	 * The clock's origin: CTF time = offset + value / freq. CTF 1.8 counts
	 * the offset from the Unix epoch, so with the wall clock's offset
	 * (realtime_offset) timestamps read as wall-clock time, as CTF readers
	 * show them (babeltrace2 --clock-date); without it (a description
	 * that has none) as CLOCK_MONOTONIC seconds (ringtrace_rb_ticks_to_ns).
	 */
	__int128 off_ns = (__int128)c->base_ns -
			  (__int128)c->base_ticks * 1000000000 / (__int128)c->freq +
			  (m->has_realtime_offset ? (__int128)m->realtime_offset : 0);
	__int128 off_s = off_ns >= 0 ? off_ns / 1000000000 : -((-off_ns + 999999999) / 1000000000);
	long long off_cycles = (long long)((off_ns - off_s * 1000000000) * (__int128)c->freq /
					   1000000000);

	fputs("/* CTF 1.8 */\n\n"
	      "/* Written by ringtrace; the layout is described in docs/format.md. */\n\n"
	      "trace {\n"
	      "\tmajor = 1;\n"
	      "\tminor = 8;\n",
	      f);
	/* The pool's identity (CTF 1.8 allows a trace uuid without a uuid
	 * field in the packet header, which pages do not have). */
	if (m->has_uuid) {
		char u[37];
		rt_ctf_uuid_str(u, m->uuid);
		fprintf(f, "\tuuid = \"%s\";\n", u);
	}
	fputs("\tbyte_order = le;\n"
	      "\tpacket.header := struct {\n"
	      "\t\tinteger { size = 32; align = 32; signed = false; base = 16; } magic;\n"
	      "\t\tinteger { size = 32; align = 32; signed = false; } stream_id;\n"
	      "\t\tinteger { size = 64; align = 64; signed = false; } stream_instance_id;\n"
	      "\t};\n"
	      "};\n\n",
	      f);
	fprintf(f, "env {\n\ttracer_name = \"ringtrace\";\n\tclock_source = \"%s\";\n",
		c->is_tsc ? "tsc" : "monotonic");
	if (m->has_process) {
		/* (LTTng's names: what trace viewers look for) */
		fprintf(f, "\tpid = %u;\n\tprocname = ", m->process.pid);
		rt_quoted(f, m->process.procname ? m->process.procname : "");
		fputs(";\n\texecutable = ", f);
		rt_quoted(f, m->process.executable ? m->process.executable : "");
		fputs(";\n\thostname = ", f);
		rt_quoted(f, m->process.hostname ? m->process.hostname : "");
		fputs(";\n", f);
	}
	fprintf(f,
		"};\n\n"
		"clock {\n\tname = ringtrace;\n\tdescription = \"%s\";\n\tfreq = %llu;\n"
		"\toffset_s = %lld;\n\toffset = %lld;\n\tabsolute = false;\n};\n\n",
		c->is_tsc ? "invariant TSC, calibrated against CLOCK_MONOTONIC" : "CLOCK_MONOTONIC",
		(unsigned long long)c->freq, (long long)off_s, off_cycles);
	fputs("typealias integer { size = 32; align = 32; signed = false; } := rt_u32;\n"
	      "typealias integer { size = 64; align = 64; signed = false; } := rt_u64;\n"
	      "typealias integer { size = 32; align = 32; signed = false; map = clock.ringtrace.value; } := rt_clock32;\n"
	      "typealias integer { size = 64; align = 64; signed = false; map = clock.ringtrace.value; } := rt_clock64;\n\n"
	      "stream {\n"
	      "\tid = 0;\n"
	      "\tpacket.context := struct {\n"
	      "\t\trt_clock64 timestamp_begin;\n"
	      "\t\trt_clock64 timestamp_end;\n"
	      "\t\trt_u64 content_size;\n"
	      "\t\trt_u64 packet_size;\n"
	      "\t\trt_u64 packet_seq_num;\n"
	      "\t\trt_u64 events_discarded;\n"
	      "\t\trt_u64 events_before;\n"
	      "\t\trt_u32 events;\n"
	      "\t\trt_u32 tid;\n"
	      "\t\trt_u32 commit;\n"
	      "\t\trt_u32 writer;\n"
	      "\t\trt_u32 cpu_id;\n"
	      "\t\trt_u32 flags;\n"
	      "\t\tinteger { size = 8; align = 8; signed = false; encoding = UTF8; } comm[16];\n"
	      "\t};\n"
	      "\tevent.header := struct {\n"
	      "\t\trt_clock32 timestamp;\n"
	      "\t\tenum : integer { size = 16; align = 16; signed = false; } { compact = 0 ... 65534, extended = 65535 } id;\n"
	      "\t\tinteger { size = 16; align = 16; signed = false; } len;\n"
	      "\t\tvariant <id> {\n"
	      "\t\t\tstruct { } compact;\n"
	      "\t\t\tstruct { rt_u32 id; rt_u32 pad; rt_clock64 timestamp; } extended;\n"
	      "\t\t} v;\n"
	      "\t} align(64);\n"
	      "};\n",
	      f);

	for (uint32_t i = 0; i < m->nevents; i++) {
		const struct ringtrace_trace_event_def *ev = &m->events[i];
		fputs("\nevent {\n\tname = ", f);
		rt_quoted(f, ev->name);
		fprintf(f, ";\n\tid = %u;\n\tstream_id = 0;\n", ev->id);
		fputs("\tfields := struct {\n", f);
		for (uint32_t k = 0; k < ev->nfields; k++) {
			int err = rt_field(f, &ev->fields[k]);
			if (err < 0)
				return err;
		}
		fputs("\t};\n};\n", f);
	}
	rt_ctf_write_block(f, m);
	if (fflush(f) != 0 || ferror(f))
		return rt_error(RINGTRACE_ESYS, "metadata: write failed: %s", strerror(errno));
	return 0;
}

static int rt_ctf_fill(FILE *f, void *m)
{
	return rt_ctf_write(f, m);
}

int rt_ctf_write_file(const struct rt_tdir *d, const struct rt_ctf_meta *m)
{
	/* Written under another name and renamed (src/base/tdir.c): a reader
	 * never sees half of it, and a name planted there is never followed.
	 * The temporary name starts with a dot (CTF readers skip it). */
	return rt_tdir_replace(d, "metadata", rt_ctf_fill, (void *)m);
}

int rt_ctf_read_at(struct rt_ctf_doc *doc, int dirfd, const char *dir, char *err, size_t errsize)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/metadata", dir);
	/* A regular file only: a FIFO there must not block the reader, a
	 * symbolic link must not make it read another file. */
	struct stat st;
	int fd = rt_open_regular_at(dirfd, dir, "metadata", &st, err, errsize);
	if (fd < 0)
		return fd;
	if (st.st_size > RT_CTF_MAX_METADATA) {
		close(fd);
		snprintf(err, errsize, "%s: %lld bytes, more than the %u a metadata may have", path,
			 (long long)st.st_size, RT_CTF_MAX_METADATA);
		return -RINGTRACE_ECORRUPT;
	}
	size_t len = (size_t)st.st_size;
	char *text = malloc(len + 1);
	if (!text) {
		close(fd);
		snprintf(err, errsize, "%s: out of memory", path);
		return -RINGTRACE_ENOMEM;
	}
	size_t got = 0;
	while (got < len) {
		ssize_t r = read(fd, text + got, len - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	text[got] = 0;
	int r = rt_ctf_parse(doc, dir, text, got, err, errsize);
	free(text);
	return r;
}

int rt_ctf_read(struct rt_ctf_doc *doc, const char *dir, char *err, size_t errsize)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		snprintf(err, errsize, "%s: %s", dir, strerror(errno));
		return -RINGTRACE_ESYS;
	}
	int r = rt_ctf_read_at(doc, dfd, dir, err, errsize);
	close(dfd);
	return r;
}

int ringtrace_ctf_set_stats(const char *dir, const struct ringtrace_trace_stat *stats,
			    uint32_t nstats)
{
	return ringtrace_ctf_set_stats_drops(dir, stats, nstats, NULL, 0);
}

int ringtrace_ctf_set_stats_drops(const char *dir, const struct ringtrace_trace_stat *stats,
				  uint32_t nstats, const struct ringtrace_trace_drops *drops,
				  uint32_t ndrops)
{
	if (!dir || (nstats && !stats) || (ndrops && !drops))
		return rt_error(RINGTRACE_EINVAL, "ctf_set_stats: NULL argument");
	struct rt_tdir d;
	int err = rt_tdir_open(&d, dir);
	if (err < 0)
		return err;
	struct rt_ctf_doc doc;
	char msg[1024];
	memset(&doc, 0, sizeof(doc));
	err = rt_ctf_read_at(&doc, d.fd, dir, msg, sizeof(msg));
	if (err < 0) {
		rt_ctf_doc_free(&doc);
		rt_tdir_close(&d);
		return rt_error(-err, "%s", msg);
	}
	struct rt_ctf_meta m = doc.meta;
	m.stats = stats;
	m.nstats = nstats;
	struct ringtrace_trace_drops *all = NULL;
	if (ndrops) {
		size_t n = (size_t)doc.ndrops + ndrops;
		all = malloc(n * sizeof(*all));
		if (!all) {
			rt_ctf_doc_free(&doc);
			rt_tdir_close(&d);
			return rt_error(RINGTRACE_ENOMEM, "ctf_set_stats: out of memory");
		}
		if (doc.ndrops) /* (a metadata without drops has none to copy: NULL) */
			memcpy(all, doc.drops, doc.ndrops * sizeof(*all));
		memcpy(all + doc.ndrops, drops, ndrops * sizeof(*all));
		m.drops = all;
		m.ndrops = rt_ctf_drops_normalize(all, (uint32_t)n);
	}
	/* The final metadata: the room a recorder kept for it (it died
	 * without writing it) is given back first, for it. */
	unlinkat(d.fd, RT_CTF_RESERVE, 0);
	err = rt_ctf_write_file(&d, &m);
	free(all);
	rt_ctf_doc_free(&doc);
	rt_tdir_close(&d);
	return err;
}

int ringtrace_ctf_get_stat(const char *dir, const char *key, uint64_t *value)
{
	if (!dir || !key || !value)
		return rt_error(RINGTRACE_EINVAL, "ctf_get_stat: NULL argument");
	struct rt_ctf_doc doc;
	char msg[1024];
	memset(&doc, 0, sizeof(doc));
	int err = rt_ctf_read(&doc, dir, msg, sizeof(msg));
	int found = 0;
	if (err < 0) {
		err = rt_error(-err, "%s", msg);
	} else {
		for (uint32_t i = 0; i < doc.nstats; i++) {
			if (strcmp(doc.stats[i].key, key) == 0) {
				*value = doc.stats[i].value;
				found = 1;
			}
		}
	}
	rt_ctf_doc_free(&doc);
	return err < 0 ? err : found;
}

int ringtrace_ctf_get_info(const char *dir, struct ringtrace_ctf_info *info)
{
	if (!dir || !info)
		return rt_error(RINGTRACE_EINVAL, "ctf_get_info: NULL argument");
	memset(info, 0, sizeof(*info));
	struct rt_ctf_doc doc;
	char msg[1024];
	memset(&doc, 0, sizeof(doc));
	int err = rt_ctf_read(&doc, dir, msg, sizeof(msg));
	if (err < 0) {
		err = rt_error(-err, "%s", msg);
	} else {
		info->has_uuid = doc.meta.has_uuid;
		memcpy(info->uuid, doc.meta.uuid, sizeof(info->uuid));
		info->nstats = doc.nstats;
	}
	rt_ctf_doc_free(&doc);
	return err;
}

int ringtrace_ctf_write_described(const char *dir, const struct ringtrace_ctf_trace_desc *t)
{
	if (!dir || !t || (t->nevents && !t->events) || (t->nstats && !t->stats) ||
	    (t->ndrops && !t->drops))
		return rt_error(RINGTRACE_EINVAL, "ctf_write_described: NULL argument");
	struct rt_tdir d;
	int err = rt_tdir_open(&d, dir);
	if (err < 0)
		return err;
	struct rt_ctf_meta m;
	memset(&m, 0, sizeof(m));
	m.clock = t->clock;
	m.events = t->events;
	m.nevents = t->nevents;
	m.stats = t->stats;
	m.nstats = t->nstats;
	m.drops = t->drops;
	m.ndrops = t->ndrops;
	if (t->process) {
		m.process = *t->process;
		m.has_process = 1;
	}
	m.has_realtime_offset = t->has_realtime_offset;
	m.realtime_offset = t->realtime_offset;
	err = rt_ctf_write_file(&d, &m);
	rt_tdir_close(&d);
	return err;
}
