# Sourced by scripts/build-python-tools and scripts/build-javascript-tools:
# which files of an app directory a build writes, so that its input hash
# leaves them out (`--out .` builds an app into its own directory).

# Sets `names` to the components' names: the app directories' own names
# (`.` resolved), one per app directory given.
component_names() {
    local app dir
    names=()
    for app in "$@"; do
        dir=$(cd "$app" && pwd) || die "no directory $app"
        names+=("$(basename "$dir")")
    done
}

# What a run writing into the directory $out writes into app directory $1,
# when $out is in it: every component of `names`, its hash and its partial
# file, one a line, relative to $1. They are outputs, never inputs.
outputs_in() {
    local rel name
    case $out/ in
        "$1"/*) rel=.${out#"$1"} ;;
        *) return 0 ;;
    esac
    for name in "${names[@]}"; do
        printf '%s\n' "$rel/$name.wasm" "$rel/$name.wasm.inputs" "$rel/$name.wasm.partial"
    done
}
