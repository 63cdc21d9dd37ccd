#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli.h"

static const struct cli_opt all_opts[] = {
    {OPT_HELP, "help", 'h', NULL, "show this help and exit"},
    {OPT_OUTPUT, "output", 'o', "DEST",
     "what pull writes: the rootfs, the bundle or the SquashFS file (default ./NAME)"},
    {OPT_FORCE, "force", 0, NULL, "replace DEST once the new rootfs is complete"},
    {OPT_FEATURES, "features", 0, "LIST", "comma-separated features replacing the detected ones"},
    {OPT_PLATFORM, "platform", 0, "[OS/]ARCH[/VARIANT][:FEATURE...]",
     "the target platform (ARCH alone: linux/ARCH)"},
    {OPT_CACHE_DIR, "cache-dir", 0, "DIR", "blob cache directory"},
    {OPT_CERTS_DIR, "certs-dir", 0, "DIR", "certs.d-style directory searched first"},
    {OPT_CERT_DIR, "cert-dir", 0, "DIR",
     "the registry's own *.crt, client.cert and client.key (skopeo's --cert-dir)"},
    {OPT_CONFIG, "config", 0, "FILE",
     "config file (default $FPULL_CONFIG, else ~/.config/fpull/config.yaml, else "
     "/etc/fpull/config.yaml)"},
    {OPT_INSECURE, "insecure", 0, NULL, "allow plain HTTP and unverified TLS for the registry"},
    {OPT_OFFLINE, "offline", 0, NULL, "use only the blob cache; never touch the network"},
    {OPT_JSON, "json", 0, NULL, "print one JSON document on stdout"},
    {OPT_QUIET, "quiet", 'q', NULL, "print only errors"},
    {OPT_VERBOSE, "verbose", 'v', NULL, "print more on stderr"},
    {OPT_JOBS, "jobs", 'j', "N", "parallel blob downloads (default 4)"},
    {OPT_TYPE, "type", 0, "oci|docker", "index type to push (default oci)"},
    {OPT_USERNAME, "username", 'u', "USER", "user name"},
    {OPT_PASSWORD_STDIN, "password-stdin", 0, NULL, "read the password from standard input"},
    {OPT_PASSWORD, "password", 'p', "PASSWORD",
     "the password (seen by other users of the machine: prefer --password-stdin)"},
    {OPT_LIST_KNOWN, "list-known", 0, NULL, "list every feature name fpull accepts, and exit"},
    {OPT_ALL, "all", 0, NULL, "every image entry of the index, for nodes of every kind"},
    {OPT_FORMAT, "format", 0, "dir|bundle|squashfs",
     "what DEST becomes: a rootfs, an OCI bundle, a SquashFS file"},
    {OPT_SQFS_COMP, "sqfs-comp", 0, "zstd|gzip|xz|lz4|none", "SquashFS compressor (default zstd)"},
    {OPT_SQFS_BLOCK_SIZE, "sqfs-block-size", 0, "SIZE",
     "SquashFS block size, 4K to 1M (default 1M)"},
    {OPT_SQFS_LEVEL, "sqfs-level", 0, "N", "SquashFS compression level (default: zstd 1)"},
    {OPT_SQFS_THREADS, "sqfs-threads", 0, "N",
     "SquashFS compression threads (default and at most: the CPUs fpull may use)"},
    {OPT_KEEP_PRIV, "keep-privileged", 0, NULL,
     "as root: keep setuid/setgid bits, file capabilities and devices in the SquashFS image"},
    {OPT_OLDER_THAN, "older-than", 0, "DURATION",
     "prune: remove images last used longer ago (7d, 12h, 30m)"},
    {OPT_MAX_SIZE, "max-size", 0, "SIZE",
     "prune: then remove the least recently used until the cache is at most SIZE (10G, 500M)"},
    {OPT_PRUNE_ALL, "all", 0, NULL, "prune: remove every image no running pull uses"},
    {OPT_PROGRESS, "progress", 0, "bar|lines|none",
     "progress on stderr: a bar on a terminal (default), a line every 5 s anywhere, or none"},
    {OPT_MAX_UNPACKED, "max-unpacked", 0, "SIZE",
     "fail (exit 8) rather than write more than SIZE of file content (50G, 500M; 0: no limit)"},
    {OPT_POLICY, "policy", 0, "FILE",
     "signature policy (containers-policy.json; default: the config's policy:, else "
     "~/.config/containers/policy.json, else /etc/containers/policy.json)"},
    {OPT_REQUIRE_SIGS, "require-signatures", 0, NULL,
     "fail (exit 9) unless a signature check accepts the image (an accept-anything policy "
     "does not)"},
    {OPT_SIG_INDEX, "signature-index", 0, "instance|either|both",
     "an entry of an index needs its own signature (default), or also accepts, or also "
     "needs, one on the index"},
    {OPT_SIGN_KEY, "sign-key", 0, "KEY.pem",
     "manifest push: sign the index and each entry with this private key (sigstore; PEM, or "
     "cosign's encrypted key)"},
    {OPT_SIGN_PASSPHRASE_FILE, "sign-passphrase-file", 0, "FILE",
     "manifest push: the --sign-key passphrase, its first line (default: COSIGN_PASSWORD)"},
    {OPT_INDEX, "index", 0, NULL, "the digest of the index itself, not of the chosen entry"},
    {OPT_PARENTS, "parents", 0, NULL, "create DEST's missing parent directories"},
    {OPT_NO_TRUNC, "no-trunc", 0, NULL, "whole digests and feature lists, however wide"},
    {OPT_CREDS, "creds", 0, "USER:PASS",
     "credentials for the registry (seen by other users: prefer fpull login)"},
};

