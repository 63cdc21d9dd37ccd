/* pull to oci:DIR, oci-archive:FILE and docker-archive:FILE: the chosen entry's manifest,
 * config and layers as the registry serves them, copied out of the cache from descriptors
 * that verified them, into an OCI image layout (a directory, or one tar of it). A
 * docker-archive is that tar plus the manifest.json that docker load reads. */
#include <archive.h>
#include <archive_entry.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "layout.h"
#include "sqfs_file.h"
#include "unpack/dest.h"
#include "unpack/inroot.h"
#include "base/util.h"
#include "fpull/cache.h"
#include "fpull/layout.h"
#include "fpull/manifest.h"
#include "fpull/ref.h"

#define OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define OCI_INDEX "application/vnd.oci.image.index.v1+json"
#define REF_NAME "org.opencontainers.image.ref.name"
/* Largest index.json of an existing layout read. */
#define LAYOUT_INDEX_MAX (4u << 20)

/* Where the files go: a staging directory, or a tar. */
struct out {
  int dfd;            /* the staging directory (or the existing layout), or -1 */
  struct archive *ar; /* the tar, or NULL */
  const char *dest;
  int add;   /* dfd is an existing layout: files are written beside their name and renamed
                in, and a blob already there is kept */
  int force; /* with add: an image of the same name is replaced */
};

static int out_dir(struct out *o, const char *name, fpull_err *err)
{
  if (o->ar) {
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, name);
    archive_entry_set_filetype(e, AE_IFDIR);
    archive_entry_set_perm(e, 0755);
    int r = archive_write_header(o->ar, e);
    archive_entry_free(e);
    if (r != ARCHIVE_OK)
      return fpull_err_set(err, FPULL_EFAIL, "%s: %s", o->dest, archive_error_string(o->ar));
    return 0;
  }
  if (mkdirat(o->dfd, name, 0755) < 0 && errno != EEXIST)
    return fpull_err_set(err, FPULL_EFAIL, "%s: cannot create %s: %s", o->dest, name,
                         strerror(errno));
  return 0;
}

static int write_bytes(struct out *o, int wfd, const char *name, const char *data, int fd,
                       uint64_t size, fpull_err *err);

/* In an existing layout: name written beside itself and renamed over it; a blob (keep) of
 * the right size already there is the same bytes (its name is their digest) and stays. */
