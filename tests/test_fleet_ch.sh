#!/bin/sh
# The fleet layer's ClickHouse client (src/fleet/ch.c) against a real
# server (tests/clickhouse.sh), through test_fleet_ch_prog: the
# credentials from the URL, a password file, the environment, in that
# order; a password file others may read refused; the errors by class with
# their messages (server down or killed, wrong password, the server's own
# message, a URL with a path) and never a password in them nor in the
# process list; https verified against a CA; the RowBinary encoders read
# back by the server. One server for the whole run, with https.
# Each is a case (tests/cases.sh).
#   usage: test_fleet_ch.sh BIN_DIR [CASE...] | --list
set -eu
. "$(dirname "$0")/cases.sh"
. "$(dirname "$0")/clickhouse.sh"
bin=$1
shift
prog=$bin/test_fleet_ch_prog
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ringtrace-fleet-ch-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
CH_AT_EXIT='rm -rf "$tmp"'
fail() { printf "test_fleet_ch: %s\n" "$*" >&2; exit 1; }

# The server, started once per run (https too).
srv() {
	[ -n "${CH_DIR:-}" ] || { CH_TLS=1 && ch_start 1; }
	url=$(ch_url 1)
	hostport=127.0.0.1:$CH_HTTP_1
}

# p ARGS...: test_fleet_ch_prog, its status in $st, stdout in $out, stderr in $err.
p() {
	st=0
	"$prog" "$@" >"$tmp/out" 2>"$tmp/err" || st=$?
	out=$(cat "$tmp/out")
	err=$(cat "$tmp/err")
}

# expect STATUS WHAT: the last p's status, else fail saying WHAT.
expect() {
	[ "$st" = "$1" ] || fail "$2: status $st, not $1 (stderr: $err)"
}

# The user a query ran as (system.processes lists the query asking).
WHOAMI="SELECT user FROM system.processes WHERE query LIKE '%who_am_i_marker%'"

ch_select_one_answers() { # case
	srv
	p --password-file "$CH_PASSWORD_FILE" "$url" "SELECT 1 + 1, 'a b'"
	expect 0 "SELECT"
	[ "$out" = "$(printf '2\ta b')" ] || fail "the answer is \"$out\""
	p --password-file "$CH_PASSWORD_FILE" --where "$url/"
	[ "$out" = "$(printf 'http://%s\ndefault' "$hostport")" ] || fail "where/user: \"$out\""
}

ch_user_password_from_url() { # case
	srv
	# (the user's name %-encoded: decoded as URLs are)
	p "http://rt%5Freader:$CH_PASSWORD@$hostport" "$WHOAMI"
	expect 0 "user and password in the URL"
	[ "$out" = rt_reader ] || fail "the query ran as \"$out\", not rt_reader"
	# the URL's password before the environment's
	RINGTRACE_CLICKHOUSE_PASSWORD=wrong-password p "http://default:$CH_PASSWORD@$hostport" "$WHOAMI"
	expect 0 "the URL's password before the environment's"
	[ "$out" = default ] || fail "the query ran as \"$out\", not default"
}

ch_password_from_file() { # case
	srv
	# a user in the URL, the password from the file (and before the environment's)
	RINGTRACE_CLICKHOUSE_PASSWORD=wrong-password p --password-file "$CH_PASSWORD_FILE" \
		"http://rt_reader@$hostport" "$WHOAMI"
	expect 0 "--password-file"
	[ "$out" = rt_reader ] || fail "the query ran as \"$out\", not rt_reader"
	# its first line only, a CRLF line end too
	printf '%s\r\nsecond line\n' "$CH_PASSWORD" >"$tmp/pw"
	chmod 600 "$tmp/pw"
	p --password-file "$tmp/pw" "$url" "SELECT 3"
	expect 0 "a password file with CRLF and a second line"
}

