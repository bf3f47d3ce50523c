/*
 * rt_openat_wait (src/base/io.c): the open the recorder makes its files
 * with, inside the traced program, under the program's descriptor limit.
 * A process out of descriptors for good gets EMFILE, after a bounded
 * wait (the program is never held up for long); one with a descriptor
 * free opens at once. (The waits themselves, a descriptor taken for a
 * moment, are tried by fault injection: tests/test_fault_open_wait.c.)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/base.h"
#include "check.h"

/* A process with every descriptor taken: its limit lowered to 64 (the
 * test's own are fewer), the rest filled with copies of stdin. */
static struct {
	struct rlimit old;
	int dups[64];
	int n;
} F;

static void fill_descriptors(void)
{
	CHECK(getrlimit(RLIMIT_NOFILE, &F.old) == 0);
	struct rlimit low = F.old;
	if (low.rlim_cur == RLIM_INFINITY || low.rlim_cur > 64)
		low.rlim_cur = 64;
	CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0);
	F.n = 0;
	for (;;) {
		int fd = dup(0);
		if (fd < 0) {
			CHECKF(errno == EMFILE, "dup: %s", strerror(errno));
			break;
		}
		CHECK(F.n < 64);
		F.dups[F.n++] = fd;
	}
	CHECK(F.n > 0);
}

static void free_descriptors(void)
{
	while (F.n > 0)
		close(F.dups[--F.n]);
	CHECK(setrlimit(RLIMIT_NOFILE, &F.old) == 0);
}

static void for_good(void)
{
	char dir[] = "/tmp/ringtrace-openwait-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(dfd >= 0);
	fill_descriptors();
	errno = 0;
	int fd = rt_openat_wait(dfd, "f", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	int e = errno;
	/* one descriptor given back: the next open has it at once */
	close(F.dups[--F.n]);
	int fd2 = rt_openat_wait(dfd, "g", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	int e2 = errno;
	if (fd2 >= 0)
		close(fd2);
	free_descriptors();
	CHECKF(fd == -1 && e == EMFILE, "out of descriptors: fd %d, %s", fd, strerror(e));
	CHECKF(fd2 >= 0, "one descriptor free: %s", strerror(e2));
	CHECK(unlinkat(dfd, "g", 0) == 0);
	CHECK(unlinkat(dfd, "f", 0) == -1 && errno == ENOENT);
	close(dfd);
	CHECK(rmdir(dir) == 0);
}

static void other_error(void)
{
	errno = 0;
	int fd = rt_openat_wait(AT_FDCWD, "/nonexistent-ringtrace-dir/f", O_RDONLY | O_CLOEXEC, 0);
	CHECKF(fd == -1 && errno == ENOENT, "fd %d, %s", fd, strerror(errno));
}

static const struct check_case cases[] = {
	CHECK_CASE(open_wait_out_of_descriptors_gives_up_with_emfile, for_good),
	CHECK_CASE(open_wait_other_errors_returned_at_once, other_error),
};

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
