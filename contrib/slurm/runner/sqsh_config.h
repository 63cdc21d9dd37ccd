/* fpull Slurm plugin: the image configuration of a SquashFS image (--fpull-image=/PATH.sqsh),
 * read back from the files where enroot's import stores it, as `fpull pull --format
 * squashfs` does too (lib/sinks/sqfs_config.h): Env from /etc/environment, WorkingDir and
 * Entrypoint from /etc/rc, the command script `enroot start` runs. So a file made by
 * --fpull-save, pyxis's --container-save or `enroot import` runs as its image did.
 *
 * The files are the user's (any SquashFS file will do), read by the runner as the user:
 * nothing in them is run (no shell reads /etc/rc here: its few statements are parsed, and a
 * file that is not enroot's script is not used), each is bounded, and they are resolved
 * inside the image's root, never through a symbolic link out of it. */
#ifndef FPULL_SLURM_SQSH_CONFIG_H
#define FPULL_SLURM_SQSH_CONFIG_H

#include <stddef.h>

#include "fpull/error.h"
#include "sinks/sqfs_platform.h"

/* Most bytes of either file: a larger one is not used. What they yield goes to the tasks
 * in the step's info file (1 MiB), both files' worth with room to spare. */
#define FP_SLURM_SQSH_FILE_MAX (256u << 10)
/* Most words of one exec line of /etc/rc. */
#define FP_SLURM_SQSH_WORDS_MAX 4096

struct fp_slurm_sqsh_config {
  /* /etc/environment as enroot start reads it: NAME=VALUE, one per NAME (the last line
   * wins), in the order of their lines; NULL when none. */
  char **env;
  /* Names of entries not set because their value takes the host's ${VAR}, which enroot
   * start substitutes (an entry NAME=${NAME} alone, which would keep the job's value, is
   * not named here); NULL when none. */
  char **host_refs;
  /* From /etc/rc, when it was read and understood (has_rc): */
  int has_rc;
  char *workdir;     /* the directory it changes to, absolute */
  char **entrypoint; /* the words it execs before the command ("$@"): an empty vector when
                        the image has no Entrypoint */
  char **cmd;        /* what it execs after them without a command: the Cmd */
  char *provenance;  /* what its "# enroot-provenance:" line names, or NULL */
};

/* Parse /etc/environment's text (len bytes, NUL-terminated or not) into c->env and
 * c->host_refs: enroot's format (common::envsubst, common::envfmt and enroot-switchroot's
 * loader): comments, blank lines and lines that are no NAME=VALUE are skipped, one pair of
 * quotes around a value is stripped, ENROOT_* is not set. Errors (FPULL_EUNSAFE, c left
 * without env): over FP_SLURM_SQSH_FILE_MAX, a NUL byte. */
int fp_slurm_sqsh_env_parse(struct fp_slurm_sqsh_config *c, const char *text, size_t len,
                            fpull_err *err);

/* Parse /etc/rc's text as every version of enroot's import writes it: comments (the
 * provenance, the Labels), then `[mkdir -p DIR 2> /dev/null]`, `cd DIR [&& unset OLDPWD]
 * || exit 1`, an `if [ -s /etc/rc.local ]` block, and `if [ $# -gt 0 ]; then exec WORDS
 * "$@"; else exec WORDS; fi` on lines of their own, DIR and WORDS quoted as sh quotes them
 * (single, double, $'...' quotes and backslashes; no expansion). Sets has_rc, workdir,
 * entrypoint, cmd and provenance. Errors (FPULL_EUNSAFE, naming the line; c left without
 * them): over FP_SLURM_SQSH_FILE_MAX, a NUL byte, a line that is not enroot's, a $ or `
 * expansion, an unterminated quote, an exec line over FP_SLURM_SQSH_WORDS_MAX words. */
int fp_slurm_sqsh_rc_parse(struct fp_slurm_sqsh_config *c, const char *text, size_t len,
                           fpull_err *err);

/* Reads etc/environment and etc/rc of the image whose root directory rootfs_fd is (resolved
 * inside it: inroot.h) into c. A missing file is no error; one that is there and cannot be
 * used sets env_err or rc_err (a message naming the file, which the caller says; c keeps
 * nothing of it): not a regular file, a symbolic link to nothing in the image, too large,
 * not enroot's format. */
void fp_slurm_sqsh_config_read(struct fp_slurm_sqsh_config *c, int rootfs_fd, fpull_err *env_err,
                               fpull_err *rc_err);

void fp_slurm_sqsh_config_free(struct fp_slurm_sqsh_config *c);

/* Reads /.fpull/platform.json of the image whose root directory rootfs_fd is, the record of
 * the entry `fpull pull --format squashfs` made it from (lib/sinks/sqfs_platform.h), resolved
 * inside the image and bounded as the files above, parsed with the strict JSON reader.
 * 1 when read into *rec (the caller frees it with fp_sqfs_platform_free), 0 when the image
 * has none (enroot's import, pyxis, mksquashfs), -1 with err (naming the file) when it is
 * there and cannot be used. */
int fp_slurm_sqsh_platform_read(struct fp_sqfs_platform *rec, int rootfs_fd, fpull_err *err);

#endif
