/*
 * Stream files: the pages of writer stream N go, whole and unchanged, to
 * DIR/stream_N (docs/format.md, section 7), appended in the order they
 * are read.
 */
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

int rt_ctf_stream_open(const char *dir, uint64_t stream)
{
	char path[4200];
	rt_ctf_stream_path(path, sizeof(path), dir, stream);
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	return fd < 0 ? -errno : fd;
}

int ringtrace_ctf_append_page(const char *dir, const struct ringtrace_page_header *page,
			      size_t page_size)
{
	if (!dir || !page || page_size < RINGTRACE_PAGE_HEADER_SIZE)
		return rt_error(RINGTRACE_EINVAL, "ctf_append_page: invalid argument");
	int fd = rt_ctf_stream_open(dir, page->stream_instance_id);
	int err = fd < 0 ? fd : rt_write_all(fd, page, page_size);
	if (fd >= 0)
		close(fd);
	if (err < 0) {
		char path[4200];
		rt_ctf_stream_path(path, sizeof(path), dir, page->stream_instance_id);
		return rt_error(RINGTRACE_ESYS, "writing %s: %s", path, strerror(-err));
	}
	return 0;
}

void ringtrace_ctf_stream_path(char *buf, size_t size, const char *dir, uint64_t stream)
{
	rt_ctf_stream_path(buf, size, dir, stream);
}
