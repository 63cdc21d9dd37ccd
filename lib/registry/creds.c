#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "creds.h"
#include "base/util.h"

#define AUTH_FILE_MAX (4u << 20)
#define HELPER_OUT_MAX (1u << 20)
/* from_file()/from_auths(): found, distinct from every fpull_code. */
#define FOUND 1000

static void wipe_free(char *s)
{
  if (s) {
    explicit_bzero(s, strlen(s));
    free(s);
  }
}

void fp_creds_free(struct fp_creds *c)
{
  if (!c)
    return;
  wipe_free(c->username);
  wipe_free(c->password);
  wipe_free(c->identity_token);
  free(c->source);
  memset(c, 0, sizeof *c);
}

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *fp_base64_encode(const void *data, size_t n)
{
  const unsigned char *d = data;
  char *out = fp_xmalloc(4 * ((n + 2) / 3) + 1), *o = out;
  for (size_t i = 0; i < n; i += 3) {
    unsigned v = (unsigned)d[i] << 16 | (i + 1 < n ? (unsigned)d[i + 1] << 8 : 0) |
                 (i + 2 < n ? d[i + 2] : 0);
    *o++ = b64chars[v >> 18 & 63];
    *o++ = b64chars[v >> 12 & 63];
    *o++ = i + 1 < n ? b64chars[v >> 6 & 63] : '=';
    *o++ = i + 2 < n ? b64chars[v & 63] : '=';
  }
  *o = '\0';
  return out;
}

static int b64val(char c)
{
  const char *p = c ? strchr(b64chars, c) : NULL;
  return p ? (int)(p - b64chars) : -1;
}

int fp_creds_decode_auth(const char *b64, char **user, char **password)
{
  size_t n = strlen(b64);
  while (n && b64[n - 1] == '=')
    n--;
  if (n % 4 == 1)
    return -1;
  cleanup_free char *out = fp_xmalloc(n * 3 / 4 + 1);
  size_t o = 0;
  unsigned acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; i++) {
    int v = b64val(b64[i]);
    if (v < 0)
      return -1;
    acc = acc << 6 | (unsigned)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (char)(acc >> bits & 0xff);
    }
  }
  out[o] = '\0';
  if (memchr(out, '\0', o))
    return -1;
  char *colon = strchr(out, ':');
  if (!colon || colon == out) {
    explicit_bzero(out, o);
    return -1;
  }
  *user = fp_xstrndup(out, (size_t)(colon - out));
  *password = fp_xstrdup(colon + 1);
  explicit_bzero(out, o);
  return 0;
}

static int is_docker_hub(const char *h)
{
  return strcmp(h, "docker.io") == 0 || strcmp(h, "index.docker.io") == 0 ||
         strcmp(h, "registry-1.docker.io") == 0;
}

/* "https://index.docker.io/v1/" -> "index.docker.io"; "host:5000" stays. */
static char *normalise_key(const char *key)
{
  const char *s = strstr(key, "://");
  s = s ? s + 3 : key;
  size_t n = strcspn(s, "/");
  return fp_xstrndup(s, n);
}

static int key_matches(const char *key, const char *registry)
{
  cleanup_free char *k = normalise_key(key);
  if (strcmp(k, registry) == 0)
    return 1;
  return is_docker_hub(k) && is_docker_hub(registry);
}

/* The helpers' protocol names Docker Hub by its v1 URL. */
static const char *helper_server(const char *registry)
{
  return is_docker_hub(registry) ? "https://index.docker.io/v1/" : registry;
}

