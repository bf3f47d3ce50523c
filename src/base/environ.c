/*
 * The environment, as the tracing library may read it.
 *
 * A program running with AT_SECURE (set-user-ID, set-group-ID, or given
 * file capabilities) was started by someone less privileged than it is,
 * who chose its environment. RINGTRACE_OUTPUT there would make the program
 * create and write files where that user says, with the program's
 * privileges; RINGTRACE_EVENTS, _FILTERS, _TRIGGERS, _SHM and _CLOCK would
 * let that user change what a privileged program records and where its
 * pool lives. So every RINGTRACE_* variable goes through rt_getenv, which
 * sees none of them in such a program, as glibc's secure_getenv does (and
 * as the dynamic loader ignores LD_PRELOAD there).
 *
 * Silently: a line on stderr would be output of a privileged program
 * chosen by the caller's environment (its stderr may be a file, a pipe
 * another program parses, or a descriptor the caller arranged). The
 * documentation says the rule (ringtrace/session.h, README).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/auxv.h>

#include "base/base.h"

int rt_secure_mode(void)
{
	/* The kernel's answer, set at exec: it cannot be changed by the
	 * environment or by the program afterwards. */
	return getauxval(AT_SECURE) != 0;
}

const char *rt_getenv(const char *name)
{
	if (rt_secure_mode())
		return NULL;
	return getenv(name);
}
