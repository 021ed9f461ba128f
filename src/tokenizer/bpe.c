/* bpe.c - HF byte-level BPE at run time: encoding (normalizers, pre-tokenizers, merges, word caches),
 * decoding and streaming decode; loading is bpe_load.c */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <jansson.h>
#include <pcre2.h>
#include <utf8proc.h>

#include "judgerl/fsutil.h"
#include "judgerl/strbuf.h"
#include "judgerl/utf8.h"
#include "tokenizer/jinja.h"
#include "tokenizer/bpe_internal.h"

/* ------------------------------------------------------------------ small helpers */

void jr_ids_free(jr_ids *v) {
    free(v->ids);
    v->ids = NULL;
    v->n = v->cap = 0;
}

jr_status jr_ids_push(jr_ids *v, int32_t id) {
    if (v->n == v->cap) {
        size_t nc = v->cap ? v->cap * 2 : 64;
        int32_t *p = jr_realloc(v->ids, nc * sizeof *p);
        if (!p) return JR_ENOMEM;
        v->ids = p;
        v->cap = nc;
    }
    v->ids[v->n++] = id;
    return JR_OK;
}

void tok_wcache_clear(struct tok_wcache *w) {
    free(w->e);
    jr_strbuf_free(&w->bytes);
    jr_ids_free(&w->ids);
    w->e = NULL;
    w->cap = w->n = 0;
}

/* ------------------------------------------------------------------ encoding */

/* A scratch byte buffer with spans into it. */
typedef struct { size_t off, len; } span;
typedef struct {
    span *s;
    size_t n, cap;
} spans;

static jr_status spans_push(spans *v, size_t off, size_t len) {
    if (v->n == v->cap) {
        size_t nc = v->cap ? v->cap * 2 : 64;
        span *p = jr_realloc(v->s, nc * sizeof *p);
        if (!p) return JR_ENOMEM;
        v->s = p;
        v->cap = nc;
    }
    v->s[v->n].off = off;
    v->s[v->n].len = len;
    v->n++;
    return JR_OK;
}

typedef struct {
    const jr_tokenizer *t;
    pcre2_match_data *md;
    jr_strbuf text;      /* normalized pieces and prefixed copies */
    spans a, b;     /* pre-tokenizer work lists */
    /* BPE work arrays */
    int32_t *sym, *prev, *next;
    size_t symcap;
    uint64_t *heap;
    size_t heapn, heapcap;
    struct tok_wcache *wc;   /* the word cache this call holds (shared slot or own) */
    struct tok_wcache *own;  /* a private cache when every shared slot is busy */
} enc_ctx;

static void enc_free(enc_ctx *c) {
    if (c->md) pcre2_match_data_free(c->md);
    free(c->text.p);
    free(c->a.s);
    free(c->b.s);
    free(c->sym);
    free(c->prev);
    free(c->next);
    free(c->heap);
    if (c->own) { tok_wcache_clear(c->own); free(c->own); }
    else if (c->wc) pthread_mutex_unlock(&c->wc->mu);
}

/* heap of (rank << 32 | pos), min first: lowest rank, then leftmost */
static jr_status heap_push(enc_ctx *c, uint64_t v) {
    if (c->heapn == c->heapcap) {
        size_t nc = c->heapcap ? c->heapcap * 2 : 256;
        uint64_t *h = jr_realloc(c->heap, nc * sizeof *h);
        if (!h) return JR_ENOMEM;
        c->heap = h;
        c->heapcap = nc;
    }
    size_t i = c->heapn++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (c->heap[p] <= v) break;
        c->heap[i] = c->heap[p];
        i = p;
    }
    c->heap[i] = v;
    return JR_OK;
}

static uint64_t heap_pop(enc_ctx *c) {
    uint64_t top = c->heap[0], v = c->heap[--c->heapn];
    size_t i = 0, n = c->heapn;
    for (;;) {
        size_t l = 2 * i + 1;
        if (l >= n) break;
        if (l + 1 < n && c->heap[l + 1] < c->heap[l]) l++;
        if (c->heap[l] >= v) break;
        c->heap[i] = c->heap[l];
        i = l;
    }
    if (n) c->heap[i] = v;
    return top;
}

