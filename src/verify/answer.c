/* answer.c - final-answer extraction, LaTeX-aware normalisation and math equivalence of answers */
#include "judgerl/strbuf.h"
#include "judgerl/verify.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Index just past the brace group that opens at s[i] == '{' (or the end of s when unbalanced). */
static size_t brace_end(const char *s, size_t i) {
    int depth = 0;
    for (; s[i]; i++) {
        if (s[i] == '\\' && s[i + 1]) { i++; continue; }
        if (s[i] == '{') depth++;
        else if (s[i] == '}' && --depth == 0) return i + 1;
    }
    return i;
}

/* Finds the last \boxed / \fbox and sets [*b, *e) to its content. Returns 0 when there is none. */
static int last_boxed(const char *s, size_t *b, size_t *e) {
    const char *best = NULL;
    size_t klen = 0;
    static const char *const keys[] = {"\\boxed", "\\fbox"};
    for (int k = 0; k < 2; k++) {
        for (const char *p = strstr(s, keys[k]); p; p = strstr(p + 1, keys[k]))
            if (!best || p > best) { best = p; klen = strlen(keys[k]); }
    }
    if (!best) return 0;
    size_t i = (size_t)(best - s) + klen;
    while (s[i] == ' ') i++;
    if (s[i] == '{') {
        size_t end = brace_end(s, i);
        *b = i + 1;
        *e = end > i + 1 && s[end - 1] == '}' ? end - 1 : end;
        return 1;
    }
    /* "\boxed 5": up to the next '$' or whitespace. */
    size_t j = i;
    while (s[j] && s[j] != '$' && !isspace((unsigned char)s[j])) j++;
    if (j == i) return 0;
    *b = i;
    *e = j;
    return 1;
}

static char *dup_range(const char *s, size_t b, size_t e) {
    char *r = malloc(e - b + 1);
    if (!r) return NULL;
    memcpy(r, s + b, e - b);
    r[e - b] = 0;
    return r;
}

/* Last case-insensitive occurrence of needle in hay, or NULL. */
static const char *last_ci(const char *hay, const char *needle) {
    const char *best = NULL;
    size_t n = strlen(needle);
    for (const char *p = hay; *p; p++)
        if (!strncasecmp(p, needle, n)) best = p;
    return best;
}

char *jr_answer_extract(const char *response) {
    if (!response) return strdup("");
    size_t b, e;
    if (last_boxed(response, &b, &e)) return dup_range(response, b, e);
    const char *a1 = last_ci(response, "answer is");
    const char *a2 = last_ci(response, "answer:");
    const char *a = a1 > a2 ? a1 : a2;
    if (a) {
        const char *p = a + (a == a1 ? 9 : 7);
        while (*p == ' ' || *p == ':' || *p == '\t') p++;
        const char *q = p;
        while (*q && *q != '\n') q++;
        if (q > p) return dup_range(p, 0, (size_t)(q - p));
    }
    return strdup(response);
}

/* Replaces every occurrence of `from` with `to`. With `word`, `from` must not be followed by an
 * ASCII letter (so "\left" does not match "\leftarrow"). Consumes s. */
static char *replace_all(char *s, const char *from, const char *to, int word) {
    if (!s) return NULL;
    size_t fl = strlen(from), tl = strlen(to);
    jr_strbuf b = {0};
    for (size_t i = 0; s[i];) {
        if (!strncmp(s + i, from, fl) && !(word && isalpha((unsigned char)s[i + fl]))) {
            jr_strbuf_addn(&b, to, tl);
            i += fl;
        } else {
            jr_strbuf_addc(&b, s[i++]);
        }
    }
    free(s);
    return jr_strbuf_take(&b);
}

/* \text{x} -> x for the given command (with its opening brace, e.g. "\text{"). Consumes s. */
static char *unwrap_cmd(char *s, const char *cmd) {
    if (!s) return NULL;
    size_t cl = strlen(cmd);
    jr_strbuf b = {0};
    for (size_t i = 0; s[i];) {
        if (!strncmp(s + i, cmd, cl)) {
            size_t open = i + cl - 1;
            size_t end = brace_end(s, open);
            size_t ce = end > open + 1 && s[end - 1] == '}' ? end - 1 : end;
            jr_strbuf_addn(&b, s + open + 1, ce - open - 1);
            i = end;
        } else {
            jr_strbuf_addc(&b, s[i++]);
        }
    }
    free(s);
    return jr_strbuf_take(&b);
}

