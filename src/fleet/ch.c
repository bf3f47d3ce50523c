/*
 * src/fleet/ch.c - one ClickHouse server over its HTTP interface
 * (fleet_api.h), with libcurl.
 *
 * One easy handle per server, kept for its life, so that the requests of
 * a load reuse one connection (keep-alive). A statement is the body of a
 * POST; an INSERT's statement is the `query` URL parameter and its
 * RowBinary rows the body. The credentials travel only as headers: the
 * URL requested is scheme://host:port/ and the settings, nothing else.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>

#include "fleet/fleet_api.h"

#define CH_FIELD_MAX 256 /* a user, a password, a host */
#define CH_MSG_MAX 400   /* the server's message as quoted in an error */
#define CH_WHERE_MAX 300

struct fl_ch {
	CURL *curl;
	struct curl_slist *headers; /* the credentials; wiped before they are freed */
	char where[CH_WHERE_MAX];   /* scheme://host:port, for messages and requests */
	char user[CH_FIELD_MAX];
	char password[CH_FIELD_MAX];
	char curl_err[CURL_ERROR_SIZE];
	struct fl_buf answer; /* an answer nobody asked for (an error's message) */
	struct fl_buf url;    /* the URL of the request being made */
};

/* ---- the URL and the credentials ---- */

/* Percent-decode [s, s + n) into out (at most CH_FIELD_MAX - 1 bytes):
 * 0, or -1 (a bad escape, too long, or a control character). */
static int pct_decode(const char *s, size_t n, char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned c = (unsigned char)s[i];
		if (c == '%') {
			if (i + 2 >= n || !isxdigit((unsigned char)s[i + 1]) ||
			    !isxdigit((unsigned char)s[i + 2]))
				return -1;
			char hex[3] = {s[i + 1], s[i + 2], 0};
			c = (unsigned)strtoul(hex, NULL, 16);
			i += 2;
		}
		if (c < 0x20 || c == 0x7f || o + 1 >= CH_FIELD_MAX)
			return -1;
		out[o++] = (char)c;
	}
	out[o] = 0;
	return 0;
}

static int host_ok(const char *h, size_t n)
{
	if (n == 0 || n >= CH_FIELD_MAX)
		return 0;
	if (h[0] == '[') { /* an IPv6 address */
		if (n < 3 || h[n - 1] != ']')
			return 0;
		for (size_t i = 1; i + 1 < n; i++)
			if (!isxdigit((unsigned char)h[i]) && h[i] != ':' && h[i] != '.')
				return 0;
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)h[i]) && h[i] != '.' && h[i] != '-' && h[i] != '_')
			return 0;
	return 1;
}

/*
 * http[s]://[USER[:PASSWORD]@]HOST[:PORT][/] into ch->where and, where the
 * URL has them, ch->user and ch->password (*has_user, *has_password).
 * Messages name the URL by its scheme and host only: it may hold a
 * password.
 */