/* BPE on one pre-token's bytes: appends the ids to out. */
static jr_status bpe_merge(enc_ctx *c, const char *w, size_t n, jr_ids *out) {
    const jr_tokenizer *t = c->t;
    if (n == 0) return JR_OK;
    if (n == 1) return jr_ids_push(out, t->byte_id[(unsigned char)w[0]]);
    if (t->ignore_merges) {
        int32_t id = tok_strmap_get(&t->vocab, w, n);
        if (id >= 0) return jr_ids_push(out, id);
    }
    if (n > c->symcap) {
        size_t nc = n * 2;
        int32_t *a = jr_realloc(c->sym, nc * sizeof *a);
        if (!a) return JR_ENOMEM;
        c->sym = a;
        if (!(a = jr_realloc(c->prev, nc * sizeof *a))) return JR_ENOMEM;
        c->prev = a;
        if (!(a = jr_realloc(c->next, nc * sizeof *a))) return JR_ENOMEM;
        c->next = a;
        c->symcap = nc;
    }
    int32_t *sym = c->sym, *prev = c->prev, *next = c->next;
    for (size_t i = 0; i < n; i++) {
        sym[i] = t->byte_id[(unsigned char)w[i]];
        prev[i] = (int32_t)i - 1;
        next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
    }
    c->heapn = 0;
    int32_t rank, merged;
    for (size_t i = 0; i + 1 < n; i++)
        if (tok_pairmap_get(&t->merges, sym[i], sym[i + 1], &rank, &merged))
            if (heap_push(c, ((uint64_t)(uint32_t)rank << 32) | i)) return JR_ENOMEM;
    while (c->heapn) {
        uint64_t top = heap_pop(c);
        int32_t pos = (int32_t)(uint32_t)top, r = (int32_t)(top >> 32);
        if (sym[pos] < 0) continue;            /* merged away */
        int32_t nx = next[pos];
        if (nx < 0) continue;
        if (!tok_pairmap_get(&t->merges, sym[pos], sym[nx], &rank, &merged) || rank != r) continue; /* stale */
        sym[pos] = merged;
        sym[nx] = -1;
        next[pos] = next[nx];
        if (next[nx] >= 0) prev[next[nx]] = pos;
        if (prev[pos] >= 0 && tok_pairmap_get(&t->merges, sym[prev[pos]], sym[pos], &rank, &merged))
            if (heap_push(c, ((uint64_t)(uint32_t)rank << 32) | (uint32_t)prev[pos])) return JR_ENOMEM;
        if (next[pos] >= 0 && tok_pairmap_get(&t->merges, sym[pos], sym[next[pos]], &rank, &merged))
            if (heap_push(c, ((uint64_t)(uint32_t)rank << 32) | (uint32_t)pos)) return JR_ENOMEM;
    }
    for (int32_t i = 0; i >= 0; i = next[i])
        if (jr_ids_push(out, sym[i])) return JR_ENOMEM;
    return JR_OK;
}

