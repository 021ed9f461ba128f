/* config.c - YAML configuration with dotted key=value overrides, typed defaults and validation */
#include "judgerl/config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "judgerl/fsutil.h"
#include "judgerl/strbuf.h"

/* ---- YAML -> JSON ---------------------------------------------------------------------- */

static int is_int_text(const char *s) {
    const char *p = s;
    if (*p == '-' || *p == '+') p++;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'o')) return 0;
    if (!*p) return 0;
    for (; *p; p++) if (*p < '0' || *p > '9') return 0;
    return 1;
}

static json_t *resolve_plain(const char *s) {
    if (!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL"))
        return json_null();
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE")) return json_true();
    if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE")) return json_false();
    if (is_int_text(s)) {
        errno = 0;
        long long v = strtoll(s, NULL, 10);
        if (errno == 0) return json_integer(v);
    }
    if (!strcmp(s, ".inf") || !strcmp(s, "+.inf") || !strcmp(s, ".Inf")) return json_real(INFINITY);
    if (!strcmp(s, "-.inf") || !strcmp(s, "-.Inf")) return json_real(-INFINITY);
    /* A float: digits with optional sign, point and exponent (YAML 1.2 core schema). */
    const char *p = s;
    int digits = 0;
    if (*p == '-' || *p == '+') p++;
    while (*p >= '0' && *p <= '9') { p++; digits++; }
    if (*p == '.') { p++; while (*p >= '0' && *p <= '9') { p++; digits++; } }
    if (digits && (*p == 'e' || *p == 'E')) {
        p++;
        if (*p == '-' || *p == '+') p++;
        if (!(*p >= '0' && *p <= '9')) return json_string(s);
        while (*p >= '0' && *p <= '9') p++;
    }
    if (digits && !*p) return json_real(strtod(s, NULL));
    return json_string(s);
}

/* The most nodes a YAML document may expand to (aliases counted at every use): a config has a few
 * hundred; a 332-byte alias bomb (9 levels of 10 aliases) would expand to 10^9. */
#define YAML_MAX_NODES 100000

static jr_status node_to_json(yaml_document_t *doc, yaml_node_t *node, const char *name, int depth, long *budget, json_t **out) {
    *out = NULL;
    if (depth > 64) return jr_fail(JR_EFORMAT, "%s: YAML nested too deeply (or a recursive alias)", name);
    if (--*budget < 0)
        return jr_fail(JR_EFORMAT, "%s: line %lu: the YAML expands to more than %d nodes (aliases counted at each use: an alias bomb?)",
                       name, (unsigned long)node->start_mark.line + 1, YAML_MAX_NODES);
    switch (node->type) {
    case YAML_SCALAR_NODE: {
        const char *v = (const char *)node->data.scalar.value;
        if (node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) *out = resolve_plain(v);
        else *out = json_stringn(v, node->data.scalar.length);
        if (!*out) {
            json_t *t = json_stringn_nocheck(v, node->data.scalar.length); /* NULL: out of memory, not bad UTF-8 */
            if (!t) return jr_fail(JR_ENOMEM, "%s: line %lu: out of memory", name, (unsigned long)node->start_mark.line + 1);
            json_decref(t);
            return jr_fail(JR_EFORMAT, "%s: line %lu: scalar is not valid UTF-8", name, (unsigned long)node->start_mark.line + 1);
        }
        return JR_OK;
    }
    case YAML_SEQUENCE_NODE: {
        json_t *arr = json_array();
        if (!arr) return jr_fail(JR_ENOMEM, "%s: out of memory", name);
        for (yaml_node_item_t *it = node->data.sequence.items.start; it < node->data.sequence.items.top; it++) {
            json_t *v;
            jr_status st = node_to_json(doc, yaml_document_get_node(doc, *it), name, depth + 1, budget, &v);
            if (st) { json_decref(arr); return st; }
            if (json_array_append_new(arr, v)) { json_decref(arr); return jr_fail(JR_ENOMEM, "%s: out of memory", name); }
        }
        *out = arr;
        return JR_OK;
    }
    case YAML_MAPPING_NODE: {
        json_t *obj = json_object();
        if (!obj) return jr_fail(JR_ENOMEM, "%s: out of memory", name);
        for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
            yaml_node_t *k = yaml_document_get_node(doc, p->key);
            if (!k || k->type != YAML_SCALAR_NODE) {
                json_decref(obj);
                return jr_fail(JR_EFORMAT, "%s: line %lu: mapping keys must be plain strings", name,
                               k ? (unsigned long)k->start_mark.line + 1 : 0UL);
            }
            const char *key = (const char *)k->data.scalar.value;
            if (json_object_get(obj, key)) {
                json_decref(obj);
                return jr_fail(JR_EFORMAT, "%s: line %lu: duplicate key '%s'", name,
                               (unsigned long)k->start_mark.line + 1, key);
            }
            json_t *v;
            jr_status st = node_to_json(doc, yaml_document_get_node(doc, p->value), name, depth + 1, budget, &v);
            if (st) { json_decref(obj); return st; }
            if (json_object_set_new(obj, key, v)) {
                json_decref(obj);
                return jr_fail(JR_EFORMAT, "%s: line %lu: key '%s' is not valid UTF-8 (or out of memory)", name, (unsigned long)k->start_mark.line + 1, key);
            }
        }
        *out = obj;
        return JR_OK;
    }
    default:
        return jr_fail(JR_EFORMAT, "%s: empty YAML node", name);
    }
}

