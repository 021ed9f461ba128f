/* tok_internal.h - the tokenizer's private layout, shared by bpe.c (encode/decode) and chat.c (templates) */
#ifndef JUDGERL_TOK_INTERNAL_H
#define JUDGERL_TOK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "judgerl/tokenizer.h"

struct jinja_tpl;

/* bytes -> id, open addressing; one packed entry per slot so a probe touches one cache line */
typedef struct {
    const char *key;  /* NULL = empty; points into the tokenizer's arena */
    uint32_t klen;
    int32_t val;
    uint64_t hash;
} tok_strent;

typedef struct {
    tok_strent *e;
    size_t cap, n;
} tok_strmap;

/* (left id, right id) -> (rank, merged id) */
typedef struct {
    uint64_t key;     /* (left << 32 | right) + 1; 0 = empty */
    int32_t rank;
    int32_t merged;
} tok_pairent;

typedef struct {
    tok_pairent *e;
    size_t cap, n;
} tok_pairmap;

typedef struct {
    char *content;
    size_t len;
    int32_t id;
    int special, lstrip, rstrip, single_word, normalized;
} tok_added;

enum { NORM_NFC = 1, NORM_NFD, NORM_NFKC, NORM_NFKD, NORM_LOWER };

enum { PRE_SPLIT = 1, PRE_BYTELEVEL, PRE_DIGITS };
enum { BEH_ISOLATED = 1, BEH_REMOVED, BEH_MERGED_PREV, BEH_MERGED_NEXT, BEH_CONTIGUOUS };

typedef struct {
    int type;
    void *re;           /* pcre2_code * (Split, ByteLevel with use_regex, Digits) */
    int behavior, invert;
    int add_prefix_space;
} tok_pre;

/* post-processor template item: a special token's ids, or the sequence itself (n_ids == -1) */
typedef struct {
    int32_t *ids;
    int n_ids;
} tok_tpl_item;

typedef struct jr_chat_tpl jr_chat_tpl;

struct jr_tokenizer {
    char *name;
    /* arena blocks */
    char **blocks;
    size_t n_blocks, cap_blocks, block_used, block_cap;

    int32_t n_ids;         /* max id + 1 */
    const char **form;     /* vocabulary form per id (NULL = hole) */
    const char **bytes;    /* decoded bytes per id */
    uint32_t *blen;
    uint8_t *idflags;      /* ID_ADDED, ID_SPECIAL */

    tok_strmap vocab;      /* model vocab: bytes -> id */
    tok_strmap added_map;  /* added token content -> id */
    tok_pairmap merges;
    int32_t byte_id[256];
    int ignore_merges;

    tok_added *added;
    size_t n_added;
    int has_normalized_added, has_raw_added;
    uint8_t added_first[256];    /* bit 1: a raw added token starts with this byte; bit 2: a normalized one */
    uint32_t *added_by_byte[256]; /* indices into added, longest first, per first byte */
    uint32_t n_added_by_byte[256];

    int norms[8];
    int n_norms;
    tok_pre *pres;
    int n_pres;

    tok_tpl_item *post;    /* NULL: no template (ByteLevel / none) */
    int n_post;

    int32_t bos, eos, pad;
    int32_t *eos_extra;
    int n_eos_extra;
    int32_t vocab_size;

    struct tok_wcache *wcache;  /* word -> ids caches shared by encode calls (each locked by one call) */
    int n_wcache;

    char *bos_token, *eos_token;  /* strings handed to chat templates ("" when none) */
    struct jinja_tpl *chat;
    char *chat_error;      /* why the model's template could not be used (reported at render) */
};

enum { ID_ADDED = 1, ID_SPECIAL = 2 };

/* Parses and attaches a chat template found in `origin`; on failure keeps the error in
 * t->chat_error for jr_chat_render to report (loading itself does not fail). */
void tok_chat_attach(jr_tokenizer *t, const char *tpl, const char *origin);

/* GPT-2's ByteLevel alphabet (HF's bytes_to_unicode): the code point that stands for byte b in a
 * vocabulary. Printable bytes stand for themselves; the other 68 move to U+0100.. in byte order. */
static inline int tok_bytelevel_keeps(unsigned b) { return (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff); }
static inline uint32_t tok_bytelevel_cp(unsigned b) {
    if (tok_bytelevel_keeps(b)) return b;
    uint32_t k = 0;
    for (unsigned x = 0; x < b; x++) k += !tok_bytelevel_keeps(x);
    return 256 + k;
}

#endif
