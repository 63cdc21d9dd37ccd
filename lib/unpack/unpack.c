/* Building a rootfs from layers (contract, "Rootfs"): a private staging directory beside
 * DEST, the layers applied in order through entry_write/whiteout, then one rename. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/opts.h"
#include "dest.h"
#include "entry_write.h"
#include "fpull/manifest.h"
#include "fpull/unpack.h"
#include "inroot.h"
#include "layer_stream.h"
#include "sink.h"
#include "unpack_internal.h"
#include "base/util.h"
#include "whiteout.h"

#define STAGING_TAG ".fpull-staging-"
/* Room for ".", the tag and a random suffix within NAME_MAX. */
#define STAGING_BASE_MAX 200

/* Entry names in messages: printable ASCII as is, everything else as \xHH, cut when long. */
static void escape_name(char *out, size_t cap, const char *in)
{
  size_t o = 0;
  for (; *in && o + 8 < cap; in++) {
    unsigned char c = (unsigned char)*in;
    if (c >= 0x20 && c < 0x7f && c != '\\')
      out[o++] = (char)c;
    else
      o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
  }
  if (*in && o + 4 <= cap) {
    memcpy(out + o, "...", 3);
    o += 3;
  }
  out[o] = '\0';
}

/* A ".wh." name is only meaningful as the last component: as a directory it would create
 * a directory the image spec says cannot exist (refused, exit 8). Under aufs bookkeeping
 * directories (".wh..wh.plnk/...") the entry is skipped, like the directory itself. */
static int inner_whiteout(const char *clean, const char *last_slash)
{
  for (const char *c = clean; last_slash && c < last_slash;) {
    const char *end = strchr(c, '/');
    if (strncmp(c, FP_WH_PREFIX, 4) == 0)
      return strncmp(c, ".wh..wh.", 8) == 0 ? FP_WH_META : FP_WH_INVALID;
    c = end + 1;
  }
  return FP_WH_NONE;
}

/* The limits of one pull, and what it has written so far against max_unpacked. */
struct feed_limits {
  uint64_t max_entries, max_bytes;
  uint64_t max_unpacked; /* UINT64_MAX: none */
  uint64_t written;      /* bytes of regular files, summed over the layers */
};

/* "50 MiB" where the size is a whole number of a unit (as --max-unpacked 50M was given),
 * else the exact count of bytes. */
static const char *size_text(char *out, size_t cap, uint64_t n)
{
  static const char units[] = "PTGMK";
  for (int i = 0; units[i]; i++) {
    uint64_t unit = 1ull << (10 * (5 - i));
    if (n >= unit && n % unit == 0) {
      snprintf(out, cap, "%llu %ciB", (unsigned long long)(n / unit), units[i]);
      return out;
    }
  }
  snprintf(out, cap, "%llu bytes", (unsigned long long)n);
  return out;
}

/* A regular file's content counts at its header, before a byte of its data is read or
 * written: a layer of a few KiB that unpacks to GiB (zeros compress to nothing) stops at the
 * entry that crosses the limit, whatever the output. Hard links add no content. */
static int count_content(struct feed_limits *lim, struct archive_entry *e, const char *shown,
                         fpull_err *err)
{
  int64_t size = archive_entry_size(e);
  if (archive_entry_filetype(e) != AE_IFREG || archive_entry_hardlink(e) || size <= 0)
    return 0;
  if ((uint64_t)size > lim->max_unpacked - lim->written) {
    char limit[40], total[40];
    return fpull_err_set(err, FPULL_EUNSAFE,
                         "unpacked content exceeds the max-unpacked limit of %s (entry %s would "
                         "bring it to %s)",
                         size_text(limit, sizeof limit, lim->max_unpacked), shown,
                         size_text(total, sizeof total, lim->written + (uint64_t)size));
  }
  lim->written += (uint64_t)size;
  return 0;
}

