/* Trace collections: see analysis_api.h. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/analysis_api.h"
#include "base/base.h"

static int coll_add(struct coll *c, const char *dir, const char *name)
{
	char **d = realloc(c->dirs, (c->n + 1) * sizeof(*d));
	if (d)
		c->dirs = d;
	const char **nm = realloc(c->names, (c->n + 1) * sizeof(*nm));
	if (nm)
		c->names = nm;
	ringtrace_trace **t = realloc(c->t, (c->n + 1) * sizeof(*t));
	if (t)
		c->t = t;
	if (!d || !nm || !t || !(c->dirs[c->n] = strdup(dir)))
		return -1;
	const char *slash = strrchr(c->dirs[c->n], '/');
	c->names[c->n] = slash && slash[1] ? slash + 1 : c->dirs[c->n];
	(void)name;
	c->t[c->n] = NULL;
	c->n++;
	return 0;
}

static int coll_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Failures of the machine (descriptors, memory) while a directory is
 * listed: said, never taken for "no trace there" (which would read the
 * directory as one trace, or leave a trace of the collection out). */
static int coll_sys_error(int e)
{
	return e == EMFILE || e == ENFILE || e == ENOMEM;
}

/* The names of DIR's subdirectories that hold a metadata file, sorted:
 * their count (0: DIR is not a collection), or -1 with the reason said. */
static long coll_list(const char *dir, const char *prog, char ***out)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	char **subs = NULL;
	size_t nsub = 0;
	int err = 0;
	const char *what = NULL;
	*out = NULL;
	if (dfd < 0 && coll_sys_error(errno)) {
		err = errno;
		what = "opening the directory";
	}
	/* A trace itself (metadata there), or something that is not a
	 * directory: opened as one trace, whose errors say what is wrong. */
	if (dfd >= 0 && fstatat(dfd, "metadata", &st, AT_SYMLINK_NOFOLLOW) != 0) {
		int lfd = dup(dfd);
		DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
		if (!d) {
			err = errno;
			what = "listing the directory";
		}
		struct dirent *e;
		unsigned seen = 0;
		while (d && !err && (e = readdir(d)) && seen++ < 1000000) {
			if (e->d_name[0] == '.')
				continue;
			int sfd = openat(dfd, e->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sfd < 0 && coll_sys_error(errno)) {
				err = errno;
				what = "opening a trace of the collection";
			}
			if (sfd < 0)
				continue;
			int has = fstatat(sfd, "metadata", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
				  S_ISREG(st.st_mode);
			close(sfd);
			if (!has)
				continue;
			if (nsub == COLL_MAX_TRACES) {
				fprintf(stderr,
					"%s: %s: more than %d traces; the first %d (by name) read\n",
					prog, rt_esc(dir), COLL_MAX_TRACES, COLL_MAX_TRACES);
				break;
			}
			char **ns = realloc(subs, (nsub + 1) * sizeof(*ns));
			if (ns)
				subs = ns;
			if (!ns || !(subs[nsub] = strdup(e->d_name))) {
				err = ENOMEM;
				what = "listing the traces of the collection";
				break;
			}
			nsub++;
		}
		if (d)
			closedir(d);
		else if (lfd >= 0)
			close(lfd);
	}
	if (dfd >= 0)
		close(dfd);
	if (err) {
		fprintf(stderr, "%s: %s: %s (%s)\n", prog, rt_esc(dir), strerror(err), what);
		for (size_t i = 0; i < nsub; i++)
			free(subs[i]);
		free(subs);
		return -1;
	}
	if (nsub)
		qsort(subs, nsub, sizeof(*subs), coll_cmp);
	*out = subs;
	return (long)nsub;
}

int coll_open(const char *dir, const char *prog, ringtrace_trace_error_fn on_error, struct coll *c)
{
	memset(c, 0, sizeof(*c));
	char **subs;
	long nsub = coll_list(dir, prog, &subs);
	if (nsub < 0)
		return -1;
	int err = 0;
	if (nsub) {
		c->is_collection = 1;
		for (long i = 0; i < nsub && !err; i++) {
			char path[4200];
			snprintf(path, sizeof(path), "%s/%s", dir, subs[i]);
			err = coll_add(c, path, subs[i]);
		}
	} else {
		err = coll_add(c, dir, dir);
	}
	for (long i = 0; i < nsub; i++)
		free(subs[i]);
	free(subs);
	if (err) {
		fprintf(stderr, "%s: %s: out of memory (listing the traces to read)\n", prog,
			rt_esc(dir));
		coll_close(c);
		return -1;
	}
	/* A trace of a collection that cannot be opened is said and left out:
	 * the others are still read (the exit status says something failed). */
	uint32_t k = 0;
	for (uint32_t i = 0; i < c->n; i++) {
		if (ringtrace_trace_open(c->dirs[i], on_error, NULL, &c->t[i]) < 0) {
			fprintf(stderr, "%s: %s\n", prog, rt_esc(ringtrace_trace_open_error()));
			c->failed++;
			free(c->dirs[i]);
			continue;
		}
		c->dirs[k] = c->dirs[i];
		c->names[k] = c->names[i];
		c->t[k++] = c->t[i];
	}
	c->n = k;
	if (!k) {
		coll_close(c);
		return -1;
	}
	return 0;
}

void coll_close(struct coll *c)
{
	for (uint32_t i = 0; i < c->n; i++) {
		if (c->t && c->t[i])
			ringtrace_trace_close(c->t[i]);
		free(c->dirs[i]);
	}
	free(c->dirs);
	free(c->names);
	free(c->t);
	memset(c, 0, sizeof(*c));
}

int coll_merge_init(struct coll_merge *m, const struct coll *c)
{
	m->c = c;
	m->last = -1;
	m->cur = calloc(c->n ? c->n : 1, sizeof(*m->cur));
	m->have = calloc(c->n ? c->n : 1, sizeof(*m->have));
	if (!m->cur || !m->have) {
		coll_merge_free(m);
		return -1;
	}
	for (uint32_t i = 0; i < c->n; i++)
		m->have[i] = ringtrace_trace_next(c->t[i], &m->cur[i]) == 1;
	return 0;
}

int coll_merge_next(struct coll_merge *m, struct ringtrace_trace_record **rec)
{
	const struct coll *c = m->c;
	if (m->last >= 0) /* (the one given last is consumed now) */
		m->have[m->last] = ringtrace_trace_next(c->t[m->last], &m->cur[m->last]) == 1;
	int k = -1;
	for (uint32_t i = 0; i < c->n; i++)
		if (m->have[i] && (k < 0 || m->cur[i].ns < m->cur[k].ns))
			k = (int)i;
	m->last = k;
	if (k >= 0)
		*rec = &m->cur[k];
	return k;
}

void coll_merge_free(struct coll_merge *m)
{
	free(m->cur);
	free(m->have);
	m->cur = NULL;
	m->have = NULL;
}
