/*
 * test_fleet_ch_prog: one request to a ClickHouse server through the fleet
 * layer's client (src/fleet/ch.c), for tests/test_fleet_ch.sh.
 *
 *   test_fleet_ch_prog [OPTIONS] URL SQL
 *     Runs SQL (fl_ch_exec) and prints the answer.
 *   test_fleet_ch_prog [OPTIONS] --rowbin URL INSERT
 *     Sends INSERT (fl_ch_insert) with the RowBinary rows of sample_rows()
 *     below as its body, for a table of the columns
 *       i Int64, u UInt64, b UInt8, d Date, f Float64, s String,
 *       ns Nullable(String), ni Nullable(Int64)
 *   test_fleet_ch_prog [OPTIONS] --where URL
 *     Prints fl_ch_where and fl_ch_user, one a line.
 *
 * OPTIONS: --password-file F, --cacert F, --settings S (fl_ch_exec's),
 * --timeout-ms N, --repeat N (SQL run N times on the one handle, each
 * answer printed), --cmdline-to FILE (after fl_url_hide_password on the URL
 * argument, /proc/self/cmdline written to FILE, its NULs as spaces).
 *
 * The error on stderr as "test_fleet_ch_prog: MESSAGE". Exit status by the
 * error's class: 0 done, 2 FL_EUSAGE (or a usage error of this program),
 * 3 FL_EDOWN, 4 FL_EAUTH, 5 FL_ESERVER, 6 FL_ENOMEM.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fleet/fleet_api.h"

static int status_of(int r)
{
	switch (r) {
	case 0:
		return 0;
	case FL_EUSAGE:
		return 2;
	case FL_EDOWN:
		return 3;
	case FL_EAUTH:
		return 4;
	case FL_ESERVER:
		return 5;
	default:
		return 6;
	}
}

/* Four rows covering every encoder: the extremes of each number, a Date,
 * NULL and not NULL, strings with quotes, escapes, a NUL byte, UTF-8 and
 * lengths of two and three LEB128 bytes. */
static int sample_rows(struct fl_buf *b)
{
	static char huge[70000];
	memset(huge, 'y', sizeof huge);
	static const char odd[] = "quote' \"dq\" back\\slash tab\t nl\n nul\0 end";
	char longs[300];
	memset(longs, 'x', sizeof longs);
	int r = 0;
	/* row 1 */
	r |= fl_rb_i64(b, INT64_MIN) | fl_rb_u64(b, UINT64_MAX) | fl_rb_u8(b, 255);
	r |= fl_rb_u16(b, 1) | fl_rb_f64(b, -1.5) | fl_rb_str(b, odd, sizeof odd - 1);
	r |= fl_rb_null(b) | fl_rb_notnull(b) | fl_rb_i64(b, 42);
	/* row 2 */
	r |= fl_rb_i64(b, INT64_MAX) | fl_rb_u64(b, 0) | fl_rb_u8(b, 0);
	r |= fl_rb_u16(b, 19000) | fl_rb_f64(b, 1e300) | fl_rb_str(b, "", 0);
	r |= fl_rb_notnull(b) | fl_rb_str(b, "x", 1) | fl_rb_null(b);
	/* row 3 */
	r |= fl_rb_i64(b, -1) | fl_rb_u64(b, (uint64_t)1 << 63) | fl_rb_u8(b, 1);
	r |= fl_rb_u16(b, 20000) | fl_rb_f64(b, 0.1) | fl_rb_str(b, longs, sizeof longs);
	r |= fl_rb_notnull(b) | fl_rb_str(b, "\xc3\xbc UTF-8", 8) | fl_rb_notnull(b) |
	     fl_rb_i64(b, -7);
	/* row 4 */
	r |= fl_rb_i64(b, 2) | fl_rb_u64(b, 5) | fl_rb_u8(b, 2);
	r |= fl_rb_u16(b, 3) | fl_rb_f64(b, 2.5) | fl_rb_str(b, huge, sizeof huge);
	r |= fl_rb_null(b) | fl_rb_null(b);
	return r ? FL_ENOMEM : 0;
}

static int cmdline_to(const char *path)
{
	FILE *in = fopen("/proc/self/cmdline", "rb"), *out = fopen(path, "wb");
	int c;
	if (!in || !out) {
		perror(path);
		return -1;
	}
	while ((c = getc(in)) != EOF)
		putc(c ? c : ' ', out);
	fclose(in);
	return fclose(out);
}

static int usage(void)
{
	fprintf(stderr,
		"usage: test_fleet_ch_prog [--password-file F] [--cacert F] [--settings S] "
		"[--timeout-ms N] [--repeat N] [--cmdline-to FILE] [--rowbin | --where] URL [SQL]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct fl_ch_opts o = {0};
	const char *settings = NULL, *cmdline = NULL;
	int rowbin = 0, where = 0, repeat = 1, i;
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--rowbin"))
			rowbin = 1;
		else if (!strcmp(argv[i], "--where"))
			where = 1;
		else if (i + 1 >= argc)
			return usage();
		else if (!strcmp(argv[i], "--password-file"))
			o.password_file = argv[++i];
		else if (!strcmp(argv[i], "--cacert"))
			o.cacert = argv[++i];
		else if (!strcmp(argv[i], "--settings"))
			settings = argv[++i];
		else if (!strcmp(argv[i], "--timeout-ms"))
			o.timeout_ms = atol(argv[++i]);
		else if (!strcmp(argv[i], "--repeat"))
			repeat = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--cmdline-to"))
			cmdline = argv[++i];
		else
			return usage();
	}
	if (i + (where ? 1 : 2) != argc)
		return usage();
	char *url = strdup(argv[i]);
	if (!url)
		return 6;
	fl_url_hide_password(argv[i]);
	if (cmdline && cmdline_to(cmdline))
		return 1;
	o.url = url;
	char err[1024];
	struct fl_ch *ch;
	struct fl_buf out = {0};
	int r = fl_ch_open(&o, &ch, err, sizeof err);
	if (!r && where) {
		printf("%s\n%s\n", fl_ch_where(ch), fl_ch_user(ch));
	} else if (!r && rowbin) {
		r = sample_rows(&out);
		if (r)
			snprintf(err, sizeof err, "out of memory");
		else
			r = fl_ch_insert(ch, argv[i + 1], settings, out.p, out.len, err,
					 sizeof err);
	} else {
		for (int k = 0; !r && k < repeat; k++) {
			r = fl_ch_exec(ch, argv[i + 1], settings, &out, err, sizeof err);
			if (!r)
				fwrite(out.p, 1, out.len, stdout);
		}
	}
	if (r)
		fprintf(stderr, "test_fleet_ch_prog: %s\n", err);
	fl_ch_close(ch);
	fl_buf_free(&out);
	free(url);
	return status_of(r);
}
