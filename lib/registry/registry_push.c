/* The registry client, push side: blob existence, cross-repository mounts, monolithic
 * uploads and manifest PUTs. Pushes go to the registry itself, never to a mirror. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "fpull/ref.h"
#include "registry_internal.h"

static struct fp_endpoint *origin_ep(fpull_registry *r)
{
  return &r->eps[r->neps - 1];
}

static int check_names(const char *repo, const char *digest, fpull_err *err)
{
  if (!fp_reg_repo_ok(repo))
    return fpull_err_set(err, FPULL_EUSAGE, "bad repository name \"%s\"", repo ? repo : "");
  if (digest && !fpull_digest_valid(digest))
    return fpull_err_set(err, FPULL_EUSAGE, "bad digest \"%.80s\"", digest);
  return 0;
}

int fpull_registry_blob_exists(fpull_registry *r, const char *repo, const char *digest, int *exists,
                               fpull_err *err)
{
  *exists = 0;
  int rc = check_names(repo, digest, err);
  if (rc)
    return rc;
  struct fp_endpoint *ep = origin_ep(r);
  cleanup_free char *path = fp_xasprintf("/v2/%s/blobs/%s", repo, digest);
  cleanup_free char *scope = fp_xasprintf("repository:%s:pull,push", repo);
  struct fp_call c = {.method = "HEAD", .path = path, .repo = repo, .scope = scope};
  struct fp_http_resp resp;
  rc = fp_reg_call(r, ep, &c, &resp, err);
  if (rc)
    return fpull_err_prefix(err, "blob %s", digest);
  if (resp.status == 200)
    *exists = 1;
  else if (resp.status != 404)
    rc = fp_reg_map_status(ep, &resp, repo, digest, err);
  fp_http_resp_free(&resp);
  return rc;
}

int fpull_registry_mount_blob(fpull_registry *r, const char *repo, const char *digest,
                              const char *from_repo, int *mounted, fpull_err *err)
{
  *mounted = 0;
  int rc = check_names(repo, digest, err);
  if (!rc)
    rc = check_names(from_repo, NULL, err);
  if (rc)
    return rc;
  struct fp_endpoint *ep = origin_ep(r);
  cleanup_free char *path =
      fp_xasprintf("/v2/%s/blobs/uploads/?mount=%s&from=%s", repo, digest, from_repo);
  /* One token for both repositories: push here, pull there. */
  cleanup_free char *scope =
      fp_xasprintf("repository:%s:pull,push repository:%s:pull", repo, from_repo);
  struct fp_call c = {
      .method = "POST", .path = path, .repo = repo, .scope = scope, .body = "", .body_len = 0};
  struct fp_http_resp resp;
  rc = fp_reg_call(r, ep, &c, &resp, err);
  if (rc)
    return fpull_err_prefix(err, "mount of %s from %s", digest, from_repo);
  if (resp.status == 201) {
    *mounted = 1;
  } else if (resp.status != 202) {
    cleanup_free char *what = fp_xasprintf("mount of %s from %s", digest, from_repo);
    rc = fp_reg_map_status(ep, &resp, repo, what, err);
  }
  fp_http_resp_free(&resp);
  return rc;
}

