# tests/clickhouse.sh - ClickHouse servers of a test's own (sourced by the
# fleet loader's tests, after tests/cases.sh).
#
# Each server is a clickhouse-server process with its own config.xml and
# users.xml in a temporary directory, listening only on 127.0.0.1 on ports
# that were free at its start, with small caches (several fit on a CI
# machine) and its logs in its directory. The servers form one cluster,
# "rt_two", with one shard per server. None of this uses or touches a
# system server (ports 8123, 9000): other tests start theirs at the same
# time, each on its own ports.
#
#   ch_start N      start N servers (1 <= N <= 9) and wait until each
#                   answers; sets
#                     CH_DIR             the temporary directory
#                     CH_N               N
#                     CH_PASSWORD        user default's password (random),
#                                        also rt_reader's (readonly=2: reads, and
#                                        settings changed per query)
#                     CH_PASSWORD_FILE   a file holding it (mode 0600)
#                     CH_HTTP_I, CH_TCP_I, CH_PID_I   server I's ports, pid
#                     CH_HTTPS_I, CH_CA  with CH_TLS=1 set before ch_start:
#                                        server I's https port (certificate
#                                        for localhost and 127.0.0.1) and
#                                        the CA file that verifies it
#                   (I from 1 to N; POSIX sh has no arrays, so `ch_port
#                   http I` and `ch_url I` read them). A trap stops the
#                   servers and removes CH_DIR when the script exits,
#                   whatever the cause: a script that needs its own cleanup
#                   at exit puts it in CH_AT_EXIT (run by that trap), as
#                   the trap replaces an earlier one. Call ch_start in the
#                   script's own shell, not in $(...) or a pipeline: a
#                   server dies with the shell that started it.
#   ch_stop         stop them (SIGTERM, SIGKILL after 10 s) and remove CH_DIR
#   ch_kill I       SIGKILL server I (a crash; its data stays)
#   ch_restart I    stop server I if it runs, start it again on its ports
#   ch_sql I SQL    run SQL on server I (curl, the password read from a file,
#                   never on a command line): the answer on stdout; an error
#                   (the server's message on stderr) returns 1
#   ch_port KIND I  server I's port: KIND http, tcp or https
#   ch_url I [https]  http://127.0.0.1:PORT (or https://localhost:PORT)
#
# With CH_ZK=1 set before ch_start (and tests/zookeeper.sh sourced), a
# ZooKeeper of the test's own (ZK_PORT, ZK_DDL) is started first, in CH_DIR, and
# every server has it and a distributed DDL queue in it, so that ON
# CLUSTER runs on the cluster's shards; ch_start waits until each server
# reads it (system.zookeeper); ch_stop stops it after the servers. An ON
# CLUSTER statement waits 10 s at most for the servers (the profile's
# distributed_ddl_task_timeout), then fails naming them. Without
# it (the default) the servers have no ZooKeeper, as a cluster set up
# without one: 18.16 then refuses ON CLUSTER.
#
# Needs clickhouse-server, curl and openssl (CH_TLS=1); ch_start
# exits 77 (a skipped test) when clickhouse-server is not installed (or
# with CH_ZK=1 ZooKeeper).

ch_fail() {
	echo "clickhouse.sh: $*" >&2
	exit 1
}

ch_port() { # KIND I
	case $1 in
	http) eval "echo \${CH_HTTP_$2:?no server $2}" ;;
	tcp) eval "echo \${CH_TCP_$2:?no server $2}" ;;
	https) eval "echo \${CH_HTTPS_$2:?no https on server $2 (CH_TLS=1 before ch_start)}" ;;
	*) ch_fail "ch_port: no port kind $1" ;;
	esac
}

ch_url() { # I [https]
	if [ "${2:-}" = https ]; then
		echo "https://localhost:$(ch_port https "$1")"
	else
		echo "http://127.0.0.1:$(ch_port http "$1")"
	fi
}

# ch_free_ports N: N distinct loopback ports that no socket uses now
# (/proc/net/tcp*), at random below the kernel's ephemeral ports (a
# server that finds one taken by then is started again on others).
ch_free_ports() {
	awk -v n="$1" -v seed="$(($(od -An -tu4 -N4 /dev/urandom) % 2147483647))" '
		FNR > 1 { split($2, a, ":"); used[a[2]] = 1 }
		END {
			srand(seed)
			while (got < n) {
				p = 10000 + int(rand() * 22000)
				h = sprintf("%04X", p)
				if (!(h in used)) { used[h] = 1; printf "%s%d", (got++ ? " " : ""), p }
			}
			print ""
		}' $(ls /proc/net/tcp /proc/net/tcp6 2>/dev/null)
}

