/* The scheduling view's thread-state model: see analysis_api.h. */
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis_api.h"
#include "ringtrace/schema.h"

/* The most fields an event can have (the metadata parser's limit). */
#define SM_MAX_FIELDS 64u

enum sm_kind { K_OTHER = 0, K_SWITCH, K_WAKEUP, K_BAD };

/* What an event of the kernel trace is, and where its fields are. */
struct sm_evinfo {
	const struct ringtrace_trace_event_def *def;
	uint8_t kind;
	int16_t prev_pid, prev_state, prev_comm, next_pid, next_comm, pid, comm;
};

#define SM_EVCACHE 64u

struct sm_model {
	struct sm_thread *th;
	uint32_t n, cap, max_threads, top;
	uint32_t *hash; /* thread index + 1, 0 empty; hmask + 1 slots */
	uint32_t hmask;
	sm_interval_fn on_interval;
	void *arg;
	struct sm_stats st;
	uint64_t last_fed, fed;
	struct sm_evinfo ev[SM_EVCACHE];
};

struct sm_model *sm_new(uint32_t max_threads, uint32_t top)
{
	struct sm_model *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->max_threads = max_threads ? max_threads : SM_MAX_THREADS;
	m->top = top > SM_TOP_MAX ? SM_TOP_MAX : top;
	m->hmask = 255;
	m->hash = calloc(m->hmask + 1, sizeof(*m->hash));
	if (!m->hash) {
		free(m);
		return NULL;
	}
	return m;
}

void sm_free(struct sm_model *m)
{
	if (!m)
		return;
	for (uint32_t i = 0; i < m->n; i++) {
		free(m->th[i].lat_hist);
		free(m->th[i].top);
	}
	free(m->th);
	free(m->hash);
	free(m);
}

void sm_set_interval_fn(struct sm_model *m, sm_interval_fn fn, void *arg)
{
	m->on_interval = fn;
	m->arg = arg;
}

const struct sm_stats *sm_stats(const struct sm_model *m)
{
	return &m->st;
}

uint32_t sm_count(const struct sm_model *m)
{
	return m->n;
}

struct sm_thread *sm_at(struct sm_model *m, uint32_t i)
{
	return i < m->n ? &m->th[i] : NULL;
}

/* ---- the threads: a hash table of tids (open addressing, under half full) */

static uint32_t sm_hash(int64_t tid, uint32_t mask)
{
	return (uint32_t)(((uint64_t)tid * 0x9E3779B97F4A7C15ull) >> 32) & mask;
}

struct sm_thread *sm_find(struct sm_model *m, int64_t tid)
{
	for (uint32_t h = sm_hash(tid, m->hmask);; h = (h + 1) & m->hmask) {
		uint32_t k = m->hash[h];
		if (!k)
			return NULL;
		if (m->th[k - 1].tid == tid)
			return &m->th[k - 1];
	}
}

static int sm_rehash(struct sm_model *m, uint32_t slots)
{
	uint32_t *h = calloc(slots, sizeof(*h));
	if (!h)
		return -1;
	free(m->hash);
	m->hash = h;
	m->hmask = slots - 1;
	for (uint32_t i = 0; i < m->n; i++) {
		uint32_t s = sm_hash(m->th[i].tid, m->hmask);
		while (h[s])
			s = (s + 1) & m->hmask;
		h[s] = i + 1;
	}
	return 0;
}

struct sm_thread *sm_get(struct sm_model *m, int64_t tid)
{
	struct sm_thread *t = sm_find(m, tid);
	if (t)
		return t;
	if (m->n >= m->max_threads)
		return NULL;
	if (m->n == m->cap) {
		uint32_t nc = m->cap ? m->cap * 2 : 64;
		struct sm_thread *th = realloc(m->th, (size_t)nc * sizeof(*th));
		if (!th) {
			m->st.oom = 1;
			return NULL;
		}
		m->th = th;
		m->cap = nc;
	}
	/* (at most half full: probes stay short and always end) */
	if ((m->n + 1) * 2 > m->hmask + 1 && sm_rehash(m, (m->hmask + 1) * 2) < 0) {
		m->st.oom = 1;
		return NULL;
	}
	t = &m->th[m->n];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->tag = -1;
	t->state = SM_UNKNOWN;
	uint32_t s = sm_hash(tid, m->hmask);
	while (m->hash[s])
		s = (s + 1) & m->hmask;
	m->hash[s] = ++m->n;
	return t;
}