jr_status jr_yaml_parse(const char *text, size_t len, const char *name, json_t **out) {
    *out = NULL;
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser)) return jr_fail(JR_ENOMEM, "%s: cannot initialise the YAML parser", name);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        jr_status st = jr_fail(JR_EFORMAT, "%s: line %lu column %lu: %s%s%s", name,
                               (unsigned long)parser.problem_mark.line + 1, (unsigned long)parser.problem_mark.column + 1,
                               parser.problem ? parser.problem : "YAML syntax error",
                               parser.context ? " " : "", parser.context ? parser.context : "");
        yaml_parser_delete(&parser);
        return st;
    }
    jr_status st = JR_OK;
    yaml_node_t *rootn = yaml_document_get_root_node(&doc);
    if (!rootn) *out = json_null();
    else {
        long budget = YAML_MAX_NODES;
        st = node_to_json(&doc, rootn, name, 0, &budget, out);
    }
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return st;
}

/* ---- schema helpers -------------------------------------------------------------------- */

int jr_edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 200 || lb > 200) return 1000;
    int prev[201], cur[201];
    for (size_t j = 0; j <= lb; j++) prev[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int c = prev[j - 1] + (a[i - 1] != b[j - 1]);
            if (prev[j] + 1 < c) c = prev[j] + 1;
            if (cur[j - 1] + 1 < c) c = cur[j - 1] + 1;
            cur[j] = c;
        }
        memcpy(prev, cur, sizeof(int) * (lb + 1));
    }
    return prev[lb];
}

typedef struct {
    const jr_cfg_field *const *tables;
} schema;

static const jr_cfg_field *find_field(const jr_cfg_field *const *tables, const char *key) {
    for (int t = 0; tables[t]; t++)
        for (const jr_cfg_field *f = tables[t]; f->key; f++)
            if (!strcmp(f->key, key)) return f;
    return NULL;
}

/* 1 when some field's key starts with prefix followed by '.'. */
static int is_section(const jr_cfg_field *const *tables, const char *prefix) {
    size_t n = strlen(prefix);
    for (int t = 0; tables[t]; t++)
        for (const jr_cfg_field *f = tables[t]; f->key; f++)
            if (!strncmp(f->key, prefix, n) && f->key[n] == '.') return 1;
    return 0;
}

static void nearest(const jr_cfg_field *const *tables, const char *key, char *out, size_t outsz) {
    int best = 1 << 30;
    out[0] = 0;
    const char *klast = strrchr(key, '.');
    klast = klast ? klast + 1 : key;
    for (int t = 0; tables[t]; t++)
        for (const jr_cfg_field *f = tables[t]; f->key; f++) {
            const char *flast = strrchr(f->key, '.');
            flast = flast ? flast + 1 : f->key;
            int d = jr_edit_distance(key, f->key);
            int d2 = jr_edit_distance(klast, flast) + 1; /* the right name in another section */
            if (d2 < d) d = d2;
            if (d < best) { best = d; snprintf(out, outsz, "%s", f->key); }
        }
}

static jr_status unknown_key(const jr_cfg_field *const *tables, const char *where, const char *path) {
    char near[256];
    nearest(tables, path, near, sizeof near);
    if (near[0]) return jr_fail(JR_EINVAL, "%s: unknown key '%s' (did you mean '%s'?)", where, path, near);
    return jr_fail(JR_EINVAL, "%s: unknown key '%s'", where, path);
}

static const char *type_name(jr_cfg_type t) {
    switch (t) {
    case JR_CFG_BOOL: return "a boolean (true or false)";
    case JR_CFG_INT: return "an integer";
    case JR_CFG_FLOAT: return "a number";
    case JR_CFG_STRING: return "a string";
    case JR_CFG_ENUM: return "one of";
    case JR_CFG_LIST: return "a list";
    case JR_CFG_OBJLIST: return "a list of mappings";
    case JR_CFG_ANY: return "any value";
    }
    return "?";
}

static int choice_ok(const char *choices, const char *v) {
    size_t n = strlen(v);
    const char *p = choices;
    while (p && *p) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && !strncmp(p, v, n)) return 1;
        p = bar ? bar + 1 : NULL;
    }
    return 0;
}

