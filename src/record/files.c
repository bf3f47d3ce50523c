/*
 * The recorder's stream files: those a consumer appends pages to, a
 * bounded number open at once (a program with thousands of short-lived
 * threads has thousands of streams), least recently used closed first.
 * They are opened through the trace directory's descriptor, created new
 * and never through a symbolic link (src/base/tdir.c, where the directory
 * itself is made and locked).
 *
 * The descriptors are the traced program's: the recorder keeps at most a
 * sixteenth of its RLIMIT_NOFILE open (63 at most, one at least), so that
 * a program run with few descriptors still has its own. It also holds one
 * in reserve from the session's start (the last slot, /dev/null): when an
 * open fails because the program has taken the rest (EMFILE), it closes
 * the reserve and the others it holds and tries once more, so that the
 * trace's first stream file (and, at the stop, its metadata) can be made
 * even where the program and its other libraries use every descriptor.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record/record_internal.h"

int rt_stream_fd(const struct rt_tdir *d, struct rt_file *files, uint64_t *clock, uint64_t stream)
{
	struct rt_file *victim = NULL;
	for (int i = 0; i < RT_FILE_RESERVE; i++) {
		struct rt_file *f = &files[i];
		if (f->fd == RT_FILE_UNUSABLE)
			continue;
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
	if (fd < 0) {
		/* (out of descriptors, most likely: ours go first, the reserve too) */
		int closed = 0;
		for (int i = 0; i < RT_MAX_OPEN_FILES; i++)
			if (files[i].fd >= 0 && &files[i] != victim) {
				close(files[i].fd);
				files[i].fd = -1;
				closed = 1;
			}
		if (closed)
			fd = rt_ctf_stream_open(d, stream);
	}
	victim->fd = fd < 0 ? -1 : fd;
	victim->stream = stream;
	victim->last_use = ++*clock;
	/* The reserve given up for this open taken again where a descriptor
	 * is free by now: the next time the program has taken the rest, it is
	 * there to give up again. (After the open, not before: taken first,
	 * it would make the open wait whenever the program holds the rest.) */
	if (fd >= 0 && files[RT_FILE_RESERVE].fd == -1 &&
	    files[RT_FILE_RESERVE].stream == UINT64_MAX)
		files[RT_FILE_RESERVE].fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
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

int rt_files_init(struct rt_file *files)
{
	int cap = RT_FILE_RESERVE;
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur / 16 < (rlim_t)cap)
		cap = rl.rlim_cur < 32 ? 1 : (int)(rl.rlim_cur / 16);
	for (int i = 0; i < RT_MAX_OPEN_FILES; i++) {
		files[i].fd = i < cap ? -1 : RT_FILE_UNUSABLE;
		files[i].stream = 0;
		files[i].last_use = 0;
	}
	files[RT_FILE_RESERVE].fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	files[RT_FILE_RESERVE].stream = UINT64_MAX;
	return files[RT_FILE_RESERVE].fd < 0 ? -errno : 0;
}

void rt_close_all(struct rt_file *files)
{
	for (int i = 0; i < RT_MAX_OPEN_FILES; i++)
		if (files[i].fd >= 0) {
			close(files[i].fd);
			files[i].fd = -1;
		}
}

int rt_reserve_make(const struct rt_tdir *d, uint64_t size)
{
	unlinkat(d->fd, RT_CTF_RESERVE, 0);
	int fd = rt_openat_wait(d->fd, RT_CTF_RESERVE,
				O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int e = posix_fallocate(fd, 0, (off_t)size);
	close(fd);
	if (e != 0) {
		unlinkat(d->fd, RT_CTF_RESERVE, 0);
		return -e;
	}
	return 0;
}

void rt_reserve_release(const struct rt_tdir *d)
{
	unlinkat(d->fd, RT_CTF_RESERVE, 0);
}
