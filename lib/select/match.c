/* Eligibility and ranking of index entries against the target (contract, "Features and
 * matching"): the same input always gives the same choice. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "fpull/match.h"
#include "tagdb.h"
#include "base/util.h"

/* What ranking compares, computed once per eligible entry. */
struct rank_key {
  size_t index;
  size_t n_features; /* rule 1: distinct features named */
  long variant;      /* rule 2: -1 for none */
  size_t isa_size;   /* rule 3: the largest CPU tag's ISA set, 0 for none */
  const char *tag;   /* rule 3: that tag (owned by the tagdb), NULL for none */
  long compute;      /* rule 4: major * 1000 + minor, -1 for none */
};

/* "v3" -> 3, "v8.2" -> 8002; -1 when it is not such a variant. */
static long variant_number(const char *v)
{
  if (!v || tolower((unsigned char)v[0]) != 'v' || !isdigit((unsigned char)v[1]))
    return -1;
  char *end;
  long major = strtol(v + 1, &end, 10), minor = 0;
  if (*end == '.' && isdigit((unsigned char)end[1]))
    minor = strtol(end + 1, &end, 10);
  if (*end || major > 1000 || minor > 999)
    return -1;
  return major * 1000 + minor;
}

/* The variant an entry or target without one stands for, as containerd normalises it: arm is
 * v7, arm64 v8; other architectures have none (amd64's baseline ranks lowest anyway). */
static const char *implied_variant(const char *arch, const char *v)
{
  if (v)
    return v;
  if (strcmp(arch, "arm") == 0)
    return "v7";
  if (strcmp(arch, "arm64") == 0)
    return "v8";
  return NULL;
}

/* 1 when an entry with variant ev may run on a target with variant tv (arch normalised), as
 * containerd's platforms.Only matches: amd64 v1 < v2 < v3 < v4; arm v5 < v6 < v7 < v8 (an arm
 * v4 entry fits only a v4 target); arm64 v8.N fits v8.M for N <= M, v9.N fits v9.M for N <= M,
 * and v8.N fits v9.M for N <= M + 5 (v9.0 corresponds to v8.5). Anything else must be equal. */
static int variant_fits(const char *arch, const char *ev, const char *tv)
{
  ev = implied_variant(arch, ev);
  tv = implied_variant(arch, tv);
  if (!ev)
    return 1;
  if (!tv)
    return 0;
  if (strcasecmp(ev, tv) == 0)
    return 1;
  long e = variant_number(ev), t = variant_number(tv);
  if (e < 0 || t < 0)
    return 0;
  if (strcmp(arch, "arm") == 0)
    return e >= 5000 && e <= t;
  if (strcmp(arch, "arm64") == 0) {
    long em = e / 1000, en = e % 1000, tm = t / 1000, tn = t % 1000;
    if (em == tm)
      return en <= tn;
    return tm == 9 && em == 8 && en <= (tn + 5 < 9 ? tn + 5 : 9);
  }
  return e <= t;
}

static int is_os(const char *a, const char *b)
{
  return a && b && strcasecmp(a, b) == 0;
}

/* Why an entry can never be chosen, whatever the target: it is not an image. */
static const char *not_an_image(const struct fpull_descriptor *d)
{
  if (d->ref_type)
    return strcmp(d->ref_type, "attestation-manifest") == 0 ? "attestation" : "not an image";
  if (!d->platform)
    return "no platform";
  if (is_os(d->platform->os, "unknown") && is_os(d->platform->architecture, "unknown"))
    return "not an image (unknown/unknown)";
  return NULL;
}

/* The entry's features, folded and made canonical, each once (NULL-terminated). */
static char **entry_features(const struct fpull_descriptor *d, const struct fpull_tagdb *db)
{
  char **v = fp_xcalloc(1, sizeof *v);
  for (size_t i = 0; d->platform && d->platform->features && d->platform->features[i]; i++) {
    cleanup_free char *low = fp_xstrdup_lower(d->platform->features[i]);
    const char *canon = fpull_tagdb_canonical(db, low);
    if (!fp_strv_contains(v, canon ? canon : low))
      v = fp_strv_push(v, canon ? canon : low);
  }
  return v;
}