static int parse_url(struct fl_ch *ch, const char *url, int *has_user, int *has_password, char *err,
		     size_t errsize)
{
	const char *scheme = strncasecmp(url, "https://", 8) == 0  ? "https"
			     : strncasecmp(url, "http://", 7) == 0 ? "http"
								   : NULL;
	if (!scheme) {
		snprintf(err, errsize,
			 "a ClickHouse server's URL is http://HOST[:PORT] or "
			 "https://HOST[:PORT], with USER:PASSWORD@ before HOST if needed");
		return FL_EUSAGE;
	}
	const char *a = url + strlen(scheme) + 3;
	size_t alen = strcspn(a, "/?#");
	const char *rest = a + alen;
	const char *at = NULL;
	for (size_t i = 0; i < alen; i++)
		if (a[i] == '@')
			at = a + i;
	const char *h = at ? at + 1 : a;
	size_t hlen = alen - (size_t)(h - a);
	/* the port: after the last ':' that is not inside [IPv6] */
	const char *colon = NULL;
	for (const char *p = h; p < h + hlen; p++)
		if (*p == ':')
			colon = p;
	if (colon && h[0] == '[' && memchr(colon, ']', (size_t)(h + hlen - colon)))
		colon = NULL;
	long port = strcmp(scheme, "https") == 0 ? 8443 : 8123;
	size_t namelen = colon ? (size_t)(colon - h) : hlen;
	if (!host_ok(h, namelen)) {
		snprintf(err, errsize, "%s://...: no valid host name in the URL", scheme);
		return FL_EUSAGE;
	}
	if (colon) {
		char *end;
		errno = 0;
		port = strtol(colon + 1, &end, 10);
		if (end != h + hlen || colon + 1 == end || port < 1 || port > 65535 ||
		    !isdigit((unsigned char)colon[1])) {
			snprintf(err, errsize,
				 "%s://%.*s: the port is not a number from 1 to 65535", scheme,
				 (int)namelen, h);
			return FL_EUSAGE;
		}
	}
	snprintf(ch->where, sizeof ch->where, "%s://%.*s:%ld", scheme, (int)namelen, h, port);
	if (!(rest[0] == 0 || (rest[0] == '/' && rest[1] == 0))) {
		snprintf(err, errsize,
			 "%s: the URL has a path or query after the server (%.40s); the database "
			 "is an option of its own (--database NAME)",
			 ch->where, at && strchr(rest, '@') ? "..." : rest);
		return FL_EUSAGE;
	}
	*has_user = *has_password = 0;
	if (at) {
		const char *pc = memchr(a, ':', (size_t)(at - a));
		size_t ulen = pc ? (size_t)(pc - a) : (size_t)(at - a);
		if (ulen == 0 || pct_decode(a, ulen, ch->user)) {
			snprintf(err, errsize,
				 "%s: the URL's user name is empty, too long or holds a "
				 "control character",
				 ch->where);
			return FL_EUSAGE;
		}
		*has_user = 1;
		if (pc) {
			if (pct_decode(pc + 1, (size_t)(at - pc - 1), ch->password)) {
				snprintf(err, errsize,
					 "%s: the URL's password is too long, holds a "
					 "control character or a bad %%-escape",
					 ch->where);
				return FL_EUSAGE;
			}
			*has_password = 1;
		}
	}
	return 0;
}

/* The password file's first line into ch->password. */
static int read_password_file(struct fl_ch *ch, const char *path, char *err, size_t errsize)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		snprintf(err, errsize, "--password-file %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return FL_EUSAGE;
	}
	if (st.st_mode & 077) {
		snprintf(err, errsize,
			 "--password-file %s: other users may read or change it (mode %04o); "
			 "`chmod 600 %s` makes it private",
			 path, (unsigned)(st.st_mode & 07777), path);
		close(fd);
		return FL_EUSAGE;
	}
	char buf[CH_FIELD_MAX + 1];
	ssize_t n = read(fd, buf, sizeof buf);
	int e = errno;
	close(fd);
	if (n < 0) {
		snprintf(err, errsize, "--password-file %s: %s", path, strerror(e));
		return FL_EUSAGE;
	}
	size_t len = strcspn(buf, "\n") < (size_t)n ? strcspn(buf, "\n") : (size_t)n;
	if (len && buf[len - 1] == '\r')
		len--;
	int bad = len >= CH_FIELD_MAX;
	for (size_t i = 0; i < len && !bad; i++)
		bad = (unsigned char)buf[i] < 0x20 || buf[i] == 0x7f;
	if (bad) {
		snprintf(err, errsize,
			 "--password-file %s: the first line is over %d bytes or "
			 "holds a control character",
			 path, CH_FIELD_MAX - 1);
		memset(buf, 0, sizeof buf);
		return FL_EUSAGE;
	}
	memcpy(ch->password, buf, len);
	ch->password[len] = 0;
	memset(buf, 0, sizeof buf);
	return 0;
}

static int from_env(char *dst, const char *name, char *err, size_t errsize)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return 0; /* set but empty: as if not set */
	size_t n = strlen(v);
	int bad = n >= CH_FIELD_MAX;
	for (size_t i = 0; i < n && !bad; i++)
		bad = (unsigned char)v[i] < 0x20 || v[i] == 0x7f;
	if (bad) {
		snprintf(err, errsize, "%s is over %d bytes or holds a control character", name,
			 CH_FIELD_MAX - 1);
		return FL_EUSAGE;
	}
	memcpy(dst, v, n + 1);
	return 1;
}

