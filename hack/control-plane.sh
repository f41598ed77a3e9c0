#!/usr/bin/env bash
# Builds (once, cached outside the repo) and runs a local Kubernetes control
# plane on loopback: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler and kwok (simulated nodes). No Docker, no kubelet. With kwok, an admission
# policy makes kwok delete Pods as a kubelet does (KWOK_GUARD below).
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.36.3}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.5}"
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"

CACHE_ROOT="${METACEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/metacel}"
[[ "$CACHE_ROOT" == /* ]] || CACHE_ROOT="$PWD/$CACHE_ROOT"
CP_CACHE="$CACHE_ROOT/control-plane"
CACHE_KEY="k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}"
CACHE_DIR="$CP_CACHE/$CACHE_KEY"
BIN_DIR="$CACHE_DIR/bin"
STAGES_FILE="$CACHE_DIR/kwok-stages.yaml"
BINARIES=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok)

# Names of the kwok-simulated nodes, space separated.
KWOK_NODES="${METACEL_KWOK_NODES:-kwok-node-0}"
# Seconds `up` waits for the cluster to become ready.
UP_TIMEOUT="${METACEL_UP_TIMEOUT:-180}"
# Seconds `down` waits after SIGTERM before SIGKILL.
DOWN_TIMEOUT="${METACEL_DOWN_TIMEOUT:-20}"
# Simulated networks (kwok hands out pod IPs; nothing is routed there).
SERVICE_CIDR="10.96.0.0/16"
SERVICE_IP="10.96.0.1"
POD_CIDR="10.244.0.0/16"

usage() {
	cat <<EOF
Usage: $(basename "$0") COMMAND [DIR]

Commands:
  bin-dir     Build (first time only) and cache etcd, kube-apiserver,
              kube-controller-manager, kube-scheduler, kubectl and kwok;
              print the directory holding them.
  up DIR      Start the control plane with state, logs and certificates in
              DIR; write DIR/kubeconfig (admin) and wait until it is ready.
              With kwok, first install (idempotent) and wait for the
              ValidatingAdmissionPolicy $KWOK_GUARD:
              kwok deletes only a Pod being deleted, as a kubelet does,
              never the new Pod of the same name.
  down DIR    Stop everything 'up DIR' started (idempotent).
  env DIR     Print shell exports (KUBECONFIG, PATH) for the cluster in DIR.

Versions: Kubernetes $K8S_VERSION, etcd $ETCD_VERSION, kwok $KWOK_VERSION.
Cache: \${METACEL_CACHE:-\${XDG_CACHE_HOME:-\$HOME/.cache}/metacel} (now $CACHE_ROOT)

Environment for 'up' (ports default to free ones):
  METACEL_ETCD_PORT, METACEL_ETCD_PEER_PORT, METACEL_APISERVER_PORT,
  METACEL_KWOK_NODES (default: kwok-node-0), METACEL_UP_TIMEOUT (s, default 180),
  METACEL_DOWN_TIMEOUT (s, default 20; 'down' kills what still runs after
    it; 0 kills at once: for a cluster whose directory is removed next),
  METACEL_COMPONENTS (space separated, default: all of
    "${ALL_COMPONENTS[*]}"; must hold etcd and kube-apiserver;
    "etcd kube-apiserver" is an API server with no other writer, as the
    benchmark wants: no garbage collector, no scheduler, no nodes),
  METACEL_AUDIT_POLICY (an audit policy file: kube-apiserver logs the
    requests it selects as JSON lines to DIR/logs/audit.log),
  METACEL_FEATURE_GATES (kube-apiserver's --feature-gates, comma separated
    NAME=true|false, default none; e.g. ShardedListAndWatch=true, the alpha
    sharded list and watch, which needs nothing else),
  METACEL_APISERVER_PROFILING (true: kube-apiserver serves /debug/pprof to
    the admin kubeconfig, as the benchmark's -profile reads it; default false)
EOF
}

log() { printf '[control-plane] %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

# ---------------------------------------------------------------- build ----

cache_complete() {
	local b
	[[ -f "$STAGES_FILE" ]] || return 1
	for b in "${BINARIES[@]}"; do
		[[ -x "$BIN_DIR/$b" ]] || return 1
	done
}

# Prints the module's go.mod path from the module cache (downloading it).
module_gomod() {
	go mod download -json "$1" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p'
}

module_dir() {
	go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p'
}

# Writes a throwaway go.mod requiring k8s.io/kubernetes and replacing every
# staging module (required at v0.0.0 and replaced by ./staging/...) by its
# published v0.X.Y release.
write_k8s_gomod() {
	local dir="$1" k8s_mod staging_version mods
	k8s_mod="$(module_gomod "k8s.io/kubernetes@$K8S_VERSION")"
	[[ -f "$k8s_mod" ]] || die "cannot download k8s.io/kubernetes@$K8S_VERSION"
	staging_version="v0.${K8S_VERSION#v1.}"
	mods="$(awk '
		$2 == "=>" && $3 ~ /^\.\/staging\// { staged[$1] = 1 }
		$1 == "replace" && $3 == "=>" && $4 ~ /^\.\/staging\// { staged[$2] = 1 }
		$2 == "v0.0.0" { req[$1] = 1 }
		$1 == "require" && $3 == "v0.0.0" { req[$2] = 1 }
		END { for (m in staged) if (m in req) print m }
	' "$k8s_mod" | sort)"
	[[ -n "$mods" ]] || die "found no staging modules in $k8s_mod"
	{
		echo "module metacel.local/control-plane-build"
		echo
		sed -n 's/^go \(.*\)$/go \1/p' "$k8s_mod"
		sed -n 's/^godebug \(.*\)$/godebug \1/p' "$k8s_mod"
		echo
		echo "require k8s.io/kubernetes $K8S_VERSION"
		echo
		echo "replace ("
		local m
		for m in $mods; do
			printf '\t%s => %s %s\n' "$m" "$m" "$staging_version"
		done
		echo ")"
	} >"$dir/go.mod"
}

k8s_ldflags() {
	local minor="${K8S_VERSION#v1.}"
	minor="${minor%%.*}"
	local date pkg flags="-s -w"
	date="$(date -u +'%Y-%m-%dT%H:%M:%SZ')"
	for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
		flags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
		flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
	done
	printf '%s' "$flags"
}

build_all() {
	local tmp="$1" out="$1/bin"
	mkdir -p "$out" "$tmp/k8s" "$tmp/etcd"
	# Runs in a subshell: the env and cwd (outside any enclosing module,
	# e.g. the repo's) stay here.
	export CGO_ENABLED=0
	cd "$tmp"
	local start=$SECONDS

	log "building Kubernetes $K8S_VERSION components (takes 10-20 minutes once)"
	write_k8s_gomod "$tmp/k8s"
	local cmd ldflags
	ldflags="$(k8s_ldflags)"
	(
		cd "$tmp/k8s"
		for cmd in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
			log "  go build $cmd"
			go build -mod=mod -trimpath -ldflags="$ldflags" -o "$out/$cmd" "k8s.io/kubernetes/cmd/$cmd"
		done
	) >&2

	log "building etcd $ETCD_VERSION"
	cat >"$tmp/etcd/main.go" <<'EOF'
// Command etcd is etcd's server main, built from go.etcd.io/etcd/server/v3.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
EOF
	(
		cd "$tmp/etcd"
		go mod init metacel.local/etcd-build
		go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
		go build -mod=mod -trimpath -ldflags="-s -w" -o "$out/etcd" .
	) >&2

	log "building kwok $KWOK_VERSION"
	GOBIN="$out" go install -trimpath -ldflags="-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" >&2

	log "rendering kwok stages"
	local kwok_dir
	kwok_dir="$(module_dir "sigs.k8s.io/kwok@$KWOK_VERSION")"
	[[ -d "$kwok_dir/kustomize/stage/fast" ]] || die "kwok stages not found in $kwok_dir"
	"$out/kubectl" kustomize "$kwok_dir/kustomize/stage/fast" >"$tmp/kwok-stages.yaml"
	grep -q '^kind: Stage$' "$tmp/kwok-stages.yaml" || die "rendered kwok stages hold no Stage"

	local b
	for b in "${BINARIES[@]}"; do
		[[ -x "$out/$b" ]] || die "build produced no $b"
	done
	log "built all binaries in $((SECONDS - start))s"
}

cmd_bin_dir() {
	if ! cache_complete; then
		command -v go >/dev/null || die "go is needed to build the control plane"
		mkdir -p "$CP_CACHE"
		# One build at a time; others wait, then find the cache filled.
		exec 9>"$CP_CACHE/.lock"
		flock 9
		if ! cache_complete; then
			local tmp
			# Under the lock, any build dir is left over from a killed build.
			rm -rf "$CP_CACHE"/.build.*
			tmp="$(mktemp -d "$CP_CACHE/.build.XXXXXX")"
			# Interrupted builds leave nothing behind but this temp dir,
			# which the trap removes.
			trap 'rm -rf "$tmp"' EXIT
			(build_all "$tmp")
			mkdir -p "$tmp/final"
			mv "$tmp/bin" "$tmp/final/bin"
			mv "$tmp/kwok-stages.yaml" "$tmp/final/kwok-stages.yaml"
			rm -rf "$CACHE_DIR"
			mv -T "$tmp/final" "$CACHE_DIR"
			rm -rf "$tmp"
			trap - EXIT
		fi
		exec 9>&-
	fi
	printf '%s\n' "$BIN_DIR"
}

# ------------------------------------------------------------- cluster ----

# Component start order; `down` stops them in reverse.
ALL_COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)
# The components `up` starts (METACEL_COMPONENTS, default all); `down` stops
# whichever of ALL_COMPONENTS run.
read -r -a COMPONENTS <<<"${METACEL_COMPONENTS:-${ALL_COMPONENTS[*]}}"

# Succeeds when `up` starts the named component.
enabled() {
	local name
	for name in "${COMPONENTS[@]}"; do
		[[ "$name" != "$1" ]] || return 0
	done
	return 1
}

check_components() {
	local name known
	for name in "${COMPONENTS[@]}"; do
		for known in "${ALL_COMPONENTS[@]}"; do
			[[ "$name" != "$known" ]] || continue 2
		done
		die "METACEL_COMPONENTS: unknown component $name (known: ${ALL_COMPONENTS[*]})"
	done
	if ! enabled etcd || ! enabled kube-apiserver; then
		die "METACEL_COMPONENTS must hold etcd and kube-apiserver"
	fi
}

abs_dir() {
	mkdir -p "$1"
	(cd "$1" && pwd -P)
}

# Prints the pid from DIR/run/NAME.pid when that process is alive and runs
# the NAME binary (guards against a recycled pid); fails otherwise.
component_pid() {
	local dir="$1" name="$2" pid exe
	[[ -f "$dir/run/$name.pid" ]] || return 1
	pid="$(<"$dir/run/$name.pid")"
	[[ "$pid" =~ ^[0-9]+$ ]] || return 1
	kill -0 "$pid" 2>/dev/null || return 1
	exe="$(readlink "/proc/$pid/exe" 2>/dev/null)" || return 1
	[[ "${exe% (deleted)}" == */"$name" ]] || return 1
	printf '%s\n' "$pid"
}

