/*
 * Recording from the environment: a program linked with libringtrace is
 * traced without code changes when RINGTRACE_OUTPUT names a directory
 * (`ringtrace record` sets it; ringtrace/session.h lists the variables).
 * The session starts at load (src/record/runtime.c calls rt_env_start from
 * a constructor) and stops at exit; SIGUSR2 takes a snapshot, SIGINT and
 * SIGTERM save the trace before they take their usual effect.
 *
 * In a program running with AT_SECURE (set-user-ID, set-group-ID, file
 * capabilities) no RINGTRACE_* variable is read (rt_getenv): its caller
 * chose them, and must not make it write where the caller says.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/record_internal.h"

/* A size by the strict rules of rt_parse_size, and one size_t can hold. */
static int rt_env_size(const char *s, size_t *out)
{
	uint64_t v;
	if (rt_parse_size(s, &v) < 0 || v > SIZE_MAX)
		return -1;
	*out = (size_t)v;
	return 0;
}

void rt_env_start(void)
{
	/* rt_getenv: nothing, in a program running with AT_SECURE (a
	 * set-user-ID program must not write where its caller says:
	 * src/base/environ.c). */
	const char *out = rt_getenv("RINGTRACE_OUTPUT");
	if (!out || !*out)
		return;
	struct ringtrace_session_config cfg;
	ringtrace_session_config_init(&cfg);
	cfg.output_dir = out;
	cfg.events = rt_getenv("RINGTRACE_EVENTS");
	const char *mode = rt_getenv("RINGTRACE_MODE");
	const char *bs = rt_getenv("RINGTRACE_BUFFER_SIZE"), *ps = rt_getenv("RINGTRACE_PAGE_SIZE");
	cfg.shm_name = rt_getenv("RINGTRACE_SHM");
	cfg.group = rt_getenv("RINGTRACE_GROUP");
	if (mode && strcmp(mode, "overwrite") == 0)
		cfg.mode = RINGTRACE_RB_OVERWRITE;
	else if (mode && strcmp(mode, "discard") != 0) {
		fprintf(stderr,
			"ringtrace: RINGTRACE_MODE=\"%s\": use discard or overwrite; not tracing\n",
			mode);
		return;
	}
	const char *bad = bs && rt_env_size(bs, &cfg.pool_size) < 0   ? "RINGTRACE_BUFFER_SIZE"
			  : ps && rt_env_size(ps, &cfg.page_size) < 0 ? "RINGTRACE_PAGE_SIZE"
								      : NULL;
	if (bad) {
		fprintf(stderr,
			"ringtrace: %s=\"%.40s\" is not a size (digits and an optional k, m or g, "
			"e.g. 64m, 64k); not tracing\n",
			bad, bad[10] == 'B' ? bs : ps);
		return;
	}
	if (rt_session_start(&cfg, 1) < 0) {
		fprintf(stderr, "ringtrace: cannot record to %s: %s\n", out,
			ringtrace_last_error());
		return;
	}
	atexit(rt_session_env_exit);
	/* A program this one executes must not record into the same directory
	 * or claim the same shm name. */
	unsetenv("RINGTRACE_OUTPUT");
	unsetenv("RINGTRACE_SHM");
	/* Only where the program left the default action. */
	struct sigaction old, sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGUSR2, NULL, &old) == 0 && old.sa_handler == SIG_DFL) {
		sa.sa_handler = rt_session_sigusr2;
		sigaction(SIGUSR2, &sa, NULL);
	}
	/* Ctrl-C or kill must not lose the trace: the consumer saves it, then
	 * the signal takes its default effect (the exit status stays right). */
	sa.sa_handler = rt_session_deadly_signal;
	if (sigaction(SIGINT, NULL, &old) == 0 && old.sa_handler == SIG_DFL)
		sigaction(SIGINT, &sa, NULL);
	if (sigaction(SIGTERM, NULL, &old) == 0 && old.sa_handler == SIG_DFL)
		sigaction(SIGTERM, &sa, NULL);
}
