/* bpe_train.c - byte-level BPE training that writes an HF tokenizer.json */
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <jansson.h>
#include <pcre2.h>

#include "judgerl/tokenizer.h"
#include "judgerl/utf8.h"
#include "tokenizer/tok_internal.h"

/* The pre-tokenizer of the trained tokenizer: Qwen2/Qwen3's regex (single digits). */
static const char *TRAIN_RE =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

typedef struct {
    int32_t *sym;  /* symbols of the word */
    int n;
    int64_t freq;
    int32_t seen;  /* last merge that visited it */
} word;

/* open-addressing map: (a, b) -> index into pair arrays */
typedef struct {
    uint64_t *key; /* (a<<32|b)+1 */
    int64_t *count;
    int32_t **where; /* word ids (may repeat or be stale) */
    int32_t *nwhere, *capwhere;
    size_t cap, n;
} pairtab;

static uint64_t mixh(uint64_t x) {
    x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ull; x ^= x >> 27; x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static int pt_grow(pairtab *p);

/* index of the pair's slot, inserting it when missing (-1 on allocation failure) */
static long pt_slot(pairtab *p, int32_t a, int32_t b) {
    if ((p->n + 1) * 2 > p->cap && pt_grow(p)) return -1;
    uint64_t k = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
    size_t i = mixh(k) & (p->cap - 1);
    while (p->key[i] && p->key[i] != k) i = (i + 1) & (p->cap - 1);
    if (!p->key[i]) { p->key[i] = k; p->n++; }
    return (long)i;
}

static int pt_grow(pairtab *p) {
    pairtab q = {0};
    q.cap = p->cap ? p->cap * 2 : 1024;
    q.key = calloc(q.cap, sizeof *q.key);
    q.count = calloc(q.cap, sizeof *q.count);
    q.where = calloc(q.cap, sizeof *q.where);
    q.nwhere = calloc(q.cap, sizeof *q.nwhere);
    q.capwhere = calloc(q.cap, sizeof *q.capwhere);
    if (!q.key || !q.count || !q.where || !q.nwhere || !q.capwhere) {
        free(q.key); free(q.count); free(q.where); free(q.nwhere); free(q.capwhere);
        return -1;
    }
    for (size_t i = 0; i < p->cap; i++) {
        if (!p->key[i]) continue;
        size_t j = mixh(p->key[i]) & (q.cap - 1);
        while (q.key[j]) j = (j + 1) & (q.cap - 1);
        q.key[j] = p->key[i]; q.count[j] = p->count[i]; q.where[j] = p->where[i];
        q.nwhere[j] = p->nwhere[i]; q.capwhere[j] = p->capwhere[i];
        q.n++;
    }
    free(p->key); free(p->count); free(p->where); free(p->nwhere); free(p->capwhere);
    *p = q;
    return 0;
}

static void pt_free(pairtab *p) {
    for (size_t i = 0; i < p->cap; i++) free(p->where[i]);
    free(p->key); free(p->count); free(p->where); free(p->nwhere); free(p->capwhere);
}

static int pt_add(pairtab *p, int32_t a, int32_t b, int64_t c, int32_t w) {
    long i = pt_slot(p, a, b);
    if (i < 0) return -1;
    p->count[i] += c;
    if (w >= 0 && c > 0) {
        if (p->nwhere[i] == p->capwhere[i]) {
            int32_t nc = p->capwhere[i] ? p->capwhere[i] * 2 : 4;
            int32_t *nw = realloc(p->where[i], (size_t)nc * sizeof *nw);
            if (!nw) return -1;
            p->where[i] = nw;
            p->capwhere[i] = nc;
        }
        p->where[i][p->nwhere[i]++] = w;
    }
    return 0;
}

/* word frequency table: bytes -> index */
typedef struct {
    const char **k; size_t *kn; int32_t *v; size_t cap, n;
} wmap;

static uint64_t hbytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return mixh(h);
}

/* The training state: the corpus's distinct words (symbols, frequency), the pair table over them and the
 * merges learnt so far. */
typedef struct {
    wmap wm;
    word *words;
    size_t nwords, capwords;
    pairtab pt;
    int32_t (*merges)[2];
    int32_t n_merges;
} bpe_state;

static void state_free(bpe_state *t) {
    free(t->merges);
    pt_free(&t->pt);
    for (size_t i = 0; i < t->nwords; i++) free(t->words[i].sym);
    free(t->words);
    free(t->wm.k); free(t->wm.kn); free(t->wm.v);
}

