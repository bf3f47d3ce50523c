/*
 * src/fleet/url.c - a server URL's password hidden in the command line
 * (fleet_api.h): plain text work, in the builds with and without libcurl.
 */
#include <string.h>

#include "fleet/fleet_api.h"

size_t fl_url_hide_password(char *arg)
{
	char *s = strstr(arg, "://");
	if (!s)
		return 0;
	s += 3;
	/* the authority ends at the path, query or fragment; its user part
	 * at its last '@' (a password may hold '@' unencoded, a host never) */
	size_t alen = strcspn(s, "/?#");
	char *at = NULL;
	for (size_t i = 0; i < alen; i++)
		if (s[i] == '@')
			at = s + i;
	if (!at)
		return 0;
	char *colon = memchr(s, ':', (size_t)(at - s));
	if (!colon)
		return 0;
	size_t n = (size_t)(at - colon - 1);
	memset(colon + 1, '*', n);
	return n;
}
