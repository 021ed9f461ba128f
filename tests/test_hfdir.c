/* test_hfdir.c - HF model directories: config.json parsing and errors, the tensor list, directory read/write */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <unistd.h>

#include "harness.h"
#include "judgerl/fsutil.h"
#include "judgerl/hfmodel.h"
#include "judgerl/rng.h"

static char *tmp;

static char *path2(const char *a, const char *b) {
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", a, b);
    return strdup(p);
}

static char *fixture(const char *name) {
    char p[1024];
    snprintf(p, sizeof p, "%s/tests/fixtures/hfio/%s", jt_root(), name);
    return strdup(p);
}

/* The values tests/hfio_writer.py stores: element j of the t-th tensor in module order. */
static float writer_value(int t, int64_t j) { return (float)((double)((7 * j + 13 * t) % 41 - 20) / 16.0); }

static int check_writer_values(const jr_hfdir *d) {
    int bad = 0;
    for (int i = 0; i < d->n_tensors; i++) {
        float *x = malloc((size_t)d->tensors[i].numel * sizeof *x);
        if (jr_hfdir_read_f32(d, i, x)) { bad++; free(x); continue; }
        for (int64_t j = 0; j < d->tensors[i].numel; j++)
            if (x[j] != writer_value(i, j)) { if (bad++ < 3) printf("  %s[%lld] = %g\n", d->tensors[i].name, (long long)j, x[j]); }
        free(x);
    }
    return bad;
}

/* A directory written by an independent writer (sharded, BF16, llama3 rope) loads with every value. */
TEST(independent_sharded_llama) {
    char *dir = fixture("llama_sharded");
    jr_hfdir d;
    CHECK_OK(jr_hfdir_open(&d, dir));
    free(dir);
    if (!d.dir) return;
    const jr_model_config *c = &d.cfg;
    CHECK(c->arch == JR_ARCH_LLAMA && c->hidden_size == 16 && c->num_hidden_layers == 2);
    CHECK(c->num_attention_heads == 4 && c->num_key_value_heads == 2 && c->head_dim == 4 && c->intermediate_size == 32);
    CHECK(c->vocab_size == 32 && c->max_position_embeddings == 128 && c->rms_norm_eps == 1e-5 && c->rope_theta == 500000);
    CHECK(c->rope_type == JR_ROPE_LLAMA3 && c->rope_factor == 32 && c->rope_low_freq_factor == 1 &&
          c->rope_high_freq_factor == 4 && c->rope_original_max_pos == 8192);
    CHECK(!c->tie_word_embeddings && !c->qkv_bias && !c->o_bias && !c->qk_norm);
    CHECK(c->bos_token_id == 1 && c->n_eos == 2 && c->eos_token_ids[0] == 2 && c->eos_token_ids[1] == 3);
    CHECK_STR(c->torch_dtype, "bfloat16");
    CHECK(d.has_gen && d.gen.n_eos == 2 && d.gen.eos_token_ids[1] == 3 && d.gen.temperature == 0.6 &&
          d.gen.top_p == 0.9 && d.gen.do_sample == 1 && d.gen.top_k == -1 && isnan(d.gen.min_p));
    CHECK(d.n_files == 4 && d.n_tensors == 21);
    CHECK(d.st[0]->dtype == JR_DT_BF16);
    CHECK(strstr(jr_hfdir_file_of(&d, 0), "model-00001-of-00004.safetensors") != NULL);
    CHECK(strstr(jr_hfdir_file_of(&d, d.n_tensors - 1), "model-00004-of-00004.safetensors") != NULL);
    CHECK_MSG(check_writer_values(&d) == 0, "values differ");
    jr_hfdir_close(&d);
}

/* Qwen3, tied embeddings, F16, with an exporter's redundant lm_head.weight (ignored). */
TEST(independent_qwen3_tied) {
    char *dir = fixture("qwen3_tied");
    jr_hfdir d;
    CHECK_OK(jr_hfdir_open(&d, dir));
    free(dir);
    if (!d.dir) return;
    CHECK(d.cfg.arch == JR_ARCH_QWEN3 && d.cfg.head_dim == 8 && d.cfg.qk_norm && d.cfg.tie_word_embeddings);
    CHECK(d.n_files == 1 && d.files[0].n == d.n_tensors + 1); /* the file has lm_head.weight too */
    CHECK(strcmp(d.tensors[d.n_tensors - 1].name, "lm_head.weight") != 0);
    CHECK_STR(d.tensors[3].name, "model.layers.0.self_attn.k_proj.weight");
    CHECK(d.tensors[3].shape[0] == 16 && d.tensors[3].shape[1] == 16); /* kv_heads 2 x head_dim 8 */
    CHECK_STR(d.tensors[6].name, "model.layers.0.self_attn.q_norm.weight");
    CHECK(d.tensors[6].ndim == 1 && d.tensors[6].shape[0] == 8);
    CHECK_MSG(check_writer_values(&d) == 0, "values differ");
    jr_hfdir_close(&d);
}

