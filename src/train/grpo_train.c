/* grpo_train.c - the GRPO family trainer (grpo, rloo) on the run harness: open a trainer on a policy and a
 * reward environment, one step = rollout, advantages, update, log; `judgerl train`'s entry from a config */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grpo_internal.h"
#include "judgerl/dist.h"
#include "judgerl/ensemble.h"
#include "judgerl/fsutil.h"
#include "judgerl/judge.h"
#include "judgerl/reward.h"
#include "judgerl/train.h"

static void on_bad_line(void *ud, const char *msg) {
    FILE *f = ud;
    if (f) fprintf(f, "warning: %s (skipped)\n", msg);
}

/* Checks the options against the environment and the model; the reward weights (K + the overlong penalty). */
static jr_status check_setup(jr_grpo_trainer *g) {
    const jr_grpo_opts *o = &g->o;
    if (o->num_generations < 2 || o->prompts_per_step < 1 || o->max_prompt_length < 1 || o->max_completion_length < 1)
        return jr_fail(JR_EINVAL, "grpo options: num_generations=%d must be >= 2, prompts_per_step=%d, "
                                  "max_prompt_length=%d, max_completion_length=%d >= 1", o->num_generations,
                       o->prompts_per_step, o->max_prompt_length, o->max_completion_length);
    if (!(o->temperature > 0) || !(o->top_p > 0 && o->top_p <= 1) || o->num_iterations < 1)
        return jr_fail(JR_EINVAL, "grpo options: temperature=%g must be > 0, top_p=%g in (0, 1], num_iterations=%d "
                                  ">= 1", o->temperature, o->top_p, o->num_iterations);
    g->K = g->env->n_parts;
    if (g->o.n_reward_weights && g->o.n_reward_weights != g->K)
        return jr_fail(JR_EINVAL, "grpo.reward_weights has %d entries but the reward has %d components",
                       g->o.n_reward_weights, g->K);
    if (g->o.rloo && g->o.normalize_then_sum)
        return jr_fail(JR_EINVAL, "trainer.algo=rloo works on the summed reward: use "
                                  "grpo.multi_objective_aggregation=sum_then_normalize");
    if (g->o.length_control && g->o.normalize_then_sum)
        return jr_fail(JR_EINVAL, "grpo.length_control works on the summed reward: use "
                                  "grpo.multi_objective_aggregation=sum_then_normalize");
    if (g->o.async_generation && g->run.to.eval_every > 0)
        return jr_fail(JR_EUNSUPPORTED, "trainer.eval_every with grpo.async_generation: the evaluation would share "
                                        "the generator with the background rollout; turn one of them off");
    g->weights = jr_calloc((size_t)g->K + 1, sizeof *g->weights);
    if (!g->weights) return JR_ENOMEM;
    for (int k = 0; k < g->K; k++)
        g->weights[k] = (float)(g->o.n_reward_weights ? g->o.reward_weights[k] : g->env->part_weights[k]);
    g->weights[g->K] = (float)g->o.overlong_penalty_factor;
    g->T_max = g->max_prompt + g->max_comp;
    if (g->T_max + 1 > g->run.m.cfg.max_position_embeddings)
        return jr_fail(JR_EINVAL, "grpo.max_prompt_length + grpo.max_completion_length = %d exceeds the model's "
                                  "max_position_embeddings=%d - 1", g->T_max, g->run.m.cfg.max_position_embeddings);
    return JR_OK;
}

/* monitor.enabled: the alarms need held-out prompts evaluated every trainer.eval_every steps, and the
 * baseline is the harness's evaluation before the first step (trainer.eval_at_start, turned on here). */
