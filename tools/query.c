/*
 * ringtrace query DIR [SQL]: a trace (or a collection, with its kernel
 * events) as SQL tables (src/query, docs/query.md), and the user's SQL run
 * on them with SQLite; `--db FILE` writes the tables to a database file
 * that any SQLite tool opens, and `--db FILE` alone queries such a file.
 *
 * Results go to stdout as an aligned table (default), CSV (RFC 4180), TSV
 * or JSON lines. Exit status: 0; 1 the trace is damaged (everything
 * readable is imported and the SQL still runs) or a file cannot be read or
 * written; 2 a usage error or a wrong SQL statement.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analysis/analysis_api.h"
#include "args.h"
#include "base/base.h"
#include "query/query_api.h"
#include "verbs.h"

#ifndef RINGTRACE_VERSION_STRING
#define RINGTRACE_VERSION_STRING "unknown"
#endif

static const char *prog = "ringtrace query";

static const char query_help[] =
	"usage: ringtrace query [options] DIR [SQL]\n"
	"       ringtrace query [options] --db FILE DIR [SQL]\n"
	"       ringtrace query [options] --db FILE [SQL]\n"
	"\n"
	"Imports DIR, a trace or a collection (with its kernel events), into SQL\n"
	"tables (docs/query.md describes them) and runs SQL on them with SQLite:\n"
	"SQL from the command line, from -f FILE, or else from standard input\n"
	"(not with --db FILE DIR, which only writes FILE when given no SQL).\n"
	"Several statements (separated by ';') print their results in turn; a\n"
	"statement that returns no rows prints nothing. 'PRAGMA table_list' lists\n"
	"the tables, 'PRAGMA table_info(T)' the columns of T.\n"
	"\n"
	"  --format table|csv|tsv|json\n"
	"               an aligned table (default, NULL as NULL); CSV as RFC 4180\n"
	"               (CRLF line ends, fields with a comma, quote or line break\n"
	"               quoted, quotes doubled, NULL empty and an empty text \"\"); TSV\n"
	"               (tab, line break, carriage return and backslash as \\t \\n \\r\n"
	"               \\\\, NULL empty); JSON lines: one object per row, the column\n"
	"               names as keys, NULL as null. CSV and TSV start with a header\n"
	"               row; results of several statements are separated by an empty\n"
	"               line (not in JSON).\n"
	"  -f FILE      read the SQL from FILE\n"
	"  --db FILE    with DIR: write the tables into the SQLite database FILE (plain\n"
	"               tables, for the sqlite3 shell, Python or any SQLite tool), a\n"
	"               chunk at a time, so that a trace larger than memory fits; then\n"
	"               run the SQL, if any, on it. Without DIR: run the SQL on FILE,\n"
	"               read-only. FILE is written under a temporary name beside it\n"
	"               and renamed when complete; an existing FILE is replaced only\n"
	"               if ringtrace wrote it; a symbolic link is never followed.\n"
	"               (With --db and one argument: DIR if it is a directory, else SQL.)\n"
	"  --chunk N    with --db FILE DIR: records imported between two copies into\n"
	"               FILE (default 1048576): the memory the import takes grows with\n"
	"               it, the time to write FILE shrinks\n"
	"  -v           the import's time, rate and rows per table on stderr\n"
	"\n"
	"The SQL cannot reach other files: ATTACH, VACUUM INTO and loading\n"
	"extensions are refused. Text from the trace is printed with control bytes\n"
	"as \\xNN in a table, and in CSV and TSV on a terminal; JSON escapes them\n"
	"(and gives a byte that is not UTF-8 as the character of its value).\n"
	"Exit status: 0; 1 the trace is damaged (what could be read is imported and\n"
	"queried, the damage is said on stderr and counted in the stats table) or a\n"
	"file cannot be read or written; 2 a usage error or a wrong SQL statement\n"
	"(SQLite's message, with its line and column).\n";

/* Marks a database that `ringtrace query --db` wrote (PRAGMA
 * application_id, the 4 bytes at offset 68 of the file): "RTQL". */
#define QUERY_APP_ID 0x5254514c
#define QUERY_DB_FORMAT "1"
/* Records between two copies into the --db file: the store holds one
 * chunk's rows at most (and the strings), whatever the trace's size. */
#define QUERY_CHUNK_EVENTS (1u << 20)
/* Bytes of text a table holds back to size its columns (every row of any
 * result meant to be read); the rows after use the widths found. */
#define TABLE_HOLD_BYTES (64u << 20)

enum fmt { FMT_TABLE, FMT_CSV, FMT_TSV, FMT_JSON };

struct opts {
	const char *dir, *db, *sql, *file;
	enum fmt fmt;
	int verbose;
	uint64_t chunk; /* --db: records per chunk */
};

/* ---- printing results ---- */

struct printer {
	enum fmt fmt;
	int tty; /* stdout is a terminal: text escaped in CSV and TSV too */
	uint64_t results;
	/* a table's rows held back to size its columns */
	int ncols;
	char **cells; /* held rows' cells, ncols each (and the header first) */
	uint8_t *right;
	size_t nheld, held_bytes;
	size_t cellcap; /* cells and right have room for so many cells */
	size_t *width;
	int sized; /* widths fixed and the header printed */
};

