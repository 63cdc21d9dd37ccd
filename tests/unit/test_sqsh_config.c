/* The Slurm plugin's reader of enroot's /etc/environment and /etc/rc in a .sqsh image
 * (contrib/slurm/runner/sqsh_config.c): the formats of every enroot version and fpull's own, and
 * files that are hostile or not enroot's, which are refused with a line saying why. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "sqsh_config.h"
#include "base/util.h"

/* What `fpull pull --format squashfs` writes (lib/sinks/sqfs_config.c) for a WorkingDir
 * and words that need every kind of quoting. */
static const char FPULL_RC[] =
    "# enroot-provenance: docker://127.0.0.1:5000#cfg/img:tag@sha256:00\n"
    "# a b v\n"
    "# org.x multi line \n"
    "\n"
    "mkdir -p \"/srv/my \\\"app\\\" \\$x \\`y\\`\" 2> /dev/null\n"
    "cd \"/srv/my \\\"app\\\" \\$x \\`y\\`\" && unset OLDPWD || exit 1\n"
    "\n"
    "if [ -s /etc/rc.local ]; then\n"
    "    . /etc/rc.local\n"
    "fi\n"
    "\n"
    "if [ $# -gt 0 ]; then\n"
    "    exec '/bin/ent' 'it'\\''s' \"$@\"\n"
    "else\n"
    "    exec '/bin/ent' 'it'\\''s' 'run' '$HOME' '`x`' 'a\nb'\n"
    "fi\n";

static void parse_rc(struct fp_slurm_sqsh_config *c, const char *text)
{
  fpull_err err = {0};
  memset(c, 0, sizeof *c);
  int rc = fp_slurm_sqsh_rc_parse(c, text, strlen(text), &err);
  if (rc)
    th_fail(__FILE__, __LINE__, "refused: %s", err.msg);
  CHECK(c->has_rc);
}

/* The message of text's refusal (static). */
static const char *rc_refusal(const char *text, size_t len)
{
  static fpull_err err;
  struct fp_slurm_sqsh_config c = {0};
  memset(&err, 0, sizeof err);
  CHECK_INT_EQ(fp_slurm_sqsh_rc_parse(&c, text, len, &err), FPULL_EUNSAFE);
  CHECK(!c.has_rc);
  CHECK_NULL(c.workdir);
  CHECK_NULL(c.entrypoint);
  fp_slurm_sqsh_config_free(&c);
  return err.msg;
}

#define CHECK_REFUSED(text, needle)                                                                \
  do {                                                                                             \
    const char *th_msg = rc_refusal(text, strlen(text));                                           \
    if (!strstr(th_msg, needle))                                                                   \
      th_fail(__FILE__, __LINE__, "\"%s\" does not say \"%s\"", th_msg, needle);                   \
  } while (0)

static void check_words(char **got, const char *const *want)
{
  size_t n = 0;
  CHECK(got != NULL);
  for (; want[n]; n++) {
    CHECK(got[n] != NULL);
    CHECK_STR_EQ(got[n], want[n]);
  }
  CHECK_NULL(got[n]);
}

TEST(rc_as_fpull_writes_it)
{
  struct fp_slurm_sqsh_config c;
  parse_rc(&c, FPULL_RC);
  CHECK_STR_EQ(c.workdir, "/srv/my \"app\" $x `y`");
  check_words(c.entrypoint, (const char *const[]){"/bin/ent", "it's", NULL});
  check_words(c.cmd, (const char *const[]){"run", "$HOME", "`x`", "a\nb", NULL});
  CHECK_STR_EQ(c.provenance, "docker://127.0.0.1:5000#cfg/img:tag@sha256:00");
  fp_slurm_sqsh_config_free(&c);
}