# ch_tls_files: a CA and a certificate for localhost and 127.0.0.1 it signs.
ch_tls_files() {
	ch_t=$CH_DIR/tls
	mkdir -p "$ch_t"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-subj "/CN=ringtrace test CA" -keyout "$ch_t/ca.key" -out "$ch_t/ca.crt" 2>"$ch_t/log" &&
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
			-subj "/CN=localhost" -keyout "$ch_t/server.key" -out "$ch_t/server.csr" 2>>"$ch_t/log" &&
		printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$ch_t/ext" &&
		openssl x509 -req -in "$ch_t/server.csr" -CA "$ch_t/ca.crt" -CAkey "$ch_t/ca.key" \
			-CAcreateserial -days 2 -extfile "$ch_t/ext" -out "$ch_t/server.crt" 2>>"$ch_t/log" ||
		ch_fail "openssl could not make the test certificates: $(cat "$ch_t/log")"
	CH_CA=$ch_t/ca.crt
}

# ch_config I: server I's config.xml and users.xml, in CH_DIR/sI.
ch_config() {
	ch_d=$CH_DIR/s$1
	mkdir -p "$ch_d/data"
	{
		echo '<?xml version="1.0"?>'
		echo '<yandex>'
		echo "  <logger><level>information</level><log>$ch_d/server.log</log>"
		echo "    <errorlog>$ch_d/server.err.log</errorlog><size>20M</size><count>1</count></logger>"
		echo '  <listen_host>127.0.0.1</listen_host>'
		echo "  <http_port>$(ch_port http "$1")</http_port>"
		echo "  <tcp_port>$(ch_port tcp "$1")</tcp_port>"
		if [ "${CH_TLS:-0}" = 1 ]; then
			echo "  <https_port>$(ch_port https "$1")</https_port>"
			echo "  <openSSL><server><certificateFile>$CH_DIR/tls/server.crt</certificateFile>"
			echo "    <privateKeyFile>$CH_DIR/tls/server.key</privateKeyFile>"
			echo '    <verificationMode>none</verificationMode><loadDefaultCAFile>false</loadDefaultCAFile>'
			echo '    <cacheSessions>true</cacheSessions><disableProtocols>sslv2,sslv3</disableProtocols>'
			echo '    <preferServerCiphers>true</preferServerCiphers></server></openSSL>'
		fi
		echo "  <path>$ch_d/data/</path><tmp_path>$ch_d/data/tmp/</tmp_path>"
		echo "  <user_files_path>$ch_d/data/user_files/</user_files_path>"
		echo "  <format_schema_path>$ch_d/data/format_schemas/</format_schema_path>"
		echo "  <users_config>$ch_d/users.xml</users_config>"
		echo '  <default_profile>default</default_profile><default_database>default</default_database>'
		echo '  <timezone>UTC</timezone>'
		echo '  <mark_cache_size>104857600</mark_cache_size>'
		echo '  <uncompressed_cache_size>104857600</uncompressed_cache_size>'
		echo '  <max_server_memory_usage>2000000000</max_server_memory_usage>'
		echo '  <max_concurrent_queries>50</max_concurrent_queries>'
		echo '  <mlock_executable>false</mlock_executable>'
		echo '  <remote_servers><rt_two>'
		ch_j=1
		while [ $ch_j -le "$CH_N" ]; do
			echo "    <shard><replica><host>127.0.0.1</host><port>$(ch_port tcp $ch_j)</port>"
			echo "      <user>default</user><password>$CH_PASSWORD</password></replica></shard>"
			ch_j=$((ch_j + 1))
		done
		echo '  </rt_two></remote_servers>'
		[ "${CH_ZK:-0}" != 1 ] || zk_config
		echo '</yandex>'
	} >"$ch_d/config.xml"
	{
		echo '<?xml version="1.0"?>'
		echo '<yandex>'
		echo '  <profiles><default><max_memory_usage>1000000000</max_memory_usage>'
		echo '    <background_pool_size>4</background_pool_size>'
		# (an ON CLUSTER statement waits this long for every server of the
		# cluster: 180 s by default; a test's servers answer in well under 1.
		# A server that stops waits for its connections' handlers, which
		# look for the stop every poll_interval, 10 s by default: after ON
		# CLUSTER statements each server holds one to the other, and two
		# servers stopping at once wait for each other's)
		[ "${CH_ZK:-0}" != 1 ] || {
			echo '    <distributed_ddl_task_timeout>10</distributed_ddl_task_timeout>'
			echo '    <poll_interval>1</poll_interval>'
		}
		echo '    </default>'
		echo '    <readonly><readonly>2</readonly></readonly></profiles>'
		echo "  <users><default><password>$CH_PASSWORD</password>"
		echo '    <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>'
		echo '    <profile>default</profile><quota>default</quota></default>'
		echo "    <rt_reader><password>$CH_PASSWORD</password>"
		echo '    <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>'
		echo '    <profile>readonly</profile><quota>default</quota></rt_reader></users>'
		echo '  <quotas><default></default></quotas>'
		echo '</yandex>'
	} >"$ch_d/users.xml"
	chmod 600 "$ch_d/config.xml" "$ch_d/users.xml"
}

