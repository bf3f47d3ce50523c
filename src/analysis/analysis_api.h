/*
 * src/analysis/analysis_api.h - the analysis layer: what reads traces to
 * tell more than their records, above the reader (and the kernel layer,
 * for kernel traces). Usable from a program without the command: the
 * trace collections (collection.c), the scheduling model (sched_model.c)
 * and the thread states it gives as JSON spans (sched_spans.c).
 */
#ifndef RINGTRACE_ANALYSIS_API_H
#define RINGTRACE_ANALYSIS_API_H

#include <stdint.h>

#include "ringtrace/trace.h"

/* ---- trace collections (collection.c) ---- */

/*
 * A trace directory, or a trace collection: a directory whose
 * subdirectories are traces (one per process: `ringtrace record -p` /
 * `-a` make them, docs/attach.md). report, stat and export read either.
 */
#define COLL_MAX_TRACES 1024

struct coll {
	uint32_t n;
	char **dirs;         /* each trace's directory */
	const char **names;  /* each trace's name in the collection (its subdirectory) */
	ringtrace_trace **t; /* opened */
	int is_collection;   /* DIR held traces, not one */
	uint32_t failed;     /* traces of the collection that could not be opened (said) */
};

/*
 * Open DIR: one trace if it has a metadata file, else every subdirectory
 * that has one (in name order, at most COLL_MAX_TRACES, not through a
 * symbolic link). 0, or -1 having said why (on stderr, as `prog`); errors
 * met while reading go to on_error. A trace of a collection that cannot be
 * opened is said and left out (counted in failed); -1 if none can.
 */
int coll_open(const char *dir, const char *prog, ringtrace_trace_error_fn on_error, struct coll *c);
void coll_close(struct coll *c);

/*
 * The collection's records merged by time: each trace gives its records in
 * time order, and the earliest of the traces' next records goes first
 * (ties: the trace that comes first by name). A collection's traces convert
 * the one cycle counter the same way (docs/attach.md), so the order across
 * processes is the order of events. report and sched read through it.
 */
struct coll_merge {
	const struct coll *c;
	struct ringtrace_trace_record *cur; /* each trace's next record */
	int *have;                          /* whether it has one */
	int last;                           /* the trace given last (-1: none yet) */
};
/* 0, or -1 out of memory. */
int coll_merge_init(struct coll_merge *m, const struct coll *c);
/* The index of the trace whose record is next, and *rec (valid until the
 * next call, which may change it: a caller may edit it); -1 at the end. */
int coll_merge_next(struct coll_merge *m, struct ringtrace_trace_record **rec);
void coll_merge_free(struct coll_merge *m);

/* ---- the scheduling model (sched_model.c) ---- */

/*
 * The scheduling view's thread-state model (docs/kernel.md, "The
 * scheduling view"): fed the kernel trace's sched_switch and sched_wakeup*
 * records in time order, it keeps per thread (kernel tid) the time spent
 *
 *   running   switched in, until switched out;
 *   runnable  woken up (sched_wakeup, sched_wakeup_new, sched_waking), or
 *             switched out preempted (prev_state & 0xff == 0, "R"/"R+"),
 *             until switched in;
 *   blocked   switched out asleep (any other prev_state but X/Z), until
 *             woken up (or switched in, if the wake-up was not recorded);
 *   unknown   after lost events, and between two events that contradict
 *             each other (a switch-out of a thread the model had off the
 *             CPU: an event was missed);
 *
 * a thread's time counted from its first scheduling event (the one that
 * tells its state: switched in, out, or woken) until its last switch-out
 * (as X or Z: it exited) or the end of the trace;
 *
 * the wake-up latencies (wake-up to switch-in), and its longest off-CPU
 * stretches (switch-out to switch-in) with the thread's user events just
 * before and after each.
 *
 * The records are untrusted: any tid, any order, events missing. Nothing
 * here crashes on them or counts a negative time: a record earlier than
 * the thread's current state's start counts as happening at that start
 * (and as out of order), and contradictions are counted, their time
 * "unknown". Memory is bounded: at most max_threads threads (events of
 * others are counted and ignored), and per thread a fixed-size latency
 * histogram (made at its first sample) and at most `top` stretches.
 *
 * The idle task (tid 0, one per CPU) is not a thread: it is left out.
 */
