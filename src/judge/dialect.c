/* dialect.c - judge server kinds (detected from /v1/models, /version, /props, /api/version) and
 * judge.constraint in each kind's request fields: vLLM structured_outputs (guided_* before
 * 0.10.2), llama.cpp grammar (GBNF) / json_schema, SGLang regex / response_format, ollama and
 * OpenAI response_format json_schema, judgerl serve structured_outputs */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "judge/dialect.h"

#include <ctype.h>
#include <curl/curl.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "judge/redact.h"
#include "judgerl/fsutil.h"
#include "judgerl/strbuf.h"

static const char *const kind_names[] = {"auto", "vllm", "llamacpp", "sglang", "ollama", "openai", "judgerl", "unknown"};

const char *jr_server_kind_name(jr_server_kind k) {
    return (unsigned)k < sizeof kind_names / sizeof *kind_names ? kind_names[k] : "unknown";
}

int jr_server_kind_parse(const char *s) {
    for (int i = 0; s && i < JR_KIND_UNKNOWN; i++)
        if (!strcmp(s, kind_names[i])) return i;
    return -1;
}

/* ---- detection ------------------------------------------------------------------------------ */

static size_t on_get(char *data, size_t size, size_t n, void *ud) {
    jr_strbuf *b = ud;
    if (b->n + size * n > (1u << 20)) return 0; /* a probe answer is small */
    jr_strbuf_addn(b, data, size * n);
    return size * n;
}

/* GET url; the JSON body of a 200 answer with the API key redacted from its strings (before any is
 * cut to fit a buffer), or NULL (with the status or curl's error in note). */
static json_t *get_json(const char *url, const void *headers, const char *secret, long timeout_ms, char *note,
                        size_t note_len) {
    CURL *e = curl_easy_init();
    if (!e) { snprintf(note, note_len, "no curl handle"); return NULL; }
    jr_strbuf b = {0};
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    if (headers) curl_easy_setopt(e, CURLOPT_HTTPHEADER, (const struct curl_slist *)headers);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_get);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    CURLcode rc = curl_easy_perform(e);
    long status = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(e);
    char *body = jr_strbuf_take(&b);
    json_t *j = NULL;
    if (rc != CURLE_OK) snprintf(note, note_len, "%s", curl_easy_strerror(rc));
    else if (status != 200) snprintf(note, note_len, "HTTP %ld", status);
    else if (!(j = body ? json_loads(body, 0, NULL) : NULL) || !json_is_object(j)) {
        snprintf(note, note_len, "not a JSON object");
        json_decref(j);
        j = NULL;
    }
    jr_redact_json(j, secret);
    free(body);
    return j;
}

static void parse_version(jr_server_info *o, const char *v) {
    snprintf(o->version, sizeof o->version, "%s", v);
    sscanf(v, "%d.%d.%d", &o->ver[0], &o->ver[1], &o->ver[2]);
}

static void note_add(jr_server_info *o, const char *f, const char *a, const char *b) {
    size_t l = strlen(o->how);
    snprintf(o->how + l, sizeof o->how - l, f, a, b);
}

