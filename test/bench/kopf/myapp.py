#!/usr/bin/python3
"""The MyApp operator as the Kopf seed does its work, for the benchmark (test/bench, -configs frameworks).

Kopf itself cannot be installed here (no Python package index; Debian ships python3-kubernetes, not
Kopf), so this is the handler loop in Kopf's shape on Debian's python3-kubernetes (22.6.0):

- one watch of the MyApps (a LIST, then a WATCH from its resourceVersion, again after a 410), no
  cache of the Pods and no resync, as Kopf's;
- one handler per event, the events of one object in order and coalesced to its latest (Kopf's
  per-object worker and batch), the handlers of different objects in a thread pool of Kopf's
  default size for sync handlers (asyncio's default executor: min(32, CPUs + 4));
- the handler is the seed's create_fn: the Pod built as a dict, owned by the MyApp (kopf.adopt), created
  with the official client (CoreV1Api.create_namespaced_pod), then one status patch per parent
  (a merge patch of status.podName: what Kopf stores as the handler's result);
- an object already handled is not handled again (Kopf's last-handled-configuration annotation: here the status
  says so, at start too, as Kopf resumes).

Left out, so that this stand-in is no slower than Kopf: Kopf's second patch per handled object
(the last-handled-configuration annotation on the object itself), its progress records, its
events (a Kopf handler posts an event per success) and its peering.

The benchmark's policy change: --pod-labels, a file of labels every Pod carries beside its own, read
at start and on SIGHUP; then every MyApp is handled again: its Pod deleted and created anew.

It serves what the benchmark reads of every controller: controller_runtime_reconcile_total{controller="myapp"}
(handlers run) and workqueue_depth{name="myapp"} (objects waiting) on /metrics, /readyz once the first
LIST is queued.
"""

import argparse
import logging
import os
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

GROUP, VERSION, PLURAL = "demo.rtfm.co.ua", "v1", "myapps"
NAME = "myapp"
BANNER_COMMAND = 'if [ -n "$BANNER" ]; then echo "$BANNER"; fi; exec sleep infinity'
RETRY_DELAY = 1.0  # seconds before a failed handler runs again (Kopf's default backoff is 60 s)


def read_labels(path):
    """The labels of the --pod-labels file: one 'key: "value"' a line (what the bench writes)."""
    labels = {}
    if not path:
        return labels
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#") or line == "{}":
                continue
            key, _, value = line.partition(":")
            labels[key.strip().strip("'\"")] = value.strip().strip("'\"")
    return labels


