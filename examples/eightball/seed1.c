/* seed1.c - seed 1 reproduced: 8-ball classifier SFT, classifier judges on the preference grades, judge distillation (seed's and corrected variant) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/classifier.h"
#include "judgerl/dataset.h"
#include "judgerl/fsutil.h"
#include "judgerl/metrics.h"
#include "judgerl/rng.h"
#include "eightball/seed1.h"

const jr_cfg_field eb_seed1_cfg[] = {
    {"seed1.questions", JR_CFG_STRING, "data/eightball/questions.jsonl", "supervised set {question, answer} (answers drawn at random, as the seed)", NULL, NULL, 0, 0},
    {"seed1.reinforce", JR_CFG_STRING, "data/eightball/reinforce.jsonl", "reinforcement questions {question}", NULL, NULL, 0, 0},
    {"seed1.heldout", JR_CFG_STRING, "data/eightball/heldout.jsonl", "held-out questions {question, preferred}", NULL, NULL, 0, 0},
    {"seed1.preferences", JR_CFG_STRING, "data/eightball/preferences.jsonl", "preference grades {question, answer, grade} the judges learn", NULL, NULL, 0, 0},
    {"seed1.probe", JR_CFG_STRING, "Will I be successful?", "question whose averaged logits are shown before/after", NULL, NULL, 0, 0},
    {"seed1.probe_runs", JR_CFG_INT, "50", "forward passes averaged (collect_logits runs)", NULL, NULL, 1, 100000},
    {"seed1.model.embed_dim", JR_CFG_INT, "16", "policy embedding size", NULL, NULL, 1, 4096},
    {"seed1.model.num_heads", JR_CFG_INT, "2", "policy attention heads", NULL, NULL, 1, 64},
    {"seed1.model.hidden_dim", JR_CFG_INT, "32", "policy fc1 width", NULL, NULL, 1, 65536},
    {"seed1.model.max_length", JR_CFG_INT, "10", "words per question (truncate/pad)", NULL, NULL, 1, 512},
    {"seed1.sft.epochs", JR_CFG_INT, "10", "supervised epochs", NULL, NULL, 0, 100000},
    {"seed1.sft.lr", JR_CFG_FLOAT, "1e-3", "supervised Adam learning rate", NULL, NULL, 0, 1},
    {"seed1.sft.batch_size", JR_CFG_INT, "2", "supervised batch size", NULL, NULL, 1, 4096},
    {"seed1.judge.embed_dim", JR_CFG_INT, "32", "judge embedding size", NULL, NULL, 1, 4096},
    {"seed1.judge.num_heads", JR_CFG_INT, "2", "judge attention heads", NULL, NULL, 1, 64},
    {"seed1.judge.hidden_dim", JR_CFG_INT, "64", "judge fc1 width", NULL, NULL, 1, 65536},
    {"seed1.judge.max_length", JR_CFG_INT, "12", "judge words per input (the answer judge reads \"answer question\")", NULL, NULL, 1, 512},
    {"seed1.judge.epochs", JR_CFG_INT, "30", "judge training epochs", NULL, NULL, 0, 100000},
    {"seed1.judge.lr", JR_CFG_FLOAT, "2e-3", "judge Adam learning rate", NULL, NULL, 0, 1},
    {"seed1.judge.batch_size", JR_CFG_INT, "8", "judge batch size", NULL, NULL, 1, 4096},
    {"seed1.distill.lr", JR_CFG_FLOAT, "2e-5", "distillation AdamW learning rate", NULL, NULL, 0, 1},
    {"seed1.distill.weight_decay", JR_CFG_FLOAT, "0.01", "distillation AdamW weight decay (torch's default)", NULL, NULL, 0, 1},
    {"seed1.distill.iterations", JR_CFG_INT, "100", "distillation iterations (one question each)", NULL, NULL, 0, 10000000},
    {"seed1.distill.threshold", JR_CFG_FLOAT, "0.4", "skip a question when the judge's top probability is below this", NULL, NULL, 0, 1},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};

static void clf_opts(eb_seed1_clf_opts *o, const jr_config *c, const char *pre) {
    char k[64];
    snprintf(k, sizeof k, "%s.embed_dim", pre);
    o->embed_dim = (int)jr_cfg_int(c, k);
    snprintf(k, sizeof k, "%s.num_heads", pre);
    o->num_heads = (int)jr_cfg_int(c, k);
    snprintf(k, sizeof k, "%s.hidden_dim", pre);
    o->hidden_dim = (int)jr_cfg_int(c, k);
    snprintf(k, sizeof k, "%s.max_length", pre);
    o->max_length = (int)jr_cfg_int(c, k);
}

static void train_opts(eb_seed1_train_opts *o, const jr_config *c, const char *pre) {
    char k[64];
    snprintf(k, sizeof k, "%s.epochs", pre);
    o->epochs = (int)jr_cfg_int(c, k);
    snprintf(k, sizeof k, "%s.lr", pre);
    o->lr = jr_cfg_float(c, k);
    snprintf(k, sizeof k, "%s.batch_size", pre);
    o->batch_size = (int)jr_cfg_int(c, k);
}

jr_status eb_seed1_opts_from_config(eb_seed1_opts *o, const jr_config *c) {
    memset(o, 0, sizeof *o);
    o->out_dir = jr_cfg_str(c, "run.out_dir");
    o->seed = (uint64_t)jr_cfg_int(c, "run.seed");
    o->questions = jr_cfg_str(c, "seed1.questions");
    o->reinforce = jr_cfg_str(c, "seed1.reinforce");
    o->heldout = jr_cfg_str(c, "seed1.heldout");
    o->preferences = jr_cfg_str(c, "seed1.preferences");
    o->probe = jr_cfg_str(c, "seed1.probe");
    o->probe_runs = (int)jr_cfg_int(c, "seed1.probe_runs");
    clf_opts(&o->model, c, "seed1.model");
    clf_opts(&o->judge, c, "seed1.judge");
    train_opts(&o->sft, c, "seed1.sft");
    train_opts(&o->judge_train, c, "seed1.judge");
    o->distill.lr = jr_cfg_float(c, "seed1.distill.lr");
    o->distill.weight_decay = jr_cfg_float(c, "seed1.distill.weight_decay");
    o->distill.threshold = jr_cfg_float(c, "seed1.distill.threshold");
    o->distill.iterations = (int)jr_cfg_int(c, "seed1.distill.iterations");
    return jr_cfg_check(c);
}

static const char *const LABELS[3] = {"Yes", "No", "Maybe"};

static int label_id(const char *s) {
    for (int i = 0; s && i < 3; i++)
        if (!strcmp(s, LABELS[i])) return i;
    return -1;
}

/* A text set: texts (owned) with a label each. */
typedef struct {
    char **text;
    int32_t *label;
    int n, cap;
} tset;

