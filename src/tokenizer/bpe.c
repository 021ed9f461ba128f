/* bpe.c - HF tokenizer.json byte-level BPE: loading, encoding, decoding and streaming decode */
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
#include "tokenizer/tok_internal.h"

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

/* Appends n bytes to b; JR_ENOMEM (b unchanged and usable again) when that fails. */
static jr_status bbuf_add(jr_strbuf *b, const void *p, size_t n) {
    jr_strbuf_addn(b, p, n);
    if (!b->oom) return JR_OK;
    b->oom = 0; /* the contents are intact: a later call may try again */
    return JR_ENOMEM;
}

/* A cache of word -> ids, as HF keeps one: prose repeats its words. The tokenizer owns a few of
 * them, each used by one encode call at a time (trylock); a call that finds all busy uses its own. */
struct wc_ent { uint64_t h; uint32_t off, len, id_off, n_ids; };
struct tok_wcache {
    pthread_mutex_t mu;
    struct wc_ent *e;
    size_t cap, n;
    jr_strbuf bytes;
    jr_ids ids;
};

enum { WC_CAP = 1 << 17, WC_MAX_WORD = 128, N_WCACHE = 4 };

static void wcache_clear(struct tok_wcache *w) {
    free(w->e);
    jr_strbuf_free(&w->bytes);
    jr_ids_free(&w->ids);
    w->e = NULL;
    w->cap = w->n = 0;
}

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a, then a final mix */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 32);
}

static uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* arena: strings that live as long as the tokenizer */
static char *arena_alloc(jr_tokenizer *t, size_t n) {
    if (t->n_blocks == 0 || t->block_used + n > t->block_cap) {
        size_t cap = n > (1u << 20) ? n : (1u << 20);
        if (t->n_blocks == t->cap_blocks) {
            size_t nc = t->cap_blocks ? t->cap_blocks * 2 : 16;
            char **b = jr_realloc(t->blocks, nc * sizeof *b);
            if (!b) return NULL;
            t->blocks = b;
            t->cap_blocks = nc;
        }
        char *blk = jr_malloc(cap);
        if (!blk) return NULL;
        t->blocks[t->n_blocks++] = blk;
        t->block_used = 0;
        t->block_cap = cap;
    }
    char *p = t->blocks[t->n_blocks - 1] + t->block_used;
    t->block_used += n;
    return p;
}

