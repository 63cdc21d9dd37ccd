/* fpull-slurm-runner: where the container's tree comes from besides a plain pull: a
 * SquashFS file (mounted or unpacked, its config read back), --fpull-format=squashfs, a
 * named container (--fpull-name), the user's node store (store_max=) with a layer of the
 * step's own over the kept image, or the site's SquashFS store (sqsh_store=) mounted. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <fpull/cache.h>
#include <fpull/config.h>
#include <fpull/features.h>
#include <fpull/manifest.h>
#include <fpull/ref.h>

#include "common/run.h"
#include "sqsh_config.h"
#include "sqsh_mount.h"
#include "sqsh_store.h"
#include "store.h"
#include "runner_image.h"
#include "runner_pull.h"
#include "runner_runtime.h"
#include "runner_spec.h"
#include "stage.h"

/* The bundle's config.json (what write_spec reads of the image) for an image that came as
 * a SquashFS file, not as fpull's bundle. 0, or -1 after saying why. */
static int write_bundle_config(const struct runner *rn, const char *text)
{
  cleanup_free char *config = fp_xasprintf("%s/config.json", rn->bundle);
  size_t n = strlen(text);
  int fd = open(config, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  int ok = fd >= 0 && write(fd, text, n) == (ssize_t)n;
  if (fd >= 0 && close(fd) < 0)
    ok = 0;
  if (!ok) {
    fp_slurm_say("fpull: %s: %s", config, strerror(errno));
    return -1;
  }
  return 0;
}

/* The bundle's config.json for a .sqsh image: the image config its enroot files keep
 * (sqsh_config.h), each file that cannot be used said in one line; the default PATH, /
 * and no Entrypoint where they keep none. --fpull-entrypoint: its Entrypoint as N records.
 * FPULL_IMAGE_DIGEST stays empty: the file's provenance line is no digest of what runs, and
 * anyone who can write the file can change it. 0, or -1 after saying why. */
static int sqsh_config(const struct runner *rn, const char *rootfs, struct fp_buf *info)
{
  const struct fp_slurm_request *r = rn->r;
  struct fp_slurm_sqsh_config c;
  fpull_err env_err = {0}, rc_err = {0};
  cleanup_close int root = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0)
    fp_slurm_say("fpull: warning: %s: %s: %s: the image's config is not read", r->image, rootfs,
                 strerror(errno));
  fp_slurm_sqsh_config_read(&c, root, &env_err, &rc_err);
  if (env_err.code)
    fp_slurm_say("fpull: warning: %s: %s: the image's Env is not used", r->image, env_err.msg);
  if (rc_err.code)
    fp_slurm_say("fpull: warning: %s: %s: the image's WorkingDir and Entrypoint are not used",
                 r->image, rc_err.msg);
  for (size_t i = 0; c.host_refs && c.host_refs[i]; i++)
    fp_slurm_say("fpull: warning: %s: /etc/environment: %s takes the host's ${VAR}, which only "
                 "enroot start substitutes: not set",
                 r->image, c.host_refs[i]);
  if (r->entrypoint && !c.has_rc && !rc_err.code)
    fp_slurm_say("fpull: %s: --fpull-entrypoint: the SquashFS file has no /etc/rc (enroot's "
                 "command script), so no Entrypoint: the command runs as given",
                 r->image);
  for (size_t i = 0; r->entrypoint && c.entrypoint && c.entrypoint[i]; i++)
    fp_runner_send_rec(info, 'N', c.entrypoint[i]);
  cJSON *spec = cJSON_CreateObject();
  cJSON *proc = cJSON_AddObjectToObject(spec, "process");
  cJSON_AddStringToObject(proc, "cwd", c.workdir ? c.workdir : "/");
  cJSON *env = cJSON_AddArrayToObject(proc, "env");
  int has_path = 0;
  for (size_t i = 0; c.env && c.env[i]; i++) {
    has_path |= strncmp(c.env[i], "PATH=", 5) == 0;
    cJSON_AddItemToArray(env, cJSON_CreateString(c.env[i]));
  }
  if (!has_path)
    cJSON_AddItemToArray(env, cJSON_CreateString(DEFAULT_PATH));
  fp_slurm_sqsh_config_free(&c);
  cleanup_free char *text = cJSON_PrintUnformatted(spec);
  cJSON_Delete(spec);
  return text ? write_bundle_config(rn, text) : -1;
}

