/*
 * The kernel trace's tables of the SQL layer (src/query/import_kernel.c)
 * on kernel traces made here, record by record, so that every row is
 * known: a kernel trace (DIR/kernel's layout: a stream per CPU, process
 * pid 0 "kernel") with sched_switch and sched_wakeup events of fixed
 * fields, imported by qy_import, its tables read from the store.
 *
 *  - a known sequence on two CPUs: every thread_state and sched_slice
 *    row (states, letters as the kernel prints them, CPUs, priorities,
 *    wakers, an unknown interval where two events contradict each other,
 *    a slice still running at the end);
 *  - events lost between two pages of a CPU: the running interval ends
 *    there, the time until the thread's next event is unknown ('U'), the
 *    loss in stats;
 *  - random sequences (any tid, any prev_state, events missing): per
 *    thread, the sums of thread_state per state and of sched_slice equal
 *    what the scheduling model fed the same records counts (as `ringtrace
 *    sched` does), and no row has a negative duration.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "query/query_api.h"
#include "ring/page_api.h"
#include "ringtrace/ctf.h"
#include "ringtrace/format.h"

#define PAGE 4096u
#define EV_SWITCH 2u
#define EV_WAKEUP 3u

/* sched_switch and sched_wakeup, with the fields the model reads and
 * common_pid last, as the recorder writes them (no comms: NULL). */
static const struct ringtrace_field_desc sw_fields[] = {
	{"prev_pid", RINGTRACE_FT_INT, 4, 1, 4, 0, NULL},
	{"prev_state", RINGTRACE_FT_INT, 8, 1, 8, 0, NULL},
	{"next_pid", RINGTRACE_FT_INT, 4, 1, 4, 0, NULL},
	{"next_prio", RINGTRACE_FT_INT, 4, 1, 4, 0, NULL},
	{"common_pid", RINGTRACE_FT_INT, 4, 1, 4, 0, NULL},
};
static const struct ringtrace_field_desc wk_fields[] = {
	{"pid", RINGTRACE_FT_INT, 4, 1, 4, 0, NULL},
	{"common_pid", RINGTRACE_FT_INT, 4, 1, 4, 0, NULL},
};

/* One record to write: on cpu at ns (ticks: the clock is 1 GHz from 0). */
struct gen_ev {
	uint32_t cpu;
	uint64_t ns;
	uint32_t id;                /* EV_SWITCH, EV_WAKEUP, or 0: a page break */
	int32_t a, b, prio, common; /* switch: prev, next; wake-up: pid */
	int64_t state;              /* switch: prev_state */
	uint64_t lost;              /* a page break: events lost before the next page */
};

#define MAX_CPUS 4u

struct gen_cpu {
	char page[PAGE] __attribute__((aligned(8)));
	struct rt_page_enc enc;
	uint64_t seq, before, discarded;
	int open;
};

static void gen_flush(const char *dir, struct gen_cpu *g, uint32_t cpu)
{
	if (!g->open)
		return;
	struct ringtrace_page_header *h = g->enc.h;
	h->stream_instance_id = cpu + 1;
	h->packet_seq_num = g->seq++;
	h->events_before = g->before;
	h->events_discarded = g->discarded;
	h->cpu = cpu;
	snprintf(h->comm, sizeof(h->comm), "kernel/%u", cpu);
	uint32_t n = h->events;
	rt_page_enc_close(&g->enc);
	CHECK_OK(ringtrace_ctf_append_page(dir, h, PAGE));
	g->before += n;
	g->open = 0;
}

