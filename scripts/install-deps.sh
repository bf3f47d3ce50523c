#!/bin/sh
# Install what the build and the tests need, only when it is missing.
# Debian/Ubuntu (apt-get); run as root or with sudo available.
set -e
need=""
command -v cmake >/dev/null 2>&1 || need="$need cmake"
command -v make >/dev/null 2>&1 || need="$need make"
command -v gcc >/dev/null 2>&1 || need="$need gcc"
command -v g++ >/dev/null 2>&1 || need="$need g++"
command -v clang >/dev/null 2>&1 || need="$need clang"
command -v clang++ >/dev/null 2>&1 || need="$need clang"
command -v clang-format >/dev/null 2>&1 || need="$need clang-format"
# The reference CTF reader: tests check that it reads ringtrace's pages.
command -v babeltrace2 >/dev/null 2>&1 || need="$need babeltrace2"
command -v pkg-config >/dev/null 2>&1 || need="$need pkg-config"
command -v python3 >/dev/null 2>&1 || need="$need python3"
# The kernel's trace formats, for ringtrace record -k (docs/kernel.md)
pkg-config --exists libtracefs 2>/dev/null || need="$need libtracefs-dev"
pkg-config --exists libtraceevent 2>/dev/null || need="$need libtraceevent-dev"
# libFuzzer for clang (make check-fuzz)
ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 || need="$need libclang-rt-14-dev"
# ASan/UBSan/TSan runtimes for gcc (clang's come with the clang package).
[ -n "$(gcc -print-file-name=libasan.so 2>/dev/null | grep /)" ] && \
	[ -e "$(gcc -print-file-name=libasan.so)" ] || need="$need libasan8"
[ -e "$(gcc -print-file-name=libubsan.so 2>/dev/null)" ] || need="$need libubsan1"
[ -e "$(gcc -print-file-name=libtsan.so 2>/dev/null)" ] || need="$need libtsan2"
if [ -n "$need" ]; then
	echo "install-deps: installing:$need"
	SUDO=""
	[ "$(id -u)" = 0 ] || SUDO="sudo"
	$SUDO apt-get update
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y $need
fi