static char *arena_strndup(jr_tokenizer *t, const char *s, size_t n) {
    char *p = arena_alloc(t, n + 1);
    if (!p) return NULL;
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

static jr_status strmap_init(tok_strmap *m, size_t n) {
    size_t cap = 16;
    while (cap < n * 2 + 16) cap *= 2;
    m->e = jr_calloc(cap, sizeof *m->e);
    m->cap = cap;
    m->n = 0;
    return m->e ? JR_OK : JR_ENOMEM;
}

static void strmap_free(tok_strmap *m) {
    free(m->e);
    memset(m, 0, sizeof *m);
}

/* The slot holding key s[0, n), or the empty slot where it would go (linear probing). */
static inline size_t strmap_slot(const tok_strmap *m, const char *s, size_t n, uint64_t h) {
    size_t i = h & (m->cap - 1);
    while (m->e[i].key && !(m->e[i].hash == h && m->e[i].klen == n && !memcmp(m->e[i].key, s, n)))
        i = (i + 1) & (m->cap - 1);
    return i;
}

static int32_t strmap_get(const tok_strmap *m, const char *s, size_t n) {
    if (!m->cap) return -1;
    size_t i = strmap_slot(m, s, n, hash_bytes(s, n));
    return m->e[i].key ? m->e[i].val : -1;
}

/* Inserts (key must outlive the map); returns the previous value or -1. Never grows: init with
 * enough room. */
static int32_t strmap_put(tok_strmap *m, const char *s, size_t n, int32_t v) {
    uint64_t h = hash_bytes(s, n);
    size_t i = strmap_slot(m, s, n, h);
    if (m->e[i].key) {
        int32_t old = m->e[i].val;
        m->e[i].val = v;
        return old;
    }
    m->e[i].key = s;
    m->e[i].klen = (uint32_t)n;
    m->e[i].val = v;
    m->e[i].hash = h;
    m->n++;
    return -1;
}

static jr_status pairmap_init(tok_pairmap *m, size_t n) {
    size_t cap = 16;
    while (cap < n * 2 + 16) cap *= 2;
    m->e = jr_calloc(cap, sizeof *m->e);
    m->cap = cap;
    m->n = 0;
    return m->e ? JR_OK : JR_ENOMEM;
}

static void pairmap_free(tok_pairmap *m) {
    free(m->e);
    memset(m, 0, sizeof *m);
}

static inline int pairmap_get(const tok_pairmap *m, int32_t a, int32_t b, int32_t *rank, int32_t *merged) {
    uint64_t k = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
    size_t i = mix64(k) & (m->cap - 1);
    while (m->e[i].key) {
        if (m->e[i].key == k) {
            *rank = m->e[i].rank;
            *merged = m->e[i].merged;
            return 1;
        }
        i = (i + 1) & (m->cap - 1);
    }
    return 0;
}

/* Keeps the first (lowest-rank) merge of a pair, as HF does. */
static void pairmap_put(tok_pairmap *m, int32_t a, int32_t b, int32_t rank, int32_t merged) {
    uint64_t k = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
    size_t i = mix64(k) & (m->cap - 1);
    while (m->e[i].key) {
        if (m->e[i].key == k) return;
        i = (i + 1) & (m->cap - 1);
    }
    m->e[i].key = k;
    m->e[i].rank = rank;
    m->e[i].merged = merged;
    m->n++;
}

/* ------------------------------------------------------------------ byte-level alphabet */

static int32_t byte_to_cp[256];
static int16_t cp_to_byte[324]; /* code points < 324 -> byte, -1 otherwise */

static void bytelevel_init(void) {
    static int done;
    if (__atomic_load_n(&done, __ATOMIC_ACQUIRE)) return;
    int n = 0;
    int32_t tmp[256];
    int16_t rev[324];
    for (int i = 0; i < 324; i++) rev[i] = -1;
    for (int b = 0; b < 256; b++) {
        int keep = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        tmp[b] = keep ? b : 256 + n++;
        rev[tmp[b]] = (int16_t)b;
    }
    memcpy(byte_to_cp, tmp, sizeof tmp);
    memcpy(cp_to_byte, rev, sizeof rev);
    __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
}

/* The bytes a vocabulary-form token stands for: every character mapped back through the
 * byte-level alphabet; when one character is outside it, the token's own UTF-8 (as HF's
 * ByteLevel decoder does). Writes to out (room for n bytes) and returns the length. */
static size_t form_to_bytes(const char *s, size_t n, char *out) {
    size_t o = 0, i = 0;
    while (i < n) {
        uint32_t cp;
        int l = (int)jr_utf8_decode(s + i, n - i, &cp);
        if (!l || cp >= 324 || cp_to_byte[cp] < 0) {
            memcpy(out, s, n);
            return n;
        }
        out[o++] = (char)cp_to_byte[cp];
        i += (size_t)l;
    }
    return o;
}

/* ------------------------------------------------------------------ loading */

static jr_status compile_regex(const char *name, const char *where, const char *pat, size_t len, int literal,
                               void **out) {
    int err;
    PCRE2_SIZE off;
    uint32_t opts = PCRE2_UTF | PCRE2_UCP | (literal ? PCRE2_LITERAL : 0);
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pat, len, opts, &err, &off, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        return jr_fail(JR_EFORMAT, "%s: %s: bad regex at offset %zu: %s", name, where, (size_t)off, (char *)msg);
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* best effort: the interpreter is used without JIT */
    *out = re;
    return JR_OK;
}

static const char *GPT2_RE =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

static jr_status load_pre(jr_tokenizer *t, json_t *p, const char *where, int *has_bytelevel);

static jr_status load_pre_one(jr_tokenizer *t, json_t *p, const char *where, int *has_bytelevel) {
    const char *type = json_string_value(json_object_get(p, "type"));
    if (!type) return jr_fail(JR_EFORMAT, "%s: %s: missing \"type\"", t->name, where);
    if (!strcmp(type, "Sequence")) {
        json_t *arr = json_object_get(p, "pretokenizers");
        if (!json_is_array(arr)) return jr_fail(JR_EFORMAT, "%s: %s: Sequence without a \"pretokenizers\" list", t->name, where);
        size_t i;
        json_t *e;
        json_array_foreach(arr, i, e) {
            char w[128];
            snprintf(w, sizeof w, "%s.pretokenizers[%zu]", where, i);
            jr_status st = load_pre(t, e, w, has_bytelevel);
            if (st) return st;
        }
        return JR_OK;
    }
    tok_pre *np = jr_realloc(t->pres, (size_t)(t->n_pres + 1) * sizeof *np);
    if (!np) return JR_ENOMEM;
    t->pres = np;
    tok_pre *q = &t->pres[t->n_pres];
    memset(q, 0, sizeof *q);
    if (!strcmp(type, "Split")) {
        json_t *pat = json_object_get(p, "pattern");
        const char *re = json_string_value(json_object_get(pat, "Regex"));
        const char *lit = json_string_value(json_object_get(pat, "String"));
        if (!re && !lit) return jr_fail(JR_EFORMAT, "%s: %s.pattern: needs \"Regex\" or \"String\"", t->name, where);
        const char *beh = json_string_value(json_object_get(p, "behavior"));
        if (!beh) beh = "Isolated";
        if (!strcmp(beh, "Isolated")) q->behavior = BEH_ISOLATED;
        else if (!strcmp(beh, "Removed")) q->behavior = BEH_REMOVED;
        else if (!strcmp(beh, "MergedWithPrevious")) q->behavior = BEH_MERGED_PREV;
        else if (!strcmp(beh, "MergedWithNext")) q->behavior = BEH_MERGED_NEXT;
        else if (!strcmp(beh, "Contiguous")) q->behavior = BEH_CONTIGUOUS;
        else return jr_fail(JR_EUNSUPPORTED, "%s: %s.behavior: \"%s\" unknown (Isolated, Removed, MergedWithPrevious, MergedWithNext, Contiguous)", t->name, where, beh);
        q->invert = json_is_true(json_object_get(p, "invert"));
        char w[160];
        snprintf(w, sizeof w, "%s.pattern", where);
        const char *s = re ? re : lit;
        jr_status st = compile_regex(t->name, w, s, strlen(s), !re, &q->re);
        if (st) return st;
        q->type = PRE_SPLIT;
    } else if (!strcmp(type, "ByteLevel")) {
        q->type = PRE_BYTELEVEL;
        q->add_prefix_space = json_is_true(json_object_get(p, "add_prefix_space"));
        json_t *ur = json_object_get(p, "use_regex");
        if (!ur || json_is_true(ur)) {
            jr_status st = compile_regex(t->name, where, GPT2_RE, strlen(GPT2_RE), 0, &q->re);
            if (st) return st;
            q->behavior = BEH_ISOLATED;
        }
        *has_bytelevel = 1;
    } else if (!strcmp(type, "Digits")) {
        q->type = PRE_DIGITS;
        int indiv = json_is_true(json_object_get(p, "individual_digits"));
        jr_status st = compile_regex(t->name, where, "[0-9]", 5, 0, &q->re);
        if (st) return st;
        q->behavior = indiv ? BEH_ISOLATED : BEH_CONTIGUOUS;
    } else {
        return jr_fail(JR_EUNSUPPORTED, "%s: %s: pre-tokenizer type \"%s\" unsupported (supported: Split, ByteLevel, Digits, Sequence)",
                       t->name, where, type);
    }
    t->n_pres++;
    return JR_OK;
}

static jr_status load_pre(jr_tokenizer *t, json_t *p, const char *where, int *has_bytelevel) {
    if (!json_is_object(p)) return jr_fail(JR_EFORMAT, "%s: %s: expected an object", t->name, where);
    return load_pre_one(t, p, where, has_bytelevel);
}

static jr_status load_norm(jr_tokenizer *t, json_t *p, const char *where) {
    if (json_is_null(p) || !p) return JR_OK;
    const char *type = json_string_value(json_object_get(p, "type"));
    if (!type) return jr_fail(JR_EFORMAT, "%s: %s: missing \"type\"", t->name, where);
    if (!strcmp(type, "Sequence")) {
        json_t *arr = json_object_get(p, "normalizers");
        if (!json_is_array(arr)) return jr_fail(JR_EFORMAT, "%s: %s: Sequence without a \"normalizers\" list", t->name, where);
        size_t i;
        json_t *e;
        json_array_foreach(arr, i, e) {
            char w[128];
            snprintf(w, sizeof w, "%s.normalizers[%zu]", where, i);
            jr_status st = load_norm(t, e, w);
            if (st) return st;
        }
        return JR_OK;
    }
    int k = !strcmp(type, "NFC") ? NORM_NFC : !strcmp(type, "NFD") ? NORM_NFD : !strcmp(type, "NFKC") ? NORM_NFKC
          : !strcmp(type, "NFKD") ? NORM_NFKD : !strcmp(type, "Lowercase") ? NORM_LOWER : 0;
    if (!k)
        return jr_fail(JR_EUNSUPPORTED, "%s: %s: normalizer type \"%s\" unsupported (supported: NFC, NFD, NFKC, NFKD, Lowercase, Sequence)",
                       t->name, where, type);
    if (t->n_norms == (int)(sizeof t->norms / sizeof *t->norms))
        return jr_fail(JR_EUNSUPPORTED, "%s: %s: too many normalizers", t->name, where);
    t->norms[t->n_norms++] = k;
    return JR_OK;
}

/* Looks a token string up among the added tokens and the vocabulary. */
int32_t jr_tok_token_to_id(const jr_tokenizer *t, const char *token) {
    size_t n = strlen(token);
    int32_t id = strmap_get(&t->added_map, token, n);
    if (id >= 0) return id;
    char *tmp = malloc(n + 1);
    if (!tmp) return -1;
    size_t bl = form_to_bytes(token, n, tmp);
    id = strmap_get(&t->vocab, tmp, bl);
    free(tmp);
    if (id >= 0 && t->form[id] && !strcmp(t->form[id], token)) return id;
    return -1;
}

static jr_status load_post(jr_tokenizer *t, json_t *p, const char *where) {
    if (!p || json_is_null(p)) return JR_OK;
    const char *type = json_string_value(json_object_get(p, "type"));
    if (!type) return jr_fail(JR_EFORMAT, "%s: %s: missing \"type\"", t->name, where);
    if (!strcmp(type, "ByteLevel")) return JR_OK; /* offsets only */
    if (!strcmp(type, "Sequence")) {
        json_t *arr = json_object_get(p, "processors");
        if (!json_is_array(arr)) return jr_fail(JR_EFORMAT, "%s: %s: Sequence without a \"processors\" list", t->name, where);
        size_t i;
        json_t *e;
        json_array_foreach(arr, i, e) {
            char w[128];
            snprintf(w, sizeof w, "%s.processors[%zu]", where, i);
            jr_status st = load_post(t, e, w);
            if (st) return st;
        }
        return JR_OK;
    }
    if (t->post) return jr_fail(JR_EUNSUPPORTED, "%s: %s: more than one template post-processor", t->name, where);
    if (!strcmp(type, "TemplateProcessing")) {
        json_t *single = json_object_get(p, "single");
        json_t *specials = json_object_get(p, "special_tokens");
        if (!json_is_array(single)) return jr_fail(JR_EFORMAT, "%s: %s.single: expected a list", t->name, where);
        size_t n = json_array_size(single);
        t->post = jr_calloc(n ? n : 1, sizeof *t->post);
        if (!t->post) return JR_ENOMEM;
        t->n_post = (int)n;
        for (size_t i = 0; i < n; i++) {
            json_t *it = json_array_get(single, i);
            json_t *sp = json_object_get(it, "SpecialToken");
            if (json_object_get(it, "Sequence")) { t->post[i].n_ids = -1; continue; }
            const char *name = json_string_value(json_object_get(sp, "id"));
            if (!name) return jr_fail(JR_EFORMAT, "%s: %s.single[%zu]: expected Sequence or SpecialToken", t->name, where, i);
            json_t *ids = json_object_get(json_object_get(specials, name), "ids");
            if (!json_is_array(ids))
                return jr_fail(JR_EFORMAT, "%s: %s.special_tokens: \"%s\" missing or without \"ids\"", t->name, where, name);
            size_t k = json_array_size(ids);
            t->post[i].ids = jr_calloc(k ? k : 1, sizeof(int32_t));
            if (!t->post[i].ids) return JR_ENOMEM;
            t->post[i].n_ids = (int)k;
            for (size_t j = 0; j < k; j++) {
                json_int_t v = json_integer_value(json_array_get(ids, j));
                if (!json_is_integer(json_array_get(ids, j)) || v < 0 || v >= t->n_ids || !t->form[v])
                    return jr_fail(JR_EFORMAT, "%s: %s.special_tokens.%s.ids[%zu]: not a known token id", t->name, where, name, j);
                t->post[i].ids[j] = (int32_t)v;
            }
        }
        return JR_OK;
    }
    if (!strcmp(type, "RobertaProcessing") || !strcmp(type, "BertProcessing")) {
        json_t *cls = json_object_get(p, "cls"), *sep = json_object_get(p, "sep");
        if (!json_is_array(cls) || !json_is_array(sep))
            return jr_fail(JR_EFORMAT, "%s: %s: needs \"cls\" and \"sep\" [token, id] pairs", t->name, where);
        t->post = jr_calloc(3, sizeof *t->post);
        if (!t->post) return JR_ENOMEM;
        t->n_post = 3;
        json_t *pair[2] = {cls, sep};
        for (int i = 0; i < 2; i++) {
            json_int_t v = json_integer_value(json_array_get(pair[i], 1));
            if (v < 0 || v >= t->n_ids) return jr_fail(JR_EFORMAT, "%s: %s: %s id out of range", t->name, where, i ? "sep" : "cls");
            tok_tpl_item *it = &t->post[i ? 2 : 0];
            it->ids = jr_calloc(1, sizeof(int32_t));
            if (!it->ids) return JR_ENOMEM;
            it->ids[0] = (int32_t)v;
            it->n_ids = 1;
        }
        t->post[1].n_ids = -1;
        return JR_OK;
    }
    return jr_fail(JR_EUNSUPPORTED, "%s: %s: post-processor type \"%s\" unsupported (supported: ByteLevel, TemplateProcessing, RobertaProcessing, BertProcessing, Sequence)",
                   t->name, where, type);
}

static jr_status check_decoder(jr_tokenizer *t, json_t *d, const char *where) {
    const char *type = json_string_value(json_object_get(d, "type"));
    if (!d || json_is_null(d))
        return jr_fail(JR_EUNSUPPORTED, "%s: %s: missing; judgerl supports the ByteLevel decoder", t->name, where);
    if (type && !strcmp(type, "ByteLevel")) return JR_OK;
    if (type && !strcmp(type, "Sequence")) {
        json_t *arr = json_object_get(d, "decoders");
        size_t i;
        json_t *e;
        json_array_foreach(arr, i, e) {
            char w[128];
            snprintf(w, sizeof w, "%s.decoders[%zu]", where, i);
            jr_status st = check_decoder(t, e, w);
            if (st) return st;
        }
        if (json_array_size(arr)) return JR_OK;
    }
    return jr_fail(JR_EUNSUPPORTED, "%s: %s: decoder type \"%s\" unsupported (supported: ByteLevel)", t->name, where,
                   type ? type : "?");
}

/* Token string of a special-token entry in tokenizer_config.json: "x" or {"content": "x"}. */
static const char *cfg_token(json_t *v) {
    if (json_is_string(v)) return json_string_value(v);
    return json_string_value(json_object_get(v, "content"));
}

static jr_status set_id(jr_tokenizer *t, int32_t id, const char *form, size_t flen, const char *where) {
    if (id < 0 || id >= t->n_ids) return jr_fail(JR_EFORMAT, "%s: %s: id %d out of range", t->name, where, (int)id);
    char *f = arena_strndup(t, form, flen);
    char *b = arena_alloc(t, flen + 1);
    if (!f || !b) return JR_ENOMEM;
    size_t bl = form_to_bytes(form, flen, b);
    b[bl] = 0;
    t->form[id] = f;
    t->bytes[id] = b;
    t->blen[id] = (uint32_t)bl;
    return JR_OK;
}


/* ------------------------------------------------------------------ fast path for model.vocab / model.merges
 * Qwen3's tokenizer.json holds 151,643 vocabulary entries and 151,387 merges: building a jansson
 * value per entry dominates loading. A validating scanner finds root.model.vocab and
 * root.model.merges; they are parsed here straight into flat lists, and jansson parses the rest of
 * the document (with those two values replaced by {} and []). Any syntax error sends the whole
 * text to jansson, whose message (line, column) is the one reported. */

typedef struct { uint32_t k, kn; int64_t id; } vent;               /* offsets into strs */
typedef struct { uint32_t a, an, b, bn; int form; } ment;           /* form: 0 string, 1 list, 2 bad */
typedef struct {
    vent *v; size_t nv, capv;
    ment *m; size_t nm, capm;
    jr_strbuf strs;
    int have;                                                        /* filled by the fast path */
} model_lists;

static void lists_free(model_lists *L) {
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
        if (out && i > run && bbuf_add(out, s + run, i - run)) return -1;
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
            if (out && bbuf_add(out, u, ul)) return -1;
            run = i;
            continue;
        }
        default: return -1;
        }
        if (out && bbuf_add(out, &ch, 1)) return -1;
        i += 2;
        run = i;
    }
    if (out && i > run && bbuf_add(out, s + run, i - run)) return -1;
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
static int fast_vocab(model_lists *L, const char *s, size_t a, size_t b) {
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
            vent *nv = realloc(L->v, nc * sizeof *nv);
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

static int fast_merges(model_lists *L, const char *s, size_t a, size_t b) {
    jscan j = {s, b, a + 1, 0};
    js_ws(&j);
    if (j.i < b && s[j.i] == ']') return 0;
    for (;;) {
        js_ws(&j);
        if (L->nm == L->capm) {
            size_t nc = L->capm ? L->capm * 2 : 1024;
            ment *nm = realloc(L->m, nc * sizeof *nm);
            if (!nm) return -1;
            L->m = nm;
            L->capm = nc;
        }
        ment *m = &L->m[L->nm];
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
static int fast_model(const char *s, size_t n, model_lists *L, char **rest, size_t *rest_len) {
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
    if (fast_vocab(L, s, vr[0], vr[1]) || fast_merges(L, s, mr[0], mr[1])) { lists_free(L); return -1; }
    /* the document without the two big values */
    size_t lo1 = vr[0] < mr[0] ? vr[0] : mr[0], hi1 = vr[0] < mr[0] ? vr[1] : mr[1];
    size_t lo2 = vr[0] < mr[0] ? mr[0] : vr[0], hi2 = vr[0] < mr[0] ? mr[1] : vr[1];
    const char *r1 = vr[0] < mr[0] ? "{}" : "[]", *r2 = vr[0] < mr[0] ? "[]" : "{}";
    char *o = malloc(n + 8);
    if (!o) { lists_free(L); return -1; }
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
static int lists_from_json(model_lists *L, json_t *vocab, json_t *merges) {
    const char *k;
    json_t *v;
    json_object_foreach(vocab, k, v) {
        if (L->nv == L->capv) {
            size_t nc = L->capv ? L->capv * 2 : 1024;
            vent *nv = realloc(L->v, nc * sizeof *nv);
            if (!nv) return -1;
            L->v = nv;
            L->capv = nc;
        }
        size_t k0 = L->strs.n;
        if (bbuf_add(&L->strs, k, strlen(k))) return -1;
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
            ment *nm = realloc(L->m, nc * sizeof *nm);
            if (!nm) return -1;
            L->m = nm;
            L->capm = nc;
        }
        ment *e = &L->m[L->nm++];
        memset(e, 0, sizeof *e);
        e->form = 2;
        if (json_is_string(m)) {
            e->form = 0;
            e->a = (uint32_t)L->strs.n;
            e->an = (uint32_t)json_string_length(m);
            if (bbuf_add(&L->strs, json_string_value(m), e->an)) return -1;
        } else if (json_is_array(m) && json_array_size(m) == 2 && json_is_string(json_array_get(m, 0)) &&
                   json_is_string(json_array_get(m, 1))) {
            e->form = 1;
            e->a = (uint32_t)L->strs.n;
            e->an = (uint32_t)json_string_length(json_array_get(m, 0));
            if (bbuf_add(&L->strs, json_string_value(json_array_get(m, 0)), e->an)) return -1;
            e->b = (uint32_t)L->strs.n;
            e->bn = (uint32_t)json_string_length(json_array_get(m, 1));
            if (bbuf_add(&L->strs, json_string_value(json_array_get(m, 1)), e->bn)) return -1;
        }
    }
    if (!L->strs.p && bbuf_add(&L->strs, "", 0)) return -1;
    return 0;
}

/* model.vocab into t->vocab (t->form etc. allocated for t->n_ids ids) */
static jr_status load_vocab(jr_tokenizer *t, const model_lists *L) {
    const char *S = L->strs.p;
    if (strmap_init(&t->vocab, L->nv)) return JR_ENOMEM;
    for (size_t q = 0; q < L->nv; q++) {
        int32_t id = (int32_t)L->v[q].id;
        jr_status st = set_id(t, id, S + L->v[q].k, L->v[q].kn, "model.vocab");
        if (st) return st;
        if (strmap_put(&t->vocab, t->bytes[id], t->blen[id], id) >= 0)
            return jr_fail(JR_EFORMAT, "%s: model.vocab: \"%.*s\" stands for the same bytes as another token", t->name,
                           (int)L->v[q].kn, S + L->v[q].k);
    }
    for (int b = 0; b < 256; b++) {
        char c = (char)b;
        t->byte_id[b] = strmap_get(&t->vocab, &c, 1);
    }
    return JR_OK;
}

/* merges: "a b" strings or [a, b] lists; looked up by hashing the pair of ids */
static jr_status load_merges(jr_tokenizer *t, const model_lists *L) {
    size_t nm = L->nm;
    if (pairmap_init(&t->merges, nm)) return JR_ENOMEM;
    const char *S = L->strs.p;
    char *buf = NULL;
    size_t bufcap = 0;
    for (size_t i = 0; i < nm; i++) {
        const ment *m = &L->m[i];
        const char *a, *b;
        size_t al, bl;
        if (m->form == 0) {
            const char *s = S + m->a;
            const char *sp = memchr(s, ' ', m->an);
            if (!sp || memchr(sp + 1, ' ', m->an - (size_t)(sp + 1 - s))) {
                free(buf);
                return jr_fail(JR_EFORMAT, "%s: model.merges[%zu]: \"%.*s\" is not two tokens separated by one space", t->name, i,
                               (int)m->an, s);
            }
            a = s; al = (size_t)(sp - s); b = sp + 1; bl = m->an - al - 1;
        } else if (m->form == 1) {
            a = S + m->a; al = m->an; b = S + m->b; bl = m->bn;
        } else {
            free(buf);
            return jr_fail(JR_EFORMAT, "%s: model.merges[%zu]: expected \"a b\" or [\"a\", \"b\"]", t->name, i);
        }
        if (al + bl + 1 > bufcap) {
            bufcap = (al + bl + 1) * 2;
            char *nb = jr_realloc(buf, bufcap);
            if (!nb) { free(buf); return JR_ENOMEM; }
            buf = nb;
        }
        size_t abl = form_to_bytes(a, al, buf);
        int32_t ia = strmap_get(&t->vocab, buf, abl);
        size_t bbl = form_to_bytes(b, bl, buf + abl);
        int32_t ib = strmap_get(&t->vocab, buf + abl, bbl);
        int32_t im = strmap_get(&t->vocab, buf, abl + bbl);
        if (ia < 0 || ib < 0 || im < 0) {
            jr_fail(JR_EFORMAT, "%s: model.merges[%zu]: token \"%.*s\" is not in model.vocab", t->name, i,
                    ia < 0 ? (int)al : ib < 0 ? (int)bl : (int)(al + bl), ia < 0 ? a : ib < 0 ? b : buf);
            if (ia >= 0 && ib >= 0)
                jr_fail(JR_EFORMAT, "%s: model.merges[%zu]: merged token \"%.*s%.*s\" is not in model.vocab", t->name, i,
                        (int)al, a, (int)bl, b);
            free(buf);
            return JR_EFORMAT;
        }
        pairmap_put(&t->merges, ia, ib, (int32_t)i, im);
    }
    free(buf);
    return JR_OK;
}

/* the added tokens (already checked by load_model: integer ids, non-empty string contents) */
static jr_status load_added(jr_tokenizer *t, json_t *added) {
    size_t na = json_array_size(added);
    t->added = jr_calloc(na ? na : 1, sizeof *t->added);
    if (!t->added || strmap_init(&t->added_map, na)) return JR_ENOMEM;
    size_t i;
    json_t *e;
    json_array_foreach(added, i, e) {
        tok_added *a = &t->added[t->n_added++];
        json_t *c = json_object_get(e, "content");
        a->len = json_string_length(c);
        a->content = arena_strndup(t, json_string_value(c), a->len);
        if (!a->content) return JR_ENOMEM;
        a->id = (int32_t)json_integer_value(json_object_get(e, "id"));
        a->special = json_is_true(json_object_get(e, "special"));
        a->lstrip = json_is_true(json_object_get(e, "lstrip"));
        a->rstrip = json_is_true(json_object_get(e, "rstrip"));
        a->single_word = json_is_true(json_object_get(e, "single_word"));
        json_t *nz = json_object_get(e, "normalized");
        a->normalized = nz ? json_is_true(nz) : !a->special;
        if (jr_utf8_invalid_at(a->content, a->len, 0) != a->len)
            return jr_fail(JR_EFORMAT, "%s: added_tokens[%zu].content: invalid UTF-8", t->name, i);
        if (a->normalized) t->has_normalized_added = 1;
        else t->has_raw_added = 1;
        strmap_put(&t->added_map, a->content, a->len, a->id);
        if (!t->form[a->id]) {
            /* an added token decodes to its content as is (not through the byte-level alphabet),
             * so that decode(encode(x)) == x also for non-ASCII added tokens */
            char *f = arena_strndup(t, a->content, a->len);
            if (!f) return JR_ENOMEM;
            t->form[a->id] = t->bytes[a->id] = f;
            t->blen[a->id] = (uint32_t)a->len;
        }
        t->idflags[a->id] |= ID_ADDED | (a->special ? ID_SPECIAL : 0);
    }
    return JR_OK;
}

/* index the added tokens by first byte, longest first, for leftmost-longest matching */
static jr_status index_added(jr_tokenizer *t) {
    for (size_t k = 0; k < t->n_added; k++) {
        unsigned char b = (unsigned char)t->added[k].content[0];
        t->added_first[b] |= t->added[k].normalized ? 2 : 1;
        t->n_added_by_byte[b]++;
    }
    for (int b = 0; b < 256; b++) {
        if (!t->n_added_by_byte[b]) continue;
        t->added_by_byte[b] = jr_malloc(t->n_added_by_byte[b] * sizeof(uint32_t));
        if (!t->added_by_byte[b]) return JR_ENOMEM;
        t->n_added_by_byte[b] = 0;
    }
    for (size_t k = 0; k < t->n_added; k++) {
        unsigned char b = (unsigned char)t->added[k].content[0];
        uint32_t *v = t->added_by_byte[b];
        uint32_t j = t->n_added_by_byte[b]++;
        while (j > 0 && t->added[v[j - 1]].len < t->added[k].len) { v[j] = v[j - 1]; j--; }
        v[j] = (uint32_t)k;
    }
    return JR_OK;
}

static jr_status load_model(jr_tokenizer *t, json_t *root, model_lists *L) {
    json_t *model = json_object_get(root, "model");
    if (!json_is_object(model)) return jr_fail(JR_EFORMAT, "%s: missing \"model\" object", t->name);
    const char *type = json_string_value(json_object_get(model, "type"));
    json_t *vocab = json_object_get(model, "vocab");
    json_t *merges = json_object_get(model, "merges");
    if (type && strcmp(type, "BPE"))
        return jr_fail(JR_EUNSUPPORTED, "%s: model.type \"%s\" unsupported (judgerl supports byte-level BPE)", t->name, type);
    if (!json_is_object(vocab)) return jr_fail(JR_EFORMAT, "%s: model.vocab: missing or not an object", t->name);
    if (!json_is_array(merges)) return jr_fail(JR_EFORMAT, "%s: model.merges: missing or not a list", t->name);
    if (!L->have && lists_from_json(L, vocab, merges)) return jr_fail(JR_ENOMEM, "out of memory");
    if (!L->strs.p && bbuf_add(&L->strs, "", 0)) return jr_fail(JR_ENOMEM, "out of memory");
    const char *S = L->strs.p;
    if (json_is_true(json_object_get(model, "byte_fallback")))
        return jr_fail(JR_EUNSUPPORTED, "%s: model.byte_fallback: SentencePiece-style BPE unsupported (judgerl supports byte-level BPE)", t->name);
    const char *csp = json_string_value(json_object_get(model, "continuing_subword_prefix"));
    const char *ews = json_string_value(json_object_get(model, "end_of_word_suffix"));
    if ((csp && *csp) || (ews && *ews))
        return jr_fail(JR_EUNSUPPORTED, "%s: model: continuing_subword_prefix/end_of_word_suffix unsupported", t->name);
    t->ignore_merges = json_is_true(json_object_get(model, "ignore_merges"));

    /* id space: vocab ids and added token ids */
    int64_t maxid = -1;
    for (size_t q = 0; q < L->nv; q++) {
        if (L->v[q].id < 0 || L->v[q].id > 50000000)
            return jr_fail(JR_EFORMAT, "%s: model.vocab[\"%.*s\"]: id must be a non-negative integer", t->name,
                           (int)L->v[q].kn, S + L->v[q].k);
        if (L->v[q].id > maxid) maxid = L->v[q].id;
    }
    json_t *added = json_object_get(root, "added_tokens");
    if (added && !json_is_array(added) && !json_is_null(added))
        return jr_fail(JR_EFORMAT, "%s: added_tokens: expected a list", t->name);
    size_t i;
    json_t *e;
    json_array_foreach(added, i, e) {
        json_t *id = json_object_get(e, "id");
        if (!json_is_integer(id) || json_integer_value(id) < 0 || json_integer_value(id) > 50000000)
            return jr_fail(JR_EFORMAT, "%s: added_tokens[%zu].id: must be a non-negative integer", t->name, i);
        if (!json_is_string(json_object_get(e, "content")) || !json_string_length(json_object_get(e, "content")))
            return jr_fail(JR_EFORMAT, "%s: added_tokens[%zu].content: must be a non-empty string", t->name, i);
        if (json_integer_value(id) > maxid) maxid = json_integer_value(id);
    }
    if (maxid < 0) return jr_fail(JR_EFORMAT, "%s: model.vocab is empty", t->name);
    t->n_ids = (int32_t)(maxid + 1);
    t->form = jr_calloc((size_t)t->n_ids, sizeof *t->form);
    t->bytes = jr_calloc((size_t)t->n_ids, sizeof *t->bytes);
    t->blen = jr_calloc((size_t)t->n_ids, sizeof *t->blen);
    t->idflags = jr_calloc((size_t)t->n_ids, 1);
    if (!t->form || !t->bytes || !t->blen || !t->idflags) return JR_ENOMEM;
    jr_status st = load_vocab(t, L);
    if (st) return st;
    if ((st = load_merges(t, L))) return st;
    if ((st = load_added(t, added))) return st;
    return index_added(t);
}

static jr_status load_root(jr_tokenizer *t, json_t *root, model_lists *L) {
    if (!json_is_object(root)) return jr_fail(JR_EFORMAT, "%s: expected a JSON object", t->name);
    jr_status st = load_model(t, root, L);
    if (st) return st;
    if ((st = load_norm(t, json_object_get(root, "normalizer"), "normalizer"))) return st;
    int has_bl = 0;
    json_t *pre = json_object_get(root, "pre_tokenizer");
    if (pre && !json_is_null(pre) && (st = load_pre(t, pre, "pre_tokenizer", &has_bl))) return st;
    if (!has_bl)
        return jr_fail(JR_EUNSUPPORTED, "%s: pre_tokenizer: no ByteLevel step; judgerl supports byte-level BPE only", t->name);
    for (int b = 0; b < 256; b++)
        if (t->byte_id[b] < 0)
            return jr_fail(JR_EFORMAT, "%s: model.vocab: no token for byte 0x%02x (byte-level vocabularies need all 256)", t->name, b);
    if ((st = load_post(t, json_object_get(root, "post_processor"), "post_processor"))) return st;
    if ((st = check_decoder(t, json_object_get(root, "decoder"), "decoder"))) return st;
    return JR_OK;
}

static jr_tokenizer *tok_new(const char *name) {
    bytelevel_init();
    jr_tokenizer *t = jr_calloc(1, sizeof *t);
    if (!t) return NULL;
    t->name = jr_strdup(name);
    t->bos = t->eos = t->pad = -1;
    t->wcache = calloc(N_WCACHE, sizeof *t->wcache);
    if (!t->name || !t->wcache) { free(t->name); free(t->wcache); free(t); return NULL; }
    t->n_wcache = N_WCACHE;
    for (int i = 0; i < N_WCACHE; i++) pthread_mutex_init(&t->wcache[i].mu, NULL);
    return t;
}

void jr_tok_free(jr_tokenizer *t) {
    if (!t) return;
    for (size_t i = 0; i < t->n_blocks; i++) free(t->blocks[i]);
    free(t->blocks);
    free(t->form);
    free(t->bytes);
    free(t->blen);
    free(t->idflags);
    strmap_free(&t->vocab);
    strmap_free(&t->added_map);
    pairmap_free(&t->merges);
    free(t->added);
    for (int b = 0; b < 256; b++) free(t->added_by_byte[b]);
    for (int i = 0; i < t->n_pres; i++) pcre2_code_free(t->pres[i].re);
    free(t->pres);
    for (int i = 0; i < t->n_post; i++) free(t->post[i].ids);
    free(t->post);
    free(t->eos_extra);
    free(t->bos_token);
    free(t->eos_token);
    jinja_free(t->chat);
    free(t->chat_error);
    for (int i = 0; i < t->n_wcache; i++) {
        wcache_clear(&t->wcache[i]);
        pthread_mutex_destroy(&t->wcache[i].mu);
    }
    free(t->wcache);
    free(t->name);
    free(t);
}

/* bos/eos/pad when no tokenizer_config.json names them: the first well-known special token present. */
static void default_specials(jr_tokenizer *t) {
    static const char *eos_names[] = {"<|im_end|>", "<|endoftext|>", "<|end_of_text|>", "</s>", "<|eot_id|>", NULL};
    static const char *bos_names[] = {"<|begin_of_text|>", "<s>", NULL};
    for (int i = 0; eos_names[i] && t->eos < 0; i++) t->eos = strmap_get(&t->added_map, eos_names[i], strlen(eos_names[i]));
    for (int i = 0; bos_names[i] && t->bos < 0; i++) t->bos = strmap_get(&t->added_map, bos_names[i], strlen(bos_names[i]));
}

jr_status jr_tok_load_json(jr_tokenizer **out, const char *text, size_t len, const char *name) {
    *out = NULL;
    jr_tokenizer *t = tok_new(name);
    if (!t) return jr_fail(JR_ENOMEM, "%s: out of memory", name);
    json_error_t je;
    model_lists L;
    memset(&L, 0, sizeof L);
    char *rest = NULL;
    size_t rest_len = 0;
    json_t *root;
    if (!fast_model(text, len, &L, &rest, &rest_len)) {
        root = json_loadb(rest, rest_len, JSON_ALLOW_NUL, &je);
        free(rest);
        if (!root) { /* the scanner accepted what jansson does not: take jansson's view of everything */
            lists_free(&L);
            root = json_loadb(text, len, JSON_ALLOW_NUL, &je);
        }
    } else root = json_loadb(text, len, JSON_ALLOW_NUL, &je);
    if (!root) {
        jr_fail(JR_EFORMAT, "%s: line %d column %d: %s", name, je.line, je.column, je.text);
        lists_free(&L);
        jr_tok_free(t);
        return JR_EFORMAT;
    }
    jr_status st = load_root(t, root, &L);
    lists_free(&L);
    json_decref(root);
    if (st) { jr_tok_free(t); return st; }
    default_specials(t);
    t->vocab_size = t->n_ids;
    t->bos_token = jr_strdup(t->bos >= 0 ? t->form[t->bos] : "");
    t->eos_token = jr_strdup(t->eos >= 0 ? t->form[t->eos] : "");
    if (!t->bos_token || !t->eos_token) { jr_tok_free(t); return JR_ENOMEM; }
    *out = t;
    return JR_OK;
}

static jr_status read_json_file(const char *path, json_t **out) {
    json_error_t je;
    *out = json_load_file(path, JSON_DECODE_INT_AS_REAL, &je); /* model_max_length may exceed int64 */
    if (!*out) return jr_fail(JR_EFORMAT, "%s: line %d column %d: %s", path, je.line, je.column, je.text);
    return JR_OK;
}

/* Reads tokenizer_config.json, config.json, generation_config.json and chat_template.jinja beside
 * tokenizer.json in dir. */
static jr_status load_side_files(jr_tokenizer *t, const char *dir) {
    jr_status st = JR_OK;
    char *p = jr_path_join(dir, "tokenizer_config.json");
    if (!p) return JR_ENOMEM;
    if (jr_path_exists(p)) {
        json_t *cfg;
        if ((st = read_json_file(p, &cfg))) { free(p); return st; }
        const char *names[3] = {"bos_token", "eos_token", "pad_token"};
        int32_t *dst[3] = {&t->bos, &t->eos, &t->pad};
        for (int i = 0; i < 3 && !st; i++) {
            json_t *v = json_object_get(cfg, names[i]);
            if (!v) continue;
            if (json_is_null(v)) { *dst[i] = -1; continue; }
            const char *s = cfg_token(v);
            int32_t id = s ? jr_tok_token_to_id(t, s) : -1;
            if (id < 0) st = jr_fail(JR_EFORMAT, "%s: %s: \"%s\" is not a token of tokenizer.json", p, names[i], s ? s : "?");
            *dst[i] = id;
        }
        json_t *ct = json_object_get(cfg, "chat_template");
        const char *tpl = json_string_value(ct);
        if (json_is_array(ct)) { /* [{name, template}, ...]: the "default" one */
            size_t i;
            json_t *e;
            json_array_foreach(ct, i, e) if (!strcmp(json_string_value(json_object_get(e, "name")) ?: "", "default"))
                tpl = json_string_value(json_object_get(e, "template"));
        }
        free(t->bos_token);
        free(t->eos_token);
        t->bos_token = jr_strdup(t->bos >= 0 ? t->form[t->bos] : "");
        t->eos_token = jr_strdup(t->eos >= 0 ? t->form[t->eos] : "");
        if (!st && tpl) tok_chat_attach(t, tpl, p);
        json_decref(cfg);
    }
    free(p);
    if (st) return st;
    if (!(p = jr_path_join(dir, "chat_template.jinja"))) return JR_ENOMEM;
    if (jr_path_exists(p)) {
        char *txt;
        if ((st = jr_read_file(p, &txt, NULL))) { free(p); return st; }
        tok_chat_attach(t, txt, p);
        free(txt);
    }
    free(p);
    if (!(p = jr_path_join(dir, "config.json"))) return JR_ENOMEM;
    if (jr_path_exists(p)) {
        json_t *cfg;
        if ((st = read_json_file(p, &cfg))) { free(p); return st; }
        json_t *vs = json_object_get(cfg, "vocab_size");
        if (json_is_number(vs)) {
            double v = json_number_value(vs);
            if (v < t->n_ids || v > 1e9 || v != (double)(int64_t)v)
                st = jr_fail(JR_EFORMAT, "%s: vocab_size=%g must be an integer >= the tokenizer's %d tokens", p, v, (int)t->n_ids);
            else t->vocab_size = (int32_t)v;
        }
        json_decref(cfg);
    }
    free(p);
    if (st) return st;
    if (!(p = jr_path_join(dir, "generation_config.json"))) return JR_ENOMEM;
    if (jr_path_exists(p)) {
        json_t *cfg;
        if ((st = read_json_file(p, &cfg))) { free(p); return st; }
        json_t *e = json_object_get(cfg, "eos_token_id");
        size_t n = json_is_array(e) ? json_array_size(e) : json_is_number(e) ? 1 : 0;
        t->eos_extra = jr_calloc(n ? n : 1, sizeof *t->eos_extra);
        if (!t->eos_extra) st = JR_ENOMEM;
        for (size_t i = 0; i < n && !st; i++) {
            json_t *x = json_is_array(e) ? json_array_get(e, i) : e;
            if (json_is_number(x) && json_number_value(x) >= 0 && json_number_value(x) < t->n_ids)
                t->eos_extra[t->n_eos_extra++] = (int32_t)json_number_value(x);
        }
        json_decref(cfg);
    }
    free(p);
    if (!t->bos_token || !t->eos_token) return JR_ENOMEM;
    return st;
}

jr_status jr_tok_load(jr_tokenizer **out, const char *path) {
    *out = NULL;
    int is_dir = 0;
    char *file = NULL, *dir = NULL;
    {
        char *probe = jr_path_join(path, "tokenizer.json");
        if (!probe) return JR_ENOMEM;
        FILE *f = fopen(probe, "rb");
        if (f) { fclose(f); is_dir = 1; file = probe; dir = jr_strdup(path); }
        else free(probe);
    }
    if (!is_dir) {
        file = jr_strdup(path);
        const char *slash = strrchr(path, '/');
        dir = slash ? strndup(path, (size_t)(slash - path) + 1) : jr_strdup(".");
    }
    if (!file || !dir) { free(file); free(dir); return JR_ENOMEM; }
    char *text;
    size_t len;
    jr_status st = jr_read_file(file, &text, &len);
    if (st) {
        if (!jr_path_exists(path))
            st = jr_fail(JR_ENOTFOUND, "%s: no such tokenizer.json file or model directory", path);
        else if (!is_dir && jr_path_exists(dir))
            st = jr_fail(JR_ENOTFOUND, "%s: not a tokenizer.json file or a directory holding one", path);
        free(file); free(dir);
        return st;
    }
    st = jr_tok_load_json(out, text, len, file);
    free(text);
    /* side files only for a model directory, or a tokenizer.json named so inside one */
    if (!st && (is_dir || !strcmp(strrchr(file, '/') ? strrchr(file, '/') + 1 : file, "tokenizer.json"))) {
        st = load_side_files(*out, dir);
        if (st) { jr_tok_free(*out); *out = NULL; }
    }
    free(file);
    free(dir);
    return st;
}

/* ------------------------------------------------------------------ lookups */

int32_t jr_tok_n_tokens(const jr_tokenizer *t) { return t->n_ids; }
int32_t jr_tok_vocab_size(const jr_tokenizer *t) { return t->vocab_size; }

const char *jr_tok_id_to_token(const jr_tokenizer *t, int32_t id) {
    return id >= 0 && id < t->n_ids ? t->form[id] : NULL;
}

const char *jr_tok_id_bytes(const jr_tokenizer *t, int32_t id, size_t *len) {
    if (id < 0 || id >= t->n_ids || !t->form[id]) return NULL;
    if (len) *len = t->blen[id];
    return t->bytes[id];
}

int32_t jr_tok_bos_id(const jr_tokenizer *t) { return t->bos; }
int32_t jr_tok_eos_id(const jr_tokenizer *t) { return t->eos; }
int32_t jr_tok_pad_id(const jr_tokenizer *t) { return t->pad; }

int jr_tok_is_eos(const jr_tokenizer *t, int32_t id) {
    if (id < 0) return 0;
    if (id == t->eos) return 1;
    for (int i = 0; i < t->n_eos_extra; i++)
        if (t->eos_extra[i] == id) return 1;
    return 0;
}

int jr_tok_is_special(const jr_tokenizer *t, int32_t id) {
    return id >= 0 && id < t->n_ids && (t->idflags[id] & ID_SPECIAL);
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
    if (c->own) { wcache_clear(c->own); free(c->own); }
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
        int32_t id = strmap_get(&t->vocab, w, n);
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
        if (pairmap_get(&t->merges, sym[i], sym[i + 1], &rank, &merged))
            if (heap_push(c, ((uint64_t)(uint32_t)rank << 32) | i)) return JR_ENOMEM;
    while (c->heapn) {
        uint64_t top = heap_pop(c);
        int32_t pos = (int32_t)(uint32_t)top, r = (int32_t)(top >> 32);
        if (sym[pos] < 0) continue;            /* merged away */
        int32_t nx = next[pos];
        if (nx < 0) continue;
        if (!pairmap_get(&t->merges, sym[pos], sym[nx], &rank, &merged) || rank != r) continue; /* stale */
        sym[pos] = merged;
        sym[nx] = -1;
        next[pos] = next[nx];
        if (next[nx] >= 0) prev[next[nx]] = pos;
        if (prev[pos] >= 0 && pairmap_get(&t->merges, sym[prev[pos]], sym[pos], &rank, &merged))
            if (heap_push(c, ((uint64_t)(uint32_t)rank << 32) | (uint32_t)prev[pos])) return JR_ENOMEM;
        if (next[pos] >= 0 && pairmap_get(&t->merges, sym[pos], sym[next[pos]], &rank, &merged))
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
    uint64_t h = hash_bytes(w, n) | 1;
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
    if (bbuf_add(&wc->bytes, w, n)) return JR_ENOMEM;
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
    jr_status st = bbuf_add(&c->text, cur, curn);
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
        st = t->n_norms ? normalize_all(c, s, n) : bbuf_add(&c->text, s, n);
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
        if (a > seg && (st = bbuf_add(&c->text, s + seg, a - seg))) return st;
        int needs = !nfc_only;
        for (size_t q = a; q < j && !needs; q++) {
            unsigned char b = (unsigned char)s[q];
            needs = b >= 0xCC; /* lead bytes of code points >= U+0300 */
        }
        if ((st = needs ? normalize_all(c, s + a, j - a) : bbuf_add(&c->text, s + a, j - a))) return st;
        seg = i = j;
    }
    if (n > seg && (st = bbuf_add(&c->text, s + seg, n - seg))) return st;
    if (!n && (st = bbuf_add(&c->text, "", 0))) return st;
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
                if ((st = bbuf_add(&c->text, " ", 1))) return st;
                if ((st = bbuf_add(&c->text, c->text.p + sp->off, sp->len))) return st;
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
        if (bbuf_add(&raw, t->bytes[id], t->blen[id])) { free(raw.p); return jr_fail(JR_ENOMEM, "out of memory"); }
    }
    jr_utf8_append_lossy(&res, raw.p ? raw.p : "", raw.n); /* as Rust's from_utf8_lossy (HF) */
    jr_status st = res.oom ? JR_ENOMEM : JR_OK;
    free(raw.p);
    if (!st && !res.p) st = bbuf_add(&res, "", 0);
    if (st) { free(res.p); return jr_fail(JR_ENOMEM, "out of memory"); }
    *out = res.p;
    if (len) *len = res.n;
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
    if (s->npend) st = bbuf_add(&in, s->pend, (size_t)s->npend);
    if (!st && n) st = bbuf_add(&in, bytes, n);
    size_t keep = 0;
    if (!st && !final && in.n) {
        /* hold back a trailing incomplete (but so far valid) UTF-8 sequence */
        size_t j = in.n, back = 0;
        while (j > 0 && back < 3 && ((unsigned char)in.p[j - 1] & 0xC0) == 0x80) { j--; back++; }
        if (j > 0) {
            int need = (int)jr_utf8_lead_len((unsigned char)in.p[j - 1]);
            size_t have = in.n - (j - 1);
            if (need > 1 && have < (size_t)need) {
                uint32_t cp;
                /* a valid prefix: check by padding with continuation bytes */
                unsigned char tmp[4];
                memcpy(tmp, in.p + j - 1, have);
                for (size_t q = have; q < (size_t)need; q++) tmp[q] = 0x80 | (q == 1 && tmp[0] == 0xE0 ? 0x20 : q == 1 && tmp[0] == 0xF0 ? 0x10 : 0);
                if (jr_utf8_decode((const char *)tmp, (size_t)need, &cp) == (size_t)need) keep = have;
            }
        }
    }
    if (!st) jr_utf8_append_lossy(&res, in.p ? in.p : "", in.n - keep);
    if (!st && res.oom) st = JR_ENOMEM;
    if (!st && !res.p) st = bbuf_add(&res, "", 0);
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
