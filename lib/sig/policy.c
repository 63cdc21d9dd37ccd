/* containers-policy.json: a strict reader (an unknown, duplicate or invalid field rejects
 * the whole file, as containers/image does) and the choice of the one requirement list
 * that applies to an image (docker/policyconfiguration/naming.go's scope order). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "registry/json_strict.h"
#include "sig/policy.h"
#include "base/util.h"
#include "fpull/ref.h"

struct scoped {
  char *scope;
  struct fp_reqlist list;
};

struct fpull_policy {
  char *name;
  struct fp_reqlist def;
  struct scoped *docker;
  size_t n_docker;
  struct fp_reqlist *docker_default; /* the docker transport's "" scope, or NULL */
};

void fp_dref_clear(struct fp_dref *d)
{
  free(d->name);
  free(d->tag);
  free(d->digest);
  memset(d, 0, sizeof *d);
}

int fp_dref_parse(struct fp_dref *d, const char *text)
{
  memset(d, 0, sizeof *d);
  if (!text || !*text || strncmp(text, "docker://", 9) == 0 || strchr(text, '#'))
    return -1;
  struct fpull_ref *r = NULL;
  fpull_err e = {0};
  if (fpull_ref_parse(&r, text, &e) != 0)
    return -1;
  /* fpull's parser implies :latest; a policy tells a repository-only name apart. */
  const char *at = strchr(text, '@');
  size_t upto = at ? (size_t)(at - text) : strlen(text);
  const char *slash = memrchr(text, '/', upto);
  const char *last = slash ? slash + 1 : text;
  int tagged = memchr(last, ':', upto - (size_t)(last - text)) != NULL;
  d->name = fp_xasprintf("%s/%s", r->registry, r->repository);
  d->tag = tagged ? fp_xstrdup(r->tag) : NULL;
  d->digest = fp_xstrdup(r->digest);
  fpull_ref_free(r);
  return 0;
}

char *fp_dref_string(const struct fp_dref *d)
{
  if (d->digest)
    return fp_xasprintf("%s@%s", d->name, d->digest);
  if (d->tag)
    return fp_xasprintf("%s:%s", d->name, d->tag);
  return fp_xstrdup(d->name);
}

/* ---- signedIdentity (signature/policy_reference_match.go) ---- */

static int named_only(const struct fp_dref *d)
{
  return !d->tag && !d->digest;
}

static int match_exact(const struct fp_dref *a, const struct fp_dref *b)
{
  if (named_only(a) || named_only(b))
    return 0;
  cleanup_free char *sa = fp_dref_string(a);
  cleanup_free char *sb = fp_dref_string(b);
  return strcmp(sa, sb) == 0;
}

static int match_repo_digest_or_exact(const struct fp_dref *image, const struct fp_dref *sig)
{
  /* By digest, the digest itself is checked against the payload elsewhere: the repository
   * must match and the signature must name some tag or digest (cosign's repository-only
   * identity does not). */
  if (image->digest)
    return !named_only(sig) && strcmp(image->name, sig->name) == 0;
  return match_exact(image, sig);
}

int fp_identity_accepts(const struct fp_identity *id, const struct fp_dref *image,
                        const struct fp_dref *sig)
{
  struct fp_dref fixed = {0};
  int ok = 0;
  switch (id->type) {
  case FP_ID_REPO_DIGEST_OR_EXACT:
    return match_repo_digest_or_exact(image, sig);
  case FP_ID_EXACT:
    return match_exact(image, sig);
  case FP_ID_REPOSITORY:
    return strcmp(image->name, sig->name) == 0;
  case FP_ID_EXACT_REFERENCE:
    if (fp_dref_parse(&fixed, id->a) == 0)
      ok = match_exact(&fixed, sig);
    break;
  case FP_ID_EXACT_REPOSITORY:
    if (fp_dref_parse(&fixed, id->a) == 0)
      ok = strcmp(fixed.name, sig->name) == 0;
    break;
  case FP_ID_REMAP: {
    /* The prefix matches whole components of the pulled name: the name itself or the name
     * continued by '/'. */
    size_t pl = strlen(id->a);
    if (strncmp(image->name, id->a, pl) != 0 || (image->name[pl] != '\0' && image->name[pl] != '/'))
      return match_repo_digest_or_exact(image, sig);
    fixed.name = fp_xasprintf("%s%s", id->b, image->name + pl);
    fixed.tag = fp_xstrdup(image->tag);
    fixed.digest = fp_xstrdup(image->digest);
    ok = match_repo_digest_or_exact(&fixed, sig);
    break;
  }
  }
  fp_dref_clear(&fixed);
  return ok;
}

