#!/bin/sh
# fpull prolog (and epilog) for Slurm sites that do not use the SPANK plugin (fpull_spank.so).
#
# Slurm runs the Prolog as root on each node of a job, without the job's environment,
# and drains the node when it exits non-zero or runs past PrologEpilogTimeout. So this
# script only warms the node's (or a shared) cache with PUBLIC images, under a deadline,
# and ALWAYS exits 0: an image problem must fail the job, not take the node out of
# service. The job then unpacks from the cache without the network, and on failure prints
# what the prolog recorded for it (docs/cluster.md):
#
#   sbatch --comment "fpull-image=REGISTRY/REPO:TAG [fpull-features=LIST]" job.sh
#   # in job.sh:
#   fpull pull -q --offline --cache-dir /var/cache/fpull [--features LIST] \
#       REGISTRY/REPO:TAG "$TMPDIR/rootfs" ||
#       { rc=$?; cat "/run/fpull-prolog/$SLURM_JOB_ID.error" >&2; exit $rc; }
#
# Run as Epilog too (the same wrapper), it removes the job's error record.
#
# Settings (set them in a wrapper that execs this script):
#   FPULL                   the fpull program                     (default: fpull in PATH)
#   FPULL_PROLOG_CACHE      the cache to fill; made 0755 so jobs can read it
#                                                                 (default: /var/cache/fpull)
#   FPULL_PROLOG_RUN_DIR    where each job's error record is left, readable by the job's
#                           user only; root's, node-local       (default: /run/fpull-prolog)
#   FPULL_PROLOG_TIMEOUT    seconds for all the prefetches of one job; keep it well under
#                           PrologEpilogTimeout                  (default: 120)
#   FPULL_PROLOG_MAX_IMAGES images one job's comment may name   (default: 4)
#   FPULL_PROLOG_REGISTRIES registries a comment may name, separated by spaces
#                           (e.g. "registry.example.org docker.io"; "*": any; default:
#                           none, so a comment prefetches nothing until the site lists them)
#   FPULL_PROLOG_MAX_BYTES  what one job's prefetches may add to the cache's file system,
#                           bytes or K, M, G, T                   (default: 10G)
#   FPULL_PROLOG_MIN_FREE   what must stay free for users on the cache's file system (root's
#                           reserved blocks not counted: the prolog never eats into them);
#                           bytes or K, M, G, T                   (default: 5% of it)
#   FPULL_PROLOG_CACHE_MAX  the Epilog prunes the cache to this size (fpull cache prune
#                           --max-size), least recently used first (default: no pruning)
#   FPULL_PROLOG_IMAGES     a file of images every job gets, one per line (optional)
#   FPULL_CONFIG            fpull's config file (as for fpull itself)
#   FPULL_PROLOG_LOG        a file for this script's messages (default: syslog via logger;
#                           Slurm keeps no Prolog output)
# Images a job asks for come from its comment ($SLURM_JOB_COMMENT, which slurmd gives the
# Prolog; no request to slurmctld): "fpull-image=IMAGE" (up to FPULL_PROLOG_MAX_IMAGES)
# and an optional "fpull-features=LIST" that replaces this node's detected features, as
# `fpull --features` does. The prefetch runs with no registry credentials at all: a root
# process must never fetch a private image into a cache every user can read.

# The comment is the user's: never glob it, split it on blanks only, quote everything.
set -f
IFS=' 	
'
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH
export PATH
FPULL=${FPULL:-fpull}
CACHE=${FPULL_PROLOG_CACHE:-/var/cache/fpull}
RUN_DIR=${FPULL_PROLOG_RUN_DIR:-/run/fpull-prolog}
TIMEOUT=${FPULL_PROLOG_TIMEOUT:-120}
MAX_IMAGES=${FPULL_PROLOG_MAX_IMAGES:-4}
REGISTRIES=${FPULL_PROLOG_REGISTRIES:-}
IMAGES_FILE=${FPULL_PROLOG_IMAGES:-}
CACHE_MAX=${FPULL_PROLOG_CACHE_MAX:-}
JOB=${SLURM_JOB_ID:-}