static int credentials(struct fl_ch *ch, const struct fl_ch_opts *o, char *err, size_t errsize)
{
	int has_user, has_password, r;
	if ((r = parse_url(ch, o->url, &has_user, &has_password, err, errsize)))
		return r;
	if (!has_password && o->password_file) {
		if ((r = read_password_file(ch, o->password_file, err, errsize)))
			return r;
		has_password = 1;
	}
	if (!has_user && (r = from_env(ch->user, "RINGTRACE_CLICKHOUSE_USER", err, errsize)) < 0)
		return r;
	if (!has_user && !r)
		snprintf(ch->user, sizeof ch->user, "default");
	if (!has_password &&
	    (r = from_env(ch->password, "RINGTRACE_CLICKHOUSE_PASSWORD", err, errsize)) < 0)
		return r;
	return 0;
}

/* ---- the handle ---- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result;

static void curl_init(void)
{
	curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	struct fl_buf *b = arg;
	size_t len = size * n;
	if (fl_buf_reserve(b, len))
		return 0; /* curl: CURLE_WRITE_ERROR */
	memcpy(b->p + b->len, p, len);
	b->len += len;
	return len;
}

/* The credential headers, each a line of its own in the handle's list. */
static int add_header(struct fl_ch *ch, const char *name, const char *value)
{
	char line[CH_FIELD_MAX + 40];
	snprintf(line, sizeof line, "%s: %s", name, value);
	struct curl_slist *l = curl_slist_append(ch->headers, line);
	memset(line, 0, sizeof line);
	if (!l)
		return FL_ENOMEM;
	ch->headers = l;
	return 0;
}

static int setup(struct fl_ch *ch, const struct fl_ch_opts *o, char *err, size_t errsize)
{
	if (add_header(ch, "X-ClickHouse-User", ch->user) ||
	    (ch->password[0] && add_header(ch, "X-ClickHouse-Key", ch->password)) ||
	    /* (no "100-continue" round trip before a batch's body) */
	    !(ch->headers = curl_slist_append(ch->headers, "Expect:")))
		return FL_ENOMEM;
	CURL *c = ch->curl;
	int bad = 0;
	bad |= curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L) != CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_HTTPHEADER, ch->headers) != CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_POST, 1L) != CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ch->curl_err) != CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data) != CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L) != CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
				o->connect_timeout_ms > 0 ? o->connect_timeout_ms : 5000L) !=
	       CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, o->timeout_ms > 0 ? o->timeout_ms : 0L) !=
	       CURLE_OK;
#if LIBCURL_VERSION_NUM >= 0x075500
	bad |= curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK;
#else
	bad |= curl_easy_setopt(c, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS)) !=
	       CURLE_OK;
#endif
	if (bad)
		return FL_ENOMEM;
	if (o->cacert) {
		if (access(o->cacert, R_OK) != 0) {
			snprintf(err, errsize, "--cacert %s: %s", o->cacert, strerror(errno));
			return FL_EUSAGE;
		}
		if (curl_easy_setopt(c, CURLOPT_CAINFO, o->cacert) != CURLE_OK) {
			snprintf(err, errsize, "--cacert %s: this libcurl takes no CA file",
				 o->cacert);
			return FL_EUSAGE;
		}
	}
	return 0;
}

int fl_ch_open(const struct fl_ch_opts *o, struct fl_ch **out, char *err, size_t errsize)
{
	*out = NULL;
	if (!o->url) {
		snprintf(err, errsize, "no ClickHouse server given (--clickhouse URL)");
		return FL_EUSAGE;
	}
	pthread_once(&curl_once, curl_init);
	if (curl_init_result != CURLE_OK) {
		snprintf(err, errsize, "libcurl: %s", curl_easy_strerror(curl_init_result));
		return FL_ENOMEM;
	}
	struct fl_ch *ch = calloc(1, sizeof *ch);
	if (!ch) {
		snprintf(err, errsize, "out of memory");
		return FL_ENOMEM;
	}
	int r = credentials(ch, o, err, errsize);
	if (!r && !(ch->curl = curl_easy_init()))
		r = FL_ENOMEM;
	if (!r)
		r = setup(ch, o, err, errsize);
	if (r) {
		if (r == FL_ENOMEM)
			snprintf(err, errsize, "out of memory");
		fl_ch_close(ch);
		return r;
	}
	*out = ch;
	return 0;
}

void fl_ch_close(struct fl_ch *ch)
{
	if (!ch)
		return;
	if (ch->curl)
		curl_easy_cleanup(ch->curl);
	for (struct curl_slist *l = ch->headers; l; l = l->next)
		memset(l->data, 0, strlen(l->data));
	curl_slist_free_all(ch->headers);
	fl_buf_free(&ch->answer);
	fl_buf_free(&ch->url);
	memset(ch->password, 0, sizeof ch->password);
	free(ch);
}

