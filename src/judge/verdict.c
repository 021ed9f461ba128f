/* verdict.c - helpers the protocols share: JSON found inside a judge's text, row text fields */
#include <stdlib.h>
#include <string.h>

#include "judgerl/protocols.h"

/* Parses s[0..n) as a JSON object (NULL when it is not one). */
static json_t *parse_obj(const char *s, size_t n) {
    json_t *v = json_loadb(s, n, 0, NULL);
    if (v && !json_is_object(v)) { json_decref(v); return NULL; }
    return v;
}

/* The end of the balanced {...} that opens at s[i] (string-aware), or 0 when unbalanced. */
static size_t object_end(const char *s, size_t i) {
    int depth = 0, in_str = 0;
    for (; s[i]; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\' && s[i + 1]) i++;
            else if (c == '"') in_str = 0;
            continue;
        }
        if (c == '"') in_str = 1;
        else if (c == '{') depth++;
        else if (c == '}' && --depth == 0) return i + 1;
    }
    return 0;
}

json_t *jr_verdict_json(const char *text) {
    if (!text) return NULL;
    size_t len = strlen(text);
    json_t *v = parse_obj(text, len);
    if (v) return v;
    /* A ```json (or ```) fenced block. */
    const char *f = strstr(text, "```");
    while (f) {
        const char *b = f + 3;
        if (!strncmp(b, "json", 4)) b += 4;
        const char *e = strstr(b, "```");
        if (!e) break;
        if ((v = parse_obj(b, (size_t)(e - b)))) return v;
        f = strstr(e + 3, "```");
    }
    /* The first balanced {...} that parses. */
    for (size_t i = 0; i < len; i++) {
        if (text[i] != '{') continue;
        size_t e = object_end(text, i);
        if (!e) continue;
        if ((v = parse_obj(text + i, e - i))) return v;
    }
    return NULL;
}

char *jr_row_text(const json_t *row, const char *const *names) {
    for (int k = 0; names[k]; k++) {
        const json_t *v = json_object_get(row, names[k]);
        if (json_is_string(v)) return jr_strdup(json_string_value(v));
        if (!json_is_array(v)) continue;
        size_t cap = 1, i;
        json_t *m;
        json_array_foreach(v, i, m) {
            const char *r = json_string_value(json_object_get(m, "role"));
            const char *c = json_string_value(json_object_get(m, "content"));
            cap += (r ? strlen(r) : 0) + (c ? strlen(c) : 0) + 3;
        }
        char *s = jr_malloc(cap);
        if (!s) return NULL;
        size_t off = 0;
        json_array_foreach(v, i, m) {
            const char *r = json_string_value(json_object_get(m, "role"));
            const char *c = json_string_value(json_object_get(m, "content"));
            if (i) s[off++] = '\n';
            size_t rl = r ? strlen(r) : 0, cl = c ? strlen(c) : 0;
            memcpy(s + off, r ? r : "", rl);
            off += rl;
            memcpy(s + off, ": ", 2);
            off += 2;
            memcpy(s + off, c ? c : "", cl);
            off += cl;
        }
        s[off] = 0;
        return s;
    }
    return NULL;
}
