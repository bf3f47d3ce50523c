/*
 * Output and temporary directories of the command's recordings, and the
 * names of the pools of the programs it records (collect_api.h).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect/collect_api.h"

/*
 * The output directory: made (0700, or 0750 with the group), or an
 * existing one taken if it is a directory of ours, writable by nobody
 * else and empty. Its descriptor, or -1 having said why.
 */
int co_outdir(const char *out, long group)
{
	mode_t mode = group >= 0 ? 0750 : 0700;
	int created = mkdir(out, mode) == 0;
	if (!created && errno != EEXIST) {
		fprintf(stderr, "ringtrace record: cannot create %s: %s\n", out, strerror(errno));
		return -1;
	}
	int fd = open(out, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = errno;
		fprintf(stderr, "ringtrace record: cannot open the output directory %s: %s%s\n",
			out, strerror(e),
			e == ELOOP || e == ENOTDIR ? " (a directory, never followed)" : "");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	const char *why = NULL;
	if (st.st_uid != geteuid())
		why = "belongs to another user";
	else if (created && ((group >= 0 && fchown(fd, (uid_t)-1, (gid_t)group) < 0) ||
			     fchmod(fd, mode) < 0 || fstat(fd, &st) < 0))
		why = strerror(errno);
	else if (st.st_mode & (S_IWGRP | S_IWOTH))
		why = "is writable by others";
	if (!why && !created) {
		int dfd = dup(fd);
		DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
		struct dirent *e;
		while (d && (e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
				why = "is not empty (a trace is written only into an empty or new "
				      "directory)";
				break;
			}
		if (d)
			closedir(d);
		else if (dfd >= 0)
			close(dfd);
	}
	if (why) {
		fprintf(stderr, "ringtrace record: output directory %s %s\n", out, why);
		close(fd);
		return -1;
	}
	return fd;
}

/* comm as a file name: [A-Za-z0-9._-] kept, anything else '_'. */
void co_dirname(char *buf, size_t n, const char *comm, pid_t pid)
{
	char c[16];
	size_t k = 0;
	for (; comm[k] && k < sizeof(c) - 1; k++) {
		char x = comm[k];
		c[k] = (x >= 'a' && x <= 'z') || (x >= 'A' && x <= 'Z') || (x >= '0' && x <= '9') ||
				       x == '.' || x == '_' || x == '-'
			       ? x
			       : '_';
	}
	c[k] = 0;
	if (!k || c[0] == '.')
		snprintf(buf, n, "prog-%d", (int)pid);
	else
		snprintf(buf, n, "%s-%d", c, (int)pid);
}

/*
 * A pool name nobody can guess (or create before the program does): the
 * program's library creates it O_CREAT|O_EXCL, 0600, and an object made
 * at that name beforehand (to block the recording or capture it) would
 * make its start fail, never be used.
 */
int co_shm_name(char *buf, size_t size)
{
	uint64_t r;
	ssize_t n;
	while ((n = getrandom(&r, sizeof(r), 0)) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof(r)) {
		fprintf(stderr, "ringtrace record: getrandom: %s\n",
			n < 0 ? strerror(errno) : "short read");
		return -1;
	}
	snprintf(buf, size, "/ringtrace-rec-%d-%016" PRIx64, (int)getpid(), r);
	return 0;
}

int co_tmpdir(char *buf, size_t size)
{
	const char *t = getenv("TMPDIR");
	if (!t || t[0] != '/')
		t = "/tmp";
	int n = snprintf(buf, size, "%s/ringtrace-list-XXXXXX", t);
	if (n < 0 || (size_t)n >= size) {
		fprintf(stderr, "ringtrace: TMPDIR %s: too long a path\n", t);
		return -1;
	}
	if (!mkdtemp(buf)) {
		fprintf(stderr, "ringtrace: cannot create a temporary directory in %s: %s\n", t,
			strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * What a recording leaves under a temporary directory: a collection
 * (<comm>-<pid>/ with files in it) at most, so three levels; a deeper
 * or larger tree is not ours and is left, said.
 */
#define CO_RM_DEPTH 3
#define CO_RM_ENTRIES 100000

/* Remove the entries of the directory dfd (closed here): 0, or -1. */
static int co_rm_entries(int dfd, int depth, unsigned *budget)
{
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -1;
	}
	int rc = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (!(*budget)--) {
			rc = -1;
			break;
		}
		if (unlinkat(dirfd(d), e->d_name, 0) == 0)
			continue;
		if (errno != EISDIR && errno != EPERM) {
			rc = -1;
			continue;
		}
		/* a directory: emptied first, never through a symbolic link */
		int sub = depth > 0 ? openat(dirfd(d), e->d_name,
					     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
				    : -1;
		if (sub < 0 || co_rm_entries(sub, depth - 1, budget) < 0 ||
		    unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) < 0)
			rc = -1;
	}
	closedir(d);
	return rc;
}

int co_tmpdir_remove(const char *dir)
{
	unsigned budget = CO_RM_ENTRIES;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0 || co_rm_entries(dfd, CO_RM_DEPTH - 1, &budget) < 0 || rmdir(dir) < 0) {
		fprintf(stderr, "ringtrace: could not remove the temporary directory %s: %s\n", dir,
			strerror(errno));
		return -1;
	}
	return 0;
}
