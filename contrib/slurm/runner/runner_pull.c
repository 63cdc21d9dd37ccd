/* fpull-slurm-runner: fpull's pull under the step's pull policy (always, missing, newer,
 * never; the cache when the registry is down), what of its output reaches the step, the
 * line that says what the node chose, and --fpull-save. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <fpull/cache.h>
#include <fpull/config.h>
#include <fpull/ref.h>

#include "common/job_pin.h"
#include "common/run.h"
#include "runner_pull.h"
#include "stage.h"

/* pull_newer's own code for a pull that ran out of pull_timeout= with nothing cached to
 * run instead (beyond fpull's codes, which fit in 8 bits). */
#define FP_RUNNER_TIMED_OUT 0x100

/* What of the pull's stderr reaches the step's. With --fpull-quiet, fpull's errors only;
 * by default also the progress lines of a pull slow enough to print them (one every few
 * seconds), but not the first and last lines of every pull: the line that says what this
 * node chose is enough. The container runs no command of the image's: a warning that the
 * image names none would only mislead. */
static int keep_quiet(const char *line)
{
  return strncmp(line, "fpull: ", 7) == 0 && !strstr(line, "neither Entrypoint nor Cmd");
}

static int keep_default(const char *line)
{
  return keep_quiet(line) || (strstr(line, " downloaded, ") && !strstr(line, ": done: "));
}

/* fpull pull --format bundle (or rn->format) as the user; the --json result into out. */
static int pull_once(struct runner *rn, int offline, int quiet, struct fp_buf *out)
{
  const struct fp_slurm_request *r = rn->r;
  char jobs[16];
  snprintf(jobs, sizeof jobs, "%d", r->s->jobs);
  const char *argv[32];
  size_t n = 0;
  argv[n++] = r->s->fpull;
  argv[n++] = rn->inspect ? "inspect" : "pull";
  argv[n++] = "--json";
  char format[32];
  snprintf(format, sizeof format, "--format=%s", rn->format ? rn->format : "bundle");
  if (!rn->inspect) {
    argv[n++] = format;
    argv[n++] = "--progress=lines";
    argv[n++] = "--force";
  }
  if (offline)
    argv[n++] = "--offline";
  n = fp_runner_common_args(rn, argv, n);
  if (r->features) {
    argv[n++] = "--features";
    argv[n++] = r->features;
  }
  if (r->s->jobs && !rn->inspect) {
    argv[n++] = "--jobs";
    argv[n++] = jobs;
  }
  char max[48];
  if (r->s->max_unpacked && !rn->inspect) {
    snprintf(max, sizeof max, "--max-unpacked=%lluB", r->s->max_unpacked);
    argv[n++] = max;
  }
  argv[n++] = "--";
  argv[n++] = rn->pull_image;
  if (!rn->inspect)
    argv[n++] = rn->dest[0] ? rn->dest : rn->tree;
  argv[n] = NULL;
  out->len = 0;
  if (fp_slurm_run_timed_out())
    return FPULL_ENET;
  return fp_slurm_run_to((char *const *)argv, rn->envp, out, quiet, NULL,
                         r->quiet ? keep_quiet : keep_default);
}

/* How old the cached manifest is, for the outage warning. */
static void cached_age(const struct runner *rn, const char *digest, char *buf, size_t len)
{
  snprintf(buf, len, "unknown age");
  const char *hex = strchr(digest, ':');
  if (!hex)
    return;
  cleanup_free char *dir = NULL;
  if (rn->cache[0]) {
    dir = fp_xstrdup(rn->cache);
  } else {
    struct fpull_config *config = NULL;
    fpull_err ignored = {0};
    if (fpull_config_load(&config, rn->r->s->config, &ignored) == 0)
      dir = fpull_cache_resolve_dir(NULL, config);
    fpull_config_free(config);
  }
  struct stat st;
  cleanup_free char *p = dir ? fp_xasprintf("%s/blobs/sha256/%s", dir, hex + 1) : NULL;
  if (!p || stat(p, &st) != 0)
    return;
  long secs = (long)(time(NULL) - st.st_mtime);
  if (secs < 0)
    secs = 0;
  if (secs >= 86400)
    snprintf(buf, len, "%ldd%02ldh old", secs / 86400, secs / 3600 % 24);
  else if (secs >= 3600)
    snprintf(buf, len, "%ldh%02ldm old", secs / 3600, secs / 60 % 60);
  else
    snprintf(buf, len, "%ldm%02lds old", secs / 60, secs % 60);
}

