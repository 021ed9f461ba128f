/* hfconfig.c - Hugging Face config.json / generation_config.json for Llama, Qwen2, Qwen3, and the tensor list */
#include "judgerl/hfconfig.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/fsutil.h"
#include "judgerl/strbuf.h"

static const struct { const char *arch, *model_type; } archs[] = {
    [JR_ARCH_LLAMA] = {"LlamaForCausalLM", "llama"},
    [JR_ARCH_QWEN2] = {"Qwen2ForCausalLM", "qwen2"},
    [JR_ARCH_QWEN3] = {"Qwen3ForCausalLM", "qwen3"},
};
#define N_ARCH ((int)(sizeof archs / sizeof *archs))

const char *jr_arch_name(jr_arch a) { return (unsigned)a < N_ARCH ? archs[a].arch : "?"; }
const char *jr_arch_model_type(jr_arch a) { return (unsigned)a < N_ARCH ? archs[a].model_type : "?"; }

/* ---- JSON text as transformers writes it ---------------------------------------------------- */

static void sb_indent(jr_strbuf *b, int level) { for (int i = 0; i < level; i++) jr_strbuf_addn(b, "  ", 2); }

/* A double spelled as Python's repr: the shortest digits that read back to the same value, fixed
 * notation for exponents -4..15 ("500000.0", "0.0001"), else "1e-05" / "1.5e+16". */
static void sb_real(jr_strbuf *b, double v) {
    char t[48], digits[24], out[64];
    if (isnan(v)) { jr_strbuf_add(b, "NaN"); return; }
    if (isinf(v)) { jr_strbuf_add(b, v > 0 ? "Infinity" : "-Infinity"); return; }
    if (v == 0) { jr_strbuf_add(b, signbit(v) ? "-0.0" : "0.0"); return; }
    for (int p = 1; p <= 17; p++) {
        snprintf(t, sizeof t, "%.*e", p - 1, v);
        if (strtod(t, NULL) == v) break;
    }
    /* t is "-d.ddde+XX": collect the digits and the exponent */
    const char *q = t;
    int neg = *q == '-', nd = 0;
    if (neg) q++;
    for (; *q && *q != 'e'; q++)
        if (*q >= '0' && *q <= '9') digits[nd++] = *q;
    int e = atoi(q + 1);
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    digits[nd] = 0;
    size_t o = 0;
    if (neg) out[o++] = '-';
    if (e >= 16 || e < -4) {
        out[o++] = digits[0];
        if (nd > 1) { out[o++] = '.'; memcpy(out + o, digits + 1, (size_t)nd - 1); o += (size_t)nd - 1; }
        o += (size_t)snprintf(out + o, sizeof out - o, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
    } else if (e >= 0) {
        for (int i = 0; i <= e; i++) out[o++] = i < nd ? digits[i] : '0';
        out[o++] = '.';
        if (nd > e + 1) { memcpy(out + o, digits + e + 1, (size_t)(nd - e - 1)); o += (size_t)(nd - e - 1); }
        else out[o++] = '0';
    } else {
        out[o++] = '0'; out[o++] = '.';
        for (int i = 0; i < -e - 1; i++) out[o++] = '0';
        memcpy(out + o, digits, (size_t)nd); o += (size_t)nd;
    }
    out[o] = 0;
    jr_strbuf_add(b, out);
}

static void sb_jstr(jr_strbuf *b, const char *s, size_t n) {
    jr_strbuf_addn(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char e[8];
        if (c == '"') jr_strbuf_addn(b, "\\\"", 2);
        else if (c == '\\') jr_strbuf_addn(b, "\\\\", 2);
        else if (c == '\n') jr_strbuf_addn(b, "\\n", 2);
        else if (c == '\r') jr_strbuf_addn(b, "\\r", 2);
        else if (c == '\t') jr_strbuf_addn(b, "\\t", 2);
        else if (c < 0x20) { snprintf(e, sizeof e, "\\u%04x", c); jr_strbuf_addn(b, e, 6); }
        else jr_strbuf_addn(b, (const char *)&s[i], 1);
    }
    jr_strbuf_addn(b, "\"", 1);
}

static int cmp_key(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void sb_json(jr_strbuf *b, const json_t *j, int level) {
    char t[32];
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        size_t n = json_object_size(j), k = 0;
        if (!n) { jr_strbuf_add(b, "{}"); return; }
        const char **keys = calloc(n, sizeof *keys);
        if (!keys) { b->oom = 1; return; }
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)j, key, v) keys[k++] = key;
        qsort(keys, n, sizeof *keys, cmp_key);
        jr_strbuf_add(b, "{\n");
        for (size_t i = 0; i < n; i++) {
            sb_indent(b, level + 1);
            sb_jstr(b, keys[i], strlen(keys[i]));
            jr_strbuf_add(b, ": ");
            sb_json(b, json_object_get(j, keys[i]), level + 1);
            jr_strbuf_add(b, i + 1 < n ? ",\n" : "\n");
        }
        free(keys);
        sb_indent(b, level);
        jr_strbuf_add(b, "}");
        return;
    }
    case JSON_ARRAY: {
        size_t n = json_array_size(j);
        if (!n) { jr_strbuf_add(b, "[]"); return; }
        jr_strbuf_add(b, "[\n");
        for (size_t i = 0; i < n; i++) {
            sb_indent(b, level + 1);
            sb_json(b, json_array_get(j, i), level + 1);
            jr_strbuf_add(b, i + 1 < n ? ",\n" : "\n");
        }
        sb_indent(b, level);
        jr_strbuf_add(b, "]");
        return;
    }
    case JSON_STRING: sb_jstr(b, json_string_value(j), json_string_length(j)); return;
    case JSON_INTEGER: snprintf(t, sizeof t, "%lld", (long long)json_integer_value(j)); jr_strbuf_add(b, t); return;
    case JSON_REAL: sb_real(b, json_real_value(j)); return;
    case JSON_TRUE: jr_strbuf_add(b, "true"); return;
    case JSON_FALSE: jr_strbuf_add(b, "false"); return;
    case JSON_NULL: jr_strbuf_add(b, "null"); return;
    }
}

