/* Ctrl-C and SIGTERM: one line, the files this pull was writing beside DEST removed (the
 * staging directory of a rootfs or bundle, the temporary SquashFS file or archive, the
 * layout being built), the cache's partial downloads kept for the next run to resume, and
 * the shell's exit status for a signal (130, 143). A thread waits for the signals, which
 * every other thread has blocked, so that the cleanup runs as ordinary code. */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static sigset_t signals;
static struct {
  char parent[4096];
  char prefix[512]; /* ".BASE.fpull-": every temporary name of a pull beside DEST */
  char **before;    /* such names there before this run (another run's), kept */
  size_t n_before;
} watched;

/* Whatever cannot go now is seen by the caller's check and tried again. */
static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void)st, (void)ftw;
  if (flag == FTW_DP)
    (void)rmdir(path);
  else
    (void)unlink(path);
  return 0;
}

static int ours(const char *name)
{
  if (strncmp(name, watched.prefix, strlen(watched.prefix)) != 0)
    return 0;
  for (size_t i = 0; i < watched.n_before; i++)
    if (strcmp(watched.before[i], name) == 0)
      return 0;
  return 1;
}

/* Removes what this run made beside DEST. The unpacker may still be writing into a staging
 * directory while it goes: tried again until it is gone. */
static int remove_ours(void)
{
  int left = 0;
  for (int attempt = 0; attempt < 50; attempt++) {
    left = 0;
    DIR *d = opendir(watched.parent);
    if (!d)
      return 0;
    struct dirent *de;
    while ((de = readdir(d))) {
      if (!ours(de->d_name))
        continue;
      char path[4700];
      snprintf(path, sizeof path, "%s/%s", watched.parent, de->d_name);
      nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
      if (access(path, F_OK) == 0)
        left++;
    }
    closedir(d);
    if (!left)
      return 0;
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return left;
}

static void *watch(void *unused)
{
  (void)unused;
  int sig = 0;
  if (sigwait(&signals, &sig) != 0)
    return NULL;
  /* A terminal that echoes control characters has just written "^C" where the cursor was:
   * the line starts on a row of its own, not after it. */
  struct termios tio;
  if (!cli_progress_break() && sig == SIGINT && isatty(STDERR_FILENO) &&
      tcgetattr(STDERR_FILENO, &tio) == 0 && (tio.c_lflag & ECHO) && (tio.c_lflag & ECHOCTL))
    fputc('\n', stderr);
  int left = watched.parent[0] ? remove_ours() : 0;
  const char *what = "";
  if (watched.parent[0])
    what = left ? "; some temporary files beside DEST could not be removed"
                : "; DEST is as it was, the cache keeps what was downloaded and the next pull "
                  "resumes";
  fprintf(stderr, "fpull: interrupted (%s)%s\n", sig == SIGINT ? "SIGINT" : "SIGTERM", what);
  fflush(stderr);
  _exit(128 + sig);
}

void cli_interrupt_install(void)
{
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  if (pthread_sigmask(SIG_BLOCK, &signals, NULL) != 0)
    return;
  pthread_t t;
  if (pthread_create(&t, NULL, watch, NULL) != 0) {
    pthread_sigmask(SIG_UNBLOCK, &signals, NULL);
    return;
  }
  pthread_detach(t);
}

void cli_interrupt_watch_dest(const char *dest)
{
  if (!dest || !*dest)
    return;
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", dest);
  size_t len = strlen(buf);
  while (len > 1 && buf[len - 1] == '/')
    buf[--len] = '\0';
  char *slash = strrchr(buf, '/');
  const char *base = slash ? slash + 1 : buf;
  char prefix[512];
  snprintf(prefix, sizeof prefix, ".%.255s.fpull-", base);
  if (slash)
    *slash = '\0';
  const char *parent = slash ? (*buf ? buf : "/") : ".";
  char **before = NULL;
  size_t n = 0;
  DIR *d = opendir(parent);
  struct dirent *de;
  while (d && (de = readdir(d)))
    if (strncmp(de->d_name, prefix, strlen(prefix)) == 0) {
      char **grown = realloc(before, (n + 1) * sizeof *before);
      if (!grown)
        break;
      before = grown;
      before[n++] = strdup(de->d_name);
    }
  if (d)
    closedir(d);
  /* Published last: the watcher reads parent only once it is complete. */
  watched.before = before;
  watched.n_before = n;
  snprintf(watched.prefix, sizeof watched.prefix, "%s", prefix);
  snprintf(watched.parent, sizeof watched.parent, "%s", parent);
}
