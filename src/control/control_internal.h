/*
 * src/control/control_internal.h - filters and triggers on events, shared
 * by the files of the control layer:
 *   filter.c        filter expressions: compiler and interpreter
 *   ctl.c           per-event state, control blocks and their
 *                   publication, counter slots, the registry's hooks, the
 *                   description for the metadata
 *   spec.c          ';'-separated lists of filters and triggers
 *   event_filter.c  filters on events: set, get, rules for events loaded
 *                   later, RINGTRACE_FILTERS
 *   trigger.c       triggers: parse, attach, run, RINGTRACE_TRIGGERS
 * Not installed; the layers above use control/control_api.h.
 *
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
#ifndef RINGTRACE_CONTROL_INTERNAL_H
#define RINGTRACE_CONTROL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "control/control_api.h"
#include "event/event_api.h"
#include "ringtrace/filter.h"

struct rt_trigger {
	int id;
	enum ringtrace_trigger_action action;
	char *spec;              /* as given */
	char *event;             /* pattern */
	char *expr;              /* condition, NULL if none */
	size_t expr_off;         /* where it starts in spec (for error columns) */
	char *target_name;       /* enable_event / disable_event */
	struct rt_entry *target; /* atomic: resolved by name, NULL until loaded */
	int64_t remaining;       /* atomic: -1 no limit */
	uint64_t fired, skipped; /* atomic */
	int from_env;
};

struct rt_tinst {
	struct rt_trigger *t;
	ringtrace_filter *filter; /* the condition for this event's schema */
	struct ringtrace_fast_pred_ fast;
};

/* What control keeps for one event: its registry entry's ctl. Lock held. */
struct rt_ectl {
	char *filter_expr;                /* NULL: none */
	struct ringtrace_filter *filter;  /* compiled filter_expr */
	uint32_t slot;                    /* counter slot; RINGTRACE_COUNT_SLOTS: none */
	uint64_t rejected_base;           /* what earlier slots and filters counted */
	uint64_t overflow;                /* atomic: counted without a slot */
	struct ringtrace_event_ctl_ *ctl; /* what desc->ctl points to */
	struct rt_tinst **tinsts;         /* triggers on this event */
	uint32_t ntinsts;
};

/* An entry's state (NULL for an event never loaded since control started,
 * or whose state could not be allocated). */
static inline struct rt_ectl *rt_ec(const struct rt_entry *e)
{
	return (struct rt_ectl *)e->ctl;
}

/* ---- ctl.c ---- */

/* Filters and triggers need the record layout of RINGTRACE_EVENT. */
RT_HIDDEN int rt_filterable(const struct rt_entry *e);
RT_HIDDEN void rt_tinst_free(struct rt_tinst *ti);
RT_HIDDEN void rt_trigger_free(struct rt_trigger *t);

/*
 * Things to free once no tracepoint can see them: filled while changing
 * state, emptied by rt_finish() after the grace period.
 */
struct rt_bag {
	void **ctl, **filter, **tinst, **trigger;
	size_t nctl, nfilter, ntinst, ntrigger;
	int err;
};
RT_HIDDEN void rt_bag_put(struct rt_bag *b, void ***arr, size_t *n, void *p);
/* A new control block for e from its filter and trigger instances (NULL if
 * it needs none, or with *err set when out of memory). */
RT_HIDDEN struct ringtrace_event_ctl_ *rt_build_ctl(struct rt_entry *e, int *err);
/* Make the descriptor point to `c` (the old block goes to the bag). */
RT_HIDDEN void rt_publish(struct rt_entry *e, struct ringtrace_event_ctl_ *c, struct rt_bag *bag);
/* Give an entry a counter slot for its filter (or none: the overflow). */
RT_HIDDEN void rt_take_slot(struct rt_ectl *x);
/* Give a slot back that rt_take_slot() took for a change that failed. */
RT_HIDDEN void rt_untake_slot(struct rt_ectl *x, uint32_t keep_slot);
/* After publishing: grace period, counter slots folded, the bag freed. */
RT_HIDDEN void rt_finish(struct rt_bag *b);

/* ---- spec.c ---- */

/* Does `name` match a pattern list "a,b*,c"? */
RT_HIDDEN int rt_list_match(const char *list, const char *name);
/* Every pattern of a list is valid: 0 or -RINGTRACE_EINVAL. */
RT_HIDDEN int rt_check_list(const char *list);
/* Position of the last ':' outside quotes, or -1. */
RT_HIDDEN long rt_last_colon(const char *s);
RT_HIDDEN char *rt_trim(char *s);
struct rt_cfg_pass {
	int apply; /* 0: check syntax only */
	int from_env;
};
/* A ';' list applied all or nothing: every item checked (apply 0), then
 * applied (apply 1). */
RT_HIDDEN int rt_configure_list(const char *spec, int from_env,
				int (*item)(char *, size_t, void *));

/* ---- filter.c ---- */

/* The inline form of a one-predicate filter (1), or 0. */
RT_HIDDEN int rt_filter_fast_form(const ringtrace_filter *f, struct ringtrace_fast_pred_ *fp);
/* The program in the inline form (RINGTRACE_FP_PROG), or NULL. */
RT_HIDDEN const struct ringtrace_fast_pred_ *rt_filter_inline_prog(const ringtrace_filter *f);

/* ---- event_filter.c ---- */

/* Compile `expr` for an entry; errors name the event. */
RT_HIDDEN int rt_compile_for(const struct rt_entry *e, const char *expr, ringtrace_filter **out,
			     unsigned *col);
RT_HIDDEN int rt_filters_configure_locked(const char *spec, int from_env);
/* The filter rules: a copy (NULL when out of memory), and putting it back
 * (every loaded event's filter as the copy's rules say; the copy freed). */
struct rt_frules_saved;
RT_HIDDEN struct rt_frules_saved *rt_frules_save_locked(void);
RT_HIDDEN void rt_frules_restore_locked(struct rt_frules_saved *s);
RT_HIDDEN void rt_frules_discard(struct rt_frules_saved *s);
/* A loaded event gets the filter of the last rule that matches it. */
RT_HIDDEN void rt_filters_event_loaded(struct rt_entry *e);

/* ---- trigger.c ---- */

RT_HIDDEN int rt_triggers_configure_locked(const char *spec, int from_env);
/* A loaded event: triggers that target it by name resolve to it, and it
 * gets an instance of every trigger whose pattern matches it. */
RT_HIDDEN void rt_triggers_event_loaded(struct rt_entry *e);
/* The triggers, in the order they were added. Lock held. */
RT_HIDDEN extern struct rt_trigger **rt_triggers;
RT_HIDDEN extern uint32_t rt_ntriggers;

#endif /* RINGTRACE_CONTROL_INTERNAL_H */
