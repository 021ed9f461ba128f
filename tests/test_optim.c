/* test_optim.c - learning-rate schedules (transformers' formulas), gradient clipping, one AdamW step by hand */
#include <math.h>
#include <string.h>

#include "harness.h"
#include "judgerl/model.h"
#include "judgerl/optim.h"

TEST(schedules) {
    jr_schedule c = {JR_SCHED_CONSTANT, 0.1, 4, 100};
    CHECK_NEAR(jr_schedule_lr(&c, 0), 0.0, 1e-15, 0);
    CHECK_NEAR(jr_schedule_lr(&c, 2), 0.05, 1e-15, 0);
    CHECK_NEAR(jr_schedule_lr(&c, 4), 0.1, 1e-15, 0);
    CHECK_NEAR(jr_schedule_lr(&c, 99), 0.1, 1e-15, 0);
    jr_schedule l = {JR_SCHED_LINEAR, 0.1, 2, 10};
    CHECK_NEAR(jr_schedule_lr(&l, 1), 0.05, 1e-15, 0);
    CHECK_NEAR(jr_schedule_lr(&l, 2), 0.1, 1e-15, 0);
    CHECK_NEAR(jr_schedule_lr(&l, 6), 0.05, 1e-15, 0);   /* (10 - 6) / (10 - 2) */
    CHECK_NEAR(jr_schedule_lr(&l, 10), 0.0, 1e-15, 0);
    CHECK_NEAR(jr_schedule_lr(&l, 12), 0.0, 1e-15, 0);
    jr_schedule k = {JR_SCHED_COSINE, 0.1, 2, 12};
    CHECK_NEAR(jr_schedule_lr(&k, 2), 0.1, 1e-15, 0);
    CHECK_NEAR(jr_schedule_lr(&k, 7), 0.05, 1e-12, 0);   /* half way: 0.5 * (1 + cos(pi/2)) */
    CHECK_NEAR(jr_schedule_lr(&k, 12), 0.0, 1e-12, 0);
    CHECK(jr_sched_parse("cosine") == JR_SCHED_COSINE && jr_sched_parse("linear") == JR_SCHED_LINEAR &&
          jr_sched_parse("constant") == JR_SCHED_CONSTANT && jr_sched_parse("step") == -1);
}

static int tiny(jr_model *m) {
    jr_model_config c;
    jr_model_config_init(&c, JR_ARCH_QWEN2);
    c.hidden_size = 8; c.num_hidden_layers = 1; c.num_attention_heads = 2; c.num_key_value_heads = 1;
    c.head_dim = 4; c.intermediate_size = 12; c.vocab_size = 11; c.max_position_embeddings = 16;
    c.tie_word_embeddings = 1;
    return jr_model_init_random(m, &c, 3, 0.5f);
}

TEST(clip_and_adamw) {
    jr_model m;
    CHECK_OK(tiny(&m));
    if (jt_failed_case) return;
    CHECK_OK(jr_model_alloc_grads(&m));
    /* biases of Qwen2 start at 0 and norms at 1; the tensor list has both */
    int qb = jr_model_find(&m, "model.layers.0.self_attn.q_proj.bias");
    int nw = jr_model_find(&m, "model.norm.weight");
    int qw = jr_model_find(&m, "model.layers.0.self_attn.q_proj.weight");
    CHECK(qb >= 0 && nw >= 0 && qw >= 0);
    if (jt_failed_case) { jr_model_free(&m); return; }
    for (size_t i = 0; i < m.n_params; i++) m.grads[i] = 0;
    m.grads[m.offset[qw]] = 3.0f;
    m.grads[m.offset[nw]] = 4.0f;
    CHECK_NEAR(jr_grad_norm(&m), 5.0, 1e-12, 0);
    double before = jr_clip_grad_norm(&m, 1.0);
    CHECK_NEAR(before, 5.0, 1e-12, 0);
    CHECK_NEAR(m.grads[m.offset[qw]], 3.0 / (5.0 + 1e-6), 1e-7, 0);
    CHECK_NEAR(jr_clip_grad_norm(&m, 10.0), 1.0, 1e-6, 0); /* below the limit: unchanged */
    CHECK_NEAR(m.grads[m.offset[nw]], 4.0 / (5.0 + 1e-6), 1e-7, 0);

    /* one AdamW step: |update| = lr for a nonzero gradient (m/sqrt(v) = sign after bias correction);
     * decay shrinks 2-D weights only */
    jr_adamw o;
    CHECK_OK(jr_adamw_init(&o, &m, 0.9, 0.999, 1e-8, 0.5));
    float w0 = m.params[m.offset[qw]], w1 = m.params[m.offset[qw] + 1];
    float n0 = m.params[m.offset[nw]], b1 = m.params[m.offset[qb] + 1];
    m.params[m.offset[qb] + 1] = b1 = 0.25f;
    jr_adamw_step(&o, &m, 0.01);
    CHECK_NEAR(m.params[m.offset[qw]], w0 * (1 - 0.01 * 0.5) - 0.01, 1e-6, 0);
    CHECK_NEAR(m.params[m.offset[qw] + 1], w1 * (1 - 0.01 * 0.5), 1e-7, 0); /* zero gradient: decay only */
    CHECK_NEAR(m.params[m.offset[nw]], n0 - 0.01, 1e-6, 0);                 /* norm: no decay */
    CHECK(m.params[m.offset[qb] + 1] == b1);                                /* bias: no decay, no gradient */
    CHECK(o.t == 1);
    jr_adamw_free(&o);
    jr_model_free(&m);
}

int main(void) {
    RUN(schedules);
    RUN(clip_and_adamw);
    return jt_done();
}