static jr_status check_subtable(const jr_cfg_field *sub, const char *where, const char *path, json_t *obj, json_t **out);

/* Checks (and coerces) one value against its field; *out gets a new reference. */
static jr_status check_value(const jr_cfg_field *f, const char *where, const char *path, json_t *v, json_t **out) {
    *out = NULL;
    switch (f->type) {
    case JR_CFG_BOOL:
        if (!json_is_boolean(v)) goto bad;
        break;
    case JR_CFG_INT:
        if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) && fabs(json_real_value(v)) < 9e15) {
            *out = json_integer((json_int_t)json_real_value(v));
        } else if (!json_is_integer(v)) goto bad;
        break;
    case JR_CFG_FLOAT:
        if (json_is_integer(v)) *out = json_real((double)json_integer_value(v));
        else if (!json_is_real(v)) goto bad;
        break;
    case JR_CFG_STRING:
        if (json_is_null(v) && f->def && !strcmp(f->def, "null")) break;
        if (json_is_integer(v) || json_is_real(v)) goto bad;
        if (!json_is_string(v)) goto bad;
        break;
    case JR_CFG_ENUM:
        if (!json_is_string(v) || !choice_ok(f->choices, json_string_value(v))) {
            char *txt = json_dumps(v, JSON_ENCODE_ANY);
            jr_status st = jr_fail(JR_EINVAL, "%s: %s=%s: expected one of %s", where, path, txt ? txt : "?", f->choices);
            free(txt);
            return st;
        }
        break;
    case JR_CFG_LIST:
        if (!json_is_array(v)) goto bad;
        for (size_t i = 0; i < json_array_size(v); i++) {
            json_t *e = json_array_get(v, i);
            if (json_is_object(e) || json_is_array(e))
                return jr_fail(JR_EINVAL, "%s: %s[%zu]: expected a scalar", where, path, i);
        }
        break;
    case JR_CFG_OBJLIST: {
        if (!json_is_array(v)) goto bad;
        json_t *arr = json_array();
        for (size_t i = 0; i < json_array_size(v); i++) {
            char sub[512];
            snprintf(sub, sizeof sub, "%s[%zu]", path, i);
            json_t *e = json_array_get(v, i), *ce;
            if (!json_is_object(e)) { json_decref(arr); return jr_fail(JR_EINVAL, "%s: %s: expected a mapping", where, sub); }
            jr_status st = check_subtable(f->sub, where, sub, e, &ce);
            if (st) { json_decref(arr); return st; }
            json_array_append_new(arr, ce);
        }
        *out = arr;
        return JR_OK;
    }
    case JR_CFG_ANY:
        break;
    }
    if ((f->type == JR_CFG_INT || f->type == JR_CFG_FLOAT) && f->min < f->max) {
        json_t *num = *out ? *out : v;
        double d = json_number_value(num);
        if (!(d >= f->min && d <= f->max)) {
            json_decref(*out);
            *out = NULL;
            return jr_fail(JR_EINVAL, "%s: %s=%g is out of range [%g, %g]", where, path, d, f->min, f->max);
        }
    }
    if (!*out) *out = json_incref(v);
    return JR_OK;
bad:;
    char *txt = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    jr_status st = jr_fail(JR_EINVAL, "%s: %s=%.80s: expected %s", where, path, txt ? txt : "?", type_name(f->type));
    free(txt);
    return st;
}

/* Parses a field's default and coerces it like a user's value ("0" for a float becomes 0.0). */
static jr_status parse_default(const jr_cfg_field *f, json_t **out) {
    json_t *raw;
    jr_status st = jr_yaml_parse(f->def, strlen(f->def), f->key, &raw);
    if (st) return jr_fail(JR_EINTERNAL, "default of %s does not parse: %s", f->key, jr_errmsg());
    st = check_value(f, "default", f->key, raw, out);
    json_decref(raw);
    if (st) return jr_fail(JR_EINTERNAL, "default of %s does not fit its type: %s", f->key, jr_errmsg());
    return JR_OK;
}

/* Elements of OBJLIST: relative keys, no nesting. */
static jr_status check_subtable(const jr_cfg_field *sub, const char *where, const char *path, json_t *obj, json_t **out) {
    *out = NULL;
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) {
        const jr_cfg_field *f = NULL;
        for (const jr_cfg_field *s = sub; s->key; s++) if (!strcmp(s->key, k)) f = s;
        if (!f) {
            const jr_cfg_field *tabs[2] = {sub, NULL};
            char near[256], full[512];
            nearest(tabs, k, near, sizeof near);
            snprintf(full, sizeof full, "%.250s.%.250s", path, k);
            return jr_fail(JR_EINVAL, "%s: unknown key '%s'%s%s%s", where, full, near[0] ? " (did you mean '" : "",
                           near, near[0] ? "'?)" : "");
        }
    }
    json_t *res = json_object();
    for (const jr_cfg_field *s = sub; s->key; s++) {
        char full[512];
        snprintf(full, sizeof full, "%.250s.%.250s", path, s->key);
        json_t *given = json_object_get(obj, s->key), *cv;
        jr_status st;
        if (given) st = check_value(s, where, full, given, &cv);
        else if (!s->def) { json_decref(res); return jr_fail(JR_EINVAL, "%s: missing required key '%s'", where, full); }
        else st = parse_default(s, &cv);
        if (st) { json_decref(res); return st; }
        json_object_set_new(res, s->key, cv);
    }
    *out = res;
    return JR_OK;
}