/* The thread an event names, made the first time (NULL: the idle task, or
 * beyond the cap), its comm updated; its first sight starts its clock. */
static struct sm_thread *sm_named(struct sm_model *m, int64_t tid, const char *comm, uint64_t ns)
{
	if (tid == 0)
		return NULL;
	struct sm_thread *t = sm_find(m, tid);
	if (!t && !(t = sm_get(m, tid))) {
		m->st.beyond_cap++;
		return NULL;
	}
	/* (its clock starts at its first scheduling event: user events
	 * before it tell nothing of its state) */
	if (!t->events)
		t->since = ns;
	if (comm && comm[0]) {
		size_t l = strnlen(comm, SM_COMM_LEN);
		memcpy(t->comm, comm, l);
		t->comm[l] = 0;
	}
	t->events++;
	return t;
}

/* ---- states ------------------------------------------------------------- */

/* The thread's current state ends at ns (never before it began: an event
 * out of order counts as happening then); `as` is the state the time is
 * counted in (the current one, or unknown when the events contradict it). */
static void sm_end_state(struct sm_model *m, struct sm_thread *t, uint64_t ns, int as)
{
	if (t->state == SM_EXITED) {
		t->since = ns; /* a tid seen again: a new thread, the gap is no one's */
		return;
	}
	if (ns <= t->since)
		return;
	t->ns[as] += ns - t->since;
	if (m->on_interval && as != SM_UNKNOWN)
		m->on_interval(m->arg, t, (enum sm_state)as, t->since, ns);
	t->since = ns;
}

/* ns, or the thread's current state's start if ns is earlier. */
static uint64_t sm_clamp(const struct sm_thread *t, uint64_t ns)
{
	return ns < t->since ? t->since : ns;
}

static uint32_t sm_bucket(uint64_t v)
{
	if (v < SM_HIST_SUB)
		return (uint32_t)v;
	uint32_t e = 63u - (uint32_t)__builtin_clzll(v); /* >= 5 */
	if (e >= SM_HIST_MAX_EXP)
		return SM_HIST_BUCKETS - 1;
	uint32_t mant = (uint32_t)(v >> (e - 5)) & (SM_HIST_SUB - 1);
	return SM_HIST_SUB + (e - 5) * SM_HIST_SUB + mant;
}

/* The middle of bucket b. */
static uint64_t sm_bucket_mid(uint32_t b)
{
	if (b < SM_HIST_SUB)
		return b;
	uint32_t e = 5 + (b - SM_HIST_SUB) / SM_HIST_SUB, mant = (b - SM_HIST_SUB) % SM_HIST_SUB;
	uint64_t lo = (uint64_t)(SM_HIST_SUB + mant) << (e - 5);
	return lo + (((uint64_t)1 << (e - 5)) >> 1);
}

static void sm_latency(struct sm_model *m, struct sm_thread *t, uint64_t lat)
{
	if (!t->lat_hist && !(t->lat_hist = calloc(SM_HIST_BUCKETS, sizeof(*t->lat_hist)))) {
		m->st.oom = 1;
		return;
	}
	uint32_t *c = &t->lat_hist[sm_bucket(lat)];
	if (*c != UINT32_MAX)
		(*c)++;
	if (!t->lat_count || lat < t->lat_min)
		t->lat_min = lat;
	if (lat > t->lat_max)
		t->lat_max = lat;
	t->lat_count++;
}