/* The tensor list of each architecture, in order. */
TEST(tensor_lists) {
    jr_model_config c;
    jr_model_config_init(&c, JR_ARCH_QWEN2);
    c.hidden_size = 8; c.num_hidden_layers = 2; c.num_attention_heads = 4; c.num_key_value_heads = 2;
    c.head_dim = 2; c.intermediate_size = 12; c.vocab_size = 10;
    jr_model_tensor *t;
    int n;
    CHECK_OK(jr_model_tensors(&c, &t, &n));
    static const char *want[] = {
        "model.embed_tokens.weight", "model.layers.0.input_layernorm.weight", "model.layers.0.self_attn.q_proj.weight",
        "model.layers.0.self_attn.k_proj.weight", "model.layers.0.self_attn.v_proj.weight",
        "model.layers.0.self_attn.o_proj.weight", "model.layers.0.self_attn.q_proj.bias",
        "model.layers.0.self_attn.k_proj.bias", "model.layers.0.self_attn.v_proj.bias",
        "model.layers.0.post_attention_layernorm.weight", "model.layers.0.mlp.gate_proj.weight",
        "model.layers.0.mlp.up_proj.weight", "model.layers.0.mlp.down_proj.weight"};
    CHECK(n == 1 + 2 * 12 + 2);
    for (int i = 0; i < 13 && i < n; i++) CHECK_STR(t[i].name, want[i]);
    CHECK(t[7].role == JR_T_K_BIAS && t[7].layer == 0 && t[7].shape[0] == 4 && t[7].ndim == 1);
    CHECK(t[12].role == JR_T_DOWN && t[12].shape[0] == 8 && t[12].shape[1] == 12);
    CHECK(t[13].layer == 1 && t[n - 1].role == JR_T_LM_HEAD && t[n - 2].role == JR_T_FINAL_NORM);
    int64_t sum = 0;
    for (int i = 0; i < n; i++) sum += t[i].numel;
    CHECK(sum == jr_model_param_count(&c));
    CHECK(sum == 80 + 2 * (8 + 64 + 32 + 32 + 64 + 8 + 4 + 4 + 8 + 96 * 3) + 8 + 80);
    free(t);
    /* Llama with attention_bias: o_proj has a bias too; tied: no lm_head */
    jr_model_config_init(&c, JR_ARCH_LLAMA);
    c.hidden_size = 8; c.num_hidden_layers = 1; c.num_attention_heads = 2; c.num_key_value_heads = 2;
    c.head_dim = 4; c.intermediate_size = 12; c.vocab_size = 10; c.qkv_bias = c.o_bias = 1; c.tie_word_embeddings = 1;
    CHECK_OK(jr_model_tensors(&c, &t, &n));
    CHECK(n == 1 + 13 + 1);
    CHECK_STR(t[9].name, "model.layers.0.self_attn.o_proj.bias");
    CHECK(t[n - 1].role == JR_T_FINAL_NORM);
    free(t);
    c.num_key_value_heads = 3;
    CHECK(jr_model_tensors(&c, &t, &n) == JR_EINVAL);
    CHECK(t == NULL && n == 0);
}

static json_t *base_config(void) {
    return json_pack("{s:[s],s:s,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:f,s:f,s:b,s:s,s:i,s:i}", "architectures",
                     "LlamaForCausalLM", "model_type", "llama", "hidden_size", 64, "intermediate_size", 128,
                     "num_hidden_layers", 2, "num_attention_heads", 8, "num_key_value_heads", 4, "vocab_size", 100,
                     "max_position_embeddings", 256, "rms_norm_eps", 1e-5, "rope_theta", 10000.0,
                     "tie_word_embeddings", 0, "hidden_act", "silu", "bos_token_id", 1, "eos_token_id", 2);
}

