/* Internal: the signature policy applied to a session's manifests (man fpull,
 * SIGNATURES): the policy in force, the sigstore attachments fetched or read from the
 * cache, and what is kept back from the cache until the check has passed. */
#ifndef FP_SIGCHECK_H
#define FP_SIGCHECK_H

#include <stddef.h>

#include "fpull/policy.h"

struct fp_session;

/* Bytes fetched while a policy is in force, written to the cache (with the tag record, when
 * tagref is set) only once the image was accepted: a rejected image leaves nothing. */
struct fp_deferred {
  char *digest;
  char *data;
  size_t len;
  char *tagref; /* REGISTRY/REPO:TAG or NULL */
};

/* Loads the policy in force for s (opts->policy, the config's policy:, then the user's and
 * the system's containers/policy.json); none found is fine unless signatures are required
 * (FPULL_EPOLICY). */
int fp_sig_session_open(struct fp_session *s, fpull_err *err);
void fp_sig_session_close(struct fp_session *s);

/* 1 when the policy in force can refuse s's image (its list holds more than
 * insecureAcceptAnything): only then is what is fetched kept back from the cache. */
int fp_sig_enforced(const struct fp_session *s);

/* Keeps bytes back for fp_sig_commit (takes a copy). */
void fp_sig_defer(struct fp_session *s, const char *digest, const char *data, size_t len,
                  const char *tagref);
/* Writes what was kept back into the cache. */
int fp_sig_commit(struct fp_session *s, fpull_err *err);

/* Checks the manifest whose bytes fpull fetched (data, len; NULL when only its verified
 * digest is at hand) against the policy for s's reference. index_digest: the index it was
 * chosen from, for --signature-index either|both (NULL for a single manifest). Returns 0
 * (accepted; *out says how, NULL when no policy is in force), FPULL_EPOLICY (rejected: one
 * line naming the scope and the reason; *out says the same), or another code when the
 * signatures could not be had. */
int fp_sig_check_manifest(struct fp_session *s, const char *digest, const char *data, size_t len,
                          const char *index_digest, struct fpull_sig_check **out, fpull_err *err);

#endif
