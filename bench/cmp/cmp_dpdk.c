/*
 * cmp-dpdk: DPDK rte_trace (22.11), cmp_trace_ev(v) (cmp_dpdk_tp.h).
 *
 * The EAL starts as a DPDK application on this machine can: no hugepages
 * (--no-huge -m 256), no PCI scan, no shared config, no telemetry thread,
 * the main lcore on --cpu (-l). Enabled adds --trace=^cmp\.ev$,
 * --trace-mode=discard|overwrite, --trace-dir=DIR and --trace-bufsz=BYTES
 * (the per-thread buffer; default 1 MiB).
 *
 * Fairness notes:
 * - rte_trace allocates a thread's buffer at its first event and nothing
 *   touches it before, so the first pass over it is page faults. After
 *   the common warm-up, backend_ready() writes events until the whole
 *   buffer has been covered, then sets its write offset back to 0 (the
 *   header is public, rte_trace_point.h): the timed loop starts on an
 *   empty, resident buffer, as ringtrace's (MAP_POPULATE) and LTTng's
 *   (populated by the consumer daemon) are. With --threads K this is
 *   done by every writer thread for its own buffer: DPDK allocates one
 *   per thread at its first event, also in a plain pthread that is not
 *   an EAL lcore (the writers here are), so the warm-up allocates it and
 *   backend_ready fills it; otherwise the extra writers' timed loops
 *   would take the page faults.
 * - rte_trace has no consumer: the buffer is saved by rte_trace_save() at
 *   the end. Discard mode stops recording when the buffer is full, without
 *   counting; overwrite mode restarts at offset 0, and what is saved is
 *   only what follows the last wrap. It has no nesting guard (an event in
 *   a signal handler corrupts the one it interrupts) and nothing in it
 *   survives a crash.
 * Counts: recorded = events in the buffers (each writer's offset / 16
 * bytes per event: 8-byte header + int, 8-aligned, summed over the
 * writers); expected = K x N (the warm-up and the fill are rewound away);
 * lost (discard) = calls not recorded, as DPDK does not count them; the
 * script also counts the saved trace with babeltrace2.
 */
#include <pthread.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_trace.h>

#include "cmp.h"
#include "cmp_dpdk_tp.h"

static const char backend_name[] = "dpdk";

#define CMP_DPDK_EV_SIZE 16u

static inline void cmp_emit(int v)
{
	cmp_trace_ev(v);
}

static int backend_init(struct cmp_opts *o)
{
	static char lcore[16], trace_dir[4200], bufsz[48], mode[32];
	char *args[32];
	int n = 0;
	args[n++] = (char *)"cmp-dpdk";
	snprintf(lcore, sizeof(lcore), "%d", o->cpu);
	args[n++] = (char *)"-l";
	args[n++] = lcore;
	args[n++] = (char *)"--no-huge";
	args[n++] = (char *)"-m";
	args[n++] = (char *)"256";
	args[n++] = (char *)"--no-pci";
	args[n++] = (char *)"--no-shconf";
	args[n++] = (char *)"--no-telemetry";
	args[n++] = (char *)"--log-level=*:error";
	if (!o->off) {
		if (!o->dir)
			cmp_die("cmp-dpdk needs --dir");
		args[n++] = (char *)"--trace=^cmp\\.ev$";
		snprintf(mode, sizeof(mode), "--trace-mode=%s", o->mode);
		args[n++] = mode;
		snprintf(trace_dir, sizeof(trace_dir), "--trace-dir=%s", o->dir);
		args[n++] = trace_dir;
		if (o->buffer) {
			snprintf(bufsz, sizeof(bufsz), "--trace-bufsz=%llu",
				 (unsigned long long)o->buffer);
			args[n++] = bufsz;
		}
	}
	args[n] = NULL;
	if (rte_eal_init(n, args) < 0)
		cmp_die("rte_eal_init failed: %s", rte_strerror(rte_errno));
	if (!o->off && !rte_trace_is_enabled())
		cmp_die("rte_trace is not enabled after --trace");
	return 0;
}

static struct __rte_trace_header *cmp_dpdk_buffer(void)
{
	return (struct __rte_trace_header *)RTE_PER_LCORE(trace_mem);
}

/* Every writer thread's buffer, registered by the thread itself in
 * backend_ready, read by backend_finish once the writers are done. */
#define CMP_DPDK_MAX_WRITERS 256
static struct __rte_trace_header *cmp_dpdk_writers[CMP_DPDK_MAX_WRITERS];
static unsigned cmp_dpdk_nwriters;
static pthread_mutex_t cmp_dpdk_lock = PTHREAD_MUTEX_INITIALIZER;

/* In each writer thread, after its warm-up. */
static void backend_ready(const struct cmp_opts *o)
{
	if (o->off)
		return;
	struct __rte_trace_header *h = cmp_dpdk_buffer();
	if (!h)
		cmp_die("rte_trace: no per-thread buffer after the warm-up");
	/* Cover the whole buffer (wraps in overwrite mode, stops at full in
	 * discard mode), then start the timed loop on an empty buffer. */
	uint64_t fill = h->len / CMP_DPDK_EV_SIZE + 16;
	for (uint64_t i = 0; i < fill; i++)
		cmp_emit((int)i);
	h->offset = 0;
	pthread_mutex_lock(&cmp_dpdk_lock);
	if (cmp_dpdk_nwriters == CMP_DPDK_MAX_WRITERS)
		cmp_die("more than %d writer threads", CMP_DPDK_MAX_WRITERS);
	cmp_dpdk_writers[cmp_dpdk_nwriters++] = h;
	pthread_mutex_unlock(&cmp_dpdk_lock);
}

static void backend_finish(struct cmp_opts *o, struct cmp_result *r)
{
	if (o->off) {
		r->recorded = r->lost = 0;
		r->expected = 0;
		rte_eal_cleanup();
		return;
	}
	/* The writers have been joined: their buffers are no longer written.
	 * DPDK keeps a thread's buffer after the thread exits (until
	 * rte_eal_cleanup), so rte_trace_save below writes them all. */
	if (cmp_dpdk_nwriters != o->threads)
		cmp_die("%u writer buffers registered, %u writers", cmp_dpdk_nwriters, o->threads);
	uint64_t kept = 0, expected = (uint64_t)o->threads * o->n;
	for (unsigned i = 0; i < cmp_dpdk_nwriters; i++)
		kept += (cmp_dpdk_writers[i]->offset + CMP_DPDK_EV_SIZE - 1) / CMP_DPDK_EV_SIZE;
	r->expected = expected; /* each writer's warm-up and fill were rewound away */
	r->recorded = (int64_t)kept;
	r->lost = o->overwrite ? 0 : (int64_t)(expected - kept);
	snprintf(r->note, sizeof(r->note), "buffer=%u bytes%s%s", cmp_dpdk_writers[0]->len,
		 o->threads > 1 ? " per thread" : "",
		 o->overwrite && kept < expected ? ", wrapped: only events after the last wrap kept"
						 : "");
	if (rte_trace_save() < 0)
		cmp_die("rte_trace_save failed");
	rte_eal_cleanup();
}

#include "cmp_harness.h"
