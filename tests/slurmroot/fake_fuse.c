/* A FUSE file system served by a daemon running as a user (see fake_fuse.h), spoken in the
 * kernel's own protocol (linux/fuse.h): no libfuse needed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/fuse.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_fuse.h"
#include "harness.h"

/* Nodes: 1 the mount's root (the job directory), 2 the step directory, 3 STEP/info. */
enum { ROOT = 1, STEP = 2, INFO = 3 };

struct served {
  const struct fake_fuse *how;
  char info[64];
  size_t info_len;
};

static void attr_of(const struct served *s, uint64_t ino, struct fuse_attr *a)
{
  memset(a, 0, sizeof *a);
  a->ino = ino;
  a->uid = s->how->reported;
  a->gid = s->how->reported;
  a->blksize = 4096;
  a->nlink = ino == INFO ? 1 : 2;
  a->mode = ino == INFO ? (S_IFREG | 0600) : (S_IFDIR | 0700);
  a->size = ino == INFO ? s->info_len : 4096;
}

static void reply(int fd, uint64_t unique, int error, const void *data, size_t len)
{
  struct fuse_out_header h = {.len = (uint32_t)(sizeof h + len), .error = error, .unique = unique};
  struct iovec iov[2] = {{&h, sizeof h}, {(void *)data, len}};
  ssize_t w = writev(fd, iov, len ? 2 : 1);
  (void)w;
}

static uint64_t lookup(const struct served *s, uint64_t parent, const char *name)
{
  if (parent == ROOT && strcmp(name, s->how->step) == 0)
    return STEP;
  if (parent == STEP && strcmp(name, "info") == 0 && s->how->victim > 0)
    return INFO;
  return 0;
}

static size_t readdir_reply(const struct served *s, uint64_t ino, const struct fuse_read_in *r,
                            char *out, size_t cap)
{
  const char *names[3] = {".", "..", ino == ROOT ? s->how->step : "info"};
  uint64_t inos[3] = {ino, ino == ROOT ? ROOT : ROOT, ino == ROOT ? STEP : INFO};
  uint32_t types[3] = {DT_DIR, DT_DIR, ino == ROOT ? DT_DIR : DT_REG};
  size_t count = ino == STEP && s->how->victim <= 0 ? 2 : 3, len = 0;
  for (size_t i = (size_t)r->offset; i < count; i++) {
    size_t nl = strlen(names[i]), rec = FUSE_DIRENT_ALIGN(FUSE_NAME_OFFSET + nl);
    if (len + rec > r->size || len + rec > cap)
      break;
    struct fuse_dirent *d = (struct fuse_dirent *)(out + len);
    memset(d, 0, rec);
    d->ino = inos[i];
    d->off = i + 1;
    d->namelen = (uint32_t)nl;
    d->type = types[i];
    memcpy(d->name, names[i], nl);
    len += rec;
  }
  return len;
}