/* fpull digest --index of the image (the index's digest, or the single manifest's): from
 * the cache with offline, else from the registry. 0 with digest set, or fpull's code. */
static int ask_digest(struct runner *rn, int offline, char *digest, size_t len)
{
  const char *argv[24];
  size_t n = 0;
  argv[n++] = rn->r->s->fpull;
  argv[n++] = "digest";
  argv[n++] = "--index";
  argv[n++] = "--json";
  if (offline)
    argv[n++] = "--offline";
  n = fp_runner_common_args(rn, argv, n);
  argv[n++] = "--";
  argv[n++] = rn->pull_image;
  argv[n] = NULL;
  struct fp_buf out = {0};
  digest[0] = '\0';
  int rc = fp_slurm_run_to((char *const *)argv, rn->envp, &out, 1, NULL, NULL);
  cJSON *j = rc == 0 ? cJSON_ParseWithLength(out.data ? out.data : "", out.len) : NULL;
  const char *d = cJSON_GetStringValue(cJSON_GetObjectItem(j, "digest"));
  if (rc == 0 && d && strlen(d) < len)
    snprintf(digest, len, "%s", d);
  else if (rc == 0)
    rc = FPULL_EFAIL;
  cJSON_Delete(j);
  fp_buf_free(&out);
  return rc;
}

/* newer: ask the registry, and run the cached image when it cannot answer. The registry
 * check of a cached image (the tag's digest) has its own deadline, check_timeout=, so that a
 * registry that accepts connections and never answers costs a cached step seconds; the
 * pull of what changed has pull_timeout=, and a cached image never fails for it (issue
 * 41.3). A reference with a digest needs no check: what the cache holds of it is that. */
static int pull_newer(struct runner *rn, struct fp_buf *out)
{
  const struct fp_slurm_settings *s = rn->r->s;
  const char *image = rn->pull_image;
  char cached[96] = "", now[96] = "", why[160] = "";
  int rc = 0, timed = 0;
  int unanswered = rn->r->pin && strcmp(rn->r->pin, FP_SLURM_PIN_UNANSWERED) == 0;
  if (!strchr(image, '@') && unanswered && ask_digest(rn, 1, cached, sizeof cached) == 0) {
    /* The job's submit waited for the registry already: no node waits again. */
    snprintf(why, sizeof why, "the registry did not answer the job's submit within %d seconds",
             s->check_timeout);
  } else if (!strchr(image, '@') && ask_digest(rn, 1, cached, sizeof cached) == 0 &&
             s->check_timeout) {
    fp_slurm_run_deadline_clear();
    fp_slurm_run_deadline((unsigned)s->check_timeout);
    rc = ask_digest(rn, 0, now, sizeof now);
    int late = fp_slurm_run_timed_out();
    fp_slurm_run_deadline_clear();
    if (late)
      snprintf(why, sizeof why, "the registry did not answer within %d seconds", s->check_timeout);
    else if (rc == FPULL_ENET)
      snprintf(why, sizeof why, "the registry cannot be reached");
    else if (rc)
      return pull_once(rn, 0, 0, out); /* fpull says why (credentials, a tag gone) */
  }
  cleanup_free char *pinned = now[0] ? fp_runner_pinned_ref(image, now) : NULL;
  if (!why[0]) {
    /* The tag as just checked: every later step of this node asks nothing more. */
    if (pinned)
      rn->pull_image = pinned;
    if (s->pull_timeout > 0)
      fp_slurm_run_deadline((unsigned)s->pull_timeout);
    rc = pull_once(rn, 0, 0, out);
    int late = fp_slurm_run_timed_out();
    fp_slurm_run_deadline_clear();
    rn->pull_image = image;
    timed = late;
    if (late)
      snprintf(why, sizeof why, "the pull took longer than pull_timeout=%d seconds",
               s->pull_timeout);
    else if (rc == FPULL_ENET)
      snprintf(why, sizeof why, "the registry cannot be reached");
    if (!why[0])
      return rc;
  }
  /* What was cached before the check, which recorded the tag's new digest. */
  cleanup_free char *before = cached[0] ? fp_runner_pinned_ref(image, cached) : NULL;
  if (before)
    rn->pull_image = before;
  rc = pull_once(rn, 1, 1, out);
  if (rc && !before && image != rn->r->image) {
    /* The job's pinned index is not cached here: the tag's, as this node last had it. */
    rn->pull_image = rn->r->image;
    rc = pull_once(rn, 1, 1, out);
  }
  rn->pull_image = image;
  if (rc != 0)
    return timed ? FPULL_ENET | FP_RUNNER_TIMED_OUT : FPULL_ENET;
  cJSON *j = cJSON_ParseWithLength(out->data ? out->data : "", out->len);
  const char *d = cJSON_GetStringValue(cJSON_GetObjectItem(j, "manifest_digest"));
  if (!d)
    d = cJSON_GetStringValue(cJSON_GetObjectItem(j, "chosen"));
  rn->went_offline = 1;
  char age[64];
  cached_age(rn, d ? d : "", age, sizeof age);
  fp_slurm_say("fpull: warning: %s: %s: running the cached %s (%s)", rn->r->image, why,
               d ? d : "image", age);
  cJSON_Delete(j);
  return 0;
}