port_in_use() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Prints a free loopback port not among the arguments, below the kernel's
# ephemeral range when there is room: port_in_use sees only listeners, and a
# port that an outgoing connection holds as its local end cannot be bound.
free_port() {
	local port tries=0 taken lo=20000 span=30000 ephemeral
	ephemeral="$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true)"
	if [[ "$ephemeral" =~ ^[0-9]+$ ]] && ((ephemeral - lo >= 2000)); then
		span=$((ephemeral - lo))
	fi
	while ((tries++ < 200)); do
		port=$((lo + RANDOM % span))
		for taken in "$@"; do
			[[ "$port" != "$taken" ]] || continue 2
		done
		if ! port_in_use "$port"; then
			printf '%s\n' "$port"
			return 0
		fi
	done
	die "found no free port"
}

# Creates an EC P-256 key and a certificate signed by the cluster CA.
# Args: pki-dir name subject [subjectAltName] [extendedKeyUsage]
issue_cert() {
	local pki="$1" name="$2" subj="$3" san="${4:-}" eku="${5:-clientAuth}"
	[[ -f "$pki/$name.crt" && -f "$pki/$name.key" ]] && return 0
	openssl ecparam -name prime256v1 -genkey -noout -out "$pki/$name.key" 2>/dev/null
	{
		echo "basicConstraints=critical,CA:FALSE"
		echo "keyUsage=critical,digitalSignature,keyEncipherment"
		echo "extendedKeyUsage=$eku"
		[[ -z "$san" ]] || echo "subjectAltName=$san"
	} >"$pki/$name.ext"
	openssl req -new -key "$pki/$name.key" -subj "$subj" -out "$pki/$name.csr" 2>/dev/null
	openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
		-CAcreateserial -days 3650 -sha256 -extfile "$pki/$name.ext" -out "$pki/$name.crt" 2>/dev/null
	rm -f "$pki/$name.csr" "$pki/$name.ext"
}

