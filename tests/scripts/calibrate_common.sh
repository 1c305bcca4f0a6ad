# Helpers for the scripts/calibrate tests (sourced after common.sh): synthetic points files whose
# values are this build's sim at known settings, so a fit has an exact answer to recover.
cal="$ROOT/scripts/calibrate"
sim="$BUILD_DIR/sim"
# Small, fast points: "id platform workload params" (0.02-0.1 s each).
SMALL_POINTS=(
    "a1 trn1 vector_add variant=stream n=25600 free_dim=200 layout=contiguous style=nl"
    "a2 trn1 vector_add variant=stream n=256000 free_dim=1000 layout=contiguous style=nl"
    "b1 trn2 vector_add variant=stream n=25600 free_dim=200 layout=strided style=isa"
    "b2 trn2 vector_add variant=stream n=256000 free_dim=1000 layout=strided style=isa"
    "t1 trn1 transpose m=256 n=256 style=isa"
    "t2 trn2 transpose m=256 n=256 style=isa"
)
# model_value PLATFORM WORKLOAD PARAMS STATS_KEY [--set K=V]...: the value sim gives.
model_value() {
    local platform="$1" workload="$2" params="$3" key="$4"
    shift 4
    local args=()
    for p in $params; do args+=(--param "$p"); done
    "$sim" --config "$ROOT/configs/$platform.yaml" --workload "$workload" --quiet \
        --stats-out "$TMP/stats.json" "${args[@]}" "$@" >/dev/null ||
        { echo "FAIL: sim did not run $platform $workload $params" >&2; return 1; }
    python3 -c "
import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split('.'):
    v = v[k]
print(repr(float(v)))" "$TMP/stats.json" "$key"
}
# synthetic_points FILE IDS [--set K=V]...: latency_us points with sim's values at those settings.
synthetic_points() {
    local file="$1" ids="$2"
    shift 2
    echo "id,platform,workload,params,metric,value,source,tol_pct" >"$file"
    for line in "${SMALL_POINTS[@]}"; do
        read -r id platform workload params <<<"$line"
        [[ " $ids " == *" $id "* ]] || continue
        ns="$(model_value "$platform" "$workload" "$params" total_time_ns "$@")" || return 1
        us="$(python3 -c "print(f'{$ns / 1e3:.9g}')")"
        echo "$id,$platform,$workload,$params,latency_us,$us,synthetic," >>"$file"
    done
}
