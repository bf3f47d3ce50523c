/*
 * Thread names.
 *
 * A writer reads its thread's name once, when it attaches; every page
 * header carries a copy. A thread renamed later (pthread_setname_np) is
 * caught up by readers: ringtrace_rb_get_page() calls this with every
 * periodic flush, and it reads /proc on the reader's time, so the write
 * path never makes the system call. Works from another process too.
 */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "ring/ring_internal.h"

/* (pid and tid come from the pool: they only name a /proc file to read) */
static int rt_comm_pass(struct ringtrace_rb *rb, void *arg)
{
	int *n = arg;
	for (uint32_t i = 0; i < rb->g.max_writers; i++) {
		struct rt_slot *s = &rb->slots[i];
		if (RT_SLOT_STATE(RT_LOAD_ACQ(&s->h.state)) != RT_SLOT_ACTIVE)
			continue;
		uint64_t stream = RT_LOAD_ACQ(&s->stream);
		char path[80];
		snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", RT_LOAD(&s->pid),
			 RT_LOAD(&s->tid));
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		uint64_t cm[2] = {0, 0};
		ssize_t r = read(fd, cm, 15);
		close(fd);
		if (r <= 0)
			continue;
		char *c = (char *)cm;
		if (c[r - 1] == '\n')
			c[r - 1] = 0;
		/* The slot may have changed hands meanwhile (torn names are possible
		 * but harmless: the next refresh repairs them). */
		if (RT_LOAD_ACQ(&s->stream) != stream ||
		    RT_SLOT_STATE(RT_LOAD(&s->h.state)) != RT_SLOT_ACTIVE)
			continue;
		if (RT_LOAD(&s->comm[0]) != cm[0] || RT_LOAD(&s->comm[1]) != cm[1]) {
			RT_STORE(&s->comm[0], cm[0]);
			RT_STORE(&s->comm[1], cm[1]);
		}
		(*n)++;
	}
	return 0;
}

int ringtrace_rb_refresh_comm(ringtrace_rb *rb)
{
	int n = 0;
	int err = rt_guard_run(rb, rt_comm_pass, &n);
	return err < 0 ? err : n;
}
