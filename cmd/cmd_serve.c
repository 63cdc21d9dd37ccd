/* fpull serve: a pull-only registry mirror for the node's engines (docker, podman,
 * containerd, Kubernetes' kubelet through containerd) that answers a generic tag with the
 * entry fpull pull would choose on this node; --print-config prints their configuration. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* The URL engines reach this listener at. */
static int listener_url(char *buf, size_t len, const char *listen)
{
  if (strncmp(listen, "unix:", 5) == 0)
    return -1;
  const char *host = listen;
  if (strncmp(listen, ":", 1) == 0 || strncmp(listen, "0.0.0.0:", 8) == 0)
    host = strchr(listen, ':') + 1; /* every address: the engine on this node uses loopback */
  snprintf(buf, len, "%s%s", host == listen ? "" : "127.0.0.1:", host);
  return 0;
}

/* The upstream a hosts.toml falls back to when the mirror answers 404. */
static void upstream_url(char *buf, size_t len, const char *registry)
{
  if (strcmp(registry, "docker.io") == 0)
    snprintf(buf, len, "https://registry-1.docker.io");
  else
    snprintf(buf, len, "%s://%s", fpull_ref_host_is_loopback(registry) ? "http" : "https",
             registry);
}

static int print_config(const struct cli_settings *s, int argc, char **argv)
{
  const char *listen = s->listen ? s->listen : FPULL_SERVE_DEFAULT_LISTEN;
  char hp[300];
  if (listener_url(hp, sizeof hp, listen) < 0) {
    fprintf(stderr,
            "fpull: serve --print-config: engines reach a mirror over TCP, not %s "
            "(give --listen ADDR:PORT)\n",
            listen);
    return FPULL_EUSAGE;
  }
  char *def[] = {"docker.io", NULL};
  char **regs = argc ? argv : def;
  int n = argc ? argc : 1;
  if (strcmp(s->print_config, "docker") == 0) {
    /* docker uses registry-mirrors for Docker Hub names only. */
    printf("{\n  \"registry-mirrors\": [\"http://%s\"],\n  \"insecure-registries\": "
           "[\"%s\"]\n}\n",
           hp, hp);
    if (argc && (argc > 1 || strcmp(argv[0], "docker.io") != 0))
      fprintf(stderr, "fpull: warning: docker's registry-mirrors serve Docker Hub names only; "
                      "the other registries are pulled directly\n");
    return 0;
  }
  if (strcmp(s->print_config, "containerd") == 0) {
    printf("# containerd: in /etc/containerd/config.toml (the CRI plugin, which kubelet uses)\n"
           "#   [plugins.\"io.containerd.grpc.v1.cri\".registry]\n"
           "#     config_path = \"/etc/containerd/certs.d\"\n"
           "# ctr: ctr images pull --hosts-dir /etc/containerd/certs.d IMAGE\n"
           "# A 404 from the mirror falls back to server; to make the mirror the only way (its\n"
           "# signature policy then holds), set server to the mirror's URL too.\n");
    for (int i = 0; i < n; i++) {
      char up[300];
      upstream_url(up, sizeof up, regs[i]);
      printf("\n# /etc/containerd/certs.d/%s/hosts.toml\nserver = \"%s\"\n\n[host.\"http://%s\"]\n"
             "  capabilities = [\"pull\", \"resolve\"]\n",
             regs[i], up, hp);
    }
    return 0;
  }
  printf("# podman, CRI-O, buildah, skopeo: /etc/containers/registries.conf.d/50-fpull.conf\n");
  for (int i = 0; i < n; i++)
    printf("\n[[registry]]\nprefix = \"%s\"\nlocation = \"%s\"\n\n[[registry.mirror]]\n"
           "location = \"%s/%s\"\ninsecure = true\n",
           regs[i], regs[i], hp, regs[i]);
  return 0;
}

/* systemd's socket activation: one socket, fd 3, meant for this process. */
static int activated_fd(void)
{
  const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
  if (!pid || !fds || atol(pid) != (long)getpid() || strcmp(fds, "1") != 0)
    return -1;
  unsetenv("LISTEN_PID");
  unsetenv("LISTEN_FDS");
  unsetenv("LISTEN_FDNAMES");
  return 3;
}

static int run_serve(struct cli_settings *s, int argc, char **argv)
{
  if (s->print_config)
    return print_config(s, argc, argv);
  if (argc) {
    fprintf(stderr, "fpull: serve: REGISTRY arguments go with --print-config only\n");
    return FPULL_EUSAGE;
  }
  fpull_err err = {0};
  struct cli_env env = {0};
  if (cli_env_load(&env, s, 1, &err))
    return cli_fail(&err);
  struct fpull_pull_opts o;
  cli_pull_opts(&o, &env, s);
  o.progress = NULL; /* no progress display: the log says what happens */
  struct fpull_serve_opts so = FPULL_SERVE_OPTS_INIT;
  so.pull = &o;
  so.listen = s->listen;
  if (!s->listen)
    so.listen_fd = activated_fd();
  /* Every thread the server starts inherits this mask: the signals come to sigwait here. */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  signal(SIGPIPE, SIG_IGN); /* a client that goes away mid-blob is a write error */
  fpull_server *sv = NULL;
  int rc = fpull_serve_start(&sv, &so, &err);
  if (rc) {
    cli_env_free(&env);
    return cli_fail(&err);
  }
  /* The address is the result (port 0 chose one): one line on stdout. */
  printf("%s\n", fpull_server_address(sv));
  fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  if (!s->quiet)
    fprintf(stderr, "fpull: serve: %s, stopping\n", strsignal(sig));
  fpull_serve_stop(sv);
  cli_env_free(&env);
  return 0;
}

/* clang-format off */
static const enum cli_opt_id serve_opts[] = {
    OPT_HELP, OPT_LISTEN, OPT_PRINT_CONFIG, OPT_FEATURES, OPT_PLATFORM, OPT_CACHE_DIR,
    OPT_CERTS_DIR, OPT_CERT_DIR, OPT_CONFIG, OPT_INSECURE, OPT_OFFLINE,
    OPT_POLICY, OPT_REQUIRE_SIGS, OPT_SIG_INDEX, /* signatures (cli_sig.c) */
    OPT_QUIET, OPT_VERBOSE, 0};
/* clang-format on */

const struct cli_cmd cmd_serve = {
    .name = "serve",
    .args = "[OPTIONS] | --print-config ENGINE [REGISTRY...]",
    .summary = "a registry mirror that answers docker, podman and containerd with this node's "
               "entry",
    .notes = "Serves GET and HEAD of /v2/ manifests and blobs on --listen until SIGTERM; a tag\n"
             "is answered with an index in which this node's os/architecture has the entry\n"
             "'fpull pull' would choose here. Prints the address it listens on on stdout.\n",
    .opts = serve_opts,
    .min_args = 0,
    .max_args = -1,
    .run = run_serve,
};
