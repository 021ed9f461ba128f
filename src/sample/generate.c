/* generate.c - batched generation with a KV cache: prefill, shared prompt prefix, decode steps, stop rules, log-probs */
#include "judgerl/generate.h"
#include "judgerl/clock.h"
#include "judgerl/utf8.h"

#include <limits.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

struct jr_gen_req {
    jr_gen_req *next;
    int32_t *prompt;
    int n_prompt, n;
    jr_gen_params p;
    jr_gen_event_fn cb;
    void *ud;
    int prefilled;
    int n_pre;     /* prompt tokens in the cache so far (chunked prefill) */
    int *slots;
    jr_rng *rng;
    jr_cstate *cs;
    jr_gen_seq *seqs;
    int32_t *pending;
    int *reported; /* text tokens already reported per sequence */
    int n_done;
    int released_slots;
    char *error; /* a constraint that could not be evaluated within its budget (the request fails) */
};

/* A decode row's draw and log-probs, made ahead of choose() (presample); tok -1: none. */
typedef struct pre_draw { int32_t tok; float lp, raw; } pre_draw;

struct jr_gen {
    jr_lm *lm;
    jr_gen_vocab v;
    jr_rng rng;
    uint8_t *slot_used;
    int n_free;
    jr_gen_req *head;
    float *logits;  /* n_slots rows of n_logits */
    uint8_t *mask;  /* tokenizer size */
    jr_sample_scratch w;
    jr_sample_scratch *wt;     /* one per thread of presample */
    int n_wt;
    pre_draw *pre;             /* (n_slots) */
    int *bslots;
    int32_t *btoks;
    jr_gen_req **breq;
    int *bidx;
    int chunk;                 /* prompt tokens per step (batch_prefill), 0 = unlimited */
    const int32_t **bptr;      /* extend's arguments: token pointers, counts, starts */
    int *bn, *bstart;
    double itl;                /* jr_gen_set_itl_target's ratio (0: the fixed chunk) */
    double t_dec;              /* running mean of a decode-only step (s), 0 = not measured */
    double c_row;              /* running mean of what a prompt row adds to a step (s), 0 = not measured */
    int nb_dec, age_dec;       /* decode rows when t_dec was last measured, steps since */
    double credit;             /* prompt rows allowed but not yet taken (the budget is fractional) */
    int last_prompt;           /* prompt tokens of the last step */
};

void jr_gen_set_prefill_chunk(jr_gen *g, int tokens) { g->chunk = tokens > 0 ? tokens : 0; }

void jr_gen_set_itl_target(jr_gen *g, double ratio) { g->itl = ratio > 1 ? ratio : 0; }

int jr_gen_last_prefill_tokens(const jr_gen *g) { return g->last_prompt; }

/* Prompt tokens this step may take beside nb decode rows. Fixed: the chunk. With an ITL target: a
 * decode-only step first (or again once the decode batch changed by over a quarter, or every 32
 * steps) to measure its time, then as many prompt rows as keep the step within itl x that time by
 * the measured cost of a row (4 to probe it), at most the chunk; a fraction carries over to the
 * next steps, so a row that costs more than the slack of one step goes in every few steps. */
static long prefill_budget(jr_gen *g, int nb) {
    long chunk = g->chunk > 0 ? g->chunk : LONG_MAX;
    if (g->itl <= 0 || nb == 0) return chunk;
    int moved = 4 * abs(nb - g->nb_dec) > g->nb_dec;
    if (g->t_dec <= 0 || moved || g->age_dec >= 32) return 0;
    g->credit += g->c_row > 0 ? (g->itl - 1) * g->t_dec / g->c_row : 4;
    if (g->credit > (double)chunk) g->credit = (double)chunk;
    long take = (long)g->credit;
    g->credit -= (double)take;
    return take;
}

/* Updates the running means from a step of nb decode rows and `prompt` prompt rows that took t s
 * of CPU time. */
