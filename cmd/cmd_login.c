/* fpull login and fpull logout: docker's config.json, so docker, skopeo and fpull share
 * credentials. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "cli.h"

/* One line from stdin, without its newline; the password never goes through argv. */
static char *read_line(void)
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

/* The terminal as it was before echo was turned off, put back by a signal that ends the
 * prompt too: an interrupted login must not leave the shell without echo. */
static struct termios saved_tty;
static volatile sig_atomic_t tty_changed;

static void restore_tty_and_die(int sig)
{
  if (tty_changed)
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tty);
  signal(sig, SIG_DFL);
  raise(sig);
}

/* docker login's prompt: on the terminal, the password typed without echo. */
static char *prompt_password(void)
{
  /* Not SIGTSTP: a stopped job gets its terminal modes back from the shell, and echo must
   * stay off when it goes on reading. */
  static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
  struct sigaction sa = {.sa_handler = restore_tty_and_die}, old[4];
  sigemptyset(&sa.sa_mask);
  int hooked = tcgetattr(STDIN_FILENO, &saved_tty) == 0;
  if (hooked) {
    for (size_t i = 0; i < 4; i++)
      sigaction(sigs[i], &sa, &old[i]);
    struct termios quiet = saved_tty;
    quiet.c_lflag &= ~(tcflag_t)ECHO;
    quiet.c_lflag |= ECHONL;
    tty_changed = tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet) == 0;
  }
  /* Asked only once echo is off, so nothing typed after the prompt is shown. */
  fputs("Password: ", stderr);
  fflush(stderr);
  char *line = read_line();
  if (tty_changed)
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tty);
  tty_changed = 0;
  for (size_t i = 0; hooked && i < 4; i++)
    sigaction(sigs[i], &old[i], NULL);
  return line;
}

static char *prompt_username(void)
{
  fputs("Username: ", stderr);
  fflush(stderr);
  return read_line();
}

static void wipe(char *p)
{
  if (p) {
    explicit_bzero(p, strlen(p));
    free(p);
  }
}

/* REGISTRY alone is not a reference: REGISTRY/x is parsed to check and normalise it. */
static int parse_registry(struct fpull_ref **ref, const char *registry, fpull_err *err)
{
  char *probe = malloc(strlen(registry) + 3);
  strcpy(probe, registry);
  strcat(probe, "/x");
  int rc = fpull_ref_parse(ref, probe, err);
  free(probe);
  if (rc == 0 && strcmp((*ref)->registry, "docker.io") != 0 && !strchr(registry, '.') &&
      !strchr(registry, ':') && strcmp(registry, "localhost") != 0)
    rc = fpull_err_set(err, FPULL_EUSAGE, "login: \"%s\" is not a registry host", registry);
  return rc;
}

/* The user name and password: -u or a prompt, then -p, --password-stdin or a prompt
 * without echo, the prompts only on a terminal. */
static int credentials(const struct cli_settings *s, char **user, char **password, fpull_err *err)
{
  int tty = isatty(STDIN_FILENO);
  if (s->password && s->password_stdin)
    return fpull_err_set(err, FPULL_EUSAGE, "login: give -p or --password-stdin, not both");
  if (s->username)
    *user = strdup(s->username);
  else if (tty && !s->password_stdin && !s->password)
    *user = prompt_username();
  else
    return fpull_err_set(err, FPULL_EUSAGE, "login: give -u USER");
  if (!*user || !**user)
    return fpull_err_set(err, FPULL_EUSAGE, "login: no user name given");
  if (s->password) {
    fprintf(stderr, "fpull: warning: a password on the command line can be seen by other "
                    "users; use --password-stdin\n");
    *password = strdup(s->password);
  } else if (s->password_stdin) {
    *password = read_line();
  } else if (tty) {
    *password = prompt_password();
  } else {
    return fpull_err_set(err, FPULL_EUSAGE,
                         "login: give --password-stdin or -p (standard input is not a terminal "
                         "to ask on)");
  }
  if (!*password || !**password)
    return fpull_err_set(err, FPULL_EUSAGE, "login: no password given%s",
                         s->password_stdin ? " on standard input" : "");
  return 0;
}

static int run_login(struct cli_settings *s, int argc, char **argv)
{
  fpull_err err = {0};
  struct fpull_ref *ref = NULL;
  struct cli_env env = {0};
  char *user = NULL, *password = NULL;
  int rc = parse_registry(&ref, argv[0], &err);
  if (rc == 0)
    rc = cli_env_load(&env, s, 0, &err);
  if (rc == 0)
    rc = credentials(s, &user, &password, &err);
  /* Verified before stored, as docker login does: a refused login stores nothing. */
  if (rc == 0) {
    struct fpull_registry_opts ro;
    fpull_registry_opts_init(&ro, ref->registry, env.config, s->insecure, s->certs_dir);
    ro.cert_dir = s->cert_dir;
    rc = fpull_login_check(ref->registry, user, password, &ro, &err);
  }
  if (rc == 0)
    rc = fpull_login_save(ref->registry, user, password, &err);
  wipe(password);
  wipe(user);
  if (rc == 0 && !s->quiet) {
    char *path = fpull_login_config_path();
    fprintf(stderr, "Login Succeeded: %s, saved in %s\n", ref->registry, path);
    free(path);
  }
  cli_env_free(&env);
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

static const enum cli_opt_id login_opts[] = {
    OPT_HELP,     OPT_USERNAME,  OPT_PASSWORD, OPT_PASSWORD_STDIN, OPT_CONFIG,
    OPT_INSECURE, OPT_CERTS_DIR, OPT_CERT_DIR, OPT_QUIET,          0};
static const enum cli_opt_id logout_opts[] = {OPT_HELP, OPT_QUIET, 0};

const struct cli_cmd cmd_login = {
    .name = "login",
    .args = "[-u USER] [-p PASSWORD | --password-stdin] REGISTRY",
    .summary = "check credentials with REGISTRY and store them in docker's config.json",
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
