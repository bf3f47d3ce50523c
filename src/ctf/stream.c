/*
 * Stream files: the pages of writer stream N go, whole and unchanged, to
 * DIR/stream_N (docs/format.md, section 7), appended in the order they
 * are read. Files are opened the one way src/base/tdir.c allows (relative
 * to the directory's descriptor, never through a symbolic link, created
 * new); this file is also that code's public face for the ringtrace
 * command: a trace's file opened to read, its directory's lock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
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
	err = fd < 0 ? fd : rt_write_all(fd, page, page_size);
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