static void step_timed(jr_gen *g, int nb, long prompt, double t) {
    g->age_dec++;
    if (g->itl <= 0 || nb == 0) return;
    if (prompt == 0) {
        g->t_dec = g->t_dec > 0 && g->nb_dec == nb ? 0.7 * g->t_dec + 0.3 * t : t;
        g->nb_dec = nb;
        g->age_dec = 0;
    } else if (g->t_dec > 0) {
        double row = (t > g->t_dec ? t - g->t_dec : 0) / (double)prompt;
        g->c_row = g->c_row > 0 ? 0.7 * g->c_row + 0.3 * row : row;
    }
}

jr_gen_params jr_gen_params_default(void) {
    jr_gen_params p;
    memset(&p, 0, sizeof p);
    p.sample = jr_sample_params_default();
    p.max_tokens = 16;
    return p;
}

jr_status jr_gen_open(jr_gen **out, jr_lm *lm, const jr_gen_vocab *vocab, uint64_t seed) {
    *out = NULL;
    if (vocab->tb.n <= 0 || vocab->tb.n > lm->n_logits)
        return jr_fail(JR_EINVAL, "generate: tokenizer size %d does not fit the model's %d logits", vocab->tb.n, lm->n_logits);
    jr_gen *g = calloc(1, sizeof *g);
    if (!g) return jr_fail(JR_ENOMEM, "generate: out of memory");
    g->lm = lm;
    g->v = *vocab;
    jr_rng_seed(&g->rng, seed);
    int S = lm->n_slots;
    g->slot_used = calloc((size_t)S, 1);
    g->logits = malloc((size_t)S * (size_t)lm->n_logits * sizeof(float));
    g->mask = malloc((size_t)vocab->tb.n);
    g->bslots = malloc((size_t)S * sizeof(int));
    g->btoks = malloc((size_t)S * sizeof(int32_t));
    g->breq = malloc((size_t)S * sizeof(jr_gen_req *));
    g->bidx = malloc((size_t)S * sizeof(int));
    g->bptr = malloc((size_t)S * sizeof *g->bptr);
    g->bn = malloc((size_t)S * sizeof(int));
    g->bstart = malloc((size_t)S * sizeof(int));
    g->n_wt = omp_get_max_threads();
    g->wt = calloc((size_t)g->n_wt, sizeof *g->wt);
    g->pre = malloc((size_t)S * sizeof *g->pre);
    g->chunk = JR_GEN_PREFILL_CHUNK;
    if (!g->slot_used || !g->logits || !g->mask || !g->bslots || !g->btoks || !g->breq || !g->bidx || !g->bptr ||
        !g->bn || !g->bstart || !g->wt || !g->pre) {
        jr_gen_close(g);
        return jr_fail(JR_ENOMEM, "generate: out of memory for %d slots", S);
    }
    g->n_free = S;
    *out = g;
    return JR_OK;
}

void jr_gen_seq_free(jr_gen_seq *s) {
    free(s->tokens);
    free(s->logprobs);
    free(s->raw_logprobs);
    free(s->top_ids);
    free(s->top_lps);
    free(s->text);
    free(s->tok_off);
    memset(s, 0, sizeof *s);
}

static void req_free(jr_gen_req *r) {
    if (!r) return;
    for (int i = 0; r->seqs && i < r->n; i++) jr_gen_seq_free(&r->seqs[i]);
    for (int i = 0; r->cs && i < r->n; i++) jr_cstate_free(&r->cs[i]);
    free(r->seqs);
    free(r->cs);
    free(r->error);
    free(r->prompt);
    free(r->slots);
    free(r->rng);
    free(r->pending);
    free(r->reported);
    free(r);
}

void jr_gen_close(jr_gen *g) {
    if (!g) return;
    while (g->head) {
        jr_gen_req *r = g->head;
        g->head = r->next;
        req_free(r);
    }
    free(g->slot_used);
    free(g->logits);
    free(g->mask);
    free(g->bslots);
    free(g->btoks);
    free(g->breq);
    free(g->bidx);
    free(g->bptr);
    free(g->bn);
    free(g->bstart);
    jr_sample_scratch_free(&g->w);
    for (int t = 0; g->wt && t < g->n_wt; t++) jr_sample_scratch_free(&g->wt[t]);
    free(g->wt);
    free(g->pre);
    free(g);
}

int jr_gen_free_slots(const jr_gen *g) { return g->n_free; }

