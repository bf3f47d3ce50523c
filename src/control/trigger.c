/*
 * Triggers (ringtrace/filter.h): "EVENT [if EXPR]: ACTION[:N]". Parsed
 * here, attached to every matching event as an instance whose condition
 * is compiled against that event's schema (events loaded later get theirs
 * when they register), and run from tracepoints: async-signal-safe, no
 * lock, atomic operations only (control_internal.h, "Triggers").
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/control_internal.h"

struct rt_trigger **rt_triggers;
uint32_t rt_ntriggers;
static int rt_next_trigger_id = 1;
/* What a snapshot action calls (the recorder's); NULL: none records. */
static int (*rt_snapshot_hook)(void);

void rt_ctl_set_snapshot_hook(int (*fn)(void))
{
	__atomic_store_n(&rt_snapshot_hook, fn, __ATOMIC_RELEASE);
}

/* ---- triggers: parsing -------------------------------------------------------------- */

static const struct {
	const char *name;
	enum ringtrace_trigger_action action;
	int has_target;
} rt_actions[] = {
	{"snapshot", RINGTRACE_TRIGGER_SNAPSHOT, 0},
	{"traceoff", RINGTRACE_TRIGGER_TRACEOFF, 0},
	{"traceon", RINGTRACE_TRIGGER_TRACEON, 0},
	{"enable_event", RINGTRACE_TRIGGER_ENABLE_EVENT, 1},
	{"disable_event", RINGTRACE_TRIGGER_DISABLE_EVENT, 1},
};
#define RT_NACTIONS (sizeof(rt_actions) / sizeof(rt_actions[0]))

/* If s (after blanks) starts with an action keyword that ends there (end,
 * ':' or a blank), its index; else -1. */
static int rt_action_at(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	for (unsigned i = 0; i < RT_NACTIONS; i++) {
		size_t l = strlen(rt_actions[i].name);
		if (strncmp(s, rt_actions[i].name, l) == 0 &&
		    (s[l] == 0 || s[l] == ':' || s[l] == ' ' || s[l] == '\t'))
			return (int)i;
	}
	return -1;
}

static int rt_is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == ':';
}

/* Column-carrying error for trigger specs. */
static int rt_terr(unsigned *col, size_t at, const char *spec, const char *what)
{
	if (col)
		*col = (unsigned)at + 1;
	return rt_error(RINGTRACE_EINVAL, "trigger \"%.80s\": %s (column %zu)", spec, what, at + 1);
}

/* A spec being parsed: where parsing is, and the parts read so far (owned
 * here until they move into the trigger). */
struct rt_tspec {
	const char *spec;
	size_t n, i;
	unsigned *col;
	char *event, *expr, *target;
	size_t expr0; /* the condition's column, 0 if none */
	int action;   /* index in rt_actions */
	int64_t count;
};

static void rt_tspec_blanks(struct rt_tspec *ps)
{
	while (ps->i < ps->n && (ps->spec[ps->i] == ' ' || ps->spec[ps->i] == '\t'))
		ps->i++;
}

/* EVENT: up to a blank, or a ':' that starts the action. */
static int rt_tspec_event(struct rt_tspec *ps)
{
	const char *spec = ps->spec;
	rt_tspec_blanks(ps);
	size_t ev0 = ps->i, i = ps->i;
	while (i < ps->n && spec[i] != ' ' && spec[i] != '\t') {
		/* Names may contain ':'; the one before the action is followed
		 * by a blank, the end or an action keyword. */
		if (spec[i] == ':' && (rt_action_at(spec + i + 1) >= 0 || spec[i + 1] == ' ' ||
				       spec[i + 1] == '\t' || spec[i + 1] == 0))
			break;
		i++;
	}
	ps->i = i;
	if (i == ev0)
		return rt_terr(ps->col, i, spec, "expected an event name or pattern");
	ps->event = strndup(spec + ev0, i - ev0);
	if (!ps->event)
		return rt_error(RINGTRACE_ENOMEM, "out of memory");
	if (rt_check_list(ps->event) < 0) {
		char msg[300];
		snprintf(msg, sizeof(msg), "%s", ringtrace_last_error());
		return rt_terr(ps->col, ev0, spec, msg);
	}
	rt_tspec_blanks(ps);
	return 0;
}