static char *brace_args(char *s);

/* Reads one LaTeX argument at s[*i] (skipping spaces): a brace group or a single character.
 * Appends it braced to b. */
static void put_arg(jr_strbuf *b, const char *s, size_t *i) {
    while (s[*i] == ' ') (*i)++;
    if (!s[*i]) { jr_strbuf_addn(b, "{}", 2); return; }
    if (s[*i] == '{') {
        size_t end = brace_end(s, *i);
        size_t ce = end > *i + 1 && s[end - 1] == '}' ? end - 1 : end;
        char *inner = brace_args(dup_range(s, *i + 1, ce));
        jr_strbuf_addc(b, '{');
        if (inner) jr_strbuf_addn(b, inner, strlen(inner));
        else b->oom = 1;
        jr_strbuf_addc(b, '}');
        free(inner);
        *i = end;
        return;
    }
    jr_strbuf_addc(b, '{');
    jr_strbuf_addc(b, s[*i]);
    jr_strbuf_addc(b, '}');
    (*i)++;
}

/* \frac12 -> \frac{1}{2}, \sqrt2 -> \sqrt{2}. Consumes s. */
static char *brace_args(char *s) {
    if (!s) return NULL;
    jr_strbuf b = {0};
    for (size_t i = 0; s[i];) {
        if (!strncmp(s + i, "\\frac", 5) && !isalpha((unsigned char)s[i + 5])) {
            jr_strbuf_addn(&b, "\\frac", 5);
            i += 5;
            put_arg(&b, s, &i);
            put_arg(&b, s, &i);
        } else if (!strncmp(s + i, "\\sqrt", 5) && !isalpha((unsigned char)s[i + 5]) && s[i + 5] != '[') {
            jr_strbuf_addn(&b, "\\sqrt", 5);
            i += 5;
            put_arg(&b, s, &i);
        } else {
            jr_strbuf_addc(&b, s[i++]);
        }
    }
    free(s);
    return jr_strbuf_take(&b);
}

/* Drops commas that separate thousands groups: 1,234,567 -> 1234567 (not 1,23 nor 0.1,234). */
static char *drop_thousands(char *s) {
    if (!s) return NULL;
    jr_strbuf b = {0};
    size_t i = 0;
    while (s[i]) {
        int starts_num = isdigit((unsigned char)s[i]) &&
                         (i == 0 || (!isdigit((unsigned char)s[i - 1]) && s[i - 1] != '.' && s[i - 1] != ','));
        if (starts_num) {
            size_t j = i;
            while (isdigit((unsigned char)s[j])) j++;
            size_t lead = j - i, k = j;
            int groups = 0;
            while (s[k] == ',' && isdigit((unsigned char)s[k + 1]) && isdigit((unsigned char)s[k + 2]) &&
                   isdigit((unsigned char)s[k + 3]) && !isdigit((unsigned char)s[k + 4])) {
                k += 4;
                groups++;
            }
            if (groups > 0 && lead <= 3) {
                for (size_t t = i; t < k; t++)
                    if (s[t] != ',') jr_strbuf_addc(&b, s[t]);
                i = k;
                continue;
            }
            jr_strbuf_addn(&b, s + i, j - i);
            i = j;
            continue;
        }
        jr_strbuf_addc(&b, s[i++]);
    }
    free(s);
    return jr_strbuf_take(&b);
}

/* Scans a plain decimal number at s (no sign): digits with an optional fraction. Returns its
 * length (0 when none). */
static size_t scan_decimal(const char *s) {
    size_t i = 0, digits = 0;
    while (isdigit((unsigned char)s[i])) { i++; digits++; }
    if (s[i] == '.' && isdigit((unsigned char)s[i + 1])) {
        i++;
        while (isdigit((unsigned char)s[i])) { i++; digits++; }
    }
    return digits ? i : 0;
}

/* "12 cm" -> "12", "3 apples" -> "3": a number, whitespace, then only letters / spaces / ^ digits
 * and '/' (cm^2, m/s). Also "x = 5" -> "5" when the left side has at most 2 characters. Consumes s. */