# ch_launch I: start server I (its parent: this shell; it gets SIGKILL if
# this shell dies without stopping it).
ch_launch() {
	ch_d=$CH_DIR/s$1
	if command -v setpriv >/dev/null 2>&1; then
		setpriv --pdeathsig KILL -- clickhouse-server --config-file="$ch_d/config.xml" \
			>"$ch_d/stdout" 2>&1 </dev/null &
	else
		clickhouse-server --config-file="$ch_d/config.xml" >"$ch_d/stdout" 2>&1 </dev/null &
	fi
	eval "CH_PID_$1=$!"
}

# ch_ours I: server I answers this run's password (not a server of
# another test that took the port first).
ch_ours() {
	[ "$(ch_sql "$1" 'SELECT 1' 2>/dev/null)" = 1 ]
}

# ch_wait I: until server I answers (0), it has exited (1) or 30 s passed (1).
ch_wait() {
	ch_w_i=0
	while [ $ch_w_i -lt 300 ]; do
		kill -0 "$(eval "echo \$CH_PID_$1")" 2>/dev/null || return 1
		if curl -s -o /dev/null --max-time 2 "$(ch_url "$1")/ping"; then
			ch_ours "$1" && return 0
		fi
		sleep 0.1
		ch_w_i=$((ch_w_i + 1))
	done
	return 1
}

ch_log_tail() { # I: the end of server I's logs, for a failure's message
	tail -n 5 "$CH_DIR/s$1/stdout" "$CH_DIR/s$1/server.err.log" 2>/dev/null
}

ch_start() {
	command -v clickhouse-server >/dev/null 2>&1 ||
		{ echo "clickhouse.sh: clickhouse-server is not installed (make deps installs it)" >&2; exit 77; }
	for ch_t in curl awk od; do
		command -v $ch_t >/dev/null 2>&1 || ch_fail "$ch_t is not installed (make deps installs it)"
	done
	case ${1:-} in
	[1-9]) ;;
	*) ch_fail "ch_start N: N from 1 to 9, not \"${1:-}\"" ;;
	esac
	[ -z "${CH_DIR:-}" ] || ch_fail "ch_start: servers already started ($CH_DIR)"
	CH_N=$1
	trap 'ch_at_exit' EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	CH_DIR=$(mktemp -d "${TMPDIR:-/tmp}/ringtrace-ch-XXXXXX") || ch_fail "mktemp failed"
	CH_PASSWORD=$(od -An -tx1 -N12 /dev/urandom | tr -d ' \n')
	CH_PASSWORD_FILE=$CH_DIR/password
	(umask 077 && printf '%s\n' "$CH_PASSWORD" >"$CH_PASSWORD_FILE" &&
		printf 'header = "X-ClickHouse-User: default"\nheader = "X-ClickHouse-Key: %s"\n' \
			"$CH_PASSWORD" >"$CH_DIR/curl.cfg") || ch_fail "cannot write in $CH_DIR"
	[ "${CH_TLS:-0}" != 1 ] || ch_tls_files
	[ "${CH_ZK:-0}" != 1 ] || zk_start
	ch_try=1
	while :; do
		set -- $(ch_free_ports $((CH_N * 3)))
		ch_i=1
		while [ $ch_i -le "$CH_N" ]; do
			eval "CH_HTTP_$ch_i=\$1 CH_TCP_$ch_i=\$2 CH_HTTPS_$ch_i=\$3"
			[ "${CH_TLS:-0}" = 1 ] || unset "CH_HTTPS_$ch_i"
			shift 3
			ch_i=$((ch_i + 1))
		done
		ch_i=1
		while [ $ch_i -le "$CH_N" ]; do
			ch_config $ch_i
			ch_launch $ch_i
			ch_i=$((ch_i + 1))
		done
		ch_ok=1
		ch_i=1
		while [ $ch_i -le "$CH_N" ]; do
			ch_wait $ch_i || { ch_ok=0 && break; }
			ch_i=$((ch_i + 1))
		done
		[ $ch_ok = 0 ] || break
		# a port taken between its choice and the server's start: again on
		# other ports (a few times), or the server's own failure
		if [ $ch_try -ge 5 ] || ! grep -qs "Address already in use" "$CH_DIR/s$ch_i/stdout" \
			"$CH_DIR/s$ch_i/server.err.log"; then
			ch_msg="server $ch_i (port $(ch_port http $ch_i)) did not start: $(ch_log_tail $ch_i)"
			ch_stop
			ch_fail "$ch_msg"
		fi
		ch_stop_servers
		rm -rf "$CH_DIR"/s[1-9]
		ch_try=$((ch_try + 1))
	done
	[ "${CH_ZK:-0}" != 1 ] || ch_zk_wait
	export CH_DIR CH_N CH_PASSWORD CH_PASSWORD_FILE
}

