/*
 * Pairing a start and a stop event (query_api.h): the lookups of the
 * events' tables and fields, the pairs statement, and what `ringtrace
 * latency` needs from its rows (the latencies per group, sorted; the
 * longest pairs; the unpaired events; the losses that may have broken
 * pairs). The pairing itself is the table-valued function pairs()
 * (pair_vtab.c), so that a user's `ringtrace query` and the latency
 * command run the same code: the command runs the statement that
 * `ringtrace latency --sql` prints, its arguments bound.
 */
#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/pair.h"
#include "query/query_api.h"
#include "ringtrace/error.h"

static int qy_pair_sqlerr(sqlite3 *db, char *err, size_t errsize)
{
	snprintf(err, errsize, "%s", sqlite3_errmsg(db));
	return sqlite3_errcode(db) == SQLITE_NOMEM ? -RINGTRACE_ENOMEM : -RINGTRACE_EINVAL;
}

/* The values of a one-column query (text bound to ?1, ?2) joined by ", ",
 * for messages: at most size bytes, "..." where cut. */
static void qy_pair_list(sqlite3 *db, const char *sql, const char *a1, char *buf, size_t size)
{
	sqlite3_stmt *st = NULL;
	size_t o = 0;
	buf[0] = 0;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		snprintf(buf, size, "(unknown: %s)", sqlite3_errmsg(db));
		return;
	}
	if (a1)
		sqlite3_bind_text(st, 1, a1, -1, SQLITE_STATIC);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *v = (const char *)sqlite3_column_text(st, 0);
		int n = snprintf(buf + o, size - o, "%s%s", o ? ", " : "", v ? v : "NULL");
		if (n < 0 || (size_t)n >= size - o) {
			if (size > 4)
				memcpy(buf + size - 4, "...", 4);
			break;
		}
		o += (size_t)n;
	}
	if (!o && size > 7)
		snprintf(buf, size, "(none)");
	sqlite3_finalize(st);
}

/* The column of field in table, into col (QY_PAIR_IDENT bytes): 1 found,
 * 0 not, or an error. */
static int qy_pair_column(sqlite3 *db, const char *table, const char *field, char *col, char *err,
			  size_t errsize)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db,
			       "SELECT column_name FROM event_column WHERE table_name = ?1 AND "
			       "field = ?2",
			       -1, &st, NULL) != SQLITE_OK)
		return qy_pair_sqlerr(db, err, errsize);
	sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, field, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st), found = 0;
	if (rc == SQLITE_ROW) {
		const char *c = (const char *)sqlite3_column_text(st, 0);
		if (c && strlen(c) < QY_PAIR_IDENT) {
			snprintf(col, QY_PAIR_IDENT, "%s", c);
			found = 1;
		} else if (c) {
			snprintf(err, errsize, "a column name of table %s is too long", table);
			found = -RINGTRACE_EINVAL;
		}
	} else if (rc != SQLITE_DONE) {
		found = qy_pair_sqlerr(db, err, errsize);
	}
	sqlite3_finalize(st);
	return found;
}

/* A field of every table of the event into cols (NULL field: dflt). */
static int qy_pair_fields(sqlite3 *db, const char *event, const char (*names)[QY_PAIR_IDENT],
			  uint32_t n, const char *field, const char *dflt,
			  char (*cols)[QY_PAIR_IDENT], const char *what, char *err, size_t errsize)
{
	for (uint32_t i = 0; i < n; i++) {
		if (!field) {
			snprintf(cols[i], QY_PAIR_IDENT, "%s", dflt);
			continue;
		}
		int f = qy_pair_column(db, names[i], field, cols[i], err, errsize);
		if (f < 0)
			return f;
		if (!f) {
			char have[400];
			qy_pair_list(db,
				     "SELECT field FROM event_column WHERE table_name = ?1 "
				     "ORDER BY rowid",
				     names[i], have, sizeof(have));
			snprintf(err, errsize, "event '%s' has no field '%s' (%s; its fields: %s)",
				 event, field, what, have);
			return -RINGTRACE_ENOENT;
		}
	}
	return 0;
}