void jr_server_detect(const char *api_base, const void *headers, const char *secret, long timeout_ms,
                      jr_server_info *o) {
    memset(o, 0, sizeof *o);
    o->kind = JR_KIND_UNKNOWN;
    size_t bl = strlen(api_base);
    while (bl && api_base[bl - 1] == '/') bl--;
    size_t rl = bl >= 3 && !strncmp(api_base + bl - 3, "/v1", 3) ? bl - 3 : bl;
    char url[1024], note[128] = "";
    snprintf(url, sizeof url, "%.*s/models", (int)bl, api_base);
    json_t *m = NULL;
    /* a transport failure is asked again twice (a server at its per-client connection limit
     * while another client's connections close answers a moment later) */
    for (int attempt = 0; attempt < 3; attempt++) {
        if (attempt) usleep(attempt == 1 ? 200000 : 600000);
        m = get_json(url, headers, secret, timeout_ms, note, sizeof note);
        if (m || !strncmp(note, "HTTP", 4) || !strcmp(note, "not a JSON object")) break;
    }
    if (!m && strncmp(note, "HTTP", 4) && strcmp(note, "not a JSON object")) {
        /* nothing answers there (refused, timed out): asking its other paths would only wait longer */
        note_add(o, "GET /v1/models: %s%s", note, "");
        return;
    }
    const char *owner = json_string_value(json_object_get(json_array_get(json_object_get(m, "data"), 0), "owned_by"));
    static const struct { const char *owner; jr_server_kind kind; } owners[] = {
        {"vllm", JR_KIND_VLLM}, {"llamacpp", JR_KIND_LLAMACPP}, {"sglang", JR_KIND_SGLANG}, {"judgerl", JR_KIND_JUDGERL},
        {"library", JR_KIND_OLLAMA}, {"ollama", JR_KIND_OLLAMA}, {"openai", JR_KIND_OPENAI}, {"system", JR_KIND_OPENAI},
        {"openai-internal", JR_KIND_OPENAI},
    };
    for (size_t i = 0; owner && i < sizeof owners / sizeof *owners; i++)
        if (!strcmp(owner, owners[i].owner)) o->kind = owners[i].kind;
    if (owner) note_add(o, "GET /v1/models: owned_by %s%s", owner, "");
    else note_add(o, "GET /v1/models: %s%s", m ? "no owned_by" : note, "");
    json_decref(m);
    /* the kind's own endpoints: llama.cpp's /props, vLLM's /version, ollama's /api/version */
    if (o->kind == JR_KIND_UNKNOWN || o->kind == JR_KIND_LLAMACPP) {
        snprintf(url, sizeof url, "%.*s/props", (int)rl, api_base);
        json_t *p = get_json(url, headers, secret, timeout_ms, note, sizeof note);
        if (p && (json_object_get(p, "total_slots") || json_object_get(p, "default_generation_settings"))) {
            o->kind = JR_KIND_LLAMACPP;
            o->slots = (int)json_integer_value(json_object_get(p, "total_slots"));
            const char *bi = json_string_value(json_object_get(p, "build_info"));
            snprintf(o->version, sizeof o->version, "%s", bi ? bi : "");
            char sl[32];
            snprintf(sl, sizeof sl, "%d", o->slots);
            note_add(o, "; GET /props: total_slots %s, build_info %s", sl, bi ? bi : "?");
        }
        json_decref(p);
    }
    if (o->kind == JR_KIND_UNKNOWN || o->kind == JR_KIND_VLLM) {
        snprintf(url, sizeof url, "%.*s/version", (int)rl, api_base);
        json_t *v = get_json(url, headers, secret, timeout_ms, note, sizeof note);
        const char *ver = json_string_value(json_object_get(v, "version"));
        if (ver) {
            o->kind = JR_KIND_VLLM;
            parse_version(o, ver);
            note_add(o, "; GET /version: %s%s", ver, "");
        } else if (o->kind == JR_KIND_VLLM) note_add(o, "; GET /version: %s%s", note, "");
        json_decref(v);
    }
    if (o->kind == JR_KIND_UNKNOWN || o->kind == JR_KIND_OLLAMA) {
        snprintf(url, sizeof url, "%.*s/api/version", (int)rl, api_base);
        json_t *v = get_json(url, headers, secret, timeout_ms, note, sizeof note);
        const char *ver = json_string_value(json_object_get(v, "version"));
        if (ver) {
            o->kind = JR_KIND_OLLAMA;
            snprintf(o->version, sizeof o->version, "%s", ver);
            note_add(o, "; GET /api/version: %s%s", ver, "");
        }
        json_decref(v);
    }
}

/* ---- the constraint --------------------------------------------------------------------------- */

