/* The table knows every name the installed cross compilers take for arm64 and ppc64le
 * (aarch64-linux-gnu-gcc's -mcpu and -march values, powerpc64le-linux-gnu-gcc's POWER8 and
 * later -mcpu values; scripts/deps.sh installs them), as a tag or an alias: --features
 * accepts what an image was built with (issue 42: armv8-r was missing). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fpull/features.h"
#include "harness.h"

static struct fpull_tagdb *load_shipped(void)
{
  struct fpull_tagdb *db = NULL;
  fpull_err err = {0};
  if (fpull_tagdb_load(&db, NULL, NULL, &err))
    th_fail(__FILE__, __LINE__, "loading the shipped table: %s", err.msg);
  return db;
}

/* The values cc lists for an unknown -OPT=; the number of them the table lacks (those for
 * which skip returns 1 are left out), and how many there were in *n. */
static size_t missing(const struct fpull_tagdb *db, const char *cc, const char *opt,
                      int (*skip)(const char *), size_t *n)
{
  char cmd[256];
  snprintf(cmd, sizeof cmd,
           "LC_ALL=C %s -%s=fpull-no-such-cpu -E -x c /dev/null 2>&1 | "
           "sed -n 's/.*valid arguments.* are: //p'",
           cc, opt);
  FILE *p = popen(cmd, "r");
  char line[8192] = "";
  if (!p || !fgets(line, sizeof line, p))
    line[0] = '\0';
  if (p)
    pclose(p);
  size_t lacks = 0;
  *n = 0;
  for (char *save = NULL, *w = strtok_r(line, " \n", &save); w; w = strtok_r(NULL, " \n", &save)) {
    if (strcmp(w, "native") == 0 || strcmp(w, "generic") == 0 || (skip && skip(w)))
      continue;
    (*n)++;
    if (!fpull_tagdb_canonical(db, w)) {
      th_fail(__FILE__, __LINE__, "%s knows -%s=%s, the table does not", cc, opt, w);
      lacks++;
    }
  }
  return lacks;
}

/* POWER levels before POWER8 and the generic names build no ppc64le code of a generation. */
static int not_ppc64le(const char *v)
{
  if (strncmp(v, "power", 5) != 0 || strncmp(v, "powerpc", 7) == 0)
    return 1;
  return v[5] >= '3' && v[5] <= '7' && (v[6] == '\0' || v[6] == '+' || v[6] == 'x');
}

TEST(every_arm64_and_power_name_of_the_cross_compilers_is_known)
{
  struct fpull_tagdb *db = load_shipped();
  size_t n = 0;
  CHECK_INT_EQ(missing(db, "aarch64-linux-gnu-gcc", "mcpu", NULL, &n), 0);
  if (n == 0) {
    fprintf(stderr, "no aarch64-linux-gnu-gcc to ask\n");
  } else {
    CHECK(n > 60);
    CHECK_INT_EQ(missing(db, "aarch64-linux-gnu-gcc", "march", NULL, &n), 0);
    CHECK(n >= 11);
  }
  CHECK_INT_EQ(missing(db, "powerpc64le-linux-gnu-gcc", "mcpu", not_ppc64le, &n), 0);
  if (n == 0)
    fprintf(stderr, "no powerpc64le-linux-gnu-gcc to ask\n");
  else
    CHECK_INT_EQ(n, 3); /* power8, power9, power10 */
  /* And --features takes them. */
  CHECK_STR_EQ(fpull_tagdb_canonical(db, "armv8-r"), "armv8-r");
  CHECK_STR_EQ(fpull_tagdb_canonical(db, "demeter"), "neoverse-v2");
  CHECK_STR_EQ(fpull_tagdb_canonical(db, "thunderx2t99p1"), "thunderx2t99p1");
  fpull_tagdb_free(db);
}
