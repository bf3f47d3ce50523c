/*
 * Who this process is, recorded in the slots it claims, so that a flush can
 * judge whether a slot's owner is gone (flush.c, rt_owner_gone):
 *   cookie  a random number of this process (a forked child draws its
 *           own): a slot with it belongs to one of our threads, whatever
 *           the pid namespaces and /proc;
 *   pidns   our pid namespace (inode of /proc/self/ns/pid, 0 if /proc is
 *           not there): another process's pid means something here only
 *           if its namespace is the same;
 *   pid     getpid(), without the system call.
 * Read once per process, at the first use (a process that writes reads it
 * when it first opens a buffer for writing, writer.c; one that never
 * records never reads it), and again in every forked child (which
 * unshare(CLONE_NEWPID) may have put in a new namespace), by an atfork
 * handler registered at that first use (and by the writers' own fork
 * handler, which does not rely on the order of the two).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ring/ring_internal.h"

static struct rt_identity rt_self;
static pthread_once_t rt_self_once = PTHREAD_ONCE_INIT;

void rt_identity_refresh(void)
{
	uint64_t c = 0;
	if (getrandom(&c, sizeof(c), GRND_NONBLOCK) != (ssize_t)sizeof(c))
		c = 0;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	c ^= ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
	     (uint64_t)(uintptr_t)&c;
	RT_STORE(&rt_self.cookie, c | 1); /* never 0, which a fresh slot holds */
	struct stat st;
	RT_STORE(&rt_self.pidns, stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0);
	RT_STORE(&rt_self.pid, (uint32_t)getpid());
}

static void rt_identity_init(void)
{
	rt_identity_refresh();
	if (pthread_atfork(NULL, NULL, rt_identity_refresh) != 0)
		fprintf(stderr, "ringtrace: cannot register a fork handler: a forked child that "
				"flushes a pool may misjudge whose writers are gone\n");
}

const struct rt_identity *rt_identity(void)
{
	pthread_once(&rt_self_once, rt_identity_init);
	return &rt_self;
}

const struct rt_identity *rt_identity_loaded(void)
{
	return &rt_self;
}
