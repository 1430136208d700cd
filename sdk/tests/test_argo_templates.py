"""The rendered Argo templates and the Helm chart: golden, upstream lint, strict schemas, helm lint.

The fast first line before the cluster stage runs them on the real engines: every rendered
object must match Hera's definitions exactly, pass Argo's own validation (`argo lint
--offline`, `argo-events lint`, the binaries the cluster runs), and validate against strict
Kubernetes/Argo schemas (unknown fields rejected, which Argo's lint does not check) for
default values and for values with every optional part on.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
import yaml
from argo_helpers import (
    ALL_ON_VALUES,
    CHART,
    FIXTURES,
    PVBENCH,
    REPO,
    TEMPLATES,
    benchmark_template,
    helm,
    helm_template,
    kubeconform,
    load_yaml_docs,
    templates_by_name,
    tool_path,
)

from pvbench.argo import keys
from pvbench.argo.render import CHART_FILES, REPORT_PROFILES, render_all, render_module, render_report_profiles
from pvbench.cells.cell import FAN_OUT_ITEM_KEYS
from pvbench.profiles import DEFAULT_PROFILE_NAME, PROFILES
from pvbench.store import layout

WORKFLOW_SOURCES = sorted(p for p in (REPO / "workflows").glob("*.py") if not p.name.startswith("_"))


# ---------------------------------------------------------------- golden
@pytest.mark.parametrize("source", WORKFLOW_SOURCES, ids=lambda p: p.name)
def test_each_workflow_renders_exactly_to_its_template(source):
    rendered = render_module(source)
    target = TEMPLATES / f"{source.stem}.yaml"
    assert target.exists(), f"{target} missing: run `pvbench argo render`"
    assert target.read_text() == rendered, f"{target} differs from {source.name}: run `pvbench argo render`"


def test_the_chart_reads_the_one_rendered_copy():
    """templates/ is the chart's files/ (a link), so the chart cannot carry a stale second copy."""
    assert TEMPLATES.is_symlink()
    assert TEMPLATES.resolve() == (REPO / CHART_FILES).resolve() == (CHART / "files").resolve()
    tracked = subprocess.run(["git", "-C", str(REPO), "ls-files", "-s", "templates"], capture_output=True, text=True)
    if tracked.returncode == 0 and tracked.stdout:  # a git checkout: the link itself is what is committed
        assert tracked.stdout.startswith("120000 "), tracked.stdout


def test_no_template_without_a_source():
    sources = {p.stem for p in WORKFLOW_SOURCES}
    assert {p.stem for p in TEMPLATES.glob("*.yaml")} == sources
    assert {p.name for p in (CHART / "files").iterdir()} == {f"{s}.yaml" for s in sources}


def test_report_profiles_are_rendered_from_the_catalog():
    assert (REPO / REPORT_PROFILES).read_text() == render_report_profiles(), "run `pvbench argo render`"


def test_render_check_fails_on_a_hand_edit(tmp_path):
    root = tmp_path / "repo"
    for folder in ("workflows", "templates", "reports/components"):
        shutil.copytree(REPO / folder, root / folder)
    assert not [o for o in render_all(root, check=True) if o.changed]
    edited = root / "templates" / "benchmark.yaml"
    edited.write_text(edited.read_text().replace("retryPolicy: OnError", "retryPolicy: Always", 1))
    labels = root / REPORT_PROFILES
    labels.write_text(labels.read_text().replace('"QD32"', '"QD 32"'))
    proc = subprocess.run([PVBENCH, "argo", "render", "--check", "--root", str(root)], capture_output=True, text=True)
    assert proc.returncode == 1
    assert (
        "retryPolicy: Always" in proc.stdout
        and '"QD 32"' in proc.stdout
        and "2 rendered file(s) differ" in proc.stderr.replace("\n", " ")
    )
    proc = subprocess.run([PVBENCH, "argo", "render", "--root", str(root)], capture_output=True, text=True)
    assert proc.returncode == 0 and "retryPolicy: Always" not in edited.read_text()
    assert labels.read_text() == render_report_profiles()


FIO_PODS = (
    "benchmark-cell",
    "benchmark-block-cell",
    "benchmark-pod",
    "fio-client",
    "fio-client-shared",
)  # the templates whose pods run fio on a volume of the class


