/*
 * The store: tables in columns of our own (query_api.h).
 *
 * A column is one array of cap values; a new row grows every array of its
 * table by doubling, so appending costs an amortized store per column.
 * Strings are interned in one open-addressing hash table: a trace repeats
 * its thread and event names millions of times, and a string column holds
 * 4-byte ids. The string bytes live in large blocks that never move, so a
 * pointer handed to SQLite stays valid for the store's life.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>

#include "query/query_api.h"
#include "query/query_internal.h"

#define QY_BLOCK (1u << 20) /* string bytes per block (larger strings: a block of their own) */

struct qy_sblock {
	struct qy_sblock *next;
	size_t used, size;
	char data[];
};

struct qy_store {
	struct qy_table **tables;
	uint32_t ntables, tcap;
	/* strings: id -> (pointer, length); hash slots hold ids */
	const char **sp;
	uint32_t *slen;
	uint32_t nstr, strcap; /* ids 1 .. nstr - 1 are used (0 is NULL) */
	uint32_t *slots;       /* 0 empty */
	uint32_t nslots;       /* a power of two */
	struct qy_sblock *blocks;
	uint64_t sbytes;
};

static size_t qy_elem(uint8_t type)
{
	return type == QY_TEXT ? sizeof(uint32_t) : 8;
}

struct qy_store *qy_store_new(void)
{
	struct qy_store *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->nstr = 1;
	return s;
}

static void qy_touch_forget(struct qy_table *t);

static void qy_table_free(struct qy_table *t)
{
	if (!t)
		return;
	qy_touch_forget(t);
	if (t->ops && t->ops->free)
		t->ops->free(t);
	for (uint32_t c = 0; c < t->ncols; c++) {
		free(t->cols[c].name);
		free(t->cols[c].v);
		free(t->cols[c].perm);
		free(t->cols[c].vmin);
	}
	free(t->cols);
	free(t->name);
	free(t);
}

void qy_store_free(struct qy_store *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; i < s->ntables; i++)
		qy_table_free(s->tables[i]);
	free(s->tables);
	while (s->blocks) {
		struct qy_sblock *b = s->blocks;
		s->blocks = b->next;
		free(b);
	}
	free(s->sp);
	free(s->slen);
	free(s->slots);
	free(s);
}

struct qy_table *qy_table_find(struct qy_store *s, const char *name)
{
	for (uint32_t i = 0; i < s->ntables; i++)
		if (strcmp(s->tables[i]->name, name) == 0)
			return s->tables[i];
	return NULL;
}

struct qy_table *qy_table_add(struct qy_store *s, const char *name, const struct qy_coldef *cols,
			      uint32_t ncols)
{
	if (qy_table_find(s, name))
		return NULL;
	if (s->ntables == s->tcap) {
		uint32_t cap = s->tcap ? s->tcap * 2 : 32;
		struct qy_table **n = realloc(s->tables, cap * sizeof(*n));
		if (!n)
			return NULL;
		s->tables = n;
		s->tcap = cap;
	}
	struct qy_table *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->name = strdup(name);
	t->cols = calloc(ncols ? ncols : 1, sizeof(*t->cols));
	if (!t->name || !t->cols) {
		qy_table_free(t);
		return NULL;
	}
	for (uint32_t c = 0; c < ncols; c++) {
		t->ncols = c + 1;
		t->cols[c].type = cols[c].type;
		t->cols[c].sorted = -1;
		if (!(t->cols[c].name = strdup(cols[c].name))) {
			qy_table_free(t);
			return NULL;
		}
	}
	t->ncols = ncols;
	s->tables[s->ntables++] = t;
	return t;
}

uint32_t qy_table_count(const struct qy_store *s)
{
	return s->ntables;
}

struct qy_table *qy_table_at(struct qy_store *s, uint32_t i)
{
	return i < s->ntables ? s->tables[i] : NULL;
}

