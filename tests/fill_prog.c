/*
 * test_fill_prog: a known sequence for the full-disk tests
 * (tests/test_diskfull.sh).
 *
 *   test_fill_prog N THREADS [DIR FILLER free|fill]
 *
 * THREADS threads each call fill_ev(thread, seq) for seq = 0 .. N-1 at
 * full rate, then print "thread T tid TID emitted N" on stdout and the
 * program exits 0. With DIR and FILLER: after every thread has emitted
 * its first half and the recorder has found the disk full (its live
 * metadata in DIR, the trace being written, has an `unwritten` line),
 * the main thread
 *   free: removes FILLER (space freed on the full disk), and the threads
 *         emit the second half slowly (64 events, then 1 ms) until the
 *         stream files in DIR have grown, i.e. the recorder has resumed
 *         writing, then at full rate; a run whose recorder never resumes
 *         ends with exit status 3;
 *   fill: writes FILLER until the disk has no byte left (what a page
 *         write left free), says "disk full: 0 bytes free" on stderr,
 *         and the threads emit the second half: the recorder's metadata
 *         at the end has no room but what it kept for itself.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define RINGTRACE_CREATE_EVENTS
#include <ringtrace/tracepoint.h>

RINGTRACE_EVENT(fill_ev, RINGTRACE_PROTO(uint32_t thread, uint64_t seq),
		RINGTRACE_ARGS(thread, seq),
		RINGTRACE_FIELDS(ringtrace_integer(uint32_t, thread, thread)
					 ringtrace_integer(uint64_t, seq, seq)),
		RINGTRACE_PRINT("thread=%u seq=%llu"))

static unsigned long n_events;
static const char *dir, *filler;
static int fill_mode; /* fill: FILLER takes the rest of the disk */
static pthread_barrier_t half, freed;
static int resumed; /* the stream files grew after the filler went */
static long long size_at_free;

/* DIR/metadata has an `unwritten` line: the recorder found the disk full. */
static int disk_found_full(void)
{
	char path[4200], line[512];
	snprintf(path, sizeof(path), "%s/metadata", dir);
	FILE *f = fopen(path, "r");
	int found = 0;
	while (f && !found && fgets(line, sizeof(line), f))
		found = strncmp(line, "unwritten ", 10) == 0;
	if (f)
		fclose(f);
	return found;
}

/* FILLER written until the disk is full: 0, or -1. */
static int fill_disk(void)
{
	static char zero[4096];
	int fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	size_t chunk = sizeof(zero);
	while (chunk) {
		ssize_t w = write(fd, zero, chunk);
		if (w < 0)
			chunk /= 2; /* (ENOSPC: the last bytes in smaller writes) */
	}
	close(fd);
	struct statvfs v;
	if (statvfs(filler, &v) != 0)
		return -1;
	fprintf(stderr, "disk full: %llu bytes free\n",
		(unsigned long long)v.f_bavail * (unsigned long long)v.f_bsize);
	return 0;
}

/* The bytes in DIR's stream files. */
static long long stream_bytes(void)
{
	DIR *d = opendir(dir);
	long long n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL) {
		struct stat st;
		if (strncmp(e->d_name, "stream_", 7) == 0 &&
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			n += st.st_size;
	}
	if (d)
		closedir(d);
	return n;
}

static void *emit(void *arg)
{
	uint32_t th = (uint32_t)(uintptr_t)arg;
	unsigned long i = 0, h = filler ? n_events / 2 : n_events;
	for (; i < h; i++)
		trace_fill_ev(th, i);
	if (filler) {
		pthread_barrier_wait(&half);
		pthread_barrier_wait(&freed);
		while (!fill_mode && i < n_events && !__atomic_load_n(&resumed, __ATOMIC_ACQUIRE)) {
			for (unsigned k = 0; k < 64 && i < n_events; k++, i++)
				trace_fill_ev(th, i);
			if (th == 0 && stream_bytes() > size_at_free)
				__atomic_store_n(&resumed, 1, __ATOMIC_RELEASE);
			nanosleep(&(struct timespec){0, 1000000}, NULL);
		}
		for (; i < n_events; i++)
			trace_fill_ev(th, i);
	}
	printf("thread %u tid %ld emitted %lu\n", th, (long)syscall(SYS_gettid), n_events);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3 &&
	    !(argc == 6 && (strcmp(argv[5], "free") == 0 || strcmp(argv[5], "fill") == 0))) {
		fprintf(stderr, "usage: test_fill_prog N THREADS [DIR FILLER free|fill]\n");
		return 2;
	}
	n_events = strtoul(argv[1], NULL, 10);
	unsigned nt = (unsigned)strtoul(argv[2], NULL, 10);
	if (nt < 1 || nt > 64)
		return 2;
	if (argc == 6) {
		dir = argv[3];
		filler = argv[4];
		fill_mode = strcmp(argv[5], "fill") == 0;
		pthread_barrier_init(&half, NULL, nt + 1);
		pthread_barrier_init(&freed, NULL, nt + 1);
	}
	pthread_t t[64];
	for (unsigned i = 0; i < nt; i++)
		pthread_create(&t[i], NULL, emit, (void *)(uintptr_t)i);
	if (filler) {
		pthread_barrier_wait(&half);
		/* (the first half may still be in the buffer: until the
		 * recorder has met the full disk, 10 s at most) */
		for (int i = 0; i < 10000 && !disk_found_full(); i++)
			nanosleep(&(struct timespec){0, 1000000}, NULL);
		if (!disk_found_full()) {
			fprintf(stderr, "test_fill_prog: the disk did not fill\n");
			return 3;
		}
		size_at_free = stream_bytes();
		if (fill_mode ? fill_disk() != 0 : unlink(filler) != 0) {
			perror(filler);
			return 4;
		}
		pthread_barrier_wait(&freed);
	}
	for (unsigned i = 0; i < nt; i++)
		pthread_join(t[i], NULL);
	if (filler && !fill_mode && !resumed) {
		fprintf(stderr, "test_fill_prog: the recorder did not resume writing\n");
		return 3;
	}
	return 0;
}