/* The entry a record names, for messages: "linux/amd64/v3 x86-64-v3,avx2, manifest
 * sha256:0123456789ab". */
static char *entry_words(const struct fpull_platform *p, const char *digest)
{
  struct fp_buf b = {0};
  cleanup_free char *head = fp_xasprintf("%s/%s%s%s", p->os, p->architecture, p->variant ? "/" : "",
                                         p->variant ? p->variant : "");
  fp_buf_append(&b, head, strlen(head));
  for (size_t i = 0; p->features && p->features[i]; i++) {
    fp_buf_append(&b, i ? "," : " ", 1);
    fp_buf_append(&b, p->features[i], strlen(p->features[i]));
  }
  const char *colon = strchr(digest, ':');
  cleanup_free char *tail =
      fp_xasprintf(", manifest %.*s", colon ? (int)(colon - digest) + 13 : 19, digest);
  fp_buf_append(&b, tail, strlen(tail) + 1);
  return b.data;
}

/* The recorded index from the cache (verified by its digest), and the entry this node would
 * choose in it: said in one line when it is not the file's. Nothing when the cache lacks
 * the index. */
static void sqsh_better_entry(const struct runner *rn, const struct fp_sqfs_platform *rec,
                              const struct fpull_target *t, const struct fpull_tagdb *db,
                              const struct fpull_config *config)
{
  const char *hex = strchr(rec->index_digest, ':');
  cleanup_free char *dir =
      rn->cache[0] ? fp_xstrdup(rn->cache) : fpull_cache_resolve_dir(NULL, config);
  if (!dir || !hex)
    return;
  cleanup_free char *path = fp_xasprintf("%s/blobs/%.*s/%s", dir, (int)(hex - rec->index_digest),
                                         rec->index_digest, hex + 1);
  cleanup_free char *data = NULL;
  size_t len = 0;
  if (fp_read_file(path, 4u << 20, &data, &len) != 0)
    return;
  cleanup_free char *got = fpull_digest_of(data, len);
  struct fpull_index *idx = NULL;
  fpull_err err = {0};
  if (!got || strcmp(got, rec->index_digest) != 0 ||
      fpull_index_parse(&idx, data, len, NULL, &err) != 0)
    return;
  struct fpull_match *m = NULL;
  if (fpull_match_entries(&m, t, idx->manifests, idx->n_manifests, db, &err) == 0 &&
      m->chosen >= 0 && idx->manifests[m->chosen].platform &&
      /* A nested index's entry would need the index followed: not said. */
      fpull_media_type_kind(idx->manifests[m->chosen].media_type) == 1 &&
      strcmp(idx->manifests[m->chosen].digest, rec->manifest_digest) != 0) {
    cleanup_free char *better =
        entry_words(idx->manifests[m->chosen].platform, idx->manifests[m->chosen].digest);
    cleanup_free char *mine = entry_words(&rec->platform, rec->manifest_digest);
    fp_slurm_say("fpull: %s: this node would choose another entry of its index %s: %s "
                 "(the file holds %s; run the image by its reference for this node's build)",
                 rn->r->image, rec->index_digest, better, mine);
  }
  fpull_match_free(m);
  fpull_index_free(idx);
}

/* The entry a .sqsh was made from (/.fpull/platform.json, sqsh_config.h) against this node's
 * target, built as a pull here builds it (the site's config, --fpull-features): a node that
 * does not cover its platform and features refuses the file as a pull refuses the entry
 * (exit 3); one that covers it says in one line when it would choose another entry of the
 * recorded index, and runs it. A file without the record (enroot, pyxis, mksquashfs) runs as
 * before; a record that cannot be used is said, not trusted. 0 or the exit code. */