static int utf8_seq(const unsigned char *p, size_t n, uint32_t *cp)
{
	unsigned char b = p[0];
	size_t len;
	uint32_t v, min;
	if (b < 0x80) {
		*cp = b;
		return 1;
	}
	if (b >= 0xc2 && b <= 0xdf)
		len = 2, v = b & 0x1f, min = 0x80;
	else if (b >= 0xe0 && b <= 0xef)
		len = 3, v = b & 0x0f, min = 0x800;
	else if (b >= 0xf0 && b <= 0xf4)
		len = 4, v = b & 0x07, min = 0x10000;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (p[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return (int)len;
}

/* A JSON string: controls, C1 controls, '"' and '\' escaped; a byte that
 * is not part of valid UTF-8 as the character of its value (\u00XX), so
 * that the line is valid JSON whatever the trace holds. */
static void put_json_str(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	putchar('"');
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		int len = utf8_seq(p + i, n - i, &cp);
		if (len == 0) {
			printf("\\u%04x", p[i]);
			i++;
			continue;
		}
		if (cp == '"' || cp == '\\')
			printf("\\%c", (char)cp);
		else if (cp == '\n')
			fputs("\\n", stdout);
		else if (cp == '\t')
			fputs("\\t", stdout);
		else if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f))
			printf("\\u%04x", (unsigned)cp);
		else
			fwrite(p + i, 1, (size_t)len, stdout);
		i += (size_t)len;
	}
	putchar('"');
}

/* A real that reads back as the same double, as short as it can be. */
static void fmt_real(char *b, size_t n, double v, int json)
{
	if (isinf(v)) {
		/* JSON has no infinity: a number too large for a double is one */
		snprintf(b, n, "%s",
			 json ? (v > 0 ? "1e999" : "-1e999") : (v > 0 ? "Inf" : "-Inf"));
		return;
	}
	snprintf(b, n, "%.15g", v);
	if (strtod(b, NULL) != v)
		snprintf(b, n, "%.17g", v);
}

/* A value as text: NULL as "NULL" (table), numbers formatted, text and
 * blobs as their bytes. *len its length; the pointer is valid until the
 * next call. */
static const char *cell_text(sqlite3_stmt *st, int i, char *num, size_t numsize, size_t *len,
			     int *is_num)
{
	*is_num = 0;
	switch (sqlite3_column_type(st, i)) {
	case SQLITE_NULL:
		*len = 0;
		return NULL;
	case SQLITE_INTEGER:
		*is_num = 1;
		snprintf(num, numsize, "%lld", (long long)sqlite3_column_int64(st, i));
		*len = strlen(num);
		return num;
	case SQLITE_FLOAT:
		*is_num = 1;
		fmt_real(num, numsize, sqlite3_column_double(st, i), 0);
		*len = strlen(num);
		return num;
	default: {
		const char *t = (const char *)sqlite3_column_text(st, i);
		*len = (size_t)sqlite3_column_bytes(st, i);
		return t ? t : "";
	}
	}
}

/* Characters on the terminal (UTF-8: bytes that start one). */
static size_t display_width(const char *s)
{
	size_t w = 0;
	for (; *s; s++)
		w += ((unsigned char)*s & 0xc0) != 0x80;
	return w;
}

static void table_line(struct printer *p, char **cells, const uint8_t *right)
{
	for (int c = 0; c < p->ncols; c++) {
		size_t w = display_width(cells[c]);
		size_t pad = p->width[c] > w ? p->width[c] - w : 0;
		int last = c == p->ncols - 1;
		if (c)
			fputs("  ", stdout);
		if (right[c])
			printf("%*s", (int)pad, "");
		fputs(cells[c], stdout);
		if (!right[c] && !last)
			printf("%*s", (int)pad, "");
	}
	putchar('\n');
}

/* The widths from the held rows; the header, a rule and the held rows. */
static void table_size(struct printer *p)
{
	for (int c = 0; c < p->ncols; c++)
		p->width[c] = 0;
	for (size_t r = 0; r < p->nheld; r++)
		for (int c = 0; c < p->ncols; c++) {
			size_t w = display_width(p->cells[r * (size_t)p->ncols + c]);
			if (w > p->width[c])
				p->width[c] = w;
		}
	/* (a column's name aligned as its first value: over numbers, right) */
	if (p->nheld > 1)
		memcpy(p->right, p->right + p->ncols, (size_t)p->ncols);
	for (size_t r = 0; r < p->nheld; r++) {
		table_line(p, p->cells + r * (size_t)p->ncols, p->right + r * (size_t)p->ncols);
		if (r == 0) {
			for (int c = 0; c < p->ncols; c++) {
				printf("%s", c ? "  " : "");
				for (size_t k = 0; k < p->width[c]; k++)
					putchar('-');
			}
			putchar('\n');
		}
	}
	for (size_t i = 0; i < p->nheld * (size_t)p->ncols; i++)
		free(p->cells[i]);
	p->nheld = 0;
	p->held_bytes = 0;
	p->sized = 1;
}

