-- report_failures: what failed in each run, as the orchestrator reported it (Argo's exit
-- handler passes its list of failed nodes; each run's compact keeps them): one row per failed
-- cell or step, its run, the cell's identity where it is one, and the message to act on.
select
    run,
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
order by run, is_cell desc, storage_class, workload, rep, node