static jr_status parse_json(json_t *j, jr_model_config *c) {
    char *s = json_dumps(j, 0);
    jr_status rc = jr_model_config_parse(c, s, strlen(s), "config.json");
    free(s);
    return rc;
}

/* One clear message per bad config.json. */
TEST(config_errors) {
    static const struct { const char *key, *value, *want; } cases[] = {
        {"num_key_value_heads", "3", "config.json: num_key_value_heads=3 does not divide num_attention_heads=8"},
        {"rope_scaling", "{\"rope_type\":\"yarn\",\"factor\":4.0}", "config.json: rope_scaling type 'yarn' is not supported (judgerl supports default and llama3)"},
        {"rope_scaling", "{\"type\":\"linear\",\"factor\":2.0}", "rope_scaling type 'linear' is not supported"},
        {"rope_scaling", "{\"factor\":2.0}", "rope_scaling has no rope_type"},
        {"rope_scaling", "{\"rope_type\":\"llama3\",\"factor\":8.0,\"low_freq_factor\":1.0,\"high_freq_factor\":4.0}", "llama3 needs original_max_position_embeddings"},
        {"rope_scaling", "{\"rope_type\":\"llama3\",\"factor\":8.0,\"low_freq_factor\":4.0,\"high_freq_factor\":1.0,\"original_max_position_embeddings\":8192}", "low_freq_factor (4) < high_freq_factor (1)"},
        {"architectures", "[\"GPT2LMHeadModel\"]", "config.json: unsupported architecture 'GPT2LMHeadModel' (judgerl supports LlamaForCausalLM"},
        {"architectures", "[]", "architectures must be a non-empty list"},
        {"architectures", "null", "config.json: architectures is null (expected a list"},
        {"hidden_size", "\"64\"", "config.json: hidden_size must be an integer"},
        {"hidden_size", "null", "config.json: missing hidden_size"},
        {"hidden_size", "60", "num_attention_heads=8 does not divide hidden_size=60"},
        {"num_hidden_layers", "0", "num_hidden_layers=0 must be positive"},
        {"head_dim", "7", "head_dim=7 must be even"},
        {"rms_norm_eps", "-1", "rms_norm_eps=-1 must be positive"},
        {"mlp_bias", "true", "mlp_bias=true is not supported"},
        {"hidden_act", "\"gelu\"", "hidden_act 'gelu' is not supported"},
        {"use_sliding_window", "true", "use_sliding_window=true is not supported"},
        {"tie_word_embeddings", "1", "tie_word_embeddings must be true or false"},
        {"eos_token_id", "[\"</s>\"]", "eos_token_id[0] is not a token id"},
        {"eos_token_id", "-5", "eos_token_id=-5 is not a token id"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_t *j = base_config();
        json_object_set_new(j, cases[i].key, json_loads(cases[i].value, JSON_DECODE_ANY, NULL));
        jr_model_config c;
        jr_status rc = parse_json(j, &c);
        json_decref(j);
        CHECK_MSG(rc != JR_OK, "case %zu (%s) accepted", i, cases[i].key);
        CHECK_MSG(strstr(jr_errmsg(), cases[i].want) != NULL, "case %zu: '%s' lacks '%s'", i, jr_errmsg(), cases[i].want);
        CHECK(c.json == NULL);
    }
    jr_model_config c;
    CHECK(jr_model_config_parse(&c, "{\"a\":", 5, "config.json") == JR_EFORMAT);
    CHECK(strstr(jr_errmsg(), "config.json: not valid JSON") != NULL);
    json_t *j = base_config();
    json_object_del(j, "architectures");
    json_object_set_new(j, "model_type", json_string("mistral"));
    CHECK(parse_json(j, &c) == JR_EUNSUPPORTED);
    CHECK(strstr(jr_errmsg(), "unsupported architecture 'mistral'") != NULL);
    json_decref(j);
}

/* Accepted variants: defaults, rope "type" key, eos lists, Qwen defaults. */
TEST(config_variants) {
    jr_model_config c;
    json_t *j = base_config();
    json_object_del(j, "num_key_value_heads");
    json_object_del(j, "rope_theta");
    json_object_set_new(j, "rope_scaling", json_loads("{\"type\":\"llama3\",\"factor\":8,\"low_freq_factor\":1,"
                                                      "\"high_freq_factor\":4,\"original_max_position_embeddings\":8192}", 0, NULL));
    json_object_set_new(j, "eos_token_id", json_loads("[128001, 128008, 128009]", 0, NULL));
    json_object_set_new(j, "attention_bias", json_true());
    CHECK_OK(parse_json(j, &c));
    CHECK(c.num_key_value_heads == 8 && c.head_dim == 8 && c.rope_theta == 10000 && c.rope_type == JR_ROPE_LLAMA3);
    CHECK(c.rope_factor == 8 && c.n_eos == 3 && c.eos_token_ids[2] == 128009 && c.qkv_bias && c.o_bias);
    jr_model_config_free(&c);
    json_object_set_new(j, "rope_scaling", json_loads("{\"rope_type\":\"default\"}", 0, NULL));
    json_object_set_new(j, "architectures", json_loads("[\"Qwen2ForCausalLM\"]", 0, NULL));
    json_object_set_new(j, "head_dim", json_integer(16));
    CHECK_OK(parse_json(j, &c));
    CHECK(c.arch == JR_ARCH_QWEN2 && c.rope_type == JR_ROPE_DEFAULT && c.head_dim == 16 && c.qkv_bias && !c.o_bias);
    jr_model_config_free(&c);
    json_object_set_new(j, "architectures", json_loads("[\"Qwen3ForCausalLM\"]", 0, NULL));
    json_object_set_new(j, "attention_bias", json_false());
    json_object_set_new(j, "eos_token_id", json_null());
    json_object_set_new(j, "bos_token_id", json_null());
    CHECK_OK(parse_json(j, &c));
    CHECK(c.arch == JR_ARCH_QWEN3 && c.qk_norm && !c.qkv_bias && c.n_eos == 0 && c.bos_token_id == -1);
    jr_model_config_free(&c);
    json_decref(j);
    /* generation_config.json: eos as an int or a list, optional sampling fields */
    jr_generation_config g;
    const char *g1 = "{\"eos_token_id\": 7, \"top_k\": 20, \"temperature\": 0.7}";
    CHECK_OK(jr_generation_config_parse(&g, g1, strlen(g1), "generation_config.json"));
    CHECK(g.n_eos == 1 && g.eos_token_ids[0] == 7 && g.top_k == 20 && g.temperature == 0.7 && isnan(g.top_p));
    jr_generation_config_free(&g);
    const char *g2 = "{\"eos_token_id\": [1, 2], \"top_p\": \"x\"}";
    CHECK(jr_generation_config_parse(&g, g2, strlen(g2), "generation_config.json") == JR_EFORMAT);
    CHECK(strstr(jr_errmsg(), "generation_config.json: top_p must be a number") != NULL);
}

/* Saving keeps unknown keys, is a fixed point, and reads back to the same config. */
TEST(config_keeps_unknown_keys) {
    json_t *j = base_config();
    json_object_set_new(j, "my_extension", json_loads("{\"nested\": [1, 2.5, \"x\"], \"flag\": true}", 0, NULL));
    json_object_set_new(j, "transformers_version", json_string("4.45.0"));
    json_object_set_new(j, "rope_scaling", json_loads("{\"type\":\"llama3\",\"factor\":8,\"low_freq_factor\":1,"
                                                      "\"high_freq_factor\":4,\"original_max_position_embeddings\":8192}", 0, NULL));
    jr_model_config c, c2;
    CHECK_OK(parse_json(j, &c));
    char *t1 = jr_model_config_to_json(&c);
    CHECK(t1 && strstr(t1, "\"rms_norm_eps\": 1e-05,") && strstr(t1, "\"rope_type\": \"llama3\""));
    CHECK_OK(jr_model_config_parse(&c2, t1, strlen(t1), "saved"));
    CHECK(json_equal(json_object_get(c2.json, "my_extension"), json_object_get(j, "my_extension")));
    CHECK_STR(json_string_value(json_object_get(c2.json, "transformers_version")), "4.45.0");
    CHECK(c2.rope_type == JR_ROPE_LLAMA3 && c2.rope_original_max_pos == 8192 && c2.rms_norm_eps == 1e-5);
    char *t2 = jr_model_config_to_json(&c2);
    CHECK_STR(t2, t1);
    /* every original key is still there with its value (the save may add head_dim etc.) */
    const char *key;
    json_t *v;
    json_object_foreach(j, key, v) {
        if (!strcmp(key, "rope_scaling")) continue; /* "type" is written as "rope_type" */
        CHECK_MSG(json_equal(v, json_object_get(c2.json, key)), "key %s changed", key);
    }
    free(t1); free(t2);
    jr_model_config_free(&c);
    jr_model_config_free(&c2);
    json_decref(j);
}

static float **random_weights(const jr_model_config *c, int *n_out, uint64_t seed) {
    jr_model_tensor *t;
    int n;
    if (jr_model_tensors(c, &t, &n)) return NULL;
    float **w = calloc((size_t)n, sizeof *w);
    jr_rng r;
    jr_rng_seed(&r, seed);
    for (int i = 0; i < n; i++) {
        w[i] = malloc((size_t)t[i].numel * sizeof(float));
        for (int64_t k = 0; k < t[i].numel; k++) w[i][k] = (float)jr_rng_normal(&r);
    }
    free(t);
    *n_out = n;
    return w;
}

static void free_weights(float **w, int n) {
    for (int i = 0; i < n; i++) free(w[i]);
    free(w);
}

static void small_config(jr_model_config *c, jr_arch arch) {
    jr_model_config_init(c, arch);
    c->hidden_size = 16; c->num_hidden_layers = 2; c->num_attention_heads = 4; c->num_key_value_heads = 1;
    c->head_dim = 4; c->intermediate_size = 24; c->vocab_size = 40; c->bos_token_id = 0;
    c->n_eos = 2; c->eos_token_ids[0] = 1; c->eos_token_ids[1] = 39;
}

static int count_files(const char *dir, const char *needle) {
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d)))
        if (strstr(de->d_name, needle)) n++;
    if (d) closedir(d);
    return n;
}