/* Walks the user's tree and rejects keys no table knows. */
static jr_status check_known(const jr_cfg_field *const *tables, const char *where, const char *prefix, json_t *obj) {
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) {
        char path[512];
        if (prefix[0]) snprintf(path, sizeof path, "%s.%s", prefix, k);
        else snprintf(path, sizeof path, "%s", k);
        if (find_field(tables, path)) continue;
        if (is_section(tables, path)) {
            if (!json_is_object(v)) return jr_fail(JR_EINVAL, "%s: '%s' is a section: expected a mapping of keys", where, path);
            jr_status st = check_known(tables, where, path, v);
            if (st) return st;
            continue;
        }
        return unknown_key(tables, where, path);
    }
    return JR_OK;
}

/* Gets the value at a dotted path in a tree of objects (NULL when absent). */
static json_t *get_path(json_t *root, const char *key) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", key);
    json_t *cur = root;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ".", &save); tok; tok = strtok_r(NULL, ".", &save)) {
        if (json_is_object(cur)) cur = json_object_get(cur, tok);
        else if (json_is_array(cur)) {
            char *end;
            long i = strtol(tok, &end, 10);
            cur = (*end || i < 0) ? NULL : json_array_get(cur, (size_t)i);
        } else return NULL;
        if (!cur) return NULL;
    }
    return cur;
}

/* Sets the value at a dotted path, creating mappings on the way (steals v). */
static int set_path(json_t *root, const char *key, json_t *v) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", key);
    json_t *cur = root;
    char *save = NULL, *tok = strtok_r(buf, ".", &save);
    while (tok) {
        char *next = strtok_r(NULL, ".", &save);
        if (!next) {
            if (json_is_object(cur)) return json_object_set_new(cur, tok, v);
            if (json_is_array(cur)) {
                char *end;
                long i = strtol(tok, &end, 10);
                if (*end || i < 0 || (size_t)i >= json_array_size(cur)) { json_decref(v); return -1; }
                return json_array_set_new(cur, (size_t)i, v);
            }
            json_decref(v);
            return -1;
        }
        json_t *child;
        if (json_is_object(cur)) {
            child = json_object_get(cur, tok);
            if (!child || !(json_is_object(child) || json_is_array(child))) {
                child = json_object();
                json_object_set_new(cur, tok, child);
            }
        } else if (json_is_array(cur)) {
            char *end;
            long i = strtol(tok, &end, 10);
            child = (*end || i < 0) ? NULL : json_array_get(cur, (size_t)i);
            if (!child) { json_decref(v); return -1; }
        } else { json_decref(v); return -1; }
        cur = child;
        tok = next;
    }
    json_decref(v);
    return -1;
}

/* The table field that owns a dotted override key: the field itself, or an OBJLIST/ANY field
 * that the key reaches into (judge.endpoints.0.url). */
static const jr_cfg_field *owner_field(const jr_cfg_field *const *tables, const char *key) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", key);
    for (;;) {
        const jr_cfg_field *f = find_field(tables, buf);
        if (f) return (f == find_field(tables, key) || f->type == JR_CFG_OBJLIST || f->type == JR_CFG_ANY) ? f : NULL;
        char *dot = strrchr(buf, '.');
        if (!dot) return NULL;
        *dot = 0;
    }
}


/* ---- names users know: TRL, PEFT and verl keys ------------------------------------------- */

/* An alias: a key suffix (whole components) in another library's config, judgerl's key and, when
 * the meaning differs, why (then the key is refused with that exact suggestion, never mapped). */
typedef struct {
    const char *suffix, *target, *from, *why;
} cfg_alias;

