/*
 * test_pingpong_prog: two processes that pass a token back and forth
 * through two pipes, recording each step, for the ordering test of trace
 * collections (tests/test_attach.sh): every event must come after the one
 * in the other process that caused it, once the two traces are merged by
 * time.
 *
 *   test_pingpong_prog ping|pong N FIFO_IN FIFO_OUT
 *
 * ping: for n = 1..N: pp_sent(0, n), write n; read n back, pp_got(0, n).
 * pong: for n = 1..N: read n, pp_got(1, n); pp_sent(1, n), write n back.
 * So the only order possible is, for each n: sent(0,n) got(1,n) sent(1,n)
 * got(0,n). Exits 0 if every token came back as sent.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RINGTRACE_CREATE_EVENTS
#include <ringtrace/tracepoint.h>

RINGTRACE_EVENT(pp_sent, RINGTRACE_PROTO(uint32_t role, uint32_t n), RINGTRACE_ARGS(role, n),
		RINGTRACE_FIELDS(ringtrace_integer(uint32_t, role, role)
					 ringtrace_integer(uint32_t, n, n)),
		RINGTRACE_PRINT("role=%u n=%u"))

RINGTRACE_EVENT(pp_got, RINGTRACE_PROTO(uint32_t role, uint32_t n), RINGTRACE_ARGS(role, n),
		RINGTRACE_FIELDS(ringtrace_integer(uint32_t, role, role)
					 ringtrace_integer(uint32_t, n, n)),
		RINGTRACE_PRINT("role=%u n=%u"))

static int xfer(int fd, uint32_t *v, int out)
{
	size_t done = 0;
	while (done < sizeof(*v)) {
		ssize_t r = out ? write(fd, (char *)v + done, sizeof(*v) - done)
				: read(fd, (char *)v + done, sizeof(*v) - done);
		if (r <= 0)
			return -1;
		done += (size_t)r;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 5 || (strcmp(argv[1], "ping") && strcmp(argv[1], "pong"))) {
		fprintf(stderr, "usage: test_pingpong_prog ping|pong N FIFO_IN FIFO_OUT\n");
		return 2;
	}
	uint32_t role = strcmp(argv[1], "pong") == 0;
	uint32_t n = (uint32_t)strtoul(argv[2], NULL, 10);
	/* (ping opens its output first, pong its input: no deadlock on the FIFOs) */
	int in, out;
	if (role == 0) {
		out = open(argv[4], O_WRONLY);
		in = open(argv[3], O_RDONLY);
	} else {
		in = open(argv[3], O_RDONLY);
		out = open(argv[4], O_WRONLY);
	}
	if (in < 0 || out < 0) {
		perror("test_pingpong_prog: open");
		return 1;
	}
	for (uint32_t i = 1; i <= n; i++) {
		uint32_t v = i;
		if (role == 0) {
			trace_pp_sent(0, i);
			if (xfer(out, &v, 1) < 0 || xfer(in, &v, 0) < 0 || v != i)
				return 1;
			trace_pp_got(0, v);
		} else {
			if (xfer(in, &v, 0) < 0 || v != i)
				return 1;
			trace_pp_got(1, v);
			trace_pp_sent(1, v);
			if (xfer(out, &v, 1) < 0)
				return 1;
		}
	}
	return 0;
}
