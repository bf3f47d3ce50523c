/*
 * ringtrace list: the events and printf call sites a trace defines, or a
 * program (-- CMD: run with every event disabled), or a running program
 * (-p PID: attached to with every event disabled and detached at once).
 * The last two read the metadata the program writes into a private
 * temporary directory, in this process, and remove the directory.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "args.h"
#include "base/base.h"
#include "collect/collect_api.h"
#include "output.h"
#include "ringtrace/trace.h"
#include "verbs.h"

static const char list_help[] =
	"usage: ringtrace list DIR\n"
	"       ringtrace list -- CMD [ARGS...]\n"
	"       ringtrace list -p PID\n"
	"\n"
	"The events the trace in DIR defines: id, name, kind, fields (name, type,\n"
	"size, signedness) and print format; then the ringtrace_printf call sites.\n"
	"With -- CMD: the events the program CMD (linked with libringtrace) defines;\n"
	"it is run with tracing on and every event disabled, so give it arguments\n"
	"that make it exit soon. With -p PID: the events of a running program (see\n"
	"`ringtrace ps`), asked for by attaching to it with every event disabled and\n"
	"detaching at once; a program recorded already cannot be asked (busy).\n";

static const char *const kind_names[] = {"instant", "begin", "end", "counter"};

static void print_type(const struct ringtrace_field_desc *f)
{
	char sg = f->is_signed ? 's' : 'u';
	switch (f->type) {
	case RINGTRACE_FT_INT:
		printf("%c%u", sg, f->size * 8);
		break;
	case RINGTRACE_FT_FLOAT:
		printf("float%u", f->size * 8);
		break;
	case RINGTRACE_FT_BOOL:
		printf("bool");
		break;
	case RINGTRACE_FT_POINTER:
		printf("pointer");
		break;
	case RINGTRACE_FT_ENUM:
		printf("enum %c%u", sg, f->size * 8);
		break;
	case RINGTRACE_FT_ARRAY:
		printf("%c%u[%u]", sg, f->size * 8, f->count);
		break;
	case RINGTRACE_FT_FLOAT_ARRAY:
		printf("float%u[%u]", f->size * 8, f->count);
		break;
	case RINGTRACE_FT_STRING:
		printf("string (max %u bytes)", f->count);
		break;
	case RINGTRACE_FT_BYTES:
		printf("bytes (max %u)", f->count);
		break;
	default:
		printf("type %u", f->type);
		break;
	}
	printf(" (size %u, %s, align %u)", f->size, f->is_signed ? "signed" : "unsigned", f->align);
}

/* The events and printf sites of the trace in dir: 0, or 1 (said). */
static int list_trace(const char *dir)
{
	ringtrace_trace *t;
	if (ringtrace_trace_open(dir, out_on_error, NULL, &t) < 0) {
		fprintf(stderr, "ringtrace: %s\n", rt_esc(ringtrace_trace_open_error()));
		return 1;
	}
	uint32_t ne = ringtrace_trace_event_count(t);
	printf("events (%u):\n", ne);
	for (uint32_t i = 0; i < ne; i++) {
		const struct ringtrace_trace_event_def *d = ringtrace_trace_event(t, i);
		printf("  %u %s (%s)\n", d->id, rt_esc(d->name),
		       d->kind < 4 ? kind_names[d->kind] : "?");
		for (uint32_t k = 0; k < d->nfields; k++) {
			const struct ringtrace_field_desc *f = &d->fields[k];
			printf("      %-20s ", rt_esc(f->name));
			print_type(f);
			if (f->type == RINGTRACE_FT_ENUM && f->enm) {
				printf(" {");
				for (uint32_t e = 0; e < f->enm->count; e++)
					printf("%s %s=%" PRId64, e ? "," : "",
					       rt_esc(f->enm->values[e].name),
					       f->enm->values[e].value);
				printf(" }");
			}
			putchar('\n');
		}
		printf("      print \"%s\"\n", rt_esc(d->print_fmt));
	}
	uint32_t nsite = ringtrace_trace_site_count(t);
	printf("printf sites (%u):\n", nsite);
	for (uint32_t i = 0; i < nsite; i++) {
		const struct ringtrace_trace_site *s = ringtrace_trace_site(t, i);
		printf("  %u \"%s\" args", s->id, rt_esc(s->fmt));
		static const char *const tn[] = {"?", "s64", "u64", "double", "string", "pointer"};
		for (uint32_t a = 0; a < s->nargs; a++)
			printf("%s%s", a ? "," : " ", s->types[a] <= 5 ? tn[s->types[a]] : "?");
		if (!s->nargs)
			printf(" none");
		printf(" at %s:%u\n", rt_esc(s->file), s->line);
	}
	fflush(stdout);
	ringtrace_trace_close(t);
	return 0;
}

