/*
 * src/base/heap.h - the merge heap: a binary min-heap of source indices.
 *
 * Everything in ringtrace that merges sources of events by timestamp uses
 * it: the ring buffer's event iterator and snapshot (pages of several
 * writers, src/ring/merge.c) and the trace reader (stream files,
 * src/read/stream.c). The heap holds indices; the caller's `less` says
 * which of two sources comes first. The functions are inline and the
 * comparison is passed as a constant, so each user gets the comparison
 * inlined into its own copy (the reader merges millions of events a
 * second through it).
 *
 * A merge loop: push every source that has an event; then repeatedly read
 * the top source's event, advance that source, and call
 * rt_heap_fix_top() saying whether it still has one.
 */
#ifndef RINGTRACE_BASE_HEAP_H
#define RINGTRACE_BASE_HEAP_H

#include <stdint.h>

/* 1 if source a comes before source b. */
typedef int (*rt_heap_less_fn)(const void *ctx, uint32_t a, uint32_t b);

static inline __attribute__((always_inline)) void rt_heap_up(uint32_t *heap, uint32_t i,
							     rt_heap_less_fn less, const void *ctx)
{
	while (i > 0) {
		uint32_t p = (i - 1) / 2;
		if (!less(ctx, heap[i], heap[p]))
			return;
		uint32_t t = heap[i];
		heap[i] = heap[p];
		heap[p] = t;
		i = p;
	}
}

static inline __attribute__((always_inline)) void rt_heap_down(uint32_t *heap, uint32_t n,
							       uint32_t i, rt_heap_less_fn less,
							       const void *ctx)
{
	for (;;) {
		uint32_t l = 2 * i + 1, m = i;
		if (l < n && less(ctx, heap[l], heap[m]))
			m = l;
		if (l + 1 < n && less(ctx, heap[l + 1], heap[m]))
			m = l + 1;
		if (m == i)
			return;
		uint32_t t = heap[i];
		heap[i] = heap[m];
		heap[m] = t;
		i = m;
	}
}

/* Add source v (the array has room for every source). */
static inline __attribute__((always_inline)) void rt_heap_push(uint32_t *heap, uint32_t *n,
							       uint32_t v, rt_heap_less_fn less,
							       const void *ctx)
{
	heap[*n] = v;
	(*n)++;
	rt_heap_up(heap, *n - 1, less, ctx);
}

/*
 * The top source has moved on: keep it (alive: it has another event, whose
 * key may be later now) or drop it (exhausted), and restore the order.
 */
static inline __attribute__((always_inline)) void rt_heap_fix_top(uint32_t *heap, uint32_t *n,
								  int alive, rt_heap_less_fn less,
								  const void *ctx)
{
	if (!alive)
		heap[0] = heap[--*n];
	if (*n > 1)
		rt_heap_down(heap, *n, 0, less, ctx);
}

#endif /* RINGTRACE_BASE_HEAP_H */