const char *fl_ch_where(const struct fl_ch *ch)
{
	return ch->where;
}

const char *fl_ch_user(const struct fl_ch *ch)
{
	return ch->user;
}

/* ---- requests and their errors ---- */

/* Every occurrence of the password in err replaced by "***": a message
 * quoted from a server or libcurl never shows it. (A password of under 4
 * bytes is left: it would star out letters of every message, and none of
 * ours is built with it.) */
static void scrub(const struct fl_ch *ch, char *err)
{
	size_t n = strlen(ch->password);
	if (n < 4)
		return;
	for (char *p = err; (p = strstr(p, ch->password)); p += 3) {
		memcpy(p, "***", 3);
		memmove(p + 3, p + n, strlen(p + n) + 1);
	}
}

/*
 * The server's message for an error: its first line, without 18.16's
 * "e.displayText() = " and ", e.what() = DB::Exception" wrapping, at most
 * CH_MSG_MAX bytes, every byte outside printable ASCII as \xNN.
 */
static void server_message(const struct fl_buf *b, char *msg, size_t msgsize)
{
	char line[CH_MSG_MAX + 1];
	size_t n = 0;
	while (n < b->len && n < CH_MSG_MAX && b->p[n] != '\n')
		n++;
	memcpy(line, b->p, n);
	line[n] = 0;
	static const char *const wrap[] = {"e.displayText() = ", ", e.what() = DB::Exception"};
	for (unsigned w = 0; w < 2; w++) {
		char *p = strstr(line, wrap[w]);
		if (p)
			memmove(p, p + strlen(wrap[w]), strlen(p + strlen(wrap[w])) + 1);
	}
	size_t o = 0;
	for (size_t i = 0; i < n && line[i] && o + 5 < msgsize; i++) {
		unsigned char c = (unsigned char)line[i];
		if (c < 0x20 || c >= 0x7f)
			o += (size_t)snprintf(msg + o, msgsize - o, "\\x%02x", c);
		else
			msg[o++] = (char)c;
	}
	if (msgsize)
		msg[o < msgsize ? o : msgsize - 1] = 0;
	if (n == CH_MSG_MAX && o + 4 < msgsize)
		strcat(msg, "...");
}

/* ClickHouse's error code at the start of a message ("Code: 193, ..."), or -1. */
static long server_code(const char *msg)
{
	if (strncmp(msg, "Code: ", 6) != 0 || !isdigit((unsigned char)msg[6]))
		return -1;
	return strtol(msg + 6, NULL, 10);
}

/* A request that failed below HTTP: connection, TLS, timeout. */
static int transport_error(struct fl_ch *ch, CURLcode rc, char *err, size_t errsize)
{
	long os = 0;
	curl_off_t connected = 0;
	curl_easy_getinfo(ch->curl, CURLINFO_OS_ERRNO, &os);
	curl_easy_getinfo(ch->curl, CURLINFO_CONNECT_TIME_T, &connected);
	const char *why = os                ? strerror((int)os)
			  : ch->curl_err[0] ? ch->curl_err
					    : curl_easy_strerror(rc);
	switch (rc) {
	case CURLE_OUT_OF_MEMORY:
	case CURLE_WRITE_ERROR: /* (on_data: no room for the answer) */
		snprintf(err, errsize, "out of memory for the answer of %s", ch->where);
		return FL_ENOMEM;
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CERTPROBLEM:
		snprintf(
			err, errsize,
			"cannot verify the ClickHouse server at %s: %s (--cacert FILE gives the CA "
			"that signed its certificate)",
			ch->where, ch->curl_err[0] ? ch->curl_err : curl_easy_strerror(rc));
		return FL_EDOWN;
	case CURLE_OPERATION_TIMEDOUT:
		if (connected)
			snprintf(err, errsize,
				 "the ClickHouse server at %s did not answer in time (%s)",
				 ch->where,
				 ch->curl_err[0] ? ch->curl_err : curl_easy_strerror(rc));
		else
			snprintf(err, errsize, "cannot reach the ClickHouse server at %s: %s",
				 ch->where, strerror(ETIMEDOUT));
		return FL_EDOWN;
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
		snprintf(err, errsize, "cannot reach the ClickHouse server at %s: %s", ch->where,
			 why);
		return FL_EDOWN;
	default:
		snprintf(err, errsize, "%s the ClickHouse server at %s: %s",
			 connected ? "lost the connection to" : "cannot reach", ch->where, why);
		return FL_EDOWN;
	}
}

