/*
 * Filters and triggers on events.
 *
 * What a tracepoint sees
 * ----------------------
 * An event with a filter or triggers has RINGTRACE_EV_CTL in its state
 * and desc->ctl pointing to an immutable `struct ringtrace_event_ctl_`:
 * the compiled filter (plus its inline form when it is one integer
 * predicate), the per-thread counter slot its rejections go to, and the
 * event's trigger instances. The call site goes to the event's general
 * path, which builds the record on its stack (no clock read, nothing
 * reserved), runs the filter, copies the record into the buffer if it
 * passed, then runs the triggers (tracepoint.h, RINGTRACE__EVENT_DEF).
 *
 * Every change builds new ctl blocks, publishes them (pointer first, then
 * the state bit; the bit first when removing), waits for a grace period
 * (ringtrace_synchronize) and only then frees what the old blocks pointed
 * to. A call therefore uses one consistent block, old or new. All of it
 * runs under the registry's mutex, the grace period included: tracepoints
 * never take that mutex, so waiting for them under it cannot deadlock,
 * and holding it makes "no published block uses this counter slot any
 * more" easy to know when a slot is folded and given back.
 *
 * Counting rejections
 * -------------------
 * A rejected call must cost a few nanoseconds, so it cannot do an atomic
 * add on a shared counter (a bus-locked instruction costs more than the
 * whole filter). Each thread's reader node has RINGTRACE_COUNT_SLOTS
 * private counters; an event with a filter owns one slot while it has the
 * filter. Reading sums the slot over every node. When the filter goes,
 * after the grace period, the slot's sum is folded into the event's
 * rejected_base, the slot cleared and given back. Beyond 256 filtered
 * events at once, events count with an atomic add instead (correct,
 * slower).
 *
 * Triggers
 * --------
 * A trigger (struct rt_trigger) is a rule "EVENT [if EXPR]: ACTION[:N]";
 * each event its pattern matches gets an instance (struct rt_tinst) with
 * the condition compiled against that event's schema. Events loaded later
 * get instances when they register, as filters set on patterns do (both
 * are kept as rules). Actions run in the tracepoint: atomic operations on
 * the tracing-on bit of the buffer word, on another event's state word,
 * or a snapshot request handed to the recorder's thread.
 */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event/registry_internal.h"
#include "ringtrace/filter.h"

struct rt_trigger {
	int id;
	enum ringtrace_trigger_action action;
	char *spec;                /* as given */
	char *event;               /* pattern */
	char *expr;                /* condition, NULL if none */
	size_t expr_off;           /* where it starts in spec (for error columns) */
	char *target_name;         /* enable_event / disable_event */
	struct rt_entry *target;   /* atomic: resolved by name, NULL until loaded */
	int64_t remaining;         /* atomic: -1 no limit */
	uint64_t fired, skipped;   /* atomic */
	int from_env;
};

struct rt_tinst {
	struct rt_trigger *t;
	ringtrace_filter *filter;  /* the condition for this event's schema */
	struct ringtrace_fast_pred_ fast;
};

struct rt_frule {
	char *pattern;             /* a name, glob or comma list */
	char *expr;                /* NULL: remove */
	int from_env;
};

static struct rt_frule *rt_frules;
static uint32_t rt_nfrules;
static struct rt_trigger **rt_triggers;
static uint32_t rt_ntriggers;
static int rt_next_trigger_id = 1;
static uint8_t rt_slot_used[RINGTRACE_COUNT_SLOTS];

/* ---- small helpers -------------------------------------------------------- */

/* Does `name` match a pattern list "a,b*,c"? */
static int rt_list_match(const char *list, const char *name)
{
	const char *p = list;
	while (*p) {
		const char *c = strchr(p, ',');
		size_t n = c ? (size_t)(c - p) : strlen(p);
		char one[256];
		while (n && *p == ' ')
			p++, n--;
		while (n && p[n - 1] == ' ')
			n--;
		if (n && n < sizeof(one)) {
			memcpy(one, p, n);
			one[n] = 0;
			if (fnmatch(one, name, 0) == 0)
				return 1;
		}
		if (!c)
			break;
		p = c + 1;
	}
	return 0;
}

static int rt_check_list(const char *list)
{
	char *copy = strdup(list);
	if (!copy)
		return rt_error(RINGTRACE_ENOMEM, "out of memory");
	int err = 0, n = 0;
	char *save = NULL;
	for (char *tok = strtok_r(copy, ",", &save); tok && !err; tok = strtok_r(NULL, ",", &save)) {
		while (*tok == ' ')
			tok++;
		size_t l = strlen(tok);
		while (l && tok[l - 1] == ' ')
			tok[--l] = 0;
		err = rt_check_pattern(tok);
		n++;
	}
	free(copy);
	if (!err && n == 0)
		err = rt_error(RINGTRACE_EINVAL, "empty event name or pattern");
	return err;
}