/* A row of the table (header: the column names), held back or printed. */
static int table_row(struct printer *p, sqlite3_stmt *st, int header)
{
	size_t need = (p->nheld + 1) * (size_t)p->ncols;
	if (need > p->cellcap) {
		size_t cap = p->cellcap * 2 > need ? p->cellcap * 2 : need + 64;
		char **cells = realloc(p->cells, cap * sizeof(*cells));
		if (!cells)
			return -1;
		p->cells = cells;
		uint8_t *right = realloc(p->right, cap);
		if (!right)
			return -1;
		p->right = right;
		p->cellcap = cap;
	}
	char **cells = p->cells + p->nheld * (size_t)p->ncols;
	uint8_t *right = p->right + p->nheld * (size_t)p->ncols;
	for (int c = 0; c < p->ncols; c++) {
		char num[64];
		size_t len;
		int is_num = 0;
		const char *t = header ? sqlite3_column_name(st, c)
				       : cell_text(st, c, num, sizeof(num), &len, &is_num);
		cells[c] = strdup(t ? rt_esc(t) : "NULL");
		right[c] = (uint8_t)is_num;
		if (!cells[c]) {
			for (int k = 0; k < c; k++)
				free(cells[k]);
			return -1;
		}
		p->held_bytes += strlen(cells[c]) + 16;
	}
	p->nheld++;
	if (!p->sized && p->held_bytes > TABLE_HOLD_BYTES)
		table_size(p);
	else if (p->sized) {
		table_line(p, cells, right);
		for (int c = 0; c < p->ncols; c++)
			free(cells[c]);
		p->nheld = 0;
	}
	return 0;
}

/* A field of CSV or TSV: text escaped for a terminal when stdout is one. */
static void put_field(struct printer *p, const char *s, size_t n)
{
	if (p->tty) {
		s = rt_esc(s);
		n = strlen(s);
	}
	if (p->fmt == FMT_CSV) {
		/* (an empty text quoted: an empty field is NULL) */
		if (n && !memchr(s, ',', n) && !memchr(s, '"', n) && !memchr(s, '\n', n) &&
		    !memchr(s, '\r', n)) {
			fwrite(s, 1, n, stdout);
			return;
		}
		putchar('"');
		for (size_t i = 0; i < n; i++) {
			if (s[i] == '"')
				putchar('"');
			putchar(s[i]);
		}
		putchar('"');
		return;
	}
	for (size_t i = 0; i < n; i++) {
		switch (s[i]) {
		case '\t':
			fputs("\\t", stdout);
			break;
		case '\n':
			fputs("\\n", stdout);
			break;
		case '\r':
			fputs("\\r", stdout);
			break;
		case '\\':
			fputs("\\\\", stdout);
			break;
		default:
			putchar(s[i]);
		}
	}
}

static void delim_row(struct printer *p, sqlite3_stmt *st, int header)
{
	for (int c = 0; c < p->ncols; c++) {
		if (c)
			putchar(p->fmt == FMT_CSV ? ',' : '\t');
		char num[64];
		size_t len;
		int is_num;
		const char *t = header ? sqlite3_column_name(st, c)
				       : cell_text(st, c, num, sizeof(num), &len, &is_num);
		if (header)
			len = t ? strlen(t) : 0;
		if (t)
			put_field(p, t, len);
	}
	fputs(p->fmt == FMT_CSV ? "\r\n" : "\n", stdout);
}

static void json_row(struct printer *p, sqlite3_stmt *st)
{
	putchar('{');
	for (int c = 0; c < p->ncols; c++) {
		const char *name = sqlite3_column_name(st, c);
		if (c)
			putchar(',');
		put_json_str(name ? name : "", name ? strlen(name) : 0);
		putchar(':');
		char num[64];
		switch (sqlite3_column_type(st, c)) {
		case SQLITE_NULL:
			fputs("null", stdout);
			break;
		case SQLITE_INTEGER:
			printf("%lld", (long long)sqlite3_column_int64(st, c));
			break;
		case SQLITE_FLOAT:
			fmt_real(num, sizeof(num), sqlite3_column_double(st, c), 1);
			fputs(num, stdout);
			break;
		default: {
			const char *t = (const char *)sqlite3_column_text(st, c);
			put_json_str(t ? t : "", (size_t)sqlite3_column_bytes(st, c));
		}
		}
	}
	fputs("}\n", stdout);
}

/* A statement's rows printed (nothing when it returns none). SQLite's
 * result code: SQLITE_DONE, or its error; -1 out of memory. */
static int print_result(struct printer *p, sqlite3_stmt *st)
{
	int rc, first = 1;
	p->ncols = sqlite3_column_count(st);
	p->nheld = 0;
	p->held_bytes = 0;
	p->sized = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (first) {
			first = 0;
			if (p->results++ && p->fmt != FMT_JSON)
				putchar('\n');
			if (p->fmt == FMT_TABLE) {
				free(p->width);
				if (!(p->width = calloc((size_t)p->ncols, sizeof(*p->width))) ||
				    table_row(p, st, 1) < 0)
					return -1;
			} else if (p->fmt != FMT_JSON) {
				delim_row(p, st, 1);
			}
		}
		if (p->fmt == FMT_TABLE) {
			if (table_row(p, st, 0) < 0)
				return -1;
		} else if (p->fmt == FMT_JSON) {
			json_row(p, st);
		} else {
			delim_row(p, st, 0);
		}
	}
	if (p->fmt == FMT_TABLE && !first && !p->sized)
		table_size(p);
	return rc;
}

static void printer_free(struct printer *p)
{
	/* (rows still held: a result that failed half-way) */
	for (size_t i = 0; p->cells && i < p->nheld * (size_t)p->ncols; i++)
		free(p->cells[i]);
	free(p->cells);
	free(p->right);
	free(p->width);
}