static const cfg_alias ALIASES[] = {
    /* TRL GRPOConfig / SFTConfig / TrainingArguments */
    {"learning_rate", "trainer.lr", "TRL", NULL},
    {"max_steps", "trainer.steps", "TRL", NULL},
    {"num_train_epochs", "trainer.steps", "TRL",
     "judgerl counts optimizer steps, not epochs: steps = epochs x rows / (batch_size x grad_accum)"},
    {"per_device_train_batch_size", "trainer.batch_size", "TRL",
     "for SFT it is trainer.batch_size; a GRPO step takes grpo.prompts_per_step prompts x grpo.num_generations"},
    {"gradient_accumulation_steps", "trainer.grad_accum", "TRL", NULL},
    {"warmup_steps", "trainer.warmup_steps", "TRL", NULL},
    {"warmup_ratio", "trainer.warmup_steps", "TRL", "judgerl takes a step count: warmup_steps = ratio x trainer.steps"},
    {"lr_scheduler_type", "trainer.lr_schedule", "TRL", NULL},
    {"weight_decay", "trainer.weight_decay", "TRL", NULL},
    {"adam_beta1", "trainer.beta1", "TRL", NULL},
    {"adam_beta2", "trainer.beta2", "TRL", NULL},
    {"adam_epsilon", "trainer.eps", "TRL", NULL},
    {"max_grad_norm", "trainer.max_grad_norm", "TRL", NULL},
    {"save_steps", "trainer.save_every", "TRL", NULL},
    {"save_total_limit", "trainer.keep_checkpoints", "TRL", NULL},
    {"logging_steps", "trainer.log_every", "TRL", NULL},
    {"eval_steps", "trainer.eval_every", "TRL", NULL},
    {"resume_from_checkpoint", "trainer.resume", "TRL",
     "judgerl resumes from run.out_dir's latest checkpoint: set trainer.resume=true (a path is not taken)"},
    {"report_to", "trainer.tensorboard", "TRL", "judgerl writes TensorBoard files (true/false) and metrics.jsonl"},
    {"seed", "run.seed", "TRL", NULL},
    {"output_dir", "run.out_dir", "TRL", NULL},
    {"overwrite_output_dir", "run.overwrite", "TRL", NULL},
    {"max_seq_length", "trainer.max_seq_len", "TRL", NULL},
    {"max_length", "trainer.max_seq_len", "TRL", NULL},
    {"num_generations", "grpo.num_generations", "TRL", NULL},
    {"max_prompt_length", "grpo.max_prompt_length", "TRL", NULL},
    {"max_completion_length", "grpo.max_completion_length", "TRL", NULL},
    {"kl_coef", "grpo.beta", "TRL", NULL},
    {"beta", "grpo.beta", "TRL", NULL},
    {"temperature", "grpo.temperature", "TRL", NULL},
    {"top_p", "grpo.top_p", "TRL", NULL},
    {"top_k", "grpo.top_k", "TRL", NULL},
    {"min_p", "grpo.min_p", "TRL", NULL},
    {"epsilon", "grpo.epsilon", "TRL", NULL},
    {"epsilon_high", "grpo.epsilon_high", "TRL", NULL},
    {"num_iterations", "grpo.num_iterations", "TRL", NULL},
    {"loss_type", "grpo.loss_type", "TRL", NULL},
    {"scale_rewards", "grpo.scale_rewards", "TRL", NULL},
    {"reward_weights", "grpo.reward_weights", "TRL", NULL},
    {"mask_truncated_completions", "grpo.mask_truncated_completions", "TRL", NULL},
    {"model_name_or_path", "model.path", "TRL", NULL},
    /* PEFT LoraConfig */
    {"lora.r", "lora.rank", "PEFT", NULL},
    {"peft.r", "lora.rank", "PEFT", NULL},
    {"peft_config.r", "lora.rank", "PEFT", NULL},
    {"lora_config.r", "lora.rank", "PEFT", NULL},
    {"lora_r", "lora.rank", "PEFT", NULL},
    {"lora_alpha", "lora.alpha", "PEFT", NULL},
    {"lora_dropout", "lora.dropout", "PEFT", NULL},
    {"target_modules", "lora.target_modules", "PEFT", NULL},
    {"use_peft", "lora.enabled", "TRL", NULL},
    /* verl actor / rollout / data / trainer keys */
    {"rollout.n", "grpo.num_generations", "verl", NULL},
    {"optim.lr", "trainer.lr", "verl", NULL},
    {"optim.lr_warmup_steps", "trainer.warmup_steps", "verl", NULL},
    {"grad_clip", "trainer.max_grad_norm", "verl", NULL},
    {"clip_ratio", "grpo.epsilon", "verl", NULL},
    {"clip_ratio_low", "grpo.epsilon", "verl", NULL},
    {"clip_ratio_high", "grpo.epsilon_high", "verl", NULL},
    {"kl_loss_coef", "grpo.beta", "verl", NULL},
    {"ppo_epochs", "grpo.num_iterations", "verl", NULL},
    {"loss_agg_mode", "grpo.loss_type", "verl",
     "verl's token-mean is grpo.loss_type=dapo, seq-mean-token-sum-norm is dr_grpo, seq-mean-token-mean is grpo"},
    {"ppo_mini_batch_size", "grpo.num_iterations", "verl",
     "judgerl takes one optimizer step per batch of grpo.prompts_per_step prompts (grpo.num_iterations repeats it)"},
    {"kl_ctrl.kl_coef", "grpo.beta", "verl",
     "verl's algorithm.kl_ctrl is a KL penalty in the reward; judgerl's grpo.beta is the KL term in the loss "
     "(verl's actor.kl_loss_coef)"},
    {"adv_estimator", "trainer.algo", "verl", "trainer.algo: grpo or rloo"},
    {"model.lora_rank", "lora.rank", "verl", NULL},
    {"model.lora_alpha", "lora.alpha", "verl", NULL},
    {"model.path", "model.path", "verl", NULL},
    {"data.max_prompt_length", "grpo.max_prompt_length", "verl", NULL},
    {"max_response_length", "grpo.max_completion_length", "verl", NULL},
    {"train_batch_size", "grpo.prompts_per_step", "verl", NULL},
    {"train_files", "data.train", "verl", NULL},
    {"val_files", "data.validation", "verl", NULL},
    {"total_training_steps", "trainer.steps", "verl", NULL},
    {"total_epochs", "trainer.steps", "verl",
     "judgerl counts optimizer steps, not epochs: steps = epochs x rows / grpo.prompts_per_step"},
    {"save_freq", "trainer.save_every", "verl", NULL},
    {"test_freq", "trainer.eval_every", "verl", NULL},
    {"default_local_dir", "run.out_dir", "verl", NULL},
    {NULL, NULL, NULL, NULL},
};

