"""A minimal Kubernetes API client: GET/PATCH JSON with a ServiceAccount token.

pvbench needs a handful of calls (the guard's, a cell reading its own pod); the official
client would add ~30 MB of dependencies to the runner image for them.
"""

from __future__ import annotations

import json
import os
import ssl
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from datetime import datetime

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


class KubeError(RuntimeError):
    """An API call failed, or there is no API to call (not in a pod with a token)."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


@dataclass
class Api:
    server: str
    token: str
    context: ssl.SSLContext

    @classmethod
    def in_cluster(cls, sa_dir: str = SA_DIR) -> "Api":
        host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        if not host or not os.path.exists(f"{sa_dir}/token"):
            raise KubeError(f"not in a pod with a ServiceAccount token (KUBERNETES_SERVICE_HOST, {sa_dir}/token)")
        with open(f"{sa_dir}/token") as f:
            token = f.read().strip()
        return cls(f"https://{host}:{port}", token, ssl.create_default_context(cafile=f"{sa_dir}/ca.crt"))

    def call(self, method: str, path: str, body: dict | None = None, content_type: str = "application/json") -> dict:
        req = urllib.request.Request(
            self.server + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={
                "Authorization": f"Bearer {self.token}",
                "Accept": "application/json",
                "Content-Type": content_type,
            },
        )
        try:
            with urllib.request.urlopen(req, context=self.context, timeout=20) as r:
                return json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as exc:
            raise KubeError(f"{method} {path}: {exc.code} {exc.read()[:300]!r}", exc.code) from None
        except OSError as exc:
            raise KubeError(f"{method} {path}: {exc}") from None

    def get(self, path: str, **query: str) -> dict:
        return self.call("GET", path + ("?" + urllib.parse.urlencode(query) if query else ""))


def parse_time(stamp: str | None) -> datetime | None:
    """A Kubernetes timestamp (RFC 3339, seconds or microseconds) as an aware datetime."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")) if stamp else None


def claim_names(pod: dict) -> list[str]:
    """The PVCs a pod uses: its persistentVolumeClaims and generic ephemeral volumes."""
    names = []
    for vol in pod.get("spec", {}).get("volumes") or []:
        if vol.get("persistentVolumeClaim"):
            names.append(vol["persistentVolumeClaim"]["claimName"])
        elif "ephemeral" in vol:
            names.append(f"{pod['metadata']['name']}-{vol['name']}")  # Kubernetes' name for it
    return names
