/* jinja.c - a Jinja2 subset interpreter for chat templates (trim_blocks + lstrip_blocks, as HF renders them):
 * the evaluator (jinja_render); the lexer is jinja_lex.c, the parser jinja_parse.c
 *
 * Supported: {{ expr }}, {# comments #}, whitespace control (-), tags if/elif/else, for (with
 * tuple targets, an `if` filter, else, loop.*), set (names and namespace attributes), break,
 * continue, generation (rendered as its body), raw. Expressions: literals, lists, dicts, names,
 * attributes, subscripts, slices, calls, filters, tests, arithmetic, ~, comparisons, in, and/or/not,
 * conditional expressions. Anything else is a parse error naming the construct and the line. */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "judgerl/strbuf.h"
#include "tokenizer/jinja_internal.h"


static val V_UNDEFINED = {V_UNDEF, {0}};

/* ------------------------------------------------------------------ rendering */

typedef struct frame { struct frame *up; vdict *vars; } frame;

typedef struct {
    arena ar;
    jr_strbuf out; /* the rendered text */
    char err[512];
    int failed;
    int brk; /* 1 break, 2 continue */
    const char *name;
} rctx;

static int rerr(rctx *r, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int rerr(rctx *r, int line, const char *fmt, ...) {
    if (r->failed) return -1;
    char m[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    snprintf(r->err, sizeof r->err, "%s: line %d: %s", r->name, line, m);
    r->failed = 1;
    return -1;
}

static int emit(rctx *r, const char *s, size_t n) {
    jr_strbuf_addn(&r->out, s, n);
    return r->out.oom ? rerr(r, 0, "out of memory") : 0;
}

/* a growable string in the render's arena; running out of memory fails the render */
typedef struct { char *s; size_t n, cap; rctx *r; } sbuf;

static void sb_add(sbuf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t nc = (b->n + n + 1) * 2;
        char *p = jinja_alloc(&b->r->ar, nc);
        if (!p) { rerr(b->r, 0, "out of memory"); return; }
        if (b->n) memcpy(p, b->s, b->n);
        b->s = p;
        b->cap = nc;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}
static void sb_str(sbuf *b, const char *s) { sb_add(b, s, strlen(s)); }

static vdict *dict_new(rctx *r) { return jinja_alloc(&r->ar, sizeof(vdict)); }

static val *dict_get(vdict *d, const char *k, size_t kn) {
    for (size_t i = 0; i < d->n; i++)
        if (d->kn[i] == kn && !memcmp(d->k[i], k, kn)) return &d->v[i];
    return NULL;
}

static void dict_set(rctx *r, vdict *d, const char *k, size_t kn, val v) {
    val *e = dict_get(d, k, kn);
    if (e) { *e = v; return; }
    if (d->n == d->cap) {
        size_t nc = d->cap ? d->cap * 2 : 8;
        const char **nk = jinja_alloc(&r->ar, nc * sizeof *nk);
        size_t *nn = jinja_alloc(&r->ar, nc * sizeof *nn);
        val *nv = jinja_alloc(&r->ar, nc * sizeof *nv);
        if (!nk || !nn || !nv) { rerr(r, 0, "out of memory"); return; }
        if (d->n) { memcpy(nk, d->k, d->n * sizeof *nk); memcpy(nn, d->kn, d->n * sizeof *nn); memcpy(nv, d->v, d->n * sizeof *nv); }
        d->k = nk; d->kn = nn; d->v = nv; d->cap = nc;
    }
    d->k[d->n] = k; d->kn[d->n] = kn; d->v[d->n] = v; d->n++;
}

static vlist *list_new(rctx *r, size_t cap) {
    vlist *l = jinja_alloc(&r->ar, sizeof *l);
    if (!l) return NULL;
    l->cap = cap ? cap : 4;
    l->v = jinja_alloc(&r->ar, l->cap * sizeof(val));
    return l->v ? l : NULL;
}

static void list_push(rctx *r, vlist *l, val v) {
    if (l->n == l->cap) {
        size_t nc = l->cap * 2;
        val *nv = jinja_alloc(&r->ar, nc * sizeof *nv);
        if (!nv) { rerr(r, 0, "out of memory"); return; }
        memcpy(nv, l->v, l->n * sizeof *nv);
        l->v = nv; l->cap = nc;
    }
    l->v[l->n++] = v;
}

static val mklist(vlist *l) { val v = {V_LIST, {0}}; v.u.l = l; return v; }
static val mkdict(vdict *d) { val v = {V_DICT, {0}}; v.u.d = d; return v; }

static val from_json(rctx *r, json_t *j) {
    val v = mknone();
    switch (json_typeof(j)) {
    case JSON_STRING: return mkstr(json_string_value(j), json_string_length(j));
    case JSON_INTEGER: return mkint(json_integer_value(j));
    case JSON_REAL: v.t = V_FLOAT; v.u.f = json_real_value(j); return v;
    case JSON_TRUE: return mkbool(1);
    case JSON_FALSE: return mkbool(0);
    case JSON_NULL: return mknone();
    case JSON_ARRAY: {
        vlist *l = list_new(r, json_array_size(j));
        if (!l) return v;
        size_t i;
        json_t *e;
        json_array_foreach(j, i, e) list_push(r, l, from_json(r, e));
        return mklist(l);
    }
    case JSON_OBJECT: {
        vdict *d = dict_new(r);
        if (!d) return v;
        const char *k;
        json_t *e;
        json_object_foreach(j, k, e) dict_set(r, d, k, strlen(k), from_json(r, e));
        return mkdict(d);
    }
    }
    return v;
}

static int truthy(val v) {
    switch (v.t) {
    case V_UNDEF: case V_NONE: return 0;
    case V_BOOL: return v.u.b;
    case V_INT: return v.u.i != 0;
    case V_FLOAT: return v.u.f != 0;
    case V_STR: return v.u.s.n != 0;
    case V_LIST: return v.u.l->n != 0;
    case V_DICT: return v.u.d->n != 0;
    default: return 1;
    }
}

static const char *type_name(val v) {
    static const char *names[] = {"Undefined", "NoneType", "bool", "int", "float", "str", "list", "dict", "function"};
    return names[v.t];
}

/* Python's repr of a float */
static void float_repr(double f, char *buf, size_t n) {
    if (isnan(f)) { snprintf(buf, n, "nan"); return; }
    if (isinf(f)) { snprintf(buf, n, f < 0 ? "-inf" : "inf"); return; }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, f);
        if (strtod(buf, NULL) == f) break;
    }
    /* Python uses exponent form when exp < -4 or >= 16 */
    char *e = strchr(buf, 'e');
    int exp10 = f == 0 ? 0 : (int)floor(log10(fabs(f)));
    if (e || exp10 >= 16 || exp10 < -4) {
        char mant[40];
        for (int prec = 0; prec <= 16; prec++) {
            snprintf(mant, sizeof mant, "%.*e", prec, f);
            if (strtod(mant, NULL) == f) break;
        }
        /* mant like 1.5e+20: Python writes 1.5e+20, exponent at least 2 digits */
        snprintf(buf, n, "%s", mant);
        return;
    }
    if (!strchr(buf, '.')) strncat(buf, ".0", n - strlen(buf) - 1);
}

static void to_str(sbuf *b, val v, int repr);

static void str_repr(sbuf *b, const char *s, size_t n) {
    int has_sq = memchr(s, '\'', n) != NULL, has_dq = memchr(s, '"', n) != NULL;
    char q = has_sq && !has_dq ? '"' : '\'';
    sb_add(b, &q, 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char tmp[8];
        if (c == '\\') sb_str(b, "\\\\");
        else if (c == (unsigned char)q) { tmp[0] = '\\'; tmp[1] = (char)c; sb_add(b, tmp, 2); }
        else if (c == '\n') sb_str(b, "\\n");
        else if (c == '\r') sb_str(b, "\\r");
        else if (c == '\t') sb_str(b, "\\t");
        else if (c < 0x20 || c == 0x7f) { snprintf(tmp, sizeof tmp, "\\x%02x", c); sb_str(b, tmp); }
        else sb_add(b, (const char *)&s[i], 1);
    }
    sb_add(b, &q, 1);
}

