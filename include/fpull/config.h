/* fpull: the YAML config file (fpull(1), CONFIGURATION). */
#ifndef FPULL_CONFIG_H
#define FPULL_CONFIG_H

#include "error.h"

struct fpull_mirror {
  char *registry; /* "docker.io", "127.0.0.1:5000" */
  char **urls;    /* tried in order, NULL-terminated */
};

struct fpull_user_tag {
  char *name;
  char *architecture; /* default "amd64" */
  char **isa;         /* NULL-terminated */
};

struct fpull_config {
  char *path; /* the file read, or NULL when none */
  char **platform_features;
  int detect; /* 1 unless "detect: false" */
  char **insecure_registries;
  struct fpull_mirror *mirrors;
  size_t n_mirrors;
  char *cache_dir;
  char **shared_caches; /* "shared-caches:", read-only, searched after cache_dir */
  char *certs_dir;
  struct fpull_user_tag *cpu_tags; /* "cpu-tags:" */
  size_t n_cpu_tags;
  int retries; /* "retries:", 0 when not set */
  /* Added in v3. */
  char **site_features; /* "site-features:": names this site uses beyond fpull's own */
  /* Added in v5. */
  uint64_t max_unpacked;  /* "max-unpacked:" (a size, as --max-unpacked), 0 when not set */
  char *policy;           /* "policy:": containers-policy.json, before the ones found */
  int require_signatures; /* "require-signatures:": an image no signature accepts is exit 9 */
};

/* Reads path, or when path is NULL: $FPULL_CONFIG, ~/.config/fpull/config.yaml
 * ($XDG_CONFIG_HOME/fpull/config.yaml when that is set), /etc/fpull/config.yaml (first
 * that exists; none is an empty config). A set, non-empty $FPULL_CONFIG is the only
 * candidate: when its file is missing the config is empty (so jobs and tests can say
 * "this file or nothing"). An explicit path that is missing, and any file that is
 * malformed or has a value of the wrong type, is FPULL_EUSAGE naming the file, line and
 * column. Unknown keys are warnings. "~/" in cache-dir and certs-dir means $HOME. */
FPULL_API int fpull_config_load(struct fpull_config **out, const char *path, fpull_err *err);
/* Parses YAML text (for tests and fuzzing); name is used in messages. */
FPULL_API int fpull_config_parse(struct fpull_config **out, const char *text, size_t len,
                                 const char *name, fpull_err *err);
FPULL_API void fpull_config_free(struct fpull_config *c);
/* The mirrors configured for registry (NULL-terminated, owned by c) or NULL. Docker Hub's
 * names (docker.io, index.docker.io, registry-1.docker.io) share one entry. */
FPULL_API char *const *fpull_config_mirrors(const struct fpull_config *c, const char *registry);
/* 1 when hostport is listed in insecure-registries: exactly (case-insensitive), as a
 * host without a port (any port), as an http(s):// URL, or inside an IPv4 CIDR entry.
 * Loopback addresses are not implied here (that is the registry client's rule). */
FPULL_API int fpull_config_is_insecure(const struct fpull_config *c, const char *hostport);

#endif