make_pki() {
	local pki="$1"
	mkdir -p "$pki"
	chmod 700 "$pki"
	if [[ ! -f "$pki/ca.crt" || ! -f "$pki/ca.key" ]]; then
		openssl ecparam -name prime256v1 -genkey -noout -out "$pki/ca.key" 2>/dev/null
		openssl req -x509 -new -key "$pki/ca.key" -subj "/CN=metacel-ca" -days 3650 -sha256 \
			-addext "basicConstraints=critical,CA:TRUE" \
			-addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
			-out "$pki/ca.crt" 2>/dev/null
	fi
	if [[ ! -f "$pki/sa.key" || ! -f "$pki/sa.pub" ]]; then
		openssl ecparam -name prime256v1 -genkey -noout -out "$pki/sa.key" 2>/dev/null
		openssl ec -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
	fi
	issue_cert "$pki" apiserver "/CN=kube-apiserver" \
		"IP:127.0.0.1,IP:$SERVICE_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local" \
		serverAuth
	issue_cert "$pki" admin "/O=system:masters/CN=metacel-admin"
	issue_cert "$pki" controller-manager "/CN=system:kube-controller-manager"
	issue_cert "$pki" scheduler "/CN=system:kube-scheduler"
	issue_cert "$pki" kwok "/O=system:masters/CN=kwok"
}