ch_password_file_readable_by_others_refused() { # case
	srv
	cp "$CH_PASSWORD_FILE" "$tmp/open"
	chmod 644 "$tmp/open"
	p --password-file "$tmp/open" "$url" "SELECT 1"
	expect 2 "a password file others may read"
	[ "$err" = "test_fleet_ch_prog: --password-file $tmp/open: other users may read or change it (mode 0644); \`chmod 600 $tmp/open\` makes it private" ] ||
		fail "the refusal says \"$err\""
	p --password-file "$tmp/missing" "$url" "SELECT 1"
	expect 2 "a missing password file"
	[ "$err" = "test_fleet_ch_prog: --password-file $tmp/missing: No such file or directory" ] ||
		fail "a missing password file: \"$err\""
}

ch_password_from_env() { # case
	srv
	RINGTRACE_CLICKHOUSE_USER=rt_reader RINGTRACE_CLICKHOUSE_PASSWORD=$CH_PASSWORD p "$url" "$WHOAMI"
	expect 0 "RINGTRACE_CLICKHOUSE_USER and _PASSWORD"
	[ "$out" = rt_reader ] || fail "the query ran as \"$out\", not rt_reader"
	# a control character would end the header: refused before any request
	RINGTRACE_CLICKHOUSE_PASSWORD="$(printf 'a\rX-Injected: 1')" p "$url" "SELECT 1"
	expect 2 "a password with a CR"
	[ "$err" = "test_fleet_ch_prog: RINGTRACE_CLICKHOUSE_PASSWORD is over 255 bytes or holds a control character" ] ||
		fail "a password with a CR: \"$err\""
}

ch_wrong_password_clear_error_no_password_in_message() { # case
	srv
	bad=wrong-$CH_PASSWORD-x
	p "http://default:$bad@$hostport" "SELECT 1"
	expect 4 "a wrong password"
	[ "$err" = "test_fleet_ch_prog: the ClickHouse server at http://$hostport refused user 'default': wrong password or unknown user" ] ||
		fail "a wrong password: \"$err\""
	p "http://nobody:$CH_PASSWORD@$hostport" "SELECT 1"
	expect 4 "an unknown user"
	[ "$err" = "test_fleet_ch_prog: the ClickHouse server at http://$hostport refused user 'nobody': wrong password or unknown user" ] ||
		fail "an unknown user: \"$err\""
	# no password: the server's "password required" is the same refusal
	p "$url" "SELECT 1"
	expect 4 "no password"
}

ch_server_down_clear_error() { # case
	port=$(ch_free_ports 1)
	p "http://default:secret-pw-123@127.0.0.1:$port" "SELECT 1"
	expect 3 "no server on the port"
	[ "$err" = "test_fleet_ch_prog: cannot reach the ClickHouse server at http://127.0.0.1:$port: Connection refused" ] ||
		fail "no server: \"$err\""
}

ch_server_killed_is_down_then_answers_restarted() { # case
	srv
	ch_kill 1
	p --password-file "$CH_PASSWORD_FILE" "$url" "SELECT 1"
	expect 3 "a killed server"
	[ "$err" = "test_fleet_ch_prog: cannot reach the ClickHouse server at http://$hostport: Connection refused" ] ||
		fail "a killed server: \"$err\""
	ch_restart 1
	p --password-file "$CH_PASSWORD_FILE" "$url" "SELECT 1"
	expect 0 "the restarted server"
}

ch_requests_share_one_connection() { # case
	srv
	# the client's port of each request, as the server saw it: one
	# connection kept alive for the three
	p --password-file "$CH_PASSWORD_FILE" --repeat 3 "$url" \
		"SELECT port FROM system.processes WHERE query LIKE '%keep_alive_marker%'"
	expect 0 "three requests"
	[ "$(echo "$out" | wc -l)" = 3 ] && [ "$(echo "$out" | sort -u | wc -l)" = 1 ] ||
		fail "three requests came from the ports $(echo $out)"
}

