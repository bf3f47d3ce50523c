/*
 * The connection's side of the SQL layer (query_api.h): the lockdown
 * that keeps the user's SQL inside the database, and the copy of the
 * store's tables into native tables (`--db FILE`).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <sqlite3.h>

#include "query/query_api.h"
#include "query/query_internal.h"

/*
 * The pragmas a query may run: those that only list what the connection
 * holds (the tables and their columns, indexes, functions, modules,
 * collations, options compiled in, the databases open) or check the
 * database, and, without a value, those that read one of its settings.
 * Every other pragma is refused: many set something with an argument
 * (writable_schema, trusted_schema, journal_mode, temp_store_directory,
 * schema_version) and some act even without one (optimize,
 * wal_checkpoint, incremental_vacuum, shrink_memory); an allow-list stays
 * right as SQLite adds pragmas. database_list shows the path of the
 * database the user opened, nothing else.
 */
static const char *const qy_pragmas_listing[] = {
	"table_info",     "table_xinfo",      "table_list",    "index_list",      "index_info",
	"index_xinfo",    "foreign_key_list", "function_list", "module_list",     "pragma_list",
	"collation_list", "compile_options",  "database_list", "integrity_check", "quick_check",
};
static const char *const qy_pragmas_read[] = {
	"application_id", "user_version", "schema_version", "data_version",
	"page_size",      "page_count",   "freelist_count", "encoding",
};

static int qy_listed(const char *name, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (name && strcasecmp(name, list[i]) == 0)
			return 1;
	return 0;
}

#define QY_LISTED(name, list) qy_listed(name, list, sizeof(list) / sizeof(list[0]))

static int qy_authorize(void *arg, int action, const char *a1, const char *a2, const char *db,
			const char *trigger)
{
	(void)arg;
	(void)db;
	(void)trigger;
	switch (action) {
	case SQLITE_ATTACH:
	case SQLITE_DETACH:
		/* another file read or written (VACUUM INTO attaches one too) */
		return SQLITE_DENY;
	case SQLITE_PRAGMA:
		if (QY_LISTED(a1, qy_pragmas_listing) || (!a2 && QY_LISTED(a1, qy_pragmas_read)))
			return SQLITE_OK;
		return SQLITE_DENY;
	case SQLITE_FUNCTION:
		/*
		 * load_extension: code from a file (refused by the connection's
		 * setting too; here so that the statement fails when prepared).
		 * fts3_tokenizer: with one argument it gives a pointer of the
		 * process, with two it installs one as code to call.
		 */
		if (a2 && (strcasecmp(a2, "load_extension") == 0 ||
			   strcasecmp(a2, "fts3_tokenizer") == 0))
			return SQLITE_DENY;
		return SQLITE_OK;
	default:
		return SQLITE_OK;
	}
}

int qy_sqlite_lockdown(sqlite3 *db)
{
	int rc = sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, (int *)NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_enable_load_extension(db, 0);
	/* fts3_tokenizer(name, pointer) refused as well by the connection */
	if (rc == SQLITE_OK)
		rc = sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER, 0, (int *)NULL);
	/* no writes to sqlite_schema, no pages edited by hand */
	if (rc == SQLITE_OK)
		rc = sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)NULL);
	/* functions with side effects not callable from a schema's views
	 * and triggers (a database file is the user's, perhaps not trusted) */
	if (rc == SQLITE_OK)
		rc = sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, (int *)NULL);
	if (rc != SQLITE_OK)
		return -1;
	sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0);
	if (sqlite3_set_authorizer(db, qy_authorize, NULL) != SQLITE_OK)
		return -1;
	return 0;
}

/* ---- copying into native tables ---- */

/* Whether temp holds the table's virtual table: 1, 0, or -1 on error. */
static int qy_attached(sqlite3 *db, const struct qy_table *t)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db,
			       "SELECT 1 FROM temp.sqlite_schema WHERE type = 'table' AND name = ?",
			       -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, t->name, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

/* The statements copying one table: CREATE TABLE (when create, or IF NOT
 * EXISTS), INSERT ... SELECT. Names quoted as qy_ident quotes them
 * ("%w": double quotes doubled), at any length. NULL out of memory. */
static char *qy_copy_sql(const struct qy_table *t, const char *schema, int create)
{
	static const char *const types[] = {"", "INTEGER", "REAL", "TEXT"};
	sqlite3_str *q = sqlite3_str_new(NULL);
	sqlite3_str_appendf(q, "CREATE TABLE %s\"%w\".\"%w\"(", create ? "" : "IF NOT EXISTS ",
			    schema, t->name);
	for (uint32_t c = 0; c < t->ncols; c++) {
		uint8_t type = t->cols[c].type;
		sqlite3_str_appendf(q, "%s\"%w\" %s", c ? ", " : "", t->cols[c].name,
				    type <= QY_TEXT ? types[type] : "");
	}
	sqlite3_str_appendf(q, ");\n");
	if (t->nrows)
		sqlite3_str_appendf(q, "INSERT INTO \"%w\".\"%w\" SELECT * FROM temp.\"%w\";",
				    schema, t->name, t->name);
	return sqlite3_str_finish(q);
}

static int qy_copy_table(sqlite3 *db, struct qy_store *s, struct qy_table *t, const char *schema,
			 int create, char *err, size_t errsize)
{
	int have = qy_attached(db, t);
	if (have < 0) {
		qy_err(err, errsize, "%s", sqlite3_errmsg(db));
		return -1;
	}
	if (!have && qy_sqlite_attach_table(db, s, t, err, errsize))
		return -1;
	char *sql = qy_copy_sql(t, schema, create);
	if (!sql) {
		qy_err(err, errsize, "table %s: out of memory", t->name);
		return -1;
	}
	char *msg = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
	sqlite3_free(sql);
	if (rc != SQLITE_OK) {
		qy_err(err, errsize, "copying table %s: %s", t->name,
		       msg ? msg : sqlite3_errstr(rc));
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

int qy_sqlite_copy(sqlite3 *db, struct qy_store *s, const char *schema, int create, char *err,
		   size_t errsize)
{
	/* one savepoint: a transaction of its own when none is open (an
	 * insert outside one would sync the file for every table), nested
	 * in the caller's otherwise; all copied or nothing */
	if (sqlite3_exec(db, "SAVEPOINT qy_copy", NULL, NULL, NULL) != SQLITE_OK) {
		qy_err(err, errsize, "%s", sqlite3_errmsg(db));
		return -1;
	}
	for (uint32_t i = 0; i < qy_table_count(s); i++) {
		if (qy_copy_table(db, s, qy_table_at(s, i), schema, create, err, errsize)) {
			sqlite3_exec(db, "ROLLBACK TO qy_copy; RELEASE qy_copy", NULL, NULL, NULL);
			return -1;
		}
	}
	if (sqlite3_exec(db, "RELEASE qy_copy", NULL, NULL, NULL) != SQLITE_OK) {
		qy_err(err, errsize, "%s", sqlite3_errmsg(db));
		sqlite3_exec(db, "ROLLBACK TO qy_copy; RELEASE qy_copy", NULL, NULL, NULL);
		return -1;
	}
	return 0;
}
