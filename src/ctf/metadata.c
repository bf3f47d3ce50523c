/*
 * CTF 1.8 metadata (TSDL) for ringtrace pages and the process's events.
 *
 * The packet header and context describe the 112-byte page header field by
 * field; the event header is the compact 64-bit word with a variant for the
 * extended form (docs/format.md, "Events"); each event's payload is its
 * schema from the registry, field by field with the same alignments the
 * recording code uses. Integers are declared with explicit alignment, so
 * the layout does not depend on any typealias.
 */
#include <errno.h>
#include <string.h>

#include "common/internal.h"
#include "ring/ring_internal.h"
#include "ringtrace/ctf.h"
#include "ringtrace/event.h"

/* TSDL keywords cannot be field names: such a field gets a '_' in front
 * (which CTF readers drop again when they display it). */
static const char *const rt_keywords[] = {
	"align", "callsite", "const", "char", "clock", "double", "enum", "env", "event",
	"floating_point", "float", "integer", "int", "long", "short", "signed", "stream",
	"string", "struct", "trace", "typealias", "typedef", "unsigned", "variant", "void",
	"_Bool", "_Complex", "_Imaginary", NULL,
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

/* Percent-encoding of docs/format.md section 7. */
void rt_pct(FILE *f, const char *s)
{
	static const char safe[] = "_.-:,=()[]{}<>!?#+^~@$&;";
	if (!s || !*s) {
		fputc('%', f);
		return;
	}
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    (c && strchr(safe, c)))
			fputc(c, f);
		else
			fprintf(f, "%%%02X", c);
	}
}

static void rt_schema_block(const ringtrace_rb *rb, FILE *f, const struct ringtrace_trace_stats *st)
{
	const struct rt_clock *c = &rb->clock;
	fprintf(f, "\n/* ringtrace-schema 1\nclock %s %llu %llu %llu\n", c->is_tsc ? "tsc" : "monotonic",
		(unsigned long long)c->freq, (unsigned long long)c->base_ticks,
		(unsigned long long)c->base_ns);
	uint32_t n = ringtrace_event_count();
	for (uint32_t i = 0; i < n; i++) {
		struct ringtrace_event_info info;
		if (ringtrace_event_get(i, &info) < 0)
			continue;
		fprintf(f, "event %u %u ", info.id, info.kind);
		rt_pct(f, info.name);
		fprintf(f, " %u ", info.nfields);
		rt_pct(f, info.print_fmt);
		fputc('\n', f);
		for (uint32_t k = 0; k < info.nfields; k++) {
			const struct ringtrace_field_desc *fd = &info.fields[k];
			uint32_t ne = fd->enm ? fd->enm->count : 0;
			fputs("field ", f);
			rt_pct(f, fd->name);
			fprintf(f, " %u %u %u %u %u %u\n", fd->type, fd->size, fd->is_signed, fd->align,
				fd->count, ne);
			for (uint32_t e = 0; e < ne; e++) {
				fputs("enum ", f);
				rt_pct(f, fd->enm->values[e].name);
				fprintf(f, " %lld\n", (long long)fd->enm->values[e].value);
			}
		}
	}
	uint32_t ns = ringtrace_printf_site_count();
	for (uint32_t id = 1; id <= ns; id++) {
		const struct ringtrace_printf_site *site = ringtrace_printf_site_by_id(id);
		if (!site)
			continue;
		fprintf(f, "site %u %u ", id, site->nargs);
		if (site->nargs == 0)
			fputc('-', f);
		for (uint32_t a = 0; a < site->nargs; a++)
			fputc('0' + (site->types[a] % 10), f);
		fputc(' ', f);
		rt_pct(f, site->fmt);
		fputc(' ', f);
		rt_pct(f, site->file);
		fprintf(f, " %u\n", site->line);
	}
	rt_ctl_write_schema(f, n);
	if (st) {
		fprintf(f, "stat hit %llu\nstat missed %llu\nstat overrun %llu\nstat read %llu\n"
			"stat pages %llu\nstat bytes %llu\nstat duration_ns %llu\nstat mode %u\n",
			(unsigned long long)st->hit, (unsigned long long)st->missed,
			(unsigned long long)st->overrun, (unsigned long long)st->read,
			(unsigned long long)st->pages, (unsigned long long)st->bytes,
			(unsigned long long)st->duration_ns, st->mode);
	}
	fputs("end */\n", f);
}

int ringtrace_ctf_write_metadata(const ringtrace_rb *rb, FILE *f,
				 const struct ringtrace_trace_stats *stats)
{
	if (!rb || !f)
		return rt_error(RINGTRACE_EINVAL, "ctf_write_metadata: NULL argument");
	const struct rt_clock *c = &rb->clock;
	/*
	 * The clock's origin: CTF time = offset + value / freq, chosen so that
	 * timestamps read as CLOCK_MONOTONIC seconds (ringtrace_rb_ticks_to_ns).
	 */
	__int128 off_ns = (__int128)c->base_ns -
			  (__int128)c->base_ticks * 1000000000 / (__int128)c->freq;
	__int128 off_s = off_ns >= 0 ? off_ns / 1000000000 : -((-off_ns + 999999999) / 1000000000);
	long long off_cycles =
		(long long)((off_ns - off_s * 1000000000) * (__int128)c->freq / 1000000000);

	fputs("/* CTF 1.8 */\n\n"
	      "/* Written by ringtrace; the layout is described in docs/format.md. */\n\n"
	      "trace {\n"
	      "\tmajor = 1;\n"
	      "\tminor = 8;\n"
	      "\tbyte_order = le;\n"
	      "\tpacket.header := struct {\n"
	      "\t\tinteger { size = 32; align = 32; signed = false; base = 16; } magic;\n"
	      "\t\tinteger { size = 32; align = 32; signed = false; } stream_id;\n"
	      "\t\tinteger { size = 64; align = 64; signed = false; } stream_instance_id;\n"
	      "\t};\n"
	      "};\n\n", f);
	fprintf(f,
		"env {\n\ttracer_name = \"ringtrace\";\n\tclock_source = \"%s\";\n};\n\n"
		"clock {\n\tname = ringtrace;\n\tdescription = \"%s\";\n\tfreq = %llu;\n"
		"\toffset_s = %lld;\n\toffset = %lld;\n\tabsolute = false;\n};\n\n",
		c->is_tsc ? "tsc" : "monotonic",
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
	      "};\n", f);

	uint32_t n = ringtrace_event_count();
	for (uint32_t i = 0; i < n; i++) {
		struct ringtrace_event_info info;
		if (ringtrace_event_get(i, &info) < 0)
			continue;
		fputs("\nevent {\n\tname = ", f);
		rt_quoted(f, info.name);
		fprintf(f, ";\n\tid = %u;\n\tstream_id = 0;\n", info.id);
		fputs("\tfields := struct {\n", f);
		for (uint32_t k = 0; k < info.nfields; k++) {
			int err = rt_field(f, &info.fields[k]);
			if (err < 0)
				return err;
		}
		fputs("\t};\n};\n", f);
	}
	rt_schema_block(rb, f, stats);
	if (fflush(f) != 0 || ferror(f))
		return rt_error(RINGTRACE_ESYS, "metadata: write failed: %s", strerror(errno));
	return 0;
}