int jr_gen_active(const jr_gen *g) {
    int n = 0;
    for (const jr_gen_req *r = g->head; r; r = r->next) n++;
    return n;
}

jr_status jr_gen_add(jr_gen *g, const int32_t *prompt, int n_prompt, int n, const jr_gen_params *p,
                     jr_gen_event_fn cb, void *ud, jr_gen_req **out) {
    *out = NULL;
    if (n <= 0) return jr_fail(JR_EINVAL, "generate: n=%d must be at least 1", n);
    if (n > g->lm->n_slots) return jr_fail(JR_EUNSUPPORTED, "generate: n=%d is more than the %d parallel slots", n, g->lm->n_slots);
    if (n_prompt <= 0) return jr_fail(JR_EINVAL, "generate: the prompt is empty (no tokens)");
    if (n_prompt + 1 > g->lm->max_ctx)
        return jr_fail(JR_EINVAL, "generate: the prompt has %d tokens, the context holds %d", n_prompt, g->lm->max_ctx);
    if (p->max_tokens <= 0) return jr_fail(JR_EINVAL, "generate: max_tokens=%d must be at least 1", p->max_tokens);
    for (int i = 0; i < n_prompt; i++)
        if (prompt[i] < 0 || prompt[i] >= g->lm->n_logits)
            return jr_fail(JR_EINVAL, "generate: prompt token %d has id %d outside the vocabulary", i, (int)prompt[i]);
    if (g->n_free < n) return jr_fail(JR_ECANCELED, "generate: %d slots busy, %d free, %d needed", g->lm->n_slots - g->n_free, g->n_free, n);
    jr_gen_req *r = calloc(1, sizeof *r);
    if (!r) return jr_fail(JR_ENOMEM, "generate: out of memory");
    r->n = n;
    r->n_prompt = n_prompt;
    r->p = *p;
    if (r->p.top_logprobs > 0) r->p.logprobs = 1;
    r->cb = cb;
    r->ud = ud;
    int cap = p->max_tokens;
    if (cap > g->lm->max_ctx - n_prompt) cap = g->lm->max_ctx - n_prompt;
    r->prompt = malloc((size_t)n_prompt * sizeof *r->prompt);
    r->slots = calloc((size_t)n, sizeof *r->slots);
    r->rng = calloc((size_t)n, sizeof *r->rng);
    r->seqs = calloc((size_t)n, sizeof *r->seqs);
    r->pending = calloc((size_t)n, sizeof *r->pending);
    r->reported = calloc((size_t)n, sizeof *r->reported);
    r->cs = p->constraint ? calloc((size_t)n, sizeof *r->cs) : NULL;
    int bad = !r->prompt || !r->slots || !r->rng || !r->seqs || !r->pending || !r->reported || (p->constraint && !r->cs);
    for (int i = 0; !bad && i < n; i++) {
        jr_gen_seq *s = &r->seqs[i];
        s->tokens = malloc((size_t)cap * sizeof *s->tokens);
        s->tok_off = malloc((size_t)cap * sizeof *s->tok_off);
        s->text = malloc(64);
        if (r->p.logprobs) {
            s->logprobs = malloc((size_t)cap * sizeof *s->logprobs);
            s->raw_logprobs = malloc((size_t)cap * sizeof *s->raw_logprobs);
        }
        if (r->p.top_logprobs > 0) {
            s->top_ids = malloc((size_t)cap * (size_t)r->p.top_logprobs * sizeof *s->top_ids);
            s->top_lps = malloc((size_t)cap * (size_t)r->p.top_logprobs * sizeof *s->top_lps);
        }
        bad = !s->tokens || !s->tok_off || !s->text || (r->p.logprobs && (!s->logprobs || !s->raw_logprobs)) ||
              (r->p.top_logprobs > 0 && (!s->top_ids || !s->top_lps));
        if (!bad) s->text[0] = 0;
        if (!bad && r->cs && jr_cstate_init(&r->cs[i], p->constraint)) bad = 1;
    }
    if (bad) {
        req_free(r);
        return jr_fail(JR_ENOMEM, "generate: out of memory for a request of n=%d", n);
    }
    memcpy(r->prompt, prompt, (size_t)n_prompt * sizeof *prompt);
    for (int i = 0; i < n; i++) {
        if (p->has_seed) jr_rng_seed2(&r->rng[i], p->seed, (uint64_t)i);
        else jr_rng_seed2(&r->rng[i], jr_rng_u64(&g->rng), (uint64_t)i);
    }
    int k = 0;
    for (int s = 0; s < g->lm->n_slots && k < n; s++)
        if (!g->slot_used[s]) { g->slot_used[s] = 1; r->slots[k++] = s; }
    g->n_free -= n;
    /* Append at the tail: requests are served in arrival order. */
    jr_gen_req **pp = &g->head;
    while (*pp) pp = &(*pp)->next;
    *pp = r;
    *out = r;
    return JR_OK;
}

