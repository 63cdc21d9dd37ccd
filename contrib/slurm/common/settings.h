/* fpull Slurm plugin: the plugstack.conf arguments (the site's settings) and the job's
 * --fpull-* options (the user's), with the checks done at submit time. */
#ifndef FPULL_SLURM_SETTINGS_H
#define FPULL_SLURM_SETTINGS_H

#include <fpull/error.h>

/* --fpull-pull and pull=: when the job's pull asks the registry (podman's --pull words). */
enum fp_slurm_pull {
  FP_PULL_ALWAYS,  /* always ask; a registry that cannot be reached fails the job */
  FP_PULL_MISSING, /* the cached image when there is one, else ask */
  FP_PULL_NEWER,   /* ask; when the registry cannot be reached, the cached image with a
                      warning (the default) */
  FP_PULL_NEVER    /* the cached image only; never ask */
};

/* The plugin's arguments in plugstack.conf (docs/cluster.md lists them). */
struct fp_slurm_settings {
  char *fpull;        /* fpull=: the fpull program the job's pull runs */
  char *runtime;      /* runtime=: runc or crun, or a path to one of them */
  char *run_dir;      /* run_dir=: where job-private directories live */
  char *cache_dir;    /* cache_dir=: a read-only shared cache searched after the user's */
  char *shared_cache; /* shared_cache=: a directory every node shares (a parallel file
                         system) where each user's pulls keep their cache, DIR/UID; the
                         job's FPULL_CACHE wins */
  char *sqsh_store;   /* sqsh_store=: a directory every node shares where each user's
                         chosen entries are kept as SquashFS files, DIR/UID/HEX.sqsh,
                         converted once and mounted by every node of that kind */
  unsigned long long sqsh_store_max; /* sqsh_store_max=: bytes of a user's files there, the
                                        least recently used removed beyond it; 0: no bound */
  char *config;          /* config=: an fpull config file, or NULL for fpull's own search */
  char *policy;          /* policy=: the containers-policy.json every pull of every step is
                            checked against (fpull --policy, as the site wrote it); no user
                            option replaces it, and a local .sqsh image is refused */
  char *data_dir;        /* data_dir=: where cputags.yaml is, or NULL for the installed one */
  char *mounts;          /* mounts=: site mounts SRC:DST[:ro|rw][,...] (checked) */
  char *env_passthrough; /* env_passthrough=: NAME[,NAME...] the job's value wins */
  char *nvidia_hook;     /* nvidia_hook=: nvidia-container-runtime-hook, or NULL */
  int jobs;              /* jobs=: parallel downloads; 0: fpull's default */
  int pull_timeout;      /* pull_timeout=: seconds a step's pull may take; 0: no bound
                            but the job's time limit */
  unsigned long long store_max;    /* store_max=: bytes of unpacked images kept per user on the
                                     node for later jobs (run_dir/store/UID); 0: none kept;
                                     FP_SLURM_STORE_AUTO (the default, or "auto"): a quarter
                                     of run_dir's file system */
  int store_max_set;               /* store_max= was given (a node that cannot use the store
                                      says so only then) */
  int check_timeout;               /* check_timeout=: seconds the registry check of a cached
                                      image may take before the cached image runs (newer);
                                      0: no deadline but pull_timeout= */
  unsigned long long max_unpacked; /* max_unpacked=: bytes a step's pull may write (fpull
                                     --max-unpacked); 0: no bound */
  int container_scope_global;      /* container_scope=job|global: where --fpull-name keeps a
                                      container (the job's directory, or the user's store) */
  int cleanup_timeout;             /* cleanup_timeout=: seconds the removal of a job's or
                                      step's directory may take before what is left is
                                      logged and left (default 10) */
  int mount_home;                  /* mount_home=yes|no: the default of --[no-]fpull-mount-home */
  int remap_root;                  /* remap_root=yes|no: the default of --[no-]fpull-remap-root */
  int execute_entrypoint;  /* execute_entrypoint=yes|no: the default of --[no-]fpull-entrypoint */
  enum fp_slurm_pull pull; /* pull=: the default of --fpull-pull */
  char **args;             /* the arguments as given (NULL-terminated), for the runner */
};