static int run_helper(struct fp_creds *out, const char *name, const char *registry,
                      const char *source, fpull_err *err)
{
  for (const char *c = name; *c; c++)
    if (!(isalnum((unsigned char)*c) || *c == '-' || *c == '_' || *c == '.'))
      return fpull_err_set(err, FPULL_EUSAGE, "%s: bad credential helper name \"%s\"", source,
                           name);
  cleanup_free char *prog = fp_xasprintf("docker-credential-%s", name);
  int in[2], outp[2];
  if (pipe2(in, O_CLOEXEC) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "pipe: %s", strerror(errno));
  if (pipe2(outp, O_CLOEXEC) < 0) {
    close(in[0]);
    close(in[1]);
    return fpull_err_set(err, FPULL_EFAIL, "pipe: %s", strerror(errno));
  }
  pid_t pid = fork();
  if (pid < 0) {
    close(in[0]), close(in[1]), close(outp[0]), close(outp[1]);
    return fpull_err_set(err, FPULL_EFAIL, "fork: %s", strerror(errno));
  }
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(outp[1], 1);
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0)
      dup2(devnull, 2);
    char *argv[] = {prog, "get", NULL};
    execvp(prog, argv);
    _exit(127);
  }
  close(in[0]);
  close(outp[1]);
  const char *server = helper_server(registry);
  /* The helper reads the server URL on stdin; a short write of a short string is fine. */
  void (*old)(int) = signal(SIGPIPE, SIG_IGN);
  ssize_t w = write(in[1], server, strlen(server));
  (void)w;
  close(in[1]);
  struct fp_buf b = {.max = HELPER_OUT_MAX};
  char chunk[4096];
  int toolong = 0;
  for (;;) {
    ssize_t r = read(outp[0], chunk, sizeof chunk);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    if (fp_buf_append(&b, chunk, (size_t)r) < 0) {
      toolong = 1;
      break;
    }
  }
  close(outp[0]);
  int status = 0;
  if (toolong)
    kill(pid, SIGKILL);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  signal(SIGPIPE, old);
  cleanup_free char *text = b.data;
  if (toolong)
    return fpull_err_set(err, FPULL_EAUTH, "credential helper %s: output over 1 MiB", prog);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    return fpull_err_set(err, FPULL_EAUTH, "credential helper %s (from %s) not found in PATH", prog,
                         source);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    /* "credentials not found in native keychain": the helper simply has nothing. */
    if (text && strstr(text, "not found"))
      return 0;
    return fpull_err_set(err, FPULL_EAUTH, "credential helper %s failed for %s", prog, registry);
  }
  cJSON *j = cJSON_ParseWithLength(text ? text : "", b.len);
  if (!j)
    return fpull_err_set(err, FPULL_EAUTH, "credential helper %s: output is not JSON", prog);
  const cJSON *u = cJSON_GetObjectItemCaseSensitive(j, "Username");
  const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "Secret");
  if (cJSON_IsString(s) && s->valuestring[0]) {
    if (cJSON_IsString(u) && strcmp(u->valuestring, "<token>") == 0) {
      out->identity_token = fp_xstrdup(s->valuestring);
    } else {
      out->username = fp_xstrdup(cJSON_IsString(u) ? u->valuestring : "");
      out->password = fp_xstrdup(s->valuestring);
    }
    out->source = fp_xasprintf("credential helper %s", prog);
  }
  if (text)
    explicit_bzero(text, b.len);
  cJSON_Delete(j);
  return 0;
}

static int helper_allowed(const struct stat *st, const char *path, const char *helper)
{
  /* As root, a config file written by another user must not make us run its programs. */
  if (geteuid() == 0 && st->st_uid != 0) {
    fp_warn("not running credential helper %s named in %s: the file is owned by uid %u", helper,
            path, (unsigned)st->st_uid);
    return 0;
  }
  return 1;
}

