/*
 * Filters on events (ringtrace/filter.h): an event's filter decides what
 * is recorded. A filter set on a pattern is also a rule for events loaded
 * later (the last rule that matches an event decides), as enabling is.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/control_internal.h"

struct rt_frule {
	char *pattern; /* a name, glob or comma list */
	char *expr;    /* NULL: remove */
	int from_env;
};

static struct rt_frule *rt_frules;
static uint32_t rt_nfrules;

int rt_compile_for(const struct rt_entry *e, const char *expr, ringtrace_filter **out,
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
		if (!rt_ec(e))
			err = rt_error(RINGTRACE_ENOMEM, "event \"%s\": out of memory", e->name);
		else if (!rt_filterable(e))
			err = rt_error(
				RINGTRACE_EINVAL,
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
		struct rt_ectl *x = rt_ec(e);
		ringtrace_filter *keep = x->filter;
		uint32_t keep_slot = x->slot;
		x->filter = fs[i];
		if (fs[i])
			rt_take_slot(x);
		cs[i] = rt_build_ctl(e, &err);
		x->filter = keep;
		if (err)
			rt_untake_slot(x, keep_slot);
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
			struct rt_ectl *x = rt_ec(e);
			rt_bag_put(bag, &bag->filter, &bag->nfilter, x->filter);
			free(x->filter_expr);
			x->filter = fs[i];
			x->filter_expr = xs[i];
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
		return rt_error(
			RINGTRACE_ENOENT,
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
	rt_read_env_locked();
	for (uint32_t i = 0; i < rt_nentries; i++) {
		struct rt_entry *e = rt_entries[i];
		if (e->desc && strcmp(e->name, name) == 0) {
			const char *expr = rt_ec(e) ? rt_ec(e)->filter_expr : NULL;
			size_t n = expr ? strlen(expr) : 0;
			if (buf && size) {
				size_t c = n < size - 1 ? n : size - 1;
				if (c)
					memcpy(buf, expr, c);
				buf[c] = 0;
			}
			pthread_mutex_unlock(&rt_reg_lock);
			return (int)n;
		}
	}
	pthread_mutex_unlock(&rt_reg_lock);
	return rt_error(RINGTRACE_ENOENT, "no event named \"%s\" is loaded", name);
}

static int rt_filter_item(char *item, size_t off, void *arg)
{
	struct rt_cfg_pass *pass = arg;
	long c = rt_last_colon(item);
	if (c < 0)
		return rt_error(RINGTRACE_EINVAL,
				"filter \"%.60s\" (column %zu): expected PATTERN:EXPRESSION",
				rt_trim(item), off + 1);
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
				err = rt_error(RINGTRACE_EINVAL, "event \"%s\" cannot be filtered",
					       e->name);
			else
				err = rt_compile_for(e, expr, &f, NULL);
			ringtrace_filter_free(f);
		}
		return err;
	}
	err = rt_event_set_filter_locked(pat, expr, NULL, pass->from_env);
	return err == -RINGTRACE_ENOENT ? 0 : err < 0 ? err : 0;
}

int rt_filters_configure_locked(const char *spec, int from_env)
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

void rt_filters_event_loaded(struct rt_entry *e)
{
	struct rt_ectl *x = rt_ec(e);
	if (!rt_filterable(e))
		return;
	const struct rt_frule *rule = NULL;
	for (uint32_t i = 0; i < rt_nfrules; i++)
		if (rt_list_match(rt_frules[i].pattern, e->name))
			rule = &rt_frules[i];
	if (!rule || !rule->expr)
		return;
	if (rt_compile_for(e, rule->expr, &x->filter, NULL) < 0 ||
	    !(x->filter_expr = strdup(rule->expr))) {
		fprintf(stderr, "ringtrace: %s%s; the event is not recorded\n",
			rule->from_env ? "RINGTRACE_FILTERS: " : "filter on ",
			ringtrace_last_error());
		ringtrace_filter_free(x->filter);
		x->filter = NULL;
		e->record = 0;
		rt_set_state_bit(e->desc, RINGTRACE_EV_RECORD, 0);
	} else {
		rt_take_slot(x);
	}
}

/* ---- saving and restoring the filter rules (control_api.h) ---- */

struct rt_frules_saved {
	struct rt_frule *rules;
	uint32_t n;
};

static void rt_frules_free(struct rt_frule *r, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		free(r[i].pattern);
		free(r[i].expr);
	}
	free(r);
}

struct rt_frules_saved *rt_frules_save_locked(void)
{
	struct rt_frules_saved *s = calloc(1, sizeof(*s));
	if (!s || !(s->rules = calloc(rt_nfrules ? rt_nfrules : 1, sizeof(*s->rules)))) {
		free(s);
		rt_error(RINGTRACE_ENOMEM, "out of memory");
		return NULL;
	}
	for (uint32_t i = 0; i < rt_nfrules; i++) {
		struct rt_frule *d = &s->rules[i];
		d->from_env = rt_frules[i].from_env;
		d->pattern = strdup(rt_frules[i].pattern);
		d->expr = rt_frules[i].expr ? strdup(rt_frules[i].expr) : NULL;
		s->n = i + 1;
		if (!d->pattern || (rt_frules[i].expr && !d->expr)) {
			rt_frules_free(s->rules, s->n);
			free(s);
			rt_error(RINGTRACE_ENOMEM, "out of memory");
			return NULL;
		}
	}
	return s;
}

void rt_frules_discard(struct rt_frules_saved *s)
{
	if (s)
		rt_frules_free(s->rules, s->n);
	free(s);
}

void rt_frules_restore_locked(struct rt_frules_saved *s)
{
	if (!s)
		return;
	rt_frules_free(rt_frules, rt_nfrules);
	rt_frules = s->rules;
	rt_nfrules = s->n;
	free(s);
	/* Each loaded event gets the filter the restored rules give it, where
	 * that is not the one it has. */
	struct rt_bag bag = {0};
	for (uint32_t i = 0; i < rt_nentries; i++) {
		struct rt_entry *e = rt_entries[i];
		if (!e->desc || !rt_ec(e) || !rt_filterable(e))
			continue;
		const char *want = NULL;
		for (uint32_t k = 0; k < rt_nfrules; k++)
			if (rt_list_match(rt_frules[k].pattern, e->name))
				want = rt_frules[k].expr;
		const char *have = rt_ec(e)->filter_expr;
		if ((!want && !have) || (want && have && strcmp(want, have) == 0))
			continue;
		if (rt_set_filter_locked(e->name, want, NULL, &bag) < 0)
			fprintf(stderr, "ringtrace: restoring the filter of \"%s\": %s\n", e->name,
				ringtrace_last_error());
	}
	rt_finish(&bag);
}
