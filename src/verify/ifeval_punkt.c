/* ifeval_punkt.c - sentence counting: the Punkt sentence tokenizer's decision procedure (Kiss &
 * Strunk 2006, as NLTK 3.8 runs it) with approximated English parameters, see docs/IFEVAL.md */
#include <stdlib.h>
#include <string.h>

#include "judgerl/ifeval.h"
#include "verify/ifeval_internal.h"

/* Orthographic context flags, as in Punkt. */
enum { BEG_UC = 1 << 1, MID_UC = 1 << 2, UNK_UC = 1 << 3, BEG_LC = 1 << 4, MID_LC = 1 << 5, UNK_LC = 1 << 6 };
#define ORTHO_UC (BEG_UC | MID_UC | UNK_UC)
#define ORTHO_LC (BEG_LC | MID_LC | UNK_LC)

/* Abbreviations the English model knows (types without their final period). The trained model
 * is not available to judgerl; this list holds the abbreviations common in English prose. */
static const char *const abbrevs[] = {
    "mr", "mrs", "ms", "dr", "prof", "jr", "sr", "st", "mt", "ft", "co", "corp", "inc", "ltd", "bros", "messrs",
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "u.s", "u.k", "u.n",
    "e.g", "i.e", "a.m", "p.m", "vs", "gen", "gov", "sen", "rep", "lt", "col", "sgt", "capt", "adm", "maj", "rev",
    "fig", "vol", "calif", "fla", "conn", "n.j", "n.y", "d.c", "ariz", "colo", "tenn", "tex", "wis", "ala", "okla",
    "nev", "mich", "minn", "va", "ga", "md", "ky", "n.c", "s.c", "ave", "blvd", "dept", "assn", "approx", "no",
    "nos", "cie", "cf", "al", "ph.d", "etc", "esp", "est",
};

/* Words that start sentences in English news text (Punkt's sentence starters). */
static const char *const starters[] = {
    "the", "a", "an", "this", "that", "these", "those", "it", "its", "he", "she", "they", "we", "i", "you", "but",
    "and", "or", "so", "yet", "in", "on", "at", "for", "with", "by", "from", "as", "if", "when", "while", "after",
    "before", "since", "although", "though", "because", "however", "also", "there", "here", "some", "many", "most",
    "one", "his", "her", "their", "our", "my", "your", "what", "how", "why", "who", "where", "then", "still",
    "meanwhile", "moreover", "furthermore", "instead", "indeed", "thus", "today", "yesterday", "now", "both",
    "each", "all", "no", "not", "other", "such", "among", "during", "despite", "under", "according", "analysts",
};

/* Common English words: seen lower-case in any sizeable corpus (their orthographic context has
 * the lower-case flags), and not typically capitalised inside a sentence. */
static const char *const common_lower[] = {
    "about", "above", "across", "again", "against", "ago", "almost", "already", "always", "am", "another", "any",
    "anyone", "anything", "are", "around", "away", "back", "be", "became", "become", "been", "being", "below",
    "best", "better", "between", "beyond", "big", "can", "come", "could", "day", "days", "did", "do", "does",
    "done", "down", "early", "either", "else", "enough", "even", "ever", "every", "everyone", "everything",
    "few", "first", "following", "further", "get", "give", "go", "good", "great", "had", "has", "have", "having",
    "high", "him", "himself", "into", "is", "just", "keep", "know", "large", "last", "later", "less", "let",
    "like", "little", "long", "made", "make", "may", "me", "might", "more", "much", "must", "need", "never",
    "new", "next", "nothing", "of", "off", "often", "old", "once", "only", "over", "own", "part", "people",
    "perhaps", "place", "rather", "really", "remember", "right", "said", "same", "say", "see", "several",
    "should", "small", "something", "sometimes", "soon", "take", "than", "them", "themselves", "thing", "things",
    "think", "through", "time", "to", "too", "together", "up", "upon", "us", "use", "very", "was", "way", "well",
    "were", "which", "will", "within", "without", "would", "year", "years", "additionally", "overall",
    "finally", "lastly", "first", "second", "third", "next", "consider", "make", "try", "remember", "imagine",
    "note", "please", "let", "start", "begin", "use", "keep", "take", "look", "think", "yes", "well", "oh",
};

static bool in_list(const char *const *list, size_t n, const char *w) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(list[i], w)) return true;
    return false;
}
#define IN(list, w) in_list(list, sizeof list / sizeof *list, w)

