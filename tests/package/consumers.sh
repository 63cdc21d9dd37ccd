#!/bin/sh
# package.consumers (see extra.cmake): BUILD_DIR FULL_LIBDIR CC CMAKE SANITIZE
set -eu
build=$1 full_libdir=$2 cc=$3 cmake=$4 sanitize=$5
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/fpull-consumers.XXXXXX")
trap 'rm -rf "$work"' EXIT
flags=""
# A sanitized libfpull needs the sanitizer runtime in the program too.
[ "$sanitize" = 1 ] && flags="-fsanitize=address,undefined"

DESTDIR="$work/stage" "$cmake" --install "$build" >"$work/install.log"
libdir="$work/stage$full_libdir"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
want="fpull $(pkg-config --modversion fpull) docker.io/library/ubuntu:latest 5"

check() { # NAME PROGRAM
  got=$("$2")
  if [ "$got" != "$want" ]; then
    echo "$1: printed '$got', expected '$want'" >&2
    exit 1
  fi
  echo "$1: ok"
}

# 1. pkg-config, shared library.
# shellcheck disable=SC2046,SC2086
"$cc" $flags -o "$work/shared" "$here/consumer/main.c" $(pkg-config --cflags --libs fpull) \
  -Wl,-rpath,"$libdir"
check "pkg-config" "$work/shared"
if ldd "$work/shared" | grep -q "libfpull.so"; then :; else
  echo "pkg-config: the program does not use libfpull.so" >&2
  exit 1
fi

# 2. pkg-config --static against libfpull.a: every dependency must be named by fpull.pc.
libs=$(pkg-config --static --libs fpull | sed 's/-lfpull\b/-l:libfpull.a/')
# shellcheck disable=SC2046,SC2086
"$cc" $flags -o "$work/static" "$here/consumer/main.c" $(pkg-config --cflags fpull) $libs
check "pkg-config --static" "$work/static"
if ldd "$work/static" | grep -q "libfpull.so"; then
  echo "pkg-config --static: the program uses libfpull.so" >&2
  exit 1
fi

# 3. CMake find_package(fpull): fpull::fpull and fpull::fpull_static.
"$cmake" -S "$here/consumer" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$work/stage${full_libdir%/*}" \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" >"$work/cmake.log" 2>&1 ||
  { cat "$work/cmake.log" >&2; exit 1; }
"$cmake" --build "$work/cmake" >"$work/cmake-build.log" 2>&1 ||
  { cat "$work/cmake-build.log" >&2; exit 1; }
check "find_package fpull::fpull" "$work/cmake/consumer_shared"
check "find_package fpull::fpull_static" "$work/cmake/consumer_static"
