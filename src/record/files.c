/*
 * The recorder's files: the output directory (created, or an empty one),
 * and the stream files a consumer appends pages to, a bounded number open
 * at once (a program with thousands of short-lived threads has thousands
 * of streams), least recently used closed first.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record/record_internal.h"

int rt_mkdir_empty(const char *dir)
{
	if (mkdir(dir, 0755) == 0)
		return 0;
	if (errno != EEXIST)
		return rt_error(RINGTRACE_ESYS, "cannot create output directory \"%s\": %s", dir,
				strerror(errno));
	/* An existing directory must be empty: never mix two traces. */
	DIR *d = opendir(dir);
	if (!d)
		return rt_error(RINGTRACE_ESYS, "output \"%s\" is not a usable directory: %s", dir,
				strerror(errno));
	struct dirent *e;
	int empty = 1;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			empty = 0;
	closedir(d);
	if (!empty)
		return rt_error(
			RINGTRACE_EINVAL,
			"output directory \"%s\" is not empty (a trace is written only into an empty or new directory)",
			dir);
	return 0;
}

int rt_stream_fd(const char *dir, struct rt_file *files, uint64_t *clock, uint64_t stream)
{
	struct rt_file *victim = NULL;
	for (int i = 0; i < RT_MAX_OPEN_FILES; i++) {
		struct rt_file *f = &files[i];
		if (f->fd >= 0 && f->stream == stream) {
			f->last_use = ++*clock;
			return f->fd;
		}
		if (!victim || (victim->fd >= 0 && (f->fd < 0 || f->last_use < victim->last_use)))
			victim = f;
	}
	if (victim->fd >= 0)
		close(victim->fd);
	int fd = rt_ctf_stream_open(dir, stream);
	if (fd < 0) {
		errno = -fd;
		fd = -1;
	}
	victim->fd = fd;
	victim->stream = stream;
	victim->last_use = ++*clock;
	return fd;
}

void rt_stream_close(struct rt_file *files, uint64_t stream)
{
	for (int i = 0; i < RT_MAX_OPEN_FILES; i++)
		if (files[i].fd >= 0 && files[i].stream == stream) {
			close(files[i].fd);
			files[i].fd = -1;
		}
}

void rt_files_init(struct rt_file *files)
{
	for (int i = 0; i < RT_MAX_OPEN_FILES; i++) {
		files[i].fd = -1;
		files[i].stream = 0;
		files[i].last_use = 0;
	}
}

void rt_close_all(struct rt_file *files)
{
	for (int i = 0; i < RT_MAX_OPEN_FILES; i++)
		if (files[i].fd >= 0) {
			close(files[i].fd);
			files[i].fd = -1;
		}
}
