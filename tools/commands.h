/* Subcommands of the ringtrace tool implemented outside ringtrace.c. */
#ifndef RINGTRACE_TOOLS_COMMANDS_H
#define RINGTRACE_TOOLS_COMMANDS_H

#include <string.h>

/* Whether a command-line argument asks for help. */
static inline int cmd_is_help(const char *a)
{
	return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0;
}

int ringtrace_cmd_record(int argc, char **argv);
int ringtrace_cmd_snapshot(int argc, char **argv);
int ringtrace_cmd_export(int argc, char **argv);
int ringtrace_cmd_list_program(int argc, char **argv);
int ringtrace_cmd_recover(int argc, char **argv);
/* Recover the trace of a dead program from its pool SHM into DIR: 0 or 1. */
int ringtrace_recover(const char *shm, const char *dir, int quiet);

#endif