/* Filters and triggers need the record layout of RINGTRACE_EVENT. */
static int rt_filterable(const struct rt_entry *e)
{
	return e->id != RINGTRACE_EVENT_ID_PRINTF;
}

static void rt_tinst_free(struct rt_tinst *ti)
{
	if (ti) {
		ringtrace_filter_free(ti->filter);
		free(ti);
	}
}

static void rt_trigger_free(struct rt_trigger *t)
{
	if (t) {
		free(t->spec);
		free(t->event);
		free(t->expr);
		free(t->target_name);
		free(t);
	}
}

/* ---- publishing ------------------------------------------------------------ */

/*
 * Things to free once no tracepoint can see them: filled while changing
 * state, emptied by rt_finish() after the grace period.
 */
struct rt_bag {
	void **ctl, **filter, **tinst, **trigger;
	size_t nctl, nfilter, ntinst, ntrigger;
	int err;
};

static void rt_bag_put(struct rt_bag *b, void ***arr, size_t *n, void *p)
{
	if (!p)
		return;
	void **a = realloc(*arr, (*n + 1) * sizeof(void *));
	if (!a) {
		/* Leak rather than free something a reader may still use. */
		b->err = 1;
		return;
	}
	*arr = a;
	a[(*n)++] = p;
}

/* A new control block for e from its filter and trigger instances (NULL
 * if it needs none, or with *err set when out of memory). */
static struct ringtrace_event_ctl_ *rt_build_ctl(struct rt_entry *e, int *err)
{
	if (!e->desc || (!e->filter && !e->ntinsts))
		return NULL;
	struct ringtrace_event_ctl_ *c =
		calloc(1, sizeof(*c) + (size_t)e->ntinsts * sizeof(struct rt_tinst *));
	if (!c) {
		*err = rt_error(RINGTRACE_ENOMEM, "out of memory");
		return NULL;
	}
	c->filter = e->filter;
	if (e->filter)
		rt_filter_fast_form(e->filter, &c->fast);
	c->slot = e->slot;
	c->overflow = &e->overflow;
	c->ntriggers = e->ntinsts;
	c->inline_ok = c->filter && !c->ntriggers;
	struct rt_tinst **arr = (struct rt_tinst **)(void *)(c + 1);
	for (uint32_t i = 0; i < e->ntinsts; i++)
		arr[i] = e->tinsts[i];
	c->triggers = arr;
	return c;
}

/* Make the descriptor point to `c` (which replaces e->ctl; the old one
 * goes to the bag). */
static void rt_publish(struct rt_entry *e, struct ringtrace_event_ctl_ *c, struct rt_bag *bag)
{
	struct ringtrace_event_ctl_ *old = e->ctl;
	e->ctl = c;
	if (e->desc) {
		if (c) {
			__atomic_store_n(&e->desc->ctl, c, __ATOMIC_RELEASE);
			rt_set_state_bit(e->desc, RINGTRACE_EV_CTL, 1);
		} else {
			rt_set_state_bit(e->desc, RINGTRACE_EV_CTL, 0);
			__atomic_store_n(&e->desc->ctl, NULL, __ATOMIC_RELEASE);
		}
	}
	rt_bag_put(bag, &bag->ctl, &bag->nctl, old);
}

/* Give an entry a counter slot for its filter (or none: the overflow). */
static void rt_take_slot(struct rt_entry *e)
{
	if (e->slot < RINGTRACE_COUNT_SLOTS)
		return;
	for (uint32_t i = 0; i < RINGTRACE_COUNT_SLOTS; i++) {
		if (!rt_slot_used[i]) {
			rt_slot_used[i] = 1;
			e->slot = i;
			return;
		}
	}
}

/*
 * An event without a filter gives its counter slot back, its count folded
 * into rejected_base. Only once no published block names the slot (after
 * a grace period): a call still counting into it would be lost. Lock held.
 */
static void rt_fold_slot(struct rt_entry *e)
{
	if (e->slot >= RINGTRACE_COUNT_SLOTS || e->filter)
		return;
	e->rejected_base += rt_rcu_slot_sum(e->slot);
	rt_rcu_slot_clear(e->slot);
	rt_slot_used[e->slot] = 0;
	e->slot = RINGTRACE_COUNT_SLOTS;
}

