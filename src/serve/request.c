/* request.c - parsing and checking of OpenAI completion requests (chat and text), fuzzed by fuzz/fuzz_serve_request.c */
#include "judgerl/serve.h"

#include "judgerl/constrain.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jr_serve_req_free(jr_serve_req *r) {
    for (int i = 0; r->contents && i < r->n_msgs; i++) free(r->contents[i]);
    free(r->contents);
    free(r->roles);
    free(r->prompt_ids);
    free(r->stop);
    free(r->choices);
    free(r->regex_owned);
    free(r->bias_ids);
    free(r->bias_vals);
    free(r->stop_ids);
    if (r->root) json_decref(r->root);
    memset(r, 0, sizeof *r);
}

static const char *type_name(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

/* Present and not null. */
static json_t *field(const jr_serve_req *r, const char *k) {
    json_t *v = json_object_get(r->root, k);
    return v && !json_is_null(v) ? v : NULL;
}

static jr_status get_number(const jr_serve_req *r, const char *k, double lo, double hi, float *out) {
    json_t *v = field(r, k);
    if (!v) return JR_OK;
    if (!json_is_number(v)) return jr_fail(JR_EINVAL, "%s: must be a number, got %s", k, type_name(v));
    double d = json_number_value(v);
    if (!(d >= lo && d <= hi)) return jr_fail(JR_EINVAL, "%s: must be between %g and %g, got %g", k, lo, hi, d);
    *out = (float)d;
    return JR_OK;
}

static jr_status get_int(const jr_serve_req *r, const char *k, long long lo, long long hi, int *out) {
    json_t *v = field(r, k);
    if (!v) return JR_OK;
    if (!json_is_integer(v)) return jr_fail(JR_EINVAL, "%s: must be an integer, got %s", k, type_name(v));
    long long x = json_integer_value(v);
    if (x < lo || x > hi) return jr_fail(JR_EINVAL, "%s: must be between %lld and %lld, got %lld", k, lo, hi, x);
    *out = (int)x;
    return JR_OK;
}

static jr_status get_bool(const jr_serve_req *r, const char *k, int *out) {
    json_t *v = field(r, k);
    if (!v) return JR_OK;
    if (!json_is_boolean(v)) return jr_fail(JR_EINVAL, "%s: must be a boolean, got %s", k, type_name(v));
    *out = json_is_true(v);
    return JR_OK;
}

/* A string or a list of non-empty strings (the value v, named k in messages) into a new array of
 * borrowed pointers. */
static jr_status strings_of(json_t *v, const char *k, int max, int allow_single, const char ***out, int *n) {
    if (!v || json_is_null(v)) return JR_OK;
    if (json_is_string(v) && allow_single) {
        if (!json_string_length(v)) return jr_fail(JR_EINVAL, "%s: must not be empty", k);
        if (!(*out = malloc(sizeof **out))) return jr_fail(JR_ENOMEM, "%s: out of memory", k);
        (*out)[0] = json_string_value(v);
        *n = 1;
        return JR_OK;
    }
    if (!json_is_array(v)) return jr_fail(JR_EINVAL, "%s: must be %sa list of strings, got %s", k, allow_single ? "a string or " : "", type_name(v));
    size_t m = json_array_size(v);
    if ((int)m > max || (!allow_single && m == 0))
        return jr_fail(JR_EINVAL, "%s: must hold 1 to %d strings, got %zu", k, max, m);
    if (m == 0) return JR_OK;
    if (!(*out = malloc(m * sizeof **out))) return jr_fail(JR_ENOMEM, "%s: out of memory", k);
    for (size_t i = 0; i < m; i++) {
        json_t *s = json_array_get(v, i);
        if (!json_is_string(s) || json_string_length(s) == 0 || strlen(json_string_value(s)) != json_string_length(s))
            return jr_fail(JR_EINVAL, "%s[%zu]: must be a non-empty string without NUL, got %s", k, i, type_name(s));
        (*out)[i] = json_string_value(s);
    }
    *n = (int)m;
    return JR_OK;
}

static jr_status get_strings(const jr_serve_req *r, const char *k, int max, int allow_single, const char ***out, int *n) {
    return strings_of(field(r, k), k, max, allow_single, out, n);
}

/* Message content: a string, null, or a list of {"type":"text","text":...} parts (joined). */
static jr_status content_text(json_t *c, int i, char **out) {
    if (!c || json_is_null(c)) { *out = strdup(""); return *out ? JR_OK : jr_fail(JR_ENOMEM, "out of memory"); }
    if (json_is_string(c)) {
        if (strlen(json_string_value(c)) != json_string_length(c)) return jr_fail(JR_EINVAL, "messages[%d].content: holds a NUL character", i);
        *out = strdup(json_string_value(c));
        return *out ? JR_OK : jr_fail(JR_ENOMEM, "out of memory");
    }
    if (!json_is_array(c)) return jr_fail(JR_EINVAL, "messages[%d].content: must be a string or a list of text parts, got %s", i, type_name(c));
    size_t total = 1;
    for (size_t k = 0; k < json_array_size(c); k++) {
        json_t *part = json_array_get(c, k);
        json_t *type = json_object_get(part, "type"), *text = json_object_get(part, "text");
        if (!json_is_object(part) || !json_is_string(type) || strcmp(json_string_value(type), "text") || !json_is_string(text) ||
            strlen(json_string_value(text)) != json_string_length(text))
            return jr_fail(JR_EINVAL, "messages[%d].content[%zu]: only {\"type\": \"text\", \"text\": \"...\"} parts are supported", i, k);
        total += json_string_length(text);
    }
    char *s = malloc(total);
    if (!s) return jr_fail(JR_ENOMEM, "out of memory");
    size_t at = 0;
    for (size_t k = 0; k < json_array_size(c); k++) {
        json_t *text = json_object_get(json_array_get(c, k), "text");
        memcpy(s + at, json_string_value(text), json_string_length(text));
        at += json_string_length(text);
    }
    s[at] = 0;
    *out = s;
    return JR_OK;
}

static jr_status parse_messages(jr_serve_req *r) {
    json_t *m = field(r, "messages");
    if (!m) return jr_fail(JR_EINVAL, "messages: required");
    if (!json_is_array(m) || json_array_size(m) == 0) return jr_fail(JR_EINVAL, "messages: must be a non-empty list");
    size_t n = json_array_size(m);
    if (n > 100000) return jr_fail(JR_EINVAL, "messages: too many (%zu)", n);
    r->roles = calloc(n, sizeof *r->roles);
    r->contents = calloc(n, sizeof *r->contents);
    if (!r->roles || !r->contents) return jr_fail(JR_ENOMEM, "messages: out of memory");
    for (size_t i = 0; i < n; i++) {
        json_t *msg = json_array_get(m, i);
        if (!json_is_object(msg)) return jr_fail(JR_EINVAL, "messages[%zu]: must be an object, got %s", i, type_name(msg));
        json_t *role = json_object_get(msg, "role");
        if (!json_is_string(role)) return jr_fail(JR_EINVAL, "messages[%zu].role: must be a string", i);
        const char *rs = json_string_value(role);
        if (strcmp(rs, "system") && strcmp(rs, "user") && strcmp(rs, "assistant") && strcmp(rs, "developer"))
            return jr_fail(JR_EINVAL, "messages[%zu].role: '%.40s' is not one of system, developer, user, assistant", i, rs);
        r->roles[i] = strcmp(rs, "developer") ? rs : "system";
        jr_status st = content_text(json_object_get(msg, "content"), (int)i, &r->contents[i]);
        r->n_msgs = (int)i + 1;
        if (st) return st;
    }
    return JR_OK;
}

static jr_status parse_prompt(jr_serve_req *r) {
    json_t *p = field(r, "prompt");
    if (!p) return jr_fail(JR_EINVAL, "prompt: required");
    if (json_is_array(p) && json_array_size(p) == 1 && json_is_string(json_array_get(p, 0))) p = json_array_get(p, 0);
    if (json_is_string(p)) {
        if (strlen(json_string_value(p)) != json_string_length(p)) return jr_fail(JR_EINVAL, "prompt: holds a NUL character");
        r->prompt = json_string_value(p);
        return JR_OK;
    }
    if (!json_is_array(p) || json_array_size(p) == 0)
        return jr_fail(JR_EINVAL, "prompt: must be a string, a list of one string or a non-empty list of token ids");
    size_t n = json_array_size(p);
    if (n > 1000000) return jr_fail(JR_EINVAL, "prompt: too many token ids (%zu)", n);
    if (!(r->prompt_ids = malloc(n * sizeof *r->prompt_ids))) return jr_fail(JR_ENOMEM, "prompt: out of memory");
    for (size_t i = 0; i < n; i++) {
        json_t *t = json_array_get(p, i);
        if (!json_is_integer(t) || json_integer_value(t) < 0 || json_integer_value(t) > INT32_MAX)
            return jr_fail(JR_EINVAL, "prompt[%zu]: must be a token id (a non-negative integer), got %s", i, type_name(t));
        r->prompt_ids[i] = (int32_t)json_integer_value(t);
    }
    r->n_prompt_ids = (int)n;
    return JR_OK;
}

static jr_status parse_bias(jr_serve_req *r) {
    json_t *b = field(r, "logit_bias");
    if (!b) return JR_OK;
    if (!json_is_object(b)) return jr_fail(JR_EINVAL, "logit_bias: must be an object of token id -> bias, got %s", type_name(b));
    size_t n = json_object_size(b);
    if (n > 1024) return jr_fail(JR_EINVAL, "logit_bias: at most 1024 entries, got %zu", n);
    if (n == 0) return JR_OK;
    r->bias_ids = malloc(n * sizeof *r->bias_ids);
    r->bias_vals = malloc(n * sizeof *r->bias_vals);
    if (!r->bias_ids || !r->bias_vals) return jr_fail(JR_ENOMEM, "logit_bias: out of memory");
    const char *key;
    json_t *v;
    json_object_foreach(b, key, v) {
        char *end;
        long id = strtol(key, &end, 10);
        if (!*key || *end || id < 0 || id > INT32_MAX) return jr_fail(JR_EINVAL, "logit_bias: key '%.40s' is not a token id", key);
        if (!json_is_number(v) || !(json_number_value(v) >= -100 && json_number_value(v) <= 100))
            return jr_fail(JR_EINVAL, "logit_bias[%.40s]: must be a number between -100 and 100", key);
        r->bias_ids[r->n_bias] = (int32_t)id;
        r->bias_vals[r->n_bias++] = (float)json_number_value(v);
    }
    return JR_OK;
}

/* Fields of the OpenAI API that judgerl does not implement: rejected unless at their neutral value. */
static jr_status unsupported(const jr_serve_req *r) {
    static const char *zero_num[] = {"presence_penalty", "frequency_penalty"};
    for (size_t i = 0; i < sizeof zero_num / sizeof *zero_num; i++) {
        json_t *v = field(r, zero_num[i]);
        if (v && (!json_is_number(v) || json_number_value(v) != 0))
            return jr_fail(JR_EINVAL, "%s: not supported (only 0)", zero_num[i]);
    }
    json_t *v = field(r, "repetition_penalty");
    if (v && (!json_is_number(v) || json_number_value(v) != 1)) return jr_fail(JR_EINVAL, "repetition_penalty: not supported (only 1)");
    v = field(r, "echo");
    if (v && !json_is_false(v)) return jr_fail(JR_EINVAL, "echo: not supported (only false)");
    v = field(r, "suffix");
    if (v) return jr_fail(JR_EINVAL, "suffix: not supported");
    v = field(r, "best_of");
    if (v && !(json_is_integer(v) && json_integer_value(v) == 1)) return jr_fail(JR_EINVAL, "best_of: not supported (only 1)");
    v = field(r, "tools");
    if (v && !(json_is_array(v) && json_array_size(v) == 0)) return jr_fail(JR_EINVAL, "tools: not supported");
    return JR_OK;
}

/* A choice list or a regex string, fields choice_key / regex_key of object o (where: their prefix
 * in messages). */
static jr_status constraint_fields(jr_serve_req *r, json_t *o, const char *choice_key, const char *regex_key,
                                   const char *where, const jr_serve_limits *lim) {
    char ck[64], rk[64];
    snprintf(ck, sizeof ck, "%s%s", where, choice_key);
    snprintf(rk, sizeof rk, "%s%s", where, regex_key);
    jr_status st = strings_of(json_object_get(o, choice_key), ck, lim->max_choices, 0, &r->choices, &r->n_choices);
    if (st) return st;
    json_t *v = json_object_get(o, regex_key);
    if (v && !json_is_null(v)) {
        if (!json_is_string(v) || !json_string_length(v) || strlen(json_string_value(v)) != json_string_length(v))
            return jr_fail(JR_EINVAL, "%s: must be a non-empty string, got %s", rk, type_name(v));
        r->regex = json_string_value(v);
    }
    if (r->regex && r->n_choices) return jr_fail(JR_EINVAL, "%s and %s: give only one", ck, rk);
    return JR_OK;
}

/* A JSON schema (field `where`) decoded through its regex (jr_json_schema_regex). */
static jr_status schema_field(jr_serve_req *r, const json_t *schema, const char *where) {
    if (r->regex || r->n_choices) return jr_fail(JR_EINVAL, "%s: give only one constraint (a choice, a regex or a JSON schema)", where);
    if (!json_is_object(schema)) return jr_fail(JR_EINVAL, "%s: must be a JSON schema (an object), got %s", where, type_name(schema));
    jr_status st = jr_json_schema_regex(schema, &r->regex_owned);
    if (st) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", jr_errmsg());
        return jr_fail(st, "%s: %s", where, msg);
    }
    r->regex = r->regex_owned;
    return JR_OK;
}