/* The event's tables and the key and group columns of each. */
int qy_pair_side(sqlite3 *db, const char *event, const char *key, const char *by, const char *role,
		 struct qy_pair_side *sd, char *err, size_t errsize)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db,
			       "SELECT table_name FROM event_table WHERE event = ?1 ORDER BY "
			       "table_name",
			       -1, &st, NULL) != SQLITE_OK)
		return qy_pair_sqlerr(db, err, errsize);
	sqlite3_bind_text(st, 1, event, -1, SQLITE_STATIC);
	int rc;
	sd->n = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(st, 0);
		if (!t)
			continue;
		if (sd->n == QY_PAIR_MAX_TABLES || strlen(t) >= QY_PAIR_IDENT) {
			sqlite3_finalize(st);
			snprintf(err, errsize,
				 "event '%s' is in more tables, or longer-named ones, than pairing "
				 "takes (%d)",
				 event, QY_PAIR_MAX_TABLES);
			return -RINGTRACE_EINVAL;
		}
		snprintf(sd->names[sd->n++], QY_PAIR_IDENT, "%s", t);
	}
	if (rc != SQLITE_DONE) {
		rc = qy_pair_sqlerr(db, err, errsize);
		sqlite3_finalize(st);
		return rc;
	}
	sqlite3_finalize(st);
	if (!sd->n) {
		char have[400];
		qy_pair_list(db, "SELECT DISTINCT event FROM event_table ORDER BY event", NULL,
			     have, sizeof(have));
		snprintf(err, errsize, "no event '%s' in the trace (%s; its events: %s)", event,
			 role, have);
		return -RINGTRACE_ENOENT;
	}
	const char(*names)[QY_PAIR_IDENT] = (const char(*)[QY_PAIR_IDENT])sd->names;
	int f = qy_pair_fields(db, event, names, sd->n, key, "utid", sd->key, "the key field", err,
			       errsize);
	if (f == 0)
		f = qy_pair_fields(db, event, names, sd->n, by, "", sd->by, "the group field", err,
				   errsize);
	return f;
}

/* A name as an SQL value: 'name' when it is letters, digits and '_',
 * else its bytes in hex as text, so that no name from the trace is ever
 * SQL text, not even inside a literal. */
static void qy_pair_value(sqlite3_str *q, const char *v)
{
	size_t n = v ? strlen(v) : 0, plain = n > 0 && n <= 64;
	for (size_t i = 0; plain && i < n; i++)
		plain = (v[i] >= 'a' && v[i] <= 'z') || (v[i] >= 'A' && v[i] <= 'Z') ||
			(v[i] >= '0' && v[i] <= '9') || v[i] == '_';
	if (!v) {
		sqlite3_str_appendall(q, "NULL");
	} else if (plain) {
		sqlite3_str_appendf(q, "'%s'", v);
	} else {
		sqlite3_str_appendall(q, "CAST(X'");
		for (size_t i = 0; i < n; i++)
			sqlite3_str_appendf(q, "%02x", (unsigned)(uint8_t)v[i]);
		sqlite3_str_appendall(q, "' AS TEXT)");
	}
}

/* The check of the spec that pairs() makes too, for an early message. */
static int qy_pair_check(sqlite3 *db, const struct qy_pair_spec *p, char *err, size_t errsize)
{
	if (strcmp(p->from, p->to) == 0) {
		snprintf(err, errsize,
			 "--from and --to are the same event '%s': a start and a stop are two "
			 "events",
			 p->from);
		return -RINGTRACE_ENOENT;
	}
	struct qy_pair_side *sd = malloc(sizeof(*sd));
	if (!sd) {
		snprintf(err, errsize, "out of memory");
		return -RINGTRACE_ENOMEM;
	}
	int rc = qy_pair_side(db, p->from, p->key, p->by, "--from", sd, err, errsize);
	if (rc == 0)
		rc = qy_pair_side(db, p->to, p->stop_key ? p->stop_key : p->key, NULL, "--to", sd,
				  err, errsize);
	free(sd);
	return rc;
}

int qy_pair_sql(sqlite3 *db, const struct qy_pair_spec *p, char **sql, char *err, size_t errsize)
{
	*sql = NULL;
	int rc = qy_pair_check(db, p, err, errsize);
	if (rc < 0)
		return rc;
	sqlite3_str *q = sqlite3_str_new(db);
	sqlite3_str_appendall(q, QY_PAIR_SELECT "(");
	const char *args[] = {p->from, p->to, p->key, p->stop_key, p->by};
	for (size_t i = 0; i < sizeof(args) / sizeof(args[0]); i++) {
		if (i)
			sqlite3_str_appendall(q, ", ");
		qy_pair_value(q, args[i]);
	}
	sqlite3_str_appendall(q, ")\n");
	if (sqlite3_str_errcode(q) != SQLITE_OK) {
		sqlite3_free(sqlite3_str_finish(q));
		snprintf(err, errsize, "out of memory");
		return -RINGTRACE_ENOMEM;
	}
	char *s = sqlite3_str_finish(q);
	*sql = s ? strdup(s) : NULL;
	sqlite3_free(s);
	if (!*sql) {
		snprintf(err, errsize, "out of memory");
		return -RINGTRACE_ENOMEM;
	}
	return 0;
}

