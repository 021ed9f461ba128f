/* grpo_update.c - GRPO's update: rewards -> advantages (GRPO, RLOO, normalize-then-sum, the shuffled control),
 * micro-batches of prompt + completion, old and reference log-probs, the clipped policy loss and AdamW */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grpo_internal.h"
#include "judgerl/dist.h"
#include "judgerl/fsutil.h"

void grpo_micro_free(grpo_micro *mb, int n) {
    if (!mb) return;
    for (int i = 0; i < n; i++) {
        free(mb[i].ids); free(mb[i].targets); free(mb[i].mask); free(mb[i].adv);
        free(mb[i].old); free(mb[i].ref); free(mb[i].lp); free(mb[i].dlp); free(mb[i].active);
    }
    free(mb);
}

/* The rollout's rewards, scored flags and components as flat arrays for the advantage functions. */
typedef struct {
    float *rw, *vals;
    uint8_t *sc, *vsc;
} reward_arrays;

static void arrays_free(reward_arrays *a) { free(a->rw); free(a->sc); free(a->vals); free(a->vsc); }

static jr_status arrays_fill(const jr_grpo_trainer *g, reward_arrays *a) {
    const grpo_rollout *ro = &g->ro;
    int n = ro->n, K1 = g->K + 1;
    a->rw = jr_calloc((size_t)n + 1, sizeof *a->rw);
    a->vals = jr_calloc((size_t)n * K1 + 1, sizeof *a->vals);
    a->sc = jr_calloc((size_t)n + 1, 1);
    a->vsc = jr_calloc((size_t)n * K1 + 1, 1);
    if (!a->rw || !a->sc || !a->vals || !a->vsc) { arrays_free(a); return JR_ENOMEM; }
    for (int i = 0; i < n; i++) {
        a->sc[i] = (uint8_t)ro->s[i].scored;
        a->rw[i] = a->sc[i] ? (float)ro->s[i].reward : 0.0f;
        for (int k = 0; k < K1 && ro->s[i].vals; k++) {
            a->vals[(size_t)i * K1 + k] = (float)ro->s[i].vals[k];
            a->vsc[(size_t)i * K1 + k] = ro->s[i].vscored[k];
        }
    }
    return JR_OK;
}

/* grpo.length_control: the OLS slope b of reward on completion length (bytes) over the scored samples; each
 * reward becomes r - b (len - mean len), so the batch mean stays and length explains none of the rest. */
static void length_control(jr_grpo_trainer *g, reward_arrays *a) {
    const grpo_rollout *ro = &g->ro;
    double sl = 0, sr = 0, sll = 0, slr = 0;
    int m = 0;
    for (int i = 0; i < ro->n; i++) {
        if (!a->sc[i]) continue;
        double l = (double)ro->s[i].text_len;
        sl += l; sr += a->rw[i]; sll += l * l; slr += l * a->rw[i];
        m++;
    }
    double ml = m ? sl / m : 0, var = m ? sll / m - ml * ml : 0, cov = m ? slr / m - ml * sr / m : 0;
    double b = var > 1e-12 ? cov / var : 0;
    for (int i = 0; i < ro->n; i++)
        if (a->sc[i]) a->rw[i] -= (float)(b * ((double)ro->s[i].text_len - ml));
    g->lc_slope = b;
}

jr_status grpo_compute_advantages(jr_grpo_trainer *g) {
    reward_arrays a = {0};
    jr_status st = arrays_fill(g, &a);
    if (st) return st;
    int n = g->ro.n;
    if (g->o.shuffle_rewards) { /* control: rewards moved to random other samples */
        for (int i = n - 1; i > 0; i--) {
            int j = (int)jr_rng_below(&g->run.ts.rng, (uint64_t)i + 1);
            float t = a.rw[i]; a.rw[i] = a.rw[j]; a.rw[j] = t;
            uint8_t u = a.sc[i]; a.sc[i] = a.sc[j]; a.sc[j] = u;
        }
    }
    if (g->o.length_control) length_control(g, &a);
    if (g->o.rloo) jr_rloo_advantages(g->adv, g->active, &g->as, a.rw, a.sc, g->ro.P, g->G);
    else if (g->o.normalize_then_sum)
        jr_grpo_advantages_nts(g->adv, g->active, &g->as, a.vals, a.vsc, g->weights, g->K + (g->o.overlong_buffer ? 1 : 0),
                               a.rw, a.sc, g->ro.P, g->G);
    else jr_grpo_advantages(g->adv, g->active, &g->as, a.rw, a.sc, g->ro.P, g->G, g->o.scale_rewards);
    arrays_free(&a);
    return JR_OK;
}

