/* fpull: feature names, CPU tag table, implications, the target platform, and the
 * eligibility and ranking of index entries (fpull(1), FEATURES and MATCHING). */
#ifndef FPULL_FEATURES_H
#define FPULL_FEATURES_H

#include "error.h"
#include "manifest.h"

struct fpull_config;

/* ---- CPU tag table (data/cputags.yaml, installed under DATADIR/fpull) ---- */
struct fpull_tagdb;

/* Path of the shipped table: $FPULL_DATA_DIR/cputags.yaml when set, else the installed
 * one. */
FPULL_API const char *fpull_tagdb_default_path(void);
/* Loads the table (path NULL: the default), plus the user tags of config (may be NULL); a
 * user tag replaces a shipped tag of the same name. The CUDA tables come from cuda.yaml
 * beside the table, else from the shipped one. Errors: FPULL_EUSAGE for a missing or
 * malformed file (naming file, line and column) or a bad user tag. */
FPULL_API int fpull_tagdb_load(struct fpull_tagdb **out, const char *path,
                               const struct fpull_config *config, fpull_err *err);
FPULL_API void fpull_tagdb_free(struct fpull_tagdb *db);
/* Canonical tag name for a name or alias (case-insensitive), or NULL if not a CPU tag. */
FPULL_API const char *fpull_tagdb_canonical(const struct fpull_tagdb *db, const char *name);
/* The ISA extensions of a canonical tag (NULL-terminated, owned by db), or NULL. */
FPULL_API const char *const *fpull_tagdb_isa(const struct fpull_tagdb *db, const char *tag);
/* 1 when a CPU without extension isa lacks the tags whose set lists it, 0 for the
 * extensions compilers reach only through intrinsics (MWAITX, WAITPKG, RDSEED, ...), which
 * the chip of a tag has but which never gate it. Added in v5. */
FPULL_API int fpull_tagdb_isa_gates(const struct fpull_tagdb *db, const char *isa);
/* Added in v6. The same for one tag (canonical name or alias): its architecture's verdict
 * (the table's intrinsic-only list is per architecture: arm64's and amd64's aes are different
 * extensions), and 1 for every extension of a user's own tag. fpull_tagdb_isa_gates, which
 * names no tag, says 0 only where the extension is intrinsic-only on every architecture. */
FPULL_API int fpull_tagdb_tag_isa_gates(const struct fpull_tagdb *db, const char *tag,
                                        const char *isa);
/* All canonical tags for architecture arch ("amd64"), in table order (owned by db). */
FPULL_API const char *const *fpull_tagdb_tags(const struct fpull_tagdb *db, const char *arch);

struct fpull_cpu_info;
struct fpull_target;
/* Added in v6. The CPU's own generation: the -march name GCC's -march=native gives it,
 * decided by vendor, family and model first and by its extensions only where a model
 * covers several generations, in the table's canonical spelling (the table's more precise
 * name where GCC reuses another's set: emeraldrapids, lunarlake); on arm64 the -mcpu name
 * of MIDR's implementer and part (neoverse-v2, a64fx), on ppc64le the AT_PLATFORM level
 * (power10). NULL where that decides nothing or the table lacks the name (an unknown vendor,
 * family or part). Owned by db or static. */
FPULL_API const char *fpull_cpu_generation(const struct fpull_tagdb *db,
                                           const struct fpull_cpu_info *ci);
/* Added in v6. The best CPU tag the target holds: ci's own generation when it holds (ci may
 * be NULL), else the tag with the largest ISA set on the CPU's own line (a subset of its
 * generation's set), else the largest of all; equal sets in table order. An arm64 ci whose
 * own core cannot run or has no name gets the largest Arm architecture level (armv8-a ...)
 * that holds, not another core. levels 1: the best x86-64 level instead. NULL when no tag holds.
 * Owned by db. */
FPULL_API const char *fpull_best_cpu_tag(const struct fpull_tagdb *db, const struct fpull_target *t,
                                         const struct fpull_cpu_info *ci, int levels);

