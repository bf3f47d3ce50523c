/*
 * Trace directories and their files, opened so that nobody else decides
 * where we write or what we read (docs/format.md, section 7).
 *
 * A trace directory often sits in a shared place and the recorder often
 * runs as root, so a name in it may be a symbolic link, a FIFO or a device
 * planted by someone else, and the directory itself may be someone else's.
 * The rules, in one place for every writer (the in-process recorder and its
 * snapshots, `ringtrace recover`) and every reader:
 *
 *  - The output directory is created by us, 0700 (0750 when shared with a
 *    group). An existing one is taken only if it is a directory (not a
 *    symbolic link to one), ours, writable by nobody else, and empty; it is
 *    locked while in use (flock on its descriptor, taken before the
 *    emptiness check, so that two recorders never share one directory).
 *  - Every file is opened relative to the directory's descriptor (a path
 *    is never resolved twice, and the program may chdir), with O_NOFOLLOW;
 *    a new file is created with O_EXCL, 0600 (0640 shared). A file that is
 *    written again later (a stream file reopened after the recorder closed
 *    it, recover appending) must be a regular file with one link, ours or
 *    the directory owner's.
 *  - A file replaced as a whole (the metadata) is written under a
 *    temporary name, created O_EXCL after removing whatever was at that
 *    name (the entry, never what it points to), and renamed over the old
 *    one: rename replaces a directory entry, it never follows one.
 *  - Only regular files are read: the name is checked with fstatat
 *    (AT_SYMLINK_NOFOLLOW) before it is opened (opening a device can have
 *    effects of its own), then opened with O_NOFOLLOW|O_NONBLOCK (a FIFO
 *    slipped in between cannot block) and checked again with fstat.
 *
 * The lock is flock(2) on the directory itself, not a lock file: a trace
 * directory holds only `metadata` and `stream_<N>` (CTF readers take any
 * other file for a stream), the kernel drops the lock when its holder
 * dies (no stale lock after a crash, and `ringtrace recover` can then take
 * it), and its holder is found in /proc/locks for the message. Where the
 * filesystem has no flock (some network filesystems), the directory is
 * used unlocked: the ownership and emptiness checks still stand.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/base.h"

const char *rt_file_kind(unsigned mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return "a regular file";
	case S_IFDIR:
		return "a directory";
	case S_IFLNK:
		return "a symbolic link";
	case S_IFIFO:
		return "a FIFO";
	case S_IFSOCK:
		return "a socket";
	case S_IFCHR:
		return "a character device";
	case S_IFBLK:
		return "a block device";
	default:
		return "not a regular file";
	}
}

/*
 * Open NAME in DIRFD, a regular file only (flags: O_RDONLY, or O_WRONLY
 * with O_APPEND): the fd and *st, or -errno; *bad is the file type found
 * when something other than a regular file is there (then -EINVAL).
 */