/* ---- running the SQL ---- */

/* Line and column (from 1, in bytes) of offset off of text. */
static void text_pos(const char *text, size_t off, unsigned *line, unsigned *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < off && text[i]; i++) {
		if (text[i] == '\n') {
			++*line;
			*col = 1;
		} else {
			++*col;
		}
	}
}

static int sql_error(sqlite3 *db, const char *sql, const char *stmt, const char *src)
{
	unsigned line, col;
	/* where in the statement SQLite found the error (3.38 and later);
	 * else the statement's start */
#if SQLITE_VERSION_NUMBER >= 3038000
	int off = sqlite3_error_offset(db);
#else
	int off = -1;
#endif
	size_t at = (size_t)(stmt - sql) + (off > 0 ? (size_t)off : 0);
	/* (skip the blanks before the statement: its position is its first word) */
	if (off < 0)
		while (sql[at] == ' ' || sql[at] == '\n' || sql[at] == '\t' || sql[at] == '\r')
			at++;
	text_pos(sql, at, &line, &col);
	fflush(stdout);
	fprintf(stderr, "%s: SQL error at line %u, column %u of %s: %s\n", prog, line, col, src,
		rt_esc(sqlite3_errmsg(db)));
	int code = sqlite3_errcode(db) & 0xff;
	/* a statement that is wrong or not allowed is the user's; a failing
	 * disk or memory is not */
	return code == SQLITE_IOERR || code == SQLITE_NOMEM || code == SQLITE_FULL ||
			       code == SQLITE_CORRUPT || code == SQLITE_NOTADB ||
			       code == SQLITE_CANTOPEN
		       ? 1
		       : 2;
}

/* Every statement of sql, each result printed in turn; stops at the first
 * that fails. 0, 1 or 2 (the exit status). */
static int run_sql(sqlite3 *db, const char *sql, const char *src, enum fmt fmt)
{
	struct printer p = {.fmt = fmt, .tty = isatty(STDOUT_FILENO)};
	const char *at = sql;
	int status = 0;
	while (*at) {
		sqlite3_stmt *st = NULL;
		const char *tail = NULL;
		if (sqlite3_prepare_v2(db, at, -1, &st, &tail) != SQLITE_OK) {
			status = sql_error(db, sql, at, src);
			break;
		}
		if (!st) { /* blanks or a comment */
			at = tail;
			continue;
		}
		int rc = print_result(&p, st);
		if (rc < 0) {
			fprintf(stderr, "%s: out of memory printing a result\n", prog);
			sqlite3_finalize(st);
			status = 1;
			break;
		}
		if (rc != SQLITE_DONE) {
			status = sql_error(db, sql, at, src);
			sqlite3_finalize(st);
			break;
		}
		sqlite3_finalize(st);
		at = tail;
	}
	printer_free(&p);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "%s: writing the results: %s\n", prog, strerror(errno));
		return status ? status : 1;
	}
	return status;
}

/* The whole of f (NUL-terminated), or NULL having said why. */
static char *read_all(FILE *f, const char *name)
{
	size_t n = 0, cap = 4096;
	char *b = malloc(cap);
	while (b) {
		n += fread(b + n, 1, cap - 1 - n, f);
		if (n < cap - 1)
			break;
		char *nb = realloc(b, cap * 2);
		if (!nb)
			free(b);
		b = nb;
		cap *= 2;
	}
	if (!b) {
		fprintf(stderr, "%s: out of memory reading %s\n", prog, name);
		return NULL;
	}
	if (ferror(f)) {
		fprintf(stderr, "%s: reading %s: %s\n", prog, name, strerror(errno));
		free(b);
		return NULL;
	}
	b[n] = 0;
	if (strlen(b) != n) {
		fprintf(stderr, "%s: %s holds a NUL byte (at offset %zu): not SQL text\n", prog,
			name, strlen(b));
		free(b);
		return NULL;
	}
	return b;
}

/* ---- the trace's import ---- */

struct import_state {
	const char *dir;
	uint64_t damage; /* messages of damage met while reading */
	sqlite3 *db;     /* --db: the file's connection; else NULL */
	sqlite3_stmt *late;
	uint64_t chunk;  /* records per chunk */
	uint64_t copies; /* chunks copied into it */
	char err[512];
};

/* The import under way: the reader's damage callback has no argument of
 * ours (coll_open gives it none). */
static struct import_state *importing;