static void tset_free(tset *s) {
    for (int i = 0; i < s->n; i++) free(s->text[i]);
    free(s->text);
    free(s->label);
    memset(s, 0, sizeof *s);
}

static jr_status tset_add(tset *s, const char *text, int label) {
    if (s->n == s->cap) {
        int nc = s->cap ? 2 * s->cap : 64;
        char **t = jr_realloc(s->text, sizeof(char *) * (size_t)nc);
        if (!t) return jr_fail(JR_ENOMEM, "out of memory");
        s->text = t;
        int32_t *l = jr_realloc(s->label, sizeof(int32_t) * (size_t)nc);
        if (!l) return jr_fail(JR_ENOMEM, "out of memory");
        s->label = l;
        s->cap = nc;
    }
    if (!(s->text[s->n] = jr_strdup(text))) return jr_fail(JR_ENOMEM, "out of memory");
    s->label[s->n++] = label;
    return JR_OK;
}

/* What a row contributes: which fields, and how. */
typedef enum { ROWS_QA, ROWS_Q, ROWS_HELDOUT, ROWS_PREF_Q, ROWS_PREF_QA } rows_kind;

static jr_status load_rows(const char *path, rows_kind kind, tset *s) {
    memset(s, 0, sizeof *s);
    jr_jsonl_reader *r;
    jr_status st = jr_jsonl_open(&r, path, JR_BAD_LINE_FAIL, NULL, NULL);
    if (st) return st;
    for (;;) {
        json_t *row;
        int64_t line;
        if ((st = jr_jsonl_next(r, &row, &line, NULL)) || !row) break;
        const char *q = json_string_value(json_object_get(row, "question"));
        const char *field = kind == ROWS_HELDOUT ? "preferred" : "answer";
        int lab = kind == ROWS_Q ? 0 : label_id(json_string_value(json_object_get(row, field)));
        json_t *g = json_object_get(row, "grade");
        if (!q) st = jr_fail(JR_EFORMAT, "%s:%lld: field \"question\" (a string) is missing", path, (long long)line);
        else if (lab < 0)
            st = jr_fail(JR_EFORMAT, "%s:%lld: field \"%s\" must be \"Yes\", \"No\" or \"Maybe\"", path, (long long)line, field);
        else if ((kind == ROWS_PREF_Q || kind == ROWS_PREF_QA) && !json_is_integer(g))
            st = jr_fail(JR_EFORMAT, "%s:%lld: field \"grade\" (0 or 1) is missing", path, (long long)line);
        else if (kind == ROWS_PREF_Q) {
            if (json_integer_value(g) > 0) st = tset_add(s, q, lab);
        } else if (kind == ROWS_PREF_QA) {
            char buf[1024];
            snprintf(buf, sizeof buf, "%s %s", LABELS[lab], q);
            st = tset_add(s, buf, json_integer_value(g) > 0 ? 1 : 0);
        } else st = tset_add(s, q, lab);
        json_decref(row);
        if (st) break;
    }
    jr_jsonl_close(r);
    if (!st && s->n == 0) st = jr_fail(JR_EFORMAT, "%s: no usable rows", path);
    if (st) tset_free(s);
    return st;
}