/* store_max='s default: a quarter of run_dir's file system, per user. */
#define FP_SLURM_STORE_AUTO (~0ULL)
/* check_timeout='s default, in seconds: a cached step starts within seconds of a registry
 * that hangs. */
#define FP_SLURM_CHECK_TIMEOUT_DEFAULT 4

/* run_dir='s default: on the node's disk. */
#define FP_SLURM_RUN_DIR_DEFAULT "/var/lib/fpull-slurm"

/* Parses "key=value" plugin arguments into s (which owns copies); unknown keys and bad
 * values are FPULL_EUSAGE naming them (with "did you mean"). */
int fp_slurm_settings_parse(struct fp_slurm_settings *s, int ac, char **av, fpull_err *err);
void fp_slurm_settings_free(struct fp_slurm_settings *s);

/* The job's --fpull-* options. */
enum fp_slurm_opt {
  FP_OPT_IMAGE = 1,
  FP_OPT_FEATURES,
  FP_OPT_FORMAT,
  FP_OPT_MOUNTS,
  FP_OPT_WORKDIR,
  FP_OPT_MOUNT_HOME,
  FP_OPT_NO_MOUNT_HOME,
  FP_OPT_REMAP_ROOT,
  FP_OPT_ENTRYPOINT,
  FP_OPT_PULL,
  FP_OPT_SAVE,
  FP_OPT_NO_REMAP_ROOT,
  FP_OPT_NO_ENTRYPOINT,
  FP_OPT_ENV,
  FP_OPT_QUIET,
  FP_OPT_READONLY,
  FP_OPT_NAME,
};

/* One bind mount of --fpull-mounts or mounts=. */
enum fp_slurm_mount_kind {
  FP_MOUNT_BIND,   /* SRC[:DST[:FLAGS]] */
  FP_MOUNT_TMPFS,  /* tmpfs:DST[:OPTION[+OPTION...]]: a tmpfs of the step's own */
  FP_MOUNT_UMOUNT, /* umount:DST: no mount at DST of those listed before (the site's, the
                      home, ...) */
};

struct fp_slurm_mount {
  enum fp_slurm_mount_kind kind;
  char *src, *dst; /* src: the bind mount's, else "tmpfs" or "umount" */
  int ro;
  char **options; /* the OCI mount options besides rbind and ro (nosuid, rprivate, ...); a
                     tmpfs's (size=, mode=, huge=, ...) */
};

/* Parses SRC:DST[:FLAG[+FLAG...]][,...] (FLAG: ro, rw, and pyxis's propagation and
 * nosuid/nodev/noexec flags), and pyxis's tmpfs:DST[:OPTIONS] and umount:DST, into *out
 * (n entries; free with fp_slurm_mounts_free).
 * what names the option for messages ("--fpull-mounts"). SRC and DST are absolute; a DST
 * with a ".." component is refused (runc keeps a symlink in DST inside the rootfs). */
int fp_slurm_mounts_parse(struct fp_slurm_mount **out, size_t *n, const char *what,
                          const char *spec, fpull_err *err);
void fp_slurm_mounts_free(struct fp_slurm_mount *m, size_t n);

/* spec with each relative SRC of a SRC:DST bind mount made absolute against dir (the
 * directory the job was submitted from, as pyxis resolves it): "." and "./" are dir, "./x"
 * and "x" are dir/x. The rest as it is (the parse checks it). Free the result. */
char *fp_slurm_mounts_resolve(const char *spec, const char *dir);

/* Checks the value of a --fpull-* option the way the submit commands do: FPULL_EUSAGE
 * naming the option as typed, with "did you mean" for a near miss. s may be NULL (no site
 * settings: features are checked against fpull's own names only). */
int fp_slurm_option_check(int opt, const char *value, const struct fp_slurm_settings *s,
                          fpull_err *err);

/* Whether an --fpull-image value names a SquashFS file (NAME.sqsh or NAME.squashfs). */
int fp_slurm_is_sqsh_name(const char *value);

/* --fpull-image=none: the step runs on the host (a batch job's step that names no other). */
int fp_slurm_image_is_none(const char *value);

/* The pull policy named by value, or -1. */
int fp_slurm_pull_parse(const char *value);

#endif