/* How many bytes at the end of text might begin a stop string (held back from streaming). */
static size_t stop_holdback(const jr_gen_params *p, const char *text, size_t len) {
    size_t hold = 0;
    for (int i = 0; i < p->n_stop; i++) {
        size_t sl = strlen(p->stop[i]);
        for (size_t k = sl > 1 ? sl - 1 : 0; k > hold; k--)
            if (k <= len && !memcmp(text + len - k, p->stop[i], k)) { hold = k; break; }
    }
    return hold;
}

static void emit(jr_gen_req *r, int i) {
    jr_gen_seq *s = &r->seqs[i];
    size_t end = s->text_len;
    if (!s->done) {
        size_t hold = stop_holdback(&r->p, s->text, s->text_len);
        end = s->text_len - hold;
        end -= jr_utf8_incomplete_tail(s->text, end, NULL);
    }
    if (end < s->emitted) end = s->emitted;
    int from = r->reported[i];
    size_t e0 = s->emitted;
    s->emitted = end;
    r->reported[i] = s->n_text_tokens;
    if (r->cb) r->cb(r->ud, r, i, s, s->text + e0, end - e0, from);
}

static void finish(jr_gen_req *r, int i, const char *reason) {
    jr_gen_seq *s = &r->seqs[i];
    if (s->done) return;
    s->done = 1;
    s->finish_reason = reason;
    r->n_done++;
}

static int in_list(int32_t t, const int32_t *ids, int n) {
    for (int i = 0; i < n; i++)
        if (ids[i] == t) return 1;
    return 0;
}

/* log softmax(row / t)[tok], over the ids the constraint allows when mask is given. */
static float logprob_of(const float *row, int n_logits, int n_valid, const uint8_t *mask, float t, int32_t tok) {
    if (!mask) return jr_logprob_at(row, n_logits, t, tok);
    return (float)((double)row[tok] / (double)t - jr_logsumexp_allowed(row, n_valid, t, mask));
}

/* tok's log-prob at the sampling temperature (*lp) and at temperature 1 (*raw), under mask when given. */
static void token_logprobs(const float *row, int n_logits, int n_valid, const uint8_t *mask, const jr_sample_params *sp,
                           int32_t tok, float *lp, float *raw) {
    float t = sp->temperature > 0.0f ? sp->temperature : 1.0f;
    *lp = logprob_of(row, n_logits, n_valid, mask, t, tok);
    *raw = t == 1.0f ? *lp : logprob_of(row, n_logits, n_valid, mask, 1.0f, tok);
}

/* The draws of the first nb rows of a step (decode rows: g->breq, g->bidx) whose request has no
 * constraint (its mask needs the sequence's state, which choose() advances), with their log-probs, in
 * parallel over the rows: over 151,936 logits a draw took 0.3-0.6 ms, with the other threads idle. Each
 * sequence draws from its own rng, so the tokens are those of drawing in order. A draw that fails
 * (before it touches the rng) is left to choose(), which reports it. */
static void presample(jr_gen *g, int nb) {
    int V = g->lm->n_logits, n_valid = g->v.tb.n, nt = g->n_wt;
#pragma omp parallel for schedule(static) num_threads(nt) if (nb > 1 && nt > 1)
    for (int b = 0; b < nb; b++) {
        jr_gen_req *r = g->breq[b];
        const jr_gen_params *p = &r->p;
        const float *row = g->logits + (size_t)b * (size_t)V;
        pre_draw *d = &g->pre[b];
        int32_t tok;
        d->tok = -1;
        if (p->constraint || jr_sample(row, n_valid, &p->sample, NULL, &r->rng[g->bidx[b]], &g->wt[omp_get_thread_num()], &tok))
            continue;
        d->tok = tok;
        if (p->logprobs) token_logprobs(row, V, n_valid, NULL, &p->sample, tok, &d->lp, &d->raw);
    }
}