# SIZE (bytes, or a number with K, M, G or T) in bytes; nothing for a malformed one.
bytes() {
  case $1 in
  *[!0-9KMGT]* | '' | [KMGT]*) return 0 ;;
  *[0-9]) echo "$1" ;;
  *K) echo $((${1%K} * 1024)) ;;
  *M) echo $((${1%M} * 1048576)) ;;
  *G) echo $((${1%G} * 1073741824)) ;;
  *T) echo $((${1%T} * 1099511627776)) ;;
  esac
}

log() {
  msg="fpull-prolog: job ${JOB:-?}: $*"
  if [ -n "${FPULL_PROLOG_LOG:-}" ]; then
    printf '%s\n' "$msg" >>"$FPULL_PROLOG_LOG"
  elif command -v logger >/dev/null 2>&1; then
    logger -p daemon.warning -- "$msg"
  fi
  printf '%s\n' "$msg" >&2
}

case $JOB in
'' | *[!0-9]*) exit 0 ;;
esac
case $TIMEOUT in '' | *[!0-9]*) TIMEOUT=120 ;; esac
case $MAX_IMAGES in '' | *[!0-9]*) MAX_IMAGES=4 ;; esac
MAX_BYTES=$(bytes "${FPULL_PROLOG_MAX_BYTES:-10G}")
MAX_BYTES=${MAX_BYTES:-10737418240}
ERRFILE=$RUN_DIR/$JOB.error

# The epilog (the same script as Epilog=): the job's record goes, and the cache is pruned
# to FPULL_PROLOG_CACHE_MAX when the site set one.
case ${SLURM_SCRIPT_CONTEXT:-} in
epilog*)
  rm -f -- "$ERRFILE"
  if [ -n "$CACHE_MAX" ] && [ -d "$CACHE" ]; then
    timeout -k 5 "$TIMEOUT" "$FPULL" cache prune -q --max-size "$CACHE_MAX" \
      --cache-dir "$CACHE" >/dev/null 2>&1 ||
      log "cache prune --max-size $CACHE_MAX of $CACHE failed"
  fi
  exit 0
  ;;
esac

# The record the job reads: a file in a directory only root can write, owned by the job's
# user, mode 0600, so no other user reads which images failed and why.
errors=
record() {
  log "$*"
  errors="${errors}fpull-prolog: $*
"
}
run_dir_ready() {
  umask 022
  if [ ! -d "$RUN_DIR" ] && ! mkdir -m 0755 -- "$RUN_DIR"; then
    log "cannot create $RUN_DIR: jobs will not see why their image is missing"
    return 1
  fi
  owner_mode=$(stat -L -c '%u %a' -- "$RUN_DIR") || return 1
  case $owner_mode in
  '0 '[0-7][0145][0145] | '0 '[0145][0145] | '0 '[0145]) return 0 ;;
  esac
  log "$RUN_DIR must be owned by root and writable by root only ($owner_mode): not used"
  return 1
}
write_errors() {
  [ -n "$errors" ] || return 0
  run_dir_ready || return 0
  uid=${SLURM_JOB_UID:-}
  case $uid in '' | *[!0-9]*) return 0 ;; esac
  rm -f -- "$ERRFILE"
  if ! (umask 077 && set -C && printf '%s' "$errors" >"$ERRFILE") ||
    ! chown -- "$uid" "$ERRFILE"; then
    log "cannot write $ERRFILE"
  fi
}

