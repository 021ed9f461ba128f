/* json_regex.c - a JSON schema turned into a regex over its JSON texts, so the regex constraint
 * can decode structured outputs (the way vLLM's outlines backend does). A documented subset:
 *   type object (properties, in their order; required; or additionalProperties: SCHEMA alone),
 *   string (minLength, maxLength; a string with maxLength holds no escape sequences), integer,
 *   number, boolean, null, array (items, minItems, maxItems), enum / const of JSON literals, anyOf.
 * The text is compact JSON with an optional space after ':' and ','. A keyword outside the subset
 * is an error naming its path (never silently ignored: an ignored keyword would accept outputs
 * the schema forbids). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/constrain.h"
#include "judgerl/strbuf.h"

#define MAX_DEPTH 16

/* One JSON string character (escapes included); no control characters. */
static const char *const STR_CHAR = "(?:[^\"\\\\\\x00-\\x1f]|\\\\[\"\\\\/bfnrt]|\\\\u[0-9a-fA-F]{4})";

/* The regex for the literal text s (PCRE2 metacharacters escaped). */
static void add_literal(jr_strbuf *b, const char *s) {
    for (; *s; s++) {
        if (strchr("\\^$.|?*+()[]{}/", *s)) jr_strbuf_addc(b, '\\');
        jr_strbuf_addc(b, *s);
    }
}

/* The JSON text of a literal value (compact), escaped as a regex. */
static int add_json_literal(jr_strbuf *b, const json_t *v) {
    char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!t) return -1;
    add_literal(b, t);
    free(t);
    return 0;
}

static jr_status bad(const char *path, const char *what) {
    return jr_fail(JR_EINVAL, "json_schema%s: %s (judgerl serve decodes a subset: object, string, integer, number, "
                              "boolean, null, array, enum, const, anyOf)", path, what);
}

static jr_status schema_rx(jr_strbuf *b, const json_t *s, const char *path, int depth);

/* Keywords every schema may carry that do not constrain the text. */
static int annotation(const char *k) {
    static const char *const ok[] = {"title", "description", "$schema", "examples", "default", "$id", "$comment", "strict", "name"};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
        if (!strcmp(k, ok[i])) return 1;
    return 0;
}

/* Every keyword of s is an annotation or one of `allowed` (a NULL-terminated list). */
static jr_status only_keywords(const json_t *s, const char *path, const char *const *allowed) {
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)s, k, v) {
        int ok = annotation(k);
        for (int i = 0; !ok && allowed[i]; i++) ok = !strcmp(k, allowed[i]);
        if (!ok) {
            char what[160];
            snprintf(what, sizeof what, "keyword '%.60s' is not supported here", k);
            return bad(path, what);
        }
    }
    return JR_OK;
}

/* An integer keyword (>= 0) of s, or def when absent; -2 when present but not such an integer. */
static long count_kw(const json_t *s, const char *k, long def) {
    const json_t *v = json_object_get(s, k);
    if (!v) return def;
    return json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) < 100000 ? (long)json_integer_value(v) : -2;
}

static void add_repeat(jr_strbuf *b, long lo, long hi) {
    if (hi >= 0) jr_strbuf_addf(b, "{%ld,%ld}", lo, hi);
    else if (lo == 0) jr_strbuf_addc(b, '*');
    else if (lo == 1) jr_strbuf_addc(b, '+');
    else jr_strbuf_addf(b, "{%ld,}", lo);
}

static jr_status string_rx(jr_strbuf *b, const json_t *s, const char *path) {
    static const char *const kw[] = {"type", "minLength", "maxLength", NULL};
    jr_status st = only_keywords(s, path, kw);
    if (st) return st;
    long lo = count_kw(s, "minLength", 0), hi = count_kw(s, "maxLength", -1);
    if (lo == -2 || (hi == -2 && json_object_get(s, "maxLength")) || (hi >= 0 && hi < lo)) return bad(path, "minLength / maxLength must be integers, min <= max");
    /* bounded: plain characters only (no escape sequences), so the repeat is one character class (a
     * bounded repeat of the escape-aware group would compile to a copy per position, too large for
     * PCRE2 at a few hundred); still only strings the schema accepts */
    if (hi >= 0) jr_strbuf_add(b, "\"[^\"\\\\\\x00-\\x1f]");
    else jr_strbuf_addf(b, "\"%s", STR_CHAR);
    add_repeat(b, lo, hi);
    jr_strbuf_addc(b, '"');
    return JR_OK;
}