TEST(rc_of_older_enroot_versions)
{
  /* enroot 2.x/3.0: no mkdir, `cd DIR || exit 1`, no Entrypoint (two blanks), rc.local run
   * by the shell it found (a block whose lines are no business of ours), and a label whose
   * second line left its comment. */
  static const char old[] = "# org.label-schema.description first line\n"
                            "second line of it, outside the comment\n"
                            "\n"
                            "cd \"/workspace\" || exit 1\n"
                            "\n"
                            "if [ -s /etc/rc.local ]; then\n"
                            "    if [ -x /etc/rc.local ]; then\n"
                            "        /etc/rc.local \"$@\"\n"
                            "    else\n"
                            "        exe=$(readlink -f /proc/$$/exe 2> /dev/null || :)\n"
                            "        ${exe:-/proc/self/exe} /etc/rc.local \"$@\"\n"
                            "    fi\n"
                            "fi\n"
                            "\n"
                            "if [ $# -gt 0 ]; then\n"
                            "    exec  \"$@\"\n"
                            "else\n"
                            "    exec  '/bin/bash'\n"
                            "fi\n";
  struct fp_slurm_sqsh_config c;
  parse_rc(&c, old);
  CHECK_STR_EQ(c.workdir, "/workspace");
  CHECK_NULL(c.entrypoint[0]);
  check_words(c.cmd, (const char *const[]){"/bin/bash", NULL});
  CHECK_NULL(c.provenance);
  fp_slurm_sqsh_config_free(&c);
}

TEST(rc_quoting_a_shell_reads)
{
  /* bash's $'...' for control characters, backslashes outside quotes, words made of
   * parts, a relative WorkingDir (enroot's cd starts from /). */
  static const char rc[] = "cd \"app\" && unset OLDPWD || exit 1\n"
                           "if [ $# -gt 0 ]; then\n"
                           "    exec $'tab\\there' a\\ b 'x'\"y\"z \"$@\"\n"
                           "else\n"
                           "    exec $'tab\\there' a\\ b 'x'\"y\"z $'\\101\\x42\\e'\n"
                           "fi\n";
  struct fp_slurm_sqsh_config c;
  parse_rc(&c, rc);
  CHECK_STR_EQ(c.workdir, "/app");
  check_words(c.entrypoint, (const char *const[]){"tab\there", "a b", "xyz", NULL});
  check_words(c.cmd, (const char *const[]){"AB\033", NULL});
  fp_slurm_sqsh_config_free(&c);
}

TEST(rc_not_enroots_is_refused_naming_the_line)
{
  CHECK_REFUSED("root:*:19000:0:99999:7:::\nnobody:*:19000:0:99999:7:::\n", "no `cd DIR` line");
  CHECK_REFUSED("", "no `cd DIR` line");
  CHECK_REFUSED("cd \"$HOME\" || exit 1\n", "line 1: a $ or ` expansion");
  CHECK_REFUSED("cd \"/x\" || exit 1\nif [ $# -gt 0 ]; then\n  exec $(id) \"$@\"\n",
                "line 3: shell syntax that enroot does not write");
  CHECK_REFUSED("cd \"/x\" || exit 1\nif [ $# -gt 0 ]; then\n  exec a; rm -rf ~ \"$@\"\n",
                "line 3: shell syntax");
  CHECK_REFUSED("cd \"/x\" || exit 1\nif [ $# -gt 0 ]; then\n  exec 'a \"$@\"\nelse\n",
                "line 3: a single quote without its end");
  CHECK_REFUSED("cd \"/x\" || exit 1\nrm -rf /\n", "line 2: not a line of enroot's");
  CHECK_REFUSED("cd \"/x\" ; rm -rf /\n", "line 1: not a line of enroot's");
  CHECK_REFUSED("cd \"/x\" || exit 1\nif [ $# -gt 0 ]; then\n  exec a \"$@\" b\n",
                "line 3: words after \"$@\"");
  CHECK_REFUSED("cd \"/x\" || exit 1\nif [ $# -gt 0 ]; then\n  exec a\n", "without \"$@\"");
  CHECK_REFUSED("cd /x || exit 1\nif [ $# -gt 0 ]; then\n exec a \"$@\"\nelse\n exec b\nfi\n",
                "two exec lines name different Entrypoints");
  CHECK_REFUSED("cd /x || exit 1\nif [ $# -gt 0 ]; then\n exec \"$@\"\nelse\n exec b\n",
                "the end comes before");
  CHECK_REFUSED("cd /x || exit 1\nif [ $# -gt 0 ]; then\n exec \"$@\"\nelse\n exec b\nfi\nid\n",
                "line 7: more after the end");
  CHECK_REFUSED("cd /x || exit 1\nif [ -s /etc/rc.local ]; then\n . /etc/rc.local\n",
                "line 2: an if without its fi");
  CHECK_REFUSED("cd /x || exit 1\nif [ $# -gt 0 ]; then\n exec $'\\0' \"$@\"\n", "a NUL character");
  static const char nul[] = "cd /x || exit 1\n\0";
  CHECK(strstr(rc_refusal(nul, sizeof nul - 1), "not text (a NUL byte at offset 16)"));
}