static int wm_grow(wmap *wm) {
    wmap nm = {0};
    nm.cap = wm->cap * 2;
    nm.k = calloc(nm.cap, sizeof *nm.k); nm.kn = calloc(nm.cap, sizeof *nm.kn); nm.v = calloc(nm.cap, sizeof *nm.v);
    if (!nm.k || !nm.kn || !nm.v) { free(nm.k); free(nm.kn); free(nm.v); return -1; }
    for (size_t i = 0; i < wm->cap; i++) if (wm->k[i]) {
        size_t j = hbytes(wm->k[i], wm->kn[i]) & (nm.cap - 1);
        while (nm.k[j]) j = (j + 1) & (nm.cap - 1);
        nm.k[j] = wm->k[i]; nm.kn[j] = wm->kn[i]; nm.v[j] = wm->v[i];
    }
    nm.n = wm->n;
    free(wm->k); free(wm->kn); free(wm->v);
    *wm = nm;
    return 0;
}

/* Counts one occurrence of the word w[0..wn): a new word gets its bytes as symbols. */
static jr_status add_word(bpe_state *t, const char *w, size_t wn) {
    wmap *wm = &t->wm;
    if ((wm->n + 1) * 2 > wm->cap && wm_grow(wm)) return jr_fail(JR_ENOMEM, "out of memory");
    size_t j = hbytes(w, wn) & (wm->cap - 1);
    while (wm->k[j] && !(wm->kn[j] == wn && !memcmp(wm->k[j], w, wn))) j = (j + 1) & (wm->cap - 1);
    if (wm->k[j]) { t->words[wm->v[j]].freq++; return JR_OK; }
    if (t->nwords == t->capwords) {
        size_t nc = t->capwords ? t->capwords * 2 : 1024;
        word *nw = realloc(t->words, nc * sizeof *nw);
        if (!nw) return jr_fail(JR_ENOMEM, "out of memory");
        t->words = nw;
        t->capwords = nc;
    }
    word *wd = &t->words[t->nwords];
    wd->sym = malloc(wn * sizeof *wd->sym);
    if (!wd->sym) return jr_fail(JR_ENOMEM, "out of memory");
    for (size_t q = 0; q < wn; q++) wd->sym[q] = (unsigned char)w[q];
    wd->n = (int)wn;
    wd->freq = 1;
    wd->seen = -1;
    wm->k[j] = w; wm->kn[j] = wn; wm->v[j] = (int32_t)t->nwords;
    wm->n++;
    t->nwords++;
    return JR_OK;
}

/* 1. the words of the corpus (pre-tokenizer matches) and their frequencies; invalid UTF-8 is an error
 * naming the byte offset */
static jr_status count_words(bpe_state *t, pcre2_code *re, pcre2_match_data *md, const char *corpus, size_t len) {
    t->wm.cap = 1 << 16;
    t->wm.k = calloc(t->wm.cap, sizeof *t->wm.k); t->wm.kn = calloc(t->wm.cap, sizeof *t->wm.kn);
    t->wm.v = calloc(t->wm.cap, sizeof *t->wm.v);
    if (!t->wm.k || !t->wm.kn || !t->wm.v) return jr_fail(JR_ENOMEM, "out of memory");
    int rc0 = pcre2_match(re, (PCRE2_SPTR)corpus, len, 0, 0, md, NULL);
    if (rc0 < 0 && rc0 != PCRE2_ERROR_NOMATCH)
        return jr_fail(JR_EINVAL, "corpus is not valid UTF-8 (byte %zu)", (size_t)pcre2_get_startchar(md));
    if (rc0 == PCRE2_ERROR_NOMATCH && len) return jr_fail(JR_EINVAL, "corpus has no text to train on");
    size_t pos = 0;
    while (pos < len) {
        int rc = pcre2_match(re, (PCRE2_SPTR)corpus, len, pos, PCRE2_NO_UTF_CHECK, md, NULL);
        if (rc < 0) break;
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t s = ov[0], e = ov[1];
        if (e == s) { pos = s + 1; continue; }
        pos = e;
        jr_status st = add_word(t, corpus + s, e - s);
        if (st) return st;
    }
    return JR_OK;
}

/* 2. the initial pair counts */
static jr_status count_pairs(bpe_state *t) {
    for (size_t i = 0; i < t->nwords; i++)
        for (int q = 0; q + 1 < t->words[i].n; q++)
            if (pt_add(&t->pt, t->words[i].sym[q], t->words[i].sym[q + 1], t->words[i].freq, (int32_t)i))
                return jr_fail(JR_ENOMEM, "out of memory");
    return JR_OK;
}

