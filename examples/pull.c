/* Pulls IMAGE into DEST with libfpull, choosing the index entry for this node as
 * `fpull pull IMAGE DEST` does, and prints the reference, the chosen manifest's digest
 * and its number of layers. The same program is in fpull(1), LIBRARY.
 *
 *   cc pull.c $(pkg-config --cflags --libs fpull) -o pull
 *   ./pull docker.io/library/alpine:3.20 ./alpine
 */
#include <stdio.h>

#include <fpull/fpull.h>

int main(int argc, char **argv)
{
  if (argc != 3) {
    fprintf(stderr, "usage: %s IMAGE DEST\n", argv[0]);
    return FPULL_EUSAGE;
  }
  fpull_err err = {0};
  struct fpull_config *config = NULL; /* $FPULL_CONFIG, ~/.config/fpull, /etc/fpull */
  struct fpull_tagdb *tagdb = NULL;   /* the CPU tag table fpull ships */
  struct fpull_target *target = NULL; /* this node: CPU, GPUs, CUDA, as detected */
  struct fpull_pull_result *res = NULL;
  int rc = fpull_config_load(&config, NULL, &err);
  if (rc == 0)
    rc = fpull_tagdb_load(&tagdb, NULL, config, &err);
  if (rc == 0) {
    struct fpull_target_opts to = FPULL_TARGET_OPTS_INIT;
    to.config = config;
    to.tagdb = tagdb;
    rc = fpull_target_build(&target, &to, &err);
  }
  if (rc == 0) {
    struct fpull_pull_opts o = FPULL_PULL_OPTS_INIT;
    o.config = config;
    o.target = target;
    o.tagdb = tagdb;
    /* o.cache_dir left NULL: the CLI's cache ($FPULL_CACHE, else ~/.cache/fpull). */
    rc = fpull_pull(&res, argv[1], argv[2], &o, &err);
  }
  if (rc == 0)
    printf("%s %s %zu\n", res->reference, res->manifest_digest, res->layers);
  else
    fprintf(stderr, "pull: %s\n", err.msg); /* one line; rc is fpull(1)'s exit code */
  fpull_pull_result_free(res);
  fpull_target_free(target);
  fpull_tagdb_free(tagdb);
  fpull_config_free(config);
  return rc;
}