# ---------------------------------------------------------------- what the benchmark template promises
def test_benchmark_template_shape():
    doc = benchmark_template()
    spec = doc["spec"]
    tpl = templates_by_name(doc)
    params = {p["name"]: p for p in spec["arguments"]["parameters"]}
    assert all(p.get("description") for p in params.values()), "every parameter is described for the UI"
    assert params["profile"]["enum"] == list(PROFILES) and params["profile"]["value"] == DEFAULT_PROFILE_NAME
    assert "enum" in params["repetitions"] and "enum" in params["runtime"]
    # vshn or sweep from the UI keep their own timings unless the user picks others
    assert params["ramp"]["value"] == params["runtime"]["value"] == params["size"]["value"] == "profile"
    assert spec["artifactRepositoryRef"]["configMap"] == "pvbench-artifact-repository"

    cell = tpl["benchmark-cell"]
    [target] = [v for v in cell["volumes"] if v["name"] == "target"]
    claim = target["ephemeral"]["volumeClaimTemplate"]
    assert claim["spec"]["storageClassName"] == "{{inputs.parameters.storage-class}}", "a fresh PVC per cell's class"
    # A quantity cannot hold {{…}} (the controller refuses the template): the size comes in by podSpecPatch.
    assert "{{" not in claim["spec"]["resources"]["requests"]["storage"]
    patch = json.loads(cell["podSpecPatch"])
    [vol] = patch["volumes"]
    assert vol["name"] == "target"
    assert (
        vol["ephemeral"]["volumeClaimTemplate"]["spec"]["resources"]["requests"]["storage"]
        == "{{workflow.parameters.volume-size}}"
    )
    # A deadline from validate; no retry (a retried pod template would lose the deadline while pending).
    assert cell["timeout"] == "{{workflow.outputs.parameters.cell-timeout}}"
    assert "retryStrategy" not in cell
    assert [o["globalName"] for o in tpl["validate"]["outputs"]["parameters"]] == [
        "cell-timeout",
        "pod-timeout",
        "volume-wait",
    ]
    # every fio pod carries volume-timeout for the guard (a pod unscheduled past it fails)
    for name in ("benchmark-cell", "benchmark-block-cell", "benchmark-pod", "fio-client", "fio-client-shared"):
        annotations = tpl[name]["metadata"]["annotations"]
        assert annotations == {"pvbench.io/volume-wait-s": "{{workflow.outputs.parameters.volume-wait}}"}, name
    # Other steps retry only for errors (lost pods), never for a step that ran and failed.
    for t in tpl.values():
        if "retryStrategy" in t:
            assert t["retryStrategy"]["retryPolicy"] == "OnError", t["name"]
            assert "expression" not in t["retryStrategy"]
    # One cell at a time (a pod, or a multi-client cell's DAG: the DAGs' parallelism counts their
    # children), one run at a time per node selection, cell pods gone as they finish.
    assert "parallelism" not in spec
    assert tpl["main"]["parallelism"] == 1 and tpl["adaptive"]["parallelism"] == 1
    assert spec["synchronization"]["mutexes"] == [{"name": "pvbench-node-{{workflow.parameters.node-value}}"}]
    assert spec["podGC"] == {
        "strategy": "OnPodCompletion",
        "labelSelector": {"matchLabels": {"pvbench.io/component": "benchmark"}},
    }
    assert cell["metadata"]["labels"] == {"pvbench.io/component": "benchmark"}
    assert cell["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    # The exit handler: cleanup of pods left pending, then publish: aggregate (with Argo's
    # failures) -> report, holding the campaign's mutex (named by the campaign's key, as the store's
    # keys are), so runs of one campaign on different nodes publish in turn.
    assert spec["onExit"] == "finish"
    finish = {t["name"]: t for t in tpl["finish"]["dag"]["tasks"]}
    assert set(finish) == {"cleanup", "publish"} and finish["publish"]["template"] == "publish"
    assert finish["publish"]["depends"] == "cleanup.Succeeded || cleanup.Failed || cleanup.Errored"
    assert "when" not in finish["publish"] and "when" not in finish["cleanup"]
    publish = {t["name"]: t for t in tpl["publish"]["dag"]["tasks"]}
    assert set(publish) == {"aggregate", "report"} and publish["report"]["depends"] == "aggregate"
    assert tpl["publish"]["synchronization"] == {
        "mutexes": [{"name": "pvbench-campaign-{{=lower(workflow.parameters.campaign)}}"}]
    }
    # build-report=false skips only the report: the run's tables still land
    assert publish["report"]["when"] == "'{{workflow.parameters.build-report}}' == 'true'"
    assert "when" not in publish["aggregate"]
    [build_report] = [p for p in spec["arguments"]["parameters"] if p["name"] == "build-report"]
    assert build_report["value"] == "true" and build_report["enum"] == ["true", "false"]
    assert "pvbench.io/component=benchmark" in " ".join(tpl["cleanup"]["resource"]["flags"])
    assert tpl["cleanup"]["serviceAccountName"] == "pvbench-cleanup"
    assert "{{workflow.failures}}" in tpl["aggregate"]["container"]["args"]
    assert tpl["aggregate"]["inputs"]["artifacts"][0]["optional"] is True
    # Results go out unarchived.
    [art] = cell["outputs"]["artifacts"]
    assert art["archive"] == {"none": {}}
    # Non-root everywhere.
    assert spec["securityContext"]["runAsNonRoot"] is True and spec["securityContext"]["runAsUser"] > 0
    for t in tpl.values():
        if "container" in t:
            assert t["container"]["securityContext"]["allowPrivilegeEscalation"] is False


def test_profile_parameters_come_from_the_catalog():
    """Names, test counts and every profile's own timing, as the catalog has them: a profile added,
    or a timing changed, reaches the UI's choices and descriptions by re-rendering alone."""
    params = {p["name"]: p for p in benchmark_template()["spec"]["arguments"]["parameters"]}
    for profile in PROFILES.values():
        t = profile.timing
        assert f"{profile.name} ({len(profile.tests)} tests" in params["profile"]["description"]
        assert f"{profile.name} {t.ramp_s:g}s" in params["ramp"]["description"]
        assert f"{profile.name} {t.runtime_s:g}s" in params["runtime"]["description"]
        assert f"{profile.name} {t.size}" in params["size"]["description"]
        # the profile's own timing is also one of the choices, so it can be kept for another profile
        assert f"{t.ramp_s:g}s" in params["ramp"]["enum"] and f"{t.runtime_s:g}s" in params["runtime"]["enum"]
    # the sweep's 32-job tests do not fit the default volume: the description says so
    assert "sweep (64 tests, up to 128 GiB of files: raise volume-size)" in params["profile"]["description"]
    assert params["volume-size"]["value"] == "10Gi"


def test_fan_out_items_carry_the_cells_inputs():
    """Every fan-out gives benchmark-cell exactly the item's keys as its inputs."""
    tpl = templates_by_name(benchmark_template())
    inputs = [p["name"] for p in tpl["benchmark-cell"]["inputs"]["parameters"]]
    assert inputs == [k.replace("_", "-") for k in FAN_OUT_ITEM_KEYS]
    for dag in ("main", "adaptive"):
        [task] = [t for t in tpl[dag]["dag"]["tasks"] if t["template"] == "benchmark-cell"]
        args = {p["name"]: p["value"] for p in task["arguments"]["parameters"]}
        assert args == {k.replace("_", "-"): "{{item.%s}}" % k for k in FAN_OUT_ITEM_KEYS}


def test_artifact_keys_come_from_the_layout():
    tpl = templates_by_name(benchmark_template())
    campaign, run = "{{=lower(workflow.parameters.campaign)}}", "{{workflow.name}}"
    [results, compacts, histories] = tpl["aggregate"]["inputs"]["artifacts"]
    [tables, compact, history] = tpl["aggregate"]["outputs"]["artifacts"]
    # The layout with sentinel values, re-filled: the same key whatever the layout's spelling.
    assert results["s3"]["key"] == layout.results_prefix("zzc", "zzr").replace("zzc", campaign).replace("zzr", run)
    # the run's compact goes back beside the campaign's other compacts, which come in (none at first)
    assert compact["s3"]["key"] == layout.compact_prefix("zzc", "zzr").replace("zzc", campaign).replace("zzr", run)
    assert compacts["s3"]["key"] == layout.compact_prefix("zzc").replace("zzc", campaign) and compacts["optional"]
    assert compact["path"].endswith("/" + compact["s3"]["key"]) and compacts["path"].endswith(
        "/" + compacts["s3"]["key"]
    )
    # one set of tables and one report per campaign, not per run
    assert tables["s3"]["key"] == layout.analytics_prefix("zzc").replace("zzc", campaign)
    # the campaign's history goes where every campaign's come in from (none before the first)
    assert history["s3"]["key"] == layout.history_key("zzc").replace("zzc", campaign)
    assert history["path"] == f"{tables['path']}/{layout.HISTORY_FILE}"
    assert histories["s3"]["key"] == layout.HISTORY_ROOT and histories["optional"]
    assert histories["path"].endswith("/" + layout.HISTORY_ROOT)
    assert tpl["report"]["outputs"]["artifacts"][0]["s3"]["key"] == layout.report_prefix("zzc").replace("zzc", campaign)
    [result] = tpl["benchmark-cell"]["outputs"]["artifacts"]
    fill = {
        "campaign": campaign,
        "run": run,
        "occasion": "{{=lower(workflow.parameters.occasion)}}",
        "sc": "{{inputs.parameters.storage-class}}",
        "volume": keys.volume_key_expression("inputs.parameters['volume-mode']", "inputs.parameters['access-mode']"),
        "profile": "{{workflow.parameters.profile}}",
        "workload": "{{inputs.parameters.workload}}",
        "rep": "{{inputs.parameters.rep}}",
    }
    key = layout.cell_prefix(*[f"zz{k}zz" for k in fill])
    for k, v in fill.items():
        key = key.replace(f"zz{k}zz", v)
    assert result["s3"]["key"] == key
    args = tpl["benchmark-cell"]["container"]["args"]
    assert args[args.index("--key") + 1] == key, "fio-step checks the key the template uploads under"


def test_occasions_are_cron_workflows_that_stop():
    docs = load_yaml_docs(TEMPLATES / "occasions.yaml")
    assert [d["metadata"]["labels"]["pvbench.io/occasion"] for d in docs] == [
        "weekday-office", "weekday-night", "weekend"]  # fmt: skip
    for d in docs:
        spec = d["spec"]
        assert spec["concurrencyPolicy"] == "Forbid" and spec["timezone"] and spec["schedules"]
        assert "cronworkflow.succeeded >=" in spec["stopStrategy"]["expression"]
        args = {p["name"]: p["value"] for p in spec["workflowSpec"]["arguments"]["parameters"]}
        assert args["occasion"] == d["metadata"]["labels"]["pvbench.io/occasion"]
        assert spec["workflowSpec"]["workflowTemplateRef"]["name"] == "pvbench-benchmark"


# ---------------------------------------------------------------- strict schemas
def test_rendered_templates_are_valid_strictly():
    proc = kubeconform(*sorted(TEMPLATES.glob("*.yaml")))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Invalid: 0, Errors: 0, Skipped: 0" in proc.stdout


def test_an_unknown_field_is_rejected():
    proc = kubeconform(FIXTURES / "unknown-field.yaml")
    assert proc.returncode != 0
    assert "retryOnSlowness" in proc.stdout and "labelz" in proc.stdout, proc.stdout
    assert "Invalid: 2" in proc.stdout


@pytest.mark.parametrize("values", [None, ALL_ON_VALUES], ids=["defaults", "all-on"])
def test_helm_template_output_is_valid_strictly(values):
    out = helm_template(*([values] if values else []))
    kinds = sorted({d["kind"] for d in load_yaml_docs(out)})
    if values:
        assert {"CronWorkflow", "EventSource", "Sensor", "ClusterRole"} <= set(kinds)
    else:
        assert kinds == [
            "ClusterRole",  # get PersistentVolumes, for the cells' volume lifecycle
            "ClusterRoleBinding",
            "ConfigMap",
            "Deployment",
            "Role",
            "RoleBinding",
            "Secret",
            "ServiceAccount",
            "WorkflowTemplate",
        ]
    proc = kubeconform(stdin=out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Invalid: 0, Errors: 0, Skipped: 0" in proc.stdout


@pytest.mark.parametrize("values", [None, ALL_ON_VALUES], ids=["defaults", "all-on"])
def test_helm_lint_is_clean(values):
    proc = helm("lint", "--strict", str(CHART), *(["-f", str(values)] if values else []))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[WARNING]" not in proc.stdout and "[ERROR]" not in proc.stdout, proc.stdout


def test_chart_carries_the_rendered_template_with_only_its_patches():
    out = load_yaml_docs(helm_template(ALL_ON_VALUES))
    [chart_wt] = [d for d in out if d["kind"] == "WorkflowTemplate"]
    rendered = benchmark_template()
    values = yaml.safe_load(ALL_ON_VALUES.read_text())
    params = {p["name"]: p["value"] for p in chart_wt["spec"]["arguments"]["parameters"]}
    assert params["storage-classes"] == values["benchmark"]["parameters"]["storage-classes"]
    assert params["image"] == "ghcr.io/pvbench/pvbench-runner:0.1.0"
    assert chart_wt["spec"]["templates"] == rendered["spec"]["templates"], "the chart must not change the steps"
    [cm] = [d for d in out if d["kind"] == "ConfigMap" and d["metadata"]["name"] == rendered["spec"][
        "artifactRepositoryRef"]["configMap"]]  # fmt: skip
    repo = yaml.safe_load(cm["data"][rendered["spec"]["artifactRepositoryRef"]["key"]])
    assert repo["s3"]["accessKeySecret"]["name"] == "pvbench-s3", "credentials only by Secret reference"
    # the identity the steps run as is the chart's, with the values' annotations (e.g. IRSA for S3)
    [sa] = [d for d in out if d["kind"] == "ServiceAccount" and d["metadata"]["name"] == rendered["spec"][
        "serviceAccountName"]]  # fmt: skip
    assert sa["metadata"]["annotations"] == values["serviceAccount"]["annotations"]
    assert sa["automountServiceAccountToken"] is False


def test_chart_rules_are_least_privilege():
    out = load_yaml_docs(helm_template(ALL_ON_VALUES))
    for d in out:
        if d["kind"] in ("Role", "ClusterRole"):
            for rule in d["rules"]:
                assert "*" not in rule["verbs"] and "*" not in rule["resources"], d["metadata"]["name"]
                assert not set(rule["verbs"]) & {"update", "deletecollection", "escalate", "bind", "impersonate"}
    [sensor_role] = [d for d in out if d["kind"] == "Role" and d["metadata"]["name"] == "pvbench-sensor"]
    assert sensor_role["rules"] == [{"apiGroups": ["argoproj.io"], "resources": ["workflows"], "verbs": ["create"]}]
    # Only the cleanup identity may delete pods (their ephemeral PVCs go by owner reference); only
    # pvbench-volumes may create or delete PVCs: client-volumes=shared's one claim per cell.
    deleters = {
        d["metadata"]["name"]: r["resources"]
        for d in out
        if d["kind"] in ("Role", "ClusterRole")
        for r in d["rules"]
        if "delete" in r["verbs"]
    }
    assert deleters == {"pvbench-cleanup": ["pods"], "pvbench-volumes": ["persistentvolumeclaims"]}, deleters
    claim_writers = {
        d["metadata"]["name"]: r["verbs"]
        for d in out
        if d["kind"] in ("Role", "ClusterRole")
        for r in d["rules"]
        if "persistentvolumeclaims" in r["resources"] and set(r["verbs"]) - {"get", "list", "watch"}
    }
    assert claim_writers == {"pvbench-volumes": ["create", "get", "delete"]}, claim_writers
    # and without shared client volumes, no identity may write PVCs at all
    off = load_yaml_docs(helm_template(ALL_ON_VALUES, sets=("benchmark.sharedClientVolumes=false",)))
    assert not [d for d in off if d["metadata"]["name"] == "pvbench-volumes"]


# ---------------------------------------------------------------- what each pod may use (issue 10)
def test_every_step_container_has_requests_and_limits():
    tpl = templates_by_name(benchmark_template())
    for name, t in tpl.items():
        if "container" not in t:
            continue
        res = t["container"].get("resources") or {}
        assert {"cpu", "memory"} <= set(res.get("requests", {})), name
        assert "memory" in res.get("limits", {}), name
        # The fio cell alone has no CPU limit, on purpose: CFS throttling would show as latency
        # outliers that measure the limit, not the storage (workflows/_benchmark/common.py, CELL).
        assert ("cpu" in res["limits"]) == (name not in FIO_PODS), name
    # The cleanup step is Argo's own container: its resources come in by podSpecPatch.
    patch = json.loads(tpl["cleanup"]["podSpecPatch"])
    [main] = patch["containers"]
    assert main["name"] == "main" and set(main["resources"]["limits"]) == {"cpu", "memory"}
    assert set(main["resources"]["requests"]) == {"cpu", "memory"}


def test_every_empty_dir_is_capped_and_every_root_read_only():
    tpl = templates_by_name(benchmark_template())
    for name, t in tpl.items():
        for v in t.get("volumes", []):
            if "emptyDir" in v:
                assert v["emptyDir"].get("sizeLimit"), (name, v["name"])
        if "container" in t:
            assert t["container"]["securityContext"]["readOnlyRootFilesystem"] is True, name
    # the report builds in a working copy of the Evidence project on its emptyDir, where the
    # image's PVBENCH_REPORT_WORKDIR says (test_report_store.py checks the image's path)
    report = tpl["report"]["container"]
    assert report["args"][0].startswith("set -e;")
    assert [m["mountPath"] for m in report["volumeMounts"]] == ["/tmp"]


def test_step_containers_get_no_token_and_the_executor_its_own():
    """No step command but the cell's calls the Kubernetes API: no token in their containers.
    Argo's executor (init, wait) mounts the token of pvbench-executor, which may only report task
    results; the cleanup step's executor container is the one with pvbench-cleanup's token."""
    doc = benchmark_template()
    spec, tpl = doc["spec"], templates_by_name(doc)
    assert spec["automountServiceAccountToken"] is False
    assert spec["executor"] == {"serviceAccountName": "pvbench-executor"}
    assert spec["serviceAccountName"] == "pvbench-workflow"
    assert tpl["cleanup"]["executor"] == {"serviceAccountName": "pvbench-cleanup"}
    assert not [n for n, t in tpl.items() if t.get("automountServiceAccountToken")], "no template turns it back on"
    out = load_yaml_docs(helm_template(ALL_ON_VALUES))
    sas = {d["metadata"]["name"]: d for d in out if d["kind"] == "ServiceAccount"}
    secrets = {d["metadata"]["name"]: d for d in out if d["kind"] == "Secret"}
    bindings = {d["metadata"]["name"]: d for d in out if d["kind"] == "RoleBinding"}
    roles = {d["metadata"]["name"]: d for d in out if d["kind"] == "Role"}
    for sa in ("pvbench-executor", "pvbench-cleanup", "pvbench-volumes"):
        token = secrets[f"{sa}.service-account-token"]  # where Argo looks for the executor's token
        assert token["type"] == "kubernetes.io/service-account-token"
        assert token["metadata"]["annotations"]["kubernetes.io/service-account.name"] == sa
        assert {
            "apiGroups": ["argoproj.io"],
            "resources": ["workflowtaskresults"],
            "verbs": ["create", "patch"],
        } in roles[sa]["rules"]
        assert bindings[sa]["subjects"][0]["name"] == sa
    # the pods' own identity mounts nothing and may only read what a cell's lifecycle needs
    assert sas["pvbench-workflow"]["automountServiceAccountToken"] is False
    [own] = [b for b in bindings.values() if any(s["name"] == "pvbench-workflow" for s in b["subjects"])]
    assert roles[own["roleRef"]["name"]]["rules"] == [
        {"apiGroups": [""], "resources": ["pods", "persistentvolumeclaims"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["list"]},
    ]
    [pv_binding] = [d for d in out if d["kind"] == "ClusterRoleBinding" and "lifecycle" in d["metadata"]["name"]]
    [pv_role] = [
        d for d in out if d["kind"] == "ClusterRole" and d["metadata"]["name"] == pv_binding["roleRef"]["name"]
    ]
    assert pv_role["rules"] == [{"apiGroups": [""], "resources": ["persistentvolumes"], "verbs": ["get"]}]
    assert pv_binding["subjects"][0]["name"] == "pvbench-workflow"


def test_only_the_cells_container_gets_a_short_lived_token_for_its_lifecycle():
    """The cell reads its own pod, claim and PV before fio: a projected token (10 min) of the
    pod's identity in its container alone, with the pod's name and namespace from the downward
    API; every other step's containers mount no token."""
    tpl = templates_by_name(benchmark_template())
    cell = tpl["benchmark-cell"]
    [api] = [v for v in cell["volumes"] if "projected" in v]
    sources = api["projected"]["sources"]
    assert sources[0]["serviceAccountToken"] == {"expirationSeconds": 600, "path": "token"}
    assert sources[1]["configMap"]["name"] == "kube-root-ca.crt"
    assert {
        "name": api["name"],
        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
        "readOnly": True,
    } in cell["container"]["volumeMounts"]
    env = {e["name"]: e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") for e in cell["container"]["env"]}
    assert env["PVBENCH_POD_NAME"] == "metadata.name" and env["PVBENCH_POD_NAMESPACE"] == "metadata.namespace"
    others = [n for n, t in tpl.items() if n not in FIO_PODS and any("projected" in v for v in t.get("volumes", []))]
    assert not others
    # a multi-client cell's client pods read their own lifecycle the same way
    assert (
        tpl["fio-client"]["volumes"] == cell["volumes"]
        and tpl["fio-client"]["container"]["env"] == cell["container"]["env"]
    )
    # and without the chart's rights the cell says why its lifecycle is missing (test_lifecycle.py)
    off = load_yaml_docs(helm_template(sets=("benchmark.volumeLifecycle=false",)))
    assert not [d for d in off if "lifecycle" in d["metadata"]["name"]]


def test_validate_reads_the_charts_limit_from_its_config_map():
    tpl = templates_by_name(benchmark_template())
    [env] = [e for e in tpl["validate"]["container"]["env"] if e["name"] == "PVBENCH_MAX_STORAGE_CLASSES"]
    assert env["valueFrom"]["configMapKeyRef"] == {
        "name": "pvbench-limits",
        "key": "max-storage-classes",
        "optional": True,
    }
    out = load_yaml_docs(helm_template(sets=("benchmark.maxStorageClasses=3",)))
    [cm] = [d for d in out if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "pvbench-limits"]
    assert cm["data"] == {"max-storage-classes": "3"}


def test_the_steps_that_compute_statistics_keep_the_flagged_results_the_run_names():
    """keep-flagged reaches validate (which checks it), each adaptive round's check and aggregate,
    and only them; the chart sets its default like any parameter's."""
    tpl = templates_by_name(benchmark_template())
    keeping = {
        name
        for name, t in tpl.items()
        if {"name": "PVBENCH_KEEP_FLAGGED", "value": "{{workflow.parameters.keep-flagged}}"}
        in t.get("container", {}).get("env", [])
    }
    assert keeping == {"validate", "adaptive-check", "aggregate"}
    [wt] = [
        d
        for d in load_yaml_docs(helm_template(sets=("benchmark.parameters.keep-flagged=client_cpu",)))
        if d["kind"] == "WorkflowTemplate"
    ]
    [param] = [p for p in wt["spec"]["arguments"]["parameters"] if p["name"] == "keep-flagged"]
    assert param["value"] == "client_cpu"


def test_events_are_bounded():
    """StorageClass: only ADD. Webhook: 1..maxStorageClasses classes, else dropped by the Sensor.
    Every trigger: at most events.rateLimit runs per unit."""
    out = load_yaml_docs(helm_template(ALL_ON_VALUES, sets=("benchmark.maxStorageClasses=5",)))
    [resources] = [d for d in out if d["kind"] == "EventSource" and d["metadata"]["name"] == "pvbench-resources"]
    assert resources["spec"]["resource"]["storageclass"]["eventTypes"] == ["ADD"]
    [sensor] = [d for d in out if d["kind"] == "Sensor"]
    deps = {d["name"]: d for d in sensor["spec"]["dependencies"]}
    [flt] = deps["ci"]["filters"]["exprs"]
    assert flt["fields"] == [{"name": "classes", "path": "body.storageClasses.#"}]
    assert flt["expr"] == "classes >= 1 && classes <= 5"
    triggers = sensor["spec"]["triggers"]
    assert len(triggers) == 5 and all(t["rateLimit"] == {"unit": "Hour", "requestsPerUnit": 12} for t in triggers)
    off = load_yaml_docs(helm_template(ALL_ON_VALUES, sets=("events.rateLimit.requestsPerUnit=0",)))
    [sensor] = [d for d in off if d["kind"] == "Sensor"]
    assert not [t for t in sensor["spec"]["triggers"] if "rateLimit" in t]


def test_each_csi_driver_can_have_its_own_classes_and_parameters():
    """A cluster with two drivers benchmarks each one's classes, with the tests that matter to it:
    a workload's storageClasses and parameters come first, events.parameters fill in the rest."""
    out = load_yaml_docs(helm_template(ALL_ON_VALUES))
    [sensor] = [d for d in out if d["kind"] == "Sensor"]

    def arguments(trigger: str) -> dict[str, str]:
        [t] = [t for t in sensor["spec"]["triggers"] if t["template"]["name"] == trigger]
        params = t["template"]["k8s"]["source"]["resource"]["spec"]["arguments"]["parameters"]
        return {p["name"]: p["value"] for p in params}

    rbd, ebs = arguments("csi-rook-ceph-csi"), arguments("csi-ebs-csi-node")
    assert json.loads(rbd["storage-classes"]) == ["ceph-rbd"] and json.loads(ebs["storage-classes"]) == ["gp3", "io2"]
    assert (rbd["campaign"], rbd["tests"], rbd["repetitions"]) == ("ceph-upgrades", "randwrite-iops,randwrite-lat", "5")
    assert ebs["campaign"] == "upgrades" and "tests" not in ebs


_WORKLOAD = tuple(
    f"events.csi.workloads[0].{k}={v}"
    for k, v in {"name": "rbd", "namespace": "rook-ceph", "kind": "DaemonSet", "namePrefix": "csi-rbdplugin"}.items()
)


@pytest.mark.parametrize(
    "sets, message",
    [
        (("benchmark.parameters.bogus=1",), '"bogus" is not a parameter of pvbench-benchmark'),
        (("occasions.enabled=true", "occasions.parameters.repetition=3"), '"repetition" is not a parameter'),
        (("events.enabled=true", "events.parameters.role=baseline"), '"role" is set by each trigger'),
        (("bogus=1",), "additional properties 'bogus' not allowed"),
        (("events.webhook.port=70000",), "maximum"),
        (("events.enabled=true", "events.webhook.authSecret.name="), "allowUnauthenticated: true"),
        (("benchmark.parameters.ramp=1s",), 'ramp="1s" is not one of profile, 2s'),
        (("benchmark.maxStorageClasses=0",), "minimum"),
        (("benchmark.maxStorageClasses=65",), "maximum"),
        (
            ("benchmark.maxStorageClasses=1", "benchmark.parameters.storage-classes=a\\,b"),
            "benchmark.parameters: storage-classes names 2 classes, more than benchmark.maxStorageClasses=1",
        ),
        (
            ("benchmark.maxStorageClasses=1", "events.enabled=true", "events.csi.storageClasses={a,b}"),
            "events.csi.storageClasses names 2 classes, more than benchmark.maxStorageClasses=1",
        ),
        (("events.rateLimit.unit=Day",), "rateLimit/unit"),
        (
            ("events.enabled=true", *_WORKLOAD, "events.csi.workloads[0].parameters.bogus=1"),
            'events.csi.workloads[rbd].parameters: "bogus" is not a parameter of pvbench-benchmark',
        ),
        (
            ("events.enabled=true", *_WORKLOAD, "events.csi.workloads[0].parameters.role=baseline"),
            '"role" is set by each trigger',
        ),
        (
            (
                "benchmark.maxStorageClasses=1",
                "events.enabled=true",
                *_WORKLOAD,
                "events.csi.workloads[0].storageClasses={a,b}",
            ),
            "events.csi.workloads[rbd].storageClasses names 2 classes, more than benchmark.maxStorageClasses=1",
        ),
    ],
)
def test_chart_rejects_bad_values(sets, message):
    args = ["template", "pvbench", str(CHART)]
    for s in sets:
        args += ["--set", s]
    proc = helm(*args)
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr


# ---------------------------------------------------------------- upstream validators
def _lint_files(tmp_path, docs: list[dict], kinds: set[str]) -> list:
    files = []
    for i, d in enumerate(x for x in docs if x["kind"] in kinds):
        f = tmp_path / f"{i:02d}-{d['kind']}-{d['metadata']['name']}.yaml"
        f.write_text(yaml.safe_dump(d))
        files.append(f)
    return files


@pytest.mark.parametrize("values", [None, ALL_ON_VALUES], ids=["defaults", "all-on"])
def test_argo_lint_accepts_the_charts_workflows(values, tmp_path):
    """Argo's own validation (what the controller applies when a run starts), offline."""
    docs = load_yaml_docs(helm_template(*([values] if values else [])))
    files = _lint_files(tmp_path, docs, {"WorkflowTemplate", "CronWorkflow"})
    proc = subprocess.run(
        [tool_path("argo"), "lint", "--offline", *map(str, files)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no linting errors found" in (proc.stdout + proc.stderr).lower(), proc.stdout + proc.stderr


def test_argo_lint_rejects_a_templated_quantity(tmp_path):
    """The mistake that made every run end in Error at once: a {{...}} in a quantity field."""
    doc = benchmark_template()
    cell = templates_by_name(doc)["benchmark-cell"]
    [target] = [v for v in cell["volumes"] if v["name"] == "target"]
    target["ephemeral"]["volumeClaimTemplate"]["spec"]["resources"]["requests"]["storage"] = (
        "{{workflow.parameters.volume-size}}"
    )
    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump(doc))
    proc = subprocess.run([tool_path("argo"), "lint", "--offline", str(f)], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "quantities must match" in proc.stdout + proc.stderr, proc.stdout + proc.stderr


def test_argo_events_lint_accepts_the_event_sources_and_sensor(tmp_path):
    docs = load_yaml_docs(helm_template(ALL_ON_VALUES))
    files = _lint_files(tmp_path, docs, {"EventSource", "Sensor"})
    assert len(files) == 3
    proc = subprocess.run(
        [tool_path("argo-events"), "lint", "--strict", *map(str, files)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_argo_events_lint_rejects_resource_and_webhook_in_one_event_source(tmp_path):
    """What made the Events controller start no event source at all."""
    docs = load_yaml_docs(helm_template(ALL_ON_VALUES))
    sources = {d["metadata"]["name"]: d for d in docs if d["kind"] == "EventSource"}
    merged = sources["pvbench-resources"]
    merged["spec"]["webhook"] = sources["pvbench-webhook"]["spec"]["webhook"]
    f = tmp_path / "merged.yaml"
    f.write_text(yaml.safe_dump(merged))
    proc = subprocess.run([tool_path("argo-events"), "lint", str(f)], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "can not be put together" in proc.stdout + proc.stderr, proc.stdout + proc.stderr


def test_multi_client_cells_run_as_client_pods_behind_a_barrier():
    """A multi-client cell: barrier daemon -> N client pods (own PVC each, withSequence) -> merge;
    fed by expand's (and ci-check's) second fan-out; its pods share a node only with each other."""
    tpl = templates_by_name(benchmark_template())
    dag = {t["name"]: t for t in tpl["client-cell"]["dag"]["tasks"]}
    assert set(dag) == {"barrier", "client", "merge"}
    assert tpl["cell-barrier"]["daemon"] is True and tpl["cell-barrier"]["container"]["readinessProbe"]["tcpSocket"]
    assert dag["client"]["withSequence"] == {"start": "1", "count": "{{inputs.parameters.clients}}"}
    args = {p["name"]: p["value"] for p in dag["client"]["arguments"]["parameters"]}
    assert args["client"] == "{{item}}" and args["barrier"].startswith("{{tasks.barrier.ip}}:")
    assert dag["client"]["depends"] == "barrier" and dag["merge"]["depends"] == "client"
    client, merge, cell = tpl["fio-client"], tpl["merge-clients"], tpl["benchmark-cell"]
    # every client pod gets its own fresh volume of the class, as a one-pod cell does
    assert [v for v in client["volumes"] if v["name"] == "target"] == [
        v for v in cell["volumes"] if v["name"] == "target"
    ]
    assert client["podSpecPatch"] == cell["podSpecPatch"] and client["timeout"] == cell["timeout"]
    assert "--client" in client["container"]["args"] and "--merge" in merge["container"]["args"]
    # the clients' outputs go under the cell's key, where the merge fetches them
    [out] = client["outputs"]["artifacts"]
    [result] = cell["outputs"]["artifacts"]
    [fetched] = merge["inputs"]["artifacts"]
    assert fetched["s3"]["key"] == result["s3"]["key"] + "/clients"
    assert out["s3"]["key"] == fetched["s3"]["key"] + "/{{inputs.parameters.client}}"
    assert merge["outputs"]["artifacts"] == cell["outputs"]["artifacts"]
    # the node mutex: no other cell's benchmark pod beside a client; the clients prefer distinct nodes
    cell_id = client["metadata"]["labels"]["pvbench.io/cell"]
    anti = client["affinity"]["podAntiAffinity"]
    [required] = anti["requiredDuringSchedulingIgnoredDuringExecution"]
    assert {"key": "pvbench.io/cell", "operator": "NotIn", "values": [cell_id]} in required["labelSelector"][
        "matchExpressions"
    ]
    [preferred] = anti["preferredDuringSchedulingIgnoredDuringExecution"]
    assert preferred["podAffinityTerm"]["labelSelector"] == {"matchLabels": {"pvbench.io/cell": cell_id}}
    # fed by the second fan-out of expand and of the adaptive check, and waited for by what follows
    main = {t["name"]: t for t in tpl["main"]["dag"]["tasks"]}
    assert main["benchmark"]["withParam"] == "{{tasks.expand.outputs.parameters.cells}}"
    assert main["benchmark-clients"]["withParam"] == "{{tasks.expand.outputs.parameters.client-cells}}"
    assert (
        "benchmark-clients.Skipped" in main["adaptive"]["depends"]
        and "benchmark.Skipped" in main["adaptive"]["depends"]
    )
    adaptive = {t["name"]: t for t in tpl["adaptive"]["dag"]["tasks"]}
    assert adaptive["benchmark-clients"]["withParam"] == "{{tasks.check.outputs.parameters.next-clients}}"
    item_args = {p["name"]: p["value"] for p in main["benchmark-clients"]["arguments"]["parameters"]}
    assert item_args["clients"] == "{{item.clients}}"


def test_shared_client_volumes_are_one_rwx_claim_per_cell_released_whatever_happened():
    """client-volumes=shared: the cell's one ReadWriteMany claim (pvbench-volumes makes it, the
    workflow owns it), mounted by every client pod, deleted after the merge even when a client
    failed; the cell still fails then (the DAG's targets are the merge and the release)."""
    tpl = templates_by_name(benchmark_template())
    dag = tpl["shared-client-cell"]["dag"]
    tasks = {t["name"]: t for t in dag["tasks"]}
    assert set(tasks) == {"barrier", "volume", "client", "merge", "release"}
    assert dag["failFast"] is False and dag["target"] == "merge release"
    assert tasks["client"]["depends"] == "barrier && volume" and tasks["client"]["template"] == "fio-client-shared"
    assert "merge.Omitted" in tasks["release"]["depends"] and "merge.Failed" in tasks["release"]["depends"]
    make, release = tpl["shared-volume"], tpl["release-volume"]
    claim = yaml.safe_load(make["resource"]["manifest"])
    assert claim["kind"] == "PersistentVolumeClaim" and claim["spec"]["accessModes"] == ["ReadWriteMany"]
    assert claim["spec"]["storageClassName"] == "{{inputs.parameters.storage-class}}"
    assert claim["spec"]["resources"]["requests"]["storage"] == "{{workflow.parameters.volume-size}}"
    assert make["resource"]["setOwnerReference"] is True and make["resource"]["action"] == "create"
    assert release["resource"]["action"] == "delete" and "--ignore-not-found" in release["resource"]["flags"]
    for t in (make, release):
        assert t["serviceAccountName"] == t["executor"]["serviceAccountName"] == "pvbench-volumes"
    client = tpl["fio-client-shared"]
    [target] = [v for v in client["volumes"] if v["name"] == "target"]
    assert target == {"name": "target", "persistentVolumeClaim": {"claimName": "{{inputs.parameters.claim}}"}}
    assert "--shared-volume" in client["container"]["args"] and "podSpecPatch" not in client
    params = {p["name"]: p for p in benchmark_template()["spec"]["arguments"]["parameters"]}
    assert params["client-volumes"]["enum"] == ["own", "shared"] and params["client-volumes"]["value"] == "own"
    for step in ("validate", "expand", "adaptive-check"):
        assert "{{workflow.parameters.client-volumes}}" in tpl[step]["container"]["args"], step


def test_a_block_cell_runs_fio_on_its_fresh_block_volume_as_a_device():
    from pvbench.argo import conventions as c

    tpl = templates_by_name(benchmark_template())
    block = tpl["benchmark-block-cell"]
    container = block["container"]
    assert container["volumeDevices"] == [{"name": "target", "devicePath": c.TARGET_DEVICE}]
    assert all(m["name"] != "target" for m in container["volumeMounts"]), "a Block volume is never mounted"
    args = container["args"]
    assert args[args.index("--target") + 1] == c.TARGET_DEVICE
    [target] = [v for v in block["volumes"] if v["name"] == "target"]
    spec = target["ephemeral"]["volumeClaimTemplate"]["spec"]
    assert spec["volumeMode"] == "Block" and spec["accessModes"] == ["{{inputs.parameters.access-mode}}"]
    # the Filesystem cell's claim takes the cell's access mode too, and no volumeMode (Filesystem)
    [fs] = [v for v in tpl["benchmark-cell"]["volumes"] if v["name"] == "target"]
    fs_spec = fs["ephemeral"]["volumeClaimTemplate"]["spec"]
    assert "volumeMode" not in fs_spec and fs_spec["accessModes"] == ["{{inputs.parameters.access-mode}}"]


def test_the_keys_volume_expression_maps_each_access_mode_as_the_layout_does():
    from pvbench.results.volume import ACCESS_MODES, VOLUME_MODES, volume_key

    expression = keys.volume_key_expression("vm", "am")
    for mode in ACCESS_MODES:
        short = volume_key(VOLUME_MODES[0], mode).split("-", 1)[1]
        assert f"am == '{mode}' ? '{short}'" in expression
    assert expression.startswith("{{=lower(vm) + '-' + (") and volume_key("Block", "ReadWriteOnce") == "block-rwo"