enum sm_state {
	SM_UNKNOWN = 0,
	SM_RUNNING = 1,
	SM_RUNNABLE = 2,
	SM_BLOCKED = 3,
	SM_EXITED = 4, /* switched out as X or Z: no time counted until seen again */
};
#define SM_NSTATES 4 /* the states time is counted in: unknown .. blocked */

#define SM_MAX_THREADS 32768u
#define SM_TOP_MAX 100u /* stretches kept per thread, at most */
#define SM_COMM_LEN 16  /* the kernel's TASK_COMM_LEN without the NUL */

/*
 * The wake-up latency histogram: exact below 32 ns, then 32 buckets per
 * power of two (a bucket is at most 1/32 of its values wide), up to 2^48 ns
 * (78 hours; longer latencies share the last bucket, the maximum is exact).
 */
#define SM_HIST_SUB 32u
#define SM_HIST_MAX_EXP 48u
#define SM_HIST_BUCKETS (SM_HIST_SUB + (SM_HIST_MAX_EXP - 5u) * SM_HIST_SUB)

/* A user event of the thread (name NULL: none). The name is the caller's:
 * it must outlive the model (event names are owned by their trace). */
struct sm_user_event {
	const char *name;
	uint64_t ns;
};

/* An off-CPU stretch: switched out at start, back in at end. */
struct sm_stretch {
	uint64_t start, end;
	uint64_t wake;     /* woken up at (start <= wake <= end); 0: no wake-up seen */
	uint8_t preempted; /* switched out runnable */
	uint8_t open;      /* not switched back in before the end of the trace */
	uint8_t need_after;
	struct sm_user_event before, after;
};

struct sm_thread {
	int64_t tid;
	char comm[SM_COMM_LEN + 1]; /* the last one the kernel gave */
	int32_t tag;                /* the caller's (-1 until it sets one) */
	uint8_t state;              /* enum sm_state */
	uint64_t since;             /* the current state's start, ns */
	uint64_t ns[SM_NSTATES];    /* time in each state */
	/* wake-up latency */
	uint8_t woken; /* runnable since a wake-up at wake_ns */
	uint64_t wake_ns;
	uint64_t lat_count, lat_min, lat_max;
	uint32_t *lat_hist; /* SM_HIST_BUCKETS counts, NULL before the first sample */
	/* off-CPU */
	uint8_t off_open; /* switched out at off_start, not back in */
	uint8_t off_preempted;
	uint64_t off_start, off_wake;
	struct sm_user_event off_before;
	struct sm_stretch *top; /* the longest first, ntop of them */
	uint32_t ntop, topcap, npending;
	struct sm_user_event last_user;
	/* what was seen */
	uint64_t events;       /* scheduling events that named it */
	uint64_t no_wakeup;    /* switched in from blocked without a wake-up */
	uint64_t inconsistent; /* contradicting events (one was missed) */
};

struct sm_stats {
	uint64_t switches, wakeups, other; /* kernel records fed, by kind */
	uint64_t undecodable;              /* scheduling records whose fields could not be read */
	uint64_t out_of_order;             /* records earlier than one fed before */
	uint64_t lost_marks, lost_events;  /* lost-event records, and the events they count */
	uint64_t beyond_cap;               /* events of threads beyond max_threads, ignored */
	uint64_t first_ns, last_ns;        /* of the kernel records fed (0, 0: none) */
	int oom; /* memory ran out: some stretches or samples are missing */
};

struct sm_model;

/*
 * Called (if set) for each interval of running, runnable or blocked that a
 * thread ends, start < end, in the order the model ends them (not sorted
 * by start across threads). t is valid during the call only.
 */