void jr_judge_constraint_free(jr_judge_constraint *c) {
    json_decref(c->choices);
    json_decref(c->schema);
    free(c->regex);
    if (c->re) pcre2_code_free(c->re);
    memset(c, 0, sizeof *c);
}

jr_status jr_judge_constraint_parse(const json_t *v, const char *where, jr_judge_constraint *c) {
    memset(c, 0, sizeof *c);
    if (!v || json_is_null(v)) return JR_OK;
    if (!json_is_object(v) || json_object_size(v) != 1)
        return jr_fail(JR_EINVAL, "%s: expected one of {choice: [...]}, {regex: \"...\"}, {json_schema: {...}}", where);
    json_t *ch = json_object_get(v, "choice"), *re = json_object_get(v, "regex"), *js = json_object_get(v, "json_schema");
    if (ch) {
        if (!json_is_array(ch) || json_array_size(ch) < 1)
            return jr_fail(JR_EINVAL, "%s.choice: expected a non-empty list of strings", where);
        for (size_t i = 0; i < json_array_size(ch); i++) {
            json_t *s = json_array_get(ch, i);
            if (!json_is_string(s) || !json_string_length(s) || strlen(json_string_value(s)) != json_string_length(s))
                return jr_fail(JR_EINVAL, "%s.choice[%zu]: expected a non-empty string", where, i);
        }
        c->type = JR_CONSTRAINT_CHOICE;
        c->choices = json_deep_copy(ch);
        return c->choices ? JR_OK : JR_ENOMEM;
    }
    if (re) {
        if (!json_is_string(re) || !json_string_length(re)) return jr_fail(JR_EINVAL, "%s.regex: expected a non-empty string", where);
        char *wrapped = NULL;
        if (asprintf(&wrapped, "(?:%s)\\z", json_string_value(re)) < 0) return JR_ENOMEM;
        int err;
        PCRE2_SIZE off;
        c->re = pcre2_compile((PCRE2_SPTR)wrapped, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_ANCHORED, &err, &off, NULL);
        free(wrapped);
        if (!c->re) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(err, msg, sizeof msg);
            return jr_fail(JR_EINVAL, "%s.regex: %s at offset %d", where, (const char *)msg, (int)off - 3);
        }
        c->type = JR_CONSTRAINT_REGEX;
        c->regex = jr_strdup(json_string_value(re));
        if (!c->regex) { jr_judge_constraint_free(c); return JR_ENOMEM; }
        return JR_OK;
    }
    if (js) {
        if (!json_is_object(js)) return jr_fail(JR_EINVAL, "%s.json_schema: expected a JSON schema (a mapping)", where);
        c->type = JR_CONSTRAINT_JSON;
        c->schema = json_deep_copy(js);
        return c->schema ? JR_OK : JR_ENOMEM;
    }
    return jr_fail(JR_EINVAL, "%s: unknown member (expected choice, regex or json_schema)", where);
}

int jr_judge_constraint_check(const jr_judge_constraint *c, const char *text, char *why, size_t why_len) {
    if (c->type == JR_CONSTRAINT_NONE) return 1;
    const char *s = text ? text : "";
    while (isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1])) n--;
    if (c->type == JR_CONSTRAINT_CHOICE) {
        size_t i;
        json_t *v;
        json_array_foreach(c->choices, i, v)
            if (json_string_length(v) == n && !memcmp(json_string_value(v), s, n)) return 1;
        snprintf(why, why_len, "not one of the choices");
        return 0;
    }
    if (c->type == JR_CONSTRAINT_REGEX) {
        pcre2_match_data *md = pcre2_match_data_create_from_pattern(c->re, NULL);
        int rc = md ? pcre2_match(c->re, (PCRE2_SPTR)s, n, 0, 0, md, NULL) : -1;
        pcre2_match_data_free(md);
        if (rc >= 0) return 1;
        snprintf(why, why_len, "does not match the regex");
        return 0;
    }
    json_error_t err;
    json_t *j = json_loadb(s, n, JSON_DECODE_ANY, &err);
    json_decref(j);
    if (j) return 1;
    snprintf(why, why_len, "not JSON: %s", err.text);
    return 0;
}

