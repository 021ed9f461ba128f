/* chat.c - chat templates: attaching a Jinja template to a tokenizer and rendering conversations */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "judgerl/fsutil.h"
#include "tokenizer/jinja.h"
#include "tokenizer/tok_internal.h"

void tok_chat_attach(jr_tokenizer *t, const char *tpl, const char *origin) {
    struct jinja_tpl *j = NULL;
    if (jinja_parse(tpl, origin, &j)) {
        free(t->chat_error);
        t->chat_error = jr_strdup(jr_errmsg());
        return;
    }
    jinja_free(t->chat);
    t->chat = j;
    free(t->chat_error);
    t->chat_error = NULL;
}

int jr_tok_has_chat_template(const jr_tokenizer *t) { return t->chat != NULL; }

jr_status jr_tok_set_chat_template(jr_tokenizer *t, const char *template_text) {
    struct jinja_tpl *j = NULL;
    jr_status st = jinja_parse(template_text, "chat template", &j);
    if (st) return st;
    jinja_free(t->chat);
    t->chat = j;
    free(t->chat_error);
    t->chat_error = NULL;
    return JR_OK;
}

jr_status jr_tok_set_chat_template_file(jr_tokenizer *t, const char *path) {
    char *txt;
    jr_status st = jr_read_file(path, &txt, NULL);
    if (st) return st;
    struct jinja_tpl *j = NULL;
    st = jinja_parse(txt, path, &j);
    free(txt);
    if (st) return st;
    jinja_free(t->chat);
    t->chat = j;
    free(t->chat_error);
    t->chat_error = NULL;
    return JR_OK;
}

/* Renders msgs[0..n) with the given generation prompt flag. */
static jr_status render(const jr_tokenizer *t, const jr_chat_msg *msgs, size_t n, int gen, int thinking, char **out,
                        size_t *len) {
    json_t *ctx = json_object(), *arr = json_array();
    if (!ctx || !arr) { json_decref(ctx); json_decref(arr); return jr_fail(JR_ENOMEM, "out of memory"); }
    for (size_t i = 0; i < n; i++) {
        json_t *m = json_object();
        json_object_set_new(m, "role", json_string(msgs[i].role ? msgs[i].role : ""));
        json_object_set_new(m, "content", msgs[i].content ? json_string(msgs[i].content) : json_null());
        json_array_append_new(arr, m);
    }
    json_object_set_new(ctx, "messages", arr);
    json_object_set_new(ctx, "add_generation_prompt", json_boolean(gen));
    json_object_set_new(ctx, "tools", json_null());
    json_object_set_new(ctx, "documents", json_null());
    if (t->bos >= 0) json_object_set_new(ctx, "bos_token", json_string(t->bos_token));
    if (t->eos >= 0) json_object_set_new(ctx, "eos_token", json_string(t->eos_token));
    if (t->pad >= 0 && t->form[t->pad]) json_object_set_new(ctx, "pad_token", json_string(t->form[t->pad]));
    if (thinking >= 0) json_object_set_new(ctx, "enable_thinking", json_boolean(thinking));
    jr_status st = jinja_render(t->chat, ctx, out, len);
    json_decref(ctx);
    return st;
}

/* Finds where an assistant content appears in text[from..): the content itself, else trimmed of
 * whitespace, else its part after "</think>". Returns 1 with [*s, *e). */
static int find_content(const char *text, size_t from, const char *content, size_t *s, size_t *e) {
    if (!content) return 0;
    const char *cands[3];
    size_t lens[3];
    int nc = 0;
    cands[nc] = content; lens[nc++] = strlen(content);
    const char *a = content;
    while (*a == ' ' || *a == '\n' || *a == '\t' || *a == '\r') a++;
    size_t l = strlen(a);
    while (l && (a[l - 1] == ' ' || a[l - 1] == '\n' || a[l - 1] == '\t' || a[l - 1] == '\r')) l--;
    cands[nc] = a; lens[nc++] = l;
    const char *th = strstr(content, "</think>");
    if (th) {
        th += 8;
        while (*th == '\n') th++;
        cands[nc] = th; lens[nc++] = strlen(th);
    }
    for (int i = 0; i < nc; i++) {
        if (lens[i] == 0) { *s = *e = from; return 1; }
        const char *hit = memmem(text + from, strlen(text + from), cands[i], lens[i]);
        if (hit) {
            *s = (size_t)(hit - text);
            *e = *s + lens[i];
            return 1;
        }
    }
    return 0;
}