/* ---- the reader ---- */

static void reqlist_free(struct fp_reqlist *l)
{
  for (size_t i = 0; i < l->n; i++) {
    struct fp_req *r = &l->r[i];
    free(r->name);
    fpull_strv_free(r->key_paths);
    fpull_strv_free(r->key_datas);
    free(r->id.a);
    free(r->id.b);
  }
  free(l->r);
  free(l->scope);
  memset(l, 0, sizeof *l);
}

void fpull_policy_free(fpull_policy *p)
{
  if (!p)
    return;
  reqlist_free(&p->def);
  for (size_t i = 0; i < p->n_docker; i++) {
    free(p->docker[i].scope);
    reqlist_free(&p->docker[i].list);
  }
  free(p->docker);
  free(p->name);
  free(p);
}

const char *fpull_policy_name(const fpull_policy *p)
{
  return p ? p->name : NULL;
}

struct rd {
  const char *name; /* the file */
  const char *where;
  fpull_err *err;
};

__attribute__((format(printf, 2, 3))) static int bad(struct rd *rd, const char *fmt, ...)
{
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return fpull_err_set(rd->err, FPULL_EUSAGE, "policy %s: %s: %s", rd->name, rd->where, msg);
}

/* Every member of o must be one of allowed (NULL-terminated), spelled exactly. */
static int only_keys(struct rd *rd, const cJSON *o, const char *const *allowed)
{
  if (!cJSON_IsObject(o))
    return bad(rd, "not a JSON object");
  for (const cJSON *c = o->child; c; c = c->next) {
    size_t i = 0;
    while (allowed[i] && strcmp(allowed[i], c->string) != 0)
      i++;
    if (!allowed[i])
      return bad(rd, "unknown key \"%.64s\"", c->string);
  }
  return 0;
}

static const char *str_member(const cJSON *o, const char *key)
{
  const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(m) ? m->valuestring : NULL;
}

/* A string member that must be a non-empty string when present. */
static int opt_string(struct rd *rd, const cJSON *o, const char *key, const char **out)
{
  const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, key);
  *out = NULL;
  if (!m)
    return 0;
  if (!cJSON_IsString(m) || !m->valuestring[0])
    return bad(rd, "\"%s\" must be a non-empty string", key);
  *out = m->valuestring;
  return 0;
}

static int string_list(struct rd *rd, const cJSON *o, const char *key, char ***out)
{
  const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, key);
  *out = NULL;
  if (!m)
    return 0;
  if (!cJSON_IsArray(m) || !m->child)
    return bad(rd, "\"%s\" must be a non-empty list of strings", key);
  char **v = fp_xcalloc(1, sizeof *v);
  for (const cJSON *c = m->child; c; c = c->next) {
    if (!cJSON_IsString(c) || !c->valuestring[0]) {
      fpull_strv_free(v);
      return bad(rd, "\"%s\" must be a non-empty list of strings", key);
    }
    v = fp_strv_push(v, c->valuestring);
  }
  *out = v;
  return 0;
}

/* A prefix of remapIdentity: host[:port] or a repository (namespace), no tag or digest. */
static int valid_prefix(const char *s)
{
  if (!*s || s[strlen(s) - 1] == '/' || strstr(s, "//") || strchr(s, '@'))
    return 0;
  const char *slash = strchr(s, '/');
  if (slash && strchr(slash, ':'))
    return 0;
  for (const char *c = s; *c; c++)
    if (!(strchr("abcdefghijklmnopqrstuvwxyz0123456789._-/:[]", *c)))
      return 0;
  return 1;
}

