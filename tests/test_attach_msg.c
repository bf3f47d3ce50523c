/*
 * test_attach_msg: the attach protocol's message reading
 * (src/base/rendezvous.c) when the peer is slow or stops in the middle of
 * a message: the error says what happened, not the errno of a socket's
 * receive time limit, and errno stays EAGAIN for the callers that tell a
 * slow program from a gone one.
 */
#include <sys/socket.h>
#include <sys/time.h>

#include "check.h"
#include "ringtrace/attach.h"
#include "ringtrace/error.h"

/* A connected pair whose first end gives up reading after 20 ms. */
static void slow_pair(int sv[2])
{
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	struct timeval tv = {0, 20 * 1000};
	CHECK(setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0);
}

static void t_header(void)
{
	int sv[2];
	slow_pair(sv);
	uint32_t type, len;
	char buf[64];
	CHECK(ringtrace_attach_recv(sv[0], &type, buf, sizeof(buf), &len) == -1);
	/* the caller tells a time limit from the rest by errno */
	CHECKF(errno == EAGAIN || errno == EWOULDBLOCK, "errno %d", errno);
	const char *e = ringtrace_last_error();
	CHECKF(strstr(e, "reading a message header: no answer from the peer within its time "
			 "limit (0.020 s)") != NULL,
	       "error: %s", e);
	close(sv[0]);
	close(sv[1]);
}

static void t_payload(void)
{
	int sv[2];
	slow_pair(sv);
	/* a header announcing 8 bytes, and none of them */
	struct ringtrace_attach_hdr h = {8, RINGTRACE_ATTACH_HELLO};
	CHECK(write(sv[1], &h, sizeof(h)) == (ssize_t)sizeof(h));
	uint32_t type, len;
	char buf[64];
	CHECK(ringtrace_attach_recv(sv[0], &type, buf, sizeof(buf), &len) == -1);
	const char *e = ringtrace_last_error();
	char want[120];
	snprintf(want, sizeof(want),
		 "message of type %u: reading its 8 bytes: no answer from the peer within its "
		 "time limit (0.020 s)",
		 (unsigned)RINGTRACE_ATTACH_HELLO);
	CHECKF(strstr(e, want) != NULL, "error: %s", e);
	close(sv[0]);
	close(sv[1]);
}

static void t_gone(void)
{
	int sv[2];
	slow_pair(sv);
	struct ringtrace_attach_hdr h = {8, RINGTRACE_ATTACH_HELLO};
	CHECK(write(sv[1], &h, sizeof(h)) == (ssize_t)sizeof(h));
	CHECK(write(sv[1], "abc", 3) == 3);
	close(sv[1]);
	uint32_t type, len;
	char buf[64];
	CHECK(ringtrace_attach_recv(sv[0], &type, buf, sizeof(buf), &len) == -1);
	const char *e = ringtrace_last_error();
	CHECKF(strstr(e, "reading its 8 bytes: cut short") != NULL, "error: %s", e);
	close(sv[0]);
}

static const struct check_case cases[] = {
	CHECK_CASE(attach_recv_timeout_names_the_time_limit, t_header),
	CHECK_CASE(attach_recv_payload_timeout_names_the_message, t_payload),
	CHECK_CASE(attach_recv_peer_gone_mid_message_says_cut_short, t_gone),
};

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
