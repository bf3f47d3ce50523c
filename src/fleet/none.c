/*
 * The server side of the fleet layer in a ringtrace built without libcurl
 * (CMakeLists.txt builds this file instead of ch.c): opening a server
 * fails with what to install, so `ringtrace load` says so at its start.
 */
#include <stdio.h>

#include "fleet/fleet_api.h"

int fl_ch_open(const struct fl_ch_opts *o, struct fl_ch **out, char *err, size_t errsize)
{
	(void)o;
	*out = NULL;
	snprintf(err, errsize,
		 "ringtrace was built without libcurl (install libcurl4-openssl-dev "
		 "and rebuild)");
	return FL_EUSAGE;
}

/* (no struct fl_ch is ever made here: these get NULL) */
void fl_ch_close(struct fl_ch *ch)
{
	(void)ch;
}

const char *fl_ch_where(const struct fl_ch *ch)
{
	(void)ch;
	return "";
}

const char *fl_ch_user(const struct fl_ch *ch)
{
	(void)ch;
	return "";
}

int fl_ch_exec(struct fl_ch *ch, const char *sql, const char *settings, struct fl_buf *out,
	       char *err, size_t errsize)
{
	(void)ch, (void)sql, (void)settings, (void)out;
	return fl_ch_open(NULL, &ch, err, errsize);
}

int fl_ch_insert(struct fl_ch *ch, const char *sql, const char *settings, const void *body,
		 size_t len, char *err, size_t errsize)
{
	(void)ch, (void)sql, (void)settings, (void)body, (void)len;
	return fl_ch_open(NULL, &ch, err, errsize);
}
