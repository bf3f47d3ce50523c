/*
 * src/fleet/rowbin.c - the byte buffer of the fleet layer and the
 * RowBinary encoding (fleet_api.h): what every value of a loaded trace
 * goes through, so each encoder is a capacity check and a copy.
 */
#include <stdlib.h>
#include <string.h>

#include "fleet/fleet_api.h"

int fl_buf_reserve(struct fl_buf *b, size_t need)
{
	if (b->cap - b->len >= need)
		return 0;
	if (need > SIZE_MAX / 2 - b->len)
		return FL_ENOMEM;
	/* doubling: a batch of a million rows grows in a few dozen steps */
	size_t cap = b->cap ? b->cap : 4096;
	while (cap - b->len < need)
		cap *= 2;
	uint8_t *p = realloc(b->p, cap);
	if (!p)
		return FL_ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

void fl_buf_free(struct fl_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

/* n bytes of v, little-endian (RowBinary's order on every host). */
static int put_le(struct fl_buf *b, uint64_t v, unsigned n)
{
	if (b->cap - b->len < n && fl_buf_reserve(b, n))
		return FL_ENOMEM;
	uint8_t *d = b->p + b->len;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	memcpy(d, &v, n);
#else
	for (unsigned i = 0; i < n; i++)
		d[i] = (uint8_t)(v >> (8 * i));
#endif
	b->len += n;
	return 0;
}

int fl_rb_i64(struct fl_buf *b, int64_t v)
{
	return put_le(b, (uint64_t)v, 8);
}

int fl_rb_u64(struct fl_buf *b, uint64_t v)
{
	return put_le(b, v, 8);
}

int fl_rb_u8(struct fl_buf *b, uint8_t v)
{
	return put_le(b, v, 1);
}

int fl_rb_u16(struct fl_buf *b, uint16_t v)
{
	return put_le(b, v, 2);
}

int fl_rb_f64(struct fl_buf *b, double v)
{
	uint64_t u;
	memcpy(&u, &v, 8);
	return put_le(b, u, 8);
}

int fl_rb_str(struct fl_buf *b, const void *p, size_t len)
{
	/* the length as LEB128 (at most 10 bytes), then the bytes */
	if (len > SIZE_MAX / 4)
		return FL_ENOMEM;
	if (b->cap - b->len < len + 10 && fl_buf_reserve(b, len + 10))
		return FL_ENOMEM;
	uint8_t *d = b->p + b->len;
	size_t n = len;
	while (n >= 0x80) {
		*d++ = (uint8_t)(n | 0x80);
		n >>= 7;
	}
	*d++ = (uint8_t)n;
	if (len)
		memcpy(d, p, len);
	b->len = (size_t)(d - b->p) + len;
	return 0;
}

int fl_rb_null(struct fl_buf *b)
{
	return put_le(b, 1, 1);
}

int fl_rb_notnull(struct fl_buf *b)
{
	return put_le(b, 0, 1);
}