static const char *const format_names[] = {"dir", "bundle", "squashfs", NULL};

const struct cli_opt *cli_opt_by_name(const char *long_name)
{
  for (size_t i = 0; i < sizeof all_opts / sizeof all_opts[0]; i++)
    if (strcmp(all_opts[i].long_name, long_name) == 0)
      return &all_opts[i];
  return NULL;
}

const struct cli_opt *cli_opt_find(enum cli_opt_id id)
{
  for (size_t i = 0; i < sizeof all_opts / sizeof all_opts[0]; i++)
    if (all_opts[i].id == id)
      return &all_opts[i];
  return NULL;
}

/* One option row of --help within 80 columns: an option wider than its column gets its
 * text on the next line, and long text wraps under the text column, as GNU tools do. */
#define HELP_LEFT 24
#define HELP_WIDTH 79
static void print_help_row(FILE *out, const char *left, const char *help)
{
  int col = fprintf(out, "  %s", left);
  int indent = 2 + HELP_LEFT + 1;
  if (col >= indent) {
    fputc('\n', out);
    col = 0;
  }
  for (const char *p = help; *p;) {
    size_t w = strcspn(p, " ");
    if (col > indent && col + 1 + (int)w > HELP_WIDTH) {
      fputc('\n', out);
      col = 0;
    }
    if (col < indent) {
      col += fprintf(out, "%*s", indent - col, "");
    } else {
      fputc(' ', out);
      col++;
    }
    col += fprintf(out, "%.*s", (int)w, p);
    p += w;
    while (*p == ' ')
      p++;
  }
  fputc('\n', out);
}

void cli_print_help(const struct cli_cmd *cmd, FILE *out)
{
  fprintf(out, "Usage: fpull %s %s\n%s\n", cmd->name, cmd->args, cmd->summary);
  if (cmd->notes)
    fprintf(out, "\n%s", cmd->notes);
  fprintf(out, "\nOptions:\n");
  for (const enum cli_opt_id *id = cmd->opts; *id; id++) {
    const struct cli_opt *o = cli_opt_find(*id);
    char left[96];
    if (o->short_name)
      snprintf(left, sizeof left, "-%c, --%s%s%s", o->short_name, o->long_name, o->arg ? " " : "",
               o->arg ? o->arg : "");
    else
      snprintf(left, sizeof left, "    --%s%s%s", o->long_name, o->arg ? " " : "",
               o->arg ? o->arg : "");
    print_help_row(out, left, o->help);
  }
  fprintf(out, "\nSee fpull(1) for details.\n");
}