/* bpe_merge through the word cache. */
static jr_status bpe_word(enc_ctx *c, const char *w, size_t n, jr_ids *out) {
    struct tok_wcache *wc = c->wc;
    if (n < 2 || n > WC_MAX_WORD || !wc) return bpe_merge(c, w, n, out);
    if (!wc->e) {
        wc->e = calloc(WC_CAP, sizeof *wc->e);
        wc->cap = WC_CAP;
        if (!wc->e) return bpe_merge(c, w, n, out);
    }
    uint64_t h = tok_hash_bytes(w, n) | 1;
    size_t i = h & (wc->cap - 1);
    while (wc->e[i].h) {
        struct wc_ent *e = &wc->e[i];
        if (e->h == h && e->len == n && !memcmp(wc->bytes.p + e->off, w, n)) {
            for (uint32_t k = 0; k < e->n_ids; k++)
                if (jr_ids_push(out, wc->ids.ids[e->id_off + k])) return JR_ENOMEM;
            return JR_OK;
        }
        i = (i + 1) & (wc->cap - 1);
    }
    size_t n0 = out->n;
    jr_status st = bpe_merge(c, w, n, out);
    if (st) return st;
    if (wc->n * 2 >= wc->cap) { /* full: start over */
        memset(wc->e, 0, wc->cap * sizeof *wc->e);
        wc->n = 0;
        jr_strbuf_reset(&wc->bytes);
        wc->ids.n = 0;
        i = h & (wc->cap - 1);
    }
    struct wc_ent e = {h, (uint32_t)wc->bytes.n, (uint32_t)n, (uint32_t)wc->ids.n, (uint32_t)(out->n - n0)};
    if (tok_buf_add(&wc->bytes, w, n)) return JR_ENOMEM;
    for (size_t k = n0; k < out->n; k++)
        if (jr_ids_push(&wc->ids, out->ids[k])) return JR_ENOMEM;
    wc->e[i] = e;
    wc->n++;
    return JR_OK;
}

/* Splits each span of `in` by the regex into `out` following the Split behavior. */
static jr_status pre_split(enc_ctx *c, const tok_pre *p, spans *in, spans *out) {
    out->n = 0;
    pcre2_code *re = p->re;
    for (size_t k = 0; k < in->n; k++) {
        size_t off = in->s[k].off, len = in->s[k].len;
        const char *s = c->text.p + off;
        size_t pos = 0;
        /* collect (start, end, is_match) pieces */
        size_t pend_start = 0; /* MergedWithNext: start of pending piece */
        int have_pend = 0;
        size_t last_end = 0;
        while (pos <= len) {
            int rc = pcre2_match(re, (PCRE2_SPTR)s, len, pos, PCRE2_NO_UTF_CHECK, c->md, NULL);
            size_t ms, me;
            if (rc < 0) {
                if (rc != PCRE2_ERROR_NOMATCH) return jr_fail(JR_EINTERNAL, "%s: regex match failed (%d)", c->t->name, rc);
                ms = me = len + 1; /* sentinel */
            } else {
                PCRE2_SIZE *ov = pcre2_get_ovector_pointer(c->md);
                ms = ov[0];
                me = ov[1];
                if (me == ms) { /* empty match: skip one character */
                    size_t adv = ms + 1;
                    while (adv < len && (s[adv] & 0xC0) == 0x80) adv++;
                    pos = adv;
                    if (ms >= len) break;
                    continue;
                }
            }
            size_t gs = last_end, ge = ms > len ? len : ms; /* gap before the match */
            int final = ms > len;
            /* pieces: gap [gs,ge) as non-match, match [ms,me) as match; invert swaps roles */
            for (int part = 0; part < 2; part++) {
                size_t a = part ? ms : gs, b = part ? me : ge;
                if (part && final) break;
                if (a >= b) continue;
                int is_delim = part ^ p->invert; /* the regex matches the delimiter unless inverted */
                switch (p->behavior) {
                case BEH_ISOLATED:
                    if (spans_push(out, off + a, b - a)) return JR_ENOMEM;
                    break;
                case BEH_REMOVED:
                    if (!is_delim && spans_push(out, off + a, b - a)) return JR_ENOMEM;
                    break;
                case BEH_MERGED_PREV:
                    if (is_delim && out->n && have_pend) out->s[out->n - 1].len = off + b - out->s[out->n - 1].off;
                    else if (spans_push(out, off + a, b - a)) return JR_ENOMEM;
                    have_pend = 1;
                    break;
                case BEH_MERGED_NEXT:
                    if (is_delim) { if (!have_pend) { pend_start = a; have_pend = 1; } }
                    else {
                        if (spans_push(out, off + (have_pend ? pend_start : a), b - (have_pend ? pend_start : a))) return JR_ENOMEM;
                        have_pend = 0;
                    }
                    break;
                case BEH_CONTIGUOUS:
                    if (is_delim && have_pend == 2 && out->n) out->s[out->n - 1].len = off + b - out->s[out->n - 1].off;
                    else if (spans_push(out, off + a, b - a)) return JR_ENOMEM;
                    have_pend = is_delim ? 2 : 1;
                    break;
                }
            }
            if (final) break;
            last_end = me;
            pos = me;
        }
        if (p->behavior == BEH_MERGED_NEXT && have_pend && spans_push(out, off + pend_start, len - pend_start))
            return JR_ENOMEM;
        have_pend = 0;
    }
    return JR_OK;
}

