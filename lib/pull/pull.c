/* pull, prefetch and inspect: the orchestration over registry, matching, cache and
 * unpack. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cache/cache_use.h"
#include "cache/cache_verified.h"
#include "unpack/dest.h"
#include "base/opts.h"
#include "resolve.h"
#include "sinks/layout.h"
#include "sinks/sqfs_config.h"
#include "space.h"
#include "base/util.h"
#include "fpull/config.h"
#include "fpull/match.h"
#include "fpull/unpack.h"

void fpull_pull_result_free(struct fpull_pull_result *r)
{
  if (!r)
    return;
  free(r->reference);
  free(r->index_digest);
  free(r->manifest_digest);
  fpull_platform_free(r->platform);
  free(r->rootfs);
  for (size_t i = 0; i < r->n_entries; i++) {
    free(r->entries[i].manifest_digest);
    fpull_platform_free(r->entries[i].platform);
  }
  free(r->entries);
  free(r->why);
  fpull_sig_check_free(r->signature);
  free(r);
}

static int check_layer_types(const struct fpull_manifest *m, fpull_err *err)
{
  for (size_t i = 0; i < m->n_layers; i++)
    if (fpull_layer_compression(m->layers[i].media_type) < 0)
      return fpull_err_set(err, FPULL_EUNSAFE, "layer %s: unsupported media type %s",
                           m->layers[i].digest, m->layers[i].media_type);
  return 0;
}

struct wait_ctx {
  struct fp_fetch *fetch;
  struct fpull_layer *layers;
  struct fpull_cache *cache;
};

/* Layer i is read from the descriptor its verification used, never re-opened by name. */
static int wait_layer(void *ud, size_t i, fpull_err *err)
{
  struct wait_ctx *w = ud;
  int rc = fp_fetch_wait(w->fetch, i, err);
  if (rc == 0) {
    int fd = fp_fetch_take_fd(w->fetch, i);
    if (fd <= 0)
      return fpull_err_set(err, FPULL_EFAIL, "layer %s: no verified descriptor",
                           w->layers[i].digest);
    w->layers[i].fd = fd;
    /* A blob of our own cache whose record holds the DiffID the config names, checked when
     * it was first unpacked, is not hashed again (lib/cache/cache_verified.h). */
    char known[FP_DIGEST_MAX];
    const char *want = w->layers[i].diff_id;
    if (want && fp_verified_diff_id(w->cache, w->layers[i].digest, fd, known) &&
        strcmp(known, want) == 0) {
      fp_debug("layer %s: DiffID %s trusted by its verified record, not hashed",
               w->layers[i].digest, want);
      w->layers[i].diff_id = NULL;
    }
    fp_fetch_note_unpack(w->fetch, i);
  }
  return rc;
}

/* Layer i is unpacked as soon as it is in the cache, while later layers download. */
static int unpack(struct fp_session *s, const struct fp_resolved *r, struct fp_fetch *fetch,
                  const char *dest, fpull_err *err)
{
  size_t n = r->manifest->n_layers;
  struct fpull_layer *layers = fp_xcalloc(n ? n : 1, sizeof *layers);
  char **paths = fp_xcalloc(n + 1, sizeof *paths);
  for (size_t i = 0; i < n; i++) {
    paths[i] = fpull_cache_blob_path(s->cache, r->manifest->layers[i].digest);
    layers[i] = (struct fpull_layer){.path = paths[i],
                                     .media_type = r->manifest->layers[i].media_type,
                                     .digest = r->manifest->layers[i].digest,
                                     .diff_id = r->config->diff_ids[i]};
  }
  struct wait_ctx wctx = {fetch, layers, s->cache};
  struct fpull_unpack_opts uo = s->opts->unpack;
  /* The config's max-unpacked: applies unless the caller gave a limit of its own (the CLI's
   * --max-unpacked 0 is FPULL_UNPACK_UNLIMITED). */
  if (!uo.max_unpacked && s->opts->config)
    uo.max_unpacked = s->opts->config->max_unpacked;
  uo.wait_layer = wait_layer;
  uo.wait_ud = &wctx;
  struct fpull_unpack_stats st = {0};
  /* A SquashFS file keeps the image's Env, WorkingDir and Entrypoint as enroot's import
   * does (sinks/sqfs_config.h): run later from the file alone, it runs as the image. */
  cleanup_free char *source = fp_sqfs_provenance(s->reference, r->manifest_digest);
  struct fp_sqfs_image img = {r->config_json,  r->config_len,      source,     s->reference,
                              r->index_digest, r->manifest_digest, r->platform};
  int rc = uo.format == FPULL_FORMAT_SQUASHFS
               ? fp_unpack_squashfs_image(dest, layers, n, &uo, &img, &st, err)
               : fpull_unpack_rootfs(dest, layers, n, &uo, &st, err);
  if (rc == 0 && uo.format == FPULL_FORMAT_SQUASHFS)
    fp_debug("%s: squashfs image %llu bytes, %llu bytes of data of files later removed "
             "(cut out)",
             s->reference, (unsigned long long)st.sqfs_image_bytes,
             (unsigned long long)st.sqfs_dead_bytes);
  /* The unpacker has warned about skipped device nodes itself. */
  if (rc == 0)
    fp_debug("%s: %llu entries, %llu whiteouts, %llu xattrs not kept, %llu owners not set",
             s->reference, (unsigned long long)st.entries, (unsigned long long)st.whiteouts,
             (unsigned long long)st.xattrs_skipped, (unsigned long long)st.owners_failed);
  /* Every DiffID was checked against its stream (those a record vouched for were taken
   * away by wait_layer): recorded for the blobs that have a record, so that the next pull
   * need not hash them again. */
  for (size_t i = 0; rc == 0 && i < n; i++)
    if (layers[i].diff_id && layers[i].fd > 0)
      fp_verified_note_diff_id(s->cache, layers[i].digest, layers[i].fd, layers[i].diff_id);
  for (size_t i = 0; i < n; i++)
    if (layers[i].fd > 0)
      close(layers[i].fd);
  fpull_strv_free(paths);
  free(layers);
  return rc;
}