static void softmax3(const float *z, int L, double *p) {
    double mx = z[0], s = 0;
    for (int j = 1; j < L; j++) if (z[j] > mx) mx = z[j];
    for (int j = 0; j < L; j++) s += (p[j] = exp(z[j] - mx));
    for (int j = 0; j < L; j++) p[j] /= s;
}

static int argmax(const float *z, int L) {
    int b = 0;
    for (int j = 1; j < L; j++) if (z[j] > z[b]) b = j;
    return b;
}

/* Supervised training as seed 1's train_model: shuffled batches, mean CE, Adam. Appends each
 * epoch's mean loss to losses. */
static jr_status train_clf(jr_clf *c, const jr_vocab *v, const tset *s, int epochs, double lr, int bs, jr_rng *rng,
                           json_t *losses, double *last_batch_loss) {
    jr_clf_adam o;
    jr_status st = jr_clf_adam_init(&o, c, 0, 0.0);
    if (st) return st;
    int T = c->d.max_len;
    int32_t *ids = jr_malloc(sizeof(int32_t) * (size_t)bs * (size_t)T), lab[4096];
    uint32_t *order = jr_malloc(sizeof(uint32_t) * (size_t)s->n);
    float *dl = jr_malloc(sizeof(float) * (size_t)bs * (size_t)c->d.labels);
    if (!ids || !order || !dl) { st = jr_fail(JR_ENOMEM, "out of memory"); goto done; }
    for (int i = 0; i < s->n; i++) order[i] = (uint32_t)i;
    for (int e = 0; e < epochs; e++) {
        jr_rng_shuffle_idx(rng, order, (uint32_t)s->n);
        double sum = 0;
        int nb = 0;
        for (int i = 0; i < s->n; i += bs) {
            int B = s->n - i < bs ? s->n - i : bs;
            for (int b = 0; b < B; b++) {
                jr_vocab_encode(v, s->text[order[i + b]], ids + (size_t)b * T, T);
                lab[b] = s->label[order[i + b]];
            }
            if (!jr_clf_forward(c, ids, B)) { st = jr_fail(JR_ENOMEM, "out of memory"); goto done; }
            double loss = jr_clf_xent(c, lab, dl);
            jr_clf_zero_grad(c);
            jr_clf_backward(c, dl);
            jr_clf_adam_step(&o, c, lr);
            sum += loss;
            nb++;
            if (last_batch_loss) *last_batch_loss = loss;
        }
        if (losses) json_array_append_new(losses, json_real(nb ? sum / nb : 0));
    }
done:
    free(ids);
    free(order);
    free(dl);
    jr_clf_adam_free(&o);
    return st;
}

