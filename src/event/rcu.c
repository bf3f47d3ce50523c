/*
 * Read-side critical sections for tracepoints: a small RCU.
 *
 * Why: a tracepoint calls probes and writes into the events buffer while,
 * on another thread, someone may unregister that probe (and free its
 * data) or detach and destroy the buffer. The tracepoint must not pay for
 * a lock or an atomic read-modify-write, so the updater does the waiting.
 *
 * Each thread owns a reader node. Entering a section stores the constant
 * RINGTRACE_RCU_IN_ (odd) into the node; leaving stores 0 (one plain
 * store each, and the entry loads nothing for its value; nesting, e.g. a
 * signal handler's tracepoint inside another, only counts). An updater
 * publishes the new state (probe set, buffer pointer), then calls
 * ringtrace_synchronize(), which
 *
 *   1. runs membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED): every running
 *      thread executes a full barrier. Afterwards, a reader whose entry
 *      store is not visible to us cannot have loaded the old state: its
 *      load comes after that barrier, which comes after our publication.
 *      (Without membarrier, readers add a full fence themselves:
 *      ringtrace_rcu_fence_, and RINGTRACE_EVC_FENCE in the events
 *      cookie sends the recording fast path, which does not fence, the
 *      general way.)
 *   2. for every node inside a section (RINGTRACE_RCU_IN_), marks that
 *      section: a compare-and-swap from RINGTRACE_RCU_IN_ to RT_RCU_MARKED,
 *      and waits until the node holds something else. Only the reader's
 *      exit changes a marked value (to 0; its next entry stores
 *      RINGTRACE_RCU_IN_, never the mark), so the wait ends when the
 *      section that was open at the swap ends: every section that might
 *      have seen the old state was open then or had ended. A node that
 *      holds 0 is outside any section, and its next one sees the new
 *      state.
 *
 * Why it is bounded: each node holds the updater up for one section at
 * most, the one it marked; the sections that follow store a value it
 * does not wait on, so a thread that keeps entering sections cannot hold
 * the updater up (a waiter that compared only "inside or not" could miss
 * every exit of a thread that records in a loop). The reader needs no
 * atomic operation: the swap fails if the reader has stored 0 in between
 * (nothing to wait for) and, if the reader has left and entered again in
 * between, marks the newer section, which is waited for needlessly but
 * ends as well. The reader's own tests see a marked node as inside a
 * section (non-zero, odd), as they should.
 *
 * No section can have begun before a thread takes its first node, and the
 * process registers for membarrier only then (ringtrace_read_register_,
 * rt_rcu_register): a process that never enters a section (one that
 * nobody traces) makes no membarrier call, neither at start nor when its
 * events unregister at exit or dlclose, whose grace periods have nothing
 * to wait for. The registration precedes the node, so that the fence mode
 * (registration refused) is in force before any section begins.
 *
 * Nodes live in a list that only grows (each mmap'd alone, so that a
 * thread's first tracepoint may be in a signal handler); a thread that
 * exits marks its node free for the next thread.
 */
#define _GNU_SOURCE
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "event/event_internal.h"

/* seq is never 0 here: a thread pointing at it cannot enter the fast way. */
struct ringtrace_reader_node ringtrace_rnode_none_ = {.seq = 2};
__thread struct ringtrace_thr_ ringtrace_thr_ __attribute__((tls_model("initial-exec"))) = {
	.rnode = &ringtrace_rnode_none_,
	.cookie = RINGTRACE_THR_NO_COOKIE_,
};
int ringtrace_rcu_fence_;

/* A section that a grace period waits for (odd, as RINGTRACE_RCU_IN_). */
#define RT_RCU_MARKED 3u

/* Readers fence themselves from now on; for good. */
static void rt_readers_fence(void)
{
	__atomic_store_n(&ringtrace_rcu_fence_, 1, __ATOMIC_SEQ_CST);
	__atomic_fetch_or(&ringtrace_events_cookie_, (uint64_t)RINGTRACE_EVC_FENCE,
			  __ATOMIC_SEQ_CST);
}

static struct ringtrace_reader_node *rt_nodes; /* push-only list */
static pthread_mutex_t rt_sync_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t rt_node_key;
static int rt_use_membarrier;
/*
 * 0 until a thread first takes a reader node (no section has begun yet);
 * then RT_RCU_MEMBARRIER, or RT_RCU_FENCE where the registration was
 * refused (readers fence themselves). Set once; seq_cst, see
 * ringtrace_synchronize().
 */
enum { RT_RCU_NONE, RT_RCU_MEMBARRIER, RT_RCU_FENCE };
static int rt_rcu_mode;