/* A rootfs DEST records the manifest it was unpacked from (an xattr on its directory), so
 * that pulling the same digest again without --force is done already, not an error. */
#define DEST_DIGEST_XATTR "user.fpull.manifest"

static int dest_holds(const char *dest, const struct fpull_pull_opts *o, const char *digest)
{
  char got[FP_DIGEST_MAX] = "";
  if (!dest || o->unpack.force || o->unpack.format != FPULL_FORMAT_DIR)
    return 0;
  ssize_t n = lgetxattr(dest, DEST_DIGEST_XATTR, got, sizeof got - 1);
  return n > 0 && strcmp(got, digest) == 0;
}

static void dest_record(const char *dest, const struct fpull_pull_opts *o, const char *digest)
{
  /* File systems without user xattrs (older tmpfs) only lose the shortcut. */
  if (dest && o->unpack.format == FPULL_FORMAT_DIR)
    (void)lsetxattr(dest, DEST_DIGEST_XATTR, digest, strlen(digest), 0);
}

/* dest: the rootfs, bundle or SquashFS file to unpack into, NULL for none; layout_dest: the
 * OCI layout or archive that is written from the cache afterwards (its space is checked
 * here, before the download), NULL for none. */
static int run(struct fpull_pull_result **out, const char *image, const char *dest,
               const char *layout_dest, const struct fpull_pull_opts *o, fpull_err *err)
{
  *out = NULL;
  struct fp_session s;
  struct fp_resolved r = {0};
  int rc = fp_session_open(&s, image, o, err);
  if (rc == 0)
    rc = fp_resolve(&s, &r, 0, err);
  if (rc == 0)
    rc = check_layer_types(r.manifest, err);
  int already = rc == 0 && dest_holds(dest, o, r.manifest_digest);
  if (already)
    fp_info("%s already holds %s: nothing to download or unpack (--force unpacks it again)", dest,
            r.manifest_digest);
  /* Disk space, before anything is downloaded or unpacked (space.c). */
  struct fp_space sp;
  if (rc == 0 && !already) {
    fp_space_estimate(&sp, s.cache, r.manifest, dest ? dest : layout_dest,
                      dest ? (int)o->unpack.format : FP_SPACE_LAYOUT);
    rc = fp_space_check(&sp, err);
  }
  if (rc == 0 && !already) {
    struct fp_fetch *fetch = fp_fetch_start(&s, &r, dest != NULL);
    if (dest)
      rc = unpack(&s, &r, fetch, dest, err);
    /* A download failure wins over what it made the unpacker report. */
    fpull_err ferr = {0};
    int frc = fp_fetch_finish(fetch, rc != 0, &ferr);
    if (frc) {
      rc = frc;
      if (err)
        *err = ferr;
    }
    fp_space_explain(&sp, err);
  }
  if (rc == 0 && !already)
    dest_record(dest, o, r.manifest_digest);
  /* NAME:TAG@DIGEST pulled from the registry: the tag now names that image for --offline,
   * as a pull by the tag would have recorded it (a Slurm job's nodes pull the tag pinned
   * to the digest its submit resolved, and fall back on it when the registry fails). */
  if (rc == 0 && s.reg && s.cache && s.ref->tag && s.ref->digest) {
    cleanup_free char *tagref =
        fp_xasprintf("%s/%s:%s", s.ref->registry, s.ref->repository, s.ref->tag);
    fpull_err ignored = {0};
    (void)fpull_cache_tag_record(s.cache, tagref, s.ref->digest, &ignored);
  }
  if (rc == 0) {
    fp_cache_note_use(s.cache, s.reference);
    struct fpull_pull_result *res = fp_xcalloc(1, sizeof *res);
    res->reference = fp_xstrdup(s.reference);
    res->index_digest = fp_xstrdup(r.index_digest);
    res->manifest_digest = fp_xstrdup(r.manifest_digest);
    res->platform = steal_pointer(&r.platform);
    res->signature = steal_pointer(&r.sig);
    if (r.match && r.match->chosen >= 0)
      res->why = fpull_match_why(r.match, r.index->manifests, (size_t)r.match->chosen, o->tagdb);
    res->layers = r.manifest->n_layers;
    res->bytes_downloaded = s.bytes_downloaded;
    /* DEST already holding the image took nothing from the cache: the config read to
     * choose is no layer put into DEST (issue 43.11: "nothing to unpack", "347 B from
     * cache"). What had to be downloaded to choose still counts as downloaded. */
    res->bytes_from_cache = already ? 0 : s.bytes_from_cache;
    if (dest) {
      char abs[PATH_MAX];
      res->rootfs = fp_xstrdup(realpath(dest, abs) ? abs : dest);
    }
    *out = res;
  } else if (s.reference) {
    fpull_err_prefix(err, "%s", s.reference);
  }
  fp_resolved_free(&r);
  fp_session_close(&s);
  return rc;
}