TEST(rc_bounds)
{
  /* Over the size limit, however well formed. */
  struct fp_buf b = {0};
  const char *line = "# a label that takes some room in the file, over and over again\n";
  while (b.len <= FP_SLURM_SQSH_FILE_MAX)
    fp_buf_append(&b, line, strlen(line));
  fp_buf_append(&b, FPULL_RC, strlen(FPULL_RC));
  CHECK(strstr(rc_refusal(b.data, b.len), "over 256 KiB"));
  /* More words than an exec line may have. */
  b.len = 0;
  const char *head = "cd /x || exit 1\nif [ $# -gt 0 ]; then\nexec";
  fp_buf_append(&b, head, strlen(head));
  for (int i = 0; i <= FP_SLURM_SQSH_WORDS_MAX; i++)
    fp_buf_append(&b, " w", 2);
  fp_buf_append(&b, " \"$@\"\n", 6);
  CHECK(strstr(rc_refusal(b.data, b.len), "line 3: too many words"));
  fp_buf_free(&b);
}

TEST(environment_as_enroot_start_reads_it)
{
  static const char env[] = "# a comment\n"
                            "\n"
                            "   PATH=/usr/local/bin:/usr/bin\n"
                            "QUOTED=\"\"q\"\"\n"
                            "SINGLE='one'  \n"
                            "HALF=\"open\n"
                            "SPACED=a b \n"
                            "not a variable\n"
                            "1BAD=x\n"
                            "ENROOT_ROOTFS=/x\n"
                            "A=first\n"
                            "DISPLAY=${DISPLAY}\n"
                            "HOSTY=${HOME}/x\n"
                            "A=second\n"
                            "EMPTY=\n"
                            "LAST=no newline";
  struct fp_slurm_sqsh_config c = {0};
  fpull_err err = {0};
  CHECK_INT_EQ(fp_slurm_sqsh_env_parse(&c, env, sizeof env - 1, &err), 0);
  check_words(c.env, (const char *const[]){"PATH=/usr/local/bin:/usr/bin", "QUOTED=\"q\"",
                                           "SINGLE=one", "HALF=\"open", "SPACED=a b ", "A=second",
                                           "EMPTY=", "LAST=no newline", NULL});
  /* ${VAR} is the host's: not set. DISPLAY=${DISPLAY} keeps the job's DISPLAY, as not
   * setting it does; HOSTY would differ, and is named. */
  check_words(c.host_refs, (const char *const[]){"HOSTY", NULL});
  fp_slurm_sqsh_config_free(&c);
  static const char nul[] = "A=1\n\0B=2\n";
  CHECK_INT_EQ(fp_slurm_sqsh_env_parse(&c, nul, sizeof nul - 1, &err), FPULL_EUNSAFE);
  CHECK_NULL(c.env);
  CHECK_STR_EQ(err.msg, "not text (a NUL byte at offset 4)");
}

static void write_file(const char *dir, const char *rel, const char *text)
{
  cleanup_free char *p = fp_xasprintf("%s/%s", dir, rel);
  FILE *f = fopen(p, "w");
  CHECK(f != NULL);
  fputs(text, f);
  fclose(f);
}

