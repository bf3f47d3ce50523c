/*
 * Fault injection (src/base/fault.h): the wrappers that fault_wrap.h puts
 * in place of the allocation, file and descriptor functions, and their
 * spec. Built only with RINGTRACE_FAULT_INJECTION. This file calls the real
 * functions: the wrapper's macros are undone first.
 *
 * The counters are atomics, so that threads count calls exactly once each;
 * which thread's call is the Nth is then a matter of timing, as it is for
 * a real failure. Arming from the environment happens at the first counted
 * call of the process (a constructor could run after another constructor's
 * allocations), one thread parsing while the others wait for it.
 */
#undef malloc
#undef calloc
#undef realloc
#undef strdup
#undef strndup
#undef open
#undef openat
#undef fopen
#undef shm_open
#undef memfd_create
#undef opendir
#undef fdopendir
#undef dup
#undef write
#undef pwrite
#undef ftruncate
#undef mmap
#undef socket

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "base/fault.h"
#include "base/fault_wrap.h"

enum rt_ffn {
	F_MALLOC,
	F_CALLOC,
	F_REALLOC,
	F_STRDUP,
	F_STRNDUP,
	F_OPEN,
	F_OPENAT,
	F_FOPEN,
	F_SHM_OPEN,
	F_MEMFD,
	F_OPENDIR,
	F_FDOPENDIR,
	F_DUP,
	F_WRITE,
	F_PWRITE,
	F_FTRUNCATE,
	F_MMAP,
	F_SOCKET,
	F_COUNT
};

static const char *const rt_ffn_names[F_COUNT] = {
	"malloc", "calloc", "realloc",  "strdup",       "strndup", "open",
	"openat", "fopen",  "shm_open", "memfd_create", "opendir", "fdopendir",
	"dup",    "write",  "pwrite",   "ftruncate",    "mmap",    "socket",
};

#define FM(f) (1u << (f))
#define FM_ALLOC (FM(F_MALLOC) | FM(F_CALLOC) | FM(F_REALLOC) | FM(F_STRDUP) | FM(F_STRNDUP))
#define FM_OPEN                                                                                   \
	(FM(F_OPEN) | FM(F_OPENAT) | FM(F_FOPEN) | FM(F_SHM_OPEN) | FM(F_MEMFD) | FM(F_OPENDIR) | \
	 FM(F_FDOPENDIR) | FM(F_DUP))
#define FM_WRITE (FM(F_WRITE) | FM(F_PWRITE))
#define FM_FILE (FM_OPEN | FM_WRITE | FM(F_FTRUNCATE) | FM(F_MMAP) | FM(F_SOCKET))
#define FM_ANY (FM_ALLOC | FM_FILE)

static const struct {
	const char *name;
	int value;
} rt_ferrnos[] = {
	{"ENOMEM", ENOMEM}, {"ENOSPC", ENOSPC}, {"EIO", EIO},       {"EDQUOT", EDQUOT},
	{"EMFILE", EMFILE}, {"ENFILE", ENFILE}, {"EACCES", EACCES}, {"EPERM", EPERM},
	{"EINTR", EINTR},   {"EAGAIN", EAGAIN}, {"EFBIG", EFBIG},   {"EROFS", EROFS},
};

static struct {
	uint32_t mask;     /* functions counted; 0: disarmed */
	uint64_t n;        /* the counted call that fails */
	int persist;       /* and every one after it */
	int err;           /* 0: the function's default */
	unsigned stall_ms; /* wait instead of failing */
} F;
static uint64_t rt_fcalls, rt_ffired;
static int rt_fstate; /* 0: environment not read yet, 1: being read, 2: read */

static int rt_fault_default_errno(enum rt_ffn f)
{
	if (FM(f) & (FM_ALLOC | FM(F_MMAP)))
		return ENOMEM;
	if (FM(f) & (FM_OPEN | FM(F_SOCKET)))
		return EMFILE;
	return EIO;
}

static const char *rt_ferrno_name(int e)
{
	for (size_t i = 0; i < sizeof(rt_ferrnos) / sizeof(rt_ferrnos[0]); i++)
		if (rt_ferrnos[i].value == e)
			return rt_ferrnos[i].name;
	return "E?";
}