static int same_file(const char *a, const char *b) {
    char *x, *y;
    size_t nx, ny;
    if (jr_read_file(a, &x, &nx)) return 0;
    if (jr_read_file(b, &y, &ny)) { free(x); return 0; }
    int same = nx == ny && !memcmp(x, y, nx);
    free(x); free(y);
    return same;
}

/* Written, read back (byte for byte in F32), written again: identical files. */
TEST(roundtrip_dir) {
    jr_arch archs[3] = {JR_ARCH_LLAMA, JR_ARCH_QWEN2, JR_ARCH_QWEN3};
    for (int a = 0; a < 3; a++) {
        jr_model_config c;
        small_config(&c, archs[a]);
        c.tie_word_embeddings = a == 2;
        jr_generation_config g;
        jr_generation_config_init(&g);
        g.n_eos = 1; g.eos_token_ids[0] = 39; g.temperature = 0.5;
        int n;
        float **w = random_weights(&c, &n, 10 + a);
        char name[32];
        snprintf(name, sizeof name, "rt%d", a);
        char *d1 = path2(tmp, name);
        CHECK_OK(jr_hfdir_write(d1, &c, &g, (const float *const *)w, JR_DT_F32, 0));
        jr_hfdir d;
        CHECK_OK(jr_hfdir_open(&d, d1));
        if (d.dir) {
            CHECK(d.n_tensors == n && d.n_files == 1 && d.has_gen && d.gen.temperature == 0.5);
            CHECK(d.cfg.arch == archs[a] && d.cfg.num_key_value_heads == 1 && d.cfg.n_eos == 2);
            CHECK_STR(d.cfg.torch_dtype, "float32");
            CHECK(d.files[0].n == n); /* a tied lm_head is absent from the file */
            if (c.tie_word_embeddings) CHECK(jr_st_find(&d.files[0], "lm_head.weight") == NULL);
            float **back = calloc((size_t)n, sizeof *back);
            for (int i = 0; i < n; i++) {
                back[i] = malloc((size_t)d.tensors[i].numel * sizeof(float));
                CHECK_OK(jr_hfdir_read_f32(&d, i, back[i]));
                CHECK_MSG(!memcmp(back[i], w[i], (size_t)d.tensors[i].numel * sizeof(float)), "%s", d.tensors[i].name);
            }
            snprintf(name, sizeof name, "rt%db", a);
            char *d2 = path2(tmp, name);
            CHECK_OK(jr_hfdir_write(d2, &d.cfg, &d.gen, (const float *const *)back, JR_DT_F32, 0));
            char *f1 = path2(d1, "model.safetensors"), *f2 = path2(d2, "model.safetensors");
            CHECK(same_file(f1, f2));
            free(f1); free(f2);
            f1 = path2(d1, "config.json"); f2 = path2(d2, "config.json");
            CHECK(same_file(f1, f2));
            free(f1); free(f2);
            f1 = path2(d1, "generation_config.json"); f2 = path2(d2, "generation_config.json");
            CHECK(same_file(f1, f2));
            free(f1); free(f2);
            free(d2);
            free_weights(back, n);
        }
        jr_hfdir_close(&d);
        free(d1);
        free_weights(w, n);
    }
}

