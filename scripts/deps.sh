# Sourced by scripts/test, scripts/demo and scripts/bench: installs the Debian 12 packages
# of the named sets, only those that are missing. Three sets, each holding the one before:
#   build  the compiler, CMake, pkg-config and the libraries fpull links with
#   demo   build + what scripts/demo runs: the private registry and its Python helper
#   test   demo + everything the suite uses (sanitizers, fuzzers, cross compilers and qemu,
#          Slurm, runtimes, SquashFS readers, the man page linters)
# Nothing else on the machine is changed: no service of a package it installs is started
# (see fpull_install_deps), no configuration is written.
FPULL_PKGS_BUILD=(build-essential cmake pkg-config
  libcurl4-openssl-dev libcjson-dev libssl-dev libarchive-dev libyaml-dev libcpuid-dev
  libzstd-dev libisal-dev libsquashfs-dev)
FPULL_PKGS_DEMO=(docker-registry python3)
FPULL_PKGS_TEST=(clang clang-format libclang-rt-14-dev
  skopeo umoci zstd openssl apache2-utils groff-base mandoc ca-certificates time
  libsodium23 # the tests' reference secretbox for cosign key files (fpull does not link it)
  gcc-aarch64-linux-gnu gcc-powerpc64le-linux-gnu libc6-dev-arm64-cross libc6-dev-ppc64el-cross
  qemu-user
  slurm-wlm slurmctld slurmd munge libslurm-dev
  runc crun iproute2 mpich libmpich-dev openmpi-bin libopenmpi-dev libpmix2 libpmix-dev
  debhelper rpm
  squashfs-tools squashfs-tools-ng squashfuse fuse3 fuse-overlayfs)
# Packages whose maintainer scripts enable and start a daemon: the tests start private
# ones of their own, and a machine that runs the suite must not be left running the
# system's (package, then its systemd units).
FPULL_PKGS_SERVICES=("slurmd slurmd" "slurmctld slurmctld" "munge munge")

# fpull_deps_list SET...: the packages of the sets (build, demo, test), one per line.
fpull_deps_list() {
  local set
  for set in "$@"; do
    case "$set" in
      build | demo | test) ;;
      *) echo "deps.sh: unknown package set '$set' (build, demo or test)" >&2; return 2 ;;
    esac
  done
  for set in "$@"; do
    case "$set" in
      build) printf '%s\n' "${FPULL_PKGS_BUILD[@]}" ;;
      demo) fpull_deps_list build && printf '%s\n' "${FPULL_PKGS_DEMO[@]}" ;;
      test) fpull_deps_list demo && printf '%s\n' "${FPULL_PKGS_TEST[@]}" ;;
    esac
  done | awk '!seen[$0]++'
}

# fpull_install_deps SET... [-- PACKAGE...]: installs what is missing of the sets and of
# the extra packages. With FPULL_DEPS_PRINT=1 it only prints the packages of the sets
# and extras, one per line, and exits the script (how the suite checks what scripts/demo
# and scripts/test would install). While apt-get runs, a policy-rc.d (Debian's switch for
# maintainer scripts) refuses to start services; the units of the daemons it installed
# are disabled and stopped afterwards, where systemd runs. A policy-rc.d already there is
# the admin's and stays as it is.
fpull_install_deps() {
  local sets=() extra=() p
  while [ $# -gt 0 ] && [ "$1" != -- ]; do sets+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  extra=("$@")
  [ ${#sets[@]} -gt 0 ] || sets=(build)
  local wanted
  wanted=$(fpull_deps_list "${sets[@]}") || return 2
  if [ "${FPULL_DEPS_PRINT:-0}" = 1 ]; then
    printf '%s\n' $wanted "${extra[@]}" | awk 'NF && !seen[$0]++'
    exit 0
  fi
  local missing=()
  for p in $wanted "${extra[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "installing: ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  local policy=${FPULL_POLICY_RC_D:-/usr/sbin/policy-rc.d} own_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# scripts/deps.sh: no service starts while fpull installs packages\nexit 101\n' |
      $sudo tee "$policy" >/dev/null && $sudo chmod 755 "$policy" && own_policy=1
  fi
  # Interrupted, it must not stay behind and keep the admin's services from starting.
  [ "$own_policy" = 1 ] && trap '$sudo rm -f "$policy"; exit 130' INT TERM HUP
  local rc=0
  { $sudo apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
      "${missing[@]}"; } || rc=$?
  if [ "$own_policy" = 1 ]; then
    $sudo rm -f "$policy"
    trap - INT TERM HUP
  fi
  fpull_quiet_services "${missing[@]}"
  return $rc
}

# fpull_quiet_services PACKAGE...: of the daemons' packages among these (installed just
# now), disables and stops the units, so that nothing runs and nothing starts at boot.
fpull_quiet_services() {
  command -v systemctl >/dev/null 2>&1 || return 0
  local sudo="" entry pkg unit p
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  for entry in "${FPULL_PKGS_SERVICES[@]}"; do
    pkg=${entry%% *} unit=${entry#* }
    for p in "$@"; do
      [ "$p" = "$pkg" ] || continue
      $sudo systemctl disable --now "$unit" >/dev/null 2>&1 ||
        $sudo systemctl disable "$unit" >/dev/null 2>&1 || true
      echo "deps.sh: $unit (from $pkg) disabled and stopped; the tests run their own" >&2
    done
  done
}