/* Chooses sequence i's next token from its logits row (or takes presample's draw d) and applies every
 * stop rule. */
static jr_status choose(jr_gen *g, jr_gen_req *r, int i, const float *row, const pre_draw *d) {
    jr_gen_seq *s = &r->seqs[i];
    const jr_gen_params *p = &r->p;
    const uint8_t *mask = NULL;
    int n_valid = g->v.tb.n;
    int pre = d && d->tok >= 0; /* presample drew it (never under a constraint) */
    if (p->constraint) {
        int complete = 0;
        int count = jr_constraint_mask(p->constraint, &r->cs[i], g->mask, &complete);
        if (count < 0) { /* the constraint's budget ran out: this request fails, the others go on */
            if (!r->error) r->error = strdup(jr_errmsg());
            for (int k = 0; k < r->n; k++) finish(r, k, "error");
            return JR_OK;
        }
        if (complete && !p->ignore_eos)
            for (int e = 0; e < g->v.n_eos; e++)
                if (g->v.eos[e] >= 0 && g->v.eos[e] < n_valid && !g->mask[g->v.eos[e]]) { g->mask[g->v.eos[e]] = 1; count++; }
        if (count == 0) { /* the output is complete and nothing may follow, or a dead end */
            finish(r, i, "stop");
            emit(r, i);
            return JR_OK;
        }
        mask = g->mask;
    }
    int32_t tok = pre ? d->tok : -1;
    jr_status st = pre ? JR_OK : jr_sample(row, n_valid, &p->sample, mask, &r->rng[i], &g->w, &tok);
    if (st) return st;
    int k = s->n_tokens;
    s->tokens[k] = tok;
    s->tok_off[k] = s->text_len;
    if (p->logprobs) { /* under a constraint: log-probs in the constrained distribution the token was drawn from */
        if (pre) s->logprobs[k] = d->lp, s->raw_logprobs[k] = d->raw;
        else token_logprobs(row, g->lm->n_logits, n_valid, mask, &p->sample, tok, &s->logprobs[k], &s->raw_logprobs[k]);
    }
    if (p->top_logprobs > 0) {
        s->top_k = p->top_logprobs;
        int got = jr_top_logprobs(row, g->lm->n_logits, n_valid, mask, p->top_logprobs,
                                  s->top_ids + (size_t)k * (size_t)p->top_logprobs,
                                  s->top_lps + (size_t)k * (size_t)p->top_logprobs);
        for (int c = got; c < p->top_logprobs; c++) {
            s->top_ids[(size_t)k * (size_t)p->top_logprobs + (size_t)c] = -1;
            s->top_lps[(size_t)k * (size_t)p->top_logprobs + (size_t)c] = 0;
        }
    }
    s->n_tokens = k + 1;
    if ((!p->ignore_eos && in_list(tok, g->v.eos, g->v.n_eos)) || in_list(tok, p->stop_ids, p->n_stop_ids)) {
        finish(r, i, "stop");
    } else {
        s->n_text_tokens = k + 1;
        const char *b = tok < n_valid ? g->v.tb.bytes[tok] : NULL;
        size_t L = b ? (size_t)g->v.tb.len[tok] : 0;
        if (L) {
            char *nt = realloc(s->text, s->text_len + L + 1);
            if (!nt) return jr_fail(JR_ENOMEM, "generate: out of memory for the output text");
            s->text = nt;
            size_t old = s->text_len;
            memcpy(s->text + old, b, L);
            s->text_len += L;
            s->text[s->text_len] = 0;
            for (int j = 0; j < p->n_stop; j++) {
                size_t sl = strlen(p->stop[j]);
                if (!sl) continue;
                size_t from = old >= sl - 1 ? old - (sl - 1) : 0;
                char *hit = memmem(s->text + from, s->text_len - from, p->stop[j], sl);
                if (hit && (size_t)(hit - s->text) < s->text_len) {
                    s->text_len = (size_t)(hit - s->text);
                    s->text[s->text_len] = 0;
                    finish(r, i, "stop");
                }
            }
        }
        if (p->constraint && (st = jr_constraint_advance(p->constraint, &r->cs[i], tok))) return st;
    }
    if (!s->done && (s->n_tokens >= p->max_tokens || r->n_prompt + s->n_tokens >= g->lm->max_ctx)) finish(r, i, "length");
    r->pending[i] = tok;
    emit(r, i);
    return JR_OK;
}