char *jr_hf_json_dumps(const json_t *j) {
    jr_strbuf b = {0};
    sb_json(&b, j, 0);
    jr_strbuf_add(&b, "\n");
    char *text = jr_strbuf_take(&b);
    if (!text) jr_fail(JR_ENOMEM, "out of memory");
    return text;
}

/* ---- config.json ---------------------------------------------------------------------------- */

void jr_model_config_init(jr_model_config *c, jr_arch arch) {
    memset(c, 0, sizeof *c);
    c->arch = arch;
    c->rms_norm_eps = 1e-6;
    c->rope_theta = 10000.0;
    c->rope_type = JR_ROPE_DEFAULT;
    c->max_position_embeddings = 2048;
    c->qkv_bias = arch == JR_ARCH_QWEN2;
    c->qk_norm = arch == JR_ARCH_QWEN3;
    c->bos_token_id = -1;
}

void jr_model_config_free(jr_model_config *c) {
    if (!c) return;
    json_decref(c->json);
    memset(c, 0, sizeof *c);
}

/* Reads an integer field: absent or null leaves *out (when !required). */
static jr_status get_int(json_t *o, const char *key, int required, int *out, const char *name) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        if (required) return jr_fail(JR_EFORMAT, "%s: missing %s", name, key);
        return JR_OK;
    }
    if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) && fabs(json_real_value(v)) < 2e9) {
        *out = (int)json_real_value(v);
        return JR_OK;
    }
    if (!json_is_integer(v) || json_integer_value(v) > 2147483647 || json_integer_value(v) < -2147483647)
        return jr_fail(JR_EFORMAT, "%s: %s must be an integer", name, key);
    *out = (int)json_integer_value(v);
    return JR_OK;
}

static jr_status get_num(json_t *o, const char *key, int required, double *out, const char *name) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        if (required) return jr_fail(JR_EFORMAT, "%s: missing %s", name, key);
        return JR_OK;
    }
    if (!json_is_number(v)) return jr_fail(JR_EFORMAT, "%s: %s must be a number", name, key);
    *out = json_number_value(v);
    return JR_OK;
}

static jr_status get_bool(json_t *o, const char *key, int *out, const char *name) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return JR_OK;
    if (!json_is_boolean(v)) return jr_fail(JR_EFORMAT, "%s: %s must be true or false", name, key);
    *out = json_is_true(v);
    return JR_OK;
}

