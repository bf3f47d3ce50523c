/*
 * test_event_enable: enabling and disabling events by name and by glob.
 *
 *  1. Exact names, globs (*, ?, [..], [!..]), the count of events matched,
 *     the registry's `enabled`, the descriptor's word the call site reads,
 *     and what is actually recorded.
 *  2. Errors: a name nothing defines (-RINGTRACE_ENOENT, the message names
 *     it); malformed patterns (-RINGTRACE_EINVAL, the message names the
 *     pattern): "ev_[", "ev_]", "", "bad name", "a,b".
 *  3. ringtrace_events_configure(): "a,-b,c*" lists, the last matching rule
 *     wins, nothing is applied when one pattern is bad.
 *  4. Concurrency: two threads call two tracepoints in a loop while the
 *     main thread enables and disables them by glob for about a second and
 *     consumes the pages; every event recorded is intact and each thread's
 *     sequence is strictly increasing. After a disable and a grace period
 *     (ringtrace_events_set_buffer), at most one call per thread (one that
 *     read the state before the disable) still records; then nothing.
 *  5. RINGTRACE_EVENTS at process start (the test re-executes itself with
 *     the variable set): a bad pattern is reported on stderr and enables
 *     nothing; good names are enabled before any API call; a name nothing
 *     defines is reported (once) when a buffer is attached.
 * Each is a case (5. two: the bad pattern, the missing name).
 */
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/wait.h>

#define RINGTRACE_CREATE_EVENTS
#include "events_enable.h"
#include "events_util.h"
#include "testutil.h"

extern char **environ;

static int desc_on(const struct ringtrace_event_desc *d)
{
	return __atomic_load_n(&d->state, __ATOMIC_RELAXED) != 0;
}

#define CHECK_RC(call, want)                                                              \
	do {                                                                              \
		int rc_ = (call);                                                         \
		CHECKF(rc_ == (want), "%s returned %d (%s), expected %d: %s", #call, rc_, \
		       ringtrace_strerror(rc_), (int)(want), ringtrace_last_error());     \
	} while (0)

/* ---- 1. names and globs ------------------------------------------------- */

static void fire_simple(int x)
{
	trace_ev_a(x);
	trace_ev_ab(x);
	trace_ev_b(x);
	trace_ev_c(x);
	trace_ev_x(x);
}