static char *drop_units_and_lhs(char *s) {
    if (!s) return NULL;
    char *eq = strchr(s, '=');
    if (eq && !strchr(eq + 1, '=')) {
        size_t l = 0;
        for (char *p = s; p < eq; p++)
            if (!isspace((unsigned char)*p)) l++;
        if (l >= 1 && l <= 2) memmove(s, eq + 1, strlen(eq + 1) + 1);
    }
    size_t i = 0;
    while (isspace((unsigned char)s[i])) i++;
    if (s[i] == '-' || s[i] == '+') i++;
    size_t n = scan_decimal(s + i);
    if (!n) return s;
    size_t j = i + n;
    if (s[j] == '%') j++;
    if (!isspace((unsigned char)s[j])) return s;
    size_t k = j;
    while (isspace((unsigned char)s[k])) k++;
    if (!isalpha((unsigned char)s[k])) return s;
    for (size_t t = k; s[t]; t++) {
        unsigned char c = (unsigned char)s[t];
        if (!(isalpha(c) || isspace(c) || c == '^' || c == '/' || c == '.' || isdigit(c))) return s;
        if (isdigit(c) && (t == k || s[t - 1] != '^')) return s;
    }
    s[j] = 0;
    return s;
}

char *jr_answer_normalize(const char *answer) {
    if (!answer) answer = "";
    size_t b, e;
    char *s = last_boxed(answer, &b, &e) ? dup_range(answer, b, e) : strdup(answer);
    static const char *const drop[] = {"\\$", "$", "\\(", "\\)", "\\[", "\\]", "\\!", "\\,", "\\;", "\\:",
                                       "\\ ", "^{\\circ}", "^\\circ", "\\circ", "\\displaystyle"};
    for (size_t i = 0; i < sizeof drop / sizeof *drop; i++) s = replace_all(s, drop[i], "", 0);
    s = replace_all(s, "\\left", "", 1);
    s = replace_all(s, "\\right", "", 1);
    s = replace_all(s, "~", " ", 0);
    s = replace_all(s, "\\dfrac", "\\frac", 0);
    s = replace_all(s, "\\tfrac", "\\frac", 0);
    s = replace_all(s, "\\%", "%", 0);
    static const char *const wraps[] = {"\\text{", "\\textbf{", "\\textit{", "\\textrm{", "\\mathrm{",
                                        "\\mathbf{", "\\mbox{", "\\operatorname{"};
    for (size_t i = 0; i < sizeof wraps / sizeof *wraps; i++) s = unwrap_cmd(s, wraps[i]);
    s = brace_args(s);
    if (!s) return NULL;
    for (char *p = s; *p; p++) *p = (char)tolower((unsigned char)*p);
    s = drop_thousands(s);
    s = drop_units_and_lhs(s);
    if (!s) return NULL;
    /* Trailing punctuation and whitespace, then every whitespace character. */
    size_t n = strlen(s);
    while (n && (strchr(".,;!?", s[n - 1]) || isspace((unsigned char)s[n - 1]))) s[--n] = 0;
    size_t w = 0;
    for (size_t r = 0; s[r]; r++)
        if (!isspace((unsigned char)s[r])) s[w++] = s[r];
    s[w] = 0;
    return s;
}

/* Parses [sign] decimal at s; returns the length consumed (0 when none). */
static size_t scan_signed(const char *s, double *v) {
    size_t i = 0;
    int neg = 0;
    if (s[i] == '-' || s[i] == '+') neg = s[i++] == '-';
    size_t n = scan_decimal(s + i);
    if (!n && s[i] == '.' && isdigit((unsigned char)s[i + 1])) {
        /* ".5" */
        char tmp[64];
        size_t m = 1;
        while (isdigit((unsigned char)s[i + m]) && m < 60) m++;
        snprintf(tmp, sizeof tmp, "0%.*s", (int)m, s + i);
        *v = strtod(tmp, NULL);
        if (neg) *v = -*v;
        return i + m;
    }
    if (!n || n > 60) return 0;
    char tmp[64];
    memcpy(tmp, s + i, n);
    tmp[n] = 0;
    *v = strtod(tmp, NULL);
    if (neg) *v = -*v;
    return i + n;
}