# Args: file user server pki-dir
write_kubeconfig() {
	local file="$1" user="$2" server="$3" pki="$4"
	cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: metacel
  cluster:
    server: $server
    certificate-authority: $pki/ca.crt
users:
- name: $user
  user:
    client-certificate: $pki/$user.crt
    client-key: $pki/$user.key
contexts:
- name: metacel
  context:
    cluster: metacel
    user: $user
current-context: metacel
EOF
}

# Starts a component detached (own session, no inherited stdio, so callers
# reading our output are not held open) and records its pid.
# Args: dir name command...
start_component() {
	local dir="$1" name="$2"
	shift 2
	log "starting $name (log: $dir/logs/$name.log)"
	(
		# Close inherited descriptors (a caller's pipes) above stderr.
		local fd
		for fd in /proc/self/fd/*; do
			fd="${fd##*/}"
			if ((fd > 2)); then
				{ exec {fd}>&-; } 2>/dev/null || true
			fi
		done
		exec setsid "$@" </dev/null >>"$dir/logs/$name.log" 2>&1
	) &
	printf '%s\n' "$!" >"$dir/run/$name.pid"
}

# Whether a component's recorded pid is still the shell that start_component
# forked to exec it: started, not yet the component (it closes its inherited
# descriptors first, which a loaded machine can make take a while).
component_starting() {
	local dir="$1" name="$2" pid exe
	pid="$(<"$dir/run/$name.pid")" || return 1
	[[ "$pid" =~ ^[0-9]+$ ]] || return 1
	exe="$(readlink "/proc/$pid/exe" 2>/dev/null)" || return 1
	[[ "${exe% (deleted)}" == "$(readlink /proc/$$/exe)" ]]
}

