/*
 * Stream files: the pages of writer stream N go, whole and unchanged, to
 * DIR/stream_N (docs/format.md, section 7), appended in the order they
 * are read. Files are opened the one way src/base/tdir.c allows (relative
 * to the directory's descriptor, never through a symbolic link, created
 * new); this file is also that code's public face for the ringtrace
 * command: a trace's file opened to read, its directory's lock.
 *
 * A stream file that ends inside a page (its recorder was killed while it
 * wrote one) is never cut: `ringtrace recover` sets it aside, renamed to
 * the hidden .stream_N.partial (bytes unchanged; CTF readers skip hidden
 * files, and babeltrace2 refuses a whole trace for one file that ends
 * inside a packet), and writes its whole pages, copied, to a new
 * stream_N, which recovered pages are then appended to.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctf/ctf_api.h"

void rt_ctf_stream_path(char *buf, size_t n, const char *dir, uint64_t stream)
{
	snprintf(buf, n, "%s/stream_%llu", dir, (unsigned long long)stream);
}

int rt_ctf_stream_open(const struct rt_tdir *d, uint64_t stream)
{
	char name[32];
	snprintf(name, sizeof(name), "stream_%llu", (unsigned long long)stream);
	return rt_tdir_append_file(d, name);
}

int ringtrace_ctf_append_page(const char *dir, const struct ringtrace_page_header *page,
			      size_t page_size)
{
	if (!dir || !page || page_size < RINGTRACE_PAGE_HEADER_SIZE)
		return rt_error(RINGTRACE_EINVAL, "ctf_append_page: invalid argument");
	struct rt_tdir d;
	int err = rt_tdir_open(&d, dir);
	if (err < 0)
		return err;
	int fd = rt_ctf_stream_open(&d, page->stream_instance_id);
	struct stat st;
	if (fd >= 0 && fstat(fd, &st) < 0)
		st.st_size = -1;
	err = fd < 0 ? fd : rt_write_all(fd, page, page_size);
	/* A write that failed leaves the file as it was: no part of a page
	 * (a file cut inside a packet makes babeltrace2 refuse the trace),
	 * and no empty file (which no reader takes for a stream). */
	if (fd >= 0 && err < 0 && st.st_size > 0)
		(void)!ftruncate(fd, st.st_size);
	else if (fd >= 0 && err < 0 && st.st_size == 0) {
		char name[32];
		snprintf(name, sizeof(name), "stream_%llu",
			 (unsigned long long)page->stream_instance_id);
		unlinkat(d.fd, name, 0);
	}
	if (fd >= 0)
		close(fd);
	if (fd >= 0 && err < 0) {
		char path[4200];
		rt_ctf_stream_path(path, sizeof(path), dir, page->stream_instance_id);
		err = rt_error(RINGTRACE_ESYS, "writing %s: %s", path, strerror(-err));
	}
	rt_tdir_close(&d);
	return err;
}

int ringtrace_ctf_set_aside_partial(const char *dir, uint64_t stream, size_t page_size, char *aside,
				    size_t aside_size)
{
	if (!dir || page_size < RINGTRACE_PAGE_HEADER_SIZE || !aside || aside_size < 48)
		return rt_error(RINGTRACE_EINVAL, "ctf_set_aside_partial: invalid argument");
	struct rt_tdir d;
	int err = rt_tdir_open(&d, dir);
	if (err < 0)
		return err;
	char name[32];
	snprintf(name, sizeof(name), "stream_%llu", (unsigned long long)stream);
	snprintf(aside, aside_size, ".stream_%llu.partial", (unsigned long long)stream);
	struct stat st;
	char msg[1024];
	int in = -1, out = -1;
	char *buf = NULL;
	if (fstatat(d.fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		err = errno == ENOENT
			      ? 0
			      : rt_error(RINGTRACE_ESYS, "%s/%s: %s", dir, name, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		err = rt_error(RINGTRACE_EINVAL, "%s/%s is %s (not followed, not read)", dir, name,
			       S_ISLNK(st.st_mode) ? "a symbolic link" : "not a regular file");
		goto out;
	}
	if (st.st_size % (off_t)page_size == 0) {
		err = 0;
		goto out;
	}
	/* Renamed, never replacing anything (a set-aside file of an earlier,
	 * interrupted recovery stays, and this one stops). */
	if (renameat2(d.fd, name, d.fd, aside, RENAME_NOREPLACE) < 0) {
		err = rt_error(RINGTRACE_ESYS, "%s/%s: cannot set it aside as %s: %s", dir, name,
			       aside, strerror(errno));
		goto out;
	}
	in = rt_open_regular_at(d.fd, dir, aside, &st, msg, sizeof(msg));
	if (in < 0) {
		err = rt_error(-in, "%s", msg);
		goto out;
	}
	out = rt_tdir_append_file(&d, name);
	if (out < 0) {
		err = out;
		goto out;
	}
	buf = malloc(page_size);
	if (!buf) {
		err = rt_error(RINGTRACE_ENOMEM, "out of memory");
		goto out;
	}
	/* The whole pages, as they are (the reader checks them). */
	off_t whole = st.st_size - st.st_size % (off_t)page_size;
	for (off_t at = 0; at < whole; at += (off_t)page_size) {
		ssize_t n = pread(in, buf, page_size, at);
		if (n != (ssize_t)page_size) {
			err = rt_error(RINGTRACE_ESYS, "%s/%s: reading byte %lld: %s", dir, aside,
				       (long long)at, n < 0 ? strerror(errno) : "short read");
			goto out;
		}
		if ((err = rt_write_all(out, buf, page_size)) < 0) {
			err = rt_error(RINGTRACE_ESYS, "writing %s/%s: %s", dir, name,
				       strerror(-err));
			goto out;
		}
	}
	err = 1;
out:
	free(buf);
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	rt_tdir_close(&d);
	return err;
}

void ringtrace_ctf_stream_path(char *buf, size_t size, const char *dir, uint64_t stream)
{
	rt_ctf_stream_path(buf, size, dir, stream);
}

int ringtrace_ctf_open_file(const char *dir, const char *name)
{
	if (!dir || !name || !*name || strchr(name, '/') || strcmp(name, ".") == 0 ||
	    strcmp(name, "..") == 0)
		return rt_error(RINGTRACE_EINVAL, "ctf_open_file: \"%s\" is not a file name",
				name ? name : "(null)");
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return rt_error(RINGTRACE_ESYS, "%s: %s", dir, strerror(errno));
	char msg[1024];
	struct stat st;
	int fd = rt_open_regular_at(dfd, dir, name, &st, msg, sizeof(msg));
	close(dfd);
	return fd >= 0 ? fd : rt_error(-fd, "%s", msg);
}

int ringtrace_ctf_lock_dir(const char *dir)
{
	struct rt_tdir d;
	int err = rt_tdir_open(&d, dir);
	if (err == 0)
		err = rt_tdir_lock(d.fd, dir);
	if (err < 0) {
		rt_tdir_close(&d);
		return err;
	}
	int fd = d.fd;
	d.fd = -1;
	rt_tdir_close(&d);
	return fd;
}