/*
 * After publishing: wait until no call can use what was replaced, fold
 * the counter slots of events that lost their filter, free the bag.
 * Lock held (see the comment at the top).
 */
static void rt_finish(struct rt_bag *b)
{
	if (b->nctl || b->nfilter || b->ntinst || b->ntrigger)
		ringtrace_synchronize();
	for (uint32_t i = 0; i < rt_nentries; i++)
		rt_fold_slot(rt_entries[i]);
	for (size_t i = 0; i < b->nctl; i++)
		free(b->ctl[i]);
	for (size_t i = 0; i < b->nfilter; i++)
		ringtrace_filter_free(b->filter[i]);
	for (size_t i = 0; i < b->ntinst; i++)
		rt_tinst_free(b->tinst[i]);
	for (size_t i = 0; i < b->ntrigger; i++)
		rt_trigger_free(b->trigger[i]);
	free(b->ctl);
	free(b->filter);
	free(b->tinst);
	free(b->trigger);
	memset(b, 0, sizeof(*b));
}

/* ---- filters ----------------------------------------------------------------- */

/* Compile `expr` for an entry; errors name the event. */
static int rt_compile_for(const struct rt_entry *e, const char *expr, ringtrace_filter **out,
			  unsigned *col)
{
	unsigned c = 0;
	int err = ringtrace_filter_compile(e->fields, e->nfields, expr, out, &c);
	if (err < 0) {
		if (col)
			*col = c;
		char msg[512];
		const char *m = ringtrace_last_error();
		if (strncmp(m, "filter: ", 8) == 0)
			m += 8;
		snprintf(msg, sizeof(msg), "%s", m);
		return rt_error(-err, "event \"%s\": %s", e->name, msg);
	}
	return 0;
}

/*
 * Set (expr) or remove (NULL) the filter of every loaded event in `list`.
 * All or nothing. Lock held. Returns the number of events changed.
 */
static int rt_set_filter_locked(const char *list, const char *expr, unsigned *col,
				struct rt_bag *bag)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < rt_nentries; i++)
		if (rt_entries[i]->desc && rt_list_match(list, rt_entries[i]->name))
			n++;
	if (n == 0)
		return 0;
	struct rt_entry **es = calloc(n, sizeof(*es));
	ringtrace_filter **fs = calloc(n, sizeof(*fs));
	char **xs = calloc(n, sizeof(*xs));
	struct ringtrace_event_ctl_ **cs = calloc(n, sizeof(*cs));
	int err = 0;
	if (!es || !fs || !xs || !cs)
		err = rt_error(RINGTRACE_ENOMEM, "out of memory");
	uint32_t k = 0;
	for (uint32_t i = 0; i < rt_nentries && !err; i++) {
		struct rt_entry *e = rt_entries[i];
		if (!e->desc || !rt_list_match(list, e->name))
			continue;
		es[k] = e;
		if (!rt_filterable(e))
			err = rt_error(RINGTRACE_EINVAL,
				       "event \"%s\" cannot be filtered (only events defined with RINGTRACE_EVENT can)",
				       e->name);
		else if (expr && (err = rt_compile_for(e, expr, &fs[k], col)) == 0 &&
			 !(xs[k] = strdup(expr)))
			err = rt_error(RINGTRACE_ENOMEM, "out of memory");
		k++;
	}
	/* New control blocks, built against the new filters (swapped in
	 * temporarily to build, swapped back on failure). */
	for (uint32_t i = 0; i < k && !err; i++) {
		struct rt_entry *e = es[i];
		ringtrace_filter *keep = e->filter;
		uint32_t keep_slot = e->slot;
		e->filter = fs[i];
		if (fs[i])
			rt_take_slot(e);
		cs[i] = rt_build_ctl(e, &err);
		e->filter = keep;
		if (err && keep_slot != e->slot) {
			rt_slot_used[e->slot] = 0;
			e->slot = keep_slot;
		}
	}
	if (err) {
		for (uint32_t i = 0; i < k; i++) {
			ringtrace_filter_free(fs ? fs[i] : NULL);
			free(xs ? xs[i] : NULL);
			free(cs ? cs[i] : NULL);
		}
	} else {
		for (uint32_t i = 0; i < k; i++) {
			struct rt_entry *e = es[i];
			rt_bag_put(bag, &bag->filter, &bag->nfilter, e->filter);
			free(e->filter_expr);
			e->filter = fs[i];
			e->filter_expr = xs[i];
			rt_publish(e, cs[i], bag);
		}
	}
	free(es);
	free(fs);
	free(xs);
	free(cs);
	return err ? err : (int)k;
}