static int rt_open_reg(int dirfd, const char *name, int flags, struct stat *st, unsigned *bad)
{
	*bad = 0;
	struct stat pre;
	if (fstatat(dirfd, name, &pre, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (!S_ISREG(pre.st_mode)) {
		*bad = pre.st_mode;
		return -EINVAL;
	}
	int fd = openat(dirfd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if (e == ELOOP) { /* replaced by a symbolic link since fstatat */
			*bad = S_IFLNK;
			return -EINVAL;
		}
		return -e;
	}
	if (fstat(fd, st) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	if (!S_ISREG(st->st_mode)) {
		*bad = st->st_mode;
		close(fd);
		return -EINVAL;
	}
	return fd;
}

int rt_open_regular_at(int dirfd, const char *dir, const char *name, struct stat *st, char *err,
		       size_t errsize)
{
	unsigned bad;
	int fd = rt_open_reg(dirfd, name, O_RDONLY, st, &bad);
	if (fd >= 0)
		return fd;
	if (bad) {
		snprintf(err, errsize,
			 "%s/%s: %s, not a regular file (only regular files of a trace are read)",
			 dir, name, rt_file_kind(bad));
		return -RINGTRACE_ECORRUPT;
	}
	snprintf(err, errsize, "%s/%s: %s", dir, name, strerror(-fd));
	return -RINGTRACE_ESYS;
}

/* ---- sharing with a group ---- */

int rt_tdir_group(const char *spec, long *gid)
{
	*gid = -1;
	if (!spec || !*spec)
		return 0;
	uint64_t n;
	if (rt_parse_u64(spec, (gid_t)-2, &n) == 0) {
		*gid = (long)n;
		return 0;
	}
	/* getgrnam_r's buffer: grown on ERANGE, up to a bound (a group of
	 * thousands of members needs more than the usual 1 KiB). */
	for (size_t size = 4096; size <= (1u << 20); size *= 4) {
		char *buf = malloc(size);
		if (!buf)
			return rt_error(RINGTRACE_ENOMEM, "group \"%s\": out of memory", spec);
		struct group gr, *res = NULL;
		int e = getgrnam_r(spec, &gr, buf, size, &res);
		if (e == 0 && res)
			*gid = (long)res->gr_gid;
		free(buf);
		if (e == 0 && res)
			return 0;
		if (e != ERANGE)
			return rt_error(RINGTRACE_EINVAL, "group \"%s\": %s", spec,
					e ? strerror(e) : "no such group");
	}
	return rt_error(RINGTRACE_EINVAL, "group \"%s\": its entry is too large", spec);
}

/* ---- the lock ---- */

/*
 * " (process PID, COMM)" of the flock holder of the file open as fd, from
 * /proc/locks, into buf; "" if it cannot be found. The file is read a
 * bounded number of lines.
 */
static void rt_lock_holder(int fd, char *buf, size_t size)
{
	buf[0] = 0;
	struct stat st;
	FILE *f = fstat(fd, &st) == 0 ? fopen("/proc/locks", "re") : NULL;
	if (!f)
		return;
	char line[256];
	long pid = -1;
	for (int i = 0; i < 100000 && fgets(line, sizeof(line), f); i++) {
		char kind[16], adv[16], rw[16];
		long p;
		unsigned maj, min;
		unsigned long long ino;
		/* "1: FLOCK  ADVISORY  WRITE 1234 08:02:131 0 EOF"; waiters
		 * ("1: -> FLOCK ...") do not parse and are skipped. */
		if (sscanf(line, "%*d: %15s %15s %15s %ld %x:%x:%llu", kind, adv, rw, &p, &maj,
			   &min, &ino) != 7)
			continue;
		if (strcmp(kind, "FLOCK") != 0 || ino != (unsigned long long)st.st_ino)
			continue;
		pid = p;
		if (maj == major(st.st_dev) && min == minor(st.st_dev))
			break; /* (a filesystem may show another device: the inode alone is a guess) */
	}
	fclose(f);
	if (pid <= 0)
		return;
	char comm[32] = "", path[64];
	snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
	FILE *c = fopen(path, "re");
	if (c) {
		if (fgets(comm, sizeof(comm), c))
			comm[strcspn(comm, "\n")] = 0;
		fclose(c);
	}
	snprintf(buf, size, " (process %ld%s%s%s)", pid, comm[0] ? ", " : "", comm,
		 pid == (long)getpid() ? ", this process" : "");
}

int rt_tdir_lock(int fd, const char *path)
{
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	if (errno == EWOULDBLOCK) {
		char who[96];
		rt_lock_holder(fd, who, sizeof(who));
		return rt_error(
			RINGTRACE_EINVAL,
			"\"%s\" is in use by another recorder%s: one recorder per directory", path,
			who);
	}
	/* No flock on this filesystem: used unlocked (see the top). */
	return 0;
}

/* ---- writing ---- */

static void rt_tdir_init(struct rt_tdir *d)
{
	memset(d, 0, sizeof(*d));
	d->fd = -1;
	d->parent = -1;
	d->file_mode = 0600;
	d->uid = (uid_t)-1;
	d->gid = (gid_t)-1;
}

void rt_tdir_close(struct rt_tdir *d)
{
	if (d->fd >= 0)
		close(d->fd); /* (and with it the lock) */
	if (d->parent >= 0)
		close(d->parent);
	free(d->name);
	free(d->path);
	rt_tdir_init(d);
}

/* The first entry of directory fd other than . and .. into name (""
 * if none): 0, or -errno. Stops at the first: bounded whatever the size. */
static int rt_first_entry(int fd, char *name, size_t size)
{
	name[0] = 0;
	int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!dir) {
		int e = errno;
		if (dfd >= 0)
			close(dfd);
		return -e;
	}
	struct dirent *e;
	while ((e = readdir(dir)) != NULL) {
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(name, size, "%s", e->d_name);
			break;
		}
	}
	closedir(dir);
	return 0;
}

/* Mode and owner of a file just created in d (umask may have cut the
 * group bits; a trace recovered by root stays its owner's). */
static int rt_tdir_own(const struct rt_tdir *d, int fd, const char *name)
{
	if ((d->uid != (uid_t)-1 || d->gid != (gid_t)-1) && fchown(fd, d->uid, d->gid) < 0)
		return rt_error(RINGTRACE_ESYS, "%s/%s: cannot give it to uid %ld gid %ld: %s",
				d->path, name, d->uid == (uid_t)-1 ? -1L : (long)d->uid,
				d->gid == (gid_t)-1 ? -1L : (long)d->gid, strerror(errno));
	if ((d->file_mode & 0070) && fchmod(fd, d->file_mode) < 0)
		return rt_error(RINGTRACE_ESYS, "%s/%s: chmod %04o: %s", d->path, name,
				(unsigned)d->file_mode, strerror(errno));
	return 0;
}

/* PATH (modified) as its parent and its last name; trailing '/' dropped. */
static void rt_split(char *path, const char **pdir, const char **name)
{
	size_t len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		path[--len] = 0;
	char *slash = strrchr(path, '/');
	*pdir = ".";
	*name = path;
	if (slash == path) {
		*pdir = "/";
		*name = path + 1;
	} else if (slash) {
		*slash = 0;
		*pdir = path;
		*name = slash + 1;
	}
}

/*
 * The last checks of a trace directory d->fd (st: its fstat): writable by
 * nobody else, locked, empty. 0 or a negative error naming it.
 */
static int rt_tdir_settle(struct rt_tdir *d, const struct stat *st, const char *shown)
{
	int err;
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		return rt_error(RINGTRACE_EINVAL,
				"output directory \"%s\" is writable by others (mode %04o): they "
				"could replace the trace's files",
				shown, (unsigned)(st->st_mode & 07777));
	}
	/* Locked first, then found empty: a recorder that finished in between
	 * left files, a running one holds the lock. */
	if ((err = rt_tdir_lock(d->fd, shown)) < 0)
		return err;
	char first[NAME_MAX + 1];
	if (rt_first_entry(d->fd, first, sizeof(first)) < 0) {
		return rt_error(RINGTRACE_ESYS, "output directory \"%s\": %s", shown,
				strerror(errno));
	}
	if (first[0]) {
		err = rt_error(RINGTRACE_EINVAL,
			       "output directory \"%s\" is not empty (it holds \"%s\"; a trace is "
			       "written only into an empty or new directory)",
			       shown, first);
		return err;
	}
	return 0;
}