static int sqsh_platform_check(const struct runner *rn, int root)
{
  const struct fp_slurm_request *r = rn->r;
  struct fp_sqfs_platform rec;
  fpull_err err = {0};
  int got = fp_slurm_sqsh_platform_read(&rec, root, &err);
  if (got < 0)
    fp_slurm_say("fpull: warning: %s: %s: not checked against this node's features", r->image,
                 err.msg);
  if (got <= 0)
    return 0;
  struct fpull_config *config = NULL;
  struct fpull_tagdb *db = NULL;
  struct fpull_target *t = NULL;
  struct fpull_match *m = NULL;
  int rc = 0;
  struct fpull_target_opts o = FPULL_TARGET_OPTS_INIT;
  if (fpull_config_load(&config, r->s->config, &err) == 0 &&
      fpull_tagdb_load(&db, NULL, config, &err) == 0) {
    o.features = r->features;
    o.config = config;
    o.tagdb = db;
  }
  struct fpull_descriptor d = {.media_type = "application/vnd.oci.image.manifest.v1+json",
                               .digest = rec.manifest_digest,
                               .platform = &rec.platform};
  if (!db || fpull_target_build(&t, &o, &err) != 0 ||
      fpull_match_entries(&m, t, &d, 1, db, &err) != 0) {
    fp_slurm_say("fpull: warning: %s: the entry it was made from is not checked against this "
                 "node's features: %s",
                 r->image, err.msg);
  } else if (!m->entries[0].eligible) {
    cleanup_free char *what = entry_words(&rec.platform, rec.manifest_digest);
    fp_slurm_say("fpull: %s: made from the entry %s, which this node%s does not cover: %s "
                 "(exit 3)",
                 r->image, what, r->features ? " with --fpull-features" : "",
                 m->entries[0].why ? m->entries[0].why : "not eligible");
    rc = FPULL_ENOMATCH;
  } else if (rec.index_digest) {
    sqsh_better_entry(rn, &rec, t, db, config);
  }
  fpull_match_free(m);
  fpull_target_free(t);
  fpull_tagdb_free(db);
  fpull_config_free(config);
  fp_sqfs_platform_free(&rec);
  return rc;
}

/* --fpull-image=/path/file.sqsh (made by fpull pull --format squashfs, enroot import or
 * mksquashfs): mounted, or extracted as the user into the step's rootfs with unsquashfs (a
 * copy per step), and run with the image config its enroot files keep (sqsh_config). */
int fp_runner_from_squashfs(struct runner *rn, struct fp_buf *info)
{
  const struct fp_slurm_request *r = rn->r;
  cleanup_free char *rootfs = fp_xasprintf("%s/rootfs", rn->bundle);
  if (mkdir(rn->bundle, 0700) < 0 && errno != EEXIST) {
    fp_slurm_say("fpull: %s: %s", rn->bundle, strerror(errno));
    return FPULL_EFAIL;
  }
  /* Mounted where the node can (no copy of the image per step), else unpacked. */
  rn->mounted = fp_slurm_sqsh_mountable();
  if (rn->mounted) {
    if (fp_slurm_sqsh_mount(r->image, rn->bundle, rn->envp) < 0)
      return FPULL_EFAIL;
  } else {
    char tool[PATH_MAX];
    const char *argv[] = {fp_runner_runtime_path("unsquashfs", tool, sizeof tool),
                          "-n",
                          "-no-xattrs",
                          "-d",
                          rootfs,
                          r->image,
                          NULL};
    int rc = fp_runner_run((char *const *)argv, rn->envp, NULL, 1);
    if (rc) {
      fp_slurm_say("fpull: %s: cannot be unpacked as a SquashFS file (unsquashfs: exit %d)",
                   r->image, rc);
      return rc == FPULL_EFAIL || rc == 127 ? FPULL_EFAIL : FPULL_EUNSAFE;
    }
  }
  cleanup_close int root = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
  int rc = sqsh_platform_check(rn, root);
  if (rc)
    return rc;
  if (!r->quiet)
    fp_slurm_say("fpull: %s (a SquashFS file, %s)", r->image,
                 rn->mounted ? "mounted with squashfuse" : "unpacked with unsquashfs");
  return sqsh_config(rn, rootfs, info) == 0 ? 0 : FPULL_EFAIL;
}