ch_server_killed_during_request_is_down() { # case
	srv
	# (3 s a row, a row a block: 30 s unless killed, however slow the machine)
	"$prog" --password-file "$CH_PASSWORD_FILE" --settings max_block_size=1 "$url" \
		"SELECT sleep(3) AS killed_marker FROM system.numbers LIMIT 10" >"$tmp/out" 2>"$tmp/err" &
	pid=$!
	running() {
		[ "$(ch_sql 1 "SELECT count() FROM system.processes WHERE query LIKE '%sleep(3) AS killed_marker%' AND query NOT LIKE '%system.processes%'")" = 1 ]
	}
	rt_wait_for 100 running
	running || fail "the request never ran"
	ch_kill 1
	st=0
	wait $pid || st=$?
	err=$(cat "$tmp/err")
	ch_restart 1
	expect 3 "a server killed during the request"
	case $err in
	"test_fleet_ch_prog: lost the connection to the ClickHouse server at http://$hostport: "*) ;;
	*) fail "a server killed during the request: \"$err\"" ;;
	esac
}

ch_request_over_timeout_is_down() { # case
	srv
	p --password-file "$CH_PASSWORD_FILE" --timeout-ms 300 "$url" "SELECT sleep(2)"
	expect 3 "a request over --timeout-ms"
	case $err in
	"test_fleet_ch_prog: the ClickHouse server at http://$hostport did not answer in time ("*) ;;
	*) fail "a request over its time: \"$err\"" ;;
	esac
}

ch_server_error_message_passed() { # case
	srv
	p --password-file "$CH_PASSWORD_FILE" "$url" "SELECT no_such_column"
	expect 5 "an unknown column"
	case $err in
	"test_fleet_ch_prog: the ClickHouse server at http://$hostport: Code: 47, DB::Exception: Unknown identifier: no_such_column"*) ;;
	*) fail "an unknown column: \"$err\"" ;;
	esac
	# a message quoting control characters: escaped, on one line
	p --password-file "$CH_PASSWORD_FILE" "$url" "$(printf 'SELECT 1 +\001\033[31m')"
	expect 5 "a syntax error"
	case $err in
	*'\x01\x1b[31m'*) ;;
	*) fail "the control characters are not escaped: \"$err\"" ;;
	esac
	[ "$(wc -l <"$tmp/err")" = 1 ] || fail "the message is more than one line: \"$err\""
	# settings reach the server (and an error after rows is an error)
	p --password-file "$CH_PASSWORD_FILE" --settings "max_result_rows=10&result_overflow_mode=throw" \
		"$url" "SELECT number FROM system.numbers LIMIT 100000"
	expect 5 "a result over max_result_rows"
	case $err in
	*"Code: 396, DB::Exception: Limit for result exceeded"*) ;;
	*) fail "max_result_rows: \"$err\"" ;;
	esac
}

ch_url_with_path_refused() { # case
	for u in "http://127.0.0.1:8123/ringtrace" "http://u:pw@127.0.0.1:8123/?database=x"; do
		p "$u" "SELECT 1"
		expect 2 "$u"
	done
	[ "$err" = "test_fleet_ch_prog: http://127.0.0.1:8123: the URL has a path or query after the server (/?database=x); the database is an option of its own (--database NAME)" ] ||
		fail "a URL with a query: \"$err\""
	for u in "ftp://127.0.0.1/" "127.0.0.1:8123" "http://:8123/" "http://h:99999/" "http://h:12x/"; do
		p "$u" "SELECT 1"
		expect 2 "$u"
	done
}