int rt_tdir_create(struct rt_tdir *d, int atfd, const char *path, const char *shown, long group)
{
	rt_tdir_init(d);
	if (!path || !*path || strlen(path) >= PATH_MAX)
		return rt_error(RINGTRACE_EINVAL, "output directory: %s",
				path && *path ? "path too long" : "empty path");
	if (!shown)
		shown = path;
	char *copy = strdup(path);
	if (!copy)
		return rt_error(RINGTRACE_ENOMEM, "output directory \"%s\": out of memory", shown);
	const char *pdir, *name;
	rt_split(copy, &pdir, &name);
	if (atfd == AT_FDCWD && (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)) {
		/* "." (an empty current directory): the directory it stands for,
		 * by its name in its parent */
		free(copy);
		if (!(copy = realpath(path, NULL)))
			return rt_error(RINGTRACE_ESYS, "output directory \"%s\": %s", shown,
					strerror(errno));
		rt_split(copy, &pdir, &name);
	}
	int err = 0;
	struct stat st;
	if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
		err = rt_error(RINGTRACE_EINVAL,
			       "output directory \"%s\": name a new directory, not \"%s\"", shown,
			       name);
		goto out;
	}
	d->parent = openat(atfd, pdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (d->parent < 0) {
		err = rt_error(RINGTRACE_ESYS, "output directory \"%s\": its parent \"%s\": %s",
			       shown, pdir, strerror(errno));
		goto out;
	}
	int created = mkdirat(d->parent, name, group >= 0 ? 0750 : 0700) == 0;
	if (!created && errno != EEXIST) {
		err = rt_error(RINGTRACE_ESYS, "cannot create output directory \"%s\": %s", shown,
			       strerror(errno));
		goto out;
	}
	d->fd = openat(d->parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d->fd < 0) {
		int e = errno;
		if (fstatat(d->parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode))
			err = rt_error(RINGTRACE_EINVAL,
				       "output \"%s\" is %s, not a directory (never followed)",
				       shown, rt_file_kind(st.st_mode));
		else
			err = rt_error(RINGTRACE_ESYS, "output directory \"%s\": %s", shown,
				       strerror(e));
		goto out;
	}
	if (fstat(d->fd, &st) < 0) {
		err = rt_error(RINGTRACE_ESYS, "output directory \"%s\": %s", shown,
			       strerror(errno));
		goto out;
	}
	if (st.st_uid != geteuid()) {
		err = rt_error(RINGTRACE_EINVAL,
			       "output directory \"%s\" belongs to uid %u, not to uid %u: a trace "
			       "is written only into a directory of its own",
			       shown, (unsigned)st.st_uid, (unsigned)geteuid());
		goto out;
	}
	/* Ours: its mode exactly (the umask, or a default ACL's mask, may have
	 * changed it), and its group when shared. */
	if (created && group >= 0 && fchown(d->fd, (uid_t)-1, (gid_t)group) < 0) {
		err = rt_error(RINGTRACE_ESYS,
			       "output directory \"%s\": sharing with group %ld: %s", shown, group,
			       strerror(errno));
		goto out;
	}
	if (created && (fchmod(d->fd, group >= 0 ? 0750 : 0700) < 0 || fstat(d->fd, &st) < 0)) {
		err = rt_error(RINGTRACE_ESYS, "output directory \"%s\": chmod: %s", shown,
			       strerror(errno));
		goto out;
	}
	if ((err = rt_tdir_settle(d, &st, shown)) < 0)
		goto out;
	d->owner = st.st_uid;
	if (group >= 0) {
		d->file_mode = 0640;
		d->gid = (gid_t)group;
	}
	d->name = strdup(name);
	/* For messages only: absolute where it can be (the program may chdir). */
	d->path = shown != path || path[0] == '/' || atfd != AT_FDCWD ? strdup(shown)
								      : realpath(path, NULL);
	if (!d->path)
		d->path = strdup(shown);
	if (!d->name || !d->path)
		err = rt_error(RINGTRACE_ENOMEM, "output directory \"%s\": out of memory", shown);
out:
	free(copy);
	if (err < 0)
		rt_tdir_close(d);
	return err;
}

