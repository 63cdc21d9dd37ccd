/* fpull Slurm plugin: what the prolog and the user part ask of libfpull. */
#ifndef FPULL_SLURM_IMAGE_H
#define FPULL_SLURM_IMAGE_H

#include <fpull/error.h>

/* The plugin's arguments in plugstack.conf (see contrib/slurm/README or docs/cluster.md). */
struct fp_slurm_settings {
  char *cache_dir; /* cache_dir=: the node's (or the shared) cache the prolog fills */
  char *run_dir;   /* run_dir=: where job-private directories live */
  char *config;    /* config=: an fpull config file, or NULL for fpull's own search */
  char *data_dir;  /* data_dir=: where cputags.yaml is, or NULL for the installed one */
  int jobs;        /* jobs=: parallel downloads in the prolog; 0: fpull's default */
};

/* Parses "key=value" plugin arguments into s (which owns copies); unknown keys and bad
 * values are FPULL_EUSAGE naming them. */
int fp_slurm_settings_parse(struct fp_slurm_settings *s, int ac, char **av, fpull_err *err);
void fp_slurm_settings_free(struct fp_slurm_settings *s);

/* As root: downloads image's entry for this node (features NULL: this node's detected
 * features and the config's; else exactly these, as --features) into the cache, making
 * the cache root (0755) first so that users can read what the prolog fetched. *digest
 * gets the chosen manifest's digest (the caller frees it). */
int fp_slurm_prefetch(char **digest, const struct fp_slurm_settings *s, const char *image,
                      const char *features, fpull_err *err);

/* image pinned to digest (REGISTRY/REPO[:TAG]@DIGEST), or NULL when image does not parse.
 * The caller frees it. */
char *fp_slurm_pinned_ref(const char *image, const char *digest);

/* As the job's user: unpacks the same entry from the cache only (--offline) into dest, as
 * a plain rootfs or (bundle) as an OCI runtime bundle: dest/rootfs and dest/config.json. */
int fp_slurm_pull_offline(const struct fp_slurm_settings *s, const char *image,
                          const char *features, const char *dest, int bundle, fpull_err *err);

#endif