static int add_file(struct out *o, const char *name, const char *data, int fd, uint64_t size,
                    int keep, fpull_err *err)
{
  struct stat st;
  if (keep && fstatat(o->dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
      (uint64_t)st.st_size == size)
    return 0;
  cleanup_free char *prefix = fp_xasprintf("%s.fpull-", name);
  char tmp[PATH_MAX];
  fp_dest_random_name(tmp, sizeof tmp, prefix);
  cleanup_close int wfd =
      openat(o->dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (wfd < 0)
    return fpull_err_set(err, FPULL_EFAIL, "%s: cannot create %s: %s", o->dest, tmp,
                         strerror(errno));
  int rc = write_bytes(o, wfd, name, data, fd, size, err);
  if (rc == 0 && renameat(o->dfd, tmp, o->dfd, name) < 0)
    rc = fpull_err_set(err, FPULL_EFAIL, "%s: cannot rename %s into place: %s", o->dest, name,
                       strerror(errno));
  if (rc)
    unlinkat(o->dfd, tmp, 0);
  return rc;
}

/* A file of size bytes: from data when not NULL, else read from fd at its start. */
static int out_file(struct out *o, const char *name, const char *data, int fd, uint64_t size,
                    fpull_err *err)
{
  cleanup_close int wfd = -1;
  if (o->add)
    return add_file(o, name, data, fd, size, strncmp(name, "blobs/", 6) == 0, err);
  if (o->ar) {
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, name);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, (la_int64_t)size);
    int r = archive_write_header(o->ar, e);
    archive_entry_free(e);
    if (r != ARCHIVE_OK)
      return fpull_err_set(err, FPULL_EFAIL, "%s: %s", o->dest, archive_error_string(o->ar));
  } else {
    wfd = openat(o->dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (wfd < 0)
      return fpull_err_set(err, FPULL_EFAIL, "%s: cannot create %s: %s", o->dest, name,
                           strerror(errno));
  }
  return write_bytes(o, wfd, name, data, fd, size, err);
}

/* size bytes of data (or of fd from its start) to the tar, or to wfd. */
static int write_bytes(struct out *o, int wfd, const char *name, const char *data, int fd,
                       uint64_t size, fpull_err *err)
{
  char buf[1 << 16];
  uint64_t done = 0;
  while (done < size) {
    size_t want = size - done < sizeof buf ? (size_t)(size - done) : sizeof buf;
    const char *p = data ? data + done : buf;
    if (!data) {
      ssize_t n = pread(fd, buf, want, (off_t)done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return fpull_err_set(err, n < 0 ? FPULL_EFAIL : FPULL_EINTEGRITY,
                             "%s: reading the cached blob for %s: %s", o->dest, name,
                             n < 0 ? strerror(errno) : "shorter than its descriptor says");
      want = (size_t)n;
    }
    ssize_t w = o->ar ? (ssize_t)archive_write_data(o->ar, p, want) : write(wfd, p, want);
    if (w < 0 && !o->ar && errno == EINTR)
      continue;
    if (w <= 0)
      return fpull_err_set(err, FPULL_EFAIL, "%s: cannot write %s: %s", o->dest, name,
                           o->ar ? archive_error_string(o->ar) : strerror(errno));
    done += (uint64_t)w;
  }
  return 0;
}

static int out_json(struct out *o, const char *name, cJSON *doc, fpull_err *err)
{
  cleanup_free char *text = cJSON_PrintUnformatted(doc);
  return out_file(o, name, text, -1, strlen(text), err);
}

static char *blob_name(const char *digest)
{
  char algo[16];
  snprintf(algo, sizeof algo, "%.*s", (int)(strchr(digest, ':') - digest), digest);
  return fp_xasprintf("blobs/%s/%s", algo, fp_digest_hex(digest));
}

/* One blob, from the cache's verified descriptor. */
static int out_blob(struct out *o, fpull_cache *c, const struct fpull_descriptor *d, fpull_err *err)
{
  cleanup_close int fd = -1;
  int rc = fpull_cache_open_verified(&fd, c, d->digest, d->size, err);
  if (rc)
    return fpull_err_prefix(err, "%s", d->digest);
  cleanup_free char *name = blob_name(d->digest);
  return out_file(o, name, NULL, fd, (uint64_t)d->size, err);
}

static cJSON *platform_json(const struct fpull_platform *p)
{
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "architecture", p->architecture ? p->architecture : "");
  cJSON_AddStringToObject(o, "os", p->os ? p->os : "");
  if (p->variant)
    cJSON_AddStringToObject(o, "variant", p->variant);
  return o;
}

struct entry {
  const char *manifest_digest;
  const char *manifest_text;
  size_t manifest_len;
  const struct fpull_manifest *m;
  const struct fpull_platform *platform;
  const char *name; /* ref.name / RepoTags, or NULL */
};

/* The index.json entry of e's manifest. */
static cJSON *manifest_desc(const struct entry *e, enum fpull_layout_kind kind)
{
  cJSON *desc = cJSON_CreateObject();
  const char *mt = e->m->media_type && *e->m->media_type ? e->m->media_type : OCI_MANIFEST;
  cJSON_AddStringToObject(desc, "mediaType", mt);
  cJSON_AddStringToObject(desc, "digest", e->manifest_digest);
  cJSON_AddNumberToObject(desc, "size", (double)e->manifest_len);
  if (e->platform)
    cJSON_AddItemToObject(desc, "platform", platform_json(e->platform));
  if (e->name && kind != FPULL_LAYOUT_DOCKER_ARCHIVE)
    cJSON_AddStringToObject(cJSON_AddObjectToObject(desc, "annotations"), REF_NAME, e->name);
  return desc;
}

/* The image's manifest, config and layers under blobs/ (into a new layout, or added to
 * an existing one, where add_file keeps a blob already there). */
static int out_image_blobs(struct out *o, fpull_cache *c, const struct entry *e, fpull_err *err)
{
  int rc = out_dir(o, "blobs", err);
  cleanup_free char *mname = blob_name(e->manifest_digest);
  if (rc == 0) {
    char *slash = strrchr(mname, '/');
    *slash = '\0';
    rc = out_dir(o, mname, err);
    *slash = '/';
  }
  if (rc == 0)
    rc = out_file(o, mname, e->manifest_text, -1, e->manifest_len, err);
  if (rc == 0)
    rc = out_blob(o, c, &e->m->config, err);
  for (size_t i = 0; rc == 0 && i < e->m->n_layers; i++)
    rc = out_blob(o, c, &e->m->layers[i], err);
  return rc;
}

static int write_layout(struct out *o, fpull_cache *c, const struct entry *e,
                        enum fpull_layout_kind kind, fpull_err *err)
{
  cJSON *layout = cJSON_CreateObject();
  cJSON_AddStringToObject(layout, "imageLayoutVersion", "1.0.0");
  int rc = out_json(o, "oci-layout", layout, err);
  cJSON_Delete(layout);

  cJSON *index = cJSON_CreateObject();
  cJSON_AddNumberToObject(index, "schemaVersion", 2);
  cJSON_AddStringToObject(index, "mediaType", OCI_INDEX);
  cJSON_AddItemToArray(cJSON_AddArrayToObject(index, "manifests"), manifest_desc(e, kind));
  if (rc == 0)
    rc = out_json(o, "index.json", index, err);
  cJSON_Delete(index);

  if (rc == 0)
    rc = out_image_blobs(o, c, e, err);

  if (rc == 0 && kind == FPULL_LAYOUT_DOCKER_ARCHIVE) {
    /* docker load's manifest.json; it and skopeo decompress gzip and zstd layers. */
    cJSON *arr = cJSON_CreateArray();
    cJSON *img = cJSON_CreateObject();
    cJSON_AddItemToArray(arr, img);
    char *cfg = blob_name(e->m->config.digest);
    cJSON_AddStringToObject(img, "Config", cfg);
    free(cfg);
    cJSON *tags = cJSON_AddArrayToObject(img, "RepoTags");
    if (e->name)
      cJSON_AddItemToArray(tags, cJSON_CreateString(e->name));
    cJSON *layers = cJSON_AddArrayToObject(img, "Layers");
    for (size_t i = 0; i < e->m->n_layers; i++) {
      char *l = blob_name(e->m->layers[i].digest);
      cJSON_AddItemToArray(layers, cJSON_CreateString(l));
      free(l);
    }
    rc = out_json(o, "manifest.json", arr, err);
    cJSON_Delete(arr);
  }
  return rc;
}

/* The name the layout gives the image: name as given, else image's tag. docker-archive's
 * is a whole reference (docker load tags the image with it). */
static int layout_name(char **out, const char *image, const char *name, enum fpull_layout_kind kind,
                       fpull_err *err)
{
  *out = NULL;
  struct fpull_ref *ref = NULL;
  int rc = 0;
  if (kind == FPULL_LAYOUT_DOCKER_ARCHIVE) {
    rc = fpull_ref_parse(&ref, name ? name : image, err);
    if (rc == 0 && name && ref->digest)
      rc =
          fpull_err_set(err, FPULL_EUSAGE, "docker-archive: %s: a name to tag, not a digest", name);
    if (rc == 0 && ref->tag) {
      free(ref->digest);
      ref->digest = NULL;
      *out = fpull_ref_format(ref);
    }
    fpull_ref_free(ref);
    return rc;
  }
  if (name) {
    /* The OCI layout's ref.name: a tag-like name (image-spec's grammar, kept simple). */
    if (!*name || strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                               "0123456789._-/:") != strlen(name))
      return fpull_err_set(err, FPULL_EUSAGE, "invalid image name '%s' in the destination", name);
    *out = fp_xstrdup(name);
    return 0;
  }
  rc = fpull_ref_parse(&ref, image, err);
  if (rc == 0 && ref->tag && !ref->digest)
    *out = fp_xstrdup(ref->tag);
  fpull_ref_free(ref);
  return rc;
}