/* The alias for path: the longest suffix that matches whole components and whose target is in the
 * tables. It applies at any depth, except that a path inside another judgerl section than its
 * target's (judge.temperature) is not taken for it, unless the suffix names that section itself. */
static const cfg_alias *find_alias(const jr_cfg_field *const *tables, const char *path) {
    const cfg_alias *best = NULL;
    size_t pl = strlen(path), bl = 0;
    char top[128];
    snprintf(top, sizeof top, "%.*s", (int)strcspn(path, "."), path);
    for (const cfg_alias *a = ALIASES; a->suffix; a++) {
        size_t sl = strlen(a->suffix);
        if (sl > pl || strcmp(path + pl - sl, a->suffix) || (sl < pl && path[pl - sl - 1] != '.')) continue;
        if (!find_field(tables, a->target) || sl <= bl) continue;
        size_t tl = strcspn(a->target, ".");
        int covers_top = sl == pl, own = strlen(top) == tl && !strncmp(top, a->target, tl);
        if (!covers_top && !own && is_section(tables, top)) continue;
        best = a;
        bl = sl;
    }
    return best;
}

/* Notes "note: 'path' is FROM's name for 'target': using it" in c->notes. */
static void add_note(jr_config *c, const char *path, const cfg_alias *a) {
    char line[600];
    snprintf(line, sizeof line, "note: '%s' is %s's name for '%s': using it", path, a->from, a->target);
    size_t old = c->notes ? strlen(c->notes) : 0, n = strlen(line);
    char *p = realloc(c->notes, old + n + 2);
    if (!p) return;
    memcpy(p + old, line, n);
    p[old + n] = '\n';
    p[old + n + 1] = 0;
    c->notes = p;
}

/* A refused alias: "unknown key 'num_train_epochs' (TRL's name; judgerl's is 'trainer.steps': why)". */
static jr_status alias_refused(const cfg_alias *a, const char *where, const char *path) {
    return jr_fail(JR_EINVAL, "%s: unknown key '%s' (%s's name; judgerl's nearest is '%s': %s)", where, path, a->from,
                   a->target, a->why);
}

/* PEFT writes target_modules as a list: judgerl's lora.target_modules takes it joined by commas. */
static jr_status join_list(json_t *root, const char *key, const char *where) {
    json_t *v = get_path(root, key);
    if (!json_is_array(v)) return JR_OK;
    jr_strbuf b = {0};
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) {
        if (!json_is_string(e)) {
            jr_strbuf_free(&b);
            return jr_fail(JR_EINVAL, "%s: %s[%zu]: expected a module name", where, key, i);
        }
        jr_strbuf_addf(&b, "%s%s", i ? "," : "", json_string_value(e));
    }
    char *joined = jr_strbuf_take(&b);
    if (!joined) return jr_fail(JR_ENOMEM, "out of memory");
    set_path(root, key, json_string(joined));
    free(joined);
    return JR_OK;
}

/* Moves every key of obj (at prefix) that an exact alias names to its judgerl key in root, noting
 * each; refuses one whose meaning differs, naming the key to use. */
