/* bpe_json.c - the fast path for a tokenizer.json's model.vocab and model.merges: a validating
 * scanner parses them straight into flat lists (bpe_internal.h), jansson parses the rest */
#include <stdlib.h>
#include <string.h>

#include "judgerl/utf8.h"
#include "tokenizer/bpe_internal.h"

void tok_lists_free(tok_lists *L) {
    free(L->v);
    free(L->m);
    free(L->strs.p);
    memset(L, 0, sizeof *L);
}

typedef struct { const char *s; size_t n, i; int depth; } jscan;

static void js_ws(jscan *j) {
    while (j->i < j->n && (j->s[j->i] == ' ' || j->s[j->i] == '\n' || j->s[j->i] == '\r' || j->s[j->i] == '\t')) j->i++;
}

static int hexv(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Scans a string at j->i (a '"'); appends its decoded bytes to out when not NULL. 0 ok, -1 bad. */
static int js_string(jscan *j, jr_strbuf *out) {
    if (j->i >= j->n || j->s[j->i] != '"') return -1;
    size_t i = ++j->i, run = i;
    const char *s = j->s;
    for (;;) {
        if (i >= j->n) return -1;
        unsigned char c = (unsigned char)s[i];
        if (c == '"') break;
        if (c < 0x20) return -1;
        if (c != '\\') { i++; continue; }
        if (out && i > run && tok_buf_add(out, s + run, i - run)) return -1;
        if (i + 1 >= j->n) return -1;
        char e = s[i + 1];
        char ch = 0;
        switch (e) {
        case '"': ch = '"'; break;
        case '\\': ch = '\\'; break;
        case '/': ch = '/'; break;
        case 'b': ch = '\b'; break;
        case 'f': ch = '\f'; break;
        case 'n': ch = '\n'; break;
        case 'r': ch = '\r'; break;
        case 't': ch = '\t'; break;
        case 'u': {
            if (i + 6 > j->n) return -1;
            int32_t cp = 0;
            for (int k = 2; k < 6; k++) { int h = hexv(s[i + k]); if (h < 0) return -1; cp = cp * 16 + h; }
            i += 6;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (i + 6 > j->n || s[i] != '\\' || s[i + 1] != 'u') return -1;
                int32_t lo = 0;
                for (int k = 2; k < 6; k++) { int h = hexv(s[i + k]); if (h < 0) return -1; lo = lo * 16 + h; }
                if (lo < 0xDC00 || lo > 0xDFFF) return -1;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                i += 6;
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) return -1;
            if (cp == 0) return -1; /* NUL inside a token: leave it to jansson */
            char u[4];
            size_t ul = jr_utf8_encode((uint32_t)cp, u);
            if (out && tok_buf_add(out, u, ul)) return -1;
            run = i;
            continue;
        }
        default: return -1;
        }
        if (out && tok_buf_add(out, &ch, 1)) return -1;
        i += 2;
        run = i;
    }
    if (out && i > run && tok_buf_add(out, s + run, i - run)) return -1;
    if (jr_utf8_invalid_at(s + j->i, i - j->i, 0) != i - j->i) return -1;
    j->i = i + 1;
    return 0;
}

static int js_value(jscan *j);

static int js_number(jscan *j, int64_t *iv, int *is_int) {
    size_t i = j->i, n = j->n;
    const char *s = j->s;
    int neg = 0, isint = 1;
    int64_t v = 0;
    if (i < n && s[i] == '-') { neg = 1; i++; }
    if (i >= n || s[i] < '0' || s[i] > '9') return -1;
    if (s[i] == '0') i++;
    else while (i < n && s[i] >= '0' && s[i] <= '9') { if (v < 100000000000000LL) v = v * 10 + (s[i] - '0'); else isint = 0; i++; }
    if (i < n && s[i] == '.') {
        isint = 0; i++;
        if (i >= n || s[i] < '0' || s[i] > '9') return -1;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        isint = 0; i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        if (i >= n || s[i] < '0' || s[i] > '9') return -1;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    }
    j->i = i;
    if (iv) *iv = neg ? -v : v;
    if (is_int) *is_int = isint;
    return 0;
}

static int js_value(jscan *j) {
    js_ws(j);
    if (j->i >= j->n) return -1;
    char c = j->s[j->i];
    if (c == '"') return js_string(j, NULL);
    if (c == '{' || c == '[') {
        if (++j->depth > 64) return -1;
        char close = c == '{' ? '}' : ']';
        j->i++;
        js_ws(j);
        if (j->i < j->n && j->s[j->i] == close) { j->i++; j->depth--; return 0; }
        for (;;) {
            if (c == '{') {
                js_ws(j);
                if (js_string(j, NULL)) return -1;
                js_ws(j);
                if (j->i >= j->n || j->s[j->i] != ':') return -1;
                j->i++;
            }
            if (js_value(j)) return -1;
            js_ws(j);
            if (j->i >= j->n) return -1;
            if (j->s[j->i] == ',') { j->i++; continue; }
            if (j->s[j->i] == close) { j->i++; j->depth--; return 0; }
            return -1;
        }
    }
    static const char *lits[] = {"true", "false", "null"};
    for (int k = 0; k < 3; k++) {
        size_t l = strlen(lits[k]);
        if (j->i + l <= j->n && !memcmp(j->s + j->i, lits[k], l)) { j->i += l; return 0; }
    }
    return js_number(j, NULL, NULL);
}

