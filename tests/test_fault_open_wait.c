/*
 * rt_openat_wait (src/base/io.c) with its opens failed by fault injection
 * (built only with RINGTRACE_FAULT_INJECTION): a process out of
 * descriptors for a moment (EMFILE or ENFILE once) tries again and opens;
 * out of them for good, it gives up after its eight tries with EMFILE;
 * any other error is returned at its first try.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "base/fault.h"
#include "check.h"

/* open f in a new directory under SPEC: the fd or -1, errno in *e, the
 * calls counted and failed */
static int open_under(const char *spec, int *e, uint64_t *calls, uint64_t *fired)
{
	char dir[] = "/tmp/ringtrace-faultwait-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(dfd >= 0);
	CHECK(rt_fault_arm(spec) == 0);
	errno = 0;
	int fd = rt_openat_wait(dfd, "f", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	*e = errno;
	*calls = rt_fault_calls();
	*fired = rt_fault_fired();
	rt_fault_disarm();
	if (fd >= 0)
		close(fd);
	unlinkat(dfd, "f", 0);
	close(dfd);
	CHECK(rmdir(dir) == 0);
	return fd;
}

/* out of descriptors at the first try only (SPEC): opened at the second */
static void fails_once(const char *spec)
{
	int e;
	uint64_t calls, fired;
	int fd = open_under(spec, &e, &calls, &fired);
	CHECKF(fd >= 0, "%s: %s", spec, strerror(e));
	CHECK_EQ_U64(calls, 2);
	CHECK_EQ_U64(fired, 1);
}

static void emfile_once(void)
{
	fails_once("openat:1:errno=EMFILE");
}

static void enfile_once(void)
{
	fails_once("openat:1:errno=ENFILE");
}

static void for_good(void)
{
	int e;
	uint64_t calls, fired;
	int fd = open_under("openat:1:persist:errno=EMFILE", &e, &calls, &fired);
	CHECKF(fd == -1 && e == EMFILE, "fd %d, %s", fd, strerror(e));
	CHECK_EQ_U64(calls, 8);
	CHECK_EQ_U64(fired, 8);
}

static void other_error(void)
{
	int e;
	uint64_t calls, fired;
	int fd = open_under("openat:1:errno=EACCES", &e, &calls, &fired);
	CHECKF(fd == -1 && e == EACCES, "fd %d, %s", fd, strerror(e));
	CHECK_EQ_U64(calls, 1);
	CHECK_EQ_U64(fired, 1);
}

static const struct check_case cases[] = {
	CHECK_CASE(fault_open_wait_emfile_once_tried_again_and_opened, emfile_once),
	CHECK_CASE(fault_open_wait_enfile_once_tried_again_and_opened, enfile_once),
	CHECK_CASE(fault_open_wait_emfile_for_good_gives_up_after_eight_tries, for_good),
	CHECK_CASE(fault_open_wait_other_errors_not_tried_again, other_error),
};

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
