/* grade.h - grading a JSONL file (`judgerl grade`): each row scored by the reward registry, or by
 * the judge alone; every finished row appended and fsynced, so a rerun resumes after any kill */
#ifndef JUDGERL_GRADE_H
#define JUDGERL_GRADE_H

#include <signal.h>
#include <stdio.h>

#include "judgerl/reward.h"
#include "judgerl/status.h"

typedef struct jr_grade_opts {
    /* What scores a row: reward->components through the reward registry (docs/PROTOCOLS.md), or,
     * with no component, the judge of reward->judge (judge.protocol, docs/JUDGE.md). Borrowed. */
    const jr_reward_opts *reward;
    int retry_unscored;          /* 1 (init): rows an earlier run left unscored are graded again */
    FILE *log;                   /* the judges used and each unscored row, one line each; NULL: silent */
    const char *log_prefix;      /* starts each log line ("judgerl grade" from init) */
    FILE *progress;              /* a progress bar while the judge grades; NULL: none */
    volatile sig_atomic_t *stop; /* when set (a signal handler): stop after the rows in flight; may be NULL */
} jr_grade_opts;

/* Defaults: retry_unscored 1, no log, no progress, no stop flag; reward must be set. */
void jr_grade_opts_init(jr_grade_opts *o, const jr_reward_opts *reward);

/* Grades the JSONL rows {id, prompt, response, ...} of in_path into out_path. Each output row is
 * the input row's fields with the grade's fields set over them; rows are appended (one write each,
 * fdatasync per batch) as they finish. Rows whose id out_path already holds are skipped (a torn
 * last line is cut first; with retry_unscored, unscored rows are dropped and graded again), so a
 * rerun after a kill writes each row exactly once. A complete run then rewrites out_path atomically
 * in the input's order. On success *summary is a one-line JSON summary (caller frees). Fails
 * (*summary NULL) on a bad input row (naming the file and line), a write error, a configuration
 * error of the judge (no row is written for it), more than judge.max_unscored_frac of the rows
 * unscored, or *o->stop (JR_ECANCELED); what was written stays, and the message says to rerun.
 * The judge's default cache (judge.cache: true) is judge_cache.sqlite beside out_path unless
 * reward->judge.cache_dir is set. */
jr_status jr_grade_file(const jr_grade_opts *o, const char *in_path, const char *out_path, char **summary);

#endif