static void rt_node_release(void *arg)
{
	struct ringtrace_reader_node *n = arg;
	ringtrace_thr_.rnode = &ringtrace_rnode_none_;
	if (n && n != &ringtrace_rnode_none_) {
		/* A section left by unwinding (a C++ exception through a probe,
		 * pthread_exit or longjmp in one) must not hold up updaters. */
		n->nest = 0;
		__atomic_store_n(&n->seq, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&n->in_use, 0, __ATOMIC_RELEASE);
	}
}

/*
 * In a forked child only the forking thread exists: the other threads'
 * nodes must not make synchronize() wait for sections that will never end.
 */
static void rt_rcu_atfork_child(void)
{
	struct ringtrace_reader_node *self = ringtrace_thr_.rnode;
	pthread_mutex_init(&rt_sync_lock, NULL);
	for (struct ringtrace_reader_node *n = rt_nodes; n; n = n->next) {
		if (n == self)
			continue;
		n->nest = 0;
		n->seq = 0;
		n->in_use = 0;
	}
}

/* (the key in a constructor: a low index, whose setspecific never allocates) */
__attribute__((constructor(101))) static void rt_rcu_init(void)
{
	pthread_key_create(&rt_node_key, rt_node_release);
	pthread_atfork(NULL, NULL, rt_rcu_atfork_child);
}

/*
 * Before the first node is taken: register for the expedited barrier, or
 * make readers fence. Async-signal-safe (a thread's first section may be
 * in a signal handler): one system call; two threads racing here both
 * make it (registering twice is harmless), the first to finish decides.
 * In a process with threads the kernel waits for a grace period of its
 * own here (milliseconds): a session's start calls this
 * (rt_rcu_spare_nodes), as does a probe's registration, so that the first
 * event does not.
 */
void rt_rcu_register(void)
{
	if (__atomic_load_n(&rt_rcu_mode, __ATOMIC_SEQ_CST) != RT_RCU_NONE)
		return;
	int mode = RT_RCU_FENCE;
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0) {
		__atomic_store_n(&rt_use_membarrier, 1, __ATOMIC_RELAXED);
		mode = RT_RCU_MEMBARRIER;
	} else {
		rt_readers_fence();
	}
	int none = RT_RCU_NONE;
	__atomic_compare_exchange_n(&rt_rcu_mode, &none, mode, 0, __ATOMIC_SEQ_CST,
				    __ATOMIC_SEQ_CST);
}