/* Applies the normalizers to s[0..n) and appends the result to c->text. */
static jr_status normalize_all(enc_ctx *c, const char *s, size_t n) {
    const jr_tokenizer *t = c->t;
    char *cur = malloc(n + 1);
    if (!cur) return jr_fail(JR_ENOMEM, "out of memory");
    memcpy(cur, s, n);
    size_t curn = n;
    for (int i = 0; i < t->n_norms; i++) {
        int k = t->norms[i];
        if (k == NORM_LOWER) {
            /* simple lowercase, character by character */
            char *o = malloc(curn * 2 + 4);
            if (!o) { free(cur); return jr_fail(JR_ENOMEM, "out of memory"); }
            size_t on = 0, p = 0;
            while (p < curn) {
                uint32_t cp;
                int l = (int)jr_utf8_decode(cur + p, curn - p, &cp);
                if (!l) { l = 1; cp = 0xFFFD; }
                on += jr_utf8_encode((uint32_t)utf8proc_tolower(cp), o + on);
                p += (size_t)l;
            }
            free(cur);
            cur = o;
            curn = on;
            continue;
        }
        int opts = UTF8PROC_STABLE;
        if (k == NORM_NFC) opts |= UTF8PROC_COMPOSE;
        else if (k == NORM_NFD) opts |= UTF8PROC_DECOMPOSE;
        else if (k == NORM_NFKC) opts |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
        else opts |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
        utf8proc_uint8_t *dst = NULL;
        utf8proc_ssize_t r = utf8proc_map((const utf8proc_uint8_t *)cur, (utf8proc_ssize_t)curn, &dst, (utf8proc_option_t)opts);
        free(cur);
        if (r < 0) return jr_fail(JR_EINVAL, "normalizer: %s", utf8proc_errmsg(r));
        cur = (char *)dst;
        curn = (size_t)r;
    }
    jr_status st = tok_buf_add(&c->text, cur, curn);
    free(cur);
    return st;
}

/* Normalizes text[0..n) into c->text (appended); *off gets where it starts, *outlen its length.
 * ASCII is invariant under every normal form and nothing composes across two consecutive ASCII
 * characters, so only the stretches around non-ASCII characters go through utf8proc; under NFC
 * a stretch whose code points are all below U+0300 is already normalized. */
static jr_status normalize(enc_ctx *c, const char *s, size_t n, size_t *off, size_t *outlen) {
    const jr_tokenizer *t = c->t;
    *off = c->text.n;
    int lower = 0;
    for (int i = 0; i < t->n_norms; i++) lower |= t->norms[i] == NORM_LOWER;
    jr_status st;
    if (lower) {
        st = t->n_norms ? normalize_all(c, s, n) : tok_buf_add(&c->text, s, n);
        *outlen = c->text.n - *off;
        return st;
    }
    int nfc_only = t->n_norms == 1 && t->norms[0] == NORM_NFC;
    size_t i = 0, seg = 0;
    while (t->n_norms && i < n) {
        if ((unsigned char)s[i] < 0x80) { i++; continue; }
        size_t a = i > seg ? i - 1 : i; /* the ASCII character before may be a base that composes */
        size_t j = i;
        while (j < n && !((unsigned char)s[j] < 0x80 && (j + 1 == n || (unsigned char)s[j + 1] < 0x80))) j++;
        if (a > seg && (st = tok_buf_add(&c->text, s + seg, a - seg))) return st;
        int needs = !nfc_only;
        for (size_t q = a; q < j && !needs; q++) {
            unsigned char b = (unsigned char)s[q];
            needs = b >= 0xCC; /* lead bytes of code points >= U+0300 */
        }
        if ((st = needs ? normalize_all(c, s + a, j - a) : tok_buf_add(&c->text, s + a, j - a))) return st;
        seg = i = j;
    }
    if (n > seg && (st = tok_buf_add(&c->text, s + seg, n - seg))) return st;
    if (!n && (st = tok_buf_add(&c->text, "", 0))) return st;
    *outlen = c->text.n - *off;
    return JR_OK;
}