/* Damage met while reading (the messages name the file and where). */
static void on_damage(void *arg, const char *msg)
{
	(void)arg;
	if (importing)
		importing->damage++;
	fflush(stdout);
	fprintf(stderr, "%s: %s\n", prog, rt_esc(msg));
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* --db: the chunk's rows copied into the file's tables, then dropped from
 * the store, so that it holds one chunk at most. */
static int copy_chunk(void *arg, struct qy_store *s, int last)
{
	struct import_state *is = arg;
	(void)last;
	if (qy_sqlite_copy(is->db, s, "main", is->copies++ == 0, is->err, sizeof(is->err)) < 0)
		return -1;
	for (uint32_t i = 0; i < qy_table_count(s); i++)
		qy_table_clear(qy_table_at(s, i));
	return 0;
}

/* --db: a slice already copied out ended. The first makes an index of
 * slice ids (each update would scan the table otherwise); it stays in the
 * file, where it serves queries by id as well. Its name is no plain
 * identifier, so that no event's table can have it. */
static int late_dur(void *arg, int64_t slice_id, int64_t dur)
{
	struct import_state *is = arg;
	if (!is->late &&
	    (sqlite3_exec(is->db,
			  "CREATE INDEX IF NOT EXISTS main.\"ringtrace-slice-id\" ON slice (id)",
			  NULL, NULL, NULL) != SQLITE_OK ||
	     sqlite3_prepare_v2(is->db, "UPDATE main.slice SET dur = ?1 WHERE id = ?2", -1,
				&is->late, NULL) != SQLITE_OK)) {
		snprintf(is->err, sizeof(is->err), "%s", sqlite3_errmsg(is->db));
		return -1;
	}
	sqlite3_bind_int64(is->late, 1, dur);
	sqlite3_bind_int64(is->late, 2, slice_id);
	int rc = sqlite3_step(is->late);
	sqlite3_reset(is->late);
	if (rc != SQLITE_DONE) {
		snprintf(is->err, sizeof(is->err), "%s", sqlite3_errmsg(is->db));
		return -1;
	}
	return 0;
}

static void import_report(const struct import_state *is, struct qy_store *s,
			  const struct qy_import_result *r, double secs)
{
	uint64_t bytes = qy_store_bytes(s);
	fprintf(stderr,
		"%s: %s: %" PRIu64 " records, %" PRIu64
		" events imported in %.3f s (%.0f events/s); "
		"the store holds %" PRIu64 " bytes%s",
		prog, rt_esc(is->dir), r->records, r->events, secs,
		secs > 0 ? (double)r->events / secs : 0.0, bytes,
		is->db ? " (one chunk's rows, and the strings)" : "");
	if (r->events && !is->db)
		fprintf(stderr, " (%.1f bytes per event)", (double)bytes / (double)r->events);
	fputc('\n', stderr);
	for (uint32_t i = 0; i < qy_table_count(s); i++) {
		const struct qy_table *t = qy_table_at(s, i);
		fprintf(stderr, "%s:   %-24s %12" PRIu64 " rows\n", prog, rt_esc(t->name),
			t->base + t->nrows);
	}
}

/*
 * DIR imported into s (and with is->db set, copied into that database a
 * chunk at a time). 0; 1 damaged (imported up to the damage, said); -1
 * the import failed (said).
 */
static int import_dir(struct import_state *is, struct qy_store *s, int verbose)
{
	struct coll c;
	importing = is;
	if (coll_open(is->dir, prog, on_damage, &c) < 0)
		return -1;
	struct qy_import_opts io = {.on_error = on_damage, .arg = is};
	if (is->db) {
		io.chunk_events = is->chunk;
		io.chunk = copy_chunk;
		io.late_dur = late_dur;
	}
	struct qy_import_result r = {0, 0, 0};
	char err[512] = "";
	double t0 = now_s();
	int rc = qy_import(s, &c, &io, &r, err, sizeof(err));
	double secs = now_s() - t0;
	if (rc < 0) {
		fprintf(stderr, "%s: %s: importing the trace: %s%s%s\n", prog, rt_esc(is->dir),
			rt_esc(err), is->err[0] ? ": " : "", rt_esc(is->err));
	} else if (verbose) {
		import_report(is, s, &r, secs);
	}
	uint64_t errors = 0;
	for (uint32_t i = 0; i < c.n; i++)
		errors += ringtrace_trace_errors(c.t[i]);
	if (r.errors > errors)
		errors = r.errors;
	if (is->damage > errors)
		errors = is->damage;
	int damaged = c.failed || errors || is->damage;
	if (damaged && rc >= 0 && !errors)
		fprintf(stderr,
			"%s: %s: %u trace%s of the collection could not be opened (said above): "
			"imported without %s, counted in the stats table\n",
			prog, rt_esc(is->dir), c.failed, c.failed == 1 ? "" : "s",
			c.failed == 1 ? "it" : "them");
	else if (damaged && rc >= 0)
		fprintf(stderr,
			"%s: %s: the trace is damaged (%" PRIu64
			" error%s found%s): imported up to "
			"the damage, counted in the stats table\n",
			prog, rt_esc(is->dir), errors, errors == 1 ? "" : "s",
			c.failed ? ", and traces of the collection that could not be opened" : "");
	coll_close(&c);
	importing = NULL;
	if (is->late)
		sqlite3_finalize(is->late);
	is->late = NULL;
	return rc < 0 ? -1 : damaged;
}

/* ---- the --db file ----
 *
 * Written under a temporary name beside FILE (created with O_EXCL, so it is
 * a new file of ours and no link), renamed over FILE when complete. So:
 * SQLite opens a file we just created, never one that was there; FILE is
 * only ever replaced as a name (rename never writes into what the name
 * pointed to, a symbolic link included); a reader of FILE never sees half
 * a database; an import that fails or is interrupted leaves FILE as it
 * was. FILE is replaced only if it is a database this command wrote (its
 * application_id): never a user's other file. Before the rename, the
 * temporary name must still be the file created (same inode), or nothing
 * is renamed.
 */

struct dbfile {
	const char *path;
	char *tmp;
	int fd;
	struct stat st; /* the temporary file, as created */
	sqlite3 *db;
};

/* The temporary name, for the signal handler to remove. */
static char *volatile sig_tmp;

static void on_signal(int sig)
{
	char *t = sig_tmp;
	if (t)
		unlink(t);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Whether FILE may be replaced: absent, or a regular file that is a
 * database of ours. 0, or -1 having said why not. */
static int db_replaceable(const char *path)
{
	struct stat st;
	if (lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		fprintf(stderr, "%s: --db %s: %s\n", prog, rt_esc(path), strerror(errno));
		return -1;
	}
	if (S_ISLNK(st.st_mode)) {
		fprintf(stderr, "%s: --db %s: is a symbolic link (not followed): refusing it\n",
			prog, rt_esc(path));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "%s: --db %s: not a regular file: refusing it\n", prog,
			rt_esc(path));
		return -1;
	}
	unsigned char h[100];
	ssize_t n = -1;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, h, sizeof(h));
		close(fd);
	}
	if (n < 0) {
		fprintf(stderr, "%s: --db %s: %s\n", prog, rt_esc(path), strerror(errno));
		return -1;
	}
	if (n < (ssize_t)sizeof(h) || memcmp(h, "SQLite format 3", 16) != 0) {
		fprintf(stderr,
			"%s: --db %s: exists and is not an SQLite database: refusing to overwrite "
			"it\n",
			prog, rt_esc(path));
		return -1;
	}
	uint32_t id = (uint32_t)h[68] << 24 | (uint32_t)h[69] << 16 | (uint32_t)h[70] << 8 | h[71];
	if (id != QUERY_APP_ID) {
		fprintf(stderr,
			"%s: --db %s: exists and is a database ringtrace did not write "
			"(application_id %#x): refusing to overwrite it\n",
			prog, rt_esc(path), id);
		return -1;
	}
	return 0;
}

