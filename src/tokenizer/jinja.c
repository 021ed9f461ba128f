/* jinja.c - a Jinja2 subset interpreter for chat templates */
#include <stdlib.h>
#include "tokenizer/jinja.h"
struct jinja_tpl { int x; };
jr_status jinja_parse(const char *src, const char *name, struct jinja_tpl **out) { (void)src; *out = NULL; return jr_fail(JR_EUNSUPPORTED, "%s: todo", name); }
jr_status jinja_render(const struct jinja_tpl *t, json_t *ctx, char **out, size_t *len) { (void)t; (void)ctx; (void)out; (void)len; return JR_EUNSUPPORTED; }
void jinja_free(struct jinja_tpl *t) { free(t); }