static jr_status array_rx(jr_strbuf *b, const json_t *s, const char *path, int depth) {
    static const char *const kw[] = {"type", "items", "minItems", "maxItems", NULL};
    jr_status st = only_keywords(s, path, kw);
    if (st) return st;
    const json_t *items = json_object_get(s, "items");
    if (!json_is_object(items)) return bad(path, "an array needs \"items\": a schema");
    long lo = count_kw(s, "minItems", 0), hi = count_kw(s, "maxItems", -1);
    if (lo == -2 || (hi == -2 && json_object_get(s, "maxItems")) || (hi >= 0 && hi < lo)) return bad(path, "minItems / maxItems must be integers, min <= max");
    char sub[256];
    snprintf(sub, sizeof sub, "%s.items", path);
    jr_strbuf item = {0};
    if ((st = schema_rx(&item, items, sub, depth + 1))) { jr_strbuf_free(&item); return st; }
    jr_strbuf_addc(b, '\\');
    jr_strbuf_addc(b, '[');
    if (hi != 0) {
        jr_strbuf_addf(b, "(?:%s(?:, ?%s)", item.p, item.p);
        add_repeat(b, lo > 0 ? lo - 1 : 0, hi > 0 ? hi - 1 : -1);
        jr_strbuf_addc(b, ')');
        if (lo == 0) jr_strbuf_addc(b, '?');
    }
    jr_strbuf_add(b, "\\]");
    jr_strbuf_free(&item);
    return JR_OK;
}

/* additionalProperties alone: any number of "key": value pairs. */
static jr_status map_rx(jr_strbuf *b, const json_t *ap, const char *path, int depth) {
    char sub[256];
    snprintf(sub, sizeof sub, "%s.additionalProperties", path);
    jr_strbuf val = {0};
    jr_status st = schema_rx(&val, ap, sub, depth + 1);
    if (st) { jr_strbuf_free(&val); return st; }
    jr_strbuf_addf(b, "\\{(?:\"%s*\": ?%s(?:, ?\"%s*\": ?%s)*)?\\}", STR_CHAR, val.p, STR_CHAR, val.p);
    jr_strbuf_free(&val);
    return JR_OK;
}

static int is_required(const json_t *req, const char *k) {
    size_t i;
    json_t *v;
    json_array_foreach(req, i, v) if (json_is_string(v) && !strcmp(json_string_value(v), k)) return 1;
    return 0;
}

/* properties in their order; a property not in "required" may be left out (then its comma too). */
static jr_status object_rx(jr_strbuf *b, const json_t *s, const char *path, int depth) {
    static const char *const kw[] = {"type", "properties", "required", "additionalProperties", NULL};
    jr_status st = only_keywords(s, path, kw);
    if (st) return st;
    const json_t *props = json_object_get(s, "properties"), *req = json_object_get(s, "required");
    const json_t *ap = json_object_get(s, "additionalProperties");
    if (req && !json_is_array(req)) return bad(path, "\"required\" must be a list of names");
    if (!props || !json_object_size(props)) {
        if (json_is_object(ap)) return map_rx(b, ap, path, depth);
        jr_strbuf_addf(b, "\\{\\}");
        return JR_OK;
    }
    if (!json_is_object(props)) return bad(path, "\"properties\" must be an object");
    if (ap && !json_is_false(ap)) return bad(path, "additionalProperties beside properties must be false");
    jr_strbuf_addf(b, "\\{");
    const char *k;
    json_t *v;
    int first = 1, any_required_before = 0;
    json_object_foreach((json_t *)props, k, v) {
        char sub[256];
        snprintf(sub, sizeof sub, "%s.properties.%.60s", path, k);
        jr_strbuf one = {0};
        if (!first) jr_strbuf_addf(&one, ", ?");
        json_t *key = json_string(k);
        int rc = key ? add_json_literal(&one, key) : -1;
        json_decref(key);
        if (rc) { jr_strbuf_free(&one); return JR_ENOMEM; }
        jr_strbuf_addf(&one, ": ?");
        if ((st = schema_rx(&one, v, sub, depth + 1))) { jr_strbuf_free(&one); return st; }
        int r = is_required(req, k);
        /* an optional first property cannot own the comma of the next: keep optional ones after a required one */
        if (!r && !any_required_before) { jr_strbuf_free(&one); return bad(sub, "an optional property must come after a required one"); }
        if (r) jr_strbuf_add(b, one.p);
        else jr_strbuf_addf(b, "(?:%s)?", one.p);
        any_required_before |= r;
        first = 0;
        jr_strbuf_free(&one);
    }
    jr_strbuf_addf(b, "\\}");
    return JR_OK;
}

