# Sourced by scripts/test, scripts/demo and scripts/bench: installs the Debian 12 packages
# fpull needs to build and test, only those that are missing.
FPULL_PKGS=(build-essential cmake pkg-config clang clang-format libclang-rt-14-dev
  libcurl4-openssl-dev libcjson-dev libssl-dev libarchive-dev libyaml-dev libcpuid-dev
  libzstd-dev libisal-dev docker-registry skopeo umoci zstd python3 openssl apache2-utils
  groff-base mandoc ca-certificates time
  gcc-aarch64-linux-gnu gcc-powerpc64le-linux-gnu libc6-dev-arm64-cross libc6-dev-ppc64el-cross
  qemu-user
  slurm-wlm slurmctld slurmd munge libslurm-dev
  runc
  libsquashfs-dev squashfs-tools squashfs-tools-ng squashfuse fuse3)

fpull_install_deps() {
  local missing=() p
  for p in "${FPULL_PKGS[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "installing: ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}