# ch_zk_wait: until every server reads the ZooKeeper (its session made),
# 60 s at most
ch_zk_wait() {
	ch_i=1
	while [ $ch_i -le "$CH_N" ]; do
		ch_z_i=0
		while ! ch_sql $ch_i "SELECT count() FROM system.zookeeper WHERE path = '/'" \
			>/dev/null 2>"$CH_DIR/zk.err"; do
			[ $ch_z_i -lt 600 ] || {
				ch_msg="server $ch_i does not read ZooKeeper (port $ZK_PORT): $(cat "$CH_DIR/zk.err")"
				ch_stop
				ch_fail "$ch_msg"
			}
			sleep 0.1
			ch_z_i=$((ch_z_i + 1))
		done
		ch_i=$((ch_i + 1))
	done
}

# ch_end PID: SIGTERM, then SIGKILL after 10 s; reaped.
ch_end() {
	kill -TERM "$1" 2>/dev/null || { wait "$1" 2>/dev/null || true; return 0; }
	ch_e_i=0
	while kill -0 "$1" 2>/dev/null && [ $ch_e_i -lt 100 ]; do
		sleep 0.1
		ch_e_i=$((ch_e_i + 1))
	done
	kill -KILL "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
	return 0
}

ch_stop_servers() {
	ch_i=1
	while [ $ch_i -le "${CH_N:-0}" ]; do
		ch_p=$(eval "echo \${CH_PID_$ch_i:-}")
		[ -z "$ch_p" ] || kill -TERM "$ch_p" 2>/dev/null || true
		ch_i=$((ch_i + 1))
	done
	ch_i=1
	while [ $ch_i -le "${CH_N:-0}" ]; do
		ch_p=$(eval "echo \${CH_PID_$ch_i:-}")
		[ -z "$ch_p" ] || ch_end "$ch_p"
		unset "CH_PID_$ch_i"
		ch_i=$((ch_i + 1))
	done
}

ch_stop() {
	[ -n "${CH_DIR:-}" ] || return 0
	ch_stop_servers
	[ "${CH_ZK:-0}" != 1 ] || zk_stop
	rm -rf "$CH_DIR"
	CH_DIR=
}

ch_at_exit() {
	ch_x_st=$?
	set +e
	ch_stop
	eval "${CH_AT_EXIT:-}"
	exit $ch_x_st
}

ch_kill() { # I
	ch_p=$(eval "echo \${CH_PID_$1:?no server $1}")
	kill -KILL "$ch_p" 2>/dev/null || true
	wait "$ch_p" 2>/dev/null || true
	return 0
}

ch_restart() { # I
	ch_p=$(eval "echo \${CH_PID_$1:?no server $1}")
	ch_end "$ch_p"
	ch_launch "$1"
	ch_wait "$1" || ch_fail "server $1 (port $(ch_port http "$1")) did not start again: $(ch_log_tail "$1")"
}

ch_sql() { # I SQL
	ch_s_out=$(mktemp "$CH_DIR/sql.XXXXXX") || return 1
	ch_s_code=$(printf '%s' "$2" | curl -sS -K "$CH_DIR/curl.cfg" -o "$ch_s_out" -w '%{http_code}' \
		--data-binary @- "$(ch_url "$1")/") || { rm -f "$ch_s_out"; return 1; }
	if [ "$ch_s_code" = 200 ]; then
		cat "$ch_s_out"
		rm -f "$ch_s_out"
		return 0
	fi
	echo "clickhouse.sh: server $1 answered HTTP $ch_s_code: $(cat "$ch_s_out")" >&2
	rm -f "$ch_s_out"
	return 1
}
