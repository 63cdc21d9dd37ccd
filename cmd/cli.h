/* The command line: option tables that drive both getopt_long and --help, and the
 * settings every subcommand shares. cmd/ only parses options and prints. */
#ifndef FPULL_CLI_H
#define FPULL_CLI_H

#include <stdio.h>

#include "fpull/fpull.h"

enum cli_opt_id {
  OPT_HELP = 1000,
  OPT_OUTPUT,
  OPT_FORCE,
  OPT_FEATURES,
  OPT_PLATFORM,
  OPT_CACHE_DIR,
  OPT_CERTS_DIR,
  OPT_CONFIG,
  OPT_INSECURE,
  OPT_OFFLINE,
  OPT_JSON,
  OPT_QUIET,
  OPT_VERBOSE,
  OPT_JOBS,
  OPT_TYPE,
  OPT_USERNAME,
  OPT_PASSWORD_STDIN,
  OPT_LIST_KNOWN,
  OPT_ALL,
  OPT_FORMAT,
  /* pull --format squashfs's options (cli_sqfs.c) */
  OPT_SQFS_COMP,
  OPT_SQFS_BLOCK_SIZE,
  OPT_SQFS_LEVEL,
  OPT_SQFS_THREADS,
  OPT_KEEP_PRIV,
  OPT_PASSWORD, /* login -p */
  /* cache prune's limits (cmd_cache.c) */
  OPT_OLDER_THAN,
  OPT_MAX_SIZE,
  OPT_PRUNE_ALL,
  OPT_PROGRESS,
  OPT_MAX_UNPACKED, /* pull: the bound on what DEST receives */
  /* signatures (cli_sig.c) */
  OPT_POLICY,
  OPT_REQUIRE_SIGS,
  OPT_SIG_INDEX,
  OPT_SIGN_KEY,
  OPT_INDEX,   /* digest --index */
  OPT_PARENTS, /* pull --parents */
  OPT_CERT_DIR,
  OPT_NO_TRUNC, /* inspect --no-trunc */
  OPT_CREDS,
  OPT_SIGN_PASSPHRASE_FILE, /* manifest push (cli_sig.c) */
};

/* pull --format: what DEST becomes. */
enum cli_format {
  CLI_FORMAT_DIR = 0, /* DEST is the rootfs (the default) */
  CLI_FORMAT_BUNDLE,  /* DEST/rootfs + DEST/config.json (OCI runtime bundle) */
  CLI_FORMAT_SQUASHFS /* one SquashFS file (o->unpack.format, cli_sqfs.c) */
};

struct cli_opt {
  enum cli_opt_id id;
  const char *long_name;
  char short_name; /* 0 for none */
  const char *arg; /* argument name, NULL for a flag */
  const char *help;
};

/* Everything an option can set; each command reads what it needs. */
struct cli_settings {
  const char *output;
  int force;
  const char *features;
  const char *platform;
  const char *cache_dir;
  const char *certs_dir;
  const char *cert_dir; /* skopeo's --cert-dir */
  const char *creds;    /* --creds USER:PASS */
  const char *config;
  int insecure;
  int offline;
  int json;
  int quiet;
  int verbose;
  int jobs;
  const char *type;
  const char *username;
  int password_stdin;
  const char *password; /* login -p */
  int list_known;
  int all;                /* prefetch --all */
  enum cli_format format; /* pull --format */
  /* --format squashfs's options (cli_sqfs.c) */
  struct fpull_sqfs_opts sqfs;
  int sqfs_given;      /* some --sqfs-* option was given */
  int keep_privileged; /* --keep-privileged (squashfs, root only) */
  /* cache prune: as given, checked by cmd_cache.c */
  const char *older_than;
  const char *max_size;
  int prune_all;
  int progress; /* --progress: 0 auto (a bar on a terminal), 1 lines, 2 none */
  /* pull --max-unpacked, in bytes (0: none, even where the config sets one) */
  uint64_t max_unpacked;
  int max_unpacked_given;
  /* signatures (cli_sig.c) */
  const char *policy;
  int require_signatures;
  int signature_index;  /* enum fpull_sigindex */
  const char *sign_key; /* manifest push --sign-key */
  int index;            /* digest --index */
  int parents;          /* pull --parents */
  int no_trunc;         /* inspect --no-trunc */

  /* manifest push --sign-passphrase-file (else COSIGN_PASSWORD) */
  const char *sign_passphrase_file;
};

struct cli_cmd {
  const char *name;
  const char *args;            /* "[OPTIONS] IMAGE [DEST]" */
  const char *summary;         /* one line for fpull --help */
  const char *notes;           /* lines after the summary in its --help, or NULL */
  const enum cli_opt_id *opts; /* terminated by 0 */
  int min_args, max_args;      /* positional arguments; max -1: unbounded */
  int (*run)(struct cli_settings *s, int argc, char **argv);
};

