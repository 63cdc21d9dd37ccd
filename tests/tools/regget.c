/* fpull-regget: drives the registry client directly, for the transport tests.
 *
 *   fpull-regget [OPTIONS] manifest REGISTRY REPO REF        prints digest, type, bytes
 *   fpull-regget [OPTIONS] blob REGISTRY REPO DIGEST FILE    writes the blob to FILE,
 *       resuming from FILE's current size; prints bytes, received, restarts
 *   fpull-regget [OPTIONS] parallel REGISTRY REPO JOBS DIGEST...  fetches every DIGEST
 *       into memory with JOBS threads sharing one handle; checks each; prints "ok N"
 *   fpull-regget [OPTIONS] exists REGISTRY REPO DIGEST
 *   fpull-regget [OPTIONS] put-blob REGISTRY REPO DIGEST FILE
 *   fpull-regget [OPTIONS] mount REGISTRY REPO DIGEST FROM_REPO
 *   fpull-regget [OPTIONS] put-manifest REGISTRY REPO REF MEDIATYPE FILE
 * OPTIONS: --insecure, --certs-dir DIR, --mirror URL (repeatable), --tries N, -v
 * Exit status: the fpull code; the error on stderr as "fpull-regget: MESSAGE". */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fpull/fpull.h"

static void log_cb(void *ud, int level, const char *msg)
{
  int verbose = *(int *)ud;
  if (level <= FPULL_LOG_WARN || verbose)
    fprintf(stderr, "fpull-regget: %s%s\n", level == FPULL_LOG_WARN ? "warning: " : "", msg);
}

struct file_sink {
  int fd;
  unsigned restarts;
  uint64_t first_offset;
  int started;
};

static int sink_write(void *ud, const void *data, size_t len, fpull_err *err)
{
  struct file_sink *s = ud;
  const char *p = data;
  while (len) {
    ssize_t w = write(s->fd, p, len);
    if (w < 0)
      return fpull_err_set(err, FPULL_EFAIL, "write: %s", strerror(errno));
    p += w;
    len -= (size_t)w;
  }
  return 0;
}

static int sink_restart(void *ud, uint64_t offset, fpull_err *err)
{
  struct file_sink *s = ud;
  if (!s->started) {
    s->started = 1;
    s->first_offset = offset;
  } else {
    s->restarts++;
  }
  if (ftruncate(s->fd, (off_t)offset) < 0 || lseek(s->fd, (off_t)offset, SEEK_SET) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "truncate: %s", strerror(errno));
  return 0;
}

static int file_digest(const char *path, char out[72])
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return -1;
  EVP_MD_CTX *md = EVP_MD_CTX_new();
  EVP_DigestInit_ex(md, EVP_sha256(), NULL);
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0)
    EVP_DigestUpdate(md, buf, n);
  fclose(f);
  unsigned char d[32];
  unsigned int dl = 0;
  EVP_DigestFinal_ex(md, d, &dl);
  EVP_MD_CTX_free(md);
  strcpy(out, "sha256:");
  for (int i = 0; i < 32; i++)
    sprintf(out + 7 + 2 * i, "%02x", d[i]);
  return 0;
}

struct mem_sink {
  EVP_MD_CTX *md;
};

static int mem_write(void *ud, const void *data, size_t len, fpull_err *err)
{
  EVP_DigestUpdate(((struct mem_sink *)ud)->md, data, len);
  return 0;
}

static int mem_restart(void *ud, uint64_t offset, fpull_err *err)
{
  if (offset != 0)
    return fpull_err_set(err, FPULL_EFAIL, "cannot resume in memory");
  EVP_DigestInit_ex(((struct mem_sink *)ud)->md, EVP_sha256(), NULL);
  return 0;
}

struct job {
  fpull_registry *r;
  const char *repo;
  char **digests;
  int n, next, failed;
  pthread_mutex_t mu;
};

static void *worker(void *arg)
{
  struct job *j = arg;
  struct mem_sink ms = {EVP_MD_CTX_new()};
  struct fpull_blob_sink sink = {&ms, mem_write, mem_restart};
  for (;;) {
    pthread_mutex_lock(&j->mu);
    int i = j->next < j->n ? j->next++ : -1;
    pthread_mutex_unlock(&j->mu);
    if (i < 0)
      break;
    fpull_err err = {0};
    int rc = fpull_registry_get_blob(j->r, j->repo, j->digests[i], 0, &sink, NULL, &err);
    unsigned char d[32];
    unsigned int dl = 0;
    char got[72] = "";
    if (!rc) {
      EVP_DigestFinal_ex(ms.md, d, &dl);
      strcpy(got, "sha256:");
      for (int k = 0; k < 32; k++)
        sprintf(got + 7 + 2 * k, "%02x", d[k]);
    }
    if (rc || strcmp(got, j->digests[i]) != 0) {
      fprintf(stderr, "fpull-regget: %s: %s\n", j->digests[i], rc ? err.msg : got);
      pthread_mutex_lock(&j->mu);
      j->failed = rc ? rc : FPULL_EINTEGRITY;
      pthread_mutex_unlock(&j->mu);
    }
  }
  EVP_MD_CTX_free(ms.md);
  return NULL;
}

static int fail(const fpull_err *err, int rc)
{
  fprintf(stderr, "fpull-regget: %s\n", err->msg);
  return rc;
}

