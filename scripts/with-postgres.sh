#!/usr/bin/env bash
# Runs a command beside a throw-away PostgreSQL 15 cluster, then stops and deletes the cluster.
# The cluster listens on a unix socket in its own temporary directory only (no TCP), runs as
# the unprivileged `postgres` user when started as root (initdb refuses root), and the command
# finds it in SWITCHBOARD_TEST_POSTGRES_URL; SWITCHBOARD_REQUIRE_POSTGRES=1 tells the tests it
# must be there, so none of them quietly skips.
#
# Usage: scripts/with-postgres.sh command [args ...]
#   POSTGRES_BIN   where initdb and pg_ctl are (default /usr/lib/postgresql/15/bin)
set -euo pipefail

(($#)) || { echo "usage: scripts/with-postgres.sh command [args ...]" >&2; exit 2; }
bin=${POSTGRES_BIN:-/usr/lib/postgresql/15/bin}
if [[ ! -x $bin/initdb ]]; then
    echo "installing: postgresql-15" >&2
    # No default cluster: Debian's package would otherwise create one and start it on 5432.
    mkdir -p /etc/postgresql-common
    grep -qs '^create_main_cluster' /etc/postgresql-common/createcluster.conf \
        || echo 'create_main_cluster = false' >>/etc/postgresql-common/createcluster.conf
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15 >/dev/null
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/switchboard-pg.XXXXXX")
run_as=()
if ((EUID == 0)); then
    chown postgres: "$work"
    run_as=(runuser -u postgres --)
fi
stop() {
    "${run_as[@]}" "$bin/pg_ctl" -D "$work/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap stop EXIT
trap 'exit 130' INT TERM

"${run_as[@]}" "$bin/initdb" -D "$work/data" -U switchboard --auth=trust -E UTF8 --no-locale >"$work/initdb.log" 2>&1 \
    || { cat "$work/initdb.log" >&2; echo "with-postgres: initdb failed" >&2; exit 1; }
# A port number only names the socket file (no TCP listener); fsync off: a test cluster. Tests run
# in parallel, each instance with a handful of connections: room for 300.
port=$((20000 + RANDOM % 20000))
"${run_as[@]}" "$bin/pg_ctl" -D "$work/data" -l "$work/server.log" -w -t 60 \
    -o "-k $work -p $port -c listen_addresses='' -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" start >/dev/null \
    || { cat "$work/server.log" >&2; echo "with-postgres: the cluster did not start" >&2; exit 1; }

export SWITCHBOARD_TEST_POSTGRES_URL="postgresql:///postgres?host=$work&port=$port&user=switchboard"
export SWITCHBOARD_REQUIRE_POSTGRES=1
status=0
"$@" || status=$?
exit "$status"