/* Set by cli_parse: "fpull IMAGE" is pull without the word, and its errors name no command
 * the user did not type. */
static int parse_implied;

static int usage_error(const struct cli_cmd *cmd, const char *msg, const char *what)
{
  if (parse_implied)
    fprintf(stderr, "fpull: %s%s%s (see 'fpull --help')\n", msg, what ? " " : "", what ? what : "");
  else
    fprintf(stderr, "fpull: %s: %s%s%s (see 'fpull %s --help')\n", cmd->name, msg, what ? " " : "",
            what ? what : "", cmd->name);
  return FPULL_EUSAGE;
}

int cli_parse(const struct cli_cmd *cmd, int argc, char **argv, struct cli_settings *s,
              int *first_arg)
{
  struct option longopts[32];
  char shortopts[64];
  size_t nl = 0, ns = 0;
  shortopts[ns++] = ':'; /* tell a missing argument apart from an unknown option */
  for (const enum cli_opt_id *id = cmd->opts; *id && nl < 31; id++) {
    const struct cli_opt *o = cli_opt_find(*id);
    longopts[nl++] =
        (struct option){o->long_name, o->arg ? required_argument : no_argument, NULL, (int)o->id};
    if (o->short_name) {
      shortopts[ns++] = o->short_name;
      if (o->arg)
        shortopts[ns++] = ':';
    }
  }
  longopts[nl] = (struct option){0};
  shortopts[ns] = '\0';

  optind = 1;
  opterr = 0;
  int implied = parse_implied = strcmp(argv[0], cmd->name) != 0;
  int c;
  while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
    const struct cli_opt *o = NULL;
    if (c == '?') {
      /* A flag's --NAME=true is the flag, =false its absence; the rest is refused with
       * what fpull takes instead (cli_opterr.c). */
      int id = cli_bad_option(cmd, implied, optopt > 0 && optopt < 256 ? NULL : argv[optind - 1],
                              optopt, s);
      if (id < 0)
        return FPULL_EUSAGE;
      if (id == 0)
        continue;
      c = id;
    }
    if (c > 0 && c < 256) {
      for (const enum cli_opt_id *id = cmd->opts; *id; id++)
        if (cli_opt_find(*id)->short_name == c)
          o = cli_opt_find(*id);
    } else if (c >= OPT_HELP) {
      o = cli_opt_find((enum cli_opt_id)c);
    }
    if (c == ':')
      return usage_error(cmd, "option needs an argument:", argv[optind - 1]);
    if (!o)
      return usage_error(cmd, "unknown option", argv[optind - 1]);
    switch (o->id) {
    case OPT_HELP:
      cli_print_help(cmd, stdout);
      return -1;
    case OPT_OUTPUT:
      s->output = optarg;
      break;
    case OPT_FORCE:
      s->force = 1;
      break;
    case OPT_FEATURES:
      s->features = optarg;
      break;
    case OPT_PLATFORM:
      s->platform = optarg;
      break;
    case OPT_CACHE_DIR:
      s->cache_dir = optarg;
      break;
    case OPT_CERTS_DIR:
      s->certs_dir = optarg;
      break;
    case OPT_CERT_DIR:
      s->cert_dir = optarg;
      break;
    case OPT_CONFIG:
      s->config = optarg;
      break;
    case OPT_INSECURE:
      s->insecure = 1;
      break;
    case OPT_OFFLINE:
      s->offline = 1;
      break;
    case OPT_JSON:
      s->json = 1;
      break;
    case OPT_QUIET:
      s->quiet = 1;
      break;
    case OPT_VERBOSE:
      s->verbose++;
      break;
    case OPT_PROGRESS:
      if (strcmp(optarg, "bar") == 0)
        s->progress = 0;
      else if (strcmp(optarg, "lines") == 0)
        s->progress = 1;
      else if (strcmp(optarg, "none") == 0)
        s->progress = 2;
      else
        return usage_error(cmd, "--progress takes bar, lines or none, not", optarg);
      break;
    case OPT_JOBS: {
      char *end;
      long n = strtol(optarg, &end, 10);
      if (*end || n < 1 || n > 64)
        return usage_error(cmd, "--jobs takes a number from 1 to 64, not", optarg);
      s->jobs = (int)n;
      break;
    }
    case OPT_TYPE:
      if (strcmp(optarg, "oci") != 0 && strcmp(optarg, "docker") != 0)
        return usage_error(cmd, "--type takes oci or docker, not", optarg);
      s->type = optarg;
      break;
    case OPT_USERNAME:
      s->username = optarg;
      break;
    case OPT_PASSWORD_STDIN:
      s->password_stdin = 1;
      break;
    case OPT_PASSWORD:
      s->password = optarg;
      break;
    case OPT_LIST_KNOWN:
      s->list_known = 1;
      break;
    case OPT_ALL:
      s->all = 1;
      break;
    case OPT_FORMAT: {
      /* A typo must fail, never fall back to another format. */
      size_t i = 0;
      while (format_names[i] && strcmp(optarg, format_names[i]) != 0)
        i++;
      if (format_names[i]) {
        s->format = (enum cli_format)i;
        break;
      }
      const char *near = fpull_suggest(optarg, format_names);
      /* skopeo's, podman's and crane's --format is a template or "json": fpull's is what
       * DEST becomes, and --json is its JSON output. */
      int json = strcasecmp(optarg, "json") == 0 || strstr(optarg, "{{");
      fprintf(stderr, "fpull: %s%sunknown --format '%s'%s%s%s (dir, bundle or squashfs%s)\n",
              implied ? "" : cmd->name, implied ? "" : ": ", optarg, near ? " (did you mean '" : "",
              near ? near : "", near ? "'?)" : "",
              json ? "; --json prints the result as JSON" : "");
      return FPULL_EUSAGE;
    }
    case OPT_OLDER_THAN:
      s->older_than = optarg;
      break;
    case OPT_MAX_SIZE:
      s->max_size = optarg;
      break;
    case OPT_PRUNE_ALL:
      s->prune_all = 1;
      break;
    case OPT_MAX_UNPACKED: {
      int64_t n = 0;
      fpull_err err = {0};
      if (fpull_cache_parse_size(&n, optarg, &err))
        return usage_error(cmd, "--max-unpacked:", err.msg);
      s->max_unpacked = (uint64_t)n;
      s->max_unpacked_given = 1;
      break;
    }
    case OPT_POLICY:
    case OPT_REQUIRE_SIGS:
    case OPT_SIG_INDEX:
    case OPT_SIGN_KEY:
    case OPT_SIGN_PASSPHRASE_FILE:
      if (cli_sig_parse(cmd, o->id, optarg, s))
        return FPULL_EUSAGE;
      break;
    case OPT_INDEX:
      s->index = 1;
      break;
    case OPT_PARENTS:
      s->parents = 1;
      break;
    case OPT_NO_TRUNC:
      s->no_trunc = 1;
      break;
    case OPT_CREDS:
      if (!strchr(optarg, ':') || optarg[0] == ':')
        return usage_error(cmd, "--creds takes USER:PASSWORD", NULL);
      s->creds = optarg;
      break;
    case OPT_SQFS_COMP:
    case OPT_SQFS_BLOCK_SIZE:
    case OPT_SQFS_LEVEL:
    case OPT_SQFS_THREADS:
    case OPT_KEEP_PRIV:
      if (cli_sqfs_parse(cmd, o->id, optarg, s))
        return FPULL_EUSAGE;
      break;
    }
  }
  if (cli_sqfs_check(cmd, s))
    return FPULL_EUSAGE;
  int n = argc - optind;
  if (n < cmd->min_args)
    return usage_error(cmd, "missing argument;", cmd->args);
  if (cmd->max_args >= 0 && n > cmd->max_args)
    return usage_error(cmd, "too many arguments, starting at", argv[optind + cmd->max_args]);
  *first_arg = optind;
  return 0;
}

