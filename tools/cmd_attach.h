/* ringtrace record -p: recording running programs (cmd_attach.c). */
#ifndef RINGTRACE_TOOLS_CMD_ATTACH_H
#define RINGTRACE_TOOLS_CMD_ATTACH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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
	/* -k: kernel events of the recorded programs' threads (src/kernel/kernel_api.h) */
	char *const *kspecs;
	int nk;
	size_t kbuf_kb;
	int kall; /* --kernel-all */
};

/*
 * The output directory of a collection: made (0700, or 0750 with group),
 * or an existing one taken if it is ours, writable by nobody else and
 * empty. Its descriptor, or -1 having said why.
 */
int at_outdir(const char *out, long group);
/* A process's trace directory name in a collection: <comm>-<pid>. */
void at_dirname(char *buf, size_t n, const char *comm, pid_t pid);

/* Record until Ctrl-C, the duration, every program's exit (-p) or the
 * command's (-a -- CMD): the exit status (the command's, with one). */
int at_record(const struct at_settings *o);

#endif
