/* test_api_version.c - a program linked against the shared library (libjudgerl.so.N, not the static
 * one): the API version the loaded library reports equals this header's JR_API_VERSION, the library
 * is loaded under its soname libjudgerl.so.JR_API_VERSION, and library calls work through it.
 * It includes the umbrella header, so every public header also compiles in one program. */
#include <dlfcn.h>

#include "harness.h"

#include "judgerl/judgerl.h"

/* The path the dynamic loader opened for the object holding `sym`, or NULL. */
static const char *object_of(void *sym) {
    Dl_info info;
    return dladdr(sym, &info) && info.dli_fname ? info.dli_fname : NULL;
}

static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && !strcmp(s + n - m, tail);
}

TEST(runtime_version_is_the_headers) {
    CHECK_MSG(jr_api_version() == JR_API_VERSION, "library %d, header %d", jr_api_version(), JR_API_VERSION);
    CHECK_STR(jr_version(), JR_VERSION);
}

TEST(loaded_from_the_versioned_shared_library) {
    char soname[64];
    snprintf(soname, sizeof soname, "libjudgerl.so.%d", JR_API_VERSION);
    /* the loader knows an object by this soname (RTLD_NOLOAD: only if it is already loaded) */
    void *h = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
    CHECK_MSG(h != NULL, "no loaded object has the soname %s", soname);
    if (h) dlclose(h);
    /* and jr_api_version is that file's, not a copy linked into this program */
    const char *lib = object_of((void *)jr_api_version), *self = object_of((void *)ends_with);
    CHECK_MSG(lib && ends_with(lib, soname), "jr_api_version came from %s, expected %s", lib ? lib : "(none)", soname);
    CHECK_MSG(self && lib && strcmp(self, lib) != 0, "program %s, library %s", self ? self : "(none)", lib ? lib : "(none)");
}

TEST(library_calls_through_the_shared_object) {
    /* a typed config table loaded from YAML plus an override, and the per-thread error message */
    static const jr_cfg_field t[] = {{"a.b", JR_CFG_INT, "3", "doc", NULL, NULL, 0, 10},
                                     {NULL, 0, NULL, NULL, NULL, NULL, 0, 0}};
    const jr_cfg_field *tabs[] = {t, NULL};
    char *over[] = {"a.b=7"};
    jr_config c;
    CHECK_OK(jr_config_load_string(&c, "a:\n  b: 5\n", "embed", 1, over, tabs));
    CHECK(jr_cfg_int(&c, "a.b") == 7);
    jr_config_free(&c);
    CHECK(jr_fail(JR_EINVAL, "field %s", "x.y") == JR_EINVAL);
    CHECK_STR(jr_errmsg(), "field x.y");
}

int main(void) {
    RUN(runtime_version_is_the_headers);
    RUN(loaded_from_the_versioned_shared_library);
    RUN(library_calls_through_the_shared_object);
    return jt_done();
}
