/*
 * The kernel layer of a ringtrace built without libtracefs and
 * libtraceevent (CMakeLists.txt builds this file instead of kernel.c and
 * kfmt_tep.c): recording kernel events fails with what to install, and
 * kernel events are printed as name=value (kfmt.c without formats).
 */
#include <stdio.h>

#include "kernel/kernel_internal.h"

static const char kr_not_built[] =
	"ringtrace was built without libtracefs/libtraceevent: kernel events are not available "
	"(install libtracefs-dev libtraceevent-dev, or `make deps`, and rebuild)";

int kr_available(char *why, size_t wn)
{
	snprintf(why, wn, "%s", kr_not_built);
	return -1;
}

int kr_start(struct kr **out, const char *dir, char *const *specs, int nspecs, size_t buf_kb,
	     int all, char *why, size_t wn)
{
	(void)dir, (void)specs, (void)nspecs, (void)buf_kb, (void)all;
	*out = NULL;
	return kr_available(why, wn);
}

/* (no struct kr is ever made here: these get NULL) */
void kr_follow(struct kr *k, pid_t pid)
{
	(void)k, (void)pid;
}

int kr_finish(struct kr *k, const char *dir, const struct ringtrace_trace_clock *clk,
	      const int64_t *realtime_offset, int quiet)
{
	(void)k, (void)dir, (void)clk, (void)realtime_offset;
	if (!quiet)
		fprintf(stderr, "ringtrace record: -k: %s\n", kr_not_built);
	return -1;
}

void kr_abort(struct kr *k)
{
	(void)k;
}

struct kfmt_tep *kfmt_tep_open(const char *dir, ringtrace_trace_error_fn err, void *arg)
{
	(void)dir, (void)err, (void)arg;
	return NULL;
}

void kfmt_tep_close(struct kfmt_tep *k)
{
	(void)k;
}

struct tep_event *kfmt_tep_event(struct kfmt_tep *k, const char *name)
{
	(void)k, (void)name;
	return NULL;
}

int kfmt_tep_print(struct kfmt_tep *k, struct tep_event *te,
		   const struct ringtrace_trace_record *rec, const struct ringtrace_value *vals,
		   int n, int pid_field, char *buf, size_t size)
{
	(void)k, (void)te, (void)rec, (void)vals, (void)n, (void)pid_field, (void)buf, (void)size;
	return -1;
}
