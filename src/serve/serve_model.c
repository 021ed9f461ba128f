/* serve_model.c - `judgerl serve`'s server over a model directory: listen, load the model and its
 * tokenizer, serve, write the port file once ready; stop with a drain (jr_serve_model_start, serve.h) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/fsutil.h"
#include "judgerl/serve.h"
#include "judgerl/textgen.h"

struct jr_serve_model {
    jr_server *s;
    jr_textgen t;
    int have_t;
    char fingerprint[65];
};

static jr_status tg_encode(void *tok, const char *text, size_t len, int32_t **ids, int *n) {
    return jr_textgen_encode(tok, text, len, ids, n);
}

static jr_status tg_chat(void *tok, int n, const char *const *roles, const char *const *contents, int32_t **ids, int *n_ids) {
    return jr_textgen_encode_chat(tok, n, roles, contents, ids, n_ids);
}

/* Loads the model into the running server and sets it as the backend. */
static jr_status load_backend(jr_serve_model *h, const jr_serve_model_opts *o) {
    FILE *log = o->log;
    char mdesc[1024];
    jr_status st = jr_textgen_open_dir_kv(&h->t, o->model, o->tokenizer, o->serve.parallel, o->ctx, &o->kv, mdesc, sizeof mdesc);
    if (st) return st;
    h->have_t = 1;
    if (log && strcmp(mdesc, o->model)) fprintf(log, "%smodel: %s\n", o->prefix, mdesc);
    if (log) fprintf(log, "%stokenizer: %s\n", o->prefix, h->t.tok_desc);
    jr_textgen_fingerprint(&h->t, h->fingerprint);
    jr_serve_backend b = {0};
    b.fingerprint = h->fingerprint;
    b.lm = &h->t.lm;
    b.vocab = h->t.vocab;
    b.tok = &h->t;
    b.encode = tg_encode;
    b.encode_chat = tg_chat;
    if ((st = jr_server_set_backend(h->s, &b))) return st;
    char kdesc[160];
    if (log)
        fprintf(log, "%sready: model '%s' (fingerprint %.16s), %d slots of %d positions, %s\n", o->prefix, o->serve.model_name,
                h->fingerprint, h->t.lm.n_slots, h->t.lm.max_ctx, jr_kv_lm_describe(&h->t.lm, kdesc, sizeof kdesc));
    return JR_OK;
}

jr_status jr_serve_model_start(jr_serve_model **out, const jr_serve_model_opts *o) {
    *out = NULL;
    /* a missing model is reported before anything listens (one error line) */
    char *cfgp = jr_path_join(o->model, "config.json");
    int have = cfgp && jr_path_exists(cfgp);
    free(cfgp);
    if (!have) return jr_fail(JR_ENOTFOUND, "%s: no config.json (not a model directory)", o->model);
    jr_serve_model *h = calloc(1, sizeof *h);
    if (!h) return jr_fail(JR_ENOMEM, "out of memory");
    jr_status st = jr_server_start(&h->s, &o->serve);
    if (st) { free(h); return st; }
    if (o->log) fprintf(o->log, "%slistening on http://%s:%d (loading %s)\n", o->prefix, o->serve.host, jr_server_port(h->s), o->model);
    if (!(st = load_backend(h, o)) && o->port_file) { /* written once ready, atomically: a reader sees no file or the whole port */
        char pt[32];
        int pn = snprintf(pt, sizeof pt, "%d\n", jr_server_port(h->s));
        if ((st = jr_write_atomic(o->port_file, pt, (size_t)pn))) st = jr_fail_ctx(st, "--port-file");
    }
    if (st) {
        jr_serve_model_stop(h, 0);
        return st;
    }
    *out = h;
    return JR_OK;
}

void jr_serve_model_stop(jr_serve_model *h, double drain_s) {
    if (!h) return;
    jr_server_stop(h->s, drain_s);
    if (h->have_t) jr_textgen_close(&h->t);
    free(h);
}