/* Replaces every (a, b) of word wi by nid, moving its pair counts. */
static int merge_in_word(bpe_state *t, int32_t wi, int32_t a, int32_t b, int32_t nid) {
    word *wd = &t->words[wi];
    if (wd->seen == nid) return 0;
    wd->seen = nid;
    int has = 0;
    for (int q = 0; q + 1 < wd->n && !has; q++) has = wd->sym[q] == a && wd->sym[q + 1] == b;
    if (!has) return 0;
    for (int q = 0; q + 1 < wd->n; q++) pt_add(&t->pt, wd->sym[q], wd->sym[q + 1], -wd->freq, -1);
    int o = 0;
    for (int q = 0; q < wd->n; q++) {
        if (q + 1 < wd->n && wd->sym[q] == a && wd->sym[q + 1] == b) { wd->sym[o++] = nid; q++; }
        else wd->sym[o++] = wd->sym[q];
    }
    wd->n = o;
    for (int q = 0; q + 1 < wd->n; q++)
        if (pt_add(&t->pt, wd->sym[q], wd->sym[q + 1], wd->freq, wi)) return -1;
    return 0;
}

/* 3. merges the most frequent pair (ties: smallest ids) until n_max merges or nothing occurs twice */
static jr_status learn_merges(bpe_state *t, int32_t n_max) {
    pairtab *pt = &t->pt;
    t->merges = calloc((size_t)(n_max > 0 ? n_max : 1), sizeof *t->merges);
    if (!t->merges) return jr_fail(JR_ENOMEM, "out of memory");
    while (t->n_merges < n_max) {
        long best = -1;
        for (size_t i = 0; i < pt->cap; i++) {
            if (!pt->key[i] || pt->count[i] < 2) continue;
            if (best < 0 || pt->count[i] > pt->count[best] ||
                (pt->count[i] == pt->count[best] && pt->key[i] < pt->key[best]))
                best = (long)i;
        }
        if (best < 0) break; /* nothing left to merge: a smaller vocabulary */
        int32_t a = (int32_t)((pt->key[best] - 1) >> 32), b = (int32_t)(uint32_t)(pt->key[best] - 1);
        int32_t nid = 256 + t->n_merges;
        t->merges[t->n_merges][0] = a;
        t->merges[t->n_merges][1] = b;
        t->n_merges++;
        /* copy the word list: the pair table changes while we walk it */
        int32_t nw = pt->nwhere[best];
        int32_t *wl = malloc((size_t)(nw ? nw : 1) * sizeof *wl);
        if (!wl) return jr_fail(JR_ENOMEM, "out of memory");
        memcpy(wl, pt->where[best], (size_t)nw * sizeof *wl);
        for (int32_t k = 0; k < nw; k++)
            if (merge_in_word(t, wl[k], a, b, nid)) { free(wl); return jr_fail(JR_ENOMEM, "out of memory"); }
        free(wl);
        /* the merged pair is gone everywhere */
        long bi = pt_slot(pt, a, b);
        if (bi >= 0) { pt->count[bi] = 0; pt->nwhere[bi] = 0; }
    }
    return JR_OK;
}

/* The token strings (ByteLevel forms): bytes, then each merge's two halves joined; adds each merge's
 * "left right" line to mj. forms/flen hold 256 + n_merges entries. */
static jr_status token_forms(const bpe_state *t, char **forms, size_t *flen, json_t *mj) {
    for (int b = 0; b < 256; b++) {
        char f[4];
        size_t fl = jr_utf8_encode(tok_bytelevel_cp((unsigned)b), f);
        forms[b] = strndup(f, fl);
        flen[b] = fl;
    }
    for (int32_t i = 0; i < t->n_merges; i++) {
        int32_t a = t->merges[i][0], b = t->merges[i][1];
        char *f = malloc(flen[a] + flen[b] + 1);
        if (!f) return jr_fail(JR_ENOMEM, "out of memory");
        memcpy(f, forms[a], flen[a]);
        memcpy(f + flen[a], forms[b], flen[b]);
        f[flen[a] + flen[b]] = 0;
        forms[256 + i] = f;
        flen[256 + i] = flen[a] + flen[b];
        char *m = malloc(flen[a] + flen[b] + 2);
        if (!m) return jr_fail(JR_ENOMEM, "out of memory");
        memcpy(m, forms[a], flen[a]);
        m[flen[a]] = ' ';
        memcpy(m + flen[a] + 1, forms[b], flen[b] + 1);
        json_array_append_new(mj, json_string(m));
        free(m);
    }
    return JR_OK;
}

