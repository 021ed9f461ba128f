/* bpe_load.c - loading an HF tokenizer.json (and its tokenizer_config.json / special_tokens_map.json):
 * vocabulary, merges, added tokens, normalizers, pre-tokenizers, post-processor; id lookups */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <jansson.h>
#include <pcre2.h>

#include "judgerl/fsutil.h"
#include "judgerl/utf8.h"
#include "tokenizer/bpe_internal.h"
#include "tokenizer/jinja.h"

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

/* Inserts (key must outlive the map); returns the previous value or -1. Never grows: init with
 * enough room. */
static int32_t strmap_put(tok_strmap *m, const char *s, size_t n, int32_t v) {
    uint64_t h = tok_hash_bytes(s, n);
    size_t i = tok_strmap_slot(m, s, n, h);
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

/* Keeps the first (lowest-rank) merge of a pair, as HF does. */
static void pairmap_put(tok_pairmap *m, int32_t a, int32_t b, int32_t rank, int32_t merged) {
    uint64_t k = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
    size_t i = tok_mix64(k) & (m->cap - 1);
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

static int16_t cp_to_byte[324]; /* code points < 324 -> byte, -1 otherwise */

static void bytelevel_init(void) {
    static int done;
    if (__atomic_load_n(&done, __ATOMIC_ACQUIRE)) return;
    int16_t rev[324];
    for (int i = 0; i < 324; i++) rev[i] = -1;
    for (unsigned b = 0; b < 256; b++) rev[tok_bytelevel_cp(b)] = (int16_t)b;
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
    int32_t id = tok_strmap_get(&t->added_map, token, n);
    if (id >= 0) return id;
    char *tmp = malloc(n + 1);
    if (!tmp) return -1;
    size_t bl = form_to_bytes(token, n, tmp);
    id = tok_strmap_get(&t->vocab, tmp, bl);
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


/* model.vocab into t->vocab (t->form etc. allocated for t->n_ids ids) */
static jr_status load_vocab(jr_tokenizer *t, const tok_lists *L) {
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
        t->byte_id[b] = tok_strmap_get(&t->vocab, &c, 1);
    }
    return JR_OK;
}

/* merges: "a b" strings or [a, b] lists; looked up by hashing the pair of ids */
static jr_status load_merges(jr_tokenizer *t, const tok_lists *L) {
    size_t nm = L->nm;
    if (pairmap_init(&t->merges, nm)) return JR_ENOMEM;
    const char *S = L->strs.p;
    char *buf = NULL;
    size_t bufcap = 0;
    for (size_t i = 0; i < nm; i++) {
        const tok_ment *m = &L->m[i];
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
        int32_t ia = tok_strmap_get(&t->vocab, buf, abl);
        size_t bbl = form_to_bytes(b, bl, buf + abl);
        int32_t ib = tok_strmap_get(&t->vocab, buf + abl, bbl);
        int32_t im = tok_strmap_get(&t->vocab, buf, abl + bbl);
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

static jr_status load_model(jr_tokenizer *t, json_t *root, tok_lists *L) {
    json_t *model = json_object_get(root, "model");
    if (!json_is_object(model)) return jr_fail(JR_EFORMAT, "%s: missing \"model\" object", t->name);
    const char *type = json_string_value(json_object_get(model, "type"));
    json_t *vocab = json_object_get(model, "vocab");
    json_t *merges = json_object_get(model, "merges");
    if (type && strcmp(type, "BPE"))
        return jr_fail(JR_EUNSUPPORTED, "%s: model.type \"%s\" unsupported (judgerl supports byte-level BPE)", t->name, type);
    if (!json_is_object(vocab)) return jr_fail(JR_EFORMAT, "%s: model.vocab: missing or not an object", t->name);
    if (!json_is_array(merges)) return jr_fail(JR_EFORMAT, "%s: model.merges: missing or not a list", t->name);
    if (!L->have && tok_lists_from_json(L, vocab, merges)) return jr_fail(JR_ENOMEM, "out of memory");
    if (!L->strs.p && tok_buf_add(&L->strs, "", 0)) return jr_fail(JR_ENOMEM, "out of memory");
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

static jr_status load_root(jr_tokenizer *t, json_t *root, tok_lists *L) {
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
        tok_wcache_clear(&t->wcache[i]);
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
    for (int i = 0; eos_names[i] && t->eos < 0; i++) t->eos = tok_strmap_get(&t->added_map, eos_names[i], strlen(eos_names[i]));
    for (int i = 0; bos_names[i] && t->bos < 0; i++) t->bos = tok_strmap_get(&t->added_map, bos_names[i], strlen(bos_names[i]));
}

jr_status jr_tok_load_json(jr_tokenizer **out, const char *text, size_t len, const char *name) {
    *out = NULL;
    jr_tokenizer *t = tok_new(name);
    if (!t) return jr_fail(JR_ENOMEM, "%s: out of memory", name);
    json_error_t je;
    tok_lists L;
    memset(&L, 0, sizeof L);
    char *rest = NULL;
    size_t rest_len = 0;
    json_t *root;
    if (!tok_lists_scan(text, len, &L, &rest, &rest_len)) {
        root = json_loadb(rest, rest_len, JSON_ALLOW_NUL, &je);
        free(rest);
        if (!root) { /* the scanner accepted what jansson does not: take jansson's view of everything */
            tok_lists_free(&L);
            root = json_loadb(text, len, JSON_ALLOW_NUL, &je);
        }
    } else root = json_loadb(text, len, JSON_ALLOW_NUL, &je);
    if (!root) {
        jr_fail(JR_EFORMAT, "%s: line %d column %d: %s", name, je.line, je.column, je.text);
        tok_lists_free(&L);
        jr_tok_free(t);
        return JR_EFORMAT;
    }
    jr_status st = load_root(t, root, &L);
    tok_lists_free(&L);
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

