-- report_runs: every single headline value, for strip plots and "first run slower?" checks.
select
    campaign, run, occasion, storage_class, profile, workload, workload_title, rep, cell_order,
    direction, metric, unit, value, started_at
from measurements
where is_headline
order by campaign, storage_class, workload, occasion, rep
