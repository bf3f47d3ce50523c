/* Escaping text from a trace for the terminal (base.h, rt_esc). */
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

#define ESC_NBUF 8
#define ESC_MAX_IN 4096

static char *bufs[ESC_NBUF];
static unsigned turn;

static void esc_free(void)
{
	for (unsigned i = 0; i < ESC_NBUF; i++) {
		free(bufs[i]);
		bufs[i] = NULL;
	}
}

const char *rt_esc(const char *s)
{
	static const char hex[] = "0123456789abcdef";
	static int registered;
	if (!s)
		return "";
	size_t n = strnlen(s, ESC_MAX_IN + 1), i;
	for (i = 0; i < n; i++) {
		unsigned char b = (unsigned char)s[i];
		if (b < 0x20 || b == 0x7f || b == 0xc2)
			break;
	}
	if (i == n && n <= ESC_MAX_IN)
		return s; /* nothing to escape: the text itself */
	if (!registered) {
		registered = 1;
		atexit(esc_free);
	}
	char **slot = &bufs[turn++ % ESC_NBUF];
	if (!*slot && !(*slot = malloc(ESC_MAX_IN * 4 + 4)))
		return "(out of memory)";
	char *o = *slot;
	size_t m = n > ESC_MAX_IN ? ESC_MAX_IN : n;
	for (i = 0; i < m; i++) {
		unsigned char b = (unsigned char)s[i];
		unsigned char b2 = i + 1 < m ? (unsigned char)s[i + 1] : 0;
		int c1 = b == 0xc2 && b2 >= 0x80 && b2 <= 0x9f;
		if (b < 0x20 || b == 0x7f || c1) {
			for (int k = 0; k <= c1; k++) {
				unsigned char v = k ? b2 : b;
				*o++ = '\\';
				*o++ = 'x';
				*o++ = hex[v >> 4];
				*o++ = hex[v & 15];
			}
			i += (size_t)c1;
		} else {
			*o++ = (char)b;
		}
	}
	if (n > ESC_MAX_IN) {
		memcpy(o, "...", 3);
		o += 3;
	}
	*o = 0;
	return *slot;
}