/* DIR/kernel: the records (each CPU's in time order), then its metadata. */
static void gen_trace(const char *root, const struct gen_ev *ev, size_t n)
{
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/kernel", root);
	CHECK(mkdir(root, 0755) == 0);
	CHECK(mkdir(dir, 0755) == 0);
	static struct gen_cpu cpus[MAX_CPUS];
	memset(cpus, 0, sizeof(cpus));
	for (size_t i = 0; i < n; i++) {
		struct gen_cpu *g = &cpus[ev[i].cpu % MAX_CPUS];
		if (!ev[i].id) { /* a page break, with events lost at it */
			gen_flush(dir, g, ev[i].cpu % MAX_CPUS);
			g->discarded += ev[i].lost;
			continue;
		}
		if (!g->open) {
			rt_page_enc_begin(&g->enc, g->page, PAGE);
			g->open = 1;
		}
		char p[32] = {0};
		uint32_t len;
		if (ev[i].id == EV_SWITCH) {
			memcpy(p, &ev[i].a, 4);
			memcpy(p + 8, &ev[i].state, 8);
			memcpy(p + 16, &ev[i].b, 4);
			memcpy(p + 20, &ev[i].prio, 4);
			memcpy(p + 24, &ev[i].common, 4);
			len = 28;
		} else {
			memcpy(p, &ev[i].a, 4);
			memcpy(p + 4, &ev[i].common, 4);
			len = 8;
		}
		int rc = rt_page_enc_add(&g->enc, ev[i].id, ev[i].ns, p, len);
		if (rc == 0) {
			gen_flush(dir, g, ev[i].cpu % MAX_CPUS);
			rt_page_enc_begin(&g->enc, g->page, PAGE);
			g->open = 1;
			rc = rt_page_enc_add(&g->enc, ev[i].id, ev[i].ns, p, len);
		}
		CHECK(rc == 1);
	}
	for (uint32_t c = 0; c < MAX_CPUS; c++)
		gen_flush(dir, &cpus[c], c);
	static const struct ringtrace_trace_event_def defs[] = {
		{EV_SWITCH, RINGTRACE_KIND_INSTANT, "sched_switch",
		 "prev_pid=%d prev_state=%lld next_pid=%d next_prio=%d common_pid=%d", sw_fields,
		 sizeof(sw_fields) / sizeof(sw_fields[0]), NULL, 0},
		{EV_WAKEUP, RINGTRACE_KIND_INSTANT, "sched_wakeup", "pid=%d common_pid=%d",
		 wk_fields, sizeof(wk_fields) / sizeof(wk_fields[0]), NULL, 0},
	};
	struct ringtrace_trace_process pr = {0, "kernel", "", "test"};
	struct ringtrace_ctf_trace_desc desc = {
		{0, 1000000000u, 0, 0}, defs, 2, NULL, 0, NULL, 0, &pr, 0, 0};
	CHECK_OK(ringtrace_ctf_write_described(dir, &desc));
}

/* A directory of the case's own: root is <it>/t, not made yet. */
static void tmp_root(char *root, size_t size)
{
	char base[] = "/tmp/ringtrace-query-sched-XXXXXX";
	CHECK(mkdtemp(base) != NULL);
	snprintf(root, size, "%s/t", base);
}

static void rm_flat(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	char p[768];
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			unlink(p);
		}
	closedir(d);
	rmdir(dir);
}

/* root/kernel, root, and root's directory. */
static void tmp_remove(const char *root)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/kernel", root);
	rm_flat(p);
	rmdir(root);
	snprintf(p, sizeof(p), "%s", root);
	*strrchr(p, '/') = 0;
	rmdir(p);
}

/* The import of DIR/kernel, and what the checks read of it. */
struct imp {
	struct coll c;
	struct qy_store *s;
	struct qy_table *ts, *ss, *th, *st;
};

static void imp_open(struct imp *m, const char *root)
{
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/kernel", root);
	CHECK(coll_open(dir, "test_query_sched", NULL, &m->c) == 0);
	CHECK((m->s = qy_store_new()) != NULL);
	struct qy_import_opts o = {0};
	struct qy_import_result r;
	char err[256] = "";
	CHECKF(qy_import(m->s, &m->c, &o, &r, err, sizeof(err)) == 0, "import: %s", err);
	CHECK((m->ts = qy_table_find(m->s, "thread_state")) != NULL);
	CHECK((m->ss = qy_table_find(m->s, "sched_slice")) != NULL);
	CHECK((m->th = qy_table_find(m->s, "thread")) != NULL);
	CHECK((m->st = qy_table_find(m->s, "stats")) != NULL);
}