static jr_status open_monitor(jr_grpo_trainer *g, const jr_monitor_opts *mo) {
    if (!jr_data_n_val(g->data))
        return jr_fail(JR_EINVAL, "monitor.enabled needs held-out prompts: set data.validation or data.validation_frac");
    if (g->run.to.eval_every < 1)
        return jr_fail(JR_EINVAL, "monitor.enabled watches the held-out evaluation: set trainer.eval_every >= 1");
    g->run.to.eval_at_start = 1;
    if (!mo->gold_reward && !mo->gold_field && mo->proxy_rise > 0 && g->progress && !g->run.rank)
        fprintf(g->progress, "monitor: no gold evaluator (monitor.gold_reward or monitor.gold_field): the proxy_gold alarm "
                             "is off; the drift alarms stay on\n");
    /* data-parallel: rank 0 alone evaluates and writes, so it alone opens monitor.jsonl (another rank's open
     * would remove or cut the file under rank 0's baseline) and the gold evaluator */
    if (g->run.rank) return JR_OK;
    return jr_monitor_open(&g->mon, mo, g->run.ro.out_dir, g->run.resumed ? g->run.ts.step : -1);
}

/* Everything after the run is open: data, reference and generation copies, generator, buffers. */
static jr_status open_parts(jr_grpo_trainer *g, const jr_grpo_setup *s) {
    jr_run *r = &g->run;
    jr_status st;
    if (!s->data.train) return jr_fail(JR_EINVAL, "data.train must name a JSONL file of prompts");
    if ((st = jr_data_open(&g->data, &s->data))) return st;
    if (r->resumed && (st = jr_data_seek(g->data, r->ts.data))) return st;
    if ((st = check_setup(g))) return st;
    if (g->o.beta > 0 && !r->use_lora) { /* the reference policy: the starting model, a second copy */
        if ((st = r->src.load(r->src.ud, &g->ref))) return st;
        g->has_ref = 1;
    }
    if (g->o.async_generation) { /* the generation weights: a second copy of the model, refreshed before each rollout */
        if ((st = r->src.load(r->src.ud, &g->gen_m))) return st;
        g->has_gen = 1;
        g->gen_m.compute = r->m.compute; /* generation computes as the trainer (bf16: bf16 weights) */
    }
    if ((st = jr_textgen_open_model(&g->tg, g->o.async_generation ? &g->gen_m : &r->m, r->to.tokenizer, g->P_global * g->G,
                                    g->T_max + 1)))
        return st;
    if (g->hooks.constraint) {
        if ((st = g->hooks.constraint(g->hooks.ud, &g->tg.vocab.tb, &g->cons))) return st;
    }
    double flops = jr_model_train_flops(&r->m, g->B, g->T_max) * ((g->P * g->G + g->B - 1) / g->B);
    if ((st = jr_run_start(r, flops, &g->tg.tok))) return st;
    jr_acts_opts ao = {JR_LOGIT_ROWS_AUTO, 1, r->to.checkpoint_activations};
    if ((st = jr_acts_init_opts(&g->acts, &r->m, g->B, g->T_max, &ao))) return st;
    g->adv = jr_calloc((size_t)g->P * g->G, sizeof *g->adv);
    g->active = jr_calloc((size_t)g->P * g->G, 1);
    g->ent = jr_malloc(sizeof(float) * (size_t)g->B * g->T_max);
    if (!g->adv || !g->active || !g->ent) return JR_ENOMEM;
    r->eval = (jr_run_eval){r->to.eval_every, 0, "eval/reward", jr_data_n_val(g->data) ? grpo_eval_reward : NULL, g};
    return s->monitor.enabled ? open_monitor(g, &s->monitor) : JR_OK;
}

/* Data-parallel (run.ranks > 1): rank r takes prompts [P r / N, P (r + 1) / N) of every generation batch, so a
 * whole group lives on one rank and its advantages need no communication; what needs the whole batch at
 * once is refused. */