static int parse_identity(struct rd *rd, const cJSON *o, struct fp_identity *id)
{
  rd->where = "signedIdentity";
  const char *type = str_member(o, "type");
  if (!cJSON_IsObject(o) || !type)
    return bad(rd, "must be an object with a \"type\"");
  static const char *const only_type[] = {"type", NULL};
  if (strcmp(type, "matchRepoDigestOrExact") == 0 || strcmp(type, "matchExact") == 0 ||
      strcmp(type, "matchRepository") == 0) {
    id->type = type[5] == 'R' && type[9] == 'D'  ? FP_ID_REPO_DIGEST_OR_EXACT
               : strcmp(type, "matchExact") == 0 ? FP_ID_EXACT
                                                 : FP_ID_REPOSITORY;
    return only_keys(rd, o, only_type);
  }
  struct fp_dref d = {0};
  int rc = 0;
  if (strcmp(type, "exactReference") == 0) {
    static const char *const k[] = {"type", "dockerReference", NULL};
    const char *v = str_member(o, "dockerReference");
    id->type = FP_ID_EXACT_REFERENCE;
    if ((rc = only_keys(rd, o, k)) != 0)
      return rc;
    if (!v || fp_dref_parse(&d, v) != 0 || named_only(&d))
      rc = bad(rd, "exactReference needs a \"dockerReference\" with a tag or digest");
    id->a = fp_xstrdup(v);
  } else if (strcmp(type, "exactRepository") == 0) {
    static const char *const k[] = {"type", "dockerRepository", NULL};
    const char *v = str_member(o, "dockerRepository");
    id->type = FP_ID_EXACT_REPOSITORY;
    if ((rc = only_keys(rd, o, k)) != 0)
      return rc;
    if (!v || fp_dref_parse(&d, v) != 0 || !named_only(&d))
      rc = bad(rd, "exactRepository needs a \"dockerRepository\" without tag or digest");
    id->a = fp_xstrdup(v);
  } else if (strcmp(type, "remapIdentity") == 0) {
    static const char *const k[] = {"type", "prefix", "signedPrefix", NULL};
    const char *p = str_member(o, "prefix"), *sp = str_member(o, "signedPrefix");
    id->type = FP_ID_REMAP;
    if ((rc = only_keys(rd, o, k)) != 0)
      return rc;
    if (!p || !sp || !valid_prefix(p) || !valid_prefix(sp))
      rc = bad(rd, "remapIdentity needs a \"prefix\" and a \"signedPrefix\", each a host, "
                   "namespace or repository");
    id->a = fp_xstrdup(p);
    id->b = fp_xstrdup(sp);
  } else {
    rc = bad(rd, "unknown signedIdentity type \"%.64s\"", type);
  }
  fp_dref_clear(&d);
  return rc;
}

static int parse_sigstore(struct rd *rd, const cJSON *o, struct fp_req *r)
{
  static const char *const k[] = {"type",
                                  "keyPath",
                                  "keyPaths",
                                  "keyData",
                                  "keyDatas",
                                  "fulcio",
                                  "pki",
                                  "rekorPublicKeyPath",
                                  "rekorPublicKeyPaths",
                                  "rekorPublicKeyData",
                                  "rekorPublicKeyDatas",
                                  "signedIdentity",
                                  NULL};
  int rc = only_keys(rd, o, k);
  if (rc)
    return rc;
  const char *path = NULL, *data = NULL;
  char **paths = NULL, **datas = NULL;
  if ((rc = opt_string(rd, o, "keyPath", &path)) || (rc = opt_string(rd, o, "keyData", &data)) ||
      (rc = string_list(rd, o, "keyPaths", &paths)) ||
      (rc = string_list(rd, o, "keyDatas", &datas)))
    goto out;
  int fulcio = cJSON_GetObjectItemCaseSensitive(o, "fulcio") != NULL;
  int pki = cJSON_GetObjectItemCaseSensitive(o, "pki") != NULL;
  int sources = !!path + !!data + !!paths + !!datas + fulcio + pki;
  if (sources != 1) {
    rc = bad(rd, "sigstoreSigned needs exactly one of keyPath, keyPaths, keyData, keyDatas, "
                 "fulcio and pki");
    goto out;
  }
  r->type = FP_REQ_SIGSTORE;
  r->key_paths = paths ? paths : path ? fp_strv_push(fp_xcalloc(1, sizeof(char *)), path) : NULL;
  r->key_datas = datas ? datas : data ? fp_strv_push(fp_xcalloc(1, sizeof(char *)), data) : NULL;
  paths = datas = NULL;
  static const char *const rekor[] = {"rekorPublicKeyPath", "rekorPublicKeyPaths",
                                      "rekorPublicKeyData", "rekorPublicKeyDatas", NULL};
  const char *why = fulcio ? "fulcio" : pki ? "pki" : NULL;
  for (size_t i = 0; !why && rekor[i]; i++)
    if (cJSON_GetObjectItemCaseSensitive(o, rekor[i]))
      why = rekor[i];
  if (why) {
    r->type = FP_REQ_UNSUPPORTED;
    free(r->name);
    r->name = fp_xasprintf("sigstoreSigned with %s", why);
  }
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "signedIdentity");
  if (id)
    rc = parse_identity(rd, id, &r->id);