/* [if EXPR]: the condition runs to the first ':' outside quotes (the
 * filter syntax has no ':' of its own). */
static int rt_tspec_cond(struct rt_tspec *ps)
{
	const char *spec = ps->spec;
	size_t n = ps->n, i = ps->i;
	if (!(n - i >= 3 && strncmp(spec + i, "if", 2) == 0 &&
	      (spec[i + 2] == ' ' || spec[i + 2] == '\t')))
		return 0;
	size_t expr0 = i + 3, j = expr0;
	int inq = 0;
	for (; j < n; j++) {
		if (inq) {
			if (spec[j] == '\\' && j + 1 < n)
				j++;
			else if (spec[j] == '"')
				inq = 0;
		} else if (spec[j] == '"') {
			inq = 1;
		} else if (spec[j] == ':') {
			break;
		}
	}
	if (j == n)
		return rt_terr(ps->col, n, spec, "expected ': ACTION' after the condition");
	while (expr0 < j && (spec[expr0] == ' ' || spec[expr0] == '\t'))
		expr0++;
	size_t e1 = j;
	while (e1 > expr0 && (spec[e1 - 1] == ' ' || spec[e1 - 1] == '\t'))
		e1--;
	if (e1 == expr0)
		return rt_terr(ps->col, expr0, spec, "empty condition after 'if'");
	ps->expr0 = expr0;
	ps->expr = strndup(spec + expr0, e1 - expr0);
	if (!ps->expr)
		return rt_error(RINGTRACE_ENOMEM, "out of memory");
	ps->i = j;
	return 0;
}

/* The NAME of enable_event:NAME and disable_event:NAME; a trailing ":N"
 * is the count, not part of the name. */
static int rt_tspec_target(struct rt_tspec *ps)
{
	const char *spec = ps->spec;
	size_t i = ps->i;
	if (i >= ps->n || spec[i] != ':')
		return rt_terr(ps->col, i, spec,
			       "expected ':NAME' (the event to enable or disable)");
	i++;
	size_t t0 = i;
	while (i < ps->n && rt_is_name_char(spec[i]))
		i++;
	size_t t1 = i;
	for (size_t k = t0; k < i; k++) {
		if (spec[k] != ':')
			continue;
		size_t d = k + 1;
		while (d < i && spec[d] >= '0' && spec[d] <= '9')
			d++;
		if (d == i && d > k + 1) {
			t1 = k;
			break;
		}
	}
	ps->i = t1;
	if (t1 == t0)
		return rt_terr(ps->col, t0, spec,
			       "expected the name of the event to enable or disable");
	ps->target = strndup(spec + t0, t1 - t0);
	if (!ps->target)
		return rt_error(RINGTRACE_ENOMEM, "out of memory");
	return 0;
}

/* ": ACTION[:NAME]" */
static int rt_tspec_action(struct rt_tspec *ps)
{
	if (ps->i >= ps->n || ps->spec[ps->i] != ':')
		return rt_terr(
			ps->col, ps->i, ps->spec,
			"expected ':' then an action (snapshot, traceoff, traceon, enable_event:NAME, disable_event:NAME)");
	ps->i++;
	rt_tspec_blanks(ps);
	ps->action = rt_action_at(ps->spec + ps->i);
	if (ps->action < 0)
		return rt_terr(
			ps->col, ps->i, ps->spec,
			"unknown action (snapshot, traceoff, traceon, enable_event:NAME, disable_event:NAME)");
	ps->i += strlen(rt_actions[ps->action].name);
	return rt_actions[ps->action].has_target ? rt_tspec_target(ps) : 0;
}