/* Parses the vocab object at [a, b) into L. Returns 0, or -1 (syntax: leave it to jansson). */
static int fast_vocab(tok_lists *L, const char *s, size_t a, size_t b) {
    jscan j = {s, b, a + 1, 0};
    js_ws(&j);
    if (j.i < b && s[j.i] == '}') return 0;
    for (;;) {
        js_ws(&j);
        size_t k0 = L->strs.n;
        if (js_string(&j, &L->strs)) return -1;
        js_ws(&j);
        if (j.i >= b || s[j.i] != ':') return -1;
        j.i++;
        js_ws(&j);
        int64_t v;
        int isint;
        if (j.i < b && (s[j.i] == '-' || (s[j.i] >= '0' && s[j.i] <= '9'))) {
            if (js_number(&j, &v, &isint)) return -1;
            if (!isint) v = -1;
        } else {
            if (js_value(&j)) return -1;
            v = -1; /* not an integer: reported by load_model */
        }
        if (L->nv == L->capv) {
            size_t nc = L->capv ? L->capv * 2 : 1024;
            tok_vent *nv = realloc(L->v, nc * sizeof *nv);
            if (!nv) return -1;
            L->v = nv;
            L->capv = nc;
        }
        L->v[L->nv].k = (uint32_t)k0;
        L->v[L->nv].kn = (uint32_t)(L->strs.n - k0);
        L->v[L->nv].id = v;
        L->nv++;
        js_ws(&j);
        if (j.i < b && s[j.i] == ',') { j.i++; continue; }
        if (j.i < b && s[j.i] == '}') return 0;
        return -1;
    }
}

static int fast_merges(tok_lists *L, const char *s, size_t a, size_t b) {
    jscan j = {s, b, a + 1, 0};
    js_ws(&j);
    if (j.i < b && s[j.i] == ']') return 0;
    for (;;) {
        js_ws(&j);
        if (L->nm == L->capm) {
            size_t nc = L->capm ? L->capm * 2 : 1024;
            tok_ment *nm = realloc(L->m, nc * sizeof *nm);
            if (!nm) return -1;
            L->m = nm;
            L->capm = nc;
        }
        tok_ment *m = &L->m[L->nm];
        memset(m, 0, sizeof *m);
        if (j.i < b && s[j.i] == '"') {
            size_t k0 = L->strs.n;
            if (js_string(&j, &L->strs)) return -1;
            m->a = (uint32_t)k0;
            m->an = (uint32_t)(L->strs.n - k0);
            m->form = 0;
        } else if (j.i < b && s[j.i] == '[') {
            size_t save = j.i;
            j.i++;
            js_ws(&j);
            size_t k0 = L->strs.n, k1 = 0;
            int ok = j.i < b && s[j.i] == '"' && !js_string(&j, &L->strs);
            if (ok) {
                k1 = L->strs.n;
                js_ws(&j);
                ok = j.i < b && s[j.i] == ',';
                j.i++;
                js_ws(&j);
                ok = ok && j.i < b && s[j.i] == '"' && !js_string(&j, &L->strs);
                js_ws(&j);
                ok = ok && j.i < b && s[j.i] == ']';
                j.i++;
            }
            if (ok) {
                m->a = (uint32_t)k0; m->an = (uint32_t)(k1 - k0);
                m->b = (uint32_t)k1; m->bn = (uint32_t)(L->strs.n - k1);
                m->form = 1;
            } else {
                j.i = save;
                if (js_value(&j)) return -1;
                m->form = 2;
            }
        } else {
            if (js_value(&j)) return -1;
            m->form = 2;
        }
        L->nm++;
        js_ws(&j);
        if (j.i < b && s[j.i] == ',') { j.i++; continue; }
        if (j.i < b && s[j.i] == ']') return 0;
        return -1;
    }
}

/* Finds root.model.vocab / root.model.merges and parses them; *rest gets the document with them
 * replaced by {} / [] (caller frees). Returns 0 when the fast path applies, -1 otherwise. */