/* --fpull-format=squashfs: the entry pulled as one SquashFS file into the bundle and
 * mounted there (sqsh_mount.h); the bundle's config.json gets the image's Env and
 * WorkingDir, as fpull's bundle would have. *res: what say_chosen needs. */
int fp_runner_pull_squashfs(struct runner *rn, cJSON **res)
{
  if (mkdir(rn->bundle, 0700) < 0 && errno != EEXIST) {
    fp_slurm_say("fpull: %s: %s", rn->bundle, strerror(errno));
    return FPULL_EFAIL;
  }
  rn->format = "squashfs";
  snprintf(rn->dest, sizeof rn->dest, "%s/image.sqsh", rn->bundle);
  int rc = fp_runner_pull(rn, res);
  if (rc)
    return rc;
  const char *digest = cJSON_GetStringValue(cJSON_GetObjectItem(*res, "manifest_digest"));
  cJSON *cfg = digest ? fp_runner_image_config(rn, digest, "--fpull-format=squashfs", &rc) : NULL;
  if (!cfg)
    return digest ? rc : FPULL_EFAIL;
  const cJSON *c = cJSON_GetObjectItem(cfg, "config");
  cJSON *spec = cJSON_CreateObject();
  cJSON *proc = cJSON_AddObjectToObject(spec, "process");
  const char *wd = cJSON_GetStringValue(cJSON_GetObjectItem(c, "WorkingDir"));
  cJSON_AddStringToObject(proc, "cwd", wd && wd[0] == '/' ? wd : "/");
  cJSON *env = cJSON_AddArrayToObject(proc, "env");
  int has_path = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(c, "Env"))
  {
    const char *v = cJSON_GetStringValue(e);
    if (!v)
      continue;
    has_path |= strncmp(v, "PATH=", 5) == 0;
    cJSON_AddItemToArray(env, cJSON_CreateString(v));
  }
  if (!has_path)
    cJSON_AddItemToArray(env, cJSON_CreateString(DEFAULT_PATH));
  cJSON_Delete(cfg);
  cleanup_free char *text = cJSON_PrintUnformatted(spec);
  cJSON_Delete(spec);
  if (!text || write_bundle_config(rn, text) != 0)
    return FPULL_EFAIL;
  if (fp_slurm_sqsh_mount(rn->dest, rn->bundle, rn->envp) < 0)
    return FPULL_EFAIL;
  rn->mounted = 1;
  return 0;
}

/* --fpull-name=NAME: the container's tree (fpull's bundle layout: rootfs/, config.json) is
 * kept as it is left, for later steps of the job (container_scope=job: in the job's
 * directory, gone with the job) or of the user's later jobs on this node (global: in the
 * user's store directory). An existing name is run as it is, without a pull; its "digest"
 * file says what it was made from. NAME.lock: exclusive while the tree is made, shared
 * while a step runs in it, so that steps of one name run at once. Without an image (the
 * name alone), only an existing name runs. */
static int name_exists(const char *digestp, const char *config, char **digest)
{
  size_t len = 0;
  if (fp_read_file(digestp, 128, digest, &len) == 0 && access(config, F_OK) == 0) {
    (*digest)[strcspn(*digest, "\n")] = '\0';
    return 1;
  }
  free(*digest);
  *digest = NULL;
  return 0;
}