/* Pre-tokenizes and BPE-encodes one normalized piece stored at c->text[off..off+len). */
static jr_status encode_piece(enc_ctx *c, size_t off, size_t len, jr_ids *out) {
    const jr_tokenizer *t = c->t;
    jr_status st;
    c->a.n = 0;
    if ((st = spans_push(&c->a, off, len))) return st;
    for (int i = 0; i < t->n_pres; i++) {
        const tok_pre *p = &t->pres[i];
        if (p->type == PRE_BYTELEVEL && p->add_prefix_space) {
            for (size_t k = 0; k < c->a.n; k++) {
                span *sp = &c->a.s[k];
                if (sp->len && c->text.p[sp->off] == ' ') continue;
                size_t no = c->text.n;
                if ((st = tok_buf_add(&c->text, " ", 1))) return st;
                if ((st = tok_buf_add(&c->text, c->text.p + sp->off, sp->len))) return st;
                sp->off = no;
                sp->len += 1;
            }
        }
        if (p->re) {
            if ((st = pre_split(c, p, &c->a, &c->b))) return st;
            spans tmp = c->a;
            c->a = c->b;
            c->b = tmp;
        }
    }
    for (size_t k = 0; k < c->a.n; k++)
        if ((st = bpe_word(c, c->text.p + c->a.s[k].off, c->a.s[k].len, out))) return st;
    return JR_OK;
}

static int is_ws(int32_t cp) {
    if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || cp == 0x85) return 1;
    if (cp < 0x80) return 0;
    utf8proc_category_t cat = utf8proc_category(cp);
    return cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL || cat == UTF8PROC_CATEGORY_ZP;
}

static int is_word(int32_t cp) {
    if (cp < 0x80) return isalnum(cp) || cp == '_';
    utf8proc_category_t cat = utf8proc_category(cp);
    return (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) ||
           (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO);
}

/* The code point that ends just before s[i] (s valid UTF-8). */
static int32_t cp_before(const char *s, size_t i) {
    size_t j = i;
    do j--; while (j > 0 && ((unsigned char)s[j] & 0xC0) == 0x80);
    uint32_t cp = 0;
    jr_utf8_decode(s + j, i - j, &cp);
    return (int32_t)cp;
}

/* Finds the leftmost-longest added token (normalized == want_norm) in s[from..n) that passes its
 * single_word check; returns 1 with the token and [ms, me) extended by lstrip/rstrip. */
static int find_added(const jr_tokenizer *t, const char *s, size_t n, size_t from, size_t floor_, int want_norm, int skip_special,
                      const tok_added **tok, size_t *ms, size_t *me) {
    uint8_t want_bit = want_norm ? 2 : 1;
    for (size_t i = from; i < n; i++) {
        unsigned char c0 = (unsigned char)s[i];
        if (!(t->added_first[c0] & want_bit)) continue;
        const tok_added *best = NULL;
        for (uint32_t q = 0; q < t->n_added_by_byte[c0] && !best; q++) {
            const tok_added *a = &t->added[t->added_by_byte[c0][q]];
            if (a->normalized != want_norm || (skip_special && a->special)) continue;
            if (a->len > n - i || memcmp(a->content, s + i, a->len)) continue;
            if (a->single_word) {
                uint32_t cp;
                if (i > 0 && is_word(cp_before(s, i))) continue;
                if (i + a->len < n && jr_utf8_decode(s + i + a->len, n - i - a->len, &cp) && is_word(cp)) continue;
            }
            best = a; /* longest first: the first match is the longest */
        }
        if (best) {
            size_t a0 = i, b0 = i + best->len;
            if (best->lstrip)
                while (a0 > floor_) {
                    int32_t cp = cp_before(s, a0);
                    if (!is_ws(cp)) break;
                    size_t j = a0;
                    do j--; while (j > floor_ && ((unsigned char)s[j] & 0xC0) == 0x80);
                    a0 = j;
                }
            if (best->rstrip)
                while (b0 < n) {
                    uint32_t cp;
                    int l = (int)jr_utf8_decode(s + b0, n - b0, &cp);
                    if (!l || !is_ws(cp)) break;
                    b0 += (size_t)l;
                }
            *tok = best;
            *ms = a0;
            *me = b0;
            return 1;
        }
    }
    return 0;
}