/* response_format: {"type": "text"} or {"type": "json_schema", "json_schema": {"schema": {...}}}. */
static jr_status parse_response_format(jr_serve_req *r) {
    json_t *v = field(r, "response_format");
    if (!v) return JR_OK;
    const char *t = json_string_value(json_object_get(v, "type"));
    if (json_is_object(v) && t && !strcmp(t, "text")) return JR_OK;
    json_t *js = json_object_get(v, "json_schema");
    if (json_is_object(v) && t && !strcmp(t, "json_schema") && json_is_object(js))
        return schema_field(r, json_object_get(js, "schema"), "response_format.json_schema.schema");
    return jr_fail(JR_EINVAL, "response_format: must be {\"type\": \"text\"} or {\"type\": \"json_schema\", \"json_schema\": "
                              "{\"schema\": {...}}} (json_object is not supported: give a schema)");
}

/* Constrained output, in either dialect: vLLM >= 0.10.2's structured_outputs {choice | regex | json}
 * or the older guided_choice / guided_regex / guided_json (not both dialects at once); or
 * response_format's json_schema. */
static jr_status parse_structured(jr_serve_req *r, const jr_serve_limits *lim) {
    json_t *so = field(r, "structured_outputs");
    json_t *gj = field(r, "guided_json");
    int old = field(r, "guided_choice") || field(r, "guided_regex") || gj;
    jr_status st;
    if (!so) {
        if ((st = constraint_fields(r, r->root, "guided_choice", "guided_regex", "", lim))) return st;
        if (gj && (st = schema_field(r, gj, "guided_json"))) return st;
        return parse_response_format(r);
    }
    if (old) return jr_fail(JR_EINVAL, "structured_outputs and guided_choice/guided_regex/guided_json: give only one");
    if (!json_is_object(so)) return jr_fail(JR_EINVAL, "structured_outputs: must be an object, got %s", type_name(so));
    const char *k;
    json_t *v;
    json_object_foreach(so, k, v) {
        if (json_is_null(v) || !strcmp(k, "choice") || !strcmp(k, "regex") || !strcmp(k, "json")) continue;
        return jr_fail(JR_EINVAL, "structured_outputs.%.40s: not supported by judgerl serve (only choice, regex and json)", k);
    }
    if ((st = constraint_fields(r, so, "choice", "regex", "structured_outputs.", lim))) return st;
    json_t *sj = json_object_get(so, "json");
    if (sj && !json_is_null(sj) && (st = schema_field(r, sj, "structured_outputs.json"))) return st;
    return parse_response_format(r);
}

