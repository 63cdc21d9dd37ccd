/* fpull-libapi: the library as a program uses it, with no CLI in between.
 *   fpull-libapi inspect IMAGE   fpull_inspect with no cache directory, insecure; prints
 *                                "chosen DIGEST" and exits 0, or the message and its code
 *   fpull-libapi prune CACHE SIZE  fpull_cache_prune with a size limit, as the Slurm plugin
 *                                keeps a node cache small: prints each removed reference and
 *                                "size BYTES", or the message and its code
 * Only public headers: what works here works for any program linking libfpull. */
#include <fpull/fpull.h>
#include <stdio.h>
#include <string.h>

static void print_log(void *ud, int level, const char *msg)
{
  (void)ud;
  (void)level;
  fprintf(stderr, "log: %s\n", msg);
}

static int inspect(const char *image)
{
  fpull_err err = {0};
  struct fpull_tagdb *db = NULL;
  struct fpull_target *t = NULL;
  struct fpull_inspect_result *r = NULL;
  int rc = fpull_tagdb_load(&db, NULL, NULL, &err);
  if (rc == 0) {
    struct fpull_target_opts to = FPULL_TARGET_OPTS_INIT;
    to.platform = "linux/amd64";
    to.tagdb = db;
    rc = fpull_target_build(&t, &to, &err);
  }
  if (rc == 0) {
    struct fpull_pull_opts o = FPULL_PULL_OPTS_INIT;
    o.target = t;
    o.tagdb = db;
    o.insecure = 1; /* cache_dir stays NULL: inspect needs none */
    rc = fpull_inspect(&r, image, &o, &err);
  }
  if (rc == 0 && r->match->chosen >= 0)
    printf("chosen %s\n", r->entries[r->match->chosen].digest);
  else if (rc == 0)
    printf("chosen none\n");
  else
    fprintf(stderr, "%s\n", err.msg);
  fpull_inspect_result_free(r);
  fpull_target_free(t);
  fpull_tagdb_free(db);
  return rc;
}

static int prune(const char *dir, const char *size)
{
  fpull_err err = {0};
  struct fpull_cache_prune_opts o = FPULL_CACHE_PRUNE_OPTS_INIT;
  struct fpull_cache_prune_result *r = NULL;
  int rc = fpull_cache_parse_size(&o.max_size, size, &err);
  if (rc == 0)
    rc = fpull_cache_prune(&r, dir, &o, &err);
  if (rc == 0) {
    for (size_t i = 0; r->removed[i]; i++)
      printf("removed %s\n", r->removed[i]);
    printf("size %llu\n", (unsigned long long)r->size);
  } else {
    fprintf(stderr, "%s\n", err.msg);
  }
  fpull_cache_prune_result_free(r);
  return rc;
}

int main(int argc, char **argv)
{
  fpull_log_set(print_log, NULL);
  if (argc == 3 && strcmp(argv[1], "inspect") == 0)
    return inspect(argv[2]);
  if (argc == 4 && strcmp(argv[1], "prune") == 0)
    return prune(argv[2], argv[3]);
  fprintf(stderr, "usage: fpull-libapi inspect IMAGE\n");
  return 2;
}