int64_t qy_pair_percentile(const int64_t *sorted, uint64_t n, unsigned permille)
{
	if (!n)
		return 0;
	if (permille > 1000)
		permille = 1000;
	/* ceil(permille * n / 1000) without overflow for any n */
	uint64_t rank = n / 1000 * permille + (n % 1000 * permille + 999) / 1000;
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return sorted[rank - 1];
}

/* ---- collecting the rows ---- */

struct qy_pair_acc {
	struct qy_pairs *p;
	uint32_t top;
	uint32_t *slots; /* group index + 1, 0 empty; a power of two of them */
	uint32_t nslots, gcap;
	int64_t *loss; /* the loss rows' times, ascending */
	uint64_t nloss;
};

static uint32_t qy_pair_hash(const char *s)
{
	uint32_t h = 2166136261u;
	if (!s)
		return 1;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

static int qy_pair_same(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static int qy_pair_grow_slots(struct qy_pair_acc *a)
{
	uint32_t n = a->nslots ? a->nslots * 2 : 64;
	uint32_t *s = calloc(n, sizeof(*s));
	if (!s)
		return -1;
	for (uint32_t i = 0; i < a->p->ng; i++) {
		uint32_t j = qy_pair_hash(a->p->g[i].grp) & (n - 1);
		while (s[j])
			j = (j + 1) & (n - 1);
		s[j] = i + 1;
	}
	free(a->slots);
	a->slots = s;
	a->nslots = n;
	return 0;
}

/* The group of value grp (NULL: NULL), made at first sight: its index, or -1. */
static int64_t qy_pair_group(struct qy_pair_acc *a, const char *grp)
{
	struct qy_pairs *p = a->p;
	if ((uint64_t)p->ng * 2 >= a->nslots && qy_pair_grow_slots(a) < 0)
		return -1;
	uint32_t j = qy_pair_hash(grp) & (a->nslots - 1);
	for (; a->slots[j]; j = (j + 1) & (a->nslots - 1))
		if (qy_pair_same(p->g[a->slots[j] - 1].grp, grp))
			return a->slots[j] - 1;
	if (p->ng == UINT32_MAX - 1)
		return -1;
	if (p->ng == a->gcap) {
		uint32_t cap = a->gcap ? a->gcap * 2 : 16;
		struct qy_pair_group *g = realloc(p->g, cap * sizeof(*g));
		if (!g)
			return -1;
		p->g = g;
		a->gcap = cap;
	}
	struct qy_pair_group *g = &p->g[p->ng];
	memset(g, 0, sizeof(*g));
	if (grp && !(g->grp = strdup(grp)))
		return -1;
	a->slots[j] = ++p->ng;
	return p->ng - 1;
}

static void qy_pair_item_free(struct qy_pair_item *it)
{
	free(it->key);
	free(it->grp);
}

/*
 * Keep the best `top` items in v (*n of them, best first): better(x, y)
 * when x goes before y. The item's strings are copied when kept. 0, or -1
 * out of memory.
 */
static int qy_pair_keep(struct qy_pair_item **v, uint32_t *n, uint32_t top,
			const struct qy_pair_item *it,
			int (*better)(const struct qy_pair_item *, const struct qy_pair_item *))
{
	if (!top || (*n == top && !better(it, &(*v)[*n - 1])))
		return 0;
	if (!*v && !(*v = calloc(top, sizeof(**v))))
		return -1;
	struct qy_pair_item c = *it;
	c.key = it->key ? strdup(it->key) : NULL;
	c.grp = it->grp ? strdup(it->grp) : NULL;
	if ((it->key && !c.key) || (it->grp && !c.grp)) {
		qy_pair_item_free(&c);
		return -1;
	}
	uint32_t i;
	if (*n < top) {
		i = (*n)++;
	} else { /* the last one goes */
		i = top - 1;
		qy_pair_item_free(&(*v)[i]);
	}
	for (; i > 0 && better(&c, &(*v)[i - 1]); i--)
		(*v)[i] = (*v)[i - 1];
	(*v)[i] = c;
	return 0;
}

/* Longest first; of equal ones, the earlier. */
static int qy_pair_longer(const struct qy_pair_item *x, const struct qy_pair_item *y)
{
	return x->dur > y->dur || (x->dur == y->dur && x->ts < y->ts);
}

/* Earliest first (an unpaired stop's time is its stop_ts). */
static int qy_pair_earlier(const struct qy_pair_item *x, const struct qy_pair_item *y)
{
	int64_t tx = x->id < 0 ? x->stop_ts : x->ts, ty = y->id < 0 ? y->stop_ts : y->ts;
	return tx < ty;
}

/* The number of loss rows at or before t. */
static uint64_t qy_pair_losses_upto(const struct qy_pair_acc *a, int64_t t)
{
	uint64_t lo = 0, hi = a->nloss;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (a->loss[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int64_t qy_pair_int(sqlite3_stmt *st, int col)
{
	return sqlite3_column_type(st, col) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, col);
}

/* One row of the pairs query into the collection. 0, or -1 out of memory. */
static int qy_pair_row(struct qy_pair_acc *a, sqlite3_stmt *st)
{
	struct qy_pairs *p = a->p;
	struct qy_pair_item it = {
		.id = qy_pair_int(st, 0),
		.ts = qy_pair_int(st, 1),
		.start_thread = {.utid = qy_pair_int(st, 2)},
		.dur = qy_pair_int(st, 3),
		.stop_id = qy_pair_int(st, 4),
		.stop_ts = qy_pair_int(st, 5),
		.stop_thread = {.utid = qy_pair_int(st, 6)},
		.key = (char *)sqlite3_column_text(st, 7),
		.grp = (char *)sqlite3_column_text(st, 8),
	};
	if (it.id >= 0 && it.stop_id >= 0) {
		int64_t g = qy_pair_group(a, it.grp);
		if (g < 0)
			return -1;
		struct qy_pair_group *gr = &p->g[g];
		if (gr->n == gr->cap) {
			uint64_t cap = gr->cap ? gr->cap * 2 : 64;
			int64_t *l = realloc(gr->lat, cap * sizeof(*l));
			if (!l)
				return -1;
			gr->lat = l;
			gr->cap = cap;
		}
		gr->lat[gr->n++] = it.dur;
		p->npairs++;
		it.lossy = qy_pair_losses_upto(a, it.stop_ts) > qy_pair_losses_upto(a, it.ts);
		gr->lossy += (uint64_t)it.lossy;
		return qy_pair_keep(&gr->top, &gr->ntop, a->top, &it, qy_pair_longer);
	}
	if (it.stop_id < 0) { /* a start never stopped: its stop may be among the lost */
		p->nstart_only++;
		it.lossy = qy_pair_losses_upto(a, it.ts) < a->nloss;
		p->start_lossy += (uint64_t)it.lossy;
		return qy_pair_keep(&p->starts, &p->nstarts, a->top, &it, qy_pair_earlier);
	}
	p->nstop_only++; /* a stop never started: its start may be among the lost */
	it.lossy = qy_pair_losses_upto(a, it.stop_ts) > 0;
	p->stop_lossy += (uint64_t)it.lossy;
	return qy_pair_keep(&p->stops, &p->nstops, a->top, &it, qy_pair_earlier);
}

/* The loss table's times (ascending) and sums. 0, or an error. */
static int qy_pair_load_losses(sqlite3 *db, struct qy_pair_acc *a, char *err, size_t errsize)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db,
			       "SELECT ts, coalesce(dropped, 0) + coalesce(overrun, 0) FROM loss "
			       "WHERE ts IS NOT NULL ORDER BY ts",
			       -1, &st, NULL) != SQLITE_OK)
		return qy_pair_sqlerr(db, err, errsize);
	uint64_t cap = 0;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (a->nloss == cap) {
			cap = cap ? cap * 2 : 64;
			int64_t *l = realloc(a->loss, cap * sizeof(*l));
			if (!l) {
				sqlite3_finalize(st);
				snprintf(err, errsize, "out of memory");
				return -RINGTRACE_ENOMEM;
			}
			a->loss = l;
		}
		a->loss[a->nloss++] = sqlite3_column_int64(st, 0);
		a->p->lost_events += (uint64_t)sqlite3_column_int64(st, 1);
	}
	a->p->loss_places = a->nloss;
	if (rc != SQLITE_DONE)
		rc = qy_pair_sqlerr(db, err, errsize);
	else
		rc = 0;
	sqlite3_finalize(st);
	return rc;
}