/* The independent sharded BF16 directory read and written back (BF16, sharded): tensors byte for
 * byte equal, config keys kept. */
TEST(roundtrip_independent) {
    char *src = fixture("llama_sharded"), *dst = path2(tmp, "copy");
    jr_hfdir a, b;
    CHECK_OK(jr_hfdir_open(&a, src));
    if (!a.dir) { free(src); free(dst); return; }
    float **w = calloc((size_t)a.n_tensors, sizeof *w);
    for (int i = 0; i < a.n_tensors; i++) {
        w[i] = malloc((size_t)a.tensors[i].numel * sizeof(float));
        CHECK_OK(jr_hfdir_read_f32(&a, i, w[i]));
    }
    CHECK_OK(jr_hfdir_write(dst, &a.cfg, &a.gen, (const float *const *)w, JR_DT_BF16, 4000));
    CHECK_OK(jr_hfdir_open(&b, dst));
    if (b.dir) {
        CHECK(b.n_files > 1 && b.n_tensors == a.n_tensors);
        for (int i = 0; i < a.n_tensors; i++)
            CHECK_MSG(b.st[i]->nbytes == a.st[i]->nbytes && !memcmp(b.st[i]->data, a.st[i]->data, a.st[i]->nbytes), "%s",
                      a.tensors[i].name);
        const char *key;
        json_t *v;
        json_object_foreach(a.cfg.json, key, v) CHECK_MSG(json_equal(v, json_object_get(b.cfg.json, key)), "key %s", key);
        CHECK(json_equal(a.gen.json, b.gen.json));
    }
    jr_hfdir_close(&b);
    jr_hfdir_close(&a);
    free_weights(w, a.n_tensors ? a.n_tensors : 21);
    free(src); free(dst);
}

