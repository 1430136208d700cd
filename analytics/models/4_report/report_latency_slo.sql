-- report_latency_slo: latency-bounded IOPS (the latency-slo profile, or a job file's own objective),
-- one number per storage class and test: the highest IOPS measured with the percentile at or under
-- the target (slo_iops), its mean and 95% CI as summary computes them for every metric (from
-- occasion means when there are several occasions), and in how many cells the target was met at
-- all — a cell that missed it even at the lightest load has no slo_iops (no number is made up).
with cells as (
    select
        campaign, storage_class, profile, workload, direction,
        any_value(workload_title) as workload_title,
        any_value(slo_percentile) as percentile,
        any_value(slo_target_us) as target_us,
        any_value(slo_latency) as latency,
        count(*) as n_cells,
        count(*) filter (where slo_met) as n_met
    from result_rows
    where slo_met is not null
    group by all
)
select
    c.campaign, c.storage_class, c.profile, c.workload, c.workload_title, c.direction,
    c.percentile, c.target_us, c.latency,
    'p' || format('{:g}', c.percentile) || case when c.latency = 'sync' then ' fsync' else '' end || ' ≤ '
        || case when c.target_us >= 1000000 then format('{:g}', c.target_us / 1000000) || ' s'
                when c.target_us >= 1000 then format('{:g}', c.target_us / 1000) || ' ms'
                else format('{:g}', c.target_us) || ' µs' end as objective,
    'slo_iops' as metric, 'IOPS' as unit, 'higher' as better,
    c.n_cells, c.n_met,
    c.n_met = c.n_cells as met_always,
    format('{} of {}', c.n_met, c.n_cells) as met_text,
    s.n, s.mean, s.sd, s.median, s.min, s.max, s.ci95_low, s.ci95_high, s.ci_basis,
    coalesce(s.n_occasions, 0) as n_occasions,
    case when s.mean is not null
         then rank() over (partition by c.campaign, c.profile, c.workload order by s.mean desc nulls last) end as rank
from cells c
left join summary s
    on s.metric = 'slo_iops'
    and s.campaign = c.campaign and s.storage_class = c.storage_class and s.profile = c.profile
    and s.workload = c.workload and s.direction = c.direction
order by c.campaign, c.profile, c.workload, rank, c.storage_class
