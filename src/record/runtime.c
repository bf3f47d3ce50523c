/*
 * What the tracing library does when it is loaded, in one place.
 *
 * Layers never call upward; where a lower one must act on a higher one
 * (the registry telling control that an event was loaded; a snapshot
 * trigger asking the recorder for a snapshot; the ring buffer telling the
 * events layer that a cached writer state went away), the higher one
 * registers a hook. The top layer's constructor registers those of
 * control and the recorder, then starts the session that RINGTRACE_OUTPUT
 * asks for. (The events layer registers its own hook into the ring
 * buffer: src/event/buffer.c.)
 *
 * ringtrace_runtime_ is what ties a statically linked program to all this:
 * every event definition and printf call site refers to it
 * (ringtrace/static/event.h), so linking libringtrace.a brings this file,
 * and with it control and the recorder, into any program that traces.
 */
#include <pthread.h>

#include "control/control_api.h"
#include "record/record_internal.h"

const int ringtrace_runtime_ = 1;

/*
 * Priority 101: before the program's own constructors register its events
 * (a shared libringtrace runs all of its constructors before the
 * program's anyway). The hooks replay what happened before them in any
 * case (rt_event_set_hooks).
 */
__attribute__((constructor(101))) static void rt_runtime_init(void)
{
	rt_control_init();
	rt_ctl_set_snapshot_hook(rt_session_request_snapshot);
	pthread_atfork(NULL, NULL, rt_session_atfork_child);
}

/*
 * Later than the program's constructors of priority below 200, which may
 * configure events; and after this library's (the registry's env rules are
 * read when the session enables events).
 */
__attribute__((constructor(200))) static void rt_runtime_env(void)
{
	rt_env_start();
	rt_attach_start();
}