/* Parses argv (argv[0] is the command name) with cmd's option table; on success argv is
 * permuted so that positional arguments follow and *first_arg is their index.
 * Returns 0, FPULL_EUSAGE after printing the error, or -1 when --help was printed. */
int cli_parse(const struct cli_cmd *cmd, int argc, char **argv, struct cli_settings *s,
              int *first_arg);
void cli_print_help(const struct cli_cmd *cmd, FILE *out);
/* A refused option (getopt_long's '?'; arg: the argument, NULL for a short one; optopt_val:
 * getopt's optopt): a flag's boolean value is taken (its id for true, 0 for false), and
 * --tls-verify=false sets s->insecure (0); anything else is printed with what fpull takes
 * instead, and -1 returned. implied: the command was not typed (fpull IMAGE). */
int cli_bad_option(const struct cli_cmd *cmd, int implied, const char *arg, int optopt_val,
                   struct cli_settings *s);
const struct cli_opt *cli_opt_find(enum cli_opt_id id);
/* An option of some command by its long name, or NULL. */
const struct cli_opt *cli_opt_by_name(const char *long_name);

/* Prints "fpull: MSG" (the one failure line) and returns err->code. */
int cli_fail(const fpull_err *err);
/* The stderr message sink for the library, honouring -q / -v. */
void cli_install_log(const struct cli_settings *s);

/* Loaded once per run by commands that need a target platform. */
struct cli_env {
  struct fpull_config *config;
  struct fpull_tagdb *tagdb;
  struct fpull_target *target;
  char *cache_dir;
};
/* On failure nothing is left to free. */
int cli_env_load(struct cli_env *env, const struct cli_settings *s, int need_target,
                 fpull_err *err);
void cli_env_free(struct cli_env *env);
void cli_pull_opts(struct fpull_pull_opts *o, const struct cli_env *env,
                   const struct cli_settings *s);

/* The terminal progress display (progress.c): installed only when stderr is a terminal and
 * not -q; cli_progress_break ends a frame left on the line before other output (1 when it
 * ended one). */
void cli_progress_attach(struct fpull_pull_opts *o, const struct cli_settings *s);
int cli_progress_break(void);
/* n bytes in decimal units as docker shows them ("1.2 GB", "512 B"); returns buf. */
const char *cli_human_bytes(char *buf, size_t len, uint64_t n);
/* The --sqfs-* options of --format squashfs: parses one (0, or FPULL_EUSAGE after
 * printing the error), checks them together once all are parsed, and puts them into o. */
int cli_sqfs_parse(const struct cli_cmd *cmd, enum cli_opt_id id, const char *arg,
                   struct cli_settings *s);
int cli_sqfs_check(const struct cli_cmd *cmd, const struct cli_settings *s);
void cli_sqfs_pull_opts(struct fpull_pull_opts *o, const struct cli_settings *s);
/* --policy, --require-signatures, --signature-index (cli_sig.c): parses one (0, or
 * FPULL_EUSAGE after printing the error); puts them into o. */
int cli_sig_parse(const struct cli_cmd *cmd, enum cli_opt_id id, const char *arg,
                  struct cli_settings *s);
void cli_sig_pull_opts(struct fpull_pull_opts *o, const struct cli_settings *s);
/* A signature check as JSON (null when there is none), and as one line on stderr. */
void *cli_sig_json(const struct fpull_sig_check *c);
void cli_sig_say(const struct cli_settings *s, const char *what, const struct fpull_sig_check *c);

/* Ctrl-C and SIGTERM (interrupt.c): installed by pull and prefetch before the library
 * starts a thread (never by login, whose prompt restores the terminal itself); a pull names
 * its DEST so that what it writes beside DEST goes when it is interrupted. */
void cli_interrupt_install(void);
void cli_interrupt_watch_dest(const char *dest);

/* What fpull features' summary line names (cmd_features.c): the target's CPU tag with the
 * largest ISA set, and the newest feature of a kind ("nvidia-", "cuda-"); NULL for none. */
const char *cli_best_cpu_tag(const struct cli_env *env);
const char *cli_top_feature(const struct fpull_target *t, const char *prefix);

/* Writes the JSON document v (a cJSON *) on stdout and frees it. */
void cli_print_json(void *v);
/* cJSON helpers shared by the commands' JSON output. */
void *cli_json_platform(const struct fpull_platform *p);
void *cli_json_strv(char *const *v);
/* {"reference", "error": {"code", "message"}}: a failed IMAGE in prefetch's JSON array. */
void *cli_pull_error_json(const char *image, const fpull_err *e);

/* A pull or prefetch result: its JSON object (a cJSON *), and its line on stderr. */
void *cli_pull_json(const struct fpull_pull_result *r);
void cli_pull_say_done(const struct cli_settings *s, const struct fpull_pull_result *r);

extern const struct cli_cmd cmd_pull, cmd_prefetch, cmd_inspect, cmd_features, cmd_version,
    cmd_manifest, cmd_login, cmd_logout, cmd_config, cmd_cache, cmd_digest, cmd_tags;

#endif