uint64_t sm_latency_quantile(const struct sm_thread *t, double q)
{
	if (!t->lat_count || !t->lat_hist)
		return 0;
	uint64_t total = 0;
	for (uint32_t b = 0; b < SM_HIST_BUCKETS; b++)
		total += t->lat_hist[b];
	double r = q * (double)total;
	uint64_t rank = (uint64_t)r;
	if ((double)rank < r)
		rank++;
	/* (the extremes are known exactly) */
	if (rank <= 1)
		return t->lat_min;
	if (rank >= total)
		return t->lat_max;
	uint64_t seen = 0, v = t->lat_max;
	for (uint32_t b = 0; b < SM_HIST_BUCKETS; b++) {
		seen += t->lat_hist[b];
		if (seen >= rank) {
			v = sm_bucket_mid(b);
			break;
		}
	}
	return v < t->lat_min ? t->lat_min : v > t->lat_max ? t->lat_max : v;
}

static uint64_t sm_dur(const struct sm_stretch *s)
{
	return s->end - s->start;
}

/* Keep s if it is among the thread's `top` longest (ties: the earlier first). */
static void sm_top_add(struct sm_model *m, struct sm_thread *t, const struct sm_stretch *s)
{
	if (!m->top)
		return;
	uint32_t n = t->ntop;
	if (n == m->top) {
		if (sm_dur(s) <= sm_dur(&t->top[n - 1]))
			return;
		if (t->top[n - 1].need_after)
			t->npending--;
		n--;
	} else if (n == t->topcap) {
		/* grown as needed: a thread with few stretches holds few */
		uint32_t nc = t->topcap ? t->topcap * 2 : 4;
		if (nc > m->top)
			nc = m->top;
		struct sm_stretch *p = realloc(t->top, (size_t)nc * sizeof(*p));
		if (!p) {
			m->st.oom = 1;
			return;
		}
		t->top = p;
		t->topcap = nc;
	}
	uint32_t i = n;
	while (i > 0 && sm_dur(&t->top[i - 1]) < sm_dur(s))
		i--;
	memmove(&t->top[i + 1], &t->top[i], (size_t)(n - i) * sizeof(*s));
	t->top[i] = *s;
	t->ntop = n + 1;
	if (s->need_after)
		t->npending++;
}

/* The thread's off-CPU stretch ends at ns (switched back in, or the end). */
static void sm_off_end(struct sm_model *m, struct sm_thread *t, uint64_t ns, int open)
{
	if (!t->off_open)
		return;
	t->off_open = 0;
	struct sm_stretch s = {
		.start = t->off_start,
		.end = ns < t->off_start ? t->off_start : ns,
		.wake = t->off_wake,
		.preempted = t->off_preempted,
		.open = (uint8_t)open,
		.need_after = (uint8_t)!open,
		.before = t->off_before,
	};
	sm_top_add(m, t, &s);
}

/* Every record fed: the time order across records checked, the span kept. */
static void sm_fed(struct sm_model *m, uint64_t ns)
{
	if (ns < m->last_fed)
		m->st.out_of_order++;
	else
		m->last_fed = ns;
	if (!m->fed++ || ns < m->st.first_ns)
		m->st.first_ns = ns;
	if (ns > m->st.last_ns)
		m->st.last_ns = ns;
}

