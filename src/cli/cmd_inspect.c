/* cmd_inspect.c - `judgerl inspect`: read-only summary of a model directory or a safetensors file */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "judgerl/hfmodel.h"
#include "judgerl/safetensors.h"

static void print_shape(int ndim, const int64_t *shape) {
    printf("[");
    for (int i = 0; i < ndim; i++) printf("%s%lld", i ? ", " : "", (long long)shape[i]);
    printf("]");
}

static void print_ids(const int *ids, int n) {
    if (!n) { printf("none"); return; }
    for (int i = 0; i < n; i++) printf("%s%d", i ? "," : "", ids[i]);
}

static int inspect_file(const char *path) {
    jr_safetensors st;
    jr_status rc = jr_st_open(&st, path);
    if (rc) return cli_fail("inspect", rc);
    int64_t total = 0;
    for (int i = 0; i < st.n; i++) total += st.tensors[i].numel;
    printf("file: %s\nsize: %zu bytes (header %zu)\ntensors: %d\nelements: %lld\n", path, st.size, st.header_len,
           st.n, (long long)total);
    for (int i = 0; i < st.n_meta; i++) printf("metadata.%s: %s\n", st.meta_keys[i], st.meta_vals[i]);
    for (int i = 0; i < st.n; i++) {
        const jr_st_tensor *t = &st.tensors[i];
        printf("  %-56s %-5s ", t->name, jr_dtype_name(t->dtype));
        print_shape(t->ndim, t->shape);
        printf("\n");
    }
    jr_st_close(&st);
    return CLI_OK;
}

static int inspect_model(const char *dir) {
    jr_hfdir d;
    jr_status rc = jr_hfdir_open(&d, dir);
    if (rc) return cli_fail("inspect", rc);
    const jr_model_config *c = &d.cfg;
    int64_t params = jr_model_param_count(c);
    printf("model: %s\n", dir);
    printf("architecture: %s (%s)\n", jr_arch_name(c->arch), jr_arch_model_type(c->arch));
    printf("hidden_size: %d  layers: %d  heads: %d  kv_heads: %d  head_dim: %d  intermediate_size: %d\n",
           c->hidden_size, c->num_hidden_layers, c->num_attention_heads, c->num_key_value_heads, c->head_dim,
           c->intermediate_size);
    printf("vocab_size: %d  max_position_embeddings: %d  rms_norm_eps: %g  rope_theta: %g\n", c->vocab_size,
           c->max_position_embeddings, c->rms_norm_eps, c->rope_theta);
    if (c->rope_type == JR_ROPE_LLAMA3)
        printf("rope_scaling: llama3 (factor %g, low_freq_factor %g, high_freq_factor %g, original_max_position_embeddings %d)\n",
               c->rope_factor, c->rope_low_freq_factor, c->rope_high_freq_factor, c->rope_original_max_pos);
    else
        printf("rope_scaling: default\n");
    printf("tie_word_embeddings: %s  qkv_bias: %s  o_bias: %s  qk_norm: %s\n", c->tie_word_embeddings ? "true" : "false",
           c->qkv_bias ? "true" : "false", c->o_bias ? "true" : "false", c->qk_norm ? "true" : "false");
    printf("bos_token_id: ");
    if (c->bos_token_id >= 0) printf("%d", c->bos_token_id); else printf("none");
    printf("  eos_token_id: ");
    print_ids(c->eos_token_ids, c->n_eos);
    printf("  torch_dtype: %s\n", c->torch_dtype[0] ? c->torch_dtype : "unset");
    if (d.has_gen) {
        printf("generation_config: eos_token_id ");
        print_ids(d.gen.eos_token_ids, d.gen.n_eos);
        if (!isnan(d.gen.temperature)) printf("  temperature %g", d.gen.temperature);
        if (!isnan(d.gen.top_p)) printf("  top_p %g", d.gen.top_p);
        if (d.gen.top_k >= 0) printf("  top_k %d", d.gen.top_k);
        printf("\n");
    }
    printf("weights: %d file%s\n", d.n_files, d.n_files == 1 ? "" : "s");
    printf("parameters: %lld (%.2f M)\n", (long long)params, (double)params / 1e6);
    printf("tensors: %d\n", d.n_tensors);
    for (int i = 0; i < d.n_tensors; i++) {
        const jr_st_tensor *t = d.st[i];
        const char *f = jr_hfdir_file_of(&d, i), *base = strrchr(f, '/') ? strrchr(f, '/') + 1 : f;
        printf("  %-56s %-5s ", d.tensors[i].name, jr_dtype_name(t->dtype));
        print_shape(t->ndim, t->shape);
        if (d.n_files > 1) printf("  %s", base);
        printf("\n");
    }
    jr_hfdir_close(&d);
    return CLI_OK;
}

int cmd_inspect(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        printf("usage: judgerl inspect --model DIR | judgerl inspect DIR | judgerl inspect FILE.safetensors\n"
               "Reads a Hugging Face model directory (config.json, generation_config.json, model.safetensors or a\n"
               "sharded index) or one safetensors file, validates it, and prints the config summary, the parameter\n"
               "count and every tensor's name, dtype and shape. Writes nothing.\n");
        return CLI_OK;
    }
    const char *model = NULL, *file = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--model")) {
            if (i + 1 >= argc) return cli_usage("inspect", "--model needs a directory");
            model = argv[++i];
        } else if (!strncmp(argv[i], "--model=", 8)) {
            model = argv[i] + 8;
        } else if (argv[i][0] == '-') {
            return cli_usage("inspect", "unknown option '%s'", argv[i]);
        } else if (!file && !model) {
            file = argv[i];
        } else {
            return cli_usage("inspect", "unexpected argument '%s'", argv[i]);
        }
    }
    if (model && file) return cli_usage("inspect", "give either --model DIR or a file, not both");
    if (!model && !file) return cli_usage("inspect", "nothing to inspect: give --model DIR or FILE.safetensors");
    struct stat sb;
    if (file && stat(file, &sb) == 0 && S_ISDIR(sb.st_mode)) return inspect_model(file); /* a directory: a model */
    return model ? inspect_model(model) : inspect_file(file);
}
