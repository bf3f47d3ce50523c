/*
 * The metadata of the running process: its buffer's clock, every event the
 * registry knows (libraries since unloaded included), the printf call
 * sites, the filters and triggers as they stand, and the recorder's
 * accounting, gathered into one description and written by tsdl.c.
 *
 * The only part of src/ctf that needs the tracing runtime (the registry
 * and control): the reader links the others without it.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control/control_api.h"
#include "ctf/ctf_api.h"
#include "ringtrace/event.h"
#include "ringtrace/printf.h"
#include "ringtrace/ring.h"

struct rt_live {
	struct rt_ctf_meta m;
	struct ringtrace_trace_event_def *events;
	struct ringtrace_trace_site *sites;
	struct ringtrace_trace_trigger *triggers;
	struct ringtrace_trace_stat stats[11];
	struct ringtrace_trace_drops *drops;
	struct rt_ctl_desc ctl;
	char procname[17], exe[1024], host[256];
};

static void rt_live_free(struct rt_live *l)
{
	free(l->events);
	free(l->sites);
	free(l->triggers);
	free(l->drops);
	rt_ctl_describe_free(&l->ctl);
}

/* Who we are: a trace collection (several processes recorded into one
 * directory, docs/attach.md) tells its traces apart by these. */
static void rt_live_process(struct rt_live *l)
{
	struct rt_ctf_meta *m = &l->m;
	m->has_process = 1;
	m->process.pid = (uint32_t)getpid();
	/* (waits out a descriptor taken for a moment: an empty name would
	 * stay in the trace) */
	int fd = rt_openat_wait(AT_FDCWD, "/proc/self/comm", O_RDONLY | O_CLOEXEC, 0);
	ssize_t k = fd >= 0 ? read(fd, l->procname, sizeof(l->procname) - 1) : -1;
	if (fd >= 0)
		close(fd);
	l->procname[k > 0 ? k : 0] = 0;
	if (k > 0 && l->procname[k - 1] == '\n')
		l->procname[k - 1] = 0;
	k = readlink("/proc/self/exe", l->exe, sizeof(l->exe) - 1);
	l->exe[k > 0 ? k : 0] = 0;
	if (gethostname(l->host, sizeof(l->host) - 1) < 0)
		l->host[0] = 0;
	l->host[sizeof(l->host) - 1] = 0;
	m->process.procname = l->procname;
	m->process.executable = l->exe;
	m->process.hostname = l->host;
}

/* The registry's events, each with its filter as it stands. */
static void rt_live_events(struct rt_live *l, uint32_t n)
{
	struct rt_ctf_meta *m = &l->m;
	for (uint32_t i = 0; i < n; i++) {
		struct ringtrace_event_info info;
		if (ringtrace_event_get(i, &info) < 0)
			continue;
		struct ringtrace_trace_event_def *ev = &l->events[m->nevents++];
		ev->id = info.id;
		ev->kind = info.kind;
		ev->name = info.name;
		ev->print_fmt = info.print_fmt;
		ev->fields = info.fields;
		ev->nfields = info.nfields;
		for (uint32_t k = 0; k < l->ctl.nfilters; k++) {
			if (l->ctl.filters[k].id == info.id) {
				ev->filter = l->ctl.filters[k].expr;
				ev->rejected = l->ctl.filters[k].rejected;
			}
		}
	}
	m->events = l->events;
}

static void rt_live_sites(struct rt_live *l, uint32_t ns)
{
	struct rt_ctf_meta *m = &l->m;
	for (uint32_t id = 1; id <= ns; id++) {
		const struct ringtrace_printf_site *site = ringtrace_printf_site_by_id(id);
		if (!site)
			continue;
		struct ringtrace_trace_site *s = &l->sites[m->nsites++];
		s->id = id;
		s->nargs = site->nargs;
		for (uint32_t a = 0; a < site->nargs && a < RINGTRACE_PRINTF_MAX_ARGS; a++)
			s->types[a] = site->types[a];
		s->fmt = site->fmt;
		s->file = site->file;
		s->line = site->line;
	}
	m->sites = l->sites;
}

static int rt_live_triggers(struct rt_live *l)
{
	struct rt_ctf_meta *m = &l->m;
	if (!l->ctl.ntriggers)
		return 0;
	l->triggers = calloc(l->ctl.ntriggers, sizeof(*l->triggers));
	if (!l->triggers)
		return rt_error(RINGTRACE_ENOMEM, "out of memory building the metadata");
	for (uint32_t i = 0; i < l->ctl.ntriggers; i++) {
		l->triggers[i].spec = l->ctl.triggers[i].spec;
		l->triggers[i].fired = l->ctl.triggers[i].fired;
		l->triggers[i].skipped = l->ctl.triggers[i].skipped;
	}
	m->triggers = l->triggers;
	m->ntriggers = l->ctl.ntriggers;
	return 0;
}

/*
 * Drops no page reports (after a stream's last page, the pool full):
 * in every metadata, live ones included, so that those of threads
 * that already exited survive a crash of the program (they are kept
 * in its memory only). *tails_lost: the streams whose drops the ring's
 * table could not keep. With the recorder's own (x: drops that only
 * pages it could not write reported), the larger count of a stream kept.
 */