int qy_col_find(const struct qy_table *t, const char *name)
{
	for (uint32_t c = 0; c < t->ncols; c++)
		if (strcmp(t->cols[c].name, name) == 0)
			return (int)c;
	return -1;
}

/*
 * The toucher: a thread that reads a byte of each page of the rows that a
 * table will be given next, on the other CPU, while the import fills the
 * rows before them. Where taking a fresh page is slow (a virtual machine
 * that backs the guest's memory at its first access: that cost, not the
 * writing of the rows, bounds the import), its first access is then the
 * toucher's. The pages were made present (MADV_POPULATE_WRITE) first, so
 * that a read maps the page itself, not the zero page. It changes no
 * data; the columns it reads never move under it (qy_grow and
 * qy_table_free take qy_touch_mu); one per process, started at the
 * first large table. Left out of ThreadSanitizer builds: it reads, by
 * design, what the filling thread writes later without ordering.
 */
#if defined(__SANITIZE_THREAD__)
#define QY_TOUCHER 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define QY_TOUCHER 0
#endif
#endif
#ifndef QY_TOUCHER
#define QY_TOUCHER 1
#endif

#define QY_TOUCH_JOBS 64u

struct qy_touch_job {
	struct qy_table *t;
	uint64_t from, to; /* rows */
};

static pthread_mutex_t qy_touch_mu = PTHREAD_MUTEX_INITIALIZER;  /* the columns' memory */
static pthread_mutex_t qy_touch_qmu = PTHREAD_MUTEX_INITIALIZER; /* the jobs */
static pthread_cond_t qy_touch_cv = PTHREAD_COND_INITIALIZER;
static struct qy_touch_job qy_touch_q[QY_TOUCH_JOBS];
static uint32_t qy_touch_head, qy_touch_n;
static int qy_touch_state; /* 0 not started, 1 running, -1 cannot start */

/* Rows [from, to) of t, every column, read a byte a page (qy_touch_mu held). */
static void qy_touch_rows(struct qy_table *t, uint64_t from, uint64_t to)
{
	const uintptr_t pg = 4096;
	if (to > t->cap)
		to = t->cap;
	for (uint32_t c = 0; c < t->ncols && from < to; c++) {
		size_t el = qy_elem(t->cols[c].type);
		const char *v = t->cols[c].v;
		uintptr_t a = ((uintptr_t)v + from * el + pg - 1) & ~(pg - 1),
			  e = (uintptr_t)v + to * el;
		for (; a < e; a += pg)
			(void)__atomic_load_n((const char *)a, __ATOMIC_RELAXED);
	}
}

static void *qy_toucher(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&qy_touch_qmu);
	for (;;) {
		while (!qy_touch_n)
			pthread_cond_wait(&qy_touch_cv, &qy_touch_qmu);
		struct qy_touch_job j = qy_touch_q[qy_touch_head];
		pthread_mutex_unlock(&qy_touch_qmu);
		/* a few pages at a time, so that qy_grow waits little */
		for (uint64_t r = j.from; r < j.to;) {
			uint64_t e = r + 1024 < j.to ? r + 1024 : j.to;
			pthread_mutex_lock(&qy_touch_mu);
			qy_touch_rows(j.t, r, e);
			pthread_mutex_unlock(&qy_touch_mu);
			r = e;
		}
		pthread_mutex_lock(&qy_touch_qmu);
		/* (the job stays queued while it runs: qy_touch_forget waits for it) */
		qy_touch_head = (qy_touch_head + 1) % QY_TOUCH_JOBS;
		qy_touch_n--;
		pthread_cond_broadcast(&qy_touch_cv);
	}
	return NULL;
}

