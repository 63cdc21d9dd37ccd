/* fpull login and fpull logout: docker's config.json, so docker, skopeo and fpull share
 * credentials. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* One line from stdin, without its newline; the password never goes through argv. */
static char *read_password(void)
{
  char *line = NULL;
  size_t cap = 0;
  ssize_t n = getline(&line, &cap, stdin);
  if (n < 0) {
    free(line);
    return NULL;
  }
  while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
    line[--n] = '\0';
  return line;
}

static int run_login(struct cli_settings *s, int argc, char **argv)
{
  fpull_err err = {0};
  if (!s->username || !s->password_stdin) {
    fpull_err_set(&err, FPULL_EUSAGE, "login: give -u USER and --password-stdin");
    return cli_fail(&err);
  }
  struct fpull_ref *ref = NULL;
  /* A registry alone is not a reference; parse REGISTRY/x to check and normalise it. */
  char *probe = malloc(strlen(argv[0]) + 3);
  strcpy(probe, argv[0]);
  strcat(probe, "/x");
  int rc = fpull_ref_parse(&ref, probe, &err);
  free(probe);
  if (rc == 0 && strcmp(ref->registry, "docker.io") != 0 && !strchr(argv[0], '.') &&
      !strchr(argv[0], ':') && strcmp(argv[0], "localhost") != 0)
    rc = fpull_err_set(&err, FPULL_EUSAGE, "login: \"%s\" is not a registry host", argv[0]);
  char *password = rc == 0 ? read_password() : NULL;
  if (rc == 0 && (!password || !*password))
    rc = fpull_err_set(&err, FPULL_EUSAGE, "login: no password on standard input");
  if (rc == 0)
    rc = fpull_login_save(ref->registry, s->username, password, &err);
  if (password) {
    explicit_bzero(password, strlen(password));
    free(password);
  }
  if (rc == 0 && !s->quiet) {
    char *path = fpull_login_config_path();
    fprintf(stderr, "Login for %s saved in %s\n", ref->registry, path);
    free(path);
  }
  fpull_ref_free(ref);
  return rc ? cli_fail(&err) : 0;
}

static int run_logout(struct cli_settings *s, int argc, char **argv)
{
  fpull_err err = {0};
  int removed = 0;
  int rc = fpull_logout(argv[0], &removed, &err);
  if (rc)
    return cli_fail(&err);
  if (!s->quiet)
    fprintf(stderr, removed ? "Removed login for %s\n" : "Not logged in to %s\n", argv[0]);
  return 0;
}

static const enum cli_opt_id login_opts[] = {OPT_HELP, OPT_USERNAME, OPT_PASSWORD_STDIN, OPT_QUIET,
                                             0};
static const enum cli_opt_id logout_opts[] = {OPT_HELP, OPT_QUIET, 0};

const struct cli_cmd cmd_login = {
    .name = "login",
    .args = "-u USER --password-stdin REGISTRY",
    .summary = "store credentials for REGISTRY in docker's config.json",
    .opts = login_opts,
    .min_args = 1,
    .max_args = 1,
    .run = run_login,
};

const struct cli_cmd cmd_logout = {
    .name = "logout",
    .args = "REGISTRY",
    .summary = "remove the stored credentials for REGISTRY",
    .opts = logout_opts,
    .min_args = 1,
    .max_args = 1,
    .run = run_logout,
};
