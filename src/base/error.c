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

/* Append c at buf[*k] if it fits (one byte is kept for the NUL). */
static void rt_fput(char *buf, size_t n, size_t *k, char c)
{
	if (*k + 1 < n)
		buf[(*k)++] = c;
}

size_t rt_vformat_safe(char *buf, size_t n, const char *fmt, va_list ap)
{
	size_t k = 0;
	if (n == 0)
		return 0;
	for (const char *f = fmt; *f; f++) {
		if (*f != '%') {
			rt_fput(buf, n, &k, *f);
			continue;
		}
		f++;
		int lng = 0;
		while (*f == 'l' || *f == 'z') {
			lng = 1; /* long, long long and size_t are 64 bits here */
			f++;
		}
		char tmp[24], *e = tmp + sizeof(tmp), *p = e;
		uint64_t v = 0;
		int neg = 0;
		switch (*f) {
		case 's': {
			const char *s = va_arg(ap, const char *);
			for (s = s ? s : "(null)"; *s; s++)
				rt_fput(buf, n, &k, *s);
			continue;
		}
		case 'c':
			rt_fput(buf, n, &k, (char)va_arg(ap, int));
			continue;
		case 'd': {
			int64_t x = lng ? (int64_t)va_arg(ap, long long) : (int64_t)va_arg(ap, int);
			neg = x < 0;
			v = neg ? 0 - (uint64_t)x : (uint64_t)x;
			p = rt_dec_back(e, v);
			break;
		}
		case 'u':
			v = lng ? (uint64_t)va_arg(ap, unsigned long long) : va_arg(ap, unsigned);
			p = rt_dec_back(e, v);
			break;
		case 'x':
			v = lng ? (uint64_t)va_arg(ap, unsigned long long) : va_arg(ap, unsigned);
			do {
				*--p = "0123456789abcdef"[v & 15];
				v >>= 4;
			} while (v);
			break;
		case '%':
			rt_fput(buf, n, &k, '%');
			continue;
		default: /* not in the subset: shown as it is */
			rt_fput(buf, n, &k, '%');
			if (!*f)
				goto out;
			rt_fput(buf, n, &k, *f);
			continue;
		}
		if (neg)
			rt_fput(buf, n, &k, '-');
		while (p < e)
			rt_fput(buf, n, &k, *p++);
	}
out:
	buf[k] = 0;
	return k;
}

size_t rt_format_safe(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	size_t k = rt_vformat_safe(buf, n, fmt, ap);
	va_end(ap);
	return k;
}
