/* Subcommands of the ringtrace tool implemented outside ringtrace.c. */
#ifndef RINGTRACE_TOOLS_COMMANDS_H
#define RINGTRACE_TOOLS_COMMANDS_H

int ringtrace_cmd_record(int argc, char **argv);
int ringtrace_cmd_snapshot(int argc, char **argv);
int ringtrace_cmd_export(int argc, char **argv);
int ringtrace_cmd_list_program(int argc, char **argv);

#endif