/* The pull policy (settings.h) over fpull's exit codes. */
int fp_runner_pull(struct runner *rn, cJSON **result)
{
  struct fp_buf out = {0};
  int rc;
  rn->went_offline = 0;
  enum fp_slurm_pull policy = rn->offline_only ? FP_PULL_NEVER : rn->r->pull;
  /* The tag as the job resolved it (common/job_pin.h): no node asks for it again. */
  const char *image = rn->pull_image;
  cleanup_free char *pinned = rn->r->pin && fpull_digest_valid(rn->r->pin) &&
                                      image == rn->r->image &&
                                      (policy == FP_PULL_NEWER || policy == FP_PULL_ALWAYS)
                                  ? fp_runner_pinned_ref(image, rn->r->pin)
                                  : NULL;
  if (pinned)
    rn->pull_image = pinned;
  /* A registry that trickles cannot hold the job longer than the site allows (the job's
   * time limit bounds it anyway; the node is never at stake). */
  if (rn->r->s->pull_timeout > 0 && policy != FP_PULL_NEWER) {
    fp_slurm_run_deadline((unsigned)rn->r->s->pull_timeout);
  }
  switch (policy) {
  case FP_PULL_NEVER:
    rc = pull_once(rn, 1, 0, &out);
    rn->went_offline = 1;
    break;
  case FP_PULL_MISSING:
    rc = pull_once(rn, 1, 1, &out);
    rn->went_offline = rc == 0;
    if (rc != 0)
      rc = pull_once(rn, 0, 0, &out);
    break;
  case FP_PULL_NEWER:
    rc = pull_newer(rn, &out);
    break;
  default:
    rc = pull_once(rn, 0, 0, &out);
    break;
  }
  fp_slurm_run_deadline(0);
  if (fp_slurm_run_timed_out() || rc == (FPULL_ENET | FP_RUNNER_TIMED_OUT)) {
    fp_slurm_say("fpull: %s: the pull took longer than pull_timeout=%d seconds (exit 6: network or "
                 "registry failure, worth retrying)",
                 rn->r->image, rn->r->s->pull_timeout);
    rc = FPULL_ENET;
  }
  fp_slurm_run_deadline_clear();
  rn->pull_image = image;
  if (rc == 0) {
    *result = cJSON_ParseWithLength(out.data ? out.data : "", out.len);
    if (!*result)
      rc = FPULL_EFAIL;
  }
  fp_buf_free(&out);
  return rc;
}