static int apply_layer(struct fp_sink *sink, const struct fpull_layer *layer,
                       struct feed_limits *lim, struct fpull_unpack_stats *stats, fpull_err *err)
{
  int comp = fpull_layer_compression(layer->media_type);
  if (comp < 0)
    return fpull_err_set(err, FPULL_EUNSAFE, "unsupported layer media type %s",
                         layer->media_type ? layer->media_type : "(none)");
  struct fp_layer_stream *s = NULL;
  int rc =
      fp_layer_stream_open(&s, layer->path, layer->fd, comp, lim->max_bytes, layer->diff_id, err);
  if (rc)
    return rc;
  struct archive *a = fp_layer_stream_archive(s, err);
  if (!a) {
    fp_layer_stream_close(s);
    return err ? err->code : FPULL_EUNSAFE;
  }
  sink->ops->layer_begin(sink);
  uint64_t count = 0;
  char shown[320];
  for (;;) {
    struct archive_entry *e;
    int r = archive_read_next_header(a, &e);
    if (r == ARCHIVE_EOF)
      break;
    const char *why_warn = r == ARCHIVE_WARN ? archive_error_string(a) : NULL;
    /* Owner names are ignored anyway (numeric ids only): their conversion may fail. */
    if (why_warn && (strstr(why_warn, "Uname") || strstr(why_warn, "Gname")))
      r = ARCHIVE_OK;
    if (r != ARCHIVE_OK) {
      /* ARCHIVE_WARN too: libarchive warns when it could not convert a name, and a name
       * it had to guess at is not one to write. */
      const fpull_err *se = fp_layer_stream_error(s);
      rc = se ? fpull_err_set(err, se->code, "%s", se->msg)
              : fpull_err_set(err, FPULL_EUNSAFE, "corrupt layer: %s",
                              archive_error_string(a) ? archive_error_string(a) : "bad header");
      goto out;
    }
    if (++count > lim->max_entries) {
      rc = fpull_err_set(err, FPULL_EUNSAFE, "more than %llu entries in the layer",
                         (unsigned long long)lim->max_entries);
      goto out;
    }
    stats->entries++;
    const char *name = archive_entry_pathname(e);
    if (!name) {
      rc = fpull_err_set(err, FPULL_EUNSAFE, "entry without a usable name");
      goto out;
    }
    escape_name(shown, sizeof shown, name);
    char clean[FP_PATH_MAX + 1];
    const char *why;
    if (fp_path_clean(name, clean, &why) < 0) {
      rc = fpull_err_set(err, FPULL_EUNSAFE, "entry %s: %s", shown, why);
      goto out;
    }
    char *slash = strrchr(clean, '/');
    const char *base = slash ? slash + 1 : clean, *target = NULL;
    int inner = inner_whiteout(clean, slash);
    if (inner == FP_WH_META)
      continue;
    if (inner) {
      rc = fpull_err_set(err, FPULL_EUNSAFE,
                         "entry %s: a whiteout name (.wh.) as a directory in the path", shown);
      goto out;
    }
    int kind = fp_whiteout_kind(base, &target);
    if (kind == FP_WH_INVALID) {
      rc = fpull_err_set(err, FPULL_EUNSAFE, "entry %s: invalid whiteout name", shown);
      goto out;
    }
    if (kind != FP_WH_NONE) {
      if (kind == FP_WH_META)
        continue;
      char dir[FP_PATH_MAX + 1];
      size_t dlen = slash ? (size_t)(slash - clean) : 0;
      memcpy(dir, clean, dlen);
      dir[dlen] = '\0';
      int wr = kind == FP_WH_OPAQUE_DIR ? sink->ops->opaque(sink, dir)
                                        : sink->ops->whiteout(sink, dir, target);
      if (wr < 0) {
        rc = fpull_err_set(err, errno == ELOOP ? FPULL_EUNSAFE : FPULL_EFAIL,
                           "entry %s: cannot apply whiteout: %s", shown, strerror(errno));
        goto out;
      }
      stats->whiteouts++;
      continue;
    }
    if ((rc = count_content(lim, e, shown, err)) != 0)
      goto out;
    rc = sink->ops->entry(sink, a, e, clean, err);
    if (rc) {
      const fpull_err *se = fp_layer_stream_error(s);
      if (se)
        fpull_err_set(err, se->code, "%s", se->msg);
      rc = fpull_err_prefix(err, "entry %s", shown);
      goto out;
    }
  }
  char diff_id[FP_DIGEST_MAX];
  rc = fp_layer_stream_finish(s, diff_id, err);
  if (!rc && layer->diff_id && strcmp(diff_id, layer->diff_id) != 0)
    rc = fpull_err_set(err, FPULL_EINTEGRITY,
                       "DiffID mismatch: the config says %s, the content is %s", layer->diff_id,
                       diff_id);
  stats->bytes += fp_layer_stream_bytes(s);
out:
  archive_read_free(a);
  fp_layer_stream_close(s);
  return rc;
}

/* The directory writer as a sink. */
struct dir_sink {
  struct fp_sink base;
  struct fp_writer w;
};

static void dir_layer_begin(struct fp_sink *s)
{
  fp_writer_layer_begin(&((struct dir_sink *)s)->w);
}

static int dir_entry(struct fp_sink *s, struct archive *a, struct archive_entry *e,
                     const char *path, fpull_err *err)
{
  return fp_entry_write(&((struct dir_sink *)s)->w, a, e, path, err);
}

static int dir_whiteout(struct fp_sink *s, const char *dir, const char *name)
{
  struct fp_writer *w = &((struct dir_sink *)s)->w;
  /* Removal may take away directories the writer has cached. */
  fp_writer_forget(w);
  return fp_whiteout_apply(&w->root, &w->layer, dir, name);
}