/* [:N] and the end of the spec. */
static int rt_tspec_count(struct rt_tspec *ps)
{
	const char *spec = ps->spec;
	if (ps->i < ps->n && spec[ps->i] == ':') {
		size_t i = ps->i + 1, d0 = i;
		uint64_t v = 0;
		while (i < ps->n && spec[i] >= '0' && spec[i] <= '9' && v < (1ull << 40))
			v = v * 10 + (uint64_t)(spec[i++] - '0');
		if (i == d0 || v == 0 || v >= (1ull << 40))
			return rt_terr(ps->col, d0, spec, "expected a count N >= 1 after ':'");
		ps->count = (int64_t)v;
		ps->i = i;
	}
	rt_tspec_blanks(ps);
	if (ps->i < ps->n)
		return rt_terr(ps->col, ps->i, spec, "unexpected text after the action");
	return 0;
}

/* Parse a spec into a new trigger (not yet attached). */
static int rt_trigger_parse(const char *spec, unsigned *col, struct rt_trigger **out)
{
	struct rt_tspec ps = {.spec = spec, .n = strlen(spec), .col = col, .count = -1};
	*out = NULL;
	int r = rt_tspec_event(&ps);
	if (!r)
		r = rt_tspec_cond(&ps);
	if (!r)
		r = rt_tspec_action(&ps);
	if (!r)
		r = rt_tspec_count(&ps);
	struct rt_trigger *t = NULL;
	char *sp = NULL;
	if (!r && (!(t = calloc(1, sizeof(*t))) || !(sp = strdup(spec)))) {
		free(t);
		r = rt_error(RINGTRACE_ENOMEM, "out of memory");
	}
	if (r) {
		free(ps.event);
		free(ps.expr);
		free(ps.target);
		return r;
	}
	t->action = rt_actions[ps.action].action;
	t->spec = sp;
	t->event = ps.event;
	t->expr = ps.expr;
	t->target_name = ps.target;
	t->remaining = ps.count;
	t->expr_off = ps.expr0;
	*out = t;
	return 0;
}

/* ---- triggers: attaching ------------------------------------------------------------- */

static struct rt_entry *rt_find_target(const char *name)
{
	struct rt_entry *any = NULL;
	for (uint32_t i = 0; i < rt_nentries; i++) {
		struct rt_entry *e = rt_entries[i];
		if (strcmp(e->name, name) == 0) {
			if (e->desc)
				return e;
			any = e;
		}
	}
	return any;
}

/* A new instance of t for e (condition compiled for e's schema). */
static int rt_make_tinst(struct rt_trigger *t, struct rt_entry *e, unsigned *col,
			 struct rt_tinst **out)
{
	*out = NULL;
	if (!rt_ec(e))
		return rt_error(RINGTRACE_ENOMEM, "trigger \"%s\": event \"%s\": out of memory",
				t->spec, e->name);
	if (!rt_filterable(e))
		return rt_error(
			RINGTRACE_EINVAL,
			"trigger \"%s\": event \"%s\" cannot have triggers (only events defined with RINGTRACE_EVENT can)",
			t->spec, e->name);
	struct rt_tinst *ti = calloc(1, sizeof(*ti));
	if (!ti)
		return rt_error(RINGTRACE_ENOMEM, "out of memory");
	ti->t = t;
	if (t->expr) {
		unsigned c = 0;
		int err = rt_compile_for(e, t->expr, &ti->filter, &c);
		if (err < 0) {
			free(ti);
			if (col)
				*col = (unsigned)t->expr_off + c;
			char msg[512];
			snprintf(msg, sizeof(msg), "%s", ringtrace_last_error());
			return rt_error(-err, "trigger \"%s\": %s (column %zu of the trigger)",
					t->spec, msg, t->expr_off + c);
		}
		rt_filter_fast_form(ti->filter, &ti->fast);
	}
	*out = ti;
	return 0;
}