static void rank_key_fill(struct rank_key *k, size_t index, const struct fpull_descriptor *d,
                          char *const *features, const struct fpull_tagdb *db)
{
  memset(k, 0, sizeof *k);
  k->index = index;
  k->n_features = fpull_strv_len(features);
  cleanup_free char *arch =
      fpull_arch_normalise(d->platform->architecture ? d->platform->architecture : "");
  const char *variant = implied_variant(arch, d->platform->variant);
  k->variant = variant ? variant_number(variant) : -1;
  /* An entry's CPU tag implies its x86-64 level: icelake-server ranks as v4, declared or not. */
  long level = strcmp(arch, "amd64") == 0 ? (long)fp_tagdb_x86_level(db, features) * 1000 : 0;
  if (level > k->variant)
    k->variant = level;
  k->compute = -1;
  for (size_t i = 0; features[i]; i++) {
    const struct fp_tag *t = fp_tagdb_find(db, features[i]);
    if (t && t->n_isa > k->isa_size) {
      k->isa_size = t->n_isa;
      k->tag = t->name;
    }
    struct fp_version v;
    if (strncmp(features[i], "nv-compute-", 11) == 0 &&
        fp_version_parse(&v, features[i] + 11, '-') == 0 && v.n == 2) {
      long c = (long)v.v[0] * 1000 + v.v[1];
      if (c > k->compute)
        k->compute = c;
    }
  }
}

/* Orders the better entry first. Rule 3 compares set sizes: a strict superset is always
 * larger, and the contract breaks incomparable sets by their count too. */
static int rank_cmp(const void *pa, const void *pb)
{
  const struct rank_key *a = pa, *b = pb;
  if (a->n_features != b->n_features)
    return a->n_features > b->n_features ? -1 : 1;
  if (a->variant != b->variant)
    return a->variant > b->variant ? -1 : 1;
  if (a->isa_size != b->isa_size)
    return a->isa_size > b->isa_size ? -1 : 1;
  if (a->compute != b->compute)
    return a->compute > b->compute ? -1 : 1;
  return a->index < b->index ? -1 : a->index > b->index;
}

static char *join_missing(char *const *missing)
{
  struct fp_buf b = {0};
  fp_buf_append(&b, "lacks ", 6);
  for (size_t i = 0; missing[i]; i++) {
    if (i)
      fp_buf_append(&b, ", ", 2);
    fp_buf_append(&b, missing[i], strlen(missing[i]));
  }
  return b.data;
}

static void check_entry(struct fpull_match_entry *e, const struct fpull_target *t,
                        const struct fpull_descriptor *d, const struct fpull_tagdb *db)
{
  /* Missing features are named as the index lists them (lower case), each once. */
  e->missing = fp_xcalloc(1, sizeof *e->missing);
  char *const *listed = d->platform ? d->platform->features : NULL;
  for (size_t i = 0; listed && listed[i]; i++) {
    cleanup_free char *low = fp_xstrdup_lower(listed[i]);
    if (!fpull_featureset_has(t->features, low, db) && !fp_strv_contains(e->missing, low))
      e->missing = fp_strv_push(e->missing, low);
  }

  const char *bad = not_an_image(d);
  if (bad) {
    e->why = fp_xstrdup(bad);
    return;
  }
  const struct fpull_platform *p = d->platform;
  if (!is_os(p->os, t->os)) {
    e->why = fp_xasprintf("os %s", p->os ? p->os : "(none)");
    return;
  }
  cleanup_free char *arch = fpull_arch_normalise(p->architecture ? p->architecture : "");
  if (strcmp(arch, t->architecture) != 0) {
    e->why = fp_xasprintf("architecture %s", *arch ? arch : "(none)");
    return;
  }
  if (!variant_fits(arch, p->variant, t->variant)) {
    const char *ev = implied_variant(arch, p->variant), *tv = implied_variant(arch, t->variant);
    e->why = fp_xasprintf("variant %s%s above %s", ev, p->variant ? "" : " (none given)",
                          tv ? tv : "none");
    return;
  }
  if (e->missing[0]) {
    e->why = join_missing(e->missing);
    return;
  }
  e->eligible = 1;
}

void fpull_match_free(struct fpull_match *m)
{
  if (!m)
    return;
  for (size_t i = 0; i < m->n; i++) {
    fpull_strv_free(m->entries[i].missing);
    free(m->entries[i].why);
  }
  free(m->entries);
  free(m);
}

int fpull_match_entries(struct fpull_match **out, const struct fpull_target *t,
                        const struct fpull_descriptor *entries, size_t n,
                        const struct fpull_tagdb *db, fpull_err *err)
{
  struct fpull_match *m = fp_xcalloc(1, sizeof *m);
  m->entries = fp_xcalloc(n, sizeof *m->entries);
  m->n = n;
  m->chosen = -1;
  struct rank_key *keys = fp_xcalloc(n, sizeof *keys);
  size_t n_keys = 0;
  for (size_t i = 0; i < n; i++) {
    cleanup_strv char **features = entry_features(&entries[i], db);
    check_entry(&m->entries[i], t, &entries[i], db);
    if (m->entries[i].eligible)
      rank_key_fill(&keys[n_keys++], i, &entries[i], features, db);
  }
  qsort(keys, n_keys, sizeof *keys, rank_cmp);
  for (size_t r = 0; r < n_keys; r++)
    m->entries[keys[r].index].rank = (int)r + 1;
  if (n_keys)
    m->chosen = (long)keys[0].index;
  free(keys);
  *out = m;
  return 0;
}