# Fails (after showing its log) when a started component has exited.
check_alive() {
	local dir="$1" name
	for name in "${COMPONENTS[@]}"; do
		[[ -f "$dir/run/$name.pid" ]] || continue
		component_pid "$dir" "$name" >/dev/null && continue
		component_starting "$dir" "$name" && continue
		log "$name exited; last lines of $dir/logs/$name.log:"
		tail -n 30 "$dir/logs/$name.log" >&2 || true
		return 1
	done
}

# Polls a command until it succeeds or the deadline passes.
# Args: dir description command...
wait_for() {
	local dir="$1" what="$2"
	shift 2
	until "$@" >/dev/null 2>&1; do
		check_alive "$dir" || return 1
		if ((SECONDS >= DEADLINE)); then
			log "timed out after ${UP_TIMEOUT}s waiting for $what"
			return 1
		fi
		sleep 0.2
	done
	log "ready: $what ($((SECONDS - UP_START))s)"
}

nodes_ready() {
	local kubeconfig="$1" node status
	for node in $KWOK_NODES; do
		status="$("$KUBECTL" --kubeconfig="$kubeconfig" get node "$node" \
			-o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')"
		[[ "$status" == "True" ]] || return 1
	done
}

node_manifest() {
	local node
	for node in $KWOK_NODES; do
		cat <<EOF
---
apiVersion: v1
kind: Node
metadata:
  name: $node
  annotations:
    node.alpha.kubernetes.io/ttl: "0"
    kwok.x-k8s.io/node: fake
  labels:
    kubernetes.io/arch: amd64
    kubernetes.io/hostname: $node
    kubernetes.io/os: linux
    kubernetes.io/role: agent
    node-role.kubernetes.io/agent: ""
    type: kwok
EOF
	done
}

# KWOK_GUARD is the ValidatingAdmissionPolicy that makes kwok delete Pods as a kubelet does, by
# UID: never the new Pod of the same name. kwok (v0.8.0) deletes a terminating Pod by name,
# without its UID as a precondition, and the events of the old Pod it has queued can make it
# delete again after the old Pod is gone: then it deletes the Pod created anew under the same
# name (a Recreate, a StatefulSet's replica). A kubelet deletes only a Pod being deleted, with its
# UID; kwok's request carries no UID, so the guard refuses, of kwok, the deletion of a Pod not
# being deleted: that is never the Pod kwok meant. Refused, kwok's stale job is retried and
# dropped at the new Pod's next event.
KWOK_GUARD="metacel-kwok-deletes-only-terminating-pods"
KWOK_GUARD_PROBE="metacel-kwok-guard-probe"

kwok_guard_manifest() {
	cat <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: $KWOK_GUARD
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: [""]
        apiVersions: [v1]
        operations: [DELETE]
        resources: [pods]
  matchConditions:
    - name: kwok
      expression: request.userInfo.username == 'kwok'
  validations:
    - expression: has(oldObject.metadata.deletionTimestamp)
      message: kwok deletes only a Pod being deleted (a stale job for an earlier Pod of the same name)
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: $KWOK_GUARD
spec:
  policyName: $KWOK_GUARD
  validationActions: [Deny]
EOF
}

# The probe: a Pod bound to a node that no one runs, of its own ServiceAccount (no
# controller-manager may have made the default one yet).
kwok_guard_probe_manifest() {
	cat <<EOF
apiVersion: v1
kind: ServiceAccount
metadata:
  name: $KWOK_GUARD_PROBE
  namespace: default
---
apiVersion: v1
kind: Pod
metadata:
  name: $KWOK_GUARD_PROBE
  namespace: default
spec:
  nodeName: $KWOK_GUARD_PROBE-no-node
  serviceAccountName: $KWOK_GUARD_PROBE
  automountServiceAccountToken: false
  containers:
    - name: probe
      image: probe
EOF
}

