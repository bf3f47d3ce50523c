/*
 * ringtrace load --clickhouse URL DIR...: traces loaded into ClickHouse
 * tables (src/fleet, docs/fleet.md), so that the traces of many machines
 * are queried together.
 *
 * Per trace one line on stdout (loaded or skipped); errors on stderr.
 * Exit status: 0 every trace loaded or skipped; 1 a trace failed (the
 * others are still loaded); 2 a usage error, tables missing without
 * --create, or no server reachable at the start.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "base/base.h"
#include "fleet/fleet_api.h"
#include "verbs.h"

static const char *prog = "ringtrace load";

#define LOAD_MAX_SERVERS 64

static const char load_help[] =
	"usage: ringtrace load --clickhouse URL [--clickhouse URL ...] [options] DIR...\n"
	"\n"
	"Loads each DIR, a trace or a collection (with its kernel events), a snapshot\n"
	"or a recovered trace, into the tables of a ClickHouse database over its HTTP\n"
	"interface: the tables of `ringtrace query` (docs/query.md), every row with\n"
	"the machine's host name, the trace's uuid, the load's id and the trace's day\n"
	"(docs/fleet.md), so that the traces of many machines are queried together.\n"
	"A trace already loaded completely (the same uuid and metadata) is skipped; a\n"
	"load that stopped half-way is replaced by the next load of the trace. The\n"
	"`loads` table says per load when, by whom, how many rows per table and\n"
	"whether it completed.\n"
	"\n"
	"  --clickhouse URL    a server: http[s]://[USER[:PASSWORD]@]HOST[:PORT]; repeated,\n"
	"                      the servers of every shard of --cluster (needed where the\n"
	"                      cluster has no distributed DDL: ON CLUSTER needs ZooKeeper)\n"
	"  --database NAME     the database (default ringtrace): letters, digits and '_'\n"
	"  --create            create the database and the tables if they do not exist\n"
	"  --cluster NAME      tables <t>_local on every shard of the cluster and a\n"
	"                      Distributed table <t> over them, sharded by trace\n"
	"  --replace           load a trace already loaded completely again, and remove\n"
	"                      the earlier load's rows\n"
	"  --password-file F   the password, F's first line (F readable by its owner only)\n"
	"  --cacert F          CA certificates for https (default: the system's)\n"
	"  --batch-rows N      rows per INSERT (default 1000000): the memory a load takes\n"
	"                      grows with it\n"
	"  --save DIR          also write each batch's RowBinary body to\n"
	"                      DIR/<table>.<n>.rowbinary\n"
	"  -q                  no line per trace\n"
	"\n"
	"Credentials, in this order: the URL's, --password-file, the environment\n"
	"(RINGTRACE_CLICKHOUSE_USER, RINGTRACE_CLICKHOUSE_PASSWORD), else user default\n"
	"without password. They are sent in headers, never in a URL, and never\n"
	"printed. Names from a trace travel as data, never in SQL.\n"
	"Exit status: 0 every trace loaded or skipped; 1 a trace failed (said; the\n"
	"others are loaded); 2 a usage error, the tables missing without --create, or\n"
	"no server reachable at the start.\n";

struct load_args {
	char *urls[LOAD_MAX_SERVERS]; /* copies: the arguments' passwords are hidden */
	uint32_t nurl;
	const char *database, *cluster, *password_file, *cacert, *save;
	int create, replace, quiet;
	uint64_t batch_rows;
	int first_dir; /* argv index of the first DIR; the DIRs are every positional */
};

/* An option's value: "--opt=V" or the next argument. NULL: missing. */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
	size_t n = strlen(name);
	if (strncmp(argv[*i], name, n) == 0 && argv[*i][n] == '=')
		return argv[*i] + n + 1;
	return *i + 1 < argc ? argv[++*i] : NULL;
}

/* Whether a is the option name, alone or as name=value. */
static int is_opt(const char *a, const char *name)
{
	size_t n = strlen(name);
	return strncmp(a, name, n) == 0 && (a[n] == 0 || a[n] == '=');
}

