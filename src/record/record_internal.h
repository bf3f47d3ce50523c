/*
 * src/record/record_internal.h - the recorder, shared by its files:
 *   session.c  sessions: the buffer, the consumer thread, stop, snapshots
 *   files.c    the stream files (the directory: src/base/tdir.c)
 *   env.c      the session started from the environment (RINGTRACE_OUTPUT)
 *   runtime.c  what the tracing library does at load: the hooks between
 *              layers, the environment's session; ringtrace_runtime_
 * The top layer of the library: nothing calls into it from below except
 * through the hooks runtime.c registers.
 */
#ifndef RINGTRACE_RECORD_INTERNAL_H
#define RINGTRACE_RECORD_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "ctf/ctf_api.h"
#include "event/event_api.h"
#include "ringtrace/printf.h"
#include "ringtrace/session.h"

/* ---- files.c ---- */

#define RT_MAX_OPEN_FILES 64
/* rt_file.fd of the slots beyond this process's share (files.c) */
#define RT_FILE_UNUSABLE (-2)
/* the slot of the descriptor held in reserve (files.c) */
#define RT_FILE_RESERVE (RT_MAX_OPEN_FILES - 1)

struct rt_file {
	uint64_t stream;
	int fd;
	uint64_t last_use;
};

/* All closed, as many usable as this process's descriptor limit allows,
 * and one descriptor taken in reserve: 0, or -errno if none could be had. */
RT_HIDDEN int rt_files_init(struct rt_file *files);
/* The file of a stream in d, opened to append if needed (LRU): an fd, or
 * a negative error with a message naming the file. */
RT_HIDDEN int rt_stream_fd(const struct rt_tdir *d, struct rt_file *files, uint64_t *clock,
			   uint64_t stream);
RT_HIDDEN void rt_stream_close(struct rt_file *files, uint64_t stream);
/* After a failed write: the stream's file cut to whole pages (removed if
 * empty) and closed. */
RT_HIDDEN void rt_stream_cut(const struct rt_tdir *d, struct rt_file *files, uint64_t stream,
			     size_t ps);
RT_HIDDEN void rt_close_all(struct rt_file *files);
/* The room kept for the final metadata in d (RT_CTF_RESERVE): made anew,
 * size bytes allocated (0 or -errno: none left then), or released. */
RT_HIDDEN int rt_reserve_make(const struct rt_tdir *d, uint64_t size);
RT_HIDDEN void rt_reserve_release(const struct rt_tdir *d);

/* ---- session.c ---- */

/* ringtrace_session_start; from_env: started by rt_env_start. */
RT_HIDDEN int rt_session_start(const struct ringtrace_session_config *cfg, int from_env);
/* The same into a trace directory made and checked already (rt_tdir_adopt;
 * taken over, closed on error; cfg->output_dir is not used), declaring the
 * clock conversion clk if it fits (NULL: the process's) and the wall
 * clock's offset realtime_offset (the recording's, that every trace of it
 * declares; NULL: measured at the start); *gen: its number. */
RT_HIDDEN int rt_session_start_in(const struct ringtrace_session_config *cfg, struct rt_tdir *dir,
				  const struct rt_clock *clk, const int64_t *realtime_offset,
				  uint64_t *gen);
/* Stop the running session only if it is the one rt_session_start_in
 * numbered gen (the program may have stopped it and started its own):
 * what the stop returns (0 or a negative error), or 1 if that session is
 * not running (nothing stopped). */
RT_HIDDEN int rt_session_stop_if(uint64_t gen);
/* The counts of the last session that stopped (written into its metadata). */
RT_HIDDEN void rt_session_last_stats(struct ringtrace_trace_stats *st);
/* The snapshot trigger's hook (control): async-signal-safe; 0 if no
 * session is recording. */
RT_HIDDEN int rt_session_request_snapshot(void);
/* atexit of a session started from the environment: stop it. */
RT_HIDDEN void rt_session_env_exit(void);
RT_HIDDEN void rt_session_atfork_child(void);
/* Signal handlers of a session started from the environment. */
RT_HIDDEN void rt_session_deadly_signal(int sig);
RT_HIDDEN void rt_session_sigusr2(int sig);

/* ---- env.c ---- */

/* Start the session RINGTRACE_OUTPUT asks for, if it does. */
RT_HIDDEN void rt_env_start(void);
/* The attach listener (attach.c): started at load unless RINGTRACE_ATTACH=0. */
RT_HIDDEN void rt_attach_start(void);

#endif /* RINGTRACE_RECORD_INTERNAL_H */