/* Add instances to entries (parallel arrays), publish. All or nothing. */
static int rt_attach(struct rt_entry **es, struct rt_tinst **tis, uint32_t k, struct rt_bag *bag)
{
	int err = 0;
	struct rt_tinst ***arrs = calloc(k ? k : 1, sizeof(*arrs));
	struct ringtrace_event_ctl_ **cs = calloc(k ? k : 1, sizeof(*cs));
	if (!arrs || !cs)
		err = rt_error(RINGTRACE_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < k && !err; i++) {
		struct rt_entry *e = es[i];
		struct rt_ectl *x = rt_ec(e);
		arrs[i] = realloc(NULL, (x->ntinsts + 1) * sizeof(struct rt_tinst *));
		if (!arrs[i]) {
			err = rt_error(RINGTRACE_ENOMEM, "out of memory");
			break;
		}
		if (x->ntinsts)
			memcpy(arrs[i], x->tinsts, x->ntinsts * sizeof(struct rt_tinst *));
		arrs[i][x->ntinsts] = tis[i];
		struct rt_tinst **keep = x->tinsts;
		x->tinsts = arrs[i];
		x->ntinsts++;
		cs[i] = rt_build_ctl(e, &err);
		x->ntinsts--;
		x->tinsts = keep;
	}
	if (err) {
		for (uint32_t i = 0; i < k; i++) {
			free(arrs ? arrs[i] : NULL);
			free(cs ? cs[i] : NULL);
		}
	} else {
		for (uint32_t i = 0; i < k; i++) {
			struct rt_entry *e = es[i];
			struct rt_ectl *x = rt_ec(e);
			free(x->tinsts); /* the array only; readers use the ctl's copy */
			x->tinsts = arrs[i];
			x->ntinsts++;
			rt_publish(e, cs[i], bag);
		}
	}
	free(arrs);
	free(cs);
	return err;
}

static int rt_trigger_add_locked(const char *spec, unsigned *col, int from_env)
{
	if (col)
		*col = 0;
	if (!spec)
		return rt_error(RINGTRACE_EINVAL, "trigger_add: NULL spec");
	struct rt_trigger *t;
	int err = rt_trigger_parse(spec, col, &t);
	if (err < 0)
		return err;
	t->from_env = from_env;
	uint32_t n = 0;
	for (uint32_t i = 0; i < rt_nentries; i++)
		if (rt_entries[i]->desc && rt_list_match(t->event, rt_entries[i]->name))
			n++;
	struct rt_entry **es = calloc(n ? n : 1, sizeof(*es));
	struct rt_tinst **tis = calloc(n ? n : 1, sizeof(*tis));
	struct rt_trigger **tl = realloc(rt_triggers, (rt_ntriggers + 1) * sizeof(*tl));
	if (tl)
		rt_triggers = tl;
	if (!es || !tis || !tl)
		err = rt_error(RINGTRACE_ENOMEM, "out of memory");
	uint32_t k = 0;
	for (uint32_t i = 0; i < rt_nentries && !err; i++) {
		struct rt_entry *e = rt_entries[i];
		if (!e->desc || !rt_list_match(t->event, e->name))
			continue;
		es[k] = e;
		err = rt_make_tinst(t, e, col, &tis[k]);
		k++;
	}
	struct rt_bag bag = {0};
	if (!err)
		err = rt_attach(es, tis, k, &bag);
	if (err) {
		for (uint32_t i = 0; i < k; i++)
			rt_tinst_free(tis[i]);
		rt_trigger_free(t);
	} else {
		t->id = rt_next_trigger_id++;
		if (t->target_name)
			__atomic_store_n(&t->target, rt_find_target(t->target_name),
					 __ATOMIC_RELEASE);
		rt_triggers[rt_ntriggers++] = t;
	}
	rt_finish(&bag);
	free(es);
	free(tis);
	return err < 0 ? err : t->id;
}

int ringtrace_trigger_add(const char *spec, unsigned *err_column)
{
	pthread_mutex_lock(&rt_reg_lock);
	rt_read_env_locked();
	int rc = rt_trigger_add_locked(spec, err_column, 0);
	pthread_mutex_unlock(&rt_reg_lock);
	return rc;
}

