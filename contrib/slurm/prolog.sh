#!/bin/sh
# fpull prolog for Slurm sites that do not use the SPANK plugin (fpull_spank.so).
#
# Slurm runs the Prolog as root on each node of a job, without the job's environment,
# and drains the node when it exits non-zero. So this script only prefetches into the
# node's (or a shared) cache and ALWAYS exits 0: an image problem must fail the job, not
# take the node out of service. The job then unpacks from the cache without the network:
#
#   sbatch --comment "fpull-image=REGISTRY/REPO:TAG [fpull-features=LIST]" job.sh
#   # in job.sh:
#   fpull pull -q --offline --cache-dir /var/cache/fpull [--features LIST] \
#       REGISTRY/REPO:TAG "$TMPDIR/rootfs" || exit   # exit 5: not in the cache
#
# (an OCI runtime bundle, rootfs + config.json, comes from the same cache: add
# `--format bundle` and name the bundle directory instead.) The format is the job's
# choice alone: the prefetch is the same for both.
#
# Settings (edit here, or call this script from a wrapper that sets them):
#   FPULL               the fpull program                    (default: fpull in PATH)
#   FPULL_PROLOG_CACHE  the cache to fill; made 0755 so jobs can read it
#                                                            (default: /var/cache/fpull)
#   FPULL_PROLOG_IMAGES a file of images every job gets, one per line (optional)
#   FPULL_CONFIG        fpull's config file (as for fpull itself)
#   FPULL_PROLOG_LOG    a file for this script's messages (default: syslog via logger;
#                       Slurm keeps no Prolog output)
# Images a job asks for come from its comment: "fpull-image=IMAGE" (several allowed) and
# an optional "fpull-features=LIST" that replaces this node's detected features, as
# `fpull --features` does (to prepare another kind of node).

PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH
export PATH
FPULL=${FPULL:-fpull}
CACHE=${FPULL_PROLOG_CACHE:-/var/cache/fpull}
IMAGES_FILE=${FPULL_PROLOG_IMAGES:-}

log() {
  msg="fpull-prolog: job ${SLURM_JOB_ID:-?}: $*"
  if [ -n "${FPULL_PROLOG_LOG:-}" ]; then
    echo "$msg" >>"$FPULL_PROLOG_LOG"
  elif command -v logger >/dev/null 2>&1; then
    logger -p daemon.warning -- "$msg"
  fi
  echo "$msg" >&2
}

# The job's comment: Slurm 22.05 does not pass it to the Prolog; squeue has it (%k).
comment=${SLURM_JOB_COMMENT:-}
if [ -z "$comment" ] && [ -n "${SLURM_JOB_ID:-}" ]; then
  comment=$(squeue -h -j "$SLURM_JOB_ID" -o %k 2>/dev/null)
fi

images=""
features=""
for word in $comment; do
  case $word in
  fpull-image=?*) images="$images ${word#fpull-image=}" ;;
  fpull-features=?*) features=${word#fpull-features=} ;;
  esac
done
if [ -n "$IMAGES_FILE" ] && [ -r "$IMAGES_FILE" ]; then
  images="$images $(grep -v '^[[:space:]]*#' "$IMAGES_FILE")"
fi
case $images in
*[![:space:]]*) ;;
*) exit 0 ;;
esac

# This cache is for every job's user. fpull gives a named cache (only its default one is
# 0700) and what goes in it the umask's modes, and slurmd's may be stricter.
umask 022
if [ ! -d "$CACHE" ] && ! mkdir -m 0755 "$CACHE"; then
  log "cannot create the cache $CACHE; jobs will fail their offline pull"
  exit 0
fi

for image in $images; do
  if [ -n "$features" ]; then
    out=$("$FPULL" prefetch -q --cache-dir "$CACHE" --features "$features" "$image" 2>&1)
  else
    out=$("$FPULL" prefetch -q --cache-dir "$CACHE" "$image" 2>&1)
  fi
  rc=$?
  # Never the node's fault: say it in slurmd's log, let the job's offline pull fail.
  [ $rc -eq 0 ] || log "$image: exit $rc: $(echo "$out" | tail -n 1)"
done
exit 0
