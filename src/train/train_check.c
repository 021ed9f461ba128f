/* train_check.c - what `judgerl train` would refuse, found before anything runs (train.h
 * jr_train_check): `judgerl config` runs the same checks, so it never says ok to a config train rejects */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "judgerl/dist.h"
#include "judgerl/dataset.h"
#include "judgerl/ensemble.h"
#include "judgerl/judge.h"
#include "judgerl/monitor.h"
#include "judgerl/probe.h"
#include "judgerl/protocols.h"
#include "judgerl/reward_service.h"
#include "judgerl/sandbox.h"
#include "judgerl/tokenizer.h"
#include "judgerl/wf_executor.h"
#include "judgerl/wf_train.h"
#include "judgerl/wfrl.h"
#include "judgerl/workflow.h"
#include "judgerl/fsutil.h"
#include "judgerl/grpo_trainer.h"
#include "judgerl/lora.h"
#include "judgerl/model.h"
#include "judgerl/reward.h"
#include "judgerl/run.h"
#include "judgerl/train.h"

static int is_file(const char *p) {
    struct stat sb;
    return p && stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

static int is_dir(const char *p) {
    struct stat sb;
    return p && stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* A file option that must name an existing regular file. */
static jr_status need_file(const jr_config *c, const char *key, const char *p, const char *what) {
    if (is_file(p)) return JR_OK;
    return jr_fail(JR_ENOTFOUND, "%s: %s=%s: %s", c->source, key, p, is_dir(p) ? "is a directory, expected a file" : what);
}

/* A judge ensemble (ensemble.judges) replaces reward.components in GRPO / RLOO: its files must exist
 * (jr_ensemble_open checks what is in them); another algorithm would ignore it. */
static jr_status check_ensemble(const jr_config *c, const jr_ensemble_opts *eo, int grpo) {
    if (!grpo)
        return jr_fail(JR_EINVAL, "%s: ensemble.judges is a reward for trainer.algo grpo or rloo: this algorithm "
                                  "would ignore it (remove ensemble.judges)", c->source);
    for (int i = 0; i < eo->n; i++) {
        char key[32];
        snprintf(key, sizeof key, "ensemble.judges[%d]", i);
        jr_status st = need_file(c, key, eo->files[i], "no such file");
        if (st) return st;
    }
    return JR_OK;
}

/* The reward side of GRPO / RLOO / distill: components, functions, judge endpoints and weights, or the
 * judge ensemble that replaces them. */
static jr_status check_reward(const jr_config *c, int grpo) {
    jr_ensemble_opts eo;
    jr_status st = jr_ensemble_opts_from_config(&eo, c);
    if (st || eo.n) return st ? st : check_ensemble(c, &eo, grpo);
    jr_reward_opts ro;
    st = jr_reward_opts_from_config(&ro, c);
    if (st) return st;
    if (!ro.n_components)
        return jr_fail(JR_EINVAL, "%s: reward.components is empty: list at least one {fn, weight}", c->source);
    int judged = 0;
    for (int i = 0; i < ro.n_components; i++) {
        const jr_reward_component_opts *k = &ro.components[i];
        if (!jr_reward_fn_find(k->fn))
            return jr_fail(JR_EINVAL, "%s: reward.components.%d.fn: unknown reward function '%s'", c->source, i,
                           k->fn ? k->fn : "");
        const jr_reward_fn *fn = jr_reward_fn_find(k->fn);
        if (fn->check && (st = fn->check(k->params))) return jr_fail_ctx(st, "%s: reward.components.%d (%s)", c->source, i, k->fn);
        judged |= fn->protocol != NULL;
    }
    if (judged && (st = jr_judge_opts_check(&ro.judge, c->source))) return st;
    if (grpo) {
        jr_grpo_opts go;
        if ((st = jr_grpo_opts_from_config(&go, c))) return st;
        if (go.n_reward_weights && go.n_reward_weights != ro.n_components)
            return jr_fail(JR_EINVAL, "%s: grpo.reward_weights has %d entries but reward.components has %d",
                           c->source, go.n_reward_weights, ro.n_components);
    }
    return JR_OK;
}

jr_status jr_train_check(const jr_config *c) {
    jr_trainer_opts to;
    jr_run_opts ro;
    jr_lora_opts lo;
    jr_data_opts d;
    jr_trainer_opts_from_config(&to, c);
    jr_run_opts_from_config(&ro, c);
    jr_lora_opts_from_config(&lo, c);
    jr_status st = jr_data_opts_from_config(&d, c);
    if (st) return st;
    const char *algo = to.algo;
    int grpo = !strcmp(algo, "grpo") || !strcmp(algo, "rloo"), distill = !strcmp(algo, "distill");
    if (!grpo && !distill && strcmp(algo, "sft"))
        return jr_fail(JR_EUNSUPPORTED, "%s: trainer.algo=%s is not implemented (available: sft, grpo, rloo, distill)",
                       c->source, algo);
    if (!d.train) return jr_fail(JR_EINVAL, "%s: data.train must name a JSONL file of %s", c->source,
                                 grpo || distill ? "prompts" : "SFT rows");
    if ((st = need_file(c, "data.train", d.train, "no such file"))) return st;
    if (d.validation && (st = need_file(c, "data.validation", d.validation, "no such file"))) return st;
    jr_model_opts mo;
    if ((st = jr_model_opts_from_config(&mo, c))) return st;
    const char *mp = mo.path, *mi = mo.init;
    if ((mp != NULL) == (mi != NULL)) /* jr_model_open's words */
        return jr_fail(JR_EINVAL, "%s: set exactly one of model.path (an HF directory) and model.init (a config.json "
                                  "for a random model)", c->source);
    if (mi && (st = need_file(c, "model.init", mi, "no such file"))) return st;
    if (mp) {
        char *cj = jr_path_join(mp, "config.json"), *ac = jr_path_join(mp, "adapter_config.json");
        int ok = is_file(cj), adapter = is_file(ac);
        free(cj);
        free(ac);
        if (!ok)
            return jr_fail(JR_ENOTFOUND, "%s: model.path=%s: %s", c->source, mp,
                           adapter ? "holds a LoRA adapter, not a model: merge it first (judgerl merge)"
                                   : "not a model directory (no config.json)");
    }
    if (to.tokenizer && strcmp(to.tokenizer, "byte") && !is_file(to.tokenizer) && !is_dir(to.tokenizer))
        return jr_fail(JR_ENOTFOUND, "%s: trainer.tokenizer=%s: no such file or directory", c->source, to.tokenizer);
    unsigned bits;
    if (lo.enabled && jr_lora_parse_targets(lo.target_modules, &bits)) return jr_fail_ctx(JR_EINVAL, "lora.target_modules");
    if ((grpo || distill) && (st = check_reward(c, grpo))) return st;
    /* the run-directory rule is rank 0's (it writes there first; another rank would find it used) */
    return jr_dist_rank() ? JR_OK : jr_run_dir_prepare(&ro, to.resume, 1);
}

/* Every library module's table: training's (JR_TRAIN_TABLE_LIST) and the others'. */
const jr_cfg_field *const jr_all_cfg_tables[] = {
    JR_TRAIN_TABLE_LIST, jr_workflow_cfg, jr_wf_exec_cfg, jr_probe_cfg, jr_reward_service_cfg, jr_wf_env_cfg,
    jr_wf_buffer_cfg, jr_wf_train_cfg, NULL,
};

jr_status jr_config_check(const jr_config *c) {
    /* a training config (data.train set): the checks `judgerl train` runs before it starts */
    if (jr_cfg_str(c, "data.train")) return jr_train_check(c);
    /* a judge config (endpoints listed): what opening the judge in `grade` would refuse */
    jr_reward_opts ro;
    jr_status st = jr_reward_opts_from_config(&ro, c);
    if (!st && ro.judge.n_endpoints > 0) st = jr_judge_opts_check(&ro.judge, c->source);
    return st;
}