static int db_exec(sqlite3 *db, const char *sql, const char *path)
{
	char *msg = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK)
		return 0;
	fprintf(stderr, "%s: --db %s: %s\n", prog, rt_esc(path),
		rt_esc(msg ? msg : sqlite3_errmsg(db)));
	sqlite3_free(msg);
	return -1;
}

/* The marks of a database of ours: application_id and ringtrace_meta. */
static int db_mark(struct dbfile *f, const char *dir)
{
	char sql[256];
	snprintf(sql, sizeof(sql),
		 "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA application_id = %d;"
		 "BEGIN;"
		 "CREATE TABLE ringtrace_meta (key TEXT PRIMARY KEY, value TEXT);",
		 (int)QUERY_APP_ID);
	if (db_exec(f->db, sql, f->path) < 0)
		return -1;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(f->db, "INSERT INTO ringtrace_meta VALUES (?1, ?2)", -1, &st,
			       NULL) != SQLITE_OK) {
		fprintf(stderr, "%s: --db %s: %s\n", prog, rt_esc(f->path), sqlite3_errmsg(f->db));
		return -1;
	}
	const char *kv[][2] = {{"format_version", QUERY_DB_FORMAT},
			       {"trace", dir},
			       {"ringtrace_version", RINGTRACE_VERSION_STRING}};
	int rc = SQLITE_DONE;
	for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]) && rc == SQLITE_DONE; i++) {
		sqlite3_bind_text(st, 1, kv[i][0], -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, kv[i][1], -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		fprintf(stderr, "%s: --db %s: %s\n", prog, rt_esc(f->path), sqlite3_errmsg(f->db));
		return -1;
	}
	return 0;
}

/* The temporary file beside FILE, created, opened by SQLite and marked.
 * 0, or -1 having said why (nothing left behind). */
static int db_create(struct dbfile *f, const char *dir)
{
	const char *slash = strrchr(f->path, '/');
	int dlen = slash ? (int)(slash - f->path + 1) : 0;
	if (asprintf(&f->tmp, "%.*s.%s.tmp-XXXXXX", dlen, f->path, slash ? slash + 1 : f->path) <
	    0) {
		f->tmp = NULL;
		fprintf(stderr, "%s: out of memory\n", prog);
		return -1;
	}
	f->fd = mkostemp(f->tmp, O_CLOEXEC);
	if (f->fd < 0) {
		fprintf(stderr, "%s: --db %s: creating %s: %s\n", prog, rt_esc(f->path),
			rt_esc(f->tmp), strerror(errno));
		free(f->tmp);
		f->tmp = NULL;
		return -1;
	}
	sig_tmp = f->tmp;
	mode_t mask = umask(0);
	umask(mask);
	if (fchmod(f->fd, 0666 & ~mask) < 0 || fstat(f->fd, &f->st) < 0) {
		fprintf(stderr, "%s: --db %s: %s\n", prog, rt_esc(f->tmp), strerror(errno));
		return -1;
	}
	/* (SQLITE_OPEN_NOFOLLOW: should the name have been swapped for a link) */
	if (sqlite3_open_v2(f->tmp, &f->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, NULL) !=
	    SQLITE_OK) {
		fprintf(stderr, "%s: --db %s: %s\n", prog, rt_esc(f->tmp),
			f->db ? sqlite3_errmsg(f->db) : "out of memory");
		return -1;
	}
	return db_mark(f, dir);
}