/* A new image root named name, with an etc/ (caller frees). */
static char *make_root(const char *name)
{
  char *root = fp_xasprintf("%s/%s", th_tmpdir(), name);
  cleanup_free char *etc = fp_xasprintf("%s/etc", root);
  CHECK_INT_EQ(mkdir(root, 0755), 0);
  CHECK_INT_EQ(mkdir(etc, 0755), 0);
  return root;
}

TEST(read_resolves_inside_the_image)
{
  cleanup_free char *root = make_root("img");
  write_file(root, "etc/environment", "FROM=image\n");
  /* An absolute link is the image's /etc/real-rc, not the host's. */
  write_file(root, "etc/real-rc", FPULL_RC);
  cleanup_free char *rc = fp_xasprintf("%s/etc/rc", root);
  CHECK_INT_EQ(symlink("/etc/real-rc", rc), 0);
  int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
  struct fp_slurm_sqsh_config c;
  fpull_err env_err = {0}, rc_err = {0};
  fp_slurm_sqsh_config_read(&c, fd, &env_err, &rc_err);
  CHECK_INT_EQ(env_err.code, 0);
  CHECK_INT_EQ(rc_err.code, 0);
  check_words(c.env, (const char *const[]){"FROM=image", NULL});
  CHECK_STR_EQ(c.workdir, "/srv/my \"app\" $x `y`");
  fp_slurm_sqsh_config_free(&c);
  close(fd);
}

TEST(read_never_leaves_the_image)
{
  /* A valid rc outside the image, and links to it and to the host's /etc/shadow: none is
   * read; each is said. A FIFO would block a reader that opened it: it is refused. */
  cleanup_free char *root = make_root("img");
  write_file(th_tmpdir(), "outside-rc", FPULL_RC);
  cleanup_free char *rc = fp_xasprintf("%s/etc/rc", root);
  cleanup_free char *env = fp_xasprintf("%s/etc/environment", root);
  CHECK_INT_EQ(symlink("../../outside-rc", rc), 0);
  CHECK_INT_EQ(mkfifo(env, 0644), 0);
  int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
  struct fp_slurm_sqsh_config c;
  fpull_err env_err = {0}, rc_err = {0};
  fp_slurm_sqsh_config_read(&c, fd, &env_err, &rc_err);
  CHECK_STR_EQ(env_err.msg, "/etc/environment: not a regular file");
  CHECK_STR_EQ(rc_err.msg, "/etc/rc: a symbolic link to ../../outside-rc, which is nothing in "
                           "the image: No such file or directory");
  CHECK(!c.has_rc);
  CHECK_NULL(c.env);
  CHECK_NULL(c.workdir);
  fp_slurm_sqsh_config_free(&c);
  CHECK_INT_EQ(unlink(rc), 0);
  CHECK_INT_EQ(symlink("/etc/shadow", rc), 0);
  memset(&rc_err, 0, sizeof rc_err);
  fp_slurm_sqsh_config_read(&c, fd, &env_err, &rc_err);
  CHECK(strstr(rc_err.msg, "/etc/rc: a symbolic link to /etc/shadow, which is nothing in"));
  CHECK(!c.has_rc);
  fp_slurm_sqsh_config_free(&c);
  close(fd);
}

TEST(read_missing_files_are_no_error)
{
  cleanup_free char *root = make_root("bare");
  int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
  struct fp_slurm_sqsh_config c;
  fpull_err env_err = {0}, rc_err = {0};
  fp_slurm_sqsh_config_read(&c, fd, &env_err, &rc_err);
  CHECK_INT_EQ(env_err.code + rc_err.code, 0);
  CHECK(!c.has_rc);
  CHECK_NULL(c.env);
  fp_slurm_sqsh_config_free(&c);
  close(fd);
}

/* ---- /.fpull/platform.json: the entry a .sqsh was made from (lib/sinks/sqfs_platform.h) ---- */

#define D64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

