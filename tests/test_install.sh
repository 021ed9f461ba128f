# test_install.sh - `make install PREFIX=...` into a temporary prefix: `judgerl` runs from PATH, a C program
# builds against the headers + library through pkg-config, and the installed templates are found from
# any directory (PREFIX/share/judgerl); the shared library is installed as libjudgerl.so.N (N = JR_API_VERSION)
# with the libjudgerl.so link, and a program built with pkg-config loads that file and reads the header's version
. "$JR_ROOT/tests/lib.sh"
P="$JR_TMP/prefix"
if make -s -C "$JR_ROOT" install PREFIX="$P" >"$JR_TMP/inst.out" 2>&1; then ok make_install
else fail make_install "$(tail -c 400 "$JR_TMP/inst.out")"; fi
if [ -x "$P/bin/judgerl" ] && [ -f "$P/include/judgerl/config.h" ] && [ -f "$P/lib/libjudgerl.a" ] &&
   [ -f "$P/lib/pkgconfig/judgerl.pc" ] && [ -f "$P/share/judgerl/templates/prometheus_absolute.txt" ] &&
   [ -f "$P/share/judgerl/configs/smoke.yaml" ] && [ -f "$P/share/judgerl/data/sft_demo.jsonl" ]; then ok layout
else fail layout "$(cd "$P" 2>/dev/null && find . -maxdepth 3 | head -30)"; fi
# on PATH, from another directory, as the README writes it
if (cd "$JR_TMP" && PATH="$P/bin:$PATH" judgerl version) >"$JR_TMP/v.out" 2>&1 && grep -q '^judgerl ' "$JR_TMP/v.out" &&
   (cd "$JR_TMP" && PATH="$P/bin:$PATH" judgerl config "$P/share/judgerl/configs/smoke.yaml") >/dev/null 2>&1; then ok judgerl_on_path
else fail judgerl_on_path "$(cat "$JR_TMP/v.out")"; fi
# a program built only from the installed headers, library and pkg-config file, placed in PREFIX/bin so the
# template lookup beside the binary is the installed one; run from a directory without templates/
cat >"$JR_TMP/embed.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <judgerl/config.h>
#include <judgerl/judge.h>
int main(void) {
    static const jr_cfg_field t[] = {{"a.b", JR_CFG_INT, "3", "doc", NULL, NULL, 0, 10}, {NULL, 0, NULL, NULL, NULL, NULL, 0, 0}};
    const jr_cfg_field *tabs[] = {t, NULL};
    char *over[] = {"a.b=7"};
    jr_config c;
    if (jr_config_load_string(&c, "", "embed", 1, over, tabs) || jr_cfg_int(&c, "a.b") != 7) return 1;
    jr_config_free(&c);
    char *tmpl = NULL;
    if (jr_template_load("templates/prometheus_absolute.txt", NULL, &tmpl)) { fprintf(stderr, "%s\n", jr_errmsg()); return 2; }
    printf("config ok, template %zu bytes\n", strlen(tmpl));
    free(tmpl);
    return 0;
}
C
if PKG_CONFIG_PATH="$P/lib/pkgconfig" cc "$JR_TMP/embed.c" -o "$P/bin/embed_check" \
     $(PKG_CONFIG_PATH="$P/lib/pkgconfig" pkg-config --cflags --libs judgerl) >"$JR_TMP/cc.out" 2>&1 &&
   (cd "$JR_TMP" && "$P/bin/embed_check") >"$JR_TMP/e.out" 2>&1 &&
   grep -q "template $(wc -c <"$JR_ROOT/templates/prometheus_absolute.txt") bytes" "$JR_TMP/e.out"; then ok pkg_config_build_and_share_templates
else fail pkg_config_build_and_share_templates "$(tail -c 600 "$JR_TMP/cc.out"; cat "$JR_TMP/e.out")"; fi
# the versioned shared library: libjudgerl.so.N with N the header's JR_API_VERSION, libjudgerl.so -> it, and a
# program built with pkg-config loads PREFIX/lib/libjudgerl.so.N and gets the header's version from it
N=$(sed -n 's/^#define JR_API_VERSION \([0-9][0-9]*\).*/\1/p' "$P/include/judgerl/version.h")
if [ -n "$N" ] && [ -f "$P/lib/libjudgerl.so.$N" ] && [ "$(readlink "$P/lib/libjudgerl.so")" = "libjudgerl.so.$N" ]; then
  ok shared_library_layout
else fail shared_library_layout "N=$N: $(ls -l "$P/lib" 2>&1 | tr '\n' ' ')"; fi
cat >"$JR_TMP/ver.c" <<'C'
#include <stdio.h>
#include <judgerl/judgerl.h>
int main(void) {
    printf("header %d library %d\n", JR_API_VERSION, jr_api_version());
    return jr_api_version() == JR_API_VERSION ? 0 : 1;
}
C
if PKG_CONFIG_PATH="$P/lib/pkgconfig" cc "$JR_TMP/ver.c" -o "$JR_TMP/ver_check" \
     $(PKG_CONFIG_PATH="$P/lib/pkgconfig" pkg-config --cflags --libs judgerl) >"$JR_TMP/vcc.out" 2>&1 &&
   ldd "$JR_TMP/ver_check" >"$JR_TMP/ldd.out" 2>&1 && grep -q "libjudgerl.so.$N => $P/lib/libjudgerl.so.$N" "$JR_TMP/ldd.out" &&
   "$JR_TMP/ver_check" >"$JR_TMP/ver.out" 2>&1 && grep -q "^header $N library $N\$" "$JR_TMP/ver.out"; then
  ok pkg_config_program_loads_libjudgerl_so_N
else fail pkg_config_program_loads_libjudgerl_so_N "$(tail -c 600 "$JR_TMP/vcc.out"; grep judgerl "$JR_TMP/ldd.out"; cat "$JR_TMP/ver.out")"; fi
