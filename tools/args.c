/* Strict parsing of the numbers on the ringtrace command line (args.h). */
#include "args.h"

#include <stdio.h>
#include <string.h>

#include "ringtrace/ring.h"

/* At most 40 bytes of the argument, for messages. */
#define ARG_SHOWN 40

int arg_u64(const char *s, uint64_t max, uint64_t *out, char *why, size_t whylen)
{
	uint64_t v = 0;
	size_t n = 0;
	if (!*s) {
		snprintf(why, whylen, "an empty value is not a number");
		return -1;
	}
	for (const char *p = s; *p; p++, n++) {
		if (*p < '0' || *p > '9') {
			snprintf(why, whylen, "'%.*s' is not a decimal number ('%c' at column %zu)",
				 ARG_SHOWN, s, *p, n + 1);
			return -1;
		}
		unsigned d = (unsigned)(*p - '0');
		if (d > max || v > (max - d) / 10) {
			snprintf(why, whylen, "'%.*s' is out of range (at most %llu)", ARG_SHOWN, s,
				 (unsigned long long)max);
			return -1;
		}
		v = v * 10 + d;
	}
	if (s[0] == '0' && s[1]) {
		snprintf(why, whylen, "'%.*s' has a leading zero (octal is not read)", ARG_SHOWN,
			 s);
		return -1;
	}
	*out = v;
	return 0;
}

/* The kernel's limit on process ids; its hard maximum if unreadable. */
static uint64_t pid_max(void)
{
	uint64_t v = 4194304; /* PID_MAX_LIMIT on 64-bit kernels */
	FILE *f = fopen("/proc/sys/kernel/pid_max", "re");
	if (f) {
		unsigned long long x;
		if (fscanf(f, "%llu", &x) == 1 && x >= 2 && x <= 4194304)
			v = x;
		fclose(f);
	}
	return v;
}

int arg_pid(const char *s, int *out, char *why, size_t whylen)
{
	uint64_t max = pid_max(), v;
	/* pid_max itself is one past the largest pid the kernel gives */
	if (arg_u64(s, max - 1, &v, why, whylen) < 0)
		return -1;
	if (v == 0) {
		snprintf(why, whylen, "0 is not a process id (1 to %llu)",
			 (unsigned long long)(max - 1));
		return -1;
	}
	*out = (int)v;
	return 0;
}

int arg_seconds(const char *s, uint64_t *ns, char *why, size_t whylen)
{
	const char *dot = strchr(s, '.');
	char sec[32];
	size_t sl = dot ? (size_t)(dot - s) : strlen(s);
	uint64_t whole = 0, frac = 0;
	if (sl >= sizeof(sec) || (sl == 0 && !dot)) {
		snprintf(why, whylen, "'%.*s' is not a number of seconds (SEC or SEC.FRACTION)",
			 ARG_SHOWN, s);
		return -1;
	}
	memcpy(sec, s, sl);
	sec[sl] = 0;
	if (sl && arg_u64(sec, UINT64_MAX / 1000000000u, &whole, why, whylen) < 0) {
		snprintf(why, whylen,
			 "'%.*s' is not a number of seconds (SEC or SEC.FRACTION, at most %llu)",
			 ARG_SHOWN, s, (unsigned long long)(UINT64_MAX / 1000000000u));
		return -1;
	}
	if (dot) {
		const char *f = dot + 1;
		size_t fl = strlen(f);
		if ((fl == 0 && sl == 0) || fl > 9 || strspn(f, "0123456789") != fl) {
			snprintf(
				why, whylen,
				"'%.*s' is not a number of seconds (1 to 9 digits after the point)",
				ARG_SHOWN, s);
			return -1;
		}
		for (size_t i = 0; i < 9; i++)
			frac = frac * 10 + (i < fl ? (uint64_t)(f[i] - '0') : 0);
	}
	if (whole * 1000000000u > UINT64_MAX - frac) {
		snprintf(why, whylen, "'%.*s' is out of range (at most %llu s)", ARG_SHOWN, s,
			 (unsigned long long)(UINT64_MAX / 1000000000u));
		return -1;
	}
	*ns = whole * 1000000000u + frac;
	return 0;
}

int arg_pool_geometry(uint64_t pool_size, uint64_t page_size, char *why, size_t whylen)
{
	uint64_t ps = page_size ? page_size : RINGTRACE_RB_DEFAULT_PAGE_SIZE;
	uint64_t pool = pool_size ? pool_size : RINGTRACE_RB_DEFAULT_POOL_SIZE;
	if (ps < RINGTRACE_RB_MIN_PAGE_SIZE || ps > RINGTRACE_RB_MAX_PAGE_SIZE || (ps & (ps - 1))) {
		snprintf(why, whylen, "page size %llu is not a power of two from %u to %u",
			 (unsigned long long)ps, RINGTRACE_RB_MIN_PAGE_SIZE,
			 RINGTRACE_RB_MAX_PAGE_SIZE);
		return -1;
	}
	if (pool % ps) {
		snprintf(why, whylen, "buffer size %llu is not a multiple of the page size %llu",
			 (unsigned long long)pool, (unsigned long long)ps);
		return -1;
	}
	if (pool / ps < RINGTRACE_RB_MIN_PAGES || pool / ps > RINGTRACE_RB_MAX_PAGES) {
		snprintf(why, whylen,
			 "buffer size %llu holds %llu pages of %llu (allowed %u to %u)",
			 (unsigned long long)pool, (unsigned long long)(pool / ps),
			 (unsigned long long)ps, RINGTRACE_RB_MIN_PAGES, RINGTRACE_RB_MAX_PAGES);
		return -1;
	}
	return 0;
}

int arg_usage_error(const char *verb, const char *fmt, const char *arg)
{
	fprintf(stderr, "ringtrace%s%s: ", verb ? " " : "", verb ? verb : "");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'ringtrace%s%s --help'.\n", verb ? " " : "", verb ? verb : "");
	return 2;
}