static jr_status shard_prompts(jr_grpo_trainer *g) {
    const jr_grpo_opts *o = &g->o;
    int n = g->run.ranks, r = g->run.rank;
    const char *what = o->filter_groups ? "grpo.filter_groups (dynamic sampling)"
                       : o->normalize_then_sum ? "grpo.multi_objective_aggregation=normalize_then_sum (batch-wide normalisation)"
                       : o->scale_rewards == JR_SCALE_BATCH ? "grpo.scale_rewards=batch (batch-wide std)"
                       : o->shuffle_rewards ? "grpo.shuffle_rewards (a batch-wide permutation)"
                       : o->length_control ? "grpo.length_control (a batch-wide regression on length)" : NULL;
    if (what) return jr_fail(JR_EUNSUPPORTED, "%s does not run data-parallel yet: run it as one process", what);
    if (g->P_global < n)
        return jr_fail(JR_EINVAL, "grpo.prompts_per_step=%d is below the %d ranks: each rank takes whole groups", g->P_global,
                       n);
    /* bnpo's loss is a mean per micro-batch: the ranks' micro-batches must be one process's */
    for (int k = 1; k < n && o->loss_type == JR_LOSS_BNPO; k++)
        if ((long)g->P_global * k / n * g->G % g->B)
            return jr_fail(JR_EINVAL, "grpo.loss_type=bnpo over %d ranks: rank %d's samples start at %ld, not a multiple "
                                      "of trainer.batch_size=%d, so its micro-batches (the loss's means) would not be "
                                      "one process's: make prompts_per_step / ranks x num_generations a multiple of "
                                      "batch_size", n, k, (long)g->P_global * k / n * g->G, g->B);
    g->p0 = (int)((long)g->P_global * r / n);
    g->P = (int)((long)g->P_global * (r + 1) / n) - g->p0;
    g->gen_stop = NULL;
    if (r) g->progress = NULL; /* rank 0 alone prints */
    return JR_OK;
}

jr_status jr_grpo_open(jr_grpo_trainer **out, const jr_grpo_setup *s) {
    *out = NULL;
    if (!s->env || !s->env->ops) return jr_fail(JR_EINVAL, "GRPO: no reward environment (jr_grpo_setup.env)");
    jr_grpo_trainer *g = jr_calloc(1, sizeof *g);
    if (!g) return JR_ENOMEM;
    g->o = s->grpo;
    g->hooks = s->hooks;
    g->env = s->env;
    g->progress = s->progress;
    g->stop = s->stop;
    g->G = g->o.num_generations;
    g->P = g->o.prompts_per_step;
    g->B = s->trainer.batch_size;
    g->mu = g->o.num_iterations > 0 ? g->o.num_iterations : 1;
    g->max_prompt = g->o.max_prompt_length;
    g->max_comp = g->o.max_completion_length;
    g->eps_high = g->o.epsilon_high < 0 ? g->o.epsilon : g->o.epsilon_high;
    jr_status st = jr_run_open(&g->run, &s->run, &s->trainer, &s->lora, &s->policy, 0x6772706fULL, s->progress, s->stop);
    g->P_global = g->P;
    g->gen_stop = s->stop;
    if (!st && g->run.ranks > 1) st = shard_prompts(g);
    if (!st) st = open_parts(g, s);
    if (st) return jr_grpo_close(g, st);
    *out = g;
    return JR_OK;
}

/* Per-component mean and std of the rollout's scored values (over every rank's samples). */
static jr_status log_components(jr_grpo_trainer *g) {
    const grpo_rollout *ro = &g->ro;
    double *v = jr_calloc(3 * (size_t)g->K + 1, sizeof *v);
    if (!v) return JR_ENOMEM;
    for (int k = 0; k < g->K; k++)
        for (int i = 0; i < ro->n; i++)
            if (ro->s[i].vals && ro->s[i].vscored[k]) {
                v[3 * k] += ro->s[i].vals[k];
                v[3 * k + 1] += ro->s[i].vals[k] * ro->s[i].vals[k];
                v[3 * k + 2] += 1;
            }
    jr_status st = jr_dist_sum_f64(v, 3 * (size_t)g->K, "the reward components");
    for (int k = 0; k < g->K && !st; k++) {
        double s1 = v[3 * k], s2 = v[3 * k + 1];
        int m = (int)v[3 * k + 2];
        char key[160];
        double mean = m ? s1 / m : 0;
        snprintf(key, sizeof key, "rewards/%s/mean", g->env->part_names[k]);
        jr_runlog_add(g->run.rl, key, mean);
        snprintf(key, sizeof key, "rewards/%s/std", g->env->part_names[k]);
        jr_runlog_add(g->run.rl, key, m > 1 ? sqrt(fmax(0, (s2 - m * mean * mean) / (m - 1))) : 0);
    }
    free(v);
    return st;
}

