-- report_scaling: multi-client cells (a test's clients = N, pvbench.fio.merge): the total IOPS of
-- N clients released together, per storage class and workload family (wl_group), over N — the
-- curve shows where the backend's total stops growing. The totals are ordinary measurements, so
-- n, the 95% CI (over occasions, see summary.sql) and ci_basis are summary's. Beside them:
--   speedup          total IOPS at N / total IOPS at the family's smallest N (1 in `scaling`)
--   efficiency       speedup / (N / smallest N): 1 = linear scaling, 0.5 = half of it
--   gain             total IOPS at N / total IOPS at the previous N (≤ 1: it stopped growing)
--   straggler_ratio  the slowest client's IOPS / mean client IOPS (mean over cells; 1 = fair)
--   max_start_skew_s the worst spread of the clients' release from the barrier over the cells
--   min_overlap_share the least share of the measured seconds all clients measured together
--   client_volumes   own (a volume per client), shared (one for all), or both listed: runs of the
--                    campaign that differ in it are pooled here (keep them in separate campaigns)
with tests as (
    select
        campaign, storage_class, profile, workload,
        max(clients) as clients,
        max(client_start_skew_s) as max_start_skew_s,
        min(client_overlap_share) as min_overlap_share,
        string_agg(distinct client_volumes, ', ' order by client_volumes) as client_volumes
    from result_rows
    group by all
),
families as (  -- the workload families that have at least one multi-client test
    select distinct campaign, profile, wl_group
    from result_rows
    where clients > 1 and wl_group is not null
),
curve as (
    select
        s.campaign, s.storage_class, s.profile, s.wl_group, s.direction, t.clients, s.workload,
        s.workload_title, s.n, s.n_occasions, s.mean as iops, s.ci95_low, s.ci95_high, s.ci_basis,
        t.max_start_skew_s, t.min_overlap_share, t.client_volumes
    from summary s
    join tests t using (campaign, storage_class, profile, workload)
    join families f using (campaign, profile, wl_group)
    where s.metric = 'iops'
),
extra as (
    select campaign, storage_class, profile, workload, direction,
           max(mean) filter (where metric = 'straggler_ratio') as straggler_ratio,
           max(mean) filter (where metric = 'lat_p99_us') as lat_p99_us,
           max(mean) filter (where metric = 'bw_mib_s') as bw_mib_s
    from summary
    group by all
)
select
    c.campaign, c.storage_class, c.profile, c.wl_group, c.direction, c.clients, c.workload, c.workload_title,
    c.n, c.n_occasions, c.iops, c.ci95_low, c.ci95_high, c.ci_basis, e.bw_mib_s, e.lat_p99_us,
    c.iops / nullif(first_value(c.iops) over w, 0) as speedup,
    c.iops / nullif(first_value(c.iops) over w, 0) / (c.clients / first_value(c.clients) over w) as efficiency,
    c.iops / nullif(lag(c.iops) over w, 0) as gain,
    coalesce(e.straggler_ratio, case when c.clients = 1 then 1.0 end) as straggler_ratio,
    c.max_start_skew_s, c.min_overlap_share, c.client_volumes
from curve c
left join extra e using (campaign, storage_class, profile, workload, direction)
window w as (partition by c.campaign, c.storage_class, c.profile, c.wl_group, c.direction order by c.clients)
order by c.campaign, c.wl_group, c.direction, c.storage_class, c.clients
