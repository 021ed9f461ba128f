/* runlog.h - a run's logs in one place: metrics.jsonl and a TensorBoard event file in the run directory */
#ifndef JUDGERL_RUNLOG_H
#define JUDGERL_RUNLOG_H

#include <stdint.h>

#include "judgerl/metrics.h"
#include "judgerl/status.h"
#include "judgerl/tensorboard.h"

typedef struct jr_runlog jr_runlog;

/* Opens run_dir/metrics.jsonl for appending and, when tensorboard is nonzero, a new event file in
 * run_dir. resume_step is the step of the checkpoint the run continues from, -1 when it starts from
 * the beginning. A resumed run (resume_step >= 0, or a metrics.jsonl an earlier attempt left, as
 * when a run killed before its first checkpoint is resumed) first drops the rows with step >
 * resume_step from metrics.jsonl and samples.jsonl (every row for -1: the run writes them again,
 * the step-0 evaluation included), and its event file starts with a session START at
 * resume_step + 1, so TensorBoard drops the old file's later steps. Creates run_dir. On error *rl
 * is NULL. */
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
