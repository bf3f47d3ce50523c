/* Subcommands of the ringtrace tool implemented outside ringtrace.c. */
#ifndef RINGTRACE_TOOLS_COMMANDS_H
#define RINGTRACE_TOOLS_COMMANDS_H

#include <string.h>
#include <sys/types.h>

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
int ringtrace_cmd_ps(int argc, char **argv);
int ringtrace_cmd_sched(int argc, char **argv);
/* A pool name nobody can guess (or create before the program does), in
 * buf: 0, or -1 having said why (cmd_record.c). */
int random_shm_name(char *buf, size_t size);
/* ringtrace list -p PID (cmd_attach.c) */
int ringtrace_cmd_list_pid(const char *pid);
/* Recover the trace of a dead program from its pool SHM into DIR: 0 or 1. */
int ringtrace_recover(const char *shm, const char *dir, int quiet);
/* The same; `force`: recover from a pool of another uuid, or with live
 * writers (ringtrace recover --force). */
int ringtrace_recover_opt(const char *shm, const char *dir, int quiet, int force);
/*
 * Map the pool SHM for reading if it is the object the program made: a
 * shared-memory object of uid `owner`, no access for group or others
 * (the library creates it O_EXCL, 0600). 0 and *out, or -1 with a message
 * in err (cmd_recover.c).
 */
struct ringtrace_rb;
int ringtrace_pool_attach(const char *shm, uid_t owner, struct ringtrace_rb **out, char *err,
			  size_t errsize);

#endif
