#!/usr/bin/env bash
# The metacel demo: a local cluster (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kwok's simulated nodes), the five seed operators as policies, their samples,
# and metacel reconciling them. `hack/demo.sh up` starts it and leaves it running;
# `hack/demo.sh show` shows again the parents, their children and each parent's `metacel tree`;
# `hack/demo.sh down` stops everything it started.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${METACEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/metacel}"
DIR="${METACEL_DEMO_DIR:-$CACHE/demo}"
# What `show` shows (a test points it at another cluster: KUBECONFIG, these and METACEL_BIN).
PARENTS="${METACEL_DEMO_PARENTS:-myapps,myingresses,whalesays,configmapsyncs,memcacheds}"
POLICY_NAMESPACE="${METACEL_DEMO_POLICY_NAMESPACE:-metacel-system}"
METACEL="${METACEL_BIN:-$ROOT/bin/metacel}"
# The kinds of the seed operators' children.
CHILDREN="pods,deployments,jobs,loadbalancers,configmaps"
# A child carries its parent's UID; metacel's own records (a policy's rollout record ConfigMap,
# its Leases) carry the managed-by label but no parent.
CHILD_SELECTOR="app.kubernetes.io/managed-by=metacel,metacel.dev/parent-uid"

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

usage() {
	echo "usage: $0 up|show|down" >&2
	exit 2
}

up() {
	step "Building metacel"
	make -C "$ROOT" --no-print-directory build
	step "Building the local control plane (once; about 15 minutes the first time, then cached)"
	BIN="$("$ROOT/hack/control-plane.sh" bin-dir)"
	export PATH="$BIN:$PATH"
	down >/dev/null 2>&1 || true
	rm -rf "$DIR" # a fresh cluster: nothing left from an earlier demo
	step "Starting the control plane in $DIR"
	"$ROOT/hack/control-plane.sh" up "$DIR" >/dev/null
	export KUBECONFIG="$DIR/kubeconfig"
	kubectl get nodes

	# WhaleSay's is not among them: its policy declares it (parentSchema.install), and the runtime
	# installs it when it loads the policy, so that its one ConfigMap is the whole operator
	step "Installing four parents' CRDs (and the ACK LoadBalancer CRD that MyIngress composes)"
	kubectl apply -f "$ROOT/crds/myapp.yaml" -f "$ROOT/crds/myingress.yaml" -f "$ROOT/crds/configmapsync.yaml" \
		-f "$ROOT/crds/memcached.yaml" -f "$ROOT/test/testdata/crds/"
	kubectl wait --for=condition=Established crd --all --timeout=60s >/dev/null

	step "Applying the policies: ConfigMaps in $POLICY_NAMESPACE, no controller code"
	kubectl create namespace "$POLICY_NAMESPACE" --dry-run=client -o yaml | kubectl apply -f -
	# each policy acts as its own ServiceAccount, with what metacel rbac grants it
	kubectl apply -f "$ROOT/deploy/rbac/policies.yaml"
	kubectl apply -f "$ROOT/policies/"

	step "Starting metacel run (logs: $DIR/metacel.log)"
	setsid "$METACEL" run --kubeconfig "$KUBECONFIG" --policy-namespace "$POLICY_NAMESPACE" \
		--metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 \
		</dev/null >"$DIR/metacel.log" 2>&1 &
	echo $! >"$DIR/metacel.pid"
	wait_for "metacel to load the 5 policies" 60 \
		bash -c "[ \$(grep -c 'Policy loaded' '$DIR/metacel.log') -ge 5 ]"
	step "The WhaleSay CRD, installed by its policy"
	kubectl get crd whalesays.devsectim.io -L metacel.dev/installed-by

	step "Creating one parent of each kind (samples/)"
	kubectl apply -f "$ROOT/samples/"

	step "Playing the ACK controller: the load balancer of MyIngress becomes active"
	wait_for "the LoadBalancer child" 60 kubectl get loadbalancer example-ingress-alb -n default
	kubectl patch loadbalancer example-ingress-alb -n default --subresource=status --type=merge -p \
		'{"status":{"dnsName":"example-ingress-alb-1234567890.eu-west-1.elb.amazonaws.com","ackResourceMetadata":{"arn":"arn:aws:elasticloadbalancing:eu-west-1:123456789012:loadbalancer/app/example-ingress-alb/50dc6c495c0c9188"},"state":{"code":"active"}}}'

	step "Waiting for every parent to be Ready"
	kubectl wait --for=condition=Ready "$PARENTS" --all -A --timeout=120s

	show
	cat <<MSG

The cluster is running. Try it:
  export KUBECONFIG=$KUBECONFIG PATH=$BIN:\$PATH
  kubectl patch memcached memcached-sample --type=merge -p '{"spec":{"size":2}}'   # the Deployment follows
  kubectl edit configmap -n $POLICY_NAMESPACE policy-myapp                            # hot reload: a Pod template change replaces each Pod once
  $METACEL tree MyApp/example-app                                   # one parent, its children and why
  $0 show                                                  # all of the above again
  tail -f $DIR/metacel.log
Stop everything with: make demo-down
MSG
}

# show lists the parents, the children metacel made for them (not its own records), and each
# parent's `metacel tree`: its policy, conditions and children, and what the next sync would do.
show() {
	step "The parents"
	kubectl get "$PARENTS" -A
	step "Their children, made by metacel"
	kubectl get "$CHILDREN" -A -l "$CHILD_SELECTOR"
	local kind name ns
	while read -r kind name ns; do
		step "metacel tree $kind/$name -n $ns"
		# tree exits 1 when the parent is not Ready; what it prints says why
		"$METACEL" tree "$kind/$name" -n "$ns" --kubeconfig "$KUBECONFIG" --policy-namespace "$POLICY_NAMESPACE" || true
	done < <(kubectl get "$PARENTS" -A -o jsonpath='{range .items[*]}{.kind} {.metadata.name} {.metadata.namespace}{"\n"}{end}')
}

# demo_env points kubectl at the demo's cluster, unless KUBECONFIG is set.
demo_env() {
	export KUBECONFIG="${KUBECONFIG:-$DIR/kubeconfig}"
	PATH="$("$ROOT/hack/control-plane.sh" bin-dir):$PATH"
	export PATH
}

down() {
	if [ -f "$DIR/metacel.pid" ]; then
		kill "$(cat "$DIR/metacel.pid")" 2>/dev/null || true
		rm -f "$DIR/metacel.pid"
	fi
	if [ -d "$DIR" ]; then
		"$ROOT/hack/control-plane.sh" down "$DIR"
	fi
}

# wait_for DESCRIPTION SECONDS COMMAND...: polls COMMAND every half second until it succeeds.
wait_for() {
	local what="$1" timeout="$2" start=$SECONDS
	shift 2
	until "$@" >/dev/null 2>&1; do
		if ((SECONDS - start > timeout)); then
			echo "timed out after ${timeout}s waiting for $what" >&2
			exit 1
		fi
		sleep 0.5
	done
}

case "${1:-}" in
up) up ;;
show)
	demo_env
	show
	;;
down) down ;;
*) usage ;;
esac