int cli_fail(const fpull_err *err)
{
  cli_progress_break();
  fprintf(stderr, "fpull: %s\n", err->msg[0] ? err->msg : "failed");
  return err->code ? err->code : FPULL_EFAIL;
}

static void log_to_stderr(void *ud, int level, const char *msg)
{
  const struct cli_settings *s = ud;
  if (level == FPULL_LOG_WARN || (!s->quiet && (level != FPULL_LOG_DEBUG || s->verbose)))
    cli_progress_break();
  if (level == FPULL_LOG_WARN) {
    fprintf(stderr, "fpull: warning: %s\n", msg);
    return;
  }
  if (s->quiet || (level == FPULL_LOG_DEBUG && !s->verbose))
    return;
  fprintf(stderr, "%s\n", msg);
}

void cli_install_log(const struct cli_settings *s)
{
  fpull_log_set(log_to_stderr, (void *)s);
}

static int env_load(struct cli_env *env, const struct cli_settings *s, int need_target,
                    fpull_err *err)
{
  int rc = fpull_config_load(&env->config, s->config, err);
  if (rc)
    return rc;
  env->cache_dir = fpull_cache_resolve_dir(s->cache_dir, env->config);
  if (!need_target)
    return 0;
  rc = fpull_tagdb_load(&env->tagdb, NULL, env->config, err);
  if (rc)
    return rc;
  struct fpull_target_opts to = {
      .version = FPULL_TARGET_OPTS_VERSION,
      .platform = s->platform,
      .features = s->features,
      .env_features = getenv("FPULL_FEATURES"),
      .config = env->config,
      .tagdb = env->tagdb,
  };
  return fpull_target_build(&env->target, &to, err);
}