/* The line saying what this node chose, on the step's stderr. */
void fp_runner_say_chosen(const struct runner *rn, const cJSON *res)
{
  if (rn->r->quiet)
    return;
  const char *d = cJSON_GetStringValue(cJSON_GetObjectItem(res, "manifest_digest"));
  const cJSON *pl = cJSON_GetObjectItem(res, "platform");
  char feats[1024] = "";
  size_t off = 0;
  const cJSON *f;
  cJSON_ArrayForEach(f, cJSON_GetObjectItem(pl, "features"))
  {
    const char *s = cJSON_GetStringValue(f);
    if (s && off + strlen(s) + 2 < sizeof feats)
      off += (size_t)snprintf(feats + off, sizeof feats - off, "%s%s", off ? "," : "", s);
  }
  const char *os = cJSON_GetStringValue(cJSON_GetObjectItem(pl, "os"));
  const char *arch = cJSON_GetStringValue(cJSON_GetObjectItem(pl, "architecture"));
  /* The deciding rule, as fpull inspect says it (pull --json's why). */
  const char *why = cJSON_GetStringValue(cJSON_GetObjectItem(res, "why"));
  int single = cJSON_IsNull(cJSON_GetObjectItem(res, "index_digest"));
  fp_slurm_say(
      "fpull: %s: %s (%s/%s%s%s, %s%s%s)", rn->r->image, d ? d : "?", os ? os : "?",
      arch ? arch : "?", feats[0] ? " " : "", feats,
      single ? "the only entry"
             : (rn->r->features ? "the entry for --fpull-features" : "the entry for this node"),
      single ? "" : ": ", single ? "" : (why ? why : "the only one that fits"));
}

/* --fpull-save: the entry the step runs, as a SquashFS file, from the cache (the pull just
 * filled it) and as the user. Said, not fatal, when it cannot be written: the step runs. */
/* Where a node writes its entry under --fpull-save=PATH in a step of several nodes: PATH
 * with ".SHORT" (the manifest digest's first 12 hex digits) before its ".sqsh", or after it
 * when it has none. Caller frees. */
char *fp_runner_save_path(const char *save, const char *digest)
{
  const char *hex = strchr(digest, ':');
  hex = hex ? hex + 1 : digest;
  size_t n = strlen(save);
  int ext = n > 5 && strcmp(save + n - 5, ".sqsh") == 0;
  return fp_xasprintf("%.*s.%.12s%s", (int)(ext ? n - 5 : n), save, hex, ext ? ".sqsh" : "");
}

/* In a step of several nodes, one node per entry writes its file: the first to hold
 * DIR/.NAME.lock (the others of that kind go on at once), and none when that lock file says
 * this step wrote it already. 1 when this node writes (*lock_fd held until then), else 0. */
static int save_claim(const struct runner *rn, const char *path, int *lock_fd)
{
  const char *slash = strrchr(path, '/');
  cleanup_free char *lockp = fp_xasprintf("%.*s/.%s.lock", (int)(slash - path), path, slash + 1);
  int fd = open(lockp, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (fd >= 0)
      close(fd);
    return fd >= 0 ? 0 : 1; /* no lock to be had (a read-only directory): the pull says */
  }
  char done[64] = "";
  ssize_t got = pread(fd, done, sizeof done - 1, 0);
  done[got > 0 ? got : 0] = '\0';
  if (strcmp(done, rn->step) == 0 && access(path, F_OK) == 0) {
    close(fd);
    return 0;
  }
  *lock_fd = fd;
  return 1;
}