static int dir_opaque(struct fp_sink *s, const char *dir)
{
  struct fp_writer *w = &((struct dir_sink *)s)->w;
  fp_writer_forget(w);
  return fp_opaque_apply(&w->root, &w->layer, dir);
}

static int dir_finish(struct fp_sink *s, fpull_err *err)
{
  return fp_writer_finish(&((struct dir_sink *)s)->w, err);
}

static const struct fp_sink_ops dir_sink_ops = {
    .layer_begin = dir_layer_begin,
    .entry = dir_entry,
    .whiteout = dir_whiteout,
    .opaque = dir_opaque,
    .finish = dir_finish,
};

int fp_unpack_feed(struct fp_sink *sink, const struct fpull_layer *layers, size_t n,
                   const struct fpull_unpack_opts *o, struct fpull_unpack_stats *stats,
                   fpull_err *err)
{
  struct feed_limits lim = {
      .max_entries = o->max_entries ? o->max_entries : FPULL_UNPACK_MAX_ENTRIES,
      .max_bytes = o->max_bytes ? o->max_bytes : FPULL_UNPACK_MAX_BYTES,
      .max_unpacked = o->max_unpacked ? o->max_unpacked : UINT64_MAX,
  };
  /* libarchive converts names to the locale's charset; a UTF-8 locale of our own keeps the
   * bytes as they are whatever LANG the job runs with. */
  locale_t loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
  locale_t old = loc ? uselocale(loc) : (locale_t)0;
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    if (o->wait_layer && (rc = o->wait_layer(o->wait_ud, i, err)) != 0)
      break;
    rc = apply_layer(sink, &layers[i], &lim, stats, err);
    if (rc)
      fpull_err_prefix(err, "layer %s", layers[i].digest ? layers[i].digest : layers[i].path);
  }
  if (!rc)
    rc = sink->ops->finish(sink, err);
  if (loc) {
    uselocale(old);
    freelocale(loc);
  }
  /* As root only an image drops them (fp_priv_policy): the option says how to keep them. */
  const char *needs = geteuid() == 0 && !o->unprivileged ? "--keep-privileged" : "root";
  if (!rc && stats->devices_skipped)
    fp_warn("%llu device node(s) skipped: creating them needs %s",
            (unsigned long long)stats->devices_skipped, needs);
  if (!rc && stats->setid_dropped)
    fp_warn("%llu setuid/setgid bit(s) dropped: keeping them needs %s",
            (unsigned long long)stats->setid_dropped, needs);
  if (!rc && stats->caps_dropped)
    fp_warn("%llu file capabilit%s dropped: keeping them needs %s",
            (unsigned long long)stats->caps_dropped, stats->caps_dropped == 1 ? "y" : "ies", needs);
  if (!rc && stats->xattrs_skipped)
    fp_debug("%llu extended attribute(s) not restored (not allowed or not supported)",
             (unsigned long long)stats->xattrs_skipped);
  return rc;
}

static int build(int sfd, const struct fpull_layer *layers, size_t n,
                 const struct fpull_unpack_opts *o, struct fpull_unpack_stats *stats,
                 fpull_err *err)
{
  struct dir_sink ds = {.base.ops = &dir_sink_ops};
  fp_writer_init(&ds.w, sfd, o->resolve_fallback, fp_priv_policy(o, 0), stats);
  ds.w.max_file = o->max_bytes ? o->max_bytes : FPULL_UNPACK_MAX_BYTES;
  int rc = fp_unpack_feed(&ds.base, layers, n, o, stats, err);
  fp_writer_free(&ds.w);
  return rc;
}

static void staging_prefix(char *out, size_t cap, const char *base)
{
  snprintf(out, cap, ".%.*s" STAGING_TAG, STAGING_BASE_MAX, base);
}

/* Staging directories of earlier runs that were killed: each live run holds a lock on its
 * own, so an unlocked one is garbage. */