/* Under the site's policy= a kept container runs only when the image it names, pinned to
 * the digest it was made from, passes the policy now (fpull prefetch under the policy: the
 * signatures checked again, every blob hashed): a tree the user wrote into names/ by hand
 * names no image the policy admits. --fpull-name alone names no image to check. 0, or the
 * exit code after the step was told why. */
static int name_under_policy(struct runner *rn, const char *digest)
{
  const struct fp_slurm_request *r = rn->r;
  if (!r->image[0]) {
    fp_slurm_say("fpull: --fpull-name=%s: under the site's signature policy (%s) a kept "
                 "container runs only with the --fpull-image it was made from (exit 9)",
                 r->name, r->s->policy);
    return FPULL_EPOLICY;
  }
  cleanup_free char *pinned = digest ? fp_runner_pinned_ref(r->image, digest) : NULL;
  if (!pinned) {
    fp_slurm_say("fpull: --fpull-name=%s: no image digest recorded for it (exit 9)", r->name);
    return FPULL_EPOLICY;
  }
  const char *argv[24];
  size_t n = 0;
  argv[n++] = r->s->fpull;
  argv[n++] = "prefetch";
  argv[n++] = "-q";
  n = fp_runner_common_args(rn, argv, n);
  argv[n++] = "--";
  argv[n++] = pinned;
  argv[n] = NULL;
  return fp_runner_run((char *const *)argv, rn->envp, NULL, 0);
}