static void to_str(sbuf *b, val v, int repr) {
    char buf[64];
    switch (v.t) {
    case V_UNDEF: break;
    case V_NONE: sb_str(b, "None"); break;
    case V_BOOL: sb_str(b, v.u.b ? "True" : "False"); break;
    case V_INT: snprintf(buf, sizeof buf, "%lld", v.u.i); sb_str(b, buf); break;
    case V_FLOAT: float_repr(v.u.f, buf, sizeof buf); sb_str(b, buf); break;
    case V_STR: if (repr) str_repr(b, v.u.s.s, v.u.s.n); else sb_add(b, v.u.s.s, v.u.s.n); break;
    case V_LIST:
        sb_str(b, "[");
        for (size_t i = 0; i < v.u.l->n; i++) { if (i) sb_str(b, ", "); to_str(b, v.u.l->v[i], 1); }
        sb_str(b, "]");
        break;
    case V_DICT:
        if (v.u.d->ns) { sb_str(b, "<Namespace>"); break; }
        sb_str(b, "{");
        for (size_t i = 0; i < v.u.d->n; i++) {
            if (i) sb_str(b, ", ");
            str_repr(b, v.u.d->k[i], v.u.d->kn[i]);
            sb_str(b, ": ");
            to_str(b, v.u.d->v[i], 1);
        }
        sb_str(b, "}");
        break;
    case V_FUNC: sb_str(b, "<function>"); break;
    }
}

static val stringify(rctx *r, val v) {
    if (v.t == V_STR) return v;
    sbuf b = {NULL, 0, 0, r};
    sb_add(&b, "", 0);
    to_str(&b, v, 0);
    return mkstr(b.s ? b.s : "", b.n);
}

/* JSON as HF's tojson: json.dumps(x, ensure_ascii=False, indent=indent, sort_keys=False) */
static int to_json(rctx *r, sbuf *b, val v, int indent, int depth, int line) {
    char buf[64];
    switch (v.t) {
    case V_UNDEF: return rerr(r, line, "tojson: value is undefined");
    case V_NONE: sb_str(b, "null"); return 0;
    case V_BOOL: sb_str(b, v.u.b ? "true" : "false"); return 0;
    case V_INT: snprintf(buf, sizeof buf, "%lld", v.u.i); sb_str(b, buf); return 0;
    case V_FLOAT:
        if (isnan(v.u.f)) sb_str(b, "NaN");
        else if (isinf(v.u.f)) sb_str(b, v.u.f < 0 ? "-Infinity" : "Infinity");
        else { float_repr(v.u.f, buf, sizeof buf); sb_str(b, buf); }
        return 0;
    case V_STR:
        sb_str(b, "\"");
        for (size_t i = 0; i < v.u.s.n; i++) {
            unsigned char c = (unsigned char)v.u.s.s[i];
            if (c == '"') sb_str(b, "\\\"");
            else if (c == '\\') sb_str(b, "\\\\");
            else if (c == '\n') sb_str(b, "\\n");
            else if (c == '\r') sb_str(b, "\\r");
            else if (c == '\t') sb_str(b, "\\t");
            else if (c == '\b') sb_str(b, "\\b");
            else if (c == '\f') sb_str(b, "\\f");
            else if (c < 0x20 || c == 0x7f) { snprintf(buf, sizeof buf, "\\u%04x", c); sb_str(b, buf); }
            else sb_add(b, (const char *)&v.u.s.s[i], 1);
        }
        sb_str(b, "\"");
        return 0;
    case V_LIST: case V_DICT: {
        int isl = v.t == V_LIST;
        size_t n = isl ? v.u.l->n : v.u.d->n;
        sb_str(b, isl ? "[" : "{");
        if (n == 0) { sb_str(b, isl ? "]" : "}"); return 0; }
        for (size_t i = 0; i < n; i++) {
            if (i) sb_str(b, indent >= 0 ? "," : ", ");
            if (indent >= 0) { sb_str(b, "\n"); for (int k = 0; k < indent * (depth + 1); k++) sb_str(b, " "); }
            if (!isl) {
                if (to_json(r, b, mkstr(v.u.d->k[i], v.u.d->kn[i]), indent, depth + 1, line)) return -1;
                sb_str(b, ": ");
            }
            if (to_json(r, b, isl ? v.u.l->v[i] : v.u.d->v[i], indent, depth + 1, line)) return -1;
        }
        if (indent >= 0) { sb_str(b, "\n"); for (int k = 0; k < indent * depth; k++) sb_str(b, " "); }
        sb_str(b, isl ? "]" : "}");
        return 0;
    }
    default: return rerr(r, line, "tojson: cannot serialise a %s", type_name(v));
    }
}

static int vequal(val a, val b) {
    if ((a.t == V_INT || a.t == V_FLOAT || a.t == V_BOOL) && (b.t == V_INT || b.t == V_FLOAT || b.t == V_BOOL)) {
        double x = a.t == V_FLOAT ? a.u.f : a.t == V_INT ? (double)a.u.i : a.u.b;
        double y = b.t == V_FLOAT ? b.u.f : b.t == V_INT ? (double)b.u.i : b.u.b;
        if (a.t == V_INT && b.t == V_INT) return a.u.i == b.u.i;
        return x == y;
    }
    if (a.t != b.t) return 0;
    switch (a.t) {
    case V_UNDEF: case V_NONE: return 1;
    case V_STR: return a.u.s.n == b.u.s.n && !memcmp(a.u.s.s, b.u.s.s, a.u.s.n);
    case V_LIST:
        if (a.u.l->n != b.u.l->n) return 0;
        for (size_t i = 0; i < a.u.l->n; i++) if (!vequal(a.u.l->v[i], b.u.l->v[i])) return 0;
        return 1;
    case V_DICT:
        if (a.u.d->n != b.u.d->n) return 0;
        for (size_t i = 0; i < a.u.d->n; i++) {
            val *o = dict_get(b.u.d, a.u.d->k[i], a.u.d->kn[i]);
            if (!o || !vequal(a.u.d->v[i], *o)) return 0;
        }
        return 1;
    default: return a.u.fn == b.u.fn;
    }
}

static int is_num(val v) { return v.t == V_INT || v.t == V_FLOAT || v.t == V_BOOL; }
static double num(val v) { return v.t == V_FLOAT ? v.u.f : v.t == V_INT ? (double)v.u.i : v.u.b; }

/* -1/0/1, or 2 when not comparable */
static int vcompare(val a, val b) {
    if (is_num(a) && is_num(b)) {
        if (a.t != V_FLOAT && b.t != V_FLOAT) { long long x = a.t == V_INT ? a.u.i : a.u.b, y = b.t == V_INT ? b.u.i : b.u.b; return x < y ? -1 : x > y; }
        double x = num(a), y = num(b);
        return x < y ? -1 : x > y;
    }
    if (a.t == V_STR && b.t == V_STR) {
        size_t m = a.u.s.n < b.u.s.n ? a.u.s.n : b.u.s.n;
        int c = memcmp(a.u.s.s, b.u.s.s, m);
        if (c) return c < 0 ? -1 : 1;
        return a.u.s.n < b.u.s.n ? -1 : a.u.s.n > b.u.s.n;
    }
    if (a.t == V_LIST && b.t == V_LIST) {
        for (size_t i = 0; i < a.u.l->n && i < b.u.l->n; i++) {
            int c = vcompare(a.u.l->v[i], b.u.l->v[i]);
            if (c) return c;
        }
        return a.u.l->n < b.u.l->n ? -1 : a.u.l->n > b.u.l->n;
    }
    return 2;
}

static val eval(rctx *r, frame *f, node *n);

static val *lookup(frame *f, const char *name) {
    size_t n = strlen(name);
    for (; f; f = f->up) {
        val *v = dict_get(f->vars, name, n);
        if (v) return v;
    }
    return NULL;
}

