/* test_ckpt_final.c - a run's final model: written beside and renamed over, replaced whole, no leftovers */
#include "harness.h"

#include "judgerl/checkpoint.h"
#include "judgerl/fsutil.h"
#include "judgerl/model.h"

static int make_model(jr_model *m, uint64_t seed) {
    jr_model_config c;
    jr_model_config_init(&c, JR_ARCH_QWEN2);
    c.hidden_size = 16; c.num_hidden_layers = 1; c.num_attention_heads = 2; c.num_key_value_heads = 1;
    c.head_dim = 8; c.intermediate_size = 24; c.vocab_size = 40; c.max_position_embeddings = 32;
    c.tie_word_embeddings = 1;
    return jr_model_init_random(m, &c, seed, 0.02f) == JR_OK;
}

static int same_params(const jr_model *a, const jr_model *b) {
    return a->n_params == b->n_params && !memcmp(a->params, b->params, sizeof(float) * a->n_params);
}

TEST(final_model_replaced_whole) {
    char *run = jt_tmpdir("final");
    jr_model m1, m2, back;
    if (!run || !make_model(&m1, 1) || !make_model(&m2, 2)) { CHECK(0); return; }
    CHECK(!same_params(&m1, &m2));
    /* leftovers of a crash before: a half-written temp dir must not end up in the model */
    char *stale = jr_path_join(run, ".tmp-model");
    CHECK_OK(jr_mkdirs(stale));
    char *junk = jr_path_join(stale, "junk.txt");
    CHECK_OK(jr_write_atomic(junk, "x", 1));
    CHECK_OK(jr_ckpt_save_final(run, "model", &m1, NULL, NULL, NULL));
    char *dir = jr_path_join(run, "model"), *junk2 = jr_path_join(dir, "junk.txt");
    CHECK(!jr_path_exists(junk2));
    CHECK_OK(jr_model_load(&back, dir));
    CHECK(same_params(&back, &m1));
    jr_model_free(&back);
    /* a second save replaces the first entirely and leaves no temp or old directory */
    CHECK_OK(jr_ckpt_save_final(run, "model", &m2, NULL, NULL, NULL));
    CHECK_OK(jr_model_load(&back, dir));
    CHECK(same_params(&back, &m2));
    jr_model_free(&back);
    char *old = jr_path_join(run, ".old-model");
    CHECK(!jr_path_exists(stale) && !jr_path_exists(old));
    free(stale); free(junk); free(dir); free(junk2); free(old); free(run);
    jr_model_free(&m1);
    jr_model_free(&m2);
}

int main(void) {
    RUN(final_model_replaced_whole);
    return jt_done();
}
