-- report_boxplot: the five numbers of the thesis's box plots (whiskers min/max, box Q1–Q3, median).
-- is_sweep: the profile's cells are drawn as curves (the sweep page) instead.
select
    campaign, storage_class, profile,
    profile in (select profile from profile_catalog where is_sweep) as is_sweep,
    workload, workload_title, direction, metric, unit,
    n, min, q1, median, q3, max, mean
from summary
where is_headline
order by campaign, profile, workload, direction, storage_class