/* utf-8 code point boundaries of a string: fills offsets (n_cp + 1 entries) */
static size_t *cp_offsets(rctx *r, const char *s, size_t n, size_t *ncp) {
    size_t *o = jinja_alloc(&r->ar, (n + 1) * sizeof *o);
    if (!o) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80) o[k++] = i;
    o[k] = n;
    *ncp = k;
    return o;
}

static int py_isspace(const char *s, size_t n, size_t i, size_t *len) {
    unsigned char c = (unsigned char)s[i];
    *len = 1;
    if (c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f)) return 1;
    if (c < 0x80) return 0;
    /* a few multi-byte Unicode spaces Python's str.strip() removes */
    static const char *ws[] = {"\xc2\x85", "\xc2\xa0", "\xe1\x9a\x80", "\xe2\x80\x80", "\xe2\x80\x81", "\xe2\x80\x82",
                               "\xe2\x80\x83", "\xe2\x80\x84", "\xe2\x80\x85", "\xe2\x80\x86", "\xe2\x80\x87", "\xe2\x80\x88",
                               "\xe2\x80\x89", "\xe2\x80\x8a", "\xe2\x80\xa8", "\xe2\x80\xa9", "\xe2\x80\xaf", "\xe2\x81\x9f",
                               "\xe3\x80\x80", NULL};
    for (int k = 0; ws[k]; k++) {
        size_t l = strlen(ws[k]);
        if (i + l <= n && !memcmp(s + i, ws[k], l)) { *len = l; return 1; }
    }
    return 0;
}

/* str.strip/lstrip/rstrip with optional chars (a set of code points) */
static val str_strip(rctx *r, val s, int left, int right, val *chars) {
    const char *p = s.u.s.s;
    size_t a = 0, b = s.u.s.n;
    if (chars && chars->t == V_STR) {
        size_t nc;
        size_t *co = cp_offsets(r, chars->u.s.s, chars->u.s.n, &nc);
        if (!co) return s;
        int changed = 1;
        while (left && changed && a < b) {
            changed = 0;
            for (size_t k = 0; k < nc; k++) {
                size_t l = co[k + 1] - co[k];
                if (a + l <= b && !memcmp(p + a, chars->u.s.s + co[k], l)) { a += l; changed = 1; break; }
            }
        }
        changed = 1;
        while (right && changed && b > a) {
            changed = 0;
            for (size_t k = 0; k < nc; k++) {
                size_t l = co[k + 1] - co[k];
                if (b >= a + l && !memcmp(p + b - l, chars->u.s.s + co[k], l)) { b -= l; changed = 1; break; }
            }
        }
        return mkstr(p + a, b - a);
    }
    size_t l;
    while (left && a < b && py_isspace(p, b, a, &l)) a += l;
    while (right && b > a) {
        size_t j = b - 1;
        while (j > a && ((unsigned char)p[j] & 0xC0) == 0x80) j--;
        if (!py_isspace(p, b, j, &l) || j + l != b) break;
        b = j;
    }
    return mkstr(p + a, b - a);
}

