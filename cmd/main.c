/* fpull: the subcommand table. Each command lives in cmd/cmd_NAME.c. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "fpull/features.h"

static const struct cli_cmd *const commands[] = {
    &cmd_pull,   &cmd_prefetch, &cmd_inspect, &cmd_features, &cmd_manifest, &cmd_login,
    &cmd_logout, &cmd_version,  &cmd_config,  &cmd_cache,    &cmd_digest,   &cmd_tags,
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static const struct cli_cmd *find(const char *name)
{
  for (size_t i = 0; i < N_COMMANDS; i++)
    if (strcmp(commands[i]->name, name) == 0)
      return commands[i];
  return NULL;
}

static void usage(FILE *out)
{
  fprintf(out, "Usage: fpull [COMMAND] [OPTIONS] ...\n"
               "       fpull IMAGE [DEST]          (the same as fpull pull IMAGE [DEST])\n\n"
               "Feature-aware pull of OCI and Docker images into a rootfs directory, an OCI\n"
               "runtime bundle or a SquashFS image (pull --format dir|bundle|squashfs).\n\n"
               "Commands:\n");
  for (size_t i = 0; i < N_COMMANDS; i++)
    fprintf(out, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
  fprintf(out, "\nRun 'fpull help COMMAND' for a command's options; see fpull(1).\n");
}

/* A first word that is no command but within two edits of one, and that has nothing of an
 * image reference about it (no / : @ .), is a mistyped command: pulling an image called
 * "inpsect" from Docker Hub is never what was meant (contract v3). */
static int mistyped_command(const char *word)
{
  if (word[0] == '-' || strpbrk(word, "/:@."))
    return 0;
  const char *names[N_COMMANDS + 2];
  for (size_t i = 0; i < N_COMMANDS; i++)
    names[i] = commands[i]->name;
  names[N_COMMANDS] = "help";
  names[N_COMMANDS + 1] = NULL;
  const char *near = fpull_suggest(word, names);
  if (!near)
    return 0;
  fprintf(stderr,
          "fpull: unknown command '%s' (did you mean '%s'?); to pull an image of that name, "
          "use 'fpull pull %s'\n",
          word, near, word);
  return 1;
}

/* Other tools' command words (docker, podman, crane) are refused as commands, with what
 * fpull offers instead: "fpull images" pulling docker.io/library/images:latest is never what
 * was meant (contract v4). A full reference (with / : @ .) stays a pull. */
static const struct {
  const char *word, *instead;
} foreign_words[] = {
    {"images", "'fpull cache ls' lists the cached images"},
    {"ls", "'fpull tags REPOSITORY' lists a repository's tags, 'fpull cache ls' the cached "
           "images"},
    {"list-tags", "'fpull tags REPOSITORY' lists a repository's tags"},
    {"catalog", "'fpull tags REPOSITORY' lists one repository's tags; fpull lists no "
                "registry's repositories"},
    {"export", "'fpull pull IMAGE DIR' unpacks the rootfs, 'fpull pull IMAGE "
               "oci-archive:FILE' writes the image"},
    {"save", "'fpull pull IMAGE docker-archive:FILE' writes a tar docker load reads"},
    {"copy", "'fpull pull IMAGE oci:DIR' (or oci-archive:, docker-archive:) writes the image"},
    {"cp", "'fpull pull IMAGE oci:DIR' (or oci-archive:, docker-archive:) writes the image"},
    {"load", "fpull writes images, it loads none: 'fpull pull IMAGE docker-archive:FILE' "
             "makes a tar for docker load"},
    {"blob", "'fpull prefetch IMAGE' puts an image's blobs into the cache"},
    {"delete", "fpull deletes nothing in registries; 'fpull cache rm IMAGE' removes an image "
               "from the cache"},
    {"list", "'fpull cache ls' lists the cached images"},
    {"rm", "'fpull cache rm IMAGE' removes an image from the cache"},
    {"rmi", "'fpull cache rm IMAGE' removes an image from the cache"},
    {"run", "fpull runs no containers: 'fpull pull --format bundle IMAGE DIR' makes a bundle "
            "for crun or runc"},
    {"exec", "fpull runs no containers: 'fpull pull --format bundle IMAGE DIR' makes a bundle "
             "for crun or runc"},
    {"ps", "fpull runs no containers; 'fpull cache ls' lists the cached images"},
    {"search", "'fpull inspect IMAGE' shows an image's entries"},
    {"info", "'fpull features' shows this node's platform, 'fpull version' the versions"},
    {"tag", "'fpull manifest push SPEC.yaml' publishes an index under a tag"},
    {"push", "'fpull manifest push SPEC.yaml' pushes an index"},
    {"build", "fpull builds no images; 'fpull manifest push SPEC.yaml' publishes an index of "
              "images built elsewhere"},
};

static int foreign_command(const char *word)
{
  for (size_t i = 0; i < sizeof foreign_words / sizeof foreign_words[0]; i++)
    if (strcmp(word, foreign_words[i].word) == 0) {
      fprintf(stderr,
              "fpull: unknown command '%s' (%s); to pull an image of that name, use 'fpull "
              "pull %s'\n",
              word, foreign_words[i].instead, word);
      return 1;
    }
  return 0;
}

