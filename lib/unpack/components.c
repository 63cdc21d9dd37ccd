/* The versions of the libraries fpull runs with (`fpull version`, like `curl -V`): a bug
 * report that names them saves a round trip. */
#include <archive.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <libcpuid/libcpuid.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>
#include <zstd.h>
#ifdef FPULL_HAVE_ISAL
#include <isa-l.h>
#endif

#include "fpull/components.h"

#define STR2(x) #x
#define STR(x) STR2(x)

const char *fpull_build_revision(void)
{
#ifdef FPULL_GIT_DESCRIBE
  return FPULL_GIT_DESCRIBE;
#else
  return NULL;
#endif
}

static struct fpull_component list[9];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void fill(void)
{
  size_t n = 0;
  const curl_version_info_data *c = curl_version_info(CURLVERSION_NOW);
  list[n++] = (struct fpull_component){"libcurl", c && c->version ? c->version : "?"};
  /* The number alone, as the others give it, not "OpenSSL 3.0.13 30 Jan 2024". */
#ifdef OPENSSL_VERSION_STRING
  const char *ossl = OpenSSL_version(OPENSSL_VERSION_STRING);
#else
  const char *ossl = OpenSSL_version(OPENSSL_VERSION);
#endif
  list[n++] = (struct fpull_component){"OpenSSL", ossl ? ossl : "?"};
  /* "libarchive 3.7.2" */
  const char *arch = archive_version_string();
  if (arch && strncmp(arch, "libarchive ", 11) == 0)
    arch += 11;
  list[n++] = (struct fpull_component){"libarchive", arch ? arch : "?"};
  list[n++] = (struct fpull_component){"cJSON", cJSON_Version()};
  list[n++] = (struct fpull_component){"libyaml", yaml_get_version_string()};
  list[n++] = (struct fpull_component){"libcpuid", cpuid_lib_version()};
  list[n++] = (struct fpull_component){"zstd", ZSTD_versionString()};
#ifdef FPULL_HAVE_ISAL
  /* ISA-L has no run-time version call: the headers' version it was built with. */
  list[n++] = (struct fpull_component){
      "isal", STR(ISAL_MAJOR_VERSION) "." STR(ISAL_MINOR_VERSION) "." STR(ISAL_PATCH_VERSION)};
#else
  list[n++] = (struct fpull_component){"isal", "(none)"};
#endif
  list[n] = (struct fpull_component){NULL, NULL};
}

const struct fpull_component *fpull_components(void)
{
  pthread_once(&once, fill);
  return list;
}