static void qy_pair_name(sqlite3_stmt *st, struct qy_pair_thread *t)
{
	t->tid = -1;
	t->name[0] = 0;
	if (t->utid < 0)
		return;
	sqlite3_reset(st);
	sqlite3_bind_int64(st, 1, t->utid);
	if (sqlite3_step(st) != SQLITE_ROW)
		return;
	t->tid = qy_pair_int(st, 0);
	const char *n = (const char *)sqlite3_column_text(st, 1);
	snprintf(t->name, sizeof(t->name), "%s", n ? n : "");
}

/* The threads of the items kept, by name from `thread`. */
static int qy_pair_threads(sqlite3 *db, struct qy_pairs *p, char *err, size_t errsize)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db, "SELECT tid, name FROM thread WHERE utid = ?1", -1, &st, NULL) !=
	    SQLITE_OK)
		return qy_pair_sqlerr(db, err, errsize);
	for (uint32_t g = 0; g < p->ng; g++)
		for (uint32_t i = 0; i < p->g[g].ntop; i++) {
			qy_pair_name(st, &p->g[g].top[i].start_thread);
			qy_pair_name(st, &p->g[g].top[i].stop_thread);
		}
	for (uint32_t i = 0; i < p->nstarts; i++)
		qy_pair_name(st, &p->starts[i].start_thread);
	for (uint32_t i = 0; i < p->nstops; i++)
		qy_pair_name(st, &p->stops[i].stop_thread);
	sqlite3_finalize(st);
	return 0;
}