/* eos_token_id: an int, a list of ints, or null. */
static jr_status get_ids(json_t *o, const char *key, int *ids, int *n, const char *name) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return JR_OK;
    if (json_is_integer(v)) {
        if (json_integer_value(v) < 0 || json_integer_value(v) > 2147483647)
            return jr_fail(JR_EFORMAT, "%s: %s=%lld is not a token id", name, key, (long long)json_integer_value(v));
        ids[0] = (int)json_integer_value(v);
        *n = 1;
        return JR_OK;
    }
    if (!json_is_array(v)) return jr_fail(JR_EFORMAT, "%s: %s must be an integer or a list of integers", name, key);
    if (json_array_size(v) > JR_MAX_EOS)
        return jr_fail(JR_EUNSUPPORTED, "%s: %s has %zu ids (at most %d)", name, key, json_array_size(v), JR_MAX_EOS);
    for (size_t i = 0; i < json_array_size(v); i++) {
        json_t *e = json_array_get(v, i);
        if (!json_is_integer(e) || json_integer_value(e) < 0 || json_integer_value(e) > 2147483647)
            return jr_fail(JR_EFORMAT, "%s: %s[%zu] is not a token id", name, key, i);
        ids[i] = (int)json_integer_value(e);
    }
    *n = (int)json_array_size(v);
    return JR_OK;
}