/* ---- oci:DIR[:TAG] into an existing layout: the image added, as skopeo does ---- */

/* 1 when dfd holds an OCI image layout (its oci-layout file and index.json). */
static int is_layout(int dfd)
{
  struct stat st;
  return fstatat(dfd, "oci-layout", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
         fstatat(dfd, "index.json", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

/* The existing layout at base, opened into *dfd; *dfd stays -1 when nothing is there or
 * what is there is not a layout of ours to add to (then it is replaced only with --force,
 * as before). */
static int open_layout(int *dfd, int pfd, const char *base, const char *dest, fpull_err *err)
{
  *dfd = -1;
  int exists;
  int rc = fp_dest_check(pfd, base, dest, S_IFDIR, 1, &exists, err);
  if (rc || !exists)
    return rc;
  int fd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return fpull_err_set(err, FPULL_EFAIL, "cannot open %s: %s", dest, strerror(errno));
  if (!is_layout(fd)) {
    close(fd);
    return 0;
  }
  *dfd = fd;
  return 0;
}

/* The layout's index.json, parsed, with its manifests array. */
static int read_index(cJSON **out, int dfd, const char *dest, fpull_err *err)
{
  *out = NULL;
  cleanup_close int fd = openat(dfd, "index.json", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  cleanup_free char *text = NULL;
  size_t len = 0;
  if (fd < 0 || fp_read_fd(fd, LAYOUT_INDEX_MAX, &text, &len) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "%s/index.json: %s", dest, strerror(errno));
  cJSON *doc = cJSON_ParseWithLength(text, len);
  if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "manifests"))) {
    cJSON_Delete(doc);
    return fpull_err_set(err, FPULL_EFAIL,
                         "%s/index.json is not an OCI image index; not adding to the layout", dest);
  }
  *out = doc;
  return 0;
}

/* The index entry named name (its ref.name annotation), or NULL. */
static cJSON *named_entry(const cJSON *index, const char *name)
{
  const cJSON *m;
  cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(index, "manifests"))
  {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(m, "annotations");
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(a, REF_NAME);
    if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
      return (cJSON *)m;
  }
  return NULL;
}