static void imp_close(struct imp *m)
{
	qy_store_free(m->s);
	coll_close(&m->c);
}

static int64_t col_i64(struct qy_table *t, const char *col, uint64_t r)
{
	int c = qy_col_find(t, col);
	CHECKF(c >= 0, "no column %s in %s", col, t->name);
	return qy_i64(t, (uint32_t)c)[r];
}

static const char *col_str(struct imp *m, struct qy_table *t, const char *col, uint64_t r)
{
	int c = qy_col_find(t, col);
	CHECKF(c >= 0, "no column %s in %s", col, t->name);
	const char *s = qy_str_get(m->s, qy_sid(t, (uint32_t)c)[r], NULL);
	return s ? s : "NULL";
}

/* The tid of a utid (QY_NULL_INT: NULL), -1 if none. */
static int64_t tid_of(struct imp *m, int64_t utid)
{
	if (utid == QY_NULL_INT)
		return QY_NULL_INT;
	for (uint64_t r = 0; r < m->th->nrows; r++)
		if (col_i64(m->th, "utid", r) == utid)
			return col_i64(m->th, "tid", r);
	return -1;
}

static int64_t stat_value(struct imp *m, const char *name)
{
	for (uint64_t r = 0; r < m->st->nrows; r++)
		if (strcmp(col_str(m, m->st, "name", r), name) == 0)
			return col_i64(m->st, "value", r);
	CHECKF(0, "no stats row %s", name);
	return 0;
}

/* The rows as text, sorted ("tid ts dur state cpu waker-tid" and "tid ts
 * dur cpu end_state prio"), so that a case compares them as a whole. */
static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *rows_text(struct imp *m, int slices)
{
	struct qy_table *t = slices ? m->ss : m->ts;
	char **v = calloc(t->nrows + 1, sizeof(*v));
	CHECK(v != NULL);
	size_t total = 1;
	for (uint64_t r = 0; r < t->nrows; r++) {
		char line[256];
		int64_t cpu = col_i64(t, "cpu", r);
		char cb[24];
		if (cpu == QY_NULL_INT)
			snprintf(cb, sizeof(cb), "-");
		else
			snprintf(cb, sizeof(cb), "%" PRId64, cpu);
		if (slices) {
			int64_t prio = col_i64(t, "priority", r);
			snprintf(line, sizeof(line),
				 "%" PRId64 " %" PRId64 " %" PRId64 " %s %s %" PRId64,
				 tid_of(m, col_i64(t, "utid", r)), col_i64(t, "ts", r),
				 col_i64(t, "dur", r), cb, col_str(m, t, "end_state", r), prio);
		} else {
			int64_t w = tid_of(m, col_i64(t, "waker_utid", r));
			char wb[24];
			if (w == QY_NULL_INT)
				snprintf(wb, sizeof(wb), "-");
			else
				snprintf(wb, sizeof(wb), "%" PRId64, w);
			snprintf(line, sizeof(line), "%" PRId64 " %" PRId64 " %" PRId64 " %s %s %s",
				 tid_of(m, col_i64(t, "utid", r)), col_i64(t, "ts", r),
				 col_i64(t, "dur", r), col_str(m, t, "state", r), cb, wb);
		}
		CHECK((v[r] = strdup(line)) != NULL);
		total += strlen(line) + 1;
	}
	qsort(v, t->nrows, sizeof(*v), cmp_str);
	char *out = malloc(total);
	CHECK(out != NULL);
	out[0] = 0;
	for (uint64_t r = 0; r < t->nrows; r++) {
		strcat(out, v[r]);
		strcat(out, "\n");
		free(v[r]);
	}
	free(v);
	return out;
}