int fp_runner_from_name(struct runner *rn, cJSON **res, int *lock, int *reused)
{
  const struct fp_slurm_request *r = rn->r;
  cleanup_free char *base = r->s->container_scope_global
                                ? fp_xasprintf("%s/store/%u/names", r->s->run_dir, (unsigned)r->uid)
                                : fp_xasprintf("%s/%" PRIu32 "/names", r->s->run_dir, r->job_id);
  cleanup_free char *lockp = fp_xasprintf("%s/%s.lock", base, r->name);
  cleanup_free char *digestp = fp_xasprintf("%s/%s/digest", base, r->name);
  if ((mkdir(base, 0700) < 0 && errno != EEXIST) ||
      (size_t)snprintf(rn->tree, sizeof rn->tree, "%s/%s", base, r->name) >= sizeof rn->tree) {
    fp_slurm_say("fpull: %s: %s", base, strerror(errno));
    return FPULL_EFAIL;
  }
  cleanup_free char *config = fp_xasprintf("%s/config.json", rn->tree);
  char *digest = NULL;
  /* Shared first: a name that exists is run at once, beside the steps running in it; only
   * making it takes the lock alone (and looks again: another step may have made it). */
  int fd = open(lockp, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  int ok = fd >= 0 && flock(fd, LOCK_SH) == 0;
  int exists = ok && name_exists(digestp, config, &digest);
  if (ok && !exists && r->image[0]) {
    ok = flock(fd, LOCK_EX) == 0;
    exists = ok && name_exists(digestp, config, &digest);
  }
  if (!ok) {
    fp_slurm_say("fpull: %s: %s", lockp, strerror(errno));
    if (fd >= 0)
      close(fd);
    return FPULL_EFAIL;
  }
  if (!exists && !r->image[0]) {
    fp_slurm_say("fpull: --fpull-name=%s: no container of that name %s (the first step that "
                 "names it needs --fpull-image)",
                 r->name, r->s->container_scope_global ? "on this node" : "in this job");
    close(fd);
    return FPULL_ENOTFOUND;
  }
  int rc = 0;
  if (exists && r->s->policy && (rc = name_under_policy(rn, digest)) != 0) {
    free(digest);
    close(fd);
    return rc;
  }
  if (exists) {
    *reused = 1;
    *res = cJSON_CreateObject();
    cJSON_AddStringToObject(*res, "manifest_digest", digest);
    if (!r->quiet) {
      fp_slurm_say("fpull: container %s (%s) as the job's earlier steps left it", r->name, digest);
    }
    free(digest);
  } else {
    free(digest);
    snprintf(rn->dest, sizeof rn->dest, "%s", rn->tree);
    rc = fp_runner_pull(rn, res);
    const char *d =
        rc == 0 ? cJSON_GetStringValue(cJSON_GetObjectItem(*res, "manifest_digest")) : NULL;
    struct fp_buf b = {0};
    if (d)
      fp_buf_append(&b, d, strlen(d));
    if (rc == 0 && (!d || fp_runner_write_small(digestp, &b) != 0)) {
      fp_slurm_say("fpull: %s: %s", digestp, strerror(errno));
      rc = FPULL_EFAIL;
    }
    fp_buf_free(&b);
  }
  if (rc) {
    close(fd);
    return rc;
  }
  flock(fd, LOCK_SH);
  *lock = fd;
  /* A name kept across jobs counts towards store_max like a kept tree (its lock's mtime:
   * its last use). */
  if (r->s->container_scope_global && r->s->store_max) {
    futimens(fd, NULL);
    fp_slurm_store_trim(r->s->run_dir, r->uid, r->name,
                        fp_slurm_store_limit(r->s->store_max, r->s->run_dir));
  }
  return 0;
}

/* A kept tree is shared by the user's steps and jobs: each step writes into a layer of its
 * own over it (fuse-overlayfs, in the step's bundle, gone with the step). With
 * --fpull-readonly too: the runtime makes the mount points of the home, the batch script
 * and the site's mounts before it turns the root read-only, and they must land in the
 * step's layer. The tree stays as fpull unpacked it, and FPULL_IMAGE_DIGEST names what the
 * step runs. */
static int keep_pristine(struct runner *rn, const char *image)
{
  static char merged[PATH_MAX + 16];
  cleanup_free char *lower = fp_xasprintf("%s/rootfs", rn->tree);
  if (mkdir(rn->bundle, 0700) < 0 && errno != EEXIST) {
    fp_slurm_say("fpull: %s: %s", rn->bundle, strerror(errno));
    return FPULL_EFAIL;
  }
  if (fp_slurm_overlay_mount(lower, rn->bundle, rn->envp, image) < 0)
    return FPULL_EFAIL;
  snprintf(merged, sizeof merged, "%s/rootfs", rn->bundle);
  rn->rootfs = merged;
  rn->mounted = 1;
  return 0;
}

/* The entry this node chooses (fpull inspect, under the pull policy), as the pull of the
 * image would have said it: *res gets manifest_digest, index_digest, platform and why (what
 * say_chosen needs), *digest points into it. A later pull of the entry by its digest knows
 * neither the index nor why the entry was chosen. 0, or the exit code after saying why. */
static int resolve_entry(struct runner *rn, cJSON **res, const char **digest)
{
  const struct fp_slurm_request *r = rn->r;
  cJSON *ins = NULL;
  rn->inspect = 1;
  int rc = fp_runner_pull(rn, &ins);
  rn->inspect = 0;
  if (rc)
    return rc;
  rn->offline_only = rn->went_offline;
  const char *d = cJSON_GetStringValue(cJSON_GetObjectItem(ins, "chosen"));
  if (!d) {
    fp_slurm_say("fpull: %s: no entry of the image fits this node", r->image);
    cJSON_Delete(ins);
    return FPULL_ENOMATCH;
  }
  cJSON *o = cJSON_CreateObject();
  *digest = cJSON_GetStringValue(cJSON_AddStringToObject(o, "manifest_digest", d));
  cJSON_AddItemToObject(o, "index_digest",
                        cJSON_Duplicate(cJSON_GetObjectItem(ins, "index_digest"), 1));
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(ins, "entries"))
  {
    if (!cJSON_IsTrue(cJSON_GetObjectItem(e, "chosen")))
      continue;
    cJSON_AddItemToObject(o, "platform", cJSON_Duplicate(cJSON_GetObjectItem(e, "platform"), 1));
    cJSON_AddItemToObject(o, "why", cJSON_Duplicate(cJSON_GetObjectItem(e, "why"), 1));
  }
  cJSON_Delete(ins);
  *res = o;
  return 0;
}

