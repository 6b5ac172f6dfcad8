# Sourced by scripts that run a Python program from a venv of their own:
#   venv=$(cached_venv NAME ID PIP-INSTALL-ARGS...)
# installs the packages once (pip, with the arguments given) into
#   ${XDG_CACHE_HOME:-$HOME/.cache}/airlock-toolchains/NAME/ID
# and prints that venv's directory. Later calls reuse it while its stamp is
# present (no network). Safe to run concurrently: installs take turns under
# flock(1), and an interrupted install is redone from scratch. The caller
# chooses ID so that changed pins get a venv of their own.
# Needs: python3 (3.9 or newer, with venv), flock.

cached_venv() {
    local name=$1 id=$2
    shift 2
    local tool
    for tool in python3 flock; do
        command -v "$tool" >/dev/null || {
            echo "cached_venv: '$tool' is not on PATH" >&2
            return 1
        }
    done
    local cache=${XDG_CACHE_HOME:-$HOME/.cache}/airlock-toolchains/$name
    local venv=$cache/$id
    mkdir -p "$cache"
    (
        exec 9>"$venv.lock"
        flock -w 1800 9 || {
            echo "cached_venv: timed out waiting for the lock $venv.lock" >&2
            exit 1
        }
        if [[ ! -f $venv/.installed ]]; then
            echo "installing $name into $venv (once)" >&2
            rm -rf "$venv"
            python3 -m venv "$venv" >&2 || {
                echo "cached_venv: python3 -m venv failed (is python3-venv installed?)" >&2
                exit 1
            }
            "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@" >&2 || {
                echo "cached_venv: pip install $* failed" >&2
                exit 1
            }
            touch "$venv/.installed"
        fi
    ) || return 1
    echo "$venv"
}
