/* ifeval_counts.c - dev-time helper of tools/ifeval_official_diff.py --counts: reads one JSON
 * string per line and prints judgerl's sentence count and capital-word count for it */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/ifeval.h"

int main(void) {
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, stdin) > 0) {
        json_t *s = json_loads(line, JSON_DECODE_ANY, NULL);
        const char *t = json_string_value(s);
        if (!t) { printf("-1 -1\n"); json_decref(s); continue; }
        printf("%zu %zu\n", jr_ifeval_count_sentences(t, strlen(t)), jr_ifeval_count_capital_words(t, strlen(t)));
        json_decref(s);
    }
    free(line);
    return 0;
}
