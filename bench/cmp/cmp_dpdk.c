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
 *   (populated by the consumer daemon) are.
 * - rte_trace has no consumer: the buffer is saved by rte_trace_save() at
 *   the end. Discard mode stops recording when the buffer is full, without
 *   counting; overwrite mode restarts at offset 0, and what is saved is
 *   only what follows the last wrap. It has no nesting guard (an event in
 *   a signal handler corrupts the one it interrupts) and nothing in it
 *   survives a crash.
 * Counts: recorded = events in the buffer (its offset / 16 bytes per
 * event: 8-byte header + int, 8-aligned); lost (discard) = calls not
 * recorded, as DPDK does not count them; the script also counts the saved
 * trace with babeltrace2.
 */
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

static void backend_ready(struct cmp_opts *o, struct cmp_result *r)
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
	r->expected = o->n;
}

static void backend_finish(struct cmp_opts *o, struct cmp_result *r)
{
	if (o->off) {
		r->recorded = r->lost = 0;
		r->expected = 0;
		rte_eal_cleanup();
		return;
	}
	struct __rte_trace_header *h = cmp_dpdk_buffer();
	uint64_t kept = (h->offset + CMP_DPDK_EV_SIZE - 1) / CMP_DPDK_EV_SIZE;
	r->recorded = (int64_t)kept;
	r->lost = o->overwrite ? 0 : (int64_t)(o->n - kept);
	snprintf(r->note, sizeof(r->note), "buffer=%u bytes%s", h->len,
		 o->overwrite && kept < o->n ? ", wrapped: only events after the last wrap kept"
					     : "");
	if (rte_trace_save() < 0)
		cmp_die("rte_trace_save failed");
	rte_eal_cleanup();
}

#include "cmp_harness.h"