#define SW(cpu, ns, prev, state, next, prio, common)                                 \
	{                                                                            \
		(cpu), (ns), EV_SWITCH, (prev), (next), (prio), (common), (state), 0 \
	}
#define WK(cpu, ns, pid, common)                                    \
	{                                                           \
		(cpu), (ns), EV_WAKEUP, (pid), 0, 0, (common), 0, 0 \
	}
#define BREAK(cpu, lost)                           \
	{                                          \
		(cpu), 0, 0, 0, 0, 0, 0, 0, (lost) \
	}

static void check_text(const char *what, const char *got, const char *want)
{
	CHECKF(strcmp(got, want) == 0, "%s:\n%s\nwanted:\n%s", what, got, want);
}

static void known_sequence(void)
{
	char root[256];
	tmp_root(root, sizeof(root));
	/* CPU 0: 10 runs, sleeps (S), is woken by 11, preempts 11 (R+), sleeps
	 * as S|D and is woken at the end; 11 is woken by 10 first. CPU 1: 20
	 * runs, sleeps, and is switched out again while asleep (a switch-in
	 * was missed): unknown in between. The last scheduling record, at
	 * 800, ends the trace. */
	static const struct gen_ev ev[] = {
		SW(0, 100, 0, 0, 10, 120, 0),
		WK(0, 200, 11, 10),
		SW(1, 150, 0, 0, 20, 100, 0),
		SW(1, 250, 20, 1, 0, 120, 20),
		SW(0, 300, 10, 1, 11, 110, 10),
		SW(1, 350, 20, 1, 0, 120, 20),
		WK(0, 400, 10, 11),
		SW(0, 450, 11, 0x100, 10, 120, 11),
		SW(0, 600, 10, 3, 11, 110, 10),
		WK(0, 800, 10, 11),
	};
	gen_trace(root, ev, sizeof(ev) / sizeof(ev[0]));
	struct imp m;
	imp_open(&m, root);
	char *ts = rows_text(&m, 0), *ss = rows_text(&m, 1);
	check_text("thread_state", ts,
		   "10 100 200 Running 0 -\n"
		   "10 300 100 S - -\n"
		   "10 400 50 R - 11\n"
		   "10 450 150 Running 0 -\n"
		   "10 600 200 S|D - -\n"
		   "11 200 100 R - 10\n"
		   "11 300 150 Running 0 -\n"
		   "11 450 150 R+ - -\n"
		   "11 600 200 Running 0 -\n"
		   "20 150 100 Running 1 -\n"
		   "20 250 100 U - -\n"
		   "20 350 450 S - -\n");
	check_text("sched_slice", ss,
		   "10 100 200 0 S 120\n"
		   "10 450 150 0 S|D 120\n"
		   "11 300 150 0 R+ 110\n"
		   "11 600 200 0 NULL 110\n"
		   "20 150 100 1 S 100\n");
	CHECK_EQ_U64(stat_value(&m, "sched_switch"), 7);
	CHECK_EQ_U64(stat_value(&m, "sched_wakeup"), 3);
	CHECK_EQ_U64(stat_value(&m, "sched_inconsistent"), 1);
	/* every event a row of ftrace_event, its utid common_pid's */
	struct qy_table *fe = qy_table_find(m.s, "ftrace_event");
	CHECK(fe != NULL);
	CHECK_EQ_U64(fe->nrows, sizeof(ev) / sizeof(ev[0]));
	for (uint64_t r = 0; r < fe->nrows; r++) {
		int64_t t = col_i64(fe, "ts", r);
		size_t i = 0;
		while (i < sizeof(ev) / sizeof(ev[0]) && (int64_t)ev[i].ns != t)
			i++;
		CHECK(i < sizeof(ev) / sizeof(ev[0]));
		CHECK_EQ_U64(tid_of(&m, col_i64(fe, "utid", r)), ev[i].common);
		CHECK_EQ_U64(col_i64(fe, "cpu", r), ev[i].cpu);
		CHECK(strcmp(col_str(&m, fe, "name", r),
			     ev[i].id == EV_SWITCH ? "sched_switch" : "sched_wakeup") == 0);
	}
	free(ts);
	free(ss);
	imp_close(&m);
	tmp_remove(root);
}

