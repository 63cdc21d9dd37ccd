/* fpull Slurm plugin: running programs as the job's user, in the runner and in the root
 * side's children that dropped to the user (root/container_start.c, the unmount of
 * fuse_unmount.c):
 * one line on the step's stderr, a program with its output captured and its stderr
 * passed on (or to a log), and the deadline of pull_timeout= that kills it. */
#ifndef FPULL_SLURM_RUN_H
#define FPULL_SLURM_RUN_H

#include "base/util.h"

/* The most of a program's stdout fp_slurm_run_to keeps. */
#define FP_SLURM_RUN_OUT_MAX (1u << 20)

/* One line (a newline added) on our stderr, the step's. A line "fpull: ..." names the
 * node once fp_slurm_say_node set it: "fpull: NODE: ...", so that the user of a step on many
 * nodes sees which one said it. The lines of fpull's own that fp_slurm_run_to passes on
 * get the same. */
void fp_slurm_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The node's name (Slurm's, SLURMD_NODENAME) for the lines of fp_slurm_say; "": the host's
 * name; NULL: none. */
void fp_slurm_say_node(const char *name);

/* From now, SIGTERM, SIGINT and SIGHUP (the step cancelled: scancel, srun's Ctrl-C) end the
 * program running (fp_slurm_run_to's) and silence every line said or passed on after it:
 * a step cancelled on a thousand nodes is not a thousand lines. fp_slurm_run_cancelled:
 * whether one came. */
void fp_slurm_run_cancellable(void);
int fp_slurm_run_cancelled(void);

/* With fp_slurm_run_cancellable: the moment the signal comes, the tasks' record file path
 * gets the record "X<128+signal>" unless it exists (written beside, linked in: from the
 * signal handler), so that tasks read a quiet end even when the step's SIGKILL takes the
 * runner before it writes its own (it reaches the runner, not always the tasks waiting in
 * task init). path is copied; NULL turns it off. */
void fp_slurm_run_cancel_record(const char *path);

/* The one line of a cancelled step ("fpull: NODE: what: the pull was cancelled ..."),
 * said whatever the silence, once; the caller says it on the step's first node only. */
void fp_slurm_say_cancelled(const char *what);

/* With fp_slurm_run_cancellable, on the step's first node: the signal of a cancel says
 * that line at once (the step's SIGKILL after srun's second Ctrl-C may come before the
 * runner's main flow would); NULL: no longer (the pull is over). */
void fp_slurm_run_cancel_say(const char *what);

/* Runs argv: stdout into out (when out is not NULL, bounded); stderr into log, or to
 * /dev/null (quiet), or ours, only the lines keep accepts (when given, with out).
 * Its exit code, or FPULL_EFAIL when it did not exit (FPULL_ENET after the deadline). */
int fp_slurm_run_to(char *const argv[], char *const envp[], struct fp_buf *out, int quiet,
                    const char *log, int (*keep)(const char *line));

/* The next fp_slurm_run_to's program gets these descriptors as 3, 4, ... (n at most 4),
 * as a runtime's --preserve-fds passes them on. */
void fp_slurm_run_preserve(const int *fds, int n);

/* NAME's path in the system's program directories (sbin and bin, local first) into buf,
 * or NULL when none has it. An absolute NAME is returned as it is. */
const char *fp_slurm_find_program(const char *name, char *buf, size_t len);

/* The last line of the log file at path (a program's stderr), for the one line the user
 * sees; "" when there is none. */
void fp_slurm_log_last_line(const char *path, char *out, size_t len);

/* From now, seconds (0: none) until the program running is killed and the deadline
 * counts as passed. */
void fp_slurm_run_deadline(unsigned seconds);
int fp_slurm_run_timed_out(void);
/* No deadline, and none passed: for what runs after a deadline was handled. */
void fp_slurm_run_deadline_clear(void);

#endif
