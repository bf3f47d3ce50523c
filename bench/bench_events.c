/*
 * bench/bench_events.c - the one translation unit that defines the events
 * of bench/bench_events.h (descriptors, registration, recording code).
 */
#define RINGTRACE_CREATE_EVENTS
#include "bench_events.h"