/* ---- GBNF (llama.cpp grammars) ---------------------------------------------------------------- */

/* One character (a byte; UTF-8 continuation bytes are copied as they are) of a "..." literal or,
 * in_class, of a [...] class: anything but letters, digits and non-ASCII as \xHH. */
static void gb_char(jr_strbuf *b, unsigned char c, int in_class) {
    char hex[8];
    int plain = in_class ? (isalnum(c) || c >= 0x80) : (c >= 0x20 && c != 0x7f && c != '"' && c != '\\');
    if (plain) { jr_strbuf_addc(b, (char)c); return; }
    snprintf(hex, sizeof hex, "\\x%02X", c);
    jr_strbuf_add(b, hex);
}

static void gb_literal(jr_strbuf *b, const char *s, size_t n) {
    jr_strbuf_addc(b, '"');
    for (size_t i = 0; i < n; i++) gb_char(b, (unsigned char)s[i], 0);
    jr_strbuf_addc(b, '"');
}

char *jr_gbnf_from_choices(const json_t *choices) {
    jr_strbuf b = {0};
    jr_strbuf_add(&b, "root ::= ");
    size_t i;
    json_t *v;
    json_array_foreach(choices, i, v) {
        if (i) jr_strbuf_add(&b, " | ");
        gb_literal(&b, json_string_value(v), json_string_length(v));
    }
    return jr_strbuf_take(&b);
}

typedef struct rx {
    const char *s;
    size_t i, n;
    char *err;
    size_t err_len;
    int failed;
    int depth; /* groups open: bounded, so no input can exhaust the stack */
} rx;

static int rx_fail(rx *p, const char *what) {
    if (!p->failed) snprintf(p->err, p->err_len, "%s at offset %zu", what, p->i);
    p->failed = 1;
    return -1;
}

static const char *class_of(char e) {
    switch (e) {
    case 'd': case 'D': return "0-9";
    case 'w': case 'W': return "0-9A-Za-z_";
    case 's': case 'S': return " \\x09\\x0A\\x0B\\x0C\\x0D";
    default: return NULL;
    }
}

/* A one-character escape (\n, \t, \., \xHH ...) as a byte, or -1. */
static int rx_escape_char(rx *p) {
    char e = p->s[p->i];
    switch (e) {
    case 'n': p->i++; return '\n';
    case 't': p->i++; return '\t';
    case 'r': p->i++; return '\r';
    case 'f': p->i++; return '\f';
    case 'v': p->i++; return '\v';
    case 'x': {
        unsigned v = 0;
        int k = 0;
        p->i++;
        while (k < 2 && isxdigit((unsigned char)p->s[p->i])) {
            v = v * 16 + (unsigned)(isdigit((unsigned char)p->s[p->i]) ? p->s[p->i] - '0' : (tolower((unsigned char)p->s[p->i]) - 'a' + 10));
            p->i++;
            k++;
        }
        if (k != 2 || v > 0x7f) return rx_fail(p, "\\x escape other than \\xHH below 0x80");
        return (int)v;
    }
    default:
        if (e && !isalnum((unsigned char)e) && (unsigned char)e < 0x80) { p->i++; return e; }
        return rx_fail(p, "unsupported escape");
    }
}

