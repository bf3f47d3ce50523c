/* The definitions of the events of tests/events_fields.h (test_event_fields). */
#define RINGTRACE_CREATE_EVENTS
#include "events_fields.h"