# Succeeds when the API server refuses, as kwok (its certificate's user and group), to delete
# the probe (not being deleted), and the guard is what refuses.
kwok_guard_enforced() {
	local kubeconfig="$1" out
	if out="$("$KUBECTL" --kubeconfig="$kubeconfig" --as=kwok --as-group=system:masters \
		-n default delete pod "$KWOK_GUARD_PROBE" --dry-run=server 2>&1)"; then
		return 1
	fi
	[[ "$out" == *"$KWOK_GUARD"* ]]
}

# Installs KWOK_GUARD (idempotent) and waits until the API server enforces it: a policy takes
# effect once the API server's informer has it. Runs before kwok starts, so that none of kwok's
# deletions escapes it.
guard_pods_from_kwok() {
	local dir="$1" kubectl=("$KUBECTL" --kubeconfig="$1/kubeconfig")
	kwok_guard_manifest | "${kubectl[@]}" apply -f - >/dev/null
	kwok_guard_probe_manifest | "${kubectl[@]}" apply -f - >/dev/null
	wait_for "$dir" "kwok deletes only terminating Pods ($KWOK_GUARD)" kwok_guard_enforced "$dir/kubeconfig"
	"${kubectl[@]}" -n default delete pod "$KWOK_GUARD_PROBE" --grace-period=0 --force --wait=false >/dev/null 2>&1
	"${kubectl[@]}" -n default delete serviceaccount "$KWOK_GUARD_PROBE" --wait=false >/dev/null
}

