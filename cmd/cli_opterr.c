/* What a refused option says (issue 43.2, 43.3): a flag given a value, a typo, another
 * tool's option name. Each says what fpull takes instead, as the command words do. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cli.h"

/* Other tools' options (skopeo, crane, regctl, podman, docker) and fpull's way of saying
 * them. `--tls-verify=false` is taken as --insecure (cli_bad_option). */
static const struct {
  const char *name; /* without dashes; one letter for a short option */
  const char *instead;
} foreign_opts[] = {
    {"format", "--json prints the result as JSON"},
    {"tls-verify", "fpull verifies TLS by default, loopback addresses aside; --insecure (or "
                   "--tls-verify=false) turns it off"},
    {"src-tls-verify", "--insecure (or --tls-verify=false) turns TLS verification off"},
    {"authfile", "fpull reads $REGISTRY_AUTH_FILE, then the files fpull login and docker "
                 "login write: REGISTRY_AUTH_FILE=FILE fpull ..."},
    {"src-creds", "--creds USER:PASSWORD"},
    {"creds", "'fpull login REGISTRY' stores credentials for every command"},
    {"src-cert-dir", "--cert-dir DIR"},
    {"raw", "'fpull manifest inspect IMAGE' prints the raw manifest"},
    {"override-arch", "--platform [OS/]ARCH"},
    {"override-os", "--platform OS/ARCH"},
    {"override-variant", "--platform OS/ARCH/VARIANT"},
    {"arch", "--platform [OS/]ARCH"},
    {"os", "--platform OS/ARCH"},
    {"all-tags", "fpull pulls one tag; 'fpull tags REPOSITORY' lists them, 'fpull prefetch "
                 "--all IMAGE' caches every entry of an index"},
    {"a", "fpull pulls one tag; 'fpull tags REPOSITORY' lists them, 'fpull prefetch --all "
          "IMAGE' caches every entry of an index"},
    {"all", "'fpull prefetch --all IMAGE' caches every entry of an index"},
    {"version", "'fpull version' or 'fpull --version' prints the version"},
    {"V", "'fpull version' or 'fpull --version' prints the version"},
    {"digestfile", "'fpull digest IMAGE' prints the digest"},
};

/* fpull's own options that a command has not, and why, where that is not obvious. */
static const struct {
  const char *cmd, *name, *why;
} not_here[] = {
    {"tags", "offline", "the tag list is the registry's: the cache cannot give it"},
};

static const char *foreign_hint(const char *name)
{
  for (size_t i = 0; i < sizeof foreign_opts / sizeof foreign_opts[0]; i++)
    if (strcmp(name, foreign_opts[i].name) == 0)
      return foreign_opts[i].instead;
  return NULL;
}

static int has_opt(const struct cli_cmd *cmd, enum cli_opt_id want)
{
  for (const enum cli_opt_id *id = cmd->opts; *id; id++)
    if (*id == want)
      return 1;
  return 0;
}

/* Go's strconv.ParseBool, which skopeo's and crane's flags use, plus yes/no. */
static int parse_bool(const char *v)
{
  static const char *const yes[] = {"1", "t", "true", "yes", "on", NULL};
  static const char *const no[] = {"0", "f", "false", "no", "off", NULL};
  for (size_t i = 0; yes[i]; i++) {
    if (strcasecmp(v, yes[i]) == 0)
      return 1;
    if (strcasecmp(v, no[i]) == 0)
      return 0;
  }
  return -1;
}

/* "fpull: CMD: " for a command given, "fpull: " for the implied pull (fpull -V blames no
 * command the user did not type). */
static void say(const struct cli_cmd *cmd, int implied, const char *what, const char *hint)
{
  if (implied)
    fprintf(stderr, "fpull: %s%s%s%s (see 'fpull --help')\n", what, hint ? " (" : "",
            hint ? hint : "", hint ? ")" : "");
  else
    fprintf(stderr, "fpull: %s: %s%s%s%s (see 'fpull %s --help')\n", cmd->name, what,
            hint ? " (" : "", hint ? hint : "", hint ? ")" : "", cmd->name);
}

int cli_bad_option(const struct cli_cmd *cmd, int implied, const char *arg, int optopt_val,
                   struct cli_settings *s)
{
  char what[160];
  /* A known flag given a value: getopt_long names it by its id. */
  if (optopt_val >= OPT_HELP) {
    const struct cli_opt *o = cli_opt_find((enum cli_opt_id)optopt_val);
    const char *eq = arg ? strchr(arg, '=') : NULL;
    int b = eq ? parse_bool(eq + 1) : -1;
    if (b >= 0)
      return b ? optopt_val : 0;
    char hint[96];
    snprintf(what, sizeof what, "option --%s takes no value", o->long_name);
    if (o->id == OPT_VERBOSE)
      snprintf(hint, sizeof hint, "-vv for more");
    else
      snprintf(hint, sizeof hint, "--%s alone, or --%s=true|false", o->long_name, o->long_name);
    say(cmd, implied, what, hint);
    return -1;
  }
  /* An unknown short option. */
  if (optopt_val > 0 && optopt_val < 256) {
    char name[2] = {(char)optopt_val, 0};
    snprintf(what, sizeof what, "unknown option -%s", name);
    say(cmd, implied, what, foreign_hint(name));
    return -1;
  }
  /* An unknown long option: "--NAME[=VALUE]". */
  const char *p = arg ? arg : "";
  while (*p == '-')
    p++;
  char name[64];
  snprintf(name, sizeof name, "%.*s", (int)strcspn(p, "="), p);
  const char *value = strchr(p, '=') ? strchr(p, '=') + 1 : NULL;
  if ((strcmp(name, "tls-verify") == 0 || strcmp(name, "src-tls-verify") == 0) && value &&
      parse_bool(value) == 0 && has_opt(cmd, OPT_INSECURE)) {
    s->insecure = 1; /* skopeo's spelling of --insecure */
    return 0;
  }
  snprintf(what, sizeof what, "unknown option %.*s", (int)(strcspn(arg ? arg : "", "=")),
           arg ? arg : "");
  const char *hint = foreign_hint(name);
  if (hint) {
    say(cmd, implied, what, hint);
    return -1;
  }
  /* An option of other fpull commands: say so, and why where it is not obvious. */
  if (cli_opt_by_name(name)) {
    for (size_t i = 0; i < sizeof not_here / sizeof not_here[0]; i++)
      if (strcmp(cmd->name, not_here[i].cmd) == 0 && strcmp(name, not_here[i].name) == 0)
        hint = not_here[i].why;
    snprintf(what, sizeof what, "option --%s is not one of %s's", name, cmd->name);
    say(cmd, implied, what, hint);
    return -1;
  }
  /* A typo of one of this command's options. */
  const char *names[40];
  size_t n = 0;
  for (const enum cli_opt_id *id = cmd->opts; *id && n < 39; id++)
    names[n++] = cli_opt_find(*id)->long_name;
  names[n] = NULL;
  const char *near = fpull_suggest(name, names);
  char did[96];
  if (near)
    snprintf(did, sizeof did, "did you mean --%s?", near);
  say(cmd, implied, what, near ? did : NULL);
  return -1;
}