/* Logits of one text (c's buffer). */
static const float *logits_of(jr_clf *c, const jr_vocab *v, const char *text) {
    int32_t ids[512];
    jr_vocab_encode(v, text, ids, c->d.max_len);
    return jr_clf_forward(c, ids, 1);
}

/* Accuracy of c on s. */
static double accuracy(jr_clf *c, const jr_vocab *v, const tset *s) {
    int ok = 0;
    for (int i = 0; i < s->n; i++) {
        const float *z = logits_of(c, v, s->text[i]);
        if (z && argmax(z, c->d.labels) == s->label[i]) ok++;
    }
    return s->n ? (double)ok / s->n : 0;
}

/* collect_logits: the mean of `runs` forward passes (the model has no dropout, so they agree). */
static json_t *collect_logits(jr_clf *c, const jr_vocab *v, const char *q, int runs) {
    double acc[16] = {0};
    int L = c->d.labels;
    for (int r = 0; r < runs; r++) {
        const float *z = logits_of(c, v, q);
        for (int j = 0; j < L && z; j++) acc[j] += z[j];
    }
    json_t *a = json_array();
    for (int j = 0; j < L; j++) json_array_append_new(a, json_real(acc[j] / runs));
    return a;
}

/* Share of each label the policy picks (argmax) on the held-out questions. */
static json_t *distribution(jr_clf *c, const jr_vocab *v, const tset *s) {
    int cnt[3] = {0};
    for (int i = 0; i < s->n; i++) {
        const float *z = logits_of(c, v, s->text[i]);
        if (z) cnt[argmax(z, 3)]++;
    }
    json_t *o = json_object();
    for (int j = 0; j < 3; j++) json_object_set_new(o, LABELS[j], json_real(s->n ? (double)cnt[j] / s->n : 0));
    return o;
}

static jr_status clone_clf(jr_clf *dst, const jr_clf *src) {
    jr_status st = jr_clf_init(dst, src->d, NULL);
    if (!st) memcpy(dst->params, src->params, sizeof(float) * src->n_params);
    return st;
}

static jr_status save_to(const jr_clf *c, const jr_vocab *v, const char *out, const char *name) {
    char *p = jr_path_join(out, name);
    if (!p) return jr_fail(JR_ENOMEM, "out of memory");
    jr_status st = jr_clf_save(c, v, p);
    free(p);
    return st;
}

/* The judge's preferred label for question q: the question judge's argmax (variant "question") or
 * the answer with the highest P(good) from the answer judge (variant "answer"). */
static int judge_pick(jr_clf *jq, const jr_vocab *vq, jr_clf *ja, const jr_vocab *va, int answer_variant, const char *q) {
    if (!answer_variant) return argmax(logits_of(jq, vq, q), 3);
    int best = 0;
    double bp = -1;
    for (int a = 0; a < 3; a++) {
        char buf[1024];
        snprintf(buf, sizeof buf, "%s %s", LABELS[a], q);
        double p[2];
        softmax3(logits_of(ja, va, buf), 2, p);
        if (p[1] > bp) { bp = p[1]; best = a; }
    }
    return best;
}

