/* ringtrace record -p: recording running programs (cmd_attach.c). */
#ifndef RINGTRACE_TOOLS_CMD_ATTACH_H
#define RINGTRACE_TOOLS_CMD_ATTACH_H

#include <stdint.h>

struct at_settings {
	const char *pids; /* "PID[,PID...]" */
	const char *out;  /* the output directory (one trace per program in it) */
	const char *events, *filters, *triggers; /* as RINGTRACE_EVENTS, ... (NULL: none) */
	const char *bufsize, *pagesize;          /* NULL: the defaults */
	int overwrite, quiet;
	long group;           /* -1: private */
	uint64_t duration_ns; /* 0: until Ctrl-C or every program's exit */
};

/* Record until Ctrl-C, the duration or every program's exit: the exit status. */
int at_record(const struct at_settings *o);

#endif