static void rt_live_drops(struct rt_live *l, const ringtrace_rb *rb, const struct rt_ctf_extra *x,
			  uint64_t *tails_lost)
{
	struct rt_ctf_meta *m = &l->m;
	int nd = ringtrace_rb_stream_drops(rb, NULL, 0, tails_lost);
	uint32_t nx = x ? x->ndrops : 0;
	if (nd < 0)
		nd = 0;
	if (nd == 0 && nx == 0)
		return;
	l->drops = calloc((size_t)nd + nx, sizeof(*l->drops));
	struct ringtrace_rb_stream_drops *rd = calloc(nd ? (size_t)nd : 1, sizeof(*rd));
	int got = !l->drops || !rd ? -1
		  : nd             ? ringtrace_rb_stream_drops(rb, rd, (uint32_t)nd, NULL)
				   : 0;
	if (got > nd)
		got = nd;
	for (int i = 0; i < got; i++) {
		l->drops[i].stream = rd[i].stream;
		l->drops[i].dropped = rd[i].dropped;
		l->drops[i].tid = rd[i].tid;
	}
	free(rd);
	if (got < 0) {
		free(l->drops);
		l->drops = NULL;
		return;
	}
	for (uint32_t i = 0; i < nx; i++)
		l->drops[(uint32_t)got + i] = x->drops[i];
	m->drops = l->drops;
	m->ndrops = rt_ctf_drops_normalize(l->drops, (uint32_t)got + nx);
}

/* The recorder's accounting, when it gives one. */
static void rt_live_stats(struct rt_live *l, const struct ringtrace_trace_stats *st,
			  uint64_t tails_lost)
{
	struct rt_ctf_meta *m = &l->m;
	static const char *const keys[] = {"hit",   "missed", "overrun",     "read",
					   "pages", "bytes",  "duration_ns", "mode"};
	const uint64_t vals[] = {st->hit,   st->missed, st->overrun,     st->read,
				 st->pages, st->bytes,  st->duration_ns, st->mode};
	for (unsigned i = 0; i < 8; i++) {
		l->stats[i].key = keys[i];
		l->stats[i].value = vals[i];
	}
	m->stats = l->stats;
	m->nstats = 8;
	/* streams whose drops after their last page could not be kept
	 * (more than the ring's table holds): their threads' events +
	 * dropped fall short by those, and the trace says so */
	if (tails_lost) {
		l->stats[m->nstats].key = "streams_unaccounted";
		l->stats[m->nstats++].value = tails_lost;
	}
	/* pages the recorder could not write (the `unwritten` lines' sums) */
	if (m->nunwritten) {
		uint64_t ev = 0, pg = 0;
		for (uint32_t i = 0; i < m->nunwritten; i++) {
			ev += m->unwritten[i].events;
			pg += m->unwritten[i].pages;
		}
		l->stats[m->nstats].key = "unwritten";
		l->stats[m->nstats++].value = ev;
		l->stats[m->nstats].key = "unwritten_pages";
		l->stats[m->nstats++].value = pg;
	}
}

static int rt_live_build(struct rt_live *l, const ringtrace_rb *rb,
			 const struct ringtrace_trace_stats *st, const struct rt_ctf_extra *x)
{
	memset(l, 0, sizeof(*l));
	struct rt_ctf_meta *m = &l->m;
	m->clock.is_tsc = ringtrace_rb_clock_is_tsc(rb);
	m->clock.freq = ringtrace_rb_clock_freq(rb);
	ringtrace_rb_clock_base(rb, &m->clock.base_ticks, &m->clock.base_ns);
	ringtrace_rb_uuid(rb, m->uuid);
	m->has_uuid = 1;
	m->has_realtime_offset = 1;
	m->realtime_offset = x && x->has_realtime_offset ? x->realtime_offset
							 : rt_clock_realtime_offset();
	rt_live_process(l);
	uint32_t n = ringtrace_event_count();
	uint32_t ns = ringtrace_printf_site_count();
	l->events = calloc(n ? n : 1, sizeof(*l->events));
	l->sites = calloc(ns ? ns : 1, sizeof(*l->sites));
	if (!l->events || !l->sites || rt_ctl_describe(n, &l->ctl) < 0)
		return rt_error(RINGTRACE_ENOMEM, "out of memory building the metadata");
	rt_live_events(l, n);
	rt_live_sites(l, ns);
	int r = rt_live_triggers(l);
	if (r < 0)
		return r;
	uint64_t tails_lost = 0;
	rt_live_drops(l, rb, x, &tails_lost);
	if (x) {
		m->unwritten = x->unwritten;
		m->nunwritten = x->nunwritten;
	}
	if (st)
		rt_live_stats(l, st, tails_lost);
	return 0;
}

int ringtrace_ctf_write_metadata(const ringtrace_rb *rb, FILE *f,
				 const struct ringtrace_trace_stats *stats)
{
	if (!rb || !f)
		return rt_error(RINGTRACE_EINVAL, "ctf_write_metadata: NULL argument");
	struct rt_live l;
	int err = rt_live_build(&l, rb, stats, NULL);
	if (err == 0)
		err = rt_ctf_write(f, &l.m);
	rt_live_free(&l);
	return err;
}

int rt_ctf_write_live(const ringtrace_rb *rb, const struct rt_tdir *d,
		      const struct ringtrace_trace_stats *st, const struct rt_ctf_extra *x)
{
	struct rt_live l;
	int err = rt_live_build(&l, rb, st, x);
	if (err == -RINGTRACE_ENOMEM) /* (the directory it was for) */
		err = rt_error(RINGTRACE_ENOMEM, "out of memory writing the metadata of %s",
			       d->path);
	if (err == 0)
		err = rt_ctf_write_file(d, &l.m);
	rt_live_free(&l);
	return err;
}