static jr_status parse_rope(jr_model_config *c, json_t *rs, const char *key, const char *name) {
    if (!rs || json_is_null(rs)) return JR_OK;
    if (!json_is_object(rs)) return jr_fail(JR_EFORMAT, "%s: %s must be an object or null", name, key);
    json_t *t = json_object_get(rs, "rope_type");
    if (!t) t = json_object_get(rs, "type");
    if (!t || !json_is_string(t))
        return jr_fail(JR_EFORMAT, "%s: %s has no rope_type (or type) string", name, key);
    const char *type = json_string_value(t);
    jr_status rc;
    if (json_object_get(rs, "rope_theta") && (rc = get_num(rs, "rope_theta", 0, &c->rope_theta, name))) return rc;
    if (!strcmp(type, "default")) { c->rope_type = JR_ROPE_DEFAULT; return JR_OK; }
    if (strcmp(type, "llama3"))
        return jr_fail(JR_EUNSUPPORTED, "%s: %s type '%s' is not supported (judgerl supports default and llama3)", name,
                       key, type);
    c->rope_type = JR_ROPE_LLAMA3;
    const char *need[] = {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"};
    for (int i = 0; i < 4; i++) {
        if (!json_object_get(rs, need[i]))
            return jr_fail(JR_EFORMAT, "%s: %s of type llama3 needs %s", name, key, need[i]);
    }
    if ((rc = get_num(rs, "factor", 1, &c->rope_factor, name))) return rc;
    if ((rc = get_num(rs, "low_freq_factor", 1, &c->rope_low_freq_factor, name))) return rc;
    if ((rc = get_num(rs, "high_freq_factor", 1, &c->rope_high_freq_factor, name))) return rc;
    if ((rc = get_int(rs, "original_max_position_embeddings", 1, &c->rope_original_max_pos, name))) return rc;
    return JR_OK;
}

jr_status jr_model_config_validate(const jr_model_config *c, const char *name) {
    if ((unsigned)c->arch >= N_ARCH) return jr_fail(JR_EINVAL, "%s: unknown architecture %d", name, (int)c->arch);
    const struct { const char *k; int v; } pos[] = {
        {"hidden_size", c->hidden_size}, {"num_hidden_layers", c->num_hidden_layers},
        {"num_attention_heads", c->num_attention_heads}, {"num_key_value_heads", c->num_key_value_heads},
        {"head_dim", c->head_dim}, {"intermediate_size", c->intermediate_size}, {"vocab_size", c->vocab_size},
        {"max_position_embeddings", c->max_position_embeddings},
    };
    for (size_t i = 0; i < sizeof pos / sizeof *pos; i++)
        if (pos[i].v <= 0) return jr_fail(JR_EINVAL, "%s: %s=%d must be positive", name, pos[i].k, pos[i].v);
    if (c->num_attention_heads % c->num_key_value_heads)
        return jr_fail(JR_EINVAL, "%s: num_key_value_heads=%d does not divide num_attention_heads=%d", name,
                       c->num_key_value_heads, c->num_attention_heads);
    if (c->head_dim % 2) return jr_fail(JR_EINVAL, "%s: head_dim=%d must be even (rotary embeddings)", name, c->head_dim);
    if ((int64_t)c->num_attention_heads * c->head_dim > 1 << 20 || c->hidden_size > 1 << 20 ||
        c->intermediate_size > 1 << 22 || c->num_hidden_layers > 4096)
        return jr_fail(JR_EINVAL, "%s: sizes are implausibly large (hidden_size=%d, heads*head_dim=%lld)", name,
                       c->hidden_size, (long long)c->num_attention_heads * c->head_dim);
    if (!(c->rms_norm_eps > 0) || !isfinite(c->rms_norm_eps))
        return jr_fail(JR_EINVAL, "%s: rms_norm_eps=%g must be positive", name, c->rms_norm_eps);
    if (!(c->rope_theta > 0) || !isfinite(c->rope_theta))
        return jr_fail(JR_EINVAL, "%s: rope_theta=%g must be positive", name, c->rope_theta);
    if (c->rope_type == JR_ROPE_LLAMA3) {
        if (!(c->rope_factor > 0) || !isfinite(c->rope_factor))
            return jr_fail(JR_EINVAL, "%s: rope_scaling.factor=%g must be positive", name, c->rope_factor);
        if (!(c->rope_low_freq_factor > 0) || !(c->rope_high_freq_factor > c->rope_low_freq_factor) ||
            !isfinite(c->rope_high_freq_factor))
            return jr_fail(JR_EINVAL, "%s: rope_scaling needs 0 < low_freq_factor (%g) < high_freq_factor (%g)", name,
                           c->rope_low_freq_factor, c->rope_high_freq_factor);
        if (c->rope_original_max_pos <= 0)
            return jr_fail(JR_EINVAL, "%s: rope_scaling.original_max_position_embeddings=%d must be positive", name,
                           c->rope_original_max_pos);
    } else if (c->rope_type != JR_ROPE_DEFAULT) {
        return jr_fail(JR_EINVAL, "%s: unknown rope type %d", name, (int)c->rope_type);
    }
    if (c->n_eos < 0 || c->n_eos > JR_MAX_EOS) return jr_fail(JR_EINVAL, "%s: %d eos ids", name, c->n_eos);
    return JR_OK;
}

jr_status jr_model_config_parse(jr_model_config *c, const char *text, size_t len, const char *name) {
    memset(c, 0, sizeof *c);
    json_error_t jerr;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!j) return jr_fail(JR_EFORMAT, "%s: not valid JSON: %s (line %d)", name, jerr.text, jerr.line);
    if (!json_is_object(j)) { json_decref(j); return jr_fail(JR_EFORMAT, "%s: not a JSON object", name); }
    jr_status rc = JR_OK;
    /* the architecture: "architectures": ["X"], else model_type */
    int arch = -1;
    const char *seen = NULL;
    json_t *av = json_object_get(j, "architectures");
    if (av && json_is_null(av)) {
        /* transformers writes a list: a null here is a damaged or hand-edited config */
        rc = jr_fail(JR_EFORMAT, "%s: architectures is null (expected a list such as [\"LlamaForCausalLM\"]; remove the key to "
                     "use model_type)", name);
        goto fail;
    }
    if (av) {
        if (!json_is_array(av) || json_array_size(av) == 0) {
            rc = jr_fail(JR_EFORMAT, "%s: architectures must be a non-empty list", name);
            goto fail;
        }
        for (size_t i = 0; i < json_array_size(av) && arch < 0; i++) {
            const char *s = json_string_value(json_array_get(av, i));
            if (!s) { rc = jr_fail(JR_EFORMAT, "%s: architectures[%zu] is not a string", name, i); goto fail; }
            if (!seen) seen = s;
            for (int a = 0; a < N_ARCH; a++)
                if (!strcmp(s, archs[a].arch)) arch = a;
        }
    } else {
        const char *mt = json_string_value(json_object_get(j, "model_type"));
        seen = mt;
        for (int a = 0; mt && a < N_ARCH; a++)
            if (!strcmp(mt, archs[a].model_type)) arch = a;
    }
    if (arch < 0) {
        rc = jr_fail(JR_EUNSUPPORTED, "%s: unsupported architecture '%s' (judgerl supports LlamaForCausalLM, "
                     "Qwen2ForCausalLM, Qwen3ForCausalLM)", name, seen ? seen : "(none: no architectures or model_type)");
        goto fail;
    }
    jr_model_config_init(c, (jr_arch)arch);
    c->max_position_embeddings = 0;
    if ((rc = get_int(j, "hidden_size", 1, &c->hidden_size, name)) ||
        (rc = get_int(j, "num_hidden_layers", 1, &c->num_hidden_layers, name)) ||
        (rc = get_int(j, "num_attention_heads", 1, &c->num_attention_heads, name)) ||
        (rc = get_int(j, "intermediate_size", 1, &c->intermediate_size, name)) ||
        (rc = get_int(j, "vocab_size", 1, &c->vocab_size, name)))
        goto fail;
    c->max_position_embeddings = 2048;
    c->num_key_value_heads = c->num_attention_heads;
    if ((rc = get_int(j, "max_position_embeddings", 0, &c->max_position_embeddings, name)) ||
        (rc = get_int(j, "num_key_value_heads", 0, &c->num_key_value_heads, name)) ||
        (rc = get_num(j, "rms_norm_eps", 0, &c->rms_norm_eps, name)) ||
        (rc = get_num(j, "rope_theta", 0, &c->rope_theta, name)))
        goto fail;
    if (c->num_attention_heads > 0 && c->num_key_value_heads > 0 && c->num_attention_heads % c->num_key_value_heads) {
        rc = jr_fail(JR_EINVAL, "%s: num_key_value_heads=%d does not divide num_attention_heads=%d", name,
                     c->num_key_value_heads, c->num_attention_heads);
        goto fail;
    }
    json_t *hd = json_object_get(j, "head_dim");
    if (hd && !json_is_null(hd)) {
        if ((rc = get_int(j, "head_dim", 0, &c->head_dim, name))) goto fail;
    } else if (c->num_attention_heads > 0) {
        if (c->hidden_size % c->num_attention_heads) {
            rc = jr_fail(JR_EINVAL, "%s: num_attention_heads=%d does not divide hidden_size=%d (and no head_dim is given)",
                         name, c->num_attention_heads, c->hidden_size);
            goto fail;
        }
        c->head_dim = c->hidden_size / c->num_attention_heads;
    }
    /* rope: rope_scaling (transformers <= 4.x), or rope_parameters (newer, may hold rope_theta) */
    if ((rc = parse_rope(c, json_object_get(j, "rope_scaling"), "rope_scaling", name))) goto fail;
    if (json_object_get(j, "rope_parameters") &&
        (rc = parse_rope(c, json_object_get(j, "rope_parameters"), "rope_parameters", name)))
        goto fail;
    if ((rc = get_bool(j, "tie_word_embeddings", &c->tie_word_embeddings, name))) goto fail;
    if (c->arch != JR_ARCH_QWEN2) {
        int ab = 0;
        if ((rc = get_bool(j, "attention_bias", &ab, name))) goto fail;
        c->qkv_bias = c->o_bias = ab;
    }
    int flag = 0;
    if ((rc = get_bool(j, "mlp_bias", &flag, name))) goto fail;
    if (flag) { rc = jr_fail(JR_EUNSUPPORTED, "%s: mlp_bias=true is not supported", name); goto fail; }
    flag = 0;
    if ((rc = get_bool(j, "use_sliding_window", &flag, name))) goto fail;
    if (flag) { rc = jr_fail(JR_EUNSUPPORTED, "%s: use_sliding_window=true is not supported", name); goto fail; }
    json_t *act = json_object_get(j, "hidden_act");
    if (act && !json_is_null(act) && (!json_is_string(act) || strcmp(json_string_value(act), "silu"))) {
        rc = jr_fail(JR_EUNSUPPORTED, "%s: hidden_act '%s' is not supported (judgerl supports silu)", name,
                     json_is_string(act) ? json_string_value(act) : "(not a string)");
        goto fail;
    }
    int bos_n = 0, bos[JR_MAX_EOS];
    if ((rc = get_ids(j, "bos_token_id", bos, &bos_n, name))) goto fail;
    c->bos_token_id = bos_n ? bos[0] : -1;
    if ((rc = get_ids(j, "eos_token_id", c->eos_token_ids, &c->n_eos, name))) goto fail;
    json_t *td = json_object_get(j, "torch_dtype");
    if (!td || json_is_null(td)) td = json_object_get(j, "dtype");
    if (td && json_is_string(td)) snprintf(c->torch_dtype, sizeof c->torch_dtype, "%s", json_string_value(td));
    if ((rc = jr_model_config_validate(c, name))) goto fail;
    c->json = j;
    return JR_OK;
fail:
    json_decref(j);
    memset(c, 0, sizeof *c);
    return rc;
}

