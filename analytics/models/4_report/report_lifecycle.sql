-- report_lifecycle: how long a fresh volume of each storage class took to become usable, per step
-- (Kubernetes cells; pvbench.kube.lifecycle): the median and the 95th percentile of every cell
-- of the class, and the 95% CI of the mean over occasions from summary (the occasion is the
-- unit: see summary.sql). Kubernetes records these moments in whole seconds.
with p95 as (
    select campaign, storage_class, metric, quantile_cont(value, 0.95) as p95
    from measurements
    where workload = getvariable('lifecycle_workload')
    group by all
)
select
    s.campaign, s.storage_class, s.metric,
    case s.metric
        when 'volume_bind_s' then 'Claim created → volume bound'
        when 'pod_schedule_s' then 'Pod created → scheduled'
        when 'volume_attach_s' then 'Scheduled → volume attached'
        when 'volume_mount_s' then 'Scheduled/attached → mounted'
        when 'pod_start_s' then 'Pod created → benchmark started'
    end as step,
    case s.metric
        when 'volume_bind_s' then 1 when 'pod_schedule_s' then 2 when 'volume_attach_s' then 3
        when 'volume_mount_s' then 4 when 'pod_start_s' then 5
    end as step_order,
    s.unit, s.n, s.n_occasions, s.mean, s.median, p.p95, s.min, s.max, s.ci95_low, s.ci95_high, s.ci_basis,
    s.workload  -- the lifecycle's workload: the page picks its verdicts out of report_comparisons by it
from summary s
join p95 p using (campaign, storage_class, metric)
where s.workload = getvariable('lifecycle_workload')
order by s.campaign, step_order, s.storage_class
