#!/usr/bin/env bash
# End-to-end proof on a throwaway kind cluster: Argo Workflows, Argo Events and MinIO from
# their official releases, the pvbench chart, one small benchmark run, and a candidate run
# started by a new StorageClass. Checks that results, Parquet tables and the report landed
# in MinIO under the pvbench key layout.
#
#   ci/e2e-kind.sh                 # needs: docker, kind, kubectl, helm (ci/install-tools.sh), internet
#   KEEP=1 ci/e2e-kind.sh          # keep the cluster afterwards (kind delete cluster --name pvbench-e2e)
#
# NOT RUN IN THIS PROJECT'S CI: the CI machine has no Docker engine and no network beyond
# package registries, so a kind cluster cannot start there. What CI does instead is the same
# on a real single-node Kubernetes it builds, with the real Argo engines built from the Go
# module proxy (ci/cluster-stage.sh, sdk/tests/test_cluster_*.py), and Argo's own linters in
# the fast suite. This script is for a machine with Docker and the internet, and by default
# tries the newest Argo Workflows (v4), which the cluster stage cannot build.
set -euo pipefail

CLUSTER=${CLUSTER:-pvbench-e2e}
ARGO_WORKFLOWS_VERSION=${ARGO_WORKFLOWS_VERSION:-v4.1.2}
ARGO_EVENTS_VERSION=${ARGO_EVENTS_VERSION:-v1.9.6}
MINIO_IMAGE=${MINIO_IMAGE:-quay.io/minio/minio:latest}
MC_IMAGE=${MC_IMAGE:-quay.io/minio/mc:latest}
NS=pvbench
TAG=e2e
MINIO_USER=pvbench-e2e
MINIO_PASSWORD=pvbench-e2e-secret
BUCKET=pvbench

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
PATH=$repo/.tools/bin:$PATH
log() { printf '\033[1m==> %s\033[0m\n' "$*"; }
for bin in docker kind kubectl helm; do
  command -v "$bin" >/dev/null || { echo "e2e-kind: $bin is required" >&2; exit 1; }
done

cleanup() {
  if [ "${KEEP:-0}" != 1 ]; then kind delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

log "kind cluster $CLUSTER"
kind create cluster --name "$CLUSTER" --wait 120s
kubectl config use-context "kind-$CLUSTER"

log "images (built from this tree, side-loaded: the templates use imagePullPolicy IfNotPresent)"
docker build -q -f ci/images/runner/Dockerfile -t "pvbench-runner:$TAG" .
docker build -q -f ci/images/report/Dockerfile -t "pvbench-report:$TAG" .
kind load docker-image --name "$CLUSTER" "pvbench-runner:$TAG" "pvbench-report:$TAG"

log "Argo Workflows $ARGO_WORKFLOWS_VERSION"
kubectl create namespace argo
kubectl apply -n argo --server-side -f "https://github.com/argoproj/argo-workflows/releases/download/$ARGO_WORKFLOWS_VERSION/install.yaml"
kubectl -n argo rollout status deployment/workflow-controller --timeout=300s

log "Argo Events $ARGO_EVENTS_VERSION"
kubectl create namespace argo-events
kubectl apply --server-side -f "https://github.com/argoproj/argo-events/releases/download/$ARGO_EVENTS_VERSION/install.yaml"
kubectl -n argo-events rollout status deployment/controller-manager --timeout=300s

log "MinIO ($MINIO_IMAGE) with bucket $BUCKET"
kubectl create namespace minio
kubectl -n minio create secret generic minio-root \
  --from-literal=MINIO_ROOT_USER=$MINIO_USER --from-literal=MINIO_ROOT_PASSWORD=$MINIO_PASSWORD
kubectl apply -n minio -f - <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: minio}
spec:
  selector: {matchLabels: {app: minio}}
  template:
    metadata: {labels: {app: minio}}
    spec:
      containers:
        - name: minio
          image: $MINIO_IMAGE
          args: [server, /data]
          envFrom: [{secretRef: {name: minio-root}}]
          ports: [{containerPort: 9000}]
          readinessProbe: {httpGet: {path: /minio/health/ready, port: 9000}}
          volumeMounts: [{name: data, mountPath: /data}]
      volumes: [{name: data, emptyDir: {}}]