int ringtrace_trigger_remove(int id)
{
	pthread_mutex_lock(&rt_reg_lock);
	uint32_t at = rt_ntriggers;
	for (uint32_t i = 0; i < rt_ntriggers; i++)
		if (rt_triggers[i]->id == id)
			at = i;
	if (at == rt_ntriggers) {
		pthread_mutex_unlock(&rt_reg_lock);
		return rt_error(RINGTRACE_ENOENT, "trigger_remove: no trigger has id %d", id);
	}
	struct rt_trigger *t = rt_triggers[at];
	struct rt_bag bag = {0};
	for (uint32_t i = 0; i < rt_nentries; i++) {
		struct rt_entry *e = rt_entries[i];
		struct rt_ectl *x = rt_ec(e);
		uint32_t w = 0;
		int changed = 0;
		for (uint32_t j = 0; x && j < x->ntinsts; j++) {
			if (x->tinsts[j]->t == t) {
				rt_bag_put(&bag, &bag.tinst, &bag.ntinst, x->tinsts[j]);
				changed = 1;
			} else {
				x->tinsts[w++] = x->tinsts[j];
			}
		}
		if (!changed)
			continue;
		x->ntinsts = w;
		int err = 0;
		struct ringtrace_event_ctl_ *c = rt_build_ctl(e, &err);
		if (err) {
			/* No memory for the new block: stop the event's control
			 * rather than keep running a freed trigger. */
			c = NULL;
		}
		rt_publish(e, c, &bag);
	}
	memmove(&rt_triggers[at], &rt_triggers[at + 1],
		(rt_ntriggers - at - 1) * sizeof(*rt_triggers));
	rt_ntriggers--;
	rt_bag_put(&bag, &bag.trigger, &bag.ntrigger, t);
	rt_finish(&bag);
	pthread_mutex_unlock(&rt_reg_lock);
	return 0;
}

static int rt_trigger_item(char *item, size_t off, void *arg)
{
	struct rt_cfg_pass *c = arg;
	(void)off;
	char *s = rt_trim(item);
	if (!c->apply) {
		struct rt_trigger *t;
		int err = rt_trigger_parse(s, NULL, &t);
		rt_trigger_free(t);
		return err;
	}
	int rc = rt_trigger_add_locked(s, NULL, c->from_env);
	return rc < 0 ? rc : 0;
}

int rt_triggers_configure_locked(const char *spec, int from_env)
{
	return rt_configure_list(spec, from_env, rt_trigger_item);
}

int ringtrace_triggers_configure(const char *spec)
{
	if (!spec)
		return rt_error(RINGTRACE_EINVAL, "triggers_configure: NULL spec");
	pthread_mutex_lock(&rt_reg_lock);
	rt_read_env_locked();
	int err = rt_triggers_configure_locked(spec, 0);
	pthread_mutex_unlock(&rt_reg_lock);
	return err;
}

uint32_t ringtrace_trigger_count(void)
{
	pthread_mutex_lock(&rt_reg_lock);
	uint32_t n = rt_ntriggers;
	pthread_mutex_unlock(&rt_reg_lock);
	return n;
}

int ringtrace_trigger_get(uint32_t index, struct ringtrace_trigger_info *out)
{
	if (!out)
		return rt_error(RINGTRACE_EINVAL, "trigger_get: NULL argument");
	pthread_mutex_lock(&rt_reg_lock);
	if (index >= rt_ntriggers) {
		uint32_t n = rt_ntriggers;
		pthread_mutex_unlock(&rt_reg_lock);
		return rt_error(RINGTRACE_ENOENT, "no trigger at index %u (%u triggers)", index, n);
	}
	const struct rt_trigger *t = rt_triggers[index];
	out->id = t->id;
	out->action = t->action;
	out->spec = t->spec;
	out->fired = __atomic_load_n(&t->fired, __ATOMIC_RELAXED);
	out->skipped = __atomic_load_n(&t->skipped, __ATOMIC_RELAXED);
	out->remaining = __atomic_load_n(&t->remaining, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&rt_reg_lock);
	return 0;
}

/* ---- triggers: running (in tracepoints) --------------------------------------------- */

void ringtrace_tracing_off(void)
{
	rt_cookie_update(1, 0, 1);
}

void ringtrace_tracing_on(void)
{
	rt_cookie_update(1, 0, 0);
}