static uint32_t rt_fkind_mask(const char *k, size_t len)
{
	static const struct {
		const char *name;
		uint32_t mask;
	} classes[] = {{"alloc", FM_ALLOC},
		       {"open", FM_OPEN},
		       {"write", FM_WRITE},
		       {"file", FM_FILE},
		       {"any", FM_ANY}};
	/* a class first: "open" and "write" are classes (open's and write's
	 * functions), which hold the functions of the same name */
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
		if (strlen(classes[i].name) == len && !strncmp(k, classes[i].name, len))
			return classes[i].mask;
	for (int f = 0; f < F_COUNT; f++)
		if (strlen(rt_ffn_names[f]) == len && !strncmp(k, rt_ffn_names[f], len))
			return FM(f);
	return 0;
}

static int rt_fparse_option(const char *o, size_t len)
{
	if (len == 7 && !strncmp(o, "persist", 7)) {
		F.persist = 1;
		return 0;
	}
	if (len > 6 && !strncmp(o, "errno=", 6)) {
		for (size_t i = 0; i < sizeof(rt_ferrnos) / sizeof(rt_ferrnos[0]); i++)
			if (strlen(rt_ferrnos[i].name) == len - 6 &&
			    !strncmp(o + 6, rt_ferrnos[i].name, len - 6)) {
				F.err = rt_ferrnos[i].value;
				return 0;
			}
		return -1;
	}
	if (len > 6 && !strncmp(o, "stall=", 6)) {
		char *end;
		unsigned long ms = strtoul(o + 6, &end, 10);
		if (end != o + len || ms == 0 || ms > 600000)
			return -1;
		F.stall_ms = (unsigned)ms;
		return 0;
	}
	return -1;
}

/* Parse spec into F; -1 if it does not parse (F then disarmed). */
static int rt_fparse(const char *spec)
{
	memset(&F, 0, sizeof(F));
	const char *colon = strchr(spec, ':');
	uint32_t mask = colon ? rt_fkind_mask(spec, (size_t)(colon - spec)) : 0;
	if (!mask)
		return -1;
	char *end;
	errno = 0;
	unsigned long long n = strtoull(colon + 1, &end, 10);
	if (errno || n == 0 || end == colon + 1 || (*end && *end != ':'))
		return -1;
	F.n = n;
	while (*end == ':') {
		const char *o = end + 1;
		end = strchr(o, ':');
		if (!end)
			end = (char *)o + strlen(o);
		if (rt_fparse_option(o, (size_t)(end - o)) < 0) {
			memset(&F, 0, sizeof(F));
			return -1;
		}
	}
	F.mask = mask;
	return 0;
}

