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

int ringtrace_ctf_write_metadata(const ringtrace_rb *rb, FILE *f)
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
	if (fflush(f) != 0 || ferror(f))
		return rt_error(RINGTRACE_ESYS, "metadata: write failed: %s", strerror(errno));
	return 0;
}
