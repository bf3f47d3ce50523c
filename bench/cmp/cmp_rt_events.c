/* bench/cmp/cmp_rt_events.c - defines the event of cmp_rt_events.h. */
#define RINGTRACE_CREATE_EVENTS
#include "cmp_rt_events.h"