static jr_status parse_body(jr_serve_req *r, const jr_serve_limits *lim) {
    jr_status st;
    json_t *v = field(r, "model");
    if (v && !json_is_string(v)) return jr_fail(JR_EINVAL, "model: must be a string, got %s", type_name(v));
    r->model = v ? json_string_value(v) : NULL;
    if ((st = r->chat ? parse_messages(r) : parse_prompt(r))) return st;
    if ((st = get_int(r, "n", 1, lim->max_n, &r->n))) return st;
    int mt = 0, mct = 0;
    if ((st = get_int(r, "max_tokens", 1, lim->max_tokens, &mt))) return st;
    if ((st = get_int(r, "max_completion_tokens", 1, lim->max_tokens, &mct))) return st;
    r->max_tokens = mct ? mct : mt;
    if ((st = get_number(r, "temperature", 0, 2, &r->temperature))) return st;
    if ((st = get_number(r, "top_p", 1e-9, 1, &r->top_p))) return st;
    if ((st = get_number(r, "min_p", 0, 1, &r->min_p))) return st;
    if ((st = get_int(r, "top_k", -1, 1 << 30, &r->top_k))) return st;
    if (r->top_k < 0) r->top_k = 0;
    v = field(r, "seed");
    if (v) {
        if (!json_is_integer(v)) return jr_fail(JR_EINVAL, "seed: must be an integer, got %s", type_name(v));
        r->has_seed = 1;
        r->seed = (uint64_t)json_integer_value(v);
    }
    if ((st = get_strings(r, "stop", lim->max_stop, 1, &r->stop, &r->n_stop))) return st;
    if ((st = get_bool(r, "stream", &r->stream))) return st;
    v = field(r, "stream_options");
    if (v) {
        json_t *u = json_object_get(v, "include_usage");
        if (!json_is_object(v) || (u && !json_is_boolean(u) && !json_is_null(u)))
            return jr_fail(JR_EINVAL, "stream_options: must be an object {\"include_usage\": bool}");
        if (!r->stream) return jr_fail(JR_EINVAL, "stream_options: only allowed when stream is true");
        r->include_usage = json_is_true(u);
    }
    v = field(r, "logprobs");
    if (r->chat) {
        if ((st = get_bool(r, "logprobs", &r->logprobs))) return st;
        if ((st = get_int(r, "top_logprobs", 0, 20, &r->top_logprobs))) return st;
        if (r->top_logprobs && !r->logprobs) return jr_fail(JR_EINVAL, "top_logprobs: requires logprobs to be true");
    } else if (v) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 20)
            return jr_fail(JR_EINVAL, "logprobs: must be an integer between 0 and 20, got %s", type_name(v));
        r->logprobs = 1;
        r->top_logprobs = (int)json_integer_value(v);
    }
    if ((st = parse_structured(r, lim))) return st;
    if ((st = get_bool(r, "ignore_eos", &r->ignore_eos))) return st;
    v = field(r, "stop_token_ids");
    if (v) {
        if (!json_is_array(v) || json_array_size(v) > 64) return jr_fail(JR_EINVAL, "stop_token_ids: must be a list of at most 64 token ids");
        size_t m = json_array_size(v);
        if (m && !(r->stop_ids = malloc(m * sizeof *r->stop_ids))) return jr_fail(JR_ENOMEM, "stop_token_ids: out of memory");
        for (size_t i = 0; i < m; i++) {
            json_t *t = json_array_get(v, i);
            if (!json_is_integer(t) || json_integer_value(t) < 0 || json_integer_value(t) > INT32_MAX)
                return jr_fail(JR_EINVAL, "stop_token_ids[%zu]: must be a token id (a non-negative integer)", i);
            r->stop_ids[r->n_stop_ids++] = (int32_t)json_integer_value(t);
        }
    }
    if ((st = parse_bias(r))) return st;
    return unsupported(r);
}

jr_status jr_serve_parse_request(jr_serve_req *r, int chat, const char *body, size_t len, const jr_serve_limits *lim) {
    memset(r, 0, sizeof *r);
    r->chat = chat;
    r->n = 1;
    r->temperature = 1;
    r->top_p = 1;
    json_error_t err;
    r->root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &err);
    if (!r->root) return jr_fail(JR_EINVAL, "invalid JSON body: %s (line %d, column %d)", err.text, err.line, err.column);
    if (!json_is_object(r->root)) {
        jr_serve_req_free(r);
        return jr_fail(JR_EINVAL, "the body must be a JSON object");
    }
    jr_status st = parse_body(r, lim);
    if (st) {
        jr_serve_req_free(r);
        r->chat = chat;
    }
    return st;
}