/* Sharding past a limit: HF names, an index with total_size; rewriting changes layouts cleanly. */
TEST(sharded_write) {
    jr_model_config c;
    small_config(&c, JR_ARCH_LLAMA);
    int n;
    float **w = random_weights(&c, &n, 5);
    char *dir = path2(tmp, "sharded");
    int64_t total = jr_model_param_count(&c) * 2;
    CHECK_OK(jr_hfdir_write(dir, &c, NULL, (const float *const *)w, JR_DT_F16, 2000));
    CHECK(count_files(dir, "-of-") >= 3);
    char *idx = path2(dir, "model.safetensors.index.json"), *single = path2(dir, "model.safetensors");
    json_t *ij = json_load_file(idx, 0, NULL);
    CHECK(ij && json_integer_value(json_object_get(json_object_get(ij, "metadata"), "total_size")) == total);
    CHECK(ij && json_object_size(json_object_get(ij, "weight_map")) == (size_t)n);
    char first[64];
    snprintf(first, sizeof first, "model-00001-of-%05d.safetensors", count_files(dir, "-of-"));
    CHECK(ij && !strcmp(json_string_value(json_object_get(json_object_get(ij, "weight_map"), "model.embed_tokens.weight")),
                        first));
    json_decref(ij);
    CHECK(!jr_path_exists(single));
    char *gen = path2(dir, "generation_config.json");
    CHECK(!jr_path_exists(gen));
    free(gen);
    jr_hfdir d;
    CHECK_OK(jr_hfdir_open(&d, dir));
    CHECK(d.n_files == count_files(dir, "-of-"));
    for (int i = 0; i < d.n_tensors && d.dir; i++) {
        float *x = malloc((size_t)d.tensors[i].numel * sizeof(float));
        CHECK_OK(jr_hfdir_read_f32(&d, i, x));
        int bad = 0;
        for (int64_t k = 0; k < d.tensors[i].numel; k++) bad += x[k] != jr_f16_to_f32(jr_f32_to_f16(w[i][k]));
        CHECK(bad == 0);
        free(x);
    }
    jr_hfdir_close(&d);
    /* the same directory rewritten as one file: shards and index go */
    CHECK_OK(jr_hfdir_write(dir, &c, NULL, (const float *const *)w, JR_DT_F32, 0));
    CHECK(count_files(dir, "-of-") == 0 && !jr_path_exists(idx) && jr_path_exists(single));
    CHECK_OK(jr_hfdir_open(&d, dir));
    jr_hfdir_close(&d);
    /* and sharded again in a different count: the single file goes */
    CHECK_OK(jr_hfdir_write(dir, &c, NULL, (const float *const *)w, JR_DT_F32, 6000));
    CHECK(!jr_path_exists(single) && jr_path_exists(idx) && count_files(dir, "-of-") >= 2);
    CHECK_OK(jr_hfdir_open(&d, dir));
    jr_hfdir_close(&d);
    CHECK(count_files(dir, ".tmp.") == 0);
    free(idx); free(single); free(dir);
    free_weights(w, n);
}