/* The options into o, the DIRs left in argv (moved to its end, from
 * o->first_dir). 0, 1 (help printed) or 2 (said). */
static int load_args(int argc, char **argv, struct load_args *o)
{
	int opts_done = 0, ndir = 0;
	char **dirs = calloc((size_t)argc, sizeof(*dirs));
	if (!dirs)
		return arg_usage_error("load", "%s", "out of memory");
	int rc = 0;
	for (int i = 1; i < argc && !rc; i++) {
		const char *a = argv[i], *v = NULL;
		char why[160];
		if (opts_done || a[0] != '-' || !a[1]) {
			dirs[ndir++] = argv[i];
		} else if (strcmp(a, "--") == 0) {
			opts_done = 1;
		} else if (cmd_is_help(a)) {
			fputs(load_help, stdout);
			rc = 1;
		} else if (strcmp(a, "-q") == 0) {
			o->quiet = 1;
		} else if (strcmp(a, "--create") == 0) {
			o->create = 1;
		} else if (strcmp(a, "--replace") == 0) {
			o->replace = 1;
		} else if (is_opt(a, "--clickhouse")) {
			if (!(v = opt_value(argc, argv, &i, "--clickhouse")) || !v[0])
				rc = arg_usage_error("load", "%s", "--clickhouse needs a URL");
			else if (o->nurl == LOAD_MAX_SERVERS)
				rc = arg_usage_error("load", "%s",
						     "more than 64 --clickhouse servers");
			else if (!(o->urls[o->nurl] = strdup(v)))
				rc = arg_usage_error("load", "%s", "out of memory");
			else {
				/* the copy is used; the process list no longer shows the
				 * argument's password (fleet_api.h) */
				fl_url_hide_password((char *)v);
				o->nurl++;
			}
		} else if (is_opt(a, "--database") || is_opt(a, "--cluster")) {
			int db = is_opt(a, "--database");
			v = opt_value(argc, argv, &i, db ? "--database" : "--cluster");
			if (!v || !fl_name_ok(v))
				rc = arg_usage_error(
					"load",
					db ? "--database %s: a name is 1 to 64 ASCII letters, digits and "
					     "'_', not starting with a digit"
					   : "--cluster %s: a name is 1 to 64 ASCII letters, digits and "
					     "'_', not starting with a digit",
					v ? rt_esc(v) : "(missing)");
			else if (db)
				o->database = v;
			else
				o->cluster = v;
		} else if (is_opt(a, "--password-file")) {
			if (!(o->password_file = opt_value(argc, argv, &i, "--password-file")))
				rc = arg_usage_error("load", "%s", "--password-file needs a file");
		} else if (is_opt(a, "--cacert")) {
			if (!(o->cacert = opt_value(argc, argv, &i, "--cacert")))
				rc = arg_usage_error("load", "%s", "--cacert needs a file");
		} else if (is_opt(a, "--save")) {
			if (!(o->save = opt_value(argc, argv, &i, "--save")) || !o->save[0])
				rc = arg_usage_error("load", "%s", "--save needs a directory");
		} else if (is_opt(a, "--batch-rows")) {
			if (!(v = opt_value(argc, argv, &i, "--batch-rows")))
				rc = arg_usage_error("load", "%s", "--batch-rows needs a number");
			else if (arg_u64(v, UINT32_MAX, &o->batch_rows, why, sizeof(why)) < 0)
				rc = arg_usage_error("load", "--batch-rows: %s", why);
			else if (!o->batch_rows)
				rc = arg_usage_error("load", "%s",
						     "--batch-rows 0: at least 1 row");
		} else {
			rc = arg_usage_error("load", "unknown option %s", rt_esc(a));
		}
	}
	if (!rc && !o->nurl)
		rc = arg_usage_error("load", "%s", "no server: --clickhouse URL");
	else if (!rc && !ndir)
		rc = arg_usage_error("load", "%s", "no trace directory given");
	else if (!rc && o->nurl > 1 && !o->cluster)
		rc = arg_usage_error(
			"load", "%s",
			"several --clickhouse servers are the shards of --cluster NAME");
	if (!rc) {
		struct stat st;
		if (o->save && (stat(o->save, &st) < 0 || !S_ISDIR(st.st_mode)))
			rc = arg_usage_error("load", "--save %s: not a directory", rt_esc(o->save));
		o->first_dir = argc - ndir;
		for (int k = 0; k < ndir; k++)
			argv[o->first_dir + k] = dirs[k];
	}
	free(dirs);
	return rc;
}

