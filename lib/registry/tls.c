/* certs.d lookup: CA files from every matching directory, the client certificate from the
 * first one that has it (docker's and containers' conventions). */
#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "registry_internal.h"

#define CA_FILE_MAX (8u << 20)

void fp_tls_free(struct fp_tls *t)
{
  free(t->ca_blob);
  free(t->client_cert);
  free(t->client_key);
  memset(t, 0, sizeof *t);
}

static int name_cmp(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int has_suffix(const char *s, const char *suf)
{
  size_t n = strlen(s), k = strlen(suf);
  return n >= k && strcmp(s + n - k, suf) == 0;
}

static int append_file(struct fp_buf *b, const char *path, fpull_err *err)
{
  cleanup_free char *data = NULL;
  size_t len = 0;
  if (fp_read_file(path, CA_FILE_MAX, &data, &len) < 0)
    return fpull_err_set(err, FPULL_EUSAGE, "%s: %s", path, strerror(errno));
  if (fp_buf_append(b, data, len) < 0 || fp_buf_append(b, "\n", 1) < 0)
    return fpull_err_set(err, FPULL_EUSAGE, "%s: CA certificates over 64 MiB", path);
  return 0;
}

/* The bundle libcurl would use by default, so extra CAs come on top of the system ones. */
static char system_ca_path[4096];

static void system_ca_init(void)
{
  CURL *h = curl_easy_init();
  char *p = NULL;
  if (h && curl_easy_getinfo(h, CURLINFO_CAINFO, &p) == CURLE_OK && p)
    snprintf(system_ca_path, sizeof system_ca_path, "%s", p);
  if (h)
    curl_easy_cleanup(h);
  if (!system_ca_path[0] || access(system_ca_path, R_OK) != 0)
    snprintf(system_ca_path, sizeof system_ca_path, "%s", "/etc/ssl/certs/ca-certificates.crt");
}

/* OpenSSL's own variables, which libcurl does not read once it has its built-in bundle
 * (it always has): honoured here, as skopeo, podman and Go programs honour them. */
static const char *env_nonempty(const char *name)
{
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

const char *fp_tls_system_ca_file(void)
{
  const char *env = env_nonempty("SSL_CERT_FILE");
  if (env)
    return env;
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, system_ca_init);
  return access(system_ca_path, R_OK) == 0 ? system_ca_path : NULL;
}

const char *fp_tls_system_ca_dir(void)
{
  return env_nonempty("SSL_CERT_DIR");
}

int fp_tls_is_cert_error(CURLcode c)
{
  switch (c) {
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_CACERT_BADFILE:
  case CURLE_SSL_CERTPROBLEM:
  case CURLE_SSL_ISSUER_ERROR:
  case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    return 1;
  default:
    return 0;
  }
}

int fp_tls_cert_error(fpull_err *err, const fpull_registry *r, const char *hostport,
                      const char *detail)
{
  char where[768] = "";
  size_t n = 0;
  const char *home = getenv("HOME");
  cleanup_free char *user_dir =
      home && *home ? fp_xasprintf("%s/.config/containers/certs.d", home) : NULL;
  struct {
    const char *label, *dir;
    int own; /* the folder itself, not DIR/HOST */
  } roots[] = {{"--cert-dir ", r->cert_dir, 1},
               {"--certs-dir ", r->certs_dir, 0},
               {"config certs-dir ", r->config_certs_dir, 0},
               {"", user_dir, 0},
               {"", "/etc/containers/certs.d", 0},
               {"", "/etc/docker/certs.d", 0}};
  for (size_t i = 0; i < sizeof roots / sizeof *roots; i++)
    if (roots[i].dir && *roots[i].dir && n < sizeof where)
      n +=
          (size_t)snprintf(where + n, sizeof where - n, "%s%s%s%s%s", n ? ", " : "", roots[i].label,
                           roots[i].dir, roots[i].own ? "" : "/", roots[i].own ? "" : hostport);
  const char *file = fp_tls_system_ca_file(), *dir = fp_tls_system_ca_dir();
  return fpull_err_set(
      err, FPULL_ENET,
      "TLS: the certificate of %s is not trusted (%s); fpull looked for its CA "
      "(*.crt) in %s, and in %s%s%s%s: put the registry's CA certificate "
      "there, or use --insecure as the last resort",
      hostport, detail, where, env_nonempty("SSL_CERT_FILE") ? "SSL_CERT_FILE " : "",
      file ? file : "(no system bundle)", dir ? " and SSL_CERT_DIR " : "", dir ? dir : "");
}

static int scan_dir(struct fp_tls *out, struct fp_buf *cas, const char *dir, fpull_err *err)
{
  DIR *d = opendir(dir);
  if (!d)
    return 0;
  char **names = NULL;
  struct dirent *e;
  while ((e = readdir(d)))
    if (has_suffix(e->d_name, ".crt"))
      names = fp_strv_push(names, e->d_name);
  closedir(d);
  size_t n = fpull_strv_len(names);
  if (n)
    qsort(names, n, sizeof *names, name_cmp);
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    cleanup_free char *p = fp_xasprintf("%s/%s", dir, names[i]);
    fp_debug("CA certificates from %s", p);
    rc = append_file(cas, p, err);
  }
  fpull_strv_free(names);
  if (rc || out->client_cert)
    return rc;
  cleanup_free char *cert = fp_xasprintf("%s/client.cert", dir);
  cleanup_free char *key = fp_xasprintf("%s/client.key", dir);
  struct stat st;
  int has_cert = stat(cert, &st) == 0, has_key = stat(key, &st) == 0;
  if (has_cert && has_key) {
    out->client_cert = steal_pointer(&cert);
    out->client_key = steal_pointer(&key);
  } else if (has_cert || has_key) {
    return fpull_err_set(err, FPULL_EUSAGE, "%s: client.cert without client.key or the reverse",
                         dir);
  }
  return 0;
}

