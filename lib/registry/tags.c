/* A repository's tags: GET /v2/REPO/tags/list, paginated by the registry's Link header
 * (distribution spec, "Listing Tags"). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry_internal.h"

#define TAGS_MAX 100000
#define TAGS_PAGES_MAX 10000

/* The target of Link: <URL>; rel="next", resolved against the page's URL; NULL when there
 * is none. */
static char *next_link(const char *link, const char *page_url)
{
  for (const char *p = link; p && *p;) {
    const char *lt = strchr(p, '<'), *gt = lt ? strchr(lt, '>') : NULL;
    if (!gt)
      return NULL;
    const char *end = strchr(gt, ',');
    size_t plen = end ? (size_t)(end - gt) : strlen(gt);
    cleanup_free char *params = fp_xstrndup(gt + 1, plen - 1);
    if (strstr(params, "rel=\"next\"") || strstr(params, "rel=next")) {
      cleanup_free char *ref = fp_xstrndup(lt + 1, (size_t)(gt - lt - 1));
      return fp_url_resolve(page_url, ref);
    }
    p = end ? end + 1 : NULL;
  }
  return NULL;
}

static int add_page(char ***tags, size_t *n, const char *data, size_t len, const char *repo,
                    const char *host, fpull_err *err)
{
  cJSON *j = cJSON_ParseWithLength(data, len);
  const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "tags");
  if (!cJSON_IsObject(j) || (!cJSON_IsArray(list) && !cJSON_IsNull(list) && list)) {
    cJSON_Delete(j);
    return fpull_err_set(err, FPULL_EFAIL, "%s: the tag list of %s is not {\"tags\": [...]}", host,
                         repo);
  }
  const cJSON *t;
  size_t bad = 0;
  const cJSON *arr = cJSON_IsArray(list) ? list : NULL;
  cJSON_ArrayForEach(t, arr)
  {
    if (!cJSON_IsString(t) || !fp_reg_tag_ok(t->valuestring)) {
      bad++;
      continue;
    }
    if (*n >= TAGS_MAX) {
      cJSON_Delete(j);
      return fpull_err_set(err, FPULL_EFAIL, "%s: %s has more than %d tags", host, repo, TAGS_MAX);
    }
    *tags = fp_strv_push(*tags, t->valuestring);
    (*n)++;
  }
  cJSON_Delete(j);
  if (bad)
    fp_warn("%s: %zu names in the tag list of %s are no valid tags; left out", host, bad, repo);
  return 0;
}

int fpull_registry_list_tags(char ***out, fpull_registry *r, const char *repo, unsigned page_size,
                             fpull_err *err)
{
  *out = NULL;
  if (!fp_reg_repo_ok(repo))
    return fpull_err_set(err, FPULL_EUSAGE, "bad repository name \"%s\"", repo ? repo : "");
  /* The registry itself, not a mirror: a mirror's tags are whatever it happened to pull. */
  struct fp_endpoint *ep = &r->eps[r->neps - 1];
  cleanup_free char *scope = fp_xasprintf("repository:%s:pull", repo);
  cleanup_free char *path =
      fp_xasprintf("/v2/%s/tags/list?n=%u", repo, page_size ? page_size : 1000);
  cleanup_strv char **tags = NULL;
  size_t n = 0;
  for (int page = 0;; page++) {
    if (page >= TAGS_PAGES_MAX)
      return fpull_err_set(err, FPULL_EFAIL, "%s: the tag list of %s goes on past %d pages",
                           ep->hostport, repo, TAGS_PAGES_MAX);
    struct fp_call c = {
        .method = "GET", .path = path, .repo = repo, .scope = scope, .max_body = FP_MANIFEST_MAX};
    struct fp_http_resp resp;
    int rc = fp_reg_call(r, ep, &c, &resp, err);
    if (rc)
      return rc;
    if (resp.status != 200) {
      rc = fp_reg_map_status(ep, &resp, repo, "tag list", err);
      fp_http_resp_free(&resp);
      return rc;
    }
    rc = add_page(&tags, &n, resp.body.data ? resp.body.data : "", resp.body.len, repo,
                  ep->hostport, err);
    cleanup_free char *page_url =
        strncmp(path, "http", 4) == 0 ? fp_xstrdup(path) : fp_xasprintf("%s%s", ep->base, path);
    cleanup_free char *next = rc == 0 && resp.link ? next_link(resp.link, page_url) : NULL;
    fp_http_resp_free(&resp);
    if (rc)
      return rc;
    if (!next)
      break;
    /* The next page comes from the same registry: a Link elsewhere is not followed. */
    cleanup_free char *o1 = fp_url_origin(next), *o2 = fp_url_origin(ep->base);
    if (!o1 || !o2 || strcmp(o1, o2) != 0)
      return fpull_err_set(err, FPULL_EFAIL,
                           "%s: the tag list of %s links its next page to "
                           "another host; not followed",
                           ep->hostport, repo);
    free(path);
    path = steal_pointer(&next);
  }
  *out = tags ? steal_pointer(&tags) : fp_xcalloc(1, sizeof(char *));
  return 0;
}
