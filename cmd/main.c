/* fpull: the subcommand table. Each command lives in cmd/cmd_NAME.c. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct cli_cmd *const commands[] = {
    &cmd_pull,  &cmd_prefetch, &cmd_inspect, &cmd_features, &cmd_manifest,
    &cmd_login, &cmd_logout,   &cmd_version, &cmd_config,
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
               "Feature-aware pull of OCI and Docker images into a rootfs directory.\n\n"
               "Commands:\n");
  for (size_t i = 0; i < N_COMMANDS; i++)
    fprintf(out, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
  fprintf(out, "\nRun 'fpull COMMAND --help' for a command's options; see fpull(1).\n");
}

int main(int argc, char **argv)
{
  if (argc < 2) {
    usage(stderr);
    return FPULL_EUSAGE;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(argv[1], "--version") == 0)
    argv[1] = "version";
  const struct cli_cmd *cmd = find(argv[1]);
  int shift = 1;
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
