/* tok.c - jr_tok: opens a tokenizer by spec and adapts it to the common interface */
#include <string.h>

#include "judgerl/bytetok.h"
#include "judgerl/tok.h"

static jr_status byte_encode(void *ctx, const char *text, size_t len, int32_t **ids, size_t *n) {
    (void)ctx;
    return jr_bytetok_encode(text, len, 0, ids, n);
}

static jr_status byte_decode(void *ctx, const int32_t *ids, size_t n, char **text, size_t *len) {
    (void)ctx;
    return jr_bytetok_decode(ids, n, 0, text, len);
}

jr_status jr_tok_open(jr_tok *t, const char *spec) {
    memset(t, 0, sizeof *t);
    if (spec && !strcmp(spec, "byte")) {
        t->kind = "byte";
        t->n_vocab = JR_BYTETOK_VOCAB;
        t->bos_id = JR_BYTETOK_BOS;
        t->eos_id = JR_BYTETOK_EOS;
        t->pad_id = JR_BYTETOK_PAD;
        t->encode = byte_encode;
        t->decode = byte_decode;
        return JR_OK;
    }
    return jr_fail(JR_EUNSUPPORTED, "tokenizer '%s': unknown kind (supported: byte)", spec ? spec : "(null)");
}

void jr_tok_close(jr_tok *t) {
    if (t && t->close) t->close(t->ctx);
    if (t) memset(t, 0, sizeof *t);
}