/* ---- feature sets ---- */
enum fpull_feature_source {
  FPULL_SRC_CPU = 0,
  FPULL_SRC_NVIDIA = 1,
  FPULL_SRC_CONFIG = 2,
  FPULL_SRC_CLI = 3,
  FPULL_SRC_AMDGPU = 4, /* added in v3: the KFD topology ("amdgpu") */
};
FPULL_API const char *fpull_feature_source_name(int src); /* "cpu", "nvidia", ... */

struct fpull_featureset;

FPULL_API struct fpull_featureset *fpull_featureset_new(void);
FPULL_API void fpull_featureset_free(struct fpull_featureset *fs);
/* Adds NAME (folded to lower case, aliases made canonical through db when db is not NULL)
 * as given directly from src. Errors: FPULL_EUSAGE for an empty or malformed name. */
FPULL_API int fpull_featureset_add(struct fpull_featureset *fs, const char *name, int src,
                                   const struct fpull_tagdb *db, fpull_err *err);
/* Adds every name of a comma-separated LIST (as --features and FPULL_FEATURES take). */
FPULL_API int fpull_featureset_add_list(struct fpull_featureset *fs, const char *list, int src,
                                        const struct fpull_tagdb *db, fpull_err *err);
/* Adds what the features imply, to a fixed point: a CPU tag implies the tags of its
 * architecture whose ISA set is a subset of its own and its ISA extensions; a tag whose
 * whole ISA set is present holds; nvidia-A-B-C implies nvidia-A-B, nvidia-A and the
 * cuda-X-Y that driver supports; nv-compute-X-Y the lower minors of X; cuda-X-Y every
 * lower CUDA release. Implied features carry the source of the feature that implied them
 * (the more direct when several did); a direct feature keeps its own. */
FPULL_API int fpull_featureset_imply(struct fpull_featureset *fs, const struct fpull_tagdb *db,
                                     fpull_err *err);
/* 1 when NAME (any spelling) is in the set. */
FPULL_API int fpull_featureset_has(const struct fpull_featureset *fs, const char *name,
                                   const struct fpull_tagdb *db);
FPULL_API size_t fpull_featureset_count(const struct fpull_featureset *fs);
/* I-th feature in the stable printing order (sorted by name), with its source. */
FPULL_API const char *fpull_featureset_get(const struct fpull_featureset *fs, size_t i, int *src);

/* ---- names a person gives (fpull(1), "Names you give": a typo never selects another image) ----
 */
/* The name of known (a NULL-terminated list) closest to name within edit distance 2
 * (insertions, deletions, substitutions and swaps of neighbours, case-insensitive), or
 * NULL; ties go to the earlier in known. name itself is no suggestion, nor is a word
 * every letter of which would change ("y" for "x"). The result points into known. */
FPULL_API const char *fpull_suggest(const char *name, const char *const *known);
/* 0 when name (any case) is a feature fpull knows: a CPU tag or alias of any architecture,
 * an ISA extension of a tag or of a detector, nvidia-N[-N[-N]], nv-compute-N-N, cuda-N-N,
 * amdgpu-gfxX (X: the LLVM target's hex digits), or one of config's site-features (config
 * may be NULL). Else FPULL_EUSAGE: 'unknown feature "brodwell" (did you mean
 * "broadwell"?)'; the caller adds where the name came from. */
FPULL_API int fpull_feature_name_check(const struct fpull_tagdb *db,
                                       const struct fpull_config *config, const char *name,
                                       fpull_err *err);
/* Every feature name fpull_feature_name_check accepts from a list (the names of db's tags
 * and aliases, the ISA extensions, config's site-features), lower case, sorted, each once;
 * the nvidia-, nv-compute-, cuda- and amdgpu- grammars are not listed. Free with
 * fpull_strv_free. Never NULL. */
FPULL_API char **fpull_feature_known_names(const struct fpull_tagdb *db,
                                           const struct fpull_config *config);
