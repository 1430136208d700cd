"""Submit a pvbench run through the Argo Server API (Hera's WorkflowsService).

Parameters are checked against the rendered WorkflowTemplate first (unknown names and
values outside an enum fail here, with the allowed values), so a typo never becomes a
run that fails minutes later.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from pvbench.argo import conventions as c


class SubmitError(ValueError):
    pass


def template_parameters(template_file: Path) -> dict[str, dict]:
    """name -> parameter (value, enum, description) of the WorkflowTemplate in ``template_file``."""
    for doc in yaml.safe_load_all(template_file.read_text()):
        if doc and doc.get("kind") == "WorkflowTemplate":
            return {p["name"]: p for p in doc["spec"]["arguments"]["parameters"]}
    raise SubmitError(f"{template_file} holds no WorkflowTemplate")


def check_parameters(given: dict[str, str], known: dict[str, dict]) -> None:
    for name, value in given.items():
        if name not in known:
            raise SubmitError(f"unknown parameter {name!r}; the template takes: {', '.join(sorted(known))}")
        enum = known[name].get("enum")
        if enum and value not in enum:
            raise SubmitError(f"parameter {name}={value!r} is not one of {enum}")


def read_token(
    *, token: str | None = None, token_file: Path | None = None, env: dict[str, str] | None = None
) -> str | None:
    """The Argo Server bearer token: --token-file (or $ARGO_TOKEN_FILE), else $ARGO_TOKEN, else the
    deprecated --token. Never read from a plain option by default: a command line is visible
    to every user of the machine (ps), an environment variable or a file is not."""
    import os

    env = os.environ if env is None else env
    if token_file is not None:
        try:
            text = token_file.read_text().strip()
        except OSError as exc:
            raise SubmitError(f"cannot read the token file {token_file}: {exc.strerror or exc}") from None
        if not text:
            raise SubmitError(f"the token file {token_file} is empty")
        return text
    return token or env.get("ARGO_TOKEN") or None


def parse_pairs(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        if "=" not in item:
            raise SubmitError(f"{item!r} is not name=value")
        name, value = item.split("=", 1)
        out[name.strip()] = value
    return out


def submit(
    *,
    host: str,
    namespace: str,
    parameters: dict[str, str],
    labels: dict[str, str] | None = None,
    token: str | None = None,
    verify_ssl: bool = True,
    template: str = c.BENCHMARK_TEMPLATE,
    known: dict[str, dict] | None = None,
) -> str:
    """Submit ``template`` with ``parameters``; returns the new workflow's name."""
    from hera.workflows import WorkflowsService
    from hera.workflows.models import SubmitOpts, WorkflowSubmitRequest

    if known is not None:
        check_parameters(parameters, known)
    service = WorkflowsService(host=host, token=token, verify_ssl=verify_ssl, namespace=namespace)
    request = WorkflowSubmitRequest(
        namespace=namespace,
        resource_kind="WorkflowTemplate",
        resource_name=template,
        submit_options=SubmitOpts(
            parameters=[f"{k}={v}" for k, v in parameters.items()],
            labels=",".join(f"{k}={v}" for k, v in (labels or {}).items()) or None,
        ),
    )
    workflow = service.submit_workflow(request, namespace=namespace)
    return workflow.metadata.name
