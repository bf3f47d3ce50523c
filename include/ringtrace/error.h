/*
 * ringtrace/error.h - error codes and messages, shared by every part of
 * ringtrace (the tracing library and the trace reader).
 *
 * Contracts:
 *  - Functions return 0 (or a count) on success and a negated
 *    RINGTRACE_E* on failure.
 *  - A failing call on a slow path (configuration, attach, read) records
 *    a sentence naming what was wrong, readable with ringtrace_last_error()
 *    in the same thread until the next failing call. The write path never
 *    does (it must stay cheap and async-signal-safe): it counts instead.
 *
 * This header compiles as C and as C++.
 */
#ifndef RINGTRACE_ERROR_H
#define RINGTRACE_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes (negated in return values). */
enum ringtrace_error {
	RINGTRACE_OK = 0,
	RINGTRACE_EINVAL = 1,   /* an argument or configuration value is invalid */
	RINGTRACE_ENOMEM = 2,   /* memory or shared memory could not be set up */
	RINGTRACE_E2BIG = 3,    /* an event does not fit in a page */
	RINGTRACE_ENOSPC = 4,   /* no page or writer slot available: counted as missed */
	RINGTRACE_EAGAIN = 5,   /* nothing to read now */
	RINGTRACE_ECORRUPT = 6, /* data failed validation */
	RINGTRACE_ESYS = 7,     /* a system call failed (errno is in the message) */
	RINGTRACE_ENESTED = 8,  /* nested write from a signal handler: counted as missed */
	RINGTRACE_ENOENT = 9,   /* no such event, probe or pattern match */
};

/* Human-readable name of an error code (positive or negative). */
const char *ringtrace_strerror(int err);
/* The detailed message of the last error in this thread ("" if none). */
const char *ringtrace_last_error(void);

#ifdef __cplusplus
}
#endif
#endif /* RINGTRACE_ERROR_H */