void fp_runner_save(struct runner *rn, const char *digest, const char *index_digest)
{
  const struct fp_slurm_request *r = rn->r;
  /* Pinned to the index where there is one, with this node's features, so that the file
   * records the index it was chosen from; the entry is the one this node runs. */
  cleanup_free char *pinned = fp_runner_pinned_ref(r->image, index_digest ? index_digest : digest);
  if (!pinned)
    return;
  int several = r->save_nodes > 1;
  cleanup_free char *path = several ? fp_runner_save_path(r->save, digest) : fp_xstrdup(r->save);
  int lock_fd = -1;
  if (several && !save_claim(rn, path, &lock_fd))
    return;
  const char *argv[28];
  size_t n = 0;
  argv[n++] = r->s->fpull;
  argv[n++] = "pull";
  argv[n++] = "--format=squashfs";
  argv[n++] = "--offline";
  argv[n++] = "--force";
  argv[n++] = "--quiet";
  argv[n++] = "--json";
  char max[48];
  if (r->s->max_unpacked) {
    snprintf(max, sizeof max, "--max-unpacked=%lluB", r->s->max_unpacked);
    argv[n++] = max;
  }
  n = fp_runner_common_args(rn, argv, n);
  if (r->features) {
    argv[n++] = "--features";
    argv[n++] = r->features;
  }
  argv[n++] = "--";
  argv[n++] = pinned;
  argv[n++] = path;
  argv[n] = NULL;
  struct fp_buf out = {0};
  int rc = fp_runner_run((char *const *)argv, rn->envp, &out, 0);
  cJSON *res = rc == 0 ? cJSON_ParseWithLength(out.data ? out.data : "", out.len) : NULL;
  fp_buf_free(&out);
  const char *got = cJSON_GetStringValue(cJSON_GetObjectItem(res, "manifest_digest"));
  if (rc == 0 && (!got || strcmp(got, digest) != 0)) {
    /* Never a file of another entry than the one this node ran. */
    unlink(path);
    rc = FPULL_EFAIL;
  }
  cJSON_Delete(res);
  if (rc)
    fp_slurm_say("fpull: warning: --fpull-save=%s: not saved (exit %d)", path, rc);
  cleanup_free char *entry = fp_runner_pinned_ref(r->image, digest);
  if (!rc && !r->quiet)
    fp_slurm_say("fpull: saved %s to %s%s", entry, path,
                 several ? " (this node's entry: a step of several nodes saves one file per entry)"
                         : "");
  if (lock_fd >= 0) {
    if (rc == 0 && ftruncate(lock_fd, 0) == 0 && pwrite(lock_fd, rn->step, strlen(rn->step), 0) < 0)
      fp_slurm_say("fpull: warning: %s: %s", path, strerror(errno));
    close(lock_fd);
  }
}

/* --fpull-entrypoint: the chosen entry's Entrypoint, from its image config (fpull config,
 * from the cache the pull just filled), as N records. */
/* The chosen entry's image configuration (fpull config, from the cache the pull just
 * filled), or NULL after saying why (what: the option that needs it). */
cJSON *fp_runner_image_config(const struct runner *rn, const char *digest, const char *what,
                              int *rc)
{
  const struct fp_slurm_request *r = rn->r;
  cleanup_free char *pinned = fp_runner_pinned_ref(r->image, digest);
  *rc = FPULL_EFAIL;
  if (!pinned)
    return NULL;
  const char *argv[20];
  size_t n = 0;
  argv[n++] = r->s->fpull;
  argv[n++] = "config";
  argv[n++] = "--offline";
  n = fp_runner_common_args(rn, argv, n);
  argv[n++] = "--";
  argv[n++] = pinned;
  argv[n] = NULL;
  struct fp_buf out = {0};
  int run_rc = fp_runner_run((char *const *)argv, rn->envp, &out, 0);
  cJSON *cfg = run_rc == 0 ? cJSON_ParseWithLength(out.data ? out.data : "", out.len) : NULL;
  fp_buf_free(&out);
  if (!cfg) {
    fp_slurm_say("fpull: %s: %s: the image's configuration cannot be read", r->image, what);
    *rc = run_rc ? run_rc : FPULL_EFAIL;
  }
  return cfg;
}

int fp_runner_send_entrypoint(const struct runner *rn, const char *digest, struct fp_buf *info)
{
  int rc;
  cJSON *cfg = fp_runner_image_config(rn, digest, "--fpull-entrypoint", &rc);
  if (!cfg)
    return rc;
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(cJSON_GetObjectItem(cfg, "config"), "Entrypoint"))
  {
    if (cJSON_IsString(e))
      fp_runner_send_rec(info, 'N', e->valuestring);
  }
  cJSON_Delete(cfg);
  return 0;
}
