/*
 * cmp-lttng: lttng_ust_tracepoint(cmp, ev, v), LTTng-UST 2.13.
 *
 * The program is linked with liblttng-ust: its constructor registers with
 * the session daemon bench/compare started (and waits for it, up to
 * LTTNG_UST_REGISTER_TIMEOUT), so the event is enabled before main() when
 * a session enabling it is active. The session, the channel settings and
 * the counting of the trace (babeltrace2, and the channel's discarded
 * events) are all in the script: --off is simply a run without a session,
 * the tracepoint compiled in and disabled.
 */
#include "cmp.h"
#include "cmp_lttng_tp.h"

static const char backend_name[] = "lttng-ust";

static inline void cmp_emit(int v)
{
	lttng_ust_tracepoint(cmp, ev, v);
}

CMP_NO_INIT

CMP_NO_READY

static void backend_finish(struct cmp_opts *o, struct cmp_result *r)
{
	if (o->off)
		cmp_result_none(r);
}

#include "cmp_harness.h"
