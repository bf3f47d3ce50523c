/*
 * ringtrace snapshot PID: ask a program recording in overwrite mode (the
 * flight recorder) to write its buffer's content as a trace (SIGUSR2).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "verbs.h"

int verb_snapshot(int argc, char **argv)
{
	if (argc == 2 && cmd_is_help(argv[1])) {
		printf("usage: ringtrace snapshot PID\n\n"
		       "Ask a program recording with `ringtrace record` (or RINGTRACE_OUTPUT=DIR) to\n"
		       "write the current content of its buffer as a trace in DIR.snapshot-N, while\n"
		       "it goes on recording: the flight recorder's dump. Sends SIGUSR2.\n");
		return 0;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: ringtrace snapshot PID\n");
		return 2;
	}
	int pid;
	char why[200];
	if (arg_pid(argv[1], &pid, why, sizeof(why)) < 0) {
		fprintf(stderr, "ringtrace snapshot: PID: %s\n", why);
		return 2;
	}
	if (kill((pid_t)pid, SIGUSR2) < 0) {
		fprintf(stderr, "ringtrace snapshot: process %d: %s\n", pid, strerror(errno));
		return 1;
	}
	return 0;
}
