/*
 * Reading a trace directory (docs/format.md, section 7): its metadata,
 * parsed strictly by the ctf layer (src/ctf/schema_block.c), and its
 * stream files (stream.c); the accessors of ringtrace/trace.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "read/trace_internal.h"

static __thread char rt_open_err[1024];

const char *ringtrace_trace_open_error(void)
{
	return rt_open_err;
}

int rt_open_fail(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rt_open_err, sizeof(rt_open_err), fmt, ap);
	va_end(ap);
	return -code;
}

void rt_damage(ringtrace_trace *t, struct rt_tstream *s, uint64_t off, const char *fmt, ...)
{
	char msg[1024];
	int n = snprintf(msg, sizeof(msg), "%s: byte %llu: ", s->info.path,
			 (unsigned long long)off);
	va_list ap;
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof(msg))
		vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	t->errors++;
	s->info.errors++;
	if (t->err)
		t->err(t->err_arg, msg);
}

/* The metadata: the ctf layer's strict parse, then what the reader adds. */
static int rt_read_metadata(ringtrace_trace *t, int dirfd)
{
	int r = rt_ctf_read_at(&t->doc, dirfd, t->dir, rt_open_err, sizeof(rt_open_err));
	if (r < 0)
		return r;
	/* ringtrace_printf records decode (as a call site and its arguments)
	 * even if the block does not describe id 0. */
	if (!t->doc.by_id[RINGTRACE_EVENT_ID_PRINTF]) {
		t->printf_def.id = RINGTRACE_EVENT_ID_PRINTF;
		t->printf_def.name = "ringtrace_printf";
		t->printf_def.print_fmt = "";
		t->doc.by_id[RINGTRACE_EVENT_ID_PRINTF] = &t->printf_def;
	}
	t->plans = calloc(t->doc.nevents ? t->doc.nevents : 1, sizeof(*t->plans));
	if (!t->plans)
		return rt_open_fail(RINGTRACE_ENOMEM, "%s: out of memory (opening the trace)",
				    t->dir);
	return 0;
}

int ringtrace_trace_open(const char *dir, ringtrace_trace_error_fn err, void *arg,
			 ringtrace_trace **out)
{
	rt_open_err[0] = 0;
	if (!dir || !out)
		return rt_open_fail(RINGTRACE_EINVAL, "trace_open: NULL argument");
	*out = NULL;
	ringtrace_trace *t = calloc(1, sizeof(*t));
	if (!t || !(t->dir = strdup(dir))) {
		free(t);
		return rt_open_fail(RINGTRACE_ENOMEM, "%s: out of memory (opening the trace)", dir);
	}
	size_t dl = strlen(t->dir);
	while (dl > 1 && t->dir[dl - 1] == '/')
		t->dir[--dl] = 0;
	t->err = err;
	t->err_arg = arg;
	t->pending = -1;
	/* Every file is opened through this descriptor (only regular files:
	 * src/base/tdir.c), and the directory is read once: what a path names
	 * cannot change between the metadata and the streams. */
	int dirfd = open(t->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r = dirfd < 0 ? rt_open_fail(RINGTRACE_ESYS, "%s: %s (opening the trace directory)",
					 t->dir, strerror(errno))
			  : rt_read_metadata(t, dirfd);
	if (r == 0)
		r = rt_open_streams(t, dirfd);
	if (dirfd >= 0)
		close(dirfd);
	if (r < 0) {
		char save[sizeof(rt_open_err)];
		memcpy(save, rt_open_err, sizeof(save));
		ringtrace_trace_close(t);
		memcpy(rt_open_err, save, sizeof(save));
		return r;
	}
	*out = t;
	return 0;
}

void ringtrace_trace_close(ringtrace_trace *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; i < t->nstreams; i++)
		if (t->streams[i].map)
			munmap((void *)t->streams[i].map, t->streams[i].size);
	free(t->streams);
	free(t->heap);
	for (uint32_t i = 0; t->plans && i < t->doc.nevents; i++)
		free(t->plans[i].seg);
	free(t->plans);
	rt_ctf_doc_free(&t->doc);
	rt_arena_free(&t->arena);
	free(t->dir);
	free(t);
}

uint64_t ringtrace_trace_errors(const ringtrace_trace *t)
{
	return t->errors;
}

const struct ringtrace_trace_clock *ringtrace_trace_clock(const ringtrace_trace *t)
{
	return &t->doc.meta.clock;
}

uint64_t ringtrace_trace_ticks_to_ns(const ringtrace_trace *t, uint64_t ticks)
{
	const struct ringtrace_trace_clock *c = &t->doc.meta.clock;
	struct rt_clock k = {c->is_tsc, c->freq, c->base_ticks, c->base_ns};
	return rt_clock_to_ns(&k, ticks);
}

uint32_t ringtrace_trace_event_count(const ringtrace_trace *t)
{
	return t->doc.nevents;
}

const struct ringtrace_trace_event_def *ringtrace_trace_event(const ringtrace_trace *t, uint32_t i)
{
	return i < t->doc.nevents ? &t->doc.events[i] : NULL;
}

const struct ringtrace_trace_event_def *ringtrace_trace_event_by_id(const ringtrace_trace *t,
								    uint32_t id)
{
	return id < t->doc.by_id_len ? t->doc.by_id[id] : NULL;
}

uint32_t ringtrace_trace_site_count(const ringtrace_trace *t)
{
	return t->doc.nsites;
}

const struct ringtrace_trace_site *ringtrace_trace_site(const ringtrace_trace *t, uint32_t i)
{
	return i < t->doc.nsites ? &t->doc.sites[i] : NULL;
}

uint32_t ringtrace_trace_trigger_count(const ringtrace_trace *t)
{
	return t->doc.ntriggers;
}

const struct ringtrace_trace_trigger *ringtrace_trace_trigger(const ringtrace_trace *t, uint32_t i)
{
	return i < t->doc.ntriggers ? &t->doc.triggers[i] : NULL;
}

int ringtrace_trace_uuid(const ringtrace_trace *t, uint8_t uuid[16])
{
	if (!t->doc.meta.has_uuid)
		return 0;
	memcpy(uuid, t->doc.meta.uuid, 16);
	return 1;
}

int ringtrace_trace_process(const ringtrace_trace *t, struct ringtrace_trace_process *out)
{
	if (!t->doc.meta.has_process)
		return 0;
	*out = t->doc.meta.process;
	return 1;
}

int ringtrace_trace_realtime_offset(const ringtrace_trace *t, int64_t *offset_ns)
{
	if (!t->doc.meta.has_realtime_offset)
		return 0;
	*offset_ns = t->doc.meta.realtime_offset;
	return 1;
}

uint32_t ringtrace_trace_stat_count(const ringtrace_trace *t)
{
	return t->doc.nstats;
}

const struct ringtrace_trace_stat *ringtrace_trace_stat(const ringtrace_trace *t, uint32_t i)
{
	return i < t->doc.nstats ? &t->doc.stats[i] : NULL;
}

uint32_t ringtrace_trace_stream_count(const ringtrace_trace *t)
{
	return t->nstreams;
}

const struct ringtrace_trace_stream_info *ringtrace_trace_stream(const ringtrace_trace *t,
								 uint32_t i)
{
	return i < t->nstreams ? &t->streams[i].info : NULL;
}