static int rt_add_frule(const char *list, const char *expr, int from_env)
{
	/* A later rule for the same pattern replaces an earlier one. */
	for (uint32_t i = 0; i < rt_nfrules; i++) {
		if (strcmp(rt_frules[i].pattern, list) == 0) {
			free(rt_frules[i].pattern);
			free(rt_frules[i].expr);
			memmove(&rt_frules[i], &rt_frules[i + 1],
				(rt_nfrules - i - 1) * sizeof(*rt_frules));
			rt_nfrules--;
			break;
		}
	}
	struct rt_frule *r = realloc(rt_frules, (rt_nfrules + 1) * sizeof(*r));
	if (!r)
		return rt_error(RINGTRACE_ENOMEM, "out of memory");
	rt_frules = r;
	r = &rt_frules[rt_nfrules];
	r->pattern = strdup(list);
	r->expr = expr ? strdup(expr) : NULL;
	r->from_env = from_env;
	if (!r->pattern || (expr && !r->expr)) {
		free(r->pattern);
		free(r->expr);
		return rt_error(RINGTRACE_ENOMEM, "out of memory");
	}
	rt_nfrules++;
	return 0;
}

static int rt_event_set_filter_locked(const char *pattern, const char *expr, unsigned *col,
				      int from_env)
{
	if (col)
		*col = 0;
	if (!pattern)
		return rt_error(RINGTRACE_EINVAL, "event_set_filter: NULL pattern");
	int err = rt_check_list(pattern);
	if (err < 0)
		return err;
	if (expr) {
		while (*expr == ' ' || *expr == '\t')
			expr++;
		if (!*expr)
			expr = NULL;
	}
	struct rt_bag bag = {0};
	int n = rt_set_filter_locked(pattern, expr, col, &bag);
	if (n >= 0)
		err = rt_add_frule(pattern, expr, from_env);
	rt_finish(&bag);
	if (n < 0)
		return n;
	if (err < 0)
		return err;
	if (n == 0)
		return rt_error(RINGTRACE_ENOENT,
				"no loaded event matches \"%s\" (the filter applies to events loaded later)",
				pattern);
	return n;
}

int ringtrace_event_set_filter(const char *pattern, const char *expr, unsigned *err_column)
{
	pthread_mutex_lock(&rt_reg_lock);
	rt_read_env_locked();
	int rc = rt_event_set_filter_locked(pattern, expr, err_column, 0);
	pthread_mutex_unlock(&rt_reg_lock);
	return rc;
}

int ringtrace_event_get_filter(const char *name, char *buf, size_t size)
{
	if (!name)
		return rt_error(RINGTRACE_EINVAL, "event_get_filter: NULL name");
	pthread_mutex_lock(&rt_reg_lock);
	for (uint32_t i = 0; i < rt_nentries; i++) {
		struct rt_entry *e = rt_entries[i];
		if (e->desc && strcmp(e->name, name) == 0) {
			size_t n = e->filter_expr ? strlen(e->filter_expr) : 0;
			if (buf && size) {
				size_t c = n < size - 1 ? n : size - 1;
				if (c)
					memcpy(buf, e->filter_expr, c);
				buf[c] = 0;
			}
			pthread_mutex_unlock(&rt_reg_lock);
			return (int)n;
		}
	}
	pthread_mutex_unlock(&rt_reg_lock);
	return rt_error(RINGTRACE_ENOENT, "no event named \"%s\" is loaded", name);
}

uint64_t rt_ctl_rejected(const struct rt_entry *e)
{
	uint64_t n = e->rejected_base + __atomic_load_n(&e->overflow, __ATOMIC_RELAXED);
	if (e->slot < RINGTRACE_COUNT_SLOTS)
		n += rt_rcu_slot_sum(e->slot);
	return n;
}

/* ---- spec lists: "a;b" with quotes respected --------------------------------------- */

/*
 * Split `spec` at ';' outside double-quoted strings (\" and \\ escape
 * inside them). Calls fn(item, offset of item in spec, arg) for each
 * non-blank item; stops at the first error.
 */