static void test_names(void)
{
	ringtrace_rb *rb = evu_buffer(16u << 10, 16);
	struct evu_list l = {0};

	CHECK(!desc_on(&ringtrace_event_ev_a) && !evu_enabled("ev_a"));
	fire_simple(0);
	evu_collect(rb, &l);
	CHECK_EQ_U64(l.n, 0);

	/* exact name */
	CHECK_RC(ringtrace_event_enable("ev_a"), 1);
	CHECK(desc_on(&ringtrace_event_ev_a) && evu_enabled("ev_a"));
	CHECK(!desc_on(&ringtrace_event_ev_ab) && !evu_enabled("ev_ab"));
	CHECK(ringtrace_event_ev_a.state == RINGTRACE_EV_RECORD);
	fire_simple(1);
	evu_collect(rb, &l);
	CHECK_EQ_U64(l.n, 1);
	CHECK_EQ_U64(l.ev[0].id, evu_id("ev_a"));
	evu_list_free(&l);
	/* enabling twice is fine */
	CHECK_RC(ringtrace_event_enable("ev_a"), 1);

	/* globs: ev_* (ev_a ev_ab ev_b ev_c ev_x ev_t1 ev_t2) */
	CHECK_RC(ringtrace_event_enable("ev_*"), 7);
	fire_simple(2);
	evu_collect(rb, &l);
	CHECK_EQ_U64(l.n, 5);
	evu_list_free(&l);
	CHECK_RC(ringtrace_event_disable("ev_*"), 7);
	CHECK(!desc_on(&ringtrace_event_ev_a) && !desc_on(&ringtrace_event_ev_t2));
	fire_simple(3);
	evu_collect(rb, &l);
	CHECK_EQ_U64(l.n, 0);

	CHECK_RC(ringtrace_event_enable("ev_[ab]*"), 3);
	CHECK(evu_enabled("ev_a") && evu_enabled("ev_ab") && evu_enabled("ev_b"));
	CHECK(!evu_enabled("ev_c") && !evu_enabled("ev_x") && !evu_enabled("ev_t1"));
	fire_simple(4);
	evu_collect(rb, &l);
	CHECK_EQ_U64(l.n, 3);
	CHECK_EQ_U64(evu_count_id(&l, evu_id("ev_c")), 0);
	evu_list_free(&l);

	CHECK_RC(ringtrace_event_enable("?v_x"), 1);
	CHECK(evu_enabled("ev_x") && !evu_enabled("ev_c"));
	CHECK_RC(ringtrace_event_disable("ev_a"), 1);
	CHECK(!evu_enabled("ev_a") && evu_enabled("ev_ab"));
	fire_simple(5);
	evu_collect(rb, &l);
	CHECK_EQ_U64(l.n, 3); /* ab b x */
	CHECK_EQ_U64(evu_count_id(&l, evu_id("ev_x")), 1);
	CHECK_EQ_U64(evu_count_id(&l, evu_id("ev_a")), 0);
	evu_list_free(&l);

	/* negated class: ev_b ev_c ev_x ev_t1 ev_t2 (not ev_a, ev_ab) */
	CHECK_RC(ringtrace_event_disable("ev_[!a]*"), 5);
	CHECK(evu_enabled("ev_ab") && !evu_enabled("ev_b") && !evu_enabled("ev_x"));
	CHECK_RC(ringtrace_event_disable("ev_?b"), 1);
	CHECK(!evu_enabled("ev_ab"));
	/* a range */
	CHECK_RC(ringtrace_event_enable("ev_[a-c]"), 3);
	CHECK(evu_enabled("ev_a") && evu_enabled("ev_b") && evu_enabled("ev_c"));
	CHECK_RC(ringtrace_event_disable("*"), (int)ringtrace_event_count());
	CHECK(!evu_enabled("ev_a") && !evu_enabled("ringtrace_printf"));
	fire_simple(6);
	evu_collect(rb, &l);
	CHECK_EQ_U64(l.n, 0);
	evu_buffer_done(rb);
}

/* ---- 2. errors ----------------------------------------------------------- */