cmd_up() {
	local dir bin name
	command -v openssl >/dev/null || die "openssl is needed (apt-get install -y openssl)"
	check_components
	bin="$(cmd_bin_dir)"
	KUBECTL="$bin/kubectl"
	dir="$(abs_dir "$1")"
	for name in "${ALL_COMPONENTS[@]}"; do
		if component_pid "$dir" "$name" >/dev/null; then
			die "$name is already running for $dir; run '$0 down $dir' first"
		fi
	done
	mkdir -p "$dir/logs" "$dir/run" "$dir/etcd" "$dir/kwok-home"
	chmod 700 "$dir/etcd"

	UP_START=$SECONDS
	DEADLINE=$((SECONDS + UP_TIMEOUT))

	# Ports: env, else those of a previous run in this dir (etcd's data
	# remembers its peer URL), else free ones.
	local etcd_port="" etcd_peer_port="" apiserver_port="" p
	if [[ -f "$dir/run/ports" ]]; then
		# shellcheck source=/dev/null
		source "$dir/run/ports"
	fi
	etcd_port="${METACEL_ETCD_PORT:-$etcd_port}"
	etcd_peer_port="${METACEL_ETCD_PEER_PORT:-$etcd_peer_port}"
	apiserver_port="${METACEL_APISERVER_PORT:-$apiserver_port}"
	for p in "$etcd_port" "$etcd_peer_port" "$apiserver_port"; do
		if [[ -n "$p" ]] && port_in_use "$p"; then
			die "port $p on 127.0.0.1 is in use"
		fi
	done
	[[ -n "$etcd_port" ]] || etcd_port="$(free_port "$etcd_peer_port" "$apiserver_port")"
	[[ -n "$etcd_peer_port" ]] || etcd_peer_port="$(free_port "$etcd_port" "$apiserver_port")"
	[[ -n "$apiserver_port" ]] || apiserver_port="$(free_port "$etcd_port" "$etcd_peer_port")"
	printf 'etcd_port=%s\netcd_peer_port=%s\napiserver_port=%s\n' \
		"$etcd_port" "$etcd_peer_port" "$apiserver_port" >"$dir/run/ports"

	local pki="$dir/pki" server="https://127.0.0.1:$apiserver_port"
	make_pki "$pki"
	write_kubeconfig "$dir/kubeconfig" admin "$server" "$pki"
	write_kubeconfig "$dir/run/controller-manager.kubeconfig" controller-manager "$server" "$pki"
	write_kubeconfig "$dir/run/scheduler.kubeconfig" scheduler "$server" "$pki"
	write_kubeconfig "$dir/run/kwok.kubeconfig" kwok "$server" "$pki"

	# From here on, a failure stops whatever was started.
	UP_DIR="$dir"
	trap 'log "up failed; stopping what was started"; cmd_down "$UP_DIR" || true' EXIT

	start_component "$dir" etcd "$bin/etcd" \
		--name=metacel \
		--data-dir="$dir/etcd" \
		--listen-client-urls="http://127.0.0.1:$etcd_port" \
		--advertise-client-urls="http://127.0.0.1:$etcd_port" \
		--listen-peer-urls="http://127.0.0.1:$etcd_peer_port" \
		--initial-advertise-peer-urls="http://127.0.0.1:$etcd_peer_port" \
		--initial-cluster="metacel=http://127.0.0.1:$etcd_peer_port" \
		--unsafe-no-fsync \
		--quota-backend-bytes=8589934592 \
		--log-level=warn

	local audit=()
	if [[ -n "${METACEL_AUDIT_POLICY:-}" ]]; then
		[[ -f "$METACEL_AUDIT_POLICY" ]] || die "METACEL_AUDIT_POLICY: no file $METACEL_AUDIT_POLICY"
		audit=(--audit-policy-file="$(realpath "$METACEL_AUDIT_POLICY")"
			--audit-log-path="$dir/logs/audit.log" --audit-log-format=json)
	fi

	local gates=()
	if [[ -n "${METACEL_FEATURE_GATES:-}" ]]; then
		gates=(--feature-gates="$METACEL_FEATURE_GATES")
	fi

	start_component "$dir" kube-apiserver "$bin/kube-apiserver" \
		--etcd-servers="http://127.0.0.1:$etcd_port" \
		--bind-address=127.0.0.1 \
		--advertise-address=127.0.0.1 \
		--secure-port="$apiserver_port" \
		--cert-dir="$pki/apiserver-generated" \
		--tls-cert-file="$pki/apiserver.crt" \
		--tls-private-key-file="$pki/apiserver.key" \
		--client-ca-file="$pki/ca.crt" \
		--authorization-mode=Node,RBAC \
		--enable-admission-plugins=NodeRestriction \
		--service-account-issuer=https://kubernetes.default.svc.cluster.local \
		--service-account-key-file="$pki/sa.pub" \
		--service-account-signing-key-file="$pki/sa.key" \
		--service-cluster-ip-range="$SERVICE_CIDR" \
		--endpoint-reconciler-type=none \
		--allow-privileged=true \
		--profiling="${METACEL_APISERVER_PROFILING:-false}" \
		${audit[@]+"${audit[@]}"} \
		${gates[@]+"${gates[@]}"}

	local kubectl=("$KUBECTL" --kubeconfig="$dir/kubeconfig")
	wait_for "$dir" "kube-apiserver /readyz" "${kubectl[@]}" get --raw /readyz

	if enabled kube-controller-manager; then
		start_component "$dir" kube-controller-manager "$bin/kube-controller-manager" \
			--kubeconfig="$dir/run/controller-manager.kubeconfig" \
			--controllers='*' \
			--secure-port=0 \
			--leader-elect=false \
			--use-service-account-credentials=true \
			--service-account-private-key-file="$pki/sa.key" \
			--root-ca-file="$pki/ca.crt" \
			--cluster-signing-cert-file="$pki/ca.crt" \
			--cluster-signing-key-file="$pki/ca.key" \
			--service-cluster-ip-range="$SERVICE_CIDR" \
			--allocate-node-cidrs=false \
			--profiling=false
	fi

	if enabled kube-scheduler; then
		start_component "$dir" kube-scheduler "$bin/kube-scheduler" \
			--kubeconfig="$dir/run/scheduler.kubeconfig" \
			--secure-port=0 \
			--leader-elect=false \
			--profiling=false
	fi

	if enabled kwok; then
		guard_pods_from_kwok "$dir"
		node_manifest | "${kubectl[@]}" apply -f - >/dev/null

		# HOME keeps kwok from reading a user's ~/.kwok/kwok.yaml.
		HOME="$dir/kwok-home" start_component "$dir" kwok "$bin/kwok" \
			--kubeconfig="$dir/run/kwok.kubeconfig" \
			--config="$STAGES_FILE" \
			--manage-all-nodes=false \
			--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
			--cidr="$POD_CIDR" \
			--node-ip=127.0.0.1 \
			--node-lease-duration-seconds=40
		wait_for "$dir" "nodes Ready ($KWOK_NODES)" nodes_ready "$dir/kubeconfig"
	fi
	# The controller-manager makes the default ServiceAccount and the root CA ConfigMap.
	if enabled kube-controller-manager; then
		wait_for "$dir" "default ServiceAccount" "${kubectl[@]}" -n default get serviceaccount default
		wait_for "$dir" "kube-root-ca.crt ConfigMap" "${kubectl[@]}" -n default get configmap kube-root-ca.crt
	fi
	check_alive "$dir"

	trap - EXIT
	log "control plane up in $((SECONDS - UP_START))s"
	printf 'KUBECONFIG=%s\n' "$dir/kubeconfig"
}