int tok_lists_scan(const char *s, size_t n, tok_lists *L, char **rest, size_t *rest_len) {
    jscan j = {s, n, 0, 0};
    size_t vr[2] = {0, 0}, mr[2] = {0, 0};
    js_ws(&j);
    if (j.i >= n || s[j.i] != '{') return -1;
    j.i++;
    js_ws(&j);
    if (j.i < n && s[j.i] == '}') return -1;
    for (;;) {
        js_ws(&j);
        size_t k0 = j.i;
        if (js_string(&j, NULL)) return -1;
        int is_model = j.i - k0 == 7 && !memcmp(s + k0, "\"model\"", 7);
        js_ws(&j);
        if (j.i >= n || s[j.i] != ':') return -1;
        j.i++;
        js_ws(&j);
        if (is_model && j.i < n && s[j.i] == '{') {
            j.i++;
            js_ws(&j);
            if (j.i < n && s[j.i] == '}') j.i++;
            else for (;;) {
                js_ws(&j);
                size_t q0 = j.i;
                if (js_string(&j, NULL)) return -1;
                int is_v = j.i - q0 == 7 && !memcmp(s + q0, "\"vocab\"", 7);
                int is_m = j.i - q0 == 8 && !memcmp(s + q0, "\"merges\"", 8);
                js_ws(&j);
                if (j.i >= n || s[j.i] != ':') return -1;
                j.i++;
                js_ws(&j);
                size_t v0 = j.i;
                if (js_value(&j)) return -1;
                if (is_v && s[v0] == '{') { vr[0] = v0; vr[1] = j.i; }
                if (is_m && s[v0] == '[') { mr[0] = v0; mr[1] = j.i; }
                js_ws(&j);
                if (j.i < n && s[j.i] == ',') { j.i++; continue; }
                if (j.i < n && s[j.i] == '}') { j.i++; break; }
                return -1;
            }
        } else if (js_value(&j)) return -1;
        js_ws(&j);
        if (j.i < n && s[j.i] == ',') { j.i++; continue; }
        if (j.i < n && s[j.i] == '}') { j.i++; break; }
        return -1;
    }
    js_ws(&j);
    if (j.i != n || !vr[1] || !mr[1]) return -1;
    if (fast_vocab(L, s, vr[0], vr[1]) || fast_merges(L, s, mr[0], mr[1])) { tok_lists_free(L); return -1; }
    /* the document without the two big values */
    size_t lo1 = vr[0] < mr[0] ? vr[0] : mr[0], hi1 = vr[0] < mr[0] ? vr[1] : mr[1];
    size_t lo2 = vr[0] < mr[0] ? mr[0] : vr[0], hi2 = vr[0] < mr[0] ? mr[1] : vr[1];
    const char *r1 = vr[0] < mr[0] ? "{}" : "[]", *r2 = vr[0] < mr[0] ? "[]" : "{}";
    char *o = malloc(n + 8);
    if (!o) { tok_lists_free(L); return -1; }
    size_t on = 0;
    memcpy(o, s, lo1); on = lo1;
    memcpy(o + on, r1, 2); on += 2;
    memcpy(o + on, s + hi1, lo2 - hi1); on += lo2 - hi1;
    memcpy(o + on, r2, 2); on += 2;
    memcpy(o + on, s + hi2, n - hi2); on += n - hi2;
    o[on] = 0;
    *rest = o;
    *rest_len = on;
    L->have = 1;
    return 0;
}

/* The same lists from jansson values (the slow path). */
int tok_lists_from_json(tok_lists *L, json_t *vocab, json_t *merges) {
    const char *k;
    json_t *v;
    json_object_foreach(vocab, k, v) {
        if (L->nv == L->capv) {
            size_t nc = L->capv ? L->capv * 2 : 1024;
            tok_vent *nv = realloc(L->v, nc * sizeof *nv);
            if (!nv) return -1;
            L->v = nv;
            L->capv = nc;
        }
        size_t k0 = L->strs.n;
        if (tok_buf_add(&L->strs, k, strlen(k))) return -1;
        L->v[L->nv].k = (uint32_t)k0;
        L->v[L->nv].kn = (uint32_t)strlen(k);
        L->v[L->nv].id = json_is_integer(v) ? json_integer_value(v) : -1;
        L->nv++;
    }
    size_t i;
    json_t *m;
    json_array_foreach(merges, i, m) {
        if (L->nm == L->capm) {
            size_t nc = L->capm ? L->capm * 2 : 1024;
            tok_ment *nm = realloc(L->m, nc * sizeof *nm);
            if (!nm) return -1;
            L->m = nm;
            L->capm = nc;
        }
        tok_ment *e = &L->m[L->nm++];
        memset(e, 0, sizeof *e);
        e->form = 2;
        if (json_is_string(m)) {
            e->form = 0;
            e->a = (uint32_t)L->strs.n;
            e->an = (uint32_t)json_string_length(m);
            if (tok_buf_add(&L->strs, json_string_value(m), e->an)) return -1;
        } else if (json_is_array(m) && json_array_size(m) == 2 && json_is_string(json_array_get(m, 0)) &&
                   json_is_string(json_array_get(m, 1))) {
            e->form = 1;
            e->a = (uint32_t)L->strs.n;
            e->an = (uint32_t)json_string_length(json_array_get(m, 0));
            if (tok_buf_add(&L->strs, json_string_value(json_array_get(m, 0)), e->an)) return -1;
            e->b = (uint32_t)L->strs.n;
            e->bn = (uint32_t)json_string_length(json_array_get(m, 1));
            if (tok_buf_add(&L->strs, json_string_value(json_array_get(m, 1)), e->bn)) return -1;
        }
    }
    if (!L->strs.p && tok_buf_add(&L->strs, "", 0)) return -1;
    return 0;
}