ch_password_not_in_proc_cmdline() { # case
	srv
	p --cmdline-to "$tmp/cmdline" "http://default:$CH_PASSWORD@$hostport/" "SELECT 5"
	expect 0 "a password in the URL"
	[ "$out" = 5 ] || fail "the answer is \"$out\""
	! grep -q "$CH_PASSWORD" "$tmp/cmdline" || fail "the password is in the process list: $(cat "$tmp/cmdline")"
	stars=$(printf '%s' "$CH_PASSWORD" | tr -c '' '*')
	grep -qF "http://default:$stars@$hostport/" "$tmp/cmdline" ||
		fail "the URL argument is not the URL with its password hidden: $(cat "$tmp/cmdline")"
}

ch_https_verified_with_cacert() { # case
	srv
	p --cacert "$CH_CA" --password-file "$CH_PASSWORD_FILE" "$(ch_url 1 https)" "SELECT 6"
	expect 0 "https with the CA"
	[ "$out" = 6 ] || fail "the answer over https is \"$out\""
	# the certificate names 127.0.0.1 too
	p --cacert "$CH_CA" --password-file "$CH_PASSWORD_FILE" "https://127.0.0.1:$CH_HTTPS_1" "SELECT 7"
	expect 0 "https to 127.0.0.1"
}

ch_https_wrong_ca_refused() { # case
	srv
	# the system's CAs, then a CA that did not sign the server's certificate
	p --password-file "$CH_PASSWORD_FILE" "$(ch_url 1 https)" "SELECT 1"
	expect 3 "https without the CA"
	case $err in
	"test_fleet_ch_prog: cannot verify the ClickHouse server at https://localhost:$CH_HTTPS_1: "*"(--cacert FILE gives the CA that signed its certificate)") ;;
	*) fail "https without the CA: \"$err\"" ;;
	esac
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
		-subj "/CN=another CA" -keyout "$tmp/other.key" -out "$tmp/other.crt" 2>/dev/null
	p --cacert "$tmp/other.crt" --password-file "$CH_PASSWORD_FILE" "$(ch_url 1 https)" "SELECT 1"
	expect 3 "https with another CA"
	p --cacert "$tmp/none.crt" "$(ch_url 1 https)" "SELECT 1"
	expect 2 "a missing CA file"
	[ "$err" = "test_fleet_ch_prog: --cacert $tmp/none.crt: No such file or directory" ] ||
		fail "a missing CA file: \"$err\""
}

ch_rowbin_every_type_read_back() { # case
	srv
	ch_sql 1 "CREATE TABLE default.rb (i Int64, u UInt64, b UInt8, d Date, f Float64, s String,
		ns Nullable(String), ni Nullable(Int64)) ENGINE = Memory"
	p --password-file "$CH_PASSWORD_FILE" --rowbin "$url" "INSERT INTO default.rb FORMAT RowBinary"
	expect 0 "the RowBinary INSERT"
	got=$(ch_sql 1 "SELECT * FROM default.rb ORDER BY u FORMAT TSV")
	x300=$(printf '%300s' '' | tr ' ' x)
	y70000=$(printf '%70000s' '' | tr ' ' y)
	want=$(printf '%s\n' \
		"9223372036854775807	0	0	2022-01-08	1e300		x	\\N" \
		"2	5	2	1970-01-04	2.5	$y70000	\\N	\\N" \
		"-1	9223372036854775808	1	2024-10-04	0.1	$x300	ü UTF-8	-7" \
		"-9223372036854775808	18446744073709551615	255	1970-01-02	-1.5	quote\\' \"dq\" back\\\\slash tab\\t nl\\n nul\\0 end	\\N	42")
	[ "$got" = "$want" ] || fail "the rows read back differ:
$got
--- expected:
$want"
	# an INSERT's error is the server's message
	p --password-file "$CH_PASSWORD_FILE" --rowbin "$url" "INSERT INTO default.no_such FORMAT RowBinary"
	expect 5 "an INSERT into a missing table"
	[ "$err" = "test_fleet_ch_prog: the ClickHouse server at http://$hostport: Code: 60, DB::Exception: Table default.no_such doesn't exist." ] ||
		fail "an INSERT into a missing table: \"$err\""
}

rt_run_cases "$@"
