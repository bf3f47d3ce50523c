/*
 * Control blocks: what a tracepoint sees of an event's filter and
 * triggers, built and published here for event_filter.c and trigger.c;
 * the per-thread counter slots of rejected calls; control's hooks into the
 * registry; and the description of filters and triggers that the
 * metadata carries. control_internal.h explains the scheme.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/control_internal.h"

static uint8_t rt_slot_used[RINGTRACE_COUNT_SLOTS];

/* ---- small helpers -------------------------------------------------------- */

int rt_filterable(const struct rt_entry *e)
{
	return e->id != RINGTRACE_EVENT_ID_PRINTF;
}

void rt_tinst_free(struct rt_tinst *ti)
{
	if (ti) {
		ringtrace_filter_free(ti->filter);
		free(ti);
	}
}

void rt_trigger_free(struct rt_trigger *t)
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

void rt_bag_put(struct rt_bag *b, void ***arr, size_t *n, void *p)
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

struct ringtrace_event_ctl_ *rt_build_ctl(struct rt_entry *e, int *err)
{
	struct rt_ectl *x = rt_ec(e);
	if (!e->desc || !x || (!x->filter && !x->ntinsts))
		return NULL;
	struct ringtrace_event_ctl_ *c = calloc(1, sizeof(*c) + (size_t)x->ntinsts *
									sizeof(struct rt_tinst *));
	if (!c) {
		*err = rt_error(RINGTRACE_ENOMEM, "out of memory");
		return NULL;
	}
	c->filter = x->filter;
	if (x->filter && !rt_filter_fast_form(x->filter, &c->fast)) {
		c->prog = rt_filter_inline_prog(x->filter);
		if (c->prog)
			c->fast.op = RINGTRACE_FP_PROG;
	}
	c->slot = x->slot;
	c->overflow = &x->overflow;
	c->ntriggers = x->ntinsts;
	c->entry = !c->filter || c->ntriggers ? 0 : c->fast.op ? c->fast.op : RINGTRACE_FP_CALL;
	struct rt_tinst **arr = (struct rt_tinst **)(void *)(c + 1);
	for (uint32_t i = 0; i < x->ntinsts; i++)
		arr[i] = x->tinsts[i];
	c->triggers = arr;
	return c;
}

