"""Look at a served report in headless Chromium (report_browser.mjs): the one way the tests do,
for real Evidence sites (test_report.py) and the store server's stand-in sites
(test_report_store.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

BROWSER_JS = Path(__file__).resolve().parent / "report_browser.mjs"


def browse(
    reports: Path, base: str, out_dir: Path, pages: list[dict], *, follow_links: bool = False, insecure: bool = False
) -> dict:
    """Visit ``pages`` of the site at ``base``; report_browser.mjs's result, also kept in
    ``out_dir``/browse.json. ``follow_links``: load the first page, reach the others by following
    a link in the tab, as a reader does; otherwise load each one."""
    node = shutil.which("node")
    assert node, "node is not installed"
    args = {"reports": str(reports), "base": base, "outDir": str(out_dir), "pages": pages}
    if follow_links:
        args["navigate"] = "client"
    if insecure:  # a self-signed certificate (argo-server's)
        args["insecure"] = True
    proc = subprocess.run([node, str(BROWSER_JS), json.dumps(args)], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"browser check failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    (out_dir / "browse.json").write_text(json.dumps(result, indent=1, ensure_ascii=False))
    return result