jr_status jr_chat_render(const jr_tokenizer *t, const jr_chat_msg *msgs, size_t n, const jr_chat_opts *opts,
                         char **out, size_t *out_len, jr_span **assistant, size_t *n_assistant) {
    *out = NULL;
    if (assistant) { *assistant = NULL; *n_assistant = 0; }
    if (!t->chat) {
        if (t->chat_error) return jr_fail(JR_EUNSUPPORTED, "chat template: %s (override it with a template file)", t->chat_error);
        return jr_fail(JR_ENOTFOUND, "%s: the tokenizer has no chat template (give one with a template file)", t->name);
    }
    jr_chat_opts def = {0, -1};
    if (!opts) opts = &def;
    size_t len;
    jr_status st = render(t, msgs, n, opts->add_generation_prompt, opts->enable_thinking, out, &len);
    if (st) return st;
    if (out_len) *out_len = len;
    if (!assistant) return JR_OK;
    size_t na = 0;
    for (size_t i = 0; i < n; i++) na += msgs[i].role && !strcmp(msgs[i].role, "assistant");
    jr_span *sp = jr_calloc(na ? na : 1, sizeof *sp);
    if (!sp) { free(*out); *out = NULL; return JR_ENOMEM; }
    size_t k = 0, cursor = 0;
    for (size_t i = 0; i < n && !st; i++) {
        if (!msgs[i].role || strcmp(msgs[i].role, "assistant")) continue;
        size_t start = cursor, cs, ce;
        char *pre = NULL;
        size_t pl;
        /* the text before the turn: the conversation so far with a generation prompt */
        st = render(t, msgs, i, 1, opts->enable_thinking, &pre, &pl);
        if (st) break;
        if (pl >= cursor && pl <= len && !memcmp(pre, *out, pl)) start = pl;
        free(pre);
        size_t end = start;
        if (find_content(*out, start, msgs[i].content, &cs, &ce)) {
            if (start == cursor && cs > start) start = cs; /* no usable prefix: the content itself */
            end = ce;
        }
        /* the end-of-turn special token right after the content */
        size_t best = 0;
        for (size_t a = 0; a < t->n_added; a++) {
            const tok_added *ad = &t->added[a];
            if (ad->special && ad->len > best && end + ad->len <= len && !memcmp(*out + end, ad->content, ad->len))
                best = ad->len;
        }
        end += best;
        sp[k].start = start;
        sp[k].end = end;
        k++;
        cursor = end;
    }
    if (st) { free(sp); free(*out); *out = NULL; return st; }
    *assistant = sp;
    *n_assistant = k;
    return JR_OK;
}

const jr_cfg_field jr_tokenizer_cfg[] = {
    {"tokenizer.chat_template", JR_CFG_STRING, "null",
     "Jinja file replacing the model's chat template (e.g. the third seed's custom_chat_template)", NULL, NULL, 0, 0},
    {"tokenizer.enable_thinking", JR_CFG_ENUM, "default",
     "Qwen3 chat templates: render with enable_thinking true/false (default: leave it undefined)",
     "default|true|false", NULL, 0, 0},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};

jr_status jr_tok_opts_from_config(jr_tok_opts *o, const jr_config *c) {
    o->chat_template = jr_cfg_str(c, "tokenizer.chat_template");
    const char *v = jr_cfg_str(c, "tokenizer.enable_thinking");
    o->enable_thinking = !v || !strcmp(v, "default") ? -1 : !strcmp(v, "true");
    return jr_cfg_check(c);
}

jr_status jr_tok_apply_opts(jr_tokenizer *t, const jr_tok_opts *o) {
    if (!o->chat_template) return JR_OK;
    jr_status st = jr_tok_set_chat_template_file(t, o->chat_template);
    if (st) return jr_fail_ctx(st, "tokenizer.chat_template");
    return JR_OK;
}

jr_status jr_tok_apply_config(jr_tokenizer *t, const jr_config *cfg) {
    jr_tok_opts o;
    jr_status st = jr_tok_opts_from_config(&o, cfg);
    return st ? st : jr_tok_apply_opts(t, &o);
}

int jr_tok_cfg_thinking(const jr_config *cfg) {
    jr_tok_opts o;
    return jr_tok_opts_from_config(&o, cfg) ? -1 : o.enable_thinking;
}