/* ---- explanations (fpull inspect) ---- */

/* The variant rule 2 compared: the declared one, or the one the entry's CPU tag implies. */
static const char *variant_text(char *buf, size_t len, const struct rank_key *k)
{
  if (k->variant < 0)
    snprintf(buf, len, "none");
  else if (k->variant % 1000)
    snprintf(buf, len, "v%ld.%ld", k->variant / 1000, k->variant % 1000);
  else
    snprintf(buf, len, "v%ld", k->variant / 1000);
  return buf;
}

static const char *compute_text(char *buf, size_t len, long c)
{
  if (c < 0)
    snprintf(buf, len, "none");
  else
    snprintf(buf, len, "nv-compute-%ld-%ld", c / 1000, c % 1000);
  return buf;
}

/* The first rule of rank_cmp that tells a (ranked r) from b (ranked r + 1), in words. */
static char *explain(const struct rank_key *a, const struct rank_key *b, int r,
                     const struct fpull_descriptor *entries)
{
  char x[64], y[64];
  if (a->n_features != b->n_features)
    return fp_xasprintf("more features than rank %d (%zu vs %zu; rule 1)", r + 1, a->n_features,
                        b->n_features);
  if (a->variant != b->variant)
    return fp_xasprintf("higher variant than rank %d (%s vs %s; rule 2)", r + 1,
                        variant_text(x, sizeof x, a), variant_text(y, sizeof y, b));
  if (a->isa_size != b->isa_size)
    return fp_xasprintf("more demanding CPU tag than rank %d (%s, %zu extensions, vs %s, %zu; "
                        "rule 3)",
                        r + 1, a->tag ? a->tag : "none", a->isa_size, b->tag ? b->tag : "none",
                        b->isa_size);
  if (a->compute != b->compute)
    return fp_xasprintf("higher compute capability than rank %d (%s vs %s; rule 4)", r + 1,
                        compute_text(x, sizeof x, a->compute),
                        compute_text(y, sizeof y, b->compute));
  return fp_xasprintf("earlier in the index than rank %d (equal on rules 1-4; rule 5)", r + 1);
}

char *fpull_match_why(const struct fpull_match *m, const struct fpull_descriptor *entries, size_t i,
                      const struct fpull_tagdb *db)
{
  if (i >= m->n || !m->entries[i].eligible)
    return NULL;
  /* The ranks as they are now: a GPU preflight may have moved entries up since ranking. */
  int r = m->entries[i].rank;
  size_t next = m->n;
  for (size_t k = 0; k < m->n; k++)
    if (m->entries[k].eligible && m->entries[k].rank == r + 1)
      next = k;
  if (next == m->n)
    return NULL;
  struct rank_key a, b;
  cleanup_strv char **fa = entry_features(&entries[i], db);
  cleanup_strv char **fb = entry_features(&entries[next], db);
  rank_key_fill(&a, i, &entries[i], fa, db);
  rank_key_fill(&b, next, &entries[next], fb, db);
  return explain(&a, &b, r, entries);
}

/* What entry i needs beyond the target: its missing features, and its variant when that is
 * above the target's ("avx2,fma and variant v3"). */
static void needs_of(char *buf, size_t len, const struct fpull_match_entry *e,
                     const struct fpull_descriptor *d)
{
  size_t l = 0;
  buf[0] = '\0';
  for (char **f = e->missing; f && *f && l < len; f++)
    l += (size_t)snprintf(buf + l, len - l, "%s%s", l ? "," : "", *f);
  if (l < len && e->why && strncmp(e->why, "variant ", 8) == 0) {
    cleanup_free char *arch = fpull_arch_normalise(d->platform->architecture);
    const char *ev = implied_variant(arch, d->platform->variant);
    snprintf(buf + l, len - l, "%svariant %s", l ? " and " : "", ev ? ev : "?");
  }
}

/* With features given (--features, --platform's), what of entry i's needs this host has of
 * its own: the features the replacement dropped (issue 43.9), as names to give. */