static jr_status enum_rx(jr_strbuf *b, const json_t *list, const char *path) {
    if (!json_is_array(list) || !json_array_size(list)) return bad(path, "\"enum\" must be a non-empty list");
    jr_strbuf_addf(b, "(?:");
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v) {
        if (i) jr_strbuf_addc(b, '|');
        if (add_json_literal(b, v)) return JR_ENOMEM;
    }
    jr_strbuf_addc(b, ')');
    return JR_OK;
}

static jr_status schema_rx(jr_strbuf *b, const json_t *s, const char *path, int depth) {
    if (depth > MAX_DEPTH) return bad(path, "nested too deeply");
    if (!json_is_object(s)) return bad(path, "a schema must be an object");
    const json_t *e = json_object_get(s, "enum"), *c = json_object_get(s, "const"), *any = json_object_get(s, "anyOf");
    if (e || c) {
        static const char *const kw[] = {"type", "enum", "const", NULL};
        jr_status st = only_keywords(s, path, kw);
        if (st) return st;
        if (c) {
            json_t *one = json_pack("[O]", c);
            st = one ? enum_rx(b, one, path) : JR_ENOMEM;
            json_decref(one);
            return st;
        }
        return enum_rx(b, e, path);
    }
    if (any) {
        static const char *const kw[] = {"anyOf", NULL};
        jr_status st = only_keywords(s, path, kw);
        if (st) return st;
        if (!json_is_array(any) || !json_array_size(any)) return bad(path, "\"anyOf\" must be a non-empty list");
        jr_strbuf_addf(b, "(?:");
        size_t i;
        json_t *v;
        json_array_foreach(any, i, v) {
            char sub[256];
            snprintf(sub, sizeof sub, "%s.anyOf[%zu]", path, i);
            if (i) jr_strbuf_addc(b, '|');
            if ((st = schema_rx(b, v, sub, depth + 1))) return st;
        }
        jr_strbuf_addc(b, ')');
        return JR_OK;
    }
    const char *t = json_string_value(json_object_get(s, "type"));
    if (!t) return bad(path, "\"type\" is required (a string)");
    if (!strcmp(t, "object")) return object_rx(b, s, path, depth);
    if (!strcmp(t, "array")) return array_rx(b, s, path, depth);
    if (!strcmp(t, "string")) return string_rx(b, s, path);
    static const char *const kw[] = {"type", NULL};
    jr_status st = only_keywords(s, path, kw);
    if (st) return st;
    if (!strcmp(t, "integer")) jr_strbuf_addf(b, "-?(?:0|[1-9][0-9]{0,15})");
    else if (!strcmp(t, "number")) jr_strbuf_addf(b, "-?(?:0|[1-9][0-9]{0,15})(?:\\.[0-9]{1,16})?(?:[eE][+-]?[0-9]{1,3})?");
    else if (!strcmp(t, "boolean")) jr_strbuf_addf(b, "(?:true|false)");
    else if (!strcmp(t, "null")) jr_strbuf_addf(b, "null");
    else {
        char what[120];
        snprintf(what, sizeof what, "type '%.40s' is not supported", t);
        return bad(path, what);
    }
    return JR_OK;
}

jr_status jr_json_schema_regex(const json_t *schema, char **regex) {
    *regex = NULL;
    jr_strbuf b = {0};
    jr_status st = schema_rx(&b, schema, "", 0);
    if (st) { jr_strbuf_free(&b); return st; }
    *regex = jr_strbuf_take(&b);
    return *regex ? JR_OK : jr_fail(JR_ENOMEM, "json_schema: out of memory");
}
