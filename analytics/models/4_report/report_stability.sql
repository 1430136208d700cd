-- report_stability: the stability figure of each storage class × workload × direction (the storage
-- class pages and the over-time page): stability_summary as the pages show it, with whether the
-- profile is read as curves (is_sweep).
select
    s.*,
    s.profile in (select profile from profile_catalog where is_sweep) as is_sweep
from stability_summary s
order by campaign, storage_class, profile, workload, direction
