/*
 * Enabling events: a list of rules (pattern, on/off), applied in order to
 * every event now loaded and to every event registered later; the last
 * rule that matches an event decides. The environment variable
 * RINGTRACE_EVENTS holds initial rules ("sched_*,net_rx,-sched_stat_*").
 */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event/event_internal.h"

struct rt_rule {
	char *pattern;
	int on;
	int from_env;
	int matched;
};

static struct rt_rule *rt_rules;
static uint32_t rt_nrules;
int rt_env_read;

/* ---- pattern checks ----------------------------------------------------- */

int rt_is_glob(const char *p)
{
	return strpbrk(p, "*?[") != NULL;
}

/* Event names: [A-Za-z_][A-Za-z0-9_:.]*. Globs may add * ? [ ] ! -. */
int rt_check_pattern(const char *p)
{
	if (!p || !*p)
		return rt_error(RINGTRACE_EINVAL, "empty event name or pattern");
	size_t n = strlen(p);
	if (n > 255)
		return rt_error(RINGTRACE_EINVAL,
				"event pattern \"%.40s...\" is longer than 255 characters", p);
	int in_class = 0;
	size_t class_start = 0;
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		if (in_class) {
			if (c == ']' && i > class_start + 1 &&
			    !(i == class_start + 2 && p[class_start + 1] == '!'))
				in_class = 0;
			else if (!(c == '!' || c == '-' || c == '_' || c == ':' || c == '.' ||
				   (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
				   (c >= '0' && c <= '9') || c == ']'))
				return rt_error(
					RINGTRACE_EINVAL,
					"event pattern \"%s\": character '%c' at column %zu is not allowed in [...]",
					p, c, i + 1);
			continue;
		}
		if (c == '[') {
			in_class = 1;
			class_start = i;
		} else if (c == ']') {
			return rt_error(
				RINGTRACE_EINVAL,
				"event pattern \"%s\": ']' at column %zu has no matching '['", p,
				i + 1);
		} else if (!(c == '*' || c == '?' || c == '_' || c == ':' || c == '.' ||
			     (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			     (c >= '0' && c <= '9'))) {
			return rt_error(
				RINGTRACE_EINVAL,
				"event pattern \"%s\": character '%c' at column %zu is not allowed",
				p, c, i + 1);
		}
	}
	if (in_class)
		return rt_error(RINGTRACE_EINVAL,
				"event pattern \"%s\": '[' at column %zu is not closed", p,
				class_start + 1);
	return 0;
}

static int rt_match(const char *pattern, const char *name)
{
	return fnmatch(pattern, name, 0) == 0;
}

void rt_apply_rules(struct rt_entry *e)
{
	for (uint32_t i = 0; i < rt_nrules; i++) {
		if (rt_match(rt_rules[i].pattern, e->name)) {
			e->record = rt_rules[i].on;
			rt_rules[i].matched = 1;
		}
	}
}

/*
 * Append a rule. An earlier rule with the same pattern can never decide
 * anything again (the last matching rule wins, and this one matches the
 * same events), so it is dropped: toggling an event forever does not
 * grow the list.
 */
static int rt_add_rule(const char *pattern, int on, int from_env)
{
	for (uint32_t i = 0; i < rt_nrules; i++) {
		if (strcmp(rt_rules[i].pattern, pattern) == 0) {
			from_env |= rt_rules[i].from_env && !rt_rules[i].matched;
			free(rt_rules[i].pattern);
			memmove(&rt_rules[i], &rt_rules[i + 1],
				(rt_nrules - i - 1) * sizeof(*rt_rules));
			rt_nrules--;
			break;
		}
	}
	struct rt_rule *r = realloc(rt_rules, sizeof(*r) * (rt_nrules + 1));
	if (!r)
		return rt_error(RINGTRACE_ENOMEM, "out of memory enabling events \"%s\"", pattern);
	rt_rules = r;
	char *p = strdup(pattern);
	if (!p)
		return rt_error(RINGTRACE_ENOMEM, "out of memory enabling events \"%s\"", pattern);
	rt_rules[rt_nrules++] = (struct rt_rule){p, on, from_env, 0};
	return 0;
}

/* ---- the environment variable ------------------------------------------ */

/* Parse "a,b*,-c": check all, then (if apply) add the rules. Lock held. */
static int rt_configure_locked(const char *spec, int from_env, int apply)
{
	char *copy = strdup(spec ? spec : "");
	if (!copy)
		return rt_error(RINGTRACE_ENOMEM,
				"out of memory reading the events to record \"%s\"",
				spec ? spec : "");
	int err = 0;
	for (int pass = 0; pass < (apply ? 2 : 1) && err == 0; pass++) {
		strcpy(copy, spec);
		char *save = NULL;
		for (char *tok = strtok_r(copy, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save)) {
			while (*tok == ' ')
				tok++;
			size_t l = strlen(tok);
			while (l && tok[l - 1] == ' ')
				tok[--l] = 0;
			int on = 1;
			if (*tok == '-') {
				on = 0;
				tok++;
			}
			if (pass == 0) {
				if ((err = rt_check_pattern(tok)) < 0)
					break;
			} else {
				if ((err = rt_add_rule(tok, on, from_env)) < 0)
					break;
				for (uint32_t i = 0; i < rt_nentries; i++) {
					struct rt_entry *e = rt_entries[i];
					if (e->desc && rt_match(tok, e->name)) {
						e->record = on;
						rt_rules[rt_nrules - 1].matched = 1;
						rt_apply(e);
					}
				}
			}
		}
	}
	free(copy);
	return err;
}

void rt_read_env_locked(void)
{
	if (rt_env_read)
		return;
	rt_env_read = 1;
	/* (found empty at the first registration, which deferred the events:
	 * the rules are what they were then, none) */
	if (!rt_env_found_quiet()) {
		const char *env = rt_getenv("RINGTRACE_EVENTS");
		if (env && *env && rt_configure_locked(env, 1, 1) < 0)
			fprintf(stderr,
				"ringtrace: RINGTRACE_EVENTS=\"%s\": %s (no event enabled from "
				"it)\n",
				env, ringtrace_last_error());
		if (rt_ev_hooks.read_env)
			rt_ev_hooks.read_env();
	}
	/* The events registered before, as if registered now: the rules
	 * apply to each as it would have at its registration. */
	rt_register_pending_locked();
}

int ringtrace_events_configure(const char *spec)
{
	if (!spec)
		return rt_error(RINGTRACE_EINVAL, "events_configure: NULL spec");
	pthread_mutex_lock(&rt_reg_lock);
	rt_read_env_locked();
	int err = rt_configure_locked(spec, 0, 1);
	pthread_mutex_unlock(&rt_reg_lock);
	return err;
}

static int rt_enable(const char *pattern, int on)
{
	int err = rt_check_pattern(pattern);
	if (err < 0)
		return err;
	pthread_mutex_lock(&rt_reg_lock);
	rt_read_env_locked();
	if ((err = rt_add_rule(pattern, on, 0)) < 0) {
		pthread_mutex_unlock(&rt_reg_lock);
		return err;
	}
	int n = 0;
	for (uint32_t i = 0; i < rt_nentries; i++) {
		struct rt_entry *e = rt_entries[i];
		if (e->desc && rt_match(pattern, e->name)) {
			e->record = on;
			rt_apply(e);
			n++;
		}
	}
	if (n)
		rt_rules[rt_nrules - 1].matched = 1;
	pthread_mutex_unlock(&rt_reg_lock);
	if (n == 0)
		return rt_error(RINGTRACE_ENOENT,
				rt_is_glob(pattern) ? "no loaded event matches \"%s\""
						    : "no event named \"%s\" is loaded",
				pattern);
	return n;
}

int ringtrace_event_enable(const char *pattern)
{
	return rt_enable(pattern, 1);
}

int ringtrace_event_disable(const char *pattern)
{
	return rt_enable(pattern, 0);
}

/* Say once, on stderr, which RINGTRACE_EVENTS patterns matched no event. Lock held. */
void rt_report_unmatched_locked(void)
{
	for (uint32_t i = 0; i < rt_nrules; i++)
		if (rt_rules[i].from_env && !rt_rules[i].matched) {
			rt_rules[i].matched = 1; /* say it once */
			fprintf(stderr, "ringtrace: RINGTRACE_EVENTS: no event matches \"%s\"\n",
				rt_rules[i].pattern);
		}
}

void rt_events_report_unmatched(void)
{
	pthread_mutex_lock(&rt_reg_lock);
	rt_report_unmatched_locked();
	pthread_mutex_unlock(&rt_reg_lock);
}

/*
 * check: report RINGTRACE_EVENTS patterns that match nothing. A session
 * started from the environment runs before the program's own events have
 * registered, so it asks for the report when it stops instead.
 */

/* ---- saving and restoring the rules (a session attached from outside) ---- */

struct rt_rules_saved {
	struct rt_rule *rules;
	uint32_t n;
};

static void rt_rules_free(struct rt_rule *r, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		free(r[i].pattern);
	free(r);
}

struct rt_rules_saved *rt_events_rules_save(void)
{
	struct rt_rules_saved *s = calloc(1, sizeof(*s));
	if (!s) {
		rt_error(RINGTRACE_ENOMEM, "out of memory saving the events' settings");
		return NULL;
	}
	pthread_mutex_lock(&rt_reg_lock);
	rt_read_env_locked(); /* (the rules as they will stand, env included) */
	s->rules = calloc(rt_nrules ? rt_nrules : 1, sizeof(*s->rules));
	int ok = s->rules != NULL;
	for (uint32_t i = 0; ok && i < rt_nrules; i++) {
		s->rules[i] = rt_rules[i];
		if (!(s->rules[i].pattern = strdup(rt_rules[i].pattern)))
			ok = 0;
		else
			s->n = i + 1;
	}
	pthread_mutex_unlock(&rt_reg_lock);
	if (!ok) {
		rt_rules_free(s->rules, s->n);
		free(s);
		rt_error(RINGTRACE_ENOMEM, "out of memory saving the events' settings");
		return NULL;
	}
	return s;
}

void rt_events_rules_discard(struct rt_rules_saved *s)
{
	if (s)
		rt_rules_free(s->rules, s->n);
	free(s);
}

void rt_events_rules_restore(struct rt_rules_saved *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&rt_reg_lock);
	rt_rules_free(rt_rules, rt_nrules);
	rt_rules = s->rules;
	rt_nrules = s->n;
	/* Every loaded event as the restored rules say (an enable_event
	 * trigger's change made meanwhile goes with the session's rules). */
	for (uint32_t i = 0; i < rt_nentries; i++) {
		struct rt_entry *e = rt_entries[i];
		if (!e->desc)
			continue;
		e->record = 0;
		rt_apply_rules(e);
		rt_apply(e);
	}
	pthread_mutex_unlock(&rt_reg_lock);
	free(s);
}