static void test_errors(void)
{
	CHECK_RC(ringtrace_event_enable("nosuch_event"), -RINGTRACE_ENOENT);
	CHECKF(evu_has(ringtrace_last_error(), "nosuch_event"), "message: %s",
	       ringtrace_last_error());
	CHECK_RC(ringtrace_event_disable("nosuch_other"), -RINGTRACE_ENOENT);
	CHECKF(evu_has(ringtrace_last_error(), "nosuch_other"), "message: %s",
	       ringtrace_last_error());
	CHECK_RC(ringtrace_event_enable("zz_*"), -RINGTRACE_ENOENT);
	CHECKF(evu_has(ringtrace_last_error(), "zz_*"), "message: %s", ringtrace_last_error());

	static const char *const bad[] = {"ev_[",  "ev_]",  "",     "bad name", "a,b",
					  "ev_[a", "ev_a]", "ev/a", "ev_a\n",   "-ev_a"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		for (int on = 0; on < 2; on++) {
			int rc = on ? ringtrace_event_enable(bad[i])
				    : ringtrace_event_disable(bad[i]);
			CHECKF(rc == -RINGTRACE_EINVAL, "%s(\"%s\") = %d: %s",
			       on ? "enable" : "disable", bad[i], rc, ringtrace_last_error());
			const char *m = ringtrace_last_error();
			if (bad[i][0])
				CHECKF(evu_has(m, bad[i]), "message for \"%s\": %s", bad[i], m);
			else
				CHECKF(m[0] != 0, "no message for the empty pattern");
		}
	}
	/* no state changed */
	CHECK(!evu_enabled("ev_a"));
	CHECK_RC(ringtrace_event_enable(NULL), -RINGTRACE_EINVAL);
	/* a long name */
	char longp[300];
	memset(longp, 'e', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = 0;
	CHECK_RC(ringtrace_event_enable(longp), -RINGTRACE_EINVAL);
}

/* ---- 3. configure -------------------------------------------------------- */

static void test_configure(void)
{
	CHECK_RC(ringtrace_event_enable("cfg_b"), 1);
	CHECK_RC(ringtrace_events_configure("cfg_a,-cfg_b,cfg_c*"), 0);
	CHECK(evu_enabled("cfg_a") && !evu_enabled("cfg_b"));
	CHECK(evu_enabled("cfg_c1") && evu_enabled("cfg_c2"));
	CHECK(desc_on(&ringtrace_event_cfg_c2) && !desc_on(&ringtrace_event_cfg_b));

	/* the last matching rule wins; spaces around entries are allowed */
	CHECK_RC(ringtrace_events_configure("-cfg_c*, cfg_c2 ,cfg_b"), 0);
	CHECK(!evu_enabled("cfg_c1") && evu_enabled("cfg_c2") && evu_enabled("cfg_b"));

	/* one bad pattern: nothing applied */
	CHECK_RC(ringtrace_events_configure("-cfg_a,-cfg_b,bad name"), -RINGTRACE_EINVAL);
	CHECKF(evu_has(ringtrace_last_error(), "bad name"), "message: %s", ringtrace_last_error());
	CHECK(evu_enabled("cfg_a") && evu_enabled("cfg_b"));
	CHECK_RC(ringtrace_events_configure("-cfg_a,ev_["), -RINGTRACE_EINVAL);
	CHECKF(evu_has(ringtrace_last_error(), "ev_["), "message: %s", ringtrace_last_error());
	CHECK(evu_enabled("cfg_a"));
	CHECK_RC(ringtrace_events_configure("-cfg_a,-"), -RINGTRACE_EINVAL);
	CHECK(evu_enabled("cfg_a"));
	CHECK_RC(ringtrace_events_configure(NULL), -RINGTRACE_EINVAL);
	CHECK_RC(ringtrace_events_configure(""), 0);
	CHECK_RC(ringtrace_events_configure("-cfg_*"), 0);
	CHECK(!evu_enabled("cfg_a") && !evu_enabled("cfg_b") && !evu_enabled("cfg_c2"));
}

/* ---- 4. concurrency ---------------------------------------------------- */

static int stop_flag;
static uint64_t calls[2];

static void *hammer(void *arg)
{
	uint32_t th = (uint32_t)(uintptr_t)arg;
	char s[32];
	uint64_t seq = 0;
	while (!__atomic_load_n(&stop_flag, __ATOMIC_ACQUIRE)) {
		for (int i = 0; i < 64; i++) {
			seq++;
			snprintf(s, sizeof(s), "t%u-%llu", th, (unsigned long long)seq);
			if (seq & 1)
				trace_ev_t1(th, seq, s);
			else
				trace_ev_t2(th, seq, s);
		}
	}
	__atomic_store_n(&calls[th], seq, __ATOMIC_RELEASE);
	return NULL;
}

struct conc_state {
	uint32_t id1, id2;
	uint64_t last[2];
	uint64_t events[2];
	uint64_t pages;
};

static void conc_check_event(struct conc_state *cs, const struct ringtrace_event *ev)
{
	struct ringtrace_value v[8];
	struct ringtrace_event_info info;
	CHECKF(ev->id == cs->id1 || ev->id == cs->id2, "unexpected event id %u", ev->id);
	CHECK_OK(ringtrace_event_by_id(ev->id, &info));
	int rc = ringtrace_record_decode(info.fields, info.nfields, ev->data, ev->len, v);
	CHECKF(rc == 5, "decode: %d: %s", rc, ringtrace_last_error());
	uint64_t th, seq, chk;
	const struct ringtrace_value *s;
	CHECK_EQ_U64(v[0].v.u, 0); /* not truncated */
	if (ev->id == cs->id1) {
		th = v[1].v.u;
		s = &v[2];
		seq = v[3].v.u;
		chk = v[4].v.u;
	} else {
		seq = v[1].v.u;
		th = v[2].v.u;
		chk = v[3].v.u;
		s = &v[4];
	}
	CHECKF(th < 2, "thread %" PRIu64, th);
	CHECKF(chk == EE_CHK(th, seq), "thread %" PRIu64 " seq %" PRIu64 ": check %" PRIx64, th,
	       seq, chk);
	CHECKF((seq & 1) == (ev->id == cs->id1), "seq %" PRIu64 " in event %u", seq, ev->id);
	char want[32];
	int wl = snprintf(want, sizeof(want), "t%u-%llu", (unsigned)th, (unsigned long long)seq);
	CHECKF(s->len == (uint32_t)wl && memcmp(s->ptr, want, (size_t)wl) == 0,
	       "string \"%.*s\", expected \"%s\"", (int)s->len, (const char *)s->ptr, want);
	CHECKF(seq > cs->last[th], "thread %" PRIu64 ": seq %" PRIu64 " after %" PRIu64, th, seq,
	       cs->last[th]);
	cs->last[th] = seq;
	cs->events[th]++;
}

/* Consume up to the pool's worth of pages (writers may refill it as fast). */
static uint64_t conc_drain(ringtrace_rb *rb, struct conc_state *cs)
{
	uint64_t n = 0;
	const struct ringtrace_page_header *p;
	for (uint32_t taken = 0;
	     taken < ringtrace_rb_page_count(rb) && (p = ringtrace_rb_get_page(rb)) != NULL;
	     taken++) {
		tu_check_page_header(p, ringtrace_rb_page_size(rb));
		struct ringtrace_page_cursor cur;
		struct ringtrace_event ev;
		int rc;
		ringtrace_page_cursor_init(&cur, p);
		while ((rc = ringtrace_page_next(&cur, &ev)) == 1) {
			tu_check_event_in_page(p, &ev);
			conc_check_event(cs, &ev);
			n++;
		}
		CHECKF(rc == 0, "page_next: %d: %s", rc, ringtrace_last_error());
		ringtrace_rb_put_page(rb, p);
		cs->pages++;
	}
	return n;
}

static void test_concurrency(void)
{
	__atomic_store_n(&stop_flag, 0, __ATOMIC_RELEASE);
	ringtrace_rb *rb = evu_buffer(16u << 10, 64);
	struct conc_state cs;
	memset(&cs, 0, sizeof(cs));
	cs.id1 = evu_id("ev_t1");
	cs.id2 = evu_id("ev_t2");
	pthread_t t[2];
	for (uintptr_t i = 0; i < 2; i++)
		CHECK(pthread_create(&t[i], NULL, hammer, (void *)i) == 0);

	const uint64_t dur_ns = CHECK_SCALE(1000, 700) * 1000000ull;
	uint64_t t0 = tu_mono_ns();
	unsigned toggles = 0;
	while (tu_mono_ns() - t0 < dur_ns) {
		switch (toggles++ % 6) {
		case 0:
			CHECK_RC(ringtrace_event_enable("ev_t*"), 2);
			break;
		case 1:
			CHECK_RC(ringtrace_event_disable("ev_t1"), 1);
			break;
		case 2:
			CHECK_RC(ringtrace_event_disable("ev_t[12]"), 2);
			break;
		case 3:
			CHECK_RC(ringtrace_event_enable("?v_t2"), 1);
			break;
		case 4:
			CHECK_RC(ringtrace_events_configure("ev_t1,-ev_t2"), 0);
			break;
		case 5:
			CHECK_RC(ringtrace_event_disable("ev_t?"), 2);
			break;
		}
		conc_drain(rb, &cs);
		tu_sleep_us(200);
	}
	/*
	 * Disabled, then a grace period (ringtrace_events_set_buffer). A call
	 * that read the event's state before the disable may still record (the
	 * state is read before the read-side section is entered), but at most
	 * one such call per thread: then nothing more is recorded.
	 */
	CHECK_RC(ringtrace_event_disable("ev_t*"), 2);
	CHECK_OK(ringtrace_events_set_buffer(rb));
	tu_sleep_us(20000);
	CHECK_OK(ringtrace_rb_flush(rb, 0));
	conc_drain(rb, &cs);
	struct ringtrace_rb_stats st0 = tu_stats(rb);
	tu_sleep_us(50000);
	struct ringtrace_rb_stats st1 = tu_stats(rb);
	uint64_t late = (st1.hit + st1.missed) - (st0.hit + st0.missed);
	CHECKF(late <= 2,
	       "events offered after disable + grace period: hit %" PRIu64 "->%" PRIu64
	       " missed %" PRIu64 "->%" PRIu64,
	       st0.hit, st1.hit, st0.missed, st1.missed);
	if (late)
		fprintf(stderr, "    %" PRIu64 " event(s) recorded after the disable returned\n",
			late);

	__atomic_store_n(&stop_flag, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
	CHECK_OK(ringtrace_rb_flush(rb, 0));
	conc_drain(rb, &cs);
	struct ringtrace_rb_stats st = tu_stats(rb);
	CHECK_STATS_BALANCED(&st);
	fprintf(stderr,
		"    concurrency: %u toggles, calls %" PRIu64 "/%" PRIu64 ", read %" PRIu64
		"/%" PRIu64 " events in %" PRIu64 " pages, missed %" PRIu64 "\n",
		toggles, calls[0], calls[1], cs.events[0], cs.events[1], cs.pages, st.missed);
	CHECK(toggles >= 12);
	CHECKF(cs.events[0] > 0 && cs.events[1] > 0,
	       "no events from a thread: %" PRIu64 " %" PRIu64, cs.events[0], cs.events[1]);
	CHECK(cs.events[0] < calls[0] && cs.events[1] < calls[1]);
	CHECK_EQ_U64(st.read, cs.events[0] + cs.events[1]);
	evu_buffer_done(rb);
}

/* ---- 5. the environment variable ------------------------------------------ */

/* Child modes (re-executed with RINGTRACE_EVENTS set). */
static int child_env_bad(void)
{
	/* "ev_a,ev_[": rejected as a whole, reported at start */
	CHECK(!desc_on(&ringtrace_event_ev_a));
	CHECK(!evu_enabled("ev_a"));
	fprintf(stderr, "CHILD-MARK\n");
	fflush(stderr);
	ringtrace_rb *rb = evu_buffer(16u << 10, 4);
	evu_buffer_done(rb);
	return 0;
}

static int child_env_missing(void)
{
	/* "ev_a,nosuch_event": ev_a on before any call of ours */
	CHECK(desc_on(&ringtrace_event_ev_a));
	CHECK_EQ_U64(__atomic_load_n(&ringtrace_event_ev_a.state, __ATOMIC_RELAXED),
		     RINGTRACE_EV_RECORD);
	CHECK(!desc_on(&ringtrace_event_ev_ab));
	CHECK(evu_enabled("ev_a"));
	fprintf(stderr, "CHILD-MARK\n");
	fflush(stderr);
	ringtrace_rb *rb = evu_buffer(16u << 10, 4);
	fprintf(stderr, "CHILD-MARK2\n");
	fflush(stderr);
	trace_ev_a(77);
	trace_ev_ab(78);
	struct evu_list l = {0};
	evu_collect(rb, &l);
	CHECK_EQ_U64(l.n, 1);
	CHECK_EQ_U64(l.ev[0].id, evu_id("ev_a"));
	evu_list_free(&l);
	/* a second buffer: the missing name is not reported again */
	CHECK_OK(ringtrace_events_set_buffer(rb));
	evu_buffer_done(rb);
	return 0;
}

/* Run ourselves with RINGTRACE_EVENTS=spec and argv[1]=mode; stderr into out. */
static int run_child(const char *mode, const char *spec, char *out, size_t outsz)
{
	int pfd[2];
	CHECK(pipe(pfd) == 0);
	posix_spawn_file_actions_t fa;
	CHECK(posix_spawn_file_actions_init(&fa) == 0);
	CHECK(posix_spawn_file_actions_adddup2(&fa, pfd[1], 2) == 0);
	CHECK(posix_spawn_file_actions_addclose(&fa, pfd[0]) == 0);
	size_t ne = 0;
	while (environ[ne])
		ne++;
	char **envp = calloc(ne + 2, sizeof(char *));
	CHECK(envp != NULL);
	size_t k = 0;
	for (size_t i = 0; i < ne; i++)
		if (strncmp(environ[i], "RINGTRACE_EVENTS=", 17) != 0)
			envp[k++] = environ[i];
	char var[256];
	snprintf(var, sizeof(var), "RINGTRACE_EVENTS=%s", spec);
	envp[k++] = var;
	envp[k] = NULL;
	char self[4096];
	ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	CHECK(sl > 0);
	self[sl] = 0;
	char *argv[] = {self, (char *)mode, NULL};
	pid_t pid;
	int rc = posix_spawn(&pid, self, &fa, NULL, argv, envp);
	CHECKF(rc == 0, "posix_spawn: %s", strerror(rc));
	close(pfd[1]);
	posix_spawn_file_actions_destroy(&fa);
	free(envp);
	size_t got = 0;
	for (;;) {
		ssize_t r = read(pfd[0], out + got, outsz - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
		if (got == outsz - 1)
			break;
	}
	out[got] = 0;
	close(pfd[0]);
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	return status;
}

static size_t count_sub(const char *s, const char *sub)
{
	size_t n = 0;
	for (const char *p = strstr(s, sub); p; p = strstr(p + 1, sub))
		n++;
	return n;
}

/* A bad pattern in RINGTRACE_EVENTS is reported at start; nothing enabled. */
static void test_env_bad(void)
{
	static char out[65536];
	int st = run_child("env-bad", "ev_a,ev_[", out, sizeof(out));
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child env-bad: status 0x%x, stderr:\n%s", st,
	       out);
	const char *mark = strstr(out, "CHILD-MARK");
	CHECKF(mark != NULL, "stderr: %s", out);
	const char *msg = strstr(out, "ev_[");
	CHECKF(msg != NULL && msg < mark && evu_has(out, "RINGTRACE_EVENTS"),
	       "child env-bad: stderr should name the bad pattern at start:\n%s", out);
}

/* Names in RINGTRACE_EVENTS are enabled before any API call; one nothing
 * defines is reported once, when a buffer is attached. */
static void test_env_missing(void)
{
	static char out[65536];
	const char *mark, *msg;
	int st = run_child("env-missing", "ev_a,nosuch_event", out, sizeof(out));
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child env-missing: status 0x%x, stderr:\n%s",
	       st, out);
	mark = strstr(out, "CHILD-MARK\n");
	const char *mark2 = strstr(out, "CHILD-MARK2");
	CHECKF(mark && mark2, "stderr: %s", out);
	msg = strstr(out, "nosuch_event");
	CHECKF(msg != NULL && msg > mark && msg < mark2,
	       "child env-missing: nosuch_event should be reported when the buffer is set:\n%s",
	       out);
	CHECKF(count_sub(out, "nosuch_event") == 1, "reported more than once:\n%s", out);
	CHECKF(!evu_has(out, "ev_a\""), "ev_a reported:\n%s", out);
}

/* The environment cases first: no thread exists yet (alone: in a process
 * of their own when another case ran before). */
/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
static const struct check_case cases[] = {
	CHECK_CASE_ALONE(event_enable_env_bad_pattern_reported_and_nothing_enabled, test_env_bad),
	CHECK_CASE_ALONE(event_enable_env_names_enabled_at_start_missing_reported_once, test_env_missing),
	CHECK_CASE(event_enable_names_and_globs_select_what_is_recorded, test_names),
	CHECK_CASE(event_enable_unknown_names_and_bad_patterns_refused, test_errors),
	CHECK_CASE(event_enable_configure_last_rule_wins_bad_list_applies_nothing, test_configure),
	CHECK_CASE(event_enable_toggled_under_concurrent_calls_events_intact, test_concurrency),
};
/* clang-format on */

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "env-bad") == 0)
		return child_env_bad();
	if (argc > 1 && strcmp(argv[1], "env-missing") == 0)
		return child_env_missing();
	return CHECK_MAIN(cases, argc, argv);
}