void rt_publish(struct rt_entry *e, struct ringtrace_event_ctl_ *c, struct rt_bag *bag)
{
	struct rt_ectl *x = rt_ec(e);
	struct ringtrace_event_ctl_ *old = x->ctl;
	x->ctl = c;
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

void rt_take_slot(struct rt_ectl *x)
{
	if (x->slot < RINGTRACE_COUNT_SLOTS)
		return;
	for (uint32_t i = 0; i < RINGTRACE_COUNT_SLOTS; i++) {
		if (!rt_slot_used[i]) {
			rt_slot_used[i] = 1;
			x->slot = i;
			return;
		}
	}
}

void rt_untake_slot(struct rt_ectl *x, uint32_t keep_slot)
{
	if (keep_slot != x->slot) {
		rt_slot_used[x->slot] = 0;
		x->slot = keep_slot;
	}
}

/*
 * An event without a filter gives its counter slot back, its count folded
 * into rejected_base. Only once no published block names the slot (after
 * a grace period): a call still counting into it would be lost. Lock held.
 */
static void rt_fold_slot(struct rt_ectl *x)
{
	if (!x || x->slot >= RINGTRACE_COUNT_SLOTS || x->filter)
		return;
	x->rejected_base += rt_rcu_slot_sum(x->slot);
	rt_rcu_slot_clear(x->slot);
	rt_slot_used[x->slot] = 0;
	x->slot = RINGTRACE_COUNT_SLOTS;
}

/*
 * After publishing: wait until no call can use what was replaced, fold
 * the counter slots of events that lost their filter, free the bag.
 * Lock held (see control_internal.h: tracepoints never take the lock, so
 * waiting for them under it cannot deadlock).
 */
void rt_finish(struct rt_bag *b)
{
	if (b->nctl || b->nfilter || b->ntinst || b->ntrigger)
		ringtrace_synchronize();
	for (uint32_t i = 0; i < rt_nentries; i++)
		rt_fold_slot(rt_ec(rt_entries[i]));
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

/* Calls the event's filters kept out of the buffer, ever. Lock held. */
static uint64_t rt_rejected(const struct rt_ectl *x)
{
	if (!x)
		return 0;
	uint64_t n = x->rejected_base + __atomic_load_n(&x->overflow, __ATOMIC_RELAXED);
	if (x->slot < RINGTRACE_COUNT_SLOTS)
		n += rt_rcu_slot_sum(x->slot);
	return n;
}

/* ---- the registry's hooks -------------------------------------------------------- */

static void rt_hook_read_env(void)
{
	const char *f = rt_getenv("RINGTRACE_FILTERS");
	if (f && *f && rt_filters_configure_locked(f, 1) < 0)
		fprintf(stderr, "ringtrace: RINGTRACE_FILTERS: %s\n", ringtrace_last_error());
	const char *t = rt_getenv("RINGTRACE_TRIGGERS");
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
static void rt_hook_loaded(struct rt_entry *e)
{
	struct rt_ectl *x = rt_ec(e);
	if (!x) {
		x = calloc(1, sizeof(*x));
		if (!x) {
			fprintf(stderr,
				"ringtrace: event \"%s\": out of memory; it can have no filter "
				"or trigger\n",
				e->name);
			return;
		}
		x->slot = RINGTRACE_COUNT_SLOTS; /* no counter slot until it has a filter */
		e->ctl = x;
	}
	x->ctl = NULL;
	rt_filters_event_loaded(e);
	rt_triggers_event_loaded(e);
	int err = 0;
	struct ringtrace_event_ctl_ *c = rt_build_ctl(e, &err);
	if (err)
		fprintf(stderr,
			"ringtrace: event \"%s\": out of memory; its filter and triggers are off\n",
			e->name);
	struct rt_bag bag = {0};
	rt_publish(e, c, &bag); /* nothing old: a loading event has no block */
	rt_finish(&bag);
}

/*
 * An event is being unloaded (lock held): detach its control block, its
 * filter and its trigger instances; rt_hook_unloaded frees them after the
 * grace period, and folds its counter slot then (taking the lock).
 */
struct rt_unload {
	struct ringtrace_event_ctl_ *ctl;
	ringtrace_filter *filter;
	struct rt_tinst **tinsts;
	uint32_t ntinsts;
	struct rt_ectl *x;
};

static void *rt_hook_unloading(struct rt_entry *e)
{
	struct rt_ectl *x = rt_ec(e);
	if (!x || (!x->ctl && !x->filter && !x->ntinsts))
		return NULL;
	struct rt_unload *u = calloc(1, sizeof(*u));
	if (!u)
		return NULL; /* leak rather than free what a reader may use */
	rt_set_state_bit(e->desc, RINGTRACE_EV_CTL, 0);
	__atomic_store_n(&e->desc->ctl, NULL, __ATOMIC_RELEASE);
	u->ctl = x->ctl;
	u->filter = x->filter;
	u->tinsts = x->tinsts;
	u->ntinsts = x->ntinsts;
	u->x = x;
	x->ctl = NULL;
	x->filter = NULL;
	free(x->filter_expr);
	x->filter_expr = NULL;
	x->tinsts = NULL;
	x->ntinsts = 0;
	return u;
}

static void rt_hook_unloaded(void *p)
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
	rt_fold_slot(u->x);
	pthread_mutex_unlock(&rt_reg_lock);
	free(u);
}

static void rt_hook_info(const struct rt_entry *e, int *has_filter, uint64_t *rejected)
{
	const struct rt_ectl *x = rt_ec(e);
	*has_filter = x && x->filter_expr != NULL;
	*rejected = rt_rejected(x);
}

void rt_control_init(void)
{
	static int done;
	if (__atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL))
		return;
	static const struct rt_event_hooks hooks = {
		rt_hook_read_env, rt_hook_loaded, rt_hook_unloading, rt_hook_unloaded, rt_hook_info,
	};
	rt_event_set_hooks(&hooks);
}

/* ---- for the metadata ------------------------------------------------------------ */

void rt_ctl_describe_free(struct rt_ctl_desc *d)
{
	for (uint32_t i = 0; i < d->nfilters; i++)
		free(d->filters[i].expr);
	for (uint32_t i = 0; i < d->ntriggers; i++)
		free(d->triggers[i].spec);
	free(d->filters);
	free(d->triggers);
	memset(d, 0, sizeof(*d));
}

int rt_ctl_describe(uint32_t nevents, struct rt_ctl_desc *out)
{
	memset(out, 0, sizeof(*out));
	int err = 0;
	pthread_mutex_lock(&rt_reg_lock);
	/* Entries are only appended: the first nevents are those the caller
	 * describes (one registered since gets no line). */
	uint32_t n = nevents < rt_nentries ? nevents : rt_nentries;
	out->filters = calloc(n ? n : 1, sizeof(*out->filters));
	out->triggers = calloc(rt_ntriggers ? rt_ntriggers : 1, sizeof(*out->triggers));
	if (!out->filters || !out->triggers)
		err = rt_error(RINGTRACE_ENOMEM,
			       "out of memory describing the filters and triggers");
	for (uint32_t i = 0; i < n && !err; i++) {
		const struct rt_entry *e = rt_entries[i];
		const struct rt_ectl *x = rt_ec(e);
		uint64_t rej = rt_rejected(x);
		if (!x || (!x->filter_expr && !rej))
			continue;
		struct rt_ctl_filter_line *l = &out->filters[out->nfilters++];
		l->id = e->id;
		l->rejected = rej;
		if (x->filter_expr && !(l->expr = strdup(x->filter_expr)))
			err = rt_error(RINGTRACE_ENOMEM,
				       "out of memory describing the filters and triggers");
	}
	for (uint32_t i = 0; i < rt_ntriggers && !err; i++) {
		const struct rt_trigger *t = rt_triggers[i];
		struct rt_ctl_trigger_line *l = &out->triggers[out->ntriggers++];
		l->fired = __atomic_load_n(&t->fired, __ATOMIC_RELAXED);
		l->skipped = __atomic_load_n(&t->skipped, __ATOMIC_RELAXED);
		if (!(l->spec = strdup(t->spec)))
			err = rt_error(RINGTRACE_ENOMEM,
				       "out of memory describing the filters and triggers");
	}
	pthread_mutex_unlock(&rt_reg_lock);
	if (err)
		rt_ctl_describe_free(out);
	return err;
}

/* ---- saving and restoring (control_api.h) ----------------------------------------- */

struct rt_ctl_saved {
	struct rt_frules_saved *frules;
	int *trigger_ids;
	uint32_t ntriggers;
	int tracing_on;
};

struct rt_ctl_saved *rt_ctl_save(void)
{
	/* (rt_ctl_discard frees what a failed save made) */
	struct rt_ctl_saved *s = calloc(1, sizeof(*s));
	if (!s) {
		rt_error(RINGTRACE_ENOMEM, "out of memory saving the filters and triggers");
		return NULL;
	}
	pthread_mutex_lock(&rt_reg_lock);
	rt_read_env_locked();
	s->frules = rt_frules_save_locked();
	s->trigger_ids = calloc(rt_ntriggers ? rt_ntriggers : 1, sizeof(int));
	if (s->trigger_ids) {
		for (uint32_t i = 0; i < rt_ntriggers; i++)
			s->trigger_ids[i] = rt_triggers[i]->id;
		s->ntriggers = rt_ntriggers;
	}
	pthread_mutex_unlock(&rt_reg_lock);
	s->tracing_on = ringtrace_tracing_is_on();
	if (!s->frules || !s->trigger_ids) {
		rt_ctl_discard(s);
		rt_error(RINGTRACE_ENOMEM, "out of memory saving the filters and triggers");
		return NULL;
	}
	return s;
}

void rt_ctl_discard(struct rt_ctl_saved *s)
{
	if (!s)
		return;
	rt_frules_discard(s->frules);
	free(s->trigger_ids);
	free(s);
}

void rt_ctl_restore(struct rt_ctl_saved *s)
{
	if (!s)
		return;
	/* Triggers that were not there: removed (each removal waits for the
	 * tracepoints that may run it). Collected first: removing takes the lock. */
	uint32_t n = ringtrace_trigger_count(), k = 0;
	int *gone = calloc(n ? n : 1, sizeof(int));
	for (uint32_t i = 0; gone && i < n; i++) {
		struct ringtrace_trigger_info ti;
		if (ringtrace_trigger_get(i, &ti) < 0)
			continue;
		int kept = 0;
		for (uint32_t j = 0; j < s->ntriggers && !kept; j++)
			kept = s->trigger_ids[j] == ti.id;
		if (!kept)
			gone[k++] = ti.id;
	}
	if (!gone)
		fprintf(stderr, "ringtrace: out of memory: the session's triggers stay\n");
	for (uint32_t i = 0; i < k; i++)
		(void)ringtrace_trigger_remove(gone[i]);
	free(gone);
	pthread_mutex_lock(&rt_reg_lock);
	rt_frules_restore_locked(s->frules);
	pthread_mutex_unlock(&rt_reg_lock);
	if (s->tracing_on)
		ringtrace_tracing_on();
	else
		ringtrace_tracing_off();
	free(s->trigger_ids);
	free(s);
}