/* Micro-batch x's rows: [prompt completion] right-padded, targets and mask on the completion. */
static void fill_micro(jr_grpo_trainer *g, grpo_micro *x) {
    const grpo_rollout *r = &g->ro;
    int32_t pad = g->tg.tok.pad_id >= 0 ? g->tg.tok.pad_id : 0;
    int T = x->T;
    for (int b = 0; b < x->nb; b++) {
        const grpo_sample *s = &r->s[x->i0 + b];
        const grpo_prompt *p = &r->p[s->group];
        int np = p->n_ids;
        for (int t = 0; t < T; t++) {
            int32_t id = t < np ? p->ids[t] : t - np < s->n ? s->toks[t - np] : pad;
            int32_t tg = -1;
            if (t + 1 >= np && t + 1 - np < s->n) tg = s->toks[t + 1 - np];
            x->ids[(size_t)b * T + t] = id;
            x->targets[(size_t)b * T + t] = tg;
            x->mask[(size_t)b * T + t] = tg >= 0 ? 1.0f : 0.0f;
        }
        x->adv[b] = g->adv[x->i0 + b];
        x->active[b] = g->active[x->i0 + b] && !(g->o.mask_truncated_completions && s->truncated) && s->n > 0;
    }
}

jr_status grpo_build_micro(jr_grpo_trainer *g) {
    const grpo_rollout *r = &g->ro;
    int n_mb = (r->n + g->B - 1) / g->B;
    grpo_micro *mb = jr_calloc((size_t)(n_mb > 0 ? n_mb : 1), sizeof *mb);
    if (!mb) return JR_ENOMEM;
    for (int k = 0; k < n_mb; k++) {
        grpo_micro *x = &mb[k];
        x->i0 = k * g->B;
        x->nb = r->n - x->i0 < g->B ? r->n - x->i0 : g->B;
        int T = 1;
        for (int b = 0; b < x->nb; b++) {
            const grpo_sample *s = &r->s[x->i0 + b];
            int L = r->p[s->group].n_ids + s->n - 1;
            if (L > T) T = L;
        }
        x->T = T;
        size_t nt = (size_t)x->nb * T;
        x->ids = jr_malloc(sizeof(int32_t) * nt);
        x->targets = jr_malloc(sizeof(int32_t) * nt);
        x->mask = jr_calloc(nt, sizeof(float));
        x->lp = jr_calloc(nt, sizeof(float));
        x->dlp = jr_calloc(nt, sizeof(float));
        x->adv = jr_calloc((size_t)x->nb, sizeof(float));
        x->active = jr_calloc((size_t)x->nb, 1);
        if (!x->ids || !x->targets || !x->mask || !x->lp || !x->dlp || !x->adv || !x->active) {
            grpo_micro_free(mb, n_mb);
            return JR_ENOMEM;
        }
        fill_micro(g, x);
    }
    g->mb = mb;
    g->n_mb = n_mb;
    return JR_OK;
}

/* Log-probs of micro-batch x's targets under model m into lp (B,T); with ent (B,T) also the entropy
 * of softmax(logits / T) at every target (the logits come in chunks: jr_acts_opts). */
static jr_status micro_logprobs(jr_grpo_trainer *g, jr_model *m, grpo_micro *x, float *lp, float *ent) {
    jr_status st = jr_model_forward(m, &g->acts, x->ids, x->nb, x->T);
    if (st) return st;
    return jr_model_logprobs_ent(m, &g->acts, x->targets, (float)g->o.temperature, lp, ent);
}

/* Old log-probs (num_iterations > 1, or the generating weights with async generation), the launch of
 * the next background rollout, reference log-probs (beta > 0). */
jr_status grpo_old_and_ref(jr_grpo_trainer *g, int64_t step) {
    jr_status st = JR_OK;
    jr_run *r = &g->run;
    double t0 = jr_now_s();
    for (int k = 0; k < g->n_mb && !st && (g->mu > 1 || g->o.async_generation); k++) {
        grpo_micro *x = &g->mb[k];
        if (!(x->old = jr_malloc(sizeof(float) * (size_t)x->nb * x->T))) st = JR_ENOMEM;
        else st = micro_logprobs(g, g->o.async_generation ? &g->gen_m : &r->m, x, x->old, NULL);
    }
    /* the next generation batch starts now, from the weights before this update */
    if (!st && g->o.async_generation && step + g->mu < r->to.steps) st = grpo_launch_rollout(g, step + g->mu);
    for (int k = 0; k < g->n_mb && !st && g->o.beta > 0; k++) {
        grpo_micro *x = &g->mb[k];
        if (!(x->ref = jr_malloc(sizeof(float) * (size_t)x->nb * x->T))) return JR_ENOMEM;
        if (r->use_lora) jr_lora_off(&r->lora);
        st = micro_logprobs(g, r->use_lora ? &r->m : &g->ref, x, x->ref, NULL);
        if (r->use_lora) jr_lora_on(&r->lora);
    }
    g->t_ref = jr_now_s() - t0;
    return st;
}