class Operator:
    """The watch, the per-object workers and the handler."""

    def __init__(self, namespace, labels_path):
        self.namespace = namespace
        self.labels_path = labels_path
        self.labels = read_labels(labels_path)
        self.revision = 0  # the labels' revision: each SIGHUP adds one
        self.core = client.CoreV1Api()
        self.custom = client.CustomObjectsApi()
        self.lock = threading.Lock()
        self.latest = {}  # key -> the latest body not yet handled
        self.busy = set()  # keys whose worker runs
        self.known = {}  # key -> the latest body seen (to handle every MyApp again on SIGHUP)
        self.handled = {}  # key -> the labels' revision its Pod was made with
        self.syncs = {"success": 0, "error": 0}
        self.ready = threading.Event()
        self.pool = ThreadPoolExecutor(max_workers=min(32, (os.cpu_count() or 1) + 4))

    # the per-object workers

    def submit(self, body):
        key = body["metadata"]["namespace"] + "/" + body["metadata"]["name"]
        with self.lock:
            self.latest[key] = body
            self.known[key] = body
            if key in self.busy:
                return
            self.busy.add(key)
        self.pool.submit(self.drain, key)

    def forget(self, body):
        key = body["metadata"]["namespace"] + "/" + body["metadata"]["name"]
        with self.lock:
            self.known.pop(key, None)
            self.handled.pop(key, None)

    def drain(self, key):
        while True:
            with self.lock:
                body = self.latest.pop(key, None)
                if body is None:
                    self.busy.discard(key)
                    return
            try:
                self.handle(key, body)
                result = "success"
            except Exception as e:  # a temporary error: Kopf retries the handler after a backoff
                logging.error("Handler for %s failed: %s; retrying in %.0fs", key, e, RETRY_DELAY)
                result = "error"
                threading.Timer(RETRY_DELAY, self.retry, (key, body)).start()
            with self.lock:
                self.syncs[result] += 1

    def retry(self, key, body):
        with self.lock:
            if key not in self.known:
                return
            body = self.latest.get(key, body)
        self.submit(body)

    def depth(self):
        with self.lock:
            return len(self.latest)

    # the handler

    def handle(self, key, body):
        meta, spec, status = body["metadata"], body.get("spec") or {}, body.get("status") or {}
        name, namespace = meta["name"], meta["namespace"]
        pod_name = name + "-pod"
        with self.lock:
            revision, labels = self.revision, dict(self.labels)
            # at start, a MyApp whose status names its Pod was handled (Kopf resumes it)
            done = self.handled.setdefault(key, 0 if status.get("podName") == pod_name else -1)
        if done >= revision:
            return
        image = spec.get("image")
        if not image:  # kopf.PermanentError: reported, not retried
            self.patch_status(name, namespace, {"podName": None, "error": "Field 'spec.image' must be provided."})
            return
        if done >= 0:  # its Pod was made with other labels: replaced, deleted first
            self.delete_pod(pod_name, namespace)
        self.create_pod(self.pod_for(body, image, labels), namespace)
        logging.info("Pod %s/%s created", namespace, pod_name)
        if status.get("podName") != pod_name:
            self.patch_status(name, namespace, {"podName": pod_name})
        with self.lock:
            self.handled[key] = revision

    def pod_for(self, body, image, labels):
        meta, spec = body["metadata"], body.get("spec") or {}
        container = {
            "name": meta["name"],
            "image": image,
            "command": ["/bin/sh", "-c", BANNER_COMMAND],
            "ports": [{"containerPort": 80}],
        }
        if spec.get("banner"):
            container["env"] = [{"name": "BANNER", "value": spec["banner"]}]
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": meta["name"] + "-pod",
                "namespace": meta["namespace"],
                "labels": {**labels, "app": meta["name"]},
                # kopf.adopt
                "ownerReferences": [{
                    "apiVersion": body["apiVersion"], "kind": body["kind"], "name": meta["name"],
                    "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True,
                }],
            },
            "spec": {"containers": [container]},
        }

    def create_pod(self, pod, namespace):
        # a Pod being deleted still holds its name: created once it is gone
        for _ in range(100):
            try:
                self.core.create_namespaced_pod(namespace=namespace, body=pod)
                return
            except ApiException as e:
                if e.status != 409:
                    raise
                existing = self.core.read_namespaced_pod(pod["metadata"]["name"], namespace)
                if existing.metadata.deletion_timestamp is None:
                    return  # it exists (a handler retried)
            time.sleep(0.05)
        raise RuntimeError("Pod %s still being deleted" % pod["metadata"]["name"])

    def delete_pod(self, pod_name, namespace):
        try:
            self.core.delete_namespaced_pod(pod_name, namespace)
        except ApiException as e:
            if e.status != 404:
                raise

    def patch_status(self, name, namespace, status):
        self.custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, namespace, PLURAL, name, {"status": status})

    # the watch

    def watch_forever(self):
        while True:
            listed = self.custom.list_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL)
            for item in listed["items"]:
                item.setdefault("apiVersion", GROUP + "/" + VERSION)
                item.setdefault("kind", "MyApp")
                self.submit(item)
            self.ready.set()
            try:
                self.watch_from(listed["metadata"]["resourceVersion"])
            except ApiException as e:
                if e.status != 410:
                    raise
                logging.info("Watch expired (410): listing again")

    def watch_from(self, resource_version):
        stream = watch.Watch().stream(
            self.custom.list_namespaced_custom_object, GROUP, VERSION, self.namespace, PLURAL,
            resource_version=resource_version, allow_watch_bookmarks=True)
        for event in stream:
            if event["type"] in ("ADDED", "MODIFIED"):
                self.submit(event["object"])
            elif event["type"] == "DELETED":
                self.forget(event["object"])

    # the policy change

    def relabel(self):
        labels = read_labels(self.labels_path)
        with self.lock:
            self.labels = labels
            self.revision += 1
            bodies = list(self.known.values())
        logging.info("Pod labels reloaded: %s; %d MyApps", labels, len(bodies))
        for body in bodies:
            self.submit(body)


def serve(operator, address):
    """/metrics and /readyz."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path == "/readyz":
                code, text = (200, "ok") if operator.ready.is_set() else (503, "not listed yet")
            elif self.path == "/metrics":
                with operator.lock:
                    syncs = dict(operator.syncs)
                lines = ['controller_runtime_reconcile_total{controller="%s",result="%s"} %d' % (NAME, r, n)
                         for r, n in syncs.items()]
                lines.append('workqueue_depth{name="%s"} %d' % (NAME, operator.depth()))
                code, text = 200, "\n".join(lines) + "\n"
            else:
                code, text = 404, "not found"
            body = text.encode()
            self.send_response(code)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    host, _, port = address.rpartition(":")
    server = ThreadingHTTPServer((host, int(port)), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--metrics-bind-address", default="127.0.0.1:8080")
    parser.add_argument("--pod-labels", default="")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    config.load_kube_config(config_file=args.kubeconfig)
    operator = Operator(args.namespace, args.pod_labels)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    signal.signal(signal.SIGHUP, lambda *_: threading.Thread(target=operator.relabel).start())
    serve(operator, args.metrics_bind_address)
    logging.info("Started: %d handler threads", operator.pool._max_workers)
    operator.watch_forever()


if __name__ == "__main__":
    sys.exit(main())
