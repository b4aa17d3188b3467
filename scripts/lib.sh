# Sourced by the scripts: what they all do, once. Servers of ours take `--listen 127.0.0.1:0`
# and print where they listen; the scripts read that (no script picks a port and releases it
# for a server to take later, which another process can take first). Third-party servers that
# cannot take port 0 (PostgreSQL, HAProxy) bind a random port themselves through `on_a_port`,
# which tries another when that one is taken.

# build_bins: every binary of the workspace, built the one way the test command builds them:
# by `cargo test --workspace --all-features`, which builds them (into $CARGO_TARGET_DIR/debug)
# for the integration tests. Features are resolved with the dev-dependencies' there, so a
# `cargo build --bins` would build every crate of the workspace a second time with another
# feature set (38 s here), and a script building only its own binaries a third.
build_bins() {
    local log status
    log=$(cargo test --workspace --all-features --locked --no-run --quiet 2>&1)
    status=$?
    # Its list of the test binaries it built is not news.
    printf '%s\n' "$log" | grep -v '^  Executable ' >&2
    return "$status"
}

# wait_for PATTERN FILE [SECONDS]: wait until FILE holds a match of PATTERN (grep -E), at most
# SECONDS (default 10); print the first match, or show FILE and fail.
wait_for() {
    local pattern="$1" file="$2" tries=$(( ${3:-10} * 10 )) found=""
    for _ in $(seq 1 "$tries"); do
        found=$(grep -oE "$pattern" "$file" 2>/dev/null | head -n1 || true)
        [ -n "$found" ] && { echo "$found"; return 0; }
        sleep 0.1
    done
    echo "waited in vain for '$pattern' in $file:" >&2
    tail -n 40 "$file" >&2 2>/dev/null || true
    return 1
}

# start_server LOG COMMAND...: run COMMAND (a server of ours, given --listen 127.0.0.1:0) in
# the background with its output in LOG; once it says where it listens, set $server_url to
# `http://ADDR` and $server_pid to its pid.
start_server() {
    local log="$1"; shift
    "$@" >"$log" 2>&1 &
    server_pid=$!
    server_url=$(wait_for 'listening on http://[0-9.:]+' "$log" 30 | sed 's/^listening on //') || {
        kill "$server_pid" 2>/dev/null || true
        return 1
    }
}

# wait_healthy URL NAME LOG: wait (at most 30 s) until URL/healthz answers 200.
wait_healthy() {
    for _ in $(seq 1 300); do
        curl -fsS "$1/healthz" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "$2 did not become healthy; its log:" >&2
    tail -n 20 "$3" >&2
    return 1
}

# on_a_port COMMAND...: run COMMAND with a random loopback port from 20000–59999 as its last
# argument, again with another port while it exits with 75 (EX_TEMPFAIL: "that port is
# taken"), at most 10 times; other exit codes end it. COMMAND binds the port itself.
on_a_port() {
    local status=0
    for _ in $(seq 1 10); do
        "$@" $(( 20000 + (RANDOM * 32768 + RANDOM) % 40000 )) && return 0 || status=$?
        [ "$status" -eq 75 ] || return "$status"
    done
    echo "no free port after 10 tries" >&2
    return 1
}

# start_haproxy DIR TEMPLATE SERVERS ROUTES PORT: HAProxy from TEMPLATE (its @PORT@, @STATS@,
# @SERVERS@ and @ROUTES@ lines filled in; the rendered file is DIR/haproxy.cfg) on PORT, stats on
# PORT+1, its pid in DIR/haproxy.pid and PORT in DIR/balancer.port; 75 when either port is
# taken (for `on_a_port`).
start_haproxy() {
    local dir="$1" template="$2" servers="$3" routes="$4" port="$5"
    python3 - "$template" "$dir/haproxy.cfg" "$port" "$(( port + 1 ))" "$servers" "$routes" <<'PY'
import sys
template, path, port, stats, servers, routes = sys.argv[1:]
text = open(template).read()
text = text.replace("@PORT@", port).replace("@STATS@", stats)
text = text.replace("@SERVERS@\n", servers).replace("@ROUTES@\n", routes)
open(path, "w").write(text)
PY
    if haproxy -f "$dir/haproxy.cfg" -D -p "$dir/haproxy.pid" >"$dir/haproxy.log" 2>&1; then
        echo "$port" >"$dir/balancer.port"
        return 0
    fi
    grep -q "cannot bind\|Address already in use" "$dir/haproxy.log" && return 75
    cat "$dir/haproxy.log" >&2
    return 1
}

# python_env REQUIREMENTS [PIP_FLAGS...]: a virtual environment with REQUIREMENTS installed,
# made once per version of that file under $TOOLS_CACHE (else tools/) and reused; prints its
# folder. A failed install leaves nothing behind that looks installed. $VENV_PYTHON names the
# interpreter (default python3).
python_env() {
    local req=$1 venv
    shift
    venv="${TOOLS_CACHE:-$PWD/tools}/python-$(sha256sum "$req" | cut -c1-16)"
    if [ ! -x "$venv/bin/python" ] || [ ! -f "$venv/.installed" ]; then
        echo "installing $req into $venv..." >&2
        rm -rf "$venv"
        "${VENV_PYTHON:-python3}" -m venv "$venv" >&2 || return 1
        "$venv/bin/pip" install -q "$@" -r "$req" >&2 || return 1
        touch "$venv/.installed"
    fi
    echo "$venv"
}

# node_env DIR: the npm packages DIR's package-lock.json pins, installed once per lockfile into
# the tools cache; prints the folder holding their node_modules.
node_env() {
    local dir=$1 env
    env="${TOOLS_CACHE:-$PWD/tools}/npm-$(cat "$dir/package.json" "$dir/package-lock.json" | sha256sum | cut -c1-16)"
    if [ ! -f "$env/.installed" ]; then
        echo "installing $dir into $env..." >&2
        rm -rf "$env"
        mkdir -p "$env"
        cp "$dir/package.json" "$dir/package-lock.json" "$env/"
        (cd "$env" && npm install --no-save --no-audit --no-fund --loglevel=error >&2) || return 1
        touch "$env/.installed"
    fi
    echo "$env"
}

# need COMMAND PACKAGE: install Debian's PACKAGE (install_package) when COMMAND, a path or a
# name on $PATH, is missing.
need() {
    [ -x "$1" ] || command -v "$1" >/dev/null 2>&1 || install_package "$2"
}

# install_package PACKAGE: install Debian's PACKAGE, fetching the package lists once per boot
# (not once per script that installs something). Its output goes to stderr; a failure says
# what to install by hand.
install_package() {
    local stamp=/tmp/.backchannel-apt-updated
    echo "installing Debian's $1..." >&2
    if [ ! -e "$stamp" ]; then
        apt-get update -qq >&2 || { echo "apt-get update failed; install $1 by hand" >&2; return 1; }
        touch "$stamp"
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" >&2 \
        || { echo "could not install $1; install it by hand" >&2; return 1; }
}