int fpull_pull(struct fpull_pull_result **out, const char *image, const char *dest,
               const struct fpull_pull_opts *o, fpull_err *err)
{
  cleanup_free char *def = NULL;
  if (!dest) {
    int rc =
        fp_dest_default(&def, image, o->unpack.format == FPULL_FORMAT_SQUASHFS ? ".sqsh" : "", err);
    if (rc)
      return rc;
    dest = def;
  }
  /* A missing parent of DEST fails before the network (one asked for is created later). */
  __attribute__((cleanup(fp_dest_free))) struct fp_dest where = {0};
  if (FP_OPTS_CHECK(o, FPULL_PULL_OPTS, "fpull_pull_opts", NULL) == 0 &&
      !fp_dest_parents(&o->unpack) &&
      fp_dest_split(&where, dest, o->unpack.format != FPULL_FORMAT_SQUASHFS, 0, err))
    return err ? err->code : FPULL_EFAIL;
  return run(out, image, dest, NULL, o, err);
}

int fpull_prefetch(struct fpull_pull_result **out, const char *image,
                   const struct fpull_pull_opts *o, fpull_err *err)
{
  return run(out, image, NULL, NULL, o, err);
}

int fpull_pull_layout(struct fpull_pull_result **out, const char *image,
                      enum fpull_layout_kind kind, const char *dest, const char *name,
                      const struct fpull_pull_opts *opts, fpull_err *err)
{
  *out = NULL;
  cleanup_free char *tagname = NULL;
  /* What is at dest is checked before the network (again before the rename), and the
   * space the layout takes before the download. */
  int rc = fp_layout_precheck(image, kind, dest, name, opts, &tagname, err);
  if (rc == 0)
    rc = run(out, image, NULL, dest, opts, err);
  if (rc == 0)
    rc = fp_layout_write(*out, kind, dest, tagname, opts, err);
  if (rc) {
    fpull_pull_result_free(*out);
    *out = NULL;
    return rc;
  }
  char abs[PATH_MAX];
  free((*out)->rootfs);
  (*out)->rootfs = fp_xstrdup(realpath(dest, abs) ? abs : dest);
  return 0;
}

void fpull_inspect_result_free(struct fpull_inspect_result *r)
{
  if (!r)
    return;
  free(r->reference);
  free(r->index_digest);
  /* The entries were taken over from a parsed index: give them back to free them. */
  struct fpull_index *idx = fp_xcalloc(1, sizeof *idx);
  idx->manifests = r->entries;
  idx->n_manifests = r->n_entries;
  fpull_index_free(idx);
  fpull_match_free(r->match);
  free(r->origins);
  for (size_t i = 0; r->signatures && i < r->n_entries; i++)
    fpull_sig_check_free(r->signatures[i]);
  free(r->signatures);
  fpull_sig_check_free(r->index_signature);
  free(r);
}

