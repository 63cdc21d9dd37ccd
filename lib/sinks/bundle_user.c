/* The image config's User ("name", "uid", "name:group", "uid:gid", ...) resolved against
 * the rootfs's /etc/passwd and /etc/group as runc's libcontainer/user and umoci do: a name
 * must exist, a number need not; without an explicit group the user's groups in
 * /etc/group become additional gids. The files are read inside the rootfs (an image may
 * make /etc/passwd a symlink to the host's anything). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bundle_user.h"
#include "unpack/inroot.h"
#include "base/util.h"

#define FP_DB_MAX (4u * 1024 * 1024)

/* rootfs/path as text, or NULL when missing or not a regular file. */
static char *read_in_root(int rootfs_fd, const char *path)
{
  struct fp_root r;
  fp_root_init(&r, rootfs_fd, 0);
  cleanup_close int pfd = fp_inroot_open(&r, path, 0);
  struct stat st;
  if (pfd < 0 || fstat(pfd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > FP_DB_MAX)
    return NULL;
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", pfd);
  /* Checked a regular file above: reading it through its descriptor cannot block. */
  char *buf = NULL;
  size_t len = 0;
  return fp_read_file(proc, FP_DB_MAX, &buf, &len) == 0 ? buf : NULL;
}

/* Splits one line of a colon-separated database into at most max fields (in place). */
static size_t split_fields(char *line, char **f, size_t max)
{
  size_t n = 0;
  f[n++] = line;
  for (char *p = line; *p && n < max; p++)
    if (*p == ':') {
      *p = '\0';
      f[n++] = p + 1;
    }
  return n;
}

static int parse_id(const char *s, unsigned *out)
{
  if (!*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 10)
    return 0;
  unsigned long v = strtoul(s, NULL, 10);
  if (v > 0xffffffffUL)
    return 0;
  *out = (unsigned)v;
  return 1;
}

/* Calls fn for each line of db with its fields; stops when fn returns non-zero. */
static int each_line(char *db, size_t max, int (*fn)(char **f, size_t n, void *ud), void *ud)
{
  for (char *line = db; line && *line;) {
    char *nl = strchr(line, '\n');
    if (nl)
      *nl = '\0';
    char *f[8];
    size_t n = line[0] && line[0] != '#' ? split_fields(line, f, max) : 0;
    if (n && fn(f, n, ud))
      return 1;
    line = nl ? nl + 1 : NULL;
  }
  return 0;
}

struct pw_find {
  const char *name; /* or NULL: by uid */
  unsigned uid;
  struct fp_exec_user *u;
};

static int pw_match(char **f, size_t n, void *ud)
{
  struct pw_find *q = ud;
  unsigned uid, gid;
  if (n < 7 || !parse_id(f[2], &uid) || !parse_id(f[3], &gid))
    return 0;
  if (q->name ? strcmp(f[0], q->name) != 0 : uid != q->uid)
    return 0;
  q->u->uid = uid;
  q->u->gid = gid;
  q->u->name = fp_xstrdup(f[0]);
  q->u->home = fp_xstrdup(f[5]);
  return 1;
}

struct gr_find {
  const char *name; /* a group by name, or NULL: every group listing member */
  const char *member;
  unsigned gid;
  struct fp_exec_user *u;
};

static int gr_match(char **f, size_t n, void *ud)
{
  struct gr_find *q = ud;
  unsigned gid;
  if (n < 3 || !parse_id(f[2], &gid))
    return 0;
  if (q->name) {
    if (strcmp(f[0], q->name) != 0)
      return 0;
    q->gid = gid;
    return 1;
  }
  if (n < 4 || !q->member)
    return 0;
  for (char *m = f[3], *end; m && *m; m = end ? end + 1 : NULL) {
    end = strchr(m, ',');
    size_t l = end ? (size_t)(end - m) : strlen(m);
    if (l == strlen(q->member) && strncmp(m, q->member, l) == 0 &&
        q->u->n_groups < sizeof q->u->groups / sizeof q->u->groups[0]) {
      q->u->groups[q->u->n_groups++] = gid;
      break;
    }
  }
  return 0;
}

void fp_exec_user_free(struct fp_exec_user *u)
{
  free(u->name);
  free(u->home);
  memset(u, 0, sizeof *u);
}

int fp_exec_user_resolve(struct fp_exec_user *u, const char *spec, int rootfs_fd, fpull_err *err)
{
  memset(u, 0, sizeof *u);
  cleanup_free char *s = fp_xstrdup(spec ? spec : "");
  char *group = strchr(s, ':');
  if (group)
    *group++ = '\0';
  const char *user = *s ? s : "0";
  cleanup_free char *passwd = read_in_root(rootfs_fd, "etc/passwd");
  cleanup_free char *grp = read_in_root(rootfs_fd, "etc/group");
  unsigned id;
  int numeric = parse_id(user, &id);
  struct pw_find pq = {numeric ? NULL : user, numeric ? id : 0, u};
  if (!(passwd && each_line(passwd, 7, pw_match, &pq))) {
    if (!numeric)
      return fpull_err_set(err, FPULL_EFAIL,
                           "image config User \"%s\": no user %s in the rootfs's /etc/passwd", spec,
                           user);
    u->uid = id; /* a number need not be listed: uid N, gid 0, no home */
  }
  if (group && *group) {
    if (parse_id(group, &id)) {
      u->gid = id;
    } else {
      struct gr_find gq = {group, NULL, 0, u};
      cleanup_free char *g = grp ? fp_xstrdup(grp) : NULL;
      if (!(g && each_line(g, 4, gr_match, &gq)))
        return fpull_err_set(err, FPULL_EFAIL,
                             "image config User \"%s\": no group %s in the rootfs's /etc/group",
                             spec, group);
      u->gid = gq.gid;
    }
  } else if (grp && u->name) {
    struct gr_find gq = {NULL, u->name, 0, u};
    each_line(grp, 4, gr_match, &gq);
  }
  return 0;
}