static val str_case(rctx *r, val s, int mode) { /* 0 lower, 1 upper, 2 capitalize, 3 title (ASCII letters) */
    char *o = jinja_alloc(&r->ar, s.u.s.n + 1);
    if (!o) return s;
    int start = 1;
    for (size_t i = 0; i < s.u.s.n; i++) {
        char c = s.u.s.s[i];
        int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        if (mode == 0 || (mode == 2 && i > 0) || (mode == 3 && !start)) o[i] = (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
        else if (mode == 1 || (mode == 2 && i == 0) || (mode == 3 && start)) o[i] = (c >= 'a' && c <= 'z') ? (char)(c - 32) : c;
        else o[i] = c;
        start = !alpha && !(c >= '0' && c <= '9') && !((unsigned char)c & 0x80);
    }
    return mkstr(o, s.u.s.n);
}

static val str_replace(rctx *r, val s, val a, val b, long long count) {
    sbuf o = {NULL, 0, 0, r};
    sb_add(&o, "", 0);
    size_t i = 0;
    long long done = 0;
    if (a.u.s.n == 0) return s;
    while (i < s.u.s.n) {
        if ((count < 0 || done < count) && i + a.u.s.n <= s.u.s.n && !memcmp(s.u.s.s + i, a.u.s.s, a.u.s.n)) {
            sb_add(&o, b.u.s.s, b.u.s.n);
            i += a.u.s.n;
            done++;
        } else sb_add(&o, s.u.s.s + i++, 1);
    }
    return mkstr(o.s, o.n);
}

static val str_split(rctx *r, val s, val *sep, long long maxsplit) {
    vlist *l = list_new(r, 4);
    if (!l) return mknone();
    const char *p = s.u.s.s;
    size_t n = s.u.s.n, i = 0;
    if (!sep || sep->t == V_NONE) {
        size_t wl;
        while (i < n) {
            while (i < n && py_isspace(p, n, i, &wl)) i += wl;
            if (i >= n) break;
            if (maxsplit >= 0 && (long long)l->n == maxsplit) {
                size_t e = n;
                while (e > i && py_isspace(p, n, e - 1, &wl)) e--;
                list_push(r, l, mkstr(p + i, e - i));
                break;
            }
            size_t j = i;
            while (j < n && !py_isspace(p, n, j, &wl)) j++;
            list_push(r, l, mkstr(p + i, j - i));
            i = j;
        }
        return mklist(l);
    }
    size_t start = 0;
    while (i + sep->u.s.n <= n && (maxsplit < 0 || (long long)l->n < maxsplit)) {
        if (!memcmp(p + i, sep->u.s.s, sep->u.s.n)) {
            list_push(r, l, mkstr(p + start, i - start));
            i += sep->u.s.n;
            start = i;
        } else i++;
    }
    list_push(r, l, mkstr(p + start, n - start));
    return mklist(l);
}

static int affix(val s, val a, int end) {
    if (a.t == V_LIST) { for (size_t i = 0; i < a.u.l->n; i++) if (affix(s, a.u.l->v[i], end)) return 1; return 0; }
    if (a.t != V_STR || a.u.s.n > s.u.s.n) return 0;
    return !memcmp(s.u.s.s + (end ? s.u.s.n - a.u.s.n : 0), a.u.s.s, a.u.s.n);
}

typedef struct { val *v; const char **kw; int n; } argv_t;

static val *kwarg(argv_t *a, const char *name, int pos) {
    for (int i = 0; i < a->n; i++) if (a->kw[i] && !strcmp(a->kw[i], name)) return &a->v[i];
    int k = 0;
    for (int i = 0; i < a->n; i++) if (!a->kw[i]) { if (k == pos) return &a->v[i]; k++; }
    return NULL;
}

static int need_str(rctx *r, int line, val *v, const char *what) {
    if (!v || v->t != V_STR) return rerr(r, line, "%s expects a string argument, got %s", what, v ? type_name(*v) : "nothing");
    return 0;
}

/* method calls on str / dict / list */
static val call_method(rctx *r, int line, val obj, const char *m, argv_t *a) {
    if (obj.t == V_STR) {
        if (!strcmp(m, "strip") || !strcmp(m, "lstrip") || !strcmp(m, "rstrip"))
            return str_strip(r, obj, m[0] != 'r', m[0] != 'l', kwarg(a, "chars", 0));
        if (!strcmp(m, "upper")) return str_case(r, obj, 1);
        if (!strcmp(m, "lower")) return str_case(r, obj, 0);
        if (!strcmp(m, "capitalize")) return str_case(r, obj, 2);
        if (!strcmp(m, "title")) return str_case(r, obj, 3);
        if (!strcmp(m, "startswith") || !strcmp(m, "endswith")) {
            val *x = kwarg(a, "prefix", 0);
            if (!x) { rerr(r, line, "%s() needs an argument", m); return V_UNDEFINED; }
            return mkbool(affix(obj, *x, m[0] == 'e'));
        }
        if (!strcmp(m, "split") || !strcmp(m, "rsplit")) {
            val *sep = kwarg(a, "sep", 0), *mx = kwarg(a, "maxsplit", 1);
            if (sep && sep->t != V_NONE && (need_str(r, line, sep, "split") || sep->u.s.n == 0)) {
                if (!r->failed) rerr(r, line, "split: empty separator");
                return V_UNDEFINED;
            }
            if (m[0] == 'r' && mx && mx->t == V_INT && mx->u.i >= 0) { rerr(r, line, "rsplit with maxsplit is not supported"); return V_UNDEFINED; }
            return str_split(r, obj, sep, mx && mx->t == V_INT ? mx->u.i : -1);
        }
        if (!strcmp(m, "replace")) {
            val *x = kwarg(a, "old", 0), *y = kwarg(a, "new", 1), *c = kwarg(a, "count", 2);
            if (need_str(r, line, x, "replace") || need_str(r, line, y, "replace")) return V_UNDEFINED;
            return str_replace(r, obj, *x, *y, c && c->t == V_INT ? c->u.i : -1);
        }
        if (!strcmp(m, "find") || !strcmp(m, "count")) {
            val *x = kwarg(a, "sub", 0);
            if (need_str(r, line, x, m)) return V_UNDEFINED;
            long long cnt = 0, pos = -1;
            for (size_t i = 0; i + x->u.s.n <= obj.u.s.n;) {
                if (!memcmp(obj.u.s.s + i, x->u.s.s, x->u.s.n)) {
                    if (pos < 0) { size_t nc; cp_offsets(r, obj.u.s.s, i, &nc); pos = (long long)nc; }
                    cnt++;
                    i += x->u.s.n ? x->u.s.n : 1;
                } else i++;
            }
            return mkint(m[0] == 'f' ? pos : cnt);
        }
        if (!strcmp(m, "join")) {
            val *x = kwarg(a, "iterable", 0);
            if (!x || x->t != V_LIST) { rerr(r, line, "join() expects a list"); return V_UNDEFINED; }
            sbuf b = {NULL, 0, 0, r};
            sb_add(&b, "", 0);
            for (size_t i = 0; i < x->u.l->n; i++) {
                if (i) sb_add(&b, obj.u.s.s, obj.u.s.n);
                if (x->u.l->v[i].t != V_STR) { rerr(r, line, "join(): item %zu is not a string", i); return V_UNDEFINED; }
                sb_add(&b, x->u.l->v[i].u.s.s, x->u.l->v[i].u.s.n);
            }
            return mkstr(b.s, b.n);
        }
    } else if (obj.t == V_DICT) {
        if (!strcmp(m, "get")) {
            val *k = kwarg(a, "key", 0), *d = kwarg(a, "default", 1);
            if (!k) { rerr(r, line, "get() needs a key"); return V_UNDEFINED; }
            val *x = k->t == V_STR ? dict_get(obj.u.d, k->u.s.s, k->u.s.n) : NULL;
            return x ? *x : d ? *d : mknone();
        }
        if (!strcmp(m, "items") || !strcmp(m, "keys") || !strcmp(m, "values")) {
            vlist *l = list_new(r, obj.u.d->n);
            if (!l) return V_UNDEFINED;
            for (size_t i = 0; i < obj.u.d->n; i++) {
                val k = mkstr(obj.u.d->k[i], obj.u.d->kn[i]);
                if (m[0] == 'k') list_push(r, l, k);
                else if (m[0] == 'v') list_push(r, l, obj.u.d->v[i]);
                else {
                    vlist *p = list_new(r, 2);
                    if (!p) return V_UNDEFINED;
                    list_push(r, p, k);
                    list_push(r, p, obj.u.d->v[i]);
                    list_push(r, l, mklist(p));
                }
            }
            return mklist(l);
        }
    }
    rerr(r, line, "unsupported method %s.%s()", type_name(obj), m);
    return V_UNDEFINED;
}

static val get_attr(rctx *r, int line, val obj, const char *name, size_t n) {
    if (obj.t == V_UNDEF) { rerr(r, line, "'%.*s' of an undefined value", (int)n, name); return V_UNDEFINED; }
    if (obj.t == V_DICT) {
        val *v = dict_get(obj.u.d, name, n);
        return v ? *v : V_UNDEFINED;
    }
    return V_UNDEFINED;
}

static long long norm_index(long long i, size_t n) { return i < 0 ? i + (long long)n : i; }

static val get_item(rctx *r, int line, val obj, val key) {
    if (obj.t == V_UNDEF) { rerr(r, line, "subscript of an undefined value"); return V_UNDEFINED; }
    if (obj.t == V_DICT) {
        if (key.t != V_STR) return V_UNDEFINED;
        val *v = dict_get(obj.u.d, key.u.s.s, key.u.s.n);
        return v ? *v : V_UNDEFINED;
    }
    if (obj.t == V_LIST && key.t == V_INT) {
        long long i = norm_index(key.u.i, obj.u.l->n);
        if (i < 0 || i >= (long long)obj.u.l->n) return V_UNDEFINED;
        return obj.u.l->v[i];
    }
    if (obj.t == V_STR && key.t == V_INT) {
        size_t nc;
        size_t *o = cp_offsets(r, obj.u.s.s, obj.u.s.n, &nc);
        if (!o) return V_UNDEFINED;
        long long i = norm_index(key.u.i, nc);
        if (i < 0 || i >= (long long)nc) return V_UNDEFINED;
        return mkstr(obj.u.s.s + o[i], o[i + 1] - o[i]);
    }
    return V_UNDEFINED;
}

static val do_slice(rctx *r, int line, val obj, val *a, val *b, val *c) {
    long long step = c && c->t == V_INT ? c->u.i : 1;
    if (step == 0) { rerr(r, line, "slice step cannot be zero"); return V_UNDEFINED; }
    size_t n;
    size_t *o = NULL;
    if (obj.t == V_LIST) n = obj.u.l->n;
    else if (obj.t == V_STR) { o = cp_offsets(r, obj.u.s.s, obj.u.s.n, &n); if (!o) return V_UNDEFINED; }
    else { rerr(r, line, "cannot slice a %s", type_name(obj)); return V_UNDEFINED; }
    long long N = (long long)n, lo, hi;
    if (step > 0) {
        lo = a && a->t == V_INT ? norm_index(a->u.i, n) : 0;
        hi = b && b->t == V_INT ? norm_index(b->u.i, n) : N;
        if (lo < 0) lo = 0;
        if (lo > N) lo = N;
        if (hi < 0) hi = 0;
        if (hi > N) hi = N;
    } else {
        lo = a && a->t == V_INT ? norm_index(a->u.i, n) : N - 1;
        hi = b && b->t == V_INT ? norm_index(b->u.i, n) : -1;
        if (lo < -1) lo = -1;
        if (lo >= N) lo = N - 1;
        if (hi < -1) hi = -1;
        if (hi >= N) hi = N - 1;
    }
    vlist *l = obj.t == V_LIST ? list_new(r, 4) : NULL;
    sbuf sb = {NULL, 0, 0, r};
    sb_add(&sb, "", 0);
    for (long long i = lo; step > 0 ? i < hi : i > hi; i += step) {
        if (l) list_push(r, l, obj.u.l->v[i]);
        else sb_add(&sb, obj.u.s.s + o[i], o[i + 1] - o[i]);
    }
    return l ? mklist(l) : mkstr(sb.s, sb.n);
}

static int iterate(rctx *r, int line, val v, vlist **out) {
    if (v.t == V_LIST) { *out = v.u.l; return 0; }
    vlist *l = list_new(r, 4);
    if (!l) return rerr(r, line, "out of memory");
    if (v.t == V_DICT) for (size_t i = 0; i < v.u.d->n; i++) list_push(r, l, mkstr(v.u.d->k[i], v.u.d->kn[i]));
    else if (v.t == V_STR) {
        size_t nc;
        size_t *o = cp_offsets(r, v.u.s.s, v.u.s.n, &nc);
        if (!o) return -1;
        for (size_t i = 0; i < nc; i++) list_push(r, l, mkstr(v.u.s.s + o[i], o[i + 1] - o[i]));
    } else if (v.t != V_UNDEF) return rerr(r, line, "cannot iterate over a %s", type_name(v));
    *out = l;
    return 0;
}

static long long length_of(rctx *r, val v) {
    if (v.t == V_STR) { size_t nc; cp_offsets(r, v.u.s.s, v.u.s.n, &nc); return (long long)nc; }
    if (v.t == V_LIST) return (long long)v.u.l->n;
    if (v.t == V_DICT) return (long long)v.u.d->n;
    return v.t == V_UNDEF ? 0 : -1;
}

static int eval_args(rctx *r, frame *f, node *n, argv_t *a) {
    a->n = n->nargs;
    a->kw = n->kw;
    a->v = jinja_alloc(&r->ar, (size_t)(n->nargs + 1) * sizeof(val));
    if (!a->v) return rerr(r, n->line, "out of memory");
    for (int i = 0; i < n->nargs; i++) {
        a->v[i] = eval(r, f, n->args[i]);
        if (r->failed) return -1;
    }
    return 0;
}

static int test_value(rctx *r, int line, val v, const char *name, argv_t *a) {
    val *x = kwarg(a, "value", 0);
    if (!strcmp(name, "defined")) return v.t != V_UNDEF;
    if (!strcmp(name, "undefined")) return v.t == V_UNDEF;
    if (!strcmp(name, "none")) return v.t == V_NONE;
    if (!strcmp(name, "string")) return v.t == V_STR;
    if (!strcmp(name, "number")) return v.t == V_INT || v.t == V_FLOAT;
    if (!strcmp(name, "integer")) return v.t == V_INT;
    if (!strcmp(name, "float")) return v.t == V_FLOAT;
    if (!strcmp(name, "boolean")) return v.t == V_BOOL;
    if (!strcmp(name, "true")) return v.t == V_BOOL && v.u.b;
    if (!strcmp(name, "false")) return v.t == V_BOOL && !v.u.b;
    if (!strcmp(name, "mapping")) return v.t == V_DICT;
    if (!strcmp(name, "sequence")) return v.t == V_LIST || v.t == V_STR || v.t == V_DICT;
    if (!strcmp(name, "iterable")) return v.t == V_LIST || v.t == V_STR || v.t == V_DICT;
    if (!strcmp(name, "callable")) return v.t == V_FUNC;
    if (!strcmp(name, "odd") || !strcmp(name, "even")) {
        if (v.t != V_INT) return rerr(r, line, "test '%s' needs an integer", name);
        return (int)(v.u.i & 1) == (name[0] == 'o');
    }
    if (!strcmp(name, "divisibleby")) {
        if (v.t != V_INT || !x || x->t != V_INT || !x->u.i) return rerr(r, line, "test 'divisibleby' needs integers");
        return v.u.i % x->u.i == 0;
    }
    if (!strcmp(name, "eq") || !strcmp(name, "equalto") || !strcmp(name, "sameas") || !strcmp(name, "ne")) {
        if (!x) return rerr(r, line, "test '%s' needs an argument", name);
        return vequal(v, *x) != (name[0] == 'n');
    }
    if (!strcmp(name, "in")) {
        if (!x) return rerr(r, line, "test 'in' needs an argument");
        vlist *l;
        if (x->t == V_STR && v.t == V_STR) return memmem(x->u.s.s, x->u.s.n, v.u.s.s, v.u.s.n) != NULL || !v.u.s.n;
        if (iterate(r, line, *x, &l)) return -1;
        for (size_t i = 0; i < l->n; i++) if (vequal(l->v[i], v)) return 1;
        return 0;
    }
    if (!strcmp(name, "lower") || !strcmp(name, "upper")) {
        if (v.t != V_STR) return 0;
        for (size_t i = 0; i < v.u.s.n; i++) {
            char c = v.u.s.s[i];
            if (name[0] == 'l' ? (c >= 'A' && c <= 'Z') : (c >= 'a' && c <= 'z')) return 0;
        }
        return 1;
    }
    return rerr(r, line, "unsupported test '%s' (supported: defined, undefined, none, string, number, integer, "
                "float, boolean, true, false, mapping, sequence, iterable, callable, odd, even, divisibleby, eq, ne, in, lower, upper)", name);
}

static val apply_filter(rctx *r, frame *f, node *n, val v, argv_t *a);

static val filter_select(rctx *r, frame *f, node *n, val v, argv_t *a, int reject) {
    vlist *l, *out = list_new(r, 4);
    if (!out || iterate(r, n->line, v, &l)) return V_UNDEFINED;
    val *attr = kwarg(a, "attribute", 0);
    val *test = kwarg(a, "test", 1);
    if (need_str(r, n->line, attr, n->s)) return V_UNDEFINED;
    argv_t rest = {a->v + (a->n > 2 ? 2 : a->n), a->kw + (a->n > 2 ? 2 : a->n), a->n > 2 ? a->n - 2 : 0};
    for (size_t i = 0; i < l->n; i++) {
        val x = get_attr(r, n->line, l->v[i], attr->u.s.s, attr->u.s.n);
        int t;
        if (test) { if (test->t != V_STR) { rerr(r, n->line, "%s: test name must be a string", n->s); return V_UNDEFINED; }
            char *tn = jinja_alloc(&r->ar, test->u.s.n + 1);
            memcpy(tn, test->u.s.s, test->u.s.n);
            t = test_value(r, n->line, x, tn, &rest);
        } else t = truthy(x);
        if (t < 0 || r->failed) return V_UNDEFINED;
        if (t != reject) list_push(r, out, l->v[i]);
    }
    (void)f;
    return mklist(out);
}

static val apply_filter(rctx *r, frame *f, node *n, val v, argv_t *a) {
    const char *name = n->s;
    int line = n->line;
    if (!strcmp(name, "trim") || !strcmp(name, "strip")) {
        val s = stringify(r, v);
        return str_strip(r, s, 1, 1, kwarg(a, "chars", 0));
    }
    if (!strcmp(name, "length") || !strcmp(name, "count")) {
        long long k = length_of(r, v);
        if (k < 0) { rerr(r, line, "length of a %s", type_name(v)); return V_UNDEFINED; }
        return mkint(k);
    }
    if (!strcmp(name, "tojson")) {
        val *ind = kwarg(a, "indent", 0);
        sbuf b = {NULL, 0, 0, r};
        sb_add(&b, "", 0);
        if (to_json(r, &b, v, ind && ind->t == V_INT ? (int)ind->u.i : -1, 0, line)) return V_UNDEFINED;
        return mkstr(b.s, b.n);
    }
    if (!strcmp(name, "string")) return stringify(r, v);
    if (!strcmp(name, "upper") || !strcmp(name, "lower") || !strcmp(name, "capitalize") || !strcmp(name, "title")) {
        val s = stringify(r, v);
        return str_case(r, s, name[0] == 'l' ? 0 : name[0] == 'u' ? 1 : name[0] == 'c' ? 2 : 3);
    }
    if (!strcmp(name, "safe")) return v;
    if (!strcmp(name, "default") || !strcmp(name, "d")) {
        val *d = kwarg(a, "default_value", 0), *b = kwarg(a, "boolean", 1);
        int use = v.t == V_UNDEF || (b && truthy(*b) && !truthy(v));
        return use ? (d ? *d : mkstr("", 0)) : v;
    }
    if (!strcmp(name, "first") || !strcmp(name, "last")) {
        vlist *l;
        if (iterate(r, line, v, &l)) return V_UNDEFINED;
        if (!l->n) return V_UNDEFINED;
        return l->v[name[0] == 'f' ? 0 : l->n - 1];
    }
    if (!strcmp(name, "list")) {
        vlist *l;
        if (iterate(r, line, v, &l)) return V_UNDEFINED;
        return mklist(l);
    }
    if (!strcmp(name, "reverse")) {
        if (v.t == V_STR) { val m1 = mkint(-1); return do_slice(r, line, v, NULL, NULL, &m1); }
        vlist *l, *o = list_new(r, 4);
        if (!o || iterate(r, line, v, &l)) return V_UNDEFINED;
        for (size_t i = l->n; i-- > 0;) list_push(r, o, l->v[i]);
        return mklist(o);
    }
    if (!strcmp(name, "join")) {
        val *sep = kwarg(a, "d", 0), *attr = kwarg(a, "attribute", 1);
        vlist *l;
        if (iterate(r, line, v, &l)) return V_UNDEFINED;
        sbuf b = {NULL, 0, 0, r};
        sb_add(&b, "", 0);
        for (size_t i = 0; i < l->n; i++) {
            if (i && sep) { val s = stringify(r, *sep); sb_add(&b, s.u.s.s, s.u.s.n); }
            val x = l->v[i];
            if (attr && attr->t == V_STR) x = get_attr(r, line, x, attr->u.s.s, attr->u.s.n);
            val s = stringify(r, x);
            sb_add(&b, s.u.s.s, s.u.s.n);
        }
        return mkstr(b.s, b.n);
    }
    if (!strcmp(name, "replace")) {
        val *x = kwarg(a, "old", 0), *y = kwarg(a, "new", 1), *c = kwarg(a, "count", 2);
        if (need_str(r, line, x, "replace") || need_str(r, line, y, "replace")) return V_UNDEFINED;
        return str_replace(r, stringify(r, v), *x, *y, c && c->t == V_INT ? c->u.i : -1);
    }
    if (!strcmp(name, "int")) {
        if (v.t == V_INT) return v;
        if (v.t == V_FLOAT) return mkint((long long)v.u.f);
        if (v.t == V_BOOL) return mkint(v.u.b);
        if (v.t == V_STR) { char *e; char tmp[64]; snprintf(tmp, sizeof tmp, "%.*s", (int)v.u.s.n, v.u.s.s);
            long long k = strtoll(tmp, &e, 10); return mkint(*e ? 0 : k); }
        return mkint(0);
    }
    if (!strcmp(name, "float")) {
        val o = {V_FLOAT, {0}};
        o.u.f = is_num(v) ? num(v) : 0;
        return o;
    }
    if (!strcmp(name, "abs")) {
        if (v.t == V_INT) {
            if (v.u.i == LLONG_MIN) { rerr(r, line, "integer overflow in abs (template integers are 64-bit)"); return V_UNDEFINED; }
            return mkint(v.u.i < 0 ? -v.u.i : v.u.i);
        }
        if (v.t == V_FLOAT) { val o = v; o.u.f = fabs(v.u.f); return o; }
        rerr(r, line, "abs of a %s", type_name(v));
        return V_UNDEFINED;
    }
    if (!strcmp(name, "items")) {
        if (v.t != V_DICT) { rerr(r, line, "items of a %s", type_name(v)); return V_UNDEFINED; }
        argv_t none = {NULL, NULL, 0};
        return call_method(r, line, v, "items", &none);
    }
    if (!strcmp(name, "selectattr") || !strcmp(name, "rejectattr")) return filter_select(r, f, n, v, a, name[0] == 'r');
    if (!strcmp(name, "map")) {
        val *attr = kwarg(a, "attribute", 99);
        vlist *l, *o = list_new(r, 4);
        if (!o || iterate(r, line, v, &l)) return V_UNDEFINED;
        if (attr && attr->t == V_STR) {
            for (size_t i = 0; i < l->n; i++) list_push(r, o, get_attr(r, line, l->v[i], attr->u.s.s, attr->u.s.n));
            return mklist(o);
        }
        val *fname = kwarg(a, "filter", 0);
        if (need_str(r, line, fname, "map")) return V_UNDEFINED;
        node fn = *n;
        char *nm = jinja_alloc(&r->ar, fname->u.s.n + 1);
        memcpy(nm, fname->u.s.s, fname->u.s.n);
        fn.s = nm;
        argv_t rest = {a->v + 1, a->kw + 1, a->n - 1};
        for (size_t i = 0; i < l->n && !r->failed; i++) list_push(r, o, apply_filter(r, f, &fn, l->v[i], &rest));
        return mklist(o);
    }
    rerr(r, line, "unsupported filter '%s' (supported: trim, length, count, tojson, string, upper, lower, capitalize, "
         "title, safe, default, first, last, list, reverse, join, replace, int, float, abs, items, selectattr, rejectattr, map)", name);
    return V_UNDEFINED;
}

static val call_global(rctx *r, int line, const char *fn, argv_t *a) {
    if (!strcmp(fn, "raise_exception")) {
        val *m = kwarg(a, "message", 0);
        val s = m ? stringify(r, *m) : mkstr("", 0);
        rerr(r, line, "the template raised an exception: %.*s", (int)s.u.s.n, s.u.s.s);
        return V_UNDEFINED;
    }
    if (!strcmp(fn, "namespace") || !strcmp(fn, "dict")) {
        vdict *d = dict_new(r);
        if (!d) return V_UNDEFINED;
        d->ns = fn[0] == 'n';
        for (int i = 0; i < a->n; i++) {
            if (!a->kw[i]) {
                if (a->v[i].t == V_DICT) { for (size_t k = 0; k < a->v[i].u.d->n; k++) dict_set(r, d, a->v[i].u.d->k[k], a->v[i].u.d->kn[k], a->v[i].u.d->v[k]); continue; }
                rerr(r, line, "%s() takes keyword arguments", fn);
                return V_UNDEFINED;
            }
            dict_set(r, d, a->kw[i], strlen(a->kw[i]), a->v[i]);
        }
        return mkdict(d);
    }
    if (!strcmp(fn, "range")) {
        long long lo = 0, hi, st = 1;
        for (int i = 0; i < a->n; i++) if (a->v[i].t != V_INT) { rerr(r, line, "range() needs integers"); return V_UNDEFINED; }
        if (a->n == 1) hi = a->v[0].u.i;
        else if (a->n >= 2) { lo = a->v[0].u.i; hi = a->v[1].u.i; if (a->n > 2) st = a->v[2].u.i; }
        else { rerr(r, line, "range() needs arguments"); return V_UNDEFINED; }
        if (st == 0 || (hi - lo) / st > 100000) { rerr(r, line, "range() too long or zero step"); return V_UNDEFINED; }
        vlist *l = list_new(r, 4);
        if (!l) return V_UNDEFINED;
        for (long long i = lo; st > 0 ? i < hi : i > hi; i += st) list_push(r, l, mkint(i));
        return mklist(l);
    }
    if (!strcmp(fn, "strftime_now")) {
        val *fmt = kwarg(a, "format", 0);
        if (need_str(r, line, fmt, "strftime_now")) return V_UNDEFINED;
        char f2[256], out[256];
        snprintf(f2, sizeof f2, "%.*s", (int)fmt->u.s.n, fmt->u.s.s);
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        size_t k = strftime(out, sizeof out, f2, &tm);
        char *s = jinja_alloc(&r->ar, k + 1);
        if (!s) return V_UNDEFINED;
        memcpy(s, out, k);
        return mkstr(s, k);
    }
    rerr(r, line, "unknown function '%s'", fn);
    return V_UNDEFINED;
}

/* E_NAME: a variable, or one of the global functions */
static val eval_name(frame *f, node *n) {
    val *v = lookup(f, n->s);
    if (v) return *v;
    if (!strcmp(n->s, "raise_exception") || !strcmp(n->s, "namespace") || !strcmp(n->s, "range") ||
        !strcmp(n->s, "strftime_now") || !strcmp(n->s, "dict")) {
        val fv = {V_FUNC, {0}};
        fv.u.fn = n->s;
        return fv;
    }
    return V_UNDEFINED;
}

/* E_CALL: a method call (obj.name(...)) or a call of a global function */
static val eval_call(rctx *r, frame *f, node *n) {
    argv_t a;
    if (n->a->kind == E_ATTR) { /* a method call */
        val o = eval(r, f, n->a->a);
        if (r->failed) return V_UNDEFINED;
        if (o.t == V_UNDEF) { rerr(r, n->line, "'%s' called on an undefined value", n->a->s); return V_UNDEFINED; }
        if (eval_args(r, f, n, &a)) return V_UNDEFINED;
        if (o.t == V_DICT) {
            val *fv = dict_get(o.u.d, n->a->s, strlen(n->a->s));
            if (fv && fv->t == V_FUNC) return call_global(r, n->line, fv->u.fn, &a);
        }
        return call_method(r, n->line, o, n->a->s, &a);
    }
    val fnv = eval(r, f, n->a);
    if (r->failed) return V_UNDEFINED;
    if (fnv.t != V_FUNC) { rerr(r, n->line, "calling a %s, which is not a function", type_name(fnv)); return V_UNDEFINED; }
    if (eval_args(r, f, n, &a)) return V_UNDEFINED;
    return call_global(r, n->line, fnv.u.fn, &a);
}

/* the numeric binary operators of E_BIN (and the error for unsupported operand types) */
static val eval_arith(rctx *r, node *n, const char *op, val a, val b) {
    if (is_num(a) && is_num(b)) {
        int ints = a.t != V_FLOAT && b.t != V_FLOAT;
        long long x = a.t == V_INT ? a.u.i : a.u.b, y = b.t == V_INT ? b.u.i : b.u.b;
        double fx = num(a), fy = num(b);
        val o = {V_FLOAT, {0}};
        switch (op[0]) {
        long long z;
        case '+': if (ints) { if (__builtin_add_overflow(x, y, &z)) goto overflow; return mkint(z); } o.u.f = fx + fy; return o;
        case '-': if (ints) { if (__builtin_sub_overflow(x, y, &z)) goto overflow; return mkint(z); } o.u.f = fx - fy; return o;
        case '*':
            if (op[1] == '*') {
                if (ints && y >= 0) { /* by squaring; Python's ints are unbounded, ours are 64-bit: overflow is an error */
                    long long p = 1, bse = x;
                    for (long long e = y; e > 0; e >>= 1) {
                        if ((e & 1) && __builtin_mul_overflow(p, bse, &p)) goto overflow;
                        if (e > 1 && __builtin_mul_overflow(bse, bse, &bse)) goto overflow;
                    }
                    return mkint(p);
                }
                o.u.f = pow(fx, fy);
                return o;
            }
            if (ints) { if (__builtin_mul_overflow(x, y, &z)) goto overflow; return mkint(z); }
            o.u.f = fx * fy;
            return o;
        case '/':
            if (fy == 0) { rerr(r, n->line, "division by zero"); return V_UNDEFINED; }
            if (ints && y == -1 && x == LLONG_MIN) goto overflow;
            if (op[1] == '/') { if (ints) { long long q = x / y; if ((x % y != 0) && ((x < 0) != (y < 0))) q--; return mkint(q); } o.u.f = floor(fx / fy); return o; }
            o.u.f = fx / fy; return o;
        case '%':
            if (fy == 0) { rerr(r, n->line, "modulo by zero"); return V_UNDEFINED; }
            if (ints) { if (y == -1) return mkint(0); long long m = x % y; if (m != 0 && ((m < 0) != (y < 0))) m += y; return mkint(m); }
            o.u.f = fmod(fx, fy); if (o.u.f != 0 && ((o.u.f < 0) != (fy < 0))) o.u.f += fy; return o;
        }
    }
    if (0) {
    overflow:
        rerr(r, n->line, "integer overflow in '%s' (template integers are 64-bit)", op);
        return V_UNDEFINED;
    }
    rerr(r, n->line, "unsupported operand types for %s: %s and %s", op, type_name(a), type_name(b));
    return V_UNDEFINED;
}

/* E_BIN: ~, comparisons, membership, and the string/list forms of + and * */
static val eval_bin(rctx *r, frame *f, node *n) {
    val a = eval(r, f, n->a), b = eval(r, f, n->b);
    if (r->failed) return V_UNDEFINED;
    const char *op = n->s;
    if (!strcmp(op, "~")) {
        val x = stringify(r, a), y = stringify(r, b);
        char *s = jinja_alloc(&r->ar, x.u.s.n + y.u.s.n + 1);
        if (!s) return V_UNDEFINED;
        memcpy(s, x.u.s.s, x.u.s.n);
        memcpy(s + x.u.s.n, y.u.s.s, y.u.s.n);
        return mkstr(s, x.u.s.n + y.u.s.n);
    }
    if (!strcmp(op, "==")) return mkbool(vequal(a, b));
    if (!strcmp(op, "!=")) return mkbool(!vequal(a, b));
    if (!strcmp(op, "in") || !strcmp(op, "notin")) {
        int res;
        if (b.t == V_STR) {
            if (a.t != V_STR) { rerr(r, n->line, "'in <string>' requires a string on the left, got %s", type_name(a)); return V_UNDEFINED; }
            res = !a.u.s.n || memmem(b.u.s.s, b.u.s.n, a.u.s.s, a.u.s.n) != NULL;
        } else if (b.t == V_DICT) res = a.t == V_STR && dict_get(b.u.d, a.u.s.s, a.u.s.n) != NULL;
        else if (b.t == V_LIST) { res = 0; for (size_t i = 0; i < b.u.l->n && !res; i++) res = vequal(a, b.u.l->v[i]); }
        else { rerr(r, n->line, "'in' on a %s", type_name(b)); return V_UNDEFINED; }
        return mkbool(op[0] == 'i' ? res : !res);
    }
    if (op[0] == '<' || op[0] == '>') {
        int c = vcompare(a, b);
        if (c == 2) { rerr(r, n->line, "cannot compare %s with %s", type_name(a), type_name(b)); return V_UNDEFINED; }
        if (!strcmp(op, "<")) return mkbool(c < 0);
        if (!strcmp(op, "<=")) return mkbool(c <= 0);
        if (!strcmp(op, ">")) return mkbool(c > 0);
        return mkbool(c >= 0);
    }
    if (!strcmp(op, "+")) {
        if (a.t == V_STR && b.t == V_STR) {
            char *s = jinja_alloc(&r->ar, a.u.s.n + b.u.s.n + 1);
            if (!s) return V_UNDEFINED;
            memcpy(s, a.u.s.s, a.u.s.n);
            memcpy(s + a.u.s.n, b.u.s.s, b.u.s.n);
            return mkstr(s, a.u.s.n + b.u.s.n);
        }
        if (a.t == V_LIST && b.t == V_LIST) {
            vlist *l = list_new(r, a.u.l->n + b.u.l->n);
            if (!l) return V_UNDEFINED;
            for (size_t i = 0; i < a.u.l->n; i++) list_push(r, l, a.u.l->v[i]);
            for (size_t i = 0; i < b.u.l->n; i++) list_push(r, l, b.u.l->v[i]);
            return mklist(l);
        }
    }
    if (!strcmp(op, "*") && ((a.t == V_STR && b.t == V_INT) || (a.t == V_INT && b.t == V_STR))) {
        val s = a.t == V_STR ? a : b;
        long long k = a.t == V_INT ? a.u.i : b.u.i;
        if (k < 0) k = 0;
        if ((size_t)k * s.u.s.n > (1u << 24)) { rerr(r, n->line, "string repetition too long"); return V_UNDEFINED; }
        sbuf sb = {NULL, 0, 0, r};
        sb_add(&sb, "", 0);
        for (long long i = 0; i < k; i++) sb_add(&sb, s.u.s.s, s.u.s.n);
        return mkstr(sb.s, sb.n);
    }
    return eval_arith(r, n, op, a, b);
}

static val eval(rctx *r, frame *f, node *n) {
    if (r->failed) return V_UNDEFINED;
    switch (n->kind) {
    case E_LIT: return *n->lit;
    case E_NAME: return eval_name(f, n);
    case E_ATTR: {
        val o = eval(r, f, n->a);
        if (r->failed) return V_UNDEFINED;
        return get_attr(r, n->line, o, n->s, strlen(n->s));
    }
    case E_ITEM: {
        val o = eval(r, f, n->a), k = eval(r, f, n->b);
        if (r->failed) return V_UNDEFINED;
        return get_item(r, n->line, o, k);
    }
    case E_SLICE: {
        val o = eval(r, f, n->a);
        val a = n->b ? eval(r, f, n->b) : mknone(), b = n->c ? eval(r, f, n->c) : mknone(), c = n->body ? eval(r, f, n->body) : mknone();
        if (r->failed) return V_UNDEFINED;
        return do_slice(r, n->line, o, &a, &b, &c);
    }
    case E_CALL: return eval_call(r, f, n);
    case E_FILTER: {
        val v = eval(r, f, n->a);
        argv_t a;
        if (r->failed || eval_args(r, f, n, &a)) return V_UNDEFINED;
        return apply_filter(r, f, n, v, &a);
    }
    case E_TEST: {
        val v = eval(r, f, n->a);
        argv_t a;
        if (r->failed || eval_args(r, f, n, &a)) return V_UNDEFINED;
        int t = test_value(r, n->line, v, n->s, &a);
        return t < 0 ? V_UNDEFINED : mkbool(t);
    }
    case E_NOT: { val v = eval(r, f, n->a); return mkbool(!truthy(v)); }
    case E_NEG: {
        val v = eval(r, f, n->a);
        if (v.t == V_INT) {
            if (v.u.i == LLONG_MIN) { rerr(r, n->line, "integer overflow in unary minus (template integers are 64-bit)"); return V_UNDEFINED; }
            return mkint(-v.u.i);
        }
        if (v.t == V_FLOAT) { v.u.f = -v.u.f; return v; }
        if (!r->failed) rerr(r, n->line, "unary minus on a %s", type_name(v));
        return V_UNDEFINED;
    }
    case E_AND: { val a = eval(r, f, n->a); if (!truthy(a)) return a; return eval(r, f, n->b); }
    case E_OR: { val a = eval(r, f, n->a); if (truthy(a)) return a; return eval(r, f, n->b); }
    case E_COND: {
        val c = eval(r, f, n->a);
        if (truthy(c)) return eval(r, f, n->b);
        return n->c ? eval(r, f, n->c) : V_UNDEFINED;
    }
    case E_LIST: {
        vlist *l = list_new(r, (size_t)n->nargs);
        if (!l) return V_UNDEFINED;
        for (int i = 0; i < n->nargs; i++) list_push(r, l, eval(r, f, n->args[i]));
        return mklist(l);
    }
    case E_DICT: {
        vdict *d = dict_new(r);
        if (!d) return V_UNDEFINED;
        for (int i = 0; i + 1 < n->nargs; i += 2) {
            val k = eval(r, f, n->args[i]), v = eval(r, f, n->args[i + 1]);
            if (k.t != V_STR) { if (!r->failed) rerr(r, n->line, "dict keys must be strings"); return V_UNDEFINED; }
            dict_set(r, d, k.u.s.s, k.u.s.n, v);
        }
        return mkdict(d);
    }
    case E_BIN: return eval_bin(r, f, n);
    }
    rerr(r, n->line, "internal: bad expression node");
    return V_UNDEFINED;
}

static int exec_body(rctx *r, frame *f, node *n);

static int exec_node(rctx *r, frame *f, node *n) {
    switch (n->kind) {
    case N_TEXT: return emit(r, n->s, n->n);
    case N_OUT: {
        val v = eval(r, f, n->a);
        if (r->failed) return -1;
        if (v.t == V_STR) return emit(r, v.u.s.s, v.u.s.n);
        val s = stringify(r, v);
        return emit(r, s.u.s.s, s.u.s.n);
    }
    case N_IF: {
        val c = eval(r, f, n->a);
        if (r->failed) return -1;
        if (truthy(c)) return exec_body(r, f, n->body);
        return exec_body(r, f, n->orelse);
    }
    case N_SET: {
        val v = eval(r, f, n->a);
        if (r->failed) return -1;
        if (n->attr) {
            val *ns = lookup(f, n->s);
            if (!ns || ns->t != V_DICT || !ns->u.d->ns) return rerr(r, n->line, "set %s.%s: '%s' is not a namespace", n->s, n->attr, n->s);
            dict_set(r, ns->u.d, n->attr, strlen(n->attr), v);
        } else dict_set(r, f->vars, n->s, strlen(n->s), v);
        return r->failed ? -1 : 0;
    }
    case N_BREAK: r->brk = 1; return 0;
    case N_CONTINUE: r->brk = 2; return 0;
    case N_FOR: {
        val it = eval(r, f, n->a);
        vlist *l;
        if (r->failed || iterate(r, n->line, it, &l)) return -1;
        /* the `if` filter decides which items count (loop.length and friends see only those) */
        vlist *items = l;
        if (n->b) {
            items = list_new(r, l->n);
            if (!items) return -1;
            for (size_t i = 0; i < l->n; i++) {
                frame fr = {f, dict_new(r)};
                if (!fr.vars) return -1;
                if (n->ntargets == 1) dict_set(r, fr.vars, n->targets[0], strlen(n->targets[0]), l->v[i]);
                else if (l->v[i].t == V_LIST) for (int k = 0; k < n->ntargets && (size_t)k < l->v[i].u.l->n; k++)
                    dict_set(r, fr.vars, n->targets[k], strlen(n->targets[k]), l->v[i].u.l->v[k]);
                val c = eval(r, &fr, n->b);
                if (r->failed) return -1;
                if (truthy(c)) list_push(r, items, l->v[i]);
            }
        }
        size_t cnt = items->n;
        for (size_t i = 0; i < cnt; i++) {
            frame fr = {f, dict_new(r)};
            vdict *loop = dict_new(r);
            if (!fr.vars || !loop) return rerr(r, n->line, "out of memory");
            val item = items->v[i];
            if (n->ntargets == 1) dict_set(r, fr.vars, n->targets[0], strlen(n->targets[0]), item);
            else {
                if (item.t != V_LIST || item.u.l->n != (size_t)n->ntargets)
                    return rerr(r, n->line, "cannot unpack a %s into %d loop variables", type_name(item), n->ntargets);
                for (int k = 0; k < n->ntargets; k++) dict_set(r, fr.vars, n->targets[k], strlen(n->targets[k]), item.u.l->v[k]);
            }
            dict_set(r, loop, "index", 5, mkint((long long)i + 1));
            dict_set(r, loop, "index0", 6, mkint((long long)i));
            dict_set(r, loop, "revindex", 8, mkint((long long)(cnt - i)));
            dict_set(r, loop, "revindex0", 9, mkint((long long)(cnt - i - 1)));
            dict_set(r, loop, "first", 5, mkbool(i == 0));
            dict_set(r, loop, "last", 4, mkbool(i + 1 == cnt));
            dict_set(r, loop, "length", 6, mkint((long long)cnt));
            dict_set(r, loop, "previtem", 8, i > 0 ? items->v[i - 1] : V_UNDEFINED);
            dict_set(r, loop, "nextitem", 8, i + 1 < cnt ? items->v[i + 1] : V_UNDEFINED);
            dict_set(r, fr.vars, "loop", 4, mkdict(loop));
            if (exec_body(r, &fr, n->body)) return -1;
            if (r->brk == 1) { r->brk = 0; break; }
            r->brk = 0;
        }
        if (cnt == 0 && n->orelse) return exec_body(r, f, n->orelse);
        return 0;
    }
    }
    return rerr(r, n->line, "internal: bad statement node");
}

static int exec_body(rctx *r, frame *f, node *n) {
    for (; n; n = n->next) {
        if (exec_node(r, f, n)) return -1;
        if (r->failed) return -1;
        if (r->brk) return 0;
    }
    return 0;
}

jr_status jinja_render(const struct jinja_tpl *t, json_t *ctx, char **out, size_t *len) {
    *out = NULL;
    rctx r;
    memset(&r, 0, sizeof r);
    r.name = t->name;
    frame top = {NULL, dict_new(&r)};
    if (!top.vars) return jr_fail(JR_ENOMEM, "out of memory");
    const char *k;
    json_t *v;
    json_object_foreach(ctx, k, v) dict_set(&r, top.vars, k, strlen(k), from_json(&r, v));
    frame body = {&top, dict_new(&r)};
    if (!body.vars || emit(&r, "", 0) || exec_body(&r, &body, t->body) || r.failed) {
        jr_status st = jr_fail(JR_EINVAL, "%s", r.failed ? r.err : "out of memory");
        jr_strbuf_free(&r.out);
        jinja_arena_free(&r.ar);
        return st;
    }
    jinja_arena_free(&r.ar);
    if (len) *len = r.out.n;
    *out = jr_strbuf_take(&r.out);
    return JR_OK;
}