void sm_switch(struct sm_model *m, uint64_t ns, int64_t prev_tid, const char *prev_comm,
	       int64_t prev_state, int64_t next_tid, const char *next_comm)
{
	sm_fed(m, ns);
	m->st.switches++;
	struct sm_thread *p = sm_named(m, prev_tid, prev_comm, ns);
	if (p) {
		/* Running until now: if the model had it off the CPU, its
		 * switch-in was missed, and since when it ran is unknown. */
		int was = p->state;
		uint64_t at = sm_clamp(p, ns);
		if (was == SM_RUNNABLE || was == SM_BLOCKED)
			p->inconsistent++;
		sm_end_state(m, p, at, was == SM_RUNNING ? SM_RUNNING : SM_UNKNOWN);
		p->woken = 0;
		p->off_open = 0;
		uint64_t s = (uint64_t)prev_state & 0xff;
		if (s & 0x30) { /* X (EXIT_DEAD) or Z (EXIT_ZOMBIE): its last switch */
			p->state = SM_EXITED;
		} else {
			p->state = s == 0 ? SM_RUNNABLE : SM_BLOCKED;
			p->off_open = 1;
			p->off_start = at;
			p->off_wake = 0;
			p->off_preempted = s == 0;
			p->off_before = p->last_user;
		}
	}
	struct sm_thread *n = sm_named(m, next_tid, next_comm, ns);
	if (n) {
		int was = n->state;
		uint64_t at = sm_clamp(n, ns);
		if (was == SM_RUNNING)
			n->inconsistent++; /* its switch-out was missed */
		if (was == SM_BLOCKED)
			n->no_wakeup++; /* (the off-CPU time counts as blocked) */
		if (was == SM_RUNNABLE && n->woken)
			sm_latency(m, n, at - n->wake_ns);
		sm_end_state(m, n, at, was == SM_RUNNING || was == SM_EXITED ? SM_UNKNOWN : was);
		sm_off_end(m, n, at, 0);
		n->woken = 0;
		n->state = SM_RUNNING;
	}
}

void sm_wakeup(struct sm_model *m, uint64_t ns, int64_t tid, const char *comm)
{
	sm_fed(m, ns);
	m->st.wakeups++;
	struct sm_thread *t = sm_named(m, tid, comm, ns);
	if (!t)
		return;
	/* A wake-up of a running or runnable thread (the kernel traces those
	 * too: woken before it was switched out) changes nothing; the first
	 * wake-up of a sleep (sched_waking before sched_wakeup) starts it. */
	if (t->state == SM_RUNNING || t->state == SM_RUNNABLE)
		return;
	uint64_t at = sm_clamp(t, ns);
	sm_end_state(m, t, at, t->state);
	t->state = SM_RUNNABLE;
	t->woken = 1;
	t->wake_ns = at;
	if (t->off_open)
		t->off_wake = at;
}

void sm_lost(struct sm_model *m, uint64_t ns, uint64_t count)
{
	sm_fed(m, ns);
	m->st.lost_marks++;
	m->st.lost_events += count;
	for (uint32_t i = 0; i < m->n; i++) {
		struct sm_thread *t = &m->th[i];
		if (t->state == SM_EXITED || !t->events)
			continue;
		sm_end_state(m, t, sm_clamp(t, ns), t->state);
		t->state = SM_UNKNOWN;
		t->woken = 0;
		t->off_open = 0;
	}
}

void sm_user_event(struct sm_model *m, uint64_t ns, int64_t tid, const char *name)
{
	struct sm_thread *t = sm_get(m, tid);
	if (!t)
		return;
	t->last_user.name = name;
	t->last_user.ns = ns;
	for (uint32_t i = 0; t->npending && i < t->ntop; i++) {
		struct sm_stretch *s = &t->top[i];
		if (s->need_after && s->end <= ns) {
			s->after = t->last_user;
			s->need_after = 0;
			t->npending--;
		}
	}
}

void sm_finish(struct sm_model *m, uint64_t end)
{
	for (uint32_t i = 0; i < m->n; i++) {
		struct sm_thread *t = &m->th[i];
		if (t->state == SM_EXITED || !t->events)
			continue;
		uint64_t at = sm_clamp(t, end);
		sm_end_state(m, t, at, t->state);
		sm_off_end(m, t, at, 1);
	}
}

/* ---- records of the kernel trace ---------------------------------------- */

static int16_t sm_field(const struct ringtrace_trace_event_def *d, const char *name)
{
	for (uint32_t i = 0; i < d->nfields && i < SM_MAX_FIELDS; i++)
		if (d->fields[i].name && strcmp(d->fields[i].name, name) == 0)
			return (int16_t)i;
	return -1;
}