/* The batched step: every running sequence's next row and up to g->chunk prompt tokens (whole
 * requests first come, first served; the last one taken may be cut) in one extend call. */
static jr_status step_batched(jr_gen *g) {
    jr_lm *lm = g->lm;
    int k = 0, nb = 0;
    for (jr_gen_req *r = g->head; r; r = r->next) {
        if (!r->prefilled) continue;
        for (int i = 0; i < r->n; i++) {
            if (r->seqs[i].done) continue;
            g->bslots[k] = r->slots[i];
            g->bptr[k] = &r->pending[i];
            g->bn[k] = 1;
            g->bstart[k] = r->n_prompt + r->seqs[i].n_tokens - 1;
            g->breq[k] = r;
            g->bidx[k] = i;
            k++;
        }
    }
    nb = k;
    long budget = prefill_budget(g, nb), prompt = 0;
    for (jr_gen_req *r = g->head; r && budget > 0; r = r->next) {
        if (r->prefilled || r->n_done == r->n) continue; /* cancelled before its prompt was in */
        int take = r->n_prompt - r->n_pre;
        if (take > budget) take = (int)budget;
        g->bslots[k] = r->slots[0];
        g->bptr[k] = r->prompt + r->n_pre;
        g->bn[k] = take;
        g->bstart[k] = r->n_pre;
        g->breq[k] = r;
        k++;
        budget -= take;
        prompt += take;
    }
    g->last_prompt = (int)prompt;
    if (k == 0) return JR_OK;
    double t0 = jr_cpu_s(); /* CPU time: wall time on a shared machine would count every preemption as the cost of the step's prompt rows */
    jr_status st = lm->extend(lm->impl, k, g->bslots, g->bptr, g->bn, g->bstart, g->logits);
    if (st) return st;
    presample(g, nb);
    for (int b = 0; b < nb; b++)
        if ((st = choose(g, g->breq[b], g->bidx[b], g->logits + (size_t)b * (size_t)lm->n_logits, &g->pre[b]))) return st;
    step_timed(g, nb, prompt, jr_cpu_s() - t0);
    for (int b = nb; b < k; b++) {
        jr_gen_req *r = g->breq[b];
        r->n_pre += g->bn[b];
        if (r->n_pre < r->n_prompt) continue;
        r->prefilled = 1;
        const float *row = g->logits + (size_t)b * (size_t)lm->n_logits;
        for (int i = 1; i < r->n; i++)
            if ((st = lm->copy(lm->impl, r->slots[i], r->slots[0]))) return st;
        for (int i = 0; i < r->n; i++)
            if ((st = choose(g, r, i, row, NULL))) return st;
    }
    return JR_OK;
}

jr_status jr_gen_step(jr_gen *g) {
    jr_lm *lm = g->lm;
    if (lm->extend && lm->batch_prefill) return step_batched(g);
    /* Decode: one token for every running sequence, in one batch. */
    int nb = 0;
    for (jr_gen_req *r = g->head; r; r = r->next) {
        if (!r->prefilled) continue;
        for (int i = 0; i < r->n; i++) {
            if (r->seqs[i].done) continue;
            g->bslots[nb] = r->slots[i];
            g->btoks[nb] = r->pending[i];
            g->breq[nb] = r;
            g->bidx[nb] = i;
            nb++;
        }
    }
    jr_status st;
    if (nb > 0) {
        if ((st = lm->decode(lm->impl, nb, g->bslots, g->btoks, g->logits))) return st;
        presample(g, nb);
        for (int b = 0; b < nb; b++)
            if ((st = choose(g, g->breq[b], g->bidx[b], g->logits + (size_t)b * (size_t)lm->n_logits, &g->pre[b]))) return st;
    }
    /* Prefill: new requests, one prompt pass shared by the request's n sequences. */
    for (jr_gen_req *r = g->head; r; r = r->next) {
        if (r->prefilled) continue;
        r->prefilled = 1;
        float *row = g->logits;
        if ((st = lm->prefill(lm->impl, r->slots[0], r->prompt, r->n_prompt, row))) return st;
        for (int i = 1; i < r->n; i++)
            if ((st = lm->copy(lm->impl, r->slots[i], r->slots[0]))) return st;
        for (int i = 0; i < r->n; i++)
            if ((st = choose(g, r, i, row, NULL))) return st;
    }
    return JR_OK;
}