/* 0 when os, architecture (as given: x86_64 counts as amd64) and variant (may be NULL)
 * are values the OCI image spec (Go's GOOS/GOARCH and their variants) lists; else
 * FPULL_EUSAGE naming the bad one, with "did you mean". */
FPULL_API int fpull_platform_name_check(const char *os, const char *architecture,
                                        const char *variant, fpull_err *err);

/* ---- the target platform ---- */
struct fpull_target {
  char *os;
  char *architecture; /* normalised: amd64, arm64, arm, ppc64le, ... */
  char *variant;      /* may be NULL (no variant) */
  struct fpull_featureset *features;
  /* Added in v3: the NVIDIA brand of the detected GPUs ("tesla", ...) for
   * NVIDIA_REQUIRE_CUDA's brand= clauses; NULL when unknown (always with --features and
   * --platform). */
  char *gpu_brand;
  /* Added in v5: with --platform OS/ARCH[/VARIANT] and no features on the host's own os and
   * architecture, the target the host would be without it (for the note when the choice
   * differs); also with given features (--features, --platform's) on the host's
   * own os and architecture, for the note and for the no-fit error naming what they
   * dropped; NULL otherwise. Owned by this target. */
  struct fpull_target *host;
};

/* Options structs grow at the end: version says which layout the caller was compiled
 * with, and the library refuses versions it does not know (FPULL_EUSAGE). Start from
 * FPULL_TARGET_OPTS_INIT, then set fields. */
#define FPULL_TARGET_OPTS_VERSION 1
struct fpull_target_opts {
  unsigned int version;              /* FPULL_TARGET_OPTS_VERSION */
  const char *platform;              /* --platform OS/ARCH[/VARIANT][:FEATURE...] or NULL */
  const char *features;              /* --features LIST or NULL */
  const char *env_features;          /* $FPULL_FEATURES or NULL */
  const struct fpull_config *config; /* platform-features, detect; may be NULL */
  const struct fpull_tagdb *tagdb;   /* required */
  int no_detect;                     /* tests: never run host detection */
};
#define FPULL_TARGET_OPTS_INIT                                                                     \
  {                                                                                                \
    .version = FPULL_TARGET_OPTS_VERSION                                                           \
  }

/* Builds the target: detection + config + env, or exactly what --features/--platform say,
 * then implications and the variant rule. Since v5, --platform OS/ARCH[/VARIANT] without
 * features on the host's own os and architecture keeps what detection finds that fits the
 * variant (an amd64 level drops the extensions and tags above it). Errors:
 * FPULL_EUSAGE for bad syntax. */
FPULL_API int fpull_target_build(struct fpull_target **out, const struct fpull_target_opts *o,
                                 fpull_err *err);
FPULL_API void fpull_target_free(struct fpull_target *t);
/* "amd64" for "x86_64", "arm64" for "aarch64", else a copy of arch. Caller frees. */
FPULL_API char *fpull_arch_normalise(const char *arch);

/* ---- eligibility and ranking ---- */
struct fpull_match_entry {
  int eligible;
  char **missing; /* the entry's features the target lacks (NULL-terminated, maybe empty) */
  char *why;      /* one-line reason when not eligible ("architecture arm64", ...) or NULL */
  int rank;       /* 1 for the chosen entry, 2 for the next, ...; 0 when not eligible */
};

struct fpull_match {
  struct fpull_match_entry *entries; /* one per index entry, in index order */
  size_t n;
  long chosen; /* index of the chosen entry, -1 when none fits */
};

/* Applies fpull(1)'s eligibility rules (MATCHING) and five-step ranking to the n descriptors
 * (entries without platform, attestations and unknown/unknown are never eligible). The
 * caller owns *out; chosen is -1 when nothing fits. Never fails (allocation failure
 * aborts). */
FPULL_API int fpull_match_entries(struct fpull_match **out, const struct fpull_target *t,
                                  const struct fpull_descriptor *entries, size_t n,
                                  const struct fpull_tagdb *db, fpull_err *err);
FPULL_API void fpull_match_free(struct fpull_match *m);

#endif
