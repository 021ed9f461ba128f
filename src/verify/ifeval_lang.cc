/* ifeval_lang.cc - language identification for the IFEval checkers: a C wrapper around CLD2 */
#include <cstdio>

#include <cld2/public/compact_lang_det.h>
#include <cld2/public/encodings.h>
#include <cld2/internal/lang_script.h>

#include <cstring>

extern "C" {
#include "judgerl/ifeval.h"
#include "verify/ifeval_internal.h"
}

/* langdetect (used by the official scorer) raises "no features" when the text has no letters;
 * that is the failure the official scorer counts as followed. */
static bool has_letter(const char *text, size_t len) {
    size_t i = 0;
    while (i < len) {
        uint32_t c = ifv_next_cp(text, len, &i);
        if (ifv_isword(c) && !ifv_isdigit(c) && c != '_' && !(c >= 0x2150 && c <= 0x218F)) return true;
    }
    return false;
}

extern "C" int jr_ifeval_detect_language(const char *text, size_t len, char *code) {
    code[0] = 0;
    if (!has_letter(text, len) || len > 0x7fffffff) return 0;
    CLD2::CLDHints hints = {NULL, NULL, CLD2::UNKNOWN_ENCODING, CLD2::UNKNOWN_LANGUAGE};
    CLD2::Language lang3[3];
    int percent3[3];
    double score3[3];
    int text_bytes = 0, valid_prefix = 0;
    bool reliable = false;
    CLD2::Language lang = CLD2::ExtDetectLanguageSummaryCheckUTF8(
        text, (int)len, true, &hints, 0, lang3, percent3, score3, NULL, &text_bytes, &reliable, &valid_prefix);
    const char *c = CLD2::LanguageCode(lang);
    /* Text with letters that CLD2 cannot place (too short, lists of names, ...): langdetect would
     * still answer, and on such text its answer is close to arbitrary; "und" matches no code. */
    if (lang == CLD2::UNKNOWN_LANGUAGE || lang == CLD2::TG_UNKNOWN_LANGUAGE || !c || !*c || !strcmp(c, "un"))
        c = "und";
    /* CLD2 codes -> langdetect codes */
    if (!strcmp(c, "iw")) c = "he";
    else if (!strcmp(c, "zh")) c = "zh-cn";
    else if (!strcmp(c, "zh-Hant")) c = "zh-tw";
    else if (!strcmp(c, "nn")) c = "no";
    else if (!strcmp(c, "jw")) c = "jv";
    size_t n = strlen(c);
    if (n > 15) n = 15;
    memcpy(code, c, n);
    code[n] = 0;
    return 1;
}