jr_status jr_model_config_load(jr_model_config *c, const char *path) {
    char *text;
    size_t len;
    memset(c, 0, sizeof *c);
    jr_status rc = jr_read_file(path, &text, &len);
    if (rc) return rc;
    rc = jr_model_config_parse(c, text, len, path);
    free(text);
    return rc;
}

/* Sets o[key] to a real, keeping an existing number that already has this value. */
static void set_real(json_t *o, const char *key, double v) {
    json_t *old = json_object_get(o, key);
    if (old && json_is_number(old) && json_number_value(old) == v) return;
    json_object_set_new(o, key, json_real(v));
}

static json_t *ids_json(const int *ids, int n) {
    if (n == 0) return json_null();
    if (n == 1) return json_integer(ids[0]);
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, json_integer(ids[i]));
    return a;
}

/* Sets o[key] to ids unless it already says the same. */
static void set_ids(json_t *o, const char *key, const int *ids, int n) {
    json_t *nv = ids_json(ids, n), *old = json_object_get(o, key);
    if (old && json_equal(old, nv)) { json_decref(nv); return; }
    if (!old && n == 0) { json_decref(nv); return; }
    json_object_set_new(o, key, nv);
}

char *jr_model_config_to_json(const jr_model_config *c) {
    json_t *o = c->json ? json_deep_copy(c->json) : json_object();
    if (!o) { jr_fail(JR_ENOMEM, "out of memory"); return NULL; }
    json_t *arch = json_array();
    json_array_append_new(arch, json_string(jr_arch_name(c->arch)));
    json_object_set_new(o, "architectures", arch);
    json_object_set_new(o, "model_type", json_string(jr_arch_model_type(c->arch)));
    json_object_set_new(o, "hidden_size", json_integer(c->hidden_size));
    json_object_set_new(o, "num_hidden_layers", json_integer(c->num_hidden_layers));
    json_object_set_new(o, "num_attention_heads", json_integer(c->num_attention_heads));
    json_object_set_new(o, "num_key_value_heads", json_integer(c->num_key_value_heads));
    json_object_set_new(o, "head_dim", json_integer(c->head_dim));
    json_object_set_new(o, "intermediate_size", json_integer(c->intermediate_size));
    json_object_set_new(o, "vocab_size", json_integer(c->vocab_size));
    json_object_set_new(o, "max_position_embeddings", json_integer(c->max_position_embeddings));
    set_real(o, "rms_norm_eps", c->rms_norm_eps);
    json_t *params = json_object_get(o, "rope_parameters");
    if (params && json_is_object(params) && json_object_get(params, "rope_theta"))
        set_real(params, "rope_theta", c->rope_theta);
    else
        set_real(o, "rope_theta", c->rope_theta);
    if (!json_object_get(o, "hidden_act")) json_object_set_new(o, "hidden_act", json_string("silu"));
    if (c->rope_type == JR_ROPE_LLAMA3) {
        json_t *rs = json_object_get(o, "rope_scaling");
        if (!rs || !json_is_object(rs)) {
            rs = json_object();
            json_object_set_new(o, "rope_scaling", rs);
        }
        json_object_del(rs, "type");
        json_object_set_new(rs, "rope_type", json_string("llama3"));
        set_real(rs, "factor", c->rope_factor);
        set_real(rs, "low_freq_factor", c->rope_low_freq_factor);
        set_real(rs, "high_freq_factor", c->rope_high_freq_factor);
        json_object_set_new(rs, "original_max_position_embeddings", json_integer(c->rope_original_max_pos));
    } else {
        /* keep an explicit {"rope_type": "default"} object; replace anything else by null */
        json_t *rs = json_object_get(o, "rope_scaling"), *t = rs ? json_object_get(rs, "rope_type") : NULL;
        if (rs && !t) t = json_object_get(rs, "type");
        if (!rs || !json_is_object(rs) || !t || !json_is_string(t) || strcmp(json_string_value(t), "default"))
            json_object_set_new(o, "rope_scaling", json_null());
    }
    json_object_set_new(o, "tie_word_embeddings", json_boolean(c->tie_word_embeddings));
    if (c->arch != JR_ARCH_QWEN2) json_object_set_new(o, "attention_bias", json_boolean(c->qkv_bias));
    if (c->bos_token_id >= 0) json_object_set_new(o, "bos_token_id", json_integer(c->bos_token_id));
    set_ids(o, "eos_token_id", c->eos_token_ids, c->n_eos);
    if (c->torch_dtype[0]) {
        json_object_set_new(o, "torch_dtype", json_string(c->torch_dtype));
        if (json_object_get(o, "dtype")) json_object_set_new(o, "dtype", json_string(c->torch_dtype));
    }
    char *txt = jr_hf_json_dumps(o);
    json_decref(o);
    return txt;
}

