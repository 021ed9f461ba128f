/* runlog.h - a run's logs in one place: metrics.jsonl and a TensorBoard event file in the run directory */
#ifndef JUDGERL_RUNLOG_H
#define JUDGERL_RUNLOG_H

#include <stdint.h>

#include "judgerl/metrics.h"
#include "judgerl/status.h"
#include "judgerl/tensorboard.h"

typedef struct jr_runlog jr_runlog;

/* Opens run_dir/metrics.jsonl (jr_metrics_open with resume_step: -1 for a fresh run) and, when
 * tensorboard is nonzero, a new event file in run_dir (on resume starting with a session START at
 * resume_step + 1, so TensorBoard drops the old file's later steps). resume_step >= 0 also cuts
 * run_dir/samples.jsonl back to that step. Creates run_dir. On error *rl is NULL. */
jr_status jr_runlog_open(jr_runlog **rl, const char *run_dir, int64_t resume_step, int tensorboard);

/* Adds a named scalar to the step being built (the name is copied; a repeated name replaces the value).
 * rl NULL (the ranks other than 0 of a data-parallel run): nothing, JR_OK; the same for commit. */
jr_status jr_runlog_add(jr_runlog *rl, const char *name, double value);

/* Writes the scalars added since the last commit as one metrics.jsonl row and one TensorBoard event
 * for `step`, then clears them. Nothing added: nothing written. */
jr_status jr_runlog_commit(jr_runlog *rl, int64_t step);

/* Closes both files (fsynced); frees rl in every case. NULL is fine. */
jr_status jr_runlog_close(jr_runlog *rl);

#endif
