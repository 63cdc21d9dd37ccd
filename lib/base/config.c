#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "fpull/cache.h"
#include "fpull/config.h"
#include "fpull/features.h"
#include "util.h"
#include "yaml_doc.h"

void fpull_config_free(struct fpull_config *c)
{
  if (!c)
    return;
  free(c->path);
  fpull_strv_free(c->platform_features);
  fpull_strv_free(c->insecure_registries);
  fpull_strv_free(c->site_features);
  for (size_t i = 0; i < c->n_mirrors; i++) {
    free(c->mirrors[i].registry);
    fpull_strv_free(c->mirrors[i].urls);
  }
  free(c->mirrors);
  free(c->cache_dir);
  fpull_strv_free(c->shared_caches);
  free(c->certs_dir);
  free(c->policy);
  for (size_t i = 0; i < c->n_cpu_tags; i++) {
    free(c->cpu_tags[i].name);
    free(c->cpu_tags[i].architecture);
    fpull_strv_free(c->cpu_tags[i].isa);
  }
  free(c->cpu_tags);
  free(c);
}

static void config_freep(struct fpull_config **c)
{
  fpull_config_free(*c);
}
#define cleanup_config __attribute__((cleanup(config_freep)))

static void ynode_freep(struct fp_ynode **n)
{
  fp_ynode_free(*n);
}
#define cleanup_ynode __attribute__((cleanup(ynode_freep)))

/* "~/x" in a path value means $HOME/x, as users write it in dotfiles. */
static char *expand_home(const char *v)
{
  const char *home = getenv("HOME");
  if (v[0] == '~' && (v[1] == '/' || !v[1]) && home && *home)
    return fp_xasprintf("%s%s", home, v + 1);
  return fp_xstrdup(v);
}

static int parse_path(char **out, const struct fp_ynode *n, const char *name, const char *key,
                      fpull_err *err)
{
  cleanup_free char *v = NULL;
  int r = fp_yaml_string(&v, n, name, key, err);
  if (r)
    return r;
  free(*out);
  *out = expand_home(v);
  return 0;
}

/* A size as the command line takes it ("50G", "500M", "0"): fpull_cache_parse_size's. */
static int parse_size(uint64_t *out, const struct fp_ynode *n, const char *name, const char *key,
                      fpull_err *err)
{
  cleanup_free char *v = NULL;
  int r = fp_yaml_string(&v, n, name, key, err);
  if (r)
    return r;
  int64_t bytes = 0;
  fpull_err why = {0};
  if (fpull_cache_parse_size(&bytes, v, &why))
    return fp_yaml_err(err, name, n, "%s: %s", key, why.msg);
  *out = (uint64_t)bytes;
  return 0;
}

/* The registry names that mean Docker Hub all look up the mirrors of "docker.io". */
static const char *registry_alias(const char *reg)
{
  if (strcasecmp(reg, "index.docker.io") == 0 || strcasecmp(reg, "registry-1.docker.io") == 0)
    return "docker.io";
  return reg;
}

static int parse_mirrors(struct fpull_config *c, const struct fp_ynode *n, const char *name,
                         fpull_err *err)
{
  if (fp_ynode_is_null(n))
    return 0;
  if (n->kind != FP_Y_MAP)
    return fp_yaml_err(err, name, n,
                       "registry-mirrors must be a mapping of registry to URLs, "
                       "not %s",
                       fp_ynode_kind_name(n->kind));
  c->mirrors = fp_xcalloc(n->n / 2 + 1, sizeof *c->mirrors);
  for (size_t i = 0; i + 1 < n->n; i += 2) {
    const struct fp_ynode *key = n->items[i], *val = n->items[i + 1];
    if (!*key->value)
      return fp_yaml_err(err, name, key, "registry-mirrors: empty registry name");
    for (size_t j = 0; j < c->n_mirrors; j++)
      if (strcasecmp(c->mirrors[j].registry, registry_alias(key->value)) == 0)
        return fp_yaml_err(err, name, key, "registry-mirrors: \"%s\" listed twice", key->value);
    cleanup_strv char **urls = NULL;
    cleanup_free char *what = fp_xasprintf("registry-mirrors.%s", key->value);
    int r = fp_yaml_strv(&urls, val, name, what, err);
    if (r)
      return r;
    for (size_t j = 0; urls[j]; j++)
      if (strncasecmp(urls[j], "http://", 7) != 0 && strncasecmp(urls[j], "https://", 8) != 0)
        return fp_yaml_err(err, name, val->kind == FP_Y_SEQ ? val->items[j] : val,
                           "%s: \"%s\" is not an http:// or https:// URL", what, urls[j]);
    struct fpull_mirror *m = &c->mirrors[c->n_mirrors++];
    m->registry = fp_xstrdup_lower(registry_alias(key->value));
    m->urls = steal_pointer(&urls);
  }
  return 0;
}