/* ringtrace list DIR */
static int list_dir(int argc, char **argv)
{
	const char *dir = NULL;
	for (int i = 1; i < argc; i++) {
		if (cmd_is_help(argv[i])) {
			fputs(list_help, stdout);
			return 0;
		}
		if (argv[i][0] == '-' && argv[i][1])
			return arg_usage_error("list", "unknown option %s", argv[i]);
		if (dir)
			return arg_usage_error("list", "unexpected argument %s", argv[i]);
		dir = argv[i];
	}
	if (!dir)
		return arg_usage_error("list", "%s", "missing trace directory");
	return list_trace(dir);
}

/*
 * ringtrace list -- CMD: the program runs (give it arguments that make it
 * exit soon) with the recorder on and every event disabled; the registry
 * it had at exit is in the metadata it writes.
 */
static int list_program(char **cmd, const char *tmp)
{
	char dir[4200];
	snprintf(dir, sizeof(dir), "%s/t", tmp);
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "ringtrace list: fork: %s\n", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		setenv("RINGTRACE_OUTPUT", dir, 1);
		setenv("RINGTRACE_EVENTS", "-*", 1);
		int devnull = open("/dev/null", O_WRONLY);
		if (devnull >= 0)
			dup2(devnull, STDOUT_FILENO);
		execvp(cmd[0], cmd);
		fprintf(stderr, "ringtrace list: cannot run %s: %s\n", cmd[0], strerror(errno));
		_exit(127);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	char meta[4300];
	snprintf(meta, sizeof(meta), "%s/metadata", dir);
	struct stat st;
	if (stat(meta, &st) != 0) {
		fprintf(stderr,
			"ringtrace list: %s defined no events we could see: is it linked with "
			"libringtrace, and did it exit normally?\n",
			cmd[0]);
		return 1;
	}
	return list_trace(dir);
}

/*
 * ringtrace list -p PID: the program is attached to with every event
 * disabled (a small pool; nothing is recorded) and detached at once; the
 * trace it wrote (metadata only) is listed.
 */
static int list_pid(const char *pid, const char *tmp)
{
	char out[4200];
	snprintf(out, sizeof(out), "%s/t", tmp);
	struct co_settings o;
	memset(&o, 0, sizeof(o));
	o.pids = pid;
	o.out = out;
	o.events = "-*";
	o.bufsize = "1m";
	o.pagesize = "64k";
	o.quiet = 1;
	o.group = -1;
	o.duration_ns = 1; /* (stop as soon as it records) */
	int rc = co_record_programs(&o);
	if (rc == 2)
		fprintf(stderr, "ringtrace list: -p PID: one process id\n");
	if (rc != 0)
		return rc;
	/* (one program: one trace directory in the collection) */
	char dir[4300] = "";
	DIR *d = opendir(out);
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.')
			snprintf(dir, sizeof(dir), "%s/%.60s", out, e->d_name);
	if (d)
		closedir(d);
	return dir[0] ? list_trace(dir) : 1;
}

int verb_list(int argc, char **argv)
{
	int pid = argc == 3 && strcmp(argv[1], "-p") == 0;
	int cmd = argc > 1 && strcmp(argv[1], "--") == 0;
	if (!pid && !cmd)
		return list_dir(argc, argv);
	if (cmd && argc < 3) {
		fprintf(stderr, "usage: ringtrace list -- CMD [ARGS...]\n");
		return 2;
	}
	char tmp[4096];
	if (co_tmpdir(tmp, sizeof(tmp)) < 0)
		return 1;
	int rc = pid ? list_pid(argv[2], tmp) : list_program(argv + 2, tmp);
	co_tmpdir_remove(tmp); /* (a leftover is said, not the listing's failure) */
	return rc;
}
