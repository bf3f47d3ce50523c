/*
 * The recorder's stream files: those a consumer appends pages to, a
 * bounded number open at once (a program with thousands of short-lived
 * threads has thousands of streams), least recently used closed first.
 * They are opened through the trace directory's descriptor, created new
 * and never through a symbolic link (src/base/tdir.c, where the directory
 * itself is made and locked).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record/record_internal.h"

int rt_stream_fd(const struct rt_tdir *d, struct rt_file *files, uint64_t *clock, uint64_t stream)
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
	int fd = rt_ctf_stream_open(d, stream);
	victim->fd = fd < 0 ? -1 : fd;
	victim->stream = stream;
	victim->last_use = ++*clock;
	return fd;
}

/*
 * After a failed write to a stream's file: the file cut back to its last
 * whole page (a write cut short leaves part of a packet, which readers
 * refuse), and removed if that leaves nothing (an empty stream file is not
 * a stream). Best effort: the write's error is what is reported.
 */
void rt_stream_cut(const struct rt_tdir *d, struct rt_file *files, uint64_t stream, size_t ps)
{
	for (int i = 0; i < RT_MAX_OPEN_FILES; i++) {
		struct rt_file *f = &files[i];
		if (f->fd < 0 || f->stream != stream)
			continue;
		struct stat st;
		if (fstat(f->fd, &st) == 0 && st.st_size % (off_t)ps != 0)
			(void)!ftruncate(f->fd, st.st_size - st.st_size % (off_t)ps);
		if (fstat(f->fd, &st) == 0 && st.st_size == 0) {
			char name[32];
			snprintf(name, sizeof(name), "stream_%llu", (unsigned long long)stream);
			unlinkat(d->fd, name, 0);
		}
		close(f->fd);
		f->fd = -1;
	}
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