TEST(platform_record_round_trips)
{
  char *feats[] = {"x86-64-v3", "avx2", NULL}, *osf[] = {"win32k", NULL};
  struct fpull_platform p = {.os = "linux",
                             .architecture = "amd64",
                             .variant = "v3",
                             .os_version = "10",
                             .os_features = osf,
                             .features = feats};
  cleanup_free char *json =
      fp_sqfs_platform_json("r.example/a/b:1", "sha256:" D64, "sha512:" D64 D64, &p);
  struct fp_sqfs_platform rec;
  fpull_err err = {0};
  CHECK_INT_EQ(fp_sqfs_platform_parse(&rec, json, strlen(json), &err), 0);
  CHECK_STR_EQ(rec.reference, "r.example/a/b:1");
  CHECK_STR_EQ(rec.index_digest, "sha256:" D64);
  CHECK_STR_EQ(rec.manifest_digest, "sha512:" D64 D64);
  CHECK_STR_EQ(rec.platform.os, "linux");
  CHECK_STR_EQ(rec.platform.architecture, "amd64");
  CHECK_STR_EQ(rec.platform.variant, "v3");
  CHECK_STR_EQ(rec.platform.os_version, "10");
  check_words(rec.platform.os_features, (const char *const[]){"win32k", NULL});
  check_words(rec.platform.features, (const char *const[]){"x86-64-v3", "avx2", NULL});
  fp_sqfs_platform_free(&rec);
  /* A single manifest: no index, no variant, no features. */
  struct fpull_platform bare = {.os = "linux", .architecture = "arm64"};
  cleanup_free char *one = fp_sqfs_platform_json(NULL, NULL, "sha256:" D64, &bare);
  CHECK_INT_EQ(fp_sqfs_platform_parse(&rec, one, strlen(one), &err), 0);
  CHECK_NULL(rec.index_digest);
  CHECK_NULL(rec.reference);
  CHECK_NULL(rec.platform.variant);
  CHECK_NULL(rec.platform.features);
  fp_sqfs_platform_free(&rec);
}

/* The message of text's refusal (static), checking that nothing is kept. */
static const char *platform_refusal(const char *text, size_t len)
{
  static fpull_err err;
  memset(&err, 0, sizeof err);
  struct fp_sqfs_platform rec;
  int rc = fp_sqfs_platform_parse(&rec, text, len, &err);
  CHECK_INT_EQ(rc, FPULL_EINTEGRITY);
  CHECK_NULL(rec.manifest_digest);
  CHECK_NULL(rec.platform.os);
  return err.msg;
}

#define GOOD_HEAD "{\"mediaType\":\"application/vnd.fpull.sqsh.platform.v1+json\","
#define GOOD_PLATFORM "\"platform\":{\"os\":\"linux\",\"architecture\":\"amd64\"}"