static void remove_leftovers(int pfd, const char *base)
{
  char prefix[NAME_MAX + 1];
  staging_prefix(prefix, sizeof prefix, base);
  cleanup_strv char **names = fp_dest_names_with_prefix(pfd, prefix);
  for (size_t i = 0; names && names[i]; i++) {
    struct stat st;
    if (fstatat(pfd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_uid != geteuid())
      continue;
    cleanup_close int fd =
        S_ISDIR(st.st_mode) ? openat(pfd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                            : -1;
    if (S_ISDIR(st.st_mode) && (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0))
      continue;
    fp_debug("removing %s left by an earlier run", names[i]);
    if (fp_rm_rf_at(pfd, names[i]) < 0)
      fp_warn("cannot remove %s left by an earlier run: %s", names[i], fp_rm_strerror(errno));
  }
}

/* Creates a new staging directory (0700, locked) in pfd; its name goes to name. */
static int make_staging(int pfd, const char *parent, const char *base, char *name, size_t cap,
                        fpull_err *err)
{
  char prefix[NAME_MAX + 1];
  staging_prefix(prefix, sizeof prefix, base);
  for (int attempt = 0; attempt < 100; attempt++) {
    fp_dest_random_name(name, cap, prefix);
    if (mkdirat(pfd, name, 0700) == 0) {
      int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0 || flock(fd, LOCK_EX) < 0 || fchmod(fd, 0700) < 0) {
        int saved = errno;
        if (fd >= 0)
          close(fd);
        fp_rm_rf_at(pfd, name);
        return fpull_err_set(err, FPULL_EFAIL, "cannot set up %s: %s", name, strerror(saved)), -1;
      }
      return fd;
    }
    if (errno != EEXIST)
      break;
  }
  /* Name the directory that refused (where a user must fix permissions or space), as an
   * absolute path: "." says nothing in a batch job's log. */
  int saved = errno;
  cleanup_free char *abs = realpath(parent, NULL);
  return fpull_err_set(err, FPULL_EFAIL, "cannot create a staging directory for %s in %s: %s", base,
                       abs ? abs : parent, strerror(saved)),
         -1;
}

static int publish(int pfd, const char *sname, const char *base, const char *dest, int exists,
                   fpull_err *err)
{
  if (!exists)
    return fp_dest_publish_new(pfd, sname, base, dest, err);
  /* One atomic swap: DEST is the old rootfs, then the new one, never missing. The old one
   * leaves under the staging name (removed below, or by the next run if we die first). */
  if (renameat2(pfd, sname, pfd, base, RENAME_EXCHANGE) < 0) {
    if (errno != EINVAL && errno != ENOSYS)
      return fpull_err_set(err, FPULL_EFAIL, "cannot replace %s: %s", dest, strerror(errno));
    char old[600];
    snprintf(old, sizeof old, "%sold", sname);
    if (renameat(pfd, base, pfd, old) < 0)
      return fpull_err_set(err, FPULL_EFAIL, "cannot move %s aside: %s", dest, strerror(errno));
    if (renameat(pfd, sname, pfd, base) < 0) {
      int saved = errno;
      (void)renameat(pfd, old, pfd, base);
      return fpull_err_set(err, FPULL_EFAIL, "cannot rename into %s: %s", dest, strerror(saved));
    }
    if (fp_rm_rf_at(pfd, old) < 0)
      fp_warn("cannot remove the old %s: %s", dest, fp_rm_strerror(errno));
    return 0;
  }
  if (fp_rm_rf_at(pfd, sname) < 0)
    fp_warn("cannot remove the old %s: %s", dest, fp_rm_strerror(errno));
  return 0;
}

int fpull_unpack_rootfs(const char *dest, const struct fpull_layer *layers, size_t n,
                        const struct fpull_unpack_opts *opts, struct fpull_unpack_stats *stats,
                        fpull_err *err)
{
  struct fpull_unpack_opts o = FPULL_UNPACK_OPTS_INIT;
  struct fpull_unpack_stats local;
  if (opts)
    o = *opts;
  int vrc = FP_OPTS_CHECK(&o, FPULL_UNPACK_OPTS, "fpull_unpack_opts", err);
  if (vrc)
    return vrc;
  if (!stats)
    stats = &local;
  memset(stats, 0, sizeof *stats);
  if (!dest || !*dest)
    return fpull_err_set(err, FPULL_EFAIL, "no destination directory");

  __attribute__((cleanup(fp_dest_free))) struct fp_dest dd = {0};
  int rc = fp_dest_split(&dd, dest, 1, fp_dest_parents(opts), err);
  if (rc)
    return rc;
  const char *parent = dd.parent, *base = dd.base;
  cleanup_close int pfd = open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (pfd < 0)
    return fpull_err_set(err, FPULL_EFAIL, "cannot open %s: %s", parent, strerror(errno));

  remove_leftovers(pfd, base);
  int exists;
  rc = fp_dest_check(pfd, base, dest, S_IFDIR, o.force, &exists, err);
  if (rc)
    return rc;
  char sname[512];
  cleanup_close int sfd = make_staging(pfd, parent, base, sname, sizeof sname, err);
  if (sfd < 0)
    return err ? err->code : FPULL_EFAIL;
  rc = build(sfd, layers, n, &o, stats, err);
  /* DEST may have changed while we worked: check again right before the swap. */
  if (!rc && exists)
    rc = fp_dest_check(pfd, base, dest, S_IFDIR, 1, &exists, err);
  if (!rc)
    rc = publish(pfd, sname, base, dest, exists, err);
  if (rc && fp_rm_rf_at(pfd, sname) < 0)
    fp_warn("cannot remove %s: %s", sname, fp_rm_strerror(errno));
  return rc;
}
