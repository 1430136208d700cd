-- report_storage_classes: what was measured per storage class, and on what (setup description).
-- From run_setup (each run's setup, made when it was compacted), not from every result's row.
-- A class measured in two volume shapes is two rows (storage_class names the shape: result_rows);
-- class_name, volume_mode and access_mode say what it is made of.
select
    campaign, storage_class,
    any_value(class_name) as class_name,
    any_value(volume_mode) as volume_mode,
    any_value(access_mode) as access_mode,
    sum(n_results)::bigint as n_results,
    count(distinct run) as n_runs,
    count(distinct occasion) as n_occasions,
    string_agg(distinct profile, ', ' order by profile) as profiles,
    string_agg(distinct provisioner, ', ' order by provisioner) as provisioner,
    string_agg(distinct filesystem, ', ' order by filesystem) as filesystem,
    string_agg(distinct node, ', ' order by node) as nodes,
    string_agg(distinct fio_version, ', ' order by fio_version) as fio_version,
    min(first_started_at) as first_started_at,
    max(last_started_at) as last_started_at
from run_setup
group by all
order by campaign, storage_class
