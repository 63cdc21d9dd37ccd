/* fpull-slurm-runner: what every stage of the runner shares (see stage.h). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fpull/ref.h>

#include "common/run.h"
#include "stage.h"

void fp_runner_send_rec(struct fp_buf *recs, char kind, const char *value)
{
  fp_buf_append(recs, &kind, 1);
  fp_buf_append(recs, value, strlen(value) + 1);
}

int fp_runner_run(char *const argv[], char *const envp[], struct fp_buf *out, int quiet)
{
  return fp_slurm_run_to(argv, envp, out, quiet, NULL, NULL);
}

int fp_runner_dir_writable(const char *p)
{
  struct stat st;
  return p && p[0] == '/' && stat(p, &st) == 0 && S_ISDIR(st.st_mode) && access(p, W_OK) == 0;
}

/* The options every fpull the step runs shares: the site's config and the user's cache. */
size_t fp_runner_common_args(const struct runner *rn, const char **argv, size_t n)
{
  if (rn->r->s->config) {
    argv[n++] = "--config";
    argv[n++] = rn->r->s->config;
  }
  if (rn->cache[0]) {
    argv[n++] = "--cache-dir";
    argv[n++] = rn->cache;
  }
  /* The site's policy for every pull of every step: no option of the user's replaces it.
   * It applies as the site wrote it: a scope it accepts anything from stays the site's
   * choice (fpull's --require-signatures would refuse it, contract v6). */
  if (rn->r->s->policy) {
    argv[n++] = "--policy";
    argv[n++] = rn->r->s->policy;
  }
  return n;
}

/* IMAGE pinned to digest, so that every later run reads the entry the step runs. NULL
 * when IMAGE does not parse. */
char *fp_runner_pinned_ref(const char *image, const char *digest)
{
  struct fpull_ref *ref = NULL;
  char *pinned = NULL;
  if (fpull_ref_parse(&ref, image, NULL) == 0) {
    /* With a tag and a digest the digest wins (contract); the tag stays for messages. */
    free(ref->digest);
    ref->digest = fp_xstrdup(digest);
    pinned = fpull_ref_format(ref);
  }
  fpull_ref_free(ref);
  return pinned;
}