/* Timings and judge statistics of the step. */
static void log_timing(jr_grpo_trainer *g, double t_end) {
    jr_runlog *rl = g->run.rl;
    const grpo_rollout_stats *rs = &g->rs;
    jr_runlog_add(rl, "tokens_per_s", t_end > g->t0 ? (double)rs->gen_tokens * g->fresh / (t_end - g->t0) : 0);
    if (g->fresh) {
        jr_runlog_add(rl, "gen_batches", rs->gen_batches);
        jr_runlog_add(rl, "time/generate", rs->t_gen);
        jr_runlog_add(rl, "time/judge_wait", rs->t_judge_wait);
        jr_runlog_add(rl, "time/reference", g->t_ref);
        jr_runlog_add(rl, "time/rollout_wait", g->t_wait);
        if (rs->t_judge_span > 0) jr_runlog_add(rl, "judge/hidden_frac", fmax(0, 1 - rs->t_judge_wait / rs->t_judge_span));
    }
    jr_runlog_add(rl, "time/update", g->t_update);
    if (g->judge) {
        jr_runlog_add(rl, "judge/latency_p50", rs->lat_p50);
        jr_runlog_add(rl, "judge/latency_p95", rs->lat_p95);
        jr_runlog_add(rl, "judge/cache_hit_rate", rs->cache_lookups ? (double)rs->cache_hits / rs->cache_lookups : 0);
    }
}

/* Prints the sample table and appends the rows to run_dir/samples.jsonl. */
static void log_samples(jr_grpo_trainer *g, int64_t step) {
    const grpo_rollout *r = &g->ro;
    int n = g->o.log_completions_n < r->n ? g->o.log_completions_n : r->n;
    char *path = jr_path_join(g->run.ro.out_dir, "samples.jsonl");
    jr_jsonl_writer *w = NULL;
    if (path) jr_jsonl_writer_open(&w, path, 0);
    if (g->progress) fprintf(g->progress, "\nstep %lld samples:\n  %-8s %-8s %-28s %s\n", (long long)step, "reward", "adv", "prompt", "completion");
    for (int i = 0; i < n; i++) {
        const grpo_sample *s = &r->s[i];
        const char *pt = r->p[s->group].prompt_text;
        if (g->progress) {
            char rb[32];
            if (s->scored) snprintf(rb, sizeof rb, "%.3f", s->reward);
            else snprintf(rb, sizeof rb, "unscored");
            fprintf(g->progress, "  %-8s %-8.3f %-28.28s %.60s\n", rb, g->adv[i], pt, s->text);
        }
        if (!w) continue;
        json_t *o = json_object(), *comps = json_object();
        json_object_set_new(o, "step", json_integer(step));
        json_object_set_new(o, "prompt", json_string(pt));
        json_object_set_new(o, "completion", json_stringn(s->text, s->text_len));
        json_object_set_new(o, "reward", s->scored ? json_real(s->reward) : json_null());
        if (!s->scored && s->reason) json_object_set_new(o, "reason", json_string(s->reason));
        json_object_set_new(o, "advantage", json_real(g->adv[i]));
        for (int k = 0; k < g->K && s->vals; k++)
            json_object_set_new(comps, g->env->part_names[k], s->vscored[k] ? json_real(s->vals[k]) : json_null());
        json_object_set_new(o, "components", comps);
        jr_jsonl_writer_append(w, o);
        json_decref(o);
    }
    jr_jsonl_writer_close(w);
    free(path);
}

