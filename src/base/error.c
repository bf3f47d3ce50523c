/*
 * Error codes and the per-thread "last error" message.
 *
 * Every failing call on a slow path (configuration, attach, read) records a
 * sentence that names what was wrong; the write path never does (it must
 * stay cheap and async-signal-safe) and reports through counters instead.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"

static __thread char rt_errbuf[256];

const char *ringtrace_strerror(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case RINGTRACE_OK:
		return "success";
	case RINGTRACE_EINVAL:
		return "invalid argument";
	case RINGTRACE_ENOMEM:
		return "out of memory";
	case RINGTRACE_E2BIG:
		return "event larger than a page";
	case RINGTRACE_ENOSPC:
		return "no page or writer slot available";
	case RINGTRACE_EAGAIN:
		return "nothing to read now";
	case RINGTRACE_ECORRUPT:
		return "corrupt data";
	case RINGTRACE_ESYS:
		return "system call failed";
	case RINGTRACE_ENESTED:
		return "nested write from a signal handler";
	case RINGTRACE_ENOENT:
		return "no such event";
	default:
		return "unknown error";
	}
}

const char *ringtrace_last_error(void)
{
	return rt_errbuf;
}

int rt_error(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rt_errbuf, sizeof(rt_errbuf), fmt, ap);
	va_end(ap);
	return -code;
}

void rt_error_clear(void)
{
	rt_errbuf[0] = 0;
}