out:
  fpull_strv_free(paths);
  fpull_strv_free(datas);
  return rc;
}

static int parse_req(struct rd *rd, const cJSON *o, struct fp_req *r)
{
  memset(r, 0, sizeof *r);
  const char *type = str_member(o, "type");
  if (!cJSON_IsObject(o) || !type)
    return bad(rd, "a requirement must be an object with a \"type\"");
  r->name = fp_xstrdup(type);
  if (strcmp(type, "insecureAcceptAnything") == 0 || strcmp(type, "reject") == 0) {
    static const char *const k[] = {"type", NULL};
    r->type = type[0] == 'r' ? FP_REQ_REJECT : FP_REQ_ACCEPT;
    return only_keys(rd, o, k);
  }
  if (strcmp(type, "signedBy") == 0) {
    static const char *const k[] = {"type",    "keyType",        "keyPath", "keyPaths",
                                    "keyData", "signedIdentity", NULL};
    r->type = FP_REQ_UNSUPPORTED;
    int rc = only_keys(rd, o, k);
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "signedIdentity");
    return rc ? rc : id ? parse_identity(rd, id, &r->id) : 0;
  }
  if (strcmp(type, "sigstoreSigned") == 0)
    return parse_sigstore(rd, o, r);
  return bad(rd, "unknown requirement type \"%.64s\"", type);
}

static int parse_list(struct rd *rd, const cJSON *a, const char *scope, struct fp_reqlist *l)
{
  memset(l, 0, sizeof *l);
  l->scope = fp_xstrdup(scope);
  if (!cJSON_IsArray(a) || !a->child)
    return bad(rd, "the requirements must be a non-empty list");
  size_t n = (size_t)cJSON_GetArraySize(a);
  l->r = fp_xcalloc(n, sizeof *l->r);
  for (const cJSON *c = a->child; c; c = c->next) {
    int rc = parse_req(rd, c, &l->r[l->n++]);
    if (rc)
      return rc;
  }
  return 0;
}