/* inspect under a policy: each image entry's signature state (what pull would decide for
 * it), and the index's own. A rejection is a state here, not a failure. */
static int inspect_signatures(struct fp_session *s, const struct fp_resolved *r,
                              struct fpull_inspect_result *res, fpull_err *err)
{
  res->signatures = fp_xcalloc(res->n_entries + 1, sizeof *res->signatures);
  if (!r->index) {
    res->signatures[0] = steal_pointer(&((struct fp_resolved *)r)->sig);
    return 0;
  }
  int rc = fp_sig_check_manifest(s, r->index_digest, NULL, 0, NULL, &res->index_signature, err);
  for (size_t i = 0; (rc == 0 || rc == FPULL_EPOLICY) && i < res->n_entries; i++) {
    if (res->origins[i].followed || !res->entries[i].digest ||
        (res->entries[i].media_type && (strstr(res->entries[i].media_type, "image.index") ||
                                        strstr(res->entries[i].media_type, "manifest.list"))))
      continue;
    fpull_err_clear(err);
    rc = fp_sig_check_manifest(s, res->entries[i].digest, NULL, 0, r->index_digest,
                               &res->signatures[i], err);
  }
  if (rc == FPULL_EPOLICY) {
    fpull_err_clear(err);
    rc = 0;
  }
  return rc;
}

int fpull_inspect(struct fpull_inspect_result **out, const char *image,
                  const struct fpull_pull_opts *o, fpull_err *err)
{
  *out = NULL;
  struct fp_session s;
  struct fp_resolved r = {0};
  int rc = fp_session_open_inspect(&s, image, o, err);
  if (rc == 0)
    rc = fp_resolve(&s, &r, 1, err);
  if (rc == FPULL_ENOMATCH && !r.index && r.platform) {
    /* A single manifest for another platform: still shown, as an entry that does not fit. */
    fpull_err_clear(err);
    rc = 0;
  }
  if (rc == 0) {
    struct fpull_inspect_result *res = fp_xcalloc(1, sizeof *res);
    res->reference = fp_xstrdup(s.reference);
    res->index_digest = fp_xstrdup(r.index_digest);
    if (r.index) {
      res->entries = steal_pointer(&r.index->manifests);
      res->n_entries = r.index->n_manifests;
      res->origins = fp_xcalloc(res->n_entries ? res->n_entries : 1, sizeof *res->origins);
      for (size_t i = 0; i < res->n_entries; i++) {
        const struct fp_cand *c = &r.cands[i];
        res->origins[i] = (struct fpull_entry_origin){.parent = c->parent,
                                                      .depth = c->depth,
                                                      .platform_from_config = c->from_config,
                                                      .followed = c->followed};
        free(c->skip);
      }
      free(r.cands);
      r.cands = NULL;
      r.index->n_manifests = 0;
      res->match = steal_pointer(&r.match);
    } else {
      res->entries = fp_xcalloc(1, sizeof *res->entries);
      res->n_entries = 1;
      res->entries[0].media_type = fp_xstrdup(r.manifest->media_type);
      res->entries[0].digest = fp_xstrdup(r.manifest_digest);
      res->entries[0].platform = steal_pointer(&r.platform);
      res->n_layers = r.manifest->n_layers;
      for (size_t i = 0; i < r.manifest->n_layers; i++)
        res->layers_size += (uint64_t)r.manifest->layers[i].size;
      rc = fpull_match_entries(&res->match, o->target, res->entries, 1, o->tagdb, err);
      if (rc == 0 && r.preflight_why && res->match->entries[0].eligible) {
        /* The GPU preflight refused the image: shown as the entry's reason. */
        res->match->entries[0].eligible = 0;
        res->match->entries[0].rank = 0;
        free(res->match->entries[0].why);
        res->match->entries[0].why = steal_pointer(&r.preflight_why);
        res->match->chosen = -1;
      }
    }
    if (rc == 0 && s.policy)
      rc = inspect_signatures(&s, &r, res, err);
    if (rc == 0)
      *out = res;
    else
      fpull_inspect_result_free(res);
  }
  if (rc && s.reference)
    fpull_err_prefix(err, "%s", s.reference);
  fp_resolved_free(&r);
  fp_session_close(&s);
  return rc;
}
