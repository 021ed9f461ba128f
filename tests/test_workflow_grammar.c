/* test_workflow_grammar.c - the workflow grammar for constrained decoding: every sample it lets
 * through parses and passes the static checks (random scores over a byte + piece vocabulary, and
 * 1,000 samples from a small random-weight model through jr_generate) */
#include "harness.h"

#include "judgerl/generate.h"
#include "judgerl/kvcache.h"
#include "judgerl/model.h"
#include "judgerl/sampler.h"
#include "judgerl/workflow.h"

/* 256 bytes, an eos id, and pieces a workflow tokenizer would have. */
static const char *extra[] = {"answer(", "custom(", "codegen(", "program(", "ensemble(", "mdensemble(", "test(", "review(",
                              "revise(", "format(", "refine(", "problem", "problem)", " = ", "return ", ")\n", ", ",
                              " x5", " x3", "@\"", "\")", "[", "], ", ", mode=llm)", "ans", "code", "r1", "a", "b", "c",
                              "xs", "Think step by step.", "Solve", " it", "\n", "return a\n", "e\xcc\x81", "= ", "  "};
#define NX (int)(sizeof extra / sizeof *extra)
#define NV (256 + 1 + NX)
#define EOS 256
static char byte_str[256][2];
static const char *bytes[NV];
static int32_t lens[NV];
static jr_gen_vocab GV;

static void vocab_init(void) {
    for (int b = 0; b < 256; b++) {
        byte_str[b][0] = (char)b;
        bytes[b] = byte_str[b];
        lens[b] = 1;
    }
    bytes[EOS] = NULL;
    lens[EOS] = 0;
    for (int i = 0; i < NX; i++) {
        bytes[257 + i] = extra[i];
        lens[257 + i] = (int32_t)strlen(extra[i]);
    }
    static const int32_t eos[1] = {EOS};
    GV.tb = (jr_token_bytes){NV, bytes, lens};
    GV.eos = eos;
    GV.n_eos = 1;
}

/* Parses s with lim; prints the message when it fails. */
static int parses(const char *s, const jr_workflow_limits *lim, jr_workflow **w) {
    *w = NULL;
    if (jr_workflow_parse(s, strlen(s), lim, w) == JR_OK) return 1;
    printf("  sample rejected: %s\n  ---\n%s\n  ---\n", jr_errmsg(), s);
    return 0;
}

/* One constrained walk with random normal scores (std `temp`); returns the output (caller frees). */
static char *walk(const jr_constraint *c, jr_rng *r, float temp, int *ended) {
    jr_cstate s;
    if (jr_cstate_init(&s, c)) return NULL;
    uint8_t mask[NV];
    float logits[NV];
    jr_sample_scratch sw = {0};
    jr_sample_params p = jr_sample_params_default();
    *ended = 0;
    for (int step = 0; step < 8000; step++) {
        int complete = 0;
        int n = jr_constraint_mask(c, &s, mask, &complete);
        if (complete) { mask[EOS] = 1; n++; }
        if (n == 0) break;
        for (int i = 0; i < NV; i++) logits[i] = (float)(temp * jr_rng_normal(r));
        int32_t t;
        if (jr_sample(logits, NV, &p, mask, r, &sw, &t)) break;
        if (t == EOS) { *ended = 1; break; }
        if (jr_constraint_advance(c, &s, t)) break;
    }
    char *out = malloc(s.len + 1);
    memcpy(out, s.buf ? s.buf : "", s.len);
    out[s.len] = 0;
    jr_cstate_free(&s);
    jr_sample_scratch_free(&sw);
    return out;
}