static int rx_class(rx *p, jr_strbuf *b) {
    p->i++; /* [ */
    jr_strbuf_addc(b, '[');
    if (p->s[p->i] == '^') { jr_strbuf_addc(b, '^'); p->i++; }
    int items = 0;
    while (p->i < p->n && (p->s[p->i] != ']' || items == 0)) {
        if (p->s[p->i] == '[' && p->s[p->i + 1] == ':') return rx_fail(p, "POSIX class");
        int c;
        if (p->s[p->i] == '\\') {
            p->i++;
            const char *cl = class_of(p->s[p->i]);
            if (cl && islower((unsigned char)p->s[p->i])) { jr_strbuf_add(b, cl); p->i++; items++; continue; }
            if (cl) return rx_fail(p, "negated class escape inside a class");
            if ((c = rx_escape_char(p)) < 0) return -1;
        } else {
            c = (unsigned char)p->s[p->i++];
        }
        gb_char(b, (unsigned char)c, 1);
        while ((unsigned char)c >= 0xC0 && ((unsigned char)p->s[p->i] & 0xC0) == 0x80) jr_strbuf_addc(b, p->s[p->i++]);
        items++;
        if (p->s[p->i] == '-' && p->s[p->i + 1] != ']' && p->i + 1 < p->n) {
            p->i++;
            int d;
            if (p->s[p->i] == '\\') {
                p->i++;
                if ((d = rx_escape_char(p)) < 0) return -1;
            } else d = (unsigned char)p->s[p->i++];
            jr_strbuf_addc(b, '-');
            gb_char(b, (unsigned char)d, 1);
            while ((unsigned char)d >= 0xC0 && ((unsigned char)p->s[p->i] & 0xC0) == 0x80) jr_strbuf_addc(b, p->s[p->i++]);
        }
    }
    if (p->i >= p->n) return rx_fail(p, "unclosed [");
    p->i++; /* ] */
    jr_strbuf_addc(b, ']');
    return 0;
}

static int rx_alt(rx *p, jr_strbuf *b);

static int rx_atom(rx *p, jr_strbuf *b) {
    char c = p->s[p->i];
    if (c == '(') {
        if (++p->depth > 64) return rx_fail(p, "groups nested deeper than 64");
        p->i++;
        if (p->s[p->i] == '?') {
            if (p->s[p->i + 1] != ':') return rx_fail(p, "(? construct (look-around, flags, named group)");
            p->i += 2;
        }
        jr_strbuf_addc(b, '(');
        if (rx_alt(p, b)) return -1;
        if (p->s[p->i] != ')') return rx_fail(p, "unclosed (");
        p->i++;
        p->depth--;
        jr_strbuf_addc(b, ')');
        return 0;
    }
    if (c == '[') return rx_class(p, b);
    if (c == '.') { p->i++; jr_strbuf_add(b, "[^\\x0A]"); return 0; }
    if (c == '*' || c == '+' || c == '?' || c == '{') return rx_fail(p, "nothing to repeat");
    if (c == '^' || c == '$') return rx_fail(p, "anchor inside the pattern");
    if (c == '\\') {
        p->i++;
        const char *cl = class_of(p->s[p->i]);
        if (cl) {
            jr_strbuf_add(b, islower((unsigned char)p->s[p->i]) ? "[" : "[^");
            jr_strbuf_add(b, cl);
            jr_strbuf_addc(b, ']');
            p->i++;
            return 0;
        }
        int e = rx_escape_char(p);
        if (e < 0) return -1;
        char ch = (char)e;
        gb_literal(b, &ch, 1);
        return 0;
    }
    size_t start = p->i++;
    if ((unsigned char)c >= 0xC0)
        while (((unsigned char)p->s[p->i] & 0xC0) == 0x80) p->i++;
    gb_literal(b, p->s + start, p->i - start);
    return 0;
}

static int rx_quant(rx *p, jr_strbuf *b) {
    char c = p->s[p->i];
    if (c == '*' || c == '+' || c == '?') {
        jr_strbuf_addc(b, c);
        p->i++;
    } else if (c == '{') {
        size_t j = p->i + 1;
        char buf[32];
        size_t k = 0;
        while (j < p->n && (isdigit((unsigned char)p->s[j]) || p->s[j] == ',') && k < sizeof buf - 1) buf[k++] = p->s[j++];
        buf[k] = 0;
        if (j >= p->n || p->s[j] != '}' || !k || !isdigit((unsigned char)buf[0])) return rx_fail(p, "{ that is not a {m,n} quantifier");
        jr_strbuf_addc(b, '{');
        jr_strbuf_add(b, buf);
        jr_strbuf_addc(b, '}');
        p->i = j + 1;
    } else return 0;
    if (p->s[p->i] == '?') p->i++; /* lazy: the same set of full matches */
    else if (p->s[p->i] == '+') return rx_fail(p, "possessive quantifier");
    if (strchr("*+?{", p->s[p->i]) && p->s[p->i]) return rx_fail(p, "nothing to repeat");
    return 0;
}