/* Rows [from, to) of t for the toucher (none if its queue is full). */
static void qy_touch(struct qy_table *t, uint64_t from, uint64_t to)
{
	if (!QY_TOUCHER)
		return;
	pthread_mutex_lock(&qy_touch_qmu);
	if (!qy_touch_state) {
		pthread_t th;
		pthread_attr_t at;
		int ok = pthread_attr_init(&at) == 0;
		if (ok && pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED) == 0 &&
		    pthread_create(&th, &at, qy_toucher, NULL) == 0)
			qy_touch_state = 1;
		else
			qy_touch_state = -1;
		if (ok)
			pthread_attr_destroy(&at);
	}
	if (qy_touch_state == 1 && qy_touch_n < QY_TOUCH_JOBS) {
		struct qy_touch_job *j = &qy_touch_q[(qy_touch_head + qy_touch_n) % QY_TOUCH_JOBS];
		j->t = t;
		j->from = from;
		j->to = to;
		qy_touch_n++;
		pthread_cond_broadcast(&qy_touch_cv);
	}
	pthread_mutex_unlock(&qy_touch_qmu);
}

/* No job of t is queued or running any more (before t is freed). */
static void qy_touch_forget(struct qy_table *t)
{
	if (!QY_TOUCHER)
		return;
	pthread_mutex_lock(&qy_touch_qmu);
	for (uint32_t i = 0; i < qy_touch_n; i++) {
		struct qy_touch_job *j = &qy_touch_q[(qy_touch_head + i) % QY_TOUCH_JOBS];
		if (j->t == t && i > 0)
			j->from = j->to; /* queued: nothing left to do */
	}
	/* the one running (the head) is waited for */
	while (qy_touch_n && qy_touch_q[qy_touch_head].t == t)
		pthread_cond_wait(&qy_touch_cv, &qy_touch_qmu);
	pthread_mutex_unlock(&qy_touch_qmu);
}

static int qy_grow(struct qy_table *t)
{
	uint64_t cap = t->cap ? t->cap * 2 : 1024;
	/* row indexes are uint32_t in the column indexes (perm) */
	if (cap > UINT32_MAX)
		cap = UINT32_MAX;
	if (cap <= t->nrows)
		return -1;
	int r = 0;
	pthread_mutex_lock(&qy_touch_mu);
	for (uint32_t c = 0; c < t->ncols && !r; c++) {
		void *n = realloc(t->cols[c].v, cap * qy_elem(t->cols[c].type));
		if (n)
			t->cols[c].v = n;
		else
			r = -1;
	}
	if (!r)
		t->cap = cap;
	pthread_mutex_unlock(&qy_touch_mu);
	return r;
}

#define QY_PREFAULT_ROWS 16384u

/*
 * The memory of rows [r, r + QY_PREFAULT_ROWS) of every column made present
 * in one call per column, before the rows are written: a column is written
 * once, front to back, and taking a page fault for each 4 KiB page costs
 * more than writing the rows it holds (far more in a virtual machine).
 * Where the system cannot (before Linux 5.14), the pages fault in as they
 * are used.
 */
static void qy_prefault(struct qy_table *t, uint64_t r)
{
#ifdef MADV_POPULATE_WRITE
	const uintptr_t pg = 4096;
	uint64_t end = r + QY_PREFAULT_ROWS < t->cap ? r + QY_PREFAULT_ROWS : t->cap;
	for (uint32_t c = 0; c < t->ncols; c++) {
		size_t el = qy_elem(t->cols[c].type);
		uintptr_t a = ((uintptr_t)t->cols[c].v + r * el + pg - 1) & ~(pg - 1),
			  e = ((uintptr_t)t->cols[c].v + end * el) & ~(pg - 1);
		if (e > a)
			madvise((void *)a, e - a, MADV_POPULATE_WRITE);
	}
#else
	(void)t;
	(void)r;
#endif
}

