/* fpull Slurm plugin: the step's request, handed from slurmstepd to the runner program
 * (runner/runner.c) over a pipe, as "KEY=VALUE\0" records: the runner is a program of its own,
 * exec'd as the job's user, not a copy of slurmstepd (nothing of slurmstepd's memory is
 * readable through it). */
#ifndef FPULL_SLURM_REQUEST_H
#define FPULL_SLURM_REQUEST_H

#include <stdint.h>
#include <sys/types.h>

#include <fpull/error.h>

#include "settings.h"
#include "base/util.h"

/* What the step asks for. */
struct fp_slurm_request {
  const struct fp_slurm_settings *s;
  uint32_t job_id, step_id;
  uid_t uid;
  gid_t gid;
  const char *image;
  const char *features; /* NULL: the node's own */
  const char *mounts;   /* --fpull-mounts, or NULL */
  int mount_home;
  enum fp_slurm_pull pull;
  /* From the job's environment: where the user's credentials and cache are. */
  const char *home, *docker_config, *xdg_config_home, *xdg_cache_home;
  const char *cache;    /* FPULL_CACHE for the pull: the job's, else shared_cache=/UID, or NULL */
  const char *gpus;     /* the allocation's GPUs (CUDA_VISIBLE_DEVICES), or NULL */
  const char *save;     /* --fpull-save: a SquashFS file of the image, written by node 0 of a
                           step on one node; on several, by every node (save_nodes) */
  uint32_t save_nodes;  /* with save: the step's node count; over 1, each entry's own file */
  int entrypoint;       /* --fpull-entrypoint: the tasks need the image's Entrypoint */
  int squashfs;         /* --fpull-format=squashfs: pulled as one SquashFS file and mounted */
  uint32_t ntasks;      /* the step's tasks on this node: each joins, then the holder goes */
  int quiet;            /* --fpull-quiet: no line but errors */
  int readonly;         /* --fpull-readonly: the image is the container's read-only root */
  const char *name;     /* --fpull-name: a container kept for later steps, or NULL */
  const char *term;     /* the job's TERM */
  const char *pmix_dir; /* Slurm's PMIx server directory of the step, or NULL */
  const char *script;   /* the batch step's script (slurmd's spool), mounted read-only, or NULL */
  const char *pin;      /* the digest the job resolved image's tag to (common/job_pin.h), or
                           NULL */
  const char *holder;   /* the holder program's path (holder/hold.c) */
  const char *node;     /* the node's name (SLURMD_NODENAME), for the step's lines, or NULL */
  uint32_t node_id;     /* the node's index in the step (0: the first) */
  int info_fd;          /* (the runner's own) */
  int no_sqsh_store;    /* (the runner's own) root could not make sqsh_store=/UID */
};

/* The most a request may take (it is written into a pipe before the runner starts). */
#define FP_SLURM_REQUEST_MAX 60000u

/* r (with its settings' arguments) as records into out; -1 when it exceeds the maximum. */
int fp_slurm_request_pack(struct fp_buf *out, const struct fp_slurm_request *r);

/* Parses records into r and s (which own nothing of their own: strings point into data,
 * which must outlive them; s is parsed from the settings' arguments as the plugin did). */
int fp_slurm_request_unpack(struct fp_slurm_request *r, struct fp_slurm_settings *s, char *data,
                            size_t len, fpull_err *err);

#endif
