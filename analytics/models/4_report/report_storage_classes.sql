-- report_storage_classes: what was measured per storage class, and on what (setup description).
select
    campaign, storage_class,
    count(distinct source_key) as n_results,
    count(distinct run) as n_runs,
    count(distinct occasion) as n_occasions,
    string_agg(distinct profile, ', ' order by profile) as profiles,
    string_agg(distinct provisioner, ', ' order by provisioner) as provisioner,
    string_agg(distinct filesystem, ', ' order by filesystem) as filesystem,
    string_agg(distinct coalesce(node, host), ', ' order by coalesce(node, host)) as nodes,
    string_agg(distinct fio_version, ', ' order by fio_version) as fio_version,
    min(started_at) as first_started_at,
    max(started_at) as last_started_at
from result_rows
group by campaign, storage_class
order by campaign, storage_class