/* Writes a model dir, then replaces its weights with `ents` (F32). */
static char *tampered(const char *name, const jr_model_config *c, float **w, jr_st_entry *ents, int n_ents) {
    char *dir = path2(tmp, name);
    if (jr_hfdir_write(dir, c, NULL, (const float *const *)w, JR_DT_F32, 0)) return dir;
    char *f = path2(dir, "model.safetensors");
    if (jr_st_write(f, ents, n_ents, JR_DT_F32)) printf("  %s\n", jr_errmsg());
    free(f);
    return dir;
}

/* Missing, unknown, misshapen tensors and broken shard indexes: one message naming file and tensor. */
TEST(dir_errors) {
    jr_model_config c;
    small_config(&c, JR_ARCH_LLAMA);
    jr_model_tensor *t;
    int n, nw;
    CHECK_OK(jr_model_tensors(&c, &t, &n));
    float **w = random_weights(&c, &nw, 6);
    jr_st_entry *e = calloc((size_t)n + 1, sizeof *e);
    for (int i = 0; i < n; i++) {
        e[i].name = t[i].name; e[i].ndim = t[i].ndim; e[i].data = w[i];
        e[i].shape[0] = t[i].shape[0]; e[i].shape[1] = t[i].shape[1];
    }
    jr_hfdir d;
    /* unknown tensor */
    e[n].name = "model.layers.0.mlp.extra.weight"; e[n].ndim = 1; e[n].shape[0] = 4; e[n].data = w[0];
    char *dir = tampered("unknown", &c, w, e, n + 1);
    CHECK(jr_hfdir_open(&d, dir) == JR_EFORMAT);
    CHECK_MSG(strstr(jr_errmsg(), "unknown/model.safetensors: unknown tensor 'model.layers.0.mlp.extra.weight'"), "%s", jr_errmsg());
    CHECK(d.dir == NULL);
    free(dir);
    /* missing tensor: drop model.norm.weight (second to last) */
    jr_st_entry saved = e[n - 2];
    e[n - 2] = e[n - 1];
    dir = tampered("missing", &c, w, e, n - 1);
    CHECK(jr_hfdir_open(&d, dir) == JR_ENOTFOUND);
    CHECK_MSG(strstr(jr_errmsg(), "missing/model.safetensors: missing tensor 'model.norm.weight' (shape [16]"), "%s", jr_errmsg());
    free(dir);
    e[n - 1] = e[n - 2];
    e[n - 2] = saved;
    /* shape mismatch */
    e[n - 2].shape[0] = 15;
    dir = tampered("shape", &c, w, e, n);
    CHECK(jr_hfdir_open(&d, dir) == JR_EFORMAT);
    CHECK_MSG(strstr(jr_errmsg(), "shape/model.safetensors: tensor 'model.norm.weight': shape [15] but config.json implies [16]"),
              "%s", jr_errmsg());
    free(dir);
    e[n - 2].shape[0] = 16;
    /* an integer weight */
    int32_t ints[16] = {0};
    e[n - 2].data = NULL; e[n - 2].raw = ints; e[n - 2].raw_dtype = JR_DT_I32;
    dir = tampered("dtype", &c, w, e, n);
    CHECK(jr_hfdir_open(&d, dir) == JR_EUNSUPPORTED);
    CHECK_MSG(strstr(jr_errmsg(), "tensor 'model.norm.weight': dtype I32"), "%s", jr_errmsg());
    free(dir);
    e[n - 2].data = w[n - 2]; e[n - 2].raw = NULL;
    /* a config that does not match the weights: kv heads changed */
    dir = path2(tmp, "kv");
    CHECK_OK(jr_hfdir_write(dir, &c, NULL, (const float *const *)w, JR_DT_F32, 0));
    char *cfgp = path2(dir, "config.json");
    jr_model_config c2 = c;
    c2.num_key_value_heads = 2;
    CHECK_OK(jr_model_config_save(&c2, cfgp));
    CHECK(jr_hfdir_open(&d, dir) == JR_EFORMAT);
    CHECK_MSG(strstr(jr_errmsg(), "tensor 'model.layers.0.self_attn.k_proj.weight': shape [4,16] but config.json implies [8,16]"),
              "%s", jr_errmsg());
    c2.num_key_value_heads = 3;
    CHECK_OK(jr_model_config_save(&c2, cfgp));
    CHECK(jr_hfdir_open(&d, dir) == JR_EINVAL);
    CHECK_MSG(strstr(jr_errmsg(), "kv/config.json: num_key_value_heads=3 does not divide num_attention_heads=4"), "%s", jr_errmsg());
    unlink(cfgp);
    CHECK(jr_hfdir_open(&d, dir) == JR_ENOTFOUND);
    CHECK(strstr(jr_errmsg(), "no config.json") != NULL);
    free(cfgp);
    free(dir);
    /* sharded: a shard missing, a weight_map that points elsewhere */
    dir = path2(tmp, "shards");
    CHECK_OK(jr_hfdir_write(dir, &c, NULL, (const float *const *)w, JR_DT_F32, 4000));
    char *idx = path2(dir, "model.safetensors.index.json");
    json_t *ij = json_load_file(idx, 0, NULL), *wm = json_object_get(ij, "weight_map");
    const char *shard1 = json_string_value(json_object_get(wm, "model.embed_tokens.weight"));
    CHECK(shard1 && strstr(shard1, "model-00001-of-") && count_files(dir, "-of-") > 1);
    json_object_set_new(wm, "model.norm.weight", json_string(shard1));
    char *txt = jr_hf_json_dumps(ij);
    CHECK_OK(jr_write_atomic(idx, txt, strlen(txt)));
    free(txt);
    CHECK(jr_hfdir_open(&d, dir) == JR_EFORMAT);
    CHECK_MSG(strstr(jr_errmsg(), "tensor 'model.norm.weight' is here but") && strstr(jr_errmsg(), "maps it to model-00001-of-"),
              "%s", jr_errmsg());
    json_object_set_new(wm, "model.norm.weight", json_string("model-00009-of-00009.safetensors"));
    txt = jr_hf_json_dumps(ij);
    CHECK_OK(jr_write_atomic(idx, txt, strlen(txt)));
    free(txt);
    CHECK(jr_hfdir_open(&d, dir) == JR_ENOTFOUND);
    CHECK_MSG(strstr(jr_errmsg(), "shard model-00009-of-00009.safetensors listed in the weight_map is missing"), "%s", jr_errmsg());
    json_object_set_new(wm, "model.norm.weight", json_string("../x.safetensors"));
    txt = jr_hf_json_dumps(ij);
    CHECK_OK(jr_write_atomic(idx, txt, strlen(txt)));
    free(txt);
    CHECK(jr_hfdir_open(&d, dir) == JR_EFORMAT);
    CHECK(strstr(jr_errmsg(), "must be a file name in the same directory") != NULL);
    unlink(idx);
    CHECK(jr_hfdir_open(&d, dir) == JR_ENOTFOUND);
    CHECK(strstr(jr_errmsg(), "the directory has no weights") != NULL);
    json_decref(ij);
    free(idx);
    free(dir);
    /* a tied model whose file also has lm_head.weight loads (the copy is ignored) */
    c.tie_word_embeddings = 1;
    e[n - 1].name = "lm_head.weight";
    dir = tampered("tiedcopy", &c, w, e, n);
    CHECK_OK(jr_hfdir_open(&d, dir));
    CHECK(d.n_tensors == n - 1);
    jr_hfdir_close(&d);
    free(dir);
    free(e);
    free(t);
    free_weights(w, nw);
}

int main(void) {
    tmp = jt_tmpdir("hfdir");
    RUN(independent_sharded_llama);
    RUN(independent_qwen3_tied);
    RUN(tensor_lists);
    RUN(config_errors);
    RUN(config_variants);
    RUN(config_keeps_unknown_keys);
    RUN(roundtrip_dir);
    RUN(roundtrip_independent);
    RUN(sharded_write);
    RUN(dir_errors);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0) printf("  could not remove %s\n", tmp);
    free(tmp);
    return jt_done();
}
