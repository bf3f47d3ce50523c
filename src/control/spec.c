/*
 * Lists of filters and triggers: "a;b" split at ';' outside double-quoted
 * strings (RINGTRACE_FILTERS, RINGTRACE_TRIGGERS, `ringtrace record -f` and
 * `--trigger`), event pattern lists "a,b*,c", applied all or nothing.
 */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "control/control_internal.h"

int rt_list_match(const char *list, const char *name)
{
	const char *p = list;
	while (*p) {
		const char *c = strchr(p, ',');
		size_t n = c ? (size_t)(c - p) : strlen(p);
		char one[256];
		while (n && *p == ' ')
			p++, n--;
		while (n && p[n - 1] == ' ')
			n--;
		if (n && n < sizeof(one)) {
			memcpy(one, p, n);
			one[n] = 0;
			if (fnmatch(one, name, 0) == 0)
				return 1;
		}
		if (!c)
			break;
		p = c + 1;
	}
	return 0;
}

int rt_check_list(const char *list)
{
	char *copy = strdup(list);
	if (!copy)
		return rt_error(RINGTRACE_ENOMEM, "out of memory");
	int err = 0, n = 0;
	char *save = NULL;
	for (char *tok = strtok_r(copy, ",", &save); tok && !err;
	     tok = strtok_r(NULL, ",", &save)) {
		while (*tok == ' ')
			tok++;
		size_t l = strlen(tok);
		while (l && tok[l - 1] == ' ')
			tok[--l] = 0;
		err = rt_check_pattern(tok);
		n++;
	}
	free(copy);
	if (!err && n == 0)
		err = rt_error(RINGTRACE_EINVAL, "empty event name or pattern");
	return err;
}

/*
 * Split `spec` at ';' outside double-quoted strings (\" and \\ escape
 * inside them). Calls fn(item, offset of item in spec, arg) for each
 * non-blank item; stops at the first error.
 */
static int rt_split_items(const char *spec, int (*fn)(char *, size_t, void *), void *arg)
{
	char *copy = strdup(spec);
	if (!copy)
		return rt_error(RINGTRACE_ENOMEM, "out of memory");
	int err = 0, inq = 0;
	size_t start = 0, n = strlen(copy);
	for (size_t i = 0; i <= n && !err; i++) {
		char c = copy[i];
		if (inq) {
			if (c == '\\' && i + 1 < n)
				i++;
			else if (c == '"')
				inq = 0;
			continue;
		}
		if (c == '"') {
			inq = 1;
		} else if (c == ';' || c == 0) {
			copy[i] = 0;
			const char *s = copy + start;
			while (*s == ' ' || *s == '\t' || *s == '\n')
				s++;
			if (*s)
				err = fn(copy + start, start, arg);
			start = i + 1;
		}
	}
	free(copy);
	return err;
}

long rt_last_colon(const char *s)
{
	long at = -1;
	int inq = 0;
	for (size_t i = 0; s[i]; i++) {
		if (inq) {
			if (s[i] == '\\' && s[i + 1])
				i++;
			else if (s[i] == '"')
				inq = 0;
		} else if (s[i] == '"') {
			inq = 1;
		} else if (s[i] == ':') {
			at = (long)i;
		}
	}
	return at;
}

char *rt_trim(char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\n')
		s++;
	size_t l = strlen(s);
	while (l && (s[l - 1] == ' ' || s[l - 1] == '\t' || s[l - 1] == '\n'))
		s[--l] = 0;
	return s;
}

int rt_configure_list(const char *spec, int from_env, int (*item)(char *, size_t, void *))
{
	struct rt_cfg_pass pass = {0, from_env};
	int err = rt_split_items(spec, item, &pass);
	if (err < 0)
		return err;
	pass.apply = 1;
	return rt_split_items(spec, item, &pass);
}
