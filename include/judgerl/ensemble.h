/* ensemble.h - a judge ensemble as a reward environment: every sample is scored by several reward
 * configs (each its own judge endpoint + protocol), the rewards combined by mean or majority vote
 * (docs/MONITOR.md, "Mitigations") */
#ifndef JUDGERL_ENSEMBLE_H
#define JUDGERL_ENSEMBLE_H

#include <stddef.h>

#include "judgerl/config.h"
#include "judgerl/env.h"
#include "judgerl/status.h"

/* ensemble.*: jr_ensemble_cfg documents each key. */
extern const jr_cfg_field jr_ensemble_cfg[];

#define JR_ENSEMBLE_MAX 16

typedef struct jr_ensemble_opts {
    int n;                                /* 0: no ensemble (reward.components as usual) */
    const char *files[JR_ENSEMBLE_MAX];   /* YAML files with judge.* and reward.components */
    int majority;                         /* 1: majority vote of reward >= vote_threshold; 0: mean */
    double vote_threshold;
} jr_ensemble_opts;

/* Fills o from ensemble.* (n = 0 when the config was loaded without jr_ensemble_cfg). Fails naming the
 * key with more than JR_ENSEMBLE_MAX files or one file. Strings borrow c. */
jr_status jr_ensemble_opts_from_config(jr_ensemble_opts *o, const jr_config *c);

typedef struct jr_ensemble jr_ensemble;

/* Loads each file and opens its reward registry (and judge client). On error *e is NULL and the
 * message names the file. */
jr_status jr_ensemble_open(jr_ensemble **e, const jr_ensemble_opts *o);
void jr_ensemble_close(jr_ensemble *e); /* NULL is fine */

/* The ensemble as an environment (sample ids < cap): component "ensemble" (weight 1) is the combined
 * reward, the mean of the scored members or their majority vote (1 when more than half of the scored
 * members vote reward >= vote_threshold, 0.5 on a tie, else 0); then one component per member (named
 * by its file's stem, weight 0: logged, not trained on); unscored only when every member is.
 * Each sample's calls go to every member at submit. The ensemble outlives the environment. */
jr_status jr_env_from_ensemble(jr_env *env, jr_ensemble *e, size_t cap);

#endif
