/* Small I/O helpers shared by the recorder, the reader and the tools' library code. */
#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"

int rt_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/*
 * Why wait at all: the recorder's files are opened inside the traced
 * program, under its RLIMIT_NOFILE. A program run near its limit has a
 * descriptor taken for a moment by things that come and go: a connection
 * to its listener (`ringtrace ps`, an attach; the first one calibrates the
 * clock, tens of milliseconds), a /proc file another thread reads, the
 * program's own opendir. A file opened just then would fail, and its
 * pages be lost, although a descriptor is free again a few milliseconds
 * later. The wait is bounded (1 + 2 + ... + 64 = 127 ms) so that a
 * program that keeps every descriptor is never held up for long: it gets
 * the error, which the caller reports (and the recorder then retries a
 * failing disk only every 100 ms, not for each page).
 */
#define RT_OPEN_WAIT_TRIES 8

int rt_openat_wait(int dirfd, const char *name, int flags, unsigned mode)
{
	long ms = 1;
	for (int i = 0;; i++) {
		int fd = openat(dirfd, name, flags, (mode_t)mode);
		if (fd >= 0 || (errno != EMFILE && errno != ENFILE) || i == RT_OPEN_WAIT_TRIES - 1)
			return fd;
		int e = errno;
		struct timespec d = {0, ms * 1000000L};
		while (nanosleep(&d, &d) < 0 && errno == EINTR)
			;
		errno = e;
		ms *= 2;
	}
}

const char rt_digits2[200] = "00010203040506070809"
			     "10111213141516171819"
			     "20212223242526272829"
			     "30313233343536373839"
			     "40414243444546474849"
			     "50515253545556575859"
			     "60616263646566676869"
			     "70717273747576777879"
			     "80818283848586878889"
			     "90919293949596979899";

const uint64_t rt_pow10[20] = {
	1ull,
	10ull,
	100ull,
	1000ull,
	10000ull,
	100000ull,
	1000000ull,
	10000000ull,
	100000000ull,
	1000000000ull,
	10000000000ull,
	100000000000ull,
	1000000000000ull,
	10000000000000ull,
	100000000000000ull,
	1000000000000000ull,
	10000000000000000ull,
	100000000000000000ull,
	1000000000000000000ull,
	10000000000000000000ull,
};

char *rt_put_u64(char *p, uint64_t v)
{
	p += rt_dec_len(v);
	rt_dec_back(p, v);
	return p;
}
