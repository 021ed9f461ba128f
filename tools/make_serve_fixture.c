/* make_serve_fixture.c - writes tests/fixtures/serve/tiny: a random Llama-layout model for the byte tokenizer
 * (262 ids, 2 padded rows), used by the generate/serve CLI tests. Build and run from the repo root:
 *   make && cc -std=c11 -D_GNU_SOURCE -Iinclude tools/make_serve_fixture.c build/rel/libjudgerl.a \
 *      $(pkg-config --libs jansson yaml-0.1 openblas) -lm -fopenmp -o /tmp/mk && /tmp/mk */
#include <stdio.h>

#include "judgerl/model.h"

int main(void) {
    jr_model_config c;
    jr_model_config_init(&c, JR_ARCH_LLAMA);
    c.hidden_size = 32;
    c.num_hidden_layers = 2;
    c.num_attention_heads = 4;
    c.num_key_value_heads = 2;
    c.head_dim = 8;
    c.intermediate_size = 64;
    c.vocab_size = 264;
    c.max_position_embeddings = 512;
    c.tie_word_embeddings = 1;
    c.bos_token_id = 256;
    c.n_eos = 1;
    c.eos_token_ids[0] = 257;
    jr_model m;
    if (jr_model_init_random(&m, &c, 2026, 0.3f)) { fprintf(stderr, "%s\n", jr_errmsg()); return 1; }
    jr_generation_config g;
    jr_generation_config_init(&g);
    g.bos_token_id = 256;
    g.n_eos = 1;
    g.eos_token_ids[0] = 257;
    if (jr_model_save(&m, "tests/fixtures/serve/tiny", &g)) { fprintf(stderr, "%s\n", jr_errmsg()); return 1; }
    jr_model_free(&m);
    return 0;
}
