"""pvbench_lab.bench_aggregate (the README's performance tables) runs end to end on its smallest campaign
(its timings are not checked: a script, not a timed test)."""

import os
import time

from cli_helpers import lab_module


def test_the_scale_benchmark_prints_both_tables_for_the_readme():
    # --no-cold: dropping the page cache (as root) would slow every test after this one; local only:
    # the MinIO rows take a minute more (10 runs written and added), and differ by the server's CPU
    done = lab_module(
        "bench_aggregate", "--sizes", "1000", "--stores", "local", "--repeat", "1", "--no-cold", "--no-report"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "FAILED" not in done.stdout, done.stdout[-3000:]
    out = done.stdout
    assert "| store | results | MB | read bytes | full | full ÷ read | verify (nothing new) |" in out, out[-3000:]
    assert "| store | results | read bytes | full | full ÷ read | full: CPU | full: CPU ÷ " in out, out[-3000:]
    rows = [line for line in out.splitlines() if line.startswith("| local | 1,000 |")]
    assert len(rows) == 2, out[-3000:]
    # the second table: the CPU spent and its floor are figures; cold was not measured
    cells = [c.strip() for c in rows[1].strip("|").split("|")]
    assert cells[5].endswith(" s") and float(cells[5][:-2]) > 0 and cells[6].endswith("×"), rows[1]
    assert cells[7:] == ["–", "–", "–"], rows[1]


def test_the_cpu_of_the_minio_server_is_read_from_proc():
    # what the MinIO rows add to the aggregation's CPU: the server's, from /proc/<pid>/stat
    from pvbench_lab.bench_aggregate import process_cpu

    before = process_cpu(os.getpid())
    spin = time.process_time() + 0.2
    while time.process_time() < spin:
        pass
    assert 0.15 <= process_cpu(os.getpid()) - before <= 1.0
