/* ringtrace record -p: recording running programs (cmd_attach.c). */
#ifndef RINGTRACE_TOOLS_CMD_ATTACH_H
#define RINGTRACE_TOOLS_CMD_ATTACH_H

#include <stdint.h>

struct at_settings {
	const char *pids; /* "PID[,PID...]", or NULL */
	int all;          /* -a: every program (root: every user's), those that start too */
	char **argv;      /* -a -- CMD: the command; then only it and its descendants */
	const char *out;  /* the output directory (one trace per program in it) */
	const char *events, *filters, *triggers; /* as RINGTRACE_EVENTS, ... (NULL: none) */
	const char *bufsize, *pagesize;          /* NULL: the defaults */
	int overwrite, quiet;
	long group;           /* -1: private */
	uint64_t duration_ns; /* 0: until Ctrl-C or every program's exit */
};

/* Record until Ctrl-C, the duration, every program's exit (-p) or the
 * command's (-a -- CMD): the exit status (the command's, with one). */
int at_record(const struct at_settings *o);

#endif