int rt_tdir_adopt(struct rt_tdir *d, int parent, int fd, const char *name, const char *shown)
{
	rt_tdir_init(d);
	d->parent = parent;
	d->fd = fd;
	struct stat st;
	int err = 0;
	if (fd < 0 || !name || !*name || strchr(name, '/') || !shown) {
		err = rt_error(RINGTRACE_EINVAL, "output directory: not given");
		goto out;
	}
	if (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode)) {
		err = rt_error(RINGTRACE_EINVAL, "output directory \"%s\": not a directory", shown);
		goto out;
	}
	if (st.st_uid != geteuid()) {
		err = rt_error(RINGTRACE_EINVAL,
			       "output directory \"%s\" belongs to uid %u, not to uid %u: a trace "
			       "is written only into a directory of its own",
			       shown, (unsigned)st.st_uid, (unsigned)geteuid());
		goto out;
	}
	if ((err = rt_tdir_settle(d, &st, shown)) < 0)
		goto out;
	d->owner = st.st_uid;
	if (st.st_mode & S_IRGRP) {
		d->file_mode = 0640;
		d->gid = st.st_gid;
	}
	d->name = strdup(name);
	d->path = strdup(shown);
	if (!d->name || !d->path)
		err = rt_error(RINGTRACE_ENOMEM, "output directory \"%s\": out of memory", shown);