jr_status jr_grpo_log(jr_grpo_trainer *g, int64_t step) {
    jr_runlog *rl = g->run.rl;
    const grpo_rollout *ro = &g->ro;
    const grpo_update_stats *us = &g->us;
    int64_t done = step + 1;
    if (g->fresh && g->o.log_completions_every > 0 && done % g->o.log_completions_every == 0 && !g->run.rank)
        log_samples(g, done); /* rank 0's samples */
    double unscored = g->rs.n_generated ? (double)g->rs.n_unscored / g->rs.n_generated : 0;
    jr_progress_field(g->run.bar, "unscored", "%.2f", unscored);
    if (!g->run.log_now) return JR_OK;
    jr_runlog_add(rl, "reward", g->as.reward_mean);
    jr_runlog_add(rl, "reward_std", g->as.reward_std);
    if (g->o.length_control) jr_runlog_add(rl, "length_control/slope", g->lc_slope);
    jr_status st = log_components(g);
    if (st) return st;
    double len[3] = {0, 0, 0}, len_max = 0; /* length sum, truncated, samples */
    for (int i = 0; i < ro->n; i++) {
        len[0] += ro->s[i].n;
        if (ro->s[i].n > len_max) len_max = ro->s[i].n;
        len[1] += ro->s[i].truncated;
    }
    len[2] = ro->n;
    if ((st = jr_dist_sum_f64(len, 3, "the completion lengths")) || (st = jr_dist_max_f64(&len_max, 1, "the longest completion")))
        return st;
    double len_sum = len[0], trunc = len[1], n_all = len[2];
    jr_runlog_add(rl, "unscored_frac", unscored);
    jr_runlog_add(rl, "frac_reward_zero_std", g->as.frac_zero_std);
    jr_runlog_add(rl, "groups_used", g->as.groups_used);
    jr_runlog_add(rl, "loss", us->loss);
    jr_runlog_add(rl, "kl", us->kl);
    jr_runlog_add(rl, "clip_ratio/low_mean", us->clip_low);
    jr_runlog_add(rl, "clip_ratio/high_mean", us->clip_high);
    jr_runlog_add(rl, "clip_ratio/region_mean", us->clip_region);
    jr_runlog_add(rl, "entropy", us->entropy);
    jr_runlog_add(rl, "completions/mean_length", n_all ? len_sum / n_all : 0);
    jr_runlog_add(rl, "completions/max_length", len_max);
    jr_runlog_add(rl, "completions/clipped_ratio", n_all ? trunc / n_all : 0);
    jr_runlog_add(rl, "grad_norm", us->gnorm);
    log_timing(g, jr_now_s());
    return g->hooks.log ? g->hooks.log(g->hooks.ud, rl, step) : JR_OK;
}

jr_status jr_grpo_rollout(jr_grpo_trainer *g, int64_t step) {
    grpo_rollout_free(&g->ro);
    grpo_micro_free(g->mb, g->n_mb);
    g->mb = NULL;
    g->n_mb = 0;
    double t0 = jr_now_s();
    jr_status st;
    if (g->o.async_generation) {
        if (!g->th_running && (st = grpo_launch_rollout(g, step))) return st;
        st = grpo_join_rollout(g, &g->ro, &g->rs);
    } else {
        st = grpo_do_rollout(g, &g->ro, step, &g->rs);
    }
    g->t_wait = jr_now_s() - t0;
    if (st) return st;
    g->run.ts.data = g->rs.data_after;
    if (g->run.ranks > 1) { /* the unscored share and the stop rule are the whole batch's */
        double v[3] = {g->rs.n_generated, g->rs.n_unscored, (double)g->rs.gen_tokens};
        if ((st = jr_dist_sum_f64(v, 3, "the rollout counts"))) return st;
        g->rs.n_generated = (int)v[0];
        g->rs.n_unscored = (int)v[1];
        g->rs.gen_tokens = (long)v[2];
    }
    double unscored = g->rs.n_generated ? (double)g->rs.n_unscored / g->rs.n_generated : 0;
    if (unscored > g->o.max_unscored_frac) /* stop cleanly with a checkpoint of the state before this step */
        return jr_run_stop_unscored(&g->run, &g->prev, step, g->rs.n_unscored, g->rs.n_generated, "samples unscored",
                                    g->o.max_unscored_frac);
    return JR_OK;
}