static int qy_pair_cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
	return a < b ? -1 : a > b;
}

/* Whether s is a whole decimal integer (then *v). */
static int qy_pair_is_int(const char *s, long long *v)
{
	char *end;
	if (!s || !*s)
		return 0;
	errno = 0;
	*v = strtoll(s, &end, 10);
	return !*end && !errno;
}

/* Groups in order of value: NULL first, integers by number, then text. */
static int qy_pair_cmp_group(const void *x, const void *y)
{
	const char *a = ((const struct qy_pair_group *)x)->grp;
	const char *b = ((const struct qy_pair_group *)y)->grp;
	long long ia, ib;
	if (!a || !b)
		return a ? 1 : b ? -1 : 0;
	int na = qy_pair_is_int(a, &ia), nb = qy_pair_is_int(b, &ib);
	if (na && nb)
		return ia < ib ? -1 : ia > ib;
	if (na != nb)
		return na ? -1 : 1;
	return strcmp(a, b);
}

int qy_pairs_collect(sqlite3 *db, const struct qy_pair_spec *sp, uint32_t top, struct qy_pairs *out,
		     char *err, size_t errsize)
{
	memset(out, 0, sizeof(*out));
	struct qy_pair_acc a = {.p = out, .top = top};
	sqlite3_stmt *st = NULL;
	int rc = qy_pair_load_losses(db, &a, err, errsize);
	if (rc == 0 && sqlite3_prepare_v2(db, QY_PAIR_SELECT "(?1, ?2, ?3, ?4, ?5)", -1, &st,
					  NULL) != SQLITE_OK)
		rc = qy_pair_sqlerr(db, err, errsize);
	if (rc == 0) {
		const char *args[] = {sp->from, sp->to, sp->key, sp->stop_key, sp->by};
		for (int i = 0; i < 5; i++)
			sqlite3_bind_text(st, i + 1, args[i], -1, SQLITE_STATIC);
	}
	int step = SQLITE_DONE;
	while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW)
		if (qy_pair_row(&a, st) < 0) {
			snprintf(err, errsize, "out of memory");
			rc = -RINGTRACE_ENOMEM;
		}
	if (rc == 0 && step != SQLITE_DONE)
		rc = qy_pair_sqlerr(db, err, errsize);
	sqlite3_finalize(st);
	free(a.slots);
	free(a.loss);
	if (rc == 0)
		rc = qy_pair_threads(db, out, err, errsize);
	if (rc < 0) {
		qy_pairs_free(out);
		return rc;
	}
	for (uint32_t g = 0; g < out->ng; g++)
		qsort(out->g[g].lat, out->g[g].n, sizeof(int64_t), qy_pair_cmp_i64);
	qsort(out->g, out->ng, sizeof(*out->g), qy_pair_cmp_group);
	return 0;
}

void qy_pairs_free(struct qy_pairs *p)
{
	for (uint32_t g = 0; g < p->ng; g++) {
		for (uint32_t i = 0; i < p->g[g].ntop; i++)
			qy_pair_item_free(&p->g[g].top[i]);
		free(p->g[g].top);
		free(p->g[g].lat);
		free(p->g[g].grp);
	}
	for (uint32_t i = 0; i < p->nstarts; i++)
		qy_pair_item_free(&p->starts[i]);
	for (uint32_t i = 0; i < p->nstops; i++)
		qy_pair_item_free(&p->stops[i]);
	free(p->g);
	free(p->starts);
	free(p->stops);
	memset(p, 0, sizeof(*p));
}