static int rt_split_items(const char *spec, int (*fn)(char *, size_t, void *), void *arg)
{
	char *copy = strdup(spec);
	if (!copy)
		return rt_error(RINGTRACE_ENOMEM, "out of memory");
	int err = 0, inq = 0;
	size_t start = 0, n = strlen(copy);
	for (size_t i = 0; i <= n && !err; i++) {
		char c = copy[i];
		if (inq) {
			if (c == '\\' && i + 1 < n)
				i++;
			else if (c == '"')
				inq = 0;
			continue;
		}
		if (c == '"') {
			inq = 1;
		} else if (c == ';' || c == 0) {
			copy[i] = 0;
			const char *s = copy + start;
			while (*s == ' ' || *s == '\t' || *s == '\n')
				s++;
			if (*s)
				err = fn(copy + start, start, arg);
			start = i + 1;
		}
	}
	free(copy);
	return err;
}

/* Position of the last ':' outside quotes, or -1. */
static long rt_last_colon(const char *s)
{
	long at = -1;
	int inq = 0;
	for (size_t i = 0; s[i]; i++) {
		if (inq) {
			if (s[i] == '\\' && s[i + 1])
				i++;
			else if (s[i] == '"')
				inq = 0;
		} else if (s[i] == '"') {
			inq = 1;
		} else if (s[i] == ':') {
			at = (long)i;
		}
	}
	return at;
}

static char *rt_trim(char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\n')
		s++;
	size_t l = strlen(s);
	while (l && (s[l - 1] == ' ' || s[l - 1] == '\t' || s[l - 1] == '\n'))
		s[--l] = 0;
	return s;
}

struct rt_cfg_pass {
	int apply;     /* 0: check syntax only */
	int from_env;
};

static int rt_filter_item(char *item, size_t off, void *arg)
{
	struct rt_cfg_pass *pass = arg;
	long c = rt_last_colon(item);
	if (c < 0)
		return rt_error(RINGTRACE_EINVAL,
				"filter \"%.60s\" (column %zu): expected PATTERN:EXPRESSION", rt_trim(item),
				off + 1);
	item[c] = 0;
	char *pat = rt_trim(item), *expr = rt_trim(item + c + 1);
	int err = rt_check_list(pat);
	if (err < 0)
		return err;
	if (!pass->apply) {
		/* Compile for every loaded event now, so that a list applies
		 * all or nothing. */
		for (uint32_t i = 0; i < rt_nentries && *expr && err == 0; i++) {
			struct rt_entry *e = rt_entries[i];
			ringtrace_filter *f = NULL;
			if (!e->desc || !rt_list_match(pat, e->name))
				continue;
			if (!rt_filterable(e))
				err = rt_error(RINGTRACE_EINVAL, "event \"%s\" cannot be filtered", e->name);
			else
				err = rt_compile_for(e, expr, &f, NULL);
			ringtrace_filter_free(f);
		}
		return err;
	}
	err = rt_event_set_filter_locked(pat, expr, NULL, pass->from_env);
	return err == -RINGTRACE_ENOENT ? 0 : err < 0 ? err : 0;
}

/* A ';' list applied all or nothing: every item checked, then applied. */
static int rt_configure_list(const char *spec, int from_env, int (*item)(char *, size_t, void *))
{
	struct rt_cfg_pass pass = {0, from_env};
	int err = rt_split_items(spec, item, &pass);
	if (err < 0)
		return err;
	pass.apply = 1;
	return rt_split_items(spec, item, &pass);
}

static int rt_filters_configure_locked(const char *spec, int from_env)
{
	return rt_configure_list(spec, from_env, rt_filter_item);
}