static void lost_events(void)
{
	char root[256];
	tmp_root(root, sizeof(root));
	/* 10 runs from 100; 5 events lost before the next page (the reader
	 * places the loss at its first event, 200); 10 switched out at 300 */
	static const struct gen_ev ev[] = {
		SW(0, 100, 0, 0, 10, 120, 0),   WK(0, 150, 11, 10), BREAK(0, 5), WK(0, 200, 12, 10),
		SW(0, 300, 10, 1, 11, 120, 10),
	};
	gen_trace(root, ev, sizeof(ev) / sizeof(ev[0]));
	struct imp m;
	imp_open(&m, root);
	CHECK_EQ_U64(stat_value(&m, "sched_lost_marks"), 1);
	CHECK_EQ_U64(stat_value(&m, "sched_lost_events"), 5);
	/* 10: running from 100 to the loss, unknown from there to 300; the
	 * slice ends at the loss with no end state */
	int64_t lost_at = -1, run = 0, unknown = 0;
	for (uint64_t r = 0; r < m.ts->nrows; r++) {
		if (tid_of(&m, col_i64(m.ts, "utid", r)) != 10)
			continue;
		const char *st = col_str(&m, m.ts, "state", r);
		int64_t t0 = col_i64(m.ts, "ts", r), d = col_i64(m.ts, "dur", r);
		if (strcmp(st, "Running") == 0) {
			CHECK_EQ_U64(t0, 100);
			lost_at = t0 + d;
			run += d;
		} else {
			CHECKF(strcmp(st, "U") == 0, "state %s", st);
			unknown += d;
			CHECK_EQ_U64(t0 + d, 300);
		}
	}
	CHECK_EQ_U64(lost_at, 200);
	CHECK_EQ_U64(run, 100);
	CHECK_EQ_U64(unknown, 100);
	CHECK_EQ_U64(m.ss->nrows, 1);
	CHECK_EQ_U64(col_i64(m.ss, "ts", 0), 100);
	CHECK_EQ_U64(col_i64(m.ss, "ts", 0) + col_i64(m.ss, "dur", 0), lost_at);
	CHECK(strcmp(col_str(&m, m.ss, "end_state", 0), "NULL") == 0);
	imp_close(&m);
	tmp_remove(root);
}

/* ---- random sequences against the model ---- */

static uint64_t rnd_state;
static uint32_t rnd(uint32_t n)
{
	rnd_state = rnd_state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rnd_state >> 33) % n;
}

#define NTIDS 8

/* Per tid (index 0..NTIDS-1: tids -1, 0, 1, ...) the model's sums. */
struct sums {
	int64_t ns[NTIDS][SM_NSTATES], slice[NTIDS];
};

static int tid_index(int64_t tid)
{
	return tid >= -1 && tid < NTIDS - 1 ? (int)tid + 1 : -1;
}

/* The rows' time per state over every seed: the sequences meet each. */
static int64_t seen[SM_NSTATES];

