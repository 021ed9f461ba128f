/* study.h - `judgerl study`: one GRPO config trained against several judges with the same seeds and a gold
 * evaluator; per judge the proxy and gold per step, their divergence, the policy's drift, the alarms and the
 * judge's probe results, side by side (docs/MONITOR.md) */
#ifndef JUDGERL_STUDY_H
#define JUDGERL_STUDY_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "judgerl/config.h"
#include "judgerl/status.h"

/* study.*: jr_study_cfg documents each key. */
extern const jr_cfg_field jr_study_cfg[];

#define JR_STUDY_MAX 32

typedef struct jr_study_judge {
    const char *name;                 /* a directory name: letters, digits, '-', '_', '.' */
    int n_set;
    const char *set[JR_STUDY_MAX];    /* key=value overrides of this judge (its endpoints, protocol, ...) */
} jr_study_judge;

typedef struct jr_study_opts {
    const char *train;                /* the GRPO config every run starts from */
    const char *out_dir;
    const char *probe_data;           /* rows for `judgerl probe` per judge (NULL: no probes) */
    int n_seeds;
    int64_t seeds[JR_STUDY_MAX];
    int n_set;
    const char *set[JR_STUDY_MAX];    /* key=value overrides of every run (the gold evaluator, monitor.*) */
    int n_judges;
    jr_study_judge judges[JR_STUDY_MAX];
} jr_study_opts;

/* Fills o from a config loaded with jr_study_cfg (strings borrow c). Fails naming the key on a bad judge
 * name, a duplicate, or more than JR_STUDY_MAX entries. */
jr_status jr_study_opts_from_config(jr_study_opts *o, const jr_config *c);

/* Runs the study: for each judge and seed a GRPO run in OUT/JUDGE/seed-S with monitor.enabled (resumed
 * when a run there was interrupted, reused when finished), then the judge's probes (OUT/JUDGE/probe.json).
 * Writes OUT/study.json (the figures) and OUT/study.html (the report). A run stopped by monitor.stop is
 * recorded as such, not an error. *out (may be NULL) gets the study.json object. Fails before training
 * when a run's config has no gold evaluator (monitor.gold_reward or monitor.gold_field). */
jr_status jr_study_run(const jr_study_opts *o, FILE *progress, volatile sig_atomic_t *stop, json_t **out);

/* Builds the study.json object from the run directories already under o->out_dir (no training). */
jr_status jr_study_collect(const jr_study_opts *o, json_t **out);

#endif