---
apiVersion: v1
kind: Service
metadata: {name: minio}
spec:
  selector: {app: minio}
  ports: [{port: 9000, targetPort: 9000}]
EOF
kubectl -n minio rollout status deployment/minio --timeout=300s

mc() {  # run mc against the in-cluster MinIO, print its output
  kubectl -n minio run "mc-$RANDOM" --rm -i --restart=Never --quiet --image="$MC_IMAGE" \
    --env="MC_HOST_e2e=http://$MINIO_USER:$MINIO_PASSWORD@minio.minio.svc.cluster.local:9000" -- "$@"
}
mc mb --ignore-existing "e2e/$BUCKET"

log "pvbench chart"
kubectl create namespace "$NS"
kubectl -n "$NS" create secret generic pvbench-s3 --from-literal=accesskey=$MINIO_USER --from-literal=secretkey=$MINIO_PASSWORD
kubectl apply -n "$NS" -f "https://raw.githubusercontent.com/argoproj/argo-events/$ARGO_EVENTS_VERSION/examples/eventbus/jetstream.yaml"
helm install pvbench charts/pvbench -n "$NS" --wait \
  --set image.repository=pvbench-runner,image.tag=$TAG \
  --set reportImage.repository=pvbench-report,reportImage.tag=$TAG \
  --set s3.endpoint=minio.minio.svc.cluster.local:9000,s3.bucket=$BUCKET,s3.insecure=true \
  --set events.enabled=true --set events.webhook.enabled=false \
  --set 'benchmark.parameters.storage-classes=["standard"]'

log "a small run: one storage class (kind's local-path 'standard'), two tests, one repetition"
RUN=$(kubectl -n "$NS" create -o jsonpath='{.metadata.name}' -f - <<'EOF'
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  generateName: pvbench-e2e-
spec:
  workflowTemplateRef: {name: pvbench-benchmark}
  arguments:
    parameters:
      - {name: campaign, value: e2e}
      - {name: storage-classes, value: '["standard"]'}
      - {name: tests, value: "randread-iops,seqwrite"}
      - {name: repetitions, value: "1"}
      - {name: size, value: 256M}
      - {name: volume-size, value: 1Gi}
EOF
)
echo "workflow $RUN"
if ! kubectl -n "$NS" wait "workflow/$RUN" --for=jsonpath='{.status.phase}'=Succeeded --timeout=30m; then
  kubectl -n "$NS" get "workflow/$RUN" -o yaml | tail -80
  exit 1
fi

log "results, tables and report in MinIO"
listing=$(mc ls --recursive "e2e/$BUCKET/")
echo "$listing" | grep -q "results/campaign=e2e/run=$RUN/.*/result.json" || { echo "no results"; exit 1; }
echo "$listing" | grep -q "analytics/campaign=e2e/run=all/.*\.parquet" || { echo "no Parquet"; exit 1; }  # the campaign's: every run in one
echo "$listing" | grep -q "analytics/campaign=e2e/run=all/report/index.html" || { echo "no report"; exit 1; }
for _ in $(seq 1 30); do  # each cell's pod goes as it finishes (podGC), its PVC with it
  [ -z "$(kubectl -n "$NS" get pvc -l "pvbench.io/workflow=$RUN" -o name)" ] && break
  sleep 2
done
[ -z "$(kubectl -n "$NS" get pvc -l "pvbench.io/workflow=$RUN" -o name)" ] || { echo "PVCs left behind"; exit 1; }

log "a new StorageClass starts a candidate run (Argo Events)"
kubectl apply -f - <<'EOF'
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: pvbench-e2e-candidate}
provisioner: rancher.io/local-path
volumeBindingMode: WaitForFirstConsumer
reclaimPolicy: Delete
EOF
for _ in $(seq 1 60); do
  cand=$(kubectl -n "$NS" get workflows -l pvbench.io/role=candidate,pvbench.io/trigger=storageclass -o name)
  [ -n "$cand" ] && break
  sleep 5
done
[ -n "${cand:-}" ] || { echo "the Sensor did not submit a candidate run"; exit 1; }
kubectl -n "$NS" get "$cand" -o jsonpath='{.spec.arguments.parameters}' | grep -q 'pvbench-e2e-candidate'
log "e2e ok: $RUN and $cand"
