/* bpe_internal.h - what the BPE tokenizer's files share (bpe.c encodes and decodes, bpe_load.c
 * loads, bpe_json.c scans model.vocab / model.merges): the maps' lookups, inline for the encoder's
 * inner loop, the word caches and the scanned lists */
#ifndef JUDGERL_BPE_INTERNAL_H
#define JUDGERL_BPE_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <jansson.h>

#include "judgerl/strbuf.h"
#include "tokenizer/tok_internal.h"

/* Appends n bytes to b; JR_ENOMEM (b unchanged and usable again) when that fails. */
static inline jr_status tok_buf_add(jr_strbuf *b, const void *p, size_t n) {
    jr_strbuf_addn(b, p, n);
    if (!b->oom) return JR_OK;
    b->oom = 0; /* the contents are intact: a later call may try again */
    return JR_ENOMEM;
}

static inline uint64_t tok_hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a, then a final mix */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 32);
}

static inline uint64_t tok_mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The slot holding key s[0, n), or the empty slot where it would go (linear probing). */
static inline size_t tok_strmap_slot(const tok_strmap *m, const char *s, size_t n, uint64_t h) {
    size_t i = h & (m->cap - 1);
    while (m->e[i].key && !(m->e[i].hash == h && m->e[i].klen == n && !memcmp(m->e[i].key, s, n)))
        i = (i + 1) & (m->cap - 1);
    return i;
}

static inline int32_t tok_strmap_get(const tok_strmap *m, const char *s, size_t n) {
    if (!m->cap) return -1;
    size_t i = tok_strmap_slot(m, s, n, tok_hash_bytes(s, n));
    return m->e[i].key ? m->e[i].val : -1;
}

static inline int tok_pairmap_get(const tok_pairmap *m, int32_t a, int32_t b, int32_t *rank, int32_t *merged) {
    uint64_t k = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
    size_t i = tok_mix64(k) & (m->cap - 1);
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

/* Frees what a cache holds and leaves it empty. */
void tok_wcache_clear(struct tok_wcache *w);

/* ---- the fast path for model.vocab / model.merges (bpe_json.c)
 * Qwen3's tokenizer.json holds 151,643 vocabulary entries and 151,387 merges: building a jansson
 * value per entry dominates loading. A validating scanner finds root.model.vocab and
 * root.model.merges; they are parsed here straight into flat lists, and jansson parses the rest of
 * the document (with those two values replaced by {} and []). Any syntax error sends the whole
 * text to jansson, whose message (line, column) is the one reported. */

typedef struct { uint32_t k, kn; int64_t id; } tok_vent;               /* offsets into strs */
typedef struct { uint32_t a, an, b, bn; int form; } tok_ment;           /* form: 0 string, 1 list, 2 bad */
typedef struct {
    tok_vent *v; size_t nv, capv;
    tok_ment *m; size_t nm, capm;
    jr_strbuf strs;
    int have;                                                        /* filled by the fast path */
} tok_lists;

void tok_lists_free(tok_lists *L);
/* Finds root.model.vocab and root.model.merges in the tokenizer.json text s[0..n) and parses them
 * into L; *rest (caller frees) gets the text with those two values replaced by {} and [] for jansson.
 * 0 when done, -1 on any syntax error (then leave the whole text to jansson) or out of memory. */
int tok_lists_scan(const char *s, size_t n, tok_lists *L, char **rest, size_t *rest_len);
/* Fills L from jansson's model.vocab and model.merges (the slow path); -1 when out of memory. */
int tok_lists_from_json(tok_lists *L, json_t *vocab, json_t *merges);

#endif