static int parse_cpu_tag(struct fpull_user_tag *t, const struct fp_ynode *key,
                         const struct fp_ynode *val, const char *name, fpull_err *err)
{
  cleanup_free char *what = fp_xasprintf("cpu-tags.%s", key->value);
  t->name = fp_xstrdup_lower(key->value);
  t->architecture = fp_xstrdup("amd64");
  if (val->kind == FP_Y_SEQ || (val->kind == FP_Y_SCALAR && !fp_ynode_is_null(val)))
    return fp_yaml_strv(&t->isa, val, name, what, err);
  if (val->kind != FP_Y_MAP)
    return fp_yaml_err(err, name, val,
                       "%s must be a list of ISA extensions or a mapping "
                       "with isa: and architecture:",
                       what);
  for (size_t i = 0; i + 1 < val->n; i += 2) {
    const struct fp_ynode *k = val->items[i], *v = val->items[i + 1];
    int r;
    if (strcmp(k->value, "isa") == 0) {
      r = fp_yaml_strv(&t->isa, v, name, what, err);
    } else if (strcmp(k->value, "architecture") == 0) {
      r = fp_yaml_string(&t->architecture, v, name, "architecture", err);
      if (r == 0) {
        char *lower = fp_xstrdup_lower(t->architecture);
        free(t->architecture);
        t->architecture = lower;
      }
    } else {
      fp_warn("%s:%u:%u: unknown key \"%s\" in %s ignored", name, k->line, k->column, k->value,
              what);
      r = 0;
    }
    if (r)
      return r;
  }
  if (!t->isa || !t->isa[0])
    return fp_yaml_err(err, name, val, "%s: isa: must list at least one extension", what);
  return 0;
}

/* ISA names are compared with what CPUID decoding reports: a name with a separator in it
 * can never match, so it is a mistake worth pointing at. */
/* A list of directories ("~/" is $HOME), each absolute: a relative one would mean another
 * cache in every job's working directory. */
static int parse_path_list(char ***out, const struct fp_ynode *n, const char *name, const char *key,
                           fpull_err *err)
{
  int r = fp_yaml_strv(out, n, name, key, err);
  for (size_t i = 0; r == 0 && *out && (*out)[i]; i++) {
    char *full = expand_home((*out)[i]);
    free((*out)[i]);
    (*out)[i] = full;
    if (full[0] != '/')
      return fp_yaml_err(err, name, n->kind == FP_Y_SEQ ? n->items[i] : n,
                         "%s: \"%s\" is not an absolute directory", key, full);
  }
  return r;
}

static int check_isa_names(const struct fpull_user_tag *t, const struct fp_ynode *val,
                           const char *name, fpull_err *err)
{
  const struct fp_ynode *list = val->kind == FP_Y_MAP ? fp_ynode_get(val, "isa") : val;
  for (size_t i = 0; t->isa && t->isa[i]; i++)
    if (strpbrk(t->isa[i], ",: \t/"))
      return fp_yaml_err(err, name, list && list->kind == FP_Y_SEQ ? list->items[i] : list,
                         "cpu-tags.%s: \"%s\" is not an ISA extension name", t->name, t->isa[i]);
  return 0;
}

static int parse_cpu_tags(struct fpull_config *c, const struct fp_ynode *n, const char *name,
                          fpull_err *err)
{
  if (fp_ynode_is_null(n))
    return 0;
  if (n->kind != FP_Y_MAP)
    return fp_yaml_err(err, name, n,
                       "cpu-tags must be a mapping of tag to ISA extensions, "
                       "not %s",
                       fp_ynode_kind_name(n->kind));
  c->cpu_tags = fp_xcalloc(n->n / 2 + 1, sizeof *c->cpu_tags);
  for (size_t i = 0; i + 1 < n->n; i += 2) {
    const struct fp_ynode *key = n->items[i];
    if (!*key->value || strpbrk(key->value, ",: \t"))
      return fp_yaml_err(err, name, key, "cpu-tags: \"%s\" is not a usable feature name",
                         key->value);
    for (size_t j = 0; j < c->n_cpu_tags; j++)
      if (strcasecmp(c->cpu_tags[j].name, key->value) == 0)
        return fp_yaml_err(err, name, key, "cpu-tags: \"%s\" defined twice", key->value);
    /* Counted before parsing so that fpull_config_free sees a half-filled tag. */
    struct fpull_user_tag *t = &c->cpu_tags[c->n_cpu_tags++];
    int r = parse_cpu_tag(t, key, n->items[i + 1], name, err);
    if (!r)
      r = check_isa_names(t, n->items[i + 1], name, err);
    if (r)
      return r;
  }
  return 0;
}