static void random_once(uint64_t seed)
{
	char root[256];
	tmp_root(root, sizeof(root));
	rnd_state = seed;
	size_t n = 200 + rnd(200);
	struct gen_ev *ev = calloc(n, sizeof(*ev));
	CHECK(ev != NULL);
	static const int64_t states[] = {0, 1, 2, 0x100, 0x101, 0x10, 0x20, 0x80, 3, -1};
	uint64_t t[2] = {1000, 1000};
	for (size_t i = 0; i < n; i++) {
		uint32_t cpu = rnd(2);
		t[cpu] += rnd(50);
		int32_t a = (int32_t)rnd(NTIDS) - 1, b = (int32_t)rnd(NTIDS) - 1;
		if (rnd(20) == 0)
			ev[i] = (struct gen_ev)BREAK(cpu, 1 + rnd(3));
		else if (rnd(3) == 0)
			ev[i] = (struct gen_ev)WK(cpu, t[cpu], a, b);
		else
			ev[i] = (struct gen_ev)SW(cpu, t[cpu], a, states[rnd(10)], b,
						  (int32_t)rnd(140), a);
	}
	gen_trace(root, ev, n);
	free(ev);

	/* the model fed the kernel trace as `ringtrace sched` feeds it */
	struct imp m;
	imp_open(&m, root);
	struct sm_model *sm = sm_new(0, 0);
	CHECK(sm != NULL);
	/* (a handle of its own: the import read the other to its end) */
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/kernel", root);
	struct coll c2;
	CHECK(coll_open(dir, "test_query_sched", NULL, &c2) == 0);
	struct ringtrace_trace_record rec;
	while (ringtrace_trace_next(c2.t[0], &rec) == 1)
		sm_kernel_record(sm, &rec);
	coll_close(&c2);
	sm_finish(sm, sm_stats(sm)->last_ns);
	struct sums *want = calloc(1, sizeof(*want)), *got = calloc(1, sizeof(*got));
	CHECK(want && got);
	for (uint32_t i = 0; i < sm_count(sm); i++) {
		const struct sm_thread *th = sm_at(sm, i);
		int x = tid_index(th->tid);
		CHECK(x >= 0);
		for (int s = 0; s < SM_NSTATES; s++)
			want->ns[x][s] = (int64_t)th->ns[s];
		want->slice[x] = (int64_t)th->ns[SM_RUNNING];
	}
	for (uint64_t r = 0; r < m.ts->nrows; r++) {
		int x = tid_index(tid_of(&m, col_i64(m.ts, "utid", r)));
		CHECK(x >= 0);
		const char *st = col_str(&m, m.ts, "state", r);
		int64_t d = col_i64(m.ts, "dur", r);
		CHECK(d > 0);
		int s = strcmp(st, "Running") == 0 ? SM_RUNNING
			: st[0] == 'R'             ? SM_RUNNABLE
			: st[0] == 'U'             ? SM_UNKNOWN
						   : SM_BLOCKED;
		got->ns[x][s] += d;
		seen[s] += d;
	}
	for (uint64_t r = 0; r < m.ss->nrows; r++) {
		int x = tid_index(tid_of(&m, col_i64(m.ss, "utid", r)));
		CHECK(x >= 0);
		CHECK(col_i64(m.ss, "dur", r) > 0);
		got->slice[x] += col_i64(m.ss, "dur", r);
	}
	for (int x = 0; x < NTIDS; x++) {
		for (int s = 0; s < SM_NSTATES; s++)
			CHECKF(got->ns[x][s] == want->ns[x][s],
			       "seed %" PRIu64 " tid %d state %d: %" PRId64
			       " ns, the model %" PRId64,
			       seed, x - 1, s, got->ns[x][s], want->ns[x][s]);
		CHECKF(got->slice[x] == want->slice[x],
		       "seed %" PRIu64 " tid %d: slices %" PRId64 " ns, running %" PRId64, seed,
		       x - 1, got->slice[x], want->slice[x]);
	}
	free(want);
	free(got);
	sm_free(sm);
	imp_close(&m);
	tmp_remove(root);
}

static void random_sequences(void)
{
	memset(seen, 0, sizeof(seen));
	for (uint64_t seed = 1; seed <= 50; seed++)
		random_once(seed);
	for (int s = 0; s < SM_NSTATES; s++)
		CHECKF(seen[s] > 0, "no time in state %d in any sequence", s);
}

static const struct check_case cases[] = {
	CHECK_CASE(query_sched_rows_of_a_known_sequence, known_sequence),
	CHECK_CASE(query_sched_lost_events_unknown_until_the_next, lost_events),
	CHECK_CASE(query_sched_random_sequences_sum_as_the_model, random_sequences),
};

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