/* One distillation run from policy p0 (copied). */
static jr_status distill(const eb_seed1_opts *cfg, const jr_clf *p0, const jr_vocab *vp, jr_clf *jq, const jr_vocab *vq,
                         jr_clf *ja, const jr_vocab *va, int answer_variant, const tset *reinf, const tset *held,
                         const char *out, json_t *res) {
    jr_clf pol;
    jr_clf_adam o;
    jr_status st = clone_clf(&pol, p0);
    if (st) return st;
    if ((st = jr_clf_adam_init(&o, &pol, 1, cfg->distill.weight_decay))) { jr_clf_free(&pol); return st; }
    jr_rng rng;
    jr_rng_seed2(&rng, cfg->seed, answer_variant ? 0x616e73 : 0x717565);
    const char *probe = cfg->probe;
    int runs = cfg->probe_runs, iters = cfg->distill.iterations;
    double lr = cfg->distill.lr, thr = cfg->distill.threshold;
    int T = pol.d.max_len;
    json_object_set_new(res, "name", json_string(answer_variant ? "answer" : "question"));
    json_object_set_new(res, "what", json_string(answer_variant
        ? "corrected: the policy answers (samples), the judge grades that answer; a confident verdict is a +1/-1 reward"
        : "as the seed: the judge labels the question alone; the policy is trained toward its confident label"));
    json_object_set_new(res, "probe_judge_label", json_string(LABELS[judge_pick(jq, vq, ja, va, answer_variant, probe)]));
    json_object_set_new(res, "logits_before", collect_logits(&pol, vp, probe, runs));
    json_object_set_new(res, "heldout_before", distribution(&pol, vp, held));
    /* agreement with the judge's pick on the reinforcement questions */
    int agree0 = 0;
    for (int i = 0; i < reinf->n; i++)
        agree0 += argmax(logits_of(&pol, vp, reinf->text[i]), 3) == judge_pick(jq, vq, ja, va, answer_variant, reinf->text[i]);
    int steps = 0, skipped = 0;
    double reward_sum = 0;
    json_t *rewards = json_array();
    for (int it = 0; it < iters; it++) {
        const char *q = reinf->text[it % reinf->n];
        int32_t ids[512], target;
        float dl[3];
        jr_vocab_encode(vp, q, ids, T);
        const float *z = jr_clf_forward(&pol, ids, 1);
        if (!z) { st = jr_fail(JR_ENOMEM, "out of memory"); break; }
        double pp[3];
        softmax3(z, 3, pp);
        if (!answer_variant) {
            (void)argmax(z, 3); /* the seed's small_model_answer (unused by its loss) */
            double jp[3];
            softmax3(logits_of(jq, vq, q), 3, jp);
            int lab = jp[1] > jp[0] ? 1 : 0;
            if (jp[2] > jp[lab]) lab = 2;
            if (jp[lab] < thr) { skipped++; continue; }
            target = lab;
            /* dlogits of CE toward the judge's label (batch of one) */
            for (int j = 0; j < 3; j++) dl[j] = (float)(pp[j] - (j == target));
            reward_sum += pp[target];
            json_array_append_new(rewards, json_real(pp[target]));
        } else {
            double u = jr_rng_double(&rng), c = 0;
            int a = 2;
            for (int j = 0; j < 3; j++) { c += pp[j]; if (u < c) { a = j; break; } }
            char buf[1024];
            snprintf(buf, sizeof buf, "%s %s", LABELS[a], q);
            double jp[2];
            softmax3(logits_of(ja, va, buf), 2, jp);
            double conf = jp[1] > jp[0] ? jp[1] : jp[0];
            double r = jp[1] > jp[0] ? 1.0 : -1.0;
            json_array_append_new(rewards, json_real(jp[1]));
            reward_sum += jp[1];
            if (conf < thr) { skipped++; continue; }
            /* REINFORCE: loss = -r log p(a|q); dlogits = -r (onehot(a) - p) */
            for (int j = 0; j < 3; j++) dl[j] = (float)(-r * ((j == a) - pp[j]));
        }
        /* pol's activations are still those of q: the judge calls ran on the judges' own buffers */
        jr_clf_zero_grad(&pol);
        jr_clf_backward(&pol, dl);
        jr_clf_adam_step(&o, &pol, lr);
        steps++;
    }
    if (!st) {
        int agree1 = 0;
        for (int i = 0; i < reinf->n; i++)
            agree1 += argmax(logits_of(&pol, vp, reinf->text[i]), 3) == judge_pick(jq, vq, ja, va, answer_variant, reinf->text[i]);
        json_object_set_new(res, "logits_after", collect_logits(&pol, vp, probe, runs));
        json_object_set_new(res, "heldout_after", distribution(&pol, vp, held));
        json_object_set_new(res, "steps", json_integer(steps));
        json_object_set_new(res, "skipped", json_integer(skipped));
        json_object_set_new(res, "agree_before", json_real((double)agree0 / reinf->n));
        json_object_set_new(res, "agree_after", json_real((double)agree1 / reinf->n));
        json_object_set_new(res, "mean_reward", json_real(iters ? reward_sum / iters : 0));
        json_object_set_new(res, "rewards", rewards);
        rewards = NULL;
        /* direction: the margin of the judge's label over the mean of the others */
        int jl = label_id(json_string_value(json_object_get(res, "probe_judge_label")));
        double m[2];
        const char *keys[2] = {"logits_before", "logits_after"};
        for (int k = 0; k < 2; k++) {
            json_t *a = json_object_get(res, keys[k]);
            double s = 0;
            for (int j = 0; j < 3; j++) if (j != jl) s += json_number_value(json_array_get(a, (size_t)j));
            m[k] = json_number_value(json_array_get(a, (size_t)jl)) - s / 2;
        }
        json_object_set_new(res, "margin_before", json_real(m[0]));
        json_object_set_new(res, "margin_after", json_real(m[1]));
        st = save_to(&pol, vp, out, answer_variant ? "policy_answer" : "policy_question");
    }
    json_decref(rewards);
    jr_clf_adam_free(&o);
    jr_clf_free(&pol);
    return st;
}