static jr_status apply_aliases(jr_config *c, const jr_cfg_field *const *tables, const char *where, json_t *root,
                               const char *prefix, json_t *obj) {
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(obj, tmp, k, v) {
        char path[512];
        snprintf(path, sizeof path, "%s%s%s", prefix, prefix[0] ? "." : "", k);
        if (find_field(tables, path)) continue;
        if (json_is_object(v) && !find_alias(tables, path)) {
            jr_status st = apply_aliases(c, tables, where, root, path, v);
            if (st) return st;
            continue;
        }
        const cfg_alias *a = find_alias(tables, path);
        if (!a) continue;
        if (a->why) return alias_refused(a, where, path);
        if (get_path(root, a->target))
            return jr_fail(JR_EINVAL, "%s: '%s' (%s's name for '%s') and '%s' are both set: keep one", where, path,
                           a->from, a->target, a->target);
        json_t *val = json_incref(v);
        json_object_del(obj, k);
        if (set_path(root, a->target, val) != 0)
            return jr_fail(JR_EINVAL, "%s: cannot set '%s' for '%s'", where, a->target, path);
        add_note(c, path, a);
    }
    return JR_OK;
}

/* Removes the mappings left empty once their aliased keys moved out. */
static void drop_empty(json_t *obj) {
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(obj, tmp, k, v) {
        if (!json_is_object(v)) continue;
        drop_empty(v);
        if (!json_object_size(v)) json_object_del(obj, k);
    }
}

static jr_status build(jr_config *c, json_t *user, const char *name, int n_over, char *const *over,
                       const jr_cfg_field *const *tables) {
    jr_status st;
    if (json_is_null(user)) { json_decref(user); user = json_object(); }
    if (!json_is_object(user)) {
        json_decref(user);
        return jr_fail(JR_EINVAL, "%s: expected a mapping of keys at the top level", name);
    }
    st = apply_aliases(c, tables, name, user, "", user);
    if (!st) drop_empty(user);
    if (!st) st = check_known(tables, name, "", user);
    if (st) goto fail;
    for (int i = 0; i < n_over; i++) {
        const char *eq = strchr(over[i], '=');
        char where[600];
        snprintf(where, sizeof where, "override '%.500s'", over[i]);
        if (!eq || eq == over[i]) {
            st = jr_fail(JR_EINVAL, "%s: expected key=value (e.g. trainer.lr=1e-5)", where);
            goto fail;
        }
        char key[512];
        snprintf(key, sizeof key, "%.*s", (int)(eq - over[i]) < 511 ? (int)(eq - over[i]) : 511, over[i]);
        const cfg_alias *al = owner_field(tables, key) ? NULL : find_alias(tables, key);
        if (al && al->why) st = alias_refused(al, where, key);
        else if (!al && !owner_field(tables, key)) st = unknown_key(tables, where, key);
        if (st) goto fail;
        if (al) {
            add_note(c, key, al);
            snprintf(key, sizeof key, "%s", al->target);
        }
        json_t *v;
        st = jr_yaml_parse(eq + 1, strlen(eq + 1), where, &v);
        if (st) goto fail;
        if (set_path(user, key, v) != 0) {
            st = jr_fail(JR_EINVAL, "%s: cannot set '%s' (no such list element)", where, key);
            goto fail;
        }
    }
    if (find_field(tables, "lora.target_modules") && (st = join_list(user, "lora.target_modules", name))) goto fail;
    /* Rebuild in table order with defaults filled and values checked. */
    json_t *root = json_object();
    for (int t = 0; tables[t]; t++)
        for (const jr_cfg_field *f = tables[t]; f->key; f++) {
            if (get_path(root, f->key)) continue; /* a field listed in two tables */
            json_t *given = get_path(user, f->key), *v;
            if (given) st = check_value(f, name, f->key, given, &v);
            else if (!f->def) st = jr_fail(JR_EINVAL, "%s: missing required key '%s' (%s)", name, f->key, f->doc ? f->doc : "");
            else st = parse_default(f, &v);
            if (!st && set_path(root, f->key, v) != 0) st = jr_fail(JR_EINTERNAL, "config key %s clashes with a section", f->key);
            if (st) { json_decref(root); goto fail; }
        }
    json_decref(user);
    c->root = root;
    c->source = jr_strdup(name);
    if (!c->source) { jr_config_free(c); return JR_ENOMEM; }
    return JR_OK;
fail: /* *c is left empty: the notes gathered so far go too */
    json_decref(user);
    free(c->notes);
    c->notes = NULL;
    return st;
}

jr_status jr_config_load_string(jr_config *c, const char *yaml_text, const char *name, int n_overrides,
                                char *const *overrides, const jr_cfg_field *const *tables) {
    memset(c, 0, sizeof *c);
    json_t *user;
    jr_status st = jr_yaml_parse(yaml_text, strlen(yaml_text), name, &user);
    if (st) return st;
    return build(c, user, name, n_overrides, overrides, tables);
}

jr_status jr_config_load(jr_config *c, const char *yaml_path, int n_overrides, char *const *overrides,
                         const jr_cfg_field *const *tables) {
    memset(c, 0, sizeof *c);
    if (!yaml_path) return jr_config_load_string(c, "", "<defaults>", n_overrides, overrides, tables);
    char *text;
    size_t len;
    jr_status st = jr_read_file(yaml_path, &text, &len);
    if (st) return st;
    json_t *user;
    st = jr_yaml_parse(text, len, yaml_path, &user);
    free(text);
    if (st) return st;
    return build(c, user, yaml_path, n_overrides, overrides, tables);
}