TEST(platform_record_refusals)
{
  const char *ok = GOOD_HEAD "\"manifest\":\"sha256:" D64 "\"," GOOD_PLATFORM "}";
  struct fp_sqfs_platform rec;
  fpull_err err = {0};
  CHECK_INT_EQ(fp_sqfs_platform_parse(&rec, ok, strlen(ok), &err), 0);
  fp_sqfs_platform_free(&rec);
  static const char *const bad[][2] = {
      {"not json", "JSON"},
      {"[]", "not a JSON object"},
      {"{\"mediaType\":\"application/vnd.fpull.sqsh.platform.v2+json\",\"manifest\":\"sha256:" D64
       "\"," GOOD_PLATFORM "}",
       "mediaType"},
      {GOOD_HEAD "\"manifest\":\"sha256:00\"," GOOD_PLATFORM "}", "\"manifest\" is not a digest"},
      {GOOD_HEAD "\"manifest\":\"sha256:" D64 "\",\"index\":7," GOOD_PLATFORM "}",
       "\"index\" is not a digest"},
      {GOOD_HEAD "\"manifest\":\"sha256:" D64 "\",\"platform\":{\"os\":\"linux\"}}",
       "no platform with os and architecture"},
      {GOOD_HEAD "\"manifest\":\"sha256:" D64 "\",\"platform\":{\"os\":\"linux\",\"architecture\":"
                 "\"amd64\",\"features\":[\"avx2\",3]}}",
       "wrong type"},
      {GOOD_HEAD "\"manifest\":\"sha256:" D64 "\",\"platform\":{\"os\":\"linux\",\"architecture\":"
                 "\"amd64\",\"variant\":[]}}",
       "wrong type"},
      /* Read by the registry's platform reader: a member named in another case too. */
      {GOOD_HEAD "\"manifest\":\"sha256:" D64 "\",\"platform\":{\"os\":\"linux\",\"architecture\":"
                 "\"amd64\",\"Features\":[\"avx2\"]}}",
       "wrong type"},
      {GOOD_HEAD "\"manifest\":\"sha256:" D64 "\",\"platform\":{\"os\":\"linux\",\"architecture\":"
                 "\"amd64\",\"os.version\":null}}",
       "wrong type"},
      /* The same key twice: the strict reader refuses what another reader would take. */
      {GOOD_HEAD "\"manifest\":\"sha256:" D64 "\",\"manifest\":\"sha256:" D64 "\"," GOOD_PLATFORM
                 "}",
       "manifest"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECK_CONTAINS(platform_refusal(bad[i][0], strlen(bad[i][0])), bad[i][1]);
  /* Bounded: a list over the most features, and a file over 64 KiB. */
  struct fp_buf b = {0};
  const char *head = GOOD_HEAD "\"manifest\":\"sha256:" D64 "\",\"platform\":{\"os\":\"linux\","
                               "\"architecture\":\"amd64\",\"features\":[\"a\"";
  fp_buf_append(&b, head, strlen(head));
  for (int i = 0; i < FP_SQFS_PLATFORM_FEATURES_MAX; i++)
    fp_buf_append(&b, ",\"a\"", 4);
  fp_buf_append(&b, "]}}", 3);
  CHECK_CONTAINS(platform_refusal(b.data, b.len), "too long");
  fp_buf_free(&b);
  char *big = fp_xcalloc(FP_SQFS_PLATFORM_MAX + 2, 1);
  memset(big, ' ', FP_SQFS_PLATFORM_MAX + 1);
  CHECK_CONTAINS(platform_refusal(big, FP_SQFS_PLATFORM_MAX + 1), "larger than 64 KiB");
  free(big);
}

TEST(platform_record_read_inside_the_image)
{
  cleanup_free char *root = make_root("rec");
  int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
  struct fp_sqfs_platform rec;
  fpull_err err = {0};
  /* None: an enroot-made file. */
  CHECK_INT_EQ(fp_slurm_sqsh_platform_read(&rec, fd, &err), 0);
  cleanup_free char *dir = fp_xasprintf("%s/.fpull", root);
  CHECK_INT_EQ(mkdir(dir, 0755), 0);
  write_file(root, ".fpull/platform.json",
             GOOD_HEAD "\"manifest\":\"sha256:" D64 "\"," GOOD_PLATFORM "}\n");
  CHECK_INT_EQ(fp_slurm_sqsh_platform_read(&rec, fd, &err), 1);
  CHECK_STR_EQ(rec.platform.architecture, "amd64");
  fp_sqfs_platform_free(&rec);
  /* Not the record: said, naming the file. */
  write_file(root, ".fpull/platform.json", "{\"mediaType\":1}");
  CHECK_INT_EQ(fp_slurm_sqsh_platform_read(&rec, fd, &err), -1);
  CHECK_CONTAINS(err.msg, "/.fpull/platform.json: mediaType is not");
  /* A link out of the image is nothing in it. */
  write_file(th_tmpdir(), "outside.json",
             GOOD_HEAD "\"manifest\":\"sha256:" D64 "\"," GOOD_PLATFORM "}\n");
  cleanup_free char *p = fp_xasprintf("%s/.fpull/platform.json", root);
  CHECK_INT_EQ(unlink(p), 0);
  CHECK_INT_EQ(symlink("../../outside.json", p), 0);
  memset(&err, 0, sizeof err);
  CHECK_INT_EQ(fp_slurm_sqsh_platform_read(&rec, fd, &err), -1);
  CHECK_CONTAINS(err.msg, "/.fpull/platform.json: a symbolic link to ../../outside.json");
  close(fd);
}