int main(int argc, char **argv)
{
  static int verbose = 0;
  struct fpull_registry_opts opts = FPULL_REGISTRY_OPTS_INIT;
  char *mirrors[16] = {0};
  size_t nm = 0;
  static const struct option longopts[] = {
      {"insecure", no_argument, NULL, 'k'},     {"certs-dir", required_argument, NULL, 'c'},
      {"mirror", required_argument, NULL, 'm'}, {"tries", required_argument, NULL, 't'},
      {"verbose", no_argument, NULL, 'v'},      {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "+v", longopts, NULL)) != -1) {
    switch (c) {
    case 'k':
      opts.insecure = 1;
      break;
    case 'c':
      opts.certs_dir = optarg;
      break;
    case 'm':
      if (nm < 15)
        mirrors[nm++] = optarg;
      break;
    case 't':
      opts.max_tries = atoi(optarg);
      break;
    case 'v':
      verbose = 1;
      break;
    default:
      return 2;
    }
  }
  opts.mirrors = mirrors;
  if (argc - optind < 4) {
    fprintf(stderr, "usage: fpull-regget [OPTIONS] manifest|blob|exists|put-blob|mount|"
                    "put-manifest REGISTRY REPO ARG...\n");
    return 2;
  }
  fpull_log_set(log_cb, &verbose);
  const char *cmd = argv[optind], *registry = argv[optind + 1], *repo = argv[optind + 2],
             *arg = argv[optind + 3];
  const char *arg2 = argc - optind > 4 ? argv[optind + 4] : NULL;
  const char *arg3 = argc - optind > 5 ? argv[optind + 5] : NULL;
  fpull_err err = {0};
  fpull_registry *r = NULL;
  int rc = fpull_registry_open(&r, registry, &opts, &err);
  if (rc)
    return fail(&err, rc);
  if (strcmp(cmd, "manifest") == 0) {
    struct fpull_fetched *f = NULL;
    rc = fpull_registry_get_manifest(&f, r, repo, arg, &err);
    if (!rc) {
      printf("digest %s\ntype %s\nbytes %zu\n", f->digest, f->content_type ? f->content_type : "-",
             f->len);
      fpull_fetched_free(f);
    }
  } else if (strcmp(cmd, "blob") == 0 && arg2) {
    struct file_sink s = {.fd = open(arg2, O_RDWR | O_CREAT, 0644)};
    if (s.fd < 0) {
      perror(arg2);
      return 1;
    }
    struct stat st;
    fstat(s.fd, &st);
    struct fpull_blob_sink sink = {&s, sink_write, sink_restart};
    uint64_t received = 0;
    rc = fpull_registry_get_blob(r, repo, arg, (uint64_t)st.st_size, &sink, &received, &err);
    close(s.fd);
    if (!rc) {
      char got[72];
      if (file_digest(arg2, got) < 0 || strcmp(got, arg) != 0) {
        fprintf(stderr, "fpull-regget: blob %s: file has digest %s\n", arg, got);
        rc = FPULL_EINTEGRITY;
      } else {
        stat(arg2, &st);
        printf("bytes %lld\nreceived %llu\nrestarts %u\nfirst_offset %llu\n", (long long)st.st_size,
               (unsigned long long)received, s.restarts, (unsigned long long)s.first_offset);
      }
    }
  } else if (strcmp(cmd, "parallel") == 0 && arg2) {
    struct job j = {.r = r, .repo = repo, .digests = argv + optind + 4, .n = argc - optind - 4};
    pthread_mutex_init(&j.mu, NULL);
    int jobs = atoi(arg);
    pthread_t t[64];
    if (jobs < 1 || jobs > 64)
      jobs = 4;
    for (int i = 0; i < jobs; i++)
      pthread_create(&t[i], NULL, worker, &j);
    for (int i = 0; i < jobs; i++)
      pthread_join(t[i], NULL);
    rc = j.failed;
    if (!rc)
      printf("ok %d\n", j.n);
  } else if (strcmp(cmd, "exists") == 0) {
    int exists = 0;
    rc = fpull_registry_blob_exists(r, repo, arg, &exists, &err);
    if (!rc)
      printf("exists %d\n", exists);
  } else if (strcmp(cmd, "put-blob") == 0 && arg2) {
    rc = fpull_registry_put_blob_file(r, repo, arg, arg2, &err);
  } else if (strcmp(cmd, "mount") == 0 && arg2) {
    int mounted = 0;
    rc = fpull_registry_mount_blob(r, repo, arg, arg2, &mounted, &err);
    if (!rc)
      printf("mounted %d\n", mounted);
  } else if (strcmp(cmd, "put-manifest") == 0 && arg3) {
    char *data = NULL;
    size_t len = 0;
    FILE *f = fopen(arg3, "rb");
    if (!f) {
      perror(arg3);
      return 1;
    }
    data = malloc(8 << 20);
    len = fread(data, 1, 8 << 20, f);
    fclose(f);
    char *digest = NULL;
    rc = fpull_registry_put_manifest(r, repo, arg, arg2, data, len, &digest, &err);
    if (!rc)
      printf("digest %s\n", digest);
    free(digest);
    free(data);
  } else {
    fprintf(stderr, "fpull-regget: unknown command %s\n", cmd);
    rc = 2;
  }
  fpull_registry_free(r);
  if (rc && err.msg[0])
    return fail(&err, rc);
  return rc;
}