/* Data-parallel: the advantage statistics of the whole batch from every rank's groups. */
static jr_status reduce_adv_stats(jr_grpo_trainer *g) {
    jr_adv_stats *a = &g->as;
    double s1 = 0, s2 = 0;
    for (int i = 0; i < g->ro.n; i++)
        if (g->ro.s[i].scored) { s1 += g->ro.s[i].reward; s2 += g->ro.s[i].reward * g->ro.s[i].reward; }
    double v[7] = {a->groups, a->groups_used, a->scored, a->unscored, s1, s2, a->frac_zero_std * a->groups_used};
    jr_status st = jr_dist_sum_f64(v, 7, "the advantage statistics");
    if (st) return st;
    a->groups = (int)v[0];
    a->groups_used = (int)v[1];
    a->scored = (int)v[2];
    a->unscored = (int)v[3];
    a->reward_mean = a->scored ? v[4] / a->scored : 0;
    a->reward_std = a->scored > 1 ? sqrt(fmax(0, (v[5] - a->scored * a->reward_mean * a->reward_mean) / (a->scored - 1))) : 0;
    a->frac_zero_std = a->groups_used ? v[6] / a->groups_used : 0;
    return JR_OK;
}

jr_status jr_grpo_advantages_step(jr_grpo_trainer *g, int64_t step) {
    jr_status st = grpo_compute_advantages(g);
    if (!st && g->run.ranks > 1) st = reduce_adv_stats(g);
    if (!st) st = grpo_build_micro(g);
    if (!st) st = grpo_old_and_ref(g, step);
    return st;
}

jr_status jr_grpo_update(jr_grpo_trainer *g, double lr) {
    double t0 = jr_now_s();
    jr_status st = grpo_policy_step(g, lr);
    g->run.ts.tokens += (int64_t)g->us.tokens;
    g->t_update = jr_now_s() - t0;
    return st;
}

/* The harness's step: a new generation batch every num_iterations steps, then the update and the log. */
static jr_status grpo_step(void *ud, jr_run *r, int64_t step, double *loss, int *boundary) {
    jr_grpo_trainer *g = ud;
    jr_status st;
    g->t0 = jr_now_s();
    g->fresh = step % g->mu == 0 || !g->ro.s;
    g->t_ref = 0;
    g->prev = r->ts;
    if (g->fresh && ((st = jr_grpo_rollout(g, step)) || (st = jr_grpo_advantages_step(g, step)))) return st;
    if ((st = jr_grpo_update(g, jr_schedule_lr(&r->sch, step)))) return st;
    *loss = g->as.reward_mean;
    /* checkpoints only at generation boundaries: a resumed run then regenerates nothing it needs */
    *boundary = (step + 1) % g->mu == 0;
    return jr_grpo_log(g, step);
}

static const char *algo_name(const jr_grpo_trainer *g) { return g->o.rloo ? "rloo" : "grpo"; }

jr_status jr_grpo_step(jr_grpo_trainer *g) {
    jr_run_algo algo = {algo_name(g), grpo_step, g, "reward"};
    return jr_run_step(&g->run, &algo);
}

int jr_grpo_done(const jr_grpo_trainer *g) { return g->run.ts.step >= g->run.to.steps; }
double jr_grpo_reward_mean(const jr_grpo_trainer *g) { return g->ro.s ? g->as.reward_mean : NAN; }
jr_run *jr_grpo_run_of(jr_grpo_trainer *g) { return &g->run; }

jr_status jr_grpo_close(jr_grpo_trainer *g, jr_status st) {
    if (!g) return st;
    if (g->th_running) {
        pthread_join(g->th, NULL);
        g->th_running = 0;
    }
    jr_monitor_close(g->mon);
    grpo_rollout_free(&g->pend);
    grpo_rollout_free(&g->ro);
    grpo_micro_free(g->mb, g->n_mb);
    free(g->adv);
    free(g->active);
    if (g->has_gen) jr_model_free(&g->gen_m);
    jr_acts_free(&g->acts);
    free(g->ent);
    jr_textgen_close(&g->tg);
    jr_constraint_free(g->cons);
    jr_data_close(g->data);
    if (g->has_ref) jr_model_free(&g->ref);
    free(g->weights);
    st = jr_run_close(&g->run, st);
    free(g);
    return st;
}