int jr_answer_number(const char *norm, double *v, int *is_percent) {
    if (!norm || !*norm) return 0;
    const char *s = norm;
    int neg = 0;
    if (*s == '-' && !strncmp(s + 1, "\\frac{", 6)) { neg = 1; s++; }
    double x;
    size_t i;
    if (!strncmp(s, "\\frac{", 6)) {
        double a, b;
        size_t n = scan_signed(s + 6, &a);
        if (!n || s[6 + n] != '}' || s[7 + n] != '{') return 0;
        const char *d = s + 8 + n;
        size_t m = scan_signed(d, &b);
        if (!m || d[m] != '}' || b == 0) return 0;
        x = a / b;
        i = (size_t)(d + m + 1 - s);
    } else {
        double a, b;
        size_t n = scan_signed(s, &a);
        if (!n) return 0;
        x = a;
        i = n;
        if (s[i] == '/') {
            size_t m = scan_signed(s + i + 1, &b);
            if (!m || b == 0) return 0;
            x = a / b;
            i += 1 + m;
        }
    }
    int pct = 0;
    if (s[i] == '%') { pct = 1; i++; }
    if (s[i]) return 0;
    *v = neg ? -x : x;
    if (is_percent) *is_percent = pct;
    return 1;
}

static int close_to(double a, double b) {
    double d = fabs(a - b), m = fmax(fabs(a), fabs(b));
    return d <= 1e-6 * m || d < 1e-12;
}

/* Splits s at top-level commas into at most `max` pieces [starts[k], ends[k]). Returns the count,
 * or 0 when brackets are unbalanced or there are more than max pieces. */
static int split_top(const char *s, size_t b, size_t e, size_t *starts, size_t *ends, int max) {
    int depth = 0, n = 0;
    size_t start = b;
    for (size_t i = b; i < e; i++) {
        char c = s[i];
        if (c == '(' || c == '[' || c == '{') depth++;
        else if (c == ')' || c == ']' || c == '}') { if (--depth < 0) return 0; }
        else if (c == ',' && depth == 0) {
            if (n >= max) return 0;
            starts[n] = start;
            ends[n++] = i;
            start = i + 1;
        }
    }
    if (depth != 0 || n >= max) return 0;
    starts[n] = start;
    ends[n++] = e;
    return n;
}

static int equiv_norm(const char *x, const char *y, int depth);

static int equiv_lists(const char *x, const char *y, int depth) {
    size_t lx = strlen(x), ly = strlen(y);
    size_t bx = 0, ex = lx, by = 0, ey = ly;
    /* Outer brackets must be the same pair on both sides (or absent on both). */
    int brx = lx >= 2 && strchr("([{", x[0]) && strchr(")]}", x[lx - 1]);
    int bry = ly >= 2 && strchr("([{", y[0]) && strchr(")]}", y[ly - 1]);
    if (brx != bry) return 0;
    if (brx) {
        if (x[0] != y[0] || x[lx - 1] != y[ly - 1]) return 0;
        bx = by = 1;
        ex--;
        ey--;
    }
    enum { MAXN = 64 };
    size_t sx[MAXN], tx[MAXN], sy[MAXN], ty[MAXN];
    int nx = split_top(x, bx, ex, sx, tx, MAXN), ny = split_top(y, by, ey, sy, ty, MAXN);
    if (nx < 2 || nx != ny) return 0;
    for (int k = 0; k < nx; k++) {
        char *ax = dup_range(x, sx[k], tx[k]), *ay = dup_range(y, sy[k], ty[k]);
        int ok = ax && ay && equiv_norm(ax, ay, depth + 1);
        free(ax);
        free(ay);
        if (!ok) return 0;
    }
    return 1;
}

static int equiv_norm(const char *x, const char *y, int depth) {
    if (!strcmp(x, y)) return *x != 0;
    double vx, vy;
    int px = 0, py = 0;
    if (jr_answer_number(x, &vx, &px) && jr_answer_number(y, &vy, &py)) {
        if (close_to(vx, vy)) return 1;
        if (px && close_to(vx / 100.0, vy)) return 1;
        if (py && close_to(vx, vy / 100.0)) return 1;
        return 0;
    }
    if (depth < 4 && (strchr(x, ',') || strchr(y, ','))) return equiv_lists(x, y, depth);
    return 0;
}

int jr_answer_equiv(const char *a, const char *b) {
    char *x = jr_answer_normalize(a), *y = jr_answer_normalize(b);
    int r = x && y && equiv_norm(x, y, 0);
    free(x);
    free(y);
    return r;
}