/* Entropy over the masked positions of active rows (summed into *sum, counted into *cnt). */
static void entropy_sum(const grpo_micro *x, const float *ent, double *sum, double *cnt) {
    for (int b = 0; b < x->nb; b++) {
        if (!x->active[b]) continue;
        for (int t = 0; t < x->T; t++) {
            size_t k = (size_t)b * x->T + t;
            if (x->mask[k] == 0) continue;
            *sum += ent[k];
            *cnt += 1;
        }
    }
}

/* Forward, loss and backward of one micro-batch; statistics weighted by its tokens into us. */
static jr_status micro_step(jr_grpo_trainer *g, grpo_micro *x, const jr_policy_loss_cfg *pc, double n_mb, double *ent,
                            double *ent_n, double *w_sum) {
    int use_old = g->mu > 1 || g->o.async_generation;
    jr_status st = micro_logprobs(g, &g->run.m, x, x->lp, g->ent);
    if (st) return st;
    entropy_sum(x, g->ent, ent, ent_n);
    jr_policy_loss_stats ps;
    st = jr_policy_loss(&ps, x->dlp, x->lp, use_old ? x->old : NULL, g->o.beta > 0 ? x->ref : NULL, x->mask, x->adv,
                        x->active, x->nb, x->T, pc);
    if (st) return st;
    if (pc->type == JR_LOSS_BNPO) { /* per micro-batch mean, averaged over micro-batches */
        float f = 1.0f / (float)n_mb;
        for (size_t i = 0; i < (size_t)x->nb * x->T; i++) x->dlp[i] *= f;
        ps.loss *= f;
    }
    if ((st = jr_model_backward(&g->run.m, &g->acts, x->targets, (float)g->o.temperature, x->dlp))) return st;
    grpo_update_stats *us = &g->us;
    us->loss += ps.loss;
    us->kl += ps.kl * ps.tokens;
    us->clip_low += ps.clip_low * ps.tokens;
    us->clip_high += ps.clip_high * ps.tokens;
    us->clip_region += ps.clip_region * ps.tokens;
    *w_sum += ps.tokens;
    return JR_OK;
}

/* One optimizer step over every micro-batch. */
jr_status grpo_policy_step(jr_grpo_trainer *g, double lr) {
    grpo_update_stats *us = &g->us;
    memset(us, 0, sizeof *us);
    double tokens = 0, seqs = 0;
    for (int k = 0; k < g->n_mb; k++)
        for (int b = 0; b < g->mb[k].nb; b++) {
            if (!g->mb[k].active[b]) continue;
            seqs += 1;
            for (int t = 0; t < g->mb[k].T; t++) tokens += g->mb[k].mask[(size_t)b * g->mb[k].T + t];
        }
    /* data-parallel: the loss normalisers (tokens, sequences, micro-batches) are the whole batch's */
    double cnt[3] = {tokens, seqs, g->n_mb};
    jr_status st = jr_dist_sum_f64(cnt, 3, "the loss normalisers");
    if (st) return st;
    tokens = cnt[0];
    seqs = cnt[1];
    if (seqs == 0 || tokens == 0) return JR_OK; /* nothing to learn from: no update (on every rank) */
    jr_policy_loss_cfg pc = {g->o.loss_type, g->o.epsilon, g->eps_high, g->o.beta, g->max_comp, tokens, seqs};
    jr_run_zero_grads(&g->run);
    double ent = 0, ent_n = 0, w_sum = 0;
    for (int k = 0; k < g->n_mb; k++) {
        grpo_micro *x = &g->mb[k];
        int any = 0;
        for (int b = 0; b < x->nb; b++) any |= x->active[b];
        if (!any) continue;
        if ((st = micro_step(g, x, &pc, cnt[2], &ent, &ent_n, &w_sum))) return st;
    }
    double v[8] = {us->loss, us->kl, us->clip_low, us->clip_high, us->clip_region, w_sum, ent, ent_n};
    if ((st = jr_dist_sum_f64(v, 8, "the update statistics"))) return st;
    us->loss = v[0]; us->kl = v[1]; us->clip_low = v[2]; us->clip_high = v[3]; us->clip_region = v[4];
    w_sum = v[5]; ent = v[6]; ent_n = v[7];
    if (w_sum > 0) {
        us->kl /= w_sum; us->clip_low /= w_sum; us->clip_high /= w_sum; us->clip_region /= w_sum;
    }
    us->entropy = ent_n > 0 ? ent / ent_n : 0;
    us->tokens = tokens;
    return jr_run_update(&g->run, lr, &us->gnorm);
}