static const struct sm_evinfo *sm_info(struct sm_model *m,
				       const struct ringtrace_trace_event_def *d)
{
	/* (cached by id; the same id of another trace's event is looked up again) */
	struct sm_evinfo *e = &m->ev[d->id % SM_EVCACHE];
	if (e->def == d)
		return e;
	memset(e, 0, sizeof(*e));
	e->def = d;
	e->kind = K_OTHER;
	const char *nm = d->name ? d->name : "";
	int sw = strcmp(nm, "sched_switch") == 0;
	int wk = strcmp(nm, "sched_wakeup") == 0 || strcmp(nm, "sched_wakeup_new") == 0 ||
		 strcmp(nm, "sched_waking") == 0;
	if (!sw && !wk)
		return e;
	e->prev_pid = sm_field(d, "prev_pid");
	e->prev_state = sm_field(d, "prev_state");
	e->prev_comm = sm_field(d, "prev_comm");
	e->next_pid = sm_field(d, "next_pid");
	e->next_comm = sm_field(d, "next_comm");
	e->pid = sm_field(d, "pid");
	e->comm = sm_field(d, "comm");
	if (d->nfields > SM_MAX_FIELDS)
		e->kind = K_BAD;
	else if (sw)
		e->kind = e->prev_pid >= 0 && e->prev_state >= 0 && e->next_pid >= 0 ? K_SWITCH
										     : K_BAD;
	else
		e->kind = e->pid >= 0 ? K_WAKEUP : K_BAD;
	return e;
}

/* An integer field's value (0 and *out, or -1: not an integer). */
static int sm_int(const struct ringtrace_value *v, int64_t *out)
{
	const struct ringtrace_field_desc *f = v->field;
	if (!f || (f->type != RINGTRACE_FT_INT && f->type != RINGTRACE_FT_ENUM))
		return -1;
	*out = f->is_signed ? v->v.i : (int64_t)v->v.u;
	return 0;
}

/* A string field into buf (SM_COMM_LEN + 1 bytes); NULL if absent. */
static const char *sm_str(const struct ringtrace_value *vals, int16_t i, char *buf)
{
	if (i < 0 || !vals[i].field || vals[i].field->type != RINGTRACE_FT_STRING || !vals[i].ptr)
		return NULL;
	size_t l = vals[i].len > SM_COMM_LEN ? SM_COMM_LEN : vals[i].len;
	memcpy(buf, vals[i].ptr, l);
	buf[l] = 0;
	return buf;
}

int sm_kernel_record(struct sm_model *m, const struct ringtrace_trace_record *rec)
{
	if (rec->kind == RINGTRACE_TRACE_LOST) {
		sm_lost(m, rec->ns, rec->lost);
		return 1;
	}
	if (rec->kind != RINGTRACE_TRACE_EVENT || !rec->def) {
		m->st.other++;
		return 0;
	}
	const struct sm_evinfo *e = sm_info(m, rec->def);
	if (e->kind == K_OTHER) {
		m->st.other++;
		return 0;
	}
	struct ringtrace_value vals[SM_MAX_FIELDS];
	if (e->kind == K_BAD ||
	    ringtrace_record_decode(rec->def->fields, rec->def->nfields, rec->data, rec->len,
				    vals) < (int)rec->def->nfields) {
		m->st.undecodable++;
		return -1;
	}
	char c1[SM_COMM_LEN + 1], c2[SM_COMM_LEN + 1];
	if (e->kind == K_SWITCH) {
		int64_t prev, state, next;
		if (sm_int(&vals[e->prev_pid], &prev) < 0 ||
		    sm_int(&vals[e->prev_state], &state) < 0 ||
		    sm_int(&vals[e->next_pid], &next) < 0) {
			m->st.undecodable++;
			return -1;
		}
		sm_switch(m, rec->ns, prev, sm_str(vals, e->prev_comm, c1), state, next,
			  sm_str(vals, e->next_comm, c2));
		return 1;
	}
	int64_t pid;
	if (sm_int(&vals[e->pid], &pid) < 0) {
		m->st.undecodable++;
		return -1;
	}
	sm_wakeup(m, rec->ns, pid, sm_str(vals, e->comm, c1));
	return 1;
}