/* The file complete: committed, on disk, renamed to FILE. 0 or -1 (said). */
static int db_finish(struct dbfile *f)
{
	if (db_exec(f->db, "COMMIT", f->path) < 0)
		return -1;
	if (sqlite3_close(f->db) != SQLITE_OK) {
		fprintf(stderr, "%s: --db %s: closing: %s\n", prog, rt_esc(f->path),
			sqlite3_errmsg(f->db));
		return -1;
	}
	f->db = NULL;
	struct stat now;
	if (fsync(f->fd) < 0 || lstat(f->tmp, &now) < 0) {
		fprintf(stderr, "%s: --db %s: %s\n", prog, rt_esc(f->tmp), strerror(errno));
		return -1;
	}
	if (now.st_dev != f->st.st_dev || now.st_ino != f->st.st_ino) {
		fprintf(stderr, "%s: --db %s: %s was replaced while it was written: not renamed\n",
			prog, rt_esc(f->path), rt_esc(f->tmp));
		return -1;
	}
	/* (checked again: the import may have taken long) */
	if (db_replaceable(f->path) < 0)
		return -1;
	if (rename(f->tmp, f->path) < 0) {
		fprintf(stderr, "%s: --db %s: renaming %s to it: %s\n", prog, rt_esc(f->path),
			rt_esc(f->tmp), strerror(errno));
		return -1;
	}
	sig_tmp = NULL;
	free(f->tmp);
	f->tmp = NULL;
	return 0;
}

/* Whatever is left of the file: closed, the temporary one removed. */
static void db_abandon(struct dbfile *f)
{
	if (f->db)
		sqlite3_close(f->db);
	f->db = NULL;
	sig_tmp = NULL;
	if (f->tmp) {
		unlink(f->tmp);
		free(f->tmp);
		f->tmp = NULL;
	}
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
}

/* An existing database opened read-only, for the SQL (no link followed).
 * NULL having said why, with the exit status in *status: 2 refused (a
 * link, not a file), 1 unreadable. */
static sqlite3 *db_open_ro(const char *path, int *status)
{
	struct stat st;
	*status = 1;
	if (lstat(path, &st) < 0) {
		fprintf(stderr, "%s: --db %s: %s\n", prog, rt_esc(path), strerror(errno));
		return NULL;
	}
	if (S_ISLNK(st.st_mode) || !S_ISREG(st.st_mode)) {
		fprintf(stderr, "%s: --db %s: %s: refusing it\n", prog, rt_esc(path),
			S_ISLNK(st.st_mode) ? "is a symbolic link (not followed)"
					    : "not a regular file");
		*status = 2;
		return NULL;
	}
	sqlite3 *db = NULL;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW, NULL) !=
		    SQLITE_OK ||
	    sqlite3_exec(db, "SELECT count(*) FROM sqlite_schema", NULL, NULL, NULL) != SQLITE_OK) {
		fprintf(stderr, "%s: --db %s: %s\n", prog, rt_esc(path),
			db ? sqlite3_errmsg(db) : "out of memory");
		sqlite3_close(db);
		return NULL;
	}
	return db;
}

/* ---- the verb ---- */

static int parse_format(const char *s, enum fmt *f)
{
	static const char *const names[] = {"table", "csv", "tsv", "json"};
	for (int i = 0; i < 4; i++)
		if (strcmp(s, names[i]) == 0) {
			*f = (enum fmt)i;
			return 0;
		}
	return -1;
}

/* An option's value: "--opt=V" or the next argument. NULL: missing. */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
	size_t n = strlen(name);
	if (strncmp(argv[*i], name, n) == 0 && argv[*i][n] == '=')
		return argv[*i] + n + 1;
	return *i + 1 < argc ? argv[++*i] : NULL;
}

static int is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The command line into o: 0, 1 (help printed) or 2 (said). */
static int query_args(int argc, char **argv, struct opts *o)
{
	const char *pos[3];
	int npos = 0, opts_done = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		if (opts_done || a[0] != '-' || !a[1]) {
			if (npos == 2)
				return arg_usage_error("query", "unexpected argument %s", a);
			pos[npos++] = a;
		} else if (strcmp(a, "--") == 0) {
			opts_done = 1;
		} else if (cmd_is_help(a)) {
			fputs(query_help, stdout);
			return 1;
		} else if (strcmp(a, "-v") == 0) {
			o->verbose = 1;
		} else if (strcmp(a, "--format") == 0 || strncmp(a, "--format=", 9) == 0) {
			if (!(v = opt_value(argc, argv, &i, "--format")))
				return arg_usage_error("query", "%s needs a value", a);
			if (parse_format(v, &o->fmt) < 0)
				return arg_usage_error(
					"query", "--format %s: not table, csv, tsv or json", v);
		} else if (strcmp(a, "--chunk") == 0 || strncmp(a, "--chunk=", 8) == 0) {
			char why[160];
			if (!(v = opt_value(argc, argv, &i, "--chunk")))
				return arg_usage_error("query", "%s needs a number", a);
			if (arg_u64(v, UINT32_MAX, &o->chunk, why, sizeof(why)) < 0)
				return arg_usage_error("query", "--chunk: %s", why);
			if (!o->chunk)
				return arg_usage_error("query", "%s",
						       "--chunk 0: at least 1 record");
		} else if (strcmp(a, "-f") == 0) {
			if (!(o->file = opt_value(argc, argv, &i, "-f")))
				return arg_usage_error("query", "%s", "-f needs a file");
		} else if (strcmp(a, "--db") == 0 || strncmp(a, "--db=", 5) == 0) {
			if (!(o->db = opt_value(argc, argv, &i, "--db")) || !o->db[0])
				return arg_usage_error("query", "%s", "--db needs a file");
		} else {
			return arg_usage_error("query", "unknown option %s", a);
		}
	}
	if (o->db && npos == 1 && !is_dir(pos[0])) {
		o->sql = pos[0];
	} else if (npos) {
		o->dir = pos[0];
		o->sql = npos > 1 ? pos[1] : NULL;
	}
	if (!o->dir && !o->db)
		return arg_usage_error("query", "%s", "missing trace directory");
	if (o->chunk && !(o->dir && o->db))
		return arg_usage_error("query", "%s", "--chunk is for --db FILE DIR");
	if (!o->chunk)
		o->chunk = QUERY_CHUNK_EVENTS;
	if (o->sql && o->file)
		return arg_usage_error("query", "%s",
				       "SQL given twice (as an argument and with -f)");
	return 0;
}

