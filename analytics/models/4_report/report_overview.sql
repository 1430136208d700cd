-- report_overview: each workload's headline metric per storage class, ranked (1 = best). is_sweep:
-- the profile's cells are read as curves (the sweep page), not ranked one by one.
select
    campaign, storage_class, profile,
    profile in (select profile from profile_catalog where is_sweep) as is_sweep,
    workload, workload_title, direction, metric, unit,
    n, mean, sd, cv, median, q1, q3, min, max, ci95_low, ci95_high, ci_basis, n_occasions, better,
    rank() over (
        partition by campaign, profile, workload, direction, metric
        order by case when better = 'higher' then -mean else mean end
    ) as rank,
    printf('%.1f ± %.1f', mean, coalesce(sd, 0)) as mean_pm_sd
from summary
where is_headline
order by campaign, profile, workload, direction, rank
