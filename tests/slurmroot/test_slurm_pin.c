/* The job's pins (contrib/slurm/common/job_pin.c, issue 41.2): which images are pinned,
 * an entry found only for its exact image and only with a valid digest, an entry replaced
 * or removed without touching the others. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "common/job_pin.h"

#define D1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define D2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"

TEST(pin_wanted_for_tags_only)
{
  CHECK(fp_slurm_pin_wanted("reg.example.org/hpc/app:1.0"));
  CHECK(fp_slurm_pin_wanted("ubuntu"));
  CHECK(!fp_slurm_pin_wanted("reg.example.org/hpc/app@" D1));
  CHECK(!fp_slurm_pin_wanted("/scratch/app.sqsh"));
  CHECK(!fp_slurm_pin_wanted("app.sqsh"));
  CHECK(!fp_slurm_pin_wanted("none"));
  CHECK(!fp_slurm_pin_wanted(""));
  CHECK(!fp_slurm_pin_wanted(NULL));
}

TEST(pin_found_for_its_exact_image_only)
{
  char d[160];
  const char *pins = "reg/a:1@" D1 " reg/a:10@" D2;
  CHECK(fp_slurm_pin_find(pins, "reg/a:1", d, sizeof d));
  CHECK_STR_EQ(d, D1);
  CHECK(fp_slurm_pin_find(pins, "reg/a:10", d, sizeof d));
  CHECK_STR_EQ(d, D2);
  CHECK(!fp_slurm_pin_find(pins, "reg/a", d, sizeof d));
  CHECK(!fp_slurm_pin_find(pins, "reg/b:1", d, sizeof d));
  CHECK(!fp_slurm_pin_find(NULL, "reg/a:1", d, sizeof d));
  /* What is no digest is no pin. */
  CHECK(!fp_slurm_pin_find("reg/a:1@sha256:xyz reg/a:2@../../x", "reg/a:1", d, sizeof d));
  CHECK(!fp_slurm_pin_find("reg/a:2@../../x", "reg/a:2", d, sizeof d));
  /* A registry that did not answer the submit in time. */
  CHECK(fp_slurm_pin_find("reg/a:3@" FP_SLURM_PIN_UNANSWERED, "reg/a:3", d, sizeof d));
  CHECK_STR_EQ(d, FP_SLURM_PIN_UNANSWERED);
}

TEST(pin_set_replaces_or_removes_one_entry)
{
  char *v = fp_slurm_pin_set(NULL, "reg/a:1", D1);
  CHECK_STR_EQ(v, "reg/a:1@" D1);
  char *w = fp_slurm_pin_set(v, "reg/b:1", D2);
  CHECK_STR_EQ(w, "reg/a:1@" D1 " reg/b:1@" D2);
  free(v);
  v = fp_slurm_pin_set(w, "reg/a:1", D2);
  CHECK_STR_EQ(v, "reg/b:1@" D2 " reg/a:1@" D2);
  free(w);
  w = fp_slurm_pin_set(v, "reg/a:1", NULL);
  CHECK_STR_EQ(w, "reg/b:1@" D2);
  free(v);
  v = fp_slurm_pin_set(w, "reg/b:1", NULL);
  CHECK_STR_EQ(v, "");
  free(v);
  free(w);
}