void jr_config_free(jr_config *c) {
    json_decref(c->root);
    free(c->source);
    free(c->notes);
    c->notes = NULL;
    c->root = NULL;
    c->source = NULL;
}

/* The first key a getter could not serve since the last jr_cfg_check on this thread (a key not in
 * the loaded tables, or of another type): the getters never abort, jr_cfg_check reports it. */
static _Thread_local char bad_key[400];
static _Thread_local int n_bad;

static json_t *get_path_or_null(const jr_config *c, const char *key) { return c && c->root ? get_path(c->root, key) : NULL; }
static int is_str_or_null(const json_t *v) { return json_is_string(v) || json_is_null(v); }
static int is_int(const json_t *v) { return json_is_integer(v); }
static int is_num(const json_t *v) { return json_is_number(v); }
static int is_bool(const json_t *v) { return json_is_boolean(v); }
static int is_any(const json_t *v) { (void)v; return 1; }

static json_t *get_typed(const jr_config *c, const char *key, const char *want, int (*ok)(const json_t *)) {
    json_t *v = get_path_or_null(c, key);
    if (v && ok(v)) return v;
    if (!n_bad++)
        snprintf(bad_key, sizeof bad_key, v ? "option %s: expected %s (is it declared with another type?)"
                                            : "option %s is not in the loaded tables (a misspelt key, or a table the command did not load)",
                 key, want);
    return NULL;
}

int64_t jr_cfg_int(const jr_config *c, const char *key) { return (int64_t)json_integer_value(get_typed(c, key, "an integer", is_int)); }
double jr_cfg_float(const jr_config *c, const char *key) { return json_number_value(get_typed(c, key, "a number", is_num)); }
int jr_cfg_bool(const jr_config *c, const char *key) { return json_is_true(get_typed(c, key, "a boolean", is_bool)); }
const char *jr_cfg_str(const jr_config *c, const char *key) { return json_string_value(get_typed(c, key, "a string", is_str_or_null)); }
json_t *jr_cfg_json(const jr_config *c, const char *key) { return get_typed(c, key, "a value", is_any); }
int jr_cfg_has(const jr_config *c, const char *key) { return get_path_or_null(c, key) != NULL; }

jr_status jr_cfg_check(const jr_config *c) {
    if (!n_bad) return JR_OK;
    int n = n_bad;
    n_bad = 0;
    return jr_fail(JR_EINVAL, "%s: %s%s", c && c->source ? c->source : "config", bad_key,
                   n > 1 ? " (and more keys after it)" : "");
}

/* ---- dump ------------------------------------------------------------------------------- */

static void dump_obj(jr_strbuf *b, json_t *obj, int indent) {
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) {
        for (int i = 0; i < indent; i++) jr_strbuf_add(b, "  ");
        jr_strbuf_add(b, k);
        if (json_is_object(v) && json_object_size(v)) {
            jr_strbuf_add(b, ":\n");
            dump_obj(b, v, indent + 1);
            continue;
        }
        jr_strbuf_add(b, ": ");
        char *txt;
        if (json_is_real(v)) {
            char num[64];
            double d = json_real_value(v);
            if (isinf(d)) snprintf(num, sizeof num, "%s", d > 0 ? ".inf" : "-.inf");
            else if (isnan(d)) snprintf(num, sizeof num, ".nan");
            else {
                for (int prec = 6; prec <= 17; prec++) { /* shortest text that reads back exactly */
                    snprintf(num, sizeof num, "%.*g", prec, d);
                    if (strtod(num, NULL) == d) break;
                }
                if (!strpbrk(num, ".eE")) strcat(num, ".0");
            }
            txt = strdup(num);
        } else {
            txt = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        }
        jr_strbuf_add(b, txt ? txt : "null");
        free(txt);
        jr_strbuf_add(b, "\n");
    }
}

char *jr_config_dump(const jr_config *c) {
    jr_strbuf b = {0};
    dump_obj(&b, c->root, 0);
    return jr_strbuf_take(&b); /* NULL when out of memory */
}

const jr_cfg_field jr_run_cfg[] = {
    {"run.seed", JR_CFG_INT, "0", "seed of every random choice (same config + seed = same run)", NULL, NULL, 0, 0},
    {"run.out_dir", JR_CFG_STRING, "runs/default", "directory for checkpoints, metrics and reports", NULL, NULL, 0, 0},
    {"run.overwrite", JR_CFG_BOOL, "false",
     "train into a run.out_dir that already holds a run, removing its checkpoints, model and logs first "
     "(without it, or trainer.resume, a used run.out_dir is refused)", NULL, NULL, 0, 0},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};
