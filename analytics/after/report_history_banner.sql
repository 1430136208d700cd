-- report_history_banner: the overview's line per storage class whose latest run confirmed a change
-- of level in its history: the change points that the history up to the run before did not have
-- (report_change_points.new_in_latest_run; a level needs 3 occasions, so the change itself may be a
-- few runs back), worse ones first, each with when it happened and its attributed events.
-- Made after the tables pvbench.stats.history computes in Python (which run after the models, so
-- this cannot be one of analytics/models/); the page only prints its rows.
with found as (
    select
        *,
        coalesce(workload_title, workload) || ' — ' || direction as what,
        verdict = 'worse' as is_worse
    from report_change_points
    where new_in_latest_run
)
select
    storage_class,
    count(*) as n_change_points,
    count(*) filter (where is_worse) as n_worse,
    count(*) filter (where not is_worse) as n_better,
    case when bool_or(is_worse) then 'negative' else 'info' end as status,
    printf(
        '%s: the latest run confirms a change of level in %d headline metric%s (%s)',
        storage_class, count(*), case when count(*) = 1 then '' else 's' end,
        concat_ws(', ',
            case when count(*) filter (where is_worse) > 0 then count(*) filter (where is_worse) || ' worse' end,
            case when count(*) filter (where not is_worse) > 0 then count(*) filter (where not is_worse) || ' better' end)
    ) as headline,
    -- one line per change point: "Random write — write: −18.2% [−21.0%, −15.3%] from 2026-11-14 after …"
    string_agg(
        what || ': ' || replace(printf('%+.1f%%', change_pct), '-', '−') || ' from ' || strftime(changed_at, '%Y-%m-%d')
            || coalesce(', after ' || events, ', no event recorded'),
        '; ' order by is_worse desc, change_pct
    ) as details,
    string_agg(distinct run, ', ' order by run) as runs
from found
group by storage_class
order by n_worse desc, storage_class