static int parse_key(struct fpull_config *c, const struct fp_ynode *key, const struct fp_ynode *val,
                     const char *name, fpull_err *err)
{
  const char *k = key->value;
  if (strcmp(k, "platform-features") == 0)
    return fp_yaml_strv(&c->platform_features, val, name, k, err);
  if (strcmp(k, "site-features") == 0)
    return fp_yaml_strv(&c->site_features, val, name, k, err);
  if (strcmp(k, "detect") == 0)
    return fp_yaml_bool(&c->detect, val, name, k, err);
  if (strcmp(k, "insecure-registries") == 0)
    return fp_yaml_strv(&c->insecure_registries, val, name, k, err);
  if (strcmp(k, "registry-mirrors") == 0)
    return parse_mirrors(c, val, name, err);
  if (strcmp(k, "cache-dir") == 0)
    return parse_path(&c->cache_dir, val, name, k, err);
  if (strcmp(k, "certs-dir") == 0)
    return parse_path(&c->certs_dir, val, name, k, err);
  if (strcmp(k, "shared-caches") == 0)
    return parse_path_list(&c->shared_caches, val, name, k, err);
  if (strcmp(k, "cpu-tags") == 0)
    return parse_cpu_tags(c, val, name, err);
  if (strcmp(k, "max-unpacked") == 0)
    return parse_size(&c->max_unpacked, val, name, k, err);
  if (strcmp(k, "policy") == 0)
    return parse_path(&c->policy, val, name, k, err);
  if (strcmp(k, "require-signatures") == 0)
    return fp_yaml_bool(&c->require_signatures, val, name, k, err);
  if (strcmp(k, "retries") == 0) {
    long x = 0;
    int r = fp_yaml_int(&x, val, 0, 100, name, k, err);
    c->retries = (int)x;
    return r;
  }
  static const char *const keys[] = {"site-features",
                                     "platform-features",
                                     "detect",
                                     "insecure-registries",
                                     "registry-mirrors",
                                     "cache-dir",
                                     "shared-caches",
                                     "certs-dir",
                                     "cpu-tags",
                                     "retries",
                                     "max-unpacked",
                                     "policy",
                                     "require-signatures",
                                     NULL};
  const char *near = fpull_suggest(k, keys);
  fp_warn("%s:%u:%u: unknown key \"%s\" ignored%s%s%s", name, key->line, key->column, k,
          near ? " (did you mean \"" : "", near ? near : "", near ? "\"?)" : "");
  return 0;
}

int fpull_config_parse(struct fpull_config **out, const char *text, size_t len, const char *name,
                       fpull_err *err)
{
  *out = NULL;
  cleanup_config struct fpull_config *c = fp_xcalloc(1, sizeof *c);
  c->detect = 1;
  cleanup_ynode struct fp_ynode *root = NULL;
  int r = fp_yaml_parse(&root, text, len, name, err);
  if (r)
    return r;
  if (root && !fp_ynode_is_null(root)) {
    if (root->kind != FP_Y_MAP)
      return fp_yaml_err(err, name, root, "the config must be a mapping of keys, not %s",
                         fp_ynode_kind_name(root->kind));
    for (size_t i = 0; i + 1 < root->n; i += 2) {
      r = parse_key(c, root->items[i], root->items[i + 1], name, err);
      if (r)
        return r;
    }
  }
  *out = steal_pointer(&c);
  return 0;
}

static int load_file(struct fpull_config **out, const char *path, fpull_err *err)
{
  cleanup_free char *text = NULL;
  size_t len = 0;
  if (fp_read_file(path, FP_YAML_MAX_BYTES, &text, &len) < 0) {
    if (errno == EFBIG)
      return fpull_err_set(err, FPULL_EUSAGE, "%s: config file larger than %u bytes", path,
                           FP_YAML_MAX_BYTES);
    return fpull_err_set(err, FPULL_EUSAGE, "%s: cannot read config file: %s", path,
                         strerror(errno));
  }
  int r = fpull_config_parse(out, text, len, path, err);
  if (r == 0)
    (*out)->path = fp_xstrdup(path);
  return r;
}

