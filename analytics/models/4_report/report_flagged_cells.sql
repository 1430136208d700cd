-- report_flagged_cells: every result a guard flagged (the anomalies page): class, workload, run,
-- occasion, rep, the guard's title (guard_catalog: pvbench.cells.guards, never typed here), what it
-- measured against its threshold, and whether the result is left out of the statistics or kept
-- (its flag excludes, unless this aggregation keeps the rule: getvariable('keep_flagged')), with
-- the fio version and job options it ran with (its provenance).
with flagged as (
    -- one row per result (result_rows has one per direction)
    select * from result_rows
    where len(guards) > 0
    qualify row_number() over (partition by source_key order by direction) = 1
)
select
    f.campaign, f.run, f.occasion, f.storage_class, f.profile, f.workload, f.workload_title, f.rep,
    g.rule, c.title as rule_title, c.bias, c.unit as threshold_unit,
    g."value", g.threshold, g.detail,
    g.excluded as excluded_by_default,
    g.excluded and not list_contains(getvariable('keep_flagged'), g.rule) as excluded,
    case
        when not g.excluded then 'flagged, counted'
        when list_contains(getvariable('keep_flagged'), g.rule) then 'kept (--keep-flagged)'
        else 'left out'
    end as counted,
    f.fio_version,
    array_to_string(
        list_transform(list_sort(map_entries(f.flagged_fio_options)), e -> e.key || '=' || e.value), ' '
    ) as fio_options,
    f.source_key
from flagged f, unnest(f.guards) as u(g)
left join guard_catalog c on c.rule = g.rule
order by f.campaign, f.storage_class, f.workload, f.run, f.occasion, f.rep, c.guard_order
