/* Image references, following the grammar of distribution's reference package and the
 * contract's normalisation rules. */
#include <ctype.h>
#include <string.h>

#include "base/util.h"
#include "fpull/ref.h"

#define REF_NAME_MAX 255 /* distribution's NameTotalLengthMax */
#define REF_TAG_MAX 128

static int is_lower_alnum(char c)
{
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* path-component: [a-z0-9]+ ((\.|_|__|-+)[a-z0-9]+)* */
static const char *check_component(const char *s, size_t n)
{
  if (n == 0)
    return "empty path component";
  size_t i = 0;
  while (i < n) {
    if (!is_lower_alnum(s[i])) {
      if (isupper((unsigned char)s[i]))
        return "repository names must be lower case";
      return "invalid character in repository name";
    }
    while (i < n && is_lower_alnum(s[i]))
      i++;
    if (i == n)
      break;
    size_t sep = i;
    if (s[i] == '.') {
      i++;
    } else if (s[i] == '_') {
      i++;
      if (i < n && s[i] == '_')
        i++;
    } else if (s[i] == '-') {
      while (i < n && s[i] == '-')
        i++;
    } else if (isupper((unsigned char)s[i])) {
      return "repository names must be lower case";
    } else {
      return "invalid character in repository name";
    }
    if (i == n || !is_lower_alnum(s[i]))
      return sep == 0 ? "invalid separator" : "separator must be followed by a letter or digit";
  }
  return NULL;
}

static const char *check_registry(const char *s, size_t n)
{
  if (n == 0)
    return "empty registry";
  size_t i = 0;
  if (s[0] == '[') { /* IPv6 literal */
    const char *end = memchr(s, ']', n);
    if (!end)
      return "unterminated IPv6 address in registry";
    for (const char *p = s + 1; p < end; p++)
      if (!isxdigit((unsigned char)*p) && *p != ':' && *p != '.')
        return "invalid IPv6 address in registry";
    i = (size_t)(end - s) + 1;
  } else {
    size_t label = 0;
    for (; i < n && s[i] != ':'; i++) {
      char c = s[i];
      if (c == '.') {
        if (label == 0 || s[i - 1] == '-')
          return "empty or malformed registry host label";
        label = 0;
        continue;
      }
      if (!isalnum((unsigned char)c) && c != '-')
        return "invalid character in registry host";
      if (c == '-' && label == 0)
        return "registry host label starts with '-'";
      label++;
    }
    if (label == 0 || s[i - 1] == '-')
      return "empty or malformed registry host label";
  }
  if (i < n) {
    if (s[i] != ':' || i + 1 == n)
      return "malformed registry port";
    for (size_t j = i + 1; j < n; j++)
      if (!isdigit((unsigned char)s[j]))
        return "registry port must be numeric";
    if (n - i - 1 > 5)
      return "registry port out of range";
  }
  return NULL;
}

static const char *check_tag(const char *s)
{
  size_t n = strlen(s);
  if (n == 0)
    return "empty tag";
  if (n > REF_TAG_MAX)
    return "tag longer than 128 characters";
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    int word = isalnum((unsigned char)c) || c == '_';
    if (!word && (i == 0 || (c != '.' && c != '-')))
      return "invalid character in tag";
  }
  return NULL;
}