static void serve(int fd, struct served *s)
{
  static char buf[(1 << 17) + 4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (n < (ssize_t)sizeof(struct fuse_in_header))
      _exit(0); /* unmounted (ENODEV), or aborted */
    struct fuse_in_header *in = (struct fuse_in_header *)buf;
    void *arg = in + 1;
    if (in->opcode == FUSE_INIT) {
      struct fuse_init_in *ii = arg;
      struct fuse_init_out o = {0};
      o.major = FUSE_KERNEL_VERSION;
      o.minor = ii->minor < FUSE_KERNEL_MINOR_VERSION ? ii->minor : FUSE_KERNEL_MINOR_VERSION;
      o.max_readahead = ii->max_readahead;
      o.max_write = 65536;
      o.max_background = 16;
      o.congestion_threshold = 12;
      o.time_gran = 1;
      reply(fd, in->unique, 0, &o, sizeof o);
      continue;
    }
    if (s->how->silent)
      continue; /* read, never answered: whoever asked waits, unkillably */
    switch (in->opcode) {
    case FUSE_LOOKUP: {
      uint64_t ino = lookup(s, in->nodeid, (const char *)arg);
      if (!ino) {
        reply(fd, in->unique, -ENOENT, NULL, 0);
        break;
      }
      struct fuse_entry_out e = {0};
      e.nodeid = ino;
      attr_of(s, ino, &e.attr);
      reply(fd, in->unique, 0, &e, sizeof e);
      break;
    }
    case FUSE_GETATTR: {
      struct fuse_attr_out a = {0};
      attr_of(s, in->nodeid, &a.attr);
      reply(fd, in->unique, 0, &a, sizeof a);
      break;
    }
    case FUSE_OPEN:
    case FUSE_OPENDIR: {
      struct fuse_open_out o = {0};
      reply(fd, in->unique, 0, &o, sizeof o);
      break;
    }
    case FUSE_READDIR: {
      char out[4096];
      size_t len = readdir_reply(s, in->nodeid, arg, out, sizeof out);
      reply(fd, in->unique, 0, out, len);
      break;
    }
    case FUSE_READ: {
      const struct fuse_read_in *r = arg;
      size_t off = r->offset < s->info_len ? (size_t)r->offset : s->info_len;
      size_t len = s->info_len - off < r->size ? s->info_len - off : r->size;
      reply(fd, in->unique, 0, s->info + off, in->nodeid == INFO ? len : 0);
      break;
    }
    case FUSE_STATFS: {
      struct fuse_statfs_out o = {0};
      reply(fd, in->unique, 0, &o, sizeof o);
      break;
    }
    case FUSE_RELEASE:
    case FUSE_RELEASEDIR:
    case FUSE_FLUSH:
    case FUSE_ACCESS:
      reply(fd, in->unique, 0, NULL, 0);
      break;
    case FUSE_FORGET:
    case FUSE_BATCH_FORGET:
    case FUSE_INTERRUPT:
      break;
    case FUSE_UNLINK:
    case FUSE_RMDIR:
    case FUSE_SETATTR:
    case FUSE_RENAME:
    case FUSE_RENAME2:
      reply(fd, in->unique, -EPERM, NULL, 0);
      break;
    case FUSE_DESTROY:
      reply(fd, in->unique, 0, NULL, 0);
      _exit(0);
    default:
      reply(fd, in->unique, -ENOSYS, NULL, 0);
    }
  }
}

pid_t fake_fuse_mount(const char *point, const struct fake_fuse *how)
{
  int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
  CHECK(fd >= 0);
  struct served s = {.how = how};
  if (how->victim > 0) {
    int n = snprintf(s.info, sizeof s.info, "P%d", (int)how->victim);
    n += 1 + snprintf(s.info + n + 1, sizeof s.info - (size_t)n - 1, "Q%d", (int)how->victim);
    s.info_len = (size_t)n + 1;
  }
  /* The daemon reads only once the mount is made (the kernel says EPERM to a read before). */
  int mounted[2];
  CHECK(pipe2(mounted, O_CLOEXEC) == 0);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    char b;
    close(mounted[1]);
    /* The daemon is the user's process, as fusermount3's caller's is. */
    alarm(0);
    if (setgroups(0, NULL) < 0 || setresgid(how->user, how->user, how->user) < 0 ||
        setresuid(how->user, how->user, how->user) < 0)
      _exit(1);
    /* Not left behind by a test that fails (set after the ids changed, which clear it). */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (read(mounted[0], &b, 1) != 1)
      _exit(1);
    serve(fd, &s);
    _exit(0);
  }
  char opts[160];
  snprintf(opts, sizeof opts, "fd=%d,rootmode=40000,user_id=%u,group_id=%u%s", fd,
           (unsigned)how->user, (unsigned)how->user, how->allow_other ? ",allow_other" : "");
  close(mounted[0]);
  CHECK(mount("fpull-test", point, "fuse.fpull-test", MS_NOSUID | MS_NODEV, opts) == 0);
  CHECK(write(mounted[1], "m", 1) == 1);
  close(mounted[1]);
  /* The daemon holds the only descriptor: when it ends, the connection is aborted. */
  close(fd);
  return pid;
}

void fake_fuse_stop(pid_t daemon)
{
  if (daemon <= 0)
    return;
  kill(daemon, SIGKILL);
  while (waitpid(daemon, NULL, 0) < 0 && errno == EINTR)
    ;
}

int fake_fuse_is_mounted(const char *point)
{
  FILE *f = fopen("/proc/self/mountinfo", "re");
  CHECK(f != NULL);
  char *line = NULL;
  size_t cap = 0;
  int found = 0;
  size_t plen = strlen(point);
  while (!found && getline(&line, &cap, f) > 0) {
    /* The fifth field, the mount point (these tests' paths have no blanks to escape). */
    char *p = line;
    for (int i = 0; i < 4 && p; i++)
      p = strchr(p, ' ') ? strchr(p, ' ') + 1 : NULL;
    found = p && strncmp(p, point, plen) == 0 && p[plen] == ' ';
  }
  free(line);
  fclose(f);
  return found;
}