static jr_status new_clf(jr_clf *c, const jr_vocab *v, const eb_seed1_clf_opts *o, const char *pre, int labels, jr_rng *rng) {
    jr_clf_dims d = {v->n, o->embed_dim, o->num_heads, o->hidden_dim, labels, o->max_length};
    jr_status st = jr_clf_init(c, d, rng);
    if (st) jr_fail_ctx(st, "%s", pre);
    return st;
}

jr_status eb_seed1_run(const eb_seed1_opts *cfg, json_t **result) {
    *result = NULL;
    const char *out = cfg->out_dir;
    tset qs = {0}, rf = {0}, held = {0}, pq = {0}, pqa = {0};
    jr_vocab vp = {0}, vq = {0}, va = {0};
    jr_clf pol = {0}, jq = {0}, ja = {0};
    json_t *res = json_object();
    double t0 = jr_wall_time();
    jr_status st = jr_mkdirs(out);
    if (!st) st = load_rows(cfg->questions, ROWS_QA, &qs);
    if (!st) st = load_rows(cfg->reinforce, ROWS_Q, &rf);
    if (!st) st = load_rows(cfg->heldout, ROWS_HELDOUT, &held);
    if (!st) st = load_rows(cfg->preferences, ROWS_PREF_Q, &pq);
    if (!st) st = load_rows(cfg->preferences, ROWS_PREF_QA, &pqa);
    if (st) goto done;
    uint64_t seed = cfg->seed;
    jr_rng rng;
    /* the policy: seed 1's supervised classifier on random labels */
    jr_rng_seed2(&rng, seed, 0x706f6c);
    if ((st = jr_vocab_build(&vp, (const char *const *)qs.text, qs.n)) || (st = new_clf(&pol, &vp, &cfg->model, "seed1.model", 3, &rng)))
        goto done;
    json_t *sft = json_object(), *losses = json_array();
    json_object_set_new(res, "sft", sft);
    json_object_set_new(sft, "epoch_loss", losses);
    double last = 0;
    st = train_clf(&pol, &vp, &qs, cfg->sft.epochs, cfg->sft.lr, cfg->sft.batch_size, &rng, losses, &last);
    if (st) goto done;
    json_object_set_new(sft, "last_batch_loss", json_real(last));
    json_object_set_new(sft, "train_accuracy", json_real(accuracy(&pol, &vp, &qs)));
    json_object_set_new(sft, "rows", json_integer(qs.n));
    json_object_set_new(sft, "vocab", json_integer(vp.n));
    json_object_set_new(sft, "params", json_integer((json_int_t)pol.n_params));
    if ((st = save_to(&pol, &vp, out, "policy"))) goto done;
    /* the judges, trained on the preference grades */
    int je = cfg->judge_train.epochs, jb = cfg->judge_train.batch_size;
    double jlr = cfg->judge_train.lr;
    jr_rng_seed2(&rng, seed, 0x6a71);
    if ((st = jr_vocab_build(&vq, (const char *const *)pq.text, pq.n)) || (st = new_clf(&jq, &vq, &cfg->judge, "seed1.judge", 3, &rng)))
        goto done;
    json_t *jqr = json_object(), *jql = json_array();
    json_object_set_new(res, "judge_question", jqr);
    json_object_set_new(jqr, "epoch_loss", jql);
    if ((st = train_clf(&jq, &vq, &pq, je, jlr, jb, &rng, jql, NULL))) goto done;
    json_object_set_new(jqr, "train_accuracy", json_real(accuracy(&jq, &vq, &pq)));
    json_object_set_new(jqr, "heldout_accuracy", json_real(accuracy(&jq, &vq, &held)));
    json_object_set_new(jqr, "rows", json_integer(pq.n));
    if ((st = save_to(&jq, &vq, out, "judge_question"))) goto done;
    jr_rng_seed2(&rng, seed, 0x6a61);
    if ((st = jr_vocab_build(&va, (const char *const *)pqa.text, pqa.n)) || (st = new_clf(&ja, &va, &cfg->judge, "seed1.judge", 2, &rng)))
        goto done;
    json_t *jar = json_object(), *jal = json_array();
    json_object_set_new(res, "judge_answer", jar);
    json_object_set_new(jar, "epoch_loss", jal);
    if ((st = train_clf(&ja, &va, &pqa, je, jlr, jb, &rng, jal, NULL))) goto done;
    json_object_set_new(jar, "train_accuracy", json_real(accuracy(&ja, &va, &pqa)));
    {   /* held-out: does the best-graded answer match the preferred one? */
        int ok = 0;
        for (int i = 0; i < held.n; i++) ok += judge_pick(&jq, &vq, &ja, &va, 1, held.text[i]) == held.label[i];
        json_object_set_new(jar, "heldout_accuracy", json_real(held.n ? (double)ok / held.n : 0));
    }
    json_object_set_new(jar, "rows", json_integer(pqa.n));
    if ((st = save_to(&ja, &va, out, "judge_answer"))) goto done;
    json_object_set_new(res, "probe", json_string(cfg->probe));
    json_t *vars = json_array();
    json_object_set_new(res, "variants", vars);
    for (int v = 0; v < 2 && !st; v++) {
        json_t *r = json_object();
        json_array_append_new(vars, r);
        st = distill(cfg, &pol, &vp, &jq, &vq, &ja, &va, v, &rf, &held, out, r);
    }
    if (st) goto done;
    json_object_set_new(res, "seconds", json_real(jr_wall_time() - t0));
    char *text = json_dumps(res, JSON_INDENT(1) | JSON_REAL_PRECISION(8));
    char *p = jr_path_join(out, "seed1.json");
    st = text && p ? jr_write_atomic(p, text, strlen(text)) : jr_fail(JR_ENOMEM, "out of memory");
    free(text);
    free(p);
done:
    tset_free(&qs); tset_free(&rf); tset_free(&held); tset_free(&pq); tset_free(&pqa);
    jr_vocab_free(&vp); jr_vocab_free(&vq); jr_vocab_free(&va);
    jr_clf_free(&pol); jr_clf_free(&jq); jr_clf_free(&ja);
    if (st) json_decref(res);
    else *result = res;
    return st;
}