static int file_exists(const char *path)
{
  struct stat st;
  return stat(path, &st) == 0;
}

int fpull_config_load(struct fpull_config **out, const char *path, fpull_err *err)
{
  *out = NULL;
  if (path)
    return load_file(out, path, err);

  /* A set $FPULL_CONFIG is the only candidate: it lets a job (and the test suite) say
   * "this config or none", so a missing file means the empty config rather than falling
   * back to the per-user or system file. */
  const char *env = getenv("FPULL_CONFIG");
  if (env && *env) {
    if (file_exists(env))
      return load_file(out, env, err);
    return fpull_config_parse(out, "", 0, env, err);
  }

  const char *xdg = getenv("XDG_CONFIG_HOME");
  const char *home = getenv("HOME");
  cleanup_free char *user = NULL;
  if (xdg && *xdg == '/')
    user = fp_xasprintf("%s/fpull/config.yaml", xdg);
  else if (home && *home)
    user = fp_xasprintf("%s/.config/fpull/config.yaml", home);
  if (user && file_exists(user))
    return load_file(out, user, err);
  if (file_exists("/etc/fpull/config.yaml"))
    return load_file(out, "/etc/fpull/config.yaml", err);
  return fpull_config_parse(out, "", 0, "(none)", err);
}

char *const *fpull_config_mirrors(const struct fpull_config *c, const char *registry)
{
  if (!c || !registry)
    return NULL;
  const char *reg = registry_alias(registry);
  for (size_t i = 0; i < c->n_mirrors; i++)
    if (strcasecmp(c->mirrors[i].registry, reg) == 0)
      return c->mirrors[i].urls;
  return NULL;
}

/* Splits "host:port", "[v6]:port" or "host" into host and port (port "" when none). */
static void split_hostport(const char *hp, char *host, size_t hostsz, const char **port)
{
  const char *colon;
  if (hp[0] == '[') {
    const char *close = strchr(hp, ']');
    size_t n = close ? (size_t)(close - hp - 1) : strlen(hp + 1);
    snprintf(host, hostsz, "%.*s", (int)n, hp + 1);
    *port = close && close[1] == ':' ? close + 2 : "";
    return;
  }
  colon = strchr(hp, ':');
  if (colon && strchr(colon + 1, ':'))
    colon = NULL; /* a bare IPv6 address */
  size_t n = colon ? (size_t)(colon - hp) : strlen(hp);
  snprintf(host, hostsz, "%.*s", (int)n, hp);
  *port = colon ? colon + 1 : "";
}

/* "10.0.0.0/8" style entries, as docker's insecure-registries accepts them. */
static int in_cidr(const char *entry, const char *host)
{
  const char *slash = strchr(entry, '/');
  if (!slash)
    return 0;
  char net[64];
  snprintf(net, sizeof net, "%.*s", (int)(slash - entry), entry);
  char *end;
  long bits = strtol(slash + 1, &end, 10);
  struct in_addr a, h;
  if (*end || bits < 0 || bits > 32 || inet_pton(AF_INET, net, &a) != 1 ||
      inet_pton(AF_INET, host, &h) != 1)
    return 0;
  uint32_t mask = bits == 0 ? 0 : htonl(~0u << (32 - bits));
  return (a.s_addr & mask) == (h.s_addr & mask);
}

int fpull_config_is_insecure(const struct fpull_config *c, const char *hostport)
{
  if (!c || !hostport)
    return 0;
  char host[256];
  const char *port;
  split_hostport(hostport, host, sizeof host, &port);
  for (size_t i = 0; c->insecure_registries && c->insecure_registries[i]; i++) {
    const char *e = c->insecure_registries[i];
    /* Users paste URLs; the scheme says nothing about which host is meant. */
    if (strncasecmp(e, "http://", 7) == 0)
      e += 7;
    else if (strncasecmp(e, "https://", 8) == 0)
      e += 8;
    size_t elen = strlen(e);
    while (elen && e[elen - 1] == '/')
      elen--;
    char entry[256];
    snprintf(entry, sizeof entry, "%.*s", (int)elen, e);
    if (strcasecmp(entry, hostport) == 0 || in_cidr(entry, host))
      return 1;
    /* An entry without a port covers every port of that host. */
    char ehost[256];
    const char *eport;
    split_hostport(entry, ehost, sizeof ehost, &eport);
    if (!*eport && strcasecmp(ehost, host) == 0)
      return 1;
  }
  return 0;
}