# The job's comment, as slurmd gives it to the Prolog (Slurm 22.05 does, with or without
# PrologFlags=Alloc): words split on blanks, never globbed.
features=
nuser=0
set --
for word in ${SLURM_JOB_COMMENT:-}; do
  case $word in
  fpull-image=*)
    image=${word#fpull-image=}
    case $image in
    '' | -*)
      record "fpull-image=$image: refused (an image never starts with '-' and is not empty)"
      continue
      ;;
    esac
    nuser=$((nuser + 1))
    if [ "$nuser" -gt "$MAX_IMAGES" ]; then
      record "$image: not prefetched: more than $MAX_IMAGES images in the job's comment"
      continue
    fi
    set -- "$@" "$image"
    ;;
  fpull-features=*)
    f=${word#fpull-features=}
    case $f in
    '' | -*) record "fpull-features=$f: refused (a feature list never starts with '-')" ;;
    *) features=$f ;;
    esac
    ;;
  esac
done
# Names a user cannot choose: the comment's images are checked against the allow-list;
# without one, a comment prefetches nothing (a root process writing what any user's
# registry serves into a cache on the node's disk).
if [ -z "$REGISTRIES" ] && [ $# -gt 0 ]; then
  for image in "$@"; do
    record "$image: not prefetched: the site lists no registry a job's comment may name (FPULL_PROLOG_REGISTRIES)"
  done
  set --
elif [ "$REGISTRIES" != "*" ]; then
  n=$#
  i=0
  while [ "$i" -lt "$n" ]; do
    image=$1
    shift
    i=$((i + 1))
    case $image in
    */*) host=${image%%/*} ;;
    *) host=docker.io ;;
    esac
    case $host in
    *.* | *:* | localhost) ;;
    *) host=docker.io ;;
    esac
    case $host in index.docker.io | registry-1.docker.io) host=docker.io ;; esac
    allowed=
    for r in $REGISTRIES; do
      [ "$host" = "$r" ] && allowed=1
    done
    if [ -n "$allowed" ]; then
      set -- "$@" "$image"
    else
      record "$image: not prefetched: registry $host is not in the site's list ($REGISTRIES)"
    fi
  done
fi
if [ -n "$IMAGES_FILE" ] && [ -r "$IMAGES_FILE" ]; then
  while read -r image; do
    case $image in '' | '#'* | -*) continue ;; esac
    set -- "$@" "$image"
  done <"$IMAGES_FILE"
fi
if [ $# -eq 0 ]; then
  write_errors
  exit 0
fi

# This cache is for every job's user. fpull gives a named cache (only its default one is
# 0700) and what goes in it the umask's modes, and slurmd's may be stricter.
umask 022
if [ ! -d "$CACHE" ] && ! mkdir -m 0755 -- "$CACHE"; then
  record "cannot create the cache $CACHE on this node"
  write_errors
  exit 0
fi
# Root's alone: what root writes there (and the partial files it removes) nobody else
# placed.
owner_mode=$(stat -L -c '%u %a' -- "$CACHE" 2>/dev/null)
case $owner_mode in
'0 '[0-7][0145][0145] | '0 '[0145][0145] | '0 '[0145]) ;;
*)
  record "the cache $CACHE must be root's and writable by root only ($owner_mode): not used"
  write_errors
  exit 0
  ;;
esac

# No credentials: DOCKER_CONFIG names a directory without config.json, and the other
# sources are unset. A private image fails here (exit 4) and is fetched by the job itself.
DOCKER_CONFIG=/nonexistent/fpull-prolog-uses-no-credentials
export DOCKER_CONFIG
unset REGISTRY_AUTH_FILE XDG_RUNTIME_DIR

# The cache's file system: free bytes (root's reserved blocks included) and what users
# may still use (not), as "FREE AVAIL".
space() {
  stat -f -c '%f %a %S' -- "$CACHE" 2>/dev/null | {
    read -r f a b && echo "$((f * b)) $((a * b))"
  }
}
read -r free0 _ <<EOF
$(space)
EOF
case $free0 in '' | *[!0-9]*) free0=0 ;; esac
MIN_FREE=$(bytes "${FPULL_PROLOG_MIN_FREE:-}")
if [ -z "$MIN_FREE" ]; then
  # 5% of the file system.
  MIN_FREE=$(stat -f -c '%b %S' -- "$CACHE" 2>/dev/null | { read -r n b && echo $((n * b / 20)); })
  MIN_FREE=${MIN_FREE:-0}
fi
tmpout=$(mktemp) || tmpout=/dev/null

# One prefetch under the deadline, watched: what the file system lost since the job's first
# prefetch stays within MAX_BYTES, and what users may use above MIN_FREE; else it is
# ended. Sets rc (125: the bytes, 126: the floor) and out.
prefetch() {
  # Each file it writes is bounded by what is left of the budget (RLIMIT_FSIZE: a blob
  # that grows past it ends the prefetch at once), and the sum is watched.
  rem=$((MAX_BYTES - free0 + free))
  if [ "$rem" -le 0 ]; then
    rc=125 out=
    return
  fi
  if [ -n "$features" ]; then
    prlimit --fsize="$rem" timeout -k 5 "$left" "$FPULL" prefetch -q --cache-dir "$CACHE" \
      --features="$features" -- "$1" >"$tmpout" 2>&1 &
  else
    prlimit --fsize="$rem" timeout -k 5 "$left" "$FPULL" prefetch -q --cache-dir "$CACHE" \
      -- "$1" >"$tmpout" 2>&1 &
  fi
  pid=$!
  over=
  while kill -0 "$pid" 2>/dev/null; do
    read -r free avail <<EOF
$(space)
EOF
    if [ -n "$free" ] && [ $((free0 - free)) -gt "$MAX_BYTES" ]; then
      over=125
    elif [ -n "$avail" ] && [ "$avail" -lt "$MIN_FREE" ]; then
      over=126
    fi
    if [ -n "$over" ]; then
      kill -TERM "$pid" 2>/dev/null
      break
    fi
    sleep 0.1 2>/dev/null || sleep 1
  done
  wait "$pid"
  rc=$?
  # SIGXFSZ: a file past the budget.
  [ "$rc" -ne 153 ] || over=125
  [ -z "$over" ] || rc=$over
  out=$(cat "$tmpout" 2>/dev/null)
  if [ -n "$over" ]; then
    # What the ended download wrote stays nowhere: root's own partial files go.
    find "$CACHE/tmp/u0" -maxdepth 1 -type f -name '*.partial' -delete 2>/dev/null
  fi
}

start=$(date +%s)
for image in "$@"; do
  left=$((start + TIMEOUT - $(date +%s)))
  if [ "$left" -le 0 ]; then
    record "$image: not prefetched: the prolog's $TIMEOUT s (FPULL_PROLOG_TIMEOUT) ran out"
    continue
  fi
  read -r free avail <<EOF
$(space)
EOF
  if [ -n "$avail" ] && [ "$avail" -lt "$MIN_FREE" ]; then
    record "$image: not prefetched: less than $MIN_FREE bytes free for users on the cache's file system (FPULL_PROLOG_MIN_FREE)"
    continue
  fi
  prefetch "$image"
  case $rc in
  0) ;;
  124 | 137)
    record "$image: not prefetched: the prolog's $TIMEOUT s (FPULL_PROLOG_TIMEOUT) ran out"
    ;;
  125)
    record "$image: not prefetched: the job's prefetches may add at most $MAX_BYTES bytes (FPULL_PROLOG_MAX_BYTES)"
    ;;
  126)
    record "$image: not prefetched: less than $MIN_FREE bytes free for users on the cache's file system (FPULL_PROLOG_MIN_FREE)"
    ;;
  *)
    # Never the node's fault: say it in slurmd's log and to the job, let the job fail.
    record "$image: exit $rc: $(printf '%s\n' "$out" | tail -n 1)"
    ;;
  esac
done
[ "$tmpout" = /dev/null ] || rm -f -- "$tmpout"
write_errors
exit 0
