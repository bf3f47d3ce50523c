/*
 * ringtrace - record and read trace directories: the dispatcher. Each
 * verb is a file of its own (tools/<verb>.c, verbs.h):
 *
 *   ringtrace record [options] -- CMD [ARGS...]          record.c
 *   ringtrace record [options] -p PID,... | -a [-- CMD]  record.c (src/collect)
 *   ringtrace snapshot PID                               snapshot.c
 *   ringtrace recover [--force] SHM DIR                  recover.c (src/collect)
 *   ringtrace report DIR [--events GLOB] [--from SEC] [--to SEC] [--raw]   report.c
 *   ringtrace stat DIR                                   stat.c
 *   ringtrace list DIR | -- CMD [ARGS...] | -p PID       list.c
 *   ringtrace export --format=json DIR -o FILE           export.c
 *   ringtrace sched DIR [--all] [--top N]                sched.c
 *   ringtrace ps                                         ps.c
 *   ringtrace latency DIR --from EVENT --to EVENT [...]  latency.c (src/query)
 *   ringtrace query [--db FILE] [DIR] [SQL] [--format F] query.c (src/query)
 *   ringtrace load --clickhouse URL [options] DIR...     load.c (src/fleet)
 *
 * Exit status: 0 success, 1 the trace is damaged or unreadable (everything
 * readable is still printed), 2 usage error. Errors go to stderr.
 */
#include <stdio.h>
#include <string.h>

#include "verbs.h"

static const char *prog = "ringtrace";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s <command> [options]\n"
		"\n"
		"commands:\n"
		"  record [-e EVENTS [-f FILTER]]... [--trigger SPEC]... [--overwrite]\n"
		"         [--buffer-size SIZE] [-o DIR] -- CMD [ARGS...]\n"
		"                 run CMD (linked with libringtrace) and record a trace\n"
		"  record [options] -p PID[,PID...] | -a [-- CMD] [--duration SEC]\n"
		"                 record running programs (one trace each in DIR)\n"
		"  snapshot PID   dump the buffer of a recording program (flight recorder)\n"
		"  recover SHM DIR\n"
		"                 complete the trace of a program that died while recording\n"
		"  report DIR [--events GLOB] [--from SEC] [--to SEC] [--raw]\n"
		"                 print the events of a trace (or a collection), merged by time\n"
		"  stat DIR       per-stream and per-event accounting\n"
		"  list DIR       the events and printf call sites a trace defines\n"
		"  list -- CMD [ARGS...]\n"
		"                 the events a program defines (it is run, tracing off)\n"
		"  list -p PID    the events a running program defines\n"
		"  export --format=json DIR -o FILE\n"
		"                 Chrome/Perfetto trace event JSON\n"
		"  sched DIR [--all] [--top N]\n"
		"                 per thread: running, runnable, blocked, wake-up latency and\n"
		"                 the longest off-CPU stretches (a collection with kernel events)\n"
		"  ps             running programs that can be attached to\n"
		"  latency DIR --from EVENT --to EVENT [--key FIELD] [--by FIELD] [--top N]\n"
		"                 the latency from a start to a stop event, paired by a key\n"
		"                 (or thread): percentiles, log2 histogram, longest pairs\n"
		"  query DIR [SQL] [--format table|csv|tsv|json] [-f FILE]\n"
		"                 SQL on a trace's (or a collection's) events, threads, spans,\n"
		"                 counters and kernel scheduling, as tables (docs/query.md)\n"
		"  query --db FILE [DIR] [SQL]\n"
		"                 write those tables to an SQLite database file, or query one\n"
		"  load --clickhouse URL [--create] [--cluster NAME] DIR...\n"
		"                 load traces of many machines into ClickHouse tables, to be\n"
		"                 queried together (docs/fleet.md)\n"
		"\n"
		"'%s <command> --help' describes a command.\n",
		prog, prog);
}

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} verbs[] = {
	{"report", verb_report},     {"stat", verb_stat},
	{"list", verb_list},         {"record", verb_record},
	{"snapshot", verb_snapshot}, {"export", verb_export},
	{"recover", verb_recover},   {"ps", verb_ps},
	{"sched", verb_sched},       {"latency", verb_latency},
	{"query", verb_query},       {"load", verb_load},
};

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *cmd = argv[1];
	if (cmd_is_help(cmd)) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(cmd, verbs[i].name) == 0)
			return verbs[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "%s: unknown command '%s'\n", prog, cmd);
	usage(stderr);
	return 2;
}