int fpull_registry_put_blob_file(fpull_registry *r, const char *repo, const char *digest,
                                 const char *path, fpull_err *err)
{
  int rc = check_names(repo, digest, err);
  if (rc)
    return rc;
  cleanup_fclose FILE *f = fopen(path, "rb");
  struct stat st;
  if (!f || fstat(fileno(f), &st) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "%s: %s", path, strerror(errno));
  struct fp_endpoint *ep = origin_ep(r);
  cleanup_free char *post = fp_xasprintf("/v2/%s/blobs/uploads/", repo);
  cleanup_free char *scope = fp_xasprintf("repository:%s:pull,push", repo);
  struct fp_call c = {
      .method = "POST", .path = post, .repo = repo, .scope = scope, .body = "", .body_len = 0};
  struct fp_http_resp resp;
  rc = fp_reg_call(r, ep, &c, &resp, err);
  if (rc)
    return fpull_err_prefix(err, "upload of blob %s", digest);
  if (resp.status != 202 || !resp.location) {
    cleanup_free char *what = fp_xasprintf("upload of blob %s", digest);
    rc = resp.status == 202
             ? fpull_err_set(err, FPULL_ENET, "%s: upload session without a Location", ep->hostport)
             : fp_reg_map_status(ep, &resp, repo, what, err);
    fp_http_resp_free(&resp);
    return rc;
  }
  cleanup_free char *loc = fp_url_resolve(resp.final_url, resp.location);
  fp_http_resp_free(&resp);
  if (!loc || (strncmp(loc, "https://", 8) != 0 && strncmp(loc, "http://", 7) != 0))
    return fpull_err_set(err, FPULL_ENET, "%s: bad upload Location", ep->hostport);
  cleanup_free char *put = fp_xasprintf("%s%sdigest=%s", loc, strchr(loc, '?') ? "&" : "?", digest);
  struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/octet-stream");
  struct fp_call p = {.method = "PUT",
                      .path = put,
                      .repo = repo,
                      .scope = scope,
                      .headers = hdrs,
                      .upload = f,
                      .upload_len = (uint64_t)st.st_size};
  rc = fp_reg_call(r, ep, &p, &resp, err);
  curl_slist_free_all(hdrs);
  if (rc)
    return fpull_err_prefix(err, "upload of blob %s", digest);
  if (resp.status != 201) {
    cleanup_free char *what = fp_xasprintf("upload of blob %s", digest);
    rc = fp_reg_map_status(ep, &resp, repo, what, err);
    if (resp.status == 400 && err)
      err->code = rc = FPULL_EINTEGRITY; /* DIGEST_INVALID: the bytes are not that blob */
  }
  fp_http_resp_free(&resp);
  return rc;
}

int fpull_registry_put_manifest(fpull_registry *r, const char *repo, const char *ref,
                                const char *media_type, const char *bytes, size_t len,
                                char **digest_out, fpull_err *err)
{
  if (digest_out)
    *digest_out = NULL;
  int rc = check_names(repo, NULL, err);
  if (rc)
    return rc;
  if (!ref || (strncmp(ref, "sha256:", 7) == 0 ? !fpull_digest_valid(ref) : !fp_reg_tag_ok(ref)))
    return fpull_err_set(err, FPULL_EUSAGE, "bad tag or digest \"%s\"", ref ? ref : "");
  if (!media_type || strpbrk(media_type, "\r\n"))
    return fpull_err_set(err, FPULL_EUSAGE, "bad media type");
  if (len > FP_MANIFEST_MAX)
    return fpull_err_set(err, FPULL_EUSAGE, "manifest over 4 MiB");
  char digest[72];
  fp_reg_sha256(bytes, len, digest);
  struct fp_endpoint *ep = origin_ep(r);
  cleanup_free char *path = fp_xasprintf("/v2/%s/manifests/%s", repo, ref);
  cleanup_free char *scope = fp_xasprintf("repository:%s:pull,push", repo);
  cleanup_free char *ct = fp_xasprintf("Content-Type: %s", media_type);
  struct curl_slist *hdrs = curl_slist_append(NULL, ct);
  struct fp_call c = {.method = "PUT",
                      .path = path,
                      .repo = repo,
                      .scope = scope,
                      .headers = hdrs,
                      .body = bytes,
                      .body_len = len};
  struct fp_http_resp resp;
  rc = fp_reg_call(r, ep, &c, &resp, err);
  curl_slist_free_all(hdrs);
  if (rc)
    return fpull_err_prefix(err, "push of manifest %s:%s", repo, ref);
  if (resp.status != 201) {
    cleanup_free char *what = fp_xasprintf("push of manifest %s", ref);
    rc = fp_reg_map_status(ep, &resp, repo, what, err);
  } else if (resp.docker_content_digest && strcmp(resp.docker_content_digest, digest) != 0 &&
             strncmp(resp.docker_content_digest, "sha256:", 7) == 0) {
    rc = fpull_err_set(err, FPULL_EINTEGRITY,
                       "push of manifest %s:%s: the registry says %.80s, the bytes are %s", repo,
                       ref, resp.docker_content_digest, digest);
  }
  fp_http_resp_free(&resp);
  if (!rc && digest_out)
    *digest_out = fp_xstrdup(digest);
  return rc;
}
