/*
 * src/control/control_api.h - what the layers above control (the metadata
 * writer of src/ctf, the recorder of src/record) use of it beyond
 * ringtrace/filter.h. Not installed.
 */
#ifndef RINGTRACE_CONTROL_API_H
#define RINGTRACE_CONTROL_API_H

#include <stdint.h>

#include "base/base.h"

/*
 * Install control's hooks into the events layer (the registry tells
 * control about events loaded and unloaded, and about the environment's
 * RINGTRACE_FILTERS and RINGTRACE_TRIGGERS, through them). Called once at
 * load by the runtime (src/record/runtime.c); later calls do nothing.
 */
RT_HIDDEN void rt_control_init(void);

/*
 * What a `snapshot` trigger does: ask the recorder for a snapshot.
 * Registered by the recorder; the function must be async-signal-safe (it
 * runs in tracepoints) and return 0 when nothing records (the trigger
 * counts a skip). Without one, snapshot triggers skip.
 */
RT_HIDDEN void rt_ctl_set_snapshot_hook(int (*fn)(void));

/* The filters and triggers as they stand, for the metadata (src/ctf). */
struct rt_ctl_filter_line {
	uint32_t id;       /* the event's id */
	uint64_t rejected; /* calls its filters kept out of the buffer, ever */
	char *expr;        /* its filter now, NULL if none */
};
struct rt_ctl_trigger_line {
	char *spec;
	uint64_t fired, skipped;
};
struct rt_ctl_desc {
	struct rt_ctl_filter_line *filters;
	uint32_t nfilters;
	struct rt_ctl_trigger_line *triggers;
	uint32_t ntriggers;
};
/*
 * A copy of what filters and triggers say now: a filter line for each of
 * the first `nevents` registry entries that has a filter or rejected a
 * call, a trigger line for each trigger in the order they were added.
 * 0, or -RINGTRACE_ENOMEM. Free with rt_ctl_describe_free().
 */
RT_HIDDEN int rt_ctl_describe(uint32_t nevents, struct rt_ctl_desc *out);
RT_HIDDEN void rt_ctl_describe_free(struct rt_ctl_desc *d);

/*
 * What filters and triggers say now, and tracing on or off: a copy (NULL
 * with a message when out of memory), and putting it back (triggers added
 * since removed, every filter rule and event filter as they were, the
 * switch as it was; the copy freed). For a session attached from outside
 * (src/record/attach.c), which sets its own and leaves the program as it
 * found it. Not from tracepoints; takes the registry's lock.
 */
struct rt_ctl_saved;
RT_HIDDEN struct rt_ctl_saved *rt_ctl_save(void);
RT_HIDDEN void rt_ctl_restore(struct rt_ctl_saved *s);
/* Free the copy without putting it back (the process is exiting). */
RT_HIDDEN void rt_ctl_discard(struct rt_ctl_saved *s);

#endif /* RINGTRACE_CONTROL_API_H */