/* The servers opened (no connection made yet). 0, or 2 having said why. */
static int open_servers(const struct load_args *o, struct fl_ch **chs)
{
	for (uint32_t i = 0; i < o->nurl; i++) {
		struct fl_ch_opts co = {
			.url = o->urls[i],
			.password_file = o->password_file,
			.cacert = o->cacert,
		};
		char err[512] = "";
		if (fl_ch_open(&co, &chs[i], err, sizeof(err)) < 0) {
			/* err never holds the URL's password (fleet_api.h) */
			fprintf(stderr, "%s: --clickhouse: %s\n", prog, rt_esc(err));
			return 2;
		}
	}
	return 0;
}

static void print_loaded(const char *dir, const struct fl_load_result *r)
{
	double rate = r->seconds > 0 ? (double)r->rows_total / r->seconds : 0;
	printf("%s: loaded trace %s (host %s) as load %" PRIu64 ": %" PRIu64
	       " rows in %.2f s (%.0f rows/s)\n",
	       rt_esc(dir), r->trace_uuid, rt_esc(r->host), r->load_id, r->rows_total, r->seconds,
	       rate);
}

int verb_load(int argc, char **argv)
{
	struct load_args o = {.database = "ringtrace"};
	int rc = load_args(argc, argv, &o);
	if (rc) {
		for (uint32_t i = 0; i < o.nurl; i++)
			free(o.urls[i]);
		return rc == 1 ? 0 : rc;
	}
	struct fl_ch *chs[LOAD_MAX_SERVERS] = {0};
	struct fl_target t = {
		.database = o.database, .cluster = o.cluster, .chs = chs, .nch = o.nurl};
	char err[2048] = "";
	rc = open_servers(&o, chs);
	if (!rc) {
		/* after --create too: a table that was there may not be ours */
		const char *what = "creating the tables";
		int r = o.create ? fl_create(&t, err, sizeof(err)) : 0;
		if (r == 0) {
			what = "checking the tables";
			r = fl_check_schema(&t, err, sizeof(err));
		}
		if (r < 0) {
			fprintf(stderr, "%s: %s: %s; nothing loaded\n", prog, what, rt_esc(err));
			/* no server, or tables to make: the command's use (2); a password refused
			 * or a server's error: the traces failed (1) */
			rc = r == FL_EDOWN || r == FL_EUSAGE ? 2 : 1;
		}
	}
	int failed = 0;
	for (int i = o.first_dir; !rc && i < argc; i++) {
		struct fl_load_opts lo = {
			.target = &t,
			.replace = o.replace,
			.batch_rows = o.batch_rows,
			.save_dir = o.save,
			.quiet = o.quiet,
		};
		struct fl_load_result r;
		err[0] = 0;
		int lr = fl_load(&lo, argv[i], &r, err, sizeof(err));
		fflush(stdout);
		if (lr < 0) {
			fprintf(stderr, "%s: %s: %s\n", prog, rt_esc(argv[i]), rt_esc(err));
			failed = 1;
		} else if (r.skipped && !o.quiet) {
			printf("%s: skipped: %s\n", rt_esc(argv[i]), rt_esc(err));
		} else if (!o.quiet) {
			print_loaded(argv[i], &r);
		}
	}
	for (uint32_t i = 0; i < o.nurl; i++) {
		fl_ch_close(chs[i]);
		free(o.urls[i]);
	}
	return rc ? rc : failed;
}
