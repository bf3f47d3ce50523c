# tests/zookeeper.sh - a ZooKeeper of a test's own, for ClickHouse's
# distributed DDL (ON CLUSTER). Sourced by a test after tests/clickhouse.sh:
# with CH_ZK=1 set before ch_start, ch_start starts one first and gives
# every server <zookeeper> and <distributed_ddl>; ch_stop stops it after
# them.
#
# The ZooKeeper is Debian's (3.8: the libzookeeper-java package's jar, on
# a JRE), run as a standalone server by its main class, as the zookeeper
# package's zkServer.sh runs it: no system service, no /etc/zookeeper, its zoo.cfg, data and log in CH_DIR/zk, listening on
# 127.0.0.1 only on a port that was free at its start, the admin server
# off, of the four-letter words only `conf`. It is this shell's child and
# gets SIGKILL if this shell dies without stopping it.
#
#   zk_start        start it and wait until it answers; sets
#                     ZK_PORT   its client port
#                     ZK_PID    its pid
#                     ZK_DDL    the distributed DDL queue's path in it
#                   exits 77 (a skipped test) when the jar or java is
#                   not installed
#   zk_stop         stop it (SIGTERM, SIGKILL after 10 s)
#   zk_conf         its answer to `conf` (its configuration), or nothing
#
# Needs java, /usr/share/java/zookeeper.jar (ZK_JAR; Debian's manifest
# names the jars it needs, which the package's dependencies install) and
# curl (telnet://: the four-letter words without a client of ZooKeeper's).

ZK_JAR=${ZK_JAR:-/usr/share/java/zookeeper.jar}
ZK_DDL=/clickhouse/task_queue/ddl

zk_conf() {
	printf conf | curl -s --max-time 2 "telnet://127.0.0.1:$ZK_PORT" 2>/dev/null
}

# zk_ours: the server on ZK_PORT has our data directory (not a server of
# another test that took the port first)
zk_ours() {
	zk_conf | grep -qxF "dataDir=$CH_DIR/zk/data/version-2"
}

# zk_launch: zoo.cfg on a port of ch_free_ports, the server started
zk_launch() {
	ZK_PORT=$(ch_free_ports 1)
	zk_d=$CH_DIR/zk
	rm -rf "$zk_d"
	mkdir -p "$zk_d/data" || ch_fail "cannot write in $CH_DIR"
	# (forceSync=no, a small preAllocSize: the data is the test's, lost
	# with it; no fsync to wait for, no 64 MB log file)
	cat >"$zk_d/zoo.cfg" <<-EOF
		tickTime=2000
		dataDir=$zk_d/data
		clientPort=$ZK_PORT
		clientPortAddress=127.0.0.1
		admin.enableServer=false
		4lw.commands.whitelist=conf
		forceSync=no
		preAllocSize=1024
	EOF
	# its log on stderr (slf4j-simple, where the package has it)
	zk_cp=$ZK_JAR
	[ ! -e "${ZK_JAR%/*}/slf4j-simple.jar" ] || zk_cp="$zk_cp:${ZK_JAR%/*}/slf4j-simple.jar"
	# (a small heap, the serial collector and the first JIT tier: a test's
	# few hundred nodes, started fast)
	set -- java -Xms16m -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
		-Dzookeeper.jmx.log4j.disable=true -cp "$zk_cp" \
		org.apache.zookeeper.server.ZooKeeperServerMain "$zk_d/zoo.cfg"
	if command -v setpriv >/dev/null 2>&1; then
		setpriv --pdeathsig KILL -- "$@" >"$zk_d/log" 2>&1 </dev/null &
	else
		"$@" >"$zk_d/log" 2>&1 </dev/null &
	fi
	ZK_PID=$!
}

# zk_wait: until it answers as ours (0), it has exited (1) or 60 s passed (1)
zk_wait() {
	zk_w_i=0
	while [ $zk_w_i -lt 600 ]; do
		kill -0 "$ZK_PID" 2>/dev/null || return 1
		zk_ours && return 0
		sleep 0.1
		zk_w_i=$((zk_w_i + 1))
	done
	return 1
}

zk_start() {
	command -v java >/dev/null 2>&1 && [ -r "$ZK_JAR" ] ||
		{ echo "zookeeper.sh: ZooKeeper is not installed (make deps installs it: libzookeeper-java, default-jre-headless)" >&2; exit 77; }
	zk_try=1
	while :; do
		zk_launch
		zk_wait && break
		# a port taken between its choice and the start: again on another
		if [ $zk_try -ge 5 ] || ! grep -qs "Address already in use" "$CH_DIR/zk/log"; then
			zk_msg="ZooKeeper (port $ZK_PORT) did not start: $(tail -n 5 "$CH_DIR/zk/log" 2>/dev/null)"
			zk_stop
			ch_fail "$zk_msg"
		fi
		zk_stop
		zk_try=$((zk_try + 1))
	done
	export ZK_PORT ZK_PID ZK_DDL
}

zk_stop() {
	[ -n "${ZK_PID:-}" ] || return 0
	ch_end "$ZK_PID"
	ZK_PID=
}

# zk_config: the lines of a server's config.xml that give it this
# ZooKeeper and the distributed DDL queue in it
zk_config() {
	echo "  <zookeeper><node><host>127.0.0.1</host><port>$ZK_PORT</port></node>"
	echo '    <session_timeout_ms>30000</session_timeout_ms></zookeeper>'
	echo "  <distributed_ddl><path>$ZK_DDL</path></distributed_ddl>"
}
