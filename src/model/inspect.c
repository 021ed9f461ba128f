/* inspect.c - printed summaries of a model directory and of a safetensors file (`judgerl inspect`) */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "judgerl/hfconfig.h"
#include "judgerl/hfdir.h"
#include "judgerl/modeltools.h"
#include "judgerl/safetensors.h"

static void print_shape(FILE *f, int ndim, const int64_t *shape) {
    fprintf(f, "[");
    for (int i = 0; i < ndim; i++) fprintf(f, "%s%lld", i ? ", " : "", (long long)shape[i]);
    fprintf(f, "]");
}

static void print_ids(FILE *f, const int *ids, int n) {
    if (!n) { fprintf(f, "none"); return; }
    for (int i = 0; i < n; i++) fprintf(f, "%s%d", i ? "," : "", ids[i]);
}

jr_status jr_st_file_describe(const char *path, FILE *f) {
    jr_safetensors st;
    jr_status rc = jr_st_open(&st, path);
    if (rc) return rc;
    int64_t total = 0;
    for (int i = 0; i < st.n; i++) total += st.tensors[i].numel;
    fprintf(f, "file: %s\nsize: %zu bytes (header %zu)\ntensors: %d\nelements: %lld\n", path, st.size, st.header_len,
            st.n, (long long)total);
    for (int i = 0; i < st.n_meta; i++) fprintf(f, "metadata.%s: %s\n", st.meta_keys[i], st.meta_vals[i]);
    for (int i = 0; i < st.n; i++) {
        const jr_st_tensor *t = &st.tensors[i];
        fprintf(f, "  %-56s %-5s ", t->name, jr_dtype_name(t->dtype));
        print_shape(f, t->ndim, t->shape);
        fprintf(f, "\n");
    }
    jr_st_close(&st);
    return JR_OK;
}

/* config.json's and generation_config.json's fields. */
static void print_config(FILE *f, const jr_hfdir *d) {
    const jr_model_config *c = &d->cfg;
    fprintf(f, "architecture: %s (%s)\n", jr_arch_name(c->arch), jr_arch_model_type(c->arch));
    fprintf(f, "hidden_size: %d  layers: %d  heads: %d  kv_heads: %d  head_dim: %d  intermediate_size: %d\n",
            c->hidden_size, c->num_hidden_layers, c->num_attention_heads, c->num_key_value_heads, c->head_dim,
            c->intermediate_size);
    fprintf(f, "vocab_size: %d  max_position_embeddings: %d  rms_norm_eps: %g  rope_theta: %g\n", c->vocab_size,
            c->max_position_embeddings, c->rms_norm_eps, c->rope_theta);
    if (c->rope_type == JR_ROPE_LLAMA3)
        fprintf(f, "rope_scaling: llama3 (factor %g, low_freq_factor %g, high_freq_factor %g, original_max_position_embeddings %d)\n",
                c->rope_factor, c->rope_low_freq_factor, c->rope_high_freq_factor, c->rope_original_max_pos);
    else
        fprintf(f, "rope_scaling: default\n");
    fprintf(f, "tie_word_embeddings: %s  qkv_bias: %s  o_bias: %s  qk_norm: %s\n", c->tie_word_embeddings ? "true" : "false",
            c->qkv_bias ? "true" : "false", c->o_bias ? "true" : "false", c->qk_norm ? "true" : "false");
    fprintf(f, "bos_token_id: ");
    if (c->bos_token_id >= 0) fprintf(f, "%d", c->bos_token_id); else fprintf(f, "none");
    fprintf(f, "  eos_token_id: ");
    print_ids(f, c->eos_token_ids, c->n_eos);
    fprintf(f, "  torch_dtype: %s\n", c->torch_dtype[0] ? c->torch_dtype : "unset");
    if (d->has_gen) {
        fprintf(f, "generation_config: eos_token_id ");
        print_ids(f, d->gen.eos_token_ids, d->gen.n_eos);
        if (!isnan(d->gen.temperature)) fprintf(f, "  temperature %g", d->gen.temperature);
        if (!isnan(d->gen.top_p)) fprintf(f, "  top_p %g", d->gen.top_p);
        if (d->gen.top_k >= 0) fprintf(f, "  top_k %d", d->gen.top_k);
        fprintf(f, "\n");
    }
}

jr_status jr_model_dir_describe(const char *dir, FILE *f) {
    jr_hfdir d;
    jr_status rc = jr_hfdir_open(&d, dir);
    if (rc) return rc;
    int64_t params = jr_model_param_count(&d.cfg);
    fprintf(f, "model: %s\n", dir);
    print_config(f, &d);
    fprintf(f, "weights: %d file%s\n", d.n_files, d.n_files == 1 ? "" : "s");
    fprintf(f, "parameters: %lld (%.2f M)\n", (long long)params, (double)params / 1e6);
    fprintf(f, "tensors: %d\n", d.n_tensors);
    for (int i = 0; i < d.n_tensors; i++) {
        const jr_st_tensor *t = d.st[i];
        const char *file = jr_hfdir_file_of(&d, i), *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
        fprintf(f, "  %-56s %-5s ", d.tensors[i].name, jr_dtype_name(t->dtype));
        print_shape(f, t->ndim, t->shape);
        if (d.n_files > 1) fprintf(f, "  %s", base);
        fprintf(f, "\n");
    }
    jr_hfdir_close(&d);
    return JR_OK;
}