static void rt_fault_from_env(void)
{
	int expected = 0;
	if (__atomic_compare_exchange_n(&rt_fstate, &expected, 1, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		const char *spec = secure_getenv("RINGTRACE_FAULT");
		const char *only = secure_getenv("RINGTRACE_FAULT_ONLY");
		if (spec && *spec && (!only || !strcmp(only, program_invocation_short_name)) &&
		    rt_fparse(spec) < 0)
			fprintf(stderr,
				"ringtrace: RINGTRACE_FAULT=%s: not a fault spec (KIND:N[:persist]"
				"[:errno=NAME][:stall=MS])\n",
				spec);
		__atomic_store_n(&rt_fstate, 2, __ATOMIC_RELEASE);
		return;
	}
	while (__atomic_load_n(&rt_fstate, __ATOMIC_ACQUIRE) != 2)
		sched_yield();
}

static void rt_fault_log(enum rt_ffn f, uint64_t call, int err)
{
	const char *path = secure_getenv("RINGTRACE_FAULT_LOG");
	if (!path || !*path)
		return;
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	char line[128];
	int len = snprintf(line, sizeof(line), "fault %s %llu %s %d\n", rt_ffn_names[f],
			   (unsigned long long)call, err ? rt_ferrno_name(err) : "stall",
			   (int)getpid());
	if (len > 0 && (size_t)len < sizeof(line) && write(fd, line, (size_t)len) < 0)
		len = 0; /* (a log that cannot be written is no reason to fail the call) */
	close(fd);
}

/* 0: make the call; else the errno it fails with. */
static int rt_fault_check(enum rt_ffn f)
{
	if (rt_unlikely(__atomic_load_n(&rt_fstate, __ATOMIC_ACQUIRE) != 2))
		rt_fault_from_env();
	if (!(F.mask & FM(f)))
		return 0;
	uint64_t call = __atomic_add_fetch(&rt_fcalls, 1, __ATOMIC_RELAXED);
	if (call < F.n || (call > F.n && !F.persist))
		return 0;
	__atomic_add_fetch(&rt_ffired, 1, __ATOMIC_RELAXED);
	int err = F.stall_ms ? 0 : F.err ? F.err : rt_fault_default_errno(f);
	rt_fault_log(f, call, err);
	if (F.stall_ms) {
		struct timespec d = {F.stall_ms / 1000, (long)(F.stall_ms % 1000) * 1000000L};
		while (nanosleep(&d, &d) < 0 && errno == EINTR)
			;
		return 0;
	}
	return err;
}

int rt_fault_arm(const char *spec)
{
	__atomic_store_n(&rt_fstate, 2, __ATOMIC_RELEASE); /* the environment's spec, replaced */
	__atomic_store_n(&rt_fcalls, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&rt_ffired, 0, __ATOMIC_RELAXED);
	if (!spec || !*spec) {
		memset(&F, 0, sizeof(F));
		return 0;
	}
	if (rt_fparse(spec) < 0) {
		fprintf(stderr, "ringtrace: fault spec %s does not parse\n", spec);
		return -1;
	}
	return 0;
}

void rt_fault_disarm(void)
{
	(void)rt_fault_arm(NULL);
}

uint64_t rt_fault_calls(void)
{
	return __atomic_load_n(&rt_fcalls, __ATOMIC_RELAXED);
}

uint64_t rt_fault_fired(void)
{
	return __atomic_load_n(&rt_ffired, __ATOMIC_RELAXED);
}

#define RT_FAIL(f, failed)                  \
	do {                                \
		int e_ = rt_fault_check(f); \
		if (rt_unlikely(e_)) {      \
			errno = e_;         \
			return failed;      \
		}                           \
	} while (0)

void *rt_fault_malloc(size_t n)
{
	RT_FAIL(F_MALLOC, NULL);
	return malloc(n);
}

void *rt_fault_calloc(size_t n, size_t size)
{
	RT_FAIL(F_CALLOC, NULL);
	return calloc(n, size);
}

void *rt_fault_realloc(void *p, size_t n)
{
	RT_FAIL(F_REALLOC, NULL);
	return realloc(p, n);
}

char *rt_fault_strdup(const char *s)
{
	RT_FAIL(F_STRDUP, NULL);
	return strdup(s);
}

char *rt_fault_strndup(const char *s, size_t n)
{
	RT_FAIL(F_STRNDUP, NULL);
	return strndup(s, n);
}

/* open's and openat's mode: there only when the flags create a file. */
static mode_t rt_fmode(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

int rt_fault_open(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = rt_fmode(flags, ap);
	va_end(ap);
	RT_FAIL(F_OPEN, -1);
	return open(path, flags, mode);
}

int rt_fault_openat(int dir, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = rt_fmode(flags, ap);
	va_end(ap);
	RT_FAIL(F_OPENAT, -1);
	return openat(dir, path, flags, mode);
}

FILE *rt_fault_fopen(const char *path, const char *mode)
{
	RT_FAIL(F_FOPEN, NULL);
	return fopen(path, mode);
}

int rt_fault_shm_open(const char *name, int flags, mode_t mode)
{
	RT_FAIL(F_SHM_OPEN, -1);
	return shm_open(name, flags, mode);
}

int rt_fault_memfd_create(const char *name, unsigned flags)
{
	RT_FAIL(F_MEMFD, -1);
	return memfd_create(name, flags);
}

DIR *rt_fault_opendir(const char *path)
{
	RT_FAIL(F_OPENDIR, NULL);
	return opendir(path);
}

DIR *rt_fault_fdopendir(int fd)
{
	RT_FAIL(F_FDOPENDIR, NULL);
	return fdopendir(fd);
}

int rt_fault_dup(int fd)
{
	RT_FAIL(F_DUP, -1);
	return dup(fd);
}

ssize_t rt_fault_write(int fd, const void *buf, size_t n)
{
	RT_FAIL(F_WRITE, -1);
	return write(fd, buf, n);
}

ssize_t rt_fault_pwrite(int fd, const void *buf, size_t n, off_t off)
{
	RT_FAIL(F_PWRITE, -1);
	return pwrite(fd, buf, n, off);
}

int rt_fault_ftruncate(int fd, off_t len)
{
	RT_FAIL(F_FTRUNCATE, -1);
	return ftruncate(fd, len);
}

void *rt_fault_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	RT_FAIL(F_MMAP, MAP_FAILED);
	return mmap(addr, len, prot, flags, fd, off);
}

int rt_fault_socket(int domain, int type, int protocol)
{
	RT_FAIL(F_SOCKET, -1);
	return socket(domain, type, protocol);
}
