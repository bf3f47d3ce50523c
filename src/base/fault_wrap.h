/*
 * src/base/fault_wrap.h - included before anything else in every source
 * file of ringtrace when built with RINGTRACE_FAULT_INJECTION (the
 * compiler's -include; never included by hand): the functions that
 * src/base/fault.h can fail become calls of its wrappers.
 *
 * The system headers that declare them come first, so that their
 * declarations are read before the macros exist (the include guards keep
 * a later #include from reading them again), and _GNU_SOURCE with them,
 * as every file of ringtrace asks for it anyway.
 */
#ifndef RINGTRACE_BASE_FAULT_WRAP_H
#define RINGTRACE_BASE_FAULT_WRAP_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

void *rt_fault_malloc(size_t n);
void *rt_fault_calloc(size_t n, size_t size);
void *rt_fault_realloc(void *p, size_t n);
char *rt_fault_strdup(const char *s);
char *rt_fault_strndup(const char *s, size_t n);
int rt_fault_open(const char *path, int flags, ...);
int rt_fault_openat(int dir, const char *path, int flags, ...);
FILE *rt_fault_fopen(const char *path, const char *mode);
int rt_fault_shm_open(const char *name, int flags, mode_t mode);
int rt_fault_memfd_create(const char *name, unsigned flags);
DIR *rt_fault_opendir(const char *path);
DIR *rt_fault_fdopendir(int fd);
int rt_fault_dup(int fd);
ssize_t rt_fault_write(int fd, const void *buf, size_t n);
ssize_t rt_fault_pwrite(int fd, const void *buf, size_t n, off_t off);
int rt_fault_ftruncate(int fd, off_t len);
void *rt_fault_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int rt_fault_socket(int domain, int type, int protocol);

#undef strdup
#undef strndup
#define malloc(...) rt_fault_malloc(__VA_ARGS__)
#define calloc(...) rt_fault_calloc(__VA_ARGS__)
#define realloc(...) rt_fault_realloc(__VA_ARGS__)
#define strdup(...) rt_fault_strdup(__VA_ARGS__)
#define strndup(...) rt_fault_strndup(__VA_ARGS__)
#define open(...) rt_fault_open(__VA_ARGS__)
#define openat(...) rt_fault_openat(__VA_ARGS__)
#define fopen(...) rt_fault_fopen(__VA_ARGS__)
#define shm_open(...) rt_fault_shm_open(__VA_ARGS__)
#define memfd_create(...) rt_fault_memfd_create(__VA_ARGS__)
#define opendir(...) rt_fault_opendir(__VA_ARGS__)
#define fdopendir(...) rt_fault_fdopendir(__VA_ARGS__)
#define dup(...) rt_fault_dup(__VA_ARGS__)
#define write(...) rt_fault_write(__VA_ARGS__)
#define pwrite(...) rt_fault_pwrite(__VA_ARGS__)
#define ftruncate(...) rt_fault_ftruncate(__VA_ARGS__)
#define mmap(...) rt_fault_mmap(__VA_ARGS__)
#define socket(...) rt_fault_socket(__VA_ARGS__)

#endif /* RINGTRACE_BASE_FAULT_WRAP_H */