/* With store_max=: resolves the entry, and unpacks it into the user's store only when it is
 * not there yet. *lock stays held (shared) for the step: no other job evicts the tree
 * meanwhile. *res: what say_chosen needs. */
int fp_runner_from_store(struct runner *rn, cJSON **res, int *lock)
{
  const struct fp_slurm_request *r = rn->r;
  cJSON *o = NULL;
  const char *d = NULL;
  int rc = resolve_entry(rn, &o, &d);
  if (rc)
    return rc;
  struct fp_slurm_store st;
  fpull_err err = {0};
  int kept = fp_slurm_store_claim(&st, r->s->run_dir, r->uid, d, &err);
  if (kept < 0) {
    fp_slurm_say("fpull: %s", err.msg);
    cJSON_Delete(o);
    return err.code == FPULL_ENOMATCH ? FPULL_ENOMATCH : FPULL_EFAIL;
  }
  if ((size_t)snprintf(rn->tree, sizeof rn->tree, "%s", st.tree) >= sizeof rn->tree) {
    fp_slurm_say("fpull: %s: path too long", st.tree);
    fp_slurm_store_release(&st);
    cJSON_Delete(o);
    return FPULL_EFAIL;
  }
  if (kept) {
    if (!r->quiet)
      fp_slurm_say("fpull: %s: %s is kept on this node: not unpacked again", r->image, d);
  } else {
    /* By the entry's digest alone: the tag names the index, not this entry. */
    cleanup_free char *pinned = fp_runner_pinned_ref(r->image, d);
    char *at = pinned ? strchr(pinned, '@') : NULL;
    struct fpull_ref *ref = NULL;
    if (at && fpull_ref_parse(&ref, pinned, NULL) == 0) {
      free(ref->tag);
      ref->tag = NULL;
      free(pinned);
      pinned = fpull_ref_format(ref);
    }
    fpull_ref_free(ref);
    rn->pull_image = pinned ? pinned : r->image;
    cJSON *pulled = NULL;
    rc = fp_runner_pull(rn, &pulled);
    cJSON_Delete(pulled);
    rn->pull_image = r->image;
    if (rc == 0)
      fp_slurm_store_filled(&st);
  }
  if (rc)
    cJSON_Delete(o);
  else
    *res = o;
  if (rc) {
    fp_slurm_store_release(&st);
    return rc;
  }
  *lock = fp_slurm_store_hold(&st, fp_slurm_store_limit(r->s->store_max, r->s->run_dir));
  return keep_pristine(rn, r->image);
}

/* The file in the site's SquashFS store holds the entry this node chose, as its record says:
 * a file put there under another entry's name is not run. 0, or the exit code after saying
 * why. */
static int store_file_check(const struct runner *rn, int root, const char *path, const char *digest)
{
  struct fp_sqfs_platform rec;
  fpull_err err = {0};
  int got = fp_slurm_sqsh_platform_read(&rec, root, &err);
  int same = got > 0 && strcmp(rec.manifest_digest, digest) == 0;
  if (!same) {
    cleanup_free char *what = got < 0    ? fp_xstrdup(err.msg)
                              : got == 0 ? fp_xstrdup("it records no entry")
                                         : fp_xasprintf("it was made from %s", rec.manifest_digest);
    fp_slurm_say("fpull: %s: %s: %s, not from the entry %s this node chose: not run (remove the "
                 "file: the next step converts the entry again)",
                 rn->r->image, path, what, digest);
  }
  if (got > 0)
    fp_sqfs_platform_free(&rec);
  return same ? 0 : FPULL_EFAIL;
}

/* Converts the entry digest into the store's s->tmp: fpull pull --format squashfs of the
 * image pinned to its index (so that the file records the index and the entry's platform),
 * which this node resolves to the same entry again; a file of another entry is never kept. */
