-- report_storage_classes: what was measured per storage class, and on what (setup description).
-- From run_setup (each run's setup, made when it was compacted), not from every result's row.
select
    campaign, storage_class,
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