/* Push c on the list with in_use as given; c. */
static struct ringtrace_reader_node *rt_node_push(struct ringtrace_reader_node *c, uint32_t in_use)
{
	c->in_use = in_use;
	struct ringtrace_reader_node *head = __atomic_load_n(&rt_nodes, __ATOMIC_RELAXED);
	do {
		c->next = head;
	} while (!__atomic_compare_exchange_n(&rt_nodes, &head, c, 1, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
	return c;
}

/*
 * A new node, pushed on the list with in_use as given (1: the caller's;
 * 0: a spare for a thread to come), or NULL if it cannot be mapped.
 *
 * Each node is mapped for itself (mmap is async-signal-safe, malloc is
 * not). One node a mapping, not a chunk of them: a node is a page and
 * more (its counters), and linking a chunk's nodes would touch every page
 * of it, page faults that the first event of the first thread would pay
 * for. Populated here: both of its pages are written at once anyway.
 */
static struct ringtrace_reader_node *rt_node_map(uint32_t in_use)
{
	struct ringtrace_reader_node *c = mmap(NULL, sizeof(*c), PROT_READ | PROT_WRITE,
					       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (c == MAP_FAILED)
		return NULL;
	return rt_node_push(c, in_use);
}

/*
 * Nodes for threads that need one while mmap fails (memory or mappings
 * exhausted): a reader cannot enter a section without a node, and it must
 * not wait for memory to come back. Static, so that nothing has to be
 * allocated; untouched (no resident memory) until used. Once pushed, a
 * reserve node is reused like any other when its thread exits.
 */
#define RT_RESERVE_NODES 16u
static struct ringtrace_reader_node rt_reserve[RT_RESERVE_NODES];
static uint32_t rt_reserve_used;

static struct ringtrace_reader_node *rt_node_reserve(void)
{
	uint32_t i = __atomic_load_n(&rt_reserve_used, __ATOMIC_RELAXED);
	do {
		if (i >= RT_RESERVE_NODES)
			return NULL;
	} while (!__atomic_compare_exchange_n(&rt_reserve_used, &i, i + 1, 1, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return rt_node_push(&rt_reserve[i], 1);
}

void rt_rcu_spare_nodes(uint32_t want)
{
	rt_rcu_register();
	uint32_t free_nodes = 0;
	for (struct ringtrace_reader_node *n = __atomic_load_n(&rt_nodes, __ATOMIC_ACQUIRE);
	     n && free_nodes < want; n = n->next)
		free_nodes += __atomic_load_n(&n->in_use, __ATOMIC_RELAXED) == 0;
	/* (a node that cannot be mapped now is mapped by its thread later) */
	for (; free_nodes < want; free_nodes++)
		if (!rt_node_map(0))
			break;
}

struct ringtrace_reader_node *ringtrace_read_register_(void)
{
	struct ringtrace_reader_node *n;
	rt_rcu_register();
	for (;;) {
		for (n = __atomic_load_n(&rt_nodes, __ATOMIC_ACQUIRE); n; n = n->next) {
			uint32_t z = 0;
			if (__atomic_load_n(&n->in_use, __ATOMIC_RELAXED) == 0 &&
			    __atomic_compare_exchange_n(&n->in_use, &z, 1, 0, __ATOMIC_ACQUIRE,
							__ATOMIC_RELAXED))
				goto got;
		}
		if ((n = rt_node_map(1)) || (n = rt_node_reserve()))
			break;
		/* Memory exhausted and every reserve node held by a live
		 * thread: wait for one of them to exit (or for memory) without
		 * spinning; nanosleep is async-signal-safe, as this must be. */
		struct timespec d = {0, 1000000};
		nanosleep(&d, NULL);
	}
got:
	n->nest = 0;
	__atomic_store_n(&n->seq, 0, __ATOMIC_RELAXED);
	ringtrace_thr_.rnode = n;
	pthread_setspecific(rt_node_key, n);
	/* The mode's store (or load) before anything this thread's sections
	 * load: an updater that found no mode set (ringtrace_synchronize) has
	 * published before we look. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return n;
}

void ringtrace_synchronize(void)
{
	pthread_mutex_lock(&rt_sync_lock);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	/*
	 * No thread has taken a node: no section has begun, and one that
	 * begins now sees what the caller published (its thread's fence after
	 * setting the mode pairs with ours before this load). Nothing to wait
	 * for, and no barrier to send.
	 */
	if (__atomic_load_n(&rt_rcu_mode, __ATOMIC_SEQ_CST) == RT_RCU_NONE) {
		pthread_mutex_unlock(&rt_sync_lock);
		return;
	}
	if (!__atomic_load_n(&rt_use_membarrier, __ATOMIC_RELAXED) ||
	    syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
		/*
		 * membarrier failed (a seccomp filter installed after start?):
		 * from now on readers fence themselves. Sections that began before
		 * they saw the flag may not be visible to us yet; waiting a few
		 * scheduler ticks makes it likely, not certain, that every running
		 * thread passed a context switch (a full barrier) before we look.
		 * Best effort for a case that should not happen.
		 */
		if (!__atomic_load_n(&ringtrace_rcu_fence_, __ATOMIC_RELAXED)) {
			rt_readers_fence();
			struct timespec d = {0, 20 * 1000 * 1000};
			nanosleep(&d, NULL);
		}
		__atomic_store_n(&rt_use_membarrier, 0, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	}
	for (struct ringtrace_reader_node *n = __atomic_load_n(&rt_nodes, __ATOMIC_ACQUIRE); n;
	     n = n->next) {
		uint64_t s = RINGTRACE_RCU_IN_;
		/* (a failed swap leaves the value seen in s: 0, outside; or a
		 * mark left by a grace period of a forked parent: wait for it) */
		if (!__atomic_compare_exchange_n(&n->seq, &s, RT_RCU_MARKED, 0, __ATOMIC_SEQ_CST,
						 __ATOMIC_ACQUIRE) &&
		    s != RT_RCU_MARKED)
			continue;
		for (unsigned spins = 0;
		     __atomic_load_n(&n->seq, __ATOMIC_ACQUIRE) == RT_RCU_MARKED; spins++) {
			if (spins < 100) {
				sched_yield();
			} else {
				struct timespec d = {0, 50000};
				nanosleep(&d, NULL);
			}
		}
	}
	pthread_mutex_unlock(&rt_sync_lock);
}

uint64_t rt_rcu_slot_sum(uint32_t slot)
{
	uint64_t sum = 0;
	for (struct ringtrace_reader_node *n = __atomic_load_n(&rt_nodes, __ATOMIC_ACQUIRE); n;
	     n = n->next)
		sum += __atomic_load_n(&n->count[0][slot], __ATOMIC_RELAXED) +
		       __atomic_load_n(&n->count[1][slot], __ATOMIC_RELAXED);
	return sum;
}

void rt_rcu_slot_clear(uint32_t slot)
{
	for (struct ringtrace_reader_node *n = __atomic_load_n(&rt_nodes, __ATOMIC_ACQUIRE); n;
	     n = n->next) {
		__atomic_store_n(&n->count[0][slot], 0, __ATOMIC_RELAXED);
		__atomic_store_n(&n->count[1][slot], 0, __ATOMIC_RELAXED);
	}
}
