-- report_unsteady_cells: every result whose profile set fio's steadystate criterion and that never
-- met it (result_rows; the anomalies page): fio ran to its runtime ceiling, so what it measured
-- may still have been moving. One row per result.
select
    campaign, run, occasion, storage_class, profile, workload, workload_title, rep,
    steady_criterion, steady_window_s, steady_max_s, series_s, headline_metric, stability_cv as headline_cv,
    not list_has_all(getvariable('keep_flagged'), excluded_by) as excluded
from result_rows
where not steady_attained
qualify row_number() over (partition by source_key order by direction) = 1
order by campaign, storage_class, workload, run, occasion, rep
