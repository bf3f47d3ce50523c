/*
 * cmp-usdt: a USDT probe, DTRACE_PROBE1(cmp, ev, v) from <sys/sdt.h>
 * (systemtap-sdt-dev), the static probe that bpftrace, perf and SystemTap
 * attach to with a uprobe.
 *
 * Unattached it is a nop instruction. Attached (bench/compare runs
 * `bpftrace -p PID -e 'usdt:BIN:cmp:ev { @c = count(); }'`), every hit is
 * a breakpoint trap into the kernel that runs the BPF program. The
 * program waits (--wait FIFO) until bpftrace says it is attached before
 * its warm-up; the script compares bpftrace's @c with the calls.
 * No semaphore: the probe site is the same whether attached or not.
 */
#include <sys/sdt.h>

#include "cmp.h"

static const char backend_name[] = "usdt";

static inline void cmp_emit(int v)
{
	DTRACE_PROBE1(cmp, ev, v);
}

CMP_NO_INIT

CMP_NO_READY

static void backend_finish(struct cmp_opts *o, struct cmp_result *r)
{
	if (o->off)
		cmp_result_none(r);
}

#include "cmp_harness.h"
