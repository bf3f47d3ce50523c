/* bench/cmp/cmp_lttng_tp.c - the probe of cmp_lttng_tp.h, linked into cmp-lttng. */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "cmp_lttng_tp.h"
