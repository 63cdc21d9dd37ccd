/* The --sqfs-* options of pull --format squashfs (cli.c parses --format): parsed and checked here,
 * before any network work, so that a typo is exit 2 and never a pull with other settings. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static int bad(const struct cli_cmd *cmd, const char *msg, const char *what)
{
  fprintf(stderr, "fpull: %s: %s %s (see 'fpull %s --help')\n", cmd->name, msg, what, cmd->name);
  return FPULL_EUSAGE;
}

/* A size in bytes with an optional K or M suffix (powers of 1024). */
static int parse_size(const char *arg, unsigned *out)
{
  char *end;
  unsigned long n = strtoul(arg, &end, 10);
  if (end == arg || arg[0] == '-')
    return -1;
  if (*end == 'K' || *end == 'k')
    n <<= 10, end++;
  else if (*end == 'M' || *end == 'm')
    n <<= 20, end++;
  if (*end || n > UINT_MAX)
    return -1;
  *out = (unsigned)n;
  return 0;
}

int cli_sqfs_parse(const struct cli_cmd *cmd, enum cli_opt_id id, const char *arg,
                   struct cli_settings *s)
{
  char *end;
  long n;
  switch (id) {
  case OPT_SQFS_COMP:
    s->sqfs.compressor = arg;
    break;
  case OPT_SQFS_BLOCK_SIZE:
    if (parse_size(arg, &s->sqfs.block_size) < 0 || s->sqfs.block_size == 0)
      return bad(cmd, "--sqfs-block-size takes a size such as 128K or 1M, not", arg);
    break;
  case OPT_SQFS_LEVEL:
    n = strtol(arg, &end, 10);
    if (end == arg || *end || n < 1 || n > 22)
      return bad(cmd, "--sqfs-level takes a number from 1 to 22, not", arg);
    s->sqfs.level = (int)n;
    break;
  case OPT_SQFS_THREADS:
    n = strtol(arg, &end, 10);
    if (end == arg || *end || n < 1 || n > 4096)
      return bad(cmd, "--sqfs-threads takes a number from 1 to 4096, not", arg);
    s->sqfs.threads = (unsigned)n;
    break;
  case OPT_KEEP_PRIV:
    /* Refused as non-root before any work: the image could not hold what it asks for. */
    if (geteuid() != 0)
      return bad(cmd, "--keep-privileged needs root (an image of a non-root pull holds no",
                 "setuid bits, capabilities or devices)");
    s->keep_privileged = 1;
    break;
  default:
    return 0;
  }
  s->sqfs_given = 1;
  return 0;
}

int cli_sqfs_check(const struct cli_cmd *cmd, const struct cli_settings *s)
{
  int squashfs = s->format == CLI_FORMAT_SQUASHFS;
  if (s->sqfs_given && !squashfs)
    return bad(cmd, "the --sqfs-* options and --keep-privileged need", "--format squashfs");
  if (!squashfs)
    return 0;
  fpull_err err = {0};
  if (fpull_sqfs_opts_check(&s->sqfs, &err)) {
    fprintf(stderr, "fpull: %s: %s (see 'fpull %s --help')\n", cmd->name, err.msg, cmd->name);
    return FPULL_EUSAGE;
  }
  return 0;
}

void cli_sqfs_pull_opts(struct fpull_pull_opts *o, const struct cli_settings *s)
{
  if (s->format != CLI_FORMAT_SQUASHFS)
    return;
  o->unpack.format = FPULL_FORMAT_SQUASHFS;
  o->unpack.sqfs = s->sqfs;
  o->unpack.keep_privileged = s->keep_privileged;
}
