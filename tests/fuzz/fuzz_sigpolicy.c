/* libFuzzer target: what a registry or a policy file hands the signature check, each
 * parser over the same bytes: a containers-policy.json (then the scope lookup and the
 * identity rules of what it holds), a .sig manifest, a signature payload, base64. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sig/policy.h"
#include "sig/sigstore.h"

static const char *const refs[] = {"r.example.com:5000/ns/app:v1", "busybox",
                                   "r.io/a@sha256:0123456789abcdef0123456789abcdef0123456789abcdef"
                                   "0123456789abcdef"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const char *text = (const char *)data;
  fpull_err err = {0};
  fpull_policy *p = NULL;
  if (fpull_policy_parse(&p, text, size, "fuzz", &err) == 0) {
    for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++) {
      struct fp_dref d;
      if (fp_dref_parse(&d, refs[i]) != 0)
        abort();
      const struct fp_reqlist *l = fp_policy_for(p, &d);
      if (!l || !l->n || !l->scope)
        abort(); /* a list always applies, and it is never empty */
      for (size_t k = 0; k < l->n; k++)
        (void)fp_identity_accepts(&l->r[k].id, &d, &d);
      fp_dref_clear(&d);
    }
    fpull_policy_free(p);
  } else if (err.code != FPULL_EUSAGE) {
    abort();
  }

  struct fp_sig_attachments a;
  if (fp_sig_attachments_parse(&a, text, size, NULL, &err) == 0) {
    for (size_t i = 0; i < a.n; i++)
      if (a.a[i].size < 0 || a.a[i].size > (int64_t)FP_SIG_PAYLOAD_MAX)
        abort();
    if (a.n > FP_SIG_MAX_ATTACHMENTS)
      abort();
    fp_sig_attachments_free(&a);
  }

  char *id = NULL, *dig = NULL;
  int rc = fp_sig_payload_parse(&id, &dig, text, size, &err);
  if ((rc == 0) != (id != NULL && dig != NULL))
    abort();
  struct fp_dref d;
  if (id && fp_dref_parse(&d, id) == 0)
    fp_dref_clear(&d);
  free(id);
  free(dig);

  char *s = malloc(size + 1);
  if (!s)
    return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  unsigned char *out = NULL;
  size_t len = 0;
  if (fp_base64_decode(&out, &len, s) == 0 && len > size)
    abort();
  free(out);
  free(s);
  return 0;
}
