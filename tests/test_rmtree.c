/* test_rmtree.c - jr_rmtree (core/fsutil.c): removes a tree, never follows a symlink, names what it could not remove */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "judgerl/fsutil.h"
#include "judgerl/status.h"

static char base[512];

static void put(const char *rel, const char *text) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", base, rel);
    FILE *f = fopen(p, "w");
    if (f) { fputs(text, f); fclose(f); }
}

static int exists(const char *rel) {
    char p[1024];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", base, rel);
    return lstat(p, &sb) == 0;
}

static void path(char *p, size_t n, const char *rel) { snprintf(p, n, "%s/%s", base, rel); }

TEST(removes_a_nested_tree) {
    char p[1024];
    path(p, sizeof p, "t1/a/b/c");
    CHECK_OK(jr_mkdirs(p));
    put("t1/a/f", "x");
    put("t1/a/b/c/g", "y");
    put("t1/.hidden", "z");
    path(p, sizeof p, "t1");
    CHECK_OK(jr_rmtree(p));
    CHECK(!exists("t1"));
}

TEST(missing_path_is_ok) {
    char p[1024];
    path(p, sizeof p, "never-made");
    CHECK_OK(jr_rmtree(p));
}

/* A symlink inside the tree to a directory outside it: the link goes, the directory and its file stay. */
TEST(symlink_inside_not_followed) {
    char p[1024], target[1024], link[1024];
    path(p, sizeof p, "t2/sub");
    CHECK_OK(jr_mkdirs(p));
    path(target, sizeof target, "outside");
    CHECK_OK(jr_mkdirs(target));
    put("outside/keep", "precious");
    path(link, sizeof link, "t2/sub/to-outside");
    CHECK(symlink(target, link) == 0);
    path(link, sizeof link, "t2/file-link");
    path(target, sizeof target, "outside/keep");
    CHECK(symlink(target, link) == 0);
    path(p, sizeof p, "t2");
    CHECK_OK(jr_rmtree(p));
    CHECK(!exists("t2"));
    CHECK(exists("outside/keep"));
}

/* The path given is itself a symlink to a directory: only the link is removed. */
TEST(symlink_top_not_followed) {
    char target[1024], link[1024];
    path(target, sizeof target, "outside2");
    CHECK_OK(jr_mkdirs(target));
    put("outside2/keep", "precious");
    path(link, sizeof link, "top-link");
    CHECK(symlink(target, link) == 0);
    CHECK_OK(jr_rmtree(link));
    CHECK(!exists("top-link"));
    CHECK(exists("outside2/keep"));
}

/* A path through a regular file cannot be removed: the error names it. */
TEST(error_names_the_path) {
    put("plain", "x");
    char p[1024];
    path(p, sizeof p, "plain/child");
    jr_status st = jr_rmtree(p);
    CHECK(st != JR_OK);
    CHECK_MSG(strstr(jr_errmsg(), p) != NULL, "%s", jr_errmsg());
    CHECK_MSG(strstr(jr_errmsg(), strerror(ENOTDIR)) != NULL, "%s", jr_errmsg());
}

/* An entry the walk cannot remove (a directory without write permission) is named, and what can
 * be removed is. Root ignores permissions: skipped there. */
TEST(error_names_the_entry) {
    if (geteuid() == 0) SKIP("running as root: permissions do not stop removal");
    char p[1024], locked[1024];
    path(p, sizeof p, "t3/locked");
    CHECK_OK(jr_mkdirs(p));
    put("t3/locked/f", "x");
    put("t3/other", "y");
    path(locked, sizeof locked, "t3/locked");
    CHECK(chmod(locked, 0555) == 0);
    path(p, sizeof p, "t3");
    jr_status st = jr_rmtree(p);
    CHECK(st != JR_OK);
    CHECK_MSG(strstr(jr_errmsg(), "t3/locked/f") != NULL, "%s", jr_errmsg());
    CHECK(!exists("t3/other"));
    chmod(locked, 0755);
    CHECK_OK(jr_rmtree(p));
    CHECK(!exists("t3"));
}

int main(void) {
    const char *tmp = getenv("JR_TMP");
    snprintf(base, sizeof base, "%s/rmtree-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(base)) { printf("FAIL - setup: mkdtemp %s: %s\n", base, strerror(errno)); return 1; }
    RUN(removes_a_nested_tree);
    RUN(missing_path_is_ok);
    RUN(symlink_inside_not_followed);
    RUN(symlink_top_not_followed);
    RUN(error_names_the_entry);
    RUN(error_names_the_path);
    jr_rmtree(base);
    return jt_done();
}