int fp_tls_find(struct fp_tls *out, const char *hostport, const char *cert_dir,
                const char *certs_dir, const char *config_certs_dir, fpull_err *err)
{
  memset(out, 0, sizeof *out);
  const char *home = getenv("HOME");
  cleanup_free char *user_dir =
      home && *home ? fp_xasprintf("%s/.config/containers/certs.d", home) : NULL;
  const char *roots[] = {certs_dir, config_certs_dir, user_dir, "/etc/containers/certs.d",
                         "/etc/docker/certs.d"};
  struct fp_buf cas = {.max = 64u << 20};
  if (cert_dir && *cert_dir) {
    struct stat st;
    if (stat(cert_dir, &st) < 0)
      return fpull_err_set(err, FPULL_EUSAGE, "--cert-dir %s: %s", cert_dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
      return fpull_err_set(err, FPULL_EUSAGE, "--cert-dir %s: not a directory", cert_dir);
    int rc = scan_dir(out, &cas, cert_dir, err);
    if (rc) {
      fp_buf_free(&cas);
      fp_tls_free(out);
      return rc;
    }
  }
  for (size_t i = 0; i < sizeof roots / sizeof *roots; i++) {
    if (!roots[i] || !*roots[i])
      continue;
    cleanup_free char *dir = fp_xasprintf("%s/%s", roots[i], hostport);
    int rc = scan_dir(out, &cas, dir, err);
    if (rc) {
      fp_buf_free(&cas);
      fp_tls_free(out);
      return rc;
    }
  }
  if (cas.len) {
    /* CURLOPT_CAINFO_BLOB replaces the default bundle: put the system CAs in front. */
    const char *sys = fp_tls_system_ca_file();
    struct fp_buf all = {.max = 128u << 20};
    cleanup_free char *sysdata = NULL;
    size_t syslen = 0;
    if (sys && fp_read_file(sys, 64u << 20, &sysdata, &syslen) == 0)
      fp_buf_append(&all, sysdata, syslen), fp_buf_append(&all, "\n", 1);
    fp_buf_append(&all, cas.data, cas.len);
    fp_buf_free(&cas);
    out->ca_blob = all.data;
    out->ca_len = all.len;
  }
  return 0;
}
