/*
 * ringtrace recover [--force] [SHM] DIR: complete the trace of a program
 * that died while recording (the machinery: src/collect/recover.c).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "collect/collect_api.h"
#include "verbs.h"

int verb_recover(int argc, char **argv)
{
	if (argc == 2 && cmd_is_help(argv[1])) {
		printf("usage: ringtrace recover [--force] [SHM] DIR\n\n"
		       "Make a complete trace in DIR from what a program that died while recording\n"
		       "left: the stream files and metadata its recorder had written to DIR, and\n"
		       "the pages still in its shared pool SHM (the RINGTRACE_SHM name it recorded\n"
		       "with, e.g. /ringtrace-1234): queued pages and each thread's current page\n"
		       "up to its last committed event. The pool is removed afterwards.\n"
		       "`ringtrace record` does this by itself when its program dies; when\n"
		       "`ringtrace record` was killed too, its pool is /ringtrace-rec-PID-...\n"
		       "(PID: the command's).\n"
		       "Without SHM, the pool is found among the objects named ringtrace-* in\n"
		       "/dev/shm: the one of DIR's owner, mode 0600, with the trace's uuid.\n\n"
		       "The program must have exited: recovering from a live one would take its\n"
		       "recorder's pages away (DIR is refused while its recorder holds its lock).\n"
		       "SHM must be the object the program made: owned by DIR's owner, mode 0600.\n"
		       "Files are added to DIR as the recorder makes them: never through a\n"
		       "symbolic link, new ones 0600 (0640 if DIR is readable by its group).\n"
		       "Nothing already in DIR is cut or rewritten: a stream file that ends\n"
		       "inside a page (its recorder was killed while writing it) is renamed,\n"
		       "unchanged, to .stream_N.partial (hidden: CTF readers skip it); a new\n"
		       "stream_N gets its whole pages, the complete events of the cut page,\n"
		       "then the recovered pages. (A .stream_N.partial left by a recover that\n"
		       "was itself interrupted makes a second one refuse: look at both files.)\n\n"
		       "Refused, before anything is written:\n"
		       "  - a complete trace (its recorder stopped normally: the metadata has\n"
		       "    stat lines), even with --force;\n"
		       "  - DIR locked by a live recorder or another recover, even with --force;\n"
		       "  - a pool whose uuid is not the trace's (or a trace without one);\n"
		       "  - a pool with a writer still alive (its program is running).\n"
		       "  --force   recover anyway from a pool of another uuid, or with live\n"
		       "            writers (only their idle pages are taken)\n\n"
		       "exit status: 0 recovered, 1 refused or nothing could be recovered,\n"
		       "2 usage error\n");
		return 0;
	}
	int force = 0, k = 1;
	if (k < argc && strcmp(argv[k], "--force") == 0) {
		force = 1;
		k++;
	}
	if (argc - k < 1 || argc - k > 2 || argv[k][0] == '-') {
		fprintf(stderr, "ringtrace recover: expected [--force] [SHM] DIR (ringtrace "
				"recover --help)\n");
		return 2;
	}
	const char *dir = argv[argc - 1], *shm = argv[k];
	char found[300], why[512];
	if (argc - k == 1) {
		int r = co_find_pool(dir, found, sizeof(found), why, sizeof(why));
		if (r < 0) {
			fprintf(stderr, "ringtrace recover: %s\n", why);
			return 1;
		}
		if (r == 0) {
			fprintf(stderr,
				"ringtrace recover: no pool of the trace %s is left in /dev/shm (its "
				"program removed it at its exit, or it was recovered already, or the "
				"machine restarted); a pool named otherwise than ringtrace-* is given "
				"as SHM\n",
				dir);
			return 1;
		}
		fprintf(stderr, "ringtrace recover: the pool of %s is %s\n", dir, found);
		shm = found;
	}
	int rc = co_recover(shm, dir, 0, force);
	if (rc == 0)
		shm_unlink(shm);
	return rc;
}
