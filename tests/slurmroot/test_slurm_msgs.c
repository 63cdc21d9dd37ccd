/* What the Slurm plugin's sides say and take (issue 41 item 7): a relative --fpull-mounts
 * SRC made absolute against the submit directory (common/settings.c), the node's name in
 * every "fpull: " line and the silence of a cancelled step (common/run.c). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "common/run.h"
#include "common/settings.h"

static void resolved(const char *spec, const char *want)
{
  char *got = fp_slurm_mounts_resolve(spec, "/home/u/job");
  CHECK_STR_EQ(got, want);
  free(got);
}

TEST(relative_mount_sources_are_the_submit_directorys)
{
  resolved("./:/work", "/home/u/job:/work");
  resolved(".:/work:ro", "/home/u/job:/work:ro");
  resolved("./data:/data,data2:/d2:ro+rprivate",
           "/home/u/job/data:/data,/home/u/job/data2:/d2:ro+rprivate");
  resolved(".//x/y:/y", "/home/u/job/x/y:/y");
  resolved("../up:/up", "/home/u/job/../up:/up");
  /* Absolute sources, tmpfs:, umount: and SRC alone (its DST is SRC) stay as they are. */
  resolved("/abs:/a,tmpfs:/t:size=1M,umount:/u,rel", "/abs:/a,tmpfs:/t:size=1M,umount:/u,rel");
  resolved("", "");
  /* The result parses as absolute bind mounts. */
  char *spec = fp_slurm_mounts_resolve("./data:/data,./:/w:ro", "/home/u/job");
  struct fp_slurm_mount *m = NULL;
  size_t n = 0;
  fpull_err err = {0};
  CHECK_INT_EQ(fp_slurm_mounts_parse(&m, &n, "--fpull-mounts", spec, &err), 0);
  CHECK_INT_EQ((int)n, 2);
  CHECK_STR_EQ(m[0].src, "/home/u/job/data");
  CHECK_STR_EQ(m[1].src, "/home/u/job");
  CHECK_INT_EQ(m[1].ro, 1);
  fp_slurm_mounts_free(m, n);
  free(spec);
  /* Without a directory: as given (the parse refuses it). */
  char *as_is = fp_slurm_mounts_resolve("./data:/data", NULL);
  CHECK_STR_EQ(as_is, "./data:/data");
  CHECK(fp_slurm_mounts_parse(&m, &n, "--fpull-mounts", as_is, &err) != 0);
  free(as_is);
}

/* What fp_slurm_say and the rest write on stderr while fn runs. */
static char *said(void (*fn)(void))
{
  int p[2];
  if (pipe(p) != 0)
    abort();
  int saved = dup(STDERR_FILENO);
  dup2(p[1], STDERR_FILENO);
  close(p[1]);
  fn();
  dup2(saved, STDERR_FILENO);
  close(saved);
  static char buf[4096];
  ssize_t n = read(p[0], buf, sizeof buf - 1);
  close(p[0]);
  buf[n > 0 ? n : 0] = '\0';
  return buf;
}

static void say_two(void)
{
  fp_slurm_say("fpull: working directory /x: No such file or directory");
  fp_slurm_say("not ours");
}

static void cancelled_then_say(void)
{
  fp_slurm_run_cancellable();
  raise(SIGTERM);
  fp_slurm_say("fpull: app:1: pull failed (exit 143)");
  fp_slurm_say_cancelled("app:1");
}

TEST(lines_name_the_node_and_a_cancelled_step_says_one)
{
  fp_slurm_say_node("node17");
  CHECK_STR_EQ(said(say_two), "fpull: node17: working directory /x: No such file or directory\n"
                              "not ours\n");
  CHECK(!fp_slurm_run_cancelled());
  CHECK_STR_EQ(said(cancelled_then_say), "fpull: node17: app:1: the pull was cancelled with the "
                                         "step (its other nodes say nothing of it)\n");
  CHECK(fp_slurm_run_cancelled());
  fp_slurm_say_node(NULL);
}

static void cancel_not_armed(void)
{
  fp_slurm_run_cancellable();
  fp_slurm_run_cancel_say("app:1");
  fp_slurm_run_cancel_say(NULL); /* the pull is over: the step runs */
  raise(SIGTERM);
}

static void cancel_armed_twice(void)
{
  fp_slurm_run_cancellable();
  fp_slurm_run_cancel_say("app:1");
  raise(SIGINT);
  raise(SIGINT); /* srun's second Ctrl-C */
}

static void say_cancelled_after(void)
{
  fp_slurm_say_cancelled("app:1");
}

/* The first node says the step's line from the cancel's signal handler, once: srun's second
 * Ctrl-C is followed by the step's SIGKILL, which took a runner before its main flow said
 * it (a CI-like run: no line at all). A cancel once the pull is over says nothing. */
TEST(the_first_node_says_a_cancel_at_once_and_once)
{
  fp_slurm_say_node("node1");
  CHECK_STR_EQ(said(cancel_not_armed), "");
  CHECK_STR_EQ(said(cancel_armed_twice), "fpull: node1: app:1: the pull was cancelled with the "
                                         "step (its other nodes say nothing of it)\n");
  CHECK_STR_EQ(said(say_cancelled_after), ""); /* the main flow's call: said already */
  fp_slurm_say_node(NULL);
}

static void read_record(const char *path, char *buf, size_t len)
{
  memset(buf, 0, len);
  FILE *f = fopen(path, "rb");
  CHECK(f != NULL);
  size_t n = fread(buf, 1, len - 1, f);
  fclose(f);
  buf[n] = '\0';
}

/* The tasks' record of a cancelled step is there the moment the signal comes: the step's
 * SIGKILL that follows srun's Ctrl-C took a runner before it wrote its own, and its task
 * said "ended without a result" as a second line (CI, stop 44). A record already there
 * (the container started) is never replaced. */
TEST(a_cancel_writes_the_tasks_record_at_once_and_never_over_one)
{
  char dir[] = "/tmp/fpull-cancelrec-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char info[64], other[64];
  snprintf(info, sizeof info, "%s/info", dir);
  snprintf(other, sizeof other, "%s/other", dir);
  fp_slurm_run_cancel_record(info);
  fp_slurm_run_cancellable();
  raise(SIGINT);
  char rec[16];
  read_record(info, rec, sizeof rec);
  CHECK_STR_EQ(rec, "X130");
  CHECK(unlink(info) == 0);
  /* Published before the signal: kept as it is. */
  FILE *f = fopen(other, "w");
  CHECK(f != NULL);
  fputs("Dsha256:0", f);
  fclose(f);
  fp_slurm_run_cancel_record(other);
  raise(SIGTERM);
  read_record(other, rec, sizeof rec);
  CHECK_STR_EQ(rec, "Dsha256:0");
  CHECK(unlink(other) == 0);
  fp_slurm_run_cancel_record(NULL);
  raise(SIGHUP);
  CHECK(access(info, F_OK) != 0);
  CHECK(rmdir(dir) == 0);
}
