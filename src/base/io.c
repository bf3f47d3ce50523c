/* Small I/O helpers shared by the recorder, the reader and the tools' library code. */
#include <errno.h>
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