static int store_convert(struct runner *rn, const struct fp_slurm_sqsh_store *s, const char *digest,
                         const char *index_digest)
{
  cleanup_free char *pinned =
      fp_runner_pinned_ref(rn->r->image, index_digest ? index_digest : digest);
  if (!pinned)
    return FPULL_EUSAGE;
  if ((size_t)snprintf(rn->dest, sizeof rn->dest, "%s", s->tmp) >= sizeof rn->dest) {
    fp_slurm_say("fpull: %s: path too long", s->tmp);
    rn->dest[0] = '\0';
    return FPULL_EFAIL;
  }
  rn->format = "squashfs";
  rn->pull_image = pinned;
  cJSON *pulled = NULL;
  int rc = fp_runner_pull(rn, &pulled);
  rn->pull_image = rn->r->image;
  rn->format = NULL;
  rn->dest[0] = '\0';
  const char *got = cJSON_GetStringValue(cJSON_GetObjectItem(pulled, "manifest_digest"));
  if (rc == 0 && (!got || strcmp(got, digest) != 0)) {
    fp_slurm_say("fpull: %s: the conversion chose %s, not %s: not kept", rn->r->image,
                 got ? got : "nothing", digest);
    rc = FPULL_EFAIL;
  }
  cJSON_Delete(pulled);
  return rc;
}

int fp_runner_from_sqsh_store(struct runner *rn, const char *dir, cJSON **res, struct fp_buf *info,
                              int *lock)
{
  const struct fp_slurm_request *r = rn->r;
  cJSON *o = NULL;
  const char *d = NULL;
  int rc = resolve_entry(rn, &o, &d);
  if (rc)
    return rc;
  if (mkdir(rn->bundle, 0700) < 0 && errno != EEXIST) {
    fp_slurm_say("fpull: %s: %s", rn->bundle, strerror(errno));
    cJSON_Delete(o);
    return FPULL_EFAIL;
  }
  struct fp_slurm_sqsh_store st;
  fpull_err err = {0};
  int kept = fp_slurm_sqsh_store_claim(&st, dir, d, r->node, &err);
  if (kept < 0) {
    fp_slurm_say("fpull: %s: %s", r->image, err.msg);
    cJSON_Delete(o);
    return FPULL_EFAIL;
  }
  if (!kept) {
    rc = store_convert(rn, &st, d, cJSON_GetStringValue(cJSON_GetObjectItem(o, "index_digest")));
    if (rc == 0 && fp_slurm_sqsh_store_filled(&st, &err) != 0) {
      fp_slurm_say("fpull: %s: %s", r->image, err.msg);
      rc = FPULL_EFAIL;
    }
    if (rc) {
      fp_slurm_sqsh_store_release(&st);
      cJSON_Delete(o);
      return rc;
    }
    if (!r->quiet)
      fp_slurm_say("fpull: %s: %s converted into %s, once for every node that chooses it", r->image,
                   d, st.path);
  } else if (!r->quiet) {
    fp_slurm_say("fpull: %s: %s from the SquashFS store (%s): mounted, not unpacked", r->image, d,
                 st.path);
  }
  cleanup_free char *rootfs = fp_xasprintf("%s/rootfs", rn->bundle);
  if (fp_slurm_sqsh_mount(st.path, rn->bundle, rn->envp) < 0) {
    fp_slurm_sqsh_store_release(&st);
    cJSON_Delete(o);
    return FPULL_EFAIL;
  }
  rn->mounted = 1;
  cleanup_close int root = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
  rc = store_file_check(rn, root, st.path, d);
  if (rc == 0 && sqsh_config(rn, rootfs, info) != 0)
    rc = FPULL_EFAIL;
  if (rc) {
    fp_slurm_sqsh_store_release(&st);
    cJSON_Delete(o);
    return rc;
  }
  *lock = fp_slurm_sqsh_store_hold(&st);
  if (r->s->sqsh_store_max)
    fp_slurm_sqsh_store_trim(dir, d + 7, r->s->sqsh_store_max);
  *res = o;
  return 0;
}