int cli_env_load(struct cli_env *env, const struct cli_settings *s, int need_target, fpull_err *err)
{
  memset(env, 0, sizeof *env);
  int rc = env_load(env, s, need_target, err);
  if (rc)
    cli_env_free(env);
  return rc;
}

void cli_env_free(struct cli_env *env)
{
  fpull_target_free(env->target);
  fpull_tagdb_free(env->tagdb);
  fpull_config_free(env->config);
  free(env->cache_dir);
  memset(env, 0, sizeof *env);
}

void cli_pull_opts(struct fpull_pull_opts *o, const struct cli_env *env,
                   const struct cli_settings *s)
{
  *o = (struct fpull_pull_opts)FPULL_PULL_OPTS_INIT;
  o->config = env->config;
  o->target = env->target;
  o->tagdb = env->tagdb;
  o->cache_dir = env->cache_dir;
  o->certs_dir = s->certs_dir;
  o->cert_dir = s->cert_dir;
  o->creds = s->creds;
  o->insecure = s->insecure;
  o->offline = s->offline;
  o->jobs = s->jobs;
  o->unpack.force = s->force;
  /* Given, it wins over the config's max-unpacked:, 0 included. */
  if (s->max_unpacked_given)
    o->unpack.max_unpacked = s->max_unpacked ? s->max_unpacked : FPULL_UNPACK_UNLIMITED;
  o->unpack.parents = s->parents;
  cli_progress_attach(o, s);
  cli_sqfs_pull_opts(o, s);
  cli_sig_pull_opts(o, s);
}

void cli_print_json(void *v)
{
  char *text = cJSON_Print(v);
  fputs(text, stdout);
  fputc('\n', stdout);
  free(text);
  cJSON_Delete(v);
}

void *cli_json_strv(char *const *v)
{
  cJSON *a = cJSON_CreateArray();
  for (size_t i = 0; v && v[i]; i++)
    cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
  return a;
}

static void add_str_or_null(cJSON *o, const char *k, const char *v)
{
  if (v)
    cJSON_AddStringToObject(o, k, v);
  else
    cJSON_AddNullToObject(o, k);
}

void *cli_json_platform(const struct fpull_platform *p)
{
  if (!p)
    return cJSON_CreateNull();
  cJSON *o = cJSON_CreateObject();
  add_str_or_null(o, "os", p->os);
  add_str_or_null(o, "architecture", p->architecture);
  add_str_or_null(o, "variant", p->variant);
  cJSON_AddItemToObject(o, "features", cli_json_strv(p->features));
  return o;
}
