/* fpull login / logout: docker's config.json, edited in place of docker. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "base/opts.h"
#include "registry_internal.h"
#include "base/util.h"
#include "fpull/login.h"

#define CONFIG_MAX (1u << 20)

char *fpull_login_config_path(void)
{
  const char *dc = getenv("DOCKER_CONFIG");
  if (dc && *dc)
    return fp_xasprintf("%s/config.json", dc);
  const char *home = getenv("HOME");
  return fp_xasprintf("%s/.docker/config.json", home && *home ? home : ".");
}

static const char *auth_key(const char *registry)
{
  if (strcmp(registry, "docker.io") == 0 || strcmp(registry, "index.docker.io") == 0 ||
      strcmp(registry, "registry-1.docker.io") == 0)
    return "https://index.docker.io/v1/";
  return registry;
}

static void json_deletep(cJSON **j)
{
  cJSON_Delete(*j);
}

static int load(cJSON **out, const char *path, fpull_err *err)
{
  cleanup_free char *text = NULL;
  size_t len = 0;
  if (fp_read_file(path, CONFIG_MAX, &text, &len) < 0) {
    if (errno != ENOENT)
      return fpull_err_set(err, FPULL_EFAIL, "%s: %s", path, strerror(errno));
    *out = cJSON_CreateObject();
    return 0;
  }
  *out = cJSON_ParseWithLength(text, len);
  if (!*out || !cJSON_IsObject(*out)) {
    cJSON_Delete(*out);
    *out = NULL;
    return fpull_err_set(err, FPULL_EUSAGE, "%s: not a JSON object", path);
  }
  return 0;
}

/* Beside the file, 0600 from the start (the file holds passwords), then renamed in. */
static int store(cJSON *doc, const char *path, fpull_err *err)
{
  cleanup_free char *dir = fp_xstrdup(path);
  char *slash = strrchr(dir, '/');
  if (slash) {
    *slash = '\0';
    if (fp_mkdir_p(dir, 0700) < 0)
      return fpull_err_set(err, FPULL_EFAIL, "%s: %s", dir, strerror(errno));
  }
  cleanup_free char *tmp = fp_xasprintf("%s.fpull-XXXXXX", path);
  cleanup_close int fd = mkstemp(tmp);
  if (fd < 0)
    return fpull_err_set(err, FPULL_EFAIL, "%s: %s", tmp, strerror(errno));
  cleanup_free char *text = cJSON_Print(doc);
  size_t len = strlen(text);
  int ok = fchmod(fd, 0600) == 0 && write(fd, text, len) == (ssize_t)len &&
           write(fd, "\n", 1) == 1 && fsync(fd) == 0;
  if (!ok || rename(tmp, path) < 0) {
    int e = errno;
    unlink(tmp);
    return fpull_err_set(err, FPULL_EFAIL, "%s: %s", path, strerror(e));
  }
  return 0;
}

int fpull_login_save(const char *registry, const char *username, const char *password,
                     fpull_err *err)
{
  if (!username || !*username || strchr(username, ':'))
    return fpull_err_set(err, FPULL_EUSAGE, "login: the user name must be non-empty, without ':'");
  cleanup_free char *path = fpull_login_config_path();
  __attribute__((cleanup(json_deletep))) cJSON *doc = NULL;
  int rc = load(&doc, path, err);
  if (rc)
    return rc;
  cJSON *auths = cJSON_GetObjectItemCaseSensitive(doc, "auths");
  if (!cJSON_IsObject(auths)) {
    cJSON_DeleteItemFromObjectCaseSensitive(doc, "auths");
    auths = cJSON_AddObjectToObject(doc, "auths");
  }
  size_t ul = strlen(username), pl = strlen(password);
  cleanup_free char *pair = fp_xmalloc(ul + pl + 2);
  memcpy(pair, username, ul);
  pair[ul] = ':';
  memcpy(pair + ul + 1, password, pl + 1);
  cleanup_free char *b64 = fp_base64_encode(pair, ul + pl + 1);
  explicit_bzero(pair, ul + pl + 1);
  const char *key = auth_key(registry);
  cJSON_DeleteItemFromObjectCaseSensitive(auths, key);
  cJSON *entry = cJSON_AddObjectToObject(auths, key);
  cJSON_AddStringToObject(entry, "auth", b64);
  rc = store(doc, path, err);
  explicit_bzero(b64, strlen(b64));
  return rc;
}

int fpull_logout(const char *registry, int *removed, fpull_err *err)
{
  if (removed)
    *removed = 0;
  cleanup_free char *path = fpull_login_config_path();
  __attribute__((cleanup(json_deletep))) cJSON *doc = NULL;
  int rc = load(&doc, path, err);
  if (rc)
    return rc;
  cJSON *auths = cJSON_GetObjectItemCaseSensitive(doc, "auths");
  const char *key = auth_key(registry);
  if (!cJSON_IsObject(auths) || !cJSON_GetObjectItemCaseSensitive(auths, key))
    return 0;
  cJSON_DeleteItemFromObjectCaseSensitive(auths, key);
  if (removed)
    *removed = 1;
  return store(doc, path, err);
}

/* What docker login does: GET /v2/ with the credentials (Basic), or, when the registry
 * answers with a Bearer challenge, a token for no scope from its realm with them, then
 * GET /v2/ with that token. The registry itself is asked, never a mirror, and the stored
 * credentials play no part. */
int fpull_login_check(const char *registry, const char *username, const char *password,
                      const struct fpull_registry_opts *opts, fpull_err *err)
{
  struct fpull_registry_opts o = FPULL_REGISTRY_OPTS_INIT;
  if (opts) {
    if (FP_OPTS_CHECK(opts, FPULL_REGISTRY_OPTS, "fpull_registry_opts", err))
      return FPULL_EUSAGE;
    o = *opts;
  }
  o.mirrors = NULL;
  fpull_registry *r = NULL;
  int rc = fpull_registry_open(&r, registry, &o, err);
  if (rc)
    return rc;
  struct fp_endpoint *ep = &r->eps[r->neps - 1];
  fp_creds_free(&ep->creds);
  ep->creds.username = fp_xstrdup(username);
  ep->creds.password = fp_xstrdup(password);
  ep->creds.source = fp_xstrdup("fpull login");
  struct fp_call c = {
      .method = "GET", .path = "/v2/", .repo = "", .scope = "", .max_body = FP_ERRBODY_MAX};
  struct fp_http_resp resp;
  rc = fp_reg_call(r, ep, &c, &resp, err);
  if (rc == FPULL_EAUTH && err) {
    /* The token server refused them: its words, without the repository-shaped prefix. */
    char said[sizeof err->msg];
    const char *ts = strstr(err->msg, "token server");
    snprintf(said, sizeof said, "%s", ts ? ts : err->msg);
    rc = fpull_err_set(err, FPULL_EAUTH, "login to %s refused for %s: %s", ep->hostport, username,
                       said);
  } else if (rc == 0) {
    if (resp.status == 401 || resp.status == 403)
      rc = fpull_err_set(err, FPULL_EAUTH, "login to %s refused for %s (HTTP %ld)", ep->hostport,
                         username, resp.status);
    else if (resp.status < 200 || resp.status > 299)
      rc = fp_reg_map_status(ep, &resp, "/v2/", "the login check", err);
    fp_http_resp_free(&resp);
  }
  fpull_registry_free(r);
  return rc;
}