/* 4. tokenizer.json of the merges learnt, the special tokens after them */
static jr_status write_json(const bpe_state *t, const char *const *specials, size_t n_specials, const char *pattern, char **json_out) {
    int32_t ntok = 256 + t->n_merges;
    char **forms = calloc((size_t)ntok, sizeof *forms);
    size_t *flen = calloc((size_t)ntok, sizeof *flen);
    json_t *vocab = json_object(), *mj = json_array(), *added = json_array(), *root = json_object();
    jr_status st = forms && flen ? token_forms(t, forms, flen, mj) : jr_fail(JR_ENOMEM, "out of memory");
    if (!st) {
        for (int32_t i = 0; i < ntok; i++) json_object_set_new(vocab, forms[i], json_integer(i));
        for (size_t i = 0; i < n_specials; i++)
            json_array_append_new(added, json_pack("{s:i, s:s, s:b, s:b, s:b, s:b, s:b}", "id", (int)(ntok + (int32_t)i),
                                                   "content", specials[i], "single_word", 0, "lstrip", 0, "rstrip", 0,
                                                   "normalized", 0, "special", 1));
        json_object_set_new(root, "version", json_string("1.0"));
        json_object_set_new(root, "truncation", json_null());
        json_object_set_new(root, "padding", json_null());
        json_object_set_new(root, "added_tokens", added);
        json_object_set_new(root, "normalizer", json_pack("{s:s}", "type", "NFC"));
        json_object_set_new(root, "pre_tokenizer",
                            json_pack("{s:s, s:[{s:s, s:{s:s}, s:s, s:b}, {s:s, s:b, s:b, s:b}]}", "type", "Sequence",
                                      "pretokenizers", "type", "Split", "pattern", "Regex", pattern, "behavior",
                                      "Isolated", "invert", 0, "type", "ByteLevel", "add_prefix_space", 0, "trim_offsets",
                                      0, "use_regex", 0));
        json_object_set_new(root, "post_processor",
                            json_pack("{s:s, s:b, s:b, s:b}", "type", "ByteLevel", "add_prefix_space", 0, "trim_offsets", 0, "use_regex", 0));
        json_object_set_new(root, "decoder",
                            json_pack("{s:s, s:b, s:b, s:b}", "type", "ByteLevel", "add_prefix_space", 0, "trim_offsets", 0, "use_regex", 0));
        json_object_set_new(root, "model",
                            json_pack("{s:s, s:n, s:n, s:s, s:s, s:b, s:b, s:b, s:o, s:o}", "type", "BPE", "dropout", "unk_token",
                                      "continuing_subword_prefix", "", "end_of_word_suffix", "", "fuse_unk", 0,
                                      "byte_fallback", 0, "ignore_merges", 0, "vocab", vocab, "merges", mj));
        vocab = mj = added = NULL; /* owned by root now */
        *json_out = json_dumps(root, JSON_PRESERVE_ORDER | JSON_INDENT(1));
        if (!*json_out) st = jr_fail(JR_ENOMEM, "out of memory");
    }
    if (forms) for (int32_t i = 0; i < ntok; i++) free(forms[i]);
    free(forms);
    free(flen);
    json_decref(vocab); json_decref(mj); json_decref(added); json_decref(root);
    return st;
}

jr_status jr_tok_train(const char *corpus, size_t len, int32_t vocab_size, const char *const *specials,
                       size_t n_specials, char **json_out) {
    return jr_tok_train_re(corpus, len, vocab_size, specials, n_specials, NULL, json_out);
}

jr_status jr_tok_train_re(const char *corpus, size_t len, int32_t vocab_size, const char *const *specials,
                          size_t n_specials, const char *pattern, char **json_out) {
    *json_out = NULL;
    if (!pattern) pattern = TRAIN_RE;
    if (vocab_size < 256 + (int32_t)n_specials)
        return jr_fail(JR_EINVAL, "vocab size %d is below 256 byte tokens + %zu special tokens", (int)vocab_size, n_specials);
    if (vocab_size > 1000000) return jr_fail(JR_EINVAL, "vocab size %d is too large (at most 1,000,000)", (int)vocab_size);
    int err;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &err, &off, NULL);
    if (!re) return jr_fail(JR_EINVAL, "pre-tokenizer regex does not compile at offset %zu: %s", (size_t)off, pattern);
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    pcre2_match_data *md = pcre2_match_data_create(4, NULL);
    bpe_state t = {0};
    jr_status st = JR_OK;
    if (!md) st = jr_fail(JR_ENOMEM, "out of memory");
    else if (len == 0) st = jr_fail(JR_EINVAL, "corpus is empty");
    if (!st) st = count_words(&t, re, md, corpus, len);
    if (!st) st = count_pairs(&t);
    if (!st) st = learn_merges(&t, vocab_size - 256 - (int32_t)n_specials);
    if (!st) st = write_json(&t, specials, n_specials, pattern, json_out);
    state_free(&t);
    if (md) pcre2_match_data_free(md);
    pcre2_code_free(re);
    return st;
}
