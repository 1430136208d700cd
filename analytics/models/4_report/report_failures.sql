-- report_failures: what failed in the run, as the orchestrator reported it (Argo's exit
-- handler passes its list of failed nodes): one row per failed cell or step, the cell's
-- identity where it is one, and the message to act on.
select
    node,
    template,
    phase,
    message,
    storage_class,
    workload,
    rep,
    storage_class is not null as is_cell,
    finished_at
from run_failures_input
order by is_cell desc, storage_class, workload, rep, node