jr_status jr_model_config_save(const jr_model_config *c, const char *path) {
    char *txt = jr_model_config_to_json(c);
    if (!txt) return JR_ENOMEM;
    jr_status rc = jr_write_atomic(path, txt, strlen(txt));
    free(txt);
    return rc;
}

void jr_model_rope_inv_freq(const jr_model_config *c, float *inv_freq) {
    int half = c->head_dim / 2;
    const double pi = 3.14159265358979323846;
    for (int i = 0; i < half; i++) {
        double f = 1.0 / pow(c->rope_theta, (double)(2 * i) / c->head_dim);
        if (c->rope_type == JR_ROPE_LLAMA3) {
            double old = c->rope_original_max_pos, lo = c->rope_low_freq_factor, hi = c->rope_high_freq_factor;
            double low_wavelen = old / lo, high_wavelen = old / hi, wavelen = 2 * pi / f;
            if (wavelen > low_wavelen) {
                f = f / c->rope_factor;                  /* low frequencies: scaled */
            } else if (!(wavelen < high_wavelen)) {      /* medium: smooth between the two */
                double s = (old / wavelen - lo) / (hi - lo);
                f = (1 - s) * f / c->rope_factor + s * f;
            }                                            /* high frequencies: unchanged */
        }
        inv_freq[i] = (float)f;
    }
}

