/*
 * src/query/pair.h - inside the SQL layer: what the pairs statement
 * (pair.c) and the pairs() table-valued function (pair_vtab.c) share:
 * the lookup of an event's tables and of its key and group columns.
 */
#ifndef RINGTRACE_QUERY_PAIR_H
#define RINGTRACE_QUERY_PAIR_H

#include <stdint.h>

#include "query/query_api.h"

/* Tables one event name may span (a collection's traces may define it
 * with different fields: a table each). */
#define QY_PAIR_MAX_TABLES 64
/* Table and column names in the tables are at most this long. */
#define QY_PAIR_IDENT 600

/* The columns of the pairs statement, before pairs(from, to, key,
 * stop_key, by). */
#define QY_PAIR_SELECT "SELECT id, ts, utid, dur, stop_id, stop_ts, stop_utid, key, grp FROM pairs"

/* An event's tables (as event_table names them) and in each the column
 * of the key ("utid" when by thread) and of the group ("" for none). */
struct qy_pair_side {
	char names[QY_PAIR_MAX_TABLES][QY_PAIR_IDENT];
	char key[QY_PAIR_MAX_TABLES][QY_PAIR_IDENT];
	char by[QY_PAIR_MAX_TABLES][QY_PAIR_IDENT];
	uint32_t n;
};

/*
 * The tables of event and their columns of the fields key (NULL: the
 * thread) and by (NULL: none), looked up in event_table and event_column
 * of db (names bound). role names the event in messages ("--from").
 * 0; -RINGTRACE_ENOENT with err saying what is missing and what there is;
 * another negative error with SQLite's message.
 */
int qy_pair_side(sqlite3 *db, const char *event, const char *key, const char *by, const char *role,
		 struct qy_pair_side *sd, char *err, size_t errsize);

/* pairs() in db, reading the store's columns (pair_vtab.c). 0, or SQLite's error. */
int qy_pairs_register(sqlite3 *db, struct qy_store *s);

#endif