/* A name the layout already has is replaced only with --force. */
static int check_name(const cJSON *index, const char *name, int force, const char *dest,
                      fpull_err *err)
{
  if (name && !force && named_entry(index, name))
    return fpull_err_set(err, FPULL_EFAIL,
                         "%s already has an image named %s (--force replaces it; the layout's "
                         "other images stay)",
                         dest, name);
  return 0;
}

/* The image's blobs (those not there yet) and its index entry, added to the layout at
 * o->dfd; an entry of the same name is replaced in its place, the others stay. */
static int add_to_layout(struct out *o, fpull_cache *c, const struct entry *e, fpull_err *err)
{
  cJSON *index = NULL;
  int rc = read_index(&index, o->dfd, o->dest, err);
  if (rc == 0)
    rc = check_name(index, e->name, o->force, o->dest, err);
  if (rc == 0)
    rc = out_image_blobs(o, c, e, err);
  if (rc == 0) {
    cJSON *list = cJSON_GetObjectItemCaseSensitive(index, "manifests");
    cJSON *old = e->name ? named_entry(index, e->name) : NULL;
    int dup = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, list)
    {
      const cJSON *d = cJSON_GetObjectItemCaseSensitive(m, "digest");
      if (!e->name && !cJSON_GetObjectItemCaseSensitive(m, "annotations") && cJSON_IsString(d) &&
          strcmp(d->valuestring, e->manifest_digest) == 0)
        dup = 1;
    }
    if (old)
      cJSON_ReplaceItemViaPointer(list, old, manifest_desc(e, FPULL_LAYOUT_OCI));
    else if (!dup)
      cJSON_AddItemToArray(list, manifest_desc(e, FPULL_LAYOUT_OCI));
    rc = out_json(o, "index.json", index, err);
  }
  cJSON_Delete(index);
  return rc;
}

