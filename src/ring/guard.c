/*
 * The SIGBUS guard of readers that attached a pool made by another process.
 *
 * Such a pool is a shared-memory object that its creator, or anyone else
 * allowed to open it, can shrink with ftruncate() while we have it mapped:
 * the next access to a page beyond the new end raises SIGBUS, which would
 * kill the reader (`ringtrace record`, `ringtrace recover`). Checking the
 * size first (fstat) cannot help, since the object can shrink right after
 * the check; reading through pread() instead of the mapping cannot do the
 * atomic operations a consuming reader needs (popping the FIFO, the flush
 * handshake); sealing (F_SEAL_SHRINK) needs the creator's cooperation and
 * a memfd, while pools are also named POSIX objects. So each pass over the
 * mapping runs under a guard:
 *
 *  - one process-wide SIGBUS handler, installed at the first guarded pass
 *    (pthread_once), remembering the disposition it replaced;
 *  - a thread-local stack of guards, each a sigjmp_buf and the address
 *    range of the mapping it covers, pushed by rt_guard_range() around the
 *    pass and popped after it;
 *  - the handler: a fault (si_code > 0) at an address inside the range of
 *    a guard of the faulting thread jumps back to that guard's
 *    sigsetjmp, which returns RT_GUARD_FAULT; anything else goes to the
 *    previous handler (or, if there was none, the default action is
 *    restored and the signal happens again: a genuine bug still dumps
 *    core where it happened).
 *
 * Async-signal-safety: the handler only reads its thread's guard stack
 * (initial-exec TLS: no allocation on first access) and calls siglongjmp,
 * sigaction and raise. Leaving a pass by siglongjmp is safe because the
 * fault can only be raised by an instruction of the pass that touches the
 * mapping: at that instant no lock is held and no allocation is half-done
 * in the pass (passes allocate nothing that the caller cannot free: see
 * rt_guard_run). The handler is installed with SA_NODEFER and an empty
 * mask, so the signal mask inside it is the pass's own, and sigsetjmp
 * need not save it (no system call per pass).
 *
 * Not guarded: the writing program (a handle that created the pool). It
 * keeps its writers' mmap'ed fast path, and its signal dispositions are
 * its own business: nothing is installed unless the process attaches a
 * pool made elsewhere. A program that replaces the SIGBUS handler after
 * that loses the guard (its handler then gets the fault).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "ring/ring_internal.h"

struct rt_guard {
	sigjmp_buf jb;
	const char *lo, *hi;
	struct rt_guard *prev;
};

static __thread struct rt_guard *rt_guard_top __attribute__((tls_model("initial-exec")));
static struct sigaction rt_prev_bus;
static pthread_once_t rt_guard_once = PTHREAD_ONCE_INIT;
static int rt_guard_ok; /* the handler is installed */

static void rt_bus_handler(int sig, siginfo_t *si, void *ctx)
{
	if (si && si->si_code > 0) { /* a fault, not a kill() */
		const char *a = (const char *)si->si_addr;
		for (struct rt_guard *g = __atomic_load_n(&rt_guard_top, __ATOMIC_RELAXED); g;
		     g = g->prev)
			if (a >= g->lo && a < g->hi)
				siglongjmp(g->jb, 1);
	}
	/* Not ours: whatever was there before us. */
	if (rt_prev_bus.sa_flags & SA_SIGINFO) {
		if (rt_prev_bus.sa_sigaction) {
			rt_prev_bus.sa_sigaction(sig, si, ctx);
			return;
		}
	} else if (rt_prev_bus.sa_handler != SIG_DFL && rt_prev_bus.sa_handler != SIG_IGN) {
		rt_prev_bus.sa_handler(sig);
		return;
	}
	/*
	 * Default action (an ignored SIGBUS from a fault is fatal as well):
	 * restore it; a fault happens again when we return, a signal sent by
	 * kill() is raised again (SA_NODEFER: not blocked here).
	 */
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(SIGBUS, &dfl, NULL);
	if (!si || si->si_code <= 0)
		raise(SIGBUS);
}

static void rt_guard_install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = rt_bus_handler;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &rt_prev_bus) == 0)
		__atomic_store_n(&rt_guard_ok, 1, __ATOMIC_RELEASE);
}

/*
 * The pass runs in a frame of its own (noinline) below the sigsetjmp: a
 * jump back abandons it whole, and nothing of this frame changes between
 * the sigsetjmp and the jump (the guard record is written before).
 */
int rt_guard_range(const char *base, size_t size, int (*fn)(void *arg), void *arg)
{
	pthread_once(&rt_guard_once, rt_guard_install);
	if (!__atomic_load_n(&rt_guard_ok, __ATOMIC_ACQUIRE))
		return fn(arg); /* (no handler: unguarded, as before) */
	struct rt_guard g;
	g.lo = base;
	g.hi = base + size;
	g.prev = rt_guard_top;
	if (sigsetjmp(g.jb, 0)) {
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		rt_guard_top = g.prev;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		return RT_GUARD_FAULT;
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	rt_guard_top = &g;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	int r = fn(arg);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	rt_guard_top = g.prev;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return r;
}

struct rt_pass {
	struct ringtrace_rb *rb;
	rt_pass_fn fn;
	void *arg;
};

static int rt_pass_call(void *arg)
{
	struct rt_pass *p = arg;
	return p->fn(p->rb, p->arg);
}

int rt_guard_run(const struct ringtrace_rb *crb, rt_pass_fn fn, void *arg)
{
	/* (the handle's own flags: never the pool's) */
	struct ringtrace_rb *rb = (struct ringtrace_rb *)(uintptr_t)crb;
	if (rb->owner)
		return fn(rb, arg);
	if (RT_LOAD_ACQ(&rb->gone))
		return rt_pool_check_damaged(rb, 1);
	struct rt_pass p = {rb, fn, arg};
	int r = rt_guard_range(rb->h.base, rb->map_size, rt_pass_call, &p);
	if (r != RT_GUARD_FAULT)
		return r;
	RT_STORE_REL(&rb->gone, 1);
	struct stat st;
	long long now = fstat(rb->fd, &st) == 0 ? (long long)st.st_size : -1;
	return rt_pool_damaged(rb, 0,
			       "the shared memory object shrank under the reader (%lld bytes now, "
			       "%zu mapped): SIGBUS reading it",
			       now, rb->map_size);
}