typedef void (*sm_interval_fn)(void *arg, const struct sm_thread *t, enum sm_state state,
			       uint64_t start, uint64_t end);

/* max_threads: 0 for SM_MAX_THREADS; top: stretches kept per thread (at
 * most SM_TOP_MAX). NULL if out of memory. */
struct sm_model *sm_new(uint32_t max_threads, uint32_t top);
void sm_free(struct sm_model *m);
void sm_set_interval_fn(struct sm_model *m, sm_interval_fn fn, void *arg);

/*
 * The events. prev_state as the kernel's sched_switch has it (its format
 * file prints "R" when prev_state & 0xff is 0, "+" for the 0x100 bit: the
 * thread was preempted; else the flags S D T t X Z P I of bits 0x01..0x80).
 * comm may be NULL (unknown).
 */
void sm_switch(struct sm_model *m, uint64_t ns, int64_t prev_tid, const char *prev_comm,
	       int64_t prev_state, int64_t next_tid, const char *next_comm);
void sm_wakeup(struct sm_model *m, uint64_t ns, int64_t tid, const char *comm);
/* Events were lost at ns (the kernel's buffer overran): every thread's
 * state is unknown from then until an event tells it again. */
void sm_lost(struct sm_model *m, uint64_t ns, uint64_t count);
/* A user event of thread tid at ns: the "before" and "after" of its
 * off-CPU stretches. It says nothing of the thread's state. */
void sm_user_event(struct sm_model *m, uint64_t ns, int64_t tid, const char *name);

/*
 * A record of the kernel trace (docs/kernel.md): sched_switch,
 * sched_wakeup, sched_wakeup_new and sched_waking read by their fields'
 * names (ringtrace_record_decode), a lost-events record as sm_lost.
 * 1 used, 0 not a scheduling event, -1 one whose fields could not be read
 * (counted in undecodable, ignored).
 */
int sm_kernel_record(struct sm_model *m, const struct ringtrace_trace_record *rec);

/* The end of the trace: every thread's current state counted up to end
 * (no earlier than its start), its open off-CPU stretch kept as open. */
void sm_finish(struct sm_model *m, uint64_t end);

const struct sm_stats *sm_stats(const struct sm_model *m);
uint32_t sm_count(const struct sm_model *m);
/* Pointers into the model are valid until the next event is fed. */
struct sm_thread *sm_at(struct sm_model *m, uint32_t i);
struct sm_thread *sm_find(struct sm_model *m, int64_t tid);
/* Found or made (NULL: the cap reached, or out of memory). */
struct sm_thread *sm_get(struct sm_model *m, int64_t tid);

/* The q-quantile (0 < q <= 1) of the thread's wake-up latencies, ns: the
 * middle of its histogram bucket, within [min, max] (exact for one sample);
 * 0 without samples. */
uint64_t sm_latency_quantile(const struct sm_thread *t, double q);

/* ---- the thread states as JSON spans (sched_spans.c) ---- */

/* The index of the collection's kernel trace (its process line: pid 0,
 * "kernel"), or -1. */
int sched_kernel_trace(const struct coll *c);
/* Whether the trace defines an event named name. */
int sched_trace_defines(const ringtrace_trace *t, const char *name);

/*
 * The thread states of the recorded threads (the tids of the collection's
 * user traces, and their pids) as spans "running" / "runnable" /
 * "blocked" (cat "sched") on their own tracks: a ringtrace_json_span_fn
 * and its argument (`ringtrace export`). Made before the JSON is written;
 * the spans are read from a handle of the kernel trace of its own, once
 * the writer has read the user traces (their streams say the tids). NULL
 * when there is nothing to add (no kernel trace, or one without
 * sched_switch) or out of memory (said on stderr, as prog).
 */
struct sched_spans;
struct sched_spans *sched_spans_new(const struct coll *c, const char *prog);
int sched_spans_next(void *arg, struct ringtrace_json_span *span);
void sched_spans_free(struct sched_spans *s);

#endif
