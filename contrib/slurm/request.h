/* fpull Slurm plugin: the step's request, handed from slurmstepd to the runner program
 * (runner.c) over a pipe, as "KEY=VALUE\0" records: the runner is a program of its own,
 * exec'd as the job's user, not a copy of slurmstepd (nothing of slurmstepd's memory is
 * readable through it). */
#ifndef FPULL_SLURM_REQUEST_H
#define FPULL_SLURM_REQUEST_H

#include <fpull/error.h>

#include "container.h"
#include "base/util.h"

/* The most a request may take (it is written into a pipe before the runner starts). */
#define FP_SLURM_REQUEST_MAX 60000u

/* r (with its settings' arguments) as records into out; -1 when it exceeds the maximum. */
int fp_slurm_request_pack(struct fp_buf *out, const struct fp_slurm_request *r);

/* Parses records into r and s (which own nothing of their own: strings point into data,
 * which must outlive them; s is parsed from the settings' arguments as the plugin did). */
int fp_slurm_request_unpack(struct fp_slurm_request *r, struct fp_slurm_settings *s, char *data,
                            size_t len, fpull_err *err);

#endif