static int rx_seq(rx *p, jr_strbuf *b) {
    int any = 0;
    while (p->i < p->n && p->s[p->i] != '|' && p->s[p->i] != ')') {
        if (p->s[p->i] == '$' && p->i + 1 == p->n) { p->i++; break; } /* $ at the end: full matches anyway */
        if (any) jr_strbuf_addc(b, ' ');
        if (rx_atom(p, b) || rx_quant(p, b)) return -1;
        any = 1;
    }
    if (!any) jr_strbuf_add(b, "\"\"");
    return 0;
}

static int rx_alt(rx *p, jr_strbuf *b) {
    if (rx_seq(p, b)) return -1;
    while (p->s[p->i] == '|') {
        p->i++;
        jr_strbuf_add(b, " | ");
        if (rx_seq(p, b)) return -1;
    }
    return 0;
}

char *jr_gbnf_from_regex(const char *re, char *err, size_t err_len) {
    rx p = {re, 0, strlen(re), err, err_len, 0, 0};
    if (p.n && re[0] == '^') p.i = 1;
    jr_strbuf b = {0};
    jr_strbuf_add(&b, "root ::= ");
    if (rx_alt(&p, &b) == 0 && p.i < p.n) rx_fail(&p, "unbalanced )");
    if (p.failed) {
        jr_strbuf_free(&b);
        return NULL;
    }
    char *g = jr_strbuf_take(&b);
    if (!g) snprintf(err, err_len, "out of memory");
    return g;
}

/* ---- per-kind request fields ------------------------------------------------------------------ */

/* {"type": "json_schema", "json_schema": {"name", "schema", "strict"}}: OpenAI's structured outputs. */
static json_t *response_format(json_t *schema /* stolen */, int strict) {
    json_t *js = json_pack("{s:s,s:o}", "name", "judgerl_constraint", "schema", schema);
    if (js && strict) json_object_set_new(js, "strict", json_true());
    return json_pack("{s:s,s:o*}", "type", "json_schema", "json_schema", js);
}

/* The choices as a JSON answer {"answer": "<choice>"} (a JSON schema's root must be an object). */
static json_t *choice_schema(const json_t *choices) {
    return json_pack("{s:s,s:{s:{s:s,s:O}},s:[s],s:b}", "type", "object", "properties", "answer", "type", "string", "enum",
                     choices, "required", "answer", "additionalProperties", 0);
}

/* The choices as one regex: (?:A|B|C) with each choice's metacharacters escaped. */
static char *choice_regex(const json_t *choices) {
    jr_strbuf b = {0};
    jr_strbuf_add(&b, "(?:");
    size_t i;
    json_t *v;
    json_array_foreach(choices, i, v) {
        if (i) jr_strbuf_addc(&b, '|');
        for (const char *s = json_string_value(v); *s; s++) {
            if (strchr("\\^$.|?*+()[]{}/", *s)) jr_strbuf_addc(&b, '\\');
            jr_strbuf_addc(&b, *s);
        }
    }
    jr_strbuf_addc(&b, ')');
    return jr_strbuf_take(&b);
}

static const char *const type_names[] = {"none", "choice", "regex", "json_schema"};

