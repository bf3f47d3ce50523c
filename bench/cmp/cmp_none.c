/*
 * cmp-none: the loop with no tracer at all (the "no tracing" line).
 * cmp_emit() is empty: what is timed is the loop itself (micro), close(-1)
 * alone (close), the bare wake-up (latency).
 */
#include "cmp.h"

static const char backend_name[] = "none";

static inline void cmp_emit(int v)
{
	(void)v;
}

CMP_NO_INIT

CMP_NO_READY

static void backend_finish(struct cmp_opts *o, struct cmp_result *r)
{
	(void)o;
	cmp_result_none(r);
}

#include "cmp_harness.h"