/* ---- the tensor list ------------------------------------------------------------------------ */

static void add(jr_model_tensor *t, int *n, jr_tensor_role role, int layer, const char *fmt, int64_t d0, int64_t d1) {
    jr_model_tensor *x = &t[(*n)++];
    memset(x, 0, sizeof *x);
    if (layer >= 0) snprintf(x->name, sizeof x->name, fmt, layer);
    else snprintf(x->name, sizeof x->name, "%s", fmt);
    x->role = role;
    x->layer = layer;
    x->ndim = d1 ? 2 : 1;
    x->shape[0] = d0;
    x->shape[1] = d1;
    x->numel = d1 ? d0 * d1 : d0;
}

jr_status jr_model_tensors(const jr_model_config *c, jr_model_tensor **out, int *n_out) {
    *out = NULL;
    *n_out = 0;
    jr_status rc = jr_model_config_validate(c, "model config");
    if (rc) return rc;
    int per_layer = 17;
    jr_model_tensor *t = jr_calloc((size_t)c->num_hidden_layers * per_layer + 4, sizeof *t);
    if (!t) return JR_ENOMEM;
    int n = 0;
    int64_t H = c->hidden_size, I = c->intermediate_size, V = c->vocab_size, D = c->head_dim;
    int64_t Q = c->num_attention_heads * D, KV = c->num_key_value_heads * D;
    add(t, &n, JR_T_EMBED, -1, "model.embed_tokens.weight", V, H);
    for (int l = 0; l < c->num_hidden_layers; l++) {
        add(t, &n, JR_T_ATTN_NORM, l, "model.layers.%d.input_layernorm.weight", H, 0);
        add(t, &n, JR_T_Q, l, "model.layers.%d.self_attn.q_proj.weight", Q, H);
        add(t, &n, JR_T_K, l, "model.layers.%d.self_attn.k_proj.weight", KV, H);
        add(t, &n, JR_T_V, l, "model.layers.%d.self_attn.v_proj.weight", KV, H);
        add(t, &n, JR_T_O, l, "model.layers.%d.self_attn.o_proj.weight", H, Q);
        if (c->qkv_bias) {
            add(t, &n, JR_T_Q_BIAS, l, "model.layers.%d.self_attn.q_proj.bias", Q, 0);
            add(t, &n, JR_T_K_BIAS, l, "model.layers.%d.self_attn.k_proj.bias", KV, 0);
            add(t, &n, JR_T_V_BIAS, l, "model.layers.%d.self_attn.v_proj.bias", KV, 0);
        }
        if (c->o_bias) add(t, &n, JR_T_O_BIAS, l, "model.layers.%d.self_attn.o_proj.bias", H, 0);
        if (c->qk_norm) {
            add(t, &n, JR_T_Q_NORM, l, "model.layers.%d.self_attn.q_norm.weight", D, 0);
            add(t, &n, JR_T_K_NORM, l, "model.layers.%d.self_attn.k_norm.weight", D, 0);
        }
        add(t, &n, JR_T_MLP_NORM, l, "model.layers.%d.post_attention_layernorm.weight", H, 0);
        add(t, &n, JR_T_GATE, l, "model.layers.%d.mlp.gate_proj.weight", I, H);
        add(t, &n, JR_T_UP, l, "model.layers.%d.mlp.up_proj.weight", I, H);
        add(t, &n, JR_T_DOWN, l, "model.layers.%d.mlp.down_proj.weight", H, I);
    }
    add(t, &n, JR_T_FINAL_NORM, -1, "model.norm.weight", H, 0);
    if (!c->tie_word_embeddings) add(t, &n, JR_T_LM_HEAD, -1, "lm_head.weight", V, H);
    *out = t;
    *n_out = n;
    return JR_OK;
}

