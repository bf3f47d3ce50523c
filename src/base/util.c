/* Arenas, growing arrays and strict number parsing (see base.h). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

struct rt_arena_chunk {
	struct rt_arena_chunk *next;
	size_t used, size;
	max_align_t data[];
};

void *rt_arena_alloc(struct rt_arena *a, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	struct rt_arena_chunk *c = a->head;
	if (!c || c->size - c->used < n) {
		size_t sz = n > 65536 ? n : 65536;
		c = malloc(sizeof(*c) + sz);
		if (!c)
			return NULL;
		c->size = sz;
		c->used = 0;
		c->next = a->head;
		a->head = c;
	}
	void *p = (char *)c->data + c->used;
	c->used += n;
	return p;
}

char *rt_arena_strdup(struct rt_arena *a, const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = rt_arena_alloc(a, n);
	if (p)
		memcpy(p, s, n);
	return p;
}

void rt_arena_free(struct rt_arena *a)
{
	while (a->head) {
		struct rt_arena_chunk *c = a->head;
		a->head = c->next;
		free(c);
	}
}

int rt_grow(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	uint32_t nc = *cap ? *cap * 2 : 16;
	while (nc < need)
		nc *= 2;
	void *p = realloc(*arr, (size_t)nc * elem);
	if (!p)
		return -1;
	*arr = p;
	*cap = nc;
	return 0;
}

int rt_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	if (!*s || (s[0] == '0' && s[1]))
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		unsigned d = (unsigned)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	if (v > max)
		return -1;
	*out = v;
	return 0;
}

int rt_parse_i64(const char *s, int64_t *out)
{
	uint64_t u;
	if (s[0] == '-') {
		if (rt_parse_u64(s + 1, (uint64_t)INT64_MAX + 1, &u) < 0 || u == 0)
			return -1;
		*out = (int64_t)(0 - u);
		return 0;
	}
	if (rt_parse_u64(s, INT64_MAX, &u) < 0)
		return -1;
	*out = (int64_t)u;
	return 0;
}

/* At most 40 bytes of a size, in a message about it. */
#define RT_SIZE_SHOWN 40

int rt_parse_size_in(const char *s, uint64_t min, uint64_t max, uint64_t *out, char *why,
		     size_t whylen)
{
	char digits[32];
	size_t n = strlen(s);
	unsigned shift = 0;
	if (n && strchr("kKmMgG", s[n - 1])) {
		char c = s[n - 1];
		shift = c == 'k' || c == 'K' ? 10 : c == 'm' || c == 'M' ? 20 : 30;
		n--;
	}
	uint64_t v;
	if (n == 0 || n >= sizeof(digits)) {
		if (why)
			snprintf(why, whylen,
				 "'%.*s' is not a size (digits and an optional k, m or g)",
				 RT_SIZE_SHOWN, s);
		return -1;
	}
	memcpy(digits, s, n);
	digits[n] = 0;
	if (rt_parse_u64(digits, UINT64_MAX >> shift, &v) < 0) {
		if (why)
			snprintf(why, whylen,
				 "'%.*s' is not a size (digits and an optional k, m or g, below "
				 "2^64 bytes)",
				 RT_SIZE_SHOWN, s);
		return -1;
	}
	v <<= shift;
	if (v < min || v > max) {
		if (why)
			snprintf(why, whylen,
				 "'%.*s' (%llu bytes) is out of range (%llu to %llu bytes)",
				 RT_SIZE_SHOWN, s, (unsigned long long)v, (unsigned long long)min,
				 (unsigned long long)max);
		return -1;
	}
	*out = v;
	return 0;
}

int rt_parse_size(const char *s, uint64_t *out)
{
	return rt_parse_size_in(s, 0, UINT64_MAX, out, NULL, 0);
}
