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

static int backend_init(struct cmp_opts *o)
{
	(void)o;
	return 0;
}

static void backend_ready(struct cmp_opts *o, struct cmp_result *r)
{
	(void)o;
	(void)r;
}

static void backend_finish(struct cmp_opts *o, struct cmp_result *r)
{
	(void)o;
	r->recorded = r->lost = 0;
	r->expected = 0;
}

#include "cmp_harness.h"
