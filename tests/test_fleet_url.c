/*
 * The fleet layer's text work without a server: a URL argument's password
 * hidden in place (src/fleet/url.c), the RowBinary encodings byte by byte
 * (src/fleet/rowbin.c), and fl_ch_open's refusals of bad URLs and
 * credentials, which come before any connection (src/fleet/ch.c).
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fleet/fleet_api.h"

static void hide(const char *in, const char *want, size_t n)
{
	char buf[256];
	snprintf(buf, sizeof buf, "%s", in);
	size_t got = fl_url_hide_password(buf);
	CHECKF(!strcmp(buf, want) && got == n, "%s: \"%s\" (%zu hidden), not \"%s\" (%zu)", in, buf,
	       got, want, n);
}

static void hide_password_in_place(void)
{
	hide("http://u:secret@h:8123/", "http://u:******@h:8123/", 6);
	hide("https://user:p:w@h", "https://user:***@h", 3);
	/* a password with '@' unencoded: the host starts after the last '@' */
	hide("http://u:a@b@h/", "http://u:***@h/", 3);
	hide("http://u@h:8123/", "http://u@h:8123/", 0);
	hide("http://h:8123/", "http://h:8123/", 0);
	hide("http://u:@h/", "http://u:@h/", 0);
	/* an '@' after the server is not a user part */
	hide("http://h:1/?x=a:b@c", "http://h:1/?x=a:b@c", 0);
	hide("u:pw@h", "u:pw@h", 0);
}

static void rowbin_bytes(void)
{
	struct fl_buf b = {0};
	CHECK(fl_rb_i64(&b, -2) == 0 && fl_rb_u16(&b, 0x1234) == 0 && fl_rb_u8(&b, 7) == 0);
	CHECK(fl_rb_f64(&b, 1.0) == 0 && fl_rb_null(&b) == 0 && fl_rb_notnull(&b) == 0);
	CHECK(fl_rb_u64(&b, 0x0102030405060708u) == 0);
	static const uint8_t want[] = {
		0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, /* -2 */
		0x34, 0x12, 7,                                  /* u16, u8 */
		0,    0,    0,    0,    0,    0,    0xf0, 0x3f, /* 1.0 */
		1,    0,                                        /* NULL, not NULL */
		8,    7,    6,    5,    4,    3,    2,    1,
	};
	CHECK_EQ_U64(b.len, sizeof want);
	CHECK(!memcmp(b.p, want, sizeof want));
	/* string lengths as LEB128: 1, 2 and 3 bytes */
	static char s[20000];
	size_t lens[] = {0, 127, 128, 300, 16383, 16384, 20000};
	static const uint8_t leb[][3] = {{0},          {0x7f},          {0x80, 1},      {0xac, 2},
					 {0xff, 0x7f}, {0x80, 0x80, 1}, {0xa0, 0x9c, 1}};
	static const unsigned leblen[] = {1, 1, 2, 2, 2, 3, 3};
	memset(s, 'a', sizeof s);
	for (unsigned i = 0; i < sizeof lens / sizeof lens[0]; i++) {
		b.len = 0;
		CHECK(fl_rb_str(&b, s, lens[i]) == 0);
		CHECK_EQ_U64(b.len, leblen[i] + lens[i]);
		CHECKF(!memcmp(b.p, leb[i], leblen[i]), "length %zu", lens[i]);
	}
	fl_buf_free(&b);
	CHECK(b.p == NULL && b.len == 0 && b.cap == 0);
}

/* fl_ch_open(url) refused with FL_EUSAGE and a message holding want. */
static void refused(const char *url, const char *want)
{
	struct fl_ch_opts o = {.url = url};
	struct fl_ch *ch = (struct fl_ch *)1;
	char err[512] = "";
	int r = fl_ch_open(&o, &ch, err, sizeof err);
	CHECKF(r == FL_EUSAGE && ch == NULL && strstr(err, want), "%s: %d \"%s\"", url, r, err);
	CHECKF(!strstr(err, "hunter2"), "%s: the message shows the password: %s", url, err);
}

static void bad_urls_refused_before_connecting(void)
{
	refused("ftp://h/", "http://HOST[:PORT] or https://HOST[:PORT]");
	refused("h:8123", "http://HOST[:PORT] or https://HOST[:PORT]");
	refused("http://:8123/", "no valid host name");
	refused("http://u:hunter2@h:0/", "http://h: the port is not a number from 1 to 65535");
	refused("http://h:65536", "the port is not a number");
	refused("http://h:80x", "the port is not a number");
	refused("http://u:hunter2@h/db",
		"http://h:8123: the URL has a path or query after the server");
	refused("http://u:hunter2@h?user=x", "the URL has a path or query");
	refused("http://u:hunter2%0a@h/", "the URL's password");
	refused("http://:hunter2@h/", "the URL's user name is empty");
	refused("http://h%20x/", "no valid host name");
}

static void where_and_user_without_credentials(void)
{
	static const struct {
		const char *url, *where, *user;
	} t[] = {
		{"http://h", "http://h:8123", "default"},
		{"HTTPS://h.example.org/", "https://h.example.org:8443", "default"},
		{"http://a%2Eb:hunter2@10.0.0.1:9", "http://10.0.0.1:9", "a.b"},
		{"http://u@[::1]:8124/", "http://[::1]:8124", "u"},
	};
	unsetenv("RINGTRACE_CLICKHOUSE_USER");
	for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++) {
		struct fl_ch_opts o = {.url = t[i].url};
		struct fl_ch *ch;
		char err[512];
		int r = fl_ch_open(&o, &ch, err, sizeof err);
		CHECKF(r == 0, "%s: %s", t[i].url, err);
		CHECKF(!strcmp(fl_ch_where(ch), t[i].where), "%s: where %s", t[i].url,
		       fl_ch_where(ch));
		CHECKF(!strcmp(fl_ch_user(ch), t[i].user), "%s: user %s", t[i].url, fl_ch_user(ch));
		fl_ch_close(ch);
	}
}

static const struct check_case cases[] = {
	CHECK_CASE(fleet_url_password_hidden_in_place, hide_password_in_place),
	CHECK_CASE(fleet_rowbin_bytes_and_leb128_lengths, rowbin_bytes),
	CHECK_CASE(fleet_bad_urls_refused_before_connecting, bad_urls_refused_before_connecting),
	CHECK_CASE(fleet_where_and_user_hold_no_password, where_and_user_without_credentials),
};

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