int ringtrace_filters_configure(const char *spec)
{
	if (!spec)
		return rt_error(RINGTRACE_EINVAL, "filters_configure: NULL spec");
	pthread_mutex_lock(&rt_reg_lock);
	rt_read_env_locked();
	int err = rt_filters_configure_locked(spec, 0);
	pthread_mutex_unlock(&rt_reg_lock);
	return err;
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

/* Parse a spec into a new trigger (not yet attached). */
static int rt_trigger_parse(const char *spec, unsigned *col, struct rt_trigger **out)
{
	*out = NULL;
	size_t n = strlen(spec), i = 0;
	while (i < n && (spec[i] == ' ' || spec[i] == '\t'))
		i++;
	/* EVENT: up to a blank, or a ':' that starts the action. */
	size_t ev0 = i;
	while (i < n && spec[i] != ' ' && spec[i] != '\t') {
		/* Names may contain ':'; the one before the action is followed
		 * by a blank, the end or an action keyword. */
		if (spec[i] == ':' && (rt_action_at(spec + i + 1) >= 0 || spec[i + 1] == ' ' ||
				       spec[i + 1] == '\t' || spec[i + 1] == 0))
			break;
		i++;
	}
	if (i == ev0)
		return rt_terr(col, i, spec, "expected an event name or pattern");
	char *event = strndup(spec + ev0, i - ev0);
	if (!event)
		return rt_error(RINGTRACE_ENOMEM, "out of memory");
	int err = rt_check_list(event);
	if (err < 0) {
		char msg[300];
		snprintf(msg, sizeof(msg), "%s", ringtrace_last_error());
		free(event);
		return rt_terr(col, ev0, spec, msg);
	}
	while (i < n && (spec[i] == ' ' || spec[i] == '\t'))
		i++;
	char *expr = NULL;
	size_t expr0 = 0;
	if (n - i >= 3 && strncmp(spec + i, "if", 2) == 0 && (spec[i + 2] == ' ' || spec[i + 2] == '\t')) {
		/* The condition runs to the first ':' outside quotes (the filter
		 * syntax has no ':' of its own). */
		expr0 = i + 3;
		size_t j = expr0;
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
		if (j == n) {
			free(event);
			return rt_terr(col, n, spec, "expected ': ACTION' after the condition");
		}
		while (expr0 < j && (spec[expr0] == ' ' || spec[expr0] == '\t'))
			expr0++;
		size_t e1 = j;
		while (e1 > expr0 && (spec[e1 - 1] == ' ' || spec[e1 - 1] == '\t'))
			e1--;
		if (e1 == expr0) {
			free(event);
			return rt_terr(col, expr0, spec, "empty condition after 'if'");
		}
		expr = strndup(spec + expr0, e1 - expr0);
		i = j;
	}
	if (i >= n || spec[i] != ':') {
		free(event);
		free(expr);
		return rt_terr(col, i, spec, "expected ':' then an action (snapshot, traceoff, traceon, enable_event:NAME, disable_event:NAME)");
	}
	i++;
	while (i < n && (spec[i] == ' ' || spec[i] == '\t'))
		i++;
	int a = rt_action_at(spec + i);
	if (a < 0) {
		free(event);
		free(expr);
		return rt_terr(col, i, spec, "unknown action (snapshot, traceoff, traceon, enable_event:NAME, disable_event:NAME)");
	}
	i += strlen(rt_actions[a].name);
	char *target = NULL;
	if (rt_actions[a].has_target) {
		if (i >= n || spec[i] != ':') {
			free(event);
			free(expr);
			return rt_terr(col, i, spec, "expected ':NAME' (the event to enable or disable)");
		}
		i++;
		size_t t0 = i;
		while (i < n && rt_is_name_char(spec[i]))
			i++;
		/* A trailing ":N" is the count, not part of the name. */
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
		i = t1;
		if (t1 == t0) {
			free(event);
			free(expr);
			return rt_terr(col, t0, spec, "expected the name of the event to enable or disable");
		}
		target = strndup(spec + t0, t1 - t0);
	}
	int64_t count = -1;
	if (i < n && spec[i] == ':') {
		i++;
		size_t d0 = i;
		uint64_t v = 0;
		while (i < n && spec[i] >= '0' && spec[i] <= '9' && v < (1ull << 40))
			v = v * 10 + (uint64_t)(spec[i++] - '0');
		if (i == d0 || v == 0 || v >= (1ull << 40)) {
			free(event);
			free(expr);
			free(target);
			return rt_terr(col, d0, spec, "expected a count N >= 1 after ':'");
		}
		count = (int64_t)v;
	}
	while (i < n && (spec[i] == ' ' || spec[i] == '\t'))
		i++;
	if (i < n) {
		free(event);
		free(expr);
		free(target);
		return rt_terr(col, i, spec, "unexpected text after the action");
	}
	struct rt_trigger *t = calloc(1, sizeof(*t));
	char *sp = strdup(spec);
	if (!t || !sp || (rt_actions[a].has_target && !target)) {
		free(t);
		free(sp);
		free(event);
		free(expr);
		free(target);
		return rt_error(RINGTRACE_ENOMEM, "out of memory");
	}
	t->action = rt_actions[a].action;
	t->spec = sp;
	t->event = event;
	t->expr = expr;
	t->target_name = target;
	t->remaining = count;
	*out = t;
	t->expr_off = expr0;
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
	if (!rt_filterable(e))
		return rt_error(RINGTRACE_EINVAL,
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
			return rt_error(-err, "trigger \"%s\": %s (column %zu of the trigger)", t->spec,
					msg, t->expr_off + c);
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
		arrs[i] = realloc(NULL, (e->ntinsts + 1) * sizeof(struct rt_tinst *));
		if (!arrs[i]) {
			err = rt_error(RINGTRACE_ENOMEM, "out of memory");
			break;
		}
		if (e->ntinsts)
			memcpy(arrs[i], e->tinsts, e->ntinsts * sizeof(struct rt_tinst *));
		arrs[i][e->ntinsts] = tis[i];
		struct rt_tinst **keep = e->tinsts;
		e->tinsts = arrs[i];
		e->ntinsts++;
		cs[i] = rt_build_ctl(e, &err);
		e->ntinsts--;
		e->tinsts = keep;
	}
	if (err) {
		for (uint32_t i = 0; i < k; i++) {
			free(arrs ? arrs[i] : NULL);
			free(cs ? cs[i] : NULL);
		}
	} else {
		for (uint32_t i = 0; i < k; i++) {
			struct rt_entry *e = es[i];
			free(e->tinsts); /* the array only; readers use the ctl's copy */
			e->tinsts = arrs[i];
			e->ntinsts++;
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
			__atomic_store_n(&t->target, rt_find_target(t->target_name), __ATOMIC_RELEASE);
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
		uint32_t w = 0;
		int changed = 0;
		for (uint32_t j = 0; j < e->ntinsts; j++) {
			if (e->tinsts[j]->t == t) {
				rt_bag_put(&bag, &bag.tinst, &bag.ntinst, e->tinsts[j]);
				changed = 1;
			} else {
				e->tinsts[w++] = e->tinsts[j];
			}
		}
		if (!changed)
			continue;
		e->ntinsts = w;
		int err = 0;
		struct ringtrace_event_ctl_ *c = rt_build_ctl(e, &err);
		if (err) {
			/* No memory for the new block: stop the event's control
			 * rather than keep running a freed trigger. */
			c = NULL;
		}
		rt_publish(e, c, &bag);
	}
	memmove(&rt_triggers[at], &rt_triggers[at + 1], (rt_ntriggers - at - 1) * sizeof(*rt_triggers));
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

static int rt_triggers_configure_locked(const char *spec, int from_env)
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
		case RINGTRACE_TRIGGER_SNAPSHOT:
			done = rt_session_request_snapshot();
			if (!done && t->remaining >= 0)
				__atomic_fetch_add(&t->remaining, 1, __ATOMIC_RELAXED);
			break;
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
			struct ringtrace_event_desc *d = e ? __atomic_load_n(&e->desc, __ATOMIC_ACQUIRE) : NULL;
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

/* ---- the registry's hooks -------------------------------------------------------------- */

void rt_ctl_read_env_locked(void)
{
	const char *f = getenv("RINGTRACE_FILTERS");
	if (f && *f && rt_filters_configure_locked(f, 1) < 0)
		fprintf(stderr, "ringtrace: RINGTRACE_FILTERS: %s\n", ringtrace_last_error());
	const char *t = getenv("RINGTRACE_TRIGGERS");
	if (t && *t && rt_triggers_configure_locked(t, 1) < 0)
		fprintf(stderr, "ringtrace: RINGTRACE_TRIGGERS: %s\n", ringtrace_last_error());
}

/*
 * An event was (re)loaded: apply the filter rules (the last that matches
 * decides) and the triggers whose pattern matches, and resolve triggers
 * that target it by name. Errors go to stderr: there is no caller to
 * return them to (a constructor), and an event whose filter does not
 * compile is not recorded rather than recorded unfiltered.
 */
void rt_ctl_event_loaded(struct rt_entry *e)
{
	e->ctl = NULL;
	for (uint32_t i = 0; i < rt_ntriggers; i++) {
		struct rt_trigger *t = rt_triggers[i];
		if (t->target_name && strcmp(t->target_name, e->name) == 0)
			__atomic_store_n(&t->target, e, __ATOMIC_RELEASE);
	}
	if (!rt_filterable(e))
		return;
	const struct rt_frule *rule = NULL;
	for (uint32_t i = 0; i < rt_nfrules; i++)
		if (rt_list_match(rt_frules[i].pattern, e->name))
			rule = &rt_frules[i];
	int err = 0;
	if (rule && rule->expr) {
		if (rt_compile_for(e, rule->expr, &e->filter, NULL) < 0 ||
		    !(e->filter_expr = strdup(rule->expr))) {
			fprintf(stderr, "ringtrace: %s%s; the event is not recorded\n",
				rule->from_env ? "RINGTRACE_FILTERS: " : "filter on ", ringtrace_last_error());
			ringtrace_filter_free(e->filter);
			e->filter = NULL;
			e->record = 0;
			rt_set_state_bit(e->desc, RINGTRACE_EV_RECORD, 0);
		} else {
			rt_take_slot(e);
		}
	}
	for (uint32_t i = 0; i < rt_ntriggers; i++) {
		struct rt_trigger *t = rt_triggers[i];
		if (!rt_list_match(t->event, e->name))
			continue;
		struct rt_tinst *ti;
		struct rt_tinst **arr = realloc(e->tinsts, (e->ntinsts + 1) * sizeof(*arr));
		if (!arr) {
			fprintf(stderr, "ringtrace: trigger \"%s\": out of memory\n", t->spec);
			continue;
		}
		e->tinsts = arr;
		if (rt_make_tinst(t, e, NULL, &ti) < 0) {
			fprintf(stderr, "ringtrace: %s%s; this trigger does not fire on it\n",
				t->from_env ? "RINGTRACE_TRIGGERS: " : "", ringtrace_last_error());
			continue;
		}
		e->tinsts[e->ntinsts++] = ti;
	}
	struct ringtrace_event_ctl_ *c = rt_build_ctl(e, &err);
	if (err)
		fprintf(stderr, "ringtrace: event \"%s\": out of memory; its filter and triggers are off\n",
			e->name);
	struct rt_bag bag = {0};
	rt_publish(e, c, &bag); /* nothing old: a loading event has no ctl */
	rt_finish(&bag);
}

/*
 * An event is being unloaded (lock held): detach its control block, its
 * filter and its trigger instances; the caller frees them with
 * rt_ctl_free() after the grace period. Its counter slot is folded then
 * too (rt_ctl_free takes the lock).
 */
struct rt_unload {
	struct ringtrace_event_ctl_ *ctl;
	ringtrace_filter *filter;
	struct rt_tinst **tinsts;
	uint32_t ntinsts;
	struct rt_entry *e;
};

void *rt_ctl_event_unloading(struct rt_entry *e)
{
	if (!e->ctl && !e->filter && !e->ntinsts)
		return NULL;
	struct rt_unload *u = calloc(1, sizeof(*u));
	if (!u)
		return NULL; /* leak rather than free what a reader may use */
	rt_set_state_bit(e->desc, RINGTRACE_EV_CTL, 0);
	__atomic_store_n(&e->desc->ctl, NULL, __ATOMIC_RELEASE);
	u->ctl = e->ctl;
	u->filter = e->filter;
	u->tinsts = e->tinsts;
	u->ntinsts = e->ntinsts;
	u->e = e;
	e->ctl = NULL;
	e->filter = NULL;
	free(e->filter_expr);
	e->filter_expr = NULL;
	e->tinsts = NULL;
	e->ntinsts = 0;
	return u;
}

void rt_ctl_free(void *p)
{
	struct rt_unload *u = p;
	if (!u)
		return;
	free(u->ctl);
	ringtrace_filter_free(u->filter);
	for (uint32_t i = 0; i < u->ntinsts; i++)
		rt_tinst_free(u->tinsts[i]);
	free(u->tinsts);
	pthread_mutex_lock(&rt_reg_lock);
	struct rt_entry *e = u->e;
	rt_fold_slot(e);
	pthread_mutex_unlock(&rt_reg_lock);
	free(u);
}

/* ---- for the metadata ------------------------------------------------------------------ */

/* `filter` and `trigger` lines of the ringtrace-schema block. */
void rt_ctl_write_schema(FILE *f, uint32_t nevents)
{
	pthread_mutex_lock(&rt_reg_lock);
	/* Entries are only appended: the first nevents are those the `event`
	 * lines described (one registered since gets no line of either kind). */
	for (uint32_t i = 0; i < rt_nentries && i < nevents; i++) {
		const struct rt_entry *e = rt_entries[i];
		uint64_t rej = rt_ctl_rejected(e);
		if (!e->filter_expr && !rej)
			continue;
		fprintf(f, "filter %u %llu ", e->id, (unsigned long long)rej);
		if (e->filter_expr)
			rt_pct(f, e->filter_expr);
		else
			fputc('-', f); /* no filter now (an expression is never "-") */
		fputc('\n', f);
	}
	for (uint32_t i = 0; i < rt_ntriggers; i++) {
		const struct rt_trigger *t = rt_triggers[i];
		fprintf(f, "trigger %llu %llu ",
			(unsigned long long)__atomic_load_n(&t->fired, __ATOMIC_RELAXED),
			(unsigned long long)__atomic_load_n(&t->skipped, __ATOMIC_RELAXED));
		rt_pct(f, t->spec);
		fputc('\n', f);
	}
	pthread_mutex_unlock(&rt_reg_lock);
}