/* Encodes a normalized segment c->text[off..off+len), splitting on normalized added tokens. */
static jr_status encode_normalized(enc_ctx *c, size_t off, size_t len, int skip_special, jr_ids *out) {
    const jr_tokenizer *t = c->t;
    if (!t->has_normalized_added) return encode_piece(c, off, len, out);
    size_t pos = 0;
    jr_status st;
    while (pos < len) {
        const tok_added *a;
        size_t ms, me;
        const char *s = c->text.p + off; /* re-read: c->text may move */
        if (!find_added(t, s, len, pos, pos, 1, skip_special, &a, &ms, &me)) break;
        if (ms > pos && (st = encode_piece(c, off + pos, ms - pos, out))) return st;
        if ((st = jr_ids_push(out, a->id))) return st;
        pos = me;
    }
    if (pos < len) return encode_piece(c, off + pos, len - pos, out);
    return JR_OK;
}

static jr_status encode_raw(enc_ctx *c, const char *s, size_t n, int skip_special, jr_ids *out) {
    size_t off = 0, len = 0;
    jr_status st = normalize(c, s, n, &off, &len);
    if (st) return st;
    return encode_normalized(c, off, len, skip_special, out);
}

jr_status jr_tok_encode(const jr_tokenizer *t, const char *text, size_t len, int flags, jr_ids *out) {
    size_t bad = jr_utf8_invalid_at(text, len, 0);
    if (bad != len) return jr_fail(JR_EINVAL, "text to encode is not valid UTF-8 (byte %zu)", bad);
    size_t n0 = out->n;
    enc_ctx c;
    memset(&c, 0, sizeof c);
    c.t = t;
    c.md = pcre2_match_data_create(4, NULL);
    if (!c.md) return jr_fail(JR_ENOMEM, "out of memory");
    for (int i = 0; i < t->n_wcache && !c.wc; i++)
        if (!pthread_mutex_trylock(&t->wcache[i].mu)) c.wc = &t->wcache[i];
    if (!c.wc && (c.own = calloc(1, sizeof *c.own))) c.wc = c.own;
    int skip_special = (flags & JR_TOK_SPLIT_SPECIAL) != 0;
    jr_status st = JR_OK;
    size_t pre_seq = 0;
    if ((flags & JR_TOK_ADD_SPECIAL) && t->post) {
        for (int i = 0; i < t->n_post && t->post[i].n_ids >= 0 && !st; i++)
            for (int j = 0; j < t->post[i].n_ids && !st; j++) st = jr_ids_push(out, t->post[i].ids[j]);
        pre_seq = 1;
    }
    size_t pos = 0;
    while (!st && pos < len && t->has_raw_added) {
        const tok_added *a;
        size_t ms, me;
        if (!find_added(t, text, len, pos, pos, 0, skip_special, &a, &ms, &me)) break;
        if (ms > pos) st = encode_raw(&c, text + pos, ms - pos, skip_special, out);
        if (!st) st = jr_ids_push(out, a->id);
        pos = me;
    }
    if (!st && pos < len) st = encode_raw(&c, text + pos, len - pos, skip_special, out);
    if (!st && pre_seq) {
        int i = 0;
        while (i < t->n_post && t->post[i].n_ids >= 0) i++;
        for (i++; i < t->n_post && !st; i++)
            for (int j = 0; j < t->post[i].n_ids && !st; j++) st = jr_ids_push(out, t->post[i].ids[j]);
    }
    enc_free(&c);
    if (st) {
        out->n = n0;
        if (st == JR_ENOMEM && !*jr_errmsg()) jr_fail(JR_ENOMEM, "out of memory while encoding");
    }
    return st;
}

