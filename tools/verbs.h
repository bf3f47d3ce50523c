/*
 * The verbs of the ringtrace command, one file each (tools/<verb>.c),
 * called by the dispatcher (tools/ringtrace.c) with argv[0] the verb.
 * Each returns the exit status: 0 success, 1 failure (a damaged trace,
 * a program that could not be recorded), 2 usage error.
 *
 * No verb file uses another's: what two verbs share is in the support
 * files (args.c: the command line, output.c: what is printed from a
 * trace) or in a layer under src/ (collect: recording other processes
 * and recovering their pools; kernel; analysis; the reader), as
 * scripts/check-layers checks.
 */
#ifndef RINGTRACE_TOOLS_VERBS_H
#define RINGTRACE_TOOLS_VERBS_H

#include <string.h>

/* Whether a command-line argument asks for help. */
static inline int cmd_is_help(const char *a)
{
	return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0;
}

int verb_report(int argc, char **argv);   /* report.c */
int verb_stat(int argc, char **argv);     /* stat.c */
int verb_list(int argc, char **argv);     /* list.c: DIR, -- CMD, -p PID */
int verb_record(int argc, char **argv);   /* record.c: -- CMD, -p, -a, -k */
int verb_snapshot(int argc, char **argv); /* snapshot.c */
int verb_recover(int argc, char **argv);  /* recover.c */
int verb_export(int argc, char **argv);   /* export.c */
int verb_sched(int argc, char **argv);    /* sched.c */
int verb_ps(int argc, char **argv);       /* ps.c */
int verb_latency(int argc, char **argv);  /* latency.c (src/query) */
int verb_query(int argc, char **argv);    /* query.c: DIR [SQL], --db FILE */
int verb_load(int argc, char **argv);     /* load.c (src/fleet): DIR... into ClickHouse */

#endif