int ringtrace_tracing_is_on(void)
{
	return !(__atomic_load_n(&ringtrace_events_cookie_, __ATOMIC_ACQUIRE) & RINGTRACE_EVC_OFF);
}

/* Take one run from the count: 1 if the action may run. */
static int rt_take_run(struct rt_trigger *t)
{
	int64_t r = __atomic_load_n(&t->remaining, __ATOMIC_RELAXED);
	for (;;) {
		if (r < 0)
			return 1;
		if (r == 0)
			return 0;
		if (__atomic_compare_exchange_n(&t->remaining, &r, r - 1, 1, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			return 1;
	}
}

void ringtrace_triggers_run_(const struct ringtrace_event_ctl_ *ctl, const void *payload,
			     size_t len)
{
	struct rt_tinst *const *arr = (struct rt_tinst *const *)ctl->triggers;
	for (uint32_t i = 0; i < ctl->ntriggers; i++) {
		const struct rt_tinst *ti = arr[i];
		if (ti->filter && !ringtrace_filter_eval_(ti->filter, &ti->fast, payload, len))
			continue;
		struct rt_trigger *t = ti->t;
		if (!rt_take_run(t)) {
			__atomic_fetch_add(&t->skipped, 1, __ATOMIC_RELAXED);
			continue;
		}
		int done = 1;
		switch (t->action) {
		case RINGTRACE_TRIGGER_SNAPSHOT: {
			int (*snap)(void) = __atomic_load_n(&rt_snapshot_hook, __ATOMIC_ACQUIRE);
			done = snap ? snap() : 0;
			if (!done && t->remaining >= 0)
				__atomic_fetch_add(&t->remaining, 1, __ATOMIC_RELAXED);
			break;
		}
		case RINGTRACE_TRIGGER_TRACEOFF:
			ringtrace_tracing_off();
			break;
		case RINGTRACE_TRIGGER_TRACEON:
			ringtrace_tracing_on();
			break;
		case RINGTRACE_TRIGGER_ENABLE_EVENT:
		case RINGTRACE_TRIGGER_DISABLE_EVENT: {
			/* Inside the caller's read-side section: an event being
			 * unloaded clears desc, then waits for us. */
			struct rt_entry *e = __atomic_load_n(&t->target, __ATOMIC_ACQUIRE);
			struct ringtrace_event_desc *d = e ? __atomic_load_n(&e->desc,
									     __ATOMIC_ACQUIRE)
							   : NULL;
			if (d)
				rt_set_state_bit(d, RINGTRACE_EV_RECORD,
						 t->action == RINGTRACE_TRIGGER_ENABLE_EVENT);
			else
				done = 0;
			break;
		}
		}
		__atomic_fetch_add(done ? &t->fired : &t->skipped, 1, __ATOMIC_RELAXED);
	}
}

void rt_triggers_event_loaded(struct rt_entry *e)
{
	struct rt_ectl *x = rt_ec(e);
	for (uint32_t i = 0; i < rt_ntriggers; i++) {
		struct rt_trigger *t = rt_triggers[i];
		if (t->target_name && strcmp(t->target_name, e->name) == 0)
			__atomic_store_n(&t->target, e, __ATOMIC_RELEASE);
	}
	if (!rt_filterable(e))
		return;
	for (uint32_t i = 0; i < rt_ntriggers; i++) {
		struct rt_trigger *t = rt_triggers[i];
		if (!rt_list_match(t->event, e->name))
			continue;
		struct rt_tinst *ti;
		struct rt_tinst **arr = realloc(x->tinsts, (x->ntinsts + 1) * sizeof(*arr));
		if (!arr) {
			fprintf(stderr, "ringtrace: trigger \"%s\": out of memory\n", t->spec);
			continue;
		}
		x->tinsts = arr;
		if (rt_make_tinst(t, e, NULL, &ti) < 0) {
			fprintf(stderr, "ringtrace: %s%s; this trigger does not fire on it\n",
				t->from_env ? "RINGTRACE_TRIGGERS: " : "", ringtrace_last_error());
			continue;
		}
		x->tinsts[x->ntinsts++] = ti;
	}
}