# Sends TERM, waits up to DOWN_TIMEOUT, then KILLs, and returns once each
# process is gone (a killed one too: the caller may remove its directory next).
# Args: dir names...
stop_components() {
	local dir="$1" name pid pids=() deadline
	shift
	for name in "$@"; do
		if pid="$(component_pid "$dir" "$name")"; then
			log "stopping $name (pid $pid)"
			kill -TERM "$pid" 2>/dev/null || true
			pids+=("$pid")
		fi
	done
	deadline=$((SECONDS + DOWN_TIMEOUT))
	for pid in ${pids[@]+"${pids[@]}"}; do
		while ! process_gone "$pid"; do
			if ((SECONDS >= deadline)); then
				((DOWN_TIMEOUT == 0)) || log "pid $pid still runs ${DOWN_TIMEOUT}s after SIGTERM; killing"
				kill -KILL "$pid" 2>/dev/null || true
				wait_gone "$pid"
				break
			fi
			sleep 0.1
		done
	done
	for name in "$@"; do
		rm -f "$dir/run/$name.pid"
	done
}

# Succeeds when no process has the pid, or only its exit status is left (a
# zombie: it holds no port or file).
process_gone() {
	local state
	kill -0 "$1" 2>/dev/null || return 0
	state="$(ps -o stat= -p "$1" 2>/dev/null || true)"
	[[ "$state" == Z* ]]
}

# Waits up to 5 s for a killed process to be gone. Args: pid
wait_gone() {
	local tries=0
	while ! process_gone "$1" && ((tries++ < 50)); do
		sleep 0.1
	done
}

cmd_down() {
	local dir="$1"
	[[ -d "$dir" ]] || return 0
	dir="$(cd "$dir" && pwd -P)"
	# Clients first, then the API server, then its storage.
	stop_components "$dir" kwok kube-scheduler kube-controller-manager
	stop_components "$dir" kube-apiserver
	stop_components "$dir" etcd
}

cmd_env() {
	local dir bin
	bin="$(cmd_bin_dir)"
	dir="$(realpath -m "$1")"
	printf 'export KUBECONFIG=%q\n' "$dir/kubeconfig"
	# shellcheck disable=SC2016 # $PATH is for the shell that evals this.
	printf 'export PATH=%q:"$PATH"\n' "$bin"
}

main() {
	local cmd="${1:-}"
	case "$cmd" in
	bin-dir)
		[[ $# -eq 1 ]] || {
			usage >&2
			exit 2
		}
		cmd_bin_dir
		;;
	up | down | env)
		[[ $# -eq 2 ]] || {
			usage >&2
			exit 2
		}
		"cmd_$cmd" "$2"
		;;
	-h | --help | help)
		usage
		;;
	*)
		usage >&2
		exit 2
		;;
	esac
}

main "$@"