/* ------------------------------------------------------------------ decoding */

jr_status jr_tok_decode(const jr_tokenizer *t, const int32_t *ids, size_t n, int flags, char **out, size_t *len) {
    *out = NULL;
    jr_strbuf raw = {0}, res = {0};
    for (size_t i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= t->n_ids || !t->form[id]) {
            free(raw.p);
            return jr_fail(JR_EINVAL, "decode: id %d at position %zu is not a token (the tokenizer has %d)", (int)id, i,
                           (int)t->n_ids);
        }
        if ((flags & JR_TOK_SKIP_SPECIAL) && (t->idflags[id] & ID_SPECIAL)) continue;
        if (tok_buf_add(&raw, t->bytes[id], t->blen[id])) { free(raw.p); return jr_fail(JR_ENOMEM, "out of memory"); }
    }
    jr_utf8_append_lossy(&res, raw.p ? raw.p : "", raw.n); /* as Rust's from_utf8_lossy (HF) */
    free(raw.p);
    size_t n_out = res.n;
    *out = jr_strbuf_take(&res); /* "" when nothing was decoded */
    if (!*out) return jr_fail(JR_ENOMEM, "out of memory");
    if (len) *len = n_out;
    return JR_OK;
}

void jr_tok_stream_init(jr_tok_stream *s, const jr_tokenizer *t, int flags) {
    memset(s, 0, sizeof *s);
    s->tok = t;
    s->flags = flags;
}

void jr_tok_stream_free(jr_tok_stream *s) {
    free(s->buf);
    s->buf = NULL;
    s->cap = 0;
}

static jr_status stream_emit(jr_tok_stream *s, const char *bytes, size_t n, int final, const char **text, size_t *len) {
    jr_strbuf in = {0}, res = {0};
    jr_status st = JR_OK;
    if (s->npend) st = tok_buf_add(&in, s->pend, (size_t)s->npend);
    if (!st && n) st = tok_buf_add(&in, bytes, n);
    /* hold back a trailing incomplete (but so far valid) UTF-8 sequence */
    size_t keep = !st && !final ? jr_utf8_incomplete_tail(in.p, in.n, NULL) : 0;
    if (!st) jr_utf8_append_lossy(&res, in.p ? in.p : "", in.n - keep);
    if (!st && res.oom) st = JR_ENOMEM;
    if (!st && !res.p) st = tok_buf_add(&res, "", 0);
    if (st) { free(in.p); free(res.p); return jr_fail(JR_ENOMEM, "out of memory"); }
    if (keep) memcpy(s->pend, in.p + in.n - keep, keep);
    s->npend = (int)keep;
    free(in.p);
    free(s->buf);
    s->buf = res.p;
    s->cap = res.cap;
    *text = s->buf;
    if (len) *len = res.n;
    return JR_OK;
}

jr_status jr_tok_stream_push(jr_tok_stream *s, int32_t id, const char **text, size_t *len) {
    const jr_tokenizer *t = s->tok;
    if (id < 0 || id >= t->n_ids || !t->form[id])
        return jr_fail(JR_EINVAL, "decode: id %d is not a token (the tokenizer has %d)", (int)id, (int)t->n_ids);
    if ((s->flags & JR_TOK_SKIP_SPECIAL) && (t->idflags[id] & ID_SPECIAL)) return stream_emit(s, "", 0, 0, text, len);
    return stream_emit(s, t->bytes[id], t->blen[id], 0, text, len);
}

jr_status jr_tok_stream_finish(jr_tok_stream *s, const char **text, size_t *len) {
    return stream_emit(s, "", 0, 1, text, len);
}