/* The request's URL into ch->url: scheme://host:port/?p1[&p2]. */
static int make_url(struct fl_ch *ch, const char *p1, const char *p2)
{
	size_t wl = strlen(ch->where), l1 = strlen(p1), l2 = p2 && *p2 ? strlen(p2) : 0;
	ch->url.len = 0;
	if (fl_buf_reserve(&ch->url, wl + l1 + l2 + 4))
		return FL_ENOMEM;
	char *u = (char *)ch->url.p;
	memcpy(u, ch->where, wl);
	memcpy(u + wl, "/?", 2);
	memcpy(u + wl + 2, p1, l1);
	u[wl + 2 + l1] = '&';
	if (l2)
		memcpy(u + wl + 3 + l1, p2, l2);
	u[wl + 2 + l1 + (l2 ? 1 + l2 : 0)] = 0;
	return 0;
}

/*
 * POST body to the server at the URL parameters p1 and p2 (the caller's
 * settings, NULL or empty: none); the answer into out (NULL: kept for an
 * error's message only).
 */
static int request(struct fl_ch *ch, const char *p1, const char *p2, const void *body, size_t len,
		   struct fl_buf *out, char *err, size_t errsize)
{
	struct fl_buf *ans = out ? out : &ch->answer;
	ans->len = 0;
	if (make_url(ch, p1, p2)) {
		snprintf(err, errsize, "out of memory");
		return FL_ENOMEM;
	}
	char *u = (char *)ch->url.p;
	ch->curl_err[0] = 0;
	CURL *c = ch->curl;
	curl_easy_setopt(c, CURLOPT_URL, u);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, ans);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, len ? body : "");
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	CURLcode rc = curl_easy_perform(c);
	int r;
	if (rc != CURLE_OK) {
		r = transport_error(ch, rc, err, errsize);
	} else {
		long status = 0;
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
		if (status == 200)
			return 0;
		char msg[CH_MSG_MAX * 4 + 8];
		server_message(ans, msg, sizeof msg);
		long code = server_code(msg);
		if (status == 401 || status == 403 || code == 192 || code == 193 || code == 194 ||
		    code == 516) {
			snprintf(err, errsize,
				 "the ClickHouse server at %s refused user '%s': wrong password or "
				 "unknown user",
				 ch->where, ch->user);
			r = FL_EAUTH;
		} else {
			snprintf(err, errsize, "the ClickHouse server at %s: %s", ch->where,
				 msg[0] ? msg : "an error without a message");
			if (!msg[0] && strlen(err) + 16 < errsize)
				snprintf(err + strlen(err), errsize - strlen(err), " (HTTP %ld)",
					 status);
			r = FL_ESERVER;
		}
		if (out)
			out->len = 0;
	}
	/* (an error's answer is not kept: a large one would stay allocated) */
	if (!out && ch->answer.cap > 65536)
		fl_buf_free(&ch->answer);
	scrub(ch, err);
	return r;
}

int fl_ch_exec(struct fl_ch *ch, const char *sql, const char *settings, struct fl_buf *out,
	       char *err, size_t errsize)
{
	/* wait_end_of_query: the server sends the answer once it is whole, so
	 * that an error half-way is an HTTP error, not a 200 with the error
	 * text after part of the rows */
	return request(ch, "wait_end_of_query=1", settings, sql, strlen(sql), out, err, errsize);
}

int fl_ch_insert(struct fl_ch *ch, const char *sql, const char *settings, const void *body,
		 size_t len, char *err, size_t errsize)
{
	char *q = curl_easy_escape(ch->curl, sql, (int)strlen(sql));
	char *p1 = q ? malloc(strlen(q) + 7) : NULL;
	if (!p1) {
		curl_free(q);
		snprintf(err, errsize, "out of memory");
		return FL_ENOMEM;
	}
	memcpy(p1, "query=", 6);
	memcpy(p1 + 6, q, strlen(q) + 1);
	curl_free(q);
	int r = request(ch, p1, settings, body, len, NULL, err, errsize);
	free(p1);
	return r;
}