int64_t jr_model_param_count(const jr_model_config *c) {
    jr_model_tensor *t;
    int n;
    if (jr_model_tensors(c, &t, &n)) return -1;
    int64_t total = 0;
    for (int i = 0; i < n; i++) total += t[i].numel;
    free(t);
    return total;
}

/* ---- generation_config.json ----------------------------------------------------------------- */

void jr_generation_config_init(jr_generation_config *g) {
    memset(g, 0, sizeof *g);
    g->bos_token_id = g->pad_token_id = -1;
    g->do_sample = -1;
    g->temperature = g->top_p = g->min_p = g->repetition_penalty = NAN;
    g->top_k = g->max_new_tokens = g->max_length = -1;
}

void jr_generation_config_free(jr_generation_config *g) {
    if (!g) return;
    json_decref(g->json);
    jr_generation_config_init(g);
}

jr_status jr_generation_config_parse(jr_generation_config *g, const char *text, size_t len, const char *name) {
    jr_generation_config_init(g);
    json_error_t jerr;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!j) return jr_fail(JR_EFORMAT, "%s: not valid JSON: %s (line %d)", name, jerr.text, jerr.line);
    if (!json_is_object(j)) { json_decref(j); return jr_fail(JR_EFORMAT, "%s: not a JSON object", name); }
    int ids[JR_MAX_EOS], n = 0;
    jr_status rc;
    if ((rc = get_ids(j, "bos_token_id", ids, &n, name))) goto fail;
    if (n) g->bos_token_id = ids[0];
    n = 0;
    if ((rc = get_ids(j, "pad_token_id", ids, &n, name))) goto fail;
    if (n) g->pad_token_id = ids[0];
    if ((rc = get_ids(j, "eos_token_id", g->eos_token_ids, &g->n_eos, name)) ||
        (rc = get_bool(j, "do_sample", &g->do_sample, name)) ||
        (rc = get_num(j, "temperature", 0, &g->temperature, name)) ||
        (rc = get_num(j, "top_p", 0, &g->top_p, name)) ||
        (rc = get_int(j, "top_k", 0, &g->top_k, name)) ||
        (rc = get_num(j, "min_p", 0, &g->min_p, name)) ||
        (rc = get_num(j, "repetition_penalty", 0, &g->repetition_penalty, name)) ||
        (rc = get_int(j, "max_new_tokens", 0, &g->max_new_tokens, name)) ||
        (rc = get_int(j, "max_length", 0, &g->max_length, name)))
        goto fail;
    g->json = j;
    return JR_OK;
fail:
    json_decref(j);
    jr_generation_config_init(g);
    return rc;
}

jr_status jr_generation_config_load(jr_generation_config *g, const char *path) {
    char *text;
    size_t len;
    jr_generation_config_init(g);
    jr_status rc = jr_read_file(path, &text, &len);
    if (rc) return rc;
    rc = jr_generation_config_parse(g, text, len, path);
    free(text);
    return rc;
}

char *jr_generation_config_to_json(const jr_generation_config *g) {
    json_t *o = g->json ? json_deep_copy(g->json) : json_object();
    if (!o) { jr_fail(JR_ENOMEM, "out of memory"); return NULL; }
    if (g->bos_token_id >= 0) json_object_set_new(o, "bos_token_id", json_integer(g->bos_token_id));
    if (g->pad_token_id >= 0) json_object_set_new(o, "pad_token_id", json_integer(g->pad_token_id));
    set_ids(o, "eos_token_id", g->eos_token_ids, g->n_eos);
    if (g->do_sample >= 0) json_object_set_new(o, "do_sample", json_boolean(g->do_sample));
    if (!isnan(g->temperature)) set_real(o, "temperature", g->temperature);
    if (!isnan(g->top_p)) set_real(o, "top_p", g->top_p);
    if (g->top_k >= 0) json_object_set_new(o, "top_k", json_integer(g->top_k));
    if (!isnan(g->min_p)) set_real(o, "min_p", g->min_p);
    if (!isnan(g->repetition_penalty)) set_real(o, "repetition_penalty", g->repetition_penalty);
    if (g->max_new_tokens >= 0) json_object_set_new(o, "max_new_tokens", json_integer(g->max_new_tokens));
    if (g->max_length >= 0) json_object_set_new(o, "max_length", json_integer(g->max_length));
    char *txt = jr_hf_json_dumps(o);
    json_decref(o);
    return txt;
}