TEST(random_walks_always_parse) {
    jr_workflow_limits lims[] = {jr_workflow_limits_default(), {4, 1, 6}, {3, 1, 1}, {8, 2, 40}};
    jr_rng r;
    jr_rng_seed(&r, 11);
    int total = 0, ops_seen[JR_WF_N_OPS] = {0}, repeats = 0, lists = 0, llm = 0;
    for (size_t k = 0; k < sizeof lims / sizeof *lims; k++) {
        jr_constraint *c;
        CHECK_OK(jr_workflow_constraint(&c, &GV.tb, &lims[k]));
        if (!c) continue;
        for (int it = 0; it < 400; it++) {
            int ended;
            char *o = walk(c, &r, it % 2 ? 2.0f : 6.0f, &ended);
            jr_workflow *w;
            CHECK_MSG(ended, "walk %d did not end: '%s'", it, o);
            int ok = parses(o, &lims[k], &w);
            CHECK(ok);
            if (w) {
                total++;
                CHECK(w->max_calls <= lims[k].max_calls && w->n_stmts + 1 <= lims[k].max_statements);
                for (int i = 0; i < w->n_nodes; i++) {
                    if (w->nodes[i].type == JR_WF_N_CALL) ops_seen[w->nodes[i].op]++;
                    if (w->nodes[i].type == JR_WF_N_LIST) lists++;
                    if (w->nodes[i].mode_llm) llm++;
                }
                for (int i = 0; i < w->n_stmts; i++) repeats += w->stmts[i].repeat > 1;
            }
            jr_workflow_free(w);
            free(o);
        }
        jr_constraint_free(c);
    }
    CHECK(total == 1600);
    /* the grammar reaches every operator and construct, not a narrow corner of the language */
    for (int o = 0; o < JR_WF_N_OPS; o++) CHECK_MSG(ops_seen[o] > 0, "operator %s never sampled", jr_wf_op_name((jr_wf_op)o));
    CHECK(repeats > 0 && lists > 0 && llm > 0);
}

TEST(mask_follows_definitions) {
    jr_constraint *c;
    jr_workflow_limits lim = jr_workflow_limits_default();
    CHECK_OK(jr_workflow_constraint(&c, &GV.tb, &lim));
    jr_cstate s;
    CHECK_OK(jr_cstate_init(&s, c));
    const char *prefix = "a = answer(problem)\nb = answer(";
    for (const char *p = prefix; *p; p++) CHECK_OK(jr_constraint_advance(c, &s, (unsigned char)*p));
    uint8_t mask[NV];
    int complete;
    jr_constraint_mask(c, &s, mask, &complete);
    CHECK(mask['a'] && mask['p'] && !mask['b'] && !mask['z'] && !complete);
    /* "b" is not defined yet: the byte is refused by advance too */
    CHECK(jr_constraint_advance(c, &s, 'b') == JR_EINVAL);
    jr_cstate_free(&s);
    /* test() is the only operator starting with 't' and needs code: with only text defined,
     * "t = t" cannot continue */
    CHECK_OK(jr_cstate_init(&s, c));
    for (const char *p = "a = answer(problem)\nt = t"; *p; p++) {
        jr_status st = jr_constraint_advance(c, &s, (unsigned char)*p);
        if (p[1]) CHECK_OK(st);
        else CHECK(st == JR_EINVAL);
    }
    jr_cstate_free(&s);
    jr_constraint_free(c);
    jr_workflow_limits bad = {40, 3, 24};
    CHECK(jr_workflow_constraint(&c, &GV.tb, &bad) == JR_EINVAL && c == NULL);
}

TEST(random_model_samples_parse) {
    jr_model_config cfg;
    jr_model_config_init(&cfg, JR_ARCH_QWEN3);
    cfg.hidden_size = 32;
    cfg.num_hidden_layers = 2;
    cfg.num_attention_heads = 4;
    cfg.num_key_value_heads = 2;
    cfg.head_dim = 8;
    cfg.intermediate_size = 64;
    cfg.vocab_size = NV;
    cfg.max_position_embeddings = 4096;
    cfg.qk_norm = 1;
    jr_model m;
    if (jr_model_init_random(&m, &cfg, 3, 0.5f)) { CHECK_OK(1); return; }
    const int slots = 8;
    jr_lm lm;
    CHECK_OK(jr_kv_lm_open(&lm, &m, slots, 3200));
    jr_workflow_limits lim = {6, 3, 16};
    jr_constraint *c;
    CHECK_OK(jr_workflow_constraint(&c, &GV.tb, &lim));
    jr_gen_params gp = jr_gen_params_default();
    gp.max_tokens = 3000; /* above the longest accepted workflow under these limits */
    gp.constraint = c;
    gp.has_seed = 1;
    gp.sample.temperature = 1.0f;
    int32_t prompt[] = {'w', 'o', 'r', 'k', 'f', 'l', 'o', 'w', ':', '\n'};
    const int32_t *prompts[] = {prompt};
    int plen[] = {10};
    int good = 0, n = 0, stmts = 0;
    jr_gen_seq outs[8];
    for (int batch = 0; batch < 1000 / slots; batch++) {
        gp.seed = (uint64_t)batch;
        if (jr_generate(&lm, &GV, 1, prompts, plen, slots, &gp, outs)) { CHECK_OK(1); break; }
        for (int i = 0; i < slots; i++) {
            n++;
            jr_workflow *w;
            int ok = !strcmp(outs[i].finish_reason, "stop") && parses(outs[i].text, &lim, &w);
            CHECK_MSG(ok, "sample %d finish=%s", n, outs[i].finish_reason);
            if (ok) { good++; stmts += w->n_stmts; }
            jr_workflow_free(w);
            jr_gen_seq_free(&outs[i]);
        }
    }
    printf("  %d of %d samples parse (%.2f assignments on average)\n", good, n, n ? (double)stmts / n : 0);
    CHECK(n == 1000 && good == 1000);
    jr_constraint_free(c);
    jr_kv_lm_close(&lm);
    jr_model_free(&m);
}