int fpull_digest_valid(const char *s)
{
  int n = 0;
  if (s && strncmp(s, "sha256:", 7) == 0)
    n = 64;
  else if (s && strncmp(s, "sha512:", 7) == 0)
    n = 128;
  if (!n)
    return 0;
  s += 7;
  for (int i = 0; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return 0;
  return s[n] == '\0';
}

static const char *check_digest(const char *s)
{
  const char *colon = strchr(s, ':');
  if (!colon || colon == s)
    return "digest must be ALGORITHM:HEX";
  if (strncmp(s, "sha256:", 7) != 0 && strncmp(s, "sha512:", 7) != 0)
    return "unsupported digest algorithm (sha256 and sha512 only)";
  if (!fpull_digest_valid(s))
    return strncmp(s, "sha256:", 7) == 0 ? "sha256 digest must be 64 lower-case hex digits"
                                         : "sha512 digest must be 128 lower-case hex digits";
  return NULL;
}

void fpull_ref_free(struct fpull_ref *ref)
{
  if (!ref)
    return;
  free(ref->registry);
  free(ref->repository);
  free(ref->tag);
  free(ref->digest);
  free(ref);
}

static void ref_freep(struct fpull_ref **r)
{
  fpull_ref_free(*r);
}

static int bad(fpull_err *err, const char *text, const char *why)
{
  return fpull_err_set(err, FPULL_EUSAGE, "invalid reference \"%s\": %s", text, why);
}

/* Other tools' transports (skopeo's, podman's, Apptainer's): an image in one of them is
 * not on a registry, and would otherwise read as a tag or a malformed port. */
static const char *transport_mistake(const char *text)
{
  static const char *const other[] = {"oci:",           "oci-archive:", "docker-archive:",
                                      "docker-daemon:", "dir:",         "containers-storage:",
                                      "library://",     "shub://",      "oras://",
                                      "http://",        "https://",     NULL};
  for (size_t i = 0; other[i]; i++)
    if (strncmp(text, other[i], strlen(other[i])) == 0)
      return "fpull pulls from registries only: give REGISTRY/REPOSITORY[:TAG|@DIGEST], "
             "optionally after docker://";
  if (strstr(text, "://"))
    return "unknown transport: only docker:// is accepted before an image name";
  return NULL;
}

int fpull_ref_parse(struct fpull_ref **out, const char *text, fpull_err *err)
{
  *out = NULL;
  if (!text || !*text)
    return fpull_err_set(err, FPULL_EUSAGE, "invalid reference \"\": empty");
  if (strlen(text) > 4096)
    return fpull_err_set(err, FPULL_EUSAGE, "invalid reference: longer than 4096 characters");
  for (const char *p = text; *p; p++)
    if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
      return bad(err, text, "contains a space or control character");

  /* skopeo's and Apptainer's spelling of a registry image: the transport fpull speaks. */
  if (strncmp(text, "docker://", 9) == 0)
    text += 9;
  if (!*text)
    return fpull_err_set(err, FPULL_EUSAGE, "invalid reference \"docker://\": empty");
  const char *why = transport_mistake(text);
  if (why)
    return bad(err, text, why);
  /* REGISTRY#REPOSITORY[:TAG] (enroot's and pyxis's form): the registry, named as such. */
  cleanup_free char *hashed = NULL;
  const char *hash = strchr(text, '#');
  if (hash) {
    size_t rl = (size_t)(hash - text);
    if (rl == 0 || !hash[1] || strchr(hash + 1, '#') || memchr(text, '/', rl))
      return bad(err, text,
                 "'#' separates a registry from its image (REGISTRY#REPOSITORY[:TAG], as enroot "
                 "writes it), once");
    if ((why = check_registry(text, rl)))
      return bad(err, text, why);
    hashed = fp_xasprintf("%.*s/%s", (int)rl, text, hash + 1);
  }

  __attribute__((cleanup(ref_freep))) struct fpull_ref *ref = fp_xcalloc(1, sizeof *ref);
  cleanup_free char *work = fp_xstrdup(hashed ? hashed : text);

  char *at = strchr(work, '@');
  if (at && strchr(at, '/')) {
    /* user@host/img, ssh's habit: a digest has no '/'. */
    return bad(err, text,
               "'@' introduces a digest (IMAGE@sha256:...); a user name goes to 'fpull login' "
               "or --creds, not into the reference");
  }
  if (at) {
    *at = '\0';
    if ((why = check_digest(at + 1)))
      return bad(err, text, why);
    ref->digest = fp_xstrdup(at + 1);
  }
  char *slash = strrchr(work, '/');
  char *colon = strrchr(slash ? slash : work, ':');
  if (colon) {
    *colon = '\0';
    if ((why = check_tag(colon + 1)))
      return bad(err, text, why);
    ref->tag = fp_xstrdup(colon + 1);
  }
  if (!*work)
    return bad(err, text, "empty repository");

  char *name = work;
  char *first = strchr(work, '/');
  if (first &&
      (hashed || memchr(work, '.', (size_t)(first - work)) ||
       memchr(work, ':', (size_t)(first - work)) ||
       ((size_t)(first - work) == 9 && strncmp(work, "localhost", 9) == 0) || work[0] == '[')) {
    if ((why = check_registry(work, (size_t)(first - work))))
      return bad(err, text, why);
    ref->registry = fp_xstrndup(work, (size_t)(first - work));
    name = first + 1;
  } else {
    ref->registry = fp_xstrdup("docker.io");
  }
  /* docker's own aliases of Docker Hub. */
  if (strcmp(ref->registry, "index.docker.io") == 0 ||
      strcmp(ref->registry, "registry-1.docker.io") == 0) {
    free(ref->registry);
    ref->registry = fp_xstrdup("docker.io");
  }
  /* Host names are case-insensitive; keep one spelling for the cache and auth lookups. */
  for (char *p = ref->registry; *p; p++)
    *p = (char)tolower((unsigned char)*p);

  for (const char *c = name;;) {
    const char *e = strchr(c, '/');
    size_t n = e ? (size_t)(e - c) : strlen(c);
    if ((why = check_component(c, n)))
      return bad(err, text, why);
    if (!e)
      break;
    c = e + 1;
  }
  if (strcmp(ref->registry, "docker.io") == 0 && !strchr(name, '/'))
    ref->repository = fp_xasprintf("library/%s", name);
  else
    ref->repository = fp_xstrdup(name);
  if (strlen(ref->registry) + 1 + strlen(ref->repository) > REF_NAME_MAX)
    return bad(err, text, "name longer than 255 characters");
  if (!ref->tag && !ref->digest)
    ref->tag = fp_xstrdup("latest");
  *out = steal_pointer(&ref);
  return FPULL_OK;
}

char *fpull_ref_format(const struct fpull_ref *ref)
{
  return fp_xasprintf("%s/%s%s%s%s%s", ref->registry, ref->repository, ref->tag ? ":" : "",
                      ref->tag ? ref->tag : "", ref->digest ? "@" : "",
                      ref->digest ? ref->digest : "");
}

const char *fpull_ref_api_host(const struct fpull_ref *ref)
{
  if (strcmp(ref->registry, "docker.io") == 0)
    return "registry-1.docker.io";
  return ref->registry;
}

const char *fpull_ref_basename(const struct fpull_ref *ref)
{
  const char *s = strrchr(ref->repository, '/');
  return s ? s + 1 : ref->repository;
}

static int is_dotted_quad_127(const char *s, size_t n)
{
  int parts = 0;
  size_t i = 0;
  unsigned first = 0;
  while (i < n) {
    unsigned v = 0;
    size_t digits = 0;
    while (i < n && isdigit((unsigned char)s[i]) && digits < 4) {
      v = v * 10 + (unsigned)(s[i] - '0');
      i++;
      digits++;
    }
    if (digits == 0 || v > 255)
      return 0;
    if (parts == 0)
      first = v;
    parts++;
    if (i == n)
      break;
    if (s[i] != '.' || parts == 4)
      return 0;
    i++;
  }
  return parts == 4 && first == 127 && s[n - 1] != '.';
}

int fpull_ref_host_is_loopback(const char *hostport)
{
  if (!hostport)
    return 0;
  size_t n = strlen(hostport);
  if (hostport[0] == '[') {
    const char *end = strchr(hostport, ']');
    return end && (size_t)(end - hostport) == 4 && strncmp(hostport + 1, "::1", 3) == 0 &&
           (end[1] == '\0' || end[1] == ':');
  }
  if (strcmp(hostport, "::1") == 0)
    return 1;
  const char *colon = strchr(hostport, ':');
  size_t hn = colon ? (size_t)(colon - hostport) : n;
  if (hn == 9 && strncasecmp(hostport, "localhost", 9) == 0)
    return 1;
  return is_dotted_quad_127(hostport, hn);
}