out:
	if (err < 0)
		rt_tdir_close(d);
	return err;
}

int rt_tdir_open(struct rt_tdir *d, const char *path)
{
	rt_tdir_init(d);
	if (!path || !*path)
		return rt_error(RINGTRACE_EINVAL, "trace directory: empty path");
	d->path = strdup(path);
	if (!d->path)
		return rt_error(RINGTRACE_ENOMEM, "trace directory \"%s\": out of memory", path);
	size_t len = strlen(d->path);
	while (len > 1 && d->path[len - 1] == '/')
		d->path[--len] = 0; /* "dir/" would follow a symbolic link "dir" */
	d->fd = open(d->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	int err = 0;
	if (d->fd < 0) {
		int e = errno;
		if (lstat(d->path, &st) == 0 && !S_ISDIR(st.st_mode))
			err = rt_error(
				RINGTRACE_EINVAL,
				"trace directory \"%s\" is %s, not a directory (never followed)",
				path, rt_file_kind(st.st_mode));
		else
			err = rt_error(RINGTRACE_ESYS, "trace directory \"%s\": %s", path,
				       strerror(e));
	} else if (fstat(d->fd, &st) < 0) {
		err = rt_error(RINGTRACE_ESYS, "trace directory \"%s\": %s", path, strerror(errno));
	} else if (st.st_uid != geteuid() && geteuid() != 0) {
		err = rt_error(RINGTRACE_EINVAL,
			       "trace directory \"%s\" belongs to uid %u, not to uid %u", path,
			       (unsigned)st.st_uid, (unsigned)geteuid());
	} else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		err = rt_error(RINGTRACE_EINVAL,
			       "trace directory \"%s\" is writable by others (mode %04o): they "
			       "could replace the trace's files",
			       path, (unsigned)(st.st_mode & 07777));
	}
	if (err < 0) {
		rt_tdir_close(d);
		return err;
	}
	/* New files as the directory says: shared with its group if it is
	 * readable by it, and a trace root adds to stays its owner's. */
	d->owner = st.st_uid;
	if (st.st_mode & S_IRGRP) {
		d->file_mode = 0640;
		d->gid = st.st_gid;
	}
	if (geteuid() == 0 && st.st_uid != 0) {
		d->uid = st.st_uid;
		d->gid = st.st_gid;
	}
	return 0;
}