/* jr_workflow_random: every result parses under the limits, the walks reach every operator, and stay short. */
TEST(random_workflows_parse_and_vary) {
    jr_workflow_limits lims[] = {{3, 1, 8}, {4, 1, 6}, {2, 1, 24}};
    for (int li = 0; li < 3; li++) {
        jr_rng r;
        jr_rng_seed2(&r, 11, (uint64_t)li);
        int seen[16] = {0}, bad = 0, distinct = 0;
        char *prev[400] = {0};
        for (int it = 0; it < 400; it++) {
            char *o = NULL;
            CHECK_OK(jr_workflow_random(&lims[li], &r, &o));
            jr_workflow *w;
            if (!o || !parses(o, &lims[li], &w)) { bad++; free(o); continue; }
            CHECK(w->n_stmts + 1 <= lims[li].max_statements);
            for (int k = 0; k < 11; k++)
                if (strstr(o, jr_wf_op_name((jr_wf_op)k))) seen[k] = 1;
            int dup = 0;
            for (int j = 0; j < it && !dup; j++) dup = prev[j] && !strcmp(prev[j], o);
            distinct += !dup;
            prev[it] = o;
            jr_workflow_free(w);
        }
        CHECK_MSG(bad == 0, "limits %d: %d random workflows did not parse", li, bad);
        int ops = 0;
        for (int k = 0; k < 11; k++) ops += seen[k];
        CHECK_MSG(ops >= (li == 2 ? 5 : 10), "limits %d: only %d operators appear", li, ops);
        CHECK_MSG(distinct >= (li == 2 ? 20 : 100), "limits %d: only %d distinct workflows in 400", li, distinct);
        for (int j = 0; j < 400; j++) free(prev[j]);
    }
}

/* jr_workflow_random_with ordered_names: the k-th assignment is the k-th letter; with max_statements 2 every
 * workflow is one assignment to `a` and `return a`, and the operators still vary. */
TEST(random_workflows_with_ordered_names) {
    jr_workflow_limits lims[] = {{3, 1, 8}, {2, 1, 8}};
    jr_wf_random_opts o = {.ordered_names = 1};
    for (int li = 0; li < 2; li++) {
        jr_rng r;
        jr_rng_seed2(&r, 12, (uint64_t)li);
        int bad = 0, two = 0, seen[JR_WF_N_OPS] = {0};
        for (int it = 0; it < 300; it++) {
            char *t = NULL;
            CHECK_OK(jr_workflow_random_with(&lims[li], &o, &r, &t));
            jr_workflow *w;
            if (!t || !parses(t, &lims[li], &w)) { bad++; free(t); continue; }
            for (int k = 0; k < w->n_stmts; k++)
                if (strlen(w->stmts[k].name) != 1 || w->stmts[k].name[0] != 'a' + k) bad++;
            two += w->n_stmts == 2;
            if (jr_workflow_returned_op(w) < JR_WF_N_OPS) seen[jr_workflow_returned_op(w)] = 1;
            if (li == 1 && (w->n_stmts != 1 || strncmp(t, "a = ", 4) || !strstr(t, "\nreturn a"))) bad++;
            jr_workflow_free(w);
            free(t);
        }
        int ops = 0;
        for (int k = 0; k < JR_WF_N_OPS; k++) ops += seen[k];
        CHECK_MSG(bad == 0, "limits %d: %d workflows misnamed or not parsing", li, bad);
        CHECK_MSG(li == 1 || two > 30, "limits %d: only %d of 300 have two assignments", li, two);
        CHECK_MSG(ops >= 5, "limits %d: only %d operators returned", li, ops);
    }
}

int main(void) {
    RUN(random_workflows_with_ordered_names);
    vocab_init();
    RUN(random_workflows_parse_and_vary);
    RUN(mask_follows_definitions);
    RUN(random_walks_always_parse);
    RUN(random_model_samples_parse);
    return jt_done();
}
