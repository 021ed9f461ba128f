/* test_textcodec.c - jr_textcodec: byte and tokenizer.json specs, plain-text encode, chat encode with loss flags */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "judgerl/fsutil.h"
#include "judgerl/textcodec.h"

static char *eb_dir(void) {
    char *d = jr_path_join(jt_root(), "data/eightball/tokenizer");
    return d;
}

TEST(byte_spec) {
    jr_textcodec t;
    CHECK_OK(jr_textcodec_open(&t, "byte"));
    CHECK_STR(t.kind, "byte");
    CHECK(t.hf == NULL);
    CHECK(t.n_vocab > 256);
    int32_t *ids = NULL;
    uint8_t *loss = NULL;
    size_t n = 0;
    jr_chat_msg m[1] = {{"user", "hi"}};
    CHECK(jr_textcodec_encode_chat(&t, m, 1, -1, &ids, &loss, &n) == JR_EINVAL);
    CHECK(strstr(jr_errmsg(), "no chat template") != NULL);
    CHECK(ids == NULL && loss == NULL && n == 0);
    jr_textcodec_close(&t);
}

TEST(bad_spec) {
    jr_textcodec t;
    CHECK(jr_textcodec_open(&t, "/nonexistent/tok.json") != JR_OK);
    CHECK(strstr(jr_errmsg(), "/nonexistent/tok.json") != NULL);
    CHECK(t.encode == NULL && t.hf == NULL && t.ctx == NULL);
}

TEST(bpe_dir_and_file) {
    char *dir = eb_dir(), *file = jr_path_join(dir, "tokenizer.json");
    jr_textcodec a, b;
    CHECK_OK(jr_textcodec_open(&a, dir));
    CHECK_OK(jr_textcodec_open(&b, file));
    CHECK_STR(a.kind, "bpe");
    CHECK(a.hf != NULL);
    CHECK(a.n_vocab == jr_tok_n_tokens(a.hf) && a.n_vocab == b.n_vocab && a.n_vocab == 512);
    CHECK(a.eos_id == jr_tok_token_to_id(a.hf, "<|im_end|>") && a.eos_id >= 0);
    CHECK(a.pad_id == jr_tok_token_to_id(a.hf, "<|endoftext|>") && a.pad_id >= 0);
    CHECK(a.bos_id == -1);
    /* plain text: special-token text stays text */
    const char *s = "Will it rain? <|im_end|> yes";
    int32_t *ids = NULL;
    size_t n = 0;
    CHECK_OK(a.encode(a.ctx, s, strlen(s), &ids, &n));
    CHECK(n > 3);
    for (size_t i = 0; i < n; i++) CHECK(!jr_tok_is_special(a.hf, ids[i]) && ids[i] < a.n_vocab);
    char *back = NULL;
    size_t bl = 0;
    CHECK_OK(a.decode(a.ctx, ids, n, &back, &bl));
    CHECK_STR(back, s);
    free(back);
    free(ids);
    /* decode drops specials */
    int32_t sp[2] = {a.eos_id, a.pad_id};
    CHECK_OK(a.decode(a.ctx, sp, 2, &back, &bl));
    CHECK(bl == 0);
    free(back);
    jr_textcodec_close(&a);
    jr_textcodec_close(&b);
    free(dir);
    free(file);
}

TEST(chat_loss_on_assistant_only) {
    char *dir = eb_dir();
    jr_textcodec t;
    CHECK_OK(jr_textcodec_open(&t, dir));
    jr_chat_msg m[4] = {{"user", "Will it rain?"}, {"assistant", "Yes."}, {"user", "Sure?"}, {"assistant", "No doubt."}};
    int32_t *ids = NULL;
    uint8_t *loss = NULL;
    size_t n = 0;
    CHECK_OK(jr_textcodec_encode_chat(&t, m, 4, -1, &ids, &loss, &n));
    /* the loss tokens decode to the assistant contents with their end-of-turn token, the rest to the rest */
    int32_t *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
    size_t ni = 0, no = 0;
    for (size_t i = 0; i < n; i++) {
        if (loss[i]) in[ni++] = ids[i];
        else out[no++] = ids[i];
    }
    char *a = NULL, *b = NULL, *all = NULL;
    CHECK_OK(jr_tok_decode(t.hf, in, ni, 0, &a, NULL));
    CHECK_OK(jr_tok_decode(t.hf, out, no, 0, &b, NULL));
    CHECK_OK(jr_tok_decode(t.hf, ids, n, 0, &all, NULL));
    CHECK_STR(a, "Yes.<|im_end|>No doubt.<|im_end|>");
    CHECK_STR(b, "<|im_start|>user\nWill it rain?<|im_end|>\n<|im_start|>assistant\n\n"
                 "<|im_start|>user\nSure?<|im_end|>\n<|im_start|>assistant\n\n");
    CHECK_STR(all, "<|im_start|>user\nWill it rain?<|im_end|>\n<|im_start|>assistant\nYes.<|im_end|>\n"
                   "<|im_start|>user\nSure?<|im_end|>\n<|im_start|>assistant\nNo doubt.<|im_end|>\n");
    /* the chat's specials are single special tokens, not their text */
    int n_eos = 0;
    for (size_t i = 0; i < n; i++) n_eos += ids[i] == t.eos_id;
    CHECK(n_eos == 4);
    free(a); free(b); free(all); free(in); free(out); free(ids); free(loss);
    jr_textcodec_close(&t);
    free(dir);
}

TEST(copy_files) {
    char *dir = eb_dir(), *tmp = jt_tmpdir("tok");
    jr_textcodec t, u;
    CHECK_OK(jr_textcodec_open(&t, dir));
    CHECK_OK(jr_textcodec_copy_files(&t, tmp));
    CHECK_OK(jr_textcodec_open(&u, tmp));
    CHECK(u.n_vocab == t.n_vocab && u.eos_id == t.eos_id && jr_tok_has_chat_template(u.hf));
    jr_textcodec_close(&u);
    jr_textcodec_close(&t);
    char *p1 = jr_path_join(tmp, "tokenizer.json"), *p2 = jr_path_join(tmp, "tokenizer_config.json");
    remove(p1); remove(p2); remove(tmp);
    free(p1); free(p2); free(tmp); free(dir);
}

int main(void) {
    RUN(byte_spec);
    RUN(bad_spec);
    RUN(bpe_dir_and_file);
    RUN(chat_loss_on_assistant_only);
    RUN(copy_files);
    return jt_done();
}