int jr_gen_req_n(const jr_gen_req *r) { return r->n; }
const jr_gen_seq *jr_gen_req_seq(const jr_gen_req *r, int i) { return &r->seqs[i]; }
int jr_gen_req_prompt_len(const jr_gen_req *r) { return r->n_prompt; }
int jr_gen_req_done(const jr_gen_req *r) { return r->n_done == r->n; }
const char *jr_gen_req_error(const jr_gen_req *r) {
    if (r->error) return r->error;
    const char *f = r->n > 0 ? r->seqs[0].finish_reason : NULL;
    return f && !strcmp(f, "error") ? "the output constraint failed (out of memory for its message)" : NULL;
}

void jr_gen_cancel(jr_gen *g, jr_gen_req *r) {
    (void)g;
    for (int i = 0; i < r->n; i++) finish(r, i, "abort");
}

void jr_gen_release(jr_gen *g, jr_gen_req *r) {
    jr_gen_req **pp = &g->head;
    while (*pp && *pp != r) pp = &(*pp)->next;
    if (*pp) *pp = r->next;
    for (int i = 0; i < r->n; i++) g->slot_used[r->slots[i]] = 0;
    g->n_free += r->n;
    req_free(r);
}

jr_status jr_generate(jr_lm *lm, const jr_gen_vocab *vocab, int n_prompts, const int32_t *const *prompts,
                      const int *prompt_lens, int n, const jr_gen_params *params, jr_gen_seq *outs) {
    memset(outs, 0, (size_t)n_prompts * (size_t)n * sizeof *outs);
    jr_gen *g;
    jr_status st = jr_gen_open(&g, lm, vocab, params->seed);
    if (st) return st;
    jr_gen_req **reqs = calloc((size_t)(n_prompts > 0 ? n_prompts : 1), sizeof *reqs);
    if (!reqs) { jr_gen_close(g); return jr_fail(JR_ENOMEM, "generate: out of memory"); }
    int next = 0, finished = 0;
    while (finished < n_prompts) {
        while (next < n_prompts && jr_gen_free_slots(g) >= n) {
            jr_gen_params p = *params;
            p.seed = params->seed + (uint64_t)next;
            if ((st = jr_gen_add(g, prompts[next], prompt_lens[next], n, &p, NULL, NULL, &reqs[next]))) {
                jr_fail_ctx(st, "prompt %d", next);
                goto fail;
            }
            next++;
        }
        if ((st = jr_gen_step(g))) goto fail;
        for (int q = 0; q < next; q++) {
            if (!reqs[q] || !jr_gen_req_done(reqs[q])) continue;
            if (jr_gen_req_error(reqs[q])) {
                st = jr_fail(JR_EINVAL, "prompt %d: %s", q, jr_gen_req_error(reqs[q]));
                goto fail;
            }
            for (int i = 0; i < n; i++) {
                outs[(size_t)q * (size_t)n + (size_t)i] = reqs[q]->seqs[i];
                memset(&reqs[q]->seqs[i], 0, sizeof reqs[q]->seqs[i]);
            }
            jr_gen_release(g, reqs[q]);
            reqs[q] = NULL;
            finished++;
        }
    }
    free(reqs);
    jr_gen_close(g);
    return JR_OK;
fail:
    for (size_t i = 0; i < (size_t)n_prompts * (size_t)n; i++) jr_gen_seq_free(&outs[i]);
    free(reqs);
    jr_gen_close(g);
    return st;
}