int64_t qy_row(struct qy_table *t)
{
	if (t->nrows == t->cap && qy_grow(t))
		return -1;
	uint64_t r = t->nrows++;
	/* the next window's pages made present, and given to the toucher */
	if (r % QY_PREFAULT_ROWS == 0) {
		if (r == 0)
			qy_prefault(t, 0);
		if (r + QY_PREFAULT_ROWS < t->cap) {
			qy_prefault(t, r + QY_PREFAULT_ROWS);
			qy_touch(t, r + QY_PREFAULT_ROWS, r + 2 * (uint64_t)QY_PREFAULT_ROWS);
		}
	}
	for (uint32_t c = 0; c < t->ncols; c++) {
		switch (t->cols[c].type) {
		case QY_INT:
			((int64_t *)t->cols[c].v)[r] = QY_NULL_INT;
			break;
		case QY_REAL:
			((double *)t->cols[c].v)[r] = NAN;
			break;
		default:
			((uint32_t *)t->cols[c].v)[r] = 0;
		}
	}
	return (int64_t)r;
}

/* The first index of col's marked rows that is >= r (nvmin: none). */
static uint32_t qy_vmin_lower(const struct qy_col *col, uint64_t r)
{
	uint32_t lo = 0, hi = col->nvmin;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (col->vmin[mid] < r)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int qy_i64_min(struct qy_table *t, uint32_t c, uint64_t r)
{
	struct qy_col *col = &t->cols[c];
	uint32_t n = col->nvmin, at = n;
	((int64_t *)col->v)[r] = INT64_MIN;
	/* rows come in ascending order from the import: appended; else
	 * inserted in place, once */
	if (n && col->vmin[n - 1] >= r) {
		at = qy_vmin_lower(col, r);
		if (col->vmin[at] == r)
			return 0;
	}
	if (n == col->capvmin) {
		uint32_t cap = n ? n * 2 : 16;
		uint32_t *p = cap > n ? realloc(col->vmin, cap * sizeof(*p)) : NULL;
		if (!p)
			return -1;
		col->vmin = p;
		col->capvmin = cap;
	}
	memmove(col->vmin + at + 1, col->vmin + at, (n - at) * sizeof(*col->vmin));
	col->vmin[at] = (uint32_t)r;
	col->nvmin = n + 1;
	return 0;
}

int qy_col_min_at(const struct qy_col *col, uint64_t r)
{
	uint32_t lo = qy_vmin_lower(col, r);
	return lo < col->nvmin && col->vmin[lo] == r;
}

void qy_table_changed(struct qy_table *t)
{
	for (uint32_t c = 0; c < t->ncols; c++) {
		free(t->cols[c].perm);
		t->cols[c].perm = NULL;
		t->cols[c].sorted = -1;
	}
}

void qy_table_clear(struct qy_table *t)
{
	t->base += t->nrows;
	t->nrows = 0;
	for (uint32_t c = 0; c < t->ncols; c++)
		t->cols[c].nvmin = 0;
	qy_table_changed(t);
	if (t->ops && t->ops->clear)
		t->ops->clear(t);
}

/* ---- strings ---- */

static uint32_t qy_hash(const char *p, size_t len)
{
	/* FNV-1a: the strings are short names, mostly */
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)p[i]) * 16777619u;
	return h;
}

static int qy_rehash(struct qy_store *s)
{
	uint32_t n = s->nslots ? s->nslots * 2 : 4096;
	if (n < s->nslots)
		return -1;
	uint32_t *slots = calloc(n, sizeof(*slots));
	if (!slots)
		return -1;
	for (uint32_t id = 1; id < s->nstr; id++) {
		uint32_t i = qy_hash(s->sp[id], s->slen[id]) & (n - 1);
		while (slots[i])
			i = (i + 1) & (n - 1);
		slots[i] = id;
	}
	free(s->slots);
	s->slots = slots;
	s->nslots = n;
	return 0;
}

static const char *qy_keep(struct qy_store *s, const char *p, size_t len)
{
	struct qy_sblock *b = s->blocks;
	if (!b || b->size - b->used < len + 1) {
		size_t size = len + 1 > QY_BLOCK ? len + 1 : QY_BLOCK;
		b = malloc(sizeof(*b) + size);
		if (!b)
			return NULL;
		b->used = 0;
		b->size = size;
		b->next = s->blocks;
		s->blocks = b;
		s->sbytes += sizeof(*b) + size;
	}
	char *d = b->data + b->used;
	memcpy(d, p, len);
	d[len] = 0;
	b->used += len + 1;
	return d;
}