static int write_entry(struct out *o, const struct fpull_pull_result *r, const char *name,
                       enum fpull_layout_kind kind, const struct fpull_pull_opts *opts,
                       fpull_err *err)
{
  fpull_cache *c = NULL;
  cleanup_free char *text = NULL;
  size_t len = 0;
  struct fpull_manifest *m = NULL;
  int rc = fpull_cache_open_with_shared(&c, opts->cache_dir, opts->config, err);
  if (rc == 0)
    rc = fpull_cache_get_bytes(c, r->manifest_digest, FPULL_MANIFEST_MAX, &text, &len, err);
  if (rc == 0)
    rc = fpull_manifest_parse(&m, text, len, NULL, err);
  if (rc == 0) {
    struct entry e = {r->manifest_digest, text, len, m, r->platform, name};
    rc = o->add ? add_to_layout(o, c, &e, err) : write_layout(o, c, &e, kind, err);
  }
  fpull_manifest_free(m);
  fpull_cache_free(c);
  return rc;
}

/* ---- oci:DIR: a staging directory beside DIR, renamed into place ---- */

static int write_dir(const struct fpull_pull_result *r, const char *dest, const char *name,
                     const struct fpull_pull_opts *opts, fpull_err *err)
{
  __attribute__((cleanup(fp_dest_free))) struct fp_dest dd = {0};
  int rc = fp_dest_split(&dd, dest, 1, fp_dest_parents(&opts->unpack), err);
  if (rc)
    return rc;
  cleanup_close int pfd = open(dd.parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (pfd < 0)
    return fpull_err_set(err, FPULL_EFAIL, "cannot open %s: %s", dd.parent, strerror(errno));
  cleanup_close int lfd = -1;
  rc = open_layout(&lfd, pfd, dd.base, dest, err);
  if (rc == 0 && lfd >= 0) {
    /* One writer at a time adds to a layout; the index is read again under the lock. */
    if (flock(lfd, LOCK_EX) < 0)
      return fpull_err_set(err, FPULL_EFAIL, "cannot lock %s: %s", dest, strerror(errno));
    struct out o = {.dfd = lfd, .dest = dest, .add = 1, .force = opts->unpack.force};
    return write_entry(&o, r, name, FPULL_LAYOUT_OCI, opts, err);
  }
  if (rc)
    return rc;
  int exists;
  rc = fp_dest_check(pfd, dd.base, dest, S_IFDIR, opts->unpack.force, &exists, err);
  if (rc)
    return rc;
  cleanup_free char *prefix = fp_xasprintf(".%s.fpull-layout-", dd.base);
  char sname[NAME_MAX + 1];
  for (int i = 0; i < 100; i++) {
    fp_dest_random_name(sname, sizeof sname, prefix);
    if (mkdirat(pfd, sname, 0755) == 0 || errno != EEXIST)
      break;
  }
  cleanup_close int sfd = openat(pfd, sname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (sfd < 0)
    return fpull_err_set(err, FPULL_EFAIL, "cannot create a staging directory beside %s: %s", dest,
                         strerror(errno));
  struct out o = {.dfd = sfd, .dest = dest};
  rc = write_entry(&o, r, name, FPULL_LAYOUT_OCI, opts, err);
  if (rc == 0 && exists)
    rc = fp_dest_check(pfd, dd.base, dest, S_IFDIR, 1, &exists, err);
  if (rc == 0 && !exists)
    rc = fp_dest_publish_new(pfd, sname, dd.base, dest, err);
  else if (rc == 0 && renameat2(pfd, sname, pfd, dd.base, RENAME_EXCHANGE) < 0)
    rc = fpull_err_set(err, FPULL_EFAIL, "cannot rename the layout into %s: %s", dest,
                       strerror(errno));
  /* Now the old layout after an exchange, or our unfinished one. */
  if ((rc || exists) && fp_rm_rf_at(pfd, sname) < 0)
    fp_warn("cannot remove %s: %s", sname, fp_rm_strerror(errno));
  return rc;
}

/* ---- the archives: a file beside FILE, renamed into place ---- */

static int write_archive(const struct fpull_pull_result *r, const char *dest, const char *name,
                         enum fpull_layout_kind kind, const struct fpull_pull_opts *opts,
                         fpull_err *err)
{
  __attribute__((cleanup(fp_image_close))) struct fp_image_dest d;
  int rc = fp_image_open(&d, dest, opts->unpack.force, fp_dest_parents(&opts->unpack), err);
  if (rc)
    return rc;
  struct archive *ar = archive_write_new();
  if (archive_write_set_format_pax_restricted(ar) != ARCHIVE_OK ||
      archive_write_open_fd(ar, d.fd) != ARCHIVE_OK)
    rc = fpull_err_set(err, FPULL_EFAIL, "%s: %s", dest, archive_error_string(ar));
  struct out o = {.dfd = -1, .ar = ar, .dest = dest};
  if (rc == 0)
    rc = write_entry(&o, r, name, kind, opts, err);
  if (rc == 0 && archive_write_close(ar) != ARCHIVE_OK)
    rc = fpull_err_set(err, FPULL_EFAIL, "%s: %s", dest, archive_error_string(ar));
  archive_write_free(ar);
  if (rc == 0)
    rc = fp_image_publish(&d, err);
  return rc;
}

int fp_layout_precheck(const char *image, enum fpull_layout_kind kind, const char *dest,
                       const char *name, const struct fpull_pull_opts *opts, char **tagname,
                       fpull_err *err)
{
  *tagname = NULL;
  if (kind != FPULL_LAYOUT_OCI && kind != FPULL_LAYOUT_OCI_ARCHIVE &&
      kind != FPULL_LAYOUT_DOCKER_ARCHIVE)
    return fpull_err_set(err, FPULL_EUSAGE, "unknown layout kind %d", (int)kind);
  if (!dest || !*dest)
    return fpull_err_set(err, FPULL_EUSAGE, "no destination given for the layout");
  int rc = layout_name(tagname, image, name, kind, err);
  if (rc)
    return rc;
  __attribute__((cleanup(fp_dest_free))) struct fp_dest dd = {0};
  rc = fp_dest_split(&dd, dest, kind == FPULL_LAYOUT_OCI, fp_dest_parents(&opts->unpack), err);
  cleanup_close int pfd = rc ? -1 : open(dd.parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
  int exists, lfd = -1;
  if (rc == 0 && pfd >= 0 && kind == FPULL_LAYOUT_OCI)
    rc = open_layout(&lfd, pfd, dd.base, dest, err);
  if (rc == 0 && lfd >= 0) {
    /* An existing layout takes the image; only a name it has needs --force. */
    cJSON *index = NULL;
    rc = read_index(&index, lfd, dest, err);
    if (rc == 0)
      rc = check_name(index, *tagname, opts->unpack.force, dest, err);
    cJSON_Delete(index);
    close(lfd);
  } else if (rc == 0 && pfd >= 0) {
    rc = fp_dest_check(pfd, dd.base, dest, kind == FPULL_LAYOUT_OCI ? S_IFDIR : S_IFREG,
                       opts->unpack.force, &exists, err);
  }
  if (rc) {
    free(*tagname);
    *tagname = NULL;
  }
  return rc;
}

int fp_layout_write(const struct fpull_pull_result *r, enum fpull_layout_kind kind,
                    const char *dest, const char *tagname, const struct fpull_pull_opts *opts,
                    fpull_err *err)
{
  return kind == FPULL_LAYOUT_OCI ? write_dir(r, dest, tagname, opts, err)
                                  : write_archive(r, dest, tagname, kind, opts, err);
}
