#!/bin/sh
# scripts/install-deps.sh [build|check]: install what is missing (Debian,
# Ubuntu: apt-get; as root, or through sudo).
#   build   what building ringtrace and `make demo` need: the compilers,
#           CMake, pkg-config, libtracefs and libtraceevent (record -k),
#           babeltrace2 (the reference CTF reader the demo compares with),
#           libcurl (ringtrace load)
#   check   (the default) that and what `make check` needs besides: clang,
#           clang-format, the sanitizer runtimes, libFuzzer, python3,
#           ClickHouse's server and client (the fleet loader's tests start
#           their own servers on free ports: none of ours uses the system's)
#           and ZooKeeper's jar with a headless JRE (the ON CLUSTER tests
#           start their own: no service is installed)
set -e
what=${1:-check}
case $what in
build | check) ;;
*)
	echo "usage: scripts/install-deps.sh [build|check]" >&2
	exit 2
	;;
esac
need=""
command -v cmake >/dev/null 2>&1 || need="$need cmake"
command -v make >/dev/null 2>&1 || need="$need make"
command -v gcc >/dev/null 2>&1 || need="$need gcc"
command -v g++ >/dev/null 2>&1 || need="$need g++"
command -v pkg-config >/dev/null 2>&1 || need="$need pkg-config"
# The kernel's trace formats, for ringtrace record -k (docs/kernel.md)
pkg-config --exists libtracefs 2>/dev/null || need="$need libtracefs-dev"
pkg-config --exists libtraceevent 2>/dev/null || need="$need libtraceevent-dev"
# SQLite, for ringtrace query and latency (docs/query.md)
pkg-config --exists sqlite3 2>/dev/null || need="$need libsqlite3-dev"
# libcurl, for ringtrace load (docs/fleet.md)
pkg-config --exists libcurl 2>/dev/null || need="$need libcurl4-openssl-dev"
# The reference CTF reader: the demo and the tests check that it reads
# ringtrace's pages.
command -v babeltrace2 >/dev/null 2>&1 || need="$need babeltrace2"
if [ "$what" = check ]; then
	command -v clang >/dev/null 2>&1 || need="$need clang"
	command -v clang++ >/dev/null 2>&1 || need="$need clang"
	command -v clang-format >/dev/null 2>&1 || need="$need clang-format"
	command -v python3 >/dev/null 2>&1 || need="$need python3"
	# the sqlite3 shell: the tests open a `query --db` file with it
	command -v sqlite3 >/dev/null 2>&1 || need="$need sqlite3"
	# ClickHouse, the fleet loader's tests' servers (tests/clickhouse.sh)
	command -v clickhouse-server >/dev/null 2>&1 || need="$need clickhouse-server"
	command -v clickhouse-client >/dev/null 2>&1 || need="$need clickhouse-client"
	# ZooKeeper, the ON CLUSTER tests' (tests/zookeeper.sh): the jar and a
	# JRE without a desktop's libraries (the zookeeper package's default-jre
	# brings them)
	[ -r /usr/share/java/zookeeper.jar ] || need="$need libzookeeper-java"
	command -v java >/dev/null 2>&1 || need="$need default-jre-headless"
	# libFuzzer for clang (make check-fuzz)
	ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 ||
		need="$need libclang-rt-14-dev"
	# ASan/UBSan/TSan runtimes for gcc (clang's come with the clang package).
	[ -n "$(gcc -print-file-name=libasan.so 2>/dev/null | grep /)" ] &&
		[ -e "$(gcc -print-file-name=libasan.so)" ] || need="$need libasan8"
	[ -e "$(gcc -print-file-name=libubsan.so 2>/dev/null)" ] || need="$need libubsan1"
	[ -e "$(gcc -print-file-name=libtsan.so 2>/dev/null)" ] || need="$need libtsan2"
fi
[ -n "$need" ] || exit 0
echo "install-deps: installing:$need"
SUDO=""
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null 2>&1 || {
		echo "install-deps: not root and no sudo: install these as root:$need" >&2
		exit 1
	}
	SUDO="sudo"
fi
$SUDO apt-get update
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y $need
case $need in
*clickhouse-server*)
	echo "install-deps: clickhouse-server's package may have started a system server (ports 8123, 9000);"
	echo "install-deps: ringtrace's tests do not use it (\`systemctl disable --now clickhouse-server\` stops it)"
	;;
esac
