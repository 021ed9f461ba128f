# test_cli_config.sh - `judgerl config`: one clear error line for bad configs, --print-config round trip
. "$JR_ROOT/tests/lib.sh"
cat >"$JR_TMP/bad.yaml" <<'Y'
run:
  sead: 3
Y
expect_error unknown_key "bad.yaml: unknown key 'run.sead' \(did you mean 'run.seed'\?\)" "$JR_BIN" config "$JR_TMP/bad.yaml"
expect_error bad_type "run.seed=\"x\": expected an integer" "$JR_BIN" config run.seed=x
expect_error missing_file "nope.yaml: cannot open" "$JR_BIN" config "$JR_TMP/nope.yaml"
expect_error bad_flag "unknown option '--frob'" "$JR_BIN" config --frob
expect_error unknown_command "unknown command 'frobnicate'" "$JR_BIN" frobnicate
expect_ok print_config "$JR_BIN" config "$JR_ROOT/configs/smoke.yaml" run.seed=9 --print-config
if grep -q '^  seed: 9$' "$JR_TMP/out"; then ok print_config_override; else fail print_config_override "$(cat "$JR_TMP/out")"; fi
cp "$JR_TMP/out" "$JR_TMP/eff.yaml"
expect_ok print_config_reloads "$JR_BIN" config "$JR_TMP/eff.yaml" --print-config
if cmp -s "$JR_TMP/out" "$JR_TMP/eff.yaml"; then ok print_config_fixed_point; else fail print_config_fixed_point "differs"; fi