jr_status jr_judge_constraint_fields(const jr_judge_constraint *c, const jr_server_info *s, json_t **fields, int *wrapped) {
    *fields = NULL;
    *wrapped = 0;
    if (c->type == JR_CONSTRAINT_NONE) return JR_OK;
    const char *kind = jr_server_kind_name(s->kind), *what = type_names[c->type];
    json_t *f = NULL;
    switch (s->kind) {
    case JR_KIND_VLLM: {
        /* structured_outputs since v0.10.2 (the only form since v0.12); guided_* before */
        int legacy = s->ver[0] == 0 && (s->ver[1] > 0 || s->ver[2] > 0) && (s->ver[1] < 10 || (s->ver[1] == 10 && s->ver[2] < 2));
        const char *key = c->type == JR_CONSTRAINT_CHOICE ? "choice" : c->type == JR_CONSTRAINT_REGEX ? "regex" : "json";
        json_t *val = c->type == JR_CONSTRAINT_CHOICE ? json_deep_copy(c->choices)
                      : c->type == JR_CONSTRAINT_REGEX ? json_string(c->regex) : json_deep_copy(c->schema);
        char legacy_key[32];
        snprintf(legacy_key, sizeof legacy_key, "guided_%s", key);
        f = legacy ? json_pack("{s:o}", legacy_key, val) : json_pack("{s:{s:o}}", "structured_outputs", key, val);
        break;
    }
    case JR_KIND_JUDGERL:
        f = c->type == JR_CONSTRAINT_CHOICE ? json_pack("{s:{s:O}}", "structured_outputs", "choice", c->choices)
            : c->type == JR_CONSTRAINT_REGEX ? json_pack("{s:{s:s}}", "structured_outputs", "regex", c->regex)
                                             : json_pack("{s:{s:O}}", "structured_outputs", "json", c->schema);
        break;
    case JR_KIND_LLAMACPP: {
        if (c->type == JR_CONSTRAINT_JSON) { f = json_pack("{s:O}", "json_schema", c->schema); break; }
        char err[200] = "";
        char *g = c->type == JR_CONSTRAINT_CHOICE ? jr_gbnf_from_choices(c->choices) : jr_gbnf_from_regex(c->regex, err, sizeof err);
        if (!g && err[0])
            return jr_fail(JR_EINVAL, "judge.constraint.regex cannot be written as a llama.cpp grammar (%s): use a choice, "
                                      "a json_schema or a simpler regex", err);
        f = g ? json_pack("{s:s}", "grammar", g) : NULL;
        free(g);
        break;
    }
    case JR_KIND_SGLANG: {
        if (c->type == JR_CONSTRAINT_JSON) { f = json_pack("{s:o}", "response_format", response_format(json_deep_copy(c->schema), 0)); break; }
        char *re = c->type == JR_CONSTRAINT_CHOICE ? choice_regex(c->choices) : jr_strdup(c->regex);
        f = re ? json_pack("{s:s}", "regex", re) : NULL;
        free(re);
        break;
    }
    case JR_KIND_OLLAMA:
    case JR_KIND_OPENAI:
        /* JSON schemas only: a choice becomes {"answer": enum} and is unwrapped by the caller */
        if (c->type == JR_CONSTRAINT_REGEX) goto unsupported;
        *wrapped = c->type == JR_CONSTRAINT_CHOICE;
        f = json_pack("{s:o}", "response_format",
                      response_format(*wrapped ? choice_schema(c->choices) : json_deep_copy(c->schema), s->kind == JR_KIND_OPENAI));
        break;
    default:
        return jr_fail(JR_EINVAL, "judge.constraint: the server kind is %s, so judgerl cannot tell which request fields "
                                  "constrain its answers: set judge.endpoints[].kind (vllm|llamacpp|sglang|ollama|openai|judgerl)", kind);
    }
    if (!f) return JR_ENOMEM;
    *fields = f;
    return JR_OK;
unsupported:
    return jr_fail(JR_EINVAL, "judge.constraint.%s: a %s server cannot take it (its structured outputs take a JSON "
                              "schema: use choice or json_schema)", what, kind);
}