int fpull_policy_parse(fpull_policy **out, const char *text, size_t len, const char *name,
                       fpull_err *err)
{
  *out = NULL;
  cleanup_json cJSON *root = NULL;
  struct rd rd = {.name = name, .where = "top level", .err = err};
  fpull_err jerr = {0};
  if (fp_json_parse_strict(&root, text, len, FP_POLICY_MAX, "JSON", &jerr) != 0)
    return bad(&rd, "%s", jerr.msg);
  static const char *const top[] = {"default", "transports", NULL};
  int rc = only_keys(&rd, root, top);
  if (rc)
    return rc;
  fpull_policy *p = fp_xcalloc(1, sizeof *p);
  p->name = fp_xstrdup(name);
  const cJSON *def = cJSON_GetObjectItemCaseSensitive(root, "default");
  rd.where = "default";
  rc = def ? parse_list(&rd, def, "default", &p->def) : bad(&rd, "\"default\" is missing");
  const cJSON *tr = cJSON_GetObjectItemCaseSensitive(root, "transports");
  if (rc == 0 && tr && !cJSON_IsObject(tr))
    rc = bad(&rd, "\"transports\" must be an object");
  for (const cJSON *t = tr ? tr->child : NULL; rc == 0 && t; t = t->next) {
    int docker = strcmp(t->string, "docker") == 0;
    if (!cJSON_IsObject(t)) {
      rd.where = t->string;
      rc = bad(&rd, "a transport must map scopes to requirements");
      break;
    }
    for (const cJSON *sc = t->child; rc == 0 && sc; sc = sc->next) {
      cleanup_free char *where = fp_xasprintf("transport %s, scope \"%s\"", t->string, sc->string);
      rd.where = where;
      struct fp_reqlist l;
      /* containers/image takes any docker scope as written (a scope that names no image
       * never applies), so a file skopeo loads, fpull loads too. */
      rc = parse_list(&rd, sc, where, &l);
      if (rc == 0 && docker) {
        p->docker = fp_xrealloc(p->docker, (p->n_docker + 1) * sizeof *p->docker);
        p->docker[p->n_docker].scope = fp_xstrdup(sc->string);
        p->docker[p->n_docker++].list = l;
        memset(&l, 0, sizeof l);
      }
      reqlist_free(&l);
    }
  }
  rd.where = "";
  if (rc) {
    fpull_policy_free(p);
    return rc;
  }
  for (size_t i = 0; i < p->n_docker; i++)
    if (!p->docker[i].scope[0])
      p->docker_default = &p->docker[i].list;
  *out = p;
  return 0;
}

int fpull_policy_load(fpull_policy **out, const char *path, fpull_err *err)
{
  *out = NULL;
  cleanup_free char *found = NULL;
  if (!path) {
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    char *user = xdg && *xdg     ? fp_xasprintf("%s/containers/policy.json", xdg)
                 : home && *home ? fp_xasprintf("%s/.config/containers/policy.json", home)
                                 : NULL;
    if (user && access(user, F_OK) == 0)
      found = user;
    else {
      free(user);
      if (access("/etc/containers/policy.json", F_OK) == 0)
        found = fp_xstrdup("/etc/containers/policy.json");
    }
    if (!found)
      return 0;
    path = found;
  }
  cleanup_free char *data = NULL;
  size_t len = 0;
  if (fp_read_file(path, FP_POLICY_MAX, &data, &len) != 0)
    return fpull_err_set(err, FPULL_EUSAGE, "policy %s: cannot be read: %s", path,
                         errno == EFBIG ? "larger than 1 MiB" : strerror(errno));
  return fpull_policy_parse(out, data, len, path, err);
}

const struct fp_reqlist *fp_policy_for(const fpull_policy *p, const struct fp_dref *image)
{
  /* 1. the exact reference, 2. each namespace of the repository up to the host, 3. *.domain
   * of the host without its port, 4. the transport's "", 5. the default. */
  cleanup_free char *ident = fp_dref_string(image);
  char **cands = fp_strv_push(fp_xcalloc(1, sizeof(char *)), ident);
  cleanup_free char *ns = fp_xstrdup(image->name);
  for (;;) {
    cands = fp_strv_push(cands, ns);
    char *slash = strrchr(ns, '/');
    if (!slash)
      break;
    *slash = '\0';
  }
  /* ns is now the host[:port] */
  char *colon = ns[0] == '[' ? strstr(ns, "]:") : strrchr(ns, ':');
  if (colon)
    colon[ns[0] == '[' ? 1 : 0] = '\0';
  for (char *dot = strchr(ns, '.'); dot; dot = strchr(dot + 1, '.')) {
    cleanup_free char *w = fp_xasprintf("*%s", dot);
    cands = fp_strv_push(cands, w);
  }
  const struct fp_reqlist *hit = NULL;
  for (size_t c = 0; !hit && cands[c]; c++)
    for (size_t i = 0; !hit && i < p->n_docker; i++)
      if (p->docker[i].scope[0] && strcmp(p->docker[i].scope, cands[c]) == 0)
        hit = &p->docker[i].list;
  fpull_strv_free(cands);
  if (hit)
    return hit;
  return p->docker_default ? p->docker_default : &p->def;
}