/* regctl's and crane's two-word commands ("regctl image digest X"): the first word alone
 * stays an image name ("fpull image" pulls docker.io/library/image), but followed by one of
 * these words it is a command of another tool, refused with fpull's own (issue 43.3). */
#define TAGS_LS                                                                                    \
  "'fpull tags REPOSITORY' lists a repository's tags, 'fpull cache ls' the cached images"
#define WRITE_IMAGE "'fpull pull IMAGE oci:DIR' (or oci-archive:, docker-archive:) writes the image"
static const struct {
  const char *first, *second, *instead;
} foreign_pairs[] = {
    {"image", "digest", "'fpull digest IMAGE' prints the digest"},
    {"image", "ls", TAGS_LS},
    {"image", "list", TAGS_LS},
    {"image", "inspect",
     "'fpull inspect IMAGE' shows an image's entries, 'fpull manifest "
     "inspect IMAGE' its raw manifest"},
    {"image", "config", "'fpull config IMAGE' prints the image configuration"},
    {"image", "manifest", "'fpull manifest inspect IMAGE' prints the raw manifest"},
    {"image", "copy", WRITE_IMAGE},
    {"image", "cp", WRITE_IMAGE},
    {"image", "export",
     "'fpull pull IMAGE DIR' unpacks the rootfs, 'fpull pull IMAGE "
     "oci-archive:FILE' writes the image"},
    {"image", "pull", "'fpull pull IMAGE [DEST]' pulls it"},
    {"image", "check", "'fpull inspect IMAGE' shows whether an entry fits"},
    {"image", "delete",
     "fpull deletes nothing in registries; 'fpull cache rm IMAGE' removes an "
     "image from the cache"},
    {"image", "rm", "'fpull cache rm IMAGE' removes an image from the cache"},
    {"image", "prune", "'fpull cache prune' removes what is least recently used"},
    {"repo", "ls",
     "'fpull tags REPOSITORY' lists one repository's tags; fpull lists no "
     "registry's repositories"},
    {"repo", "list",
     "'fpull tags REPOSITORY' lists one repository's tags; fpull lists no "
     "registry's repositories"},
    {"registry", "login", "'fpull login REGISTRY' stores credentials"},
    {"registry", "logout", "'fpull logout REGISTRY' removes them"},
    {"artifact", "get", "fpull pulls container images only"},
    {"artifact", "list", "fpull pulls container images only"},
};

static int foreign_pair(int argc, char **argv)
{
  if (argc < 3)
    return 0;
  for (size_t i = 0; i < sizeof foreign_pairs / sizeof foreign_pairs[0]; i++)
    if (strcmp(argv[1], foreign_pairs[i].first) == 0 &&
        strcmp(argv[2], foreign_pairs[i].second) == 0) {
      fprintf(stderr,
              "fpull: unknown command '%s %s' (%s); to pull an image of that name, use 'fpull "
              "pull %s'\n",
              argv[1], argv[2], foreign_pairs[i].instead, argv[1]);
      return 1;
    }
  return 0;
}

int main(int argc, char **argv)
{
  if (argc < 2) {
    usage(stderr);
    return FPULL_EUSAGE;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(argv[1], "help") == 0) {
    if (argc == 2) {
      usage(stdout);
      return 0;
    }
    /* "help CMD" is "CMD --help". */
    const struct cli_cmd *h = find(argv[2]);
    if (!h) {
      const char *names[N_COMMANDS + 1];
      for (size_t i = 0; i < N_COMMANDS; i++)
        names[i] = commands[i]->name;
      names[N_COMMANDS] = NULL;
      const char *near = fpull_suggest(argv[2], names);
      fprintf(stderr, "fpull: help: unknown command '%s'%s%s%s\n", argv[2],
              near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
      return FPULL_EUSAGE;
    }
    char *hargv[] = {argv[2], "--help", NULL};
    struct cli_settings hs = {0};
    int first = 0;
    int rc = cli_parse(h, 2, hargv, &hs, &first);
    return rc < 0 ? 0 : rc;
  }
  if (strcmp(argv[1], "--version") == 0)
    argv[1] = "version";
  const struct cli_cmd *cmd = find(argv[1]);
  int shift = 1;
  if (!cmd && (foreign_pair(argc, argv) || foreign_command(argv[1]) || mistyped_command(argv[1])))
    return FPULL_EUSAGE;
  if (!cmd) {
    /* "fpull IMAGE [DEST]" and "fpull --json IMAGE" are pull. */
    cmd = &cmd_pull;
    shift = 0;
  }
  struct cli_settings s = {0};
  int first = 0;
  int rc = cli_parse(cmd, argc - shift, argv + shift, &s, &first);
  if (rc < 0)
    return 0;
  if (rc)
    return rc;
  cli_install_log(&s);
  return cmd->run(&s, argc - shift - first, argv + shift + first);
}