jr_status jr_grpo_setup_defaults(jr_grpo_setup *s) {
    static const jr_cfg_field *const tables[] = {jr_run_cfg, jr_data_cfg, jr_model_cfg, jr_trainer_cfg, jr_grpo_cfg,
                                                 jr_judge_cfg, NULL};
    char *const algo[] = {"trainer.algo=grpo"};
    jr_config c;
    memset(s, 0, sizeof *s);
    jr_status st = jr_config_load_string(&c, "", "<defaults>", 1, algo, tables);
    if (st) return st;
    jr_run_opts_from_config(&s->run, &c);
    jr_trainer_opts_from_config(&s->trainer, &c);
    jr_lora_opts_from_config(&s->lora, &c);
    jr_data_opts_from_config(&s->data, &c);
    st = jr_grpo_opts_from_config(&s->grpo, &c);
    /* nothing may point into the config freed below: the strings become static ones or NULL */
    s->run.out_dir = NULL;
    s->trainer.algo = "grpo";
    s->lora.target_modules = "all"; /* the default q,k,v,o,gate,up,down */
    s->data.train = s->data.validation = NULL;
    jr_config_free(&c);
    return st;
}

/* `judgerl train` with trainer.algo grpo | rloo: the options, the reward registry as the environment. */
jr_status jr_grpo_setup_from_config(jr_grpo_setup *s, const jr_config *c, FILE *progress, volatile sig_atomic_t *stop) {
    memset(s, 0, sizeof *s);
    jr_run_opts_from_config(&s->run, c);
    jr_trainer_opts_from_config(&s->trainer, c);
    jr_lora_opts_from_config(&s->lora, c);
    jr_data_opts_from_config(&s->data, c);
    jr_model_source_opts_from_config(&s->policy, c);
    s->progress = progress;
    s->stop = stop;
    jr_status st = jr_grpo_opts_from_config(&s->grpo, c);
    return st ? st : jr_monitor_opts_from_config(&s->monitor, c);
}

jr_status jr_grpo_run(const jr_config *c, FILE *progress, volatile sig_atomic_t *stop, jr_train_result *res) {
    memset(res, 0, sizeof *res);
    res->last_val_loss = NAN;
    jr_grpo_setup s;
    jr_status st = jr_grpo_setup_from_config(&s, c, progress, stop);
    s.data.on_bad = on_bad_line;
    s.data.ud = progress;
    if (!st && !s.data.train) st = jr_fail(JR_EINVAL, "%s: data.train must name a JSONL file of prompts", c->source);
    jr_reward *rw = NULL;
    jr_ensemble *ens = NULL;
    jr_ensemble_opts eo;
    jr_env env = {0};
    size_t cap = (size_t)s.grpo.prompts_per_step * s.grpo.num_generations;
    if (!st) st = jr_ensemble_opts_from_config(&eo, c);
    if (!st && eo.n) { /* a judge ensemble replaces reward.components */
        st = jr_ensemble_open(&ens, &eo);
        if (!st && s.grpo.normalize_then_sum)
            st = jr_fail(JR_EINVAL, "%s: ensemble.judges combines its members itself: use "
                                    "grpo.multi_objective_aggregation=sum_then_normalize", c->source);
        if (!st) st = jr_env_from_ensemble(&env, ens, cap);
    } else {
        if (!st) st = jr_reward_open(&rw, c);
        if (!st) st = jr_env_from_reward(&env, rw, cap);
    }
    s.env = &env;
    jr_grpo_trainer *g = NULL;
    if (!st) st = jr_grpo_open(&g, &s);
    if (g && rw) g->judge = jr_reward_judge(rw);
    /* once, beside the progress bar (a terminal only: errors stay one line): what each server is */
    for (int e = 0; g && g->judge && progress && isatty(fileno(progress)) && e < jr_judge_n_endpoints(g->judge); e++)
        fprintf(progress, "judge %s\n", jr_judge_endpoint_info(g->judge, e));
    if (!st) {
        jr_run_algo algo = {algo_name(g), grpo_step, g, "reward"};
        st = jr_run_loop(&g->run, &algo);
    }
    if (g) jr_run_result(&g->run, res);
    st = jr_grpo_close(g, st);
    jr_env_close(&env);
    jr_reward_close(rw);
    jr_ensemble_close(ens);
    return st;
}