static int from_auths(struct fp_creds *out, const cJSON *auths, const char *registry,
                      const char *path, fpull_err *err)
{
  const cJSON *e;
  cJSON_ArrayForEach(e, auths)
  {
    if (!e->string || !key_matches(e->string, registry) || !cJSON_IsObject(e))
      continue;
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(e, "auth");
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(e, "username");
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(e, "password");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(e, "identitytoken");
    if (cJSON_IsString(a) && a->valuestring[0]) {
      if (fp_creds_decode_auth(a->valuestring, &out->username, &out->password) < 0)
        return fpull_err_set(err, FPULL_EUSAGE, "%s: malformed \"auth\" for %s", path, e->string);
    } else if (cJSON_IsString(u) && cJSON_IsString(p) && u->valuestring[0]) {
      out->username = fp_xstrdup(u->valuestring);
      out->password = fp_xstrdup(p->valuestring);
    }
    if (cJSON_IsString(t) && t->valuestring[0])
      out->identity_token = fp_xstrdup(t->valuestring);
    if (out->password || out->identity_token) {
      out->source = fp_xstrdup(path);
      return FOUND;
    }
  }
  return 0;
}

/* FOUND, 0: nothing here, else an error code. */
static int from_file(struct fp_creds *out, const char *path, const char *registry, int docker,
                     fpull_err *err)
{
  cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
    return 0;
  cleanup_free char *data = NULL;
  size_t len = 0;
  char fdpath[64];
  snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", fd);
  if (fp_read_file(fdpath, AUTH_FILE_MAX, &data, &len) < 0)
    return fpull_err_set(err, FPULL_EUSAGE, "%s: %s", path, strerror(errno));
  cJSON *j = cJSON_ParseWithLength(data, len);
  explicit_bzero(data, len);
  if (!j || !cJSON_IsObject(j)) {
    cJSON_Delete(j);
    return fpull_err_set(err, FPULL_EUSAGE, "%s: not a JSON object", path);
  }
  int rc = 0;
  const cJSON *helpers = cJSON_GetObjectItemCaseSensitive(j, "credHelpers");
  const cJSON *h;
  cJSON_ArrayForEach(h, helpers)
  {
    if (docker && h->string && key_matches(h->string, registry) && cJSON_IsString(h) &&
        helper_allowed(&st, path, h->valuestring)) {
      rc = run_helper(out, h->valuestring, registry, path, err);
      if (rc == 0 && (out->password || out->identity_token))
        rc = FOUND;
      goto done;
    }
  }
  rc = from_auths(out, cJSON_GetObjectItemCaseSensitive(j, "auths"), registry, path, err);
  if (rc != 0)
    goto done;
  const cJSON *store = cJSON_GetObjectItemCaseSensitive(j, "credsStore");
  if (docker && cJSON_IsString(store) && store->valuestring[0] &&
      helper_allowed(&st, path, store->valuestring)) {
    rc = run_helper(out, store->valuestring, registry, path, err);
    if (rc == 0 && (out->password || out->identity_token))
      rc = FOUND;
  }
done:
  cJSON_Delete(j);
  return rc;
}

int fp_creds_lookup(struct fp_creds *out, const char *registry, fpull_err *err)
{
  memset(out, 0, sizeof *out);
  cleanup_free char *docker = NULL;
  const char *dc = getenv("DOCKER_CONFIG"), *home = getenv("HOME");
  if (dc && *dc)
    docker = fp_xasprintf("%s/config.json", dc);
  else if (home && *home)
    docker = fp_xasprintf("%s/.docker/config.json", home);
  int rc = docker ? from_file(out, docker, registry, 1, err) : 0;
  if (rc == 0) {
    const char *raf = getenv("REGISTRY_AUTH_FILE");
    if (raf && *raf)
      rc = from_file(out, raf, registry, 1, err);
  }
  if (rc == 0) {
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    if (xdg && *xdg) {
      cleanup_free char *p = fp_xasprintf("%s/containers/auth.json", xdg);
      rc = from_file(out, p, registry, 1, err);
    }
  }
  if (rc != 0 && rc != FOUND) {
    fp_creds_free(out);
    return rc;
  }
  if (rc == FOUND)
    fp_debug("credentials for %s from %s", registry, out->source);
  return 0;
}