static void dropped_of(char *buf, size_t len, const struct fpull_match_entry *e,
                       const struct fpull_descriptor *d, const struct fpull_target *h)
{
  size_t l = 0;
  buf[0] = '\0';
  if (!h)
    return;
  for (char **f = e->missing; f && *f && l < len; f++)
    if (fpull_featureset_has(h->features, *f, NULL))
      l += (size_t)snprintf(buf + l, len - l, "%s%s", l ? "," : "", *f);
  if (l >= len || !e->why || strncmp(e->why, "variant ", 8) != 0)
    return;
  cleanup_free char *arch = fpull_arch_normalise(d->platform->architecture);
  if (!h->variant || !variant_fits(arch, d->platform->variant, h->variant))
    return;
  /* amd64's levels are features (x86-64-v3 gives v3); other variants are --platform's. */
  if (strcmp(arch, "amd64") == 0 && d->platform->variant)
    snprintf(buf + l, len - l, "%sx86-64-%s", l ? "," : "", d->platform->variant);
  else
    snprintf(buf + l, len - l, "%svariant %s", l ? " and " : "", h->variant);
}

/* What the note says of the dropped needs: features given replaced the host's (they come
 * from the command line), else --platform's variant left them out; "" when none. */
static void dropped_note(char *buf, size_t len, const struct fpull_target *t, const char *dropped)
{
  int src = 0;
  int given = fpull_featureset_count(t->features) == 0 ||
              (fpull_featureset_get(t->features, 0, &src) && src == FPULL_SRC_CLI);
  if (!*dropped)
    buf[0] = '\0';
  else if (given)
    snprintf(buf, len, "; the given features replace this host's own, which have %s: give them too",
             dropped);
  else
    snprintf(buf, len, "; this host's own features have %s, which --platform left out", dropped);
}

/* For an index: only entries whose os and architecture fit count as "closest" (an arm64
 * entry is never close to an amd64 target), those that lack features and those whose
 * variant is above the target's, since what they lack is what the user has to change;
 * the fewest needs win (a variant counts as one). */
static int index_no_fit(const struct fpull_match *m, const struct fpull_descriptor *entries,
                        const struct fpull_target *t, const char *plat, fpull_err *err)
{
  long best = -1;
  size_t best_needs = 0;
  for (size_t i = 0; i < m->n; i++) {
    const char *why = m->entries[i].why;
    if (!entries[i].platform || entries[i].ref_type || !why)
      continue;
    int variant = strncmp(why, "variant ", 8) == 0;
    size_t needs = fpull_strv_len(m->entries[i].missing) + (variant ? 1 : 0);
    if ((!variant && strncmp(why, "lacks", 5) != 0) || needs == 0)
      continue;
    if (best < 0 || needs < best_needs) {
      best = (long)i;
      best_needs = needs;
    }
  }
  for (size_t i = 0; best < 0 && i < m->n; i++)
    if (m->entries[i].why && strncmp(m->entries[i].why, "requires ", 9) == 0)
      return fpull_err_set(err, FPULL_ENOMATCH, "no entry of the index fits %s; %s %s", plat,
                           entries[i].digest, m->entries[i].why);
  if (best < 0)
    return fpull_err_set(err, FPULL_ENOMATCH, "no entry of the index fits %s (%zu %s)", plat, m->n,
                         m->n == 1 ? "entry" : "entries");
  char needs[512], dropped[512], note[600];
  needs_of(needs, sizeof needs, &m->entries[best], &entries[best]);
  dropped_of(dropped, sizeof dropped, &m->entries[best], &entries[best], t->host);
  dropped_note(note, sizeof note, t, dropped);
  return fpull_err_set(err, FPULL_ENOMATCH,
                       "no entry of the index fits %s; closest is %s, which needs %s%s", plat,
                       entries[best].digest, needs, note);
}

int fpull_match_no_fit(const struct fpull_match *m, const struct fpull_descriptor *entries,
                       int single, const struct fpull_target *t, fpull_err *err)
{
  char plat[128];
  snprintf(plat, sizeof plat, "%s/%s%s%s", t->os, t->architecture, t->variant ? "/" : "",
           t->variant ? t->variant : "");
  if (!single || m->n != 1)
    return index_no_fit(m, entries, t, plat, err);
  const struct fpull_platform *p = entries[0].platform;
  const char *why = m->entries[0].why ? m->entries[0].why : "does not fit";
  if (p && (strncmp(why, "os ", 3) == 0 || strncmp(why, "architecture ", 13) == 0))
    return fpull_err_set(err, FPULL_ENOMATCH, "the image is for %s/%s, the target is %s/%s",
                         p->os ? p->os : "?", p->architecture ? p->architecture : "?", t->os,
                         t->architecture);
  if (strncmp(why, "requires ", 9) == 0)
    return fpull_err_set(err, FPULL_ENOMATCH, "the image %s", why);
  char dropped[512] = "", note[600];
  if (p && m->entries[0].why)
    dropped_of(dropped, sizeof dropped, &m->entries[0], &entries[0], t->host);
  dropped_note(note, sizeof note, t, dropped);
  return fpull_err_set(err, FPULL_ENOMATCH, "the image does not fit %s: %s%s", plat, why, note);
}
