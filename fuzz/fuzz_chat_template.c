/* fuzz_chat_template.c - libFuzzer target: parsing and rendering arbitrary Jinja chat templates never
 * crashes, hangs on bounded input, or leaks */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/tokenizer.h"

static jr_tokenizer *tiny(void) {
    static jr_tokenizer *t;
    if (t) return t;
    /* a byte-level vocabulary is required: build the 256 entries */
    char buf[8192];
    size_t o = 0;
    o += (size_t)snprintf(buf, sizeof buf, "{\"model\":{\"type\":\"BPE\",\"vocab\":{");
    int n = 0;
    for (int b = 0; b < 256; b++) {
        int keep = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        int cp = keep ? b : 256 + n++;
        char c[8];
        if (cp == '"' || cp == '\\') snprintf(c, sizeof c, "\\%c", cp);
        else if (cp < 0x80) snprintf(c, sizeof c, "%c", cp);
        else snprintf(c, sizeof c, "%c%c", 0xC0 | (cp >> 6), 0x80 | (cp & 0x3F));
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s\"%s\":%d", b ? "," : "", c, b);
    }
    o += (size_t)snprintf(buf + o, sizeof buf - o,
                          "},\"merges\":[]},\"added_tokens\":[{\"id\":256,\"content\":\"<s>\",\"special\":true},"
                          "{\"id\":257,\"content\":\"</s>\",\"special\":true}],"
                          "\"pre_tokenizer\":{\"type\":\"ByteLevel\"},\"decoder\":{\"type\":\"ByteLevel\"}}");
    if (jr_tok_load_json(&t, buf, o, "tiny.json")) abort();
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096) return 0; /* templates are small; loops over range() are bounded by the interpreter */
    char *src = malloc(size + 1);
    if (!src) return 0;
    memcpy(src, data, size);
    src[size] = 0;
    jr_tokenizer *t = tiny();
    if (jr_tok_set_chat_template(t, src) == JR_OK) {
        jr_chat_msg m[] = {{"system", "sys"}, {"user", "hello \xc3\xa9"}, {"assistant", "<think>\nr\n</think>\n\nok"},
                           {"user", ""}, {"tool", NULL}};
        jr_chat_opts o = {1, 0};
        char *out;
        size_t len, ns;
        jr_span *sp;
        if (jr_chat_render(t, m, 5, &o, &out, &len, &sp, &ns) == JR_OK) {
            for (size_t i = 0; i < ns; i++) if (sp[i].start > sp[i].end || sp[i].end > len) abort();
            free(out);
            free(sp);
        }
    }
    free(src);
    return 0;
}