/* The orthographic context the English model would hold for a word type (see docs/IFEVAL.md). */
static int ortho_context(const char *typ) {
    if (IN(starters, typ) || IN(common_lower, typ)) return BEG_UC | MID_LC | UNK_LC;
    return 0;
}

/* A Punkt token: a span of code points with its annotations. */
typedef struct {
    size_t b, e;      /* [b, e) in the context array */
    char typ[64];     /* lower-cased type, "##number##" for numbers (UTF-8, truncated) */
    bool sentbreak, abbr, ellipsis;
    bool period_final, first_upper, first_lower, is_initial, is_ellipsis;
} ptok;

static size_t enc(char *o, uint32_t c) {
    if (c < 0x80) { o[0] = (char)c; return 1; }
    if (c < 0x800) { o[0] = (char)(0xC0 | (c >> 6)); o[1] = (char)(0x80 | (c & 0x3F)); return 2; }
    if (c < 0x10000) {
        o[0] = (char)(0xE0 | (c >> 12)); o[1] = (char)(0x80 | ((c >> 6) & 0x3F)); o[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (c >> 18)); o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((c >> 6) & 0x3F)); o[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

/* ^-?[\.,]?\d[\d,\.-]*\.?$ */
static bool is_number(const uint32_t *c, size_t n) {
    size_t i = 0;
    if (i < n && c[i] == '-') i++;
    if (i < n && (c[i] == '.' || c[i] == ',')) i++;
    if (i >= n || !ifv_isdigit(c[i])) return false;
    i++;
    while (i < n && (ifv_isdigit(c[i]) || c[i] == ',' || c[i] == '.' || c[i] == '-')) i++;
    return i == n; /* the optional final period is covered by the class above */
}

static void annotate_token(ptok *t, const uint32_t *c) {
    const uint32_t *w = c + t->b;
    size_t n = t->e - t->b;
    memset(t->typ, 0, sizeof t->typ);
    if (is_number(w, n)) {
        strcpy(t->typ, "##number##");
    } else {
        size_t k = 0;
        for (size_t i = 0; i < n && k + 4 < sizeof t->typ; i++) k += enc(t->typ + k, ifv_tolower(w[i]));
    }
    t->period_final = n > 0 && w[n - 1] == '.';
    t->first_upper = n > 0 && ifv_cp_upper(w[0]);
    t->first_lower = n > 0 && ifv_cp_lower(w[0]);
    t->is_ellipsis = n >= 2;
    for (size_t i = 0; i < n; i++)
        if (w[i] != '.') t->is_ellipsis = false;
    t->is_initial = n == 2 && w[1] == '.' && ifv_isword(w[0]) && !ifv_isdigit(w[0]);
    t->sentbreak = t->abbr = t->ellipsis = false;
}

/* type without a final period (when longer than one character) */
static void type_no_period(const ptok *t, char *out) {
    size_t m = strlen(t->typ);
    strcpy(out, t->typ);
    if (m > 1 && out[m - 1] == '.') out[m - 1] = 0;
}

static bool is_nonword(uint32_t c) { return c < 0x80 && c && strchr(")\";}]*:@'({[?!", (int)c); }
static bool word_start(uint32_t c) { return !(c < 0x80 && c && strchr("(\"`{[:;&#*@)}]-,", (int)c)); }

/* Length of a multi-character punctuation at c[i] (\-{2,} | \.{2,} | (\.\s){2,}\.), else 0. */
static size_t multichar(const uint32_t *c, size_t n, size_t i) {
    if (i + 1 < n && c[i] == '-' && c[i + 1] == '-') {
        size_t k = i;
        while (k < n && c[k] == '-') k++;
        return k - i;
    }
    if (i + 1 < n && c[i] == '.' && c[i + 1] == '.') {
        size_t k = i;
        while (k < n && c[k] == '.') k++;
        return k - i;
    }
    size_t reps = 0, k = i;
    while (k + 1 < n && c[k] == '.' && ifv_isspace(c[k + 1])) { reps++; k += 2; }
    if (reps >= 2 && k < n && c[k] == '.') return k + 1 - i;
    if (reps >= 3) return 2 * (reps - 1) + 1;
    return 0;
}

/* Punkt's word tokenizer over c[0..n): fills toks, returns the count. */
static size_t tokenize_words(const uint32_t *c, size_t n, ptok *toks, size_t cap) {
    size_t nt = 0, i = 0;
    while (i < n && nt < cap) {
        if (ifv_isspace(c[i])) { i++; continue; }
        size_t m = multichar(c, n, i);
        size_t e;
        if (m) {
            e = i + m;
        } else if (word_start(c[i])) {
            e = i + 1;
            for (;;) {
                if (e >= n || ifv_isspace(c[e]) || is_nonword(c[e]) || multichar(c, n, e)) break;
                if (c[e] == ',' && (e + 1 >= n || ifv_isspace(c[e + 1]) || is_nonword(c[e + 1]) || multichar(c, n, e + 1)))
                    break;
                e++;
            }
        } else {
            e = i + 1;
        }
        toks[nt].b = i;
        toks[nt].e = e;
        nt++;
        i = e;
    }
    return nt;
}

static int ortho_heuristic(const ptok *t, const uint32_t *c) {
    /* returns 1 (sentence starter), 0 (not), -1 (unknown) */
    if (t->e - t->b == 1 && c[t->b] < 0x80 && strchr(";:,.!?", (int)c[t->b])) return 0;
    char typ[64];
    if (t->sentbreak) type_no_period(t, typ);
    else strcpy(typ, t->typ);
    int ortho = ortho_context(typ);
    if (t->first_upper && (ortho & ORTHO_LC) && !(ortho & MID_UC)) return 1;
    if (t->first_lower && ((ortho & ORTHO_UC) || !(ortho & BEG_LC))) return 0;
    return -1;
}

static void first_pass(ptok *t, const uint32_t *c) {
    size_t n = t->e - t->b;
    const uint32_t *w = c + t->b;
    if (n == 1 && (w[0] == '.' || w[0] == '?' || w[0] == '!')) {
        t->sentbreak = true;
    } else if (t->is_ellipsis) {
        t->ellipsis = true;
    } else if (t->period_final && !(n >= 2 && w[n - 2] == '.')) {
        char typ[64];
        type_no_period(t, typ);
        /* tok[:-1].lower(): the type unless it is a number */
        char low[64] = {0};
        size_t k = 0;
        for (size_t i = 0; i + 1 < n && k + 4 < sizeof low; i++) k += enc(low + k, ifv_tolower(w[i]));
        const char *dash = strrchr(low, '-');
        if (IN(abbrevs, low) || (dash && IN(abbrevs, dash + 1))) t->abbr = true;
        else t->sentbreak = true;
    }
}

static void second_pass(ptok *t1, const ptok *t2, const uint32_t *c) {
    if (!t1->period_final) return;
    char typ[64], next_typ[64];
    type_no_period(t1, typ);
    if (t2->sentbreak) type_no_period(t2, next_typ);
    else strcpy(next_typ, t2->typ);
    bool initial = t1->is_initial;
    if ((t1->abbr || t1->ellipsis) && !initial) {
        int s = ortho_heuristic(t2, c);
        if (s == 1) { t1->sentbreak = true; return; }
        if (t2->first_upper && IN(starters, next_typ)) { t1->sentbreak = true; return; }
    }
    if (initial || !strcmp(typ, "##number##")) {
        int s = ortho_heuristic(t2, c);
        if (s == 0) { t1->sentbreak = false; t1->abbr = true; return; }
        if (s == -1 && initial && t2->first_upper && !(ortho_context(next_typ) & ORTHO_LC)) {
            t1->sentbreak = false;
            t1->abbr = true;
        }
    }
}

/* text_contains_sentbreak over the context c[0..n) */
static bool contains_sentbreak(const uint32_t *c, size_t n) {
    ptok stack[64];
    ptok *toks = n < 64 ? stack : malloc((n + 1) * sizeof *toks);
    if (!toks) return false;
    size_t nt = tokenize_words(c, n, toks, n < 64 ? 64 : n + 1);
    for (size_t i = 0; i < nt; i++) {
        annotate_token(&toks[i], c);
        first_pass(&toks[i], c);
    }
    bool found = false, res = false;
    for (size_t i = 0; i < nt; i++) {
        if (i + 1 < nt) second_pass(&toks[i], &toks[i + 1], c);
        if (found) { res = true; break; }
        if (toks[i].sentbreak) found = true;
    }
    if (toks != stack) free(toks);
    return res;
}

typedef struct {
    size_t pos;            /* the sentence-end character */
    size_t after_e;        /* end of after_tok */
    size_t next_tok;       /* start of next_tok, or (size_t)-1 */
} pmatch;

/* Length of the boundary-realignment match at c[b..e) (["')\]}]+?(?:\s+|(?=--)|$)), 0 if none;
 * *grp gets the length of the closing characters alone. */
static size_t realign_match(const uint32_t *c, size_t b, size_t e, size_t *grp) {
    size_t k = b;
    while (k < e && c[k] < 0x80 && c[k] && strchr("\"')]}", (int)c[k])) {
        k++;
        if (k < e && ifv_isspace(c[k])) {
            size_t w = k;
            while (w < e && ifv_isspace(c[w])) w++;
            *grp = k - b;
            return w - b;
        }
        if ((k + 1 < e && c[k] == '-' && c[k + 1] == '-') || k == e || c[k] == '\n') {
            *grp = k - b;
            return k - b;
        }
    }
    return 0;
}

size_t jr_ifeval_count_sentences(const char *text, size_t len) {
    size_t n;
    uint32_t *c = ifv_decode(text, len, &n);
    if (!c) return 0;
    size_t *sb = malloc((n + 2) * sizeof *sb), *se = malloc((n + 2) * sizeof *se);
    uint32_t *ctx = malloc((n + 4) * sizeof *ctx);
    if (!sb || !se || !ctx) { free(c); free(sb); free(se); free(ctx); return 0; }
    size_t ns = 0, last_break = 0;

    /* _match_potential_end_contexts + _slices_from_text */
    size_t prev_start = 0, prev_stop = 0;
    bool have_prev = false;
    pmatch prev = {0, 0, 0};
    for (size_t i = 0; i <= n; i++) {
        bool have = false;
        pmatch m = {i, 0, (size_t)-1};
        if (i < n && (c[i] == '.' || c[i] == '?' || c[i] == '!')) {
            if (i + 1 < n && is_nonword(c[i + 1])) {
                m.after_e = i + 2;
                have = true;
            } else if (i + 1 < n && ifv_isspace(c[i + 1])) {
                size_t j = i + 1;
                while (j < n && ifv_isspace(c[j])) j++;
                if (j < n) {
                    size_t k = j;
                    while (k < n && !ifv_isspace(c[k])) k++;
                    m.after_e = k;
                    m.next_tok = j;
                    have = true;
                }
            }
        }
        size_t ws_start = 0;
        if (have) {
            /* the word before the match */
            size_t idx = 0;
            for (size_t k = i; k > prev_stop; k--)
                if (ifv_isspace_ascii(c[k - 1])) { idx = k - 1 - prev_stop; break; }
            ws_start = idx ? idx + prev_stop + 1 : prev_start;
        }
        bool flush = have_prev && (i == n || (have && prev_stop <= ws_start));
        if (flush) {
            /* context = text[prev_start:prev_stop] + match char + after_tok */
            size_t k = 0;
            for (size_t q = prev_start; q < prev_stop; q++) ctx[k++] = c[q];
            for (size_t q = prev.pos; q < prev.after_e; q++) ctx[k++] = c[q];
            if (contains_sentbreak(ctx, k)) {
                sb[ns] = last_break;
                se[ns] = prev.pos + 1;
                ns++;
                last_break = prev.next_tok != (size_t)-1 ? prev.next_tok : prev.pos + 1;
            }
        }
        if (have) {
            prev = m;
            have_prev = true;
            prev_start = ws_start;
            prev_stop = i;
        }
    }
    size_t end = n;
    while (end > 0 && ifv_isspace(c[end - 1])) end--;
    sb[ns] = last_break;
    se[ns] = end;
    ns++;

    /* _realign_boundaries: count the non-empty slices */
    size_t count = 0, realign = 0;
    for (size_t k = 0; k < ns; k++) {
        size_t s1b = sb[k] + realign, s1e = se[k];
        if (k + 1 == ns) {
            if (s1b < s1e) count++;
            continue;
        }
        size_t grp = 0;
        size_t m = sb[k + 1] < se[k + 1] ? realign_match(c, sb[k + 1], se[k + 1], &grp) : 0;
        if (m) {
            count++; /* slice(s1.start, s2.start + len(group)) is never empty */
            realign = m;
        } else {
            realign = 0;
            if (s1b < s1e) count++;
        }
    }
    free(c);
    free(sb);
    free(se);
    free(ctx);
    return count;
}