/* The SQL to run (malloc'd), and where it comes from; NULL sql: none
 * (--db with DIR and nothing given). -1 said why. */
static int query_sql(const struct opts *o, char **sql, const char **src)
{
	*sql = NULL;
	if (o->sql) {
		*src = "the command line";
		*sql = strdup(o->sql);
	} else if (o->file) {
		*src = o->file;
		FILE *f = fopen(o->file, "re");
		if (!f) {
			fprintf(stderr, "%s: -f %s: %s\n", prog, rt_esc(o->file), strerror(errno));
			return -1;
		}
		*sql = read_all(f, o->file);
		fclose(f);
		return *sql ? 0 : -1;
	} else if (!(o->db && o->dir)) {
		/* (--db FILE DIR alone only writes the file: never waits for input) */
		*src = "standard input";
		*sql = read_all(stdin, "standard input");
		return *sql ? 0 : -1;
	} else {
		return 0;
	}
	if (!*sql) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return -1;
	}
	return 0;
}

/* DIR into an in-memory database and the SQL run on it. */
static int query_memory(const struct opts *o, const char *sql, const char *src)
{
	struct import_state is = {.dir = o->dir};
	struct qy_store *s = qy_store_new();
	sqlite3 *db = NULL;
	int rc = 1;
	if (!s || sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		fprintf(stderr, "%s: out of memory\n", prog);
		goto out;
	}
	int damaged = import_dir(&is, s, o->verbose);
	if (damaged < 0)
		goto out;
	char err[512] = "";
	if (qy_sqlite_attach(db, s, err, sizeof(err)) < 0 || qy_sqlite_lockdown(db) < 0) {
		fprintf(stderr, "%s: %s: making the tables: %s\n", prog, rt_esc(o->dir),
			err[0] ? rt_esc(err) : sqlite3_errmsg(db));
		goto out;
	}
	rc = run_sql(db, sql, src, o->fmt);
	if (!rc && damaged)
		rc = 1;
out:
	sqlite3_close(db);
	qy_store_free(s);
	return rc;
}

/* --db FILE DIR: the file written; then the SQL, if any, run on it. */
static int query_to_file(const struct opts *o, const char *sql, const char *src)
{
	struct dbfile f = {.path = o->db, .fd = -1};
	struct import_state is = {.dir = o->dir, .chunk = o->chunk};
	struct qy_store *s = NULL;
	int damaged = -1;
	if (db_replaceable(o->db) < 0)
		return 2;
	/* interrupted: the temporary file removed (a signal ignored when the
	 * command started, as SIGINT in a background job, stays ignored) */
	struct sigaction sa = {.sa_handler = on_signal}, old[3];
	const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
	for (int i = 0; i < 3; i++)
		if (sigaction(sigs[i], NULL, &old[i]) == 0 && old[i].sa_handler != SIG_IGN)
			sigaction(sigs[i], &sa, NULL);
	if (db_create(&f, o->dir) == 0) {
		if (!(s = qy_store_new()))
			fprintf(stderr, "%s: out of memory\n", prog);
		is.db = f.db;
		damaged = s ? import_dir(&is, s, o->verbose) : -1;
		if (damaged >= 0 && db_finish(&f) < 0)
			damaged = -1;
	}
	db_abandon(&f);
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &old[i], NULL);
	qy_store_free(s);
	if (damaged < 0)
		return 1;
	int rc = 0;
	if (sql) {
		sqlite3 *db = db_open_ro(o->db, &rc);
		if (!db)
			return rc;
		rc = qy_sqlite_lockdown(db) < 0 ? 1 : run_sql(db, sql, src, o->fmt);
		sqlite3_close(db);
	}
	return rc ? rc : damaged;
}

int verb_query(int argc, char **argv)
{
	struct opts o = {.fmt = FMT_TABLE};
	int rc = query_args(argc, argv, &o);
	if (rc)
		return rc == 1 ? 0 : rc;
	char *sql;
	const char *src = NULL;
	if (query_sql(&o, &sql, &src) < 0)
		return 2;
	if (o.dir && o.db) {
		rc = query_to_file(&o, sql, src);
	} else if (o.dir) {
		rc = query_memory(&o, sql, src);
	} else {
		sqlite3 *db = db_open_ro(o.db, &rc);
		if (db) {
			rc = qy_sqlite_lockdown(db) < 0 ? 1 : run_sql(db, sql, src, o.fmt);
			sqlite3_close(db);
		}
	}
	free(sql);
	return rc;
}