/* What is at NAME, for an error message: "a symbolic link", ... */
static const char *rt_what_is(const struct rt_tdir *d, const char *name)
{
	struct stat st;
	if (fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return "something";
	return rt_file_kind(st.st_mode);
}

int rt_tdir_create_file(const struct rt_tdir *d, const char *name)
{
	int fd = rt_openat_wait(d->fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				d->file_mode);
	if (fd < 0) {
		if (errno == EEXIST)
			return rt_error(RINGTRACE_EINVAL,
					"%s/%s: %s is already there (the trace's files are created "
					"new, never opened through a name made by someone else)",
					d->path, name, rt_what_is(d, name));
		return rt_error(RINGTRACE_ESYS, "cannot create %s/%s: %s", d->path, name,
				strerror(errno));
	}
	int err = rt_tdir_own(d, fd, name);
	if (err < 0) {
		close(fd);
		unlinkat(d->fd, name, 0);
		return err;
	}
	return fd;
}

int rt_tdir_append_file(const struct rt_tdir *d, const char *name)
{
	int fd = rt_openat_wait(d->fd, name,
				O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				d->file_mode);
	if (fd >= 0) {
		int err = rt_tdir_own(d, fd, name);
		if (err < 0) {
			close(fd);
			unlinkat(d->fd, name, 0);
			return err;
		}
		return fd;
	}
	if (errno != EEXIST)
		return rt_error(RINGTRACE_ESYS, "cannot create %s/%s: %s", d->path, name,
				strerror(errno));
	/* There already: written by us before (a stream file reopened), or
	 * by the program whose trace recover completes. */
	struct stat st;
	unsigned bad;
	fd = rt_open_reg(d->fd, name, O_WRONLY | O_APPEND, &st, &bad);
	if (fd < 0) {
		if (bad)
			return rt_error(RINGTRACE_EINVAL,
					"%s/%s is %s, not a regular file (never followed)", d->path,
					name, rt_file_kind(bad));
		return rt_error(RINGTRACE_ESYS, "cannot open %s/%s: %s", d->path, name,
				strerror(-fd));
	}
	const char *why = NULL;
	if (st.st_nlink != 1)
		why = "has other links (a hard link to another file?)";
	else if (st.st_uid != geteuid() && st.st_uid != d->owner)
		why = "belongs to another user than the directory's owner";
	if (why) {
		close(fd);
		return rt_error(RINGTRACE_EINVAL, "%s/%s %s: not written", d->path, name, why);
	}
	return fd;
}

int rt_tdir_replace(const struct rt_tdir *d, const char *name, int (*fill)(FILE *f, void *arg),
		    void *arg)
{
	char tmp[NAME_MAX + 1];
	if (snprintf(tmp, sizeof(tmp), ".%s.tmp", name) >= (int)sizeof(tmp))
		return rt_error(RINGTRACE_EINVAL, "%s/%s: name too long", d->path, name);
	/* Whatever is at our temporary name (a leftover of a writer that
	 * died, or something planted) goes: the entry, never its target. */
	if (unlinkat(d->fd, tmp, 0) < 0 && errno != ENOENT)
		return rt_error(RINGTRACE_ESYS, "cannot remove %s/%s: %s", d->path, tmp,
				strerror(errno));
	int fd = rt_tdir_create_file(d, tmp);
	if (fd < 0)
		return fd;
	FILE *f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlinkat(d->fd, tmp, 0);
		return rt_error(RINGTRACE_ENOMEM, "%s/%s: out of memory", d->path, tmp);
	}
	int err = fill(f, arg);
	if (fclose(f) != 0 && err == 0)
		err = rt_error(RINGTRACE_ESYS, "writing %s/%s: %s", d->path, tmp, strerror(errno));
	if (err == 0 && renameat(d->fd, tmp, d->fd, name) != 0)
		err = rt_error(RINGTRACE_ESYS, "renaming %s/%s to %s: %s", d->path, tmp, name,
			       strerror(errno));
	if (err < 0)
		unlinkat(d->fd, tmp, 0);
	return err;
}