uint32_t qy_str(struct qy_store *s, const char *p, size_t len)
{
	if (!p)
		return 0;
	if (len > UINT32_MAX - 1)
		return QY_STR_NOMEM;
	/* at most half full, so that a probe ends soon */
	if ((uint64_t)s->nstr * 2 >= s->nslots && qy_rehash(s))
		return QY_STR_NOMEM;
	uint32_t i = qy_hash(p, len) & (s->nslots - 1);
	for (; s->slots[i]; i = (i + 1) & (s->nslots - 1)) {
		uint32_t id = s->slots[i];
		if (s->slen[id] == len && memcmp(s->sp[id], p, len) == 0)
			return id;
	}
	if (s->nstr == QY_STR_NOMEM - 1)
		return QY_STR_NOMEM;
	/* (>=: id 0 is never stored, so the first string finds nstr 1, strcap 0) */
	if (s->nstr >= s->strcap) {
		uint32_t cap = s->strcap ? s->strcap * 2 : 4096;
		const char **sp = realloc(s->sp, cap * sizeof(*sp));
		if (sp)
			s->sp = sp;
		uint32_t *sl = realloc(s->slen, cap * sizeof(*sl));
		if (sl)
			s->slen = sl;
		if (!sp || !sl)
			return QY_STR_NOMEM;
		s->strcap = cap;
	}
	const char *k = qy_keep(s, p, len);
	if (!k)
		return QY_STR_NOMEM;
	uint32_t id = s->nstr++;
	s->sp[id] = k;
	s->slen[id] = (uint32_t)len;
	s->slots[i] = id;
	return id;
}

const char *qy_str_get(const struct qy_store *s, uint32_t id, size_t *len)
{
	if (!id || id >= s->nstr) {
		if (len)
			*len = 0;
		return NULL;
	}
	if (len)
		*len = s->slen[id];
	return s->sp[id];
}

uint64_t qy_store_bytes(const struct qy_store *s)
{
	uint64_t n = s->sbytes + (uint64_t)s->strcap * (sizeof(char *) + sizeof(uint32_t)) +
		     (uint64_t)s->nslots * sizeof(uint32_t);
	for (uint32_t i = 0; i < s->ntables; i++) {
		const struct qy_table *t = s->tables[i];
		if (t->ops && t->ops->bytes)
			n += t->ops->bytes(t);
		for (uint32_t c = 0; c < t->ncols; c++) {
			n += t->cap * qy_elem(t->cols[c].type);
			if (t->cols[c].perm)
				n += t->nrows * sizeof(uint32_t);
			n += (uint64_t)t->cols[c].capvmin * sizeof(uint32_t);
		}
	}
	return n;
}

/* ---- names ---- */

int qy_ident(char *buf, size_t size, const char *name)
{
	size_t o = 0;
	if (size < 3)
		return -1;
	buf[o++] = '"';
	for (const char *p = name; *p; p++) {
		if (o + (*p == '"' ? 2 : 1) + 2 > size)
			return -1;
		if (*p == '"')
			buf[o++] = '"';
		buf[o++] = *p;
	}
	buf[o++] = '"';
	buf[o] = 0;
	return 0;
}

int qy_plain_name(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > 64 || (name[0] >= '0' && name[0] <= '9'))
		return 0;
	for (size_t i = 0; i < n; i++) {
		char ch = name[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_'))
			return 0;
	}
	if (strncasecmp(name, "sqlite_", 7) == 0)
		return 0;
	return !sqlite3_keyword_check(name, (int)n);
}

void qy_err(char *err, size_t errsize, const char *fmt, ...)
{
	if (err && errsize) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errsize, fmt, ap);
		va_end(ap);
	}
}
