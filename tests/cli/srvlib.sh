# Helpers for CLI tests that run dsa-test-server (sourced after lib.sh).
#   start_server [server options...]   sets SERVER_PID, SERVER_PORT, SERVER_URL
#   stop_server [PID]                  SIGTERM, waits, returns the server's exit status
# Servers still running when the test exits are stopped. Needs $DSA_TEST_SERVER.
: "${DSA_TEST_SERVER:?run through ctest (the test server was not built: libmicrohttpd missing?)}"
srv_pids=""
srv_cleanup() {
    local p
    for p in $srv_pids; do kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    rm -rf "$TMP"
}
trap srv_cleanup EXIT

start_server() {
    local pf="$TMP/port.$RANDOM.$RANDOM" i
    "$DSA_TEST_SERVER" --port 0 --port-file "$pf" "$@" 2>>"$TMP/server.log" &
    SERVER_PID=$!
    srv_pids="$srv_pids $SERVER_PID"
    for i in $(seq 1 200); do
        [ -s "$pf" ] && break
        kill -0 "$SERVER_PID" 2>/dev/null || return 1
        sleep 0.05
    done
    [ -s "$pf" ] || return 1
    SERVER_PORT=$(cat "$pf")
    SERVER_URL="http://127.0.0.1:$SERVER_PORT"
}

stop_server() {
    local p=${1:-$SERVER_PID} rc
    kill -TERM "$p"
    wait "$p"
    rc=$?
    srv_pids=$(echo " $srv_pids " | sed "s/ $p / /")
    return $rc
}

# py TITLE: runs the Python on stdin (srvref importable, URL in $SERVER_URL); ok when it exits 0.
py() {
    local title=$1
    if TMP="$TMP" PYTHONPATH="$DSA_SRC/tests/cli" SERVER_URL="${SERVER_URL:-}" "$DSA_PYTHON" - >"$TMP/py.out" 2>&1; then
        ok "$title"
    else
        not_ok "$title"; sed 's/^/#   /' "$TMP/py.out" | tail -20
    fi
}
